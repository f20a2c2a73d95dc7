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
    const gr__dot_params *p = (const gr__dot_params *)node->params;
    gr_var *a = node->in[0], *b = node->in[1];
    int64_t ka, kb;
    out->dtype = (gr_dtype)a->dtype;
    if (a->dtype != b->dtype || a->ndim < 1 || a->ndim > 2 || b->ndim < 1 || b->ndim > 2)
        return gr__error(node->graph, GR_ERR_TYPE, "gr_dot: operands %s and %s must be 1-d or 2-d of one dtype", gr__d(a).s, gr__d(b).s);
    if (!gr__dot_dims(a->ndim, a->shape, p->ta, b->ndim, b->shape, p->tb, &out->ndim, out->shape, &ka, &kb))
        return gr__error(node->graph, GR_ERR_SHAPE, "gr_dot: inner dimensions differ: %s %s%s and %s %s%s", gr__d(a).s,
                         gr__vs(a).s, p->ta ? " transposed" : "", gr__d(b).s, gr__vs(b).s, p->tb ? " transposed" : "");
    return GR_OK;
}

static gr_status gr__Dot_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__dot_params *p = (const gr__dot_params *)node->params;
    int64_t ka, kb;
    int nd;
    if (!gr__dot_dims(in[0]->ndim, in[0]->shape, p->ta, in[1]->ndim, in[1]->shape, p->tb, &nd, out[0]->shape, &ka, &kb))
        return gr_node_error(node, GR_ERR_SHAPE, "inner dimensions differ: %s %s%s and %s %s%s", gr__d(node->in[0]).s,
                             gr__as(in[0]).s, p->ta ? " transposed" : "", gr__d(node->in[1]).s, gr__as(in[1]).s,
                             p->tb ? " transposed" : "");
    return GR_OK;
}

/* ---- kernels ----------------------------------------------------------------------------------
   C (M x N, row-major) = op(A) (M x K) . op(B) (K x N); A is M x K (K x M when ta), B is K x N
   (N x K when tb). Blocked: a KC x NC panel of op(B) is packed contiguous, then every row of op(A)
   streams through it with a vectorisable inner loop. */
#define GR__GEMM_KC 64
#define GR__GEMM_NC 64
#define GR__GEMM(fn, T) \
    static GR__UNUSED void fn(int ta, int tb, int64_t M, int64_t N, int64_t K, const T *A, const T *B, T *C) { \
        T bp[GR__GEMM_KC * GR__GEMM_NC]; \
        int64_t i, j, k, j0, k0; \
        for (i = 0; i < M * N; i++) C[i] = 0; \
        for (j0 = 0; j0 < N; j0 += GR__GEMM_NC) { \
            int64_t nc = N - j0 < GR__GEMM_NC ? N - j0 : GR__GEMM_NC; \
            for (k0 = 0; k0 < K; k0 += GR__GEMM_KC) { \
                int64_t kc = K - k0 < GR__GEMM_KC ? K - k0 : GR__GEMM_KC; \
                for (k = 0; k < kc; k++) \
                    for (j = 0; j < nc; j++) \
                        bp[k * nc + j] = tb ? B[(j0 + j) * K + k0 + k] : B[(k0 + k) * N + j0 + j]; \
                for (i = 0; i < M; i++) { \
                    T *c = C + i * N + j0; \
                    for (k = 0; k < kc; k++) { \
                        T a = ta ? A[(k0 + k) * M + i] : A[i * K + k0 + k]; \
                        const T *b = bp + k * nc; \
                        for (j = 0; j < nc; j++) c[j] += a * b[j]; \
                    } \
                } \
            } \
        } \
    }
GR__GEMM(gr__gemm_f64, double)
GR__GEMM(gr__gemm_f32, float)
/* int64 operands go through the uint64_t kernels: products and sums wrap modulo 2^64 like NumPy's,
   where int64_t arithmetic would overflow (undefined behaviour) */
GR__GEMM(gr__gemm_i64, uint64_t)

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
    const gr__dot_params *p = (const gr__dot_params *)node->params;
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
    const gr__dot_params *p = (const gr__dot_params *)node->params;
    gr_var *a = node->in[0], *b = node->in[1], *G = og[0];
    if (!gr__is_float(node->out[0]->dtype)) {
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
    const gr__dot_params *p = (const gr__dot_params *)node->params;
    gr_var *t = NULL;
    orop[0] = NULL;
    if (!gr__is_float(node->out[0]->dtype)) return GR_OK;
    if (!gr_is_disconnected(ev[0])) t = gr__dot_flags(ev[0], node->in[1], p->ta, p->tb);
    if (!gr_is_disconnected(ev[1])) {
        gr_var *u = gr__dot_flags(node->in[0], ev[1], p->ta, p->tb);
        t = t ? gr_add(t, u) : u;
        if (!t) return node->graph->status;
    }
    if (gr_is_disconnected(ev[0]) && gr_is_disconnected(ev[1])) return GR_OK;
    orop[0] = t;
    return t ? GR_OK : node->graph->status;
}
