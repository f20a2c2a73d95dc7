/* ops/linalg.c: Dot, with transpose flags so that gradients never copy a transpose.

   Shapes: op(A) is A or A^T by the flag ta (likewise op(B) by tb; flags apply to 2-d operands)
     (M,K) . (K,N) -> (M,N)     (M,K) . (K,) -> (M,)     (K,) . (K,N) -> (N,)     (K,) . (K,) -> ()
   GEMM: our own cache-blocked kernel, or cblas_?gemm / ?gemv / ?dot with GRADIENT_CBLAS, where
   the transposes are passed as flags. */

typedef struct gr__dot_params { int ta, tb; } gr__dot_params;

static gr_var *gr__dot_flags(gr_var *a, gr_var *b, int ta, int tb) {
    gr__dot_params p;
    gr_var *args[2];
    gr_graph *g;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_dot", 2, args, &g)) return NULL;
    memset(&p, 0, sizeof p);
    p.ta = a->ndim == 2 ? ta : 0;
    p.tb = b->ndim == 2 ? tb : 0;
    return gr__node1(g, &gr__op_Dot, &p, sizeof p, 2, args);
}

GR_API gr_var *gr_dot(gr_var *a, gr_var *b) {
    gr_var *args[2];
    gr_graph *g;
    int T;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_dot", 2, args, &g)) return NULL;
    if (a->ndim == 0 || b->ndim == 0) return gr_mul(a, b);
    if (a->ndim > 2 || b->ndim > 2)
        return gr__fail(g, GR_ERR_TYPE, "gr_dot: takes 1-d and 2-d operands; %s has %d dimensions and %s %d "
                        "(gr_tensordot and gr_matmul take more)", gr__d(a).s, a->ndim, gr__d(b).s, b->ndim);
    T = gr__promote(2, args);
    a = gr__coerce(a, T);
    b = gr__coerce(b, T);
    return gr__dot_flags(a, b, 0, 0);
}

/* rows, cols of op(X) for a 2-d X */
static void gr__op_dims(const int64_t *shape, int t, int64_t *r, int64_t *c) {
    *r = t ? shape[1] : shape[0];
    *c = t ? shape[0] : shape[1];
}

/* result dims from the operands' dims; 0 when the inner dimensions differ */
static int gr__dot_dims(int annd, const int64_t *as, int ta, int bnd, const int64_t *bs, int tb, int *ond, int64_t *os,
                        int64_t *ka, int64_t *kb) {
    int64_t m = 1, n = 1;
    if (annd == 2) gr__op_dims(as, ta, &m, ka); else *ka = as[0];
    if (bnd == 2) gr__op_dims(bs, tb, kb, &n); else *kb = bs[0];
    *ond = 0;
    if (annd == 2) os[(*ond)++] = m;
    if (bnd == 2) os[(*ond)++] = n;
    return !(*ka >= 0 && *kb >= 0 && *ka != *kb);
}

static gr_status gr__Dot_infer(const gr_node *node, gr_type *out) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1];
    int64_t ka, kb;
    out->dtype = (gr_dtype)a->dtype;
    if (a->dtype != b->dtype || a->ndim < 1 || a->ndim > 2 || b->ndim < 1 || b->ndim > 2)
        return gr__error(node->graph, GR_ERR_TYPE, "gr_dot: operands %s and %s must be 1-d or 2-d of one dtype", gr__d(a).s, gr__d(b).s);
    if (!gr__dot_dims(a->ndim, gr__vshape(a), p->ta, b->ndim, gr__vshape(b), p->tb, &out->ndim, out->shape, &ka, &kb))
        return gr__error(node->graph, GR_ERR_SHAPE, "gr_dot: inner dimensions differ: %s %s%s and %s %s%s", gr__d(a).s,
                         gr__vs(a).s, p->ta ? " transposed" : "", gr__d(b).s, gr__vs(b).s, p->tb ? " transposed" : "");
    return GR_OK;
}

static gr_status gr__Dot_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    int64_t ka, kb;
    int nd;
    if (!gr__dot_dims(in[0]->ndim, in[0]->shape, p->ta, in[1]->ndim, in[1]->shape, p->tb, &nd, out[0]->shape, &ka, &kb))
        return gr_node_error(node, GR_ERR_SHAPE, "inner dimensions differ: %s %s%s and %s %s%s", gr__d(gr__in(node)[0]).s,
                             gr__as(in[0]).s, p->ta ? " transposed" : "", gr__d(gr__in(node)[1]).s, gr__as(in[1]).s,
                             p->tb ? " transposed" : "");
    return GR_OK;
}

/* ---- kernels ----------------------------------------------------------------------------------
   C (M x N, row-major) = op(A) (M x K) . op(B) (K x N); A is M x K (K x M when ta), B is K x N
   (N x K when tb).

   Floating point, after GotoBLAS: a KC x NC block of op(B) is packed into strips of NR columns
   (k-major inside a strip, zero-padded), then for every 4 rows of op(A) a micro-kernel keeps a
   4 x NR tile of C in registers while it walks the strip: per k, two vector loads of B, four
   scalars of A, eight multiply-adds. A is read in place (its rows are four streams, or with ta
   four adjacent columns), and only a last partial group of rows is copied, zero-padded. The
   packed block (GR__GEMM_BUF bytes) and that copy live on the stack: no allocation.
   With GCC or Clang the tile is eight vectors of the widest width the target has (AVX-512, AVX
   or SSE: GCC vector extensions, no intrinsics); elsewhere the same loops run on a plain array
   the compiler may vectorise. Integers (wrapping uint64_t) take a plain blocked loop. */
#define GR__GEMM_MR 4
#define GR__GEMM_KC 128
#ifndef GR__GEMM_BUF
#define GR__GEMM_BUF 32768
#endif
#if (defined(__GNUC__) || defined(__clang__)) && !defined(GR_NO_VECTOR_EXTENSIONS)
#if defined(__AVX512F__)
#define GR__VBYTES 64
#elif defined(__AVX__)
#define GR__VBYTES 32
#else
#define GR__VBYTES 16
#endif
#define GR__VEC(V, T) typedef T V __attribute__((vector_size(GR__VBYTES)));
#define GR__V0 {0}
#else
#define GR__VBYTES 16
#define GR__VEC(V, T) typedef struct { T e[GR__VBYTES / sizeof(T)]; } V;
#define GR__V0 {{0}}
#endif

/* the micro-kernel: c[0..mr) x [0..nr) += a (4 rows, row stride rs, k stride cs) . bp (a strip).
   W = 2 vectors per row, or 1 for a strip of at most NR/2 columns. */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(GR_NO_VECTOR_EXTENSIONS)
#define GR__MK_FMA(acc, x, b) acc += (x) * (b)
#if defined(__x86_64__) || defined(__i386__)
#define GR__VREG(v) __asm__("" : "+v"(v))     /* keeps b in a register: GCC would reload it for every FMA */
#endif
#define GR__VADD_TO(p, acc) do { __typeof__(acc) u_; memcpy(&u_, (p), sizeof u_); u_ += (acc); memcpy((p), &u_, sizeof u_); } while (0)
#else
#define GR__VADD_TO(p, acc) do { int l_; for (l_ = 0; l_ < (int)(sizeof(acc) / sizeof(*(p))); l_++) (p)[l_] += (acc).e[l_]; } while (0)
#define GR__MK_FMA(acc, x, b) do { int l_; for (l_ = 0; l_ < (int)(sizeof(b) / sizeof(x)); l_++) (acc).e[l_] += (x) * (b).e[l_]; } while (0)
#endif
#ifndef GR__VREG
#define GR__VREG(v) ((void)0)
#endif
#define GR__GEMM_FLOAT(fn, T) \
    GR__VEC(fn##_v, T) \
    enum { fn##_NV = GR__VBYTES / (int)sizeof(T), fn##_NR = 2 * fn##_NV }; \
    static void fn##_mk2(int64_t kc, const T *a, int64_t rs, int64_t cs, const T *bp, T *c, int64_t ldc, int64_t mr, int64_t nr) { \
        fn##_v c00 = GR__V0, c01 = GR__V0, c10 = GR__V0, c11 = GR__V0, c20 = GR__V0, c21 = GR__V0, c30 = GR__V0, c31 = GR__V0, b0, b1; \
        T t[GR__GEMM_MR][fn##_NR]; \
        const T *a1 = a + rs, *a2 = a + 2 * rs, *a3 = a + 3 * rs; \
        int64_t k, r, j; \
        for (k = 0; k < kc; k++, bp += fn##_NR) { \
            T x0 = a[k * cs], x1 = a1[k * cs], x2 = a2[k * cs], x3 = a3[k * cs]; \
            memcpy(&b0, bp, sizeof b0); \
            memcpy(&b1, bp + fn##_NV, sizeof b1); \
            GR__VREG(b0); GR__VREG(b1); \
            GR__MK_FMA(c00, x0, b0); GR__MK_FMA(c01, x0, b1); GR__MK_FMA(c10, x1, b0); GR__MK_FMA(c11, x1, b1); \
            GR__MK_FMA(c20, x2, b0); GR__MK_FMA(c21, x2, b1); GR__MK_FMA(c30, x3, b0); GR__MK_FMA(c31, x3, b1); \
        } \
        if (mr == GR__GEMM_MR && nr == fn##_NR) {                /* a whole tile: vector adds into C */ \
            GR__VADD_TO(c, c00); GR__VADD_TO(c + fn##_NV, c01); c += ldc; \
            GR__VADD_TO(c, c10); GR__VADD_TO(c + fn##_NV, c11); c += ldc; \
            GR__VADD_TO(c, c20); GR__VADD_TO(c + fn##_NV, c21); c += ldc; \
            GR__VADD_TO(c, c30); GR__VADD_TO(c + fn##_NV, c31); \
            return; \
        } \
        memcpy(t[0], &c00, sizeof c00); memcpy(t[0] + fn##_NV, &c01, sizeof c01); \
        memcpy(t[1], &c10, sizeof c10); memcpy(t[1] + fn##_NV, &c11, sizeof c11); \
        memcpy(t[2], &c20, sizeof c20); memcpy(t[2] + fn##_NV, &c21, sizeof c21); \
        memcpy(t[3], &c30, sizeof c30); memcpy(t[3] + fn##_NV, &c31, sizeof c31); \
        for (r = 0; r < mr; r++, c += ldc) for (j = 0; j < nr; j++) c[j] += t[r][j]; \
    } \
    static void fn##_mk1(int64_t kc, const T *a, int64_t rs, int64_t cs, const T *bp, T *c, int64_t ldc, int64_t mr, int64_t nr) { \
        fn##_v c0 = GR__V0, c1 = GR__V0, c2 = GR__V0, c3 = GR__V0, b0; \
        T t[GR__GEMM_MR][fn##_NV]; \
        const T *a1 = a + rs, *a2 = a + 2 * rs, *a3 = a + 3 * rs; \
        int64_t k, r, j; \
        for (k = 0; k < kc; k++, bp += fn##_NR) { \
            memcpy(&b0, bp, sizeof b0); \
            GR__MK_FMA(c0, a[k * cs], b0); GR__MK_FMA(c1, a1[k * cs], b0); \
            GR__MK_FMA(c2, a2[k * cs], b0); GR__MK_FMA(c3, a3[k * cs], b0); \
        } \
        memcpy(t[0], &c0, sizeof c0); memcpy(t[1], &c1, sizeof c1); memcpy(t[2], &c2, sizeof c2); memcpy(t[3], &c3, sizeof c3); \
        for (r = 0; r < mr; r++, c += ldc) for (j = 0; j < nr; j++) c[j] += t[r][j]; \
    } \
    static GR__UNUSED void fn(int ta, int tb, int64_t M, int64_t N, int64_t K, const T *A, const T *B, T *C) { \
        enum { NR = fn##_NR, NC0 = GR__GEMM_BUF / (GR__GEMM_KC * (int)sizeof(T)) / NR * NR, NC = NC0 > NR ? NC0 : NR }; \
        T bp[GR__GEMM_KC * NC], ap[GR__GEMM_KC * GR__GEMM_MR]; \
        const int64_t NRL = NR, NCL = NC; \
        int64_t i0, j0, k0, jr, j, k, r, rs = ta ? 1 : K, cs = ta ? M : 1; \
        if (M > 0 && N > 0) memset(C, 0, sizeof(T) * (size_t)(M * N)); \
        for (j0 = 0; j0 < N; j0 += NC) { \
            int64_t nc = N - j0 < NCL ? N - j0 : NCL; \
            for (k0 = 0; k0 < K; k0 += GR__GEMM_KC) { \
                int64_t kc = K - k0 < GR__GEMM_KC ? K - k0 : GR__GEMM_KC; \
                for (jr = 0; jr < nc; jr += NR) {               /* pack op(B)[k0.., j0+jr..] as a strip */ \
                    int64_t nr = nc - jr < NRL ? nc - jr : NRL; \
                    T *s = bp + jr * kc; \
                    if (tb) \
                        for (j = 0; j < nr; j++) { const T *src = B + (j0 + jr + j) * K + k0; for (k = 0; k < kc; k++) s[k * NR + j] = src[k]; } \
                    else \
                        for (k = 0; k < kc; k++) { const T *src = B + (k0 + k) * N + j0 + jr; for (j = 0; j < nr; j++) s[k * NR + j] = src[j]; } \
                    if (nr < NR) for (k = 0; k < kc; k++) for (j = nr; j < NR; j++) s[k * NR + j] = 0; \
                } \
                for (i0 = 0; i0 < M; i0 += GR__GEMM_MR) { \
                    int64_t mr = M - i0 < GR__GEMM_MR ? M - i0 : GR__GEMM_MR, ars = rs, acs = cs; \
                    const T *at = A + i0 * rs + k0 * cs; \
                    if (mr < GR__GEMM_MR) {                      /* the last rows, zero-padded to 4 */ \
                        for (k = 0; k < kc; k++) \
                            for (r = 0; r < GR__GEMM_MR; r++) ap[k * GR__GEMM_MR + r] = r < mr ? at[r * rs + k * cs] : 0; \
                        at = ap; ars = 1; acs = GR__GEMM_MR; \
                    } \
                    for (jr = 0; jr < nc; jr += NR) { \
                        int64_t nr = nc - jr < NRL ? nc - jr : NRL; \
                        if (nr > fn##_NV) fn##_mk2(kc, at, ars, acs, bp + jr * kc, C + i0 * N + j0 + jr, N, mr, nr); \
                        else fn##_mk1(kc, at, ars, acs, bp + jr * kc, C + i0 * N + j0 + jr, N, mr, nr); \
                    } \
                } \
            } \
        } \
    }
GR__GEMM_FLOAT(gr__gemm_f64, double)
GR__GEMM_FLOAT(gr__gemm_f32, float)

/* int64 operands go through uint64_t: products and sums wrap modulo 2^64 like NumPy's, where
   int64_t arithmetic would overflow (undefined behaviour) */
static GR__UNUSED void gr__gemm_i64(int ta, int tb, int64_t M, int64_t N, int64_t K, const uint64_t *A, const uint64_t *B, uint64_t *C) {
    int64_t i, j, k;
    for (i = 0; i < M * N; i++) C[i] = 0;
    for (i = 0; i < M; i++)
        for (k = 0; k < K; k++) {
            uint64_t a = ta ? A[k * M + i] : A[i * K + k];
            uint64_t *c = C + i * N;
            if (tb) for (j = 0; j < N; j++) c[j] += a * B[j * K + k];
            else for (j = 0; j < N; j++) c[j] += a * B[k * N + j];
        }
}

/* y (M) = op(A) (M x K) . x (K) */
#define GR__GEMV(fn, T, TA) \
    static GR__UNUSED void fn(int ta, int64_t M, int64_t K, const T *A, const T *x, T *y) { \
        int64_t i, k; \
        if (!ta) { \
            for (i = 0; i < M; i++) { TA s = 0; const T *a = A + i * K; for (k = 0; k < K; k++) s += (TA)a[k] * (TA)x[k]; y[i] = (T)s; } \
        } else { \
            for (i = 0; i < M; i++) y[i] = 0; \
            for (k = 0; k < K; k++) { T xk = x[k]; const T *a = A + k * M; for (i = 0; i < M; i++) y[i] += a[i] * xk; } \
        } \
    }
GR__GEMV(gr__gemv_f64, double, double)
GR__GEMV(gr__gemv_f32, float, float)
GR__GEMV(gr__gemv_i64, uint64_t, uint64_t)

static gr_status gr__Dot_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1];
    gr_array *c = out[0];
    int dt = a->dtype;
    int64_t M, N, K, i;
    if (a->ndim == 1 && b->ndim == 1) {                     /* inner product */
        K = a->shape[0];
        if (dt == GR_F64) {
            const double *x = (const double *)a->data, *y = (const double *)b->data;
            double s = 0;
#ifdef GRADIENT_CBLAS
            s = cblas_ddot((int)K, x, 1, y, 1);
#else
            for (i = 0; i < K; i++) s += x[i] * y[i];
#endif
            ((double *)c->data)[0] = s;
        } else if (dt == GR_F32) {
            const float *x = (const float *)a->data, *y = (const float *)b->data;
            double s = 0;
            for (i = 0; i < K; i++) s += (double)x[i] * (double)y[i];
            ((float *)c->data)[0] = (float)s;
        } else {
            const uint64_t *x = (const uint64_t *)a->data, *y = (const uint64_t *)b->data;   /* wraps, as the GEMM */
            uint64_t s = 0;
            for (i = 0; i < K; i++) s += x[i] * y[i];
            ((int64_t *)c->data)[0] = (int64_t)s;
        }
        return GR_OK;
    }
    if (b->ndim == 1 || a->ndim == 1) {                     /* matrix . vector, vector . matrix */
        const gr_array *A = a->ndim == 2 ? a : b, *x = a->ndim == 2 ? b : a;
        /* x . op(B) = op(B)^T . x */
        int t = a->ndim == 2 ? p->ta : !p->tb;
        int64_t rows = A->shape[0], cols = A->shape[1];
        M = t ? cols : rows;
        K = t ? rows : cols;
        if (K == 0)                   /* an empty sum; ?gemv returns early without writing y */
            memset(c->data, 0, (size_t)M * gr__dsize(dt));
        else if (dt == GR_F64) {
#ifdef GRADIENT_CBLAS
            cblas_dgemv(CblasRowMajor, t ? CblasTrans : CblasNoTrans, (int)rows, (int)cols, 1.0, (const double *)A->data,
                        (int)(cols ? cols : 1), (const double *)x->data, 1, 0.0, (double *)c->data, 1);
#else
            gr__gemv_f64(t, M, K, (const double *)A->data, (const double *)x->data, (double *)c->data);
#endif
        } else if (dt == GR_F32) {
#ifdef GRADIENT_CBLAS
            cblas_sgemv(CblasRowMajor, t ? CblasTrans : CblasNoTrans, (int)rows, (int)cols, 1.0f, (const float *)A->data,
                        (int)(cols ? cols : 1), (const float *)x->data, 1, 0.0f, (float *)c->data, 1);
#else
            gr__gemv_f32(t, M, K, (const float *)A->data, (const float *)x->data, (float *)c->data);
#endif
        } else
            gr__gemv_i64(t, M, K, (const uint64_t *)A->data, (const uint64_t *)x->data, (uint64_t *)c->data);
        return GR_OK;
    }
    gr__op_dims(a->shape, p->ta, &M, &K);
    N = c->shape[1];
    if (dt == GR_F64) {
#ifdef GRADIENT_CBLAS
        if (M && N) {
            if (K) cblas_dgemm(CblasRowMajor, p->ta ? CblasTrans : CblasNoTrans, p->tb ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                               (int)K, 1.0, (const double *)a->data, (int)a->shape[1], (const double *)b->data, (int)b->shape[1], 0.0,
                               (double *)c->data, (int)N);
            else memset(c->data, 0, (size_t)(M * N) * sizeof(double));
        }
#else
        gr__gemm_f64(p->ta, p->tb, M, N, K, (const double *)a->data, (const double *)b->data, (double *)c->data);
#endif
    } else if (dt == GR_F32) {
#ifdef GRADIENT_CBLAS
        if (M && N) {
            if (K) cblas_sgemm(CblasRowMajor, p->ta ? CblasTrans : CblasNoTrans, p->tb ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                               (int)K, 1.0f, (const float *)a->data, (int)a->shape[1], (const float *)b->data, (int)b->shape[1], 0.0f,
                               (float *)c->data, (int)N);
            else memset(c->data, 0, (size_t)(M * N) * sizeof(float));
        }
#else
        gr__gemm_f32(p->ta, p->tb, M, N, K, (const float *)a->data, (const float *)b->data, (float *)c->data);
#endif
    } else
        gr__gemm_i64(p->ta, p->tb, M, N, K, (const uint64_t *)a->data, (const uint64_t *)b->data, (uint64_t *)c->data);
    return GR_OK;
}

/* ---- derivative rules (C = op(A) op(B), G its cotangent) --------------------------------------
   2-d.2-d: dA = G B^T, dB = A^T G with the flags folded in, so no transpose is ever built.     */
static gr_status gr__Dot_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1], *G = og[0];
    if (!gr__is_float(gr__out(node)[0]->dtype)) {
        ig[0] = gr__zeros_grad(a);
        ig[1] = gr__zeros_grad(b);
    } else if (a->ndim == 1 && b->ndim == 1) {
        ig[0] = gr_mul(G, b);
        ig[1] = gr_mul(G, a);
    } else if (a->ndim == 2 && b->ndim == 1) {              /* c = op(A) b */
        ig[0] = p->ta ? gr_outer(b, G) : gr_outer(G, b);
        ig[1] = gr__dot_flags(a, G, !p->ta, 0);
    } else if (a->ndim == 1) {                              /* c = a op(B) */
        ig[0] = gr__dot_flags(b, G, p->tb, 0);
        ig[1] = p->tb ? gr_outer(G, a) : gr_outer(a, G);
    } else if (!p->ta && !p->tb) {
        ig[0] = gr__dot_flags(G, b, 0, 1);
        ig[1] = gr__dot_flags(a, G, 1, 0);
    } else if (p->ta && !p->tb) {                           /* C = A^T B */
        ig[0] = gr__dot_flags(b, G, 0, 1);
        ig[1] = gr__dot_flags(a, G, 0, 0);
    } else if (!p->ta) {                                    /* C = A B^T */
        ig[0] = gr__dot_flags(G, b, 0, 0);
        ig[1] = gr__dot_flags(G, a, 1, 0);
    } else {                                                /* C = A^T B^T */
        ig[0] = gr__dot_flags(b, G, 1, 1);
        ig[1] = gr__dot_flags(G, a, 1, 1);
    }
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}

static gr_status gr__Dot_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    gr_var *t = NULL;
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype)) return GR_OK;
    if (!gr_is_disconnected(ev[0])) t = gr__dot_flags(ev[0], gr__in(node)[1], p->ta, p->tb);
    if (!gr_is_disconnected(ev[1])) {
        gr_var *u = gr__dot_flags(gr__in(node)[0], ev[1], p->ta, p->tb);
        t = t ? gr_add(t, u) : u;
        if (!t) return node->graph->status;
    }
    if (gr_is_disconnected(ev[0]) && gr_is_disconnected(ev[1])) return GR_OK;
    orop[0] = t;
    return t ? GR_OK : node->graph->status;
}

/* ==== second wave: TensorDot, MatMul and the LAPACK-free linear algebra =========================

   Shapes (A is square, n x n; users give b as (n,) or (n, k), rules may pass (n, *rest)):
     TensorDot      a (*fa, *s) . b (*s, *fb) -> (*fa, *fb). a is seen as a matrix whose rows are
                    its first sa axes and whose columns are the others, b likewise split at sb;
                    ta / tb transpose those matrices as Dot's flags do, so that gradients never copy.
                    gr_tensordot moves the summed axes of a last and those of b first (DimShuffle)
                    unless a flag does it for free.
     MatMul         a (*ba, m, k) @ b (*bb, k, n) -> (*broadcast(ba, bb), m, n); ta / tb transpose
                    the last two axes. gr_matmul makes a 1-d a (1, k) and a 1-d b (k, 1) and drops
                    that axis again, as NumPy does.
     LUFactor       A (n, n) -> F (n + 1, n) float64: rows 0..n-1 hold L (unit diagonal, below it)
                    and U (on and above it) of P A = L U, as LAPACK's getrf; F[n][k] is the row
                    swapped with row k at step k.
     MatrixInverse  (A, F) -> (n, n)            Det, LogDet  (A, F) -> ()
     Adjugate       (A, F) -> (n, n): adj A, the transposed cofactors (det(A) A^-1 where A is
                    invertible); made by the derivatives of gr_det only
     Solve          (A, b, F) -> shape(b): x with A x = b, or A^T x = b when `trans`; b (n, *rest)
     Cholesky       A (n, n) -> L (n, n), lower, L L^T = A; reads the lower triangle of A only
     Trace          x (*s, n, m) -> (*s): the sum of x[..., i, i]
     TriScale       x (*s, n, m) -> (*s, n, m): x[..., i, j] times w_below (i > j), w_on or w_above

   Workspace. A steady-state gr_call allocates nothing, so no perform calls GR_MALLOC. The LU-based
   ops take their factorisation as an input: the constructor builds F = LUFactor(A), whose output
   buffer the memory plan provides like any other, and Det, LogDet, Adjugate, Solve and
   MatrixInverse read it (Solve, MatrixInverse and Adjugate then work in place in their own output). F carries no derivative
   (its connection pattern is 0): the rules differentiate A itself, and reuse F to solve with A or
   A^T. Cholesky factors in place in its output.

   Numerics. LU with partial pivoting, factored in float64 also for float32 matrices (the
   substitutions run in the matrix's dtype); a row-oriented Cholesky summing in float64. A matrix
   is singular when a pivot is exactly zero, as in LAPACK (det and logdet then give 0 and -inf;
   solve and inverse fail with GR_ERR_RUNTIME), or when the result of a solve or an inverse is not
   finite although A and b are (a pivot too small to divide by). The adjugate never divides by a
   pivot (see gr__lu_adjugate): it is as accurate at a singular A as elsewhere, and 0 where the
   rank of A is n - 2 or less. Cholesky fails on a pivot that
   is not > 0 (NaN included).

   Derivatives (G the cotangent of the output, V the tangent of A, X = A^-1, x = A^-1 b):
     inverse   dA = -X^T G X^T                       R = -X V X
     det       dA = G adj(A)^T                       R = tr(adj(A) V)       (exact at singular A)
     adjugate  dA = tr(A^-1 G^T) adj(A)^T - A^-T G adj(A)^T    R = tr(A^-1 V) adj(A) - adj(A) V A^-1
               (from d(adj A) A + adj(A) dA = tr(adj(A) dA) I: these need A invertible, so the
               second derivatives of det fail the call at a singular A, as the inverse does)
     logdet    dA = G X^T                            R = tr(A^-1 V)
     solve     db = A^-T G, dA = -db x^T             R = A^-1 (v_b - V x)
     cholesky  P = Phi(L^T G), S = L^-T P L^-1, dA = (S + S^T) / 2;   R = L Phi(L^-1 V_s L^-T)
               Phi keeps the lower triangle and halves the diagonal, V_s = (V + V^T) / 2: these are
               the derivatives of A -> chol((A + A^T) / 2), so the gradient is symmetric and the
               R-op its adjoint for any V.
     trace     dA = G I                              R = tr V
   Every rule builds ordinary differentiable nodes, so gradients of gradients work. */

/* C = op(A) op(B) through CBLAS or the blocked kernel above: A stored M x K (K x M when ta), B
   stored K x N (N x K when tb), contiguous, of dtype dt */
static void gr__gemm_dt(int dt, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A, const void *B, void *C) {
    if (M == 0 || N == 0) return;
    if (K == 0) { memset(C, 0, (size_t)(M * N) * gr__dsize(dt)); return; }
    if (dt == GR_F64) {
#ifdef GRADIENT_CBLAS
        cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, 1.0,
                    (const double *)A, (int)(ta ? M : K), (const double *)B, (int)(tb ? K : N), 0.0, (double *)C, (int)N);
#else
        gr__gemm_f64(ta, tb, M, N, K, (const double *)A, (const double *)B, (double *)C);
#endif
    } else if (dt == GR_F32) {
#ifdef GRADIENT_CBLAS
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, 1.0f,
                    (const float *)A, (int)(ta ? M : K), (const float *)B, (int)(tb ? K : N), 0.0f, (float *)C, (int)N);
#else
        gr__gemm_f32(ta, tb, M, N, K, (const float *)A, (const float *)B, (float *)C);
#endif
    } else
        gr__gemm_i64(ta, tb, M, N, K, (const uint64_t *)A, (const uint64_t *)B, (uint64_t *)C);
}

/* the product of shape[from..to) */
static int64_t gr__dims_prod(const int64_t *shape, int from, int to) {
    int64_t p = 1;
    int i;
    for (i = from; i < to; i++) p *= shape[i];
    return p;
}

/* ---- TensorDot ---------------------------------------------------------------------------------- */

typedef struct gr__tdot_params { int sa, sb, ta, tb; } gr__tdot_params;

/* where the free and the summed axes of an operand lie, split at s into rows and columns: the
   rows of a are free (its columns when transposed); the columns of b are free (its rows when
   transposed) */
static void gr__tdot_axes(int ndim, int s, int t, int is_a, int *f0, int *fn, int *c0, int *cn) {
    int rows_free = is_a ? !t : t;
    if (rows_free) { *f0 = 0; *fn = s; *c0 = s; *cn = ndim - s; }
    else { *c0 = 0; *cn = s; *f0 = s; *fn = ndim - s; }
}

static gr_var *gr__tdot(gr_var *a, gr_var *b, int sa, int sb, int ta, int tb) {
    gr__tdot_params p;
    gr_var *args[2];
    gr_graph *g;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_tensordot", 2, args, &g)) return NULL;
    memset(&p, 0, sizeof p);
    p.sa = sa; p.sb = sb; p.ta = ta; p.tb = tb;
    return gr__node1(g, &gr__op_TensorDot, &p, sizeof p, 2, args);
}

/* the n axes ax[] are 0, 1, ..., n-1 (first) or ndim-n, ..., ndim-1 (last), in that order */
static int gr__axes_run(const int *ax, int n, int start) {
    int i;
    for (i = 0; i < n; i++) if (ax[i] != start + i) return 0;
    return 1;
}

GR_API gr_var *gr_tensordot(gr_var *a, gr_var *b, int n, const int *a_axes, const int *b_axes) {
    gr_var *args[2];
    gr_graph *g;
    int ax[GR_MAX_NDIM], bx[GR_MAX_NDIM], pattern[GR_MAX_NDIM], i, m, T, sa, sb, ta = 0, tb = 0;
    uint32_t seen_a = 0, seen_b = 0;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_tensordot", 2, args, &g)) return NULL;
    if (n < 0 || n > a->ndim || n > b->ndim)
        return gr__fail(g, GR_ERR_VALUE, "gr_tensordot: %d summed axes for %s with %d dimensions and %s with %d", n, gr__d(a).s,
                        a->ndim, gr__d(b).s, b->ndim);
    if (n > 0 && (!a_axes || !b_axes)) return gr__fail(g, GR_ERR_VALUE, "gr_tensordot: a_axes or b_axes is NULL");
    for (i = 0; i < n; i++) {
        ax[i] = gr__axis(a_axes[i], a->ndim);
        bx[i] = gr__axis(b_axes[i], b->ndim);
        if (ax[i] < 0 || bx[i] < 0)
            return gr__fail(g, GR_ERR_VALUE, "gr_tensordot: axis %d of %s (%d-d) or axis %d of %s (%d-d) is out of range",
                            a_axes[i], gr__d(a).s, a->ndim, b_axes[i], gr__d(b).s, b->ndim);
        if ((seen_a & (1u << ax[i])) || (seen_b & (1u << bx[i])))
            return gr__fail(g, GR_ERR_VALUE, "gr_tensordot: axis %d of %s or axis %d of %s is repeated", a_axes[i], gr__d(a).s,
                            b_axes[i], gr__d(b).s);
        seen_a |= 1u << ax[i];
        seen_b |= 1u << bx[i];
        if (gr__vshape(a)[ax[i]] >= 0 && gr__vshape(b)[bx[i]] >= 0 && gr__vshape(a)[ax[i]] != gr__vshape(b)[bx[i]])
            return gr__fail(g, GR_ERR_SHAPE, "gr_tensordot: axis %d of %s %s and axis %d of %s %s differ in size", ax[i],
                            gr__d(a).s, gr__vs(a).s, bx[i], gr__d(b).s, gr__vs(b).s);
    }
    if (a->ndim + b->ndim - 2 * n > GR_MAX_NDIM)
        return gr__fail(g, GR_ERR_VALUE, "gr_tensordot: the result would have %d dimensions (at most %d)", a->ndim + b->ndim - 2 * n,
                        GR_MAX_NDIM);
    T = gr__promote(2, args);
    a = gr__coerce(a, T);
    b = gr__coerce(b, T);
    if (!a || !b) return NULL;
    /* a: the summed axes last, in the order given; already first in order, a flag does it */
    sa = a->ndim - n;
    if (!gr__axes_run(ax, n, a->ndim - n)) {
        if (gr__axes_run(ax, n, 0)) { sa = n; ta = 1; }
        else {
            for (i = 0, m = 0; i < a->ndim; i++) if (!(seen_a & (1u << i))) pattern[m++] = i;
            for (i = 0; i < n; i++) pattern[m++] = ax[i];
            a = gr__dimshuffle(a, a->ndim, pattern, 0);
        }
    }
    /* b: the summed axes first, in the order given; already last in order, a flag does it */
    sb = n;
    if (!gr__axes_run(bx, n, 0)) {
        if (gr__axes_run(bx, n, b->ndim - n)) { sb = b->ndim - n; tb = 1; }
        else {
            for (i = 0, m = 0; i < n; i++) pattern[m++] = bx[i];
            for (i = 0; i < b->ndim; i++) if (!(seen_b & (1u << i))) pattern[m++] = i;
            b = gr__dimshuffle(b, b->ndim, pattern, 0);
        }
    }
    return gr__tdot(a, b, sa, sb, ta, tb);
}

static gr_status gr__TensorDot_infer(const gr_node *node, gr_type *out) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1];
    int af0, afn, ac0, acn, bf0, bfn, bc0, bcn, i;
    out->dtype = (gr_dtype)a->dtype;
    if (a->dtype != b->dtype)
        return gr__error(node->graph, GR_ERR_TYPE, "gr_tensordot: operands %s and %s must have one dtype", gr__d(a).s, gr__d(b).s);
    if (p->sa < 0 || p->sa > a->ndim || p->sb < 0 || p->sb > b->ndim)
        return gr__error(node->graph, GR_ERR_VALUE, "gr_tensordot: split points %d and %d out of range for %s and %s", p->sa, p->sb,
                         gr__d(a).s, gr__d(b).s);
    gr__tdot_axes(a->ndim, p->sa, p->ta, 1, &af0, &afn, &ac0, &acn);
    gr__tdot_axes(b->ndim, p->sb, p->tb, 0, &bf0, &bfn, &bc0, &bcn);
    if (acn != bcn)
        return gr__error(node->graph, GR_ERR_SHAPE, "gr_tensordot: %s sums %d axes but %s %d", gr__d(a).s, acn, gr__d(b).s, bcn);
    for (i = 0; i < acn; i++) {
        int64_t x = gr__vshape(a)[ac0 + i], y = gr__vshape(b)[bc0 + i];
        if (x >= 0 && y >= 0 && x != y)
            return gr__error(node->graph, GR_ERR_SHAPE, "gr_tensordot: summed axes of %s %s and %s %s differ in size", gr__d(a).s,
                             gr__vs(a).s, gr__d(b).s, gr__vs(b).s);
    }
    if (afn + bfn > GR_MAX_NDIM)
        return gr__error(node->graph, GR_ERR_VALUE, "gr_tensordot: the result would have %d dimensions", afn + bfn);
    out->ndim = afn + bfn;
    for (i = 0; i < afn; i++) out->shape[i] = gr__vshape(a)[af0 + i];
    for (i = 0; i < bfn; i++) out->shape[afn + i] = gr__vshape(b)[bf0 + i];
    return GR_OK;
}

static gr_status gr__TensorDot_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1];
    int af0, afn, ac0, acn, bf0, bfn, bc0, bcn, i;
    gr__tdot_axes(a->ndim, p->sa, p->ta, 1, &af0, &afn, &ac0, &acn);
    gr__tdot_axes(b->ndim, p->sb, p->tb, 0, &bf0, &bfn, &bc0, &bcn);
    for (i = 0; i < acn; i++)
        if (a->shape[ac0 + i] != b->shape[bc0 + i])
            return gr_node_error(node, GR_ERR_SHAPE, "summed axes of %s %s and %s %s differ in size", gr__d(gr__in(node)[0]).s,
                                 gr__as(a).s, gr__d(gr__in(node)[1]).s, gr__as(b).s);
    for (i = 0; i < afn; i++) out[0]->shape[i] = a->shape[af0 + i];
    for (i = 0; i < bfn; i++) out[0]->shape[afn + i] = b->shape[bf0 + i];
    return GR_OK;
}

static gr_status gr__TensorDot_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1];
    int64_t ra = gr__dims_prod(a->shape, 0, p->sa), ca = gr__dims_prod(a->shape, p->sa, a->ndim);
    int64_t rb = gr__dims_prod(b->shape, 0, p->sb), cb = gr__dims_prod(b->shape, p->sb, b->ndim);
    gr__gemm_dt(a->dtype, p->ta, p->tb, p->ta ? ca : ra, p->tb ? rb : cb, p->ta ? ra : ca, a->data, b->data, out[0]->data);
    return GR_OK;
}

/* C = op(A) op(B) on the matrices the split points make; G splits at the number of a's free axes.
   The four cases are Dot's, with the flags folded in so that no transpose is ever built. */
static gr_status gr__TensorDot_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1], *G = og[0];
    int sa = p->sa, sb = p->sb, sg = p->ta ? a->ndim - sa : sa;
    if (!gr__is_float(gr__out(node)[0]->dtype)) {
        ig[0] = gr__zeros_grad(a);
        ig[1] = gr__zeros_grad(b);
    } else if (!p->ta && !p->tb) {          /* C = A B:     dA = G B^T,     dB = A^T G */
        ig[0] = gr__tdot(G, b, sg, sb, 0, 1);
        ig[1] = gr__tdot(a, G, sa, sg, 1, 0);
    } else if (p->ta && !p->tb) {           /* C = A^T B:   dA = B G^T,     dB = A G */
        ig[0] = gr__tdot(b, G, sb, sg, 0, 1);
        ig[1] = gr__tdot(a, G, sa, sg, 0, 0);
    } else if (!p->ta) {                    /* C = A B^T:   dA = G B,       dB = G^T A */
        ig[0] = gr__tdot(G, b, sg, sb, 0, 0);
        ig[1] = gr__tdot(G, a, sg, sa, 1, 0);
    } else {                                /* C = A^T B^T: dA = B^T G^T,   dB = G^T A^T */
        ig[0] = gr__tdot(b, G, sb, sg, 1, 1);
        ig[1] = gr__tdot(G, a, sg, sa, 1, 1);
    }
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}

static gr_status gr__TensorDot_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    gr_var *t = NULL;
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || (gr_is_disconnected(ev[0]) && gr_is_disconnected(ev[1]))) return GR_OK;
    if (!gr_is_disconnected(ev[0])) t = gr__tdot(ev[0], gr__in(node)[1], p->sa, p->sb, p->ta, p->tb);
    if (!gr_is_disconnected(ev[1])) {
        gr_var *u = gr__tdot(gr__in(node)[0], ev[1], p->sa, p->sb, p->ta, p->tb);
        t = gr_is_disconnected(ev[0]) ? u : gr_add(t, u);
    }
    orop[0] = t;
    return t ? GR_OK : node->graph->status;
}

/* a batched a (its free rows gain the leading axis) is the same product; anything else row by row */
static gr_status gr__TensorDot_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    if (batched[0] && !batched[1] && !p->ta && gr__out(node)[0]->ndim < GR_MAX_NDIM) {
        out[0] = gr__tdot(in[0], in[1], p->sa + 1, p->sb, 0, p->tb);
        return out[0] ? GR_OK : node->graph->status;
    }
    return gr__map_batch(node, in, batched, out);
}

/* ---- MatMul ------------------------------------------------------------------------------------- */

typedef struct gr__matmul_params { int ta, tb; } gr__matmul_params;

static gr_var *gr__mm(gr_var *a, gr_var *b, int ta, int tb) {
    gr__matmul_params p;
    gr_var *args[2];
    gr_graph *g;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_matmul", 2, args, &g)) return NULL;
    memset(&p, 0, sizeof p);
    p.ta = ta; p.tb = tb;
    return gr__node1(g, &gr__op_MatMul, &p, sizeof p, 2, args);
}

/* the static size of two batch axes broadcast together; -2 when they conflict (1 broadcasts,
   -1 is unknown) */
static int64_t gr__bcast_dim(int64_t x, int64_t y) {
    if (x == 1) return y;
    if (y == 1 || y == -1) return x;
    if (x == -1 || x == y) return y;
    return -2;
}

GR_API gr_var *gr_matmul(gr_var *a, gr_var *b) {
    gr_var *args[2], *y;
    gr_graph *g;
    int pattern[GR_MAX_NDIM], T, i, nd, a1, b1;
    int64_t ka, kb;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_matmul", 2, args, &g)) return NULL;
    if (a->ndim == 0 || b->ndim == 0)
        return gr__fail(g, GR_ERR_TYPE, "gr_matmul: %s is 0-d; matmul takes 1-d or more (gr_mul scales)", gr__d(a->ndim ? b : a).s);
    ka = gr__vshape(a)[a->ndim - 1];
    kb = gr__vshape(b)[b->ndim == 1 ? 0 : b->ndim - 2];
    if (ka >= 0 && kb >= 0 && ka != kb)
        return gr__fail(g, GR_ERR_SHAPE, "gr_matmul: %s %s and %s %s: the inner dimensions %lld and %lld differ", gr__d(a).s,
                        gr__vs(a).s, gr__d(b).s, gr__vs(b).s, (long long)ka, (long long)kb);
    for (i = 3; i <= a->ndim && i <= b->ndim; i++)
        if (gr__bcast_dim(gr__vshape(a)[a->ndim - i], gr__vshape(b)[b->ndim - i]) == -2)
            return gr__fail(g, GR_ERR_SHAPE, "gr_matmul: the batch axes of %s %s and %s %s do not broadcast", gr__d(a).s,
                            gr__vs(a).s, gr__d(b).s, gr__vs(b).s);
    T = gr__promote(2, args);
    a = gr__coerce(a, T);
    b = gr__coerce(b, T);
    if (!a || !b) return NULL;
    /* NumPy's promotion of 1-d operands: a row (1, k), a column (k, 1), removed from the result */
    a1 = a->ndim == 1;
    b1 = b->ndim == 1;
    if (a1) { pattern[0] = GR_NEWAXIS; pattern[1] = 0; a = gr__dimshuffle(a, 2, pattern, 0); }
    if (b1) { pattern[0] = 0; pattern[1] = GR_NEWAXIS; b = gr__dimshuffle(b, 2, pattern, 0); }
    y = gr__mm(a, b, 0, 0);
    if (!y || (!a1 && !b1)) return y;
    nd = 0;
    for (i = 0; i < y->ndim; i++)
        if (!(a1 && i == y->ndim - 2) && !(b1 && i == y->ndim - 1)) pattern[nd++] = i;
    return gr__dimshuffle(y, nd, pattern, 1);
}

static gr_status gr__MatMul_infer(const gr_node *node, gr_type *out) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1];
    int nba, nbb, nbo, i;
    int64_t m, ka, kb, n;
    out->dtype = (gr_dtype)a->dtype;
    if (a->dtype != b->dtype || a->ndim < 2 || b->ndim < 2)
        return gr__error(node->graph, GR_ERR_TYPE, "gr_matmul: operands %s and %s must have 2 dimensions or more and one dtype",
                         gr__d(a).s, gr__d(b).s);
    nba = a->ndim - 2; nbb = b->ndim - 2;
    nbo = nba > nbb ? nba : nbb;
    gr__op_dims(gr__vshape(a) + nba, p->ta, &m, &ka);
    gr__op_dims(gr__vshape(b) + nbb, p->tb, &kb, &n);
    if (ka >= 0 && kb >= 0 && ka != kb)
        return gr__error(node->graph, GR_ERR_SHAPE, "gr_matmul: %s %s%s and %s %s%s: the inner dimensions differ", gr__d(a).s,
                         gr__vs(a).s, p->ta ? " transposed" : "", gr__d(b).s, gr__vs(b).s, p->tb ? " transposed" : "");
    for (i = 0; i < nbo; i++) {
        int64_t x = i - (nbo - nba) >= 0 ? gr__vshape(a)[i - (nbo - nba)] : 1, y = i - (nbo - nbb) >= 0 ? gr__vshape(b)[i - (nbo - nbb)] : 1;
        out->shape[i] = gr__bcast_dim(x, y);
        if (out->shape[i] == -2)
            return gr__error(node->graph, GR_ERR_SHAPE, "gr_matmul: the batch axes of %s %s and %s %s do not broadcast", gr__d(a).s,
                             gr__vs(a).s, gr__d(b).s, gr__vs(b).s);
    }
    out->ndim = nbo + 2;
    out->shape[nbo] = m;
    out->shape[nbo + 1] = n;
    return GR_OK;
}

static gr_status gr__MatMul_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1];
    int nba = a->ndim - 2, nbb = b->ndim - 2, nbo = out[0]->ndim - 2, i;
    int64_t m, ka, kb, n;
    gr__op_dims(a->shape + nba, p->ta, &m, &ka);
    gr__op_dims(b->shape + nbb, p->tb, &kb, &n);
    if (ka != kb)
        return gr_node_error(node, GR_ERR_SHAPE, "%s %s%s and %s %s%s: the inner dimensions differ", gr__d(gr__in(node)[0]).s, gr__as(a).s,
                             p->ta ? " transposed" : "", gr__d(gr__in(node)[1]).s, gr__as(b).s, p->tb ? " transposed" : "");
    for (i = 0; i < nbo; i++) {
        int64_t x = i - (nbo - nba) >= 0 ? a->shape[i - (nbo - nba)] : 1, y = i - (nbo - nbb) >= 0 ? b->shape[i - (nbo - nbb)] : 1;
        if (x != y && x != 1 && y != 1)
            return gr_node_error(node, GR_ERR_SHAPE, "the batch axes of %s %s and %s %s do not broadcast", gr__d(gr__in(node)[0]).s,
                                 gr__as(a).s, gr__d(gr__in(node)[1]).s, gr__as(b).s);
        out[0]->shape[i] = x == 1 ? y : x;
    }
    out[0]->shape[nbo] = m;
    out[0]->shape[nbo + 1] = n;
    return GR_OK;
}

/* one GEMM per output matrix, the operands found through broadcast strides (in matrices); when b
   has no batch and a's batch is the output's, one GEMM of all a's rows at once */
static gr_status gr__MatMul_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1];
    gr_array *c = out[0];
    int nba = a->ndim - 2, nbb = b->ndim - 2, nbo = c->ndim - 2, d;
    int64_t M, K, Kb, N, batch = gr__dims_prod(c->shape, 0, nbo), t;
    int64_t ast[GR_MAX_NDIM], bst[GR_MAX_NDIM], idx[GR_MAX_NDIM], aoff = 0, boff = 0, s;
    size_t es = gr__dsize(a->dtype), asz, bsz, csz;
    gr__op_dims(a->shape + nba, p->ta, &M, &K);
    gr__op_dims(b->shape + nbb, p->tb, &Kb, &N);
    asz = (size_t)(M * K) * es; bsz = (size_t)(K * N) * es; csz = (size_t)(M * N) * es;
    if (c->size == 0) return GR_OK;
    if (!p->ta && gr__dims_prod(b->shape, 0, nbb) == 1 && gr__dims_prod(a->shape, 0, nba) == batch) {
        gr__gemm_dt(a->dtype, 0, p->tb, batch * M, N, K, a->data, b->data, c->data);
        return GR_OK;
    }
    for (d = nbo - 1, s = 1; d >= 0; d--) {     /* a's batch strides on the output's batch axes */
        int ai = d - (nbo - nba);
        ast[d] = ai >= 0 && a->shape[ai] != 1 ? s : 0;
        if (ai >= 0) s *= a->shape[ai];
        idx[d] = 0;
    }
    for (d = nbo - 1, s = 1; d >= 0; d--) {
        int bi = d - (nbo - nbb);
        bst[d] = bi >= 0 && b->shape[bi] != 1 ? s : 0;
        if (bi >= 0) s *= b->shape[bi];
    }
    for (t = 0; t < batch; t++) {
        gr__gemm_dt(a->dtype, p->ta, p->tb, M, N, K, (const char *)a->data + (size_t)aoff * asz, (const char *)b->data + (size_t)boff * bsz,
                    (char *)c->data + (size_t)t * csz);
        for (d = nbo - 1; d >= 0; d--) {         /* the next output matrix */
            idx[d]++; aoff += ast[d]; boff += bst[d];
            if (idx[d] < c->shape[d]) break;
            aoff -= ast[d] * idx[d]; boff -= bst[d] * idx[d]; idx[d] = 0;
        }
    }
    return GR_OK;
}

/* Dot's four cases on the last two axes, then summed down over the batch axes an operand was
   broadcast along */
static gr_status gr__MatMul_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1], *G = og[0];
    if (!gr__is_float(gr__out(node)[0]->dtype)) {
        ig[0] = gr__zeros_grad(a);
        ig[1] = gr__zeros_grad(b);
        return ig[0] && ig[1] ? GR_OK : node->graph->status;
    }
    if (!p->ta && !p->tb) { ig[0] = gr__mm(G, b, 0, 1); ig[1] = gr__mm(a, G, 1, 0); }
    else if (p->ta && !p->tb) { ig[0] = gr__mm(b, G, 0, 1); ig[1] = gr__mm(a, G, 0, 0); }
    else if (!p->ta) { ig[0] = gr__mm(G, b, 0, 0); ig[1] = gr__mm(G, a, 1, 0); }
    else { ig[0] = gr__mm(b, G, 1, 1); ig[1] = gr__mm(G, a, 1, 1); }
    ig[0] = gr__sum_to(ig[0], a);
    ig[1] = gr__sum_to(ig[1], b);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}

static gr_status gr__MatMul_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    gr_var *t = NULL;
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || (gr_is_disconnected(ev[0]) && gr_is_disconnected(ev[1]))) return GR_OK;
    if (!gr_is_disconnected(ev[0])) t = gr__mm(ev[0], gr__in(node)[1], p->ta, p->tb);
    if (!gr_is_disconnected(ev[1])) {
        gr_var *u = gr__mm(gr__in(node)[0], ev[1], p->ta, p->tb);
        t = gr_is_disconnected(ev[0]) ? u : gr_add(t, u);
    }
    orop[0] = t;
    return t ? GR_OK : node->graph->status;
}

/* batching by shifting: a batched operand gets its missing batch axes (size 1) after the new
   leading one, so that it lines up with the output's batch axes and the other operand broadcasts */
static gr_status gr__MatMul_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    int nbo = gr__out(node)[0]->ndim - 2, k, i;
    gr_var *xs[2];
    if (nbo + 3 > GR_MAX_NDIM) return gr__map_batch(node, in, batched, out);
    for (k = 0; k < 2; k++) {
        int pattern[GR_MAX_NDIM], m = 0, nd = gr__in(node)[k]->ndim;
        xs[k] = in[k];
        if (!batched[k] || nd - 2 == nbo) continue;
        pattern[m++] = 0;
        for (i = 0; i < nbo - (nd - 2); i++) pattern[m++] = GR_NEWAXIS;
        for (i = 1; i <= nd; i++) pattern[m++] = i;
        xs[k] = gr__dimshuffle(in[k], m, pattern, 0);
        if (!xs[k]) return node->graph->status;
    }
    out[0] = gr__mm(xs[0], xs[1], p->ta, p->tb);
    return out[0] ? GR_OK : node->graph->status;
}

/* ---- linear algebra: shared pieces -------------------------------------------------------------- */

enum { GR__LU_FOR_INVERSE, GR__LU_FOR_DET, GR__LU_FOR_LOGDET, GR__LU_FOR_SOLVE, GR__LU_FOR_CHOLESKY, GR__LU_FOR_COUNT };
static const char *const gr__lu_for[GR__LU_FOR_COUNT] = {
    "gr_matrix_inverse", "gr_det", "gr_logdet", "gr_solve", "the derivatives of gr_cholesky" };

typedef struct gr__lu_params { int who; } gr__lu_params;            /* whose factorisation: for messages */
typedef struct gr__solve_params { int trans; } gr__solve_params;    /* solve A^T x = b */
typedef struct gr__triscale_params { double w[3]; } gr__triscale_params;  /* below, on, above the diagonal */

static const char *const gr__lu_deriv[GR__LU_FOR_COUNT] = {
    "the derivatives of gr_matrix_inverse", "the derivatives of gr_det", "the derivatives of gr_logdet",
    "the derivatives of gr_solve", "the derivatives of gr_cholesky" };

/* the public function behind a node, for messages: an op reading a factor made for another
   function (an inverse in the gradient of gr_det) names that function's derivatives */
static const char *gr__la_fname(const gr_node *node) {
    const char *own = node->op == &gr__op_MatrixInverse ? "gr_matrix_inverse" : node->op == &gr__op_Det ? "gr_det"
                    : node->op == &gr__op_LogDet ? "gr_logdet" : node->op == &gr__op_Solve ? "gr_solve"
                    : node->op == &gr__op_Cholesky ? "gr_cholesky" : node->op->name;
    const gr_var *F = node->op == &gr__op_LUFactor ? NULL : node->n_in >= 2 ? gr__in(node)[node->n_in - 1] : NULL;
    int who = -1;
    if (node->op == &gr__op_LUFactor) who = ((const gr__lu_params *)gr__params(node))->who;
    else if (F && gr__owner(F) && gr__owner(F)->op == &gr__op_LUFactor) who = ((const gr__lu_params *)gr__params(gr__owner(F)))->who;
    if (who < 0 || who >= GR__LU_FOR_COUNT) return own;
    if (node->op == &gr__op_LUFactor || strcmp(gr__lu_for[who], own) == 0) return gr__lu_for[who];
    return gr__lu_deriv[who];
}

/* a user's matrix operand: 2-d (GR_ERR_TYPE), square where its static shape says (GR_ERR_SHAPE),
   integers and bools as float64 */
static gr_var *gr__la_operand(const char *fname, gr_graph *g, gr_var *a) {
    if (a->ndim != 2)
        return gr__fail(g, GR_ERR_TYPE, "%s: %s must be a matrix (2-d); it has %d dimensions", fname, gr__d(a).s, a->ndim);
    if (gr__vshape(a)[0] >= 0 && gr__vshape(a)[1] >= 0 && gr__vshape(a)[0] != gr__vshape(a)[1])
        return gr__fail(g, GR_ERR_SHAPE, "%s: %s of shape %s is not square", fname, gr__d(a).s, gr__vs(a).s);
    return gr__is_float(a->dtype) ? a : gr_cast(a, GR_F64);
}

/* the same checks in a type rule (the operand is already float there) */
static gr_status gr__la_square_static(const gr_node *node, const gr_var *a) {
    if (a->ndim != 2 || !gr__is_float(a->dtype))
        return gr__error(node->graph, GR_ERR_TYPE, "%s: %s must be a 2-d float matrix; it is %d-d %s", gr__la_fname(node),
                         gr__d(a).s, a->ndim, gr_dtype_name((gr_dtype)a->dtype));
    if (gr__vshape(a)[0] >= 0 && gr__vshape(a)[1] >= 0 && gr__vshape(a)[0] != gr__vshape(a)[1])
        return gr__error(node->graph, GR_ERR_SHAPE, "%s: %s of shape %s is not square", gr__la_fname(node), gr__d(a).s, gr__vs(a).s);
    return GR_OK;
}
/* a factor input: float64, 2-d (made by LUFactor, or a row of one when batched row by row) */
static gr_status gr__lu_static(const gr_node *node, const gr_var *F) {
    if (F->dtype != GR_F64 || F->ndim != 2)
        return gr__error(node->graph, GR_ERR_TYPE, "%s: %s is not an LU factorisation (LUFactor)", gr__la_fname(node), gr__d(F).s);
    return GR_OK;
}

/* at call time: A square; F, when given, the (n + 1, n) factor of an n x n matrix */
static gr_status gr__la_square_check(const gr_node *node, const gr_array *A, const gr_array *F) {
    if (A->shape[0] != A->shape[1])
        return gr_node_error(node, GR_ERR_SHAPE, "%s of shape %s is not square (in %s)", gr__d(gr__in(node)[0]).s, gr__as(A).s,
                             gr__la_fname(node));
    if (F && (F->shape[0] != A->shape[0] + 1 || F->shape[1] != A->shape[0]))
        return gr_node_error(node, GR_ERR_SHAPE, "the factorisation %s %s does not belong to %s %s (in %s)",
                             gr__d(gr__in(node)[node->n_in - 1]).s, gr__as(F).s, gr__d(gr__in(node)[0]).s, gr__as(A).s, gr__la_fname(node));
    return GR_OK;
}

static gr_var *gr__lu(gr_var *a, int who) {
    gr__lu_params p;
    if (!a) return NULL;
    memset(&p, 0, sizeof p);
    p.who = who;
    return gr__node1(a->graph, &gr__op_LUFactor, &p, sizeof p, 1, &a);
}
/* an op of (A, F) */
static gr_var *gr__la_with_lu(const gr_op_def *op, gr_var *a, gr_var *F) {
    gr_var *args[2];
    if (!a || !F) return NULL;
    args[0] = a; args[1] = F;
    return gr__node1(a->graph, op, NULL, 0, 2, args);
}
static gr_var *gr__solve_lu(gr_var *a, gr_var *b, gr_var *F, int trans) {
    gr__solve_params p;
    gr_var *args[3];
    if (!a || !b || !F) return NULL;
    memset(&p, 0, sizeof p);
    p.trans = trans;
    args[0] = a; args[1] = b; args[2] = F;
    return gr__node1(a->graph, &gr__op_Solve, &p, sizeof p, 3, args);
}
static gr_var *gr__triscale(gr_var *x, double below, double on, double above) {
    gr__triscale_params p;
    if (!x) return NULL;
    memset(&p, 0, sizeof p);
    p.w[0] = below; p.w[1] = on; p.w[2] = above;
    return gr__node1(x->graph, &gr__op_TriScale, &p, sizeof p, 1, &x);
}
static gr_var *gr__trace_any(gr_var *x) {
    return x ? gr__node1(x->graph, &gr__op_Trace, NULL, 0, 1, &x) : NULL;
}
/* (x + x^T) / 2 of a square matrix */
static gr_var *gr__sym(gr_var *x) {
    if (!x) return NULL;
    return gr_mul(gr__scalar_const(x->graph, x->dtype, 0.5, 0), gr_add(x, gr_transpose(x)));
}

/* ---- kernels --------------------------------------------------------------------------------------- */

static void gr__swap_rows(void *x, int64_t row_elems, int64_t i, int64_t j, size_t es) {
    size_t nb = (size_t)row_elems * es, q;
    unsigned char *a, *b;
    if (i == j) return;
    a = (unsigned char *)x + (size_t)i * nb;
    b = (unsigned char *)x + (size_t)j * nb;
    for (q = 0; q < nb; q++) { unsigned char t = a[q]; a[q] = b[q]; b[q] = t; }
}

/* P A = L U into F (see LUFactor), right-looking by rows with partial pivoting. A zero column
   leaves a zero pivot (the matrix is singular) and the elimination goes on past it, as getrf. */
static void gr__lu_factor(const gr_array *a, double *F) {
    int64_t n = a->shape[0], i, j, k;
    double *piv = F + n * n;
    gr__convert(GR_F64, F, a->dtype, a->data, n * n);
    for (k = 0; k < n; k++) {
        double *rk, best = fabs(F[k * n + k]);
        int64_t p = k;
        for (i = k + 1; i < n; i++)
            if (fabs(F[i * n + k]) > best) { best = fabs(F[i * n + k]); p = i; }
        piv[k] = (double)p;
        gr__swap_rows(F, n, k, p, sizeof(double));
        rk = F + k * n;
        if (rk[k] == 0) continue;
        for (i = k + 1; i < n; i++) {
            double *ri = F + i * n, l = ri[k] / rk[k];
            ri[k] = l;
            if (l != 0) for (j = k + 1; j < n; j++) ri[j] -= l * rk[j];
        }
    }
}

/* the first zero pivot of a factor, or -1 */
static int64_t gr__lu_zero_pivot(const double *F, int64_t n) {
    int64_t k;
    for (k = 0; k < n; k++) if (F[k * n + k] == 0) return k;
    return -1;
}

/* det A: U's diagonal, negated for every row swap */
static double gr__lu_det(const double *F, int64_t n) {
    const double *piv = F + n * n;
    double d = 1;
    int64_t k;
    for (k = 0; k < n; k++) {
        d *= F[k * n + k];
        if ((int64_t)piv[k] != k) d = -d;
    }
    return d;
}

/* log |det A| (summed, so that it neither overflows nor underflows) and the sign of det A; a zero
   pivot gives -inf with sign 0 */
static double gr__lu_logabsdet(const double *F, int64_t n, int *sign) {
    const double *piv = F + n * n;
    double l = 0;
    int64_t k;
    int s = 1;
    for (k = 0; k < n; k++) {
        double u = F[k * n + k];
        if (u == 0) { *sign = 0; return -INFINITY; }
        if (u < 0) { s = -s; u = -u; }
        if ((int64_t)piv[k] != k) s = -s;
        l += log(u);
    }
    *sign = s;
    return l;
}

/* adj A into X from A's factor F, never dividing by a pivot, so that it is exact where A is
   singular too. adj(X Y) = adj(Y) adj(X) for any square X and Y, so A = P^T L U gives
   adj A = adj(U) adj(L) adj(P^T) = det(P) adj(U) L^-1 P. U is upper triangular with diagonal d,
   and so is adj U: adj(U)[i][j] = (prod_{k<i} d_k) z_ij (prod_{k>j} d_k) for i <= j, with z_jj = 1
   and z_ij = -sum_{i<k<=j} U[i][k] (prod_{i<m<k} d_m) z_kj, which is back substitution for U^-1
   with every division by a pivot multiplied out (both sides are polynomials in U that agree
   wherever U is invertible). Then each row y of adj(U) becomes w = y L^-1 (w L = y, from the last
   column), the columns are swapped as P on the right asks (the swaps in reverse order), and the
   sign of P applied. O(n^3) like the inverse; a pivot that is zero makes the products that hold it
   zero, and two of them make every entry zero (rank n - 2). */
#define GR__LU_ADJUGATE(fn, T) \
    static void fn(const double *F, int64_t n, T *X) { \
        const double *piv = F + n * n; \
        double pre = 1; \
        int64_t i, j, k, swaps = 0; \
        for (j = 0; j < n; j++) {                    /* z, column by column, from the diagonal up */ \
            X[j * n + j] = 1; \
            for (i = j - 1; i >= 0; i--) { \
                double s = 0, q = 1; \
                for (k = i + 1; k <= j; k++) { s += F[i * n + k] * q * (double)X[k * n + j]; q *= F[k * n + k]; } \
                X[i * n + j] = (T)-s; \
            } \
            for (i = j + 1; i < n; i++) X[i * n + j] = 0; \
        } \
        for (i = 0; i < n; i++) {                    /* adj U = the pivots before row i and after column j, times z */ \
            double suf = 1; \
            for (j = n - 1; j >= i; j--) { X[i * n + j] = (T)((double)X[i * n + j] * pre * suf); suf *= F[j * n + j]; } \
            pre *= F[i * n + i]; \
        } \
        for (i = 0; i < n; i++) {                    /* row i times L^-1 */ \
            T *xi = X + i * n; \
            for (j = n - 2; j >= 0; j--) { \
                double s = (double)xi[j]; \
                for (k = j + 1; k < n; k++) s -= (double)xi[k] * F[k * n + j]; \
                xi[j] = (T)s; \
            } \
        } \
        for (k = n - 1; k >= 0; k--) {               /* times P: columns k and piv[k] swapped */ \
            int64_t p = (int64_t)piv[k]; \
            if (p == k) continue; \
            swaps++; \
            for (i = 0; i < n; i++) { T t = X[i * n + k]; X[i * n + k] = X[i * n + p]; X[i * n + p] = t; } \
        } \
        if (swaps % 2) for (k = 0; k < n * n; k++) X[k] = -X[k]; \
    }
GR__LU_ADJUGATE(gr__lu_adjugate_f64, double)
GR__LU_ADJUGATE(gr__lu_adjugate_f32, float)

/* x (n rows of R elements) := A^-1 x, or A^-T x when trans, from A's factor F. A = P^T L U, so
   A x = b is L y = P b then U x = y; A^T = U^T L^T P, so A^T x = b is U^T z = b, L^T w = z and
   x = P^T w (the swaps undone in reverse). Row-oriented: every inner loop runs along a row. */
#define GR__LU_SOLVE(fn, T) \
    static void fn(const double *F, int64_t n, int trans, T *x, int64_t R) { \
        const double *piv = F + n * n; \
        int64_t i, j, k, r; \
        if (!trans) { \
            for (k = 0; k < n; k++) gr__swap_rows(x, R, k, (int64_t)piv[k], sizeof(T)); \
            for (i = 1; i < n; i++) { \
                T *xi = x + i * R; \
                for (j = 0; j < i; j++) { \
                    T l = (T)F[i * n + j]; const T *xj = x + j * R; \
                    if (l != 0) for (r = 0; r < R; r++) xi[r] -= l * xj[r]; \
                } \
            } \
            for (i = n - 1; i >= 0; i--) { \
                T *xi = x + i * R, d = (T)F[i * n + i]; \
                for (j = i + 1; j < n; j++) { \
                    T u = (T)F[i * n + j]; const T *xj = x + j * R; \
                    if (u != 0) for (r = 0; r < R; r++) xi[r] -= u * xj[r]; \
                } \
                for (r = 0; r < R; r++) xi[r] /= d; \
            } \
        } else { \
            for (i = 0; i < n; i++) { \
                T *xi = x + i * R, d = (T)F[i * n + i]; \
                for (j = 0; j < i; j++) { \
                    T u = (T)F[j * n + i]; const T *xj = x + j * R; \
                    if (u != 0) for (r = 0; r < R; r++) xi[r] -= u * xj[r]; \
                } \
                for (r = 0; r < R; r++) xi[r] /= d; \
            } \
            for (i = n - 1; i >= 0; i--) { \
                T *xi = x + i * R; \
                for (j = i + 1; j < n; j++) { \
                    T l = (T)F[j * n + i]; const T *xj = x + j * R; \
                    if (l != 0) for (r = 0; r < R; r++) xi[r] -= l * xj[r]; \
                } \
            } \
            for (k = n - 1; k >= 0; k--) gr__swap_rows(x, R, k, (int64_t)piv[k], sizeof(T)); \
        } \
    }
GR__LU_SOLVE(gr__lu_solve_f64, double)
GR__LU_SOLVE(gr__lu_solve_f32, float)

static void gr__lu_solve(const double *F, int64_t n, int trans, gr_array *x) {
    int64_t R = n ? x->size / n : 0;
    if (x->dtype == GR_F64) gr__lu_solve_f64(F, n, trans, (double *)x->data, R);
    else gr__lu_solve_f32(F, n, trans, (float *)x->data, R);
}

/* L L^T = A from A's lower triangle, by rows (Cholesky-Banachiewicz): L[i][j] needs rows i and j
   of L up to column j, both contiguous. Sums in float64. Returns -1, or the row whose pivot is not
   positive (the leading minor of that order is not positive: A is not positive definite). */
#define GR__CHOLESKY(fn, T) \
    static int64_t fn(const T *A, T *L, int64_t n) { \
        int64_t i, j, k; \
        for (i = 0; i < n; i++) { \
            T *li = L + i * n; \
            for (j = 0; j <= i; j++) { \
                const T *lj = L + j * n; \
                double s = (double)A[i * n + j]; \
                for (k = 0; k < j; k++) s -= (double)li[k] * (double)lj[k]; \
                if (i == j) { \
                    if (!(s > 0)) return i; \
                    li[i] = (T)sqrt(s); \
                } else \
                    li[j] = (T)(s / (double)lj[j]); \
            } \
            for (j = i + 1; j < n; j++) li[j] = 0; \
        } \
        return -1; \
    }
GR__CHOLESKY(gr__cholesky_f64, double)
GR__CHOLESKY(gr__cholesky_f32, float)

static int gr__all_finite(const gr_array *a) {
    int64_t k;
    if (a->dtype == GR_F64) {
        const double *d = (const double *)a->data;
        for (k = 0; k < a->size; k++) if (!isfinite(d[k])) return 0;
    } else if (a->dtype == GR_F32) {
        const float *f = (const float *)a->data;
        for (k = 0; k < a->size; k++) if (!isfinite(f[k])) return 0;
    }
    return 1;
}

/* after a solve: a zero pivot was caught before; an overflow from finite A and b is singularity
   to working precision (a pivot too small to divide by), reported rather than returned */
static gr_status gr__la_overflow_check(const gr_node *node, const gr_array *x, const gr_array *A, const gr_array *b) {
    if (gr__all_finite(x) || !gr__all_finite(A) || (b && !gr__all_finite(b))) return GR_OK;
    return gr_node_error(node, GR_ERR_RUNTIME, "the matrix %s is singular to working precision: the solution overflows (in %s)",
                         gr__d(gr__in(node)[0]).s, gr__la_fname(node));
}
static gr_status gr__la_singular(const gr_node *node, int64_t k) {
    return gr_node_error(node, GR_ERR_RUNTIME, "the matrix %s is singular: pivot %lld of its LU factorisation is zero (in %s)",
                         gr__d(gr__in(node)[0]).s, (long long)k, gr__la_fname(node));
}

/* ---- LUFactor ------------------------------------------------------------------------------------- */

static gr_status gr__LUFactor_infer(const gr_node *node, gr_type *out) {
    gr_var *a = gr__in(node)[0];
    int64_t n;
    gr_status st = gr__la_square_static(node, a);
    if (st != GR_OK) return st;
    n = gr__vshape(a)[0] >= 0 ? gr__vshape(a)[0] : gr__vshape(a)[1];
    out->dtype = GR_F64;
    out->ndim = 2;
    out->shape[0] = n >= 0 ? n + 1 : -1;
    out->shape[1] = n;
    return GR_OK;
}
static gr_status gr__LUFactor_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    gr_status st = gr__la_square_check(node, in[0], NULL);
    if (st != GR_OK) return st;
    out[0]->shape[0] = in[0]->shape[0] + 1;
    out[0]->shape[1] = in[0]->shape[0];
    return GR_OK;
}
static gr_status gr__LUFactor_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    gr__lu_factor(in[0], (double *)out[0]->data);
    return GR_OK;
}
static gr_status gr__LUFactor_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    (void)og;
    ig[0] = gr_disconnected_like(gr__in(node)[0]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__LUFactor_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node; (void)ev;
    orop[0] = NULL;                      /* a workspace: the consumers differentiate A */
    return GR_OK;
}

/* ---- MatrixInverse and Cholesky: a square matrix to a square matrix --------------------------- */

static gr_status gr__la_square_infer(const gr_node *node, gr_type *out) {
    gr_status st = gr__la_square_static(node, gr__in(node)[0]);
    if (st == GR_OK && node->n_in == 2) st = gr__lu_static(node, gr__in(node)[1]);
    if (st != GR_OK) return st;
    gr_var_type(gr__in(node)[0], out);
    if (out->shape[0] < 0) out->shape[0] = out->shape[1];
    if (out->shape[1] < 0) out->shape[1] = out->shape[0];
    return GR_OK;
}
static gr_status gr__la_square_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    gr_status st = gr__la_square_check(node, in[0], node->n_in == 2 ? in[1] : NULL);
    if (st != GR_OK) return st;
    out[0]->shape[0] = out[0]->shape[1] = in[0]->shape[0];
    return GR_OK;
}

GR_API gr_var *gr_matrix_inverse(gr_var *a) {
    gr_graph *g;
    if (!gr__operands("gr_matrix_inverse", 1, &a, &g)) return NULL;
    a = gr__la_operand("gr_matrix_inverse", g, a);
    return gr__la_with_lu(&gr__op_MatrixInverse, a, gr__lu(a, GR__LU_FOR_INVERSE));
}

/* X := I, then X := A^-1 X in place */
static gr_status gr__MatrixInverse_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const double *F = (const double *)in[1]->data;
    gr_array *X = out[0];
    int64_t n = in[0]->shape[0], k = gr__lu_zero_pivot(F, n);
    if (k >= 0) return gr__la_singular(node, k);
    memset(X->data, 0, (size_t)X->size * gr__dsize(X->dtype));
    for (k = 0; k < n; k++) gr__store(X->dtype, X->data, k * n + k, 1.0);
    gr__lu_solve(F, n, 0, X);
    return gr__la_overflow_check(node, X, in[0], NULL);
}
static gr_status gr__MatrixInverse_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *X = gr__out(node)[0];
    ig[0] = gr_neg(gr__dot_flags(X, gr__dot_flags(og[0], X, 0, 1), 1, 0));      /* -X^T (G X^T) */
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__MatrixInverse_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *X = gr__out(node)[0];
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr_neg(gr_dot(gr_dot(X, ev[0]), X));                             /* -X V X */
    return orop[0] ? GR_OK : node->graph->status;
}

GR_API gr_var *gr_cholesky(gr_var *a) {
    gr_graph *g;
    if (!gr__operands("gr_cholesky", 1, &a, &g)) return NULL;
    a = gr__la_operand("gr_cholesky", g, a);
    return a ? gr__node1(g, &gr__op_Cholesky, NULL, 0, 1, &a) : NULL;
}

static gr_status gr__Cholesky_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t n = in[0]->shape[0], bad;
    if (in[0]->dtype == GR_F64) bad = gr__cholesky_f64((const double *)in[0]->data, (double *)out[0]->data, n);
    else bad = gr__cholesky_f32((const float *)in[0]->data, (float *)out[0]->data, n);
    if (bad >= 0)
        return gr_node_error(node, GR_ERR_RUNTIME, "the matrix %s is not positive definite: its leading minor of order %lld is not "
                             "positive (in gr_cholesky)", gr__d(gr__in(node)[0]).s, (long long)(bad + 1));
    return GR_OK;
}
/* P = Phi(L^T G), S = L^-T P L^-1, dA = (S + S^T) / 2 */
static gr_status gr__Cholesky_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *L = gr__out(node)[0], *Li = gr__la_with_lu(&gr__op_MatrixInverse, L, gr__lu(L, GR__LU_FOR_CHOLESKY));
    gr_var *P = gr__triscale(gr__dot_flags(L, og[0], 1, 0), 1.0, 0.5, 0.0);
    ig[0] = gr__sym(gr__dot_flags(Li, gr_dot(P, Li), 1, 0));
    return ig[0] ? GR_OK : node->graph->status;
}
/* L Phi(L^-1 V_s L^-T) */
static gr_status gr__Cholesky_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *L = gr__out(node)[0], *Li;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    Li = gr__la_with_lu(&gr__op_MatrixInverse, L, gr__lu(L, GR__LU_FOR_CHOLESKY));
    orop[0] = gr_dot(L, gr__triscale(gr_dot(Li, gr__dot_flags(gr__sym(ev[0]), Li, 0, 1)), 1.0, 0.5, 0.0));
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- Det and LogDet: a square matrix to a scalar ------------------------------------------------ */

static gr_status gr__la_scalar_infer(const gr_node *node, gr_type *out) {
    gr_status st = gr__la_square_static(node, gr__in(node)[0]);
    if (st == GR_OK) st = gr__lu_static(node, gr__in(node)[1]);
    if (st != GR_OK) return st;
    out->dtype = (gr_dtype)gr__in(node)[0]->dtype;
    out->ndim = 0;
    return GR_OK;
}
static gr_status gr__la_scalar_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)out;
    return gr__la_square_check(node, in[0], in[1]);
}

GR_API gr_var *gr_det(gr_var *a) {
    gr_graph *g;
    if (!gr__operands("gr_det", 1, &a, &g)) return NULL;
    a = gr__la_operand("gr_det", g, a);
    return gr__la_with_lu(&gr__op_Det, a, gr__lu(a, GR__LU_FOR_DET));
}
GR_API gr_var *gr_logdet(gr_var *a) {
    gr_graph *g;
    if (!gr__operands("gr_logdet", 1, &a, &g)) return NULL;
    a = gr__la_operand("gr_logdet", g, a);
    return gr__la_with_lu(&gr__op_LogDet, a, gr__lu(a, GR__LU_FOR_LOGDET));
}

static gr_status gr__Det_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    gr__store(out[0]->dtype, out[0]->data, 0, gr__lu_det((const double *)in[1]->data, in[0]->shape[0]));
    return GR_OK;
}
static gr_status gr__LogDet_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int sign;
    double l = gr__lu_logabsdet((const double *)in[1]->data, in[0]->shape[0], &sign);
    (void)node;
    gr__store(out[0]->dtype, out[0]->data, 0, sign < 0 ? NAN : l);    /* NaN: the log of a negative number */
    return GR_OK;
}
/* G adj(A)^T: no division by det, so exact at a singular A too */
static gr_status gr__Det_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *J = gr__la_with_lu(&gr__op_Adjugate, gr__in(node)[0], gr__in(node)[1]);
    ig[0] = gr_mul(og[0], gr_transpose(J));
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
/* tr(adj(A) V) = sum(adj(A)^T * V) */
static gr_status gr__Det_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr_sum(gr_mul(gr_transpose(gr__la_with_lu(&gr__op_Adjugate, gr__in(node)[0], gr__in(node)[1])), ev[0]));
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- Adjugate: the derivatives of det ------------------------------------------------------------ */

static gr_status gr__Adjugate_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const double *F = (const double *)in[1]->data;
    int64_t n = in[0]->shape[0];
    (void)node;
    if (out[0]->dtype == GR_F64) gr__lu_adjugate_f64(F, n, (double *)out[0]->data);
    else gr__lu_adjugate_f32(F, n, (float *)out[0]->data);
    return GR_OK;
}
/* D adj(A)[W] = tr(A^-1 W) adj(A) - adj(A) W A^-1 is the derivative along W: its adjoint, the
   gradient, is (D adj(A)[G^T])^T, since <G, D adj(A)[W]> is the second derivative of det along G^T
   and W, which is symmetric. Both solve with A's factor: a singular A fails the call. */
static gr_status gr__Adjugate_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *A = gr__in(node)[0], *F = gr__in(node)[1], *J = gr__out(node)[0], *G = og[0];
    gr_var *t = gr__trace_any(gr__solve_lu(A, gr_transpose(G), F, 0));                 /* tr(A^-1 G^T) */
    ig[0] = gr_sub(gr_mul(t, gr_transpose(J)), gr__solve_lu(A, gr__dot_flags(G, J, 0, 1), F, 1)); /* - A^-T (G J^T) */
    ig[1] = gr_disconnected_like(F);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__Adjugate_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *A = gr__in(node)[0], *F = gr__in(node)[1], *J = gr__out(node)[0], *V = ev[0], *t;
    orop[0] = NULL;
    if (gr_is_disconnected(V)) return GR_OK;
    t = gr__trace_any(gr__solve_lu(A, V, F, 0));                                       /* tr(A^-1 V) */
    orop[0] = gr_sub(gr_mul(t, J), gr__dot_flags(J, gr__solve_lu(A, gr_transpose(V), F, 1), 0, 1));  /* - J (A^-T V^T)^T */
    return orop[0] ? GR_OK : node->graph->status;
}
/* G A^-T */
static gr_status gr__LogDet_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *X = gr__la_with_lu(&gr__op_MatrixInverse, gr__in(node)[0], gr__in(node)[1]);
    ig[0] = gr_mul(og[0], gr_transpose(X));
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
/* tr(A^-1 V) */
static gr_status gr__LogDet_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__trace_any(gr__solve_lu(gr__in(node)[0], ev[0], gr__in(node)[1], 0));
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- Solve ------------------------------------------------------------------------------------------ */

GR_API gr_var *gr_solve(gr_var *a, gr_var *b) {
    gr_var *args[2];
    gr_graph *g;
    int64_t n;
    int T;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_solve", 2, args, &g)) return NULL;
    if (a->ndim != 2)
        return gr__fail(g, GR_ERR_TYPE, "gr_solve: %s must be a matrix (2-d); it has %d dimensions", gr__d(a).s, a->ndim);
    if (b->ndim < 1 || b->ndim > 2)
        return gr__fail(g, GR_ERR_TYPE, "gr_solve: the right-hand side %s must be a vector or a matrix; it has %d dimensions",
                        gr__d(b).s, b->ndim);
    if (gr__vshape(a)[0] >= 0 && gr__vshape(a)[1] >= 0 && gr__vshape(a)[0] != gr__vshape(a)[1])
        return gr__fail(g, GR_ERR_SHAPE, "gr_solve: %s of shape %s is not square", gr__d(a).s, gr__vs(a).s);
    n = gr__vshape(a)[0] >= 0 ? gr__vshape(a)[0] : gr__vshape(a)[1];
    if (n >= 0 && gr__vshape(b)[0] >= 0 && gr__vshape(b)[0] != n)
        return gr__fail(g, GR_ERR_SHAPE, "gr_solve: %s %s and %s %s do not match: the right-hand side needs %lld rows", gr__d(a).s,
                        gr__vs(a).s, gr__d(b).s, gr__vs(b).s, (long long)n);
    T = gr__promote(2, args);
    if (!gr__is_float(T)) T = GR_F64;
    a = gr__coerce(a, T);
    b = gr__coerce(b, T);
    return gr__solve_lu(a, b, gr__lu(a, GR__LU_FOR_SOLVE), 0);
}

static gr_status gr__Solve_infer(const gr_node *node, gr_type *out) {
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1];
    int64_t n;
    gr_status st = gr__la_square_static(node, a);
    if (st == GR_OK) st = gr__lu_static(node, gr__in(node)[2]);
    if (st != GR_OK) return st;
    if (b->ndim < 1 || b->dtype != a->dtype)
        return gr__error(node->graph, GR_ERR_TYPE, "gr_solve: the right-hand side %s must have 1 dimension or more and the dtype "
                         "of %s", gr__d(b).s, gr__d(a).s);
    n = gr__vshape(a)[0] >= 0 ? gr__vshape(a)[0] : gr__vshape(a)[1];
    if (n >= 0 && gr__vshape(b)[0] >= 0 && gr__vshape(b)[0] != n)
        return gr__error(node->graph, GR_ERR_SHAPE, "gr_solve: %s %s and %s %s do not match", gr__d(a).s, gr__vs(a).s, gr__d(b).s,
                         gr__vs(b).s);
    gr_var_type(b, out);
    if (out->shape[0] < 0) out->shape[0] = n;
    return GR_OK;
}
static gr_status gr__Solve_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    gr_status st = gr__la_square_check(node, in[0], in[2]);
    if (st != GR_OK) return st;
    if (in[1]->shape[0] != in[0]->shape[0])
        return gr_node_error(node, GR_ERR_SHAPE, "%s %s and the right-hand side %s %s do not match (in gr_solve)", gr__d(gr__in(node)[0]).s,
                             gr__as(in[0]).s, gr__d(gr__in(node)[1]).s, gr__as(in[1]).s);
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[i] = in[1]->shape[i];
    return GR_OK;
}
/* x := b, then x := A^-1 x in place */
static gr_status gr__Solve_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const double *F = (const double *)in[2]->data;
    int64_t n = in[0]->shape[0], k = gr__lu_zero_pivot(F, n);
    if (k >= 0) return gr__la_singular(node, k);
    if (out[0]->data != in[1]->data) memcpy(out[0]->data, in[1]->data, (size_t)in[1]->size * gr__dsize(in[1]->dtype));
    gr__lu_solve(F, n, ((const gr__solve_params *)gr__params(node))->trans, out[0]);
    return gr__la_overflow_check(node, out[0], in[0], in[1]);
}
/* x = op(A)^-1 b: db = op(A)^-T G; dA = -db x^T (op = identity) or -x db^T (op = transpose),
   contracted over every axis of b but the first */
static gr_status gr__Solve_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    int trans = ((const gr__solve_params *)gr__params(node))->trans;
    gr_var *x = gr__out(node)[0], *db = gr__solve_lu(gr__in(node)[0], og[0], gr__in(node)[2], !trans);
    ig[1] = db;
    ig[0] = gr_neg(trans ? gr__tdot(x, db, 1, 1, 0, 1) : gr__tdot(db, x, 1, 1, 0, 1));
    ig[2] = gr_disconnected_like(gr__in(node)[2]);
    return ig[0] && ig[1] && ig[2] ? GR_OK : node->graph->status;
}
/* op(A)^-1 (v_b - op(V) x) */
static gr_status gr__Solve_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    int trans = ((const gr__solve_params *)gr__params(node))->trans;
    gr_var *rhs = NULL;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) && gr_is_disconnected(ev[1])) return GR_OK;
    if (!gr_is_disconnected(ev[0])) {
        gr_var *vx = gr__tdot(ev[0], gr__out(node)[0], 1, 1, trans, 0);
        rhs = gr_is_disconnected(ev[1]) ? gr_neg(vx) : gr_sub(ev[1], vx);
    } else
        rhs = ev[1];
    orop[0] = gr__solve_lu(gr__in(node)[0], rhs, gr__in(node)[2], trans);
    return orop[0] ? GR_OK : node->graph->status;
}
/* only b batched: one solve of all the right-hand sides, the batch axis moved behind b's first
   axis and back (a swap of axes 0 and 1 both ways); otherwise row by row */
static gr_status gr__Solve_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    int pattern[GR_MAX_NDIM], nd = in[1]->ndim, i;
    gr_var *x;
    if (batched[0] || batched[2] || !batched[1]) return gr__map_batch(node, in, batched, out);
    pattern[0] = 1; pattern[1] = 0;
    for (i = 2; i < nd; i++) pattern[i] = i;
    x = gr__solve_lu(in[0], gr__dimshuffle(in[1], nd, pattern, 0), in[2], ((const gr__solve_params *)gr__params(node))->trans);
    out[0] = gr__dimshuffle(x, nd, pattern, 0);
    return out[0] ? GR_OK : node->graph->status;
}

/* ---- Trace and TriScale: on the last two axes, whatever comes before --------------------------- */

GR_API gr_var *gr_trace(gr_var *a) {
    gr_graph *g;
    if (!gr__operands("gr_trace", 1, &a, &g)) return NULL;
    if (a->ndim != 2)
        return gr__fail(g, GR_ERR_TYPE, "gr_trace: %s must be a matrix (2-d); it has %d dimensions", gr__d(a).s, a->ndim);
    if (a->dtype == GR_BOOL) a = gr_cast(a, GR_I64);
    return gr__trace_any(a);
}

static gr_status gr__Trace_infer(const gr_node *node, gr_type *out) {
    gr_var *x = gr__in(node)[0];
    int i;
    if (x->ndim < 2 || x->dtype == GR_BOOL)
        return gr__error(node->graph, GR_ERR_TYPE, "gr_trace: %s must have 2 dimensions or more and a numeric dtype", gr__d(x).s);
    out->dtype = (gr_dtype)x->dtype;
    out->ndim = x->ndim - 2;
    for (i = 0; i < out->ndim; i++) out->shape[i] = gr__vshape(x)[i];
    return GR_OK;
}
static gr_status gr__Trace_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    (void)node;
    for (i = 0; i < out[0]->ndim; i++) out[0]->shape[i] = in[0]->shape[i];
    return GR_OK;
}
static gr_status gr__Trace_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[0];
    int64_t n = x->shape[x->ndim - 2], m = x->shape[x->ndim - 1], d = n < m ? n : m, outer = out[0]->size, o, i;
    (void)node;
    for (o = 0; o < outer; o++) {
        int64_t base = o * n * m;
        if (x->dtype == GR_I64) {
            uint64_t s = 0;                  /* wraps, as NumPy's int64 sum */
            for (i = 0; i < d; i++) s += (uint64_t)((const int64_t *)x->data)[base + i * m + i];
            ((int64_t *)out[0]->data)[o] = (int64_t)s;
        } else {
            double s = 0;
            for (i = 0; i < d; i++) s += gr__load(x->dtype, x->data, base + i * m + i);
            gr__store(x->dtype, out[0]->data, o, s);
        }
    }
    return GR_OK;
}
/* G on the diagonal: TriScale(0, 1, 0) of G broadcast to x's shape */
static gr_status gr__Trace_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0];
    int pattern[GR_MAX_NDIM], i, k = og[0]->ndim;
    if (!gr__is_float(x->dtype)) ig[0] = gr__zeros_grad(x);
    else {
        for (i = 0; i < k; i++) pattern[i] = i;
        pattern[k] = pattern[k + 1] = GR_NEWAXIS;
        ig[0] = gr__triscale(gr_broadcast_like(gr__dimshuffle(og[0], k + 2, pattern, 0), x), 0.0, 1.0, 0.0);
    }
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Trace_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__trace_any(ev[0]);
    return orop[0] ? GR_OK : node->graph->status;
}

#define GR__TRISCALE(fn, T) \
    static void fn(const T *x, T *y, int64_t outer, int64_t n, int64_t m, const double *w) { \
        int64_t o, i, j; \
        for (o = 0; o < outer; o++) \
            for (i = 0; i < n; i++) { \
                const T *xi = x + (o * n + i) * m; \
                T *yi = y + (o * n + i) * m; \
                for (j = 0; j < m; j++) yi[j] = xi[j] * (T)w[j < i ? 0 : j == i ? 1 : 2]; \
            } \
    }
GR__TRISCALE(gr__triscale_f64, double)
GR__TRISCALE(gr__triscale_f32, float)

static gr_status gr__TriScale_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const double *w = ((const gr__triscale_params *)gr__params(node))->w;
    const gr_array *x = in[0];
    int64_t n, m, outer;
    if (x->ndim < 2 || !gr__is_float(x->dtype))
        return gr_node_error(node, GR_ERR_TYPE, "%s must be a float tensor of 2 dimensions or more", gr__d(gr__in(node)[0]).s);
    n = x->shape[x->ndim - 2];
    m = x->shape[x->ndim - 1];
    outer = n * m != 0 ? x->size / (n * m) : 0;
    if (x->dtype == GR_F64) gr__triscale_f64((const double *)x->data, (double *)out[0]->data, outer, n, m, w);
    else gr__triscale_f32((const float *)x->data, (float *)out[0]->data, outer, n, m, w);
    return GR_OK;
}
/* a fixed weight per element: its own adjoint */
static gr_status gr__TriScale_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const double *w = ((const gr__triscale_params *)gr__params(node))->w;
    ig[0] = gr__triscale(og[0], w[0], w[1], w[2]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__TriScale_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const double *w = ((const gr__triscale_params *)gr__params(node))->w;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__triscale(ev[0], w[0], w[1], w[2]);
    return orop[0] ? GR_OK : node->graph->status;
}
