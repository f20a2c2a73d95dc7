/* tests/t_alias.c: updates (gr_set_subtensor / gr_inc_subtensor) whose other operands share the
   memory of the base they update (issue 14, item 1). The memory plan lets an update write in place
   over its base when the base dies there; it must not when the value written (or a take's indices)
   is the base itself, reaches the node as the base through something compilation removes
   (gr_zero_grad, the transpose of a 1-d value, a reshape to the same shape), or is a view of it.
   Every view kind (slice along either axis, index, take), set and inc, each route, at GR_OPT_FULL
   and GR_OPT_NONE: the value against a plain-C reference with copy semantics, the gradient of a
   cost through it, its R-op and two Hessian-vector products (R-op of the gradient, gradient of the
   gradient's projection) against central differences of the plain-C reference. */
#include "harness.h"
#include <stdint.h>

/* the view the update writes, on y = x*x - 3x */
enum {
    GA_SLICE_COLS,      /* y[:, ::-1] = value, y (2, 3) */
    GA_SLICE_ROWS,      /* y[::-1, :] = value, y (2, 3) */
    GA_TAKE,            /* y[:, [2, 0, 1]] = value, y (2, 3) */
    GA_INDEX,           /* y[1] = flat(value)[1:4], y (2, 3): reads y's element 3 after writing it */
    GA_SLICE_1D,        /* y[::-1] = value, y (5,) */
    GA_TAKE_1D,         /* y[[3, 4, 0, 2, 1]] = value, y (5,) */
    GA_SHIFT_1D,        /* y[2:5] = value[0:3], y (5,): a contiguous view written over what it reads */
    GA_N_KINDS
};
/* how the value reaches the update */
enum { GA_DIRECT, GA_ZERO_GRAD, GA_TRANSPOSE, GA_RESHAPE, GA_N_ROUTES };

static const char *const ga_kind_name[GA_N_KINDS] = { "slice cols", "slice rows", "take", "index", "slice 1-d", "take 1-d", "shift 1-d" };
static const char *const ga_route_name[GA_N_ROUTES] = { "direct", "zero_grad", "transpose", "reshape" };

static int ga_is_1d(int kind) { return kind >= GA_SLICE_1D; }
static int64_t ga_size(int kind) { return ga_is_1d(kind) ? 5 : 6; }

/* the view's elements, in row-major order: vmap[k] is the base element written, vsrc[k] the base
   element of the value read there; returns their count */
static int ga_maps(int kind, int64_t *vmap, int64_t *vsrc) {
    static const int64_t perm3[3] = { 2, 0, 1 }, perm5[5] = { 3, 4, 0, 2, 1 };
    int k, i, j;
    switch (kind) {
    case GA_SLICE_COLS:
        for (i = 0; i < 2; i++) for (j = 0; j < 3; j++) { vmap[i * 3 + j] = i * 3 + (2 - j); vsrc[i * 3 + j] = i * 3 + j; }
        return 6;
    case GA_SLICE_ROWS:
        for (i = 0; i < 2; i++) for (j = 0; j < 3; j++) { vmap[i * 3 + j] = (1 - i) * 3 + j; vsrc[i * 3 + j] = i * 3 + j; }
        return 6;
    case GA_TAKE:
        for (i = 0; i < 2; i++) for (j = 0; j < 3; j++) { vmap[i * 3 + j] = i * 3 + perm3[j]; vsrc[i * 3 + j] = i * 3 + j; }
        return 6;
    case GA_INDEX:
        for (k = 0; k < 3; k++) { vmap[k] = 3 + k; vsrc[k] = 1 + k; }
        return 3;
    case GA_SLICE_1D:
        for (k = 0; k < 5; k++) { vmap[k] = 4 - k; vsrc[k] = k; }
        return 5;
    case GA_TAKE_1D:
        for (k = 0; k < 5; k++) { vmap[k] = perm5[k]; vsrc[k] = k; }
        return 5;
    default:
        for (k = 0; k < 3; k++) { vmap[k] = 2 + k; vsrc[k] = k; }
        return 3;
    }
}

static double ga_y(double x) { return x * x - 3 * x; }

/* the plain-C update: the base is y(xa), the value read from y(xb) (xb = xa unless the value is
   behind gr_zero_grad); copy semantics: every value read before anything is written */
static void ga_forward(int kind, int inc, const double *xa, const double *xb, double *out) {
    int64_t vmap[8], vsrc[8], n = ga_size(kind), i;
    int nv = ga_maps(kind, vmap, vsrc), k;
    double yb[8];
    for (i = 0; i < n; i++) { out[i] = ga_y(xa[i]); yb[i] = ga_y(xb[i]); }
    for (k = 0; k < nv; k++) out[vmap[k]] = inc ? out[vmap[k]] + yb[vsrc[k]] : yb[vsrc[k]];
}

static const double ga_w[6] = { 0.7, -1.3, 0.4, 1.1, -0.6, 0.9 };

/* the cost sum_i w_i sin(out_i) */
static double ga_cost(int kind, int inc, const double *xa, const double *xb) {
    double out[8], c = 0;
    int64_t i;
    ga_forward(kind, inc, xa, xb, out);
    for (i = 0; i < ga_size(kind); i++) c += ga_w[i] * sin(out[i]);
    return c;
}

/* the cost at x + s d + t e, the value frozen at x when `frozen` (gr_zero_grad: no derivative
   flows through it, neither back nor forward) */
static double ga_cost_at(int kind, int inc, int frozen, const double *x, const double *d, double s, const double *e, double t) {
    double xa[8], xb[8];
    int64_t i;
    for (i = 0; i < ga_size(kind); i++) {
        xa[i] = x[i] + s * d[i] + t * e[i];
        xb[i] = frozen ? x[i] : xa[i];
    }
    return ga_cost(kind, inc, xa, xb);
}

/* the graph of the update on y = x*x - 3x, the value reaching it by `route` */
static gr_var *ga_build(gr_graph *g, gr_var *x, int kind, int route, int inc) {
    gr_var *y = gr_sub(gr_mul(x, x), gr_mul(gr_const(g, 3.0), x)), *src = y, *view, *value;
    int64_t shape[2], flat = 6;
    shape[0] = ga_is_1d(kind) ? 5 : 2;
    shape[1] = 3;
    if (route == GA_ZERO_GRAD) src = gr_zero_grad(y);
    else if (route == GA_TRANSPOSE) src = gr_transpose(y);          /* 1-d kinds only: y itself */
    else if (route == GA_RESHAPE) src = gr_reshape(y, ga_is_1d(kind) ? 1 : 2, shape);
    value = src;
    switch (kind) {
    case GA_SLICE_COLS: view = gr_slice(y, 1, GR_OPEN, GR_OPEN, -1); break;
    case GA_SLICE_ROWS: view = gr_slice(y, 0, GR_OPEN, GR_OPEN, -1); break;
    case GA_TAKE: case GA_TAKE_1D: {
        static const int64_t perm3[3] = { 2, 0, 1 }, perm5[5] = { 3, 4, 0, 2, 1 };
        int64_t n = kind == GA_TAKE ? 3 : 5;
        gr_array *ia = gr_array_from(GR_I64, 1, &n, kind == GA_TAKE ? perm3 : perm5);
        view = gr_take(y, gr_constant(g, ia), kind == GA_TAKE ? 1 : 0);
        gr_array_free(ia);
        break;
    }
    case GA_INDEX:
        view = gr_index(y, 0, 1);
        value = gr_slice(gr_reshape(src, 1, &flat), 0, 1, 4, 1);
        break;
    case GA_SLICE_1D: view = gr_slice(y, 0, GR_OPEN, GR_OPEN, -1); break;
    default:
        view = gr_slice(y, 0, 2, 5, 1);
        value = gr_slice(src, 0, 0, 3, 1);
        break;
    }
    return inc ? gr_inc_subtensor(view, value) : gr_set_subtensor(view, value);
}

/* compiles outs[0..n) of (x, v) (of x alone when v is NULL) at `level`, calls it at (xa, va) and
   copies the results into res */
static int ga_run(gr_var *x, gr_var *v, int n, gr_var *const *outs, gr_optimize level, const gr_array *xa, const gr_array *va,
                  gr_array **res) {
    gr_var *ins[2];
    const gr_array *in[2], *o[4];
    gr_fn_opts opts;
    gr_fn *f;
    int i, ok;
    memset(&opts, 0, sizeof opts);
    opts.optimize = level;
    ins[0] = x; ins[1] = v;
    in[0] = xa; in[1] = va;
    for (i = 0; i < n; i++) res[i] = NULL;
    f = gr_function(v ? 2 : 1, ins, n, outs, &opts);
    if (!f) { fprintf(stderr, "  ga_run: gr_function: %s\n", gr_graph_message(gr_var_graph(x))); return 0; }
    ok = gr_call(f, in, o) == GR_OK;
    if (!ok) fprintf(stderr, "  ga_run: gr_call: %s\n", gr_fn_message(f));
    for (i = 0; ok && i < n; i++) res[i] = gr_array_copy(o[i]);
    gr_fn_free(f);
    return ok;
}

/* got (size n) against want within tol * max(1, |want|) */
static void ga_check(const gr_array *got, int64_t n, const double *want, double tol, const char *what, int kind, int route, int inc,
                     int level) {
    int64_t i;
    CHECK_MSG(got && got->size == n, "%s of %s, %s, %s, level %d: missing or of size %lld", what, ga_kind_name[kind],
              ga_route_name[route], inc ? "inc" : "set", level, got ? (long long)got->size : -1LL);
    if (!got || got->size != n) return;
    for (i = 0; i < n; i++) {
        double a = gr_array_get(got, i);
        CHECK_MSG(fabs(a - want[i]) <= tol * (fabs(want[i]) > 1 ? fabs(want[i]) : 1.0),
                  "%s of %s, %s, %s, level %d: element %lld is %.17g, want %.17g", what, ga_kind_name[kind], ga_route_name[route],
                  inc ? "inc" : "set", level, (long long)i, a, want[i]);
    }
}

/* one kind, route, set/inc and level: value, gradient, R-op and both HVPs, each compiled on its
   own (so that the update's base dies at the update, as it does when the value alone is asked) */
static void ga_case(int kind, int route, int inc, gr_optimize level) {
    static const double xs[6] = { 0.3, -1.2, 2.1, 0.8, -0.45, 1.6 }, vs[6] = { 0.5, -0.25, 1.5, -1.0, 0.75, 0.2 };
    const double zero[8] = { 0 };
    int64_t n = ga_size(kind), shape[2], i;
    int frozen = route == GA_ZERO_GRAD, nd = ga_is_1d(kind) ? 1 : 2;
    gr_graph *g = gr_graph_new();
    gr_var *x, *v, *r, *c, *gx, *outs[4];
    gr_array *xa, *va, *res[4] = { NULL, NULL, NULL, NULL };
    double want[8], e[8], h = 1e-6, h2 = 1e-4;
    gr_array *wa;
    shape[0] = ga_is_1d(kind) ? 5 : 2;
    shape[1] = 3;
    x = nd == 1 ? gr_vector(g, GR_F64, "x") : gr_matrix(g, GR_F64, "x");
    v = nd == 1 ? gr_vector(g, GR_F64, "v") : gr_matrix(g, GR_F64, "v");
    xa = gr_array_from(GR_F64, nd, shape, xs);
    va = gr_array_from(GR_F64, nd, shape, vs);
    wa = gr_array_from(GR_F64, nd, shape, ga_w);
    r = ga_build(g, x, kind, route, inc);
    c = gr_sum(gr_mul(gr_constant(g, wa), gr_sin(r)));
    gr_array_free(wa);
    gx = gr_grad1(c, x);
    CHECK(r && c && gx);
    if (!r || !c || !gx) { gr_graph_free(g); gr_array_free(xa); gr_array_free(va); return; }
    /* the value */
    ga_forward(kind, inc, xs, xs, want);
    outs[0] = r;
    CHECK(ga_run(x, v, 1, outs, level, xa, va, res));
    ga_check(res[0], n, want, 1e-14, "value", kind, route, inc, (int)level);
    gr_array_free(res[0]);
    /* the gradient of the cost */
    for (i = 0; i < n; i++) {
        double d[8] = { 0 };
        d[i] = 1;
        want[i] = (ga_cost_at(kind, inc, frozen, xs, d, h, zero, 0) - ga_cost_at(kind, inc, frozen, xs, d, -h, zero, 0)) / (2 * h);
    }
    outs[0] = gx;
    CHECK(ga_run(x, v, 1, outs, level, xa, va, res));
    ga_check(res[0], n, want, 1e-7, "gradient", kind, route, inc, (int)level);
    gr_array_free(res[0]);
    /* the R-op of the update along v */
    {
        gr_var *rr = NULL;
        double xp[8], xm[8], xpb[8], xmb[8], op[8], om[8];
        CHECK_STATUS(gr_rop(1, &r, 1, &x, &v, &rr, NULL), GR_OK);
        for (i = 0; i < n; i++) {
            xp[i] = xs[i] + h * vs[i]; xm[i] = xs[i] - h * vs[i];
            xpb[i] = frozen ? xs[i] : xp[i]; xmb[i] = frozen ? xs[i] : xm[i];
        }
        ga_forward(kind, inc, xp, xpb, op);
        ga_forward(kind, inc, xm, xmb, om);
        for (i = 0; i < n; i++) want[i] = (op[i] - om[i]) / (2 * h);
        outs[0] = rr;
        if (rr) {
            CHECK(ga_run(x, v, 1, outs, level, xa, va, res));
            ga_check(res[0], n, want, 1e-7, "R-op", kind, route, inc, (int)level);
            gr_array_free(res[0]);
        }
    }
    /* Hessian-vector products: the R-op of the gradient, and the gradient of <gradient, v> */
    {
        gr_var *h1 = NULL, *hv2 = gr_grad1(gr_sum(gr_mul(gx, v)), x);
        CHECK_STATUS(gr_rop(1, &gx, 1, &x, &v, &h1, NULL), GR_OK);
        for (i = 0; i < n; i++) {
            int64_t j;
            for (j = 0; j < n; j++) e[j] = j == i;
            want[i] = (ga_cost_at(kind, inc, frozen, xs, e, h2, vs, h2) - ga_cost_at(kind, inc, frozen, xs, e, h2, vs, -h2) -
                       ga_cost_at(kind, inc, frozen, xs, e, -h2, vs, h2) + ga_cost_at(kind, inc, frozen, xs, e, -h2, vs, -h2)) /
                      (4 * h2 * h2);
        }
        CHECK(h1 && hv2);
        if (h1 && hv2) {
            outs[0] = h1;
            CHECK(ga_run(x, v, 1, outs, level, xa, va, res));
            ga_check(res[0], n, want, 2e-5, "HVP (R-op of the gradient)", kind, route, inc, (int)level);
            gr_array_free(res[0]);
            outs[0] = hv2;
            CHECK(ga_run(x, v, 1, outs, level, xa, va, res));
            ga_check(res[0], n, want, 2e-5, "HVP (gradient of the gradient)", kind, route, inc, (int)level);
            gr_array_free(res[0]);
        }
    }
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    gr_graph_free(g);
    gr_array_free(xa);
    gr_array_free(va);
}

/* the issue's example: x = [[1, 2, 3], [4, 5, 6]], y = -x, y[:, ::-1] = y is -3 -2 -1 -6 -5 -4
   (and y[:, ::-1] += y is -4 -4 -4 -10 -10 -10), at both levels */
TEST(test_alias_issue_example) {
    static const double xs[6] = { 1, 2, 3, 4, 5, 6 };
    static const double want_set[6] = { -3, -2, -1, -6, -5, -4 }, want_inc[6] = { -4, -4, -4, -10, -10, -10 };
    int64_t shape[2] = { 2, 3 };
    gr_array *xa = gr_array_from(GR_F64, 2, shape, xs);
    int inc, level;
    for (inc = 0; inc < 2; inc++)
        for (level = 0; level < 2; level++) {
            gr_graph *g = gr_graph_new();
            gr_var *x = gr_matrix(g, GR_F64, "x"), *y = gr_neg(x);
            gr_var *r = inc ? gr_inc_subtensor(gr_slice(y, 1, GR_OPEN, GR_OPEN, -1), y) : gr_set_subtensor(gr_slice(y, 1, GR_OPEN, GR_OPEN, -1), y);
            gr_array *res[1];
            CHECK(ga_run(x, NULL, 1, &r, (gr_optimize)level, xa, xa, res));
            ga_check(res[0], 6, inc ? want_inc : want_set, 0, "value", GA_SLICE_COLS, GA_DIRECT, inc, level);
            gr_array_free(res[0]);
            gr_graph_free(g);
        }
    gr_array_free(xa);
}

/* every kind, route, set and inc, at both levels (the transpose route only where it keeps the
   shape: the 1-d kinds) */
TEST(test_alias_update_reads_its_base) {
    int kind, route, inc, level;
    for (kind = 0; kind < GA_N_KINDS; kind++)
        for (route = 0; route < GA_N_ROUTES; route++) {
            if (route == GA_TRANSPOSE && !ga_is_1d(kind)) continue;
            for (inc = 0; inc < 2; inc++)
                for (level = 0; level < 2; level++) ga_case(kind, route, inc, (gr_optimize)level);
        }
}

/* a take update whose indices are the base itself (int64): b[b] = c reads the indices while it
   writes b; with b = |x| = [2, 0, 1] and c = [10, 20, 30], b[2] = 10, b[0] = 20, b[1] = 30 */
TEST(test_alias_take_update_indices_are_the_base) {
    static const int64_t xs[3] = { -2, 0, 1 };
    static const double cs[3] = { 10, 20, 30 };
    int64_t n = 3;
    gr_array *xa = gr_array_from(GR_I64, 1, &n, xs);
    int inc, level;
    for (inc = 0; inc < 2; inc++)
        for (level = 0; level < 2; level++) {
            gr_graph *g = gr_graph_new();
            gr_var *x = gr_vector(g, GR_I64, "x"), *b = gr_abs(x), *c, *r;
            gr_array *ca = gr_array_new(GR_I64, 1, &n), *res[1];
            double want[3];
            int64_t k;
            for (k = 0; k < 3; k++) gr_array_set(ca, k, cs[k]);
            c = gr_constant(g, ca);
            r = inc ? gr_inc_subtensor(gr_take(b, b, 0), c) : gr_set_subtensor(gr_take(b, b, 0), c);
            for (k = 0; k < 3; k++) want[k] = (double)(xs[k] < 0 ? -xs[k] : xs[k]);
            for (k = 0; k < 3; k++) {
                int64_t pos = xs[k] < 0 ? -xs[k] : xs[k];        /* the original indices */
                want[pos] = inc ? want[pos] + cs[k] : cs[k];
            }
            CHECK(ga_run(x, NULL, 1, &r, (gr_optimize)level, xa, xa, res));
            ga_check(res[0], 3, want, 0, "value", GA_TAKE_1D, GA_DIRECT, inc, level);
            gr_array_free(res[0]);
            gr_array_free(ca);
            gr_graph_free(g);
        }
    gr_array_free(xa);
}

/* an elementwise op still writes in place over an operand read twice (add(y, y) reads and writes
   each element at one position), and the result is right */
TEST(test_alias_elementwise_same_operand) {
    static const double xs[4] = { 0.5, -1, 2, 3 };
    int64_t n = 4, k;
    gr_array *xa = gr_array_from(GR_F64, 1, &n, xs);
    int level;
    for (level = 0; level < 2; level++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_exp(x), *z = gr_mul(y, y), *r = gr_add(z, z);
        gr_array *res[1];
        double want[4];
        for (k = 0; k < 4; k++) want[k] = 2 * exp(xs[k]) * exp(xs[k]);
        CHECK(ga_run(x, NULL, 1, &r, (gr_optimize)level, xa, xa, res));
        ga_check(res[0], 4, want, 1e-15, "value", 0, 0, 0, level);
        gr_array_free(res[0]);
        gr_graph_free(g);
    }
    gr_array_free(xa);
}

SUITE(suite_alias) = {
    CASE(test_alias_issue_example),
    CASE(test_alias_update_reads_its_base),
    CASE(test_alias_take_update_indices_are_the_base),
    CASE(test_alias_elementwise_same_operand),
    END_SUITE
};
