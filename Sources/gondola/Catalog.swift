import ArgumentParser
import Foundation
import GondolaServer
import Logging

/// `gondola catalog`: every RPC method, server API method, provided namespace and replica
/// topic of the built-in domains, with their fields and rules.
struct Catalog: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the catalog of methods, namespaces and replica topics, or write the API pages' method tables from it.")

    @Flag(help: "Print the catalog as JSON.") var json = false
    @Option(name: .customLong("write-docs"), help: "Rewrite the marked method tables of the Markdown pages under this folder.")
    var writeDocs: String?
    @Option(name: .customLong("write-proto"), help: "Write the GRPC server API's schema (api.proto) to this file.")
    var writeProto: String?

    func validate() throws {
        guard json || writeDocs != nil || writeProto != nil else {
            throw ValidationError("give --json, --write-docs <folder> or --write-proto <file>, or several")
        }
    }

    func run() async throws {
        // Standard output is the catalog's: what the domains log while they are built goes to standard error.
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        let catalog = try await GondolaServer.builtInCatalog()
        if json { print(catalog.json.text) }
        if let file = writeProto { try write(GRPCSchema.proto(catalog.methods), to: file) }
        guard let folder = writeDocs else { return }
        let pages = CatalogPages(catalog: catalog)
        let files = CatalogPages.pages(in: folder)
        guard !files.isEmpty else { throw ValidationError("--write-docs: no page under '\(folder)' has a <!-- catalog: … --> table") }
        for file in files {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            let rendered: String
            do {
                rendered = try pages.render(text).text
            } catch {
                throw ValidationError("\(file): \(error)")
            }
            try write(rendered, to: file)
        }
    }

    /// Writes `text` to `file` when it differs, and says so.
    private func write(_ text: String, to file: String) throws {
        guard (try? String(contentsOfFile: file, encoding: .utf8)) != text else { return }
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        print("wrote \(file)")
    }
}
