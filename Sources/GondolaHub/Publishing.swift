import GondolaProtocol
import Logging

/// A node's publications, from the call to the subscribers' queues: the namespace's checks (a
/// namespace whose domain writes its streams, `skip_history`, a `version` that needs a stream),
/// the broker's append and delivery (idempotency keys and versions are the engine's to check,
/// under the channel's lock), delivery to this node's subscribers (`fanOut`, in a span continuing
/// the publisher's trace when the publication carries one; deltas are made per subscriber by
/// `ChannelState`), and the streams' reads and removal. `Node`'s public methods of the same names
/// route here.
final class Publishing: Sendable {
    private let table: ChannelTable
    private let directory: ChannelDirectory
    private let broker: any Broker
    private let metrics: HubMetrics
    private let tracing: HubTracing
    private let logger: Logger

    init(table: ChannelTable, directory: ChannelDirectory, broker: any Broker, metrics: HubMetrics, tracing: HubTracing, logger: Logger) {
        self.table = table
        self.directory = directory
        self.broker = broker
        self.metrics = metrics
        self.tracing = tracing
        self.logger = logger
    }

    /// See `Node.publish(channel:data:info:tags:publishing:completion:)`.
    func publish(
        channel: String, data: Payload, info: ClientInfo?, tags: [String: String], publishing: PublishOptions,
        completion: @escaping @Sendable (Result<StreamPosition?, HubError>) -> Void
    ) {
        var options: NamespaceOptions
        do {
            options = try publishableNamespace(of: channel)
        } catch {
            return completion(.failure(error))
        }
        if publishing.skipHistory { options.historySize = 0 }
        if publishing.version > 0, !options.keepsHistory {
            let namespace = options.name.isEmpty ? "the default namespace" : "namespace '\(options.name)'"
            let reason = publishing.skipHistory ? "skip_history leaves it out" : "\(namespace) keeps no history"
            return completion(.failure(.badRequest("version needs the channel's stream: \(reason)")))
        }
        var publication = Publication(data: data, info: info, tags: tags, useDelta: publishing.delta || options.deltaPublish)
        // Traced, the publication carries its span's context to the nodes that deliver it.
        let span = tracing.start("publish", kind: .producer, attributes: ["messaging.destination.name": .string(channel)])
        if let span { publication.traceParent = tracing.traceParent(of: span.context) }
        // A store that failed is logged here, once for every path; refusals are the caller's to report.
        let answer: @Sendable (Result<StreamPosition?, HubError>) -> Void = { [logger] result in
            switch result {
            case let .failure(.internalError(reason)), let .failure(.unavailable(reason)):
                logger.error("publish failed", metadata: ["channel": "\(channel)", "error": "\(reason)"])
            default: break
            }
            if let span {
                if case let .failure(error) = result { HubTracing.fail(span, "\(error)") }
                if case let .success(position?) = result { span.attributes["gondola.offset"] = Int64(clamping: position.offset) }
                span.end()
            }
            completion(result)
        }
        broker.publish(publication, to: channel, options: options, publishing: publishing, completion: answer)
    }

    /// The namespace of a channel `publish` may write to: any but those whose provider
    /// keeps the streams itself (its domain writes them and delivers with `deliver`).
    private func publishableNamespace(of channel: String) throws(HubError) -> NamespaceOptions {
        let (_, options) = try directory.resolve(channel)
        if directory.ownStore(of: options) != nil {
            throw .notAvailable("the streams of namespace '\(options.name)' are written by its domain, not by publish")
        }
        return options
    }

    /// See `Node.publishLocally(channel:providedIn:data:)`.
    func publishLocally(channel: String, providedIn namespace: NamespaceOptions, data: RawJSON) {
        precondition(!namespace.keepsHistory, "\(namespace.name) keeps a stream")
        fanOut(Publication(data: Payload(data), info: nil, useDelta: namespace.deltaPublish), on: channel)
    }

    /// See `Node.deliver(channel:publication:whileLocked:)`.
    func deliver(channel: String, publication: Publication, whileLocked: () -> Void) {
        metrics.publications.increment()
        count(sent: table.deliver(publication, on: channel, whileLocked: whileLocked))
    }

    /// A publication the engine delivered, to this node's subscribers: `fanOut` in a span
    /// continuing the publisher's trace when the publication carries one.
    func deliver(_ publication: Publication, on channel: String) {
        guard let traceParent = publication.traceParent, tracing.isOn else {
            fanOut(publication, on: channel)
            return
        }
        let span = tracing.start(
            "deliver", kind: .consumer, parent: tracing.context(traceParent: traceParent),
            attributes: ["messaging.destination.name": .string(channel), "gondola.node": .string(directory.configuration.nodeName)])
        span?.attributes["gondola.messages_sent"] = fanOut(publication, on: channel)
        span?.end()
    }

    /// Sends a publication to the subscribers the channel has on this node, if any; answers
    /// the messages queued.
    @discardableResult
    private func fanOut(_ publication: Publication, on channel: String) -> Int {
        metrics.publications.increment()
        let sent = table.fanOut(publication, on: channel)
        count(sent: sent)
        return sent
    }

    private func count(sent messages: Int) {
        if messages > 0 { metrics.messagesOut.increment(by: Int64(messages)) }
    }

    /// See `Node.history(channel:limit:since:reverse:)`.
    func history(channel: String, limit: Int, since: StreamPosition?, reverse: Bool) async throws(HubError) -> HistoryResult {
        let (_, options) = try directory.resolve(channel)
        guard options.keepsHistory else { throw .notAvailable("namespace of \(channel) keeps no history") }
        let maxPerRequest = directory.configuration.maxHistoryPerRequest
        let capped = limit < 0 ? maxPerRequest : min(limit, maxPerRequest)
        // A stream read is a consistent snapshot of its own; it takes no channel's lock.
        let slice = try await directory.read(channel, after: reverse ? nil : since?.offset, limit: capped, reverse: reverse, options: options)
        if let since, !reverse, since.epoch != slice.position.epoch { throw .unrecoverablePosition }
        var publications = slice.publications
        if reverse, let since { publications = publications.filter { $0.offset < since.offset } }
        return HistoryResult(publications: publications, epoch: slice.position.epoch, offset: slice.position.offset)
    }

    /// See `Node.removeHistory(channel:)`.
    func removeHistory(channel: String) async throws(HubError) {
        let (_, options) = try directory.resolve(channel)
        guard options.keepsHistory else { throw .notAvailable("namespace of \(channel) keeps no history") }
        do {
            if let store = directory.ownStore(of: options) {
                try await store.removeHistory(channel: channel)
            } else {
                try await broker.removeHistory(channel: channel, options: options)
            }
        } catch let refused as HubError {
            throw refused
        } catch {
            throw .internalError("history remove failed: \(error)")
        }
    }
}
