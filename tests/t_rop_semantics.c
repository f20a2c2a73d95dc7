/* tests/t_rop_semantics.c: gr_rop against SEMANTICS 4 and 14 and decisions 2-4: the documented
   examples, several outputs, zero tangents of roots, the disconnected-output policies, paths
   through non-differentiable ops, integer inputs, ties of Max/Min, the gradient-modifying ops,
   LogSoftmax's true JVP, the two 2025 findings, and users' ops through the double pullback. */
#include "rs_util.h"
#include "forward.h"

/* ---- the documented examples --------------------------------------------------------------------- */

/* y = dot(x, W): Rop(y, W, V) = x V = [2, 2]; with both x and W moving, vx W + x V */
TEST(test_rs_dot_doc) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *W = gr_matrix(g, GR_F64, "W"), *V = gr_matrix(g, GR_F64, "V");
    gr_var *vx = gr_vector(g, GR_F64, "vx"), *y = gr_dot(x, W), *r[2] = { NULL, NULL }, *wrt[2], *ev[2], *ins[4];
    double xs[2] = { 0, 1 }, ws[4] = { 1, 1, 1, 1 }, vs[4] = { 2, 2, 2, 2 }, vxs[2] = { 3, -1 }, want1[2] = { 2, 2 }, want2[2];
    gr_array *va[4], *res[2] = { NULL, NULL };
    CHECK_STATUS(gr_rop(1, &y, 1, &W, &V, &r[0], NULL), GR_OK);
    wrt[0] = x; wrt[1] = W; ev[0] = vx; ev[1] = V;
    CHECK_STATUS(gr_rop(1, &y, 2, wrt, ev, &r[1], NULL), GR_OK);
    CHECK_EQ_INT(gr_var_ndim(r[0]), 1);
    ins[0] = x; ins[1] = W; ins[2] = V; ins[3] = vx;
    va[0] = rs_vec(2, xs); va[1] = rs_mat(2, 2, ws); va[2] = rs_mat(2, 2, vs); va[3] = rs_vec(2, vxs);
    want2[0] = vxs[0] * 1 + vxs[1] * 1 + 2; want2[1] = want2[0];
    CHECK(rs_run(4, ins, (const gr_array *const *)va, 2, r, res));
    CHECK_ARR(res[0], 2, want1, 1e-15);
    CHECK_ARR(res[1], 2, want2, 1e-15);
    rs_free(2, res); rs_free(4, va);
    gr_graph_free(g);
}

/* Hessian-vector product of sum(x^2) both ways: x = [4, 4], v = [2, 2] -> [4, 4] */
TEST(test_rs_hvp_doc) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *v = gr_vector(g, GR_F64, "v");
    gr_var *gy = gr_grad1(gr_sum(gr_sqr(x)), x), *outs[2] = { NULL, NULL }, *ins[2];
    double xs[2] = { 4, 4 }, vs[2] = { 2, 2 }, want[2] = { 4, 4 };
    gr_array *va[2], *res[2];
    CHECK_STATUS(gr_rop(1, &gy, 1, &x, &v, &outs[0], NULL), GR_OK);
    outs[1] = gr_grad1(gr_sum(gr_mul(gy, v)), x);
    ins[0] = x; ins[1] = v;
    va[0] = rs_vec(2, xs); va[1] = rs_vec(2, vs);
    CHECK(rs_run(2, ins, (const gr_array *const *)va, 2, outs, res));
    CHECK_ARR(res[0], 2, want, 1e-15);
    CHECK_ARR(res[1], 2, want, 1e-15);
    rs_free(2, res); rs_free(2, va);
    gr_graph_free(g);
}

/* three outputs: results in the order of f, each shaped like its output */
TEST(test_rs_multiple_outputs) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *v = gr_vector(g, GR_F64, "v"), *f[3], *r[3] = { NULL, NULL, NULL }, *ins[2];
    double xs[3] = { 0.3, -1.2, 2.0 }, vs[3] = { 1.5, 0.25, -2 }, w0[3], w1[9], w2[1] = { 0 };
    gr_array *va[2], *res[3];
    int i, j;
    f[0] = gr_sin(x);
    f[1] = gr_outer(x, x);
    f[2] = gr_sum(gr_mul(x, x));
    CHECK_STATUS(gr_rop(3, f, 1, &x, &v, r, NULL), GR_OK);
    for (i = 0; i < 3; i++) CHECK(r[i] != NULL && gr_var_ndim(r[i]) == gr_var_ndim(f[i]));
    for (i = 0; i < 3; i++) {
        w0[i] = cos(xs[i]) * vs[i];
        for (j = 0; j < 3; j++) w1[i * 3 + j] = vs[i] * xs[j] + xs[i] * vs[j];
        w2[0] += 2 * xs[i] * vs[i];
    }
    ins[0] = x; ins[1] = v;
    va[0] = rs_vec(3, xs); va[1] = rs_vec(3, vs);
    CHECK(rs_run(2, ins, (const gr_array *const *)va, 3, r, res));
    CHECK_ARR(res[0], 3, w0, 1e-15);
    CHECK_ARR(res[1], 9, w1, 1e-15);
    CHECK_ARR(res[2], 1, w2, 1e-15);
    CHECK(res[2] && res[2]->ndim == 0);
    rs_free(3, res); rs_free(2, va);
    gr_graph_free(g);
}

/* ---- zero tangents, disconnected outputs ------------------------------------------------------- */

/* roots not in wrt have zero tangents: an output computed only from them is zeros (no error);
   an output that IS such a root (or a constant) is disconnected (SEMANTICS 4.3) */
TEST(test_rs_roots_not_in_wrt) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *v = gr_vector(g, GR_F64, "v"), *c = gr_matrix(g, GR_F64, "c");
    gr_var *f[2], *r[2] = { NULL, NULL }, *ins[3], *k = gr_const(g, 2.0);
    double xs[2] = { 1, 2 }, vs[2] = { 3, 4 }, cs[6] = { 1, 2, 3, 4, 5, 6 };
    int64_t s23[2] = { 2, 3 };
    gr_array *va[3], *res[2];
    gr_rop_opts o;
    f[0] = gr_mul(gr_exp(c), gr_const(g, 3.0));          /* from c only: zeros shaped like f, not like x */
    f[1] = gr_add(gr_sum(x), gr_sum(c));                 /* mixed: sum(v) */
    CHECK_STATUS(gr_rop(2, f, 1, &x, &v, r, NULL), GR_OK);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    ins[0] = x; ins[1] = v; ins[2] = c;
    va[0] = rs_vec(2, xs); va[1] = rs_vec(2, vs); va[2] = rs_mat(2, 3, cs);
    CHECK(rs_run(3, ins, (const gr_array *const *)va, 2, r, res));
    CHECK_SHAPE(res[0], 2, s23);
    CHECK(rs_all_zero(res[0]));
    CHECK_NEAR(gr_array_get(res[1], 0), 7.0, 1e-15);
    rs_free(2, res);
    /* the root itself, and a constant: disconnected */
    CHECK_STATUS(gr_rop(1, &c, 1, &x, &v, r, NULL), GR_ERR_DISCONNECTED_INPUT);
    CHECK(r[0] == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_DISCONNECTED_INPUT);
    gr_graph_clear_error(g);
    CHECK_STATUS(gr_rop(1, &k, 1, &x, &v, r, NULL), GR_ERR_DISCONNECTED_INPUT);
    gr_graph_clear_error(g);
    memset(&o, 0, sizeof o);
    o.disconnected_outputs = GR_IGNORE;
    CHECK_STATUS(gr_rop(1, &c, 1, &x, &v, r, &o), GR_OK);
    CHECK(rs_run(3, ins, (const gr_array *const *)va, 1, r, res));
    CHECK_SHAPE(res[0], 2, s23);
    CHECK(rs_all_zero(res[0]));
    rs_free(1, res); rs_free(3, va);
    gr_graph_free(g);
}

/* non-differentiable paths, by kind: 0 disconnected_grad, 1 undefined_grad, 2 a comparison,
   3 floor of a cast to int, 4 a cast of a comparison to int */
static gr_var *rs_nondiff(int kind, gr_var *x) {
    gr_graph *g = gr_var_graph(x);
    switch (kind) {
    case 0: return gr_disconnected_grad(x);
    case 1: return gr_undefined_grad(x);
    case 2: return gr_cast(gr_gt(x, gr_const(g, 0.0)), GR_F64);
    case 3: return gr_cast(gr_floor(gr_cast(gr_mul(x, gr_const(g, 3.0)), GR_I64)), GR_F64);
    default: return gr_cast(gr_cast(gr_lt(x, gr_const(g, 0.5)), GR_I64), GR_F64);
    }
}

/* an output whose only path from wrt is non-differentiable: RAISE / WARN / IGNORE, and the three
   ways of returning it; the output (3 x 3) is shaped unlike wrt (3) */
TEST(test_rs_disconnected_policies) {
    int kind;
    for (kind = 0; kind < 5; kind++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *v = gr_vector(g, GR_F64, "v"), *nd = rs_nondiff(kind, x);
        gr_var *y = gr_outer(nd, gr_sin(nd)), *r = x, *ins[2];
        double xs[3] = { 0.5, -1, 2 }, vs[3] = { 1, 2, 3 };
        int64_t s33[2] = { 3, 3 };
        gr_array *va[2], *res[1];
        gr_rop_opts o;
        rs_log lg;
        CHECK_MSG(y != NULL, "kind %d: %s", kind, gr_graph_message(g));
        va[0] = rs_vec(3, xs); va[1] = rs_vec(3, vs);
        ins[0] = x; ins[1] = v;
        /* RAISE, the default */
        CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, &r, NULL), GR_ERR_DISCONNECTED_INPUT);
        CHECK_MSG(r == NULL, "kind %d", kind);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_DISCONNECTED_INPUT);
        gr_graph_clear_error(g);
        memset(&o, 0, sizeof o);
        CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, &r, &o), GR_ERR_DISCONNECTED_INPUT);
        gr_graph_clear_error(g);
        /* WARN: one message through the graph's log, zeros shaped like the output */
        memset(&lg, 0, sizeof lg);
        gr_graph_set_log(g, rs_log_fn, &lg);
        o.disconnected_outputs = GR_WARN;
        CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, &r, &o), GR_OK);
        CHECK_EQ_INT(lg.calls, 1);
        CHECK_CONTAINS(lg.last, "gr_rop");
        CHECK(rs_run(2, ins, (const gr_array *const *)va, 1, &r, res));
        CHECK_SHAPE(res[0], 2, s33);
        CHECK_MSG(rs_all_zero(res[0]), "kind %d", kind);
        rs_free(1, res);
        /* IGNORE: no message */
        o.disconnected_outputs = GR_IGNORE;
        CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, &r, &o), GR_OK);
        CHECK_EQ_INT(lg.calls, 1);
        CHECK(rs_run(2, ins, (const gr_array *const *)va, 1, &r, res));
        CHECK_SHAPE(res[0], 2, s33);
        CHECK(rs_all_zero(res[0]));
        rs_free(1, res);
        o.return_disconnected = GR_RETURN_NONE;
        r = x;
        CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, &r, &o), GR_OK);
        CHECK(r == NULL);
        o.return_disconnected = GR_RETURN_DISCONNECTED;
        CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, &r, &o), GR_OK);
        CHECK_MSG(r && gr_is_disconnected(r), "kind %d", kind);
        /* WARN with NONE: a message and a NULL entry */
        o.disconnected_outputs = GR_WARN;
        o.return_disconnected = GR_RETURN_NONE;
        CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, &r, &o), GR_OK);
        CHECK(r == NULL);
        CHECK_EQ_INT(lg.calls, 2);
        CHECK_STATUS(gr_graph_status(g), GR_OK);
        rs_free(2, va);
        gr_graph_free(g);
    }
}

/* a non-differentiable path next to a differentiable one: only the latter contributes.
   y = sin(x) + dg(x) x + ug(x) x + [x > 0] x + floor-int(3x): R = (cos x + 2x + [x > 0]) v */
TEST(test_rs_nondiff_plus_diff) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *v = gr_vector(g, GR_F64, "v"), *y, *r = NULL, *ins[2], *mixed[3], *rm[3] = { NULL, NULL, NULL };
    double xs[4] = { 0.5, -1, 2, -0.25 }, vs[4] = { 1, -2, 3, 0.5 }, want[4], w1[4];
    gr_array *va[2], *res[3];
    int i;
    y = gr_add(gr_sin(x), gr_mul(rs_nondiff(0, x), x));
    y = gr_add(y, gr_mul(rs_nondiff(1, x), x));
    y = gr_add(y, gr_mul(rs_nondiff(2, x), x));
    y = gr_add(y, rs_nondiff(3, x));
    CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, &r, NULL), GR_OK);
    for (i = 0; i < 4; i++) want[i] = (cos(xs[i]) + 2 * xs[i] + (xs[i] > 0)) * vs[i];
    ins[0] = x; ins[1] = v;
    va[0] = rs_vec(4, xs); va[1] = rs_vec(4, vs);
    CHECK(rs_run(2, ins, (const gr_array *const *)va, 1, &r, res));
    CHECK_ARR(res[0], 4, want, 1e-14);
    rs_free(1, res);
    /* non-differentiable operands of dot, concatenation-like structure and where */
    mixed[0] = gr_dot(gr_disconnected_grad(x), x);                        /* dg(x) . v */
    mixed[1] = gr_where(gr_gt(x, gr_const(g, 0.0)), x, gr_neg(x));      /* sign-like: |x|' v */
    mixed[2] = gr_mul(gr_zero_grad(x), gr_exp(x));                       /* x exp(x) v */
    CHECK_STATUS(gr_rop(3, mixed, 1, &x, &v, rm, NULL), GR_OK);
    CHECK(rs_run(2, ins, (const gr_array *const *)va, 3, rm, res));
    want[0] = 0;
    for (i = 0; i < 4; i++) { want[0] += xs[i] * vs[i]; w1[i] = (xs[i] > 0 ? 1 : -1) * vs[i]; }
    CHECK_ARR(res[0], 1, want, 1e-14);
    CHECK_ARR(res[1], 4, w1, 1e-14);
    for (i = 0; i < 4; i++) w1[i] = xs[i] * exp(xs[i]) * vs[i];
    CHECK_ARR(res[2], 4, w1, 1e-14);
    rs_free(3, res); rs_free(2, va);
    gr_graph_free(g);
}

/* SEMANTICS 4.5, the 2025 finding: dot(disconnected_grad(x), y) with respect to x only must be
   disconnected, although y's zero tangent would make the direct path give zeros. The same holds
   for the elementwise product and for a sum of two such terms. */
TEST(test_rs_dot_break_raises) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *v = gr_vector(g, GR_F64, "v"), *w = gr_matrix(g, GR_F64, "w"), *c = gr_vector(g, GR_F64, "c");
    gr_var *V = gr_matrix(g, GR_F64, "V"), *ys[4], *r = x, *wrt[2], *ev[2], *ins[4];
    double xs[2] = { 1, 2 }, ws[6] = { 1, 2, 3, 4, 5, 6 }, Vs[6] = { 1, 0, 0, 0, 1, 0 }, want[3];
    gr_array *va[4], *res[1];
    gr_rop_opts o;
    int i;
    ys[0] = gr_dot(gr_disconnected_grad(x), w);
    ys[1] = gr_mul(gr_disconnected_grad(x), c);
    ys[2] = gr_add(gr_dot(gr_undefined_grad(x), w), gr_dot(c, w));
    ys[3] = gr_dot(gr_cast(gr_gt(x, c), GR_F64), w);
    for (i = 0; i < 4; i++) {
        r = x;
        CHECK_MSG(gr_rop(1, &ys[i], 1, &x, &v, &r, NULL) == GR_ERR_DISCONNECTED_INPUT, "y%d: %s", i, gr_status_string(gr_graph_status(g)));
        CHECK(r == NULL);
        gr_graph_clear_error(g);
    }
    /* IGNORE gives zeros shaped like the output */
    memset(&o, 0, sizeof o);
    o.disconnected_outputs = GR_IGNORE;
    CHECK_STATUS(gr_rop(1, &ys[0], 1, &x, &v, &r, &o), GR_OK);
    CHECK(r != NULL && gr_var_ndim(r) == 1);
    /* a differentiable path next to it contributes: dot(dg(x), w) + sum(x) * c -> sum(v) c */
    {
        gr_var *y = gr_add(ys[0], gr_mul(gr_sum(x), gr_sum(c))), *ry = NULL, *in4[4];
        double cs[3] = { 1, 2, 3 }, vs[2] = { 0.5, 2 }, wy[3];
        gr_array *a4[4];
        CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, &ry, NULL), GR_OK);
        in4[0] = x; in4[1] = v; in4[2] = c; in4[3] = w;     /* the tangent is broadcast to y's shape */
        a4[0] = rs_vec(2, xs); a4[1] = rs_vec(2, vs); a4[2] = rs_vec(3, cs); a4[3] = rs_mat(2, 3, ws);
        for (i = 0; i < 3; i++) wy[i] = (vs[0] + vs[1]) * (cs[0] + cs[1] + cs[2]);
        CHECK(rs_run(4, in4, (const gr_array *const *)a4, 1, &ry, res));
        CHECK_ARR(res[0], 3, wy, 1e-15);
        rs_free(1, res); rs_free(4, a4);
    }
    /* computed from roots only, through non-differentiable ops: no tangent from wrt is stopped, so
       zeros (like any function of roots), not disconnected */
    {
        gr_var *yr[2], *rr[2] = { NULL, NULL }, *in3[3];
        double cs[3] = { 1, -2, 3 };
        gr_array *a3[3], *res2[2];
        yr[0] = gr_add(gr_cast(gr_gt(c, gr_const(g, 0.0)), GR_F64), gr_sum(c));
        yr[1] = gr_mul(gr_disconnected_grad(c), gr_const(g, 2.0));
        CHECK_STATUS(gr_rop(2, yr, 1, &x, &v, rr, NULL), GR_OK);
        in3[0] = x; in3[1] = v; in3[2] = c;
        a3[0] = rs_vec(2, xs); a3[1] = rs_vec(2, xs); a3[2] = rs_vec(3, cs);
        CHECK(rs_run(3, in3, (const gr_array *const *)a3, 2, rr, res2));
        CHECK(rs_all_zero(res2[0]) && res2[0] && res2[0]->size == 3);
        CHECK(rs_all_zero(res2[1]) && res2[1] && res2[1]->size == 3);
        rs_free(2, res2); rs_free(3, a3);
    }
    /* with w in wrt too, dot(x, V) */
    wrt[0] = x; wrt[1] = w; ev[0] = v; ev[1] = V;
    CHECK_STATUS(gr_rop(1, &ys[0], 2, wrt, ev, &r, NULL), GR_OK);
    ins[0] = x; ins[1] = v; ins[2] = w; ins[3] = V;
    va[0] = rs_vec(2, xs); va[1] = rs_vec(2, xs); va[2] = rs_mat(2, 3, ws); va[3] = rs_mat(2, 3, Vs);
    for (i = 0; i < 3; i++) want[i] = xs[0] * Vs[i] + xs[1] * Vs[3 + i];
    CHECK(rs_run(4, ins, (const gr_array *const *)va, 1, &r, res));
    CHECK_ARR(res[0], 3, want, 1e-15);
    rs_free(1, res); rs_free(4, va);
    gr_graph_free(g);
}

/* SEMANTICS 4.5: Rop(grad(dot(x, v).sum(), v), v, v) must not fail: the gradient (x) depends on v
   only through shapes, so the R-op is zeros */
TEST(test_rs_rop_of_grad_shape_only) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *v = gr_vector(g, GR_F64, "v"), *gv, *r = NULL, *ins[2];
    double xs[3] = { 1, 2, 3 }, vs[3] = { -1, 0.5, 4 };
    int64_t n3 = 3;
    gr_array *va[2], *res[1];
    gv = gr_grad1(gr_sum(gr_dot(x, v)), v);
    CHECK(gv != NULL);
    CHECK_STATUS(gr_rop(1, &gv, 1, &v, &v, &r, NULL), GR_OK);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    ins[0] = x; ins[1] = v;
    va[0] = rs_vec(3, xs); va[1] = rs_vec(3, vs);
    CHECK(rs_run(2, ins, (const gr_array *const *)va, 1, &r, res));
    CHECK_SHAPE(res[0], 1, &n3);
    CHECK(rs_all_zero(res[0]));
    rs_free(1, res); rs_free(2, va);
    gr_graph_free(g);
}

/* ---- validation, integer inputs, f in wrt ------------------------------------------------------ */

TEST(test_rs_validation) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *m = gr_matrix(g, GR_F64, "m"), *v = gr_vector(g, GR_F64, "v"), *y = gr_sin(m);
    gr_var *f[2], *r[2], *wrt[2], *ev[2];
    f[0] = y; f[1] = gr_sin(x);
    r[0] = r[1] = x;
    /* Rop(sin(m), m, vector): mismatched dimensionalities */
    CHECK_STATUS(gr_rop(2, f, 1, &m, &v, r, NULL), GR_ERR_TYPE);
    CHECK(r[0] == NULL && r[1] == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_graph_message(g), "mismatched");
    gr_graph_clear_error(g);
    /* the second pair mismatched */
    wrt[0] = x; wrt[1] = m; ev[0] = v; ev[1] = v;
    CHECK_STATUS(gr_rop(2, f, 2, wrt, ev, r, NULL), GR_ERR_TYPE);
    gr_graph_clear_error(g);
    /* a 0-d wrt with a vector eval point */
    {
        gr_var *s = gr_scalar(g, GR_F64, "s"), *ys = gr_exp(s);
        CHECK_STATUS(gr_rop(1, &ys, 1, &s, &v, r, NULL), GR_ERR_TYPE);
        gr_graph_clear_error(g);
    }
    /* a NULL f: the builder's failure propagates without a new message */
    f[0] = NULL;
    CHECK(gr_rop(1, f, 1, &x, &v, r, NULL) != GR_OK);
    CHECK(r[0] == NULL);
    gr_graph_clear_error(g);
    /* no wrt at all: every output is disconnected unless it is computed from roots */
    f[0] = y;
    CHECK_STATUS(gr_rop(1, f, 0, NULL, NULL, r, NULL), GR_OK);       /* zeros: only roots */
    CHECK(r[0] != NULL);
    gr_graph_free(g);
}

/* SEMANTICS 4.2: a float eval point of an integer wrt is cast to the integer dtype (truncation);
   an integer eval point of a float wrt is cast to the float dtype */
TEST(test_rs_integer_inputs) {
    gr_graph *g = gr_graph_new();
    gr_var *xi = gr_vector(g, GR_I64, "xi"), *v = gr_vector(g, GR_F64, "v"), *x = gr_vector(g, GR_F64, "x"), *vi = gr_vector(g, GR_I64, "vi");
    gr_var *y1 = gr_mul(xi, gr_const(g, 2.5)), *y2 = gr_mul(gr_cast(xi, GR_F64), x), *y3 = gr_sqr(x);
    gr_var *r[3] = { NULL, NULL, NULL }, *ins[4], *wrt[2], *ev[2];
    int64_t xis[3] = { 4, -2, 7 }, vis[3] = { 1, 2, -3 }, n3 = 3;
    double vs[3] = { 1.7, -2.2, 0.9 }, xs[3] = { 0.5, 1.5, -1 }, w1[3] = { 2.5, -5, 0 }, w2[3], w3[3];
    gr_array *va[4], *res[3];
    int i;
    CHECK(gr_var_dtype(y1) == GR_F64);
    CHECK_STATUS(gr_rop(1, &y1, 1, &xi, &v, &r[0], NULL), GR_OK);
    /* y2 = xi * x with respect to both; xi's tangent truncated */
    wrt[0] = xi; wrt[1] = x; ev[0] = v; ev[1] = v;
    CHECK_STATUS(gr_rop(1, &y2, 2, wrt, ev, &r[1], NULL), GR_OK);
    /* an integer eval point for a float wrt */
    CHECK_STATUS(gr_rop(1, &y3, 1, &x, &vi, &r[2], NULL), GR_OK);
    for (i = 0; i < 3; i++) {
        w2[i] = (double)(int64_t)vs[i] * xs[i] + (double)xis[i] * vs[i];
        w3[i] = 2 * xs[i] * (double)vis[i];
    }
    ins[0] = xi; ins[1] = v; ins[2] = x; ins[3] = vi;
    va[0] = gr_array_from(GR_I64, 1, &n3, xis); va[1] = rs_vec(3, vs); va[2] = rs_vec(3, xs); va[3] = gr_array_from(GR_I64, 1, &n3, vis);
    CHECK(rs_run(4, ins, (const gr_array *const *)va, 3, r, res));
    CHECK_ARR(res[0], 3, w1, 1e-15);
    CHECK_ARR(res[1], 3, w2, 1e-15);
    CHECK_ARR(res[2], 3, w3, 1e-15);
    CHECK(res[0] && res[0]->dtype == GR_F64);
    rs_free(3, res); rs_free(4, va);
    gr_graph_free(g);
}

/* an output that is itself in wrt: its eval point; intermediate wrt cut the traversal */
TEST(test_rs_f_in_wrt) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *v = gr_vector(g, GR_F64, "v"), *h = gr_exp(x), *vh = gr_vector(g, GR_F64, "vh");
    gr_var *f[3], *r[3] = { NULL, NULL, NULL }, *wrt[2], *ev[2], *ins[3];
    double xs[2] = { 0.5, -1 }, vs[2] = { 2, 3 }, vhs[2] = { -1, 10 }, w2[2];
    gr_array *va[3], *res[3];
    int i;
    f[0] = x; f[1] = h; f[2] = gr_sin(h);
    wrt[0] = x; wrt[1] = h; ev[0] = v; ev[1] = vh;
    CHECK_STATUS(gr_rop(3, f, 2, wrt, ev, r, NULL), GR_OK);
    CHECK(r[0] == v);
    CHECK(r[1] == vh);
    ins[0] = x; ins[1] = v; ins[2] = vh;
    va[0] = rs_vec(2, xs); va[1] = rs_vec(2, vs); va[2] = rs_vec(2, vhs);
    for (i = 0; i < 2; i++) w2[i] = cos(exp(xs[i])) * vhs[i];          /* the tangent of h is vh, not exp(x) v */
    CHECK(rs_run(3, ins, (const gr_array *const *)va, 3, r, res));
    CHECK_ARR(res[0], 2, vs, 0);
    CHECK_ARR(res[1], 2, vhs, 0);
    CHECK_ARR(res[2], 2, w2, 1e-15);
    rs_free(3, res); rs_free(3, va);
    gr_graph_free(g);
}

/* ---- op rules ------------------------------------------------------------------------------------ */

/* PyTensor's tie test: the R-op of Max / Min sums the tangents of the tied extrema, and stays the
   adjoint of the gradient (which gives every tied element the full cotangent) */
TEST(test_rs_max_min_ties) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_matrix(g, GR_F64, "x"), *v = gr_matrix(g, GR_F64, "v"), *u = gr_vector(g, GR_F64, "u");
    gr_var *f[4], *r[4] = { NULL, NULL, NULL, NULL }, *outs[6], *ins[3];
    double xs[9] = { 1, 2, 1, 1, 5, 1, 1, 4, 1 }, vs[9] = { 1, 10, 100, 2, 20, 200, 4, 30, 300 };
    double us[3] = { 0.5, -1, 2 }, wmax[3] = { 7, 20, 600 }, wmin[3] = { 7, 10, 600 }, wmax1[3], wmin1[3];
    int axes01[2] = { 0, 1 };
    gr_array *va[3], *res[6];
    double lhs = 0, rhs = 0;
    int i;
    f[0] = gr_max_axis(x, 0);
    f[1] = gr_min_axis(x, 0);
    f[2] = gr_max_axis(x, 1);          /* rows: 2 at col 1; 5 at col 1; 4 at col 1 */
    f[3] = gr_min_axis(x, 1);          /* rows: ties of 1 at cols 0, 2 */
    CHECK_STATUS(gr_rop(4, f, 1, &x, &v, r, NULL), GR_OK);
    for (i = 0; i < 4; i++) outs[i] = r[i];
    outs[4] = gr_grad1(gr_sum(gr_mul(f[0], u)), x);
    CHECK_STATUS(gr_rop(1, &f[0], 1, &x, &v, &outs[5], NULL), GR_OK);
    outs[5] = gr_sum(gr_mul(outs[5], u));
    ins[0] = x; ins[1] = v; ins[2] = u;
    va[0] = rs_mat(3, 3, xs); va[1] = rs_mat(3, 3, vs); va[2] = rs_vec(3, us);
    CHECK(rs_run(3, ins, (const gr_array *const *)va, 6, outs, res));
    CHECK_ARR(res[0], 3, wmax, 1e-15);
    CHECK_ARR(res[1], 3, wmin, 1e-15);
    wmax1[0] = 10; wmax1[1] = 20; wmax1[2] = 30;
    wmin1[0] = 1 + 100; wmin1[1] = 2 + 200; wmin1[2] = 4 + 300;
    CHECK_ARR(res[2], 3, wmax1, 1e-15);
    CHECK_ARR(res[3], 3, wmin1, 1e-15);
    /* adjoint: <u, R v> = <grad(sum(max * u)), v> */
    for (i = 0; i < 9; i++) lhs += gr_array_get(res[4], i) * vs[i];
    rhs = gr_array_get(res[5], 0);
    CHECK_NEAR(lhs, rhs, 1e-13);
    rs_free(6, res);
    /* over both axes: all-ties of the minimum 1 (six of them): sum of their tangents */
    f[0] = gr_max_axes(x, 2, axes01, 0);
    f[1] = gr_min_axes(x, 2, axes01, 1);
    CHECK_STATUS(gr_rop(2, f, 1, &x, &v, r, NULL), GR_OK);
    CHECK(rs_run(3, ins, (const gr_array *const *)va, 2, r, res));
    CHECK_NEAR(gr_array_get(res[0], 0), 20, 1e-15);
    CHECK_NEAR(gr_array_get(res[1], 0), 1 + 100 + 2 + 200 + 4 + 300, 1e-15);
    CHECK(res[1] && res[1]->ndim == 2 && res[1]->shape[0] == 1 && res[1]->shape[1] == 1);
    rs_free(2, res); rs_free(3, va);
    gr_graph_free(g);
}

/* decision 3: zero_grad and consider_constant give zeros shaped like the output (not shape (1,)),
   grad_scale(x, m) gives m v, grad_clip gives v unclipped; through a further op too */
TEST(test_rs_gradops) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_matrix(g, GR_F64, "x"), *v = gr_matrix(g, GR_F64, "v"), *f[6], *r[6], *ins[2];
    double xs[6] = { 1, -2, 3, 0.5, 7, -4 }, vs[6] = { 5, -6, 0.25, 9, -10, 1 }, w[6];
    int64_t s23[2] = { 2, 3 };
    gr_array *va[2], *res[6];
    rs_log lg;
    int i;
    memset(&lg, 0, sizeof lg);
    gr_graph_set_log(g, rs_log_fn, &lg);
    f[0] = gr_zero_grad(x);
    f[1] = gr_consider_constant(x);
    CHECK_EQ_INT(lg.calls, 1);                           /* the deprecation warning */
    CHECK_CONTAINS(lg.last, "deprecated");
    f[2] = gr_grad_scale(x, -3.0);
    f[3] = gr_grad_clip(x, -1.0, 1.0);
    f[4] = gr_exp(gr_grad_scale(x, 0.5));
    f[5] = gr_add(gr_mul(gr_zero_grad(x), x), gr_grad_clip(gr_sqr(x), -0.1, 0.1));
    for (i = 0; i < 6; i++) r[i] = NULL;
    CHECK_STATUS(gr_rop(6, f, 1, &x, &v, r, NULL), GR_OK);
    for (i = 0; i < 6; i++) CHECK(r[i] && gr_var_ndim(r[i]) == 2);
    ins[0] = x; ins[1] = v;
    va[0] = rs_mat(2, 3, xs); va[1] = rs_mat(2, 3, vs);
    CHECK(rs_run(2, ins, (const gr_array *const *)va, 6, r, res));
    CHECK_SHAPE(res[0], 2, s23);
    CHECK(rs_all_zero(res[0]));
    CHECK_SHAPE(res[1], 2, s23);
    CHECK(rs_all_zero(res[1]));
    for (i = 0; i < 6; i++) w[i] = -3 * vs[i];
    CHECK_ARR(res[2], 6, w, 1e-15);
    CHECK_ARR(res[3], 6, vs, 0);
    for (i = 0; i < 6; i++) w[i] = exp(xs[i]) * 0.5 * vs[i];
    CHECK_ARR(res[4], 6, w, 1e-15);
    for (i = 0; i < 6; i++) w[i] = xs[i] * vs[i] + 2 * xs[i] * vs[i];   /* zg(x) v + 2 x v */
    CHECK_ARR(res[5], 6, w, 1e-15);
    rs_free(6, res); rs_free(2, va);
    gr_graph_free(g);
}

/* decision 4: the R-op of LogSoftmax is v - sum_axis(softmax v), checked against central
   differences and the formula, on both axes; Softmax's too */
TEST(test_rs_log_softmax_jvp) {
    int axis;
    for (axis = 0; axis < 2; axis++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_matrix(g, GR_F64, "x"), *v = gr_matrix(g, GR_F64, "v"), *f[2], *r[2] = { NULL, NULL }, *ins[2];
        double xs[12], vs[12], sm[12], want[12], wsm[12];
        uint64_t seed = 99 + (uint64_t)axis;
        gr_array *va[2], *res[2], *fd;
        int i, j;
        rs_fill(&seed, xs, 12, -2, 2);
        rs_fill(&seed, vs, 12, -1, 1);
        f[0] = gr_log_softmax(x, axis);
        f[1] = gr_softmax(x, axis);
        CHECK_STATUS(gr_rop(2, f, 1, &x, &v, r, NULL), GR_OK);
        /* plain C: softmax along the axis of a 3 x 4 matrix */
        for (i = 0; i < (axis ? 3 : 4); i++) {
            double mx = -1e300, z = 0, sv = 0;
            for (j = 0; j < (axis ? 4 : 3); j++) { int k = axis ? i * 4 + j : j * 4 + i; if (xs[k] > mx) mx = xs[k]; }
            for (j = 0; j < (axis ? 4 : 3); j++) { int k = axis ? i * 4 + j : j * 4 + i; z += exp(xs[k] - mx); }
            for (j = 0; j < (axis ? 4 : 3); j++) { int k = axis ? i * 4 + j : j * 4 + i; sm[k] = exp(xs[k] - mx) / z; sv += sm[k] * vs[k]; }
            for (j = 0; j < (axis ? 4 : 3); j++) {
                int k = axis ? i * 4 + j : j * 4 + i;
                want[k] = vs[k] - sv;
                wsm[k] = sm[k] * (vs[k] - sv);
            }
        }
        ins[0] = x; ins[1] = v;
        va[0] = rs_mat(3, 4, xs); va[1] = rs_mat(3, 4, vs);
        CHECK(rs_run(2, ins, (const gr_array *const *)va, 2, r, res));
        CHECK_ARR(res[0], 12, want, 1e-14);
        CHECK_ARR(res[1], 12, wsm, 1e-14);
        fd = rs_central(2, ins, (const gr_array *const *)va, f[0], 0, va[1], 1e-6);
        CHECK(fd != NULL);
        for (i = 0; fd && res[0] && i < 12; i++) CHECK_NEAR(gr_array_get(res[0], i), gr_array_get(fd, i), 1e-7);
        /* the gradient formula v - softmax sum(v) differs: this is no tautology */
        {
            double gsum = 0, diff = 0;
            for (j = 0; j < 4; j++) gsum += axis ? vs[j] : 0;
            for (j = 0; j < 4 && axis; j++) diff += fabs((vs[j] - sm[j] * gsum) - want[j]);
            CHECK(axis == 0 || diff > 1e-3);
        }
        gr_array_free(fd);
        rs_free(2, res); rs_free(2, va);
        gr_graph_free(g);
    }
}

/* Prod's R-op, zero-safe: sum_i v_i prod_{j != i} x_j, with no, one and two zeros in a row */
TEST(test_rs_prod_zeros) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_matrix(g, GR_F64, "x"), *v = gr_matrix(g, GR_F64, "v"), *f[2], *r[2] = { NULL, NULL }, *ins[2];
    double xs[9] = { 2, 3, 4, 0, 5, 6, 0, 7, 0 }, vs[9] = { 1, -1, 0.5, 2, 3, -4, 1, 1, 1 }, w[3], wall[1];
    gr_array *va[2], *res[2];
    int i, j, k;
    f[0] = gr_prod_axis(x, 1);
    f[1] = gr_prod(gr_slice(x, 0, 0, 2, 1));
    CHECK_STATUS(gr_rop(2, f, 1, &x, &v, r, NULL), GR_OK);
    for (i = 0; i < 3; i++) {
        w[i] = 0;
        for (k = 0; k < 3; k++) {
            double t = vs[i * 3 + k];
            for (j = 0; j < 3; j++) if (j != k) t *= xs[i * 3 + j];
            w[i] += t;
        }
    }
    wall[0] = 0;
    for (k = 0; k < 6; k++) {
        double t = vs[k];
        for (j = 0; j < 6; j++) if (j != k) t *= xs[j];
        wall[0] += t;
    }
    ins[0] = x; ins[1] = v;
    va[0] = rs_mat(3, 3, xs); va[1] = rs_mat(3, 3, vs);
    CHECK(rs_run(2, ins, (const gr_array *const *)va, 2, r, res));
    CHECK_ARR(res[0], 3, w, 1e-15);                      /* 4.75, 60, 0 */
    CHECK_ARR(res[1], 1, wall, 1e-15);
    rs_free(2, res); rs_free(2, va);
    gr_graph_free(g);
}

/* second order forward mode: Rop(Rop(sum(x^3), x, v), x, w) = sum(6 x v w) */
TEST(test_rs_rop_of_rop) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *v = gr_vector(g, GR_F64, "v"), *w = gr_vector(g, GR_F64, "w");
    gr_var *f = gr_sum(gr_mul(gr_sqr(x), x)), *r1 = NULL, *r2 = NULL, *ins[3];
    double xs[3] = { 1, -2, 0.5 }, vs[3] = { 2, 1, -1 }, ws[3] = { 0.5, 3, 4 }, want[1] = { 0 };
    gr_array *va[3], *res[1];
    int i;
    CHECK_STATUS(gr_rop(1, &f, 1, &x, &v, &r1, NULL), GR_OK);
    CHECK_STATUS(gr_rop(1, &r1, 1, &x, &w, &r2, NULL), GR_OK);
    for (i = 0; i < 3; i++) want[0] += 6 * xs[i] * vs[i] * ws[i];
    ins[0] = x; ins[1] = v; ins[2] = w;
    va[0] = rs_vec(3, xs); va[1] = rs_vec(3, vs); va[2] = rs_vec(3, ws);
    CHECK(rs_run(3, ins, (const gr_array *const *)va, 1, &r2, res));
    CHECK_ARR(res[0], 1, want, 1e-14);
    rs_free(1, res); rs_free(3, va);
    gr_graph_free(g);
}

/* a repeated wrt: the first pair wins (its eval point is the tangent); an eval point whose shape
   does not fit wrt fails at call time with GR_ERR_SHAPE */
TEST(test_rs_repeated_wrt_and_shapes) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *v = gr_vector(g, GR_F64, "v"), *w = gr_vector(g, GR_F64, "w");
    gr_var *f = gr_exp(x), *r = NULL, *wrt[2], *ev[2], *ins[3];
    double xs[2] = { 0.5, -1 }, vs[2] = { 1, 2 }, ws[2] = { 10, 20 }, want[2], v3[3] = { 1, 2, 3 };
    gr_array *va[3], *res[1];
    gr_fn *fn;
    const gr_array *o[1];
    int i;
    wrt[0] = x; wrt[1] = x; ev[0] = v; ev[1] = w;
    CHECK_STATUS(gr_rop(1, &f, 2, wrt, ev, &r, NULL), GR_OK);
    for (i = 0; i < 2; i++) want[i] = exp(xs[i]) * vs[i];
    ins[0] = x; ins[1] = v; ins[2] = w;
    va[0] = rs_vec(2, xs); va[1] = rs_vec(2, vs); va[2] = rs_vec(2, ws);
    CHECK(rs_run(3, ins, (const gr_array *const *)va, 1, &r, res));
    CHECK_ARR(res[0], 2, want, 1e-15);
    rs_free(1, res);
    gr_array_free(va[1]);
    va[1] = rs_vec(3, v3);
    fn = gr_function(3, ins, 1, &r, NULL);
    CHECK(fn != NULL);
    CHECK_STATUS(gr_call(fn, (const gr_array *const *)va, o), GR_ERR_SHAPE);
    gr_fn_free(fn);
    rs_free(3, va);
    gr_graph_free(g);
}

/* ---- users' ops ------------------------------------------------------------------------------------ */

/* Cube: y = x^3 elementwise, a grad rule and no R-op rule */
static gr_status rs_cube_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t k;
    (void)node;
    for (k = 0; k < in[0]->size; k++) { double a = gr_array_get(in[0], k); gr_array_set(out[0], k, a * a * a); }
    return GR_OK;
}
static gr_status rs_cube_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr_node_input(node, 0);
    ig[0] = gr_mul(og[0], gr_mul(gr_const(gr_var_graph(x), 3.0), gr_sqr(x)));
    return ig[0] ? GR_OK : gr_graph_status(gr_var_graph(x));
}

/* Pair: (a, b) -> (a b, a + sin b), two inputs and two outputs, shaped like a */
static gr_status rs_pair_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t k;
    (void)node;
    for (k = 0; k < in[0]->size; k++) {
        double a = gr_array_get(in[0], k), b = gr_array_get(in[1], k);
        gr_array_set(out[0], k, a * b);
        gr_array_set(out[1], k, a + sin(b));
    }
    return GR_OK;
}
static gr_status rs_pair_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *a = gr_node_input(node, 0), *b = gr_node_input(node, 1);
    gr_var *ga = NULL, *gb = NULL;
    if (!gr_is_disconnected(og[0])) { ga = gr_mul(og[0], b); gb = gr_mul(og[0], a); }
    if (!gr_is_disconnected(og[1])) {
        ga = ga ? gr_add(ga, og[1]) : og[1];
        gb = gb ? gr_add(gb, gr_mul(og[1], gr_cos(b))) : gr_mul(og[1], gr_cos(b));
    }
    ig[0] = ga ? ga : gr_disconnected_like(a);
    ig[1] = gb ? gb : gr_disconnected_like(b);
    return ig[0] && ig[1] ? GR_OK : gr_graph_status(gr_var_graph(a));
}

static void rs_user_ops(gr_op_def *cube, gr_op_def *pair) {
    memset(cube, 0, sizeof *cube);
    cube->name = "Cube"; cube->n_in = 1; cube->n_out = 1;
    cube->perform = rs_cube_perform; cube->grad = rs_cube_grad;
    memset(pair, 0, sizeof *pair);
    pair->name = "Pair"; pair->n_in = 2; pair->n_out = 2;
    pair->perform = rs_pair_perform; pair->grad = rs_pair_grad;
}

/* rop == NULL with a grad rule: the double pullback, against central differences and formulas */
TEST(test_rs_user_op_double_pullback) {
    gr_graph *g = gr_graph_new();
    gr_op_def cube, pair;
    gr_var *x = gr_vector(g, GR_F64, "x"), *z = gr_vector(g, GR_F64, "z"), *vx = gr_vector(g, GR_F64, "vx"), *vz = gr_vector(g, GR_F64, "vz");
    gr_var *c = NULL, *pin[2], *p[2] = { NULL, NULL }, *f[3], *r[3] = { NULL, NULL, NULL }, *wrt[2], *ev[2], *ins[4], *only, *ro = NULL;
    double xs[3] = { 0.5, -1.25, 2 }, zs[3] = { 1, -0.5, 0.3 }, vxs[3] = { 1, 2, -1 }, vzs[3] = { -0.5, 0.25, 3 }, w[3];
    gr_array *va[4], *res[3], *fd;
    int i;
    rs_user_ops(&cube, &pair);
    CHECK_STATUS(gr_apply(&cube, NULL, 0, 1, &x, &c), GR_OK);
    pin[0] = gr_sin(c); pin[1] = z;
    CHECK_STATUS(gr_apply(&pair, NULL, 0, 2, pin, p), GR_OK);
    f[0] = c;
    f[1] = gr_exp(p[0]);
    f[2] = p[1];
    wrt[0] = x; wrt[1] = z; ev[0] = vx; ev[1] = vz;
    CHECK_STATUS(gr_rop(3, f, 2, wrt, ev, r, NULL), GR_OK);
    ins[0] = x; ins[1] = z; ins[2] = vx; ins[3] = vz;
    va[0] = rs_vec(3, xs); va[1] = rs_vec(3, zs); va[2] = rs_vec(3, vxs); va[3] = rs_vec(3, vzs);
    CHECK(rs_run(4, ins, (const gr_array *const *)va, 3, r, res));
    for (i = 0; i < 3; i++) w[i] = 3 * xs[i] * xs[i] * vxs[i];
    CHECK_ARR(res[0], 3, w, 1e-14);
    for (i = 0; i < 3; i++) {
        double cb = xs[i] * xs[i] * xs[i], a = sin(cb), da = cos(cb) * 3 * xs[i] * xs[i] * vxs[i];
        w[i] = exp(a * zs[i]) * (da * zs[i] + a * vzs[i]);
    }
    CHECK_ARR(res[1], 3, w, 1e-13);
    for (i = 0; i < 3; i++) {
        double cb = xs[i] * xs[i] * xs[i];
        w[i] = cos(cb) * 3 * xs[i] * xs[i] * vxs[i] + cos(zs[i]) * vzs[i];
    }
    CHECK_ARR(res[2], 3, w, 1e-14);
    rs_free(3, res);
    /* one output of Pair, x alone moving: central differences */
    only = gr_add(p[0], p[1]);
    CHECK_STATUS(gr_rop(1, &only, 1, &x, &vx, &ro, NULL), GR_OK);
    CHECK(rs_run(4, ins, (const gr_array *const *)va, 1, &ro, res));
    fd = rs_central(4, ins, (const gr_array *const *)va, only, 0, va[2], 1e-6);
    CHECK(fd != NULL);
    for (i = 0; fd && res[0] && i < 3; i++) CHECK_NEAR(gr_array_get(res[0], i), gr_array_get(fd, i), 1e-7);
    gr_array_free(fd);
    rs_free(1, res);
    /* the Hessian-vector product through the user's op: Rop(grad(sum(cube(x))), x, v) = 6 x v */
    {
        gr_var *gc = gr_grad1(gr_sum(c), x), *hv = NULL;
        CHECK_STATUS(gr_rop(1, &gc, 1, &x, &vx, &hv, NULL), GR_OK);
        CHECK(rs_run(4, ins, (const gr_array *const *)va, 1, &hv, res));
        for (i = 0; i < 3; i++) w[i] = 6 * xs[i] * vxs[i];
        CHECK_ARR(res[0], 3, w, 1e-14);
        rs_free(1, res);
    }
    rs_free(4, va);
    gr_graph_free(g);
}

/* rop == NULL and grad == NULL: GR_ERR_GRAD_NOT_IMPLEMENTED, but only when a tangent reaches it */
TEST(test_rs_user_op_no_rules) {
    gr_graph *g = gr_graph_new();
    gr_op_def bare;
    gr_var *x = gr_vector(g, GR_F64, "x"), *v = gr_vector(g, GR_F64, "v"), *c = gr_vector(g, GR_F64, "c");
    gr_var *y = NULL, *yc = NULL, *f[2], *r[2] = { x, x }, *ins[3];
    double xs[2] = { 1, 2 }, vs[2] = { 3, 4 }, w[2] = { 6, 8 };
    gr_array *va[3], *res[2];
    memset(&bare, 0, sizeof bare);
    bare.name = "Bare"; bare.n_in = 1; bare.n_out = 1; bare.perform = rs_cube_perform;
    CHECK_STATUS(gr_apply(&bare, NULL, 0, 1, &x, &y), GR_OK);
    CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, r, NULL), GR_ERR_GRAD_NOT_IMPLEMENTED);
    CHECK(r[0] == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_GRAD_NOT_IMPLEMENTED);
    CHECK_CONTAINS(gr_graph_message(g), "Bare");
    gr_graph_clear_error(g);
    /* deeper in the graph */
    f[0] = gr_sum(gr_exp(y));
    CHECK_STATUS(gr_rop(1, f, 1, &x, &v, r, NULL), GR_ERR_GRAD_NOT_IMPLEMENTED);
    gr_graph_clear_error(g);
    /* applied to a root that is not in wrt: never asked, its output is zeros */
    CHECK_STATUS(gr_apply(&bare, NULL, 0, 1, &c, &yc), GR_OK);
    f[0] = gr_mul(x, gr_const(g, 2.0));
    f[1] = gr_add(yc, gr_mul(x, gr_const(g, 0.0)));
    CHECK_STATUS(gr_rop(2, f, 1, &x, &v, r, NULL), GR_OK);
    ins[0] = x; ins[1] = v; ins[2] = c;
    va[0] = rs_vec(2, xs); va[1] = rs_vec(2, vs); va[2] = rs_vec(2, xs);
    CHECK(rs_run(3, ins, (const gr_array *const *)va, 2, r, res));
    CHECK_ARR(res[0], 2, w, 0);
    CHECK(rs_all_zero(res[1]));
    rs_free(2, res); rs_free(3, va);
    gr_graph_free(g);
}

/* Prod2: (a, b) -> a b, whose grad rule gives a null gradient for b (not implemented, or
   undefined): the double pullback works for a, and fails with the null's code for b */
static gr_status rs_prod2_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t k;
    (void)node;
    for (k = 0; k < in[0]->size; k++) gr_array_set(out[0], k, gr_array_get(in[0], k) * gr_array_get(in[1], k));
    return GR_OK;
}
static gr_status rs_prod2_grad_ni(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr_mul(og[0], gr_node_input(node, 1));
    ig[1] = gr_grad_not_implemented(node, 1, gr_node_input(node, 1), "(test)");
    return ig[0] && ig[1] ? GR_OK : GR_ERR_VALUE;
}
static gr_status rs_prod2_grad_un(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr_mul(og[0], gr_node_input(node, 1));
    ig[1] = gr_grad_undefined(node, 1, gr_node_input(node, 1), "(test)");
    return ig[0] && ig[1] ? GR_OK : GR_ERR_VALUE;
}

TEST(test_rs_user_op_null_grads) {
    gr_graph *g = gr_graph_new();
    gr_op_def ni, un;
    gr_var *a = gr_vector(g, GR_F64, "a"), *b = gr_vector(g, GR_F64, "b"), *v = gr_vector(g, GR_F64, "v"), *ins[3], *y = NULL, *z = NULL, *r = NULL;
    double as[2] = { 1, 2 }, bs[2] = { 3, -4 }, vs[2] = { 0.5, 2 }, want[2] = { 1.5, -8 };
    gr_array *va[3], *res[1];
    memset(&ni, 0, sizeof ni);
    ni.name = "ProdNI"; ni.n_in = 2; ni.n_out = 1; ni.perform = rs_prod2_perform; ni.grad = rs_prod2_grad_ni;
    un = ni;
    un.name = "ProdUN"; un.grad = rs_prod2_grad_un;
    ins[0] = a; ins[1] = b;
    CHECK_STATUS(gr_apply(&ni, NULL, 0, 2, ins, &y), GR_OK);
    CHECK_STATUS(gr_apply(&un, NULL, 0, 2, ins, &z), GR_OK);
    CHECK_STATUS(gr_rop(1, &y, 1, &a, &v, &r, NULL), GR_OK);       /* b's tangent is zero: its null is never used */
    ins[2] = v;
    va[0] = rs_vec(2, as); va[1] = rs_vec(2, bs); va[2] = rs_vec(2, vs);
    CHECK(rs_run(3, ins, (const gr_array *const *)va, 1, &r, res));
    CHECK_ARR(res[0], 2, want, 1e-15);
    rs_free(1, res); rs_free(3, va);
    r = a;
    CHECK_STATUS(gr_rop(1, &y, 1, &b, &v, &r, NULL), GR_ERR_GRAD_NOT_IMPLEMENTED);
    CHECK(r == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "ProdNI");
    gr_graph_clear_error(g);
    CHECK_STATUS(gr_rop(1, &z, 1, &b, &v, &r, NULL), GR_ERR_GRAD_UNDEFINED);
    CHECK_CONTAINS(gr_graph_message(g), "ProdUN");
    gr_graph_free(g);
}

/* a vector's eval point is read in the vector's shape: the Hessian-vector product of sum(x^3) fuses into
   one pass although x and v have unknown lengths, equals 6 x v, and a call whose v has another length
   (one element included: it no longer broadcasts) fails with a message naming v and x */
TEST(test_rs_eval_point_length) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *v = gr_vector(g, GR_F64, "v"), *gx, *hv = NULL, *ins[2];
    double xs[3] = { 0.5, -1, 2 }, vs[3] = { 3, 0.25, -2 }, want[3], one[1] = { 1 };
    gr_array *xa = rs_vec(3, xs), *va = rs_vec(3, vs), *bad[2] = { rs_vec(2, vs), rs_vec(1, one) };
    const gr_array *in[2], *out[1];
    gr_fn *f;
    char buf[2048];
    int i;
    gx = gr_grad1(gr_sum(gr_mul(gr_sqr(x), x)), x);
    CHECK_STATUS(gr_rop(1, &gx, 1, &x, &v, &hv, NULL), GR_OK);
    ins[0] = x; ins[1] = v;
    f = gr_function(2, ins, 1, &hv, NULL);
    CHECK(f != NULL);
    if (f) {
        gts_fn_print(f, buf, sizeof buf);
        CHECK_MSG(strstr(buf, "= Fused(") && !strstr(strstr(buf, "= Fused(") + 1, "= Fused("), "not one fused pass:\n%s", buf);
        in[0] = xa; in[1] = va;
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        for (i = 0; i < 3; i++) want[i] = 6 * xs[i] * vs[i];
        CHECK_ARR(out[0], 3, want, 1e-15);
        for (i = 0; i < 2; i++) {
            in[1] = bad[i];
            CHECK_STATUS(gr_call(f, in, out), GR_ERR_SHAPE);
            CHECK_CONTAINS(gr_fn_message(f), "'v' of shape");
            CHECK_CONTAINS(gr_fn_message(f), "elements of 'x'");
        }
    }
    gr_fn_free(f);
    gr_array_free(xa); gr_array_free(va); gr_array_free(bad[0]); gr_array_free(bad[1]);
    gr_graph_free(g);
}

SUITE(suite_rop_semantics) = {
    CASE(test_rs_dot_doc), CASE(test_rs_hvp_doc), CASE(test_rs_multiple_outputs), CASE(test_rs_roots_not_in_wrt),
    CASE(test_rs_disconnected_policies), CASE(test_rs_nondiff_plus_diff), CASE(test_rs_dot_break_raises),
    CASE(test_rs_rop_of_grad_shape_only), CASE(test_rs_validation), CASE(test_rs_integer_inputs), CASE(test_rs_f_in_wrt),
    CASE(test_rs_max_min_ties), CASE(test_rs_gradops), CASE(test_rs_log_softmax_jvp), CASE(test_rs_user_op_double_pullback),
    CASE(test_rs_user_op_no_rules), CASE(test_rs_prod_zeros), CASE(test_rs_rop_of_rop), CASE(test_rs_repeated_wrt_and_shapes),
    CASE(test_rs_user_op_null_grads), CASE(test_rs_eval_point_length), END_SUITE
};
