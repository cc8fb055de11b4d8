#ifndef GONDOLA_HEAP_STATISTICS_H
#define GONDOLA_HEAP_STATISTICS_H

#include <stddef.h>

/// What the C allocator (glibc's malloc) holds, summed over its arenas.
typedef struct {
    /// Bytes in allocated blocks, including those mapped on their own.
    size_t in_use;
    /// Bytes in free blocks the allocator keeps for later allocations instead of returning them.
    size_t free;
} gondola_heap_statistics;

/// Reads the allocator's figures (glibc's `mallinfo2`: it locks each arena in turn while it counts).
gondola_heap_statistics gondola_read_heap_statistics(void);

#endif
