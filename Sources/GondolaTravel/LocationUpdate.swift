import GondolaGeo
import GondolaHub
import GondolaProtocol

/// Reads a `location.update` call's data, checked field by field.
enum LocationUpdate {
    /// How far a position's `ts` may be from the server clock.
    static let clockTolerance: Int64 = 5 * 60 * 1000

    /// The position in `data`; `now` is the server's Unix ms. Errors (107) name the field.
    static func position(from data: JSON?, now: Int64) throws(HubError) -> LivePosition {
        let fields = try RequestFields(data)
        let lat = try fields.number("lat", in: -90...90)
        let lon = try fields.number("lon", in: -180...180)
        let alt = try fields.optionalNumber("alt", in: -500...9000)
        let accuracy = try fields.optionalNumber("accuracy", in: 0...100_000)
        let heading = try fields.optionalNumber("heading", in: 0...360)
        let speed = try fields.optionalNumber("speed", in: 0...350)
        var ts = now
        if let given = try fields.optionalInteger("ts", in: 0...(Int64.max / 2)) {
            guard abs(given - now) <= clockTolerance else {
                throw .badRequest("ts must be within 5 minutes of the server time \(now) (see server.time), got \(given)")
            }
            ts = given
        }
        return LivePosition(point: GeoPoint(lat: lat, lon: lon, alt: alt), accuracy: accuracy, heading: heading, speed: speed, ts: ts)
    }
}
