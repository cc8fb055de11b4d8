import GondolaHub
import GondolaProtocol

/// A questionnaire a patient can be assigned: questions answered by picking one option,
/// each option a title and the value that is submitted.
struct Assessment: Sendable {
    static let maxQuestions = 200
    static let maxOptions = 20

    struct Question: Sendable {
        let id: String
        let title: String
        let options: [(title: String, value: JSON)]

        var json: JSON {
            ["id": .string(id), "title": .string(title), "options": .array(options.map { ["title": .string($0.title), "value": $0.value] })]
        }
    }

    let id: String
    let title: String
    let displayName: String
    let questions: [Question]

    func question(_ id: String) -> Question? { questions.first { $0.id == id } }

    /// `{id, title, display_name, questions: [{id, title, options: [{title, value}]}]}`;
    /// ids unique, option values numbers or strings, unique within their question.
    static func parse(_ root: RequestFields) throws(HubError) -> Assessment {
        let id = try FormsNames.id(root, "id")
        let title = try root.text("title", maxLength: 200)
        let displayName = try root.text("display_name", maxLength: 200)
        var questions: [Question] = []
        var ids = Set<String>()
        for item in try root.noting("ids unique").objectArray("questions", maxCount: maxQuestions) {
            let id = try FormsNames.id(item, "id")
            guard ids.insert(id).inserted else { throw .badRequest("\(item.path(of: "id")): '\(id)' is used twice") }
            let title = try item.text("title", maxLength: 1_000)
            var options: [(title: String, value: JSON)] = []
            for option in try item.noting("values unique within the question").objectArray("options", maxCount: maxOptions) {
                let title = try option.text("title", maxLength: 300)
                let value = try option.noting("a number or a string").anyValue("value")
                guard value.isScalarAnswer else { throw .badRequest("\(option.path(of: "value")): expected a number or a string") }
                guard !options.contains(where: { $0.value == value }) else {
                    throw .badRequest("\(option.path(of: "value")): \(value.text) is used twice")
                }
                options.append((title, value))
            }
            guard !options.isEmpty else { throw .badRequest("\(item.path(of: "options")): a question needs options") }
            questions.append(Question(id: id, title: title, options: options))
        }
        guard !questions.isEmpty else { throw .badRequest("\(root.path(of: "questions")): an assessment needs questions") }
        return Assessment(id: id, title: title, displayName: displayName, questions: questions)
    }

    /// A stored assessment's body.
    static func parse(_ json: JSON) throws(HubError) -> Assessment {
        try parse(try RequestFields(json, path: "assessment"))
    }

    var json: JSON {
        ["id": .string(id), "title": .string(title), "display_name": .string(displayName), "questions": .array(questions.map(\.json))]
    }
}

extension JSON {
    /// A number or a string: what an answer option's value may be.
    var isScalarAnswer: Bool {
        switch self {
        case .int, .string: return true
        case let .double(value): return value.isFinite
        default: return false
        }
    }
}
