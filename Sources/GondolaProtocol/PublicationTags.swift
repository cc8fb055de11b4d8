/// How stores and the cluster's bus write a publication's tags: a JSON object of
/// strings, keys sorted so that equal tags make equal bytes.
public enum PublicationTags {
    /// `tags` as a JSON object.
    public static func json(_ tags: [String: String]) -> JSON {
        .object(tags.sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value)) })
    }

    /// Tags read back from `json`, which must be an object of strings.
    public static func read(_ json: JSON) throws(ProtocolDecodingError) -> [String: String] {
        try JSONFields<ProtocolDecodingError>(.object([("tags", json)])).stringMap("tags")
    }

    /// Tags read back from the bytes `json` wrote.
    public static func read(_ bytes: [UInt8]) throws -> [String: String] {
        try read(try JSONParser.parse(bytes))
    }
}
