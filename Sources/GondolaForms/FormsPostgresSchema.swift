import GondolaPostgres

/// The forms domain's tables in PostgreSQL (cluster mode): the same tables as in SQLite.
enum FormsPostgresSchema {
    static func register(in migrator: inout PostgresMigrator) {
        migrator.register(
            "forms-v1",
            [
                """
                CREATE TABLE form_schema (
                    id TEXT NOT NULL, version INTEGER NOT NULL, body TEXT NOT NULL, created_at_ms BIGINT NOT NULL,
                    PRIMARY KEY (id, version)
                )
                """,
                "CREATE TABLE form_code_table (name TEXT PRIMARY KEY, body TEXT NOT NULL)",
                """
                CREATE TABLE form_doc (
                    id TEXT PRIMARY KEY,
                    schema_id TEXT NOT NULL,
                    schema_version INTEGER NOT NULL,
                    owner TEXT NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('draft', 'submitted')),
                    version BIGINT NOT NULL,
                    submission TEXT,
                    created_at_ms BIGINT NOT NULL,
                    updated_at_ms BIGINT NOT NULL,
                    submitted_at_ms BIGINT
                )
                """,
                "CREATE INDEX form_doc_owner ON form_doc(owner, updated_at_ms)",
                """
                CREATE TABLE form_value (
                    doc_id TEXT NOT NULL REFERENCES form_doc(id) ON DELETE CASCADE,
                    key TEXT NOT NULL,
                    value TEXT NOT NULL,
                    version BIGINT NOT NULL,
                    updated_by TEXT NOT NULL,
                    updated_at_ms BIGINT NOT NULL,
                    PRIMARY KEY (doc_id, key)
                )
                """,
                """
                CREATE TABLE form_share (
                    doc_id TEXT NOT NULL REFERENCES form_doc(id) ON DELETE CASCADE,
                    user_id TEXT NOT NULL,
                    PRIMARY KEY (doc_id, user_id)
                )
                """,
                "CREATE INDEX form_share_user ON form_share(user_id)",
                "CREATE TABLE assessment (id TEXT PRIMARY KEY, body TEXT NOT NULL, updated_at_ms BIGINT NOT NULL)",
                """
                CREATE TABLE assessment_assignment (
                    user_id TEXT NOT NULL,
                    assessment_id TEXT NOT NULL REFERENCES assessment(id),
                    assigned_at_ms BIGINT NOT NULL,
                    submitted_at_ms BIGINT,
                    PRIMARY KEY (user_id, assessment_id)
                )
                """,
                """
                CREATE TABLE assessment_answer (
                    user_id TEXT NOT NULL,
                    assessment_id TEXT NOT NULL,
                    question_id TEXT NOT NULL,
                    value TEXT NOT NULL,
                    updated_at_ms BIGINT NOT NULL,
                    PRIMARY KEY (user_id, assessment_id, question_id)
                )
                """,
                """
                CREATE TABLE assessment_submission (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    assessment_id TEXT NOT NULL,
                    body TEXT NOT NULL,
                    submitted_at_ms BIGINT NOT NULL
                )
                """,
                "CREATE INDEX assessment_submission_assessment ON assessment_submission(assessment_id, submitted_at_ms)",
                "CREATE INDEX assessment_submission_user ON assessment_submission(user_id, submitted_at_ms)",
            ])
    }
}
