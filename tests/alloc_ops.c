/* tests/alloc_ops.c: every row of the op table with every allocation failing in turn.

   For each elementwise row (GR_ELEMWISE_OPS) and each structural row (GR_STRUCT_OPS) a tiny graph
   applies the op to float, integer and bool operands wherever it takes them. The gradient of the
   sum of every result with respect to every input, and the R-op of the results with respect to
   the float inputs, are added (rows that only derivatives, Jacobians or gr_function make are
   reached through them), and the whole is compiled (with and without the rewrites) and each
   function called twice. A scenario runs once with every allocation succeeding, which gives the
   values to expect (the unit suites check those against plain C and central differences), then
   again with allocation N failing, for N = 0, 1, ... until a run meets no failure. Every run must
   end cleanly:
     - a failed build leaves GR_ERR_NOMEM on the graph (with a message) and gr_function NULL;
     - a build that succeeds gives the values of the run without failures (a failing gr_call
       reports GR_ERR_NOMEM, and the next call works);
     - no variable reachable from a result has a node with a NULL input;
     - nothing leaks (counted here, and by LeakSanitizer in the sanitizer build).
   The rows come from the table macros: a structural row without a builder here (ao_<Name>) does
   not compile, so a new row is covered as soon as it exists. Two more scenarios: a user's op
   without an R-op rule (gr_rop's double pullback) and the drivers not called otherwise (gr_lop,
   gr_subgraph_grad, gr_hessian, gr_grad1); then gr_verify_grad and gr_numeric_grad_new with each
   of their allocations failing. */
#define _POSIX_C_SOURCE 200809L   /* dup, dup2 */
#include "alloc_hook.h"
#include <time.h>
#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <unistd.h>
/* stderr off and back on (warnings printed by design, hundreds of times here) */
static int ao_stderr_off(void) {
    int saved, null_fd;
    fflush(stderr);
    saved = dup(2);
    null_fd = open("/dev/null", O_WRONLY);
    if (null_fd >= 0) { dup2(null_fd, 2); close(null_fd); }
    return saved;
}
static void ao_stderr_on(int saved) {
    fflush(stderr);
    if (saved >= 0) { dup2(saved, 2); close(saved); }
}
#else
static int ao_stderr_off(void) { return -1; }
static void ao_stderr_on(int saved) { (void)saved; }
#endif

enum { MEASURE, INJECT };
#define AO_MAX_IN 48
#define AO_MAX_OUT 192

typedef struct ao_run {
    int mode;
    gr_graph *g;
    int n_in, n_prim, n_out;
    gr_var *in[AO_MAX_IN];
    gr_array *val[AO_MAX_IN];         /* the inputs' values (the caller's arrays: never failing) */
    gr_var *prim[AO_MAX_OUT];         /* the op's results */
    gr_var *out[AO_MAX_OUT];          /* the results, then their derivatives */
    int no_grad;                      /* the builder took care of the gradient itself */
} ao_run;

/* value patterns */
enum { AO_GEN, AO_SPD, AO_IDX3, AO_POS };

static double ao_gen(int64_t i, int salt) { return 0.55 + 0.35 * sin(1.0 + 0.7 * (double)i + 1.3 * (double)salt); }

/* an array of the caller's, made with the allocator disarmed */
static gr_array *ao_value(gr_dtype dt, int ndim, const int64_t *shape, int fill, int salt) {
    int armed = ac.armed;
    gr_array *a;
    int64_t i;
    ac.armed = 0;
    a = gr_array_new(dt, ndim, shape);
    ac.armed = armed;
    if (!a) return NULL;
    for (i = 0; i < a->size; i++) {
        double v;
        if (fill == AO_SPD) {                     /* symmetric, diagonally dominant: SPD, far from singular */
            int64_t n = shape[0], r = i / n, c = i % n;
            v = r == c ? (double)n + 1.0 : (dt == GR_F64 || dt == GR_F32 ? 0.3 * sin((double)(r + c + salt)) : (double)((r + c + salt) % 3 - 1));
        } else if (fill == AO_IDX3) v = (double)((i * 2 + salt) % 5 - 2);            /* -2 .. 2: in range for 3 */
        else if (fill == AO_POS) v = dt == GR_I64 ? (double)(1 + (i + salt) % 3) : ao_gen(i, salt) + 0.5;
        else if (dt == GR_I64) v = (double)((i + salt) % 4 - 1);
        else if (dt == GR_BOOL) v = (double)((i * 7 + salt) % 3 == 0);
        else v = ao_gen(i, salt);
        gr_array_set(a, i, v);
    }
    return a;
}

/* an input of r's graph with a value; static = 1 gives it the value's shape as its static shape */
static gr_var *ao_in_s(ao_run *r, gr_dtype dt, int ndim, const int64_t *shape, int fill, int is_static) {
    char name[16];
    gr_var *v;
    if (r->n_in >= AO_MAX_IN) { CHECK_MSG(0, "too many inputs"); return NULL; }
    snprintf(name, sizeof name, "in%d", r->n_in);
    v = gr_tensor(r->g, dt, ndim, is_static ? shape : NULL, name);
    r->val[r->n_in] = ao_value(dt, ndim, shape, fill, r->n_in);
    r->in[r->n_in++] = v;
    return v;
}
static gr_var *ao_in(ao_run *r, gr_dtype dt, int ndim, const int64_t *shape, int fill) { return ao_in_s(r, dt, ndim, shape, fill, 0); }

static int64_t ao_s1[1] = { 3 }, ao_s6[1] = { 6 }, ao_s2[2] = { 2, 3 }, ao_s13[2] = { 1, 3 }, ao_sq[2] = { 3, 3 }, ao_s3[3] = { 2, 2, 3 };
static gr_var *ao_vec(ao_run *r, gr_dtype dt) { return ao_in(r, dt, 1, ao_s1, AO_GEN); }
static gr_var *ao_mat(ao_run *r, gr_dtype dt) { return ao_in(r, dt, 2, ao_s2, AO_GEN); }
static gr_var *ao_sqm(ao_run *r, gr_dtype dt) { return ao_in(r, dt, 2, ao_sq, AO_SPD); }

static void ao_out(ao_run *r, gr_var *y) {
    if (r->n_prim >= AO_MAX_OUT) { CHECK_MSG(0, "too many results"); return; }
    r->prim[r->n_prim++] = y;
}

/* ---- elementwise rows: each on float64, int64, bool, mixed and weakly typed operands ---------- */

typedef gr_var *(*ao_ew_fn)(gr_var *const *a);
#define AO_EW_CALL_1(name) static gr_var *ao_ew_##name(gr_var *const *a) { return gr_##name(a[0]); }
#define AO_EW_CALL_2(name) static gr_var *ao_ew_##name(gr_var *const *a) { return gr_##name(a[0], a[1]); }
#define AO_EW_CALL_3(name) static gr_var *ao_ew_##name(gr_var *const *a) { return gr_##name(a[0], a[1], a[2]); }
#define AO_EW_CALL(name, arity, cls, fexpr, iexpr, d0, d1, d2) AO_EW_CALL_##arity(name)
GR_ELEMWISE_OPS(AO_EW_CALL)
#undef AO_EW_CALL

typedef struct ao_ew_row { const char *name; int arity; ao_ew_fn fn; } ao_ew_row;
static const ao_ew_row ao_ew_rows[] = {
#define AO_EW_ROW(name, arity, cls, fexpr, iexpr, d0, d1, d2) { #name, arity, ao_ew_##name },
    GR_ELEMWISE_OPS(AO_EW_ROW)
#undef AO_EW_ROW
};
#define AO_N_EW ((int)(sizeof ao_ew_rows / sizeof ao_ew_rows[0]))

static int ao_ew_current;
static void ao_build_ew(ao_run *r) {
    static const gr_dtype mixed[3] = { GR_F32, GR_I64, GR_BOOL };
    const ao_ew_row *row = &ao_ew_rows[ao_ew_current];
    const int64_t *shapes[3];
    int nds[3] = { 2, 1, 2 }, combo, k;
    shapes[0] = ao_s2; shapes[1] = ao_s1; shapes[2] = ao_s13;
    for (combo = 0; combo < 5; combo++) {
        gr_var *a[3];
        for (k = 0; k < row->arity; k++) {
            gr_dtype dt = combo == 0 ? GR_F64 : combo == 1 ? GR_I64 : combo == 2 ? GR_BOOL : combo == 3 ? mixed[k] : GR_F64;
            if (combo == 4 && k > 0) a[k] = gr_const(r->g, 1.5);                      /* weakly typed */
            else a[k] = ao_in_s(r, dt, nds[k], shapes[k], AO_GEN, combo == 3);       /* static shapes in one combo */
        }
        if (combo == 4 && row->arity == 1) a[0] = gr_add(a[0], gr_const(r->g, 0.25));
        ao_out(r, row->fn(a));
    }
}

/* ---- structural rows ------------------------------------------------------------------------------ */

static const gr_dtype ao_dts[3] = { GR_F64, GR_I64, GR_BOOL };

static void ao_Cast(ao_run *r) {
    ao_out(r, gr_cast(ao_mat(r, GR_F64), GR_I64));
    ao_out(r, gr_cast(ao_mat(r, GR_I64), GR_F64));
    ao_out(r, gr_cast(ao_vec(r, GR_BOOL), GR_F32));
    ao_out(r, gr_cast(ao_vec(r, GR_F32), GR_BOOL));
    ao_out(r, gr_mul(gr_cast(ao_vec(r, GR_F64), GR_F32), gr_const(r->g, 2.0)));
}
static void ao_reduce(ao_run *r, gr_var *(*axes)(gr_var *, int, const int *, int), gr_var *(*all)(gr_var *)) {
    int ax0 = 0, ax1 = -1, k;
    for (k = 0; k < 3; k++) {
        gr_var *x = ao_in(r, ao_dts[k], 3, ao_s3, AO_GEN);
        ao_out(r, all(x));
        ao_out(r, axes(x, 1, &ax0, 0));
        ao_out(r, axes(x, 1, &ax1, 1));
    }
    ao_out(r, all(ao_in_s(r, GR_F32, 2, ao_s2, AO_GEN, 1)));
}
static void ao_Sum(ao_run *r) { ao_reduce(r, gr_sum_axes, gr_sum); }
static void ao_Mean(ao_run *r) { ao_reduce(r, gr_mean_axes, gr_mean); }
static void ao_Prod(ao_run *r) { ao_reduce(r, gr_prod_axes, gr_prod); }
static void ao_Max(ao_run *r) { ao_reduce(r, gr_max_axes, gr_max); }
static void ao_Min(ao_run *r) { ao_reduce(r, gr_min_axes, gr_min); }
static void ao_DimShuffle(ao_run *r) {
    int pat[3] = { 1, GR_NEWAXIS, 0 }, k;
    for (k = 0; k < 3; k++) {
        gr_var *x = ao_mat(r, ao_dts[k]);
        ao_out(r, gr_transpose(x));
        ao_out(r, gr_dimshuffle(x, 3, pat));
    }
}
static void ao_Reshape(ao_run *r) {
    int64_t sh[2] = { 3, -1 };
    int k;
    for (k = 0; k < 3; k++) {
        gr_var *x = ao_mat(r, ao_dts[k]);
        ao_out(r, gr_reshape(x, 2, sh));
        ao_out(r, gr_flatten(x));
    }
}
static void ao_BroadcastLike(ao_run *r) {
    int k;
    for (k = 0; k < 3; k++) ao_out(r, gr_broadcast_like(ao_vec(r, ao_dts[k]), ao_mat(r, ao_dts[(k + 1) % 3])));
    ao_out(r, gr_add(ao_mat(r, GR_F64), ao_vec(r, GR_I64)));                 /* its gradient reduces */
}
static void ao_ReduceLike(ao_run *r) {
    int k;
    for (k = 0; k < 3; k++) ao_out(r, gr_reduce_like(ao_mat(r, ao_dts[k]), ao_vec(r, ao_dts[(k + 2) % 3])));
}
static void ao_ReshapeLike(ao_run *r) {
    int k;
    for (k = 0; k < 3; k++) ao_out(r, gr_reshape_like(ao_mat(r, ao_dts[k]), ao_in(r, ao_dts[k], 1, ao_s6, AO_GEN)));
    ao_out(r, gr_reshape_like(ao_in(r, GR_F64, 1, ao_s1, AO_GEN), ao_in(r, GR_BOOL, 2, ao_s13, AO_GEN)));
}
static void ao_SizeRatio(ao_run *r) {
    gr_var *x = ao_mat(r, GR_F64);
    ao_out(r, gr_mul(x, gr_size_ratio(ao_vec(r, GR_I64), x, GR_F64)));
    ao_out(r, gr_size_ratio(ao_mat(r, GR_BOOL), ao_vec(r, GR_F64), GR_F32));
    ao_out(r, gr_mean(ao_mat(r, GR_F64)));                                   /* its gradient uses one */
}
static void ao_Dot(ao_run *r) {
    int k;
    for (k = 0; k < 3; k++) {
        gr_var *m = ao_mat(r, ao_dts[k]), *v = ao_vec(r, ao_dts[(k + 1) % 3]);
        ao_out(r, gr_dot(m, v));
        ao_out(r, gr_dot(v, gr_transpose(m)));
        ao_out(r, gr_outer(v, m));
    }
    ao_out(r, gr_dot(ao_mat(r, GR_F64), gr_transpose(ao_mat(r, GR_F64))));
    ao_out(r, gr_dot(ao_vec(r, GR_F32), ao_vec(r, GR_F32)));
}
static void ao_softmaxes(ao_run *r, gr_var *(*fn)(gr_var *, int)) {
    int k;
    for (k = 0; k < 3; k++) {
        gr_var *x = ao_mat(r, ao_dts[k]);
        ao_out(r, fn(x, 1));
        ao_out(r, fn(x, 0));
    }
    ao_out(r, fn(ao_mat(r, GR_F32), -1));
}
static void ao_Softmax(ao_run *r) { ao_softmaxes(r, gr_softmax); }
static void ao_LogSoftmax(ao_run *r) { ao_softmaxes(r, gr_log_softmax); }
static void ao_gradop(ao_run *r, gr_var *(*fn)(gr_var *)) {
    int k;
    for (k = 0; k < 3; k++) {
        gr_var *x = ao_mat(r, ao_dts[k]);
        ao_out(r, gr_mul(fn(x), gr_sin(x)));
    }
}
static void ao_ZeroGrad(ao_run *r) { ao_gradop(r, gr_zero_grad); }
static void ao_DisconnectedGrad(ao_run *r) { ao_gradop(r, gr_disconnected_grad); }
static void ao_quiet(void *user, const char *message) { (void)user; (void)message; }
static void ao_ConsiderConstant(ao_run *r) {
    gr_graph_set_log(r->g, ao_quiet, NULL);                  /* (it is deprecated, and says so) */
    ao_gradop(r, gr_consider_constant);
}
static gr_var *ao_clip(gr_var *x) { return gr_grad_clip(x, -0.1, 0.2); }
static gr_var *ao_scale(gr_var *x) { return gr_grad_scale(x, -3.0); }
static void ao_GradClip(ao_run *r) { ao_gradop(r, ao_clip); }
static void ao_GradScale(ao_run *r) { ao_gradop(r, ao_scale); }
static void ao_UndefinedGrad(ao_run *r) {
    gr_var *x = ao_mat(r, GR_F64), *i = ao_mat(r, GR_I64), *y = gr_mul(gr_undefined_grad(x), gr_undefined_grad(i)), *gx = NULL;
    gr_grad_opts o;
    gr_status st;
    memset(&o, 0, sizeof o);
    o.null_gradients = GR_NULL_RETURN;
    ao_out(r, y);
    y = gr_sum(y);
    st = gr_grad(y, 1, &x, &gx, &o);                         /* a null gradient: not compiled */
    if (st == GR_OK) CHECK(gr_is_null(gx));
    else CHECK(r->mode == INJECT && st == (x || y ? GR_ERR_NOMEM : GR_ERR_VALUE));
    r->no_grad = 1;
}
/* the batching rows: Jacobians (EyeLike seed, Batched rows, Unflatten) and a Hessian whose
   compiled form is Banded */
static void ao_jacobians(ao_run *r) {
    gr_var *A = ao_mat(r, GR_F64), *x = ao_vec(r, GR_F64), *n = ao_vec(r, GR_I64), *J[2] = { NULL, NULL };
    gr_var *wrt[2], *e;
    gr_status st;
    wrt[0] = x; wrt[1] = n;
    e = gr_mul(gr_outer(gr_dot(A, gr_sin(x)), n), gr_const(r->g, 0.5));      /* 2-d: unflattened */
    st = gr_jacobian(e, 2, wrt, J, NULL);
    if (r->mode == MEASURE) CHECK_STATUS(st, GR_OK);
    ao_out(r, e);
    ao_out(r, J[0]);
    ao_out(r, J[1]);
    ao_out(r, gr_sum(gr_cumprod(x, 0)));
}
static void ao_EyeLike(ao_run *r) { ao_jacobians(r); }
static void ao_Unflatten(ao_run *r) { ao_jacobians(r); }
static void ao_Batched(ao_run *r) { ao_jacobians(r); }
static void ao_Banded(ao_run *r) {
    int64_t s5 = 5;
    gr_var *x = ao_in(r, GR_F64, 1, &s5, AO_GEN), *H = NULL;
    gr_var *c = gr_sum(gr_mul(gr_sin(gr_slice(x, 0, 1, GR_OPEN, 1)), gr_slice(x, 0, 0, -1, 1)));
    gr_status st = gr_hessian(c, 1, &x, &H, NULL);
    if (r->mode == MEASURE) CHECK_STATUS(st, GR_OK);
    ao_out(r, c);
    ao_out(r, H);
}
static void ao_Slice(ao_run *r) {
    int k;
    for (k = 0; k < 3; k++) {
        gr_var *x = ao_mat(r, ao_dts[k]);
        ao_out(r, gr_slice(x, 1, 2, GR_OPEN, -2));
        ao_out(r, gr_slice(x, 0, GR_OPEN, GR_OPEN, 1));
        ao_out(r, gr_slice(x, -1, -2, INT64_MAX, INT64_MAX));
    }
}
static void ao_Index(ao_run *r) {
    int k;
    for (k = 0; k < 3; k++) {
        gr_var *x = ao_mat(r, ao_dts[k]);
        ao_out(r, gr_index(x, 1, -1));
        ao_out(r, gr_index(x, 0, 1));
    }
}
static void ao_Take(ao_run *r) {
    int64_t s4 = 4;
    int k;
    for (k = 0; k < 3; k++) {
        gr_var *x = ao_mat(r, ao_dts[k]), *idx = ao_in(r, GR_I64, 1, &s4, AO_IDX3);
        ao_out(r, gr_take(x, idx, 1));
    }
}
static void ao_ViewUpdate(ao_run *r) {
    int k;
    for (k = 0; k < 3; k++) {
        gr_var *x = ao_mat(r, ao_dts[k]), *y = ao_vec(r, ao_dts[(k + 1) % 3]);
        ao_out(r, gr_set_subtensor(gr_index(x, 0, 1), y));
        ao_out(r, gr_inc_subtensor(gr_slice(x, 1, 0, 2, 1), gr_slice(y, 0, 1, GR_OPEN, 1)));
    }
}
static void ao_TakeUpdate(ao_run *r) {
    int64_t s4 = 4, s24[2] = { 2, 4 };
    int k;
    for (k = 0; k < 3; k++) {
        gr_var *x = ao_mat(r, ao_dts[k]), *idx = ao_in(r, GR_I64, 1, &s4, AO_IDX3);
        gr_var *y = ao_in(r, ao_dts[(k + 2) % 3], 2, s24, AO_GEN);
        ao_out(r, gr_inc_subtensor(gr_take(x, idx, 1), y));
        ao_out(r, gr_set_subtensor(gr_take(x, idx, 1), gr_const(r->g, 1.0)));
    }
}
static void ao_Join(ao_run *r) {
    gr_var *xs[3];
    int k;
    for (k = 0; k < 3; k++) xs[k] = ao_mat(r, ao_dts[k]);
    ao_out(r, gr_concatenate(3, xs, 0));
    ao_out(r, gr_stack(3, xs, 1));
    ao_out(r, gr_concatenate(2, xs + 1, -1));
    xs[0] = ao_mat(r, GR_BOOL);
    ao_out(r, gr_stack(2, xs, 0));
}
static void ao_Split(ao_run *r) {
    int64_t sizes[3] = { 1, 0, 2 };
    int k, j;
    for (k = 0; k < 3; k++) {
        gr_var *pieces[3] = { NULL, NULL, NULL };
        gr_status st = gr_split(ao_mat(r, ao_dts[k]), 1, 3, sizes, pieces);
        if (r->mode == MEASURE) CHECK_STATUS(st, GR_OK);
        if (st != GR_OK) for (j = 0; j < 3; j++) CHECK(pieces[j] == NULL);
        ao_out(r, pieces[0]);
        ao_out(r, gr_mul(pieces[2], gr_const(r->g, 2.0)));
    }
}
static void ao_BroadcastTo(ao_run *r) {
    int64_t sh[3] = { 2, 2, 3 };
    int k;
    for (k = 0; k < 3; k++) ao_out(r, gr_broadcast_to(ao_in(r, ao_dts[k], 2, ao_s13, AO_GEN), 3, sh));
}
static void ao_Tile(ao_run *r) {
    int64_t reps[3] = { 2, 1, 2 };
    int k;
    for (k = 0; k < 3; k++) {
        gr_var *x = ao_mat(r, ao_dts[k]);
        ao_out(r, gr_tile(x, 3, reps));
        ao_out(r, gr_tile(x, 1, reps));
    }
}
static void ao_Untile(ao_run *r) { ao_Tile(r); }                /* the gradient of Tile */
static void ao_ArgMax(ao_run *r) {
    int k;
    for (k = 0; k < 3; k++) ao_out(r, gr_argmax_axis(ao_mat(r, ao_dts[k]), -1));
}
static void ao_LogSumExp(ao_run *r) {
    int k;
    for (k = 0; k < 3; k++) ao_out(r, gr_logsumexp(ao_mat(r, ao_dts[k]), 0));
    ao_out(r, gr_logsumexp(ao_mat(r, GR_F32), 1));
}
static void ao_CumSum(ao_run *r) {
    int k;
    for (k = 0; k < 3; k++) ao_out(r, gr_cumsum(ao_mat(r, ao_dts[k]), 1));
}
static void ao_CumProd(ao_run *r) {
    int k;
    for (k = 0; k < 3; k++) ao_out(r, gr_cumprod(ao_mat(r, ao_dts[k]), 0));
}
static void ao_Diff(ao_run *r) {
    int k;
    for (k = 0; k < 3; k++) ao_out(r, gr_diff(ao_mat(r, ao_dts[k]), k == 1 ? 0 : -1));
    ao_out(r, gr_diff(ao_mat(r, GR_BOOL), 1));
}
/* loops: sequence taps -1, +1, a state, a non-sequence; forwards, and backwards with checkpoints */
static gr_status ao_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = gr_tanh(gr_add(gr_mul(in[0], in[1]), gr_mul(in[2], in[3])));
    return GR_OK;
}
static gr_var *ao_loop(ao_run *r, gr_dtype dt, int backwards, int64_t checkpoints) {
    static const int taps[2] = { -1, 1 };
    static int64_t s53[2] = { 5, 3 };
    gr_var *u = ao_in(r, dt, 2, s53, AO_GEN), *h0 = ao_vec(r, dt), *w = ao_vec(r, dt), *res = NULL;
    gr_scan_seq s;
    gr_scan_out o;
    gr_scan_opts opts;
    gr_status st;
    memset(&opts, 0, sizeof opts);
    s.x = u; s.n_taps = 2; s.taps = taps;
    o.initial = h0; o.n_taps = 0; o.taps = NULL;
    opts.go_backwards = backwards;
    opts.checkpoints = checkpoints;
    st = gr_scan(ao_step, NULL, 1, &s, 1, &o, 1, &w, &opts, &res);
    if (r->mode == MEASURE) CHECK_STATUS(st, GR_OK);
    if (st != GR_OK) CHECK(res == NULL);
    return res;
}
static void ao_Scan(ao_run *r) {
    ao_out(r, ao_loop(r, GR_F64, 0, 0));
    ao_out(r, ao_loop(r, GR_F32, 1, 2));
}
/* conditionals in every dtype, one nested, a side computed only there; the gradients reach both sides */
static void ao_IfElse(ao_run *r) {
    int k;
    for (k = 0; k < 3; k++) {
        gr_var *x = ao_mat(r, ao_dts[k]), *y = ao_mat(r, ao_dts[k]), *c = ao_in(r, GR_BOOL, 0, NULL, AO_GEN), *th[2], *el[2], *o[2] = { NULL, NULL };
        gr_status st;
        th[0] = gr_mul(x, y); el[0] = gr_mul(y, y);      /* (bools multiply to int64 on both sides) */
        th[1] = x; el[1] = y;
        if (th[0] && el[1]) {
            gr_var *inner = NULL;
            if (gr_ifelse(gr_gt(gr_sum(x), gr_sum(y)), 1, &th[0], &el[0], &inner) == GR_OK) th[0] = inner;
        }
        st = gr_ifelse(c, 2, th, el, o);
        if (r->mode == MEASURE) CHECK_STATUS(st, GR_OK);
        if (st != GR_OK) CHECK(o[0] == NULL && o[1] == NULL);
        ao_out(r, o[0]);
        ao_out(r, o[1]);
    }
}
static void ao_Rows(ao_run *r) { ao_out(r, ao_loop(r, GR_F64, 1, 0)); }        /* the gradient of a loop */
static void ao_ScanPlace(ao_run *r) { ao_Rows(r); }
/* the gradient of a loop's gradient with respect to its sequence */
static void ao_ScanGather(ao_run *r) {
    gr_var *y = ao_loop(r, GR_F64, 0, 0), *u = r->in[r->n_in - 3], *d = NULL;
    gr_status st = y ? gr_grad(gr_sum(y), 1, &u, &d, NULL) : GR_ERR_NOMEM;
    if (r->mode == MEASURE) CHECK_STATUS(st, GR_OK);
    ao_out(r, d);
}
static void ao_LinScan(ao_run *r) { ao_CumProd(r); }            /* the derivatives of CumProd */
static void ao_TensorDot(ao_run *r) {
    int a_ax[2] = { 0, 2 }, b_ax[2] = { 0, 1 }, a_ax1 = 2, b_ax1 = 0, k;
    for (k = 0; k < 3; k++) {
        gr_var *a = ao_in(r, ao_dts[k], 3, ao_s3, AO_GEN), *b = ao_in(r, ao_dts[(k + 1) % 3], 2, ao_s2, AO_GEN);
        ao_out(r, gr_tensordot(a, b, 2, a_ax, b_ax));
        ao_out(r, gr_tensordot(a, gr_transpose(b), 1, &a_ax1, &b_ax1));
    }
}
static void ao_MatMul(ao_run *r) {
    int k;
    for (k = 0; k < 3; k++) {
        gr_var *a = ao_in(r, ao_dts[k], 3, ao_s3, AO_GEN), *b = ao_in(r, ao_dts[(k + 1) % 3], 2, ao_sq, AO_GEN);
        ao_out(r, gr_matmul(a, b));
        ao_out(r, gr_matmul(ao_vec(r, ao_dts[k]), b));
    }
}
static void ao_linalg(ao_run *r) {
    int k;
    for (k = 0; k < 2; k++) {
        gr_var *A = ao_sqm(r, ao_dts[k]), *b = ao_vec(r, ao_dts[1 - k]);
        ao_out(r, gr_matrix_inverse(A));
        ao_out(r, gr_det(A));
        ao_out(r, gr_logdet(A));
        ao_out(r, gr_solve(A, b));
        ao_out(r, gr_solve(A, gr_transpose(ao_mat(r, GR_F64))));
    }
}
static void ao_LUFactor(ao_run *r) { ao_linalg(r); }
static void ao_MatrixInverse(ao_run *r) { ao_linalg(r); }
static void ao_Det(ao_run *r) { ao_linalg(r); }
static void ao_Adjugate(ao_run *r) { ao_linalg(r); }      /* built by the gradient and R-op of gr_det */
static void ao_LogDet(ao_run *r) { ao_linalg(r); }
static void ao_Solve(ao_run *r) { ao_linalg(r); }
static void ao_Cholesky(ao_run *r) {
    ao_out(r, gr_cholesky(ao_sqm(r, GR_F64)));
    ao_out(r, gr_cholesky(ao_sqm(r, GR_I64)));
    ao_out(r, gr_cholesky(ao_in(r, GR_F32, 2, ao_sq, AO_SPD)));
}
static void ao_TriScale(ao_run *r) { ao_Cholesky(r); }          /* in Cholesky's derivatives */
static void ao_Trace(ao_run *r) {
    int k;
    for (k = 0; k < 3; k++) ao_out(r, gr_trace(ao_mat(r, ao_dts[k])));
}
static void ao_CrossEntropy(ao_run *r) {
    int64_t s2 = 2;
    gr_var *ids = ao_in(r, GR_I64, 1, &s2, AO_POS);              /* 1 .. 3: use 2 rows of 3 classes */
    ao_out(r, gr_crossentropy(ao_mat(r, GR_F64), gr_sub(ids, gr_const(r->g, 1.0))));
    ao_out(r, gr_crossentropy(ao_mat(r, GR_I64), gr_sub(ids, gr_const(r->g, 1.0))));
    ao_out(r, gr_crossentropy(ao_mat(r, GR_F32), gr_softmax(ao_mat(r, GR_F64), 1)));
    ao_out(r, gr_crossentropy(ao_mat(r, GR_F64), ao_mat(r, GR_BOOL)));
}
static void ao_OneHot(ao_run *r) { ao_CrossEntropy(r); }
static void ao_Fused(ao_run *r) {
    gr_var *x = ao_mat(r, GR_F64), *i = ao_mat(r, GR_I64), *b = ao_vec(r, GR_BOOL);
    ao_out(r, gr_add(gr_mul(gr_exp(x), gr_sin(x)), gr_sqr(gr_tanh(x))));
    ao_out(r, gr_sub(gr_mul(i, i), gr_where(b, i, gr_neg(i))));
    ao_out(r, gr_logical_and(gr_gt(x, i), gr_logical_not(b)));
}

/* ---- beyond the table: a user's op without an R-op rule (gr_rop's double pullback), and the
   drivers that the scenarios above do not call ------------------------------------------------- */

static gr_status ao_sq_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t i;
    (void)node;
    for (i = 0; i < in[0]->size; i++) gr_array_set(out[0], i, gr_array_get(in[0], i) * gr_array_get(in[0], i));
    return GR_OK;
}
static gr_status ao_sq_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr_node_input(node, 0);
    ig[0] = gr_mul(og[0], gr_mul(x, gr_const(gr_var_graph(x), 2.0)));
    return ig[0] ? GR_OK : gr_graph_status(gr_var_graph(x));
}
static const gr_op_def ao_sq_op = { .name = "user_sqr", .n_in = 1, .n_out = 1, .perform = ao_sq_perform, .grad = ao_sq_grad };
static void ao_user_op(ao_run *r) {
    gr_var *x = ao_mat(r, GR_F64), *y = NULL;
    gr_status st = gr_apply(&ao_sq_op, NULL, 0, 1, &x, &y);
    if (r->mode == MEASURE) CHECK_STATUS(st, GR_OK);
    ao_out(r, y);
    ao_out(r, gr_sum(gr_sin(y)));
}

static void ao_drivers(ao_run *r) {
    gr_var *x = ao_vec(r, GR_F64), *w = ao_mat(r, GR_F64), *u = ao_in(r, GR_F64, 1, ao_s2, AO_GEN);
    gr_var *h = gr_tanh(gr_dot(w, x)), *c = gr_sum(gr_sqr(h)), *res[4] = { NULL, NULL, NULL, NULL }, *wrt[2];
    gr_status st;
    wrt[0] = x; wrt[1] = w;
    st = gr_lop(1, &h, 2, wrt, &u, res, NULL);                          /* u . dh/dx, u . dh/dw */
    if (r->mode == MEASURE) CHECK_STATUS(st, GR_OK);
    ao_out(r, res[0]);
    ao_out(r, res[1]);
    st = gr_subgraph_grad(1, &x, 1, &h, 0, NULL, NULL, c, res, res + 1);
    if (r->mode == MEASURE) CHECK_STATUS(st, GR_OK);
    ao_out(r, res[0]);
    ao_out(r, res[1]);
    st = gr_hessian(c, 2, wrt, res, NULL);
    if (r->mode == MEASURE) CHECK_STATUS(st, GR_OK);
    ao_out(r, res[0]);
    ao_out(r, res[1]);
    ao_out(r, gr_grad1(c, x));
    r->no_grad = 1;
}

typedef void (*ao_builder)(ao_run *r);
typedef struct ao_struct_row { const char *name; ao_builder build; } ao_struct_row;
static const ao_struct_row ao_struct_rows[] = {
#define AO_STRUCT_ROW(Name, nin, nout, rules, conn, alias, flags, batch, sig, simp) { #Name, ao_##Name },
    GR_STRUCT_OPS(AO_STRUCT_ROW)
#undef AO_STRUCT_ROW
};
#define AO_N_STRUCT ((int)(sizeof ao_struct_rows / sizeof ao_struct_rows[0]))

/* ---- the run --------------------------------------------------------------------------------- */

/* no node reachable from v has a NULL input (an explicit stack; a small pointer set of nodes seen) */
#define AO_SEEN 8192
static const gr_node *ao_seen[AO_SEEN];
static int ao_inputs_present(gr_var *const *vs, int n) {
    static const gr_node *stack[AO_SEEN];
    int sp = 0, k, ok = 1;
    memset((void *)ao_seen, 0, sizeof ao_seen);
    for (k = 0; k < n; k++) if (vs[k] && gr_var_owner(vs[k])) stack[sp++] = gr_var_owner(vs[k]);
    while (sp > 0 && ok) {
        const gr_node *node = stack[--sp];
        size_t h = ((size_t)(uintptr_t)node >> 4) % AO_SEEN;
        int i;
        while (ao_seen[h] && ao_seen[h] != node) h = (h + 1) % AO_SEEN;
        if (ao_seen[h]) continue;
        ao_seen[h] = node;
        for (i = 0; i < gr_node_n_inputs(node); i++) {
            gr_var *x = gr_node_input(node, i);
            if (!x) { ok = 0; break; }
            if (gr_var_owner(x) && sp < AO_SEEN) stack[sp++] = gr_var_owner(x);
        }
    }
    return ok;
}

/* a driver's status in a run with a failure: GR_ERR_NOMEM, or GR_ERR_VALUE when every variable it
   was given is NULL (no graph to record anything on) */
static void ao_driver_failed(gr_status st, int n, gr_var *const *vs, gr_var *also) {
    int k, any = also != NULL;
    for (k = 0; k < n; k++) if (vs[k]) any = 1;
    CHECK_STATUS(st, any ? GR_ERR_NOMEM : GR_ERR_VALUE);
}

/* the gradient of each result's sum with respect to every input, and the R-op of the results
   with respect to the float inputs (eval points: more inputs) */
static void ao_derive(ao_run *r) {
    gr_grad_opts go;
    gr_rop_opts ro;
    gr_var *fw[AO_MAX_IN], *ev[AO_MAX_IN], *res[AO_MAX_OUT];
    int n_base = r->n_in, n_fw = 0, k, j;
    gr_status st;
    memset(&go, 0, sizeof go);
    memset(&ro, 0, sizeof ro);
    go.disconnected_inputs = GR_IGNORE;
    ro.disconnected_outputs = GR_IGNORE;
    ro.return_disconnected = GR_RETURN_ZERO;
    for (k = 0; k < r->n_prim; k++) r->out[r->n_out++] = r->prim[k];
    if (!r->no_grad)
        for (k = 0; k < r->n_prim && r->n_out + n_base <= AO_MAX_OUT; k++) {
            gr_var *cost = gr_sum(r->prim[k]);
            st = gr_grad(cost, n_base, r->in, res, &go);
            if (r->mode == MEASURE) CHECK_STATUS(st, GR_OK);
            if (st != GR_OK) {
                ao_driver_failed(st, n_base, r->in, cost);
                for (j = 0; j < n_base; j++) CHECK(res[j] == NULL);
            }
            for (j = 0; j < n_base; j++) r->out[r->n_out++] = res[j];
        }
    for (k = 0; k < n_base; k++) {
        gr_dtype dt = (gr_dtype)r->val[k]->dtype;
        if (dt != GR_F64 && dt != GR_F32) continue;
        fw[n_fw] = r->in[k];
        ev[n_fw++] = ao_in(r, dt, r->val[k]->ndim, r->val[k]->shape, AO_GEN);
    }
    if (n_fw > 0 && r->n_prim > 0 && r->n_out + r->n_prim <= AO_MAX_OUT) {
        st = gr_rop(r->n_prim, r->prim, n_fw, fw, ev, res, &ro);
        if (r->mode == MEASURE) CHECK_STATUS(st, GR_OK);
        if (st != GR_OK) {
            gr_var *all[AO_MAX_OUT + 2 * AO_MAX_IN];
            int n_all = 0;
            for (j = 0; j < r->n_prim; j++) all[n_all++] = r->prim[j];
            for (j = 0; j < n_fw; j++) { all[n_all++] = fw[j]; all[n_all++] = ev[j]; }
            ao_driver_failed(st, n_all, all, NULL);
            for (j = 0; j < r->n_prim; j++) CHECK(res[j] == NULL);
        }
        for (j = 0; j < r->n_prim; j++) r->out[r->n_out++] = res[j];
    }
}

typedef struct ao_scenario { const char *name; ao_builder build; int ew_row; } ao_scenario;

/* one run of a scenario; ref: the values of the run without failures (filled when measuring) */
static void ao_run_once(const ao_scenario *s, int mode, gr_array **ref, int *n_ref) {
    ao_run r;
    gr_fn *fs[2] = { NULL, NULL };
    int k, c, v, any_null = 0;
    memset(&r, 0, sizeof r);
    r.mode = mode;
    if (mode == INJECT) { ac.armed = 1; ac.armed_calls = 0; ac.failed = 0; }
    r.g = gr_graph_new();
    if (r.g) {
        ao_ew_current = s->ew_row;
        s->build(&r);
        ao_derive(&r);
        for (k = 0; k < r.n_out; k++) if (!r.out[k]) any_null = 1;
        CHECK_MSG(ao_inputs_present(r.out, r.n_out), "a result reaches a node with a NULL input");
        for (v = 0; v < 2; v++) {                      /* with the rewrites and fusion, and without */
            gr_fn_opts o;
            memset(&o, 0, sizeof o);
            o.optimize = v ? GR_OPT_NONE : GR_OPT_FULL;
            fs[v] = gr_function(r.n_in, r.in, r.n_out, r.out, &o);
            if (mode == MEASURE) CHECK_MSG(fs[v] != NULL, "%s", gr_graph_message(r.g));
            else if (fs[v]) CHECK_MSG(!any_null, "gr_function took a NULL output");
            else CHECK_MSG(gr_graph_status(r.g) != GR_OK, "gr_function failed, and no error is recorded");
        }
        if (mode == MEASURE) CHECK_STATUS(gr_graph_status(r.g), GR_OK);
        else if (gr_graph_status(r.g) != GR_OK) {
            CHECK_STATUS(gr_graph_status(r.g), GR_ERR_NOMEM);
            CHECK(ac.failed);
            CHECK(strlen(gr_graph_message(r.g)) > 0);
        } else
            CHECK_MSG(!any_null, "no error recorded, yet a result is NULL");
    } else
        CHECK(mode == INJECT && ac.failed);
    for (v = 0; v < 2; v++)
        for (c = 0; fs[v] && c < 2; c++) {
            const gr_array *in[AO_MAX_IN], *out[AO_MAX_OUT];
            gr_status st;
            for (k = 0; k < r.n_in; k++) in[k] = r.val[k];
            st = gr_call(fs[v], in, out);
            if (mode == MEASURE) CHECK_MSG(st == GR_OK, "%s", gr_fn_message(fs[v]));
            if (st != GR_OK) {
                CHECK_STATUS(st, GR_ERR_NOMEM);
                CHECK(mode == INJECT && ac.failed && strlen(gr_fn_message(fs[v])) > 0);
                continue;
            }
            for (k = 0; k < r.n_out; k++) {
                if (mode == MEASURE && v == 0 && c == 0) {
                    ref[k] = gr_array_copy(out[k]);
                    *n_ref = k + 1;
                } else if (k < *n_ref && ref[k]) {
                    int64_t i;
                    int same = ref[k]->dtype == out[k]->dtype && ref[k]->ndim == out[k]->ndim && ref[k]->size == out[k]->size;
                    CHECK_MSG(same, "output %d: %s %d-d of %lld elements, expected %s %d-d of %lld", k, gr_dtype_name(out[k]->dtype),
                              out[k]->ndim, (long long)out[k]->size, gr_dtype_name(ref[k]->dtype), ref[k]->ndim, (long long)ref[k]->size);
                    for (i = 0; same && i < ref[k]->size; i++) CHECK_NEAR(gr_array_get(out[k], i), gr_array_get(ref[k], i), 1e-12);
                }
            }
        }
    ac.armed = 0;
    gr_fn_free(fs[0]);
    gr_fn_free(fs[1]);
    gr_graph_free(r.g);
    for (k = 0; k < r.n_in; k++) gr_array_free(r.val[k]);
}

static void ao_scenario_all_failures(const ao_scenario *s, long *runs) {
    gr_array *ref[AO_MAX_OUT];
    int n_ref = 0, k, failures = 0;
    long n, live = ac.live;
    const char *test = gt.test;
    gt.test = s->name;
    memset(ref, 0, sizeof ref);
    ao_run_once(s, MEASURE, ref, &n_ref);
    CHECK_MSG(ac.live == live + n_ref, "%s: %ld blocks leaked", s->name, ac.live - live - n_ref);
    for (n = 0; n < 200000; n++) {
        long before = ac.live, checks = gt.checks_failed;
        ac.fail_at = n;
        ao_run_once(s, INJECT, ref, &n_ref);
        CHECK_MSG(ac.live == before, "%s, allocation %ld failing: %ld blocks leaked", s->name, n, ac.live - before);
        if (gt.checks_failed != checks) {
            fprintf(stderr, "  (%s with allocation %ld failing)\n", s->name, n);
            if (++failures > 3) break;
        }
        if (!ac.failed) break;                     /* every allocation has had its turn */
    }
    *runs += n + 1;
    ac.fail_at = -1;
    for (k = 0; k < n_ref; k++) gr_array_free(ref[k]);
    gt.test = test;
}

TEST(test_every_row_under_allocation_failure) {
    long runs = 0;
    int k;
    clock_t t0 = clock();
    for (k = 0; k < AO_N_EW; k++) {
        ao_scenario s;
        s.name = ao_ew_rows[k].name; s.build = ao_build_ew; s.ew_row = k;
        ao_scenario_all_failures(&s, &runs);
    }
    for (k = 0; k < AO_N_STRUCT; k++) {
        ao_scenario s;
        s.name = ao_struct_rows[k].name; s.build = ao_struct_rows[k].build; s.ew_row = 0;
        ao_scenario_all_failures(&s, &runs);
    }
    {
        ao_scenario s;
        s.ew_row = 0;
        s.name = "user op"; s.build = ao_user_op;
        ao_scenario_all_failures(&s, &runs);
        s.name = "drivers"; s.build = ao_drivers;
        ao_scenario_all_failures(&s, &runs);
    }
    printf("alloc_ops: %d elementwise and %d structural rows, a user's op, the drivers: %ld runs, %.1f s\n", AO_N_EW, AO_N_STRUCT, runs,
           (double)(clock() - t0) / CLOCKS_PER_SEC);
}

/* ---- the numeric checks -------------------------------------------------------------------------- */

static gr_var *ao_tanh_of(gr_graph *g, gr_var *const *in, void *user) {
    (void)g; (void)user;
    return gr_mul(gr_tanh(in[0]), in[1]);
}

/* the same, counting the calls that were given a NULL input or a graph with an error pending */
static gr_var *ao_tanh_of_checked(gr_graph *g, gr_var *const *in, void *user) {
    if (!in[0] || !in[1] || gr_graph_status(g) != GR_OK) ++*(int *)user;
    return ao_tanh_of(g, in, NULL);
}

/* gr_verify_grad ends in GR_OK or GR_ERR_NOMEM whichever allocation fails (its numeric gradient's
   included: that was GR_ERR_RUNTIME), and never calls the builder with an input it could not
   make (it did, with the out-of-memory error pending: found by the fuzzer); gr_numeric_grad_new
   fails with its function's message saying so. gr_verify_grad reports a failure to stderr (the
   graph is its own): silenced here. */
TEST(test_numeric_checks_out_of_memory) {
    int64_t n3 = 3;
    long n, nomem = 0, live = ac.live;
    int bad_calls = 0;
    gr_array *x = ao_value(GR_F64, 1, &n3, AO_GEN, 0), *w = ao_value(GR_F64, 1, &n3, AO_GEN, 1);
    const gr_array *pt[2];
    pt[0] = x; pt[1] = w;
    for (n = 0; n < 100000; n++) {
        gr_status st;
        long before = ac.live;
        int saved = ao_stderr_off();
        ac.fail_at = n; ac.armed = 1; ac.armed_calls = 0; ac.failed = 0;
        st = gr_verify_grad(ao_tanh_of_checked, &bad_calls, 2, pt, NULL, NULL);
        ac.armed = 0;
        ao_stderr_on(saved);
        CHECK_MSG(st == GR_OK || (ac.failed && st == GR_ERR_NOMEM), "allocation %ld failing: %s", n, gr_status_string(st));
        CHECK_MSG(ac.live == before, "allocation %ld failing: %ld blocks leaked", n, ac.live - before);
        if (st == GR_ERR_NOMEM) nomem++;
        if (!ac.failed) break;
    }
    CHECK_MSG(n > 20 && nomem > 20, "%ld runs, %ld out of memory", n, nomem);
    CHECK_MSG(bad_calls == 0, "the builder was given a NULL input or a pending error %d times", bad_calls);
    {   /* the numeric gradient alone */
        gr_graph *g = gr_graph_new();
        gr_var *in[2], *c;
        gr_fn *f;
        in[0] = gr_vector(g, GR_F64, "x");
        in[1] = gr_vector(g, GR_F64, "w");
        c = gr_sum(ao_tanh_of(g, in, NULL));
        f = gr_function(2, in, 1, &c, NULL);
        CHECK(f != NULL);
        for (n = 0; f && n < 100000; n++) {
            gr_numeric_grad *ng;
            ac.fail_at = n; ac.armed = 1; ac.armed_calls = 0; ac.failed = 0;
            ng = gr_numeric_grad_new(f, 2, pt, 0);
            ac.armed = 0;
            if (ng) {
                const gr_array *d = gr_numeric_grad_get(ng, 1);
                CHECK(d && d->size == 3);
                if (d) CHECK_NEAR(gr_array_get(d, 2), tanh(gr_array_get(x, 2)), 1e-6);   /* d/dw_2 = tanh x_2 */
            } else {
                CHECK(ac.failed);
                CHECK_CONTAINS(gr_fn_message(f), "out of memory");
            }
            gr_numeric_grad_free(ng);
            if (!ac.failed) break;
        }
        gr_fn_free(f);
        gr_graph_free(g);
    }
    ac.fail_at = -1;
    gr_array_free(x);
    gr_array_free(w);
    CHECK(ac.live == live);
}

static const gt_case suite_alloc_ops[] = {
    CASE(test_every_row_under_allocation_failure),
    CASE(test_numeric_checks_out_of_memory),
    END_SUITE
};

int main(void) {
    gt_run(suite_alloc_ops);
    CHECK_MSG(ac.live == 0 && ac.bytes == 0, "%ld blocks (%zu bytes) still allocated at exit", ac.live, ac.bytes);
    return gt_report("alloc_ops");
}
