import GondolaGeo
import GondolaProtocol

/// How travel values are written on the wire (PROTOCOL.md §4): timestamps in Unix
/// ms, distances in metres rounded to 0.1 m, coordinates in WGS84 degrees.
enum TravelJSON {
    static func metres(_ value: Double) -> JSON { .double((value * 10).rounded() / 10) }

    /// `{"mode","resort"}`, led by `type` for the personal push.
    static func map(_ choice: MapChoice, type: String? = nil) -> JSON {
        var members: [(key: String, value: JSON)] = type.map { [("type", .string($0))] } ?? []
        members.append(("mode", .string(choice.mode.rawValue)))
        members.append(("resort", choice.resort.map(JSON.string) ?? .null))
        return .object(members)
    }

    /// `{"user","lat","lon","alt","accuracy","heading","speed","ts"}` (absent values left out).
    static func position(_ user: String, _ position: LivePosition) -> JSON {
        var members: [(key: String, value: JSON)] = [("user", .string(user)), ("lat", .double(position.point.lat)), ("lon", .double(position.point.lon))]
        if let alt = position.point.alt { members.append(("alt", metres(alt))) }
        if let accuracy = position.accuracy { members.append(("accuracy", .double(accuracy))) }
        if let heading = position.heading { members.append(("heading", .double(heading))) }
        if let speed = position.speed { members.append(("speed", .double(speed))) }
        members.append(("ts", .int(position.ts)))
        return .object(members)
    }

    /// A nearby traveller: `{"user","lat","lon","alt","distance","ts"}`, with `type` for events.
    static func neighbour(_ user: String, point: GeoPoint?, distance: Double, ts: Int64?, type: String? = nil) -> JSON {
        var members: [(key: String, value: JSON)] = []
        if let type { members.append(("type", .string(type))) }
        members.append(("user", .string(user)))
        if let point {
            members.append(("lat", .double(point.lat)))
            members.append(("lon", .double(point.lon)))
            members.append(("alt", point.alt.map(metres) ?? .null))
        }
        members.append(("distance", metres(distance)))
        if let ts { members.append(("ts", .int(ts))) }
        return .object(members)
    }

    static func nearbyFrame(_ events: [NearbyEvent], slots: UserSlots) -> JSON {
        ["events": .array(events.map { neighbour(slots.user($0.subject), point: $0.point, distance: $0.distance, ts: $0.ts, type: $0.kind.rawValue) })]
    }

    static func point(_ point: GeoPoint) -> JSON {
        ["lat": .double(point.lat), "lon": .double(point.lon), "alt": point.alt.map(metres) ?? .null]
    }
}
