/* tests/t_vmath.c: the elementwise math of our own (ops/vmath.c, issue 20 item 1): exp, expm1,
   tanh, log, log1p, sin, cos, sigmoid, softplus in float64 and float32.
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
};
enum { TV_NFN = (int)(sizeof tv_fns / sizeof tv_fns[0]) };

/* |got - want| in units of the last place of want rounded to the format of mant bits (min_exp:
   the format's smallest normal exponent, so that subnormals count in their own ulp) */
static double tv_ulps(long double got, long double want, int mant, int min_exp) {
    int e;
    if (want != want) return got != got ? 0 : 1e30;
    if (isinf((double)want) || isinf((double)got)) return (double)got == (double)want ? 0 : 1e30;
    if (want == 0) return got == 0 ? 0 : 1e30;
    frexpl(want, &e);
    if (e < min_exp) e = min_exp;
    return (double)(fabsl(got - want) / ldexpl(1.0L, e - mant));
}

/* x64 and the ulp error of f at it, worst kept */
typedef struct tv_worst { double err, at; } tv_worst;
static void tv_one(const tv_fn *fn, double x, tv_worst *w64, tv_worst *w32) {
    long double want = fn->ref((long double)x);
    double e = tv_ulps(fn->f(x), want, 53, -1021);
    float xf = (float)x;
    if (e > w64->err || e != e) { w64->err = e; w64->at = x; }
    if (isinf(xf) && !isinf(x)) return;
    want = fn->ref((long double)xf);
    if (isinf((float)want)) e = fn->f32(xf) == (float)want ? 0 : 1e30;     /* overflows in float */
    else e = tv_ulps(fn->f32(xf), want, 24, -125);
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
            double span = !strcmp(fn->name, "tanh") ? 20.0 : !strcmp(fn->name, "log") ? 10.0 :
                          !strcmp(fn->name, "sin") || !strcmp(fn->name, "cos") ? 100.0 : 750.0;
            double x = (tv_point(0, k, 60000, &seed) - 1.5) * 2.0 * span;
            if (!strcmp(fn->name, "log")) x = fabs(x);
            if (!strcmp(fn->name, "log1p") && x <= -1) x = -x;
            tv_one(fn, x, &w64, &w32);
            tv_one(fn, x / 1024.0, &w64, &w32);
        }
        CHECK_MSG(w64.err <= fn->ulp64, "%s float64: %.3f ulp at %.17g, bound %.2f", fn->name, w64.err, w64.at, fn->ulp64);
        CHECK_MSG(w32.err <= fn->ulp32, "%s float32: %.4f ulp at %.9g, bound %.3f", fn->name, w32.err, w32.at, fn->ulp32);
        if (getenv("GT_VMATH_PRINT"))
            printf("vmath %-6s float64 %.3f ulp (at %.17g), float32 %.4f ulp (at %.9g)\n", fn->name, w64.err, w64.at, w32.err, w32.at);
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
        CHECK(tv_ulps(gr__m_exp(x), expl(x), 53, -1021) <= 1.0);
        CHECK(tv_ulps(gr__m_exp(1.0), expl(1.0L), 53, -1021) <= 1.0);
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
            CHECK_MSG(tv_ulps(gr__m_sin(near[i]), sinl(near[i]), 53, -1021) <= 1.0, "sin(%.17g)", near[i]);
            CHECK_MSG(tv_ulps(gr__m_cos(near[i]), cosl(near[i]), 53, -1021) <= 1.0, "cos(%.17g)", near[i]);
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
#endif

SUITE(suite_vmath) = {
#ifndef GR_NO_VECTOR_EXTENSIONS
    CASE(test_vmath_accuracy),
    CASE(test_vmath_special_values),
    CASE(test_vmath_vector_equals_scalar),
    CASE(test_vmath_rows_use_them),
#endif
    END_SUITE
};
