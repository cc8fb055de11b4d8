import Foundation
import GondolaHub
import GondolaProtocol
import GondolaServer
import Testing

/// The API pages' method tables are the catalog's: each marked table is what
/// `gondola catalog --write-docs docs` writes, and every method the hub serves is in
/// exactly one of them.
@Suite struct CatalogPagesTests {
    static let docsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs").path

    @Test func everyMarkedTableIsTheCatalogsAndEveryMethodIsInExactlyOne() async throws {
        let catalog = try await GondolaServer.builtInCatalog()
        let pages = CatalogPages(catalog: catalog)
        let files = CatalogPages.pages(in: Self.docsFolder)
        #expect(files.count >= 6, "the pages with catalog tables were found: \(files)")
        var tables: [String: [String]] = [:]
        for file in files {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            let (rendered, methods) = try pages.render(text)
            #expect(rendered == text, "\(file) differs from the catalog: run `swift run gondola catalog --write-docs docs`")
            for method in methods { tables[method, default: []].append(file) }
        }
        let served = Set(catalog.methods.map(\.name))
        #expect(served.count >= 80, "the catalog holds every domain's methods")
        let missing = served.subtracting(tables.keys).sorted()
        #expect(missing.isEmpty, "in no catalog table of docs/: \(missing)")
        let twice = tables.filter { $0.value.count > 1 }.keys.sorted()
        #expect(twice.isEmpty, "in two catalog tables: \(twice)")
    }

    @Test func theCatalogListsTheHubsAndTheDomainsContracts() async throws {
        let catalog = try await GondolaServer.builtInCatalog()
        let publish = try #require(catalog.method("publish", on: .serverAPI))
        #expect(
            publish.owner == "the hub"
                && publish.fields.map(\.name) == [
                    "channel", "data", "b64data", "skip_history", "tags", "idempotency_key", "version", "version_epoch", "delta",
                ])
        let send = try #require(catalog.method("chat.send", on: .rpc))
        #expect(send.owner == "travel" && send.fields.filter(\.required).map(\.name) == ["chat", "text", "client_message_id"])
        #expect(catalog.method("trip_create", on: .serverAPI)?.owner == "travel")
        #expect(catalog.namespaces.contains { $0.provision == .namespace("chat") && $0.owner == "travel" })
        let topics = Set(catalog.replicaTopics.map(\.topic))
        #expect(topics.isSuperset(of: ["travel.position", "travel.region", "travel.chat"]))
        let json = catalog.json
        guard case let .array(methods)? = json["methods"] else { throw HarnessError("no methods in \(json.text.prefix(200))") }
        #expect(methods.count == catalog.methods.count)
    }

    @Test func aTableWithoutAnEndOrWithoutMethodsIsNamed() throws {
        let pages = CatalogPages(catalog: MethodCatalog())
        #expect(throws: CatalogPageError.self) { try pages.render("<!-- catalog: chat.* -->\n| method |") }
        #expect(throws: CatalogPageError.self) { try pages.render("<!-- catalog: nothing.* -->\n<!-- /catalog -->") }
    }
}
