/* tests/t_vmath.c: the elementwise math of our own (ops/vmath.c, issue 20 item 1): exp, expm1,
   tanh, log, log1p, sin, cos, sigmoid, softplus, erf, erfc, exp2, log2, sinh, cosh, tan, arctan,
   arcsin, arccos, arctanh, arcsinh, arccosh, cbrt in float64 and float32, and pow and arctan2.
   - accuracy: a dense sweep over each function's whole domain (every binade of the doubles, both
     signs, and uniform draws over the main range) and special points, in ulp against long double
     (x86-64's 80-bit: 11 more bits than double), float32 against the double reference rounded;
     the bounds are the README's ("Math functions");
   - special values: +-0 (sign kept), +-inf, NaN, subnormal arguments and results, the overflow and
     underflow thresholds of exp, huge angles (sin(1e300) as the C library's);
   - the vector kernels give the scalar function's bits for every element (vector lanes, lanes of a
     vector that holds a special value, tails), float64 and float32, in place too;
   - the rows use them: gr_call of gr_exp ... over arrays (whole, broadcast, fused into a group)
     equals the scalar function bit for bit.
   The file includes ops/vmath.c itself (its functions are static) for the scalar functions. */
#include "harness.h"
#include <float.h>
#include <stdint.h>

/* |got - want| in units of the last place of want rounded to the format of mant bits (min_exp:
   the format's smallest normal exponent, so that subnormals count in their own ulp) */
double gt_ulps(long double got, long double want, int mant, int min_exp) {
    int e;
    if (want != want) return got != got ? 0 : 1e30;
    if (isinf((double)want) || isinf((double)got)) return (double)got == (double)want ? 0 : 1e30;
    if (want == 0) return got == 0 ? 0 : 1e30;
    frexpl(want, &e);
    if (e < min_exp) e = min_exp;
    return (double)(fabsl(got - want) / ldexpl(1.0L, e - mant));
}

#ifndef GR_NO_VECTOR_EXTENSIONS        /* (without it the library's functions are the C library's) */
#include "../ops/vmath.c"

typedef double (*tv_f64)(double);
typedef float (*tv_f32)(float);
typedef long double (*tv_ref)(long double);
typedef void (*tv_map)(int64_t n, double *o, const double *a);

typedef struct tv_fn {
    const char *name;
    tv_f64 f; tv_f32 f32; tv_ref ref; tv_map map;
    double lo, hi;                 /* the domain (outside: NaN) */
    double ulp64, ulp32;           /* the bounds: README "Math functions" */
} tv_fn;

static long double tv_sinl(long double x) { return sinl(x); }
static long double tv_cosl(long double x) { return cosl(x); }
static long double tv_expl(long double x) { return expl(x); }
static long double tv_expm1l(long double x) { return expm1l(x); }
static long double tv_tanhl(long double x) { return tanhl(x); }
static long double tv_logl(long double x) { return logl(x); }
static long double tv_log1pl(long double x) { return log1pl(x); }
static long double tv_sigmoidl(long double x) { return x >= 0 ? 1 / (1 + expl(-x)) : expl(x) / (1 + expl(x)); }
static long double tv_softplusl(long double x) { return (x > 0 ? x : 0) + log1pl(expl(-fabsl(x))); }
static long double tv_erfl(long double x) { return erfl(x); }
static long double tv_erfcl(long double x) { return erfcl(x); }
static long double tv_exp2l(long double x) { return exp2l(x); }
static long double tv_log2l(long double x) { return log2l(x); }
static long double tv_sinhl(long double x) { return sinhl(x); }
static long double tv_coshl(long double x) { return coshl(x); }
static long double tv_tanl(long double x) { return tanl(x); }
static long double tv_atanl(long double x) { return atanl(x); }
static long double tv_asinl(long double x) { return asinl(x); }
static long double tv_acosl(long double x) { return acosl(x); }
static long double tv_atanhl(long double x) { return atanhl(x); }
static long double tv_asinhl(long double x) { return asinhl(x); }
static long double tv_acoshl(long double x) { return acoshl(x); }
static long double tv_cbrtl(long double x) { return cbrtl(x); }

static const tv_fn tv_fns[] = {
    { "exp", gr__m_exp, gr__m_expf, tv_expl, gr__vm_exp_map, -INFINITY, INFINITY, 1.0, 0.501 },
    { "expm1", gr__m_expm1, gr__m_expm1f, tv_expm1l, gr__vm_expm1_map, -INFINITY, INFINITY, 2.0, 0.501 },
    { "tanh", gr__m_tanh, gr__m_tanhf, tv_tanhl, gr__vm_tanh_map, -INFINITY, INFINITY, 3.0, 0.501 },
    { "log", gr__m_log, gr__m_logf, tv_logl, gr__vm_log_map, 0, INFINITY, 1.0, 0.501 },
    { "log1p", gr__m_log1p, gr__m_log1pf, tv_log1pl, gr__vm_log1p_map, -1, INFINITY, 1.0, 0.501 },
    { "sin", gr__m_sin, gr__m_sinf, tv_sinl, gr__vm_sin_map, -INFINITY, INFINITY, 1.0, 0.501 },
    { "cos", gr__m_cos, gr__m_cosf, tv_cosl, gr__vm_cos_map, -INFINITY, INFINITY, 1.0, 0.501 },
    { "sigmoid", gr__m_sigmoid, gr__m_sigmoidf, tv_sigmoidl, gr__vm_sigmoid_map, -INFINITY, INFINITY, 2.0, 0.501 },
    { "softplus", gr__m_softplus, gr__m_softplusf, tv_softplusl, gr__vm_softplus_map, -INFINITY, INFINITY, 2.0, 0.501 },
    { "erf", gr__m_erf, gr__m_erff, tv_erfl, gr__vm_erf_map, -INFINITY, INFINITY, 2.0, 0.501 },
    { "erfc", gr__m_erfc, gr__m_erfcf, tv_erfcl, gr__vm_erfc_map, -INFINITY, INFINITY, 4.0, 0.501 },
    { "exp2", gr__m_exp2, gr__m_exp2f, tv_exp2l, gr__vm_exp2_map, -INFINITY, INFINITY, 1.5, 0.501 },
    { "log2", gr__m_log2, gr__m_log2f, tv_log2l, gr__vm_log2_map, 0, INFINITY, 1.0, 0.501 },
    { "sinh", gr__m_sinh, gr__m_sinhf, tv_sinhl, gr__vm_sinh_map, -INFINITY, INFINITY, 3.0, 0.501 },
    { "cosh", gr__m_cosh, gr__m_coshf, tv_coshl, gr__vm_cosh_map, -INFINITY, INFINITY, 2.0, 0.501 },
    { "tan", gr__m_tan, gr__m_tanf, tv_tanl, gr__vm_tan_map, -INFINITY, INFINITY, 3.0, 0.501 },
    { "arctan", gr__m_arctan, gr__m_arctanf, tv_atanl, gr__vm_arctan_map, -INFINITY, INFINITY, 1.0, 0.501 },
    { "arcsin", gr__m_arcsin, gr__m_arcsinf, tv_asinl, gr__vm_arcsin_map, -1, 1, 2.5, 0.501 },
    { "arccos", gr__m_arccos, gr__m_arccosf, tv_acosl, gr__vm_arccos_map, -1, 1, 2.5, 0.501 },
    { "arctanh", gr__m_arctanh, gr__m_arctanhf, tv_atanhl, gr__vm_arctanh_map, -1, 1, 2.0, 0.501 },
    { "arcsinh", gr__m_arcsinh, gr__m_arcsinhf, tv_asinhl, gr__vm_arcsinh_map, -INFINITY, INFINITY, 2.5, 0.501 },
    { "arccosh", gr__m_arccosh, gr__m_arccoshf, tv_acoshl, gr__vm_arccosh_map, 1, INFINITY, 2.5, 0.501 },
    { "cbrt", gr__m_cbrt, gr__m_cbrtf, tv_cbrtl, gr__vm_cbrt_map, -INFINITY, INFINITY, 1.0, 0.501 },
};
enum { TV_NFN = (int)(sizeof tv_fns / sizeof tv_fns[0]) };


/* x64 and the ulp error of f at it, worst kept */
typedef struct tv_worst { double err, at; } tv_worst;
static void tv_one(const tv_fn *fn, double x, tv_worst *w64, tv_worst *w32) {
    long double want = fn->ref((long double)x);
    double e = gt_ulps(fn->f(x), want, 53, -1021);
    float xf = (float)x;
    if (e > w64->err || e != e) { w64->err = e; w64->at = x; }
    if (isinf(xf) && !isinf(x)) return;
    want = fn->ref((long double)xf);
    if (isinf((float)want)) e = fn->f32(xf) == (float)want ? 0 : 1e30;     /* overflows in float */
    else e = gt_ulps(fn->f32(xf), want, 24, -125);
    if (e > w32->err || e != e) { w32->err = e; w32->at = (double)xf; }
}

/* the points of the sweep: k-th of n in binade b (2^b .. 2^(b+1)), a fixed pseudo-random fraction */
static double tv_point(int b, unsigned k, unsigned n, uint64_t *seed) {
    double frac;
    *seed = *seed * 6364136223846793005u + 1442695040888963407u;
    frac = ((double)k + (double)(*seed >> 11) / 9007199254740992.0) / n;
    return ldexp(1.0 + frac, b);
}

TEST(test_vmath_accuracy) {
#if LDBL_MANT_DIG >= 64
    int i;
    for (i = 0; i < TV_NFN; i++) {
        const tv_fn *fn = &tv_fns[i];
        tv_worst w64 = { 0, 0 }, w32 = { 0, 0 };
        uint64_t seed = 12345u + (uint64_t)i;
        int b, s;
        unsigned k;
        for (b = -1074; b <= 1023; b++)                 /* every binade, both signs */
            for (s = -1; s <= 1; s += 2)
                for (k = 0; k < 24; k++) {
                    double x = s * tv_point(b, k, 24, &seed);
                    if (x >= fn->lo && x <= fn->hi) tv_one(fn, x, &w64, &w32);
                }
        for (k = 0; k < 60000; k++) {                   /* uniform over where values vary */
            double span = !strcmp(fn->name, "tanh") ? 20.0 : !strncmp(fn->name, "log", 3) && strcmp(fn->name, "log1p") ? 10.0 :
                          !strcmp(fn->name, "sin") || !strcmp(fn->name, "cos") ? 100.0 : !strcmp(fn->name, "erf") ? 7.0 :
                          !strcmp(fn->name, "erfc") ? 30.0 : !strcmp(fn->name, "exp2") ? 1080.0 :
                          fn->hi == 1 || !strcmp(fn->name, "tan") || !strcmp(fn->name, "arctan") ? 1.0 :
                          !strncmp(fn->name, "arc", 3) ? 20.0 : 750.0;
            double x = (tv_point(0, k, 60000, &seed) - 1.5) * 2.0 * span;
            if (!strcmp(fn->name, "log") || !strcmp(fn->name, "log2")) x = fabs(x);
            if (!strcmp(fn->name, "arccosh")) x = 1.0 + fabs(x);
            if (!strcmp(fn->name, "tan") || !strcmp(fn->name, "arctan")) x *= 10;
            if (!strcmp(fn->name, "log1p") && x <= -1) x = -x;
            tv_one(fn, x, &w64, &w32);
            tv_one(fn, x / 1024.0, &w64, &w32);
        }
        CHECK_MSG(w64.err <= fn->ulp64, "%s float64: %.3f ulp at %.17g, bound %.2f", fn->name, w64.err, w64.at, fn->ulp64);
        CHECK_MSG(w32.err <= fn->ulp32, "%s float32: %.4f ulp at %.9g, bound %.3f", fn->name, w32.err, w32.at, fn->ulp32);
        if (getenv("GT_VMATH_PRINT"))
            printf("vmath %-8s float64 %.3f ulp (at %.17g), float32 %.4f ulp (at %.9g)\n", fn->name, w64.err, w64.at, w32.err, w32.at);
    }
#endif
}

/* exact values where the definition says so */
static int tv_same(double a, double b) { return (a != a && b != b) || (a == b && signbit(a) == signbit(b)); }
#define CHECK_SAME(got, want) do { double tv_g_ = (got), tv_w_ = (want); \
    CHECK_MSG(tv_same(tv_g_, tv_w_), "%s = %.17g, want %.17g", #got, tv_g_, tv_w_); } while (0)

TEST(test_vmath_special_values) {
    double inf = INFINITY, nan = NAN, tiny = 4.9406564584124654e-324, dmin = 2.2250738585072014e-308;
    int i;
    for (i = 0; i < TV_NFN; i++) CHECK(tv_fns[i].f(nan) != tv_fns[i].f(nan));
    CHECK_SAME(gr__m_exp(0.0), 1.0); CHECK_SAME(gr__m_exp(-0.0), 1.0);
    CHECK_SAME(gr__m_exp(inf), inf); CHECK_SAME(gr__m_exp(-inf), 0.0);
    CHECK_SAME(gr__m_exp(709.782712893384), 1.7976931348622732e308);     /* the last finite */
    CHECK_SAME(gr__m_exp(709.78271289338409), inf);
    CHECK_SAME(gr__m_exp(-745.13321910194110), tiny);                    /* the least subnormal */
    CHECK_SAME(gr__m_exp(-745.13321910194122), 0.0);
    {
        double x = -708.3964185322641;                                        /* DBL_MIN */
        CHECK(gt_ulps(gr__m_exp(x), expl(x), 53, -1021) <= 1.0);
        CHECK(gt_ulps(gr__m_exp(1.0), expl(1.0L), 53, -1021) <= 1.0);
    }
    CHECK_SAME(gr__m_expm1(0.0), 0.0); CHECK_SAME(gr__m_expm1(-0.0), -0.0);
    CHECK_SAME(gr__m_expm1(tiny), tiny); CHECK_SAME(gr__m_expm1(-1e-300), -1e-300);
    CHECK_SAME(gr__m_expm1(inf), inf); CHECK_SAME(gr__m_expm1(-inf), -1.0); CHECK_SAME(gr__m_expm1(-800.0), -1.0);
    CHECK_SAME(gr__m_expm1(800.0), inf);
    CHECK_SAME(gr__m_tanh(0.0), 0.0); CHECK_SAME(gr__m_tanh(-0.0), -0.0);
    CHECK_SAME(gr__m_tanh(inf), 1.0); CHECK_SAME(gr__m_tanh(-inf), -1.0); CHECK_SAME(gr__m_tanh(-1e300), -1.0);
    CHECK_SAME(gr__m_tanh(1e-300), 1e-300); CHECK_SAME(gr__m_tanh(-tiny), -tiny);
    CHECK_SAME(gr__m_log(1.0), 0.0); CHECK_SAME(gr__m_log(0.0), -inf); CHECK_SAME(gr__m_log(-0.0), -inf);
    CHECK(gr__m_log(-1.0) != gr__m_log(-1.0)); CHECK(gr__m_log(-inf) != gr__m_log(-inf));
    CHECK_SAME(gr__m_log(inf), inf);
    CHECK_SAME(gr__m_log(tiny), (double)logl(tiny)); CHECK_SAME(gr__m_log(dmin / 3), (double)logl(dmin / 3));
    CHECK_SAME(gr__m_log(DBL_MAX), (double)logl(DBL_MAX));
    CHECK_SAME(gr__m_log1p(0.0), 0.0); CHECK_SAME(gr__m_log1p(-0.0), -0.0); CHECK_SAME(gr__m_log1p(-1.0), -inf);
    CHECK(gr__m_log1p(-2.0) != gr__m_log1p(-2.0)); CHECK_SAME(gr__m_log1p(inf), inf);
    CHECK_SAME(gr__m_log1p(tiny), tiny); CHECK_SAME(gr__m_log1p(-1e-300), -1e-300);
    CHECK_SAME(gr__m_log1p(DBL_MAX), (double)log1pl(DBL_MAX));
    CHECK_SAME(gr__m_sin(0.0), 0.0); CHECK_SAME(gr__m_sin(-0.0), -0.0); CHECK_SAME(gr__m_sin(-tiny), -tiny);
    CHECK_SAME(gr__m_cos(0.0), 1.0); CHECK_SAME(gr__m_cos(-0.0), 1.0);
    CHECK(gr__m_sin(inf) != gr__m_sin(inf)); CHECK(gr__m_cos(-inf) != gr__m_cos(-inf));
    CHECK_SAME(gr__m_sin(1e300), sin(1e300)); CHECK_SAME(gr__m_cos(1e300), cos(1e300));   /* the C library's */
    CHECK_SAME(gr__m_sin(1647098.0), (double)sinl(1647098.0L));                   /* the main range's end */
    CHECK_SAME(gr__m_cos(1647098.0), (double)cosl(1647098.0L));
    /* near multiples of pi/2, where the reduction cancels most bits (within 1 ulp) */
    {
        static const double near[] = { 3.1415926535897931, 1.5707963267948966, 6.2831853071795862, 355.0, 103993.0, 1570795.0 };
        for (i = 0; i < (int)(sizeof near / sizeof near[0]); i++) {
            CHECK_MSG(gt_ulps(gr__m_sin(near[i]), sinl(near[i]), 53, -1021) <= 1.0, "sin(%.17g)", near[i]);
            CHECK_MSG(gt_ulps(gr__m_cos(near[i]), cosl(near[i]), 53, -1021) <= 1.0, "cos(%.17g)", near[i]);
        }
    }
    /* float32 thresholds */
    CHECK(isinf(gr__m_expf(88.73f)) && !isinf(gr__m_expf(88.72f)));
    CHECK_SAME((double)gr__m_expf(-103.98f), (double)(float)exp(-103.98f));
    CHECK_SAME((double)gr__m_tanhf(-0.0f), -0.0); CHECK_SAME((double)gr__m_logf(0.0f), -inf);
    CHECK_SAME(gr__m_sigmoid(0.0), 0.5); CHECK_SAME(gr__m_sigmoid(-0.0), 0.5); CHECK_SAME(gr__m_sigmoid(inf), 1.0);
    CHECK_SAME(gr__m_sigmoid(-inf), 0.0); CHECK_SAME(gr__m_sigmoid(-740.0), (double)expl(-740.0L));
    CHECK_SAME(gr__m_softplus(inf), inf); CHECK_SAME(gr__m_softplus(-inf), 0.0); CHECK_SAME(gr__m_softplus(1e300), 1e300);
    CHECK_SAME(gr__m_softplus(-740.0), (double)expl(-740.0L));
    CHECK(gr__m_sigmoid(nan) != gr__m_sigmoid(nan) && gr__m_softplus(nan) != gr__m_softplus(nan));
}

/* erf, erfc, exp2, log2, sinh, cosh: exact values, limits, thresholds, subnormals */
#define CHECK_ULPS(got, want, bound) do { double tv_e_ = gt_ulps((got), (want), 53, -1021); \
    CHECK_MSG(tv_e_ <= (bound), "%s: %.3f ulp", #got, tv_e_); } while (0)
TEST(test_vmath_special_values_more) {
    double inf = INFINITY, tiny = 4.9406564584124654e-324, dmin = 2.2250738585072014e-308;
    int k;
    CHECK_SAME(gr__m_erf(0.0), 0.0); CHECK_SAME(gr__m_erf(-0.0), -0.0); CHECK_SAME(gr__m_erf(inf), 1.0);
    CHECK_SAME(gr__m_erf(-inf), -1.0); CHECK_SAME(gr__m_erf(6.0), 1.0); CHECK_SAME(gr__m_erf(-1e300), -1.0);
    CHECK_ULPS(gr__m_erf(1e-300), erfl(1e-300), 1.0); CHECK_ULPS(gr__m_erf(-dmin / 3), erfl(-dmin / 3), 1.0);
    CHECK_ULPS(gr__m_erf(1.0), erfl(1.0), 2.0); CHECK_ULPS(gr__m_erf(-1.0000000000000002), erfl(-1.0000000000000002), 2.0);
    CHECK_SAME(gr__m_erfc(0.0), 1.0); CHECK_SAME(gr__m_erfc(-0.0), 1.0); CHECK_SAME(gr__m_erfc(inf), 0.0);
    CHECK_SAME(gr__m_erfc(-inf), 2.0); CHECK_SAME(gr__m_erfc(-6.0), 2.0); CHECK_SAME(gr__m_erfc(28.5), 0.0);
    CHECK_SAME(gr__m_erfc(tiny), 1.0); CHECK(gr__m_erfc(NAN) != gr__m_erfc(NAN));
    CHECK_ULPS(gr__m_erfc(26.5), erfcl(26.5), 4.0); CHECK_ULPS(gr__m_erfc(0.5), erfcl(0.5), 4.0);
    CHECK_ULPS(gr__m_erfc(-1.0), erfcl(-1.0), 4.0);
    for (k = 0; k < 40; k++) {                        /* subnormal results: within one of their ulp */
        double x = 26.55 + k * 0.0175;
        CHECK_MSG(gt_ulps(gr__m_erfc(x), erfcl(x), 53, -1021) <= 1.0, "erfc(%.17g)", x);
    }
    CHECK_SAME(gr__m_exp2(0.0), 1.0); CHECK_SAME(gr__m_exp2(-0.0), 1.0); CHECK_SAME(gr__m_exp2(inf), inf);
    CHECK_SAME(gr__m_exp2(-inf), 0.0); CHECK_SAME(gr__m_exp2(1024.0), inf); CHECK_SAME(gr__m_exp2(-1075.0), 0.0);
    CHECK_SAME(gr__m_exp2(-1074.5), tiny); CHECK_SAME(gr__m_exp2(1e-300), 1.0);
    for (k = -1074; k <= 1023; k++) CHECK_MSG(gr__m_exp2(k) == ldexp(1.0, k), "exp2(%d)", k);
    CHECK_SAME(gr__m_exp2(1023.9999999999999), (double)exp2l(1023.9999999999999));
    CHECK_SAME(gr__m_exp2(-1022.5), (double)exp2l(-1022.5));
    CHECK_SAME(gr__m_log2(1.0), 0.0); CHECK_SAME(gr__m_log2(0.0), -inf); CHECK_SAME(gr__m_log2(-0.0), -inf);
    CHECK(gr__m_log2(-1.0) != gr__m_log2(-1.0)); CHECK(gr__m_log2(-inf) != gr__m_log2(-inf));
    CHECK_SAME(gr__m_log2(inf), inf); CHECK_SAME(gr__m_log2(DBL_MAX), (double)log2l(DBL_MAX));
    for (k = -1074; k <= 1023; k++) CHECK_MSG(gr__m_log2(ldexp(1.0, k)) == k, "log2(2^%d)", k);
    CHECK_ULPS(gr__m_log2(dmin / 3), log2l(dmin / 3), 1.0); CHECK_ULPS(gr__m_log2(1.0000000000000002), log2l(1.0000000000000002), 1.0);
    CHECK_SAME(gr__m_sinh(0.0), 0.0); CHECK_SAME(gr__m_sinh(-0.0), -0.0); CHECK_SAME(gr__m_sinh(inf), inf);
    CHECK_SAME(gr__m_sinh(-inf), -inf); CHECK_SAME(gr__m_sinh(-tiny), -tiny); CHECK_SAME(gr__m_sinh(1e-300), 1e-300);
    CHECK_SAME(gr__m_sinh(710.48), inf); CHECK_SAME(gr__m_sinh(-710.48), -inf);
    CHECK_ULPS(gr__m_sinh(710.47), sinhl(710.47), 3.0); CHECK_ULPS(gr__m_sinh(-705.3), sinhl(-705.3), 3.0);
    CHECK_SAME(gr__m_cosh(0.0), 1.0); CHECK_SAME(gr__m_cosh(-0.0), 1.0); CHECK_SAME(gr__m_cosh(inf), inf);
    CHECK_SAME(gr__m_cosh(-inf), inf); CHECK_SAME(gr__m_cosh(tiny), 1.0); CHECK_SAME(gr__m_cosh(-710.48), inf);
    CHECK_ULPS(gr__m_cosh(-710.47), coshl(-710.47), 2.0); CHECK_ULPS(gr__m_cosh(709.1), coshl(709.1), 2.0);
    CHECK_SAME((double)gr__m_erff(-0.0f), -0.0); CHECK_SAME((double)gr__m_log2f(0.0f), -inf);
    CHECK(isinf(gr__m_exp2f(128.0f)) && !isinf(gr__m_exp2f(127.99f)) && isinf(gr__m_coshf(89.5f)));
}

/* tan and the inverse functions: exact values, limits, the C library's outside the domains */
TEST(test_vmath_special_values_inverse) {
    double inf = INFINITY, tiny = 4.9406564584124654e-324, pio2 = 1.5707963267948966, pi = 3.1415926535897931;
    CHECK_SAME(gr__m_tan(0.0), 0.0); CHECK_SAME(gr__m_tan(-0.0), -0.0); CHECK_SAME(gr__m_tan(-tiny), -tiny);
    CHECK(gr__m_tan(inf) != gr__m_tan(inf)); CHECK_SAME(gr__m_tan(1e300), tan(1e300));
    CHECK_ULPS(gr__m_tan(pio2), tanl(pio2), 3.0); CHECK_ULPS(gr__m_tan(-pi), tanl(-pi), 3.0);
    CHECK_ULPS(gr__m_tan(1647098.0), tanl(1647098.0), 3.0);
    CHECK_SAME(gr__m_arctan(0.0), 0.0); CHECK_SAME(gr__m_arctan(-0.0), -0.0); CHECK_SAME(gr__m_arctan(tiny), tiny);
    CHECK_SAME(gr__m_arctan(inf), pio2); CHECK_SAME(gr__m_arctan(-inf), -pio2); CHECK_SAME(gr__m_arctan(-1e300), -pio2);
    CHECK_SAME(gr__m_arctan(1.0), (double)atanl(1.0)); CHECK_SAME(gr__m_arctan(-1e-300), -1e-300);
    CHECK_SAME(gr__m_arcsin(1.0), pio2); CHECK_SAME(gr__m_arcsin(-1.0), -pio2); CHECK_SAME(gr__m_arcsin(-0.0), -0.0);
    CHECK_SAME(gr__m_arcsin(tiny), tiny); CHECK(gr__m_arcsin(1.0000000000000002) != gr__m_arcsin(1.0000000000000002));
    CHECK_SAME(gr__m_arccos(1.0), 0.0); CHECK_SAME(gr__m_arccos(-1.0), pi); CHECK_SAME(gr__m_arccos(0.0), pio2);
    CHECK(gr__m_arccos(-inf) != gr__m_arccos(-inf));
    CHECK_SAME(gr__m_arctanh(0.0), 0.0); CHECK_SAME(gr__m_arctanh(-0.0), -0.0); CHECK_SAME(gr__m_arctanh(-tiny), -tiny);
    CHECK_SAME(gr__m_arctanh(1.0), inf); CHECK_SAME(gr__m_arctanh(-1.0), -inf); CHECK(gr__m_arctanh(2.0) != gr__m_arctanh(2.0));
    CHECK_ULPS(gr__m_arctanh(0.9999999999999999), atanhl(0.9999999999999999), 2.0);
    CHECK_SAME(gr__m_arcsinh(0.0), 0.0); CHECK_SAME(gr__m_arcsinh(-0.0), -0.0); CHECK_SAME(gr__m_arcsinh(tiny), tiny);
    CHECK_SAME(gr__m_arcsinh(inf), inf); CHECK_SAME(gr__m_arcsinh(-inf), -inf);
    CHECK_ULPS(gr__m_arcsinh(-DBL_MAX), asinhl(-DBL_MAX), 2.0); CHECK_ULPS(gr__m_arcsinh(268435456.0), asinhl(268435456.0), 2.0);
    CHECK_ULPS(gr__m_arcsinh(268435456.00000006), asinhl(268435456.00000006), 2.0);
    CHECK_SAME(gr__m_arccosh(1.0), 0.0); CHECK(gr__m_arccosh(0.5) != gr__m_arccosh(0.5)); CHECK_SAME(gr__m_arccosh(inf), inf);
    CHECK_ULPS(gr__m_arccosh(DBL_MAX), acoshl(DBL_MAX), 2.5); CHECK_ULPS(gr__m_arccosh(1.0000000000000002), acoshl(1.0000000000000002), 2.5);
    CHECK(gr__m_arccosh(NAN) != gr__m_arccosh(NAN) && gr__m_arctan(NAN) != gr__m_arctan(NAN) && gr__m_tan(NAN) != gr__m_tan(NAN));
    CHECK_SAME((double)gr__m_arctanf(-0.0f), -0.0); CHECK_SAME((double)gr__m_arcsinf(1.0f), (double)(float)pio2);
    {
        int k;                                         /* cbrt: exact cubes and powers of 2^3, subnormals */
        for (k = 1; k <= 3000; k++) CHECK_MSG(gr__m_cbrt((double)k * k * k) == k && gr__m_cbrt(-(double)k * k * k) == -k, "cbrt(%d^3)", k);
        for (k = -1074; k <= 1023; k++) if (k % 3 == 0) CHECK_MSG(gr__m_cbrt(ldexp(1.0, k)) == ldexp(1.0, k / 3), "cbrt(2^%d)", k);
        CHECK_SAME(gr__m_cbrt(0.0), 0.0); CHECK_SAME(gr__m_cbrt(-0.0), -0.0); CHECK_SAME(gr__m_cbrt(-inf), -inf);
        CHECK(gr__m_cbrt(NAN) != gr__m_cbrt(NAN)); CHECK_ULPS(gr__m_cbrt(-tiny), cbrtl(-tiny), 1.0);
        CHECK_ULPS(gr__m_cbrt(DBL_MAX), cbrtl(DBL_MAX), 1.0); CHECK_ULPS(gr__m_cbrt(2.2250738585072014e-308 / 3), cbrtl(2.2250738585072014e-308 / 3), 1.0);
    }
}

/* the vector kernels equal the scalar functions bit for bit, on every element */
TEST(test_vmath_vector_equals_scalar) {
    enum { N = 4099 };
    double *x = (double *)malloc(sizeof(double) * N), *y = (double *)malloc(sizeof(double) * N);
    float *xf = (float *)malloc(sizeof(float) * N), *yf = (float *)malloc(sizeof(float) * N);
    uint64_t seed = 7;
    int i, j, bad;
    if (!x || !y || !xf || !yf) { CHECK(0); free(x); free(y); free(xf); free(yf); return; }
    for (i = 0; i < TV_NFN; i++) {
        const tv_fn *fn = &tv_fns[i];
        for (j = 0; j < N; j++) {
            double v = tv_point(j % 97 - 40, (unsigned)j, N, &seed) * (j % 2 ? -1 : 1);
            if (j % 13 == 0) v = ldexp(v, j % 1900 - 1000);           /* a special lane here and there */
            if (j == 501) v = NAN;
            if (j == 777) v = INFINITY;
            if (j == 1001) v = -0.0;
            x[j] = v;
            xf[j] = (float)v;
        }
        fn->map(N, y, x);
        for (bad = 0, j = 0; j < N; j++) if (!tv_same(y[j], fn->f(x[j]))) bad++;
        CHECK_MSG(bad == 0, "%s: %d of %d float64 elements differ from the scalar function", fn->name, bad, N);
        memcpy(y, x, sizeof(double) * N);
        fn->map(N - 1, y + 1, y + 1);                                  /* in place, unaligned */
        for (bad = 0, j = 1; j < N; j++) if (!tv_same(y[j], fn->f(x[j]))) bad++;
        CHECK_MSG(bad == 0, "%s: %d float64 elements differ in place", fn->name, bad);
        gr__vm_f32(N, yf, xf, fn->map);
        for (bad = 0, j = 0; j < N; j++) if (!tv_same((double)yf[j], (double)fn->f32(xf[j]))) bad++;
        CHECK_MSG(bad == 0, "%s: %d float32 elements differ from the scalar function", fn->name, bad);
    }
    {   /* the pair: sin and cos in one pass, equal to the rows'; then |x| < 0.8 densely, where the
           scalar functions skip the reduction (n = 0) and the vector lanes do not */
        int set;
        for (set = 0; set < 2; set++) {
            double *c = (double *)malloc(sizeof(double) * N);
            for (j = 0; j < N; j++)
                x[j] = set == 0 ? (j - 2000) * 0.37 + (j % 7 == 0 ? 1e7 : 0) : j % 5 == 0 ? ldexp(1.0 + j * 1e-4, -(j % 1070)) * (j % 2 ? -1 : 1)
                                                                           : -0.8 + 1.6 * j / (N - 1);
            if (c) {
                gr__vm_sincos(GR_F64, y, c, x, 1, N);
                for (bad = 0, j = 0; j < N; j++) if (!tv_same(y[j], gr__m_sin(x[j])) || !tv_same(c[j], gr__m_cos(x[j]))) bad++;
                CHECK_MSG(bad == 0, "sincos (set %d): %d elements differ from sin and cos", set, bad);
                free(c);
            } else CHECK(0);
        }
    }
    free(x); free(y); free(xf); free(yf);
}

/* x86-64 without AVX: each map has a 16-byte (SSE2) and a 32-byte (AVX2) version, the second taken when
   the CPU has AVX2; both equal the scalar functions bit for bit (a group of vectors, one vector, the
   tail; groups holding a special lane; pow and arctan2 with strides 1 and 0) */
#if GR__VM_W
typedef struct tv_wide { const char *name; tv_f64 f; tv_map v, w; } tv_wide;
#define TV_W(f) { #f, gr__m_##f, gr__vm_##f##_map_v, gr__vm_##f##_map_w }
static const tv_wide tv_wides[] = {
    TV_W(exp), TV_W(expm1), TV_W(tanh), TV_W(log), TV_W(log1p), TV_W(sin), TV_W(cos), TV_W(sigmoid), TV_W(softplus),
    TV_W(erf), TV_W(erfc), TV_W(exp2), TV_W(log2), TV_W(sinh), TV_W(cosh), TV_W(tan), TV_W(arctan), TV_W(arcsin),
    TV_W(arccos), TV_W(arctanh), TV_W(arcsinh), TV_W(arccosh), TV_W(cbrt)
};
#endif
static double tv_rand(uint64_t *seed) { *seed = *seed * 6364136223846793005u + 1442695040888963407u; return (double)(*seed >> 11) / 9007199254740992.0; }
TEST(test_vmath_both_widths) {
#if GR__VM_W
    enum { N = 2053 };
    double *x = (double *)malloc(sizeof(double) * N), *y = (double *)malloc(sizeof(double) * N), *z = (double *)malloc(sizeof(double) * N);
    uint64_t seed = 5;
    int i, j, sb, bad, width, nw = (int)(sizeof tv_wides / sizeof tv_wides[0]);
    if (!x || !y || !z) { CHECK(0); free(x); free(y); free(z); return; }
    for (i = 0; i < nw; i++) {
        const tv_wide *fn = &tv_wides[i];
        for (j = 0; j < N; j++) {
            double v = tv_point(j % 89 - 40, (unsigned)j, N, &seed) * (j % 2 ? -1 : 1);
            if (j % 29 == 0) v = ldexp(v, j % 1900 - 1000);
            x[j] = j == 333 ? NAN : j == 1500 ? -INFINITY : v;
        }
        for (width = 0; width < 2; width++) {
            if (width == 1 && !gr__vm_avx2()) break;
            (width ? fn->w : fn->v)(N, y, x);
            for (bad = 0, j = 0; j < N; j++) if (!tv_same(y[j], fn->f(x[j]))) bad++;
            CHECK_MSG(bad == 0, "%s, %d-byte vectors: %d of %d elements differ from the scalar function", fn->name, width ? 32 : 16, bad, N);
        }
    }
    for (j = 0; j < N; j++) {                       /* pow and arctan2 */
        x[j] = ldexp(1.0 + tv_rand(&seed), (int)(tv_rand(&seed) * 40) - 20) * (j % 31 == 0 ? -1 : 1);
        z[j] = (tv_rand(&seed) - 0.5) * (j % 7 == 0 ? 2000.0 : 20.0);
    }
    for (width = 0; width < 2; width++)
        for (sb = 0; sb <= 1; sb++) {
            if (width == 1 && !gr__vm_avx2()) break;
            (width ? gr__vm_pow_map_w : gr__vm_pow_map_v)(N, y, x, 1, sb ? z : z + 5, sb);
            for (bad = 0, j = 0; j < N; j++) if (!tv_same(y[j], gr__m_pow(x[j], sb ? z[j] : z[5]))) bad++;
            CHECK_MSG(bad == 0, "pow, %d-byte vectors, stride %d: %d elements differ", width ? 32 : 16, sb, bad);
            (width ? gr__vm_arctan2_map_w : gr__vm_arctan2_map_v)(N, y, z, sb, x, 1);
            for (bad = 0, j = 0; j < N; j++) if (!tv_same(y[j], gr__m_arctan2(sb ? z[j] : z[0], x[j]))) bad++;
            CHECK_MSG(bad == 0, "arctan2, %d-byte vectors, stride %d: %d elements differ", width ? 32 : 16, sb, bad);
        }
    free(x); free(y); free(z);
#else
    /* (one width: test_vmath_vector_equals_scalar covers it) */
    double x[3] = { 0.5, 1.0, 2.0 }, y[3];
    gr__vm_log_map(3, y, x);
    CHECK(tv_same(y[0], gr__m_log(0.5)) && y[1] == 0.0 && tv_same(y[2], gr__m_log(2.0)));
#endif
}

/* the rows run these kernels: gr_call over arrays equals the scalar functions (float64 and float32,
   a whole array, a broadcast 0-d value, and a fused group sin(x) exp(-x) + log1p(x x) + tanh(x) x) */
TEST(test_vmath_rows_use_them) {
    enum { N = 1003 };
    int dt;
    for (dt = 0; dt < 2; dt++) {
        gr_dtype T = dt ? GR_F32 : GR_F64;
        gr_graph *g = gr_graph_new();
        int64_t shape[1] = { N };
        gr_var *x = gr_tensor(g, T, 1, shape, "x"), *outs[8];
        gr_var *w = gr_add(gr_add(gr_mul(gr_sin(x), gr_exp(gr_neg(x))), gr_log1p(gr_mul(x, x))), gr_mul(gr_tanh(x), x));
        gr_fn *f;
        gr_array *xa = gr_array_new(T, 1, shape);
        const gr_array *res[8];
        int i, j, bad = 0;
        outs[0] = gr_exp(x); outs[1] = gr_expm1(x); outs[2] = gr_tanh(x); outs[3] = gr_log(gr_abs(x));
        outs[4] = gr_log1p(gr_abs(x)); outs[5] = gr_sin(x); outs[6] = gr_cos(x); outs[7] = w;
        f = gr_function(1, &x, 8, outs, NULL);
        CHECK(f != NULL && xa != NULL);
        if (!f || !xa) { gr_array_free(xa); gr_fn_free(f); gr_graph_free(g); continue; }
        for (j = 0; j < N; j++) gr_array_set(xa, j, (j - 500) * 0.0213 + (j == 7 ? 900.0 : 0.0));
        CHECK_STATUS(gr_call(f, (const gr_array *const *)&xa, res), GR_OK);
        for (j = 0; j < N; j++) {
            double v = gr_array_get(xa, j), a = fabs(v), want[8];
            if (dt) {
                float vf = (float)v, af = (float)a;
                want[0] = gr__m_expf(vf); want[1] = gr__m_expm1f(vf); want[2] = gr__m_tanhf(vf); want[3] = gr__m_logf(af);
                want[4] = gr__m_log1pf(af); want[5] = gr__m_sinf(vf); want[6] = gr__m_cosf(vf);
                want[7] = (double)(gr__m_sinf(vf) * gr__m_expf(-vf) + gr__m_log1pf(vf * vf) + gr__m_tanhf(vf) * vf);
            } else {
                want[0] = gr__m_exp(v); want[1] = gr__m_expm1(v); want[2] = gr__m_tanh(v); want[3] = gr__m_log(a);
                want[4] = gr__m_log1p(a); want[5] = gr__m_sin(v); want[6] = gr__m_cos(v);
                want[7] = gr__m_sin(v) * gr__m_exp(-v) + gr__m_log1p(v * v) + gr__m_tanh(v) * v;
            }
            for (i = 0; i < 7; i++) if (!tv_same(gr_array_get(res[i], j), want[i])) bad++;
            if (!(fabs(gr_array_get(res[7], j) - want[7]) <= (dt ? 2e-6 : 1e-14) * (1 + fabs(want[7])))) bad++;
        }
        CHECK_MSG(bad == 0, "%s: %d values differ from the scalar functions", dt ? "float32" : "float64", bad);
        gr_array_free(xa);
        gr_fn_free(f);
        gr_graph_free(g);
    }
}

/* the rows of the second set run them: gr_call over an array (float64 and float32, a value outside
   the main range among them) equals the scalar function bit for bit */
typedef struct tv_row { gr_var *(*op)(gr_var *); tv_f64 f; tv_f32 f32; double lo, hi; } tv_row;
static const tv_row tv_rows[] = {
    { gr_erf, gr__m_erf, gr__m_erff, -6, 6 }, { gr_erfc, gr__m_erfc, gr__m_erfcf, -6, 30 },
    { gr_exp2, gr__m_exp2, gr__m_exp2f, -40, 1100 }, { gr_log2, gr__m_log2, gr__m_log2f, -1, 100 },
    { gr_sinh, gr__m_sinh, gr__m_sinhf, -30, 800 }, { gr_cosh, gr__m_cosh, gr__m_coshf, -30, 800 },
    { gr_tan, gr__m_tan, gr__m_tanf, -10, 1e7 }, { gr_arctan, gr__m_arctan, gr__m_arctanf, -10, 10 },
    { gr_arcsin, gr__m_arcsin, gr__m_arcsinf, -1, 1.2 }, { gr_arccos, gr__m_arccos, gr__m_arccosf, -1, 1.2 },
    { gr_arctanh, gr__m_arctanh, gr__m_arctanhf, -1, 1.2 }, { gr_arcsinh, gr__m_arcsinh, gr__m_arcsinhf, -1e3, 1e3 },
    { gr_arccosh, gr__m_arccosh, gr__m_arccoshf, 0.5, 1e3 }, { gr_cbrt, gr__m_cbrt, gr__m_cbrtf, -1e3, 1e3 },
};
enum { TV_NROW = (int)(sizeof tv_rows / sizeof tv_rows[0]) };
TEST(test_vmath_rows_use_them_more) {
    enum { N = 517 };
    int dt, r;
    for (dt = 0; dt < 2; dt++) {
        gr_dtype T = dt ? GR_F32 : GR_F64;
        gr_graph *g = gr_graph_new();
        int64_t shape[1] = { N };
        gr_var *x = gr_tensor(g, T, 1, shape, "x"), *outs[TV_NROW];
        gr_fn *f;
        gr_array *xa = gr_array_new(T, 1, shape);
        const gr_array *res[TV_NROW];
        for (r = 0; r < TV_NROW; r++) outs[r] = tv_rows[r].op(x);
        f = gr_function(1, &x, TV_NROW, outs, NULL);
        CHECK(f != NULL && xa != NULL);
        for (r = 0; f && xa && r < TV_NROW; r++) {
            const tv_row *w = &tv_rows[r];
            int j, bad = 0;
            for (j = 0; j < N; j++) gr_array_set(xa, j, w->lo + (w->hi - w->lo) * j / (N - 1.0));
            CHECK_STATUS(gr_call(f, (const gr_array *const *)&xa, res), GR_OK);
            for (j = 0; j < N; j++) {
                double v = gr_array_get(xa, j), want = dt ? (double)w->f32((float)v) : w->f(v);
                if (!tv_same(gr_array_get(res[r], j), want)) bad++;
            }
            CHECK_MSG(bad == 0, "row %d, %s: %d values differ from the scalar function", r, dt ? "float32" : "float64", bad);
        }
        gr_array_free(xa);
        gr_fn_free(f);
        gr_graph_free(g);
    }
}

/* pow: accuracy against powl where the result is normal (x over every binade, y up to the
   overflow and underflow edges, near 1 with huge y, integers), float32 too; the C library's pow
   outside the main range (specials); the vector map (strides 1 and 0, in place) equals gr__m_pow
   bit for bit; the row runs it */
static void tv_pow_one(double x, double y, tv_worst *w64, tv_worst *w32, double *ywx) {
    long double want = powl((long double)x, (long double)y);
    double e = gt_ulps(gr__m_pow(x, y), want, 53, -1021);
    float xf = (float)x, yf = (float)y;
    if (e > w64->err || e != e) { w64->err = e; w64->at = x; *ywx = y; }
    want = powl((long double)xf, (long double)yf);
    if (isinf((float)want) || isinf(xf) || isinf(yf)) return;
    e = gt_ulps(gr__m_powf(xf, yf), want, 24, -125);
    if (e > w32->err || e != e) { w32->err = e; w32->at = (double)xf; }
}
TEST(test_vmath_pow_accuracy) {
#if LDBL_MANT_DIG >= 64
    tv_worst w64 = { 0, 0 }, w32 = { 0, 0 };
    uint64_t seed = 777;
    double yw = 0;
    int b, k;
    for (b = -1022; b <= 1023; b++)                     /* every binade of x, y to the edges */
        for (k = 0; k < 16; k++) {
            double x = ldexp(1.0 + tv_rand(&seed), b), lx = log(x);
            tv_pow_one(x, (tv_rand(&seed) - 0.5) * 2 * 745.0 / fabs(lx != 0 ? lx : 1.0), &w64, &w32, &yw);
            tv_pow_one(x, (tv_rand(&seed) - 0.5) * 8.0, &w64, &w32, &yw);
        }
    for (k = 0; k < 40000; k++) {
        double x = 0.5 + 1.5 * tv_rand(&seed);           /* the largest s of the log: x near 1.41 */
        tv_pow_one(x, (tv_rand(&seed) - 0.5) * 2 * 709.0 / fabs(log(x)), &w64, &w32, &yw);
        tv_pow_one(1.0 + (tv_rand(&seed) - 0.5) * 1e-6, (tv_rand(&seed) - 0.5) * 1e9, &w64, &w32, &yw);
        tv_pow_one(10.0 * tv_rand(&seed), floor((tv_rand(&seed) - 0.5) * 40.0), &w64, &w32, &yw);
    }
    CHECK_MSG(w64.err <= 2.0, "pow float64: %.3f ulp at %.17g^%.17g, bound 2", w64.err, w64.at, yw);
    CHECK_MSG(w32.err <= 0.501, "pow float32: %.4f ulp at x = %.9g, bound 0.501", w32.err, w32.at);
    if (getenv("GT_VMATH_PRINT"))
        printf("vmath %-8s float64 %.3f ulp (at %.17g^%.17g), float32 %.4f ulp (at x = %.9g)\n", "pow", w64.err, w64.at, yw, w32.err, w32.at);
#endif
}

/* pow's table log (gr__vm_log_dd): hi + lo against long double within 2^-60 relative at both ends of
   each of the 128 intervals (an ulp inside), and at 1 +- tiny; pow there with y up to the overflow edge
   within 2 ulp; arcsinh and arccosh where the log1p lanes meet the log ones (2) and where a^2 overflows
   (1.34e154), vector maps equal to the scalar functions there */
TEST(test_vmath_table_log_edges) {
#if LDBL_MANT_DIG >= 64
    double worst = 0, wat = 0, y, xs[48], ys[48], v[48];
    int i, j, n = 0;
    for (i = 0; i < 128; i++)
        for (j = 0; j < 4; j++) {
            uint64_t bits = GR__VM_LOGT_OFF + ((uint64_t)(i + (j >> 1)) << 45) + (j & 1 ? -(uint64_t)1 : 1);
            double z = gr__vm_d(bits), x = ldexp(z, (int)(i * 7 % 61) - 30), lo, hi = gr__vm_log_dd_s(x, &lo);
            long double want = logl((long double)x), rel = fabsl(((long double)hi + lo - want) / want);
            if ((double)rel > worst) { worst = (double)rel; wat = x; }
            y = 700.0 / log(x);
            CHECK(gt_ulps(gr__m_pow(x, y), powl(x, y), 53, -1021) <= 2.0);
        }
    for (i = 1; i < 60; i++) {
        double x = 1.0 + ldexp(i & 1 ? 1.0 : -1.0, -i), lo, hi = gr__vm_log_dd_s(x, &lo);
        long double want = logl((long double)x), rel = fabsl(((long double)hi + lo - want) / want);
        if ((double)rel > worst) { worst = (double)rel; wat = x; }
    }
    CHECK_MSG(worst < ldexp(1.0, -60), "pow's log: relative error %.3g at %.17g", worst, wat);
    for (i = 0; i < 24; i++) {                          /* 2 - 12 ulp ... 2 + 11 ulp, and around 2^512 */
        xs[n] = 2.0 + ldexp(i - 12, -51); ys[n++] = ldexp(1.0 + ldexp(i - 12, -30), 512);
    }
    for (i = 0; i < n; i++) {
        CHECK(gt_ulps(gr__m_arcsinh(xs[i]), asinhl(xs[i]), 53, -1021) <= 2.5);
        CHECK(gt_ulps(gr__m_arccosh(xs[i]), acoshl(xs[i]), 53, -1021) <= 2.5);
        CHECK(gt_ulps(gr__m_arcsinh(-ys[i]), asinhl(-ys[i]), 53, -1021) <= 2.5);
        CHECK(gt_ulps(gr__m_arccosh(ys[i]), acoshl(ys[i]), 53, -1021) <= 2.5);
        xs[n + i] = i & 1 ? ys[i] : -xs[i];
    }
    gr__vm_arcsinh_map(2 * n, v, xs);
    for (i = 0; i < 2 * n; i++) CHECK(v[i] == gr__m_arcsinh(xs[i]));
    for (i = 0; i < 2 * n; i++) xs[i] = fabs(xs[i]);
    gr__vm_arccosh_map(2 * n, v, xs);
    for (i = 0; i < 2 * n; i++) CHECK(v[i] == gr__m_arccosh(xs[i]));
#endif
}

TEST(test_vmath_pow_special_values) {
    double inf = INFINITY, nan = NAN, tiny = 4.9406564584124654e-324;
    static const double xs[] = { 0.0, -0.0, 1.0, -1.0, -2.0, 2.0, 0.5, INFINITY, -INFINITY, NAN, 4.9406564584124654e-324, 1e-310, 1e300 };
    static const double ys[] = { 0.0, -0.0, 1.0, -1.0, 2.0, 3.0, -3.0, 0.5, -0.5, 1e300, -1e300, 1e19, INFINITY, -INFINITY, NAN, 1100.0, -1100.0 };
    int i, j;
    for (i = 0; i < (int)(sizeof xs / sizeof xs[0]); i++)          /* the specials: the C library's */
        for (j = 0; j < (int)(sizeof ys / sizeof ys[0]); j++) {
            double x = xs[i], y = ys[j], got = gr__m_pow(x, y), want = pow(x, y);
            if (x > 2.2e-308 && x < 1e308 && fabs(y) <= 1e18 && fabs(y * log(x)) < 700)
                CHECK_MSG(gt_ulps(got, powl(x, y), 53, -1021) <= 2.0, "pow(%g, %g) = %.17g", x, y, got);
            else CHECK_MSG(tv_same(got, want), "pow(%g, %g) = %.17g, want %.17g", x, y, got, want);
        }
    CHECK_SAME(gr__m_pow(1.0, nan), 1.0); CHECK_SAME(gr__m_pow(nan, 0.0), 1.0); CHECK_SAME(gr__m_pow(-2.0, 3.0), -8.0);
    CHECK_SAME(gr__m_pow(-0.0, -1.0), -inf); CHECK_SAME(gr__m_pow(2.0, 1024.0), inf); CHECK_SAME(gr__m_pow(2.0, -1074.0), tiny);
    CHECK_SAME(gr__m_pow(2.0, 10.0), 1024.0); CHECK_SAME(gr__m_pow(4.0, 0.5), 2.0); CHECK_SAME(gr__m_pow(7.0, 0.0), 1.0);
    CHECK_SAME(gr__m_pow(1.0, 1e18), 1.0); CHECK_SAME(gr__m_pow(0.5, -1023.0), ldexp(1.0, 1023));
    CHECK_ULPS(gr__m_pow(10.0, 308.0), powl(10.0, 308.0), 2.0); CHECK_ULPS(gr__m_pow(10.0, -307.0), powl(10.0, -307.0), 2.0);
    CHECK_SAME(gr__m_pow(10.0, -320.0), pow(10.0, -320.0));                  /* subnormal: the C library's */
    CHECK_SAME((double)gr__m_powf(-2.0f, 3.0f), -8.0); CHECK(isinf(gr__m_powf(2.0f, 128.0f)));
}

typedef double (*tv_f64_2)(double, double);
typedef float (*tv_f32_2)(float, float);
typedef void (*tv_kernel)(int64_t n, void *out, const void *const *in, const int64_t *st);
typedef void (*tv_map2)(int64_t n, double *o, const double *a, int64_t sa, const double *b, int64_t sb);
typedef struct tv_bin { const char *name; tv_f64_2 f; tv_f32_2 f32; tv_kernel k64, k32; tv_map2 map; } tv_bin;
static const tv_bin tv_bins[] = {
    { "pow", gr__m_pow, gr__m_powf, gr__vmk_pow_f64, gr__vmk_pow_f32, gr__vm_pow_map },
    { "arctan2", gr__m_arctan2, gr__m_arctan2f, gr__vmk_arctan2_f64, gr__vmk_arctan2_f32, gr__vm_arctan2_map },
};
/* arctan2: accuracy against atan2l (pairs over every binade of the ratio, both signs, and dense
   draws), specials as the C library's (zeros, infinities, NaN) */
TEST(test_vmath_arctan2) {
#if LDBL_MANT_DIG >= 64
    static const double sp[] = { 0.0, -0.0, 1.0, -1.0, 1e-310, -1e300, INFINITY, -INFINITY, NAN };
    tv_worst w64 = { 0, 0 }, w32 = { 0, 0 };
    uint64_t seed = 4242;
    double yw = 0;
    int b, k, i, j;
    for (b = -1100; b <= 1100; b += 3)
        for (k = 0; k < 8; k++) {
            double y = ldexp(1.0 + tv_rand(&seed), b / 2) * (k & 1 ? -1 : 1), x = ldexp(1.0 + tv_rand(&seed), -b / 2) * (k & 2 ? -1 : 1);
            double e = gt_ulps(gr__m_arctan2(y, x), atan2l(y, x), 53, -1021);
            if (e > w64.err) { w64.err = e; w64.at = y; yw = x; }
        }
    for (k = 0; k < 100000; k++) {
        double y = (tv_rand(&seed) - 0.5) * 8, x = (tv_rand(&seed) - 0.5) * 8, e = gt_ulps(gr__m_arctan2(y, x), atan2l(y, x), 53, -1021);
        float yf = (float)y, xf = (float)x;
        if (e > w64.err) { w64.err = e; w64.at = y; yw = x; }
        e = gt_ulps(gr__m_arctan2f(yf, xf), atan2l(yf, xf), 24, -125);
        if (e > w32.err) { w32.err = e; w32.at = y; }
    }
    CHECK_MSG(w64.err <= 2.0, "arctan2 float64: %.3f ulp at (%.17g, %.17g), bound 2", w64.err, w64.at, yw);
    CHECK_MSG(w32.err <= 0.501, "arctan2 float32: %.4f ulp at y = %.9g, bound 0.501", w32.err, w32.at);
    if (getenv("GT_VMATH_PRINT"))
        printf("vmath %-8s float64 %.3f ulp (at %.17g, %.17g), float32 %.4f ulp\n", "arctan2", w64.err, w64.at, yw, w32.err);
    for (i = 0; i < (int)(sizeof sp / sizeof sp[0]); i++)
        for (j = 0; j < (int)(sizeof sp / sizeof sp[0]); j++) {
            double y = sp[i], x = sp[j], got = gr__m_arctan2(y, x);
            if (GR__VM_IN_arctan2(y, x)) CHECK_MSG(gt_ulps(got, atan2l(y, x), 53, -1021) <= 2.0, "arctan2(%g, %g) = %.17g", y, x, got);
            else CHECK_MSG(tv_same(got, atan2(y, x)), "arctan2(%g, %g) = %.17g, want %.17g", y, x, got, atan2(y, x));
        }
    CHECK_SAME(gr__m_arctan2(-0.0, 2.0), -0.0); CHECK_SAME(gr__m_arctan2(0.0, -2.0), 3.1415926535897931);
    CHECK_SAME(gr__m_arctan2(-1e-300, -2.0), -3.1415926535897931); CHECK_SAME(gr__m_arctan2(3.0, -0.0), 1.5707963267948966);
    CHECK_SAME(gr__m_arctan2(1.0, 1.0), (double)atanl(1.0)); CHECK_ULPS(gr__m_arctan2(1e-300, 1e300), atan2l(1e-300, 1e300), 1.0);
#endif
}

static void tv_bin_vector(const tv_bin *fn);
TEST(test_vmath_pow_vector_equals_scalar) {
    tv_bin_vector(&tv_bins[0]);
    tv_bin_vector(&tv_bins[1]);
}
static void tv_bin_vector(const tv_bin *fn) {
    enum { N = 1031 };
    double *x = (double *)malloc(sizeof(double) * N), *y = (double *)malloc(sizeof(double) * N), *o = (double *)malloc(sizeof(double) * N);
    uint64_t seed = 11;
    int j, bad, sa, sb;
    if (!x || !y || !o) { CHECK(0); free(x); free(y); free(o); return; }
    for (j = 0; j < N; j++) {
        x[j] = ldexp(1.0 + tv_rand(&seed), (int)(tv_rand(&seed) * 40) - 20);
        y[j] = (tv_rand(&seed) - 0.5) * (j % 5 == 0 ? 2000.0 : 20.0);       /* some results out of range */
        if (j % 17 == 0) x[j] = -x[j];
        if (j == 100) x[j] = 0.0;
        if (j == 200) y[j] = NAN;
        if (j == 300) x[j] = INFINITY;
    }
    for (sa = 0; sa <= 1; sa++)
        for (sb = 0; sb <= 1; sb++) {
            const void *in[2];
            int64_t st[2];
            in[0] = sa ? x : x + 1; in[1] = sb ? y : y + 3; st[0] = sa; st[1] = sb;
            fn->k64(N, o, in, st);
            for (bad = 0, j = 0; j < N; j++) if (!tv_same(o[j], fn->f(sa ? x[j] : x[1], sb ? y[j] : y[3]))) bad++;
            CHECK_MSG(bad == 0, "%s strides %d %d: %d of %d elements differ from the scalar function", fn->name, sa, sb, bad, N);
        }
    memcpy(o, x, sizeof(double) * N);
    fn->map(N - 1, o + 1, o + 1, 1, y + 1, 1);                       /* in place, unaligned */
    for (bad = 0, j = 1; j < N; j++) if (!tv_same(o[j], fn->f(x[j], y[j]))) bad++;
    CHECK_MSG(bad == 0, "%s in place: %d elements differ", fn->name, bad);
    {
        float *xf = (float *)malloc(sizeof(float) * N), *yf = (float *)malloc(sizeof(float) * N), *of = (float *)malloc(sizeof(float) * N);
        const void *in[2];
        int64_t st[2] = { 1, 1 };
        if (xf && yf && of) {
            for (j = 0; j < N; j++) { xf[j] = (float)x[j]; yf[j] = (float)(y[j] / 4); }
            in[0] = xf; in[1] = yf;
            fn->k32(N, of, in, st);
            for (bad = 0, j = 0; j < N; j++) if (!tv_same((double)of[j], (double)fn->f32(xf[j], yf[j]))) bad++;
            CHECK_MSG(bad == 0, "%s float32: %d elements differ from the scalar function", fn->name, bad);
        } else CHECK(0);
        free(xf); free(yf); free(of);
    }
    free(x); free(y); free(o);
}

TEST(test_vmath_pow_row) {
    enum { N = 301 };
    int dt;
    for (dt = 0; dt < 2; dt++) {
        gr_dtype T = dt ? GR_F32 : GR_F64;
        gr_graph *g = gr_graph_new();
        int64_t shape[1] = { N };
        gr_var *x = gr_tensor(g, T, 1, shape, "x"), *y = gr_tensor(g, T, 1, shape, "y"), *ins[2], *outs[3];
        gr_fn *f;
        gr_array *xa = gr_array_new(T, 1, shape), *ya = gr_array_new(T, 1, shape);
        const gr_array *res[3], *args[2];
        int j, bad = 0;
        ins[0] = x; ins[1] = y;
        outs[0] = gr_pow(x, y); outs[1] = gr_pow(x, gr_const(g, 2.5)); outs[2] = gr_arctan2(x, y);
        f = gr_function(2, ins, 3, outs, NULL);
        CHECK(f != NULL && xa != NULL && ya != NULL);
        if (!f || !xa || !ya) { gr_array_free(xa); gr_array_free(ya); gr_fn_free(f); gr_graph_free(g); continue; }
        for (j = 0; j < N; j++) { gr_array_set(xa, j, j * 0.037 - 1.0); gr_array_set(ya, j, (j % 23) * 0.71 - 8.0); }
        args[0] = xa; args[1] = ya;
        CHECK_STATUS(gr_call(f, args, res), GR_OK);
        for (j = 0; j < N; j++) {
            double v = gr_array_get(xa, j), w = gr_array_get(ya, j);
            double want0 = dt ? (double)gr__m_powf((float)v, (float)w) : gr__m_pow(v, w);
            double want1 = dt ? (double)gr__m_powf((float)v, 2.5f) : gr__m_pow(v, 2.5);
            double want2 = dt ? (double)gr__m_arctan2f((float)v, (float)w) : gr__m_arctan2(v, w);
            if (!tv_same(gr_array_get(res[0], j), want0) || !tv_same(gr_array_get(res[1], j), want1)) bad++;
            if (!tv_same(gr_array_get(res[2], j), want2)) bad++;
        }
        CHECK_MSG(bad == 0, "%s: %d values differ from gr__m_pow, gr__m_arctan2", dt ? "float32" : "float64", bad);
        gr_array_free(xa); gr_array_free(ya);
        gr_fn_free(f);
        gr_graph_free(g);
    }
}
#endif

#ifndef GR_NO_VECTOR_EXTENSIONS
/* One value's sin and cos (gr__vm_sincos1: the scalar program's pair, gr__m_sin, gr__m_cos) from
   0.78 to 2.356 in magnitude take n = +-1 without computing the quotient, with Fast2Sums (ops/vmath.c,
   gr__vm_sincos_s1): the vector lanes' bits (gr__vm_sincos_map, which reduces in general) and those
   of the general scalar reduction, and within 0.9 ulp of long double: uniform draws, both signs;
   every double within 4000 ulp of +-pi/2 and a wider comb up to 2e-10 from it (where the first
   Fast2Sum's condition fails near 6e-11); and 300 doubles on each side of 0.78, 0.7854 and 2.356 */
TEST(test_vmath_sincos_one_quadrant) {
    enum { N = 40000 };
    static const double edges[3] = { 0.78, 0.7854, 2.356 };
    double *x = (double *)malloc(sizeof(double) * N), *s = (double *)malloc(sizeof(double) * N), *c = (double *)malloc(sizeof(double) * N);
    uint64_t seed = 11;
    int j, n = 0, k, bad = 0, far = 0;
    if (!x || !s || !c) { CHECK(0); free(x); free(s); free(c); return; }
    for (j = 0; j < 12000; j++) x[n++] = (0.75 + 1.65 * tv_rand(&seed)) * (j % 2 ? -1 : 1);
    for (j = -4000; j <= 4000; j++) x[n++] = (1.5707963267948966 + j * 2.220446049250313e-16) * (j % 2 ? -1 : 1);
    for (j = -5000; j <= 5000; j++) x[n++] = (1.5707963267948966 + j * 4e-14) * (j % 3 ? 1 : -1);
    for (k = 0; k < 3; k++) {
        double up = edges[k], down = edges[k];
        for (j = 0; j < 300; j++) {
            x[n++] = up * (j % 2 ? -1 : 1); x[n++] = down * (j % 2 ? 1 : -1);
            up = nextafter(up, 4.0); down = nextafter(down, 0.0);
        }
    }
    while (n % 8) x[n++] = 1.0;
    gr__vm_sincos_map(n, s, c, x, 1);
    for (j = 0; j < n; j++) {
        double s1, c1, s2, c2;
        gr__vm_sincos1(x[j], &s1, &c1);
        gr__vm_sincos_core_s(x[j], &s2, &c2);
        if (!tv_same(s1, s[j]) || !tv_same(c1, c[j]) || !tv_same(s1, s2) || !tv_same(c1, c2) || !tv_same(s1, gr__m_sin(x[j])) ||
            !tv_same(c1, gr__m_cos(x[j]))) {
            if (bad++ < 3) CHECK_MSG(0, "x %.17g: sin %.17g cos %.17g, lanes %.17g %.17g", x[j], s1, c1, s[j], c[j]);
        }
        if (gt_ulps(s1, sinl((long double)x[j]), 53, -1021) > 0.9 || gt_ulps(c1, cosl((long double)x[j]), 53, -1021) > 0.9) far++;
    }
    CHECK_MSG(bad == 0, "%d of %d values differ from the vector lanes or the general reduction", bad, n);
    CHECK_MSG(far == 0, "%d of %d values are more than 0.9 ulp from long double", far, n);
    free(x); free(s); free(c);
}
#endif

SUITE(suite_vmath) = {
#ifndef GR_NO_VECTOR_EXTENSIONS
    CASE(test_vmath_accuracy),
    CASE(test_vmath_special_values),
    CASE(test_vmath_special_values_more),
    CASE(test_vmath_special_values_inverse),
    CASE(test_vmath_vector_equals_scalar),
    CASE(test_vmath_sincos_one_quadrant),
    CASE(test_vmath_both_widths),
    CASE(test_vmath_rows_use_them),
    CASE(test_vmath_rows_use_them_more),
    CASE(test_vmath_pow_accuracy),
    CASE(test_vmath_table_log_edges),
    CASE(test_vmath_pow_special_values),
    CASE(test_vmath_pow_vector_equals_scalar),
    CASE(test_vmath_pow_row),
    CASE(test_vmath_arctan2),
#endif
    END_SUITE
};
