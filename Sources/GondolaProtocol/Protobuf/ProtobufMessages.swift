import Foundation
import SwiftProtobuf

// Conversions between the protocol's values and the generated Protobuf messages
// (client.pb.swift), for the parts that commands, replies and pushes share.
// Payloads are bytes fields: JSON text, or any bytes for a publication's data; an empty
// bytes field is an absent payload.

typealias PBCommand = Centrifugal_Centrifuge_Protocol_Command
typealias PBReply = Centrifugal_Centrifuge_Protocol_Reply
typealias PBPush = Centrifugal_Centrifuge_Protocol_Push
typealias PBClientInfo = Centrifugal_Centrifuge_Protocol_ClientInfo
typealias PBPublication = Centrifugal_Centrifuge_Protocol_Publication
typealias PBSubscribeRequest = Centrifugal_Centrifuge_Protocol_SubscribeRequest
typealias PBFilterNode = Centrifugal_Centrifuge_Protocol_FilterNode
typealias PBSubscribeResult = Centrifugal_Centrifuge_Protocol_SubscribeResult
typealias PBStreamPosition = Centrifugal_Centrifuge_Protocol_StreamPosition

extension RawJSON {
    /// Bytes of a payload field: the JSON text.
    var protobufData: Data { Data(bytes) }

    /// A payload from a bytes field, its bytes kept as they came: nil when empty; thrown
    /// when it is not one JSON value.
    static func fromProtobuf(_ data: Data, field: String) throws(ProtocolDecodingError) -> RawJSON? {
        guard !data.isEmpty else { return nil }
        do {
            return try RawJSON(validating: data)
        } catch {
            throw ProtocolDecodingError("\(field) is not JSON: \(error)")
        }
    }
}

extension JSON {
    /// A payload from a bytes field, parsed: nil when empty; thrown when it is not one JSON value.
    static func fromProtobuf(_ data: Data, field: String) throws(ProtocolDecodingError) -> JSON? {
        guard !data.isEmpty else { return nil }
        do {
            return try JSONParser.parse(data)
        } catch {
            throw ProtocolDecodingError("\(field) is not JSON: \(error)")
        }
    }
}

extension Payload {
    /// A payload from a bytes field: the bytes as they are (an empty field is `null`).
    init(protobuf data: Data) {
        self = data.isEmpty ? Payload(.null) : Payload(received: [UInt8](data))
    }
}

extension Optional where Wrapped == RawJSON {
    var protobufData: Data { self?.protobufData ?? Data() }
}

extension ClientInfo {
    var protobuf: PBClientInfo {
        var info = PBClientInfo()
        info.user = user
        info.client = client
        info.connInfo = connInfo.protobufData
        info.chanInfo = chanInfo.protobufData
        return info
    }

    init(protobuf info: PBClientInfo) throws(ProtocolDecodingError) {
        self.init(
            user: info.user, client: info.client,
            connInfo: try RawJSON.fromProtobuf(info.connInfo, field: "conn_info"),
            chanInfo: try RawJSON.fromProtobuf(info.chanInfo, field: "chan_info"))
    }
}

extension Publication {
    var protobuf: PBPublication {
        var publication = PBPublication()
        // A delta travels as its bytes, not as the JSON string that carries it in the JSON encoding.
        if delta, case let .string(text)? = data.json {
            publication.data = Data(text.utf8)
        } else {
            publication.data = Data(data.bytes)
        }
        if let info { publication.info = info.protobuf }
        publication.offset = offset
        publication.tags = tags
        publication.delta = delta
        return publication
    }

    init(protobuf publication: PBPublication) throws(ProtocolDecodingError) {
        self.init(
            offset: publication.offset,
            data: publication.delta
                ? Payload(.string(String(decoding: publication.data, as: UTF8.self)))
                : Payload(protobuf: publication.data),
            info: publication.hasInfo ? try ClientInfo(protobuf: publication.info) : nil,
            tags: publication.tags, delta: publication.delta)
    }
}

extension StreamPosition {
    var protobuf: PBStreamPosition {
        var position = PBStreamPosition()
        position.offset = offset
        position.epoch = epoch
        return position
    }
}

extension SubscribeRequest {
    var protobuf: PBSubscribeRequest {
        var request = PBSubscribeRequest()
        request.channel = channel
        request.token = token
        request.recover = recover
        request.epoch = epoch
        request.offset = offset
        request.data = data.protobufData
        request.positioned = positioned
        request.recoverable = recoverable
        request.joinLeave = joinLeave
        request.flag = flag
        request.delta = delta
        if let tagsFilter { request.tf = tagsFilter.protobuf }
        return request
    }

    /// Throws `PayloadError` for subscribe `data` that is not JSON.
    init(protobuf request: PBSubscribeRequest, channel: String? = nil) throws(PayloadError) {
        let data: RawJSON?
        do {
            data = try RawJSON.fromProtobuf(request.data, field: "subscribe.data")
        } catch {
            throw PayloadError(error.message)
        }
        self.init(
            channel: channel ?? request.channel, recover: request.recover, epoch: request.epoch, offset: request.offset,
            data: data, positioned: request.positioned, recoverable: request.recoverable, joinLeave: request.joinLeave,
            flag: max(0, request.flag), delta: request.delta)
        token = request.token
        if request.hasTf { tagsFilter = try TagsFilter(protobuf: request.tf) }
    }
}

extension TagsFilter {
    var protobuf: PBFilterNode {
        var node = PBFilterNode()
        node.op = op
        node.key = key
        node.cmp = cmp
        node.val = val
        node.vals = vals
        node.nodes = nodes.map(\.protobuf)
        return node
    }

    /// Throws for a filter deeper than `maxDepth` (what the decoder read is bounded by the frame).
    init(protobuf node: PBFilterNode, depth: Int = 1) throws(PayloadError) {
        guard depth <= Self.maxDepth else { throw PayloadError("subscribe.tf is more than \(Self.maxDepth) levels deep") }
        self.init(
            op: node.op, key: node.key, cmp: node.cmp, val: node.val, vals: node.vals,
            nodes: try node.nodes.map { (child) throws(PayloadError) in try TagsFilter(protobuf: child, depth: depth + 1) })
    }
}

extension SubscribeResult {
    var protobuf: PBSubscribeResult {
        var result = PBSubscribeResult()
        result.expires = expires
        result.ttl = ttl
        result.recoverable = recoverable
        result.epoch = epoch
        result.publications = publications.map(\.protobuf)
        result.recovered = recovered
        result.offset = offset
        result.positioned = positioned
        result.data = data.protobufData
        result.wasRecovering = wasRecovering
        result.delta = delta
        return result
    }

    init(protobuf result: PBSubscribeResult) throws(ProtocolDecodingError) {
        self.init()
        expires = result.expires
        ttl = result.ttl
        recoverable = result.recoverable
        epoch = result.epoch
        publications = try result.publications.map { (publication) throws(ProtocolDecodingError) in try Publication(protobuf: publication) }
        recovered = result.recovered
        offset = result.offset
        positioned = result.positioned
        data = try RawJSON.fromProtobuf(result.data, field: "subscribe.data")
        wasRecovering = result.wasRecovering
        delta = result.delta
    }
}

/// A client payload that is not JSON: the command is answered with 107.
struct PayloadError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

extension Message {
    /// The serialized message as bytes.
    var serializedByteArray: [UInt8] {
        // Serializing a message built in memory cannot fail: every field it holds is valid.
        (try? serializedBytes()) ?? []
    }
}
