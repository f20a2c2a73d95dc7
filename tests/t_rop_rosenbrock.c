/* tests/t_rop_rosenbrock.c: the Rosenbrock function written with vector ops and slices,
       f(x) = sum_{i<n-1} 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2,
   its gradient, its Hessian-vector product (gr_rop of the gradient, and the gradient of
   sum(grad * v)) and its full gr_hessian, against the closed forms in plain C for n = 10 and
   n = 100; PyTensor's Hessp test (x = 0.1 arange(9), p = 0.5 arange(9)); and the
   sum(x^2) - sum(y^2) Hessian-vector example of SEMANTICS 7. */
#include "rs_util.h"

static gr_var *rb_build(gr_var *x) {
    gr_graph *g = gr_var_graph(x);
    gr_var *hi = gr_slice(x, 0, 1, GR_OPEN, 1);          /* x[1:] */
    gr_var *lo = gr_slice(x, 0, 0, -1, 1);               /* x[:-1] */
    gr_var *t1 = gr_mul(gr_const(g, 100.0), gr_sqr(gr_sub(hi, gr_sqr(lo))));
    gr_var *t2 = gr_sqr(gr_sub(gr_const(g, 1.0), lo));
    return gr_sum(gr_add(t1, t2));
}

/* closed forms */
static double rb_f(const double *x, int n) {
    double s = 0;
    int i;
    for (i = 0; i < n - 1; i++) s += 100 * (x[i + 1] - x[i] * x[i]) * (x[i + 1] - x[i] * x[i]) + (1 - x[i]) * (1 - x[i]);
    return s;
}
static void rb_grad(const double *x, int n, double *gx) {
    int j;
    for (j = 0; j < n; j++) {
        double d = 0;
        if (j < n - 1) d += -400 * x[j] * (x[j + 1] - x[j] * x[j]) - 2 * (1 - x[j]);
        if (j > 0) d += 200 * (x[j] - x[j - 1] * x[j - 1]);
        gx[j] = d;
    }
}
/* the tridiagonal Hessian, dense n x n */
static void rb_hess(const double *x, int n, double *h) {
    int j;
    memset(h, 0, sizeof(double) * (size_t)n * (size_t)n);
    for (j = 0; j < n; j++) {
        double d = 0;
        if (j < n - 1) {
            d += 1200 * x[j] * x[j] - 400 * x[j + 1] + 2;
            h[j * n + j + 1] = h[(j + 1) * n + j] = -400 * x[j];
        }
        if (j > 0) d += 200;
        h[j * n + j] = d;
    }
}
static void rb_matvec(const double *h, const double *p, int n, double *out) {
    int i, j;
    for (i = 0; i < n; i++) {
        double s = 0;
        for (j = 0; j < n; j++) s += h[i * n + j] * p[j];
        out[i] = s;
    }
}

/* value, gradient, H v both ways and the full Hessian at x, for direction v */
static void rb_check(int n, const double *xs, const double *vs) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *v = gr_vector(g, GR_F64, "v"), *f = rb_build(x), *gx, *outs[5], *ins[2];
    double *wg = (double *)malloc(sizeof(double) * (size_t)n), *wh = (double *)malloc(sizeof(double) * (size_t)n * (size_t)n);
    double *whv = (double *)malloc(sizeof(double) * (size_t)n), wf[1];
    int64_t shh[2];
    gr_array *va[2], *res[5];
    int i;
    CHECK(wg && wh && whv && f);
    if (!wg || !wh || !whv || !f) { free(wg); free(wh); free(whv); gr_graph_free(g); return; }
    gx = gr_grad1(f, x);
    outs[0] = f;
    outs[1] = gx;
    outs[2] = NULL;
    CHECK_STATUS(gr_rop(1, &gx, 1, &x, &v, &outs[2], NULL), GR_OK);
    outs[3] = gr_grad1(gr_sum(gr_mul(gx, v)), x);
    outs[4] = NULL;
    CHECK_STATUS(gr_hessian(f, 1, &x, &outs[4], NULL), GR_OK);
    wf[0] = rb_f(xs, n);
    rb_grad(xs, n, wg);
    rb_hess(xs, n, wh);
    rb_matvec(wh, vs, n, whv);
    ins[0] = x; ins[1] = v;
    va[0] = rs_vec(n, xs); va[1] = rs_vec(n, vs);
    CHECK(rs_run(2, ins, (const gr_array *const *)va, 5, outs, res));
    CHECK_ARR(res[0], 1, wf, 1e-12);
    CHECK_ARR(res[1], n, wg, 1e-12);
    CHECK_ARR(res[2], n, whv, 1e-12);
    CHECK_ARR(res[3], n, whv, 1e-12);
    shh[0] = shh[1] = n;
    CHECK_SHAPE(res[4], 2, shh);
    CHECK_ARR(res[4], (int64_t)n * n, wh, 1e-12);
    for (i = 0; i < 5; i++) CHECK_MSG(res[i] != NULL, "n = %d, output %d", n, i);
    rs_free(5, res); rs_free(2, va);
    free(wg); free(wh); free(whv);
    gr_graph_free(g);
}

TEST(test_rb_n10) {
    double xs[10], vs[10];
    uint64_t seed = 10;
    rs_fill(&seed, xs, 10, -2, 2);
    rs_fill(&seed, vs, 10, -1, 1);
    rb_check(10, xs, vs);
}

TEST(test_rb_n100) {
    double xs[100], vs[100];
    uint64_t seed = 100;
    int i;
    rs_fill(&seed, xs, 100, -1.5, 1.5);
    rs_fill(&seed, vs, 100, -1, 1);
    rb_check(100, xs, vs);
    for (i = 0; i < 100; i++) xs[i] = 1;                 /* the minimum: gradient 0 */
    rb_check(100, xs, vs);
}

/* PyTensor's Hessp test: x = 0.1 arange(9), p = 0.5 arange(9), against the analytic Hessian
   times p (SciPy's rosen_hess_prod) */
TEST(test_rb_hessp_pytensor) {
    /* rosen_hess_prod's banded formula, evaluated once outside this code */
    static const double scipy[9] = { 0, 27, -10, -95, -192, -265, -278, -195, -180 };
    double xs[9], ps[9], h[81], want[9];
    int i;
    for (i = 0; i < 9; i++) { xs[i] = 0.1 * i; ps[i] = 0.5 * i; }
    rb_hess(xs, 9, h);
    rb_matvec(h, ps, 9, want);
    for (i = 0; i < 9; i++) CHECK_NEAR(want[i], scipy[i], 1e-12);
    rb_check(9, xs, ps);
    {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *p = gr_vector(g, GR_F64, "p"), *gx = gr_grad1(rb_build(x), x), *hp, *ins[2];
        gr_array *va[2], *res[1];
        hp = gr_grad1(gr_sum(gr_mul(gx, p)), x);           /* hessian_vector_product: two reverse passes */
        ins[0] = x; ins[1] = p;
        va[0] = rs_vec(9, xs); va[1] = rs_vec(9, ps);
        CHECK(rs_run(2, ins, (const gr_array *const *)va, 1, &hp, res));
        CHECK_ARR(res[0], 9, scipy, 1e-12);
        rs_free(1, res); rs_free(2, va);
        gr_graph_free(g);
    }
}

/* SEMANTICS 7: cost = sum(x^2) - sum(y^2), p_x = [1, 2, 3], p_y = [3, 2, 1]: Hp = [2, 4, 6] and
   [-6, -4, -2] whatever x and y are */
TEST(test_rb_hvp_two_wrt) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *px = gr_vector(g, GR_F64, "px"), *py = gr_vector(g, GR_F64, "py");
    gr_var *c = gr_sub(gr_sum(gr_sqr(x)), gr_sum(gr_sqr(y))), *wrt[2], *gs[2] = { NULL, NULL }, *hp[2] = { NULL, NULL }, *rp[2] = { NULL, NULL }, *ev[2], *ins[4], *outs[4];
    double xs[3] = { 0.5, -7, 2 }, ys[3] = { 1, 1, -3 }, pxs[3] = { 1, 2, 3 }, pys[3] = { 3, 2, 1 }, wx[3] = { 2, 4, 6 }, wy[3] = { -6, -4, -2 };
    gr_array *va[4], *res[4];
    wrt[0] = x; wrt[1] = y;
    CHECK_STATUS(gr_grad(c, 2, wrt, gs, NULL), GR_OK);
    CHECK_STATUS(gr_grad(gr_add(gr_sum(gr_mul(gs[0], px)), gr_sum(gr_mul(gs[1], py))), 2, wrt, hp, NULL), GR_OK);
    ev[0] = px; ev[1] = py;
    CHECK_STATUS(gr_rop(2, gs, 2, wrt, ev, rp, NULL), GR_OK);
    ins[0] = x; ins[1] = y; ins[2] = px; ins[3] = py;
    outs[0] = hp[0]; outs[1] = hp[1]; outs[2] = rp[0]; outs[3] = rp[1];
    va[0] = rs_vec(3, xs); va[1] = rs_vec(3, ys); va[2] = rs_vec(3, pxs); va[3] = rs_vec(3, pys);
    CHECK(rs_run(4, ins, (const gr_array *const *)va, 4, outs, res));
    CHECK_ARR(res[0], 3, wx, 0);
    CHECK_ARR(res[1], 3, wy, 0);
    CHECK_ARR(res[2], 3, wx, 0);
    CHECK_ARR(res[3], 3, wy, 0);
    rs_free(4, res);
    /* "even NaN": the values of x and y do not enter */
    gr_array_set(va[0], 1, NAN);
    gr_array_set(va[1], 0, NAN);
    CHECK(rs_run(4, ins, (const gr_array *const *)va, 4, outs, res));
    CHECK_ARR(res[0], 3, wx, 0);
    CHECK_ARR(res[1], 3, wy, 0);
    CHECK_ARR(res[2], 3, wx, 0);
    CHECK_ARR(res[3], 3, wy, 0);
    rs_free(4, res); rs_free(4, va);
    gr_graph_free(g);
}

SUITE(suite_rop_rosenbrock) = { CASE(test_rb_n10), CASE(test_rb_n100), CASE(test_rb_hessp_pytensor), CASE(test_rb_hvp_two_wrt), END_SUITE };
