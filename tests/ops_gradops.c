/* tests/ops_gradops.c: the ops of ops/gradops.c, identities in the forward pass that change only
   the gradient: ZeroGrad, DisconnectedGrad, ConsiderConstant (deprecated), GradClip, GradScale and
   UndefinedGrad (SEMANTICS 11).
     - values: the identity, in every dtype, static and call-time shapes; compiled functions drop
       them (decision 10);
     - derivatives: the specs (where the change does not matter, see below), the values tables of
       SEMANTICS 11 evaluated through gr_function against formulas, and exactly, their gradients
       and R-ops (decision 3);
     - the errors of the constructors. */
#include "ops.h"
#include "gsem_util.h"

/* ==== values: the identity ============================================================================ */



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

/* ==== the gradient-modifying ops ========================================================================
   Each is the identity in the forward pass with a changed backward pass, so wherever the change
   matters the analytic derivative is, by design, not the true one and finite differences cannot
   agree. A spec can only check them where the change does not matter, and says which:
     ZeroGrad, ConsiderConstant, DisconnectedGrad
       applied to floor(x1): a value that does depend on x1, but piecewise constantly, so the true
       derivative through the op is zero, which is also what these ops give. The op's output
       multiplies x0, so its forward value (the identity) enters x0's derivative; its grad rule,
       its R-op rule (zeros, or no tangent) and its removal from compiled functions all run.
     GradClip
       bounds wider than any cotangent the checks send (|u cos x0 x1| < 3): the clip is the
       identity and the checks hold; a wrong rule (zeros, a fixed value) would fail them. The
       second spec returns a gradient that passes through an active clip: its value is
       clip(x0, -0.5, 0.5), which the checks differentiate again.
     GradScale
       two nested scales whose product is 1 (2, then 0.5): the gradient and the R-op (m v,
       decision 3) are then the true ones. The second spec returns the gradient through a scale
       of 3 (the value 3 x0), so the scaled gradient graph is itself differentiated.
     UndefinedGrad
       gr_grad raises GR_ERR_NULL_GRAD as soon as the op lies between the output and an input,
       so a passing spec can only use it where the gradient walk does not enter it: as the shape
       reference of gr_broadcast_like (connection pattern 10). Its R-op rule still runs there
       (no tangent, as the pattern needs). test_deriv_gradops_exact covers what the specs cannot:
       the exact modified gradients and R-ops, the raise, and GR_NULL_RETURN. */

static gr_var *gts_zero_grad(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_add(gr_mul(x[0], gr_zero_grad(gr_floor(x[1]))), gr_sin(x[0])); }
/* the deprecation warning of gr_consider_constant is expected here: keep it out of the test log */
static void gts_log_quiet_deprecated(void *user, const char *message) {
    (void)user;
    if (!strstr(message, "deprecated")) fprintf(stderr, "gradient.h: warning: %s\n", message);
}
static gr_var *gts_consider_constant(gr_graph *g, gr_var *const *x, void *u) {
    (void)u;
    gr_graph_set_log(g, gts_log_quiet_deprecated, NULL);
    return gr_add(gr_mul(x[0], gr_consider_constant(gr_floor(x[1]))), gr_sin(x[0]));
}
static gr_var *gts_disconnected_grad(gr_graph *g, gr_var *const *x, void *u) {
    (void)g; (void)u;
    return gr_add(gr_mul(x[0], gr_disconnected_grad(gr_floor(x[1]))), gr_sin(x[0]));
}
static gr_var *gts_grad_clip(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_mul(gr_sin(gr_grad_clip(x[0], -10, 10)), x[1]); }
static gr_var *gts_grad_clip_active(gr_graph *g, gr_var *const *x, void *u) {
    (void)g; (void)u;
    return gr_grad1(gr_sum(gr_mul(x[0], gr_grad_clip(x[1], -0.5, 0.5))), x[1]);
}
static gr_var *gts_grad_scale(gr_graph *g, gr_var *const *x, void *u) {
    (void)g; (void)u;
    return gr_mul(gr_grad_scale(gr_grad_scale(gr_sin(x[0]), 2.0), 0.5), x[1]);
}
static gr_var *gts_grad_scale_grad(gr_graph *g, gr_var *const *x, void *u) {
    (void)g; (void)u;
    return gr_grad1(gr_sum(gr_mul(x[0], gr_grad_scale(x[1], 3.0))), x[1]);
}
static gr_var *gts_undefined_grad(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_broadcast_like(gr_sin(x[0]), gr_undefined_grad(x[1])); }

/* ==== derivatives at chosen points: the values tables of SEMANTICS 11 ======================================= */

/* ---- zero_grad / consider_constant: the values table of SEMANTICS 11 ----------------------------- */

typedef gr_var *(*modifier_fn)(gr_var *x);

static void check_zero_like_table(modifier_fn zg, const char *what) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_matrix(g, GR_F64, "x"), *costs[4], *d;
    double xv[25], want[4][25];
    gr_array *xa, *r;
    gs_log l;
    int i, k;
    gs_log_attach(g, &l);
    for (i = 0; i < 25; i++) xv[i] = 0.1 * (i - 12) + 0.05;
    xa = gs_mat(GR_F64, 5, 5, xv);
    costs[0] = gr_sum(gr_mul(x, zg(x)));                          /* -> x */
    costs[1] = gr_sum(gr_mul(x, zg(gr_exp(x))));                  /* -> exp x */
    costs[2] = gr_sum(zg(x));                                     /* -> 0, not disconnected */
    costs[3] = gr_sum(gr_mul(gr_sqr(x), zg(x)));                  /* -> 2 x^2 */
    for (i = 0; i < 25; i++) {
        want[0][i] = xv[i];
        want[1][i] = exp(xv[i]);
        want[2][i] = 0;
        want[3][i] = 2 * xv[i] * xv[i];
    }
    for (k = 0; k < 4; k++) {
        d = gr_grad1(costs[k], x);                                /* default options: RAISE */
        CHECK_MSG(d != NULL, "%s case %d: %s", what, k, gr_graph_message(g));
        r = gs_eval(1, &x, (const gr_array *const *)&xa, d);
        CHECK_MSG(gs_diff(r, 25, want[k], 1e-15) == 0, "%s case %d", what, k);
        gr_array_free(r);
    }
    CHECK_EQ_INT(gr_graph_status(g), GR_OK);
    gr_array_free(xa);
    gr_graph_free(g);
}

TEST(test_zero_grad_values) { check_zero_like_table(gr_zero_grad, "zero_grad"); }
TEST(test_consider_constant_values) { check_zero_like_table(gr_consider_constant, "consider_constant"); }

TEST(test_consider_constant_deprecated) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x");
    gs_log l;
    gs_log_attach(g, &l);
    CHECK(gr_consider_constant(x) != NULL);
    CHECK_EQ_INT(l.count, 1);
    CHECK_CONTAINS(l.first, "deprecated");
    CHECK_CONTAINS(l.first, "gr_zero_grad");
    gr_graph_free(g);
}

/* ---- disconnected_grad ---------------------------------------------------------------------------------- */

TEST(test_disconnected_grad) {
    gr_graph *g = gr_graph_new();
    gr_var *a = gr_vector(g, GR_F64, "a"), *b = gr_vector(g, GR_F64, "b"), *x = gr_vector(g, GR_F64, "x");
    gr_var *y = gr_sum(gr_add(a, gr_disconnected_grad(b))), *d = a, *in[3];
    gr_array *vals[3], *r;
    double v[3] = { 0.5, 1.5, -2 };
    gr_grad_opts o;
    in[0] = a; in[1] = b; in[2] = x;
    for (int i = 0; i < 3; i++) vals[i] = gs_vec(GR_F64, 3, v);
    /* wrt b: DisconnectedInputError */
    CHECK_STATUS(gr_grad(y, 1, &b, &d, NULL), GR_ERR_DISCONNECTED_INPUT);
    CHECK(d == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "'b'");
    gr_graph_clear_error(g);
    /* wrt a: fine */
    d = gr_grad1(y, a);
    r = gs_eval(3, in, (const gr_array *const *)vals, d);
    CHECK(gs_all(r, 3, 1.0));
    gr_array_free(r);
    /* grad((x + disconnected_grad(x)).sum(), x) = 1 */
    d = gr_grad1(gr_sum(gr_add(x, gr_disconnected_grad(x))), x);
    r = gs_eval(3, in, (const gr_array *const *)vals, d);
    CHECK(gs_all(r, 3, 1.0));
    gr_array_free(r);
    /* ignored: zeros shaped like b; returned as a marker on request */
    memset(&o, 0, sizeof o);
    o.disconnected_inputs = GR_IGNORE;
    CHECK_STATUS(gr_grad(y, 1, &b, &d, &o), GR_OK);
    r = gs_eval(3, in, (const gr_array *const *)vals, d);
    CHECK(gs_all(r, 3, 0.0));
    gr_array_free(r);
    o.return_disconnected = GR_RETURN_DISCONNECTED;
    CHECK_STATUS(gr_grad(y, 1, &b, &d, &o), GR_OK);
    CHECK(gr_is_disconnected(d));
    for (int i = 0; i < 3; i++) gr_array_free(vals[i]);
    gr_graph_free(g);
}

/* ---- grad_clip and grad_scale ------------------------------------------------------------------------- */

static double scalar_grad_at(gr_var *x, gr_var *cost, double at) {
    gr_var *d = gr_grad1(cost, x);
    gr_array *xa = gr_array_scalar(GR_F64, at), *r = gs_eval(1, &x, (const gr_array *const *)&xa, d);
    double v = r ? gr_array_get(r, 0) : NAN;
    gr_array_free(r); gr_array_free(xa);
    return v;
}

TEST(test_grad_clip) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x");
    /* the doc example: 1.0 with the clip, 4.0 without */
    CHECK(scalar_grad_at(x, gr_sqr(gr_grad_clip(x, -1.0, 1.0)), 2.0) == 1.0);
    CHECK(scalar_grad_at(x, gr_sqr(x), 2.0) == 4.0);
    /* negative side and inside the bounds */
    CHECK(scalar_grad_at(x, gr_sqr(gr_grad_clip(x, -1.0, 1.0)), -3.0) == -1.0);
    CHECK(scalar_grad_at(x, gr_sqr(gr_grad_clip(x, -1.0, 1.0)), 0.25) == 0.5);
    /* two clips with different bounds are not merged: 4 clipped to 1 plus 4 clipped to 3 */
    CHECK(scalar_grad_at(x, gr_add(gr_sqr(gr_grad_clip(x, -1.0, 1.0)), gr_sqr(gr_grad_clip(x, -3.0, 3.0))), 2.0) == 4.0);
    /* equal bounds are allowed; upper < lower is GR_ERR_VALUE */
    CHECK(scalar_grad_at(x, gr_sqr(gr_grad_clip(x, 0.5, 0.5)), 2.0) == 0.5);
    CHECK(gr_grad_clip(x, 1.0, -1.0) == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_grad_clip");
    gr_graph_clear_error(g);
    CHECK(gr_grad_clip(x, 0.0, NAN) == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_VALUE);
    gr_graph_free(g);
}

TEST(test_grad_scale) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x");
    double a = scalar_grad_at(x, gr_grad_scale(gr_sin(x), -1.0), 2.0), b = scalar_grad_at(x, gr_sin(x), 2.0);
    CHECK_NEAR(a, 0.4161468365471424, 1e-15);                    /* -cos 2 */
    CHECK_NEAR(b, -0.4161468365471424, 1e-15);
    CHECK(scalar_grad_at(x, gr_sqr(gr_grad_scale(x, 2.0)), 2.0) == 8.0);
    CHECK(scalar_grad_at(x, gr_sqr(x), 2.0) == 4.0);
    /* scales compose along a path and differ by parameter */
    CHECK(scalar_grad_at(x, gr_add(gr_grad_scale(gr_grad_scale(x, 3.0), 5.0), gr_grad_scale(x, 0.5)), 1.0) == 15.5);
    gr_graph_free(g);
}

/* ---- compiled functions drop them (decision 10) ------------------------------------------------------- */


TEST(test_modifiers_removed_when_compiled) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *plain = gr_mul(x, gr_const(g, 2.0));
    gr_var *wrapped[6];
    const char *names[6] = { "ZeroGrad", "DisconnectedGrad", "ConsiderConstant", "GradClip", "GradScale", "UndefinedGrad" };
    double xv[3] = { 1, -2, 0.5 }, want[3] = { 2, -4, 1 };
    gr_array *xa = gs_vec(GR_F64, 3, xv);
    gr_fn *f0 = gr_function(1, &x, 1, &plain, NULL);
    static char buf[4096];
    gs_log l;
    int k;
    gs_log_attach(g, &l);
    wrapped[0] = gr_mul(gr_zero_grad(x), gr_const(g, 2.0));
    wrapped[1] = gr_mul(gr_disconnected_grad(x), gr_const(g, 2.0));
    wrapped[2] = gr_mul(gr_consider_constant(x), gr_const(g, 2.0));
    wrapped[3] = gr_mul(gr_grad_clip(x, -1, 1), gr_const(g, 2.0));
    wrapped[4] = gr_mul(gr_grad_scale(x, 7), gr_const(g, 2.0));
    wrapped[5] = gr_mul(gr_undefined_grad(x), gr_const(g, 2.0));
    CHECK(f0 != NULL);
    for (k = 0; k < 6; k++) {
        gr_fn *f = gr_function(1, &x, 1, &wrapped[k], NULL);
        const gr_array *out[1];
        CHECK(f != NULL);
        if (!f) continue;
        CHECK_EQ_INT(gr_fn_node_count(f), gr_fn_node_count(f0));
        CHECK_EQ_INT(gr_fn_node_count(f), 1);
        gs_fn_print(f, buf, sizeof buf);
        CHECK_MSG(strstr(buf, names[k]) == NULL, "%s left in:\n%s", names[k], buf);
        CHECK_CONTAINS(buf, "Mul(");
        CHECK_STATUS(gr_call(f, (const gr_array *const *)&xa, out), GR_OK);
        CHECK_EQ_INT(gs_diff(out[0], 3, want, 0), 0);
        gr_fn_free(f);
    }
    /* with no optimisation at all too */
    {
        gr_fn_opts fo;
        gr_fn *f;
        memset(&fo, 0, sizeof fo);
        fo.optimize = GR_OPT_NONE;
        f = gr_function(1, &x, 1, &wrapped[0], &fo);
        CHECK(f && gr_fn_node_count(f) == 1);
        gr_fn_free(f);
    }
    gr_fn_free(f0);
    gr_array_free(xa);
    gr_graph_free(g);
}


/* the gradient-modifying ops, exactly: their gradients and R-ops (SEMANTICS 11, decision 3) */
TEST(test_deriv_gradops_exact) {
    static const double xv[4] = { 0.5, -1.5, 2.0, 3.0 }, wv[4] = { 2.0, -0.25, 0.75, -3.0 }, vv[4] = { 1.0, 2.0, -0.5, 0.125 };
    const double *vals[3];
    double res[4 * 4];
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *w = gr_vector(g, GR_F64, "w"), *v = gr_vector(g, GR_F64, "v"), *ins[3], *outs[4], *t, *r[2];
    gr_grad_opts o;
    gr_rop_opts ro;
    int k;
    vals[0] = xv; vals[1] = wv; vals[2] = vv;
    ins[0] = x; ins[1] = w; ins[2] = v;
    gr_graph_set_log(g, gts_log_quiet_deprecated, NULL);
    /* zero_grad and consider_constant: x * op(x) differentiates to x; their R-ops are zeros */
    outs[0] = gr_grad1(gr_sum(gr_mul(x, gr_zero_grad(x))), x);
    outs[1] = gr_grad1(gr_sum(gr_mul(x, gr_consider_constant(x))), x);
    t = gr_add(gr_zero_grad(gr_sin(x)), gr_consider_constant(x));
    CHECK_STATUS(gr_rop(1, &t, 1, &x, &v, &r[0], NULL), GR_OK);
    outs[2] = r[0];
    /* grad_clip(x, -1, 1) * w: the gradient is clip(w, -1, 1); the R-op of grad_clip is v */
    outs[3] = gr_grad1(gr_sum(gr_mul(gr_grad_clip(x, -1.0, 1.0), w)), x);
    CHECK(gts_eval(3, ins, vals, 4, 4, outs, res));
    for (k = 0; k < 4; k++) {
        CHECK_NEAR(res[k], xv[k], 0);
        CHECK_NEAR(res[4 + k], xv[k], 0);
        CHECK_NEAR(res[8 + k], 0.0, 0);
        CHECK_NEAR(res[12 + k], wv[k] < -1 ? -1.0 : wv[k] > 1 ? 1.0 : wv[k], 0);
    }
    /* grad_scale(x, -2) * w: -2 w; R-ops: grad_clip gives v, grad_scale m v */
    outs[0] = gr_grad1(gr_sum(gr_mul(gr_grad_scale(x, -2.0), w)), x);
    t = gr_grad_clip(x, -1.0, 1.0);
    CHECK_STATUS(gr_rop(1, &t, 1, &x, &v, &r[0], NULL), GR_OK);
    t = gr_grad_scale(x, -2.0);
    CHECK_STATUS(gr_rop(1, &t, 1, &x, &v, &r[1], NULL), GR_OK);
    outs[1] = r[0]; outs[2] = r[1];
    /* disconnected_grad: x + disconnected_grad(x) differentiates to 1 */
    outs[3] = gr_grad1(gr_sum(gr_add(x, gr_disconnected_grad(gr_mul(x, w)))), x);
    CHECK(gts_eval(3, ins, vals, 4, 4, outs, res));
    for (k = 0; k < 4; k++) {
        CHECK_NEAR(res[k], -2.0 * wv[k], 0);
        CHECK_NEAR(res[4 + k], vv[k], 0);
        CHECK_NEAR(res[8 + k], -2.0 * vv[k], 0);
        CHECK_NEAR(res[12 + k], 1.0, 0);
    }
    /* disconnected_grad alone: the input is disconnected (raise by default, zeros when ignored);
       its R-op has no tangent */
    t = gr_sum(gr_disconnected_grad(x));
    CHECK(gr_grad1(t, x) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_DISCONNECTED_INPUT);
    gr_graph_clear_error(g);
    memset(&o, 0, sizeof o);
    o.disconnected_inputs = GR_IGNORE;
    CHECK_STATUS(gr_grad(t, 1, &x, &outs[0], &o), GR_OK);
    t = gr_disconnected_grad(x);
    CHECK_STATUS(gr_rop(1, &t, 1, &x, &v, &r[0], NULL), GR_ERR_DISCONNECTED_INPUT);
    gr_graph_clear_error(g);
    /* undefined_grad: gr_grad raises GR_ERR_NULL_GRAD; with GR_NULL_RETURN the gradient is null and
       compiling it fails with GR_ERR_GRAD_UNDEFINED; a path through it carries no R-op tangent */
    t = gr_sum(gr_mul(gr_undefined_grad(x), w));
    CHECK(gr_grad1(t, x) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_NULL_GRAD);
    gr_graph_clear_error(g);
    o.null_gradients = GR_NULL_RETURN;
    CHECK_STATUS(gr_grad(t, 1, &x, &outs[0], &o), GR_OK);
    CHECK(gr_is_null(outs[0]));
    CHECK(gr_function(1, &x, 1, &outs[0], NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_GRAD_UNDEFINED);
    gr_graph_clear_error(g);
    {   /* ... while the gradient with respect to w, beside it, is fine: undefined_grad(x) = x */
        gr_var *dw = gr_grad1(t, w);
        t = gr_add(gr_mul(x, w), gr_undefined_grad(gr_sin(x)));
        CHECK_STATUS(gr_rop(1, &t, 1, &x, &v, &r[0], NULL), GR_OK);     /* w v: the sin path adds nothing */
        outs[0] = dw; outs[1] = r[0];
        CHECK(gts_eval(3, ins, vals, 4, 2, outs, res));
        for (k = 0; k < 4; k++) {
            CHECK_NEAR(res[k], xv[k], 0);
            CHECK_NEAR(res[4 + k], wv[k] * vv[k], 0);
        }
        t = gr_undefined_grad(x);
        memset(&ro, 0, sizeof ro);
        CHECK_STATUS(gr_rop(1, &t, 1, &x, &v, &r[0], &ro), GR_ERR_DISCONNECTED_INPUT);
        gr_graph_clear_error(g);
    }
    gr_graph_free(g);
}

/* NULL operands give NULL silently; a marker is GR_ERR_TYPE naming the builder; gr_grad_clip's upper
   bound must be >= its lower one (not NaN): GR_ERR_VALUE naming it and the variable */
TEST(test_gradops_errors) {
    static gr_var *(*const ops[4])(gr_var *) = { gr_zero_grad, gr_disconnected_grad, gr_consider_constant, gr_undefined_grad };
    static const char *const names[4] = { "gr_zero_grad", "gr_disconnected_grad", "gr_consider_constant", "gr_undefined_grad" };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *d = gr_disconnected_like(x);
    int k;
    gr_graph_set_log(g, gts_log_quiet_deprecated, NULL);
    for (k = 0; k < 4; k++) {
        CHECK(ops[k](NULL) == NULL);
        CHECK_OK_GRAPH(g);
        CHECK(ops[k](d) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
        CHECK_CONTAINS(gr_graph_message(g), names[k]);
        gr_graph_clear_error(g);
        CHECK(ops[k](x) != NULL);
    }
    CHECK(gr_grad_clip(NULL, -1, 1) == NULL && gr_grad_scale(NULL, 2) == NULL);
    CHECK_OK_GRAPH(g);
    CHECK(gr_grad_clip(d, -1, 1) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_grad_clip");
    gr_graph_clear_error(g);
    CHECK(gr_grad_scale(d, 2) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_grad_scale");
    gr_graph_clear_error(g);
    CHECK(gr_grad_clip(x, 1.0, -1.0) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_grad_clip");
    CHECK_CONTAINS(gr_graph_message(g), "'x'");
    gr_graph_clear_error(g);
    CHECK(gr_grad_clip(x, NAN, 1.0) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    CHECK(gr_grad_clip(x, 0.5, 0.5) != NULL && gr_grad_scale(x, 0) != NULL);
    CHECK_OK_GRAPH(g);
    gr_graph_free(g);
}

static const gtd_spec specs_ZeroGrad[] = {
    { "ZeroGrad", "x0 * zero_grad(floor(x1)) + sin(x0)", gts_zero_grad, NULL, 2, { M34(-2, 2), V4(0.1, 2.9) }, GG },
    { "ZeroGrad", "x0 * zero_grad(floor(x1)) + sin(x0), 0-d", gts_zero_grad, NULL, 2, { S0(-2, 2), S0(-2.9, -0.1) }, GG },
    GTD_END
};
static const gtd_spec specs_DisconnectedGrad[] = {
    { "DisconnectedGrad", "x0 * disconnected_grad(floor(x1)) + sin(x0)", gts_disconnected_grad, NULL, 2, { M34(-2, 2), V4(0.1, 2.9) }, GG },
    { "DisconnectedGrad", "x0 * disconnected_grad(floor(x1)) + sin(x0), (3,1) (1,4)", gts_disconnected_grad, NULL, 2,
      { GTD_IN(2, 3, 1, -2, 2), GTD_IN(2, 1, 4, -2.9, -0.1) }, GG },
    GTD_END
};
static const gtd_spec specs_ConsiderConstant[] = {
    { "ConsiderConstant", "x0 * consider_constant(floor(x1)) + sin(x0)", gts_consider_constant, NULL, 2, { M34(-2, 2), V4(0.1, 2.9) }, GG },
    GTD_END
};
static const gtd_spec specs_GradClip[] = {
    { "GradClip", "sin(grad_clip(x0, -10, 10)) * x1: never clips", gts_grad_clip, NULL, 2, { M34(-2, 2), V4(-2, 2) }, GG },
    { "GradClip", "the gradient through an active clip, x0 inside (-0.5, 0.5)", gts_grad_clip_active, NULL, 2, { V4(-0.4, 0.4), M34(-2, 2) }, GG },
    { "GradClip", "the gradient through an active clip, x0 above 0.5", gts_grad_clip_active, NULL, 2, { M34(0.6, 2), M34(-2, 2) }, GG },
    { "GradClip", "the gradient through an active clip, x0 below -0.5", gts_grad_clip_active, NULL, 2, { M34(-2, -0.6), V4(-2, 2) }, GG },
    GTD_END
};
static const gtd_spec specs_GradScale[] = {
    { "GradScale", "grad_scale(grad_scale(sin(x0), 2), 0.5) * x1", gts_grad_scale, NULL, 2, { M34(-2, 2), V4(-2, 2) }, GG },
    { "GradScale", "the gradient through grad_scale(x1, 3): 3 x0", gts_grad_scale_grad, NULL, 2, { M34(-2, 2), M34(-2, 2) }, GG },
    { "GradScale", "the gradient through grad_scale(x1, 3): 3 x0, broadcast", gts_grad_scale_grad, NULL, 2, { V4(-2, 2), M34(-2, 2) }, GG },
    GTD_END
};
static const gtd_spec specs_UndefinedGrad[] = {
    { "UndefinedGrad", "broadcast_like(sin(x0), undefined_grad(x1)): a shape reference", gts_undefined_grad, NULL, 2, { V4(-2, 2), M34(-2, 2) }, GG },
    GTD_END
};

/* the six builders share gr__gradop's checks: test_gradops_errors calls each of them */
GT_CASES(ZeroGrad) = { GT_VALUES(gts_op_ZeroGrad), GT_SPECS(specs_ZeroGrad), GT_DERIVS(test_zero_grad_values), GT_ERRORS(test_gradops_errors), GT_END };
GT_CASES(DisconnectedGrad) = {
    GT_VALUES(gts_op_DisconnectedGrad),
    GT_SPECS(specs_DisconnectedGrad),
    GT_DERIVS(test_disconnected_grad),
    GT_ERRORS_WITH(ZeroGrad),
    GT_END
};
GT_CASES(ConsiderConstant) = {
    GT_VALUES(gts_op_ConsiderConstant),
    GT_SPECS(specs_ConsiderConstant),
    GT_DERIVS(test_consider_constant_values),
    GT_DERIVS(test_consider_constant_deprecated),
    GT_ERRORS_WITH(ZeroGrad),
    GT_END
};
GT_CASES(GradClip) = { GT_VALUES(gts_op_GradClip), GT_SPECS(specs_GradClip), GT_DERIVS(test_grad_clip), GT_ERRORS_WITH(ZeroGrad), GT_END };
GT_CASES(GradScale) = { GT_VALUES(gts_op_GradScale), GT_SPECS(specs_GradScale), GT_DERIVS(test_grad_scale), GT_ERRORS_WITH(ZeroGrad), GT_END };
GT_CASES(UndefinedGrad) = { GT_VALUES(gts_op_UndefinedGrad), GT_SPECS(specs_UndefinedGrad), GT_ERRORS_WITH(ZeroGrad), GT_END };

/* ==== the family's other tests ========================================================================= */

SUITE(suite_ops_gradops) = { CASE(test_deriv_gradops_exact), CASE(test_modifiers_removed_when_compiled), END_SUITE };
