import GondolaHub
import GondolaProtocol

/// The keys that shape the whole server: tracing, the namespaces, which domains run, and the
/// rows of the keys each domain declares (checked by the domain, `BuiltInDomains`).
extension ServerConfiguration: ConfigurationDefaults {
    public static var defaults: ServerConfiguration { ServerConfiguration() }

    static let wholeServerKeys: [ConfigurationKey<ServerConfiguration>] = [
        .boolean(
            "opentelemetry", \.opentelemetry,
            doc: "export OpenTelemetry spans over OTLP, configured by the standard `OTEL_*` variables ([operations.md](operations.md#tracing))"),
        .boolean(
            "opentelemetry_api", \.opentelemetryAPI,
            doc: "also a span for each server API call (HTTP and GRPC), continuing the request's `traceparent`; needs `opentelemetry`"),
        ConfigurationKey(
            "namespaces", type: "list of namespace objects", default: "none", reloadable: true,
            doc: "the channel namespaces, each an object with `name` and the options below ([Namespaces](#namespaces))"
        ) { (field, configuration) throws(ConfigurationError) in
            guard case let .array(entries) = field.value else { throw field.error("expected an array of namespace objects") }
            var namespaces: [String: NamespaceOptions] = ["": .closedDefaultNamespace]
            for (index, entry) in entries.enumerated() {
                let options = try NamespaceOptions.read(entry, path: "namespaces[\(index)]", source: field.source)
                guard !BuiltInDomains.namespaces.contains(options.name) else {
                    throw ConfigurationError("\(field.source): namespaces[\(index)].name '\(options.name)' is built in and cannot be redefined")
                }
                namespaces[options.name] = options
            }
            configuration.hub.namespaces = namespaces
        },
        ConfigurationKey(
            "domains", type: "list of domain names", default: "all",
            doc:
                "the domains to install (`[\"travel\"]`); `[]` runs the bare hub. A domain left out has no RPC methods (104), no namespaces (102), no server API methods or routes (404); its tables are still created and kept"
        ) { (field, configuration) throws(ConfigurationError) in
            let names = try field.list(of: "domain names")
            let known = BuiltInDomains.names
            if let unknown = names.first(where: { !known.contains($0) }) {
                throw field.error("unknown domain '\(unknown)' (known domains: \(known.joined(separator: ", ")))")
            }
            configuration.domains = Set(names)
        },
    ]

    /// A key a domain declares: the loader keeps its value for the domain, which checks it
    /// when it is installed (and in `checkconfig`), naming the key.
    static func domainKey(_ info: ConfigurationKeyInfo) -> ConfigurationKey<ServerConfiguration> {
        ConfigurationKey(info) { (field, configuration) throws(ConfigurationError) in configuration.domainSettings.values[info.name] = field.value }
    }
}
