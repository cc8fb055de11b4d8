/// What the GRPC schema needs beyond the server API's declarations: Centrifugo's message
/// names and field numbers (so that a client generated from Centrifugo's schema calls Gondola
/// unchanged), the Protobuf types a JSON kind does not pin down (`uint32` counts, `uint64`
/// offsets, `bytes` payloads, maps), and the few messages whose members no reader records
/// (`ClientInfo`, `Publication`). `GRPCSchema` writes `api.proto` from the method contracts
/// and these facts, and refuses a member either side lacks.
enum GRPCSchemaFacts {
    /// One member's place in its message.
    struct Field: Sendable {
        let name: String
        let number: Int
        /// The Protobuf type, when the member's JSON kind does not say it (every member of a
        /// fixed message, every object member).
        let type: ProtoType?
        /// Why a member that Gondola's contract does not hold is declared anyway; nil for a
        /// member of the contract.
        let refusal: String?
        /// Gondola's own member, numbered from 100 to stay clear of Centrifugo's numbers.
        let isGondolas: Bool

        /// A member of the contract, as Centrifugo numbers it.
        static func field(_ name: String, _ number: Int, _ type: ProtoType? = nil) -> Field {
            Field(name: name, number: number, type: type, refusal: nil, isGondolas: false)
        }

        /// A member of Centrifugo's message that Gondola refuses (107 naming it) rather than
        /// ignore: declared so that a request carrying it reads as sent.
        static func refused(_ name: String, _ number: Int, _ type: ProtoType, because reason: String) -> Field {
            Field(name: name, number: number, type: type, refusal: reason, isGondolas: false)
        }

        /// A member only Gondola answers.
        static func gondolas(_ name: String, _ number: Int, _ type: ProtoType? = nil) -> Field {
            precondition(number >= 100, "Gondola's own members are numbered from 100")
            return Field(name: name, number: number, type: type, refusal: nil, isGondolas: true)
        }
    }

    /// A message's facts: its members' numbers, the numbers it must not reuse, and, for a
    /// message no reader records, what it is.
    struct Message: Sendable {
        let fields: [Field]
        let reserved: [Int]
        /// The comment of a fixed message (written from these facts alone); nil for a message
        /// made from a contract's members.
        let fixed: String?

        init(_ fields: [Field], reserved: [Int] = [], fixed: String? = nil) {
            self.fields = fields
            self.reserved = reserved
            self.fixed = fixed
        }
    }

    /// The Protobuf package and service.
    static let package = "centrifugal.centrifugo.api"
    static let service = "CentrifugoApi"

    /// The methods served over GRPC, in the service's order, with their member's number in a
    /// batch's `Command` and `Reply` (nil for `batch`, which a batch cannot hold).
    static let methods: [(name: String, batchNumber: Int?)] = [
        ("batch", nil), ("publish", 4), ("broadcast", 5), ("subscribe", 6), ("unsubscribe", 7), ("disconnect", 8),
        ("presence", 9), ("presence_stats", 10), ("history", 11), ("history_remove", 12), ("info", 13), ("refresh", 15),
        ("channels", 16),
    ]

    /// Numbers of `Command` and of `Reply` that Centrifugo uses for what Gondola has no member for.
    static let commandReserved = [1, 2, 3]
    static let replyReserved = [1, 3]
    /// `Reply`'s member for a command's refusal.
    static let replyErrorNumber = 2

    private static let labelFilter = "Gondola does not filter connections by label"
    private static let allUsers = "Gondola acts on the connections of one user"
    private static let stringMap = ProtoType.map(.scalar("string"))

    /// Every message's facts, by name.
    static let messages: [String: Message] = [
        "Error": Message([.field("code", 1, .scalar("uint32")), .field("message", 2)]),
        "StreamPosition": Message([.field("offset", 1, .scalar("uint64")), .field("epoch", 2)]),
        "ClientInfo": Message(
            [
                .field("user", 1, .scalar("string")), .field("client", 2, .scalar("string")), .field("conn_info", 3, .scalar("bytes")),
                .field("chan_info", 4, .scalar("bytes")),
            ], fixed: "A connection as presence and publications name it: its info as it was set."),
        "FilterNode": Message(
            [
                .field("op", 1, .scalar("string")), .field("key", 2, .scalar("string")), .field("cmp", 3, .scalar("string")),
                .field("val", 4, .scalar("string")), .field("vals", 5, .repeated(.scalar("string"))),
                .field("nodes", 6, .repeated(.message("FilterNode"))),
            ], fixed: "A label predicate (a tree of them), which Gondola refuses."),
        "Publication": Message(
            [
                .field("data", 2, .scalar("bytes")), .field("info", 3, .message("ClientInfo")), .field("offset", 4, .scalar("uint64")),
                .field("tags", 5, stringMap),
            ], reserved: [1], fixed: "A publication of a channel's stream."),
        "ChannelInfo": Message([.field("num_clients", 1, .scalar("uint32"))], fixed: "A channel's subscribers, counted."),

        "BatchRequest": Message([.field("commands", 1, .repeated(.message("Command"))), .field("parallel", 2)]),
        "BatchResponse": Message([.field("replies", 1, .repeated(.message("Reply")))]),

        "PublishRequest": Message(publicationOptions + [.field("channel", 1)]),
        "PublishResult": Message([.field("offset", 1, .scalar("uint64")), .field("epoch", 2)]),
        "BroadcastRequest": Message(publicationOptions + [.field("channels", 1)]),
        "BroadcastResult": Message([.field("responses", 1, .repeated(.message("PublishResponse")))]),
        // A broadcast's answer for one channel; the same as `publish`'s response.
        "PublishResponse": Message([.field("error", 1, .message("Error")), .field("result", 2, .message("PublishResult"))]),

        "SubscribeRequest": Message([
            .field("channel", 1), .field("user", 2), .field("expire_at", 3), .field("info", 4), .field("b64info", 5), .field("client", 6),
            .field("data", 7), .field("b64data", 8), .field("recover_since", 9, .message("StreamPosition")),
            .field("override", 10, .message("SubscribeOptionOverride")), .field("session", 11),
            .refused("label_filter", 12, .message("FilterNode"), because: labelFilter),
            .refused("all_users", 13, .scalar("bool"), because: allUsers),
        ]),
        "SubscribeOptionOverride": Message([
            .field("presence", 1, .message("BoolValue")), .field("join_leave", 2, .message("BoolValue")),
            .field("force_recovery", 3, .message("BoolValue")), .field("force_positioning", 4, .message("BoolValue")),
            .field("force_push_join_leave", 5, .message("BoolValue")),
        ]),
        "BoolValue": Message([.field("value", 1)]),
        "SubscribeResult": Message([]),

        "UnsubscribeRequest": Message([
            .field("channel", 1), .field("user", 2), .field("client", 3), .field("session", 4),
            .refused("label_filter", 5, .message("FilterNode"), because: labelFilter),
            .refused("all_users", 6, .scalar("bool"), because: allUsers),
        ]),
        "UnsubscribeResult": Message([]),

        "DisconnectRequest": Message([
            .field("user", 1), .field("disconnect", 2, .message("Disconnect")), .field("client", 3), .field("whitelist", 4),
            .field("session", 5), .refused("label_filter", 6, .message("FilterNode"), because: labelFilter),
            .refused("all_users", 7, .scalar("bool"), because: allUsers),
        ]),
        "Disconnect": Message([.field("code", 1, .scalar("uint32")), .field("reason", 2)], reserved: [3]),
        "DisconnectResult": Message([]),

        "RefreshRequest": Message([
            .field("user", 1), .field("client", 2), .field("expired", 3), .field("expire_at", 4), .field("info", 5),
            .field("session", 6), .refused("label_filter", 7, .message("FilterNode"), because: labelFilter),
            .refused("all_users", 8, .scalar("bool"), because: allUsers), .gondolas("b64info", 100),
        ]),
        "RefreshResult": Message([]),

        "PresenceRequest": Message([.field("channel", 1)]),
        "PresenceResult": Message([.field("presence", 1, .map(.message("ClientInfo")))]),
        "PresenceStatsRequest": Message([.field("channel", 1)]),
        "PresenceStatsResult": Message([.field("num_clients", 1, .scalar("uint32")), .field("num_users", 2, .scalar("uint32"))]),

        "HistoryRequest": Message([
            .field("channel", 1), .field("limit", 2, .scalar("int32")), .field("since", 3, .message("StreamPosition")),
            .field("reverse", 4),
        ]),
        "HistoryResult": Message([
            .field("publications", 1, .repeated(.message("Publication"))), .field("epoch", 2), .field("offset", 3, .scalar("uint64")),
        ]),
        "HistoryRemoveRequest": Message([.field("channel", 1)]),
        "HistoryRemoveResult": Message([]),

        "InfoRequest": Message([]),
        "InfoResult": Message([.field("nodes", 1, .repeated(.message("NodeResult")))]),
        // 8 and 9 are Centrifugo's `metrics` and `process`, which Gondola does not answer.
        "NodeResult": Message(
            [
                .field("uid", 1), .field("name", 2), .field("version", 3), .field("num_clients", 4, .scalar("uint32")),
                .field("num_users", 5, .scalar("uint32")), .field("num_channels", 6, .scalar("uint32")),
                .field("uptime", 7, .scalar("uint32")), .field("num_subs", 10, .scalar("uint32")),
            ], reserved: [8, 9]),

        "ChannelsRequest": Message([.field("pattern", 1)]),
        "ChannelsResult": Message([
            .field("channels", 1, .map(.message("ChannelInfo"))), .gondolas("unanswered_nodes", 100),
        ]),
    ]

    /// The members `publish` and `broadcast` share after the channel.
    private static let publicationOptions: [Field] = [
        .field("data", 2), .field("b64data", 3), .field("skip_history", 4), .field("tags", 5, stringMap),
        .field("idempotency_key", 6), .field("delta", 7), .field("version", 8, .scalar("uint64")), .field("version_epoch", 9),
    ]
}

/// A member's Protobuf type.
indirect enum ProtoType: Sendable, Equatable {
    case scalar(String)
    case message(String)
    case repeated(ProtoType)
    /// `map<string, value>`.
    case map(ProtoType)

    /// As `api.proto` writes it.
    var text: String {
        switch self {
        case let .scalar(name), let .message(name): name
        case let .repeated(item): "repeated \(item.text)"
        case let .map(value): "map<string, \(value.text)>"
        }
    }

    /// The message it names, directly or as the items or values it holds.
    var messageName: String? {
        switch self {
        case .scalar: nil
        case let .message(name): name
        case let .repeated(item), let .map(item): item.messageName
        }
    }
}
