#include <stddef.h>
#include <stdint.h>
#include <spatialindex/capi/sidx_api.h>
