/* amxk_moe.h - v0.1.0 - amxk module: MoE layer: routing, align, fused experts, shared expert
   Public domain or MIT, your choice (see amxk.h).

   Include after or without amxk.h (this header includes it). Define AMXK_IMPLEMENTATION in exactly one
   file before including it to emit the implementation (the core's and this module's, once each).
   Conventions (strides in elements, status codes, workspace, threading, tiers): see amxk.h.

   STATUS: skeleton. The kernels of this module are a separate piece of work and are not here yet;
   this header declares nothing beyond what amxk.h declares.
*/
#ifndef AMXK_MOE_H_INCLUDED
#define AMXK_MOE_H_INCLUDED
#include "amxk.h"
#if AMXK_VERSION_NUMBER != 100
#  error "amxk_moe.h v0.1.0 needs amxk.h v0.1.0"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif /* AMXK_MOE_H_INCLUDED */

#if defined(AMXK_IMPLEMENTATION) && !defined(AMXK_MOE_C_INCLUDED)
#define AMXK_MOE_C_INCLUDED
#include "amxk.h" /* the core implementation, if this file has not emitted it yet (the module's
                      declarations may have been included before AMXK_IMPLEMENTATION was defined) */
// >>config
// >>util
// >>scalar
// >>avx512
// >>amx
// >>dispatch
// >>api
#endif /* AMXK_IMPLEMENTATION */
