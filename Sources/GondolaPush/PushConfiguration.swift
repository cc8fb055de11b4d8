import AsyncHTTPClient
import Foundation
import GondolaDomain
import JWTKit
import Logging
import NIOSSL

/// The push domain's settings: APNs credentials (`apns_key_file`, the `.p8` key; `apns_key_id`;
/// `apns_team_id`; `apns_topic`, the app's bundle id; `apns_environment`: `production`,
/// `sandbox` or a base URL), FCM's (`fcm_service_account_file`, the service account's JSON
/// key; `fcm_base_url`), `push_ca_file` (a PEM file of certificates trusted besides the
/// system's, for stand-ins of the services) and `push_per_user_per_minute` (1–600, 20 by
/// default). A service without credentials sends nothing; the log says so once at start.
struct PushConfiguration: Sendable {
    static let keys = [
        "apns_key_file", "apns_key_id", "apns_team_id", "apns_topic", "apns_environment", "fcm_service_account_file",
        "fcm_base_url", "push_ca_file", "push_per_user_per_minute",
    ]
    static let fcmDefaultBaseURL = "https://fcm.googleapis.com"

    let apns: APNsCredentials?
    let fcm: (account: FCMServiceAccount, baseURL: String)?
    let caFile: String?
    let perUserPerMinute: Int

    init(_ settings: DomainSettings) throws(DomainSetupError) {
        perUserPerMinute = try settings.integer("push_per_user_per_minute", default: 20, in: 1...600)
        let ca = try settings.string("push_ca_file", default: "")
        if !ca.isEmpty, !FileManager.default.isReadableFile(atPath: ca) { throw DomainSetupError("'push_ca_file': cannot read '\(ca)'") }
        caFile = ca.isEmpty ? nil : ca
        apns = try Self.apns(settings)
        let accountFile = try settings.string("fcm_service_account_file", default: "")
        if accountFile.isEmpty {
            fcm = nil
        } else {
            let text = try Self.read("fcm_service_account_file", accountFile)
            let baseURL = try Self.baseURL("fcm_base_url", try settings.string("fcm_base_url", default: Self.fcmDefaultBaseURL))
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
        let keyFile = try settings.string("apns_key_file", default: "")
        guard !keyFile.isEmpty else { return nil }
        let pem = try read("apns_key_file", keyFile)
        let key: ES256PrivateKey
        do {
            key = try ES256PrivateKey(pem: pem)
        } catch {
            throw DomainSetupError("'apns_key_file' \(keyFile): not a P-256 private key in PEM (the .p8 file from Apple)")
        }
        func required(_ name: String) throws(DomainSetupError) -> String {
            let value = try settings.string(name, default: "")
            guard !value.isEmpty else { throw DomainSetupError("'\(name)' is required with apns_key_file") }
            return value
        }
        let keyID = try required("apns_key_id")
        let teamID = try required("apns_team_id")
        let topic = try required("apns_topic")
        let environment = try settings.string("apns_environment", default: "production")
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
