#include <stddef.h>
#include <stdint.h>
#ifndef GR_NO_STDIO
#include <stdio.h>
#endif

/* The version: GRADIENT_VERSION is one number for comparisons, major * 10000 + minor * 100 + patch
   (0.1.0 is 100; #if GRADIENT_VERSION >= 200 asks for 0.2.0 or later); GRADIENT_VERSION_STRING is
   "major.minor.patch". CHANGELOG.md lists what each version changed. */
#define GRADIENT_VERSION_MAJOR 0
#define GRADIENT_VERSION_MINOR 1
#define GRADIENT_VERSION_PATCH 0
#define GRADIENT_VERSION (GRADIENT_VERSION_MAJOR * 10000 + GRADIENT_VERSION_MINOR * 100 + GRADIENT_VERSION_PATCH)
#define GRADIENT_VERSION_STRING "0.1.0"

#if defined(__GNUC__) || defined(__clang__)
#define GR__UNUSED __attribute__((unused))
#define GR__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define GR__UNUSED
#define GR__PRINTF(f, a)
#endif

#ifdef GRADIENT_STATIC
#define GR_API static GR__UNUSED
#else
#define GR_API extern
#endif

#ifdef GRADIENT_CBLAS
#define GR_HAVE_CBLAS 1
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ==== types ================================================================================== */

typedef enum gr_dtype { GR_F64, GR_F32, GR_I64, GR_BOOL } gr_dtype;

/* status codes, with the sentence gr_status_string gives */
#define GR_STATUS_LIST(X) \
    X(GR_OK,                       "ok") \
    X(GR_ERR_NOMEM,                "out of memory") \
    X(GR_ERR_VALUE,                "bad argument") \
    X(GR_ERR_TYPE,                 "dtype or ndim mismatch") \
    X(GR_ERR_SHAPE,                "shapes do not combine") \
    X(GR_ERR_DISCONNECTED_INPUT,   "disconnected input") \
    X(GR_ERR_NULL_GRAD,            "null gradient") \
    X(GR_ERR_GRAD_UNDEFINED,       "gradient undefined") \
    X(GR_ERR_GRAD_NOT_IMPLEMENTED, "gradient not implemented") \
    X(GR_ERR_GRADIENT,             "analytic and numeric gradients differ") \
    X(GR_ERR_RUNTIME,              "evaluation failed")
#define GR__STATUS_ENUM(name, text) name,
typedef enum gr_status { GR_STATUS_LIST(GR__STATUS_ENUM) GR__STATUS_COUNT } gr_status;
#undef GR__STATUS_ENUM

#define GR_MAX_NDIM 8
typedef struct gr_array {
    gr_dtype dtype;
    int      ndim;
    int64_t  shape[GR_MAX_NDIM];
    int64_t  size;               /* product of shape[0..ndim) */
    void    *data;               /* row-major, contiguous */
} gr_array;

/* The static type of a variable: dtype, ndim, and what is known of the shape at build time
   (-1: unknown; 1: broadcastable). Type rules of ops fill these. */
typedef struct gr_type {
    gr_dtype dtype;
    int      ndim;
    int64_t  shape[GR_MAX_NDIM];
} gr_type;

typedef struct gr_graph  gr_graph;   /* owns every variable and node built in it */
typedef struct gr_var    gr_var;     /* a symbolic variable */
typedef struct gr_node   gr_node;    /* an application of an op to variables */
typedef struct gr_fn     gr_fn;      /* a compiled function; independent of its graph once made */
typedef struct gr_op_def gr_op_def;  /* an op: its name, arity and rules (defining an op, below) */

/* ==== graph and arrays ======================================================================= */

GR_API gr_graph   *gr_graph_new(void);
GR_API void        gr_graph_free(gr_graph *g);
GR_API gr_status   gr_graph_status(const gr_graph *g);   /* first error since the last clear */
GR_API const char *gr_graph_message(const gr_graph *g);  /* its message; "" if none */
GR_API void        gr_graph_clear_error(gr_graph *g);
typedef void (*gr_log_fn)(void *user, const char *message);
GR_API void        gr_graph_set_log(gr_graph *g, gr_log_fn fn, void *user); /* warnings; NULL: stderr */
/* Progress of long work on g's graphs: gr_grad (and the drivers built on it) and gr_function call
   fn(user, stage, done, total) as each stage begins (done 0), every 65536 units of its work and as it
   ends (done == total). Stages in order: "grad"; gr_function's "rewrite", "fuse" (GR_OPT_FULL only),
   "schedule". NULL (the default): no calls. */
typedef void (*gr_progress_fn)(void *user, const char *stage, size_t done, size_t total);
GR_API void        gr_graph_set_progress(gr_graph *g, gr_progress_fn fn, void *user);
GR_API const char *gr_status_string(gr_status s);        /* "ok", "bad argument", ... */
GR_API const char *gr_dtype_name(gr_dtype t);            /* "float64", "float32", "int64", "bool" */

GR_API gr_array *gr_array_new(gr_dtype dtype, int ndim, const int64_t *shape);                     /* zeros */
GR_API gr_array *gr_array_from(gr_dtype dtype, int ndim, const int64_t *shape, const void *data); /* copies */
GR_API gr_array *gr_array_scalar(gr_dtype dtype, double value);                                   /* 0-d */
GR_API gr_array *gr_array_copy(const gr_array *a);
GR_API double    gr_array_get(const gr_array *a, int64_t flat_index);   /* as double; NaN out of range */
GR_API void      gr_array_set(gr_array *a, int64_t flat_index, double value);  /* converted to dtype */
GR_API void      gr_array_free(gr_array *a);

/* ==== leaves ================================================================================= */

GR_API gr_var *gr_scalar(gr_graph *g, gr_dtype dtype, const char *name);
GR_API gr_var *gr_vector(gr_graph *g, gr_dtype dtype, const char *name);
GR_API gr_var *gr_matrix(gr_graph *g, gr_dtype dtype, const char *name);
GR_API gr_var *gr_tensor(gr_graph *g, gr_dtype dtype, int ndim, const int64_t *shape, const char *name);
                               /* shape may be NULL; an entry of -1 is unknown; a 1 is broadcastable */
GR_API gr_var *gr_constant(gr_graph *g, const gr_array *value);               /* value copied */
GR_API gr_var *gr_const(gr_graph *g, double value);      /* a weakly typed 0-d float: it takes the
                                                            float dtype of what it meets */
GR_API gr_var *gr_shared(gr_graph *g, const gr_array *value, const char *name); /* value copied */
GR_API const gr_array *gr_shared_get(const gr_var *shared);
GR_API gr_status       gr_shared_set(gr_var *shared, const gr_array *value);

GR_API const char *gr_var_name(const gr_var *v);                 /* NULL when unnamed */
GR_API void        gr_var_set_name(gr_var *v, const char *name);  /* the name is copied */
GR_API gr_dtype    gr_var_dtype(const gr_var *v);
GR_API int         gr_var_ndim(const gr_var *v);
GR_API gr_graph   *gr_var_graph(const gr_var *v);
GR_API int         gr_var_type(const gr_var *v, gr_type *out);   /* static type; 0 if v is NULL */
GR_API gr_node    *gr_var_owner(const gr_var *v);                /* NULL for leaves */
GR_API int         gr_is_disconnected(const gr_var *v);
GR_API int         gr_is_null(const gr_var *v);

/* ==== ops ====================================================================================
   A builder takes its graph from its operands and returns NULL on failure, with the error on the
   graph; given a NULL operand it returns NULL and records nothing. Negative axes count from the
   end. Operands of different dtypes promote as in NumPy (F32 with F64 gives F64; floats absorb
   integers and bools; gr_const takes the other side's float dtype). */

/* ---- elementwise, with NumPy broadcasting (ops/elemwise.c) ---------------------------------- */
/* GR_ELEMWISE_OPS: one prototype per row of the table in ops/table.h, written here by make gradient.h */
/* conversion: floats to integers truncate */
GR_API gr_var *gr_cast(gr_var *x, gr_dtype dtype);

/* ---- reductions (ops/reduce.c) ----------------------------------------------------------------
   The whole tensor to 0-d, one axis, or a set of axes (n == 0: all) with keepdims 0/1 */
GR_API gr_var *gr_sum(gr_var *x);   GR_API gr_var *gr_sum_axis(gr_var *x, int axis);
GR_API gr_var *gr_mean(gr_var *x);  GR_API gr_var *gr_mean_axis(gr_var *x, int axis);
GR_API gr_var *gr_prod(gr_var *x);  GR_API gr_var *gr_prod_axis(gr_var *x, int axis);
GR_API gr_var *gr_max(gr_var *x);   GR_API gr_var *gr_max_axis(gr_var *x, int axis);
GR_API gr_var *gr_min(gr_var *x);   GR_API gr_var *gr_min_axis(gr_var *x, int axis);
GR_API gr_var *gr_sum_axes(gr_var *x, int n, const int *axes, int keepdims);
GR_API gr_var *gr_mean_axes(gr_var *x, int n, const int *axes, int keepdims);
GR_API gr_var *gr_prod_axes(gr_var *x, int n, const int *axes, int keepdims);
GR_API gr_var *gr_max_axes(gr_var *x, int n, const int *axes, int keepdims);
GR_API gr_var *gr_min_axes(gr_var *x, int n, const int *axes, int keepdims);
GR_API gr_var *gr_argmax_axis(gr_var *x, int axis);                 /* GR_I64, not differentiable */
GR_API gr_var *gr_logsumexp(gr_var *x, int axis);                   /* removes the axis */
GR_API gr_var *gr_cumsum(gr_var *x, int axis);  GR_API gr_var *gr_cumprod(gr_var *x, int axis);
GR_API gr_var *gr_diff(gr_var *x, int axis);                        /* x[1:] - x[:-1] along the axis (NumPy diff) */

/* ---- shape: axes, joining, splitting, broadcasting, tiling (ops/shape.c) --------------------- */
GR_API gr_var *gr_transpose(gr_var *x);               /* reverses the axes */
#define GR_NEWAXIS (-1)
GR_API gr_var *gr_dimshuffle(gr_var *x, int n, const int *pattern); /* GR_NEWAXIS inserts an axis; only
                                                                       axes of static size 1 may be dropped */
GR_API gr_var *gr_reshape(gr_var *x, int ndim, const int64_t *shape);   /* one entry may be -1 */
GR_API gr_var *gr_flatten(gr_var *x);
GR_API gr_var *gr_broadcast_like(gr_var *x, gr_var *ref);   /* x broadcast to ref's shape */
GR_API gr_var *gr_reduce_like(gr_var *x, gr_var *ref);      /* x summed down to ref's shape */
GR_API gr_var *gr_reshape_like(gr_var *x, gr_var *ref);     /* x's elements in ref's shape */
GR_API gr_var *gr_size_ratio(gr_var *a, gr_var *b, gr_dtype dtype); /* 0-d: size(a) / size(b) */
/* joined operands promote as in elementwise ops (bools stay bools); n < 1: NULL with nothing
   recorded (no operand, no graph to record on) */
GR_API gr_var *gr_concatenate(int n, gr_var *const *xs, int axis);
GR_API gr_var *gr_stack(int n, gr_var *const *xs, int axis);          /* a new axis at `axis` */
/* out[0..n): x cut along axis into pieces of sizes[0..n) (summing to its length); every entry is
   NULL on failure */
GR_API gr_status gr_split(gr_var *x, int axis, int n, const int64_t *sizes, gr_var **out);
GR_API gr_var *gr_broadcast_to(gr_var *x, int ndim, const int64_t *shape);
GR_API gr_var *gr_tile(gr_var *x, int n, const int64_t *reps);   /* NumPy tile: more reps than axes
                                                                   prepends axes */
GR_API gr_var *gr_zeros_like(gr_var *x);  GR_API gr_var *gr_ones_like(gr_var *x);  /* x's dtype; the
                                                            gradient to x is disconnected */
/* a constant: ceil((stop - start) / step) values start + i step, converted to dtype (not bool) */
GR_API gr_var *gr_arange(gr_graph *g, double start, double stop, double step, gr_dtype dtype);

/* ---- indexing (ops/index.c) ------------------------------------------------------------------ */
#define GR_OPEN INT64_MIN                      /* an open end of a slice, as NumPy's empty bound */
GR_API gr_var *gr_slice(gr_var *x, int axis, int64_t start, int64_t stop, int64_t step); /* x[start:stop:step] on one axis */
GR_API gr_var *gr_index(gr_var *x, int axis, int64_t i);            /* removes the axis */
GR_API gr_var *gr_take(gr_var *x, gr_var *indices, int axis);       /* advanced indexing by an GR_I64 tensor */
GR_API gr_var *gr_set_subtensor(gr_var *view, gr_var *y);  /* view: a gr_slice/gr_index/gr_take result; returns its
                                                              base with the viewed part replaced by y */
GR_API gr_var *gr_inc_subtensor(gr_var *view, gr_var *y);  /* ... incremented by y (repeated indices accumulate) */

/* ---- linear algebra (ops/dot.c, ops/linalg.c) ------------------------------------------------ */
GR_API gr_var *gr_dot(gr_var *a, gr_var *b);          /* NumPy dot for 0-d, 1-d and 2-d operands */
GR_API gr_var *gr_outer(gr_var *a, gr_var *b);
/* NumPy's tensordot: the n axes a_axes of a summed against the n axes b_axes of b (n == 0: the
   outer product); the result has a's other axes, then b's */
GR_API gr_var *gr_tensordot(gr_var *a, gr_var *b, int n, const int *a_axes, const int *b_axes);
GR_API gr_var *gr_matmul(gr_var *a, gr_var *b);                     /* NumPy matmul, batched over leading axes */
/* 2-d float operands (integer ones become float64), square where the math needs it; a singular
   (solve, inverse) or non-positive-definite (cholesky) matrix fails the call with GR_ERR_RUNTIME */
GR_API gr_var *gr_matrix_inverse(gr_var *a);
GR_API gr_var *gr_det(gr_var *a);                    /* 0 for a singular matrix */
GR_API gr_var *gr_logdet(gr_var *a);                 /* log det a; NaN when det a < 0, -inf when 0 */
GR_API gr_var *gr_solve(gr_var *a, gr_var *b);       /* x with a x = b; b a vector or a matrix */
GR_API gr_var *gr_cholesky(gr_var *a);               /* lower L, L L^T = a, from a's lower triangle */
GR_API gr_var *gr_trace(gr_var *a);                  /* sum of the main diagonal (any 2-d shape) */

/* ---- neural networks (ops/nnet.c) ------------------------------------------------------------ */
GR_API gr_var *gr_softmax(gr_var *x, int axis);
GR_API gr_var *gr_log_softmax(gr_var *x, int axis);
GR_API gr_var *gr_crossentropy(gr_var *logits, gr_var *labels);     /* mean softmax cross-entropy over rows;
                                                                       labels GR_I64 class ids, or one-hot floats */

/* ---- identities in the forward pass that change only the gradient (ops/gradops.c) ----------- */
GR_API gr_var *gr_zero_grad(gr_var *x);
GR_API gr_var *gr_disconnected_grad(gr_var *x);
GR_API gr_var *gr_consider_constant(gr_var *x);             /* deprecated alias kept for compatibility */
GR_API gr_var *gr_grad_clip(gr_var *x, double lower, double upper);
GR_API gr_var *gr_grad_scale(gr_var *x, double multiplier);
GR_API gr_var *gr_undefined_grad(gr_var *x);

/* ==== loops (aesara.scan) ==================================================================== */

typedef struct gr_scan_seq {
    gr_var    *x;          /* iterated over its first axis */
    int        n_taps;     /* 0: the one tap 0 */
    const int *taps;       /* step t reads x[t + tap - m], m = min(0, smallest tap); the sequence
                              allows len - (max(0, largest tap) - m) steps (Aesara's taps) */
} gr_scan_seq;

typedef struct gr_scan_out {
    gr_var    *initial;    /* NULL: an output without state (Aesara's None, a "nit-sot") */
    int        n_taps;     /* 0 with an initial: the one tap -1 (a "sit-sot") */
    const int *taps;       /* all negative (a "mit-sot"): initial's first axis holds the
                              -min(taps) values before step 0, oldest first; {-1} alone is the
                              plain state (initial is the state itself) */
} gr_scan_out;

/* Builds the body of the loop, once, during gr_scan. in[]: for each sequence its taps (in the
   order given), then for each output with a state its taps (in the order given), then the
   non-sequences. Sets out[0..n_out): one step of every output, each with the dtype and ndim of
   its state where it has one. For a while loop, sets *until to a 0-d condition (the loop stops
   after the first step at which it is true); leaves it NULL otherwise. The body may use any
   variable of the outer graph: those are non-sequences too. */
typedef gr_status (*gr_scan_step)(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until,
                                  void *user);

typedef struct gr_scan_opts {
    gr_var     *n_steps;            /* 0-d integer; NULL: as many steps as the sequences allow */
    int         go_backwards;       /* iterate the sequences from their end */
    int64_t     truncate_gradient;  /* 0: full backpropagation; k > 0: through the last k steps only */
    int64_t     checkpoints;        /* 0: the gradient keeps every step's state; c > 0: it keeps at
                                       most c states and recomputes the rest (same values, bit for bit) */
    const char *name;               /* for messages and printing; NULL: "scan" */
} gr_scan_opts;

/* results[i]: output i at every step executed (steps on a new first axis; the initial values are
   not included). On failure every results[i] is NULL. The non-sequences reach the step as the
   variables themselves. */
GR_API gr_status gr_scan(gr_scan_step step, void *user,
                         int n_seq, const gr_scan_seq *seqs,
                         int n_out, const gr_scan_out *outs,
                         int n_nonseq, gr_var *const *non_seqs,
                         const gr_scan_opts *opts, gr_var **results);

/* ---- lazy conditionals (ops/ifelse.c) ---------------------------------------------------------- */
/* out[i] = cond ? then_vals[i] : else_vals[i], for i < n. cond is 0-d (bool or a number: nonzero
   is true). then_vals[i] and else_vals[i] have one dtype and ndim. In a compiled function only the
   branch taken is computed (the nodes that only it needs). On failure every out[i] is NULL. */
GR_API gr_status gr_ifelse(gr_var *cond, int n, gr_var *const *then_vals, gr_var *const *else_vals,
                           gr_var **out);

/* ---- ops made of graphs (ops/graphop.c, after aesara OpFromGraph) ---------------------------- */

/* A derivative rule given by the user in place of the one derived from the inner graph.
   grad: seeds are the n_out output gradients, results the n_in input gradients.
   rop:  seeds are the n_in eval points,       results the n_out output R-ops.
   inputs/outputs are the applied node's. Results are built with ordinary ops; a result may be
   gr_disconnected_like(input) where the input does not matter. */
typedef gr_status (*gr_graph_op_rule)(void *user, gr_var *const *inputs, gr_var *const *outputs,
                                      gr_var *const *seeds, gr_var **results);

typedef struct gr_graph_op_opts {
    int              inline_graph;         /* nonzero: gr_function replaces every application by
                                              the inner nodes (rewrites and fusion see through) */
    gr_graph_op_rule grad; void *grad_user; /* NULL: derived from the inner graph */
    gr_graph_op_rule rop;  void *rop_user;  /* NULL: derived from the inner graph */
    const unsigned char *connection_pattern; /* n_in x n_out; NULL: derived from the inner graph */
} gr_graph_op_opts;

/* An op computing outputs from inputs (non-constant leaves of one graph; shared variables the
   outputs read stay shared). The graph is copied: it may be freed afterwards. Apply it with
   gr_apply(op, NULL, 0, n_in, ins, outs); ops made this way nest. NULL on failure (recorded on
   the graph of outputs[0]); an operand of another dtype or ndim than its input is GR_ERR_TYPE. */
GR_API gr_op_def *gr_op_from_graph(const char *name, int n_in, gr_var *const *inputs,
                                   int n_out, gr_var *const *outputs, const gr_graph_op_opts *opts);
GR_API void       gr_op_free(gr_op_def *op);  /* the caller's reference; graphs and functions that
                                                 apply it keep theirs; NULL is accepted */

/* ==== drivers ================================================================================ */

typedef enum gr_on_disconnected { GR_RAISE, GR_WARN, GR_IGNORE } gr_on_disconnected;
typedef enum gr_return_disconnected {
    GR_RETURN_ZERO, GR_RETURN_NONE, GR_RETURN_DISCONNECTED } gr_return_disconnected;
typedef enum gr_null_gradients { GR_NULL_RAISE, GR_NULL_RETURN } gr_null_gradients;

typedef struct gr_grad_opts {
    gr_var *const *consider_constant; int n_consider_constant;
    gr_on_disconnected     disconnected_inputs;
    int                    no_names;          /* add_names=False */
    gr_var *const *known_vars;                /* known_grads: variables ... */
    gr_var *const *known_grads;               /* ... and their gradients */
    int                    n_known;
    gr_return_disconnected return_disconnected;
    gr_null_gradients      null_gradients;
} gr_grad_opts;

typedef struct gr_rop_opts {
    gr_on_disconnected     disconnected_outputs;
    gr_return_disconnected return_disconnected;
} gr_rop_opts;

/* grads[i] = d cost / d wrt[i]; cost may be NULL when opts->known_* is given.
   With GR_RETURN_NONE a disconnected entry is NULL and the call still returns GR_OK. */
GR_API gr_status gr_grad(gr_var *cost, int n_wrt, gr_var *const *wrt, gr_var **grads,
                         const gr_grad_opts *opts);
GR_API gr_var   *gr_grad1(gr_var *cost, gr_var *wrt);            /* one wrt, default options */

GR_API gr_status gr_lop(int n_f, gr_var *const *f, int n_wrt, gr_var *const *wrt,
                        gr_var *const *eval_points /* n_f */, gr_var **out /* n_wrt */,
                        const gr_grad_opts *opts);
GR_API gr_status gr_rop(int n_f, gr_var *const *f, int n_wrt, gr_var *const *wrt,
                        gr_var *const *eval_points /* n_wrt */, gr_var **out /* n_f */,
                        const gr_rop_opts *opts);
GR_API gr_status gr_jacobian(gr_var *expression, int n_wrt, gr_var *const *wrt, gr_var **out,
                             const gr_grad_opts *opts);   /* out[i]: (*expression.shape, *wrt[i].shape) */
GR_API gr_status gr_hessian(gr_var *cost, int n_wrt, gr_var *const *wrt, gr_var **out,
                            const gr_grad_opts *opts);    /* out[i]: (*wrt[i].shape, *wrt[i].shape) */
GR_API gr_status gr_subgraph_grad(int n_wrt, gr_var *const *wrt, int n_end, gr_var *const *end,
                                  int n_start, gr_var *const *start_vars, gr_var *const *start_grads,
                                  gr_var *cost, gr_var **wrt_grads /* n_wrt */,
                                  gr_var **end_grads /* n_end */);

/* ==== compiled functions ===================================================================== */

typedef struct gr_update { gr_var *shared; gr_var *value; } gr_update; /* shared := value, after a call */
typedef enum gr_optimize { GR_OPT_FULL, GR_OPT_NONE } gr_optimize;
typedef struct gr_fn_opts {
    const gr_update *updates; int n_updates;
    gr_optimize      optimize;
} gr_fn_opts;

GR_API gr_fn      *gr_function(int n_in, gr_var *const *inputs, int n_out, gr_var *const *outputs,
                               const gr_fn_opts *opts);
/* outputs[i] points at arrays owned by f, valid until the next call or gr_fn_free */
GR_API gr_status   gr_call(gr_fn *f, const gr_array *const *inputs, const gr_array **outputs);
GR_API const char *gr_fn_message(const gr_fn *f);        /* "" when the last call succeeded */
GR_API size_t      gr_fn_node_count(const gr_fn *f);     /* nodes left after the rewrites */
GR_API void        gr_fn_free(gr_fn *f);

/* ==== checking gradients ===================================================================== */

typedef struct gr_verify_opts {
    int n_tests; uint64_t seed; double eps, abs_tol, rel_tol; int cast_to_output_type;
} gr_verify_opts;                                   /* zeros: Aesara's defaults for the dtype */

typedef struct gr_gradient_error {                  /* GradientError's fields */
    int arg; int64_t err_pos; int ndim; int64_t shape[GR_MAX_NDIM];
    double val1, val2, abs_err, rel_err, abs_tol, rel_tol;
} gr_gradient_error;

typedef gr_var *(*gr_builder)(gr_graph *g, gr_var *const *inputs, void *user);
GR_API gr_status gr_verify_grad(gr_builder fun, void *user, int n, const gr_array *const *pt,
                                const gr_verify_opts *opts, gr_gradient_error *err /* may be NULL */);
/* GradientError's text for e into buf; returns what snprintf returns */
GR_API int       gr_gradient_error_format(const gr_gradient_error *e, char *buf, size_t size);

typedef struct gr_numeric_grad gr_numeric_grad;     /* finite differences of a scalar gr_fn */
GR_API gr_numeric_grad *gr_numeric_grad_new(gr_fn *f, int n, const gr_array *const *pt, double eps);
GR_API const gr_array  *gr_numeric_grad_get(const gr_numeric_grad *ng, int i);
GR_API void             gr_abs_rel_err(double a, double b, double *abs_err, double *rel_err);
GR_API double           gr_numeric_grad_max_err(const gr_numeric_grad *ng, const gr_array *const *g_pt,
                                                double abs_tol, double rel_tol, gr_gradient_error *where);
GR_API void             gr_numeric_grad_free(gr_numeric_grad *ng);

/* ==== printing =============================================================================== */

/* Printing to a NULL FILE or of a NULL variable does nothing. Ops print by the names their error
   messages use; an op made of graphs (a loop) shows its inner graphs indented under its node.
   GR_NO_STDIO leaves these out (and every FILE *: warnings then reach only a log callback). */
#ifndef GR_NO_STDIO
GR_API void gr_print(FILE *out, gr_var *v);          /* the graph that computes v, one node a line */
GR_API void gr_fn_print(FILE *out, const gr_fn *f);  /* a compiled function's steps, one a line */
GR_API void gr_pp(FILE *out, gr_var *v);                         /* one infix expression, like aesara.pp */
GR_API void gr_debugprint(FILE *out, int n, gr_var *const *vs);  /* an indented tree, like debugprint */
GR_API void gr_print_dot(FILE *out, int n, gr_var *const *vs);   /* the graph as Graphviz DOT */
GR_API void gr_fn_print_dot(FILE *out, const gr_fn *f);          /* the compiled function as DOT */
#endif

/* ==== C code generation ======================================================================== */

typedef struct gr_emit_opts {
    const char *name;     /* the emitted function's name (a C identifier); NULL: "gr_generated" */
} gr_emit_opts;

/* Writes one self-contained C99 translation unit computing f for inputs of exactly the dtypes and
   shapes of example[0..n_in) (their data is read only where a conditional's sides differ in shape:
   f runs on them up to it, and the file keeps the side they take): `#define NAME_WORK_BYTES <n>` and
   `int NAME(const void *const *inputs, void *const *outputs, void *work);` (row-major data of the
   dtypes and shapes its opening comment lists; work: NAME_WORK_BYTES bytes aligned for double),
   returning 0 or a gr_status (GR_ERR_RUNTIME at run time; GR_ERR_SHAPE: a call takes the other
   side of such a conditional). The file includes only <math.h>,
   <stdint.h> and <string.h> and allocates nothing; shared variables become static arrays that f's
   updates change in place. GR_ERR_TYPE / GR_ERR_SHAPE: an example against an input's dtype, ndim
   or static shape; GR_ERR_VALUE: NULL out or example, a name that is not a C identifier, an op
   that cannot be emitted (a user's op; gr_fn_message names it), a loop whose rows depend on the
   data (n_steps from an input's value, a while loop's every-row result: the file's shapes are
   fixed). Left out with GR_NO_STDIO. */
#ifndef GR_NO_STDIO
GR_API gr_status gr_fn_emit_c(gr_fn *f, const gr_array *const *example, FILE *out, const gr_emit_opts *opts);
#endif

/* ==== defining an op =========================================================================
   Fill a gr_op_def (designated initialisers name the fields) and apply it with gr_apply. Rules
   build their results with ordinary ops, so gradients of gradients work. */

struct gr__builtin;                           /* the implementation's own fields of its ops */
struct gr_op_def {
    const char *name;
    int n_in, n_out;                          /* n_in < 0: any number of inputs */
    /* type rule, at build time: out[j] = dtype, ndim and static shape of output j.
       NULL: every output is typed and shaped like input 0. */
    gr_status (*infer)(const gr_node *node, gr_type *out);
    /* shape rule, at call time: fill out[j]->shape (dtype and ndim are already set).
       NULL: every output is shaped like input 0. */
    gr_status (*shape)(const gr_node *node, const gr_array *const *in, gr_array *const *out);
    const unsigned char *connection_pattern;  /* n_in x n_out, row-major: nonzero where input i
                                                 affects output j; NULL: everything connected */
    gr_status (*perform)(const gr_node *node, const gr_array *const *in, gr_array *const *out);
          /* required; the outputs arrive allocated, shaped by the shape rule */
    gr_status (*grad)(const gr_node *node, gr_var *const *output_grads, gr_var **input_grads);
          /* NULL: every connected input's gradient is a null "not implemented" one */
    gr_status (*rop)(const gr_node *node, gr_var *const *eval_points, gr_var **output_rops);
          /* NULL: gr_rop uses the double-pullback construction through grad */
    const struct gr__builtin *builtin;        /* the library's own ops only: leave it NULL */
};

GR_API gr_status   gr_apply(const gr_op_def *op, const void *params, size_t params_size,
                            int n_in, gr_var *const *inputs, gr_var **outputs);
GR_API gr_var     *gr_node_input(const gr_node *node, int i);
GR_API gr_var     *gr_node_output(const gr_node *node, int i);
GR_API int         gr_node_n_inputs(const gr_node *node);
GR_API int         gr_node_n_outputs(const gr_node *node);
GR_API const void *gr_node_params(const gr_node *node);
GR_API const gr_op_def *gr_node_op(const gr_node *node);
GR_API gr_var     *gr_disconnected_like(gr_var *x);   /* a disconnected marker standing for x's gradient */
GR_API gr_var     *gr_grad_not_implemented(const gr_node *node, int x_pos, gr_var *x, const char *comment);
GR_API gr_var     *gr_grad_undefined(const gr_node *node, int x_pos, gr_var *x, const char *comment);
GR_API const char *gr_null_reason(const gr_var *v);     /* why a null gradient is null; "" otherwise */
/* records a call-time error of an op's perform or shape rule; the call returns `code` with this
   message (prefixed by the op's name) */
GR_API gr_status   gr_node_error(const gr_node *node, gr_status code, const char *fmt, ...) GR__PRINTF(3, 4);

#ifdef __cplusplus
}
#endif

#endif /* GRADIENT_H */
