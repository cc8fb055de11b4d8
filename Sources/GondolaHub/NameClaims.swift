/// A name something claims, with its kind: RPC method 'chat.send', namespace 'chat',
/// route 'GET /health'.
public struct ClaimedName: Hashable, Sendable, CustomStringConvertible {
    /// What the name is ("RPC method", "namespace", "channel", "replica topic", "server API method", "route").
    public let kind: String
    public let name: String

    public init(_ kind: String, _ name: String) {
        self.kind = kind
        self.name = name
    }

    public var description: String { "\(kind) '\(name)'" }
}

/// Who installed each name (RPC methods, server API methods, namespaces, routes): a name
/// that a second owner (or the same one twice) claims is refused with an error naming both.
public struct NameClaims: Sendable {
    private var owners: [ClaimedName: String]

    /// Owners are "the hub" (the names in `hubNames`) or a domain's name.
    public init(hubNames: some Sequence<ClaimedName> = []) {
        owners = Dictionary(hubNames.map { ($0, Self.hub) }, uniquingKeysWith: { first, _ in first })
    }

    /// Claims of one kind of name, the hub's `hubNames` first.
    public init(kind: String, hubNames: some Sequence<String>) {
        self.init(hubNames: hubNames.map { ClaimedName(kind, $0) })
    }

    /// The owner of what the hub itself serves.
    public static let hub = "the hub"

    /// Records `names` as `owner`'s; thrown when one of them already has an owner.
    public mutating func claim(_ names: [ClaimedName], by owner: String) throws(NameClaimError) {
        for name in names {
            if let previous = owners[name] {
                let claimants =
                    previous == owner ? "twice by \(Self.describe(owner))" : "by both \(Self.describe(previous)) and \(Self.describe(owner))"
                throw NameClaimError(description: "\(name) is claimed \(claimants)")
            }
            owners[name] = owner
        }
    }

    /// Records `names`, all of `kind`, as `owner`'s.
    public mutating func claim(_ names: [String], kind: String, by owner: String) throws(NameClaimError) {
        try claim(names.map { ClaimedName(kind, $0) }, by: owner)
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
