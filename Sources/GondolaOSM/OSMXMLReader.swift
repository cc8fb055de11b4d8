import Foundation
import GondolaGeo

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// Reads OSM XML 0.6 (`.osm`: what openstreetmap.org's Export, JOSM and Overpass's
/// `out xml` write) with Foundation's streaming parser: `<node>`, `<way>` with `<nd>`,
/// `<relation>` with `<member>`, and their `<tag>`s. Other elements are ignored.
enum OSMXMLReader {
    static func read(_ data: Data) throws(OSMImportError) -> OSMExtract {
        let collector = Collector()
        let parser = XMLParser(data: data)
        parser.delegate = collector
        let parsed = parser.parse()
        // A file cut short can end inside an element the parser still reports, so a
        // content problem is told only once the document is known to be whole.
        if collector.rootless, let problem = collector.problem { throw problem }
        guard parsed else {
            let reason = parser.parserError.map { ($0 as NSError).localizedDescription } ?? "unknown error"
            throw OSMImportError(
                "not well-formed XML at line \(parser.lineNumber), column \(parser.columnNumber) (\(reason)); is the file truncated?")
        }
        guard collector.sawRoot else { throw OSMImportError("not an OSM XML file: no <osm> root element") }
        // Foundation's parser accepts a document cut short; a complete export closes its root.
        guard collector.sawRootEnd else {
            throw OSMImportError("not well-formed XML at line \(parser.lineNumber): the file ends before </osm>; is the file truncated?")
        }
        if let problem = collector.problem { throw problem }
        return collector.extract()
    }

    /// The parser's delegate: gathers elements as they stream past.
    private final class Collector: NSObject, XMLParserDelegate {
        var sawRoot = false
        /// Whether the first element was not `<osm>`.
        var rootless = false
        var sawRootEnd = false
        var problem: OSMImportError?
        var nodes: [Int64: GeoPoint] = [:]
        var taggedNodes: [(id: Int64, tags: [String: String], point: GeoPoint)] = []
        var ways: [(id: Int64, nodes: [Int64], tags: [String: String])] = []
        var relations: [OSMRelation] = []
        // The element being read.
        var current: (kind: String, id: Int64, point: GeoPoint?)?
        var tags: [String: String] = [:]
        var refs: [Int64] = []
        var members: [OSMMember] = []

        /// Keeps the first problem; the parse goes on to tell a truncated file apart.
        func fail(_ parser: XMLParser, _ message: String) {
            guard problem == nil else { return }
            problem = OSMImportError("line \(parser.lineNumber): \(message)")
        }

        func parser(
            _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
            attributes: [String: String] = [:]
        ) {
            guard problem == nil else { return }
            if !sawRoot {
                guard name == "osm" else {
                    rootless = true
                    fail(parser, "not an OSM XML file: the root element is <\(name)>, not <osm>")
                    return parser.abortParsing()
                }
                sawRoot = true
                return
            }
            switch name {
            case "node", "way", "relation":
                guard let text = attributes["id"], let id = Int64(text) else {
                    return fail(parser, "<\(name)> has no numeric id (id=\"\(attributes["id"] ?? "")\")")
                }
                var point: GeoPoint?
                if name == "node" {
                    guard let lat = attributes["lat"].flatMap(Double.init), let lon = attributes["lon"].flatMap(Double.init),
                        GeoPoint(lat: lat, lon: lon).isValid
                    else {
                        // Deleted nodes in change files have no position; a node of an export must.
                        return fail(parser, "node \(id) has no valid lat/lon (lat=\"\(attributes["lat"] ?? "")\" lon=\"\(attributes["lon"] ?? "")\")")
                    }
                    point = GeoPoint(lat: lat, lon: lon)
                }
                current = (name, id, point)
                tags = [:]
                refs = []
                members = []
            case "tag":
                guard current != nil, let key = attributes["k"] else { return }
                tags[key] = attributes["v"] ?? ""
            case "nd":
                guard current?.kind == "way" else { return }
                guard let ref = attributes["ref"].flatMap(Int64.init) else {
                    return fail(parser, "way \(current!.id): <nd> has no numeric ref (ref=\"\(attributes["ref"] ?? "")\")")
                }
                refs.append(ref)
            case "member":
                guard let relation = current, relation.kind == "relation" else { return }
                guard let type = attributes["type"].flatMap(OSMReference.Kind.init(rawValue:)),
                    let ref = attributes["ref"].flatMap(Int64.init)
                else {
                    return fail(parser, "relation \(relation.id): <member> needs type node/way/relation and a numeric ref")
                }
                members.append(OSMMember(reference: OSMReference(type, ref), role: attributes["role"] ?? ""))
            default:
                return
            }
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            if name == "osm" { sawRootEnd = true }
            guard problem == nil, let element = current, element.kind == name else { return }
            switch name {
            case "node":
                var point = element.point!
                point.alt = altitude(ofTag: tags["ele"])
                nodes[element.id] = point
                if !tags.isEmpty { taggedNodes.append((element.id, tags, point)) }
            case "way":
                ways.append((element.id, refs, tags))
            default:
                relations.append(OSMRelation(id: element.id, tags: tags, members: members))
            }
            current = nil
        }

        func extract() -> OSMExtract {
            var extract = OSMExtract(format: "OSM XML")
            extract.nodeCount = nodes.count
            extract.taggedNodes = taggedNodes
            extract.relations = relations
            for way in ways { extract.addWay(id: way.id, nodes: way.nodes, tags: way.tags, from: nodes) }
            return extract
        }
    }
}
