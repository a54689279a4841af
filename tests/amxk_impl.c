/* amxk - the implementation of every header in one translation unit, compiled once per test build
   configuration (native, AMX emulator, emulated AVX-512; each sanitizer/compiler) and linked into the
   test programs, which are then compiled with -DAMXK_TEST_LINKED (declarations only). The unrolled
   kernels cost minutes to compile under the sanitizers and SIMDe; once per configuration instead of
   once per test program. tests/test_vmath.c tests private helpers and keeps its own implementation. */
#define AMXK_IMPLEMENTATION
#include "../amxk.h"
#include "../amxk_pack.h"
#include "../amxk_moe.h"
#include "../amxk_gdn.h"
