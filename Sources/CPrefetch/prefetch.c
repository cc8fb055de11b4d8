#include "prefetch.h"
