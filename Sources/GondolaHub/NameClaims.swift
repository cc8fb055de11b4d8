/// Who installed each name of one kind (RPC methods, server API methods, namespaces,
/// routes): a name that a second owner (or the same one twice) claims is refused with
/// an error naming both.
public struct NameClaims: Sendable {
    /// What the names are ("RPC method"); empty when each name says it itself.
    let kind: String
    private var owners: [String: String]

    /// Owners are "the hub" (the names in `hubNames`) or a domain's name.
    public init(kind: String, hubNames: some Sequence<String> = []) {
        self.kind = kind
        owners = Dictionary(hubNames.map { ($0, Self.hub) }, uniquingKeysWith: { first, _ in first })
    }

    /// The owner of what the hub itself serves.
    public static let hub = "the hub"

    /// Records `names` as `owner`'s; thrown when one of them already has an owner.
    public mutating func claim(_ names: [String], by owner: String) throws(NameClaimError) {
        for name in names {
            if let previous = owners[name] {
                let claimants =
                    previous == owner ? "twice by \(Self.describe(owner))" : "by both \(Self.describe(previous)) and \(Self.describe(owner))"
                let named = kind.isEmpty ? name : "\(kind) '\(name)'"
                throw NameClaimError(description: "\(named) is claimed \(claimants)")
            }
            owners[name] = owner
        }
    }

    private static func describe(_ owner: String) -> String {
        owner == hub ? owner : "domain '\(owner)'"
    }
}

/// A name claimed by two owners, or twice by one ("RPC method 'shop.list' is claimed by
/// both domain 'a' and domain 'b'").
public struct NameClaimError: Error, Sendable, CustomStringConvertible {
    public let description: String
}
