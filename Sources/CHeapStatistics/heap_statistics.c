#include "heap_statistics.h"

#include <malloc.h>

gondola_heap_statistics gondola_read_heap_statistics(void) {
    struct mallinfo2 info = mallinfo2();
    gondola_heap_statistics statistics = {.in_use = info.uordblks + info.hblkhd, .free = info.fordblks};
    return statistics;
}
