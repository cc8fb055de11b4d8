import Foundation
import SwiftProtobuf

extension Command {
    /// Decodes one length-delimited message of a Protobuf frame.
    ///
    /// Mirrors the JSON decoder: one request per command (none only in the pong,
    /// id 0), a positive id except for `send`, and no field the protocol does not
    /// define at the command's top level (an unknown method number). A payload
    /// that is not JSON is refused with 107 rather than closing the connection.
    static func decodeProtobuf(_ bytes: ArraySlice<UInt8>) -> DecodedCommand {
        let message: PBCommand
        do {
            message = try PBCommand(serializedBytes: Array(bytes))
        } catch {
            return .malformed(ProtocolDecodingError("not a Protobuf Command: \(error)"))
        }
        guard message.unknownFields.data.isEmpty else {
            return .malformed(ProtocolDecodingError("command \(message.id) has a field the protocol does not define (unknown method)"))
        }
        var present: [String] = []
        if message.hasConnect { present.append("connect") }
        if message.hasSubscribe { present.append("subscribe") }
        if message.hasUnsubscribe { present.append("unsubscribe") }
        if message.hasPublish { present.append("publish") }
        if message.hasPresence { present.append("presence") }
        if message.hasPresenceStats { present.append("presence_stats") }
        if message.hasHistory { present.append("history") }
        if message.hasPing { present.append("ping") }
        if message.hasSend { present.append("send") }
        if message.hasRpc { present.append("rpc") }
        if message.hasRefresh { present.append("refresh") }
        if message.hasSubRefresh { present.append("sub_refresh") }
        let id = message.id
        guard present.count <= 1 else {
            return .malformed(ProtocolDecodingError("a command carries one method, got \(present.joined(separator: ", "))"))
        }
        guard let name = present.first else {
            guard id == 0 else { return .malformed(ProtocolDecodingError("command \(id) has no method")) }
            return .command(Command(id: 0, .pong))
        }
        guard id > 0 || name == "send" else { return .malformed(ProtocolDecodingError("command '\(name)' needs a positive id")) }
        do {
            return .command(Command(id: id, try method(of: message, named: name)))
        } catch let error as PayloadError {
            return .refused(id: id, ProtocolError.badRequest.with(message: error.message))
        } catch {
            return .malformed(error as? ProtocolDecodingError ?? ProtocolDecodingError("\(error)"))
        }
    }

    static func payload(_ data: Data, _ field: String) throws(PayloadError) -> RawJSON? {
        do {
            return try RawJSON.fromProtobuf(data, field: field)
        } catch {
            throw PayloadError(error.message)
        }
    }

    private static func parsedPayload(_ data: Data, _ field: String) throws(PayloadError) -> JSON? {
        do {
            return try JSON.fromProtobuf(data, field: field)
        } catch {
            throw PayloadError(error.message)
        }
    }

    private static func method(of message: PBCommand, named name: String) throws -> Method {
        switch name {
        case "connect":
            return .connect(try ConnectRequest(protobuf: message.connect))
        case "subscribe": return .subscribe(try SubscribeRequest(protobuf: message.subscribe))
        case "unsubscribe": return .unsubscribe(channel: message.unsubscribe.channel)
        case "publish":
            // Any bytes: a Protobuf client may publish binary payloads (Protobuf, CBOR, ...).
            guard !message.publish.data.isEmpty else { throw PayloadError("publish.data is required") }
            return .publish(channel: message.publish.channel, data: Payload(received: [UInt8](message.publish.data)))
        case "presence": return .presence(channel: message.presence.channel)
        case "presence_stats": return .presenceStats(channel: message.presenceStats.channel)
        case "history":
            let history = message.history
            let since = history.hasSince ? StreamPosition(offset: history.since.offset, epoch: history.since.epoch) : nil
            return .history(HistoryRequest(channel: history.channel, limit: history.limit, since: since, reverse: history.reverse))
        case "ping": return .ping
        case "send": return .send(data: try payload(message.send.data, "send.data"))
        case "rpc": return .rpc(method: message.rpc.method, data: try parsedPayload(message.rpc.data, "rpc.data"))
        case "refresh": return .refresh(token: message.refresh.token)
        case "sub_refresh": return .subRefresh(channel: message.subRefresh.channel, token: message.subRefresh.token)
        default: throw ProtocolDecodingError("command '\(name)' is not supported")
        }
    }

    /// The command as a Protobuf message (without its length prefix).
    var protobufBytes: [UInt8] {
        var command = PBCommand()
        command.id = id
        switch method {
        case let .connect(request):
            var connect = Centrifugal_Centrifuge_Protocol_ConnectRequest()
            connect.token = request.token
            connect.data = request.data.protobufData
            connect.name = request.name
            connect.version = request.version
            connect.subs = request.subs.mapValues(\.protobuf)
            connect.headers = request.headers
            command.connect = connect
        case let .subscribe(request): command.subscribe = request.protobuf
        case let .unsubscribe(channel): command.unsubscribe.channel = channel
        case let .publish(channel, data):
            command.publish.channel = channel
            command.publish.data = Data(data.bytes)
        case let .presence(channel): command.presence.channel = channel
        case let .presenceStats(channel): command.presenceStats.channel = channel
        case let .history(request):
            var history = Centrifugal_Centrifuge_Protocol_HistoryRequest()
            history.channel = request.channel
            history.limit = request.limit
            if let since = request.since { history.since = since.protobuf }
            history.reverse = request.reverse
            command.history = history
        case .ping: command.ping = .init()
        case let .rpc(method, data):
            command.rpc.method = method
            command.rpc.data = data.map(RawJSON.init).protobufData
        case let .send(data): command.send.data = data.protobufData
        case let .refresh(token): command.refresh.token = token
        case let .subRefresh(channel, token):
            command.subRefresh.channel = channel
            command.subRefresh.token = token
        case .pong: break
        }
        return command.serializedByteArray
    }
}

extension ConnectRequest {
    /// Reads a Protobuf `ConnectRequest` message alone, as a unidirectional GRPC stream's
    /// request carries it (Centrifugo's `unistream.ConnectRequest` has the same field numbers).
    public init(protobuf bytes: some Collection<UInt8>) throws(ProtocolDecodingError) {
        let message: Centrifugal_Centrifuge_Protocol_ConnectRequest
        do {
            message = try Centrifugal_Centrifuge_Protocol_ConnectRequest(serializedBytes: Array(bytes))
        } catch {
            throw ProtocolDecodingError("not a Protobuf ConnectRequest: \(error)")
        }
        do {
            try self.init(protobuf: message)
        } catch let error as ProtocolDecodingError {
            throw error
        } catch {
            throw ProtocolDecodingError("\(error)")
        }
    }

    /// The request as a Protobuf `ConnectRequest` message alone (a unidirectional GRPC client's request).
    public var protobufBytes: [UInt8] {
        var message = Centrifugal_Centrifuge_Protocol_ConnectRequest()
        message.token = token
        message.data = data.protobufData
        message.name = name
        message.version = version
        message.subs = subs.mapValues(\.protobuf)
        message.headers = headers
        return message.serializedByteArray
    }

    init(protobuf connect: Centrifugal_Centrifuge_Protocol_ConnectRequest) throws {
        self.init(
            token: connect.token, data: try Command.payload(connect.data, "connect.data"), name: connect.name, version: connect.version,
            headers: connect.headers)
        for (channel, subscription) in connect.subs {
            subs[channel] = try SubscribeRequest(protobuf: subscription, channel: channel)
        }
    }
}
