/* tests/ops_nnet.c: the ops of ops/nnet.c: Softmax and LogSoftmax along an axis, CrossEntropy
   (mean over rows of the cross-entropy of softmax(logits) against class ids or soft labels) and
   OneHot, which crossentropy builds from class ids.
     - values against plain C (stabilised by the slice's max) in every dtype, along every axis
       counted from both ends, logits of magnitude 1e3, empty operands, static and call-time shapes;
     - derivative specs; softmax along negative axes is the same op; crossentropy's gradients and
       Hessian against their closed forms;
     - the errors of the constructors. */
#include "ops.h"

/* ==== Softmax, LogSoftmax ================================================================================ */


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


static int axis_0 = 0, axis_1 = 1, axis_m1 = -1;
static gr_var *gts_softmax(gr_graph *g, gr_var *const *x, void *u) { (void)g; return gr_softmax(x[0], *(const int *)u); }
static gr_var *gts_log_softmax(gr_graph *g, gr_var *const *x, void *u) { (void)g; return gr_log_softmax(x[0], *(const int *)u); }
/* weighted by a second input, so the cotangent reaching the op is not the projection alone */
static gr_var *gts_softmax_mul(gr_graph *g, gr_var *const *x, void *u) { (void)g; return gr_mul(gr_softmax(x[0], *(const int *)u), x[1]); }
static gr_var *gts_log_softmax_mul(gr_graph *g, gr_var *const *x, void *u) { (void)g; return gr_mul(gr_log_softmax(x[0], *(const int *)u), x[1]); }

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

/* an axis out of range, a 0-d operand: GR_ERR_VALUE naming the builder */
TEST(test_softmax_bad_axes) {
    gr_graph *g = gr_graph_new();
    gr_var *m = gr_matrix(g, GR_F64, "m"), *s = gr_scalar(g, GR_F64, "s");
    CHECK(gr_softmax(m, 2) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_softmax");
    gr_graph_clear_error(g);
    CHECK(gr_log_softmax(s, 0) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE); gr_graph_clear_error(g);
    gr_graph_free(g);
}

static const gtd_spec specs_Softmax[] = {
    { "Softmax", "axis 0 of (3,4)", gts_softmax, &axis_0, 1, { M34(-2, 2) }, GG },
    { "Softmax", "axis 1 of (3,4)", gts_softmax, &axis_1, 1, { M34(-2, 2) }, GG },
    { "Softmax", "axis -1 of (3,4)", gts_softmax, &axis_m1, 1, { M34(-2, 2) }, GG },
    { "Softmax", "axis 1 of (2,3,4), times (3,1)", gts_softmax_mul, &axis_1, 2, { GTD_IN3(2, 3, 4, -2, 2), GTD_IN(2, 3, 1, -2, 2) }, GG },
    { "Softmax", "axis 0 of (4,), times (4,)", gts_softmax_mul, &axis_0, 2, { V4(-2, 2), V4(-2, 2) }, GG },
    GTD_END
};
static const gtd_spec specs_LogSoftmax[] = {
    { "LogSoftmax", "axis 0 of (3,4)", gts_log_softmax, &axis_0, 1, { M34(-2, 2) }, GG },
    { "LogSoftmax", "axis 1 of (3,4)", gts_log_softmax, &axis_1, 1, { M34(-2, 2) }, GG },
    { "LogSoftmax", "axis -1 of (3,4)", gts_log_softmax, &axis_m1, 1, { M34(-2, 2) }, GG },
    { "LogSoftmax", "axis 1 of (2,3,4), times (3,1)", gts_log_softmax_mul, &axis_1, 2, { GTD_IN3(2, 3, 4, -2, 2), GTD_IN(2, 3, 1, -2, 2) }, GG },
    { "LogSoftmax", "axis 0 of (4,), times (4,)", gts_log_softmax_mul, &axis_0, 2, { V4(-2, 2), V4(-2, 2) }, GG },
    GTD_END
};

GT_CASES(Softmax) = {
    GT_VALUES(gts_op_Softmax),
    GT_SPECS(specs_Softmax),
    GT_DERIVS(test_softmax_negative_axes),
    GT_ERRORS(test_softmax_bad_axes),
    GT_END
};
/* gr_log_softmax shares gr_softmax's builder and checks (test_softmax_bad_axes calls both) */
GT_CASES(LogSoftmax) = { GT_VALUES(gts_op_LogSoftmax), GT_SPECS(specs_LogSoftmax), GT_ERRORS_WITH(Softmax), GT_END };

/* ==== CrossEntropy, OneHot ================================================================================ */

typedef struct gtr_shape { int ndim; int64_t shape[3]; } gtr_shape;


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

TEST(gtr_fwd_CrossEntropy) {
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
            gr_dtype tdt = lab == 0 ? GR_I64 : gts_dtypes[d];
            gtr_xent_case(&rng, 2, s, gts_dtypes[d], tdt, lab == 2, -1000, 1000, 0);
            gtr_xent_case(&rng, 2, s, gts_dtypes[d], tdt, lab == 2, 995, 1005, 1);
            gtr_xent_case(&rng, 2, s, gts_dtypes[d], tdt, lab == 2, -1005, -995, 1);
        }
    {   /* exact values near 1e3: log(1 + e^-1 + e^-2) and friends */
        static const double zv[6] = { 1000, 1001, 999, -1000, -1000, -1000 };
        static const int64_t iv[2] = { 1, 2 };
        int64_t s23[2] = { 2, 3 }, s2 = 2;
        for (d = 0; d < 2; d++) {
            gr_graph *g = gr_graph_new();
            gr_var *z = gr_matrix(g, gts_dtypes[d], "z"), *y = gr_vector(g, GR_I64, "y"), *ins[2];
            gr_array *arr[2], *want = gr_array_new(GR_F64, 0, NULL);
            int64_t k;
            arr[0] = gr_array_new(gts_dtypes[d], 2, s23);
            for (k = 0; k < 6; k++) gr_array_set(arr[0], k, zv[k]);
            arr[1] = gr_array_from(GR_I64, 1, &s2, iv);
            ((double *)want->data)[0] = (log1p(exp(-1.0) + exp(-2.0)) + log(3.0)) / 2;
            ins[0] = z; ins[1] = y;
            gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_crossentropy(z, y), gts_dtypes[d], want, gts_tol(gts_dtypes[d]),
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
TEST(gtr_fwd_OneHot) {
    static const gtr_shape shapes[] = { { 2, { 4, 5 } }, { 1, { 3 } }, { 3, { 2, 3, 4 } }, { 2, { 0, 3 } } };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 506;
    for (c = 0; c < (int)(sizeof shapes / sizeof shapes[0]); c++)
        for (d = 0; d < 2; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gtr_shape *s = &shapes[c];
                gr_dtype dt = gts_dtypes[d];
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


static gr_var *gtr_b_xent(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_crossentropy(x[0], x[1]); }
/* class ids made inside, one per row of a (4,5), (6,) or (2,3,4) logits */
static gr_var *gtr_xent_ids_of(gr_graph *g, gr_var *z) {
    static const int64_t id1 = 5, id2[4] = { 3, 0, 4, 1 }, id3[6] = { 3, 0, 1, 1, 2, 2 };
    int64_t s4 = 4, s23[2] = { 2, 3 };
    int nd = gr_var_ndim(z);
    return nd == 1 ? gts_indices(g, 0, NULL, &id1) : nd == 2 ? gts_indices(g, 1, &s4, id2) : gts_indices(g, 2, s23, id3);
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
    gr_var *z = gr_matrix(g, GR_F64, "z"), *y = gts_indices(g, 1, &s2, iv), *H = NULL;
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

static const gtd_spec specs_CrossEntropy[] = {
    { "CrossEntropy", "(4,5) soft labels", gtr_b_xent, NULL, 2, { GTD_IN(2, 4, 5, -3, 3), GTD_IN(2, 4, 5, 0, 1) }, GTD_GRADGRAD },
    { "CrossEntropy", "(4,5) class ids", gtr_b_xent_ids, NULL, 1, { GTD_IN(2, 4, 5, -3, 3) }, GTD_GRADGRAD },
    { "CrossEntropy", "(6,) one class id", gtr_b_xent_ids, NULL, 1, { GTD_IN(1, 6, 0, -3, 3) }, 0 },
    { "CrossEntropy", "(2,3,4) class ids", gtr_b_xent_ids, NULL, 1, { GTD_IN3(2, 3, 4, -3, 3) }, 0 },
    { "CrossEntropy", "(4,5) ids, logits near 1e3", gtr_b_xent_ids, NULL, 1, { GTD_IN(2, 4, 5, 995, 1005) }, GTD_F64_ONLY },
    { "CrossEntropy", "(4,5) soft labels, logits of magnitude 1e3", gtr_b_xent, NULL, 2,
      { GTD_IN(2, 4, 5, -1000, 1000), GTD_IN(2, 4, 5, 0, 1) }, GTD_F64_ONLY },
    GTD_END
};
static const gtd_spec specs_OneHot[] = {
    { "OneHot", "x * OneHot(ids, x)", gtr_b_onehot_mul, NULL, 1, { GTD_IN(2, 4, 5, -2, 2) }, 0 },
    { "OneHot", "OneHot(ids, x) alone", gtr_b_onehot, NULL, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GTD_NONDIFF },
    GTD_END
};

GT_CASES(CrossEntropy) = {
    GT_VALUES(gtr_fwd_CrossEntropy),
    GT_SPECS(specs_CrossEntropy),
    GT_DERIVS(test_crossentropy_derivatives),
    GT_DERIVS(test_crossentropy_hessian),
    GT_ERRORS(test_crossentropy_errors),
    GT_END
};
GT_CASES(OneHot) = {
    GT_VALUES(gtr_fwd_OneHot),
    GT_SPECS(specs_OneHot),
    GT_NO_ERRORS("made only by gr_crossentropy from class ids, which it checks"),
    GT_END
};
