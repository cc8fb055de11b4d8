import Crypto
import Foundation
import GondolaHub

/// Secrets the server generates when the configuration gives none, kept in the
/// data folder (mode 0600) so that tokens and keys stay valid across restarts.
public enum GeneratedSecrets {
    /// The secret in `folder/name`, created with 32 random bytes (hex) when missing.
    /// Returns the secret and whether it was created now.
    public static func load(named name: String, in folder: String) throws -> (value: String, created: Bool) {
        let path = URL(fileURLWithPath: folder).appendingPathComponent(name).path
        if let existing = try? String(contentsOfFile: path, encoding: .utf8) {
            let trimmed = existing.trimmingCharacters(in: .whitespacesAndNewlines)
            if !trimmed.isEmpty { return (trimmed, false) }
        }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let value = randomHex()
        FileManager.default.createFile(atPath: path, contents: Data((value + "\n").utf8), attributes: [.posixPermissions: 0o600])
        return (value, true)
    }

    /// A new secret: 32 random bytes as hex.
    static func randomHex() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { bytes in
            bytes.map { String(format: "%02x", $0) }.joined()
        }
    }

    /// Fills in the token secret and API key from the data folder when the configuration lacks them.
    /// Returns the names of the secrets that were generated now.
    public static func complete(_ configuration: inout ServerConfiguration) throws -> [String] {
        var created: [String] = []
        if configuration.tokenHMACSecret.isEmpty {
            let secret = try load(named: "token_hmac_secret", in: configuration.dataFolder)
            configuration.tokenHMACSecret = secret.value
            if secret.created { created.append("token_hmac_secret") }
        }
        if configuration.apiKey.isEmpty {
            let key = try load(named: "api_key", in: configuration.dataFolder)
            configuration.apiKey = key.value
            if key.created { created.append("api_key") }
        }
        return created
    }
}

extension ConfigurationCheck {
    /// This check with the secrets it leaves out filled in from the data folder, as the start
    /// does (generating any that is missing there); a problem when they cannot be kept.
    public func withGeneratedSecrets() -> ConfigurationCheck {
        guard problems.isEmpty else { return self }
        var completed = configuration
        do {
            _ = try GeneratedSecrets.complete(&completed)
        } catch {
            return ConfigurationCheck(
                configuration: configuration, problems: [ConfigurationError("cannot keep the generated secrets: \(error)")], values: values)
        }
        return ConfigurationCheck(configuration: completed, problems: [], values: values)
    }
}
