/// The matches a radius query keeps: all of them without a limit, else the `limit` nearest
/// seen so far, ordered by distance and then by slot (so ties are decided the same way
/// whatever order the cells are read in).
///
/// Until `limit` are kept, a match is appended; from then on the kept ones form a max-heap
/// whose top is the farthest, and a nearer match replaces it (log `limit` steps). A
/// candidate is asked about (`wants`) before the caller looks it up further, and the
/// farthest kept distance (`reach`) bounds what the rest of the query reads.
@usableFromInline
struct NearestMatches {
    @usableFromInline let limit: Int
    @usableFromInline var matches: [GridMatch] = []
    /// True once `limit` matches are kept: `matches` is then a max-heap.
    @usableFromInline var isFull = false

    @inlinable init(limit: Int) {
        self.limit = limit
        // Room for a usual neighbourhood at once, instead of regrowing it match by match.
        matches.reserveCapacity(min(limit, 64))
    }

    /// Whether a match at `distance` for `slot` would be kept.
    @inlinable func wants(_ distance: Double, _ slot: Int32) -> Bool {
        !isFull || Self.precedes(distance, slot, matches[0])
    }

    /// The farthest kept distance once `limit` are kept (nothing farther can be wanted), else nil.
    @inlinable var reach: Double? { isFull ? matches[0].distance : nil }

    /// Keeps `match`, which `wants` accepted.
    @inlinable mutating func keep(_ match: GridMatch) {
        guard isFull else {
            matches.append(match)
            if matches.count == limit {
                isFull = true
                let limit = limit
                matches.withUnsafeMutableBufferPointer { heap in
                    for index in stride(from: limit / 2 - 1, through: 0, by: -1) { Self.siftDown(heap, from: index, count: limit) }
                }
            }
            return
        }
        let limit = limit
        matches.withUnsafeMutableBufferPointer { heap in
            heap[0] = match
            Self.siftDown(heap, from: 0, count: limit)
        }
    }

    /// The kept matches, nearest first (ties by slot).
    @inlinable consuming func sorted() -> [GridMatch] {
        guard isFull else {
            matches.sort { Self.precedes($0.distance, $0.slot, $1) }
            return matches
        }
        // Heap sort: the farthest moves to the end, the heap shrinks by one.
        let limit = limit
        matches.withUnsafeMutableBufferPointer { heap in
            for end in stride(from: limit - 1, to: 0, by: -1) {
                heap.swapAt(0, end)
                Self.siftDown(heap, from: 0, count: end)
            }
        }
        return matches
    }

    /// True when `distance` and `slot` come before `other` (nearer, or as near with a lower slot).
    @inlinable static func precedes(_ distance: Double, _ slot: Int32, _ other: GridMatch) -> Bool {
        distance < other.distance || (distance == other.distance && slot < other.slot)
    }

    /// Restores the max-heap below `index` among the first `count` matches of `heap`.
    @inlinable static func siftDown(_ heap: UnsafeMutableBufferPointer<GridMatch>, from index: Int, count: Int) {
        var parent = index
        let moving = heap[parent]
        while true {
            var child = 2 * parent + 1
            guard child < count else { break }
            if child + 1 < count, precedes(heap[child].distance, heap[child].slot, heap[child + 1]) { child += 1 }
            guard precedes(moving.distance, moving.slot, heap[child]) else { break }
            heap[parent] = heap[child]
            parent = child
        }
        heap[parent] = moving
    }
}
