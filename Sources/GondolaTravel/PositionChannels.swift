import GondolaGeo

/// The `friends:#<uid>` and `locations:<trip>` channels that have subscribers:
/// whose positions each carries, which of them its subscribers were shown, and
/// what changed since each channel's last frame. Like nearby watchers, channels
/// are spread over the ticks of an interval (one phase each, given in turn).
struct PositionChannels {
    /// Whose positions a channel carries and who decides what it may show.
    enum Audience: Equatable {
        /// A user's friends, seen as that user sees them.
        case friendsOf(Int32)
        /// A trip's members, seen by its hosts.
        case trip(String)
    }

    struct Channel {
        let audience: Audience
        /// The ticks (`tick % phases`) in which this channel gets its frames.
        let phase: Int
        var members: Set<Int32>
        /// `ProximityMap.version` at the channel's last frame (or snapshot).
        var lastFrame: Int
        var shown: Set<Int32> = []
        /// Members to look at in the next frame although they did not move.
        var recheck: Set<Int32> = []
        /// Members shown before that are no longer members.
        var dropped: [Int32] = []

        /// This channel's frame: members that moved (or must be looked at again)
        /// and may be seen, and shown members that left or may no longer be seen.
        mutating func frame(of channel: PositionChannel, map: ProximityMap, visible: (Audience, Int32) -> Bool) -> Frame? {
            let since = lastFrame
            lastFrame = map.version
            guard map.version > since || !recheck.isEmpty || !dropped.isEmpty else { return nil }
            var positions: [Int32] = []
            var removed = dropped
            for member in members where map.hasChanged(member, after: since) || recheck.contains(member) {
                if map.fix(of: member) != nil, visible(audience, member) {
                    positions.append(member)
                    shown.insert(member)
                } else if shown.remove(member) != nil {
                    removed.append(member)
                }
            }
            recheck = []
            dropped = []
            guard !positions.isEmpty || !removed.isEmpty else { return nil }
            return Frame(channel: channel, positions: positions.sorted(), removed: removed.sorted())
        }
    }

    /// One channel's frame: positions to send and travellers to take off the map.
    struct Frame {
        let channel: PositionChannel
        let positions: [Int32]
        let removed: [Int32]
    }

    private(set) var channels: [PositionChannel: Channel] = [:]
    /// Ticks per interval, as in `ProximityMap`.
    let phases: Int
    private var nextPhase = 0

    init(phases: Int = 1) {
        precondition(phases >= 1, "at least one phase")
        self.phases = phases
    }

    var isEmpty: Bool { channels.isEmpty }

    /// Starts carrying `channel`; answers the members to show now.
    mutating func open(_ channel: PositionChannel, audience: Audience, members: Set<Int32>, map: ProximityMap, visible: (Audience, Int32) -> Bool)
        -> [Int32]
    {
        let phase = channels[channel]?.phase ?? nextPhase
        if channels[channel] == nil { nextPhase = (nextPhase + 1) % phases }
        var state = Channel(audience: audience, phase: phase, members: members, lastFrame: map.version)
        state.shown = Set(members.filter { map.fix(of: $0) != nil && visible(audience, $0) })
        channels[channel] = state
        return state.shown.sorted()
    }

    mutating func close(_ channel: PositionChannel) { channels[channel] = nil }

    func audience(of channel: PositionChannel) -> Audience? { channels[channel]?.audience }

    /// The members of every carried channel.
    var allMembers: Set<Int32> {
        channels.values.reduce(into: Set<Int32>()) { $0.formUnion($1.members) }
    }

    /// Replaces a channel's members (friendships or trip membership changed).
    mutating func setMembers(_ channel: PositionChannel, _ members: Set<Int32>) {
        guard var state = channels[channel] else { return }
        let added = members.subtracting(state.members)
        for gone in state.shown.subtracting(members) {
            state.shown.remove(gone)
            state.dropped.append(gone)
        }
        state.recheck.formUnion(added)
        state.members = members
        channels[channel] = state
    }

    /// This tick's frames for the channels of `phase`, one per channel with something
    /// to say; channels are updated in place.
    mutating func frames(phase: Int = 0, map: ProximityMap, visible: (Audience, Int32) -> Bool) -> [Frame] {
        var frames: [Frame] = []
        for index in channels.indices where channels.values[index].phase == phase {
            if let frame = channels.values[index].frame(of: channels.keys[index], map: map, visible: visible) {
                frames.append(frame)
            }
        }
        return frames
    }
}
