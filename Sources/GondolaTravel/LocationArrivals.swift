import GondolaGeo
import GondolaHub

/// What `location.update` records without the live map's lock: each traveller's rate
/// limit, map choice and region, and the positions the live map has not taken yet.
///
/// A frame tick holds the live map's lock while it computes the frames of its phase;
/// an update that took that lock would stall its event loop for as long. Updates
/// record here instead, under a lock of their own held for one dictionary lookup, and
/// the live map takes the pending positions (`take`) at the start of every tick and
/// before anything reads it, so a reader never sees an older position than an update
/// already answered. Positions replicated from other nodes arrive the same way.
///
/// Bounded: one pending position per traveller. A newer one replaces it, as a frame
/// only ever shows the latest, so between two takes there are at most as many as
/// travellers sending positions.
struct LocationArrivals {
    /// A position for the live map.
    struct Arrival {
        let user: String
        var position: LivePosition
        /// Server Unix ms when it was received (what expiry goes by).
        var receivedAt: Int64
        var region: String
    }

    /// What an admitted update decided.
    struct Admission {
        var choice: MapChoice
        var previous: MapChoice
        var region: String
        /// The region differs from the last one recorded for the traveller (on any node).
        var regionChanged: Bool
    }

    private struct Traveller {
        var bucket: TokenBucket?
        var choice = MapChoice.street
        var region: String?
        /// The traveller's place in `pending`, valid while `pendingIn` is the current `generation`.
        var pendingAt = 0
        var pendingIn = -1
    }

    private var travellers: [String: Traveller] = [:]
    private var pending: [Arrival] = []
    /// Counts `take`s, so that taking does not have to visit each traveller.
    private var generation = 0

    /// Admits a position `user` sent: takes a token from the user's bucket (`bucket`
    /// makes it on the first update) and answers nil, recording nothing, when there is
    /// none; otherwise `decide` turns the previous map choice into the new one and the
    /// position's region, and the position waits for the live map.
    mutating func admit(
        _ user: String, _ position: LivePosition, receivedAt: Int64, now: ContinuousClock.Instant,
        bucket: () -> TokenBucket, decide: (MapChoice) -> (choice: MapChoice, region: String)
    ) -> Admission? {
        let index = index(of: user)
        var taken = travellers.values[index].bucket ?? bucket()
        let admitted = taken.take(now: now)
        travellers.values[index].bucket = taken
        guard admitted else { return nil }
        let previous = travellers.values[index].choice
        let (choice, region) = decide(previous)
        travellers.values[index].choice = choice
        let regionChanged = travellers.values[index].region != region
        if regionChanged { travellers.values[index].region = region }
        enqueue(Arrival(user: user, position: position, receivedAt: receivedAt, region: region), at: index)
        return Admission(choice: choice, previous: previous, region: region, regionChanged: regionChanged)
    }

    /// Records a position another node admitted (its rate limit and map choice stay there).
    mutating func record(replica arrival: Arrival) {
        let index = index(of: arrival.user)
        travellers.values[index].region = arrival.region
        enqueue(arrival, at: index)
    }

    private mutating func index(of user: String) -> Dictionary<String, Traveller>.Index {
        if let index = travellers.index(forKey: user) { return index }
        travellers[user] = Traveller()
        return travellers.index(forKey: user)!
    }

    private mutating func enqueue(_ arrival: Arrival, at index: Dictionary<String, Traveller>.Index) {
        if travellers.values[index].pendingIn == generation {
            pending[travellers.values[index].pendingAt] = arrival
        } else {
            travellers.values[index].pendingAt = pending.count
            travellers.values[index].pendingIn = generation
            pending.append(arrival)
        }
    }

    /// The positions waiting for the live map, in the order their travellers first sent one since the last take.
    mutating func take() -> [Arrival] {
        guard !pending.isEmpty else { return [] }
        generation += 1
        let taken = pending
        pending.removeAll(keepingCapacity: true)
        return taken
    }
}
