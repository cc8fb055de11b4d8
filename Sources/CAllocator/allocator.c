#include "allocator.h"

#include <jemalloc/jemalloc.h>
#include <stdint.h>

// Read by jemalloc when it starts. Background threads return freed pages to the system on time
// (over `dirty_decay_ms`, 10 s by default), also while the process is idle after a burst; without
// them jemalloc purges only as it allocates.
const char *malloc_conf = "background_thread:true";

bool gondola_read_allocator_statistics(gondola_allocator_statistics *statistics) {
    uint64_t epoch = 1;
    size_t size = sizeof(epoch);
    if (mallctl("epoch", &epoch, &size, &epoch, size) != 0) return false;
    size = sizeof(size_t);
    if (mallctl("stats.allocated", &statistics->allocated, &size, NULL, 0) != 0) return false;
    size = sizeof(size_t);
    if (mallctl("stats.resident", &statistics->resident, &size, NULL, 0) != 0) return false;
    return true;
}

const char *gondola_allocator_version(void) {
    const char *version = "unknown";
    size_t size = sizeof(version);
    mallctl("version", &version, &size, NULL, 0);
    return version;
}

bool gondola_allocator_background_threads(void) {
    bool running = false;
    size_t size = sizeof(running);
    mallctl("background_thread", &running, &size, NULL, 0);
    return running;
}
