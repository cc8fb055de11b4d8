import CPrefetch

/// A point as a grid cell stores it: offsets in degrees from the cell's south-west
/// corner (two `Float`s: about 0.03 mm of resolution), its altitude in metres (NaN
/// when it has none) and its slot; 16 bytes, four to a cache line.
@usableFromInline
struct GridEntry: Sendable {
    @usableFromInline var latOffset: Float
    @usableFromInline var lonOffset: Float
    @usableFromInline var alt: Float
    @usableFromInline var slot: Int32

    @inlinable
    init(latOffset: Float, lonOffset: Float, alt: Float, slot: Int32) {
        self.latOffset = latOffset
        self.lonOffset = lonOffset
        self.alt = alt
        self.slot = slot
    }

    /// The altitude, when the point has one.
    @inlinable var altitude: Double? { alt.isNaN ? nil : Double(alt) }
}

/// Where the entries of a grid live: every cell's entries side by side in one run of
/// one pool, so a query reads each cell it visits as one contiguous block, and no
/// cell is an object of its own (no hashing of cell numbers with SipHash, no
/// reference counting, no array header to load before the entries).
///
/// - **Tiles.** Cells are grouped in tiles of 8 × 8. An open-addressed table (linear
///   probing, Fibonacci hashing of the tile's number) maps each occupied tile to its 64
///   cell headers, stored side by side, so the headers of neighbouring cells share cache
///   lines and a query's few tiles stay in the cache. A tile whose last point leaves is
///   taken out of the table (backward-shift deletion) and its number reused.
/// - **Runs.** A header names its cell's run in the pool: start, count, capacity.
///   Capacities are powers of two from 4. A full run moves to one twice its size; a run
///   is freed when its cell empties. Freed runs go on a free list per size and are
///   reused before the pool grows, so the pool keeps the size of its peak and holds at
///   most twice each occupied cell's largest count.
/// - **Slots.** Each slot's cell and position in the pool are kept, so a move within a
///   cell rewrites one entry without any lookup, and a move across cells is a
///   swap-remove from one run and an append to another.
///
/// Thread safety: a value type with no locks; touch it from one executor at a time.
@usableFromInline
struct CellRuns: Sendable {
    /// A cell's run in the pool; `capacity` 0 when the cell is empty.
    @usableFromInline
    struct Header: Sendable {
        @usableFromInline var start: Int32 = 0
        @usableFromInline var count: Int32 = 0
        @usableFromInline var capacity: Int32 = 0

        @inlinable init() {}
    }

    /// A slot of the tile table: a tile's key and the number of its 64 headers.
    @usableFromInline
    struct TileSlot: Sendable {
        @usableFromInline var key: Int64
        @usableFromInline var tile: Int32

        @inlinable init(key: Int64, tile: Int32) {
            self.key = key
            self.tile = tile
        }
    }

    /// Where a slot's entry is.
    @usableFromInline
    struct Place: Sendable {
        @usableFromInline var cell: Int64
        @usableFromInline var index: Int32

        @inlinable init(cell: Int64, index: Int32) {
            self.cell = cell
            self.index = index
        }
    }

    @usableFromInline static var tileBits: Int64 { 3 }
    @usableFromInline static var cellsPerTile: Int { 64 }
    @usableFromInline static var emptyKey: Int64 { -1 }
    @usableFromInline static var absent: Int64 { -1 }
    @usableFromInline static var smallestRun: Int32 { 4 }

    /// The grid's columns: cell `n` is at row `n / columns`, column `n % columns`.
    @usableFromInline let columns: Int64
    @usableFromInline let tileColumns: Int64
    @usableFromInline var table: [TileSlot]
    /// 64 minus the base-2 logarithm of the table's size.
    @usableFromInline var tableShift: UInt64
    @usableFromInline var liveTiles = 0
    /// The headers of tile number `t` are `headers[t * 64 ..< t * 64 + 64]`.
    @usableFromInline var headers: [Header] = []
    /// Each tile number's key, `emptyKey` while the number is free.
    @usableFromInline var tileKeys: [Int64] = []
    /// Occupied cells of each tile number.
    @usableFromInline var occupiedInTile: [Int32] = []
    @usableFromInline var freeTiles: [Int32] = []
    @usableFromInline var pool: [GridEntry] = []
    /// Starts of freed runs, by size (`smallestRun << index`).
    @usableFromInline var freeRuns: [[Int32]] = Array(repeating: [], count: 28)
    @usableFromInline var places: [Place] = []
    /// Cells holding at least one entry.
    @usableFromInline private(set) var occupiedCells = 0
    /// Slots holding an entry.
    @usableFromInline private(set) var count = 0

    @inlinable init(columns: Int64) {
        self.columns = columns
        tileColumns = (columns + 7) >> Self.tileBits
        table = Array(repeating: TileSlot(key: Self.emptyKey, tile: 0), count: 16)
        tableShift = 60
    }

    // MARK: Slots

    /// Whether `slot` holds an entry.
    @inlinable func contains(_ slot: Int32) -> Bool {
        Int(slot) < places.count && places[Int(slot)].cell != Self.absent
    }

    /// `slot`'s cell and entry, if it holds one.
    @inlinable func entry(of slot: Int32) -> (cell: Int64, entry: GridEntry)? {
        guard contains(slot) else { return nil }
        let place = places[Int(slot)]
        return (place.cell, pool[Int(place.index)])
    }

    /// Stores `entry` for its slot in `cell`, replacing the slot's previous entry.
    @inlinable mutating func put(_ entry: GridEntry, in cell: Int64) {
        let slot = Int(entry.slot)
        if slot >= places.count {
            places.append(contentsOf: repeatElement(Place(cell: Self.absent, index: 0), count: slot + 1 - places.count))
        }
        let current = places[slot]
        if current.cell == cell {
            pool[Int(current.index)] = entry
            return
        }
        if current.cell == Self.absent { count += 1 } else { takeOut(current) }
        places[slot] = Place(cell: cell, index: append(entry, to: cell))
    }

    /// Takes `slot`'s entry out; false when it had none.
    @inlinable mutating func remove(_ slot: Int32) -> Bool {
        guard contains(slot) else { return false }
        takeOut(places[Int(slot)])
        places[Int(slot)].cell = Self.absent
        count -= 1
        return true
    }

    // MARK: Cells

    /// The pool range of the cell at `row`, `column` (empty when the cell is).
    @inlinable func run(row: Int64, column: Int64) -> Range<Int> {
        guard let tile = tile(forKey: tileKey(row: row, column: column)) else { return 0..<0 }
        let header = headers[Self.headerIndex(tile: tile, row: row, column: column)]
        return Int(header.start)..<Int(header.start + header.count)
    }

    /// Starts loading the entries of `run` (a pool range) into the cache without waiting for them.
    @inlinable func prefetch(_ run: Range<Int>) {
        guard !run.isEmpty else { return }
        pool.withUnsafeBufferPointer { pool in
            guard let base = pool.baseAddress else { return }
            // Entries are 16 bytes: every fourth one, and the last, lies on each cache line of the run.
            for index in stride(from: run.lowerBound, to: run.upperBound, by: 4) { gondola_prefetch(base + index) }
            gondola_prefetch(base + run.upperBound - 1)
        }
    }

    /// The pool range of `cell`.
    @inlinable func run(of cell: Int64) -> Range<Int> {
        run(row: cell / columns, column: cell % columns)
    }

    /// Calls `body` with each occupied cell's number and pool range.
    @inlinable func forEachOccupiedCell(_ body: (Int64, Range<Int>) -> Void) {
        for tile in tileKeys.indices where tileKeys[tile] != Self.emptyKey {
            let key = tileKeys[tile]
            let firstRow = (key / tileColumns) << Self.tileBits
            let firstColumn = (key % tileColumns) << Self.tileBits
            for local in 0..<Self.cellsPerTile {
                let header = headers[tile * Self.cellsPerTile + local]
                guard header.count > 0 else { continue }
                let cell = (firstRow + Int64(local >> 3)) * columns + firstColumn + Int64(local & 7)
                body(cell, Int(header.start)..<Int(header.start + header.count))
            }
        }
    }

    // MARK: Internals

    /// The key of the tile holding the cell at `row`, `column`.
    @inlinable func tileKey(row: Int64, column: Int64) -> Int64 { (row >> Self.tileBits) * tileColumns + (column >> Self.tileBits) }

    /// Where the header of the cell at `row`, `column` is, given its tile's number.
    @inlinable static func headerIndex(tile: Int32, row: Int64, column: Int64) -> Int {
        Int(tile) * cellsPerTile + Int((row & 7) << 3 | (column & 7))
    }

    @inlinable func home(of key: Int64) -> Int { Int((UInt64(bitPattern: key) &* 0x9E37_79B9_7F4A_7C15) >> tableShift) }

    @inlinable func tile(forKey key: Int64) -> Int32? {
        let mask = table.count - 1
        var index = home(of: key)
        while true {
            let slot = table[index]
            if slot.key == key { return slot.tile }
            if slot.key == Self.emptyKey { return nil }
            index = (index + 1) & mask
        }
    }

    /// The index of `cell`'s header, making its tile when it has none.
    @inlinable mutating func headerIndex(of cell: Int64) -> Int {
        let row = cell / columns
        let column = cell % columns
        let key = tileKey(row: row, column: column)
        return Self.headerIndex(tile: tile(forKey: key) ?? makeTile(key), row: row, column: column)
    }

    @inlinable mutating func makeTile(_ key: Int64) -> Int32 {
        let tile: Int32
        if let free = freeTiles.popLast() {
            tile = free
            tileKeys[Int(tile)] = key
        } else {
            tile = Int32(tileKeys.count)
            tileKeys.append(key)
            occupiedInTile.append(0)
            headers.append(contentsOf: repeatElement(Header(), count: Self.cellsPerTile))
        }
        if (liveTiles + 1) * 2 > table.count { growTable() }
        insert(TileSlot(key: key, tile: tile))
        liveTiles += 1
        return tile
    }

    @inlinable mutating func insert(_ slot: TileSlot) {
        let mask = table.count - 1
        var index = home(of: slot.key)
        while table[index].key != Self.emptyKey { index = (index + 1) & mask }
        table[index] = slot
    }

    @inlinable mutating func growTable() {
        let old = table
        table = Array(repeating: TileSlot(key: Self.emptyKey, tile: 0), count: old.count * 2)
        tableShift -= 1
        for slot in old where slot.key != Self.emptyKey { insert(slot) }
    }

    /// Takes tile `key` out of the table, shifting back the slots that probed past it.
    @inlinable mutating func dropTile(_ key: Int64) {
        let mask = table.count - 1
        var hole = home(of: key)
        while table[hole].key != key { hole = (hole + 1) & mask }
        freeTiles.append(table[hole].tile)
        tileKeys[Int(table[hole].tile)] = Self.emptyKey
        var next = hole
        while true {
            next = (next + 1) & mask
            let moving = table[next]
            if moving.key == Self.emptyKey { break }
            // The slot may fill the hole when its home is not cyclically within (hole, next].
            let home = home(of: moving.key)
            let reachable = hole < next ? (home > hole && home <= next) : (home > hole || home <= next)
            if !reachable {
                table[hole] = moving
                hole = next
            }
        }
        table[hole].key = Self.emptyKey
        liveTiles -= 1
    }

    /// Appends `entry` to `cell`'s run and returns its pool index.
    @inlinable mutating func append(_ entry: GridEntry, to cell: Int64) -> Int32 {
        let at = headerIndex(of: cell)
        var header = headers[at]
        if header.capacity == 0 {
            occupiedCells += 1
            occupiedInTile[at / Self.cellsPerTile] += 1
            header.start = allocateRun(Self.smallestRun)
            header.capacity = Self.smallestRun
        } else if header.count == header.capacity {
            let start = allocateRun(header.capacity * 2)
            for offset in 0..<Int(header.count) {
                let moved = pool[Int(header.start) + offset]
                pool[Int(start) + offset] = moved
                places[Int(moved.slot)].index = start + Int32(offset)
            }
            freeRun(header.start, capacity: header.capacity)
            header.start = start
            header.capacity *= 2
        }
        let index = header.start + header.count
        pool[Int(index)] = entry
        header.count += 1
        headers[at] = header
        return index
    }

    /// Takes the entry at `place` out of its cell's run (the run's last entry fills its place).
    @inlinable mutating func takeOut(_ place: Place) {
        let at = headerIndex(of: place.cell)
        var header = headers[at]
        let last = header.start + header.count - 1
        if place.index != last {
            let moved = pool[Int(last)]
            pool[Int(place.index)] = moved
            places[Int(moved.slot)].index = place.index
        }
        header.count -= 1
        if header.count == 0 {
            freeRun(header.start, capacity: header.capacity)
            header = Header()
            occupiedCells -= 1
            let tile = at / Self.cellsPerTile
            occupiedInTile[tile] -= 1
            if occupiedInTile[tile] == 0 { dropTile(tileKeys[tile]) }
        }
        headers[at] = header
    }

    @inlinable static func sizeClass(_ capacity: Int32) -> Int { (capacity / smallestRun).trailingZeroBitCount }

    @inlinable mutating func allocateRun(_ capacity: Int32) -> Int32 {
        if let start = freeRuns[Self.sizeClass(capacity)].popLast() { return start }
        precondition(pool.count + Int(capacity) <= Int(Int32.max), "a grid holds at most 2^31 entries")
        let start = Int32(pool.count)
        pool.append(contentsOf: repeatElement(GridEntry(latOffset: 0, lonOffset: 0, alt: .nan, slot: 0), count: Int(capacity)))
        return start
    }

    @inlinable mutating func freeRun(_ start: Int32, capacity: Int32) {
        freeRuns[Self.sizeClass(capacity)].append(start)
    }
}
