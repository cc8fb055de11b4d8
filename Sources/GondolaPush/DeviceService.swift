import GondolaDomain
import GondolaHub
import GondolaProtocol
import Logging

/// Users' devices and notification settings: registration with the token checked for its
/// service's shape, at most `maxDevicesPerUser` per user (registering one more drops the
/// oldest), and the settings' partial updates.
public final class DeviceService: Sendable {
    /// A user's devices beyond this many are dropped, oldest first.
    public static let maxDevicesPerUser = 10

    let repository: any DeviceRepository
    let logger: Logger

    init(repository: any DeviceRepository, logger: Logger) {
        self.repository = repository
        self.logger = logger
    }

    /// Registers (or re-registers, or moves to `user`) the device with `token`.
    func register(token: String, platform: PushPlatform, app: String?, locale: String?, by user: String) async throws(HubError) -> PushDevice {
        let device = PushDevice(
            token: try DeviceTokenFormat.checked(token, for: platform), platform: platform, user: user, app: app,
            locale: locale, registeredAt: unixMilliseconds())
        let dropped = try await stored { try await repository.register(device, maxPerUser: Self.maxDevicesPerUser) }
        if dropped > 0 {
            logger.info("push devices over the limit dropped", metadata: ["user": "\(user)", "dropped": "\(dropped)"])
        }
        return device
    }

    /// Removes `user`'s device with `token`; answers false when the user has no such device.
    func unregister(token: String, by user: String) async throws(HubError) -> Bool {
        try await stored { try await repository.unregister(token: token, user: user) }
    }

    /// The devices of `user`, oldest first.
    public func devices(of user: String) async throws(HubError) -> [PushDevice] {
        try await stored { try await repository.devices(of: user) }
    }

    /// The settings of `user` with what `change` gives changed, stored when it changes any.
    func updateSettings(of user: String, with change: SettingsChange) async throws(HubError) -> NotificationSettings {
        let current = try await settings(of: user)
        let updated = current.updated(by: change)
        if updated != current { try await stored { try await repository.setSettings(updated, of: user) } }
        return updated
    }

    public func settings(of user: String) async throws(HubError) -> NotificationSettings {
        try await stored { try await repository.settings(of: user) }
    }

    /// Runs a repository call, turning its failure into an internal error that names it.
    private func stored<T>(_ body: () async throws -> T) async throws(HubError) -> T {
        do {
            return try await body()
        } catch {
            logger.error("push devices: storage failed", metadata: ["error": "\(error)"])
            throw .internalError("push devices: storage failed")
        }
    }
}
