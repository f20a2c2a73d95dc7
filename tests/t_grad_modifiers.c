/* tests/t_grad_modifiers.c: the gradient-modifying identities (SEMANTICS 11), gr_lop (3) and
   gr_subgraph_grad (8), with values evaluated through gr_function and compared with formulas. */
#include "gsem_util.h"

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
        CHECK_CONTAINS(buf, "mul(");
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

/* ---- gr_lop (SEMANTICS 3) -------------------------------------------------------------------------------- */

TEST(test_lop_doc) {
    gr_graph *g = gr_graph_new();
    gr_var *W = gr_matrix(g, GR_F64, "W"), *v = gr_vector(g, GR_F64, "v"), *x = gr_vector(g, GR_F64, "x");
    gr_var *y = gr_dot(x, W), *out = NULL, *in[3];
    double wv[4] = { 1, 1, 1, 1 }, vv[2] = { 2, 2 }, xv[2] = { 0, 1 }, want[4] = { 0, 0, 2, 2 };
    gr_array *vals[3], *r;
    CHECK_STATUS(gr_lop(1, &y, 1, &W, &v, &out, NULL), GR_OK);
    in[0] = W; in[1] = v; in[2] = x;
    vals[0] = gs_mat(GR_F64, 2, 2, wv); vals[1] = gs_vec(GR_F64, 2, vv); vals[2] = gs_vec(GR_F64, 2, xv);
    r = gs_eval(3, in, (const gr_array *const *)vals, out);
    CHECK(r && r->ndim == 2 && r->shape[0] == 2 && r->shape[1] == 2);
    CHECK_EQ_INT(gs_diff(r, 4, want, 0), 0);
    gr_array_free(r);
    for (int i = 0; i < 3; i++) gr_array_free(vals[i]);
    gr_graph_free(g);
}

/* several f with their eval points: L = sum_i v_i . df_i/dwrt, for each wrt */
TEST(test_lop_several) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *s = gr_scalar(g, GR_F64, "s");
    gr_var *v1 = gr_vector(g, GR_F64, "v1"), *v2 = gr_scalar(g, GR_F64, "v2");
    gr_var *f[2], *ev[2], *w[2], *out[2], *in[4];
    double xv[3] = { 0.3, -1.2, 2 }, v1v[3] = { 1, 10, 100 }, sv = 0.7, v2v = -3, want[3], ws = 0;
    gr_array *vals[4], *r[2];
    int i;
    f[0] = gr_mul(gr_sin(x), s);                    /* vector */
    f[1] = gr_sum(gr_mul(gr_mul(x, x), s));         /* scalar */
    ev[0] = v1; ev[1] = v2;
    w[0] = x; w[1] = s;
    CHECK_STATUS(gr_lop(2, f, 2, w, ev, out, NULL), GR_OK);
    in[0] = x; in[1] = s; in[2] = v1; in[3] = v2;
    vals[0] = gs_vec(GR_F64, 3, xv); vals[1] = gr_array_scalar(GR_F64, sv);
    vals[2] = gs_vec(GR_F64, 3, v1v); vals[3] = gr_array_scalar(GR_F64, v2v);
    CHECK_STATUS(gs_run(4, in, (const gr_array *const *)vals, 2, out, r), GR_OK);
    for (i = 0; i < 3; i++) {
        want[i] = v1v[i] * cos(xv[i]) * sv + v2v * 2 * xv[i] * sv;
        ws += v1v[i] * sin(xv[i]) + v2v * xv[i] * xv[i];
    }
    CHECK_EQ_INT(gs_diff(r[0], 3, want, 1e-14), 0);
    CHECK_NEAR(gr_array_get(r[1], 0), ws, 1e-14);
    gr_array_free(r[0]); gr_array_free(r[1]);
    for (i = 0; i < 4; i++) gr_array_free(vals[i]);
    gr_graph_free(g);
}

TEST(test_lop_errors_and_options) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *z = gr_vector(g, GR_F64, "z"), *m = gr_matrix(g, GR_F64, "m");
    gr_var *vi = gr_vector(g, GR_I64, "vi"), *v = gr_vector(g, GR_F64, "v");
    gr_var *y = gr_mul(x, x), *f = gr_mul(y, x), *out[2], *w[2], *in[3];
    double xv[2] = { 1.5, -2 }, vv[2] = { 3, 5 }, want[2];
    gr_array *vals[3], *r[2];
    gr_grad_opts o;
    int i;
    /* an eval point of the wrong ndim, and an integer one */
    out[0] = x;
    CHECK_STATUS(gr_lop(1, &f, 1, &x, &m, out, NULL), GR_ERR_TYPE);
    CHECK(out[0] == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "dimensions");
    gr_graph_clear_error(g);
    CHECK_STATUS(gr_lop(1, &f, 1, &x, &vi, out, NULL), GR_ERR_TYPE);
    gr_graph_clear_error(g);
    in[0] = x; in[1] = v; in[2] = z;
    vals[0] = gs_vec(GR_F64, 2, xv); vals[1] = gs_vec(GR_F64, 2, vv); vals[2] = gs_vec(GR_F64, 2, vv);
    /* consider_constant: y = x^2 held constant, so L = v y */
    memset(&o, 0, sizeof o);
    o.consider_constant = &y; o.n_consider_constant = 1;
    CHECK_STATUS(gr_lop(1, &f, 1, &x, &v, out, &o), GR_OK);
    CHECK_STATUS(gs_run(3, in, (const gr_array *const *)vals, 1, out, r), GR_OK);
    for (i = 0; i < 2; i++) want[i] = vv[i] * xv[i] * xv[i];
    CHECK_EQ_INT(gs_diff(r[0], 2, want, 1e-15), 0);
    gr_array_free(r[0]);
    /* without: L = 3 v x^2 */
    CHECK_STATUS(gr_lop(1, &f, 1, &x, &v, out, NULL), GR_OK);
    CHECK_STATUS(gs_run(3, in, (const gr_array *const *)vals, 1, out, r), GR_OK);
    for (i = 0; i < 2; i++) want[i] = 3 * vv[i] * xv[i] * xv[i];
    CHECK_EQ_INT(gs_diff(r[0], 2, want, 1e-15), 0);
    gr_array_free(r[0]);
    /* disconnected_inputs: raise by default, ignore on request; return_disconnected honoured */
    w[0] = x; w[1] = z;
    out[0] = out[1] = x;
    CHECK_STATUS(gr_lop(1, &f, 2, w, &v, out, NULL), GR_ERR_DISCONNECTED_INPUT);
    CHECK(out[0] == NULL && out[1] == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "gr_lop");
    CHECK_CONTAINS(gr_graph_message(g), "'z'");
    gr_graph_clear_error(g);
    memset(&o, 0, sizeof o);
    o.disconnected_inputs = GR_IGNORE;
    CHECK_STATUS(gr_lop(1, &f, 2, w, &v, out, &o), GR_OK);
    CHECK_STATUS(gs_run(3, in, (const gr_array *const *)vals, 2, out, r), GR_OK);
    CHECK(gs_all(r[1], 2, 0.0));
    gr_array_free(r[0]); gr_array_free(r[1]);
    o.return_disconnected = GR_RETURN_NONE;
    CHECK_STATUS(gr_lop(1, &f, 2, w, &v, out, &o), GR_OK);
    CHECK(out[0] != NULL && out[1] == NULL);
    o.return_disconnected = GR_RETURN_DISCONNECTED;
    CHECK_STATUS(gr_lop(1, &f, 2, w, &v, out, &o), GR_OK);
    CHECK(gr_is_disconnected(out[1]));
    o.disconnected_inputs = GR_WARN;
    {
        gs_log l;
        gs_log_attach(g, &l);
        CHECK_STATUS(gr_lop(1, &f, 2, w, &v, out, &o), GR_OK);
        CHECK(l.count >= 1);
        CHECK_CONTAINS(l.first, "gr_lop was asked to compute the gradient with respect to a variable that is not part of the computational graph");
    }
    for (i = 0; i < 3; i++) gr_array_free(vals[i]);
    gr_graph_free(g);
}

/* ---- gr_subgraph_grad (SEMANTICS 8, test_subgraph_grad) ------------------------------------------------ */

static double det_val(uint64_t i, double scale) {   /* deterministic values in [-scale, scale) */
    uint64_t z = i * 0x9E3779B97F4A7C15ULL + 12345;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return scale * (2.0 * ((double)(z >> 11) / 9007199254740992.0) - 1.0);
}

TEST(test_subgraph_grad) {
    gr_graph *g = gr_graph_new();
    double w1v[12], w2v[8], xv[3], tv[2];
    gr_array *w1a, *w2a, *vals[2], *rt[2], *rp[2];
    gr_var *x, *t, *w1, *w2, *a1, *a2, *cost1, *cost2, *cost, *inputs[2], *wrt[2], *truth[2], *pgrads[2];
    gr_var *params[2][1], *ends[2][1], *costs[2], *next_grad = NULL, *end_grad[1];
    int i;
    for (i = 0; i < 12; i++) w1v[i] = det_val((uint64_t)i, 1.0);
    for (i = 0; i < 8; i++) w2v[i] = det_val((uint64_t)i + 100, 1.0);
    for (i = 0; i < 3; i++) xv[i] = det_val((uint64_t)i + 200, 1.5);
    for (i = 0; i < 2; i++) tv[i] = det_val((uint64_t)i + 300, 1.5);
    w1a = gs_mat(GR_F64, 3, 4, w1v); w2a = gs_mat(GR_F64, 4, 2, w2v);
    x = gr_vector(g, GR_F32, "x"); t = gr_vector(g, GR_F32, "t");
    w1 = gr_shared(g, w1a, "w1"); w2 = gr_shared(g, w2a, "w2");
    a1 = gr_tanh(gr_dot(x, w1));
    a2 = gr_tanh(gr_dot(a1, w2));
    cost2 = gr_add(gr_sum(gr_sqr(gr_sub(a2, t))), gr_sqr(gr_sum(w2)));
    cost1 = gr_sqr(gr_sum(w1));
    cost = gr_add(cost2, cost1);
    inputs[0] = t; inputs[1] = x;
    wrt[0] = w2; wrt[1] = w1;
    CHECK_STATUS(gr_grad(cost, 2, wrt, truth, NULL), GR_OK);
    params[0][0] = w2; params[1][0] = w1;
    ends[0][0] = a1; ends[1][0] = x;
    costs[0] = cost2; costs[1] = cost1;
    for (i = 0; i < 2; i++) {
        gr_var *start = next_grad;
        CHECK_STATUS(gr_subgraph_grad(1, params[i], 1, ends[i], start ? 1 : 0, start ? &ends[i - 1][0] : NULL,
                                      start ? &start : NULL, costs[i], &pgrads[i], end_grad), GR_OK);
        next_grad = end_grad[0];
        CHECK(next_grad != NULL);
    }
    vals[0] = gs_vec(GR_F32, 2, tv); vals[1] = gs_vec(GR_F32, 3, xv);
    CHECK_STATUS(gs_run(2, inputs, (const gr_array *const *)vals, 2, truth, rt), GR_OK);
    CHECK_STATUS(gs_run(2, inputs, (const gr_array *const *)vals, 2, pgrads, rp), GR_OK);
    for (i = 0; i < 2; i++) {
        double diff = 0, norm = 0;
        int64_t k;
        CHECK(rt[i] && rp[i] && rt[i]->size == rp[i]->size);
        if (!rt[i] || !rp[i] || rt[i]->size != rp[i]->size) continue;
        for (k = 0; k < rt[i]->size; k++) {
            diff += fabs(gr_array_get(rt[i], k) - gr_array_get(rp[i], k));
            norm += fabs(gr_array_get(rt[i], k));
        }
        CHECK_MSG(diff < 1e-5, "param %d: sum |diff| = %g", i, diff);
        CHECK(norm > 0.1);                           /* not trivially zero */
    }
    /* an independent check of d cost / d w1 (the lower layer) in plain C, in double */
    {
        double h[4], o2[2], ga2[2], ga1[4], s1 = 0, want[12];
        int j, k;
        for (j = 0; j < 4; j++) {
            float xs[3];
            double z = 0;
            for (k = 0; k < 3; k++) xs[k] = (float)xv[k];
            for (k = 0; k < 3; k++) z += (double)xs[k] * w1v[k * 4 + j];
            h[j] = tanh(z);
        }
        for (j = 0; j < 2; j++) {
            double z = 0;
            for (k = 0; k < 4; k++) z += h[k] * w2v[k * 2 + j];
            o2[j] = tanh(z);
            ga2[j] = 2 * (o2[j] - (double)(float)tv[j]) * (1 - o2[j] * o2[j]);
        }
        for (k = 0; k < 4; k++) {
            ga1[k] = 0;
            for (j = 0; j < 2; j++) ga1[k] += ga2[j] * w2v[k * 2 + j];
            ga1[k] *= 1 - h[k] * h[k];
        }
        for (k = 0; k < 12; k++) s1 += w1v[k];
        for (k = 0; k < 3; k++)
            for (j = 0; j < 4; j++) want[k * 4 + j] = (double)(float)xv[k] * ga1[j] + 2 * s1;
        CHECK_EQ_INT(gs_diff(rp[1], 12, want, 1e-6), 0);
    }
    for (i = 0; i < 2; i++) { gr_array_free(rt[i]); gr_array_free(rp[i]); gr_array_free(vals[i]); }
    gr_array_free(w1a); gr_array_free(w2a);
    gr_graph_free(g);
}

TEST(test_subgraph_grad_errors) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *w = gr_vector(g, GR_F64, "w"), *wg = x, *eg = x;
    gr_var *a = gr_mul(x, w);
    CHECK_STATUS(gr_subgraph_grad(1, &w, 1, &a, 0, NULL, NULL, NULL, &wg, &eg), GR_ERR_VALUE);
    CHECK(wg == NULL && eg == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "cost or start");
    gr_graph_clear_error(g);
    /* the gradient at an end is returned while the walk stops there */
    {
        gr_var *cost = gr_sum(gr_sin(a)), *in[2];
        double xv[2] = { 0.5, 2 }, wv[2] = { -1, 0.25 }, want_w[2], want_a[2];
        gr_array *vals[2], *r[2], *outs_r[2];
        gr_var *outs[2];
        int i;
        CHECK_STATUS(gr_subgraph_grad(1, &w, 1, &a, 0, NULL, NULL, cost, &wg, &eg), GR_OK);
        in[0] = x; in[1] = w;
        vals[0] = gs_vec(GR_F64, 2, xv); vals[1] = gs_vec(GR_F64, 2, wv);
        outs[0] = wg; outs[1] = eg;
        CHECK_STATUS(gs_run(2, in, (const gr_array *const *)vals, 2, outs, r), GR_OK);
        for (i = 0; i < 2; i++) { want_a[i] = cos(xv[i] * wv[i]); want_w[i] = 0; }
        CHECK_EQ_INT(gs_diff(r[0], 2, want_w, 0), 0);        /* a is an end: nothing flows past it to w */
        CHECK_EQ_INT(gs_diff(r[1], 2, want_a, 1e-15), 0);
        (void)outs_r;
        for (i = 0; i < 2; i++) { gr_array_free(r[i]); gr_array_free(vals[i]); }
    }
    gr_graph_free(g);
}

SUITE(suite_grad_modifiers) = {
    CASE(test_zero_grad_values), CASE(test_consider_constant_values), CASE(test_consider_constant_deprecated),
    CASE(test_disconnected_grad), CASE(test_grad_clip), CASE(test_grad_scale), CASE(test_modifiers_removed_when_compiled),
    CASE(test_lop_doc), CASE(test_lop_several), CASE(test_lop_errors_and_options), CASE(test_subgraph_grad),
    CASE(test_subgraph_grad_errors), END_SUITE
};
