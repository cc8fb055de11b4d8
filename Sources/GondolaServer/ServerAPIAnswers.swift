@_spi(Engine) import GondolaHub
import GondolaProtocol

/// `publish`'s answer: where the publication sits in the channel's stream, nothing for a
/// channel without one.
struct PublishAnswer: ResponseContract {
    static let fields: [FieldContract] = [
        .optional("offset", .integer, "the publication's place in the stream"), .optional("epoch", .string, "the stream's epoch"),
    ]
    let position: StreamPosition?
    var json: JSON {
        guard let position else { return [:] }
        return ["offset": .int(Int64(position.offset)), "epoch": .string(position.epoch)]
    }
}

/// `broadcast`'s answer: one outcome per channel, in the request's order.
struct BroadcastAnswer: ResponseContract {
    static let fields: [FieldContract] = [
        .required(
            "responses", .objectArray, "one per channel, in order",
            members: [.optional("result", .object, "`{offset, epoch}`"), .optional("error", .object, "`{code, message}`")])
    ]
    let outcomes: [Result<StreamPosition?, HubError>]
    var json: JSON {
        [
            "responses": .array(
                outcomes.map { outcome in
                    switch outcome {
                    case let .success(position): ["result": PublishAnswer(position: position).json]
                    case let .failure(error): ["error": ServerAPI.errorJSON(error.protocolError)]
                    }
                })
        ]
    }
}

/// `presence`'s answer: every subscriber of the channel, by client id.
struct PresenceAnswer: ResponseContract {
    static let fields: [FieldContract] = [.required("presence", .object, "client id → `{client, user, conn_info?, chan_info?}`")]
    let clients: [String: ClientInfo]
    var json: JSON { ["presence": .object(clients.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value.json) })] }
}

/// `presence_stats`' answer.
struct PresenceStatsAnswer: ResponseContract {
    static let fields: [FieldContract] = [.required("num_clients", .integer), .required("num_users", .integer)]
    let stats: PresenceStats
    /// Both counts even when zero (the client protocol's encoding leaves zeros out).
    var json: JSON { ["num_clients": .int(Int64(stats.numClients)), "num_users": .int(Int64(stats.numUsers))] }
}

/// `history`'s answer: the publications asked for and the stream's position.
struct HistoryAnswer: ResponseContract {
    static let fields: [FieldContract] = [
        .optional("publications", .objectArray, "`{data, offset, info?}`, oldest first unless `reverse`; absent when none"),
        .optional("offset", .integer, "the stream's last offset"), .optional("epoch", .string),
    ]
    let result: HistoryResult
    var json: JSON { result.json }
}

/// `channels`' answer: the channels with subscribers on this node.
struct ChannelsAnswer: ResponseContract {
    static let fields: [FieldContract] = [
        .required("channels", .object, "channel → `{num_clients}`, summed over the nodes that answered"),
        .optional("unanswered_nodes", .stringArray, "the nodes that did not answer in time (their subscribers are not counted); absent when all did"),
    ]
    let channels: ClusterChannels
    var json: JSON {
        let counts = channels.counts.sorted { $0.key < $1.key }.map { (key: $0.key, value: ["num_clients": .int(Int64($0.value))] as JSON) }
        guard !channels.unanswered.isEmpty else { return ["channels": .object(counts)] }
        return ["channels": .object(counts), "unanswered_nodes": .array(channels.unanswered.map(JSON.string))]
    }
}

/// `info`'s answer: every live node.
struct InfoAnswer: ResponseContract {
    static let fields: [FieldContract] = [
        .required(
            "nodes", .objectArray, "every live node of a cluster",
            members: ["uid", "name", "version", "num_clients", "num_users", "num_channels", "num_subs", "uptime"].map {
                .required($0, $0.hasPrefix("num_") || $0 == "uptime" ? .integer : .string)
            })
    ]
    let nodes: [ClusterNodeInfo]
    var json: JSON {
        [
            "nodes": .array(
                nodes.map { node in
                    [
                        "uid": .string(node.uid), "name": .string(node.name), "version": .string(node.version),
                        "num_clients": .int(Int64(node.stats.clients)), "num_users": .int(Int64(node.stats.users)),
                        "num_channels": .int(Int64(node.stats.channels)), "num_subs": .int(Int64(node.stats.subscriptions)),
                        "uptime": .int(Int64(node.stats.uptimeSeconds)),
                    ]
                })
        ]
    }
}
