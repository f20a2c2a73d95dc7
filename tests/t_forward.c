/* tests/t_forward.c: forward values of every elementwise row of GR_ELEMWISE_OPS against plain-C
   reference functions, in every dtype the row's class allows, over same-shape, broadcast, 0-d and
   empty operands given as inputs with static and call-time shapes, as constants and as shared
   variables, under both optimize levels; dtype promotion; special values. The helpers of tests/forward.h live here too.

   The spec table below is keyed by row name: a row of the op table without a spec (or a spec
   without a row) fails test_ew_rows_have_specs. */
#include "forward.h"

/* ==== shared helpers =========================================================================== */

uint64_t gtf_next(gtf_rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

double gtf_uniform(gtf_rng *r, double lo, double hi) {
    double u = (double)(gtf_next(r) >> 11) * (1.0 / 9007199254740992.0);
    return lo + (hi - lo) * u;
}

int64_t gtf_int(gtf_rng *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)(gtf_next(r) % (uint64_t)(hi - lo + 1));
}

gr_array *gtf_random(gtf_rng *r, gr_dtype dt, int ndim, const int64_t *shape, double lo, double hi) {
    gr_array *a = gr_array_new(dt, ndim, shape);
    int64_t k;
    if (!a) return NULL;
    for (k = 0; k < a->size; k++) {
        switch (dt) {
        case GR_F64: ((double *)a->data)[k] = gtf_uniform(r, lo, hi); break;
        case GR_F32: ((float *)a->data)[k] = (float)gtf_uniform(r, lo, hi); break;
        case GR_I64: ((int64_t *)a->data)[k] = gtf_int(r, (int64_t)lo, (int64_t)hi); break;
        default: ((uint8_t *)a->data)[k] = (uint8_t)(gtf_next(r) & 1u); break;
        }
    }
    return a;
}

gr_var *gtf_input(gr_graph *g, gr_dtype dt, int ndim, const int64_t *shape, int dynamic, const char *name) {
    if (!dynamic) return gr_tensor(g, dt, ndim, shape, name);
    switch (ndim) {
    case 0: return gr_scalar(g, dt, name);
    case 1: return gr_vector(g, dt, name);
    case 2: return gr_matrix(g, dt, name);
    default: return gr_tensor(g, dt, ndim, NULL, name);
    }
}

int64_t gtf_bcast_index(int64_t flat, int ondim, const int64_t *oshape, int ndim, const int64_t *shape) {
    int64_t idx = 0, stride = 1;
    int i;
    for (i = ondim - 1; i >= 0; i--) {
        int64_t oi = flat % oshape[i];
        int j = i - (ondim - ndim);
        flat /= oshape[i];
        if (j < 0) continue;
        if (shape[j] != 1) idx += oi * stride;
        stride *= shape[j];
    }
    return idx;
}

double gtf_wantf(const gr_array *want, int64_t k) {
    return want->dtype == GR_I64 ? (double)((const int64_t *)want->data)[k] : ((const double *)want->data)[k];
}

static int64_t gtf_got_int(const gr_array *a, int64_t k) {
    if (a->dtype == GR_I64) return ((const int64_t *)a->data)[k];
    if (a->dtype == GR_BOOL) return ((const uint8_t *)a->data)[k];
    return (int64_t)gr_array_get(a, k);
}

static const char *gtf_shape_str(char *buf, size_t n, int ndim, const int64_t *shape) {
    size_t used = (size_t)snprintf(buf, n, "(");
    int i;
    for (i = 0; i < ndim && used < n; i++) used += (size_t)snprintf(buf + used, n - used, "%s%lld", i ? "," : "", (long long)shape[i]);
    if (used < n) snprintf(buf + used, n - used, ")");
    return buf;
}

int gtf_same(const gr_array *got, gr_dtype dtype, const gr_array *want, double tol, const char *label) {
    char s1[96], s2[96];
    int64_t k;
    int i;
    gt.checks++;
    if (!got) { gt_fail(__FILE__, __LINE__, "%s: no result", label); return 0; }
    if (got->dtype != dtype) {
        gt_fail(__FILE__, __LINE__, "%s: result dtype %s, want %s", label, gr_dtype_name(got->dtype), gr_dtype_name(dtype));
        return 0;
    }
    if (got->ndim != want->ndim || got->size != want->size) {
        gt_fail(__FILE__, __LINE__, "%s: result shape %s, want %s", label, gtf_shape_str(s1, sizeof s1, got->ndim, got->shape),
                gtf_shape_str(s2, sizeof s2, want->ndim, want->shape));
        return 0;
    }
    for (i = 0; i < got->ndim; i++)
        if (got->shape[i] != want->shape[i]) {
            gt_fail(__FILE__, __LINE__, "%s: result shape %s, want %s", label, gtf_shape_str(s1, sizeof s1, got->ndim, got->shape),
                    gtf_shape_str(s2, sizeof s2, want->ndim, want->shape));
            return 0;
        }
    for (k = 0; k < got->size; k++) {
        if (want->dtype == GR_I64) {
            int64_t w = ((const int64_t *)want->data)[k], v;
            if (got->dtype != GR_I64 && got->dtype != GR_BOOL) {
                gt_fail(__FILE__, __LINE__, "%s: an integer result was wanted, got %s", label, gr_dtype_name(got->dtype));
                return 0;
            }
            v = gtf_got_int(got, k);
            if (v != w) {
                gt_fail(__FILE__, __LINE__, "%s: element %lld is %lld, want %lld", label, (long long)k, (long long)v, (long long)w);
                return 0;
            }
        } else {
            double w = ((const double *)want->data)[k], v = gr_array_get(got, k);
            int ok;
            if (tol == 0 && got->dtype == GR_F32) w = (double)(float)w;
            if (v != v || w != w) ok = v != v && w != w;
            else if (v == w) ok = 1;
            else ok = tol > 0 && fabs(v - w) <= tol * (fabs(w) > 1 ? fabs(w) : 1.0);
            if (!ok) {
                gt_fail(__FILE__, __LINE__, "%s: element %lld is %.17g, want %.17g (tol %g)", label, (long long)k, v, w, tol);
                return 0;
            }
        }
    }
    return 1;
}

int gtf_expect(gr_graph *g, int n, gr_var *const *ins, const gr_array *const *arrays, gr_var *out, gr_dtype dtype,
               const gr_array *want, double tol, const char *label) {
    int level, ok = 1;
    gr_type t;
    gt.checks++;                         /* the static type; gtf_same counts each level's values */
    if (!out) {
        gt_fail(__FILE__, __LINE__, "%s: building failed: %s", label, gr_graph_message(g));
        return 0;
    }
    if (gr_var_dtype(out) != dtype) {
        gt_fail(__FILE__, __LINE__, "%s: static dtype %s, want %s", label, gr_dtype_name(gr_var_dtype(out)), gr_dtype_name(dtype));
        ok = 0;
    }
    if (gr_var_ndim(out) != want->ndim) {
        gt_fail(__FILE__, __LINE__, "%s: static ndim %d, want %d", label, gr_var_ndim(out), want->ndim);
        return 0;
    }
    if (gr_var_type(out, &t)) {          /* what the static shape knows must be true */
        int i;
        for (i = 0; i < t.ndim; i++)
            if (t.shape[i] >= 0 && t.shape[i] != want->shape[i]) {
                gt_fail(__FILE__, __LINE__, "%s: static dimension %d is %lld, the result has %lld", label, i,
                        (long long)t.shape[i], (long long)want->shape[i]);
                ok = 0;
            }
    }
    for (level = 0; level < 2; level++) {
        gr_fn_opts o;
        gr_fn *f;
        const gr_array *res[1];
        char lbl[256];
        gr_status st;
        memset(&o, 0, sizeof o);
        o.optimize = level ? GR_OPT_NONE : GR_OPT_FULL;
        snprintf(lbl, sizeof lbl, "%s [%s]", label, level ? "GR_OPT_NONE" : "GR_OPT_FULL");
        f = gr_function(n, ins, 1, &out, &o);
        if (!f) {
            gt_fail(__FILE__, __LINE__, "%s: gr_function failed: %s", lbl, gr_graph_message(g));
            ok = 0;
            continue;
        }
        res[0] = NULL;
        st = gr_call(f, arrays, res);
        if (st != GR_OK) {
            gt_fail(__FILE__, __LINE__, "%s: gr_call failed (%s): %s", lbl, gr_status_string(st), gr_fn_message(f));
            ok = 0;
        } else if (!gtf_same(res[0], dtype, want, tol, lbl))
            ok = 0;
        gr_fn_free(f);
    }
    return ok;
}

int gtf_expect_call_error(gr_graph *g, int n, gr_var *const *ins, const gr_array *const *arrays, gr_var *out,
                          gr_status code, const char *label) {
    int level, ok = 1;
    if (!out) {
        gt_fail(__FILE__, __LINE__, "%s: building failed: %s", label, gr_graph_message(g));
        return 0;
    }
    for (level = 0; level < 2; level++) {
        gr_fn_opts o;
        gr_fn *f;
        const gr_array *res[1];
        gr_status st;
        memset(&o, 0, sizeof o);
        o.optimize = level ? GR_OPT_NONE : GR_OPT_FULL;
        f = gr_function(n, ins, 1, &out, &o);
        gt.checks++;
        if (!f) {
            gt_fail(__FILE__, __LINE__, "%s: gr_function failed: %s", label, gr_graph_message(g));
            ok = 0;
            continue;
        }
        st = gr_call(f, arrays, res);
        if (st != code) {
            gt_fail(__FILE__, __LINE__, "%s [%s]: gr_call gave %s, want %s", label, level ? "GR_OPT_NONE" : "GR_OPT_FULL",
                    gr_status_string(st), gr_status_string(code));
            ok = 0;
        } else if (!gr_fn_message(f)[0]) {
            gt_fail(__FILE__, __LINE__, "%s: the failed call left no message", label);
            ok = 0;
        }
        gr_fn_free(f);
    }
    return ok;
}

int gtf_static_shape_is(const gr_var *v, int ndim, const int64_t *shape, const char *label) {
    gr_type t;
    int i;
    gt.checks++;
    if (!gr_var_type(v, &t)) { gt_fail(__FILE__, __LINE__, "%s: no variable", label); return 0; }
    if (t.ndim != ndim) { gt_fail(__FILE__, __LINE__, "%s: static ndim %d, want %d", label, t.ndim, ndim); return 0; }
    for (i = 0; i < ndim; i++)
        if (t.shape[i] != shape[i]) {
            gt_fail(__FILE__, __LINE__, "%s: static dimension %d is %lld, want %lld", label, i, (long long)t.shape[i],
                    (long long)shape[i]);
            return 0;
        }
    return 1;
}

/* ==== the rows of GR_ELEMWISE_OPS ================================================================ */

enum { GTF_FLOAT, GTF_ARITH, GTF_STEP, GTF_CMP, GTF_LOGIC, GTF_SELECT };
static const char *const gtf_class_names[] = { "FLOAT", "ARITH", "STEP", "CMP", "LOGIC", "SELECT" };

typedef struct gtf_row {
    const char *name;
    int arity, cls;
    gr_var *(*b1)(gr_var *);
    gr_var *(*b2)(gr_var *, gr_var *);
    gr_var *(*b3)(gr_var *, gr_var *, gr_var *);
} gtf_row;

#define GTF_B_1(name) gr_##name, NULL, NULL
#define GTF_B_2(name) NULL, gr_##name, NULL
#define GTF_B_3(name) NULL, NULL, gr_##name
#define GTF_ROW(name, arity, cls, fexpr, iexpr, d0, d1, d2) { #name, arity, GTF_##cls, GTF_B_##arity(name) },
static const gtf_row gtf_rows[] = { GR_ELEMWISE_OPS(GTF_ROW) };
#undef GTF_ROW
#define GTF_N_ROWS ((int)(sizeof gtf_rows / sizeof gtf_rows[0]))

/* ==== reference scalar functions: plain C double / int64 math, written from the definitions ====== */

#define GTF_F(name, expr) \
    static double gtf_f_##name(double a, double b, double c) { (void)a; (void)b; (void)c; return (double)(expr); }
#define GTF_I(name, expr) \
    static int64_t gtf_i_##name(int64_t a, int64_t b, int64_t c) { (void)a; (void)b; (void)c; return (int64_t)(expr); }

/* round half to even, from floor */
static double gtf_round_even(double x) {
    double f = floor(x), d = x - f;
    if (d < 0.5) return f;
    if (d > 0.5) return f + 1.0;
    return fmod(f, 2.0) == 0.0 ? f : f + 1.0;
}
/* floored modulo: the result takes the sign of the divisor */
static double gtf_fmod_floor(double a, double b) { return a - b * floor(a / b); }
static int64_t gtf_imod_floor(int64_t a, int64_t b) {
    int64_t q = a / b;
    if (q * b != a && ((a < 0) != (b < 0))) q -= 1;
    return a - q * b;
}
/* integer power by repeated multiplication, wrapping modulo 2^64; a negative exponent gives the
   true value truncated toward zero (0 unless |a| == 1) */
static int64_t gtf_ipow(int64_t a, int64_t b) {
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

GTF_F(neg, -a)                      GTF_I(neg, -a)
GTF_F(abs, a < 0 ? -a : a)          GTF_I(abs, a < 0 ? -a : a)
GTF_F(sqr, a * a)                   GTF_I(sqr, a * a)
GTF_F(sign, a != a ? a : a > 0 ? 1.0 : a < 0 ? -1.0 : 0.0)   GTF_I(sign, a > 0 ? 1 : a < 0 ? -1 : 0)
GTF_F(floor, floor(a))              GTF_I(floor, a)
GTF_F(ceil, -floor(-a))             GTF_I(ceil, a)
GTF_F(round, gtf_round_even(a))     GTF_I(round, a)
GTF_F(add, a + b)                   GTF_I(add, a + b)
GTF_F(sub, a - b)                   GTF_I(sub, a - b)
GTF_F(mul, a * b)                   GTF_I(mul, a * b)
GTF_F(div, a / b)
GTF_F(pow, exp(b * log(a)))         GTF_I(pow, gtf_ipow(a, b))
GTF_F(mod, gtf_fmod_floor(a, b))    GTF_I(mod, gtf_imod_floor(a, b))
GTF_F(maximum, a != a || b != b ? NAN : a > b ? a : b)       GTF_I(maximum, a > b ? a : b)
GTF_F(minimum, a != a || b != b ? NAN : a < b ? a : b)       GTF_I(minimum, a < b ? a : b)
GTF_F(clip, a < b ? b : a > c ? c : a)                       GTF_I(clip, a < b ? b : a > c ? c : a)  /* Aesara's Clip */
GTF_F(where, a != 0 ? b : c)        GTF_I(where, a != 0 ? b : c)
GTF_F(exp, exp(a))
GTF_F(exp2, pow(2.0, a))
GTF_F(expm1, exp(a) - 1.0)
GTF_F(log, log(a))
GTF_F(log2, log(a) / log(2.0))
GTF_F(log1p, log(1.0 + a))
GTF_F(sqrt, sqrt(a))
GTF_F(reciprocal, 1.0 / a)
GTF_F(sin, sin(a))
GTF_F(cos, cos(a))
GTF_F(tan, sin(a) / cos(a))
GTF_F(arcsin, atan(a / sqrt(1.0 - a * a)))
GTF_F(arccos, 2.0 * atan(sqrt((1.0 - a) / (1.0 + a))))
GTF_F(arctan, asin(a / sqrt(1.0 + a * a)))
GTF_F(arctan2, atan2(a, b))
GTF_F(sinh, (exp(a) - exp(-a)) / 2.0)
GTF_F(cosh, (exp(a) + exp(-a)) / 2.0)
GTF_F(tanh, (exp(2.0 * a) - 1.0) / (exp(2.0 * a) + 1.0))
GTF_F(arcsinh, a < 0 ? -log(-a + sqrt(a * a + 1.0)) : log(a + sqrt(a * a + 1.0)))
GTF_F(arccosh, log(a + sqrt(a * a - 1.0)))
GTF_F(arctanh, 0.5 * log((1.0 + a) / (1.0 - a)))
GTF_F(erf, erf(a))
GTF_F(erfc, 1.0 - erf(a))
GTF_F(sigmoid, 1.0 / (1.0 + exp(-a)))
GTF_F(softplus, log(1.0 + exp(a)))
GTF_F(relu, a > 0 ? a : 0.0)        GTF_I(relu, a > 0 ? a : 0)
GTF_F(gt, a > b)                    GTF_I(gt, a > b)
GTF_F(lt, a < b)                    GTF_I(lt, a < b)
GTF_F(ge, a >= b)                   GTF_I(ge, a >= b)
GTF_F(le, a <= b)                   GTF_I(le, a <= b)
GTF_F(eq, a == b)                   GTF_I(eq, a == b)
GTF_F(neq, a != b)                  GTF_I(neq, a != b)
GTF_F(logical_and, a != 0 && b != 0) GTF_I(logical_and, a != 0 && b != 0)
GTF_F(logical_or, a != 0 || b != 0)  GTF_I(logical_or, a != 0 || b != 0)
GTF_F(logical_not, a == 0)           GTF_I(logical_not, a == 0)

/* ==== the spec table ============================================================================== */

/* domain of one input: floats in [lo, hi], integers in [ilo, ihi] (bools: 0/1 within it) */
enum {
    GTF_NZ = 1,          /* nonzero: |x| >= 0.25 for floats, x != 0 for integers and bools */
    GTF_Q  = 2,          /* half of the float values rounded to multiples of 0.5 (ties, halves, zeros) */
    GTF_QH = 4,          /* every float value a multiple of 0.5 */
    GTF_QI = 8           /* every float value an integer */
};
typedef struct gtf_dom { double lo, hi; int64_t ilo, ihi; unsigned flags; } gtf_dom;

typedef struct gtf_ew_spec {
    const char *name;
    double (*f)(double, double, double);      /* float inputs, and integer inputs of FLOAT rows */
    int64_t (*i)(int64_t, int64_t, int64_t);  /* integer and bool inputs of every other class */
    gtf_dom dom[3];
    int exact;     /* F64 equal to f, F32 equal to f rounded to float; else within tolerance */
} gtf_ew_spec;

#define DOM(lo, hi, ilo, ihi, fl) { lo, hi, ilo, ihi, fl }
#define DX DOM(0, 0, 0, 0, 0)
#define SPEC_F(name, d0, d1, d2, exact) { #name, gtf_f_##name, NULL, { d0, d1, d2 }, exact },
#define SPEC_FI(name, d0, d1, d2, exact) { #name, gtf_f_##name, gtf_i_##name, { d0, d1, d2 }, exact },

static const gtf_ew_spec gtf_specs[] = {
    SPEC_FI(neg,        DOM(-5, 5, -9, 9, GTF_Q), DX, DX, 1)
    SPEC_FI(abs,        DOM(-5, 5, -9, 9, GTF_Q), DX, DX, 1)
    SPEC_FI(sqr,        DOM(-5, 5, -9, 9, GTF_Q), DX, DX, 1)
    SPEC_FI(sign,       DOM(-2, 2, -3, 3, GTF_Q), DX, DX, 1)
    SPEC_FI(floor,      DOM(-3, 3, -9, 9, GTF_Q), DX, DX, 1)
    SPEC_FI(ceil,       DOM(-3, 3, -9, 9, GTF_Q), DX, DX, 1)
    SPEC_FI(round,      DOM(-3, 3, -9, 9, GTF_Q), DX, DX, 1)
    SPEC_FI(add,        DOM(-5, 5, -99, 99, 0), DOM(-5, 5, -99, 99, 0), DX, 1)
    SPEC_FI(sub,        DOM(-5, 5, -99, 99, 0), DOM(-5, 5, -99, 99, 0), DX, 1)
    SPEC_FI(mul,        DOM(-5, 5, -99, 99, 0), DOM(-5, 5, -99, 99, 0), DX, 1)
    SPEC_F(div,         DOM(-5, 5, -9, 9, 0), DOM(-3, 3, -5, 5, GTF_NZ), DX, 1)
    SPEC_FI(pow,        DOM(0.1, 3, -4, 4, 0), DOM(-2.5, 2.5, 0, 7, 0), DX, 0)
    SPEC_FI(mod,        DOM(-6, 6, -20, 20, GTF_Q), DOM(-3, 3, -5, 5, GTF_NZ | GTF_Q), DX, 0)
    SPEC_FI(maximum,    DOM(-2, 2, -3, 3, GTF_Q), DOM(-2, 2, -3, 3, GTF_Q), DX, 1)
    SPEC_FI(minimum,    DOM(-2, 2, -3, 3, GTF_Q), DOM(-2, 2, -3, 3, GTF_Q), DX, 1)
    SPEC_FI(clip,       DOM(-4, 4, -6, 6, GTF_Q), DOM(-2, 0, -3, 0, GTF_Q), DOM(0, 2, 0, 3, GTF_Q), 1)
    SPEC_FI(where,      DOM(-1, 1, -1, 1, GTF_QI), DOM(-5, 5, -9, 9, 0), DOM(-5, 5, -9, 9, 0), 1)
    SPEC_F(exp,         DOM(-5, 5, -5, 5, 0), DX, DX, 0)
    SPEC_F(exp2,        DOM(-5, 5, -5, 5, 0), DX, DX, 0)
    SPEC_F(expm1,       DOM(-2, 2, -3, 3, 0), DX, DX, 0)
    SPEC_F(log,         DOM(0.05, 5, 1, 9, 0), DX, DX, 0)
    SPEC_F(log2,        DOM(0.05, 5, 1, 9, 0), DX, DX, 0)
    SPEC_F(log1p,       DOM(-0.9, 5, 0, 9, 0), DX, DX, 0)
    SPEC_F(sqrt,        DOM(0, 5, 0, 9, 0), DX, DX, 1)
    SPEC_F(reciprocal,  DOM(-3, 3, -5, 5, GTF_NZ), DX, DX, 1)
    SPEC_F(sin,         DOM(-4, 4, -4, 4, 0), DX, DX, 0)
    SPEC_F(cos,         DOM(-4, 4, -4, 4, 0), DX, DX, 0)
    SPEC_F(tan,         DOM(-1.4, 1.4, -1, 1, 0), DX, DX, 0)
    SPEC_F(arcsin,      DOM(-0.95, 0.95, 0, 0, 0), DX, DX, 0)
    SPEC_F(arccos,      DOM(-0.95, 0.95, 0, 0, 0), DX, DX, 0)
    SPEC_F(arctan,      DOM(-5, 5, -9, 9, 0), DX, DX, 0)
    SPEC_F(arctan2,     DOM(-3, 3, -3, 3, 0), DOM(-3, 3, -3, 3, 0), DX, 0)
    SPEC_F(sinh,        DOM(-3, 3, -3, 3, 0), DX, DX, 0)
    SPEC_F(cosh,        DOM(-3, 3, -3, 3, 0), DX, DX, 0)
    SPEC_F(tanh,        DOM(-3, 3, -3, 3, 0), DX, DX, 0)
    SPEC_F(arcsinh,     DOM(-5, 5, -9, 9, 0), DX, DX, 0)
    SPEC_F(arccosh,     DOM(1, 5, 1, 9, 0), DX, DX, 0)
    SPEC_F(arctanh,     DOM(-0.9, 0.9, 0, 0, 0), DX, DX, 0)
    SPEC_F(erf,         DOM(-3, 3, -3, 3, 0), DX, DX, 0)
    SPEC_F(erfc,        DOM(-3, 3, -3, 3, 0), DX, DX, 0)
    SPEC_F(sigmoid,     DOM(-8, 8, -9, 9, 0), DX, DX, 0)
    SPEC_F(softplus,    DOM(-8, 8, -9, 9, 0), DX, DX, 0)
    SPEC_FI(relu,       DOM(-3, 3, -9, 9, GTF_Q), DX, DX, 1)
    SPEC_FI(gt,         DOM(-2, 2, -3, 3, GTF_QH), DOM(-2, 2, -3, 3, GTF_QH), DX, 1)
    SPEC_FI(lt,         DOM(-2, 2, -3, 3, GTF_QH), DOM(-2, 2, -3, 3, GTF_QH), DX, 1)
    SPEC_FI(ge,         DOM(-2, 2, -3, 3, GTF_QH), DOM(-2, 2, -3, 3, GTF_QH), DX, 1)
    SPEC_FI(le,         DOM(-2, 2, -3, 3, GTF_QH), DOM(-2, 2, -3, 3, GTF_QH), DX, 1)
    SPEC_FI(eq,         DOM(-2, 2, -3, 3, GTF_QH), DOM(-2, 2, -3, 3, GTF_QH), DX, 1)
    SPEC_FI(neq,        DOM(-2, 2, -3, 3, GTF_QH), DOM(-2, 2, -3, 3, GTF_QH), DX, 1)
    SPEC_FI(logical_and, DOM(-1, 1, -1, 1, GTF_QI), DOM(-1, 1, -1, 1, GTF_QI), DX, 1)
    SPEC_FI(logical_or, DOM(-1, 1, -1, 1, GTF_QI), DOM(-1, 1, -1, 1, GTF_QI), DX, 1)
    SPEC_FI(logical_not, DOM(-1, 1, -1, 1, GTF_QI), DX, DX, 1)
};
#define GTF_N_SPECS ((int)(sizeof gtf_specs / sizeof gtf_specs[0]))

static const gtf_ew_spec *gtf_spec_of(const char *name) {
    int k;
    for (k = 0; k < GTF_N_SPECS; k++) if (strcmp(gtf_specs[k].name, name) == 0) return &gtf_specs[k];
    return NULL;
}

/* every row has a spec, and every spec a row; FLOAT rows need f, the other classes f and i */
TEST(test_ew_rows_have_specs) {
    int r, k;
    CHECK(GTF_N_ROWS > 40);
    for (r = 0; r < GTF_N_ROWS; r++) {
        const gtf_ew_spec *sp = gtf_spec_of(gtf_rows[r].name);
        CHECK_MSG(sp != NULL, "elementwise row %s (class %s) has no spec in tests/t_forward.c", gtf_rows[r].name,
                  gtf_class_names[gtf_rows[r].cls]);
        if (!sp) continue;
        CHECK_MSG(sp->f != NULL, "spec %s lacks a float reference", sp->name);
        CHECK_MSG(gtf_rows[r].cls == GTF_FLOAT || sp->i != NULL, "spec %s (class %s) lacks an integer reference", sp->name,
                  gtf_class_names[gtf_rows[r].cls]);
        CHECK_MSG((gtf_rows[r].arity == 1 && gtf_rows[r].b1) || (gtf_rows[r].arity == 2 && gtf_rows[r].b2) ||
                  (gtf_rows[r].arity == 3 && gtf_rows[r].b3), "row %s has arity %d", gtf_rows[r].name, gtf_rows[r].arity);
    }
    for (k = 0; k < GTF_N_SPECS; k++) {
        int found = 0;
        for (r = 0; r < GTF_N_ROWS; r++) if (strcmp(gtf_rows[r].name, gtf_specs[k].name) == 0) found = 1;
        CHECK_MSG(found, "spec %s names no row of GR_ELEMWISE_OPS", gtf_specs[k].name);
    }
}

/* ==== the driver ================================================================================== */

typedef struct gtf_shape { int ndim; int64_t d[3]; } gtf_shape;
typedef struct gtf_case { gtf_shape s[3]; } gtf_case;

#define S0 { 0, { 0, 0, 0 } }
#define S1(a) { 1, { a, 0, 0 } }
#define S2(a, b) { 2, { a, b, 0 } }
#define S3(a, b, c) { 3, { a, b, c } }

static const gtf_case gtf_cases1[] = {
    { { S2(3, 4), S0, S0 } }, { { S0, S0, S0 } }, { { S2(0, 3), S0, S0 } }, { { S1(5), S0, S0 } },
    { { S3(2, 3, 4), S0, S0 } }, { { S2(1, 1), S0, S0 } },
};
static const gtf_case gtf_cases2[] = {
    { { S2(3, 4), S2(3, 4), S0 } }, { { S2(3, 4), S1(4), S0 } }, { { S1(4), S2(3, 4), S0 } },
    { { S2(3, 1), S2(1, 4), S0 } }, { { S0, S2(2, 3), S0 } }, { { S2(2, 3), S0, S0 } }, { { S0, S0, S0 } },
    { { S2(0, 3), S2(0, 3), S0 } }, { { S2(0, 3), S1(3), S0 } }, { { S2(1, 3), S2(0, 1), S0 } },
    { { S3(2, 1, 4), S2(3, 1), S0 } },
};
static const gtf_case gtf_cases3[] = {
    { { S2(3, 4), S2(3, 4), S2(3, 4) } }, { { S2(3, 4), S1(4), S2(3, 1) } }, { { S2(3, 1), S2(1, 4), S0 } },
    { { S0, S2(2, 3), S1(3) } }, { { S0, S0, S0 } }, { { S2(0, 3), S1(3), S0 } }, { { S2(1, 4), S2(3, 1), S1(4) } },
    { { S3(2, 1, 4), S2(3, 1), S0 } },
};

static double gtf_draw_float(gtf_rng *r, const gtf_dom *d) {
    for (;;) {
        double v = gtf_uniform(r, d->lo, d->hi);
        if ((d->flags & GTF_QH) || ((d->flags & GTF_Q) && (gtf_next(r) & 1u))) v = floor(v * 2.0 + 0.5) / 2.0;
        if (d->flags & GTF_QI) v = floor(v + 0.5);
        if (v < d->lo || v > d->hi) continue;
        if ((d->flags & GTF_NZ) && fabs(v) < 0.25) continue;
        return v;
    }
}
static int64_t gtf_draw_int(gtf_rng *r, const gtf_dom *d, int is_bool) {
    int64_t lo = is_bool ? (d->ilo > 0 ? d->ilo : 0) : d->ilo, hi = is_bool ? (d->ihi < 1 ? d->ihi : 1) : d->ihi;
    if ((d->flags & GTF_NZ) && is_bool) lo = 1;
    for (;;) {
        int64_t v = gtf_int(r, lo, hi);
        if ((d->flags & GTF_NZ) && v == 0) continue;
        return v;
    }
}

static gr_array *gtf_ew_array(gtf_rng *r, gr_dtype dt, const gtf_shape *s, const gtf_dom *d) {
    gr_array *a = gr_array_new(dt, s->ndim, s->d);
    int64_t k;
    if (!a) return NULL;
    for (k = 0; k < a->size; k++) {
        switch (dt) {
        case GR_F64: ((double *)a->data)[k] = gtf_draw_float(r, d); break;
        case GR_F32: ((float *)a->data)[k] = (float)gtf_draw_float(r, d); break;
        case GR_I64: ((int64_t *)a->data)[k] = gtf_draw_int(r, d, 0); break;
        default: ((uint8_t *)a->data)[k] = (uint8_t)gtf_draw_int(r, d, 1); break;
        }
    }
    return a;
}

/* the dtype a row's result has for inputs of dtype dt */
static gr_dtype gtf_ew_out_dtype(int cls, gr_dtype dt) {
    switch (cls) {
    case GTF_FLOAT: return dt == GR_F32 ? GR_F32 : GR_F64;
    case GTF_CMP: case GTF_LOGIC: return GR_BOOL;
    default: return dt == GR_BOOL ? GR_I64 : dt;
    }
}

static const char *const gtf_in_names[3] = { "a", "b", "c" };

/* one row in one input dtype over every shape case, static and dynamic */
static void gtf_ew_row_run(const gtf_row *row, const gtf_ew_spec *sp, gr_dtype dt, gtf_rng *rng) {
    const gtf_case *cases = row->arity == 1 ? gtf_cases1 : row->arity == 2 ? gtf_cases2 : gtf_cases3;
    int nc = row->arity == 1 ? (int)(sizeof gtf_cases1 / sizeof gtf_cases1[0])
           : row->arity == 2 ? (int)(sizeof gtf_cases2 / sizeof gtf_cases2[0]) : (int)(sizeof gtf_cases3 / sizeof gtf_cases3[0]);
    gr_dtype odt = gtf_ew_out_dtype(row->cls, dt);
    int use_int = row->cls != GTF_FLOAT && (dt == GR_I64 || dt == GR_BOOL);
    double tol = sp->exact ? 0.0 : odt == GR_F32 ? GTF_TOL_F32 : GTF_TOL_F64;
    int ci, variant;
    for (ci = 0; ci < nc; ci++)
        for (variant = 0; variant < 9; variant++) {
            /* 0-5: inputs with static and unknown shapes, three draws each; 6: constant operands;
               7: shared variables (both evaluated by a function without inputs); 8: computed operands
               (x negated twice, in the function's own buffers, so the result may overwrite them) */
            const gtf_case *cs = &cases[ci];
            int dyn = variant < 6 && (variant & 1), leaves = variant == 6 || variant == 7, n_in = leaves ? 0 : row->arity;
            gr_graph *g = gr_graph_new();
            gr_var *x[3], *xo[3], *y = NULL;
            gr_array *a[3] = { NULL, NULL, NULL }, *want;
            int64_t oshape[3];
            int ond = 0, k, i;
            char label[200];
            for (k = 0; k < row->arity; k++) {
                a[k] = gtf_ew_array(rng, dt, &cs->s[k], &sp->dom[k]);
                if (variant == 6) x[k] = gr_constant(g, a[k]);
                else if (variant == 7) x[k] = gr_shared(g, a[k], gtf_in_names[k]);
                else x[k] = gtf_input(g, dt, cs->s[k].ndim, cs->s[k].d, dyn, gtf_in_names[k]);
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

static void gtf_ew_all_rows(gr_dtype dt, uint64_t seed) {
    gtf_rng rng;
    int r;
    rng.s = seed;
    for (r = 0; r < GTF_N_ROWS; r++) {
        const gtf_ew_spec *sp = gtf_spec_of(gtf_rows[r].name);
        if (!sp) continue;                                /* test_ew_rows_have_specs fails for it */
        if (!sp->i && (dt == GR_I64 || dt == GR_BOOL) && gtf_rows[r].cls != GTF_FLOAT) continue;
        gtf_ew_row_run(&gtf_rows[r], sp, dt, &rng);
    }
}

TEST(test_ew_f64) { gtf_ew_all_rows(GR_F64, 1); }
TEST(test_ew_f32) { gtf_ew_all_rows(GR_F32, 2); }
TEST(test_ew_i64) { gtf_ew_all_rows(GR_I64, 3); }
TEST(test_ew_bool) { gtf_ew_all_rows(GR_BOOL, 4); }

/* ==== explicit values: special cases the random draws do not reach ============================== */

/* f(a[, b]) over n given values of dtype dt against want (F64 values) */
static void gtf_ew_values(const char *name, gr_dtype dt, int n, const double *av, const double *bv, const double *want,
                          gr_dtype odt, double tol) {
    const gtf_row *row = NULL;
    gr_graph *g = gr_graph_new();
    gr_var *x[2], *y;
    gr_array *a[2] = { NULL, NULL }, *w;
    int64_t len = n;
    int r, k, arity;
    char label[128];
    for (r = 0; r < GTF_N_ROWS; r++) if (strcmp(gtf_rows[r].name, name) == 0) row = &gtf_rows[r];
    CHECK_MSG(row != NULL, "no row %s", name);
    if (!row) { gr_graph_free(g); return; }
    arity = bv ? 2 : 1;
    for (k = 0; k < arity; k++) {
        const double *src = k ? bv : av;
        int j;
        x[k] = gr_vector(g, dt, gtf_in_names[k]);
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
    gtf_ew_values("maximum", GR_F64, 6, nan_a, nan_b, max_w, GR_F64, 0);
    gtf_ew_values("maximum", GR_F32, 6, nan_a, nan_b, max_w, GR_F32, 0);
    gtf_ew_values("minimum", GR_F64, 6, nan_a, nan_b, min_w, GR_F64, 0);
    gtf_ew_values("minimum", GR_F32, 6, nan_a, nan_b, min_w, GR_F32, 0);
    gtf_ew_values("sign", GR_F64, 7, sg_a, NULL, sg_w, GR_F64, 0);
    gtf_ew_values("sign", GR_F32, 7, sg_a, NULL, sg_w, GR_F32, 0);
    gtf_ew_values("round", GR_F64, 9, rd_a, NULL, rd_w, GR_F64, 0);
    gtf_ew_values("round", GR_F32, 8, rd_a, NULL, rd_w, GR_F32, 0);
    gtf_ew_values("sigmoid", GR_F64, 5, big, NULL, sig_w, GR_F64, GTF_TOL_F64);
    gtf_ew_values("sigmoid", GR_F32, 4, big, NULL, sig_w, GR_F32, GTF_TOL_F32);
    gtf_ew_values("softplus", GR_F64, 5, big, NULL, sp_w, GR_F64, GTF_TOL_F64);
    gtf_ew_values("softplus", GR_F32, 4, big, NULL, sp_w, GR_F32, GTF_TOL_F32);
    gtf_ew_values("mod", GR_F64, 6, md_a, md_b, md_w, GR_F64, 0);
    gtf_ew_values("mod", GR_F32, 6, md_a, md_b, md_w, GR_F32, 0);
    gtf_ew_values("mod", GR_I64, 6, im_a, im_b, im_w, GR_I64, 0);   /* x mod 0 is 0, as NumPy */
    gtf_ew_values("div", GR_F64, 5, dz_a, dz_b, dz_w, GR_F64, 0);
    gtf_ew_values("div", GR_I64, 5, dz_a, dz_b, dz_w, GR_F64, 0);    /* true division of integers */
    gtf_ew_values("log", GR_F64, 4, lg_a, NULL, lg_w, GR_F64, 0);
    gtf_ew_values("exp", GR_F64, 3, ex_a, NULL, ex_w, GR_F64, 0);
    gtf_ew_values("exp", GR_F32, 3, ex_a, NULL, ex_w, GR_F32, 0);
    gtf_ew_values("sqrt", GR_F64, 1, cl_nan, NULL, cl_nan, GR_F64, 0);
    gtf_ew_values("abs", GR_F64, 1, cl_nan, NULL, cl_nan, GR_F64, 0);
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
    for (k = 0; k < n; k++) ((int64_t *)w->data)[k] = gtf_ipow(base[k], ex[k]);
    CHECK_EQ_INT(((int64_t *)w->data)[2], INT64_MIN);      /* the reference itself: (-2)^63 */
    CHECK_EQ_INT(((int64_t *)w->data)[0], (int64_t)1 << 62);
    gtf_expect(g, 2, x, (const gr_array *const *)a, y, GR_I64, w, 0, "gr_pow int64");
    gr_array_free(a[0]);
    gr_array_free(a[1]);
    gr_array_free(w);
    gr_graph_free(g);
}

/* ==== dtype promotion ============================================================================ */

/* op(a of dtype da, b of dtype db): the static dtype and the result's dtype are `want`, and the
   values match the plain computation in double on the inputs' values */
static void gtf_promote2(const char *what, gr_var *(*op)(gr_var *, gr_var *), double (*ref)(double, double, double),
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
    gtf_promote2("gr_add", gr_add, gtf_f_add, GR_F32, GR_F64, GR_F64, 0, 1, 4);
    gtf_promote2("gr_add", gr_add, gtf_f_add, GR_F64, GR_F32, GR_F64, 0, 1, 4);
    gtf_promote2("gr_add", gr_add, gtf_f_add, GR_F32, GR_I64, GR_F32, 0, 1, 4);
    gtf_promote2("gr_mul", gr_mul, gtf_f_mul, GR_I64, GR_F32, GR_F32, 0, 1, 4);
    gtf_promote2("gr_add", gr_add, gtf_f_add, GR_F64, GR_I64, GR_F64, 0, 1, 4);
    gtf_promote2("gr_add", gr_add, gtf_f_add, GR_F32, GR_BOOL, GR_F32, 0, 1, 4);
    gtf_promote2("gr_add", gr_add, gtf_f_add, GR_I64, GR_I64, GR_I64, 0, 1, 4);
    gtf_promote2("gr_sub", gr_sub, gtf_f_sub, GR_I64, GR_BOOL, GR_I64, 0, 1, 4);
    gtf_promote2("gr_add", gr_add, gtf_f_add, GR_BOOL, GR_BOOL, GR_I64, 0, 1, 4);
    gtf_promote2("gr_div", gr_div, gtf_f_div, GR_I64, GR_I64, GR_F64, 0, 1, 4);
    gtf_promote2("gr_div", gr_div, gtf_f_div, GR_BOOL, GR_BOOL, GR_F64, 0, 1, 4);
    gtf_promote2("gr_div", gr_div, gtf_f_div, GR_F32, GR_I64, GR_F32, 0, 1, 4);
    gtf_promote2("gr_div", gr_div, gtf_f_div, GR_F32, GR_F64, GR_F64, 0, 1, 4);
    gtf_promote2("gr_pow", gr_pow, gtf_f_pow, GR_F32, GR_I64, GR_F32, GTF_TOL_F32, 1, 4);
    gtf_promote2("gr_gt", gr_gt, gtf_f_gt, GR_F32, GR_F64, GR_BOOL, 0, 1, 4);
    gtf_promote2("gr_eq", gr_eq, gtf_f_eq, GR_I64, GR_F32, GR_BOOL, 0, -1, 1);
    gtf_promote2("gr_le", gr_le, gtf_f_le, GR_BOOL, GR_I64, GR_BOOL, 0, -1, 1);
    gtf_promote2("gr_arctan2", gr_arctan2, gtf_f_arctan2, GR_I64, GR_I64, GR_F64, GTF_TOL_F64, 1, 4);
    gtf_promote2("gr_arctan2", gr_arctan2, gtf_f_arctan2, GR_F32, GR_I64, GR_F32, GTF_TOL_F32, 1, 4);
    gtf_promote2("gr_logical_and", gr_logical_and, gtf_f_logical_and, GR_F64, GR_I64, GR_BOOL, 0, -1, 1);
    gtf_promote2("gr_maximum", gr_maximum, gtf_f_maximum, GR_I64, GR_F64, GR_F64, 0, -1, 1);
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

SUITE(suite_forward) = {
    CASE(test_ew_rows_have_specs),
    CASE(test_ew_f64),
    CASE(test_ew_f32),
    CASE(test_ew_i64),
    CASE(test_ew_bool),
    CASE(test_ew_special_values),
    CASE(test_ew_int_pow),
    CASE(test_ew_promotion),
    CASE(test_ew_unary_dtypes),
    CASE(test_ew_weak_const),
    CASE(test_ew_select_mixed),
    CASE(test_ew_shape_errors),
    END_SUITE
};

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

SUITE(suite_forward_wrap) = { CASE(test_int64_wraps), END_SUITE };
