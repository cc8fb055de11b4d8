import Foundation

/// What a client of an HTTP-streaming or SSE connection posts to `/emulation` to send
/// commands to its session (bidirectional emulation): the node that holds the session,
/// the session's key from the connect result, and the commands as the session's
/// encoding frames them. In a JSON request `data` is a string: the JSON commands as text
/// for a JSON session, their Protobuf bytes in base64 for a Protobuf one. A Protobuf
/// request (`application/octet-stream`) carries the bytes as they are.
public struct EmulationRequest: Sendable, Equatable {
    /// The commands as the request carried them, read once the session's encoding is known.
    public enum Commands: Sendable, Equatable {
        case text(String)
        case bytes([UInt8])
    }

    public var node: String
    public var session: String
    public var data: Commands

    public init(node: String, session: String, data: Commands) {
        self.node = node
        self.session = session
        self.data = data
    }

    /// Reads a JSON request: an object with the strings `node`, `session` and `data`.
    public init(json bytes: some Collection<UInt8>) throws(ProtocolDecodingError) {
        let json: JSON
        do {
            json = try JSONParser.parse(bytes)
        } catch {
            throw ProtocolDecodingError("the emulation request is not JSON: \(error)")
        }
        let fields = try ProtocolFields(json, path: "")
        node = try fields.protobufString("node")
        session = try fields.protobufString("session")
        data = .text(try fields.protobufString("data"))
        try checkPresent()
    }

    /// Reads a Protobuf `EmulationRequest` message.
    public init(protobuf bytes: some Collection<UInt8>) throws(ProtocolDecodingError) {
        let message: Centrifugal_Centrifuge_Protocol_EmulationRequest
        do {
            message = try Centrifugal_Centrifuge_Protocol_EmulationRequest(serializedBytes: Array(bytes))
        } catch {
            throw ProtocolDecodingError("the emulation request is not a Protobuf EmulationRequest: \(error)")
        }
        node = message.node
        session = message.session
        data = .bytes(Array(message.data))
        try checkPresent()
    }

    private func checkPresent() throws(ProtocolDecodingError) {
        if node.isEmpty { throw ProtocolDecodingError("the emulation request names no node") }
        if session.isEmpty { throw ProtocolDecodingError("the emulation request names no session") }
    }

    /// The commands' bytes for a session speaking `encoding`.
    public func commands(for encoding: ProtocolEncoding) throws(ProtocolDecodingError) -> [UInt8] {
        switch (data, encoding) {
        case let (.text(text), .json): return Array(text.utf8)
        case let (.bytes(bytes), .protobuf): return bytes
        case let (.text(text), .protobuf):
            guard let bytes = Data(base64Encoded: text) else {
                throw ProtocolDecodingError("data of an emulation request to a Protobuf session must be base64")
            }
            return Array(bytes)
        case (.bytes, .json):
            throw ProtocolDecodingError("a Protobuf emulation request cannot carry commands to a JSON session")
        }
    }

    /// The request in Protobuf, as a client of a Protobuf session posts it.
    public var protobufBytes: [UInt8] {
        var message = Centrifugal_Centrifuge_Protocol_EmulationRequest()
        message.node = node
        message.session = session
        switch data {
        case let .text(text): message.data = Data(text.utf8)
        case let .bytes(bytes): message.data = Data(bytes)
        }
        return (try? message.serializedBytes()) ?? []
    }
}
