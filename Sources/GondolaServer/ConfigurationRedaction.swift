import GondolaPostgres

/// How a configuration shows in logs, error messages and dumps: what it is, never the secrets
/// it carries (`token_hmac_secret`, `api_key`, keys, passwords in Redis URLs). Its default,
/// reflected description printed every field, and service-lifecycle's debug line about the
/// running services printed the configuration within them.
extension ServerConfiguration: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "ServerConfiguration(listen: \(listenHost):\(listenPort), database: \(PostgresLocation.redacted(database)), engine: \((engineName?.rawValue) ?? "memory"))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

extension ConfigurationCheck: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "ConfigurationCheck(\(configuration), keys given: \(values.keys.sorted().joined(separator: ", ")), problems: \(problems.count))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
