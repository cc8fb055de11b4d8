import GondolaDomain
import GondolaHub
import GondolaProtocol
import Synchronization

/// One code table: the values a dropdown offers, each a code and a label.
struct CodeTable: Sendable, Equatable {
    let name: String
    let entries: [(code: String, label: String)]

    static func == (lhs: CodeTable, rhs: CodeTable) -> Bool {
        lhs.name == rhs.name && lhs.entries.elementsEqual(rhs.entries) { $0.code == $1.code && $0.label == $1.label }
    }

    func contains(_ code: String) -> Bool { entries.contains { $0.code == code } }

    var json: JSON {
        ["name": .string(name), "values": .array(entries.map { ["code": .string($0.code), "label": .string($0.label)] })]
    }

    /// `{name, values: [{code, label}]}`: 1 to 1,000 values, codes unique.
    static func parse(_ fields: RequestFields) throws(HubError) -> CodeTable {
        let name = try FormsNames.id(fields, "name")
        var entries: [(code: String, label: String)] = []
        var seen = Set<String>()
        for value in try fields.noting("codes unique").objectArray("values", maxCount: 1_000) {
            let code = try value.string("code", maxLength: 64)
            guard seen.insert(code).inserted else { throw .badRequest("\(value.path(of: "code")): '\(code)' is used twice") }
            entries.append((code, try value.text("label", maxLength: 200)))
        }
        guard !entries.isEmpty else { throw .badRequest("\(fields.path(of: "values")): a code table needs values") }
        return CodeTable(name: name, entries: entries)
    }
}

/// The code tables the forms use, by name (loaded at start, replaced by the server API).
/// A name this node has not heard of (another node of a cluster stored the table a
/// moment ago) is read from the database before it is called unknown.
final class CodeTables: Sendable {
    private let tables = Mutex<[String: CodeTable]>([:])
    /// Reads a stored table's body by name (nil: none is stored).
    private let readStored: @Sendable (String) async throws -> String?

    /// Tables read from storage on a miss through `readStored`; by default only the tables
    /// `put` here are known.
    init(readStored: @escaping @Sendable (String) async throws -> String? = { _ in nil }) {
        self.readStored = readStored
    }

    func table(_ name: String) async throws(HubError) -> CodeTable? {
        if let known = tables.withLock({ $0[name] }) { return known }
        guard let body = try await databaseRead({ try await readStored(name) }) else { return nil }
        let stored = try await databaseRead { try CodeTable.parse(try RequestFields(try JSONParser.parse(body))) }
        put(stored)
        return stored
    }

    func put(_ table: CodeTable) { tables.withLock { $0[table.name] = table } }

}
