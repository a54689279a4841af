/* The amxk headers in their usual order. amxk_pack.h is included when tests/compile/run.sh finds it
   (it passes -DAMXK_TEST_HAVE_PACK). */
#include "amxk.h"
#ifdef AMXK_TEST_HAVE_PACK
#  include "amxk_pack.h"
#endif
#include "amxk_moe.h"
#include "amxk_gdn.h"
