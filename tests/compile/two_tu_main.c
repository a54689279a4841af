/* Two translation units, part 1: declarations only (no AMXK_IMPLEMENTATION). The definitions come from
   two_tu_impl.c. Also built as C++ against a C implementation, which checks the extern "C" blocks. */
#include "headers.h"
#include "check.h"

int main(void) { return amxk_compile_check("two_tu") ? 1 : 0; }
