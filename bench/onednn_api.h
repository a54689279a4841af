/* onednn_api.h - the few oneDNN C API calls onednn_peer.c makes, over both API generations, so that
   one source builds the 2.x peer (build/onednn_peer, Debian libdnnl-dev 2.6) and the 3.x peer
   (build/onednn3_peer, PyPI onednn-cpu-gomp 2023.2.0 = oneDNN 3.2; `make bench-peers`).

   2.x describes memory with a dnnl_memory_desc_t struct passed by pointer and creates a matmul from
   an operation descriptor (dnnl_matmul_desc_init + dnnl_primitive_desc_create); 3.x made the memory
   descriptor an opaque handle that is created and destroyed, and creates the matmul primitive
   descriptor directly. Here a descriptor is a `peer_md` (2.x: a pointer to a heap copy of the struct;
   3.x: the handle), made by peer_md_2d / peer_md_copy and released by peer_md_free, and accepted as
   is by dnnl_memory_create, dnnl_memory_desc_get_size and dnnl_reorder_primitive_desc_create in
   both generations. PEER_OP is the word that starts the output's op names: onednn (2.x), onednn3. */
#ifndef AMXK_ONEDNN_API_H
#define AMXK_ONEDNN_API_H

#include <dnnl.h>
#include <stdlib.h>

#define DNNL_TRY(call)                                                                                     \
    do {                                                                                                   \
        dnnl_status_t s_ = (call);                                                                         \
        if (s_ != dnnl_success) bench_die("%s failed: status %d (%s:%d)", #call, (int)s_, __FILE__, __LINE__); \
    } while (0)

#if DNNL_VERSION_MAJOR >= 3
#  define PEER_OP "onednn3"
typedef const_dnnl_memory_desc_t peer_md;

static peer_md peer_md_2d(size_t rows, size_t cols, dnnl_data_type_t dt, dnnl_format_tag_t tag) {
    dnnl_dims_t d;
    dnnl_memory_desc_t md;
    d[0] = (dnnl_dim_t)rows, d[1] = (dnnl_dim_t)cols;
    DNNL_TRY(dnnl_memory_desc_create_with_tag(&md, 2, d, dt, tag));
    return md;
}
static peer_md peer_md_copy(peer_md md) {
    dnnl_memory_desc_t c;
    DNNL_TRY(dnnl_memory_desc_clone(&c, md));
    return c;
}
static void peer_md_free(peer_md md) { dnnl_memory_desc_destroy((dnnl_memory_desc_t)md); }
/* matmul x [m, k] . w [k, n] -> y [m, n], no bias, no attributes */
static dnnl_status_t peer_matmul_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, peer_md x, peer_md w, peer_md y) {
    return dnnl_matmul_primitive_desc_create(pd, eng, x, w, NULL, y, NULL);
}
#else
#  define PEER_OP "onednn"
typedef const dnnl_memory_desc_t *peer_md;

static peer_md peer_md_copy(peer_md md) {
    dnnl_memory_desc_t *c = (dnnl_memory_desc_t *)malloc(sizeof *c);
    if (!c) bench_die("out of memory");
    *c = *md;
    return c;
}
static peer_md peer_md_2d(size_t rows, size_t cols, dnnl_data_type_t dt, dnnl_format_tag_t tag) {
    dnnl_dims_t d;
    dnnl_memory_desc_t md;
    d[0] = (dnnl_dim_t)rows, d[1] = (dnnl_dim_t)cols;
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&md, 2, d, dt, tag));
    return peer_md_copy(&md);
}
static void peer_md_free(peer_md md) { free((void *)md); }
static dnnl_status_t peer_matmul_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, peer_md x, peer_md w, peer_md y) {
    dnnl_matmul_desc_t mm;
    DNNL_TRY(dnnl_matmul_desc_init(&mm, x, w, NULL, y));
    return dnnl_primitive_desc_create(pd, &mm, NULL, eng, NULL);
}
#endif

/* The implementation name of a primitive descriptor as one word (blanks -> '_'), into buf. */
static const char *peer_impl_word(dnnl_primitive_desc_t pd, char *buf, size_t size) {
    const char *impl = "?";
    size_t i;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl) impl = "?";
    for (i = 0; impl[i] && i + 1 < size; i++) buf[i] = impl[i] == ' ' ? '_' : impl[i];
    buf[i] = 0;
    return buf;
}

#endif /* AMXK_ONEDNN_API_H */
