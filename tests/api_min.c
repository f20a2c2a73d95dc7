/* tests/api_min.c: a program written only against the minimum of /work/shared/API.md (Conventions,
   Precise rules, Types, Graph and arrays, Leaves, the minimum list of ops, Compiled functions):
   no other header than gradient.h, the C standard headers and the tests' runner (tests/runner.h,
   which uses only them), nothing beyond those sections.
   Every value is checked against the same computation in plain C. `make test-api` runs it with
   -std=c11 -Wall -Wextra -Wpedantic -Werror; it prints "api_min: N passed, N failed, M checks". */
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"

#define GT_RUNNER_IMPLEMENTATION
#include "runner.h"      /* the tests' runner: the C library only */

/* ---- evaluating a graph --------------------------------------------------------------------------- */

#define MAXV 4096
typedef struct result {
    gr_status status;
    gr_dtype  dtype;
    int       ndim;
    int64_t   shape[GR_MAX_NDIM];
    int64_t   size;
    double    v[MAXV];            /* the values, as double */
} result;

static result R;                  /* the last result (big: kept out of the stack) */

/* compiles out from n_in inputs, calls it once on arrs, and copies output 0 into R */
static gr_status eval(int n_in, gr_var *const *ins, const gr_array *const *arrs, gr_var *out) {
    gr_fn *f;
    const gr_array *o[1];
    int64_t i;
    memset(&R, 0, sizeof R);
    R.status = GR_ERR_VALUE;
    if (!out) return R.status;
    f = gr_function(n_in, ins, 1, &out, NULL);
    if (!f) {
        fprintf(stderr, "  gr_function: %s\n", gr_graph_message(gr_var_graph(out)));
        return R.status;
    }
    R.status = gr_call(f, arrs, o);
    if (R.status == GR_OK) {
        R.dtype = o[0]->dtype;
        R.ndim = o[0]->ndim;
        for (i = 0; i < o[0]->ndim; i++) R.shape[i] = o[0]->shape[i];
        R.size = o[0]->size;
        for (i = 0; i < o[0]->size && i < MAXV; i++) R.v[i] = gr_array_get(o[0], i);
    } else fprintf(stderr, "  gr_call: %s\n", gr_fn_message(f));
    gr_fn_free(f);
    return R.status;
}

/* an output of no inputs (constants and shared variables only) */
static gr_status eval0(gr_var *out) { return eval(0, NULL, NULL, out); }

static gr_var *constant(gr_graph *g, gr_dtype dt, int ndim, const int64_t *shape, const void *data) {
    gr_array *a = gr_array_from(dt, ndim, shape, data);
    gr_var *v = gr_constant(g, a);
    gr_array_free(a);
    return v;
}

/* ---- elementwise -------------------------------------------------------------------------------- */

static double r_neg(double x) { return -x; }
static double r_sqr(double x) { return x * x; }
static double r_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double r_softplus(double x) { return log1p(exp(x)); }

static void test_unary_f64(void) {
    static const struct { const char *name; gr_var *(*op)(gr_var *); double (*ref)(double); } ops[] = {
        { "neg", gr_neg, r_neg },       { "abs", gr_abs, fabs },       { "exp", gr_exp, exp },
        { "log", gr_log, log },         { "log1p", gr_log1p, log1p },  { "expm1", gr_expm1, expm1 },
        { "sqrt", gr_sqrt, sqrt },      { "sqr", gr_sqr, r_sqr },      { "sin", gr_sin, sin },
        { "cos", gr_cos, cos },         { "tan", gr_tan, tan },        { "tanh", gr_tanh, tanh },
        { "sigmoid", gr_sigmoid, r_sigmoid }, { "softplus", gr_softplus, r_softplus },
    };
    static const double xs[5] = { 0.25, 0.7, 1.5, 2.2, 0.01 };
    int64_t n = 5;
    size_t k;
    int i;
    for (k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x");
        gr_var *y = ops[k].op(x);
        gr_array *xa = gr_array_from(GR_F64, 1, &n, xs);
        const gr_array *in[1];
        in[0] = xa;
        CHECK(y != NULL);
        CHECK_EQ_INT(gr_var_dtype(y), GR_F64);
        CHECK_EQ_INT(gr_var_ndim(y), 1);
        if (eval(1, &x, in, y) == GR_OK) {
            CHECK_EQ_INT(R.dtype, GR_F64);
            CHECK_EQ_INT(R.size, 5);
            for (i = 0; i < 5; i++)
                if (!(fabs(R.v[i] - ops[k].ref(xs[i])) <= 1e-14 * (1 + fabs(ops[k].ref(xs[i])))))
                    gt_fail(__FILE__, __LINE__, "%s(%g) = %.17g, want %.17g", ops[k].name, xs[i], R.v[i], ops[k].ref(xs[i]));
        } else gt_fail(__FILE__, __LINE__, "%s: evaluation failed", ops[k].name);
        gr_array_free(xa);
        gr_graph_free(g);
    }
}

/* unary float ops of F32 stay F32; of I64 give F64 */
static void test_unary_dtypes(void) {
    gr_graph *g = gr_graph_new();
    gr_var *xf = gr_vector(g, GR_F32, "xf"), *xi = gr_vector(g, GR_I64, "xi");
    gr_var *yf = gr_tanh(xf), *yi = gr_exp(xi), *ins[1];
    float fs[3] = { -1.0f, 0.5f, 2.0f };
    int64_t is[3] = { -1, 0, 2 }, n = 3;
    gr_array *fa = gr_array_from(GR_F32, 1, &n, fs), *ia = gr_array_from(GR_I64, 1, &n, is);
    const gr_array *in[1];
    int i;
    CHECK_EQ_INT(gr_var_dtype(yf), GR_F32);
    CHECK_EQ_INT(gr_var_dtype(yi), GR_F64);
    ins[0] = xf; in[0] = fa;
    if (eval(1, ins, in, yf) == GR_OK) {
        CHECK_EQ_INT(R.dtype, GR_F32);
        for (i = 0; i < 3; i++) CHECK_NEAR(R.v[i], (double)tanhf(fs[i]), 1e-6);
    } else gt_fail(__FILE__, __LINE__, "tanh of float32 failed");
    ins[0] = xi; in[0] = ia;
    if (eval(1, ins, in, yi) == GR_OK) {
        CHECK_EQ_INT(R.dtype, GR_F64);
        for (i = 0; i < 3; i++) CHECK_NEAR(R.v[i], exp((double)is[i]), 1e-15);
    } else gt_fail(__FILE__, __LINE__, "exp of int64 failed");
    gr_array_free(fa);
    gr_array_free(ia);
    gr_graph_free(g);
}

/* binary ops between a (2,3) matrix and a (3,) vector: NumPy broadcasting */
static void test_binary_broadcast(void) {
    enum { ADD, SUB, MUL, DIV, POW, MAXIMUM, MINIMUM, GT, LT, N_OPS };
    static const double av[6] = { 1.5, -2.0, 3.0, 0.5, 4.0, -1.0 };
    static const double bv[3] = { 2.0, -0.5, 3.0 };
    static const int64_t sa[2] = { 2, 3 }, sb[1] = { 3 };
    gr_graph *g = gr_graph_new();
    gr_var *a = gr_matrix(g, GR_F64, "a"), *b = gr_vector(g, GR_F64, "b"), *ys[N_OPS], *ins[2];
    gr_array *aa = gr_array_from(GR_F64, 2, sa, av), *ba = gr_array_from(GR_F64, 1, sb, bv);
    const gr_array *in[2];
    int k, i;
    ys[ADD] = gr_add(a, b); ys[SUB] = gr_sub(a, b); ys[MUL] = gr_mul(a, b); ys[DIV] = gr_div(a, b);
    ys[POW] = gr_pow(gr_abs(a), b); ys[MAXIMUM] = gr_maximum(a, b); ys[MINIMUM] = gr_minimum(a, b);
    ys[GT] = gr_gt(a, b); ys[LT] = gr_lt(a, b);
    ins[0] = a; ins[1] = b; in[0] = aa; in[1] = ba;
    for (k = 0; k < N_OPS; k++) {
        CHECK(ys[k] != NULL);
        CHECK_EQ_INT(gr_var_ndim(ys[k]), 2);
        CHECK_EQ_INT(gr_var_dtype(ys[k]), k == GT || k == LT ? GR_BOOL : GR_F64);
        if (eval(2, ins, in, ys[k]) != GR_OK) { gt_fail(__FILE__, __LINE__, "op %d failed", k); continue; }
        CHECK_EQ_INT(R.ndim, 2);
        CHECK_EQ_INT(R.shape[0], 2);
        CHECK_EQ_INT(R.shape[1], 3);
        CHECK_EQ_INT(R.dtype, k == GT || k == LT ? GR_BOOL : GR_F64);
        for (i = 0; i < 6; i++) {
            double x = av[i], y = bv[i % 3], want = 0;
            switch (k) {
            case ADD: want = x + y; break;
            case SUB: want = x - y; break;
            case MUL: want = x * y; break;
            case DIV: want = x / y; break;
            case POW: want = pow(fabs(x), y); break;
            case MAXIMUM: want = x > y ? x : y; break;
            case MINIMUM: want = x < y ? x : y; break;
            case GT: want = x > y; break;
            case LT: want = x < y; break;
            }
            if (!(fabs(R.v[i] - want) <= 1e-15 * (1 + fabs(want))))
                gt_fail(__FILE__, __LINE__, "op %d at %d: %.17g, want %.17g", k, i, R.v[i], want);
        }
    }
    gr_array_free(aa);
    gr_array_free(ba);
    gr_graph_free(g);
}

static void test_where_clip(void) {
    static const double xv[6] = { -3.0, -0.5, 0.0, 0.25, 1.0, 7.0 };
    int64_t n = 6;
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    gr_var *zero = gr_const(g, 0.0);
    gr_var *w = gr_where(gr_gt(x, zero), x, gr_mul(x, gr_const(g, 0.1)));   /* leaky relu */
    gr_var *c = gr_clip(x, gr_const(g, -1.0), gr_const(g, 0.5));
    gr_array *xa = gr_array_from(GR_F64, 1, &n, xv);
    const gr_array *in[1];
    int i;
    in[0] = xa;
    CHECK_EQ_INT(gr_var_dtype(w), GR_F64);
    if (eval(1, &x, in, w) == GR_OK)
        for (i = 0; i < 6; i++) CHECK_NEAR(R.v[i], xv[i] > 0 ? xv[i] : 0.1 * xv[i], 1e-15);
    else gt_fail(__FILE__, __LINE__, "where failed");
    if (eval(1, &x, in, c) == GR_OK)
        for (i = 0; i < 6; i++) CHECK_NEAR(R.v[i], xv[i] < -1 ? -1 : xv[i] > 0.5 ? 0.5 : xv[i], 0);
    else gt_fail(__FILE__, __LINE__, "clip failed");
    gr_array_free(xa);
    gr_graph_free(g);
}

/* Precise rules: dtype promotion and the weakly typed gr_const */
static void test_promotion(void) {
    static const float f3[3] = { 1.0f, 2.0f, 3.0f };
    static const double d3[3] = { 0.5, 0.25, 0.125 };
    static const int64_t i3[3] = { 7, -3, 4 }, j3[3] = { 2, 2, 8 };
    static const uint8_t b3[3] = { 1, 0, 1 };
    int64_t n = 3;
    gr_graph *g = gr_graph_new();
    gr_var *f = constant(g, GR_F32, 1, &n, f3), *d = constant(g, GR_F64, 1, &n, d3);
    gr_var *i = constant(g, GR_I64, 1, &n, i3), *j = constant(g, GR_I64, 1, &n, j3);
    gr_var *b = constant(g, GR_BOOL, 1, &n, b3);
    int k;
    CHECK_EQ_INT(gr_var_dtype(gr_add(f, d)), GR_F64);
    CHECK_EQ_INT(gr_var_dtype(gr_add(f, i)), GR_F32);
    CHECK_EQ_INT(gr_var_dtype(gr_add(i, j)), GR_I64);
    CHECK_EQ_INT(gr_var_dtype(gr_add(i, b)), GR_I64);
    CHECK_EQ_INT(gr_var_dtype(gr_div(i, j)), GR_F64);
    CHECK_EQ_INT(gr_var_dtype(gr_lt(f, d)), GR_BOOL);
    CHECK_EQ_INT(gr_var_dtype(gr_mul(f, gr_const(g, 2.5))), GR_F32);    /* weak: takes the float dtype */
    CHECK_EQ_INT(gr_var_dtype(gr_add(i, gr_const(g, 2.0))), GR_I64);    /* integral value with an integer */
    CHECK_EQ_INT(gr_var_dtype(gr_add(i, gr_const(g, 0.5))), GR_F64);    /* non-integral value */
    CHECK_EQ_INT(gr_var_dtype(gr_const(g, 1.0)), GR_F64);               /* alone */
    CHECK_EQ_INT(gr_var_dtype(gr_sum(i)), GR_I64);
    CHECK_EQ_INT(gr_var_dtype(gr_max(i)), GR_I64);
    CHECK_EQ_INT(gr_var_dtype(gr_prod(i)), GR_I64);
    CHECK_EQ_INT(gr_var_dtype(gr_mean(i)), GR_F64);
    if (eval0(gr_div(i, j)) == GR_OK) {                              /* true division */
        CHECK_EQ_INT(R.dtype, GR_F64);
        for (k = 0; k < 3; k++) CHECK_NEAR(R.v[k], (double)i3[k] / (double)j3[k], 1e-15);
    } else gt_fail(__FILE__, __LINE__, "int64 division failed");
    if (eval0(gr_add(i, gr_const(g, 2.0))) == GR_OK) {
        CHECK_EQ_INT(R.dtype, GR_I64);
        for (k = 0; k < 3; k++) CHECK_NEAR(R.v[k], (double)(i3[k] + 2), 0);
    } else gt_fail(__FILE__, __LINE__, "int64 + 2 failed");
    if (eval0(gr_mul(f, gr_const(g, 2.5))) == GR_OK) {
        CHECK_EQ_INT(R.dtype, GR_F32);
        for (k = 0; k < 3; k++) CHECK_NEAR(R.v[k], 2.5 * f3[k], 0);
    } else gt_fail(__FILE__, __LINE__, "float32 * 2.5 failed");
    if (eval0(gr_add(f, d)) == GR_OK) {
        CHECK_EQ_INT(R.dtype, GR_F64);
        for (k = 0; k < 3; k++) CHECK_NEAR(R.v[k], (double)f3[k] + d3[k], 0);
    } else gt_fail(__FILE__, __LINE__, "float32 + float64 failed");
    if (eval0(gr_mean(i)) == GR_OK) CHECK_NEAR(R.v[0], (7.0 - 3.0 + 4.0) / 3.0, 1e-15);
    else gt_fail(__FILE__, __LINE__, "mean of int64 failed");
    CHECK_EQ_INT(gr_graph_status(g), GR_OK);
    gr_graph_free(g);
}

/* ---- reductions ----------------------------------------------------------------------------- */

static void test_reductions(void) {
    enum { C_ = 4 };
    static const double m[3 * C_] = { 1.0, -2.0, 3.5, 0.5,
                                      4.0, 0.25, -1.0, 2.0,
                                      -3.0, 6.0, 0.75, 1.5 };
    static const int64_t s[2] = { 3, C_ };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_matrix(g, GR_F64, "x");
    gr_array *xa = gr_array_from(GR_F64, 2, s, m);
    const gr_array *in[1];
    double sum = 0, prod = 1, mx = -INFINITY, rows[3] = { 0, 0, 0 }, cols[C_] = { 0, 0, 0, 0 };
    double rmax[3] = { -INFINITY, -INFINITY, -INFINITY }, cmax[C_] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY };
    int r, c;
    in[0] = xa;
    for (r = 0; r < 3; r++)
        for (c = 0; c < C_; c++) {
            double v = m[r * C_ + c];
            sum += v; prod *= v; rows[r] += v; cols[c] += v;
            if (v > mx) mx = v;
            if (v > rmax[r]) rmax[r] = v;
            if (v > cmax[c]) cmax[c] = v;
        }
    if (eval(1, &x, in, gr_sum(x)) == GR_OK) { CHECK_EQ_INT(R.ndim, 0); CHECK_NEAR(R.v[0], sum, 1e-15); } else gt_fail(__FILE__, __LINE__, "sum");
    if (eval(1, &x, in, gr_mean(x)) == GR_OK) CHECK_NEAR(R.v[0], sum / 12, 1e-15); else gt_fail(__FILE__, __LINE__, "mean");
    if (eval(1, &x, in, gr_prod(x)) == GR_OK) CHECK_NEAR(R.v[0], prod, 1e-15); else gt_fail(__FILE__, __LINE__, "prod");
    if (eval(1, &x, in, gr_max(x)) == GR_OK) CHECK_NEAR(R.v[0], mx, 0); else gt_fail(__FILE__, __LINE__, "max");
    if (eval(1, &x, in, gr_sum_axis(x, 0)) == GR_OK) {
        CHECK_EQ_INT(R.ndim, 1); CHECK_EQ_INT(R.shape[0], C_);
        for (c = 0; c < C_; c++) CHECK_NEAR(R.v[c], cols[c], 1e-15);
    } else gt_fail(__FILE__, __LINE__, "sum_axis 0");
    if (eval(1, &x, in, gr_sum_axis(x, -1)) == GR_OK) {             /* negative axes count from the end */
        CHECK_EQ_INT(R.ndim, 1); CHECK_EQ_INT(R.shape[0], 3);
        for (r = 0; r < 3; r++) CHECK_NEAR(R.v[r], rows[r], 1e-15);
    } else gt_fail(__FILE__, __LINE__, "sum_axis -1");
    if (eval(1, &x, in, gr_mean_axis(x, 1)) == GR_OK) {
        for (r = 0; r < 3; r++) CHECK_NEAR(R.v[r], rows[r] / C_, 1e-15);
    } else gt_fail(__FILE__, __LINE__, "mean_axis 1");
    if (eval(1, &x, in, gr_mean_axis(x, 0)) == GR_OK) {
        for (c = 0; c < C_; c++) CHECK_NEAR(R.v[c], cols[c] / 3, 1e-15);
    } else gt_fail(__FILE__, __LINE__, "mean_axis 0");
    if (eval(1, &x, in, gr_max_axis(x, 1)) == GR_OK) {
        for (r = 0; r < 3; r++) CHECK_NEAR(R.v[r], rmax[r], 0);
    } else gt_fail(__FILE__, __LINE__, "max_axis 1");
    if (eval(1, &x, in, gr_max_axis(x, -2)) == GR_OK) {
        CHECK_EQ_INT(R.shape[0], C_);
        for (c = 0; c < C_; c++) CHECK_NEAR(R.v[c], cmax[c], 0);
    } else gt_fail(__FILE__, __LINE__, "max_axis -2");
    gr_array_free(xa);
    gr_graph_free(g);
}

static void test_integer_reductions(void) {
    static const int64_t v[5] = { 3, -4, 10, 2, 1 };
    int64_t n = 5;
    gr_graph *g = gr_graph_new();
    gr_var *x = constant(g, GR_I64, 1, &n, v);
    if (eval0(gr_sum(x)) == GR_OK) { CHECK_EQ_INT(R.dtype, GR_I64); CHECK_NEAR(R.v[0], 12, 0); } else gt_fail(__FILE__, __LINE__, "sum");
    if (eval0(gr_prod(x)) == GR_OK) { CHECK_EQ_INT(R.dtype, GR_I64); CHECK_NEAR(R.v[0], -240, 0); } else gt_fail(__FILE__, __LINE__, "prod");
    if (eval0(gr_max(x)) == GR_OK) { CHECK_EQ_INT(R.dtype, GR_I64); CHECK_NEAR(R.v[0], 10, 0); } else gt_fail(__FILE__, __LINE__, "max");
    if (eval0(gr_mean(x)) == GR_OK) { CHECK_EQ_INT(R.dtype, GR_F64); CHECK_NEAR(R.v[0], 2.4, 1e-15); } else gt_fail(__FILE__, __LINE__, "mean");
    gr_graph_free(g);
}

/* ---- linear algebra and structure ------------------------------------------------------------- */

/* deterministic values in [-1, 1) */
static double val(int i, int salt) {
    unsigned u = (unsigned)i * 2654435761u + (unsigned)salt * 40503u;
    u ^= u >> 13;
    u *= 1274126177u;
    u ^= u >> 16;
    return (double)(u % 2000u) / 1000.0 - 1.0;
}

static void test_dot(void) {
    enum { M = 37, K = 53, N = 29 };           /* odd sizes: the edges of a blocked kernel */
    static double a[M * K], b[K * N], want[M * N];
    static const int64_t sa[2] = { M, K }, sb[2] = { K, N };
    gr_graph *g = gr_graph_new();
    gr_var *A = gr_matrix(g, GR_F64, "A"), *B = gr_matrix(g, GR_F64, "B"), *u = gr_vector(g, GR_F64, "u");
    gr_var *v = gr_vector(g, GR_F64, "v"), *ins[2];
    gr_array *aa, *ba, *ua, *va;
    const gr_array *in[2];
    int64_t nk = K, nn = N;
    int i, j, k;
    for (i = 0; i < M * K; i++) a[i] = val(i, 1);
    for (i = 0; i < K * N; i++) b[i] = val(i, 2);
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
            double s = 0;
            for (k = 0; k < K; k++) s += a[i * K + k] * b[k * N + j];
            want[i * N + j] = s;
        }
    aa = gr_array_from(GR_F64, 2, sa, a);
    ba = gr_array_from(GR_F64, 2, sb, b);
    ua = gr_array_from(GR_F64, 1, &nk, a);        /* row 0 of a, length K */
    va = gr_array_from(GR_F64, 1, &nn, b);        /* row 0 of b, length N */

    /* matrix . matrix */
    ins[0] = A; ins[1] = B; in[0] = aa; in[1] = ba;
    if (eval(2, ins, in, gr_dot(A, B)) == GR_OK) {
        CHECK_EQ_INT(R.ndim, 2); CHECK_EQ_INT(R.shape[0], M); CHECK_EQ_INT(R.shape[1], N);
        for (i = 0; i < M * N; i++) CHECK_NEAR(R.v[i], want[i], 1e-13);
    } else gt_fail(__FILE__, __LINE__, "matrix . matrix");
    /* vector . matrix: row 0 of a times B is row 0 of want */
    ins[0] = u; in[0] = ua;
    if (eval(2, ins, in, gr_dot(u, B)) == GR_OK) {
        CHECK_EQ_INT(R.ndim, 1); CHECK_EQ_INT(R.shape[0], N);
        for (j = 0; j < N; j++) CHECK_NEAR(R.v[j], want[j], 1e-13);
    } else gt_fail(__FILE__, __LINE__, "vector . matrix");
    /* matrix . vector: B^T's rows are B's columns; use A . (K,) instead */
    ins[0] = A; ins[1] = u; in[0] = aa; in[1] = ua;
    if (eval(2, ins, in, gr_dot(A, u)) == GR_OK) {
        CHECK_EQ_INT(R.ndim, 1); CHECK_EQ_INT(R.shape[0], M);
        for (i = 0; i < M; i++) {
            double s = 0;
            for (k = 0; k < K; k++) s += a[i * K + k] * a[k];
            CHECK_NEAR(R.v[i], s, 1e-13);
        }
    } else gt_fail(__FILE__, __LINE__, "matrix . vector");
    /* vector . vector */
    if (eval(1, &u, in + 1, gr_dot(u, u)) == GR_OK) {
        double s = 0;
        for (k = 0; k < K; k++) s += a[k] * a[k];
        CHECK_EQ_INT(R.ndim, 0);
        CHECK_NEAR(R.v[0], s, 1e-13);
    } else gt_fail(__FILE__, __LINE__, "vector . vector");
    /* outer */
    ins[0] = u; ins[1] = v; in[0] = ua; in[1] = va;
    if (eval(2, ins, in, gr_outer(u, v)) == GR_OK) {
        CHECK_EQ_INT(R.ndim, 2); CHECK_EQ_INT(R.shape[0], K); CHECK_EQ_INT(R.shape[1], N);
        for (i = 0; i < K; i++)
            for (j = 0; j < N; j++) CHECK_NEAR(R.v[i * N + j], a[i] * b[j], 1e-15);
    } else gt_fail(__FILE__, __LINE__, "outer");
    /* transpose, then a product through it: A^T . A */
    in[0] = aa;
    if (eval(1, &A, in, gr_transpose(A)) == GR_OK) {
        CHECK_EQ_INT(R.shape[0], K); CHECK_EQ_INT(R.shape[1], M);
        for (i = 0; i < K; i++)
            for (j = 0; j < M; j++) CHECK_NEAR(R.v[i * M + j], a[j * K + i], 0);
    } else gt_fail(__FILE__, __LINE__, "transpose");
    if (eval(1, &A, in, gr_dot(gr_transpose(A), A)) == GR_OK) {
        CHECK_EQ_INT(R.shape[0], K); CHECK_EQ_INT(R.shape[1], K);
        for (i = 0; i < K; i++)
            for (j = 0; j < K; j++) {
                double s = 0;
                for (k = 0; k < M; k++) s += a[k * K + i] * a[k * K + j];
                CHECK_NEAR(R.v[i * K + j], s, 1e-13);
            }
    } else gt_fail(__FILE__, __LINE__, "A^T . A");
    gr_array_free(aa); gr_array_free(ba); gr_array_free(ua); gr_array_free(va);
    gr_graph_free(g);
}

static void test_reshape_dimshuffle(void) {
    static const int64_t s234[3] = { 2, 3, 4 }, s4m[2] = { 4, -1 }, s24[1] = { 24 };
    static const int64_t s23[2] = { 2, 3 }, s13[2] = { 1, 3 };
    double d[24], m6[6] = { 1, 2, 3, 4, 5, 6 };
    gr_graph *g = gr_graph_new();
    gr_var *x, *m, *row;
    int i, j;
    for (i = 0; i < 24; i++) d[i] = i * 0.5 - 3;
    x = constant(g, GR_F64, 3, s234, d);
    m = constant(g, GR_F64, 2, s23, m6);
    row = constant(g, GR_F64, 2, s13, m6);
    if (eval0(gr_reshape(x, 2, s4m)) == GR_OK) {                      /* one -1 is inferred */
        CHECK_EQ_INT(R.ndim, 2); CHECK_EQ_INT(R.shape[0], 4); CHECK_EQ_INT(R.shape[1], 6);
        for (i = 0; i < 24; i++) CHECK_NEAR(R.v[i], d[i], 0);
    } else gt_fail(__FILE__, __LINE__, "reshape (4,-1)");
    if (eval0(gr_reshape(gr_exp(x), 1, s24)) == GR_OK) {
        CHECK_EQ_INT(R.ndim, 1); CHECK_EQ_INT(R.shape[0], 24);
        for (i = 0; i < 24; i++) CHECK_NEAR(R.v[i], exp(d[i]), 1e-15);
    } else gt_fail(__FILE__, __LINE__, "reshape (24,)");
    {   /* (2,3) -> (3, 1, 2): swap the axes and insert one */
        static const int pat[3] = { 1, GR_NEWAXIS, 0 };
        gr_var *y = gr_dimshuffle(m, 3, pat);
        CHECK_EQ_INT(gr_var_ndim(y), 3);
        if (eval0(y) == GR_OK) {
            CHECK_EQ_INT(R.shape[0], 3); CHECK_EQ_INT(R.shape[1], 1); CHECK_EQ_INT(R.shape[2], 2);
            for (i = 0; i < 3; i++)
                for (j = 0; j < 2; j++) CHECK_NEAR(R.v[i * 2 + j], m6[j * 3 + i], 0);
        } else gt_fail(__FILE__, __LINE__, "dimshuffle (1,x,0)");
    }
    {   /* (1,3) -> (3,): an axis of static size 1 may be dropped */
        static const int pat[1] = { 1 };
        if (eval0(gr_dimshuffle(row, 1, pat)) == GR_OK) {
            CHECK_EQ_INT(R.ndim, 1); CHECK_EQ_INT(R.shape[0], 3);
            for (i = 0; i < 3; i++) CHECK_NEAR(R.v[i], m6[i], 0);
        } else gt_fail(__FILE__, __LINE__, "dimshuffle dropping a broadcastable axis");
    }
    {   /* a column made with GR_NEWAXIS broadcasts against a row */
        static const int col[2] = { 0, GR_NEWAXIS };
        static const int64_t n3 = 3;
        gr_var *v = constant(g, GR_F64, 1, &n3, m6);
        if (eval0(gr_sub(gr_dimshuffle(v, 2, col), v)) == GR_OK) {
            CHECK_EQ_INT(R.shape[0], 3); CHECK_EQ_INT(R.shape[1], 3);
            for (i = 0; i < 3; i++)
                for (j = 0; j < 3; j++) CHECK_NEAR(R.v[i * 3 + j], m6[i] - m6[j], 0);
        } else gt_fail(__FILE__, __LINE__, "column - row");
    }
    {   /* the reshape of an input with an unknown shape, checked at the call */
        gr_var *in = gr_tensor(g, GR_F64, 2, NULL, "in");
        static const int64_t s32[2] = { 3, 2 };
        gr_array *a = gr_array_from(GR_F64, 2, s23, m6);
        const gr_array *ins[1];
        ins[0] = a;
        if (eval(1, &in, ins, gr_reshape(in, 2, s32)) == GR_OK) {
            CHECK_EQ_INT(R.shape[0], 3); CHECK_EQ_INT(R.shape[1], 2);
            for (i = 0; i < 6; i++) CHECK_NEAR(R.v[i], m6[i], 0);
        } else gt_fail(__FILE__, __LINE__, "reshape of an input");
        gr_array_free(a);
    }
    CHECK_EQ_INT(gr_graph_status(g), GR_OK);
    gr_graph_free(g);
}

static void test_softmax(void) {
    static const double z[6] = { 1.0, 2.0, 3.0, -1.0, 0.0, 1000.0 };   /* e^1000 overflows: the max is subtracted first */
    static const int64_t s[2] = { 2, 3 };
    gr_graph *g = gr_graph_new();
    gr_var *x = constant(g, GR_F64, 2, s, z);
    int r, c, axis;
    for (axis = -1; axis <= 1; axis++) {
        int ax = axis < 0 ? 1 : axis;
        if (eval0(gr_softmax(x, axis)) != GR_OK) { gt_fail(__FILE__, __LINE__, "softmax axis %d", axis); continue; }
        CHECK_EQ_INT(R.ndim, 2); CHECK_EQ_INT(R.shape[0], 2); CHECK_EQ_INT(R.shape[1], 3);
        for (r = 0; r < 2; r++)
            for (c = 0; c < 3; c++) {
                double m = -INFINITY, sum = 0, want;
                int k, n = ax == 1 ? 3 : 2;
                for (k = 0; k < n; k++) { double v = ax == 1 ? z[r * 3 + k] : z[k * 3 + c]; if (v > m) m = v; }
                for (k = 0; k < n; k++) sum += exp((ax == 1 ? z[r * 3 + k] : z[k * 3 + c]) - m);
                want = exp(z[r * 3 + c] - m) / sum;
                CHECK_NEAR(R.v[r * 3 + c], want, 1e-15);
            }
    }
    gr_graph_free(g);
}

/* ---- compiled functions and shared variables ----------------------------------------------------- */

static void test_shared_updates(void) {
    static const double x1[3] = { 1.0, 2.0, 3.0 }, x2[3] = { 0.5, -1.0, 4.0 };
    int64_t n = 3;
    gr_graph *g = gr_graph_new();
    gr_array *zeros = gr_array_new(GR_F64, 1, &n), *count0 = gr_array_scalar(GR_I64, 0);
    gr_var *acc = gr_shared(g, zeros, "acc"), *calls = gr_shared(g, count0, "calls");
    gr_var *x = gr_vector(g, GR_F64, "x"), *outs[2];
    gr_update upd[2];
    gr_fn_opts opts = { 0 };
    gr_fn *f, *h;
    gr_array *a1 = gr_array_from(GR_F64, 1, &n, x1), *a2 = gr_array_from(GR_F64, 1, &n, x2);
    const gr_array *in[1], *out[2], *hout[1];
    gr_var *twice;
    int i;
    gr_array_free(zeros);
    gr_array_free(count0);
    CHECK_EQ_INT(gr_var_dtype(acc), GR_F64);
    CHECK_EQ_INT(gr_var_ndim(acc), 1);
    CHECK(strcmp(gr_var_name(acc), "acc") == 0);

    upd[0].shared = acc;   upd[0].value = gr_add(acc, x);                  /* acc := acc + x */
    upd[1].shared = calls; upd[1].value = gr_add(calls, gr_const(g, 1));   /* calls := calls + 1 */
    opts.updates = upd;
    opts.n_updates = 2;
    outs[0] = acc;                          /* shows the value before this call's updates */
    outs[1] = gr_mul(acc, gr_const(g, 10));
    f = gr_function(1, &x, 2, outs, &opts);
    twice = gr_mul(acc, gr_const(g, 2));
    h = gr_function(0, NULL, 1, &twice, NULL);   /* another function reading the same storage */
    CHECK(f != NULL && h != NULL);
    if (!f || !h) { gr_fn_free(f); gr_fn_free(h); gr_graph_free(g); gr_array_free(a1); gr_array_free(a2); return; }

    in[0] = a1;
    CHECK_EQ_INT(gr_call(f, in, out), GR_OK);
    for (i = 0; i < 3; i++) { CHECK_NEAR(gr_array_get(out[0], i), 0, 0); CHECK_NEAR(gr_array_get(out[1], i), 0, 0); }
    CHECK(strcmp(gr_fn_message(f), "") == 0);
    for (i = 0; i < 3; i++) CHECK_NEAR(gr_array_get(gr_shared_get(acc), i), x1[i], 0);
    CHECK_NEAR(gr_array_get(gr_shared_get(calls), 0), 1, 0);
    CHECK_EQ_INT(gr_shared_get(calls)->dtype, GR_I64);

    in[0] = a2;
    CHECK_EQ_INT(gr_call(f, in, out), GR_OK);
    for (i = 0; i < 3; i++) {
        CHECK_NEAR(gr_array_get(out[0], i), x1[i], 0);
        CHECK_NEAR(gr_array_get(out[1], i), 10 * x1[i], 1e-15);
        CHECK_NEAR(gr_array_get(gr_shared_get(acc), i), x1[i] + x2[i], 0);
    }
    CHECK_NEAR(gr_array_get(gr_shared_get(calls), 0), 2, 0);

    /* the other function sees the updates; gr_call(h, NULL, ...) is allowed: h has no inputs */
    CHECK_EQ_INT(gr_call(h, NULL, hout), GR_OK);
    for (i = 0; i < 3; i++) CHECK_NEAR(gr_array_get(hout[0], i), 2 * (x1[i] + x2[i]), 1e-15);

    /* gr_shared_set: seen by every function */
    CHECK_EQ_INT(gr_shared_set(acc, a1), GR_OK);
    CHECK_EQ_INT(gr_call(h, NULL, hout), GR_OK);
    for (i = 0; i < 3; i++) CHECK_NEAR(gr_array_get(hout[0], i), 2 * x1[i], 1e-15);

    /* ... but not a change of dtype or ndim: GR_ERR_TYPE, value unchanged */
    {
        float ff[3] = { 9, 9, 9 };
        gr_array *fa = gr_array_from(GR_F32, 1, &n, ff);
        gr_array *m = gr_array_new(GR_F64, 2, (const int64_t[2]){ 1, 3 });
        CHECK_EQ_INT(gr_shared_set(acc, fa), GR_ERR_TYPE);
        CHECK_EQ_INT(gr_graph_status(g), GR_ERR_TYPE);
        CHECK(strlen(gr_graph_message(g)) > 0);
        gr_graph_clear_error(g);
        CHECK_EQ_INT(gr_graph_status(g), GR_OK);
        CHECK(strcmp(gr_graph_message(g), "") == 0);
        CHECK_EQ_INT(gr_shared_set(acc, m), GR_ERR_TYPE);
        gr_graph_clear_error(g);
        for (i = 0; i < 3; i++) CHECK_NEAR(gr_array_get(gr_shared_get(acc), i), x1[i], 0);
        gr_array_free(fa);
        gr_array_free(m);
    }
    /* a new shape that no longer fits the functions: their calls fail with GR_ERR_SHAPE */
    {
        int64_t n4 = 4;
        gr_array *four = gr_array_new(GR_F64, 1, &n4);
        CHECK_EQ_INT(gr_shared_set(acc, four), GR_OK);
        CHECK_EQ_INT(gr_shared_get(acc)->shape[0], 4);
        CHECK_EQ_INT(gr_call(h, NULL, hout), GR_ERR_SHAPE);
        CHECK(strlen(gr_fn_message(h)) > 0);
        gr_array_free(four);
    }
    gr_fn_free(f);
    gr_graph_free(g);                       /* the storage lives on while h uses it */
    CHECK(gr_shared_get(NULL) == NULL);
    gr_fn_free(h);
    gr_array_free(a1);
    gr_array_free(a2);
}

/* a function runs the same with GR_OPT_NONE; unused inputs are allowed; it outlives its graph */
static void test_function_options(void) {
    static const double xv[4] = { 0.1, 0.2, 0.3, 0.4 };
    int64_t n = 4;
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *unused = gr_scalar(g, GR_F64, "unused"), *ins[2];
    gr_var *y = gr_sum(gr_mul(gr_sin(x), gr_add(x, gr_const(g, 1))));
    gr_fn_opts none = { 0 };
    gr_fn *f, *f0;
    gr_array *xa = gr_array_from(GR_F64, 1, &n, xv), *sa = gr_array_scalar(GR_F64, 5);
    const gr_array *in[2], *out[1];
    double want = 0;
    int i;
    FILE *tmp;
    for (i = 0; i < 4; i++) want += sin(xv[i]) * (xv[i] + 1);
    none.optimize = GR_OPT_NONE;
    ins[0] = x; ins[1] = unused;
    f = gr_function(2, ins, 1, &y, NULL);
    f0 = gr_function(2, ins, 1, &y, &none);
    gr_graph_free(g);                       /* a gr_fn is independent of its graph once made */
    CHECK(f != NULL && f0 != NULL);
    in[0] = xa; in[1] = sa;
    if (f && gr_call(f, in, out) == GR_OK) CHECK_NEAR(gr_array_get(out[0], 0), want, 1e-15);
    else gt_fail(__FILE__, __LINE__, "call with GR_OPT_FULL");
    if (f0 && gr_call(f0, in, out) == GR_OK) CHECK_NEAR(gr_array_get(out[0], 0), want, 1e-15);
    else gt_fail(__FILE__, __LINE__, "call with GR_OPT_NONE");
    CHECK(gr_fn_node_count(f) >= 1);
    tmp = tmpfile();
    if (tmp) {
        gr_fn_print(tmp, f);
        CHECK(ftell(tmp) > 0);
        fclose(tmp);
    }
    gr_fn_free(f);
    gr_fn_free(f0);
    gr_array_free(xa);
    gr_array_free(sa);
}

/* ---- errors --------------------------------------------------------------------------------------- */

static void test_errors(void) {
    static const double d6[6] = { 1, 2, 3, 4, 5, 6 };
    static const int64_t s23[2] = { 2, 3 }, s4[1] = { 4 }, s3[1] = { 3 };
    gr_graph *g = gr_graph_new();
    gr_var *m = constant(g, GR_F64, 2, s23, d6), *v4 = constant(g, GR_F64, 1, s4, d6);
    gr_var *x = gr_vector(g, GR_F64, "x"), *y;

    /* a NULL operand: NULL, and nothing recorded */
    CHECK(gr_add(NULL, x) == NULL);
    CHECK(gr_exp(gr_sum(gr_mul(x, NULL))) == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_OK);
    CHECK(strcmp(gr_graph_message(g), "") == 0);

    /* static shapes that conflict: caught when the op is built */
    CHECK(gr_add(m, v4) == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK(strlen(gr_graph_message(g)) > 0);
    /* the first error sticks */
    CHECK(gr_reshape(m, 1, s4) == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_SHAPE);
    gr_graph_clear_error(g);

    /* an impossible reshape is GR_ERR_SHAPE; two -1 entries are GR_ERR_VALUE */
    CHECK(gr_reshape(m, 1, s4) == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_SHAPE);
    gr_graph_clear_error(g);
    {
        static const int64_t two[2] = { -1, -1 };
        CHECK(gr_reshape(m, 2, two) == NULL);
        CHECK_EQ_INT(gr_graph_status(g), GR_ERR_VALUE);
        gr_graph_clear_error(g);
    }

    /* gr_call: the input's exact dtype and ndim (GR_ERR_TYPE), shapes checked at the call (GR_ERR_SHAPE) */
    y = gr_add(x, gr_const(g, 1));
    {
        gr_var *b = gr_vector(g, GR_F64, "b"), *ins[2];
        gr_fn *f = gr_function(1, &x, 1, &y, NULL), *f2;
        float ff[3] = { 1, 2, 3 };
        gr_array *fa = gr_array_from(GR_F32, 1, s3, ff), *da = gr_array_from(GR_F64, 1, s3, d6);
        gr_array *ma = gr_array_from(GR_F64, 2, s23, d6), *d4 = gr_array_from(GR_F64, 1, s4, d6);
        const gr_array *in[2], *out[1];
        CHECK(f != NULL);
        in[0] = fa;
        CHECK_EQ_INT(gr_call(f, in, out), GR_ERR_TYPE);
        CHECK(strlen(gr_fn_message(f)) > 0);
        in[0] = ma;
        CHECK_EQ_INT(gr_call(f, in, out), GR_ERR_TYPE);
        in[0] = da;
        CHECK_EQ_INT(gr_call(f, in, out), GR_OK);
        CHECK(strcmp(gr_fn_message(f), "") == 0);
        CHECK_NEAR(gr_array_get(out[0], 2), 4, 0);
        ins[0] = x; ins[1] = b;
        f2 = gr_function(2, ins, 1, (gr_var *[1]){ gr_mul(x, b) }, NULL);
        CHECK(f2 != NULL);
        in[0] = da; in[1] = d4;
        CHECK_EQ_INT(gr_call(f2, in, out), GR_ERR_SHAPE);
        CHECK(strlen(gr_fn_message(f2)) > 0);
        in[1] = da;
        CHECK_EQ_INT(gr_call(f2, in, out), GR_OK);
        CHECK_NEAR(gr_array_get(out[0], 2), 9, 0);
        gr_fn_free(f);
        gr_fn_free(f2);
        gr_array_free(fa); gr_array_free(da); gr_array_free(ma); gr_array_free(d4);
    }
    /* an input with a static dim: other sizes fail at the call */
    {
        static const int64_t static2[2] = { 2, -1 };
        gr_var *t = gr_tensor(g, GR_F64, 2, static2, "t");
        gr_var *s = gr_sum(t);
        gr_fn *f = gr_function(1, &t, 1, &s, NULL);
        static const int64_t s32[2] = { 3, 2 };
        gr_array *good = gr_array_from(GR_F64, 2, s23, d6), *bad = gr_array_from(GR_F64, 2, s32, d6);
        const gr_array *in[1], *out[1];
        in[0] = bad;
        CHECK_EQ_INT(gr_call(f, in, out), GR_ERR_SHAPE);
        in[0] = good;
        CHECK_EQ_INT(gr_call(f, in, out), GR_OK);
        CHECK_NEAR(gr_array_get(out[0], 0), 21, 0);
        gr_fn_free(f);
        gr_array_free(good);
        gr_array_free(bad);
    }
    /* dropping an axis whose static size is not 1 is refused when built */
    {
        static const int keep1[1] = { 1 };
        CHECK(gr_dimshuffle(m, 1, keep1) == NULL);
        CHECK(gr_graph_status(g) != GR_OK);
        gr_graph_clear_error(g);
    }
    /* every *_free accepts NULL */
    gr_fn_free(NULL);
    gr_array_free(NULL);
    gr_graph_free(NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_OK);
    gr_graph_free(g);
}

/* names, dtypes and the markers' predicates of ordinary variables */
static void test_variables(void) {
    gr_graph *g = gr_graph_new();
    gr_var *s = gr_scalar(g, GR_F32, "s"), *v = gr_vector(g, GR_I64, NULL), *m = gr_matrix(g, GR_BOOL, "m");
    gr_var *t = gr_tensor(g, GR_F64, 4, NULL, "t");
    CHECK_EQ_INT(gr_var_ndim(s), 0); CHECK_EQ_INT(gr_var_ndim(v), 1); CHECK_EQ_INT(gr_var_ndim(m), 2); CHECK_EQ_INT(gr_var_ndim(t), 4);
    CHECK_EQ_INT(gr_var_dtype(s), GR_F32); CHECK_EQ_INT(gr_var_dtype(v), GR_I64); CHECK_EQ_INT(gr_var_dtype(m), GR_BOOL);
    CHECK(strcmp(gr_var_name(s), "s") == 0);
    CHECK(gr_var_name(v) == NULL);
    gr_var_set_name(v, "renamed");
    CHECK(strcmp(gr_var_name(v), "renamed") == 0);
    CHECK(gr_var_graph(t) == g);
    CHECK(!gr_is_disconnected(t) && !gr_is_null(t));
    {
        gr_array *a = gr_array_scalar(GR_BOOL, 3.0), *z = gr_array_new(GR_I64, 2, (const int64_t[2]){ 2, 2 });
        CHECK_EQ_INT(a->ndim, 0);
        CHECK_EQ_INT(a->size, 1);
        CHECK_NEAR(gr_array_get(a, 0), 1, 0);            /* BOOL holds 0 or 1 */
        CHECK_EQ_INT(z->size, 4);
        CHECK_NEAR(gr_array_get(z, 3), 0, 0);
        gr_array_free(a);
        gr_array_free(z);
    }
    gr_graph_free(g);
}

static const gt_case suite_api_min[] = {
    { "unary_f64", test_unary_f64 },
    { "unary_dtypes", test_unary_dtypes },
    { "binary_broadcast", test_binary_broadcast },
    { "where_clip", test_where_clip },
    { "promotion", test_promotion },
    { "reductions", test_reductions },
    { "integer_reductions", test_integer_reductions },
    { "dot", test_dot },
    { "reshape_dimshuffle", test_reshape_dimshuffle },
    { "softmax", test_softmax },
    { "shared_updates", test_shared_updates },
    { "function_options", test_function_options },
    { "errors", test_errors },
    { "variables", test_variables },
    END_SUITE
};

int main(void) {
    gt_run(suite_api_min);
    return gt_report("api_min");
}
