import GondolaHub

/// The listeners' keys: where the server listens, their TLS, which pages and how many
/// connections may come in, and the WebSocket's frames and compression.
extension ServerConfiguration {
    static var listenerKeys: [ConfigurationKey<ServerConfiguration>] {
        addressKeys + TLSListener.allCases.flatMap(tlsKeys) + connectionKeys + frameKeys
    }

    /// Where the listeners are.
    private static let addressKeys: [ConfigurationKey<ServerConfiguration>] = [
        ConfigurationKey(
            "listen", type: "host:port", default: "127.0.0.1:8000",
            doc:
                "where clients connect (port 0 picks a free one): client transports, the host page, sign-in and the domains' routes; also the server API, `/metrics` and `/health` unless `internal_listen` is set"
        ) { (field, configuration) throws(ConfigurationError) in (configuration.listenHost, configuration.listenPort) = try field.hostAndPort() },
        address(
            "internal_listen", \.internalListen,
            doc:
                "the internal listener: when set, the server API (`/api/<method>`), `/metrics` and `/health` are served there only (404 on `listen`), so the API key is not the only thing between the internet and `publish`; bind it to a private address"
        ),
        address(
            "grpc_api_listen", \.grpcAPIListen,
            doc:
                "the GRPC server API (Centrifugo's `CentrifugoApi` service; off without it); HTTP/2, with TLS when `grpc_api_tls_cert_file` is set; bind it to a private address"
        ),
        .text("grpc_api_key", \.grpcAPIKey, doc: "the key GRPC calls send as metadata `authorization: apikey <key>`; others answer UNAUTHENTICATED")
            .showing(default: "`api_key`"),
        address(
            "uni_grpc_listen", \.uniGRPCListen,
            doc:
                "the unidirectional GRPC client stream (`CentrifugoUniStream/Consume`, [protocol.md](protocol.md#transports)); off without it; HTTP/2, with TLS when `uni_grpc_tls_cert_file` is set"
        ),
    ]

    /// Who may connect, and how many.
    private static let connectionKeys: [ConfigurationKey<ServerConfiguration>] = [
        ConfigurationKey(
            "tls_reload_interval", type: "duration, at least 1s", default: DurationText.text(of: defaults.tlsReloadInterval),
            doc:
                "how often every listener's certificate and key files are read again: a changed pair serves the handshakes after it is read, open connections keep theirs, and a pair that fails to load is logged and leaves the last good one in use"
        ) { (field, configuration) throws(ConfigurationError) in
            let interval = try field.duration(allowZero: false)
            guard interval >= .seconds(1) else { throw field.error("must be at least 1s, got \(interval)") }
            configuration.tlsReloadInterval = interval
        },
        ConfigurationKey(
            "allowed_origins", type: "list of origins", default: "none: only the server's own origin", reloadable: true,
            doc:
                "the web pages that may open a client connection: exact origins (`https://app.example.com`) or patterns where `*` stands for any run of characters and `?` for one (`https://*.example.com`); `*` alone allows every page. Compared lower-cased with the upgrade's `Origin`; a request without `Origin` (native apps, SDKs, servers) always passes. Unset, an `Origin` must name the host and port the request was sent to (`Host`), which the host page does. A refused upgrade gets 403 with `{\"error\":{\"code\":103,\"message\":\"permission denied: origin '…' …\"}}`, a log line and `gondola_origin_refused_total`"
        ) { (field, configuration) throws(ConfigurationError) in
            let patterns = try field.list(of: "origins")
            do throws(OriginPatternError) {
                configuration.allowedOrigins = try OriginCheck(allowed: patterns)
            } catch {
                throw field.error(error.description)
            }
        },
        .integer(
            "client_connection_limit", \.clientConnectionLimit, min: 0, reloadable: true,
            doc:
                "most client connections this node holds, 0 for no limit; an upgrade beyond gets 503 with a JSON error (as Centrifugo), `gondola_limit_reached_total{limit=\"client_connection_limit\"}` and a warning at most every 3 s. SDKs treat it as a transport error and reconnect with back-off"
        ),
        .integer(
            "client_connection_rate_limit", \.clientConnectionRateLimit, min: 0, reloadable: true,
            doc:
                "most new client connections this node accepts a second, 0 for no limit (a token bucket of that size refilled at that rate); beyond: 503 as above with `limit=\"client_connection_rate_limit\"`. Shapes a reconnect storm: connected clients are not affected"
        ),
    ]

    /// The WebSocket's frames and their compression.
    private static let frameKeys: [ConfigurationKey<ServerConfiguration>] = [
        .integer(
            "max_frame_bytes", \.maxFrameBytes, min: 256,
            doc: "largest frame (message) a client may send; a larger one closes the connection with 3501 naming its size"),
        .boolean("websocket_compression", \.webSocketCompression, doc: "offer permessage-deflate on `/connection/websocket`"),
        .integer("websocket_compression_min_bytes", \.webSocketCompressionMinBytes, min: 0, doc: "outgoing frames shorter than this go uncompressed"),
        .integer("websocket_compression_level", \.webSocketCompressionLevel, min: 1, max: 9, doc: "zlib level, 1 (fastest) to 9 (smallest)"),
        .integer(
            "websocket_compression_window_bits", \.webSocketCompressionWindowBits, min: 9, max: 15,
            doc: "zlib window for outgoing frames, 2^bits bytes; smaller saves memory per connection and compresses less"),
        .integer(
            "websocket_compression_memory_level", \.webSocketCompressionMemoryLevel, min: 1, max: 9,
            doc: "zlib memory level for outgoing frames: hash table and buffers, the same trade"),
        .boolean(
            "websocket_compression_context_takeover", \.webSocketCompressionContextTakeover,
            doc:
                "`false`: the server declares no context takeover for both sides; each message is compressed on its own, a publication once per event loop for all its subscribers, and a compressed connection holds no zlib state. `true`: each connection keeps a deflate and an inflate stream and compresses each frame with the previous ones as context (smaller frames on a traveller's own channels, about 240 KiB per connection at 15/8)"
        ),
    ]

    /// A second listener's `host:port`, off while unset.
    private static func address(
        _ name: String, _ path: WritableKeyPath<ServerConfiguration, (host: String, port: Int)?> & Sendable, doc: String
    ) -> ConfigurationKey<ServerConfiguration> {
        ConfigurationKey(name, type: "host:port", default: "none", doc: doc) { (field, configuration) throws(ConfigurationError) in
            let (host, port) = try field.hostAndPort()
            configuration[keyPath: path] = (host, port)
        }
    }

    /// A listener's certificate and key files: both or neither, checked to load and match at start.
    private static func tlsKeys(_ listener: TLSListener) -> [ConfigurationKey<ServerConfiguration>] {
        let served =
            switch listener {
            case .main:
                "TLS on `listen` (clients connect with `wss://` and `https://`); both or neither, and they must load and match, else the start stops naming them ([operations.md](operations.md#tls))"
            case .internal: "TLS on `internal_listen` (the server API, metrics and health over `https://`); needs `internal_listen`"
            case .grpcAPI: "TLS on `grpc_api_listen`; needs it"
            case .uniGRPC: "TLS on `uni_grpc_listen`; needs it"
            }
        return [
            ConfigurationKey(
                listener.certificateKey, type: "readable file", default: "none",
                doc: "the certificate chain (PEM, the server's certificate first) with `\(listener.privateKeyKey)`: \(served)"
            ) { (field, configuration) throws(ConfigurationError) in
                configuration.tls[listener, default: TLSFiles()].certificateFile = try field.readableFile()
            },
            ConfigurationKey(
                listener.privateKeyKey, type: "readable file", default: "none", doc: "the private key (PEM) of `\(listener.certificateKey)`"
            ) {
                (field, configuration) throws(ConfigurationError) in
                configuration.tls[listener, default: TLSFiles()].privateKeyFile = try field.readableFile()
            },
        ]
    }
}
