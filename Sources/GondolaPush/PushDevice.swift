import GondolaHub

/// The service that wakes a phone: Apple's APNs or Google's FCM.
public enum PushPlatform: String, CaseIterable, Sendable {
    case apns
    case fcm
}

/// A phone a user registered for push notifications, by its service's token.
public struct PushDevice: Sendable, Equatable {
    public let token: String
    public let platform: PushPlatform
    public let user: String
    /// The app's bundle or package id, when the user's devices run several apps.
    public let app: String?
    /// The language the notifications' text is chosen for (`fr`, `de-CH`).
    public let locale: String?
    public let registeredAt: Int64

    public init(token: String, platform: PushPlatform, user: String, app: String?, locale: String?, registeredAt: Int64) {
        self.token = token
        self.platform = platform
        self.user = user
        self.app = app
        self.locale = locale
        self.registeredAt = registeredAt
    }
}

/// The shapes of the two services' tokens, checked before a token is stored, so that a
/// typo or a token of the wrong service is refused at registration instead of failing
/// every push later.
enum DeviceTokenFormat {
    /// APNs device tokens are hexadecimal; 32 bytes today, documented as variable length.
    static let apnsLength = 64...200
    /// FCM registration tokens are URL-safe text with a colon (about 160 characters today).
    static let fcmLength = 32...4096

    /// `token` if it has the shape `platform`'s tokens have; a 107 naming `token` otherwise.
    static func checked(_ token: String, for platform: PushPlatform) throws(HubError) -> String {
        switch platform {
        case .apns:
            guard apnsLength.contains(token.utf8.count), token.utf8.count.isMultiple(of: 2), token.allSatisfy({ $0.isASCII && $0.isHexDigit }) else {
                throw .badRequest(
                    "token: an APNs device token is \(apnsLength.lowerBound) to \(apnsLength.upperBound) hexadecimal digits, an even count")
            }
            return token.lowercased()
        case .fcm:
            guard fcmLength.contains(token.utf8.count), token.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_:".contains($0)) }) else {
                throw .badRequest(
                    "token: an FCM registration token is \(fcmLength.lowerBound) to \(fcmLength.upperBound) characters of A-Z, a-z, 0-9, '-', '_' and ':'"
                )
            }
            return token
        }
    }
}
