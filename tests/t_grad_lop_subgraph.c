/* tests/t_grad_lop_subgraph.c: gr_lop (SEMANTICS 3) and gr_subgraph_grad (8), with values
   evaluated through gr_function and compared with formulas. (The gradient-modifying ops of
   SEMANTICS 11 are tested with their family, tests/ops_gradops.c.) */
#include "gsem_util.h"

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

SUITE(suite_grad_lop_subgraph) = {
    CASE(test_lop_doc), CASE(test_lop_several), CASE(test_lop_errors_and_options), CASE(test_subgraph_grad),
    CASE(test_subgraph_grad_errors), END_SUITE
};
