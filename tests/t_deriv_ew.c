/* tests/t_deriv_ew.c: derivative specs (tests/deriv.h) for every row of GR_ELEMWISE_OPS.

   The builders are expanded from the table itself (one per row, by arity), so a new row only needs
   its specs here: its domain is the one thing the table cannot say. Every differentiable row is
   checked with GTD_GRADGRAD, in several shapes:
     unary    (3,4), (2,3,2) and 0-d;
     binary   (3,4)+(3,4), (3,4)+(4,), (4,)+(3,4), (3,1)+(1,4), (3,4)+0-d and 0-d+0-d, and again
              with the operands swapped in the builder so that the gradient of the gradient is
              also taken with respect to the second operand (input 0 of a spec is the one
              GTD_GRADGRAD differentiates twice);
     ternary  (3,4)x3, (3,4)+(4,)+(3,1), (3,1)+(1,4)+0-d, (4,)+(3,4)+(3,1), 0-d x3, and rotated
              builders for the gradient of the gradient with respect to inputs 1 and 2.
   Domains keep away from kinks, branch cuts and singularities (the finite differences step by
   1e-7 in float64 and 3e-4 in float32; central R-op differences by 1e-6 and 3e-3). Piecewise
   rows get one spec per piece. STEP rows (sign, floor, ceil, round) and CMP / LOGIC rows are
   GTD_NONDIFF: t_deriv.c then checks that the gradients agree with (zero) finite differences, that
   the R-op is exactly zero and that the adjoint identity holds; their builders return the raw
   result (BOOL for comparisons). The gradient of the gradient is not asked of them: their
   gradient is identically zero.
   Points a random domain never hits get tests of their own (suite_deriv_ew_points): pow at x = 0. */
#include "deriv.h"

#if defined(__GNUC__) || defined(__clang__)
#define GTE_UNUSED __attribute__((unused))
#else
#define GTE_UNUSED
#endif

/* ---- builders, from the table ------------------------------------------------------------------
   gte_<name>:     f(x0), f(x0, x1) or f(x0, x1, x2)
   gte_<name>_r:   binary rows with the operands swapped, f(x1, x0)
   gte_<name>_r1:  ternary rows with input 0 in position 1, f(x1, x0, x2)
   gte_<name>_r2:  ternary rows with input 0 in position 2, f(x1, x2, x0)                        */
#define GTE_B_1(name) \
    static GTE_UNUSED gr_var *gte_##name(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_##name(x[0]); }
#define GTE_B_2(name) \
    static GTE_UNUSED gr_var *gte_##name(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_##name(x[0], x[1]); } \
    static GTE_UNUSED gr_var *gte_##name##_r(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_##name(x[1], x[0]); }
#define GTE_B_3(name) \
    static GTE_UNUSED gr_var *gte_##name(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_##name(x[0], x[1], x[2]); } \
    static GTE_UNUSED gr_var *gte_##name##_r1(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_##name(x[1], x[0], x[2]); } \
    static GTE_UNUSED gr_var *gte_##name##_r2(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_##name(x[1], x[2], x[0]); }
#define GTE_B(name, arity, cls, fexpr, iexpr, d0, d1, d2) GTE_B_##arity(name)
GR_ELEMWISE_OPS(GTE_B)
#undef GTE_B

/* ---- builders with structure the table cannot give --------------------------------------------- */

/* where with the condition computed inside: x0 > 0 picks x1, else x2 (x0 is never near 0 within
   a finite-difference step, the chance being ~1e-4 per element) */
static gr_var *gte_where_gt(gr_graph *g, gr_var *const *x, void *u) { (void)u; return gr_where(gr_gt(x[0], gr_const(g, 0.0)), x[1], x[2]); }
static gr_var *gte_where_gt_r1(gr_graph *g, gr_var *const *x, void *u) { (void)u; return gr_where(gr_gt(x[1], gr_const(g, 0.0)), x[0], x[2]); }
static gr_var *gte_where_gt_r2(gr_graph *g, gr_var *const *x, void *u) { (void)u; return gr_where(gr_gt(x[1], gr_const(g, 0.0)), x[2], x[0]); }
/* where with a float condition that is exactly zero in places: floor(x0) for x0 in (-0.9, 1.9) */
static gr_var *gte_where_floor(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_where(gr_floor(x[0]), x[1], x[2]); }

/* comparisons of floors, so that ties (equal operands) occur */
#define GTE_FLOORS(name) \
    static gr_var *gte_##name##_floors(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_##name(gr_floor(x[0]), gr_floor(x[1])); }
GTE_FLOORS(gt) GTE_FLOORS(lt) GTE_FLOORS(ge) GTE_FLOORS(le) GTE_FLOORS(eq) GTE_FLOORS(neq)
#undef GTE_FLOORS
/* logic of comparisons (BOOL operands), rather than of floats cast to BOOL */
static gr_var *gte_logical_and_cmp(gr_graph *g, gr_var *const *x, void *u) { (void)u; return gr_logical_and(gr_gt(x[0], gr_const(g, 0.0)), gr_lt(x[1], gr_const(g, 0.0))); }
static gr_var *gte_logical_or_cmp(gr_graph *g, gr_var *const *x, void *u) { (void)u; return gr_logical_or(gr_gt(x[0], gr_const(g, 0.0)), gr_lt(x[1], gr_const(g, 0.0))); }
static gr_var *gte_logical_not_cmp(gr_graph *g, gr_var *const *x, void *u) { (void)u; return gr_logical_not(gr_gt(x[0], gr_const(g, 0.0))); }

/* ---- shapes ------------------------------------------------------------------------------------ */

#define M34(lo, hi) GTD_IN(2, 3, 4, lo, hi)
#define V4(lo, hi)  GTD_IN(1, 4, 0, lo, hi)
#define C31(lo, hi) GTD_IN(2, 3, 1, lo, hi)
#define R14(lo, hi) GTD_IN(2, 1, 4, lo, hi)
#define S0(lo, hi)  GTD_IN(0, 0, 0, lo, hi)
#define T232(lo, hi) GTD_IN3(2, 3, 2, lo, hi)

#define GG GTD_GRADGRAD
#define ND GTD_NONDIFF

/* a unary row on one domain: (3,4), (2,3,2), 0-d */
#define GTE_U(name, what, lo, hi, fl) \
    { #name, what " (3,4)", gte_##name, NULL, 1, { M34(lo, hi) }, fl }, \
    { #name, what " (2,3,2)", gte_##name, NULL, 1, { T232(lo, hi) }, fl }, \
    { #name, what " 0-d", gte_##name, NULL, 1, { S0(lo, hi) }, fl }

/* a binary row, x0 in [a, b), x1 in [c, d): every broadcasting pattern, and swapped */
#define GTE_BIN(name, what, a, b, c, d, fl) \
    { #name, what " (3,4) (3,4)", gte_##name, NULL, 2, { M34(a, b), M34(c, d) }, fl }, \
    { #name, what " (3,4) (4,)", gte_##name, NULL, 2, { M34(a, b), V4(c, d) }, fl }, \
    { #name, what " (4,) (3,4)", gte_##name, NULL, 2, { V4(a, b), M34(c, d) }, fl }, \
    { #name, what " (3,1) (1,4)", gte_##name, NULL, 2, { C31(a, b), R14(c, d) }, fl }, \
    { #name, what " (3,4) 0-d", gte_##name, NULL, 2, { M34(a, b), S0(c, d) }, fl }, \
    { #name, what " 0-d 0-d", gte_##name, NULL, 2, { S0(a, b), S0(c, d) }, fl }, \
    { #name, what " swapped (3,4) (3,4)", gte_##name##_r, NULL, 2, { M34(c, d), M34(a, b) }, fl }, \
    { #name, what " swapped (4,) (3,4)", gte_##name##_r, NULL, 2, { V4(c, d), M34(a, b) }, fl }, \
    { #name, what " swapped (1,4) (3,1)", gte_##name##_r, NULL, 2, { R14(c, d), C31(a, b) }, fl }, \
    { #name, what " swapped 0-d (3,4)", gte_##name##_r, NULL, 2, { S0(c, d), M34(a, b) }, fl }

/* a ternary builder b, inputs in [a0, b0), [a1, b1), [a2, b2): broadcasting patterns and rotations */
#define GTE_TER(name, b, what, a0, b0, a1, b1, a2, b2, fl) \
    { #name, what " (3,4) (3,4) (3,4)", b, NULL, 3, { M34(a0, b0), M34(a1, b1), M34(a2, b2) }, fl }, \
    { #name, what " (3,4) (4,) (3,1)", b, NULL, 3, { M34(a0, b0), V4(a1, b1), C31(a2, b2) }, fl }, \
    { #name, what " (3,1) (1,4) 0-d", b, NULL, 3, { C31(a0, b0), R14(a1, b1), S0(a2, b2) }, fl }, \
    { #name, what " (4,) (3,4) (3,1)", b, NULL, 3, { V4(a0, b0), M34(a1, b1), C31(a2, b2) }, fl }, \
    { #name, what " 0-d 0-d 0-d", b, NULL, 3, { S0(a0, b0), S0(a1, b1), S0(a2, b2) }, fl }, \
    { #name, what " rotated: input 1 first, (3,4) (4,) (3,1)", b##_r1, NULL, 3, { V4(a1, b1), M34(a0, b0), C31(a2, b2) }, fl }, \
    { #name, what " rotated: input 1 first, (1,4) (3,1) 0-d", b##_r1, NULL, 3, { R14(a1, b1), C31(a0, b0), S0(a2, b2) }, fl }, \
    { #name, what " rotated: input 2 first, (3,1) (3,4) (4,)", b##_r2, NULL, 3, { C31(a2, b2), M34(a0, b0), V4(a1, b1) }, fl }, \
    { #name, what " rotated: input 2 first, 0-d (3,1) (1,4)", b##_r2, NULL, 3, { S0(a2, b2), C31(a0, b0), R14(a1, b1) }, fl }

GTD_SPECS(gtd_specs_elemwise) = {
    /* arithmetic */
    GTE_U(neg, "", -2, 2, GG),
    GTE_U(abs, "x > 0", 0.3, 2, GG),
    GTE_U(abs, "x < 0", -2, -0.3, GG),
    GTE_U(sqr, "", -2, 2, GG),
    GTE_U(sign, "x > 0", 0.2, 2, ND),
    GTE_U(sign, "x < 0", -2, -0.2, ND),
    GTE_U(floor, "in (0.1, 0.9)", 0.1, 0.9, ND),
    GTE_U(floor, "in (-2.9, -2.1)", -2.9, -2.1, ND),
    GTE_U(ceil, "in (0.1, 0.9)", 0.1, 0.9, ND),
    GTE_U(ceil, "in (-2.9, -2.1)", -2.9, -2.1, ND),
    GTE_U(round, "in (0.6, 1.4)", 0.6, 1.4, ND),
    GTE_U(round, "in (-0.4, 0.4)", -0.4, 0.4, ND),
    GTE_BIN(add, "", -2, 2, -2, 2, GG),
    GTE_BIN(sub, "", -2, 2, -2, 2, GG),
    GTE_BIN(mul, "", -2, 2, -2, 2, GG),
    GTE_BIN(div, "b > 0", -2, 2, 0.5, 2, GG),
    GTE_BIN(div, "b < 0", -2, 2, -2, -0.5, GG),
    GTE_BIN(pow, "base in (0.5, 2)", 0.5, 2, -2, 2, GG),
    /* a / b stays inside (1.09, 1.9), (-1.9, -1.09): away from the jumps at integers */
    GTE_BIN(mod, "a/b in (1, 2)", 2.4, 3.8, 2, 2.2, GG),
    GTE_BIN(mod, "a/b in (-2, -1), a < 0", -3.8, -2.4, 2, 2.2, GG),
    GTE_BIN(mod, "a/b in (-2, -1), b < 0", 2.4, 3.8, -2.2, -2, GG),
    /* disjoint ranges: no ties, one operand always wins */
    GTE_BIN(maximum, "a wins", 1, 2, -1, 0.5, GG),
    GTE_BIN(maximum, "b wins", -1, 0.5, 1, 2, GG),
    GTE_BIN(minimum, "a wins", -1, 0.5, 1, 2, GG),
    GTE_BIN(minimum, "b wins", 1, 2, -1, 0.5, GG),
    /* clip(x, lo, hi): x inside, below and above, each piece away from its kinks */
    GTE_TER(clip, gte_clip, "inside", -1, 1, -3, -2, 2, 3, GG),
    GTE_TER(clip, gte_clip, "below lo", -1, 1, 1.5, 2, 2.5, 3, GG),
    GTE_TER(clip, gte_clip, "above hi", -1, 1, -3, -2.5, -2, -1.5, GG),
    /* where: a float condition (nonzero is true; these never are zero), a condition x0 > 0 built
       in the builder, and floor(x0), which is exactly zero in places */
    GTE_TER(where, gte_where, "float cond > 0", 0.5, 2, -2, 2, -2, 2, GG),
    GTE_TER(where, gte_where, "float cond < 0", -2, -0.5, -2, 2, -2, 2, GG),
    GTE_TER(where, gte_where_gt, "cond x0 > 0", -1, 1, -2, 2, -2, 2, GG),
    { "where", "cond floor(x0) (3,4) (3,4) (3,4)", gte_where_floor, NULL, 3, { M34(-0.9, 1.9), M34(-2, 2), M34(-2, 2) }, GG },
    { "where", "cond floor(x0) (3,1) (4,) 0-d", gte_where_floor, NULL, 3, { C31(-0.9, 1.9), V4(-2, 2), S0(-2, 2) }, GG },
    /* exponentials and logarithms */
    GTE_U(exp, "", -2, 2, GG),
    GTE_U(exp2, "", -2, 2, GG),
    GTE_U(expm1, "", -2, 2, GG),
    GTE_U(log, "x > 0.2", 0.2, 3, GG),
    GTE_U(log2, "x > 0.2", 0.2, 3, GG),
    GTE_U(log1p, "x > -0.8", -0.8, 2, GG),
    GTE_U(sqrt, "x > 0.2", 0.2, 3, GG),
    GTE_U(reciprocal, "x > 0", 0.3, 2, GG),
    GTE_U(reciprocal, "x < 0", -2, -0.3, GG),
    /* trigonometric and hyperbolic */
    GTE_U(sin, "", -3, 3, GG),
    GTE_U(cos, "", -3, 3, GG),
    GTE_U(tan, "|x| < 1.2", -1.2, 1.2, GG),
    GTE_U(arcsin, "|x| < 0.8", -0.8, 0.8, GG),
    GTE_U(arccos, "|x| < 0.8", -0.8, 0.8, GG),
    GTE_U(arctan, "", -3, 3, GG),
    GTE_BIN(arctan2, "b > 0", -2, 2, 0.3, 2, GG),       /* the right half plane: no branch cut */
    GTE_BIN(arctan2, "a > 0", 0.3, 2, -2, 2, GG),       /* the upper half plane */
    GTE_U(sinh, "", -2, 2, GG),
    GTE_U(cosh, "", -2, 2, GG),
    GTE_U(tanh, "", -2, 2, GG),
    GTE_U(arcsinh, "", -3, 3, GG),
    GTE_U(arccosh, "x > 1.2", 1.2, 3, GG),
    GTE_U(arctanh, "|x| < 0.8", -0.8, 0.8, GG),
    /* special functions and activations */
    GTE_U(erf, "", -2, 2, GG),
    GTE_U(erfc, "", -2, 2, GG),
    GTE_U(sigmoid, "", -4, 4, GG),
    GTE_U(softplus, "", -4, 4, GG),
    GTE_U(relu, "x > 0", 0.2, 2, GG),
    GTE_U(relu, "x < 0", -2, -0.2, GG),
    /* comparisons and logic: BOOL results */
    GTE_BIN(gt, "", -2, 2, -2, 2, ND),
    GTE_BIN(lt, "", -2, 2, -2, 2, ND),
    GTE_BIN(ge, "", -2, 2, -2, 2, ND),
    GTE_BIN(le, "", -2, 2, -2, 2, ND),
    GTE_BIN(eq, "", -2, 2, -2, 2, ND),
    GTE_BIN(neq, "", -2, 2, -2, 2, ND),
    { "gt", "of floors (ties) (3,4) (4,)", gte_gt_floors, NULL, 2, { M34(-0.9, 1.9), V4(-0.9, 1.9) }, ND },
    { "lt", "of floors (ties) (3,4) (4,)", gte_lt_floors, NULL, 2, { M34(-0.9, 1.9), V4(-0.9, 1.9) }, ND },
    { "ge", "of floors (ties) (3,4) (4,)", gte_ge_floors, NULL, 2, { M34(-0.9, 1.9), V4(-0.9, 1.9) }, ND },
    { "le", "of floors (ties) (3,4) (4,)", gte_le_floors, NULL, 2, { M34(-0.9, 1.9), V4(-0.9, 1.9) }, ND },
    { "eq", "of floors (ties) (3,4) (4,)", gte_eq_floors, NULL, 2, { M34(-0.9, 1.9), V4(-0.9, 1.9) }, ND },
    { "neq", "of floors (ties) (3,1) (1,4)", gte_neq_floors, NULL, 2, { C31(-0.9, 1.9), R14(-0.9, 1.9) }, ND },
    GTE_BIN(logical_and, "of floats", -2, 2, -2, 2, ND),
    GTE_BIN(logical_or, "of floats", -2, 2, -2, 2, ND),
    GTE_U(logical_not, "of floats", -2, 2, ND),
    { "logical_and", "of comparisons (3,4) (4,)", gte_logical_and_cmp, NULL, 2, { M34(-1, 1), V4(-1, 1) }, ND },
    { "logical_or", "of comparisons (3,1) (1,4)", gte_logical_or_cmp, NULL, 2, { C31(-1, 1), R14(-1, 1) }, ND },
    { "logical_not", "of comparisons (3,4)", gte_logical_not_cmp, NULL, 1, { M34(-1, 1) }, ND },
    GTD_END
};

/* ---- exact derivatives at special points ------------------------------------------------------------ */

/* the outputs of f(x, y, vx, vy), compiled at `level`, at the given arrays; copies, or NULLs */
static int gte_run(gr_var *const *ins, int n_out, gr_var *const *outs, gr_optimize level, const gr_array *const *arrays, gr_array **res) {
    gr_fn_opts opts;
    gr_fn *f;
    const gr_array *o[4];
    int i, ok;
    memset(&opts, 0, sizeof opts);
    opts.optimize = level;
    for (i = 0; i < n_out; i++) res[i] = NULL;
    f = gr_function(4, ins, n_out, outs, &opts);
    if (!f) { gt_fail(__FILE__, __LINE__, "gr_function: %s", gr_graph_message(gr_var_graph(ins[0]))); return 0; }
    ok = gr_call(f, arrays, o) == GR_OK;
    if (!ok) gt_fail(__FILE__, __LINE__, "gr_call: %s", gr_fn_message(f));
    for (i = 0; ok && i < n_out; i++) res[i] = gr_array_copy(o[i]);
    gr_fn_free(f);
    return ok;
}

/* pow(x, y) at x = 0, y > 0: 0^y is 0 for every y > 0, so d/dy is 0 there (the rule's log(x) y
   was log(0) 0 = NaN), and so are all its derivatives in y; d/dx is y 0^(y-1) (+inf for y < 1, 1
   for y = 1, 0 above), one-sided since pow is NaN for x < 0. The gradient, the R-op (in y alone,
   and in x and y along a direction into x >= 0 where y >= 1) and the second derivatives d2/dy2 and
   d2/dxdy (y > 1) against central differences in y and one-sided ones in x, and against the closed
   forms; x > 0 entries alongside, against central differences; float64 and float32, both levels. */
TEST(test_pow_derivatives_at_zero) {
    enum { N = 8 };
    static const double xs[N] = { 0, 0, 0, 0, 0, 0.5, 2.0, 1.3 }, ys[N] = { 0.5, 1, 2, 3.7, 1.5, 1.5, 0.7, -1.2 };
    static const double vxs[N] = { 0, 1.5, 0.5, 2, 1, -0.5, 0.25, 1 }, vys[N] = { 1, -0.5, 2, 1, -1, 0.75, -1.5, 0.5 };
    int d, level, i;
    for (d = 0; d < 2; d++)
        for (level = 0; level < 2; level++) {
            gr_dtype dt = d ? GR_F32 : GR_F64;
            double tol = d ? 2e-3 : 1e-6, h = d ? 1e-2 : 1e-6;
            int64_t n = N;
            gr_graph *g = gr_graph_new();
            gr_var *x = gr_vector(g, dt, "x"), *y = gr_vector(g, dt, "y"), *vx = gr_vector(g, dt, "vx"), *vy = gr_vector(g, dt, "vy");
            gr_var *p = gr_pow(x, y), *c = gr_sum(p), *gxy[2] = { NULL, NULL }, *wrt[2], *ev[2], *ry = NULL, *rxy = NULL, *outs[4], *ins[4];
            gr_var *gyy = NULL, *gyx = NULL;
            gr_array *arr[4], *res[4];
            wrt[0] = x; wrt[1] = y; ev[0] = vx; ev[1] = vy;
            CHECK_STATUS(gr_grad(c, 2, wrt, gxy, NULL), GR_OK);
            CHECK_STATUS(gr_rop(1, &p, 1, &y, &vy, &ry, NULL), GR_OK);
            CHECK_STATUS(gr_rop(1, &p, 2, wrt, ev, &rxy, NULL), GR_OK);
            if (gxy[1]) { gyy = gr_grad1(gr_sum(gxy[1]), y); gyx = gr_grad1(gr_sum(gxy[1]), x); }
            ins[0] = x; ins[1] = y; ins[2] = vx; ins[3] = vy;
            arr[0] = gr_array_new(dt, 1, &n); arr[1] = gr_array_new(dt, 1, &n); arr[2] = gr_array_new(dt, 1, &n); arr[3] = gr_array_new(dt, 1, &n);
            for (i = 0; i < N; i++) {
                gr_array_set(arr[0], i, xs[i]); gr_array_set(arr[1], i, ys[i]);
                gr_array_set(arr[2], i, vxs[i]); gr_array_set(arr[3], i, vys[i]);
            }
            outs[0] = gxy[0]; outs[1] = gxy[1]; outs[2] = ry; outs[3] = rxy;
            CHECK(gxy[0] && gxy[1] && ry && rxy && gyy && gyx);
            if (gxy[0] && gxy[1] && ry && rxy && gte_run(ins, 4, outs, (gr_optimize)level, (const gr_array *const *)arr, res)) {
                for (i = 0; i < N; i++) {
                    double x0 = xs[i], y0 = ys[i], gx = gr_array_get(res[0], i), gy = gr_array_get(res[1], i);
                    double fd_y = (pow(x0, y0 + h) - pow(x0, y0 - h)) / (2 * h), fd_x, fd_r;
                    CHECK_MSG(fabs(gy - fd_y) <= tol * (1 + fabs(fd_y)), "d/dy pow(%g, %g) is %g, central differences %g (%s, level %d)", x0, y0, gy,
                              fd_y, gr_dtype_name(dt), level);
                    if (x0 == 0) CHECK_MSG(gy == 0, "d/dy pow(0, %g) is %g, not exactly 0", y0, gy);
                    else CHECK_NEAR(gy, pow(x0, y0) * log(x0), d ? 1e-6 : 1e-15);
                    if (x0 == 0 && y0 < 1) CHECK_MSG(isinf(gx) && gx > 0, "d/dx pow(0, %g) is %g, want +inf", y0, gx);
                    else if (x0 == 0) {                 /* one-sided: pow(h, y) / h = h^(y-1), within h^(y-1) of y 0^(y-1) */
                        fd_x = pow(h, y0) / h;
                        CHECK_MSG(gx == (y0 == 1 ? 1.0 : 0.0) && fabs(gx - fd_x) <= 2 * pow(h, y0 - 1) + tol,
                                  "d/dx pow(0, %g) is %g, one-sided differences %g", y0, gx, fd_x);
                    } else {
                        fd_x = (pow(x0 + h, y0) - pow(x0 - h, y0)) / (2 * h);
                        CHECK_MSG(fabs(gx - fd_x) <= tol * (1 + fabs(fd_x)), "d/dx pow(%g, %g) is %g, finite differences %g", x0, y0, gx, fd_x);
                    }
                    /* R-op in y alone: d/dy * vy */
                    CHECK_MSG(fabs(gr_array_get(res[2], i) - fd_y * vys[i]) <= tol * (1 + fabs(fd_y * vys[i])),
                              "R-op of pow(%g, %g) in y is %g, want %g", x0, y0, gr_array_get(res[2], i), fd_y * vys[i]);
                    if (x0 == 0 && y0 >= 1) {      /* in x and y, one-sided into x >= 0 */
                        double want = y0 == 1 ? vxs[i] : 0.0;  /* d/dx vx + d/dy vy = y 0^(y-1) vx + 0 */
                        fd_r = (pow(h * vxs[i], y0 + h * vys[i]) - 0) / h;   /* within ~ vx^y h^(y-1) |1 + h vy log(h vx)| */
                        CHECK_MSG(fabs(gr_array_get(res[3], i) - want) <= tol * (1 + fabs(want)) &&
                                  fabs(fd_r - want) <= 2 * pow(vxs[i], y0) * pow(h, y0 - 1) + 20 * tol,
                                  "R-op of pow(0, %g) is %g, want %g, one-sided %g", y0, gr_array_get(res[3], i), want, fd_r);
                    } else if (x0 > 0) {
                        fd_r = (pow(x0 + h * vxs[i], y0 + h * vys[i]) - pow(x0 - h * vxs[i], y0 - h * vys[i])) / (2 * h);
                        CHECK_MSG(fabs(gr_array_get(res[3], i) - fd_r) <= tol * (1 + fabs(fd_r)), "R-op of pow(%g, %g) is %g, central %g", x0, y0,
                                  gr_array_get(res[3], i), fd_r);
                    }
                }
            }
            for (i = 0; i < 4; i++) gr_array_free(res[i]);
            /* second derivatives: d2/dy2 = x^y log(x)^2 and d2/dxdy = x^(y-1) (y log x + 1), both 0 at x = 0 (y > 1) */
            outs[0] = gyy; outs[1] = gyx;
            if (gyy && gyx && gte_run(ins, 2, outs, (gr_optimize)level, (const gr_array *const *)arr, res)) {
                double h2 = d ? 1e-2 : 1e-4;
                for (i = 0; i < N; i++) {
                    double x0 = xs[i], y0 = ys[i], hyy = gr_array_get(res[0], i), hxy = gr_array_get(res[1], i);
                    double fd_yy = (pow(x0, y0 + h2) - 2 * pow(x0, y0) + pow(x0, y0 - h2)) / (h2 * h2), fd_xy;
                    CHECK_MSG(fabs(hyy - fd_yy) <= 10 * tol * (1 + fabs(fd_yy)), "d2/dy2 pow(%g, %g) is %g, central differences %g", x0, y0, hyy,
                              fd_yy);
                    if (x0 == 0 && y0 <= 1) continue;  /* d2/dxdy is infinite there */
                    if (x0 == 0) fd_xy = ((pow(h2, y0 + h2) - pow(h2, y0 - h2)) / (2 * h2)) / h2;   /* one-sided in x */
                    else fd_xy = ((pow(x0 + h2, y0 + h2) - pow(x0 + h2, y0 - h2)) - (pow(x0 - h2, y0 + h2) - pow(x0 - h2, y0 - h2))) / (4 * h2 * h2);
                    /* (one-sided at x = 0: h^(y-1) log h, which goes to 0 as slowly as that) */
                    CHECK_MSG(fabs(hxy - fd_xy) <= 10 * tol * (1 + fabs(fd_xy)) + (x0 == 0 ? 2 * pow(h2, y0 - 1) * fabs(log(h2)) : 0),
                              "d2/dxdy pow(%g, %g) is %g, finite differences %g", x0, y0, hxy, fd_xy);
                    if (x0 == 0) CHECK_MSG(hxy == 0 && hyy == 0, "second derivatives of pow(0, %g): %g and %g, not 0", y0, hxy, hyy);
                }
            }
            for (i = 0; i < 2; i++) gr_array_free(res[i]);
            for (i = 0; i < 4; i++) gr_array_free(arr[i]);
            gr_graph_free(g);
        }
}

SUITE(suite_deriv_ew_points) = {
    CASE(test_pow_derivatives_at_zero),
    END_SUITE
};
