import GRDB

/// The forms domain's tables: schema versions and code tables as JSON, documents with
/// their values (each value with the document version that last changed it) and shares,
/// and assessments with their assignments, answers and submissions.
enum FormsSchema {
    static func registerMigrations(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("forms-v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE form_schema (
                        id TEXT NOT NULL,
                        version INTEGER NOT NULL,
                        body TEXT NOT NULL,
                        created_at_ms INTEGER NOT NULL,
                        PRIMARY KEY (id, version)
                    ) WITHOUT ROWID;
                    CREATE TABLE form_code_table (
                        name TEXT PRIMARY KEY NOT NULL,
                        body TEXT NOT NULL
                    ) WITHOUT ROWID;
                    CREATE TABLE form_doc (
                        id TEXT PRIMARY KEY NOT NULL,
                        schema_id TEXT NOT NULL,
                        schema_version INTEGER NOT NULL,
                        owner TEXT NOT NULL,
                        state TEXT NOT NULL CHECK (state IN ('draft', 'submitted')),
                        version INTEGER NOT NULL,
                        submission TEXT,
                        created_at_ms INTEGER NOT NULL,
                        updated_at_ms INTEGER NOT NULL,
                        submitted_at_ms INTEGER
                    ) WITHOUT ROWID;
                    CREATE INDEX form_doc_owner ON form_doc(owner, updated_at_ms);
                    CREATE TABLE form_value (
                        doc_id TEXT NOT NULL REFERENCES form_doc(id) ON DELETE CASCADE,
                        key TEXT NOT NULL,
                        value TEXT NOT NULL,
                        version INTEGER NOT NULL,
                        updated_by TEXT NOT NULL,
                        updated_at_ms INTEGER NOT NULL,
                        PRIMARY KEY (doc_id, key)
                    ) WITHOUT ROWID;
                    CREATE TABLE form_share (
                        doc_id TEXT NOT NULL REFERENCES form_doc(id) ON DELETE CASCADE,
                        user_id TEXT NOT NULL,
                        PRIMARY KEY (doc_id, user_id)
                    ) WITHOUT ROWID;
                    CREATE INDEX form_share_user ON form_share(user_id);
                    CREATE TABLE assessment (
                        id TEXT PRIMARY KEY NOT NULL,
                        body TEXT NOT NULL,
                        updated_at_ms INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    CREATE TABLE assessment_assignment (
                        user_id TEXT NOT NULL,
                        assessment_id TEXT NOT NULL REFERENCES assessment(id),
                        assigned_at_ms INTEGER NOT NULL,
                        submitted_at_ms INTEGER,
                        PRIMARY KEY (user_id, assessment_id)
                    ) WITHOUT ROWID;
                    CREATE TABLE assessment_answer (
                        user_id TEXT NOT NULL,
                        assessment_id TEXT NOT NULL,
                        question_id TEXT NOT NULL,
                        value TEXT NOT NULL,
                        updated_at_ms INTEGER NOT NULL,
                        PRIMARY KEY (user_id, assessment_id, question_id)
                    ) WITHOUT ROWID;
                    CREATE TABLE assessment_submission (
                        id TEXT PRIMARY KEY NOT NULL,
                        user_id TEXT NOT NULL,
                        assessment_id TEXT NOT NULL,
                        body TEXT NOT NULL,
                        submitted_at_ms INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    CREATE INDEX assessment_submission_assessment ON assessment_submission(assessment_id, submitted_at_ms);
                    CREATE INDEX assessment_submission_user ON assessment_submission(user_id, submitted_at_ms);
                    """)
        }
    }
}
