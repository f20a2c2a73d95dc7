/* tests/t_forward_struct.c: forward values of every structural op of GR_STRUCT_OPS through the
   public builders, against plain-C loops, in every dtype, with static and call-time shapes, under
   both optimize levels (gtf_expect).

   Each row of GR_STRUCT_OPS has a case in suite_forward_struct named exactly like the row (Cast,
   Sum, ...); test_struct_rows_have_specs fails for a row without one. */
#include "forward.h"

static const gr_dtype gts_dtypes[4] = { GR_F64, GR_F32, GR_I64, GR_BOOL };

static int gts_is_float(gr_dtype dt) { return dt == GR_F64 || dt == GR_F32; }

/* an expected-value array for results of dtype dt: I64 for integers and bools, else F64 */
static gr_array *gts_want(gr_dtype dt, int ndim, const int64_t *shape) {
    return gr_array_new(gts_is_float(dt) ? GR_F64 : GR_I64, ndim, shape);
}
/* want[k] = x[xk], exactly */
static void gts_copy_elem(gr_array *want, int64_t k, const gr_array *x, int64_t xk) {
    if (want->dtype == GR_I64)
        ((int64_t *)want->data)[k] = x->dtype == GR_I64 ? ((const int64_t *)x->data)[xk]
                                   : x->dtype == GR_BOOL ? (int64_t)((const uint8_t *)x->data)[xk] : (int64_t)gr_array_get(x, xk);
    else ((double *)want->data)[k] = gr_array_get(x, xk);
}
static int64_t gts_int_at(const gr_array *x, int64_t k) {
    return x->dtype == GR_I64 ? ((const int64_t *)x->data)[k] : x->dtype == GR_BOOL ? (int64_t)((const uint8_t *)x->data)[k] : 0;
}
/* values of a random input: floats in [lo, hi), ints in [ilo, ihi], bools 0/1 */
static gr_array *gts_random(gtf_rng *r, gr_dtype dt, int ndim, const int64_t *shape, double lo, double hi, int64_t ilo,
                            int64_t ihi) {
    return dt == GR_I64 ? gtf_random(r, dt, ndim, shape, (double)ilo, (double)ihi) : gtf_random(r, dt, ndim, shape, lo, hi);
}
static double gts_tol(gr_dtype dt) { return dt == GR_F32 ? GTF_TOL_F32 : dt == GR_F64 ? GTF_TOL_F64 : 0; }

/* one input, one output */
static int gts_expect1(gr_graph *g, gr_var *x, const gr_array *xa, gr_var *y, gr_dtype dt, const gr_array *want, double tol,
                       const char *label) {
    const gr_array *arr[1];
    arr[0] = xa;
    return gtf_expect(g, 1, &x, arr, y, dt, want, tol, label);
}

/* ==== Cast ========================================================================================= */

static void gts_cast_values(gr_dtype src, gr_dtype dst, int dyn) {
    static const double fv[] = { -2.7, -0.5, -0.0, 0.0, 0.3, 2.7, 1e10, -1e10, 16777217.0, 123456789.987, 3.5, -3.5 };
    static const int64_t iv[] = { -3, 0, 2, 9007199254740993LL, -9007199254740993LL, 16777217, ((int64_t)1 << 60) + ((int64_t)1 << 36) + 1,
                                  INT64_MAX, INT64_MIN, 1, -1 };
    static const uint8_t bv[] = { 0, 1, 1, 0 };
    int64_t n = src == GR_I64 ? (int64_t)(sizeof iv / sizeof iv[0]) : src == GR_BOOL ? 4 : (int64_t)(sizeof fv / sizeof fv[0]), k;
    gr_graph *g = gr_graph_new();
    gr_array *xa = gr_array_new(src, 1, &n), *want = gts_want(dst, 1, &n);
    gr_var *x = gtf_input(g, src, 1, &n, dyn, "x"), *y;
    char label[96];
    for (k = 0; k < n; k++) {
        if (src == GR_F64) ((double *)xa->data)[k] = fv[k];
        else if (src == GR_F32) ((float *)xa->data)[k] = (float)fv[k];
        else if (src == GR_I64) ((int64_t *)xa->data)[k] = iv[k];
        else ((uint8_t *)xa->data)[k] = bv[k];
    }
    for (k = 0; k < n; k++) {       /* the C conversions, straight from the source type */
        double d = src == GR_F64 ? fv[k] : src == GR_F32 ? (double)(float)fv[k] : 0;
        switch (dst) {
        case GR_F64:
            ((double *)want->data)[k] = src == GR_I64 ? (double)iv[k] : src == GR_BOOL ? (double)bv[k] : d;
            break;
        case GR_F32:
            ((double *)want->data)[k] = src == GR_I64 ? (double)(float)iv[k] : src == GR_BOOL ? (double)bv[k] : (double)(float)d;
            break;
        case GR_I64:           /* floats truncate toward zero */
            ((int64_t *)want->data)[k] = src == GR_I64 ? iv[k] : src == GR_BOOL ? (int64_t)bv[k] : (int64_t)d;
            break;
        default:               /* nonzero is true */
            ((int64_t *)want->data)[k] = src == GR_I64 ? iv[k] != 0 : src == GR_BOOL ? bv[k] != 0 : d != 0;
            break;
        }
    }
    y = gr_cast(x, dst);
    snprintf(label, sizeof label, "gr_cast %s -> %s, %s", gr_dtype_name(src), gr_dtype_name(dst), dyn ? "unknown shape" : "static shape");
    gts_expect1(g, x, xa, y, dst, want, 0, label);
    gr_array_free(xa);
    gr_array_free(want);
    gr_graph_free(g);
}

TEST(gts_op_Cast) {
    int s, d, dyn;
    for (s = 0; s < 4; s++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) gts_cast_values(gts_dtypes[s], gts_dtypes[d], dyn);
    {   /* NaN: stays NaN in floats, is true as a bool; 0-d and empty operands */
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_scalar(g, GR_F64, "x"), *e = gr_matrix(g, GR_F32, "e");
        gr_array *xa = gr_array_scalar(GR_F64, NAN), *w = gr_array_scalar(GR_F64, NAN), *wi = gr_array_new(GR_I64, 0, NULL);
        int64_t s03[2] = { 0, 3 };
        gr_array *ea = gr_array_new(GR_F32, 2, s03), *ew = gr_array_new(GR_I64, 2, s03);
        ((int64_t *)wi->data)[0] = 1;
        gts_expect1(g, x, xa, gr_cast(x, GR_F32), GR_F32, w, 0, "gr_cast(NaN) -> float32");
        gts_expect1(g, x, xa, gr_cast(x, GR_BOOL), GR_BOOL, wi, 0, "gr_cast(NaN) -> bool");
        gr_array_set(xa, 0, -7.9);
        ((int64_t *)wi->data)[0] = -7;
        gts_expect1(g, x, xa, gr_cast(x, GR_I64), GR_I64, wi, 0, "gr_cast(-7.9) 0-d -> int64");
        gts_expect1(g, e, ea, gr_cast(e, GR_I64), GR_I64, ew, 0, "gr_cast of an empty (0,3) float32 -> int64");
        gr_array_free(xa); gr_array_free(w); gr_array_free(wi); gr_array_free(ea); gr_array_free(ew);
        gr_graph_free(g);
    }
}

/* ==== reductions ==================================================================================== */

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

/* ==== DimShuffle ===================================================================================== */

/* y = x seen through pattern (GR_NEWAXIS: a new axis of size 1; axes of x left out have size 1) */
static gr_array *gts_dimshuffle_ref(const gr_array *x, int n, const int *pattern) {
    int64_t yshape[GR_MAX_NDIM], xstride[GR_MAX_NDIM], s = 1, k;
    int i;
    gr_array *want;
    for (i = x->ndim - 1; i >= 0; i--) { xstride[i] = s; s *= x->shape[i]; }
    for (i = 0; i < n; i++) yshape[i] = pattern[i] == GR_NEWAXIS ? 1 : x->shape[pattern[i]];
    want = gts_want(x->dtype, n, yshape);
    for (k = 0; k < want->size; k++) {
        int64_t rem = k, xk = 0;
        for (i = n - 1; i >= 0; i--) {
            int64_t yi = rem % yshape[i];
            rem /= yshape[i];
            if (pattern[i] != GR_NEWAXIS) xk += yi * xstride[pattern[i]];
        }
        gts_copy_elem(want, k, x, xk);
    }
    return want;
}

typedef struct gts_ds { int ndim; int64_t shape[3]; int n; int pattern[5]; int dyn_ok; } gts_ds;

TEST(gts_op_DimShuffle) {
    static const gts_ds cases[] = {
        { 2, { 2, 3 }, 3, { 1, GR_NEWAXIS, 0 }, 1 },
        { 3, { 2, 1, 3 }, 2, { 2, 0 }, 0 },                       /* drops the broadcastable axis 1 */
        { 3, { 2, 3, 4 }, 3, { 2, 0, 1 }, 1 },
        { 3, { 2, 3, 4 }, 3, { 0, 2, 1 }, 1 },
        { 3, { 2, 3, 4 }, 3, { 1, 0, 2 }, 1 },
        { 3, { 2, 3, 4 }, 5, { GR_NEWAXIS, 2, GR_NEWAXIS, 1, 0 }, 1 },
        { 3, { 2, 33, 35 }, 3, { 0, 2, 1 }, 1 },                  /* batched inner transpose, past one 32-tile */
        { 0, { 0 }, 2, { GR_NEWAXIS, GR_NEWAXIS }, 1 },
        { 1, { 5 }, 2, { GR_NEWAXIS, 0 }, 1 },                     /* same memory order: may alias */
        { 1, { 5 }, 2, { 0, GR_NEWAXIS }, 1 },
        { 2, { 0, 3 }, 2, { 1, 0 }, 1 },
        { 2, { 1, 1 }, 1, { 1 }, 0 },
        { 2, { 1, 4 }, 1, { 1 }, 0 },
    };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 5;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gts_ds *cs = &cases[c];
                gr_dtype dt = gts_dtypes[d];
                gr_graph *g;
                gr_var *x;
                gr_array *xa, *want;
                char label[128];
                if (dyn && !cs->dyn_ok) continue;
                g = gr_graph_new();
                x = gtf_input(g, dt, cs->ndim, cs->shape, dyn, "x");
                xa = gts_random(&rng, dt, cs->ndim, cs->shape, -5, 5, -99, 99);
                want = gts_dimshuffle_ref(xa, cs->n, cs->pattern);
                snprintf(label, sizeof label, "gr_dimshuffle case %d, %s, %s", c, gr_dtype_name(dt), dyn ? "unknown shape" : "static shape");
                gts_expect1(g, x, xa, gr_dimshuffle(x, cs->n, cs->pattern), dt, want, 0, label);
                gr_array_free(want);
                gr_array_free(xa);
                gr_graph_free(g);
            }
    {   /* a partly known shape: the dropped axis is known to be 1, the others come at call time */
        int64_t part[3] = { -1, 1, -1 }, real[3] = { 4, 1, 5 };
        static const int pat[2] = { 2, 0 };
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_tensor(g, GR_F64, 3, part, "x");
        gr_array *xa = gts_random(&rng, GR_F64, 3, real, -1, 1, 0, 0), *want = gts_dimshuffle_ref(xa, 2, pat);
        gts_expect1(g, x, xa, gr_dimshuffle(x, 2, pat), GR_F64, want, 0, "gr_dimshuffle dropping a static 1 of (?,1,?)");
        /* dropping an axis whose static size is not 1 is refused */
        CHECK(gr_dimshuffle(gr_matrix(g, GR_F64, "m"), 1, pat + 1) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        gr_array_free(xa);
        gr_array_free(want);
        gr_graph_free(g);
    }
}

/* gr_transpose reverses the axes: 2-d (past the 32x32 tiles) and 3-d, every dtype */
TEST(test_transpose) {
    static const gts_ds cases[] = {
        { 2, { 3, 5 }, 0, { 0 }, 1 }, { 2, { 37, 45 }, 0, { 0 }, 1 }, { 3, { 2, 3, 4 }, 0, { 0 }, 1 },
        { 3, { 3, 34, 33 }, 0, { 0 }, 1 }, { 1, { 6 }, 0, { 0 }, 1 }, { 0, { 0 }, 0, { 0 }, 1 }, { 2, { 0, 4 }, 0, { 0 }, 1 },
    };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 6;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gts_ds *cs = &cases[c];
                gr_dtype dt = gts_dtypes[d];
                gr_graph *g = gr_graph_new();
                gr_var *x = gtf_input(g, dt, cs->ndim, cs->shape, dyn, "x");
                gr_array *xa = gts_random(&rng, dt, cs->ndim, cs->shape, -5, 5, -99, 99), *want;
                int rev[3], i;
                char label[128];
                for (i = 0; i < cs->ndim; i++) rev[i] = cs->ndim - 1 - i;
                want = gts_dimshuffle_ref(xa, cs->ndim, rev);
                snprintf(label, sizeof label, "gr_transpose case %d, %s, %s", c, gr_dtype_name(dt), dyn ? "unknown shape" : "static shape");
                gts_expect1(g, x, xa, gr_transpose(x), dt, want, 0, label);
                gr_array_free(want);
                gr_array_free(xa);
                gr_graph_free(g);
            }
}

/* ==== Reshape ======================================================================================= */

typedef struct gts_rs { int ndim; int64_t shape[3]; int nd; int64_t to[4]; int ond; int64_t out[4]; } gts_rs;

TEST(gts_op_Reshape) {
    static const gts_rs cases[] = {
        { 3, { 2, 3, 4 }, 2, { 4, -1 }, 2, { 4, 6 } },
        { 3, { 2, 3, 4 }, 1, { 24 }, 1, { 24 } },
        { 3, { 2, 3, 4 }, 3, { -1, 2, 3 }, 3, { 4, 2, 3 } },
        { 3, { 2, 3, 4 }, 4, { 2, -1, 2, 3 }, 4, { 2, 2, 2, 3 } },
        { 2, { 1, 1 }, 0, { 0 }, 0, { 0 } },
        { 0, { 0 }, 1, { 1 }, 1, { 1 } },
        { 0, { 0 }, 3, { 1, -1, 1 }, 3, { 1, 1, 1 } },
        { 2, { 0, 3 }, 2, { 3, -1 }, 2, { 3, 0 } },
        { 2, { 0, 3 }, 1, { -1 }, 1, { 0 } },
        { 1, { 6 }, 2, { 3, 2 }, 2, { 3, 2 } },
    };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 8;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gts_rs *cs = &cases[c];
                gr_dtype dt = gts_dtypes[d];
                gr_graph *g = gr_graph_new();
                gr_var *x = gtf_input(g, dt, cs->ndim, cs->shape, dyn, "x"), *y;
                gr_array *xa = gts_random(&rng, dt, cs->ndim, cs->shape, -5, 5, -99, 99), *want = gts_want(dt, cs->ond, cs->out);
                int64_t k;
                char label[128];
                for (k = 0; k < want->size; k++) gts_copy_elem(want, k, xa, k);
                snprintf(label, sizeof label, "gr_reshape case %d, %s, %s", c, gr_dtype_name(dt), dyn ? "unknown shape" : "static shape");
                y = gr_reshape(x, cs->nd, cs->to);
                gts_expect1(g, x, xa, y, dt, want, 0, label);
                if (!dyn && y) gtf_static_shape_is(y, cs->ond, cs->out, label);
                if (cs->ndim > 0) {          /* gr_flatten: the same elements in one axis */
                    gr_array *wf = gts_want(dt, 1, &xa->size);
                    for (k = 0; k < wf->size; k++) gts_copy_elem(wf, k, xa, k);
                    snprintf(label, sizeof label, "gr_flatten case %d, %s, %s", c, gr_dtype_name(dt), dyn ? "unknown shape" : "static shape");
                    gts_expect1(g, x, xa, gr_flatten(x), dt, wf, 0, label);
                    gr_array_free(wf);
                }
                gr_array_free(want);
                gr_array_free(xa);
                gr_graph_free(g);
            }
    {   /* impossible shapes: at build time when known, else at call time; two -1 is a bad argument */
        int64_t s23[2] = { 2, 3 }, four = 4, two_free[2] = { -1, -1 };
        gr_graph *g = gr_graph_new();
        gr_var *xs = gr_tensor(g, GR_F64, 2, s23, "xs"), *xd = gr_matrix(g, GR_F64, "xd");
        gr_array *xa = gr_array_new(GR_F64, 2, s23);
        const gr_array *arr[1];
        CHECK(gr_reshape(xs, 1, &four) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
        gr_graph_clear_error(g);
        CHECK(gr_reshape(xd, 2, two_free) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        gr_graph_clear_error(g);
        arr[0] = xa;
        gtf_expect_call_error(g, 1, &xd, arr, gr_reshape(xd, 1, &four), GR_ERR_SHAPE, "gr_reshape (2,3) -> (4,) at call time");
        gr_array_free(xa);
        gr_graph_free(g);
    }
}

/* ==== BroadcastLike, ReduceLike, ReshapeLike, SizeRatio =============================================== */

typedef struct gts_pair { int xnd; int64_t xs[3]; int rnd; int64_t rs[3]; } gts_pair;

/* x and ref as inputs of dtype dt and (for ref) rdt, static or unknown shapes */
static void gts_pair_inputs(gr_graph *g, const gts_pair *p, gr_dtype dt, gr_dtype rdt, int dyn, gtf_rng *rng, gr_var **ins,
                            gr_array **arr) {
    ins[0] = gtf_input(g, dt, p->xnd, p->xs, dyn, "x");
    ins[1] = gtf_input(g, rdt, p->rnd, p->rs, dyn, "ref");
    arr[0] = gts_random(rng, dt, p->xnd, p->xs, -5, 5, -99, 99);
    arr[1] = gts_random(rng, rdt, p->rnd, p->rs, -5, 5, -99, 99);
}

TEST(gts_op_BroadcastLike) {
    static const gts_pair cases[] = {
        { 1, { 4 }, 2, { 3, 4 } }, { 2, { 3, 1 }, 2, { 3, 4 } }, { 0, { 0 }, 2, { 2, 3 } }, { 2, { 1, 4 }, 3, { 2, 3, 4 } },
        { 3, { 2, 1, 1 }, 3, { 2, 3, 4 } }, { 2, { 3, 4 }, 2, { 3, 4 } }, { 1, { 1 }, 1, { 0 } }, { 1, { 3 }, 2, { 0, 3 } },
        { 0, { 0 }, 0, { 0 } },
    };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 9;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gts_pair *p = &cases[c];
                gr_dtype dt = gts_dtypes[d], rdt = gts_dtypes[(d + 1) % 4];     /* ref's dtype does not matter */
                gr_graph *g = gr_graph_new();
                gr_var *ins[2];
                gr_array *arr[2], *want = gts_want(dt, p->rnd, p->rs);
                int64_t k;
                char label[128];
                gts_pair_inputs(g, p, dt, rdt, dyn, &rng, ins, arr);
                for (k = 0; k < want->size; k++) gts_copy_elem(want, k, arr[0], gtf_bcast_index(k, p->rnd, p->rs, p->xnd, p->xs));
                snprintf(label, sizeof label, "gr_broadcast_like case %d, %s, %s", c, gr_dtype_name(dt), dyn ? "unknown shapes" : "static shapes");
                gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_broadcast_like(ins[0], ins[1]), dt, want, 0, label);
                gr_array_free(want);
                gr_array_free(arr[0]);
                gr_array_free(arr[1]);
                gr_graph_free(g);
            }
    {   /* shapes that do not broadcast */
        int64_t s3 = 3, s34[2] = { 3, 4 };
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *r = gr_matrix(g, GR_F64, "r"), *ins[2];
        gr_array *arr[2];
        CHECK(gr_broadcast_like(gr_tensor(g, GR_F64, 1, &s3, "xs"), gr_tensor(g, GR_F64, 2, s34, "rs")) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
        gr_graph_clear_error(g);
        ins[0] = x; ins[1] = r;
        arr[0] = gr_array_new(GR_F64, 1, &s3);
        arr[1] = gr_array_new(GR_F64, 2, s34);
        gtf_expect_call_error(g, 2, ins, (const gr_array *const *)arr, gr_broadcast_like(x, r), GR_ERR_SHAPE, "gr_broadcast_like (3,) to (3,4)");
        gr_array_free(arr[0]);
        gr_array_free(arr[1]);
        gr_graph_free(g);
    }
}

TEST(gts_op_ReduceLike) {
    static const gts_pair cases[] = {
        { 2, { 3, 4 }, 1, { 4 } }, { 2, { 3, 4 }, 2, { 3, 1 } }, { 3, { 2, 3, 4 }, 0, { 0 } }, { 3, { 2, 3, 4 }, 2, { 3, 1 } },
        { 3, { 2, 3, 4 }, 3, { 1, 1, 4 } }, { 2, { 3, 4 }, 2, { 3, 4 } }, { 2, { 0, 3 }, 1, { 3 } }, { 2, { 3, 0 }, 2, { 3, 1 } },
        { 3, { 2, 3, 4 }, 3, { 2, 1, 4 } }, { 0, { 0 }, 0, { 0 } },
    };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 10;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gts_pair *p = &cases[c];
                gr_dtype dt = gts_dtypes[d], rdt = gts_dtypes[(d + 2) % 4];
                gr_dtype odt = dt == GR_BOOL ? GR_I64 : dt;           /* bools are counted, as by gr_sum */
                gr_graph *g = gr_graph_new();
                gr_var *ins[2];
                gr_array *arr[2], *want = gts_want(odt, p->rnd, p->rs);
                int64_t k;
                char label[128];
                gts_pair_inputs(g, p, dt, rdt, dyn, &rng, ins, arr);
                for (k = 0; k < arr[0]->size; k++) {
                    int64_t o = gtf_bcast_index(k, p->xnd, p->xs, p->rnd, p->rs);
                    if (want->dtype == GR_I64) ((int64_t *)want->data)[o] += gts_int_at(arr[0], k);
                    else ((double *)want->data)[o] += gr_array_get(arr[0], k);
                }
                snprintf(label, sizeof label, "gr_reduce_like case %d, %s, %s", c, gr_dtype_name(dt), dyn ? "unknown shapes" : "static shapes");
                gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_reduce_like(ins[0], ins[1]), odt, want, gts_tol(odt), label);
                gr_array_free(want);
                gr_array_free(arr[0]);
                gr_array_free(arr[1]);
                gr_graph_free(g);
            }
}

TEST(gts_op_ReshapeLike) {
    static const gts_pair cases[] = {
        { 2, { 2, 6 }, 2, { 3, 4 } }, { 1, { 6 }, 2, { 2, 3 } }, { 1, { 1 }, 0, { 0 } }, { 2, { 0, 3 }, 2, { 3, 0 } },
        { 3, { 2, 3, 4 }, 1, { 24 } },
    };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 11;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gts_pair *p = &cases[c];
                gr_dtype dt = gts_dtypes[d], rdt = gts_dtypes[(d + 3) % 4];
                gr_graph *g = gr_graph_new();
                gr_var *ins[2];
                gr_array *arr[2], *want = gts_want(dt, p->rnd, p->rs);
                int64_t k;
                char label[128];
                gts_pair_inputs(g, p, dt, rdt, dyn, &rng, ins, arr);
                for (k = 0; k < want->size; k++) gts_copy_elem(want, k, arr[0], k);
                snprintf(label, sizeof label, "gr_reshape_like case %d, %s, %s", c, gr_dtype_name(dt), dyn ? "unknown shapes" : "static shapes");
                gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_reshape_like(ins[0], ins[1]), dt, want, 0, label);
                gr_array_free(want);
                gr_array_free(arr[0]);
                gr_array_free(arr[1]);
                gr_graph_free(g);
            }
    {   /* sizes that differ: at build time when known, else at call time */
        int64_t s6 = 6, s5 = 5;
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *r = gr_vector(g, GR_F64, "r"), *ins[2];
        gr_array *arr[2];
        CHECK(gr_reshape_like(gr_tensor(g, GR_F64, 1, &s6, "xs"), gr_tensor(g, GR_F64, 1, &s5, "rs")) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
        gr_graph_clear_error(g);
        ins[0] = x; ins[1] = r;
        arr[0] = gr_array_new(GR_F64, 1, &s6);
        arr[1] = gr_array_new(GR_F64, 1, &s5);
        gtf_expect_call_error(g, 2, ins, (const gr_array *const *)arr, gr_reshape_like(x, r), GR_ERR_SHAPE, "gr_reshape_like (6,) as (5,)");
        gr_array_free(arr[0]);
        gr_array_free(arr[1]);
        gr_graph_free(g);
    }
}

TEST(gts_op_SizeRatio) {
    static const gts_pair cases[] = {
        { 3, { 2, 3, 4 }, 2, { 3, 4 } }, { 3, { 2, 3, 4 }, 1, { 5 } }, { 0, { 0 }, 2, { 2, 2 } }, { 2, { 0, 3 }, 1, { 2 } },
        { 1, { 7 }, 0, { 0 } }, { 1, { 3 }, 2, { 0, 4 } },
    };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 12;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (d = 0; d < 2; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gts_pair *p = &cases[c];
                gr_dtype odt = gts_dtypes[d];
                gr_graph *g = gr_graph_new();
                gr_var *ins[2];
                gr_array *arr[2], *want = gr_array_new(GR_F64, 0, NULL);
                char label[128];
                gts_pair_inputs(g, p, GR_I64, GR_BOOL, dyn, &rng, ins, arr);    /* the inputs' dtypes do not matter */
                /* size(a) / size(b); 0 when b is empty (the ratio is only used to scale gradients of empty means) */
                ((double *)want->data)[0] = arr[1]->size ? (double)arr[0]->size / (double)arr[1]->size : 0.0;
                snprintf(label, sizeof label, "gr_size_ratio case %d, %s, %s", c, gr_dtype_name(odt), dyn ? "unknown shapes" : "static shapes");
                gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_size_ratio(ins[0], ins[1], odt), odt, want, 0, label);
                gr_array_free(want);
                gr_array_free(arr[0]);
                gr_array_free(arr[1]);
                gr_graph_free(g);
            }
    {
        gr_graph *g = gr_graph_new();
        gr_var *a = gr_vector(g, GR_F64, "a");
        CHECK(gr_size_ratio(a, a, GR_I64) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        gr_graph_free(g);
    }
}

/* ==== Dot ============================================================================================ */

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

/* ==== Softmax, LogSoftmax ============================================================================= */

/* softmax / log-softmax over one axis by a plain loop, stabilised by the slice's max */
static gr_array *gts_softmax_ref(const gr_array *x, int axis, int log_out) {
    int64_t outer = 1, n = x->shape[axis], inner = 1, o, i, j;
    gr_array *want = gr_array_new(GR_F64, x->ndim, x->shape);
    int d;
    for (d = 0; d < axis; d++) outer *= x->shape[d];
    for (d = axis + 1; d < x->ndim; d++) inner *= x->shape[d];
    for (o = 0; o < outer; o++)
        for (j = 0; j < inner; j++) {
            double m = -INFINITY, s = 0;
            for (i = 0; i < n; i++) {
                double v = gr_array_get(x, (o * n + i) * inner + j);
                if (v > m) m = v;
            }
            for (i = 0; i < n; i++) s += exp(gr_array_get(x, (o * n + i) * inner + j) - m);
            for (i = 0; i < n; i++) {
                double v = gr_array_get(x, (o * n + i) * inner + j) - m;
                ((double *)want->data)[(o * n + i) * inner + j] = log_out ? v - log(s) : exp(v) / s;
            }
        }
    return want;
}

static void gts_softmax_op(int log_out) {
    typedef struct { int ndim; int64_t shape[3]; } sh_t;
    static const sh_t shapes[] = { { 2, { 3, 4 } }, { 3, { 2, 3, 4 } }, { 1, { 5 } }, { 2, { 0, 4 } }, { 2, { 3, 0 } }, { 2, { 1, 1 } } };
    gr_var *(*op)(gr_var *, int) = log_out ? gr_log_softmax : gr_softmax;
    const char *name = log_out ? "gr_log_softmax" : "gr_softmax";
    gtf_rng rng;
    int c, d, dyn, a;
    rng.s = 15 + (uint64_t)log_out;
    for (c = 0; c < (int)(sizeof shapes / sizeof shapes[0]); c++)
        for (d = 0; d < 3; d++)
            for (dyn = 0; dyn < 2; dyn++)
                for (a = -shapes[c].ndim; a < shapes[c].ndim; a++) {
                    gr_dtype dt = gts_dtypes[d], odt = dt == GR_F32 ? GR_F32 : GR_F64;
                    gr_graph *g = gr_graph_new();
                    gr_var *x = gtf_input(g, dt, shapes[c].ndim, shapes[c].shape, dyn, "x");
                    gr_array *xa = gts_random(&rng, dt, shapes[c].ndim, shapes[c].shape, -4, 4, -4, 4);
                    gr_array *want = gts_softmax_ref(xa, a < 0 ? a + shapes[c].ndim : a, log_out);
                    char label[128];
                    snprintf(label, sizeof label, "%s(axis %d) of %d-d case %d, %s, %s", name, a, shapes[c].ndim, c, gr_dtype_name(dt),
                             dyn ? "unknown shape" : "static shape");
                    gts_expect1(g, x, xa, op(x, a), odt, want, gts_tol(odt), label);
                    gr_array_free(want);
                    gr_array_free(xa);
                    gr_graph_free(g);
                }
    {   /* logits of magnitude 1e3: no overflow, no NaN, the right values */
        static const double big[12] = { 1000, 1001, 999, -1000, -1000, -1001, -999, -1002, 1e3, 1e3, 1e3, 1e3 };
        int64_t s34[2] = { 3, 4 };
        for (d = 0; d < 2; d++)
            for (a = 0; a < 2; a++) {
                gr_dtype dt = gts_dtypes[d];
                gr_graph *g = gr_graph_new();
                gr_var *x = gr_matrix(g, dt, "x");
                gr_array *xa = gr_array_new(dt, 2, s34), *want;
                char label[128];
                int64_t k;
                for (k = 0; k < 12; k++) gr_array_set(xa, k, big[k]);
                want = gts_softmax_ref(xa, a, log_out);
                for (k = 0; k < 12; k++) CHECK(isfinite(gtf_wantf(want, k)));
                if (a == 1 && !log_out) CHECK_NEAR(gtf_wantf(want, 8), 0.25, 1e-15);
                if (a == 1 && log_out) CHECK_NEAR(gtf_wantf(want, 3), -2001 - log(1 + exp(-1.0) + exp(-2.0) + exp(-2001.0)), 1e-12);
                snprintf(label, sizeof label, "%s(axis %d) of logits near 1e3, %s", name, a, gr_dtype_name(dt));
                gts_expect1(g, x, xa, op(x, a), dt, want, gts_tol(dt), label);
                gr_array_free(want);
                gr_array_free(xa);
                gr_graph_free(g);
            }
    }
    {   /* a 0-d operand has no axis; an axis out of range */
        gr_graph *g = gr_graph_new();
        CHECK(op(gr_scalar(g, GR_F64, "s"), 0) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        gr_graph_clear_error(g);
        CHECK(op(gr_matrix(g, GR_F64, "m"), 2) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        gr_graph_free(g);
    }
}

TEST(gts_op_Softmax) { gts_softmax_op(0); }
TEST(gts_op_LogSoftmax) { gts_softmax_op(1); }

/* ==== int64 overflow ================================================================================= */

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

/* ==== coverage of the table ============================================================================ */

extern const gt_case suite_forward_struct[];


/* ---- the gradient-modifying ops: identities in the forward pass ------------------------------- */

static gr_var *gts_gradop(int which, gr_var *x) {
    switch (which) {
    case 0: return gr_zero_grad(x);
    case 1: return gr_disconnected_grad(x);
    case 2: return gr_consider_constant(x);
    case 3: return gr_grad_clip(x, -0.5, 0.5);
    case 4: return gr_grad_scale(x, -3.0);
    default: return gr_undefined_grad(x);
    }
}
static void gts_quiet(void *user, const char *message) { (void)user; (void)message; }
static void gts_gradop_identity(int which) {
    static const int64_t shape[2] = { 3, 4 };
    gtf_rng rng;
    int d, dyn;
    rng.s = 100 + (uint64_t)which;
    for (d = 0; d < 3; d++)
        for (dyn = 0; dyn < 2; dyn++) {
            gr_dtype dt = gts_dtypes[d];
            gr_graph *g = gr_graph_new();
            gr_var *x = gtf_input(g, dt, 2, shape, dyn, "x");
            gr_array *a = gtf_random(&rng, dt, 2, shape, -3, 3), *want = gts_want(dt, 2, shape);
            int64_t k;
            char label[96];
            gr_graph_set_log(g, gts_quiet, NULL);
            for (k = 0; k < want->size; k++) gts_copy_elem(want, k, a, k);
            snprintf(label, sizeof label, "gradient op %d on %s", which, gr_dtype_name(dt));
            gtf_expect(g, 1, &x, (const gr_array *const *)&a, gts_gradop(which, x), dt, want, 0, label);
            gr_array_free(a);
            gr_array_free(want);
            gr_graph_free(g);
        }
}
TEST(gts_op_ZeroGrad) { gts_gradop_identity(0); }
TEST(gts_op_DisconnectedGrad) { gts_gradop_identity(1); }
TEST(gts_op_ConsiderConstant) { gts_gradop_identity(2); }
TEST(gts_op_GradClip) { gts_gradop_identity(3); }
TEST(gts_op_GradScale) { gts_gradop_identity(4); }
TEST(gts_op_UndefinedGrad) { gts_gradop_identity(5); }

/* ---- batching, reached through gr_jacobian ------------------------------------------------------ */

/* jacobian(X, X) for X (2,3) is the identity of shape (2,3,2,3): EyeLike then Unflatten */
static void gts_jacobian_identity(void) {
    static const int64_t shape[2] = { 2, 3 };
    gtf_rng rng;
    int dyn;
    rng.s = 120;
    for (dyn = 0; dyn < 2; dyn++) {
        int64_t jshape[4] = { 2, 3, 2, 3 }, k;
        gr_graph *g = gr_graph_new();
        gr_var *X = gtf_input(g, GR_F64, 2, shape, dyn, "X"), *J = NULL;
        gr_array *a = gtf_random(&rng, GR_F64, 2, shape, -1, 1), *want = gr_array_new(GR_F64, 4, jshape);
        for (k = 0; k < 6; k++) ((double *)want->data)[k * 6 + k] = 1.0;
        CHECK_STATUS(gr_jacobian(X, 1, &X, &J, NULL), GR_OK);
        gtf_expect(g, 1, &X, (const gr_array *const *)&a, J, GR_F64, want, 0, dyn ? "jacobian(X, X), unknown shape" : "jacobian(X, X)");
        gr_array_free(a);
        gr_array_free(want);
        gr_graph_free(g);
    }
}
TEST(gts_op_EyeLike) { gts_jacobian_identity(); }
TEST(gts_op_Unflatten) { gts_jacobian_identity(); }

/* jacobian(dot(A, x), x) = A: the pullback's dot runs row by row over the batch (Batched) */
TEST(gts_op_Batched) {
    static const int64_t as[2] = { 4, 3 }, xs[1] = { 3 };
    gtf_rng rng;
    int dyn;
    rng.s = 121;
    for (dyn = 0; dyn < 2; dyn++) {
        gr_graph *g = gr_graph_new();
        gr_var *A = gtf_input(g, GR_F64, 2, as, dyn, "A"), *x = gtf_input(g, GR_F64, 1, xs, dyn, "x"), *J = NULL, *ins[2];
        gr_array *arr[2], *want;
        int64_t k;
        arr[0] = gtf_random(&rng, GR_F64, 2, as, -1, 1);
        arr[1] = gtf_random(&rng, GR_F64, 1, xs, -1, 1);
        want = gr_array_copy(arr[0]);
        ins[0] = A; ins[1] = x;
        CHECK_STATUS(gr_jacobian(gr_dot(A, x), 1, &x, &J, NULL), GR_OK);
        gtf_expect(g, 2, ins, (const gr_array *const *)arr, J, GR_F64, want, GTF_TOL_F64, "jacobian(dot(A, x), x)");
        /* and a reshape in the pullback: jacobian(reshape(x, (3, 1)), x) is the identity as (3, 1, 3) */
        {
            int64_t rs[2] = { 3, 1 }, js[3] = { 3, 1, 3 };
            gr_var *Jr = NULL;
            gr_array *wr = gr_array_new(GR_F64, 3, js);
            for (k = 0; k < 3; k++) ((double *)wr->data)[k * 3 + k] = 1.0;
            CHECK_STATUS(gr_jacobian(gr_reshape(x, 2, rs), 1, &x, &Jr, NULL), GR_OK);
            gtf_expect(g, 1, &x, (const gr_array *const *)&arr[1], Jr, GR_F64, wr, 0, "jacobian(reshape(x), x)");
            gr_array_free(wr);
        }
        gr_array_free(arr[0]);
        gr_array_free(arr[1]);
        gr_array_free(want);
        gr_graph_free(g);
    }
}

/* ---- indexing: NumPy's semantics, by a plain-C reference ---------------------------------------- */

/* NumPy's positions of x[start:stop:step] on a length-n axis */
static int64_t gts_slice_positions(int64_t n, int64_t start, int64_t stop, int64_t step, int64_t *pos) {
    int64_t m = 0, i;
    if (step > 0) {
        int64_t a = start == GR_OPEN ? 0 : start < 0 ? start + n : start, b = stop == GR_OPEN ? n : stop < 0 ? stop + n : stop;
        if (a < 0) a = 0;
        if (b > n) b = n;
        for (i = a; i < b; i += step) pos[m++] = i;
    } else {
        int64_t a = start == GR_OPEN ? n - 1 : start < 0 ? start + n : start, b = stop == GR_OPEN ? -1 : stop < 0 ? stop + n : stop;
        if (a > n - 1) a = n - 1;
        if (b < -1) b = -1;
        for (i = a; i > b; i += step) pos[m++] = i;
    }
    return m;
}

/* x (2,5,3): gr_slice along each axis for many bounds; gr_index along each axis */
TEST(gts_op_Slice) {
    static const int64_t shape[3] = { 2, 5, 3 };
    static const int64_t bounds[][3] = {
        { 0, 5, 1 }, { 1, 4, 1 }, { GR_OPEN, GR_OPEN, 2 }, { -4, -1, 1 }, { GR_OPEN, GR_OPEN, -1 }, { 4, 0, -2 },
        { -1, GR_OPEN, -3 }, { 3, 1, 1 }, { -100, 100, 1 }, { 100, -100, -1 }, { 2, GR_OPEN, 7 }, { GR_OPEN, 2, 1 },
    };
    gtf_rng rng;
    int axis, b, dyn, d;
    rng.s = 130;
    for (axis = 0; axis < 3; axis++)
        for (b = 0; b < (int)(sizeof bounds / sizeof bounds[0]); b++)
            for (dyn = 0; dyn < 2; dyn++)
                for (d = 0; d < 3; d++) {
                    gr_dtype dt = gts_dtypes[d];
                    gr_graph *g = gr_graph_new();
                    gr_var *x = gtf_input(g, dt, 3, shape, dyn, "x");
                    gr_array *a = gtf_random(&rng, dt, 3, shape, -5, 5), *want;
                    int64_t pos[8], m = gts_slice_positions(shape[axis], bounds[b][0], bounds[b][1], bounds[b][2], pos), ws[3], i, j, k;
                    char label[128];
                    for (i = 0; i < 3; i++) ws[i] = i == axis ? m : shape[i];
                    want = gts_want(dt, 3, ws);
                    for (i = 0; i < ws[0]; i++)
                        for (j = 0; j < ws[1]; j++)
                            for (k = 0; k < ws[2]; k++) {
                                int64_t src[3];
                                src[0] = i; src[1] = j; src[2] = k;
                                src[axis] = pos[src[axis]];
                                gts_copy_elem(want, (i * ws[1] + j) * ws[2] + k, a, (src[0] * 5 + src[1]) * 3 + src[2]);
                            }
                    snprintf(label, sizeof label, "gr_slice axis %d bounds %d (%s, %s)", axis, b, gr_dtype_name(dt), dyn ? "dynamic" : "static");
                    gtf_expect(g, 1, &x, (const gr_array *const *)&a, gr_slice(x, axis, bounds[b][0], bounds[b][1], bounds[b][2]), dt, want, 0, label);
                    if (!dyn) gtf_static_shape_is(gr_slice(x, axis, bounds[b][0], bounds[b][1], bounds[b][2]), 3, ws, label);
                    gr_array_free(a);
                    gr_array_free(want);
                    gr_graph_free(g);
                }
    {   /* a zero step is a bad argument */
        gr_graph *g = gr_graph_new();
        CHECK(gr_slice(gr_vector(g, GR_F64, "x"), 0, 0, 1, 0) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        gr_graph_free(g);
    }
}

TEST(gts_op_Index) {
    static const int64_t shape[3] = { 2, 5, 3 };
    static const int64_t idx[] = { 0, 1, -1, -2 };
    gtf_rng rng;
    int axis, b, dyn;
    rng.s = 131;
    for (axis = 0; axis < 3; axis++)
        for (b = 0; b < 4; b++)
            for (dyn = 0; dyn < 2; dyn++) {
                gr_graph *g = gr_graph_new();
                gr_var *x = gtf_input(g, GR_F64, 3, shape, dyn, "x");
                gr_array *a = gtf_random(&rng, GR_F64, 3, shape, -5, 5), *want;
                int64_t ws[2], i, j, m = 0, at = idx[b] < 0 ? idx[b] + shape[axis] : idx[b];
                char label[96];
                for (i = 0; i < 3; i++) if (i != axis) ws[m++] = shape[i];
                want = gr_array_new(GR_F64, 2, ws);
                for (i = 0; i < ws[0]; i++)
                    for (j = 0; j < ws[1]; j++) {
                        int64_t src[3], q = 0, t;
                        for (t = 0; t < 3; t++) src[t] = t == axis ? at : (q++ == 0 ? i : j);
                        ((double *)want->data)[i * ws[1] + j] = gr_array_get(a, (src[0] * 5 + src[1]) * 3 + src[2]);
                    }
                snprintf(label, sizeof label, "gr_index axis %d at %lld", axis, (long long)idx[b]);
                gtf_expect(g, 1, &x, (const gr_array *const *)&a, gr_index(x, axis, idx[b]), GR_F64, want, 0, label);
                gr_array_free(a);
                gr_array_free(want);
                gr_graph_free(g);
            }
    {   /* out of range: GR_ERR_RUNTIME at call time naming the index */
        int64_t n = 3;
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_index(x, 0, 7);
        gr_array *a = gr_array_new(GR_F64, 1, &n);
        gr_fn *f = gr_function(1, &x, 1, &y, NULL);
        const gr_array *in[1], *out[1];
        in[0] = a;
        CHECK_STATUS(gr_call(f, in, out), GR_ERR_RUNTIME);
        CHECK_CONTAINS(gr_fn_message(f), "7");
        gr_fn_free(f);
        gr_array_free(a);
        gr_graph_free(g);
    }
}

TEST(gts_op_Take) {
    static const int64_t shape[2] = { 4, 3 };
    static const int64_t ix[5] = { 2, 0, -1, 2, 1 };
    gtf_rng rng;
    int axis, dyn;
    rng.s = 132;
    for (axis = 0; axis < 2; axis++)
        for (dyn = 0; dyn < 2; dyn++) {
            int64_t ishape[2] = { 1, 5 }, ws[3], i, t, r;
            gr_graph *g = gr_graph_new();
            gr_var *x = gtf_input(g, GR_F64, 2, shape, dyn, "x"), *ind = gtf_input(g, GR_I64, 2, ishape, dyn, "ind"), *ins[2];
            gr_array *arr[2], *want;
            char label[96];
            int64_t n = shape[axis];
            arr[0] = gtf_random(&rng, GR_F64, 2, shape, -5, 5);
            arr[1] = gr_array_from(GR_I64, 2, ishape, ix);
            if (axis == 0) { ws[0] = 1; ws[1] = 5; ws[2] = 3; }
            else { ws[0] = 4; ws[1] = 1; ws[2] = 5; }
            want = gr_array_new(GR_F64, 3, ws);
            for (r = 0; r < (axis == 0 ? 3 : 4); r++)
                for (t = 0; t < 5; t++) {
                    int64_t p = ix[t] < 0 ? ix[t] + n : ix[t];
                    i = axis == 0 ? t * 3 + r : r * 5 + t;
                    ((double *)want->data)[i] = gr_array_get(arr[0], axis == 0 ? p * 3 + r : r * 3 + p);
                }
            ins[0] = x; ins[1] = ind;
            snprintf(label, sizeof label, "gr_take axis %d", axis);
            gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_take(x, ind, axis), GR_F64, want, 0, label);
            gr_array_free(arr[0]);
            ((int64_t *)arr[1]->data)[3] = 4;           /* out of range for both axes */
            arr[0] = gtf_random(&rng, GR_F64, 2, shape, -5, 5);
            gtf_expect_call_error(g, 2, ins, (const gr_array *const *)arr, gr_take(x, ind, axis), GR_ERR_RUNTIME, label);
            gr_array_free(arr[0]);
            gr_array_free(arr[1]);
            gr_array_free(want);
            gr_graph_free(g);
        }
    {   /* float indices are a type error */
        gr_graph *g = gr_graph_new();
        CHECK(gr_take(gr_vector(g, GR_F64, "x"), gr_vector(g, GR_F64, "i"), 0) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
        gr_graph_free(g);
    }
}

/* set / inc of a slice, an index and a take, with y broadcast; repeated take indices: the last
   write wins in set, all writes add up in inc */
TEST(gts_op_ViewUpdate) {
    static const int64_t shape[2] = { 5, 3 }, ys[1] = { 3 };
    gtf_rng rng;
    int inc, kind, dyn;
    rng.s = 133;
    for (inc = 0; inc < 2; inc++)
        for (kind = 0; kind < 3; kind++)
            for (dyn = 0; dyn < 2; dyn++) {
                gr_graph *g = gr_graph_new();
                gr_var *x = gtf_input(g, GR_F64, 2, shape, dyn, "x"), *y = gtf_input(g, GR_F64, 1, ys, dyn, "y"), *v, *ins[2];
                gr_var *y_in = y;
                gr_array *arr[2], *want;
                int64_t r, c;
                char label[96];
                arr[0] = gtf_random(&rng, GR_F64, 2, shape, -5, 5);
                arr[1] = gtf_random(&rng, GR_F64, 1, ys, -5, 5);
                want = gr_array_copy(arr[0]);
                v = kind == 0 ? gr_slice(x, 0, -1, 0, -2) : kind == 1 ? gr_index(x, 0, -2) : gr_slice(x, 1, 1, 2, 1);
                for (r = 0; r < 5; r++)
                    for (c = 0; c < 3; c++) {
                        int hit = kind == 0 ? (r == 4 || r == 2) : kind == 1 ? r == 3 : c == 1;
                        double yv = gr_array_get(arr[1], kind == 2 ? r % 3 : c);
                        if (hit) ((double *)want->data)[r * 3 + c] = inc ? gr_array_get(arr[0], r * 3 + c) + yv : yv;
                    }
                if (kind == 2) {                        /* x[:, 1:2] is (5, 1): y of shape (3,) does not fit; use y[0] */
                    gr_array_free(want);
                    want = gr_array_copy(arr[0]);
                    for (r = 0; r < 5; r++) {
                        double yv = gr_array_get(arr[1], 0);
                        ((double *)want->data)[r * 3 + 1] = inc ? gr_array_get(arr[0], r * 3 + 1) + yv : yv;
                    }
                    y = gr_index(y, 0, 0);
                }
                ins[0] = x; ins[1] = y_in;
                snprintf(label, sizeof label, "%s of view kind %d", inc ? "gr_inc_subtensor" : "gr_set_subtensor", kind);
                gtf_expect(g, 2, ins, (const gr_array *const *)arr, inc ? gr_inc_subtensor(v, y) : gr_set_subtensor(v, y),
                           GR_F64, want, GTF_TOL_F64, label);
                gr_array_free(arr[0]);
                gr_array_free(arr[1]);
                gr_array_free(want);
                gr_graph_free(g);
            }
    {   /* not a view: a bad argument */
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x");
        CHECK(gr_set_subtensor(gr_exp(x), x) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        gr_graph_free(g);
    }
}

/* a 0-d view (one element of a vector) of integers and bools, set and incremented: the integer
   scatter once read y's stride of axis -1 of the 0-d view (UBSan; found by the fuzzer) */
TEST(test_view_update_0d_int) {
    static const int64_t xs[1] = { 3 };
    static const int64_t xi[3] = { 5, -7, 9 };
    static const uint8_t xb[3] = { 1, 0, 1 };
    int inc, b;
    for (b = 0; b < 2; b++)
        for (inc = 0; inc < 2; inc++) {
            gr_dtype dt = b ? GR_BOOL : GR_I64;
            gr_graph *g = gr_graph_new();
            gr_var *x = gr_vector(g, dt, "x"), *y = gr_scalar(g, dt, "y"), *ins[2];
            gr_array *arr[2], *want;
            char label[64];
            arr[0] = gr_array_from(dt, 1, xs, b ? (const void *)xb : (const void *)xi);
            arr[1] = gr_array_scalar(dt, b ? 1 : 4);
            want = gr_array_new(GR_I64, 1, xs);             /* (integer wants are I64) */
            /* x[1] := y, or x[1] += y (a bool sum is a logical or) */
            ((int64_t *)want->data)[0] = b ? 1 : 5;
            ((int64_t *)want->data)[1] = b ? 1 : inc ? -7 + 4 : 4;
            ((int64_t *)want->data)[2] = b ? 1 : 9;
            ins[0] = x; ins[1] = y;
            snprintf(label, sizeof label, "%s of x[1], %s", inc ? "gr_inc_subtensor" : "gr_set_subtensor", gr_dtype_name(dt));
            gtf_expect(g, 2, ins, (const gr_array *const *)arr, inc ? gr_inc_subtensor(gr_index(x, 0, 1), y) : gr_set_subtensor(gr_index(x, 0, 1), y),
                       dt, want, 0, label);
            gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(want);
            gr_graph_free(g);
        }
}

TEST(gts_op_TakeUpdate) {
    static const int64_t xs[1] = { 5 }, is[1] = { 4 }, idx[4] = { 1, -1, 1, 3 };
    static const double yv[4] = { 10, 20, 30, 40 };
    int inc;
    for (inc = 0; inc < 2; inc++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *ind = gr_vector(g, GR_I64, "ind"), *y = gr_vector(g, GR_F64, "y"), *ins[3], *out;
        double x0[5] = { 1, 2, 3, 4, 5 };
        gr_array *arr[3], *want = gr_array_from(GR_F64, 1, xs, x0);
        arr[0] = gr_array_from(GR_F64, 1, xs, x0);
        arr[1] = gr_array_from(GR_I64, 1, is, idx);
        arr[2] = gr_array_from(GR_F64, 1, is, yv);
        if (inc) { ((double *)want->data)[1] += 10 + 30; ((double *)want->data)[4] += 20; ((double *)want->data)[3] += 40; }
        else { ((double *)want->data)[1] = 30; ((double *)want->data)[4] = 20; ((double *)want->data)[3] = 40; }
        ins[0] = x; ins[1] = ind; ins[2] = y;
        out = inc ? gr_inc_subtensor(gr_take(x, ind, 0), y) : gr_set_subtensor(gr_take(x, ind, 0), y);
        gtf_expect(g, 3, ins, (const gr_array *const *)arr, out, GR_F64, want, 0, inc ? "inc take, repeated" : "set take, repeated");
        gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(arr[2]); gr_array_free(want);
        gr_graph_free(g);
    }
}

/* ==== second-wave reductions and losses: the values are checked in tests/t_reduce2.c ================== */

void gtr_fwd_ArgMax(void);
void gtr_fwd_LogSumExp(void);
void gtr_fwd_CumSum(void);
void gtr_fwd_CumProd(void);
void gtr_fwd_LinScan(void);
void gtr_fwd_CrossEntropy(void);
void gtr_fwd_OneHot(void);
TEST(gts_op_ArgMax) { gtr_fwd_ArgMax(); }
TEST(gts_op_LogSumExp) { gtr_fwd_LogSumExp(); }
TEST(gts_op_CumSum) { gtr_fwd_CumSum(); }
TEST(gts_op_CumProd) { gtr_fwd_CumProd(); }
TEST(gts_op_LinScan) { gtr_fwd_LinScan(); }
TEST(gts_op_CrossEntropy) { gtr_fwd_CrossEntropy(); }
TEST(gts_op_OneHot) { gtr_fwd_OneHot(); }

/* ==== second-wave linear algebra: the cases live in tests/t_linalg2.c ======================= */

void gtl_forward_TensorDot(void); void gtl_forward_MatMul(void); void gtl_forward_LUFactor(void);
void gtl_forward_MatrixInverse(void); void gtl_forward_Det(void); void gtl_forward_LogDet(void); void gtl_forward_Adjugate(void);
void gtl_forward_Solve(void); void gtl_forward_Cholesky(void); void gtl_forward_Trace(void);
void gtl_forward_TriScale(void);
TEST(gts_op_TensorDot) { gtl_forward_TensorDot(); }
TEST(gts_op_MatMul) { gtl_forward_MatMul(); }
TEST(gts_op_LUFactor) { gtl_forward_LUFactor(); }
TEST(gts_op_MatrixInverse) { gtl_forward_MatrixInverse(); }
TEST(gts_op_Det) { gtl_forward_Det(); }
TEST(gts_op_LogDet) { gtl_forward_LogDet(); }
TEST(gts_op_Adjugate) { gtl_forward_Adjugate(); }
TEST(gts_op_Solve) { gtl_forward_Solve(); }
TEST(gts_op_Cholesky) { gtl_forward_Cholesky(); }
TEST(gts_op_Trace) { gtl_forward_Trace(); }
TEST(gts_op_TriScale) { gtl_forward_TriScale(); }
/* ---- second wave: structure (tests/t_struct2.c tests these ops in depth) ------------------------- */

/* [x (2,3) | y (2,2)] along -1, every dtype, static and call-time shapes */
TEST(gts_op_Join) {
    static const int64_t sx[2] = { 2, 3 }, sy[2] = { 2, 2 }, sj[2] = { 2, 5 };
    gtf_rng rng;
    int d, dyn;
    rng.s = 140;
    for (d = 0; d < 4; d++)
        for (dyn = 0; dyn < 2; dyn++) {
            gr_dtype dt = gts_dtypes[d];
            gr_graph *g = gr_graph_new();
            gr_var *ins[2];
            gr_array *arr[2], *want = gts_want(dt, 2, sj);
            int64_t r, c;
            ins[0] = gtf_input(g, dt, 2, sx, dyn, "x");
            ins[1] = gtf_input(g, dt, 2, sy, dyn, "y");
            arr[0] = gts_random(&rng, dt, 2, sx, -5, 5, -9, 9);
            arr[1] = gts_random(&rng, dt, 2, sy, -5, 5, -9, 9);
            for (r = 0; r < 2; r++)
                for (c = 0; c < 5; c++) gts_copy_elem(want, r * 5 + c, arr[c < 3 ? 0 : 1], c < 3 ? r * 3 + c : r * 2 + c - 3);
            gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_concatenate(2, ins, -1), dt, want, 0, "gr_concatenate (2,3) | (2,2)");
            gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(want);
            gr_graph_free(g);
        }
}

/* x (2,5) cut into (2,0,3) along axis 1 */
TEST(gts_op_Split) {
    static const int64_t sx[2] = { 2, 5 }, sizes[3] = { 2, 0, 3 };
    gtf_rng rng;
    int d, dyn, j;
    rng.s = 141;
    for (d = 0; d < 4; d++)
        for (dyn = 0; dyn < 2; dyn++) {
            gr_dtype dt = gts_dtypes[d];
            gr_graph *g = gr_graph_new();
            gr_var *x = gtf_input(g, dt, 2, sx, dyn, "x"), *p[3];
            gr_array *xa = gts_random(&rng, dt, 2, sx, -5, 5, -9, 9);
            int64_t off = 0;
            CHECK_STATUS(gr_split(x, 1, 3, sizes, p), GR_OK);
            for (j = 0; j < 3; j++) {
                int64_t ps[2], r, c;
                gr_array *want;
                ps[0] = 2; ps[1] = sizes[j];
                want = gts_want(dt, 2, ps);
                for (r = 0; r < 2; r++)
                    for (c = 0; c < sizes[j]; c++) gts_copy_elem(want, r * sizes[j] + c, xa, r * 5 + off + c);
                gts_expect1(g, x, xa, p[j], dt, want, 0, "gr_split (2,5) into 2, 0, 3");
                off += sizes[j];
                gr_array_free(want);
            }
            gr_array_free(xa);
            gr_graph_free(g);
        }
}

/* x (3,1) broadcast to (2,3,4) */
TEST(gts_op_BroadcastTo) {
    static const int64_t sx[2] = { 3, 1 }, sy[3] = { 2, 3, 4 };
    gtf_rng rng;
    int d, dyn;
    rng.s = 142;
    for (d = 0; d < 4; d++)
        for (dyn = 0; dyn < 2; dyn++) {
            gr_dtype dt = gts_dtypes[d];
            gr_graph *g = gr_graph_new();
            gr_var *x = gtf_input(g, dt, 2, sx, dyn, "x");
            gr_array *xa = gts_random(&rng, dt, 2, sx, -5, 5, -9, 9), *want = gts_want(dt, 3, sy);
            int64_t k;
            for (k = 0; k < 24; k++) gts_copy_elem(want, k, xa, (k / 4) % 3);
            gts_expect1(g, x, xa, gr_broadcast_to(x, 3, sy), dt, want, 0, "gr_broadcast_to (3,1) to (2,3,4)");
            gr_array_free(xa); gr_array_free(want);
            gr_graph_free(g);
        }
}

/* x (2,3) tiled by (2,1,2): (2,2,6) */
TEST(gts_op_Tile) {
    static const int64_t sx[2] = { 2, 3 }, reps[3] = { 2, 1, 2 }, sy[3] = { 2, 2, 6 };
    gtf_rng rng;
    int d, dyn;
    rng.s = 143;
    for (d = 0; d < 4; d++)
        for (dyn = 0; dyn < 2; dyn++) {
            gr_dtype dt = gts_dtypes[d];
            gr_graph *g = gr_graph_new();
            gr_var *x = gtf_input(g, dt, 2, sx, dyn, "x");
            gr_array *xa = gts_random(&rng, dt, 2, sx, -5, 5, -9, 9), *want = gts_want(dt, 3, sy);
            int64_t k;
            for (k = 0; k < 24; k++) gts_copy_elem(want, k, xa, ((k / 6) % 2) * 3 + (k % 6) % 3);
            gts_expect1(g, x, xa, gr_tile(x, 3, reps), dt, want, 0, "gr_tile (2,3) by (2,1,2)");
            gr_array_free(xa); gr_array_free(want);
            gr_graph_free(g);
        }
}

/* the gradient of tile(c (2,3), (2,2)) for a cotangent u (4,6): u summed over its four tiles */
TEST(gts_op_Untile) {
    static const int64_t sc[2] = { 2, 3 }, reps[2] = { 2, 2 }, su[2] = { 4, 6 };
    gtf_rng rng;
    int d, dyn;
    rng.s = 144;
    for (d = 0; d < 2; d++)
        for (dyn = 0; dyn < 2; dyn++) {
            gr_dtype dt = gts_dtypes[d];
            gr_graph *g = gr_graph_new();
            gr_var *c = gtf_input(g, dt, 2, sc, dyn, "c"), *u = gtf_input(g, dt, 2, su, dyn, "u"), *t, *r = NULL;
            gr_array *ua = gts_random(&rng, dt, 2, su, -5, 5, 0, 0), *ca = gr_array_new(dt, 2, sc), *want = gts_want(dt, 2, sc);
            gr_var *ins[2];
            gr_array *arr[2];
            int64_t k;
            t = gr_tile(c, 2, reps);
            CHECK_STATUS(gr_lop(1, &t, 1, &c, &u, &r, NULL), GR_OK);
            for (k = 0; k < 24; k++) ((double *)want->data)[((k / 6) % 2) * 3 + (k % 6) % 3] += gr_array_get(ua, k);
            ins[0] = c; ins[1] = u; arr[0] = ca; arr[1] = ua;
            gtf_expect(g, 2, ins, (const gr_array *const *)arr, r, dt, want, gts_tol(dt), "untile (4,6) onto (2,3)");
            gr_array_free(ua); gr_array_free(ca); gr_array_free(want);
            gr_graph_free(g);
        }
}


/* ---- Fused: elementwise groups of gr_function, one pass each ---------------------------------------- */

static void gts_fn_print(gr_fn *f, char *buf, size_t size) {
    FILE *t = tmpfile();
    size_t n;
    buf[0] = 0;
    if (!t) return;
    gr_fn_print(t, f);
    rewind(t);
    n = fread(buf, 1, size - 1, t);
    buf[n] = 0;
    fclose(t);
}

/* ---- Banded: banded Jacobians and Hessians ------------------------------------------------------- */

static gr_var *gts_rosen(gr_graph *g, gr_var *x) {
    gr_var *head = gr_slice(x, 0, 0, -1, 1), *tail = gr_slice(x, 0, 1, GR_OPEN, 1);
    gr_var *a = gr_sub(tail, gr_sqr(head)), *b = gr_sub(gr_const(g, 1.0), head);
    return gr_sum(gr_add(gr_mul(gr_const(g, 100.0), gr_sqr(a)), gr_sqr(b)));
}

/* the compiled form of y has a Banded node and neither an identity nor a row-by-row op */
static void gts_expect_banded(gr_var *x, gr_var *y, const char *label) {
    gr_fn *f = gr_function(1, &x, 1, &y, NULL);
    char buf[4096];
    CHECK_MSG(f != NULL, "%s: gr_function failed", label);
    if (!f) return;
    gts_fn_print(f, buf, sizeof buf);
    CHECK_MSG(strstr(buf, "Banded") && !strstr(buf, "EyeLike") && !strstr(buf, "Batched"), "%s: not banded:\n%s", label, buf);
    gr_fn_free(f);
}

TEST(gts_op_Banded) {
    static const int64_t sizes[4] = { 1, 2, 3, 7 };
    gtf_rng rng;
    int dyn, si, t;
    rng.s = 151;
    for (t = 0; t < 2; t++)
        for (dyn = 0; dyn < 2; dyn++)
            for (si = 0; si < 4; si++) {   /* Rosenbrock's Hessian, tridiagonal; n = 1 has empty slices */
                gr_dtype dt = t ? GR_F32 : GR_F64;
                int64_t n = sizes[si], hs[2], i;
                gr_graph *g = gr_graph_new();
                gr_var *x = gtf_input(g, dt, 1, &n, dyn, "x"), *H = NULL;
                gr_array *a = gtf_random(&rng, dt, 1, &n, -1.5, 1.5), *want;
                char label[96];
                hs[0] = hs[1] = n;
                want = gr_array_new(GR_F64, 2, hs);
                for (i = 0; i + 1 < n; i++) {
                    double xi = gr_array_get(a, i), xj = gr_array_get(a, i + 1), *w = (double *)want->data;
                    w[i * n + i] += 1200 * xi * xi - 400 * xj + 2;
                    w[i * n + i + 1] = w[(i + 1) * n + i] = -400 * xi;
                    w[(i + 1) * n + i + 1] += 200;
                }
                snprintf(label, sizeof label, "hessian(rosenbrock), n = %d, %s%s", (int)n, t ? "float32" : "float64", dyn ? ", unknown shape" : "");
                CHECK_STATUS(gr_hessian(gts_rosen(g, x), 1, &x, &H, NULL), GR_OK);
                gtf_expect(g, 1, &x, (const gr_array *const *)&a, H, dt, want, t ? 1e-5 : GTF_TOL_F64, label);
                if (n > 1) gts_expect_banded(x, H, label);
                gr_array_free(a); gr_array_free(want);
                gr_graph_free(g);
            }
    for (dyn = 0; dyn < 2; dyn++) {   /* a rectangular Jacobian: three diagonals, one through a division */
        int64_t n = 6, js[2] = { 4, 6 }, i;
        gr_graph *g = gr_graph_new();
        gr_var *x = gtf_input(g, GR_F64, 1, &n, dyn, "x"), *J = NULL;
        gr_var *l = gr_slice(x, 0, GR_OPEN, -2, 1), *m = gr_slice(x, 0, 1, -1, 1), *r = gr_slice(x, 0, 2, GR_OPEN, 1);
        gr_var *e = gr_sub(gr_mul(gr_sin(r), l), gr_div(m, gr_add(gr_const(g, 1.0), gr_sqr(l))));
        gr_array *a = gtf_random(&rng, GR_F64, 1, &n, -1.5, 1.5), *want = gr_array_new(GR_F64, 2, js);
        double *w = (double *)want->data;
        for (i = 0; i < 4; i++) {
            double x0 = gr_array_get(a, i), x1 = gr_array_get(a, i + 1), x2 = gr_array_get(a, i + 2), q = 1 + x0 * x0;
            w[i * 6 + i] = sin(x2) + x1 * 2 * x0 / (q * q);
            w[i * 6 + i + 1] = -1 / q;
            w[i * 6 + i + 2] = cos(x2) * x0;
        }
        CHECK_STATUS(gr_jacobian(e, 1, &x, &J, NULL), GR_OK);
        gtf_expect(g, 1, &x, (const gr_array *const *)&a, J, GR_F64, want, GTF_TOL_F64, dyn ? "banded jacobian, unknown shape" : "banded jacobian");
        gts_expect_banded(x, J, "banded jacobian");
        gr_array_free(a); gr_array_free(want);
        gr_graph_free(g);
    }
    {   /* a moving sum of 20 shifted slices: more diagonals than a Banded node holds, the rest added densely */
        int64_t n = 24, js[2] = { 5, 24 }, i, s;
        gr_graph *g = gr_graph_new();
        gr_var *x = gtf_input(g, GR_F64, 1, &n, 1, "x"), *e = NULL, *J = NULL;
        gr_array *a = gtf_random(&rng, GR_F64, 1, &n, -1.5, 1.5), *want = gr_array_new(GR_F64, 2, js);
        for (s = 0; s < 20; s++) {
            gr_var *term = gr_mul(gr_const(g, (double)(s + 1)), gr_slice(x, 0, s, s - 19 == 0 ? GR_OPEN : s - 19, 1));
            e = e ? gr_add(e, term) : term;
            for (i = 0; i < 5; i++) ((double *)want->data)[i * 24 + i + s] = (double)(s + 1);
        }
        CHECK_STATUS(gr_jacobian(e, 1, &x, &J, NULL), GR_OK);
        gtf_expect(g, 1, &x, (const gr_array *const *)&a, J, GR_F64, want, GTF_TOL_F64, "jacobian of 20 shifted slices");
        gr_array_free(a); gr_array_free(want);
        gr_graph_free(g);
    }
    for (dyn = 0; dyn < 2; dyn++) {   /* slices no band follows (a step of 2, a start from the end): dense, right */
        int64_t n = 7, js[2] = { 7, 7 }, i;
        gr_graph *g = gr_graph_new();
        gr_var *x = gtf_input(g, GR_F64, 1, &n, dyn, "x"), *H = NULL;
        gr_var *f = gr_add(gr_sum(gr_sqr(gr_sin(gr_slice(x, 0, GR_OPEN, GR_OPEN, 2)))), gr_sum(gr_exp(gr_slice(x, 0, -3, GR_OPEN, 1))));
        gr_array *a = gtf_random(&rng, GR_F64, 1, &n, -1.5, 1.5), *want = gr_array_new(GR_F64, 2, js);
        for (i = 0; i < 7; i++) {
            double v = gr_array_get(a, i), h = 0;
            if (i % 2 == 0) h += 2 * cos(2 * v);         /* d2/dv2 sin(v)^2 */
            if (i >= 4) h += exp(v);
            ((double *)want->data)[i * 7 + i] = h;
        }
        CHECK_STATUS(gr_hessian(f, 1, &x, &H, NULL), GR_OK);
        gtf_expect(g, 1, &x, (const gr_array *const *)&a, H, GR_F64, want, GTF_TOL_F64, dyn ? "hessian through x[::2] and x[-3:], unknown shape" : "hessian through x[::2] and x[-3:]");
        gr_array_free(want);
        {   /* and a Jacobian, whose pullback places banded rows at x[::2] and x[-4:] */
            int64_t j4[2] = { 4, 7 };
            gr_var *e = gr_add(gr_sin(gr_slice(x, 0, GR_OPEN, GR_OPEN, 2)), gr_exp(gr_slice(x, 0, -4, GR_OPEN, 1))), *J = NULL;
            want = gr_array_new(GR_F64, 2, j4);
            for (i = 0; i < 4; i++) {
                ((double *)want->data)[i * 7 + 2 * i] += cos(gr_array_get(a, 2 * i));
                ((double *)want->data)[i * 7 + 3 + i] += exp(gr_array_get(a, 3 + i));
            }
            CHECK_STATUS(gr_jacobian(e, 1, &x, &J, NULL), GR_OK);
            gtf_expect(g, 1, &x, (const gr_array *const *)&a, J, GR_F64, want, GTF_TOL_F64, dyn ? "jacobian through x[::2] and x[-4:], unknown shape" : "jacobian through x[::2] and x[-4:]");
            gr_array_free(want);
        }
        gr_array_free(a);
        gr_graph_free(g);
    }
    for (dyn = 0; dyn < 2; dyn++) {   /* x[:1] * x: a one-column slice broadcast, not banded: still right */
        int64_t n = 4, js[2] = { 4, 4 }, i;
        gr_graph *g = gr_graph_new();
        gr_var *x = gtf_input(g, GR_F64, 1, &n, dyn, "x"), *J = NULL;
        gr_array *a = gtf_random(&rng, GR_F64, 1, &n, -1.5, 1.5), *want = gr_array_new(GR_F64, 2, js);
        double *w = (double *)want->data;
        for (i = 0; i < 4; i++) {
            w[i * 4 + i] += gr_array_get(a, 0);
            w[i * 4] += gr_array_get(a, i);
        }
        CHECK_STATUS(gr_jacobian(gr_mul(gr_slice(x, 0, GR_OPEN, 1, 1), x), 1, &x, &J, NULL), GR_OK);
        gtf_expect(g, 1, &x, (const gr_array *const *)&a, J, GR_F64, want, GTF_TOL_F64, dyn ? "jacobian(x[:1] x), unknown shape" : "jacobian(x[:1] x)");
        gr_array_free(a); gr_array_free(want);
        gr_graph_free(g);
    }
}

TEST(gts_op_Fused) {
    gtf_rng rng;
    rng.s = 150;
    {   /* W2's expression over 1000 elements (blocks of 256 and a remainder): one node, right values */
        int64_t n = 1000, k;
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *xx = gr_mul(x, x);
        gr_var *y = gr_add(gr_add(gr_mul(gr_sin(x), gr_exp(gr_neg(xx))), gr_log1p(xx)), gr_mul(gr_tanh(x), x));
        gr_array *a = gtf_random(&rng, GR_F64, 1, &n, -2, 2), *want = gr_array_new(GR_F64, 1, &n);
        gr_fn *f = gr_function(1, &x, 1, &y, NULL);
        char buf[2048];
        for (k = 0; k < n; k++) {
            double v = gr_array_get(a, k);
            gr_array_set(want, k, sin(v) * exp(-v * v) + log1p(v * v) + tanh(v) * v);
        }
        gts_fn_print(f, buf, sizeof buf);
        CHECK_MSG(gr_fn_node_count(f) == 1 && strstr(buf, "Fused") != NULL, "not one fused node:\n%s", buf);
        gtf_expect(g, 1, &x, (const gr_array *const *)&a, y, GR_F64, want, GTF_TOL_F64, "fused W2 expression");
        gr_fn_free(f);
        gr_array_free(a); gr_array_free(want);
        gr_graph_free(g);
    }
    {   /* broadcasting externals (3,4), (4,), (3,1), a bool inside, a cast, float32, two outputs */
        int64_t s34[2] = { 3, 4 }, s4 = 4, s31[2] = { 3, 1 }, i, j;
        gr_graph *g = gr_graph_new();
        /* static shapes: with unknown ones, a's first axis could be 1 and broadcast against c's 3,
           so mul(a, b) and add(., c) could differ in shape and are not fused together */
        gr_var *a = gr_tensor(g, GR_F32, 2, s34, "a"), *b = gr_tensor(g, GR_F32, 1, &s4, "b"), *c = gr_tensor(g, GR_F32, 2, s31, "c"), *ins[3], *outs[2];
        gr_var *t = gr_add(gr_mul(a, b), c), *u = gr_where(gr_gt(t, gr_const(g, 0)), t, gr_neg(t));
        gr_var *v = gr_mul(gr_cast(gr_lt(a, b), GR_F32), u);
        gr_array *arr[3], *w1 = gr_array_new(GR_F64, 2, s34), *w2 = gr_array_new(GR_F64, 2, s34);
        gr_fn *f;
        const gr_array *res[2];
        char buf[2048];
        arr[0] = gtf_random(&rng, GR_F32, 2, s34, -2, 2);
        arr[1] = gtf_random(&rng, GR_F32, 1, &s4, -2, 2);
        arr[2] = gtf_random(&rng, GR_F32, 2, s31, -2, 2);
        for (i = 0; i < 3; i++)
            for (j = 0; j < 4; j++) {
                float av = (float)gr_array_get(arr[0], i * 4 + j), bv = (float)gr_array_get(arr[1], j), cv = (float)gr_array_get(arr[2], i);
                float tv = av * bv + cv, uv = tv > 0 ? tv : -tv;
                gr_array_set(w1, i * 4 + j, uv);
                gr_array_set(w2, i * 4 + j, (av < bv ? 1.0f : 0.0f) * uv);
            }
        ins[0] = a; ins[1] = b; ins[2] = c; outs[0] = u; outs[1] = v;
        f = gr_function(3, ins, 2, outs, NULL);
        gts_fn_print(f, buf, sizeof buf);
        CHECK_MSG(gr_fn_node_count(f) == 1, "not one fused node:\n%s", buf);
        CHECK(f && gr_call(f, (const gr_array *const *)arr, res) == GR_OK);
        if (f) {
            gtf_same(res[0], GR_F32, w1, GTF_TOL_F32, "fused output 0");
            gtf_same(res[1], GR_F32, w2, GTF_TOL_F32, "fused output 1");
        }
        gtf_expect(g, 3, ins, (const gr_array *const *)arr, v, GR_F32, w2, GTF_TOL_F32, "fused with a cast and a bool");
        gr_fn_free(f);
        for (i = 0; i < 3; i++) gr_array_free(arr[i]);
        gr_array_free(w1); gr_array_free(w2);
        gr_graph_free(g);
    }
    {   /* a scalar chain of 10000 links and its gradient: one fused node, the plain C values */
        int k, n = 10000;
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_scalar(g, GR_F64, "x"), *y = x, *c = gr_const(g, 1.0 / n), *outs[2];
        gr_array *xa = gr_array_scalar(GR_F64, 0.5);
        const gr_array *in[1], *res[2];
        gr_fn *f;
        double yv = 0.5, gv = 1, *ys = (double *)malloc(sizeof(double) * (size_t)n);
        for (k = 0; k < n; k++) y = gr_add(gr_mul(gr_sin(y), c), y);
        outs[0] = y;
        outs[1] = gr_grad1(y, x);
        f = gr_function(1, &x, 2, outs, NULL);
        CHECK(f && gr_fn_node_count(f) == 1);
        for (k = 0; k < n; k++) { ys[k] = yv; yv = sin(yv) / n + yv; }
        for (k = n - 1; k >= 0; k--) gv *= cos(ys[k]) / n + 1;
        in[0] = xa;
        CHECK(f && gr_call(f, in, res) == GR_OK);
        if (f) { CHECK_NEAR(gr_array_get(res[0], 0), yv, 1e-12); CHECK_NEAR(gr_array_get(res[1], 0), gv, 1e-12); }
        free(ys);
        gr_fn_free(f);
        gr_array_free(xa);
        gr_graph_free(g);
    }
}

#define GTS_ROW_NAME(Name, ...) #Name,
static const char *const gts_rows[] = { GR_STRUCT_OPS(GTS_ROW_NAME) };
#undef GTS_ROW_NAME

/* every row of GR_STRUCT_OPS has a case of the same name in this suite */
TEST(test_struct_rows_have_specs) {
    int r, k;
    CHECK((int)(sizeof gts_rows / sizeof gts_rows[0]) >= 15);
    for (r = 0; r < (int)(sizeof gts_rows / sizeof gts_rows[0]); r++) {
        int found = 0;
        for (k = 0; suite_forward_struct[k].name; k++)
            if (strcmp(suite_forward_struct[k].name, gts_rows[r]) == 0) found = 1;
        CHECK_MSG(found, "structural op %s has no forward test: add a case named %s to suite_forward_struct in "
                  "tests/t_forward_struct.c", gts_rows[r], gts_rows[r]);
    }
}

#define OPCASE(Name) { #Name, gts_op_##Name }
SUITE(suite_forward_struct) = {
    CASE(test_struct_rows_have_specs),
    OPCASE(Cast),
    OPCASE(Sum),
    OPCASE(Mean),
    OPCASE(Prod),
    OPCASE(Max),
    OPCASE(Min),
    OPCASE(DimShuffle),
    OPCASE(Reshape),
    OPCASE(BroadcastLike),
    OPCASE(ReduceLike),
    OPCASE(ReshapeLike),
    OPCASE(SizeRatio),
    OPCASE(Dot),
    OPCASE(Softmax),
    OPCASE(LogSoftmax),
    OPCASE(Fused),
    OPCASE(Banded),
    OPCASE(ZeroGrad),
    OPCASE(DisconnectedGrad),
    OPCASE(ConsiderConstant),
    OPCASE(GradClip),
    OPCASE(GradScale),
    OPCASE(UndefinedGrad),
    OPCASE(EyeLike),
    OPCASE(Unflatten),
    OPCASE(Batched),
    OPCASE(Slice),
    OPCASE(Index),
    OPCASE(Take),
    OPCASE(ViewUpdate),
    OPCASE(TakeUpdate),
    CASE(test_view_update_0d_int),
    OPCASE(ArgMax),
    OPCASE(LogSumExp),
    OPCASE(CumSum),
    OPCASE(CumProd),
    OPCASE(LinScan),
    OPCASE(CrossEntropy),
    OPCASE(OneHot),
    OPCASE(TensorDot),
    OPCASE(MatMul),
    OPCASE(LUFactor),
    OPCASE(MatrixInverse),
    OPCASE(Det),
    OPCASE(LogDet),
    OPCASE(Adjugate),
    OPCASE(Solve),
    OPCASE(Cholesky),
    OPCASE(Trace),
    OPCASE(TriScale),
    OPCASE(Join),
    OPCASE(Split),
    OPCASE(BroadcastTo),
    OPCASE(Tile),
    OPCASE(Untile),
    CASE(test_transpose),
    CASE(test_outer),
    CASE(test_int_wraparound),
    END_SUITE
};
