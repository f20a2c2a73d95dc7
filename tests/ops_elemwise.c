/* tests/ops_elemwise.c: the elementwise rows (GR_ELEMWISE_OPS) and the other rows whose rules are
   elementwise: Cast (ops/elemwise.c) and Fused (src/fuse.c: elementwise groups run as one pass).

   Each elementwise row has (tests/ops.h): a plain-C reference written from the definition
   (gte_f_<name> in double, gte_i_<name> in int64_t for every class but FLOAT), the domains its
   inputs are drawn from, whether F64 must match exactly, and its derivative specs; from them
   gte_values checks its values in every dtype of its class, over same-shape, broadcast, 0-d and
   empty operands (inputs of static and call-time shapes, constants, shared variables, computed
   operands) at both optimize levels, and gte_errors the errors of its constructor.

   Derivative specs: builders expanded from the table (one per row, by arity; binary rows also
   with the operands swapped and ternary rows rotated, so that the gradient of the gradient is
   taken with respect to every input); every differentiable row with GTD_GRADGRAD, in several
   shapes:
     unary    (3,4), (2,3,2) and 0-d;
     binary   (3,4)+(3,4), (3,4)+(4,), (4,)+(3,4), (3,1)+(1,4), (3,4)+0-d and 0-d+0-d, and swapped;
     ternary  (3,4)x3, (3,4)+(4,)+(3,1), (3,1)+(1,4)+0-d, (4,)+(3,4)+(3,1), 0-d x3, and rotated.
   Domains keep away from kinks, branch cuts and singularities (the finite differences step by
   1e-7 in float64 and 3e-4 in float32; central R-op differences by 1e-6 and 3e-3). Piecewise
   rows get one spec per piece. STEP rows (sign, floor, ceil, round) and CMP / LOGIC rows are
   GTD_NONDIFF: the gradients must agree with (zero) finite differences, the R-op be exactly zero
   and the adjoint identity hold; their builders return the raw result (BOOL for comparisons).
   Points a random domain never hits get cases of their own: pow at x = 0, integer powers.

   Then Cast (every dtype to every dtype, exact derivatives of float64 <-> float32) and Fused, and
   the family's other tests (suite_ops_elemwise): special values, dtype promotion, weak constants,
   mixed dtypes in where and clip, shapes that do not broadcast, int64 wrap-around. */
#include "ops.h"

#if defined(__GNUC__) || defined(__clang__)
#define GTE_UNUSED __attribute__((unused))
#else
#define GTE_UNUSED
#endif

/* ==== plain-C references: double and int64 math, written from the definitions =================== */


/* round half to even, from floor */
static double gte_round_even(double x) {
    double f = floor(x), d = x - f;
    if (d < 0.5) return f;
    if (d > 0.5) return f + 1.0;
    return fmod(f, 2.0) == 0.0 ? f : f + 1.0;
}
/* floored modulo: the result takes the sign of the divisor */
static double gte_fmod_floor(double a, double b) { return a - b * floor(a / b); }
static int64_t gte_imod_floor(int64_t a, int64_t b) {
    int64_t q = a / b;
    if (q * b != a && ((a < 0) != (b < 0))) q -= 1;
    return a - q * b;
}
/* integer power by repeated multiplication, wrapping modulo 2^64; a negative exponent gives the
   true value truncated toward zero (0 unless |a| == 1) */
static int64_t gte_ipow(int64_t a, int64_t b) {
    uint64_t r = 1;
    int64_t k;
    if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (-b) % 2 ? -1 : 1;
        return 0;
    }
    for (k = 0; k < b; k++) r *= (uint64_t)a;
    return (int64_t)r;
}


/* ==== derivative builders, from the table ========================================================
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


/* plain builders, for specs beside the generated ones */
static gr_var *gte_b_sin(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_sin(x[0]); }
static gr_var *gte_b_add(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_add(x[0], x[1]); }

/* ==== the rows ==================================================================================== */

/* ---- arithmetic ------------------------------------------------------------------------------------- */

GTE_F(neg, -a) GTE_I(neg, -a)
static const gtd_spec specs_neg[] = {
    GTE_U(neg, "", -2, 2, GG),
    GTD_END
};
GT_EW(neg) = { GTE_REF_FI(neg), { GTE_DOM(-5, 5, -9, 9, GTE_Q), GTE_DX, GTE_DX }, 1, specs_neg, NULL };

GTE_F(abs, a < 0 ? -a : a) GTE_I(abs, a < 0 ? -a : a)
static const gtd_spec specs_abs[] = {
    GTE_U(abs, "x > 0", 0.3, 2, GG),
    GTE_U(abs, "x < 0", -2, -0.3, GG),
    GTD_END
};
GT_EW(abs) = { GTE_REF_FI(abs), { GTE_DOM(-5, 5, -9, 9, GTE_Q), GTE_DX, GTE_DX }, 1, specs_abs, NULL };

GTE_F(sqr, a * a) GTE_I(sqr, a * a)
static const gtd_spec specs_sqr[] = {
    GTE_U(sqr, "", -2, 2, GG),
    GTD_END
};
GT_EW(sqr) = { GTE_REF_FI(sqr), { GTE_DOM(-5, 5, -9, 9, GTE_Q), GTE_DX, GTE_DX }, 1, specs_sqr, NULL };

GTE_F(sign, a != a ? a : a > 0 ? 1.0 : a < 0 ? -1.0 : 0.0) GTE_I(sign, a > 0 ? 1 : a < 0 ? -1 : 0)
static const gtd_spec specs_sign[] = {
    GTE_U(sign, "x > 0", 0.2, 2, ND),
    GTE_U(sign, "x < 0", -2, -0.2, ND),
    GTD_END
};
GT_EW(sign) = { GTE_REF_FI(sign), { GTE_DOM(-2, 2, -3, 3, GTE_Q), GTE_DX, GTE_DX }, 1, specs_sign, NULL };

GTE_F(floor, floor(a)) GTE_I(floor, a)
static const gtd_spec specs_floor[] = {
    GTE_U(floor, "in (0.1, 0.9)", 0.1, 0.9, ND),
    GTE_U(floor, "in (-2.9, -2.1)", -2.9, -2.1, ND),
    GTD_END
};
GT_EW(floor) = { GTE_REF_FI(floor), { GTE_DOM(-3, 3, -9, 9, GTE_Q), GTE_DX, GTE_DX }, 1, specs_floor, NULL };

GTE_F(ceil, -floor(-a)) GTE_I(ceil, a)
static const gtd_spec specs_ceil[] = {
    GTE_U(ceil, "in (0.1, 0.9)", 0.1, 0.9, ND),
    GTE_U(ceil, "in (-2.9, -2.1)", -2.9, -2.1, ND),
    GTD_END
};
GT_EW(ceil) = { GTE_REF_FI(ceil), { GTE_DOM(-3, 3, -9, 9, GTE_Q), GTE_DX, GTE_DX }, 1, specs_ceil, NULL };

GTE_F(round, gte_round_even(a)) GTE_I(round, a)
static const gtd_spec specs_round[] = {
    GTE_U(round, "in (0.6, 1.4)", 0.6, 1.4, ND),
    GTE_U(round, "in (-0.4, 0.4)", -0.4, 0.4, ND),
    GTD_END
};
GT_EW(round) = { GTE_REF_FI(round), { GTE_DOM(-3, 3, -9, 9, GTE_Q), GTE_DX, GTE_DX }, 1, specs_round, NULL };

GTE_F(add, a + b) GTE_I(add, a + b)
static const gtd_spec specs_add[] = {
    GTE_BIN(add, "", -2, 2, -2, 2, GG),
    { "add", "(3,4) + (4,)", gte_b_add, NULL, 2, { GTD_IN(2, 3, 4, -2, 2), GTD_IN(1, 4, 0, -2, 2) }, 0 },
    { "add", "(3,1) + (1,4)", gte_b_add, NULL, 2, { GTD_IN(2, 3, 1, -2, 2), GTD_IN(2, 1, 4, -2, 2) }, 0 },
    GTD_END
};
GT_EW(add) = { GTE_REF_FI(add), { GTE_DOM(-5, 5, -99, 99, 0), GTE_DOM(-5, 5, -99, 99, 0), GTE_DX }, 1, specs_add, NULL };

GTE_F(sub, a - b) GTE_I(sub, a - b)
static const gtd_spec specs_sub[] = {
    GTE_BIN(sub, "", -2, 2, -2, 2, GG),
    GTD_END
};
GT_EW(sub) = { GTE_REF_FI(sub), { GTE_DOM(-5, 5, -99, 99, 0), GTE_DOM(-5, 5, -99, 99, 0), GTE_DX }, 1, specs_sub, NULL };

GTE_F(mul, a * b) GTE_I(mul, a * b)
static const gtd_spec specs_mul[] = {
    GTE_BIN(mul, "", -2, 2, -2, 2, GG),
    GTD_END
};
GT_EW(mul) = { GTE_REF_FI(mul), { GTE_DOM(-5, 5, -99, 99, 0), GTE_DOM(-5, 5, -99, 99, 0), GTE_DX }, 1, specs_mul, NULL };

GTE_F(div, a / b)
static const gtd_spec specs_div[] = {
    GTE_BIN(div, "b > 0", -2, 2, 0.5, 2, GG),
    GTE_BIN(div, "b < 0", -2, 2, -2, -0.5, GG),
    GTD_END
};
GT_EW(div) = { GTE_REF_F(div), { GTE_DOM(-5, 5, -9, 9, 0), GTE_DOM(-3, 3, -5, 5, GTE_NZ), GTE_DX }, 1, specs_div, NULL };

GTE_F(pow, exp(b * log(a))) GTE_I(pow, gte_ipow(a, b))
static const gtd_spec specs_pow[] = {
    GTE_BIN(pow, "base in (0.5, 2)", 0.5, 2, -2, 2, GG),
    GTD_END
};
static void test_ew_int_pow(void);                  /* below, with the other values at special points */
static void test_pow_derivatives_at_zero(void);
static const gt_opcase more_pow[] = { GT_VALUES(test_ew_int_pow), GT_DERIVS(test_pow_derivatives_at_zero), GT_END };
GT_EW(pow) = { GTE_REF_FI(pow), { GTE_DOM(0.1, 3, -4, 4, 0), GTE_DOM(-2.5, 2.5, 0, 7, 0), GTE_DX }, 0, specs_pow, more_pow };

GTE_F(mod, gte_fmod_floor(a, b)) GTE_I(mod, gte_imod_floor(a, b))
static const gtd_spec specs_mod[] = {
    /* a / b stays inside (1.09, 1.9), (-1.9, -1.09): away from the jumps at integers */
    GTE_BIN(mod, "a/b in (1, 2)", 2.4, 3.8, 2, 2.2, GG),
    GTE_BIN(mod, "a/b in (-2, -1), a < 0", -3.8, -2.4, 2, 2.2, GG),
    GTE_BIN(mod, "a/b in (-2, -1), b < 0", 2.4, 3.8, -2.2, -2, GG),
    GTD_END
};
GT_EW(mod) = { GTE_REF_FI(mod), { GTE_DOM(-6, 6, -20, 20, GTE_Q), GTE_DOM(-3, 3, -5, 5, GTE_NZ | GTE_Q), GTE_DX }, 0, specs_mod, NULL };

GTE_F(maximum, a != a || b != b ? NAN : a > b ? a : b) GTE_I(maximum, a > b ? a : b)
static const gtd_spec specs_maximum[] = {
    /* disjoint ranges: no ties, one operand always wins */
    GTE_BIN(maximum, "a wins", 1, 2, -1, 0.5, GG),
    GTE_BIN(maximum, "b wins", -1, 0.5, 1, 2, GG),
    GTD_END
};
GT_EW(maximum) = { GTE_REF_FI(maximum), { GTE_DOM(-2, 2, -3, 3, GTE_Q), GTE_DOM(-2, 2, -3, 3, GTE_Q), GTE_DX }, 1, specs_maximum, NULL };

GTE_F(minimum, a != a || b != b ? NAN : a < b ? a : b) GTE_I(minimum, a < b ? a : b)
static const gtd_spec specs_minimum[] = {
    GTE_BIN(minimum, "a wins", -1, 0.5, 1, 2, GG),
    GTE_BIN(minimum, "b wins", 1, 2, -1, 0.5, GG),
    GTD_END
};
GT_EW(minimum) = { GTE_REF_FI(minimum), { GTE_DOM(-2, 2, -3, 3, GTE_Q), GTE_DOM(-2, 2, -3, 3, GTE_Q), GTE_DX }, 1, specs_minimum, NULL };

GTE_F(clip, a < b ? b : a > c ? c : a) GTE_I(clip, a < b ? b : a > c ? c : a)  /* Aesara's Clip */
static const gtd_spec specs_clip[] = {
    /* clip(x, lo, hi): x inside, below and above, each piece away from its kinks */
    GTE_TER(clip, gte_clip, "inside", -1, 1, -3, -2, 2, 3, GG),
    GTE_TER(clip, gte_clip, "below lo", -1, 1, 1.5, 2, 2.5, 3, GG),
    GTE_TER(clip, gte_clip, "above hi", -1, 1, -3, -2.5, -2, -1.5, GG),
    GTD_END
};
GT_EW(clip) = { GTE_REF_FI(clip), { GTE_DOM(-4, 4, -6, 6, GTE_Q), GTE_DOM(-2, 0, -3, 0, GTE_Q), GTE_DOM(0, 2, 0, 3, GTE_Q) }, 1, specs_clip, NULL };

GTE_F(where, a != 0 ? b : c) GTE_I(where, a != 0 ? b : c)
static const gtd_spec specs_where[] = {
    /* where: a float condition (nonzero is true; these never are zero), a condition x0 > 0 built
       in the builder, and floor(x0), which is exactly zero in places */
    GTE_TER(where, gte_where, "float cond > 0", 0.5, 2, -2, 2, -2, 2, GG),
    GTE_TER(where, gte_where, "float cond < 0", -2, -0.5, -2, 2, -2, 2, GG),
    GTE_TER(where, gte_where_gt, "cond x0 > 0", -1, 1, -2, 2, -2, 2, GG),
    { "where", "cond floor(x0) (3,4) (3,4) (3,4)", gte_where_floor, NULL, 3, { M34(-0.9, 1.9), M34(-2, 2), M34(-2, 2) }, GG },
    { "where", "cond floor(x0) (3,1) (4,) 0-d", gte_where_floor, NULL, 3, { C31(-0.9, 1.9), V4(-2, 2), S0(-2, 2) }, GG },
    GTD_END
};
GT_EW(where) = { GTE_REF_FI(where), { GTE_DOM(-1, 1, -1, 1, GTE_QI), GTE_DOM(-5, 5, -9, 9, 0), GTE_DOM(-5, 5, -9, 9, 0) }, 1, specs_where, NULL };

/* ---- exponentials and logarithms -------------------------------------------------------------------- */

GTE_F(exp, exp(a))
static const gtd_spec specs_exp[] = {
    GTE_U(exp, "", -2, 2, GG),
    GTD_END
};
GT_EW(exp) = { GTE_REF_F(exp), { GTE_DOM(-5, 5, -5, 5, 0), GTE_DX, GTE_DX }, 0, specs_exp, NULL };

GTE_F(exp2, pow(2.0, a))
static const gtd_spec specs_exp2[] = {
    GTE_U(exp2, "", -2, 2, GG),
    GTD_END
};
GT_EW(exp2) = { GTE_REF_F(exp2), { GTE_DOM(-5, 5, -5, 5, 0), GTE_DX, GTE_DX }, 0, specs_exp2, NULL };

GTE_F(expm1, exp(a) - 1.0)
static const gtd_spec specs_expm1[] = {
    GTE_U(expm1, "", -2, 2, GG),
    GTD_END
};
GT_EW(expm1) = { GTE_REF_F(expm1), { GTE_DOM(-2, 2, -3, 3, 0), GTE_DX, GTE_DX }, 0, specs_expm1, NULL };

GTE_F(log, log(a))
static const gtd_spec specs_log[] = {
    GTE_U(log, "x > 0.2", 0.2, 3, GG),
    GTD_END
};
GT_EW(log) = { GTE_REF_F(log), { GTE_DOM(0.05, 5, 1, 9, 0), GTE_DX, GTE_DX }, 0, specs_log, NULL };

GTE_F(log2, log(a) / log(2.0))
static const gtd_spec specs_log2[] = {
    GTE_U(log2, "x > 0.2", 0.2, 3, GG),
    GTD_END
};
GT_EW(log2) = { GTE_REF_F(log2), { GTE_DOM(0.05, 5, 1, 9, 0), GTE_DX, GTE_DX }, 0, specs_log2, NULL };

GTE_F(log1p, log(1.0 + a))
static const gtd_spec specs_log1p[] = {
    GTE_U(log1p, "x > -0.8", -0.8, 2, GG),
    GTD_END
};
GT_EW(log1p) = { GTE_REF_F(log1p), { GTE_DOM(-0.9, 5, 0, 9, 0), GTE_DX, GTE_DX }, 0, specs_log1p, NULL };

GTE_F(sqrt, sqrt(a))
static const gtd_spec specs_sqrt[] = {
    GTE_U(sqrt, "x > 0.2", 0.2, 3, GG),
    GTD_END
};
GT_EW(sqrt) = { GTE_REF_F(sqrt), { GTE_DOM(0, 5, 0, 9, 0), GTE_DX, GTE_DX }, 1, specs_sqrt, NULL };

GTE_F(cbrt, a < 0 ? -pow(-a, 1.0 / 3.0) : pow(a, 1.0 / 3.0))   /* the real y with y^3 = a */
static const gtd_spec specs_cbrt[] = {
    GTE_U(cbrt, "x > 0", 0.3, 3, GG),
    GTE_U(cbrt, "x < 0", -3, -0.3, GG),
    GTD_END
};
GT_EW(cbrt) = { GTE_REF_F(cbrt), { GTE_DOM(-8, 8, -27, 27, GTE_Q), GTE_DX, GTE_DX }, 0, specs_cbrt, NULL };

GTE_F(reciprocal, 1.0 / a)
static const gtd_spec specs_reciprocal[] = {
    GTE_U(reciprocal, "x > 0", 0.3, 2, GG),
    GTE_U(reciprocal, "x < 0", -2, -0.3, GG),
    GTD_END
};
GT_EW(reciprocal) = { GTE_REF_F(reciprocal), { GTE_DOM(-3, 3, -5, 5, GTE_NZ), GTE_DX, GTE_DX }, 1, specs_reciprocal, NULL };

/* ---- trigonometric and hyperbolic ------------------------------------------------------------------- */

GTE_F(sin, sin(a))
static const gtd_spec specs_sin[] = {
    GTE_U(sin, "", -3, 3, GG),
    { "sin", "matrix", gte_b_sin, NULL, 1, { GTD_IN(2, 3, 4, -3, 3) }, GTD_GRADGRAD },
    { "sin", "0-d", gte_b_sin, NULL, 1, { GTD_IN(0, 0, 0, -3, 3) }, GTD_GRADGRAD },
    GTD_END
};
GT_EW(sin) = { GTE_REF_F(sin), { GTE_DOM(-4, 4, -4, 4, 0), GTE_DX, GTE_DX }, 0, specs_sin, NULL };

GTE_F(cos, cos(a))
static const gtd_spec specs_cos[] = {
    GTE_U(cos, "", -3, 3, GG),
    GTD_END
};
GT_EW(cos) = { GTE_REF_F(cos), { GTE_DOM(-4, 4, -4, 4, 0), GTE_DX, GTE_DX }, 0, specs_cos, NULL };

GTE_F(tan, sin(a) / cos(a))
static const gtd_spec specs_tan[] = {
    GTE_U(tan, "|x| < 1.2", -1.2, 1.2, GG),
    GTD_END
};
GT_EW(tan) = { GTE_REF_F(tan), { GTE_DOM(-1.4, 1.4, -1, 1, 0), GTE_DX, GTE_DX }, 0, specs_tan, NULL };

GTE_F(arcsin, atan(a / sqrt(1.0 - a * a)))
static const gtd_spec specs_arcsin[] = {
    GTE_U(arcsin, "|x| < 0.8", -0.8, 0.8, GG),
    GTD_END
};
GT_EW(arcsin) = { GTE_REF_F(arcsin), { GTE_DOM(-0.95, 0.95, 0, 0, 0), GTE_DX, GTE_DX }, 0, specs_arcsin, NULL };

GTE_F(arccos, 2.0 * atan(sqrt((1.0 - a) / (1.0 + a))))
static const gtd_spec specs_arccos[] = {
    GTE_U(arccos, "|x| < 0.8", -0.8, 0.8, GG),
    GTD_END
};
GT_EW(arccos) = { GTE_REF_F(arccos), { GTE_DOM(-0.95, 0.95, 0, 0, 0), GTE_DX, GTE_DX }, 0, specs_arccos, NULL };

GTE_F(arctan, asin(a / sqrt(1.0 + a * a)))
static const gtd_spec specs_arctan[] = {
    GTE_U(arctan, "", -3, 3, GG),
    GTD_END
};
GT_EW(arctan) = { GTE_REF_F(arctan), { GTE_DOM(-5, 5, -9, 9, 0), GTE_DX, GTE_DX }, 0, specs_arctan, NULL };

GTE_F(arctan2, atan2(a, b))
static const gtd_spec specs_arctan2[] = {
    GTE_BIN(arctan2, "b > 0", -2, 2, 0.3, 2, GG),
       /* the right half plane: no branch cut */
    GTE_BIN(arctan2, "a > 0", 0.3, 2, -2, 2, GG),
    GTD_END
};
GT_EW(arctan2) = { GTE_REF_F(arctan2), { GTE_DOM(-3, 3, -3, 3, 0), GTE_DOM(-3, 3, -3, 3, 0), GTE_DX }, 0, specs_arctan2, NULL };

GTE_F(sinh, (exp(a) - exp(-a)) / 2.0)
static const gtd_spec specs_sinh[] = {
       /* the upper half plane */
    GTE_U(sinh, "", -2, 2, GG),
    GTD_END
};
GT_EW(sinh) = { GTE_REF_F(sinh), { GTE_DOM(-3, 3, -3, 3, 0), GTE_DX, GTE_DX }, 0, specs_sinh, NULL };

GTE_F(cosh, (exp(a) + exp(-a)) / 2.0)
static const gtd_spec specs_cosh[] = {
    GTE_U(cosh, "", -2, 2, GG),
    GTD_END
};
GT_EW(cosh) = { GTE_REF_F(cosh), { GTE_DOM(-3, 3, -3, 3, 0), GTE_DX, GTE_DX }, 0, specs_cosh, NULL };

GTE_F(tanh, (exp(2.0 * a) - 1.0) / (exp(2.0 * a) + 1.0))
static const gtd_spec specs_tanh[] = {
    GTE_U(tanh, "", -2, 2, GG),
    GTD_END
};
GT_EW(tanh) = { GTE_REF_F(tanh), { GTE_DOM(-3, 3, -3, 3, 0), GTE_DX, GTE_DX }, 0, specs_tanh, NULL };

GTE_F(arcsinh, a < 0 ? -log(-a + sqrt(a * a + 1.0)) : log(a + sqrt(a * a + 1.0)))
static const gtd_spec specs_arcsinh[] = {
    GTE_U(arcsinh, "", -3, 3, GG),
    GTD_END
};
GT_EW(arcsinh) = { GTE_REF_F(arcsinh), { GTE_DOM(-5, 5, -9, 9, 0), GTE_DX, GTE_DX }, 0, specs_arcsinh, NULL };

GTE_F(arccosh, log(a + sqrt(a * a - 1.0)))
static const gtd_spec specs_arccosh[] = {
    GTE_U(arccosh, "x > 1.2", 1.2, 3, GG),
    GTD_END
};
GT_EW(arccosh) = { GTE_REF_F(arccosh), { GTE_DOM(1, 5, 1, 9, 0), GTE_DX, GTE_DX }, 0, specs_arccosh, NULL };

GTE_F(arctanh, 0.5 * log((1.0 + a) / (1.0 - a)))
static const gtd_spec specs_arctanh[] = {
    GTE_U(arctanh, "|x| < 0.8", -0.8, 0.8, GG),
    GTD_END
};
GT_EW(arctanh) = { GTE_REF_F(arctanh), { GTE_DOM(-0.9, 0.9, 0, 0, 0), GTE_DX, GTE_DX }, 0, specs_arctanh, NULL };

/* ---- special functions and activations -------------------------------------------------------------- */

GTE_F(erf, erf(a))
static const gtd_spec specs_erf[] = {
    GTE_U(erf, "", -2, 2, GG),
    GTD_END
};
GT_EW(erf) = { GTE_REF_F(erf), { GTE_DOM(-3, 3, -3, 3, 0), GTE_DX, GTE_DX }, 0, specs_erf, NULL };

GTE_F(erfc, 1.0 - erf(a))
static const gtd_spec specs_erfc[] = {
    GTE_U(erfc, "", -2, 2, GG),
    GTD_END
};
GT_EW(erfc) = { GTE_REF_F(erfc), { GTE_DOM(-3, 3, -3, 3, 0), GTE_DX, GTE_DX }, 0, specs_erfc, NULL };

GTE_F(sigmoid, 1.0 / (1.0 + exp(-a)))
static const gtd_spec specs_sigmoid[] = {
    GTE_U(sigmoid, "", -4, 4, GG),
    GTD_END
};
GT_EW(sigmoid) = { GTE_REF_F(sigmoid), { GTE_DOM(-8, 8, -9, 9, 0), GTE_DX, GTE_DX }, 0, specs_sigmoid, NULL };

GTE_F(softplus, log(1.0 + exp(a)))
static const gtd_spec specs_softplus[] = {
    GTE_U(softplus, "", -4, 4, GG),
    GTD_END
};
GT_EW(softplus) = { GTE_REF_F(softplus), { GTE_DOM(-8, 8, -9, 9, 0), GTE_DX, GTE_DX }, 0, specs_softplus, NULL };

GTE_F(relu, a > 0 ? a : 0.0) GTE_I(relu, a > 0 ? a : 0)
static const gtd_spec specs_relu[] = {
    GTE_U(relu, "x > 0", 0.2, 2, GG),
    GTE_U(relu, "x < 0", -2, -0.2, GG),
    GTD_END
};
GT_EW(relu) = { GTE_REF_FI(relu), { GTE_DOM(-3, 3, -9, 9, GTE_Q), GTE_DX, GTE_DX }, 1, specs_relu, NULL };

/* ---- comparisons and logic: BOOL results, no derivative --------------------------------------------- */

GTE_F(gt, a > b) GTE_I(gt, a > b)
static const gtd_spec specs_gt[] = {
    GTE_BIN(gt, "", -2, 2, -2, 2, ND),
    { "gt", "of floors (ties) (3,4) (4,)", gte_gt_floors, NULL, 2, { M34(-0.9, 1.9), V4(-0.9, 1.9) }, ND },
    GTD_END
};
GT_EW(gt) = { GTE_REF_FI(gt), { GTE_DOM(-2, 2, -3, 3, GTE_QH), GTE_DOM(-2, 2, -3, 3, GTE_QH), GTE_DX }, 1, specs_gt, NULL };

GTE_F(lt, a < b) GTE_I(lt, a < b)
static const gtd_spec specs_lt[] = {
    GTE_BIN(lt, "", -2, 2, -2, 2, ND),
    { "lt", "of floors (ties) (3,4) (4,)", gte_lt_floors, NULL, 2, { M34(-0.9, 1.9), V4(-0.9, 1.9) }, ND },
    GTD_END
};
GT_EW(lt) = { GTE_REF_FI(lt), { GTE_DOM(-2, 2, -3, 3, GTE_QH), GTE_DOM(-2, 2, -3, 3, GTE_QH), GTE_DX }, 1, specs_lt, NULL };

GTE_F(ge, a >= b) GTE_I(ge, a >= b)
static const gtd_spec specs_ge[] = {
    GTE_BIN(ge, "", -2, 2, -2, 2, ND),
    { "ge", "of floors (ties) (3,4) (4,)", gte_ge_floors, NULL, 2, { M34(-0.9, 1.9), V4(-0.9, 1.9) }, ND },
    GTD_END
};
GT_EW(ge) = { GTE_REF_FI(ge), { GTE_DOM(-2, 2, -3, 3, GTE_QH), GTE_DOM(-2, 2, -3, 3, GTE_QH), GTE_DX }, 1, specs_ge, NULL };

GTE_F(le, a <= b) GTE_I(le, a <= b)
static const gtd_spec specs_le[] = {
    GTE_BIN(le, "", -2, 2, -2, 2, ND),
    { "le", "of floors (ties) (3,4) (4,)", gte_le_floors, NULL, 2, { M34(-0.9, 1.9), V4(-0.9, 1.9) }, ND },
    GTD_END
};
GT_EW(le) = { GTE_REF_FI(le), { GTE_DOM(-2, 2, -3, 3, GTE_QH), GTE_DOM(-2, 2, -3, 3, GTE_QH), GTE_DX }, 1, specs_le, NULL };

GTE_F(eq, a == b) GTE_I(eq, a == b)
static const gtd_spec specs_eq[] = {
    GTE_BIN(eq, "", -2, 2, -2, 2, ND),
    { "eq", "of floors (ties) (3,4) (4,)", gte_eq_floors, NULL, 2, { M34(-0.9, 1.9), V4(-0.9, 1.9) }, ND },
    GTD_END
};
GT_EW(eq) = { GTE_REF_FI(eq), { GTE_DOM(-2, 2, -3, 3, GTE_QH), GTE_DOM(-2, 2, -3, 3, GTE_QH), GTE_DX }, 1, specs_eq, NULL };

GTE_F(neq, a != b) GTE_I(neq, a != b)
static const gtd_spec specs_neq[] = {
    GTE_BIN(neq, "", -2, 2, -2, 2, ND),
    { "neq", "of floors (ties) (3,1) (1,4)", gte_neq_floors, NULL, 2, { C31(-0.9, 1.9), R14(-0.9, 1.9) }, ND },
    GTD_END
};
GT_EW(neq) = { GTE_REF_FI(neq), { GTE_DOM(-2, 2, -3, 3, GTE_QH), GTE_DOM(-2, 2, -3, 3, GTE_QH), GTE_DX }, 1, specs_neq, NULL };

GTE_F(logical_and, a != 0 && b != 0) GTE_I(logical_and, a != 0 && b != 0)
static const gtd_spec specs_logical_and[] = {
    GTE_BIN(logical_and, "of floats", -2, 2, -2, 2, ND),
    { "logical_and", "of comparisons (3,4) (4,)", gte_logical_and_cmp, NULL, 2, { M34(-1, 1), V4(-1, 1) }, ND },
    GTD_END
};
GT_EW(logical_and) = { GTE_REF_FI(logical_and), { GTE_DOM(-1, 1, -1, 1, GTE_QI), GTE_DOM(-1, 1, -1, 1, GTE_QI), GTE_DX }, 1, specs_logical_and, NULL };

GTE_F(logical_or, a != 0 || b != 0) GTE_I(logical_or, a != 0 || b != 0)
static const gtd_spec specs_logical_or[] = {
    GTE_BIN(logical_or, "of floats", -2, 2, -2, 2, ND),
    { "logical_or", "of comparisons (3,1) (1,4)", gte_logical_or_cmp, NULL, 2, { C31(-1, 1), R14(-1, 1) }, ND },
    GTD_END
};
GT_EW(logical_or) = { GTE_REF_FI(logical_or), { GTE_DOM(-1, 1, -1, 1, GTE_QI), GTE_DOM(-1, 1, -1, 1, GTE_QI), GTE_DX }, 1, specs_logical_or, NULL };

GTE_F(logical_not, a == 0) GTE_I(logical_not, a == 0)
static const gtd_spec specs_logical_not[] = {
    GTE_U(logical_not, "of floats", -2, 2, ND),
    { "logical_not", "of comparisons (3,4)", gte_logical_not_cmp, NULL, 1, { M34(-1, 1) }, ND },
    GTD_END
};
GT_EW(logical_not) = { GTE_REF_FI(logical_not), { GTE_DOM(-1, 1, -1, 1, GTE_QI), GTE_DX, GTE_DX }, 1, specs_logical_not, NULL };

/* ==== the values of a row, in every dtype of its class ============================================= */

typedef struct gte_shape { int ndim; int64_t d[3]; } gte_shape;
typedef struct gte_case { gte_shape s[3]; } gte_case;

#define SH0 { 0, { 0, 0, 0 } }
#define SH1(a) { 1, { a, 0, 0 } }
#define SH2(a, b) { 2, { a, b, 0 } }
#define SH3(a, b, c) { 3, { a, b, c } }

static const gte_case gte_cases1[] = {
    { { SH2(3, 4), SH0, SH0 } }, { { SH0, SH0, SH0 } }, { { SH2(0, 3), SH0, SH0 } }, { { SH1(5), SH0, SH0 } },
    { { SH3(2, 3, 4), SH0, SH0 } }, { { SH2(1, 1), SH0, SH0 } },
};
static const gte_case gte_cases2[] = {
    { { SH2(3, 4), SH2(3, 4), SH0 } }, { { SH2(3, 4), SH1(4), SH0 } }, { { SH1(4), SH2(3, 4), SH0 } },
    { { SH2(3, 1), SH2(1, 4), SH0 } }, { { SH0, SH2(2, 3), SH0 } }, { { SH2(2, 3), SH0, SH0 } }, { { SH0, SH0, SH0 } },
    { { SH2(0, 3), SH2(0, 3), SH0 } }, { { SH2(0, 3), SH1(3), SH0 } }, { { SH2(1, 3), SH2(0, 1), SH0 } },
    { { SH3(2, 1, 4), SH2(3, 1), SH0 } },
};
static const gte_case gte_cases3[] = {
    { { SH2(3, 4), SH2(3, 4), SH2(3, 4) } }, { { SH2(3, 4), SH1(4), SH2(3, 1) } }, { { SH2(3, 1), SH2(1, 4), SH0 } },
    { { SH0, SH2(2, 3), SH1(3) } }, { { SH0, SH0, SH0 } }, { { SH2(0, 3), SH1(3), SH0 } }, { { SH2(1, 4), SH2(3, 1), SH1(4) } },
    { { SH3(2, 1, 4), SH2(3, 1), SH0 } },
};

static double gte_draw_float(gtf_rng *r, const gte_dom *d) {
    for (;;) {
        double v = gtf_uniform(r, d->lo, d->hi);
        if ((d->flags & GTE_QH) || ((d->flags & GTE_Q) && (gtf_next(r) & 1u))) v = floor(v * 2.0 + 0.5) / 2.0;
        if (d->flags & GTE_QI) v = floor(v + 0.5);
        if (v < d->lo || v > d->hi) continue;
        if ((d->flags & GTE_NZ) && fabs(v) < 0.25) continue;
        return v;
    }
}
static int64_t gte_draw_int(gtf_rng *r, const gte_dom *d, int is_bool) {
    int64_t lo = is_bool ? (d->ilo > 0 ? d->ilo : 0) : d->ilo, hi = is_bool ? (d->ihi < 1 ? d->ihi : 1) : d->ihi;
    if ((d->flags & GTE_NZ) && is_bool) lo = 1;
    for (;;) {
        int64_t v = gtf_int(r, lo, hi);
        if ((d->flags & GTE_NZ) && v == 0) continue;
        return v;
    }
}

static gr_array *gte_array(gtf_rng *r, gr_dtype dt, const gte_shape *s, const gte_dom *d) {
    gr_array *a = gr_array_new(dt, s->ndim, s->d);
    int64_t k;
    if (!a) return NULL;
    for (k = 0; k < a->size; k++) {
        switch (dt) {
        case GR_F64: ((double *)a->data)[k] = gte_draw_float(r, d); break;
        case GR_F32: ((float *)a->data)[k] = (float)gte_draw_float(r, d); break;
        case GR_I64: ((int64_t *)a->data)[k] = gte_draw_int(r, d, 0); break;
        default: ((uint8_t *)a->data)[k] = (uint8_t)gte_draw_int(r, d, 1); break;
        }
    }
    return a;
}

/* the dtype a row's result has for inputs of dtype dt */
static gr_dtype gte_out_dtype(int cls, gr_dtype dt) {
    switch (cls) {
    case GTE_FLOAT: return dt == GR_F32 ? GR_F32 : GR_F64;
    case GTE_CMP: case GTE_LOGIC: return GR_BOOL;
    default: return dt == GR_BOOL ? GR_I64 : dt;
    }
}

static const char *const gte_in_names[3] = { "a", "b", "c" };

/* one row in one input dtype over every shape case, static and dynamic */
static void gte_row_run(const gte_row *row, const gt_ew *sp, gr_dtype dt, gtf_rng *rng) {
    const gte_case *cases = row->arity == 1 ? gte_cases1 : row->arity == 2 ? gte_cases2 : gte_cases3;
    int nc = row->arity == 1 ? (int)(sizeof gte_cases1 / sizeof gte_cases1[0])
           : row->arity == 2 ? (int)(sizeof gte_cases2 / sizeof gte_cases2[0]) : (int)(sizeof gte_cases3 / sizeof gte_cases3[0]);
    gr_dtype odt = gte_out_dtype(row->cls, dt);
    int use_int = row->cls != GTE_FLOAT && (dt == GR_I64 || dt == GR_BOOL);
    double tol = sp->exact ? 0.0 : odt == GR_F32 ? GTF_TOL_F32 : GTF_TOL_F64;
    int ci, variant;
    for (ci = 0; ci < nc; ci++)
        for (variant = 0; variant < 9; variant++) {
            /* 0-5: inputs with static and unknown shapes, three draws each; 6: constant operands;
               7: shared variables (both evaluated by a function without inputs); 8: computed operands
               (x negated twice, in the function's own buffers, so the result may overwrite them) */
            const gte_case *cs = &cases[ci];
            int dyn = variant < 6 && (variant & 1), leaves = variant == 6 || variant == 7, n_in = leaves ? 0 : row->arity;
            gr_graph *g = gr_graph_new();
            gr_var *x[3], *xo[3], *y = NULL;
            gr_array *a[3] = { NULL, NULL, NULL }, *want;
            int64_t oshape[3];
            int ond = 0, k, i;
            char label[200];
            for (k = 0; k < row->arity; k++) {
                a[k] = gte_array(rng, dt, &cs->s[k], &sp->dom[k]);
                if (variant == 6) x[k] = gr_constant(g, a[k]);
                else if (variant == 7) x[k] = gr_shared(g, a[k], gte_in_names[k]);
                else x[k] = gtf_input(g, dt, cs->s[k].ndim, cs->s[k].d, dyn, gte_in_names[k]);
                if (cs->s[k].ndim > ond) ond = cs->s[k].ndim;
            }
            for (i = 0; i < ond; i++) {          /* the broadcast shape */
                oshape[i] = 1;
                for (k = 0; k < row->arity; k++) {
                    int j = i - (ond - cs->s[k].ndim);
                    if (j >= 0 && cs->s[k].d[j] != 1) oshape[i] = cs->s[k].d[j];
                }
            }
            for (k = 0; k < row->arity; k++)
                xo[k] = variant != 8 ? x[k] : dt == GR_BOOL ? gr_logical_not(gr_logical_not(x[k])) : gr_neg(gr_neg(x[k]));
            if (row->arity == 1) y = row->b1(xo[0]);
            else if (row->arity == 2) y = row->b2(xo[0], xo[1]);
            else y = row->b3(xo[0], xo[1], xo[2]);
            want = gr_array_new(use_int ? GR_I64 : GR_F64, ond, oshape);
            for (i = 0; i < want->size; i++) {
                double fv[3] = { 0, 0, 0 };
                int64_t iv[3] = { 0, 0, 0 };
                for (k = 0; k < row->arity; k++) {
                    int64_t at = gtf_bcast_index(i, ond, oshape, cs->s[k].ndim, cs->s[k].d);
                    fv[k] = gr_array_get(a[k], at);
                    iv[k] = dt == GR_I64 ? ((const int64_t *)a[k]->data)[at] : dt == GR_BOOL ? ((const uint8_t *)a[k]->data)[at] : 0;
                }
                if (use_int) ((int64_t *)want->data)[i] = sp->i(iv[0], iv[1], iv[2]);
                else ((double *)want->data)[i] = sp->f(fv[0], fv[1], fv[2]);
            }
            {
                char sh[3][48];
                for (k = 0; k < 3; k++) sh[k][0] = 0;
                for (k = 0; k < row->arity; k++) gtf_shape_str(sh[k], sizeof sh[k], cs->s[k].ndim, cs->s[k].d);
                snprintf(label, sizeof label, "gr_%s(%s%s%s%s%s) %s %s, draw %d", row->name, sh[0], row->arity > 1 ? ", " : "", sh[1],
                         row->arity > 2 ? ", " : "", sh[2], gr_dtype_name(dt),
                         variant == 6 ? "constants" : variant == 7 ? "shared variables" : variant == 8 ? "computed operands"
                         : dyn ? "unknown shapes" : "static shapes", variant >= 6 ? 0 : variant / 2);
            }
            gtf_expect(g, n_in, leaves ? NULL : x, leaves ? NULL : (const gr_array *const *)a, y, odt, want, tol, label);
            if (!dyn && y) gtf_static_shape_is(y, ond, oshape, label);
            gr_array_free(want);
            for (k = 0; k < 3; k++) gr_array_free(a[k]);
            gr_graph_free(g);
        }
}

/* one row in the four input dtypes, where its class computes in them; the draws are seeded by the
   row's name, so that a row's values do not move when other rows come or go */
void gte_values(const gte_row *row) {
    static const gr_dtype dts[4] = { GR_F64, GR_F32, GR_I64, GR_BOOL };
    const gt_ew *sp = row->cases;
    uint64_t h = 1469598103934665603ULL;
    const char *p;
    int d;
    for (p = row->name; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ULL;
    for (d = 0; d < 4; d++) {
        gtf_rng rng;
        if (!sp->i && (dts[d] == GR_I64 || dts[d] == GR_BOOL) && row->cls != GTE_FLOAT) continue;
        rng.s = h + (uint64_t)d;
        gte_row_run(row, sp, dts[d], &rng);
    }
}


/* ==== the errors of a row's constructor ============================================================== */

/* gr_<name> of the given operands */
static gr_var *gte_build(const gte_row *row, gr_var *const *x) {
    return row->arity == 1 ? row->b1(x[0]) : row->arity == 2 ? row->b2(x[0], x[1]) : row->b3(x[0], x[1], x[2]);
}

/* A NULL operand in any position gives NULL and records nothing; a gradient marker operand is
   GR_ERR_TYPE naming the constructor and the marker; static shapes that do not broadcast (3,) and
   (4,) in any position are GR_ERR_SHAPE naming the constructor when built, and call-time shapes
   that do not broadcast fail the call with GR_ERR_SHAPE at both optimize levels. Each error
   leaves the graph usable: a good build after it works. */
void gte_errors(const gte_row *row) {
    int64_t s3 = 3, s4 = 4;
    int pos, k;
    char fn[32], label[96];
    snprintf(fn, sizeof fn, "gr_%s", row->name);
    for (pos = 0; pos < row->arity; pos++) {
        gr_graph *g = gr_graph_new();
        gr_var *x[3], *y;
        for (k = 0; k < 3; k++) x[k] = gr_vector(g, GR_F64, k == 0 ? "a" : k == 1 ? "b" : "c");
        x[pos] = NULL;
        CHECK_MSG(gte_build(row, x) == NULL, "%s with a NULL operand %d", fn, pos);
        CHECK_OK_GRAPH(g);
        x[pos] = gr_disconnected_like(gr_vector(g, GR_F64, "m"));
        CHECK_MSG(gte_build(row, x) == NULL, "%s with a marker as operand %d", fn, pos);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
        CHECK_CONTAINS(gr_graph_message(g), fn);
        CHECK_CONTAINS(gr_graph_message(g), "disconnected");
        gr_graph_clear_error(g);
        x[pos] = gr_vector(g, GR_F64, "ok");
        y = gte_build(row, x);
        CHECK_MSG(y != NULL, "%s after an error: %s", fn, gr_graph_message(g));
        CHECK_OK_GRAPH(g);
        gr_graph_free(g);
    }
    for (pos = 1; pos < row->arity; pos++) {
        gr_graph *g = gr_graph_new();
        gr_var *x[3], *ins[3];
        gr_array *arr[3];
        for (k = 0; k < 3; k++) x[k] = gr_tensor(g, GR_F64, 1, k == pos ? &s4 : &s3, k == pos ? "four" : "three");
        CHECK_MSG(gte_build(row, x) == NULL, "%s of (3,) and (4,) at operand %d", fn, pos);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
        CHECK_CONTAINS(gr_graph_message(g), fn);
        CHECK_CONTAINS(gr_graph_message(g), "'four'");
        gr_graph_clear_error(g);
        for (k = 0; k < 3; k++) {
            ins[k] = gr_vector(g, GR_F64, k == pos ? "four" : "three");
            arr[k] = gr_array_new(GR_F64, 1, k == pos ? &s4 : &s3);
        }
        snprintf(label, sizeof label, "%s of (3,) and (4,) at operand %d, at call time", fn, pos);
        gtf_expect_call_error(g, row->arity, ins, (const gr_array *const *)arr, gte_build(row, ins), GR_ERR_SHAPE, label);
        for (k = 0; k < 3; k++) gr_array_free(arr[k]);
        gr_graph_free(g);
    }
}

/* ==== values at special points ======================================================================= */


/* f(a[, b]) over n given values of dtype dt against want (F64 values) */
static void gte_special(const char *name, gr_dtype dt, int n, const double *av, const double *bv, const double *want,
                          gr_dtype odt, double tol) {
    const gte_row *row = gte_row_of(name);
    gr_graph *g = gr_graph_new();
    gr_var *x[2], *y;
    gr_array *a[2] = { NULL, NULL }, *w;
    int64_t len = n;
    int k, arity;
    char label[128];
    CHECK_MSG(row != NULL, "no row %s", name);
    if (!row) { gr_graph_free(g); return; }
    arity = bv ? 2 : 1;
    for (k = 0; k < arity; k++) {
        const double *src = k ? bv : av;
        int j;
        x[k] = gr_vector(g, dt, gte_in_names[k]);
        a[k] = gr_array_new(dt, 1, &len);
        for (j = 0; j < n; j++) {
            if (dt == GR_I64) ((int64_t *)a[k]->data)[j] = (int64_t)src[j];
            else gr_array_set(a[k], j, src[j]);
        }
    }
    y = arity == 1 ? row->b1(x[0]) : row->b2(x[0], x[1]);
    w = gr_array_from(GR_F64, 1, &len, want);
    snprintf(label, sizeof label, "gr_%s special values %s", name, gr_dtype_name(dt));
    gtf_expect(g, arity, x, (const gr_array *const *)a, y, odt, w, tol, label);
    gr_array_free(w);
    gr_array_free(a[0]);
    gr_array_free(a[1]);
    gr_graph_free(g);
}


TEST(test_ew_special_values) {
    static const double nan_a[] = { NAN, 1, NAN, 2, -INFINITY, 0 }, nan_b[] = { 1, NAN, NAN, 3, 5, -0.0 };
    static const double max_w[] = { NAN, NAN, NAN, 3, 5, 0 }, min_w[] = { NAN, NAN, NAN, 2, -INFINITY, 0 };
    static const double sg_a[] = { NAN, -0.0, 0.0, -3, 2, INFINITY, -INFINITY }, sg_w[] = { NAN, 0, 0, -1, 1, 1, -1 };
    static const double rd_a[] = { -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4999, -0.49, 3.5000001 };
    static const double rd_w[] = { -2, -2, 0, 0, 2, 2, 2, 0, 4 };
    static const double big[] = { 1000, -1000, 0, 40, -40 };
    static const double sig_w[] = { 1, 0, 0.5, 1, 4.2483542552915889e-18 };
    static const double sp_w[] = { 1000, 0, 0.69314718055994530942, 40, 4.2483542552915889e-18 };
    static const double md_a[] = { -7, 7, -7.5, 7.5, 0, -6 }, md_b[] = { 3, -3, 2, -2, 5, 3 }, md_w[] = { 2, -2, 0.5, -0.5, 0, 0 };
    static const double im_a[] = { -7, 7, 7, -7, 5, -9 }, im_b[] = { 3, -3, 3, -3, 0, -9 }, im_w[] = { 2, -2, 1, -1, 0, 0 };
    static const double dz_a[] = { 1, -1, 0, 7, -7 }, dz_b[] = { 0, 0, 0, 2, 2 }, dz_w[] = { INFINITY, -INFINITY, NAN, 3.5, -3.5 };
    static const double lg_a[] = { 0, -1, INFINITY, 1 }, lg_w[] = { -INFINITY, NAN, INFINITY, 0 };
    static const double ex_a[] = { 1000, -1000, 0 }, ex_w[] = { INFINITY, 0, 1 };
    static const double cl_nan[] = { NAN };
    static const double cb_a[] = { -8, 27, 0, -0.0, INFINITY, -INFINITY, NAN, 1e-300, -0.125 };
    static const double cb_w[] = { -2, 3, 0, -0.0, INFINITY, -INFINITY, NAN, 1e-100, -0.5 };
    gte_special("maximum", GR_F64, 6, nan_a, nan_b, max_w, GR_F64, 0);
    gte_special("maximum", GR_F32, 6, nan_a, nan_b, max_w, GR_F32, 0);
    gte_special("minimum", GR_F64, 6, nan_a, nan_b, min_w, GR_F64, 0);
    gte_special("minimum", GR_F32, 6, nan_a, nan_b, min_w, GR_F32, 0);
    gte_special("sign", GR_F64, 7, sg_a, NULL, sg_w, GR_F64, 0);
    gte_special("sign", GR_F32, 7, sg_a, NULL, sg_w, GR_F32, 0);
    gte_special("round", GR_F64, 9, rd_a, NULL, rd_w, GR_F64, 0);
    gte_special("round", GR_F32, 8, rd_a, NULL, rd_w, GR_F32, 0);
    gte_special("sigmoid", GR_F64, 5, big, NULL, sig_w, GR_F64, GTF_TOL_F64);
    gte_special("sigmoid", GR_F32, 4, big, NULL, sig_w, GR_F32, GTF_TOL_F32);
    gte_special("softplus", GR_F64, 5, big, NULL, sp_w, GR_F64, GTF_TOL_F64);
    gte_special("softplus", GR_F32, 4, big, NULL, sp_w, GR_F32, GTF_TOL_F32);
    gte_special("mod", GR_F64, 6, md_a, md_b, md_w, GR_F64, 0);
    gte_special("mod", GR_F32, 6, md_a, md_b, md_w, GR_F32, 0);
    gte_special("mod", GR_I64, 6, im_a, im_b, im_w, GR_I64, 0);   /* x mod 0 is 0, as NumPy */
    gte_special("div", GR_F64, 5, dz_a, dz_b, dz_w, GR_F64, 0);
    gte_special("div", GR_I64, 5, dz_a, dz_b, dz_w, GR_F64, 0);    /* true division of integers */
    gte_special("log", GR_F64, 4, lg_a, NULL, lg_w, GR_F64, 0);
    gte_special("exp", GR_F64, 3, ex_a, NULL, ex_w, GR_F64, 0);
    gte_special("exp", GR_F32, 3, ex_a, NULL, ex_w, GR_F32, 0);
    gte_special("sqrt", GR_F64, 1, cl_nan, NULL, cl_nan, GR_F64, 0);
    gte_special("abs", GR_F64, 1, cl_nan, NULL, cl_nan, GR_F64, 0);
    gte_special("cbrt", GR_F64, 9, cb_a, NULL, cb_w, GR_F64, GTF_TOL_F64);
    gte_special("cbrt", GR_F32, 7, cb_a, NULL, cb_w, GR_F32, GTF_TOL_F32);
}


/* integer powers: wrap-around modulo 2^64, 0^0 = 1, negative exponents truncate toward zero */
TEST(test_ew_int_pow) {
    static const int64_t base[] = { 2, 3, -2, 0, 0, 2, 1, -1, -1, 7, -3, 5 };
    static const int64_t ex[] = { 62, 41, 63, 0, 5, -1, -5, -3, -2, 0, 3, 27 };
    int64_t n = (int64_t)(sizeof base / sizeof base[0]), k;
    gr_graph *g = gr_graph_new();
    gr_var *x[2], *y;
    gr_array *a[2], *w = gr_array_new(GR_I64, 1, &n);
    x[0] = gr_vector(g, GR_I64, "a");
    x[1] = gr_vector(g, GR_I64, "b");
    y = gr_pow(x[0], x[1]);
    a[0] = gr_array_from(GR_I64, 1, &n, base);
    a[1] = gr_array_from(GR_I64, 1, &n, ex);
    for (k = 0; k < n; k++) ((int64_t *)w->data)[k] = gte_ipow(base[k], ex[k]);
    CHECK_EQ_INT(((int64_t *)w->data)[2], INT64_MIN);      /* the reference itself: (-2)^63 */
    CHECK_EQ_INT(((int64_t *)w->data)[0], (int64_t)1 << 62);
    gtf_expect(g, 2, x, (const gr_array *const *)a, y, GR_I64, w, 0, "gr_pow int64");
    gr_array_free(a[0]);
    gr_array_free(a[1]);
    gr_array_free(w);
    gr_graph_free(g);
}


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


/* ==== dtype promotion ============================================================================ */

/* op(a of dtype da, b of dtype db): the static dtype and the result's dtype are `want`, and the
   values match the plain computation in double on the inputs' values */
static void gte_promote2(const char *what, gr_var *(*op)(gr_var *, gr_var *), double (*ref)(double, double, double),
                         gr_dtype da, gr_dtype db, gr_dtype want, double tol, double lo, double hi) {
    gr_graph *g = gr_graph_new();
    gr_var *x[2], *y;
    gr_array *a[2], *w;
    int64_t shape[2] = { 2, 3 }, k;
    gtf_rng rng;
    char label[128];
    rng.s = 99 + (uint64_t)da * 4 + (uint64_t)db;
    x[0] = gr_matrix(g, da, "a");
    x[1] = gr_vector(g, db, "b");
    a[0] = gtf_random(&rng, da, 2, shape, lo, hi);
    a[1] = gtf_random(&rng, db, 1, shape + 1, lo, hi);
    if (db == GR_BOOL && lo > 0) for (k = 0; k < 3; k++) ((uint8_t *)a[1]->data)[k] = 1;   /* no zeros when lo > 0 */
    y = op(x[0], x[1]);
    w = gr_array_new(GR_F64, 2, shape);
    for (k = 0; k < 6; k++) ((double *)w->data)[k] = ref(gr_array_get(a[0], k), gr_array_get(a[1], k % 3), 0);
    snprintf(label, sizeof label, "%s(%s, %s)", what, gr_dtype_name(da), gr_dtype_name(db));
    CHECK_MSG(y && gr_var_dtype(y) == want, "%s: static dtype %s, want %s", label, y ? gr_dtype_name(gr_var_dtype(y)) : "none",
              gr_dtype_name(want));
    gtf_expect(g, 2, x, (const gr_array *const *)a, y, want, w, tol, label);
    gr_array_free(a[0]);
    gr_array_free(a[1]);
    gr_array_free(w);
    gr_graph_free(g);
}

TEST(test_ew_promotion) {
    gte_promote2("gr_add", gr_add, gte_f_add, GR_F32, GR_F64, GR_F64, 0, 1, 4);
    gte_promote2("gr_add", gr_add, gte_f_add, GR_F64, GR_F32, GR_F64, 0, 1, 4);
    gte_promote2("gr_add", gr_add, gte_f_add, GR_F32, GR_I64, GR_F32, 0, 1, 4);
    gte_promote2("gr_mul", gr_mul, gte_f_mul, GR_I64, GR_F32, GR_F32, 0, 1, 4);
    gte_promote2("gr_add", gr_add, gte_f_add, GR_F64, GR_I64, GR_F64, 0, 1, 4);
    gte_promote2("gr_add", gr_add, gte_f_add, GR_F32, GR_BOOL, GR_F32, 0, 1, 4);
    gte_promote2("gr_add", gr_add, gte_f_add, GR_I64, GR_I64, GR_I64, 0, 1, 4);
    gte_promote2("gr_sub", gr_sub, gte_f_sub, GR_I64, GR_BOOL, GR_I64, 0, 1, 4);
    gte_promote2("gr_add", gr_add, gte_f_add, GR_BOOL, GR_BOOL, GR_I64, 0, 1, 4);
    gte_promote2("gr_div", gr_div, gte_f_div, GR_I64, GR_I64, GR_F64, 0, 1, 4);
    gte_promote2("gr_div", gr_div, gte_f_div, GR_BOOL, GR_BOOL, GR_F64, 0, 1, 4);
    gte_promote2("gr_div", gr_div, gte_f_div, GR_F32, GR_I64, GR_F32, 0, 1, 4);
    gte_promote2("gr_div", gr_div, gte_f_div, GR_F32, GR_F64, GR_F64, 0, 1, 4);
    gte_promote2("gr_pow", gr_pow, gte_f_pow, GR_F32, GR_I64, GR_F32, GTF_TOL_F32, 1, 4);
    gte_promote2("gr_gt", gr_gt, gte_f_gt, GR_F32, GR_F64, GR_BOOL, 0, 1, 4);
    gte_promote2("gr_eq", gr_eq, gte_f_eq, GR_I64, GR_F32, GR_BOOL, 0, -1, 1);
    gte_promote2("gr_le", gr_le, gte_f_le, GR_BOOL, GR_I64, GR_BOOL, 0, -1, 1);
    gte_promote2("gr_arctan2", gr_arctan2, gte_f_arctan2, GR_I64, GR_I64, GR_F64, GTF_TOL_F64, 1, 4);
    gte_promote2("gr_arctan2", gr_arctan2, gte_f_arctan2, GR_F32, GR_I64, GR_F32, GTF_TOL_F32, 1, 4);
    gte_promote2("gr_logical_and", gr_logical_and, gte_f_logical_and, GR_F64, GR_I64, GR_BOOL, 0, -1, 1);
    gte_promote2("gr_maximum", gr_maximum, gte_f_maximum, GR_I64, GR_F64, GR_F64, 0, -1, 1);
}

/* unary float functions of integers and bools give F64; of F32, F32 */
TEST(test_ew_unary_dtypes) {
    static const gr_dtype in[4] = { GR_F64, GR_F32, GR_I64, GR_BOOL };
    static const gr_dtype exp_out[4] = { GR_F64, GR_F32, GR_F64, GR_F64 };
    static const gr_dtype neg_out[4] = { GR_F64, GR_F32, GR_I64, GR_I64 };
    static const gr_dtype cmp_out[4] = { GR_BOOL, GR_BOOL, GR_BOOL, GR_BOOL };
    int k;
    for (k = 0; k < 4; k++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, in[k], "x");
        CHECK_MSG(gr_var_dtype(gr_exp(x)) == exp_out[k], "exp of %s", gr_dtype_name(in[k]));
        CHECK_MSG(gr_var_dtype(gr_sqrt(x)) == exp_out[k], "sqrt of %s", gr_dtype_name(in[k]));
        CHECK_MSG(gr_var_dtype(gr_sigmoid(x)) == exp_out[k], "sigmoid of %s", gr_dtype_name(in[k]));
        CHECK_MSG(gr_var_dtype(gr_neg(x)) == neg_out[k], "neg of %s", gr_dtype_name(in[k]));
        CHECK_MSG(gr_var_dtype(gr_floor(x)) == neg_out[k], "floor of %s", gr_dtype_name(in[k]));
        CHECK_MSG(gr_var_dtype(gr_logical_not(x)) == cmp_out[k], "logical_not of %s", gr_dtype_name(in[k]));
        CHECK_MSG(gr_var_dtype(gr_lt(x, x)) == cmp_out[k], "lt of %s", gr_dtype_name(in[k]));
        CHECK_STATUS(gr_graph_status(g), GR_OK);
        gr_graph_free(g);
    }
}

/* gr_const is weak: it takes the other operand's float dtype; alone it is F64; with integers it is
   I64 when integral, else F64 */
TEST(test_ew_weak_const) {
    gr_graph *g = gr_graph_new();
    gr_var *xf = gr_vector(g, GR_F32, "xf"), *xi = gr_vector(g, GR_I64, "xi"), *xd = gr_vector(g, GR_F64, "xd");
    gr_var *c01 = gr_const(g, 0.1), *c3 = gr_const(g, 3.0), *y;
    float fv[3] = { 1.5f, -2.25f, 1e-3f };
    int64_t iv[3] = { 7, -4, 0 }, n = 3, k;
    gr_array *af = gr_array_from(GR_F32, 1, &n, fv), *ai = gr_array_from(GR_I64, 1, &n, iv), *w = gr_array_new(GR_F64, 1, &n);
    gr_array *wi = gr_array_new(GR_I64, 1, &n);
    const gr_array *arr[1];
    CHECK(gr_var_dtype(c01) == GR_F64);
    CHECK(gr_var_ndim(c01) == 0);
    /* F32 * 0.1 stays F32, computed with the constant rounded to float */
    y = gr_mul(xf, c01);
    for (k = 0; k < 3; k++) ((double *)w->data)[k] = (double)(float)((double)fv[k] * (double)(float)0.1);
    arr[0] = af;
    gtf_expect(g, 1, &xf, arr, y, GR_F32, w, 0, "F32 * gr_const(0.1)");
    y = gr_add(c01, xf);                                  /* either side */
    for (k = 0; k < 3; k++) ((double *)w->data)[k] = (double)(float)((double)(float)0.1 + (double)fv[k]);
    gtf_expect(g, 1, &xf, arr, y, GR_F32, w, 0, "gr_const(0.1) + F32");
    /* I64 + 3 stays I64; I64 + 0.1 becomes F64 */
    y = gr_add(xi, c3);
    for (k = 0; k < 3; k++) ((int64_t *)wi->data)[k] = iv[k] + 3;
    arr[0] = ai;
    gtf_expect(g, 1, &xi, arr, y, GR_I64, wi, 0, "I64 + gr_const(3)");
    y = gr_add(xi, c01);
    for (k = 0; k < 3; k++) ((double *)w->data)[k] = (double)iv[k] + 0.1;
    gtf_expect(g, 1, &xi, arr, y, GR_F64, w, 0, "I64 + gr_const(0.1)");
    y = gr_mul(xd, c01);
    CHECK(y && gr_var_dtype(y) == GR_F64);
    /* a comparison with a weak constant is BOOL and compares in the operand's dtype */
    y = gr_gt(xf, c01);
    for (k = 0; k < 3; k++) ((double *)w->data)[k] = (double)((float)fv[k] > (float)0.1);
    arr[0] = af;
    gtf_expect(g, 1, &xf, arr, y, GR_BOOL, w, 0, "F32 > gr_const(0.1)");
    /* constants alone: F64, including an integral one; no inputs */
    {
        int64_t none = 0;
        gr_array *w0 = gr_array_new(GR_F64, 0, &none);
        ((double *)w0->data)[0] = 3.1;
        gtf_expect(g, 0, NULL, NULL, gr_add(c3, c01), GR_F64, w0, 0, "gr_const(3) + gr_const(0.1)");
        ((double *)w0->data)[0] = 3.0;
        gtf_expect(g, 0, NULL, NULL, gr_abs(c3), GR_F64, w0, 0, "gr_abs(gr_const(3))");
        ((double *)w0->data)[0] = 6.0;
        gtf_expect(g, 0, NULL, NULL, gr_add(c3, c3), GR_F64, w0, 0, "gr_const(3) + gr_const(3)");
        gr_array_free(w0);
    }
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    gr_array_free(af);
    gr_array_free(ai);
    gr_array_free(w);
    gr_array_free(wi);
    gr_graph_free(g);
}

/* where and clip with mixed dtypes and broadcasting over three operands */
TEST(test_ew_select_mixed) {
    gr_graph *g = gr_graph_new();
    int64_t s34[2] = { 3, 4 }, s4 = 4, s31[2] = { 3, 1 }, k;
    gr_var *c = gr_tensor(g, GR_BOOL, 2, s34, "c"), *a = gr_tensor(g, GR_F32, 1, &s4, "a"), *b = gr_tensor(g, GR_I64, 2, s31, "b");
    gr_var *ins[3], *y;
    gr_array *arr[3], *w = gr_array_new(GR_F64, 2, s34);
    gtf_rng rng;
    rng.s = 7;
    ins[0] = c; ins[1] = a; ins[2] = b;
    arr[0] = gtf_random(&rng, GR_BOOL, 2, s34, 0, 1);
    arr[1] = gtf_random(&rng, GR_F32, 1, &s4, -3, 3);
    arr[2] = gtf_random(&rng, GR_I64, 2, s31, -9, 9);
    y = gr_where(c, a, b);                    /* F32 with I64: F32; the condition is BOOL */
    for (k = 0; k < 12; k++)
        ((double *)w->data)[k] = gr_array_get(arr[0], k) != 0 ? gr_array_get(arr[1], k % 4) : gr_array_get(arr[2], k / 4);
    gtf_expect(g, 3, ins, (const gr_array *const *)arr, y, GR_F32, w, 0, "gr_where(bool (3,4), f32 (4,), i64 (3,1))");
    /* clip(a, b, 1.5): F32 (the weak bound takes F32) */
    y = gr_clip(a, b, gr_const(g, 1.5));
    for (k = 0; k < 12; k++) {
        double x = gr_array_get(arr[1], k % 4), lo = gr_array_get(arr[2], k / 4);
        ((double *)w->data)[k] = x < lo ? lo : x > 1.5 ? 1.5 : x;
    }
    gtf_expect(g, 3, ins, (const gr_array *const *)arr, y, GR_F32, w, 0, "gr_clip(f32 (4,), i64 (3,1), 1.5)");
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    for (k = 0; k < 3; k++) gr_array_free(arr[k]);
    gr_array_free(w);
    gr_graph_free(g);
}



/* shapes that do not broadcast: static ones fail when built, call-time ones when called */
TEST(test_ew_shape_errors) {
    gr_graph *g = gr_graph_new();
    int64_t s34[2] = { 3, 4 }, s3 = 3;
    gr_var *a = gr_tensor(g, GR_F64, 2, s34, "a"), *b = gr_tensor(g, GR_F64, 1, &s3, "b"), *m, *v, *y;
    gr_var *ins[2];
    gr_array *arr[2];
    CHECK(gr_add(a, b) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    gr_graph_clear_error(g);
    m = gr_matrix(g, GR_F64, "m");
    v = gr_vector(g, GR_F64, "v");
    y = gr_add(m, v);
    ins[0] = m; ins[1] = v;
    arr[0] = gr_array_new(GR_F64, 2, s34);
    arr[1] = gr_array_new(GR_F64, 1, &s3);
    gtf_expect_call_error(g, 2, ins, (const gr_array *const *)arr, y, GR_ERR_SHAPE, "(3,4) + (3,) at call time");
    gr_array_free(arr[0]);
    gr_array_free(arr[1]);
    gr_graph_free(g);
}

/* int64 arithmetic wraps modulo 2^64 (NumPy), with no undefined behaviour (the suite runs under UBSan) */
TEST(test_int64_wraps) {
    int64_t n = 2;
    int64_t xs[2] = { INT64_MAX, INT64_MIN };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_I64, "x"), *outs[6];
    gr_array *xa = gr_array_from(GR_I64, 1, &n, xs);
    const gr_array *in[1], *out[6];
    gr_fn *f;
    outs[0] = gr_add(x, x); outs[1] = gr_sub(x, gr_neg(x)); outs[2] = gr_mul(x, gr_const(g, 3));
    outs[3] = gr_neg(x); outs[4] = gr_sqr(x); outs[5] = gr_abs(x);
    f = gr_function(1, &x, 6, outs, NULL);
    in[0] = xa;
    CHECK_STATUS(gr_call(f, in, out), GR_OK);
    CHECK(((const int64_t *)out[0]->data)[0] == -2 && ((const int64_t *)out[0]->data)[1] == 0);
    CHECK(((const int64_t *)out[1]->data)[0] == -2 && ((const int64_t *)out[1]->data)[1] == 0);
    CHECK(((const int64_t *)out[2]->data)[0] == INT64_MAX - 2 && ((const int64_t *)out[2]->data)[1] == INT64_MIN);
    CHECK(((const int64_t *)out[3]->data)[0] == -INT64_MAX && ((const int64_t *)out[3]->data)[1] == INT64_MIN);
    CHECK(((const int64_t *)out[4]->data)[0] == 1 && ((const int64_t *)out[4]->data)[1] == 0);
    CHECK(((const int64_t *)out[5]->data)[0] == INT64_MAX && ((const int64_t *)out[5]->data)[1] == INT64_MIN);
    gr_fn_free(f);
    gr_array_free(xa);
    gr_graph_free(g);
}

/* ==== Cast ============================================================================================ */


static void gts_cast_values(gr_dtype src, gr_dtype dst, int dyn) {
    static const double fv[] = { -2.7, -0.5, -0.0, 0.0, 0.3, 2.7, 1e10, -1e10, 16777217.0, 123456789.987, 3.5, -3.5 };
    static const int64_t iv[] = { -3, 0, 2, 9007199254740993LL, -9007199254740993LL, 16777217, ((int64_t)1 << 60) + ((int64_t)1 << 36) + 1,
                                  INT64_MAX, INT64_MIN, 1, -1 };
    static const uint8_t bv[] = { 0, 1, 1, 0 };
    int64_t n = src == GR_I64 ? (int64_t)(sizeof iv / sizeof iv[0]) : src == GR_BOOL ? 4 : (int64_t)(sizeof fv / sizeof fv[0]), k;
    gr_graph *g = gr_graph_new();
    gr_array *xa = gr_array_new(src, 1, &n), *want = gts_want(dst, 1, &n);
    gr_var *x = gtf_input(g, src, 1, &n, dyn, "x"), *y;
    char label[96];
    for (k = 0; k < n; k++) {
        if (src == GR_F64) ((double *)xa->data)[k] = fv[k];
        else if (src == GR_F32) ((float *)xa->data)[k] = (float)fv[k];
        else if (src == GR_I64) ((int64_t *)xa->data)[k] = iv[k];
        else ((uint8_t *)xa->data)[k] = bv[k];
    }
    for (k = 0; k < n; k++) {       /* the C conversions, straight from the source type */
        double d = src == GR_F64 ? fv[k] : src == GR_F32 ? (double)(float)fv[k] : 0;
        switch (dst) {
        case GR_F64:
            ((double *)want->data)[k] = src == GR_I64 ? (double)iv[k] : src == GR_BOOL ? (double)bv[k] : d;
            break;
        case GR_F32:
            ((double *)want->data)[k] = src == GR_I64 ? (double)(float)iv[k] : src == GR_BOOL ? (double)bv[k] : (double)(float)d;
            break;
        case GR_I64:           /* floats truncate toward zero */
            ((int64_t *)want->data)[k] = src == GR_I64 ? iv[k] : src == GR_BOOL ? (int64_t)bv[k] : (int64_t)d;
            break;
        default:               /* nonzero is true */
            ((int64_t *)want->data)[k] = src == GR_I64 ? iv[k] != 0 : src == GR_BOOL ? bv[k] != 0 : d != 0;
            break;
        }
    }
    y = gr_cast(x, dst);
    snprintf(label, sizeof label, "gr_cast %s -> %s, %s", gr_dtype_name(src), gr_dtype_name(dst), dyn ? "unknown shape" : "static shape");
    gts_expect1(g, x, xa, y, dst, want, 0, label);
    gr_array_free(xa);
    gr_array_free(want);
    gr_graph_free(g);
}

TEST(gts_op_Cast) {
    int s, d, dyn;
    for (s = 0; s < 4; s++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) gts_cast_values(gts_dtypes[s], gts_dtypes[d], dyn);
    {   /* NaN: stays NaN in floats, is true as a bool; 0-d and empty operands */
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_scalar(g, GR_F64, "x"), *e = gr_matrix(g, GR_F32, "e");
        gr_array *xa = gr_array_scalar(GR_F64, NAN), *w = gr_array_scalar(GR_F64, NAN), *wi = gr_array_new(GR_I64, 0, NULL);
        int64_t s03[2] = { 0, 3 };
        gr_array *ea = gr_array_new(GR_F32, 2, s03), *ew = gr_array_new(GR_I64, 2, s03);
        ((int64_t *)wi->data)[0] = 1;
        gts_expect1(g, x, xa, gr_cast(x, GR_F32), GR_F32, w, 0, "gr_cast(NaN) -> float32");
        gts_expect1(g, x, xa, gr_cast(x, GR_BOOL), GR_BOOL, wi, 0, "gr_cast(NaN) -> bool");
        gr_array_set(xa, 0, -7.9);
        ((int64_t *)wi->data)[0] = -7;
        gts_expect1(g, x, xa, gr_cast(x, GR_I64), GR_I64, wi, 0, "gr_cast(-7.9) 0-d -> int64");
        gts_expect1(g, e, ea, gr_cast(e, GR_I64), GR_I64, ew, 0, "gr_cast of an empty (0,3) float32 -> int64");
        gr_array_free(xa); gr_array_free(w); gr_array_free(wi); gr_array_free(ea); gr_array_free(ew);
        gr_graph_free(g);
    }
}


static gr_var *gts_cast_f64(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_cast(x[0], GR_F64); }
static gr_var *gts_cast_i64(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_cast(x[0], GR_I64); }
static gr_var *gts_cast_bool(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_cast(x[0], GR_BOOL); }
/* x1 * trunc(x0): the integer path (float -> I64 -> float) carries no derivative to x0 */
static gr_var *gts_cast_int_path(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_mul(x[1], gr_cast(x[0], GR_I64)); }
/* sin(cast(x, F64)) * x1: the cast feeds a float op; in the F32 run a real Cast node */
static gr_var *gts_cast_f64_sin(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_mul(gr_sin(gr_cast(x[0], GR_F64)), x[1]); }

static const gtd_spec specs_Cast[] = {
    { "Cast", "to F64 (a Cast node in the F32 run; the identity in F64)", gts_cast_f64, NULL, 1, { M34(-2, 2) }, GG },
    { "Cast", "to F64 under sin, times x1", gts_cast_f64_sin, NULL, 2, { M34(-2, 2), V4(-2, 2) }, GG },
    { "Cast", "to I64 (truncation), in (0.1, 0.9)", gts_cast_i64, NULL, 1, { M34(0.1, 0.9) }, ND },
    { "Cast", "to I64 (truncation), in (-2.9, -2.1)", gts_cast_i64, NULL, 1, { M34(-2.9, -2.1) }, ND },
    { "Cast", "to BOOL", gts_cast_bool, NULL, 1, { M34(0.2, 2) }, ND },
    { "Cast", "x1 * trunc(x0): an integer path in a float graph", gts_cast_int_path, NULL, 2, { M34(1.1, 2.9), V4(-2, 2) }, GG },
    GTD_END
};

/* float64 -> float32 and back: the gradient is the cotangent cast back (exactly), the R-op the
   tangent cast forward; finite differences cannot see this in float64 (float32's resolution) */
TEST(test_deriv_cast_exact) {
    static const double xv[3] = { 0.1, -1.0 / 3.0, 2.5 }, wv[3] = { 1.0 / 7.0, 3.0, -0.2 }, vv[3] = { 0.3, -0.7, 1e-3 };
    const double *vals[3];
    double res[3 * 3];
    int dir;
    vals[0] = xv; vals[1] = wv; vals[2] = vv;
    for (dir = 0; dir < 2; dir++) {
        gr_dtype from = dir ? GR_F32 : GR_F64, to = dir ? GR_F64 : GR_F32;
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, from, "x"), *w = gr_vector(g, to, "w"), *v = gr_vector(g, from, "v"), *ins[3], *outs[3], *y, *r = NULL;
        int k;
        y = gr_cast(x, to);
        ins[0] = x; ins[1] = w; ins[2] = v;
        outs[0] = gr_grad1(gr_sum(gr_mul(w, y)), x);
        CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, &r, NULL), GR_OK);
        outs[1] = r;
        CHECK(outs[0] && gr_var_dtype(outs[0]) == from && r && gr_var_dtype(r) == to);
        CHECK(gts_eval(3, ins, vals, 3, 2, outs, res));
        for (k = 0; k < 3; k++) {
            CHECK_NEAR(res[k], (double)(float)wv[k], 0);     /* w is float32, or cast to float32 on the way back */
            CHECK_NEAR(res[3 + k], (double)(float)vv[k], 0);
        }
        gr_graph_free(g);
    }
}

/* an unknown dtype is GR_ERR_VALUE naming gr_cast and the variable; NULL and marker operands */
TEST(test_cast_errors) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    CHECK(gr_cast(NULL, GR_F32) == NULL);
    CHECK_OK_GRAPH(g);
    CHECK(gr_cast(x, (gr_dtype)7) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_cast");
    CHECK_CONTAINS(gr_graph_message(g), "'x'");
    gr_graph_clear_error(g);
    CHECK(gr_cast(x, (gr_dtype)-1) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    CHECK(gr_cast(gr_disconnected_like(x), GR_F32) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_cast");
    gr_graph_clear_error(g);
    CHECK(gr_cast(x, GR_F64) == x);                      /* the same dtype: x itself */
    CHECK(gr_var_dtype(gr_cast(x, GR_I64)) == GR_I64);
    CHECK_OK_GRAPH(g);
    gr_graph_free(g);
}

GT_CASES(Cast) = {
    GT_VALUES(gts_op_Cast),
    GT_SPECS(specs_Cast),
    GT_DERIVS(test_deriv_cast_exact),
    GT_ERRORS(test_cast_errors),
    GT_END
};

/* ==== Fused: elementwise groups of gr_function, one pass each ======================================== */

TEST(gts_op_Fused) {
    gtf_rng rng;
    rng.s = 150;
    {   /* W2's expression over 1000 elements (blocks of 256 and a remainder): one node, right values */
        int64_t n = 1000, k;
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *xx = gr_mul(x, x);
        gr_var *y = gr_add(gr_add(gr_mul(gr_sin(x), gr_exp(gr_neg(xx))), gr_log1p(xx)), gr_mul(gr_tanh(x), x));
        gr_array *a = gtf_random(&rng, GR_F64, 1, &n, -2, 2), *want = gr_array_new(GR_F64, 1, &n);
        gr_fn *f = gr_function(1, &x, 1, &y, NULL);
        char buf[2048];
        for (k = 0; k < n; k++) {
            double v = gr_array_get(a, k);
            gr_array_set(want, k, sin(v) * exp(-v * v) + log1p(v * v) + tanh(v) * v);
        }
        gts_fn_print(f, buf, sizeof buf);
        CHECK_MSG(gr_fn_node_count(f) == 1 && strstr(buf, "Fused") != NULL, "not one fused node:\n%s", buf);
        gtf_expect(g, 1, &x, (const gr_array *const *)&a, y, GR_F64, want, GTF_TOL_F64, "fused W2 expression");
        gr_fn_free(f);
        gr_array_free(a); gr_array_free(want);
        gr_graph_free(g);
    }
    {   /* broadcasting externals (3,4), (4,), (3,1), a bool inside, a cast, float32, two outputs */
        int64_t s34[2] = { 3, 4 }, s4 = 4, s31[2] = { 3, 1 }, i, j;
        gr_graph *g = gr_graph_new();
        /* static shapes: with unknown ones, a's first axis could be 1 and broadcast against c's 3,
           so mul(a, b) and add(., c) could differ in shape and are not fused together */
        gr_var *a = gr_tensor(g, GR_F32, 2, s34, "a"), *b = gr_tensor(g, GR_F32, 1, &s4, "b"), *c = gr_tensor(g, GR_F32, 2, s31, "c"), *ins[3], *outs[2];
        gr_var *t = gr_add(gr_mul(a, b), c), *u = gr_where(gr_gt(t, gr_const(g, 0)), t, gr_neg(t));
        gr_var *v = gr_mul(gr_cast(gr_lt(a, b), GR_F32), u);
        gr_array *arr[3], *w1 = gr_array_new(GR_F64, 2, s34), *w2 = gr_array_new(GR_F64, 2, s34);
        gr_fn *f;
        const gr_array *res[2];
        char buf[2048];
        arr[0] = gtf_random(&rng, GR_F32, 2, s34, -2, 2);
        arr[1] = gtf_random(&rng, GR_F32, 1, &s4, -2, 2);
        arr[2] = gtf_random(&rng, GR_F32, 2, s31, -2, 2);
        for (i = 0; i < 3; i++)
            for (j = 0; j < 4; j++) {
                float av = (float)gr_array_get(arr[0], i * 4 + j), bv = (float)gr_array_get(arr[1], j), cv = (float)gr_array_get(arr[2], i);
                float tv = av * bv + cv, uv = tv > 0 ? tv : -tv;
                gr_array_set(w1, i * 4 + j, uv);
                gr_array_set(w2, i * 4 + j, (av < bv ? 1.0f : 0.0f) * uv);
            }
        ins[0] = a; ins[1] = b; ins[2] = c; outs[0] = u; outs[1] = v;
        f = gr_function(3, ins, 2, outs, NULL);
        gts_fn_print(f, buf, sizeof buf);
        CHECK_MSG(gr_fn_node_count(f) == 1, "not one fused node:\n%s", buf);
        CHECK(f && gr_call(f, (const gr_array *const *)arr, res) == GR_OK);
        if (f) {
            gtf_same(res[0], GR_F32, w1, GTF_TOL_F32, "fused output 0");
            gtf_same(res[1], GR_F32, w2, GTF_TOL_F32, "fused output 1");
        }
        gtf_expect(g, 3, ins, (const gr_array *const *)arr, v, GR_F32, w2, GTF_TOL_F32, "fused with a cast and a bool");
        gr_fn_free(f);
        for (i = 0; i < 3; i++) gr_array_free(arr[i]);
        gr_array_free(w1); gr_array_free(w2);
        gr_graph_free(g);
    }
    {   /* a scalar chain of 10000 links and its gradient: one fused node, the plain C values */
        int k, n = 10000;
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_scalar(g, GR_F64, "x"), *y = x, *c = gr_const(g, 1.0 / n), *outs[2];
        gr_array *xa = gr_array_scalar(GR_F64, 0.5);
        const gr_array *in[1], *res[2];
        gr_fn *f;
        double yv = 0.5, gv = 1, *ys = (double *)malloc(sizeof(double) * (size_t)n);
        for (k = 0; k < n; k++) y = gr_add(gr_mul(gr_sin(y), c), y);
        outs[0] = y;
        outs[1] = gr_grad1(y, x);
        f = gr_function(1, &x, 2, outs, NULL);
        CHECK(f && gr_fn_node_count(f) == 1);
        for (k = 0; k < n; k++) { ys[k] = yv; yv = sin(yv) / n + yv; }
        for (k = n - 1; k >= 0; k--) gv *= cos(ys[k]) / n + 1;
        in[0] = xa;
        CHECK(f && gr_call(f, in, res) == GR_OK);
        if (f) { CHECK_NEAR(gr_array_get(res[0], 0), yv, 1e-12); CHECK_NEAR(gr_array_get(res[1], 0), gv, 1e-12); }
        free(ys);
        gr_fn_free(f);
        gr_array_free(xa);
        gr_graph_free(g);
    }
}

/* a * b + c (then exp when ex) under broadcasting, in dt's arithmetic (float for F32: the product
   rounded to float, then the sum), into want (F64 for floats, I64 for integers) */
static void gte_muladd_ref(const gr_array *a, const gr_array *b, const gr_array *c, int ex, gr_array *want) {
    int64_t k;
    for (k = 0; k < want->size; k++) {
        int64_t ia = gtf_bcast_index(k, want->ndim, want->shape, a->ndim, a->shape);
        int64_t ib = gtf_bcast_index(k, want->ndim, want->shape, b->ndim, b->shape);
        int64_t ic = gtf_bcast_index(k, want->ndim, want->shape, c->ndim, c->shape);
        if (a->dtype == GR_F32) {
            float p = (float)gr_array_get(a, ia) * (float)gr_array_get(b, ib), v = p + (float)gr_array_get(c, ic);
            gr_array_set(want, k, ex ? exp((double)v) : (double)v);
        } else if (a->dtype == GR_F64) {
            double p = gr_array_get(a, ia) * gr_array_get(b, ib), v = p + gr_array_get(c, ic);
            gr_array_set(want, k, ex ? exp(v) : v);
        } else
            gr_array_set(want, k, (double)(int64_t)((uint64_t)gts_int_at(a, ia) * (uint64_t)gts_int_at(b, ib) + (uint64_t)gts_int_at(c, ic)));
    }
}

/* one case of gts_op_Fused_muladd: y, built from a (sa), b (sb), c (sc) of dtype dt by `form`, is
   one Fused node running `prog`, and evaluates to want at both optimize levels */
enum { GTE_MA_AB_C, GTE_MA_C_AB, GTE_MA_OUTER, GTE_MA_EXP, GTE_MA_TWICE_A };
static void gte_muladd_case(gtf_rng *rng, gr_dtype dt, int form, int na, const int64_t *sa, int nb, const int64_t *sb, int nc,
                            const int64_t *sc, int no, const int64_t *so, const char *prog, const char *label) {
    gr_graph *g = gr_graph_new();
    gr_var *a = gtf_input(g, dt, na, sa, 0, "a"), *b = gtf_input(g, dt, nb, sb, 0, "b"), *c = gtf_input(g, dt, nc, sc, 0, "c");
    gr_var *ins[3], *y = NULL;
    gr_array *arr[3], *want = gts_want(dt, no, so);
    gr_fn *f;
    char buf[4096], lbl[160];
    arr[0] = gts_random(rng, dt, na, sa, -2, 2, -50, 50);
    arr[1] = gts_random(rng, dt, nb, sb, -2, 2, -50, 50);
    arr[2] = gts_random(rng, dt, nc, sc, -2, 2, -50, 50);
    ins[0] = a; ins[1] = b; ins[2] = c;
    switch (form) {
    case GTE_MA_AB_C: y = gr_add(gr_mul(a, b), c); break;
    case GTE_MA_C_AB: y = gr_add(c, gr_mul(a, b)); break;
    case GTE_MA_OUTER: {                                  /* c + outer(a, b) of vectors, as a gradient makes it */
        int col[2] = { 0, GR_NEWAXIS }, row[2] = { GR_NEWAXIS, 0 };
        y = gr_add(c, gr_mul(gr_dimshuffle(a, 2, col), gr_dimshuffle(b, 2, row)));
        break;
    }
    case GTE_MA_EXP: y = gr_exp(gr_add(gr_mul(a, b), c)); break;
    case GTE_MA_TWICE_A: y = gr_add(gr_mul(gr_const(g, 2), a), c); break;   /* b: 2, an immediate */
    }
    if (form == GTE_MA_TWICE_A) {
        gr_array_free(arr[1]);
        arr[1] = gr_array_scalar(dt, 2);
    }
    if (form == GTE_MA_OUTER) {                          /* a as a column, b as a row */
        gr_array col = *arr[0], row = *arr[1];
        col.ndim = row.ndim = 2;
        col.shape[1] = 1;
        row.shape[1] = row.shape[0];
        row.shape[0] = 1;
        gte_muladd_ref(&col, &row, arr[2], 0, want);
    } else
        gte_muladd_ref(arr[0], arr[1], arr[2], form == GTE_MA_EXP, want);
    f = y ? gr_function(3, ins, 1, &y, NULL) : NULL;
    gts_fn_print(f, buf, sizeof buf);
    CHECK_MSG(f && strstr(buf, prog) != NULL, "%s: not %s:\n%s", label, prog, buf);
    snprintf(lbl, sizeof lbl, "%s, %s", label, gr_dtype_name(dt));
    gtf_expect(g, 3, ins, (const gr_array *const *)arr, y, dt, want, gts_tol(dt), lbl);
    gr_fn_free(f);
    gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(arr[2]); gr_array_free(want);
    gr_graph_free(g);
}

/* a float mul whose product only the add after it reads runs with it as one muladd instruction
   (a * b + c, rounded as the two ops are), and a Fused program of one instruction over a matrix
   runs row by row without blocks: rank-1 updates c + a b^T, row and column broadcasts, an
   immediate factor, rows longer than a block (256), three axes, a second instruction after it;
   not merged: a product also returned, integers */
TEST(gts_op_Fused_muladd) {
    static const int64_t s51[2] = { 5, 1 }, s17[2] = { 1, 7 }, s57[2] = { 5, 7 }, s5 = 5, s7 = 7, s41[2] = { 4, 1 }, s1300[2] = { 1, 300 },
                         s4300[2] = { 4, 300 }, s231[3] = { 2, 3, 1 }, s114[3] = { 1, 1, 4 }, s234[3] = { 2, 3, 4 }, s31[2] = { 3, 1 },
                         s1600[2] = { 1, 600 }, s3600[2] = { 3, 600 };
    gtf_rng rng;
    int k;
    rng.s = 151;
    for (k = 0; k < 2; k++) {
        gr_dtype dt = k ? GR_F32 : GR_F64;
        gte_muladd_case(&rng, dt, GTE_MA_OUTER, 1, &s5, 1, &s7, 2, s57, 2, s57, "{MulAdd}", "c + outer(a, b), (5,) (7,) (5,7)");
        gte_muladd_case(&rng, dt, GTE_MA_AB_C, 2, s51, 2, s17, 2, s57, 2, s57, "{MulAdd}", "a b + c, (5,1) (1,7) (5,7)");
        gte_muladd_case(&rng, dt, GTE_MA_C_AB, 2, s57, 2, s51, 2, s57, 2, s57, "{MulAdd}", "c + a b, (5,7) (5,1) (5,7)");
        gte_muladd_case(&rng, dt, GTE_MA_AB_C, 2, s57, 2, s17, 2, s51, 2, s57, "{MulAdd}", "a b + c, (5,7) (1,7) (5,1)");
        gte_muladd_case(&rng, dt, GTE_MA_TWICE_A, 2, s57, 0, NULL, 2, s57, 2, s57, "{MulAdd}", "2 a + c, (5,7) (5,7)");
        gte_muladd_case(&rng, dt, GTE_MA_AB_C, 2, s41, 2, s1300, 2, s4300, 2, s4300, "{MulAdd}", "a b + c, rows of 300");
        gte_muladd_case(&rng, dt, GTE_MA_AB_C, 3, s231, 3, s114, 3, s234, 3, s234, "{MulAdd}", "a b + c, (2,3,1) (1,1,4) (2,3,4)");
        gte_muladd_case(&rng, dt, GTE_MA_EXP, 3, s231, 3, s114, 3, s234, 3, s234, "{MulAdd Exp}", "exp(a b + c), three axes");
        gte_muladd_case(&rng, dt, GTE_MA_EXP, 2, s31, 2, s1600, 2, s3600, 2, s3600, "{MulAdd Exp}", "exp(a b + c), rows of 600");
        gte_muladd_case(&rng, dt, GTE_MA_EXP, 1, &s7, 1, &s7, 1, &s7, 1, &s7, "{MulAdd Exp}", "exp(a b + c), (7,)");
    }
    gte_muladd_case(&rng, GR_I64, GTE_MA_AB_C, 2, s51, 2, s17, 2, s57, 2, s57, "{Mul Add}", "integers, a b + c");
    {   /* the product also returned: mul and add stay two instructions, both outputs right */
        gr_graph *g = gr_graph_new();
        gr_var *a = gtf_input(g, GR_F64, 2, s51, 0, "a"), *b = gtf_input(g, GR_F64, 2, s17, 0, "b"), *c = gtf_input(g, GR_F64, 2, s57, 0, "c");
        gr_var *ins[3], *outs[2];
        gr_array *arr[3], *w0 = gts_want(GR_F64, 2, s57), *w1 = gts_want(GR_F64, 2, s57), *zero;
        const gr_array *res[2];
        gr_fn *f;
        char buf[4096];
        arr[0] = gts_random(&rng, GR_F64, 2, s51, -2, 2, 0, 0);
        arr[1] = gts_random(&rng, GR_F64, 2, s17, -2, 2, 0, 0);
        arr[2] = gts_random(&rng, GR_F64, 2, s57, -2, 2, 0, 0);
        zero = gr_array_new(GR_F64, 2, s57);
        gte_muladd_ref(arr[0], arr[1], zero, 0, w0);
        gte_muladd_ref(arr[0], arr[1], arr[2], 0, w1);
        ins[0] = a; ins[1] = b; ins[2] = c;
        outs[0] = gr_mul(a, b);
        outs[1] = gr_add(outs[0], c);
        f = gr_function(3, ins, 2, outs, NULL);
        gts_fn_print(f, buf, sizeof buf);
        CHECK_MSG(f && strstr(buf, "{Mul Add}") != NULL, "the product returned, merged:\n%s", buf);
        CHECK(f && gr_call(f, (const gr_array *const *)arr, res) == GR_OK);
        if (f) {
            gtf_same(res[0], GR_F64, w0, GTF_TOL_F64, "the product returned");
            gtf_same(res[1], GR_F64, w1, GTF_TOL_F64, "the sum beside it");
        }
        gr_fn_free(f);
        for (k = 0; k < 3; k++) gr_array_free(arr[k]);
        gr_array_free(zero); gr_array_free(w0); gr_array_free(w1);
        gr_graph_free(g);
    }
}

/* ==== the scalar program of a one-element group, against the rows' kernels on arrays ===============
   A fused group whose output has one element runs as a straight-line program (src/fuse.c: float64
   instructions by the rows' scalar functions gr__ew_scalar_f64, or inline, the rest by their
   kernels on one element). For every row whose inputs are floats, in float64 and float32: the
   group { row(a, b, c), -a } on 0-d inputs, called once per element, must give exactly the bits
   of the row's kernel over the whole arrays, compiled without fusion (GTE_SN = 40 values from the
   row's domains, five whole vectors of any width, then special values in the tail). The same for
   the multiply-add (a b + c, one instruction) and the pair sin, cos (one reduction). */
enum { GTE_SN = 40, GTE_SX = 9, GTE_ST = GTE_SN + GTE_SX };

/* the bits of element k of a (dtype dt) and of the 0-d array s agree (NaN: both NaN) */
static int gte_same_bits(const gr_array *a, int64_t k, const gr_array *s) {
    size_t w = a->dtype == GR_F32 ? 4u : a->dtype == GR_BOOL ? 1u : 8u;
    double u = gr_array_get(a, k), v = gr_array_get(s, 0);
    if (u != u && v != v) return 1;
    return s->dtype == a->dtype && memcmp((const char *)a->data + (size_t)k * w, s->data, w) == 0;
}

/* n_out outputs built by `build` from n_in inputs of dtype dt: one-element calls of the fused
   function (one Fused node) against the unfused function over arrays of GTE_ST values (in[i]);
   every output's bits */
typedef void (*gte_sbuild)(gr_var *const *x, const void *row, gr_var **out);
static void gte_scalar_case(const char *what, gr_dtype dt, int n_in, int n_out, gte_sbuild build, const void *row,
                            gr_array *const *in) {
    gr_graph *g = gr_graph_new();
    gr_var *xs[3], *xv[3], *ys[2], *yv[2];
    gr_fn *fs, *fv;
    gr_fn_opts none;
    const gr_array *rv[2], *rs[2];
    char buf[4096];
    int i, j, bad = 0;
    int64_t k;
    memset(&none, 0, sizeof none);
    none.optimize = GR_OPT_NONE;
    for (i = 0; i < n_in; i++) {
        xs[i] = gr_scalar(g, dt, gte_in_names[i]);
        xv[i] = gr_vector(g, dt, gte_in_names[i]);
    }
    build(xs, row, ys);
    build(xv, row, yv);
    fs = gr_function(n_in, xs, n_out, ys, NULL);
    fv = gr_function(n_in, xv, n_out, yv, &none);
    gts_fn_print(fs, buf, sizeof buf);
    CHECK_MSG(fs && gr_fn_node_count(fs) == 1 && strstr(buf, "Fused("), "%s %s: not one Fused node:\n%s", what, gr_dtype_name(dt), buf);
    CHECK_MSG(fv && gr_call(fv, (const gr_array *const *)in, rv) == GR_OK, "%s %s: the arrays", what, gr_dtype_name(dt));
    for (k = 0; fs && fv && rv[0] && k < GTE_ST && !bad; k++) {
        gr_array *one[3];
        for (i = 0; i < n_in; i++) one[i] = gr_array_scalar(dt, gr_array_get(in[i], k));
        CHECK_MSG(gr_call(fs, (const gr_array *const *)one, rs) == GR_OK, "%s %s: element %d", what, gr_dtype_name(dt), (int)k);
        for (j = 0; j < n_out && rs[0]; j++)
            if (!gte_same_bits(rv[j], k, rs[j])) {
                CHECK_MSG(0, "%s %s, output %d at (%.17g, %.17g, %.17g): the scalar program gives %.17g, the kernel %.17g", what,
                          gr_dtype_name(dt), j, gr_array_get(in[0], k), n_in > 1 ? gr_array_get(in[1], k) : 0.0,
                          n_in > 2 ? gr_array_get(in[2], k) : 0.0, gr_array_get(rs[j], 0), gr_array_get(rv[j], k));
                bad = 1;
            }
        for (i = 0; i < n_in; i++) gr_array_free(one[i]);
    }
    gr_fn_free(fs); gr_fn_free(fv);
    gr_graph_free(g);
}

/* the row's value and -a (|a| beside neg): a second member, so that the two are one group */
static void gte_sb_row(gr_var *const *x, const void *row_, gr_var **out) {
    const gte_row *row = (const gte_row *)row_;
    out[0] = row->arity == 1 ? row->b1(x[0]) : row->arity == 2 ? row->b2(x[0], x[1]) : row->b3(x[0], x[1], x[2]);
    out[1] = strcmp(row->name, "neg") != 0 ? gr_neg(x[0]) : gr_abs(x[0]);
}
static void gte_sb_muladd(gr_var *const *x, const void *u, gr_var **out) { (void)u; out[0] = gr_add(gr_mul(x[0], x[1]), x[2]); }
static void gte_sb_sincos(gr_var *const *x, const void *u, gr_var **out) { (void)u; out[0] = gr_sin(x[0]); out[1] = gr_cos(x[0]); }

/* GTE_ST values of dtype dt: GTE_SN from domain d, then the special values */
static gr_array *gte_scalar_values(gtf_rng *r, gr_dtype dt, const gte_dom *d) {
    static const double sp[GTE_SX] = { 0.0, -0.0, 0.5, -2.0, 1e300, -1e-310, 3e6, INFINITY, NAN };
    int64_t n = GTE_ST, k;
    gr_array *a = gr_array_new(dt, 1, &n);
    for (k = 0; a && k < GTE_ST; k++) {
        double v = k < GTE_SN ? gte_draw_float(r, d) : sp[k - GTE_SN];
        if (dt == GR_F64) ((double *)a->data)[k] = v;
        else ((float *)a->data)[k] = (float)v;
    }
    return a;
}

#define GTE_SROW(name, ...) #name,
static const char *const gte_scalar_rows[] = { GR_ELEMWISE_OPS(GTE_SROW) NULL };
#undef GTE_SROW

TEST(gts_op_Fused_scalar) {
    static const gr_dtype dts[2] = { GR_F64, GR_F32 };
    static const gte_dom wide = GTE_DOM(-12, 12, 0, 0, GTE_Q);
    gtf_rng rng = { 20261126u };
    int r, t, i, rows = 0;
    for (t = 0; t < 2; t++) {
        for (r = 0; gte_scalar_rows[r]; r++) {
            const gte_row *row = gte_row_of(gte_scalar_rows[r]);
            gr_array *in[3] = { NULL, NULL, NULL };
            if (!row || row->cls == GTE_LOGIC) continue;           /* (bool operands) */
            for (i = 0; i < row->arity; i++) in[i] = gte_scalar_values(&rng, dts[t], &row->cases->dom[i]);
            gte_scalar_case(row->name, dts[t], row->arity, 2, gte_sb_row, row, in);
            for (i = 0; i < row->arity; i++) gr_array_free(in[i]);
            rows++;
        }
        {
            gr_array *in[3];
            for (i = 0; i < 3; i++) in[i] = gte_scalar_values(&rng, dts[t], &wide);
            gte_scalar_case("a b + c", dts[t], 3, 1, gte_sb_muladd, NULL, in);
            gte_scalar_case("sin a, cos a", dts[t], 1, 2, gte_sb_sincos, NULL, in);
            for (i = 0; i < 3; i++) gr_array_free(in[i]);
        }
    }
    CHECK(rows > 2 * 40);
}

/* ---- sums taken in the pass: a Sum (a FOLD row) of a value its group makes is the group's last
   instruction, and that value is never written out. Each form below, over shapes from 0-d and empty
   through the eight-lane boundaries (15, 16, 17, 23, 24) to 1000 and matrices, float64 and float32:
   compiled, one Fused node ending in Sum and no Sum node (forms 0-3); its outputs bit for bit those
   of the unfused function (GR_OPT_NONE: the Sum kernel over the whole array, gr__red_sum_*); and the
   sum within rounding of a long double sum of the terms computed in C.
     form 0: sum(exp(a) b + a)
     form 1: y = exp(a) b and sum(y + a), both returned (one output of the shape, one sum)
     form 2: sum(a c - 1) with c 0-d (no output has the shape the pass runs over)
     form 3: sum(a b) and sum(a - b), two sums of one pass
     form 4: a - sum(a a) (the sum read at every element: not in the pass that makes it) */
static double gte_fsum_term(int form, double a, double b, int k) {
    switch (form) {
    case 0: return exp(a) * b + a;
    case 1: return exp(a) * b + a;
    case 2: return a * b - 1;
    case 3: return k ? a - b : a * b;
    default: return a * a;
    }
}
static void gte_fsum_build(gr_graph *g, int form, gr_var *a, gr_var *b, gr_var **out, int *n_out) {
    gr_var *y;
    switch (form) {
    case 0: out[0] = gr_sum(gr_add(gr_mul(gr_exp(a), b), a)); *n_out = 1; break;
    case 1: y = gr_mul(gr_exp(a), b); out[0] = y; out[1] = gr_sum(gr_add(y, a)); *n_out = 2; break;
    case 2: out[0] = gr_sum(gr_sub(gr_mul(a, b), gr_const(g, 1.0))); *n_out = 1; break;
    case 3: out[0] = gr_sum(gr_mul(a, b)); out[1] = gr_sum(gr_sub(a, b)); *n_out = 2; break;
    default: out[0] = gr_sub(a, gr_sum(gr_mul(a, a))); *n_out = 1; break;
    }
}
static void gte_fsum_case(gr_dtype dt, int form, int nd, const int64_t *shape) {
    gr_graph *g = gr_graph_new();
    gr_var *a = gr_tensor(g, dt, nd, shape, "a"), *b = form == 2 ? gr_scalar(g, dt, "c") : gr_tensor(g, dt, nd, shape, "b");
    gr_var *ins[2], *outs[2];
    gr_array *in[2];
    const gr_array *rf[2], *rn[2];
    gr_fn *ff, *fn;
    gr_fn_opts none;
    char buf[4096], what[96];
    int j, n_out = 0;
    int64_t k, n;
    memset(&none, 0, sizeof none);
    none.optimize = GR_OPT_NONE;
    in[0] = gr_array_new(dt, nd, shape);
    in[1] = form == 2 ? gr_array_scalar(dt, 0.75) : gr_array_new(dt, nd, shape);
    n = in[0]->size;
    for (k = 0; k < n; k++) {
        gr_array_set(in[0], k, sin(0.7 + 1.3 * (double)k));
        if (form != 2) gr_array_set(in[1], k, 1.0 + 0.5 * cos(0.3 * (double)k));
    }
    snprintf(what, sizeof what, "form %d, %s, %d-d of %lld", form, gr_dtype_name(dt), nd, (long long)n);
    gte_fsum_build(g, form, a, b, outs, &n_out);
    ins[0] = a; ins[1] = b;
    ff = gr_function(2, ins, n_out, outs, NULL);
    fn = gr_function(2, ins, n_out, outs, &none);
    gts_fn_print(ff, buf, sizeof buf);
    if (form < 4)
        CHECK_MSG(ff && gr_fn_node_count(ff) == 1 && strstr(buf, "Fused(") && strstr(buf, " Sum}") && !strstr(buf, "= Sum("),
                  "%s: not one Fused node ending in Sum:\n%s", what, buf);
    CHECK_MSG(ff && gr_call(ff, (const gr_array *const *)in, rf) == GR_OK, "%s: %s", what, ff ? gr_fn_message(ff) : "");
    CHECK_MSG(fn && gr_call(fn, (const gr_array *const *)in, rn) == GR_OK, "%s: unfused", what);
    for (j = 0; ff && fn && j < n_out; j++) {
        size_t w = (size_t)rf[j]->size * (dt == GR_F32 ? 4u : 8u);
        CHECK_MSG(rf[j]->size == rn[j]->size && memcmp(rf[j]->data, rn[j]->data, w) == 0,
                  "%s, output %d: fused %.17g, unfused %.17g", what, j, gr_array_get(rf[j], 0), gr_array_get(rn[j], 0));
    }
    for (j = 0; ff && j < n_out && form != 4; j++) {   /* the sums against long double */
        const gr_array *s = rf[j];
        long double ref = 0, mag = 0;
        double tol;
        if (form == 1 && j == 0) continue;             /* (y, not a sum) */
        for (k = 0; k < n; k++) {
            double t = gte_fsum_term(form, gr_array_get(in[0], k), gr_array_get(in[1], form == 2 ? 0 : k), form == 3 ? j : 0);
            ref += t;
            mag += fabs(t);
        }
        tol = (double)mag * (dt == GR_F32 ? 2e-6 : 1e-14) + 1e-300;
        CHECK_MSG(fabs(gr_array_get(s, 0) - (double)ref) <= tol, "%s, sum %d: %.17g, long double %.17Lg", what, j, gr_array_get(s, 0), ref);
    }
    if (ff && form == 4 && n > 0) {                    /* a - sum(a a), element 0 */
        long double ss = 0;
        for (k = 0; k < n; k++) ss += (long double)gr_array_get(in[0], k) * gr_array_get(in[0], k);
        CHECK_MSG(fabs(gr_array_get(rf[0], 0) - (double)((long double)gr_array_get(in[0], 0) - ss)) <= (dt == GR_F32 ? 1e-5 : 1e-13) * (double)(ss + 1),
                  "%s: %.17g", what, gr_array_get(rf[0], 0));
    }
    gr_fn_free(ff); gr_fn_free(fn);
    gr_array_free(in[0]); gr_array_free(in[1]);
    gr_graph_free(g);
}

TEST(gts_op_Fused_sum) {
    static const int64_t shapes[][3] = { { 0 }, { 0 }, { 1 }, { 7 }, { 15 }, { 16 }, { 17 }, { 23 }, { 24 }, { 257 }, { 1000 },
                                         { 3, 5 }, { 4, 5 }, { 3, 0 }, { 2, 1, 9 } };
    static const int nds[] = { 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 3 };
    static const gr_dtype dts[2] = { GR_F64, GR_F32 };
    int t, form, s;
    for (t = 0; t < 2; t++)
        for (form = 0; form < 5; form++)
            for (s = 0; s < (int)(sizeof nds / sizeof nds[0]); s++) gte_fsum_case(dts[t], form, nds[s], shapes[s]);
}

/* ---- a slice's gradient added in the pass: zeros like x incremented at unit-step slices by values
   a group makes (what the gradient of x[a:b] is) are made by that group's pass, with no array of
   zeros and no separate update (ScatterAdd). Each form over lengths through the block boundaries
   (256) and float64 and float32, one compiled function called at every length in turn: the result
   bit for bit that of the unfused function (GR_OPT_NONE: the fill of zeros, then each update), and
   within rounding of the same sums in C; forms 0-3 compile to the slices and one Fused node.
     h = x[:-k], t = x[k:]; u = exp(h) t, w = t - h h
     form 0 (k = 1): [1:] += u, then [:-1] += w (Rosenbrock's order)
     form 1 (k = 1): [:-1] += w, then [1:] += u
     form 2 (k = 2): [2:] += u, then [:-2] += w (a gap between them when x has 3 elements)
     form 3 (k = 2): [1:-1] += u alone (zeros at both ends)
     form 4 (k = 2): [2:] += u, [1:-1] += h t, [:-2] += w (two in the pass, the third after it) */
static gr_var *gte_fscat_build(gr_var *x, int form) {
    int k = form < 2 ? 1 : 2;
    gr_var *h = gr_slice(x, 0, 0, -k, 1), *t = gr_slice(x, 0, k, GR_OPEN, 1);
    gr_var *u = gr_mul(gr_exp(h), t), *w = gr_sub(t, gr_mul(h, h)), *z = gr_zeros_like(x);
    switch (form) {
    case 0: z = gr_inc_subtensor(gr_slice(z, 0, 1, GR_OPEN, 1), u); return gr_inc_subtensor(gr_slice(z, 0, 0, -1, 1), w);
    case 1: z = gr_inc_subtensor(gr_slice(z, 0, 0, -1, 1), w); return gr_inc_subtensor(gr_slice(z, 0, 1, GR_OPEN, 1), u);
    case 2: z = gr_inc_subtensor(gr_slice(z, 0, 2, GR_OPEN, 1), u); return gr_inc_subtensor(gr_slice(z, 0, 0, -2, 1), w);
    case 3: return gr_inc_subtensor(gr_slice(z, 0, 1, -1, 1), u);
    default:
        z = gr_inc_subtensor(gr_slice(z, 0, 2, GR_OPEN, 1), u);
        z = gr_inc_subtensor(gr_slice(z, 0, 1, -1, 1), gr_mul(h, t));
        return gr_inc_subtensor(gr_slice(z, 0, 0, -2, 1), w);
    }
}
/* the same in C (double): z of n */
static void gte_fscat_ref(int form, const double *x, int64_t n, double *z) {
    int64_t k = form < 2 ? 1 : 2, m = n - k > 0 ? n - k : 0, i;
    for (i = 0; i < n; i++) z[i] = 0;
    for (i = 0; i < m; i++) {
        double h = x[i], t = x[i + k], u = exp(h) * t, w = t - h * h;
        if (form == 0 || form == 1) { z[i + 1] += u; z[i] += w; }
        else if (form == 2) { z[i + 2] += u; z[i] += w; }
        else if (form == 3) z[i + 1] += u;
        else { z[i + 2] += u; z[i + 1] += h * t; z[i] += w; }
    }
}
TEST(gts_op_Fused_scatter) {
    static const int64_t ns[13] = { 300, 1, 2, 3, 4, 17, 255, 256, 257, 258, 513, 1000, 3 };
    static const gr_dtype dts[2] = { GR_F64, GR_F32 };
    int t, form, q;
    for (t = 0; t < 2; t++)
        for (form = 0; form < 5; form++) {
            gr_graph *g = gr_graph_new();
            gr_var *x = gr_vector(g, dts[t], "x"), *z = gte_fscat_build(x, form);
            gr_fn_opts none;
            gr_fn *ff, *fn;
            char buf[4096];
            memset(&none, 0, sizeof none);
            none.optimize = GR_OPT_NONE;
            ff = gr_function(1, &x, 1, &z, NULL);
            fn = gr_function(1, &x, 1, &z, &none);
            gts_fn_print(ff, buf, sizeof buf);
            if (form < 4)
                CHECK_MSG(ff && strstr(buf, "ScatterAdd") && !strstr(buf, "ViewUpdate") && !strstr(buf, "BroadcastLike") &&
                          gr_fn_node_count(ff) == 3u,
                          "form %d %s: the updates not in the pass:\n%s", form, gr_dtype_name(dts[t]), buf);
            else CHECK_MSG(ff && strstr(buf, "ScatterAdd ScatterAdd}") && strstr(buf, "= ViewUpdate("), "form 4: \n%s", buf);
            for (q = 0; ff && fn && q < 13; q++) {
                int64_t n = ns[q], i;
                gr_array *xa = gr_array_new(dts[t], 1, &n);
                const gr_array *in[1], *rf[1], *rn[1];
                double *xr = (double *)malloc(sizeof(double) * (size_t)(n + 1)), *zr = (double *)malloc(sizeof(double) * (size_t)(n + 1));
                for (i = 0; i < n; i++) { gr_array_set(xa, i, sin(0.3 + 0.77 * (double)i)); xr[i] = gr_array_get(xa, i); }
                in[0] = xa;
                CHECK_MSG(gr_call(ff, in, rf) == GR_OK, "form %d, n %lld: %s", form, (long long)n, gr_fn_message(ff));
                CHECK(gr_call(fn, in, rn) == GR_OK);
                gte_fscat_ref(form, xr, n, zr);
                if (rf[0] && rn[0]) {
                    size_t w = (size_t)n * (dts[t] == GR_F32 ? 4u : 8u);
                    CHECK_MSG(rf[0]->size == n && memcmp(rf[0]->data, rn[0]->data, w) == 0, "form %d %s, n %lld: fused and unfused differ",
                              form, gr_dtype_name(dts[t]), (long long)n);
                    for (i = 0; i < n; i++)
                        if (fabs(gr_array_get(rf[0], i) - zr[i]) > (dts[t] == GR_F32 ? 2e-5 : 1e-13) * (1 + fabs(zr[i]))) {
                            CHECK_MSG(0, "form %d %s, n %lld, z[%lld] = %.17g, C %.17g", form, gr_dtype_name(dts[t]), (long long)n, (long long)i,
                                      gr_array_get(rf[0], i), zr[i]);
                            break;
                        }
                }
                free(xr); free(zr);
                gr_array_free(xa);
            }
            gr_fn_free(ff); gr_fn_free(fn);
            gr_graph_free(g);
        }
}

/* elementwise chains, which gr_function fuses into one pass: the derivatives through Fused nodes */
static gr_var *gte_b_chain(gr_graph *g, gr_var *const *x, void *u) {
    (void)u;
    return gr_add(gr_mul(gr_exp(gr_mul(gr_sin(x[0]), x[1])), gr_tanh(x[1])), gr_div(x[0], gr_add(gr_sqr(x[1]), gr_const(g, 1))));
}

static const gtd_spec specs_Fused[] = {
    { "Fused", "exp(sin(a) b) tanh(b) + a / (b^2 + 1), (3,4) (4,)", gte_b_chain, NULL, 2, { GTD_IN(2, 3, 4, -1, 1), GTD_IN(1, 4, 0, -1, 1) }, GTD_GRADGRAD },
    { "Fused", "the same, (3,1) (1,4)", gte_b_chain, NULL, 2, { GTD_IN(2, 3, 1, -1, 1), GTD_IN(2, 1, 4, -1, 1) }, GTD_GRADGRAD },
    { "Fused", "the same, 0-d", gte_b_chain, NULL, 2, { GTD_IN(0, 0, 0, -1, 1), GTD_IN(0, 0, 0, -1, 1) }, GTD_GRADGRAD },
    GTD_END
};

GT_CASES(Fused) = {
    GT_VALUES(gts_op_Fused),
    GT_VALUES(gts_op_Fused_muladd),
    GT_VALUES(gts_op_Fused_scalar),
    GT_VALUES(gts_op_Fused_sum),
    GT_VALUES(gts_op_Fused_scatter),
    GT_SPECS(specs_Fused),
    GT_NO_ERRORS("made by gr_function only (src/fuse.c), from nodes already checked"),
    GT_END
};

/* ==== the family's other tests ========================================================================= */

SUITE(suite_ops_elemwise) = {
    CASE(test_ew_special_values),
    CASE(test_ew_promotion),
    CASE(test_ew_unary_dtypes),
    CASE(test_ew_weak_const),
    CASE(test_ew_select_mixed),
    CASE(test_ew_shape_errors),
    CASE(test_int64_wraps),
    END_SUITE
};
