#ifndef GONDOLA_ALLOCATOR_H
#define GONDOLA_ALLOCATOR_H

#include <stdbool.h>
#include <stddef.h>

/// What the process's allocator (jemalloc, which this target links in place of glibc's malloc)
/// holds, summed over its arenas.
typedef struct {
    /// Bytes in blocks the program has allocated and not yet freed.
    size_t allocated;
    /// Bytes of the allocator's pages in memory: the allocated blocks, its own metadata, and freed
    /// pages it has not yet returned to the system (it returns them over `dirty_decay_ms`).
    size_t resident;
} gondola_allocator_statistics;

/// Reads the allocator's figures as of now (it refreshes jemalloc's statistics epoch first);
/// false when jemalloc was built without statistics.
bool gondola_read_allocator_statistics(gondola_allocator_statistics *statistics);

/// Whether jemalloc's background threads run, which return freed pages to the system on time.
bool gondola_allocator_background_threads(void);

/// jemalloc's version, such as "5.3.0-0-g54eaed1…" (a string that lives as long as the process).
const char *gondola_allocator_version(void);

#endif
