/* src/base.c: arena, growable arrays, error recording, dtypes and arrays. */

/* a 64-bit mix (splitmix64's finaliser), for hash tables */
static uint64_t gr__hash64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* ---- arena: one per graph; everything built in the graph lives here ------------------------- */

/* Blocks are 8-byte aligned (every struct here needs no more; vector code loads through memcpy):
   graphs of millions of nodes touch less memory than with 16. Chunks start at GR_ARENA_MIN_CHUNK
   bytes and each new one is as big as all before it, up to GR_ARENA_MAX_CHUNK (both macros, for
   small targets): a six-node graph takes one small chunk, a graph of millions grows by megabytes. */
#ifndef GR_ARENA_MIN_CHUNK
#define GR_ARENA_MIN_CHUNK 4096
#endif
#ifndef GR_ARENA_MAX_CHUNK
#define GR_ARENA_MAX_CHUNK ((size_t)1 << 20)
#endif
static void *gr__arena_alloc(gr__arena *a, size_t n) {
    gr__chunk *c = a->head;
    size_t need = (n + 7u) & ~(size_t)7u;
    if (!c || c->size - c->used < need) {
        size_t size = a->total < (size_t)GR_ARENA_MIN_CHUNK ? (size_t)GR_ARENA_MIN_CHUNK
                    : a->total > (size_t)GR_ARENA_MAX_CHUNK ? (size_t)GR_ARENA_MAX_CHUNK : a->total;
        if (size < need) size = need;
        c = (gr__chunk *)GR_MALLOC(sizeof(gr__chunk) + 16 + size);
        if (!c) return NULL;
        c->next = a->head; c->size = size; c->used = 0;
        a->head = c; a->total += size;
    }
    {
        unsigned char *base = (unsigned char *)(c + 1);
        size_t pad = (size_t)(16 - ((uintptr_t)base & 15u)) & 15u;
        void *p = base + pad + c->used;
        c->used += need;
        return p;
    }
}

static void gr__arena_free(gr__arena *a) {
    gr__chunk *c = a->head;
    while (c) { gr__chunk *next = c->next; GR_FREE(c); c = next; }
    a->head = NULL; a->total = 0;
}

/* a copy of s in the arena, or NULL */
static char *gr__arena_strdup(gr__arena *a, const char *s) {
    size_t n = strlen(s) + 1;
    char *d = (char *)gr__arena_alloc(a, n);
    if (d) memcpy(d, s, n);
    return d;
}

/* room for n items of `elem` bytes at *items (*cap of them now); 0 on failure. Called directly
   where a pass knows how many it will add: growing by doubling copies a big array several times
   over, and touches the fresh memory of each copy */
static int gr__reserve(void **items, uint32_t *cap, uint32_t n, size_t elem) {
    void *p;
    if (n <= *cap) return 1;
    p = GR_REALLOC(*items, (size_t)n * elem);
    if (!p) return 0;
    *items = p; *cap = n;
    return 1;
}
/* gr__reserve for an array indexed by id: new entries get every byte = `byte` (0, or 0xFF for -1) */
static int gr__reserve_fill(void **items, uint32_t *cap, uint32_t n, size_t elem, int byte) {
    uint32_t old = *cap;
    if (!gr__reserve(items, cap, n, elem)) return 0;
    if (*cap > old) memset((unsigned char *)*items + (size_t)old * elem, byte, (size_t)(*cap - old) * elem);
    return 1;
}

/* the capacity, doubled as often as needed, at which index n fits */
static uint32_t gr__doubled(uint32_t cap, uint32_t n) {
    uint32_t nc = cap ? cap * 2 : 64;
    while (nc <= n) nc *= 2;
    return nc;
}
/* grows *items so that index n fits; 0 on failure */
static int gr__grow(void **items, uint32_t *cap, uint32_t n, size_t elem) {
    return n < *cap || gr__reserve(items, cap, gr__doubled(*cap, n), elem);
}
static int gr__grow_fill(void **items, uint32_t *cap, uint32_t n, size_t elem, int byte) {
    return n < *cap || gr__reserve_fill(items, cap, gr__doubled(*cap, n), elem, byte);
}

static void *gr__calloc(size_t n, size_t elem) {
    size_t bytes;
    void *p;
    if (n == 0) n = 1;
    if (elem && n > SIZE_MAX / elem) return NULL;
    bytes = n * elem;
    p = GR_MALLOC(bytes);
    if (p) memset(p, 0, bytes);
    return p;
}

/* ---- status strings and errors ------------------------------------------------------------- */

GR_API const char *gr_status_string(gr_status s) {
    switch (s) {
#define GR__STATUS_CASE(name, text) case name: return text;
        GR_STATUS_LIST(GR__STATUS_CASE)
#undef GR__STATUS_CASE
    default: return "unknown status";
    }
}

static void gr__verror(gr_graph *g, gr_status code, const char *fmt, va_list ap) {
    if (!g || g->status != GR_OK) return;
    g->status = code;
    vsnprintf(g->message, sizeof g->message, fmt, ap);
    GR__TRAP();
}

/* records the first error on g; returns code */
static gr_status gr__error(gr_graph *g, gr_status code, const char *fmt, ...) GR__PRINTF(3, 4);
static gr_status gr__error(gr_graph *g, gr_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gr__verror(g, code, fmt, ap);
    va_end(ap);
    return code;
}

static gr_var *gr__fail(gr_graph *g, gr_status code, const char *fmt, ...) GR__PRINTF(3, 4);
static gr_var *gr__fail(gr_graph *g, gr_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gr__verror(g, code, fmt, ap);
    va_end(ap);
    return NULL;
}

static void gr__log(gr_graph *g, const char *fmt, ...) GR__PRINTF(2, 3) GR__UNUSED;
static void gr__log(gr_graph *g, const char *fmt, ...) {
    char buf[GR__MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (g && g->log) g->log(g->log_user, buf);
#ifndef GR_NO_STDIO
    else fprintf(stderr, "gradient.h: warning: %s\n", buf);
#endif
}

/* a stage's progress through g's callback: done units of its total, reported at 0, at every
   GR__PROGRESS_EVERY units and at total (a caller calls it as each unit ends, and once before) */
#define GR__PROGRESS_EVERY 65536u
static void gr__progress_to(gr_progress_fn fn, void *user, const char *stage, size_t done, size_t total) {
    if (fn && (done == 0 || done == total || done % GR__PROGRESS_EVERY == 0)) fn(user, stage, done, total);
}
static void gr__progress(const gr_graph *g, const char *stage, size_t done, size_t total) {
    gr__progress_to(g->progress, g->progress_user, stage, done, total);
}

/* ---- dtypes ---------------------------------------------------------------------------------- */

static size_t gr__dsize(int dt) { return dt == GR_F32 ? 4u : dt == GR_BOOL ? 1u : 8u; }
static int gr__is_float(int dt) { return dt == GR_F64 || dt == GR_F32; }
static int gr__dtype_ok(int dt) { return dt >= GR_F64 && dt <= GR_BOOL; }

GR_API const char *gr_dtype_name(gr_dtype t) {
    switch (t) {
    case GR_F64: return "float64";
    case GR_F32: return "float32";
    case GR_I64: return "int64";
    case GR_BOOL: return "bool";
    }
    return "?";
}

static double gr__load(int dt, const void *p, int64_t i) {
    switch (dt) {
    case GR_F64: return ((const double *)p)[i];
    case GR_F32: return (double)((const float *)p)[i];
    case GR_I64: return (double)((const int64_t *)p)[i];
    default:     return (double)((const uint8_t *)p)[i];
    }
}

static int64_t gr__to_i64(double v) {   /* truncates toward zero; NaN and out-of-range saturate */
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

static void gr__store(int dt, void *p, int64_t i, double v) {
    switch (dt) {
    case GR_F64: ((double *)p)[i] = v; break;
    case GR_F32: ((float *)p)[i] = (float)v; break;
    case GR_I64: ((int64_t *)p)[i] = gr__to_i64(v); break;
    default:     ((uint8_t *)p)[i] = (uint8_t)(v != 0); break;
    }
}

/* n elements from src (of dtype st) to dst (of dtype dt); exact for int64 to int64 */
static void gr__convert(int dt, void *dst, int st, const void *src, int64_t n) {
    int64_t i;
    if (dt == st) { memcpy(dst, src, (size_t)n * gr__dsize(dt)); return; }
    if (dt == GR_I64 && st == GR_BOOL) {
        for (i = 0; i < n; i++) ((int64_t *)dst)[i] = ((const uint8_t *)src)[i];
    } else if (dt == GR_BOOL && st == GR_I64) {
        for (i = 0; i < n; i++) ((uint8_t *)dst)[i] = (uint8_t)(((const int64_t *)src)[i] != 0);
    } else if (dt == GR_F32 && st == GR_F64) {
        for (i = 0; i < n; i++) ((float *)dst)[i] = (float)((const double *)src)[i];
    } else if (dt == GR_F64 && st == GR_F32) {
        for (i = 0; i < n; i++) ((double *)dst)[i] = (double)((const float *)src)[i];
    } else {
        for (i = 0; i < n; i++) gr__store(dt, dst, i, gr__load(st, src, i));
    }
}

/* "(3,4)" or "()" ; -1 shows as "?" */
static const char *gr__shape_str(char *buf, size_t size, int ndim, const int64_t *shape) {
    size_t used = 0;
    int i;
    used += (size_t)snprintf(buf, size, "(");
    for (i = 0; i < ndim && used < size; i++) {
        if (shape[i] < 0) used += (size_t)snprintf(buf + used, size - used, "%s?", i ? "," : "");
        else used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? "," : "", (long long)shape[i]);
    }
    if (used < size) snprintf(buf + used, size - used, ")");
    return buf;
}

/* element count of a shape; -1 on a negative entry or overflow. A shape with a 0 has no
   elements whatever its other entries (the answer does not depend on the order of the axes). */
static int64_t gr__shape_size(int ndim, const int64_t *shape) {
    int64_t n = 1;
    int i, empty = 0;
    for (i = 0; i < ndim; i++) {
        if (shape[i] < 0) return -1;
        if (shape[i] == 0) empty = 1;
    }
    if (empty) return 0;
    for (i = 0; i < ndim; i++) {
        if (n > INT64_MAX / shape[i]) return -1;
        n *= shape[i];
    }
    return n;
}

/* a static shape (-1: unknown) whose known entries alone already overflow the element count */
static int gr__static_overflows(int ndim, const int64_t *shape) {
    int64_t n = 1;
    int i;
    for (i = 0; i < ndim; i++) if (shape[i] == 0) return 0;
    for (i = 0; i < ndim; i++) {
        if (shape[i] < 0) continue;
        if (n > INT64_MAX / shape[i]) return 1;
        n *= shape[i];
    }
    return 0;
}

/* ---- arrays ---------------------------------------------------------------------------------- */

/* header and data in one block; data 64-byte aligned */
#define GR__ARRAY_HEAD ((sizeof(gr_array) + 63u) & ~(size_t)63u)

static gr_array *gr__array_alloc(int dtype, int ndim, const int64_t *shape) {
    int64_t size;
    size_t bytes;
    unsigned char *block;
    gr_array *a;
    int i;
    if (!gr__dtype_ok(dtype) || ndim < 0 || ndim > GR_MAX_NDIM || (ndim > 0 && !shape)) return NULL;
    size = gr__shape_size(ndim, shape);
    if (size < 0 || (uint64_t)size > (uint64_t)(SIZE_MAX - GR__ARRAY_HEAD - 64) / gr__dsize(dtype)) return NULL;
    bytes = GR__ARRAY_HEAD + 64 + (size_t)size * gr__dsize(dtype);
    block = (unsigned char *)GR_MALLOC(bytes);
    if (!block) return NULL;
    a = (gr_array *)block;
    memset(a, 0, sizeof *a);
    a->dtype = (gr_dtype)dtype;
    a->ndim = ndim;
    for (i = 0; i < ndim; i++) a->shape[i] = shape[i];
    a->size = size;
    {
        unsigned char *d = block + GR__ARRAY_HEAD;
        d += (size_t)(64 - ((uintptr_t)d & 63u)) & 63u;
        a->data = d;
    }
    return a;
}

GR_API gr_array *gr_array_new(gr_dtype dtype, int ndim, const int64_t *shape) {
    gr_array *a = gr__array_alloc((int)dtype, ndim, shape);
    if (a) memset(a->data, 0, (size_t)a->size * gr__dsize(dtype));
    return a;
}

GR_API gr_array *gr_array_from(gr_dtype dtype, int ndim, const int64_t *shape, const void *data) {
    gr_array *a = gr__array_alloc((int)dtype, ndim, shape);
    if (a && a->size) {
        if (!data) { GR_FREE(a); return NULL; }
        memcpy(a->data, data, (size_t)a->size * gr__dsize(dtype));
    }
    return a;
}

GR_API gr_array *gr_array_scalar(gr_dtype dtype, double value) {
    gr_array *a = gr__array_alloc((int)dtype, 0, NULL);
    if (a) gr__store(dtype, a->data, 0, value);
    return a;
}

GR_API gr_array *gr_array_copy(const gr_array *a) {
    if (!a) return NULL;
    return gr_array_from(a->dtype, a->ndim, a->shape, a->data);
}

GR_API double gr_array_get(const gr_array *a, int64_t i) {
    if (!a || !a->data || i < 0 || i >= a->size || !gr__dtype_ok(a->dtype)) return NAN;
    return gr__load(a->dtype, a->data, i);
}

GR_API void gr_array_set(gr_array *a, int64_t i, double value) {
    if (!a || !a->data || i < 0 || i >= a->size || !gr__dtype_ok(a->dtype)) return;
    gr__store(a->dtype, a->data, i, value);
}

GR_API void gr_array_free(gr_array *a) {
    if (a) GR_FREE(a);
}

/* an array struct is well formed: known dtype, ndim in range, size the product of the shape */
static int gr__array_valid(const gr_array *a) {
    int64_t size;
    if (!a || !gr__dtype_ok(a->dtype) || a->ndim < 0 || a->ndim > GR_MAX_NDIM) return 0;
    size = gr__shape_size(a->ndim, a->shape);
    if (size < 0 || size != a->size) return 0;
    return size == 0 || a->data != NULL;
}
