import AsyncHTTPClient
import GRDB
import GondolaDomain
import GondolaHub
import GondolaPostgres

/// Push notifications to phones whose app is not connected: the devices users register
/// (`device.register`, `device.unregister`), what they want pushed
/// (`notifications.settings`), and the notices every domain posts, queued in a durable
/// outbox and sent through APNs and FCM when their credentials are configured
/// (`PushConfiguration`).
public struct PushDomain: Domain {
    public let name = "push"
    public var namespaces: Set<String> { [] }
    public var settingKeys: [ConfigurationKeyInfo] { PushConfiguration.keys }
    let settings: DomainSettings

    public init(settings: DomainSettings = DomainSettings()) {
        self.settings = settings
    }

    public func registerMigrations(in migrator: inout DatabaseMigrator) {
        PushSchema.registerMigrations(in: &migrator)
    }

    public func registerPostgresMigrations(in migrator: inout PostgresMigrator) {
        PushSchema.register(in: &migrator)
    }

    public func checkSettings() throws(DomainSetupError) { _ = try PushConfiguration(settings) }

    public func install(in context: DomainContext) async throws -> InstalledDomain {
        let configuration = try PushConfiguration(settings)
        let (repository, queue): (any DeviceRepository, any PushQueue) =
            switch context.storage {
            case let .sqlite(database): (SQLiteDeviceRepository(database: database), SQLitePushQueue(database: database))
            case let .postgres(pool, _): (PostgresDeviceRepository(pool: pool), PostgresPushQueue(pool: pool))
            }
        let devices = DeviceService(repository: repository, logger: context.logger)
        var registrations = NodeRegistrations()
        devices.registerRPC(in: &registrations)
        let client = configuration.isEmpty ? nil : HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration.httpClient)
        let senders: [PushPlatform: any PushSender]
        do {
            senders = try await configuration.senders(client: client)
        } catch {
            try? await client?.shutdown()
            throw error
        }
        configuration.logMissing(context.logger)
        let outbox = PushOutbox(
            queue: queue, senders: senders, devices: repository, rate: UserPushRate(perMinute: configuration.perUserPerMinute),
            metrics: PushMetrics(factory: context.metrics), logger: context.logger)
        let notifier = PushNotifier(node: context.node, devices: repository, outbox: outbox, logger: context.logger)
        if !senders.isEmpty { context.notices.attach { notifier.post($0) } }
        return InstalledDomain(
            service: PushService(devices: devices, notifier: notifier, outbox: outbox), registrations: registrations,
            background: {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await outbox.run() }
                    group.addTask { await notifier.run() }
                }
                for sender in senders.values { await sender.shutdown() }
                try? await client?.shutdown()
            })
    }
}

/// The push domain's services, for embedding programs and tests: devices and settings, the
/// notifier domains' notices reach, and the outbox.
public final class PushService: Sendable {
    public let devices: DeviceService
    let notifier: PushNotifier
    let outbox: PushOutbox

    init(devices: DeviceService, notifier: PushNotifier, outbox: PushOutbox) {
        self.devices = devices
        self.notifier = notifier
        self.outbox = outbox
    }

    /// Notifications not yet sent nor given up.
    public func pendingCount() async throws -> Int { try await outbox.pendingCount() }
}
