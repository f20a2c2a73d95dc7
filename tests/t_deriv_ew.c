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
   gradient is identically zero. */
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
