import Crypto
import CryptoExtras
import Foundation
import GondolaProtocol

/// Made-up APNs and FCM credentials for the stand-in: an APNs `.p8` key with its key id,
/// team id and topic, and an FCM service account (RSA key, client e-mail, project). The
/// files the hub is configured with are written by `write(to:tokenURI:)`.
public struct StandInCredentials: Sendable {
    public let apnsKeyID = "STANDIN01"
    public let apnsTeamID = "TEAM000001"
    public let apnsTopic = "com.example.gondola"
    public let fcmProjectID = "gondola-standin"
    public let fcmClientEmail = "push@gondola-standin.iam.gserviceaccount.com"
    let apnsKey: P256.Signing.PrivateKey
    let fcmKey: _RSA.Signing.PrivateKey

    var apnsPublicKey: P256.Signing.PublicKey { apnsKey.publicKey }
    var fcmPublicKey: _RSA.Signing.PublicKey { fcmKey.publicKey }

    /// New keys.
    public init() throws {
        self.init(apnsKey: P256.Signing.PrivateKey(), fcmKey: try _RSA.Signing.PrivateKey(keySize: .bits2048))
    }

    private init(apnsKey: P256.Signing.PrivateKey, fcmKey: _RSA.Signing.PrivateKey) {
        self.apnsKey = apnsKey
        self.fcmKey = fcmKey
    }

    /// The keys `write(to:standIn:)` left in `folder`, or new ones when there are none
    /// (a stand-in started again keeps the hub's credentials valid).
    public init(folder: String) throws {
        let p8 = folder + "/apns.p8"
        let account = folder + "/fcm-service-account.json"
        guard let key = FileManager.default.contents(atPath: p8), let json = FileManager.default.contents(atPath: account),
            case let .object(members) = try JSONParser.parse(Array(json)),
            case let .string(rsa)? = members.first(where: { $0.key == "private_key" })?.value
        else {
            try self.init()
            return
        }
        self.init(
            apnsKey: try P256.Signing.PrivateKey(pemRepresentation: String(decoding: key, as: UTF8.self)),
            fcmKey: try _RSA.Signing.PrivateKey(pemRepresentation: rsa))
    }

    /// Writes `apns.p8`, `fcm-service-account.json` (its `token_uri` is `tokenURI`) and
    /// `ca.pem` into `folder`; answers the hub's settings that use them.
    public func write(to folder: String, standIn: PushStandIn) throws -> [String: String] {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let p8 = folder + "/apns.p8"
        let account = folder + "/fcm-service-account.json"
        let ca = folder + "/ca.pem"
        try Data(apnsKey.pemRepresentation.utf8).write(to: URL(fileURLWithPath: p8))
        let accountJSON: JSON = [
            "type": "service_account", "project_id": .string(fcmProjectID), "private_key_id": "standin",
            "private_key": .string(fcmKey.pkcs8PEMRepresentation), "client_email": .string(fcmClientEmail),
            "token_uri": .string(standIn.baseURL + "/token"),
        ]
        try Data(accountJSON.text.utf8).write(to: URL(fileURLWithPath: account))
        try Data(standIn.certificatePEM.utf8).write(to: URL(fileURLWithPath: ca))
        return [
            "apns_key_file": p8, "apns_key_id": apnsKeyID, "apns_team_id": apnsTeamID, "apns_topic": apnsTopic,
            "apns_environment": standIn.baseURL, "fcm_service_account_file": account, "fcm_base_url": standIn.baseURL, "push_ca_file": ca,
        ]
    }
}
