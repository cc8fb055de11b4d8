import Foundation
@_spi(Engine) import GondolaHub
import GondolaProtocol
import Logging

/// The method tables of the API pages, generated from the catalog. A page marks each table
/// with the methods it holds, as name patterns (`*` and `?`):
///
///     <!-- catalog: chat.* broadcast.* event.* -->
///     | method | data | answer and rules |
///     …
///     <!-- /catalog -->
///
/// `gondola catalog --write-docs docs` rewrites what lies between the markers; the test
/// suite fails when a page differs from what the catalog writes, or when a method is in no
/// table or in two.
public struct CatalogPages: Sendable {
    public let catalog: MethodCatalog

    public init(catalog: MethodCatalog) {
        self.catalog = catalog
    }

    static let openingMarker = "<!-- catalog:"
    static let closingMarker = "<!-- /catalog -->"

    /// The Markdown pages under `folder` (and its subfolders) that have a catalog table.
    public static func pages(in folder: String) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: folder)
        var pages: [String] = []
        while let path = enumerator?.nextObject() as? String {
            guard path.hasSuffix(".md"), let text = try? String(contentsOfFile: folder + "/" + path, encoding: .utf8),
                text.contains(openingMarker)
            else { continue }
            pages.append(folder + "/" + path)
        }
        return pages.sorted()
    }

    /// `text` with every marked table written from the catalog, and the methods each table holds.
    public func render(_ text: String) throws(CatalogPageError) -> (text: String, methods: [String]) {
        var output: [Substring] = []
        var methods: [String] = []
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)[...]
        while let line = lines.popFirst() {
            output.append(line)
            let trimmed = line.drop { $0 == " " }
            guard trimmed.hasPrefix(Self.openingMarker), trimmed.hasSuffix("-->") else { continue }
            let indent = String(line.prefix { $0 == " " })
            let patterns = trimmed.dropFirst(Self.openingMarker.count).dropLast(3).split(separator: " ").map(String.init)
            guard !patterns.isEmpty else { throw CatalogPageError("\(line): name the methods of the table") }
            guard let end = lines.firstIndex(where: { $0.drop { $0 == " " } == Self.closingMarker }) else {
                throw CatalogPageError("\(line): no \(Self.closingMarker) after it")
            }
            let chosen = catalog.methods.filter { method in patterns.contains { Glob.matches($0, method.name) } }
            guard !chosen.isEmpty else { throw CatalogPageError("\(line): no method of the catalog matches") }
            methods += chosen.map(\.name)
            output += table(chosen).map { Substring(indent + $0) }
            lines = lines[end...]
        }
        return (output.joined(separator: "\n"), methods)
    }

    /// The table's lines: RPC methods in the order they were registered, then server API methods.
    private func table(_ methods: [MethodContract]) -> [String] {
        let ordered = methods.filter { $0.surface == .rpc } + methods.filter { $0.surface == .serverAPI }
        return ["| method | data | answer and rules |", "| --- | --- | --- |"]
            + ordered.map { method in
                let name = "`\(method.name)`" + (method.surface == .serverAPI ? " (server API)" : "")
                return "| \(name) | \(Self.cell(Self.describe(method.fields, prefix: ""))) | \(Self.cell(Self.answer(of: method))) |"
            }
    }

    /// The answer cell: the response type's members, one per line, then the rules.
    static func answer(of method: MethodContract) -> String {
        let members = method.answerFields.isEmpty ? "`{}`" : describe(method.answerFields, prefix: "")
        return members + (method.answer.isEmpty ? "" : "<br>" + method.answer)
    }

    /// One line per member: `` `to.lat` number, required: -90 to 90 ``; "—" without members.
    static func describe(_ fields: [FieldContract], prefix: String) -> String {
        guard !fields.isEmpty else { return prefix.isEmpty ? "—" : "" }
        return fields.map { field in
            let name = prefix + field.name
            var line = "`\(name)` \(field.kind.rawValue)" + (field.required ? "" : ", optional")
            if !field.rule.isEmpty { line += ": \(field.rule)" }
            guard let members = field.members, !members.isEmpty else { return line }
            let nested = field.kind == .objectArray ? "\(name)[]." : "\(name)."
            return line + "<br>" + describe(members, prefix: nested)
        }.joined(separator: "<br>")
    }

    /// Text fit for a table cell: `|` escaped, on one line.
    private static func cell(_ text: String) -> String {
        text.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "|", with: "\\|")
    }
}

/// A page whose catalog markers cannot be followed.
public struct CatalogPageError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}

extension GondolaServer {
    /// The catalog of a server with every built-in domain: built over a throwaway SQLite file
    /// in a temporary folder, without listening, then closed.
    public static func builtInCatalog() async throws -> MethodCatalog {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-catalog-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var configuration = ServerConfiguration()
        configuration.database = folder + "/gondola.sqlite"
        configuration.tokenHMACSecret = UUID().uuidString
        configuration.apiKey = UUID().uuidString
        var logger = Logger(label: "gondola.catalog")
        logger.logLevel = .critical
        let server = try await GondolaServer(configuration: configuration, logger: logger)
        defer { server.node.shutdown() }
        return server.catalog
    }
}
