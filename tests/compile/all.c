/* Compile test: every amxk header with the implementation in this one file. Built as C99 and C11
   (gcc, clang) and as C++11 and C++17 (g++, clang++) with -Wall -Wextra -Wpedantic -Werror (C++17 at
   -O2, the others at -O0: tests/compile/run.sh), C99 and C++17 also with AMXK_AMX_EMULATE, then run. */
#define AMXK_IMPLEMENTATION
#include "headers.h"
#include "check.h"

int main(void) { return amxk_compile_check("all") ? 1 : 0; }
