import GondolaGeo
import GondolaHub
import GondolaProtocol

/// A `location.update` call's data, checked field by field.
struct LocationUpdate: Sendable {
    var point: GeoPoint
    var accuracy: Double?
    var heading: Double?
    var speed: Double?
    var ts: Int64

    /// How far a position's `ts` may be from the server clock.
    static let clockTolerance: Int64 = 5 * 60 * 1000

    /// Reads and validates `data`; `now` is the server's Unix ms. Errors (107) name the field.
    init(_ data: JSON?, now: Int64) throws(HubError) {
        let fields = try RPCFields(data)
        let lat = try fields.number("lat", in: -90...90)
        let lon = try fields.number("lon", in: -180...180)
        let alt = try fields.optionalNumber("alt", in: -500...9000)
        point = GeoPoint(lat: lat, lon: lon, alt: alt)
        accuracy = try fields.optionalNumber("accuracy", in: 0...100_000)
        heading = try fields.optionalNumber("heading", in: 0...360)
        speed = try fields.optionalNumber("speed", in: 0...350)
        ts = now
        if let given = try fields.optionalInteger("ts", in: 0...(Int64.max / 2)) {
            guard abs(given - now) <= Self.clockTolerance else {
                throw .badRequest("ts must be within 5 minutes of the server time \(now) (see server.time), got \(given)")
            }
            ts = given
        }
    }
}
