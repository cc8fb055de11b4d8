#ifndef GONDOLA_PREFETCH_H
#define GONDOLA_PREFETCH_H

/// Asks the processor to start loading the cache line at `address` for reading, without waiting for it.
static inline void gondola_prefetch(const void *address) { __builtin_prefetch(address, 0, 3); }

#endif
