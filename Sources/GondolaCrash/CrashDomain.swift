import GRDB
import GondolaDomain
import GondolaHub
import GondolaPostgres
import GondolaProtocol
import GondolaServices

/// The Crash Assistant app's backend as a domain: crashes detected by telematics or
/// started by hand, the injuries, notes and photos collected about them as drafts, and
/// their live channel `crash:<id>`.
public struct CrashDomain: Domain {
    public let name = "crash"
    public var namespaces: Set<String> { ["crash"] }

    static let smsWebhookURL = DomainSettingKey.httpURL(
        "sms_webhook_url", doc: "the SMS gateway's webhook crash texts go through; the texts are logged while it is empty")
    static let smsWebhookToken = DomainSettingKey.text("sms_webhook_token", doc: "the SMS gateway's bearer token")
    static let linkTemplate = DomainSettingKey.text(
        "crash_link_template", default: "crashassistant://crash/{id}", doc: "the deep link a crash text carries, where `{id}` becomes the crash id"
    ) { template in template.contains("{id}") ? nil : "must contain {id}, got '\(template)'" }
    public var settingKeys: [ConfigurationKeyInfo] { [Self.smsWebhookURL.info, Self.smsWebhookToken.info, Self.linkTemplate.info] }
    let settings: DomainSettings

    public init(settings: DomainSettings) {
        self.settings = settings
    }

    public func registerMigrations(in migrator: inout DatabaseMigrator) {
        CrashSchema.registerMigrations(in: &migrator)
    }

    public func registerPostgresMigrations(in migrator: inout PostgresMigrator) {
        CrashPostgresSchema.register(in: &migrator)
    }

    /// The settings' values, checked.
    private func values() throws(DomainSetupError) -> (smsWebhookURL: String, smsWebhookToken: String, linkTemplate: String) {
        let smsWebhookURL = try settings.value(of: Self.smsWebhookURL)
        let smsWebhookToken = try settings.value(of: Self.smsWebhookToken)
        let linkTemplate = try settings.value(of: Self.linkTemplate)
        return (smsWebhookURL, smsWebhookToken, linkTemplate)
    }

    public func checkSettings() throws(DomainSetupError) { _ = try values() }

    public func install(in context: DomainContext) async throws -> InstalledDomain {
        let (smsWebhookURL, smsWebhookToken, linkTemplate) = try values()
        let (repository, files) = try Self.storage(context)
        let texts: any TextMessageSender =
            smsWebhookURL.isEmpty
            ? LoggedTextMessages(logger: context.logger)
            : WebhookTextMessages(url: smsWebhookURL, token: smsWebhookToken)
        let crashes = CrashService(
            node: context.node, repository: repository, files: files,
            links: context.links, texts: texts, outboundCalls: context.storage.outboundCalls, linkTemplate: linkTemplate, notices: context.notices,
            metrics: context.metrics, logger: context.logger)
        try await crashes.sweepFiles()
        var registrations = NodeRegistrations()
        crashes.registerRPC(in: &registrations)
        registrations.provide(CrashChannel.options, by: CrashChannel(crashes: crashes))
        var serverMethods = ServerAPIMethods()
        crashes.registerServerAPI(in: &serverMethods)
        let photos = CrashPhotoEndpoints(crashes: crashes, authentication: context.authentication)
        return InstalledDomain(
            service: crashes,
            registrations: registrations,
            serverMethods: serverMethods,
            routes: { router in photos.addRoutes(to: router) },
            background: { await crashes.textCalls.run() })
    }
}

extension CrashDomain {
    /// The repository and file store of the context's storage: SQLite with files in the
    /// data folder, or PostgreSQL with the files in it too (cluster mode).
    static func storage(_ context: DomainContext) throws -> (any CrashRepository, any CrashFiles) {
        switch context.storage {
        case let .sqlite(database):
            let repository = SQLiteCrashRepository(database: database)
            do {
                return (repository, LocalCrashFiles(folder: try FileStore(folder: context.dataFolder + "/files/crash"), repository: repository))
            } catch {
                throw DomainSetupError("crash photo folder \(context.dataFolder)/files/crash: \(error)")
            }
        case let .postgres(pool, _):
            return (PostgresCrashRepository(pool: pool), PostgresCrashFiles(pool: pool))
        }
    }
}

/// The crash domain's server API methods.
extension CrashService {
    func registerServerAPI(in api: inout ServerAPIMethods) {
        api.register(
            "crash_detected", DetectedCrash.self, CrashAnswer.self,
            rules:
                "pushes `{\"type\":\"crash.detected\",\"crash\",\"link\"}` on `personal:#<user>` and texts the deep link (`crash_link_template`, default `crashassistant://crash/{id}`) to `phone` or the user's `crash.phone` number through `sms_webhook_url` (`POST {\"to\",\"text\"}` with `Authorization: Bearer <sms_webhook_token>`), in the background after the answer from a durable queue that outlives a restart (10 s per attempt, up to 8 attempts; see \"Calls to outside services\"); without a gateway the text is logged. A text that fails does not undo the crash",
            crashDetected)
    }

    /// Answers `crash_detected`.
    func crashDetected(_ request: DetectedCrash) async throws(HubError) -> CrashAnswer {
        let crash = try await create(owner: request.user, source: .detected, place: request.place, occurredAt: request.occurredAt)
        let sms = await notifyDetected(crash, phone: request.phone)
        return CrashAnswer(crash: crash, photos: [], sms: sms)
    }
}

/// `crash_detected`: a telematics backend saw a crash of `user`; it is recorded for the
/// user, who is told on `personal:#<user>` and by SMS (to `phone`, else to the number the
/// user gave with `crash.phone`).
struct DetectedCrash: RequestContract {
    let user: String
    let phone: String?
    let place: CrashPlace?
    let occurredAt: Int64?

    init(_ fields: RequestFields) throws(HubError) {
        user = try fields.string("user", maxLength: 128)
        phone = try fields.noting("E.164").optionalString("phone", maxLength: 16).map { (phone) throws(HubError) in
            try CrashService.phone(phone)
        }
        (place, occurredAt) = (try CrashMoment.place(fields), try CrashMoment.time(fields))
    }
}
