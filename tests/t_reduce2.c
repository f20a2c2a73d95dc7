/* tests/t_reduce2.c: the second-wave reductions and losses, gr_argmax_axis, gr_logsumexp,
   gr_cumsum, gr_cumprod and gr_crossentropy, and the rows behind them (ArgMax, LogSumExp, CumSum,
   CumProd, LinScan, CrossEntropy, OneHot):
     - forward values against plain C (gtr_fwd_<Row>, run by the cases of suite_forward_struct
       named like the rows), in F64, F32 and I64 where the op takes them, along every axis counted
       from both ends, with static and call-time shapes;
     - the derivative specs of every row (gtd_specs_reduce2, run by tests/t_deriv.c), cumprod with
       exact zeros in its input among them;
     - gradients, R-ops, Jacobians and Hessians against plain-C formulas, the error paths, and
       the _axes reductions' gradients (suite_reduce2). */
#include "forward.h"
#include "deriv.h"

void gtr_fwd_ArgMax(void);
void gtr_fwd_LogSumExp(void);
void gtr_fwd_CumSum(void);
void gtr_fwd_CumProd(void);
void gtr_fwd_LinScan(void);
void gtr_fwd_CrossEntropy(void);
void gtr_fwd_OneHot(void);

static const gr_dtype gtr_dtypes[4] = { GR_F64, GR_F32, GR_I64, GR_BOOL };

typedef struct gtr_shape { int ndim; int64_t shape[3]; } gtr_shape;
static const gtr_shape gtr_shapes[] = {
    { 3, { 2, 3, 4 } }, { 2, { 4, 5 } }, { 1, { 6 } }, { 3, { 3, 1, 4 } }, { 2, { 1, 1 } }, { 2, { 0, 3 } },
};
#define GTR_N_SHAPES ((int)(sizeof gtr_shapes / sizeof gtr_shapes[0]))

static double gtr_tol(gr_dtype dt) { return dt == GR_F32 ? GTF_TOL_F32 : dt == GR_F64 ? GTF_TOL_F64 : 0; }

/* (outer, n, inner) of a shape around axis */
static void gtr_split(int ndim, const int64_t *shape, int axis, int64_t *outer, int64_t *n, int64_t *inner) {
    int i;
    *outer = 1; *inner = 1; *n = shape[axis];
    for (i = 0; i < axis; i++) *outer *= shape[i];
    for (i = axis + 1; i < ndim; i++) *inner *= shape[i];
}
/* the shape without the axis */
static int gtr_drop_axis(int ndim, const int64_t *shape, int axis, int64_t *out) {
    int i, m = 0;
    for (i = 0; i < ndim; i++) if (i != axis) out[m++] = shape[i];
    return m;
}
static int64_t gtr_int_at(const gr_array *x, int64_t k) {
    return x->dtype == GR_I64 ? ((const int64_t *)x->data)[k] : x->dtype == GR_BOOL ? (int64_t)((const uint8_t *)x->data)[k]
                                                                                      : (int64_t)gr_array_get(x, k);
}
static int gtr_call1(gr_graph *g, int n, gr_var *const *ins, const gr_array *const *arr, gr_var *out, gr_array **res,
                     const char *label) {
    gr_fn *f = gr_function(n, ins, 1, &out, NULL);
    const gr_array *r[1];
    *res = NULL;
    if (!f) { gt_fail(__FILE__, __LINE__, "%s: gr_function failed: %s", label, gr_graph_message(g)); return 0; }
    if (gr_call(f, arr, r) != GR_OK) {
        gt_fail(__FILE__, __LINE__, "%s: gr_call failed: %s", label, gr_fn_message(f));
        gr_fn_free(f);
        return 0;
    }
    *res = gr_array_copy(r[0]);
    gr_fn_free(f);
    return 1;
}

/* log(e^a + e^b) without overflow, a reference independent of the kernels' max shift */
static double gtr_logaddexp(double a, double b) {
    if (a != a || b != b) return NAN;
    if (a == -INFINITY) return b;
    if (b == -INFINITY) return a;
    if (a == INFINITY || b == INFINITY) return INFINITY;
    return a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
}

/* ==== ArgMax ======================================================================================== */

static gr_array *gtr_argmax_ref(const gr_array *x, int axis) {
    int64_t oshape[GR_MAX_NDIM], outer, n, inner, o, j, i;
    int ond = gtr_drop_axis(x->ndim, x->shape, axis, oshape);
    gr_array *want = gr_array_new(GR_I64, ond, oshape);
    gtr_split(x->ndim, x->shape, axis, &outer, &n, &inner);
    for (o = 0; o < outer; o++)
        for (j = 0; j < inner; j++) {
            int64_t best = 0;
            for (i = 1; i < n; i++) {
                int64_t kb = (o * n + best) * inner + j, ki = (o * n + i) * inner + j;
                if (x->dtype == GR_I64 || x->dtype == GR_BOOL) {
                    if (gtr_int_at(x, ki) > gtr_int_at(x, kb)) best = i;
                } else {
                    double b = gr_array_get(x, kb), v = gr_array_get(x, ki);
                    if (isnan(b)) break;                       /* the first NaN wins */
                    if (isnan(v) || v > b) best = i;
                }
            }
            ((int64_t *)want->data)[o * inner + j] = best;
        }
    return want;
}

void gtr_fwd_ArgMax(void) {
    gtf_rng rng;
    int c, d, dyn, a;
    rng.s = 501;
    for (c = 0; c < GTR_N_SHAPES; c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++)
                for (a = -gtr_shapes[c].ndim; a < gtr_shapes[c].ndim; a++) {
                    const gtr_shape *s = &gtr_shapes[c];
                    gr_dtype dt = gtr_dtypes[d];
                    int pos = a < 0 ? a + s->ndim : a;
                    gr_graph *g = gr_graph_new();
                    gr_var *x = gtf_input(g, dt, s->ndim, s->shape, dyn, "x");
                    /* small integers: plenty of ties, where the first position wins */
                    gr_array *xa = gtf_random(&rng, dt, s->ndim, s->shape, dt == GR_I64 ? -2 : -2.0, dt == GR_I64 ? 2 : 2.0), *want;
                    const gr_array *arr[1];
                    char label[128];
                    arr[0] = xa;
                    snprintf(label, sizeof label, "gr_argmax_axis(%d) of %d-d case %d, %s, %s", a, s->ndim, c, gr_dtype_name(dt),
                             dyn ? "unknown shape" : "static shape");
                    int64_t rest = 1;
                    int i;
                    for (i = 0; i < s->ndim; i++) if (i != pos) rest *= s->shape[i];
                    if (s->shape[pos] == 0 && rest > 0) {
                        gtf_expect_call_error(g, 1, &x, arr, gr_argmax_axis(x, a), GR_ERR_RUNTIME, label);   /* an empty axis */
                    } else {
                        want = gtr_argmax_ref(xa, pos);
                        gtf_expect(g, 1, &x, arr, gr_argmax_axis(x, a), GR_I64, want, 0, label);
                        gr_array_free(want);
                    }
                    gr_array_free(xa);
                    gr_graph_free(g);
                }
    {   /* ties: the first maximum; NaN: the first NaN, wherever a larger number stands */
        static const double v[12] = { 1, 3, 3, 0, NAN, 5, NAN, 1, 2, 2, 2, 2 };
        int64_t s34[2] = { 3, 4 };
        for (d = 0; d < 2; d++) {
            gr_graph *g = gr_graph_new();
            gr_var *x = gr_matrix(g, gtr_dtypes[d], "x");
            gr_array *xa = gr_array_new(gtr_dtypes[d], 2, s34), *want;
            const gr_array *arr[1];
            int64_t k;
            for (k = 0; k < 12; k++) gr_array_set(xa, k, v[k]);
            arr[0] = xa;
            want = gtr_argmax_ref(xa, 1);
            CHECK_EQ_INT(((int64_t *)want->data)[0], 1);
            CHECK_EQ_INT(((int64_t *)want->data)[1], 0);
            CHECK_EQ_INT(((int64_t *)want->data)[2], 0);
            gtf_expect(g, 1, &x, arr, gr_argmax_axis(x, -1), GR_I64, want, 0, "argmax ties and NaN, axis -1");
            gr_array_free(want);
            want = gtr_argmax_ref(xa, 0);
            CHECK_EQ_INT(((int64_t *)want->data)[0], 1);
            gtf_expect(g, 1, &x, arr, gr_argmax_axis(x, 0), GR_I64, want, 0, "argmax ties and NaN, axis 0");
            gr_array_free(want);
            gr_array_free(xa);
            gr_graph_free(g);
        }
    }
    {   /* the result has the axis removed, statically */
        gr_graph *g = gr_graph_new();
        int64_t s[3] = { 2, 3, 4 }, w[2] = { 2, 4 };
        gtf_static_shape_is(gr_argmax_axis(gr_tensor(g, GR_F64, 3, s, "x"), -2), 2, w, "argmax static shape");
        gr_graph_free(g);
    }
}

/* ==== LogSumExp ===================================================================================== */

static gr_array *gtr_lse_ref(const gr_array *x, int axis) {
    int64_t oshape[GR_MAX_NDIM], outer, n, inner, o, j, i;
    int ond = gtr_drop_axis(x->ndim, x->shape, axis, oshape);
    gr_array *want = gr_array_new(GR_F64, ond, oshape);
    gtr_split(x->ndim, x->shape, axis, &outer, &n, &inner);
    for (o = 0; o < outer; o++)
        for (j = 0; j < inner; j++) {
            double acc = -INFINITY;
            for (i = 0; i < n; i++) acc = gtr_logaddexp(acc, gr_array_get(x, (o * n + i) * inner + j));
            ((double *)want->data)[o * inner + j] = acc;
        }
    return want;
}

void gtr_fwd_LogSumExp(void) {
    gtf_rng rng;
    int c, d, dyn, a;
    rng.s = 502;
    for (c = 0; c < GTR_N_SHAPES; c++)
        for (d = 0; d < 3; d++)
            for (dyn = 0; dyn < 2; dyn++)
                for (a = -gtr_shapes[c].ndim; a < gtr_shapes[c].ndim; a++) {
                    const gtr_shape *s = &gtr_shapes[c];
                    gr_dtype dt = gtr_dtypes[d], odt = dt == GR_F32 ? GR_F32 : GR_F64;
                    gr_graph *g = gr_graph_new();
                    gr_var *x = gtf_input(g, dt, s->ndim, s->shape, dyn, "x");
                    gr_array *xa = gtf_random(&rng, dt, s->ndim, s->shape, -4, 4), *want = gtr_lse_ref(xa, a < 0 ? a + s->ndim : a);
                    const gr_array *arr[1];
                    char label[128];
                    arr[0] = xa;
                    snprintf(label, sizeof label, "gr_logsumexp(%d) of %d-d case %d, %s, %s", a, s->ndim, c, gr_dtype_name(dt),
                             dyn ? "unknown shape" : "static shape");
                    gtf_expect(g, 1, &x, arr, gr_logsumexp(x, a), odt, want, gtr_tol(odt), label);   /* an empty axis: -inf */
                    gr_array_free(want);
                    gr_array_free(xa);
                    gr_graph_free(g);
                }
    {   /* magnitude 1e3: no overflow, and exact values; -inf rows and +inf, NaN */
        static const double big[16] = { 1000, 1001, 999, 998, -1000, -1001, -999, -1002, 1e3, 1e3, 1e3, 1e3,
                                        -INFINITY, -INFINITY, -INFINITY, -INFINITY };
        static const double odd[8] = { 1, INFINITY, 2, 3, 1, NAN, INFINITY, 0 };
        int64_t s44[2] = { 4, 4 }, s24[2] = { 2, 4 }, k;
        for (d = 0; d < 2; d++)
            for (a = 0; a < 2; a++) {
                gr_dtype dt = gtr_dtypes[d];
                gr_graph *g = gr_graph_new();
                gr_var *x = gr_matrix(g, dt, "x");
                gr_array *xa = gr_array_new(dt, 2, s44), *want;
                const gr_array *arr[1];
                char label[128];
                for (k = 0; k < 16; k++) gr_array_set(xa, k, big[k]);
                arr[0] = xa;
                want = gtr_lse_ref(xa, a);
                if (a == 1) {
                    CHECK_NEAR(gtf_wantf(want, 0), 1001 + log1p(exp(-1.0) + exp(-2.0) + exp(-3.0)), 1e-15);
                    CHECK_NEAR(gtf_wantf(want, 2), 1000 + log(4.0), 1e-15);
                    CHECK(gtf_wantf(want, 3) == -INFINITY);
                }
                snprintf(label, sizeof label, "gr_logsumexp(%d) of logits near 1e3, %s", a, gr_dtype_name(dt));
                gtf_expect(g, 1, &x, arr, gr_logsumexp(x, a), dt, want, gtr_tol(dt), label);
                gr_array_free(want);
                gr_array_free(xa);
                xa = gr_array_new(dt, 2, s24);
                for (k = 0; k < 8; k++) gr_array_set(xa, k, odd[k]);
                arr[0] = xa;
                want = gtr_lse_ref(xa, 1);
                CHECK(gtf_wantf(want, 0) == INFINITY && isnan(gtf_wantf(want, 1)));
                gtf_expect(g, 1, &x, arr, gr_logsumexp(x, 1), dt, want, gtr_tol(dt), "gr_logsumexp with +inf and NaN");
                gr_array_free(want);
                gr_array_free(xa);
                gr_graph_free(g);
            }
    }
}

/* ==== CumSum and CumProd ============================================================================ */

/* the cumulative sum or product by a plain loop; I64 through uint64_t (wrapping), floats in double */
static gr_array *gtr_cum_ref(const gr_array *x, int axis, int prod) {
    int64_t outer, n, inner, o, j, i;
    int is_int = x->dtype == GR_I64 || x->dtype == GR_BOOL;
    gr_array *want = gr_array_new(is_int ? GR_I64 : GR_F64, x->ndim, x->shape);
    gtr_split(x->ndim, x->shape, axis, &outer, &n, &inner);
    for (o = 0; o < outer; o++)
        for (j = 0; j < inner; j++) {
            uint64_t ia = prod ? 1u : 0u;
            double fa = prod ? 1.0 : 0.0;
            for (i = 0; i < n; i++) {
                int64_t k = (o * n + i) * inner + j;
                if (is_int) {
                    uint64_t v = (uint64_t)gtr_int_at(x, k);
                    ia = prod ? ia * v : ia + v;
                    ((int64_t *)want->data)[k] = (int64_t)ia;
                } else {
                    double v = gr_array_get(x, k);
                    fa = prod ? fa * v : fa + v;
                    ((double *)want->data)[k] = fa;
                }
            }
        }
    return want;
}

static void gtr_cum_values(int prod) {
    gr_var *(*op)(gr_var *, int) = prod ? gr_cumprod : gr_cumsum;
    const char *name = prod ? "gr_cumprod" : "gr_cumsum";
    gtf_rng rng;
    int c, d, dyn, a;
    rng.s = 503 + (uint64_t)prod;
    for (c = 0; c < GTR_N_SHAPES; c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++)
                for (a = -gtr_shapes[c].ndim; a < gtr_shapes[c].ndim; a++) {
                    const gtr_shape *s = &gtr_shapes[c];
                    gr_dtype dt = gtr_dtypes[d], odt = dt == GR_BOOL ? GR_I64 : dt;
                    gr_graph *g = gr_graph_new();
                    gr_var *x = gtf_input(g, dt, s->ndim, s->shape, dyn, "x");
                    gr_array *xa = gtf_random(&rng, dt, s->ndim, s->shape, dt == GR_I64 ? -3 : -1.5, dt == GR_I64 ? 3 : 1.5), *want;
                    const gr_array *arr[1];
                    char label[128];
                    int64_t k;
                    if (prod && xa->size > 2 && (dt == GR_F64 || dt == GR_F32)) gr_array_set(xa, xa->size / 2, 0.0);   /* a zero */
                    for (k = 0; k < xa->size && dt == GR_I64 && prod; k++)        /* keep products small but with zeros */
                        if (gtr_int_at(xa, k) == 3 || gtr_int_at(xa, k) == -3) gr_array_set(xa, k, 1);
                    want = gtr_cum_ref(xa, a < 0 ? a + s->ndim : a, prod);
                    arr[0] = xa;
                    snprintf(label, sizeof label, "%s(%d) of %d-d case %d, %s, %s", name, a, s->ndim, c, gr_dtype_name(dt),
                             dyn ? "unknown shape" : "static shape");
                    gtf_expect(g, 1, &x, arr, op(x, a), odt, want, gtr_tol(odt), label);
                    gr_array_free(want);
                    gr_array_free(xa);
                    gr_graph_free(g);
                }
    {   /* int64 wraps modulo 2^64, as NumPy's */
        int64_t n = 3;
        int64_t vs[3] = { INT64_MAX, 1, 5 }, vp[3] = { (int64_t)1 << 40, (int64_t)1 << 40, 7 };
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_I64, "x");
        gr_array *xa = gr_array_from(GR_I64, 1, &n, prod ? vp : vs), *want = gtr_cum_ref(xa, 0, prod);
        const gr_array *arr[1];
        arr[0] = xa;
        CHECK_EQ_INT(((int64_t *)want->data)[1], prod ? 0 : INT64_MIN);
        gtf_expect(g, 1, &x, arr, op(x, 0), GR_I64, want, 0, prod ? "gr_cumprod wraps" : "gr_cumsum wraps");
        gr_array_free(want);
        gr_array_free(xa);
        gr_graph_free(g);
    }
}

void gtr_fwd_CumSum(void) { gtr_cum_values(0); }
void gtr_fwd_CumProd(void) {
    gtr_cum_values(1);
    {   /* zeros: everything after the first zero of a slice is zero, before it untouched */
        static const double v[8] = { 2, 0.5, 0, 3, 0, 4, -1, 0 };
        int64_t s24[2] = { 2, 4 };
        int d, a;
        for (d = 0; d < 2; d++)
            for (a = 0; a < 2; a++) {
                gr_graph *g = gr_graph_new();
                gr_var *x = gr_matrix(g, gtr_dtypes[d], "x");
                gr_array *xa = gr_array_new(gtr_dtypes[d], 2, s24), *want;
                const gr_array *arr[1];
                int64_t k;
                for (k = 0; k < 8; k++) gr_array_set(xa, k, v[k]);
                arr[0] = xa;
                want = gtr_cum_ref(xa, a, 1);
                if (a == 1) CHECK(gtf_wantf(want, 1) == 1.0 && gtf_wantf(want, 2) == 0.0 && gtf_wantf(want, 3) == 0.0);
                gtf_expect(g, 1, &x, arr, gr_cumprod(x, a), gtr_dtypes[d], want, gtr_tol(gtr_dtypes[d]), "gr_cumprod with zeros");
                gr_array_free(want);
                gr_array_free(xa);
                gr_graph_free(g);
            }
    }
}

/* ==== derivatives of cumprod by brute force: dy_k/dx_i = [i <= k] prod_{j <= k, j != i} x_j ==== */

static double gtr_dcumprod(const double *x, int64_t k, int64_t i) {
    double p = 1;
    int64_t j;
    if (i > k) return 0;
    for (j = 0; j <= k; j++) if (j != i) p *= x[j];
    return p;
}
/* d^2 (sum_k y_k) / dx_i dx_l */
static double gtr_d2sumcumprod(const double *x, int64_t n, int64_t i, int64_t l) {
    double s = 0;
    int64_t k, j;
    if (i == l) return 0;
    for (k = i > l ? i : l; k < n; k++) {
        double p = 1;
        for (j = 0; j <= k; j++) if (j != i && j != l) p *= x[j];
        s += p;
    }
    return s;
}

/* along each slice (o, j) of axis: g_x[i] = sum_k g[k] dy_k/dx_i (rop: r[k] = sum_i v[i] dy_k/dx_i) */
static gr_array *gtr_cumprod_deriv_ref(const gr_array *x, const gr_array *g, int axis, int rop) {
    int64_t outer, n, inner, o, j, i, k;
    gr_array *want = gr_array_new(GR_F64, x->ndim, x->shape);
    double xs[16];
    gtr_split(x->ndim, x->shape, axis, &outer, &n, &inner);
    for (o = 0; o < outer; o++)
        for (j = 0; j < inner; j++) {
            for (i = 0; i < n; i++) xs[i] = gr_array_get(x, (o * n + i) * inner + j);
            for (i = 0; i < n; i++) {
                double acc = 0;
                for (k = 0; k < n; k++) {
                    double gk = gr_array_get(g, (o * n + k) * inner + j);
                    acc += rop ? gk * gtr_dcumprod(xs, i, k) : gk * gtr_dcumprod(xs, k, i);
                }
                ((double *)want->data)[(o * n + i) * inner + j] = acc;
            }
        }
    return want;
}

/* the variable of op `name` feeding v's node as input `pos` (the rules' internals, by name) */
static gr_var *gtr_input_of(gr_var *v, int pos, const char *name, const char *label) {
    gr_var *in = gr_node_input(gr_var_owner(v), pos);
    const gr_op_def *op = gr_node_op(gr_var_owner(in));
    if (!op || strcmp(gr_node_op(gr_var_owner(in))->name, name) != 0) {
        gt_fail(__FILE__, __LINE__, "%s: input %d of %s is not a %s", label, pos, gr_var_owner(v) ? gr_node_op(gr_var_owner(v))->name : "a leaf",
                name);
        return NULL;
    }
    return in;
}

/* LinScan, both ways, through cumprod's rules: the gradient of sum(w * cumprod(x)) is E * S with
   S = LinScan(x, w, reverse); the R-op along v is LinScan(x, E * v, forward) */
void gtr_fwd_LinScan(void) {
    static const gtr_shape shapes[] = { { 1, { 6 } }, { 2, { 3, 4 } }, { 3, { 2, 3, 4 } }, { 2, { 4, 1 } }, { 2, { 0, 2 } } };
    gtf_rng rng;
    int c, d, dyn, a;
    rng.s = 504;
    for (c = 0; c < (int)(sizeof shapes / sizeof shapes[0]); c++)
        for (d = 0; d < 2; d++)
            for (dyn = 0; dyn < 2; dyn++)
                for (a = -shapes[c].ndim; a < shapes[c].ndim; a++) {
                    const gtr_shape *s = &shapes[c];
                    gr_dtype dt = gtr_dtypes[d];
                    int pos = a < 0 ? a + s->ndim : a;
                    gr_graph *g = gr_graph_new();
                    gr_var *x = gtf_input(g, dt, s->ndim, s->shape, dyn, "x"), *w = gtf_input(g, dt, s->ndim, s->shape, dyn, "w");
                    gr_var *ins[2], *y, *gx, *r = NULL, *scan_rev, *scan_fwd;
                    gr_array *arr[2], *want_s, *want_r;
                    int64_t outer, n, inner, o, j, t;
                    char label[128];
                    snprintf(label, sizeof label, "LinScan via gr_cumprod(%d) of %d-d case %d, %s, %s", a, s->ndim, c, gr_dtype_name(dt),
                             dyn ? "unknown shape" : "static shape");
                    arr[0] = gtf_random(&rng, dt, s->ndim, s->shape, -1.5, 1.5);
                    arr[1] = gtf_random(&rng, dt, s->ndim, s->shape, -1, 1);
                    if (arr[0]->size > 3) gr_array_set(arr[0], 1, 0.0);                       /* a zero */
                    ins[0] = x; ins[1] = w;
                    y = gr_cumprod(x, a);
                    gx = gr_grad1(gr_sum(gr_mul(w, y)), x);
                    gr_rop(1, &y, 1, &x, &w, &r, NULL);
                    scan_rev = gtr_input_of(gx, 1, "LinScan", label);
                    scan_fwd = r && strcmp(gr_node_op(gr_var_owner(r))->name, "LinScan") == 0 ? r : NULL;
                    CHECK_MSG(scan_fwd != NULL, "%s: the R-op of CumProd is not a LinScan", label);
                    /* plain C: S_i = w_i + x_{i+1} S_{i+1}; r_k = x_k r_{k-1} + E_k v_k with v = w */
                    want_s = gr_array_new(GR_F64, s->ndim, s->shape);
                    want_r = gr_array_new(GR_F64, s->ndim, s->shape);
                    gtr_split(s->ndim, s->shape, pos, &outer, &n, &inner);
                    for (o = 0; o < outer; o++)
                        for (j = 0; j < inner; j++) {
                            double S = 0, R = 0, E = 1;
                            for (t = n - 1; t >= 0; t--) {
                                int64_t k = (o * n + t) * inner + j;
                                double xn = t + 1 < n ? gr_array_get(arr[0], (o * n + t + 1) * inner + j) : 0;
                                S = gr_array_get(arr[1], k) + xn * S;
                                ((double *)want_s->data)[k] = S;
                            }
                            for (t = 0; t < n; t++) {
                                int64_t k = (o * n + t) * inner + j;
                                R = gr_array_get(arr[0], k) * R + E * gr_array_get(arr[1], k);
                                E *= gr_array_get(arr[0], k);
                                ((double *)want_r->data)[k] = R;
                            }
                        }
                    if (scan_rev) gtf_expect(g, 2, ins, (const gr_array *const *)arr, scan_rev, dt, want_s, gtr_tol(dt), label);
                    if (scan_fwd) gtf_expect(g, 2, ins, (const gr_array *const *)arr, scan_fwd, dt, want_r, gtr_tol(dt), label);
                    gr_array_free(want_s);
                    gr_array_free(want_r);
                    gr_array_free(arr[0]);
                    gr_array_free(arr[1]);
                    gr_graph_free(g);
                }
}

/* ==== CrossEntropy and OneHot ======================================================================= */

/* the mean over rows of sum_k t_k (lse(z) - z_k) (t_k == 0 terms skipped), lse by logaddexp */
static double gtr_xent_ref(const gr_array *z, const gr_array *t) {
    int64_t K = z->shape[z->ndim - 1], rows = 1, r, k;
    double total = 0;
    int i;
    for (i = 0; i < z->ndim - 1; i++) rows *= z->shape[i];
    for (r = 0; r < rows; r++) {
        double lse = -INFINITY;
        for (k = 0; k < K; k++) lse = gtr_logaddexp(lse, gr_array_get(z, r * K + k));
        for (k = 0; k < K; k++) {
            double tk = gr_array_get(t, r * K + k);
            if (tk != 0) total += tk * (lse - gr_array_get(z, r * K + k));
        }
    }
    return rows ? total / (double)rows : NAN;
}
/* one-hot F64 rows from ids, shaped like z */
static gr_array *gtr_onehot(const gr_array *ids, const gr_array *z) {
    gr_array *t = gr_array_new(GR_F64, z->ndim, z->shape);
    int64_t K = z->shape[z->ndim - 1], r;
    for (r = 0; r < ids->size; r++) ((double *)t->data)[r * K + ((const int64_t *)ids->data)[r]] = 1;
    return t;
}
static gr_array *gtr_random_ids(gtf_rng *rng, int ndim, const int64_t *shape, int64_t K) {
    return gtf_random(rng, GR_I64, ndim, shape, 0, (double)(K - 1));
}

/* logits of dtype zdt (and labels of dtype tdt, or I64 ids) in a shape: values against gtr_xent_ref */
static void gtr_xent_case(gtf_rng *rng, int ndim, const int64_t *zshape, gr_dtype zdt, gr_dtype tdt, int soft, double lo, double hi,
                          int dyn) {
    gr_graph *g = gr_graph_new();
    int64_t K = zshape[ndim - 1];
    int ids = tdt == GR_I64;
    gr_dtype odt = (zdt == GR_F32 && (ids || tdt != GR_F64)) ? GR_F32 : GR_F64;
    gr_var *z = gtf_input(g, zdt, ndim, zshape, dyn, "z"), *t = gtf_input(g, tdt, ids ? ndim - 1 : ndim, zshape, dyn, "t"), *ins[2];
    gr_array *arr[2], *tf, *want = gr_array_new(GR_F64, 0, NULL);
    char label[160];
    double ref;
    int64_t k;
    arr[0] = gtf_random(rng, zdt, ndim, zshape, lo, hi);
    if (ids) {
        arr[1] = gtr_random_ids(rng, ndim - 1, zshape, K);
        tf = gtr_onehot(arr[1], arr[0]);
    } else {
        arr[1] = gtf_random(rng, tdt, ndim, zshape, 0, 1);
        if (!soft && tdt != GR_BOOL) {                  /* one-hot float rows */
            gr_array *idx = gtr_random_ids(rng, ndim - 1, zshape, K), *oh = gtr_onehot(idx, arr[0]);
            for (k = 0; k < arr[1]->size; k++) gr_array_set(arr[1], k, gr_array_get(oh, k));
            gr_array_free(idx);
            gr_array_free(oh);
        }
        tf = gr_array_new(GR_F64, ndim, zshape);
        for (k = 0; k < tf->size; k++) ((double *)tf->data)[k] = gr_array_get(arr[1], k);
    }
    {   /* the reference from the values the op sees (F32 logits stay F32 unless the labels are F64) */
        gr_array *zc = gr_array_new(GR_F64, ndim, zshape);
        for (k = 0; k < zc->size; k++) ((double *)zc->data)[k] = gr_array_get(arr[0], k);
        ref = gtr_xent_ref(zc, tf);
        gr_array_free(zc);
    }
    ((double *)want->data)[0] = ref;
    CHECK_MSG(isfinite(ref) || arr[0]->size == 0, "the reference is not finite");
    ins[0] = z; ins[1] = t;
    snprintf(label, sizeof label, "gr_crossentropy %d-d logits %s in [%g, %g), %s labels%s, %s", ndim, gr_dtype_name(zdt), lo, hi,
             ids ? "int64 id" : gr_dtype_name(tdt), soft ? " (soft)" : "", dyn ? "unknown shape" : "static shape");
    gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_crossentropy(z, t), odt, want, odt == GR_F32 ? 1e-5 : 1e-12, label);
    gr_array_free(arr[0]);
    gr_array_free(arr[1]);
    gr_array_free(tf);
    gr_array_free(want);
    gr_graph_free(g);
}

void gtr_fwd_CrossEntropy(void) {
    static const gtr_shape shapes[] = { { 2, { 4, 5 } }, { 1, { 6 } }, { 3, { 2, 3, 4 } }, { 2, { 1, 1 } }, { 2, { 7, 2 } } };
    static const gr_dtype zdts[3] = { GR_F64, GR_F32, GR_I64 };
    gtf_rng rng;
    int c, d, dyn, lab;
    rng.s = 505;
    for (c = 0; c < (int)(sizeof shapes / sizeof shapes[0]); c++)
        for (d = 0; d < 3; d++)
            for (dyn = 0; dyn < 2; dyn++)
                for (lab = 0; lab < 5; lab++) {
                    /* labels: ids, one-hot F64, soft F64, soft of the logits' float dtype, bool masks */
                    gr_dtype zdt = zdts[d], fdt = zdt == GR_F32 ? GR_F32 : GR_F64;
                    gr_dtype tdt = lab == 0 ? GR_I64 : lab == 1 || lab == 2 ? GR_F64 : lab == 3 ? fdt : GR_BOOL;
                    gtr_xent_case(&rng, shapes[c].ndim, shapes[c].shape, zdt, tdt, lab >= 2, zdt == GR_I64 ? -4 : -4.0, 4.0, dyn);
                }
    /* logits of magnitude 1e3: spread over [-1e3, 1e3), and all near 1e3 (no inf, no NaN, the right value) */
    for (d = 0; d < 2; d++)
        for (lab = 0; lab < 3; lab++) {
            int64_t s[2] = { 6, 5 };
            gr_dtype tdt = lab == 0 ? GR_I64 : gtr_dtypes[d];
            gtr_xent_case(&rng, 2, s, gtr_dtypes[d], tdt, lab == 2, -1000, 1000, 0);
            gtr_xent_case(&rng, 2, s, gtr_dtypes[d], tdt, lab == 2, 995, 1005, 1);
            gtr_xent_case(&rng, 2, s, gtr_dtypes[d], tdt, lab == 2, -1005, -995, 1);
        }
    {   /* exact values near 1e3: log(1 + e^-1 + e^-2) and friends */
        static const double zv[6] = { 1000, 1001, 999, -1000, -1000, -1000 };
        static const int64_t iv[2] = { 1, 2 };
        int64_t s23[2] = { 2, 3 }, s2 = 2;
        for (d = 0; d < 2; d++) {
            gr_graph *g = gr_graph_new();
            gr_var *z = gr_matrix(g, gtr_dtypes[d], "z"), *y = gr_vector(g, GR_I64, "y"), *ins[2];
            gr_array *arr[2], *want = gr_array_new(GR_F64, 0, NULL);
            int64_t k;
            arr[0] = gr_array_new(gtr_dtypes[d], 2, s23);
            for (k = 0; k < 6; k++) gr_array_set(arr[0], k, zv[k]);
            arr[1] = gr_array_from(GR_I64, 1, &s2, iv);
            ((double *)want->data)[0] = (log1p(exp(-1.0) + exp(-2.0)) + log(3.0)) / 2;
            ins[0] = z; ins[1] = y;
            gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_crossentropy(z, y), gtr_dtypes[d], want, gtr_tol(gtr_dtypes[d]),
                       "gr_crossentropy of exact logits near 1e3");
            gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(want);
            gr_graph_free(g);
        }
    }
    {   /* a class masked with -inf and a zero label stays finite; no rows is a mean of nothing (NaN) */
        static const double zv[4] = { 1, -INFINITY, 2, 0.5 };
        static const double tv[4] = { 1, 0, 0.25, 0.75 };
        int64_t s22[2] = { 2, 2 }, s02[2] = { 0, 2 };
        gr_graph *g = gr_graph_new();
        gr_var *z = gr_matrix(g, GR_F64, "z"), *t = gr_matrix(g, GR_F64, "t"), *ins[2];
        gr_array *arr[2], *want = gr_array_new(GR_F64, 0, NULL);
        arr[0] = gr_array_from(GR_F64, 2, s22, zv);
        arr[1] = gr_array_from(GR_F64, 2, s22, tv);
        ((double *)want->data)[0] = gtr_xent_ref(arr[0], arr[1]);
        CHECK_NEAR(((double *)want->data)[0], (0 + 0.25 * (log(exp(2.0) + exp(0.5)) - 2) + 0.75 * (log(exp(2.0) + exp(0.5)) - 0.5)) / 2, 1e-15);
        ins[0] = z; ins[1] = t;
        gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_crossentropy(z, t), GR_F64, want, 1e-14, "gr_crossentropy, a -inf logit");
        gr_array_free(arr[0]); gr_array_free(arr[1]);
        arr[0] = gr_array_new(GR_F64, 2, s02);
        arr[1] = gr_array_new(GR_F64, 2, s02);
        ((double *)want->data)[0] = NAN;
        gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_crossentropy(z, t), GR_F64, want, 0, "gr_crossentropy of no rows");
        gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(want);
        gr_graph_free(g);
    }
}

/* OneHot, the node gr_crossentropy puts between the class ids and CrossEntropy */
void gtr_fwd_OneHot(void) {
    static const gtr_shape shapes[] = { { 2, { 4, 5 } }, { 1, { 3 } }, { 3, { 2, 3, 4 } }, { 2, { 0, 3 } } };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 506;
    for (c = 0; c < (int)(sizeof shapes / sizeof shapes[0]); c++)
        for (d = 0; d < 2; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gtr_shape *s = &shapes[c];
                gr_dtype dt = gtr_dtypes[d];
                gr_graph *g = gr_graph_new();
                gr_var *z = gtf_input(g, dt, s->ndim, s->shape, dyn, "z"), *y = gtf_input(g, GR_I64, s->ndim - 1, s->shape, dyn, "y");
                gr_var *ins[2], *ce = gr_crossentropy(z, y), *oh;
                gr_array *arr[2], *want;
                char label[128];
                snprintf(label, sizeof label, "OneHot of %d-d logits, %s, %s", s->ndim, gr_dtype_name(dt), dyn ? "unknown shape" : "static shape");
                oh = ce ? gtr_input_of(ce, 1, "OneHot", label) : NULL;
                arr[0] = gtf_random(&rng, dt, s->ndim, s->shape, -1, 1);
                arr[1] = gtr_random_ids(&rng, s->ndim - 1, s->shape, s->shape[s->ndim - 1]);
                want = gtr_onehot(arr[1], arr[0]);
                ins[0] = z; ins[1] = y;
                if (oh) gtf_expect(g, 2, ins, (const gr_array *const *)arr, oh, dt, want, 0, label);
                /* an id out of range, too large or negative: a runtime error naming the id */
                if (arr[1]->size > 0) {
                    int bad;
                    for (bad = 0; bad < 2; bad++) {
                        gr_fn *f = gr_function(2, ins, 1, &ce, NULL);
                        const gr_array *res[1];
                        int64_t id = bad ? -1 : s->shape[s->ndim - 1] + 2;
                        char idtxt[32];
                        ((int64_t *)arr[1]->data)[arr[1]->size - 1] = id;
                        CHECK(f != NULL);
                        if (f) {
                            CHECK_STATUS(gr_call(f, (const gr_array *const *)arr, res), GR_ERR_RUNTIME);
                            snprintf(idtxt, sizeof idtxt, "class id %lld ", (long long)id);
                            CHECK_CONTAINS(gr_fn_message(f), idtxt);
                            CHECK_CONTAINS(gr_fn_message(f), "'y'");
                        }
                        gr_fn_free(f);
                    }
                }
                gr_array_free(want);
                gr_array_free(arr[0]);
                gr_array_free(arr[1]);
                gr_graph_free(g);
            }
}

/* ==== derivative specs ============================================================================== */

static int gtr_ax0 = 0, gtr_ax1 = 1, gtr_axm1 = -1, gtr_axm2 = -2;

static gr_var *gtr_b_argmax(gr_graph *g, gr_var *const *x, void *u) { (void)g; return gr_argmax_axis(x[0], *(int *)u); }
static gr_var *gtr_b_lse(gr_graph *g, gr_var *const *x, void *u) { (void)g; return gr_logsumexp(x[0], *(int *)u); }
static gr_var *gtr_b_cumsum(gr_graph *g, gr_var *const *x, void *u) { (void)g; return gr_cumsum(x[0], *(int *)u); }
static gr_var *gtr_b_cumprod(gr_graph *g, gr_var *const *x, void *u) { (void)g; return gr_cumprod(x[0], *(int *)u); }

/* a constant int64 vector */
static gr_var *gtr_ids(gr_graph *g, int ndim, const int64_t *shape, const int64_t *v) {
    gr_array *a = gr_array_from(GR_I64, ndim, shape, v);
    gr_var *c = gr_constant(g, a);
    gr_array_free(a);
    return c;
}

/* x of shape (6,) with x[2] replaced by z[0] (an exact zero: z's domain is [0, 0)) */
static gr_var *gtr_b_cumprod_zero1(gr_graph *g, gr_var *const *x, void *u) {
    (void)g; (void)u;
    return gr_cumprod(gr_set_subtensor(gr_slice(x[0], 0, 2, 3, 1), x[1]), 0);
}
/* x of shape (6,) with x[1] and x[4] replaced by the zeros z */
static gr_var *gtr_b_cumprod_zero2(gr_graph *g, gr_var *const *x, void *u) {
    static const int64_t at[2] = { 1, 4 };
    int64_t n = 2;
    (void)u;
    return gr_cumprod(gr_set_subtensor(gr_take(x[0], gtr_ids(g, 1, &n, at), 0), x[1]), 0);
}
/* x (3,4) with column 1 replaced by the zeros z (3,): a zero in every row, cumprod along axis u */
static gr_var *gtr_b_cumprod_zcol(gr_graph *g, gr_var *const *x, void *u) {
    (void)g;
    return gr_cumprod(gr_set_subtensor(gr_index(x[0], 1, 1), x[1]), *(int *)u);
}
/* LinScan, reverse: d/dx sum(w * cumprod(x)) = E * LinScan(x, w, reverse) */
static gr_var *gtr_b_linscan_rev(gr_graph *g, gr_var *const *x, void *u) {
    (void)g;
    return gr_grad1(gr_sum(gr_mul(x[1], gr_cumprod(x[0], *(int *)u))), x[0]);
}
/* LinScan, forward: Rop(cumprod(x), x, v) = LinScan(x, E * v, forward) */
static gr_var *gtr_b_linscan_fwd(gr_graph *g, gr_var *const *x, void *u) {
    gr_var *y = gr_cumprod(x[0], *(int *)u), *r = NULL;
    (void)g;
    return gr_rop(1, &y, 1, x, x + 1, &r, NULL) == GR_OK ? r : NULL;
}
/* both with an exact zero in x: x (6,) with x[3] = z[0] */
static gr_var *gtr_b_linscan_zero(gr_graph *g, gr_var *const *x, void *u) {
    gr_var *xz = gr_set_subtensor(gr_slice(x[0], 0, 3, 4, 1), x[2]), *y = gr_cumprod(xz, 0), *r = NULL;
    (void)g; (void)u;
    if (gr_rop(1, &y, 1, &xz, x + 1, &r, NULL) != GR_OK) return NULL;
    return gr_add(r, gr_grad1(gr_sum(gr_mul(x[1], y)), xz));
}

static gr_var *gtr_b_xent(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_crossentropy(x[0], x[1]); }
/* class ids made inside, one per row of a (4,5), (6,) or (2,3,4) logits */
static gr_var *gtr_xent_ids_of(gr_graph *g, gr_var *z) {
    static const int64_t id1 = 5, id2[4] = { 3, 0, 4, 1 }, id3[6] = { 3, 0, 1, 1, 2, 2 };
    int64_t s4 = 4, s23[2] = { 2, 3 };
    int nd = gr_var_ndim(z);
    return nd == 1 ? gtr_ids(g, 0, NULL, &id1) : nd == 2 ? gtr_ids(g, 1, &s4, id2) : gtr_ids(g, 2, s23, id3);
}
static gr_var *gtr_b_xent_ids(gr_graph *g, gr_var *const *x, void *u) {
    (void)u;
    return gr_crossentropy(x[0], gtr_xent_ids_of(g, x[0]));
}
/* OneHot inside a product: x * OneHot(ids, x), whose derivative is the one-hot matrix */
static gr_var *gtr_b_onehot_mul(gr_graph *g, gr_var *const *x, void *u) {
    gr_var *ce = gr_crossentropy(x[0], gtr_xent_ids_of(g, x[0]));
    (void)u;
    return gr_mul(x[0], gr_node_input(gr_var_owner(ce), 1));
}
/* OneHot alone: no derivative reaches its ref */
static gr_var *gtr_b_onehot(gr_graph *g, gr_var *const *x, void *u) {
    gr_var *ce = gr_crossentropy(x[0], gtr_xent_ids_of(g, x[0]));
    (void)u;
    return gr_node_input(gr_var_owner(ce), 1);
}

GTD_SPECS(gtd_specs_reduce2) = {
    { "ArgMax", "(3,4) axis -1", gtr_b_argmax, &gtr_axm1, 1, { GTD_IN(2, 3, 4, -2, 2) }, GTD_NONDIFF },
    { "ArgMax", "(2,3,4) axis 1", gtr_b_argmax, &gtr_ax1, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GTD_NONDIFF },
    { "LogSumExp", "(3,4) axis 0", gtr_b_lse, &gtr_ax0, 1, { GTD_IN(2, 3, 4, -3, 3) }, GTD_GRADGRAD },
    { "LogSumExp", "(3,4) axis -1", gtr_b_lse, &gtr_axm1, 1, { GTD_IN(2, 3, 4, -3, 3) }, GTD_GRADGRAD },
    { "LogSumExp", "(2,3,4) axis -2", gtr_b_lse, &gtr_axm2, 1, { GTD_IN3(2, 3, 4, -3, 3) }, 0 },
    { "LogSumExp", "(5,) near 1e3", gtr_b_lse, &gtr_ax0, 1, { GTD_IN(1, 5, 0, 995, 1005) }, GTD_F64_ONLY },
    { "CumSum", "(3,4) axis 1", gtr_b_cumsum, &gtr_ax1, 1, { GTD_IN(2, 3, 4, -2, 2) }, GTD_GRADGRAD },
    { "CumSum", "(3,4) axis -2", gtr_b_cumsum, &gtr_axm2, 1, { GTD_IN(2, 3, 4, -2, 2) }, 0 },
    { "CumSum", "(2,3,4) axis -1", gtr_b_cumsum, &gtr_axm1, 1, { GTD_IN3(2, 3, 4, -2, 2) }, 0 },
    { "CumProd", "(3,4) axis 1", gtr_b_cumprod, &gtr_ax1, 1, { GTD_IN(2, 3, 4, 0.5, 1.5) }, GTD_GRADGRAD },
    { "CumProd", "(3,4) axis -2, both signs", gtr_b_cumprod, &gtr_axm2, 1, { GTD_IN(2, 3, 4, -1.5, 1.5) }, GTD_GRADGRAD },
    { "CumProd", "(2,3,4) axis -1", gtr_b_cumprod, &gtr_axm1, 1, { GTD_IN3(2, 3, 4, -1.5, 1.5) }, 0 },
    { "CumProd", "(6,), a zero at 2", gtr_b_cumprod_zero1, NULL, 2, { GTD_IN(1, 6, 0, -1.5, 1.5), GTD_IN(1, 1, 0, 0, 0) }, GTD_GRADGRAD },
    { "CumProd", "(6,), zeros at 1 and 4", gtr_b_cumprod_zero2, NULL, 2, { GTD_IN(1, 6, 0, -1.5, 1.5), GTD_IN(1, 2, 0, 0, 0) }, GTD_GRADGRAD },
    { "CumProd", "(3,4) axis 1, a zero in every row", gtr_b_cumprod_zcol, &gtr_ax1, 2, { GTD_IN(2, 3, 4, -1.5, 1.5), GTD_IN(1, 3, 0, 0, 0) }, 0 },
    { "CumProd", "(3,4) axis 0, a zero in a column", gtr_b_cumprod_zcol, &gtr_ax0, 2, { GTD_IN(2, 3, 4, -1.5, 1.5), GTD_IN(1, 3, 0, 0, 0) }, 0 },
    { "LinScan", "reverse: d/dx sum(w cumprod(x)), axis 1", gtr_b_linscan_rev, &gtr_ax1, 2,
      { GTD_IN(2, 3, 4, -1.5, 1.5), GTD_IN(2, 3, 4, -1, 1) }, GTD_GRADGRAD },
    { "LinScan", "forward: Rop(cumprod(x), x, v), axis -1", gtr_b_linscan_fwd, &gtr_axm1, 2,
      { GTD_IN(2, 3, 4, -1.5, 1.5), GTD_IN(2, 3, 4, -1, 1) }, GTD_GRADGRAD },
    { "LinScan", "both ways, axis 0 of (2,3,4)", gtr_b_linscan_rev, &gtr_ax0, 2,
      { GTD_IN3(2, 3, 4, -1.5, 1.5), GTD_IN3(2, 3, 4, -1, 1) }, 0 },
    { "LinScan", "both, with a zero in x", gtr_b_linscan_zero, NULL, 3,
      { GTD_IN(1, 6, 0, -1.5, 1.5), GTD_IN(1, 6, 0, -1, 1), GTD_IN(1, 1, 0, 0, 0) }, GTD_GRADGRAD },
    { "CrossEntropy", "(4,5) soft labels", gtr_b_xent, NULL, 2, { GTD_IN(2, 4, 5, -3, 3), GTD_IN(2, 4, 5, 0, 1) }, GTD_GRADGRAD },
    { "CrossEntropy", "(4,5) class ids", gtr_b_xent_ids, NULL, 1, { GTD_IN(2, 4, 5, -3, 3) }, GTD_GRADGRAD },
    { "CrossEntropy", "(6,) one class id", gtr_b_xent_ids, NULL, 1, { GTD_IN(1, 6, 0, -3, 3) }, 0 },
    { "CrossEntropy", "(2,3,4) class ids", gtr_b_xent_ids, NULL, 1, { GTD_IN3(2, 3, 4, -3, 3) }, 0 },
    { "CrossEntropy", "(4,5) ids, logits near 1e3", gtr_b_xent_ids, NULL, 1, { GTD_IN(2, 4, 5, 995, 1005) }, GTD_F64_ONLY },
    { "CrossEntropy", "(4,5) soft labels, logits of magnitude 1e3", gtr_b_xent, NULL, 2,
      { GTD_IN(2, 4, 5, -1000, 1000), GTD_IN(2, 4, 5, 0, 1) }, GTD_F64_ONLY },
    { "OneHot", "x * OneHot(ids, x)", gtr_b_onehot_mul, NULL, 1, { GTD_IN(2, 4, 5, -2, 2) }, 0 },
    { "OneHot", "OneHot(ids, x) alone", gtr_b_onehot, NULL, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GTD_NONDIFF },
    GTD_END
};

/* ==== gradients and R-ops against plain C =========================================================== */

/* the gradient and the R-op of cumprod along each axis of inputs with zeros (one, two, all), against
   the brute-force derivative, in F64 and F32 */
TEST(test_cumprod_derivatives_zero_safe) {
    static const double rows[4][5] = { { 1.5, -2, 0.5, 3, -1 }, { 2, 0, 3, -1, 0.5 }, { 0, 2, 0, 4, 1 }, { 0, 0, 0, 0, 0 } };
    int64_t s45[2] = { 4, 5 };
    int d, a;
    gtf_rng rng;
    rng.s = 611;
    for (d = 0; d < 2; d++)
        for (a = -2; a < 2; a++) {
            gr_dtype dt = gtr_dtypes[d];
            gr_graph *g = gr_graph_new();
            gr_var *x = gr_matrix(g, dt, "x"), *w = gr_matrix(g, dt, "w"), *ins[2], *y, *gx, *r = NULL, *outs[2];
            gr_array *arr[2], *wx = gr_array_new(GR_F64, 2, s45), *wg = gr_array_new(GR_F64, 2, s45), *want_g, *want_r;
            const gr_array *res[2];
            gr_fn *f;
            int64_t k;
            char label[96];
            arr[0] = gr_array_new(dt, 2, s45);
            for (k = 0; k < 20; k++) gr_array_set(arr[0], k, rows[k / 5][k % 5]);
            arr[1] = gtf_random(&rng, dt, 2, s45, -1, 1);
            for (k = 0; k < 20; k++) { ((double *)wx->data)[k] = gr_array_get(arr[0], k); ((double *)wg->data)[k] = gr_array_get(arr[1], k); }
            want_g = gtr_cumprod_deriv_ref(wx, wg, a < 0 ? a + 2 : a, 0);
            want_r = gtr_cumprod_deriv_ref(wx, wg, a < 0 ? a + 2 : a, 1);
            y = gr_cumprod(x, a);
            gx = gr_grad1(gr_sum(gr_mul(w, y)), x);
            CHECK_STATUS(gr_rop(1, &y, 1, &x, &w, &r, NULL), GR_OK);
            ins[0] = x; ins[1] = w;
            outs[0] = gx; outs[1] = r;
            f = gr_function(2, ins, 2, outs, NULL);
            snprintf(label, sizeof label, "cumprod axis %d, %s", a, gr_dtype_name(dt));
            CHECK_MSG(f != NULL, "%s: %s", label, gr_graph_message(g));
            if (f && gr_call(f, (const gr_array *const *)arr, res) == GR_OK) {
                gtf_same(res[0], dt, want_g, gtr_tol(dt), label);
                gtf_same(res[1], dt, want_r, gtr_tol(dt), label);
                for (k = 0; k < 20; k++) CHECK(isfinite(gr_array_get(res[0], k)) && isfinite(gr_array_get(res[1], k)));
            } else CHECK_MSG(0, "%s: %s", label, f ? gr_fn_message(f) : "");
            gr_fn_free(f);
            gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(wx); gr_array_free(wg);
            gr_array_free(want_g); gr_array_free(want_r);
            gr_graph_free(g);
        }
}

/* gr_verify_grad at points with exact zeros, which the random specs never draw */
static gr_var *gtr_b_cumprod_axis1(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_cumprod(x[0], 1); }
TEST(test_cumprod_verify_grad_at_zeros) {
    static const double v[12] = { 0, 1.5, -2, 0.5, 2, 0, 3, 0, -1, 0.5, 0.75, 0 };
    int64_t s34[2] = { 3, 4 };
    int d;
    for (d = 0; d < 2; d++) {
        gr_array *x = gr_array_new(gtr_dtypes[d], 2, s34);
        const gr_array *pt[1];
        gr_gradient_error e;
        int64_t k;
        for (k = 0; k < 12; k++) gr_array_set(x, k, v[k]);
        pt[0] = x;
        CHECK_STATUS(gr_verify_grad(gtr_b_cumprod_axis1, NULL, 1, pt, NULL, &e), GR_OK);
        gr_array_free(x);
    }
}

/* the Hessian of sum(cumprod(x)) (LinScan and the view updates batched) against the brute force,
   with zeros; and the Jacobian of cumprod */
TEST(test_cumprod_jacobian_hessian) {
    static const double v[5] = { 1.5, 0, -2, 0.5, 0 };
    int64_t n = 5, i, l;
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_cumprod(x, 0), *H = NULL, *J = NULL, *outs[2];
    gr_array *xa = gr_array_from(GR_F64, 1, &n, v);
    const gr_array *arr[1], *res[2];
    gr_fn *f;
    CHECK_STATUS(gr_hessian(gr_sum(y), 1, &x, &H, NULL), GR_OK);
    CHECK_STATUS(gr_jacobian(y, 1, &x, &J, NULL), GR_OK);
    outs[0] = H; outs[1] = J;
    f = gr_function(1, &x, 2, outs, NULL);
    arr[0] = xa;
    CHECK(f != NULL);
    if (f) {
        CHECK_STATUS(gr_call(f, arr, res), GR_OK);
        for (i = 0; i < n; i++)
            for (l = 0; l < n; l++) {
                CHECK_NEAR(gr_array_get(res[0], i * n + l), gtr_d2sumcumprod(v, n, i, l), 1e-14);
                CHECK_NEAR(gr_array_get(res[1], i * n + l), gtr_dcumprod(v, i, l), 1e-14);   /* J[k, i] = dy_k/dx_i */
            }
    }
    gr_fn_free(f);
    gr_array_free(xa);
    gr_graph_free(g);
}

/* cumsum: the gradient is the reverse cumulative sum, the Jacobian a triangle of ones along the axis */
TEST(test_cumsum_jacobian) {
    int64_t s23[2] = { 2, 3 }, i, j, k, l;
    int a;
    for (a = 0; a < 2; a++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_matrix(g, GR_F64, "x"), *J = NULL;
        gr_array *xa = gr_array_new(GR_F64, 2, s23), *res = NULL;
        const gr_array *arr[1];
        arr[0] = xa;
        CHECK_STATUS(gr_jacobian(gr_cumsum(x, a - 2), 1, &x, &J, NULL), GR_OK);
        if (gtr_call1(g, 1, &x, arr, J, &res, "cumsum Jacobian")) {
            CHECK_EQ_INT(res->ndim, 4);
            for (i = 0; i < 2; i++) for (j = 0; j < 3; j++) for (k = 0; k < 2; k++) for (l = 0; l < 3; l++) {
                double want = a == 0 ? (j == l && k <= i) : (i == k && l <= j);
                CHECK_NEAR(gr_array_get(res, ((i * 3 + j) * 2 + k) * 3 + l), want, 0);
            }
        }
        gr_array_free(res);
        gr_array_free(xa);
        gr_graph_free(g);
    }
}

/* logsumexp: gradient softmax, R-op sum(softmax v), Jacobian softmax along the removed axis;
   1e3-sized inputs stay finite */
TEST(test_logsumexp_derivatives) {
    static const double v[6] = { 1000, 1001, 999, -3, 0, 2 };
    static const double t[6] = { 1, -1, 0.5, 2, 0.25, -0.5 };
    int64_t s23[2] = { 2, 3 }, i, j, k;
    int a;
    for (a = -2; a < 2; a++) {
        int pos = a < 0 ? a + 2 : a;
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_matrix(g, GR_F64, "x"), *tv = gr_matrix(g, GR_F64, "v"), *y = gr_logsumexp(x, a), *gx, *r = NULL, *J = NULL, *ins[2];
        gr_array *arr[2], *rg = NULL, *rr = NULL, *rj = NULL;
        gx = gr_grad1(gr_sum(y), x);
        CHECK_STATUS(gr_rop(1, &y, 1, &x, &tv, &r, NULL), GR_OK);
        CHECK_STATUS(gr_jacobian(y, 1, &x, &J, NULL), GR_OK);
        arr[0] = gr_array_from(GR_F64, 2, s23, v);
        arr[1] = gr_array_from(GR_F64, 2, s23, t);
        ins[0] = x; ins[1] = tv;
        if (gtr_call1(g, 2, ins, (const gr_array *const *)arr, gx, &rg, "lse grad") &&
            gtr_call1(g, 2, ins, (const gr_array *const *)arr, r, &rr, "lse rop") &&
            gtr_call1(g, 2, ins, (const gr_array *const *)arr, J, &rj, "lse jacobian")) {
            int64_t nslice = pos == 0 ? 3 : 2, len = pos == 0 ? 2 : 3;
            for (i = 0; i < nslice; i++) {           /* slice i: elements e(i, k) of x */
                double lse = -INFINITY, rop = 0;
                for (k = 0; k < len; k++) lse = gtr_logaddexp(lse, v[pos == 0 ? k * 3 + i : i * 3 + k]);
                for (k = 0; k < len; k++) {
                    int64_t e = pos == 0 ? k * 3 + i : i * 3 + k;
                    double sm = exp(v[e] - lse);
                    CHECK_NEAR(gr_array_get(rg, e), sm, 1e-12);          /* logits near 1e3 carry ~1e-13 */
                    CHECK_NEAR(gr_array_get(rj, i * 6 + e), sm, 1e-12);
                    for (j = 0; j < 6; j++)          /* other slices' elements: 0 */
                        if ((pos == 0 ? j % 3 : j / 3) != i) CHECK_NEAR(gr_array_get(rj, i * 6 + j), 0, 0);
                    rop += sm * t[e];
                }
                CHECK_NEAR(gr_array_get(rr, i), rop, 1e-12);
            }
        }
        gr_array_free(rg); gr_array_free(rr); gr_array_free(rj);
        gr_array_free(arr[0]); gr_array_free(arr[1]);
        gr_graph_free(g);
    }
}

/* argmax: a zero gradient (not a disconnection), no tangent */
TEST(test_argmax_derivatives) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_matrix(g, GR_F64, "x"), *v = gr_matrix(g, GR_F64, "v"), *am = gr_argmax_axis(x, 1), *gx, *r = NULL;
    gr_rop_opts ro;
    int64_t s23[2] = { 2, 3 }, k;
    double xv[6] = { 1, 5, 2, 7, 0, 7 };
    gr_array *xa = gr_array_from(GR_F64, 2, s23, xv), *res = NULL;
    const gr_array *arr[1];
    arr[0] = xa;
    gx = gr_grad1(gr_sum(gr_mul(gr_cast(am, GR_F64), gr_sum_axis(x, 1))), x);   /* the cast path counts, the argmax path adds 0 */
    CHECK(gx != NULL);
    if (gtr_call1(g, 1, &x, arr, gx, &res, "argmax gradient"))
        for (k = 0; k < 6; k++) CHECK_NEAR(gr_array_get(res, k), k < 3 ? 1 : 0, 0);
    gr_array_free(res);
    gx = gr_grad1(gr_sum(gr_cast(am, GR_F64)), x);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    if (gtr_call1(g, 1, &x, arr, gx, &res, "argmax gradient")) for (k = 0; k < 6; k++) CHECK(gr_array_get(res, k) == 0);
    gr_array_free(res);
    CHECK_STATUS(gr_rop(1, &am, 1, &x, &v, &r, NULL), GR_ERR_DISCONNECTED_INPUT);
    CHECK(r == NULL);
    gr_graph_clear_error(g);
    memset(&ro, 0, sizeof ro);
    ro.disconnected_outputs = GR_IGNORE;
    CHECK_STATUS(gr_rop(1, &am, 1, &x, &v, &r, &ro), GR_OK);
    CHECK(r != NULL && gr_var_dtype(r) == GR_F64);
    gr_array_free(xa);
    gr_graph_free(g);
}

/* crossentropy: gradients (softmax - onehot)/N, (softmax sum t - t)/N and -log_softmax/N against C;
   the ids are disconnected; float labels are not */
TEST(test_crossentropy_derivatives) {
    static const double zv[12] = { 1000, 1001, 999, 998, -2, 0.5, 1, 3, 0, 0, 0, 0 };
    static const double tv[12] = { 0.5, 0.5, 0, 0, 0.1, 0.2, 0.3, 0.1, 1, 0, 0, 0 };
    static const int64_t iv[3] = { 1, 3, 0 };
    int64_t s34[2] = { 3, 4 }, s3 = 3, r, k;
    gr_graph *g = gr_graph_new();
    gr_var *z = gr_matrix(g, GR_F64, "z"), *t = gr_matrix(g, GR_F64, "t"), *y = gr_vector(g, GR_I64, "y"), *ins[3];
    gr_var *ce_t = gr_crossentropy(z, t), *ce_y = gr_crossentropy(z, y), *wrt[2], *gr2[2], *gy = NULL, *outs[4];
    gr_array *arr[3];
    const gr_array *res[4];
    gr_fn *f;
    gr_grad_opts go;
    wrt[0] = z; wrt[1] = t;
    CHECK_STATUS(gr_grad(ce_t, 2, wrt, gr2, NULL), GR_OK);
    outs[0] = gr2[0]; outs[1] = gr2[1]; outs[2] = gr_grad1(ce_y, z);
    /* the ids are disconnected: an error by default, zeros when asked */
    CHECK_STATUS(gr_grad(ce_y, 1, &y, &gy, NULL), GR_ERR_DISCONNECTED_INPUT);
    gr_graph_clear_error(g);
    memset(&go, 0, sizeof go);
    go.disconnected_inputs = GR_IGNORE;
    CHECK_STATUS(gr_grad(ce_y, 1, &y, &gy, &go), GR_OK);
    outs[3] = gy;
    ins[0] = z; ins[1] = t; ins[2] = y;
    arr[0] = gr_array_from(GR_F64, 2, s34, zv);
    arr[1] = gr_array_from(GR_F64, 2, s34, tv);
    arr[2] = gr_array_from(GR_I64, 1, &s3, iv);
    f = gr_function(3, ins, 4, outs, NULL);
    CHECK_MSG(f != NULL, "%s", gr_graph_message(g));
    if (f && gr_call(f, (const gr_array *const *)arr, res) == GR_OK) {
        for (r = 0; r < 3; r++) {
            double lse = -INFINITY, tsum = 0;
            for (k = 0; k < 4; k++) { lse = gtr_logaddexp(lse, zv[r * 4 + k]); tsum += tv[r * 4 + k]; }
            for (k = 0; k < 4; k++) {
                double sm = exp(zv[r * 4 + k] - lse);
                CHECK_NEAR(gr_array_get(res[0], r * 4 + k), (sm * tsum - tv[r * 4 + k]) / 3, 1e-12);
                CHECK_NEAR(gr_array_get(res[1], r * 4 + k), (lse - zv[r * 4 + k]) / 3, 1e-13);
                CHECK_NEAR(gr_array_get(res[2], r * 4 + k), (sm - (iv[r] == k)) / 3, 1e-12);
            }
        }
        CHECK_EQ_INT(res[3]->ndim, 1);
        for (k = 0; k < 3; k++) CHECK(gr_array_get(res[3], k) == 0);
    } else CHECK_MSG(0, "%s", f ? gr_fn_message(f) : "");
    gr_fn_free(f);
    gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(arr[2]);
    gr_graph_free(g);
}

/* the Hessian of crossentropy with ids: block r is (diag(s_r) - s_r s_r^T) / N */
TEST(test_crossentropy_hessian) {
    static const double zv[6] = { 0.5, -1, 2, 1000, 999, 1001 };
    static const int64_t iv[2] = { 2, 0 };
    int64_t s23[2] = { 2, 3 }, s2 = 2, a, b;
    gr_graph *g = gr_graph_new();
    gr_var *z = gr_matrix(g, GR_F64, "z"), *y = gtr_ids(g, 1, &s2, iv), *H = NULL;
    gr_array *za = gr_array_from(GR_F64, 2, s23, zv), *res = NULL;
    const gr_array *arr[1];
    arr[0] = za;
    CHECK_STATUS(gr_hessian(gr_crossentropy(z, y), 1, &z, &H, NULL), GR_OK);
    if (gtr_call1(g, 1, &z, arr, H, &res, "crossentropy Hessian")) {
        double s[6];
        int64_t r, k;
        for (r = 0; r < 2; r++) {
            double lse = -INFINITY;
            for (k = 0; k < 3; k++) lse = gtr_logaddexp(lse, zv[r * 3 + k]);
            for (k = 0; k < 3; k++) s[r * 3 + k] = exp(zv[r * 3 + k] - lse);
        }
        for (a = 0; a < 6; a++)
            for (b = 0; b < 6; b++) {
                double want = a / 3 != b / 3 ? 0 : ((a == b ? s[a] : 0) - s[a] * s[b]) / 2;
                CHECK_NEAR(gr_array_get(res, a * 6 + b), want, 1e-12);
            }
    }
    gr_array_free(res);
    gr_array_free(za);
    gr_graph_free(g);
}

/* softmax and log_softmax along negative axes are the same ops as along the positive ones, values
   and derivatives (the axis is normalised when the node is built) */
TEST(test_softmax_negative_axes) {
    int64_t s234[3] = { 2, 3, 4 };
    int a, lg;
    gtf_rng rng;
    rng.s = 612;
    for (lg = 0; lg < 2; lg++)
        for (a = -3; a < 0; a++) {
            gr_var *(*op)(gr_var *, int) = lg ? gr_log_softmax : gr_softmax;
            gr_graph *g = gr_graph_new();
            gr_var *x = gr_tensor(g, GR_F64, 3, NULL, "x"), *w = gr_tensor(g, GR_F64, 3, NULL, "w"), *ins[2], *outs[6], *rn = NULL, *rp = NULL;
            gr_var *yn = op(x, a), *yp = op(x, a + 3);
            gr_array *arr[2];
            const gr_array *res[6];
            gr_fn *f;
            int64_t k;
            CHECK_STATUS(gr_rop(1, &yn, 1, &x, &w, &rn, NULL), GR_OK);
            CHECK_STATUS(gr_rop(1, &yp, 1, &x, &w, &rp, NULL), GR_OK);
            outs[0] = yn; outs[1] = yp;
            outs[2] = gr_grad1(gr_sum(gr_mul(w, yn)), x);
            outs[3] = gr_grad1(gr_sum(gr_mul(w, yp)), x);
            outs[4] = rn; outs[5] = rp;
            ins[0] = x; ins[1] = w;
            arr[0] = gtf_random(&rng, GR_F64, 3, s234, -3, 3);
            arr[1] = gtf_random(&rng, GR_F64, 3, s234, -1, 1);
            f = gr_function(2, ins, 6, outs, NULL);
            CHECK(f != NULL);
            if (f && gr_call(f, (const gr_array *const *)arr, res) == GR_OK) {
                for (k = 0; k < 24; k++) {
                    CHECK(gr_array_get(res[0], k) == gr_array_get(res[1], k));
                    CHECK(gr_array_get(res[2], k) == gr_array_get(res[3], k));
                    CHECK(gr_array_get(res[4], k) == gr_array_get(res[5], k));
                }
            } else CHECK_MSG(0, "negative axes: %s", f ? gr_fn_message(f) : gr_graph_message(g));
            gr_fn_free(f);
            gr_array_free(arr[0]); gr_array_free(arr[1]);
            gr_graph_free(g);
        }
}

/* ==== the _axes reductions ========================================================================== */

/* gr_prod_axes with keepdims over several axes with zeros: the zero-safe gradient (one zero: the
   product of the others; two: 0), R-op and Jacobian; before the fix, counting the zeros summed a
   BOOL tensor and aborted */
TEST(test_prod_axes_gradient_with_zeros) {
    static const double v[12] = { 2, 0, 3, 1.5, 0, 0, 4, 0.5, -1, 2, 0.5, 3 };
    static const int sets[3][3] = { { 1, -1 }, { 2, 0, 2 }, { 1, 0 } };
    int64_t s232[3] = { 2, 3, 2 };
    int sidx, keep;
    for (sidx = 0; sidx < 3; sidx++)
        for (keep = 0; keep < 2; keep++) {
            gr_graph *g = gr_graph_new();
            gr_var *x = gr_tensor(g, GR_F64, 3, NULL, "x"), *w = gr_tensor(g, GR_F64, 3, NULL, "w");
            gr_var *y = gr_prod_axes(x, sets[sidx][0], sets[sidx] + 1, keep), *gx, *r = NULL, *ins[2];
            gr_array *arr[2], *rg = NULL, *rr = NULL;
            uint32_t mask = 0;
            int j;
            for (j = 1; j <= sets[sidx][0]; j++) mask |= 1u << (sets[sidx][j] < 0 ? sets[sidx][j] + 3 : sets[sidx][j]);
            gx = gr_grad1(gr_sum(y), x);
            CHECK_STATUS(gr_rop(1, &y, 1, &x, &w, &r, NULL), GR_OK);
            arr[0] = gr_array_from(GR_F64, 3, s232, v);
            arr[1] = gr_array_new(GR_F64, 3, s232);
            for (j = 0; j < 12; j++) gr_array_set(arr[1], j, 1);      /* the R-op along ones: sum of the partials */
            ins[0] = x; ins[1] = w;
            if (gtr_call1(g, 2, ins, (const gr_array *const *)arr, gx, &rg, "prod_axes gradient") &&
                gtr_call1(g, 2, ins, (const gr_array *const *)arr, r, &rr, "prod_axes R-op")) {
                int64_t e, f2;
                double rop_total = 0, rsum = 0;
                for (e = 0; e < 12; e++) {            /* d prod / d x_e = product of the others in its slice */
                    int64_t ei[3] = { e / 6, (e / 2) % 3, e % 2 };
                    double p = 1;
                    for (f2 = 0; f2 < 12; f2++) {
                        int64_t fi[3] = { f2 / 6, (f2 / 2) % 3, f2 % 2 };
                        int same = 1, ax;
                        for (ax = 0; ax < 3; ax++) if (!(mask & (1u << ax)) && fi[ax] != ei[ax]) same = 0;
                        if (same && f2 != e) p *= v[f2];
                    }
                    CHECK_NEAR(gr_array_get(rg, e), p, 1e-15);
                    rop_total += p;
                }
                for (e = 0; e < rr->size; e++) rsum += gr_array_get(rr, e);
                CHECK_NEAR(rsum, rop_total, 1e-14);
            }
            gr_array_free(rg); gr_array_free(rr);
            gr_array_free(arr[0]); gr_array_free(arr[1]);
            gr_graph_free(g);
        }
}

/* gr_max_axes / gr_min_axes with keepdims: ties get the full cotangent, the R-op sums their
   tangents (adjoint), the result's static shape keeps the axes */
TEST(test_extrema_axes_keepdims) {
    static const double v[12] = { 1, 5, 5, 0, 2, 2, -1, -1, 3, 0, -1, 4 };
    static const double t[12] = { 1, 10, 100, 2, 20, 200, 4, 30, 300, 5, 40, 400 };
    static const int axes[2] = { -1, 0 };
    int64_t s43[2] = { 4, 3 }, w13[2] = { 1, 3 };
    int mx;
    for (mx = 0; mx < 2; mx++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_tensor(g, GR_F64, 2, s43, "x"), *tv = gr_tensor(g, GR_F64, 2, s43, "v"), *ins[2];
        gr_var *y = mx ? gr_min_axes(x, 1, axes + 1, 1) : gr_max_axes(x, 1, axes + 1, 1), *y2, *gx, *r = NULL;
        gr_array *arr[2], *rg = NULL, *rr = NULL, *ry = NULL;
        int64_t c, k;
        gtf_static_shape_is(y, 2, w13, "keepdims static shape");
        y2 = mx ? gr_min_axes(x, 2, axes, 1) : gr_max_axes(x, 2, axes, 1);
        CHECK_EQ_INT(gr_var_ndim(y2), 2);
        gx = gr_grad1(gr_sum(gr_mul(y, y)), x);
        CHECK_STATUS(gr_rop(1, &y, 1, &x, &tv, &r, NULL), GR_OK);
        arr[0] = gr_array_from(GR_F64, 2, s43, v);
        arr[1] = gr_array_from(GR_F64, 2, s43, t);
        ins[0] = x; ins[1] = tv;
        if (gtr_call1(g, 2, ins, (const gr_array *const *)arr, y, &ry, "extremum") &&
            gtr_call1(g, 2, ins, (const gr_array *const *)arr, gx, &rg, "extremum gradient") &&
            gtr_call1(g, 2, ins, (const gr_array *const *)arr, r, &rr, "extremum R-op")) {
            for (c = 0; c < 3; c++) {
                double best = v[c], tsum = 0;
                for (k = 1; k < 4; k++) best = mx ? (v[k * 3 + c] < best ? v[k * 3 + c] : best) : (v[k * 3 + c] > best ? v[k * 3 + c] : best);
                CHECK_NEAR(gr_array_get(ry, c), best, 0);
                for (k = 0; k < 4; k++) {
                    int hit = v[k * 3 + c] == best;
                    CHECK_NEAR(gr_array_get(rg, k * 3 + c), hit ? 2 * best : 0, 0);
                    if (hit) tsum += t[k * 3 + c];
                }
                CHECK_NEAR(gr_array_get(rr, c), tsum, 0);
            }
        }
        gr_array_free(rg); gr_array_free(rr); gr_array_free(ry);
        gr_array_free(arr[0]); gr_array_free(arr[1]);
        gr_graph_free(g);
    }
}

/* ==== errors ======================================================================================== */

TEST(test_reduce2_errors) {
    static gr_var *(*const ops[4])(gr_var *, int) = { gr_argmax_axis, gr_logsumexp, gr_cumsum, gr_cumprod };
    static const char *const names[4] = { "gr_argmax_axis", "gr_logsumexp", "gr_cumsum", "gr_cumprod" };
    int k;
    for (k = 0; k < 4; k++) {
        gr_graph *g = gr_graph_new();
        gr_var *m = gr_matrix(g, GR_F64, "m");
        CHECK(ops[k](NULL, 0) == NULL);                                     /* NULL: silently */
        CHECK_STATUS(gr_graph_status(g), GR_OK);
        CHECK(ops[k](gr_scalar(g, GR_F64, "s"), 0) == NULL);                /* 0-d: no axis */
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        CHECK_CONTAINS(gr_graph_message(g), names[k]);
        CHECK_CONTAINS(gr_graph_message(g), "'s'");
        gr_graph_clear_error(g);
        CHECK(ops[k](m, 2) == NULL);                                        /* axis out of range, either end */
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        CHECK_CONTAINS(gr_graph_message(g), "axis 2");
        gr_graph_clear_error(g);
        CHECK(ops[k](m, -3) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        CHECK_CONTAINS(gr_graph_message(g), "axis -3");
        gr_graph_clear_error(g);
        CHECK(ops[k](gr_disconnected_like(m), 0) == NULL);                  /* a gradient marker */
        CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
        gr_graph_clear_error(g);
        CHECK(ops[k](m, -2) != NULL && ops[k](m, 1) != NULL);
        gr_graph_free(g);
    }
    {   /* dtypes: argmax is I64, logsumexp of ints F64, cumulative ops of bools I64 */
        gr_graph *g = gr_graph_new();
        gr_var *b = gr_vector(g, GR_BOOL, "b"), *i = gr_vector(g, GR_I64, "i"), *f = gr_vector(g, GR_F32, "f");
        CHECK(gr_var_dtype(gr_argmax_axis(f, 0)) == GR_I64);
        CHECK(gr_var_dtype(gr_logsumexp(i, 0)) == GR_F64);
        CHECK(gr_var_dtype(gr_logsumexp(f, 0)) == GR_F32);
        CHECK(gr_var_dtype(gr_cumsum(b, 0)) == GR_I64 && gr_var_dtype(gr_cumprod(b, 0)) == GR_I64);
        CHECK(gr_var_dtype(gr_cumsum(f, 0)) == GR_F32 && gr_var_dtype(gr_cumprod(i, 0)) == GR_I64);
        CHECK_STATUS(gr_graph_status(g), GR_OK);
        gr_graph_free(g);
    }
}

TEST(test_crossentropy_errors) {
    int64_t s34[2] = { 3, 4 }, s4 = 4, s24[2] = { 2, 4 }, s3 = 3;
    gr_graph *g = gr_graph_new();
    gr_var *z = gr_tensor(g, GR_F64, 2, s34, "z"), *zd = gr_matrix(g, GR_F64, "zd");
    CHECK(gr_crossentropy(NULL, z) == NULL && gr_crossentropy(z, NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    /* ndim: 0-d logits, ids of the wrong ndim, label rows of the wrong ndim */
    CHECK(gr_crossentropy(gr_scalar(g, GR_F64, "s"), gr_scalar(g, GR_I64, "i")) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_crossentropy");
    gr_graph_clear_error(g);
    CHECK(gr_crossentropy(z, gr_matrix(g, GR_I64, "ids")) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_graph_message(g), "'ids'");
    gr_graph_clear_error(g);
    CHECK(gr_crossentropy(z, gr_vector(g, GR_F64, "t")) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    gr_graph_clear_error(g);
    /* static shapes that conflict: named with their shapes */
    CHECK(gr_crossentropy(z, gr_tensor(g, GR_I64, 1, &s4, "y4")) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "'y4' (4)");
    CHECK_CONTAINS(gr_graph_message(g), "'z' (3,4)");
    gr_graph_clear_error(g);
    CHECK(gr_crossentropy(z, gr_tensor(g, GR_F64, 2, s24, "t24")) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "'t24' (2,4)");
    gr_graph_clear_error(g);
    CHECK(gr_crossentropy(gr_disconnected_like(z), gr_vector(g, GR_I64, "y")) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    gr_graph_clear_error(g);
    {   /* call-time shapes that conflict */
        gr_var *y = gr_vector(g, GR_I64, "y"), *t = gr_matrix(g, GR_F64, "t"), *ins[2];
        gr_array *arr[2];
        int64_t ids3[3] = { 0, 1, 2 };
        ins[0] = zd; ins[1] = y;
        arr[0] = gr_array_new(GR_F64, 2, s24);
        arr[1] = gr_array_from(GR_I64, 1, &s3, ids3);
        gtf_expect_call_error(g, 2, ins, (const gr_array *const *)arr, gr_crossentropy(zd, y), GR_ERR_SHAPE, "ids (3,) for logits (2,4)");
        gr_array_free(arr[1]);
        ins[1] = t;
        arr[1] = gr_array_new(GR_F64, 2, s34);
        gtf_expect_call_error(g, 2, ins, (const gr_array *const *)arr, gr_crossentropy(zd, t), GR_ERR_SHAPE, "labels (3,4) for logits (2,4)");
        gr_array_free(arr[0]); gr_array_free(arr[1]);
    }
    {   /* dtypes: float32 stays float32, float64 labels or int logits give float64 */
        gr_var *zf = gr_matrix(g, GR_F32, "zf"), *zi = gr_matrix(g, GR_I64, "zi");
        CHECK(gr_var_dtype(gr_crossentropy(zf, gr_vector(g, GR_I64, "y"))) == GR_F32);
        CHECK(gr_var_dtype(gr_crossentropy(zf, gr_matrix(g, GR_F32, "t"))) == GR_F32);
        CHECK(gr_var_dtype(gr_crossentropy(zf, gr_matrix(g, GR_F64, "t"))) == GR_F64);
        CHECK(gr_var_dtype(gr_crossentropy(zi, gr_matrix(g, GR_BOOL, "t"))) == GR_F64);
        CHECK(gr_var_ndim(gr_crossentropy(zf, gr_vector(g, GR_I64, "y"))) == 0);
        CHECK_STATUS(gr_graph_status(g), GR_OK);
    }
    gr_graph_free(g);
}

SUITE(suite_reduce2) = {
    CASE(test_cumprod_derivatives_zero_safe),
    CASE(test_cumprod_verify_grad_at_zeros),
    CASE(test_cumprod_jacobian_hessian),
    CASE(test_cumsum_jacobian),
    CASE(test_logsumexp_derivatives),
    CASE(test_argmax_derivatives),
    CASE(test_crossentropy_derivatives),
    CASE(test_crossentropy_hessian),
    CASE(test_softmax_negative_axes),
    CASE(test_prod_axes_gradient_with_zeros),
    CASE(test_extrema_axes_keepdims),
    CASE(test_reduce2_errors),
    CASE(test_crossentropy_errors),
    END_SUITE
};
