/* tests/ops_scan.c: the rows of ops/scan.c (Scan; Rows, ScanPlace and ScanGather, which a loop's
   gradient makes) with their cases for tests/ops.c, and gr_scan, symbolic loops (SEMANTICS 17,
   API.md "Loops"), ported from the scan tests of Aesara and PyTensor (tests/scan/test_basic.py of
   both; each test's comment names the upstream tests it ports). Sequences with taps, the three
   kinds of outputs, n_steps, go_backwards and until; the gradient (BPTT) with its connection
   pattern, truncate_gradient, integer inputs, second to fourth derivatives; the R-op and the
   adjoint identity with gr_lop; gr_jacobian and gr_hessian through loops; checkpoints giving the
   same bits; every error of SEMANTICS 17.9. Every value is checked against a closed form or a
   plain-C loop computing the same thing here, and every gradient against central differences of
   that loop. */
#include "ops.h"
#include <stdint.h>

/* ---- arrays, evaluation and comparison ---------------------------------------------------------- */

#define SC_MAX_OUT 64

static gr_array *sc_arr(int ndim, const int64_t *shape, const double *v) {
    gr_array *a = gr_array_new(GR_F64, ndim, shape);
    int64_t i;
    if (a && v) for (i = 0; i < a->size; i++) ((double *)a->data)[i] = v[i];
    return a;
}
static gr_array *sc_vec(int64_t n, const double *v) { return sc_arr(1, &n, v); }
static gr_array *sc_mat(int64_t r, int64_t c, const double *v) {
    int64_t s[2];
    s[0] = r; s[1] = c;
    return sc_arr(2, s, v);
}
static gr_array *sc_ivec(int64_t n, const int64_t *v) { return gr_array_from(GR_I64, 1, &n, v); }

/* a 0-d int64 constant (for n_steps and integer initial values) */
static gr_var *sc_iconst(gr_graph *g, int64_t v) {
    gr_array *a = gr_array_scalar(GR_I64, (double)v);
    gr_var *c = gr_constant(g, a);
    gr_array_free(a);
    return c;
}
/* a 0-d float64 constant */
static gr_var *sc_f0(gr_graph *g, double v) {
    gr_array *a = gr_array_scalar(GR_F64, v);
    gr_var *c = gr_constant(g, a);
    gr_array_free(a);
    return c;
}
/* a float64 constant of any shape */
static gr_var *sc_fconst(gr_graph *g, int ndim, const int64_t *shape, const double *v) {
    gr_array *a = sc_arr(ndim, shape, v);
    gr_var *c = gr_constant(g, a);
    gr_array_free(a);
    return c;
}

static gr_scan_seq sc_seq(gr_var *x, int n_taps, const int *taps) {
    gr_scan_seq s;
    s.x = x; s.n_taps = n_taps; s.taps = taps;
    return s;
}
static gr_scan_out sc_out(gr_var *initial, int n_taps, const int *taps) {
    gr_scan_out o;
    o.initial = initial; o.n_taps = n_taps; o.taps = taps;
    return o;
}
static gr_scan_opts sc_opts(gr_var *n_steps) {
    gr_scan_opts o;
    memset(&o, 0, sizeof o);
    o.n_steps = n_steps;
    return o;
}

/* calls f once and copies its outputs into res (the caller frees them; NULL on failure) */
static gr_status sc_call(gr_fn *f, gr_array *const *vals, int n_out, gr_array **res) {
    const gr_array *o[SC_MAX_OUT];
    gr_status st;
    int i;
    for (i = 0; i < n_out; i++) res[i] = NULL;
    if (!f || n_out > SC_MAX_OUT) return GR_ERR_VALUE;
    st = gr_call(f, (const gr_array *const *)vals, o);
    if (st != GR_OK) {
        fprintf(stderr, "  sc_call: %s\n", gr_fn_message(f));
        return st;
    }
    for (i = 0; i < n_out; i++) res[i] = gr_array_copy(o[i]);
    return GR_OK;
}

/* compiles in -> outs, calls it once at vals and copies the outputs into res */
static gr_status sc_run(int n_in, gr_var *const *in, gr_array *const *vals, int n_out, gr_var *const *outs,
                        gr_array **res) {
    gr_fn *f;
    gr_status st;
    int i;
    for (i = 0; i < n_out; i++) res[i] = NULL;
    for (i = 0; i < n_out; i++) if (!outs[i]) return GR_ERR_VALUE;
    f = gr_function(n_in, in, n_out, outs, NULL);
    if (!f) {
        gr_graph *g = gr_var_graph(outs[0]);
        fprintf(stderr, "  sc_run: gr_function failed: %s\n", gr_graph_message(g));
        return GR_ERR_VALUE;
    }
    st = sc_call(f, vals, n_out, res);
    gr_fn_free(f);
    return st;
}

static void sc_free(int n, gr_array **a) {
    int i;
    for (i = 0; i < n; i++) { gr_array_free(a[i]); a[i] = NULL; }
}

/* a has n elements, each within tol * max(1, |want|) of want (a few mismatches are printed) */
static void sc_near_at(const char *file, int line, const char *what, const gr_array *a, int64_t n,
                       const double *want, double tol) {
    int64_t i;
    int bad = 0;
    if (!a) { gt_fail(file, line, "%s is NULL", what); return; }
    if (a->size != n) {
        gt_fail(file, line, "%s has %lld elements, want %lld", what, (long long)a->size, (long long)n);
        return;
    }
    for (i = 0; i < n; i++) {
        double v = gr_array_get(a, i), w = want[i];
        if (!(fabs(v - w) <= tol * (fabs(w) > 1 ? fabs(w) : 1.0))) {
            if (bad < 4) gt_fail(file, line, "%s[%lld] = %.17g, want %.17g", what, (long long)i, v, w);
            bad++;
        }
    }
    if (bad > 4) gt_fail(file, line, "%s: %d elements differ", what, bad);
}
#define SC_NEAR(a, n, want, tol) sc_near_at(__FILE__, __LINE__, #a, (a), (n), (want), (tol))

/* every element of a is exactly zero (and there are n of them) */
static void sc_zero_at(const char *file, int line, const char *what, const gr_array *a, int64_t n) {
    int64_t i;
    if (!a) { gt_fail(file, line, "%s is NULL", what); return; }
    if (a->size != n) {
        gt_fail(file, line, "%s has %lld elements, want %lld", what, (long long)a->size, (long long)n);
        return;
    }
    for (i = 0; i < n; i++)
        if (gr_array_get(a, i) != 0.0) {
            gt_fail(file, line, "%s[%lld] = %.17g, want 0", what, (long long)i, gr_array_get(a, i));
            return;
        }
}
#define SC_ZERO(a, n) sc_zero_at(__FILE__, __LINE__, #a, (a), (n))

/* a's dtype and shape (up to 3 axes; pass -1 for the axes beyond ndim) */
static void sc_shape_at(const char *file, int line, const char *what, const gr_array *a, gr_dtype dt, int ndim,
                        int64_t s0, int64_t s1, int64_t s2) {
    int64_t want[3];
    int i;
    want[0] = s0; want[1] = s1; want[2] = s2;
    if (!a) { gt_fail(file, line, "%s is NULL", what); return; }
    if (a->dtype != dt) gt_fail(file, line, "%s is %s, want %s", what, gr_dtype_name(a->dtype), gr_dtype_name(dt));
    if (a->ndim != ndim) { gt_fail(file, line, "%s has %d axes, want %d", what, a->ndim, ndim); return; }
    for (i = 0; i < ndim && i < 3; i++)
        if (a->shape[i] != want[i])
            gt_fail(file, line, "%s: axis %d has %lld, want %lld", what, i, (long long)a->shape[i], (long long)want[i]);
}
#define SC_SHAPE(a, dt, nd, s0, s1, s2) sc_shape_at(__FILE__, __LINE__, #a, (a), (dt), (nd), (s0), (s1), (s2))

/* a and b hold the same bits: dtype, shape and data */
static void sc_same_at(const char *file, int line, const char *what, const gr_array *a, const gr_array *b) {
    size_t esz;
    if (!a || !b) { gt_fail(file, line, "%s: NULL array", what); return; }
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->size != b->size ||
        memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof a->shape[0]) != 0) {
        gt_fail(file, line, "%s: dtype or shape differ", what);
        return;
    }
    esz = a->dtype == GR_F64 || a->dtype == GR_I64 ? 8 : a->dtype == GR_F32 ? 4 : 1;
    if (a->size && memcmp(a->data, b->data, (size_t)a->size * esz) != 0) {
        int64_t i;
        for (i = 0; i < a->size; i++)
            if (gr_array_get(a, i) != gr_array_get(b, i)) break;
        gt_fail(file, line, "%s: element %lld differs: %.17g vs %.17g", what, (long long)i, gr_array_get(a, i),
                gr_array_get(b, i));
    }
}
#define SC_SAME(a, b) sc_same_at(__FILE__, __LINE__, #a " vs " #b, (a), (b))

/* a deterministic uniform generator (an LCG's high bits) */
static double sc_u(uint64_t *s, double lo, double hi) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * (double)(*s >> 11) * (1.0 / 9007199254740992.0);
}
static void sc_fill(uint64_t *s, double *v, int64_t n, double lo, double hi) {
    int64_t i;
    for (i = 0; i < n; i++) v[i] = sc_u(s, lo, hi);
}

/* central differences of a plain-C reference cost over the parameters p[0..n) (the reference reads
   them through ctx): out[i] = (c(p + h e_i) - c(p - h e_i)) / 2h */
typedef double (*sc_ref)(void *ctx);
static void sc_fd(sc_ref cost, void *ctx, double *p, int64_t n, double *out) {
    const double h = 1e-6;
    int64_t i;
    for (i = 0; i < n; i++) {
        double keep = p[i], up, down;
        p[i] = keep + h; up = cost(ctx);
        p[i] = keep - h; down = cost(ctx);
        p[i] = keep;
        out[i] = (up - down) / (2 * h);
    }
}

/* the directional derivative of a vector-valued reference: out = (f(p + h v) - f(p - h v)) / 2h */
typedef void (*sc_refv)(void *ctx, double *out);
static void sc_fd_dir(sc_refv f, void *ctx, double *p, const double *v, int64_t n, int64_t n_out, double *out) {
    const double h = 1e-6;
    double keep[256], up[256], down[256];
    int64_t i;
    if (n > 256 || n_out > 256) { fprintf(stderr, "  sc_fd_dir: too large\n"); return; }
    memcpy(keep, p, (size_t)n * sizeof *p);
    for (i = 0; i < n; i++) p[i] = keep[i] + h * v[i];
    f(ctx, up);
    for (i = 0; i < n; i++) p[i] = keep[i] - h * v[i];
    f(ctx, down);
    memcpy(p, keep, (size_t)n * sizeof *p);
    for (i = 0; i < n_out; i++) out[i] = (up[i] - down[i]) / (2 * h);
}

static double sc_dotv(const double *a, const double *b, int64_t n) {
    double s = 0;
    int64_t i;
    for (i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}
static double sc_dota(const gr_array *a, const double *b) {
    double s = 0;
    int64_t i;
    if (!a) return NAN;
    for (i = 0; i < a->size; i++) s += gr_array_get(a, i) * b[i];
    return s;
}

/* y = x . W for a vector x (n) and a matrix W (n x m), as NumPy's dot */
static void sc_vecmat(const double *x, const double *W, int n, int m, double *y) {
    int i, j;
    for (j = 0; j < m; j++) {
        double s = 0;
        for (i = 0; i < n; i++) s += x[i] * W[i * m + j];
        y[j] = s;
    }
}
/* y = W . x for a matrix W (n x m) and a vector x (m) */
static void sc_matvec(const double *W, const double *x, int n, int m, double *y) {
    int i, j;
    for (i = 0; i < n; i++) {
        double s = 0;
        for (j = 0; j < m; j++) s += W[i * m + j] * x[j];
        y[i] = s;
    }
}

/* the variable sum(r * F) for a constant F of r's shape (the projection of scan_project_sum) */
static gr_var *sc_project(gr_var *r, int ndim, const int64_t *shape, const double *F) {
    if (!r) return NULL;
    return gr_sum(gr_mul(r, sc_fconst(gr_var_graph(r), ndim, shape, F)));
}

/* ---- step functions shared by several tests ----------------------------------------------------- */

/* x_t = 2 x_{t-1} */
static gr_status st_double(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    out[0] = gr_mul(gr_const(g, 2.0), in[0]);
    return GR_OK;
}
/* x_t = x_{t-1} + 1 (or y_t = x_t + 1 over a sequence) */
static gr_status st_plus1(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    out[0] = gr_add(in[0], gr_const(g, 1.0));
    return GR_OK;
}
/* the first input as it is */
static gr_status st_first(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = in[0];
    return GR_OK;
}
/* x_t = u_t W_in + x_{t-1} W with in = (u_t, x_{t-1}, W_in, W) */
static gr_status st_rnn(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = gr_add(gr_mul(in[0], in[2]), gr_mul(in[1], in[3]));
    return GR_OK;
}

/* the reference of st_rnn over T steps, forwards or backwards */
static void ref_rnn(int T, const double *u, double x0, double w_in, double w, int backwards, double *x) {
    int t;
    double prev = x0;
    for (t = 0; t < T; t++) {
        x[t] = u[backwards ? T - 1 - t : t] * w_in + prev * w;
        prev = x[t];
    }
}

/* ---- forward: outputs, states and n_steps --------------------------------------------------------- */

/* a generator: x_t = 2 x_{t-1} for n_steps given at call time, float and int64 states; one function
   called several times with different lengths gives each call's own values (no storage left over
   from an earlier call), and n_steps = 0 gives 0 rows of the state's dtype */
TEST(test_scan_generator) {
    gr_graph *g = gr_graph_new();
    gr_var *state = gr_scalar(g, GR_F64, "state"), *istate = gr_scalar(g, GR_I64, "istate");
    gr_var *n = gr_scalar(g, GR_I64, "n_steps"), *in[3], *r[2];
    gr_scan_out o;
    gr_scan_opts opts = sc_opts(n);
    gr_array *vals[3], *res[2], *first[2];
    double s0[4] = { 0.37, -1.5, 0.37, 0.37 }, want[64];
    int64_t i0[4] = { 3, 7, 3, 3 }, steps[4] = { 5, 3, 5, 0 };
    gr_fn *f;
    int call, k;
    r[0] = r[1] = NULL;
    o = sc_out(state, 0, NULL);
    CHECK_STATUS(gr_scan(st_double, NULL, 0, NULL, 1, &o, 0, NULL, &opts, &r[0]), GR_OK);
    o = sc_out(istate, 0, NULL);
    CHECK_STATUS(gr_scan(st_double, NULL, 0, NULL, 1, &o, 0, NULL, &opts, &r[1]), GR_OK);
    CHECK(r[0] && r[1]);
    CHECK_EQ_INT(gr_var_ndim(r[0]), 1);
    CHECK_EQ_INT(gr_var_dtype(r[0]), GR_F64);
    CHECK_EQ_INT(gr_var_dtype(r[1]), GR_I64);
    in[0] = state; in[1] = istate; in[2] = n;
    f = r[0] && r[1] ? gr_function(3, in, 2, r, NULL) : NULL;
    CHECK(f != NULL);
    first[0] = first[1] = NULL;
    for (call = 0; call < 4 && f; call++) {
        vals[0] = gr_array_scalar(GR_F64, s0[call]);
        vals[1] = gr_array_scalar(GR_I64, (double)i0[call]);
        vals[2] = gr_array_scalar(GR_I64, (double)steps[call]);
        CHECK_STATUS(sc_call(f, vals, 2, res), GR_OK);
        SC_SHAPE(res[0], GR_F64, 1, steps[call], -1, -1);
        SC_SHAPE(res[1], GR_I64, 1, steps[call], -1, -1);
        for (k = 0; k < steps[call]; k++) want[k] = s0[call] * ldexp(1.0, k + 1);
        SC_NEAR(res[0], steps[call], want, 0);
        for (k = 0; k < steps[call]; k++) want[k] = (double)i0[call] * ldexp(1.0, k + 1);
        SC_NEAR(res[1], steps[call], want, 0);
        if (call == 0) { first[0] = res[0]; first[1] = res[1]; res[0] = res[1] = NULL; }
        if (call == 2) { SC_SAME(res[0], first[0]); SC_SAME(res[1], first[1]); }
        sc_free(2, res); sc_free(3, vals);
    }
    sc_free(2, first);
    gr_fn_free(f);
    gr_graph_free(g);
}

/* x_t = u_t W_in + x_{t-1} W with the weights as non-sequences, then as outer variables the body
   reads (shared variables: they become non-sequences too) */
typedef struct sc_two_vars { gr_var *a, *b; } sc_two_vars;
static gr_status st_rnn_outer(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    const sc_two_vars *w = (const sc_two_vars *)user;
    (void)g; (void)until;
    out[0] = gr_add(gr_mul(in[0], w->a), gr_mul(in[1], w->b));
    return GR_OK;
}

TEST(test_scan_one_sequence_one_output_weights) {
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_vector(g, GR_F64, "u"), *x0 = gr_scalar(g, GR_F64, "x0");
    gr_var *w_in = gr_scalar(g, GR_F64, "win"), *w = gr_scalar(g, GR_F64, "w"), *ns[2], *in[4], *r[2];
    gr_array *a_win = gr_array_scalar(GR_F64, 0.7), *a_w = gr_array_scalar(GR_F64, -0.45);
    sc_two_vars sh;
    gr_scan_seq s = sc_seq(u, 0, NULL);
    gr_scan_out o = sc_out(x0, 0, NULL);
    double uv[4], want[4];
    uint64_t seed = 11;
    gr_array *vals[4], *res[2];
    sh.a = gr_shared(g, a_win, "w_in");
    sh.b = gr_shared(g, a_w, "w");
    ns[0] = w_in; ns[1] = w;
    CHECK_STATUS(gr_scan(st_rnn, NULL, 1, &s, 1, &o, 2, ns, NULL, &r[0]), GR_OK);
    CHECK_STATUS(gr_scan(st_rnn_outer, &sh, 1, &s, 1, &o, 0, NULL, NULL, &r[1]), GR_OK);
    sc_fill(&seed, uv, 4, -5, 5);
    in[0] = u; in[1] = x0; in[2] = w_in; in[3] = w;
    vals[0] = sc_vec(4, uv); vals[1] = gr_array_scalar(GR_F64, 0.3);
    vals[2] = gr_array_scalar(GR_F64, 0.7); vals[3] = gr_array_scalar(GR_F64, -0.45);
    CHECK_STATUS(sc_run(4, in, vals, 2, r, res), GR_OK);
    ref_rnn(4, uv, 0.3, 0.7, -0.45, 0, want);
    SC_SHAPE(res[0], GR_F64, 1, 4, -1, -1);
    SC_NEAR(res[0], 4, want, 1e-15);
    SC_NEAR(res[1], 4, want, 1e-15);
    sc_free(2, res); sc_free(4, vals);
    gr_array_free(a_win); gr_array_free(a_w);
    gr_graph_free(g);
}

/* an output without state over a sequence: y_t = u_t + 3 */
static gr_status st_plus3(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    out[0] = gr_add(in[0], gr_const(g, 3.0));
    return GR_OK;
}

TEST(test_scan_output_only) {
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_vector(g, GR_F64, "u"), *r = NULL;
    gr_scan_seq s = sc_seq(u, 0, NULL);
    gr_scan_out o = sc_out(NULL, 0, NULL);
    double uv[5], want[5];
    uint64_t seed = 12;
    gr_array *vals[1], *res[1];
    int i;
    CHECK_STATUS(gr_scan(st_plus3, NULL, 1, &s, 1, &o, 0, NULL, NULL, &r), GR_OK);
    sc_fill(&seed, uv, 5, -5, 5);
    for (i = 0; i < 5; i++) want[i] = uv[i] + 3;
    vals[0] = sc_vec(5, uv);
    CHECK_STATUS(sc_run(1, &u, vals, 1, &r, res), GR_OK);
    SC_SHAPE(res[0], GR_F64, 1, 5, -1, -1);
    SC_NEAR(res[0], 5, want, 0);
    sc_free(1, res); sc_free(1, vals);
    gr_graph_free(g);
}

/* only a non-sequence and a constant n_steps: the body returns its input, the result repeats the
   matrix, and the gradient of its sum is n_steps everywhere */
TEST(test_scan_only_nonseq_inputs) {
    gr_graph *g = gr_graph_new();
    gr_var *inp = gr_matrix(g, GR_F64, "inp"), *r = NULL, *outs[2];
    gr_scan_out o = sc_out(NULL, 0, NULL);
    gr_scan_opts opts = sc_opts(sc_iconst(g, 2));
    double iv[4] = { 1, 2, 3, 4 }, want[8], twos[4] = { 2, 2, 2, 2 };
    gr_array *vals[1], *res[2];
    int i;
    CHECK_STATUS(gr_scan(st_first, NULL, 0, NULL, 1, &o, 1, &inp, &opts, &r), GR_OK);
    outs[0] = r; outs[1] = gr_grad1(gr_sum(r), inp);
    vals[0] = sc_mat(2, 2, iv);
    CHECK_STATUS(sc_run(1, &inp, vals, 2, outs, res), GR_OK);
    for (i = 0; i < 8; i++) want[i] = iv[i % 4];
    SC_SHAPE(res[0], GR_F64, 3, 2, 2, 2);
    SC_NEAR(res[0], 8, want, 0);
    SC_NEAR(res[1], 4, twos, 0);
    sc_free(2, res); sc_free(1, vals);
    gr_graph_free(g);
}

/* two sequences (a matrix and a vector), two states (a vector and a scalar that the body never
   reads), a matrix non-sequence and three shared weights read from the outer graph:
   x_t = u1_t . W_in1 + u2_t W_in2 + x_{t-1} . W,  y_t = x_{t-1} . W_out */
typedef struct sc_cmpl { gr_var *w_in2, *w, *w_out; double v_in2[2], v_w[4], v_out[2]; } sc_cmpl;

static void sc_cmpl_init(gr_graph *g, sc_cmpl *c, uint64_t *seed, double lo, double hi) {
    int64_t two = 2, s22[2] = { 2, 2 };
    gr_array *a;
    sc_fill(seed, c->v_in2, 2, lo, hi);
    sc_fill(seed, c->v_w, 4, lo, hi);
    sc_fill(seed, c->v_out, 2, lo, hi);
    a = sc_arr(1, &two, c->v_in2); c->w_in2 = gr_shared(g, a, "win2"); gr_array_free(a);
    a = sc_arr(2, s22, c->v_w); c->w = gr_shared(g, a, "w"); gr_array_free(a);
    a = sc_arr(1, &two, c->v_out); c->w_out = gr_shared(g, a, "wout"); gr_array_free(a);
}

static gr_status st_cmpl(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    const sc_cmpl *c = (const sc_cmpl *)user;
    (void)g; (void)until;
    /* in: u1_t, u2_t, x_{t-1}, y_{t-1}, W_in1 */
    out[0] = gr_add(gr_add(gr_dot(in[0], in[4]), gr_mul(in[1], c->w_in2)), gr_dot(in[2], c->w));
    out[1] = gr_dot(in[2], c->w_out);
    return GR_OK;
}

/* the reference of st_cmpl over T steps */
static void ref_cmpl(const sc_cmpl *c, int T, const double *u1, const double *u2, const double *x0,
                     const double *w_in1, double *x, double *y) {
    double prev[2], a[2], b[2];
    int t, j;
    memcpy(prev, x0, sizeof prev);
    for (t = 0; t < T; t++) {
        sc_vecmat(u1 + 2 * t, w_in1, 2, 2, a);
        sc_vecmat(prev, c->v_w, 2, 2, b);
        for (j = 0; j < 2; j++) x[2 * t + j] = a[j] + u2[t] * c->v_in2[j] + b[j];
        y[t] = prev[0] * c->v_out[0] + prev[1] * c->v_out[1];
        memcpy(prev, x + 2 * t, sizeof prev);
    }
}

TEST(test_scan_multiple_inputs_multiple_outputs) {
    gr_graph *g = gr_graph_new();
    gr_var *u1 = gr_matrix(g, GR_F64, "u1"), *u2 = gr_vector(g, GR_F64, "u2");
    gr_var *x0 = gr_vector(g, GR_F64, "x0"), *yinit = gr_scalar(g, GR_F64, "y0");
    gr_var *w_in1 = gr_matrix(g, GR_F64, "win"), *in[5], *r[2];
    gr_scan_seq s[2];
    gr_scan_out o[2];
    sc_cmpl c;
    uint64_t seed = 13;
    double v_u1[6], v_u2[3], v_x0[2], v_w_in1[4], x[6], y[3];
    gr_array *vals[5], *res[2];
    sc_cmpl_init(g, &c, &seed, -5, 5);
    sc_fill(&seed, v_u1, 6, -5, 5); sc_fill(&seed, v_u2, 3, -5, 5);
    sc_fill(&seed, v_x0, 2, -5, 5); sc_fill(&seed, v_w_in1, 4, -5, 5);
    s[0] = sc_seq(u1, 0, NULL); s[1] = sc_seq(u2, 0, NULL);
    o[0] = sc_out(x0, 0, NULL); o[1] = sc_out(yinit, 0, NULL);
    CHECK_STATUS(gr_scan(st_cmpl, &c, 2, s, 2, o, 1, &w_in1, NULL, r), GR_OK);
    in[0] = u1; in[1] = u2; in[2] = x0; in[3] = yinit; in[4] = w_in1;
    vals[0] = sc_mat(3, 2, v_u1); vals[1] = sc_vec(3, v_u2); vals[2] = sc_vec(2, v_x0);
    vals[3] = gr_array_scalar(GR_F64, 0.25); vals[4] = sc_mat(2, 2, v_w_in1);
    CHECK_STATUS(sc_run(5, in, vals, 2, r, res), GR_OK);
    ref_cmpl(&c, 3, v_u1, v_u2, v_x0, v_w_in1, x, y);
    SC_SHAPE(res[0], GR_F64, 2, 3, 2, -1);
    SC_SHAPE(res[1], GR_F64, 1, 3, -1, -1);
    SC_NEAR(res[0], 6, x, 1e-13);
    SC_NEAR(res[1], 3, y, 1e-13);
    sc_free(2, res); sc_free(5, vals);
    gr_graph_free(g);
}

/* outputs in an order that mixes kinds (a nit-sot first, then a sit-sot, then a mit-sot with taps
   {-1, -3}), read whole and as slices of their last rows (Aesara's test_reordering and
   test_return_steps):  d_t = y_{t-3} + 1,  x_t as above,  y_t = y_{t-1} + x_{t-1} . W_out */
static gr_status st_reorder(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    const sc_cmpl *c = (const sc_cmpl *)user;
    (void)until;
    /* in: u1_t, u2_t, x_{t-1}, y_{t-1}, y_{t-3}, W_in1 */
    out[0] = gr_add(in[4], gr_const(g, 1.0));
    out[1] = gr_add(gr_add(gr_dot(in[0], in[5]), gr_mul(in[1], c->w_in2)), gr_dot(in[2], c->w));
    out[2] = gr_add(in[3], gr_dot(in[2], c->w_out));
    return GR_OK;
}

TEST(test_scan_reordering_return_steps) {
    enum { T = 8 };
    gr_graph *g = gr_graph_new();
    gr_var *u1 = gr_matrix(g, GR_F64, "u1"), *u2 = gr_vector(g, GR_F64, "u2");
    gr_var *x0 = gr_vector(g, GR_F64, "x0"), *yinit = gr_vector(g, GR_F64, "y0");
    gr_var *w_in1 = gr_matrix(g, GR_F64, "win"), *in[5], *r[3], *outs[6];
    static const int y_taps[2] = { -1, -3 };
    gr_scan_seq s[2];
    gr_scan_out o[3];
    sc_cmpl c;
    uint64_t seed = 14;
    double v_u1[2 * T], v_u2[T], v_x0[2], v_y0[3], v_w_in1[4], x[2 * T], yh[T + 3], d[T], xp[2], a[2];
    gr_array *vals[5], *res[6];
    int t, j;
    sc_cmpl_init(g, &c, &seed, -0.5, 0.5);
    sc_fill(&seed, v_u1, 2 * T, -0.5, 0.5); sc_fill(&seed, v_u2, T, -0.5, 0.5);
    sc_fill(&seed, v_x0, 2, -0.5, 0.5); sc_fill(&seed, v_y0, 3, 0, 1); sc_fill(&seed, v_w_in1, 4, -0.5, 0.5);
    s[0] = sc_seq(u1, 0, NULL); s[1] = sc_seq(u2, 0, NULL);
    o[0] = sc_out(NULL, 0, NULL); o[1] = sc_out(x0, 0, NULL); o[2] = sc_out(yinit, 2, y_taps);
    CHECK_STATUS(gr_scan(st_reorder, &c, 2, s, 3, o, 1, &w_in1, NULL, r), GR_OK);
    outs[0] = r[0]; outs[1] = r[1]; outs[2] = r[2];
    outs[3] = gr_slice(r[0], 0, -3, GR_OPEN, 1);
    outs[4] = gr_slice(r[1], 0, -2, GR_OPEN, 1);
    outs[5] = gr_slice(r[2], 0, -4, GR_OPEN, 1);
    in[0] = u1; in[1] = u2; in[2] = x0; in[3] = yinit; in[4] = w_in1;
    vals[0] = sc_mat(T, 2, v_u1); vals[1] = sc_vec(T, v_u2); vals[2] = sc_vec(2, v_x0);
    vals[3] = sc_vec(3, v_y0); vals[4] = sc_mat(2, 2, v_w_in1);
    CHECK_STATUS(sc_run(5, in, vals, 6, outs, res), GR_OK);
    /* the reference: yh holds y0's three rows, then y_0, y_1, ... */
    memcpy(yh, v_y0, sizeof v_y0);
    memcpy(xp, v_x0, sizeof xp);
    for (t = 0; t < T; t++) {
        d[t] = yh[t] + 1;                                   /* y_{t-3} is yh[t + 3 - 3] */
        yh[t + 3] = yh[t + 2] + xp[0] * c.v_out[0] + xp[1] * c.v_out[1];
        sc_vecmat(v_u1 + 2 * t, v_w_in1, 2, 2, a);
        for (j = 0; j < 2; j++) x[2 * t + j] = a[j] + v_u2[t] * c.v_in2[j];
        sc_vecmat(xp, c.v_w, 2, 2, a);
        for (j = 0; j < 2; j++) x[2 * t + j] += a[j];
        memcpy(xp, x + 2 * t, sizeof xp);
    }
    SC_NEAR(res[0], T, d, 1e-14);
    SC_NEAR(res[1], 2 * T, x, 1e-13);
    SC_NEAR(res[2], T, yh + 3, 1e-13);
    SC_NEAR(res[3], 3, d + T - 3, 1e-14);
    SC_NEAR(res[4], 4, x + 2 * (T - 2), 1e-13);
    SC_NEAR(res[5], 4, yh + 3 + T - 4, 1e-13);
    sc_free(6, res); sc_free(5, vals);
    gr_graph_free(g);
}

/* ---- taps ----------------------------------------------------------------------------------------- */

/* a sequence with the one tap -1 reads x[t] and allows len - 1 steps (test_using_taps_sequence); with
   taps {-2, -1} (a float32 sequence) tap -2 reads x[t] and it allows len - 2 steps
   (test_using_negative_taps_sequence) */
TEST(test_scan_using_taps_sequence) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *xf = gr_vector(g, GR_F32, "xf"), *r[2], *in[2];
    static const int tm1[1] = { -1 }, tm2m1[2] = { -2, -1 };
    gr_scan_seq s;
    gr_scan_out o = sc_out(NULL, 0, NULL);
    double xv[5] = { 0, 1, 2, 3, 4 }, fv[5] = { 1, 2, 3, 4, 5 };
    int64_t five = 5;
    gr_array *vals[2], *res[2];
    int i;
    s = sc_seq(x, 1, tm1);
    CHECK_STATUS(gr_scan(st_first, NULL, 1, &s, 1, &o, 0, NULL, NULL, &r[0]), GR_OK);
    s = sc_seq(xf, 2, tm2m1);
    CHECK_STATUS(gr_scan(st_first, NULL, 1, &s, 1, &o, 0, NULL, NULL, &r[1]), GR_OK);
    in[0] = x; in[1] = xf;
    vals[0] = sc_vec(5, xv);
    vals[1] = gr_array_new(GR_F32, 1, &five);
    for (i = 0; vals[1] && i < 5; i++) ((float *)vals[1]->data)[i] = (float)fv[i];
    CHECK_STATUS(sc_run(2, in, vals, 2, r, res), GR_OK);
    SC_SHAPE(res[0], GR_F64, 1, 4, -1, -1);
    SC_NEAR(res[0], 4, xv, 0);
    SC_SHAPE(res[1], GR_F32, 1, 3, -1, -1);
    SC_NEAR(res[1], 3, fv, 0);
    sc_free(2, res); sc_free(2, vals);
    gr_graph_free(g);
}

/* past taps of a sequence and of a state, future taps of a sequence (test_using_taps_input_output,
   test_past_future_taps_shared), the weights shared variables read from the outer graph:
   x_t = (u[t-2] (+ u[t+2])) W_in + x_{t-1} W + x_{t-2}, x0 holding x_{-2}, x_{-1} */
static gr_status st_io_taps(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    const sc_two_vars *w = (const sc_two_vars *)user;
    (void)g; (void)until;
    /* in: u[t-2], x_{t-1}, x_{t-2} */
    out[0] = gr_add(gr_add(gr_mul(in[0], w->a), gr_mul(in[1], w->b)), in[2]);
    return GR_OK;
}
static gr_status st_future_taps(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    const sc_two_vars *w = (const sc_two_vars *)user;
    (void)g; (void)until;
    /* in: u[t-2], u[t+2], x_{t-1}, x_{t-2} */
    out[0] = gr_add(gr_add(gr_mul(gr_add(in[0], in[1]), w->a), gr_mul(in[2], w->b)), in[3]);
    return GR_OK;
}

TEST(test_scan_using_taps_input_output) {
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_vector(g, GR_F64, "u"), *u6 = gr_vector(g, GR_F64, "u6"), *x0 = gr_vector(g, GR_F64, "x0");
    gr_var *r[2], *in[3];
    static const int sm2[1] = { -2 }, sm2p2[2] = { -2, 2 }, om1m2[2] = { -1, -2 };
    gr_array *a_win = gr_array_scalar(GR_F64, 0.6), *a_w = gr_array_scalar(GR_F64, 0.35);
    gr_scan_seq s;
    gr_scan_out o = sc_out(x0, 2, om1m2);
    sc_two_vars sh;
    uint64_t seed = 15;
    double vu[4], vu6[6], vx0[2], want[2];
    gr_array *vals[3], *res[2];
    sh.a = gr_shared(g, a_win, "w_in");
    sh.b = gr_shared(g, a_w, "w");
    sc_fill(&seed, vu, 4, -5, 5); sc_fill(&seed, vu6, 6, -5, 5); sc_fill(&seed, vx0, 2, -5, 5);
    s = sc_seq(u, 1, sm2);            /* 4 - 2 = 2 steps, step t reads u[t] */
    CHECK_STATUS(gr_scan(st_io_taps, &sh, 1, &s, 1, &o, 0, NULL, NULL, &r[0]), GR_OK);
    s = sc_seq(u6, 2, sm2p2);         /* 6 - 4 = 2 steps, step t reads u[t] and u[t + 4] */
    CHECK_STATUS(gr_scan(st_future_taps, &sh, 1, &s, 1, &o, 0, NULL, NULL, &r[1]), GR_OK);
    in[0] = u; in[1] = u6; in[2] = x0;
    vals[0] = sc_vec(4, vu); vals[1] = sc_vec(6, vu6); vals[2] = sc_vec(2, vx0);
    CHECK_STATUS(sc_run(3, in, vals, 2, r, res), GR_OK);
    want[0] = vu[0] * 0.6 + vx0[1] * 0.35 + vx0[0];
    want[1] = vu[1] * 0.6 + want[0] * 0.35 + vx0[1];
    SC_SHAPE(res[0], GR_F64, 1, 2, -1, -1);
    SC_NEAR(res[0], 2, want, 1e-15);
    want[0] = (vu6[0] + vu6[4]) * 0.6 + vx0[1] * 0.35 + vx0[0];
    want[1] = (vu6[1] + vu6[5]) * 0.6 + want[0] * 0.35 + vx0[1];
    SC_SHAPE(res[1], GR_F64, 1, 2, -1, -1);
    SC_NEAR(res[1], 2, want, 1e-15);
    sc_free(2, res); sc_free(3, vals);
    gr_array_free(a_win); gr_array_free(a_w);
    gr_graph_free(g);
}

/* go_backwards: step t reads u[T - 1 - t] (test_backwards) */
TEST(test_scan_backwards) {
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_vector(g, GR_F64, "u"), *x0 = gr_scalar(g, GR_F64, "x0");
    gr_var *w_in = gr_scalar(g, GR_F64, "win"), *w = gr_scalar(g, GR_F64, "w"), *ns[2], *in[4], *r = NULL;
    gr_scan_seq s = sc_seq(u, 0, NULL);
    gr_scan_out o = sc_out(x0, 0, NULL);
    gr_scan_opts opts = sc_opts(NULL);
    double uv[4], want[4];
    uint64_t seed = 16;
    gr_array *vals[4], *res[1];
    opts.go_backwards = 1;
    ns[0] = w_in; ns[1] = w;
    CHECK_STATUS(gr_scan(st_rnn, NULL, 1, &s, 1, &o, 2, ns, &opts, &r), GR_OK);
    sc_fill(&seed, uv, 4, -5, 5);
    in[0] = u; in[1] = x0; in[2] = w_in; in[3] = w;
    vals[0] = sc_vec(4, uv); vals[1] = gr_array_scalar(GR_F64, 0.8);
    vals[2] = gr_array_scalar(GR_F64, 0.3); vals[3] = gr_array_scalar(GR_F64, 0.9);
    CHECK_STATUS(sc_run(4, in, vals, 1, &r, res), GR_OK);
    ref_rnn(4, uv, 0.8, 0.3, 0.9, 1, want);
    SC_NEAR(res[0], 4, want, 1e-15);
    sc_free(1, res); sc_free(4, vals);
    gr_graph_free(g);
}

/* go_backwards with sequence taps {-1, 0, 2} and a state with taps {-2, -1}: step t reads what step
   L - 1 - t reads going forwards (so tap +2 is still the later element of the original order), the
   states run in the order computed */
static gr_status st_taps3(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    /* in: u[t-1], u[t], u[t+2], s_{t-2}, s_{t-1} */
    out[0] = gr_add(gr_add(gr_add(gr_mul(gr_const(g, 0.5), in[0]), gr_mul(gr_const(g, -1.5), in[1])),
                           gr_mul(gr_const(g, 2.0), in[2])),
                    gr_sub(gr_mul(gr_const(g, 0.5), in[4]), gr_mul(gr_const(g, 0.25), in[3])));
    return GR_OK;
}
/* the reference of st_taps3: L steps; step t reads the forward step p(t) = t or off - t */
static void ref_taps3(const double *u, const double *s0, int L, int backwards, int off, double *s) {
    double h[32];
    int t;
    h[0] = s0[0]; h[1] = s0[1];
    for (t = 0; t < L; t++) {
        int p = backwards ? off - t : t;                  /* forward step p reads u[p + tap + 1] */
        h[t + 2] = 0.5 * u[p] - 1.5 * u[p + 1] + 2.0 * u[p + 3] + (0.5 * h[t + 1] - 0.25 * h[t]);
        s[t] = h[t + 2];
    }
}

TEST(test_scan_backwards_taps) {
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_vector(g, GR_F64, "u"), *s0 = gr_vector(g, GR_F64, "s0"), *r[2], *in[2];
    static const int staps[3] = { -1, 0, 2 }, otaps[2] = { -2, -1 };
    gr_scan_seq s = sc_seq(u, 3, staps);
    gr_scan_out o = sc_out(s0, 2, otaps);
    gr_scan_opts opts = sc_opts(NULL);
    double uv[7], sv[2] = { 0.3, -0.7 }, want[4];
    uint64_t seed = 17;
    gr_array *vals[2], *res[2];
    CHECK_STATUS(gr_scan(st_taps3, NULL, 1, &s, 1, &o, 0, NULL, &opts, &r[0]), GR_OK);
    opts.go_backwards = 1;
    CHECK_STATUS(gr_scan(st_taps3, NULL, 1, &s, 1, &o, 0, NULL, &opts, &r[1]), GR_OK);
    sc_fill(&seed, uv, 7, -1, 1);
    in[0] = u; in[1] = s0;
    vals[0] = sc_vec(7, uv); vals[1] = sc_vec(2, sv);
    CHECK_STATUS(sc_run(2, in, vals, 2, r, res), GR_OK);
    SC_SHAPE(res[0], GR_F64, 1, 4, -1, -1);               /* 7 - (2 - (-1)) = 4 steps */
    SC_SHAPE(res[1], GR_F64, 1, 4, -1, -1);
    ref_taps3(uv, sv, 4, 0, 0, want);
    SC_NEAR(res[0], 4, want, 1e-14);
    ref_taps3(uv, sv, 4, 1, 3, want);
    SC_NEAR(res[1], 4, want, 1e-14);
    sc_free(2, res); sc_free(2, vals);
    gr_graph_free(g);
}

/* go_backwards when a sequence is longer than the steps run (SEMANTICS 17.4, Aesara's order: each
   sequence is cut to the length its taps allow, reversed, then cut to the steps): with n_steps = 2 of
   the 4 allowed, step 0 still reads the last element; two sequences of lengths 5 and 7 without
   n_steps run 5 steps, and each one's step 0 reads its own last element */
static gr_status st_add2(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    out[0] = gr_add(in[0], gr_mul(gr_const(g, 10.0), in[1]));
    return GR_OK;
}

TEST(test_scan_backwards_uneven) {
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_vector(g, GR_F64, "u"), *s0 = gr_vector(g, GR_F64, "s0"), *a = gr_vector(g, GR_F64, "a");
    gr_var *b = gr_vector(g, GR_F64, "b"), *r[2], *in[4];
    static const int staps[3] = { -1, 0, 2 }, otaps[2] = { -2, -1 };
    gr_scan_seq s[2];
    gr_scan_out o = sc_out(s0, 2, otaps), onit = sc_out(NULL, 0, NULL);
    gr_scan_opts opts = sc_opts(sc_iconst(g, 2));
    double uv[7], sv[2] = { 0.3, -0.7 }, av[5] = { 1, 2, 3, 4, 5 }, bv[7] = { 1, 2, 3, 4, 5, 6, 7 }, want[5];
    uint64_t seed = 18;
    gr_array *vals[4], *res[2];
    int t;
    opts.go_backwards = 1;
    s[0] = sc_seq(u, 3, staps);
    CHECK_STATUS(gr_scan(st_taps3, NULL, 1, s, 1, &o, 0, NULL, &opts, &r[0]), GR_OK);
    opts = sc_opts(NULL);
    opts.go_backwards = 1;
    s[0] = sc_seq(a, 0, NULL); s[1] = sc_seq(b, 0, NULL);
    CHECK_STATUS(gr_scan(st_add2, NULL, 2, s, 1, &onit, 0, NULL, &opts, &r[1]), GR_OK);
    sc_fill(&seed, uv, 7, -1, 1);
    in[0] = u; in[1] = s0; in[2] = a; in[3] = b;
    vals[0] = sc_vec(7, uv); vals[1] = sc_vec(2, sv); vals[2] = sc_vec(5, av); vals[3] = sc_vec(7, bv);
    CHECK_STATUS(sc_run(4, in, vals, 2, r, res), GR_OK);
    SC_SHAPE(res[0], GR_F64, 1, 2, -1, -1);
    ref_taps3(uv, sv, 2, 1, 3, want);                     /* step t reads forward step 3 - t */
    SC_NEAR(res[0], 2, want, 1e-14);
    SC_SHAPE(res[1], GR_F64, 1, 5, -1, -1);
    for (t = 0; t < 5; t++) want[t] = av[4 - t] + 10 * bv[6 - t];
    SC_NEAR(res[1], 5, want, 0);
    sc_free(2, res); sc_free(4, vals);
    gr_graph_free(g);
}

/* explicit taps {-1} are the plain state: the initial is the state itself (a vector state gives a
   matrix result), not a one-row history (test_output_padding's two spellings) */
TEST(test_scan_explicit_tap_minus_one) {
    gr_graph *g = gr_graph_new();
    gr_var *x0 = gr_vector(g, GR_F64, "x0"), *r[2];
    static const int tm1[1] = { -1 };
    gr_scan_out o;
    gr_scan_opts opts = sc_opts(sc_iconst(g, 3));
    double xv[2] = { 0.5, -2 }, want[6];
    gr_array *vals[1], *res[2];
    int t;
    o = sc_out(x0, 1, tm1);
    CHECK_STATUS(gr_scan(st_plus1, NULL, 0, NULL, 1, &o, 0, NULL, &opts, &r[0]), GR_OK);
    o = sc_out(x0, 0, NULL);
    CHECK_STATUS(gr_scan(st_plus1, NULL, 0, NULL, 1, &o, 0, NULL, &opts, &r[1]), GR_OK);
    CHECK_EQ_INT(gr_var_ndim(r[0]), 2);
    vals[0] = sc_vec(2, xv);
    CHECK_STATUS(sc_run(1, &x0, vals, 2, r, res), GR_OK);
    for (t = 0; t < 3; t++) { want[2 * t] = xv[0] + t + 1; want[2 * t + 1] = xv[1] + t + 1; }
    SC_SHAPE(res[0], GR_F64, 2, 3, 2, -1);
    SC_NEAR(res[0], 6, want, 0);
    SC_SAME(res[0], res[1]);
    sc_free(2, res); sc_free(1, vals);
    gr_graph_free(g);
}

/* a state with taps {-4, -1} and an initial of 5 rows: only the first 4 are used (Aesara's
   initial[:4]), so x_t = init[3] + (t + 1) w, and the 5th row gets a zero gradient
   (test_grad_multiple_taps_state); a state with the one tap -4 whose tap feeds a second output
   (test_seq_tap_bug_jeremiah, check_aliased_inner_outputs) */
static gr_status st_w_plus_prev(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    /* in: x_{t-4}, x_{t-1}, w */
    out[0] = gr_add(in[2], in[1]);
    return GR_OK;
}
static gr_status st_seq_and_tm4(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    /* in: x_t (a sequence row), x_{t-4} (a state) */
    out[0] = in[0];
    out[1] = in[1];
    return GR_OK;
}

TEST(test_scan_mitsot_more_initial_rows) {
    gr_graph *g = gr_graph_new();
    int64_t s522[3] = { 5, 2, 2 };
    gr_var *xinit = gr_tensor(g, GR_F64, 3, NULL, "xinit"), *w = gr_matrix(g, GR_F64, "w");
    gr_var *seq = gr_matrix(g, GR_F64, "seq"), *init4 = gr_matrix(g, GR_F64, "init4");
    gr_var *r = NULL, *r2[2], *loss, *wrt[2], *gr_[2], *in[4], *outs[6];
    static const int taps[2] = { -4, -1 }, tm4[1] = { -4 };
    gr_scan_out o = sc_out(xinit, 2, taps), o2[2];
    gr_scan_seq s = sc_seq(seq, 0, NULL);
    gr_scan_opts opts = sc_opts(sc_iconst(g, 10));
    uint64_t seed = 19;
    double xv[20], wv[4], want[40], gx[20], gw[4], seqv[10], zeros4[4] = { 0, 0, 0, 0 };
    gr_array *vals[4], *res[6];
    int t, j;
    CHECK_STATUS(gr_scan(st_w_plus_prev, NULL, 0, NULL, 1, &o, 1, &w, &opts, &r), GR_OK);
    loss = gr_sum(gr_sqr(gr_index(r, 0, -1)));
    wrt[0] = xinit; wrt[1] = w;
    CHECK_STATUS(gr_grad(loss, 2, wrt, gr_, NULL), GR_OK);
    o2[0] = sc_out(init4, 1, tm4); o2[1] = sc_out(NULL, 0, NULL);
    CHECK_STATUS(gr_scan(st_seq_and_tm4, NULL, 1, &s, 2, o2, 0, NULL, NULL, r2), GR_OK);
    outs[0] = r; outs[1] = loss; outs[2] = gr_[0]; outs[3] = gr_[1];
    outs[4] = gr_index(r2[0], 0, -1); outs[5] = r2[1];
    sc_fill(&seed, xv, 20, -3, 3); sc_fill(&seed, wv, 4, -3, 3);
    for (t = 0; t < 10; t++) seqv[t] = t;
    in[0] = xinit; in[1] = w; in[2] = seq; in[3] = init4;
    vals[0] = sc_arr(3, s522, xv); vals[1] = sc_mat(2, 2, wv); vals[2] = sc_mat(10, 1, seqv); vals[3] = sc_mat(4, 1, zeros4);
    CHECK_STATUS(sc_run(4, in, vals, 6, outs, res), GR_OK);
    for (t = 0; t < 10; t++)
        for (j = 0; j < 4; j++) want[4 * t + j] = xv[12 + j] + (t + 1) * wv[j];
    SC_SHAPE(res[0], GR_F64, 3, 10, 2, 2);
    SC_NEAR(res[0], 40, want, 1e-13);
    memset(gx, 0, sizeof gx);
    for (j = 0; j < 4; j++) {
        gx[12 + j] = 2 * want[36 + j];                    /* only row 3 reaches the loss */
        gw[j] = 20 * want[36 + j];
    }
    SC_SHAPE(res[2], GR_F64, 3, 5, 2, 2);
    SC_NEAR(res[2], 20, gx, 1e-13);
    SC_NEAR(res[3], 4, gw, 1e-13);
    /* the mit-sot with tap -4 alone: the last state is seq[9]; the second output is the history */
    want[0] = 9;
    SC_NEAR(res[4], 1, want, 0);
    for (t = 0; t < 10; t++) want[t] = t < 4 ? 0 : seqv[t - 4];
    SC_SHAPE(res[5], GR_F64, 2, 10, 1, -1);
    SC_NEAR(res[5], 10, want, 0);
    sc_free(6, res); sc_free(4, vals);
    gr_graph_free(g);
}

/* outputs that are inputs of the body (state taps returned as they are, or through
   disconnected_grad, the same variable twice) beside a mit-sot with taps {-3, -2, -1}
   (test_memory_reuse_with_outputs_as_inputs) */
static gr_status st_reuse(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    /* in: m3, m2, m1 (the taps of the last output) */
    out[0] = in[1];
    out[1] = gr_mul(in[2], gr_const(g, 1.0));
    out[2] = gr_disconnected_grad(in[1]);
    out[3] = in[1];
    out[4] = gr_add(gr_add(in[0], in[1]), in[2]);
    return GR_OK;
}

TEST(test_scan_memory_reuse_outputs_as_inputs) {
    gr_graph *g = gr_graph_new();
    gr_var *init = gr_matrix(g, GR_F64, "init"), *r[5];
    static const int taps[3] = { -3, -2, -1 };
    gr_scan_out o[5];
    gr_scan_opts opts = sc_opts(sc_iconst(g, 3));
    double iv[9], h[18];
    gr_array *vals[1], *res[5];
    int i, t;
    for (i = 0; i < 4; i++) o[i] = sc_out(NULL, 0, NULL);
    o[4] = sc_out(init, 3, taps);
    CHECK_STATUS(gr_scan(st_reuse, NULL, 0, NULL, 5, o, 0, NULL, &opts, r), GR_OK);
    for (i = 0; i < 9; i++) iv[i] = h[i] = i;
    for (t = 3; t < 6; t++)
        for (i = 0; i < 3; i++) h[3 * t + i] = h[3 * (t - 3) + i] + h[3 * (t - 2) + i] + h[3 * (t - 1) + i];
    vals[0] = sc_mat(3, 3, iv);
    CHECK_STATUS(sc_run(1, &init, vals, 5, r, res), GR_OK);
    for (i = 0; i < 5; i++) SC_SHAPE(res[i], GR_F64, 2, 3, 3, -1);
    SC_NEAR(res[0], 9, h + 3, 0);                         /* rows 1..3 of the history */
    SC_NEAR(res[1], 9, h + 6, 0);
    SC_NEAR(res[2], 9, h + 3, 0);
    SC_NEAR(res[3], 9, h + 3, 0);
    SC_NEAR(res[4], 9, h + 9, 0);
    sc_free(5, res); sc_free(1, vals);
    gr_graph_free(g);
}

/* outputs that ignore their states: from the sequence only (test_eliminate_seqs) or from a
   non-sequence only (test_eliminate_nonseqs), with a mit-sot, a sit-sot and a nit-sot */
static gr_status st_eliminate(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    int from = *(const int *)user;
    (void)until;
    /* in: v, x1_{t-1}, x1_{t-3}, x2_{t-1}, or x1_{t-1}, x1_{t-3}, x2_{t-1}, w */
    out[0] = gr_add(in[from], gr_const(g, 1.0));
    out[1] = gr_add(in[from], gr_const(g, 2.0));
    out[2] = gr_add(in[from], gr_const(g, 3.0));
    return GR_OK;
}

TEST(test_scan_eliminate_seqs_nonseqs) {
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_vector(g, GR_F64, "U"), *x1 = gr_vector(g, GR_F64, "x1"), *x2 = gr_scalar(g, GR_F64, "x2");
    gr_var *w = gr_scalar(g, GR_F64, "W"), *r[6], *in[4];
    static const int taps[2] = { -1, -3 };
    int from_seq = 0, from_nonseq = 3, i, k;
    gr_scan_seq s = sc_seq(u, 0, NULL);
    gr_scan_out o[3];
    gr_scan_opts opts = sc_opts(sc_iconst(g, 5));
    uint64_t seed = 20;
    double uv[5], zeros[3] = { 0, 0, 0 }, want[5];
    gr_array *vals[4], *res[6];
    o[0] = sc_out(x1, 2, taps); o[1] = sc_out(x2, 0, NULL); o[2] = sc_out(NULL, 0, NULL);
    CHECK_STATUS(gr_scan(st_eliminate, &from_seq, 1, &s, 3, o, 0, NULL, NULL, r), GR_OK);
    CHECK_STATUS(gr_scan(st_eliminate, &from_nonseq, 0, NULL, 3, o, 1, &w, &opts, r + 3), GR_OK);
    sc_fill(&seed, uv, 5, 0, 1);
    in[0] = u; in[1] = x1; in[2] = x2; in[3] = w;
    vals[0] = sc_vec(5, uv); vals[1] = sc_vec(3, zeros); vals[2] = gr_array_scalar(GR_F64, 0);
    vals[3] = gr_array_scalar(GR_F64, 0.625);
    CHECK_STATUS(sc_run(4, in, vals, 6, r, res), GR_OK);
    for (k = 0; k < 3; k++) {
        for (i = 0; i < 5; i++) want[i] = uv[i] + k + 1;
        SC_NEAR(res[k], 5, want, 0);
        for (i = 0; i < 5; i++) want[i] = 0.625 + k + 1;
        SC_NEAR(res[3 + k], 5, want, 0);
    }
    sc_free(6, res); sc_free(4, vals);
    gr_graph_free(g);
}

/* a loop over the result of another loop (test_sequence_is_scan) */
TEST(test_scan_sequence_is_scan) {
    gr_graph *g = gr_graph_new();
    gr_var *x0 = gr_scalar(g, GR_F64, "x0"), *r1 = NULL, *r2 = NULL;
    gr_scan_out o = sc_out(x0, 0, NULL), onit = sc_out(NULL, 0, NULL);
    gr_scan_opts opts = sc_opts(sc_iconst(g, 10));
    gr_scan_seq s;
    double want[10];
    gr_array *vals[1], *res[1];
    int i;
    CHECK_STATUS(gr_scan(st_plus1, NULL, 0, NULL, 1, &o, 0, NULL, &opts, &r1), GR_OK);
    s = sc_seq(r1, 0, NULL);
    CHECK_STATUS(gr_scan(st_plus1, NULL, 1, &s, 1, &onit, 0, NULL, NULL, &r2), GR_OK);
    vals[0] = gr_array_scalar(GR_F64, 0);
    CHECK_STATUS(sc_run(1, &x0, vals, 1, &r2, res), GR_OK);
    for (i = 0; i < 10; i++) want[i] = i + 2;
    SC_NEAR(res[0], 10, want, 0);
    sc_free(1, res); sc_free(1, vals);
    gr_graph_free(g);
}

/* a sequence read only through tap +2 with n_steps = 1: step 0 reads seq[2] (test_mintap_onestep,
   an int64 state and sequence) */
static gr_status st_accum(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = gr_add(in[1], in[0]);
    return GR_OK;
}

TEST(test_scan_mintap_onestep) {
    gr_graph *g = gr_graph_new();
    gr_var *seq = gr_vector(g, GR_I64, "seq"), *r = NULL;
    static const int p2[1] = { 2 };
    gr_scan_seq s = sc_seq(seq, 1, p2);
    gr_scan_out o = sc_out(sc_iconst(g, 0), 0, NULL);
    gr_scan_opts opts = sc_opts(sc_iconst(g, 1));
    int64_t sv[20];
    double two = 2;
    gr_array *vals[1], *res[1];
    int i;
    for (i = 0; i < 20; i++) sv[i] = i;
    CHECK_STATUS(gr_scan(st_accum, NULL, 1, &s, 1, &o, 0, NULL, &opts, &r), GR_OK);
    vals[0] = sc_ivec(20, sv);
    CHECK_STATUS(sc_run(1, &seq, vals, 1, &r, res), GR_OK);
    SC_SHAPE(res[0], GR_I64, 1, 1, -1, -1);
    SC_NEAR(res[0], 1, &two, 0);
    sc_free(1, res); sc_free(1, vals);
    gr_graph_free(g);
}

/* zero steps: n_steps = 0 with a vector state gives (0, 3) and zero gradients; an empty sequence
   gives 0 rows for a sit-sot and a nit-sot, float or int64 (test_no_step, test_no_steps_sit_sot,
   test_no_steps_nit_sot) */
static gr_status st_double_state(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    /* in: x_t, s_{t-1} */
    out[0] = gr_mul(gr_const(g, 2.0), in[1]);
    return GR_OK;
}
static gr_status st_w_times(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = gr_mul(in[0], in[1]);
    return GR_OK;
}

TEST(test_scan_no_step) {
    gr_graph *g = gr_graph_new();
    gr_var *x0 = gr_vector(g, GR_F64, "x0"), *w = gr_scalar(g, GR_F64, "w"), *n = gr_scalar(g, GR_I64, "n");
    gr_var *xf = gr_vector(g, GR_F64, "xf"), *xi = gr_vector(g, GR_I64, "xi");
    gr_var *sf = gr_scalar(g, GR_F64, "sf"), *si = gr_scalar(g, GR_I64, "si");
    gr_var *r[7], *wrt[2], *gr_[2], *in[7], *outs[9];
    gr_scan_out o;
    gr_scan_seq s;
    gr_scan_opts opts = sc_opts(n);
    double xv[3] = { 1, 2, 3 };
    gr_array *vals[7], *res[9];
    int64_t zero = 0;
    int i;
    o = sc_out(x0, 0, NULL);
    CHECK_STATUS(gr_scan(st_w_times, NULL, 0, NULL, 1, &o, 1, &w, &opts, &r[0]), GR_OK);
    wrt[0] = x0; wrt[1] = w;
    CHECK_STATUS(gr_grad(gr_sum(r[0]), 2, wrt, gr_, NULL), GR_OK);
    /* sit-sots over empty sequences */
    s = sc_seq(xf, 0, NULL); o = sc_out(sf, 0, NULL);
    CHECK_STATUS(gr_scan(st_double_state, NULL, 1, &s, 1, &o, 0, NULL, NULL, &r[1]), GR_OK);
    s = sc_seq(xi, 0, NULL);
    CHECK_STATUS(gr_scan(st_double_state, NULL, 1, &s, 1, &o, 0, NULL, NULL, &r[2]), GR_OK);
    o = sc_out(si, 0, NULL);
    CHECK_STATUS(gr_scan(st_double_state, NULL, 1, &s, 1, &o, 0, NULL, NULL, &r[3]), GR_OK);
    /* nit-sots over empty sequences */
    o = sc_out(NULL, 0, NULL);
    s = sc_seq(xf, 0, NULL);
    CHECK_STATUS(gr_scan(st_double, NULL, 1, &s, 1, &o, 0, NULL, NULL, &r[4]), GR_OK);
    s = sc_seq(xi, 0, NULL);
    CHECK_STATUS(gr_scan(st_double, NULL, 1, &s, 1, &o, 0, NULL, NULL, &r[5]), GR_OK);
    for (i = 0; i < 6; i++) outs[i] = r[i];
    outs[6] = gr_[0]; outs[7] = gr_[1]; outs[8] = gr_grad1(gr_sum(r[1]), sf);
    in[0] = x0; in[1] = w; in[2] = n; in[3] = xf; in[4] = xi; in[5] = sf; in[6] = si;
    vals[0] = sc_vec(3, xv); vals[1] = gr_array_scalar(GR_F64, 1.5); vals[2] = gr_array_scalar(GR_I64, 0);
    vals[3] = sc_vec(0, NULL); vals[4] = gr_array_new(GR_I64, 1, &zero);
    vals[5] = gr_array_scalar(GR_F64, 1); vals[6] = gr_array_scalar(GR_I64, 1);
    CHECK_STATUS(sc_run(7, in, vals, 9, outs, res), GR_OK);
    SC_SHAPE(res[0], GR_F64, 2, 0, 3, -1);
    SC_SHAPE(res[1], GR_F64, 1, 0, -1, -1);
    SC_SHAPE(res[2], GR_F64, 1, 0, -1, -1);
    SC_SHAPE(res[3], GR_I64, 1, 0, -1, -1);
    SC_SHAPE(res[4], GR_F64, 1, 0, -1, -1);
    SC_SHAPE(res[5], GR_I64, 1, 0, -1, -1);
    SC_SHAPE(res[6], GR_F64, 1, 3, -1, -1);
    SC_ZERO(res[6], 3);
    SC_SHAPE(res[7], GR_F64, 0, -1, -1, -1);
    SC_ZERO(res[7], 1);
    SC_ZERO(res[8], 1);
    sc_free(9, res); sc_free(7, vals);
    gr_graph_free(g);
}

/* ---- until (while loops) -------------------------------------------------------------------------- */

/* y_t = x_t + 1 until x_t > 3: the loop stops after the first step at which the condition holds, so
   the result has as many rows as steps ran, call by call (test_while) */
static gr_status st_while(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)user;
    out[0] = gr_add(in[0], gr_const(g, 1.0));
    *until = gr_gt(in[0], gr_const(g, 3.0));
    return GR_OK;
}

/* v_t = v_{t-1} + s_{t-1}, s_t = s_{t-1} + 1 (int64 states from 0) until v_t > max_value, an outer
   variable only the condition reads, at most n_steps (test_condition_hidden_inp) */
static gr_status st_accum_until(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    gr_var *max_value = (gr_var *)user;
    out[0] = gr_add(in[0], in[1]);
    out[1] = gr_add(in[1], gr_const(g, 1.0));
    *until = gr_gt(out[0], max_value);
    return GR_OK;
}

TEST(test_scan_while) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *maxv = gr_scalar(g, GR_F64, "max_value");
    gr_var *n = gr_scalar(g, GR_I64, "n_steps"), *r = NULL, *r2[2], *in[2];
    gr_scan_seq s = sc_seq(x, 0, NULL);
    gr_scan_out o = sc_out(NULL, 0, NULL), o2[2];
    gr_scan_opts opts = sc_opts(n);
    double xv[50], want[50], mv[3] = { 100, 100, -1 };
    int64_t nv[3] = { 100, 5, 100 };
    gr_array *vals[2], *res[2];
    gr_fn *f;
    int call, t, hot[3] = { 23, 0, -1 }, rows;
    CHECK_STATUS(gr_scan(st_while, NULL, 1, &s, 1, &o, 0, NULL, NULL, &r), GR_OK);
    f = gr_function(1, &x, 1, &r, NULL);
    CHECK(f != NULL);
    for (call = 0; call < 3 && f; call++) {
        memset(xv, 0, sizeof xv);
        if (hot[call] >= 0) xv[hot[call]] = 4;
        rows = hot[call] >= 0 ? hot[call] + 1 : 50;
        for (t = 0; t < rows; t++) want[t] = xv[t] + 1;
        vals[0] = sc_vec(50, xv);
        CHECK_STATUS(sc_call(f, vals, 1, res), GR_OK);
        SC_SHAPE(res[0], GR_F64, 1, rows, -1, -1);
        SC_NEAR(res[0], rows, want, 0);
        sc_free(1, res); sc_free(1, vals);
    }
    gr_fn_free(f);
    /* the condition on the states and an outer variable */
    o2[0] = sc_out(sc_iconst(g, 0), 0, NULL); o2[1] = sc_out(sc_iconst(g, 0), 0, NULL);
    CHECK_STATUS(gr_scan(st_accum_until, maxv, 0, NULL, 2, o2, 0, NULL, &opts, r2), GR_OK);
    in[0] = maxv; in[1] = n;
    f = gr_function(2, in, 2, r2, NULL);
    CHECK(f != NULL);
    for (call = 0; call < 3 && f; call++) {
        double v = 0, st = 0, wv[128], ws[128];
        for (rows = 0; rows < nv[call];) {
            double nvv = v + st, nss = st + 1;
            wv[rows] = nvv; ws[rows] = nss; rows++;
            v = nvv; st = nss;
            if (nvv > mv[call]) break;
        }
        vals[0] = gr_array_scalar(GR_F64, mv[call]); vals[1] = gr_array_scalar(GR_I64, (double)nv[call]);
        CHECK_STATUS(sc_call(f, vals, 2, res), GR_OK);
        CHECK_EQ_INT(rows, call == 0 ? 15 : call == 1 ? 5 : 1);
        SC_SHAPE(res[0], GR_I64, 1, rows, -1, -1);
        SC_SHAPE(res[1], GR_I64, 1, rows, -1, -1);
        SC_NEAR(res[0], rows, wv, 0);
        SC_NEAR(res[1], rows, ws, 0);
        sc_free(2, res); sc_free(2, vals);
    }
    gr_fn_free(f);
    gr_graph_free(g);
}

/* r_t = x_t^2 until x_t > u (an int64 threshold): the gradient covers the steps run and the rows of
   the sequence not reached get zeros (TestGradUntil: test_grad_until, test_grad_until_ndim_greater_one,
   test_grad_until_with_recurrent_state) */
static gr_status st_sq_until(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    int all = user != NULL;
    (void)g;
    out[0] = gr_mul(in[0], in[0]);
    *until = gr_gt(all ? gr_min(in[0]) : in[0], in[1]);    /* all(x > u) is min(x) > u */
    return GR_OK;
}
/* x_t = a x_{t-1} + y_t until x_t > 5 */
static gr_status st_lin_until(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)user;
    out[0] = gr_add(gr_mul(gr_const(g, 1.3), in[1]), in[0]);
    *until = gr_gt(out[0], gr_const(g, 5.0));
    return GR_OK;
}

TEST(test_scan_grad_until) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *X = gr_matrix(g, GR_F64, "X"), *thr = gr_scalar(g, GR_I64, "threshold");
    gr_var *y = gr_vector(g, GR_F64, "y"), *x0 = gr_scalar(g, GR_F64, "x0");
    gr_var *r[3], *outs[9], *in[5], *wrt[2], *gr_[2];
    gr_scan_seq s;
    gr_scan_out onit = sc_out(NULL, 0, NULL), o = sc_out(x0, 0, NULL);
    int one = 1, k, t, j;
    double xv[15], Xv[75], yv[12], want[75], a = 1.3, h;
    gr_array *vals[5], *res[9];
    s = sc_seq(x, 0, NULL);
    CHECK_STATUS(gr_scan(st_sq_until, NULL, 1, &s, 1, &onit, 1, &thr, NULL, &r[0]), GR_OK);
    s = sc_seq(X, 0, NULL);
    CHECK_STATUS(gr_scan(st_sq_until, &one, 1, &s, 1, &onit, 1, &thr, NULL, &r[1]), GR_OK);
    s = sc_seq(y, 0, NULL);
    CHECK_STATUS(gr_scan(st_lin_until, NULL, 1, &s, 1, &o, 0, NULL, NULL, &r[2]), GR_OK);
    outs[0] = r[0]; outs[1] = gr_grad1(gr_sum(r[0]), x);
    outs[2] = r[1]; outs[3] = gr_grad1(gr_sum(r[1]), X);
    wrt[0] = y; wrt[1] = x0;
    CHECK_STATUS(gr_grad(gr_sum(r[2]), 2, wrt, gr_, NULL), GR_OK);
    outs[4] = r[2]; outs[5] = gr_[0]; outs[6] = gr_[1];
    for (t = 0; t < 15; t++) { xv[t] = t; for (j = 0; j < 5; j++) Xv[5 * t + j] = t; }
    for (t = 0; t < 12; t++) yv[t] = 0.4 + 0.5 * t / 11.0;
    in[0] = x; in[1] = X; in[2] = thr; in[3] = y; in[4] = x0;
    vals[0] = sc_vec(15, xv); vals[1] = sc_mat(15, 5, Xv); vals[2] = gr_array_scalar(GR_I64, 5);
    vals[3] = sc_vec(12, yv); vals[4] = gr_array_scalar(GR_F64, 0.2);
    CHECK_STATUS(sc_run(5, in, vals, 7, outs, res), GR_OK);
    for (k = 0; k < 15 && !(xv[k] > 5); k++) {}
    k++;                                                  /* the step at which x > 5 runs too: 7 rows */
    for (t = 0; t < 15; t++) want[t] = t < k ? xv[t] * xv[t] : 0;
    SC_SHAPE(res[0], GR_F64, 1, k, -1, -1);
    SC_NEAR(res[0], k, want, 0);
    for (t = 0; t < 15; t++) want[t] = t < k ? 2 * xv[t] : 0;
    SC_SHAPE(res[1], GR_F64, 1, 15, -1, -1);
    SC_NEAR(res[1], 15, want, 0);
    for (t = 0; t < 15; t++) for (j = 0; j < 5; j++) want[5 * t + j] = t < k ? Xv[5 * t + j] * Xv[5 * t + j] : 0;
    SC_SHAPE(res[2], GR_F64, 2, k, 5, -1);
    SC_NEAR(res[2], 5 * k, want, 0);
    for (t = 0; t < 15; t++) for (j = 0; j < 5; j++) want[5 * t + j] = t < k ? 2 * Xv[5 * t + j] : 0;
    SC_NEAR(res[3], 75, want, 0);
    /* the linear recurrence: x_t = a^(t+1) x0 + sum_{j<=t} a^(t-j) y_j for the k steps run, so
       d sum / d y_j = (a^(k-j) - 1) / (a - 1) for j < k and 0 after, d sum / d x0 = a (a^k - 1) / (a - 1) */
    for (k = 0, h = 0.2; k < 12;) { h = a * h + yv[k]; k++; if (h > 5) break; }
    CHECK(k > 1 && k < 12);
    SC_SHAPE(res[4], GR_F64, 1, k, -1, -1);
    for (j = 0; j < 12; j++) want[j] = j < k ? (pow(a, k - j) - 1) / (a - 1) : 0;
    SC_NEAR(res[5], 12, want, 1e-13);
    want[0] = a * (pow(a, k) - 1) / (a - 1);
    SC_NEAR(res[6], 1, want, 1e-13);
    sc_free(7, res); sc_free(5, vals);
    gr_graph_free(g);
}

/* until with truncate_gradient = 3: only the last 3 steps run backpropagate (test_grad_until_and_truncate),
   also with sequence taps {-2, 0}: r_t = x[t-2] x[t] until x[t] > 6 (test_grad_until_and_truncate_sequence_taps) */
static gr_status st_taps_prod_until(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)user;
    out[0] = gr_mul(in[0], in[1]);
    *until = gr_gt(in[1], in[2]);
    return GR_OK;
}

TEST(test_scan_grad_until_truncate) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *thr = gr_scalar(g, GR_I64, "threshold");
    gr_var *thr6 = gr_scalar(g, GR_I64, "threshold6"), *r[3], *outs[6], *in[3];
    static const int taps[2] = { -2, 0 };
    gr_scan_seq s = sc_seq(x, 0, NULL);
    gr_scan_out onit = sc_out(NULL, 0, NULL);
    gr_scan_opts opts = sc_opts(NULL);
    double xv[15], want[15];
    gr_array *vals[3], *res[6];
    int k, t, w, lo;
    opts.truncate_gradient = 3;
    CHECK_STATUS(gr_scan(st_sq_until, NULL, 1, &s, 1, &onit, 1, &thr, &opts, &r[0]), GR_OK);
    s = sc_seq(x, 2, taps);
    CHECK_STATUS(gr_scan(st_taps_prod_until, NULL, 1, &s, 1, &onit, 1, &thr6, &opts, &r[1]), GR_OK);
    opts.truncate_gradient = 0;
    CHECK_STATUS(gr_scan(st_taps_prod_until, NULL, 1, &s, 1, &onit, 1, &thr6, &opts, &r[2]), GR_OK);
    for (t = 0; t < 3; t++) { outs[2 * t] = r[t]; outs[2 * t + 1] = gr_grad1(gr_sum(r[t]), x); }
    for (t = 0; t < 15; t++) xv[t] = t;
    in[0] = x; in[1] = thr; in[2] = thr6;
    vals[0] = sc_vec(15, xv); vals[1] = gr_array_scalar(GR_I64, 5); vals[2] = gr_array_scalar(GR_I64, 6);
    CHECK_STATUS(sc_run(3, in, vals, 6, outs, res), GR_OK);
    for (k = 0; k < 15 && !(xv[k] > 5); k++) {}
    k++;
    for (t = 0; t < 15; t++) want[t] = t < k ? xv[t] * xv[t] : 0;
    SC_NEAR(res[0], k, want, 0);
    for (t = 0; t < 15; t++) want[t] = t < k && t >= k - 3 ? 2 * xv[t] : 0;
    SC_NEAR(res[1], 15, want, 0);
    /* taps {-2, 0}: step t reads x[t] and x[t + 2]; it stops after the first t with x[t + 2] > 6 */
    for (k = 0; k < 13 && !(xv[k + 2] > 6); k++) {}
    k++;
    for (t = 0; t < k; t++) want[t] = xv[t] * xv[t + 2];
    SC_SHAPE(res[2], GR_F64, 1, k, -1, -1);
    SC_NEAR(res[2], k, want, 0);
    SC_SAME(res[2], res[4]);
    for (w = 0; w < 2; w++) {
        lo = w == 0 ? k - 3 : 0;                          /* the steps that backpropagate */
        memset(want, 0, sizeof want);
        for (t = lo; t < k; t++) { want[t] += xv[t + 2]; want[t + 2] += xv[t]; }
        SC_NEAR(res[w == 0 ? 3 : 5], 15, want, 0);
    }
    sc_free(6, res); sc_free(3, vals);
    gr_graph_free(g);
}

/* ---- gradients ------------------------------------------------------------------------------------ */

/* truncate_gradient = k (test_grad_multiple_outs_some_truncate, on a tanh recurrence
   x_t = tanh(u_t . W_in + x_{t-1})): the gradient equals that of a cost in which the steps before the
   window, and the state entering it, are constants; so sequence rows before the window get zeros,
   W_in sums over the window only, and x0 gets zero when the loop ran more than k steps (our
   decision); k >= the steps run is the full gradient */
static gr_status st_tanh_rnn(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = gr_tanh(gr_add(gr_dot(in[0], in[2]), in[1]));
    return GR_OK;
}

typedef struct sc_trunc_ctx { int T, k; const double *F, *base; double *p; } sc_trunc_ctx;
/* p = (u (T x 2), x0 (2), W_in (2 x 2)); steps before the window read base instead of p */
static double ref_trunc(void *vc) {
    const sc_trunc_ctx *c = (const sc_trunc_ctx *)vc;
    int start = c->k > 0 && c->T > c->k ? c->T - c->k : 0, t, j;
    double x[2], a[2], cost = 0;
    const double *q = start > 0 ? c->base : c->p;
    memcpy(x, q + 2 * c->T, sizeof x);
    for (t = 0; t < c->T; t++) {
        q = t < start ? c->base : c->p;
        sc_vecmat(q + 2 * t, q + 2 * c->T + 2, 2, 2, a);
        for (j = 0; j < 2; j++) { x[j] = tanh(a[j] + x[j]); cost += c->F[2 * t + j] * x[j]; }
    }
    return cost;
}

TEST(test_scan_truncate_gradient) {
    enum { T = 5, NP = 2 * T + 2 + 4 };
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_matrix(g, GR_F64, "u1"), *x0 = gr_vector(g, GR_F64, "x0"), *w_in = gr_matrix(g, GR_F64, "win");
    gr_var *r = NULL, *wrt[3], *gr_[3], *outs[12], *in[3];
    static const int64_t ks[4] = { 3, 1, T, 10 };
    int64_t shape[2] = { T, 2 };
    gr_scan_seq s = sc_seq(u, 0, NULL);
    gr_scan_out o = sc_out(x0, 0, NULL);
    gr_scan_opts opts = sc_opts(NULL);
    sc_trunc_ctx c;
    uint64_t seed = 21;
    double p[NP], base[NP], F[2 * T], fd[NP];
    gr_array *vals[3], *res[12];
    int i, t;
    sc_fill(&seed, p, NP, -0.5, 0.5);
    sc_fill(&seed, F, 2 * T, 0.1, 0.9);
    memcpy(base, p, sizeof p);
    wrt[0] = u; wrt[1] = x0; wrt[2] = w_in;
    for (i = 0; i < 4; i++) {
        opts.truncate_gradient = ks[i];
        CHECK_STATUS(gr_scan(st_tanh_rnn, NULL, 1, &s, 1, &o, 1, &w_in, &opts, &r), GR_OK);
        CHECK_STATUS(gr_grad(sc_project(r, 2, shape, F), 3, wrt, gr_, NULL), GR_OK);
        outs[3 * i] = gr_[0]; outs[3 * i + 1] = gr_[1]; outs[3 * i + 2] = gr_[2];
    }
    in[0] = u; in[1] = x0; in[2] = w_in;
    vals[0] = sc_mat(T, 2, p); vals[1] = sc_vec(2, p + 2 * T); vals[2] = sc_mat(2, 2, p + 2 * T + 2);
    CHECK_STATUS(sc_run(3, in, vals, 12, outs, res), GR_OK);
    c.T = T; c.F = F; c.base = base; c.p = p;
    for (i = 0; i < 4; i++) {
        c.k = (int)ks[i];
        sc_fd(ref_trunc, &c, p, NP, fd);
        SC_NEAR(res[3 * i], 2 * T, fd, 1e-7);
        SC_NEAR(res[3 * i + 1], 2, fd + 2 * T, 1e-7);
        SC_NEAR(res[3 * i + 2], 4, fd + 2 * T + 2, 1e-7);
        if (ks[i] < T) {                                  /* exactly zero before the window, and for x0 */
            for (t = 0; t < 2 * (T - (int)ks[i]); t++) CHECK(res[3 * i] && gr_array_get(res[3 * i], t) == 0.0);
            SC_ZERO(res[3 * i + 1], 2);
        }
    }
    sc_free(12, res); sc_free(3, vals);
    gr_graph_free(g);
}

/* the gradient of a projected sum of a linear recurrence with respect to its sequence, initial state
   and two scalar non-sequences (test_grad_one_output) */
typedef struct sc_lin_ctx { int T; const double *F; double *p; } sc_lin_ctx;
static double ref_lin_cost(void *vc) {
    const sc_lin_ctx *c = (const sc_lin_ctx *)vc;
    double x[64];
    ref_rnn(c->T, c->p, c->p[c->T], c->p[c->T + 1], c->p[c->T + 2], 0, x);
    return sc_dotv(x, c->F, c->T);
}

TEST(test_scan_grad_one_output) {
    enum { T = 10 };
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_vector(g, GR_F64, "u"), *x0 = gr_scalar(g, GR_F64, "x0");
    gr_var *w_in = gr_scalar(g, GR_F64, "W_in"), *w = gr_scalar(g, GR_F64, "W"), *ns[2], *wrt[4], *gr_[4], *r = NULL;
    int64_t t_ = T;
    gr_scan_seq s = sc_seq(u, 0, NULL);
    gr_scan_out o = sc_out(x0, 0, NULL);
    sc_lin_ctx c;
    uint64_t seed = 22;
    double p[T + 3], F[T], fd[T + 3];
    gr_array *vals[4], *res[4];
    sc_fill(&seed, p, T, -0.5, 0.5);
    sc_fill(&seed, p + T, 3, 0, 1);
    sc_fill(&seed, F, T, 0.1, 0.9);
    ns[0] = w_in; ns[1] = w;
    CHECK_STATUS(gr_scan(st_rnn, NULL, 1, &s, 1, &o, 2, ns, NULL, &r), GR_OK);
    wrt[0] = u; wrt[1] = x0; wrt[2] = w_in; wrt[3] = w;
    CHECK_STATUS(gr_grad(sc_project(r, 1, &t_, F), 4, wrt, gr_, NULL), GR_OK);
    vals[0] = sc_vec(T, p); vals[1] = gr_array_scalar(GR_F64, p[T]);
    vals[2] = gr_array_scalar(GR_F64, p[T + 1]); vals[3] = gr_array_scalar(GR_F64, p[T + 2]);
    CHECK_STATUS(sc_run(4, wrt, vals, 4, gr_, res), GR_OK);
    c.T = T; c.F = F; c.p = p;
    sc_fd(ref_lin_cost, &c, p, T + 3, fd);
    SC_SHAPE(res[0], GR_F64, 1, T, -1, -1);
    SC_NEAR(res[0], T, fd, 1e-7);
    SC_NEAR(res[1], 1, fd + T, 1e-7);
    SC_NEAR(res[2], 1, fd + T + 1, 1e-7);
    SC_NEAR(res[3], 1, fd + T + 2, 1e-7);
    sc_free(4, res); sc_free(4, vals);
    gr_graph_free(g);
}

/* two outputs, a state the cost never depends on (y0: zeros with disconnected_inputs = ignore, an
   error by default), weights shared in the outer graph (test_grad_multiple_outs) */
typedef struct sc_cmpl_ctx { const sc_cmpl *c; int T; const double *F1, *F2; double *p; } sc_cmpl_ctx;
/* p = (u1 (T x 2), u2 (T), x0 (2), y0, W_in1 (2 x 2)) */
static double ref_cmpl_cost(void *vc) {
    const sc_cmpl_ctx *c = (const sc_cmpl_ctx *)vc;
    double x[64], y[32];
    int T = c->T;
    ref_cmpl(c->c, T, c->p, c->p + 2 * T, c->p + 3 * T, c->p + 3 * T + 3, x, y);
    return sc_dotv(x, c->F1, 2 * T) + sc_dotv(y, c->F2, T);
}

TEST(test_scan_grad_multiple_outs) {
    enum { T = 7, NP = 3 * T + 2 + 1 + 4 };
    gr_graph *g = gr_graph_new();
    gr_var *u1 = gr_matrix(g, GR_F64, "u1"), *u2 = gr_vector(g, GR_F64, "u2");
    gr_var *x0 = gr_vector(g, GR_F64, "x0"), *yinit = gr_scalar(g, GR_F64, "y0"), *w_in1 = gr_matrix(g, GR_F64, "win");
    gr_var *r[2], *wrt[5], *gr_[5], *cost;
    int64_t sx[2] = { T, 2 }, sy = T;
    gr_scan_seq s[2];
    gr_scan_out o[2];
    gr_grad_opts go;
    sc_cmpl c;
    sc_cmpl_ctx ctx;
    uint64_t seed = 23;
    double p[NP], F1[2 * T], F2[T], fd[NP];
    gr_array *vals[5], *res[5];
    sc_cmpl_init(g, &c, &seed, -0.1, 0.1);
    sc_fill(&seed, p, NP, -0.1, 0.1);
    sc_fill(&seed, F1, 2 * T, 0.1, 0.9); sc_fill(&seed, F2, T, 0.1, 0.9);
    s[0] = sc_seq(u1, 0, NULL); s[1] = sc_seq(u2, 0, NULL);
    o[0] = sc_out(x0, 0, NULL); o[1] = sc_out(yinit, 0, NULL);
    CHECK_STATUS(gr_scan(st_cmpl, &c, 2, s, 2, o, 1, &w_in1, NULL, r), GR_OK);
    cost = gr_add(sc_project(r[0], 2, sx, F1), sc_project(r[1], 1, &sy, F2));
    wrt[0] = u1; wrt[1] = u2; wrt[2] = x0; wrt[3] = yinit; wrt[4] = w_in1;
    CHECK_STATUS(gr_grad(cost, 5, wrt, gr_, NULL), GR_ERR_DISCONNECTED_INPUT);
    CHECK(gr_[0] == NULL && gr_[4] == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "y0");
    gr_graph_clear_error(g);
    memset(&go, 0, sizeof go);
    go.disconnected_inputs = GR_IGNORE;
    CHECK_STATUS(gr_grad(cost, 5, wrt, gr_, &go), GR_OK);
    vals[0] = sc_mat(T, 2, p); vals[1] = sc_vec(T, p + 2 * T); vals[2] = sc_vec(2, p + 3 * T);
    vals[3] = gr_array_scalar(GR_F64, p[3 * T + 2]); vals[4] = sc_mat(2, 2, p + 3 * T + 3);
    CHECK_STATUS(sc_run(5, wrt, vals, 5, gr_, res), GR_OK);
    ctx.c = &c; ctx.T = T; ctx.F1 = F1; ctx.F2 = F2; ctx.p = p;
    sc_fd(ref_cmpl_cost, &ctx, p, NP, fd);
    SC_NEAR(res[0], 2 * T, fd, 1e-7);
    SC_NEAR(res[1], T, fd + 2 * T, 1e-7);
    SC_NEAR(res[2], 2, fd + 3 * T, 1e-7);
    SC_SHAPE(res[3], GR_F64, 0, -1, -1, -1);
    SC_ZERO(res[3], 1);
    SC_NEAR(res[4], 4, fd + 3 * T + 3, 1e-7);
    sc_free(5, res); sc_free(5, vals);
    gr_graph_free(g);
}

/* sequence taps {-1, 0, 1}, a mit-sot with taps {-1, -3}, a nit-sot, forwards and backwards, the
   gradient also with respect to a shared weight the body reads (test_grad_multiple_outs_taps,
   test_grad_multiple_outs_taps_backwards):
   x_t = u1_t . W_in1 + (u2[t] + u2[t-1] u2[t+1]) W_in2 + x_{t-1} . W
   y_t = (y_{t-1} + y_{t-3}) (x_{t-1} . W_out),   z_t = u1_t . W_in1 */
static gr_status st_cmpl_taps(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    const sc_cmpl *c = (const sc_cmpl *)user;
    gr_var *a;
    (void)g; (void)until;
    /* in: u1_t, u2[t-1], u2[t], u2[t+1], x_{t-1}, y_{t-1}, y_{t-3}, W_in1 */
    a = gr_dot(in[0], in[7]);
    out[0] = gr_add(gr_add(a, gr_mul(gr_add(in[2], gr_mul(in[1], in[3])), c->w_in2)), gr_dot(in[4], c->w));
    out[1] = gr_mul(gr_add(in[5], in[6]), gr_dot(in[4], c->w_out));
    out[2] = a;
    return GR_OK;
}

typedef struct sc_taps_ctx { const sc_cmpl *c; int T, backwards; const double *F1, *F2, *F3; double *p; } sc_taps_ctx;
/* p = (u1 (T x 2), u2 ((T + 2) x 2), x0 (2), y0 (3), W_in1 (2 x 2), W_out (2)) */
static double ref_taps_cost(void *vc) {
    const sc_taps_ctx *c = (const sc_taps_ctx *)vc;
    int T = c->T, t, j;
    const double *u1 = c->p, *u2 = c->p + 2 * T, *x0 = u2 + 2 * (T + 2), *y0 = x0 + 2, *w_in1 = y0 + 3, *w_out = w_in1 + 4;
    double x[2], xn[2], a[2], b[2], yh[64], cost = 0;
    memcpy(x, x0, sizeof x);
    memcpy(yh, y0, 3 * sizeof *yh);
    for (t = 0; t < T; t++) {
        int q = c->backwards ? T - 1 - t : t;             /* the forward step this one reads */
        sc_vecmat(u1 + 2 * q, w_in1, 2, 2, a);
        sc_vecmat(x, c->c->v_w, 2, 2, b);
        for (j = 0; j < 2; j++) {
            double m1 = u2[2 * q + j], z0 = u2[2 * (q + 1) + j], p1 = u2[2 * (q + 2) + j];
            xn[j] = a[j] + (z0 + m1 * p1) * c->c->v_in2[j] + b[j];
            cost += c->F3[2 * t + j] * a[j];
        }
        yh[t + 3] = (yh[t + 2] + yh[t]) * (x[0] * w_out[0] + x[1] * w_out[1]);
        cost += c->F2[t] * yh[t + 3];
        memcpy(x, xn, sizeof x);
        cost += c->F1[2 * t] * x[0] + c->F1[2 * t + 1] * x[1];
    }
    return cost;
}

TEST(test_scan_grad_multiple_outs_taps) {
    enum { T = 5, NP = 2 * T + 2 * (T + 2) + 2 + 3 + 4 + 2 };
    gr_graph *g = gr_graph_new();
    gr_var *u1 = gr_matrix(g, GR_F64, "u1"), *u2 = gr_matrix(g, GR_F64, "u2");
    gr_var *x0 = gr_vector(g, GR_F64, "x0"), *yinit = gr_vector(g, GR_F64, "y0"), *w_in1 = gr_matrix(g, GR_F64, "win");
    gr_var *r[3], *wrt[6], *gr_[6], *cost, *outs[12];
    static const int staps[3] = { -1, 0, 1 }, otaps[2] = { -1, -3 };
    int64_t sx[2] = { T, 2 }, sy = T;
    gr_scan_seq s[2];
    gr_scan_out o[3];
    gr_scan_opts opts = sc_opts(NULL);
    sc_cmpl c;
    sc_taps_ctx ctx;
    uint64_t seed = 24;
    double p[NP], F1[2 * T], F2[T], F3[2 * T], fd[NP];
    gr_array *vals[5], *res[12];
    int back, k, off;
    sc_cmpl_init(g, &c, &seed, -0.2, 0.2);
    sc_fill(&seed, p, NP, -0.2, 0.2);
    sc_fill(&seed, p + 2 * T + 2 * (T + 2) + 2, 3, 0, 1);  /* y0 */
    memcpy(p + NP - 2, c.v_out, sizeof c.v_out);            /* W_out's value, as the shared variable holds it */
    sc_fill(&seed, F1, 2 * T, 0.1, 0.9); sc_fill(&seed, F2, T, 0.1, 0.9); sc_fill(&seed, F3, 2 * T, 0.1, 0.9);
    s[0] = sc_seq(u1, 0, NULL); s[1] = sc_seq(u2, 3, staps);
    o[0] = sc_out(x0, 0, NULL); o[1] = sc_out(yinit, 2, otaps); o[2] = sc_out(NULL, 0, NULL);
    wrt[0] = u1; wrt[1] = u2; wrt[2] = x0; wrt[3] = yinit; wrt[4] = w_in1; wrt[5] = c.w_out;
    for (back = 0; back < 2; back++) {
        opts.go_backwards = back;
        CHECK_STATUS(gr_scan(st_cmpl_taps, &c, 2, s, 3, o, 1, &w_in1, &opts, r), GR_OK);
        cost = gr_add(gr_add(sc_project(r[0], 2, sx, F1), sc_project(r[1], 1, &sy, F2)), sc_project(r[2], 2, sx, F3));
        CHECK_STATUS(gr_grad(cost, 6, wrt, gr_, NULL), GR_OK);
        for (k = 0; k < 6; k++) outs[6 * back + k] = gr_[k];
    }
    vals[0] = sc_mat(T, 2, p); vals[1] = sc_mat(T + 2, 2, p + 2 * T); vals[2] = sc_vec(2, p + 4 * T + 4);
    vals[3] = sc_vec(3, p + 4 * T + 6); vals[4] = sc_mat(2, 2, p + 4 * T + 9);
    CHECK_STATUS(sc_run(5, wrt, vals, 12, outs, res), GR_OK);
    ctx.c = &c; ctx.T = T; ctx.F1 = F1; ctx.F2 = F2; ctx.F3 = F3; ctx.p = p;
    for (back = 0; back < 2; back++) {
        ctx.backwards = back;
        sc_fd(ref_taps_cost, &ctx, p, NP, fd);
        off = 0;
        SC_NEAR(res[6 * back + 0], 2 * T, fd + off, 1e-7); off += 2 * T;
        SC_NEAR(res[6 * back + 1], 2 * (T + 2), fd + off, 1e-7); off += 2 * (T + 2);
        SC_NEAR(res[6 * back + 2], 2, fd + off, 1e-7); off += 2;
        SC_NEAR(res[6 * back + 3], 3, fd + off, 1e-7); off += 3;
        SC_NEAR(res[6 * back + 4], 4, fd + off, 1e-7); off += 4;
        SC_NEAR(res[6 * back + 5], 2, fd + off, 1e-7);
    }
    sc_free(12, res); sc_free(5, vals);
    gr_graph_free(g);
}

/* an int64 sequence entering the float state through a cast and an int64 output 2 u2_t
   (test_grad_multiple_outs_some_uncomputable, without its random term): the float gradients are
   right, the int64 output is exact, and the gradient of the int64 sequence is a float64 array of its
   shape */
static gr_status st_uncomp(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    /* in: u_t, u2_t, x_{t-1}, W_in */
    out[0] = gr_add(gr_add(gr_cast(in[1], GR_F64), gr_dot(in[0], in[3])), in[2]);
    out[1] = gr_mul(gr_const(g, 2.0), in[1]);
    return GR_OK;
}
typedef struct sc_uncomp_ctx { int T; const int64_t *u2; const double *F1, *F2; double *p; } sc_uncomp_ctx;
/* p = (u (T x 2), x0 (2), W_in (2 x 2)) */
static double ref_uncomp_cost(void *vc) {
    const sc_uncomp_ctx *c = (const sc_uncomp_ctx *)vc;
    double x[2], a[2], cost = 0;
    int t, j;
    memcpy(x, c->p + 2 * c->T, sizeof x);
    for (t = 0; t < c->T; t++) {
        sc_vecmat(c->p + 2 * t, c->p + 2 * c->T + 2, 2, 2, a);
        for (j = 0; j < 2; j++) { x[j] = ((double)c->u2[t] + a[j]) + x[j]; cost += c->F1[2 * t + j] * x[j]; }
        cost += c->F2[t] * (double)(2 * c->u2[t]);
    }
    return cost;
}

TEST(test_scan_grad_some_uncomputable) {
    enum { T = 5, NP = 2 * T + 2 + 4 };
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_matrix(g, GR_F64, "u1"), *u2 = gr_vector(g, GR_I64, "u2");
    gr_var *x0 = gr_vector(g, GR_F64, "x0"), *w_in = gr_matrix(g, GR_F64, "win");
    gr_var *r[2], *wrt[4], *gr_[4], *outs[5], *cost;
    int64_t sx[2] = { T, 2 }, sy = T, u2v[T] = { 1, 3, 4, 6, 8 };
    gr_scan_seq s[2];
    gr_scan_out o[2];
    sc_uncomp_ctx c;
    uint64_t seed = 25;
    double p[NP], F1[2 * T], F2[T], fd[NP], want[T];
    gr_array *vals[4], *res[5];
    int t;
    sc_fill(&seed, p, NP, -3, 3);
    sc_fill(&seed, F1, 2 * T, 0.1, 0.9); sc_fill(&seed, F2, T, 0.1, 0.9);
    s[0] = sc_seq(u, 0, NULL); s[1] = sc_seq(u2, 0, NULL);
    o[0] = sc_out(x0, 0, NULL); o[1] = sc_out(NULL, 0, NULL);
    CHECK_STATUS(gr_scan(st_uncomp, NULL, 2, s, 2, o, 1, &w_in, NULL, r), GR_OK);
    CHECK_EQ_INT(gr_var_dtype(r[1]), GR_I64);
    cost = gr_add(sc_project(r[0], 2, sx, F1), sc_project(r[1], 1, &sy, F2));
    wrt[0] = u; wrt[1] = u2; wrt[2] = x0; wrt[3] = w_in;
    CHECK_STATUS(gr_grad(cost, 4, wrt, gr_, NULL), GR_OK);
    CHECK_EQ_INT(gr_var_dtype(gr_[1]), GR_F64);
    outs[0] = gr_[0]; outs[1] = gr_[1]; outs[2] = gr_[2]; outs[3] = gr_[3]; outs[4] = r[1];
    vals[0] = sc_mat(T, 2, p); vals[1] = sc_ivec(T, u2v); vals[2] = sc_vec(2, p + 2 * T); vals[3] = sc_mat(2, 2, p + 2 * T + 2);
    CHECK_STATUS(sc_run(4, wrt, vals, 5, outs, res), GR_OK);
    c.T = T; c.u2 = u2v; c.F1 = F1; c.F2 = F2; c.p = p;
    sc_fd(ref_uncomp_cost, &c, p, NP, fd);
    SC_NEAR(res[0], 2 * T, fd, 1e-7);
    SC_SHAPE(res[1], GR_F64, 1, T, -1, -1);
    SC_NEAR(res[2], 2, fd + 2 * T, 1e-7);
    SC_NEAR(res[3], 4, fd + 2 * T + 2, 1e-7);
    for (t = 0; t < T; t++) want[t] = 2.0 * (double)u2v[t];
    SC_SHAPE(res[4], GR_I64, 1, T, -1, -1);
    SC_NEAR(res[4], T, want, 0);
    sc_free(5, res); sc_free(4, vals);
    gr_graph_free(g);
}

/* int64 inputs that reach the outputs only through comparisons: an int64 sequence and an int64
   non-sequence get float zero gradients (SEMANTICS 17.9, 2.7); the float ones are right:
   x_t = k_t > thr ? x_{t-1} a : x_{t-1} + a */
static gr_status st_int_where(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    /* in: k_t, x_{t-1}, thr, a */
    out[0] = gr_where(gr_gt(in[0], in[2]), gr_mul(in[1], in[3]), gr_add(in[1], in[3]));
    return GR_OK;
}
typedef struct sc_int_ctx { int T; const int64_t *k; int64_t thr; const double *F; double *p; } sc_int_ctx;
static double ref_int_cost(void *vc) {
    const sc_int_ctx *c = (const sc_int_ctx *)vc;
    double x = c->p[1], a = c->p[0], cost = 0;
    int t;
    for (t = 0; t < c->T; t++) {
        x = c->k[t] > c->thr ? x * a : x + a;
        cost += c->F[t] * x;
    }
    return cost;
}

TEST(test_scan_integer_inputs) {
    enum { T = 6 };
    gr_graph *g = gr_graph_new();
    gr_var *k = gr_vector(g, GR_I64, "k"), *thr = gr_scalar(g, GR_I64, "thr");
    gr_var *a = gr_scalar(g, GR_F64, "a"), *x0 = gr_scalar(g, GR_F64, "x0");
    gr_var *r = NULL, *ns[2], *wrt[4], *gr_[4];
    int64_t kv[T] = { 3, -1, 0, 5, 2, 1 }, t_ = T;
    gr_scan_seq s = sc_seq(k, 0, NULL);
    gr_scan_out o = sc_out(x0, 0, NULL);
    sc_int_ctx c;
    double p[2] = { 0.8, 0.3 }, F[T] = { 0.5, -0.2, 0.9, 0.4, 0.1, 0.7 }, fd[2];
    gr_array *vals[4], *res[4];
    ns[0] = thr; ns[1] = a;
    CHECK_STATUS(gr_scan(st_int_where, NULL, 1, &s, 1, &o, 2, ns, NULL, &r), GR_OK);
    wrt[0] = k; wrt[1] = thr; wrt[2] = a; wrt[3] = x0;
    CHECK_STATUS(gr_grad(sc_project(r, 1, &t_, F), 4, wrt, gr_, NULL), GR_OK);
    CHECK_EQ_INT(gr_var_dtype(gr_[0]), GR_F64);
    CHECK_EQ_INT(gr_var_dtype(gr_[1]), GR_F64);
    vals[0] = sc_ivec(T, kv); vals[1] = gr_array_scalar(GR_I64, 1);
    vals[2] = gr_array_scalar(GR_F64, p[0]); vals[3] = gr_array_scalar(GR_F64, p[1]);
    CHECK_STATUS(sc_run(4, wrt, vals, 4, gr_, res), GR_OK);
    SC_SHAPE(res[0], GR_F64, 1, T, -1, -1);
    SC_ZERO(res[0], T);
    SC_SHAPE(res[1], GR_F64, 0, -1, -1, -1);
    SC_ZERO(res[1], 1);
    c.T = T; c.k = kv; c.thr = 1; c.F = F; c.p = p;
    sc_fd(ref_int_cost, &c, p, 2, fd);
    SC_NEAR(res[2], 1, fd, 1e-8);
    SC_NEAR(res[3], 1, fd + 1, 1e-8);
    sc_free(4, res); sc_free(4, vals);
    gr_graph_free(g);
}

/* gradients with respect to non-sequences, explicit or read from the outer graph:
   y_t = v_t x1 with x1 shared: d sum / d x1 = sum v (test_grad_wrt_shared);
   a body that returns an outer variable w: d out[-1] / d w = 1 (test_grad_find_input);
   c_t x^{p_t} over (c, arange(1000)): 4 steps, the int64 sequence cut to them, first and second
   derivatives in x (test_grad_multiple_seqs_different_nsteps, test_grad_of_grad_of_state), and the
   rows of c beyond the steps get zeros; W[v_t] with v an int64 sequence: d sum / d W counts the rows
   taken (test_grad_bug_disconnected_input) */
static gr_status st_times_outer(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until;
    out[0] = gr_mul(in[0], (gr_var *)user);
    return GR_OK;
}
static gr_status st_return_outer(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)in; (void)until;
    out[0] = (gr_var *)user;
    return GR_OK;
}
static gr_status st_poly(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    /* in: c_t, p_t, x */
    out[0] = gr_mul(in[0], gr_pow(in[2], in[1]));
    return GR_OK;
}
static gr_status st_take_row(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until;
    out[0] = gr_take((gr_var *)user, in[0], 0);
    return GR_OK;
}

TEST(test_scan_grad_nonseqs) {
    gr_graph *g = gr_graph_new();
    gr_array *a3 = gr_array_scalar(GR_F64, 3.0), *a05 = gr_array_scalar(GR_F64, 0.5), *wz;
    gr_var *x1 = gr_shared(g, a3, "x1"), *w = gr_shared(g, a05, "w"), *W;
    gr_var *x2 = gr_vector(g, GR_F64, "x2"), *init = gr_scalar(g, GR_F64, "init");
    gr_var *c = gr_vector(g, GR_F64, "c"), *x = gr_scalar(g, GR_F64, "x"), *v = gr_vector(g, GR_I64, "v");
    gr_var *r[5], *outs[10], *in[5], *dP, *dPc;
    gr_scan_seq s[2];
    gr_scan_out onit = sc_out(NULL, 0, NULL), o = sc_out(init, 0, NULL);
    gr_scan_opts opts = sc_opts(sc_iconst(g, 2));
    int64_t s33[2] = { 3, 3 }, vv[2] = { 1, 2 };
    double x2v[2] = { 2, 3 }, cv[4] = { 1, 2, -3, 4 }, xv = 2, want[9], d1 = 0, d2 = 0, halves[2] = { 0.5, 0.5 };
    gr_array *vals[5], *res[10];
    int i;
    wz = gr_array_new(GR_F64, 2, s33);
    W = gr_shared(g, wz, "W");
    s[0] = sc_seq(x2, 0, NULL);
    CHECK_STATUS(gr_scan(st_times_outer, x1, 1, s, 1, &onit, 0, NULL, NULL, &r[0]), GR_OK);
    outs[0] = gr_grad1(gr_sum(r[0]), x1);
    CHECK_STATUS(gr_scan(st_return_outer, w, 0, NULL, 1, &o, 0, NULL, &opts, &r[1]), GR_OK);
    outs[1] = r[1];
    outs[2] = gr_grad1(gr_index(r[1], 0, -1), w);
    s[0] = sc_seq(c, 0, NULL); s[1] = sc_seq(gr_arange(g, 0, 1000, 1, GR_I64), 0, NULL);
    CHECK_STATUS(gr_scan(st_poly, NULL, 2, s, 1, &onit, 1, &x, NULL, &r[2]), GR_OK);
    dP = gr_grad1(gr_sum(r[2]), x);
    outs[3] = dP;
    outs[4] = gr_grad1(dP, x);
    outs[5] = gr_grad1(gr_sum(r[2]), c);
    s[1] = sc_seq(gr_arange(g, 0, 3, 1, GR_I64), 0, NULL);
    CHECK_STATUS(gr_scan(st_poly, NULL, 2, s, 1, &onit, 1, &x, NULL, &r[3]), GR_OK);
    dPc = gr_grad1(gr_sum(r[3]), c);
    outs[6] = dPc;
    s[0] = sc_seq(v, 0, NULL);
    CHECK_STATUS(gr_scan(st_take_row, W, 1, s, 1, &onit, 0, NULL, NULL, &r[4]), GR_OK);
    outs[7] = gr_grad1(gr_sum(r[4]), W);
    in[0] = x2; in[1] = init; in[2] = c; in[3] = x; in[4] = v;
    vals[0] = sc_vec(2, x2v); vals[1] = gr_array_scalar(GR_F64, -4); vals[2] = sc_vec(4, cv);
    vals[3] = gr_array_scalar(GR_F64, xv); vals[4] = sc_ivec(2, vv);
    CHECK_STATUS(sc_run(5, in, vals, 8, outs, res), GR_OK);
    want[0] = x2v[0] + x2v[1];
    SC_NEAR(res[0], 1, want, 0);
    SC_NEAR(res[1], 2, halves, 0);
    want[0] = 1;
    SC_NEAR(res[2], 1, want, 0);
    for (i = 0; i < 4; i++) {
        if (i >= 1) d1 += cv[i] * i * pow(xv, i - 1);
        if (i >= 2) d2 += cv[i] * i * (i - 1) * pow(xv, i - 2);
    }
    CHECK_NEAR(d1, 38, 0);                                /* upstream's numbers */
    CHECK_NEAR(d2, 42, 0);
    SC_NEAR(res[3], 1, &d1, 1e-14);
    SC_NEAR(res[4], 1, &d2, 1e-14);
    for (i = 0; i < 4; i++) want[i] = pow(xv, i);
    SC_NEAR(res[5], 4, want, 1e-15);
    want[3] = 0;                                          /* only 3 steps: c[3] is never read */
    SC_NEAR(res[6], 4, want, 1e-15);
    for (i = 0; i < 9; i++) want[i] = 0;
    for (i = 0; i < 2; i++) { want[3 * vv[i]] += 1; want[3 * vv[i] + 1] += 1; want[3 * vv[i] + 2] += 1; }
    SC_NEAR(res[7], 9, want, 0);
    sc_free(8, res); sc_free(5, vals);
    gr_array_free(a3); gr_array_free(a05); gr_array_free(wz);
    gr_graph_free(g);
}

/* ---- connection pattern: disconnected and null gradients through the recurrence ------------------- */

/* a_t = a_{t-1}, b_t = b_{t-1} with taps {-2, -1}: a[-1] depends on a0's second row only and not on
   b0 (test_connection_pattern) */
static gr_status st_pass_m1(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = in[1];
    out[1] = in[3];
    return GR_OK;
}
/* x_t = x_{t-1}^2, y_t = y_{t-1}, z_t = x_{t-1} + 1 (test_grad_connectivity_matrix) */
static gr_status st_conn(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    out[0] = gr_sqr(in[0]);
    out[1] = in[1];
    out[2] = gr_add(in[0], gr_const(g, 1.0));
    return GR_OK;
}
/* a rotation a <- b <- c <- c and d <- 2 d: a reaches b0 in one step and c0 through the recurrence */
static gr_status st_rot(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    out[0] = in[1];
    out[1] = in[2];
    out[2] = in[2];
    out[3] = gr_mul(gr_const(g, 2.0), in[3]);
    return GR_OK;
}
/* a_t = disconnected_grad(a_{t-1}) + u_t (a scalar) */
static gr_status st_dg(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = gr_add(gr_disconnected_grad(in[1]), in[0]);
    return GR_OK;
}

TEST(test_scan_connection_pattern) {
    gr_graph *g = gr_graph_new();
    gr_var *a0 = gr_vector(g, GR_F64, "a0"), *b0 = gr_vector(g, GR_F64, "b0");
    gr_var *x0 = gr_vector(g, GR_F64, "X"), *yi = gr_vector(g, GR_F64, "y0"), *z0 = gr_vector(g, GR_F64, "Z");
    gr_var *ra = gr_vector(g, GR_F64, "ra"), *rb = gr_vector(g, GR_F64, "rb"), *rc = gr_vector(g, GR_F64, "rc");
    gr_var *rd = gr_vector(g, GR_F64, "rd"), *u = gr_vector(g, GR_F64, "u"), *n = gr_scalar(g, GR_I64, "n");
    gr_var *da0 = gr_scalar(g, GR_F64, "da0");
    gr_var *r[4], *r3[3], *r4[4], *rdg = NULL, *cost, *d[2] = { NULL, NULL }, *wrt[2], *outs[8], *in[10];
    static const int taps[2] = { -2, -1 };
    gr_scan_out o[4];
    gr_scan_seq s = sc_seq(u, 0, NULL);
    gr_scan_opts opts = sc_opts(sc_iconst(g, 2));
    double av[2] = { 0.4, -0.6 }, xv[3] = { 0.9, 0.7, 1.05 }, want[3], ones[4] = { 1, 1, 1, 1 }, v2[2] = { 1, 2 };
    gr_array *vals[10], *res[8];
    int i, t, call;
    /* taps {-2, -1} */
    o[0] = sc_out(a0, 2, taps); o[1] = sc_out(b0, 2, taps);
    CHECK_STATUS(gr_scan(st_pass_m1, NULL, 0, NULL, 2, o, 0, NULL, &opts, r), GR_OK);
    outs[0] = gr_grad1(gr_index(r[0], 0, -1), a0);
    d[0] = (gr_var *)g;
    CHECK_STATUS(gr_grad(gr_index(r[0], 0, -1), 1, &b0, d, NULL), GR_ERR_DISCONNECTED_INPUT);
    CHECK(d[0] == NULL);
    gr_graph_clear_error(g);
    /* the connectivity matrix */
    opts = sc_opts(sc_iconst(g, 3));
    o[0] = sc_out(x0, 0, NULL); o[1] = sc_out(yi, 0, NULL); o[2] = sc_out(z0, 0, NULL);
    CHECK_STATUS(gr_scan(st_conn, NULL, 0, NULL, 3, o, 0, NULL, &opts, r3), GR_OK);
    cost = gr_sum(gr_add(gr_add(r3[0], r3[1]), r3[2]));
    outs[1] = gr_grad1(cost, x0);
    outs[2] = gr_grad1(cost, yi);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    CHECK(gr_grad1(cost, z0) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_DISCONNECTED_INPUT);
    gr_graph_clear_error(g);
    CHECK(gr_grad1(gr_sum(r3[0]), yi) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_DISCONNECTED_INPUT);
    gr_graph_clear_error(g);
    /* the rotation, with n_steps given at call time */
    opts = sc_opts(n);
    o[0] = sc_out(ra, 0, NULL); o[1] = sc_out(rb, 0, NULL); o[2] = sc_out(rc, 0, NULL); o[3] = sc_out(rd, 0, NULL);
    CHECK_STATUS(gr_scan(st_rot, NULL, 0, NULL, 4, o, 0, NULL, &opts, r4), GR_OK);
    wrt[0] = rb; wrt[1] = rc;
    CHECK_STATUS(gr_grad(gr_sum(r4[0]), 2, wrt, d, NULL), GR_OK);
    outs[3] = d[0]; outs[4] = d[1];
    CHECK(gr_grad1(gr_sum(r4[0]), ra) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_DISCONNECTED_INPUT);
    gr_graph_clear_error(g);
    CHECK(gr_grad1(gr_sum(r4[0]), rd) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_DISCONNECTED_INPUT);
    gr_graph_clear_error(g);
    /* disconnected_grad in the body cuts the state's path */
    o[0] = sc_out(da0, 0, NULL);
    CHECK_STATUS(gr_scan(st_dg, NULL, 1, &s, 1, o, 0, NULL, NULL, &rdg), GR_OK);
    outs[5] = gr_grad1(gr_sum(rdg), u);
    CHECK(gr_grad1(gr_sum(rdg), da0) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_DISCONNECTED_INPUT);
    gr_graph_clear_error(g);
    in[0] = a0; in[1] = b0; in[2] = x0; in[3] = yi; in[4] = z0;
    in[5] = ra; in[6] = rb; in[7] = rc; in[8] = rd; in[9] = n;
    for (call = 0; call < 3; call++) {
        int64_t steps = call == 0 ? 4 : call == 1 ? 1 : 0;
        vals[0] = sc_vec(2, av); vals[1] = sc_vec(2, av); vals[2] = sc_vec(3, xv); vals[3] = sc_vec(3, xv);
        vals[4] = sc_vec(3, xv);
        for (i = 5; i < 9; i++) vals[i] = sc_vec(2, v2);
        vals[9] = gr_array_scalar(GR_I64, (double)steps);
        /* u (4) for rdg is not an input of this function: its gradient is computed below */
        CHECK_STATUS(sc_run(10, in, vals, 5, outs, res), GR_OK);
        want[0] = 0; want[1] = 1;
        SC_NEAR(res[0], 2, want, 0);
        for (i = 0; i < 3; i++) {                         /* x_t = x0^(2^(t+1)), z_0 = x0 + 1, z_t = x_{t-1} + 1 */
            double acc = 1;
            for (t = 0; t < 3; t++) acc += ldexp(1.0, t + 1) * pow(xv[i], ldexp(1.0, t + 1) - 1);
            for (t = 1; t < 3; t++) acc += ldexp(1.0, t) * pow(xv[i], ldexp(1.0, t) - 1);
            want[i] = acc;
        }
        SC_NEAR(res[1], 3, want, 1e-14);
        want[0] = want[1] = want[2] = 3;
        SC_NEAR(res[2], 3, want, 0);
        /* sum(a) = b0 + (steps - 1) c0 for steps >= 1 */
        for (i = 0; i < 2; i++) want[i] = steps >= 1 ? 1 : 0;
        SC_NEAR(res[3], 2, want, 0);
        for (i = 0; i < 2; i++) want[i] = steps >= 1 ? (double)(steps - 1) : 0;
        SC_NEAR(res[4], 2, want, 0);
        sc_free(5, res); sc_free(10, vals);
    }
    vals[0] = sc_vec(4, ones); vals[1] = gr_array_scalar(GR_F64, 0.5);
    in[0] = u; in[1] = da0;
    CHECK_STATUS(sc_run(2, in, vals, 1, outs + 5, res), GR_OK);
    SC_NEAR(res[0], 4, ones, 0);
    sc_free(1, res); sc_free(2, vals);
    gr_graph_free(g);
}

/* non-recurrent outputs whose gradients are disconnected or come through another output
   (test_disconnected_gradient, test_disconnected_gradient2, test_disconnected_gradient3) */
static gr_status st_dg1(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until;
    out[0] = in[1];
    out[1] = (gr_var *)user;
    return GR_OK;
}
static gr_status st_dg2(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until;
    out[0] = gr_add(in[0], in[1]);
    out[1] = gr_add(in[1], (gr_var *)user);
    return GR_OK;
}
static gr_status st_dg3(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    out[0] = gr_add(in[0], gr_const(g, 1.0));
    out[1] = gr_add(out[0], gr_const(g, 1.0));
    return GR_OK;
}

TEST(test_scan_disconnected_gradient) {
    enum { T = 4, N = 7 };
    gr_graph *g = gr_graph_new();
    gr_var *m = gr_matrix(g, GR_F64, "m"), *v = gr_vector(g, GR_F64, "v"), *sv = gr_vector(g, GR_F64, "sv");
    gr_var *r1[2], *r2[2], *r3[2], *outs[3], *in[3];
    double zeros[N], mv[T * N], vv[N], want[T * N];
    int64_t n_ = N;
    gr_scan_seq s = sc_seq(m, 0, NULL);
    gr_scan_out o[2];
    uint64_t seed = 26;
    gr_array *vals[3], *res[3];
    int t, j;
    memset(zeros, 0, sizeof zeros);
    o[0] = sc_out(sc_fconst(g, 1, &n_, zeros), 0, NULL); o[1] = sc_out(NULL, 0, NULL);
    CHECK_STATUS(gr_scan(st_dg1, v, 1, &s, 2, o, 0, NULL, NULL, r1), GR_OK);
    outs[0] = gr_grad1(gr_sum(gr_mul(m, r1[1])), v);
    CHECK_STATUS(gr_scan(st_dg2, v, 1, &s, 2, o, 0, NULL, NULL, r2), GR_OK);
    outs[1] = gr_grad1(gr_sum(r2[1]), m);
    s = sc_seq(sv, 0, NULL);
    o[0] = sc_out(NULL, 0, NULL);
    CHECK_STATUS(gr_scan(st_dg3, NULL, 1, &s, 2, o, 0, NULL, NULL, r3), GR_OK);
    outs[2] = gr_grad1(gr_sum(r3[1]), sv);
    sc_fill(&seed, mv, T * N, 0, 1); sc_fill(&seed, vv, N, 0, 1);
    in[0] = m; in[1] = v; in[2] = sv;
    vals[0] = sc_mat(T, N, mv); vals[1] = sc_vec(N, vv); vals[2] = sc_vec(5, mv);
    CHECK_STATUS(sc_run(3, in, vals, 3, outs, res), GR_OK);
    for (j = 0; j < N; j++) { want[j] = 0; for (t = 0; t < T; t++) want[j] += mv[t * N + j]; }
    SC_NEAR(res[0], N, want, 1e-15);
    /* m2_t = u_{t-1} + v with u_{t-1} = sum_{s<t} m_s: row s counts the later steps */
    for (t = 0; t < T; t++) for (j = 0; j < N; j++) want[t * N + j] = T - 1 - t;
    SC_NEAR(res[1], T * N, want, 0);
    for (j = 0; j < 5; j++) want[j] = 1;
    SC_NEAR(res[2], 5, want, 0);
    sc_free(3, res); sc_free(3, vals);
    gr_graph_free(g);
}

/* the same variable as two outputs, a nit-sot and a mit-sot with tap -3 (test_grad_duplicate_outputs):
   total_t = s_t + o_{t-3} + n; each output's sum has the same gradients, counted here by a loop */
static gr_status st_dup(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    gr_var *total;
    (void)g; (void)until; (void)user;
    total = gr_add(gr_add(in[0], in[1]), in[2]);
    out[0] = total;
    out[1] = total;
    return GR_OK;
}

TEST(test_scan_grad_duplicate_outputs) {
    enum { T = 10 };
    gr_graph *g = gr_graph_new();
    gr_var *seq = gr_matrix(g, GR_F64, "seq"), *init = gr_matrix(g, GR_F64, "out_init"), *ns = gr_vector(g, GR_F64, "non_seq");
    gr_var *r[2], *wrt[3], *gr_[3], *outs[6];
    static const int tm3[1] = { -3 };
    gr_scan_seq s = sc_seq(seq, 0, NULL);
    gr_scan_out o[2];
    uint64_t seed = 27;
    double sv[3 * T], iv[9], nv[3], w[T], want[3 * T], total = 0;
    gr_array *vals[3], *res[6];
    int t, j, k;
    o[0] = sc_out(NULL, 0, NULL); o[1] = sc_out(init, 1, tm3);
    CHECK_STATUS(gr_scan(st_dup, NULL, 1, &s, 2, o, 1, &ns, NULL, r), GR_OK);
    wrt[0] = seq; wrt[1] = init; wrt[2] = ns;
    for (k = 0; k < 2; k++) {
        CHECK_STATUS(gr_grad(gr_sum(r[k]), 3, wrt, gr_, NULL), GR_OK);
        for (j = 0; j < 3; j++) outs[3 * k + j] = gr_[j];
    }
    sc_fill(&seed, sv, 3 * T, 0, 1); sc_fill(&seed, iv, 9, 0, 1); sc_fill(&seed, nv, 3, 0, 1);
    vals[0] = sc_mat(T, 3, sv); vals[1] = sc_mat(3, 3, iv); vals[2] = sc_vec(3, nv);
    CHECK_STATUS(sc_run(3, wrt, vals, 6, outs, res), GR_OK);
    /* w_t: how many outputs total_t reaches (itself, then total_{t+3}, ...) */
    for (t = T - 1; t >= 0; t--) { w[t] = 1 + (t + 3 < T ? w[t + 3] : 0); total += w[t]; }
    for (k = 0; k < 2; k++) {
        for (t = 0; t < T; t++) for (j = 0; j < 3; j++) want[3 * t + j] = w[t];
        SC_NEAR(res[3 * k], 3 * T, want, 0);
        SC_NEAR(res[3 * k + 1], 9, want, 0);              /* initial row j is read by step j */
        for (j = 0; j < 3; j++) want[j] = total;
        SC_NEAR(res[3 * k + 2], 3, want, 0);
    }
    CHECK_NEAR(w[0], 4, 0);                               /* upstream's numbers: 4 3 3 3 2 2 2 1 1 1, 22 */
    CHECK_NEAR(total, 22, 0);
    sc_free(6, res); sc_free(3, vals);
    gr_graph_free(g);
}

/* six outputs that are one variable: two nit-sots, two sit-sots, two mit-sots with taps {-2, -1}
   (test_grad_duplicate_outputs_connection_pattern): the gradient of the first with respect to the
   second sit-sot's initial value, against central differences */
static gr_status st_dup6(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    gr_var *total;
    int i;
    (void)g; (void)until; (void)user;
    total = gr_add(gr_add(gr_add(gr_add(gr_add(in[0], in[1]), in[2]), in[3]), in[4]), in[5]);
    for (i = 0; i < 6; i++) out[i] = total;
    return GR_OK;
}
typedef struct sc_dup6_ctx { int T; const double *F; double *p; } sc_dup6_ctx;
/* p = (a0 (2), b0 (2), c0 (2 x 2), d0 (2 x 2)); cost = sum_t F_t . total_t */
static double ref_dup6_cost(void *vc) {
    const sc_dup6_ctx *c = (const sc_dup6_ctx *)vc;
    double a[2], b[2], cm2[2], cm1[2], dm2[2], dm1[2], tot[2], cost = 0;
    int t, j;
    memcpy(a, c->p, sizeof a); memcpy(b, c->p + 2, sizeof b);
    memcpy(cm2, c->p + 4, sizeof cm2); memcpy(cm1, c->p + 6, sizeof cm1);
    memcpy(dm2, c->p + 8, sizeof dm2); memcpy(dm1, c->p + 10, sizeof dm1);
    for (t = 0; t < c->T; t++) {
        for (j = 0; j < 2; j++) {
            tot[j] = ((((a[j] + b[j]) + cm2[j]) + cm1[j]) + dm2[j]) + dm1[j];
            cost += c->F[2 * t + j] * tot[j];
        }
        memcpy(a, tot, sizeof a); memcpy(b, tot, sizeof b);
        memcpy(cm2, cm1, sizeof cm2); memcpy(cm1, tot, sizeof cm1);
        memcpy(dm2, dm1, sizeof dm2); memcpy(dm1, tot, sizeof dm1);
    }
    return cost;
}

TEST(test_scan_grad_duplicate_outputs_pattern) {
    enum { T = 4 };
    gr_graph *g = gr_graph_new();
    gr_var *a0 = gr_vector(g, GR_F64, "a0"), *b0 = gr_vector(g, GR_F64, "b0");
    gr_var *c0 = gr_matrix(g, GR_F64, "c0"), *d0 = gr_matrix(g, GR_F64, "d0");
    gr_var *r[6], *in[4], *gb;
    static const int taps[2] = { -2, -1 };
    int64_t sh[2] = { T, 2 };
    gr_scan_out o[6];
    gr_scan_opts opts = sc_opts(sc_iconst(g, T));
    sc_dup6_ctx c;
    uint64_t seed = 28;
    double p[12], F[2 * T], fd[12];
    gr_array *vals[4], *res[1];
    o[0] = o[1] = sc_out(NULL, 0, NULL);
    o[2] = sc_out(a0, 0, NULL); o[3] = sc_out(b0, 0, NULL);
    o[4] = sc_out(c0, 2, taps); o[5] = sc_out(d0, 2, taps);
    sc_fill(&seed, p, 12, -0.5, 0.5); sc_fill(&seed, F, 2 * T, 0.1, 0.9);
    CHECK_STATUS(gr_scan(st_dup6, NULL, 0, NULL, 6, o, 0, NULL, &opts, r), GR_OK);
    gb = gr_grad1(sc_project(r[0], 2, sh, F), b0);
    in[0] = a0; in[1] = b0; in[2] = c0; in[3] = d0;
    vals[0] = sc_vec(2, p); vals[1] = sc_vec(2, p + 2); vals[2] = sc_mat(2, 2, p + 4); vals[3] = sc_mat(2, 2, p + 8);
    CHECK_STATUS(sc_run(4, in, vals, 1, &gb, res), GR_OK);
    c.T = T; c.F = F; c.p = p;
    sc_fd(ref_dup6_cost, &c, p, 12, fd);
    SC_NEAR(res[0], 2, fd + 2, 1e-7);
    sc_free(1, res); sc_free(4, vals);
    gr_graph_free(g);
}

/* a null gradient in the body: a_t = 2 undefined_grad(a_{t-1}) + u_t beside o_t = w u_t. The gradient
   with respect to a0 is null (an error by default, a null variable with null_gradients = return),
   and w, which reaches the cost only through o, still gets sum(u) (test_crash_nonseq_grad's
   NullTypeGradError) */
static gr_status st_null(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    /* in: u_t, a_{t-1}, w */
    out[0] = gr_add(gr_mul(gr_const(g, 2.0), gr_undefined_grad(in[1])), in[0]);
    out[1] = gr_mul(in[2], in[0]);
    return GR_OK;
}

TEST(test_scan_null_grad) {
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_vector(g, GR_F64, "u"), *a0 = gr_scalar(g, GR_F64, "a0"), *w = gr_scalar(g, GR_F64, "w");
    gr_var *r[2], *cost, *wrt[2], *d[2], *in[3];
    gr_scan_seq s = sc_seq(u, 0, NULL);
    gr_scan_out o[2];
    gr_grad_opts go;
    double uv[4] = { 0.5, -1, 2, 0.25 }, want = 1.75;
    gr_array *vals[3], *res[1];
    o[0] = sc_out(a0, 0, NULL); o[1] = sc_out(NULL, 0, NULL);
    CHECK_STATUS(gr_scan(st_null, NULL, 1, &s, 2, o, 1, &w, NULL, r), GR_OK);
    cost = gr_add(gr_sum(r[0]), gr_sum(r[1]));
    wrt[0] = a0; wrt[1] = w;
    d[0] = d[1] = a0;
    CHECK_STATUS(gr_grad(cost, 2, wrt, d, NULL), GR_ERR_NULL_GRAD);
    CHECK(d[0] == NULL && d[1] == NULL);
    gr_graph_clear_error(g);
    memset(&go, 0, sizeof go);
    go.null_gradients = GR_NULL_RETURN;
    CHECK_STATUS(gr_grad(cost, 2, wrt, d, &go), GR_OK);
    CHECK(d[0] && gr_is_null(d[0]));
    CHECK(d[1] && !gr_is_null(d[1]));
    in[0] = u; in[1] = a0; in[2] = w;
    vals[0] = sc_vec(4, uv); vals[1] = gr_array_scalar(GR_F64, 1); vals[2] = gr_array_scalar(GR_F64, 3);
    CHECK_STATUS(sc_run(3, in, vals, 1, &d[1], res), GR_OK);
    SC_NEAR(res[0], 1, &want, 0);
    sc_free(1, res); sc_free(3, vals);
    gr_graph_free(g);
}

/* ---- R-op: against central differences and the adjoint identity with gr_lop ----------------------- */

/* o_t = tanh(W . (u_t + o_{t-1})) (test_R_op / test_pushforward) */
static gr_status st_tanh_w(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    /* in: u_t, o_{t-1}, W */
    out[0] = gr_tanh(gr_dot(in[2], gr_add(in[0], in[1])));
    return GR_OK;
}
/* ... and tmp_t = u_t + o_{t-1} as a second output (test_R_op_2 / test_pushforward_2) */
static gr_status st_tanh_w2(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    gr_var *tmp;
    (void)g; (void)until; (void)user;
    tmp = gr_add(in[0], in[1]);
    out[0] = gr_tanh(gr_dot(in[2], tmp));
    out[1] = tmp;
    return GR_OK;
}

enum { RT = 6, RN = 4, RP = RT * RN + RN + RN * RN };
typedef struct sc_rnn_ctx { double *p; } sc_rnn_ctx;
/* p = (u (RT x RN), h0 (RN), W (RN x RN)); out = (o (RT x RN), tmp (RT x RN)) */
static void ref_tanh_w(void *vc, double *out) {
    const sc_rnn_ctx *c = (const sc_rnn_ctx *)vc;
    const double *u = c->p, *W = c->p + RT * RN + RN;
    double prev[RN], tmp[RN], a[RN];
    int t, i;
    memcpy(prev, c->p + RT * RN, sizeof prev);
    for (t = 0; t < RT; t++) {
        for (i = 0; i < RN; i++) tmp[i] = u[t * RN + i] + prev[i];
        sc_matvec(W, tmp, RN, RN, a);
        for (i = 0; i < RN; i++) {
            out[t * RN + i] = prev[i] = tanh(a[i]);
            out[RT * RN + t * RN + i] = tmp[i];
        }
    }
}

TEST(test_scan_rop) {
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_matrix(g, GR_F64, "U"), *h0 = gr_vector(g, GR_F64, "h0"), *W = gr_matrix(g, GR_F64, "W");
    gr_var *eu = gr_matrix(g, GR_F64, "eu"), *eh0 = gr_vector(g, GR_F64, "eh0"), *eW = gr_matrix(g, GR_F64, "eW");
    gr_var *wv = gr_matrix(g, GR_F64, "wv"), *r = NULL, *last, *wrt[3], *ev[3], *outs[9], *in[7];
    gr_scan_seq s = sc_seq(u, 0, NULL);
    gr_scan_out o = sc_out(h0, 0, NULL);
    gr_scan_opts opts = sc_opts(NULL);
    sc_rnn_ctx c;
    uint64_t seed = 29;
    double p[RP], v[RP], vk[RP], wvv[RT * RN], fd[2 * RT * RN], lhs, rhs;
    gr_array *vals[7], *res[9];
    int k, off[4] = { 0, RT * RN, RT * RN + RN, RP };
    opts.name = "rnn_fn";
    CHECK_STATUS(gr_scan(st_tanh_w, NULL, 1, &s, 1, &o, 1, &W, &opts, &r), GR_OK);
    last = gr_index(r, 0, -1);
    wrt[0] = u; wrt[1] = h0; wrt[2] = W;
    ev[0] = eu; ev[1] = eh0; ev[2] = eW;
    for (k = 0; k < 3; k++) CHECK_STATUS(gr_rop(1, &last, 1, &wrt[k], &ev[k], &outs[k], NULL), GR_OK);
    CHECK_STATUS(gr_rop(1, &last, 3, wrt, ev, &outs[3], NULL), GR_OK);
    CHECK_STATUS(gr_rop(1, &r, 3, wrt, ev, &outs[4], NULL), GR_OK);
    CHECK_STATUS(gr_lop(1, &r, 3, wrt, &wv, &outs[5], NULL), GR_OK);
    outs[8] = last;
    sc_fill(&seed, p, RP, -0.5, 0.5);
    sc_fill(&seed, v, RP, -0.5, 0.5);
    sc_fill(&seed, wvv, RT * RN, -1, 1);
    in[0] = u; in[1] = h0; in[2] = W; in[3] = eu; in[4] = eh0; in[5] = eW; in[6] = wv;
    vals[0] = sc_mat(RT, RN, p); vals[1] = sc_vec(RN, p + off[1]); vals[2] = sc_mat(RN, RN, p + off[2]);
    vals[3] = sc_mat(RT, RN, v); vals[4] = sc_vec(RN, v + off[1]); vals[5] = sc_mat(RN, RN, v + off[2]);
    vals[6] = sc_mat(RT, RN, wvv);
    CHECK_STATUS(sc_run(7, in, vals, 9, outs, res), GR_OK);
    c.p = p;
    ref_tanh_w(&c, fd);
    SC_NEAR(res[8], RN, fd + (RT - 1) * RN, 1e-14);
    for (k = 0; k < 3; k++) {                             /* one input at a time */
        memset(vk, 0, sizeof vk);
        memcpy(vk + off[k], v + off[k], (size_t)(off[k + 1] - off[k]) * sizeof *v);
        sc_fd_dir(ref_tanh_w, &c, p, vk, RP, 2 * RT * RN, fd);
        SC_SHAPE(res[k], GR_F64, 1, RN, -1, -1);
        SC_NEAR(res[k], RN, fd + (RT - 1) * RN, 1e-7);
    }
    sc_fd_dir(ref_tanh_w, &c, p, v, RP, 2 * RT * RN, fd);
    SC_NEAR(res[3], RN, fd + (RT - 1) * RN, 1e-7);        /* all three: the sum of the products */
    SC_SHAPE(res[4], GR_F64, 2, RT, RN, -1);
    SC_NEAR(res[4], RT * RN, fd, 1e-7);
    /* <w, J v> = <J^T w, v> */
    lhs = sc_dota(res[4], wvv);
    rhs = sc_dota(res[5], v) + sc_dota(res[6], v + off[1]) + sc_dota(res[7], v + off[2]);
    CHECK_NEAR(lhs, rhs, 1e-12);
    sc_free(9, res); sc_free(7, vals);
    gr_graph_free(g);
}

TEST(test_scan_rop2) {
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_matrix(g, GR_F64, "U"), *h0 = gr_vector(g, GR_F64, "h0"), *W = gr_matrix(g, GR_F64, "W");
    gr_var *eu = gr_matrix(g, GR_F64, "eu"), *eh0 = gr_vector(g, GR_F64, "eh0"), *eW = gr_matrix(g, GR_F64, "eW");
    gr_var *r[2], *f[2], *wrt[3], *ev[3], *outs[2], *in[6];
    gr_scan_seq s = sc_seq(u, 0, NULL);
    gr_scan_out o[2];
    sc_rnn_ctx c;
    uint64_t seed = 30;
    double p[RP], v[RP], fd[2 * RT * RN];
    gr_array *vals[6], *res[2];
    o[0] = sc_out(h0, 0, NULL); o[1] = sc_out(NULL, 0, NULL);
    CHECK_STATUS(gr_scan(st_tanh_w2, NULL, 1, &s, 2, o, 1, &W, NULL, r), GR_OK);
    f[0] = gr_index(r[0], 0, -1); f[1] = r[1];
    wrt[0] = u; wrt[1] = h0; wrt[2] = W;
    ev[0] = eu; ev[1] = eh0; ev[2] = eW;
    CHECK_STATUS(gr_rop(2, f, 3, wrt, ev, outs, NULL), GR_OK);
    sc_fill(&seed, p, RP, -0.5, 0.5);
    sc_fill(&seed, v, RP, -0.5, 0.5);
    in[0] = u; in[1] = h0; in[2] = W; in[3] = eu; in[4] = eh0; in[5] = eW;
    vals[0] = sc_mat(RT, RN, p); vals[1] = sc_vec(RN, p + RT * RN); vals[2] = sc_mat(RN, RN, p + RT * RN + RN);
    vals[3] = sc_mat(RT, RN, v); vals[4] = sc_vec(RN, v + RT * RN); vals[5] = sc_mat(RN, RN, v + RT * RN + RN);
    CHECK_STATUS(sc_run(6, in, vals, 2, outs, res), GR_OK);
    c.p = p;
    sc_fd_dir(ref_tanh_w, &c, p, v, RP, 2 * RT * RN, fd);
    SC_NEAR(res[0], RN, fd + (RT - 1) * RN, 1e-7);
    SC_SHAPE(res[1], GR_F64, 2, RT, RN, -1);
    SC_NEAR(res[1], RT * RN, fd + RT * RN, 1e-7);
    sc_free(2, res); sc_free(6, vals);
    gr_graph_free(g);
}

/* the R-op through sequence taps {-1, 1}, a mit-sot with taps {-2, -1}, a nit-sot and a matrix
   non-sequence, forwards and backwards; checked against central differences and, with gr_lop, the
   adjoint identity:  s_t = tanh(W . s_{t-1} + u[t-1] s_{t-2}) + 0.5 u[t+1],  z_t = sin(s_{t-2}) u[t+1] */
static gr_status st_taps_rop(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    /* in: u[t-1], u[t+1], s_{t-2}, s_{t-1}, W */
    out[0] = gr_add(gr_tanh(gr_add(gr_dot(in[4], in[3]), gr_mul(in[0], in[2]))), gr_mul(gr_const(g, 0.5), in[1]));
    out[1] = gr_mul(gr_sin(in[2]), in[1]);
    return GR_OK;
}
enum { QT = 5, QP = 2 * (QT + 2) + 4 + 4 };
typedef struct sc_q_ctx { int backwards; double *p; } sc_q_ctx;
/* p = (u ((QT + 2) x 2), s0 (2 x 2), W (2 x 2)); out = (s (QT x 2), z (QT x 2)) */
static void ref_taps_rop(void *vc, double *out) {
    const sc_q_ctx *c = (const sc_q_ctx *)vc;
    const double *u = c->p, *W = c->p + 2 * (QT + 2) + 4;
    double h[2 * (QT + 2)], a[2];
    int t, j;
    memcpy(h, c->p + 2 * (QT + 2), 4 * sizeof *h);
    for (t = 0; t < QT; t++) {
        int q = c->backwards ? QT - 1 - t : t;            /* u[t-1] is u[q], u[t+1] is u[q + 2] */
        sc_matvec(W, h + 2 * (t + 1), 2, 2, a);
        for (j = 0; j < 2; j++) {
            h[2 * (t + 2) + j] = tanh(a[j] + u[2 * q + j] * h[2 * t + j]) + 0.5 * u[2 * (q + 2) + j];
            out[2 * QT + 2 * t + j] = sin(h[2 * t + j]) * u[2 * (q + 2) + j];
        }
    }
    memcpy(out, h + 4, 2 * QT * sizeof *h);
}

TEST(test_scan_rop_taps_adjoint) {
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_matrix(g, GR_F64, "u"), *s0 = gr_matrix(g, GR_F64, "s0"), *W = gr_matrix(g, GR_F64, "W");
    gr_var *eu = gr_matrix(g, GR_F64, "eu"), *es0 = gr_matrix(g, GR_F64, "es0"), *eW = gr_matrix(g, GR_F64, "eW");
    gr_var *w1 = gr_matrix(g, GR_F64, "w1"), *w2 = gr_matrix(g, GR_F64, "w2");
    gr_var *r[2], *wrt[3], *ev[3], *wv[2], *outs[10], *in[8];
    static const int staps[2] = { -1, 1 }, otaps[2] = { -2, -1 };
    gr_scan_seq s = sc_seq(u, 2, staps);
    gr_scan_out o[2];
    gr_scan_opts opts = sc_opts(NULL);
    sc_q_ctx c;
    uint64_t seed = 31;
    double p[QP], v[QP], wvv[4 * QT], fd[4 * QT], lhs, rhs;
    gr_array *vals[8], *res[10];
    int back;
    o[0] = sc_out(s0, 2, otaps); o[1] = sc_out(NULL, 0, NULL);
    wrt[0] = u; wrt[1] = s0; wrt[2] = W;
    ev[0] = eu; ev[1] = es0; ev[2] = eW;
    wv[0] = w1; wv[1] = w2;
    for (back = 0; back < 2; back++) {
        opts.go_backwards = back;
        CHECK_STATUS(gr_scan(st_taps_rop, NULL, 1, &s, 2, o, 1, &W, &opts, r), GR_OK);
        CHECK_STATUS(gr_rop(2, r, 3, wrt, ev, outs + 5 * back, NULL), GR_OK);
        CHECK_STATUS(gr_lop(2, r, 3, wrt, wv, outs + 5 * back + 2, NULL), GR_OK);
    }
    sc_fill(&seed, p, QP, -0.5, 0.5); sc_fill(&seed, v, QP, -0.5, 0.5); sc_fill(&seed, wvv, 4 * QT, -1, 1);
    in[0] = u; in[1] = s0; in[2] = W; in[3] = eu; in[4] = es0; in[5] = eW; in[6] = w1; in[7] = w2;
    vals[0] = sc_mat(QT + 2, 2, p); vals[1] = sc_mat(2, 2, p + 2 * (QT + 2)); vals[2] = sc_mat(2, 2, p + 2 * (QT + 2) + 4);
    vals[3] = sc_mat(QT + 2, 2, v); vals[4] = sc_mat(2, 2, v + 2 * (QT + 2)); vals[5] = sc_mat(2, 2, v + 2 * (QT + 2) + 4);
    vals[6] = sc_mat(QT, 2, wvv); vals[7] = sc_mat(QT, 2, wvv + 2 * QT);
    CHECK_STATUS(sc_run(8, in, vals, 10, outs, res), GR_OK);
    c.p = p;
    for (back = 0; back < 2; back++) {
        gr_array **q = res + 5 * back;
        c.backwards = back;
        sc_fd_dir(ref_taps_rop, &c, p, v, QP, 4 * QT, fd);
        SC_SHAPE(q[0], GR_F64, 2, QT, 2, -1);
        SC_NEAR(q[0], 2 * QT, fd, 1e-7);
        SC_NEAR(q[1], 2 * QT, fd + 2 * QT, 1e-7);
        lhs = sc_dota(q[0], wvv) + sc_dota(q[1], wvv + 2 * QT);
        rhs = sc_dota(q[2], v) + sc_dota(q[3], v + 2 * (QT + 2)) + sc_dota(q[4], v + 2 * (QT + 2) + 4);
        CHECK_NEAR(lhs, rhs, 1e-12);
    }
    sc_free(10, res); sc_free(8, vals);
    gr_graph_free(g);
}

/* the R-op of a while loop runs the steps the loop ran: x_t = tanh(a x_{t-1}) + u_t until x_t > 0.8 */
static gr_status st_until_rop(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)user;
    /* in: u_t, x_{t-1}, a */
    out[0] = gr_add(gr_tanh(gr_mul(in[2], in[1])), in[0]);
    *until = gr_gt(out[0], gr_const(g, 0.8));
    return GR_OK;
}
enum { UT = 10 };
/* p = (u (UT), a, x0); out = every x_t of the loop run without stopping (its first rows are the
   while loop's) */
static void ref_until_rop(void *vc, double *out) {
    const double *p = ((const sc_rnn_ctx *)vc)->p;
    double x = p[UT + 1];
    int t;
    for (t = 0; t < UT; t++) out[t] = x = tanh(p[UT] * x) + p[t];
}

TEST(test_scan_rop_until) {
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_vector(g, GR_F64, "u"), *a = gr_scalar(g, GR_F64, "a"), *x0 = gr_scalar(g, GR_F64, "x0");
    gr_var *eu = gr_vector(g, GR_F64, "eu"), *ea = gr_scalar(g, GR_F64, "ea"), *ex0 = gr_scalar(g, GR_F64, "ex0");
    gr_var *r = NULL, *wrt[3], *ev[3], *outs[2], *in[6];
    gr_scan_seq s = sc_seq(u, 0, NULL);
    gr_scan_out o = sc_out(x0, 0, NULL);
    sc_rnn_ctx c;
    double p[UT + 2], v[UT + 2], xs[UT], fd[UT];
    uint64_t seed = 32;
    gr_array *vals[6], *res[2];
    int t, k;
    for (t = 0; t < UT; t++) p[t] = 0.15 * (t + 1);
    p[UT] = 0.9; p[UT + 1] = 0.1;
    sc_fill(&seed, v, UT + 2, -1, 1);
    CHECK_STATUS(gr_scan(st_until_rop, NULL, 1, &s, 1, &o, 1, &a, NULL, &r), GR_OK);
    wrt[0] = u; wrt[1] = a; wrt[2] = x0;
    ev[0] = eu; ev[1] = ea; ev[2] = ex0;
    CHECK_STATUS(gr_rop(1, &r, 3, wrt, ev, &outs[0], NULL), GR_OK);
    outs[1] = r;
    in[0] = u; in[1] = a; in[2] = x0; in[3] = eu; in[4] = ea; in[5] = ex0;
    vals[0] = sc_vec(UT, p); vals[1] = gr_array_scalar(GR_F64, p[UT]); vals[2] = gr_array_scalar(GR_F64, p[UT + 1]);
    vals[3] = sc_vec(UT, v); vals[4] = gr_array_scalar(GR_F64, v[UT]); vals[5] = gr_array_scalar(GR_F64, v[UT + 1]);
    CHECK_STATUS(sc_run(6, in, vals, 2, outs, res), GR_OK);
    c.p = p;
    ref_until_rop(&c, xs);
    for (k = 0; k < UT && !(xs[k] > 0.8); k++) CHECK(0.8 - xs[k] > 1e-3);   /* far from the threshold */
    k++;
    CHECK(k > 1 && k < UT && xs[k - 1] - 0.8 > 1e-3);
    SC_SHAPE(res[1], GR_F64, 1, k, -1, -1);
    SC_NEAR(res[1], k, xs, 1e-15);
    sc_fd_dir(ref_until_rop, &c, p, v, UT + 2, UT, fd);
    SC_SHAPE(res[0], GR_F64, 1, k, -1, -1);
    SC_NEAR(res[0], k, fd, 1e-7);
    sc_free(2, res); sc_free(6, vals);
    gr_graph_free(g);
}

/* a Hessian-vector product: the R-op of the gradient of an RNN's cost with respect to a parameter
   vector sliced into its two weight matrices (test_R_op_mitmot): it equals gr_hessian's matrix
   times the vector and the central differences of the gradient, which itself matches central
   differences of a plain-C forward pass */
enum { MT = 4, MB = 2, MP = 12 };
static gr_status st_sigmoid_rnn(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until;
    /* in: x_t (MB x 3), h_{t-1} (MB x 3) */
    out[0] = gr_sigmoid(gr_add(gr_dot(in[1], (gr_var *)user), in[0]));
    return GR_OK;
}
typedef struct sc_mm_ctx { const double *inpt, *target; double *pars; } sc_mm_ctx;
static double ref_mm_cost(void *vc) {
    const sc_mm_ctx *c = (const sc_mm_ctx *)vc;
    const double *W1 = c->pars, *W2 = c->pars + 3;
    double h[MB * 3], hn[MB * 3], cost = 0;
    int t, b, k, j;
    memset(h, 0, sizeof h);
    for (t = 0; t < MT; t++) {
        for (b = 0; b < MB; b++)
            for (k = 0; k < 3; k++) {
                double z = c->inpt[t * MB + b] * W1[k];
                for (j = 0; j < 3; j++) z += h[b * 3 + j] * W2[j * 3 + k];
                hn[b * 3 + k] = 1 / (1 + exp(-z));
                cost += (hn[b * 3 + k] - c->target[(t * MB + b) * 3 + k]) * (hn[b * 3 + k] - c->target[(t * MB + b) * 3 + k]);
            }
        memcpy(h, hn, sizeof h);
    }
    return cost / (MT * MB * 3);
}

TEST(test_scan_rop_of_grad) {
    gr_graph *g = gr_graph_new();
    gr_var *pars = gr_vector(g, GR_F64, "pars"), *inpt = gr_matrix(g, GR_F64, "inpt");
    gr_var *target = gr_tensor(g, GR_F64, 3, NULL, "target"), *pv = gr_vector(g, GR_F64, "p");
    gr_var *W1, *W2, *hidden, *r = NULL, *cost, *d, *Hp = NULL, *H = NULL, *outs[3], *in[4];
    int64_t s13[2] = { 1, 3 }, s33[2] = { 3, 3 }, sh[3] = { MT, MB, 3 }, sz[2] = { MB, 3 };
    double zeros[MB * 3], pv_[MP], pp[MP], iv[MT * MB], tv[MT * MB * 3], fd[MP], hp[MP], dplus[MP];
    gr_scan_seq s;
    gr_scan_out o;
    gr_fn *fgrad;
    sc_mm_ctx c;
    uint64_t seed = 33;
    gr_array *vals[4], *res[3], *gres[1];
    int i, j;
    const double h = 1e-6;
    memset(zeros, 0, sizeof zeros);
    W1 = gr_reshape(gr_slice(pars, 0, 0, 3, 1), 2, s13);
    W2 = gr_reshape(gr_slice(pars, 0, 3, MP, 1), 2, s33);
    hidden = gr_reshape(gr_dot(inpt, W1), 3, sh);
    s = sc_seq(hidden, 0, NULL);
    o = sc_out(sc_fconst(g, 2, sz, zeros), 0, NULL);
    CHECK_STATUS(gr_scan(st_sigmoid_rnn, W2, 1, &s, 1, &o, 0, NULL, NULL, &r), GR_OK);
    cost = gr_mean(gr_sqr(gr_sub(r, target)));
    d = gr_grad1(cost, pars);
    CHECK_STATUS(gr_rop(1, &d, 1, &pars, &pv, &Hp, NULL), GR_OK);
    CHECK_STATUS(gr_hessian(cost, 1, &pars, &H, NULL), GR_OK);
    outs[0] = d; outs[1] = Hp; outs[2] = H;
    sc_fill(&seed, pp, MP, -1, 1); sc_fill(&seed, pv_, MP, -1, 1);
    sc_fill(&seed, iv, MT * MB, -1, 1); sc_fill(&seed, tv, MT * MB * 3, 0, 1);
    in[0] = pars; in[1] = inpt; in[2] = target; in[3] = pv;
    vals[0] = sc_vec(MP, pp); vals[1] = sc_mat(MT * MB, 1, iv); vals[2] = sc_arr(3, sh, tv); vals[3] = sc_vec(MP, pv_);
    CHECK_STATUS(sc_run(4, in, vals, 3, outs, res), GR_OK);
    c.inpt = iv; c.target = tv; c.pars = pp;
    sc_fd(ref_mm_cost, &c, pp, MP, fd);
    SC_NEAR(res[0], MP, fd, 1e-8);
    /* Hp = H p, H symmetric */
    SC_SHAPE(res[2], GR_F64, 2, MP, MP, -1);
    for (i = 0; i < MP; i++) {
        hp[i] = 0;
        for (j = 0; j < MP; j++) {
            hp[i] += gr_array_get(res[2], i * MP + j) * pv_[j];
            CHECK_NEAR(gr_array_get(res[2], i * MP + j), gr_array_get(res[2], j * MP + i), 1e-12);
        }
    }
    SC_NEAR(res[1], MP, hp, 1e-10);
    /* central differences of the gradient along p */
    fgrad = gr_function(3, in, 1, &d, NULL);
    CHECK(fgrad != NULL);
    for (i = 0; i < MP; i++) ((double *)vals[0]->data)[i] = pp[i] + h * pv_[i];
    CHECK_STATUS(sc_call(fgrad, vals, 1, gres), GR_OK);
    for (i = 0; i < MP; i++) dplus[i] = gr_array_get(gres[0], i);
    sc_free(1, gres);
    for (i = 0; i < MP; i++) ((double *)vals[0]->data)[i] = pp[i] - h * pv_[i];
    CHECK_STATUS(sc_call(fgrad, vals, 1, gres), GR_OK);
    for (i = 0; i < MP; i++) fd[i] = (dplus[i] - gr_array_get(gres[0], i)) / (2 * h);
    SC_NEAR(res[1], MP, fd, 1e-6);
    sc_free(1, gres);
    gr_fn_free(fgrad);
    sc_free(3, res); sc_free(4, vals);
    gr_graph_free(g);
}

/* ---- gr_jacobian and gr_hessian through loops ----------------------------------------------------- */

/* x_t = u_t win + x_{t-1} w: J_u[t][s] = win w^(t-s) for s <= t, J_x0[t] = w^(t+1), J_w by its
   recurrence; the Jacobian of the tanh RNN's last state with respect to W against central differences */
TEST(test_scan_jacobian) {
    enum { T = 5 };
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_vector(g, GR_F64, "u"), *x0 = gr_scalar(g, GR_F64, "x0");
    gr_var *w_in = gr_scalar(g, GR_F64, "win"), *w = gr_scalar(g, GR_F64, "w"), *ns[2], *r = NULL, *wrt[3], *J[4], *in[4];
    gr_var *U = gr_matrix(g, GR_F64, "U"), *h0 = gr_vector(g, GR_F64, "h0"), *W = gr_matrix(g, GR_F64, "W"), *r2 = NULL;
    gr_scan_seq s = sc_seq(u, 0, NULL);
    gr_scan_out o = sc_out(x0, 0, NULL);
    double uv[T] = { 0.3, -0.2, 0.5, 0.1, -0.4 }, xv = 0.7, winv = 1.3, wv = 0.8, want[T * T], x[T], dw, prev;
    double p[RP], e[RP], fd[2 * RT * RN];
    uint64_t seed = 34;
    sc_rnn_ctx c;
    gr_array *vals[4], *res[4];
    int t, k, a;
    ns[0] = w_in; ns[1] = w;
    CHECK_STATUS(gr_scan(st_rnn, NULL, 1, &s, 1, &o, 2, ns, NULL, &r), GR_OK);
    wrt[0] = u; wrt[1] = x0; wrt[2] = w;
    CHECK_STATUS(gr_jacobian(r, 3, wrt, J, NULL), GR_OK);
    in[0] = u; in[1] = x0; in[2] = w_in; in[3] = w;
    vals[0] = sc_vec(T, uv); vals[1] = gr_array_scalar(GR_F64, xv);
    vals[2] = gr_array_scalar(GR_F64, winv); vals[3] = gr_array_scalar(GR_F64, wv);
    CHECK_STATUS(sc_run(4, in, vals, 3, J, res), GR_OK);
    for (t = 0; t < T; t++) for (k = 0; k < T; k++) want[t * T + k] = k <= t ? winv * pow(wv, t - k) : 0;
    SC_SHAPE(res[0], GR_F64, 2, T, T, -1);
    SC_NEAR(res[0], T * T, want, 1e-14);
    for (t = 0; t < T; t++) want[t] = pow(wv, t + 1);
    SC_SHAPE(res[1], GR_F64, 1, T, -1, -1);
    SC_NEAR(res[1], T, want, 1e-14);
    ref_rnn(T, uv, xv, winv, wv, 0, x);
    for (t = 0, dw = 0, prev = xv; t < T; t++) { dw = prev + wv * dw; want[t] = dw; prev = x[t]; }
    SC_NEAR(res[2], T, want, 1e-14);
    sc_free(3, res); sc_free(4, vals);
    /* the vector state: d o_last / d W, shape (RN, RN, RN) */
    s = sc_seq(U, 0, NULL);
    o = sc_out(h0, 0, NULL);
    CHECK_STATUS(gr_scan(st_tanh_w, NULL, 1, &s, 1, &o, 1, &W, NULL, &r2), GR_OK);
    CHECK_STATUS(gr_jacobian(gr_index(r2, 0, -1), 1, &W, &J[3], NULL), GR_OK);
    sc_fill(&seed, p, RP, -0.5, 0.5);
    in[0] = U; in[1] = h0; in[2] = W;
    vals[0] = sc_mat(RT, RN, p); vals[1] = sc_vec(RN, p + RT * RN); vals[2] = sc_mat(RN, RN, p + RT * RN + RN);
    CHECK_STATUS(sc_run(3, in, vals, 1, &J[3], res), GR_OK);
    SC_SHAPE(res[0], GR_F64, 3, RN, RN, RN);
    c.p = p;
    for (a = 0; a < RN * RN && res[0]; a++) {             /* column a: the derivative along W's element a */
        memset(e, 0, sizeof e);
        e[RT * RN + RN + a] = 1;
        sc_fd_dir(ref_tanh_w, &c, p, e, RP, 2 * RT * RN, fd);
        for (k = 0; k < RN; k++) CHECK_NEAR(gr_array_get(res[0], k * RN * RN + a), fd[(RT - 1) * RN + k], 1e-7);
    }
    sc_free(1, res); sc_free(3, vals);
    gr_graph_free(g);
}

/* sum_t x_t^2 of the linear recurrence: H_u = 2 J_u^T J_u, H_x0 = 2 sum_t w^(2t+2); and the Hessian
   through a loop inside a loop: cost = n sum(W^2) gives 2 n I (test_hessian_bug_grad_grad_two_scans) */
static gr_status st_inner_sum(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    /* in: s_{t-1}, W */
    out[0] = gr_add(in[0], gr_sum(gr_sqr(in[1])));
    return GR_OK;
}
static gr_status st_outer_sum(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    gr_array *zero = gr_array_scalar(GR_F64, 0);
    gr_var *ri = NULL;
    gr_scan_out o;
    gr_scan_opts opts = sc_opts(sc_iconst(g, 1));
    gr_status st;
    (void)until; (void)user;
    o = sc_out(gr_constant(g, zero), 0, NULL);
    gr_array_free(zero);
    /* in: s_{t-1}, W */
    st = gr_scan(st_inner_sum, NULL, 0, NULL, 1, &o, 1, &in[1], &opts, &ri);
    if (st != GR_OK) return st;
    out[0] = gr_add(in[0], gr_index(ri, 0, -1));
    return GR_OK;
}

TEST(test_scan_hessian) {
    enum { T = 5, NW = 8 };
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_vector(g, GR_F64, "u"), *x0 = gr_scalar(g, GR_F64, "x0");
    gr_var *w_in = gr_scalar(g, GR_F64, "win"), *w = gr_scalar(g, GR_F64, "w"), *ns[2], *r = NULL, *wrt[2], *H[3], *in[4];
    gr_var *Wv = gr_vector(g, GR_F64, "W"), *n = gr_scalar(g, GR_I64, "Nb_steps"), *ro = NULL;
    gr_array *zero = gr_array_scalar(GR_F64, 0);
    gr_scan_seq s = sc_seq(u, 0, NULL);
    gr_scan_out o = sc_out(x0, 0, NULL);
    gr_scan_opts opts = sc_opts(n);
    double uv[T] = { 0.3, -0.2, 0.5, 0.1, -0.4 }, winv = 1.3, wv = 0.8, Ju[T * T], want[NW * NW], hx = 0, ones[NW];
    gr_array *vals[4], *res[3];
    int t, k, j, call;
    ns[0] = w_in; ns[1] = w;
    CHECK_STATUS(gr_scan(st_rnn, NULL, 1, &s, 1, &o, 2, ns, NULL, &r), GR_OK);
    wrt[0] = u; wrt[1] = x0;
    CHECK_STATUS(gr_hessian(gr_sum(gr_sqr(r)), 2, wrt, H, NULL), GR_OK);
    in[0] = u; in[1] = x0; in[2] = w_in; in[3] = w;
    vals[0] = sc_vec(T, uv); vals[1] = gr_array_scalar(GR_F64, 0.7);
    vals[2] = gr_array_scalar(GR_F64, winv); vals[3] = gr_array_scalar(GR_F64, wv);
    CHECK_STATUS(sc_run(4, in, vals, 2, H, res), GR_OK);
    for (t = 0; t < T; t++) for (k = 0; k < T; k++) Ju[t * T + k] = k <= t ? winv * pow(wv, t - k) : 0;
    for (j = 0; j < T; j++)
        for (k = 0; k < T; k++) {
            want[j * T + k] = 0;
            for (t = 0; t < T; t++) want[j * T + k] += 2 * Ju[t * T + j] * Ju[t * T + k];
        }
    SC_SHAPE(res[0], GR_F64, 2, T, T, -1);
    SC_NEAR(res[0], T * T, want, 1e-13);
    for (t = 0; t < T; t++) hx += 2 * pow(wv, 2 * t + 2);
    SC_SHAPE(res[1], GR_F64, 0, -1, -1, -1);
    SC_NEAR(res[1], 1, &hx, 1e-13);
    sc_free(2, res); sc_free(4, vals);
    /* a loop in a loop */
    o = sc_out(gr_constant(g, zero), 0, NULL);
    CHECK_STATUS(gr_scan(st_outer_sum, NULL, 0, NULL, 1, &o, 1, &Wv, &opts, &ro), GR_OK);
    CHECK_STATUS(gr_hessian(gr_index(ro, 0, -1), 1, &Wv, &H[2], NULL), GR_OK);
    for (k = 0; k < NW; k++) ones[k] = 1;
    in[0] = Wv; in[1] = n;
    for (call = 0; call < 2; call++) {
        int64_t steps = call == 0 ? 1 : 3;
        vals[0] = sc_vec(NW, ones); vals[1] = gr_array_scalar(GR_I64, (double)steps);
        CHECK_STATUS(sc_run(2, in, vals, 1, &H[2], res), GR_OK);
        for (j = 0; j < NW * NW; j++) want[j] = j % (NW + 1) == 0 ? 2.0 * (double)steps : 0;
        SC_SHAPE(res[0], GR_F64, 2, NW, NW, -1);
        SC_NEAR(res[0], NW * NW, want, 1e-14);
        sc_free(1, res); sc_free(2, vals);
    }
    gr_array_free(zero);
    gr_graph_free(g);
}

/* ---- higher derivatives ----------------------------------------------------------------------------- */

/* x_t = x_{t-1}^2 four times: the last state is x^16; its first four derivatives are
   16 x^15, 240 x^14, 3360 x^13, 43680 x^12 (test_high_order_grad_sitsot, PyTensor#1975: the third was
   wrong) */
static gr_status st_square(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    out[0] = gr_pow(in[0], gr_const(g, 2.0));
    return GR_OK;
}
/* x_t = s_t ((x_{t-2} 0 + x_{t-1})^2) (z / 2): the second derivative through a mit-sot
   (test_second_derivative_disconnected_cost_with_mit_mot) */
static gr_status st_mitmot2(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    /* in: s_t, x_{t-2}, x_{t-1}, z */
    out[0] = gr_mul(gr_mul(in[0], gr_sqr(gr_add(gr_mul(in[1], gr_const(g, 0.0)), in[2]))),
                    gr_div(in[3], gr_const(g, 2.0)));
    return GR_OK;
}

TEST(test_scan_higher_order) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *r = NULL, *d[5], *outs[5];
    gr_var *seq = gr_vector(g, GR_F64, "seq"), *z = gr_scalar(g, GR_F64, "z"), *x0 = gr_vector(g, GR_F64, "x0");
    gr_var *r2 = NULL, *last, *wrt[3], *gw[3], *gsum, *gsum2, *in[3];
    static const int taps[2] = { -2, -1 };
    gr_scan_out o = sc_out(x, 0, NULL);
    gr_scan_seq s = sc_seq(seq, 0, NULL);
    gr_scan_opts opts = sc_opts(sc_iconst(g, 4));
    double xv = 0.95, want[5];
    static const double cases[5][5] = {   /* s0, s1, x0[0], x0[1], z */
        { 1, 1, 1, 1, 2 }, { 2, 2, 1, 1, 2 }, { 1, 1, 1, 1, 1 }, { 0.7, 1.3, 0.4, 0.9, 1.6 }, { -0.5, 2.0, 3.0, -0.8, 0.6 } };
    gr_array *vals[3], *res[5];
    int k;
    CHECK_STATUS(gr_scan(st_square, NULL, 0, NULL, 1, &o, 0, NULL, &opts, &r), GR_OK);
    d[0] = gr_index(r, 0, -1);
    for (k = 1; k < 5; k++) d[k] = gr_grad1(d[k - 1], x);
    vals[0] = gr_array_scalar(GR_F64, xv);
    CHECK_STATUS(sc_run(1, &x, vals, 5, d, res), GR_OK);
    want[0] = pow(xv, 16); want[1] = 16 * pow(xv, 15); want[2] = 240 * pow(xv, 14);
    want[3] = 3360 * pow(xv, 13); want[4] = 43680 * pow(xv, 12);
    for (k = 0; k < 5; k++) SC_NEAR(res[k], 1, want + k, 1e-12);
    sc_free(5, res); sc_free(1, vals);
    /* the mit-sot: last = s1 (z/2) (s0 (z/2) a^2)^2 with a = x0[1], so d last / d x0 = (0, 4 K a^3) and
       the second derivative is 12 K a^2, K = s1 s0^2 (z/2)^3 */
    opts = sc_opts(sc_iconst(g, 2));
    o = sc_out(x0, 2, taps);
    CHECK_STATUS(gr_scan(st_mitmot2, NULL, 1, &s, 1, &o, 1, &z, &opts, &r2), GR_OK);
    last = gr_index(r2, 0, -1);
    wrt[0] = x0; wrt[1] = z; wrt[2] = seq;
    CHECK_STATUS(gr_grad(last, 3, wrt, gw, NULL), GR_OK);
    gsum = gr_add(gr_add(gr_sum(gw[0]), gr_mul(gr_sum(gw[1]), gr_const(g, 0.0))), gr_mul(gr_sum(gw[2]), gr_const(g, 0.0)));
    outs[0] = gsum;
    outs[1] = gr_sum(gr_grad1(gsum, x0));
    gsum2 = gr_sum(gr_grad1(last, x0));                   /* leaving out z and seq */
    outs[2] = gsum2;
    outs[3] = gr_sum(gr_grad1(gsum2, x0));
    outs[4] = gw[0];
    in[0] = seq; in[1] = x0; in[2] = z;
    for (k = 0; k < 5; k++) {
        const double *cs = cases[k];
        double K = cs[1] * cs[0] * cs[0] * pow(cs[4] / 2, 3), a = cs[3], g1[2];
        vals[0] = sc_vec(2, cs); vals[1] = sc_vec(2, cs + 2); vals[2] = gr_array_scalar(GR_F64, cs[4]);
        CHECK_STATUS(sc_run(3, in, vals, 5, outs, res), GR_OK);
        want[0] = 4 * K * a * a * a; want[1] = 12 * K * a * a;
        SC_NEAR(res[0], 1, want, 1e-13);
        SC_NEAR(res[1], 1, want + 1, 1e-13);
        SC_NEAR(res[2], 1, want, 1e-13);
        SC_NEAR(res[3], 1, want + 1, 1e-13);
        g1[0] = 0; g1[1] = want[0];
        SC_NEAR(res[4], 2, g1, 1e-13);
        if (k == 0) { CHECK_NEAR(want[0], 4, 0); CHECK_NEAR(want[1], 12, 0); }   /* upstream's numbers */
        if (k == 1) CHECK_NEAR(want[1], 96, 0);
        if (k == 2) CHECK_NEAR(want[1], 1.5, 0);
        sc_free(5, res); sc_free(3, vals);
    }
    gr_graph_free(g);
}

/* second derivatives checked by gr_verify_grad: the cost is itself a sum of gradients through a loop
   (test_grad_sitsot, test_grad_mitsot, test_grad_grad_mitsot_sitsot) */
static gr_status st_pow_total(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    int three = *(const int *)user;
    gr_var *total;
    (void)until;
    /* in: m_{t-2}, (m_{t-1},) s_{t-1} */
    total = three ? gr_add(gr_add(in[0], in[1]), in[2]) : gr_add(in[0], in[1]);
    out[0] = gr_pow(total, gr_const(g, three ? 1.05 : 1.02));
    out[1] = out[0];
    return GR_OK;
}
static gr_var *build_sitsot_grad(gr_graph *g, gr_var *const *in, void *user) {
    gr_var *r = NULL;
    gr_scan_out o = sc_out(in[0], 0, NULL);
    gr_scan_opts opts = sc_opts(sc_iconst(g, 5));
    (void)user;
    if (gr_scan(st_double, NULL, 0, NULL, 1, &o, 0, NULL, &opts, &r) != GR_OK) return NULL;
    return gr_sum(gr_grad1(gr_sum(r), in[0]));
}
static gr_var *build_mitsot_grad(gr_graph *g, gr_var *const *in, void *user) {
    int three = *(const int *)user;
    static const int t2[1] = { -2 }, t21[2] = { -2, -1 };
    gr_var *r[2] = { NULL, NULL };
    gr_scan_out o[2];
    gr_scan_opts opts = sc_opts(sc_iconst(g, three ? 5 : 3));
    o[0] = three ? sc_out(in[0], 2, t21) : sc_out(in[0], 1, t2);
    o[1] = sc_out(in[1], 0, NULL);
    if (gr_scan(st_pow_total, user, 0, NULL, 2, o, 0, NULL, &opts, r) != GR_OK) return NULL;
    return gr_add(gr_sum(gr_grad1(gr_sum(r[0]), in[0])), gr_sum(gr_grad1(gr_sum(r[1]), in[1])));
}

TEST(test_scan_grad_grad) {
    uint64_t seed = 35;
    double m[6], v[3], want = 3 * (2 + 4 + 8 + 16 + 32);
    gr_array *pt[2], *res[1];
    gr_gradient_error err;
    int three;
    gr_graph *g = gr_graph_new();
    gr_var *inp = gr_vector(g, GR_F64, "inp"), *c;
    sc_fill(&seed, m, 6, 0.1, 1); sc_fill(&seed, v, 3, 0.1, 1);
    pt[0] = sc_vec(3, v);
    CHECK_STATUS(gr_verify_grad(build_sitsot_grad, NULL, 1, (const gr_array *const *)pt, NULL, &err), GR_OK);
    c = build_sitsot_grad(g, &inp, NULL);                 /* its value: sum_t 2^(t+1) per element */
    CHECK_STATUS(sc_run(1, &inp, pt, 1, &c, res), GR_OK);
    SC_NEAR(res[0], 1, &want, 0);
    sc_free(1, res);
    gr_array_free(pt[0]);
    gr_graph_free(g);
    for (three = 0; three < 2; three++) {
        pt[0] = sc_mat(2, 3, m); pt[1] = sc_vec(3, v);
        CHECK_STATUS(gr_verify_grad(build_mitsot_grad, &three, 2, (const gr_array *const *)pt, NULL, &err), GR_OK);
        gr_array_free(pt[0]); gr_array_free(pt[1]);
    }
}

/* a loop whose body differentiates outer variables: row i of the Hessian of
   y = fc1 (x * x) . (A x) times fc2, for each i of a sequence (test_inner_grad):
   d^2 y / dx_k dx_l = fc1 (2 d_kl (A x)_k + 2 x_k A_kl + 2 x_l A_lk) */
typedef struct sc_inner { gr_var *gy, *x, *fc2; } sc_inner;
static gr_status st_inner_grad(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    const sc_inner *c = (const sc_inner *)user;
    (void)g; (void)until;
    out[0] = gr_grad1(gr_mul(gr_take(c->gy, in[0], 0), c->fc2), c->x);
    return out[0] ? GR_OK : gr_graph_status(g);
}

TEST(test_scan_inner_grad) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *A = gr_matrix(g, GR_F64, "A"), *fc1, *y, *hy = NULL, *in[2];
    gr_array *a1 = gr_array_scalar(GR_F64, 0.5), *a2 = gr_array_scalar(GR_F64, 0.9);
    gr_scan_seq s;
    gr_scan_out o = sc_out(NULL, 0, NULL);
    sc_inner c;
    double cases[2][6] = { { 1, 1, 1, 1, 1, 0 }, { 0.3, -1.2, 0.7, -0.4, 1.5, 0.2 } }, want[4], ax[2];
    gr_array *vals[2], *res[1];
    int k, i, l;
    fc1 = gr_shared(g, a1, "fc1");
    c.fc2 = gr_shared(g, a2, "fc2");
    y = gr_mul(fc1, gr_dot(gr_mul(x, x), gr_dot(A, x)));
    c.gy = gr_grad1(y, x);
    c.x = x;
    s = sc_seq(gr_arange(g, 0, 2, 1, GR_I64), 0, NULL);
    CHECK_STATUS(gr_scan(st_inner_grad, &c, 1, &s, 1, &o, 0, NULL, NULL, &hy), GR_OK);
    in[0] = x; in[1] = A;
    for (k = 0; k < 2; k++) {
        const double *xv = cases[k], *Av = cases[k] + 2;
        vals[0] = sc_vec(2, xv); vals[1] = sc_mat(2, 2, Av);
        CHECK_STATUS(sc_run(2, in, vals, 1, &hy, res), GR_OK);
        sc_matvec(Av, xv, 2, 2, ax);
        for (i = 0; i < 2; i++)
            for (l = 0; l < 2; l++)
                want[2 * i + l] = 0.9 * 0.5 * ((i == l ? 2 * ax[i] : 0) + 2 * xv[i] * Av[2 * i + l] + 2 * xv[l] * Av[2 * l + i]);
        if (k == 0) { CHECK_NEAR(want[0], 3.6, 1e-15); CHECK_NEAR(want[1], 1.8, 1e-15); CHECK_NEAR(want[3], 0.9, 1e-15); }
        SC_SHAPE(res[0], GR_F64, 2, 2, 2, -1);
        SC_NEAR(res[0], 4, want, 1e-14);
        sc_free(1, res); sc_free(2, vals);
    }
    gr_array_free(a1); gr_array_free(a2);
    gr_graph_free(g);
}

/* ---- long loops ----------------------------------------------------------------------------------- */

/* a million steps forward (only the last row read) and a hundred thousand through the gradient:
   x_t = x_{t-1} + w, exact in binary floating point: x_last = x0 + n w, d x_last / d (x0, w) = (1, n) */
static gr_status st_add_w(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = gr_add(in[0], in[1]);
    return GR_OK;
}

TEST(test_scan_long) {
    gr_graph *g = gr_graph_new();
    gr_var *x0 = gr_scalar(g, GR_F64, "x0"), *w = gr_scalar(g, GR_F64, "w"), *r[2], *outs[3], *wrt[2], *in[2];
    gr_scan_out o = sc_out(x0, 0, NULL);
    gr_scan_opts opts = sc_opts(sc_iconst(g, 1000000));
    double want[3] = { 0.25 + 1e6 * 0.5, 1, 1e5 };
    gr_array *vals[2], *res[3];
    CHECK_STATUS(gr_scan(st_add_w, NULL, 0, NULL, 1, &o, 1, &w, &opts, &r[0]), GR_OK);
    opts = sc_opts(sc_iconst(g, 100000));
    CHECK_STATUS(gr_scan(st_add_w, NULL, 0, NULL, 1, &o, 1, &w, &opts, &r[1]), GR_OK);
    outs[0] = gr_index(r[0], 0, -1);
    wrt[0] = x0; wrt[1] = w;
    CHECK_STATUS(gr_grad(gr_index(r[1], 0, -1), 2, wrt, outs + 1, NULL), GR_OK);
    in[0] = x0; in[1] = w;
    vals[0] = gr_array_scalar(GR_F64, 0.25); vals[1] = gr_array_scalar(GR_F64, 0.5);
    CHECK_STATUS(sc_run(2, in, vals, 3, outs, res), GR_OK);
    SC_NEAR(res[0], 1, want, 0);
    SC_NEAR(res[1], 1, want + 1, 0);
    SC_NEAR(res[2], 1, want + 2, 0);
    sc_free(3, res); sc_free(2, vals);
    gr_graph_free(g);
}

/* ---- the history a gradient reads: kept behind the initial value, not joined to it ----------------- */

/* h_t = tanh(W h_{t-1} + u_t) over 3-vectors: in = (u_t, h_{t-1}, W) */
static gr_status st_front_rnn(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = gr_tanh(gr_add(gr_dot(in[2], in[1]), in[0]));
    return out[0] ? GR_OK : GR_ERR_NOMEM;
}
/* hand-written: hs (T + 1 rows: h0, then every step), sum(h_T)'s gradients dW and dh0 (BPTT) */
static void ref_front_rnn(int T, const double *u, const double *h0, const double *W, double *hs, double *dW, double *dh0) {
    double dh[3], dz[3], a[3];
    int t, i, j;
    memcpy(hs, h0, 3 * sizeof(double));
    for (t = 0; t < T; t++) {
        sc_matvec(W, hs + 3 * t, 3, 3, a);
        for (i = 0; i < 3; i++) hs[3 * (t + 1) + i] = tanh(a[i] + u[3 * t + i]);
    }
    for (i = 0; i < 9; i++) dW[i] = 0;
    for (i = 0; i < 3; i++) dh[i] = 1;
    for (t = T; t >= 1; t--) {
        for (i = 0; i < 3; i++) dz[i] = dh[i] * (1 - hs[3 * t + i] * hs[3 * t + i]);
        for (i = 0; i < 3; i++) for (j = 0; j < 3; j++) dW[3 * i + j] += dz[i] * hs[3 * (t - 1) + j];
        sc_vecmat(dz, W, 3, 3, dh);
    }
    memcpy(dh0, dh, 3 * sizeof(double));
}

/* The gradient's loop reads the states' history behind the initial value ([h0[None]; r]); a
   compiled function keeps that history with h0 as its row 0 instead of joining a copy (no Join in
   the function), with h0 an input or a constant, and other readers of r (sum(r)) read its rows from
   1; r returned keeps its T rows and the join. Values against hand-written BPTT at both optimize
   levels (GR_OPT_NONE does not narrow). */
TEST(test_scan_grad_history_front) {
    enum { T = 6 };
    static const int64_t s3 = 3, sW[2] = { 3, 3 };
    double u[3 * T], h0[3], W[9], hs[3 * (T + 1)], dW[9], dh0[3], sum_r = 0;
    uint64_t seed = 77;
    int form, level, i;
    sc_fill(&seed, u, 3 * T, -1, 1);
    sc_fill(&seed, h0, 3, -0.5, 0.5);
    sc_fill(&seed, W, 9, -0.6, 0.6);
    ref_front_rnn(T, u, h0, W, hs, dW, dh0);
    for (i = 3; i < 3 * (T + 1); i++) sum_r += hs[i];
    for (form = 0; form < 4; form++)         /* h0: an input; a constant; an input and sum(r) returned; r returned */
        for (level = 0; level < 2; level++) {
            gr_graph *g = gr_graph_new();
            gr_var *vu = gr_matrix(g, GR_F64, "u"), *vh0 = form == 1 ? sc_fconst(g, 1, &s3, h0) : gr_vector(g, GR_F64, "h0");
            gr_var *vW = gr_matrix(g, GR_F64, "W"), *r = NULL, *ins[3], *wrt[2], *outs[4];
            gr_scan_seq sq = sc_seq(vu, 0, NULL);
            gr_scan_out so = sc_out(vh0, 0, NULL);
            gr_array *vals[3], *res[4];
            gr_fn_opts fo;
            gr_fn *f;
            int n_in = form == 1 ? 2 : 3, n_out = form == 1 ? 1 : form == 0 ? 2 : 3;
            char buf[8192];
            ins[0] = vu; ins[1] = vW; ins[2] = vh0;
            vals[0] = sc_mat(T, 3, u); vals[1] = sc_arr(2, sW, W); vals[2] = sc_vec(3, h0);
            CHECK_STATUS(gr_scan(st_front_rnn, NULL, 1, &sq, 1, &so, 1, &vW, NULL, &r), GR_OK);
            wrt[0] = vW; wrt[1] = vh0;
            CHECK_STATUS(gr_grad(gr_sum(gr_index(r, 0, -1)), form == 1 ? 1 : 2, wrt, outs, NULL), GR_OK);
            if (form == 2) outs[2] = gr_sum(r);
            if (form == 3) outs[2] = r;
            memset(&fo, 0, sizeof fo);
            fo.optimize = level ? GR_OPT_FULL : GR_OPT_NONE;
            f = gr_function(n_in, ins, n_out, outs, &fo);
            CHECK(f != NULL);
            if (level && f) {
                FILE *fp = tmpfile();
                size_t n = 0;
                if (fp) { gr_fn_print(fp, f); rewind(fp); n = fread(buf, 1, sizeof buf - 1, fp); fclose(fp); }
                buf[n] = 0;
                CHECK_MSG((strstr(buf, "Join(") == NULL) == (form != 3), "form %d, the history joined or not:\n%s", form, buf);
            }
            if (f && sc_call(f, vals, n_out, res) == GR_OK) {
                SC_NEAR(res[0], 9, dW, 1e-12);
                if (form != 1) SC_NEAR(res[1], 3, dh0, 1e-12);
                if (form == 2) SC_NEAR(res[2], 1, &sum_r, 1e-12);
                if (form == 3) { SC_NEAR(res[2], 3 * T, hs + 3, 1e-12); SC_SHAPE(res[2], GR_F64, 2, T, 3, 0); }
                sc_free(n_out, res);
            }
            gr_fn_free(f);
            sc_free(3, vals);
            gr_graph_free(g);
        }
}

/* ---- checkpoints: the same bits as keeping every step ---------------------------------------------- */

/* builds the same loop for every checkpoints value of cks[] (with truncate_gradient tr) and returns,
   for each, its results followed by the gradients of cost(results) with respect to wrt[] in outs */
typedef gr_var *(*sc_cost_fn)(gr_var *const *r);
static int sc_build_ck(gr_scan_step step, void *user, int n_seq, const gr_scan_seq *seqs, int n_out,
                       const gr_scan_out *outs_, int n_ns, gr_var *const *ns, gr_var *n_steps, int backwards,
                       int64_t tr, int n_ck, const int64_t *cks, sc_cost_fn cost, int n_wrt, gr_var *const *wrt,
                       gr_var **outs) {
    int k, i, n = 0;
    for (k = 0; k < n_ck; k++) {
        gr_scan_opts opts = sc_opts(n_steps);
        gr_var *r[4];
        opts.go_backwards = backwards;
        opts.truncate_gradient = tr;
        opts.checkpoints = cks[k];
        CHECK_STATUS(gr_scan(step, user, n_seq, seqs, n_out, outs_, n_ns, ns, &opts, r), GR_OK);
        for (i = 0; i < n_out; i++) outs[n++] = r[i];
        CHECK_STATUS(gr_grad(cost(r), n_wrt, wrt, outs + n, NULL), GR_OK);
        n += n_wrt;
    }
    return n;
}
/* each group of per outputs is bit for bit the first group */
static void sc_check_same_groups(gr_array *const *res, int n_groups, int per, const char *what, int64_t len) {
    int k, i;
    for (k = 1; k < n_groups; k++)
        for (i = 0; i < per; i++) {
            int before = gt.checks_failed;
            SC_SAME(res[k * per + i], res[i]);
            if (gt.checks_failed != before)
                fprintf(stderr, "  (%s, length %lld, variant %d, output %d)\n", what, (long long)len, k, i);
        }
}

/* a tanh RNN with a bias: h_t = tanh(W . h_{t-1} + u_t) + 0.1 b */
static gr_status st_ck_rnn(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    /* in: u_t, h_{t-1}, W, b */
    out[0] = gr_add(gr_tanh(gr_add(gr_dot(in[2], in[1]), in[0])), gr_mul(gr_const(g, 0.1), in[3]));
    return GR_OK;
}
static gr_var *sc_cost_sin1(gr_var *const *r) { return gr_sum(gr_sin(r[0])); }
typedef struct sc_ck_ctx { int L; double *p; } sc_ck_ctx;
/* p = (u (L x 3), h0 (3), W (3 x 3), b (3)) */
static double ref_ck_rnn_cost(void *vc) {
    const sc_ck_ctx *c = (const sc_ck_ctx *)vc;
    const double *u = c->p, *W = c->p + 3 * c->L + 3, *b = W + 9;
    double h[3], a[3], cost = 0;
    int t, j;
    memcpy(h, c->p + 3 * c->L, sizeof h);
    for (t = 0; t < c->L; t++) {
        sc_matvec(W, h, 3, 3, a);
        for (j = 0; j < 3; j++) { h[j] = tanh(a[j] + u[3 * t + j]) + 0.1 * b[j]; cost += sin(h[j]); }
    }
    return cost;
}

TEST(test_scan_checkpoints_rnn) {
    static const int64_t cks[5] = { 0, 1, 2, 3, 5 }, lens[5] = { 1, 2, 4, 7, 10 }, cks_tr[2] = { 0, 2 };
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_matrix(g, GR_F64, "u"), *h0 = gr_vector(g, GR_F64, "h0"), *W = gr_matrix(g, GR_F64, "W");
    gr_var *b = gr_vector(g, GR_F64, "b"), *wrt[4], *ns[2], *outs[40];
    gr_scan_seq s = sc_seq(u, 0, NULL);
    gr_scan_out o = sc_out(h0, 0, NULL);
    gr_fn *f;
    sc_ck_ctx c;
    uint64_t seed = 36;
    double p[3 * 10 + 15], fd[3 * 10 + 15];
    gr_array *vals[4], *res[40];
    int n, n2, li;
    wrt[0] = u; wrt[1] = h0; wrt[2] = W; wrt[3] = b;
    ns[0] = W; ns[1] = b;
    n = sc_build_ck(st_ck_rnn, NULL, 1, &s, 1, &o, 2, ns, NULL, 0, 0, 5, cks, sc_cost_sin1, 4, wrt, outs);
    /* with truncate_gradient = 3: no checkpoints, then 2 */
    n2 = sc_build_ck(st_ck_rnn, NULL, 1, &s, 1, &o, 2, ns, NULL, 0, 3, 2, cks_tr, sc_cost_sin1, 4, wrt, outs + n);
    CHECK_EQ_INT(n, 25);
    f = gr_function(4, wrt, n + n2, outs, NULL);
    CHECK(f != NULL);
    c.p = p;
    for (li = 0; li < 5 && f; li++) {
        int L = (int)lens[li];
        sc_fill(&seed, p, 3 * L + 15, -0.8, 0.8);
        vals[0] = sc_mat(L, 3, p); vals[1] = sc_vec(3, p + 3 * L); vals[2] = sc_mat(3, 3, p + 3 * L + 3);
        vals[3] = sc_vec(3, p + 3 * L + 12);
        CHECK_STATUS(sc_call(f, vals, n + n2, res), GR_OK);
        sc_check_same_groups(res, 5, 5, "rnn", L);
        sc_check_same_groups(res + n, 2, 5, "rnn truncated", L);
        c.L = L;                                          /* and the gradient is the right one */
        sc_fd(ref_ck_rnn_cost, &c, p, 3 * L + 15, fd);
        SC_NEAR(res[1], 3 * L, fd, 1e-7);
        SC_NEAR(res[2], 3, fd + 3 * L, 1e-7);
        SC_NEAR(res[3], 9, fd + 3 * L + 3, 1e-7);
        SC_NEAR(res[4], 3, fd + 3 * L + 12, 1e-7);
        sc_free(n + n2, res); sc_free(4, vals);
    }
    gr_fn_free(f);
    gr_graph_free(g);
}

/* several taps: sequence taps {-2, 0, 1}, a mit-sot with taps {-3, -1}, a nit-sot, forwards and
   backwards:  s_t = tanh(W . s_{t-1} + u[t-2] s_{t-3}) + 0.5 u[t+1],  z_t = s_{t-3} u[t] */
static gr_status st_ck_taps(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    /* in: u[t-2], u[t], u[t+1], s_{t-3}, s_{t-1}, W */
    out[0] = gr_add(gr_tanh(gr_add(gr_dot(in[5], in[4]), gr_mul(in[0], in[3]))), gr_mul(gr_const(g, 0.5), in[2]));
    out[1] = gr_mul(in[3], in[1]);
    return GR_OK;
}
static gr_var *sc_cost_sin_sq(gr_var *const *r) { return gr_add(gr_sum(gr_sin(r[0])), gr_sum(gr_sqr(r[1]))); }

TEST(test_scan_checkpoints_taps) {
    static const int64_t cks[4] = { 0, 1, 2, 4 }, lens[4] = { 1, 3, 5, 8 };
    static const int staps[3] = { -2, 0, 1 }, otaps[2] = { -3, -1 };
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_matrix(g, GR_F64, "u"), *s0 = gr_matrix(g, GR_F64, "s0"), *W = gr_matrix(g, GR_F64, "W");
    gr_var *wrt[3], *outs[40];
    gr_scan_seq s = sc_seq(u, 3, staps);
    gr_scan_out o[2];
    gr_fn *f;
    uint64_t seed = 37;
    double p[2 * 11 + 6 + 4];
    gr_array *vals[3], *res[40];
    int n, n2, li;
    o[0] = sc_out(s0, 2, otaps); o[1] = sc_out(NULL, 0, NULL);
    wrt[0] = u; wrt[1] = s0; wrt[2] = W;
    n = sc_build_ck(st_ck_taps, NULL, 1, &s, 2, o, 1, &W, NULL, 0, 0, 4, cks, sc_cost_sin_sq, 3, wrt, outs);
    n2 = sc_build_ck(st_ck_taps, NULL, 1, &s, 2, o, 1, &W, NULL, 1, 0, 3, cks, sc_cost_sin_sq, 3, wrt, outs + n);
    CHECK_EQ_INT(n, 20);
    f = gr_function(3, wrt, n + n2, outs, NULL);
    CHECK(f != NULL);
    for (li = 0; li < 4 && f; li++) {
        int L = (int)lens[li];                            /* the sequence has L + 3 rows */
        sc_fill(&seed, p, 2 * (L + 3) + 6 + 4, -0.6, 0.6);
        vals[0] = sc_mat(L + 3, 2, p); vals[1] = sc_mat(3, 2, p + 2 * (L + 3)); vals[2] = sc_mat(2, 2, p + 2 * (L + 3) + 6);
        CHECK_STATUS(sc_call(f, vals, n + n2, res), GR_OK);
        SC_SHAPE(res[0], GR_F64, 2, L, 2, -1);
        sc_check_same_groups(res, 4, 5, "taps", L);
        sc_check_same_groups(res + n, 3, 5, "taps backwards", L);
        sc_free(n + n2, res); sc_free(3, vals);
    }
    gr_fn_free(f);
    gr_graph_free(g);
}

/* with until: x_t = tanh(a x_{t-1}) + u_t until x_t > thr, stopping early, at the first step or never;
   with and without truncate_gradient */
static gr_status st_ck_until(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)user;
    /* in: u_t, x_{t-1}, a, thr */
    out[0] = gr_add(gr_tanh(gr_mul(in[2], in[1])), in[0]);
    *until = gr_gt(out[0], in[3]);
    return GR_OK;
}
static gr_var *sc_cost_sq1(gr_var *const *r) { return gr_sum(gr_sqr(r[0])); }

TEST(test_scan_checkpoints_until) {
    static const int64_t cks[4] = { 0, 1, 2, 3 };
    static const double thrs[3] = { 1.2, 100, -100 };
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_vector(g, GR_F64, "u"), *x0 = gr_scalar(g, GR_F64, "x0"), *a = gr_scalar(g, GR_F64, "a");
    gr_var *thr = gr_scalar(g, GR_F64, "thr"), *wrt[3], *ns[2], *outs[32], *in[4];
    gr_scan_seq s = sc_seq(u, 0, NULL);
    gr_scan_out o = sc_out(x0, 0, NULL);
    gr_fn *f;
    double uv[9];
    gr_array *vals[4], *res[32];
    int n, n2, ti, t;
    int64_t rows[3];
    for (t = 0; t < 9; t++) uv[t] = 0.05 + 0.1 * t;
    wrt[0] = u; wrt[1] = x0; wrt[2] = a;
    ns[0] = a; ns[1] = thr;
    n = sc_build_ck(st_ck_until, NULL, 1, &s, 1, &o, 2, ns, NULL, 0, 0, 4, cks, sc_cost_sq1, 3, wrt, outs);
    n2 = sc_build_ck(st_ck_until, NULL, 1, &s, 1, &o, 2, ns, NULL, 0, 2, 3, cks, sc_cost_sq1, 3, wrt, outs + n);
    CHECK_EQ_INT(n, 16);
    in[0] = u; in[1] = x0; in[2] = a; in[3] = thr;
    f = gr_function(4, in, n + n2, outs, NULL);
    CHECK(f != NULL);
    for (ti = 0; ti < 3 && f; ti++) {
        double x = 0.2;
        for (rows[ti] = 0; rows[ti] < 9;) { x = tanh(0.9 * x) + uv[rows[ti]]; rows[ti]++; if (x > thrs[ti]) break; }
        vals[0] = sc_vec(9, uv); vals[1] = gr_array_scalar(GR_F64, 0.2); vals[2] = gr_array_scalar(GR_F64, 0.9);
        vals[3] = gr_array_scalar(GR_F64, thrs[ti]);
        CHECK_STATUS(sc_call(f, vals, n + n2, res), GR_OK);
        SC_SHAPE(res[0], GR_F64, 1, rows[ti], -1, -1);
        sc_check_same_groups(res, 4, 4, "until", rows[ti]);
        sc_check_same_groups(res + n, 3, 4, "until truncated", rows[ti]);
        sc_free(n + n2, res); sc_free(4, vals);
    }
    CHECK(rows[0] > 1 && rows[0] < 9);                    /* early, never, at once */
    CHECK_EQ_INT(rows[1], 9);
    CHECK_EQ_INT(rows[2], 1);
    gr_fn_free(f);
    gr_graph_free(g);
}

/* second derivatives through checkpointed gradients: for each checkpoints value, d c2 / d wrt where
   c2 = sum_k sum((d cost / d wrt_k)^2), against the same with every state kept (which the row specs
   check against central differences); a different graph computes them (the histories are
   recomputed), so equal to rounding */
static int sc_build_ck2(gr_scan_step step, int n_ns, gr_var *const *ns, int n_ck, const int64_t *cks, gr_var *u, gr_var *x0,
                        sc_cost_fn cost, int n_wrt, gr_var *const *wrt, gr_var **outs) {
    int k, i, n = 0;
    for (k = 0; k < n_ck; k++) {
        gr_scan_seq s = sc_seq(u, 0, NULL);
        gr_scan_out o = sc_out(x0, 0, NULL);
        gr_scan_opts opts = sc_opts(NULL);
        gr_var *r[1], *g1[4], *c2 = NULL;
        opts.checkpoints = cks[k];
        CHECK_STATUS(gr_scan(step, NULL, 1, &s, 1, &o, n_ns, ns, &opts, r), GR_OK);
        CHECK_STATUS(gr_grad(cost(r), n_wrt, wrt, g1, NULL), GR_OK);
        for (i = 0; i < n_wrt; i++) c2 = c2 ? gr_add(c2, gr_sum(gr_sqr(g1[i]))) : gr_sum(gr_sqr(g1[i]));
        CHECK_STATUS(gr_grad(c2, n_wrt, wrt, outs + n, NULL), GR_OK);
        n += n_wrt;
    }
    return n;
}
static void sc_check_close_groups(gr_array *const *res, int n_groups, int per, double tol) {
    int k, i;
    for (k = 1; k < n_groups; k++)
        for (i = 0; i < per; i++) {
            int64_t e;
            CHECK(res[k * per + i] && res[i] && res[k * per + i]->size == res[i]->size);
            if (!res[k * per + i] || !res[i] || res[k * per + i]->size != res[i]->size) continue;
            for (e = 0; e < res[i]->size; e++) {
                double a = gr_array_get(res[k * per + i], e), b = gr_array_get(res[i], e);
                CHECK_NEAR(a, b, tol * (1 + fabs(b)));
            }
        }
}

TEST(test_scan_checkpoints_second) {
    static const int64_t cks[4] = { 0, 1, 2, 3 };
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_matrix(g, GR_F64, "u"), *h0 = gr_vector(g, GR_F64, "h0"), *W = gr_matrix(g, GR_F64, "W");
    gr_var *b = gr_vector(g, GR_F64, "b"), *wrt[4], *ns[2], *outs[16];
    gr_var *v = gr_vector(g, GR_F64, "v"), *x0 = gr_scalar(g, GR_F64, "x0"), *a = gr_scalar(g, GR_F64, "a");
    gr_var *thr = gr_scalar(g, GR_F64, "thr"), *wrt2[3], *ns2[2], *outs2[12], *in2[4];
    gr_fn *f, *f2;
    gr_array *vals[4], *res[16];
    uint64_t seed = 99;
    double pu[21], ph[3], pw[9], pb[3], pv[9];
    int n, n2, t;
    /* the RNN of test_scan_checkpoints_rnn, 7 steps */
    wrt[0] = u; wrt[1] = h0; wrt[2] = W; wrt[3] = b;
    ns[0] = W; ns[1] = b;
    n = sc_build_ck2(st_ck_rnn, 2, ns, 4, cks, u, h0, sc_cost_sin1, 4, wrt, outs);
    CHECK_EQ_INT(n, 16);
    f = gr_function(4, wrt, n, outs, NULL);
    CHECK(f != NULL);
    sc_fill(&seed, pu, 21, -1, 1); sc_fill(&seed, ph, 3, -1, 1); sc_fill(&seed, pw, 9, -0.8, 0.8); sc_fill(&seed, pb, 3, -1, 1);
    vals[0] = sc_mat(7, 3, pu); vals[1] = sc_vec(3, ph); vals[2] = sc_mat(3, 3, pw); vals[3] = sc_vec(3, pb);
    if (f) {
        CHECK_STATUS(sc_call(f, vals, n, res), GR_OK);
        sc_check_close_groups(res, 4, 4, 1e-12);
        sc_free(n, res);
    }
    sc_free(4, vals);
    /* the while loop of test_scan_checkpoints_until: it stops early */
    wrt2[0] = v; wrt2[1] = x0; wrt2[2] = a;
    ns2[0] = a; ns2[1] = thr;
    n2 = sc_build_ck2(st_ck_until, 2, ns2, 4, cks, v, x0, sc_cost_sq1, 3, wrt2, outs2);
    CHECK_EQ_INT(n2, 12);
    in2[0] = v; in2[1] = x0; in2[2] = a; in2[3] = thr;
    f2 = gr_function(4, in2, n2, outs2, NULL);
    CHECK(f2 != NULL);
    for (t = 0; t < 9; t++) pv[t] = 0.05 + 0.1 * t;
    vals[0] = sc_vec(9, pv); vals[1] = gr_array_scalar(GR_F64, 0.2); vals[2] = gr_array_scalar(GR_F64, 0.9);
    vals[3] = gr_array_scalar(GR_F64, 1.2);
    if (f2) {
        CHECK_STATUS(sc_call(f2, vals, n2, res), GR_OK);
        sc_check_close_groups(res, 4, 3, 1e-12);
        sc_free(n2, res);
    }
    sc_free(4, vals);
    gr_fn_free(f);
    gr_fn_free(f2);
    gr_graph_free(g);
}

/* ---- errors (SEMANTICS 17.9) ------------------------------------------------------------------------ */

/* steps that go wrong in one way each */
static gr_status st_err_runtime(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)in; (void)out; (void)until; (void)user;
    return GR_ERR_RUNTIME;
}
static gr_status st_err_half(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = in[0];                                       /* out[1] left NULL */
    return GR_OK;
}
static gr_status st_err_shape(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    double v[4] = { 1, 2, 3, 4 };
    int64_t three = 3, four = 4;
    (void)in; (void)until; (void)user;
    out[0] = gr_add(sc_fconst(g, 1, &three, v), sc_fconst(g, 1, &four, v));
    return out[0] ? GR_OK : gr_graph_status(g);
}
static gr_status st_err_sum(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = gr_sum(in[0]);                               /* a 0-d step of a vector state */
    return GR_OK;
}
static gr_status st_err_cast(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until;
    out[0] = gr_cast(in[0], *(const gr_dtype *)user);
    return GR_OK;
}
static gr_status st_err_until(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)user;
    /* in: u_t, v_{t-1} (a vector) */
    out[0] = in[1];
    *until = gr_gt(in[1], gr_const(g, 0.0));              /* a vector condition */
    return GR_OK;
}
/* the first state tap, after one sequence tap */
static gr_status st_second(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = in[1];
    return GR_OK;
}
static gr_status st_err_grow(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    double one = 1;
    int64_t n1 = 1;
    gr_var *xs[2];
    (void)until; (void)user;
    xs[0] = in[0]; xs[1] = sc_fconst(g, 1, &n1, &one);
    out[0] = gr_concatenate(2, xs, 0);                    /* one element longer than the state */
    return GR_OK;
}
static gr_status st_nit_const(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)in; (void)until; (void)user;
    out[0] = gr_const(g, 1.0);
    return GR_OK;
}

/* gr_scan fails with want, sets every result to NULL and records the error on g (want_recorded) */
static void sc_expect_fail_at(const char *file, int line, gr_status got, gr_status want, gr_var *const *r, int n,
                              gr_graph *g, const char *name) {
    int i;
    if (got != want)
        gt_fail(file, line, "gr_scan: %s, want %s", gr_status_string(got), gr_status_string(want));
    for (i = 0; i < n; i++)
        if (r[i] != NULL) gt_fail(file, line, "result %d is not NULL", i);
    if (g) {
        if (gr_graph_status(g) != want)
            gt_fail(file, line, "the graph records %s, want %s", gr_status_string(gr_graph_status(g)),
                    gr_status_string(want));
        if (name && !strstr(gr_graph_message(g), name))
            gt_fail(file, line, "message \"%s\" lacks \"%s\"", gr_graph_message(g), name);
        gr_graph_clear_error(g);
    }
}
#define SC_EXPECT_FAIL(call, want, r, n, g, name) do { \
        int sc_i_; for (sc_i_ = 0; sc_i_ < (n); sc_i_++) (r)[sc_i_] = (gr_var *)&sc_i_; \
        sc_expect_fail_at(__FILE__, __LINE__, (call), (want), (r), (n), (g), (name)); } while (0)

TEST(test_scan_errors_build) {
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_vector(g, GR_F64, "u"), *x0 = gr_scalar(g, GR_F64, "x0"), *v0 = gr_vector(g, GR_F64, "v0");
    gr_var *nf = gr_scalar(g, GR_F64, "nf"), *nv = gr_vector(g, GR_I64, "nv"), *f32 = gr_scalar(g, GR_F32, "f32");
    gr_var *i64 = gr_scalar(g, GR_I64, "i64"), *r[2];
    static const int t0[1] = { 0 }, tmm[2] = { -1, -1 }, tp1[1] = { 1 }, tm20[2] = { -2, 0 }, tm1[1] = { -1 };
    gr_scan_seq s = sc_seq(u, 0, NULL), sbad;
    gr_scan_out o = sc_out(x0, 0, NULL), o2[2];
    gr_scan_opts named = sc_opts(NULL), opts;
    gr_dtype to_i64 = GR_I64, to_f64 = GR_F64;
    named.name = "myloop";
    /* neither sequences nor n_steps */
    SC_EXPECT_FAIL(gr_scan(st_plus1, NULL, 0, NULL, 1, &o, 0, NULL, &named, r), GR_ERR_VALUE, r, 1, g, "myloop");
    /* output taps >= 0 or repeated */
    o = sc_out(v0, 1, t0);
    SC_EXPECT_FAIL(gr_scan(st_second, NULL, 1, &s, 1, &o, 0, NULL, &named, r), GR_ERR_VALUE, r, 1, g, "myloop");
    o = sc_out(v0, 2, tmm);
    SC_EXPECT_FAIL(gr_scan(st_second, NULL, 1, &s, 1, &o, 0, NULL, NULL, r), GR_ERR_VALUE, r, 1, g, NULL);
    o = sc_out(v0, 1, tp1);
    SC_EXPECT_FAIL(gr_scan(st_second, NULL, 1, &s, 1, &o, 0, NULL, NULL, r), GR_ERR_VALUE, r, 1, g, NULL);
    o = sc_out(v0, 2, tm20);
    SC_EXPECT_FAIL(gr_scan(st_second, NULL, 1, &s, 1, &o, 0, NULL, NULL, r), GR_ERR_VALUE, r, 1, g, NULL);
    /* n_steps not a 0-d integer */
    o = sc_out(x0, 0, NULL);
    opts = sc_opts(nf);
    SC_EXPECT_FAIL(gr_scan(st_plus1, NULL, 0, NULL, 1, &o, 0, NULL, &opts, r), GR_ERR_TYPE, r, 1, g, NULL);
    opts = sc_opts(nv);
    SC_EXPECT_FAIL(gr_scan(st_plus1, NULL, 0, NULL, 1, &o, 0, NULL, &opts, r), GR_ERR_TYPE, r, 1, g, NULL);
    /* a step of the wrong ndim or dtype for its state */
    o = sc_out(v0, 0, NULL);
    SC_EXPECT_FAIL(gr_scan(st_err_sum, NULL, 1, &s, 1, &o, 0, NULL, NULL, r), GR_ERR_TYPE, r, 1, g, NULL);
    o = sc_out(x0, 0, NULL);
    SC_EXPECT_FAIL(gr_scan(st_err_cast, &to_i64, 1, &s, 1, &o, 0, NULL, NULL, r), GR_ERR_TYPE, r, 1, g, NULL);
    o = sc_out(f32, 0, NULL);
    SC_EXPECT_FAIL(gr_scan(st_err_cast, &to_f64, 1, &s, 1, &o, 0, NULL, NULL, r), GR_ERR_TYPE, r, 1, g, NULL);
    o = sc_out(i64, 0, NULL);
    SC_EXPECT_FAIL(gr_scan(st_err_cast, &to_f64, 1, &s, 1, &o, 0, NULL, NULL, r), GR_ERR_TYPE, r, 1, g, NULL);
    /* a condition that is not 0-d */
    o = sc_out(v0, 0, NULL);
    SC_EXPECT_FAIL(gr_scan(st_err_until, NULL, 1, &s, 1, &o, 0, NULL, NULL, r), GR_ERR_TYPE, r, 1, g, NULL);
    /* the step's own failures: its status, a NULL output, an op that failed inside it */
    o = sc_out(x0, 0, NULL);
    SC_EXPECT_FAIL(gr_scan(st_err_runtime, NULL, 1, &s, 1, &o, 0, NULL, &named, r), GR_ERR_RUNTIME, r, 1, g, "myloop");
    o2[0] = sc_out(x0, 0, NULL); o2[1] = sc_out(NULL, 0, NULL);
    SC_EXPECT_FAIL(gr_scan(st_err_half, NULL, 1, &s, 2, o2, 0, NULL, NULL, r), GR_ERR_VALUE, r, 2, g, NULL);
    o = sc_out(NULL, 0, NULL);
    SC_EXPECT_FAIL(gr_scan(st_err_shape, NULL, 1, &s, 1, &o, 0, NULL, NULL, r), GR_ERR_SHAPE, r, 1, g, NULL);
    /* bad arguments */
    o = sc_out(x0, 0, NULL);
    SC_EXPECT_FAIL(gr_scan(NULL, NULL, 1, &s, 1, &o, 0, NULL, NULL, r), GR_ERR_VALUE, r, 1, g, NULL);
    SC_EXPECT_FAIL(gr_scan(st_plus1, NULL, -1, &s, 1, &o, 0, NULL, NULL, r), GR_ERR_VALUE, r, 1, g, NULL);
    SC_EXPECT_FAIL(gr_scan(st_plus1, NULL, 1, NULL, 1, &o, 0, NULL, NULL, r), GR_ERR_VALUE, r, 1, g, NULL);
    SC_EXPECT_FAIL(gr_scan(st_plus1, NULL, 1, &s, 1, &o, 1, NULL, NULL, r), GR_ERR_VALUE, r, 1, g, NULL);
    SC_EXPECT_FAIL(gr_scan(st_plus1, NULL, 1, &s, -1, &o, 0, NULL, NULL, r), GR_ERR_VALUE, r, 0, g, NULL);
    SC_EXPECT_FAIL(gr_scan(st_plus1, NULL, 1, &s, 1, NULL, 0, NULL, NULL, r), GR_ERR_VALUE, r, 1, g, NULL);
    sbad = sc_seq(u, 2, NULL);
    SC_EXPECT_FAIL(gr_scan(st_first, NULL, 1, &sbad, 1, &o, 0, NULL, NULL, r), GR_ERR_VALUE, r, 1, g, NULL);
    sbad = sc_seq(u, -1, tm1);
    SC_EXPECT_FAIL(gr_scan(st_first, NULL, 1, &sbad, 1, &o, 0, NULL, NULL, r), GR_ERR_VALUE, r, 1, g, NULL);
    o = sc_out(x0, 1, NULL);
    SC_EXPECT_FAIL(gr_scan(st_first, NULL, 1, &s, 1, &o, 0, NULL, NULL, r), GR_ERR_VALUE, r, 1, g, NULL);
    /* a NULL sequence (a failed builder upstream): a failure and NULL results */
    sbad = sc_seq(NULL, 0, NULL);
    o = sc_out(x0, 0, NULL);
    r[0] = x0;
    CHECK(gr_scan(st_first, NULL, 1, &sbad, 1, &o, 0, NULL, NULL, r) != GR_OK);
    CHECK(r[0] == NULL);
    gr_graph_clear_error(g);
    /* after all this, the same arguments done right still work */
    o = sc_out(x0, 0, NULL);
    CHECK_STATUS(gr_scan(st_plus1, NULL, 0, NULL, 1, &o, 0, NULL, NULL, r), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    opts = sc_opts(sc_iconst(g, 2));
    CHECK_STATUS(gr_scan(st_plus1, NULL, 0, NULL, 1, &o, 0, NULL, &opts, r), GR_OK);
    CHECK(r[0] != NULL);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    gr_graph_free(g);
}

/* the graph that records an error: the first non-NULL of the sequences, the initial values, the
   non-sequences, n_steps; with none of them nothing is recorded anywhere */
TEST(test_scan_error_graph) {
    gr_graph *g = gr_graph_new(), *h = gr_graph_new();
    gr_var *x0 = gr_scalar(g, GR_F64, "x0"), *ns = gr_scalar(h, GR_F64, "ns"), *nf = gr_scalar(h, GR_F64, "nf"), *r[1];
    gr_scan_out onit = sc_out(NULL, 0, NULL), o = sc_out(x0, 0, NULL);
    gr_scan_opts opts = sc_opts(nf);
    /* only n_steps, of the wrong dtype: recorded on its graph */
    SC_EXPECT_FAIL(gr_scan(st_nit_const, NULL, 0, NULL, 1, &onit, 0, NULL, &opts, r), GR_ERR_TYPE, r, 1, h, NULL);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    /* only a non-sequence, no n_steps: on the non-sequence's graph */
    SC_EXPECT_FAIL(gr_scan(st_first, NULL, 0, NULL, 1, &onit, 1, &ns, NULL, r), GR_ERR_VALUE, r, 1, h, NULL);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    /* an initial value, no n_steps: on the initial's graph */
    SC_EXPECT_FAIL(gr_scan(st_plus1, NULL, 0, NULL, 1, &o, 0, NULL, NULL, r), GR_ERR_VALUE, r, 1, g, NULL);
    CHECK_STATUS(gr_graph_status(h), GR_OK);
    /* nothing at all */
    SC_EXPECT_FAIL(gr_scan(st_nit_const, NULL, 0, NULL, 1, &onit, 0, NULL, NULL, r), GR_ERR_VALUE, r, 1, NULL, NULL);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    CHECK_STATUS(gr_graph_status(h), GR_OK);
    gr_graph_free(g);
    gr_graph_free(h);
}

/* errors found when the function is called: a sequence too short for n_steps, a negative n_steps, a
   step whose shape differs from its state's, a mit-sot initial with too few rows; the function keeps
   working afterwards */
TEST(test_scan_errors_call) {
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_vector(g, GR_F64, "u"), *x0 = gr_scalar(g, GR_F64, "x0"), *n = gr_scalar(g, GR_I64, "n");
    gr_var *v0 = gr_vector(g, GR_F64, "v0"), *m0 = gr_matrix(g, GR_F64, "m0");
    gr_var *r[3] = { NULL, NULL, NULL }, *ns[2], *in[3];
    static const int taps[2] = { -3, -1 };
    gr_scan_seq s = sc_seq(u, 0, NULL);
    gr_scan_out o = sc_out(x0, 0, NULL);
    gr_scan_opts opts = sc_opts(n);
    double uv[4] = { 1, 2, 3, 4 }, vv[6] = { 1, 2, 3, 4, 5, 6 }, want[4];
    gr_array *vals[3], *res[1];
    gr_fn *f;
    const gr_array *out[1];
    int t;
    opts.name = "myloop";
    ns[0] = sc_f0(g, 1);                                  /* W_in */
    ns[1] = sc_f0(g, 2);                                  /* W */
    CHECK_STATUS(gr_scan(st_rnn, NULL, 1, &s, 1, &o, 2, ns, &opts, &r[0]), GR_OK);
    in[0] = u; in[1] = x0; in[2] = n;
    f = gr_function(3, in, 1, &r[0], NULL);
    CHECK(f != NULL);
    vals[0] = sc_vec(4, uv); vals[1] = gr_array_scalar(GR_F64, 0.5);
    vals[2] = gr_array_scalar(GR_I64, 6);
    CHECK_STATUS(gr_call(f, (const gr_array *const *)vals, out), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_fn_message(f), "myloop");
    gr_array_free(vals[2]);
    vals[2] = gr_array_scalar(GR_I64, -1);
    CHECK_STATUS(gr_call(f, (const gr_array *const *)vals, out), GR_ERR_VALUE);
    gr_array_free(vals[2]);
    vals[2] = gr_array_scalar(GR_I64, 3);
    CHECK_STATUS(sc_call(f, vals, 1, res), GR_OK);
    ref_rnn(3, uv, 0.5, 1, 2, 0, want);
    SC_NEAR(res[0], 3, want, 0);
    CHECK(strcmp(gr_fn_message(f), "") == 0);
    sc_free(1, res); sc_free(3, vals);
    gr_fn_free(f);
    /* a state that grows */
    o = sc_out(v0, 0, NULL);
    opts = sc_opts(sc_iconst(g, 2));
    CHECK_STATUS(gr_scan(st_err_grow, NULL, 0, NULL, 1, &o, 0, NULL, &opts, &r[1]), GR_OK);
    f = gr_function(1, &v0, 1, &r[1], NULL);
    CHECK(f != NULL);
    vals[0] = sc_vec(3, vv);
    CHECK_STATUS(gr_call(f, (const gr_array *const *)vals, out), GR_ERR_SHAPE);
    sc_free(1, vals);
    gr_fn_free(f);
    /* a mit-sot with taps {-3, -1} needs 3 initial rows */
    o = sc_out(m0, 2, taps);
    CHECK_STATUS(gr_scan(st_first, NULL, 0, NULL, 1, &o, 0, NULL, &opts, &r[2]), GR_OK);
    f = gr_function(1, &m0, 1, &r[2], NULL);
    CHECK(f != NULL);
    vals[0] = sc_mat(2, 3, vv);
    CHECK_STATUS(gr_call(f, (const gr_array *const *)vals, out), GR_ERR_SHAPE);
    sc_free(1, vals);
    vals[0] = sc_mat(3, 2, vv);                           /* 3 rows: s_t = s_{t-3} */
    CHECK_STATUS(sc_call(f, vals, 1, res), GR_OK);
    SC_SHAPE(res[0], GR_F64, 2, 2, 2, -1);
    for (t = 0; t < 4; t++) want[t] = vv[t];
    SC_NEAR(res[0], 4, want, 0);
    sc_free(1, res); sc_free(1, vals);
    gr_fn_free(f);
    gr_graph_free(g);
}

/* gr_print names the loop and shows its body */
TEST(test_scan_print) {
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_matrix(g, GR_F64, "U"), *h0 = gr_vector(g, GR_F64, "h0"), *W = gr_matrix(g, GR_F64, "W"), *r = NULL;
    gr_scan_seq s = sc_seq(u, 0, NULL);
    gr_scan_out o = sc_out(h0, 0, NULL);
    gr_scan_opts opts = sc_opts(NULL);
    FILE *fp = tmpfile();
    char buf[8192];
    size_t n;
    opts.name = "rnn_fn";
    CHECK_STATUS(gr_scan(st_tanh_w, NULL, 1, &s, 1, &o, 1, &W, &opts, &r), GR_OK);
    CHECK(fp != NULL && r != NULL);
    if (fp && r) {
        gr_print(fp, r);
        rewind(fp);
        n = fread(buf, 1, sizeof buf - 1, fp);
        buf[n] = 0;
        CHECK_CONTAINS(buf, "rnn_fn");
        CHECK_CONTAINS(buf, "Tanh");
        CHECK_CONTAINS(buf, "h0");
    }
    if (fp) fclose(fp);
    gr_graph_free(g);
}

/* ==== the rows' cases (tests/ops.h) ====================================================================== */

/* The derivative specs build loops of the spec's inputs: an RNN h_t = tanh(u_t + h_{t-1} W) over
   u (4,3) from h0 (3,) with W (3,3) read as a non-sequence (forwards, backwards, checkpointed), and
   a loop with sequence taps {-1, +1} and state taps {-2, -1}. The gradient with respect to a
   sequence is a ScanPlace of the rows the gradient's loop wrote, at offsets computed from Rows; the
   gradient of that gradient is a ScanGather. */
typedef struct gtsc_opt { int backwards; int64_t checkpoints; } gtsc_opt;
static const gtsc_opt gtsc_fwd = { 0, 0 }, gtsc_bwd = { 1, 0 }, gtsc_ckp = { 0, 2 };

static gr_status st_rnn3(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = gr_tanh(gr_add(in[0], gr_dot(in[1], in[2])));
    return GR_OK;
}
/* y_t = tanh(u[t-1] * u[t+1] + 0.5 y_{t-2} - 0.3 sin(y_{t-1})) */
static gr_status st_taps4(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    out[0] = gr_tanh(gr_sub(gr_add(gr_mul(in[0], in[1]), gr_mul(gr_const(g, 0.5), in[2])), gr_mul(gr_const(g, 0.3), gr_sin(in[3]))));
    return GR_OK;
}
static gr_var *gtsc_b_rnn(gr_graph *g, gr_var *const *x, void *u) {
    const gtsc_opt *o = (const gtsc_opt *)u;
    gr_scan_seq s = sc_seq(x[0], 0, NULL);
    gr_scan_out out = sc_out(x[1], 0, NULL);
    gr_scan_opts opts = sc_opts(NULL);
    gr_var *r = NULL;
    (void)g;
    opts.go_backwards = o->backwards;
    opts.checkpoints = o->checkpoints;
    if (gr_scan(st_rnn3, NULL, 1, &s, 1, &out, 1, &x[2], &opts, &r) != GR_OK) return NULL;
    return r;
}
static gr_var *gtsc_b_taps(gr_graph *g, gr_var *const *x, void *u) {
    static const int st[2] = { -1, 1 }, ot[2] = { -2, -1 };
    gr_scan_seq s = sc_seq(x[0], 2, st);
    gr_scan_out out = sc_out(x[1], 2, ot);
    gr_scan_opts opts = sc_opts(NULL);
    gr_var *r = NULL;
    (void)g;
    opts.go_backwards = u ? ((const gtsc_opt *)u)->backwards : 0;
    opts.checkpoints = u ? ((const gtsc_opt *)u)->checkpoints : 0;
    if (gr_scan(st_taps4, NULL, 1, &s, 1, &out, 0, NULL, &opts, &r) != GR_OK) return NULL;
    return r;
}
/* the gradient of sum(sin(loop)) with respect to the sequence: ScanPlace (and Rows); user NULL: the
   rnn, else the taps loop in that direction */
static gr_var *gtsc_b_seqgrad(gr_graph *g, gr_var *const *x, void *u) {
    gr_var *r = u ? gtsc_b_taps(g, x, u) : gtsc_b_rnn(g, x, (void *)&gtsc_fwd), *d = NULL;
    if (!r || gr_grad(gr_sum(gr_sin(r)), 1, &x[0], &d, NULL) != GR_OK) return NULL;
    return d;
}

#define GTSC_RNN { GTD_IN(2, 4, 3, -1, 1), GTD_IN(1, 3, 0, -1, 1), GTD_IN(2, 3, 3, -0.8, 0.8) }
#define GTSC_TAPS { GTD_IN(2, 6, 2, -1, 1), GTD_IN(2, 2, 2, -1, 1) }
static const gtd_spec specs_Scan[] = {
    { "Scan", "rnn tanh(u_t + h W), u (4,3) h0 (3,) W (3,3)", gtsc_b_rnn, (void *)&gtsc_fwd, 3, GTSC_RNN, GTD_GRADGRAD },
    { "Scan", "rnn, go_backwards", gtsc_b_rnn, (void *)&gtsc_bwd, 3, GTSC_RNN, 0 },
    { "Scan", "rnn, checkpoints 2", gtsc_b_rnn, (void *)&gtsc_ckp, 3, GTSC_RNN, GTD_GRADGRAD },
    { "Scan", "taps u[t-1] u[t+1], y[t-2] y[t-1], u (6,2) y0 (2,2)", gtsc_b_taps, NULL, 2, GTSC_TAPS, GTD_GRADGRAD },
    { "Scan", "taps, go_backwards", gtsc_b_taps, (void *)&gtsc_bwd, 2, GTSC_TAPS, 0 },
    { "Scan", "taps, checkpoints 2", gtsc_b_taps, (void *)&gtsc_ckp, 2, GTSC_TAPS, GTD_GRADGRAD },
    GTD_END
};
static const gtd_spec specs_Rows[] = {
    { "Rows", "d sum(sin(rnn)) / du: offsets from Rows", gtsc_b_seqgrad, NULL, 3, GTSC_RNN, 0 },
    GTD_END
};
static const gtd_spec specs_ScanPlace[] = {
    { "ScanPlace", "d sum(sin(rnn)) / du", gtsc_b_seqgrad, NULL, 3, GTSC_RNN, 0 },
    { "ScanPlace", "d sum(sin(taps loop)) / du, taps -1 +1", gtsc_b_seqgrad, (void *)&gtsc_fwd, 2, GTSC_TAPS, 0 },
    { "ScanPlace", "d sum(sin(taps loop)) / du, backwards", gtsc_b_seqgrad, (void *)&gtsc_bwd, 2, GTSC_TAPS, 0 },
    GTD_END
};
static const gtd_spec specs_ScanGather[] = {
    { "ScanGather", "the gradient of d sum(sin(taps loop)) / du", gtsc_b_seqgrad, (void *)&gtsc_fwd, 2, GTSC_TAPS, GTD_GRADGRAD },
    GTD_END
};

/* how many nodes of op `name` the graph of v holds (a walk with an explicit stack) */
enum { GTSC_WALK = 4096 };
static int gtsc_count_op(gr_var *v, const char *name) {
    gr_var *stack[GTSC_WALK];
    const gr_node *seen[GTSC_WALK];
    int sp = 0, n_seen = 0, count = 0, i, j;
    stack[sp++] = v;
    while (sp > 0) {
        gr_var *x = stack[--sp];
        const gr_node *nd = x ? gr_var_owner(x) : NULL;
        if (!nd) continue;
        for (j = 0; j < n_seen && seen[j] != nd; j++) {}
        if (j < n_seen || n_seen == GTSC_WALK) continue;
        seen[n_seen++] = nd;
        count += strcmp(gr_node_op(nd)->name, name) == 0;
        for (i = 0; i < gr_node_n_inputs(nd) && sp < GTSC_WALK; i++) stack[sp++] = gr_node_input(nd, i);
    }
    return count;
}

/* A linear loop with sequence taps {-1, +1}: y_t = a u[t] + b u[t+2] (t < T = L - 2), and the cost
   C = sum_t w_t y_t. Closed forms: dC/du_j = sum over the steps t reading row j of a w_t or b w_t
   (forwards step t reads rows t and t + 2; backwards, each tap's rows reversed as in Aesara, L-3-t
   and L-1-t), which is a ScanPlace of the
   gradient loop's rows at offsets made from Rows; and for D = sum_j c_j dC/du_j,
   dD/dw_t = a c_lo(t) + b c_hi(t), a ScanGather of c. */
typedef struct gtsc_lin { double a, b; } gtsc_lin;
static gr_status st_lin_taps(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    const gtsc_lin *l = (const gtsc_lin *)user;
    (void)until;
    out[0] = gr_add(gr_mul(gr_const(g, l->a), in[0]), gr_mul(gr_const(g, l->b), in[1]));
    return GR_OK;
}
static void gtsc_place_gather(int which) {
    static const int taps[2] = { -1, 1 };
    enum { L = 7, T = L - 2 };
    gtsc_lin lin = { 1.5, -0.75 };
    uint64_t seed = 404;
    double uv[L], wv[T], cv[L], want_du[L], want_dw[T];
    int back, dyn, j, t;
    sc_fill(&seed, uv, L, -1, 1);
    sc_fill(&seed, wv, T, -1, 1);
    sc_fill(&seed, cv, L, -1, 1);
    for (back = 0; back < 2; back++)
        for (dyn = 0; dyn < 2; dyn++) {
            int64_t ls = L, ts = T;
            gr_graph *g = gr_graph_new();
            gr_var *u = gtf_input(g, GR_F64, 1, &ls, dyn, "u"), *w = gtf_input(g, GR_F64, 1, &ts, dyn, "w");
            gr_var *c = gtf_input(g, GR_F64, 1, &ls, dyn, "c"), *r = NULL, *du = NULL, *dw = NULL, *in[3], *outs[2];
            gr_scan_seq s = sc_seq(u, 2, taps);
            gr_scan_out o = sc_out(NULL, 0, NULL);
            gr_scan_opts opts = sc_opts(NULL);
            gr_array *vals[3], *res[2] = { NULL, NULL };
            opts.go_backwards = back;
            for (j = 0; j < L; j++) want_du[j] = 0;
            for (t = 0; t < T; t++) {
                int lo = back ? L - 3 - t : t, hi = back ? L - 1 - t : t + 2;
                want_du[lo] += lin.a * wv[t];
                want_du[hi] += lin.b * wv[t];
                want_dw[t] = lin.a * cv[lo] + lin.b * cv[hi];
            }
            CHECK_STATUS(gr_scan(st_lin_taps, &lin, 1, &s, 1, &o, 0, NULL, &opts, &r), GR_OK);
            CHECK_STATUS(gr_grad(gr_sum(gr_mul(r, w)), 1, &u, &du, NULL), GR_OK);
            CHECK_STATUS(gr_grad(gr_sum(gr_mul(du, c)), 1, &w, &dw, NULL), GR_OK);
            if (which == 0 && back) CHECK_MSG(gtsc_count_op(du, "Rows") >= 1, "no Rows in the gradient of a backwards loop");
            if (which == 1) CHECK_MSG(gtsc_count_op(du, "ScanPlace") >= 1, "no ScanPlace in the gradient of a loop");
            if (which == 2) CHECK_MSG(gtsc_count_op(dw, "ScanGather") >= 1, "no ScanGather in the gradient of a gradient");
            in[0] = u; in[1] = w; in[2] = c;
            vals[0] = sc_vec(L, uv); vals[1] = sc_vec(T, wv); vals[2] = sc_vec(L, cv);
            outs[0] = du; outs[1] = dw;
            CHECK_STATUS(sc_run(3, in, vals, 2, outs, res), GR_OK);
            SC_NEAR(res[0], L, want_du, 1e-15);
            SC_NEAR(res[1], T, want_dw, 1e-15);
            sc_free(2, res); sc_free(3, vals);
            gr_graph_free(g);
        }
}
TEST(gtsc_op_Rows) { gtsc_place_gather(0); }
TEST(gtsc_op_ScanPlace) { gtsc_place_gather(1); }
TEST(gtsc_op_ScanGather) { gtsc_place_gather(2); }

GT_CASES(Scan) = {
    GT_VALUES(test_scan_generator),
    GT_VALUES(test_scan_one_sequence_one_output_weights),
    GT_VALUES(test_scan_using_taps_input_output),
    GT_VALUES(test_scan_backwards_taps),
    GT_VALUES(test_scan_while),
    GT_SPECS(specs_Scan),
    GT_DERIVS(test_scan_grad_one_output),
    GT_DERIVS(test_scan_rop),
    GT_DERIVS(test_scan_rop_taps_adjoint),
    GT_ERRORS(test_scan_errors_build),
    GT_ERRORS(test_scan_errors_call),
    GT_END
};
GT_CASES(Rows) = {
    GT_VALUES(gtsc_op_Rows),
    GT_SPECS(specs_Rows),
    GT_NO_ERRORS("made only by the gradient of gr_scan, from checked nodes"),
    GT_END
};
GT_CASES(ScanPlace) = {
    GT_VALUES(gtsc_op_ScanPlace),
    GT_SPECS(specs_ScanPlace),
    GT_NO_ERRORS("made only by the gradient of gr_scan, from checked nodes"),
    GT_END
};
GT_CASES(ScanGather) = {
    GT_VALUES(gtsc_op_ScanGather),
    GT_SPECS(specs_ScanGather),
    GT_NO_ERRORS("made only by the gradient of ScanPlace (a gradient of gr_scan), from checked nodes"),
    GT_END
};

SUITE(suite_scan) = {
    CASE(test_scan_output_only),
    CASE(test_scan_only_nonseq_inputs), CASE(test_scan_multiple_inputs_multiple_outputs),
    CASE(test_scan_reordering_return_steps), CASE(test_scan_using_taps_sequence), CASE(test_scan_backwards), CASE(test_scan_backwards_uneven),
    CASE(test_scan_explicit_tap_minus_one), CASE(test_scan_mitsot_more_initial_rows),
    CASE(test_scan_memory_reuse_outputs_as_inputs), CASE(test_scan_eliminate_seqs_nonseqs), CASE(test_scan_sequence_is_scan),
    CASE(test_scan_mintap_onestep), CASE(test_scan_no_step), CASE(test_scan_grad_until),
    CASE(test_scan_grad_until_truncate), CASE(test_scan_truncate_gradient), CASE(test_scan_grad_multiple_outs), CASE(test_scan_grad_multiple_outs_taps), CASE(test_scan_grad_some_uncomputable),
    CASE(test_scan_integer_inputs), CASE(test_scan_grad_nonseqs), CASE(test_scan_connection_pattern),
    CASE(test_scan_disconnected_gradient), CASE(test_scan_grad_duplicate_outputs), CASE(test_scan_grad_duplicate_outputs_pattern),
    CASE(test_scan_null_grad), CASE(test_scan_rop2), CASE(test_scan_rop_until), CASE(test_scan_rop_of_grad), CASE(test_scan_jacobian), CASE(test_scan_hessian),
    CASE(test_scan_higher_order), CASE(test_scan_grad_grad), CASE(test_scan_inner_grad), CASE(test_scan_long), CASE(test_scan_grad_history_front),
    CASE(test_scan_checkpoints_rnn), CASE(test_scan_checkpoints_taps), CASE(test_scan_checkpoints_until), CASE(test_scan_checkpoints_second),
    CASE(test_scan_error_graph), CASE(test_scan_print), END_SUITE
};
