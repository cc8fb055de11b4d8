import AsyncHTTPClient
import Foundation
import GondolaDomain
import GondolaHub
import JWTKit
import Logging
import NIOSSL

/// The push domain's settings: APNs's and FCM's credentials, extra trusted certificates for
/// stand-ins of the services, and the notifications a user may get a minute. A service without
/// credentials sends nothing; the log says so once at start.
struct PushConfiguration: Sendable {
    static let apnsKeyFile = DomainSettingKey.text("apns_key_file", doc: "APNs token authentication's `.p8` key file; with it, the three below")
    static let apnsKeyID = DomainSettingKey.text("apns_key_id", doc: "the APNs key's id")
    static let apnsTeamID = DomainSettingKey.text("apns_team_id", doc: "the Apple team id")
    static let apnsTopic = DomainSettingKey.text("apns_topic", doc: "the app's bundle id")
    static let apnsEnvironment = DomainSettingKey.text(
        "apns_environment", default: "production", doc: "`production`, `sandbox`, or a base URL (a stand-in)")
    static let fcmServiceAccountFile = DomainSettingKey.text("fcm_service_account_file", doc: "the Firebase service account's JSON key")
    static let fcmBaseURL = DomainSettingKey.text("fcm_base_url", default: "https://fcm.googleapis.com", doc: "where FCM's HTTP v1 API is")
    static let caFile = DomainSettingKey.text("push_ca_file", doc: "PEM certificates trusted besides the system's (a stand-in's)")
    static let perUserPerMinute = DomainSettingKey.integer(
        "push_per_user_per_minute", default: 20, in: 1...600,
        doc: "notifications sent to one user's devices per minute; more wait for the next minute")
    static let keys =
        [
            apnsKeyFile, apnsKeyID, apnsTeamID, apnsTopic, apnsEnvironment, fcmServiceAccountFile, fcmBaseURL, caFile,
        ].map(\.info) + [perUserPerMinute.info]

    let apns: APNsCredentials?
    let fcm: (account: FCMServiceAccount, baseURL: String)?
    let caFile: String?
    let perUserPerMinute: Int

    init(_ settings: DomainSettings) throws(DomainSetupError) {
        perUserPerMinute = try settings.value(of: Self.perUserPerMinute)
        let ca = try settings.value(of: Self.caFile)
        if !ca.isEmpty, !FileManager.default.isReadableFile(atPath: ca) { throw DomainSetupError("'push_ca_file': cannot read '\(ca)'") }
        caFile = ca.isEmpty ? nil : ca
        apns = try Self.apns(settings)
        let accountFile = try settings.value(of: Self.fcmServiceAccountFile)
        if accountFile.isEmpty {
            fcm = nil
        } else {
            let text = try Self.read("fcm_service_account_file", accountFile)
            let baseURL = try Self.baseURL("fcm_base_url", try settings.value(of: Self.fcmBaseURL))
            do throws(PushSetupError) {
                fcm = (try FCMServiceAccount(json: text), baseURL)
            } catch {
                throw DomainSetupError("'fcm_service_account_file' \(accountFile): \(error)")
            }
        }
    }

    var isEmpty: Bool { apns == nil && fcm == nil }

    /// The system's trust roots and the extra trusted certificates if any.
    var tls: TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.additionalTrustRoots = [.file(caFile)] }
        return tls
    }

    /// For FCM's token exchange: HTTP/2 where the service offers it.
    var httpClient: HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(30))
        return configuration
    }

    /// A sender for each service with credentials, each on a connection of its own
    /// (`client` exchanges FCM's access tokens).
    func senders(client: HTTPClient?) async throws -> [PushPlatform: any PushSender] {
        guard let client else { return [:] }
        var senders: [PushPlatform: any PushSender] = [:]
        if let apns {
            senders[.apns] = APNsSender(
                connection: try connection(to: apns.baseURL), credentials: apns,
                providerToken: await APNsProviderToken(credentials: apns))
        }
        if let fcm {
            senders[.fcm] = FCMSender(
                connection: try connection(to: fcm.baseURL), account: fcm.account,
                tokens: await FCMAccessTokens(account: fcm.account, client: client))
        }
        return senders
    }

    private func connection(to baseURL: String) throws -> ServiceConnection {
        guard let address = ServiceConnection.Address(baseURL: baseURL) else { throw DomainSetupError("push: cannot reach '\(baseURL)'") }
        return try ServiceConnection(address: address, tls: tls)
    }

    /// Says once which services will not be used.
    func logMissing(_ logger: Logger) {
        if isEmpty {
            logger.notice("push: no APNs or FCM credentials (apns_key_file, fcm_service_account_file): notifications are not sent")
        } else if apns == nil {
            logger.notice("push: no APNs credentials (apns_key_file): notifications to iOS devices are not sent")
        } else if fcm == nil {
            logger.notice("push: no FCM credentials (fcm_service_account_file): notifications to Android devices are not sent")
        }
    }

    private static func apns(_ settings: DomainSettings) throws(DomainSetupError) -> APNsCredentials? {
        let keyFile = try settings.value(of: apnsKeyFile)
        guard !keyFile.isEmpty else { return nil }
        let pem = try read("apns_key_file", keyFile)
        let key: ES256PrivateKey
        do {
            key = try ES256PrivateKey(pem: pem)
        } catch {
            throw DomainSetupError("'apns_key_file' \(keyFile): not a P-256 private key in PEM (the .p8 file from Apple)")
        }
        func required(_ key: DomainSettingKey<String>) throws(DomainSetupError) -> String {
            let value = try settings.value(of: key)
            guard !value.isEmpty else { throw DomainSetupError("'\(key.info.name)' is required with apns_key_file") }
            return value
        }
        let keyID = try required(apnsKeyID)
        let teamID = try required(apnsTeamID)
        let topic = try required(apnsTopic)
        let environment = try settings.value(of: apnsEnvironment)
        let baseURL =
            switch environment {
            case "production": APNsCredentials.production
            case "sandbox": APNsCredentials.sandbox
            default: try baseURL("apns_environment", environment)
            }
        return APNsCredentials(key: key, keyID: keyID, teamID: teamID, topic: topic, baseURL: baseURL)
    }

    private static func read(_ key: String, _ path: String) throws(DomainSetupError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else { throw DomainSetupError("'\(key)': cannot read '\(path)'") }
        return String(decoding: data, as: UTF8.self)
    }

    /// An `https://` (or `http://`) address without a trailing slash.
    private static func baseURL(_ key: String, _ value: String) throws(DomainSetupError) -> String {
        guard ServiceConnection.Address(baseURL: value) != nil else {
            let expected = key == "apns_environment" ? "production, sandbox or an https:// address" : "an https:// address"
            throw DomainSetupError("'\(key)' expected \(expected), got '\(value)'")
        }
        return value.hasSuffix("/") ? String(value.dropLast()) : value
    }
}
