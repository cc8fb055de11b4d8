import GondolaGeo
import GondolaProtocol

/// How travel values are written on the wire (docs/api/travel.md): timestamps in Unix
/// ms, distances in metres rounded to 0.1 m, coordinates in WGS84 degrees.
///
/// Frames and snapshots of positions are written straight to bytes: they are the
/// bulk of what the hub sends, and building a `JSON` tree per entry first would
/// cost as much as the spatial work behind them.
enum TravelJSON {
    static func roundedMetres(_ value: Double) -> Double { (value * 10).rounded() / 10 }

    static func metres(_ value: Double) -> JSON { .double(roundedMetres(value)) }

    static func point(_ point: GeoPoint) -> JSON {
        ["lat": .double(point.lat), "lon": .double(point.lon), "alt": point.alt.map(metres) ?? .null]
    }

    /// `{"positions":[...]}`, with `"removed":[users]` when some are: a position
    /// channel's frame or subscribe snapshot.
    static func positions(_ entries: [(user: String, position: LivePosition)], removed: [String] = []) -> RawJSON {
        var writer = JSONWriter(reservingCapacity: 24 + entries.count * 120)
        writer.writeSyntax(#"{"positions":["#)
        for (index, entry) in entries.enumerated() {
            if index > 0 { writer.writeSyntax(",") }
            writePosition(entry.user, entry.position, to: &writer)
        }
        writer.writeSyntax("]")
        if !removed.isEmpty {
            writer.writeSyntax(#","removed":["#)
            for (index, user) in removed.enumerated() {
                if index > 0 { writer.writeSyntax(",") }
                writer.writeString(user)
            }
            writer.writeSyntax("]")
        }
        writer.writeSyntax("}")
        return RawJSON(writtenBy: writer)
    }

    /// Who a nearby event or snapshot entry is about and where: `"user":…` and, when
    /// the position is known, `,"lat":…,"lon":…,"alt":…`. The live map writes it once
    /// per position; every frame that shows that position copies the bytes.
    struct NeighbourSubject {
        let point: GeoPoint?
        let bytes: [UInt8]

        init(user: String, point: GeoPoint?) {
            self.point = point
            var writer = JSONWriter(reservingCapacity: 80)
            writer.writeSyntax(#""user":"#)
            writer.writeString(user)
            if let point {
                writer.writeSyntax(#","lat":"#)
                writer.writeNumber(point.lat)
                writer.writeSyntax(#","lon":"#)
                writer.writeNumber(point.lon)
                writer.writeSyntax(#","alt":"#)
                if let alt = point.alt { writeMetres(alt, to: &writer) } else { writer.writeSyntax("null") }
            }
            bytes = writer.bytes
        }
    }

    /// One event of a nearby frame: whom it is about and when their position was taken.
    struct NearbyChange {
        let subject: NeighbourSubject
        let kind: ProximityEvent.Kind
        let distance: Double
        let ts: Int64?
    }

    /// `{"events":[...]}`: a nearby frame, each event a neighbour led by its `type`.
    static func nearbyFrame(_ changes: [NearbyChange]) -> RawJSON {
        var writer = JSONWriter(reservingCapacity: 16 + changes.count * 120)
        writer.writeSyntax(#"{"events":["#)
        for (index, change) in changes.enumerated() {
            if index > 0 { writer.writeSyntax(",") }
            writeNeighbour(change.subject, distance: change.distance, ts: change.ts, type: change.kind, to: &writer)
        }
        writer.writeSyntax("]}")
        return RawJSON(writtenBy: writer)
    }

    /// `{"users":[...]}`: who is near, answered on subscribe to `nearby:#<uid>`.
    static func nearbySnapshot(_ neighbours: [Neighbour<Int32>], slots: UserSlots, ts: (Int32) -> Int64?) -> RawJSON {
        var writer = JSONWriter(reservingCapacity: 16 + neighbours.count * 120)
        writer.writeSyntax(#"{"users":["#)
        for (index, neighbour) in neighbours.enumerated() {
            if index > 0 { writer.writeSyntax(",") }
            writeNeighbour(
                NeighbourSubject(user: slots.user(neighbour.id), point: neighbour.point), distance: neighbour.distance,
                ts: ts(neighbour.id), type: nil, to: &writer)
        }
        writer.writeSyntax("]}")
        return RawJSON(writtenBy: writer)
    }

    /// `{"user","lat","lon","alt","accuracy","heading","speed","ts"}` (absent values left out).
    static func writePosition(_ user: String, _ position: LivePosition, to writer: inout JSONWriter) {
        writer.writeSyntax(#"{"user":"#)
        writer.writeString(user)
        writer.writeSyntax(#","lat":"#)
        writer.writeNumber(position.point.lat)
        writer.writeSyntax(#","lon":"#)
        writer.writeNumber(position.point.lon)
        if let alt = position.point.alt {
            writer.writeSyntax(#","alt":"#)
            writeMetres(alt, to: &writer)
        }
        if let accuracy = position.accuracy {
            writer.writeSyntax(#","accuracy":"#)
            writer.writeNumber(accuracy)
        }
        if let heading = position.heading {
            writer.writeSyntax(#","heading":"#)
            writer.writeNumber(heading)
        }
        if let speed = position.speed {
            writer.writeSyntax(#","speed":"#)
            writer.writeNumber(speed)
        }
        writer.writeSyntax(#","ts":"#)
        writer.writeNumber(position.ts)
        writer.writeSyntax("}")
    }

    /// A nearby traveller: `{"type","user","lat","lon","alt","distance","ts"}`; `type` only
    /// for events, the position only when known, `ts` only when known.
    static func writeNeighbour(_ subject: NeighbourSubject, distance: Double, ts: Int64?, type: ProximityEvent.Kind?, to writer: inout JSONWriter) {
        switch type {
        case .enter: writer.writeSyntax(#"{"type":"enter","#)
        case .move: writer.writeSyntax(#"{"type":"move","#)
        case .leave: writer.writeSyntax(#"{"type":"leave","#)
        case nil: writer.writeSyntax("{")
        }
        writer.writeBytes(subject.bytes)
        writer.writeSyntax(#","distance":"#)
        writeMetres(distance, to: &writer)
        if let ts {
            writer.writeSyntax(#","ts":"#)
            writer.writeNumber(ts)
        }
        writer.writeSyntax("}")
    }

    /// Writes `roundedMetres(value)` as `writeNumber` would, from the whole tenths, without
    /// formatting a fraction: the shortest form of a tenth below 10^12 m is its digits.
    static func writeMetres(_ value: Double, to writer: inout JSONWriter) {
        let tenths = (value * 10).rounded()
        guard tenths.magnitude < 1e13 else {
            writer.writeNumber(roundedMetres(value))
            return
        }
        let whole = Int64(tenths)
        if whole < 0, whole > -10 { writer.writeSyntax("-") }
        writer.writeNumber(whole / 10)
        let digit = whole.magnitude % 10
        if digit != 0 {
            writer.writeSyntax(".")
            writer.writeNumber(Int64(digit))
        }
    }
}
