import GondolaGeo
import GondolaHub
import GondolaProtocol

/// A traveller's position as one node tells the others (topics `travel.position`, sent in
/// its region, and `travel.region`, sent to every node when the traveller changed region).
/// It is the busiest payload on the bus, one per admitted update.
struct PositionReplica: ReplicaPayload {
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
    init(_ fields: RequestFields) throws(HubError) {
        let real = -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude
        user = try fields.string("user", maxLength: .max)
        position = LivePosition(
            point: GeoPoint(
                lat: try fields.number("lat", in: real), lon: try fields.number("lon", in: real),
                alt: try fields.noting("metres").optionalNumber("alt", in: real)),
            accuracy: try fields.noting("metres").optionalNumber("accuracy", in: real),
            heading: try fields.noting("degrees").optionalNumber("heading", in: real),
            speed: try fields.noting("m/s").optionalNumber("speed", in: real),
            ts: try fields.noting("the position's Unix ms").integer("ts", in: .min ... .max))
        receivedAt = try fields.noting("Unix ms when the first node received it").integer("received_at", in: .min ... .max)
        region = try fields.noting("the region the node put the traveller in").string("region", maxLength: .max)
    }

    var json: JSON {
        var members: [(key: String, value: JSON)] = [
            ("user", .string(user)), ("lat", .double(position.point.lat)), ("lon", .double(position.point.lon)),
        ]
        if let alt = position.point.alt { members.append(("alt", .double(alt))) }
        if let accuracy = position.accuracy { members.append(("accuracy", .double(accuracy))) }
        if let heading = position.heading { members.append(("heading", .double(heading))) }
        if let speed = position.speed { members.append(("speed", .double(speed))) }
        members += [("ts", .int(position.ts)), ("received_at", .int(receivedAt)), ("region", .string(region))]
        return .object(members)
    }
}
