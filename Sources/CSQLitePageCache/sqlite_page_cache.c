#include "sqlite_page_cache.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

// sqlite3_config is variadic, which Swift cannot call: these two functions make the calls.

bool gondola_sqlite_reserve_page_cache(int page_size, int slots, gondola_sqlite_page_cache *reserved) {
    int header = 0;
    if (page_size <= 0 || slots <= 0) return false;
    if (sqlite3_config(SQLITE_CONFIG_PCACHE_HDRSZ, &header) != SQLITE_OK) return false;
    // SQLite rounds a slot down to a multiple of 8; round up first so the page and header fit.
    size_t slot_size = ((size_t)page_size + (size_t)header + 7) & ~(size_t)7;
    void *block = malloc(slot_size * (size_t)slots);
    if (block == NULL) return false;
    if (sqlite3_config(SQLITE_CONFIG_PAGECACHE, block, (int)slot_size, slots) != SQLITE_OK) {
        free(block);
        return false;
    }
    // Resident now rather than page by page as the caches fill.
    memset(block, 0, slot_size * (size_t)slots);
    reserved->slot_size = slot_size;
    reserved->slots = (size_t)slots;
    return true;
}

gondola_sqlite_page_cache_usage gondola_sqlite_page_cache_usage_now(void) {
    gondola_sqlite_page_cache_usage usage = {0, 0};
    sqlite3_int64 highest = 0;
    sqlite3_status64(SQLITE_STATUS_PAGECACHE_USED, &usage.slots_in_use, &highest, 0);
    sqlite3_status64(SQLITE_STATUS_PAGECACHE_OVERFLOW, &usage.overflow_bytes, &highest, 0);
    return usage;
}
