import GondolaDomain
import GondolaGeo
import GondolaHub
import GondolaProtocol

/// A `location.update` call: the traveller's position, checked field by field (errors,
/// 107, name the field), and when it arrived.
struct LocationUpdate: RequestContract {
    /// How far a position's `ts` may be from the server clock.
    static let clockTolerance: Int64 = 5 * 60 * 1000

    let position: LivePosition
    /// The server's Unix ms when the call was read.
    let receivedAt: Int64

    init(_ fields: RequestFields) throws(HubError) {
        try self.init(fields, now: unixMilliseconds())
    }

    /// The position in `fields`; `now` is the server's Unix ms.
    init(_ fields: RequestFields, now: Int64) throws(HubError) {
        let lat = try fields.number("lat", in: -90...90)
        let lon = try fields.number("lon", in: -180...180)
        let alt = try fields.noting("metres; from the resort's elevation grid when absent").optionalNumber("alt", in: -500...9000)
        let accuracy = try fields.noting("metres").optionalNumber("accuracy", in: 0...100_000)
        let heading = try fields.noting("degrees").optionalNumber("heading", in: 0...360)
        let speed = try fields.noting("m/s").optionalNumber("speed", in: 0...350)
        var ts = now
        let timestamp = fields.noting("Unix ms within 5 minutes of `server.time`; the arrival time when absent")
        if let given = try timestamp.optionalInteger("ts", in: 0...(Int64.max / 2)) {
            guard abs(given - now) <= Self.clockTolerance else {
                throw .badRequest("ts must be within 5 minutes of the server time \(now) (see server.time), got \(given)")
            }
            ts = given
        }
        position = LivePosition(point: GeoPoint(lat: lat, lon: lon, alt: alt), accuracy: accuracy, heading: heading, speed: speed, ts: ts)
        receivedAt = now
    }

    /// Decodes `data` as the RPC does (unknown members refused), with the clock at `now`.
    static func decode(_ data: JSON?, now: Int64) throws(HubError) -> LocationUpdate {
        try LocationUpdate(try checkedFields(data), now: now)
    }
}
