import Foundation
import GondolaHub
import GondolaProtocol
import GondolaServer
import Testing

/// The GRPC schema comes from the server API's contracts and Centrifugo's numbers: the
/// committed `api.proto` is what `gondola catalog --write-proto` writes, and a member that
/// one side has and the other lacks stops the writing, naming it.
@Suite struct GRPCSchemaTests {
    static let committed = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(GRPCSchema.path).path

    @Test func theCommittedSchemaIsTheOneTheContractsWrite() async throws {
        let catalog = try await GondolaServer.builtInCatalog()
        let written = try GRPCSchema.proto(catalog.methods)
        let committed = try String(contentsOfFile: Self.committed, encoding: .utf8)
        #expect(
            written == committed,
            "\(GRPCSchema.path) differs from the contracts: run `swift run gondola catalog --write-proto \(GRPCSchema.path)`, then Scripts/generate-protobuf"
        )
        // Centrifugo's numbers and types, as a client generated from its schema sends them.
        #expect(written.contains("message PublishRequest {\n  // not empty\n  string channel = 1;\n"))
        #expect(written.contains("  uint64 offset = 1;"))
        #expect(written.contains("  map<string, ClientInfo> presence = 1;"))
        #expect(written.contains("  FilterNode label_filter = 12;"))
        #expect(written.contains("  reserved 8, 9;"))
    }

    @Test func aMemberWithoutANumberIsNamed() async throws {
        let methods = try await Self.serverAPI(changing: "publish") { $0 + [.optional("colour", .string)] }
        let problem = try #require(throws: GRPCSchema.Problem.self) { try GRPCSchema.proto(methods) }
        #expect(problem.mismatches == ["PublishRequest.colour: no field number in GRPCSchemaFacts"])
    }

    @Test func aNumberWithoutAMemberIsNamed() async throws {
        let methods = try await Self.serverAPI(changing: "history") { $0.filter { $0.name != "reverse" } }
        let problem = try #require(throws: GRPCSchema.Problem.self) { try GRPCSchema.proto(methods) }
        #expect(problem.mismatches == ["HistoryRequest.reverse: in GRPCSchemaFacts but not a member of the contract"])
    }

    @Test func aMethodTheServiceNeedsIsNamedWhenTheAPILacksIt() async throws {
        let catalog = try await GondolaServer.builtInCatalog()
        let methods = catalog.methods.filter { $0.name != "presence_stats" }
        let problem = try #require(throws: GRPCSchema.Problem.self) { try GRPCSchema.proto(methods) }
        #expect(problem.mismatches.contains("presence_stats: the server API has no such method"))
    }

    /// The built-in catalog's methods, with the server API method `name`'s request members changed.
    static func serverAPI(changing name: String, _ change: ([FieldContract]) -> [FieldContract]) async throws -> [MethodContract] {
        try await GondolaServer.builtInCatalog().methods.map { method in
            guard method.name == name, method.surface == .serverAPI else { return method }
            return MethodContract(
                name: method.name, surface: method.surface, owner: method.owner, fields: change(method.fields),
                answerFields: method.answerFields, answer: method.answer)
        }
    }
}
