/* tests/t_grad_smoke.c: first checks of gr_grad and gr_verify_grad against analytic values. */
#include "harness.h"

static double eval1(gr_var *x, gr_var *y, double xv) {
    gr_fn *f = gr_function(1, &x, 1, &y, NULL);
    gr_array *xa = gr_array_scalar(GR_F64, xv);
    const gr_array *in[1], *out[1];
    double r = NAN;
    in[0] = xa;
    if (f && gr_call(f, in, out) == GR_OK) r = gr_array_get(out[0], 0);
    else fprintf(stderr, "eval1: %s %s\n", f ? gr_fn_message(f) : "", gr_graph_message(gr_var_graph(x)));
    gr_array_free(xa);
    gr_fn_free(f);
    return r;
}

TEST(test_grad_sin_x) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x");
    gr_var *y = gr_mul(x, gr_sin(x));
    gr_var *dy = gr_grad1(y, x);
    CHECK(dy != NULL);
    CHECK_NEAR(eval1(x, dy, 0.7), sin(0.7) + 0.7 * cos(0.7), 1e-14);
    gr_graph_free(g);
}

TEST(test_grad_clip_scale_docs) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x");
    gr_var *c = gr_sqr(gr_grad_clip(x, -1.0, 1.0)), *p = gr_sqr(x);
    gr_var *s = gr_grad_scale(gr_sin(x), -1.0), *q = gr_sin(x);
    CHECK_NEAR(eval1(x, gr_grad1(c, x), 2.0), 1.0, 1e-15);
    CHECK_NEAR(eval1(x, gr_grad1(p, x), 2.0), 4.0, 1e-15);
    CHECK_NEAR(eval1(x, gr_grad1(s, x), 2.0), -cos(2.0), 1e-15);   /* +0.416... */
    CHECK_NEAR(eval1(x, gr_grad1(q, x), 2.0), cos(2.0), 1e-15);
    CHECK_NEAR(eval1(x, gr_grad1(gr_sqr(gr_grad_scale(x, 2.0)), x), 2.0), 8.0, 1e-15);
    gr_graph_free(g);
}

static gr_var *build_tanh(gr_graph *g, gr_var *const *in, void *user) { (void)g; (void)user; return gr_tanh(in[0]); }

TEST(test_verify_grad_tanh_doc) {
    double v[6] = { 2, 3, 4, -1, 3.3, 9.9 };
    int64_t shape[2] = { 2, 3 };
    gr_array *pt = gr_array_from(GR_F64, 2, shape, v);
    const gr_array *pts[1];
    gr_gradient_error e;
    pts[0] = pt;
    CHECK_STATUS(gr_verify_grad(build_tanh, NULL, 1, pts, NULL, &e), GR_OK);
    gr_array_free(pt);
}

TEST(test_grad_names) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    gr_var *f = gr_sum(gr_mul(x, x));
    gr_var *d;
    gr_var_set_name(f, "f");
    d = gr_grad1(f, x);
    CHECK(d != NULL);
    CHECK(gr_var_name(d) && strcmp(gr_var_name(d), "(df/dx)") == 0);
    gr_graph_free(g);
}

SUITE(suite_grad_smoke) = { CASE(test_grad_sin_x), CASE(test_grad_clip_scale_docs), CASE(test_verify_grad_tanh_doc),
                            CASE(test_grad_names), END_SUITE };

/* SEMANTICS 4.4: Hessian-vector product both ways, x = [4,4], v = [2,2] -> [4,4] */
TEST(test_rop_hvp_doc) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *v = gr_vector(g, GR_F64, "v");
    gr_var *gy = gr_grad1(gr_sum(gr_sqr(x)), x), *hv1 = NULL, *hv2, *ins[2], *outs[2];
    double xs[2] = { 4, 4 }, vs[2] = { 2, 2 };
    int64_t n = 2;
    gr_array *xa = gr_array_from(GR_F64, 1, &n, xs), *va = gr_array_from(GR_F64, 1, &n, vs);
    const gr_array *in[2], *out[2];
    gr_fn *f;
    CHECK_STATUS(gr_rop(1, &gy, 1, &x, &v, &hv1, NULL), GR_OK);
    hv2 = gr_grad1(gr_sum(gr_mul(gy, v)), x);
    ins[0] = x; ins[1] = v; outs[0] = hv1; outs[1] = hv2;
    f = gr_function(2, ins, 2, outs, NULL);
    CHECK(f != NULL);
    in[0] = xa; in[1] = va;
    CHECK_STATUS(gr_call(f, in, out), GR_OK);
    CHECK_NEAR(gr_array_get(out[0], 0), 4.0, 1e-15);
    CHECK_NEAR(gr_array_get(out[0], 1), 4.0, 1e-15);
    CHECK_NEAR(gr_array_get(out[1], 0), 4.0, 1e-15);
    CHECK_NEAR(gr_array_get(out[1], 1), 4.0, 1e-15);
    gr_fn_free(f);
    gr_array_free(xa); gr_array_free(va);
    gr_graph_free(g);
}

/* SEMANTICS 4.4: y = dot(x, W), Rop(y, W, V) with W = 1, V = 2, x = [0,1] -> [2,2] */
TEST(test_rop_dot_doc) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *W = gr_matrix(g, GR_F64, "W"), *V = gr_matrix(g, GR_F64, "V");
    gr_var *y = gr_dot(x, W), *r = NULL, *ins[3];
    double xs[2] = { 0, 1 }, ws[4] = { 1, 1, 1, 1 }, vs[4] = { 2, 2, 2, 2 };
    int64_t n = 2, s2[2] = { 2, 2 };
    gr_array *xa = gr_array_from(GR_F64, 1, &n, xs), *wa = gr_array_from(GR_F64, 2, s2, ws), *va = gr_array_from(GR_F64, 2, s2, vs);
    const gr_array *in[3], *out[1];
    gr_fn *f;
    CHECK_STATUS(gr_rop(1, &y, 1, &W, &V, &r, NULL), GR_OK);
    ins[0] = x; ins[1] = W; ins[2] = V;
    f = gr_function(3, ins, 1, &r, NULL);
    in[0] = xa; in[1] = wa; in[2] = va;
    CHECK_STATUS(gr_call(f, in, out), GR_OK);
    CHECK_NEAR(gr_array_get(out[0], 0), 2.0, 1e-15);
    CHECK_NEAR(gr_array_get(out[0], 1), 2.0, 1e-15);
    gr_fn_free(f);
    gr_array_free(xa); gr_array_free(wa); gr_array_free(va);
    gr_graph_free(g);
}

SUITE(suite_rop_smoke) = { CASE(test_rop_hvp_doc), CASE(test_rop_dot_doc), END_SUITE };

/* SEMANTICS 6, 7: jacobian(x*z, [x, z]) = [diag(z), diag(x)]; hessian(sum(x^2)) = 2 I; outer(x, x) */
TEST(test_jacobian_hessian_basic) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *z = gr_vector(g, GR_F64, "z");
    gr_var *wrt[2], *J[2] = { NULL, NULL }, *H = NULL, *Jo = NULL, *ins[2], *outs[4];
    double xs[3] = { 0, 1, 2 }, zs[3] = { 3, -1, 0.5 };
    int64_t n = 3;
    gr_array *xa = gr_array_from(GR_F64, 1, &n, xs), *za = gr_array_from(GR_F64, 1, &n, zs);
    const gr_array *in[2], *out[4];
    gr_fn *f;
    int i, j, k;
    wrt[0] = x; wrt[1] = z;
    CHECK_STATUS(gr_jacobian(gr_mul(x, z), 2, wrt, J, NULL), GR_OK);
    CHECK_STATUS(gr_hessian(gr_sum(gr_sqr(x)), 1, &x, &H, NULL), GR_OK);
    CHECK_STATUS(gr_jacobian(gr_outer(x, x), 1, &x, &Jo, NULL), GR_OK);
    CHECK(gr_var_ndim(Jo) == 3);
    ins[0] = x; ins[1] = z; outs[0] = J[0]; outs[1] = J[1]; outs[2] = H; outs[3] = Jo;
    f = gr_function(2, ins, 4, outs, NULL);
    CHECK(f != NULL);
    in[0] = xa; in[1] = za;
    CHECK_STATUS(gr_call(f, in, out), GR_OK);
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) {
            CHECK_NEAR(gr_array_get(out[0], i * 3 + j), i == j ? zs[i] : 0.0, 1e-15);
            CHECK_NEAR(gr_array_get(out[1], i * 3 + j), i == j ? xs[i] : 0.0, 1e-15);
            CHECK_NEAR(gr_array_get(out[2], i * 3 + j), i == j ? 2.0 : 0.0, 1e-15);
            for (k = 0; k < 3; k++)   /* d(x_i x_j)/dx_k */
                CHECK_NEAR(gr_array_get(out[3], (i * 3 + j) * 3 + k), (i == k ? xs[j] : 0.0) + (j == k ? xs[i] : 0.0), 1e-15);
        }
    gr_fn_free(f);
    gr_array_free(xa); gr_array_free(za);
    gr_graph_free(g);
}

SUITE(suite_jacobian_smoke) = { CASE(test_jacobian_hessian_basic), END_SUITE };

/* the gradient with respect to a weak constant (float64): d(c + y)/dc = 1, d(c * y)/dc = y */
TEST(test_grad_wrt_gr_const) {
    gr_graph *g = gr_graph_new();
    gr_var *c = gr_const(g, 3.0), *y = gr_scalar(g, GR_F64, "y");
    gr_var *d1 = gr_grad1(gr_add(c, y), c), *d2 = gr_grad1(gr_mul(c, y), c), *outs[2];
    gr_array *ya = gr_array_scalar(GR_F64, 2.5);
    const gr_array *in[1], *out[2];
    gr_fn *f;
    CHECK(d1 && d2);
    outs[0] = d1; outs[1] = d2;
    f = gr_function(1, &y, 2, outs, NULL);
    in[0] = ya;
    CHECK(f && gr_call(f, in, out) == GR_OK);
    if (f) { CHECK_NEAR(gr_array_get(out[0], 0), 1.0, 0); CHECK_NEAR(gr_array_get(out[1], 0), 2.5, 0); }
    gr_fn_free(f);
    gr_array_free(ya);
    gr_graph_free(g);
}
SUITE(suite_grad_const) = { CASE(test_grad_wrt_gr_const), END_SUITE };
