import GondolaDomain
import GondolaProtocol
import HTTPTypes
import Hummingbird
import HummingbirdCore

/// Chooses a WebSocket connection's protocol encoding from its upgrade request:
/// Protobuf when the client offers the `centrifuge-protobuf` subprotocol (which the
/// handshake then answers) or asks with `?format=protobuf`; JSON otherwise.
enum WebSocketEncoding {
    /// The encoding of the connection an upgrade request for `uri` with `headers` opens;
    /// a `format` other than `json` or `protobuf` throws, naming it.
    static func of(uri: URI, headers: HTTPFields) throws(ProtocolDecodingError) -> ProtocolEncoding {
        if offersProtobufSubprotocol(headers) { return .protobuf }
        guard let format = uri.formParameter("format") else { return .json }
        guard let encoding = ProtocolEncoding(rawValue: String(format)) else {
            throw ProtocolDecodingError("format must be json or protobuf, got '\(format)'")
        }
        return encoding
    }

    /// Whether the client offers the Protobuf subprotocol, which the upgrade response then names.
    static func offersProtobufSubprotocol(_ headers: HTTPFields) -> Bool {
        headers[values: .secWebSocketProtocol]
            .flatMap { $0.split(separator: ",") }
            .contains { $0.trimmingCharacters(in: .whitespaces) == ProtocolEncoding.protobufSubprotocol }
    }
}
