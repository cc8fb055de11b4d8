#ifndef GONDOLA_SQLITE_PAGE_CACHE_H
#define GONDOLA_SQLITE_PAGE_CACHE_H

#include <stdbool.h>
#include <stddef.h>

/// The block of memory SQLite's page caches take their pages from (SQLITE_CONFIG_PAGECACHE).
typedef struct {
    /// Bytes of one slot: a page and the header SQLite keeps beside it.
    size_t slot_size;
    /// Slots in the block.
    size_t slots;
} gondola_sqlite_page_cache;

/// Gives SQLite one block of `slots` slots, each large enough for a page of `page_size` bytes and
/// its header, for every page cache of the process, and writes to every byte of it so that it is
/// in memory from now on. Only possible before SQLite's first use in the process: false (and
/// nothing allocated) afterwards, or when the block cannot be allocated.
bool gondola_sqlite_reserve_page_cache(int page_size, int slots, gondola_sqlite_page_cache *reserved);

/// Slots of the reserved block in use now, and bytes of pages SQLite had to allocate from the heap
/// because the block was full or the page did not fit a slot.
typedef struct {
    long long slots_in_use;
    long long overflow_bytes;
} gondola_sqlite_page_cache_usage;

/// Reads the figures above (SQLITE_STATUS_PAGECACHE_USED and _OVERFLOW).
gondola_sqlite_page_cache_usage gondola_sqlite_page_cache_usage_now(void);

#endif
