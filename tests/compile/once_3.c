/* Emit-once test 3: a module header first (it pulls in the core), then the others, then the core
   twice. */
#define AMXK_IMPLEMENTATION
#ifdef AMXK_TEST_HAVE_PACK
#  include "amxk_pack.h"
#endif
#include "amxk_moe.h"
#include "amxk_gdn.h"
#include "amxk.h"
#include "amxk.h"
#include "check.h"

int main(void) { return amxk_compile_check("once_3") ? 1 : 0; }
