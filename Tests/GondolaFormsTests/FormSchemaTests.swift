import Foundation
import GondolaHub
import GondolaProtocol
import Testing

@testable import GondolaForms

/// The repository's `forms/` folder.
let formsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("forms").path

func codeTables() -> CodeTables {
    let tables = CodeTables()
    tables.put(CodeTable(name: "station", entries: [("golden", "Golden"), ("yahk", "Yahk")]))
    return tables
}

func schema(_ fields: [JSON], tables: CodeTables = codeTables()) async throws(HubError) -> FormSchema {
    try await FormSchema.parse(
        ["id": "test", "title": "Test", "sections": [["key": "main", "title": "Main", "fields": .array(fields)]]], version: 1, codeTables: tables)
}

func refusal(_ fields: [JSON]) async -> String? {
    do {
        _ = try await schema(fields)
        return nil
    } catch {
        guard case let .badRequest(message) = error else { return "\(error)" }
        return message
    }
}

@Suite struct FormSchemaTests {
    @Test func theShippedFormsLoadAndUseEveryFieldType() async throws {
        let tables = CodeTables()
        let data = try #require(FileManager.default.contents(atPath: formsFolder + "/code-tables.json"))
        guard case let .array(list)? = try JSONParser.parse(Array(data))["tables"] else {
            Issue.record("no tables")
            return
        }
        for table in list { tables.put(try CodeTable.parse(try RequestFields(table))) }
        var types = Set<FieldType>()
        for file in ["watercraft-inspection.json", "shift.json"] {
            let json = try JSONParser.parse(Array(try #require(FileManager.default.contents(atPath: formsFolder + "/" + file))))
            let parsed = try await FormSchema.parse(json, version: 1, codeTables: tables)
            types.formUnion(parsed.fields.values.map(\.type))
        }
        #expect(types == Set(FieldType.allCases))
    }

    @Test func badSchemasAreRefusedNamingTheProblem() async {
        let cases: [([JSON], String)] = [
            ([["key": "a", "type": "slider"]], "schema.sections[0].fields[0].type must be one of"),
            ([["key": "a", "type": "int"], ["key": "a", "type": "text"]], "'a' is used twice"),
            ([["key": "a", "type": "int", "dependencies": [["key": "ghost", "equals": 1]]]], "depends on 'ghost', which the schema lacks"),
            (
                [["key": "t", "type": "title"], ["key": "a", "type": "int", "dependencies": [["key": "t", "equals": 1]]]], "a title without a value"
            ),
            (
                [
                    ["key": "a", "type": "switch", "dependencies": [["key": "b", "equals": true]]],
                    ["key": "b", "type": "switch", "dependencies": [["key": "c", "equals": true]]],
                    ["key": "c", "type": "switch", "dependencies": [["key": "a", "equals": true]]],
                ], "dependency cycle: a → b → c → a"
            ),
            ([["key": "a", "type": "dropdown", "code_table": "nope"]], "no code table named 'nope'"),
            ([["key": "a", "type": "dropdown"]], "a dropdown needs a code table"),
            ([["key": "a", "type": "stepper", "min": 1]], "a stepper needs min and max"),
            ([["key": "a", "type": "int", "min": 5, "max": 1]], "is above max"),
            ([["key": "a b", "type": "int"]], "letters, digits, _ and - only"),
            ([["key": "a", "type": "int", "width": "double"]], "width must be one of"),
            ([["key": "a", "type": "switch", "dependencies": [["key": "b"]]], ["key": "b", "type": "switch"]], "give equals (a value) or in"),
            ([["key": "a", "type": "text", "validation": "email"]], "validation must be one of"),
        ]
        for (fields, expected) in cases {
            let message = await refusal(fields)
            #expect(message?.contains(expected) == true, "expected '\(expected)', got \(message ?? "acceptance")")
        }
    }

    @Test func dependenciesChainSoThatHidingOneFieldHidesWhatDependsOnIt() async throws {
        let form = try await schema([
            ["key": "holder", "type": "radio_switch"],
            ["key": "newPassport", "type": "radio_switch", "dependencies": [["key": "holder", "equals": true]]],
            ["key": "number", "type": "text", "required": true, "dependencies": [["key": "newPassport", "equals": true]]],
            ["key": "kind", "type": "dropdown", "code_table": "station"],
            [
                "key": "note", "type": "textarea", "required": true,
                "dependencies": [["key": "kind", "in": ["golden", "yahk"]], ["key": "holder", "equals": false]],
            ],
        ])
        #expect(form.visibleKeys([:]) == ["holder", "kind"])
        #expect(form.visibleKeys(["holder": true]) == ["holder", "newPassport", "kind"])
        #expect(form.visibleKeys(["holder": true, "newPassport": true]) == ["holder", "newPassport", "number", "kind"])
        #expect(form.visibleKeys(["holder": false, "newPassport": true]) == ["holder", "kind"], "a hidden field's value counts as empty")
        #expect(form.visibleKeys(["holder": false, "kind": "yahk"]) == ["holder", "kind", "note"])
        #expect(form.missing(["holder": true, "newPassport": true]) == ["number"])
        #expect(form.missing(["holder": true, "newPassport": false]) == [], "a hidden required field is not missing")
        #expect(form.missing(["holder": false, "kind": "golden"]) == ["note"])
    }
}

@Suite struct FieldValidationTests {
    func check(_ field: JSON, _ value: JSON) async -> Result<JSON, HubError> {
        do throws(HubError) {
            let form = try await schema([field])
            guard case let .string(key)? = field["key"], let checked = form.fields[key] else { throw .badRequest("no key") }
            return .success(try await FieldValidation.check(value, for: checked, codeTables: codeTables()))
        } catch {
            return .failure(error)
        }
    }

    @Test func everyFieldTypeTakesItsValuesAndRefusesOthers() async {
        let cases: [(JSON, [JSON], [JSON])] = [
            (["key": "d", "type": "date"], ["2024-02-29", "1999-12-31"], ["2023-02-29", "2024-13-01", "24-01-01", 20_240_101, "2024-1-01"]),
            (["key": "t", "type": "time"], ["00:00", "23:59"], ["24:00", "12:60", "1:30", "12.30", true]),
            (["key": "n", "type": "int", "min": 0, "max": 10], [0, 10, 5.0], [-1, 11, 2.5, "3", true]),
            (["key": "x", "type": "double", "min": -1.5, "max": 2.5], [-1.5, 0, 2.5, 1], [-1.6, 2.6, "1.0"]),
            (["key": "s", "type": "stepper", "min": 2, "max": 20, "step": 3], [2, 5, 20], [3, 1, 23, 4.5]),
            (
                ["key": "p", "type": "text", "validation": "passport_number"], ["AB123456", "X12345"],
                ["ab123456", "AB-1234", "AB12", "AB1234567890X"]
            ),
            (["key": "a", "type": "text", "validation": "alphanumeric", "max_length": 10], ["Lake 12", "x"], ["Lake #12", "Lake 123456", "é"]),
            (["key": "m", "type": "textarea", "max_length": 5], ["a\nb", ""], ["abcdef", "a\u{0}b", 5]),
            (["key": "c", "type": "dropdown", "code_table": "station"], ["golden"], ["Golden", "nowhere", 1]),
            (["key": "b", "type": "radio_boolean"], [true, false], ["true", 1]),
            (["key": "r", "type": "radio_switch"], [true], ["yes"]),
            (["key": "w", "type": "switch"], [false], [0]),
        ]
        for (field, good, bad) in cases {
            for value in good + [.null] {
                if case let .failure(error) = await check(field, value) { Issue.record("\(field["type"]!.text) refused \(value.text): \(error)") }
            }
            for value in bad {
                if case .success = await check(field, value) { Issue.record("\(field["type"]!.text) accepted \(value.text)") }
            }
        }
        #expect(await (try? check(["key": "n", "type": "int"], 5.0).get()) == 5, "whole numbers of int fields are stored as integers")
        for display in ["spacer", "title", "view_field"] {
            if case .success = await check(["key": "v", "type": .string(display)], "x") { Issue.record("\(display) took a value") }
        }
    }
}
