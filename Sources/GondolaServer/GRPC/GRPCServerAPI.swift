import Foundation
import GRPCCore
import GondolaHub
import GondolaProtocol
import SwiftProtobuf

/// Centrifugo's server API over GRPC (`centrifugal.centrifugo.api.CentrifugoApi`, from
/// `api.proto`): each method reads its request message as the JSON request of the server
/// API method of the same name, answers it with the code that answers the HTTP API
/// (`ServerAPI.call`), and reads the JSON answer back as its response message, `error`
/// and `result` as Centrifugo fills them. The two encodings differ only in payloads:
/// `bytes` `data` and `info` carry the payload itself, which `GRPCPayloads` turns into the
/// JSON API's `data` (JSON as it is) or `b64data` (any other bytes) and back.
struct GRPCServerAPI: Centrifugal_Centrifugo_Api_CentrifugoApi.SimpleServiceProtocol {
    let api: ServerAPI

    func batch(request: Centrifugal_Centrifugo_Api_BatchRequest, context: ServerContext) async throws
        -> Centrifugal_Centrifugo_Api_BatchResponse
    { try await call("batch", request) }

    func publish(request: Centrifugal_Centrifugo_Api_PublishRequest, context: ServerContext) async throws
        -> Centrifugal_Centrifugo_Api_PublishResponse
    { try await call("publish", request) }

    func broadcast(request: Centrifugal_Centrifugo_Api_BroadcastRequest, context: ServerContext) async throws
        -> Centrifugal_Centrifugo_Api_BroadcastResponse
    { try await call("broadcast", request) }

    func subscribe(request: Centrifugal_Centrifugo_Api_SubscribeRequest, context: ServerContext) async throws
        -> Centrifugal_Centrifugo_Api_SubscribeResponse
    { try await call("subscribe", request) }

    func unsubscribe(request: Centrifugal_Centrifugo_Api_UnsubscribeRequest, context: ServerContext) async throws
        -> Centrifugal_Centrifugo_Api_UnsubscribeResponse
    { try await call("unsubscribe", request) }

    func disconnect(request: Centrifugal_Centrifugo_Api_DisconnectRequest, context: ServerContext) async throws
        -> Centrifugal_Centrifugo_Api_DisconnectResponse
    { try await call("disconnect", request) }

    func presence(request: Centrifugal_Centrifugo_Api_PresenceRequest, context: ServerContext) async throws
        -> Centrifugal_Centrifugo_Api_PresenceResponse
    { try await call("presence", request) }

    func presenceStats(request: Centrifugal_Centrifugo_Api_PresenceStatsRequest, context: ServerContext) async throws
        -> Centrifugal_Centrifugo_Api_PresenceStatsResponse
    { try await call("presence_stats", request) }

    func history(request: Centrifugal_Centrifugo_Api_HistoryRequest, context: ServerContext) async throws
        -> Centrifugal_Centrifugo_Api_HistoryResponse
    { try await call("history", request) }

    func historyRemove(request: Centrifugal_Centrifugo_Api_HistoryRemoveRequest, context: ServerContext) async throws
        -> Centrifugal_Centrifugo_Api_HistoryRemoveResponse
    { try await call("history_remove", request) }

    func info(request: Centrifugal_Centrifugo_Api_InfoRequest, context: ServerContext) async throws
        -> Centrifugal_Centrifugo_Api_InfoResponse
    { try await call("info", request) }

    func refresh(request: Centrifugal_Centrifugo_Api_RefreshRequest, context: ServerContext) async throws
        -> Centrifugal_Centrifugo_Api_RefreshResponse
    { try await call("refresh", request) }

    func channels(request: Centrifugal_Centrifugo_Api_ChannelsRequest, context: ServerContext) async throws
        -> Centrifugal_Centrifugo_Api_ChannelsResponse
    { try await call("channels", request) }

    /// Runs `method` with the request read as JSON; its answer (`{"result"}`, `{"error"}`,
    /// or `batch`'s `{"replies"}`) read as `Response`.
    private func call<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
        _ method: String, _ request: Request
    ) async throws -> Response {
        var options = JSONEncodingOptions()
        options.preserveProtoFieldNames = true
        options.alwaysPrintInt64sAsNumbers = true
        let body = GRPCPayloads.request(try JSONParser.parse(try request.jsonUTF8Bytes(options: options) as [UInt8]))
        guard let answer = await api.call(method, body: body) else {
            throw RPCError(code: .unimplemented, message: "\(method) is not a server API method")
        }
        var decoding = JSONDecodingOptions()
        decoding.ignoreUnknownFields = true
        return try Response(jsonUTF8Bytes: GRPCPayloads.answer(answer).bytes, options: decoding)
    }
}

/// Payloads between the GRPC messages' `bytes` fields and the JSON server API: what a
/// request's `data` or `info` holds goes to the API as that JSON when it is JSON (byte for
/// byte), else as `b64data`/`b64info`; what an answer holds as JSON (`data`, `conn_info`,
/// `chan_info`) goes back as the bytes of that JSON.
enum GRPCPayloads {
    /// The payload members of requests, with the member that takes them in base64.
    static let requestPayloads = ["data": "b64data", "info": "b64info"]

    /// `json` (a request as the protobuf JSON mapping writes it: bytes in base64) as the JSON
    /// server API takes it, at every depth (a batch's commands).
    static func request(_ json: JSON) -> JSON {
        switch json {
        case let .object(members):
            return .object(
                members.map { member in
                    guard let base64Key = requestPayloads[member.key], case let .string(base64) = member.value,
                        let bytes = Data(base64Encoded: base64)
                    else { return (member.key, request(member.value)) }
                    if let raw = try? RawJSON(validating: [UInt8](bytes)) { return (member.key, .raw(raw)) }
                    return (base64Key, .string(base64))
                })
        case let .array(items): return .array(items.map(request))
        default: return json
        }
    }

    /// `json` (an answer, its payloads raw JSON) with every payload as the base64 of its
    /// bytes, as the protobuf JSON mapping reads `bytes`.
    static func answer(_ json: JSON) -> JSON {
        switch json {
        case let .raw(raw): .string(Data(raw.bytes).base64EncodedString())
        case let .object(members): .object(members.map { ($0.key, answer($0.value)) })
        case let .array(items): .array(items.map(answer))
        default: json
        }
    }
}
