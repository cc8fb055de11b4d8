import GondolaProtocol
import Hummingbird

/// Chooses a WebSocket connection's protocol encoding from its upgrade request:
/// Protobuf when the client offers the `centrifuge-protobuf` subprotocol (which the
/// handshake then answers) or asks with `?format=protobuf`; JSON otherwise.
enum WebSocketEncoding {
    /// The encoding of the connection `request` opens; a `format` other than
    /// `json` or `protobuf` throws, naming it.
    static func of(_ request: Request) throws(ProtocolDecodingError) -> ProtocolEncoding {
        if offersProtobufSubprotocol(request) { return .protobuf }
        guard let format = request.uri.queryParameters["format"] else { return .json }
        guard let encoding = ProtocolEncoding(rawValue: String(format)) else {
            throw ProtocolDecodingError("format must be json or protobuf, got '\(format)'")
        }
        return encoding
    }

    /// Headers of the upgrade response: the chosen subprotocol, when the client offered it.
    static func upgradeHeaders(for request: Request) -> HTTPFields {
        offersProtobufSubprotocol(request) ? [.secWebSocketProtocol: ProtocolEncoding.protobufSubprotocol] : [:]
    }

    private static func offersProtobufSubprotocol(_ request: Request) -> Bool {
        request.headers[values: .secWebSocketProtocol]
            .flatMap { $0.split(separator: ",") }
            .contains { $0.trimmingCharacters(in: .whitespaces) == ProtocolEncoding.protobufSubprotocol }
    }
}
