import GondolaHub

/// The keys of the app's backend that Gondola asks where Centrifugo's proxy asks it: one
/// endpoint per kind, named proxies, and what every proxy request carries and how many wait.
extension ServerConfiguration {
    static let proxyKeys: [ConfigurationKey<ServerConfiguration>] =
        [
            ConfigurationKey(
                "proxy_http_headers", type: "list of header names", default: "none",
                doc: "the WebSocket upgrade's headers sent with every proxy request"
            ) { (field, configuration) throws(ConfigurationError) in configuration.proxyHTTPHeaders = try field.list(of: "header names") },
            .integer(
                "proxy_max_in_flight", \.proxyMaxInFlight, min: 1, reloadable: true,
                doc: "proxy requests waiting on the backend at once; more get 100"),
            ConfigurationKey(
                "proxies", type: "list of {name, endpoint, timeout, binary_encoding}", default: "none", reloadable: true,
                doc: "named proxies, which namespaces (`subscribe_proxy_name`, ...) and RPC method prefixes (`rpc_proxies`) choose by name"
            ) { (field, configuration) throws(ConfigurationError) in
                for (index, entry) in try field.objects(keys: ["name", "endpoint", "timeout", "binary_encoding"]).enumerated() {
                    let path = "proxies[\(index)]"
                    let name = try entry.string("name", path: path)
                    let url = try entry.string("endpoint", path: path)
                    guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
                        throw ConfigurationError("\(field.source): \(path).endpoint expected an http(s) URL, got '\(url)'")
                    }
                    var endpoint = ProxyEndpoint(url: url)
                    if let timeout = entry.members["timeout"] {
                        endpoint.timeout = try ValueReader(key: "\(path).timeout", value: timeout, source: field.source).duration(allowZero: false)
                    }
                    if let binary = entry.members["binary_encoding"] {
                        endpoint.binaryEncoding = try ValueReader(key: "\(path).binary_encoding", value: binary, source: field.source).bool()
                    }
                    configuration.namedProxies[name] = endpoint
                }
            },
        ] + ProxyKind.allCases.flatMap(kindKeys)

    /// `proxy_<kind>_endpoint`, `_timeout` and `_binary_encoding` of one proxy kind.
    private static func kindKeys(_ kind: ProxyKind) -> [ConfigurationKey<ServerConfiguration>] {
        let prefix = "proxy_\(kind.rawValue)"
        return [
            ConfigurationKey(
                "\(prefix)_endpoint", type: "http(s) URL", default: "none", reloadable: true,
                doc: "the app backend's URL for the \(kind.rawValue) proxy"
            ) {
                (field, configuration) throws(ConfigurationError) in
                configuration.proxyEndpoints[kind, default: ProxyEndpoint(url: "")].url = try field.httpURL()
            },
            ConfigurationKey(
                "\(prefix)_timeout", type: "duration > 0", default: DurationText.text(of: ProxyEndpoint(url: "").timeout), reloadable: true,
                doc: "how long the \(kind.rawValue) proxy waits for the backend before answering 100"
            ) { (field, configuration) throws(ConfigurationError) in
                configuration.proxyEndpoints[kind, default: ProxyEndpoint(url: "")].timeout = try field.duration(allowZero: false)
            },
            ConfigurationKey(
                "\(prefix)_binary_encoding", type: "boolean", default: "false", reloadable: true,
                doc:
                    "Centrifugo's `binary_encoding`: the \(kind.rawValue) proxy's requests say `encoding: \"binary\"` and carry payloads as `b64data`"
            ) { (field, configuration) throws(ConfigurationError) in
                configuration.proxyEndpoints[kind, default: ProxyEndpoint(url: "")].binaryEncoding = try field.bool()
            },
        ]
    }
}
