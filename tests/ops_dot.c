/* tests/ops_dot.c: the contractions of ops/dot.c and the products of ops/gemm.c they run on: Dot
   (NumPy's dot of 0-d, 1-d and 2-d operands, with transpose flags that only gradients build),
   TensorDot and MatMul (batched over broadcasting leading axes, 1-d operands promoted).
     - values against plain-C and long-double references in F64, F32 and I64 (wrapping), mixed
       dtypes, transposed and empty operands, static and call-time shapes; the blocked GEMM around
       its tile, strip, block and depth sizes;
     - derivative specs (every rank combination, transposes, the flags gradients use); Jacobians
       through the batching rules against central differences;
     - the errors of the constructors, at build time and at call time. */
#include "ops.h"

/* ==== Dot ================================================================================================ */


/* a . b by a naive loop (1-d operands as a row / a column) */
static gr_array *gts_dot_ref(const gr_array *a, const gr_array *b, gr_dtype odt) {
    int64_t M = a->ndim == 2 ? a->shape[0] : 1, K = a->shape[a->ndim - 1], N = b->ndim == 2 ? b->shape[1] : 1;
    int64_t oshape[2] = { 0, 0 }, i, j, k;
    int ond = 0;
    gr_array *want;
    if (a->ndim == 2) oshape[ond++] = M;
    if (b->ndim == 2) oshape[ond++] = N;
    want = gts_want(odt, ond, oshape);
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            if (want->dtype == GR_I64) {
                int64_t s = 0;
                for (k = 0; k < K; k++) s += gts_int_at(a, i * K + k) * gts_int_at(b, k * N + j);
                ((int64_t *)want->data)[i * N + j] = s;
            } else {
                double s = 0;
                for (k = 0; k < K; k++) s += gr_array_get(a, i * K + k) * gr_array_get(b, k * N + j);
                ((double *)want->data)[i * N + j] = s;
            }
        }
    return want;
}

/* error of a float dot: k rounding errors of at most |a||b| each */
static double gts_dot_tol(gr_dtype dt) { return dt == GR_F32 ? 1e-4 : dt == GR_F64 ? 1e-12 : 0; }

typedef struct gts_dc { int and_; int64_t as[2]; int bnd; int64_t bs[2]; } gts_dc;

static void gts_dot_case(const gts_dc *c, gr_dtype dt, int dyn, gtf_rng *rng, int ci) {
    gr_graph *g = gr_graph_new();
    gr_var *ins[2];
    gr_array *arr[2], *want;
    char label[160];
    ins[0] = gtf_input(g, dt, c->and_, c->as, dyn, "a");
    ins[1] = gtf_input(g, dt, c->bnd, c->bs, dyn, "b");
    arr[0] = gts_random(rng, dt, c->and_, c->as, -1, 1, -5, 5);
    arr[1] = gts_random(rng, dt, c->bnd, c->bs, -1, 1, -5, 5);
    want = gts_dot_ref(arr[0], arr[1], dt);
    snprintf(label, sizeof label, "gr_dot case %d (%lld%s%lld).(%lld%s%lld) %s %s", ci, (long long)c->as[0], c->and_ == 2 ? "," : "",
             c->and_ == 2 ? (long long)c->as[1] : 0LL, (long long)c->bs[0], c->bnd == 2 ? "," : "", c->bnd == 2 ? (long long)c->bs[1] : 0LL,
             gr_dtype_name(dt), dyn ? "unknown shapes" : "static shapes");
    gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_dot(ins[0], ins[1]), dt, want, gts_dot_tol(dt), label);
    gr_array_free(want);
    gr_array_free(arr[0]);
    gr_array_free(arr[1]);
    gr_graph_free(g);
}

TEST(gts_op_Dot) {
    static const gts_dc cases[] = {
        { 2, { 37, 53 }, 2, { 53, 29 } }, { 2, { 5, 130 }, 2, { 130, 70 } }, { 2, { 64, 64 }, 2, { 64, 64 } },
        { 2, { 65, 129 }, 2, { 129, 1 } }, { 2, { 1, 1 }, 2, { 1, 1 } }, { 2, { 3, 0 }, 2, { 0, 4 } }, { 2, { 0, 5 }, 2, { 5, 3 } },
        { 1, { 53 }, 1, { 53 } }, { 1, { 130 }, 1, { 130 } }, { 1, { 0 }, 1, { 0 } },
        { 2, { 37, 53 }, 1, { 53 } }, { 2, { 70, 130 }, 1, { 130 } }, { 2, { 3, 0 }, 1, { 0 } },
        { 1, { 53 }, 2, { 53, 29 } }, { 1, { 130 }, 2, { 130, 70 } }, { 1, { 0 }, 2, { 0, 4 } },
    };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 13;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (d = 0; d < 3; d++)
            for (dyn = 0; dyn < 2; dyn++) gts_dot_case(&cases[c], gts_dtypes[d], dyn, &rng, c);
    {   /* a transposed operand, mixed dtypes, a 0-d operand; inner dimensions that differ */
        int64_t sa[2] = { 53, 37 }, sat[2] = { 37, 53 }, sb[2] = { 53, 29 }, s3 = 3, s4 = 4;
        gr_graph *g = gr_graph_new();
        gr_var *ins[2], *y;
        gr_array *arr[2], *at, *want;
        int64_t i, j;
        ins[0] = gr_matrix(g, GR_F64, "a");
        ins[1] = gr_matrix(g, GR_F32, "b");
        arr[0] = gtf_random(&rng, GR_F64, 2, sa, -1, 1);
        arr[1] = gtf_random(&rng, GR_F32, 2, sb, -1, 1);
        at = gr_array_new(GR_F64, 2, sat);
        for (i = 0; i < 53; i++)
            for (j = 0; j < 37; j++) ((double *)at->data)[j * 53 + i] = ((double *)arr[0]->data)[i * 37 + j];
        want = gts_dot_ref(at, arr[1], GR_F64);
        y = gr_dot(gr_transpose(ins[0]), ins[1]);                   /* F64 . F32 -> F64 */
        gtf_expect(g, 2, ins, (const gr_array *const *)arr, y, GR_F64, want, 1e-12, "gr_dot(gr_transpose(a f64), b f32)");
        gr_array_free(want);
        gr_array_free(at);
        gr_array_free(arr[0]);
        gr_array_free(arr[1]);
        ins[0] = gr_vector(g, GR_I64, "u");
        ins[1] = gr_matrix(g, GR_F32, "v");
        sb[0] = 3; sb[1] = 4;
        arr[0] = gtf_random(&rng, GR_I64, 1, &s3, -5, 5);
        arr[1] = gtf_random(&rng, GR_F32, 2, sb, -1, 1);
        want = gts_dot_ref(arr[0], arr[1], GR_F32);
        gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_dot(ins[0], ins[1]), GR_F32, want, 1e-5, "gr_dot(i64 (3,), f32 (3,4))");
        gr_array_free(want);
        gr_array_free(arr[0]);
        gr_array_free(arr[1]);
        ins[0] = gr_scalar(g, GR_F64, "s");
        arr[0] = gr_array_scalar(GR_F64, -2.5);
        arr[1] = gtf_random(&rng, GR_F32, 2, sb, -1, 1);
        want = gr_array_new(GR_F64, 2, sb);
        for (i = 0; i < 12; i++) ((double *)want->data)[i] = -2.5 * gr_array_get(arr[1], i);
        gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_dot(ins[0], ins[1]), GR_F64, want, 0, "gr_dot(0-d f64, f32 (3,4))");
        gr_array_free(want);
        gr_array_free(arr[0]);
        gr_array_free(arr[1]);
        CHECK(gr_dot(gr_tensor(g, GR_F64, 1, &s3, "p"), gr_tensor(g, GR_F64, 1, &s4, "q")) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
        gr_graph_clear_error(g);
        ins[0] = gr_vector(g, GR_F64, "p");
        ins[1] = gr_vector(g, GR_F64, "q");
        arr[0] = gr_array_new(GR_F64, 1, &s3);
        arr[1] = gr_array_new(GR_F64, 1, &s4);
        gtf_expect_call_error(g, 2, ins, (const gr_array *const *)arr, gr_dot(ins[0], ins[1]), GR_ERR_SHAPE, "gr_dot (3,).(4,) at call time");
        gr_array_free(arr[0]);
        gr_array_free(arr[1]);
        gr_graph_free(g);
    }
}

/* two operands' shapes */
typedef struct gts_pair { int xnd; int64_t xs[3]; int rnd; int64_t rs[3]; } gts_pair;

/* gr_outer: every element of a (flattened) times every element of b (flattened) */
TEST(test_outer) {
    static const gts_pair cases[] = { { 1, { 3 }, 1, { 4 } }, { 2, { 2, 2 }, 1, { 3 } }, { 0, { 0 }, 1, { 4 } }, { 1, { 0 }, 1, { 2 } } };
    static const gr_dtype da[3] = { GR_F64, GR_F32, GR_I64 }, db[3] = { GR_F64, GR_I64, GR_I64 }, dout[3] = { GR_F64, GR_F32, GR_I64 };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 14;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (d = 0; d < 3; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gts_pair *p = &cases[c];
                gr_graph *g = gr_graph_new();
                gr_var *ins[2];
                gr_array *arr[2], *want;
                int64_t os[2], i, j;
                char label[128];
                ins[0] = gtf_input(g, da[d], p->xnd, p->xs, dyn, "a");
                ins[1] = gtf_input(g, db[d], p->rnd, p->rs, dyn, "b");
                arr[0] = gts_random(&rng, da[d], p->xnd, p->xs, -3, 3, -9, 9);
                arr[1] = gts_random(&rng, db[d], p->rnd, p->rs, -3, 3, -9, 9);
                os[0] = arr[0]->size; os[1] = arr[1]->size;
                want = gts_want(dout[d], 2, os);
                for (i = 0; i < os[0]; i++)
                    for (j = 0; j < os[1]; j++) {
                        if (want->dtype == GR_I64) ((int64_t *)want->data)[i * os[1] + j] = gts_int_at(arr[0], i) * gts_int_at(arr[1], j);
                        else ((double *)want->data)[i * os[1] + j] = gr_array_get(arr[0], i) * gr_array_get(arr[1], j);
                    }
                snprintf(label, sizeof label, "gr_outer case %d, %s x %s, %s", c, gr_dtype_name(da[d]), gr_dtype_name(db[d]),
                         dyn ? "unknown shapes" : "static shapes");
                gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_outer(ins[0], ins[1]), dout[d], want, 0, label);
                gr_array_free(want);
                gr_array_free(arr[0]);
                gr_array_free(arr[1]);
                gr_graph_free(g);
            }
}


/* the blocked GEMM behind Dot against a long-double triple loop: every combination of transposes,
   row counts around the 4-row tile, column counts around the strip width and the packed block
   (32 or 64 columns), inner lengths around the 128-deep block, and an empty inner dimension;
   float64, float32, and wrapping int64 (exact) */
TEST(test_dot_gemm_blocking) {
    static const int64_t mnk[][3] = { { 1, 1, 1 }, { 3, 7, 5 }, { 4, 16, 128 }, { 5, 9, 129 }, { 33, 70, 300 },
                                      { 9, 150, 257 }, { 6, 33, 2 }, { 2, 5, 0 }, { 17, 65, 64 } };
    static const gr_dtype dts[3] = { GR_F64, GR_F32, GR_I64 };
    gtf_rng rng = { 77 };
    size_t c;
    int d, ta, tb;
    for (d = 0; d < 3; d++)
        for (c = 0; c < sizeof mnk / sizeof mnk[0]; c++)
            for (ta = 0; ta < 2; ta++)
                for (tb = 0; tb < 2; tb++) {
                    int64_t M = mnk[c][0], N = mnk[c][1], K = mnk[c][2], sa[2], sb[2], i, j, k;
                    gr_graph *g = gr_graph_new();
                    gr_var *x[2], *out;
                    gr_array *A, *B, *want, *got;
                    const gr_array *args[2];
                    char label[96];
                    snprintf(label, sizeof label, "%s (%lldx%lld).(%lldx%lld) ta=%d tb=%d", gr_dtype_name(dts[d]), (long long)M,
                             (long long)K, (long long)K, (long long)N, ta, tb);
                    sa[0] = ta ? K : M; sa[1] = ta ? M : K;
                    sb[0] = tb ? N : K; sb[1] = tb ? K : N;
                    A = gtf_random(&rng, dts[d], 2, sa, -9, 9);
                    B = gtf_random(&rng, dts[d], 2, sb, -9, 9);
                    x[0] = gr_matrix(g, dts[d], "A");
                    x[1] = gr_matrix(g, dts[d], "B");
                    out = gr_dot(ta ? gr_transpose(x[0]) : x[0], tb ? gr_transpose(x[1]) : x[1]);
                    args[0] = A; args[1] = B;
                    got = gtl_eval(2, x, args, out, label);
                    sa[0] = M; sa[1] = N;
                    want = gr_array_new(GR_F64, 2, sa);
                    for (i = 0; i < M; i++)
                        for (j = 0; j < N; j++) {
                            long double s = 0;
                            for (k = 0; k < K; k++)
                                s += (long double)gr_array_get(A, ta ? k * M + i : i * K + k) * gr_array_get(B, tb ? j * K + k : k * N + j);
                            gr_array_set(want, i * N + j, (double)s);
                        }
                    if (got && got->dtype != dts[d]) gt_fail(__FILE__, __LINE__, "%s: result dtype %s", label, gr_dtype_name(got->dtype));
                    gtl_close(got, want, dts[d] == GR_F32 ? 1e-5 : dts[d] == GR_F64 ? 1e-13 : 0, label);
                    gr_array_free(A); gr_array_free(B); gr_array_free(want); gr_array_free(got);
                    gr_graph_free(g);
                }
}


static gr_var *gts_dot(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_dot(x[0], x[1]); }
static gr_var *gts_dot_r(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_dot(x[1], x[0]); }
static gr_var *gts_dot_ta(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_dot(gr_transpose(x[0]), x[1]); }
static gr_var *gts_dot_tb(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_dot(x[0], gr_transpose(x[1])); }
static gr_var *gts_dot_tab(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_dot(gr_transpose(x[0]), gr_transpose(x[1])); }
/* gradients of sum(sin(dot(a, b))): their Dot nodes carry transpose flags (G b^T, a^T G, A^T g
   for a matrix-vector product), and the builder's output puts them under every check */
static gr_var *gts_dot_grad_a(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_grad1(gr_sum(gr_sin(gr_dot(x[0], x[1]))), x[0]); }
static gr_var *gts_dot_grad_b(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_grad1(gr_sum(gr_sin(gr_dot(x[0], x[1]))), x[1]); }
/* ... and of a product with a transposed operand: the flagged product then reads a DimShuffle */
static gr_var *gts_dot_ta_grad_b(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_grad1(gr_sum(gr_sin(gr_dot(gr_transpose(x[0]), x[1]))), x[1]); }
static gr_var *gtdot_b_dot(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_dot(x[0], x[1]); }

TEST(test_dot_ndim) {
    gr_graph *g = gr_graph_new();
    gr_var *t3 = gr_tensor(g, GR_F64, 3, NULL, "t3"), *m = gr_matrix(g, GR_F64, "m"), *v = gr_vector(g, GR_F64, "v");
    CHECK(gr_dot(t3, m) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_dot");
    CHECK_CONTAINS(gr_graph_message(g), "'t3'");
    gr_graph_clear_error(g);
    CHECK(gr_dot(v, t3) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    gr_graph_clear_error(g);
    CHECK(gr_dot(m, v) != NULL);
    CHECK(gr_dot(v, v) != NULL);
    CHECK_OK_GRAPH(g);
    gr_graph_free(g);
}

static const gtd_spec specs_Dot[] = {
    { "Dot", "(3,4).(4,2)", gts_dot, NULL, 2, { M34(-1, 1), GTD_IN(2, 4, 2, -1, 1) }, GG },
    { "Dot", "(4,).(4,2)", gts_dot, NULL, 2, { V4(-1, 1), GTD_IN(2, 4, 2, -1, 1) }, GG },
    { "Dot", "(3,4).(4,)", gts_dot, NULL, 2, { M34(-1, 1), V4(-1, 1) }, GG },
    { "Dot", "(4,).(4,)", gts_dot, NULL, 2, { V4(-1, 1), V4(-1, 1) }, GG },
    { "Dot", "swapped: (3,4).(4,2), input 0 is b", gts_dot_r, NULL, 2, { GTD_IN(2, 4, 2, -1, 1), M34(-1, 1) }, GG },
    { "Dot", "swapped: (3,4).(4,), input 0 is b", gts_dot_r, NULL, 2, { V4(-1, 1), M34(-1, 1) }, GG },
    { "Dot", "swapped: (4,).(4,2), input 0 is b", gts_dot_r, NULL, 2, { GTD_IN(2, 4, 2, -1, 1), V4(-1, 1) }, GG },
    { "Dot", "transpose(4,3).(4,2)", gts_dot_ta, NULL, 2, { GTD_IN(2, 4, 3, -1, 1), GTD_IN(2, 4, 2, -1, 1) }, GG },
    { "Dot", "(3,4).transpose(2,4)", gts_dot_tb, NULL, 2, { M34(-1, 1), GTD_IN(2, 2, 4, -1, 1) }, GG },
    { "Dot", "transpose(4,3).transpose(2,4)", gts_dot_tab, NULL, 2, { GTD_IN(2, 4, 3, -1, 1), GTD_IN(2, 2, 4, -1, 1) }, GG },
    { "Dot", "transpose(4,3).(4,)", gts_dot_ta, NULL, 2, { GTD_IN(2, 4, 3, -1, 1), V4(-1, 1) }, GG },
    { "Dot", "flags: the gradient of a (3,4).(4,2) wrt a: G b^T", gts_dot_grad_a, NULL, 2, { M34(-1, 1), GTD_IN(2, 4, 2, -1, 1) }, GG },
    { "Dot", "flags: the gradient of a (3,4).(4,2) wrt b: a^T G", gts_dot_grad_b, NULL, 2, { M34(-1, 1), GTD_IN(2, 4, 2, -1, 1) }, GG },
    { "Dot", "flags: the gradient of a (3,4).(4,) wrt b: A^T g", gts_dot_grad_b, NULL, 2, { M34(-1, 1), V4(-1, 1) }, GG },
    { "Dot", "flags: the gradient of a (4,).(4,2) wrt a: B g", gts_dot_grad_a, NULL, 2, { V4(-1, 1), GTD_IN(2, 4, 2, -1, 1) }, GG },
    { "Dot", "flags: the gradient of transpose(4,3).(4,2) wrt b", gts_dot_ta_grad_b, NULL, 2, { GTD_IN(2, 4, 3, -1, 1), GTD_IN(2, 4, 2, -1, 1) }, GG },
    { "Dot", "(3,4).(4,2)", gtdot_b_dot, NULL, 2, { GTD_IN(2, 3, 4, -1, 1), GTD_IN(2, 4, 2, -1, 1) }, 0 },
    { "Dot", "(4,).(4,2)", gtdot_b_dot, NULL, 2, { GTD_IN(1, 4, 0, -1, 1), GTD_IN(2, 4, 2, -1, 1) }, 0 },
    GTD_END
};

GT_CASES(Dot) = {
    GT_VALUES(gts_op_Dot),
    GT_VALUES(test_outer),
    GT_VALUES(test_dot_gemm_blocking),
    GT_SPECS(specs_Dot),
    GT_ERRORS(test_dot_ndim),
    GT_END
};

/* ==== TensorDot, MatMul ==================================================================================== */

/* NumPy's matmul of a (*ba, m, k) and b (*bb, k, n), both at least 2-d */
static gr_array *gtl_ref_matmul(const gr_array *a, const gr_array *b) {
    int nba = a->ndim - 2, nbb = b->ndim - 2, nbo = nba > nbb ? nba : nbb, d;
    int64_t shape[GR_MAX_NDIM], m = a->shape[nba], K = a->shape[nba + 1], n = b->shape[nbb + 1], batch = 1, t, i, j, k;
    gr_array *out;
    for (d = 0; d < nbo; d++) {
        int64_t x = d - (nbo - nba) >= 0 ? a->shape[d - (nbo - nba)] : 1, y = d - (nbo - nbb) >= 0 ? b->shape[d - (nbo - nbb)] : 1;
        shape[d] = x == 1 ? y : x;
        batch *= shape[d];
    }
    shape[nbo] = m; shape[nbo + 1] = n;
    out = gr_array_new(GR_F64, nbo + 2, shape);
    for (t = 0; t < batch; t++) {
        int64_t rem = t, ao = 0, bo = 0, as = 1, bs = 1;
        for (d = nbo - 1; d >= 0; d--) {
            int64_t idx = rem % shape[d], ai = d - (nbo - nba), bi = d - (nbo - nbb);
            rem /= shape[d];
            if (ai >= 0) { if (a->shape[ai] != 1) ao += idx * as; as *= a->shape[ai]; }
            if (bi >= 0) { if (b->shape[bi] != 1) bo += idx * bs; bs *= b->shape[bi]; }
        }
        for (i = 0; i < m; i++)
            for (j = 0; j < n; j++) {
                long double s = 0;
                for (k = 0; k < K; k++) s += (long double)gr_array_get(a, ao * m * K + i * K + k) * gr_array_get(b, bo * K * n + k * n + j);
                ((double *)out->data)[(t * m + i) * n + j] = (double)s;
            }
    }
    return out;
}


/* gr_matmul against NumPy's rules: batch broadcasting, 1-d promotion, dtypes */
typedef struct gtl_mm { int and_; int64_t as[4]; int bnd; int64_t bs[4]; } gtl_mm;

static gr_array *gtl_promote2(const gr_array *x, int is_b) {
    gr_array *y = gr_array_copy(x);
    if (x->ndim == 1) {
        y->ndim = 2;
        if (is_b) { y->shape[0] = x->shape[0]; y->shape[1] = 1; } else { y->shape[0] = 1; y->shape[1] = x->shape[0]; }
    }
    return y;
}

TEST(gtl_forward_MatMul) {
    static const gtl_mm cases[] = {
        { 2, { 50, 50 }, 2, { 50, 50 } }, { 3, { 2, 3, 4 }, 2, { 4, 5 } }, { 2, { 3, 4 }, 3, { 2, 4, 5 } },
        { 4, { 2, 1, 3, 4 }, 3, { 5, 4, 2 } }, { 3, { 1, 3, 4 }, 3, { 6, 4, 2 } }, { 1, { 4 }, 3, { 2, 4, 3 } },
        { 3, { 2, 3, 4 }, 1, { 4 } }, { 1, { 4 }, 1, { 4 } }, { 1, { 4 }, 2, { 4, 3 } }, { 3, { 2, 0, 4 }, 2, { 4, 3 } },
        { 3, { 2, 3, 0 }, 3, { 2, 0, 3 } }, { 3, { 3, 70, 65 }, 2, { 65, 66 } },
    };
    static const gr_dtype dts[3] = { GR_F64, GR_F32, GR_I64 };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 100;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (d = 0; d < 3; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                gr_graph *g = gr_graph_new();
                gr_var *ins[2], *y;
                gr_array *arr[2], *pa, *pb, *want;
                char label[128];
                ins[0] = gtf_input(g, dts[d], cases[c].and_, cases[c].as, dyn, "a");
                ins[1] = gtf_input(g, dts[d], cases[c].bnd, cases[c].bs, dyn, "b");
                arr[0] = gtf_random(&rng, dts[d], cases[c].and_, cases[c].as, -1, 1);
                arr[1] = gtf_random(&rng, dts[d], cases[c].bnd, cases[c].bs, -1, 1);
                if (dts[d] == GR_I64) { gr_array_free(arr[0]); gr_array_free(arr[1]);
                    arr[0] = gtf_random(&rng, GR_I64, cases[c].and_, cases[c].as, -5, 5);
                    arr[1] = gtf_random(&rng, GR_I64, cases[c].bnd, cases[c].bs, -5, 5); }
                pa = gtl_promote2(arr[0], 0);
                pb = gtl_promote2(arr[1], 1);
                want = gtl_ref_matmul(pa, pb);
                if (cases[c].and_ == 1 || cases[c].bnd == 1) {     /* drop the promoted axes */
                    int k, m = 0;
                    int64_t shape[GR_MAX_NDIM];
                    for (k = 0; k < want->ndim; k++)
                        if (!(cases[c].and_ == 1 && k == want->ndim - 2) && !(cases[c].bnd == 1 && k == want->ndim - 1)) shape[m++] = want->shape[k];
                    want->ndim = m;
                    for (k = 0; k < m; k++) want->shape[k] = shape[k];
                }
                if (dts[d] == GR_I64) {
                    gr_array *wi = gr_array_new(GR_I64, want->ndim, want->shape);
                    int64_t k;
                    for (k = 0; k < want->size; k++) ((int64_t *)wi->data)[k] = (int64_t)llround(gr_array_get(want, k));
                    gr_array_free(want);
                    want = wi;
                }
                y = gr_matmul(ins[0], ins[1]);
                snprintf(label, sizeof label, "gr_matmul case %d %s %s", c, gr_dtype_name(dts[d]), dyn ? "dynamic" : "static");
                gtf_expect(g, 2, ins, (const gr_array *const *)arr, y, dts[d], want, dts[d] == GR_F32 ? 1e-5 : dts[d] == GR_F64 ? 1e-13 : 0, label);
                if (!dyn) gtf_static_shape_is(y, want->ndim, want->shape, label);
                gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(pa); gr_array_free(pb); gr_array_free(want);
                gr_graph_free(g);
            }
}

/* gr_tensordot against a plain loop over every index */
typedef struct gtl_td { int and_; int64_t as[4]; int bnd; int64_t bs[4]; int n; int ax[3], bx[3]; } gtl_td;

static gr_array *gtl_ref_tensordot(const gr_array *a, const gr_array *b, int n, const int *ax, const int *bx) {
    int fa[GR_MAX_NDIM], fb[GR_MAX_NDIM], nfa = 0, nfb = 0, i, k;
    int64_t shape[GR_MAX_NDIM], sz = 1, ssum = 1, t, s;
    gr_array *out;
    for (i = 0; i < a->ndim; i++) { int used = 0; for (k = 0; k < n; k++) used |= (ax[k] + a->ndim) % a->ndim == i; if (!used) fa[nfa++] = i; }
    for (i = 0; i < b->ndim; i++) { int used = 0; for (k = 0; k < n; k++) used |= (bx[k] + b->ndim) % b->ndim == i; if (!used) fb[nfb++] = i; }
    for (i = 0; i < nfa; i++) shape[i] = a->shape[fa[i]];
    for (i = 0; i < nfb; i++) shape[nfa + i] = b->shape[fb[i]];
    for (i = 0; i < nfa + nfb; i++) sz *= shape[i];
    for (k = 0; k < n; k++) ssum *= a->shape[(ax[k] + a->ndim) % a->ndim];
    out = gr_array_new(GR_F64, nfa + nfb, shape);
    for (t = 0; t < sz; t++)
        for (s = 0; s < ssum; s++) {
            int64_t ia[GR_MAX_NDIM], ib[GR_MAX_NDIM], rem = t, fa_off = 0, fb_off = 0;
            for (i = nfa + nfb - 1; i >= 0; i--) {
                int64_t v = rem % shape[i];
                rem /= shape[i];
                if (i >= nfa) ib[fb[i - nfa]] = v; else ia[fa[i]] = v;
            }
            rem = s;
            for (k = n - 1; k >= 0; k--) {
                int64_t dim = a->shape[(ax[k] + a->ndim) % a->ndim], v = rem % dim;
                rem /= dim;
                ia[(ax[k] + a->ndim) % a->ndim] = v;
                ib[(bx[k] + b->ndim) % b->ndim] = v;
            }
            for (i = 0; i < a->ndim; i++) fa_off = fa_off * a->shape[i] + ia[i];
            for (i = 0; i < b->ndim; i++) fb_off = fb_off * b->shape[i] + ib[i];
            ((double *)out->data)[t] += gr_array_get(a, fa_off) * gr_array_get(b, fb_off);
        }
    return out;
}

TEST(gtl_forward_TensorDot) {
    static const gtl_td cases[] = {
        { 2, { 3, 4 }, 2, { 4, 5 }, 1, { 1 }, { 0 } },                 /* a dot: no copy */
        { 2, { 4, 3 }, 2, { 4, 5 }, 1, { 0 }, { 0 } },                 /* a^T b: a flag */
        { 2, { 3, 4 }, 2, { 5, 4 }, 1, { -1 }, { -1 } },               /* a b^T: a flag */
        { 3, { 2, 3, 4 }, 3, { 4, 3, 5 }, 2, { 2, 1 }, { 0, 1 } },     /* summed axes reordered */
        { 3, { 2, 3, 4 }, 3, { 3, 5, 2 }, 2, { 0, 1 }, { 2, 0 } },
        { 3, { 2, 3, 4 }, 2, { 5, 6 }, 0, { 0 }, { 0 } },               /* the outer product */
        { 3, { 2, 3, 4 }, 3, { 4, 3, 2 }, 3, { 0, 1, 2 }, { 2, 1, 0 } },/* to a scalar */
        { 4, { 2, 3, 4, 5 }, 3, { 3, 6, 5 }, 2, { 1, 3 }, { 0, 2 } },   /* free axes on both sides of the summed */
        { 2, { 3, 0 }, 2, { 0, 4 }, 1, { 1 }, { 0 } },                 /* an empty sum */
        { 0, { 0 }, 2, { 2, 3 }, 0, { 0 }, { 0 } },                     /* a 0-d operand */
    };
    static const gr_dtype dts[3] = { GR_F64, GR_F32, GR_I64 };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 110;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (d = 0; d < 3; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                gr_graph *g = gr_graph_new();
                gr_var *ins[2], *y;
                gr_array *arr[2], *want;
                char label[128];
                ins[0] = gtf_input(g, dts[d], cases[c].and_, cases[c].as, dyn, "a");
                ins[1] = gtf_input(g, dts[d], cases[c].bnd, cases[c].bs, dyn, "b");
                arr[0] = gtf_random(&rng, dts[d], cases[c].and_, cases[c].as, -5, 5);
                arr[1] = gtf_random(&rng, dts[d], cases[c].bnd, cases[c].bs, -5, 5);
                want = gtl_ref_tensordot(arr[0], arr[1], cases[c].n, cases[c].ax, cases[c].bx);
                if (dts[d] == GR_I64) {
                    gr_array *wi = gr_array_new(GR_I64, want->ndim, want->shape);
                    int64_t k;
                    for (k = 0; k < want->size; k++) ((int64_t *)wi->data)[k] = (int64_t)llround(gr_array_get(want, k));
                    gr_array_free(want);
                    want = wi;
                }
                y = gr_tensordot(ins[0], ins[1], cases[c].n, cases[c].ax, cases[c].bx);
                snprintf(label, sizeof label, "gr_tensordot case %d %s %s", c, gr_dtype_name(dts[d]), dyn ? "dynamic" : "static");
                gtf_expect(g, 2, ins, (const gr_array *const *)arr, y, dts[d], want, dts[d] == GR_F32 ? 1e-5 : dts[d] == GR_F64 ? 1e-13 : 0, label);
                if (!dyn) gtf_static_shape_is(y, want->ndim, want->shape, label);
                gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(want);
                gr_graph_free(g);
            }
}


/* ==== derivative specs ============================================================================== */


typedef struct gtl_axes { int n; int ax[3], bx[3]; } gtl_axes;
static gtl_axes gtl_td_plain = { 1, { 1 }, { 0 } }, gtl_td_first = { 1, { 0 }, { 1 } }, gtl_td_perm = { 2, { 2, 0 }, { 1, 0 } },
                gtl_td_outer = { 0, { 0 }, { 0 } };

static gr_var *gtl_b_tensordot(gr_graph *g, gr_var *const *x, void *u) {
    const gtl_axes *a = (const gtl_axes *)u;
    (void)g;
    return gr_tensordot(x[0], x[1], a->n, a->ax, a->bx);
}
static gr_var *gtl_b_matmul(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_matmul(x[0], x[1]); }

static gr_var *gtl_j_matmul(gr_var *x, void *u) {
    gr_var *c = gtl_const_matrix(gr_var_graph(x), 0);
    (void)u;
    return gr_matmul(gr_tanh(x), gr_reshape(gr_tensordot(c, c, 0, NULL, NULL), 3, (int64_t[3]){ 9, 3, 3 }));
}
static gr_var *gtl_j_matmul_left(gr_var *x, void *u) {
    (void)u;
    return gr_matmul(gr_reshape(gr_tensordot(gtl_const_matrix(gr_var_graph(x), 0), gtl_const_matrix(gr_var_graph(x), 1), 0, NULL, NULL), 3,
                                (int64_t[3]){ 9, 3, 3 }), gr_sin(x));
}
static gr_var *gtl_j_tensordot(gr_var *x, void *u) {
    int ax[2] = { 1, 2 }, bx[2] = { 2, 1 };
    (void)u;
    return gr_tensordot(gr_sin(x), gr_cos(x), 2, ax, bx);
}

TEST(test_dot_jacobians) {
    gtf_rng rng;
    gr_array *m33, *x3;
    int64_t s33[2] = { 3, 3 }, s233[3] = { 2, 3, 3 };
    rng.s = 121;
    m33 = gtf_random(&rng, GR_F64, 2, s33, -1, 1);
    x3 = gtf_random(&rng, GR_F64, 3, s233, -1, 1);
    gtl_jacobian_fd(gtl_j_matmul, NULL, 2, s33, m33, "jacobian of matmul(tanh(X), C) (MatMul batched by shifting)");
    gtl_jacobian_fd(gtl_j_matmul_left, NULL, 2, s33, m33, "jacobian of matmul(C, sin(X))");
    gtl_jacobian_fd(gtl_j_tensordot, NULL, 3, s233, x3, "jacobian of a tensordot");
    gr_array_free(m33); gr_array_free(x3);
}

/* builders that must fail, with the code and a word of the message */
#define GTL_FAILS(expr, code, needle) do { \
        gr_graph_clear_error(g); \
        CHECK_MSG((expr) == NULL, "%s built", #expr); \
        CHECK_STATUS(gr_graph_status(g), code); \
        CHECK_CONTAINS(gr_graph_message(g), needle); } while (0)

static gr_var *gtl_matmul_self(gr_var *A) { return gr_matmul(A, A); }

TEST(test_matmul_errors) {
    static const double m34v[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
    gr_graph *g = gr_graph_new();
    int64_t s34[2] = { 3, 4 }, s33[2] = { 3, 3 }, s4 = 4, s234[3] = { 2, 3, 4 }, s534[3] = { 5, 3, 4 };
    gr_var *r = gr_tensor(g, GR_F64, 2, s34, "r"), *sq = gr_tensor(g, GR_F64, 2, s33, "sq"), *b4 = gr_tensor(g, GR_F64, 1, &s4, "b4");
    gr_var *s = gr_scalar(g, GR_F64, "s"), *x234 = gr_tensor(g, GR_F64, 3, s234, "x234"), *x534 = gr_tensor(g, GR_F64, 3, s534, "x534");
    GTL_FAILS(gr_matmul(s, sq), GR_ERR_TYPE, "0-d");
    GTL_FAILS(gr_matmul(sq, s), GR_ERR_TYPE, "'s'");
    GTL_FAILS(gr_matmul(r, r), GR_ERR_SHAPE, "inner dimensions");
    GTL_FAILS(gr_matmul(b4, sq), GR_ERR_SHAPE, "inner dimensions");
    GTL_FAILS(gr_matmul(x234, gr_transpose(x534)), GR_ERR_SHAPE, "inner dimensions");
    GTL_FAILS(gr_matmul(x234, gr_dimshuffle(x534, 3, (int[3]){ 0, 2, 1 })), GR_ERR_SHAPE, "do not broadcast");
    gr_graph_clear_error(g);
    CHECK(gr_matmul(NULL, sq) == NULL);                  /* NULL operands: NULL, nothing recorded */
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    gtf_static_shape_is(gr_matmul(x534, gr_transpose(r)), 3, (int64_t[3]){ 5, 3, 3 }, "matmul static");
    gr_graph_free(g);
    gtl_call_fails(gtl_matmul_self, m34v, 3, 4, GR_ERR_SHAPE, "inner dimensions", "matmul (3,4)@(3,4)");
}

TEST(test_tensordot_errors) {
    gr_graph *g = gr_graph_new();
    int64_t s34[2] = { 3, 4 }, s33[2] = { 3, 3 }, s234[3] = { 2, 3, 4 };
    gr_var *r = gr_tensor(g, GR_F64, 2, s34, "r"), *sq = gr_tensor(g, GR_F64, 2, s33, "sq"), *x234 = gr_tensor(g, GR_F64, 3, s234, "x234");
    int ax[2] = { 0, 0 }, bx[2] = { 0, 1 }, big = 5;
    GTL_FAILS(gr_tensordot(sq, sq, -1, ax, bx), GR_ERR_VALUE, "gr_tensordot");
    GTL_FAILS(gr_tensordot(sq, sq, 3, ax, bx), GR_ERR_VALUE, "3 summed axes");
    GTL_FAILS(gr_tensordot(sq, sq, 1, NULL, bx), GR_ERR_VALUE, "NULL");
    GTL_FAILS(gr_tensordot(sq, sq, 1, &big, bx), GR_ERR_VALUE, "out of range");
    GTL_FAILS(gr_tensordot(sq, sq, 2, ax, bx), GR_ERR_VALUE, "repeated");
    GTL_FAILS(gr_tensordot(r, r, 1, bx + 1, ax), GR_ERR_SHAPE, "differ in size");
    GTL_FAILS(gr_tensordot(gr_tensordot(x234, x234, 0, NULL, NULL), x234, 0, NULL, NULL), GR_ERR_VALUE, "dimensions");
    gr_graph_clear_error(g);
    CHECK(gr_tensordot(NULL, sq, 0, NULL, NULL) == NULL);  /* NULL operands: NULL, nothing recorded */
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    gtf_static_shape_is(gr_tensordot(x234, r, 2, (int[2]){ 1, 2 }, (int[2]){ 0, 1 }), 1, (int64_t[1]){ 2 }, "tensordot static");
    {   /* the summed sizes at call time */
        gr_var *ins[2];
        int64_t n4 = 4;
        gr_array *arr[2];
        int a1 = 1, b0 = 0;
        ins[0] = gr_matrix(g, GR_F64, "A");
        ins[1] = gr_vector(g, GR_F64, "b");
        arr[0] = gr_array_new(GR_F64, 2, s33);
        arr[1] = gr_array_new(GR_F64, 1, &n4);
        gtf_expect_call_error(g, 2, ins, (const gr_array *const *)arr, gr_tensordot(ins[0], ins[1], 1, &a1, &b0), GR_ERR_SHAPE,
                              "tensordot (3,3).(4,)");
        gr_array_free(arr[0]); gr_array_free(arr[1]);
    }
    gr_graph_free(g);
}
#undef GTL_FAILS

static const gtd_spec specs_TensorDot[] = {
    { "TensorDot", "(3,4).(4,2) on a's last axis", gtl_b_tensordot, &gtl_td_plain, 2, { GTD_IN(2, 3, 4, -1, 1), GTD_IN(2, 4, 2, -1, 1) }, GTD_GRADGRAD },
    { "TensorDot", "(4,3).(2,4) on a's first and b's last axis (flags)", gtl_b_tensordot, &gtl_td_first, 2,
      { GTD_IN(2, 4, 3, -1, 1), GTD_IN(2, 2, 4, -1, 1) }, 0 },
    { "TensorDot", "(4,3,2).(4,2,5) on axes (2,0) and (1,0)", gtl_b_tensordot, &gtl_td_perm, 2,
      { GTD_IN3(4, 3, 2, -1, 1), GTD_IN3(4, 2, 5, -1, 1) }, 0 },
    { "TensorDot", "outer product (2,3) x (4,)", gtl_b_tensordot, &gtl_td_outer, 2, { GTD_IN(2, 2, 3, -1, 1), GTD_IN(1, 4, 0, -1, 1) }, 0 },
    GTD_END
};
static const gtd_spec specs_MatMul[] = {
    { "MatMul", "(2,3,4)@(4,5)", gtl_b_matmul, NULL, 2, { GTD_IN3(2, 3, 4, -1, 1), GTD_IN(2, 4, 5, -1, 1) }, GTD_GRADGRAD },
    { "MatMul", "(3,4)@(2,4,5)", gtl_b_matmul, NULL, 2, { GTD_IN(2, 3, 4, -1, 1), GTD_IN3(2, 4, 5, -1, 1) }, 0 },
    { "MatMul", "(2,1,3,4)@(5,4,2): batch axes broadcast", gtl_b_matmul, NULL, 2,
      { { 4, { 2, 1, 3, 4 }, -1, 1 }, GTD_IN3(5, 4, 2, -1, 1) }, 0 },
    { "MatMul", "(4,)@(2,4,3)", gtl_b_matmul, NULL, 2, { GTD_IN(1, 4, 0, -1, 1), GTD_IN3(2, 4, 3, -1, 1) }, 0 },
    { "MatMul", "(2,3,4)@(4,)", gtl_b_matmul, NULL, 2, { GTD_IN3(2, 3, 4, -1, 1), GTD_IN(1, 4, 0, -1, 1) }, 0 },
    { "MatMul", "(4,)@(4,)", gtl_b_matmul, NULL, 2, { GTD_IN(1, 4, 0, -1, 1), GTD_IN(1, 4, 0, -1, 1) }, 0 },
    GTD_END
};

GT_CASES(TensorDot) = { GT_VALUES(gtl_forward_TensorDot), GT_SPECS(specs_TensorDot), GT_DERIVS(test_dot_jacobians), GT_ERRORS(test_tensordot_errors), GT_END };
GT_CASES(MatMul) = { GT_VALUES(gtl_forward_MatMul), GT_SPECS(specs_MatMul), GT_ERRORS(test_matmul_errors), GT_END };
