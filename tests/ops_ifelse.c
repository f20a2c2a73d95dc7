/* tests/ops_ifelse.c: the op of ops/ifelse.c: IfElse, the lazy conditional gr_ifelse.
     - values against plain C in every dtype, sides of different shapes, conditions of every dtype
       (-0.0 is false, NaN true), at both optimize levels;
     - Aesara's tests/test_ifelse.py: test_lazy_if, test_not_lazy_if_inplace, test_grad_lazy_if,
       test_multiple_out, test_multiple_out_grad, test_grad_cast_input, test_grad_int_value,
       test_nested, with closed forms;
     - laziness made observable: a counting op of the user's on the side not taken never runs (nested
       conditionals too; a node also read elsewhere runs); ifelse(i < 3, x[i], 0) at i = 5 works;
     - the backward pass is lazy too: d/dx ifelse(x > 0, sqrt(x), 0) is 0 at 0 (not NaN), with its
       second derivative; the R-op; the adjoint identity through it; Jacobian and Hessian; inside a
       loop's body with until;
     - the rewrites: a constant condition, nested conditionals on one condition; fusion keeps to a side;
     - derivative specs; the errors of gr_ifelse. */
#include "ops.h"
#include <math.h>
#include <string.h>

/* ---- helpers -------------------------------------------------------------------------------------- */

static gr_array *gti_scalar(gr_dtype dt, double v) { return gr_array_scalar(dt, v); }

/* calls f (n inputs, n_out outputs); 1 when it worked, res[] the outputs' first elements or the outputs */
static int gti_call(gr_fn *f, int n, const gr_array *const *in, int n_out, const gr_array **out, const char *label) {
    gr_status st = gr_call(f, in, out);
    CHECK_MSG(st == GR_OK, "%s: gr_call: %s", label, gr_fn_message(f));
    (void)n; (void)n_out;
    return st == GR_OK;
}

static gr_fn *gti_fn(int n_in, gr_var *const *ins, int n_out, gr_var *const *outs, int level) {
    gr_fn_opts o;
    gr_fn *f;
    memset(&o, 0, sizeof o);
    o.optimize = level ? GR_OPT_NONE : GR_OPT_FULL;
    f = gr_function(n_in, ins, n_out, outs, &o);
    CHECK_MSG(f != NULL, "gr_function: %s", n_out ? gr_graph_message(gr_var_graph(outs[0])) : "");
    return f;
}

/* a user's op counting its runs (params: the counter's address): y = 2 x; with fail set it fails */
typedef struct gti_count { int *runs; int fail; } gti_count;
static gr_status gti_count_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gti_count *p = (const gti_count *)gr_node_params(node);
    int64_t k;
    (*p->runs)++;
    if (p->fail) return gr_node_error(node, GR_ERR_RUNTIME, "this op must not run");
    for (k = 0; k < in[0]->size; k++) gr_array_set(out[0], k, 2.0 * gr_array_get(in[0], k));
    return GR_OK;
}
static gr_status gti_count_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr_mul(og[0], gr_const(gr_var_graph(og[0]), 2.0));
    return ig[0] ? GR_OK : gr_graph_status(gr_var_graph(gr_node_input(node, 0)));
}
static const gr_op_def gti_count_op = { "count", 1, 1, NULL, NULL, NULL, gti_count_perform, gti_count_grad, NULL, NULL };
static gr_var *gti_counted(gr_var *x, int *runs, int fail) {
    gti_count p;
    gr_var *y = NULL;
    p.runs = runs;
    p.fail = fail;
    return gr_apply(&gti_count_op, &p, sizeof p, 1, &x, &y) == GR_OK ? y : NULL;
}

static gr_var *gti_if(gr_var *c, gr_var *a, gr_var *b) {
    gr_var *r = NULL;
    CHECK_STATUS(gr_ifelse(c, 1, &a, &b, &r), GR_OK);
    return r;
}

/* ---- values ---------------------------------------------------------------------------------------- */

/* every dtype of sides and condition; sides of different shapes; both optimize levels (gtf_expect) */
TEST(test_ifelse_values) {
    static const gr_dtype dts[4] = { GR_F64, GR_F32, GR_I64, GR_BOOL };
    static const double conds[6] = { 1.0, 0.0, -0.0, 2.5, -3.0, NAN };   /* true, false, false, true, true, true */
    static const int64_t sa[2] = { 2, 3 }, sb[2] = { 4, 1 };
    gtf_rng rng;
    int d, cd, k, dyn;
    rng.s = 1717;
    for (d = 0; d < 4; d++)
        for (cd = 0; cd < 4; cd++)
            for (k = 0; k < 6; k++)
                for (dyn = 0; dyn < 2; dyn++) {
                    gr_dtype dt = dts[d], cdt = dts[cd];
                    double cv = conds[k];
                    gr_graph *g;
                    gr_var *a, *b, *c, *y, *ins[3];
                    gr_array *aa, *ba, *ca;
                    const gr_array *arrs[3];
                    char label[128];
                    int taken;
                    if ((cdt == GR_I64 || cdt == GR_BOOL) && (cv != floor(cv) || isnan(cv))) continue;
                    if (cdt == GR_BOOL && cv != 0 && cv != 1) continue;
                    g = gr_graph_new();
                    a = gtf_input(g, dt, 2, sa, dyn, "a");
                    b = gtf_input(g, dt, 2, sb, dyn, "b");
                    c = gr_scalar(g, cdt, "c");
                    y = gti_if(c, a, b);
                    aa = gts_random(&rng, dt, 2, sa, -4, 4, -9, 9);
                    ba = gts_random(&rng, dt, 2, sb, -4, 4, -9, 9);
                    ca = gti_scalar(cdt, cv);
                    taken = isnan(cv) || cv != 0;
                    ins[0] = a; ins[1] = b; ins[2] = c;
                    arrs[0] = aa; arrs[1] = ba; arrs[2] = ca;
                    snprintf(label, sizeof label, "ifelse(%s %g, %s (2,3), (4,1)) %s", gr_dtype_name(cdt), cv, gr_dtype_name(dt),
                             dyn ? "unknown shapes" : "static shapes");
                    {
                        const gr_array *src = taken ? aa : ba;
                        gr_array *want = gr_array_new(GR_F64, src->ndim, src->shape);
                        int64_t q;
                        for (q = 0; q < src->size; q++) gr_array_set(want, q, gr_array_get(src, q));
                        gtf_expect(g, 3, ins, arrs, y, dt, want, 0, label);
                        gr_array_free(want);
                    }
                    if (!dyn) CHECK(gr_var_ndim(y) == 2);
                    gr_array_free(aa); gr_array_free(ba); gr_array_free(ca);
                    gr_graph_free(g);
                }
}

/* Aesara's test_lazy_if: the value of the side taken, whose shape may differ from the other's */
TEST(test_ifelse_lazy_if) {
    static const double xv[5] = { 1, 2, 3, 4, 5 }, yv[3] = { -1, -2, -3 };
    gr_graph *g = gr_graph_new();
    gr_var *c = gr_scalar(g, GR_I64, "c"), *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *ins[3], *z;
    gr_array *xa = e_vec(5, xv), *ya = e_vec(3, yv), *c1 = gti_scalar(GR_I64, 1), *c0 = gti_scalar(GR_I64, 0);
    const gr_array *arrs[3];
    ins[0] = c; ins[1] = x; ins[2] = y;
    z = gti_if(c, x, y);
    arrs[1] = xa; arrs[2] = ya;
    arrs[0] = c1;
    gtf_expect(g, 3, ins, arrs, z, GR_F64, xa, 0, "test_lazy_if, c = 1");
    arrs[0] = c0;
    gtf_expect(g, 3, ins, arrs, z, GR_F64, ya, 0, "test_lazy_if, c = 0");
    gr_array_free(xa); gr_array_free(ya); gr_array_free(c1); gr_array_free(c0);
    gr_graph_free(g);
}

/* Aesara's test_not_lazy_if_inplace: the result is a copy: the caller's arrays are not written, and a
   value also returned on its own keeps its value */
TEST(test_ifelse_not_inplace) {
    static const double xv[3] = { 1, 2, 3 }, yv[2] = { 7, 8 };
    gr_graph *g = gr_graph_new();
    gr_var *c = gr_scalar(g, GR_BOOL, "c"), *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *ins[3], *outs[3];
    gr_array *xa = e_vec(3, xv), *ya = e_vec(2, yv), *ca;
    const gr_array *arrs[3], *res[3];
    int level, cv;
    ins[0] = c; ins[1] = x; ins[2] = y;
    outs[1] = gr_mul(x, gr_const(g, 2.0));
    outs[0] = gti_if(c, outs[1], y);
    outs[2] = gr_add(outs[0], gr_const(g, 1.0));        /* read after the conditional: may reuse its memory */
    for (level = 0; level < 2; level++) {
        gr_fn *f = gti_fn(3, ins, 3, outs, level);
        for (cv = 0; f && cv < 2; cv++) {
            int64_t k, n;
            ca = gti_scalar(GR_BOOL, cv);
            arrs[0] = ca; arrs[1] = xa; arrs[2] = ya;
            if (gti_call(f, 3, arrs, 3, res, "not inplace")) {
                n = cv ? 3 : 2;
                CHECK_EQ_INT(res[0]->size, n);
                for (k = 0; k < n; k++) {
                    double want = cv ? 2 * xv[k] : yv[k];
                    CHECK_NEAR(gr_array_get(res[0], k), want, 0);
                    CHECK_NEAR(gr_array_get(res[2], k), want + 1, 0);
                }
                for (k = 0; k < 3; k++) CHECK_NEAR(gr_array_get(res[1], k), 2 * xv[k], 0);
                for (k = 0; k < 3; k++) CHECK_NEAR(gr_array_get(xa, k), xv[k], 0);
                for (k = 0; k < 2; k++) CHECK_NEAR(gr_array_get(ya, k), yv[k], 0);
            }
            gr_array_free(ca);
        }
        gr_fn_free(f);
    }
    gr_array_free(xa); gr_array_free(ya);
    gr_graph_free(g);
}

/* Aesara's test_multiple_out: several pairs on one condition, of different dtypes and shapes */
TEST(test_ifelse_multiple_out) {
    static const double xv[3] = { 1, 2, 3 }, yv[2] = { 7, 8 };
    gr_graph *g = gr_graph_new();
    gr_var *c = gr_scalar(g, GR_F64, "c"), *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *ins[3];
    gr_var *i1 = gr_scalar(g, GR_I64, "i"), *th[4], *el[4], *out[4];
    gr_array *xa = e_vec(3, xv), *ya = e_vec(2, yv), *ia = gti_scalar(GR_I64, 5);
    int level, cv;
    th[0] = x; el[0] = y;
    th[1] = y; el[1] = x;
    th[2] = gr_sum(x); el[2] = gr_sum(y);
    th[3] = i1; el[3] = gr_mul(i1, gr_const(g, 3.0));
    CHECK_STATUS(gr_ifelse(c, 4, th, el, out), GR_OK);
    CHECK(gr_var_dtype(out[3]) == GR_I64);
    for (level = 0; level < 2; level++) {
        gr_var *fin[4];
        gr_fn *f;
        fin[0] = c; fin[1] = x; fin[2] = y; fin[3] = i1;
        f = gti_fn(4, fin, 4, out, level);
        for (cv = 0; f && cv < 2; cv++) {
            gr_array *ca = gti_scalar(GR_F64, cv ? 0.5 : 0.0);
            const gr_array *arrs[4], *res[4];
            arrs[0] = ca; arrs[1] = xa; arrs[2] = ya; arrs[3] = ia;
            if (gti_call(f, 4, arrs, 4, res, "multiple out")) {
                CHECK_EQ_INT(res[0]->size, cv ? 3 : 2);
                CHECK_EQ_INT(res[1]->size, cv ? 2 : 3);
                CHECK_NEAR(gr_array_get(res[0], 1), cv ? 2 : 8, 0);
                CHECK_NEAR(gr_array_get(res[1], 1), cv ? 8 : 2, 0);
                CHECK_NEAR(gr_array_get(res[2], 0), cv ? 6 : 15, 0);
                CHECK_NEAR(gr_array_get(res[3], 0), cv ? 5 : 15, 0);
            }
            gr_array_free(ca);
        }
        gr_fn_free(f);
    }
    (void)ins;
    gr_array_free(xa); gr_array_free(ya); gr_array_free(ia);
    gr_graph_free(g);
}

/* ---- gradients ------------------------------------------------------------------------------------- */

/* Aesara's test_grad_lazy_if and test_multiple_out_grad: d sum(ifelse(c, x, y)) / dx is ones where c
   holds and zeros (shaped like x) where not; with several pairs, each pair's */
TEST(test_ifelse_grad_lazy_if) {
    static const double xv[3] = { 1, 2, 3 }, yv[2] = { 7, 8 };
    gr_graph *g = gr_graph_new();
    gr_var *c = gr_scalar(g, GR_I64, "c"), *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *ins[3];
    gr_var *th[2], *el[2], *o[2], *cost, *wrt[2], *gr[2];
    gr_array *xa = e_vec(3, xv), *ya = e_vec(2, yv);
    int level, cv;
    ins[0] = c; ins[1] = x; ins[2] = y;
    th[0] = x; el[0] = y;                                   /* test_grad_lazy_if */
    th[1] = gr_mul(x, x); el[1] = gr_exp(y);                /* test_multiple_out_grad: a second pair */
    CHECK_STATUS(gr_ifelse(c, 2, th, el, o), GR_OK);
    cost = gr_add(gr_sum(o[0]), gr_mul(gr_const(g, 3.0), gr_sum(o[1])));
    wrt[0] = x; wrt[1] = y;
    CHECK_STATUS(gr_grad(cost, 2, wrt, gr, NULL), GR_OK);
    for (level = 0; level < 2; level++) {
        gr_fn *f = gti_fn(3, ins, 2, gr, level);
        for (cv = 0; f && cv < 2; cv++) {
            gr_array *ca = gti_scalar(GR_I64, cv);
            const gr_array *arrs[3], *res[2];
            int64_t k;
            arrs[0] = ca; arrs[1] = xa; arrs[2] = ya;
            if (gti_call(f, 3, arrs, 2, res, "grad lazy if")) {
                CHECK_EQ_INT(res[0]->size, 3);
                CHECK_EQ_INT(res[1]->size, 2);
                for (k = 0; k < 3; k++) CHECK_NEAR(gr_array_get(res[0], k), cv ? 1 + 6 * xv[k] : 0, 1e-12);
                for (k = 0; k < 2; k++) CHECK_NEAR(gr_array_get(res[1], k), cv ? 0 : 1 + 3 * exp(yv[k]), 1e-9);
            }
            gr_array_free(ca);
        }
        gr_fn_free(f);
    }
    gr_array_free(xa); gr_array_free(ya);
    gr_graph_free(g);
}

/* Aesara's test_grad_cast_input: the sides cast to float32, the gradients reach the float64 inputs */
TEST(test_ifelse_grad_cast_input) {
    static const double xv[3] = { 1, 2, 3 }, yv[3] = { 7, 8, 9 };
    gr_graph *g = gr_graph_new();
    gr_var *c = gr_scalar(g, GR_I64, "c"), *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *ins[3], *z, *wrt[2], *gr[2];
    gr_array *xa = e_vec(3, xv), *ya = e_vec(3, yv);
    int cv;
    ins[0] = c; ins[1] = x; ins[2] = y;
    z = gti_if(c, gr_cast(x, GR_F32), gr_cast(y, GR_F32));
    CHECK(gr_var_dtype(z) == GR_F32);
    wrt[0] = x; wrt[1] = y;
    CHECK_STATUS(gr_grad(gr_sum(z), 2, wrt, gr, NULL), GR_OK);
    CHECK(gr_var_dtype(gr[0]) == GR_F64 && gr_var_dtype(gr[1]) == GR_F64);
    for (cv = 0; cv < 2; cv++) {
        gr_array *ca = gti_scalar(GR_I64, cv), *gx, *gy;
        const gr_array *arrs[3];
        int64_t k;
        arrs[0] = ca; arrs[1] = xa; arrs[2] = ya;
        gx = gtl_eval(3, ins, arrs, gr[0], "grad cast x");
        gy = gtl_eval(3, ins, arrs, gr[1], "grad cast y");
        for (k = 0; gx && gy && k < 3; k++) {
            CHECK_NEAR(gr_array_get(gx, k), cv ? 1 : 0, 0);
            CHECK_NEAR(gr_array_get(gy, k), cv ? 0 : 1, 0);
        }
        gr_array_free(gx); gr_array_free(gy); gr_array_free(ca);
    }
    gr_array_free(xa); gr_array_free(ya);
    gr_graph_free(g);
}

/* Aesara's test_grad_int_value: loss = ifelse(score * y > 0, 0, 1) is piecewise constant: the gradients
   of the parameters are zeros (not an error) */
TEST(test_ifelse_grad_int_value) {
    static const double wv[4] = { 0.5, -1, 2, 0.25 }, xv[4] = { 1, 2, 3, 4 };
    gr_graph *g = gr_graph_new();
    gr_array *wa = e_vec(4, wv), *ba = gti_scalar(GR_F64, 0.3), *xa = e_vec(4, xv), *ya = gti_scalar(GR_F64, -1.0);
    gr_var *w = gr_shared(g, wa, "w"), *b = gr_shared(g, ba, "b"), *x = gr_vector(g, GR_F64, "x"), *y = gr_scalar(g, GR_F64, "y");
    gr_var *score = gr_add(gr_dot(w, x), b), *correct = gr_gt(gr_mul(score, y), gr_const(g, 0.0));
    gr_var *loss = gti_if(correct, gr_const(g, 0.0), gr_const(g, 1.0)), *wrt[2], *gr[2], *ins[2];
    const gr_array *arrs[2];
    gr_array *gw, *gb, *l;
    wrt[0] = w; wrt[1] = b;
    CHECK_STATUS(gr_grad(loss, 2, wrt, gr, NULL), GR_OK);
    ins[0] = x; ins[1] = y;
    arrs[0] = xa; arrs[1] = ya;
    gw = gtl_eval(2, ins, arrs, gr[0], "grad int value w");
    gb = gtl_eval(2, ins, arrs, gr[1], "grad int value b");
    l = gtl_eval(2, ins, arrs, loss, "loss");
    if (gw && gb && l) {
        int64_t k;
        CHECK_EQ_INT(gw->size, 4);
        for (k = 0; k < 4; k++) CHECK_NEAR(gr_array_get(gw, k), 0, 0);
        CHECK_NEAR(gr_array_get(gb, 0), 0, 0);
        CHECK_NEAR(gr_array_get(l, 0), 1, 0);           /* score 7.3, times -1: not correct */
    }
    gr_array_free(gw); gr_array_free(gb); gr_array_free(l);
    gr_array_free(wa); gr_array_free(ba); gr_array_free(xa); gr_array_free(ya);
    gr_graph_free(g);
}

/* the backward pass is lazy: d/dx ifelse(x > 0, sqrt(x), 0) is 1 / (2 sqrt x) for x > 0 and 0 for
   x <= 0, also at 0 (where 0 * inf would be NaN); its second derivative -x^-1.5 / 4, and 0; at both
   optimize levels */
TEST(test_ifelse_grad_sqrt_at_zero) {
    static const double xs[4] = { 4.0, 0.0, -1.0, 0.25 };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x");
    gr_var *y = gti_if(gr_gt(x, gr_const(g, 0.0)), gr_sqrt(x), gr_const(g, 0.0));
    gr_var *d1 = gr_grad1(y, x), *d2 = d1 ? gr_grad1(d1, x) : NULL, *outs[3];
    int level, k;
    CHECK(d1 != NULL && d2 != NULL);
    outs[0] = y; outs[1] = d1; outs[2] = d2;
    for (level = 0; d2 && level < 2; level++) {
        gr_fn *f = gti_fn(1, &x, 3, outs, level);
        for (k = 0; f && k < 4; k++) {
            gr_array *xa = gti_scalar(GR_F64, xs[k]);
            const gr_array *arrs[1], *res[3];
            double v = xs[k];
            arrs[0] = xa;
            if (gti_call(f, 1, arrs, 3, res, "sqrt at zero")) {
                CHECK_NEAR(gr_array_get(res[0], 0), v > 0 ? sqrt(v) : 0, 1e-15);
                CHECK_NEAR(gr_array_get(res[1], 0), v > 0 ? 0.5 / sqrt(v) : 0, 1e-15);
                CHECK_NEAR(gr_array_get(res[2], 0), v > 0 ? -0.25 * pow(v, -1.5) : 0, 1e-14);
            }
            gr_array_free(xa);
        }
        gr_fn_free(f);
    }
    gr_graph_free(g);
}

/* R-op: ifelse(c, R_then, R_else); the adjoint identity <u, J v> = <J^T u, v> through the conditional,
   on both sides; the R-op against central differences */
static gr_var *gti_piece(gr_graph *g, gr_var *x) {
    gr_var *c = gr_gt(gr_sum(x), gr_const(g, 0.0));
    return gti_if(c, gr_mul(gr_sin(x), x), gr_exp(gr_mul(x, gr_const(g, 0.5))));
}
TEST(test_ifelse_rop_adjoint) {
    static const double side[2][3] = { { 0.3, 0.7, -0.2 }, { -0.6, 0.1, -0.4 } }, uv[3] = { 0.5, -1.5, 2.0 }, vv[3] = { 1.0, 0.25, -0.75 };
    int s;
    for (s = 0; s < 2; s++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *v = gr_vector(g, GR_F64, "v"), *u = gr_vector(g, GR_F64, "u");
        gr_var *y = gti_piece(g, x), *jv = NULL, *jtu = NULL, *ins[3];
        gr_array *xa = e_vec(3, side[s]), *va = e_vec(3, vv), *ua = e_vec(3, uv), *ra, *la;
        const gr_array *arrs[3];
        CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, &jv, NULL), GR_OK);
        CHECK_STATUS(gr_lop(1, &y, 1, &x, &u, &jtu, NULL), GR_OK);
        ins[0] = x; ins[1] = v; ins[2] = u;
        arrs[0] = xa; arrs[1] = va; arrs[2] = ua;
        ra = gtl_eval(3, ins, arrs, jv, "rop");
        la = gtl_eval(3, ins, arrs, jtu, "lop");
        if (ra && la) {
            double lhs = 0, rhs = 0;
            int64_t k;
            for (k = 0; k < 3; k++) {
                double xk = side[s][k];
                double dk = s == 0 ? cos(xk) * xk + sin(xk) : 0.5 * exp(0.5 * xk);   /* the side's derivative */
                CHECK_NEAR(gr_array_get(ra, k), dk * vv[k], 1e-12);
                CHECK_NEAR(gr_array_get(la, k), dk * uv[k], 1e-12);
                lhs += uv[k] * gr_array_get(ra, k);
                rhs += gr_array_get(la, k) * vv[k];
            }
            CHECK_NEAR(lhs, rhs, 1e-12);
        }
        gr_array_free(ra); gr_array_free(la); gr_array_free(xa); gr_array_free(va); gr_array_free(ua);
        gr_graph_free(g);
    }
}

/* gr_jacobian and gr_hessian through the conditional (its batching rule): diagonal, the side's
   derivatives, on both sides */
TEST(test_ifelse_jacobian_hessian) {
    static const double side[2][2] = { { 0.3, 0.5 }, { -0.3, -0.5 } };
    int s;
    for (s = 0; s < 2; s++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *y = gti_piece(g, x), *J = NULL, *H = NULL;
        gr_array *xa = e_vec(2, side[s]), *ja, *ha;
        const gr_array *arrs[1];
        CHECK_STATUS(gr_jacobian(y, 1, &x, &J, NULL), GR_OK);
        CHECK_STATUS(gr_hessian(gr_sum(y), 1, &x, &H, NULL), GR_OK);
        arrs[0] = xa;
        ja = gtl_eval(1, &x, arrs, J, "jacobian");
        ha = gtl_eval(1, &x, arrs, H, "hessian");
        if (ja && ha) {
            int i, j;
            for (i = 0; i < 2; i++)
                for (j = 0; j < 2; j++) {
                    double t = side[s][i];
                    double dj = s == 0 ? cos(t) * t + sin(t) : 0.5 * exp(0.5 * t), dh = s == 0 ? 2 * cos(t) - t * sin(t) : 0.25 * exp(0.5 * t);
                    CHECK_NEAR(gr_array_get(ja, i * 2 + j), i == j ? dj : 0, 1e-12);
                    CHECK_NEAR(gr_array_get(ha, i * 2 + j), i == j ? dh : 0, 1e-12);
                }
        }
        gr_array_free(ja); gr_array_free(ha); gr_array_free(xa);
        gr_graph_free(g);
    }
}

/* ---- laziness ------------------------------------------------------------------------------------- */

/* a counting op on the side not taken never runs; on the side taken it runs once per call; a node of
   that side also read elsewhere runs; the same for the gradient's backward nodes */
TEST(test_ifelse_lazy_counts) {
    int level;
    for (level = 0; level < 2; level++) {
        int then_runs = 0, else_runs = 0, both_runs = 0, cv;
        gr_graph *g = gr_graph_new();
        gr_var *c = gr_scalar(g, GR_BOOL, "c"), *x = gr_vector(g, GR_F64, "x"), *ins[2], *outs[2];
        gr_var *shared = gti_counted(x, &both_runs, 0);
        gr_var *a = gr_sin(gti_counted(gr_add(x, shared), &then_runs, 0)), *b = gr_exp(gti_counted(x, &else_runs, 0));
        gr_var *z = gti_if(c, a, b);
        gr_fn *f;
        ins[0] = c; ins[1] = x;
        outs[0] = z;
        outs[1] = gr_sum(shared);                     /* the shared node is read outside the conditional */
        f = gti_fn(2, ins, 2, outs, level);
        for (cv = 0; f && cv < 4; cv++) {
            static const double xv[2] = { 0.5, -0.25 };
            gr_array *ca = gti_scalar(GR_BOOL, cv & 1), *xa = e_vec(2, xv);
            const gr_array *arrs[2], *res[2];
            int t0 = then_runs, e0 = else_runs, b0 = both_runs;
            arrs[0] = ca; arrs[1] = xa;
            if (gti_call(f, 2, arrs, 2, res, "lazy counts")) {
                int64_t k;
                CHECK_EQ_INT(then_runs - t0, cv & 1);
                CHECK_EQ_INT(else_runs - e0, !(cv & 1));
                CHECK_EQ_INT(both_runs - b0, 1);
                for (k = 0; k < 2; k++)
                    CHECK_NEAR(gr_array_get(res[0], k), (cv & 1) ? sin(2 * (xv[k] + 2 * xv[k])) : exp(2 * xv[k]), 1e-14);
            }
            gr_array_free(ca); gr_array_free(xa);
        }
        gr_fn_free(f);
        /* the gradient: the backward nodes of the side not taken do not run either */
        {
            gr_var *gx = gr_grad1(gr_sum(z), x);
            gr_fn *fg = gx ? gti_fn(2, ins, 1, &gx, level) : NULL;
            CHECK(gx != NULL);
            for (cv = 0; fg && cv < 2; cv++) {
                static const double xv[2] = { 0.5, -0.25 };
                gr_array *ca = gti_scalar(GR_BOOL, cv), *xa = e_vec(2, xv);
                const gr_array *arrs[2], *res[1];
                int t0 = then_runs, e0 = else_runs;
                arrs[0] = ca; arrs[1] = xa;
                if (gti_call(fg, 2, arrs, 1, res, "lazy gradient")) {
                    int64_t k;
                    CHECK_EQ_INT(then_runs - t0, cv);
                    CHECK_EQ_INT(else_runs - e0, !cv);
                    for (k = 0; k < 2; k++)     /* d/dx sin(2 (x + 2x)) = 6 cos(6x); d/dx exp(2x) = 2 exp(2x) */
                        CHECK_NEAR(gr_array_get(res[0], k), cv ? 6 * cos(6 * xv[k]) : 2 * exp(2 * xv[k]), 1e-13);
                }
                gr_array_free(ca); gr_array_free(xa);
            }
            gr_fn_free(fg);
        }
        gr_graph_free(g);
    }
}

/* ifelse(i < 3, x[i], 0) with i = 5: the out-of-range Take is on the side not taken */
TEST(test_ifelse_index_out_of_range) {
    static const double xv[3] = { 10, 20, 30 };
    int level, i;
    for (level = 0; level < 2; level++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *iv = gr_scalar(g, GR_I64, "i"), *ins[2];
        gr_var *y = gti_if(gr_lt(iv, gr_const(g, 3.0)), gr_take(x, iv, 0), gr_const(g, 0.0)), *w;
        gr_fn *f;
        ins[0] = x; ins[1] = iv;
        w = gr_where(gr_lt(iv, gr_const(g, 3.0)), gr_take(x, iv, 0), gr_const(g, 0.0));
        f = gti_fn(2, ins, 1, &y, level);
        for (i = 0; f && i < 6; i++) {
            gr_array *xa = e_vec(3, xv), *ia = gti_scalar(GR_I64, i);
            const gr_array *arrs[2], *res[1];
            arrs[0] = xa; arrs[1] = ia;
            if (gti_call(f, 2, arrs, 1, res, "x[i] at i")) CHECK_NEAR(gr_array_get(res[0], 0), i < 3 ? xv[i] : 0, 0);
            gr_array_free(xa); gr_array_free(ia);
        }
        gr_fn_free(f);
        {                                             /* gr_where computes both sides: the call fails */
            gr_fn *fw = gti_fn(2, ins, 1, &w, level);
            gr_array *xa = e_vec(3, xv), *ia = gti_scalar(GR_I64, 5);
            const gr_array *arrs[2], *res[1];
            arrs[0] = xa; arrs[1] = ia;
            if (fw) CHECK_STATUS(gr_call(fw, arrs, res), GR_ERR_RUNTIME);
            gr_array_free(xa); gr_array_free(ia);
            gr_fn_free(fw);
        }
        gr_graph_free(g);
    }
}

/* Aesara's test_nested: ifelse(c1, ifelse(c2, x, bad(x)), bad(x)) with an op that fails if it runs
   (Aesara's NotImplementedOp); the outer conditional on one condition twice; nested conditionals on
   two conditions run only the side of each taken */
TEST(test_ifelse_nested) {
    int level, c1, c2;
    for (level = 0; level < 2; level++) {
        int bad1 = 0, bad2 = 0, inner_runs = 0;
        gr_graph *g = gr_graph_new();
        gr_var *a = gr_scalar(g, GR_I64, "c1"), *b = gr_scalar(g, GR_I64, "c2"), *x = gr_scalar(g, GR_F64, "x"), *ins[3], *t, *u, *outs[2];
        gr_fn *f;
        t = gti_if(a, x, gti_counted(x, &bad1, 1));
        t = gti_if(a, t, t);                          /* Aesara's test_nested */
        u = gti_if(a, gti_if(b, gti_counted(x, &inner_runs, 0), gti_counted(gr_neg(x), &bad2, 1)), gr_const(g, 7.0));
        ins[0] = a; ins[1] = b; ins[2] = x;
        outs[0] = t; outs[1] = u;
        f = gti_fn(3, ins, 1, outs, level);
        for (c1 = 1; f && c1 < 2; c1++)
            for (c2 = 0; c2 < 2; c2++) {
                gr_array *aa = gti_scalar(GR_I64, c1), *ba = gti_scalar(GR_I64, c2), *xa = gti_scalar(GR_F64, 10);
                const gr_array *arrs[3], *res[1];
                arrs[0] = aa; arrs[1] = ba; arrs[2] = xa;
                if (gti_call(f, 3, arrs, 1, res, "test_nested")) CHECK_NEAR(gr_array_get(res[0], 0), 10, 0);
                gr_array_free(aa); gr_array_free(ba); gr_array_free(xa);
            }
        gr_fn_free(f);
        f = gti_fn(3, ins, 1, outs + 1, level);
        for (c1 = 0; f && c1 < 2; c1++)
            for (c2 = 0; c2 < 2; c2++) {
                gr_array *aa = gti_scalar(GR_I64, c1), *ba = gti_scalar(GR_I64, c2), *xa = gti_scalar(GR_F64, 10);
                const gr_array *arrs[3], *res[1];
                int r0 = inner_runs;
                arrs[0] = aa; arrs[1] = ba; arrs[2] = xa;
                if (c1 && !c2) {                          /* the inner else side runs the failing op: the call fails */
                    CHECK_STATUS(gr_call(f, arrs, res), GR_ERR_RUNTIME);
                    CHECK_CONTAINS(gr_fn_message(f), "must not run");
                } else if (gti_call(f, 3, arrs, 1, res, "nested")) {
                    CHECK_NEAR(gr_array_get(res[0], 0), c1 ? 20 : 7, 0);
                    CHECK_EQ_INT(inner_runs - r0, c1 && c2);
                }
                gr_array_free(aa); gr_array_free(ba); gr_array_free(xa);
            }
        CHECK_EQ_INT(bad1, 0);
        CHECK_EQ_INT(bad2, 1);
        gr_fn_free(f);
        gr_graph_free(g);
    }
}

/* inside a loop's body, with until: h_t = ifelse(x_t > 0, h + x_t, h * x_t), stopping once h > 5 */
typedef struct gti_loop { int *runs; } gti_loop;
static gr_status gti_loop_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    gti_loop *l = (gti_loop *)user;
    gr_var *pos = gr_gt(in[0], gr_const(g, 0.0));
    out[0] = gti_if(pos, gr_add(in[1], in[0]), gr_mul(in[1], gti_counted(in[0], l->runs, 0)));
    *until = gr_gt(out[0], gr_const(g, 5.0));
    return out[0] ? GR_OK : gr_graph_status(g);
}
TEST(test_ifelse_in_scan) {
    static const double xv[7] = { 1.0, -0.5, 2.0, 3.0, -1.0, 4.0, 1.0 };
    int level;
    for (level = 0; level < 2; level++) {
        int runs = 0;
        gti_loop l;
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *h0 = gr_scalar(g, GR_F64, "h0"), *res = NULL, *ins[2], *outs[2];
        gr_scan_seq s;
        gr_scan_out o;
        gr_fn *f;
        l.runs = &runs;
        s.x = x; s.n_taps = 0; s.taps = NULL;
        o.initial = h0; o.n_taps = 0; o.taps = NULL;
        CHECK_STATUS(gr_scan(gti_loop_step, &l, 1, &s, 1, &o, 0, NULL, NULL, &res), GR_OK);
        ins[0] = x; ins[1] = h0;
        outs[0] = res;
        outs[1] = res ? gr_grad1(gr_sum(res), h0) : NULL;
        CHECK(outs[1] != NULL);
        f = outs[1] ? gti_fn(2, ins, 2, outs, level) : NULL;
        if (f) {
            gr_array *xa = e_vec(7, xv), *ha = gti_scalar(GR_F64, 1.0);
            const gr_array *arrs[2], *r[2];
            double h = 1.0, want[7], dh = 1.0, dsum = 0;
            int64_t t, n = 0, negs = 0;
            for (t = 0; t < 7; t++) {                     /* plain C: the values, and d sum(h) / d h0 */
                if (xv[t] > 0) h = h + xv[t]; else { h = h * 2 * xv[t]; dh *= 2 * xv[t]; negs++; }
                want[n++] = h;
                dsum += dh;
                if (h > 5) break;
            }
            arrs[0] = xa; arrs[1] = ha;
            if (gti_call(f, 2, arrs, 2, r, "ifelse in scan")) {
                CHECK_EQ_INT(r[0]->size, n);
                for (t = 0; t < n && t < r[0]->size; t++) CHECK_NEAR(gr_array_get(r[0], t), want[t], 1e-14);
                CHECK_NEAR(gr_array_get(r[1], 0), dsum, 1e-12);
            }
            {                                             /* the values alone: the counting op runs at the negative steps only */
                gr_fn *fv = gti_fn(2, ins, 1, outs, level);
                runs = 0;
                if (fv && gti_call(fv, 2, arrs, 1, r, "ifelse in scan, values")) CHECK_EQ_INT(runs, negs);
                gr_fn_free(fv);
            }
            gr_array_free(xa); gr_array_free(ha);
        }
        gr_fn_free(f);
        gr_graph_free(g);
    }
}

/* ---- rewrites -------------------------------------------------------------------------------------- */

/* a constant condition leaves its side only; nested conditionals on one condition become one */
TEST(test_ifelse_rewrites) {
    static const double xv[2] = { 0.5, 2.0 };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *c = gr_scalar(g, GR_BOOL, "c"), *ins[2], *k1, *k0, *nest;
    gr_array *xa = e_vec(2, xv), *ca = gti_scalar(GR_BOOL, 1);
    const gr_array *arrs[2];
    gr_fn *f;
    char buf[4096];
    gr_array *want;
    static const int64_t two[1] = { 2 };
    ins[0] = x; ins[1] = c;
    arrs[0] = xa; arrs[1] = ca;
    k1 = gti_if(gr_const(g, 1.0), gr_sin(x), gr_cos(x));
    k0 = gti_if(gr_const(g, 0.0), gr_sin(x), gr_cos(x));
    nest = gti_if(c, gti_if(c, gr_sin(x), gr_exp(x)), gti_if(c, gr_exp(x), gr_cos(x)));
    f = gti_fn(2, ins, 1, &k1, 0);
    if (f) { gts_fn_print(f, buf, sizeof buf); CHECK(strstr(buf, "IfElse") == NULL); CHECK(strstr(buf, "Cos") == NULL); gr_fn_free(f); }
    f = gti_fn(2, ins, 1, &nest, 0);
    if (f) {
        char *p;
        gts_fn_print(f, buf, sizeof buf);
        p = strstr(buf, "IfElse");
        CHECK(p != NULL && strstr(p + 1, "IfElse") == NULL);
        CHECK(strstr(buf, "Exp") == NULL);
        gr_fn_free(f);
    }
    want = gr_array_new(GR_F64, 1, two);
    gr_array_set(want, 0, sin(xv[0])); gr_array_set(want, 1, sin(xv[1]));
    gtf_expect(g, 2, ins, arrs, k1, GR_F64, want, 1e-15, "constant true");
    gtf_expect(g, 2, ins, arrs, nest, GR_F64, want, 1e-15, "nested on one condition");
    gr_array_set(want, 0, cos(xv[0])); gr_array_set(want, 1, cos(xv[1]));
    gtf_expect(g, 2, ins, arrs, k0, GR_F64, want, 1e-15, "constant false");
    gr_array_free(want); gr_array_free(xa); gr_array_free(ca);
    gr_graph_free(g);
}

/* fusion keeps to a side: sin x + 1 outside, exp(3 sin x) on one side, cos x on the other are three
   groups (one fused pass over everything would compute both sides at every call) */
static int gti_line_has_both(const char *buf, const char *a, const char *b) {
    const char *p = strstr(buf, a);
    for (; p; p = strstr(p + 1, a)) {
        const char *start = p, *end = strchr(p, '\n');
        while (start > buf && start[-1] != '\n') start--;
        if (!end) end = p + strlen(p);
        {
            const char *q = strstr(start, b);
            if (q && q < end) return 1;
        }
    }
    return 0;
}
TEST(test_ifelse_fusion_sides) {
    static const double xv[3] = { 0.5, -1.0, 2.0 };
    static const int64_t three[1] = { 3 };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *c = gr_scalar(g, GR_BOOL, "c"), *z = gr_sin(x), *ins[2], *outs[2];
    gr_var *y = gti_if(c, gr_exp(gr_mul(z, gr_const(g, 3.0))), gr_cos(x)), *w = gr_add(z, gr_const(g, 1.0)), *both;
    gr_array *xa = e_vec(3, xv), *want = gr_array_new(GR_F64, 1, three);
    const gr_array *arrs[2];
    gr_fn *f;
    char buf[4096];
    int cv, k;
    ins[0] = x; ins[1] = c;
    outs[0] = y; outs[1] = w;
    f = gti_fn(2, ins, 2, outs, 0);
    if (f) {
        gts_fn_print(f, buf, sizeof buf);
        CHECK_MSG(!gti_line_has_both(buf, "Exp", "Cos") && !gti_line_has_both(buf, "Exp", "Add") && !gti_line_has_both(buf, "Cos", "Add"),
                  "a fused group spans sides:\n%s", buf);
        gr_fn_free(f);
    }
    both = gr_add(y, w);
    for (cv = 0; cv < 2; cv++) {
        gr_array *ca = gti_scalar(GR_BOOL, cv);
        for (k = 0; k < 3; k++) gr_array_set(want, k, (cv ? exp(3 * sin(xv[k])) : cos(xv[k])) + sin(xv[k]) + 1);
        arrs[0] = xa; arrs[1] = ca;
        gtf_expect(g, 2, ins, arrs, both, GR_F64, want, 1e-14, cv ? "fused sides, c true" : "fused sides, c false");
        gr_array_free(ca);
    }
    gr_array_free(xa); gr_array_free(want);
    gr_graph_free(g);
}

/* ---- errors ---------------------------------------------------------------------------------------- */

TEST(test_ifelse_errors) {
    gr_graph *g = gr_graph_new(), *h = gr_graph_new();
    gr_var *c = gr_scalar(g, GR_BOOL, "c"), *v = gr_vector(g, GR_F64, "v"), *m = gr_matrix(g, GR_F64, "m");
    gr_var *vi = gr_vector(g, GR_I64, "vi"), *other = gr_vector(h, GR_F64, "w"), *out[2], *a[2], *b[2];
    gr_var *disc = gr_disconnected_like(v), *cv = gr_vector(g, GR_BOOL, "cv");
    out[0] = out[1] = v;
    /* no graph known: nothing recorded */
    CHECK_STATUS(gr_ifelse(NULL, 1, NULL, NULL, out), GR_ERR_VALUE);
    CHECK(out[0] == NULL);
#define GTI_FAILS(code, needle, n, then_, else_, cond_) do { \
        out[0] = out[1] = v; \
        gr_graph_clear_error(g); \
        CHECK_STATUS(gr_ifelse(cond_, n, then_, else_, out), code); \
        CHECK(((n) < 1 || out[0] == NULL) && ((n) < 2 || out[1] == NULL)); \
        CHECK_STATUS(gr_graph_status(g), code); \
        CHECK_CONTAINS(gr_graph_message(g), "gr_ifelse"); \
        CHECK_CONTAINS(gr_graph_message(g), needle); \
    } while (0)
    a[0] = v; b[0] = v; a[1] = v; b[1] = v;
    GTI_FAILS(GR_ERR_VALUE, "n is -1", -1, a, b, c);
    GTI_FAILS(GR_ERR_VALUE, "then_vals is NULL", 1, NULL, b, c);
    GTI_FAILS(GR_ERR_VALUE, "else_vals is NULL", 1, a, NULL, c);
    GTI_FAILS(GR_ERR_VALUE, "condition is NULL", 1, a, b, NULL);
    a[1] = NULL;
    GTI_FAILS(GR_ERR_VALUE, "then_vals[1] is NULL", 2, a, b, c);
    a[1] = v; b[1] = NULL;
    GTI_FAILS(GR_ERR_VALUE, "else_vals[1] is NULL", 2, a, b, c);
    b[1] = v;
    GTI_FAILS(GR_ERR_TYPE, "must be 0-d", 1, a, b, cv);
    GTI_FAILS(GR_ERR_TYPE, "marker", 1, a, b, disc);
    a[1] = m;
    GTI_FAILS(GR_ERR_TYPE, "pair 1 differs", 2, a, b, c);
    a[1] = vi;
    GTI_FAILS(GR_ERR_TYPE, "pair 1 differs", 2, a, b, c);
    a[1] = disc;
    GTI_FAILS(GR_ERR_TYPE, "then_vals[1] is a gradient marker", 2, a, b, c);
    a[1] = v; b[0] = other;
    GTI_FAILS(GR_ERR_VALUE, "belongs to another graph", 2, a, b, c);
    b[0] = v;
    gr_graph_clear_error(g);
    out[0] = NULL;
    CHECK_STATUS(gr_ifelse(c, 0, a, b, out), GR_OK);              /* nothing to do */
    CHECK_STATUS(gr_ifelse(c, 1, a, b, NULL), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "out is NULL");
    gr_graph_clear_error(g);
    /* a weak constant takes the other side's dtype; a weak 0-d against a vector is an error */
    a[0] = gr_scalar(g, GR_F32, "s");
    b[0] = gr_const(g, 2.0);
    CHECK_STATUS(gr_ifelse(c, 1, a, b, out), GR_OK);
    CHECK(out[0] && gr_var_dtype(out[0]) == GR_F32);
    a[0] = v;
    GTI_FAILS(GR_ERR_TYPE, "pair 0 differs", 1, a, b, c);
#undef GTI_FAILS
    gr_graph_free(g);
    gr_graph_free(h);
}

/* ---- derivative specs ------------------------------------------------------------------------------ */

/* ifelse(sum(x) > 0, x * y, sin(y) - x): the side is fixed by the domain */
static gr_var *build_ifelse(gr_graph *g, gr_var *const *in, void *user) {
    gr_var *c = gr_gt(gr_sum(in[0]), gr_const(g, 0.0));
    (void)user;
    return gti_if(c, gr_mul(in[0], in[1]), gr_sub(gr_sin(in[1]), in[0]));
}
/* nested, and a side of another shape than the other: ifelse(c, ifelse(d, exp(x), x^2), sum(x) y) */
static gr_var *build_ifelse_nested(gr_graph *g, gr_var *const *in, void *user) {
    gr_var *c = gr_gt(gr_sum(in[0]), gr_const(g, 0.0)), *d = gr_gt(gr_sum(in[1]), gr_const(g, 0.0));
    (void)user;
    return gti_if(c, gti_if(d, gr_exp(in[0]), gr_sqr(in[0])), gr_mul(gr_sum(in[0]), in[1]));
}
static const gtd_spec specs_IfElse[] = {
    { "IfElse", "then side", build_ifelse, NULL, 2, { M34(0.2, 1.0), M34(-1, 1) }, GG },
    { "IfElse", "else side", build_ifelse, NULL, 2, { M34(-1.0, -0.2), M34(-1, 1) }, GG },
    { "IfElse", "nested, then then", build_ifelse_nested, NULL, 2, { V4(0.2, 1.0), V4(0.2, 1.0) }, GG },
    { "IfElse", "nested, then else", build_ifelse_nested, NULL, 2, { V4(0.2, 1.0), V4(-1.0, -0.2) }, GG },
    { "IfElse", "nested, else", build_ifelse_nested, NULL, 2, { V4(-1.0, -0.2), V4(-1, 1) }, GG },
    GTD_END
};

GT_CASES(IfElse) = {
    GT_VALUES(test_ifelse_values),
    GT_VALUES(test_ifelse_lazy_if),
    GT_VALUES(test_ifelse_not_inplace),
    GT_VALUES(test_ifelse_multiple_out),
    GT_SPECS(specs_IfElse),
    GT_DERIVS(test_ifelse_grad_lazy_if),
    GT_DERIVS(test_ifelse_grad_cast_input),
    GT_DERIVS(test_ifelse_grad_int_value),
    GT_DERIVS(test_ifelse_grad_sqrt_at_zero),
    GT_DERIVS(test_ifelse_rop_adjoint),
    GT_DERIVS(test_ifelse_jacobian_hessian),
    GT_DERIVS(test_ifelse_lazy_counts),
    GT_DERIVS(test_ifelse_index_out_of_range),
    GT_DERIVS(test_ifelse_nested),
    GT_DERIVS(test_ifelse_in_scan),
    GT_DERIVS(test_ifelse_rewrites),
    GT_DERIVS(test_ifelse_fusion_sides),
    GT_ERRORS(test_ifelse_errors),
    GT_END
};
