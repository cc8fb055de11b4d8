import Foundation
import SwiftProtobuf

extension ConnectResult {
    var protobuf: Centrifugal_Centrifuge_Protocol_ConnectResult {
        var result = Centrifugal_Centrifuge_Protocol_ConnectResult()
        result.client = client
        result.version = version
        result.expires = expires
        result.ttl = ttl
        result.data = data.protobufData
        result.subs = subs.mapValues(\.protobuf)
        result.ping = ping
        result.pong = pong
        result.session = session
        result.node = node
        return result
    }

    /// The result as a unidirectional connection's connect push carries it.
    var protobufPush: Centrifugal_Centrifuge_Protocol_Connect {
        let result = protobuf
        var push = Centrifugal_Centrifuge_Protocol_Connect()
        push.client = result.client
        push.version = result.version
        push.expires = result.expires
        push.ttl = result.ttl
        push.data = result.data
        push.subs = result.subs
        push.ping = result.ping
        push.pong = result.pong
        push.session = result.session
        push.node = result.node
        return push
    }

    init(protobuf push: Centrifugal_Centrifuge_Protocol_Connect) throws(ProtocolDecodingError) {
        var result = Centrifugal_Centrifuge_Protocol_ConnectResult()
        result.client = push.client
        result.version = push.version
        result.expires = push.expires
        result.ttl = push.ttl
        result.data = push.data
        result.subs = push.subs
        result.ping = push.ping
        result.pong = push.pong
        result.session = push.session
        result.node = push.node
        try self.init(protobuf: result)
    }

    init(protobuf result: Centrifugal_Centrifuge_Protocol_ConnectResult) throws(ProtocolDecodingError) {
        self.init(
            client: result.client, version: result.version, expires: result.expires, ttl: result.ttl,
            ping: result.ping, pong: result.pong, node: result.node)
        data = try RawJSON.fromProtobuf(result.data, field: "connect.data")
        for (channel, subscription) in result.subs { subs[channel] = try SubscribeResult(protobuf: subscription) }
        session = result.session
    }
}

extension Reply {
    /// The reply as a Protobuf message (without its length prefix).
    var protobufBytes: [UInt8] {
        var reply = PBReply()
        reply.id = id
        switch body {
        case let .error(error):
            reply.error.code = error.code
            reply.error.message = error.message
            reply.error.temporary = error.temporary
        case let .connect(result): reply.connect = result.protobuf
        case let .subscribe(result): reply.subscribe = result.protobuf
        case .unsubscribe: reply.unsubscribe = .init()
        case .publish: reply.publish = .init()
        case let .presence(clients): reply.presence.presence = clients.mapValues(\.protobuf)
        case let .presenceStats(stats):
            reply.presenceStats.numClients = stats.numClients
            reply.presenceStats.numUsers = stats.numUsers
        case let .history(result):
            reply.history.publications = result.publications.map(\.protobuf)
            reply.history.epoch = result.epoch
            reply.history.offset = result.offset
        case .ping: reply.ping = .init()
        case let .rpc(data): reply.rpc.data = data.protobufData
        case let .refresh(result):
            reply.refresh.client = result.client
            reply.refresh.version = result.version
            reply.refresh.expires = result.expires
            reply.refresh.ttl = result.ttl
        case let .subRefresh(result):
            reply.subRefresh.expires = result.expires
            reply.subRefresh.ttl = result.ttl
        }
        return reply.serializedByteArray
    }

    init(protobuf reply: PBReply) throws(ProtocolDecodingError) {
        id = reply.id
        if reply.hasError {
            body = .error(ProtocolError(code: reply.error.code, message: reply.error.message, temporary: reply.error.temporary))
        } else if reply.hasConnect {
            body = .connect(try ConnectResult(protobuf: reply.connect))
        } else if reply.hasSubscribe {
            body = .subscribe(try SubscribeResult(protobuf: reply.subscribe))
        } else if reply.hasUnsubscribe {
            body = .unsubscribe
        } else if reply.hasPublish {
            body = .publish
        } else if reply.hasPresence {
            var clients: [String: ClientInfo] = [:]
            for (client, info) in reply.presence.presence { clients[client] = try ClientInfo(protobuf: info) }
            body = .presence(clients)
        } else if reply.hasPresenceStats {
            body = .presenceStats(PresenceStats(numClients: reply.presenceStats.numClients, numUsers: reply.presenceStats.numUsers))
        } else if reply.hasHistory {
            body = .history(
                HistoryResult(
                    publications: try reply.history.publications.map { (publication) throws(ProtocolDecodingError) in
                        try Publication(protobuf: publication)
                    },
                    epoch: reply.history.epoch, offset: reply.history.offset))
        } else if reply.hasPing {
            body = .ping
        } else if reply.hasRpc {
            body = .rpc(data: try RawJSON.fromProtobuf(reply.rpc.data, field: "rpc.data"))
        } else if reply.hasRefresh {
            body = .refresh(
                RefreshResult(
                    client: reply.refresh.client, version: reply.refresh.version,
                    expires: reply.refresh.expires, ttl: reply.refresh.ttl))
        } else if reply.hasSubRefresh {
            body = .subRefresh(SubRefreshResult(expires: reply.subRefresh.expires, ttl: reply.subRefresh.ttl))
        } else {
            throw ProtocolDecodingError("reply \(reply.id) carries no known result")
        }
    }
}

extension Push {
    /// The push as a Protobuf Reply message (without its length prefix).
    var protobufBytes: [UInt8] {
        var reply = PBReply()
        reply.push = protobufMessage
        return reply.serializedByteArray
    }

    /// The push as a Protobuf `Push` message alone, as a unidirectional GRPC stream sends it
    /// (Centrifugo's `unistream.Push` has the same field numbers).
    public var protobufPushBytes: [UInt8] { protobufMessage.serializedByteArray }

    /// Reads a Protobuf `Push` message alone.
    public init(protobufPush bytes: some Collection<UInt8>) throws(ProtocolDecodingError) {
        let push: PBPush
        do {
            push = try PBPush(serializedBytes: Array(bytes))
        } catch {
            throw ProtocolDecodingError("not a Protobuf Push: \(error)")
        }
        try self.init(protobuf: push)
    }

    private var protobufMessage: PBPush {
        var push = PBPush()
        push.channel = channel
        switch body {
        case let .publication(publication): push.pub = publication.protobuf
        case let .join(info): push.join.info = info.protobuf
        case let .leave(info): push.leave.info = info.protobuf
        case let .unsubscribe(code, reason):
            push.unsubscribe.code = code
            push.unsubscribe.reason = reason
        case let .message(data): push.message.data = data.protobufData
        case let .subscribe(result):
            push.subscribe.recoverable = result.recoverable
            push.subscribe.epoch = result.epoch
            push.subscribe.offset = result.offset
            push.subscribe.positioned = result.positioned
            push.subscribe.data = result.data.protobufData
        case let .disconnect(disconnect):
            push.disconnect.code = UInt32(disconnect.code)
            push.disconnect.reason = disconnect.reason
            push.disconnect.reconnect = disconnect.reconnect
        case let .refresh(expires, ttl):
            push.refresh.expires = expires
            push.refresh.ttl = ttl
        case let .connect(result): push.connect = result.protobufPush
        }
        return push
    }

    init(protobuf push: PBPush) throws(ProtocolDecodingError) {
        channel = push.channel
        if push.hasPub {
            body = .publication(try Publication(protobuf: push.pub))
        } else if push.hasJoin {
            body = .join(try ClientInfo(protobuf: push.join.info))
        } else if push.hasLeave {
            body = .leave(try ClientInfo(protobuf: push.leave.info))
        } else if push.hasUnsubscribe {
            body = .unsubscribe(code: push.unsubscribe.code, reason: push.unsubscribe.reason)
        } else if push.hasMessage {
            body = .message(data: try RawJSON.fromProtobuf(push.message.data, field: "message.data") ?? RawJSON(.null))
        } else if push.hasSubscribe {
            var result = SubscribeResult()
            result.recoverable = push.subscribe.recoverable
            result.epoch = push.subscribe.epoch
            result.offset = push.subscribe.offset
            result.positioned = push.subscribe.positioned
            result.data = try RawJSON.fromProtobuf(push.subscribe.data, field: "subscribe.data")
            body = .subscribe(result)
        } else if push.hasDisconnect {
            guard push.disconnect.code <= UInt32(UInt16.max) else {
                throw ProtocolDecodingError("disconnect code \(push.disconnect.code) is out of range")
            }
            body = .disconnect(DisconnectCode(code: UInt16(push.disconnect.code), reason: push.disconnect.reason))
        } else if push.hasRefresh {
            body = .refresh(expires: push.refresh.expires, ttl: push.refresh.ttl)
        } else if push.hasConnect {
            body = .connect(try ConnectResult(protobuf: push.connect))
        } else {
            throw ProtocolDecodingError("push carries no known body")
        }
    }
}

extension ServerMessage {
    /// Decodes one length-delimited Reply of a Protobuf frame: an empty reply is a
    /// ping, one with `push` a push, any other a reply to a command.
    init(protobuf bytes: ArraySlice<UInt8>) throws(ProtocolDecodingError) {
        let reply: PBReply
        do {
            reply = try PBReply(serializedBytes: Array(bytes))
        } catch {
            throw ProtocolDecodingError("not a Protobuf Reply: \(error)")
        }
        if reply.hasPush {
            self = .push(try Push(protobuf: reply.push))
        } else if reply.id == 0, !reply.hasError {
            self = .ping
        } else {
            self = .reply(try Reply(protobuf: reply))
        }
    }
}
