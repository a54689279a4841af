/* amxk.h - v0.1.0 - CPU kernels for LLM inference on Intel Xeon with AMX - core
   Public domain or MIT, your choice (see the end of this file).

   Do this in exactly ONE C or C++ file of your project:

       #define AMXK_IMPLEMENTATION
       #include "amxk.h"          (and/or amxk_pack.h, amxk_moe.h, amxk_gdn.h)

   Every other file includes the headers without the define and sees declarations only. The module
   headers include amxk.h themselves; one AMXK_IMPLEMENTATION emits the core and every module included
   in that file, each exactly once, in whatever order they are included.

   TABLE OF CONTENTS (grep for the anchors)
       >>config     configuration macros, linkage, private helper macros
       >>util       bit casts, exact fp conversions, size arithmetic, overlap tables, vector math
       >>scalar     portable kernels (every op has one; the fallback tier)
       >>avx2       AVX2 kernels and the 8-lane vocabulary (AMXK__V8_*) in a target region
       >>avx512     AVX-512 kernels and the 16-lane vocabulary (AMXK__V16_*) in a target region
       >>amx        AMX tile operations (hardware or the software tile emulator) and kernels
       >>dispatch   CPU detection, tier selection, the parallel-for helper
       >>api        public function definitions (validate, choose, run)

   CONFIGURATION (define before including, in the implementation file; all are optional)
       AMXK_STATIC          all public functions become `static` (private copy per translation unit)
       AMXK_DEF             linkage of public functions (default `extern`, or `static` under AMXK_STATIC)
       AMXK_AMX_EMULATE     AMX tile instructions run on a portable software tile file (see >>amx);
                            the AMX tier is then available on every CPU (AMX kernels use nothing
                            but tile operations and portable C, so they need no other ISA)
       AMXK_AVX512_EMULATE  TEST BUILDS ONLY: the AVX-512 levels' kernels are compiled through SIMDe
                            (Debian libsimde-dev) for AVX2 and count as usable on every AVX2 CPU;
                            hardware AMX is then off (combine with AMXK_AMX_EMULATE).
       AMXK_NO_AVX2         do not compile AVX2 code
       AMXK_NO_AVX512       do not compile AVX-512 code (and no hardware AMX code)
       AMXK_NO_AMX          do not compile AMX code
       AMXK_NO_SYSCALLS     never call arch_prctl (Linux tile-data permission is then unknown, so
                            hardware AMX stays off). Nothing else in amxk makes system calls.
       AMXK_ASSERT(x)       internal invariant check (default: assert from <assert.h>)

   ISA LEVELS AND DISPATCH
       Seven levels (enum amxk_tier), all compiled into one build at plain -O2; each kernel sits in the
       target region of its level, so no function is reached on a CPU that lacks an instruction it
       contains. Every op picks its microkernels from the kernel table of the context's level (a level
       without kernels of its own for an op uses the table of the level below), validates the context
       on every call (one compare, no CPUID), and may run a lower level than ctx->tier for shapes where
       that is faster, never a higher one.

   THREADING
       amxk creates no threads. A context may carry a parallel-for callback (see amxk_parallel_for_fn):
           parallel_for(user, fn, task_ctx, n_tasks)  must run fn(task_ctx, t, w) once for every
           t in [0, n_tasks), on any threads, with w in [0, ctx->n_workers) identifying the calling
           worker (no two concurrently running calls share a w), and return when all have finished.
       With parallel_for == NULL the library runs `for (t = 0; t < n_tasks; t++) fn(task_ctx, t, 0);`
       on the caller. Every op documents this serial loop. Each output element is computed by exactly
       one task with a fixed summation order, so results are bitwise identical for any worker count
       and any scheduling. The worker index only selects per-worker workspace slices.

   MEMORY
       amxk never allocates. Ops that need scratch take (workspace, workspace_bytes) and have a size
       query; workspace must be AMXK_ALIGN (64) byte aligned, its content on entry is irrelevant, and
       it may be reused freely after the call returns. Strides are in ELEMENTS everywhere in amxk
       unless a parameter name ends in _bytes. amxk never reads past the last element of an input and
       never writes outside an output's elements (gaps between strided rows included).

   ERRORS
       Public functions return amxk_status (AMXK_OK = 0, errors negative; amxk_status_string()).
       On any error nothing is written: outputs, state and workspace are left as they were.

   NUMERICS
       Conversions to bf16/fp16/fp8 round to nearest even; fp8 encoders saturate (finite values and
       infinities beyond the largest finite code give +-max; NaN stays NaN). Decoders are exact for
       every code, subnormals and zeros included.
*/
#ifndef AMXK_H_INCLUDED
#define AMXK_H_INCLUDED

#define AMXK_VERSION_MAJOR 0
#define AMXK_VERSION_MINOR 1
#define AMXK_VERSION_PATCH 0
#define AMXK_VERSION_NUMBER (AMXK_VERSION_MAJOR * 10000 + AMXK_VERSION_MINOR * 100 + AMXK_VERSION_PATCH)
#define AMXK_VERSION_STRING "0.1.0"

#include <stddef.h>
#include <stdint.h>

#ifndef AMXK_DEF
#  ifdef AMXK_STATIC
#    if defined(__GNUC__) || defined(__clang__)
#      define AMXK_DEF __attribute__((unused)) static
#    else
#      define AMXK_DEF static
#    endif
#  else
#    define AMXK_DEF extern
#  endif
#endif

#define AMXK_ALIGN 64 /* required alignment (bytes) of workspaces; packed buffers too */

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. 0 is success; every error is negative. */
typedef enum amxk_status {
    AMXK_OK = 0,
    AMXK_ERR_NULL = -1,        /* a required pointer is NULL */
    AMXK_ERR_SHAPE = -2,       /* a dimension is zero, negative or inconsistent */
    AMXK_ERR_STRIDE = -3,      /* a stride is smaller than the row it strides over */
    AMXK_ERR_ALIGN = -4,       /* a buffer is not aligned as the contract requires */
    AMXK_ERR_WORKSPACE = -5,   /* workspace missing or smaller than the size query said */
    AMXK_ERR_FORMAT = -6,      /* packed buffer of another format, version or shape */
    AMXK_ERR_DTYPE = -7,       /* dtype not supported by this op */
    AMXK_ERR_ARG = -8,         /* another argument is out of range */
    AMXK_ERR_UNSUPPORTED = -9, /* valid request this build/CPU cannot serve */
    AMXK_ERR_CONTEXT = -10,    /* context not initialised by amxk_ctx_init or inconsistent */
    AMXK_ERR_ALIAS = -11,      /* buffers overlap where the contract forbids it */
    AMXK_STATUS_FORCE_I32 = 0x7fffffff
} amxk_status;

/* Element types. */
typedef enum amxk_dtype {
    AMXK_DTYPE_INVALID = 0,
    AMXK_DTYPE_F32,
    AMXK_DTYPE_BF16,
    AMXK_DTYPE_F16,
    AMXK_DTYPE_FP8_E4M3, /* OCP e4m3fn: bias 7, max 448, NaN = S.1111.111, no inf */
    AMXK_DTYPE_FP8_E5M2, /* OCP e5m2: bias 15, max 57344, inf and NaN as IEEE */
    AMXK_DTYPE_I8,
    AMXK_DTYPE_U8,
    AMXK_DTYPE_I32,
    AMXK_DTYPE_COUNT,
    AMXK_DTYPE_FORCE_I32 = 0x7fffffff
} amxk_dtype;

typedef uint16_t amxk_bf16; /* raw bfloat16 bits */
typedef uint16_t amxk_f16;  /* raw IEEE binary16 bits */
typedef uint8_t amxk_fp8;   /* raw fp8 bits (e4m3fn or e5m2, as the dtype says) */

/* ISA levels ("tiers"), in increasing order; each requires the features of the levels below plus its
   own, so any level below a CPU's best can be selected too. Levels and the CPUs that have them:
     SCALAR        portable C (every CPU, every architecture)
     AVX2          AVX2 + FMA + F16C: Haswell .. Alder Lake, AMD Zen 1-3 (AVX-VNNI used where present)
     AVX512        + AVX-512 F/BW/VL/DQ: Skylake-SP/X
     AVX512_VNNI   + AVX512_VNNI: Cascade Lake, Ice Lake, (Tiger Lake)
     AVX512_BF16   + AVX512_BF16: Cooper Lake, AMD Zen 4 / Zen 5
     AVX512_FP16   + AVX512_FP16: Sapphire Rapids, Emerald Rapids, Granite Rapids
     AMX           AMX-TILE/BF16/INT8 with OS permission, on top of the AVX512_BF16 level (its vector
                   code runs at the best vector level usable); AMX-FP16 (Granite Rapids) is a separate
                   feature bit the fp16 AMX path checks. Under AMXK_AMX_EMULATE: the software tile
                   emulator on top of any level. */
typedef enum amxk_tier {
    AMXK_TIER_NONE = 0, /* context not initialised */
    AMXK_TIER_SCALAR = 1,
    AMXK_TIER_AVX2 = 2,
    AMXK_TIER_AVX512 = 3,
    AMXK_TIER_AVX512_VNNI = 4,
    AMXK_TIER_AVX512_BF16 = 5,
    AMXK_TIER_AVX512_FP16 = 6,
    AMXK_TIER_AMX = 7,
    AMXK_TIER_COUNT,
    AMXK_TIER_FORCE_I32 = 0x7fffffff
} amxk_tier;
#define AMXK_TIER_BIT(t) (1u << (unsigned)(t))
#define AMXK_ISA_ALL 0u /* isa_allow value meaning "every level" */
/* Every valid isa_allow bit. */
#define AMXK_ISA_MASK (((1u << (unsigned)AMXK_TIER_COUNT) - 1u) & ~1u)

/* CPU feature bits (amxk_cpu.hw / amxk_cpu.usable). */
enum {
    AMXK_CPU_AVX2 = 1u << 0,
    AMXK_CPU_FMA = 1u << 1,
    AMXK_CPU_F16C = 1u << 2,
    AMXK_CPU_AVX512F = 1u << 3,
    AMXK_CPU_AVX512BW = 1u << 4,
    AMXK_CPU_AVX512VL = 1u << 5,
    AMXK_CPU_AVX512DQ = 1u << 6,
    AMXK_CPU_AVX512VNNI = 1u << 7,
    AMXK_CPU_AVX512BF16 = 1u << 8,
    AMXK_CPU_AVX512FP16 = 1u << 9,
    AMXK_CPU_AVXVNNI = 1u << 10,
    AMXK_CPU_AMX_TILE = 1u << 11,
    AMXK_CPU_AMX_BF16 = 1u << 12,
    AMXK_CPU_AMX_INT8 = 1u << 13,
    AMXK_CPU_AMX_FP16 = 1u << 14
};
#define AMXK_CPU_ALL ((1u << 15) - 1u) /* every AMXK_CPU_* bit */

/* CPU families with memory-streaming choices of their own (amxk_cpu.family, amxk_ctx.family): how
   many weight streams a quantized decode kernel reads at once and how far ahead it prefetches
   (docs/notes/pack.md). Every family computes the same bits. */
enum {
    AMXK_FAMILY_AUTO = 0,  /* amxk_ctx.family: the CPU's (amxk_cpu.family) */
    AMXK_FAMILY_OTHER = 1, /* AMD (Zen 4 measured) and every non-Intel CPU */
    AMXK_FAMILY_INTEL = 2  /* CPUID vendor GenuineIntel */
};

/* What amxk_cpu_init found. `hw`: features CPUID reports. `usable`: the subset whose register state
   the OS enables in XCR0 (YMM for AVX*, opmask/ZMM for AVX-512, XTILECFG+XTILEDATA for AMX) and, for
   AMX, for which Linux tile-data permission was granted. `amx_permission`: 1 granted (or not needed:
   non-Linux), 0 not requested (AMXK_NO_SYSCALLS or no AMX), -1 refused by the kernel. `tiers`: mask
   of AMXK_TIER_BIT(t) usable in this build on this CPU (AMX includes the emulator). */
typedef struct amxk_cpu {
    uint32_t hw;
    uint32_t usable;
    int amx_permission;
    unsigned tiers;
    amxk_tier best_tier;
    int amx_emulated;    /* 1 when built with AMXK_AMX_EMULATE */
    int avx512_emulated; /* 1 when built with AMXK_AVX512_EMULATE (the AVX-512 levels run through SIMDe) */
    /* The features an emulator of this build adds to `usable` (AMXK_AVX512_EMULATE: the AVX-512 ones
       and AVX-VNNI, when AVX2 is usable; AMXK_AMX_EMULATE: amxk_amx_emu_set_features' AMX ones). */
    uint32_t emulated;
    int family; /* AMXK_FAMILY_INTEL or AMXK_FAMILY_OTHER (CPUID vendor) */
} amxk_cpu;

/* Detect the CPU once (idempotent; concurrent first calls compute the same values) and, on Linux
   unless AMXK_NO_SYSCALLS, request and verify AMX tile-data permission (arch_prctl
   ARCH_REQ_XCOMP_PERM / ARCH_GET_XCOMP_PERM, 18); a refusal demotes AMX. Never NULL (a static). */
AMXK_DEF const amxk_cpu *amxk_cpu_init(void);

/* Parallel-for callback: see THREADING in the top comment. */
typedef void (*amxk_task_fn)(void *task_ctx, size_t task, int worker);
typedef void (*amxk_parallel_for_fn)(void *user, amxk_task_fn fn, void *task_ctx, size_t n_tasks);

/* Context. Zero-initialise, set the public fields, call amxk_ctx_init once; then pass it (const)
   to any number of concurrent calls. A NULL context: serial, one worker, highest usable tier. */
typedef struct amxk_ctx {
    amxk_parallel_for_fn parallel_for; /* NULL: serial on the caller */
    void *parallel_user;               /* first argument of parallel_for */
    int n_workers;                     /* upper bound on the worker index + 1; 0 means 1 */
    unsigned isa_allow;                /* AMXK_ISA_ALL or an OR of AMXK_TIER_BIT(tier) */
    uint32_t cpu_deny;                 /* AMXK_CPU_* features the context must not use (0: none); e.g.
                                          AMXK_CPU_AMX_FP16 runs a Granite Rapids as a Sapphire Rapids */
    int family;                        /* AMXK_FAMILY_AUTO (amxk_ctx_init sets the CPU's), or force one:
                                          the decode kernels' memory streaming (the same bits) */
    /* set by amxk_ctx_init: */
    amxk_tier tier;    /* the tier ops use */
    uint32_t features; /* the AMXK_CPU_* features ops may use: (usable | emulated) & ~cpu_deny */
} amxk_ctx;

/* Resolves ctx->features and ctx->tier (the highest level allowed by isa_allow whose features are all
   in ctx->features); n_workers 0 -> 1. Features a level's tables consult beyond the level's own
   (AVX-VNNI at AVX2, AMX-FP16 at AMX) come from ctx->features too, so cpu_deny reproduces every
   smaller CPU of the same family on a larger one. family AMXK_FAMILY_AUTO -> amxk_cpu.family.
   AMXK_ERR_NULL: ctx NULL. AMXK_ERR_ARG: n_workers < 0, isa_allow / cpu_deny has bits outside the
   tiers / features, or family is not an AMXK_FAMILY_* value. AMXK_ERR_UNSUPPORTED: none of the allowed tiers is usable here (ctx unchanged). */
AMXK_DEF amxk_status amxk_ctx_init(amxk_ctx *ctx);

AMXK_DEF const char *amxk_version(void);               /* AMXK_VERSION_STRING */
AMXK_DEF const char *amxk_status_string(amxk_status s); /* never NULL; "unknown status" if unknown */
/* "scalar", "avx2", "avx512", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx" or "none". */
AMXK_DEF const char *amxk_tier_name(amxk_tier t);
/* The AMXK_CPU_* features level t requires (all of them usable means t is usable on hardware);
   0 for SCALAR and for values that are not a level. */
AMXK_DEF uint32_t amxk_tier_features(amxk_tier t);
AMXK_DEF size_t amxk_dtype_size(amxk_dtype t);          /* bytes per element, 0 for invalid */

/* Scalar conversions (exact, round-to-nearest-even; see NUMERICS). */
AMXK_DEF float amxk_bf16_to_f32(amxk_bf16 h);
AMXK_DEF amxk_bf16 amxk_f32_to_bf16(float f);
AMXK_DEF float amxk_f16_to_f32(amxk_f16 h);
AMXK_DEF amxk_f16 amxk_f32_to_f16(float f);
AMXK_DEF float amxk_e4m3_to_f32(amxk_fp8 b);
AMXK_DEF amxk_fp8 amxk_f32_to_e4m3(float f);
AMXK_DEF float amxk_e5m2_to_f32(amxk_fp8 b);
AMXK_DEF amxk_fp8 amxk_f32_to_e5m2(float f);

/* Array conversion dst[i] = convert(src[i]) for i in [0, n). One side must be F32, the other F32,
   BF16, F16, FP8_E4M3 or FP8_E5M2. Bitwise identical to the scalar functions on every tier.
   Tiers: scalar, AVX2, AVX-512 (the AMX tier uses the best of these). Serial. dst and src must not overlap unless
   equal with equal element sizes. n == 0 is a no-op. ctx may be NULL. */
AMXK_DEF amxk_status amxk_convert(const amxk_ctx *ctx, void *dst, amxk_dtype dst_type, const void *src,
                                  amxk_dtype src_type, size_t n);

#if defined(AMXK_AMX_EMULATE)
/* Tile emulator fault hook (AMXK_AMX_EMULATE builds only). Every tile operation that would fault on
   real hardware (#UD/#GP: unconfigured tile, palette != 1, rows > 16, bytes per row > 64, reserved
   config bytes set, dot-product shapes that do not match, repeated tile operands) calls the handler
   with a message and the emulator state is left unchanged. The default handler prints the message to
   stderr and aborts. The handler may longjmp out. Returns the previous handler. Process-wide. */
typedef void (*amxk_amx_fault_fn)(const char *message);
AMXK_DEF amxk_amx_fault_fn amxk_amx_emu_set_fault_handler(amxk_amx_fault_fn fn);

/* The AMX features the emulated tile unit presents: an OR of AMXK_CPU_AMX_TILE, _BF16, _INT8 and _FP16
   (other bits ignored). Default: all four (Granite Rapids); without FP16: Sapphire / Emerald Rapids. A
   TDP* of a feature not presented faults (#UD on hardware); without AMX_TILE every tile instruction
   does. Contexts initialised afterwards see only these features (the AMX level needs TILE, BF16 and
   INT8); older contexts that claim one no longer presented are refused (AMXK_ERR_CONTEXT).
   Process-wide; not thread-safe against concurrent calls. Returns the previous set. */
AMXK_DEF uint32_t amxk_amx_emu_set_features(uint32_t features);

/* Direct access to the emulated tile operations, for tests and for callers who write their own AMX
   kernels against the emulator. Tiles are numbered 0..7; strides are in bytes; the configuration is
   the 64-byte LDTILECFG image. State is per thread, as on hardware. */
AMXK_DEF void amxk_amx_emu_loadconfig(const void *config64);
AMXK_DEF void amxk_amx_emu_storeconfig(void *config64);
AMXK_DEF void amxk_amx_emu_release(void);
AMXK_DEF void amxk_amx_emu_loadd(int tile, const void *base, size_t stride_bytes);
AMXK_DEF void amxk_amx_emu_stored(int tile, void *base, size_t stride_bytes);
AMXK_DEF void amxk_amx_emu_zero(int tile);
AMXK_DEF void amxk_amx_emu_dpbf16ps(int c, int a, int b);
AMXK_DEF void amxk_amx_emu_dpfp16ps(int c, int a, int b);
AMXK_DEF void amxk_amx_emu_dpbssd(int c, int a, int b);
AMXK_DEF void amxk_amx_emu_dpbsud(int c, int a, int b);
AMXK_DEF void amxk_amx_emu_dpbusd(int c, int a, int b);
AMXK_DEF void amxk_amx_emu_dpbuud(int c, int a, int b);

#if defined(AMXK_AMX_EMU_COUNT)
/* Tile counters: the emulator as a performance model (AMXK_AMX_EMU_COUNT with AMXK_AMX_EMULATE; GCC
   or clang; an atomic add per op: not for production). Every emulated tile operation of every thread
   adds to process-wide counters. A TILELOADD adds rows x colsb bytes to load_bytes[src], src the
   first range registered with amxk_amx_emu_count_range (1..3) that contains its base, else 0
   (amxk_bench: 1 x, 2 the packs, 3 the workspace). dequant_blocks: 16-column blocks dequantized to 16
   bits for the AMX path (amxk_pack.h). L2 model: per thread an LRU cache of AMXK_AMX_EMU_L2_BYTES
   (2 MiB), AMXK_AMX_EMU_L2_WAYS ways (16), 64-byte lines, cold after amxk_amx_emu_counts_reset; it
   sees every tile load and store and every amxk_amx_emu_touch (the kernels' vector accesses), and
   l2_miss_bytes[src] adds 64 per line not in it. Lines are numbered by their offset in the range
   (the same counts on every CPU); src 0 is not modelled. Per thread, not per task: multi-worker
   counts can vary with a dynamic pool; one worker gives exact, repeatable counts. */
typedef struct amxk_amx_emu_counts {
    uint64_t ldtilecfg, release, tileloadd, tilestored, tilezero, tdp, dequant_blocks;
    uint64_t load_bytes[4], store_bytes;
    uint64_t l2_miss_bytes[4];
    uint64_t tdp_rows; /* the A (and C) rows of every TDP: a TDP of R < 16 rows does R / 16 of a full one's MACs */
    uint64_t xpanel_bytes; /* bytes written into tile-major x panels (amxk_pack.h's AMX bf16 / fp16 kernel's x copies) */
} amxk_amx_emu_counts;
AMXK_DEF void amxk_amx_emu_count_range(int src, const void *p, size_t bytes); /* src 1..3; bytes 0: unregister */
AMXK_DEF void amxk_amx_emu_counts_get(amxk_amx_emu_counts *c);
AMXK_DEF void amxk_amx_emu_counts_reset(void);
/* A vector (non-tile) access of bytes at p by the calling thread, for the L2 model. */
AMXK_DEF void amxk_amx_emu_touch(const void *p, size_t bytes);
#endif
#endif

#ifdef __cplusplus
}
#endif
#endif /* AMXK_H_INCLUDED */

/* ============================================================================================== */
/* Stop here if you only need the API.                                                            */
/* ============================================================================================== */

#if defined(AMXK_IMPLEMENTATION) && !defined(AMXK_C_INCLUDED)
#define AMXK_C_INCLUDED

// >>config ---------------------------------------------------------------------------------------

#ifndef AMXK_ASSERT
#  include <assert.h>
#  define AMXK_ASSERT(x) assert(x)
#endif
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#  define AMXK__PRIV __attribute__((unused)) static
#  define AMXK__INLINE __attribute__((unused)) static inline
#  define AMXK__FORCE_INLINE __attribute__((unused, always_inline)) static inline
#else
#  define AMXK__PRIV static
#  define AMXK__INLINE static
#  define AMXK__FORCE_INLINE static
#endif
#if defined(__cplusplus)
#  define AMXK__RESTRICT __restrict
#else
#  define AMXK__RESTRICT restrict
#endif
#if defined(__cplusplus)
#  define AMXK__THREAD_LOCAL thread_local
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#  define AMXK__THREAD_LOCAL _Thread_local
#else
#  define AMXK__THREAD_LOCAL __thread
#endif

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#  define AMXK__X86 1
#else
#  define AMXK__X86 0
#endif
#if AMXK__X86 && !defined(AMXK_NO_AVX2)
#  define AMXK__HAS_AVX2 1
#else
#  define AMXK__HAS_AVX2 0
#endif
#if AMXK__X86 && !defined(AMXK_NO_AVX512)
#  define AMXK__HAS_AVX512 1
#else
#  define AMXK__HAS_AVX512 0
#endif
/* AVX512_FP16 needs gcc >= 12 / clang >= 14 (the avx512fp16 target); older compilers drop the level. */
#if defined(__clang__)
#  define AMXK__CC_FP16 (__clang_major__ >= 14)
#elif defined(__GNUC__)
#  define AMXK__CC_FP16 (__GNUC__ >= 12)
#else
#  define AMXK__CC_FP16 0
#endif
#if AMXK__HAS_AVX512 && (AMXK__CC_FP16 || defined(AMXK_AVX512_EMULATE))
#  define AMXK__HAS_AVX512FP16 1
#else
#  define AMXK__HAS_AVX512FP16 0
#endif
/* AVX-VNNI (the AVX2 level's w8a8 kernel where the CPU has it) and the hardware AMX targets need
   gcc >= 11 / clang >= 12 (AMXK_AVX512_EMULATE: an AVX2 shim, amxk__sim_dpbusd256). AMX kernels are
   compiled when emulated or for real AMX, which AMXK_AVX512_EMULATE turns off (its region would
   enable real AVX-512). */
#if defined(__clang__)
#  define AMXK__CC_AVXVNNI_AMX (__clang_major__ >= 12)
#elif defined(__GNUC__)
#  define AMXK__CC_AVXVNNI_AMX (__GNUC__ >= 11)
#else
#  define AMXK__CC_AVXVNNI_AMX 0
#endif
#if AMXK__HAS_AVX2 && (AMXK__CC_AVXVNNI_AMX || defined(AMXK_AVX512_EMULATE))
#  define AMXK__HAS_AVXVNNI 1
#else
#  define AMXK__HAS_AVXVNNI 0
#endif
#if !defined(AMXK_NO_AMX) && (defined(AMXK_AMX_EMULATE) || (AMXK__HAS_AVX512 && AMXK__CC_AVXVNNI_AMX && !defined(AMXK_AVX512_EMULATE)))
#  define AMXK__HAS_AMX 1
#else
#  define AMXK__HAS_AMX 0
#endif

/* Target regions, one per level. Every function between BEGIN and END is compiled for that level's
   features and nothing more (amxk_tier_features); helpers the kernels call must sit inside the same
   region or a lower one (an always_inline intrinsic cannot cross into a lower target). Under AMXK_AMX_EMULATE the AMX
   region is empty (no target), so emulated AMX kernels run on any CPU; under AMXK_AVX512_EMULATE the
   AVX-512 regions are the AVX2 region (never a zmm register) and their intrinsics come from SIMDe. */
#define AMXK__PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#  define AMXK__TARGET_BEGIN(t) AMXK__PRAGMA(clang attribute push(__attribute__((target(t))), apply_to = function))
#  define AMXK__TARGET_END _Pragma("clang attribute pop")
#elif defined(__GNUC__)
#  define AMXK__TARGET_BEGIN(t) _Pragma("GCC push_options") AMXK__PRAGMA(GCC target(t))
#  define AMXK__TARGET_END _Pragma("GCC pop_options")
#endif
#define AMXK__TARGET_AVX2_BEGIN AMXK__TARGET_BEGIN("avx2,fma,f16c")
#if defined(AMXK_AVX512_EMULATE)
#  define AMXK__TARGET_AVXVNNI_BEGIN AMXK__TARGET_AVX2_BEGIN
#  define AMXK__TARGET_AVX512_BEGIN AMXK__TARGET_AVX2_BEGIN
#  define AMXK__TARGET_AVX512VNNI_BEGIN AMXK__TARGET_AVX2_BEGIN
#  define AMXK__TARGET_AVX512BF16_BEGIN AMXK__TARGET_AVX2_BEGIN
#  define AMXK__TARGET_AVX512FP16_BEGIN AMXK__TARGET_AVX2_BEGIN
#else
#  define AMXK__TARGET_AVXVNNI_BEGIN AMXK__TARGET_BEGIN("avx2,fma,f16c,avxvnni")
#  define AMXK__TARGET_AVX512_BEGIN AMXK__TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")
#  define AMXK__TARGET_AVX512VNNI_BEGIN AMXK__TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#  define AMXK__TARGET_AVX512BF16_BEGIN AMXK__TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16")
#  define AMXK__TARGET_AVX512FP16_BEGIN                                                              \
      AMXK__TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16,avx512fp16")
#endif
#if defined(AMXK_AMX_EMULATE)
#  define AMXK__TARGET_AMX_BEGIN
#  define AMXK__TARGET_AMX_END
#else
#  define AMXK__TARGET_AMX_BEGIN                                                                     \
      AMXK__TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16,amx-tile,amx-int8,amx-bf16")
#  define AMXK__TARGET_AMX_END AMXK__TARGET_END
#endif

#if defined(AMXK_AVX512_EMULATE) && (AMXK__HAS_AVX2 || AMXK__HAS_AVX512)
/* Test builds: every x86 intrinsic comes from SIMDe under its native name (_mm512_*, __m512 ...),
   so the kernels compile unchanged; <immintrin.h> is not included (its types would clash). */
#  define SIMDE_ENABLE_NATIVE_ALIASES
#  pragma GCC diagnostic ignored "-Wpsabi" /* 512-bit values pass the same way in every function here */
#  include <simde/x86/avx512.h>
#  include <simde/x86/fma.h>
#  include <simde/x86/f16c.h>
#  include <math.h> /* fmaf (the vdpbf16ps shim) */
#elif AMXK__HAS_AVX2 || AMXK__HAS_AVX512
/* g++ 12 warns (maybe-)uninitialized inside its own avx512fintrin.h in C++ mode */
#  if defined(__GNUC__) && !defined(__clang__)
#    pragma GCC diagnostic push
#    pragma GCC diagnostic ignored "-Wuninitialized"
#    pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#  endif
#  include <immintrin.h>
#  if defined(__GNUC__) && !defined(__clang__)
#    pragma GCC diagnostic pop
#  endif
#endif

#define AMXK__MIN(a, b) ((a) < (b) ? (a) : (b))
#define AMXK__MAX(a, b) ((a) > (b) ? (a) : (b))
/* ceil(a / b) without forming a + b - 1 (no wrap for any a, b >= 1); ROUND_UP wraps only when the
   result does not fit: sizes from unbounded inputs use amxk__sz_round (below) instead. */
#define AMXK__CEIL_DIV(a, b) ((a) / (b) + ((a) % (b) != 0))
#define AMXK__ROUND_UP(a, b) (AMXK__CEIL_DIV(a, b) * (b))

// >>util -----------------------------------------------------------------------------------------

AMXK__INLINE uint32_t amxk__f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
AMXK__INLINE float amxk__bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* bf16 <- f32: RNE on the bit pattern; NaN keeps sign and top payload, quiet bit set. */
AMXK__INLINE uint16_t amxk__f32_to_bf16(float f) {
    uint32_t u = amxk__f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
AMXK__INLINE float amxk__bf16_to_f32(uint16_t h) { return amxk__bits_f32((uint32_t)h << 16); }
/* A denormal (or zero) flushed to the zero of its sign: DAZ / FTZ of the AMX and vdpbf16ps emulation. */
AMXK__INLINE float amxk__ftz(float x) { return (amxk__f32_bits(x) & 0x7f800000u) == 0 ? amxk__bits_f32(amxk__f32_bits(x) & 0x80000000u) : x; }

/* f16 -> f32: exact; NaN gets the quiet bit (as vcvtph2ps does). */
AMXK__INLINE float amxk__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, r;
    if (e == 0x1f) {
        r = sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u);
    } else if (e != 0) {
        r = sign | ((e + 112u) << 23) | (m << 13);
    } else {
        float v = (float)m * amxk__bits_f32(0x33800000u); /* m * 2^-24, exact */
        r = sign | amxk__f32_bits(v);
    }
    return amxk__bits_f32(r);
}

/* f16 <- f32: RNE incl. subnormals, overflow -> inf; NaN quiet with top payload (as vcvtps2ph). */
AMXK__INLINE uint16_t amxk__f32_to_f16(float f) {
    uint32_t u = amxk__f32_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to inf */
    if (a < 0x38800000u) {                                 /* below 2^-14: subnormal or zero */
        /* adding 0.5 (2^-1) aligns the f16 subnormal ulp 2^-24 with the f32 ulp of 2^-1; the fp32
           add rounds to nearest even */
        float v = amxk__bits_f32(a) + 0.5f;
        return (uint16_t)(sign | (amxk__f32_bits(v) - 0x3f000000u));
    }
    a += 0xc8000fffu + ((a >> 13) & 1u); /* rebias 127 -> 15 ((15-127)<<23 mod 2^32) + RNE */
    return (uint16_t)(sign | (a >> 13));
}

/* fp8 e4m3fn -> f32: exact; 0x7f/0xff -> NaN. */
AMXK__INLINE float amxk__e4m3_to_f32(uint8_t b) {
    uint32_t sign = (uint32_t)(b & 0x80u) << 24, e = (b >> 3) & 0xfu, m = b & 7u;
    if (e == 0xf && m == 7) return amxk__bits_f32(sign | 0x7fc00000u);
    if (e == 0) return amxk__bits_f32(sign | amxk__f32_bits((float)m * (1.0f / 512.0f)));
    return amxk__bits_f32(sign | ((e + 120u) << 23) | (m << 20));
}
/* fp8 e5m2 -> f32: exact (it is the top byte of an f16). */
AMXK__INLINE float amxk__e5m2_to_f32(uint8_t b) { return amxk__f16_to_f32((uint16_t)(b << 8)); }

/* f32 -> fp8 e4m3fn, RNE, saturating: |x| rounding above 448 (and inf) -> 448; NaN -> 0x7f|sign. */
AMXK__INLINE uint8_t amxk__f32_to_e4m3(float f) {
    uint32_t u = amxk__f32_bits(f), sign = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint8_t)(sign | 0x7fu);
    if (a >= 0x43e00000u) return (uint8_t)(sign | 0x7eu); /* >= 448 */
    if (a < 0x3c800000u) {                               /* below 2^-6: subnormal or zero */
        float v = amxk__bits_f32(a) + amxk__bits_f32(141u << 23); /* ulp 2^-9 aligned, RNE */
        return (uint8_t)(sign | (amxk__f32_bits(v) - (141u << 23)));
    }
    a += 0xc407ffffu + ((a >> 20) & 1u); /* rebias 127 -> 7 ((7-127)<<23) + 0x7ffff + RNE */
    return (uint8_t)(sign | (a >> 20));
}
/* f32 -> fp8 e5m2, RNE, saturating: |x| rounding above 57344 (and inf) -> 57344; NaN -> 0x7f|sign. */
AMXK__INLINE uint8_t amxk__f32_to_e5m2(float f) {
    uint32_t u = amxk__f32_bits(f), sign = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint8_t)(sign | 0x7fu);
    if (a >= 0x47600000u) return (uint8_t)(sign | 0x7bu); /* >= 57344 */
    if (a < 0x38800000u) {                               /* below 2^-14 */
        float v = amxk__bits_f32(a) + amxk__bits_f32(134u << 23); /* ulp 2^-16 aligned */
        return (uint8_t)(sign | (amxk__f32_bits(v) - (134u << 23)));
    }
    a += 0xc80fffffu + ((a >> 21) & 1u); /* rebias 127 -> 15 + 0xfffff + RNE */
    return (uint8_t)(sign | (a >> 21));
}

/* Overflow-checked size arithmetic: the result when it fits a size_t; otherwise *ovf is set (and the
   value is meaningless). One flag collects a whole size expression; the caller tests it once. */
AMXK__INLINE size_t amxk__sz_mul(size_t a, size_t b, int *ovf) {
    if (b != 0 && a > (size_t)-1 / b) *ovf = 1;
    return a * b;
}
AMXK__INLINE size_t amxk__sz_add(size_t a, size_t b, int *ovf) {
    if (a > (size_t)-1 - b) *ovf = 1;
    return a + b;
}
/* a rounded up to a multiple of b (b >= 1). */
AMXK__INLINE size_t amxk__sz_round(size_t a, size_t b, int *ovf) { return amxk__sz_mul(AMXK__CEIL_DIV(a, b), b, ovf); }

AMXK__INLINE int amxk__overlap(const void *a, size_t na, const void *b, size_t nb) {
    const char *pa = (const char *)a, *pb = (const char *)b;
    return na && nb && pa < pb + nb && pb < pa + na;
}

/* The overlap table of an entry point: what it writes (outputs) and what it reads once it has started
   writing (inputs), each by its byte extent [p, p + bytes); NULL or 0 bytes: absent, overlapping
   nothing. An input may overlap output i only where bit i of its `may` says so (its last read comes
   before that output's first write). */
typedef struct amxk__rgn {
    const void *p;
    size_t bytes;
    unsigned may;
} amxk__rgn;

AMXK__INLINE amxk__rgn amxk__rgn_of(const void *p, size_t bytes, unsigned may) {
    amxk__rgn r;
    r.p = p, r.bytes = bytes, r.may = may;
    return r;
}

/* AMXK_ERR_ALIAS when two outputs overlap, or an output overlaps an input that may not overlap it;
   else AMXK_OK (inputs may overlap each other). n_out <= 32. Distances in uintptr_t: no pointer
   arithmetic past an object, no overflow for extents that reach the top of the address space. */
AMXK__PRIV amxk_status amxk__alias(const amxk__rgn *out, size_t n_out, const amxk__rgn *in, size_t n_in) {
    size_t i, j;
    for (i = 0; i < n_out; i++)
        for (j = i + 1; j < n_out + n_in; j++) { /* the later outputs, then every input */
            const amxk__rgn *a = &out[i], *b = j < n_out ? &out[j] : &in[j - n_out];
            const uintptr_t ua = (uintptr_t)a->p, ub = (uintptr_t)b->p;
            if (!a->p || !b->p || !a->bytes || !b->bytes || (j >= n_out && (b->may >> i & 1u))) continue;
            if (ua >= ub ? ua - ub < b->bytes : ub - ua < a->bytes) return AMXK_ERR_ALIAS;
        }
    return AMXK_OK;
}

/* Element i of a float array of dtype t (F32, BF16 or F16) as f32, and the store back (RNE): the one
   scalar element access every module uses. */
AMXK__INLINE float amxk__ld_elem(const void *p, amxk_dtype t, size_t i) {
    if (t == AMXK_DTYPE_F32) return ((const float *)p)[i];
    return t == AMXK_DTYPE_BF16 ? amxk__bf16_to_f32(((const uint16_t *)p)[i]) : amxk__f16_to_f32(((const uint16_t *)p)[i]);
}
AMXK__INLINE void amxk__st_elem(void *p, amxk_dtype t, size_t i, float v) {
    if (t == AMXK_DTYPE_F32) ((float *)p)[i] = v;
    else ((uint16_t *)p)[i] = t == AMXK_DTYPE_BF16 ? amxk__f32_to_bf16(v) : amxk__f32_to_f16(v);
}

/* The width-generic vector math layer. AMXK__VMATH_DEFINE(isa, V) defines, for the vector width whose
   vocabulary V_T, V_SET1, V_ADD ... (V = AMXK__V8 or AMXK__V16) is #defined before it:
     amxk__vexp__<isa>(x)      exp(x), x clamped to [-87, 87] (NaN stays NaN): 2^k p(r), k = round(x
                               log2 e), r = x - k ln2 in two steps (Cody-Waite), p a degree-6 polynomial;
                               within 2 ulp of the correctly rounded exp over the whole range
     amxk__vsigmoid__<isa>(x)  1 / (1 + exp(-x))
     amxk__vsilu__<isa>(x)     x / (1 + exp(-x))
     amxk__vgelu_erf__<isa>(x) x * Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2: for |x| / sqrt 2 < 0.75,
                               erf as a * P(a^2) (a = x / sqrt 2, degree 5); else the tail erfc(a) =
                               exp(-x^2 / 2) * t * Q(t), t = 1 / (1 + a / 2) (degree 8; Q fitted to
                               erfc(a) exp(a^2) by least squares in relative error, 2e-8 over
                               [0.75, 9.6]), x^2 split exactly (Dekker) so that the exponent carries
                               no rounding; Phi = erfc / 2 (x < 0) or 1 - erfc / 2; x < -16: Phi = 0.
                               Measured in tests/test_vmath.c: within 8 ulp of x Phi(x) where that
                               exceeds 1e-37 in magnitude, else within 1e-37
   Each ISA section instantiates it once (avx2: 8 lanes, avx512: 16 lanes), so every width runs the
   same algorithm and the same constants. */
#define AMXK__VMATH_DEFINE(isa, V)                                                                     \
    AMXK__INLINE V##_T amxk__vexp__##isa(V##_T x) {                                                    \
        V##_T k, r, p;                                                                                 \
        x = V##_MIN(V##_SET1(87.0f), V##_MAX(V##_SET1(-87.0f), x)); /* NaN stays */                    \
        k = V##_ROUND(V##_MUL(x, V##_SET1(1.44269504088896341f)));                                     \
        r = V##_FNMADD(k, V##_SET1(0.693359375f), x);                                                  \
        r = V##_FNMADD(k, V##_SET1(-2.12194440e-4f), r);                                               \
        p = V##_SET1(1.9875691500e-4f);                                                                \
        p = V##_FMADD(p, r, V##_SET1(1.3981999507e-3f));                                               \
        p = V##_FMADD(p, r, V##_SET1(8.3334519073e-3f));                                               \
        p = V##_FMADD(p, r, V##_SET1(4.1665795894e-2f));                                               \
        p = V##_FMADD(p, r, V##_SET1(1.6666665459e-1f));                                               \
        p = V##_FMADD(p, r, V##_SET1(5.0000001201e-1f));                                               \
        p = V##_FMADD(p, V##_MUL(r, r), V##_ADD(r, V##_SET1(1.0f)));                                   \
        return V##_LDEXP(p, k); /* p in [0.7, 1.5], k in [-126, 126]: a normal result */               \
    }                                                                                                  \
    AMXK__INLINE V##_T amxk__vsigmoid__##isa(V##_T x) {                                                \
        return V##_DIV(V##_SET1(1.0f), V##_ADD(V##_SET1(1.0f), amxk__vexp__##isa(V##_SUB(V##_SET1(0.0f), x)))); \
    }                                                                                                  \
    AMXK__INLINE V##_T amxk__vsilu__##isa(V##_T x) {                                                   \
        return V##_DIV(x, V##_ADD(V##_SET1(1.0f), amxk__vexp__##isa(V##_SUB(V##_SET1(0.0f), x))));     \
    }                                                                                                  \
    AMXK__INLINE V##_T amxk__vgelu_erf__##isa(V##_T x) {                                               \
        const V##_T as = V##_MUL(x, V##_SET1(0.70710678118654752f)), a = V##_ABS(as), u = V##_MUL(as, as); \
        const V##_T xc = V##_MIN(V##_SET1(16.0f), V##_MAX(V##_SET1(-16.0f), x)); /* exact squares */   \
        const V##_T xh = V##_HI12(xc), xl = V##_SUB(xc, xh), h = V##_MUL(xc, xc);                      \
        const V##_T l = V##_ADD(V##_ADD(V##_SUB(V##_MUL(xh, xh), h), V##_MUL(V##_ADD(xh, xh), xl)), V##_MUL(xl, xl)); \
        /* x^2 = h + l exactly (Dekker: xh holds x's top 12 bits, so every product is exact; no FMA needed) */ \
        const V##_T t = V##_DIV(V##_SET1(1.0f), V##_FMADD(a, V##_SET1(0.5f), V##_SET1(1.0f)));         \
        V##_T p, q, e, ps, pb;                                                                         \
        p = V##_SET1(-6.815897068e-4f);                                                                \
        p = V##_FMADD(p, u, V##_SET1(5.123008508e-3f));                                                \
        p = V##_FMADD(p, u, V##_SET1(-2.683854662e-2f));                                               \
        p = V##_FMADD(p, u, V##_SET1(1.128344834e-1f));                                                \
        p = V##_FMADD(p, u, V##_SET1(-3.761262298e-1f));                                               \
        p = V##_FMADD(p, u, V##_SET1(1.128379107e+0f));                                                \
        ps = V##_FMADD(V##_MUL(as, p), V##_SET1(0.5f), V##_SET1(0.5f)); /* (1 + erf(a)) / 2 */           \
        q = V##_SET1(-5.076956749e-2f);                                                                \
        q = V##_FMADD(q, t, V##_SET1(2.609771490e-1f));                                                \
        q = V##_FMADD(q, t, V##_SET1(-4.617393613e-1f));                                               \
        q = V##_FMADD(q, t, V##_SET1(2.663863897e-1f));                                                \
        q = V##_FMADD(q, t, V##_SET1(-2.612134814e-2f));                                               \
        q = V##_FMADD(q, t, V##_SET1(2.043638825e-1f));                                                \
        q = V##_FMADD(q, t, V##_SET1(2.424230129e-1f));                                                \
        q = V##_FMADD(q, t, V##_SET1(2.824845016e-1f));                                                \
        q = V##_FMADD(q, t, V##_SET1(2.820799947e-1f));                                                \
        e = amxk__vexp__##isa(V##_MUL(h, V##_SET1(-0.5f)));                                            \
        e = V##_FNMADD(e, V##_MUL(l, V##_SET1(0.5f)), e); /* exp(-h/2 - l/2) to first order in l */    \
        e = V##_MUL(V##_MUL(e, V##_MUL(q, t)), V##_SET1(0.5f)); /* erfc(|a|) / 2 */                    \
        pb = V##_SELLT(x, V##_SET1(0.0f), e, V##_SUB(V##_SET1(1.0f), e));                              \
        pb = V##_SELLT(x, V##_SET1(-16.0f), V##_SET1(0.0f), pb);                                       \
        return V##_MUL(x, V##_SELLT(a, V##_SET1(0.75f), ps, pb));                                      \
    }

#if defined(AMXK_AVX512_EMULATE) && AMXK__HAS_AVX512
/* Exact shims, in this test-only switch, for the AVX-512 intrinsics SIMDe 0.7.4 lacks: lane loops
   over the registers' bytes with the instructions' documented semantics. Masked loads and stores
   touch only the selected lanes' memory, as the hardware does. cvtps_ph rounds to nearest even
   whatever its immediate (the only mode amxk uses). Add a shim here when a kernel needs another. */
#  define __mmask8 simde__mmask8
#  define __mmask16 simde__mmask16
#  define __mmask32 simde__mmask32
#  define __mmask64 simde__mmask64
#  ifndef _MM_FROUND_TO_NEAREST_INT
#    define _MM_FROUND_TO_NEAREST_INT SIMDE_MM_FROUND_TO_NEAREST_INT
#  endif
#  ifndef _MM_FROUND_NO_EXC
#    define _MM_FROUND_NO_EXC SIMDE_MM_FROUND_NO_EXC
#  endif
AMXK__TARGET_AVX2_BEGIN /* the shims pass vectors to and from the AVX2-compiled emulated levels */
/* lanes [0, n) of esz bytes from p where k is set, else zero */
AMXK__INLINE void amxk__sim_ld(void *r, const void *p, uint64_t k, int esz, int n) {
    int i;
    for (i = 0; i < n; i++) {
        if ((k >> i) & 1u) memcpy((char *)r + i * esz, (const char *)p + i * esz, (size_t)esz);
        else memset((char *)r + i * esz, 0, (size_t)esz);
    }
}
AMXK__INLINE void amxk__sim_st(void *p, const void *r, uint64_t k, int esz, int n) {
    int i;
    for (i = 0; i < n; i++)
        if ((k >> i) & 1u) memcpy((char *)p + i * esz, (const char *)r + i * esz, (size_t)esz);
}
#  define AMXK__SIM_MASKZ_LOAD(name, T, esz, n)                                                        \
      AMXK__INLINE T amxk__sim_##name(uint64_t k, const void *p) {                                  \
          T r;                                                                                       \
          amxk__sim_ld(&r, p, k, esz, n);                                                            \
          return r;                                                                                  \
      }
#  define AMXK__SIM_MASK_STORE(name, T, esz, n)                                                        \
      AMXK__INLINE void amxk__sim_##name(void *p, uint64_t k, T a) { amxk__sim_st(p, &a, k, esz, n); }
AMXK__SIM_MASKZ_LOAD(mm512_maskz_loadu_ps, __m512, 4, 16)
AMXK__SIM_MASKZ_LOAD(mm512_maskz_loadu_epi16, __m512i, 2, 32)
AMXK__SIM_MASKZ_LOAD(mm512_maskz_loadu_epi8, __m512i, 1, 64)
AMXK__SIM_MASKZ_LOAD(mm256_maskz_loadu_epi16, __m256i, 2, 16)
AMXK__SIM_MASKZ_LOAD(mm_maskz_loadu_epi8, __m128i, 1, 16)
AMXK__SIM_MASK_STORE(mm512_mask_storeu_ps, __m512, 4, 16)
AMXK__SIM_MASK_STORE(mm256_mask_storeu_epi16, __m256i, 2, 16)
AMXK__SIM_MASK_STORE(mm_mask_storeu_epi8, __m128i, 1, 16)
#  undef _mm512_maskz_loadu_ps
#  undef _mm512_maskz_loadu_epi16
#  undef _mm512_maskz_loadu_epi8
#  undef _mm256_maskz_loadu_epi16
#  undef _mm_maskz_loadu_epi8
#  undef _mm512_mask_storeu_ps
#  undef _mm256_mask_storeu_epi16
#  undef _mm_mask_storeu_epi8
#  define _mm512_maskz_loadu_ps(k, p) amxk__sim_mm512_maskz_loadu_ps((uint64_t)(k), (p))
#  define _mm512_maskz_loadu_epi16(k, p) amxk__sim_mm512_maskz_loadu_epi16((uint64_t)(k), (p))
#  define _mm512_maskz_loadu_epi8(k, p) amxk__sim_mm512_maskz_loadu_epi8((uint64_t)(k), (p))
#  define _mm256_maskz_loadu_epi16(k, p) amxk__sim_mm256_maskz_loadu_epi16((uint64_t)(k), (p))
#  define _mm_maskz_loadu_epi8(k, p) amxk__sim_mm_maskz_loadu_epi8((uint64_t)(k), (p))
#  define _mm512_mask_storeu_ps(p, k, a) amxk__sim_mm512_mask_storeu_ps((p), (uint64_t)(k), (a))
#  define _mm256_mask_storeu_epi16(p, k, a) amxk__sim_mm256_mask_storeu_epi16((p), (uint64_t)(k), (a))
#  define _mm_mask_storeu_epi8(p, k, a) amxk__sim_mm_mask_storeu_epi8((p), (uint64_t)(k), (a))
/* vcvtps2dq under the default MXCSR (round to nearest even); out of range or NaN: INT32_MIN */
AMXK__INLINE int32_t amxk__sim_cvtss_si32(float x) {
    volatile float big = 8388608.0f; /* 2^23: adding it rounds |x| < 2^23 to an integer (RNE) */
    float a = x < 0 ? -x : x;
    if (!(a < 2147483648.0f)) return INT32_MIN;
    if (a < 8388608.0f) a = (a + big) - big;
    return x < 0 ? -(int32_t)a : (int32_t)a;
}
/* element-wise conversions: dst lane i = f(src lane i) */
#  define AMXK__SIM_CVT(name, TD, DT, TS, ST, n, expr)                                                 \
      AMXK__INLINE TD amxk__sim_##name(TS a) {                                                      \
          DT d[n];                                                                                   \
          ST s[n];                                                                                   \
          TD r;                                                                                      \
          int i;                                                                                     \
          memset(&r, 0, sizeof r);                                                                   \
          memcpy(s, &a, sizeof s);                                                                   \
          for (i = 0; i < n; i++) d[i] = (DT)(expr);                                                 \
          memcpy(&r, d, sizeof d);                                                                   \
          return r;                                                                                  \
      }
AMXK__SIM_CVT(mm512_cvtph_ps, __m512, float, __m256i, uint16_t, 16, amxk__f16_to_f32(s[i]))
AMXK__SIM_CVT(mm512_cvtps_ph, __m256i, uint16_t, __m512, float, 16, amxk__f32_to_f16(s[i]))
AMXK__SIM_CVT(mm256_cvtph_ps, __m256, float, __m128i, uint16_t, 8, amxk__f16_to_f32(s[i]))
AMXK__SIM_CVT(mm256_cvtps_ph, __m128i, uint16_t, __m256, float, 8, amxk__f32_to_f16(s[i]))
AMXK__SIM_CVT(mm512_cvtps_epi32, __m512i, int32_t, __m512, float, 16, amxk__sim_cvtss_si32(s[i]))
AMXK__SIM_CVT(mm512_cvtepi32_epi16, __m256i, uint16_t, __m512i, uint32_t, 16, s[i] & 0xffffu)
AMXK__SIM_CVT(mm512_cvtepi32_epi8, __m128i, uint8_t, __m512i, uint32_t, 16, s[i] & 0xffu)
AMXK__SIM_CVT(mm512_cvtepu16_epi32, __m512i, uint32_t, __m256i, uint16_t, 16, s[i])
AMXK__SIM_CVT(mm512_cvtepu8_epi32, __m512i, uint32_t, __m128i, uint8_t, 16, s[i])
AMXK__SIM_CVT(mm512_cvtepi32_ps, __m512, float, __m512i, int32_t, 16, (float)s[i]) /* RNE, as vcvtdq2ps */
#  undef _mm512_cvtph_ps
#  undef _mm512_cvtps_epi32
#  undef _mm256_cvtph_ps
#  undef _mm256_cvtps_ph
#  undef _mm512_cvtps_ph
#  undef _mm512_cvtepi32_epi16
#  undef _mm512_cvtepi32_epi8
#  undef _mm512_cvtepu16_epi32
#  undef _mm512_cvtepu8_epi32
#  undef _mm512_cvtepi32_ps
#  define _mm512_cvtph_ps(a) amxk__sim_mm512_cvtph_ps(a)
#  define _mm512_cvtps_epi32(a) amxk__sim_mm512_cvtps_epi32(a)
#  define _mm256_cvtph_ps(a) amxk__sim_mm256_cvtph_ps(a) /* SIMDe's F16C does not quiet NaNs */
#  define _mm256_cvtps_ph(a, imm) amxk__sim_mm256_cvtps_ph(a)
#  define _mm512_cvtps_ph(a, imm) amxk__sim_mm512_cvtps_ph(a)
#  define _mm512_cvtepi32_epi16(a) amxk__sim_mm512_cvtepi32_epi16(a)
#  define _mm512_cvtepi32_epi8(a) amxk__sim_mm512_cvtepi32_epi8(a)
#  define _mm512_cvtepu16_epi32(a) amxk__sim_mm512_cvtepu16_epi32(a)
#  define _mm512_cvtepu8_epi32(a) amxk__sim_mm512_cvtepu8_epi32(a)
#  define _mm512_cvtepi32_ps(a) amxk__sim_mm512_cvtepi32_ps(a)
/* vpsrad by an immediate (counts above 31 fill with the sign) */
AMXK__INLINE __m512i amxk__sim_mm512_srai_epi32(__m512i a, unsigned n) {
    int32_t v[16];
    int i;
    memcpy(v, &a, 64);
    for (i = 0; i < 16; i++) v[i] = n > 31 ? (v[i] < 0 ? -1 : 0) : (int32_t)(v[i] < 0 ? ~(~(uint32_t)v[i] >> n) : (uint32_t)v[i] >> n);
    memcpy(&a, v, 64);
    return a;
}
#  undef _mm512_srai_epi32
#  define _mm512_srai_epi32(a, n) amxk__sim_mm512_srai_epi32((a), (unsigned)(n))
/* unsigned 32-bit compares to a mask */
#  define AMXK__SIM_CMPU32(name, op)                                                                   \
      AMXK__INLINE __mmask16 amxk__sim_##name(__m512i a, __m512i b) {                               \
          uint32_t x[16], y[16];                                                                     \
          unsigned k = 0, i;                                                                         \
          memcpy(x, &a, 64);                                                                         \
          memcpy(y, &b, 64);                                                                         \
          for (i = 0; i < 16; i++) k |= (unsigned)(x[i] op y[i]) << i;                               \
          return (__mmask16)k;                                                                       \
      }
AMXK__SIM_CMPU32(mm512_cmpgt_epu32_mask, >)
AMXK__SIM_CMPU32(mm512_cmplt_epu32_mask, <)
AMXK__SIM_CMPU32(mm512_cmpge_epu32_mask, >=)
#  undef _mm512_cmpgt_epu32_mask
#  undef _mm512_cmplt_epu32_mask
#  undef _mm512_cmpge_epu32_mask
#  define _mm512_cmpgt_epu32_mask(a, b) amxk__sim_mm512_cmpgt_epu32_mask((a), (b))
#  define _mm512_cmplt_epu32_mask(a, b) amxk__sim_mm512_cmplt_epu32_mask((a), (b))
#  define _mm512_cmpge_epu32_mask(a, b) amxk__sim_mm512_cmpge_epu32_mask((a), (b))
/* vdpbf16ps as the SDM describes it: per 32-bit lane, acc += a.odd * b.odd, then acc += a.even * b.even,
   each a single-rounding fma (RNE) with bf16 subnormal inputs and the accumulator read as zero (DAZ) and
   subnormal results flushed (FTZ); MXCSR not consulted. (SIMDe sums both products first, without DAZ.) */
AMXK__INLINE __m512 amxk__sim_dpbf16(__m512 acc, __m512i a, __m512i b) {
    float c[16];
    uint16_t x[32], y[32];
    int i, h;
    memcpy(c, &acc, 64);
    memcpy(x, &a, 64);
    memcpy(y, &b, 64);
    for (i = 0; i < 16; i++) {
        float t = amxk__ftz(c[i]);
        for (h = 1; h >= 0; h--)
            t = amxk__ftz(fmaf(amxk__ftz(amxk__bits_f32((uint32_t)x[2 * i + h] << 16)),
                               amxk__ftz(amxk__bits_f32((uint32_t)y[2 * i + h] << 16)), t));
        c[i] = t;
    }
    memcpy(&acc, c, 64);
    return acc;
}
AMXK__TARGET_END
#endif /* AMXK_AVX512_EMULATE */

// >>scalar ---------------------------------------------------------------------------------------

AMXK__PRIV void amxk__convert__scalar(void *dst, amxk_dtype dt, const void *src, amxk_dtype st, size_t n) {
    size_t i;
    if (st == AMXK_DTYPE_F32) {
        const float *s = (const float *)src;
        switch (dt) {
        case AMXK_DTYPE_F32: memmove(dst, src, n * 4); break;
        case AMXK_DTYPE_BF16: for (i = 0; i < n; i++) ((uint16_t *)dst)[i] = amxk__f32_to_bf16(s[i]); break;
        case AMXK_DTYPE_F16: for (i = 0; i < n; i++) ((uint16_t *)dst)[i] = amxk__f32_to_f16(s[i]); break;
        case AMXK_DTYPE_FP8_E4M3: for (i = 0; i < n; i++) ((uint8_t *)dst)[i] = amxk__f32_to_e4m3(s[i]); break;
        case AMXK_DTYPE_FP8_E5M2: for (i = 0; i < n; i++) ((uint8_t *)dst)[i] = amxk__f32_to_e5m2(s[i]); break;
        default: AMXK_ASSERT(0);
        }
    } else {
        float *d = (float *)dst;
        switch (st) {
        case AMXK_DTYPE_BF16: for (i = 0; i < n; i++) d[i] = amxk__bf16_to_f32(((const uint16_t *)src)[i]); break;
        case AMXK_DTYPE_F16: for (i = 0; i < n; i++) d[i] = amxk__f16_to_f32(((const uint16_t *)src)[i]); break;
        case AMXK_DTYPE_FP8_E4M3: for (i = 0; i < n; i++) d[i] = amxk__e4m3_to_f32(((const uint8_t *)src)[i]); break;
        case AMXK_DTYPE_FP8_E5M2: for (i = 0; i < n; i++) d[i] = amxk__e5m2_to_f32(((const uint8_t *)src)[i]); break;
        default: AMXK_ASSERT(0);
        }
    }
}

/* amxk__convert__<isa>: amxk__convert__scalar at the vector width V (AMXK__V8 or AMXK__V16), bitwise
   equal: each step loads its source elements as f32 and stores them in the destination's encoding;
   a width that takes whole vectors only leaves the tail to the scalar function. */
#define AMXK__CONVERT_DEFINE(isa, V)                                                                   \
    AMXK__PRIV void amxk__convert__##isa(void *dst, amxk_dtype dt, const void *src, amxk_dtype st, size_t n) { \
        const size_t ds = amxk_dtype_size(dt), ss = amxk_dtype_size(st);                              \
        const int d8 = dt == AMXK_DTYPE_FP8_E4M3 || dt == AMXK_DTYPE_FP8_E5M2;                         \
        const int s8 = st == AMXK_DTYPE_FP8_E4M3 || st == AMXK_DTYPE_FP8_E5M2;                         \
        size_t i;                                                                                      \
        for (i = 0; i + V##_STEP_MIN <= n; i += V##_N) {                                               \
            const V##_MASK_T m = V##_MASK(n - i);                                                      \
            const char *s = (const char *)src + i * ss;                                                \
            char *d = (char *)dst + i * ds;                                                            \
            const V##_T x = s8 ? amxk__vload_fp8__##isa(s, st == AMXK_DTYPE_FP8_E5M2, m) : V##_LOADT(s, st, m); \
            if (d8) amxk__vstore_fp8__##isa(d, dt == AMXK_DTYPE_FP8_E5M2, x, m);                       \
            else V##_STORET(d, dt, x, m);                                                              \
        }                                                                                              \
        if (i < n) amxk__convert__scalar((char *)dst + i * ds, dt, (const char *)src + i * ss, st, n - i); \
    }

// >>avx2 -----------------------------------------------------------------------------------------
/* Vector bodies of 8 lanes; tails reuse the scalar functions, which are bitwise identical. */

#if AMXK__HAS_AVX2
AMXK__TARGET_AVX2_BEGIN

AMXK__INLINE __m128i amxk__cvt_f32_bf16__avx2(__m256 x) {
    __m256i u = _mm256_castps_si256(x);
    __m256i a = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
    __m256i nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7f800000)); /* a >= 0: signed compare ok */
    __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), odd), 16);
    r = _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40)), nan);
    r = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08); /* values <= 0xffff: no saturation */
    return _mm256_castsi256_si128(r);
}
AMXK__INLINE __m256 amxk__cvt_bf16_f32__avx2(__m128i h) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
AMXK__INLINE __m256 amxk__cvt_e4m3_f32__avx2(__m128i b) { /* same method as the AVX-512 version */
    __m256i u = _mm256_cvtepu8_epi32(b);
    __m256i low = _mm256_and_si256(u, _mm256_set1_epi32(0x7f));
    __m128i h = _mm_slli_epi16(_mm_and_si128(_mm_cvtepu8_epi16(b), _mm_set1_epi16(0x7f)), 7);
    __m256 v = _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f));
    __m256i r = _mm256_blendv_epi8(_mm256_castps_si256(v), _mm256_set1_epi32(0x7fc00000), _mm256_cmpeq_epi32(low, _mm256_set1_epi32(0x7f)));
    r = _mm256_or_si256(r, _mm256_slli_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x80)), 24));
    return _mm256_castsi256_ps(r);
}
AMXK__INLINE __m256 amxk__cvt_e5m2_f32__avx2(__m128i b) {
    return _mm256_cvtph_ps(_mm_slli_epi16(_mm_cvtepu8_epi16(b), 8));
}
/* 8 lanes f32 -> fp8 codes in the low 8 bytes, bitwise equal to the scalar encoders. */
AMXK__INLINE uint64_t amxk__cvt_f32_fp8__avx2(__m256 x, int e5m2) {
    const int maxv = e5m2 ? 0x47600000 : 0x43e00000, maxc = e5m2 ? 0x7b : 0x7e;
    const int subn = e5m2 ? 0x38800000 : 0x3c800000, magic = e5m2 ? (134 << 23) : (141 << 23);
    const int bias = e5m2 ? (int)0xc80fffffu : (int)0xc407ffffu;
    const __m128i sh = _mm_cvtsi32_si128(e5m2 ? 21 : 20);
    __m256i u = _mm256_castps_si256(x);
    __m256i sign = _mm256_and_si256(_mm256_srli_epi32(u, 24), _mm256_set1_epi32(0x80));
    __m256i a = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)); /* all compares below see a >= 0 */
    __m256i odd = _mm256_and_si256(_mm256_srl_epi32(a, sh), _mm256_set1_epi32(1));
    __m256i r = _mm256_srl_epi32(_mm256_add_epi32(a, _mm256_add_epi32(_mm256_set1_epi32(bias), odd)), sh);
    __m256i sub = _mm256_sub_epi32(_mm256_castps_si256(_mm256_add_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(_mm256_set1_epi32(magic)))),
                                   _mm256_set1_epi32(magic));
    __m128i lo, hi;
    uint32_t l, h;
    r = _mm256_blendv_epi8(r, sub, _mm256_cmpgt_epi32(_mm256_set1_epi32(subn), a));
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32(maxc), _mm256_cmpgt_epi32(a, _mm256_set1_epi32(maxv - 1)));
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7f), _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7f800000)));
    r = _mm256_or_si256(r, sign);
    r = _mm256_packus_epi16(_mm256_packus_epi32(r, r), _mm256_setzero_si256());
    lo = _mm256_castsi256_si128(r);
    hi = _mm256_extracti128_si256(r, 1);
    l = (uint32_t)_mm_cvtsi128_si32(lo);
    h = (uint32_t)_mm_cvtsi128_si32(hi);
    return (uint64_t)l | ((uint64_t)h << 32);
}

/* The vector math layer at 8 lanes (see AMXK__VMATH_DEFINE), and 8-lane loads / stores of F32, BF16
   and F16 arrays as f32 (stores round to nearest even, bitwise equal to amxk__st_elem). */
#define AMXK__V8_T __m256
#define AMXK__V8_SET1(f) _mm256_set1_ps(f)
#define AMXK__V8_ADD(a, b) _mm256_add_ps(a, b)
#define AMXK__V8_SUB(a, b) _mm256_sub_ps(a, b)
#define AMXK__V8_MUL(a, b) _mm256_mul_ps(a, b)
#define AMXK__V8_DIV(a, b) _mm256_div_ps(a, b)
#define AMXK__V8_MIN(a, b) _mm256_min_ps(a, b)
#define AMXK__V8_MAX(a, b) _mm256_max_ps(a, b)
#define AMXK__V8_FMADD(a, b, c) _mm256_fmadd_ps(a, b, c)
#define AMXK__V8_FNMADD(a, b, c) _mm256_fnmadd_ps(a, b, c)
#define AMXK__V8_HI12(a) _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32((int)0xfffff000u))) /* top 12 significand bits */
#define AMXK__V8_ABS(a) _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)))
#define AMXK__V8_SELLT(a, b, c, d) _mm256_blendv_ps(d, c, _mm256_cmp_ps(a, b, _CMP_LT_OQ)) /* a < b ? c : d */
#define AMXK__V8_ROUND(a) _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define AMXK__V8_LDEXP(p, k) _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), _mm256_slli_epi32(_mm256_cvtps_epi32(k), 23)))
AMXK__VMATH_DEFINE(avx2, AMXK__V8)
AMXK__INLINE __m256 amxk__vload__avx2(const void *p, amxk_dtype t) {
    if (t == AMXK_DTYPE_F32) return _mm256_loadu_ps((const float *)p);
    if (t == AMXK_DTYPE_BF16) return amxk__cvt_bf16_f32__avx2(_mm_loadu_si128((const __m128i *)p));
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
AMXK__INLINE void amxk__vstore__avx2(void *p, amxk_dtype t, __m256 v) {
    if (t == AMXK_DTYPE_F32) _mm256_storeu_ps((float *)p, v);
    else if (t == AMXK_DTYPE_BF16) _mm_storeu_si128((__m128i *)p, amxk__cvt_f32_bf16__avx2(v));
    else _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
AMXK__INLINE __m256 amxk__vload_fp8__avx2(const void *p, int e5m2, int m) { /* m: ignored (AMXK__V8_MASK) */
    const __m128i b = _mm_loadl_epi64((const __m128i *)p);
    (void)m;
    return e5m2 ? amxk__cvt_e5m2_f32__avx2(b) : amxk__cvt_e4m3_f32__avx2(b);
}
AMXK__INLINE void amxk__vstore_fp8__avx2(void *p, int e5m2, __m256 v, int m) {
    const uint64_t b = amxk__cvt_f32_fp8__avx2(v, e5m2);
    (void)m;
    memcpy(p, &b, 8);
}
/* Steps over an array (AMXK__CONVERT_DEFINE, amxk_moe.h): a step of N lanes needs STEP_MIN elements
   (V8: whole vectors, the caller does the tail; V16: masked tails, m = MASK(elements left), MASK_T
   its type; V8 has no masks and ignores m); LOADT / STORET: F32, BF16 or F16 elements (t) as f32. */
#define AMXK__V8_N 8
#define AMXK__V8_STEP_MIN 8
#define AMXK__V8_MASK_T int
#define AMXK__V8_MASK(c) 0
#define AMXK__V8_LOADT(p, t, m) ((void)(m), amxk__vload__avx2((p), (t)))
#define AMXK__V8_STORET(p, t, v, m) ((void)(m), amxk__vstore__avx2((p), (t), (v)))

AMXK__CONVERT_DEFINE(avx2, AMXK__V8)

AMXK__TARGET_END
#endif /* AMXK__HAS_AVX2 */

/* acc + the 4-byte dot products of u (unsigned bytes) and x (signed bytes) per 32-bit lane, wrapping:
   VEX vpdpbusd (AVXVNNI regions only); the emulated-AVX-512 build runs an exact AVX2 equivalent
   (even and odd bytes widened to 16 bits, vpmaddwd: no saturation) on any AVX2 CPU. */
#if AMXK__HAS_AVXVNNI && defined(AMXK_AVX512_EMULATE)
AMXK__TARGET_AVX2_BEGIN
AMXK__INLINE __m256i amxk__sim_dpbusd256(__m256i acc, __m256i u, __m256i x) {
    const __m256i lo = _mm256_set1_epi16(0x00ff);
    const __m256i ue = _mm256_and_si256(u, lo), uo = _mm256_srli_epi16(u, 8);
    const __m256i xe = _mm256_srai_epi16(_mm256_slli_epi16(x, 8), 8), xo = _mm256_srai_epi16(x, 8);
    return _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(ue, xe), _mm256_madd_epi16(uo, xo)));
}
AMXK__TARGET_END
#  define AMXK__DPBUSD256(acc, u, x) amxk__sim_dpbusd256((acc), (u), (x))
#elif AMXK__HAS_AVXVNNI
#  define AMXK__DPBUSD256(acc, u, x) _mm256_dpbusd_avx_epi32((acc), (u), (x))
#endif

// >>avx512 -----------------------------------------------------------------------------------------

#if AMXK__HAS_AVX512
AMXK__TARGET_AVX512_BEGIN

/* 16 lanes of f32 -> bf16 in the top 16 bits of each lane (the rest garbage), bitwise equal to
   amxk__f32_to_bf16 there (vcvtneps2bf16 flushes subnormal inputs, so it is not used here): round to
   nearest even; a NaN keeps its sign and payload top, quieted. no_nan: x holds no NaN (no fix-up). */
AMXK__FORCE_INLINE __m512i amxk__bf16_top__avx512(__m512 x, int no_nan) {
    const __m512i u = _mm512_castps_si512(x);
    const __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1)));
    if (no_nan) return r;
    return _mm512_mask_or_epi32(r, _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000)),
                                u, _mm512_set1_epi32(0x00400000));
}
/* 16 lanes of f32 -> bf16 (amxk__bf16_top__avx512's words, packed). */
AMXK__INLINE __m256i amxk__cvt_f32_bf16__avx512(__m512 x) {
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(amxk__bf16_top__avx512(x, 0), 16));
}
AMXK__INLINE __m512 amxk__cvt_bf16_f32__avx512(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
/* fp8 e4m3 -> f32 exact: exponent/mantissa placed in an f16 (S.EEEE.MMM -> 0.0EEEE.MMM0000000, the
   value / 256; e4m3 subnormals become f16 subnormals), vcvtph2ps (exact, and it ignores MXCSR.DAZ),
   times 256 (a normal result), then fix NaN and the sign. Exact under FTZ/DAZ too (-ffast-math). */
AMXK__INLINE __m512 amxk__cvt_e4m3_f32__avx512(__m128i b) {
    __m512i u = _mm512_cvtepu8_epi32(b);
    __m256i h = _mm256_slli_epi16(_mm256_and_si256(_mm256_cvtepu8_epi16(b), _mm256_set1_epi16(0x7f)), 7);
    __m512 v = _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(256.0f));
    __mmask16 nan = _mm512_cmpeq_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7f)), _mm512_set1_epi32(0x7f));
    __m512i r = _mm512_mask_mov_epi32(_mm512_castps_si512(v), nan, _mm512_set1_epi32(0x7fc00000));
    r = _mm512_or_si512(r, _mm512_slli_epi32(_mm512_and_si512(u, _mm512_set1_epi32(0x80)), 24));
    return _mm512_castsi512_ps(r);
}
AMXK__INLINE __m512 amxk__cvt_e5m2_f32__avx512(__m128i b) {
    return _mm512_cvtph_ps(_mm256_slli_epi16(_mm256_cvtepu8_epi16(b), 8));
}
/* f32 -> fp8 (e4m3: ebits 4, bias 7; e5m2: ebits 5, bias 15), bitwise equal to the scalar encoders. */
AMXK__INLINE __m128i amxk__cvt_f32_fp8__avx512(__m512 x, int e5m2) {
    const uint32_t maxv = e5m2 ? 0x47600000u : 0x43e00000u, maxc = e5m2 ? 0x7bu : 0x7eu;
    const uint32_t subn = e5m2 ? 0x38800000u : 0x3c800000u, magic = e5m2 ? (134u << 23) : (141u << 23);
    const uint32_t bias = e5m2 ? 0xc80fffffu : 0xc407ffffu;
    const unsigned sh = e5m2 ? 21 : 20;
    __m512i u = _mm512_castps_si512(x);
    __m512i sign = _mm512_and_si512(_mm512_srli_epi32(u, 24), _mm512_set1_epi32(0x80));
    __m512i a = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
    __m512i nrm = _mm512_add_epi32(a, _mm512_add_epi32(_mm512_set1_epi32((int)bias),
                                                        _mm512_and_si512(_mm512_srl_epi32(a, _mm_cvtsi32_si128((int)sh)), _mm512_set1_epi32(1))));
    __m512i sub, r;
    nrm = _mm512_srl_epi32(nrm, _mm_cvtsi32_si128((int)sh));
    sub = _mm512_sub_epi32(_mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(_mm512_set1_epi32((int)magic)))),
                           _mm512_set1_epi32((int)magic));
    r = _mm512_mask_mov_epi32(nrm, _mm512_cmplt_epu32_mask(a, _mm512_set1_epi32((int)subn)), sub);
    r = _mm512_mask_mov_epi32(r, _mm512_cmpge_epu32_mask(a, _mm512_set1_epi32((int)maxv)), _mm512_set1_epi32((int)maxc));
    r = _mm512_mask_mov_epi32(r, _mm512_cmpgt_epu32_mask(a, _mm512_set1_epi32(0x7f800000)), _mm512_set1_epi32(0x7f));
    return _mm512_cvtepi32_epi8(_mm512_or_si512(r, sign));
}

/* acc + the pair dot products of 32 bf16 a and b (__m512i each): vdpbf16ps (AVX512_BF16 regions
   only; the emulated build runs the SDM's description, amxk__sim_dpbf16). */
#if defined(AMXK_AVX512_EMULATE)
#  define AMXK__DPBF16(acc, a, b) amxk__sim_dpbf16((acc), (a), (b))
#else
#  define AMXK__DPBF16(acc, a, b) _mm512_dpbf16_ps((acc), (__m512bh)(a), (__m512bh)(b))
#endif

/* The vector math layer at 16 lanes, and 16-lane loads / stores of F32, BF16 and F16 arrays as f32
   with a lane mask for tails (lanes outside k are neither read nor written). */
#define AMXK__V16_T __m512
#define AMXK__V16_SET1(f) _mm512_set1_ps(f)
#define AMXK__V16_ADD(a, b) _mm512_add_ps(a, b)
#define AMXK__V16_SUB(a, b) _mm512_sub_ps(a, b)
#define AMXK__V16_MUL(a, b) _mm512_mul_ps(a, b)
#define AMXK__V16_DIV(a, b) _mm512_div_ps(a, b)
#define AMXK__V16_MIN(a, b) _mm512_min_ps(a, b)
#define AMXK__V16_MAX(a, b) _mm512_max_ps(a, b)
#define AMXK__V16_FMADD(a, b, c) _mm512_fmadd_ps(a, b, c)
#define AMXK__V16_FNMADD(a, b, c) _mm512_fnmadd_ps(a, b, c)
#define AMXK__V16_HI12(a) _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32((int)0xfffff000u)))
#define AMXK__V16_ABS(a) _mm512_abs_ps(a)
#define AMXK__V16_SELLT(a, b, c, d) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), d, c) /* a < b ? c : d */
#define AMXK__V16_ROUND(a) _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define AMXK__V16_LDEXP(p, k) _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), _mm512_slli_epi32(_mm512_cvtps_epi32(k), 23)))
AMXK__VMATH_DEFINE(avx512, AMXK__V16)
AMXK__INLINE __m512 amxk__vload__avx512(const void *p, amxk_dtype t, __mmask16 k) {
    if (t == AMXK_DTYPE_F32) return _mm512_maskz_loadu_ps(k, p);
    if (t == AMXK_DTYPE_BF16) return amxk__cvt_bf16_f32__avx512(_mm256_maskz_loadu_epi16(k, p));
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, p));
}
AMXK__INLINE void amxk__vstore__avx512(void *p, amxk_dtype t, __m512 v, __mmask16 k) {
    if (t == AMXK_DTYPE_F32) _mm512_mask_storeu_ps(p, k, v);
    else if (t == AMXK_DTYPE_BF16) _mm256_mask_storeu_epi16(p, k, amxk__cvt_f32_bf16__avx512(v));
    else _mm256_mask_storeu_epi16(p, k, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
AMXK__INLINE __m512 amxk__vload_fp8__avx512(const void *p, int e5m2, __mmask16 k) {
    const __m128i b = _mm_maskz_loadu_epi8(k, p);
    return e5m2 ? amxk__cvt_e5m2_f32__avx512(b) : amxk__cvt_e4m3_f32__avx512(b);
}
AMXK__INLINE void amxk__vstore_fp8__avx512(void *p, int e5m2, __m512 v, __mmask16 k) {
    _mm_mask_storeu_epi8(p, k, amxk__cvt_f32_fp8__avx512(v, e5m2));
}
/* Steps over an array: see AMXK__V8_N. */
#define AMXK__V16_N 16
#define AMXK__V16_STEP_MIN 1
#define AMXK__V16_MASK_T __mmask16
#define AMXK__V16_MASK(c) ((__mmask16)((c) >= 16 ? 0xffffu : (1u << (c)) - 1u))
#define AMXK__V16_LOADT(p, t, m) amxk__vload__avx512((p), (t), (m))
#define AMXK__V16_STORET(p, t, v, m) amxk__vstore__avx512((p), (t), (v), (m))

AMXK__CONVERT_DEFINE(avx512, AMXK__V16)

AMXK__TARGET_END
#endif /* AMXK__HAS_AVX512 */

// >>amx ------------------------------------------------------------------------------------------
/* Tile operations used by every AMX kernel in amxk: the AMXK__TILE_* macros (constant tile numbers)
   expand to the hardware intrinsics, or under AMXK_AMX_EMULATE to the software tile file below.
   amxk__tilecfg is the 64-byte LDTILECFG image: kernels fill one (amxk__tilecfg_set), load it with
   AMXK__TILE_LOADCONFIG in each task and AMXK__TILE_RELEASE at its end (per thread); a task may keep
   it across several kernel calls (amxk_pack.h's tile sessions, amxk__tiles). */
typedef struct amxk__tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amxk__tilecfg;

AMXK__INLINE void amxk__tilecfg_set(amxk__tilecfg *c, int tile, int rows, int colsb) {
    c->palette = 1;
    c->rows[tile] = (uint8_t)rows;
    c->colsb[tile] = (uint16_t)colsb;
}

#if defined(AMXK_AMX_EMULATE)
#include <float.h> /* FLT_MIN */
#include <math.h> /* fmaf (TDPBF16PS / TDPFP16PS) */
#include <stdio.h>
#include <stdlib.h>

typedef struct amxk__emu_state {
    amxk__tilecfg cfg;
    int configured;
    uint8_t t[8][16][64];
} amxk__emu_state;

static AMXK__THREAD_LOCAL amxk__emu_state amxk__emu;
#define AMXK__EMU_AMX_ALL (AMXK_CPU_AMX_TILE | AMXK_CPU_AMX_BF16 | AMXK_CPU_AMX_INT8 | AMXK_CPU_AMX_FP16)
static uint32_t amxk__emu_features = AMXK__EMU_AMX_ALL; /* amxk_amx_emu_set_features */

#if defined(AMXK_AMX_EMU_COUNT)
#ifndef AMXK_AMX_EMU_L2_BYTES
#  define AMXK_AMX_EMU_L2_BYTES (2u << 20)
#endif
#ifndef AMXK_AMX_EMU_L2_WAYS
#  define AMXK_AMX_EMU_L2_WAYS 16
#endif
#define AMXK__EMU_L2_SETS (AMXK_AMX_EMU_L2_BYTES / 64 / AMXK_AMX_EMU_L2_WAYS)
static amxk_amx_emu_counts amxk__emu_cnt;
static struct { const char *p; size_t bytes; } amxk__emu_rng[4];
/* One thread's L2: per set, the ways' line keys (+1; 0 = empty) and last-use stamps (LRU). Allocated
   on the thread's first access and kept for the process (a model build); emptied when its generation
   is older than amxk__emu_l2_gen (bumped by amxk_amx_emu_counts_reset). */
typedef struct amxk__emu_l2 {
    uint64_t gen, clock;
    uint64_t key[AMXK__EMU_L2_SETS][AMXK_AMX_EMU_L2_WAYS], used[AMXK__EMU_L2_SETS][AMXK_AMX_EMU_L2_WAYS];
} amxk__emu_l2;
static AMXK__THREAD_LOCAL amxk__emu_l2 *amxk__emu_l2p;
static uint64_t amxk__emu_l2_gen = 1;
#  define AMXK__EMU_COUNT(field, v) ((void)__atomic_fetch_add(&amxk__emu_cnt.field, (uint64_t)(v), __ATOMIC_RELAXED))
AMXK_DEF void amxk_amx_emu_count_range(int src, const void *p, size_t bytes) {
    if (src >= 1 && src <= 3) amxk__emu_rng[src].p = (const char *)p, amxk__emu_rng[src].bytes = p ? bytes : 0;
}
AMXK_DEF void amxk_amx_emu_counts_get(amxk_amx_emu_counts *c) {
    const uint64_t *s = (const uint64_t *)(const void *)&amxk__emu_cnt;
    uint64_t *d = (uint64_t *)(void *)c;
    size_t i;
    for (i = 0; i < sizeof *c / 8; i++) d[i] = __atomic_load_n(s + i, __ATOMIC_RELAXED);
}
AMXK_DEF void amxk_amx_emu_counts_reset(void) {
    uint64_t *d = (uint64_t *)(void *)&amxk__emu_cnt;
    size_t i;
    for (i = 0; i < sizeof amxk__emu_cnt / 8; i++) __atomic_store_n(d + i, 0, __ATOMIC_RELAXED);
    __atomic_fetch_add(&amxk__emu_l2_gen, 1, __ATOMIC_RELAXED); /* every thread's L2 model starts cold */
}
AMXK__PRIV int amxk__emu_src(const void *base) {
    const char *b = (const char *)base;
    int i;
    for (i = 1; i <= 3; i++)
        if (amxk__emu_rng[i].bytes && b >= amxk__emu_rng[i].p && (size_t)(b - amxk__emu_rng[i].p) < amxk__emu_rng[i].bytes) return i;
    return 0;
}
/* The L2 model: `rows` runs of `bytes` bytes, `stride` apart, from p (one source: a tile or a vector
   access). Line n of range src is key (src << 56 | n) + 1, in set (n + src * sets / 4) % sets. */
AMXK__PRIV void amxk__emu_l2_access(const void *p, size_t rows, size_t stride, size_t bytes) {
    const int src = amxk__emu_src(p);
    const size_t off = src ? (size_t)((const char *)p - amxk__emu_rng[src].p) : 0;
    const uint64_t gen = __atomic_load_n(&amxk__emu_l2_gen, __ATOMIC_RELAXED);
    amxk__emu_l2 *c = amxk__emu_l2p;
    uint64_t miss = 0;
    size_t r, n;
    if (!src || !bytes) return; /* the stack and unregistered memory: not modelled */
    if (!c) {
        c = amxk__emu_l2p = (amxk__emu_l2 *)calloc(1, sizeof *c);
        if (!c) return;
    }
    if (c->gen != gen) memset(c, 0, sizeof *c), c->gen = gen;
    for (r = 0; r < rows; r++) {
        const size_t a = off + r * stride;
        for (n = a / 64; n <= (a + bytes - 1) / 64; n++) {
            const uint64_t key = ((uint64_t)src << 56 | n) + 1;
            const size_t set = (n + (size_t)src * (AMXK__EMU_L2_SETS / 4)) % AMXK__EMU_L2_SETS;
            int w, lru = 0;
            c->clock++;
            for (w = 0; w < AMXK_AMX_EMU_L2_WAYS; w++) {
                if (c->key[set][w] == key) break;
                if (c->used[set][w] < c->used[set][lru]) lru = w;
            }
            if (w == AMXK_AMX_EMU_L2_WAYS) miss += 64, w = lru, c->key[set][w] = key; /* a miss: the LRU way */
            c->used[set][w] = c->clock;
        }
    }
    if (miss) AMXK__EMU_COUNT(l2_miss_bytes[src], miss);
}
AMXK_DEF void amxk_amx_emu_touch(const void *p, size_t bytes) { amxk__emu_l2_access(p, 1, 0, bytes); }
#  define AMXK__EMU_COUNT_LOAD(base, bytes) AMXK__EMU_COUNT(load_bytes[amxk__emu_src(base)], bytes)
#  define AMXK__EMU_L2(base, rows, stride, bytes) amxk__emu_l2_access((base), (rows), (stride), (bytes))
#  define AMXK__EMU_TOUCH(p, bytes) amxk_amx_emu_touch((p), (bytes))
#else
#  define AMXK__EMU_COUNT(field, v) ((void)0)
#  define AMXK__EMU_COUNT_LOAD(base, bytes) ((void)0)
#  define AMXK__EMU_L2(base, rows, stride, bytes) ((void)0)
#endif

static void amxk__emu_default_fault(const char *msg) {
    fprintf(stderr, "amxk AMX emulator: fault: %s\n", msg);
    abort();
}
static amxk_amx_fault_fn amxk__emu_fault_fn = amxk__emu_default_fault;

/* Returns 1 (after calling the handler) when the condition is a fault. */
AMXK__PRIV int amxk__emu_fault(int cond, const char *msg) {
    if (cond) amxk__emu_fault_fn(msg);
    return cond;
}
/* Operand checks shared by every tile instruction; the message names the instruction. */
AMXK__PRIV int amxk__emu_bad_tile(int t, const char *op) {
    static AMXK__THREAD_LOCAL char msg[160];
    const char *what = !(amxk__emu_features & AMXK_CPU_AMX_TILE) ? "AMX-TILE is not presented (amxk_amx_emu_set_features)"
                       : t < 0 || t > 7                ? "tile index outside 0..7"
                       : !amxk__emu.configured       ? "tile used before LDTILECFG (or after TILERELEASE)"
                       : amxk__emu.cfg.rows[t] == 0 ? "tile not configured (rows or colsb is 0)"
                                                     : NULL;
    if (!what) return 0;
    snprintf(msg, sizeof msg, "%s: tmm%d: %s", op, t, what);
    amxk__emu_fault_fn(msg);
    return 1;
}

AMXK_DEF amxk_amx_fault_fn amxk_amx_emu_set_fault_handler(amxk_amx_fault_fn fn) {
    amxk_amx_fault_fn old = amxk__emu_fault_fn;
    amxk__emu_fault_fn = fn ? fn : amxk__emu_default_fault;
    return old;
}

AMXK_DEF void amxk_amx_emu_loadconfig(const void *config64) {
    amxk__tilecfg c;
    int i;
    AMXK__EMU_COUNT(ldtilecfg, 1);
    if (amxk__emu_fault(!(amxk__emu_features & AMXK_CPU_AMX_TILE), "LDTILECFG: AMX-TILE is not presented (amxk_amx_emu_set_features)")) return;
    memcpy(&c, config64, 64);
    if (c.palette == 0) { /* palette 0 = INIT state, as TILERELEASE */
        amxk_amx_emu_release();
        return;
    }
    if (amxk__emu_fault(c.palette != 1, "LDTILECFG: palette must be 0 or 1")) return;
    if (amxk__emu_fault(c.start_row != 0, "LDTILECFG: start_row must be 0")) return;
    for (i = 0; i < 14; i++)
        if (amxk__emu_fault(c.reserved[i] != 0, "LDTILECFG: reserved bytes 2..15 must be 0")) return;
    for (i = 0; i < 16; i++) {
        if (i >= 8 && amxk__emu_fault(c.rows[i] || c.colsb[i], "LDTILECFG: tiles 8..15 do not exist in palette 1")) return;
        if (amxk__emu_fault(c.rows[i] > 16, "LDTILECFG: rows > 16")) return;
        if (amxk__emu_fault(c.colsb[i] > 64, "LDTILECFG: bytes per row (colsb) > 64")) return;
        if (amxk__emu_fault((c.rows[i] == 0) != (c.colsb[i] == 0), "LDTILECFG: rows and colsb must be both 0 or both set")) return;
    }
    amxk__emu.cfg = c;
    amxk__emu.configured = 1;
    memset(amxk__emu.t, 0, sizeof amxk__emu.t);
}
AMXK_DEF void amxk_amx_emu_storeconfig(void *config64) {
    if (amxk__emu.configured) memcpy(config64, &amxk__emu.cfg, 64);
    else memset(config64, 0, 64);
}
AMXK_DEF void amxk_amx_emu_release(void) {
    AMXK__EMU_COUNT(release, 1);
    memset(&amxk__emu, 0, sizeof amxk__emu);
}
AMXK_DEF void amxk_amx_emu_loadd(int t, const void *base, size_t stride) {
    int r;
    if (amxk__emu_bad_tile(t, "TILELOADD")) return;
    AMXK__EMU_COUNT(tileloadd, 1);
    AMXK__EMU_COUNT_LOAD(base, (size_t)amxk__emu.cfg.rows[t] * amxk__emu.cfg.colsb[t]);
    AMXK__EMU_L2(base, amxk__emu.cfg.rows[t], stride, amxk__emu.cfg.colsb[t]);
    memset(amxk__emu.t[t], 0, sizeof amxk__emu.t[t]); /* bytes past rows/colsb read as zero */
    for (r = 0; r < amxk__emu.cfg.rows[t]; r++)
        memcpy(amxk__emu.t[t][r], (const char *)base + (size_t)r * stride, amxk__emu.cfg.colsb[t]);
}
AMXK_DEF void amxk_amx_emu_stored(int t, void *base, size_t stride) {
    int r;
    if (amxk__emu_bad_tile(t, "TILESTORED")) return;
    AMXK__EMU_COUNT(tilestored, 1);
    AMXK__EMU_COUNT(store_bytes, (size_t)amxk__emu.cfg.rows[t] * amxk__emu.cfg.colsb[t]);
    AMXK__EMU_L2(base, amxk__emu.cfg.rows[t], stride, amxk__emu.cfg.colsb[t]);
    for (r = 0; r < amxk__emu.cfg.rows[t]; r++)
        memcpy((char *)base + (size_t)r * stride, amxk__emu.t[t][r], amxk__emu.cfg.colsb[t]);
}
AMXK_DEF void amxk_amx_emu_zero(int t) {
    if (amxk__emu_bad_tile(t, "TILEZERO")) return;
    AMXK__EMU_COUNT(tilezero, 1);
    memset(amxk__emu.t[t], 0, sizeof amxk__emu.t[t]);
}

/* Shape rules shared by every TDP* (SDM: #UD otherwise), and the instruction's feature (`feature`,
   an AMXK_CPU_AMX_* bit) presented. K is counted in 4-byte groups. */
AMXK__PRIV int amxk__emu_dp_check(int c, int a, int b, uint32_t feature) {
    const amxk__tilecfg *g = &amxk__emu.cfg;
    if (amxk__emu_fault(!(amxk__emu_features & feature), feature == AMXK_CPU_AMX_FP16   ? "TDPFP16PS: AMX-FP16 is not presented (amxk_amx_emu_set_features)"
                                                         : feature == AMXK_CPU_AMX_BF16 ? "TDPBF16PS: AMX-BF16 is not presented (amxk_amx_emu_set_features)"
                                                                                        : "TDPB*D: AMX-INT8 is not presented (amxk_amx_emu_set_features)"))
        return 1;
    if (amxk__emu_bad_tile(c, "TDP*") || amxk__emu_bad_tile(a, "TDP*") || amxk__emu_bad_tile(b, "TDP*")) return 1;
    if (amxk__emu_fault(c == a || c == b || a == b, "TDP*: the three tile operands must be distinct")) return 1;
    if (amxk__emu_fault(g->rows[c] != g->rows[a], "TDP*: C rows != A rows")) return 1;
    if (amxk__emu_fault(g->colsb[c] != g->colsb[b], "TDP*: C colsb != B colsb")) return 1;
    if (amxk__emu_fault(g->colsb[a] != 4 * g->rows[b], "TDP*: A colsb != 4 * B rows")) return 1;
    if (amxk__emu_fault(g->colsb[c] % 4 != 0 || g->colsb[a] % 4 != 0, "TDP*: A/C colsb must be a multiple of 4")) return 1;
    return 0;
}

AMXK__INLINE float amxk__emu_bf16_daz(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    if ((h & 0x7f80u) == 0) h &= 0x8000u; /* bf16 denormal inputs are treated as zero */
    return amxk__bf16_to_f32(h);
}
AMXK__INLINE float amxk__emu_f16(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return amxk__f16_to_f32(h);
}

/* TDPBF16PS / TDPFP16PS in the order of the Intel SDM's "Operation" pseudo-code (Intel 64 and IA-32
   Architectures Software Developer's Manual, Vol. 2, TDPBF16PS and TDPFP16PS). For each row m, a
   temporary of two fp32 lanes per output column n starts at +0; for every pair k, in order, lane 2n
   accumulates A[m][2k]*B[k][2n] and lane 2n+1 accumulates A[m][2k+1]*B[k][2n+1], each step one fp32
   FMA (the product is not rounded on its own; the sum is rounded once, RNE); after the k loop,
   tmp = lane[2n] + lane[2n+1] (rounded) and C[m][n] = C[m][n] + tmp (rounded): C's own value enters
   only at the end, and the even and odd products are summed apart until then. DAZ = FTZ = 1
   throughout: every denormal result is flushed to a zero of its sign (flushed when the rounded fp32
   value is denormal), a denormal C is read as zero, bf16 denormal inputs are treated as zero; fp16
   denormal inputs are honoured (the TDPFP16PS text says so; every fp16 value is an fp32 normal).
   NaNs: a NaN C stays C, quieted (bit 22 set), whatever the products hold: the SDM says nothing; an
   Emerald Rapids (family 6 model 207) does this, where the sum C + tmp of two NaNs had given tmp's
   NaN in 9301 of 866306 raw TDPBF16PS outputs (bench/results.md, "AMX silicon"). Other NaN choices
   (inside the lanes, a NaN tmp with C not NaN) are the x86 FMA / add rules of the compiled code; they
   matched that silicon in every other output.
   tests/amx_silicon.c compares every tile path against this emulator bit for bit where AMX exists. */
/* The rows of one TDPBF16PS / TDPFP16PS on decoded operands: af[m][2k + i] = A[m][2k + i], be[k][n] /
   bo[k][n] = B[k][2n] / B[k][2n + 1] (zero past N), each lane's FMAs in k order as above, the FTZ
   written as a compare (|v| < FLT_MIN: a zero of v's sign; NaN and inf pass) so that the n loop
   vectorises. One body, compiled portably (fmaf) and, on x86, for FMA (the same single-rounding
   operation in registers instead of a libm call; amxk__emu_dp_float picks it when the CPU has FMA). */
#define AMXK__EMU_DP_ROWS_DEFINE(name)                                                                 \
    AMXK__PRIV void name(uint8_t (*ct)[64], const float (*af)[32], const float (*be)[16], const float (*bo)[16], \
                         int M, int N, int K) {                                                        \
        int m, n, k;                                                                                   \
        for (m = 0; m < M; m++) {                                                                      \
            float le[16], lo[16];                                                                      \
            for (n = 0; n < 16; n++) le[n] = 0.0f, lo[n] = 0.0f;                                       \
            for (k = 0; k < K; k++) {                                                                  \
                const float ae = af[m][2 * k], ao = af[m][2 * k + 1];                                  \
                for (n = 0; n < 16; n++) {                                                             \
                    const float e = fmaf(ae, be[k][n], le[n]), o = fmaf(ao, bo[k][n], lo[n]);          \
                    le[n] = fabsf(e) < FLT_MIN ? copysignf(0.0f, e) : e;                               \
                    lo[n] = fabsf(o) < FLT_MIN ? copysignf(0.0f, o) : o;                               \
                }                                                                                      \
            }                                                                                          \
            for (n = 0; n < N; n++) {                                                                  \
                float acc, tmp = amxk__ftz(le[n] + lo[n]);                                             \
                memcpy(&acc, &ct[m][4 * n], 4);                                                        \
                /* a NaN C stays C, quieted, over a NaN sum (silicon) */                               \
                acc = acc != acc ? amxk__bits_f32(amxk__f32_bits(acc) | 0x00400000u) : amxk__ftz(amxk__ftz(acc) + tmp); \
                memcpy(&ct[m][4 * n], &acc, 4);                                                        \
            }                                                                                          \
        }                                                                                              \
    }
AMXK__EMU_DP_ROWS_DEFINE(amxk__emu_dp_rows)
#if AMXK__HAS_AVX2
AMXK__TARGET_AVX2_BEGIN
AMXK__EMU_DP_ROWS_DEFINE(amxk__emu_dp_rows__fma)
AMXK__TARGET_END
#endif
AMXK__PRIV void amxk__emu_dp_float(int c, int a, int b, int fp16) {
    int m, n, k, M, N, K;
    float af[16][32], be[16][16], bo[16][16];
    if (amxk__emu_dp_check(c, a, b, fp16 ? AMXK_CPU_AMX_FP16 : AMXK_CPU_AMX_BF16)) return;
    AMXK__EMU_COUNT(tdp, 1);
    AMXK__EMU_COUNT(tdp_rows, amxk__emu.cfg.rows[c]);
    M = amxk__emu.cfg.rows[c], N = amxk__emu.cfg.colsb[c] / 4, K = amxk__emu.cfg.colsb[a] / 4;
    for (m = 0; m < M; m++)
        for (k = 0; k < 2 * K; k++) {
            const uint8_t *pa = &amxk__emu.t[a][m][2 * k];
            af[m][k] = fp16 ? amxk__emu_f16(pa) : amxk__emu_bf16_daz(pa);
        }
    for (k = 0; k < K; k++)
        for (n = 0; n < 16; n++) {
            const uint8_t *pb = &amxk__emu.t[b][k][4 * n];
            be[k][n] = n >= N ? 0.0f : fp16 ? amxk__emu_f16(pb) : amxk__emu_bf16_daz(pb);
            bo[k][n] = n >= N ? 0.0f : fp16 ? amxk__emu_f16(pb + 2) : amxk__emu_bf16_daz(pb + 2);
        }
#if AMXK__HAS_AVX2
    if (amxk_cpu_init()->usable & AMXK_CPU_FMA) {
        amxk__emu_dp_rows__fma(amxk__emu.t[c], (const float(*)[32])af, (const float(*)[16])be, (const float(*)[16])bo, M, N, K);
        return;
    }
#endif
    amxk__emu_dp_rows(amxk__emu.t[c], (const float(*)[32])af, (const float(*)[16])be, (const float(*)[16])bo, M, N, K);
}
/* TDPB[SU][SU]D: C_i32[m][n] += sum over k, i<4 of ext(A[m][4k+i]) * ext(B[k][4n+i]), wrapping. */
AMXK__PRIV void amxk__emu_dp_int8(int c, int a, int b, int a_signed, int b_signed) {
    int m, n, k, i, M, N, K;
    if (amxk__emu_dp_check(c, a, b, AMXK_CPU_AMX_INT8)) return;
    AMXK__EMU_COUNT(tdp, 1);
    AMXK__EMU_COUNT(tdp_rows, amxk__emu.cfg.rows[c]);
    M = amxk__emu.cfg.rows[c], N = amxk__emu.cfg.colsb[c] / 4, K = amxk__emu.cfg.colsb[a] / 4;
    for (m = 0; m < M; m++)
        for (n = 0; n < N; n++) {
            uint32_t acc;
            memcpy(&acc, &amxk__emu.t[c][m][4 * n], 4);
            for (k = 0; k < K; k++)
                for (i = 0; i < 4; i++) {
                    uint8_t x = amxk__emu.t[a][m][4 * k + i], y = amxk__emu.t[b][k][4 * n + i];
                    int32_t xa = a_signed ? (int32_t)(int8_t)x : (int32_t)x, yb = b_signed ? (int32_t)(int8_t)y : (int32_t)y;
                    acc += (uint32_t)(xa * yb);
                }
            memcpy(&amxk__emu.t[c][m][4 * n], &acc, 4);
        }
}
AMXK_DEF void amxk_amx_emu_dpbf16ps(int c, int a, int b) { amxk__emu_dp_float(c, a, b, 0); }
AMXK_DEF void amxk_amx_emu_dpfp16ps(int c, int a, int b) { amxk__emu_dp_float(c, a, b, 1); }
AMXK_DEF void amxk_amx_emu_dpbssd(int c, int a, int b) { amxk__emu_dp_int8(c, a, b, 1, 1); }
AMXK_DEF void amxk_amx_emu_dpbsud(int c, int a, int b) { amxk__emu_dp_int8(c, a, b, 1, 0); }
AMXK_DEF void amxk_amx_emu_dpbusd(int c, int a, int b) { amxk__emu_dp_int8(c, a, b, 0, 1); }
AMXK_DEF void amxk_amx_emu_dpbuud(int c, int a, int b) { amxk__emu_dp_int8(c, a, b, 0, 0); }

#  define AMXK__TILE_LOADCONFIG(cfg) amxk_amx_emu_loadconfig(cfg)
#  define AMXK__TILE_RELEASE() amxk_amx_emu_release()
#  define AMXK__TILE_LOADD(t, p, s) amxk_amx_emu_loadd((t), (p), (size_t)(s))
#  define AMXK__TILE_STREAM_LOADD(t, p, s) amxk_amx_emu_loadd((t), (p), (size_t)(s))
#  define AMXK__TILE_STORED(t, p, s) amxk_amx_emu_stored((t), (p), (size_t)(s))
#  define AMXK__TILE_ZERO(t) amxk_amx_emu_zero(t)
#  define AMXK__TDPBF16PS(c, a, b) amxk_amx_emu_dpbf16ps((c), (a), (b))
#  define AMXK__TDPFP16PS(c, a, b) amxk_amx_emu_dpfp16ps((c), (a), (b))
#  define AMXK__TDPBSSD(c, a, b) amxk_amx_emu_dpbssd((c), (a), (b))
#  define AMXK__TDPBSUD(c, a, b) amxk_amx_emu_dpbsud((c), (a), (b))
#  define AMXK__TDPBUSD(c, a, b) amxk_amx_emu_dpbusd((c), (a), (b))
#  define AMXK__TDPBUUD(c, a, b) amxk_amx_emu_dpbuud((c), (a), (b))
#elif AMXK__HAS_AMX /* real hardware */
/* LDTILECFG: the compiler barrier first, because _tile_loadconfig's asm names only 8 of the 64 bytes
   as its input and gcc 12 then drops the stores of the rest of a local configuration (seen at -O2) */
#  define AMXK__TILE_LOADCONFIG(cfg)                                                                   \
      do {                                                                                           \
          __asm__ volatile("" ::"r"(cfg) : "memory");                                                \
          _tile_loadconfig(cfg);                                                                     \
      } while (0)
#  define AMXK__TILE_RELEASE() _tile_release()
#  define AMXK__TILE_LOADD(t, p, s) _tile_loadd(t, p, s)
#  define AMXK__TILE_STREAM_LOADD(t, p, s) _tile_stream_loadd(t, p, s)
#  define AMXK__TILE_STORED(t, p, s) _tile_stored(t, p, s)
#  define AMXK__TILE_ZERO(t) _tile_zero(t)
#  define AMXK__TDPBF16PS(c, a, b) _tile_dpbf16ps(c, a, b)
#  define AMXK__TDPBSSD(c, a, b) _tile_dpbssd(c, a, b)
#  define AMXK__TDPBSUD(c, a, b) _tile_dpbsud(c, a, b)
#  define AMXK__TDPBUSD(c, a, b) _tile_dpbusd(c, a, b)
#  define AMXK__TDPBUUD(c, a, b) _tile_dpbuud(c, a, b)
/* AMX-FP16 has no intrinsic in gcc 12 / clang 14 and clang 14's assembler lacks the mnemonic:
   TDPFP16PS tmm_c, tmm_a, tmm_b is VEX.128.F2.0F38.W0 5C /r with vvvv = ~b, reg = c, rm = a. */
#  define AMXK__TDPFP16PS(c, a, b)                                                                   \
      __asm__ volatile(".byte 0xc4, 0xe2, %c0, 0x5c, %c1" ::"i"(0x03 | ((~(b) & 15) << 3)), "i"(0xc0 | ((c) << 3) | (a)))
#endif
#ifndef AMXK__EMU_COUNT /* the tile counters exist only in the emulator (AMXK_AMX_EMU_COUNT) */
#  define AMXK__EMU_COUNT(field, v) ((void)0)
#endif
#ifndef AMXK__EMU_TOUCH /* a kernel's vector access of the pack or workspace, for the L2 model */
#  define AMXK__EMU_TOUCH(p, bytes) ((void)0)
#endif

// >>dispatch -------------------------------------------------------------------------------------

#if AMXK__X86
AMXK__PRIV void amxk__cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}
AMXK__PRIV uint64_t amxk__xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#  if defined(__linux__) && !defined(AMXK_NO_SYSCALLS)
/* arch_prctl through a raw syscall: glibc has no wrapper and syscall() needs _GNU_SOURCE. */
AMXK__PRIV long amxk__arch_prctl(long code, unsigned long arg) {
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(158L /* SYS_arch_prctl */), "D"(code), "S"(arg) : "rcx", "r11", "memory");
    return ret;
}
#  endif
#endif

/* 1 when this build holds code of level t (the ISA switches and the compiler allow it). */
AMXK__PRIV int amxk__level_compiled(amxk_tier t) {
    switch (t) {
    case AMXK_TIER_SCALAR: return 1;
    case AMXK_TIER_AVX2: return AMXK__HAS_AVX2;
    case AMXK_TIER_AVX512: case AMXK_TIER_AVX512_VNNI: case AMXK_TIER_AVX512_BF16: return AMXK__HAS_AVX512;
    case AMXK_TIER_AVX512_FP16: return AMXK__HAS_AVX512FP16;
    case AMXK_TIER_AMX: return AMXK__HAS_AMX;
    default: return 0;
    }
}

static amxk_cpu amxk__cpu_info;
static volatile int amxk__cpu_done;

/* 1 when level t runs with the features `feat` in this build: its code is compiled and its features
   (amxk_tier_features) are all in feat; the emulated AMX level needs only the AMX-TILE/BF16/INT8 bits
   (its tiles are portable C, on top of any vector level). */
AMXK__PRIV int amxk__tier_ok(amxk_tier t, uint32_t feat) {
    uint32_t need;
    if (t == AMXK_TIER_SCALAR) return 1;
    if (t < AMXK_TIER_SCALAR || t > AMXK_TIER_AMX || !amxk__level_compiled(t)) return 0;
    need = amxk_tier_features(t);
#if defined(AMXK_AMX_EMULATE)
    if (t == AMXK_TIER_AMX) need = AMXK_CPU_AMX_TILE | AMXK_CPU_AMX_BF16 | AMXK_CPU_AMX_INT8;
#endif
    return (feat & need) == need;
}
/* Fills c->emulated (the emulators' features, AMX's as amxk_amx_emu_set_features last set them),
   c->tiers and c->best_tier from c->usable. */
AMXK__PRIV void amxk__cpu_tiers(amxk_cpu *c) {
    int t;
    c->emulated = 0;
#if defined(AMXK_AVX512_EMULATE)
    { /* emulated AVX-512 levels (and the AVX-VNNI shim): SIMDe code compiled for AVX2 */
        const uint32_t need2 = amxk_tier_features(AMXK_TIER_AVX2);
        if ((c->usable & need2) == need2)
            c->emulated |= AMXK_CPU_AVX512F | AMXK_CPU_AVX512BW | AMXK_CPU_AVX512VL | AMXK_CPU_AVX512DQ | AMXK_CPU_AVX512VNNI |
                           AMXK_CPU_AVX512BF16 | (AMXK__HAS_AVX512FP16 ? AMXK_CPU_AVX512FP16 : 0) | (AMXK__HAS_AVXVNNI ? AMXK_CPU_AVXVNNI : 0);
    }
#endif
#if defined(AMXK_AMX_EMULATE) && AMXK__HAS_AMX
    c->emulated |= amxk__emu_features & AMXK__EMU_AMX_ALL;
#endif
    c->tiers = 0;
    for (t = AMXK_TIER_SCALAR; t <= AMXK_TIER_AMX; t++)
        if (amxk__tier_ok((amxk_tier)t, c->usable | c->emulated)) c->tiers |= AMXK_TIER_BIT(t), c->best_tier = (amxk_tier)t;
}

AMXK__PRIV void amxk__cpu_detect(amxk_cpu *c) {
    memset(c, 0, sizeof *c);
    c->family = AMXK_FAMILY_OTHER;
#if AMXK__X86
    {
        uint32_t r[4], max_leaf, l7[4] = {0, 0, 0, 0}, l71[4] = {0, 0, 0, 0}, os_ymm = 0, os_zmm = 0, os_tile = 0;
        uint32_t hw = 0;
        amxk__cpuid(0, 0, r);
        max_leaf = r[0];
        /* "GenuineIntel" in EBX, EDX, ECX */
        c->family = r[1] == 0x756e6547u && r[3] == 0x49656e69u && r[2] == 0x6c65746eu ? AMXK_FAMILY_INTEL : AMXK_FAMILY_OTHER;
        amxk__cpuid(1, 0, r);
        if (r[2] & (1u << 12)) hw |= AMXK_CPU_FMA;
        if (r[2] & (1u << 29)) hw |= AMXK_CPU_F16C;
        if (r[2] & (1u << 27)) { /* OSXSAVE: XGETBV is available */
            uint64_t xcr0 = amxk__xgetbv0();
            os_ymm = (xcr0 & 0x6u) == 0x6u;
            os_zmm = (xcr0 & 0xe6u) == 0xe6u;
            os_tile = (xcr0 & 0x60000u) == 0x60000u;
        }
        if (max_leaf >= 7) {
            amxk__cpuid(7, 0, l7);
            if (l7[0] >= 1) amxk__cpuid(7, 1, l71);
        }
        if (l7[1] & (1u << 5)) hw |= AMXK_CPU_AVX2;
        if (l7[1] & (1u << 16)) hw |= AMXK_CPU_AVX512F;
        if (l7[1] & (1u << 17)) hw |= AMXK_CPU_AVX512DQ;
        if (l7[1] & (1u << 30)) hw |= AMXK_CPU_AVX512BW;
        if (l7[1] & (1u << 31)) hw |= AMXK_CPU_AVX512VL;
        if (l7[2] & (1u << 11)) hw |= AMXK_CPU_AVX512VNNI;
        if (l7[3] & (1u << 22)) hw |= AMXK_CPU_AMX_BF16;
        if (l7[3] & (1u << 23)) hw |= AMXK_CPU_AVX512FP16;
        if (l7[3] & (1u << 24)) hw |= AMXK_CPU_AMX_TILE;
        if (l7[3] & (1u << 25)) hw |= AMXK_CPU_AMX_INT8;
        if (l71[0] & (1u << 4)) hw |= AMXK_CPU_AVXVNNI;
        if (l71[0] & (1u << 5)) hw |= AMXK_CPU_AVX512BF16;
        if (l71[0] & (1u << 21)) hw |= AMXK_CPU_AMX_FP16;
        c->hw = hw;
        {
            const uint32_t ymm = AMXK_CPU_AVX2 | AMXK_CPU_FMA | AMXK_CPU_F16C | AMXK_CPU_AVXVNNI;
            const uint32_t zmm = AMXK_CPU_AVX512F | AMXK_CPU_AVX512BW | AMXK_CPU_AVX512VL | AMXK_CPU_AVX512DQ |
                                 AMXK_CPU_AVX512VNNI | AMXK_CPU_AVX512BF16 | AMXK_CPU_AVX512FP16;
            const uint32_t amx = AMXK_CPU_AMX_TILE | AMXK_CPU_AMX_BF16 | AMXK_CPU_AMX_INT8 | AMXK_CPU_AMX_FP16;
            uint32_t usable = 0;
            if (os_ymm) usable |= hw & ymm;
            if (os_ymm && os_zmm) usable |= hw & zmm;
            if (os_tile && (hw & AMXK_CPU_AMX_TILE)) {
#  if defined(__linux__) && !defined(AMXK_NO_SYSCALLS)
                uint64_t perm = 0;
                amxk__arch_prctl(0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */);
                if (amxk__arch_prctl(0x1022 /* ARCH_GET_XCOMP_PERM */, (unsigned long)(uintptr_t)&perm) == 0 &&
                    (perm & (1ull << 18)))
                    c->amx_permission = 1;
                else
                    c->amx_permission = -1;
#  elif defined(__linux__)
                c->amx_permission = 0; /* no syscalls allowed: cannot know, so AMX stays off */
#  else
                c->amx_permission = 1; /* other OSes enable tile data on first use */
#  endif
                if (c->amx_permission == 1) usable |= hw & amx;
            }
            c->usable = usable;
        }
    }
#endif
#if defined(AMXK_AVX512_EMULATE)
    c->avx512_emulated = 1;
#endif
#if defined(AMXK_AMX_EMULATE) && AMXK__HAS_AMX
    c->amx_emulated = 1;
#endif
    amxk__cpu_tiers(c);
}

/* The tier an op runs on for a (possibly NULL) context. */
AMXK__INLINE amxk_tier amxk__tier(const amxk_ctx *ctx) {
    return ctx ? ctx->tier : amxk_cpu_init()->best_tier;
}
/* The features a (possibly NULL) context's ops may use (amxk_ctx.features). */
AMXK__INLINE uint32_t amxk__features(const amxk_ctx *ctx) {
    const amxk_cpu *cpu = amxk_cpu_init();
    return ctx ? ctx->features : cpu->usable | cpu->emulated;
}
/* The best non-AMX level the context's features allow that does not exceed its tier: the level of
   the vector code of an op (small shapes, epilogues, conversions). */
AMXK__INLINE amxk_tier amxk__vec_level(const amxk_ctx *ctx) {
    const uint32_t feat = amxk__features(ctx);
    int v;
    for (v = (int)amxk__tier(ctx); v > AMXK_TIER_SCALAR; v--)
        if (v != AMXK_TIER_AMX && amxk__tier_ok((amxk_tier)v, feat)) break;
    return (amxk_tier)v;
}
/* The CPU family whose memory-streaming choices a (possibly NULL) context's ops make (amxk_ctx.family). */
AMXK__INLINE int amxk__family(const amxk_ctx *ctx) {
    return ctx && ctx->family == AMXK_FAMILY_INTEL ? AMXK_FAMILY_INTEL
           : ctx && ctx->family == AMXK_FAMILY_OTHER ? AMXK_FAMILY_OTHER : amxk_cpu_init()->family;
}
AMXK__INLINE int amxk__workers(const amxk_ctx *ctx) { return ctx && ctx->n_workers > 0 ? ctx->n_workers : 1; }
/* Validates a context passed to an op (NULL is valid): a level and features this CPU (and its
   emulators, as they are now) has. */
AMXK__INLINE int amxk__ctx_ok(const amxk_ctx *ctx) {
    const amxk_cpu *cpu;
    if (!ctx) return 1;
    cpu = amxk_cpu_init();
    return ctx->tier >= AMXK_TIER_SCALAR && ctx->tier < AMXK_TIER_COUNT && ctx->n_workers >= 1 &&
           (ctx->features & ~(cpu->usable | cpu->emulated)) == 0 && amxk__tier_ok(ctx->tier, ctx->features);
}

/* Runs fn(task_ctx, t, w) for t in [0, n_tasks) through the context's callback, or serially. */
AMXK__PRIV void amxk__parallel(const amxk_ctx *ctx, amxk_task_fn fn, void *task_ctx, size_t n_tasks) {
    size_t t;
    if (n_tasks == 0) return;
    if (ctx && ctx->parallel_for && n_tasks > 1 && ctx->n_workers > 1) {
        ctx->parallel_for(ctx->parallel_user, fn, task_ctx, n_tasks);
        return;
    }
    for (t = 0; t < n_tasks; t++) fn(task_ctx, t, 0);
}

/* The core's kernel table: one const table per level with kernels of its own and one function that
   maps a level to its table, as every module does (see ISA LEVELS); drivers never test the level. */
typedef void (*amxk__convert_fn)(void *dst, amxk_dtype dt, const void *src, amxk_dtype st, size_t n);
typedef struct amxk__core_kernels {
    amxk__convert_fn convert; /* amxk_convert's body, bitwise equal on every level */
} amxk__core_kernels;
static const amxk__core_kernels amxk__core_kernels_scalar = {amxk__convert__scalar};
#if AMXK__HAS_AVX2
static const amxk__core_kernels amxk__core_kernels_avx2 = {amxk__convert__avx2};
#endif
#if AMXK__HAS_AVX512
static const amxk__core_kernels amxk__core_kernels_avx512 = {amxk__convert__avx512};
#endif
/* level: a vector level (amxk__vec_level) usable here. */
AMXK__PRIV const amxk__core_kernels *amxk__core_kernels_for(amxk_tier level) {
    (void)level;
#if AMXK__HAS_AVX512
    if (level >= AMXK_TIER_AVX512) return &amxk__core_kernels_avx512;
#endif
#if AMXK__HAS_AVX2
    if (level >= AMXK_TIER_AVX2) return &amxk__core_kernels_avx2;
#endif
    return &amxk__core_kernels_scalar;
}

// >>api ------------------------------------------------------------------------------------------

AMXK_DEF const amxk_cpu *amxk_cpu_init(void) {
    if (!amxk__cpu_done) {
        amxk_cpu c;
        amxk__cpu_detect(&c);
        amxk__cpu_info = c;
        amxk__cpu_done = 1;
    }
    return &amxk__cpu_info;
}

AMXK_DEF amxk_status amxk_ctx_init(amxk_ctx *ctx) {
    const amxk_cpu *cpu;
    uint32_t feat;
    unsigned allow;
    int t;
    if (!ctx) return AMXK_ERR_NULL;
    if (ctx->n_workers < 0) return AMXK_ERR_ARG;
    allow = ctx->isa_allow == AMXK_ISA_ALL ? ~0u : ctx->isa_allow;
    if (ctx->isa_allow & ~AMXK_ISA_MASK) return AMXK_ERR_ARG;
    if (ctx->cpu_deny & ~AMXK_CPU_ALL) return AMXK_ERR_ARG;
    if (ctx->family < AMXK_FAMILY_AUTO || ctx->family > AMXK_FAMILY_INTEL) return AMXK_ERR_ARG;
    cpu = amxk_cpu_init();
    feat = (cpu->usable | cpu->emulated) & ~ctx->cpu_deny;
    for (t = AMXK_TIER_AMX; t >= AMXK_TIER_SCALAR; t--)
        if ((allow & AMXK_TIER_BIT(t)) != 0 && amxk__tier_ok((amxk_tier)t, feat)) break;
    if (t < AMXK_TIER_SCALAR) return AMXK_ERR_UNSUPPORTED;
    ctx->tier = (amxk_tier)t;
    ctx->features = feat;
    if (ctx->family == AMXK_FAMILY_AUTO) ctx->family = cpu->family;
    if (ctx->n_workers == 0) ctx->n_workers = 1;
    return AMXK_OK;
}

#if defined(AMXK_AMX_EMULATE)
AMXK_DEF uint32_t amxk_amx_emu_set_features(uint32_t features) {
    const uint32_t old = amxk__emu_features;
    (void)amxk_cpu_init(); /* detected before the change, so that the update below is the last word */
    amxk__emu_features = features & AMXK__EMU_AMX_ALL;
    amxk__cpu_tiers(&amxk__cpu_info);
    return old;
}
#endif

AMXK_DEF const char *amxk_version(void) { return AMXK_VERSION_STRING; }

AMXK_DEF const char *amxk_status_string(amxk_status s) {
    switch (s) {
    case AMXK_OK: return "ok";
    case AMXK_ERR_NULL: return "a required pointer is NULL";
    case AMXK_ERR_SHAPE: return "a dimension is zero or inconsistent";
    case AMXK_ERR_STRIDE: return "a stride is smaller than the row it strides over";
    case AMXK_ERR_ALIGN: return "a buffer is not aligned as required";
    case AMXK_ERR_WORKSPACE: return "workspace missing or too small";
    case AMXK_ERR_FORMAT: return "packed buffer has another format, version or shape";
    case AMXK_ERR_DTYPE: return "dtype not supported by this operation";
    case AMXK_ERR_ARG: return "an argument is out of range";
    case AMXK_ERR_UNSUPPORTED: return "not supported by this build or CPU";
    case AMXK_ERR_CONTEXT: return "context not initialised by amxk_ctx_init";
    case AMXK_ERR_ALIAS: return "buffers overlap where the contract forbids it";
    default: return "unknown status";
    }
}

AMXK_DEF const char *amxk_tier_name(amxk_tier t) {
    switch (t) {
    case AMXK_TIER_SCALAR: return "scalar";
    case AMXK_TIER_AVX2: return "avx2";
    case AMXK_TIER_AVX512: return "avx512";
    case AMXK_TIER_AVX512_VNNI: return "avx512_vnni";
    case AMXK_TIER_AVX512_BF16: return "avx512_bf16";
    case AMXK_TIER_AVX512_FP16: return "avx512_fp16";
    case AMXK_TIER_AMX: return "amx";
    default: return "none";
    }
}

AMXK_DEF uint32_t amxk_tier_features(amxk_tier t) {
    const uint32_t avx2 = AMXK_CPU_AVX2 | AMXK_CPU_FMA | AMXK_CPU_F16C;
    const uint32_t avx512 = avx2 | AMXK_CPU_AVX512F | AMXK_CPU_AVX512BW | AMXK_CPU_AVX512VL | AMXK_CPU_AVX512DQ;
    const uint32_t bf16 = avx512 | AMXK_CPU_AVX512VNNI | AMXK_CPU_AVX512BF16;
    switch (t) {
    case AMXK_TIER_AVX2: return avx2;
    case AMXK_TIER_AVX512: return avx512;
    case AMXK_TIER_AVX512_VNNI: return avx512 | AMXK_CPU_AVX512VNNI;
    case AMXK_TIER_AVX512_BF16: return bf16;
    case AMXK_TIER_AVX512_FP16: return bf16 | AMXK_CPU_AVX512FP16;
    case AMXK_TIER_AMX: return bf16 | AMXK_CPU_AMX_TILE | AMXK_CPU_AMX_BF16 | AMXK_CPU_AMX_INT8;
    default: return 0;
    }
}

AMXK_DEF size_t amxk_dtype_size(amxk_dtype t) {
    switch (t) {
    case AMXK_DTYPE_F32: case AMXK_DTYPE_I32: return 4;
    case AMXK_DTYPE_BF16: case AMXK_DTYPE_F16: return 2;
    case AMXK_DTYPE_FP8_E4M3: case AMXK_DTYPE_FP8_E5M2: case AMXK_DTYPE_I8: case AMXK_DTYPE_U8: return 1;
    default: return 0;
    }
}

AMXK_DEF float amxk_bf16_to_f32(amxk_bf16 h) { return amxk__bf16_to_f32(h); }
AMXK_DEF amxk_bf16 amxk_f32_to_bf16(float f) { return amxk__f32_to_bf16(f); }
AMXK_DEF float amxk_f16_to_f32(amxk_f16 h) { return amxk__f16_to_f32(h); }
AMXK_DEF amxk_f16 amxk_f32_to_f16(float f) { return amxk__f32_to_f16(f); }
AMXK_DEF float amxk_e4m3_to_f32(amxk_fp8 b) { return amxk__e4m3_to_f32(b); }
AMXK_DEF amxk_fp8 amxk_f32_to_e4m3(float f) { return amxk__f32_to_e4m3(f); }
AMXK_DEF float amxk_e5m2_to_f32(amxk_fp8 b) { return amxk__e5m2_to_f32(b); }
AMXK_DEF amxk_fp8 amxk_f32_to_e5m2(float f) { return amxk__f32_to_e5m2(f); }

AMXK_DEF amxk_status amxk_convert(const amxk_ctx *ctx, void *dst, amxk_dtype dt, const void *src, amxk_dtype st, size_t n) {
    size_t ds = amxk_dtype_size(dt), ss = amxk_dtype_size(st);
    int ok_d = dt == AMXK_DTYPE_F32 || dt == AMXK_DTYPE_BF16 || dt == AMXK_DTYPE_F16 || dt == AMXK_DTYPE_FP8_E4M3 || dt == AMXK_DTYPE_FP8_E5M2;
    int ok_s = st == AMXK_DTYPE_F32 || st == AMXK_DTYPE_BF16 || st == AMXK_DTYPE_F16 || st == AMXK_DTYPE_FP8_E4M3 || st == AMXK_DTYPE_FP8_E5M2;
    if (!amxk__ctx_ok(ctx)) return AMXK_ERR_CONTEXT;
    if (!ok_d || !ok_s || (dt != AMXK_DTYPE_F32 && st != AMXK_DTYPE_F32)) return AMXK_ERR_DTYPE;
    if (n == 0) return AMXK_OK;
    if (!dst || !src) return AMXK_ERR_NULL;
    if (amxk__overlap(dst, n * ds, src, n * ss) && !(dst == src && ds == ss)) return AMXK_ERR_ALIAS;
    amxk__core_kernels_for(amxk__vec_level(ctx))->convert(dst, dt, src, st, n);
    return AMXK_OK;
}

#endif /* AMXK_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
This software is available under 2 licenses -- choose whichever you prefer.
------------------------------------------------------------------------------
ALTERNATIVE A - MIT License
Copyright (c) 2026 the amxk authors
Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:
The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
ALTERNATIVE B - Public Domain (www.unlicense.org)
This is free and unencumbered software released into the public domain.
Anyone is free to copy, modify, publish, use, compile, sell, or distribute this
software, either in source code form or as a compiled binary, for any purpose,
commercial or non-commercial, and by any means.
In jurisdictions that recognize copyright laws, the author or authors of this
software dedicate any and all copyright interest in the software to the public
domain. We make this dedication in addition to any and all other rights to this
software under copyright law.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN
ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION
WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
------------------------------------------------------------------------------
*/
