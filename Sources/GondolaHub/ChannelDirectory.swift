import Foundation
import GondolaProtocol
import Logging
import Synchronization

/// The channels one node knows: their names checked against `channel_max_length`, their
/// namespaces (the configuration's, or a domain service's), the provider owning a channel,
/// and where a channel's stream is read. Node and its parts ask it; `reconfigure` and the
/// domains' registrations change it.
final class ChannelDirectory: Sendable {
    /// Namespaces and single channels handed to domain services.
    private struct Providers {
        typealias Entry = (options: NamespaceOptions, provider: any ChannelProvider)
        var namespaces: [String: Entry] = [:]
        var channels: [String: Entry] = [:]

        /// A provided channel first, else its provided namespace.
        func entry(for name: ChannelName) -> Entry? { channels[name.raw] ?? namespaces[name.namespace] }
    }

    private let current: SharedConfiguration
    private let providers = Mutex(Providers())
    private let broker: any Broker
    private let logger: Logger

    init(configuration: SharedConfiguration, broker: any Broker, logger: Logger) {
        current = configuration
        self.broker = broker
        self.logger = logger
    }

    /// The namespaces, limits and timings in force.
    var configuration: HubConfiguration { current.value }

    /// Puts `newer` in force.
    func replace(with newer: HubConfiguration) { current.replace(with: newer) }

    /// Hands namespaces and single channels to their providers.
    func provide(_ provided: [NodeRegistrations.Provided]) {
        providers.withLock { providers in
            for entry in provided {
                switch entry.provision {
                case let .namespace(name): providers.namespaces[name] = (entry.options, entry.provider)
                case let .channel(name): providers.channels[name] = (entry.options, entry.provider)
                }
            }
        }
    }

    /// The provider owning the channel, if a domain service owns it or its namespace.
    func provider(of name: ChannelName) -> (any ChannelProvider)? {
        providers.withLock { $0.entry(for: name)?.provider }
    }

    /// `raw` checked as a channel name under `channel_max_length`.
    func channelName(_ raw: String) throws(HubError) -> ChannelName {
        try ChannelName(raw, maxBytes: configuration.channelMaxLength)
    }

    /// Validates a channel name and finds its namespace's options.
    func resolve(_ channel: String) throws(HubError) -> (ChannelName, NamespaceOptions) {
        let name = try channelName(channel)
        if let provided = providers.withLock({ $0.entry(for: name)?.options }) { return (name, provided) }
        guard let options = configuration.namespace(name.namespace) else { throw .unknownChannel(channel) }
        return (name, options)
    }

    /// The store of a provided namespace that keeps its own streams.
    func ownStore(of options: NamespaceOptions) -> (any HistoryStore)? {
        providers.withLock { $0.namespaces[options.name]?.provider.historyStore }
    }

    /// `limit` publications of `channel`'s stream after `after` (its position alone with a limit
    /// of 0): from the provider's own store when its namespace keeps one, else from the broker.
    func read(_ channel: String, after: UInt64?, limit: Int, reverse: Bool, options: NamespaceOptions) async throws(HubError) -> StreamSlice {
        do {
            if let store = ownStore(of: options) {
                return try await store.read(channel: channel, after: after, limit: limit, reverse: reverse, options: options, now: Date())
            }
            return try await broker.history(channel: channel, after: after, limit: limit, reverse: reverse, options: options)
        } catch {
            logger.error("history read failed", metadata: ["channel": "\(channel)", "error": "\(error)"])
            throw .internalError("history read failed: \(error)")
        }
    }
}

/// The node's configuration, shared with what reads it live (the backend proxy's RPC routes).
final class SharedConfiguration: Sendable {
    private let current: Mutex<HubConfiguration>

    init(_ configuration: HubConfiguration) { current = Mutex(configuration) }

    var value: HubConfiguration { current.withLock { $0 } }

    /// Puts `newer` in force, keeping the node's name.
    func replace(with newer: HubConfiguration) {
        current.withLock { current in
            let name = current.nodeName
            current = newer
            current.nodeName = name
        }
    }
}
