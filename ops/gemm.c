/* ops/gemm.c: the matrix products the contractions (ops/dot.c) run on, and the one place that
   calls CBLAS.

   C (M x N, row-major) = op(A) (M x K) . op(B) (K x N), op(X) = X or X^T by a flag (ta, tb): A is
   stored M x K (K x M when ta), B K x N (N x K when tb), contiguous. By the operands' shapes:
     gr__gemm_dt   matrix . matrix   the blocked kernel below, or cblas_?gemm with GRADIENT_CBLAS
     gr__gemv_dt   matrix . vector   a plain loop, or cblas_?gemv
     gr__dotv_dt   vector . vector   a plain loop (float32 summed in float64), or cblas_ddot
   Integers wrap (through uint64_t, as NumPy's) and always take the plain loops. */

#ifndef GR_NO_DOT                  /* ops/table.h, op families: the whole file */

/* ---- the built-in kernels ---------------------------------------------------------------------

   Floating point, after GotoBLAS: a KC x NC block of op(B) is packed into strips of NR columns
   (k-major inside a strip, zero-padded), then for every 4 rows of op(A) a micro-kernel keeps a
   4 x NR tile of C in registers while it walks the strip: per k, two vector loads of B, four
   scalars of A, eight multiply-adds. A is read in place (its rows are four streams, or with ta
   four adjacent columns), and only a last partial group of rows is copied, zero-padded. The
   packed block (at most GR__GEMM_BUF bytes) and that copy live in the work memory the caller
   gives (gr__gemm_work_bytes of it): in a compiled function the function's scratch buffer, sized
   when the shapes are settled (src/call.c), so no stack frame holds them and nothing is allocated.
   With GCC or Clang the tile is eight vectors of the widest width the target has (AVX-512, AVX
   or SSE: GCC vector extensions, no intrinsics); elsewhere the same loops run on a plain array
   the compiler may vectorise. Integers (wrapping uint64_t) take a plain blocked loop.

   The kernels are also the text gr_fn_emit_c writes into the files it emits (the GR_KERNEL regions,
   src/emit.c): there the guards below choose the vector or the plain-array tile as they do here.
   Both give the same bits: every element of C is the same chain of products and sums (k in order,
   each KC block added to C in order); the tile's width only groups the columns. What can change
   bits is contracting a*b + c into one FMA (-ffp-contract), for both alike. An emitted file (where
   GRADIENT_H is not defined) takes vectors of 16 bytes at most, so that its work is the portable
   kernel's (gr__gemm_emit_work_bytes): a wide tile would need a wider packed strip. */
/* GR_KERNEL gr__unused */
#ifndef GR__UNUSED
#if defined(__GNUC__) || defined(__clang__)
#define GR__UNUSED __attribute__((unused))
#else
#define GR__UNUSED
#endif
#endif
/* GR_KERNEL gr__gemm */
#ifndef GRADIENT_H
#define GR__GEMM_V16
#endif
#define GR__GEMM_MR 4
#define GR__GEMM_KC 128
#ifndef GR__GEMM_BUF
#define GR__GEMM_BUF 32768
#endif
/* the packed block's columns (a multiple of NR), for NR columns a strip and elements of es bytes */
static GR__UNUSED int64_t gr__gemm_nc(int64_t nr, int64_t es) {
    int64_t nc = GR__GEMM_BUF / (GR__GEMM_KC * es) / nr * nr;
    return nc > nr ? nc : nr;
}
#if (defined(__GNUC__) || defined(__clang__)) && !defined(GR_NO_VECTOR_EXTENSIONS)
#if defined(__AVX512F__) && !defined(GR__GEMM_V16)
#define GR__VBYTES 64
#elif defined(__AVX__) && !defined(GR__GEMM_V16)
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
    /* the work elements fn needs for N columns and K terms: the packed block of B, then the last rows of A */ \
    static GR__UNUSED int64_t fn##_work(int64_t N, int64_t K) { \
        int64_t nc = gr__gemm_nc(fn##_NR, (int64_t)sizeof(T)), n = (N + fn##_NR - 1) / fn##_NR * fn##_NR; \
        int64_t kc = K < GR__GEMM_KC ? K : GR__GEMM_KC; \
        return kc * (n < nc ? n : nc) + kc * GR__GEMM_MR; \
    } \
    static GR__UNUSED void fn(int ta, int tb, int64_t M, int64_t N, int64_t K, const T *A, const T *B, T *C, T *work) { \
        enum { NR = fn##_NR }; \
        const int64_t NRL = NR, NCL = gr__gemm_nc(NR, (int64_t)sizeof(T)); \
        T *bp = work, *ap = work + fn##_work(N, K) - (K < GR__GEMM_KC ? K : GR__GEMM_KC) * GR__GEMM_MR; \
        int64_t i0, j0, k0, jr, j, k, r, rs = ta ? 1 : K, cs = ta ? M : 1; \
        if (M > 0 && N > 0) memset(C, 0, sizeof(T) * (size_t)(M * N)); \
        for (j0 = 0; j0 < N; j0 += NCL) { \
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
/* GR_KERNEL gr__gemm_f64 */
GR__GEMM_FLOAT(gr__gemm_f64, double)
/* GR_KERNEL gr__gemm_f32 */
GR__GEMM_FLOAT(gr__gemm_f32, float)
/* GR_KERNEL_END */

/* int64 operands go through uint64_t: products and sums wrap modulo 2^64 like NumPy's, where
   int64_t arithmetic would overflow (undefined behaviour) */
/* GR_KERNEL gr__gemm_i64 */
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

/* GR_KERNEL_END */

/* y (M) = op(A) (M x K) . x (K) */
/* GR_KERNEL gr__gemv */
#define GR__GEMV(fn, T, TA) \
    static GR__UNUSED void fn(int ta, int64_t M, int64_t K, const T *A, const T *x, T *y) { \
        int64_t i, k; \
        if (!ta) { \
            for (i = 0; i < (M & ~(int64_t)3); i += 4) {   /* four rows at once, each summed in order: four chains in flight */ \
                TA s0 = 0, s1 = 0, s2 = 0, s3 = 0; const T *a = A + i * K; \
                for (k = 0; k < K; k++) { \
                    TA xk = (TA)x[k]; \
                    s0 += (TA)a[k] * xk; s1 += (TA)a[K + k] * xk; s2 += (TA)a[2 * K + k] * xk; s3 += (TA)a[3 * K + k] * xk; \
                } \
                y[i] = (T)s0; y[i + 1] = (T)s1; y[i + 2] = (T)s2; y[i + 3] = (T)s3; \
            } \
            for (i = M & ~(int64_t)3; i < M; i++) { TA s = 0; const T *a = A + i * K; for (k = 0; k < K; k++) s += (TA)a[k] * (TA)x[k]; y[i] = (T)s; } \
        } else { \
            for (i = 0; i < M; i++) y[i] = 0; \
            for (k = 0; k < K; k++) { T xk = x[k]; const T *a = A + k * M; for (i = 0; i < M; i++) y[i] += a[i] * xk; } \
        } \
    }
/* GR_KERNEL gr__gemv_f64 */
GR__GEMV(gr__gemv_f64, double, double)
/* GR_KERNEL gr__gemv_f32 */
GR__GEMV(gr__gemv_f32, float, float)
/* GR_KERNEL gr__gemv_i64 */
GR__GEMV(gr__gemv_i64, uint64_t, uint64_t)
/* GR_KERNEL_END */

/* sum_k x_k y_k over K elements: float32 summed in float64, int64 wrapping */
/* GR_KERNEL gr__dotv_f64 */
static GR__UNUSED double gr__dotv_f64(int64_t K, const double *x, const double *y) {
    double s = 0;
    int64_t i;
    for (i = 0; i < K; i++) s += x[i] * y[i];
    return s;
}
/* GR_KERNEL gr__dotv_f32 */
static GR__UNUSED float gr__dotv_f32(int64_t K, const float *x, const float *y) {
    double s = 0;
    int64_t i;
    for (i = 0; i < K; i++) s += (double)x[i] * (double)y[i];
    return (float)s;
}
/* GR_KERNEL gr__dotv_i64 */
static GR__UNUSED int64_t gr__dotv_i64(int64_t K, const uint64_t *x, const uint64_t *y) {
    uint64_t s = 0;
    int64_t i;
    for (i = 0; i < K; i++) s += x[i] * y[i];
    return (int64_t)s;
}
/* GR_KERNEL_END */

/* ---- the dispatcher: CBLAS with GRADIENT_CBLAS, else the kernels above ------------------------ */

/* the bytes of work memory gr__gemm_dt needs for a product with N columns and K terms (0: none) */
static size_t gr__gemm_work_bytes(int dt, int64_t N, int64_t K) {
#ifdef GRADIENT_CBLAS
    (void)dt; (void)N; (void)K;
    return 0;
#else
    if (dt == GR_F64) return (size_t)gr__gemm_f64_work(N, K) * sizeof(double);
    if (dt == GR_F32) return (size_t)gr__gemm_f32_work(N, K) * sizeof(float);
    return 0;
#endif
}

/* C = op(A) op(B), of dtype dt; work: gr__gemm_work_bytes(dt, N) bytes, aligned for double */
static void gr__gemm_dt(int dt, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A, const void *B, void *C, void *work) {
    (void)work;
    if (M == 0 || N == 0) return;
    if (K == 0) { memset(C, 0, (size_t)(M * N) * gr__dsize(dt)); return; }
    if (dt == GR_F64) {
#ifdef GRADIENT_CBLAS
        cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, 1.0,
                    (const double *)A, (int)(ta ? M : K), (const double *)B, (int)(tb ? K : N), 0.0, (double *)C, (int)N);
#else
        gr__gemm_f64(ta, tb, M, N, K, (const double *)A, (const double *)B, (double *)C, (double *)work);
#endif
    } else if (dt == GR_F32) {
#ifdef GRADIENT_CBLAS
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, 1.0f,
                    (const float *)A, (int)(ta ? M : K), (const float *)B, (int)(tb ? K : N), 0.0f, (float *)C, (int)N);
#else
        gr__gemm_f32(ta, tb, M, N, K, (const float *)A, (const float *)B, (float *)C, (float *)work);
#endif
    } else
        gr__gemm_i64(ta, tb, M, N, K, (const uint64_t *)A, (const uint64_t *)B, (uint64_t *)C);
}

/* y = op(A) x, A stored rows x cols (op(A) is cols x rows when t), of dtype dt */
static void gr__gemv_dt(int dt, int t, int64_t rows, int64_t cols, const void *A, const void *x, void *y) {
    int64_t M = t ? cols : rows, K = t ? rows : cols;
    if (K == 0) {                         /* an empty sum; ?gemv returns early without writing y */
        if (M) memset(y, 0, (size_t)M * gr__dsize(dt));
    } else if (dt == GR_F64) {
#ifdef GRADIENT_CBLAS
        cblas_dgemv(CblasRowMajor, t ? CblasTrans : CblasNoTrans, (int)rows, (int)cols, 1.0, (const double *)A, (int)(cols ? cols : 1),
                    (const double *)x, 1, 0.0, (double *)y, 1);
#else
        gr__gemv_f64(t, M, K, (const double *)A, (const double *)x, (double *)y);
#endif
    } else if (dt == GR_F32) {
#ifdef GRADIENT_CBLAS
        cblas_sgemv(CblasRowMajor, t ? CblasTrans : CblasNoTrans, (int)rows, (int)cols, 1.0f, (const float *)A, (int)(cols ? cols : 1),
                    (const float *)x, 1, 0.0f, (float *)y, 1);
#else
        gr__gemv_f32(t, M, K, (const float *)A, (const float *)x, (float *)y);
#endif
    } else
        gr__gemv_i64(t, M, K, (const uint64_t *)A, (const uint64_t *)x, (uint64_t *)y);
}

/* *out = sum_k x_k y_k over K elements of dtype dt */
static void gr__dotv_dt(int dt, int64_t K, const void *xp, const void *yp, void *out) {
    if (dt == GR_F64) {
#ifdef GRADIENT_CBLAS
        *(double *)out = cblas_ddot((int)K, (const double *)xp, 1, (const double *)yp, 1);
#else
        *(double *)out = gr__dotv_f64(K, (const double *)xp, (const double *)yp);
#endif
    } else if (dt == GR_F32)
        *(float *)out = gr__dotv_f32(K, (const float *)xp, (const float *)yp);
    else
        *(int64_t *)out = gr__dotv_i64(K, (const uint64_t *)xp, (const uint64_t *)yp);
}

/* ---- the same products in an emitted file (gr_fn_emit_c): the kernels above as its text ------------ */


/* the work bytes an emitted GEMM of N columns and K terms needs (fn##_work's): its tile is two vectors
   of 16 bytes (GR__GEMM_V16) or a plain array as wide, its packed block at most 32768 bytes
   (GR__GEMM_BUF's default) */
static size_t gr__gemm_emit_work_bytes(int dt, int64_t N, int64_t K) {
    int64_t es = (int64_t)gr__dsize(dt), nr = 32 / es, nc = 32768 / (GR__GEMM_KC * es) / nr * nr, n = (N + nr - 1) / nr * nr;
    int64_t kc = K < GR__GEMM_KC ? K : GR__GEMM_KC;
    if (dt != GR_F64 && dt != GR_F32) return 0;
    if (nc < nr) nc = nr;
    return (size_t)((kc * (n < nc ? n : nc) + kc * GR__GEMM_MR) * es);
}

/* the kernel of a product (what: 0 gemm, 1 gemv, 2 dotv) for dtype dt, its text written once; its name */
static const char *gr__em_prod_kernel(gr__em *e, int what, int dt) {
    static const char *const names[3][3] = { { "gr__gemm_f64", "gr__gemm_f32", "gr__gemm_i64" },
        { "gr__gemv_f64", "gr__gemv_f32", "gr__gemv_i64" }, { "gr__dotv_f64", "gr__dotv_f32", "gr__dotv_i64" } };
    static const char *const macros[3] = { "gr__gemm", "gr__gemv", "gr__unused" };
    int k = dt == GR_F64 ? 0 : dt == GR_F32 ? 1 : dt == GR_I64 ? 2 : -1;
    if (k < 0) {
        gr__em_fail(e, GR_ERR_TYPE, "gr_fn_emit_c: no product of %s operands", gr_dtype_name((gr_dtype)dt));
        return "?";
    }
    if (!gr__em_kernel(e, "gr__unused") || !gr__em_kernel(e, what == 0 && k == 2 ? "gr__unused" : macros[what]) || !gr__em_kernel(e, names[what][k]))
        gr__em_fail(e, GR_ERR_VALUE, "gr_fn_emit_c: no kernel %s", names[what][k]);
    return names[what][k];
}

/* gr__gemm_dt's call: C = op(A) op(B), the operands as C expressions of dtype dt */
static void gr__em_gemm(gr__em *e, int dt, int ta, int tb, int64_t M, int64_t N, int64_t K, const char *A, const char *B, const char *C) {
    const char *fn, *U = dt == GR_I64 ? "uint64_t" : gr__em_ctype(dt);
    if (M == 0 || N == 0) return;
    if (K == 0) { gr__em_line(e, "memset(%s, 0, %lu);", C, (unsigned long)((size_t)(M * N) * gr__dsize(dt))); return; }
    fn = gr__em_prod_kernel(e, 0, dt);
    if (dt == GR_I64)
        gr__em_line(e, "%s(%d, %d, %lld, %lld, %lld, (const %s *)%s, (const %s *)%s, (%s *)%s);", fn, ta, tb, (long long)M, (long long)N,
                    (long long)K, U, A, U, B, U, C);
    else
        gr__em_line(e, "%s(%d, %d, %lld, %lld, %lld, %s, %s, %s, (%s *)%s);", fn, ta, tb, (long long)M, (long long)N, (long long)K, A, B, C,
                    U, gr__em_scratch_n(e, gr__gemm_emit_work_bytes(dt, N, K)));
}

/* gr__gemv_dt's call: y = op(A) x, A stored rows x cols */
static void gr__em_gemv(gr__em *e, int dt, int t, int64_t rows, int64_t cols, const char *A, const char *x, const char *y) {
    int64_t M = t ? cols : rows, K = t ? rows : cols;
    const char *fn, *U = dt == GR_I64 ? "uint64_t" : gr__em_ctype(dt);
    if (K == 0) {
        if (M) gr__em_line(e, "memset(%s, 0, %lu);", y, (unsigned long)((size_t)M * gr__dsize(dt)));
        return;
    }
    fn = gr__em_prod_kernel(e, 1, dt);
    gr__em_line(e, "%s(%d, %lld, %lld, (const %s *)%s, (const %s *)%s, (%s *)%s);", fn, t, (long long)M, (long long)K, U, A, U, x, U, y);
}

/* gr__dotv_dt's call: *out = x . y */
static void gr__em_dotv(gr__em *e, int dt, int64_t K, const char *x, const char *y, const char *out) {
    const char *fn = gr__em_prod_kernel(e, 2, dt), *U = dt == GR_I64 ? "uint64_t" : gr__em_ctype(dt);
    gr__em_line(e, "%s[0] = %s(%lld, (const %s *)%s, (const %s *)%s);", out, fn, (long long)K, U, x, U, y);
}
#endif /* GR_NO_DOT */
