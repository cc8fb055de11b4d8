import GRDB
import GondolaProtocol
import GondolaStore

/// Where assessments, their assignments to users, answers and submissions live.
protocol AssessmentRepository: Sendable {
    /// Every assessment's body (the one with `id` only, when given).
    func assessments(id: String?) async throws -> [String]
    /// Stores an assessment, replacing one with the same id.
    func put(id: String, body: String, now: Int64) async throws
    /// Assigns (again): a submitted assignment starts over without its answers.
    func assign(_ assessment: String, to user: String, now: Int64) async throws
    /// The user's unfinished assignments, oldest first.
    func open(of user: String) async throws -> [String]
    /// Whether the user has the assessment assigned: "open", "submitted", or nil.
    func state(of assessment: String, for user: String) async throws -> String?
    /// The user's answers, by assessment then question.
    func answers(of user: String) async throws -> [String: [String: JSON]]
    /// Stores or replaces an answer.
    func answer(_ user: String, assessment: String, question: String, value: JSON, now: Int64) async throws
    /// Marks the assignment submitted and stores the submission, in one transaction.
    func submit(_ user: String, assessment: String, id: String, body: JSON, now: Int64) async throws
    /// Submissions, newest first, filtered by user and assessment when given.
    func submissions(user: String?, assessment: String?, limit: Int) async throws -> [JSON]
}

/// Assessments, assignments, answers and submissions in SQLite.
struct SQLiteAssessmentRepository: AssessmentRepository {
    let database: GondolaDatabase

    func assessments(id: String?) throws -> [String] {
        try database.pool.read { db in
            try String.fetchAll(db, sql: "SELECT body FROM assessment WHERE ? IS NULL OR id = ? ORDER BY id", arguments: [id, id])
        }
    }

    func put(id: String, body: String, now: Int64) throws {
        try database.pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO assessment (id, body, updated_at_ms) VALUES (?, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET body = excluded.body, updated_at_ms = excluded.updated_at_ms
                    """, arguments: [id, body, now])
        }
    }

    /// Assigns (again): a submitted assignment starts over without its answers.
    func assign(_ assessment: String, to user: String, now: Int64) throws {
        try database.pool.write { db in
            let submitted = try Row.fetchOne(
                db, sql: "SELECT submitted_at_ms FROM assessment_assignment WHERE user_id = ? AND assessment_id = ?",
                arguments: [user, assessment])
            if let submitted, submitted["submitted_at_ms"] as Int64? == nil { return }
            try db.execute(sql: "DELETE FROM assessment_answer WHERE user_id = ? AND assessment_id = ?", arguments: [user, assessment])
            try db.execute(
                sql: """
                    INSERT INTO assessment_assignment (user_id, assessment_id, assigned_at_ms) VALUES (?, ?, ?)
                    ON CONFLICT (user_id, assessment_id) DO UPDATE SET assigned_at_ms = excluded.assigned_at_ms, submitted_at_ms = NULL
                    """, arguments: [user, assessment, now])
        }
    }

    /// The user's unfinished assignments, oldest first.
    func open(of user: String) throws -> [String] {
        try database.pool.read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT assessment_id FROM assessment_assignment WHERE user_id = ? AND submitted_at_ms IS NULL ORDER BY assigned_at_ms, assessment_id
                    """, arguments: [user])
        }
    }

    /// Whether the user has the assessment assigned: "open", "submitted", or nil.
    func state(of assessment: String, for user: String) throws -> String? {
        try database.pool.read { db in
            try Row.fetchOne(
                db, sql: "SELECT submitted_at_ms FROM assessment_assignment WHERE user_id = ? AND assessment_id = ?",
                arguments: [user, assessment]
            ).map { $0["submitted_at_ms"] as Int64? == nil ? "open" : "submitted" }
        }
    }

    /// The user's answers, by assessment then question.
    func answers(of user: String) throws -> [String: [String: JSON]] {
        try database.pool.read { db in
            var answers: [String: [String: JSON]] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT assessment_id, question_id, value FROM assessment_answer WHERE user_id = ?", arguments: [user])
            {
                answers[row["assessment_id"], default: [:]][row["question_id"]] = (try? JSONParser.parse(row["value"] as String)) ?? .null
            }
            return answers
        }
    }

    func answer(_ user: String, assessment: String, question: String, value: JSON, now: Int64) throws {
        try database.pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO assessment_answer (user_id, assessment_id, question_id, value, updated_at_ms) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (user_id, assessment_id, question_id) DO UPDATE SET value = excluded.value, updated_at_ms = excluded.updated_at_ms
                    """, arguments: [user, assessment, question, value.text, now])
        }
    }

    /// Marks the assignment submitted and stores the submission, in one transaction.
    func submit(_ user: String, assessment: String, id: String, body: JSON, now: Int64) throws {
        try database.pool.write { db in
            try db.execute(
                sql: "UPDATE assessment_assignment SET submitted_at_ms = ? WHERE user_id = ? AND assessment_id = ?",
                arguments: [now, user, assessment])
            try db.execute(
                sql: "INSERT INTO assessment_submission (id, user_id, assessment_id, body, submitted_at_ms) VALUES (?, ?, ?, ?, ?)",
                arguments: [id, user, assessment, body.text, now])
        }
    }

    /// Submissions, newest first, filtered by user and assessment when given.
    func submissions(user: String?, assessment: String?, limit: Int) throws -> [JSON] {
        try database.pool.read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT body FROM assessment_submission WHERE (?1 IS NULL OR user_id = ?1) AND (?2 IS NULL OR assessment_id = ?2)
                    ORDER BY submitted_at_ms DESC LIMIT ?3
                    """, arguments: [user, assessment, limit]
            ).compactMap { try? JSONParser.parse($0) }
        }
    }
}
