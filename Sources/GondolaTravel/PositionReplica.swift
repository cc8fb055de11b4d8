import GondolaGeo
import GondolaHub
import GondolaProtocol

/// A traveller's position as one node tells the others (topics `travel.position`, sent in
/// its region, and `travel.region`, sent to every node when the traveller changed region).
/// It is the busiest payload on the bus, one per admitted update, so its members have short
/// names; the catalog spells them out.
struct PositionReplica {
    static let fields: [FieldContract] = [
        .required("u", .string, "the user"), .required("lat", .number), .required("lon", .number),
        .required("ts", .integer, "the position's Unix ms"), .required("r", .integer, "Unix ms when the first node received it"),
        .required("g", .string, "the region the node put the traveller in"), .optional("alt", .number, "metres"),
        .optional("acc", .number, "accuracy in metres"), .optional("hdg", .number, "heading in degrees"), .optional("spd", .number, "speed in m/s"),
    ]

    let user: String
    let position: LivePosition
    let receivedAt: Int64
    let region: String

    init(user: String, position: LivePosition, receivedAt: Int64, region: String) {
        self.user = user
        self.position = position
        self.receivedAt = receivedAt
        self.region = region
    }

    /// Reads what another node sent (any finite number: that node checked the ranges).
    init(_ json: JSON) throws(HubError) {
        let fields = try RequestFields(json)
        let real = -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude
        position = LivePosition(
            point: GeoPoint(
                lat: try fields.number("lat", in: real), lon: try fields.number("lon", in: real), alt: try fields.optionalNumber("alt", in: real)),
            accuracy: try fields.optionalNumber("acc", in: real), heading: try fields.optionalNumber("hdg", in: real),
            speed: try fields.optionalNumber("spd", in: real), ts: try fields.integer("ts", in: .min ... .max))
        user = try fields.string("u", maxLength: .max)
        receivedAt = try fields.integer("r", in: .min ... .max)
        region = try fields.string("g", maxLength: .max)
    }

    var json: JSON {
        var members: [(key: String, value: JSON)] = [
            ("u", .string(user)), ("lat", .double(position.point.lat)), ("lon", .double(position.point.lon)), ("ts", .int(position.ts)),
            ("r", .int(receivedAt)), ("g", .string(region)),
        ]
        if let alt = position.point.alt { members.append(("alt", .double(alt))) }
        if let accuracy = position.accuracy { members.append(("acc", .double(accuracy))) }
        if let heading = position.heading { members.append(("hdg", .double(heading))) }
        if let speed = position.speed { members.append(("spd", .double(speed))) }
        return .object(members)
    }
}
