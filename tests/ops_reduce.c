/* tests/ops_reduce.c: the reductions of ops/reduce.c: Sum, Mean, Prod, Max, Min over any set of
   axes, and along one axis ArgMax, LogSumExp, CumSum, CumProd and LinScan (the linear recurrence
   the derivatives of cumprod run on).
     - values against plain C in F64, F32, I64 and BOOL where the op takes them, every way to name
       the axes (all, one counted from either end, sets, keepdims), empty operands and NaNs, with
       static and call-time shapes;
     - derivative specs of every row (several axis sets, keepdims, 0-d; Prod with masked zeros,
       cumprod with exact zeros); at chosen points: Prod at exact zeros, Max and Min at ties, the
       zero-safe derivatives of cumprod against the brute force, Jacobians and Hessians;
     - the errors of the constructors (axes out of range or repeated, 0-d operands, markers);
     - int64 sums, products and dots wrap modulo 2^64 (suite_ops_reduce). */
#include "ops.h"

/* ==== Sum, Mean, Prod, Max, Min ======================================================================== */


enum { GTS_SUM, GTS_MEAN, GTS_PROD, GTS_MAX, GTS_MIN };
typedef struct gts_red {
    const char *name;
    gr_var *(*all)(gr_var *);
    gr_var *(*axis)(gr_var *, int);
    gr_var *(*axes)(gr_var *, int, const int *, int);
} gts_red;
static const gts_red gts_reds[5] = {
    { "sum", gr_sum, gr_sum_axis, gr_sum_axes },
    { "mean", gr_mean, gr_mean_axis, gr_mean_axes },
    { "prod", gr_prod, gr_prod_axis, gr_prod_axes },
    { "max", gr_max, gr_max_axis, gr_max_axes },
    { "min", gr_min, gr_min_axis, gr_min_axes },
};

/* result dtype of a reduction: sums and products of integers and bools are I64, means float (F64
   for integers), extrema keep the dtype */
static gr_dtype gts_red_dtype(int op, gr_dtype dt) {
    if (op == GTS_MAX || op == GTS_MIN) return dt;
    if (op == GTS_MEAN) return dt == GR_F32 ? GR_F32 : GR_F64;
    return dt == GR_BOOL ? GR_I64 : dt;
}

/* the reduction by a plain loop over x; mask: reduced axes */
static gr_array *gts_reduce_ref(const gr_array *x, uint32_t mask, int keepdims, int op) {
    int64_t oshape[GR_MAX_NDIM], count = 1, k;
    int i, ond = 0;
    gr_dtype odt = gts_red_dtype(op, x->dtype);
    gr_array *want, *cnt;
    for (i = 0; i < x->ndim; i++) {
        if (mask & (1u << i)) { count *= x->shape[i]; if (keepdims) oshape[ond++] = 1; }
        else oshape[ond++] = x->shape[i];
    }
    want = gts_want(odt, ond, oshape);
    cnt = gr_array_new(GR_I64, ond, oshape);       /* elements seen per output, for the first one */
    for (k = 0; k < x->size; k++) {
        int64_t rem = k, o = 0, ostride = 1;
        int j = ond - 1;
        for (i = x->ndim - 1; i >= 0; i--) {       /* x's multi-index, then the output's flat index */
            int64_t xi = rem % x->shape[i];
            rem /= x->shape[i];
            if (mask & (1u << i)) { if (keepdims) j--; continue; }
            o += xi * ostride;
            ostride *= oshape[j--];
        }
        if (want->dtype == GR_I64) {
            int64_t v = gts_int_at(x, k), *w = (int64_t *)want->data + o;
            int first = ((int64_t *)cnt->data)[o]++ == 0;
            switch (op) {
            case GTS_SUM: *w = first ? v : *w + v; break;
            case GTS_PROD: *w = first ? v : *w * v; break;
            case GTS_MAX: *w = first || v > *w ? v : *w; break;
            default: *w = first || v < *w ? v : *w; break;
            }
        } else {
            double v = gr_array_get(x, k), *w = (double *)want->data + o;
            int first = ((int64_t *)cnt->data)[o]++ == 0;
            switch (op) {
            case GTS_SUM: case GTS_MEAN: *w = first ? v : *w + v; break;
            case GTS_PROD: *w = first ? v : *w * v; break;
            case GTS_MAX: if (first || v != v || v > *w) *w = v; break;     /* a NaN, once in, stays */
            default: if (first || v != v || v < *w) *w = v; break;
            }
        }
    }
    for (k = 0; k < want->size; k++) {             /* empty reductions, then the mean's division */
        if (((int64_t *)cnt->data)[k] == 0) {
            if (want->dtype == GR_I64) ((int64_t *)want->data)[k] = op == GTS_PROD ? 1 : 0;
            else ((double *)want->data)[k] = op == GTS_PROD ? 1.0 : op == GTS_MEAN ? NAN : 0.0;
        } else if (op == GTS_MEAN)
            ((double *)want->data)[k] /= (double)count;
    }
    gr_array_free(cnt);
    return want;
}

typedef struct gts_rcase { int ndim; int64_t shape[4]; } gts_rcase;

/* every way to name the axes of one reduction over one shape and dtype */
static void gts_reduce_shape(int op, gr_dtype dt, const gts_rcase *rc, gtf_rng *rng) {
    static const int sets[][4] = { { 2, 0, 1 }, { 2, 0, 2 }, { 2, 1, 2 }, { 2, -1, 0 }, { 3, 0, 1, 2 }, { 2, 1, 3 }, { 3, 3, 0, -2 } };
    const gts_red *R = &gts_reds[op];
    gr_dtype odt = gts_red_dtype(op, dt);
    double tol = gts_tol(odt);
    int dyn;
    for (dyn = 0; dyn < 2; dyn++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gtf_input(g, dt, rc->ndim, rc->shape, dyn, "x");
        gr_array *xa = gts_random(rng, dt, rc->ndim, rc->shape, -1.5, 1.5, -3, 3), *want;
        char label[160], sh[64];
        int a, s, keep;
        uint32_t all = rc->ndim ? (1u << rc->ndim) - 1u : 0u;
        snprintf(sh, sizeof sh, "%s (%d-d%s)", gr_dtype_name(dt), rc->ndim, dyn ? ", unknown shape" : "");
        /* everything, with and without keepdims */
        want = gts_reduce_ref(xa, all, 0, op);
        snprintf(label, sizeof label, "gr_%s %s", R->name, sh);
        gts_expect1(g, x, xa, R->all(x), odt, want, tol, label);
        gr_array_free(want);
        want = gts_reduce_ref(xa, all, 1, op);
        snprintf(label, sizeof label, "gr_%s_axes(n = 0, keepdims) %s", R->name, sh);
        gts_expect1(g, x, xa, R->axes(x, 0, NULL, 1), odt, want, tol, label);
        gr_array_free(want);
        /* one axis, counted from either end */
        for (a = -rc->ndim; a < rc->ndim; a++) {
            int pos = a < 0 ? a + rc->ndim : a;
            want = gts_reduce_ref(xa, 1u << pos, 0, op);
            snprintf(label, sizeof label, "gr_%s_axis(%d) %s", R->name, a, sh);
            gts_expect1(g, x, xa, R->axis(x, a), odt, want, tol, label);
            gr_array_free(want);
        }
        /* sets of axes */
        for (s = 0; s < (int)(sizeof sets / sizeof sets[0]); s++) {
            uint32_t mask = 0;
            int j, ok = 1;
            for (j = 1; j <= sets[s][0]; j++) {
                int ax = sets[s][j] < 0 ? sets[s][j] + rc->ndim : sets[s][j];
                if (ax < 0 || ax >= rc->ndim || (mask & (1u << ax))) ok = 0;
                else mask |= 1u << ax;
            }
            if (!ok) continue;
            for (keep = 0; keep < 2; keep++) {
                want = gts_reduce_ref(xa, mask, keep, op);
                snprintf(label, sizeof label, "gr_%s_axes(set %d, keepdims %d) %s", R->name, s, keep, sh);
                gts_expect1(g, x, xa, R->axes(x, sets[s][0], sets[s] + 1, keep), odt, want, tol, label);
                gr_array_free(want);
            }
        }
        CHECK_STATUS(gr_graph_status(g), GR_OK);
        gr_array_free(xa);
        gr_graph_free(g);
    }
}

static void gts_reduce_op(int op) {
    static const gts_rcase shapes[] = {
        { 3, { 2, 3, 4, 0 } }, { 2, { 3, 4, 0, 0 } }, { 1, { 5, 0, 0, 0 } }, { 0, { 0, 0, 0, 0 } }, { 3, { 3, 1, 4, 0 } },
        { 4, { 4, 5, 6, 7 } }, { 2, { 1, 1, 0, 0 } },
    };
    gtf_rng rng;
    int d, c;
    rng.s = 1000 + (uint64_t)op;
    for (d = 0; d < 4; d++)
        for (c = 0; c < (int)(sizeof shapes / sizeof shapes[0]); c++) gts_reduce_shape(op, gts_dtypes[d], &shapes[c], &rng);
    /* empty operands: sums give 0, products 1, means NaN; max and min of nothing fail at call time */
    for (d = 0; d < 4; d++) {
        gr_dtype dt = gts_dtypes[d], odt = gts_red_dtype(op, dt);
        int64_t s03[2] = { 0, 3 };
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_matrix(g, dt, "x");
        gr_array *xa = gr_array_new(dt, 2, s03), *want;
        char label[128];
        want = gts_reduce_ref(xa, 2u, 0, op);                    /* over the non-empty axis: shape (0,) */
        snprintf(label, sizeof label, "gr_%s_axis(1) of (0,3) %s", gts_reds[op].name, gr_dtype_name(dt));
        gts_expect1(g, x, xa, gts_reds[op].axis(x, 1), odt, want, 0, label);
        gr_array_free(want);
        snprintf(label, sizeof label, "gr_%s_axis(0) of (0,3) %s", gts_reds[op].name, gr_dtype_name(dt));
        if (op == GTS_MAX || op == GTS_MIN) {
            const gr_array *arr[1];
            arr[0] = xa;
            gtf_expect_call_error(g, 1, &x, arr, gts_reds[op].axis(x, 0), GR_ERR_RUNTIME, label);
            gtf_expect_call_error(g, 1, &x, arr, gts_reds[op].all(x), GR_ERR_RUNTIME, label);
        } else {
            want = gts_reduce_ref(xa, 1u, 0, op);
            gts_expect1(g, x, xa, gts_reds[op].axis(x, 0), odt, want, 0, label);
            gr_array_free(want);
            want = gts_reduce_ref(xa, 3u, 0, op);
            snprintf(label, sizeof label, "gr_%s of (0,3) %s", gts_reds[op].name, gr_dtype_name(dt));
            gts_expect1(g, x, xa, gts_reds[op].all(x), odt, want, 0, label);
            gr_array_free(want);
        }
        gr_array_free(xa);
        gr_graph_free(g);
    }
}

TEST(gts_op_Sum) { gts_reduce_op(GTS_SUM); }
TEST(gts_op_Mean) { gts_reduce_op(GTS_MEAN); }
TEST(gts_op_Prod) { gts_reduce_op(GTS_PROD); }

/* NaN anywhere in a slice makes its max and min NaN (first, middle, last element of a row) */
static void gts_extremum_nan(int op) {
    int d;
    for (d = 0; d < 2; d++) {
        gr_dtype dt = gts_dtypes[d];
        int64_t s[2] = { 4, 5 };
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_matrix(g, dt, "x");
        gtf_rng rng;
        gr_array *xa, *want;
        char label[128];
        int a;
        rng.s = 77;
        xa = gtf_random(&rng, dt, 2, s, -2, 2);
        gr_array_set(xa, 0, NAN);        /* row 0, first */
        gr_array_set(xa, 7, NAN);        /* row 1, middle */
        gr_array_set(xa, 14, NAN);       /* row 2, last; row 3 has none */
        for (a = 0; a < 2; a++) {
            want = gts_reduce_ref(xa, 1u << a, 0, op);
            CHECK(isnan(gtf_wantf(want, 0)));
            snprintf(label, sizeof label, "gr_%s_axis(%d) with NaN, %s", gts_reds[op].name, a, gr_dtype_name(dt));
            gts_expect1(g, x, xa, gts_reds[op].axis(x, a), dt, want, 0, label);
            gr_array_free(want);
        }
        want = gts_reduce_ref(xa, 2u, 0, op);
        CHECK(!isnan(gtf_wantf(want, 3)));                               /* row 3 has no NaN */
        gr_array_free(want);
        want = gts_reduce_ref(xa, 3u, 0, op);
        snprintf(label, sizeof label, "gr_%s with NaN, %s", gts_reds[op].name, gr_dtype_name(dt));
        gts_expect1(g, x, xa, gts_reds[op].all(x), dt, want, 0, label);
        gr_array_free(want);
        gr_array_free(xa);
        gr_graph_free(g);
    }
}

TEST(gts_op_Max) { gts_reduce_op(GTS_MAX); gts_extremum_nan(GTS_MAX); }
TEST(gts_op_Min) { gts_reduce_op(GTS_MIN); gts_extremum_nan(GTS_MIN); }


typedef struct gts_axes { int n; int axes[4]; int keepdims; } gts_axes;
static gts_axes ax_all = { 0, { 0 }, 0 }, ax_all_keep = { 0, { 0 }, 1 }, ax_0 = { 1, { 0 }, 0 }, ax_1 = { 1, { 1 }, 0 },
                ax_m1_keep = { 1, { -1 }, 1 }, ax_01_keep = { 2, { 0, 1 }, 1 }, ax_02 = { 2, { 0, 2 }, 0 },
                ax_1_keep = { 1, { 1 }, 1 }, ax_20 = { 2, { 2, 0 }, 1 }, ax_0_keep = { 1, { 0 }, 1 };

#define GTS_RED(Name, fn) \
    static gr_var *gts_##fn(gr_graph *g, gr_var *const *x, void *u) { \
        const gts_axes *a = (const gts_axes *)u; (void)g; return gr_##fn##_axes(x[0], a->n, a->axes, a->keepdims); }
GTS_RED(Sum, sum) GTS_RED(Mean, mean) GTS_RED(Prod, prod) GTS_RED(Max, max) GTS_RED(Min, min)
#undef GTS_RED

/* prod over axis 1 of x * mask, a (3,4) mask whose row 0 has no zero, row 1 one, row 2 two: the
   naive rule prod / x would give NaN (0/0) at the zeros */
static gr_var *gts_prod_masked(gr_graph *g, gr_var *const *x, void *u) {
    static const double mask[12] = { 1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 1, 0 };
    static const int64_t shape[2] = { 3, 4 };
    const gts_axes *a = (const gts_axes *)u;
    (void)g;
    return gr_prod_axes(gr_mul(x[0], gts_const_like(x[0], 2, shape, mask)), a->n, a->axes, a->keepdims);
}

/* a mean times the sum of a second input: the cotangent reaching Mean is not the projection alone
   (the specs' inputs have unknown static shapes, so Mean's gradient scales by a SizeRatio) */
static gr_var *gts_mean_scaled(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_mul(gr_mean_axis(x[0], 0), gr_sum(x[1])); }

static uint64_t gts_rng = 2024;
static double gts_uniform(double lo, double hi) {
    uint64_t z = (gts_rng += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return lo + (hi - lo) * ((double)(z >> 11) / 9007199254740992.0);
}
static gr_array *gts_array(int ndim, const int64_t *shape, const double *v) {
    gr_array *a = gr_array_new(GR_F64, ndim, shape);
    int64_t k;
    for (k = 0; a && k < a->size; k++) gr_array_set(a, k, v ? v[k] : gts_uniform(-1, 1));
    return a;
}
static double gts_dot_arrays(const gr_array *a, const gr_array *b) {
    double s = 0;
    int64_t k;
    for (k = 0; k < a->size; k++) s += gr_array_get(a, k) * gr_array_get(b, k);
    return s;
}

enum { GTS_VERIFY = 1, GTS_ROP_FD = 2, GTS_GRADGRAD = 4 };

static gr_var *gts_gradgrad_of(gr_graph *g, gr_var *const *x, void *u) {
    const gtd_spec *s = (const gtd_spec *)u;
    gr_var *out = s->build(g, x, s->user);
    return out ? gr_grad1(gr_sum(out), x[0]) : NULL;
}

/* float64 at the points pts (not drawn): with GTS_VERIFY gr_verify_grad, with GTS_GRADGRAD also of
   the gradient of sum(f) with respect to input 0, with GTS_ROP_FD the R-op against central
   differences; always the adjoint identity <u, Rop(v)> = <Lop(u), v> */
static void gts_check_at(const char *what, gr_builder build, void *user, int n, const gr_array *const *pts, int checks) {
    gr_graph *g = gr_graph_new();
    gr_var *ins[4], *vs[4], *all[9], *outs[6], *out, *r = NULL, *u, *lop[4];
    gr_array *va[4], *ua = NULL, *xp[4], *xm[4];
    const gr_array *args[9], *res[6], *fres[1];
    gr_fn *f_out = NULL, *f_all = NULL;
    gtd_spec s;
    int i;
    memset(&s, 0, sizeof s);
    s.build = build;
    s.user = user;
    if (checks & GTS_VERIFY) {
        gr_gradient_error e;
        char buf[1024];
        gr_status st = gr_verify_grad(build, user, n, pts, NULL, &e);
        if (st == GR_ERR_GRADIENT) gr_gradient_error_format(&e, buf, sizeof buf); else snprintf(buf, sizeof buf, "%s", gr_status_string(st));
        CHECK_MSG(st == GR_OK, "%s: gradient: %s", what, buf);
        if (checks & GTS_GRADGRAD) {
            st = gr_verify_grad(gts_gradgrad_of, &s, n, pts, NULL, &e);
            if (st == GR_ERR_GRADIENT) gr_gradient_error_format(&e, buf, sizeof buf); else snprintf(buf, sizeof buf, "%s", gr_status_string(st));
            CHECK_MSG(st == GR_OK, "%s: gradient of the gradient: %s", what, buf);
        }
    }
    for (i = 0; i < n; i++) {
        ins[i] = gr_tensor(g, GR_F64, pts[i]->ndim, pts[i]->shape, NULL);
        vs[i] = gr_tensor(g, GR_F64, pts[i]->ndim, pts[i]->shape, NULL);
        va[i] = gts_array(pts[i]->ndim, pts[i]->shape, NULL);
        xp[i] = gr_array_copy(pts[i]);
        xm[i] = gr_array_copy(pts[i]);
    }
    out = build(g, ins, user);
    f_out = out ? gr_function(n, ins, 1, &out, NULL) : NULL;
    if (!f_out || gr_call(f_out, pts, fres) != GR_OK) { CHECK_MSG(0, "%s: build or call fails: %s", what, gr_graph_message(g)); goto done; }
    ua = gts_array(fres[0]->ndim, fres[0]->shape, NULL);
    u = gr_tensor(g, GR_F64, fres[0]->ndim, fres[0]->shape, NULL);
    if (gr_rop(1, &out, n, ins, vs, &r, NULL) != GR_OK || gr_lop(1, &out, n, ins, &u, lop, NULL) != GR_OK) {
        CHECK_MSG(0, "%s: gr_rop or gr_lop fails: %s", what, gr_graph_message(g));
        goto done;
    }
    for (i = 0; i < n; i++) { all[i] = ins[i]; all[n + i] = vs[i]; args[i] = pts[i]; args[n + i] = va[i]; outs[2 + i] = lop[i]; }
    all[2 * n] = u; args[2 * n] = ua;
    outs[0] = out; outs[1] = r;
    f_all = gr_function(2 * n + 1, all, 2 + n, outs, NULL);
    if (!f_all || gr_call(f_all, args, res) != GR_OK) { CHECK_MSG(0, "%s: the R-op/L-op function fails: %s", what, gr_graph_message(g)); goto done; }
    {
        double lhs = gts_dot_arrays(ua, res[1]), rhs = 0;
        for (i = 0; i < n; i++) rhs += gts_dot_arrays(res[2 + i], va[i]);
        CHECK_MSG(fabs(lhs - rhs) <= 1e-10 * (1 + fabs(lhs) + fabs(rhs)), "%s: <u, Jv> = %.15g but <J^T u, v> = %.15g", what, lhs, rhs);
    }
    if (checks & GTS_ROP_FD) {
        const double h = 1e-5;
        gr_array *rop = gr_array_copy(res[1]), *fp;
        int64_t k;
        for (i = 0; i < n; i++)
            for (k = 0; k < xp[i]->size; k++) {
                gr_array_set(xp[i], k, gr_array_get(pts[i], k) + h * gr_array_get(va[i], k));
                gr_array_set(xm[i], k, gr_array_get(pts[i], k) - h * gr_array_get(va[i], k));
            }
        gr_call(f_out, (const gr_array *const *)xp, fres);
        fp = gr_array_copy(fres[0]);
        gr_call(f_out, (const gr_array *const *)xm, fres);
        for (k = 0; k < rop->size; k++) {
            double fd = (gr_array_get(fp, k) - gr_array_get(fres[0], k)) / (2 * h);
            CHECK_MSG(fabs(fd - gr_array_get(rop, k)) <= 1e-6 * (1 + fabs(fd)), "%s: R-op[%lld] = %.12g, central differences %.12g", what,
                      (long long)k, gr_array_get(rop, k), fd);
        }
        gr_array_free(rop);
        gr_array_free(fp);
    }
done:
    for (i = 0; i < n; i++) { gr_array_free(va[i]); gr_array_free(xp[i]); gr_array_free(xm[i]); }
    gr_array_free(ua);
    gr_fn_free(f_out);
    gr_fn_free(f_all);
    gr_graph_free(g);
}

/* Prod at exact zeros: rows with none, one and two zeros, over an axis and over everything; the
   gradient at a single zero is the product of the others, everything else in such a row is 0 */
static gr_var *gts_prod_rows(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_prod_axis(x[0], 1); }
static gr_var *gts_prod_all(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_prod(x[0]); }

TEST(test_deriv_prod_zeros) {
    static const double v[12] = { 0.5, -1.5, 2.0, 0.75,  1.25, 0.0, -0.5, 2.0,  0.0, 1.5, 0.0, -2.0 };
    static const double one_zero[4] = { 0.5, 0.0, -1.5, 2.0 };
    static const double want[12] = { -2.25, 0.75, -0.5625, -1.5,  0, -1.25, 0, 0,  0, 0, 0, 0 };
    int64_t shape[2] = { 3, 4 }, n4 = 4;
    gr_array *x = gts_array(2, shape, v), *x1 = gts_array(1, &n4, one_zero);
    const gr_array *pts[1];
    pts[0] = x;
    gts_check_at("prod over rows with 0, 1 and 2 zeros", gts_prod_rows, NULL, 1, pts, GTS_VERIFY | GTS_ROP_FD | GTS_GRADGRAD);
    pts[0] = x1;
    gts_check_at("prod of a vector with one zero", gts_prod_all, NULL, 1, pts, GTS_VERIFY | GTS_ROP_FD | GTS_GRADGRAD);
    {   /* the exact gradient */
        gr_graph *g = gr_graph_new();
        gr_var *X = gr_matrix(g, GR_F64, "X"), *d = gr_grad1(gr_sum(gr_prod_axis(X, 1)), X);
        gr_fn *f = gr_function(1, &X, 1, &d, NULL);
        const gr_array *out[1];
        int64_t k;
        pts[0] = x;
        CHECK(f && gr_call(f, pts, out) == GR_OK);
        for (k = 0; f && k < 12; k++) CHECK_NEAR(gr_array_get(out[0], k), want[k], 1e-15);
        gr_fn_free(f);
        gr_graph_free(g);
    }
    {   /* the Hessian at two zeros: H_ij = the product of the elements other than i and j, so only
           the pair of zeros (1, 3) has a nonzero entry, 0.5 * -1.5 */
        static const double two_zeros[4] = { 0.5, 0.0, -1.5, 0.0 }, three_zeros[4] = { 0.0, 2.0, 0.0, 0.0 };
        gr_graph *g = gr_graph_new();
        gr_var *xv = gr_vector(g, GR_F64, "x"), *H = NULL;
        gr_array *a = gts_array(1, &n4, two_zeros), *b = gts_array(1, &n4, three_zeros);
        const gr_array *out[1];
        gr_fn *f;
        int64_t k;
        CHECK_STATUS(gr_hessian(gr_prod(xv), 1, &xv, &H, NULL), GR_OK);
        f = gr_function(1, &xv, 1, &H, NULL);
        pts[0] = a;
        CHECK(f && gr_call(f, pts, out) == GR_OK);
        for (k = 0; f && k < 16; k++) CHECK_NEAR(gr_array_get(out[0], k), (k == 1 * 4 + 3 || k == 3 * 4 + 1) ? -0.75 : 0.0, 1e-15);
        pts[0] = b;
        CHECK(f && gr_call(f, pts, out) == GR_OK);
        for (k = 0; f && k < 16; k++) CHECK_NEAR(gr_array_get(out[0], k), 0.0, 1e-15);
        gts_check_at("prod of a vector with three zeros", gts_prod_all, NULL, 1, pts, GTS_VERIFY | GTS_ROP_FD | GTS_GRADGRAD);
        gr_fn_free(f);
        gr_array_free(a);
        gr_array_free(b);
        gr_graph_free(g);
    }
    gr_array_free(x);
    gr_array_free(x1);
}


/* Max and Min with ties (decision 2): each tied element gets the whole cotangent, the R-op sums the
   tied tangents, so the adjoint identity holds (finite differences do not: a kink) */
static gr_var *gts_max_rows(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_max_axis(x[0], 1); }
static gr_var *gts_min_cols(gr_graph *g, gr_var *const *x, void *u) {
    static const int axis_0 = 0;
    (void)g; (void)u;
    return gr_min_axes(x[0], 1, &axis_0, 1);
}
TEST(test_deriv_extrema_ties) {
    static const double v[12] = { 1.0, 2.0, 2.0, -1.0,  0.5, 0.5, 0.5, 0.5,  -3.0, 4.0, 1.0, 4.0 };
    int64_t shape[2] = { 3, 4 };
    gr_array *x = gts_array(2, shape, v);
    const gr_array *pts[1];
    pts[0] = x;
    gts_check_at("max over rows with ties", gts_max_rows, NULL, 1, pts, 0);
    gts_check_at("min over columns with ties, keepdims", gts_min_cols, NULL, 1, pts, 0);
    {
        gr_graph *g = gr_graph_new();
        gr_var *X = gr_matrix(g, GR_F64, "X"), *d = gr_grad1(gr_sum(gr_max_axis(X, 1)), X);
        gr_fn *f = gr_function(1, &X, 1, &d, NULL);
        const gr_array *out[1];
        static const double want[12] = { 0, 1, 1, 0,  1, 1, 1, 1,  0, 1, 0, 1 };
        int64_t k;
        CHECK(f && gr_call(f, pts, out) == GR_OK);
        for (k = 0; f && k < 12; k++) CHECK_NEAR(gr_array_get(out[0], k), want[k], 0);
        gr_fn_free(f);
        gr_graph_free(g);
    }
    gr_array_free(x);
}


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

/* axes out of range or repeated, a 0-d operand, a NULL list of axes: GR_ERR_VALUE naming the
   builder, the axis and the variable; negative axes count from the end */
TEST(test_reduce_bad_axes) {
    gr_graph *g = gr_graph_new();
    gr_var *m = gr_matrix(g, GR_F64, "m"), *s = gr_scalar(g, GR_F64, "s"), *y;
    int rep[2] = { 0, -2 }, oor[2] = { 0, 2 }, two[2] = { 1, 0 };
    gr_type t;
    CHECK(gr_sum_axis(m, 2) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_sum_axis");
    CHECK_CONTAINS(gr_graph_message(g), "axis 2");
    CHECK_CONTAINS(gr_graph_message(g), "'m'");
    gr_graph_clear_error(g);
    CHECK(gr_max_axis(m, -3) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE); gr_graph_clear_error(g);
    CHECK(gr_mean_axis(s, 0) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE); gr_graph_clear_error(g);
    CHECK(gr_sum_axes(m, 2, rep, 0) == NULL);           /* 0 and -2 are the same axis */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "repeated");
    gr_graph_clear_error(g);
    CHECK(gr_prod_axes(m, 2, oor, 1) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE); gr_graph_clear_error(g);
    CHECK(gr_min_axes(m, -1, two, 0) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE); gr_graph_clear_error(g);
    CHECK(gr_sum_axes(m, 1, NULL, 0) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE); gr_graph_clear_error(g);
    {   /* negative axes count from the end */
        int64_t s23[2] = { 2, 3 };
        gr_var *x = gr_tensor(g, GR_F64, 2, s23, "x");
        y = gr_sum_axis(x, -1);
        CHECK(y != NULL && gr_var_type(y, &t) && t.ndim == 1 && t.shape[0] == 2);
        y = gr_sum_axes(x, 1, rep, 1);
        CHECK(y != NULL && gr_var_type(y, &t) && t.ndim == 2 && t.shape[0] == 1 && t.shape[1] == 3);
    }
    CHECK_OK_GRAPH(g);
    gr_graph_free(g);
}

static const gtd_spec specs_Sum[] = {
    { "Sum", "all of (3,4)", gts_sum, &ax_all, 1, { M34(-2, 2) }, GG },
    { "Sum", "all of (3,4), keepdims", gts_sum, &ax_all_keep, 1, { M34(-2, 2) }, GG },
    { "Sum", "axis 0 of (3,4)", gts_sum, &ax_0, 1, { M34(-2, 2) }, GG },
    { "Sum", "axis -1 of (3,4), keepdims", gts_sum, &ax_m1_keep, 1, { M34(-2, 2) }, GG },
    { "Sum", "axes (0,2) of (2,3,4)", gts_sum, &ax_02, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "Sum", "axes (2,0) of (2,3,4), keepdims", gts_sum, &ax_20, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "Sum", "of a 0-d", gts_sum, &ax_all, 1, { S0(-2, 2) }, GG },
    { "Sum", "axis 1 of (3,1)", gts_sum, &ax_1, 1, { GTD_IN(2, 3, 1, -2, 2) }, GG },
    GTD_END
};
static const gtd_spec specs_Mean[] = {
    { "Mean", "all of (3,4)", gts_mean, &ax_all, 1, { M34(-2, 2) }, GG },
    { "Mean", "axis 1 of (3,4)", gts_mean, &ax_1, 1, { M34(-2, 2) }, GG },
    { "Mean", "axes (0,1) of (3,4), keepdims", gts_mean, &ax_01_keep, 1, { M34(-2, 2) }, GG },
    { "Mean", "axis 1 of (2,3,4), keepdims", gts_mean, &ax_1_keep, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "Mean", "of a 0-d", gts_mean, &ax_all, 1, { S0(-2, 2) }, GG },
    { "Mean", "axis 0 times sum(x1)", gts_mean_scaled, NULL, 2, { M34(-2, 2), V4(-2, 2) }, GG },
    GTD_END
};
static const gtd_spec specs_Prod[] = {
    /* Prod: positive, negative, masked zeros (one and two per slice) */
    { "Prod", "all of (3,4), in (0.5, 1.5)", gts_prod, &ax_all, 1, { M34(0.5, 1.5) }, GG },
    { "Prod", "axis 1 of (3,4), in (-1.5, -0.5)", gts_prod, &ax_1, 1, { M34(-1.5, -0.5) }, GG },
    { "Prod", "axis 0 of (3,4), keepdims", gts_prod, &ax_0_keep, 1, { M34(0.5, 1.5) }, GG },
    { "Prod", "axes (0,1) of (3,4), keepdims", gts_prod, &ax_01_keep, 1, { M34(0.6, 1.4) }, GG },
    { "Prod", "axes (0,2) of (2,3,4)", gts_prod, &ax_02, 1, { GTD_IN3(2, 3, 4, 0.6, 1.4) }, GG },
    { "Prod", "of a 0-d", gts_prod, &ax_all, 1, { S0(-2, 2) }, GG },
    { "Prod", "axis 1 of x * mask: no, one and two zeros per row", gts_prod_masked, &ax_1, 1, { M34(0.5, 1.5) }, GG },
    { "Prod", "all of x * mask (three zeros)", gts_prod_masked, &ax_all, 1, { M34(0.5, 1.5) }, GG },
    { "Prod", "axis 0 of x * mask, keepdims: one zero in columns 0, 1 and 3", gts_prod_masked, &ax_0_keep, 1, { M34(-1.5, -0.5) }, GG },
    GTD_END
};
static const gtd_spec specs_Max[] = {
    { "Max", "all of (3,4)", gts_max, &ax_all, 1, { M34(-2, 2) }, GG },
    { "Max", "axis 0 of (3,4)", gts_max, &ax_0, 1, { M34(-2, 2) }, GG },
    { "Max", "axis -1 of (3,4), keepdims", gts_max, &ax_m1_keep, 1, { M34(-2, 2) }, GG },
    { "Max", "axes (0,2) of (2,3,4)", gts_max, &ax_02, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "Max", "of a 0-d", gts_max, &ax_all, 1, { S0(-2, 2) }, GG },
    GTD_END
};
static const gtd_spec specs_Min[] = {
    { "Min", "all of (3,4)", gts_min, &ax_all, 1, { M34(-2, 2) }, GG },
    { "Min", "axis 1 of (3,4)", gts_min, &ax_1, 1, { M34(-2, 2) }, GG },
    { "Min", "axes (0,1) of (3,4), keepdims", gts_min, &ax_01_keep, 1, { M34(-2, 2) }, GG },
    { "Min", "axes (2,0) of (2,3,4), keepdims", gts_min, &ax_20, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "Min", "of a 0-d", gts_min, &ax_all, 1, { S0(-2, 2) }, GG },
    GTD_END
};

GT_CASES(Sum) = { GT_VALUES(gts_op_Sum), GT_SPECS(specs_Sum), GT_ERRORS(test_reduce_bad_axes), GT_END };
/* gr_mean, gr_prod, gr_max, gr_min and their _axis / _axes forms share gr_sum's builder and checks */
GT_CASES(Mean) = { GT_VALUES(gts_op_Mean), GT_SPECS(specs_Mean), GT_ERRORS_WITH(Sum), GT_END };
GT_CASES(Prod) = {
    GT_VALUES(gts_op_Prod),
    GT_SPECS(specs_Prod),
    GT_DERIVS(test_deriv_prod_zeros),
    GT_DERIVS(test_prod_axes_gradient_with_zeros),
    GT_ERRORS_WITH(Sum),
    GT_END
};
GT_CASES(Max) = {
    GT_VALUES(gts_op_Max),
    GT_SPECS(specs_Max),
    GT_DERIVS(test_deriv_extrema_ties),
    GT_DERIVS(test_extrema_axes_keepdims),
    GT_ERRORS_WITH(Sum),
    GT_END
};
GT_CASES(Min) = { GT_VALUES(gts_op_Min), GT_SPECS(specs_Min), GT_ERRORS_WITH(Sum), GT_END };

/* ==== along one axis: ArgMax, LogSumExp, CumSum, CumProd, LinScan ====================================== */


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

TEST(gtr_fwd_ArgMax) {
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

TEST(gtr_fwd_LogSumExp) {
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

TEST(gtr_fwd_CumSum) { gtr_cum_values(0); }
TEST(gtr_fwd_CumProd) {
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

/* LinScan, both ways, through cumprod's rules: the gradient of sum(w * cumprod(x)) is E * S with
   S = LinScan(x, w, reverse); the R-op along v is LinScan(x, E * v, forward) */
TEST(gtr_fwd_LinScan) {
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

/* the errors of the builders along one axis: NULL silently; a 0-d operand, an axis out of range at
   either end and a marker are refused, naming the builder, the axis and the variable */
static void gtr_axis_op_errors(gr_var *(*op)(gr_var *, int), const char *name) {
    gr_graph *g = gr_graph_new();
    gr_var *m = gr_matrix(g, GR_F64, "m");
    CHECK(op(NULL, 0) == NULL);                                         /* NULL: silently */
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    CHECK(op(gr_scalar(g, GR_F64, "s"), 0) == NULL);                    /* 0-d: no axis */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), name);
    CHECK_CONTAINS(gr_graph_message(g), "'s'");
    gr_graph_clear_error(g);
    CHECK(op(m, 2) == NULL);                                            /* axis out of range, either end */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "axis 2");
    gr_graph_clear_error(g);
    CHECK(op(m, -3) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "axis -3");
    gr_graph_clear_error(g);
    CHECK(op(gr_disconnected_like(m), 0) == NULL);                      /* a gradient marker */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    gr_graph_clear_error(g);
    CHECK(op(m, -2) != NULL && op(m, 1) != NULL);
    gr_graph_free(g);
}

/* and the dtypes: argmax is I64, logsumexp of ints F64, cumulative ops of bools I64 */
TEST(test_argmax_axis_errors) {
    gr_graph *g = gr_graph_new();
    gtr_axis_op_errors(gr_argmax_axis, "gr_argmax_axis");
    CHECK(gr_var_dtype(gr_argmax_axis(gr_vector(g, GR_F32, "f"), 0)) == GR_I64);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    gr_graph_free(g);
}
TEST(test_logsumexp_errors) {
    gr_graph *g = gr_graph_new();
    gtr_axis_op_errors(gr_logsumexp, "gr_logsumexp");
    CHECK(gr_var_dtype(gr_logsumexp(gr_vector(g, GR_I64, "i"), 0)) == GR_F64);
    CHECK(gr_var_dtype(gr_logsumexp(gr_vector(g, GR_F32, "f"), 0)) == GR_F32);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    gr_graph_free(g);
}
TEST(test_cumsum_errors) {
    gr_graph *g = gr_graph_new();
    gtr_axis_op_errors(gr_cumsum, "gr_cumsum");
    CHECK(gr_var_dtype(gr_cumsum(gr_vector(g, GR_BOOL, "b"), 0)) == GR_I64);
    CHECK(gr_var_dtype(gr_cumsum(gr_vector(g, GR_F32, "f"), 0)) == GR_F32);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    gr_graph_free(g);
}
TEST(test_cumprod_errors) {
    gr_graph *g = gr_graph_new();
    gtr_axis_op_errors(gr_cumprod, "gr_cumprod");
    CHECK(gr_var_dtype(gr_cumprod(gr_vector(g, GR_BOOL, "b"), 0)) == GR_I64);
    CHECK(gr_var_dtype(gr_cumprod(gr_vector(g, GR_I64, "i"), 0)) == GR_I64);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    gr_graph_free(g);
}

static const gtd_spec specs_ArgMax[] = {
    { "ArgMax", "(3,4) axis -1", gtr_b_argmax, &gtr_axm1, 1, { GTD_IN(2, 3, 4, -2, 2) }, GTD_NONDIFF },
    { "ArgMax", "(2,3,4) axis 1", gtr_b_argmax, &gtr_ax1, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GTD_NONDIFF },
    GTD_END
};
static const gtd_spec specs_LogSumExp[] = {
    { "LogSumExp", "(3,4) axis 0", gtr_b_lse, &gtr_ax0, 1, { GTD_IN(2, 3, 4, -3, 3) }, GTD_GRADGRAD },
    { "LogSumExp", "(3,4) axis -1", gtr_b_lse, &gtr_axm1, 1, { GTD_IN(2, 3, 4, -3, 3) }, GTD_GRADGRAD },
    { "LogSumExp", "(2,3,4) axis -2", gtr_b_lse, &gtr_axm2, 1, { GTD_IN3(2, 3, 4, -3, 3) }, 0 },
    { "LogSumExp", "(5,) near 1e3", gtr_b_lse, &gtr_ax0, 1, { GTD_IN(1, 5, 0, 995, 1005) }, GTD_F64_ONLY },
    GTD_END
};
static const gtd_spec specs_CumSum[] = {
    { "CumSum", "(3,4) axis 1", gtr_b_cumsum, &gtr_ax1, 1, { GTD_IN(2, 3, 4, -2, 2) }, GTD_GRADGRAD },
    { "CumSum", "(3,4) axis -2", gtr_b_cumsum, &gtr_axm2, 1, { GTD_IN(2, 3, 4, -2, 2) }, 0 },
    { "CumSum", "(2,3,4) axis -1", gtr_b_cumsum, &gtr_axm1, 1, { GTD_IN3(2, 3, 4, -2, 2) }, 0 },
    GTD_END
};
static const gtd_spec specs_CumProd[] = {
    { "CumProd", "(3,4) axis 1", gtr_b_cumprod, &gtr_ax1, 1, { GTD_IN(2, 3, 4, 0.5, 1.5) }, GTD_GRADGRAD },
    { "CumProd", "(3,4) axis -2, both signs", gtr_b_cumprod, &gtr_axm2, 1, { GTD_IN(2, 3, 4, -1.5, 1.5) }, GTD_GRADGRAD },
    { "CumProd", "(2,3,4) axis -1", gtr_b_cumprod, &gtr_axm1, 1, { GTD_IN3(2, 3, 4, -1.5, 1.5) }, 0 },
    { "CumProd", "(6,), a zero at 2", gtr_b_cumprod_zero1, NULL, 2, { GTD_IN(1, 6, 0, -1.5, 1.5), GTD_IN(1, 1, 0, 0, 0) }, GTD_GRADGRAD },
    { "CumProd", "(6,), zeros at 1 and 4", gtr_b_cumprod_zero2, NULL, 2, { GTD_IN(1, 6, 0, -1.5, 1.5), GTD_IN(1, 2, 0, 0, 0) }, GTD_GRADGRAD },
    { "CumProd", "(3,4) axis 1, a zero in every row", gtr_b_cumprod_zcol, &gtr_ax1, 2, { GTD_IN(2, 3, 4, -1.5, 1.5), GTD_IN(1, 3, 0, 0, 0) }, 0 },
    { "CumProd", "(3,4) axis 0, a zero in a column", gtr_b_cumprod_zcol, &gtr_ax0, 2, { GTD_IN(2, 3, 4, -1.5, 1.5), GTD_IN(1, 3, 0, 0, 0) }, 0 },
    GTD_END
};
static const gtd_spec specs_LinScan[] = {
    { "LinScan", "reverse: d/dx sum(w cumprod(x)), axis 1", gtr_b_linscan_rev, &gtr_ax1, 2,
      { GTD_IN(2, 3, 4, -1.5, 1.5), GTD_IN(2, 3, 4, -1, 1) }, GTD_GRADGRAD },
    { "LinScan", "forward: Rop(cumprod(x), x, v), axis -1", gtr_b_linscan_fwd, &gtr_axm1, 2,
      { GTD_IN(2, 3, 4, -1.5, 1.5), GTD_IN(2, 3, 4, -1, 1) }, GTD_GRADGRAD },
    { "LinScan", "both ways, axis 0 of (2,3,4)", gtr_b_linscan_rev, &gtr_ax0, 2,
      { GTD_IN3(2, 3, 4, -1.5, 1.5), GTD_IN3(2, 3, 4, -1, 1) }, 0 },
    { "LinScan", "both, with a zero in x", gtr_b_linscan_zero, NULL, 3,
      { GTD_IN(1, 6, 0, -1.5, 1.5), GTD_IN(1, 6, 0, -1, 1), GTD_IN(1, 1, 0, 0, 0) }, GTD_GRADGRAD },
    GTD_END
};

GT_CASES(ArgMax) = { GT_VALUES(gtr_fwd_ArgMax), GT_SPECS(specs_ArgMax), GT_DERIVS(test_argmax_derivatives), GT_ERRORS(test_argmax_axis_errors), GT_END };
GT_CASES(LogSumExp) = {
    GT_VALUES(gtr_fwd_LogSumExp),
    GT_SPECS(specs_LogSumExp),
    GT_DERIVS(test_logsumexp_derivatives),
    GT_ERRORS(test_logsumexp_errors),
    GT_END
};
GT_CASES(CumSum) = { GT_VALUES(gtr_fwd_CumSum), GT_SPECS(specs_CumSum), GT_DERIVS(test_cumsum_jacobian), GT_ERRORS(test_cumsum_errors), GT_END };
GT_CASES(CumProd) = {
    GT_VALUES(gtr_fwd_CumProd),
    GT_SPECS(specs_CumProd),
    GT_DERIVS(test_cumprod_derivatives_zero_safe),
    GT_DERIVS(test_cumprod_verify_grad_at_zeros),
    GT_DERIVS(test_cumprod_jacobian_hessian),
    GT_ERRORS(test_cumprod_errors),
    GT_END
};
GT_CASES(LinScan) = {
    GT_VALUES(gtr_fwd_LinScan),
    GT_SPECS(specs_LinScan),
    GT_NO_ERRORS("made only by the derivatives of gr_cumprod, from checked operands"),
    GT_END
};

/* ==== Diff ============================================================================================== */

/* x[..., k+1, ...] - x[..., k, ...] along axis by a plain loop over x's multi-indices: wrapping for
   I64 (through uint64_t), "differ" for BOOL */
static gr_array *gtr_diff_ref(const gr_array *x, int axis) {
    int64_t oshape[GR_MAX_NDIM], idx[GR_MAX_NDIM], k, o;
    int d;
    gr_array *want;
    for (d = 0; d < x->ndim; d++) oshape[d] = x->shape[d] - (d == axis);
    want = gts_want(x->dtype, x->ndim, oshape);
    for (o = 0; o < want->size; o++) {
        int64_t rem = o, at = 0, stride = 1;
        for (d = x->ndim - 1; d >= 0; d--) { idx[d] = rem % oshape[d]; rem /= oshape[d]; }
        for (d = x->ndim - 1; d >= 0; d--) { at += idx[d] * stride; stride *= x->shape[d]; }
        for (stride = 1, d = x->ndim - 1; d > axis; d--) stride *= x->shape[d];
        k = at + stride;                                 /* the next element along the axis */
        if (x->dtype == GR_F64 || x->dtype == GR_F32) ((double *)want->data)[o] = gr_array_get(x, k) - gr_array_get(x, at);
        else if (x->dtype == GR_I64) ((int64_t *)want->data)[o] = (int64_t)((uint64_t)gtr_int_at(x, k) - (uint64_t)gtr_int_at(x, at));
        else ((int64_t *)want->data)[o] = (gtr_int_at(x, k) != 0) != (gtr_int_at(x, at) != 0);
    }
    return want;
}

/* every dtype keeps its dtype; every axis from both ends (an axis of length 0 is an error, tested
   below); static and call-time shapes; differences of length-1 axes are empty; int64 wraps */
TEST(test_diff_values) {
    gtf_rng rng;
    int c, d, dyn, a;
    rng.s = 611;
    for (c = 0; c < GTR_N_SHAPES; c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++)
                for (a = -gtr_shapes[c].ndim; a < gtr_shapes[c].ndim; a++) {
                    const gtr_shape *sh = &gtr_shapes[c];
                    int axis = a < 0 ? a + sh->ndim : a;
                    gr_dtype dt = gtr_dtypes[d];
                    gr_graph *g;
                    gr_var *x;
                    gr_array *xa, *want;
                    const gr_array *arr[1];
                    char label[128];
                    if (sh->shape[axis] == 0) continue;
                    g = gr_graph_new();
                    x = gtf_input(g, dt, sh->ndim, sh->shape, dyn, "x");
                    xa = gts_random(&rng, dt, sh->ndim, sh->shape, -1.5, 1.5, -50, 50);
                    want = gtr_diff_ref(xa, axis);
                    arr[0] = xa;
                    snprintf(label, sizeof label, "gr_diff(%d) of %d-d case %d, %s, %s", a, sh->ndim, c, gr_dtype_name(dt),
                             dyn ? "unknown shape" : "static shape");
                    gtf_expect(g, 1, &x, arr, gr_diff(x, a), dt, want, 0, label);
                    gr_array_free(want);
                    gr_array_free(xa);
                    gr_graph_free(g);
                }
    {   /* int64 wraps modulo 2^64, as NumPy's */
        int64_t n = 3, v[3] = { INT64_MAX, INT64_MIN, 5 };
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_I64, "x");
        gr_array *xa = gr_array_from(GR_I64, 1, &n, v), *want = gtr_diff_ref(xa, 0);
        const gr_array *arr[1];
        arr[0] = xa;
        CHECK_EQ_INT(((int64_t *)want->data)[0], 1);      /* the reference itself: INT64_MIN - INT64_MAX wraps to 1 */
        gtf_expect(g, 1, &x, arr, gr_diff(x, 0), GR_I64, want, 0, "gr_diff wraps");
        gr_array_free(want);
        gr_array_free(xa);
        gr_graph_free(g);
    }
}

/* Diff is linear with the matrix D (n-1 by n: -1 on the diagonal, 1 above it). Exactly, on a (3,5)
   input along axis 1 and a (4,) input: the gradient of sum(w * diff(x)) is D^T w = (-w_0, w_0 - w_1,
   ..., w_{n-2}); the R-op along v is diff(v); the Jacobian (through the batching rule) is D; the
   adjoint identity <w, D v> = <D^T w, v> holds; and a length-1 axis has a zero gradient */
TEST(test_diff_adjoint) {
    static const int64_t xs[2] = { 3, 5 }, ws[2] = { 3, 4 };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_matrix(g, GR_F64, "x"), *w = gr_matrix(g, GR_F64, "w"), *v = gr_matrix(g, GR_F64, "v"), *ins[3], *outs[2];
    gr_var *y = gr_diff(x, 1), *r = NULL, *u = gr_vector(g, GR_F64, "u"), *J = NULL;
    gr_array *arr[3], *res[2];
    gtf_rng rng;
    int i, j;
    double lhs = 0, rhs = 0;
    rng.s = 612;
    ins[0] = x; ins[1] = w; ins[2] = v;
    arr[0] = gtf_random(&rng, GR_F64, 2, xs, -2, 2);
    arr[1] = gtf_random(&rng, GR_F64, 2, ws, -2, 2);
    arr[2] = gtf_random(&rng, GR_F64, 2, xs, -2, 2);
    outs[0] = gr_grad1(gr_sum(gr_mul(w, y)), x);
    CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, &r, NULL), GR_OK);
    outs[1] = r;
    res[0] = res[1] = NULL;
    if (outs[0] && outs[1]) {
        gr_fn *f = gr_function(3, ins, 2, outs, NULL);
        const gr_array *o[2];
        CHECK(f != NULL);
        if (f && gr_call(f, (const gr_array *const *)arr, o) == GR_OK) { res[0] = gr_array_copy(o[0]); res[1] = gr_array_copy(o[1]); }
        gr_fn_free(f);
    }
    CHECK(res[0] && res[1]);
    for (i = 0; res[0] && res[1] && i < 3; i++) {
        for (j = 0; j < 5; j++) {
            double wl = j > 0 ? gr_array_get(arr[1], i * 4 + j - 1) : 0, wr = j < 4 ? gr_array_get(arr[1], i * 4 + j) : 0;
            CHECK_NEAR(gr_array_get(res[0], i * 5 + j), wl - wr, 1e-15);
            rhs += gr_array_get(res[0], i * 5 + j) * gr_array_get(arr[2], i * 5 + j);
        }
        for (j = 0; j < 4; j++) {
            double dv = gr_array_get(arr[2], i * 5 + j + 1) - gr_array_get(arr[2], i * 5 + j);
            CHECK_NEAR(gr_array_get(res[1], i * 4 + j), dv, 1e-15);
            lhs += gr_array_get(arr[1], i * 4 + j) * dv;
        }
    }
    CHECK_NEAR(lhs, rhs, 1e-13);
    gr_array_free(res[0]); gr_array_free(res[1]);
    {   /* the Jacobian of diff(u), u (4,): D, 3 x 4 */
        int64_t n4 = 4;
        gr_array *ua = gtf_random(&rng, GR_F64, 1, &n4, -1, 1), *want = gr_array_new(GR_F64, 2, (int64_t[2]){ 3, 4 });
        for (i = 0; i < 3; i++) { gr_array_set(want, i * 4 + i, -1.0); gr_array_set(want, i * 4 + i + 1, 1.0); }
        CHECK_STATUS(gr_jacobian(gr_diff(u, 0), 1, &u, &J, NULL), GR_OK);
        gtf_expect(g, 1, &u, (const gr_array *const *)&ua, J, GR_F64, want, 0, "jacobian of diff(u)");
        gr_array_free(ua); gr_array_free(want);
    }
    {   /* a length-1 axis: an empty difference, and a zero gradient */
        int64_t s1[2] = { 1, 3 };
        gr_var *m = gr_tensor(g, GR_F64, 2, s1, "m"), *gm = gr_grad1(gr_sum(gr_diff(m, 0)), m);
        gr_array *ma = gtf_random(&rng, GR_F64, 2, s1, -1, 1), *want = gr_array_new(GR_F64, 2, s1);
        gtf_expect(g, 1, &m, (const gr_array *const *)&ma, gm, GR_F64, want, 0, "the gradient of a length-1 diff");
        gr_array_free(ma); gr_array_free(want);
    }
    for (i = 0; i < 3; i++) gr_array_free(arr[i]);
    gr_graph_free(g);
}

/* NULL silently; a 0-d operand, an axis out of range at either end, a marker are refused; an axis
   of length 0, statically when built and at call time (both levels): GR_ERR_SHAPE, naming gr_diff
   and the variable; the dtype is kept */
TEST(test_diff_errors) {
    int64_t s03[2] = { 0, 3 };
    gr_graph *g = gr_graph_new();
    gr_var *m = gr_matrix(g, GR_F64, "m"), *e = gr_tensor(g, GR_F64, 2, s03, "e");
    gtr_axis_op_errors(gr_diff, "gr_diff");
    CHECK(gr_diff(e, 0) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_diff");
    CHECK_CONTAINS(gr_graph_message(g), "'e'");
    CHECK_CONTAINS(gr_graph_message(g), "length 0");
    gr_graph_clear_error(g);
    CHECK(gr_diff(e, 1) != NULL);                        /* (0,2): no rows, but the axis has 3 */
    {
        gr_array *ea = gr_array_new(GR_F64, 2, s03);
        gtf_expect_call_error(g, 1, &m, (const gr_array *const *)&ea, gr_diff(m, 0), GR_ERR_SHAPE, "gr_diff of an axis of length 0 at call time");
        gr_array_free(ea);
    }
    CHECK(gr_var_dtype(gr_diff(gr_vector(g, GR_BOOL, "b"), 0)) == GR_BOOL);
    CHECK(gr_var_dtype(gr_diff(gr_vector(g, GR_I64, "i"), 0)) == GR_I64);
    CHECK(gr_var_dtype(gr_diff(gr_vector(g, GR_F32, "f"), 0)) == GR_F32);
    CHECK_OK_GRAPH(g);
    gr_graph_free(g);
}

static gr_var *gtr_b_diff(gr_graph *g, gr_var *const *x, void *u) { (void)g; return gr_diff(x[0], *(int *)u); }
static gr_var *gtr_b_diff_sin(gr_graph *g, gr_var *const *x, void *u) { (void)g; return gr_mul(gr_diff(gr_sin(x[0]), *(int *)u), x[1]); }

static const gtd_spec specs_Diff[] = {
    { "Diff", "(3,4) axis 0", gtr_b_diff, &gtr_ax0, 1, { GTD_IN(2, 3, 4, -2, 2) }, GTD_GRADGRAD },
    { "Diff", "(3,4) axis -1", gtr_b_diff, &gtr_axm1, 1, { GTD_IN(2, 3, 4, -2, 2) }, 0 },
    { "Diff", "(2,3,4) axis 1", gtr_b_diff, &gtr_ax1, 1, { GTD_IN3(2, 3, 4, -2, 2) }, 0 },
    { "Diff", "(5,) axis 0", gtr_b_diff, &gtr_ax0, 1, { GTD_IN(1, 5, 0, -2, 2) }, 0 },
    { "Diff", "(1,4) axis 0: empty", gtr_b_diff, &gtr_ax0, 1, { GTD_IN(2, 1, 4, -2, 2) }, 0 },
    { "Diff", "diff(sin x0, axis 1) * x1, (3,4) (3,3)", gtr_b_diff_sin, &gtr_ax1, 2, { GTD_IN(2, 3, 4, -2, 2), GTD_IN(2, 3, 3, -2, 2) },
      GTD_GRADGRAD },
    GTD_END
};

GT_CASES(Diff) = {
    GT_VALUES(test_diff_values),
    GT_SPECS(specs_Diff),
    GT_DERIVS(test_diff_adjoint),
    GT_ERRORS(test_diff_errors),
    GT_END
};

/* ==== the family's other tests ========================================================================= */

/* integer sums, products and dots wrap modulo 2^64, as NumPy's (and gr_pow's); reference by uint64_t */
TEST(test_int_wraparound) {
    static const int64_t v[6] = { INT64_MAX, 3, INT64_MIN + 5, -7, INT64_MAX - 1, 1 << 30 };
    int64_t s6 = 6, s23[2] = { 2, 3 }, s32[2] = { 3, 2 }, s22[2] = { 2, 2 }, s3 = 3, i, j, k;
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_I64, "x"), *m = gr_matrix(g, GR_I64, "m"), *mt = gr_matrix(g, GR_I64, "mt"), *u = gr_vector(g, GR_I64, "u");
    gr_var *ins[2];
    gr_array *xa = gr_array_from(GR_I64, 1, &s6, v), *ma = gr_array_from(GR_I64, 2, s23, v), *mta = gr_array_from(GR_I64, 2, s32, v);
    gr_array *ua = gr_array_from(GR_I64, 1, &s3, v + 3), *w, *arr[2];
    uint64_t acc, prod;
    /* sum and product of everything */
    w = gr_array_new(GR_I64, 0, NULL);
    for (acc = 0, prod = 1, k = 0; k < 6; k++) { acc += (uint64_t)v[k]; prod *= (uint64_t)v[k]; }
    ((int64_t *)w->data)[0] = (int64_t)acc;
    gts_expect1(g, x, xa, gr_sum(x), GR_I64, w, 0, "gr_sum of int64 that overflows");
    ((int64_t *)w->data)[0] = (int64_t)prod;
    gts_expect1(g, x, xa, gr_prod(x), GR_I64, w, 0, "gr_prod of int64 that overflows");
    gr_array_free(w);
    /* over the leading axis of (2,3): the non-innermost loop */
    w = gr_array_new(GR_I64, 1, &s3);
    for (j = 0; j < 3; j++) ((int64_t *)w->data)[j] = (int64_t)((uint64_t)v[j] + (uint64_t)v[3 + j]);
    gts_expect1(g, m, ma, gr_sum_axis(m, 0), GR_I64, w, 0, "gr_sum_axis(0) of int64 that overflows");
    for (j = 0; j < 3; j++) ((int64_t *)w->data)[j] = (int64_t)((uint64_t)v[j] * (uint64_t)v[3 + j]);
    gts_expect1(g, m, ma, gr_prod_axis(m, 0), GR_I64, w, 0, "gr_prod_axis(0) of int64 that overflows");
    gr_array_free(w);
    /* dots: 1-d.1-d, 2-d.1-d, 1-d.2-d, 2-d.2-d */
    ins[0] = x; ins[1] = x;
    arr[0] = xa; arr[1] = xa;
    w = gr_array_new(GR_I64, 0, NULL);
    for (acc = 0, k = 0; k < 6; k++) acc += (uint64_t)v[k] * (uint64_t)v[k];
    ((int64_t *)w->data)[0] = (int64_t)acc;
    gtf_expect(g, 1, ins, (const gr_array *const *)arr, gr_dot(x, x), GR_I64, w, 0, "gr_dot int64 (6,).(6,) that overflows");
    gr_array_free(w);
    ins[0] = m; ins[1] = u;
    arr[0] = ma; arr[1] = ua;
    w = gr_array_new(GR_I64, 1, s23);
    for (i = 0; i < 2; i++) {
        for (acc = 0, k = 0; k < 3; k++) acc += (uint64_t)v[i * 3 + k] * (uint64_t)v[3 + k];
        ((int64_t *)w->data)[i] = (int64_t)acc;
    }
    gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_dot(m, u), GR_I64, w, 0, "gr_dot int64 (2,3).(3,) that overflows");
    gr_array_free(w);
    ins[0] = u; ins[1] = mt;
    arr[0] = ua; arr[1] = mta;
    w = gr_array_new(GR_I64, 1, s32 + 1);
    for (j = 0; j < 2; j++) {
        for (acc = 0, k = 0; k < 3; k++) acc += (uint64_t)v[3 + k] * (uint64_t)v[k * 2 + j];
        ((int64_t *)w->data)[j] = (int64_t)acc;
    }
    gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_dot(u, mt), GR_I64, w, 0, "gr_dot int64 (3,).(3,2) that overflows");
    gr_array_free(w);
    ins[0] = m; ins[1] = mt;
    arr[0] = ma; arr[1] = mta;
    w = gr_array_new(GR_I64, 2, s22);
    for (i = 0; i < 2; i++)
        for (j = 0; j < 2; j++) {
            for (acc = 0, k = 0; k < 3; k++) acc += (uint64_t)v[i * 3 + k] * (uint64_t)v[k * 2 + j];
            ((int64_t *)w->data)[i * 2 + j] = (int64_t)acc;
        }
    gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_dot(m, mt), GR_I64, w, 0, "gr_dot int64 (2,3).(3,2) that overflows");
    gr_array_free(w);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    gr_array_free(xa); gr_array_free(ma); gr_array_free(mta); gr_array_free(ua);
    gr_graph_free(g);
}

SUITE(suite_ops_reduce) = { CASE(test_int_wraparound), END_SUITE };
