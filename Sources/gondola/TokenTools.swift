import ArgumentParser
import Foundation
import GondolaDomain
import GondolaHub
import GondolaProtocol
import GondolaServer

/// What `gentoken` and `gensubtoken` share, as Centrifugo's commands of the same names take it:
/// `-u` the user, `-t` the lifetime (seconds, or a duration such as 1h; a week by default, 0 for
/// none), `--info` JSON for other clients, `-q` the token alone.
struct TokenMinting: ParsableArguments {
    @Option(name: [.short, .long], help: "User id (the token's sub).") var user: String
    @Option(name: [.short, .long], help: "Lifetime in seconds or as 30m, 1h, 24h; 0 for none (default 604800, a week).") var ttl = "604800"
    @Option(help: "JSON that other clients see as this client's info.") var info: String?
    @Flag(name: [.short, .long], help: "Print the token alone.") var quiet = false

    /// The lifetime `-t` names; nil for 0 (no expiry).
    func lifetime() throws -> Duration? {
        let parsed = Int64(ttl).map { Duration.seconds($0) } ?? DurationText.parse(ttl)
        guard let parsed, parsed >= .zero else { throw ValidationError("--ttl '\(ttl)' is not seconds or a duration like 30m, 1h or 24h") }
        return parsed == .zero ? nil : parsed
    }

    /// `--info` as JSON.
    func infoJSON() throws -> JSON? {
        guard let info else { return nil }
        do {
            return try JSONParser.parse(info)
        } catch {
            throw ValidationError("--info is not JSON: \(error)")
        }
    }

    /// Prints `token` with a line saying what it is, or alone with `-q`.
    func print(_ token: String, describing what: String, lifetime: Duration?) {
        if !quiet {
            let expiry = lifetime.map { "expiring in \(Int64($0.components.seconds)) s" } ?? "without expiry"
            Swift.print("HMAC SHA-256 JWT \(what) \(expiry):")
        }
        Swift.print(token)
    }
}

/// `gondola gentoken`: a connection token signed with the server's HMAC secret, as
/// Centrifugo's `gentoken` makes one (with `--channels` for server-side subscriptions).
struct GenToken: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gentoken", abstract: "Print a connection token (JWT HS256) signed with token_hmac_secret.")

    @OptionGroup var minting: TokenMinting
    @Option(help: "Comma-separated channels the connection is subscribed to by the server.") var channels: String?
    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        guard !minting.user.isEmpty else { throw ValidationError("--user must not be empty") }
        let lifetime = try minting.lifetime()
        let info = try minting.infoJSON()
        let channels = channels.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
        let tokens = try await ConnectionTokens(secret: try options.load().tokenHMACSecret)
        minting.print(
            try await tokens.mint(user: minting.user, ttl: lifetime, info: info, channels: channels), describing: "for user \"\(minting.user)\"",
            lifetime: lifetime)
    }
}

/// `gondola gensubtoken`: a subscription token for a user and a channel, as Centrifugo's `gensubtoken` makes one.
struct GenSubToken: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gensubtoken", abstract: "Print a subscription token (JWT HS256) for a user and a channel, signed with token_hmac_secret.")

    @OptionGroup var minting: TokenMinting
    @Option(name: [.customShort("s"), .long], help: "The channel the token lets the user subscribe to.") var channel: String
    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        guard !channel.isEmpty else { throw ValidationError("--channel must not be empty") }
        let lifetime = try minting.lifetime()
        let info = try minting.infoJSON()
        let tokens = try await ConnectionTokens(secret: try options.load().tokenHMACSecret)
        minting.print(
            try await tokens.mintSubscription(user: minting.user, channel: channel, ttl: lifetime, info: info),
            describing: "for user \"\(minting.user)\" and channel \"\(channel)\"", lifetime: lifetime)
    }
}

/// `gondola checktoken TOKEN`: checks a connection token as the server would (every key the
/// configuration names, its audience and issuer) and says whose it is; exits with 1 naming why
/// when the server would refuse it.
struct CheckToken: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checktoken", abstract: "Check a connection token with the server's keys and print whose it is.")

    @Argument(help: "The token.") var token: String
    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        let tokens: ConnectionTokens
        do {
            tokens = try await ConnectionTokens(keys: try options.load().tokenKeys())
        } catch let error as TokenKeyError {
            throw ValidationError(error.description)
        }
        do {
            let credentials = try await tokens.verify(token)
            let expiry = credentials.expiresAt.map { "expires at \(ISO8601DateFormatter().string(from: $0))" } ?? "never expires"
            print("valid token for user \"\(credentials.user)\", \(expiry)")
        } catch {
            let reason =
                switch error {
                case let .invalid(why): why
                case .expired: "the token has expired"
                case let .keyUnavailable(why): why
                }
            FileHandle.standardError.write(Data("gondola: token refused: \(reason)\n".utf8))
            throw ExitCode(1)
        }
    }
}
