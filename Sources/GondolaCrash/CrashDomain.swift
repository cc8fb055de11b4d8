import GondolaDomain
import GondolaHub
import GondolaProtocol
import GondolaServices
import GRDB

/// The Crash Assistant app's backend as a domain: crashes detected by telematics or
/// started by hand, the injuries, notes and photos collected about them as drafts, and
/// their live channel `crash:<id>`.
public struct CrashDomain: Domain {
    public let name = "crash"
    public var namespaces: Set<String> { ["crash"] }

    public init() {}

    public func registerMigrations(in migrator: inout DatabaseMigrator) {
        CrashSchema.registerMigrations(in: &migrator)
    }

    public func install(in context: DomainContext) async throws -> InstalledDomain {
        let files: FileStore
        do {
            files = try FileStore(folder: context.dataFolder + "/files/crash")
        } catch {
            throw DomainSetupError("crash photo folder \(context.dataFolder)/files/crash: \(error)")
        }
        let crashes = CrashService(node: context.node, repository: CrashRepository(database: context.database), files: files,
                                   links: context.links, logger: context.logger)
        try crashes.sweepFiles()
        CrashRPC(crashes: crashes).register(on: context.node.rpc)
        context.node.provide(CrashChannel.options, by: CrashChannel(crashes: crashes))
        let photos = CrashPhotoEndpoints(crashes: crashes, authentication: context.authentication)
        return InstalledDomain(
            service: crashes,
            serverMethods: ["crash_detected": { body throws(HubError) in try CrashServerAPI.detected(body, crashes: crashes) }],
            routes: { router in photos.addRoutes(to: router) })
    }
}

/// The crash domain's server API methods.
enum CrashServerAPI {
    /// `crash_detected {user, lat, lon, ts}`: a telematics backend saw a crash; it is
    /// recorded for the user, who is told on `personal:#<user>`.
    static func detected(_ body: JSON, crashes: CrashService) throws(HubError) -> JSON {
        let fields = try RequestFields(body)
        let user = try fields.string("user", maxLength: 128)
        let crash = try crashes.create(owner: user, source: .detected, place: try CrashRPC.place(fields), occurredAt: try CrashRPC.time(fields))
        crashes.notifyDetected(crash)
        return CrashJSON.crash(crash, photos: [])
    }
}
