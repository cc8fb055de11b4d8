import GondolaPostgres
import GondolaProtocol
import PostgresNIO

/// Assessments, assignments, answers and submissions in PostgreSQL (cluster mode).
struct PostgresAssessmentRepository: AssessmentRepository {
    let pool: PostgresPool

    func assessments(id: String?) async throws -> [String] {
        try await pool.query("SELECT body FROM assessment WHERE \(id)::text IS NULL OR id = \(id) ORDER BY id").map { try $0.decode(String.self) }
    }

    func put(id: String, body: String, now: Int64) async throws {
        try await pool.query(
            """
            INSERT INTO assessment (id, body, updated_at_ms) VALUES (\(id), \(body), \(now))
            ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, updated_at_ms = EXCLUDED.updated_at_ms
            """)
    }

    func assign(_ assessment: String, to user: String, now: Int64) async throws {
        try await pool.transaction { connection in
            let rows = try await pool.run(
                """
                SELECT submitted_at_ms FROM assessment_assignment WHERE user_id = \(user) AND assessment_id = \(assessment) FOR UPDATE
                """, on: connection)
            if let row = rows.first, try row.decode(Int64?.self) == nil { return }
            try await pool.run("DELETE FROM assessment_answer WHERE user_id = \(user) AND assessment_id = \(assessment)", on: connection)
            try await pool.run(
                """
                INSERT INTO assessment_assignment (user_id, assessment_id, assigned_at_ms) VALUES (\(user), \(assessment), \(now))
                ON CONFLICT (user_id, assessment_id) DO UPDATE SET assigned_at_ms = EXCLUDED.assigned_at_ms, submitted_at_ms = NULL
                """, on: connection)
        }
    }

    func open(of user: String) async throws -> [String] {
        try await pool.query(
            """
            SELECT assessment_id FROM assessment_assignment WHERE user_id = \(user) AND submitted_at_ms IS NULL
            ORDER BY assigned_at_ms, assessment_id
            """
        ).map { try $0.decode(String.self) }
    }

    func state(of assessment: String, for user: String) async throws -> String? {
        try await pool.query("SELECT submitted_at_ms FROM assessment_assignment WHERE user_id = \(user) AND assessment_id = \(assessment)")
            .first.map { try $0.decode(Int64?.self) == nil ? "open" : "submitted" }
    }

    func answers(of user: String) async throws -> [String: [String: JSON]] {
        var answers: [String: [String: JSON]] = [:]
        for row in try await pool.query("SELECT assessment_id, question_id, value FROM assessment_answer WHERE user_id = \(user)") {
            let (assessment, question, value) = try row.decode((String, String, String).self)
            answers[assessment, default: [:]][question] = (try? JSONParser.parse(value)) ?? .null
        }
        return answers
    }

    func answer(_ user: String, assessment: String, question: String, value: JSON, now: Int64) async throws {
        try await pool.query(
            """
            INSERT INTO assessment_answer (user_id, assessment_id, question_id, value, updated_at_ms)
            VALUES (\(user), \(assessment), \(question), \(value.text), \(now))
            ON CONFLICT (user_id, assessment_id, question_id) DO UPDATE SET value = EXCLUDED.value, updated_at_ms = EXCLUDED.updated_at_ms
            """)
    }

    func submit(_ user: String, assessment: String, id: String, body: JSON, now: Int64) async throws {
        try await pool.transaction { connection in
            try await pool.run(
                """
                UPDATE assessment_assignment SET submitted_at_ms = \(now) WHERE user_id = \(user) AND assessment_id = \(assessment)
                """, on: connection)
            try await pool.run(
                """
                INSERT INTO assessment_submission (id, user_id, assessment_id, body, submitted_at_ms)
                VALUES (\(id), \(user), \(assessment), \(body.text), \(now))
                """, on: connection)
        }
    }

    func submissions(user: String?, assessment: String?, limit: Int) async throws -> [JSON] {
        try await pool.query(
            """
            SELECT body FROM assessment_submission
            WHERE (\(user)::text IS NULL OR user_id = \(user)) AND (\(assessment)::text IS NULL OR assessment_id = \(assessment))
            ORDER BY submitted_at_ms DESC LIMIT \(Int64(limit))
            """
        ).compactMap { try? JSONParser.parse(try $0.decode(String.self)) }
    }
}
