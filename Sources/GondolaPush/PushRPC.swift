import GondolaHub
import GondolaProtocol

/// The RPC methods of push notifications: `device.register {platform, token, app?, locale?}`,
/// `device.unregister {token}` and `notifications.settings {chats?, broadcasts?, invites?,
/// quiet_hours?}` (no members: the settings as they are).
extension DeviceService {
    func registerRPC(in registrations: inout NodeRegistrations) {
        registrations.register("device.register", DeviceRegistration.self, DeviceRegistered.self, rules: "", deviceRegister)
        registrations.register("device.unregister", DeviceReference.self, DeviceUnregistered.self, rules: "", deviceUnregister)
        registrations.register(
            "notifications.settings", SettingsChange.self, NotificationSettings.self, rules: "the whole settings after the change",
            notificationsSettings)
    }

    /// Answers `device.register`.
    func deviceRegister(_ context: RPCContext, _ request: DeviceRegistration) async throws -> DeviceRegistered {
        let device = try await register(
            token: request.token, platform: request.platform, app: request.app, locale: request.locale, by: context.user)
        return DeviceRegistered(token: device.token, platform: request.platform, devices: try await devices(of: context.user).count)
    }

    /// Answers `device.unregister`.
    func deviceUnregister(_ context: RPCContext, _ request: DeviceReference) async throws -> DeviceUnregistered {
        DeviceUnregistered(unregistered: try await unregister(token: request.token, by: context.user))
    }

    /// Answers `notifications.settings`.
    func notificationsSettings(_ context: RPCContext, _ change: SettingsChange) async throws -> NotificationSettings {
        try await updateSettings(of: context.user, with: change)
    }
}

/// `device.register`'s answer: the stored token and how many devices the user has.
struct DeviceRegistered: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [
        .string("token", "as stored (APNs tokens lower-cased)") { $0.token }, .string("platform") { $0.platform.rawValue },
        .integer("devices", "the user's device count") { Int64($0.devices) },
    ]
    let token: String
    let platform: PushPlatform
    let devices: Int
}

/// `device.unregister`'s answer.
struct DeviceUnregistered: ResponseContract, AnswerObject {
    static let members: [AnswerMember<Self>] = [.boolean("unregistered", "false for a token that is not the caller's") { $0.unregistered }]
    let unregistered: Bool
}

/// `device.register`: a device's token for its push service.
struct DeviceRegistration: RequestContract {
    let platform: PushPlatform
    let token: String
    let app: String?
    let locale: String?

    init(_ fields: RequestFields) throws(HubError) {
        platform = try fields.choice("platform", PushPlatform.self)
        token = try fields.noting("the service's token shape").string("token", maxLength: DeviceTokenFormat.fcmLength.upperBound)
        app = try fields.noting("the app's bundle or package id").optionalString("app", maxLength: 255)
        locale = try Self.locale(fields)
    }

    /// A BCP 47 language tag's shape: letters, digits and hyphens, starting with a letter.
    private static func locale(_ fields: RequestFields) throws(HubError) -> String? {
        guard let locale = try fields.noting("a language tag such as `fr` or `de-CH`").optionalString("locale", maxLength: 35) else { return nil }
        guard locale.first?.isLetter == true, locale.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            throw .badRequest("locale: expected a language tag such as 'fr' or 'de-CH', got '\(locale)'")
        }
        return locale
    }
}

/// `device.unregister`: `{token}`.
struct DeviceReference: RequestContract {
    let token: String
    init(_ fields: RequestFields) throws(HubError) { token = try fields.string("token", maxLength: DeviceTokenFormat.fcmLength.upperBound) }
}
