import GondolaDomain
import GondolaPostgres
import GRDB

/// Push notifications to phones whose app is not connected: the devices users register
/// (`device.register`, `device.unregister`) and what they want pushed
/// (`notifications.settings`).
public struct PushDomain: Domain {
    public let name = "push"
    public var namespaces: Set<String> { [] }

    public init() {}

    public func registerMigrations(in migrator: inout DatabaseMigrator) {
        PushSchema.registerMigrations(in: &migrator)
    }

    public func registerPostgresMigrations(in migrator: inout PostgresMigrator) {
        PushSchema.register(in: &migrator)
    }

    public func install(in context: DomainContext) async throws -> InstalledDomain {
        let repository: any DeviceRepository = switch context.storage {
        case let .sqlite(database): SQLiteDeviceRepository(database: database)
        case let .postgres(pool, _): PostgresDeviceRepository(pool: pool)
        }
        let devices = DeviceService(repository: repository, logger: context.logger)
        PushRPC(devices: devices).register(on: context.node.rpc)
        return InstalledDomain(service: devices)
    }
}
