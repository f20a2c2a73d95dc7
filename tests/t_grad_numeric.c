/* tests/t_grad_numeric.c: finite differences and gradient checking (SEMANTICS 9, 10):
   gr_abs_rel_err, gr_numeric_grad_new (one-sided differences, default steps), gr_numeric_grad_max_err
   and its `where`, gr_verify_grad with right and deliberately wrong grad rules, GradientError's
   fields and text, seeds, n_tests, and the both-tolerances failure rule. */
#include "gsem_util.h"

TEST(test_abs_rel_err) {
    double a, r;
    gr_abs_rel_err(1.0, 1.5, &a, &r);
    CHECK(a == 0.5 && r == 0.2);
    gr_abs_rel_err(-2.0, 2.0, &a, &r);
    CHECK(a == 4.0 && r == 1.0);
    gr_abs_rel_err(0.0, 0.0, &a, &r);                 /* 0/0 avoided by the 1e-8 floor */
    CHECK(a == 0.0 && r == 0.0);
    gr_abs_rel_err(1e-9, 0.0, &a, &r);
    CHECK(a == 1e-9);
    CHECK_NEAR(r, 1e-9 / 1e-8, 1e-15);
    gr_abs_rel_err(1e-9, -1e-9, &a, &r);
    CHECK(a == 2e-9);
    CHECK_NEAR(r, 2e-9 / 1e-8, 1e-15);
    gr_abs_rel_err(3e-8, 1e-8, &a, &r);               /* above the floor: the plain ratio */
    CHECK_NEAR(r, 2e-8 / 4e-8, 1e-15);
    gr_abs_rel_err(1.0, 1.0, NULL, &r);               /* either output may be NULL */
    CHECK(r == 0.0);
}

/* f(x) = sum(x * x * x) */
static gr_fn *cube_sum_fn(gr_graph *g, gr_dtype dt, int ndim, gr_var **xout) {
    gr_var *x = gr_tensor(g, dt, ndim, NULL, "x"), *f = gr_sum(gr_mul(gr_mul(x, x), x));
    *xout = x;
    return gr_function(1, &x, 1, &f, NULL);
}
static double cube_sum(const double *x, int n) {
    double s = 0;
    int i;
    for (i = 0; i < n; i++) s += x[i] * x[i] * x[i];
    return s;
}

TEST(test_numeric_grad_one_sided) {
    gr_graph *g = gr_graph_new();
    gr_var *x;
    gr_fn *f = cube_sum_fn(g, GR_F64, 1, &x);
    double xv[4] = { 0.5, -1.25, 2, 0.125 }, h[4], want[4], eps = 1e-3, f0;
    gr_array *xa = gs_vec(GR_F64, 4, xv);
    gr_numeric_grad *ng;
    const gr_array *gf;
    int k;
    CHECK(f != NULL);
    ng = gr_numeric_grad_new(f, 1, (const gr_array *const *)&xa, eps);
    CHECK(ng != NULL);
    gf = gr_numeric_grad_get(ng, 0);
    CHECK(gf && gf->dtype == GR_F64 && gf->ndim == 1 && gf->shape[0] == 4);
    f0 = cube_sum(xv, 4);
    for (k = 0; k < 4; k++) {
        memcpy(h, xv, sizeof h);
        h[k] += eps;
        want[k] = (cube_sum(h, 4) - f0) / eps;       /* forward difference, by hand */
    }
    CHECK_EQ_INT(gs_diff(gf, 4, want, 1e-10), 0);
    /* one-sided: off from 3x^2 by 3 x eps + eps^2, not by O(eps^2) as a central difference would be */
    for (k = 0; k < 4; k++) CHECK_NEAR(gr_array_get(gf, k) - 3 * xv[k] * xv[k], 3 * xv[k] * eps + eps * eps, 1e-9);
    CHECK(gr_numeric_grad_get(ng, 1) == NULL && gr_numeric_grad_get(ng, -1) == NULL);
    gr_numeric_grad_free(ng);
    gr_numeric_grad_free(NULL);
    gr_array_free(xa);
    gr_fn_free(f);
    gr_graph_free(g);
}

/* the default steps: 1e-7 for F64, 3e-4 for F32, and the largest of them when both are present */
TEST(test_numeric_grad_default_eps) {
    gr_graph *g = gr_graph_new();
    gr_var *x64 = gr_scalar(g, GR_F64, "x64"), *x32 = gr_scalar(g, GR_F32, "x32"), *in[2];
    gr_var *f64 = gr_mul(gr_mul(x64, x64), x64), *f32 = gr_mul(gr_mul(x32, x32), x32), *fmix = gr_add(f64, f32);
    gr_fn *F64 = gr_function(1, &x64, 1, &f64, NULL), *F32 = gr_function(1, &x32, 1, &f32, NULL), *FM;
    gr_array *a64 = gr_array_scalar(GR_F64, 2.0), *a32 = gr_array_scalar(GR_F32, 1.5), *pts[2];
    gr_numeric_grad *ng;
    in[0] = x64; in[1] = x32;
    FM = gr_function(2, in, 1, &fmix, NULL);
    CHECK(F64 && F32 && FM);
    /* F64: (f(2 + 1e-7) - f(2)) / 1e-7, not another step (1e-6 would be 6e-6 further off) */
    ng = gr_numeric_grad_new(F64, 1, (const gr_array *const *)&a64, 0);
    {
        double xe = 2.0 + 1e-7, want = (xe * xe * xe - 8.0) / 1e-7;
        CHECK(ng != NULL);
        CHECK(fabs(gr_array_get(gr_numeric_grad_get(ng, 0), 0) - want) < 1e-7);
        CHECK(fabs(gr_array_get(gr_numeric_grad_get(ng, 0), 0) - 12.0) < 2e-6);
    }
    gr_numeric_grad_free(ng);
    /* F32: evaluated in float at (float)(1.5 + 3e-4) */
    ng = gr_numeric_grad_new(F32, 1, (const gr_array *const *)&a32, 0);
    {
        float xe = (float)(1.5 + 3e-4), x0 = 1.5f;
        float f1 = xe * xe * xe, fz = x0 * x0 * x0;
        double want = ((double)f1 - (double)fz) / 3e-4;
        CHECK(ng != NULL);
        CHECK_NEAR(gr_array_get(gr_numeric_grad_get(ng, 0), 0), want, 1e-9);
        CHECK(gr_numeric_grad_get(ng, 0)->dtype == GR_F64);
    }
    gr_numeric_grad_free(ng);
    /* both: the F64 point moves by 3e-4 too */
    pts[0] = a64; pts[1] = a32;
    ng = gr_numeric_grad_new(FM, 2, (const gr_array *const *)pts, 0);
    {
        double xe = 2.0 + 3e-4, want = (xe * xe * xe - 8.0) / 3e-4;
        CHECK(ng != NULL);
        CHECK_NEAR(gr_array_get(gr_numeric_grad_get(ng, 0), 0), want, 1e-8);
        CHECK(fabs(gr_array_get(gr_numeric_grad_get(ng, 0), 0) - 12.0) > 1e-3);
    }
    gr_numeric_grad_free(ng);
    gr_fn_free(F64); gr_fn_free(F32); gr_fn_free(FM);
    gr_array_free(a64); gr_array_free(a32);
    gr_graph_free(g);
}

TEST(test_numeric_grad_errors) {
    gr_graph *g = gr_graph_new();
    gr_var *n = gr_vector(g, GR_I64, "n"), *x = gr_vector(g, GR_F64, "x");
    gr_var *fn = gr_sum(gr_mul(gr_cast(n, GR_F64), gr_const(g, 2.0))), *fv = gr_sin(x);
    gr_fn *Fn = gr_function(1, &n, 1, &fn, NULL), *Fv = gr_function(1, &x, 1, &fv, NULL);
    double v[2] = { 1, 2 };
    gr_array *na = gs_vec(GR_I64, 2, v), *xa = gs_vec(GR_F64, 2, v);
    CHECK(gr_numeric_grad_new(Fn, 1, (const gr_array *const *)&na, 0) == NULL);
    CHECK_CONTAINS(gr_fn_message(Fn), "float");
    CHECK(gr_numeric_grad_new(Fv, 1, (const gr_array *const *)&xa, 0) == NULL);     /* not a scalar function */
    CHECK(strlen(gr_fn_message(Fv)) > 0);
    CHECK(gr_numeric_grad_new(NULL, 1, (const gr_array *const *)&xa, 0) == NULL);
    gr_fn_free(Fn); gr_fn_free(Fv);
    gr_array_free(na); gr_array_free(xa);
    gr_graph_free(g);
}

/* ---- gr_numeric_grad_max_err -------------------------------------------------------------------------- */

/* max over elements of min(abs/abs_tol, rel/rel_tol), computed here, with its place */
static double expected_max_err(const gr_numeric_grad *ng, gr_array *const *an, double at, double rt, int *arg, int64_t *pos) {
    double best = -1;
    int i;
    int64_t k;
    for (i = 0; i < 2; i++)
        for (k = 0; k < an[i]->size; k++) {
            double a = gr_array_get(an[i], k), b = gr_array_get(gr_numeric_grad_get(ng, i), k);
            double ae = fabs(a - b), den = fabs(a) + fabs(b), re, s;
            if (den < 1e-8) den = 1e-8;
            re = ae / den;
            s = ae / at < re / rt ? ae / at : re / rt;
            if (s > best) { best = s; *arg = i; *pos = k; }
        }
    return best;
}

TEST(test_numeric_grad_max_err) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_scalar(g, GR_F64, "y"), *in[2];
    gr_var *f = gr_add(gr_sum(gr_mul(gr_mul(x, x), x)), gr_mul(gr_mul(y, y), y));
    gr_fn *F;
    double xv[3] = { 0.5, 1.5, -1 }, yv = 0.75;
    gr_array *pts[2], *an[2];
    gr_numeric_grad *ng;
    gr_gradient_error w;
    double best = -1, m, at = 1e-4, rt = 1e-4;
    int best_arg = -1;
    int64_t best_pos = -1;
    in[0] = x; in[1] = y;
    F = gr_function(2, in, 1, &f, NULL);
    pts[0] = gs_vec(GR_F64, 3, xv); pts[1] = gr_array_scalar(GR_F64, yv);
    ng = gr_numeric_grad_new(F, 2, (const gr_array *const *)pts, 0);
    CHECK(ng != NULL);
    if (!ng) goto out;
    /* analytic = numeric, but for two perturbed entries */
    an[0] = gr_array_copy(gr_numeric_grad_get(ng, 0));
    an[1] = gr_array_copy(gr_numeric_grad_get(ng, 1));
    gr_array_set(an[0], 1, gr_array_get(an[0], 1) + 0.5);
    gr_array_set(an[1], 0, gr_array_get(an[1], 0) + 1e-3);
    best = expected_max_err(ng, an, at, rt, &best_arg, &best_pos);
    m = gr_numeric_grad_max_err(ng, (const gr_array *const *)an, at, rt, &w);
    CHECK_NEAR(m, best, 1e-12);
    CHECK(m > 1);
    CHECK_EQ_INT(best_arg, 0);
    CHECK_EQ_INT(best_pos, 1);
    CHECK_EQ_INT(w.arg, 0);
    CHECK_EQ_INT(w.err_pos, 1);
    CHECK_EQ_INT(w.ndim, 1);
    CHECK_EQ_INT(w.shape[0], 3);
    CHECK(w.val1 == gr_array_get(an[0], 1));                        /* val1 the analytic value */
    CHECK(w.val2 == gr_array_get(gr_numeric_grad_get(ng, 0), 1));   /* val2 the numeric one */
    CHECK(w.abs_err == fabs(w.val1 - w.val2));
    CHECK_NEAR(w.rel_err, w.abs_err / (fabs(w.val1) + fabs(w.val2)), 1e-15);
    CHECK(w.abs_tol == at && w.rel_tol == rt);
    /* the tolerances weigh the two errors: a loose abs_tol makes the relative error decide */
    m = gr_numeric_grad_max_err(ng, (const gr_array *const *)an, 1e-6, 1e-2, &w);
    CHECK_NEAR(m, expected_max_err(ng, an, 1e-6, 1e-2, &best_arg, &best_pos), 1e-12);
    CHECK_EQ_INT(w.arg, best_arg);
    CHECK_EQ_INT(w.err_pos, best_pos);
    CHECK(w.abs_tol == 1e-6 && w.rel_tol == 1e-2);
    /* zero tolerances mean the dtype's default, 1e-4 for F64 */
    m = gr_numeric_grad_max_err(ng, (const gr_array *const *)an, 0, 0, &w);
    CHECK(w.abs_tol == 1e-4 && w.rel_tol == 1e-4);
    CHECK_NEAR(m, best, 1e-12);
    /* exact agreement: 0 */
    gr_array_free(an[0]); gr_array_free(an[1]);
    an[0] = gr_array_copy(gr_numeric_grad_get(ng, 0));
    an[1] = gr_array_copy(gr_numeric_grad_get(ng, 1));
    CHECK(gr_numeric_grad_max_err(ng, (const gr_array *const *)an, at, rt, &w) == 0.0);
    /* a non-finite error: INFINITY, `where` at the first such element */
    gr_array_set(an[0], 2, NAN);
    gr_array_set(an[1], 0, INFINITY);
    m = gr_numeric_grad_max_err(ng, (const gr_array *const *)an, at, rt, &w);
    CHECK(isinf(m) && m > 0);
    CHECK_EQ_INT(w.arg, 0);
    CHECK_EQ_INT(w.err_pos, 2);
    CHECK(w.val1 != w.val1);
    gr_array_set(an[0], 2, 0.0);
    m = gr_numeric_grad_max_err(ng, (const gr_array *const *)an, at, rt, &w);
    CHECK(isinf(m));
    CHECK_EQ_INT(w.arg, 1);
    CHECK_EQ_INT(w.err_pos, 0);
    CHECK_EQ_INT(w.ndim, 0);
    gr_array_free(an[0]); gr_array_free(an[1]);
    gr_numeric_grad_free(ng);
out:
    gr_array_free(pts[0]); gr_array_free(pts[1]);
    gr_fn_free(F);
    gr_graph_free(g);
}

/* ---- gr_verify_grad ------------------------------------------------------------------------------------- */

typedef struct cube_spec { double coef0, coef1; int *performs; } cube_spec;

/* one input: cube(x) with the given rule; two inputs: cube(x0) * 2 + cube(x1), rules coef0, coef1 */
static gr_var *build_cube(gr_graph *g, gr_var *const *in, void *user) {
    const cube_spec *s = (const cube_spec *)user;
    gr_var *y = gs_cube(in[0], s->coef0, NULL, s->performs, NULL);
    (void)g;
    if (s->coef1 != 0) y = gr_add(gr_mul(y, gr_const(g, 2.0)), gs_cube(in[1], s->coef1, NULL, NULL, NULL));
    return y;
}
static gr_var *build_exp_mul(gr_graph *g, gr_var *const *in, void *user) {
    (void)g; (void)user;
    return gr_mul(gr_exp(in[0]), gr_sin(in[1]));
}
static gr_var *build_softmax_dot(gr_graph *g, gr_var *const *in, void *user) {
    (void)g; (void)user;
    return gr_softmax(gr_dot(in[0], in[1]), 1);
}
static gr_var *build_first_only(gr_graph *g, gr_var *const *in, void *user) {
    (void)g; (void)user;
    return gr_exp(in[0]);                            /* in[1] is disconnected: ignored, zeros both ways */
}
/* returns a marker, not a value; user (a gs_log) receives the warning gr_verify_grad gives on its
   graph, through that graph's log hook */
static gr_var *build_marker(gr_graph *g, gr_var *const *in, void *user) {
    gs_log_attach(g, (gs_log *)user);
    return gr_disconnected_like(in[0]);
}
static gr_var *build_null(gr_graph *g, gr_var *const *in, void *user) {
    (void)g; (void)in; (void)user;
    return NULL;
}

TEST(test_verify_grad_passes) {
    double a[6] = { 0.1, -0.4, 0.9, 1.2, -1.1, 0.3 }, b[6] = { 0.5, 0.25, -0.75, 1, 0.2, -0.6 };
    gr_array *A = gs_mat(GR_F64, 2, 3, a), *B = gs_mat(GR_F64, 2, 3, b), *Bt = gs_mat(GR_F64, 3, 2, b), *pts[2];
    gr_array *A32 = gs_mat(GR_F32, 2, 3, a), *B32 = gs_mat(GR_F32, 2, 3, b);
    gr_gradient_error e;
    cube_spec s;
    memset(&s, 0, sizeof s);
    pts[0] = A; pts[1] = B;
    CHECK_STATUS(gr_verify_grad(build_exp_mul, NULL, 2, (const gr_array *const *)pts, NULL, &e), GR_OK);
    CHECK_STATUS(gr_verify_grad(build_first_only, NULL, 2, (const gr_array *const *)pts, NULL, &e), GR_OK);
    pts[1] = Bt;
    CHECK_STATUS(gr_verify_grad(build_softmax_dot, NULL, 2, (const gr_array *const *)pts, NULL, &e), GR_OK);
    s.coef0 = 3.0;
    CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&A, NULL, &e), GR_OK);
    CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&A, NULL, NULL), GR_OK);
    /* float32 points: 3e-4 steps and 1e-2 tolerances */
    pts[0] = A32; pts[1] = B32;
    CHECK_STATUS(gr_verify_grad(build_exp_mul, NULL, 2, (const gr_array *const *)pts, NULL, &e), GR_OK);
    CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&A32, NULL, &e), GR_OK);
    {   /* a float32 projection for a float32 output */
        gr_verify_opts o;
        memset(&o, 0, sizeof o);
        o.cast_to_output_type = 1;
        CHECK_STATUS(gr_verify_grad(build_exp_mul, NULL, 2, (const gr_array *const *)pts, &o, &e), GR_OK);
    }
    gr_array_free(A); gr_array_free(B); gr_array_free(Bt); gr_array_free(A32); gr_array_free(B32);
}

TEST(test_verify_grad_wrong_rule) {
    double xv[4] = { 0.01, 0.02, 0.3, 0.05 };
    gr_array *X = gs_vec(GR_F64, 4, xv), *X32 = gs_vec(GR_F32, 4, xv), *pts[2];
    gr_gradient_error e, e2;
    cube_spec s;
    double ae, re;
    memset(&s, 0, sizeof s);
    s.coef0 = 2.0;                                     /* says d/dx x^3 = 2 x^2 */
    CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&X, NULL, &e), GR_ERR_GRADIENT);
    CHECK_EQ_INT(e.arg, 0);
    CHECK_EQ_INT(e.err_pos, 2);                        /* u x^2 is largest there whatever u in [0.5, 1.5) */
    CHECK_EQ_INT(e.ndim, 1);
    CHECK_EQ_INT(e.shape[0], 4);
    /* val1 = u 2 x^2 (analytic), val2 = u 3 x^2 (numeric): their ratio does not depend on u */
    CHECK_NEAR(e.val1 / e.val2, 2.0 / 3.0, 1e-5);
    CHECK(e.val1 >= 0.5 * 2 * 0.09 && e.val1 < 1.5 * 2 * 0.09);
    gr_abs_rel_err(e.val1, e.val2, &ae, &re);
    CHECK(e.abs_err == fabs(e.val1 - e.val2) && e.abs_err == ae);
    CHECK_NEAR(e.rel_err, e.abs_err / (fabs(e.val1) + fabs(e.val2)), 1e-15);
    CHECK(e.abs_tol == 1e-4 && e.rel_tol == 1e-4);
    CHECK(e.abs_err > e.abs_tol && e.rel_err > e.rel_tol);
    /* the wrong one is the second argument */
    s.coef0 = 3.0; s.coef1 = 2.0;
    pts[0] = X; pts[1] = X;
    CHECK_STATUS(gr_verify_grad(build_cube, &s, 2, (const gr_array *const *)pts, NULL, &e2), GR_ERR_GRADIENT);
    CHECK_EQ_INT(e2.arg, 1);
    CHECK_EQ_INT(e2.err_pos, 2);
    /* float32: the float32 tolerances */
    s.coef0 = 2.0; s.coef1 = 0;
    CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&X32, NULL, &e2), GR_ERR_GRADIENT);
    CHECK(e2.abs_tol == 1e-2 && e2.rel_tol == 1e-2);
    CHECK_EQ_INT(e2.err_pos, 2);
    /* given tolerances are used */
    {
        gr_verify_opts o;
        memset(&o, 0, sizeof o);
        o.rel_tol = 0.5;                               /* the relative error is 0.2 */
        CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&X, &o, &e2), GR_OK);
        o.rel_tol = 0.1;
        o.abs_tol = 1e-3;
        CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&X, &o, &e2), GR_ERR_GRADIENT);
        CHECK(e2.abs_tol == 1e-3 && e2.rel_tol == 0.1);
    }
    gr_array_free(X); gr_array_free(X32);
}

TEST(test_gradient_error_format) {
    double xv[4] = { 0.01, 0.02, 0.3, 0.05 };
    gr_array *X = gs_vec(GR_F64, 4, xv);
    gr_gradient_error e;
    cube_spec s;
    char buf[1024], part[128], small[16];
    int n;
    memset(&s, 0, sizeof s);
    s.coef0 = 2.0;
    CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&X, NULL, &e), GR_ERR_GRADIENT);
    n = gr_gradient_error_format(&e, buf, sizeof buf);
    CHECK_EQ_INT(n, (long long)strlen(buf));
    CHECK(strncmp(buf, "GradientError: numeric gradient and analytic gradient exceed tolerance:", 71) == 0);
    CHECK_CONTAINS(buf, "At position 2 of argument 0 with shape (4");
    snprintf(part, sizeof part, "val1 = %f", e.val1);
    CHECK_CONTAINS(buf, part);
    snprintf(part, sizeof part, "val2 = %f", e.val2);
    CHECK_CONTAINS(buf, part);
    snprintf(part, sizeof part, "abs. error = %f,  abs. tolerance = %f", e.abs_err, e.abs_tol);
    CHECK_CONTAINS(buf, part);
    snprintf(part, sizeof part, "rel. error = %f,  rel. tolerance = %f", e.rel_err, e.rel_tol);
    CHECK_CONTAINS(buf, part);
    /* a short buffer: truncated and terminated, the full length returned */
    CHECK_EQ_INT(gr_gradient_error_format(&e, small, sizeof small), n);
    CHECK_EQ_INT(strlen(small), sizeof small - 1);
    CHECK_EQ_INT(gr_gradient_error_format(NULL, buf, sizeof buf), 0);
    gr_array_free(X);
}

TEST(test_verify_grad_arguments) {
    double v[3] = { 1, 2, 3 };
    gr_array *N = gs_vec(GR_I64, 3, v), *X = gs_vec(GR_F64, 3, v), *pts[2];
    cube_spec s;
    gs_log log;
    memset(&s, 0, sizeof s);
    s.coef0 = 3.0;
    CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&N, NULL, NULL), GR_ERR_TYPE);
    pts[0] = X; pts[1] = N;
    CHECK_STATUS(gr_verify_grad(build_exp_mul, NULL, 2, (const gr_array *const *)pts, NULL, NULL), GR_ERR_TYPE);
    CHECK_STATUS(gr_verify_grad(NULL, NULL, 1, (const gr_array *const *)&X, NULL, NULL), GR_ERR_VALUE);
    CHECK_STATUS(gr_verify_grad(build_cube, &s, 0, (const gr_array *const *)&X, NULL, NULL), GR_ERR_VALUE);
    CHECK(gr_verify_grad(build_null, NULL, 1, (const gr_array *const *)&X, NULL, NULL) != GR_OK);
    CHECK_STATUS(gr_verify_grad(build_marker, &log, 1, (const gr_array *const *)&X, NULL, NULL), GR_ERR_TYPE);
    CHECK_EQ_INT(log.count, 1);
    CHECK_CONTAINS(log.first, "gr_verify_grad: the builder returned a gradient marker");
    gr_array_free(N); gr_array_free(X);
}

/* the same seed gives the same projection, another seed another one; seed 0 is a fixed default */
TEST(test_verify_grad_seed) {
    double xv[4] = { 0.01, 0.02, 0.3, 0.05 };
    gr_array *X = gs_vec(GR_F64, 4, xv);
    gr_gradient_error a, b, c, d0, d1;
    gr_verify_opts o;
    cube_spec s;
    memset(&s, 0, sizeof s);
    s.coef0 = 2.0;
    memset(&o, 0, sizeof o);
    o.seed = 42;
    CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&X, &o, &a), GR_ERR_GRADIENT);
    CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&X, &o, &b), GR_ERR_GRADIENT);
    o.seed = 43;
    CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&X, &o, &c), GR_ERR_GRADIENT);
    CHECK(a.val1 == b.val1 && a.val2 == b.val2 && a.err_pos == b.err_pos);
    CHECK(a.val1 != c.val1);
    o.seed = 0;
    CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&X, &o, &d0), GR_ERR_GRADIENT);
    CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&X, NULL, &d1), GR_ERR_GRADIENT);
    CHECK(d0.val1 == d1.val1 && d0.val2 == d1.val2);
    gr_array_free(X);
}

/* n_tests repetitions: each costs the same number of forward evaluations; 0 means 2 */
TEST(test_verify_grad_n_tests) {
    double xv[5] = { 0.3, -0.7, 1.1, 0.2, -1.4 };
    gr_array *X = gs_vec(GR_F64, 5, xv);
    int counts[4], k;
    gr_verify_opts o;
    cube_spec s;
    memset(&s, 0, sizeof s);
    s.coef0 = 3.0;
    for (k = 0; k < 4; k++) {
        int performs = 0;
        memset(&o, 0, sizeof o);
        o.n_tests = k;                                /* 0 (the default), 1, 2, 3 */
        s.performs = &performs;
        CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&X, &o, NULL), GR_OK);
        counts[k] = performs;
    }
    CHECK(counts[1] > 0);
    CHECK(counts[2] - counts[1] > 0);
    CHECK_EQ_INT(counts[3] - counts[2], counts[2] - counts[1]);
    CHECK(counts[2] - counts[1] >= 5 + 1);            /* at least the N + 1 evaluations of the differences */
    CHECK_EQ_INT(counts[0], counts[2]);
    gr_array_free(X);
}

/* a failure needs BOTH tolerances exceeded at the same element */
TEST(test_verify_grad_both_tolerances) {
    double tiny[3] = { 1e-3, 2e-3, -1.5e-3 }, big[3] = { 10, 20, -15 }, unit[3] = { 0.8, 1.2, -1 };
    gr_array *T = gs_vec(GR_F64, 3, tiny), *B = gs_vec(GR_F64, 3, big), *U = gs_vec(GR_F64, 3, unit);
    gr_gradient_error e;
    cube_spec s;
    memset(&s, 0, sizeof s);
    /* relative error 0.2 everywhere, absolute error below 1e-5: passes */
    s.coef0 = 2.0;
    CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&T, NULL, &e), GR_OK);
    /* absolute error about 1e-3, relative error 5e-7: passes */
    s.coef0 = 3.0 * (1 + 1e-6);
    CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&B, NULL, &e), GR_OK);
    /* both large: fails */
    s.coef0 = 2.0;
    CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&U, NULL, &e), GR_ERR_GRADIENT);
    CHECK(e.abs_err > 1e-4 && e.rel_err > 1e-4);
    /* and the small-relative case fails once the relative tolerance is below it */
    {
        gr_verify_opts o;
        memset(&o, 0, sizeof o);
        o.rel_tol = 1e-7;
        s.coef0 = 3.0 * (1 + 1e-6);
        CHECK_STATUS(gr_verify_grad(build_cube, &s, 1, (const gr_array *const *)&B, &o, &e), GR_ERR_GRADIENT);
        CHECK(e.rel_err > 1e-7 && e.rel_err < 1e-6 && e.abs_err > 1e-4);
    }
    gr_array_free(T); gr_array_free(B); gr_array_free(U);
}

SUITE(suite_grad_numeric) = {
    CASE(test_abs_rel_err), CASE(test_numeric_grad_one_sided), CASE(test_numeric_grad_default_eps),
    CASE(test_numeric_grad_errors), CASE(test_numeric_grad_max_err), CASE(test_verify_grad_passes),
    CASE(test_verify_grad_wrong_rule), CASE(test_gradient_error_format), CASE(test_verify_grad_arguments),
    CASE(test_verify_grad_seed), CASE(test_verify_grad_n_tests), CASE(test_verify_grad_both_tolerances), END_SUITE
};
