import CSQLitePageCache
import Synchronization

/// One block of memory for every SQLite page cache of the process, sized to the caches' limits and
/// in memory from the moment it is reserved.
///
/// Without it SQLite allocates each cached page from the heap as the caches fill, which at a steady
/// load takes an hour or more: resident memory climbs all that time, and each page of 4,096 bytes and
/// its header lands in the allocator's 5 KiB size class. With it the hub's resident memory holds
/// SQLite's whole allowance from its start, slots are the exact page size, and a rise afterwards is
/// something else's. `gondola serve` reserves it for a node on SQLite (not a cluster node, which keeps
/// no SQLite database); it must happen before SQLite's first use in the process.
public enum SQLitePageCache {
    /// The reserved block.
    public struct Reservation: Sendable {
        /// Bytes of one slot: a page and the header SQLite keeps beside it.
        public let slotSize: Int
        /// Slots in the block.
        public let slots: Int
        /// Bytes of the whole block.
        public var bytes: Int { slotSize * slots }
    }

    /// Slots in use and bytes of pages SQLite allocated from the heap instead (the block was full, or
    /// a database's pages are larger than a slot).
    public struct Usage: Sendable {
        /// Slots holding a page now.
        public let slotsInUse: Int
        /// Bytes of pages allocated from the heap instead of the block.
        public let overflowBytes: Int
    }

    /// Page size the block is cut for: SQLite's default, which Gondola's database keeps.
    static let pageSize = 4096

    /// Slots enough for every page the database's connections may cache: the writer's
    /// `writerCacheLimit` and `readerLimit` readers' `readerCacheLimit`, counted as bare pages, which
    /// leaves a few per cent for the pages SQLite sets aside per connection as scratch space.
    static var slotsForOneDatabase: Int {
        (GondolaDatabase.writerCacheLimit + GondolaDatabase.readerLimit * GondolaDatabase.readerCacheLimit) / pageSize
    }

    private static let reservation = Mutex<Reservation?>(nil)

    /// Reserves the block for one Gondola database; nil when SQLite was already in use in this process
    /// (its caches then allocate from the heap, as without a block) or the memory was refused.
    public static func reserve() -> Reservation? {
        reservation.withLock { reservation in
            if let reservation { return reservation }
            var block = gondola_sqlite_page_cache()
            guard gondola_sqlite_reserve_page_cache(Int32(pageSize), Int32(slotsForOneDatabase), &block) else { return nil }
            reservation = Reservation(slotSize: block.slot_size, slots: block.slots)
            return reservation
        }
    }

    /// The block reserved in this process, if any.
    public static var reserved: Reservation? { reservation.withLock { $0 } }

    /// The block's use as of now.
    public static var usage: Usage {
        let usage = gondola_sqlite_page_cache_usage_now()
        return Usage(slotsInUse: Int(usage.slots_in_use), overflowBytes: Int(usage.overflow_bytes))
    }
}
