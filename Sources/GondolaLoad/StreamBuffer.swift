/// A peer broke its protocol (NATS or MQTT); the connection should be dropped.
public struct ProtocolViolation: Error, Equatable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}

/// The bytes of a stream protocol received but not yet parsed: WebSocket messages
/// need not align with the protocol's operations or packets, so a parser sees the
/// unfinished tail again with the next message.
struct StreamBuffer: Sendable {
    private var pending: [UInt8] = []
    /// The most bytes an unfinished operation or packet may hold.
    let limit: Int

    init(limit: Int) { self.limit = limit }

    /// Appends `input`, lets `parse` take complete units from the front of what is
    /// pending (it answers how many bytes it used), and keeps the rest.
    mutating func feed<Bytes: Collection>(_ input: Bytes, _ parse: ([UInt8]) throws(ProtocolViolation) -> Int) throws(ProtocolViolation)
    where Bytes.Element == UInt8 {
        pending.append(contentsOf: input)
        let used = try parse(pending)
        pending.removeFirst(used)
        guard pending.count <= limit else { throw ProtocolViolation("more than \(limit) bytes of an unfinished operation") }
    }
}
