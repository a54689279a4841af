/* Two translation units, part 2: the implementation of every included header, nothing else. */
#define AMXK_IMPLEMENTATION
#include "headers.h"
