import GondolaProtocol
import Synchronization

/// What the domains keep in memory and share with the other nodes of a cluster: the
/// handler of each replica topic, the reloads to run when the node receives the bus
/// again, and the regions whose regional events this node applies. `Node.replicate` sends;
/// `apply` takes what other nodes sent.
final class Replication: Sendable {
    private struct State {
        var handlers: [String: @Sendable (JSON) throws(HubError) -> Void] = [:]
        var resynchronizers: [@Sendable () async -> Void] = []
        /// The regions whose regional events this node applies (`Node.follow(regions:)`).
        var regions: Set<String> = []
    }

    private let state = Mutex(State())

    /// Adds what a domain registered.
    func add(_ registrations: NodeRegistrations) {
        state.withLock { state in
            for handler in registrations.replicaHandlers { state.handlers[handler.topic] = handler.apply }
            state.resynchronizers += registrations.resynchronizers
        }
    }

    /// What became of a regional event.
    enum Outcome {
        case applied
        /// The node does not follow the event's region, or has no handler for its topic.
        case dropped
    }

    /// Applies another node's change to `topic`; a payload its handler cannot read throws.
    func apply(topic: String, _ payload: JSON) throws(HubError) {
        try state.withLock { $0.handlers[topic] }?(payload)
    }

    /// Applies another node's change to `topic` in `region`, when this node follows the region.
    func apply(topic: String, region: String, _ payload: JSON) throws(HubError) -> Outcome {
        let (handler, followed) = state.withLock { ($0.handlers[topic], $0.regions.contains(region)) }
        guard followed, let handler else { return .dropped }
        try handler(payload)
        return .applied
    }

    /// Sets the regions this node follows; true when they changed.
    func follow(_ regions: Set<String>) -> Bool {
        state.withLock { state in
            guard state.regions != regions else { return false }
            state.regions = regions
            return true
        }
    }

    /// Runs every domain's reload (the node receives the bus again).
    func resynchronize() async {
        for reload in state.withLock({ $0.resynchronizers }) { await reload() }
    }
}
