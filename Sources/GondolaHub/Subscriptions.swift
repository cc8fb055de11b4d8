import Foundation
import GondolaProtocol
import Logging

/// A node's subscriptions, from the subscribe command to the unsubscribe: `begin` keeps what
/// the channel delivers for the subscriber, `prepare` records presence and reads the stream's
/// position and what to recover, `activate` sends the reply and makes the subscriber live,
/// `abandon` undoes what `begin` started, and `remove` ends a live one (presence, leave, the
/// provider told when the channel empties). The channels' state is `ChannelTable`'s.
final class Subscriptions: Sendable {
    private let table: ChannelTable
    let directory: ChannelDirectory
    let presenceManager: any PresenceManager
    private let broker: any Broker
    let logger: Logger

    init(table: ChannelTable, directory: ChannelDirectory, presenceManager: any PresenceManager, broker: any Broker, logger: Logger) {
        self.table = table
        self.directory = directory
        self.presenceManager = presenceManager
        self.broker = broker
        self.logger = logger
    }

    /// Starts a subscription of `session` to `channel`: from here on what the channel
    /// delivers is kept for it until `activate` sends its reply, so a
    /// provider may publish right after it called this and the subscriber gets it after
    /// the reply's snapshot.
    func begin(_ session: ClientSession, to channel: String) {
        table.beginPending(session, on: channel)
    }

    /// A subscription whose presence is recorded and whose stream position is read, not yet live.
    struct PreparedSubscription {
        let channel: String
        let result: SubscribeResult
        let info: ClientInfo
        let options: NamespaceOptions
        /// The subscriber gets join and leave pushes.
        let hearsJoinLeave: Bool
        /// Only publications whose tags match it reach the subscriber.
        let tagsFilter: TagsFilter?
    }

    /// Records presence and reads the stream's position (and the publications to
    /// recover) of a subscription `begin` started, holding no lock; both reads
    /// may wait on the engine, no thread does. On failure the subscription is undone.
    func prepare(
        _ session: ClientSession, request: SubscribeRequest, options: NamespaceOptions, info: ClientInfo,
        data: RawJSON? = nil, expiresIn ttl: UInt32? = nil
    ) async throws(HubError) -> PreparedSubscription {
        let channel = request.channel
        var presenceAdded = false
        do throws(HubError) {
            // Presence is recorded before the reply, so that a presence call anywhere after
            // the client saw its reply lists it.
            if options.presence {
                try await presenceManager.addPresence(channel: channel, info: info)
                presenceAdded = true
            }
            var result = SubscribeResult()
            if options.keepsHistory { result = try await streamState(for: request, options: options) }
            result.data = data
            if let ttl {
                result.expires = true
                result.ttl = ttl
            }
            result.delta = DeltaType(rawValue: request.delta).map(options.allowedDeltaTypes.contains) ?? false
            // Recovered publications come whole; a JSON delta subscription takes data as text.
            if result.delta, session.encoding == .json { result.publications = result.publications.map(\.withDataAsText) }
            if let filter = request.tagsFilter { result.publications = result.publications.filter { filter.matches($0.tags) } }
            return PreparedSubscription(
                channel: channel, result: result, info: info, options: options,
                hearsJoinLeave: request.joinLeave || options.forcePushJoinLeave, tagsFilter: request.tagsFilter)
        } catch {
            abandon(session, to: channel)
            if presenceAdded { try? await presenceManager.removePresence(channel: channel, client: info.client) }
            throw error
        }
    }

    /// Makes a prepared subscription live: under the channel's lock `sendReply` queues what
    /// answers it (a subscribe reply; nothing when the caller already sent the connect reply
    /// that carries it), then what the channel delivered since the subscription began and
    /// the reply does not cover, and the subscriber starts receiving. On failure (more
    /// publications arrived meanwhile than `ChannelState.pendingLimit`) nothing of it was
    /// sent and its presence is removed.
    func activate(
        _ prepared: PreparedSubscription, of session: ClientSession,
        sendReply: (SubscribeResult) -> Void
    ) async throws(HubError) {
        let channel = prepared.channel
        let options = prepared.options
        let reply = prepared.result
        do throws(HubError) {
            try table.withChannel(channel, create: true) { (state) throws(HubError) in
                guard let pending = state.takePending(session.id) else {
                    throw .internalError("the subscription to \(channel) ended while it was set up")
                }
                guard !pending.overflowed else {
                    throw .internalError(
                        "more than \(ChannelState.pendingLimit) publications arrived on \(channel) while the subscription was set up")
                }
                sendReply(reply)
                let covered = options.keepsHistory ? reply.offset : 0
                var floor = covered
                for publication in pending.publications where publication.offset == 0 || publication.offset > covered {
                    floor = max(floor, publication.offset)
                    if let filter = prepared.tagsFilter, !filter.matches(publication.tags) { continue }
                    let sent = reply.delta && session.encoding == .json ? publication.withDataAsText : publication
                    session.queue.enqueue(Push(channel: channel, .publication(sent)))
                }
                // The broker may still deliver publications up to the offset the subscriber has.
                state.add(
                    .init(
                        session: session, info: prepared.info, joinLeave: prepared.hearsJoinLeave, delta: reply.delta,
                        tagsFilter: prepared.tagsFilter, presence: options.presence, announcesJoinLeave: options.joinLeave),
                    floor: options.keepsHistory ? floor : nil)
            }
        } catch {
            abandon(session, to: channel)
            if options.presence { try? await presenceManager.removePresence(channel: channel, client: prepared.info.client) }
            throw error
        }
        if options.joinLeave { announce(.join(channel: channel, prepared.info)) }
    }

    /// Undoes a `begin` that will not be completed.
    func abandon(_ session: ClientSession, to channel: String) {
        let vacated = table.abandonPending(session, on: channel)
        if vacated, let name = try? directory.channelName(channel) { directory.provider(of: name)?.vacated(channel: name) }
    }

    /// Sends a join or leave to every node without waiting; a refusal is logged (the
    /// subscription itself stands).
    private func announce(_ event: ClusterEvent) {
        broker.post(event) { [logger] result in
            if case let .failure(error) = result {
                logger.warning("join/leave not sent", metadata: ["event": "\(event)", "error": "\(error)"])
            }
        }
    }

    /// The stream part of a subscribe reply: position, and the recovery when asked.
    private func streamState(for request: SubscribeRequest, options: NamespaceOptions) async throws(HubError) -> SubscribeResult {
        var result = SubscribeResult()
        let recoverable = request.recoverable || request.recover || options.forceRecovery
        result.recoverable = recoverable
        result.positioned = recoverable || request.positioned || options.forcePositioning
        let limit = directory.configuration.maxHistoryPerRequest
        let slice = try await directory.read(
            request.channel, after: request.recover ? request.offset : nil, limit: request.recover ? limit + 1 : 0, reverse: false, options: options)
        result.epoch = slice.position.epoch
        result.offset = slice.position.offset
        guard request.recover else { return result }
        result.wasRecovering = true
        let top = slice.position.offset
        let missed = top >= request.offset ? top - request.offset : UInt64.max
        // An empty epoch asks for whatever the stream still holds after the offset.
        let sameStream = request.epoch.isEmpty || request.epoch == slice.position.epoch
        let complete = sameStream && missed <= UInt64(limit) && UInt64(slice.publications.count) == missed
        if complete {
            result.recovered = true
            result.publications = slice.publications
        } else if request.flag & SubscribeRequest.rejectUnrecoveredFlag != 0 {
            throw .unrecoverablePosition
        }
        return result
    }

    /// Removes a subscriber; its channel's join-leave listeners get a leave, and
    /// the namespace's provider hears when the channel is left empty.
    func remove(_ session: ClientSession, from channel: String) async {
        guard let removal = removeLocally(session, from: channel) else { return }
        await finish(removal)
    }

    /// `remove` for callers that cannot wait (a connection that closed, a
    /// server-side unsubscribe): the subscriber stops receiving at once; the presence
    /// entry (which may take a database round trip) is removed by a task of its own.
    func removeInBackground(_ session: ClientSession, from channel: String) {
        guard let removal = removeLocally(session, from: channel) else { return }
        if removal.presence {
            Task { await finish(removal) }
        } else {
            finish(withoutPresence: removal)
        }
    }

    /// A subscriber removed from this node whose presence and leave are still to be done.
    private struct Removal {
        let channel: String
        let info: ClientInfo
        let presence: Bool
        let announcesLeave: Bool
    }

    /// Takes the subscriber out of the channel's state (telling the provider when that
    /// left the channel empty).
    private func removeLocally(_ session: ClientSession, from channel: String) -> Removal? {
        guard let name = try? directory.channelName(channel) else { return nil }
        let (removed, vacated) = table.remove(session, from: channel)
        if vacated { directory.provider(of: name)?.vacated(channel: name) }
        return removed.map { Removal(channel: channel, info: $0.info, presence: $0.presence, announcesLeave: $0.announcesJoinLeave) }
    }

    private func finish(_ removal: Removal) async {
        if removal.presence {
            do throws(HubError) {
                try await presenceManager.removePresence(channel: removal.channel, client: removal.info.client)
            } catch {
                logger.warning("presence removal failed", metadata: ["channel": "\(removal.channel)", "error": "\(error)"])
            }
        }
        finish(withoutPresence: removal)
    }

    private func finish(withoutPresence removal: Removal) {
        if removal.announcesLeave { announce(.leave(channel: removal.channel, removal.info)) }
    }

    /// Whether `user` may subscribe to `channel` (the first check of a subscribe, before the
    /// connection's limit): a known delta type; a tags filter the namespace allows; then a
    /// user-limited channel's users; a provider's channels (`provided`) for known users or the
    /// server; else the namespace must be open to clients, or a token, the proxy (`granted`)
    /// or the server must have granted it.
    static func admit(
        _ request: SubscribeRequest, to name: ChannelName, in options: NamespaceOptions, user: String, provided: Bool, granted: Bool,
        grantedByServer: Bool
    ) throws(HubError) {
        let channel = request.channel
        if !request.delta.isEmpty, DeltaType(rawValue: request.delta) == nil {
            throw HubError.badRequest("subscribe.delta '\(request.delta)' is not a delta type (known: \(DeltaType.knownNames))")
        }
        if let filter = request.tagsFilter { try check(filter, of: request, in: options) }
        if let allowed = name.allowedUsers {
            guard allowed.contains(user) else { throw HubError.permissionDenied("\(channel) is limited to other users") }
        } else if provided {
            // A domain's channels are for users it knows.
            guard !user.isEmpty || grantedByServer else {
                throw HubError.permissionDenied("namespace '\(options.name)' is not open to anonymous connections")
            }
        } else if !granted, !grantedByServer {
            guard options.allowSubscribeForClient else {
                throw HubError.permissionDenied("namespace '\(options.name)' needs a subscription token")
            }
            guard !user.isEmpty || options.allowSubscribeForAnonymous else {
                throw HubError.permissionDenied("namespace '\(options.name)' does not allow anonymous subscribers")
            }
        }
    }

    /// Refuses (107) a tags filter the namespace does not allow (`allow_tags_filter`), one
    /// `TagsFilter.problem` names, or one beside a delta: a delta's base is the channel's
    /// previous publication, which a filter may have kept from the subscriber.
    private static func check(_ filter: TagsFilter, of request: SubscribeRequest, in options: NamespaceOptions) throws(HubError) {
        guard options.allowTagsFilter else {
            let namespace = options.name.isEmpty ? "the default namespace" : "namespace '\(options.name)'"
            throw .badRequest("subscribe.tf: \(namespace) does not allow tags filters (allow_tags_filter)")
        }
        if let problem = filter.problem { throw .badRequest("subscribe.\(problem)") }
        guard request.delta.isEmpty else { throw .badRequest("subscribe.tf cannot be used with delta") }
    }
}
