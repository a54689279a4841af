/* Emit-once test 1: modules before the core, amxk.h included twice, AMXK_IMPLEMENTATION defined
   throughout. A second copy of any definition would not compile; a missing one would not link. */
#define AMXK_IMPLEMENTATION
#include "amxk_gdn.h"
#include "amxk_moe.h"
#include "amxk.h"
#ifdef AMXK_TEST_HAVE_PACK
#  include "amxk_pack.h"
#endif
#include "amxk.h"
#include "check.h"

int main(void) { return amxk_compile_check("once_1") ? 1 : 0; }
