/* Emit-once test 2: declarations first (as a user header would include them), then
   AMXK_IMPLEMENTATION and every header again in another order, amxk.h twice. The implementation
   must still be emitted, once. */
#include "amxk.h"
#include "amxk_moe.h"
#define AMXK_IMPLEMENTATION
#include "amxk_moe.h"
#include "amxk.h"
#ifdef AMXK_TEST_HAVE_PACK
#  include "amxk_pack.h"
#endif
#include "amxk_gdn.h"
#include "amxk.h"
#include "check.h"

int main(void) { return amxk_compile_check("once_2") ? 1 : 0; }
