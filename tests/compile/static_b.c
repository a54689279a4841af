/* Second private copy for the AMXK_STATIC test (see static_a.c). */
#define AMXK_STATIC
#define AMXK_IMPLEMENTATION
#include "headers.h"
#include "check.h"

int static_b_check(void);
int static_b_check(void) { return amxk_compile_check("static_b"); }
