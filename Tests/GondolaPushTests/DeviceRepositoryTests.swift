import Foundation
import GondolaPostgres
import GondolaStore
import GondolaTestSupport
import Testing

@testable import GondolaPush

/// Where a test keeps the push module's tables.
enum PushTestStorage {
    case sqlite(GondolaDatabase)
    case postgres(PostgresPool)
}

/// Empty storage of `engine` with the push module's tables.
func pushStorage(_ engine: Engine) async throws -> PushTestStorage {
    switch engine {
    case .sqlite:
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-push-\(UUID().uuidString)/db.sqlite").path
        return .sqlite(try GondolaDatabase(path: path, domainMigrations: PushSchema.registerMigrations))
    case .postgres:
        return await .postgres(try TestPostgres.freshDatabase(PushSchema.register))
    }
}

/// The device repository of `engine` on empty storage.
func deviceRepository(_ engine: Engine) async throws -> any DeviceRepository {
    switch try await pushStorage(engine) {
    case let .sqlite(database): SQLiteDeviceRepository(database: database)
    case let .postgres(pool): PostgresDeviceRepository(pool: pool)
    }
}

/// What both engines must do alike with devices and settings.
@Suite struct DeviceRepositoryTests {
    static func device(_ token: String, _ user: String, at time: Int64, platform: PushPlatform = .apns) -> PushDevice {
        PushDevice(token: token, platform: platform, user: user, app: time.isMultiple(of: 2) ? "app.even" : nil, locale: "de-CH", registeredAt: time)
    }

    @Test(arguments: Engine.allCases)
    func registrationsUpdateMoveAndTrimPerUser(engine: Engine) async throws {
        let repository = try await deviceRepository(engine)
        #expect(try await repository.register(Self.device("t1", "ann", at: 1), maxPerUser: 2) == 0)
        #expect(try await repository.register(Self.device("t2", "ann", at: 2, platform: .fcm), maxPerUser: 2) == 0)
        #expect(try await repository.devices(of: "ann") == [Self.device("t1", "ann", at: 1), Self.device("t2", "ann", at: 2, platform: .fcm)])
        // Again: updated, not doubled; a third drops the oldest.
        #expect(try await repository.register(Self.device("t1", "ann", at: 3), maxPerUser: 2) == 0)
        #expect(try await repository.register(Self.device("t3", "ann", at: 4), maxPerUser: 2) == 1)
        #expect(try await repository.devices(of: "ann").map(\.token) == ["t1", "t3"])
        // A token registered by someone else moves.
        #expect(try await repository.register(Self.device("t1", "bob", at: 5), maxPerUser: 2) == 0)
        #expect(try await repository.devices(of: "ann").map(\.token) == ["t3"])
        #expect(try await repository.devices(of: "bob") == [Self.device("t1", "bob", at: 5)])
        #expect(try await !repository.unregister(token: "t1", user: "ann"))
        #expect(try await repository.unregister(token: "t1", user: "bob"))
        try await repository.remove(token: "t3")
        #expect(try await repository.devices(of: "ann").isEmpty)
        #expect(try await repository.devices(of: "bob").isEmpty)
    }

    @Test(arguments: Engine.allCases)
    func settingsRoundTripWithAndWithoutQuietHours(engine: Engine) async throws {
        let repository = try await deviceRepository(engine)
        #expect(try await repository.settings(of: "ann") == NotificationSettings())
        var settings = NotificationSettings()
        settings.chats = false
        settings.quietHours = QuietHours(start: 1320, end: 420, utcOffsetMinutes: -300)
        try await repository.setSettings(settings, of: "ann")
        #expect(try await repository.settings(of: "ann") == settings)
        settings.quietHours = nil
        settings.invites = false
        try await repository.setSettings(settings, of: "ann")
        #expect(try await repository.settings(of: "ann") == settings)
        #expect(try await repository.settings(of: "bob") == NotificationSettings())
    }
}
