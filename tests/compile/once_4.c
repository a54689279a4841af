/* Emit-once test 4: a module's declarations were included earlier (e.g. by a project header); the
   implementation file then includes only that module again with AMXK_IMPLEMENTATION. The module must
   still emit the core implementation (amxk.h's top comment: "one AMXK_IMPLEMENTATION emits the core
   and every module included in that file"). Built once per module header (-DONCE_MODULE=...). */
#ifndef ONCE_MODULE
#  define ONCE_MODULE "amxk_moe.h"
#endif
#include ONCE_MODULE
#define AMXK_IMPLEMENTATION
#include ONCE_MODULE
#include "check.h"

int main(void) { return amxk_compile_check("once_4 " ONCE_MODULE) ? 1 : 0; }
