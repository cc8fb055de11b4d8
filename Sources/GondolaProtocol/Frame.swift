/// The JSON transport's framing: one WebSocket text frame holds one or more
/// JSON values separated by `\n`.
public enum Frame {
    /// The line separator between messages of a frame.
    public static let separator = UInt8(ascii: "\n")

    /// The ping the server sends (`{}`), and the pong a client answers with.
    public static let emptyObject: [UInt8] = Array("{}".utf8)

    /// The members whose values are payloads, kept byte for byte as they were written.
    public static let payloadMembers: Set<String> = ["data", "conn_info", "chan_info"]

    /// Splits a frame into its non-empty lines and parses each as one JSON value, keeping
    /// payloads (`payloadMembers`) as they were written.
    public static func values(in frame: some Collection<UInt8>) throws(JSONParseError) -> [JSON] {
        // One copy into an array (none for an array), so that the scan and the parser run on
        // contiguous bytes instead of through the collection's generic interface.
        let bytes = Array(frame)
        var values: [JSON] = []
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: separator) ?? bytes.endIndex
            let line = bytes[start..<end]
            start = end + 1
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            values.append(try JSONParser.parse(line, keepingRaw: payloadMembers))
        }
        return values
    }

    /// Joins encoded messages into one frame.
    public static func join(_ messages: [[UInt8]]) -> [UInt8] {
        var frame: [UInt8] = []
        frame.reserveCapacity(messages.reduce(messages.count) { $0 + $1.count })
        for (index, message) in messages.enumerated() {
            if index > 0 { frame.append(separator) }
            frame.append(contentsOf: message)
        }
        return frame
    }
}
