import GondolaGeo
import GondolaHub
import GondolaProtocol

/// A profile as `profile.get` and `profile.update` answer it.
struct ProfileAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("user") { $0.profile.id }, .string("name") { $0.profile.name }, .string("bio") { $0.profile.bio },
        .string("avatar_url", "or null", orNull: { $0.profile.avatarURL }),
        .json("links", .object, "platform → URL") {
            .object($0.profile.links.sorted { $0.key < $1.key }.map { (key: $0.key, value: .string($0.value)) })
        },
        .boolean("staff", "on the caller's own profile only", ifAny: { $0.staff }),
    ]
    let profile: Profile
    /// Whether the user is staff, told to the user only.
    let staff: Bool?
}

extension Trip: AnswerObject {
    public static let members: [AnswerMember<Self>] = [
        .string("id") { $0.id }, .string("name") { $0.name }, .string("resort", "null without one", orNull: { $0.resort }),
        .integer("starts_at", "Unix ms") { $0.startsAt }, .integer("ends_at", "Unix ms") { $0.endsAt },
    ]
}

/// `trip.list`'s answer.
struct TripList: ResponseContract, AnswerObject {
    /// A trip of the caller's, with their role in it.
    struct Entry: AnswerObject {
        static let members: [AnswerMember<Self>] =
            Trip.members(in: { $0.trip }) + [
                .string("role", "`host` or `traveller`") { $0.role.rawValue }, .boolean("running", "whether it is under way now") { $0.running },
            ]
        let trip: Trip
        let role: TripRole
        let running: Bool
    }

    static let members: [AnswerMember<Self>] = [.objects("trips", "soonest first") { $0.trips }]
    let trips: [Entry]
}

/// `trip.members`' answer.
struct TripMembers: ResponseContract, AnswerObject {
    /// A member of the trip.
    struct Member: AnswerObject {
        static let members: [AnswerMember<Self>] = [
            .string("user") { $0.user }, .string("name") { $0.name }, .string("role", "`host` or `traveller`") { $0.role.rawValue },
        ]
        let user: String
        let name: String
        let role: TripRole
    }

    static let members: [AnswerMember<Self>] = [.objects("members", "hosts first") { $0.members }]
    let members: [Member]
}

/// `friend.add`'s and `friend.remove`'s answer: whether the two are friends now, and why.
struct Friendship: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .boolean("friends") { $0.source != nil }, .string("source", "`trip`, `mutual` or null", orNull: { $0.source?.rawValue }),
    ]
    let source: FriendSource?
}

/// `friend.list`'s answer.
struct FriendList: ResponseContract, AnswerObject {
    /// A friend and why they are one.
    struct Friend: AnswerObject {
        static let members: [AnswerMember<Self>] = [
            .string("user") { $0.user }, .string("name") { $0.name }, .string("source", "`trip` or `mutual`") { $0.source.rawValue },
        ]
        let user: String
        let name: String
        let source: FriendSource
    }

    static let members: [AnswerMember<Self>] = [
        .objects("friends", "trip-mates are friends") { $0.friends }, .objects("requests", "users asking the caller") { $0.requests },
    ]
    let friends: [Friend]
    let requests: [UserName]
}

extension MapChoice: AnswerObject {
    public static let members: [AnswerMember<Self>] = [
        .string("mode", "`mountain` or `street`") { $0.mode.rawValue },
        .string("resort", "a mountain map's resort, else null", orNull: { $0.resort }),
    ]
}

/// `location.update`'s answer: the map the app should show.
struct MapChoiceAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.object("map") { $0.map }]
    let map: MapChoice
}

/// `location.visibility`'s answer.
struct VisibilityAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.string("mode", "as set") { $0.mode.rawValue }]
    let mode: Visibility
}

/// A resort as `map.resorts` lists it.
struct ResortSummary: AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("id") { $0.resort.id }, .string("name") { $0.resort.name },
        .object("center", "the middle of its bounding box") {
            Coordinates(lat: ($0.box.minLat + $0.box.maxLat) / 2, lon: ($0.box.minLon + $0.box.maxLon) / 2)
        },
        .json("bbox", .numberArray, "[minLon, minLat, maxLon, maxLat]") {
            [.double($0.box.minLon), .double($0.box.minLat), .double($0.box.maxLon), .double($0.box.maxLat)]
        },
    ]
    let resort: SkiResort
    let box: BoundingBox

    init(_ resort: SkiResort) {
        self.resort = resort
        box = BoundingBox(covering: resort.boundary)
    }
}

/// `map.resorts`' answer.
struct ResortList: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.objects("resorts") { $0.resorts.map(ResortSummary.init) }]
    let resorts: [SkiResort]
}

/// `map.resort`'s answer: the resort's map as a GeoJSON FeatureCollection.
struct ResortMap: JSONAnswer {
    static let fields: [FieldContract] = [
        .required("type", .string, "`FeatureCollection`"),
        .required(
            "features", .objectArray,
            "boundary, base, lifts and pistes with `kind`, `name`, `difficulty` (lifts: `lift`; `null` for an unrated piste), `color`, `pattern` (`solid`, `dashed`, `dotted`), `length`; piste areas as `Polygon`s with `kind: \"piste_area\"`"
        ),
        .required("resort", .object, "`id`, `name`, `bbox`, `difficulty_colors` and, for imported resorts, `attribution`"),
    ]
    let json: JSON
}

/// `map.elevation`'s answer.
struct ElevationAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .number("lat") { $0.point.lat }, .number("lon") { $0.point.lon },
        .number("elevation", "metres, to 0.1") { TravelJSON.roundedMetres($0.elevation) },
    ]
    let point: GeoPoint
    let elevation: Double
}

/// One leg of a route: a lift, a piste or a walk.
struct RouteLegAnswer: AnswerObject {
    static let members: [AnswerMember<Self>] =
        [.string("kind", "`lift`, `piste` or `walk`") { $0.leg.kind.rawValue }, .string("name") { $0.leg.name }]
        + WayStyle.members(in: { $0.style }) + [
            .json("coordinates", .any, "an array of `[lon, lat, alt?]` positions") { ResortCatalog.coordinates($0.leg.coordinates) },
            .number("distance", "metres, to 0.1") { TravelJSON.roundedMetres($0.leg.distance) },
            .number("duration", "seconds") { $0.leg.duration.rounded() },
        ]
    let leg: RouteLeg
    let style: WayStyle
}

/// `map.route`'s answer.
struct RouteAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .objects("legs", "in order") { answer in
            answer.route.legs.map {
                RouteLegAnswer(leg: $0, style: ResortCatalog.style(kind: $0.kind, difficulty: $0.difficulty, colors: answer.colors))
            }
        },
        .number("distance", "metres, to 0.1") { TravelJSON.roundedMetres($0.route.distance) },
        .number("duration", "seconds") { $0.route.duration.rounded() },
        .number("ascent", "metres, to 0.1") { TravelJSON.roundedMetres($0.route.ascent) },
        .number("descent", "metres, to 0.1") { TravelJSON.roundedMetres($0.route.descent) },
    ]
    let route: Route
    let colors: DifficultyColors
}

/// `broadcast.send`'s answer: where the broadcast was published.
struct BroadcastSent: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("channel") { $0.channel }, .string("id") { $0.id }, .integer("offset") { Int64($0.position.offset) },
        .string("epoch") { $0.position.epoch }, .integer("ts", "Unix ms") { $0.ts },
    ]
    let channel: String
    let id: String
    let position: StreamPosition
    let ts: Int64
}

/// An event as `event.create` (with its invitees) and `event.get` (with their responses) answer it.
struct EventAnswer: ResponseContract, AnswerObject {
    /// An invitee and their answer.
    struct Response: AnswerObject {
        static let members: [AnswerMember<Self>] =
            UserName.members(in: { $0.user }) + [.string("response", "null until answered", orNull: { $0.response?.rawValue })]
        let user: UserName
        let response: RSVP?
    }

    static let members: [AnswerMember<Self>] =
        EventView.members(in: { $0.event }) + [
            .objects("invitees", "`event.create`", ifAny: { $0.invitees }), .objects("responses", "`event.get`", ifAny: { $0.responses }),
            .object("counts") { $0.counts },
        ]
    let event: EventView
    let invitees: [UserName]?
    let responses: [Response]?
    let counts: RSVPCounts
}

/// `event.rsvp`'s answer.
struct RSVPAnswer: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("event") { $0.event }, .string("response") { $0.response.rawValue }, .object("counts") { $0.counts },
    ]
    let event: String
    let response: RSVP
    let counts: RSVPCounts
}

/// `event.list`'s answer.
struct EventList: ResponseContract, AnswerObject {
    /// An event with the caller's part in it.
    struct Entry: AnswerObject {
        static let members: [AnswerMember<Self>] =
            EventView.members(in: { $0.event }) + [
                .string("role", "`creator` or `invitee`") { $0.creator ? "creator" : "invitee" },
                .string("my_response", "null until answered (and for the creator)", orNull: { $0.response?.rawValue }),
            ]
        let event: EventView
        let creator: Bool
        let response: RSVP?
    }

    static let members: [AnswerMember<Self>] = [.objects("events", "soonest first") { $0.events }]
    let events: [Entry]
}

/// `trip_create`'s answer.
struct TripCreated: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.object("trip") { $0.trip }]
    let trip: Trip
}
