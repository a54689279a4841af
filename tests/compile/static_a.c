/* AMXK_STATIC: static_a.c and static_b.c each hold a private copy of the implementation; linking them
   together must give no duplicate symbols, and neither object may export an amxk_ symbol (run.sh
   checks with nm). */
#define AMXK_STATIC
#define AMXK_IMPLEMENTATION
#include "headers.h"
#include "check.h"

int static_b_check(void);

int main(void) {
    int bad = amxk_compile_check("static_a");
    bad |= static_b_check();
    return bad ? 1 : 0;
}
