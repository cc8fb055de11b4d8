import GondolaProtocol
import GondolaServer
import Testing

@testable import GondolaPush

/// Devices and notification settings over a real socket: registration, re-registration,
/// a token changing hands, the per-user limit, unregistering, the settings' partial
/// updates, and bad input answered 107 with nothing stored.
@Suite struct PushDeviceTests {
    static let apnsToken = String(repeating: "ab12", count: 16)
    static let fcmToken = "dGVzdC1kZXZpY2U6APA91bH" + String(repeating: "x_Y-z", count: 28)

    /// Expects `method` with `data` to answer 107 with a message that starts with `field`.
    static func expectRefused(_ client: LiveClient, _ method: String, _ data: JSON, naming field: String) async {
        do {
            _ = try await client.rpc(method, data)
            Issue.record("accepted \(data)")
        } catch let failure as RPCFailure {
            #expect(failure.code == 107)
            #expect(failure.message.hasPrefix("bad request: \(field)"), "\(failure.message)")
        } catch {
            Issue.record("\(error)")
        }
    }

    static func devices(_ server: RunningServer, of user: String) async throws -> [PushDevice] {
        let devices = try #require(server.server.service(PushService.self)).devices
        return try await devices.devices(of: user)
    }

    @Test func devicesAreRegisteredOncePerTokenAndMoveWithTheirToken() async throws {
        let server = try await RunningServer.start()
        let anna = try await server.client("anna")
        let ben = try await server.client("ben")
        let registered = try await anna.rpc("device.register", ["platform": "apns", "token": .string(Self.apnsToken.uppercased()), "locale": "fr"])
        #expect(registered == ["token": .string(Self.apnsToken), "platform": "apns", "devices": 1])
        _ = try await anna.rpc("device.register", ["platform": "fcm", "token": .string(Self.fcmToken), "app": "com.example.trips"])
        // The same token again is the same device.
        #expect(try await anna.rpc("device.register", ["platform": "apns", "token": .string(Self.apnsToken)])["devices"] == 2)
        #expect(try await Self.devices(server, of: "anna").map(\.platform) == [.fcm, .apns])
        #expect(try await Self.devices(server, of: "anna").first?.app == "com.example.trips")
        // Someone else cannot remove it; registering it moves it (the phone changed hands).
        #expect(try await ben.rpc("device.unregister", ["token": .string(Self.apnsToken)]) == ["unregistered": false])
        _ = try await ben.rpc("device.register", ["platform": "apns", "token": .string(Self.apnsToken)])
        #expect(try await Self.devices(server, of: "anna").map(\.token) == [Self.fcmToken])
        #expect(try await Self.devices(server, of: "ben").map(\.token) == [Self.apnsToken])
        #expect(try await ben.rpc("device.unregister", ["token": .string(Self.apnsToken)]) == ["unregistered": true])
        #expect(try await Self.devices(server, of: "ben").isEmpty)
        try await server.stop()
    }

    @Test func aUsersDevicesBeyondTheLimitDropTheOldest() async throws {
        let server = try await RunningServer.start()
        let client = try await server.client("many")
        let tokens = (0...DeviceService.maxDevicesPerUser).map { String(format: "%064x", $0 + 1) }
        for token in tokens {
            _ = try await client.rpc("device.register", ["platform": "apns", "token": .string(token)])
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(try await Self.devices(server, of: "many").map(\.token) == Array(tokens.dropFirst()))
        try await server.stop()
    }

    @Test(
        arguments: [
            (["platform": "sms", "token": .string(apnsToken)], "platform"),
            (["token": .string(apnsToken)], "platform"),
            (["platform": "apns"], "token"),
            (["platform": "apns", "token": .string(String(repeating: "g", count: 64))], "token"),
            (["platform": "apns", "token": .string(String(repeating: "a", count: 63))], "token"),
            (["platform": "apns", "token": .string(String(repeating: "a", count: 62))], "token"),
            (["platform": "apns", "token": .string(fcmToken)], "token"),
            (["platform": "fcm", "token": "short:token"], "token"),
            (["platform": "fcm", "token": .string(fcmToken + "/")], "token"),
            (["platform": "apns", "token": .string(apnsToken), "locale": "fr CH"], "locale"),
            (["platform": "apns", "token": .string(apnsToken), "app": 7], "app"),
        ] as [(JSON, String)])
    func badRegistrationsAnswer107NamingTheFieldAndStoreNothing(data: JSON, field: String) async throws {
        let server = try await RunningServer.start()
        let client = try await server.client("careless")
        await Self.expectRefused(client, "device.register", data, naming: field)
        #expect(try await Self.devices(server, of: "careless").isEmpty)
        #expect(try await client.rpc("server.time")["ts"] != nil, "the connection keeps serving")
        try await server.stop()
    }

    @Test func settingsChangeOnlyWhatIsGivenAndQuietHoursCanBeCleared() async throws {
        let server = try await RunningServer.start()
        let client = try await server.client("sleeper")
        let defaults: JSON = ["chats": true, "broadcasts": true, "invites": true, "quiet_hours": .null]
        #expect(try await client.rpc("notifications.settings") == defaults)
        let quiet: JSON = ["start": "22:30", "end": "07:00", "utc_offset_minutes": 60]
        #expect(
            try await client.rpc("notifications.settings", ["chats": false, "quiet_hours": quiet])
                == ["chats": false, "broadcasts": true, "invites": true, "quiet_hours": quiet])
        #expect(
            try await client.rpc("notifications.settings", ["invites": false])
                == ["chats": false, "broadcasts": true, "invites": false, "quiet_hours": quiet])
        #expect(try await client.rpc("notifications.settings", ["quiet_hours": .null, "chats": true, "invites": true]) == defaults)
        try await server.stop()
    }

    @Test(
        arguments: [
            (["chats": "no"], "chats"),
            (["quiet_hours": ["start": "24:00", "end": "07:00"]], "quiet_hours.start"),
            (["quiet_hours": ["start": "7:00", "end": "08:00"]], "quiet_hours.start"),
            (["quiet_hours": ["start": "22:00", "end": "22:00"]], "quiet_hours.end"),
            (["quiet_hours": ["start": "22:00"]], "quiet_hours.end"),
            (["quiet_hours": ["start": "22:00", "end": "06:00", "utc_offset_minutes": 900]], "quiet_hours.utc_offset_minutes"),
            (["quiet_hours": "night"], "quiet_hours"),
        ] as [(JSON, String)])
    func badSettingsAnswer107NamingTheFieldAndChangeNothing(data: JSON, field: String) async throws {
        let server = try await RunningServer.start()
        let client = try await server.client("fiddler")
        _ = try await client.rpc("notifications.settings", ["broadcasts": false])
        await Self.expectRefused(client, "notifications.settings", data, naming: field)
        #expect(try await client.rpc("notifications.settings") == ["chats": true, "broadcasts": false, "invites": true, "quiet_hours": .null])
        try await server.stop()
    }

    @Test func quietHoursWrapPastMidnightInTheUsersTime() {
        // 22:00 to 07:00 at UTC+1: 21:00 to 06:00 UTC.
        let night = QuietHours(start: 22 * 60, end: 7 * 60, utcOffsetMinutes: 60)
        let midnightUTC: Int64 = 1_790_035_200_000  // a midnight, UTC
        func at(_ hours: Int, _ minutes: Int = 0) -> Int64 { midnightUTC + Int64(hours * 60 + minutes) * 60_000 }
        #expect(!night.contains(at(20, 59)))
        #expect(night.contains(at(21)))
        #expect(night.contains(at(23, 30)))
        #expect(night.contains(at(5, 59)))
        #expect(!night.contains(at(6)))
        let lunch = QuietHours(start: 12 * 60, end: 13 * 60, utcOffsetMinutes: -300)
        #expect(lunch.contains(at(17, 30)) && !lunch.contains(at(12, 30)))
    }
}
