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
    func assign(_ id: String, to user: String) async throws(HubError) -> AssessmentAssigned {
        guard let assessment = try await assessment(id) else { throw .badRequest("assessment: no assessment '\(id)'") }
        guard UserID.isValid(user) else { throw .badRequest("user: not a user id: '\(user)'") }
        return try await edits.withLock(user) { () throws(HubError) -> AssessmentAssigned in
            try await databaseWrite { try await repository.assign(id, to: user, now: unixMilliseconds()) }
            let progress = try await progress(of: user)
            tell(user, AssessmentProgressPush(type: "assessment.assigned", assessment: id, progress: progress).json)
            notices.post(
                Notice(
                    audience: .users([user]), channel: PersonalChannel.name(of: user), category: .update, text: "assessment.assigned",
                    values: ["title": assessment.title], link: ["screen": "assessment", "assessment": id]))
            return AssessmentAssigned(user: user, assessment: id, progress: progress)
        }
    }

    /// The user's unfinished assessments as one sequence of questions.
    func flow(of user: String) async throws(HubError) -> AssessmentFlow {
        let (open, answers) = try await state(of: user)
        var questions: [FlowQuestion] = []
        var summaries: [FlowAssessment] = []
        for assessment in open {
            let given = answers[assessment.id] ?? [:]
            for question in assessment.questions {
                questions.append(FlowQuestion(number: questions.count + 1, assessment: assessment, question: question, answer: given[question.id]))
            }
            summaries.append(FlowAssessment(assessment: assessment, answered: assessment.questions.filter { given[$0.id] != nil }.count))
        }
        return AssessmentFlow(assessments: summaries, questions: questions)
    }

    /// Stores or changes an answer; the value must be one of the question's options.
    func answer(_ id: String, question questionID: String, value: JSON, by user: String) async throws(HubError) -> AssessmentAnswered {
        try await edits.withLock(user) { () throws(HubError) -> AssessmentAnswered in
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
            let change = AssessmentAnswered(assessment: id, question: questionID, value: value, progress: progress)
            tell(user, change.json)
            return change
        }
    }

    /// Submits an assessment whose questions are all answered: stores
    /// `{assessment_id, patient_id, answers: [{question_id, value}], submitted_at}`.
    func submit(_ id: String, by user: String) async throws(HubError) -> AssessmentSubmitted {
        try await edits.withLock(user) { () throws(HubError) -> AssessmentSubmitted in
            let assessment = try await assigned(id, to: user)
            let given = try await databaseRead { try await repository.answers(of: user) }[id] ?? [:]
            let missing = assessment.questions.filter { given[$0.id] == nil }.map(\.id)
            guard missing.isEmpty else { throw .badRequest("questions without an answer: \(missing.joined(separator: ", "))") }
            let now = unixMilliseconds()
            let submission = AssessmentSubmission(
                assessment: id, patient: user,
                answers: assessment.questions.map { AssessmentSubmission.Answer(question: $0.id, value: given[$0.id]!) },
                submittedAt: ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(now) / 1000)))
            try await databaseWrite {
                try await repository.submit(user, assessment: id, id: RandomID.make("sub-"), body: submission.json, now: now)
            }
            let progress = try await progress(of: user)
            tell(user, AssessmentProgressPush(type: "assessment.submitted", assessment: id, progress: progress).json)
            return AssessmentSubmitted(submission: submission, progress: progress)
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

    private func progress(of user: String) async throws(HubError) -> AssessmentProgress {
        let (open, answers) = try await state(of: user)
        let total = open.reduce(0) { $0 + $1.questions.count }
        let answered = open.reduce(0) { sum, assessment in sum + assessment.questions.filter { answers[assessment.id]?[$0.id] != nil }.count }
        return AssessmentProgress(answered: answered, total: total)
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
