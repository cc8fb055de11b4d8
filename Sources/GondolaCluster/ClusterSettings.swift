/// Timings and limits of the cluster mode, whichever engine carries its bus.
public struct ClusterSettings: Sendable {
    /// How often a node writes its heartbeat (and figures).
    public var heartbeat: Duration = .seconds(1)
    /// A node without a heartbeat for this long is dead: its presence entries
    /// stop counting and `info` no longer lists it.
    public var nodeTimeout: Duration = .seconds(5)
    /// How long the bus writer holds a batch open to collect more (0: none).
    public var busLinger: Duration = .zero
    /// Most items in one bus transaction.
    public var busMaxBatch = 512
    /// Bus payload rows (events over 8,000 bytes) are deleted after this long.
    public var payloadRetention: Duration = .seconds(60)
    /// Redis engine: how long a presence entry lasts unless its node adds it again
    /// (every third of it); a killed node's subscribers leave presence within this.
    public var presenceTTL: Duration = .seconds(60)

    public init() {}
}
