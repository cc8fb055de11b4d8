@_spi(Engine) import GondolaHub
import GondolaProtocol

/// `publish`'s answer: where the publication sits in the channel's stream, nothing for a
/// channel without one.
struct PublishAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .integer("offset", "the publication's place in the stream", ifAny: { $0.position.map { Int64($0.offset) } }),
        .string("epoch", "the stream's epoch", ifAny: { $0.position?.epoch }),
    ]
    let position: StreamPosition?
}

/// A refusal as the server API answers it.
struct ErrorAnswer: AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .integer("code", "the client protocol's error code") { Int64($0.error.code) }, .string("message") { $0.error.message },
    ]
    let error: ProtocolError
}

/// `broadcast`'s answer: one outcome per channel, in the request's order.
struct BroadcastAnswer: ResponseContract, AnswerObject {
    /// One channel's outcome: its publication's place, or why it was refused.
    struct Outcome: AnswerObject {
        static let members: [AnswerMember<Self>] = [
            .object("result", "as `publish` answers", ifAny: { (try? $0.outcome.get()).map(PublishAnswer.init) }),
            .object(
                "error", "the channel's refusal",
                ifAny: { outcome -> ErrorAnswer? in
                    guard case let .failure(error) = outcome.outcome else { return nil }
                    return ErrorAnswer(error: error.protocolError)
                }),
        ]
        let outcome: Result<StreamPosition?, HubError>
    }

    static let members: [AnswerMember<Self>] = [.objects("responses", "one per channel, in order") { $0.outcomes.map(Outcome.init) }]
    let outcomes: [Result<StreamPosition?, HubError>]
}

/// `presence`'s answer: every subscriber of the channel, by client id.
struct PresenceAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .json("presence", .object, "client id → `{client, user, conn_info?, chan_info?}`") {
            .object($0.clients.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value.json) })
        }
    ]
    let clients: [String: ClientInfo]
}

/// `presence_stats`' answer: both counts even when zero (the client protocol's encoding
/// leaves zeros out).
struct PresenceStatsAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .integer("num_clients") { Int64($0.stats.numClients) }, .integer("num_users") { Int64($0.stats.numUsers) },
    ]
    let stats: PresenceStats
}

/// `history`'s answer: the publications asked for and the stream's position.
struct HistoryAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .json(
            "publications", .objectArray, "`{data, offset, info?}`, oldest first unless `reverse`; absent when none",
            ifAny: { $0.result.publications.isEmpty ? nil : .array($0.result.publications.map(\.json)) }),
        .integer("offset", "the stream's last offset", ifAny: { $0.result.offset == 0 ? nil : Int64($0.result.offset) }),
        .string("epoch", ifAny: { $0.result.epoch.isEmpty ? nil : $0.result.epoch }),
    ]
    let result: HistoryResult
}

/// `channels`' answer: the channels with subscribers on this node.
struct ChannelsAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .json("channels", .object, "channel → `{num_clients}`, summed over the nodes that answered") {
            .object($0.channels.counts.sorted { $0.key < $1.key }.map { (key: $0.key, value: ["num_clients": .int(Int64($0.value))] as JSON) })
        },
        .strings(
            "unanswered_nodes", "the nodes that did not answer in time (their subscribers are not counted); absent when all did",
            ifAny: { $0.channels.unanswered.isEmpty ? nil : $0.channels.unanswered }),
    ]
    let channels: ClusterChannels
}

/// `info`'s answer: every live node.
struct InfoAnswer: ResponseContract, AnswerObject {
    /// One node's identity and counts.
    struct NodeAnswer: AnswerObject {
        static let members: [AnswerMember<Self>] = [
            .string("uid") { $0.node.uid }, .string("name") { $0.node.name }, .string("version") { $0.node.version },
            .integer("num_clients") { Int64($0.node.stats.clients) }, .integer("num_users") { Int64($0.node.stats.users) },
            .integer("num_channels") { Int64($0.node.stats.channels) }, .integer("num_subs") { Int64($0.node.stats.subscriptions) },
            .integer("uptime", "seconds") { Int64($0.node.stats.uptimeSeconds) },
        ]
        let node: ClusterNodeInfo
    }

    static let members: [AnswerMember<Self>] = [.objects("nodes", "every live node of a cluster") { $0.nodes.map(NodeAnswer.init) }]
    let nodes: [ClusterNodeInfo]
}
