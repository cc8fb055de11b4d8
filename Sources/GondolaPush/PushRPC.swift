import GondolaHub
import GondolaProtocol

/// The RPC methods of push notifications: `device.register {platform, token, app?, locale?}`,
/// `device.unregister {token}` and `notifications.settings {chats?, broadcasts?, invites?,
/// quiet_hours?}` (no members: the settings as they are).
struct PushRPC: Sendable {
    let devices: DeviceService

    func register(in registrations: inout NodeRegistrations) {
        registrations.register("device.register") { context, data in
            let fields = try RequestFields(data)
            let platform = try fields.choice("platform", PushPlatform.self)
            let device = try await devices.register(
                token: try fields.string("token", maxLength: DeviceTokenFormat.fcmLength.upperBound), platform: platform,
                app: try fields.optionalString("app", maxLength: 255), locale: try Self.locale(fields), by: context.user)
            return [
                "token": .string(device.token), "platform": .string(platform.rawValue),
                "devices": .int(Int64(try await devices.devices(of: context.user).count)),
            ]
        }
        registrations.register("device.unregister") { context, data in
            let token = try RequestFields(data).string("token", maxLength: DeviceTokenFormat.fcmLength.upperBound)
            return ["unregistered": .bool(try await devices.unregister(token: token, by: context.user))]
        }
        registrations.register("notifications.settings") { context, data in
            try await devices.updateSettings(of: context.user, with: try RequestFields(data ?? [:])).json
        }
    }

    /// A BCP 47 language tag's shape: letters, digits and hyphens, starting with a letter.
    private static func locale(_ fields: RequestFields) throws(HubError) -> String? {
        guard let locale = try fields.optionalString("locale", maxLength: 35) else { return nil }
        guard locale.first?.isLetter == true, locale.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            throw .badRequest("locale: expected a language tag such as 'fr' or 'de-CH', got '\(locale)'")
        }
        return locale
    }
}
