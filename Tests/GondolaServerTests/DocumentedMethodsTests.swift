import Foundation
import GondolaServer
import Testing

/// The API pages and the code name the same methods: every RPC method and server API method a
/// hub with every domain serves has a row in a method table of `docs/`, and every row names a
/// method the hub serves.
@Suite struct DocumentedMethodsTests {
    static let docsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs")

    /// Each row of the tables whose first column is `method` in `docs/` and `docs/api/`:
    /// the methods its first cell names (in backticks) and the file it is in.
    static func documentedMethods() throws -> [String: String] {
        var methods: [String: String] = [:]
        for folder in [docsFolder, docsFolder.appendingPathComponent("api")] {
            for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".md") {
                let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                var inMethodTable = false
                for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                    let row = line.drop { $0 == " " }  // a table may be indented under a list item
                    guard row.hasPrefix("|") else {
                        inMethodTable = false
                        continue
                    }
                    let first = row.dropFirst().prefix { $0 != "|" }.trimmingCharacters(in: .whitespaces)
                    if first == "method" { inMethodTable = true }
                    guard inMethodTable, first != "method", !first.hasPrefix("---") else { continue }
                    for name in first.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter({ $0.offset % 2 == 1 }).map({
                        String($0.element)
                    }) {
                        methods[name] = file
                    }
                }
            }
        }
        return methods
    }

    @Test func everyMethodTheHubServesIsDocumentedAndEveryDocumentedMethodIsServed() async throws {
        let server = try await startTravelServer()
        let served = Set(server.server.node.rpc.methods).union(server.server.serverAPIMethodNames)
        let documented = try Self.documentedMethods()
        try await server.stop()
        #expect(documented.count > 50, "the method tables were found")
        let undocumented = served.subtracting(documented.keys).sorted()
        #expect(undocumented.isEmpty, "served but in no method table of docs/: \(undocumented)")
        let unserved = documented.filter { !served.contains($0.key) }.sorted { $0.key < $1.key }
        #expect(unserved.isEmpty, "in a method table of docs/ but not served: \(unserved)")
    }
}
