import Foundation
import GondolaDomain
import GondolaHub
import GondolaProtocol
import Logging
import Synchronization

/// Assessments assigned to patients by staff, answered as one combined flow: every
/// unfinished assignment's questions back to back, numbered across the flow, with the
/// progress (answered of total) pushed on `personal:#<user>` after each answer so that
/// every device's progress bar follows. A patient reaches only their assignments (103
/// for any other id, whether it exists or not).
public final class AssessmentService: Sendable {
    static let maxSubmissionsListed = 500

    let node: Node
    let repository: any AssessmentRepository
    let logger: Logger
    private let assessments = Mutex<[String: Assessment]>([:])
    /// Orders each user's assignments, answers and submissions (across a cluster's nodes too).
    private let edits: any KeyedLocks
    /// Where an assignment is posted for the user's phones.
    private let notices: NoticeBoard
    /// Reads of the catalog after another node changed it, in the order the bus brought them.
    private let catalogReads: SerialJobs
    static let catalogTopic = "assessments.catalog"

    init(node: Node, repository: any AssessmentRepository, locks: any KeyedLocks, notices: NoticeBoard = NoticeBoard(), logger: Logger) async throws {
        self.node = node
        self.notices = notices
        self.repository = repository
        self.edits = locks
        self.logger = logger
        catalogReads = SerialJobs(name: "assessments.catalog replicas", logger: logger)
        try await reload()
    }

    /// Reads the assessments again when another node of a cluster changed one, and when the node (re)gains the bus.
    func follow(in registrations: inout NodeRegistrations) {
        registrations.reloadOnChange(
            topic: Self.catalogTopic, AssessmentStoredReplica.self,
            effect: "reads every assessment again from the shared database", through: catalogReads
        ) { [weak self] in await self?.reloadLogged() }
    }

    /// Reads every assessment from the repository.
    private func reload() async throws {
        let loaded = try await repository.assessments(id: nil).map { try Assessment.parse(try JSONParser.parse($0)) }
        assessments.withLock { table in table = Dictionary(loaded.map { ($0.id, $0) }, uniquingKeysWith: { $1 }) }
    }

    private func reloadLogged() async {
        do {
            try await reload()
        } catch {
            logger.error("reading the assessments again failed", metadata: ["error": "\(error)"])
        }
    }

    /// Stores an assessment (replacing one with the same id; answers to questions it no
    /// longer has are left out of the flow and of submissions).
    func put(_ assessment: Assessment, body json: JSON) async throws(HubError) -> Assessment {
        try await databaseWrite { try await repository.put(id: assessment.id, body: json.text, now: unixMilliseconds()) }
        assessments.withLock { $0[assessment.id] = assessment }
        node.replicate(topic: Self.catalogTopic, AssessmentStoredReplica(assessment: assessment.id))
        return assessment
    }

    /// Assigns an assessment to a user (staff, through the server API); assigning one that
    /// was submitted starts it over.
    func assign(_ id: String, to user: String) async throws(HubError) -> JSON {
        guard let assessment = try await assessment(id) else { throw .badRequest("assessment: no assessment '\(id)'") }
        guard UserID.isValid(user) else { throw .badRequest("user: not a user id: '\(user)'") }
        return try await edits.withLock(user) { () throws(HubError) -> JSON in
            try await databaseWrite { try await repository.assign(id, to: user, now: unixMilliseconds()) }
            let progress = try await progress(of: user)
            tell(user, ["type": "assessment.assigned", "assessment": .string(id), "progress": progress])
            notices.post(
                Notice(
                    audience: .users([user]), channel: PersonalChannel.name(of: user), category: .update, text: "assessment.assigned",
                    values: ["title": assessment.title], link: ["screen": "assessment", "assessment": id]))
            return ["user": .string(user), "assessment": .string(id), "progress": progress]
        }
    }

    /// The user's unfinished assessments as one sequence of questions.
    func flow(of user: String) async throws(HubError) -> JSON {
        let (open, answers) = try await state(of: user)
        var questions: [JSON] = []
        var summaries: [JSON] = []
        var answered = 0
        for assessment in open {
            let given = answers[assessment.id] ?? [:]
            var answeredHere = 0
            for question in assessment.questions {
                var item: JSON = [
                    "number": .int(Int64(questions.count + 1)), "assessment": .string(assessment.id), "assessment_title": .string(assessment.title),
                    "display_name": .string(assessment.displayName), "question": .string(question.id), "title": .string(question.title),
                    "options": question.json["options"] ?? .array([]),
                ]
                if let answer = given[question.id] {
                    item = item.adding("answer", answer)
                    answeredHere += 1
                }
                questions.append(item)
            }
            answered += answeredHere
            summaries.append([
                "id": .string(assessment.id), "title": .string(assessment.title), "display_name": .string(assessment.displayName),
                "questions": .int(Int64(assessment.questions.count)), "answered": .int(Int64(answeredHere)),
            ])
        }
        return [
            "total": .int(Int64(questions.count)), "answered": .int(Int64(answered)), "assessments": .array(summaries),
            "questions": .array(questions),
        ]
    }

    /// Stores or changes an answer; the value must be one of the question's options.
    func answer(_ id: String, question questionID: String, value: JSON, by user: String) async throws(HubError) -> JSON {
        try await edits.withLock(user) { () throws(HubError) -> JSON in
            let assessment = try await assigned(id, to: user)
            guard let question = assessment.question(questionID) else {
                throw .badRequest("question: assessment '\(id)' has no question '\(questionID)'")
            }
            guard question.options.contains(where: { $0.value == value }) else {
                throw .badRequest(
                    "value: \(value.text) is not an option of '\(questionID)' (\(question.options.map(\.value.text).joined(separator: ", ")))")
            }
            try await databaseWrite { try await repository.answer(user, assessment: id, question: questionID, value: value, now: unixMilliseconds()) }
            let progress = try await progress(of: user)
            let change: JSON = [
                "type": "assessment.answer", "assessment": .string(id), "question": .string(questionID), "value": value,
                "progress": progress,
            ]
            tell(user, change)
            return change
        }
    }

    /// Submits an assessment whose questions are all answered: stores
    /// `{assessment_id, patient_id, answers: [{question_id, value}], submitted_at}`.
    func submit(_ id: String, by user: String) async throws(HubError) -> JSON {
        try await edits.withLock(user) { () throws(HubError) -> JSON in
            let assessment = try await assigned(id, to: user)
            let given = try await databaseRead { try await repository.answers(of: user) }[id] ?? [:]
            let missing = assessment.questions.filter { given[$0.id] == nil }.map(\.id)
            guard missing.isEmpty else { throw .badRequest("questions without an answer: \(missing.joined(separator: ", "))") }
            let now = unixMilliseconds()
            let submission: JSON = [
                "assessment_id": .string(id), "patient_id": .string(user),
                "answers": .array(assessment.questions.map { ["question_id": .string($0.id), "value": given[$0.id]!] }),
                "submitted_at": .string(ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(now) / 1000))),
            ]
            try await databaseWrite { try await repository.submit(user, assessment: id, id: RandomID.make("sub-"), body: submission, now: now) }
            let progress = try await progress(of: user)
            tell(user, ["type": "assessment.submitted", "assessment": .string(id), "progress": progress])
            return ["submission": submission, "progress": progress]
        }
    }

    /// Submissions for staff, newest first (at most 500).
    func submissions(user: String?, assessment: String?) async throws(HubError) -> [JSON] {
        try await databaseRead { try await repository.submissions(user: user, assessment: assessment, limit: Self.maxSubmissionsListed) }
    }

    // MARK: Plumbing

    /// The assessment with `id`, read from the database when this node has not heard of
    /// it (another node of a cluster stored it a moment ago); nil when there is none.
    private func assessment(_ id: String) async throws(HubError) -> Assessment? {
        if let known = assessments.withLock({ $0[id] }) { return known }
        guard let body = try await databaseRead({ try await repository.assessments(id: id) }).first else { return nil }
        let stored = try await databaseRead { try Assessment.parse(try JSONParser.parse(body)) }
        assessments.withLock { $0[id] = stored }
        return stored
    }

    /// The assessment when the user has it assigned and unfinished.
    private func assigned(_ id: String, to user: String) async throws(HubError) -> Assessment {
        switch try await databaseRead({ try await repository.state(of: id, for: user) }) {
        case "open"?:
            guard let assessment = try await assessment(id) else { throw .internalError("assessment \(id) is assigned but not stored") }
            return assessment
        case "submitted"?: throw .notAvailable("assessment \(id) is already submitted")
        default: throw .permissionDenied("assessment \(id) is not assigned to you")
        }
    }

    private func state(of user: String) async throws(HubError) -> (open: [Assessment], answers: [String: [String: JSON]]) {
        let ids = try await databaseRead { try await repository.open(of: user) }
        var known: [Assessment] = []
        for id in ids { if let assessment = try await assessment(id) { known.append(assessment) } }
        return (known, try await databaseRead { try await repository.answers(of: user) })
    }

    private func progress(of user: String) async throws(HubError) -> JSON {
        let (open, answers) = try await state(of: user)
        let total = open.reduce(0) { $0 + $1.questions.count }
        let answered = open.reduce(0) { sum, assessment in sum + assessment.questions.filter { answers[assessment.id]?[$0.id] != nil }.count }
        return ["answered": .int(Int64(answered)), "total": .int(Int64(total))]
    }

    private func tell(_ user: String, _ data: JSON) {
        node.tell(user, data)
    }
}

/// `assessments.catalog`: an assessment one node stored; the others read them all again.
struct AssessmentStoredReplica: ReplicaPayload {
    let assessment: String
    init(assessment: String) { self.assessment = assessment }
    init(_ fields: RequestFields) throws(HubError) {
        assessment = try fields.noting("the stored assessment's id").string("assessment", maxLength: .max)
    }
    var json: JSON { ["assessment": .string(assessment)] }
}
