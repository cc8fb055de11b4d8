import GRPCNIOTransportHTTP2
import GondolaHub
import Logging
import NIOCertificateReloading
import NIOSSL
import ServiceLifecycle

/// The listeners that can serve TLS, each with its own certificate (`<prefix>tls_cert_file`
/// and `<prefix>tls_key_file`).
public enum TLSListener: String, Sendable, CaseIterable {
    /// `listen`: the client transports, the host page, the domains' routes.
    case main
    /// `internal_listen`: the server API, metrics, health.
    case `internal`
    /// `grpc_api_listen`: the GRPC server API.
    case grpcAPI
    /// `uni_grpc_listen`: the unidirectional GRPC stream.
    case uniGRPC

    /// What its keys start with.
    var keyPrefix: String {
        switch self {
        case .main: ""
        case .internal: "internal_"
        case .grpcAPI: "grpc_api_"
        case .uniGRPC: "uni_grpc_"
        }
    }

    var certificateKey: String { keyPrefix + "tls_cert_file" }
    var privateKeyKey: String { keyPrefix + "tls_key_file" }
}

/// A listener's certificate chain and private key, as PEM files.
public struct TLSFiles: Sendable, Equatable {
    public var certificateFile = ""
    public var privateKeyFile = ""
}

/// The certificates of the listeners that serve TLS. Each is read when the server starts
/// (a file that cannot be read, does not parse or does not match its key stops the start,
/// naming the keys) and read again every `tls_reload_interval`: a new certificate serves
/// the handshakes after it is read, connections open already keep theirs, and a file that
/// fails to load is logged and leaves the last good pair in use.
public struct ListenerCertificates: Sendable {
    private let reloaders: [TLSListener: TimedCertificateReloader]

    /// Reads every configured pair now.
    init(_ files: [TLSListener: TLSFiles], refreshInterval: Duration, logger: Logger) throws(ConfigurationError) {
        var reloaders: [TLSListener: TimedCertificateReloader] = [:]
        for (listener, pair) in files {
            reloaders[listener] = try Self.reloader(listener, pair, refreshInterval: refreshInterval, logger: logger)
        }
        self.reloaders = reloaders
    }

    /// The TLS configuration `listener` serves with, or nil when it serves plain text.
    func serverConfiguration(for listener: TLSListener) throws(ConfigurationError) -> TLSConfiguration? {
        guard let reloader = reloaders[listener] else { return nil }
        do {
            var configuration = try TLSConfiguration.makeServerConfiguration(certificateReloader: reloader)
            configuration.minimumTLSVersion = .tlsv12
            return configuration
        } catch {
            throw ConfigurationError("'\(listener.certificateKey)': \(error)")
        }
    }

    /// The TLS a GRPC listener serves with, or nil when it serves plain text.
    func grpcSecurity(for listener: TLSListener) throws(ConfigurationError) -> HTTP2ServerTransport.Posix.TransportSecurity? {
        guard let reloader = reloaders[listener] else { return nil }
        do {
            return try .tls(certificateReloader: reloader)
        } catch {
            throw ConfigurationError("'\(listener.certificateKey)': \(error)")
        }
    }

    /// The services that read the files again at their interval.
    var services: [any Service] { reloaders.keys.sorted { $0.rawValue < $1.rawValue }.compactMap { reloaders[$0] } }

    /// Checks that a pair loads and matches, as the start would.
    static func check(_ listener: TLSListener, _ pair: TLSFiles) throws(ConfigurationError) {
        _ = try reloader(listener, pair, refreshInterval: .seconds(60), logger: nil)
    }

    private static func reloader(
        _ listener: TLSListener, _ pair: TLSFiles, refreshInterval: Duration, logger: Logger?
    ) throws(ConfigurationError) -> TimedCertificateReloader {
        let configuration = TimedCertificateReloader.Configuration(
            refreshInterval: refreshInterval,
            certificateSource: .init(location: .file(path: pair.certificateFile), format: .pem),
            privateKeySource: .init(location: .file(path: pair.privateKeyFile), format: .pem)
        ) { configuration in
            configuration.logger = logger
            if let logger {
                configuration.onCertificateLoaded = { loaded in
                    // Called on every read; only a changed certificate is news.
                    guard let previous = loaded.previousX509CertificateChain, previous != loaded.currentX509CertificateChain else { return }
                    logger.notice("new certificate in use", metadata: ["listener": "\(listener.rawValue)", "file": "\(pair.certificateFile)"])
                }
                configuration.onCertificateLoadFailed = { failure in
                    logger.error(
                        "certificate not reloaded; the last good one stays in use",
                        metadata: ["listener": "\(listener.rawValue)", "file": "\(pair.certificateFile)", "error": "\(failure.error)"])
                }
            }
        }
        do {
            return try TimedCertificateReloader.makeReloaderValidatingSources(configuration: configuration)
        } catch {
            throw ConfigurationError("'\(listener.certificateKey)' and '\(listener.privateKeyKey)' cannot be used: \(error)")
        }
    }
}
