/* tests/fuzz/fuzz_graph.c: a libFuzzer target over the whole library.

   The input bytes are decoded into a program: up to 5 leaves (inputs of declared-static or
   call-time shapes, constants, shared variables, weak scalars, aranges) of random dtype (F64, F32,
   I64, BOOL) and shape (0-d to 4-d, sizes 0 to 4, broadcastable 1s), then up to 24 ops drawn from
   every row of ops/table.h (the elementwise rows are iterated with GR_ELEMWISE_OPS, so a new row is
   reachable at once; every structural row is reached by a public constructor listed in fz_struct
   below, or by the drivers and gr_function for the internal ones, and a structural row missing from
   that list fails every run). Then every driver (gr_grad with random options, gr_grad1, gr_lop,
   gr_rop, gr_jacobian, gr_hessian, gr_subgraph_grad, gr_verify_grad and gr_numeric_grad on small
   float programs), more ops over the drivers' results and the drivers again (second order), and
   gr_function at GR_OPT_FULL and GR_OPT_NONE with shared-variable updates, called twice with
   random data (the second time with other call-time sizes and shared values), the two levels
   compared, and everything freed.

   Every allocation goes through a counting allocator (as tests/alloc_count.c) which fails the
   allocation chosen by the input (and any request above 64 MB). Invariants (a violation traps in
   the fuzzer; the replay driver counts it as a failed file):
     - no crash, UB or leak (ASan/UBSan/LSan), and no block left allocated after freeing;
     - a builder given non-NULL operands returns NULL only with an error recorded on the graph, and
       a non-NULL result only with none recorded; statuses are valid codes;
     - a driver that fails sets every output entry to NULL and records its status on the graph;
     - a failure in a call during which an allocation failed is GR_ERR_NOMEM, or the failure the
       same call has when the program runs again without the refusal (see fz_outcome);
     - gr_call fails with a message and succeeds with none; a call after an out-of-memory call
       works; a failed call updates no shared value; gr_function accepts or refuses alike at both
       levels, and their calls fail alike and, when both succeed, give the same dtype, shape and
       values (exact for integers, a relative tolerance for floats, NaN and inf alike) and the same
       shared values after the updates, up to what the rewrites may change (see fz_close,
       fz_hidden_nonfinite and the status check in fz_compile_and_run).

   Built by `make fuzz` (clang -fsanitize=fuzzer,address,undefined) into build/fuzz-graph; replayed
   over tests/fuzz/corpus by tests/fuzz/replay.c in `make test` (README.md, "Fuzzing"). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the counting allocator ---------------------------------------------------------------- */

typedef struct fz_alloc {
    long live;          /* blocks allocated and not freed */
    long calls;         /* allocation calls since the run began */
    long fail_at;       /* the call that fails, -1 for none */
    long refused;       /* allocations refused so far (the chosen one, and any too large) */
    int armed;          /* 0: no allocation is refused on purpose */
} fz_alloc;
static fz_alloc fa = { 0, 0, -1, 0, 1 };

#define FZ_BIG ((size_t)1 << 26)   /* a larger request fails, as out of memory */

typedef union fz_head { size_t n; long double ld; long long ll; void *p; } fz_head;

#ifdef FZ_TRACE      /* -DFZ_TRACE (sanitizer builds): where each refused allocation was asked for */
void __sanitizer_print_stack_trace(void);
#define FZ_TRACE_REFUSAL() (fprintf(stderr, "fuzz: allocation %ld refused here:\n", k), __sanitizer_print_stack_trace())
#else
#define FZ_TRACE_REFUSAL() ((void)0)
#endif
static int fz_refuse(size_t n) {
    long k = fa.calls++;
    if (n > FZ_BIG || (fa.armed && k == fa.fail_at)) { fa.refused++; FZ_TRACE_REFUSAL(); return 1; }
    return 0;
}
static void *fz_malloc(size_t n) {
    fz_head *h;
    if (fz_refuse(n)) return NULL;
    h = (fz_head *)malloc(sizeof(fz_head) + n);
    if (!h) return NULL;
    h->n = n;
    fa.live++;
    return h + 1;
}
static void *fz_realloc(void *old, size_t n) {
    fz_head *h;
    if (!old) return fz_malloc(n);
    if (fz_refuse(n)) return NULL;
    h = (fz_head *)realloc((fz_head *)old - 1, sizeof(fz_head) + n);
    if (!h) return NULL;
    h->n = n;
    return h + 1;
}
static void fz_free(void *p) {
    if (!p) return;
    fa.live--;
    free((fz_head *)p - 1);
}

#define GR_MALLOC(n) fz_malloc(n)
#define GR_REALLOC(p, n) fz_realloc(p, n)
#define GR_FREE(p) fz_free(p)
#define GRADIENT_IMPLEMENTATION
#include "../../gradient.h"

/* ---- invariants ----------------------------------------------------------------------------- */

int fz_violations;                 /* read by the replay driver */
#ifdef FZ_REPLAY
#define FZ_DIE() (fz_violations++)
#else
#define FZ_DIE() __builtin_trap()
#endif
#define FZ_ASSERT(c, ...) do { if (!(c)) { fprintf(stderr, "fuzz invariant (%s:%d): ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); FZ_DIE(); } } while (0)

static int fz_status_ok(gr_status s) { return (int)s >= 0 && (int)s < (int)GR__STATUS_COUNT; }

/* Out of memory. A call during which an allocation was refused may fail with GR_ERR_NOMEM, or as it
   fails without the refusal (the library may give up an optional allocation and go on to an error of
   the program's own). Every checked call reports its outcome here, numbered; the first failure
   other than GR_ERR_NOMEM under a refusal is a suspect, and the program is then run again without
   the refusal up to that call, whose status must be the same. */
typedef struct fz_ref {
    long seq;              /* checked calls so far in this run */
    int reference;         /* this run is the reference: record the status of call want */
    long want;
    int have;
    gr_status got;
    long suspect;          /* the suspect call of the run with the refusal, -1 for none */
    gr_status suspect_st;
    char what[64], msg[200];
} fz_ref;
static fz_ref fr;

static void fz_outcome(long refused_before, gr_status st, const char *what, const char *msg) {
    long k = fr.seq++;
    if (fr.reference) {
        if (k == fr.want) { fr.have = 1; fr.got = st; }
        return;
    }
    if (fa.refused != refused_before && st != GR_OK && st != GR_ERR_NOMEM && fr.suspect < 0) {
        fr.suspect = k;
        fr.suspect_st = st;
        snprintf(fr.what, sizeof fr.what, "%s", what);
        snprintf(fr.msg, sizeof fr.msg, "%s", msg ? msg : "");
    }
}

/* ---- the input ------------------------------------------------------------------------------ */

enum { FZ_LEAVES = 5, FZ_OPS = 24, FZ_OPB = 6, FZ_POOL = 96, FZ_OUTS = 40, FZ_DRV = 16 };

typedef struct fz_prog {
    uint8_t head[8];
    int n_leaves;
    uint8_t leaf[FZ_LEAVES][8];
    int n_ops1, n_ops;             /* ops [0, n_ops1) before the drivers, the rest after */
    uint8_t op[FZ_OPS][FZ_OPB];
    uint8_t drv[FZ_DRV];
} fz_prog;

static void fz_decode(fz_prog *p, const uint8_t *d, size_t n) {
    size_t at = 0;
    int i, k, want1;
    memset(p, 0, sizeof *p);
#define FZ_TAKE(dst, len) do { size_t l_ = (len) <= n - at ? (len) : n - at; memcpy((dst), d + at, l_); at += l_; } while (0)
    FZ_TAKE(p->head, 8);
    p->n_leaves = 1 + p->head[3] % FZ_LEAVES;
    for (i = 0; i < p->n_leaves; i++) FZ_TAKE(p->leaf[i], 8);
    want1 = p->head[4] % (FZ_OPS + 1);
    for (k = 0; k < want1 && at < n; k++) FZ_TAKE(p->op[k], FZ_OPB);
    p->n_ops1 = k;
    FZ_TAKE(p->drv, FZ_DRV);
    for (; k < FZ_OPS && at < n; k++) FZ_TAKE(p->op[k], FZ_OPB);
    p->n_ops = k;
#undef FZ_TAKE
}

/* a small deterministic generator for data */
static uint64_t fz_mix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double fz_value(uint64_t *s, gr_dtype dt, int special) {
    static const double nice[16] = { 0, 1, -1, 0.5, -0.5, 2, -2, 1.5, -1.5, 3, -3, 0.25, 0.75, -0.75, 1.25, 2.5 };
    static const double odd[8] = { NAN, INFINITY, -INFINITY, 1e300, -1e300, 1e-310, -0.0, 40.0 };
    uint64_t r = fz_mix(s);
    if (dt == GR_BOOL) return (double)(r & 1);
    if (dt == GR_I64) {
        if (special && (r & 15) == 0) return (r & 16) ? 9.2e18 : -9.2e18;
        return (double)((int)(r % 7) - 3);
    }
    if (special && (r & 7) == 0) return odd[(r >> 3) & 7];
    if (r & 16) return nice[(r >> 5) & 15];
    return (double)((int64_t)((r >> 8) % 4001) - 2000) / 1000.0;
}

/* ---- building ------------------------------------------------------------------------------- */

typedef struct fz_leafinfo {
    int kind;                       /* FZ_L_* */
    gr_dtype dt;
    int ndim;
    int64_t shape[GR_MAX_NDIM];     /* its size at the first call */
    int64_t decl[GR_MAX_NDIM];      /* the declared static shape (-1 unknown) */
    int special;
    uint8_t seed;
} fz_leafinfo;
enum { FZ_L_INPUT, FZ_L_CONST, FZ_L_SHARED, FZ_L_WEAK, FZ_L_ARANGE };

typedef struct fz_ctx {
    const fz_prog *p;
    gr_graph *g;
    gr_var *pool[FZ_POOL];
    int n;
    fz_leafinfo li[FZ_LEAVES];
    gr_var *leafv[FZ_LEAVES];       /* NULL where the leaf could not be made */
    int replay;                     /* building inside gr_verify_grad's graph */
    gr_var *const *replay_in;       /* ... whose inputs stand for the float input leaves */
    int dead;                       /* out of memory inside gr_verify_grad's builder: stop building */
} fz_ctx;

static void fz_ignore_log(void *user, const char *msg) { (void)user; (void)msg; }

/* a value of more than 1024 elements (an unknown size counts as 4) is not used further: tiles,
   outer products and Jacobians of Jacobians would otherwise grow without bound and slow the runs */
static int fz_too_big(gr_var *v) {
    gr_type t;
    double n = 1;
    int d;
    if (!gr_var_type(v, &t)) return 0;
    for (d = 0; d < t.ndim; d++) n *= t.shape[d] < 0 ? 4.0 : (double)t.shape[d];
    return n > 1024;
}

/* after a builder: its error is cleared, and the program goes on without that value; but inside
   gr_verify_grad's builder an out-of-memory error stays, and the building stops (the builder
   returns NULL): going on would build another program than the one gr_verify_grad checks */
static void fz_clear(fz_ctx *c) {
    if (c->replay && gr_graph_status(c->g) == GR_ERR_NOMEM) c->dead = 1;
    else gr_graph_clear_error(c->g);
}

/* before a builder: no error pending */
typedef struct fz_tok { long refused; int nonnull, was_armed; } fz_tok;

static int fz_isfloat(gr_var *v) { return v && (gr_var_dtype(v) == GR_F64 || gr_var_dtype(v) == GR_F32); }

static fz_tok fz_pre(fz_ctx *c, int n, gr_var *const *ops) {
    fz_tok t;
    int i;
    t.nonnull = 1;
    t.was_armed = fa.armed;
    for (i = 0; i < n; i++) if (!ops[i]) t.nonnull = 0;
    t.refused = fa.refused;
    FZ_ASSERT(c->dead || gr_graph_status(c->g) == GR_OK, "an error is pending before a builder: %s", gr_graph_message(c->g));
    if (!c->dead) gr_graph_clear_error(c->g);
    return t;
}

/* after a builder: the invariants; the error is cleared; a real variable goes into the pool */
static gr_var *fz_post(fz_ctx *c, fz_tok t, gr_var *v, const char *what, int push) {
    gr_status s = gr_graph_status(c->g);
    fa.armed = t.was_armed;
    FZ_ASSERT(fz_status_ok(s), "%s: status %d", what, (int)s);
    fz_outcome(t.refused, v || !t.nonnull ? GR_OK : s, what, gr_graph_message(c->g));
#ifdef FZ_VERBOSE
    if (v) fprintf(stderr, "[%ld] %s: %s %d-d, node %s\n", fr.seq - 1, what, gr_dtype_name(gr_var_dtype(v)), gr_var_ndim(v),
                   gr_var_owner(v) ? gr_node_op(gr_var_owner(v))->name : "(leaf)");
    else if (t.nonnull) fprintf(stderr, "[%ld] %s: %s\n", fr.seq - 1, what, gr_graph_message(c->g));
#endif
    if (!v) {
        if (t.nonnull) {
            FZ_ASSERT(s != GR_OK, "%s returned NULL with no error recorded", what);
            FZ_ASSERT(s == GR_OK || gr_graph_message(c->g)[0], "%s: an error without a message", what);
        }
    } else {
        FZ_ASSERT(s == GR_OK, "%s returned a variable and recorded %s (%s)", what, gr_status_string(s), gr_graph_message(c->g));
        FZ_ASSERT(gr_var_graph(v) == c->g, "%s: a variable of another graph", what);
        FZ_ASSERT(gr_var_ndim(v) >= 0 && gr_var_ndim(v) <= GR_MAX_NDIM, "%s: ndim %d", what, gr_var_ndim(v));
        FZ_ASSERT((int)gr_var_dtype(v) >= 0 && (int)gr_var_dtype(v) <= (int)GR_BOOL, "%s: dtype %d", what, (int)gr_var_dtype(v));
        if (push && c->n < FZ_POOL && !gr_is_disconnected(v) && !gr_is_null(v) && !fz_too_big(v)) c->pool[c->n++] = v;
    }
    fz_clear(c);
    return v;
}

/* the pattern of every call: t = FZ_PRE(c, operands); v = the builder; fz_post(c, t, v, name, push) */
#define FZ_PRE(c, a, b, d) fz_pre3(c, (a), (b), (d))
static fz_tok fz_pre3(fz_ctx *c, gr_var *a, gr_var *b, gr_var *d) {
    gr_var *ops[3];
    int n = 0;
    if (a) ops[n++] = a;
    if (b) ops[n++] = b;
    if (d) ops[n++] = d;
    return fz_pre(c, n, ops);
}

/* operands: mostly recent pool entries */
static gr_var *fz_pick(fz_ctx *c, uint8_t b) {
    if (c->n == 0) return NULL;
    if (b & 0x80) return c->pool[c->n - 1 - (b & 7) % c->n];
    return c->pool[b % c->n];
}
static gr_var *fz_pick_dt(fz_ctx *c, uint8_t b, gr_dtype dt) {   /* the latest of that dtype, else any */
    int i;
    for (i = c->n - 1 - (b & 3); i >= 0; i--) if (gr_var_dtype(c->pool[i]) == dt) return c->pool[i];
    return fz_pick(c, b);
}
/* an axis: mostly valid for ndim nd, negative half the time, sometimes anything in [-5, 5] */
static int fz_axis(uint8_t b, int nd) {
    int a;
    if ((b & 0xE0) == 0xE0) return (int)(b % 11) - 5;
    if (nd <= 0) return 0;
    a = (b & 15) % nd;
    return (b & 16) ? a - nd : a;
}
static int64_t fz_pos(uint8_t b) {                 /* a slice bound or an index */
    static const int64_t t[16] = { 0, 1, 2, -1, -2, 3, -3, 4, GR_OPEN, GR_OPEN, 1, 0, 100, -100, INT64_MAX, INT64_MIN + 1 };
    return t[b & 15];
}
static int64_t fz_step(uint8_t b) {
    static const int64_t t[16] = { 1, 1, 1, 2, -1, -2, 3, -1, 1, 2, 0, GR_OPEN, -3, 5, INT64_MAX, INT64_MIN + 1 };
    return t[b & 15];
}
static int64_t fz_size(uint8_t b) {                /* a dimension */
    static const int64_t t[8] = { 1, 2, 3, 1, 2, 3, 0, 4 };
    return t[b & 7];
}

static int fz_static_dim(gr_var *v, int axis, int64_t *size) {
    gr_type t;
    if (!v || !gr_var_type(v, &t) || axis < 0 || axis >= t.ndim || t.shape[axis] < 0) return 0;
    *size = t.shape[axis];
    return 1;
}

/* ---- users' ops ------------------------------------------------------------------------------ */

static gr_status fz_twice_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t i;
    (void)node;
    for (i = 0; i < in[0]->size; i++) gr_array_set(out[0], i, 2 * gr_array_get(in[0], i));
    return GR_OK;
}
static gr_status fz_twice_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr_node_input(node, 0);
    ig[0] = gr_mul(og[0], gr_const(gr_var_graph(x), 2.0));
    return ig[0] ? GR_OK : gr_graph_status(gr_var_graph(x));
}
/* (x, y) -> (x + y, x - y) with the shape of x (y broadcast); an error when y is larger */
static gr_status fz_pm_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t i, n = in[0]->size, m = in[1]->size;
    if (m != 1 && m != n) return gr_node_error(node, GR_ERR_SHAPE, "y has %lld elements, x %lld", (long long)m, (long long)n);
    for (i = 0; i < n; i++) {
        double a = gr_array_get(in[0], i), b = gr_array_get(in[1], m == 1 ? 0 : i);
        gr_array_set(out[0], i, a + b);
        gr_array_set(out[1], i, a - b);
    }
    return GR_OK;
}
static const unsigned char fz_conn_pm[4] = { 1, 1, 1, 0 };   /* y reaches only x + y */
static gr_op_def fz_op_twice, fz_op_twice_nograd, fz_op_pm, fz_op_noperform;
static void fz_init_ops(void) {
    memset(&fz_op_twice, 0, sizeof fz_op_twice);
    fz_op_twice.name = "FzTwice"; fz_op_twice.n_in = 1; fz_op_twice.n_out = 1;
    fz_op_twice.perform = fz_twice_perform; fz_op_twice.grad = fz_twice_grad;
    fz_op_twice_nograd = fz_op_twice;
    fz_op_twice_nograd.name = "FzTwiceNoGrad"; fz_op_twice_nograd.grad = NULL;
    memset(&fz_op_pm, 0, sizeof fz_op_pm);
    fz_op_pm.name = "FzPlusMinus"; fz_op_pm.n_in = 2; fz_op_pm.n_out = 2; fz_op_pm.perform = fz_pm_perform;
    fz_op_pm.connection_pattern = fz_conn_pm;
    fz_op_noperform = fz_op_twice;
    fz_op_noperform.name = "FzNoPerform"; fz_op_noperform.perform = NULL;
}

/* ---- the op table ---------------------------------------------------------------------------- */

/* every elementwise row, by expansion */
typedef struct fz_ew { const char *name; int arity; gr_var *(*f1)(gr_var *); gr_var *(*f2)(gr_var *, gr_var *);
                       gr_var *(*f3)(gr_var *, gr_var *, gr_var *); } fz_ew;
#define FZ_EW_1(name) { "gr_" #name, 1, gr_##name, NULL, NULL },
#define FZ_EW_2(name) { "gr_" #name, 2, NULL, gr_##name, NULL },
#define FZ_EW_3(name) { "gr_" #name, 3, NULL, NULL, gr_##name },
#define FZ_EW(name, arity, cls, fexpr, iexpr, d0, d1, d2) FZ_EW_##arity(name)
static const fz_ew fz_ews[] = { GR_ELEMWISE_OPS(FZ_EW) };
#undef FZ_EW
enum { FZ_N_EW = (int)(sizeof fz_ews / sizeof fz_ews[0]) };

/* the structural cases, and which rows of GR_STRUCT_OPS each reaches (checked at start-up) */
#define FZ_STRUCT(X) \
    X(CAST,       "Cast") \
    X(REDUCE,     "Sum Mean Prod Max Min") \
    X(ARGMAX,     "ArgMax") \
    X(CUMSUM,     "CumSum") \
    X(CUMPROD,    "CumProd LinScan") \
    X(LOGSUMEXP,  "LogSumExp") \
    X(SOFTMAX,    "Softmax") \
    X(LOGSOFTMAX, "LogSoftmax") \
    X(TRANSPOSE,  "DimShuffle") \
    X(DIMSHUFFLE, "DimShuffle") \
    X(RESHAPE,    "Reshape") \
    X(FLATTEN,    "Reshape") \
    X(LIKE,       "BroadcastLike ReduceLike ReshapeLike SizeRatio") \
    X(DOT,        "Dot") \
    X(OUTER,      "Dot") \
    X(TENSORDOT,  "TensorDot") \
    X(MATMUL,     "MatMul") \
    X(LINALG,     "LUFactor MatrixInverse Det LogDet Cholesky Trace TriScale Adjugate") \
    X(SOLVE,      "Solve") \
    X(XENT,       "CrossEntropy OneHot") \
    X(GRADMOD,    "ZeroGrad DisconnectedGrad ConsiderConstant GradClip GradScale UndefinedGrad") \
    X(SLICE,      "Slice") \
    X(INDEX,      "Index") \
    X(TAKE,       "Take") \
    X(UPDATE,     "ViewUpdate TakeUpdate") \
    X(CONCAT,     "Join") \
    X(STACK,      "Join DimShuffle") \
    X(SPLIT,      "Split") \
    X(BCAST_TO,   "BroadcastTo") \
    X(TILE,       "Tile Untile") \
    X(FILL_LIKE,  "") \
    X(LEAF,       "") \
    X(USER,       "") \
    X(LOOP,       "Scan Rows ScanPlace ScanGather") \
    X(ELEMWISE2,  "") \
    X(DIFF,       "Diff") \
    X(IFELSE,     "IfElse")
/* rows made only inside the library: by gr_jacobian (EyeLike, Unflatten, Batched) and gr_function
   (Banded, Fused) */
static const char fz_internal_rows[] = "EyeLike Unflatten Batched Banded Fused";

#define FZ_ST_ENUM(name, rows) FZ_ST_##name,
enum { FZ_STRUCT(FZ_ST_ENUM) FZ_N_ST };
#undef FZ_ST_ENUM
#define FZ_ST_ROWS(name, rows) " " rows
static const char fz_struct_rows[] = FZ_STRUCT(FZ_ST_ROWS) " ";
#undef FZ_ST_ROWS

static int fz_word_in(const char *list, const char *w) {
    size_t n = strlen(w);
    const char *s = list;
    while ((s = strstr(s, w)) != NULL) {
        if ((s == list || s[-1] == ' ') && (s[n] == ' ' || s[n] == 0)) return 1;
        s += n;
    }
    return 0;
}

/* every structural row must be reached: a new row without a case here fails every run */
static void fz_check_coverage(void) {
#define FZ_ROW(Name, ...) \
    FZ_ASSERT(fz_word_in(fz_struct_rows, #Name) || fz_word_in(fz_internal_rows, #Name), \
              "structural row %s has no case in tests/fuzz/fuzz_graph.c (add one to FZ_STRUCT)", #Name);
    GR_STRUCT_OPS(FZ_ROW)
#undef FZ_ROW
}

/* a small constant made from bytes */
static gr_var *fz_small_const(fz_ctx *c, gr_dtype dt, int ndim, const int64_t *shape, uint8_t seed) {
    uint64_t s = seed;
    gr_array *a;
    gr_var *v;
    int64_t i;
    fz_tok t;
    int armed = fa.armed;
    fa.armed = 0;                                   /* (the program's own data: never refused) */
    a = gr_array_new(dt, ndim, shape);
    fa.armed = armed;
    if (!a) return NULL;
    for (i = 0; i < a->size; i++) gr_array_set(a, i, fz_value(&s, dt, 0));
    t = fz_pre(c, 0, NULL);
    v = gr_constant(c->g, a);
    v = fz_post(c, t, v, "gr_constant", 0);
    gr_array_free(a);
    return v;
}

static void fz_push_all(fz_ctx *c, int n, gr_var **vs) {
    int i;
    for (i = 0; i < n; i++)
        if (vs[i] && c->n < FZ_POOL && !gr_is_disconnected(vs[i]) && !gr_is_null(vs[i]) && !fz_too_big(vs[i])) c->pool[c->n++] = vs[i];
}

/* a multi-output call (gr_split, gr_apply): failure sets every entry to NULL */
static void fz_multi(fz_ctx *c, fz_tok t, gr_status st, int n_out, gr_var **out, const char *what) {
    int i;
    gr_status s = gr_graph_status(c->g);
    fa.armed = t.was_armed;
    FZ_ASSERT(fz_status_ok(st), "%s: status %d", what, (int)st);
    fz_outcome(t.refused, st, what, gr_graph_message(c->g));
    if (st != GR_OK) {
        for (i = 0; i < n_out; i++) FZ_ASSERT(out[i] == NULL, "%s failed but output %d is set", what, i);
        FZ_ASSERT(s == st, "%s returned %s but recorded %s (%s)", what, gr_status_string(st), gr_status_string(s), gr_graph_message(c->g));
    } else {
        FZ_ASSERT(s == GR_OK, "%s succeeded and recorded %s", what, gr_status_string(s));
        for (i = 0; i < n_out; i++) FZ_ASSERT(out[i] != NULL, "%s succeeded with output %d NULL", what, i);
        fz_push_all(c, n_out, out);
    }
    fz_clear(c);
}

/* the body of the fuzzer's loops: the latest state plus the sum of the sequence's taps, in the
   state's dtype, with a while condition on the sum of the new state when asked. in: the sequence's
   taps (n_seq of them), then the state's (n_state, the latest last) */
typedef struct fz_loop_ctx { int until, n_seq, n_state; double threshold; } fz_loop_ctx;
static gr_status fz_loop_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    const fz_loop_ctx *lc = (const fz_loop_ctx *)user;
    gr_var *state = in[lc->n_seq + lc->n_state - 1], *sum = gr_sum(in[0]), *o;
    if (lc->n_seq == 2) sum = gr_add(sum, gr_sum(in[1]));
    o = gr_add(state, sum);
    out[0] = o ? gr_cast(o, gr_var_dtype(state)) : NULL;
    if (lc->until && out[0]) *until = gr_gt(gr_sum(out[0]), gr_const(g, lc->threshold));
    return out[0] ? GR_OK : gr_graph_status(g);
}

/* one op of the program */
static void fz_op(fz_ctx *c, const uint8_t *b) {
    int code = b[0] % (FZ_N_EW + FZ_N_ST);
    gr_var *x = fz_pick(c, b[1]), *y, *z, *v = NULL;
    int nd = x ? gr_var_ndim(x) : 0;
    fz_tok t;
    if (!x) return;
    if (code < FZ_N_EW) {
        const fz_ew *e = &fz_ews[code];
        y = fz_pick(c, b[2]);
        z = fz_pick(c, b[3]);
        if (e->arity == 1) { t = FZ_PRE(c, x, NULL, NULL); v = e->f1(x); }
        else if (e->arity == 2) { t = FZ_PRE(c, x, y, NULL); v = e->f2(x, y); }
        else { t = FZ_PRE(c, x, y, z); v = e->f3(x, y, z); }
        fz_post(c, t, v, e->name, 1);
        return;
    }
    switch (code - FZ_N_EW) {
    case FZ_ST_CAST:
        t = FZ_PRE(c, x, NULL, NULL);
        v = gr_cast(x, (gr_dtype)(b[2] % 5 == 4 ? 7 : b[2] % 4));      /* 7: not a dtype */
        fz_post(c, t, v, "gr_cast", 1);
        break;
    case FZ_ST_REDUCE: {
        static gr_var *(*const all[5])(gr_var *) = { gr_sum, gr_mean, gr_prod, gr_max, gr_min };
        static gr_var *(*const one[5])(gr_var *, int) = { gr_sum_axis, gr_mean_axis, gr_prod_axis, gr_max_axis, gr_min_axis };
        static gr_var *(*const many[5])(gr_var *, int, const int *, int) = { gr_sum_axes, gr_mean_axes, gr_prod_axes, gr_max_axes, gr_min_axes };
        int k = b[2] % 5, form = b[3] % 3, axes[3], n = b[4] % 4, i;
        for (i = 0; i < 3; i++) axes[i] = fz_axis((uint8_t)(b[5] + 37 * i), nd);
        if (n > 1 && (b[5] & 1) == 0 && nd >= 2) { axes[0] = 0; axes[1] = nd - 1; }    /* distinct, mostly */
        t = FZ_PRE(c, x, NULL, NULL);
        if (form == 0) v = all[k](x);
        else if (form == 1) v = one[k](x, fz_axis(b[5], nd));
        else v = many[k](x, n == 3 ? 1 : n, axes, b[4] >> 7);
        fz_post(c, t, v, "a reduction", 1);
        break;
    }
    case FZ_ST_ARGMAX: t = FZ_PRE(c, x, NULL, NULL); fz_post(c, t, gr_argmax_axis(x, fz_axis(b[2], nd)), "gr_argmax_axis", 1); break;
    case FZ_ST_CUMSUM: t = FZ_PRE(c, x, NULL, NULL); fz_post(c, t, gr_cumsum(x, fz_axis(b[2], nd)), "gr_cumsum", 1); break;
    case FZ_ST_DIFF: t = FZ_PRE(c, x, NULL, NULL); fz_post(c, t, gr_diff(x, fz_axis(b[2], nd)), "gr_diff", 1); break;
    case FZ_ST_CUMPROD: t = FZ_PRE(c, x, NULL, NULL); fz_post(c, t, gr_cumprod(x, fz_axis(b[2], nd)), "gr_cumprod", 1); break;
    case FZ_ST_LOGSUMEXP: t = FZ_PRE(c, x, NULL, NULL); fz_post(c, t, gr_logsumexp(x, fz_axis(b[2], nd)), "gr_logsumexp", 1); break;
    case FZ_ST_SOFTMAX: t = FZ_PRE(c, x, NULL, NULL); fz_post(c, t, gr_softmax(x, fz_axis(b[2], nd)), "gr_softmax", 1); break;
    case FZ_ST_LOGSOFTMAX: t = FZ_PRE(c, x, NULL, NULL); fz_post(c, t, gr_log_softmax(x, fz_axis(b[2], nd)), "gr_log_softmax", 1); break;
    case FZ_ST_TRANSPOSE: t = FZ_PRE(c, x, NULL, NULL); fz_post(c, t, gr_transpose(x), "gr_transpose", 1); break;
    case FZ_ST_DIMSHUFFLE: {
        int pat[GR_MAX_NDIM + 2], n = 0, i, j, perm[GR_MAX_NDIM], extra = b[3] % 3;
        for (i = 0; i < nd && i < GR_MAX_NDIM; i++) perm[i] = i;
        for (i = nd - 1; i > 0; i--) {                  /* a permutation from the bytes */
            int r = (int)((b[2] * 7u + (unsigned)i * 13u) % (unsigned)(i + 1)), tmp = perm[i];
            perm[i] = perm[r]; perm[r] = tmp;
        }
        for (i = 0, j = 0; i < nd + extra && n < GR_MAX_NDIM + 2; i++) {
            if (j < nd && (i >= extra || !((b[4] >> i) & 1))) pat[n++] = perm[j++];
            else pat[n++] = GR_NEWAXIS;
        }
        if ((b[5] & 7) == 0 && n > 0) n--;               /* drops the last entry (an error unless broadcastable) */
        if ((b[5] & 7) == 1 && n > 0) pat[0] = pat[n - 1]; /* a repeated axis (an error) */
        t = FZ_PRE(c, x, NULL, NULL);
        fz_post(c, t, gr_dimshuffle(x, n, pat), "gr_dimshuffle", 1);
        break;
    }
    case FZ_ST_RESHAPE: {
        static const int64_t dims[8] = { -1, 1, 2, 3, 0, 4, 6, -1 };
        int64_t sh[4];
        int n = b[2] % 4, i;
        for (i = 0; i < n; i++) sh[i] = dims[(b[3] >> (2 * i)) & 7];
        if ((b[4] & 3) == 0) { n = 1; sh[0] = -1; }                      /* to a vector */
        else if ((b[4] & 3) == 1) { n = 2; sh[0] = 1; sh[1] = -1; }      /* to a row */
        t = FZ_PRE(c, x, NULL, NULL);
        fz_post(c, t, gr_reshape(x, n, sh), "gr_reshape", 1);
        break;
    }
    case FZ_ST_FLATTEN: t = FZ_PRE(c, x, NULL, NULL); fz_post(c, t, gr_flatten(x), "gr_flatten", 1); break;
    case FZ_ST_LIKE:
        y = fz_pick(c, b[2]);
        t = FZ_PRE(c, x, y, NULL);
        switch (b[3] % 4) {
        case 0: fz_post(c, t, gr_broadcast_like(x, y), "gr_broadcast_like", 1); break;
        case 1: fz_post(c, t, gr_reduce_like(x, y), "gr_reduce_like", 1); break;
        case 2: fz_post(c, t, gr_reshape_like(x, y), "gr_reshape_like", 1); break;
        default: fz_post(c, t, gr_size_ratio(x, y, (gr_dtype)(b[4] % 4)), "gr_size_ratio", 1); break;
        }
        break;
    case FZ_ST_DOT: y = fz_pick(c, b[2]); t = FZ_PRE(c, x, y, NULL); fz_post(c, t, gr_dot(x, y), "gr_dot", 1); break;
    case FZ_ST_OUTER: y = fz_pick(c, b[2]); t = FZ_PRE(c, x, y, NULL); fz_post(c, t, gr_outer(x, y), "gr_outer", 1); break;
    case FZ_ST_TENSORDOT: {
        int n = b[3] % 3, aa[2], ba[2], i;
        y = fz_pick(c, b[2]);
        for (i = 0; i < 2; i++) {
            aa[i] = fz_axis((uint8_t)(b[4] >> (4 * i) | (b[5] & 0xC0)), nd);
            ba[i] = fz_axis((uint8_t)(b[5] >> (3 * i)), y ? gr_var_ndim(y) : 0);
        }
        if (n == 2 && (b[4] & 1) && nd >= 2 && y && gr_var_ndim(y) >= 2) { aa[0] = nd - 2; aa[1] = nd - 1; ba[0] = 0; ba[1] = 1; }
        t = FZ_PRE(c, x, y, NULL);
        fz_post(c, t, gr_tensordot(x, y, n, aa, ba), "gr_tensordot", 1);
        break;
    }
    case FZ_ST_MATMUL: y = fz_pick(c, b[2]); t = FZ_PRE(c, x, y, NULL); fz_post(c, t, gr_matmul(x, y), "gr_matmul", 1); break;
    case FZ_ST_LINALG:
        t = FZ_PRE(c, x, NULL, NULL);
        switch (b[2] % 5) {
        case 0: fz_post(c, t, gr_matrix_inverse(x), "gr_matrix_inverse", 1); break;
        case 1: fz_post(c, t, gr_det(x), "gr_det", 1); break;
        case 2: fz_post(c, t, gr_logdet(x), "gr_logdet", 1); break;
        case 3: fz_post(c, t, gr_cholesky(x), "gr_cholesky", 1); break;
        default: fz_post(c, t, gr_trace(x), "gr_trace", 1); break;
        }
        break;
    case FZ_ST_SOLVE: y = fz_pick(c, b[2]); t = FZ_PRE(c, x, y, NULL); fz_post(c, t, gr_solve(x, y), "gr_solve", 1); break;
    case FZ_ST_XENT:
        y = (b[3] & 1) ? fz_pick_dt(c, b[2], GR_I64) : fz_pick(c, b[2]);
        t = FZ_PRE(c, x, y, NULL);
        fz_post(c, t, gr_crossentropy(x, y), "gr_crossentropy", 1);
        break;
    case FZ_ST_GRADMOD:
        t = FZ_PRE(c, x, NULL, NULL);
        switch (b[2] % 6) {
        case 0: fz_post(c, t, gr_zero_grad(x), "gr_zero_grad", 1); break;
        case 1: fz_post(c, t, gr_disconnected_grad(x), "gr_disconnected_grad", 1); break;
        case 2: fz_post(c, t, gr_consider_constant(x), "gr_consider_constant", 1); break;
        case 3: fz_post(c, t, gr_grad_clip(x, -(double)(b[3] % 4), (double)(b[4] % 4) - 1.0), "gr_grad_clip", 1); break;
        case 4: fz_post(c, t, gr_grad_scale(x, (double)(b[3] % 7) - 3.0), "gr_grad_scale", 1); break;
        default: fz_post(c, t, gr_undefined_grad(x), "gr_undefined_grad", 1); break;
        }
        break;
    case FZ_ST_SLICE:
        t = FZ_PRE(c, x, NULL, NULL);
        fz_post(c, t, gr_slice(x, fz_axis(b[2], nd), fz_pos(b[3]), fz_pos(b[4]), fz_step(b[5])), "gr_slice", 1);
        break;
    case FZ_ST_INDEX: {
        int ax = fz_axis(b[2], nd);
        int64_t i = fz_pos(b[3]);
        if (i == GR_OPEN) i = INT64_MIN;
        t = FZ_PRE(c, x, NULL, NULL);
        fz_post(c, t, gr_index(x, ax, i), "gr_index", 1);
        break;
    }
    case FZ_ST_TAKE: {
        int64_t shape[2];
        shape[0] = fz_size(b[3]); shape[1] = fz_size(b[4]);
        y = (b[5] & 1) ? fz_pick_dt(c, b[2], GR_I64) : fz_small_const(c, GR_I64, (b[5] >> 6) % 3, shape, b[2]);
        if (!y) break;
        t = FZ_PRE(c, x, y, NULL);
        fz_post(c, t, gr_take(x, y, fz_axis(b[5] >> 1, nd)), "gr_take", 1);
        break;
    }
    case FZ_ST_UPDATE: {
        gr_var *view = x;
        gr_node *o = gr_var_owner(x);
        const char *on = o ? gr_node_op(o)->name : "";
        if (!(strcmp(on, "Slice") == 0 || strcmp(on, "Index") == 0 || strcmp(on, "Take") == 0) || (b[4] & 1)) {
            t = FZ_PRE(c, x, NULL, NULL);       /* a new view of x */
            if (b[4] & 2) view = gr_index(x, fz_axis(b[2], nd), (int64_t)(b[5] % 3) - 1);
            else view = gr_slice(x, fz_axis(b[2], nd), fz_pos(b[5]), fz_pos((uint8_t)(b[5] >> 4)), fz_step(b[2] >> 4));
            if (!fz_post(c, t, view, "a view", 1)) break;
            o = gr_var_owner(view);
        }
        y = (b[4] & 8) ? gr_node_input(o, 0) : fz_pick(c, b[3]);      /* the view's base itself, sometimes */
        t = FZ_PRE(c, view, y, NULL);
        if (b[4] & 4) fz_post(c, t, gr_inc_subtensor(view, y), "gr_inc_subtensor", 1);
        else fz_post(c, t, gr_set_subtensor(view, y), "gr_set_subtensor", 1);
        break;
    }
    case FZ_ST_CONCAT:
    case FZ_ST_STACK: {
        gr_var *xs[3] = { NULL, NULL, NULL };
        int n = b[2] % 4, i, stack = code - FZ_N_EW == FZ_ST_STACK;
        for (i = 0; i < n; i++) xs[i] = (b[3] >> (6 - 2 * i) & 1) ? x : fz_pick(c, b[4 + (i & 1)] ^ (uint8_t)(i * 5));
        t = fz_pre(c, n, xs);
        if (n == 0) t.nonnull = 0;                /* (no operand: no graph to record an error on) */
        if (stack) fz_post(c, t, gr_stack(n, xs, fz_axis(b[5], nd + 1)), "gr_stack", 1);
        else fz_post(c, t, gr_concatenate(n, xs, fz_axis(b[5], nd)), "gr_concatenate", 1);
        break;
    }
    case FZ_ST_IFELSE: {                          /* cond ? x : y, and y : x as a second pair */
        gr_var *out[2], *th[2], *el[2], *cond = fz_pick(c, b[3]);
        int n = 1 + (b[2] & 1);
        gr_status st;
        y = fz_pick(c, b[4]);
        th[0] = x; el[0] = y; th[1] = y; el[1] = x;
        t = FZ_PRE(c, x, y, cond);
        st = gr_ifelse(cond, n, th, el, out);
        fz_multi(c, t, st, n, out, "gr_ifelse");
        break;
    }
    case FZ_ST_SPLIT: {
        int64_t sizes[3], len;
        gr_var *out[3];
        int n = 1 + b[2] % 3, ax = fz_axis(b[3], nd), i;
        gr_status st;
        for (i = 0; i < n; i++) sizes[i] = fz_size((uint8_t)(b[4] >> (2 * i)));
        if ((b[5] & 1) && fz_static_dim(x, ax < 0 ? ax + nd : ax, &len)) {     /* sizes that add up */
            int64_t left = len;
            for (i = 0; i < n - 1; i++) { if (sizes[i] > left) sizes[i] = left; left -= sizes[i]; }
            sizes[n - 1] = left;
        }
        t = FZ_PRE(c, x, NULL, NULL);
        st = gr_split(x, ax, n, sizes, out);
        fz_multi(c, t, st, n, out, "gr_split");
        break;
    }
    case FZ_ST_BCAST_TO: {
        int64_t sh[4];
        int n = b[2] % 4 + (b[2] & 4 ? 0 : nd > 3 ? 0 : 1), i;
        gr_type ty;
        if (n > 4) n = 4;
        gr_var_type(x, &ty);
        for (i = 0; i < n; i++) {                 /* x's static shape where known, right-aligned */
            int k = i - (n - nd);
            sh[i] = fz_size((uint8_t)(b[3] >> i));
            if (k >= 0 && ty.shape[k] > 1 && !((b[4] >> i) & 1)) sh[i] = ty.shape[k];
        }
        t = FZ_PRE(c, x, NULL, NULL);
        fz_post(c, t, gr_broadcast_to(x, n, sh), "gr_broadcast_to", 1);
        break;
    }
    case FZ_ST_TILE: {
        static const int64_t reps_t[4] = { 1, 2, 3, 0 };
        int64_t reps[4];
        int n = b[2] % 5, i;
        for (i = 0; i < n; i++) reps[i] = reps_t[(b[3] >> (2 * i)) & 3];
        t = FZ_PRE(c, x, NULL, NULL);
        fz_post(c, t, gr_tile(x, n, reps), "gr_tile", 1);
        break;
    }
    case FZ_ST_FILL_LIKE:
        t = FZ_PRE(c, x, NULL, NULL);
        if (b[2] & 1) fz_post(c, t, gr_zeros_like(x), "gr_zeros_like", 1);
        else fz_post(c, t, gr_ones_like(x), "gr_ones_like", 1);
        break;
    case FZ_ST_LEAF: {
        int64_t shape[2];
        if (b[2] & 1) {
            t = fz_pre(c, 0, NULL);
            fz_post(c, t, gr_const(c->g, (double)(int)(b[3] % 9) - 4.0 + ((b[3] & 16) ? 0.5 : 0.0)), "gr_const", 1);
        } else if (b[2] & 2) {
            t = fz_pre(c, 0, NULL);
            fz_post(c, t, gr_arange(c->g, (double)(b[3] % 5) - 2.0, (double)(b[4] % 7) - 2.0, (double)(b[5] % 5) - 2.0 + ((b[5] & 8) ? 0.5 : 0.0),
                                    (gr_dtype)(b[2] >> 2 & 3)), "gr_arange", 1);
        } else {
            shape[0] = fz_size(b[3]); shape[1] = fz_size(b[4]);
            v = fz_small_const(c, (gr_dtype)(b[5] & 3), (b[5] >> 2) % 3, shape, b[5]);
            if (v && c->n < FZ_POOL) c->pool[c->n++] = v;
        }
        break;
    }
    case FZ_ST_LOOP: {                            /* a loop: a state moved by a sequence (gradients reach the rest) */
        gr_var *seq = x, *init = fz_pick(c, b[3]), *res[1] = { NULL }, *n_steps = NULL;
        static const int taps2[2] = { -1, 1 }, otaps2[2] = { -2, -1 };
        gr_scan_seq sq;
        gr_scan_out so;
        gr_scan_opts op;
        fz_loop_ctx lc;
        gr_var *ins[2];
        gr_status st;
        memset(&op, 0, sizeof op);
        sq.x = seq; sq.n_taps = (b[2] & 1) ? 2 : 0; sq.taps = (b[2] & 1) ? taps2 : NULL;
        so.initial = init; so.n_taps = (b[2] & 2) ? 2 : 0; so.taps = (b[2] & 2) ? otaps2 : NULL;
        op.go_backwards = (b[2] >> 2) & 1;
        op.checkpoints = (b[2] >> 3) & 1 ? 2 : 0;
        op.truncate_gradient = (b[2] >> 4) & 1 ? 2 : 0;
        if ((b[2] >> 5) & 1) {
            int armed = fa.armed;
            gr_array *na;
            fa.armed = 0;                               /* (the program's own data: never refused) */
            na = gr_array_scalar(GR_I64, (double)(b[4] % 4));
            fa.armed = armed;
            if (na) {
                t = fz_pre(c, 0, NULL);
                n_steps = fz_post(c, t, gr_constant(c->g, na), "gr_constant", 0);
                gr_array_free(na);
                if (!n_steps) break;
            }
        }
        op.n_steps = n_steps;
        lc.until = (b[2] >> 6) & 1;
        lc.threshold = (double)(b[5] % 7) - 3.0;
        lc.n_seq = sq.n_taps ? 2 : 1;
        lc.n_state = so.n_taps ? 2 : 1;
        ins[0] = seq; ins[1] = init;
        t = fz_pre(c, 2, ins);
        st = gr_scan(fz_loop_step, &lc, 1, &sq, 1, &so, 0, NULL, &op, res);
        fz_multi(c, t, st, 1, res, "gr_scan");
        break;
    }
    case FZ_ST_USER: {
        gr_var *ins[2], *outs[2];
        const gr_op_def *op = (b[2] & 3) == 0 ? &fz_op_twice : (b[2] & 3) == 1 ? &fz_op_twice_nograd : &fz_op_pm;
        gr_status st;
        if ((b[2] & 15) == 15) op = &fz_op_noperform;          /* refused: GR_ERR_VALUE */
        ins[0] = x;
        ins[1] = fz_pick(c, b[3]);
        t = fz_pre(c, op->n_in, ins);
        st = gr_apply(op, NULL, 0, op->n_in, ins, outs);
        fz_multi(c, t, st, op->n_out, outs, op->name);
        break;
    }
    default: {                                    /* a second elementwise draw: they are the most common ops */
        const fz_ew *e = &fz_ews[(b[2] + 256 * b[3]) % FZ_N_EW];
        y = fz_pick(c, b[4]);
        z = fz_pick(c, b[5]);
        if (e->arity == 1) { t = FZ_PRE(c, x, NULL, NULL); v = e->f1(x); }
        else if (e->arity == 2) { t = FZ_PRE(c, x, y, NULL); v = e->f2(x, y); }
        else { t = FZ_PRE(c, x, y, z); v = e->f3(x, y, z); }
        fz_post(c, t, v, e->name, 1);
        break;
    }
    }
}

/* ---- leaves and their data ------------------------------------------------------------------ */

static void fz_leaf_info(const fz_prog *p, int i, fz_leafinfo *li) {
    const uint8_t *b = p->leaf[i];
    static const int kinds[8] = { FZ_L_INPUT, FZ_L_INPUT, FZ_L_INPUT, FZ_L_INPUT, FZ_L_CONST, FZ_L_SHARED, FZ_L_WEAK, FZ_L_ARANGE };
    int d;
    memset(li, 0, sizeof *li);
    li->kind = kinds[b[0] & 7];
    li->dt = (gr_dtype)(b[1] & 3);
    li->ndim = b[2] >= 250 ? 4 : b[2] % 4;
    for (d = 0; d < li->ndim; d++) {
        uint8_t s = b[3 + (d < 4 ? d : 3)];
        li->shape[d] = fz_size(s);
        li->decl[d] = (s & 8) ? li->shape[d] : (li->shape[d] == 1 && (s & 16)) ? 1 : -1;
    }
    li->special = b[7] >> 7;
    li->seed = b[7];
}

/* the data of an input or shared leaf at call `round`: round 1 may change the call-time sizes */
static gr_array *fz_leaf_data(const fz_leafinfo *li, int round, int resize) {
    int64_t shape[GR_MAX_NDIM];
    uint64_t s = (uint64_t)li->seed * 1000003u + (uint64_t)round;
    gr_array *a;
    int64_t i;
    int d, armed = fa.armed;
    for (d = 0; d < li->ndim; d++) {
        shape[d] = li->shape[d];
        if (round && resize && li->decl[d] < 0) shape[d] = (shape[d] + 1 + d) % 4;
    }
    fa.armed = 0;                                   /* (the program's own data: never refused) */
    a = gr_array_new(li->dt, li->ndim, shape);
    fa.armed = armed;
    for (i = 0; a && i < a->size; i++) gr_array_set(a, i, fz_value(&s, li->dt, li->special));
    return a;
}

static void fz_make_leaf(fz_ctx *c, int i) {
    fz_leafinfo *li = &c->li[i];
    char name[2];
    gr_var *v = NULL;
    fz_tok t;
    name[0] = (char)('a' + i); name[1] = 0;
    if (li->kind == FZ_L_INPUT && c->replay) {
        /* gr_verify_grad's inputs stand for the float input leaves, the others become constants */
        int k, j = 0;
        for (k = 0; k < i; k++) j += c->li[k].kind == FZ_L_INPUT && (c->li[k].dt == GR_F64 || c->li[k].dt == GR_F32);
        if (li->dt == GR_F64 || li->dt == GR_F32) v = c->replay_in[j];
        else {
            gr_array *a = fz_leaf_data(li, 0, 0);
            if (a) { t = fz_pre(c, 0, NULL); v = fz_post(c, t, gr_constant(c->g, a), "gr_constant", 0); }
            gr_array_free(a);
        }
    } else if (li->kind == FZ_L_INPUT) {
        t = fz_pre(c, 0, NULL);
        int d, unknown = 1;
        for (d = 0; d < li->ndim; d++) if (li->decl[d] >= 0) unknown = 0;
        if (unknown && li->ndim == 0) v = gr_scalar(c->g, li->dt, name);          /* the same leaves, other spellings */
        else if (unknown && li->ndim == 1) v = gr_vector(c->g, li->dt, name);
        else if (unknown && li->ndim == 2) v = gr_matrix(c->g, li->dt, name);
        else v = gr_tensor(c->g, li->dt, li->ndim, li->decl, name);
        v = fz_post(c, t, v, "gr_tensor", 0);
    } else if (li->kind == FZ_L_CONST || li->kind == FZ_L_SHARED) {
        gr_array *a = fz_leaf_data(li, 0, 0);
        if (a) {
            t = fz_pre(c, 0, NULL);
            v = li->kind == FZ_L_CONST ? gr_constant(c->g, a) : gr_shared(c->g, a, name);
            v = fz_post(c, t, v, li->kind == FZ_L_CONST ? "gr_constant" : "gr_shared", 0);
        }
        gr_array_free(a);
    } else if (li->kind == FZ_L_WEAK) {
        t = fz_pre(c, 0, NULL);
        v = fz_post(c, t, gr_const(c->g, (double)(li->seed % 9) - 4.0 + ((li->seed & 16) ? 0.5 : 0)), "gr_const", 0);
    } else {
        t = fz_pre(c, 0, NULL);
        v = fz_post(c, t, gr_arange(c->g, (double)(li->seed % 3) - 1.0, (double)(li->seed % 7), (li->seed & 8) ? 1.0 : 0.5, li->dt),
                    "gr_arange", 0);
    }
    c->leafv[i] = v;
    if (v && c->n < FZ_POOL) c->pool[c->n++] = v;
}

static void fz_build(fz_ctx *c, int from, int to) {
    int k;
    for (k = from; k < to && !c->dead; k++) fz_op(c, c->p->op[k]);
}

/* ---- gr_verify_grad's builder: the same program over its graph ------------------------------- */

typedef struct fz_vg { const fz_prog *p; } fz_vg;
static gr_var *fz_vg_build(gr_graph *g, gr_var *const *inputs, void *user) {
    fz_vg *u = (fz_vg *)user;
    fz_ctx *c = (fz_ctx *)calloc(1, sizeof *c);
    gr_var *out;
    int i;
    if (!c) return NULL;
    gr_graph_set_log(g, fz_ignore_log, NULL);
    c->p = u->p;
    c->g = g;
    c->replay = 1;
    c->replay_in = inputs;
    for (i = 0; i < c->p->n_leaves; i++) fz_leaf_info(c->p, i, &c->li[i]);
    for (i = 0; i < c->p->n_leaves && !c->dead; i++) fz_make_leaf(c, i);
    fz_build(c, 0, c->p->n_ops1);
    out = c->n && !c->dead ? c->pool[c->n - 1] : NULL;
    free(c);
    return out;
}

/* ---- drivers ---------------------------------------------------------------------------------- */

typedef struct fz_run {
    fz_ctx c;
    gr_var *outs[FZ_OUTS];
    int n_outs;
    gr_var *ins[FZ_LEAVES];
    int n_ins, in_leaf[FZ_LEAVES];
    gr_update upd[FZ_LEAVES];
    int n_upd;
    int marker_out;                   /* a marker was put among the outputs on purpose */
} fz_run;

static void fz_out(fz_run *r, gr_var *v) {
    if (v && r->n_outs < FZ_OUTS && !gr_is_disconnected(v) && !gr_is_null(v)) r->outs[r->n_outs++] = v;
}

/* the checks common to every driver; null_ok: entries may be NULL on success (GR_RETURN_NONE) */
static void fz_driver(fz_run *r, fz_tok t, gr_status st, int n, gr_var **out, int null_ok, const char *what) {
    fz_ctx *c = &r->c;
    gr_status s = gr_graph_status(c->g);
    int i;
    fa.armed = t.was_armed;
    FZ_ASSERT(fz_status_ok(st), "%s: status %d", what, (int)st);
    fz_outcome(t.refused, st, what, gr_graph_message(c->g));
    FZ_ASSERT(gr_status_string(st)[0] != 0, "%s: no text for status %d", what, (int)st);
    for (i = 0; st == GR_OK && i < n; i++)              /* the accessors, on whatever came back */
        if (out[i]) {
            gr_node *o = gr_var_owner(out[i]);
            int j;
            FZ_ASSERT(!gr_is_null(out[i]) || gr_null_reason(out[i])[0], "%s: a null gradient without a reason", what);
            if (o) {
                for (j = 0; j < gr_node_n_outputs(o); j++) FZ_ASSERT(gr_node_output(o, j) != NULL, "%s: node output %d NULL", what, j);
                for (j = 0; j < gr_node_n_inputs(o); j++) FZ_ASSERT(gr_node_input(o, j) != NULL, "%s: node input %d NULL", what, j);
                (void)gr_node_params(o);
            }
            if (gr_var_name(out[i]) && (c->p->head[6] & 2)) gr_var_set_name(out[i], "renamed");
        }
    if (st != GR_OK) {
        for (i = 0; i < n; i++) FZ_ASSERT(out[i] == NULL, "%s failed (%s) but output %d is set", what, gr_status_string(st), i);
        FZ_ASSERT(s == st, "%s returned %s but recorded %s (%s)", what, gr_status_string(st), gr_status_string(s), gr_graph_message(c->g));
    } else {
        FZ_ASSERT(s == GR_OK, "%s succeeded and recorded %s (%s)", what, gr_status_string(s), gr_graph_message(c->g));
        for (i = 0; i < n; i++) FZ_ASSERT(null_ok || out[i] != NULL, "%s succeeded with output %d NULL", what, i);
        for (i = 0; i < n; i++) fz_out(r, out[i]);
        fz_push_all(c, n, out);
    }
    gr_graph_clear_error(c->g);
}

static gr_var *fz_as_f64(fz_ctx *c, gr_var *v) {
    fz_tok t = FZ_PRE(c, v, NULL, NULL);
    return fz_post(c, t, gr_cast(v, GR_F64), "gr_cast", 0);
}

/* a 0-d float cost: the weighted sums of the chosen outputs */
static gr_var *fz_cost(fz_run *r, int n, gr_var *const *vs) {
    fz_ctx *c = &r->c;
    gr_var *cost = NULL, *s, *w;
    fz_tok t;
    int i;
    for (i = 0; i < n; i++) {
        if (!vs[i]) continue;
        t = FZ_PRE(c, vs[i], NULL, NULL);
        s = fz_post(c, t, gr_sum(vs[i]), "gr_sum", 0);
        if (s && !fz_isfloat(s)) s = fz_as_f64(c, s);
        if (!s) continue;
        t = fz_pre(c, 0, NULL);
        w = fz_post(c, t, gr_const(c->g, 0.5 + i), "gr_const", 0);
        if (!w) continue;                            /* out of memory: gr_mul(s, NULL) is silent by design */
        t = FZ_PRE(c, s, w, NULL);
        s = fz_post(c, t, gr_mul(s, w), "gr_mul", 0);
        if (!s) continue;
        if (!cost) cost = s;
        else { t = FZ_PRE(c, cost, s, NULL); cost = fz_post(c, t, gr_add(cost, s), "gr_add", 0); }
    }
    return cost;
}

static void fz_drivers(fz_run *r) {
    fz_ctx *c = &r->c;
    const uint8_t *d = c->p->drv;
    gr_var *wrt[6], *outs3[3], *res[8], *cost, *ev[6], *kv[1], *kg[1], *cc[1], *f2[2], *res2[8];
    gr_grad_opts go;
    gr_rop_opts ro;
    fz_tok t;
    gr_status st;
    int n_wrt = 0, i, n_f;
    if (c->n == 0) return;
    /* the outputs: the last value and two more */
    outs3[0] = c->pool[c->n - 1];
    outs3[1] = fz_pick(c, d[0]);
    outs3[2] = fz_pick(c, d[1]);
    for (i = 0; i < 3; i++) fz_out(r, outs3[i]);
    /* wrt: the inputs and shared variables, an intermediate, a duplicate, a constant */
    for (i = 0; i < c->p->n_leaves && n_wrt < 4; i++)
        if (c->leafv[i] && (c->li[i].kind == FZ_L_INPUT || c->li[i].kind == FZ_L_SHARED || ((d[2] >> i) & 1))) wrt[n_wrt++] = c->leafv[i];
    if ((d[2] & 0x60) == 0x20 && n_wrt < 6) wrt[n_wrt++] = fz_pick(c, d[3]);
    if ((d[2] & 0x60) == 0x40 && n_wrt > 0 && n_wrt < 6) wrt[n_wrt++] = wrt[0];
    if (n_wrt == 0) return;
    cost = fz_cost(r, d[4] % 3 + 1, outs3);
    if (!cost) return;
    fz_out(r, cost);

    /* gr_grad with random options */
    memset(&go, 0, sizeof go);
    go.disconnected_inputs = (gr_on_disconnected)(d[5] % 3 == 0 ? GR_RAISE : d[5] % 3 == 1 ? GR_WARN : GR_IGNORE);
    go.return_disconnected = (gr_return_disconnected)((d[5] >> 2) % 3);
    go.null_gradients = (gr_null_gradients)((d[5] >> 4) & 1);
    go.no_names = (d[5] >> 5) & 1;
    if (d[6] & 1) { cc[0] = fz_pick(c, d[7]); go.consider_constant = cc; go.n_consider_constant = 1; }
    if (d[6] & 2) {                                   /* known_grads: a pool value and ones like it */
        kv[0] = fz_pick(c, d[8]);
        t = FZ_PRE(c, kv[0], NULL, NULL);
        kg[0] = fz_post(c, t, (d[6] & 4) ? gr_ones_like(kv[0]) : gr_cos(kv[0]), "known grad", 0);
        if (kg[0]) { go.known_vars = kv; go.known_grads = kg; go.n_known = 1; }
    }
    t = fz_pre(c, 1, &cost);
    st = gr_grad((d[6] & 8) && go.n_known ? NULL : cost, n_wrt, wrt, res, &go);
    fz_driver(r, t, st, n_wrt, res, go.return_disconnected == GR_RETURN_NONE, "gr_grad");

    /* gr_grad1 */
    if (d[9] & 1) {
        t = FZ_PRE(c, cost, wrt[0], NULL);
        fz_post(c, t, gr_grad1(cost, wrt[d[9] % n_wrt]), "gr_grad1", 1);
        if (c->n) fz_out(r, c->pool[c->n - 1]);
    }
    /* a NULL wrt entry: a driver error */
    if ((d[9] & 6) == 6) {
        gr_var *w2[2];
        w2[0] = wrt[0]; w2[1] = NULL;
        t = fz_pre(c, 1, &cost);
        st = gr_grad(cost, 2, w2, res, NULL);
        FZ_ASSERT(st != GR_OK, "gr_grad with a NULL wrt entry succeeded");
        fz_driver(r, t, st, 2, res, 0, "gr_grad (NULL wrt)");
    }
    /* gr_lop: eval points like the outputs */
    n_f = 1 + (d[10] & 1);
    for (i = 0; i < n_f; i++) {
        f2[i] = outs3[i];
        t = FZ_PRE(c, f2[i], NULL, NULL);
        ev[i] = fz_post(c, t, (d[10] & 2) ? gr_ones_like(f2[i]) : f2[i], "lop eval point", 0);
    }
    if (ev[0] && ev[n_f - 1]) {
        memset(&go, 0, sizeof go);
        go.disconnected_inputs = GR_IGNORE;
        go.return_disconnected = (gr_return_disconnected)((d[10] >> 2) % 3);
        t = fz_pre(c, n_f, f2);
        st = gr_lop(n_f, f2, n_wrt, wrt, ev, res, &go);
        fz_driver(r, t, st, n_wrt, res, go.return_disconnected == GR_RETURN_NONE, "gr_lop");
    }
    /* gr_rop: eval points like wrt */
    for (i = 0; i < n_wrt; i++) {
        t = FZ_PRE(c, wrt[i], NULL, NULL);
        ev[i] = fz_post(c, t, (d[11] & 1) && fz_isfloat(wrt[i]) ? gr_cos(wrt[i]) : (d[11] & 2) ? gr_ones_like(wrt[i]) : wrt[i],
                        "rop eval point", 0);
        if (!ev[i]) break;
    }
    if (i == n_wrt) {
        memset(&ro, 0, sizeof ro);
        ro.disconnected_outputs = (gr_on_disconnected)((d[11] >> 2) % 3);
        ro.return_disconnected = (gr_return_disconnected)((d[11] >> 4) % 3);
        t = fz_pre(c, n_f, f2);
        st = gr_rop(n_f, f2, n_wrt, wrt, ev, res2, &ro);
        fz_driver(r, t, st, n_f, res2, ro.return_disconnected == GR_RETURN_NONE, "gr_rop");
    }
    /* gr_jacobian of an output, gr_hessian of the cost */
    if (d[12] & 1) {
        memset(&go, 0, sizeof go);
        go.disconnected_inputs = (d[12] & 2) ? GR_IGNORE : GR_RAISE;
        t = fz_pre(c, 1, &outs3[d[12] >> 6 == 3 ? 0 : d[12] >> 6]);
        st = gr_jacobian(outs3[d[12] >> 6 == 3 ? 0 : d[12] >> 6], n_wrt, wrt, res, &go);
        fz_driver(r, t, st, n_wrt, res, 0, "gr_jacobian");
    }
    if (d[12] & 4) {
        memset(&go, 0, sizeof go);
        go.disconnected_inputs = (d[12] & 8) ? GR_IGNORE : GR_RAISE;
        t = fz_pre(c, 1, &cost);
        st = gr_hessian(cost, n_wrt, wrt, res, &go);
        fz_driver(r, t, st, n_wrt, res, 0, "gr_hessian");
    }
    /* gr_subgraph_grad: an intermediate as the end, optionally a start with a known gradient */
    if (d[13] & 1) {
        gr_var *end[1], *sv[1], *sg[1], *eg[1];
        int n_start = 0;
        end[0] = fz_pick(c, d[14]);
        if (d[13] & 2) {
            sv[0] = outs3[0];
            t = FZ_PRE(c, sv[0], NULL, NULL);
            sg[0] = fz_post(c, t, gr_ones_like(sv[0]), "start gradient", 0);
            n_start = sg[0] != NULL;
        }
        t = fz_pre(c, 1, &cost);
        st = gr_subgraph_grad(n_wrt, wrt, 1, end, n_start, sv, sg, (d[13] & 4) && n_start ? NULL : cost, res, eg);
        fz_driver(r, t, st, n_wrt, res, 0, "gr_subgraph_grad");
        if (st == GR_OK) { FZ_ASSERT(eg[0] != NULL, "gr_subgraph_grad: end gradient NULL"); fz_out(r, eg[0]); }
        else FZ_ASSERT(eg[0] == NULL, "gr_subgraph_grad failed but its end gradient is set");
    }
}

/* ---- compile, call, compare ------------------------------------------------------------------ */

/* NaN-aware closeness of a (optimised) and b (not). The rewrites drop products by structural zeros
   (0 * x, the off-diagonal of a Jacobian, x - x) that the unoptimised graph computes as 0 * NaN or
   inf - inf: so a NaN of b may be any value in a, and a 0 in a may stand for a NaN or an infinity in
   b; the other way round is a failure. */
static int fz_close(double a, double b, double tol) {
    double m;
    if (b != b || (a == 0 && !isfinite(b))) return 1;
    if (a != a || b != b) return a != a && b != b;
    if (isinf(a) || isinf(b)) return a == b || fabs(a - b) <= tol * fmax(fabs(a), fabs(b));
    m = fmax(1.0, fmax(fabs(a), fabs(b)));
    return fabs(a - b) <= tol * m;
}

/* a call; checks the status and the message, and that an out-of-memory call can be repeated */
static gr_status fz_call(gr_fn *f, const gr_array *const *in, const gr_array **out, int n_out, const char *what) {
    long before = fa.refused;
    gr_status st = gr_call(f, in, out);
    int i;
    FZ_ASSERT(fz_status_ok(st), "%s: status %d", what, (int)st);
    fz_outcome(before, st, what, gr_fn_message(f));
    if (st == GR_OK) {
        FZ_ASSERT(gr_fn_message(f)[0] == 0, "%s: succeeded with message %s", what, gr_fn_message(f));
        for (i = 0; i < n_out; i++) FZ_ASSERT(out[i] != NULL, "%s: output %d NULL", what, i);
    } else {
        FZ_ASSERT(gr_fn_message(f)[0] != 0, "%s: %s without a message", what, gr_status_string(st));
        if (st == GR_ERR_NOMEM) {               /* the one refused allocation is past: the call works now */
            st = gr_call(f, in, out);
            FZ_ASSERT(fz_status_ok(st), "%s: status %d", what, (int)st);
            FZ_ASSERT(st != GR_OK || gr_fn_message(f)[0] == 0, "%s: message after success", what);
        }
    }
    return st;
}

/* does b hold a NaN or an infinity (or, with negzero, a -0)? */
static int fz_nonfinite_or(const gr_array *b, int negzero) {
    int64_t e;
    if (!b || !(b->dtype == GR_F64 || b->dtype == GR_F32)) return 0;
    for (e = 0; e < b->size; e++) {
        double v = gr_array_get(b, e);
        if (!isfinite(v) || (negzero && v == 0 && signbit(v))) return 1;
    }
    return 0;
}
static int fz_nonfinite(const gr_array *b) { return fz_nonfinite_or(b, 0); }

/* a (optimised) against b (not): dtype and shape, then the values. loose: the unoptimised results
   hold non-finite values, so a dropped product by zero may have changed a comparison or a cast
   downstream (see fz_close): integer and bool values are not compared */
static int fz_same_values(const gr_array *a, const gr_array *b, const char *what, int k, int loose, int report) {
    int64_t e;
    int d;
    /* (loose & 2: the program computes in float32 somewhere, and rewrites reorder its roundings
       even where the result is cast to float64) */
    double tol = (a->dtype == GR_F32 || b->dtype == GR_F32 || (loose & 2)) ? 2e-3 : 1e-7;
    loose &= 1;
    if (loose && !(a->dtype == GR_F64 || a->dtype == GR_F32)) return 1;
    for (d = 0; d < a->ndim; d++) if (a->shape[d] != b->shape[d]) return 1;      /* (reported as shapes) */
    for (e = 0; e < a->size; e++) {
        double x = gr_array_get(a, e), y = gr_array_get(b, e);
        int ok = (a->dtype == GR_F64 || a->dtype == GR_F32) ? fz_close(x, y, tol) : x == y;
        if (report) FZ_ASSERT(ok, "%s %d[%lld]: %.17g optimised, %.17g not", what, k, (long long)e, x, y);
        if (!ok) return 0;
    }
    return 1;
}
/* the dtypes and shapes must agree (always reported); the values: see fz_same_values */
static int fz_same(const gr_array *a, const gr_array *b, const char *what, int k, int loose, int report) {
    int d;
    FZ_ASSERT(a->dtype == b->dtype && a->ndim == b->ndim && a->size == b->size, "%s %d: %s %d-d (%lld) optimised, %s %d-d (%lld) not",
              what, k, gr_dtype_name(a->dtype), a->ndim, (long long)a->size, gr_dtype_name(b->dtype), b->ndim, (long long)b->size);
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->size != b->size) return 0;
    for (d = 0; d < a->ndim; d++) FZ_ASSERT(a->shape[d] == b->shape[d], "%s %d: axis %d is %lld optimised, %lld not", what, k, d,
                                            (long long)a->shape[d], (long long)b->shape[d]);
    return fz_same_values(a, b, what, k, loose, report);
}

/* A NaN made inside the graph and dropped by a rewrite (0 / x, 0 * x) may change a comparison
   downstream with every output finite; so may a -0 that a rewrite makes +0 (neg(0) and x * 0 give
   +0) for an op that tells them apart (arctan2, 1 / x). On a difference of values, the program's
   values (every variable of the pool) are computed unoptimised from the same inputs and shared
   values: a NaN, an infinity or a -0 among them excuses the difference. */
static int fz_hidden_nonfinite(fz_run *r, const gr_array *const *in, int n_shared, gr_var *const *shared, gr_array *const *sh_before) {
    fz_ctx *c = &r->c;
    gr_fn_opts o;
    gr_fn *probe;
    const gr_array *res[FZ_POOL];
    int i, found = 0;
    for (i = 0; i < n_shared; i++) if (gr_shared_set(shared[i], sh_before[i]) != GR_OK) found = 1;
    memset(&o, 0, sizeof o);
    o.optimize = GR_OPT_NONE;
    probe = found ? NULL : gr_function(r->n_ins, r->ins, c->n, c->pool, &o);
    gr_graph_clear_error(c->g);
    if (!probe || gr_call(probe, in, res) != GR_OK) found = 1;     /* (no verdict: excused) */
    for (i = 0; !found && i < c->n; i++) found = fz_nonfinite_or(res[i], 1);
    gr_fn_free(probe);
    return found;
}

static void fz_compile_and_run(fz_run *r) {
    fz_ctx *c = &r->c;
    const uint8_t *d = c->p->drv;
    gr_fn *f[2] = { NULL, NULL };
    gr_fn_opts o;
    gr_array *data[FZ_LEAVES];
    const gr_array *in[FZ_LEAVES];
    int lvl, round, i, k, n_shared = 0, shared_leaf[FZ_LEAVES];
    gr_status fn_st[2];
    gr_var *shared[FZ_LEAVES];
    FILE *sink;
    if (r->n_outs == 0) return;
    /* inputs: every input leaf, in order (sometimes one twice, or an output as an input: errors) */
    for (i = 0; i < c->p->n_leaves; i++) {
        if (c->leafv[i] && c->li[i].kind == FZ_L_INPUT) { r->in_leaf[r->n_ins] = i; r->ins[r->n_ins++] = c->leafv[i]; }
        if (c->leafv[i] && c->li[i].kind == FZ_L_SHARED) { shared_leaf[n_shared] = i; shared[n_shared++] = c->leafv[i]; }
    }
    /* updates: a shared variable := the latest pool value of its dtype and ndim */
    for (i = 0; i < n_shared; i++) {
        if (!((d[15] >> i) & 1)) continue;
        for (k = c->n - 1; k >= 0; k--)
            if (c->pool[k] != shared[i] && gr_var_dtype(c->pool[k]) == gr_var_dtype(shared[i]) &&
                gr_var_ndim(c->pool[k]) == gr_var_ndim(shared[i])) {
                r->upd[r->n_upd].shared = shared[i];
                r->upd[r->n_upd++].value = c->pool[k];
                break;
            }
    }
    memset(&o, 0, sizeof o);
    o.updates = r->upd;
    o.n_updates = r->n_upd;
    {   /* a bad input list, sometimes: an input twice, or a computed value as an input */
        int bad = (c->p->head[5] >> 4) & 3;
        if (bad == 1 && r->n_ins > 0 && r->n_ins < FZ_LEAVES) { r->in_leaf[r->n_ins] = r->in_leaf[0]; r->ins[r->n_ins] = r->ins[0]; r->n_ins++; }
        if (bad == 2 && r->n_ins > 0 && c->n > 0) r->ins[r->n_ins - 1] = c->pool[c->n - 1];
    }
    for (lvl = 0; lvl < 2; lvl++) {
        fz_tok t = fz_pre(c, 0, NULL);
        o.optimize = lvl ? GR_OPT_NONE : GR_OPT_FULL;
        f[lvl] = gr_function(r->n_ins, r->ins, r->n_outs, r->outs, &o);
        if (f[lvl]) (void)gr_fn_node_count(f[lvl]);
        fa.armed = t.was_armed;
        fz_outcome(t.refused, f[lvl] ? GR_OK : gr_graph_status(c->g), "gr_function", gr_graph_message(c->g));
        fn_st[lvl] = f[lvl] ? GR_OK : gr_graph_status(c->g);
        if (!f[lvl]) {
            gr_status s = gr_graph_status(c->g);
            FZ_ASSERT(s != GR_OK && fz_status_ok(s), "gr_function returned NULL with status %d", (int)s);
        } else {
            FZ_ASSERT(gr_graph_status(c->g) == GR_OK, "gr_function succeeded and recorded %s", gr_graph_message(c->g));
        }
        gr_graph_clear_error(c->g);
    }
    /* both levels accept or refuse the same function (its checks come before any rewrite) */
    FZ_ASSERT(fn_st[0] == GR_ERR_NOMEM || fn_st[1] == GR_ERR_NOMEM || fn_st[0] == fn_st[1],
              "gr_function gives %s optimised, %s not", gr_status_string(fn_st[0]), gr_status_string(fn_st[1]));
    if (d[14] & 0x80) {                            /* the printers, to nowhere */
        sink = fopen("/dev/null", "w");
        if (sink) {
            gr_print(sink, r->outs[0]);
            if (f[0]) gr_fn_print(sink, f[0]);
            fclose(sink);
        }
        gr_graph_clear_error(c->g);
    }
    /* two rounds of calls; the second may change the call-time sizes */
    for (round = 0; round < 2 && (f[0] || f[1]); round++) {
        const gr_array *res[2][FZ_OUTS];
        gr_array *keep[FZ_OUTS], *sh_before[FZ_LEAVES], *sh_after[FZ_LEAVES], *sh_none[FZ_LEAVES];
        gr_status st[2];
        int ok = 1, loose = 0, shared_differ = 0, f32 = 0;
        for (i = 0; i < r->n_ins; i++) {
            data[i] = fz_leaf_data(&c->li[r->in_leaf[i]], round, d[14] & 1);
            if (!data[i]) ok = 0;
            in[i] = data[i];
        }
        for (i = 0; round == 1 && (d[14] & 2) && i < n_shared; i++) {
            /* new values of other sizes: every call re-checks its shapes (at both levels alike) */
            gr_array *nv = fz_leaf_data(&c->li[shared_leaf[i]], 1, 1);
            gr_status s = nv ? gr_shared_set(shared[i], nv) : GR_ERR_NOMEM;
            FZ_ASSERT(s == GR_OK || s == GR_ERR_NOMEM, "gr_shared_set to another size: %s", gr_status_string(s));
            gr_graph_clear_error(c->g);
            gr_array_free(nv);
        }
        for (i = 0; i < n_shared; i++) {
            const gr_array *sv = gr_shared_get(shared[i]);
            sh_before[i] = sv ? gr_array_copy(sv) : NULL;
            sh_after[i] = sh_none[i] = NULL;
            if (!sh_before[i]) ok = 0;
        }
        for (k = 0; k < r->n_outs; k++) keep[k] = NULL;
        st[0] = st[1] = GR_ERR_VALUE;
        for (lvl = 0; ok && lvl < 2; lvl++) {
            if (!f[lvl]) continue;
            for (i = 0; i < n_shared; i++) {       /* both levels start from the same shared values */
                gr_status s = gr_shared_set(shared[i], sh_before[i]);
                FZ_ASSERT(s == GR_OK || s == GR_ERR_NOMEM, "gr_shared_set back: %s", gr_status_string(s));
                if (s != GR_OK) ok = 0;
            }
            gr_graph_clear_error(c->g);
            if (!ok) break;
            st[lvl] = fz_call(f[lvl], in, res[lvl], r->n_outs, lvl ? "gr_call (GR_OPT_NONE)" : "gr_call (GR_OPT_FULL)");
            if (lvl == 1 && st[1] == GR_OK) {
                for (k = 0; k < c->n; k++) if (gr_var_dtype(c->pool[k]) == GR_F32) f32 = 2;
                for (k = 0; k < r->n_outs; k++) if (gr_var_dtype(r->outs[k]) == GR_F32) f32 = 2;
                for (k = 0; k < r->n_outs; k++) loose |= fz_nonfinite(res[1][k]);
                for (i = 0; i < n_shared; i++) loose |= fz_nonfinite(gr_shared_get(shared[i]));
            }
            for (i = 0; i < n_shared; i++) {
                const gr_array *sv = gr_shared_get(shared[i]);
                if (st[lvl] != GR_OK) {        /* a failed call updates nothing */
                    if (sv && sh_before[i]) fz_same(sv, sh_before[i], "shared value after a failed call", i, 0, 1);
                } else if (lvl == 0) {
                    sh_after[i] = sv ? gr_array_copy(sv) : NULL;
                    if (!sh_after[i]) ok = 0;
                } else if (sh_after[i] && sv) {
                    if (!fz_same(sh_after[i], sv, "shared value after the call", i, loose | f32, 0)) shared_differ = 1;
                    sh_none[i] = gr_array_copy(sv);     /* (kept: a probe sets the shared values back) */
                    if (!sh_none[i]) ok = 0;
                }
            }
            if (lvl == 0 && st[0] == GR_OK)        /* the next call reuses the output arrays */
                for (k = 0; k < r->n_outs && ok; k++) if (!(keep[k] = gr_array_copy(res[0][k]))) ok = 0;
        }
        if (ok && f[0] && f[1]) {
            int nomem = st[0] == GR_ERR_NOMEM || st[1] == GR_ERR_NOMEM;
            /* (the rewrites may drop a node whose value is not needed, and with it its call-time
               checks: the optimised call may succeed where the unoptimised one finds shapes that do
               not combine, an index out of range, a singular matrix or an empty min. A NaN dropped
               by a rewrite may also make the optimised call fail where the unoptimised one goes on
               with NaNs: a singular matrix of zeros for a matrix of NaNs) */
            FZ_ASSERT(nomem || (st[0] == GR_OK) == (st[1] == GR_OK) ||
                      (st[0] == GR_OK && (st[1] == GR_ERR_SHAPE || st[1] == GR_ERR_RUNTIME)) ||
                      (st[1] == GR_OK && (loose || fz_hidden_nonfinite(r, in, n_shared, shared, sh_before))),
                      "round %d: the call gives %s optimised (%s), %s not (%s)", round,
                      gr_status_string(st[0]), gr_fn_message(f[0]), gr_status_string(st[1]), gr_fn_message(f[1]));
            if (st[0] == GR_OK && st[1] == GR_OK) {
                int differ = shared_differ;
                for (k = 0; k < r->n_outs; k++) if (!fz_same(keep[k], res[1][k], "output", k, loose | f32, 0)) differ = 1;
                if (differ && !fz_hidden_nonfinite(r, in, n_shared, shared, sh_before)) {
                    for (k = 0; k < r->n_outs; k++) if (!fz_same_values(keep[k], res[1][k], "output", k, loose | f32, 1)) break;
                    for (i = 0; i < n_shared; i++)
                        if (sh_after[i] && sh_none[i]) fz_same_values(sh_after[i], sh_none[i], "shared value after the call", i, loose | f32, 1);
                }
            }
#ifdef FZ_VERBOSE
            fprintf(stderr, "round %d: %s / %s\noptimised:\n", round, gr_status_string(st[0]), gr_status_string(st[1]));
            gr_fn_print(stderr, f[0]);
            fprintf(stderr, "not optimised:\n");
            gr_fn_print(stderr, f[1]);
            for (k = 0; k < r->n_outs && st[0] == GR_OK && st[1] == GR_OK; k++) {
                int64_t e;
                fprintf(stderr, "output %d:", k);
                for (e = 0; e < keep[k]->size && e < 12; e++) fprintf(stderr, " %g/%g", gr_array_get(keep[k], e), gr_array_get(res[1][k], e));
                fprintf(stderr, "\n");
            }
#endif
        }
        for (k = 0; k < r->n_outs; k++) gr_array_free(keep[k]);
        for (i = 0; i < n_shared; i++) { gr_array_free(sh_before[i]); gr_array_free(sh_after[i]); gr_array_free(sh_none[i]); }
        for (i = 0; i < r->n_ins; i++) gr_array_free(data[i]);
        if (!ok) break;
    }
    gr_fn_free(f[0]);
    gr_fn_free(f[1]);
}

/* gr_verify_grad over the first phase of the program, and gr_numeric_grad of the cost, when every
   input is float and small */
static void fz_numeric(fz_run *r) {
    fz_ctx *c = &r->c;
    const uint8_t *d = c->p->drv;
    gr_array *pt[FZ_LEAVES];
    int n = 0, i, total = 0, ok = 1;
    if (!(d[13] & 0x30)) return;
    for (i = 0; i < c->p->n_leaves; i++) {
        if (c->li[i].kind != FZ_L_INPUT || !(c->li[i].dt == GR_F64 || c->li[i].dt == GR_F32)) continue;
        pt[n] = fz_leaf_data(&c->li[i], 0, 0);
        if (!pt[n]) ok = 0;
        else total += (int)pt[n]->size;
        n++;
    }
    if (ok && n > 0 && total <= 24) {
        if (d[13] & 0x10) {
            fz_vg u;
            gr_verify_opts vo;
            gr_gradient_error e;
            long before = fa.refused;
            gr_status st;
            char buf[256];
            u.p = c->p;
            memset(&vo, 0, sizeof vo);
            vo.n_tests = 1;
            vo.seed = d[15];
            st = gr_verify_grad(fz_vg_build, &u, n, (const gr_array *const *)pt, &vo, &e);
            FZ_ASSERT(fz_status_ok(st), "gr_verify_grad: status %d", (int)st);
            fz_outcome(before, st, "gr_verify_grad", "");
            if (st == GR_ERR_GRADIENT) gr_gradient_error_format(&e, buf, sizeof buf);
        }
        if (d[13] & 0x20) {
            /* the numeric gradient of the cost of the first output, against nothing: its own checks */
            gr_var *cost, *ins[FZ_LEAVES];
            gr_fn *fc = NULL;
            int m = 0;
            for (i = 0; i < c->p->n_leaves; i++)
                if (c->leafv[i] && c->li[i].kind == FZ_L_INPUT && (c->li[i].dt == GR_F64 || c->li[i].dt == GR_F32)) ins[m++] = c->leafv[i];
            cost = m == n && r->n_outs ? fz_cost(r, 1, r->outs) : NULL;
            if (cost) {
                fz_tok t = fz_pre(c, 0, NULL);
                fc = gr_function(n, ins, 1, &cost, NULL);
                fa.armed = t.was_armed;
                fz_outcome(t.refused, fc ? GR_OK : gr_graph_status(c->g), "gr_function", gr_graph_message(c->g));
                FZ_ASSERT(fc || gr_graph_status(c->g) != GR_OK, "gr_function returned NULL with no error");
                gr_graph_clear_error(c->g);
            }
            if (fc) {
                gr_numeric_grad *ng = gr_numeric_grad_new(fc, n, (const gr_array *const *)pt, 0);
                if (ng) {
                    const gr_array *gv[FZ_LEAVES];
                    gr_gradient_error w;
                    double err;
                    for (i = 0; i < n; i++) {
                        gv[i] = gr_numeric_grad_get(ng, i);
                        FZ_ASSERT(gv[i] && gv[i]->size == pt[i]->size, "gr_numeric_grad_get %d: wrong size", i);
                    }
                    err = gr_numeric_grad_max_err(ng, gv, 0, 0, &w);    /* against itself: no error */
                    FZ_ASSERT(err == 0 || !isfinite(err), "the numeric gradient differs from itself by %g", err);   /* INFINITY: non-finite values */
                    gr_numeric_grad_free(ng);
                }
                gr_fn_free(fc);
            }
        }
    }
    for (i = 0; i < n; i++) gr_array_free(pt[i]);
}

/* ---- the target ------------------------------------------------------------------------------ */

/* one run of the program, with allocation fail_at refused (-1: none) */
static void fz_run_program(const fz_prog *p, long fail_at) {
    fz_run *r = (fz_run *)calloc(1, sizeof *r);
    fz_ctx *c;
    int i;
    if (!r) return;
    c = &r->c;
    c->p = p;
    fa.calls = 0;
    fa.refused = 0;
    fa.armed = 1;
    fa.fail_at = fail_at;
    fr.seq = 0;
    if (fa.live != 0) { fprintf(stderr, "fuzz: %ld blocks live before the run\n", fa.live); FZ_DIE(); fa.live = 0; }
    c->g = gr_graph_new();
    if (c->g) {
        gr_graph_set_log(c->g, fz_ignore_log, NULL);
        for (i = 0; i < p->n_leaves; i++) fz_leaf_info(p, i, &c->li[i]);
        for (i = 0; i < p->n_leaves; i++) fz_make_leaf(c, i);
        fz_build(c, 0, p->n_ops1);
        fz_drivers(r);
        fz_build(c, p->n_ops1, p->n_ops);          /* more ops, over the drivers' results too */
        if (p->head[6] & 1) fz_drivers(r);         /* derivatives of derivatives (of Jacobians, ...) */
        if (p->n_ops > p->n_ops1 && c->n) fz_out(r, c->pool[c->n - 1]);
        if ((p->head[5] & 0x0F) == 0x0F && c->n) {
            /* a marker among the outputs: gr_function must refuse it */
            gr_var *m = gr_disconnected_like(c->pool[c->n - 1]);
            gr_graph_clear_error(c->g);
            if (m && r->n_outs < FZ_OUTS) r->outs[r->n_outs++] = m;
        }
        fz_compile_and_run(r);
        fz_numeric(r);
        gr_graph_free(c->g);
    } else {
        FZ_ASSERT(fa.refused > 0, "gr_graph_new returned NULL with memory to spare");
    }
    FZ_ASSERT(fa.live == 0, "%ld blocks left allocated after freeing everything", fa.live);
    fa.live = 0;
    free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int inited;
    fz_prog *p;
    if (!inited) { fz_init_ops(); fz_check_coverage(); inited = 1; }
    p = (fz_prog *)malloc(sizeof *p);
    if (!p) return 0;
    fz_decode(p, data, size);
    memset(&fr, 0, sizeof fr);
    fr.suspect = -1;
    fz_run_program(p, (p->head[0] & 1) ? (long)(p->head[1] | p->head[2] << 8) : -1);
    if (fr.suspect >= 0) {                          /* the same call without the refusal */
        fr.reference = 1;
        fr.want = fr.suspect;
        fz_run_program(p, -1);
        FZ_ASSERT(fr.have && fr.got == fr.suspect_st, "%s (call %ld): %s (%s) where an allocation failed, %s without the failure",
                  fr.what, fr.suspect, gr_status_string(fr.suspect_st), fr.msg, fr.have ? gr_status_string(fr.got) : "no such call");
    }
    free(p);
    return 0;
}
