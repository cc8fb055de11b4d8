import GondolaHub
import GondolaProtocol
import GondolaTestSupport
import Testing

@testable import GondolaForms

@Suite struct AssessmentParsingTests {
    @Test func badAssessmentsAreRefusedNamingTheProblem() {
        let question: JSON = ["id": "q1", "title": "Q?", "options": [["title": "No", "value": 0], ["title": "Yes", "value": 1]]]
        let cases: [(JSON, String)] = [
            (["id": "a", "title": "T", "display_name": "D", "questions": []], "an assessment needs questions"),
            (["id": "a", "title": "T", "display_name": "D", "questions": [question, question]], "'q1' is used twice"),
            (["id": "a", "title": "T", "display_name": "D", "questions": [["id": "q", "title": "Q", "options": []]]], "a question needs options"),
            (
                [
                    "id": "a", "title": "T", "display_name": "D",
                    "questions": [["id": "q", "title": "Q", "options": [["title": "x", "value": [1]]]]],
                ],
                "expected a number or a string"
            ),
            (
                [
                    "id": "a", "title": "T", "display_name": "D",
                    "questions": [["id": "q", "title": "Q", "options": [["title": "x", "value": 1], ["title": "y", "value": 1]]]],
                ], "1 is used twice"
            ),
            (["id": "a", "title": "T", "questions": [question]], "display_name is required"),
        ]
        for (json, expected) in cases {
            do {
                _ = try Assessment.parse(json)
                Issue.record("accepted: \(json.text)")
            } catch {
                guard case let .badRequest(message) = error else {
                    Issue.record("\(error)")
                    continue
                }
                #expect(message.contains(expected), "expected '\(expected)', got '\(message)'")
            }
        }
    }
}

/// The forms domain's replica payloads read back what they write.
@Suite struct FormsReplicaTests {
    @Test func catalogChangesSurviveTheirJSON() throws {
        try expectReadBack(FormCatalogChange.schema("watercraft-inspection"))
        try expectReadBack(FormCatalogChange.codeTable("station"))
        try expectReadBack(AssessmentStoredReplica(assessment: "phq-9"))
        #expect(throws: HubError.self) { try FormCatalogChange(RequestFields(["schema": "a", "code_table": "b"])) }
    }
}
