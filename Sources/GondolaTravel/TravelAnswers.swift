import GondolaHub
import GondolaProtocol

/// A profile as `profile.get` and `profile.update` answer it.
struct ProfileAnswer: JSONAnswer {
    static let fields: [FieldContract] = [
        .required("user", .string), .required("name", .string), .required("bio", .string), .nullable("avatar_url", .string, "or null"),
        .required("links", .object, "platform → URL"), .optional("staff", .boolean, "on the caller's own profile only"),
    ]
    let json: JSON
}

/// `trip.list`'s answer.
struct TripList: JSONAnswer {
    static let fields: [FieldContract] = [
        .required(
            "trips", .objectArray, "soonest first",
            members: [
                .required("id", .string), .required("name", .string), .nullable("resort", .string, "null without one"),
                .required("starts_at", .integer, "Unix ms"), .required("ends_at", .integer, "Unix ms"),
                .required("role", .string, "`host` or `traveller`"), .required("running", .boolean, "whether it is under way now"),
            ])
    ]
    let json: JSON
}

/// `trip.members`' answer.
struct TripMembers: JSONAnswer {
    static let fields: [FieldContract] = [.required("members", .objectArray, "`{user, name, role}`, hosts first")]
    let json: JSON
}

/// `friend.add`'s and `friend.remove`'s answer.
struct Friendship: JSONAnswer {
    static let fields: [FieldContract] = [
        .required("friends", .boolean), .nullable("source", .string, "`trip`, `mutual` or null"),
    ]
    let json: JSON
}

/// `friend.list`'s answer.
struct FriendList: JSONAnswer {
    static let fields: [FieldContract] = [
        .required("friends", .objectArray, "`{user, name, source}`; trip-mates are friends"),
        .required("requests", .objectArray, "`{user, name}` asking the caller"),
    ]
    let json: JSON
}

/// `location.update`'s answer: the map the app should show.
struct MapChoiceAnswer: JSONAnswer {
    static let fields: [FieldContract] = [.required("map", .object, "`{mode: mountain|street, resort}`")]
    let json: JSON
}

/// `location.visibility`'s answer.
struct VisibilityAnswer: JSONAnswer {
    static let fields: [FieldContract] = [.required("mode", .string)]
    let json: JSON
}

/// `map.resorts`' answer.
struct ResortList: JSONAnswer {
    static let fields: [FieldContract] = [
        .required("resorts", .objectArray, "`{id, name, center: {lat, lon}, bbox: [minLon, minLat, maxLon, maxLat]}`")
    ]
    let json: JSON
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
struct ElevationAnswer: JSONAnswer {
    static let fields: [FieldContract] = [.required("lat", .number), .required("lon", .number), .required("elevation", .number, "metres")]
    let json: JSON
}

/// `map.route`'s answer.
struct RouteAnswer: JSONAnswer {
    static let fields: [FieldContract] = [
        .required("legs", .objectArray, "`{kind, name, difficulty, color, pattern, coordinates, distance, duration}`"),
        .required("distance", .number, "metres"), .required("duration", .number, "seconds"), .required("ascent", .number),
        .required("descent", .number),
    ]
    let json: JSON
}

/// A chat as `chat.create` answers it.
struct ChatCreated: JSONAnswer {
    static let fields: [FieldContract] = [
        .required("chat", .object, "`{id, kind, title, trip, channel, members: [{user, name}]}`"), .required("channel", .string),
    ]
    let json: JSON
}

/// `chat.send`'s answer: the stored message.
struct ChatMessageAnswer: JSONAnswer {
    static let fields: [FieldContract] = [
        .required("offset", .integer), .required("id", .string), .required("from", .string), .required("name", .string),
        .required("text", .string), .required("ts", .integer), .required("client_message_id", .string),
        .optional("repeated", .boolean, "a retry: nothing was published"),
    ]
    let json: JSON
}

/// `chat.list`'s answer.
struct ChatList: JSONAnswer {
    static let fields: [FieldContract] = [.required("chats", .objectArray, "each chat with `last_message`, `unread`, `read_offset`")]
    let json: JSON
}

/// `chat.read`'s answer.
struct ReadMarkerAnswer: JSONAnswer {
    static let fields: [FieldContract] = [.required("read_offset", .integer)]
    let json: JSON
}

/// `chat.history`'s answer.
struct ChatHistory: JSONAnswer {
    static let fields: [FieldContract] = [.required("messages", .objectArray, "oldest first"), .required("more", .boolean)]
    let json: JSON
}

/// `broadcast.send`'s answer.
struct BroadcastSent: JSONAnswer {
    static let fields: [FieldContract] = [
        .required("channel", .string), .required("id", .string), .required("offset", .integer), .required("epoch", .string),
        .required("ts", .integer),
    ]
    let json: JSON
}

/// An event as `event.create` and `event.get` answer it.
struct EventAnswer: JSONAnswer {
    static let fields: [FieldContract] = [
        .required("id", .string), .required("title", .string), .required("description", .string), .required("starts_at", .integer),
        .nullable("ends_at", .integer, "null when open-ended"), .nullable("place", .object, "`{name, lat, lon}`, or null"),
        .nullable("trip", .string, "null outside a trip"), .required("audience", .string), .required("creator", .object, "`{user, name}`"),
        .required("channel", .string, "`event:<id>`"), .required("counts", .object, "`{going, maybe, declined, pending}`"),
        .optional("invitees", .objectArray, "`event.create`"), .optional("responses", .objectArray, "`event.get`"),
    ]
    let json: JSON
}

/// `event.rsvp`'s answer.
struct RSVPAnswer: JSONAnswer {
    static let fields: [FieldContract] = [.required("event", .string), .required("response", .string), .required("counts", .object)]
    let json: JSON
}

/// `event.list`'s answer.
struct EventList: JSONAnswer {
    static let fields: [FieldContract] = [.required("events", .objectArray, "each with `role` and `my_response`, soonest first")]
    let json: JSON
}

/// `trip_create`'s answer.
struct TripCreated: JSONAnswer {
    static let fields: [FieldContract] = [.required("trip", .object, "`{id, name, resort, starts_at, ends_at}`")]
    let json: JSON
}
