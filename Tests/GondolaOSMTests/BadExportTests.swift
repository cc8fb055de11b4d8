import Foundation
import GondolaGeo
import Testing

@testable import GondolaOSM

extension OSMImportSuites {
    /// Files that are not usable exports answer a message that says what is wrong and where.
    @Suite struct BadExportTests {
        func failure(_ text: String, file: String = "x.osm") -> String? {
            do {
                _ = try ResortImporter.importResort(OSMReader.read(Data(text.utf8)), id: "x", name: nil, elevation: nil, file: file)
                return nil
            } catch {
                return error.message
            }
        }

        @Test func notOSM() {
            #expect(
                failure("<!DOCTYPE html><html><body>Too many requests</body></html>")
                    == "line 1: not an OSM XML file: the root element is <html>, not <osm>")
            #expect(failure("ncols 2\nnrows 2\n") == #"not OSM XML, Overpass JSON or GeoJSON: the file starts with "ncols 2\nnrows 2\n""#)
            #expect(failure("") == "the file is empty")
            #expect(
                failure(#"{"type": "Topology"}"#)
                    == #"not an OSM export: expected Overpass JSON (an "elements" array) or a GeoJSON FeatureCollection"#)
            #expect(failure(#"{"elements": [{"type": "node", "id": 1}]}"#) == "elements[0] (node 1) has no valid lat/lon")
        }

        @Test func truncatedXMLAtEveryCut() throws {
            let whole = try String(decoding: Exports.data("taos_nm.osm").prefix(200_000), as: UTF8.self)
            var random = SeededRandom(seed: 35)
            for _ in 0..<20 {
                let cut = Int(random.next() % UInt64(whole.utf8.count - 1000)) + 500
                let message = try #require(failure(String(whole.utf8.prefix(cut))!), "cut at \(cut) (seed 35)")
                #expect(message.hasPrefix("not well-formed XML at line ") && message.hasSuffix("is the file truncated?"), "cut at \(cut): \(message)")
            }
        }

        @Test func truncatedJSON() {
            let message = failure(#"{"elements": [{"type": "node", "id": 1, "lat": 45"#)
            #expect(message?.hasPrefix("not valid JSON (") == true && message?.hasSuffix("is the file truncated?") == true, "\(message ?? "")")
        }

        @Test func aRelationWhoseMembersAreMissing() {
            let osm = """
                <osm version="0.6">
                  <node id="1" lat="45.0" lon="7.0"/><node id="2" lat="45.01" lon="7.0"/>
                  <way id="10"><nd ref="1"/><nd ref="2"/><tag k="aerialway" v="chair_lift"/></way>
                  <relation id="77"><member type="way" ref="10" role="outer"/><member type="way" ref="11" role="outer"/>
                    <tag k="type" v="multipolygon"/><tag k="landuse" v="winter_sports"/><tag k="name" v="Nowhere"/></relation>
                </osm>
                """
            #expect(failure(osm) == "relation 77 (Nowhere): member way 11 is not in the file; export the relation with its members")
            let route = osm.replacingOccurrences(
                of: #"<tag k="type" v="multipolygon"/><tag k="landuse" v="winter_sports"/>"#,
                with: #"<tag k="type" v="route"/><tag k="piste:type" v="downhill"/>"#)
            #expect(failure(route) == "relation 77 (Nowhere): member way 11 is not in the file; export the relation with its members")
        }

        @Test func aBoundaryThatDoesNotClose() {
            let osm = """
                <osm version="0.6">
                  <node id="1" lat="45.0" lon="7.0"/><node id="2" lat="45.01" lon="7.0"/><node id="3" lat="45.01" lon="7.01"/>
                  <way id="10"><nd ref="1"/><nd ref="2"/><tag k="aerialway" v="chair_lift"/></way>
                  <way id="11"><nd ref="1"/><nd ref="2"/><nd ref="3"/></way>
                  <relation id="77"><member type="way" ref="11" role="outer"/>
                    <tag k="type" v="multipolygon"/><tag k="landuse" v="winter_sports"/><tag k="name" v="Open"/></relation>
                </osm>
                """
            #expect(failure(osm) == "relation 77 (Open): its ways do not close into a ring; way 11 ends where no other member way begins or ends")
        }

        @Test func aSkiWayWithAMissingNode() {
            let osm = """
                <osm version="0.6"><node id="1" lat="45.0" lon="7.0"/>
                  <way id="10"><nd ref="1"/><nd ref="2"/><tag k="aerialway" v="chair_lift"/><tag k="name" v="Half"/></way></osm>
                """
            #expect(failure(osm) == "way 10 (Half): its node 2 is not in the file; export the way with all of its nodes")
        }

        @Test func noLiftAndNoPiste() {
            let osm =
                #"<osm version="0.6"><node id="1" lat="45.0" lon="7.0"/><node id="2" lat="45.1" lon="7.0"/><way id="3"><nd ref="1"/><nd ref="2"/><tag k="highway" v="track"/></way></osm>"#
            #expect(
                failure(osm, file: "town.osm")
                    == "town.osm has no lift (aerialway=*) and no downhill piste (piste:type=downhill): not a ski resort export")
        }

        @Test func aNodeWithoutAPosition() {
            #expect(
                failure(#"<osm version="0.6"><node id="5" lat="95" lon="7"/></osm>"#) == #"line 1: node 5 has no valid lat/lon (lat="95" lon="7")"#)
        }
    }
}
