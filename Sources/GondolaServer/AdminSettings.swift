import Foundation
import GondolaHub

/// The admin page's settings (`admin`, `admin_password`, `admin_secret`, `admin_web_path`,
/// `admin_external`), named as in Centrifugo. The page is served on the internal listener when
/// there is one (`internal_listen`), else on the public one; `admin_external` puts it on the
/// public one anyway. It never runs without a password and a secret: Centrifugo's
/// `admin_insecure` is refused.
public struct AdminSettings: Sendable, Equatable, ConfigurationDefaults {
    public static var defaults: AdminSettings { AdminSettings() }

    /// Whether the page and its endpoints are served (`admin`).
    public var enabled = false
    /// What signs in (`admin_password`).
    public var password = ""
    /// What signs the page's tokens (`admin_secret`): changing it signs every page out.
    public var secret = ""
    /// The page's files (`admin_web_path`), served at `/admin/`.
    public var webPath = "web/admin"
    /// Serve the page on the public listener even when an internal one exists (`admin_external`).
    public var external = false

    public init() {}

    /// The configuration keys these settings read; `admin_insecure` is taken only to refuse `true`.
    static let keys: [ConfigurationKey<AdminSettings>] = [
        .boolean(
            "admin", \.enabled,
            doc:
                "serves the admin page at `/admin/` ([operations.md](operations.md#admin-page)) on the internal listener, or on `listen` when there is none"
        ),
        .text("admin_password", \.password, doc: "the admin page's password; required with `admin`"),
        .text(
            "admin_secret", \.secret,
            doc: "signs the admin page's sign-ins (at least 32 bytes); required with `admin`; changing it signs everyone out"),
        .text("admin_web_path", \.webPath, doc: "the admin page's files"),
        .boolean("admin_external", \.external, doc: "serve the admin page on `listen` even when `internal_listen` is set"),
        ConfigurationKey("admin_insecure", type: "boolean", default: "false", doc: "Centrifugo's admin without a password: refused when `true`") {
            (field, _) throws(ConfigurationError) in
            guard try !field.bool() else { throw field.error("is not supported: the admin page always needs 'admin_password' and 'admin_secret'") }
        },
    ]

    /// Stops the start when the page is on without what it needs, or its files are missing.
    func check() throws(ConfigurationError) {
        guard enabled else { return }
        guard !password.isEmpty, !secret.isEmpty else {
            throw ConfigurationError("'admin' needs both 'admin_password' and 'admin_secret' (the page never runs without them)")
        }
        guard secret.utf8.count >= 32 else {
            throw ConfigurationError("'admin_secret' must be at least 32 bytes long (it signs the page's tokens), got \(secret.utf8.count)")
        }
        let index = URL(fileURLWithPath: webPath).appendingPathComponent("index.html").path
        guard FileManager.default.isReadableFile(atPath: index) else {
            throw ConfigurationError("'admin_web_path' must be a folder with the page's index.html; \(index) cannot be read")
        }
    }
}
