/// The `friends:#<uid>` and `locations:<trip>` channels that have subscribers:
/// whose positions each carries, which of them its subscribers were shown, and
/// what changed since the last frame.
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
        var members: Set<Int32>
        var shown: Set<Int32> = []
        /// Members to look at in the next frame although they did not move.
        var recheck: Set<Int32> = []
        /// Members shown before that are no longer members.
        var dropped: [Int32] = []

        /// This channel's frame: members that moved (or must be looked at again)
        /// and may be seen, and shown members that left or may no longer be seen.
        mutating func frame(named name: String, map: LiveMap, anyChange: Bool, visible: (Audience, Int32) -> Bool) -> Frame? {
            guard anyChange || !recheck.isEmpty || !dropped.isEmpty else { return nil }
            var positions: [Int32] = []
            var removed = dropped
            for member in members where map.hasChanged(member) || recheck.contains(member) {
                if map.position(of: member) != nil, visible(audience, member) {
                    positions.append(member)
                    shown.insert(member)
                } else if shown.remove(member) != nil {
                    removed.append(member)
                }
            }
            recheck = []
            dropped = []
            guard !positions.isEmpty || !removed.isEmpty else { return nil }
            return Frame(channel: name, positions: positions.sorted(), removed: removed.sorted())
        }
    }

    /// One channel's frame: positions to send and travellers to take off the map.
    struct Frame {
        let channel: String
        let positions: [Int32]
        let removed: [Int32]
    }

    private(set) var channels: [String: Channel] = [:]

    var isEmpty: Bool { channels.isEmpty }

    /// Starts carrying `channel`; answers the members to show now.
    mutating func open(_ channel: String, audience: Audience, members: Set<Int32>, map: LiveMap, visible: (Audience, Int32) -> Bool) -> [Int32] {
        var state = Channel(audience: audience, members: members)
        state.shown = Set(members.filter { map.position(of: $0) != nil && visible(audience, $0) })
        channels[channel] = state
        return state.shown.sorted()
    }

    mutating func close(_ channel: String) { channels[channel] = nil }

    func audience(of channel: String) -> Audience? { channels[channel]?.audience }

    /// Replaces a channel's members (friendships or trip membership changed).
    mutating func setMembers(_ channel: String, _ members: Set<Int32>) {
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

    /// Looks at every member again in the next frame (visibility rules changed).
    mutating func recheckAll(_ channel: String) {
        guard var state = channels[channel] else { return }
        state.recheck = state.members
        channels[channel] = state
    }

    /// The frames of this frame interval, one per channel with something to say;
    /// channels are updated in place.
    mutating func frames(map: LiveMap, visible: (Audience, Int32) -> Bool) -> [Frame] {
        var frames: [Frame] = []
        let anyChange = !map.changedSlots.isEmpty
        for index in channels.indices {
            if let frame = channels.values[index].frame(named: channels.keys[index], map: map, anyChange: anyChange, visible: visible) {
                frames.append(frame)
            }
        }
        return frames
    }
}
