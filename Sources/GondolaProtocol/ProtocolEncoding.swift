/// The two encodings of the Centrifuge client protocol: JSON (text frames of
/// newline-separated objects) and Protobuf (binary frames of varint-length-prefixed
/// messages). A connection speaks one of them from its handshake on; both share
/// channels, offsets and epochs, and payloads pass byte for byte (see `Payload`).
public enum ProtocolEncoding: String, Sendable, CaseIterable {
    case json
    case protobuf

    /// The WebSocket subprotocol that selects Protobuf.
    public static let protobufSubprotocol = "centrifuge-protobuf"

    /// Whether frames of this encoding are binary WebSocket frames.
    public var isBinary: Bool { self == .protobuf }

    /// What goes between two messages coalesced into one frame.
    public var separator: [UInt8] {
        switch self {
        case .json: return [Frame.separator]
        case .protobuf: return []
        }
    }

    /// The values of a JSON frame, its parse error as a decoding error.
    private static func jsonValues(in frame: some Collection<UInt8>) throws(ProtocolDecodingError) -> [JSON] {
        do {
            return try Frame.values(in: frame)
        } catch {
            throw ProtocolDecodingError("\(error)")
        }
    }

    // MARK: Server side

    /// The commands of one inbound frame, in order. A frame whose framing is broken
    /// (JSON that does not parse, a Protobuf length prefix that is truncated or runs
    /// past the frame) throws, and none of its commands runs.
    public func commands(in frame: some Collection<UInt8>) throws(ProtocolDecodingError) -> [DecodedCommand] {
        switch self {
        case .json:
            return try Self.jsonValues(in: frame).map { (value) -> DecodedCommand in
                do throws(ProtocolDecodingError) {
                    return .command(try Command(json: value))
                } catch {
                    return .malformed(error)
                }
            }
        case .protobuf:
            let bytes = Array(frame)
            return try ProtobufFraming.messages(in: bytes).map(Command.decodeProtobuf)
        }
    }

    /// A reply as one message of a frame.
    public func encode(_ reply: Reply) -> [UInt8] {
        switch self {
        case .json: return reply.json.bytes
        case .protobuf: return ProtobufFraming.lengthPrefixed(reply.protobufBytes)
        }
    }

    /// A push as one message of a frame.
    public func encode(_ push: Push) -> [UInt8] {
        switch self {
        case .json: return push.jsonBytes
        case .protobuf: return ProtobufFraming.lengthPrefixed(push.protobufBytes)
        }
    }

    /// `message`, one message this encoding encoded, as a unidirectional connection sends it:
    /// a JSON push alone, without the `{"push":…}` around it (`{"connect":{…}}`, then
    /// `{"channel":"c","pub":{…}}`), as Centrifugo's unidirectional transports send pushes.
    /// Anything else passes as it is: the ping `{}`, and Protobuf messages, which the
    /// unidirectional GRPC stream takes apart itself. Every push this encoding writes starts
    /// with `{"push":` and ends with the `}` that closes it, so the push is the bytes between.
    public func unidirectional(_ message: [UInt8]) -> [UInt8] {
        guard self == .json, message.count > Self.pushPrefix.count, message.starts(with: Self.pushPrefix),
            message.last == UInt8(ascii: "}")
        else { return message }
        return Array(message[Self.pushPrefix.count..<(message.count - 1)])
    }

    private static let pushPrefix = Array(#"{"push":"#.utf8)

    /// The server's ping: `{}` in JSON, an empty Reply in Protobuf.
    public var ping: [UInt8] {
        switch self {
        case .json: return Frame.emptyObject
        case .protobuf: return ProtobufFraming.lengthPrefixed([])
        }
    }

    // MARK: Client side (tests, load generator, fuzzing seeds)

    /// A command as one message of a frame.
    public func encode(_ command: Command) -> [UInt8] {
        switch self {
        case .json: return command.json.bytes
        case .protobuf: return ProtobufFraming.lengthPrefixed(command.protobufBytes)
        }
    }

    /// Messages joined into one frame.
    public func frame(_ messages: [[UInt8]]) -> [UInt8] {
        switch self {
        case .json: return Frame.join(messages)
        case .protobuf: return messages.flatMap { $0 }
        }
    }

    /// What the server sent in one frame.
    public func serverMessages(in frame: some Collection<UInt8>) throws(ProtocolDecodingError) -> [ServerMessage] {
        switch self {
        case .json:
            var messages: [ServerMessage] = []
            for value in try Self.jsonValues(in: frame) { messages.append(try ServerMessage(json: value)) }
            return messages
        case .protobuf:
            var messages: [ServerMessage] = []
            for message in try ProtobufFraming.messages(in: Array(frame)) {
                messages.append(try ServerMessage(protobuf: message))
            }
            return messages
        }
    }
}

extension ProtocolEncoding {
    /// What a unidirectional connection sent in one frame: pushes alone and `{}` pings in
    /// JSON (`unidirectional(_:)`); Protobuf frames as `serverMessages(in:)` reads them.
    public func unidirectionalMessages(in frame: some Collection<UInt8>) throws(ProtocolDecodingError) -> [ServerMessage] {
        guard self == .json else { return try serverMessages(in: frame) }
        var messages: [ServerMessage] = []
        for value in try Self.jsonValues(in: frame) {
            if case let .object(members) = value, members.isEmpty {
                messages.append(.ping)
            } else {
                messages.append(.push(try Push(json: .object([(key: "push", value: value)]))))
            }
        }
        return messages
    }
}

/// One command of an inbound frame, as its decoder found it.
public enum DecodedCommand: Sendable, Equatable {
    case command(Command)
    /// A well-formed command that is answered with an error instead of being run
    /// (a Protobuf payload that is not JSON: 107).
    case refused(id: UInt32, ProtocolError)
    /// A command that breaks the protocol: the connection closes with 3501 when it is reached.
    case malformed(ProtocolDecodingError)
}

/// A push encoded on demand, at most once per encoding, so that a publication
/// fanned out to connections of both encodings is encoded once for each.
public struct EncodedPush {
    public let push: Push
    private var json: [UInt8]?
    private var protobuf: [UInt8]?

    public init(_ push: Push) { self.push = push }

    /// The push's bytes in `encoding`, encoded the first time they are asked for.
    public mutating func bytes(for encoding: ProtocolEncoding) -> [UInt8] {
        switch encoding {
        case .json:
            if let json { return json }
            let bytes = encoding.encode(push)
            json = bytes
            return bytes
        case .protobuf:
            if let protobuf { return protobuf }
            let bytes = encoding.encode(push)
            protobuf = bytes
            return bytes
        }
    }
}

extension ProtocolEncoding {
    /// What is wrong with how this encoding decodes `frame`, or nil when nothing is:
    /// every command it accepts must survive encoding and decoding again unchanged.
    /// A frame that is refused or malformed is a correct answer, not a failure. The
    /// fuzzers and the replay of their kept inputs check each input with it.
    public func roundTripFailure(of frame: [UInt8]) -> String? {
        guard let decoded = try? commands(in: frame) else { return nil }
        for case let .command(command) in decoded {
            let again = try? commands(in: encode(command))
            guard again == [.command(command)] else {
                return "\(self) round trip changed \(command) into \(String(describing: again))"
            }
        }
        return nil
    }
}
