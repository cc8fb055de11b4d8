/// Who installed each name of one kind (RPC methods, server API methods, provided
/// namespaces and channels): a name that a second domain (or the same one twice) claims
/// stops the start with a message naming both.
struct NameClaims {
    /// What the names are ("RPC method"); empty when each name says it itself.
    let kind: String
    private var owners: [String: String]

    /// The names the hub itself serves, owned by "the hub".
    init(kind: String, hubNames: some Sequence<String>) {
        self.kind = kind
        owners = Dictionary(hubNames.map { ($0, "the hub") }, uniquingKeysWith: { first, _ in first })
    }

    /// Records `names` as `domain`'s; thrown when one of them already has an owner.
    mutating func claim(_ names: [String], by domain: String) throws(ConfigurationError) {
        for name in names {
            if let owner = owners[name] {
                let claimants = owner == domain ? "twice by domain '\(domain)'" : "by both \(Self.describe(owner)) and domain '\(domain)'"
                let named = kind.isEmpty ? name : "\(kind) '\(name)'"
                throw ConfigurationError("\(named) is claimed \(claimants)")
            }
            owners[name] = domain
        }
    }

    private static func describe(_ owner: String) -> String {
        owner == "the hub" ? owner : "domain '\(owner)'"
    }
}
