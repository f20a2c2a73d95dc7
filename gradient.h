/* gradient.h v0.1.0 - symbolic differentiation of tensor expressions in one C11 header. MIT licence.

   Build graphs of tensor operations (NumPy-style broadcasting, reductions, dot, reshapes, softmax,
   indexing, ...), differentiate them symbolically after Aesara's aesara.gradient (reverse mode:
   gr_grad, gr_grad1, gr_lop, gr_subgraph_grad and the gradient-modifying ops; forward mode:
   gr_rop; gr_jacobian and gr_hessian, batched; gr_verify_grad and finite differences), and
   evaluate them with compiled functions (gr_function, gr_call) that optimise the graph, plan their
   memory once and update shared variables after each call. Gradients are graphs too, so they can
   be differentiated again. Needs only libc and libm. Generated from src/ and ops/ by
   `make gradient.h`: edit those.

   USAGE
     In exactly one C or C++ file:        #define GRADIENT_IMPLEMENTATION
                                          #include "gradient.h"
     Everywhere else:                     #include "gradient.h"
     Build:                               cc -O2 prog.c -lm

   OPTIONS (define before including)
     GRADIENT_IMPLEMENTATION   one file only      emit the implementation
     GRADIENT_STATIC           every file using it  every function is static (then each file
                                                  defines GRADIENT_IMPLEMENTATION too)
     GRADIENT_CBLAS            the implementation  dot calls cblas_?gemm / ?gemv / ?dot from
                                                  <cblas.h> (link -lopenblas or another CBLAS);
                                                  the header then defines GR_HAVE_CBLAS
     GR_MALLOC(n), GR_REALLOC(p, n), GR_FREE(p)   the implementation, all three or none: the
                                                  allocator (default malloc/realloc/free)
     GR_ASSERT(c)              the implementation  internal invariants only (default assert)
     GR_TRAP_ON_ERROR          the implementation  trap (__builtin_trap, else abort) when a graph
                                                  records its first error or a call fails, to get
                                                  a call stack in a debugger
     GR_NO_VECTOR_EXTENSIONS   the implementation  the built-in GEMM in plain C, without GCC/Clang
                                                  vector extensions (which it uses by default, at
                                                  the widest vector width the target enables)

   EXAMPLE
     gr_graph *g = gr_graph_new();
     gr_var *x = gr_vector(g, GR_F64, "x");
     gr_var *y = gr_sum(gr_mul(gr_sin(x), x));              // y = sum(x sin x)
     gr_var *outs[2] = { y, gr_grad1(y, x) };               // and dy/dx = sin x + x cos x
     gr_fn *f = gr_function(1, &x, 2, outs, NULL);          // compiled: independent of g
     if (!f) { fprintf(stderr, "%s\n", gr_graph_message(g)); gr_graph_free(g); return 1; }
     gr_graph_free(g);
     int64_t n = 3; double xs[3] = { 0.5, 1.0, 2.0 };
     gr_array *xa = gr_array_from(GR_F64, 1, &n, xs);       // copies xs
     const gr_array *in[1] = { xa }, *out[2];
     if (gr_call(f, in, out) == GR_OK)   // y = 2.89978, dy/dx = (0.918217, 1.38177, 0.0770038)
         printf("y = %g, dy/dx = (%g, %g, %g)\n", gr_array_get(out[0], 0),
                gr_array_get(out[1], 0), gr_array_get(out[1], 1), gr_array_get(out[1], 2));
     else fprintf(stderr, "%s\n", gr_fn_message(f));
     gr_array_free(xa); gr_fn_free(f);                      // out[] belonged to f

   LAYOUT   The declarations follow, grouped: types, graph and arrays, leaves, ops by family,
            drivers, compiled functions, checking gradients, printing, defining an op. The
            implementation (behind GRADIENT_IMPLEMENTATION) opens with the op tables; the licence
            is at the end.

   ERRORS   Nothing aborts on bad input. A failing builder records its error on the graph (a code
            and a message naming the op and the variable; the first sticks until
            gr_graph_clear_error) and returns NULL; given a NULL operand it returns NULL, so a
            chain is checked once, at the end. gr_function fails alike; gr_call returns a status
            and gr_fn_message says why.
   MEMORY   A graph owns everything built in it (one arena, freed by gr_graph_free). Arrays belong
            to whoever made them; those gr_call gives back are the function's until its next call.
            A gr_fn owns a copy of what it needs and buffers made at its first call and reused
            while the shapes stay: a steady-state gr_call allocates nothing. A shared variable's
            value lives until the last graph or function holding it is freed.
   THREADS  No global mutable state. A graph or a gr_fn is used by one thread at a time
            (gr_function reads its graph); different ones may run at once, except those holding
            the same shared variable, whose storage is not locked.
*/
#ifndef GRADIENT_H
#define GRADIENT_H

/* ==== src/api.h: generated region; edit src/api.h, then run make gradient.h ==== */
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
/* arithmetic */
GR_API gr_var *gr_neg(gr_var *x);                              /* -x */
GR_API gr_var *gr_abs(gr_var *x);                              /* |x| */
GR_API gr_var *gr_sqr(gr_var *x);                              /* x^2 */
GR_API gr_var *gr_sign(gr_var *x);                             /* -1, 0, 1 (nan stays nan) */
GR_API gr_var *gr_floor(gr_var *x);                            /* floor(x) */
GR_API gr_var *gr_ceil(gr_var *x);                             /* ceil(x) */
GR_API gr_var *gr_round(gr_var *x);                            /* nearest, halves to even */
GR_API gr_var *gr_add(gr_var *a, gr_var *b);                   /* a + b */
GR_API gr_var *gr_sub(gr_var *a, gr_var *b);                   /* a - b */
GR_API gr_var *gr_mul(gr_var *a, gr_var *b);                   /* a * b */
GR_API gr_var *gr_div(gr_var *a, gr_var *b);                   /* a / b (true division) */
GR_API gr_var *gr_pow(gr_var *a, gr_var *b);                   /* a^b; d/db = a^b log a, 0 at a = 0 */
GR_API gr_var *gr_mod(gr_var *a, gr_var *b);                   /* a - b floor(a/b) (sign of b) */
GR_API gr_var *gr_maximum(gr_var *a, gr_var *b);               /* max(a, b); ties feed both */
GR_API gr_var *gr_minimum(gr_var *a, gr_var *b);               /* min(a, b); ties feed both */
GR_API gr_var *gr_clip(gr_var *x, gr_var *lo, gr_var *hi);     /* lo if x < lo, hi if x > hi, else x */
GR_API gr_var *gr_where(gr_var *cond, gr_var *a, gr_var *b);   /* cond ? a : b */
/* exponentials and logarithms */
GR_API gr_var *gr_exp(gr_var *x);                              /* e^x */
GR_API gr_var *gr_exp2(gr_var *x);                             /* 2^x */
GR_API gr_var *gr_expm1(gr_var *x);                            /* e^x - 1 */
GR_API gr_var *gr_log(gr_var *x);                              /* ln x */
GR_API gr_var *gr_log2(gr_var *x);                             /* log2 x */
GR_API gr_var *gr_log1p(gr_var *x);                            /* ln(1 + x) */
GR_API gr_var *gr_sqrt(gr_var *x);                             /* sqrt x */
GR_API gr_var *gr_cbrt(gr_var *x);                             /* cube root */
GR_API gr_var *gr_reciprocal(gr_var *x);                       /* 1 / x */
/* trigonometric and hyperbolic */
GR_API gr_var *gr_sin(gr_var *x);                              /* sin x */
GR_API gr_var *gr_cos(gr_var *x);                              /* cos x */
GR_API gr_var *gr_tan(gr_var *x);                              /* tan x */
GR_API gr_var *gr_arcsin(gr_var *x);                           /* asin x */
GR_API gr_var *gr_arccos(gr_var *x);                           /* acos x */
GR_API gr_var *gr_arctan(gr_var *x);                           /* atan x */
GR_API gr_var *gr_arctan2(gr_var *a, gr_var *b);               /* atan2(a, b) */
GR_API gr_var *gr_sinh(gr_var *x);                             /* sinh x */
GR_API gr_var *gr_cosh(gr_var *x);                             /* cosh x */
GR_API gr_var *gr_tanh(gr_var *x);                             /* tanh x */
GR_API gr_var *gr_arcsinh(gr_var *x);                          /* asinh x */
GR_API gr_var *gr_arccosh(gr_var *x);                          /* acosh x */
GR_API gr_var *gr_arctanh(gr_var *x);                          /* atanh x */
/* special functions and activations */
GR_API gr_var *gr_erf(gr_var *x);                              /* erf x */
GR_API gr_var *gr_erfc(gr_var *x);                             /* 1 - erf x */
GR_API gr_var *gr_sigmoid(gr_var *x);                          /* 1 / (1 + e^-x) */
GR_API gr_var *gr_softplus(gr_var *x);                         /* ln(1 + e^x) */
GR_API gr_var *gr_relu(gr_var *x);                             /* max(x, 0) */
/* comparisons and logic: BOOL results, no derivative */
GR_API gr_var *gr_gt(gr_var *a, gr_var *b);                    /* a > b */
GR_API gr_var *gr_lt(gr_var *a, gr_var *b);                    /* a < b */
GR_API gr_var *gr_ge(gr_var *a, gr_var *b);                    /* a >= b */
GR_API gr_var *gr_le(gr_var *a, gr_var *b);                    /* a <= b */
GR_API gr_var *gr_eq(gr_var *a, gr_var *b);                    /* a == b */
GR_API gr_var *gr_neq(gr_var *a, gr_var *b);                   /* a != b */
GR_API gr_var *gr_logical_and(gr_var *a, gr_var *b);           /* a and b */
GR_API gr_var *gr_logical_or(gr_var *a, gr_var *b);            /* a or b */
GR_API gr_var *gr_logical_not(gr_var *x);                      /* not x */
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

/* ==== src/hooks.c: generated region; edit src/hooks.c, then run make gradient.h ==== */
/* src/hooks.c: the implementation begins: its guard, the C library, and the hooks a user may
   define (GR_MALLOC/GR_REALLOC/GR_FREE, GR_ASSERT, GR_TRAP_ON_ERROR, GRADIENT_CBLAS). */
#ifdef GRADIENT_IMPLEMENTATION
#ifndef GRADIENT_IMPLEMENTATION_DONE
#define GRADIENT_IMPLEMENTATION_DONE

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>                    /* (v)snprintf for messages; streams only without GR_NO_STDIO */
#include <stdlib.h>
#include <string.h>

#if defined(GR_MALLOC) && defined(GR_REALLOC) && defined(GR_FREE)
/* the user's allocator */
#elif !defined(GR_MALLOC) && !defined(GR_REALLOC) && !defined(GR_FREE)
#define GR_MALLOC(n) malloc(n)
#define GR_REALLOC(p, n) realloc(p, n)
#define GR_FREE(p) free(p)
#else
#error "gradient.h: define all of GR_MALLOC, GR_REALLOC and GR_FREE, or none of them"
#endif

#if !defined(GR_ASSERT) && defined(GR_NO_STDIO)   /* assert prints to stderr: trap instead */
#if defined(__GNUC__) || defined(__clang__)
#define GR_ASSERT(c) do { if (!(c)) __builtin_trap(); } while (0)
#else
#define GR_ASSERT(c) do { if (!(c)) abort(); } while (0)
#endif
#endif
#ifndef GR_ASSERT
#include <assert.h>
#define GR_ASSERT(c) assert(c)
#endif

#ifdef GR_TRAP_ON_ERROR
#if defined(__GNUC__) || defined(__clang__)
#define GR__TRAP() __builtin_trap()
#else
#define GR__TRAP() abort()
#endif
#else
#define GR__TRAP() ((void)0)
#endif

#ifdef GRADIENT_CBLAS
#include <cblas.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ==== ops/table.h: generated region; edit ops/table.h, then run make gradient.h ==== */
/* ops/table.h: the op tables, internal to the implementation. Every built-in op is one row here;
   its constructor, kernels, printer name, type rule, gradient rule and R-op rule are all expanded
   from the row (ops/README.md is the add-an-op checklist). These are macros only: nothing is
   expanded until the implementation asks, except the prototypes of the elementwise constructors,
   which make gradient.h writes into the public part from the rows (name, arity and math comment;
   a comment "(p, q, r): ..." names the parameters, else they are x, or a, b, or a, b, c). */

/* ---- op families ---------------------------------------------------------------------------------
   A program that uses only some ops may build the implementation without the others: define
   GR_NO_<FAMILY> in the implementation file (or -D for all). The family's rows below are wrapped in
   GR__FAMILY_<FAMILY>(...), which keeps them or drops them from every expansion of the tables (their
   gr_op_defs, the arrays by code, the rewrites, the RUNTIME and scratch hooks), so that nothing
   references their rules; their family file compiles out, and so do their public constructors (a
   program calling one fails to link, naming it). What the core itself calls of a family left out
   fails with a message naming the switch (gr_jacobian of a vector without GR_NO_BATCH's rows).
   The op codes are the rows' positions: the same as long as no family is left out. ops/README.md,
   "Op families", says more (and GR_ELEMWISE_ONLY, the kernels of only some elementwise rows).

     switch          rows                                              file          needs also
     GR_NO_DOT       Dot, TensorDot, MatMul (the GEMM)                 ops/dot.c     GR_NO_LINALG
     GR_NO_LINALG    LUFactor ... TriScale                             ops/linalg.c
     GR_NO_NNET      Softmax, LogSoftmax, CrossEntropy, OneHot         ops/nnet.c
     GR_NO_INDEX     Slice, Index, Take, ViewUpdate, TakeUpdate        ops/index.c   GR_NO_SCAN, GR_NO_AXIS
     GR_NO_AXIS      ArgMax, LogSumExp, CumSum, CumProd, Diff, LinScan ops/reduce.c
     GR_NO_JOIN      Join, Split, BroadcastTo, Tile, Untile            ops/shape.c   GR_NO_SCAN, GR_NO_AXIS
     GR_NO_BATCH     EyeLike, Unflatten, Batched, Banded: Jacobians    ops/batch.c
                     and Hessians of non-scalars (GR_ERR_VALUE)
     GR_NO_SCAN      Scan, Rows, ScanPlace, ScanGather (gr_scan)       ops/scan.c
     GR_NO_IFELSE    IfElse (gr_ifelse)                                ops/ifelse.c
     GR_NO_GRAPHOP   OpFromGraph (gr_op_from_graph)                    ops/graphop.c
     GR_ONLY_CORE    all of the above: what stays is the elementwise rows, Cast, the reductions, the
                     shapes (DimShuffle ... SizeRatio), the gradient markers and Fused              */
#ifdef GR_ONLY_CORE
#ifndef GR_NO_DOT
#define GR_NO_DOT
#endif
#ifndef GR_NO_LINALG
#define GR_NO_LINALG
#endif
#ifndef GR_NO_NNET
#define GR_NO_NNET
#endif
#ifndef GR_NO_INDEX
#define GR_NO_INDEX
#endif
#ifndef GR_NO_AXIS
#define GR_NO_AXIS
#endif
#ifndef GR_NO_JOIN
#define GR_NO_JOIN
#endif
#ifndef GR_NO_BATCH
#define GR_NO_BATCH
#endif
#ifndef GR_NO_SCAN
#define GR_NO_SCAN
#endif
#ifndef GR_NO_IFELSE
#define GR_NO_IFELSE
#endif
#ifndef GR_NO_GRAPHOP
#define GR_NO_GRAPHOP
#endif
#endif
#if defined(GR_NO_DOT) && !defined(GR_NO_LINALG)
#error "gradient.h: GR_NO_DOT needs GR_NO_LINALG too (the linear algebra multiplies matrices)"
#endif
#if defined(GR_NO_INDEX) && !(defined(GR_NO_SCAN) && defined(GR_NO_AXIS))
#error "gradient.h: GR_NO_INDEX needs GR_NO_SCAN and GR_NO_AXIS too (loops and Diff's gradient slice)"
#endif
#if defined(GR_NO_JOIN) && !(defined(GR_NO_SCAN) && defined(GR_NO_AXIS))
#error "gradient.h: GR_NO_JOIN needs GR_NO_SCAN and GR_NO_AXIS too (loops stack rows, Diff's gradient pads)"
#endif
#define GR__FAMILY_ON(...) __VA_ARGS__
#define GR__FAMILY_OFF(...)
#ifdef GR_NO_DOT
#define GR__FAMILY_DOT GR__FAMILY_OFF
#else
#define GR__FAMILY_DOT GR__FAMILY_ON
#endif
#ifdef GR_NO_LINALG
#define GR__FAMILY_LINALG GR__FAMILY_OFF
#else
#define GR__FAMILY_LINALG GR__FAMILY_ON
#endif
#ifdef GR_NO_NNET
#define GR__FAMILY_NNET GR__FAMILY_OFF
#else
#define GR__FAMILY_NNET GR__FAMILY_ON
#endif
#ifdef GR_NO_INDEX
#define GR__FAMILY_INDEX GR__FAMILY_OFF
#else
#define GR__FAMILY_INDEX GR__FAMILY_ON
#endif
#ifdef GR_NO_JOIN
#define GR__FAMILY_JOIN GR__FAMILY_OFF
#else
#define GR__FAMILY_JOIN GR__FAMILY_ON
#endif
#ifdef GR_NO_AXIS
#define GR__FAMILY_AXIS GR__FAMILY_OFF
#else
#define GR__FAMILY_AXIS GR__FAMILY_ON
#endif
#ifdef GR_NO_BATCH
#define GR__FAMILY_BATCH GR__FAMILY_OFF
#else
#define GR__FAMILY_BATCH GR__FAMILY_ON
#endif
#ifdef GR_NO_SCAN
#define GR__FAMILY_SCAN GR__FAMILY_OFF
#else
#define GR__FAMILY_SCAN GR__FAMILY_ON
#endif
#ifdef GR_NO_IFELSE
#define GR__FAMILY_IFELSE GR__FAMILY_OFF
#else
#define GR__FAMILY_IFELSE GR__FAMILY_ON
#endif
#ifdef GR_NO_GRAPHOP
#define GR__FAMILY_GRAPHOP GR__FAMILY_OFF
#else
#define GR__FAMILY_GRAPHOP GR__FAMILY_ON
#endif

/* ---- elementwise ops ---------------------------------------------------------------------------
   X(name, arity, class, float_expr, int_expr, d0, d1, d2)

   class      which dtypes the op computes in and what it returns (ops/elemwise.c):
                FLOAT  float in, same float out; integer and bool operands become F64
                ARITH  F64/F32/I64 in, same out; bool operands become I64
                STEP   like ARITH, piecewise constant: zero derivative everywhere
                CMP    F64/F32/I64 in, BOOL out (not differentiable)
                LOGIC  BOOL in (nonzero is true), BOOL out (not differentiable)
                SELECT like ARITH over inputs 1 and 2; input 0 is the condition (nonzero is true)
   float_expr the scalar value for F64/F32 from inputs a, b, c; GR_M(f) names the libm function of the
              dtype (sin or sinf) and GR_T is the element type
   int_expr   the scalar value for I64 (and BOOL for LOGIC); 0 where the class never computes in ints;
              GR__WRAP(e) wraps a uint64_t computation back to int64_t (overflow wraps, as in NumPy)
   dK         the partial derivative of the output with respect to input K, as a graph built from
              x0, x1, x2 (inputs) and y (the output): D(expr), or D_ONE, D_NEG_ONE, D_ZERO, D_NONE
              (no such input). Gradient: reduce_to_input(gz * dK). R-op: sum_K dK * tangent_K.       */
#define GR_ELEMWISE_OPS(X) \
    /* arithmetic */ \
    X(neg,        1, ARITH, -a,                         GR__WRAP(0 - (uint64_t)a), D_NEG_ONE, D_NONE, D_NONE) /* -x */ \
    X(abs,        1, ARITH, GR_M(fabs)(a),              (a < 0 ? GR__WRAP(0 - (uint64_t)a) : a), D(gr_sign(x0)), D_NONE, D_NONE) /* |x| */ \
    X(sqr,        1, ARITH, a * a,                      GR__WRAP((uint64_t)a * (uint64_t)a), D(gr_mul(K(2), x0)), D_NONE, D_NONE) /* x^2 */ \
    X(sign,       1, STEP,  GR_M(gr__sign)(a),          (a > 0) - (a < 0),   D_ZERO, D_NONE, D_NONE) /* -1, 0, 1 (nan stays nan) */ \
    X(floor,      1, STEP,  GR_M(floor)(a),             a,                   D_ZERO, D_NONE, D_NONE) /* floor(x) */ \
    X(ceil,       1, STEP,  GR_M(ceil)(a),              a,                   D_ZERO, D_NONE, D_NONE) /* ceil(x) */ \
    X(round,      1, STEP,  GR_M(nearbyint)(a),         a,                   D_ZERO, D_NONE, D_NONE) /* nearest, halves to even */ \
    X(add,        2, ARITH, a + b,                      GR__WRAP((uint64_t)a + (uint64_t)b), D_ONE, D_ONE, D_NONE) /* a + b */ \
    X(sub,        2, ARITH, a - b,                      GR__WRAP((uint64_t)a - (uint64_t)b), D_ONE, D_NEG_ONE, D_NONE) /* a - b */ \
    X(mul,        2, ARITH, a * b,                      GR__WRAP((uint64_t)a * (uint64_t)b), D(x1), D(x0), D_NONE) /* a * b */ \
    X(div,        2, FLOAT, a / b,                      0,                   D(gr_reciprocal(x1)), D(gr_neg(gr_div(y, x1))), D_NONE) /* a / b (true division) */ \
    X(pow,        2, ARITH, GR_M(pow)(a, b),            gr__ipow(a, b),      D(gr_mul(x1, gr_pow(x0, gr_sub(x1, K(1))))), \
                  D(gr_mul(gr_log(gr_where(gr_eq(x0, K(0)), K(1), x0)), y)), D_NONE) /* a^b; d/db = a^b log a, 0 at a = 0 */ \
    X(mod,        2, ARITH, GR_M(gr__mod)(a, b),        gr__imod(a, b),      D_ONE, D(gr_neg(gr_floor(gr_div(x0, x1)))), D_NONE) /* a - b floor(a/b) (sign of b) */ \
    X(maximum,    2, ARITH, GR_M(gr__max)(a, b),        (a > b ? a : b),     D(gr__cast_like(gr_eq(y, x0), y)), D(gr__cast_like(gr_eq(y, x1), y)), D_NONE) /* max(a, b); ties feed both */ \
    X(minimum,    2, ARITH, GR_M(gr__min)(a, b),        (a < b ? a : b),     D(gr__cast_like(gr_eq(y, x0), y)), D(gr__cast_like(gr_eq(y, x1), y)), D_NONE) /* min(a, b); ties feed both */ \
    X(clip,       3, ARITH, GR_M(gr__clip)(a, b, c),    (a < b ? b : (a > c ? c : a)), \
                  D(gr__cast_like(gr_logical_and(gr_ge(x0, x1), gr_le(x0, x2)), y)), \
                  D(gr__cast_like(gr_lt(x0, x1), y)), D(gr__cast_like(gr_gt(x0, x2), y))) /* (x, lo, hi): lo if x < lo, hi if x > hi, else x */ \
    X(where,      3, SELECT, (a != 0 ? b : c),           (a != 0 ? b : c),    D_ZERO, \
                  D(gr__cast_like(gr_neq(x0, K(0)), y)), D(gr__cast_like(gr_eq(x0, K(0)), y))) /* (cond, a, b): cond ? a : b */ \
    /* exponentials and logarithms */ \
    X(exp,        1, FLOAT, GR_M(exp)(a),               0,                   D(y), D_NONE, D_NONE) /* e^x */ \
    X(exp2,       1, FLOAT, GR_M(exp2)(a),              0,                   D(gr_mul(y, K(0.69314718055994530942))), D_NONE, D_NONE) /* 2^x */ \
    X(expm1,      1, FLOAT, GR_M(expm1)(a),             0,                   D(gr_add(y, K(1))), D_NONE, D_NONE) /* e^x - 1 */ \
    X(log,        1, FLOAT, GR_M(log)(a),               0,                   D(gr_reciprocal(x0)), D_NONE, D_NONE) /* ln x */ \
    X(log2,       1, FLOAT, GR_M(log2)(a),              0,                   D(gr_reciprocal(gr_mul(x0, K(0.69314718055994530942)))), D_NONE, D_NONE) /* log2 x */ \
    X(log1p,      1, FLOAT, GR_M(log1p)(a),             0,                   D(gr_reciprocal(gr_add(x0, K(1)))), D_NONE, D_NONE) /* ln(1 + x) */ \
    X(sqrt,       1, FLOAT, GR_M(sqrt)(a),              0,                   D(gr_div(K(0.5), y)), D_NONE, D_NONE) /* sqrt x */ \
    X(cbrt,       1, FLOAT, GR_M(cbrt)(a),              0,                   D(gr_div(K(1.0 / 3.0), gr_sqr(y))), D_NONE, D_NONE) /* cube root */ \
    X(reciprocal, 1, FLOAT, (GR_T)1 / a,                0,                   D(gr_neg(gr_sqr(y))), D_NONE, D_NONE) /* 1 / x */ \
    /* trigonometric and hyperbolic */ \
    X(sin,        1, FLOAT, GR_M(sin)(a),               0,                   D(gr_cos(x0)), D_NONE, D_NONE) /* sin x */ \
    X(cos,        1, FLOAT, GR_M(cos)(a),               0,                   D(gr_neg(gr_sin(x0))), D_NONE, D_NONE) /* cos x */ \
    X(tan,        1, FLOAT, GR_M(tan)(a),               0,                   D(gr_add(gr_sqr(y), K(1))), D_NONE, D_NONE) /* tan x */ \
    X(arcsin,     1, FLOAT, GR_M(asin)(a),              0,                   D(gr_reciprocal(gr_sqrt(gr_sub(K(1), gr_sqr(x0))))), D_NONE, D_NONE) /* asin x */ \
    X(arccos,     1, FLOAT, GR_M(acos)(a),              0,                   D(gr_neg(gr_reciprocal(gr_sqrt(gr_sub(K(1), gr_sqr(x0)))))), D_NONE, D_NONE) /* acos x */ \
    X(arctan,     1, FLOAT, GR_M(atan)(a),              0,                   D(gr_reciprocal(gr_add(gr_sqr(x0), K(1)))), D_NONE, D_NONE) /* atan x */ \
    X(arctan2,    2, FLOAT, GR_M(atan2)(a, b),          0,                   D(gr_div(x1, gr_add(gr_sqr(x0), gr_sqr(x1)))), \
                  D(gr_neg(gr_div(x0, gr_add(gr_sqr(x0), gr_sqr(x1))))), D_NONE) /* atan2(a, b) */ \
    X(sinh,       1, FLOAT, GR_M(sinh)(a),              0,                   D(gr_cosh(x0)), D_NONE, D_NONE) /* sinh x */ \
    X(cosh,       1, FLOAT, GR_M(cosh)(a),              0,                   D(gr_sinh(x0)), D_NONE, D_NONE) /* cosh x */ \
    X(tanh,       1, FLOAT, GR_M(gr__tanh)(a),              0,                   D(gr_sub(K(1), gr_sqr(y))), D_NONE, D_NONE) /* tanh x */ \
    X(arcsinh,    1, FLOAT, GR_M(asinh)(a),             0,                   D(gr_reciprocal(gr_sqrt(gr_add(gr_sqr(x0), K(1))))), D_NONE, D_NONE) /* asinh x */ \
    X(arccosh,    1, FLOAT, GR_M(acosh)(a),             0,                   D(gr_reciprocal(gr_sqrt(gr_sub(gr_sqr(x0), K(1))))), D_NONE, D_NONE) /* acosh x */ \
    X(arctanh,    1, FLOAT, GR_M(atanh)(a),             0,                   D(gr_reciprocal(gr_sub(K(1), gr_sqr(x0)))), D_NONE, D_NONE) /* atanh x */ \
    /* special functions and activations */ \
    X(erf,        1, FLOAT, GR_M(erf)(a),               0,                   D(gr_mul(K(1.12837916709551257390), gr_exp(gr_neg(gr_sqr(x0))))), D_NONE, D_NONE) /* erf x */ \
    X(erfc,       1, FLOAT, GR_M(erfc)(a),              0,                   D(gr_mul(K(-1.12837916709551257390), gr_exp(gr_neg(gr_sqr(x0))))), D_NONE, D_NONE) /* 1 - erf x */ \
    X(sigmoid,    1, FLOAT, GR_M(gr__sigmoid)(a),       0,                   D(gr_mul(y, gr_sub(K(1), y))), D_NONE, D_NONE) /* 1 / (1 + e^-x) */ \
    X(softplus,   1, FLOAT, GR_M(gr__softplus)(a),      0,                   D(gr_sigmoid(x0)), D_NONE, D_NONE) /* ln(1 + e^x) */ \
    X(relu,       1, ARITH, (a > 0 ? a : (GR_T)0),      (a > 0 ? a : 0),     D(gr__cast_like(gr_gt(x0, K(0)), y)), D_NONE, D_NONE) /* max(x, 0) */ \
    /* comparisons and logic: BOOL results, no derivative */ \
    X(gt,         2, CMP,   a > b,                      a > b,               D_ZERO, D_ZERO, D_NONE) /* a > b */ \
    X(lt,         2, CMP,   a < b,                      a < b,               D_ZERO, D_ZERO, D_NONE) /* a < b */ \
    X(ge,         2, CMP,   a >= b,                     a >= b,              D_ZERO, D_ZERO, D_NONE) /* a >= b */ \
    X(le,         2, CMP,   a <= b,                     a <= b,              D_ZERO, D_ZERO, D_NONE) /* a <= b */ \
    X(eq,         2, CMP,   a == b,                     a == b,              D_ZERO, D_ZERO, D_NONE) /* a == b */ \
    X(neq,        2, CMP,   a != b,                     a != b,              D_ZERO, D_ZERO, D_NONE) /* a != b */ \
    X(logical_and,2, LOGIC, 0,                          (a != 0) & (b != 0), D_ZERO, D_ZERO, D_NONE) /* a and b */ \
    X(logical_or, 2, LOGIC, 0,                          (a != 0) | (b != 0), D_ZERO, D_ZERO, D_NONE) /* a or b */ \
    X(logical_not,1, LOGIC, 0,                          a == 0,              D_ZERO, D_NONE, D_NONE) /* not x */ \
    /* (end of the elementwise table: every row above ends with a backslash) */

/* ---- elementwise rewrites ----------------------------------------------------------------------
   X(row, rule)  when gr_function rewrites, a node of the elementwise row may be replaced by what
                 gr__<rule>_rewrite builds (src/rewrite.h). A row's rules are tried in the order
                 listed and the first that applies wins; a rule is written in the family file of
                 the ops its pattern involves.                                                    */
#define GR_ELEMWISE_REWRITES(X) \
    /* ops/batch.c: banded matrices stay banded */ \
    GR__FAMILY_BATCH( \
    X(add,   banded_sum)       /* B1 + B2 -> one Banded, the diagonals merged */ \
    X(neg,   banded_scale)     /* -B -> B's diagonals negated */ \
    X(mul,   banded_scale)     /* B * c, B * v (v along the columns) -> B's diagonals scaled */ \
    X(div,   banded_scale)     /* B / c, B / v -> the same */ \
    ) \
    /* ops/index.c */ \
    GR__FAMILY_INDEX( \
    X(add,   update_into)      /* x + update(0, y at a view) -> update(x, y at the view), increments */ \
    ) \
    /* ops/elemwise.c: algebra (zeros are 0-d zeros or zeros filled to a shape) */ \
    X(add,   add_zero)         /* x + 0 -> x, 0 + x -> x */ \
    X(sub,   add_zero)         /* x - 0 -> x, 0 - x -> -x */ \
    X(sub,   expm1)            /* exp(x) - 1 -> expm1(x) */ \
    X(mul,   mul_one)          /* x * 1 -> x, x * -1 -> -x */ \
    X(mul,   mul_zero)         /* x * 0 -> zeros shaped like the product (x's infinities and NaNs are not kept) */ \
    X(mul,   mul_consts)       /* c1 (c2 x) -> (c1 c2) x, (c1 x)(c2 y) -> (c1 c2)(x y), c (-x) -> (-c) x */ \
    X(div,   div_one)          /* x / 1 -> x */ \
    X(div,   zero_div)         /* 0 / x -> 0 */ \
    X(neg,   neg_neg)          /* -(-x) -> x */ \
    X(neg,   neg_zero)         /* -0 -> 0 */ \
    X(neg,   neg_consts)       /* -(c x) -> (-c) x */ \
    X(pow,   pow_small)        /* x^1 -> x, x^2 -> sqr(x) */ \
    X(log,   log1p)            /* log(1 + x) -> log1p(x) */ \
    X(log,   log_sigmoid)      /* log(sigmoid(x)) -> -softplus(-x) */ \
    /* ops/nnet.c */ \
    GR__FAMILY_NNET( \
    X(log,   log_softmax)      /* log(softmax(x)) -> log_softmax(x) */ \
    ) \
    /* (end of the elementwise rewrites) */

/* ---- elementwise pairs -------------------------------------------------------------------------
   X(first, second, name)  first(x) and second(x) of one float operand computed in one loop by
                           gr__<name>_pair (ops/elemwise.c): a fused group computing both runs
                           them as one instruction (src/fuse.c)                                    */
#define GR_ELEMWISE_PAIRS(X) \
    X(sin,   cos,   sincos)    /* compilers make one sincos call of the loop */ \
    /* (end of the elementwise pairs) */

/* ---- structural ops ------------------------------------------------------------------------------
   X(Name, n_in, n_out, rules, conn, alias, flags, batch, sig, simp)
   Name     the printed name; the op's rules are gr__<Name>_perform, _grad and _rop (its family file)
   n_in     the number of inputs, -1 for any number
   rules    prefix of the shared type and shape rules: gr__<rules>_infer and gr__<rules>_shape
   conn     connection pattern (n_in x n_out, nonzero where input i reaches output j), NULL: all
   alias    gr__<alias>_alias says when output 0 can be input 0's memory without a copy, or none
   flags    GRADMOD: an identity that only changes the gradient (gr_function removes it);
            NONDIFF: no derivative flows through it (R-op contributes nothing);
            INNERCONN: it wraps an op, whose connection pattern it has (Batched);
            SHAPEREF: the inputs its connection pattern excludes are read for their shape only;
            INPLACE0: the output may take input 0's memory when input 0 is read there for the last
            time; CONN0: input 0 alone reaches the outputs, every one (the connection pattern of an
            op with any number of inputs and outputs); CONVERT: output 0 is input 0 converted to
            output 0's dtype, element by element (fusion runs it as a copy; printers show the dtype); FILL: output 0 is
            input 0 broadcast to input 1's shape, dtype and values kept (fusion reads it in place;
            a fill of zeros is zeros); LAZY: a conditional (input 0 the condition, the first half of
            the others read when it is nonzero, the second half when it is zero: the nodes only one
            side needs run only then); two joined by _ (NONDIFF_SHAPEREF) are both; 0 otherwise
   batch    how gr__vectorize rebuilds the op when inputs gain a leading batch axis (Jacobians):
            gr__<batch>_batch; `map` applies the op row by row over the batch (always correct)
   sig      gr__<sig>_sig gives output 0's shape signature when gr_function rewrites (src/rewrite.h):
            which of its axes have the size of which input axes in every call, so that rewrites
            know when a result keeps a shape and fusion which nodes iterate alike; none: nothing
            known (fresh symbols)
   simp     gr__<simp>_simplify may replace a node by a cheaper equivalent when gr_function
            rewrites (src/rewrite.h); none: never                                                */
#define GR_STRUCT_OPS(X) \
    /* ops/elemwise.c */ \
    X(Cast,             1,  1,  Cast,          NULL,         none,       CONVERT,          same,        like0,      Cast)           /* y = (dtype) x, floats to ints truncate */ \
    /* ops/reduce.c */ \
    X(Sum,              1,  1,  reduce,        NULL,         none,       0,                reduce,      reduce,     none)           /* y = sum over axes */ \
    X(Mean,             1,  1,  reduce,        NULL,         none,       0,                reduce,      reduce,     none)           /* y = sum over axes / count */ \
    X(Prod,             1,  1,  reduce,        NULL,         none,       0,                reduce,      reduce,     none)           /* y = product over axes */ \
    X(Max,              1,  1,  reduce,        NULL,         none,       0,                reduce,      reduce,     none)           /* y = max over axes */ \
    X(Min,              1,  1,  reduce,        NULL,         none,       0,                reduce,      reduce,     none)           /* y = min over axes */ \
    /* ops/shape.c */ \
    X(DimShuffle,       1,  1,  DimShuffle,    NULL,         DimShuffle, 0,                DimShuffle,  DimShuffle, DimShuffle)     /* permute, insert and drop broadcastable axes */ \
    X(Reshape,          1,  1,  Reshape,       NULL,         always,     0,                map,         none,       Reshape)        /* same data, new shape */ \
    X(BroadcastLike,    2,  1,  BroadcastLike, gr__conn_10,  same_size,  SHAPEREF_FILL,    map,         like1,      BroadcastLike)  /* x broadcast to the shape of ref */ \
    X(ReduceLike,       2,  1,  ReduceLike,    gr__conn_10,  same_size,  SHAPEREF,         map,         like1,      ReduceLike)     /* x summed down to the shape of ref */ \
    X(ReshapeLike,      2,  1,  ReshapeLike,   gr__conn_10,  always,     SHAPEREF,         map,         like1,      ReshapeLike)    /* x's data in the shape of ref */ \
    X(SizeRatio,        2,  1,  SizeRatio,     gr__conn_00,  none,       NONDIFF_SHAPEREF, map,         none,       none)           /* size(a) / size(b), a 0-d float */ \
    /* ops/dot.c */ \
    GR__FAMILY_DOT( \
    X(Dot,              2,  1,  Dot,           NULL,         none,       0,                map,         Dot,        Dot)            /* op(a) . op(b), op = transpose when flagged */ \
    ) \
    /* ops/nnet.c */ \
    GR__FAMILY_NNET( \
    X(Softmax,          1,  1,  like0,         NULL,         none,       0,                axis,        like0,      none)           /* e^x / sum_axis e^x */ \
    X(LogSoftmax,       1,  1,  like0,         NULL,         none,       0,                axis,        like0,      none)           /* x - logsumexp_axis x */ \
    ) \
    /* ops/gradops.c: identities in the forward pass that change only the gradient */ \
    X(ZeroGrad,         1,  1,  like0,         NULL,         always,     GRADMOD,          same,        like0,      none)           /* y = x; dy/dx := 0 */ \
    X(DisconnectedGrad, 1,  1,  like0,         gr__conn_0,   always,     GRADMOD_NONDIFF,  same,        like0,      none)           /* y = x; x is disconnected */ \
    X(ConsiderConstant, 1,  1,  like0,         NULL,         always,     GRADMOD,          same,        like0,      none)           /* y = x; dy/dx := 0 (deprecated) */ \
    X(GradClip,         1,  1,  like0,         NULL,         always,     GRADMOD,          same,        like0,      none)           /* y = x; gradient clipped */ \
    X(GradScale,        1,  1,  like0,         NULL,         always,     GRADMOD,          same,        like0,      none)           /* y = x; gradient scaled */ \
    X(UndefinedGrad,    1,  1,  like0,         NULL,         always,     GRADMOD_NONDIFF,  same,        like0,      none)           /* y = x; gradient undefined */ \
    /* ops/batch.c: batching for Jacobians */ \
    GR__FAMILY_BATCH( \
    X(EyeLike,          1,  1,  EyeLike,       gr__conn_0,   none,       NONDIFF_SHAPEREF, map,         none,       EyeLike)        /* (size(ref), *shape(ref)): row k is e_k */ \
    X(Unflatten,        2,  1,  Unflatten,     gr__conn_10,  always,     SHAPEREF,         map,         none,       none)           /* x (size(ref), ...) -> (*shape(ref), ...) */ \
    X(Batched,          -1, 1,  Batched,       NULL,         Batched,    INNERCONN,        map,         none,       Batched)        /* an op applied row by row over axis 0 */ \
    X(Banded,           -1, 1,  Banded,        NULL,         none,       0,                map,         Banded,     none)           /* (size(ref), m) from diagonals c_i at offsets k_i (gr_function only) */ \
    ) \
    /* ops/index.c: views of one axis and advanced indexing, and their updates */ \
    GR__FAMILY_INDEX( \
    X(Slice,            1,  1,  view,          NULL,         view,       0,                view,        view,       Slice)          /* x[start:stop:step] along an axis */ \
    X(Index,            1,  1,  view,          NULL,         view,       0,                view,        view,       none)           /* x[i] along an axis (the axis goes) */ \
    X(Take,             2,  1,  Take,          gr__conn_10,  none,       0,                Take,        none,       none)           /* x[indices] along an axis (I64 indices) */ \
    X(ViewUpdate,       2,  1,  like0,         NULL,         none,       INPLACE0,         map,         like0,      none)           /* x with a Slice/Index part set to or incremented by y */ \
    X(TakeUpdate,       3,  1,  like0,         gr__conn_110, none,       INPLACE0,         map,         like0,      none)           /* x with x[indices] set to or incremented by y */ \
    ) \
    /* ops/shape.c: joining, splitting, tiling */ \
    GR__FAMILY_JOIN( \
    X(Join,             -1, 1,  Join,          NULL,         none,       0,                Join,        none,       none)           /* [x_0 | x_1 | ...] along an axis */ \
    X(Split,            -1, -1, Split,         NULL,         none,       CONN0,            Split,       none,       none)           /* x cut into k pieces along an axis (k outputs) */ \
    X(BroadcastTo,      1,  1,  BroadcastTo,   NULL,         same_size,  0,                BroadcastTo, none,       none)           /* x broadcast to a given shape */ \
    X(Tile,             1,  1,  Tile,          NULL,         same_size,  0,                Tile,        none,       none)           /* x repeated reps_k times along axis k (NumPy tile) */ \
    X(Untile,           2,  1,  Untile,        gr__conn_10,  same_size,  0,                Untile,      none,       none)           /* g summed over its tiles, in ref's shape (adjoint of Tile) */ \
    ) \
    /* ops/reduce.c: along one axis */ \
    GR__FAMILY_AXIS( \
    X(ArgMax,           1,  1,  axisred,       NULL,         none,       NONDIFF,          axdir,       none,       none)           /* first position of the max along an axis (I64) */ \
    X(LogSumExp,        1,  1,  axisred,       NULL,         none,       0,                axdir,       none,       none)           /* m + log sum_axis e^(x - m), m = max_axis x */ \
    X(CumSum,           1,  1,  like0,         NULL,         none,       0,                axdir,       like0,      none)           /* y_k = sum_{i<=k} x_i along an axis (or i>=k) */ \
    X(CumProd,          1,  1,  like0,         NULL,         none,       0,                axdir,       like0,      none)           /* y_k = prod_{i<=k} x_i along an axis */ \
    X(Diff,             1,  1,  Diff,          NULL,         none,       0,                axdir,       Diff,       none)           /* y_k = x_{k+1} - x_k along an axis (NumPy diff, n = 1) */ \
    X(LinScan,          2,  1,  LinScan,       NULL,         none,       0,                axdir,       none,       none)           /* s_k = a_k s_{k-1} + b_k (or a_{k+1} s_{k+1} + b_k) */ \
    ) \
    /* ops/dot.c and ops/linalg.c: contractions, factorisations and what their derivatives use */ \
    GR__FAMILY_DOT( \
    X(TensorDot,        2,  1,  TensorDot,     NULL,         none,       0,                TensorDot,   none,       none)           /* (*fa, *s) . (*s, *fb) -> (*fa, *fb); flags as Dot's */ \
    X(MatMul,           2,  1,  MatMul,        NULL,         none,       0,                MatMul,      none,       none)           /* a @ b on the last two axes; batch axes broadcast */ \
    ) \
    GR__FAMILY_LINALG( \
    X(LUFactor,         1,  1,  LUFactor,      gr__conn_0,   none,       NONDIFF,          map,         none,       none)           /* P A = L U, packed with the pivots: the workspace */ \
    X(MatrixInverse,    2,  1,  la_square,     gr__conn_10,  none,       0,                map,         none,       none)           /* A^-1, from (A, LUFactor(A)) */ \
    X(Det,              2,  1,  la_scalar,     gr__conn_10,  none,       0,                map,         none,       none)           /* det A, from (A, LUFactor(A)) */ \
    X(Adjugate,         2,  1,  la_square,     gr__conn_10,  none,       0,                map,         none,       none)           /* adj A (= det(A) A^-1 where A is invertible), from (A, LUFactor(A)) */ \
    X(LogDet,           2,  1,  la_scalar,     gr__conn_10,  none,       0,                map,         none,       none)           /* log det A (NaN when det A < 0) */ \
    X(Solve,            3,  1,  Solve,         gr__conn_110, none,       0,                Solve,       none,       none)           /* A^-1 b (or A^-T b), from (A, b, LUFactor(A)) */ \
    X(Cholesky,         1,  1,  la_square,     NULL,         none,       0,                map,         none,       none)           /* lower L with L L^T = A (lower triangle read) */ \
    X(Trace,            1,  1,  Trace,         NULL,         none,       0,                same,        none,       none)           /* sum_i x[..., i, i] */ \
    X(TriScale,         1,  1,  like0,         NULL,         none,       0,                same,        like0,      none)           /* x[..., i, j] * (below, on, above)[sign(j - i) + 1] */ \
    ) \
    /* ops/nnet.c: losses */ \
    GR__FAMILY_NNET( \
    X(CrossEntropy,     2,  1,  CrossEntropy,  NULL,         none,       0,                map,         none,       none)           /* mean over rows of sum_k t_k (lse(z) - z_k) */ \
    X(OneHot,           2,  1,  OneHot,        gr__conn_00,  none,       NONDIFF,          map,         none,       none)           /* row r = e_{ids[r]}, shaped like ref (class ids) */ \
    ) \
    /* ops/scan.c: loops */ \
    GR__FAMILY_SCAN( \
    X(Scan,            -1, -1,  Scan,          NULL,         none,       LOOP,             Scan,        none,       none)           /* a loop: its body run over sequences and states (gr_scan) */ \
    X(Rows,             1,  1,  Rows,          gr__conn_0,   none,       NONDIFF_SHAPEREF, map,         none,       none)           /* x.shape[0] (I64): the offsets of a loop's gradient */ \
    X(ScanPlace,        3,  1,  place,         gr__conn_100, none,       0,                map,         none,       none)           /* zeros like ref, row t of r added at row off + dir t + k */ \
    X(ScanGather,       3,  1,  place,         gr__conn_100, none,       0,                map,         none,       none)           /* rows like ref: row t is row off + dir t + k of g */ \
    ) \
    /* ops/ifelse.c: lazy conditionals */ \
    GR__FAMILY_IFELSE( \
    X(IfElse,           3,  1,  IfElse,        NULL,         none,       LAZY,             IfElse,      IfElse,     IfElse)         /* cond ? a : b, only the side taken computed (gr_ifelse) */ \
    ) \
    /* ops/graphop.c: ops made of graphs */ \
    GR__FAMILY_GRAPHOP( \
    X(OpFromGraph,     -1, -1,  OpFromGraph,   NULL,         none,       GRAPHOP_RUNTIME,  OpFromGraph, none,       none)           /* outputs computed by an inner graph (gr_op_from_graph) */ \
    ) \
    /* src/fuse.c: made by gr_function only */ \
    X(Fused,            -1, -1, Fused,         NULL,         none,       0,                map,         none,       none)           /* elementwise ops run as one pass */ \
    /* (end of the structural table: every row above ends with a backslash) */

/* The ops whose every node keeps state of its own in a compiled function (flag RUNTIME): once the
   function is scheduled it calls gr__<Name>_runtime(node, level), and gr__<Name>_release(node)
   when it is freed; before scheduling (GR_OPT_FULL), gr__<Name>_narrow(node, readers, map) may
   make the node again computing only what the function reads (see ops/scan.c). */
#define GR_RUNTIME_OPS(X) \
    GR__FAMILY_SCAN( \
    X(Scan) \
    ) \
    GR__FAMILY_GRAPHOP( \
    X(OpFromGraph) \
    )

/* The ops whose perform needs work memory besides their outputs (a GEMM's packing buffers):
   gr__<Name>_scratch(node, in, out) gives its bytes once the shapes are known, and the caller of
   perform passes that much memory, aligned for double, as one more output array after the node's
   outputs (out[node->n_out]: a compiled function's scratch buffer, kept from call to call). */
#define GR_SCRATCH_OPS(X) \
    GR__FAMILY_DOT( \
    X(Dot) \
    X(TensorDot) \
    X(MatMul) \
    ) \
    GR__FAMILY_BATCH( \
    X(Batched) \
    )

/* ==== src/impl.c: generated region; edit src/impl.c, then run make gradient.h ==== */
/* src/impl.c: the core's structures (variables, nodes, graphs), the built-in ops' own fields, and
   the op tables expanded: rule prototypes, op numbers, and the gr_op_def of every row. */

#define GR__MSG 1024                 /* room for one error message */

/* ---- internal structures ------------------------------------------------------------------- */

typedef struct gr__chunk { struct gr__chunk *next; size_t size, used; } gr__chunk;
typedef struct gr__arena { gr__chunk *head; size_t total; } gr__arena;

/* the storage of a shared variable: one value, shared by the graph and every function using it */
typedef struct gr__storage { int refs; gr_array *value; } gr__storage;

enum gr__var_kind {
    GR__VK_OUT,          /* output of a node */
    GR__VK_INPUT,        /* a free input */
    GR__VK_CONST,        /* a constant; ext is its gr_array */
    GR__VK_SHARED,       /* a shared variable; ext is its gr__storage */
    GR__VK_DISC,         /* DisconnectedType marker */
    GR__VK_NULL          /* NullType marker; ext is its reason, aux its status code */
};
enum {
    GR__VF_WEAK  = 1,                /* a weakly typed gr_const */
    GR__VF_NAMED = 2                 /* the graph's name table holds a name for it */
};

/* A variable is 32 bytes, followed by its ndim shape entries (-1 unknown); a node is 32 bytes,
   followed by its input and output variables and its parameters. Graphs of tens of millions of
   nodes are memory-bound, so nothing that can be computed or is rare (names) is stored. */
struct gr_var {
    gr_graph *graph;
    union {
        gr_node *owner;              /* GR__VK_OUT: the node computing it */
        void    *ext;                /* the constant's gr_array, the shared variable's gr__storage,
                                        the null gradient's reason */
    } u;
    uint32_t  id;                    /* index in graph->vars (after var_base) */
    int32_t   out_index;
    uint8_t   dtype, ndim, kind, flags, aux;
};

struct gr_node {
    const gr_op_def *op;
    gr_graph *graph;
    uint32_t  params_size;
    uint32_t  id;
    int32_t   n_in, n_out;
};

typedef char gr__var_is_small[sizeof(gr_var) <= 2 * sizeof(void *) + 16 ? 1 : -1];  /* 32 bytes on 64-bit targets, 24 on 32-bit */
typedef char gr__node_is_small[sizeof(gr_node) <= 2 * sizeof(void *) + 16 ? 1 : -1];

static int64_t *gr__vshape(const gr_var *v) { return (int64_t *)(uintptr_t)(v + 1); }
static gr_node *gr__owner(const gr_var *v) { return v->kind == GR__VK_OUT ? v->u.owner : NULL; }
static void *gr__ext(const gr_var *v) { return v->kind == GR__VK_OUT ? NULL : v->u.ext; }
static gr_var **gr__in(const gr_node *n) { return (gr_var **)(uintptr_t)(n + 1); }
static gr_var **gr__out(const gr_node *n) { return (gr_var **)(uintptr_t)(n + 1) + n->n_in; }
static void *gr__params(const gr_node *n) {
    return n->params_size ? (void *)((gr_var **)(uintptr_t)(n + 1) + n->n_in + n->n_out) : NULL;
}
static const char *gr__vname(const gr_var *v);

/* An object that nodes reach through their parameters (a loop's body, an op made of a graph), kept
   alive by a counted reference from every graph holding such a node; the last release destroys it.
   Its head carries the per-node connection pattern (n_in x n_out) the grad driver reads. */
struct gr__rewriter;
typedef struct gr__printer gr__printer;   /* a printer at work (src/print.c) */
static void gr__print_inner(gr__printer *p, const char *what, int n_in, gr_var *const *in, int n_out,
                            gr_var *const *out, const char *note) GR__UNUSED;
typedef struct gr__graphop {
    int refs;
    void (*destroy)(struct gr__graphop *o);
    int n_in, n_out;
    unsigned char *conn;             /* NULL: every input reaches every output */
    const char *name;                /* printed after the op's name */
    /* draws the inner graphs under the node (src/print.c): calls gr__print_inner once for each,
       naming it and giving its inputs and results; the printer in use draws it in its own style */
    void (*print)(struct gr__printer *p, const struct gr__graphop *o);
    /* the grad rule told which inputs' terms are not needed (skip[i]: zeros will do), so that a loop
       computes no gradient of a sequence nobody asked for; NULL: the op's grad */
    gr_status (*grad_some)(const gr_node *node, gr_var *const *og, gr_var **ig, const uint8_t *skip);
    /* gr_function puts the node's inner nodes in its place (an inlined op made of a graph); NULL: never */
    gr_status (*expand)(struct gr__rewriter *rw, const gr_node *node, gr_var *const *ins, gr_var **outs);
} gr__graphop;

struct gr_graph {
    gr__arena     arena;
    gr_var      **vars;    uint32_t n_vars, cap_vars;
    gr_node     **nodes;   uint32_t n_nodes, cap_nodes;
    uint32_t      var_base, node_base;   /* ids start here: a function's private graph numbers its own
                                            after its source graph's, whose nodes it may reuse */
    void        **owned;   uint32_t n_owned, cap_owned;      /* big blocks freed with the graph */
    gr__storage **stores;  uint32_t n_stores, cap_stores;    /* shared storages referenced */
    gr_var      **consts;  uint32_t n_consts, cap_consts;    /* typed scalar constants, by value */
    struct gr__name *names; uint32_t n_names, cap_names;     /* names of the named variables, by id (open
                                                                addressing; cap a power of 2) */
    gr__graphop **held;    uint32_t n_held, cap_held;        /* one reference for each node of a GRAPHOP op */
    gr_status     status;
    char          message[GR__MSG];
    gr_log_fn     log;
    void         *log_user;
    gr_progress_fn progress;             /* gr_graph_set_progress; NULL: none */
    void         *progress_user;
};

/* ---- the built-in ops' own fields --------------------------------------------------------------- */

/* what the core knows of a built-in op besides its public rules; users' ops have none (NULL) */
struct gr__builtin {
    int      code;                            /* elementwise row, or structural op number */
    unsigned flags;                           /* GR__OPF_* */
    int64_t (*alias)(const gr_node *node, const gr_array *const *in, const gr_array *out);
          /* byte offset at which output 0 can share input 0's memory, or -1 */
    gr_status (*batch)(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out);
          /* the node rebuilt on inputs of which those flagged gained a leading batch axis;
             NULL: the op is applied row by row */
};

/* op flags */
enum {
    GR__OPF_ELEMWISE = 1,            /* an elementwise row: code is the row */
    GR__OPF_GRADMOD  = 2,            /* identity that only changes the gradient: removed when compiled */
    GR__OPF_NONDIFF  = 4,            /* outputs carry no derivative (R-op: contributes nothing) */
    GR__OPF_INNERCONN = 8,           /* wraps an op, whose connection pattern it has (Batched) */
    GR__OPF_SHAPEREF = 16,           /* inputs the connection pattern excludes are read for their shape only */
    GR__OPF_INPLACE0 = 32,           /* output 0 may take input 0's memory when input 0 dies there */
    GR__OPF_CONVERT  = 64,           /* output 0 is input 0 converted to its dtype, element by element */
    GR__OPF_FILL     = 128,          /* output 0 is input 0 broadcast to input 1's shape, dtype and values kept */
    GR__OPF_CONN0    = 256,          /* input 0 alone reaches the outputs (any arity): the pattern */
    GR__OPF_DYNSHAPE = 512,          /* its outputs' shapes are known once it has run (a loop): its
                                        perform sets them and points them at memory of its own */
    GR__OPF_RUNTIME  = 1024,         /* a compiled function keeps state of its own for each such node
                                        (GR_RUNTIME_OPS: made when the function is, freed with it) */
    GR__OPF_GRAPHOP  = 2048,         /* its params begin with a gr__graphop *: counted, and its
                                        connection pattern is the node's */
    GR__OPF_LAZY     = 4096          /* a conditional: input 0 is a 0-d condition, inputs 1..k are read
                                        only when it is nonzero, inputs k+1..2k only when it is zero
                                        (n_in = 2k + 1); a compiled function runs the nodes only one
                                        side needs only then, and so does the backward pass */
};

typedef int64_t (*gr__alias_fn)(const gr_node *node, const gr_array *const *in, const gr_array *out);
typedef gr_status (*gr__batch_fn)(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out);

/* an op's built-in fields: 0 and NULL for users' ops */
static unsigned gr__flags_of(const gr_op_def *op) { return op->builtin ? op->builtin->flags : 0u; }
static gr__alias_fn gr__alias_of(const gr_op_def *op) { return op->builtin ? op->builtin->alias : NULL; }
static GR__UNUSED gr__batch_fn gr__batch_of(const gr_op_def *op) { return op->builtin ? op->builtin->batch : NULL; }
/* a built-in op's row (the caller knows it is one) */
static int gr__code_of(const gr_op_def *op) { GR_ASSERT(op->builtin); return op->builtin->code; }

/* ---- prototypes of every rule named by the structural table --------------------------------- */

#define GR__STRUCT_PROTO(Name, nin, nout, rules, conn, alias, flags, batch, sig, simp) \
    static gr_status gr__##rules##_infer(const gr_node *node, gr_type *out); \
    static gr_status gr__##rules##_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out); \
    static gr_status gr__##Name##_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out); \
    static gr_status gr__##Name##_grad(const gr_node *node, gr_var *const *og, gr_var **ig); \
    static gr_status gr__##Name##_rop(const gr_node *node, gr_var *const *ev, gr_var **orop); \
    static int64_t gr__##alias##_alias(const gr_node *node, const gr_array *const *in, const gr_array *out); \
    static gr_status gr__##batch##_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) GR__UNUSED;
GR_STRUCT_OPS(GR__STRUCT_PROTO)
#undef GR__STRUCT_PROTO

static const unsigned char gr__conn_10[2] = { 1, 0 };   /* input 0 connected, input 1 shape only */
static const unsigned char gr__conn_00[2] = { 0, 0 };   /* both inputs shape only */
static const unsigned char gr__conn_0[1] = { 0 };       /* the input does not reach the output's gradient */
static const unsigned char gr__conn_100[3] = { 1, 0, 0 };  /* input 0 connected, inputs 1 and 2 not */
static const unsigned char gr__conn_110[3] = { 1, 1, 0 }; /* inputs 0 and 1 connected, input 2 (indices) not */

enum gr__struct_code {
#define GR__STRUCT_CODE(Name, nin, nout, rules, conn, alias, flags, batch, sig, simp) GR__OP_##Name,
    GR_STRUCT_OPS(GR__STRUCT_CODE)
#undef GR__STRUCT_CODE
    GR__OP_COUNT
};

#define GR__OPF_0 0
#define GR__OPF_LOOP (GR__OPF_DYNSHAPE | GR__OPF_RUNTIME | GR__OPF_GRAPHOP)
#define GR__OPF_GRAPHOP_RUNTIME (GR__OPF_GRAPHOP | GR__OPF_RUNTIME)
#define GR__OPF_NONDIFF_SHAPEREF (GR__OPF_NONDIFF | GR__OPF_SHAPEREF)
#define GR__OPF_SHAPEREF_FILL (GR__OPF_SHAPEREF | GR__OPF_FILL)
#define GR__OPF_GRADMOD_NONDIFF (GR__OPF_GRADMOD | GR__OPF_NONDIFF)
#ifdef GR_NO_BATCH                  /* no Jacobians: the batching rules are left unreferenced */
#define GR__BATCH_RULE(batch) NULL
#else
#define GR__BATCH_RULE(batch) gr__##batch##_batch
#endif
#define GR__STRUCT_DEF(Name, nin, nout, rules, conn, alias, flags, batch, sig, simp) \
    static const struct gr__builtin gr__builtin_##Name GR__UNUSED = { GR__OP_##Name, GR__OPF_##flags, gr__##alias##_alias, \
        GR__BATCH_RULE(batch) }; \
    static const gr_op_def gr__op_##Name GR__UNUSED = { #Name, nin, nout, gr__##rules##_infer, gr__##rules##_shape, conn, \
        gr__##Name##_perform, gr__##Name##_grad, gr__##Name##_rop, &gr__builtin_##Name };
GR_STRUCT_OPS(GR__STRUCT_DEF)
#undef GR__STRUCT_DEF

/* ops/graphop.c: gr_apply of an op made of a graph (src/graph.c) */
static gr_status gr__graph_op_apply(gr_graph *g, const gr_op_def *op, int n_in, gr_var *const *inputs, gr_var **outputs);

/* src/grad.c, for the loops' gradients (ops/scan.c) */
static int gr__connected(const gr_node *node, int i, int j);   /* input i of node affects output j */
static gr_var *gr__null_var(gr_graph *g, const gr_var *like, gr_status code, const char *reason);
static const char *gr__null_reason(const gr_var *v);
static int gr__is_zero(const gr_var *t);                      /* 1: zeros, 0: not, -1: not known when built */

/* the readers of a compiled function's variables (ids from base): a list per variable through next,
   and whether the function returns or updates it (root) */
typedef struct gr__readers {
    uint32_t base;
    const int32_t *first, *next;
    gr_node *const *node;
    const uint8_t *root;
} gr__readers;
/* the ops whose nodes keep state of their own in a compiled function (flag RUNTIME): made once the
   function is scheduled, released when it is freed */
#define GR__RUNTIME_PROTO(Name) \
    static gr_status gr__##Name##_runtime(gr_node *node, int level); \
    static void gr__##Name##_release(gr_node *node); \
    static gr_status gr__##Name##_narrow(gr_node *node, const gr__readers *rd, gr_var **map);
GR_RUNTIME_OPS(GR__RUNTIME_PROTO)
#undef GR__RUNTIME_PROTO
static gr_status gr__runtime_make(gr_node *node, int level) {
    (void)node; (void)level;                  /* (no such op: ops/table.h, op families) */
#define GR__RUNTIME_MAKE(Name) if (node->op->perform == gr__##Name##_perform) return gr__##Name##_runtime(node, level);
    GR_RUNTIME_OPS(GR__RUNTIME_MAKE)
#undef GR__RUNTIME_MAKE
    return GR_OK;
}
static gr_status gr__runtime_narrow(gr_node *node, const gr__readers *rd, gr_var **map) {
    (void)node; (void)rd; (void)map;                  /* (no such op: ops/table.h, op families) */
#define GR__RUNTIME_NARROW(Name) if (node->op->perform == gr__##Name##_perform) return gr__##Name##_narrow(node, rd, map);
    GR_RUNTIME_OPS(GR__RUNTIME_NARROW)
#undef GR__RUNTIME_NARROW
    return GR_OK;
}
static void gr__runtime_release(gr_node *node) {
    (void)node;                  /* (no such op: ops/table.h, op families) */
#define GR__RUNTIME_RELEASE(Name) if (node->op->perform == gr__##Name##_perform) { gr__##Name##_release(node); return; }
    GR_RUNTIME_OPS(GR__RUNTIME_RELEASE)
#undef GR__RUNTIME_RELEASE
}
#define GR__SCRATCH_PROTO(Name) static size_t gr__##Name##_scratch(const gr_node *node, const gr_array *const *in, const gr_array *const *out);
GR_SCRATCH_OPS(GR__SCRATCH_PROTO)
#undef GR__SCRATCH_PROTO
/* the work memory node's perform needs, its inputs' and outputs' shapes known (GR_SCRATCH_OPS) */
static size_t gr__scratch_bytes(const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)node; (void)in; (void)out;                  /* (no such op: ops/table.h, op families) */
#define GR__SCRATCH_OF(Name) if (node->op == &gr__op_##Name) return gr__##Name##_scratch(node, in, out);
    GR_SCRATCH_OPS(GR__SCRATCH_OF)
#undef GR__SCRATCH_OF
    return 0;
}
/* the structural rows by code */
static const gr_op_def *const gr__struct_ops[GR__OP_COUNT + 1] = {
#define GR__STRUCT_PTR(Name, nin, nout, rules, conn, alias, flags, batch, sig, simp) &gr__op_##Name,
    GR_STRUCT_OPS(GR__STRUCT_PTR)
#undef GR__STRUCT_PTR
    NULL
};

/* ---- the elementwise rows ------------------------------------------------------------------- */

enum gr__ew_row {
#define GR__EW_ROW(name, arity, cls, fexpr, iexpr, d0, d1, d2) GR__EW_##name,
    GR_ELEMWISE_OPS(GR__EW_ROW)
#undef GR__EW_ROW
    GR__EW_COUNT
};

static gr_status gr__ew_infer(const gr_node *node, gr_type *out);
static gr_status gr__ew_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out);
static gr_status gr__ew_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out);
static gr_status gr__ew_grad(const gr_node *node, gr_var *const *og, gr_var **ig);
static gr_status gr__ew_rop(const gr_node *node, gr_var *const *ev, gr_var **orop);
static gr_status gr__ew_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) GR__UNUSED;

#define GR__EW_DEF(name, arity, cls, fexpr, iexpr, d0, d1, d2) \
    static const struct gr__builtin gr__builtin_ew_##name GR__UNUSED = { GR__EW_##name, GR__OPF_ELEMWISE, NULL, GR__BATCH_RULE(ew) }; \
    static const gr_op_def gr__op_ew_##name GR__UNUSED = { #name, arity, 1, gr__ew_infer, gr__ew_shape, NULL, \
        gr__ew_perform, gr__ew_grad, gr__ew_rop, &gr__builtin_ew_##name };
GR_ELEMWISE_OPS(GR__EW_DEF)
#undef GR__EW_DEF

static const gr_op_def *const gr__ew_ops[GR__EW_COUNT + 1] = {
#define GR__EW_PTR(name, arity, cls, fexpr, iexpr, d0, d1, d2) &gr__op_ew_##name,
    GR_ELEMWISE_OPS(GR__EW_PTR)
#undef GR__EW_PTR
    NULL
};

/* ==== src/base.c: generated region; edit src/base.c, then run make gradient.h ==== */
/* src/base.c: arena, growable arrays, error recording, dtypes and arrays. */

/* a 64-bit mix (splitmix64's finaliser), for hash tables */
static uint64_t gr__hash64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* ---- arena: one per graph; everything built in the graph lives here ------------------------- */

/* Blocks are 8-byte aligned (every struct here needs no more; vector code loads through memcpy):
   graphs of millions of nodes touch less memory than with 16. Chunks start at GR_ARENA_MIN_CHUNK
   bytes and each new one is as big as all before it, up to GR_ARENA_MAX_CHUNK (both macros, for
   small targets): a six-node graph takes one small chunk, a graph of millions grows by megabytes. */
#ifndef GR_ARENA_MIN_CHUNK
#define GR_ARENA_MIN_CHUNK 4096
#endif
#ifndef GR_ARENA_MAX_CHUNK
#define GR_ARENA_MAX_CHUNK ((size_t)1 << 20)
#endif
static void *gr__arena_alloc(gr__arena *a, size_t n) {
    gr__chunk *c = a->head;
    size_t need = (n + 7u) & ~(size_t)7u;
    if (!c || c->size - c->used < need) {
        size_t size = a->total < (size_t)GR_ARENA_MIN_CHUNK ? (size_t)GR_ARENA_MIN_CHUNK
                    : a->total > (size_t)GR_ARENA_MAX_CHUNK ? (size_t)GR_ARENA_MAX_CHUNK : a->total;
        if (size < need) size = need;
        c = (gr__chunk *)GR_MALLOC(sizeof(gr__chunk) + 16 + size);
        if (!c) return NULL;
        c->next = a->head; c->size = size; c->used = 0;
        a->head = c; a->total += size;
    }
    {
        unsigned char *base = (unsigned char *)(c + 1);
        size_t pad = (size_t)(16 - ((uintptr_t)base & 15u)) & 15u;
        void *p = base + pad + c->used;
        c->used += need;
        return p;
    }
}

static void gr__arena_free(gr__arena *a) {
    gr__chunk *c = a->head;
    while (c) { gr__chunk *next = c->next; GR_FREE(c); c = next; }
    a->head = NULL; a->total = 0;
}

/* a copy of s in the arena, or NULL */
static char *gr__arena_strdup(gr__arena *a, const char *s) {
    size_t n = strlen(s) + 1;
    char *d = (char *)gr__arena_alloc(a, n);
    if (d) memcpy(d, s, n);
    return d;
}

/* room for n items of `elem` bytes at *items (*cap of them now); 0 on failure. Called directly
   where a pass knows how many it will add: growing by doubling copies a big array several times
   over, and touches the fresh memory of each copy */
static int gr__reserve(void **items, uint32_t *cap, uint32_t n, size_t elem) {
    void *p;
    if (n <= *cap) return 1;
    p = GR_REALLOC(*items, (size_t)n * elem);
    if (!p) return 0;
    *items = p; *cap = n;
    return 1;
}
/* gr__reserve for an array indexed by id: new entries get every byte = `byte` (0, or 0xFF for -1) */
static int gr__reserve_fill(void **items, uint32_t *cap, uint32_t n, size_t elem, int byte) {
    uint32_t old = *cap;
    if (!gr__reserve(items, cap, n, elem)) return 0;
    if (*cap > old) memset((unsigned char *)*items + (size_t)old * elem, byte, (size_t)(*cap - old) * elem);
    return 1;
}

/* the capacity, doubled as often as needed, at which index n fits */
static uint32_t gr__doubled(uint32_t cap, uint32_t n) {
    uint32_t nc = cap ? cap * 2 : 64;
    while (nc <= n) nc *= 2;
    return nc;
}
/* grows *items so that index n fits; 0 on failure */
static int gr__grow(void **items, uint32_t *cap, uint32_t n, size_t elem) {
    return n < *cap || gr__reserve(items, cap, gr__doubled(*cap, n), elem);
}
static int gr__grow_fill(void **items, uint32_t *cap, uint32_t n, size_t elem, int byte) {
    return n < *cap || gr__reserve_fill(items, cap, gr__doubled(*cap, n), elem, byte);
}

static void *gr__calloc(size_t n, size_t elem) {
    size_t bytes;
    void *p;
    if (n == 0) n = 1;
    if (elem && n > SIZE_MAX / elem) return NULL;
    bytes = n * elem;
    p = GR_MALLOC(bytes);
    if (p) memset(p, 0, bytes);
    return p;
}

/* ---- status strings and errors ------------------------------------------------------------- */

GR_API const char *gr_status_string(gr_status s) {
    switch (s) {
#define GR__STATUS_CASE(name, text) case name: return text;
        GR_STATUS_LIST(GR__STATUS_CASE)
#undef GR__STATUS_CASE
    default: return "unknown status";
    }
}

static void gr__verror(gr_graph *g, gr_status code, const char *fmt, va_list ap) {
    if (!g || g->status != GR_OK) return;
    g->status = code;
    vsnprintf(g->message, sizeof g->message, fmt, ap);
    GR__TRAP();
}

/* records the first error on g; returns code */
static gr_status gr__error(gr_graph *g, gr_status code, const char *fmt, ...) GR__PRINTF(3, 4);
static gr_status gr__error(gr_graph *g, gr_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gr__verror(g, code, fmt, ap);
    va_end(ap);
    return code;
}

static gr_var *gr__fail(gr_graph *g, gr_status code, const char *fmt, ...) GR__PRINTF(3, 4);
static gr_var *gr__fail(gr_graph *g, gr_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gr__verror(g, code, fmt, ap);
    va_end(ap);
    return NULL;
}

static void gr__log(gr_graph *g, const char *fmt, ...) GR__PRINTF(2, 3) GR__UNUSED;
static void gr__log(gr_graph *g, const char *fmt, ...) {
    char buf[GR__MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (g && g->log) g->log(g->log_user, buf);
#ifndef GR_NO_STDIO
    else fprintf(stderr, "gradient.h: warning: %s\n", buf);
#endif
}

/* a stage's progress through g's callback: done units of its total, reported at 0, at every
   GR__PROGRESS_EVERY units and at total (a caller calls it as each unit ends, and once before) */
#define GR__PROGRESS_EVERY 65536u
static void gr__progress_to(gr_progress_fn fn, void *user, const char *stage, size_t done, size_t total) {
    if (fn && (done == 0 || done == total || done % GR__PROGRESS_EVERY == 0)) fn(user, stage, done, total);
}
static void gr__progress(const gr_graph *g, const char *stage, size_t done, size_t total) {
    gr__progress_to(g->progress, g->progress_user, stage, done, total);
}

/* ---- dtypes ---------------------------------------------------------------------------------- */

static size_t gr__dsize(int dt) { return dt == GR_F32 ? 4u : dt == GR_BOOL ? 1u : 8u; }
static int gr__is_float(int dt) { return dt == GR_F64 || dt == GR_F32; }
static int gr__dtype_ok(int dt) { return dt >= GR_F64 && dt <= GR_BOOL; }

GR_API const char *gr_dtype_name(gr_dtype t) {
    switch (t) {
    case GR_F64: return "float64";
    case GR_F32: return "float32";
    case GR_I64: return "int64";
    case GR_BOOL: return "bool";
    }
    return "?";
}

static double gr__load(int dt, const void *p, int64_t i) {
    switch (dt) {
    case GR_F64: return ((const double *)p)[i];
    case GR_F32: return (double)((const float *)p)[i];
    case GR_I64: return (double)((const int64_t *)p)[i];
    default:     return (double)((const uint8_t *)p)[i];
    }
}

static int64_t gr__to_i64(double v) {   /* truncates toward zero; NaN and out-of-range saturate */
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

static void gr__store(int dt, void *p, int64_t i, double v) {
    switch (dt) {
    case GR_F64: ((double *)p)[i] = v; break;
    case GR_F32: ((float *)p)[i] = (float)v; break;
    case GR_I64: ((int64_t *)p)[i] = gr__to_i64(v); break;
    default:     ((uint8_t *)p)[i] = (uint8_t)(v != 0); break;
    }
}

/* n elements from src (of dtype st) to dst (of dtype dt); exact for int64 to int64 */
static void gr__convert(int dt, void *dst, int st, const void *src, int64_t n) {
    int64_t i;
    if (dt == st) { memcpy(dst, src, (size_t)n * gr__dsize(dt)); return; }
    if (dt == GR_I64 && st == GR_BOOL) {
        for (i = 0; i < n; i++) ((int64_t *)dst)[i] = ((const uint8_t *)src)[i];
    } else if (dt == GR_BOOL && st == GR_I64) {
        for (i = 0; i < n; i++) ((uint8_t *)dst)[i] = (uint8_t)(((const int64_t *)src)[i] != 0);
    } else if (dt == GR_F32 && st == GR_F64) {
        for (i = 0; i < n; i++) ((float *)dst)[i] = (float)((const double *)src)[i];
    } else if (dt == GR_F64 && st == GR_F32) {
        for (i = 0; i < n; i++) ((double *)dst)[i] = (double)((const float *)src)[i];
    } else {
        for (i = 0; i < n; i++) gr__store(dt, dst, i, gr__load(st, src, i));
    }
}

/* "(3,4)" or "()" ; -1 shows as "?" */
static const char *gr__shape_str(char *buf, size_t size, int ndim, const int64_t *shape) {
    size_t used = 0;
    int i;
    used += (size_t)snprintf(buf, size, "(");
    for (i = 0; i < ndim && used < size; i++) {
        if (shape[i] < 0) used += (size_t)snprintf(buf + used, size - used, "%s?", i ? "," : "");
        else used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? "," : "", (long long)shape[i]);
    }
    if (used < size) snprintf(buf + used, size - used, ")");
    return buf;
}

/* element count of a shape; -1 on a negative entry or overflow. A shape with a 0 has no
   elements whatever its other entries (the answer does not depend on the order of the axes). */
static int64_t gr__shape_size(int ndim, const int64_t *shape) {
    int64_t n = 1;
    int i, empty = 0;
    for (i = 0; i < ndim; i++) {
        if (shape[i] < 0) return -1;
        if (shape[i] == 0) empty = 1;
    }
    if (empty) return 0;
    for (i = 0; i < ndim; i++) {
        if (n > INT64_MAX / shape[i]) return -1;
        n *= shape[i];
    }
    return n;
}

/* a static shape (-1: unknown) whose known entries alone already overflow the element count */
static int gr__static_overflows(int ndim, const int64_t *shape) {
    int64_t n = 1;
    int i;
    for (i = 0; i < ndim; i++) if (shape[i] == 0) return 0;
    for (i = 0; i < ndim; i++) {
        if (shape[i] < 0) continue;
        if (n > INT64_MAX / shape[i]) return 1;
        n *= shape[i];
    }
    return 0;
}

/* ---- arrays ---------------------------------------------------------------------------------- */

/* header and data in one block; data 64-byte aligned */
#define GR__ARRAY_HEAD ((sizeof(gr_array) + 63u) & ~(size_t)63u)

static gr_array *gr__array_alloc(int dtype, int ndim, const int64_t *shape) {
    int64_t size;
    size_t bytes;
    unsigned char *block;
    gr_array *a;
    int i;
    if (!gr__dtype_ok(dtype) || ndim < 0 || ndim > GR_MAX_NDIM || (ndim > 0 && !shape)) return NULL;
    size = gr__shape_size(ndim, shape);
    if (size < 0 || (uint64_t)size > (uint64_t)(SIZE_MAX - GR__ARRAY_HEAD - 64) / gr__dsize(dtype)) return NULL;
    bytes = GR__ARRAY_HEAD + 64 + (size_t)size * gr__dsize(dtype);
    block = (unsigned char *)GR_MALLOC(bytes);
    if (!block) return NULL;
    a = (gr_array *)block;
    memset(a, 0, sizeof *a);
    a->dtype = (gr_dtype)dtype;
    a->ndim = ndim;
    for (i = 0; i < ndim; i++) a->shape[i] = shape[i];
    a->size = size;
    {
        unsigned char *d = block + GR__ARRAY_HEAD;
        d += (size_t)(64 - ((uintptr_t)d & 63u)) & 63u;
        a->data = d;
    }
    return a;
}

GR_API gr_array *gr_array_new(gr_dtype dtype, int ndim, const int64_t *shape) {
    gr_array *a = gr__array_alloc((int)dtype, ndim, shape);
    if (a) memset(a->data, 0, (size_t)a->size * gr__dsize(dtype));
    return a;
}

GR_API gr_array *gr_array_from(gr_dtype dtype, int ndim, const int64_t *shape, const void *data) {
    gr_array *a = gr__array_alloc((int)dtype, ndim, shape);
    if (a && a->size) {
        if (!data) { GR_FREE(a); return NULL; }
        memcpy(a->data, data, (size_t)a->size * gr__dsize(dtype));
    }
    return a;
}

GR_API gr_array *gr_array_scalar(gr_dtype dtype, double value) {
    gr_array *a = gr__array_alloc((int)dtype, 0, NULL);
    if (a) gr__store(dtype, a->data, 0, value);
    return a;
}

GR_API gr_array *gr_array_copy(const gr_array *a) {
    if (!a) return NULL;
    return gr_array_from(a->dtype, a->ndim, a->shape, a->data);
}

GR_API double gr_array_get(const gr_array *a, int64_t i) {
    if (!a || !a->data || i < 0 || i >= a->size || !gr__dtype_ok(a->dtype)) return NAN;
    return gr__load(a->dtype, a->data, i);
}

GR_API void gr_array_set(gr_array *a, int64_t i, double value) {
    if (!a || !a->data || i < 0 || i >= a->size || !gr__dtype_ok(a->dtype)) return;
    gr__store(a->dtype, a->data, i, value);
}

GR_API void gr_array_free(gr_array *a) {
    if (a) GR_FREE(a);
}

/* an array struct is well formed: known dtype, ndim in range, size the product of the shape */
static int gr__array_valid(const gr_array *a) {
    int64_t size;
    if (!a || !gr__dtype_ok(a->dtype) || a->ndim < 0 || a->ndim > GR_MAX_NDIM) return 0;
    size = gr__shape_size(a->ndim, a->shape);
    if (size < 0 || size != a->size) return 0;
    return size == 0 || a->data != NULL;
}

/* ==== src/graph.c: generated region; edit src/graph.c, then run make gradient.h ==== */
/* src/graph.c: graphs, variables, leaves, nodes and gr_apply. */

GR_API gr_graph *gr_graph_new(void) {
    gr_graph *g = (gr_graph *)gr__calloc(1, sizeof(gr_graph));
    return g;
}

static void gr__storage_release(gr__storage *s) {
    if (s && --s->refs == 0) {
        gr_array_free(s->value);
        GR_FREE(s);
    }
}

GR_API void gr_graph_free(gr_graph *g) {
    uint32_t i;
    if (!g) return;
    for (i = 0; i < g->n_owned; i++) GR_FREE(g->owned[i]);
    for (i = 0; i < g->n_stores; i++) gr__storage_release(g->stores[i]);
    for (i = 0; i < g->n_held; i++)
        if (--g->held[i]->refs == 0) g->held[i]->destroy(g->held[i]);
    GR_FREE(g->held);
    GR_FREE(g->consts);
    GR_FREE(g->names);
    GR_FREE(g->owned);
    GR_FREE(g->stores);
    GR_FREE(g->vars);
    GR_FREE(g->nodes);
    gr__arena_free(&g->arena);
    GR_FREE(g);
}

GR_API gr_status gr_graph_status(const gr_graph *g) { return g ? g->status : GR_ERR_VALUE; }
GR_API const char *gr_graph_message(const gr_graph *g) { return g ? g->message : ""; }
GR_API void gr_graph_clear_error(gr_graph *g) {
    if (!g) return;
    g->status = GR_OK;
    g->message[0] = 0;
}
GR_API void gr_graph_set_log(gr_graph *g, gr_log_fn fn, void *user) {
    if (!g) return;
    g->log = fn;
    g->log_user = user;
}
GR_API void gr_graph_set_progress(gr_graph *g, gr_progress_fn fn, void *user) {
    if (!g) return;
    g->progress = fn;
    g->progress_user = user;
}

static void *gr__alloc(gr_graph *g, size_t n) {
    void *p = gr__arena_alloc(&g->arena, n);
    if (!p) gr__error(g, GR_ERR_NOMEM, "out of memory (graph arena, %lu bytes)", (unsigned long)n);
    return p;
}

/* ---- names: most variables have none, so they live in a table of the graph, by variable id ---- */

struct gr__name { uint32_t id; char *name; };   /* name NULL: the variable was named, then unnamed */

static struct gr__name *gr__name_slot(const gr_graph *g, uint32_t id) {
    uint32_t mask = g->cap_names - 1u, h = (id * 2654435761u) & mask;
    while (g->names[h].name || g->names[h].id) {     /* (ids start at 1 in a slot: id + 1 is stored) */
        if (g->names[h].id == id + 1u) return &g->names[h];
        h = (h + 1u) & mask;
    }
    return &g->names[h];
}

static const char *gr__vname(const gr_var *v) {
    if (!(v->flags & GR__VF_NAMED) || !v->graph->cap_names) return NULL;
    return gr__name_slot(v->graph, v->id)->name;
}

/* v's name becomes a copy of name (NULL: unnamed) in g's arena; 0 (and an error recorded) when out
   of memory, leaving v unnamed */
static int gr__set_name(gr_graph *g, gr_var *v, const char *name) {
    struct gr__name *e;
    char *copy = NULL;
    if (!name && !(v->flags & GR__VF_NAMED)) return 1;
    if (2u * (g->n_names + 1u) > g->cap_names) {      /* at most half full */
        uint32_t cap = g->cap_names ? 2u * g->cap_names : 16u, i, old_cap = g->cap_names;
        struct gr__name *old = g->names;
        if (cap < g->cap_names || !(g->names = (struct gr__name *)gr__calloc(cap, sizeof(struct gr__name)))) {
            g->names = old;
            v->flags = (uint8_t)(v->flags & ~GR__VF_NAMED);
            gr__error(g, GR_ERR_NOMEM, "out of memory (variable names)");
            return 0;
        }
        g->cap_names = cap;
        for (i = 0; i < old_cap; i++) if (old[i].id) *gr__name_slot(g, old[i].id - 1u) = old[i];
        GR_FREE(old);
    }
    if (name) {
        size_t n = strlen(name) + 1;
        copy = (char *)gr__alloc(g, n);
        if (!copy) { v->flags = (uint8_t)(v->flags & ~GR__VF_NAMED); return 0; }
        memcpy(copy, name, n);
    }
    e = gr__name_slot(g, v->id);
    if (!e->id) { e->id = v->id + 1u; g->n_names++; }
    e->name = copy;
    v->flags = (uint8_t)(copy ? v->flags | GR__VF_NAMED : v->flags & ~GR__VF_NAMED);
    return 1;
}

/* keeps a GR_MALLOC'd block until the graph is freed */
static int gr__own(gr_graph *g, void *block) {
    if (!gr__grow((void **)&g->owned, &g->cap_owned, g->n_owned, sizeof(void *))) {
        GR_FREE(block);
        gr__error(g, GR_ERR_NOMEM, "out of memory");
        return 0;
    }
    g->owned[g->n_owned++] = block;
    return 1;
}

static gr_var *gr__new_var(gr_graph *g, int dtype, int ndim, const int64_t *shape, int kind) {
    gr_var *v;
    int i;
    if (g->n_vars >= UINT32_MAX - 1u - g->var_base) return gr__fail(g, GR_ERR_NOMEM, "too many variables (%lu)", (unsigned long)g->n_vars);
    if (!gr__grow((void **)&g->vars, &g->cap_vars, g->n_vars, sizeof(gr_var *)))
        return gr__fail(g, GR_ERR_NOMEM, "out of memory");
    v = (gr_var *)gr__alloc(g, sizeof(gr_var) + (size_t)ndim * sizeof(int64_t));
    if (!v) return NULL;
    memset(v, 0, sizeof *v);
    v->graph = g;
    for (i = 0; i < ndim; i++) gr__vshape(v)[i] = shape ? shape[i] : -1;
    v->dtype = (uint8_t)dtype;
    v->ndim = (uint8_t)ndim;
    v->kind = (uint8_t)kind;
    v->id = g->var_base + g->n_vars;
    g->vars[g->n_vars++] = v;
    return v;
}

/* ---- op names, as printers and messages show them (ops/README.md, "Printed names") -----------
   CamelCase: a structural row and a user's op show their own name (DimShuffle, Sum), an elementwise
   row the CamelCase of its row name (sin: Sin, logical_and: LogicalAnd, arctan2: Arctan2), made
   here from the row so that the table keeps one name a row. gr_pp keeps the infix and function
   spellings (x + y, sin(x)); a message about the user's call names its constructor (gr_sin). */

typedef struct gr__oname { char s[64]; } gr__oname;

/* appends s in CamelCase to d at *n: the first letter and each one after '_' in upper case, the
   '_' dropped (truncated to the size of gr__oname) */
static void gr__camel(char *d, size_t *n, const char *s) {
    int up = 1;
    for (; *s && *n + 1 < sizeof(gr__oname); s++) {
        if (*s == '_') { up = 1; continue; }
        d[(*n)++] = up && *s >= 'a' && *s <= 'z' ? (char)(*s - 'a' + 'A') : *s;
        up = 0;
    }
    d[*n] = 0;
}

static gr__oname gr__on(const gr_op_def *op) {
    gr__oname o;
    size_t n = 0;
    o.s[0] = 0;
    if (!op || !op->name) gr__camel(o.s, &n, "?");
    else if (gr__flags_of(op) & GR__OPF_ELEMWISE) gr__camel(o.s, &n, op->name);
    else snprintf(o.s, sizeof o.s, "%s", op->name);
    return o;
}

/* ---- describing variables in messages ------------------------------------------------------ */

typedef struct gr__desc { char s[112]; } gr__desc;

static gr__desc gr__d(const gr_var *v) {
    gr__desc d;
    if (!v) snprintf(d.s, sizeof d.s, "NULL");
    else if (gr__vname(v)) snprintf(d.s, sizeof d.s, "'%.80s'", gr__vname(v));
    else if (gr__owner(v)) snprintf(d.s, sizeof d.s, "#%lu (%.40s)", (unsigned long)v->id, gr__on(gr__owner(v)->op).s);
    else if (v->kind == GR__VK_CONST && v->ndim == 0)
        snprintf(d.s, sizeof d.s, "#%lu (constant %g)", (unsigned long)v->id, gr_array_get((const gr_array *)gr__ext(v), 0));
    else {
        static const char *const kinds[] = { "output", "input", "constant", "shared", "disconnected", "null" };
        snprintf(d.s, sizeof d.s, "#%lu (%s)", (unsigned long)v->id, kinds[v->kind]);
    }
    return d;
}

typedef struct gr__shp { char s[200]; } gr__shp;
static gr__shp gr__vs(const gr_var *v) {
    gr__shp s;
    gr__shape_str(s.s, sizeof s.s, v->ndim, gr__vshape(v));
    return s;
}
static gr__shp gr__as(const gr_array *a) {
    gr__shp s;
    gr__shape_str(s.s, sizeof s.s, a->ndim, a->shape);
    return s;
}

/* ---- leaves ---------------------------------------------------------------------------------- */

GR_API gr_var *gr_tensor(gr_graph *g, gr_dtype dtype, int ndim, const int64_t *shape, const char *name) {
    gr_var *v;
    int i;
    if (!g) return NULL;
    if (!gr__dtype_ok((int)dtype)) return gr__fail(g, GR_ERR_VALUE, "gr_tensor: unknown dtype %d", (int)dtype);
    if (ndim < 0 || ndim > GR_MAX_NDIM)
        return gr__fail(g, GR_ERR_VALUE, "gr_tensor: ndim %d out of range [0, %d] for %s%s%s", ndim, GR_MAX_NDIM,
                        name ? "'" : "", name ? name : "an unnamed input", name ? "'" : "");
    for (i = 0; shape && i < ndim; i++)
        if (shape[i] < -1)
            return gr__fail(g, GR_ERR_VALUE, "gr_tensor: negative size %lld at axis %d of %s%s%s", (long long)shape[i], i,
                            name ? "'" : "", name ? name : "an unnamed input", name ? "'" : "");
    if (shape && gr__static_overflows(ndim, shape)) {
        char buf[200];
        return gr__fail(g, GR_ERR_VALUE, "gr_tensor: the element count of the shape %s of %s%s%s overflows",
                        gr__shape_str(buf, sizeof buf, ndim, shape), name ? "'" : "", name ? name : "an unnamed input", name ? "'" : "");
    }
    v = gr__new_var(g, (int)dtype, ndim, shape, GR__VK_INPUT);
    if (v && !gr__set_name(g, v, name)) return NULL;
    return v;
}

GR_API gr_var *gr_scalar(gr_graph *g, gr_dtype dtype, const char *name) { return gr_tensor(g, dtype, 0, NULL, name); }
GR_API gr_var *gr_vector(gr_graph *g, gr_dtype dtype, const char *name) { return gr_tensor(g, dtype, 1, NULL, name); }
GR_API gr_var *gr_matrix(gr_graph *g, gr_dtype dtype, const char *name) { return gr_tensor(g, dtype, 2, NULL, name); }

/* a constant holding a copy of `value` (of any well-formed array) */
static gr_var *gr__constant(gr_graph *g, const gr_array *value, int flags) {
    gr_array *copy;
    gr_var *v;
    size_t bytes = (size_t)value->size * gr__dsize(value->dtype);
    if (bytes <= 64) {                       /* small constants live in the arena, beside the variable */
        copy = (gr_array *)gr__alloc(g, sizeof(gr_array) + 64);
        if (!copy) return NULL;
        *copy = *value;
        copy->data = copy + 1;
        if (bytes) memcpy(copy->data, value->data, bytes);
    } else {
        copy = gr_array_copy(value);
        if (!copy) return gr__fail(g, GR_ERR_NOMEM, "out of memory (constant of %lld elements)", (long long)value->size);
        if (!gr__own(g, copy)) return NULL;
    }
    v = gr__new_var(g, value->dtype, value->ndim, value->shape, GR__VK_CONST);
    if (!v) return NULL;
    v->u.ext = copy;
    v->flags = (uint8_t)flags;
    return v;
}

GR_API gr_var *gr_constant(gr_graph *g, const gr_array *value) {
    if (!g) return NULL;
    if (!value) return gr__fail(g, GR_ERR_VALUE, "gr_constant: value is NULL");
    if (!gr__array_valid(value))
        return gr__fail(g, GR_ERR_VALUE, "gr_constant: the array is malformed (dtype, ndim, shape, size or data)");
    return gr__constant(g, value, 0);
}

/* A 0-d constant of a given dtype. The typed ones (flags 0) are made once per graph for each dtype
   and value: derivative rules and weak constants ask for the same few values again and again. */
static gr_var *gr__scalar_const(gr_graph *g, int dtype, double value, int flags) {
    gr_array a;
    double d = value;
    float f = (float)value;
    int64_t i = gr__to_i64(value);
    uint8_t b = (uint8_t)(value != 0);
    uint64_t key = 0;
    uint32_t h = 0, mask;
    gr_var *v;
    memset(&a, 0, sizeof a);
    a.dtype = (gr_dtype)dtype;
    a.size = 1;
    a.data = dtype == GR_F64 ? (void *)&d : dtype == GR_F32 ? (void *)&f : dtype == GR_I64 ? (void *)&i : (void *)&b;
    if (flags) return gr__constant(g, &a, flags);
    memcpy(&key, a.data, gr__dsize(dtype));
    if (g->n_consts * 2 >= g->cap_consts) {            /* grow the open-addressing table */
        uint32_t nc = g->cap_consts ? g->cap_consts * 2 : 64, k;
        gr_var **t = (gr_var **)gr__calloc(nc, sizeof(gr_var *));
        if (!t) return gr__fail(g, GR_ERR_NOMEM, "out of memory");
        for (k = 0; k < g->cap_consts; k++) {
            gr_var *c = g->consts[k];
            uint64_t ck = 0;
            uint32_t j;
            if (!c) continue;
            memcpy(&ck, ((const gr_array *)gr__ext(c))->data, gr__dsize(c->dtype));
            j = (uint32_t)(gr__hash64(ck ^ ((uint64_t)c->dtype << 61))) & (nc - 1);
            while (t[j]) j = (j + 1) & (nc - 1);
            t[j] = c;
        }
        GR_FREE(g->consts);
        g->consts = t;
        g->cap_consts = nc;
    }
    mask = g->cap_consts - 1;
    h = (uint32_t)gr__hash64(key ^ ((uint64_t)dtype << 61)) & mask;
    for (; (v = g->consts[h]) != NULL; h = (h + 1) & mask) {
        uint64_t ck = 0;
        memcpy(&ck, ((const gr_array *)gr__ext(v))->data, gr__dsize(v->dtype));
        if (v->dtype == dtype && ck == key) return v;
    }
    v = gr__constant(g, &a, 0);
    if (!v) return NULL;
    g->consts[h] = v;
    g->n_consts++;
    return v;
}

GR_API gr_var *gr_const(gr_graph *g, double value) {
    if (!g) return NULL;
    return gr__scalar_const(g, GR_F64, value, GR__VF_WEAK);
}

GR_API gr_var *gr_shared(gr_graph *g, const gr_array *value, const char *name) {
    gr__storage *s;
    gr_var *v;
    if (!g) return NULL;
    if (!value) return gr__fail(g, GR_ERR_VALUE, "gr_shared: value is NULL for %s", name ? name : "an unnamed shared variable");
    if (!gr__array_valid(value))
        return gr__fail(g, GR_ERR_VALUE, "gr_shared: the array given for %s is malformed", name ? name : "an unnamed shared variable");
    if (!gr__grow((void **)&g->stores, &g->cap_stores, g->n_stores, sizeof(void *)))
        return gr__fail(g, GR_ERR_NOMEM, "out of memory");
    s = (gr__storage *)GR_MALLOC(sizeof *s);
    if (!s) return gr__fail(g, GR_ERR_NOMEM, "out of memory");
    s->refs = 1;
    s->value = gr_array_copy(value);
    if (!s->value) { GR_FREE(s); return gr__fail(g, GR_ERR_NOMEM, "out of memory (shared value)"); }
    g->stores[g->n_stores++] = s;
    v = gr__new_var(g, value->dtype, value->ndim, value->shape, GR__VK_SHARED);
    if (!v) return NULL;
    v->u.ext = s;
    if (!gr__set_name(g, v, name)) return NULL;
    return v;
}

GR_API const gr_array *gr_shared_get(const gr_var *v) {
    if (!v || v->kind != GR__VK_SHARED) return NULL;
    return ((const gr__storage *)gr__ext(v))->value;
}

/* the value of a shared storage becomes a copy of `value` (same dtype and ndim) */
static gr_status gr__storage_assign(gr__storage *s, const gr_array *value) {
    gr_array *cur = s->value;
    if (cur->size == value->size) {     /* same element count: reuse the block */
        int i;
        for (i = 0; i < value->ndim; i++) cur->shape[i] = value->shape[i];
        if (value->size) memmove(cur->data, value->data, (size_t)value->size * gr__dsize(value->dtype));
        return GR_OK;
    } else {
        gr_array *copy = gr_array_copy(value);
        if (!copy) return GR_ERR_NOMEM;
        gr_array_free(cur);
        s->value = copy;
        return GR_OK;
    }
}

GR_API gr_status gr_shared_set(gr_var *v, const gr_array *value) {
    gr__storage *s;
    int i;
    if (!v) return GR_ERR_VALUE;
    if (v->kind != GR__VK_SHARED)
        return gr__error(v->graph, GR_ERR_VALUE, "gr_shared_set: %s is not a shared variable", gr__d(v).s);
    if (!value) return gr__error(v->graph, GR_ERR_VALUE, "gr_shared_set: value is NULL for %s", gr__d(v).s);
    if (!gr__array_valid(value))
        return gr__error(v->graph, GR_ERR_VALUE, "gr_shared_set: the array given for %s is malformed", gr__d(v).s);
    if ((int)value->dtype != v->dtype || value->ndim != v->ndim)
        return gr__error(v->graph, GR_ERR_TYPE, "gr_shared_set: %s is %s with %d dimensions; the value is %s with %d",
                         gr__d(v).s, gr_dtype_name((gr_dtype)v->dtype), v->ndim, gr_dtype_name(value->dtype), value->ndim);
    s = (gr__storage *)gr__ext(v);
    if (gr__storage_assign(s, value) != GR_OK)
        return gr__error(v->graph, GR_ERR_NOMEM, "gr_shared_set: out of memory for %s", gr__d(v).s);
    for (i = 0; i < v->ndim; i++) gr__vshape(v)[i] = value->shape[i];
    return GR_OK;
}

/* ---- variable accessors ---------------------------------------------------------------------- */

GR_API const char *gr_var_name(const gr_var *v) { return v ? gr__vname(v) : NULL; }
GR_API void gr_var_set_name(gr_var *v, const char *name) {
    if (!v) return;
    gr__set_name(v->graph, v, name);
}
GR_API gr_dtype gr_var_dtype(const gr_var *v) { return v ? (gr_dtype)v->dtype : GR_F64; }
GR_API int gr_var_ndim(const gr_var *v) { return v ? v->ndim : -1; }
GR_API gr_graph *gr_var_graph(const gr_var *v) { return v ? v->graph : NULL; }
GR_API gr_node *gr_var_owner(const gr_var *v) { return v ? gr__owner(v) : NULL; }
GR_API int gr_is_disconnected(const gr_var *v) { return v && v->kind == GR__VK_DISC; }
GR_API int gr_is_null(const gr_var *v) { return v && v->kind == GR__VK_NULL; }
GR_API int gr_var_type(const gr_var *v, gr_type *out) {
    int i;
    if (!v || !out) return 0;
    memset(out, 0, sizeof *out);
    out->dtype = (gr_dtype)v->dtype;
    out->ndim = v->ndim;
    for (i = 0; i < v->ndim; i++) out->shape[i] = gr__vshape(v)[i];
    return 1;
}

GR_API gr_var *gr_disconnected_like(gr_var *x) {
    gr_var *v;
    if (!x) return NULL;
    v = gr__new_var(x->graph, x->dtype, x->ndim, gr__vshape(x), GR__VK_DISC);
    return v;
}

static int gr__is_marker(const gr_var *v) { return v->kind == GR__VK_DISC || v->kind == GR__VK_NULL; }

/* A driver's NULL variable argument, what[i] (i < 0: a single argument). When g already holds an
   error, the NULL is most likely what a failed builder returned: that error is returned as it is.
   Else GR_ERR_VALUE is recorded, naming the driver and the argument: drivers record on the graph of
   their first non-NULL variable argument, and only builders stay silent on a NULL operand. */
static gr_status gr__driver_null(gr_graph *g, const char *fname, const char *what, int i) {
    if (g->status != GR_OK) return g->status;
    if (i < 0) return gr__error(g, GR_ERR_VALUE, "%s: %s is NULL", fname, what);
    return gr__error(g, GR_ERR_VALUE, "%s: %s[%d] is NULL", fname, what, i);
}

/* operands of a builder: 0 if any is NULL (silently) or unusable (error recorded on the graph of
   the first non-NULL one); else 1 and *gout is their graph */
static int gr__operands(const char *fname, int n, gr_var *const *xs, gr_graph **gout) {
    gr_graph *g = NULL;
    int i;
    for (i = 0; i < n; i++) if (xs[i]) { g = xs[i]->graph; break; }
    *gout = g;
    for (i = 0; i < n; i++) if (!xs[i]) return 0;
    for (i = 0; i < n; i++) {
        if (xs[i]->graph != g) {
            gr__error(g, GR_ERR_VALUE, "%s: operand %d (%s) belongs to another graph", fname, i, gr__d(xs[i]).s);
            return 0;
        }
        if (gr__is_marker(xs[i])) {
            gr__error(g, GR_ERR_TYPE, "%s: operand %d is a %s gradient marker, not a value", fname, i,
                      xs[i]->kind == GR__VK_DISC ? "disconnected" : "null");
            return 0;
        }
    }
    return 1;
}

/* ---- nodes ----------------------------------------------------------------------------------- */

/* GR_OK when every input is there. A NULL input is a builder inside a builder or a rule that
   failed: the node is not made, and the failure propagates as NULL with the error that builder
   recorded; with none recorded (inner builders fail on valid operands only when out of memory),
   GR_ERR_NOMEM is recorded, naming the op */
static gr_status gr__inputs_present(gr_graph *g, const char *opname, int n_in, gr_var *const *in) {
    int i;
    for (i = 0; i < n_in; i++)
        if (!in || !in[i]) {
            if (g->status != GR_OK) return g->status;
            return gr__error(g, GR_ERR_NOMEM, "%s: input %d is missing: a builder inside it failed (out of memory)", opname, i);
        }
    return GR_OK;
}

/* a node of op with n_out outputs (op->n_out, or any number for an op whose n_out is -1); no node
   is made on a NULL input (see gr__inputs_present) */
static gr_status gr__make_node_n(gr_graph *g, const gr_op_def *op, const void *params, size_t psize, int n_in,
                                 gr_var *const *in, int n_out, gr_var **outs) {
    gr_node *node;
    gr_type stack_types[4];
    gr_type *types = stack_types;
    gr_status st;
    int i, j;
    if (!g) return GR_ERR_VALUE;
    if ((st = gr__inputs_present(g, gr__on(op).s, n_in, in)) != GR_OK) return st;
    if (psize > UINT32_MAX) return gr__error(g, GR_ERR_VALUE, "%s: %lu bytes of parameters (at most 4 GB)", gr__on(op).s, (unsigned long)psize);
    node = (gr_node *)gr__alloc(g, sizeof(gr_node) + (size_t)(n_in + n_out) * sizeof(gr_var *) + psize);
    if (!node) return GR_ERR_NOMEM;
    node->op = op;
    node->graph = g;
    node->params_size = (uint32_t)psize;
    node->n_in = n_in;
    node->n_out = n_out;
    node->id = UINT32_MAX;               /* numbered when registered, after the type rule (which may build nodes) */
    for (i = 0; i < n_in; i++) gr__in(node)[i] = in[i];
    for (j = 0; j < n_out; j++) gr__out(node)[j] = NULL;
    if (psize) memcpy(gr__params(node), params, psize);
    if (n_out > 4) {
        types = (gr_type *)gr__alloc(g, sizeof(gr_type) * (size_t)n_out);
        if (!types) return GR_ERR_NOMEM;
    }
    memset(types, 0, sizeof(gr_type) * (size_t)n_out);
    if (op->infer) {
        gr_status before = g->status;
        st = op->infer(node, types);
        if (st != GR_OK) {
            if (before == GR_OK && g->status == GR_OK)
                gr__error(g, st, "%s: its type rule failed (%s)", gr__on(op).s, gr_status_string(st));
            return st;
        }
    } else {
        if (n_in < 1) return gr__error(g, GR_ERR_VALUE, "%s: an op without inputs needs a type rule (infer)", gr__on(op).s);
        for (j = 0; j < n_out; j++) gr_var_type(in[0], &types[j]);
    }
    for (j = 0; j < n_out; j++) {
        gr_var *v;
        if (!gr__dtype_ok((int)types[j].dtype) || types[j].ndim < 0 || types[j].ndim > GR_MAX_NDIM)
            return gr__error(g, GR_ERR_VALUE, "%s: its type rule gave output %d an invalid dtype or ndim", gr__on(op).s, j);
        for (i = 0; i < types[j].ndim; i++)
            if (types[j].shape[i] < -1)
                return gr__error(g, GR_ERR_VALUE, "%s: its type rule gave output %d a negative size", gr__on(op).s, j);
        if (gr__static_overflows(types[j].ndim, types[j].shape)) {
            char buf[200];
            return gr__error(g, GR_ERR_SHAPE, "%s: output %d would have the shape %s, whose element count overflows (inputs %s%s%s)",
                             gr__on(op).s, j, gr__shape_str(buf, sizeof buf, types[j].ndim, types[j].shape), n_in > 0 ? gr__d(in[0]).s : "none",
                             n_in > 1 ? " and " : "", n_in > 1 ? gr__d(in[1]).s : "");
        }
        v = gr__new_var(g, (int)types[j].dtype, types[j].ndim, types[j].shape, GR__VK_OUT);
        if (!v) return GR_ERR_NOMEM;
        v->u.owner = node;
        v->out_index = j;
        gr__out(node)[j] = v;
    }
    /* registered only now: a type rule may build nodes of its own (Batched's builds its inner node),
       which take the slots and ids free before it ran */
    if (g->n_nodes >= UINT32_MAX - 1u - g->node_base) return gr__error(g, GR_ERR_NOMEM, "too many nodes (%lu)", (unsigned long)g->n_nodes);
    if (!gr__grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes, sizeof(gr_node *)))
        return gr__error(g, GR_ERR_NOMEM, "out of memory");
    if (gr__flags_of(op) & GR__OPF_GRAPHOP) {      /* the graph keeps what the node's params point at */
        gr__graphop *o = *(gr__graphop *const *)gr__params(node);
        if (!gr__grow((void **)&g->held, &g->cap_held, g->n_held, sizeof(gr__graphop *)))
            return gr__error(g, GR_ERR_NOMEM, "out of memory");
        o->refs++;
        g->held[g->n_held++] = o;
    }
    node->id = g->node_base + g->n_nodes;
    g->nodes[g->n_nodes++] = node;
    for (j = 0; j < n_out; j++) outs[j] = gr__out(node)[j];
    return GR_OK;
}

static gr_status gr__make_node(gr_graph *g, const gr_op_def *op, const void *params, size_t psize, int n_in,
                               gr_var *const *in, gr_var **outs) {
    GR_ASSERT(op->n_out >= 0);           /* an op of any number of outputs: gr__make_node_n */
    return gr__make_node_n(g, op, params, psize, n_in, in, op->n_out, outs);
}

/* one-output node, or NULL */
static gr_var *gr__node1(gr_graph *g, const gr_op_def *op, const void *params, size_t psize, int n_in, gr_var *const *in) {
    gr_var *out = NULL;
    if (gr__make_node(g, op, params, psize, n_in, in, &out) != GR_OK) return NULL;
    return out;
}

/* op is one of the table's (or a copy of one taken from gr_node_op): its perform is a table row's;
   1 for an elementwise row, 2 for a structural one */
static int gr__builtin_op(const gr_op_def *op) {
    if (op->perform == gr__ew_perform) return 1;
#define GR__BUILTIN_PERFORM(Name, nin, nout, rules, conn, alias, flags, batch, sig, simp) if (op->perform == gr__##Name##_perform) return 2;
    GR_STRUCT_OPS(GR__BUILTIN_PERFORM)
#undef GR__BUILTIN_PERFORM
    return 0;
}

GR_API gr_status gr_apply(const gr_op_def *op, const void *params, size_t params_size, int n_in,
                          gr_var *const *inputs, gr_var **outputs) {
    gr_graph *g = NULL;
    int i;
    if (op && outputs) for (i = 0; i < op->n_out; i++) outputs[i] = NULL;
    for (i = 0; inputs && i < n_in; i++) if (inputs[i]) { g = inputs[i]->graph; break; }
    if (!op) return g ? gr__error(g, GR_ERR_VALUE, "gr_apply: op is NULL") : GR_ERR_VALUE;
    if (!outputs) return g ? gr__error(g, GR_ERR_VALUE, "gr_apply: %s: outputs is NULL", op->name ? op->name : "?") : GR_ERR_VALUE;
    if (!op->name || op->n_out < 1 || n_in < 0 || (op->n_in >= 0 && op->n_in != n_in) || (n_in > 0 && !inputs))
        return g ? gr__error(g, GR_ERR_VALUE, "gr_apply: %s: takes %d inputs and %d outputs, given %d inputs",
                             op->name ? op->name : "unnamed op", op->n_in, op->n_out, n_in) : GR_ERR_VALUE;
    if (!g) return GR_ERR_VALUE;            /* no inputs, or NULL ones: nothing to report to */
    if (params_size && !params) return gr__error(g, GR_ERR_VALUE, "gr_apply: %s: params is NULL", op->name);
    if (!gr__operands(op->name, n_in, inputs, &g)) return g->status != GR_OK ? g->status : GR_ERR_VALUE;
    if (gr__flags_of(op) & GR__OPF_GRAPHOP) return gr__graph_op_apply(g, op, n_in, inputs, outputs);   /* ops/graphop.c */
    /* the rules gr_call and the drivers call without asking: perform, and the built-in fields */
    if (!op->perform) return gr__error(g, GR_ERR_VALUE, "gr_apply: %s has no perform rule (it is required)", op->name);
    if (!op->builtin != !gr__builtin_op(op))
        return gr__error(g, GR_ERR_VALUE, "gr_apply: %s %s", op->name, op->builtin ? "sets builtin, which belongs to built-in ops "
                         "(NULL in yours)" : "has a built-in op's perform rule without its built-in fields");
    /* a structural row's rules read a parameter struct of their own, which only its builder makes */
    if (gr__builtin_op(op) == 2)
        return gr__error(g, GR_ERR_VALUE, "gr_apply: %s is a built-in op with parameters of its own; build it with its gr_ function",
                         op->name);
    return gr__make_node(g, op, params, params_size, n_in, inputs, outputs);
}

GR_API gr_var *gr_node_input(const gr_node *node, int i) {
    return node && i >= 0 && i < node->n_in ? gr__in(node)[i] : NULL;
}
GR_API gr_var *gr_node_output(const gr_node *node, int i) {
    return node && i >= 0 && i < node->n_out ? gr__out(node)[i] : NULL;
}
GR_API int gr_node_n_inputs(const gr_node *node) { return node ? node->n_in : 0; }
GR_API int gr_node_n_outputs(const gr_node *node) { return node ? node->n_out : 0; }
GR_API const void *gr_node_params(const gr_node *node) { return node ? gr__params(node) : NULL; }
GR_API const gr_op_def *gr_node_op(const gr_node *node) { return node ? node->op : NULL; }

GR_API gr_status gr_node_error(const gr_node *node, gr_status code, const char *fmt, ...) {
    char buf[GR__MSG];
    va_list ap;
    if (!node) return code;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    gr__error(node->graph, code, "%s: %s", gr__on(node->op).s, buf);
    return code;
}

/* the first input's static type (the default type rule, and the like0 rule of the table) */
static gr_status gr__like0_infer(const gr_node *node, gr_type *out) {
    gr_var_type(gr__in(node)[0], out);
    return GR_OK;
}
static gr_status gr__like0_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i, j;
    for (j = 0; j < node->n_out; j++)        /* every output (users' multi-output ops too) */
        for (i = 0; i < in[0]->ndim && i < out[j]->ndim; i++) out[j]->shape[i] = in[0]->shape[i];
    return GR_OK;
}
static int64_t gr__none_alias(const gr_node *node, const gr_array *const *in, const gr_array *out) {
    (void)node; (void)in; (void)out;
    return -1;
}
static int64_t gr__always_alias(const gr_node *node, const gr_array *const *in, const gr_array *out) {
    (void)node; (void)in; (void)out;
    return 0;
}
static int64_t gr__same_size_alias(const gr_node *node, const gr_array *const *in, const gr_array *out) {
    (void)node;
    return in[0]->size == out->size && in[0]->dtype == out->dtype ? 0 : -1;
}

/* ---- axes ------------------------------------------------------------------------------------ */

/* normalises a possibly negative axis of an ndim-d variable; -1 if out of range */
static int gr__axis(int axis, int ndim) {
    if (axis < 0) axis += ndim;
    return axis >= 0 && axis < ndim ? axis : -1;
}

/* ---- walking the graph without recursion ----------------------------------------------------- */

/* The nodes needed to compute `roots`, each after the nodes it reads (post-order of an explicit-
   stack depth-first search, so a chain of a million nodes is fine). The walk does not go above a
   variable v with stop && stop[v->id]. read (may be NULL) gives the variable the walk takes in place
   of each node input (gr_function's compaction reads the Fused outputs that replace fused-away
   values). *out is GR_MALLOC'd (the caller frees it). */
typedef gr_var *(*gr__read_fn)(const void *ctx, gr_var *x);
static gr_status gr__toposort_read(gr_graph *g, int n_roots, gr_var *const *roots, const uint8_t *stop, gr__read_fn read,
                                   const void *ctx, gr_node ***out, uint32_t *n_out) {
    uint32_t nn = g->node_base + g->n_nodes;     /* every node id is below */
    uint8_t *state = (uint8_t *)gr__calloc(nn + 1u, 1);
    gr_node **stack = (gr_node **)GR_MALLOC(sizeof(gr_node *) * (nn + 1u));
    int *next = (int *)GR_MALLOC(sizeof(int) * (nn + 1u));
    gr_node **order = (gr_node **)GR_MALLOC(sizeof(gr_node *) * (nn + 1u));
    uint32_t sp = 0, n = 0;
    int r;
    *out = NULL;
    *n_out = 0;
    if (!state || !stack || !next || !order) {
        GR_FREE(state); GR_FREE(stack); GR_FREE(next); GR_FREE(order);
        return gr__error(g, GR_ERR_NOMEM, "out of memory (walking %lu nodes)", (unsigned long)g->n_nodes);
    }
    for (r = 0; r < n_roots; r++) {
        gr_var *v = roots[r];
        if (!v || !gr__owner(v) || (stop && stop[v->id]) || state[gr__owner(v)->id]) continue;
        state[gr__owner(v)->id] = 1;
        stack[sp] = gr__owner(v); next[sp] = 0; sp++;
        while (sp) {
            gr_node *node = stack[sp - 1];
            if (next[sp - 1] < node->n_in) {
                gr_var *in = gr__in(node)[next[sp - 1]++];
                if (read) in = read(ctx, in);
                if (gr__owner(in) && !(stop && stop[in->id]) && !state[gr__owner(in)->id]) {
                    state[gr__owner(in)->id] = 1;
                    stack[sp] = gr__owner(in); next[sp] = 0; sp++;
                }
            } else {
                state[node->id] = 2;
                order[n++] = node;
                sp--;
            }
        }
    }
    GR_FREE(state); GR_FREE(stack); GR_FREE(next);
    *out = order;
    *n_out = n;
    return GR_OK;
}
static gr_status gr__toposort(gr_graph *g, int n_roots, gr_var *const *roots, const uint8_t *stop, gr_node ***out,
                              uint32_t *n_out) {
    return gr__toposort_read(g, n_roots, roots, stop, NULL, NULL, out, n_out);
}

/* The nodes of g that roots need (not above a variable v with stop[v->id]), in the order they were
   made: a topological order, since a node is registered after its inputs exist (fusion never
   redirects a node's inputs: it records replacements beside them). One sweep down the node list
   marks what is needed: no stack, and memory read in order. *out is GR_MALLOC'd. */
static gr_status gr__needed_in_order(gr_graph *g, int n_roots, gr_var *const *roots, const uint8_t *stop, gr_node ***out,
                                     uint32_t *n_out) {
    uint32_t nn = g->n_nodes, k, n = 0;
    uint8_t *need = (uint8_t *)gr__calloc(nn + 1u, 1);
    gr_node **order;
    int r;
    *out = NULL;
    *n_out = 0;
    if (!need) return gr__error(g, GR_ERR_NOMEM, "out of memory (walking %lu nodes)", (unsigned long)nn);
    for (r = 0; r < n_roots; r++)
        if (roots[r] && gr__owner(roots[r]) && !(stop && stop[roots[r]->id])) need[gr__owner(roots[r])->id] = 1;
    for (k = nn; k-- > 0;) {
        gr_node *node;
        int i;
        if (!need[k]) continue;
        n++;
        node = g->nodes[k];
        for (i = 0; i < node->n_in; i++) {
            gr_var *in = gr__in(node)[i];
            if (gr__owner(in) && !(stop && stop[in->id])) need[gr__owner(in)->id] = 1;
        }
    }
    order = (gr_node **)GR_MALLOC(sizeof(gr_node *) * (n + 1u));
    if (!order) { GR_FREE(need); return gr__error(g, GR_ERR_NOMEM, "out of memory (walking %lu nodes)", (unsigned long)nn); }
    for (n = 0, k = 0; k < nn; k++) if (need[k]) order[n++] = g->nodes[k];
    GR_FREE(need);
    *out = order;
    *n_out = n;
    return GR_OK;
}

/* ==== src/rewrite.h: generated region; edit src/rewrite.h, then run make gradient.h ==== */
/* src/rewrite.h: what gr_function's rewrites (at GR_OPT_FULL) share with the op rules.

   The machinery is generic and lives in src/: shape signatures (src/signature.c), simplification
   to a fixed point (src/simplify.c), merging and constant folding (src/merge.c), the pipeline that
   rebuilds every node through them (src/rewrite.c) and fusion (src/fuse.c). What is true of one op
   is a rule in its family file, named by its table row (ops/table.h):
     gr__<sig>_sig          the `sig` column: output 0's signature from the inputs';
     gr__<simp>_simplify    the `simp` column: a cheaper equivalent of a structural node;
     gr__<rule>_rewrite     a row of GR_ELEMWISE_REWRITES: a cheaper equivalent of an elementwise
                            node (the algebra: x + 0 -> x, x * 1 -> x, -(-x) -> x, ...).
   `none` in a column names the rule that knows nothing (gr__none_sig, gr__none_simplify).

   Shapes: each variable has a signature, one code per axis: a static size, or a symbol standing
   for an unknown size. Two axes with the same symbol have the same size in every call; an
   elementwise result keeps an axis's symbol when its operands agree on it. This tells when a
   rewrite keeps a result's shape, and (src/fuse.c) which elementwise nodes iterate alike. */

typedef struct gr__rewriter gr__rewriter;
struct gr__rewriter {
    gr_graph *cg;
    gr_graph *g;                 /* the source graph: a node the rewrites leave as it is is not copied */
    const gr_node *orig;         /* the source node being rebuilt (read once by gr__rw_build) */
    int level;                   /* GR_OPT_FULL or GR_OPT_NONE */
    gr_node **cse;               /* open addressing over the nodes filed under a hot key, or without inputs (see merging) */
    uint32_t *cse_hash;          /* each entry's hash: probes compare it before touching the node */
    uint32_t n_cse, cap_cse;
    int32_t *use_head;           /* by variable id of cg: the newest node filed under it (an index below), -1 none */
    uint32_t *use_count;         /* by variable id of cg: how many nodes are filed under it */
    uint32_t cap_use_head, cap_use_count;
    gr_node **use_node;          /* a filing: the node, and the next older one under the same key */
    int32_t *use_next;
    uint32_t n_use, cap_use_node, cap_use_next;
    int32_t *sig;                /* signature codes: >= 0 a symbol, < 0 the static size -code - 1 */
    uint32_t n_sig, cap_sig;
    int64_t *sig_at;             /* by variable id of cg: where its codes start, -1 when not yet known */
    uint32_t cap_sig_at;
    int32_t next_sym;
    int64_t *trim;               /* symbols of trimmed axes: (symbol, rows trimmed) -> symbol, open addressing */
    uint32_t n_trim, cap_trim;
    uint32_t *view;              /* the function's nodes as the copy made or reused them (ids, topological) */
    uint32_t *view_depth;        /* each one's depth: the longest path up from the leaves (fusion's order) */
    uint32_t n_view, cap_view, cap_view_depth;
    uint32_t *depth;             /* by variable id, during the copy: its producer's depth */
    uint32_t cap_depth;
    uint32_t *repl;              /* after fusion, by variable id: 1 + the id of the Fused output replacing it */
    uint32_t n_repl;
};

#define GR__SIG_STATIC(n) ((int32_t)(-(n) - 1))
#define GR__SIG_ONE GR__SIG_STATIC(1)

/* ---- the rules' forms -------------------------------------------------------------------------
   sig       out[0 .. ndim of output 0) arrives holding fresh symbols; the rule sets the axes it knows
             from the inputs' signatures (gr__sig_copy). What the static type knows wins afterwards.
   simplify  node op(params; in) about to be built: its replacement, built through gr__rw1 (so that
             it is rewritten in turn), with *done set (gr__replaced); NULL with *done still 0 when no
             rewrite applies. NULL with *done set: building the replacement failed.
   rewrite   the same for a node of elementwise row `row` on operands in. */
typedef void (*gr__sig_rule)(gr__rewriter *rw, const gr_node *node, int32_t *out);
typedef gr_var *(*gr__simplify_rule)(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done);
typedef gr_var *(*gr__rewrite_rule)(gr__rewriter *rw, int row, gr_var *const *in, int *done);

/* a rule's answer: node replaced by r (NULL: building it failed) */
static gr_var *gr__replaced(int *done, gr_var *r) {
    *done = 1;
    return r;
}

/* ---- what the rules may call -------------------------------------------------------------------- */

/* signatures (src/signature.c) */
static const int32_t *gr__sig(gr__rewriter *rw, const gr_var *v);
static void gr__sig_copy(gr__rewriter *rw, const gr_var *v, int32_t *out);   /* the pool may move: copy */
static int gr__sig_same(gr__rewriter *rw, const gr_var *a, const gr_var *b); /* the same shape in every call */
static int gr__sig_into(gr__rewriter *rw, const gr_var *x, const gr_var *r); /* x broadcasts to r's shape, keeping it */
static int32_t gr__sig_trimmed(gr__rewriter *rw, int32_t sym, int64_t k);    /* sym's axis with k rows trimmed off */

/* building through the rewrites (src/rewrite.c): the node's output, or NULL on failure */
static gr_var *gr__rw1(gr__rewriter *rw, const gr_op_def *op, const void *params, size_t psize, int n_in, gr_var *const *ins);
static gr_var *gr__rw_ew(gr__rewriter *rw, int row, gr_var *a, gr_var *b);  /* elementwise row on a (and b: two operands) */

/* recognising values (src/simplify.c) */
static int gr__rw_is_scalar(const gr_var *v, double c);                      /* the 0-d constant c */
static gr_var *gr__rw_filled(const gr_var *v, gr_var **ref);                 /* a fill (a FILL row): its value and ref */
static int gr__rw_zeros(const gr_var *v, gr_var **ref);                      /* a 0-d zero (*ref NULL) or one filled to ref */
static gr_var *gr__rw_zero_fill(gr__rewriter *rw, int dt, gr_var *ref);      /* zeros of dtype dt shaped like ref */

/* the fill: x broadcast to the shape of ref (ops/shape.c) */
static gr_var *gr__rw_fill(gr__rewriter *rw, gr_var *x, gr_var *ref);

/* banded matrices (ops/batch.c): Jacobians and Hessians kept as a few diagonals */
static int gr__banded_n(const gr_var *v);                                    /* its diagonals; 0: not banded */
static gr_var *gr__banded_diag(gr__rewriter *rw, const gr_var *v);           /* v = diag(d), square: d */
static gr_var *gr__banded_map(gr__rewriter *rw, const gr_var *X, const gr_op_def *op, const void *params, size_t psize,
                              gr_var *pre, gr_var *post, int64_t dk);

/* ---- the rules named by the tables --------------------------------------------------------------- */

#define GR__RULE_PROTO(Name, nin, nout, rules, conn, alias, flags, batch, sig, simp) \
    static void gr__##sig##_sig(gr__rewriter *rw, const gr_node *node, int32_t *out); \
    static gr_var *gr__##simp##_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done);
GR_STRUCT_OPS(GR__RULE_PROTO)
#undef GR__RULE_PROTO

#define GR__REWRITE_PROTO(ewrow, rule) static gr_var *gr__##rule##_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done);
GR_ELEMWISE_REWRITES(GR__REWRITE_PROTO)
#undef GR__REWRITE_PROTO

/* the rules of each structural row, by code */
typedef struct gr__row_rules {
    gr__sig_rule sig;
    gr__simplify_rule simplify;
} gr__row_rules;

static const gr__row_rules gr__struct_rules[GR__OP_COUNT + 1] = {
#define GR__RULE_ROW(Name, nin, nout, rules, conn, alias, flags, batch, sig, simp) \
    { gr__##sig##_sig, gr__##simp##_simplify },
    GR_STRUCT_OPS(GR__RULE_ROW)
#undef GR__RULE_ROW
    { NULL, NULL }
};

/* the rules of op's row; NULL for an elementwise row or a user's op */
static const gr__row_rules *gr__rules_of(const gr_op_def *op) {
    if (!op->builtin || (gr__flags_of(op) & GR__OPF_ELEMWISE)) return NULL;
    return &gr__struct_rules[gr__code_of(op)];
}

/* the elementwise rewrite rows, in the table's order */
typedef struct gr__ew_rewrite { int row; gr__rewrite_rule rule; } gr__ew_rewrite;

static const gr__ew_rewrite gr__ew_rewrites[] = {
#define GR__REWRITE_ROW(ewrow, rule) { GR__EW_##ewrow, gr__##rule##_rewrite },
    GR_ELEMWISE_REWRITES(GR__REWRITE_ROW)
#undef GR__REWRITE_ROW
    { -1, NULL }
};

/* ==== ops/elemwise.c: generated region; edit ops/elemwise.c, then run make gradient.h ==== */
/* ops/elemwise.c: the elementwise family, expanded from GR_ELEMWISE_OPS, and Cast.

   Shapes: NumPy broadcasting, right-aligned; a static 1 is broadcastable, -1 unknown until the call.
   Every input of an elementwise node has the node's compute dtype T (the builder inserts casts and
   types weak constants), so a kernel is one loop over one element type. */

/* ---- scalar helpers used by the table's expressions ---------------------------------------- */

static double gr__sign(double a) { return a > 0 ? 1.0 : a < 0 ? -1.0 : a; }
static float gr__signf(float a) { return a > 0 ? 1.0f : a < 0 ? -1.0f : a; }
static double gr__mod(double a, double b) {
    double r = fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
static float gr__modf(float a, float b) {
    float r = fmodf(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
static int64_t gr__imod(int64_t a, int64_t b) {
    int64_t r;
    if (b == 0) return 0;
    if (b == -1) return 0;                          /* INT64_MIN % -1 overflows */
    r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
static int64_t gr__ipow(int64_t a, int64_t b) {   /* wraps on overflow like NumPy; b < 0 gives 0 unless |a| = 1 */
    uint64_t result = 1, base = (uint64_t)a;
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    while (b) {
        if (b & 1) result *= base;
        base *= base;
        b >>= 1;
    }
    return (int64_t)result;
}
static double gr__max(double a, double b) { return (a != a || a > b) ? a : b; }   /* NaN propagates */
static float gr__maxf(float a, float b) { return (a != a || a > b) ? a : b; }
static double gr__min(double a, double b) { return (a != a || a < b) ? a : b; }
static float gr__minf(float a, float b) { return (a != a || a < b) ? a : b; }
static double gr__clip(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }
static float gr__clipf(float x, float lo, float hi) { return x < lo ? lo : x > hi ? hi : x; }
static double gr__sigmoid(double x) {
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    { double e = exp(x); return e / (1.0 + e); }
}
static float gr__sigmoidf(float x) {
    if (x >= 0) return 1.0f / (1.0f + expf(-x));
    { float e = expf(x); return e / (1.0f + e); }
}
/* tanh from one expm1, without libm tanh's range branches: with t = expm1(-2|x|) in (-1, 0],
   tanh|x| = -t / (t + 2), accurate to a few ulp for every x (t + 2 is in (1, 2]) */
static double gr__tanh(double x) { double t = expm1(-2.0 * fabs(x)); return copysign(-t / (t + 2.0), x); }
static float gr__tanhf(float x) { float t = expm1f(-2.0f * fabsf(x)); return copysignf(-t / (t + 2.0f), x); }
static double gr__softplus(double x) { return (x > 0 ? x : 0.0) + log1p(exp(-fabs(x))); }
static float gr__softplusf(float x) { return (x > 0 ? x : 0.0f) + log1pf(expf(-fabsf(x))); }

/* integer results computed in uint64_t wrap around instead of overflowing (undefined in int64_t) */
#define GR__WRAP(e) ((GR_T)(e))

/* ---- kernels: one per row and dtype --------------------------------------------------------
   k(n, out, in, st): out[i] = f(in[0][i*st[0]], ...) for i < n, each st[k] 0 or 1; out may be
   in[k] itself (in place) when st[k] is 1. */
typedef void (*gr__ew_kernel)(int64_t n, void *out, const void *const *in, const int64_t *st);

#define GR__EWK_1(fn, TI, TO, expr) \
    static GR__UNUSED void fn(int64_t n, void *out_, const void *const *in, const int64_t *st) { \
        TO *o = (TO *)out_; const TI *pa = (const TI *)in[0]; int64_t i; \
        if (st[0] == 1) { for (i = 0; i < n; i++) { TI a = pa[i]; o[i] = (TO)(expr); } } \
        else { TI a = pa[0]; TO r = (TO)(expr); for (i = 0; i < n; i++) o[i] = r; } \
    }
#define GR__EWK_2(fn, TI, TO, expr) \
    static GR__UNUSED void fn(int64_t n, void *out_, const void *const *in, const int64_t *st) { \
        TO *o = (TO *)out_; const TI *pa = (const TI *)in[0], *pb = (const TI *)in[1]; int64_t i; \
        if (st[0] == 1 && st[1] == 1) { for (i = 0; i < n; i++) { TI a = pa[i], b = pb[i]; o[i] = (TO)(expr); } } \
        else if (st[0] == 0 && st[1] == 1) { TI a = pa[0]; for (i = 0; i < n; i++) { TI b = pb[i]; o[i] = (TO)(expr); } } \
        else if (st[0] == 1) { TI b = pb[0]; for (i = 0; i < n; i++) { TI a = pa[i]; o[i] = (TO)(expr); } } \
        else { TI a = pa[0], b = pb[0]; TO r = (TO)(expr); for (i = 0; i < n; i++) o[i] = r; } \
    }
#define GR__EWK_3(fn, TI, TO, expr) \
    static GR__UNUSED void fn(int64_t n, void *out_, const void *const *in, const int64_t *st) { \
        TO *o = (TO *)out_; const TI *pa = (const TI *)in[0], *pb = (const TI *)in[1], *pc = (const TI *)in[2]; \
        int64_t i, sa = st[0], sb = st[1], sc = st[2]; \
        if (sa == 1 && sb == 1 && sc == 1) { for (i = 0; i < n; i++) { TI a = pa[i], b = pb[i], c = pc[i]; o[i] = (TO)(expr); } } \
        else { for (i = 0; i < n; i++) { TI a = pa[i * sa], b = pb[i * sb], c = pc[i * sc]; o[i] = (TO)(expr); } } \
    }

/* which classes compute in which dtypes, and what they return */
#define GR__IF_FLT_FLOAT(...)  __VA_ARGS__
#define GR__IF_FLT_ARITH(...)  __VA_ARGS__
#define GR__IF_FLT_STEP(...)   __VA_ARGS__
#define GR__IF_FLT_CMP(...)    __VA_ARGS__
#define GR__IF_FLT_SELECT(...) __VA_ARGS__
#define GR__IF_FLT_LOGIC(...)
#define GR__IF_INT_FLOAT(...)
#define GR__IF_INT_ARITH(...)  __VA_ARGS__
#define GR__IF_INT_STEP(...)   __VA_ARGS__
#define GR__IF_INT_CMP(...)    __VA_ARGS__
#define GR__IF_INT_SELECT(...) __VA_ARGS__
#define GR__IF_INT_LOGIC(...)
#define GR__IF_B8_FLOAT(...)
#define GR__IF_B8_ARITH(...)
#define GR__IF_B8_STEP(...)
#define GR__IF_B8_CMP(...)
#define GR__IF_B8_SELECT(...)
#define GR__IF_B8_LOGIC(...)   __VA_ARGS__
#define GR__TO_FLOAT(T)  T
#define GR__TO_ARITH(T)  T
#define GR__TO_STEP(T)   T
#define GR__TO_SELECT(T) T
#define GR__TO_CMP(T)    uint8_t
#define GR__TO_LOGIC(T)  uint8_t

#define GR_T double
#define GR_M(f) f
#define GR__K64(name, arity, cls, fexpr, iexpr, d0, d1, d2) \
    GR__IF_FLT_##cls(GR__EWK_##arity(gr__ewk_##name##_f64, double, GR__TO_##cls(double), fexpr))
GR_ELEMWISE_OPS(GR__K64)
#undef GR__K64
#undef GR_T
#undef GR_M

#define GR_T float
#define GR_M(fn) fn##f
#define GR__K32(name, arity, cls, fexpr, iexpr, d0, d1, d2) \
    GR__IF_FLT_##cls(GR__EWK_##arity(gr__ewk_##name##_f32, float, GR__TO_##cls(float), fexpr))
GR_ELEMWISE_OPS(GR__K32)
#undef GR__K32
#undef GR_T
#undef GR_M

#define GR_T int64_t
#define GR_M(f) f
#define GR__KI64(name, arity, cls, fexpr, iexpr, d0, d1, d2) \
    GR__IF_INT_##cls(GR__EWK_##arity(gr__ewk_##name##_i64, int64_t, GR__TO_##cls(int64_t), iexpr))
GR_ELEMWISE_OPS(GR__KI64)
#undef GR__KI64
#undef GR_T

#define GR_T uint8_t
#define GR__KB8(name, arity, cls, fexpr, iexpr, d0, d1, d2) \
    GR__IF_B8_##cls(GR__EWK_##arity(gr__ewk_##name##_b8, uint8_t, uint8_t, iexpr))
GR_ELEMWISE_OPS(GR__KB8)
#undef GR__KB8
#undef GR_T
#undef GR_M

#define GR__KP_FLT_FLOAT(n, s)  gr__ewk_##n##_##s
#define GR__KP_FLT_ARITH(n, s)  gr__ewk_##n##_##s
#define GR__KP_FLT_STEP(n, s)   gr__ewk_##n##_##s
#define GR__KP_FLT_CMP(n, s)    gr__ewk_##n##_##s
#define GR__KP_FLT_SELECT(n, s) gr__ewk_##n##_##s
#define GR__KP_FLT_LOGIC(n, s)  NULL
#define GR__KP_INT_FLOAT(n)     NULL
#define GR__KP_INT_ARITH(n)     gr__ewk_##n##_i64
#define GR__KP_INT_STEP(n)      gr__ewk_##n##_i64
#define GR__KP_INT_CMP(n)       gr__ewk_##n##_i64
#define GR__KP_INT_SELECT(n)    gr__ewk_##n##_i64
#define GR__KP_INT_LOGIC(n)     NULL
#define GR__KP_B8_LOGIC(n)      gr__ewk_##n##_b8
#define GR__KP_B8_FLOAT(n)      NULL
#define GR__KP_B8_ARITH(n)      NULL
#define GR__KP_B8_STEP(n)       NULL
#define GR__KP_B8_CMP(n)        NULL
#define GR__KP_B8_SELECT(n)     NULL

/* GR_ELEMWISE_ONLY (ops/table.h, op families): only the rows named by GR_EW_<row> get kernels.
   GR__EW_KEPT(name) is 1 when GR_EW_<name> is defined empty or as 1 (it pastes GR__EW_PROBE_ to
   the definition: a probe of two tokens moves the 1 into second place), else 0 */
#ifdef GR_ELEMWISE_ONLY
#define GR__EW_PROBE_ ~, 1
#define GR__EW_PROBE_1 ~, 1
#define GR__EW_2ND(a, b, ...) b
#define GR__EW_2ND_(...) GR__EW_2ND(__VA_ARGS__)
#define GR__EW_KEPT(name) GR__EW_KEPT1(GR_EW_##name)
#define GR__EW_KEPT1(v) GR__EW_KEPT2(v)                    /* v: GR_EW_<name>'s definition */
#define GR__EW_KEPT2(v) GR__EW_2ND_(GR__EW_PROBE_##v, 0, ~)
#else
#define GR__EW_KEPT(name) 1
#endif
#define GR__EW_CAT(a, b) a##b
#define GR__EW_XCAT(a, b) GR__EW_CAT(a, b)
#define GR__EW_WHEN_1(...) __VA_ARGS__
#define GR__EW_WHEN_0(...)
#define GR__EW_WHEN(c) GR__EW_XCAT(GR__EW_WHEN_, c)       /* GR__EW_WHEN(c)(x): x when c is 1 */
#define GR__EW_PICK_1(k) k
#define GR__EW_PICK_0(k) NULL
#define GR__EW_K(name, k) GR__EW_XCAT(GR__EW_PICK_, GR__EW_KEPT(name))(k)

/* indexed by [row][dtype] (GR_F64, GR_F32, GR_I64, GR_BOOL): the kernel, NULL where never used */
static const gr__ew_kernel gr__ew_kernels[GR__EW_COUNT][4] = {
#define GR__KROW(name, arity, cls, fexpr, iexpr, d0, d1, d2) \
    { GR__EW_K(name, GR__KP_FLT_##cls(name, f64)), GR__EW_K(name, GR__KP_FLT_##cls(name, f32)), \
      GR__EW_K(name, GR__KP_INT_##cls(name)), GR__EW_K(name, GR__KP_B8_##cls(name)) },
    GR_ELEMWISE_OPS(GR__KROW)
#undef GR__KROW
};

enum gr__ew_class { GR__EC_FLOAT, GR__EC_ARITH, GR__EC_STEP, GR__EC_CMP, GR__EC_LOGIC, GR__EC_SELECT };
static const unsigned char gr__ew_class[GR__EW_COUNT] = {
#define GR__CROW(name, arity, cls, fexpr, iexpr, d0, d1, d2) GR__EC_##cls,
    GR_ELEMWISE_OPS(GR__CROW)
#undef GR__CROW
};

/* ---- broadcasting loops --------------------------------------------------------------------- */

/* A broadcast loop over an output of `nd` axes: per operand (0: the output, 1..: inputs) the byte
   stride of each axis (0 where broadcast), with axes of size 1 dropped and mergeable axes merged,
   so the innermost axis has element stride 0 or 1 for every operand. */
typedef struct gr__bloop {
    int nd, nops;
    int64_t shape[GR_MAX_NDIM];
    int64_t st[4][GR_MAX_NDIM];          /* byte strides */
    size_t esize[4];
} gr__bloop;

static void gr__bloop_init(gr__bloop *L, const gr_array *out, int n_in, const gr_array *const *in) {
    int64_t full[4][GR_MAX_NDIM];
    int nd = out->ndim, k, i, m = 0;
    L->nops = n_in + 1;
    for (k = 0; k < L->nops; k++) {
        const gr_array *a = k == 0 ? out : in[k - 1];
        int off = nd - a->ndim;
        int64_t s = (int64_t)gr__dsize(a->dtype);
        L->esize[k] = gr__dsize(a->dtype);
        for (i = nd - 1; i >= 0; i--) {
            int64_t len = i >= off ? a->shape[i - off] : 1;
            full[k][i] = len == 1 ? 0 : s;
            s *= len;
        }
    }
    for (i = 0; i < nd; i++) {
        if (out->shape[i] == 1) continue;
        if (m > 0) {                         /* merge with the previous kept axis when contiguous */
            int ok = 1;
            for (k = 0; k < L->nops; k++)
                if (L->st[k][m - 1] != full[k][i] * out->shape[i]) { ok = 0; break; }
            if (ok) {
                L->shape[m - 1] *= out->shape[i];
                for (k = 0; k < L->nops; k++) L->st[k][m - 1] = full[k][i];
                continue;
            }
        }
        L->shape[m] = out->shape[i];
        for (k = 0; k < L->nops; k++) L->st[k][m] = full[k][i];
        m++;
    }
    L->nd = m;
}

/* calls k over the whole output in runs of the innermost axis */
static void gr__ew_run(gr__ew_kernel k, const gr_array *out, int n_in, const gr_array *const *in) {
    gr__bloop L;
    int64_t idx[GR_MAX_NDIM], inner_st[3], n, count, r;
    const void *ptrs[3];
    char *base[4];
    int j, i;
    if (out->size == 0) return;
    gr__bloop_init(&L, out, n_in, in);
    base[0] = (char *)out->data;
    for (j = 0; j < n_in; j++) base[j + 1] = (char *)in[j]->data;
    if (L.nd == 0) {                         /* a single element */
        for (j = 0; j < n_in; j++) { ptrs[j] = base[j + 1]; inner_st[j] = 0; }
        k(1, base[0], ptrs, inner_st);
        return;
    }
    n = L.shape[L.nd - 1];
    for (j = 0; j < n_in; j++) inner_st[j] = L.st[j + 1][L.nd - 1] ? 1 : 0;
    count = out->size / n;
    for (i = 0; i < L.nd; i++) idx[i] = 0;
    for (r = 0; r < count; r++) {
        int64_t off[4] = { 0, 0, 0, 0 };
        for (i = 0; i < L.nd - 1; i++)
            for (j = 0; j < L.nops; j++) off[j] += idx[i] * L.st[j][i];
        for (j = 0; j < n_in; j++) ptrs[j] = base[j + 1] + off[j + 1];
        k(n, base[0] + off[0], ptrs, inner_st);
        for (i = L.nd - 2; i >= 0; i--) {    /* odometer over the outer axes */
            if (++idx[i] < L.shape[i]) break;
            idx[i] = 0;
        }
    }
}

/* ---- type and shape rules -------------------------------------------------------------------- */

/* static broadcast of n variables; returns -1 on success, else the index of the operand that
   conflicts with the ones before it */
static int gr__broadcast_static(int n, gr_var *const *xs, gr_type *out) {
    int nd = 0, i, k;
    for (k = 0; k < n; k++) if (xs[k]->ndim > nd) nd = xs[k]->ndim;
    out->ndim = nd;
    for (i = 0; i < nd; i++) out->shape[i] = 1;
    for (k = 0; k < n; k++) {
        int off = nd - xs[k]->ndim;
        for (i = 0; i < xs[k]->ndim; i++) {
            int64_t a = out->shape[off + i], b = gr__vshape(xs[k])[i];
            int64_t r;
            if (a == 1) r = b;
            else if (b == 1) r = a;
            else if (a == -1) r = b;
            else if (b == -1) r = a;
            else if (a == b) r = a;
            else return k;
            out->shape[off + i] = r;
        }
    }
    return -1;
}

/* "(3) of 'a' and (4) of 'b'": operands 0..bad, for the error of shapes that do not broadcast */
static void gr__broadcast_desc(char *buf, size_t size, int bad, gr_var *const *xs) {
    size_t used = 0;
    int k;
    buf[0] = 0;
    for (k = 0; k <= bad; k++)
        used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%s of %s", k ? " and " : "", gr__vs(xs[k]).s,
                                 gr__d(xs[k]).s);
}

static gr_status gr__ew_infer(const gr_node *node, gr_type *out) {
    int cls = gr__ew_class[gr__code_of(node->op)];
    int bad = gr__broadcast_static(node->n_in, gr__in(node), out);
    if (bad >= 0) {
        char buf[GR__MSG];
        gr__broadcast_desc(buf, sizeof buf, bad, gr__in(node));
        return gr__error(node->graph, GR_ERR_SHAPE, "gr_%s: shapes do not broadcast: %s", node->op->name, buf);
    }
    out->dtype = (cls == GR__EC_CMP || cls == GR__EC_LOGIC) ? GR_BOOL : (gr_dtype)gr__in(node)[node->n_in - 1]->dtype;
    return GR_OK;
}

/* runtime broadcast of the inputs' shapes into out */
static gr_status gr__broadcast_shapes(const gr_node *node, int n, const gr_array *const *in, gr_array *out) {
    int nd = out->ndim, i, k;
    for (i = 0; i < nd; i++) out->shape[i] = 1;
    for (k = 0; k < n; k++) {
        int off = nd - in[k]->ndim;
        for (i = 0; i < in[k]->ndim; i++) {
            int64_t a = out->shape[off + i], b = in[k]->shape[i];
            if (a == 1) out->shape[off + i] = b;
            else if (b != 1 && b != a) {
                char s1[200], s2[200];
                int j;
                gr_array tmp = *out;
                for (j = 0; j < off; j++) tmp.shape[j] = 1;
                return gr_node_error(node, GR_ERR_SHAPE, "shapes do not broadcast: %s of %s against %s so far",
                                     gr__shape_str(s1, sizeof s1, in[k]->ndim, in[k]->shape), gr__d(gr__in(node)[k]).s,
                                     gr__shape_str(s2, sizeof s2, nd, tmp.shape));
            }
        }
    }
    return GR_OK;
}

static gr_status gr__ew_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    return gr__broadcast_shapes(node, node->n_in, in, out[0]);
}

static gr_status gr__ew_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    gr__ew_kernel k = gr__ew_kernels[gr__code_of(node->op)][in[node->n_in - 1]->dtype];
#ifdef GR_ELEMWISE_ONLY
    if (!k && !gr__ew_kernels[gr__code_of(node->op)][0] && !gr__ew_kernels[gr__code_of(node->op)][2] && !gr__ew_kernels[gr__code_of(node->op)][3])
        return gr_node_error(node, GR_ERR_VALUE, "gradient.h was built without the kernels of %s (GR_ELEMWISE_ONLY: define GR_EW_%s)",
                             node->op->name, node->op->name);
#endif
    if (!k) return gr_node_error(node, GR_ERR_TYPE, "no kernel for %s", gr_dtype_name(in[0]->dtype));
    gr__ew_run(k, out[0], node->n_in, in);
    return GR_OK;
}

/* ---- building: dtype promotion and weak constants ------------------------------------------- */

static int gr__is_weak(const gr_var *v) { return v->kind == GR__VK_CONST && (v->flags & GR__VF_WEAK); }
static double gr__weak_value(const gr_var *v) { return gr_array_get((const gr_array *)gr__ext(v), 0); }

/* the dtype n operands combine to: F32 stays F32 unless it meets F64 (float32 graphs stay float32),
   floats absorb integers, weak constants take the other side's float dtype */
static int gr__promote(int n, gr_var *const *xs) {
    int f64 = 0, f32 = 0, ints = 0, weak_frac = 0, k;
    for (k = 0; k < n; k++) {
        if (gr__is_weak(xs[k])) {
            double v = gr__weak_value(xs[k]);
            if (v != floor(v) || v != v) weak_frac = 1;
        } else if (xs[k]->dtype == GR_F64) f64 = 1;
        else if (xs[k]->dtype == GR_F32) f32 = 1;
        else ints = 1;
    }
    if (f64) return GR_F64;
    if (f32) return GR_F32;
    if (ints) return weak_frac ? GR_F64 : GR_I64;
    return GR_F64;                        /* weak constants alone */
}

GR_API gr_var *gr_cast(gr_var *x, gr_dtype dtype);

/* x as dtype T: a weak constant becomes a typed constant (in float64 it stays itself, so that it can
   be differentiated against), anything else of another dtype a Cast */
static gr_var *gr__coerce(gr_var *x, int T) {
    if (gr__is_weak(x) && T != GR_F64) return gr__scalar_const(x->graph, T, gr__weak_value(x), 0);
    if (x->dtype == T) return x;
    return gr_cast(x, (gr_dtype)T);
}

/* the builders' names, for messages */
static const char *const gr__ew_fnames[GR__EW_COUNT] = {
#define GR__FNAME_ROW(name, arity, cls, fexpr, iexpr, d0, d1, d2) "gr_" #name,
    GR_ELEMWISE_OPS(GR__FNAME_ROW)
#undef GR__FNAME_ROW
};

static gr_var *gr__ew(int row, gr_var *const *args) {
    const gr_op_def *op = gr__ew_ops[row];
    int n = op->n_in, cls = gr__ew_class[row], T, k;
    gr_var *xs[3];
    gr_graph *g;
    gr_type t;
    if (!gr__operands(gr__ew_fnames[row], n, args, &g)) return NULL;
    if ((k = gr__broadcast_static(n, args, &t)) >= 0) {     /* before any cast, to name the operands */
        char buf[GR__MSG];
        gr__broadcast_desc(buf, sizeof buf, k, args);
        return gr__fail(g, GR_ERR_SHAPE, "%s: shapes do not broadcast: %s", gr__ew_fnames[row], buf);
    }
    switch (cls) {
    case GR__EC_LOGIC: T = GR_BOOL; break;
    case GR__EC_SELECT: T = gr__promote(n - 1, args + 1); break;
    default: T = gr__promote(n, args);
    }
    if (cls == GR__EC_FLOAT && !gr__is_float(T)) T = GR_F64;
    if (T == GR_BOOL && cls != GR__EC_LOGIC) T = GR_I64;
    for (k = 0; k < n; k++) {
        xs[k] = gr__coerce(args[k], T);
        if (!xs[k]) return NULL;
    }
    return gr__node1(g, op, NULL, 0, n, xs);
}

#define GR__EW_FN_1(name) GR_API gr_var *gr_##name(gr_var *x) { gr_var *xs[1]; xs[0] = x; return gr__ew(GR__EW_##name, xs); }
#define GR__EW_FN_2(name) GR_API gr_var *gr_##name(gr_var *a, gr_var *b) { \
        gr_var *xs[2]; xs[0] = a; xs[1] = b; return gr__ew(GR__EW_##name, xs); }
#define GR__EW_FN_3(name) GR_API gr_var *gr_##name(gr_var *a, gr_var *b, gr_var *c) { \
        gr_var *xs[3]; xs[0] = a; xs[1] = b; xs[2] = c; return gr__ew(GR__EW_##name, xs); }
#define GR__EW_FN(name, arity, cls, fexpr, iexpr, d0, d1, d2) GR__EW_FN_##arity(name)
GR_ELEMWISE_OPS(GR__EW_FN)
#undef GR__EW_FN

/* ---- helpers for rules ------------------------------------------------------------------------ */

static gr_var *gr__cast_like(gr_var *x, gr_var *ref) { return x && ref ? gr_cast(x, (gr_dtype)ref->dtype) : NULL; }

/* the float dtype a gradient of x has: x's own if float, else F64 */
static int gr__grad_dtype(const gr_var *x) { return gr__is_float(x->dtype) ? (int)x->dtype : (int)GR_F64; }

static int gr__static_known(const gr_var *v) {
    int i;
    for (i = 0; i < v->ndim; i++) if (gr__vshape(v)[i] < 0) return 0;
    return 1;
}
static int gr__same_static(const gr_var *a, const gr_var *b) {
    int i;
    if (a->ndim != b->ndim || !gr__static_known(a) || !gr__static_known(b)) return 0;
    for (i = 0; i < a->ndim; i++) if (gr__vshape(a)[i] != gr__vshape(b)[i]) return 0;
    return 1;
}

/* a constant `value` of dtype dt with x's shape (x is used for its shape only) */
static gr_var *gr__fill_like(gr_var *x, int dt, double value) {
    gr_var *c;
    if (!x) return NULL;
    c = gr__scalar_const(x->graph, dt, value, 0);
    if (!c || x->ndim == 0) return c;
    return gr_broadcast_like(c, x);
}
/* float zeros shaped like x, of x's gradient dtype */
static gr_var *gr__zeros_grad(gr_var *x) { return x ? gr__fill_like(x, gr__grad_dtype(x), 0.0) : NULL; }

/* t summed down to x's shape (the gradient of a broadcast); free when the shapes already agree */
static gr_var *gr__sum_to(gr_var *t, gr_var *x) {
    if (!t) return NULL;
    if (gr__same_static(t, x)) return t;
    return gr_reduce_like(t, x);
}
/* t broadcast up to y's shape */
static gr_var *gr__spread_to(gr_var *t, gr_var *y) {
    if (!t) return NULL;
    if (gr__same_static(t, y)) return t;
    return gr_broadcast_like(t, y);
}

/* ---- derivative rules from the table's partials ------------------------------------------- */

enum { GR__PD_EXPR, GR__PD_ONE, GR__PD_NEG_ONE, GR__PD_ZERO };

/* the partial derivative of node's output with respect to input k, as a graph; *kind says when it
   is a known constant instead (then NULL is returned) */
static gr_var *gr__ew_partial(const gr_node *node, int k, int *kind) {
    gr_graph *gr__g = node->graph;
    gr_var *x0 = gr__in(node)[0];
    gr_var *x1 = node->n_in > 1 ? gr__in(node)[1] : NULL;
    gr_var *x2 = node->n_in > 2 ? gr__in(node)[2] : NULL;
    gr_var *y = gr__out(node)[0];
    (void)x1; (void)x2; (void)y; (void)gr__g;
    *kind = GR__PD_EXPR;
#define D(e) (e)
#define D_ONE (*kind = GR__PD_ONE, (gr_var *)NULL)
#define D_NEG_ONE (*kind = GR__PD_NEG_ONE, (gr_var *)NULL)
#define D_ZERO (*kind = GR__PD_ZERO, (gr_var *)NULL)
#define D_NONE (*kind = GR__PD_ZERO, (gr_var *)NULL)
#define K(v) gr_const(gr__g, v)
    switch (gr__code_of(node->op)) {
#define GR__PD_ROW(name, arity, cls, fexpr, iexpr, d0, d1, d2) \
    case GR__EW_##name: return k == 0 ? d0 : k == 1 ? d1 : d2;
        GR_ELEMWISE_OPS(GR__PD_ROW)
#undef GR__PD_ROW
    default: break;
    }
#undef D
#undef D_ONE
#undef D_NEG_ONE
#undef D_ZERO
#undef D_NONE
#undef K
    *kind = GR__PD_ZERO;
    return NULL;
}

/* whether v is the constant scalar 1 of dtype dt: the seed of a scalar cost. 1 * t is t exactly, so
   the grad rules leave the product out rather than build a node every compiled function must fold
   (and everything downstream of it rebuild) */
static int gr__is_one(const gr_var *v, int dt) {
    return v->kind == GR__VK_CONST && v->ndim == 0 && v->dtype == dt && gr_array_get((const gr_array *)gr__ext(v), 0) == 1.0;
}

/* gradient: term_k = sum_to(gz * d_k, x_k); integer-valued outputs and piecewise-constant rows give
   float zeros (a gradient is always float, and zero where the function is locally constant).
   skip (may be NULL): inputs whose term nobody reads (gr_grad knows: they do not depend on any wrt);
   they get zeros, which for a 0-d input (a scalar constant, mostly) is a cached constant, not a node */
static gr_status gr__ew_grad_some(const gr_node *node, gr_var *const *og, gr_var **ig, const uint8_t *skip) {
    gr_var *y = gr__out(node)[0], *gz = og[0];
    int k;
    for (k = 0; k < node->n_in; k++) {
        gr_var *x = gr__in(node)[k], *t;
        int kind;
        if ((skip && skip[k]) || !gr__is_float(y->dtype) || gr__ew_class[gr__code_of(node->op)] == GR__EC_STEP) {
            ig[k] = gr__zeros_grad(x);
            if (!ig[k]) return node->graph->status;
            continue;
        }
        t = gr__ew_partial(node, k, &kind);
        switch (kind) {
        case GR__PD_ZERO: ig[k] = gr__zeros_grad(x); if (!ig[k]) return node->graph->status; continue;
        case GR__PD_ONE: t = gz; break;
        case GR__PD_NEG_ONE: t = gr_neg(gz); break;
        default: t = !t || gr__is_one(gz, t->dtype) ? t : gr_mul(gz, t); break;   /* (NULL: its builder failed) */
        }
        ig[k] = gr__sum_to(t, x);
        if (!ig[k]) return node->graph->status != GR_OK ? node->graph->status : GR_ERR_VALUE;
    }
    return GR_OK;
}
static gr_status gr__ew_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { return gr__ew_grad_some(node, og, ig, NULL); }

/* R-op: sum_k d_k * v_k over the inputs that have a tangent */
static gr_status gr__ew_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *y = gr__out(node)[0], *acc = NULL;
    int k, any = 0;
    orop[0] = NULL;
    if (!gr__is_float(y->dtype)) return GR_OK;          /* integer-valued: not differentiable */
    for (k = 0; k < node->n_in; k++) {
        gr_var *t;
        int kind;
        if (gr_is_disconnected(ev[k])) continue;
        any = 1;
        if (gr__ew_class[gr__code_of(node->op)] == GR__EC_STEP) continue;
        t = gr__ew_partial(node, k, &kind);
        switch (kind) {
        case GR__PD_ZERO: continue;
        case GR__PD_ONE: t = ev[k]; break;
        case GR__PD_NEG_ONE: t = gr_neg(ev[k]); break;
        default: t = gr_mul(t, ev[k]); break;
        }
        acc = acc ? gr_add(acc, t) : t;
        if (!acc) return node->graph->status != GR_OK ? node->graph->status : GR_ERR_VALUE;
    }
    if (!any) return GR_OK;
    orop[0] = acc ? gr__spread_to(acc, y) : gr__zeros_grad(y);
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- Cast ------------------------------------------------------------------------------------- */

typedef struct gr__cast_params { int dtype; } gr__cast_params;

GR_API gr_var *gr_cast(gr_var *x, gr_dtype dtype) {
    gr__cast_params p;
    gr_graph *g;
    if (!gr__operands("gr_cast", 1, &x, &g)) return NULL;
    if (!gr__dtype_ok((int)dtype)) return gr__fail(g, GR_ERR_VALUE, "gr_cast: unknown dtype %d for %s", (int)dtype, gr__d(x).s);
    if (x->dtype == (int)dtype) return x;
    if (gr__is_weak(x)) return gr__scalar_const(g, (int)dtype, gr__weak_value(x), 0);
    memset(&p, 0, sizeof p);
    p.dtype = (int)dtype;
    return gr__node1(g, &gr__op_Cast, &p, sizeof p, 1, &x);
}

static gr_status gr__Cast_infer(const gr_node *node, gr_type *out) {
    gr_var_type(gr__in(node)[0], out);
    out->dtype = (gr_dtype)((const gr__cast_params *)gr__params(node))->dtype;
    return GR_OK;
}
static gr_status gr__Cast_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    return gr__like0_shape(node, in, out);
}
static gr_status gr__Cast_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    if (in[0]->dtype == GR_I64 && out[0]->dtype == GR_F32) {
        /* directly: through double, an int64 beyond 2^53 would be rounded twice (2^60 + 2^36 + 1
           must give 2^60 + 2^37, not 2^60) */
        const int64_t *x = (const int64_t *)in[0]->data;
        float *y = (float *)out[0]->data;
        int64_t i;
        for (i = 0; i < in[0]->size; i++) y[i] = (float)x[i];
        return GR_OK;
    }
    gr__convert(out[0]->dtype, out[0]->data, in[0]->dtype, in[0]->data, in[0]->size);
    return GR_OK;
}
/* float outputs pass the gradient back (cast to x's float dtype); integer outputs give zeros */
static gr_status gr__Cast_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0];
    if (!gr__is_float(gr__out(node)[0]->dtype)) ig[0] = gr__zeros_grad(x);
    else ig[0] = gr_cast(og[0], (gr_dtype)gr__grad_dtype(x));
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Cast_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr_cast(ev[0], (gr_dtype)gr__out(node)[0]->dtype);
    return orop[0] ? GR_OK : node->graph->status;
}

/* Cast of zeros: zeros of the new dtype */
static gr_var *gr__Cast_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    gr_var *z;
    (void)op;
    if (!gr__rw_zeros(in[0], &z)) return NULL;
    return gr__replaced(done, gr__rw_zero_fill(rw, ((const gr__cast_params *)params)->dtype, z));
}

/* ---- pairs (GR_ELEMWISE_PAIRS) ------------------------------------------------------------------ */

/* sin and cos of one operand in one loop, which compilers turn into one sincos call, as they do for
   a hand-fused loop; s[i] = sin(a[i sa]), c[i] = cos(a[i sa]) for F64 and F32 */
static GR__UNUSED void gr__sincos_pair(int dt, void *s, void *c, const void *a, int64_t sa, int64_t n) {
    int64_t i;
    if (dt == GR_F64) {
        const double *x = (const double *)a;
        double *ps = (double *)s, *pc = (double *)c;
        for (i = 0; i < n; i++) { double v = x[i * sa]; ps[i] = sin(v); pc[i] = cos(v); }
    } else {
        const float *x = (const float *)a;
        float *ps = (float *)s, *pc = (float *)c;
        for (i = 0; i < n; i++) { float v = x[i * sa]; ps[i] = sinf(v); pc[i] = cosf(v); }
    }
}

typedef void (*gr__ew_pair_kernel)(int dt, void *first, void *second, const void *a, int64_t sa, int64_t n);
typedef struct gr__ew_pair { int first, second; const char *name; gr__ew_pair_kernel run; } gr__ew_pair;
static const gr__ew_pair gr__ew_pairs[] = {
#define GR__PAIR_ROW(first, second, name) GR__EW_WHEN(GR__EW_KEPT(first))(GR__EW_WHEN(GR__EW_KEPT(second))( \
    { GR__EW_##first, GR__EW_##second, #name, gr__##name##_pair },))
    GR_ELEMWISE_PAIRS(GR__PAIR_ROW)
#undef GR__PAIR_ROW
    { -1, -1, NULL, NULL }
};

/* the pair whose first row is `row`, or NULL */
static const gr__ew_pair *gr__ew_pair_first(int row) {
    const gr__ew_pair *p;
    for (p = gr__ew_pairs; p->run; p++) if (p->first == row) return p;
    return NULL;
}
/* row is the second of a pair */
static int gr__ew_pair_second(int row) {
    const gr__ew_pair *p;
    for (p = gr__ew_pairs; p->run; p++) if (p->second == row) return 1;
    return 0;
}

/* ---- rewrites (GR_ELEMWISE_REWRITES): the algebra ----------------------------------------------------
   Zeros are 0-d zeros or zeros filled to a shape (gr__rw_zeros); a zero operand is dropped only when
   the result keeps its shape in every call (gr__sig_into). */

/* x + 0 -> x, 0 + x -> x; x - 0 -> x, 0 - x -> -x */
static gr_var *gr__add_zero_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    gr_var *a = in[0], *b = in[1], *za = NULL, *zb = NULL;
    int a0 = gr__rw_zeros(a, &za), b0 = gr__rw_zeros(b, &zb);
    if (b0 && (!zb || gr__sig_into(rw, zb, a))) return gr__replaced(done, a);
    if (b0 && zb && gr__sig_into(rw, a, zb)) return gr__replaced(done, gr__rw_fill(rw, a, zb));
    if (a0 && (!za || gr__sig_into(rw, za, b))) return gr__replaced(done, row == GR__EW_add ? b : gr__rw_ew(rw, GR__EW_neg, b, NULL));
    return NULL;
}

/* exp(x) - 1 -> expm1(x) */
static gr_var *gr__expm1_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    const gr_node *e = gr__owner(in[0]);
    (void)row;
    if (!gr__rw_is_scalar(in[1], 1.0) || !e || e->op != &gr__op_ew_exp) return NULL;
    return gr__replaced(done, gr__rw_ew(rw, GR__EW_expm1, gr__in(e)[0], NULL));
}

/* x * 1 -> x, x * -1 -> -x (either side) */
static gr_var *gr__mul_one_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    gr_var *a = in[0], *b = in[1];
    (void)row;
    if (gr__rw_is_scalar(b, 1.0)) return gr__replaced(done, a);
    if (gr__rw_is_scalar(a, 1.0)) return gr__replaced(done, b);
    if (gr__rw_is_scalar(b, -1.0)) return gr__replaced(done, gr__rw_ew(rw, GR__EW_neg, a, NULL));
    if (gr__rw_is_scalar(a, -1.0)) return gr__replaced(done, gr__rw_ew(rw, GR__EW_neg, b, NULL));
    return NULL;
}

/* x * 0, as zero gradients make it: the zeros, shaped like the product (like Aesara, x's infinities
   and NaNs are not kept) */
static gr_var *gr__mul_zero_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    gr_var *a = in[0], *b = in[1], *za = NULL, *zb = NULL;
    int a0 = gr__rw_zeros(a, &za), b0 = gr__rw_zeros(b, &zb);
    (void)row;
    if (a0 && (!za ? b->ndim == 0 : gr__sig_into(rw, b, za))) return gr__replaced(done, a);
    if (b0 && (!zb ? a->ndim == 0 : gr__sig_into(rw, a, zb))) return gr__replaced(done, b);
    if (a0 && (!za || gr__sig_into(rw, za, b))) return gr__replaced(done, gr__rw_zero_fill(rw, a->dtype, b));
    if (b0 && (!zb || gr__sig_into(rw, zb, a))) return gr__replaced(done, gr__rw_zero_fill(rw, a->dtype, a));
    return NULL;
}

/* x / 1 -> x */
static gr_var *gr__div_one_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    (void)rw; (void)row;
    return gr__rw_is_scalar(in[1], 1.0) ? gr__replaced(done, in[0]) : NULL;
}

/* 0 / x -> 0, when x does not widen the zeros */
static gr_var *gr__zero_div_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    gr_var *za = NULL;
    (void)row;
    if (gr__rw_zeros(in[0], &za) && (!za ? in[1]->ndim == 0 : gr__sig_into(rw, in[1], za))) return gr__replaced(done, in[0]);
    return NULL;
}

/* -(-x) -> x */
static gr_var *gr__neg_neg_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    const gr_node *n = gr__owner(in[0]);
    (void)rw; (void)row;
    return n && n->op == &gr__op_ew_neg ? gr__replaced(done, gr__in(n)[0]) : NULL;
}

/* -0 -> 0 */
static gr_var *gr__neg_zero_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    gr_var *z;
    (void)rw; (void)row;
    return gr__rw_zeros(in[0], &z) ? gr__replaced(done, in[0]) : NULL;
}

/* x^1 -> x, x^2 -> sqr(x) */
static gr_var *gr__pow_small_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    (void)row;
    if (gr__rw_is_scalar(in[1], 1.0)) return gr__replaced(done, in[0]);
    if (gr__rw_is_scalar(in[1], 2.0)) return gr__replaced(done, gr__rw_ew(rw, GR__EW_sqr, in[0], NULL));
    return NULL;
}

/* log(1 + x) -> log1p(x) (either order; x not widened by the 1) */
static gr_var *gr__log1p_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    const gr_node *n = gr__owner(in[0]);
    gr_var *p, *q;
    (void)row;
    if (!n || n->op != &gr__op_ew_add) return NULL;
    p = gr__in(n)[0];
    q = gr__in(n)[1];
    if (gr__rw_is_scalar(p, 1.0) && q->ndim == in[0]->ndim) return gr__replaced(done, gr__rw_ew(rw, GR__EW_log1p, q, NULL));
    if (gr__rw_is_scalar(q, 1.0) && p->ndim == in[0]->ndim) return gr__replaced(done, gr__rw_ew(rw, GR__EW_log1p, p, NULL));
    return NULL;
}

/* log(sigmoid(x)) -> -softplus(-x) */
static gr_var *gr__log_sigmoid_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    const gr_node *n = gr__owner(in[0]);
    (void)row;
    if (!n || n->op != &gr__op_ew_sigmoid) return NULL;
    return gr__replaced(done, gr__rw_ew(rw, GR__EW_neg, gr__rw_ew(rw, GR__EW_softplus, gr__rw_ew(rw, GR__EW_neg, gr__in(n)[0], NULL), NULL), NULL));
}

/* ---- constant factors ------------------------------------------------------------------------------
   Gradients are full of scalings: 2 x from a square, a constant cost weight, neg from a difference,
   ones filled to a term's shape. Over float operands of one dtype a product gathers its constant
   factors into one: mul(c1, mul(c2, x)) -> mul(c1 c2, x), mul(mul(c1, x), mul(c2, y)) ->
   mul(c1 c2, mul(x, y)), neg(mul(c, x)) = mul(c, neg x) -> mul(-c, x), a filled scalar times a
   scalar is their product filled, and a scalar constant (or a one-element one) filled to a shape
   the other operand already has is read as the scalar. Results change by rounding only (a
   product's factors are taken in another order). */

/* v is a 0-d float constant (any_ndim: a one-element one) that can scale a value of dtype dt without
   changing its dtype: *c its value */
static int gr__rw_factor_of(const gr_var *v, int dt, int any_ndim, double *c) {
    if (v->kind != GR__VK_CONST || !gr__is_float(dt) || (v->dtype != dt && !gr__is_weak(v))) return 0;
    if (any_ndim ? ((const gr_array *)gr__ext(v))->size != 1 : v->ndim != 0) return 0;
    *c = gr_array_get((const gr_array *)gr__ext(v), 0);
    return 1;
}
static int gr__rw_factor(const gr_var *v, int dt, double *c) { return gr__rw_factor_of(v, dt, 0, c); }

/* v is mul(c, x) (or mul(x, c)) for a constant factor c: x, and c in *c; NULL otherwise */
static gr_var *gr__rw_scaled(const gr_var *v, int dt, double *c) {
    const gr_node *n = gr__owner(v);
    int j;
    if (!n || n->op != &gr__op_ew_mul || v->dtype != dt) return NULL;
    for (j = 0; j < 2; j++)
        if (gr__in(n)[1 - j]->dtype == dt && gr__in(n)[1 - j]->ndim == v->ndim && gr__rw_factor(gr__in(n)[j], dt, c))
            return gr__in(n)[1 - j];
    return NULL;
}

/* c * x for a constant c of dtype dt */
static gr_var *gr__rw_times(gr__rewriter *rw, int dt, double c, gr_var *x) {
    gr_var *k = gr__scalar_const(rw->cg, dt, c, 0);
    return k ? gr__rw_ew(rw, GR__EW_mul, k, x) : NULL;
}

/* mul(u, y) with u's constant factors gathered with y's; NULL when nothing applies */
static gr_var *gr__rw_scale_side(gr__rewriter *rw, gr_var *u, gr_var *y) {
    const gr_node *un = gr__owner(u);
    gr_var *f, *ref = NULL, *x, *z, *k;
    double c, c2;
    int dt = u->dtype;
    if (!un) return NULL;
    f = gr__rw_filled(u, &ref);
    if (f && gr__rw_factor_of(f, dt, 1, &c) && gr__rw_factor(y, dt, &c2)) {   /* a filled scalar times a scalar */
        k = gr__scalar_const(rw->cg, dt, c * c2, 0);
        return k ? gr__rw_fill(rw, k, ref) : NULL;
    }
    if (f && gr__rw_factor_of(f, dt, 1, &c) && gr__sig_into(rw, u, y)) return gr__rw_times(rw, dt, c, y);   /* filled to y's shape */
    if (gr__rw_factor(y, dt, &c) && un->op == &gr__op_ew_neg && gr__in(un)[0]->dtype == dt)   /* mul(c, neg x) */
        return gr__rw_times(rw, dt, -c, gr__in(un)[0]);
    if (!(x = gr__rw_scaled(u, dt, &c2))) return NULL;
    if (gr__rw_factor(y, dt, &c)) return gr__rw_times(rw, dt, c * c2, x);   /* mul(c, mul(c2, x)) */
    if (!(z = gr__rw_scaled(y, dt, &c))) return NULL;                       /* (one factor alone: no product saved) */
    if (!(z = gr__rw_ew(rw, GR__EW_mul, x, z))) return NULL;                /* mul(mul(c2, x), mul(c, z)) */
    return gr__rw_times(rw, dt, c * c2, z);
}

/* c1 (c2 x) -> (c1 c2) x, (c1 x)(c2 y) -> (c1 c2)(x y), c (-x) -> (-c) x, with the fills above */
static gr_var *gr__mul_consts_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    gr_var *a = in[0], *b = in[1], *r = NULL;
    (void)row;
    if (a->dtype == b->dtype && gr__is_float(a->dtype) && (r = gr__rw_scale_side(rw, a, b)) == NULL && rw->cg->status == GR_OK)
        r = gr__rw_scale_side(rw, b, a);
    return r || rw->cg->status != GR_OK ? gr__replaced(done, r) : NULL;
}

/* -(c x) -> (-c) x */
static gr_var *gr__neg_consts_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    gr_var *x, *r;
    double c;
    (void)row;
    if (!(x = gr__rw_scaled(in[0], in[0]->dtype, &c))) return rw->cg->status != GR_OK ? gr__replaced(done, NULL) : NULL;
    r = gr__rw_times(rw, in[0]->dtype, -c, x);
    return r || rw->cg->status != GR_OK ? gr__replaced(done, r) : NULL;
}

/* ==== ops/reduce.c: generated region; edit ops/reduce.c, then run make gradient.h ==== */
/* ops/reduce.c: Sum, Mean, Prod, Max, Min over a set of axes, with keepdims; ArgMax, LogSumExp,
   CumSum, CumProd, Diff and LinScan along one axis (at the end of the file).

   Shapes: x (d0, ..., dn-1) -> y with the reduced axes removed (or kept as 1 with keepdims).
   Params: a bit mask of the reduced axes. Integer sums and products stay I64 (BOOL counts as I64),
   Max/Min keep the dtype, Mean is float (F64 for integers). */

typedef struct gr__reduce_params { uint32_t mask; int keepdims; } gr__reduce_params;

static gr_var *gr__reduce(const char *fname, const gr_op_def *op, gr_var *x, int n, const int *axes, int keepdims) {
    gr__reduce_params p;
    gr_graph *g;
    int k;
    if (!gr__operands(fname, 1, &x, &g)) return NULL;
    memset(&p, 0, sizeof p);
    if (n < 0) return gr__fail(g, GR_ERR_VALUE, "%s: negative number of axes (%d) for %s", fname, n, gr__d(x).s);
    if (n > 0 && !axes) return gr__fail(g, GR_ERR_VALUE, "%s: axes is NULL for %s", fname, gr__d(x).s);
    for (k = 0; k < n; k++) {
        int a = gr__axis(axes[k], x->ndim);
        if (a < 0)
            return gr__fail(g, GR_ERR_VALUE, "%s: axis %d out of range for %s with %d dimensions", fname, axes[k],
                            gr__d(x).s, x->ndim);
        if (p.mask & (1u << a)) return gr__fail(g, GR_ERR_VALUE, "%s: axis %d repeated for %s", fname, axes[k], gr__d(x).s);
        p.mask |= 1u << a;
    }
    if (n == 0) p.mask = x->ndim ? (uint32_t)((1u << x->ndim) - 1u) : 0u;
    p.keepdims = keepdims ? 1 : 0;
    if (x->dtype == GR_BOOL && (op == &gr__op_Sum || op == &gr__op_Prod)) x = gr_cast(x, GR_I64);
    return gr__node1(g, op, &p, sizeof p, 1, &x);
}

GR_API gr_var *gr_sum_axes(gr_var *x, int n, const int *axes, int keepdims) { return gr__reduce("gr_sum_axes", &gr__op_Sum, x, n, axes, keepdims); }
GR_API gr_var *gr_mean_axes(gr_var *x, int n, const int *axes, int keepdims) { return gr__reduce("gr_mean_axes", &gr__op_Mean, x, n, axes, keepdims); }
GR_API gr_var *gr_prod_axes(gr_var *x, int n, const int *axes, int keepdims) { return gr__reduce("gr_prod_axes", &gr__op_Prod, x, n, axes, keepdims); }
GR_API gr_var *gr_max_axes(gr_var *x, int n, const int *axes, int keepdims) { return gr__reduce("gr_max_axes", &gr__op_Max, x, n, axes, keepdims); }
GR_API gr_var *gr_min_axes(gr_var *x, int n, const int *axes, int keepdims) { return gr__reduce("gr_min_axes", &gr__op_Min, x, n, axes, keepdims); }
GR_API gr_var *gr_sum(gr_var *x) { return gr__reduce("gr_sum", &gr__op_Sum, x, 0, NULL, 0); }
GR_API gr_var *gr_mean(gr_var *x) { return gr__reduce("gr_mean", &gr__op_Mean, x, 0, NULL, 0); }
GR_API gr_var *gr_prod(gr_var *x) { return gr__reduce("gr_prod", &gr__op_Prod, x, 0, NULL, 0); }
GR_API gr_var *gr_max(gr_var *x) { return gr__reduce("gr_max", &gr__op_Max, x, 0, NULL, 0); }
GR_API gr_var *gr_min(gr_var *x) { return gr__reduce("gr_min", &gr__op_Min, x, 0, NULL, 0); }
GR_API gr_var *gr_sum_axis(gr_var *x, int axis) { return gr__reduce("gr_sum_axis", &gr__op_Sum, x, 1, &axis, 0); }
GR_API gr_var *gr_mean_axis(gr_var *x, int axis) { return gr__reduce("gr_mean_axis", &gr__op_Mean, x, 1, &axis, 0); }
GR_API gr_var *gr_prod_axis(gr_var *x, int axis) { return gr__reduce("gr_prod_axis", &gr__op_Prod, x, 1, &axis, 0); }
GR_API gr_var *gr_max_axis(gr_var *x, int axis) { return gr__reduce("gr_max_axis", &gr__op_Max, x, 1, &axis, 0); }
GR_API gr_var *gr_min_axis(gr_var *x, int axis) { return gr__reduce("gr_min_axis", &gr__op_Min, x, 1, &axis, 0); }

static const gr__reduce_params *gr__rp(const gr_node *node) { return (const gr__reduce_params *)gr__params(node); }

static gr_status gr__reduce_infer(const gr_node *node, gr_type *out) {
    const gr_var *x = gr__in(node)[0];
    const gr__reduce_params *p = gr__rp(node);
    int i, m = 0;
    out->dtype = (gr_dtype)x->dtype;
    if (node->op == &gr__op_Mean && !gr__is_float(x->dtype)) out->dtype = GR_F64;
    for (i = 0; i < x->ndim; i++) {
        if (p->mask & (1u << i)) { if (p->keepdims) out->shape[m++] = 1; }
        else out->shape[m++] = gr__vshape(x)[i];
    }
    out->ndim = m;
    return GR_OK;
}

static gr_status gr__reduce_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__reduce_params *p = gr__rp(node);
    int64_t count = 1, rest = 1;
    int i, m = 0;
    for (i = 0; i < in[0]->ndim; i++) {
        if (p->mask & (1u << i)) {
            count *= in[0]->shape[i];
            if (p->keepdims) out[0]->shape[m++] = 1;
        } else {
            rest *= in[0]->shape[i];
            out[0]->shape[m++] = in[0]->shape[i];
        }
    }
    if (count == 0 && rest > 0 && (node->op == &gr__op_Max || node->op == &gr__op_Min))
        return gr_node_error(node, GR_ERR_RUNTIME, "reduction over an empty axis of %s has no identity", gr__d(gr__in(node)[0]).s);
    return GR_OK;
}

/* The reduction as alternating groups of kept and reduced axes (axes of size 1 dropped, neighbours
   of the same kind merged), so a sum over the last axis is one (K, R) loop and over the first
   axis one (R, K) loop. */
typedef struct gr__rgroups {
    int n;
    int64_t len[GR_MAX_NDIM];
    int red[GR_MAX_NDIM];
    int64_t ist[GR_MAX_NDIM], ost[GR_MAX_NDIM];   /* element strides in input and output */
    int64_t out_size, count;                      /* output elements; elements reduced into each */
} gr__rgroups;

static void gr__rgroups_init(gr__rgroups *G, int ndim, const int64_t *shape, uint32_t mask) {
    int i, k;
    int64_t s;
    G->n = 0; G->out_size = 1; G->count = 1;
    for (i = 0; i < ndim; i++) {
        int r = (mask >> i) & 1u;
        if (r) G->count *= shape[i]; else G->out_size *= shape[i];
        if (shape[i] == 1) continue;
        if (G->n > 0 && G->red[G->n - 1] == r) G->len[G->n - 1] *= shape[i];
        else { G->len[G->n] = shape[i]; G->red[G->n] = r; G->n++; }
    }
    s = 1;
    for (k = G->n - 1; k >= 0; k--) { G->ist[k] = s; s *= G->len[k]; }
    s = 1;
    for (k = G->n - 1; k >= 0; k--) {
        if (G->red[k]) G->ost[k] = 0;
        else { G->ost[k] = s; s *= G->len[k]; }
    }
}

#define GR__C_SUM(a, b) ((a) + (b))
#define GR__C_PROD(a, b) ((a) * (b))
#define GR__C_MAX(a, b) (((a) != (a) || (a) > (b)) ? (a) : (b))
#define GR__C_MIN(a, b) (((a) != (a) || (a) < (b)) ? (a) : (b))
#define GR__C_IMAX(a, b) ((a) > (b) ? (a) : (b))
#define GR__C_IMIN(a, b) ((a) < (b) ? (a) : (b))

/* fn(G, in, out): out = identity, then every input element combined into its output element;
   TA is the accumulator of an innermost reduced run */
#define GR__RED_KERNEL(fn, TI, TO, TA, INIT, COMB) \
    static void fn(const gr__rgroups *G, const void *in_, void *out_) { \
        const TI *in = (const TI *)in_; TO *out = (TO *)out_; \
        int64_t i, idx[GR_MAX_NDIM], outer = 1, r, inner; \
        int k, last = G->n - 1; \
        for (i = 0; i < G->out_size; i++) out[i] = (TO)(INIT); \
        if (G->out_size == 0 || G->count == 0) return; \
        if (G->n == 0) { out[0] = (TO)COMB((TA)(INIT), (TA)in[0]); return; } \
        for (k = 0; k < last; k++) { idx[k] = 0; outer *= G->len[k]; } \
        inner = G->len[last]; \
        for (r = 0; r < outer; r++) { \
            int64_t io = 0, oo = 0; \
            for (k = 0; k < last; k++) { io += idx[k] * G->ist[k]; oo += idx[k] * G->ost[k]; } \
            if (G->red[last]) { \
                TA acc = (TA)out[oo]; \
                for (i = 0; i < inner; i++) acc = COMB(acc, (TA)in[io + i]); \
                out[oo] = (TO)acc; \
            } else { \
                for (i = 0; i < inner; i++) out[oo + i] = (TO)COMB((TA)out[oo + i], (TA)in[io + i]); \
            } \
            for (k = last - 1; k >= 0; k--) { if (++idx[k] < G->len[k]) break; idx[k] = 0; } \
        } \
    }

GR__RED_KERNEL(gr__red_sum_f64, double, double, double, 0, GR__C_SUM)
GR__RED_KERNEL(gr__red_sum_f32, float, float, double, 0, GR__C_SUM)
/* integer sums and products accumulate in uint64_t: they wrap modulo 2^64 like NumPy's, where
   int64_t arithmetic would overflow (undefined behaviour) */
GR__RED_KERNEL(gr__red_sum_i64, int64_t, int64_t, uint64_t, 0, GR__C_SUM)
GR__RED_KERNEL(gr__red_sum_i64_f64, int64_t, double, double, 0, GR__C_SUM)
GR__RED_KERNEL(gr__red_sum_b8_f64, uint8_t, double, double, 0, GR__C_SUM)
GR__RED_KERNEL(gr__red_prod_f64, double, double, double, 1, GR__C_PROD)
GR__RED_KERNEL(gr__red_prod_f32, float, float, double, 1, GR__C_PROD)
GR__RED_KERNEL(gr__red_prod_i64, int64_t, int64_t, uint64_t, 1, GR__C_PROD)
GR__RED_KERNEL(gr__red_max_f64, double, double, double, -INFINITY, GR__C_MAX)
GR__RED_KERNEL(gr__red_max_f32, float, float, float, -INFINITY, GR__C_MAX)
GR__RED_KERNEL(gr__red_max_i64, int64_t, int64_t, int64_t, INT64_MIN, GR__C_IMAX)
GR__RED_KERNEL(gr__red_max_b8, uint8_t, uint8_t, int, 0, GR__C_IMAX)
GR__RED_KERNEL(gr__red_min_f64, double, double, double, INFINITY, GR__C_MIN)
GR__RED_KERNEL(gr__red_min_f32, float, float, float, INFINITY, GR__C_MIN)
GR__RED_KERNEL(gr__red_min_i64, int64_t, int64_t, int64_t, INT64_MAX, GR__C_IMIN)
GR__RED_KERNEL(gr__red_min_b8, uint8_t, uint8_t, int, 1, GR__C_IMIN)

typedef void (*gr__red_kernel)(const gr__rgroups *G, const void *in, void *out);

/* sums x over the axes in mask into out, an array of the kept shape: F64 (from any dtype), or F32
   from F32, or I64 from I64 */
static void gr__reduce_sum_into(const gr_array *x, uint32_t mask, gr_array *out) {
    gr__rgroups G;
    gr__red_kernel k;
    GR_ASSERT(out->dtype == GR_F64 || out->dtype == x->dtype);
    GR_ASSERT(out->dtype != GR_BOOL);
    gr__rgroups_init(&G, x->ndim, x->shape, mask);
    if (out->dtype == GR_F32) k = gr__red_sum_f32;
    else if (out->dtype == GR_I64) k = gr__red_sum_i64;
    else if (x->dtype == GR_I64) k = gr__red_sum_i64_f64;
    else if (x->dtype == GR_BOOL) k = gr__red_sum_b8_f64;
    else k = gr__red_sum_f64;
    k(&G, x->data, out->data);
}

static gr_status gr__reduce_perform(const gr_node *node, const gr_array *x, gr_array *y) {
    const gr__reduce_params *p = gr__rp(node);
    gr__rgroups G;
    gr__red_kernel k = NULL;
    int dt = x->dtype;
    gr__rgroups_init(&G, x->ndim, x->shape, p->mask);
    switch (gr__code_of(node->op)) {
    case GR__OP_Sum:
    case GR__OP_Mean:
        gr__reduce_sum_into(x, p->mask, y);
        if (gr__code_of(node->op) == GR__OP_Mean) {
            int64_t i;
            double inv = G.count ? 1.0 / (double)G.count : NAN;
            if (y->dtype == GR_F32) for (i = 0; i < y->size; i++) ((float *)y->data)[i] = (float)(((float *)y->data)[i] * inv);
            else for (i = 0; i < y->size; i++) ((double *)y->data)[i] *= inv;
        }
        return GR_OK;
    case GR__OP_Prod: k = dt == GR_F64 ? gr__red_prod_f64 : dt == GR_F32 ? gr__red_prod_f32 : gr__red_prod_i64; break;
    case GR__OP_Max: k = dt == GR_F64 ? gr__red_max_f64 : dt == GR_F32 ? gr__red_max_f32 : dt == GR_I64 ? gr__red_max_i64 : gr__red_max_b8; break;
    default: k = dt == GR_F64 ? gr__red_min_f64 : dt == GR_F32 ? gr__red_min_f32 : dt == GR_I64 ? gr__red_min_i64 : gr__red_min_b8; break;
    }
    k(&G, x->data, y->data);
    return GR_OK;
}

static gr_status gr__Sum_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) { return gr__reduce_perform(node, in[0], out[0]); }
static gr_status gr__Mean_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) { return gr__reduce_perform(node, in[0], out[0]); }
static gr_status gr__Prod_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) { return gr__reduce_perform(node, in[0], out[0]); }
static gr_status gr__Max_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) { return gr__reduce_perform(node, in[0], out[0]); }
static gr_status gr__Min_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) { return gr__reduce_perform(node, in[0], out[0]); }

/* its signature: the kept axes keep their symbols; a reduced one kept (keepdims) has size 1 */
static void gr__reduce_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    const gr__reduce_params *p = gr__rp(node);
    int32_t s[GR_MAX_NDIM];
    int i, m = 0;
    gr__sig_copy(rw, gr__in(node)[0], s);
    for (i = 0; i < gr__in(node)[0]->ndim; i++) {
        if (p->mask & (1u << i)) { if (p->keepdims) out[m++] = GR__SIG_ONE; }
        else out[m++] = s[i];
    }
}

/* ---- derivative rules ------------------------------------------------------------------------- */

static gr_var *gr__dimshuffle(gr_var *x, int n, const int *pattern, int strict);

/* y (a reduction's output, or its gradient) with the reduced axes back as axes of size 1 */
static gr_var *gr__unreduce(gr_var *y, const gr_node *node) {
    const gr__reduce_params *p = gr__rp(node);
    int pattern[GR_MAX_NDIM], i, m = 0, nd = gr__in(node)[0]->ndim;
    if (!y || p->keepdims) return y;
    for (i = 0; i < nd; i++) pattern[i] = (p->mask & (1u << i)) ? GR_NEWAXIS : m++;
    return gr__dimshuffle(y, nd, pattern, 0);
}

/* gz broadcast back over the reduced axes, shaped like x */
static gr_var *gr__spread_back(gr_var *gz, const gr_node *node) {
    return gr__spread_to(gr__unreduce(gz, node), gr__in(node)[0]);
}

static gr_var *gr__size_ratio(gr_var *a, gr_var *b, int dtype);

static gr_status gr__Sum_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0];
    ig[0] = gr__is_float(gr__out(node)[0]->dtype) ? gr__spread_back(og[0], node) : gr__zeros_grad(x);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Sum_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__reduce_params *p = gr__rp(node);
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) || !gr__is_float(gr__out(node)[0]->dtype)) return GR_OK;
    orop[0] = gr__node1(node->graph, &gr__op_Sum, p, sizeof *p, 1, &ev[0]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* the gradient of a mean is the spread cotangent times count(y) / count(x) */
static gr_status gr__Mean_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0], *y = gr__out(node)[0], *scale;
    if (gr__static_known(x)) {
        int64_t nx = gr__shape_size(x->ndim, gr__vshape(x)), ny = gr__shape_size(y->ndim, gr__vshape(y));
        scale = gr__scalar_const(node->graph, y->dtype, nx ? (double)ny / (double)nx : 0.0, 0);
    } else scale = gr__size_ratio(y, x, y->dtype);
    ig[0] = gr__spread_back(gr_mul(og[0], scale), node);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Mean_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__reduce_params *p = gr__rp(node);
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__node1(node->graph, &gr__op_Mean, p, sizeof *p, 1, &ev[0]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* d prod / d x_i, zero-safe, written so that its own derivatives are right at zeros too (gradients
   of gradients, Hessians):
     x_i != 0:  y / x_i, with y the product (0 when the slice has a zero; its gradient is this rule,
                so the derivative toward a lone zero x_k is y's partial there, not 0);
     x_i == 0:  the product of the others: p, the product of the non-zeros, when x_i is the slice's
                only zero; p x_m when one other zero x_m is there, written p (s - x_i) with s the
                sum of the slice's zeros, which is 0 but keeps the derivative p toward x_m; 0 with
                three zeros or more (every derivative of it is 0 too) */
static gr_var *gr__prod_partial(const gr_node *node) {
    const gr__reduce_params *p = gr__rp(node);
    gr__reduce_params keep = *p;
    gr_var *x = gr__in(node)[0], *is0, *zeros_at, *nz, *safe, *pnz, *s0, *x0s, *zero_case, *plain_case, *one, *zero;
    gr_graph *g = node->graph;
    keep.keepdims = 1;
    one = gr_const(g, 1.0);
    zero = gr_const(g, 0.0);
    is0 = gr_eq(x, zero);
    safe = gr_where(is0, one, x);
    zeros_at = gr__cast_like(is0, x);                                        /* a Sum node takes no BOOL */
    nz = zeros_at ? gr__node1(g, &gr__op_Sum, &keep, sizeof keep, 1, &zeros_at) : NULL;   /* zeros per slice */
    pnz = safe ? gr__node1(g, &gr__op_Prod, &keep, sizeof keep, 1, &safe) : NULL;         /* product of the non-zeros */
    x0s = gr_where(is0, x, zero);
    s0 = x0s ? gr__node1(g, &gr__op_Sum, &keep, sizeof keep, 1, &x0s) : NULL;            /* sum of the zeros: 0 */
    /* with two zeros the derivative is 0 but its derivative is not: pnz * (s0 - x) keeps both right */
    zero_case = gr_where(gr_eq(nz, one), pnz, gr_where(gr_eq(nz, gr_const(g, 2.0)), gr_mul(pnz, gr_sub(s0, x)), zero));
    plain_case = gr_div(gr__unreduce(gr__out(node)[0], node), safe);
    return gr_where(is0, zero_case, plain_case);
}

static gr_status gr__Prod_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0];
    if (!gr__is_float(gr__out(node)[0]->dtype)) ig[0] = gr__zeros_grad(x);
    else ig[0] = gr_mul(gr__spread_back(og[0], node), gr__prod_partial(node));
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Prod_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__reduce_params *p = gr__rp(node);
    gr_var *t;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) || !gr__is_float(gr__out(node)[0]->dtype)) return GR_OK;
    t = gr_mul(ev[0], gr__prod_partial(node));
    orop[0] = t ? gr__node1(node->graph, &gr__op_Sum, p, sizeof *p, 1, &t) : NULL;
    return orop[0] ? GR_OK : node->graph->status;
}

/* where x attains the extremum of its slice, as x's dtype (ties: every tied element) */
static gr_var *gr__argext_mask(const gr_node *node) {
    gr_var *x = gr__in(node)[0];
    return gr__cast_like(gr_eq(x, gr__spread_back(gr__out(node)[0], node)), x);
}
static gr_status gr__extremum_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0];
    if (!gr__is_float(x->dtype)) ig[0] = gr__zeros_grad(x);
    else ig[0] = gr_mul(gr__spread_back(og[0], node), gr__argext_mask(node));
    return ig[0] ? GR_OK : node->graph->status;
}
/* R-op: the tangents of the tied extrema summed (PyTensor), the adjoint of the gradient */
static gr_status gr__extremum_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__reduce_params *p = gr__rp(node);
    gr_var *t;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) || !gr__is_float(gr__out(node)[0]->dtype)) return GR_OK;
    t = gr_mul(ev[0], gr__argext_mask(node));
    orop[0] = t ? gr__node1(node->graph, &gr__op_Sum, p, sizeof *p, 1, &t) : NULL;
    return orop[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Max_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { return gr__extremum_grad(node, og, ig); }
static gr_status gr__Min_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { return gr__extremum_grad(node, og, ig); }
static gr_status gr__Max_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) { return gr__extremum_rop(node, ev, orop); }
static gr_status gr__Min_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) { return gr__extremum_rop(node, ev, orop); }

#ifndef GR_NO_AXIS                  /* ops/table.h, op families: to the end of the file */
/* ==== along one axis: ArgMax, LogSumExp, CumSum, CumProd, Diff and LinScan ========================

   Each works along one axis of x, seen as (outer, n, inner): element i of the slice (o, j) is
   x[(o n + i) inner + j].
     ArgMax     x (*pre, n, *post) -> (*pre, *post), I64: the first position of the largest element
                (NaN counts as the largest: the first NaN, as NumPy); not differentiable
     LogSumExp  x (*pre, n, *post) -> (*pre, *post): m + log sum_i e^(x_i - m), m = max_i x_i
     CumSum     x -> x's shape: y_k = sum_{i<=k} x_i (reverse: sum_{i>=k}); I64 wraps modulo 2^64
     CumProd    x -> x's shape: y_k = prod_{i<=k} x_i
     Diff       x (*pre, n, *post) -> (*pre, n - 1, *post): y_k = x_{k+1} - x_k (NumPy diff, n = 1); I64
                wraps, BOOL gives x_{k+1} != x_k (as NumPy); an axis of length 0 is an error
     LinScan    a, b (one shape, float) -> s, the linear recurrence behind CumProd's derivatives:
                  forward  s_k = a_k s_{k-1} + b_k,       s_{-1} = 0
                  reverse  s_k = a_{k+1} s_{k+1} + b_k,   s_n = 0
                As maps of b the two are each other's transpose, so each one's gradient is the
                other and no derivative of a cumulative product divides by x (zero-safe).
   Params: the axis (normalised) and the direction (CumSum and LinScan; the others are forward). */

typedef struct gr__axdir_params { int axis; int reverse; } gr__axdir_params;

static const gr__axdir_params *gr__adp(const gr_node *node) { return (const gr__axdir_params *)gr__params(node); }
static void gr__axis_split(const gr_array *x, int axis, int64_t *outer, int64_t *n, int64_t *inner);

/* g: the operands' graph (an operand may be NULL: its builder failed) */
static gr_var *gr__axdir_node(const gr_op_def *op, int axis, int reverse, int n, gr_var *const *xs, gr_graph *g) {
    gr__axdir_params p;
    memset(&p, 0, sizeof p);
    p.axis = axis;
    p.reverse = reverse;
    return gr__node1(g, op, &p, sizeof p, n, xs);
}

static gr_var *gr__axdir_op(const char *fname, const gr_op_def *op, gr_var *x, int axis) {
    gr_graph *g;
    int a;
    if (!gr__operands(fname, 1, &x, &g)) return NULL;
    if (x->ndim == 0) return gr__fail(g, GR_ERR_VALUE, "%s: %s is 0-d; it needs an axis", fname, gr__d(x).s);
    a = gr__axis(axis, x->ndim);
    if (a < 0) return gr__fail(g, GR_ERR_VALUE, "%s: axis %d out of range for %s with %d dimensions", fname, axis, gr__d(x).s, x->ndim);
    if (op == &gr__op_LogSumExp && !gr__is_float(x->dtype)) x = gr_cast(x, GR_F64);
    else if ((op == &gr__op_CumSum || op == &gr__op_CumProd) && x->dtype == GR_BOOL) x = gr_cast(x, GR_I64);   /* NumPy counts */
    return gr__axdir_node(op, a, 0, 1, &x, g);
}

GR_API gr_var *gr_argmax_axis(gr_var *x, int axis) { return gr__axdir_op("gr_argmax_axis", &gr__op_ArgMax, x, axis); }
GR_API gr_var *gr_logsumexp(gr_var *x, int axis) { return gr__axdir_op("gr_logsumexp", &gr__op_LogSumExp, x, axis); }
GR_API gr_var *gr_cumsum(gr_var *x, int axis) { return gr__axdir_op("gr_cumsum", &gr__op_CumSum, x, axis); }
GR_API gr_var *gr_cumprod(gr_var *x, int axis) { return gr__axdir_op("gr_cumprod", &gr__op_CumProd, x, axis); }
GR_API gr_var *gr_diff(gr_var *x, int axis) { return gr__axdir_op("gr_diff", &gr__op_Diff, x, axis); }

/* the recurrence s = LinScan(a, b) along axis (rules only: a and b float, of one dtype and shape) */
static gr_var *gr__linscan(gr_var *a, gr_var *b, int axis, int reverse) {
    gr_var *xs[2];
    if (!a || !b) return NULL;
    xs[0] = a; xs[1] = b;
    return gr__axdir_node(&gr__op_LinScan, axis, reverse, 2, xs, a->graph);
}

/* ---- type and shape rules --------------------------------------------------------------------- */

/* ArgMax and LogSumExp: the axis goes */
static gr_status gr__axisred_infer(const gr_node *node, gr_type *out) {
    const gr_var *x = gr__in(node)[0];
    int axis = gr__adp(node)->axis, i, m = 0;
    out->dtype = node->op == &gr__op_ArgMax ? GR_I64 : (gr_dtype)x->dtype;
    for (i = 0; i < x->ndim; i++) if (i != axis) out->shape[m++] = gr__vshape(x)[i];
    out->ndim = m;
    return GR_OK;
}
static gr_status gr__axisred_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int axis = gr__adp(node)->axis, i, m = 0;
    int64_t rest = 1;
    for (i = 0; i < in[0]->ndim; i++)
        if (i != axis) { out[0]->shape[m++] = in[0]->shape[i]; rest *= in[0]->shape[i]; }
    if (node->op == &gr__op_ArgMax && in[0]->shape[axis] == 0 && rest > 0)
        return gr_node_error(node, GR_ERR_RUNTIME, "axis %d of %s %s is empty: it has no largest element", axis, gr__d(gr__in(node)[0]).s,
                             gr__as(in[0]).s);
    return GR_OK;
}

/* Diff: the axis loses a row, so it needs one */
static gr_status gr__Diff_infer(const gr_node *node, gr_type *out) {
    const gr_var *x = gr__in(node)[0];
    int axis = gr__adp(node)->axis;
    int64_t n = gr__vshape(x)[axis];
    gr_var_type(x, out);
    if (n == 0)
        return gr__error(node->graph, GR_ERR_SHAPE, "gr_diff: axis %d of %s %s has length 0: no differences", axis, gr__d(x).s, gr__vs(x).s);
    out->shape[axis] = n > 0 ? n - 1 : -1;
    return GR_OK;
}
static gr_status gr__Diff_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int axis = gr__adp(node)->axis, i;
    if (in[0]->shape[axis] == 0)
        return gr_node_error(node, GR_ERR_SHAPE, "axis %d of %s %s has length 0: no differences", axis, gr__d(gr__in(node)[0]).s,
                             gr__as(in[0]).s);
    for (i = 0; i < in[0]->ndim; i++) out[0]->shape[i] = in[0]->shape[i] - (i == axis);
    return GR_OK;
}

static gr_status gr__LinScan_infer(const gr_node *node, gr_type *out) {
    const gr_var *a = gr__in(node)[0], *b = gr__in(node)[1];
    int i;
    if (a->ndim != b->ndim || a->dtype != b->dtype || !gr__is_float(a->dtype))
        return gr__error(node->graph, GR_ERR_TYPE, "LinScan: a %s (%s, %d-d) and b %s (%s, %d-d) need one float dtype and one ndim",
                         gr__d(a).s, gr_dtype_name((gr_dtype)a->dtype), a->ndim, gr__d(b).s, gr_dtype_name((gr_dtype)b->dtype), b->ndim);
    out->dtype = (gr_dtype)a->dtype;
    out->ndim = a->ndim;
    for (i = 0; i < a->ndim; i++) {
        if (gr__vshape(a)[i] >= 0 && gr__vshape(b)[i] >= 0 && gr__vshape(a)[i] != gr__vshape(b)[i])
            return gr__error(node->graph, GR_ERR_SHAPE, "LinScan: a %s %s and b %s %s differ in shape", gr__d(a).s, gr__vs(a).s,
                             gr__d(b).s, gr__vs(b).s);
        out->shape[i] = gr__vshape(a)[i] >= 0 ? gr__vshape(a)[i] : gr__vshape(b)[i];
    }
    return GR_OK;
}
static gr_status gr__LinScan_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    for (i = 0; i < in[0]->ndim; i++) {
        if (in[0]->shape[i] != in[1]->shape[i])
            return gr_node_error(node, GR_ERR_SHAPE, "a %s of shape %s and b %s of shape %s differ", gr__d(gr__in(node)[0]).s,
                                 gr__as(in[0]).s, gr__d(gr__in(node)[1]).s, gr__as(in[1]).s);
        out[0]->shape[i] = in[0]->shape[i];
    }
    return GR_OK;
}

/* ---- kernels ---------------------------------------------------------------------------------- */

/* ISNAN(v) is 0 for integer types */
#define GR__ARGMAX(fn, T, ISNAN) \
    static void fn(int64_t outer, int64_t n, int64_t inner, const T *x, int64_t *y) { \
        int64_t o, j, i; \
        for (o = 0; o < outer; o++) \
            for (j = 0; j < inner; j++) { \
                const T *xs = x + o * n * inner + j; \
                int64_t best = 0; \
                T b = xs[0]; \
                for (i = 1; i < n && !ISNAN(b); i++) { \
                    T v = xs[i * inner]; \
                    if (v > b || ISNAN(v)) { best = i; b = v; } \
                } \
                y[o * inner + j] = best; \
            } \
    }
#define GR__ISNAN_F(v) ((v) != (v))
#define GR__ISNAN_I(v) 0
GR__ARGMAX(gr__argmax_f64, double, GR__ISNAN_F)
GR__ARGMAX(gr__argmax_f32, float, GR__ISNAN_F)
GR__ARGMAX(gr__argmax_i64, int64_t, GR__ISNAN_I)
GR__ARGMAX(gr__argmax_b8, uint8_t, GR__ISNAN_I)

/* m + log sum e^(x - m) in double; an infinite or NaN maximum is the answer itself (all -inf,
   an empty slice: -inf; any +inf: +inf; any NaN: NaN) */
#define GR__LOGSUMEXP(fn, T) \
    static void fn(int64_t outer, int64_t n, int64_t inner, const T *x, T *y) { \
        int64_t o, j, i; \
        for (o = 0; o < outer; o++) \
            for (j = 0; j < inner; j++) { \
                const T *xs = x + o * n * inner + j; \
                double m = -INFINITY, s = 0; \
                for (i = 0; i < n; i++) { double v = (double)xs[i * inner]; if (v > m || v != v) m = v; if (v != v) break; } \
                if (m == INFINITY || m == -INFINITY || m != m) { y[o * inner + j] = (T)m; continue; } \
                for (i = 0; i < n; i++) s += exp((double)xs[i * inner] - m); \
                y[o * inner + j] = (T)(m + log(s)); \
            } \
    }
GR__LOGSUMEXP(gr__logsumexp_f64, double)
GR__LOGSUMEXP(gr__logsumexp_f32, float)

/* row i of a block (its inner elements, contiguous) from row i - 1 in the order of the scan, so
   the loops stream through memory whatever the axis. U is the type of the arithmetic (uint64_t
   for I64: it wraps instead of overflowing). */
#define GR__CUM(fn, T, U, OP) \
    static void fn(int rev, int64_t outer, int64_t n, int64_t inner, const T *x, T *y) { \
        int64_t o, t, j; \
        for (o = 0; o < outer; o++) { \
            const T *xo = x + o * n * inner; \
            T *yo = y + o * n * inner; \
            for (t = 0; t < n; t++) { \
                int64_t i = rev ? n - 1 - t : t, p = rev ? i + 1 : i - 1; \
                if (t == 0) for (j = 0; j < inner; j++) yo[i * inner + j] = xo[i * inner + j]; \
                else for (j = 0; j < inner; j++) yo[i * inner + j] = (T)((U)yo[p * inner + j] OP (U)xo[i * inner + j]); \
            } \
        } \
    }
GR__CUM(gr__cumsum_f64, double, double, +)
GR__CUM(gr__cumsum_f32, float, float, +)
GR__CUM(gr__cumsum_i64, int64_t, uint64_t, +)
GR__CUM(gr__cumprod_f64, double, double, *)
GR__CUM(gr__cumprod_f32, float, float, *)
GR__CUM(gr__cumprod_i64, int64_t, uint64_t, *)

/* y_i = x_{i+1} - x_i along the axis, row by row (U: the arithmetic's type, wrapping for I64) */
#define GR__DIFF(fn, T, U) \
    static void fn(int64_t outer, int64_t n, int64_t inner, const T *x, T *y) { \
        int64_t o, i, j; \
        for (o = 0; o < outer; o++) \
            for (i = 0; i + 1 < n; i++) { \
                const T *x0 = x + (o * n + i) * inner, *x1 = x0 + inner; \
                T *yi = y + (o * (n - 1) + i) * inner; \
                for (j = 0; j < inner; j++) yi[j] = (T)((U)x1[j] - (U)x0[j]); \
            } \
    }
GR__DIFF(gr__diff_f64, double, double)
GR__DIFF(gr__diff_f32, float, float)
GR__DIFF(gr__diff_i64, int64_t, uint64_t)
/* BOOL: whether neighbours differ (NumPy's diff of bools is not_equal) */
static void gr__diff_b8(int64_t outer, int64_t n, int64_t inner, const uint8_t *x, uint8_t *y) {
    int64_t o, i, j;
    for (o = 0; o < outer; o++)
        for (i = 0; i + 1 < n; i++) {
            const uint8_t *x0 = x + (o * n + i) * inner, *x1 = x0 + inner;
            uint8_t *yi = y + (o * (n - 1) + i) * inner;
            for (j = 0; j < inner; j++) yi[j] = (uint8_t)((x1[j] != 0) != (x0[j] != 0));
        }
}

/* s_i = a_i s_prev + b_i forward, a_prev s_prev + b_i in reverse (prev: the row before in the
   order of the scan) */
#define GR__LINSCAN(fn, T) \
    static void fn(int rev, int64_t outer, int64_t n, int64_t inner, const T *a, const T *b, T *s) { \
        int64_t o, t, j; \
        for (o = 0; o < outer; o++) { \
            const T *ao = a + o * n * inner, *bo = b + o * n * inner; \
            T *so = s + o * n * inner; \
            for (t = 0; t < n; t++) { \
                int64_t i = rev ? n - 1 - t : t, p = rev ? i + 1 : i - 1; \
                const T *ai = ao + (rev ? p : i) * inner; \
                if (t == 0) for (j = 0; j < inner; j++) so[i * inner + j] = bo[i * inner + j]; \
                else for (j = 0; j < inner; j++) so[i * inner + j] = ai[j] * so[p * inner + j] + bo[i * inner + j]; \
            } \
        } \
    }
GR__LINSCAN(gr__linscan_f64, double)
GR__LINSCAN(gr__linscan_f32, float)

static gr_status gr__ArgMax_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[0];
    int64_t outer, n, inner, *y = (int64_t *)out[0]->data;
    gr__axis_split(x, gr__adp(node)->axis, &outer, &n, &inner);
    if (n == 0) return GR_OK;                                  /* nothing to write: the shape rule saw to it */
    switch (x->dtype) {
    case GR_F64: gr__argmax_f64(outer, n, inner, (const double *)x->data, y); break;
    case GR_F32: gr__argmax_f32(outer, n, inner, (const float *)x->data, y); break;
    case GR_I64: gr__argmax_i64(outer, n, inner, (const int64_t *)x->data, y); break;
    default: gr__argmax_b8(outer, n, inner, (const uint8_t *)x->data, y); break;
    }
    return GR_OK;
}
static gr_status gr__LogSumExp_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[0];
    int64_t outer, n, inner;
    gr__axis_split(x, gr__adp(node)->axis, &outer, &n, &inner);
    if (x->dtype == GR_F64) gr__logsumexp_f64(outer, n, inner, (const double *)x->data, (double *)out[0]->data);
    else gr__logsumexp_f32(outer, n, inner, (const float *)x->data, (float *)out[0]->data);
    return GR_OK;
}
static gr_status gr__cum_perform(const gr_node *node, int prod, const gr_array *x, gr_array *y) {
    int64_t outer, n, inner;
    int rev = gr__adp(node)->reverse;
    gr__axis_split(x, gr__adp(node)->axis, &outer, &n, &inner);
    switch (x->dtype) {
    case GR_F64:
        if (prod) gr__cumprod_f64(rev, outer, n, inner, (const double *)x->data, (double *)y->data);
        else gr__cumsum_f64(rev, outer, n, inner, (const double *)x->data, (double *)y->data);
        break;
    case GR_F32:
        if (prod) gr__cumprod_f32(rev, outer, n, inner, (const float *)x->data, (float *)y->data);
        else gr__cumsum_f32(rev, outer, n, inner, (const float *)x->data, (float *)y->data);
        break;
    case GR_I64:
        if (prod) gr__cumprod_i64(rev, outer, n, inner, (const int64_t *)x->data, (int64_t *)y->data);
        else gr__cumsum_i64(rev, outer, n, inner, (const int64_t *)x->data, (int64_t *)y->data);
        break;
    default: return gr_node_error(node, GR_ERR_TYPE, "no kernel for %s", gr_dtype_name(x->dtype));
    }
    return GR_OK;
}
static gr_status gr__CumSum_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    return gr__cum_perform(node, 0, in[0], out[0]);
}
static gr_status gr__CumProd_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    return gr__cum_perform(node, 1, in[0], out[0]);
}
static gr_status gr__Diff_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[0];
    int64_t outer, n, inner;
    gr__axis_split(x, gr__adp(node)->axis, &outer, &n, &inner);
    switch (x->dtype) {
    case GR_F64: gr__diff_f64(outer, n, inner, (const double *)x->data, (double *)out[0]->data); break;
    case GR_F32: gr__diff_f32(outer, n, inner, (const float *)x->data, (float *)out[0]->data); break;
    case GR_I64: gr__diff_i64(outer, n, inner, (const int64_t *)x->data, (int64_t *)out[0]->data); break;
    default: gr__diff_b8(outer, n, inner, (const uint8_t *)x->data, (uint8_t *)out[0]->data); break;
    }
    return GR_OK;
}
static gr_status gr__LinScan_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t outer, n, inner;
    int rev = gr__adp(node)->reverse;
    gr__axis_split(in[0], gr__adp(node)->axis, &outer, &n, &inner);
    if (in[0]->dtype == GR_F64)
        gr__linscan_f64(rev, outer, n, inner, (const double *)in[0]->data, (const double *)in[1]->data, (double *)out[0]->data);
    else gr__linscan_f32(rev, outer, n, inner, (const float *)in[0]->data, (const float *)in[1]->data, (float *)out[0]->data);
    return GR_OK;
}

/* ---- derivative rules ------------------------------------------------------------------------- */

/* ArgMax is piecewise constant: a zero gradient for x (an integer output of a float input, as in
   Aesara), no tangent */
static gr_status gr__ArgMax_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    (void)og;
    ig[0] = gr__zeros_grad(gr__in(node)[0]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__ArgMax_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node; (void)ev;
    orop[0] = NULL;
    return GR_OK;
}

/* y (with the axis removed) with the axis back, of size 1 */
static gr_var *gr__axis_back(gr_var *y, int axis, int ndim) {
    int pattern[GR_MAX_NDIM], i, m = 0;
    if (!y) return NULL;
    for (i = 0; i < ndim; i++) pattern[i] = i == axis ? GR_NEWAXIS : m++;
    return gr__dimshuffle(y, ndim, pattern, 0);
}

/* d lse / d x = softmax(x) along the axis: gradient gz softmax(x), R-op sum_axis(softmax(x) v) */
static gr_status gr__LogSumExp_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0];
    int axis = gr__adp(node)->axis;
    ig[0] = gr_mul(gr__axis_back(og[0], axis, x->ndim), gr_softmax(x, axis));
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__LogSumExp_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    int axis = gr__adp(node)->axis;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr_sum_axis(gr_mul(gr_softmax(gr__in(node)[0], axis), ev[0]), axis);
    return orop[0] ? GR_OK : node->graph->status;
}

/* CumSum is linear: its gradient is the cumulative sum the other way, its R-op the same sum of
   the tangent */
static gr_status gr__CumSum_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__axdir_params *p = gr__adp(node);
    ig[0] = gr__is_float(gr__out(node)[0]->dtype) ? gr__axdir_node(&gr__op_CumSum, p->axis, !p->reverse, 1, &og[0], node->graph)
                                              : gr__zeros_grad(gr__in(node)[0]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__CumSum_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__axdir_params *p = gr__adp(node);
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) || !gr__is_float(gr__out(node)[0]->dtype)) return GR_OK;
    orop[0] = gr__axdir_node(&gr__op_CumSum, p->axis, p->reverse, 1, &ev[0], node->graph);
    return orop[0] ? GR_OK : node->graph->status;
}

/* Diff is linear. Its gradient is the adjoint (-g_0, g_0 - g_1, ..., g_{n-3} - g_{n-2}, g_{n-2}):
   minus the diff of g with a row of zeros at both ends; its R-op is the diff of the tangent */
static gr_status gr__Diff_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0], *zeros, *padded[3], *g0;
    int axis = gr__adp(node)->axis;
    if (!gr__is_float(gr__out(node)[0]->dtype)) {
        ig[0] = gr__zeros_grad(x);
        return ig[0] ? GR_OK : node->graph->status;
    }
    zeros = gr__fill_like(gr_slice(x, axis, 0, 1, 1), og[0]->dtype, 0.0);   /* one row, shaped like x[0:1] */
    padded[0] = zeros; padded[1] = og[0]; padded[2] = zeros;
    g0 = gr_concatenate(3, padded, axis);
    ig[0] = g0 ? gr_neg(gr__axdir_node(&gr__op_Diff, axis, 0, 1, &g0, node->graph)) : NULL;
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Diff_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) || !gr__is_float(gr__out(node)[0]->dtype)) return GR_OK;
    orop[0] = gr__axdir_node(&gr__op_Diff, gr__adp(node)->axis, 0, 1, &ev[0], node->graph);
    return orop[0] ? GR_OK : node->graph->status;
}

/* z moved one position along axis: dir > 0 gives out_k = z_{k-1} (the row before, forward), dir < 0
   out_k = z_{k+1}; the position left open is `fill` */
static gr_var *gr__shift(gr_var *z, int axis, int dir, double fill) {
    gr_var *base;
    if (!z) return NULL;
    base = gr__fill_like(z, z->dtype, fill);
    if (dir > 0) return gr_set_subtensor(gr_slice(base, axis, 1, GR_OPEN, 1), gr_slice(z, axis, 0, -1, 1));
    return gr_set_subtensor(gr_slice(base, axis, 0, -1, 1), gr_slice(z, axis, 1, GR_OPEN, 1));
}

/* CumProd, y_k = prod_{i<=k} x_i. With E the exclusive product (E_k = prod_{i<k} x_i = y_{k-1}):
     dy_k/dx_i = E_i prod_{i<j<=k} x_j  (k >= i), no division anywhere, so zeros are fine:
     gradient  g_x = E * S,  S_i = g_i + x_{i+1} S_{i+1}   = E * LinScan(x, g, reverse)
     R-op      r_k = x_k r_{k-1} + E_k v_k                 = LinScan(x, E * v, forward) */
static gr_status gr__CumProd_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0];
    int axis = gr__adp(node)->axis;
    if (!gr__is_float(gr__out(node)[0]->dtype)) ig[0] = gr__zeros_grad(x);
    else ig[0] = gr_mul(gr__shift(gr__out(node)[0], axis, 1, 1.0), gr__linscan(x, og[0], axis, 1));
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__CumProd_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    int axis = gr__adp(node)->axis;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) || !gr__is_float(gr__out(node)[0]->dtype)) return GR_OK;
    orop[0] = gr__linscan(gr__in(node)[0], gr_mul(gr__shift(gr__out(node)[0], axis, 1, 1.0), ev[0]), axis, 0);
    return orop[0] ? GR_OK : node->graph->status;
}

/* LinScan, s = L(a, b). With prev(z)_k = z_{k-1} (0 at the start) and next(z)_k = z_{k+1} (0 at
   the end):
     forward  ds = L(a, da prev(s) + db);          gradient: l = L'(a, g), g_b = l, g_a = l prev(s)
     reverse  ds = L'(a, next(da s) + db);         gradient: m = L(a, g),  g_b = m, g_a = prev(m) s
   (L' the reverse scan), so its derivatives are LinScans again and differentiate further. */
static gr_status gr__LinScan_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *a = gr__in(node)[0], *s = gr__out(node)[0], *l;
    const gr__axdir_params *p = gr__adp(node);
    l = gr__linscan(a, og[0], p->axis, !p->reverse);
    ig[1] = l;
    ig[0] = p->reverse ? gr_mul(gr__shift(l, p->axis, 1, 0.0), s) : gr_mul(l, gr__shift(s, p->axis, 1, 0.0));
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__LinScan_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *a = gr__in(node)[0], *s = gr__out(node)[0], *w = NULL;
    const gr__axdir_params *p = gr__adp(node);
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) && gr_is_disconnected(ev[1])) return GR_OK;
    if (!gr_is_disconnected(ev[0]))
        w = p->reverse ? gr__shift(gr_mul(ev[0], s), p->axis, -1, 0.0) : gr_mul(ev[0], gr__shift(s, p->axis, 1, 0.0));
    if (!gr_is_disconnected(ev[1])) w = w ? gr_add(w, ev[1]) : ev[1];
    orop[0] = gr__linscan(a, w, p->axis, p->reverse);
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- rewrite rules (src/rewrite.h) ------------------------------------------------------------------ */

/* Diff's signature: the other axes keep their symbols; its axis is the input's with one row
   trimmed off, the length of x[1:] in every call (a static length is the static type's) */
static void gr__Diff_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    int32_t s[GR_MAX_NDIM];
    int axis = gr__adp(node)->axis, i;
    gr__sig_copy(rw, gr__in(node)[0], s);
    for (i = 0; i < gr__in(node)[0]->ndim; i++)
        if (i != axis) out[i] = s[i];
        else if (s[i] >= 0) out[i] = gr__sig_trimmed(rw, s[i], 1);
}

/* ---- batching: the axis moves one to the right; an operand without the batch axis is
   broadcast to the batched one's shape (LinScan's operands share one shape) -------------------- */

static gr_status gr__axdir_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    const gr__axdir_params *p = gr__adp(node);
    gr_var *xs[2];
    int i, lead = 0;
    if (gr__in(node)[0]->ndim + 1 > GR_MAX_NDIM) return gr__map_batch(node, in, batched, out);
    while (lead < node->n_in && !batched[lead]) lead++;
    for (i = 0; i < node->n_in; i++) {
        xs[i] = batched[i] ? in[i] : gr_broadcast_like(in[i], in[lead]);
        if (!xs[i]) return node->graph->status;
    }
    out[0] = gr__axdir_node(node->op, p->axis + 1, p->reverse, node->n_in, xs, node->graph);
    return out[0] ? GR_OK : node->graph->status;
}
#endif /* GR_NO_AXIS */

/* ==== ops/shape.c: generated region; edit ops/shape.c, then run make gradient.h ==== */
/* ops/shape.c: DimShuffle (and transpose), Reshape, BroadcastLike, ReduceLike, ReshapeLike,
   SizeRatio, and outer built from them.

   Shapes: DimShuffle x (d0..dn-1) with pattern p -> (d_p0, ...), GR_NEWAXIS gives 1;
           Reshape x -> the given shape (one -1 inferred); BroadcastLike x -> shape(ref);
           ReduceLike x -> shape(ref) (x summed over the axes ref broadcasts along; bools as I64). */

/* ---- strided copy: dst (contiguous, shape) from src with element strides st ---------------- */

static void gr__strided_copy(size_t es, int nd, const int64_t *shape, const int64_t *st, const char *src, char *dst) {
    int64_t idx[GR_MAX_NDIM], total = 1, n, r, rows;
    int i;
    for (i = 0; i < nd; i++) total *= shape[i];
    if (total == 0) return;
    if (nd == 0) { memcpy(dst, src, es); return; }
    if (nd >= 2 && st[nd - 1] != 1 && st[nd - 2] == 1) {
        /* an inner transpose: copy 32x32 tiles so both sides stay in cache */
        int64_t R = shape[nd - 2], C = shape[nd - 1], outer = total / (R * C), o, bi, bj, ii, jj;
        for (i = 0; i < nd - 2; i++) idx[i] = 0;
        for (o = 0; o < outer; o++) {
            int64_t base = 0;
            for (i = 0; i < nd - 2; i++) base += idx[i] * st[i];
            for (bi = 0; bi < R; bi += 32)
                for (bj = 0; bj < C; bj += 32)
                    for (ii = bi; ii < R && ii < bi + 32; ii++)
                        for (jj = bj; jj < C && jj < bj + 32; jj++)
                            memcpy(dst + (size_t)((o * R + ii) * C + jj) * es,
                                   src + (size_t)(base + ii + jj * st[nd - 1]) * es, es);
            for (i = nd - 3; i >= 0; i--) { if (++idx[i] < shape[i]) break; idx[i] = 0; }
        }
        return;
    }
    n = shape[nd - 1];
    rows = total / n;
    for (i = 0; i < nd; i++) idx[i] = 0;
    for (r = 0; r < rows; r++) {
        int64_t off = 0, j;
        char *d = dst + (size_t)(r * n) * es;
        for (i = 0; i < nd - 1; i++) off += idx[i] * st[i];
        if (st[nd - 1] == 1) memcpy(d, src + (size_t)off * es, (size_t)n * es);
        else if (es == 8) {
            const int64_t *s = (const int64_t *)(const void *)src + off;
            int64_t *dd = (int64_t *)(void *)d, s1 = st[nd - 1];
            for (j = 0; j < n; j++) dd[j] = s[j * s1];
        } else
            for (j = 0; j < n; j++) memcpy(d + (size_t)j * es, src + (size_t)(off + j * st[nd - 1]) * es, es);
        for (i = nd - 2; i >= 0; i--) { if (++idx[i] < shape[i]) break; idx[i] = 0; }
    }
}

/* ---- DimShuffle ------------------------------------------------------------------------------ */

typedef struct gr__dimshuffle_params { int n; int pattern[GR_MAX_NDIM]; } gr__dimshuffle_params;

/* strict: dropping an axis needs a static size of 1 (users' calls); rules pass 0 and the call
   checks the size instead */
static gr_var *gr__dimshuffle(gr_var *x, int n, const int *pattern, int strict) {
    gr__dimshuffle_params p;
    uint32_t seen = 0;
    gr_graph *g;
    int i, identity;
    if (!gr__operands("gr_dimshuffle", 1, &x, &g)) return NULL;
    if (n < 0 || n > GR_MAX_NDIM)
        return gr__fail(g, GR_ERR_VALUE, "gr_dimshuffle: %d output axes for %s (at most %d)", n, gr__d(x).s, GR_MAX_NDIM);
    if (n > 0 && !pattern) return gr__fail(g, GR_ERR_VALUE, "gr_dimshuffle: pattern is NULL for %s", gr__d(x).s);
    memset(&p, 0, sizeof p);
    p.n = n;
    identity = n == x->ndim;
    for (i = 0; i < n; i++) {
        int a = pattern[i];
        if (a == GR_NEWAXIS) { p.pattern[i] = GR_NEWAXIS; identity = 0; continue; }
        if (a < 0 || a >= x->ndim)
            return gr__fail(g, GR_ERR_VALUE, "gr_dimshuffle: axis %d out of range for %s with %d dimensions", a, gr__d(x).s, x->ndim);
        if (seen & (1u << a)) return gr__fail(g, GR_ERR_VALUE, "gr_dimshuffle: axis %d repeated for %s", a, gr__d(x).s);
        seen |= 1u << a;
        p.pattern[i] = a;
        if (a != i) identity = 0;
    }
    for (i = 0; i < x->ndim; i++)
        if (!(seen & (1u << i)) && strict && gr__vshape(x)[i] != 1)
            return gr__fail(g, GR_ERR_VALUE, "gr_dimshuffle: axis %d of %s %s is dropped but its static size is not 1",
                            i, gr__d(x).s, gr__vs(x).s);
    if (identity) return x;
    return gr__node1(g, &gr__op_DimShuffle, &p, sizeof p, 1, &x);
}

GR_API gr_var *gr_dimshuffle(gr_var *x, int n, const int *pattern) { return gr__dimshuffle(x, n, pattern, 1); }

GR_API gr_var *gr_transpose(gr_var *x) {
    int pattern[GR_MAX_NDIM], i;
    gr_graph *g;
    if (!gr__operands("gr_transpose", 1, &x, &g)) return NULL;
    if (x->ndim < 2) return x;
    for (i = 0; i < x->ndim; i++) pattern[i] = x->ndim - 1 - i;
    return gr__dimshuffle(x, x->ndim, pattern, 1);
}

static const gr__dimshuffle_params *gr__dsp(const gr_node *node) { return (const gr__dimshuffle_params *)gr__params(node); }

static gr_status gr__DimShuffle_infer(const gr_node *node, gr_type *out) {
    const gr__dimshuffle_params *p = gr__dsp(node);
    int i;
    out->dtype = (gr_dtype)gr__in(node)[0]->dtype;
    out->ndim = p->n;
    for (i = 0; i < p->n; i++) out->shape[i] = p->pattern[i] < 0 ? 1 : gr__vshape(gr__in(node)[0])[p->pattern[i]];
    return GR_OK;
}
static gr_status gr__DimShuffle_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__dimshuffle_params *p = gr__dsp(node);
    uint32_t seen = 0;
    int i;
    for (i = 0; i < p->n; i++) {
        out[0]->shape[i] = p->pattern[i] < 0 ? 1 : in[0]->shape[p->pattern[i]];
        if (p->pattern[i] >= 0) seen |= 1u << p->pattern[i];
    }
    for (i = 0; i < in[0]->ndim; i++)
        if (!(seen & (1u << i)) && in[0]->shape[i] != 1)
            return gr_node_error(node, GR_ERR_SHAPE, "axis %d of %s is dropped but has size %lld", i,
                                 gr__d(gr__in(node)[0]).s, (long long)in[0]->shape[i]);
    return GR_OK;
}
/* element strides of x seen through the pattern */
static void gr__dimshuffle_strides(const gr__dimshuffle_params *p, const gr_array *x, int64_t *st) {
    int64_t xs[GR_MAX_NDIM], s = 1;
    int i;
    for (i = x->ndim - 1; i >= 0; i--) { xs[i] = s; s *= x->shape[i]; }
    for (i = 0; i < p->n; i++) st[i] = p->pattern[i] < 0 ? 0 : xs[p->pattern[i]];
}
static gr_status gr__DimShuffle_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t st[GR_MAX_NDIM];
    gr__dimshuffle_strides(gr__dsp(node), in[0], st);
    gr__strided_copy(gr__dsize(in[0]->dtype), out[0]->ndim, out[0]->shape, st, (const char *)in[0]->data, (char *)out[0]->data);
    return GR_OK;
}
/* the same memory when the axes of size > 1 keep their order */
static int64_t gr__DimShuffle_alias(const gr_node *node, const gr_array *const *in, const gr_array *out) {
    const gr__dimshuffle_params *p = gr__dsp(node);
    int i, last = -1;
    (void)out;
    for (i = 0; i < p->n; i++) {
        int a = p->pattern[i];
        if (a < 0 || in[0]->shape[a] == 1) continue;
        if (a < last) return -1;
        last = a;
    }
    return 0;
}
static gr_status gr__DimShuffle_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__dimshuffle_params *p = gr__dsp(node);
    int inv[GR_MAX_NDIM], i, nd = gr__in(node)[0]->ndim;
    for (i = 0; i < nd; i++) inv[i] = GR_NEWAXIS;
    for (i = 0; i < p->n; i++) if (p->pattern[i] >= 0) inv[p->pattern[i]] = i;
    ig[0] = gr__dimshuffle(og[0], nd, inv, 0);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__DimShuffle_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__dimshuffle_params *p = gr__dsp(node);
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__dimshuffle(ev[0], p->n, p->pattern, 0);
    return orop[0] ? GR_OK : node->graph->status;
}

/* its signature: the input's axes in the pattern's order, broadcastable ones added */
static void gr__DimShuffle_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    const gr__dimshuffle_params *p = gr__dsp(node);
    int32_t s[GR_MAX_NDIM];
    int i;
    gr__sig_copy(rw, gr__in(node)[0], s);
    for (i = 0; i < p->n; i++) out[i] = p->pattern[i] < 0 ? GR__SIG_ONE : s[p->pattern[i]];
}
/* a DimShuffle of a DimShuffle is one (none when they cancel); of zeros, zeros */
static gr_var *gr__DimShuffle_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    const gr__dimshuffle_params *p = (const gr__dimshuffle_params *)params;
    gr_var *x = in[0], *z, *ref;
    if (gr__owner(x) && gr__owner(x)->op == op) {                        /* compose the two patterns */
        const gr__dimshuffle_params *q = gr__dsp(gr__owner(x));
        gr__dimshuffle_params c;
        int i, identity = p->n == gr__in(gr__owner(x))[0]->ndim;
        memset(&c, 0, sizeof c);
        c.n = p->n;
        for (i = 0; i < p->n; i++) {
            c.pattern[i] = p->pattern[i] < 0 ? GR_NEWAXIS : q->pattern[p->pattern[i]];
            if (c.pattern[i] != i) identity = 0;
        }
        if (identity) return gr__replaced(done, gr__in(gr__owner(x))[0]);
        return gr__replaced(done, gr__rw1(rw, op, &c, sizeof c, 1, gr__in(gr__owner(x))));
    }
    if (!gr__rw_zeros(x, &z) || !z) return NULL;                          /* (a 0-d zero: as it is) */
    if (!(ref = gr__rw1(rw, op, params, sizeof *p, 1, &z))) return gr__replaced(done, NULL);
    return gr__replaced(done, gr__rw_zero_fill(rw, x->dtype, ref));
}

/* ---- Reshape ------------------------------------------------------------------------------- */

typedef struct gr__reshape_params { int ndim; int64_t shape[GR_MAX_NDIM]; } gr__reshape_params;

/* fills out[] from the requested shape and the element count (-1 if unknown); 0 when they cannot
   agree */
static int gr__reshape_resolve(const gr__reshape_params *p, int64_t size, int64_t *out) {
    int64_t known = 1;
    int i, free_axis = -1, zero = 0, over = 0;
    for (i = 0; i < p->ndim; i++) {
        out[i] = p->shape[i];
        if (p->shape[i] == -1) free_axis = i;
        else if (p->shape[i] == 0) zero = 1;
        else if (known > INT64_MAX / p->shape[i]) over = 1;
        else known *= p->shape[i];
    }
    if (zero) known = 0;
    if (size < 0) return 1;
    if (over && !zero) return 0;                     /* more elements than any array can have */
    if (free_axis >= 0) {
        if (known == 0 || size % known != 0) return 0;
        out[free_axis] = size / known;
        return 1;
    }
    return known == size;
}

GR_API gr_var *gr_reshape(gr_var *x, int ndim, const int64_t *shape) {
    gr__reshape_params p;
    int64_t tmp[GR_MAX_NDIM];
    gr_graph *g;
    int i, frees = 0;
    char buf[200];
    if (!gr__operands("gr_reshape", 1, &x, &g)) return NULL;
    if (ndim < 0 || ndim > GR_MAX_NDIM) return gr__fail(g, GR_ERR_VALUE, "gr_reshape: ndim %d out of range for %s", ndim, gr__d(x).s);
    if (ndim > 0 && !shape) return gr__fail(g, GR_ERR_VALUE, "gr_reshape: shape is NULL for %s", gr__d(x).s);
    memset(&p, 0, sizeof p);
    p.ndim = ndim;
    for (i = 0; i < ndim; i++) {
        if (shape[i] < -1) return gr__fail(g, GR_ERR_VALUE, "gr_reshape: negative size %lld for %s", (long long)shape[i], gr__d(x).s);
        if (shape[i] == -1) frees++;
        p.shape[i] = shape[i];
    }
    if (frees > 1) return gr__fail(g, GR_ERR_VALUE, "gr_reshape: more than one -1 in the new shape of %s", gr__d(x).s);
    if (gr__static_overflows(ndim, p.shape))         /* also keeps gr__reshape_resolve's product in range */
        return gr__fail(g, GR_ERR_VALUE, "gr_reshape: the element count of the new shape %s of %s overflows",
                        gr__shape_str(buf, sizeof buf, ndim, p.shape), gr__d(x).s);
    if (gr__static_known(x) && !gr__reshape_resolve(&p, gr__shape_size(x->ndim, gr__vshape(x)), tmp))
        return gr__fail(g, GR_ERR_SHAPE, "gr_reshape: cannot reshape %s of shape %s to %s", gr__d(x).s, gr__vs(x).s,
                        gr__shape_str(buf, sizeof buf, ndim, p.shape));
    return gr__node1(g, &gr__op_Reshape, &p, sizeof p, 1, &x);
}

GR_API gr_var *gr_flatten(gr_var *x) {
    int64_t m1 = -1;
    return gr_reshape(x, 1, &m1);
}

static gr_status gr__Reshape_infer(const gr_node *node, gr_type *out) {
    const gr__reshape_params *p = (const gr__reshape_params *)gr__params(node);
    gr_var *x = gr__in(node)[0];
    out->dtype = (gr_dtype)x->dtype;
    out->ndim = p->ndim;
    gr__reshape_resolve(p, gr__static_known(x) ? gr__shape_size(x->ndim, gr__vshape(x)) : -1, out->shape);
    return GR_OK;
}
static gr_status gr__Reshape_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__reshape_params *p = (const gr__reshape_params *)gr__params(node);
    if (!gr__reshape_resolve(p, in[0]->size, out[0]->shape)) {
        char buf[200];
        return gr_node_error(node, GR_ERR_SHAPE, "cannot reshape %s of shape %s to %s", gr__d(gr__in(node)[0]).s, gr__as(in[0]).s,
                             gr__shape_str(buf, sizeof buf, p->ndim, p->shape));
    }
    return GR_OK;
}
static gr_status gr__Reshape_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    if (in[0]->size) memcpy(out[0]->data, in[0]->data, (size_t)in[0]->size * gr__dsize(in[0]->dtype));
    return GR_OK;
}
static gr_status gr__Reshape_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr_reshape_like(og[0], gr__in(node)[0]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Reshape_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__node1(node->graph, &gr__op_Reshape, gr__params(node), node->params_size, 1, &ev[0]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* a Reshape of a Reshape is one */
static gr_var *gr__Reshape_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    const gr_node *n = gr__owner(in[0]);
    if (!n || n->op != op) return NULL;
    return gr__replaced(done, gr__rw1(rw, op, params, sizeof(gr__reshape_params), 1, gr__in(n)));
}

/* ---- ReshapeLike: a's data in ref's shape ---------------------------------------------------- */

GR_API gr_var *gr_reshape_like(gr_var *x, gr_var *ref) {
    gr_var *args[2];
    gr_graph *g;
    args[0] = x; args[1] = ref;
    if (!gr__operands("gr_reshape_like", 2, args, &g)) return NULL;
    if (gr__static_known(x) && gr__static_known(ref) &&
        gr__shape_size(x->ndim, gr__vshape(x)) != gr__shape_size(ref->ndim, gr__vshape(ref)))
        return gr__fail(g, GR_ERR_SHAPE, "gr_reshape_like: %s %s and %s %s differ in size", gr__d(x).s, gr__vs(x).s,
                        gr__d(ref).s, gr__vs(ref).s);
    return gr__node1(g, &gr__op_ReshapeLike, NULL, 0, 2, args);
}

static gr_status gr__ReshapeLike_infer(const gr_node *node, gr_type *out) {
    gr_var_type(gr__in(node)[1], out);
    out->dtype = (gr_dtype)gr__in(node)[0]->dtype;
    return GR_OK;
}
static gr_status gr__ReshapeLike_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    if (in[0]->size != in[1]->size)
        return gr_node_error(node, GR_ERR_SHAPE, "%s of shape %s does not have the %lld elements of %s", gr__d(gr__in(node)[0]).s,
                             gr__as(in[0]).s, (long long)in[1]->size, gr__d(gr__in(node)[1]).s);
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[i] = in[1]->shape[i];
    return GR_OK;
}
static gr_status gr__ReshapeLike_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    return gr__Reshape_perform(node, in, out);
}
static gr_status gr__ReshapeLike_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *args[2];
    args[0] = og[0]; args[1] = gr__in(node)[0];
    ig[0] = gr__node1(node->graph, &gr__op_ReshapeLike, NULL, 0, 2, args);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__ReshapeLike_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *args[2];
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    args[0] = ev[0]; args[1] = gr__in(node)[1];
    orop[0] = gr__node1(node->graph, &gr__op_ReshapeLike, NULL, 0, 2, args);
    return orop[0] ? GR_OK : node->graph->status;
}

/* the signature of BroadcastLike, ReduceLike and ReshapeLike: ref's (input 1), when as many axes */
static void gr__like1_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    if (gr__in(node)[1]->ndim == gr__out(node)[0]->ndim) gr__sig_copy(rw, gr__in(node)[1], out);
}
/* zeros in ref's shape are zeros filled to it; x already in ref's shape is x */
static gr_var *gr__ReshapeLike_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    gr_var *z;
    (void)op; (void)params;
    if (gr__rw_zeros(in[0], &z)) return gr__replaced(done, gr__rw_zero_fill(rw, in[0]->dtype, in[1]));
    if (in[0]->ndim == in[1]->ndim && gr__sig_same(rw, in[0], in[1])) return gr__replaced(done, in[0]);
    return NULL;
}

/* ---- BroadcastLike ----------------------------------------------------------------------------- */

GR_API gr_var *gr_broadcast_like(gr_var *x, gr_var *ref) {
    gr_var *args[2];
    gr_graph *g;
    int i, off;
    args[0] = x; args[1] = ref;
    if (!gr__operands("gr_broadcast_like", 2, args, &g)) return NULL;
    off = ref->ndim - x->ndim;
    if (off < 0)
        return gr__fail(g, GR_ERR_SHAPE, "gr_broadcast_like: %s %s has more dimensions than %s %s", gr__d(x).s, gr__vs(x).s,
                        gr__d(ref).s, gr__vs(ref).s);
    for (i = 0; i < x->ndim; i++) {
        int64_t a = gr__vshape(x)[i], b = gr__vshape(ref)[off + i];
        if (a >= 0 && a != 1 && b >= 0 && a != b)
            return gr__fail(g, GR_ERR_SHAPE, "gr_broadcast_like: %s %s does not broadcast to %s %s", gr__d(x).s, gr__vs(x).s,
                            gr__d(ref).s, gr__vs(ref).s);
    }
    return gr__node1(g, &gr__op_BroadcastLike, NULL, 0, 2, args);
}

static gr_status gr__BroadcastLike_infer(const gr_node *node, gr_type *out) {
    gr_var *x = gr__in(node)[0], *ref = gr__in(node)[1];
    int i, off = ref->ndim - x->ndim;
    gr_var_type(ref, out);
    out->dtype = (gr_dtype)x->dtype;
    for (i = 0; i < x->ndim; i++)
        if (out->shape[off + i] < 0 && gr__vshape(x)[i] > 1) out->shape[off + i] = gr__vshape(x)[i];
    return GR_OK;
}
/* x's shape broadcasts to target's (right-aligned) */
static int gr__broadcasts_to(const gr_array *x, const gr_array *target) {
    int i, off = target->ndim - x->ndim;
    if (off < 0) return 0;
    for (i = 0; i < x->ndim; i++)
        if (x->shape[i] != 1 && x->shape[i] != target->shape[off + i]) return 0;
    return 1;
}
static gr_status gr__BroadcastLike_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    if (!gr__broadcasts_to(in[0], in[1]))
        return gr_node_error(node, GR_ERR_SHAPE, "%s of shape %s does not broadcast to shape %s of %s", gr__d(gr__in(node)[0]).s,
                             gr__as(in[0]).s, gr__as(in[1]).s, gr__d(gr__in(node)[1]).s);
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[i] = in[1]->shape[i];
    return GR_OK;
}
/* out = in broadcast to out's shape */
static void gr__broadcast_copy(const gr_array *in, gr_array *out) {
    gr__bloop L;
    int64_t idx[GR_MAX_NDIM], n, rows, r, j;
    size_t es = gr__dsize(out->dtype);
    int i;
    if (out->size == 0) return;
    gr__bloop_init(&L, out, 1, &in);
    if (L.nd == 0) { memcpy(out->data, in->data, es); return; }
    n = L.shape[L.nd - 1];
    rows = out->size / n;
    for (i = 0; i < L.nd; i++) idx[i] = 0;
    for (r = 0; r < rows; r++) {
        int64_t off = 0;
        const char *s;
        char *d = (char *)out->data + (size_t)(r * n) * es;
        for (i = 0; i < L.nd - 1; i++) off += idx[i] * L.st[1][i];
        s = (const char *)in->data + off;
        if (L.st[1][L.nd - 1]) memcpy(d, s, (size_t)n * es);
        else if (es == 8) { int64_t v; memcpy(&v, s, 8); for (j = 0; j < n; j++) ((int64_t *)(void *)d)[j] = v; }
        else if (es == 4) { int32_t v; memcpy(&v, s, 4); for (j = 0; j < n; j++) ((int32_t *)(void *)d)[j] = v; }
        else memset(d, *(const unsigned char *)s, (size_t)n);
        for (i = L.nd - 2; i >= 0; i--) { if (++idx[i] < L.shape[i]) break; idx[i] = 0; }
    }
}
static gr_status gr__BroadcastLike_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    gr__broadcast_copy(in[0], out[0]);
    return GR_OK;
}
static gr_status gr__BroadcastLike_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr_reduce_like(og[0], gr__in(node)[0]);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__BroadcastLike_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr_broadcast_like(ev[0], gr__in(node)[1]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* the fill the rewrites make: x broadcast to the shape of ref (src/rewrite.h) */
static gr_var *gr__rw_fill(gr__rewriter *rw, gr_var *x, gr_var *ref) {
    gr_var *args[2];
    args[0] = x; args[1] = ref;
    return gr__rw1(rw, &gr__op_BroadcastLike, NULL, 0, 2, args);
}
/* filled zeros (not a 0-d zero: that is the fill itself) are zeros filled to ref; x already in ref's
   shape is x */
static gr_var *gr__BroadcastLike_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    gr_var *z;
    (void)op; (void)params;
    if (gr__rw_zeros(in[0], &z) && z) return gr__replaced(done, gr__rw_zero_fill(rw, in[0]->dtype, in[1]));
    if (gr__sig_same(rw, in[0], in[1])) return gr__replaced(done, in[0]);
    return NULL;
}

/* ---- ReduceLike -------------------------------------------------------------------------------- */

GR_API gr_var *gr_reduce_like(gr_var *x, gr_var *ref) {
    gr_var *args[2];
    gr_graph *g;
    int i, off;
    args[0] = x; args[1] = ref;
    if (!gr__operands("gr_reduce_like", 2, args, &g)) return NULL;
    off = x->ndim - ref->ndim;
    if (off < 0)
        return gr__fail(g, GR_ERR_SHAPE, "gr_reduce_like: %s %s has fewer dimensions than %s %s", gr__d(x).s, gr__vs(x).s,
                        gr__d(ref).s, gr__vs(ref).s);
    for (i = 0; i < ref->ndim; i++) {
        int64_t a = gr__vshape(ref)[i], b = gr__vshape(x)[off + i];
        if (a >= 0 && a != 1 && b >= 0 && a != b)
            return gr__fail(g, GR_ERR_SHAPE, "gr_reduce_like: %s %s does not broadcast to %s %s", gr__d(ref).s, gr__vs(ref).s,
                            gr__d(x).s, gr__vs(x).s);
    }
    if (x->dtype == GR_BOOL) {           /* bools are counted, as by gr_sum (the kernels sum into I64 or floats) */
        args[0] = gr_cast(x, GR_I64);
        if (!args[0]) return NULL;
    }
    return gr__node1(g, &gr__op_ReduceLike, NULL, 0, 2, args);
}

static gr_status gr__ReduceLike_infer(const gr_node *node, gr_type *out) {
    gr_var_type(gr__in(node)[1], out);
    out->dtype = (gr_dtype)gr__in(node)[0]->dtype;
    return GR_OK;
}
static gr_status gr__ReduceLike_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    if (!gr__broadcasts_to(in[1], in[0]))
        return gr_node_error(node, GR_ERR_SHAPE, "shape %s of %s does not broadcast to shape %s of %s", gr__as(in[1]).s,
                             gr__d(gr__in(node)[1]).s, gr__as(in[0]).s, gr__d(gr__in(node)[0]).s);
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[i] = in[1]->shape[i];
    return GR_OK;
}
static gr_status gr__ReduceLike_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[0], *ref = in[1];
    uint32_t mask = 0;
    int i, off = x->ndim - ref->ndim;
    (void)node;
    for (i = 0; i < x->ndim; i++)
        if (i < off || (ref->shape[i - off] == 1 && x->shape[i] != 1)) mask |= 1u << i;
    gr__reduce_sum_into(x, mask, out[0]);
    return GR_OK;
}
static gr_status gr__ReduceLike_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr_broadcast_like(og[0], gr__in(node)[0]);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__ReduceLike_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr_reduce_like(ev[0], gr__in(node)[1]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* zeros summed down are zeros in ref's shape; x already in ref's shape is x */
static gr_var *gr__ReduceLike_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    gr_var *z;
    (void)op; (void)params;
    if (gr__rw_zeros(in[0], &z)) return gr__replaced(done, gr__rw_zero_fill(rw, in[0]->dtype, in[1]));
    if (gr__sig_same(rw, in[0], in[1])) return gr__replaced(done, in[0]);
    return NULL;
}

/* ---- SizeRatio: size(a) / size(b) as a 0-d float (a constant of the shapes only) ---------- */

typedef struct gr__size_ratio_params { int dtype; } gr__size_ratio_params;

static gr_var *gr__size_ratio(gr_var *a, gr_var *b, int dtype) {
    gr__size_ratio_params p;
    gr_var *args[2];
    gr_graph *g;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_size_ratio", 2, args, &g)) return NULL;
    if (!gr__is_float(dtype)) return gr__fail(g, GR_ERR_VALUE, "gr_size_ratio: the dtype must be a float dtype");
    memset(&p, 0, sizeof p);
    p.dtype = dtype;
    return gr__node1(g, &gr__op_SizeRatio, &p, sizeof p, 2, args);
}
GR_API gr_var *gr_size_ratio(gr_var *a, gr_var *b, gr_dtype dtype) { return gr__size_ratio(a, b, (int)dtype); }

static gr_status gr__SizeRatio_infer(const gr_node *node, gr_type *out) {
    out->dtype = (gr_dtype)((const gr__size_ratio_params *)gr__params(node))->dtype;
    out->ndim = 0;
    return GR_OK;
}
static gr_status gr__SizeRatio_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node; (void)in; (void)out;
    return GR_OK;
}
static gr_status gr__SizeRatio_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    gr__store(out[0]->dtype, out[0]->data, 0, in[1]->size ? (double)in[0]->size / (double)in[1]->size : 0.0);
    return GR_OK;
}
static gr_status gr__SizeRatio_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    (void)og;
    ig[0] = gr_disconnected_like(gr__in(node)[0]);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__SizeRatio_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node; (void)ev;
    orop[0] = NULL;                      /* depends on shapes only: no tangent */
    return GR_OK;
}

/* ---- outer ------------------------------------------------------------------------------------- */

GR_API gr_var *gr_outer(gr_var *a, gr_var *b) {
    static const int col[2] = { 0, GR_NEWAXIS }, row[2] = { GR_NEWAXIS, 0 };
    gr_var *args[2];
    gr_graph *g;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_outer", 2, args, &g)) return NULL;
    if (a->ndim != 1) a = gr_flatten(a);
    if (b->ndim != 1) b = gr_flatten(b);
    return gr_mul(gr__dimshuffle(a, 2, col, 0), gr__dimshuffle(b, 2, row, 0));
}

#ifndef GR_NO_JOIN                  /* ops/table.h, op families: to zeros_like, then Tile to the end */
/* ==== joining, splitting, broadcasting, tiling ===================================================

   Join, Split, BroadcastTo, Tile and Untile; the builders gr_concatenate, gr_stack, gr_split,
   gr_broadcast_to, gr_tile, and gr_zeros_like, gr_ones_like, gr_arange built from other ops.

   Shapes (Join and Split keep their axis counted from the end, so that a leading batch axis added
   for a Jacobian leaves it alone):
     Join         x_i (*pre, n_i, *post) -> (*pre, sum n_i, *post), any number of operands
     Split        x (*pre, n, *post) -> k outputs (*pre, s_j, *post) with sum s_j = n, any k; the
                  sizes s_j follow the params (gr_split), or (Join's gradient) are the axis lengths
                  of k reference inputs x_1..x_k that give only their shapes
     BroadcastTo  x -> the given shape, NumPy's broadcasting (x right-aligned against it)
     Tile         x (s) by reps (r), both left-padded with 1s to m = max(len r, ndim x) axes ->
                  (r_0 s_0, ..., r_m-1 s_m-1)
     Untile       g (*b, r_0 s_0, ...) with ref (s) -> (*b, *s): g summed over its tiles, the
                  axes Tile prepended summed away: the adjoint of Tile (b: leading batch axes)
   zeros_like and ones_like are BroadcastLike of a constant (the operand gives only its shape);
   arange is a constant computed when it is built.

   Split's row says -1 outputs, as Fused's: a node has as many as it has pieces (gr__make_node_n).
   Its flag CONN0 is its connection pattern for any arity: input 0 reaches every output, the
   references none. */

static gr_status gr__map_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out);

typedef struct gr__join_params { int axis; } gr__join_params;     /* axis - ndim: from the end */

/* Split's parameters; with refs == 0 the k sizes (int64_t) follow them */
typedef struct gr__split_params {
    int axis;                            /* axis - ndim: from the end */
    int refs;                            /* 1: the sizes are the axis lengths of inputs 1..k */
} gr__split_params;

/* ---- building ---------------------------------------------------------------------------------- */

/* one Join node over n operands of one dtype and ndim; one operand is itself */
static gr_var *gr__join_node(gr_graph *g, int n, gr_var *const *xs, int axis) {
    gr__join_params p;
    if (n == 1) return xs[0];
    memset(&p, 0, sizeof p);
    p.axis = axis;
    return gr__node1(g, &gr__op_Join, &p, sizeof p, n, xs);
}

/* the dtype n joined operands take: bools stay bools, anything else promotes as in elementwise ops */
static int gr__join_dtype(int n, gr_var *const *xs) {
    int i;
    for (i = 0; i < n; i++) if (xs[i]->dtype != GR_BOOL || gr__is_weak(xs[i])) return gr__promote(n, xs);
    return GR_BOOL;
}

/* the operands of gr_concatenate / gr_stack brought to one dtype (and, for gr_stack, a new axis
   at `insert`), then joined along axis a of the result */
static gr_var *gr__join_build(gr_graph *g, int n, gr_var *const *xs, int insert, int a, int nd_out) {
    gr_var *stack_buf[16], **cs = stack_buf, *y = NULL;
    int T = gr__join_dtype(n, xs), i;
    if (n > 16) {
        cs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)n);
        if (!cs) return gr__fail(g, GR_ERR_NOMEM, "out of memory (%d operands to join)", n);
    }
    for (i = 0; i < n; i++) {
        cs[i] = gr__coerce(xs[i], T);
        if (cs[i] && insert >= 0) {
            int pattern[GR_MAX_NDIM], d, m = 0;
            for (d = 0; d < nd_out - 1; d++) {
                if (d == insert) pattern[m++] = GR_NEWAXIS;
                pattern[m++] = d;
            }
            if (insert == nd_out - 1) pattern[m++] = GR_NEWAXIS;
            cs[i] = gr__dimshuffle(cs[i], nd_out, pattern, 0);
        }
        if (!cs[i]) goto done;
    }
    y = gr__join_node(g, n, cs, a - nd_out);
done:
    if (cs != stack_buf) GR_FREE(cs);
    return y;
}

/* common checks of gr_concatenate and gr_stack: same ndim (else GR_ERR_TYPE) and static shapes
   that agree outside `skip` (-1: everywhere; else GR_ERR_SHAPE) */
static int gr__join_check(const char *fname, gr_graph *g, int n, gr_var *const *xs, int skip) {
    int i, d, nd = xs[0]->ndim;
    for (i = 1; i < n; i++)
        if (xs[i]->ndim != nd) {
            gr__error(g, GR_ERR_TYPE, "%s: operand %d %s has %d dimensions, operand 0 %s has %d", fname, i, gr__d(xs[i]).s,
                      xs[i]->ndim, gr__d(xs[0]).s, nd);
            return 0;
        }
    for (d = 0; d < nd; d++) {
        int known = -1;                              /* the first operand whose size along d is known */
        if (d == skip) continue;
        for (i = 0; i < n; i++) {
            if (gr__vshape(xs[i])[d] < 0) continue;
            if (known < 0) { known = i; continue; }
            if (gr__vshape(xs[i])[d] != gr__vshape(xs[known])[d]) {
                gr__error(g, GR_ERR_SHAPE, "%s: operand %d %s of shape %s and operand %d %s of shape %s differ along axis %d%s", fname,
                          known, gr__d(xs[known]).s, gr__vs(xs[known]).s, i, gr__d(xs[i]).s, gr__vs(xs[i]).s, d,
                          skip >= 0 ? " (only the joining axis may differ)" : "");
                return 0;
            }
        }
    }
    return 1;
}

GR_API gr_var *gr_concatenate(int n, gr_var *const *xs, int axis) {
    gr_graph *g;
    int a, nd;
    if (n < 1 || !xs) return NULL;                  /* no operand: no graph to report to */
    if (!gr__operands("gr_concatenate", n, xs, &g)) return NULL;
    nd = xs[0]->ndim;
    if (nd == 0) return gr__fail(g, GR_ERR_VALUE, "gr_concatenate: operand 0 %s is 0-d and has no axis to join along", gr__d(xs[0]).s);
    a = gr__axis(axis, nd);
    if (a < 0) return gr__fail(g, GR_ERR_VALUE, "gr_concatenate: axis %d out of range for %s with %d dimensions", axis, gr__d(xs[0]).s, nd);
    if (!gr__join_check("gr_concatenate", g, n, xs, a)) return NULL;
    return gr__join_build(g, n, xs, -1, a, nd);
}

GR_API gr_var *gr_stack(int n, gr_var *const *xs, int axis) {
    gr_graph *g;
    int a, nd;
    if (n < 1 || !xs) return NULL;                  /* no operand: no graph to report to */
    if (!gr__operands("gr_stack", n, xs, &g)) return NULL;
    nd = xs[0]->ndim;
    if (nd + 1 > GR_MAX_NDIM)
        return gr__fail(g, GR_ERR_VALUE, "gr_stack: the result would have %d dimensions (at most %d)", nd + 1, GR_MAX_NDIM);
    a = gr__axis(axis, nd + 1);
    if (a < 0) return gr__fail(g, GR_ERR_VALUE, "gr_stack: axis %d out of range for a result with %d dimensions", axis, nd + 1);
    if (!gr__join_check("gr_stack", g, n, xs, -1)) return NULL;
    return gr__join_build(g, n, xs, a, a, nd + 1);
}

/* one Split node: the n pieces of x with sizes known when built (their sum already checked) */
static gr_status gr__split_static(gr_graph *g, gr_var *x, int axis, int n, const int64_t *sizes, gr_var **out) {
    int64_t stack_buf[1 + 16], *buf = stack_buf;      /* the parameters, then the sizes */
    size_t psize = sizeof(int64_t) * (size_t)(1 + n);
    gr__split_params p;
    gr_status st;
    if (n > 16 && !(buf = (int64_t *)GR_MALLOC(psize)))
        return gr__error(g, GR_ERR_NOMEM, "gr_split: out of memory (%d pieces of %s)", n, gr__d(x).s);
    memset(&p, 0, sizeof p);
    p.axis = axis;
    memcpy(buf, &p, sizeof p);
    memcpy(buf + 1, sizes, sizeof(int64_t) * (size_t)n);
    st = gr__make_node_n(g, &gr__op_Split, buf, psize, 1, &x, n, out);
    if (buf != stack_buf) GR_FREE(buf);
    return st;
}

GR_API gr_status gr_split(gr_var *x, int axis, int n, const int64_t *sizes, gr_var **out) {
    gr_graph *g;
    int64_t total = 0;
    int i, a;
    gr_status st;
    if (out) for (i = 0; i < n; i++) out[i] = NULL;
    if (!gr__operands("gr_split", 1, &x, &g)) return g && g->status != GR_OK ? g->status : GR_ERR_VALUE;
    if (!out) return gr__error(g, GR_ERR_VALUE, "gr_split: out is NULL (splitting %s)", gr__d(x).s);
    if (n < 1) return gr__error(g, GR_ERR_VALUE, "gr_split: %d pieces of %s (at least 1)", n, gr__d(x).s);
    if (!sizes) return gr__error(g, GR_ERR_VALUE, "gr_split: sizes is NULL (splitting %s)", gr__d(x).s);
    if (x->ndim == 0) return gr__error(g, GR_ERR_VALUE, "gr_split: %s is 0-d and has no axis to split", gr__d(x).s);
    a = gr__axis(axis, x->ndim);
    if (a < 0) return gr__error(g, GR_ERR_VALUE, "gr_split: axis %d out of range for %s with %d dimensions", axis, gr__d(x).s, x->ndim);
    for (i = 0; i < n; i++) {
        if (sizes[i] < 0) return gr__error(g, GR_ERR_VALUE, "gr_split: negative size %lld of piece %d of %s", (long long)sizes[i], i, gr__d(x).s);
        if (total > INT64_MAX - sizes[i]) return gr__error(g, GR_ERR_VALUE, "gr_split: the sizes of the pieces of %s overflow", gr__d(x).s);
        total += sizes[i];
    }
    if (gr__vshape(x)[a] >= 0 && total != gr__vshape(x)[a])
        return gr__error(g, GR_ERR_SHAPE, "gr_split: the %d sizes add up to %lld, but axis %d of %s of shape %s has length %lld", n,
                         (long long)total, a, gr__d(x).s, gr__vs(x).s, (long long)gr__vshape(x)[a]);
    st = gr__split_static(g, x, a - x->ndim, n, sizes, out);
    if (st != GR_OK) {
        for (i = 0; i < n; i++) out[i] = NULL;
        return g->status != GR_OK ? g->status : st;
    }
    return GR_OK;
}

/* pieces of x along axis (from the end) shaped like refs[0..k) there (Join's gradient) */
static gr_status gr__split_like(gr_graph *g, gr_var *x, int axis, int k, gr_var *const *refs, gr_var **out) {
    gr__split_params p;
    gr_var *stack_buf[1 + 16], **ins = stack_buf;
    gr_status st;
    int j;
    if (k > 16 && !(ins = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(k + 1))))
        return gr__error(g, GR_ERR_NOMEM, "Join: out of memory (the gradient of %d operands)", k);
    memset(&p, 0, sizeof p);
    p.axis = axis;
    p.refs = 1;
    ins[0] = x;
    for (j = 0; j < k; j++) ins[j + 1] = refs[j];
    st = gr__make_node_n(g, &gr__op_Split, &p, sizeof p, k + 1, ins, k, out);
    if (ins != stack_buf) GR_FREE(ins);
    return st;
}

/* ---- Join ---------------------------------------------------------------------------------------- */

static gr_status gr__Join_infer(const gr_node *node, gr_type *out) {
    const gr__join_params *p = (const gr__join_params *)gr__params(node);
    gr_var *x0 = gr__in(node)[0];
    int nd = x0->ndim, a = nd + p->axis, i, d;
    int64_t total = 0;
    if (a < 0 || a >= nd) return gr__error(node->graph, GR_ERR_VALUE, "Join: axis %d out of range for %s with %d dimensions", a, gr__d(x0).s, nd);
    gr_var_type(x0, out);
    for (i = 0; i < node->n_in; i++) {
        gr_var *x = gr__in(node)[i];
        if (x->dtype != x0->dtype || x->ndim != nd)
            return gr__error(node->graph, GR_ERR_TYPE, "Join: operand %d %s is %s with %d dimensions, operand 0 %s is %s with %d", i,
                             gr__d(x).s, gr_dtype_name((gr_dtype)x->dtype), x->ndim, gr__d(x0).s, gr_dtype_name((gr_dtype)x0->dtype), nd);
        for (d = 0; d < nd; d++) {
            if (d == a || gr__vshape(x)[d] < 0) continue;
            if (out->shape[d] >= 0 && out->shape[d] != gr__vshape(x)[d]) {
                char b1[200];
                return gr__error(node->graph, GR_ERR_SHAPE, "Join: operand %d %s of shape %s does not match the shape %s of the others "
                                 "along axis %d", i, gr__d(x).s, gr__vs(x).s, gr__shape_str(b1, sizeof b1, nd, out->shape), d);
            }
            out->shape[d] = gr__vshape(x)[d];
        }
        if (total >= 0) {
            if (gr__vshape(x)[a] < 0) total = -1;
            else if (total > INT64_MAX - gr__vshape(x)[a])
                return gr__error(node->graph, GR_ERR_SHAPE, "Join: the lengths along axis %d overflow", a);
            else total += gr__vshape(x)[a];
        }
    }
    out->shape[a] = total;
    return GR_OK;
}

static gr_status gr__Join_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__join_params *p = (const gr__join_params *)gr__params(node);
    int nd = in[0]->ndim, a = nd + p->axis, i, d;
    int64_t total = 0;
    for (i = 0; i < node->n_in; i++) {
        for (d = 0; d < nd; d++)
            if (d != a && in[i]->shape[d] != in[0]->shape[d])
                return gr_node_error(node, GR_ERR_SHAPE, "operand %d %s of shape %s and operand 0 %s of shape %s differ along axis %d "
                                     "(only axis %d may differ)", i, gr__d(gr__in(node)[i]).s, gr__as(in[i]).s, gr__d(gr__in(node)[0]).s,
                                     gr__as(in[0]).s, d, a);
        total += in[i]->shape[a];                   /* arrays in memory: no overflow */
    }
    for (d = 0; d < nd; d++) out[0]->shape[d] = in[0]->shape[d];
    out[0]->shape[a] = total;
    return GR_OK;
}

/* the product of shape[0..a) and of shape[a+1..nd) */
static void gr__around_axis(int nd, const int64_t *shape, int a, int64_t *outer, int64_t *inner) {
    int d;
    *outer = 1; *inner = 1;
    for (d = 0; d < a; d++) *outer *= shape[d];
    for (d = a + 1; d < nd; d++) *inner *= shape[d];
}

/* out = [x_0 | x_1 | ...] along the axis: for each position before it, one block of each operand */
static gr_status gr__Join_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__join_params *p = (const gr__join_params *)gr__params(node);
    int a = out[0]->ndim + p->axis, i;
    int64_t outer, inner, o;
    size_t es = gr__dsize(out[0]->dtype);
    char *dst = (char *)out[0]->data;
    if (out[0]->size == 0) return GR_OK;
    gr__around_axis(out[0]->ndim, out[0]->shape, a, &outer, &inner);
    for (o = 0; o < outer; o++)
        for (i = 0; i < node->n_in; i++) {
            size_t block = (size_t)(in[i]->shape[a] * inner) * es;
            if (block) memcpy(dst, (const char *)in[i]->data + (size_t)o * block, block);
            dst += block;
        }
    return GR_OK;
}

/* the gradient of a join is the split of gz into pieces shaped like the operands */
static gr_status gr__Join_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    int i;
    if (!gr__is_float(gr__out(node)[0]->dtype)) {
        for (i = 0; i < node->n_in; i++) if (!(ig[i] = gr__zeros_grad(gr__in(node)[i]))) return node->graph->status;
        return GR_OK;
    }
    return gr__split_like(node->graph, og[0], ((const gr__join_params *)gr__params(node))->axis, node->n_in, gr__in(node), ig);
}

/* linear: the join of the tangents, zeros for operands without one */
static gr_status gr__Join_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *stack_buf[16], **vs = stack_buf;
    int i, any = 0;
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype)) return GR_OK;
    for (i = 0; i < node->n_in; i++) if (!gr_is_disconnected(ev[i])) any = 1;
    if (!any) return GR_OK;
    if (node->n_in > 16 && !(vs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)node->n_in)))
        return gr__error(node->graph, GR_ERR_NOMEM, "Join: out of memory (the R-op of %d operands)", (int)node->n_in);
    for (i = 0; i < node->n_in; i++) {
        vs[i] = gr_is_disconnected(ev[i]) ? gr__zeros_grad(gr__in(node)[i]) : ev[i];
        if (!vs[i]) break;
    }
    orop[0] = i == node->n_in ? gr__join_node(node->graph, node->n_in, vs, ((const gr__join_params *)gr__params(node))->axis) : NULL;
    if (vs != stack_buf) GR_FREE(vs);
    return orop[0] ? GR_OK : node->graph->status;
}

/* every operand batched: the same join (its axis counts from the end); some not: row by row */
static gr_status gr__Join_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    int i;
    for (i = 0; i < node->n_in; i++) if (!batched[i]) return gr__map_batch(node, in, batched, out);
    out[0] = gr__node1(node->graph, node->op, gr__params(node), node->params_size, node->n_in, in);
    return out[0] ? GR_OK : node->graph->status;
}

/* ---- Split ----------------------------------------------------------------------------------------- */

static const gr__split_params *gr__spp(const gr_node *node) { return (const gr__split_params *)gr__params(node); }
static const int64_t *gr__split_sizes(const gr_node *node) { return (const int64_t *)gr__params(node) + 1; }   /* refs == 0 */

static gr_status gr__Split_infer(const gr_node *node, gr_type *out) {
    const gr__split_params *p = gr__spp(node);
    gr_var *x = gr__in(node)[0];
    int k = node->n_out, a = x->ndim + p->axis, j, known = 1;
    int64_t total = 0;
    if (a < 0 || a >= x->ndim) return gr__error(node->graph, GR_ERR_VALUE, "Split: axis %d out of range for %s with %d dimensions", a, gr__d(x).s, x->ndim);
    if (node->n_in != (p->refs ? k + 1 : 1))
        return gr__error(node->graph, GR_ERR_VALUE, "Split: %d inputs for %d pieces%s", (int)node->n_in, k, p->refs ? " shaped like references" : "");
    if (!p->refs && node->params_size != sizeof(int64_t) * (size_t)(1 + k))
        return gr__error(node->graph, GR_ERR_VALUE, "Split: %lu bytes of parameters for %d pieces of %s", (unsigned long)node->params_size,
                         k, gr__d(x).s);
    for (j = 0; j < k; j++) {
        int64_t s = p->refs ? -1 : gr__split_sizes(node)[j];
        if (p->refs) {
            gr_var *r = gr__in(node)[j + 1];
            if (r->ndim + p->axis < 0)
                return gr__error(node->graph, GR_ERR_TYPE, "Split: reference %s has %d dimensions, too few for axis %d from the end",
                                 gr__d(r).s, r->ndim, -p->axis);
            s = gr__vshape(r)[r->ndim + p->axis];
        }
        gr_var_type(x, &out[j]);
        out[j].shape[a] = s;
        if (s < 0) known = 0;
        else if (total <= INT64_MAX - s) total += s;
    }
    if (known && gr__vshape(x)[a] >= 0 && total != gr__vshape(x)[a])
        return gr__error(node->graph, GR_ERR_SHAPE, "Split: the %d pieces add up to %lld along axis %d, but %s has shape %s", k,
                         (long long)total, a, gr__d(x).s, gr__vs(x).s);
    return GR_OK;
}

static gr_status gr__Split_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__split_params *p = gr__spp(node);
    const gr_array *x = in[0];
    int k = node->n_out, a = x->ndim + p->axis, j, d;
    int64_t total = 0;
    for (j = 0; j < k; j++) {
        int64_t s = p->refs ? in[j + 1]->shape[in[j + 1]->ndim + p->axis] : gr__split_sizes(node)[j];
        for (d = 0; d < x->ndim; d++) out[j]->shape[d] = x->shape[d];
        out[j]->shape[a] = s;
        total += s;                                 /* lengths of arrays or checked sizes: no overflow */
    }
    if (total != x->shape[a])
        return gr_node_error(node, GR_ERR_SHAPE, "the %d pieces add up to %lld along axis %d, but %s has shape %s", k, (long long)total,
                             a, gr__d(gr__in(node)[0]).s, gr__as(x).s);
    return GR_OK;
}

static gr_status gr__Split_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[0];
    int a = x->ndim + gr__spp(node)->axis, j;
    int64_t outer, inner, o;
    size_t es = gr__dsize(x->dtype);
    const char *src = (const char *)x->data;
    if (x->size == 0) return GR_OK;
    gr__around_axis(x->ndim, x->shape, a, &outer, &inner);
    for (o = 0; o < outer; o++)
        for (j = 0; j < node->n_out; j++) {
            size_t block = (size_t)(out[j]->shape[a] * inner) * es;
            if (block) memcpy((char *)out[j]->data + (size_t)o * block, src, block);
            src += block;
        }
    return GR_OK;
}

/* the join of the output gradients. A piece that does not reach the cost has a disconnected
   gradient: it contributes zeros shaped like itself (Theano#1589, Aesara#1200) */
static gr_status gr__Split_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *stack_buf[16], **pieces = stack_buf, *x = gr__in(node)[0];
    int i, j;
    for (i = 1; i < node->n_in; i++) if (!(ig[i] = gr_disconnected_like(gr__in(node)[i]))) return node->graph->status;
    if (!gr__is_float(x->dtype)) {
        ig[0] = gr__zeros_grad(x);
        return ig[0] ? GR_OK : node->graph->status;
    }
    for (j = 0; j < node->n_out; j++)
        if (gr_is_null(og[j])) { ig[0] = og[j]; return GR_OK; }    /* a null gradient poisons x anyway */
    if (node->n_out > 16 && !(pieces = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)node->n_out)))
        return gr__error(node->graph, GR_ERR_NOMEM, "Split: out of memory (the gradient of %d pieces)", (int)node->n_out);
    for (j = 0; j < node->n_out; j++) {
        pieces[j] = gr_is_disconnected(og[j]) ? gr__zeros_grad(gr__out(node)[j]) : og[j];
        if (!pieces[j]) break;
    }
    ig[0] = j == node->n_out ? gr__join_node(node->graph, node->n_out, pieces, gr__spp(node)->axis) : NULL;
    if (pieces != stack_buf) GR_FREE(pieces);
    return ig[0] ? GR_OK : node->graph->status;
}

/* linear: the same split of the tangent */
static gr_status gr__Split_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *stack_buf[1 + 16], **ins = stack_buf;
    gr_status st;
    int i;
    for (i = 0; i < node->n_out; i++) orop[i] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || gr_is_disconnected(ev[0])) return GR_OK;
    if (node->n_in > 1 + 16 && !(ins = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)node->n_in)))
        return gr__error(node->graph, GR_ERR_NOMEM, "Split: out of memory (the R-op of %d pieces)", (int)node->n_out);
    ins[0] = ev[0];
    for (i = 1; i < node->n_in; i++) ins[i] = gr__in(node)[i];
    st = gr__make_node_n(node->graph, node->op, gr__params(node), node->params_size, node->n_in, ins, node->n_out, orop);
    if (ins != stack_buf) GR_FREE(ins);
    return st;
}

/* x batched: the same split (its axis counts from the end, so references may or may not be
   batched); x not batched while a reference is would give every row the same pieces, which the
   references' shapes alone cannot make: not supported */
static gr_status gr__Split_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    if (!batched[0])
        return gr__error(node->graph, GR_ERR_GRAD_NOT_IMPLEMENTED, "gr_jacobian: a Split of %s whose only batched inputs are "
                         "references (shapes) cannot be batched", gr__d(gr__in(node)[0]).s);
    return gr__make_node_n(node->graph, node->op, gr__params(node), node->params_size, node->n_in, in, node->n_out, out);
}

/* ---- BroadcastTo ----------------------------------------------------------------------------------- */

typedef struct gr__bto_params {
    int ndim;
    int64_t shape[GR_MAX_NDIM];          /* -1 (only from the batching rule): x's own aligned length */
} gr__bto_params;

GR_API gr_var *gr_broadcast_to(gr_var *x, int ndim, const int64_t *shape) {
    gr__bto_params p;
    gr_graph *g;
    char buf[200];
    int i, off, same;
    if (!gr__operands("gr_broadcast_to", 1, &x, &g)) return NULL;
    if (ndim < 0 || ndim > GR_MAX_NDIM)
        return gr__fail(g, GR_ERR_VALUE, "gr_broadcast_to: ndim %d out of range for %s (at most %d)", ndim, gr__d(x).s, GR_MAX_NDIM);
    if (ndim > 0 && !shape) return gr__fail(g, GR_ERR_VALUE, "gr_broadcast_to: shape is NULL for %s", gr__d(x).s);
    memset(&p, 0, sizeof p);
    p.ndim = ndim;
    for (i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return gr__fail(g, GR_ERR_VALUE, "gr_broadcast_to: negative size %lld in the shape for %s", (long long)shape[i], gr__d(x).s);
        p.shape[i] = shape[i];
    }
    if (gr__static_overflows(ndim, p.shape))
        return gr__fail(g, GR_ERR_VALUE, "gr_broadcast_to: the element count of the shape %s for %s overflows",
                        gr__shape_str(buf, sizeof buf, ndim, p.shape), gr__d(x).s);
    off = ndim - x->ndim;
    if (off < 0)
        return gr__fail(g, GR_ERR_SHAPE, "gr_broadcast_to: %s of shape %s has more dimensions than the shape %s", gr__d(x).s,
                        gr__vs(x).s, gr__shape_str(buf, sizeof buf, ndim, p.shape));
    same = off == 0;
    for (i = 0; i < x->ndim; i++) {
        int64_t s = gr__vshape(x)[i];
        if (s >= 0 && s != 1 && s != p.shape[off + i])
            return gr__fail(g, GR_ERR_SHAPE, "gr_broadcast_to: %s of shape %s does not broadcast to %s", gr__d(x).s, gr__vs(x).s,
                            gr__shape_str(buf, sizeof buf, ndim, p.shape));
        if (s != p.shape[off + i]) same = 0;
    }
    if (same) return x;                              /* already that shape */
    return gr__node1(g, &gr__op_BroadcastTo, &p, sizeof p, 1, &x);
}

static gr_status gr__BroadcastTo_infer(const gr_node *node, gr_type *out) {
    const gr__bto_params *p = (const gr__bto_params *)gr__params(node);
    gr_var *x = gr__in(node)[0];
    int i, off = p->ndim - x->ndim;
    char buf[200];
    if (off < 0)
        return gr__error(node->graph, GR_ERR_SHAPE, "BroadcastTo: %s of shape %s has more dimensions than the shape %s", gr__d(x).s,
                         gr__vs(x).s, gr__shape_str(buf, sizeof buf, p->ndim, p->shape));
    out->dtype = (gr_dtype)x->dtype;
    out->ndim = p->ndim;
    for (i = 0; i < p->ndim; i++) {
        int64_t s = i >= off ? gr__vshape(x)[i - off] : 1, t = p->shape[i];
        if (t < 0) {
            if (i < off) return gr__error(node->graph, GR_ERR_VALUE, "BroadcastTo: axis %d keeps the length of %s, which has no such axis", i, gr__d(x).s);
            out->shape[i] = s;
            continue;
        }
        if (s >= 0 && s != 1 && s != t)
            return gr__error(node->graph, GR_ERR_SHAPE, "BroadcastTo: %s of shape %s does not broadcast to %s", gr__d(x).s, gr__vs(x).s,
                             gr__shape_str(buf, sizeof buf, p->ndim, p->shape));
        out->shape[i] = t;
    }
    return GR_OK;
}

static gr_status gr__BroadcastTo_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__bto_params *p = (const gr__bto_params *)gr__params(node);
    int i, off = p->ndim - in[0]->ndim;
    for (i = 0; i < p->ndim; i++) {
        int64_t s = i >= off ? in[0]->shape[i - off] : 1, t = p->shape[i] < 0 ? s : p->shape[i];
        if (s != 1 && s != t) {
            char buf[200];
            return gr_node_error(node, GR_ERR_SHAPE, "%s of shape %s does not broadcast to %s", gr__d(gr__in(node)[0]).s, gr__as(in[0]).s,
                                 gr__shape_str(buf, sizeof buf, p->ndim, p->shape));
        }
        out[0]->shape[i] = t;
    }
    return GR_OK;
}

static gr_status gr__BroadcastTo_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    gr__broadcast_copy(in[0], out[0]);
    return GR_OK;
}

/* the gradient of a broadcast sums back over the broadcast axes */
static gr_status gr__BroadcastTo_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0];
    ig[0] = gr__is_float(x->dtype) ? gr__sum_to(og[0], x) : gr__zeros_grad(x);
    return ig[0] ? GR_OK : node->graph->status;
}

static gr_status gr__BroadcastTo_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__node1(node->graph, &gr__op_BroadcastTo, gr__params(node), node->params_size, 1, &ev[0]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* x (B, *s): its axes move right past the ones the broadcast prepends, and the batch axis keeps
   its length */
static gr_status gr__BroadcastTo_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr__bto_params p;
    const gr__bto_params *q = (const gr__bto_params *)gr__params(node);
    int pattern[GR_MAX_NDIM], nd = gr__in(node)[0]->ndim, i, m = 0;
    gr_var *x;
    if (q->ndim + 1 > GR_MAX_NDIM) return gr__map_batch(node, in, batched, out);
    pattern[m++] = 0;
    for (i = 0; i < q->ndim - nd; i++) pattern[m++] = GR_NEWAXIS;
    for (i = 0; i < nd; i++) pattern[m++] = i + 1;
    x = gr__dimshuffle(in[0], m, pattern, 0);
    if (!x) return node->graph->status;
    memset(&p, 0, sizeof p);
    p.ndim = q->ndim + 1;
    p.shape[0] = -1;
    for (i = 0; i < q->ndim; i++) p.shape[i + 1] = q->shape[i];
    out[0] = gr__node1(node->graph, &gr__op_BroadcastTo, &p, sizeof p, 1, &x);
    return out[0] ? GR_OK : node->graph->status;
}

#endif /* GR_NO_JOIN */

/* ---- zeros_like, ones_like, arange ------------------------------------------------------------------ */

GR_API gr_var *gr_zeros_like(gr_var *x) {
    gr_graph *g;
    if (!gr__operands("gr_zeros_like", 1, &x, &g)) return NULL;
    return gr__fill_like(x, x->dtype, 0.0);
}

GR_API gr_var *gr_ones_like(gr_var *x) {
    gr_graph *g;
    if (!gr__operands("gr_ones_like", 1, &x, &g)) return NULL;
    return gr__fill_like(x, x->dtype, 1.0);
}

/* NumPy's arange: ceil((stop - start) / step) values start + i step, computed in double and
   converted to the dtype (integers truncate toward zero); integral int64 ranges are exact */
GR_API gr_var *gr_arange(gr_graph *g, double start, double stop, double step, gr_dtype dtype) {
    gr_array *a;
    gr_var *v;
    double len;
    int64_t n, i;
    if (!g) return NULL;
    if (!gr__dtype_ok((int)dtype)) return gr__fail(g, GR_ERR_VALUE, "gr_arange: unknown dtype %d", (int)dtype);
    if (dtype == GR_BOOL) return gr__fail(g, GR_ERR_VALUE, "gr_arange: a range cannot be bool");
    if (!(start - start == 0) || !(stop - stop == 0) || !(step - step == 0))
        return gr__fail(g, GR_ERR_VALUE, "gr_arange: start %g, stop %g and step %g must be finite", start, stop, step);
    if (step == 0) return gr__fail(g, GR_ERR_VALUE, "gr_arange: the step is zero");
    len = ceil((stop - start) / step);
    if (!(len > 0)) len = 0;
    if (len > 9007199254740992.0) return gr__fail(g, GR_ERR_VALUE, "gr_arange: [%g, %g) by %g would have %g elements", start, stop, step, len);
    n = (int64_t)len;
    a = gr__array_alloc((int)dtype, 1, &n);
    if (!a) return gr__fail(g, GR_ERR_NOMEM, "out of memory (gr_arange of %lld elements)", (long long)n);
    if (dtype == GR_I64 && start == floor(start) && step == floor(step) && fabs(start) + fabs(step) * len < 9.0e18) {
        int64_t s0 = (int64_t)start, d = (int64_t)step;
        for (i = 0; i < n; i++) ((int64_t *)a->data)[i] = s0 + i * d;
    } else
        for (i = 0; i < n; i++) gr__store((int)dtype, a->data, i, start + (double)i * step);
    if (!gr__own(g, a)) return NULL;
    v = gr__new_var(g, (int)dtype, 1, &n, GR__VK_CONST);
    if (v) v->u.ext = a;
    return v;
}

#ifndef GR_NO_JOIN
/* ---- Tile and Untile ----------------------------------------------------------------------------------- */

typedef struct gr__tile_params { int n; int64_t reps[GR_MAX_NDIM]; } gr__tile_params;

/* reps and shape left-padded with 1s to m = max(n, nd) axes; returns m */
static int gr__tile_pad(const gr__tile_params *p, int nd, const int64_t *shape, int64_t *r, int64_t *s) {
    int m = p->n > nd ? p->n : nd, k;
    for (k = 0; k < m; k++) {
        r[k] = k >= m - p->n ? p->reps[k - (m - p->n)] : 1;
        s[k] = k >= m - nd ? shape[k - (m - nd)] : 1;
    }
    return m;
}

/* r s, or -1 when s is unknown (and r is not 0), or -2 when it overflows */
static int64_t gr__tile_len(int64_t r, int64_t s) {
    if (r == 0 || s == 0) return 0;
    if (s < 0) return -1;
    return r > INT64_MAX / s ? -2 : r * s;
}

GR_API gr_var *gr_tile(gr_var *x, int n, const int64_t *reps) {
    gr__tile_params p;
    gr_graph *g;
    int64_t r[GR_MAX_NDIM], s[GR_MAX_NDIM], o[GR_MAX_NDIM];
    int i, m, trivial = 1;
    char buf[200];
    if (!gr__operands("gr_tile", 1, &x, &g)) return NULL;
    if (n < 0 || n > GR_MAX_NDIM) return gr__fail(g, GR_ERR_VALUE, "gr_tile: %d repetitions for %s (0 to %d)", n, gr__d(x).s, GR_MAX_NDIM);
    if (n > 0 && !reps) return gr__fail(g, GR_ERR_VALUE, "gr_tile: reps is NULL for %s", gr__d(x).s);
    memset(&p, 0, sizeof p);
    p.n = n;
    for (i = 0; i < n; i++) {
        if (reps[i] < 0) return gr__fail(g, GR_ERR_VALUE, "gr_tile: negative repetition %lld for %s", (long long)reps[i], gr__d(x).s);
        p.reps[i] = reps[i];
        if (reps[i] != 1) trivial = 0;
    }
    if (trivial && n <= x->ndim) return x;           /* nothing repeated, no axis added */
    m = gr__tile_pad(&p, x->ndim, gr__vshape(x), r, s);
    for (i = 0; i < m; i++) {
        o[i] = gr__tile_len(r[i], s[i]);
        if (o[i] == -2) break;
    }
    if (i < m || gr__static_overflows(m, o))
        return gr__fail(g, GR_ERR_VALUE, "gr_tile: %s of shape %s tiled by %s would have too many elements", gr__d(x).s, gr__vs(x).s,
                        gr__shape_str(buf, sizeof buf, n, p.reps));
    return gr__node1(g, &gr__op_Tile, &p, sizeof p, 1, &x);
}

static gr_status gr__Tile_infer(const gr_node *node, gr_type *out) {
    const gr__tile_params *p = (const gr__tile_params *)gr__params(node);
    gr_var *x = gr__in(node)[0];
    int64_t r[GR_MAX_NDIM], s[GR_MAX_NDIM];
    int m = gr__tile_pad(p, x->ndim, gr__vshape(x), r, s), k;
    out->dtype = (gr_dtype)x->dtype;
    out->ndim = m;
    for (k = 0; k < m; k++) {
        out->shape[k] = gr__tile_len(r[k], s[k]);
        if (out->shape[k] == -2) {
            char buf[200];
            return gr__error(node->graph, GR_ERR_SHAPE, "Tile: %s of shape %s tiled by %s overflows", gr__d(x).s, gr__vs(x).s,
                             gr__shape_str(buf, sizeof buf, p->n, p->reps));
        }
    }
    return GR_OK;
}

static gr_status gr__Tile_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__tile_params *p = (const gr__tile_params *)gr__params(node);
    int64_t r[GR_MAX_NDIM], s[GR_MAX_NDIM];
    int m = gr__tile_pad(p, in[0]->ndim, in[0]->shape, r, s), k;
    for (k = 0; k < m; k++) {
        out[0]->shape[k] = gr__tile_len(r[k], s[k]);
        if (out[0]->shape[k] < 0) {
            char buf[200];
            return gr_node_error(node, GR_ERR_SHAPE, "%s of shape %s tiled by %s overflows", gr__d(gr__in(node)[0]).s, gr__as(in[0]).s,
                                 gr__shape_str(buf, sizeof buf, p->n, p->reps));
        }
    }
    return GR_OK;
}

/* each output row (all axes but the last) is a row of x, repeated r_last times: output position i
   along axis k reads x at i mod s_k */
static gr_status gr__Tile_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__tile_params *p = (const gr__tile_params *)gr__params(node);
    const gr_array *x = in[0];
    int64_t r[GR_MAX_NDIM], s[GR_MAX_NDIM], xst[GR_MAX_NDIM], idx[GR_MAX_NDIM], rows, row, len, t;
    int m = gr__tile_pad(p, x->ndim, x->shape, r, s), k;
    size_t es = gr__dsize(x->dtype), bytes;
    char *dst = (char *)out[0]->data;
    if (out[0]->size == 0) return GR_OK;
    if (m == 0) { memcpy(dst, x->data, es); return GR_OK; }
    len = s[m - 1];
    bytes = (size_t)len * es;
    xst[m - 1] = 1;
    for (k = m - 2; k >= 0; k--) xst[k] = xst[k + 1] * s[k + 1];
    rows = out[0]->size / (r[m - 1] * len);
    for (k = 0; k < m; k++) idx[k] = 0;
    for (row = 0; row < rows; row++) {
        int64_t off = 0;
        for (k = 0; k < m - 1; k++) off += (idx[k] % s[k]) * xst[k];
        for (t = 0; t < r[m - 1]; t++, dst += bytes) memcpy(dst, (const char *)x->data + (size_t)off * es, bytes);
        for (k = m - 2; k >= 0; k--) { if (++idx[k] < r[k] * s[k]) break; idx[k] = 0; }
    }
    return GR_OK;
}

static gr_var *gr__untile(gr_var *g_, gr_var *ref, const gr__tile_params *p) {
    gr_var *args[2];
    args[0] = g_; args[1] = ref;
    if (!g_ || !ref) return NULL;
    return gr__node1(g_->graph, &gr__op_Untile, p, sizeof *p, 2, args);
}

/* x tiled after its first b axes (which are repeated once): x (*b, s) -> (*b, r s) */
static gr_var *gr__tile_after(gr_graph *g, gr_var *x, int b, const gr__tile_params *p) {
    gr__tile_params q;
    int pattern[GR_MAX_NDIM], d = x->ndim - b, m = p->n > d ? p->n : d, i, k = 0;
    if (b == 0) return gr__node1(g, &gr__op_Tile, p, sizeof *p, 1, &x);
    if (b + m > GR_MAX_NDIM) return gr__fail(g, GR_ERR_VALUE, "Tile: %s with %d batch axes would have too many dimensions", gr__d(x).s, b);
    for (i = 0; i < b; i++) pattern[k++] = i;
    for (i = 0; i < m - d; i++) pattern[k++] = GR_NEWAXIS;
    for (i = 0; i < d; i++) pattern[k++] = b + i;
    if (m > d && !(x = gr__dimshuffle(x, k, pattern, 0))) return NULL;
    memset(&q, 0, sizeof q);
    q.n = b + m;
    for (i = 0; i < b; i++) q.reps[i] = 1;
    for (i = 0; i < m; i++) q.reps[b + i] = i >= m - p->n ? p->reps[i - (m - p->n)] : 1;
    return gr__node1(g, &gr__op_Tile, &q, sizeof q, 1, &x);
}

static gr_status gr__Tile_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0];
    ig[0] = gr__is_float(x->dtype) ? gr__untile(og[0], x, (const gr__tile_params *)gr__params(node)) : gr__zeros_grad(x);
    return ig[0] ? GR_OK : node->graph->status;
}

static gr_status gr__Tile_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__node1(node->graph, &gr__op_Tile, gr__params(node), node->params_size, 1, &ev[0]);
    return orop[0] ? GR_OK : node->graph->status;
}

static gr_status gr__Tile_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    const gr__tile_params *p = (const gr__tile_params *)gr__params(node);
    int d = gr__in(node)[0]->ndim, m = p->n > d ? p->n : d;
    if (m + 1 > GR_MAX_NDIM) return gr__map_batch(node, in, batched, out);
    out[0] = gr__tile_after(node->graph, in[0], 1, p);
    return out[0] ? GR_OK : node->graph->status;
}

/* Untile: the leading batch axes b = ndim(g) - m */
static int gr__untile_dims(const gr_node *node, int nd_g, int nd_ref, int *m) {
    const gr__tile_params *p = (const gr__tile_params *)gr__params(node);
    *m = p->n > nd_ref ? p->n : nd_ref;
    return nd_g - *m;
}

static gr_status gr__Untile_infer(const gr_node *node, gr_type *out) {
    const gr__tile_params *p = (const gr__tile_params *)gr__params(node);
    gr_var *g_ = gr__in(node)[0], *ref = gr__in(node)[1];
    int64_t r[GR_MAX_NDIM], s[GR_MAX_NDIM];
    int m, b = gr__untile_dims(node, g_->ndim, ref->ndim, &m), k;
    if (b < 0 || g_->dtype == GR_BOOL)
        return gr__error(node->graph, GR_ERR_TYPE, "Untile: %s (%s with %d dimensions) cannot be the tiles of %s with %d dimensions", gr__d(g_).s,
                         gr_dtype_name((gr_dtype)g_->dtype), g_->ndim, gr__d(ref).s, ref->ndim);
    gr__tile_pad(p, ref->ndim, gr__vshape(ref), r, s);
    out->dtype = (gr_dtype)g_->dtype;
    out->ndim = b + ref->ndim;
    for (k = 0; k < b; k++) out->shape[k] = gr__vshape(g_)[k];
    for (k = 0; k < m; k++) {
        int64_t gl = gr__vshape(g_)[b + k], want = gr__tile_len(r[k], s[k]);
        if (gl >= 0 && want >= 0 && gl != want) {
            char buf[200];
            return gr__error(node->graph, GR_ERR_SHAPE, "Untile: %s of shape %s is not %s of shape %s tiled by %s", gr__d(g_).s, gr__vs(g_).s,
                             gr__d(ref).s, gr__vs(ref).s, gr__shape_str(buf, sizeof buf, p->n, p->reps));
        }
        if (k >= m - ref->ndim) {
            int64_t sk = s[k];
            if (sk < 0 && gl >= 0 && r[k] > 0) sk = gl / r[k];    /* known from the tiles */
            out->shape[b + k - (m - ref->ndim)] = sk;
        }
    }
    return GR_OK;
}

static gr_status gr__Untile_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__tile_params *p = (const gr__tile_params *)gr__params(node);
    const gr_array *g_ = in[0], *ref = in[1];
    int64_t r[GR_MAX_NDIM], s[GR_MAX_NDIM];
    int m, b = gr__untile_dims(node, g_->ndim, ref->ndim, &m), k;
    gr__tile_pad(p, ref->ndim, ref->shape, r, s);
    for (k = 0; k < m; k++)
        if (g_->shape[b + k] != gr__tile_len(r[k], s[k])) {
            char buf[200];
            return gr_node_error(node, GR_ERR_SHAPE, "%s of shape %s is not %s of shape %s tiled by %s", gr__d(gr__in(node)[0]).s, gr__as(g_).s,
                                 gr__d(gr__in(node)[1]).s, gr__as(ref).s, gr__shape_str(buf, sizeof buf, p->n, p->reps));
        }
    for (k = 0; k < b; k++) out[0]->shape[k] = g_->shape[k];
    for (k = 0; k < ref->ndim; k++) out[0]->shape[b + k] = ref->shape[k];
    return GR_OK;
}

/* out[β, i] = sum over the tiles t of g[β, t s + i]: g is walked row by row (all axes but the last),
   each row adding its r_last tiles into the output row it maps to */
#define GR__UNTILE_ROW(T, ADD) do { \
        T *o_ = (T *)out[0]->data + orow; const T *g_row = (const T *)g_->data + row * glen; int64_t t_, i_; \
        for (t_ = 0; t_ < rl; t_++) for (i_ = 0; i_ < sl; i_++) o_[i_] = ADD(o_[i_], g_row[t_ * sl + i_]); \
    } while (0)
#define GR__UNTILE_FADD(a, b) ((a) + (b))
#define GR__UNTILE_IADD(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
static gr_status gr__Untile_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__tile_params *p = (const gr__tile_params *)gr__params(node);
    const gr_array *g_ = in[0], *ref = in[1];
    int64_t r[GR_MAX_NDIM + GR_MAX_NDIM], s[GR_MAX_NDIM + GR_MAX_NDIM], ost[GR_MAX_NDIM + GR_MAX_NDIM], idx[GR_MAX_NDIM + GR_MAX_NDIM];
    int64_t rows, row, rl, sl, glen;
    int m, b = gr__untile_dims(node, g_->ndim, ref->ndim, &m), D = b + m, k;
    memset(out[0]->data, 0, (size_t)out[0]->size * gr__dsize(out[0]->dtype));
    if (g_->size == 0) return GR_OK;
    if (D == 0) { memcpy(out[0]->data, g_->data, gr__dsize(g_->dtype)); return GR_OK; }
    /* axes 0..b: batch (repeated once), then the m tiled axes */
    for (k = 0; k < b; k++) { r[k] = 1; s[k] = g_->shape[k]; }
    gr__tile_pad(p, ref->ndim, ref->shape, r + b, s + b);
    ost[D - 1] = 1;
    for (k = D - 2; k >= 0; k--) ost[k] = ost[k + 1] * s[k + 1];
    rl = r[D - 1]; sl = s[D - 1]; glen = rl * sl;
    rows = g_->size / glen;
    for (k = 0; k < D; k++) idx[k] = 0;
    for (row = 0; row < rows; row++) {
        int64_t orow = 0;
        for (k = 0; k < D - 1; k++) orow += (idx[k] % s[k]) * ost[k];
        switch (g_->dtype) {
        case GR_F64: GR__UNTILE_ROW(double, GR__UNTILE_FADD); break;
        case GR_F32: GR__UNTILE_ROW(float, GR__UNTILE_FADD); break;
        default: GR__UNTILE_ROW(int64_t, GR__UNTILE_IADD); break;
        }
        for (k = D - 2; k >= 0; k--) { if (++idx[k] < r[k] * s[k]) break; idx[k] = 0; }
    }
    return GR_OK;
}
#undef GR__UNTILE_ROW
#undef GR__UNTILE_FADD
#undef GR__UNTILE_IADD

/* the gradient of a sum over tiles is the tiling of gz */
static gr_status gr__Untile_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *g_ = gr__in(node)[0];
    int m, b = gr__untile_dims(node, g_->ndim, gr__in(node)[1]->ndim, &m);
    ig[0] = gr__is_float(g_->dtype) ? gr__tile_after(node->graph, og[0], b, (const gr__tile_params *)gr__params(node)) : gr__zeros_grad(g_);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}

static gr_status gr__Untile_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__untile(ev[0], gr__in(node)[1], (const gr__tile_params *)gr__params(node));
    return orop[0] ? GR_OK : node->graph->status;
}

/* g batched: the same op, one more batch axis; a batched reference: row by row */
static gr_status gr__Untile_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    if (batched[1] || in[0]->ndim > GR_MAX_NDIM) return gr__map_batch(node, in, batched, out);
    out[0] = gr__untile(in[0], in[1], (const gr__tile_params *)gr__params(node));
    return out[0] ? GR_OK : node->graph->status;
}
#endif /* GR_NO_JOIN */

/* ==== ops/gemm.c: generated region; edit ops/gemm.c, then run make gradient.h ==== */
/* ops/gemm.c: the matrix products the contractions (ops/dot.c) run on, and the one place that
   calls CBLAS.

   C (M x N, row-major) = op(A) (M x K) . op(B) (K x N), op(X) = X or X^T by a flag (ta, tb): A is
   stored M x K (K x M when ta), B K x N (N x K when tb), contiguous. By the operands' shapes:
     gr__gemm_dt   matrix . matrix   the blocked kernel below, or cblas_?gemm with GRADIENT_CBLAS
     gr__gemv_dt   matrix . vector   a plain loop, or cblas_?gemv
     gr__dotv_dt   vector . vector   a plain loop (float32 summed in float64), or cblas_ddot
   Integers wrap (through uint64_t, as NumPy's) and always take the plain loops. */

#ifndef GR_NO_DOT                  /* ops/table.h, op families: the whole file */

/* ---- the built-in kernels ---------------------------------------------------------------------

   Floating point, after GotoBLAS: a KC x NC block of op(B) is packed into strips of NR columns
   (k-major inside a strip, zero-padded), then for every 4 rows of op(A) a micro-kernel keeps a
   4 x NR tile of C in registers while it walks the strip: per k, two vector loads of B, four
   scalars of A, eight multiply-adds. A is read in place (its rows are four streams, or with ta
   four adjacent columns), and only a last partial group of rows is copied, zero-padded. The
   packed block (at most GR__GEMM_BUF bytes) and that copy live in the work memory the caller
   gives (gr__gemm_work_bytes of it): in a compiled function the function's scratch buffer, sized
   when the shapes are settled (src/call.c), so no stack frame holds them and nothing is allocated.
   With GCC or Clang the tile is eight vectors of the widest width the target has (AVX-512, AVX
   or SSE: GCC vector extensions, no intrinsics); elsewhere the same loops run on a plain array
   the compiler may vectorise. Integers (wrapping uint64_t) take a plain blocked loop. */
#define GR__GEMM_MR 4
#define GR__GEMM_KC 128
#ifndef GR__GEMM_BUF
#define GR__GEMM_BUF 32768
#endif
/* the packed block's columns (a multiple of NR), for NR columns a strip and elements of es bytes */
static GR__UNUSED int64_t gr__gemm_nc(int64_t nr, int64_t es) {
    int64_t nc = GR__GEMM_BUF / (GR__GEMM_KC * es) / nr * nr;
    return nc > nr ? nc : nr;
}
#if (defined(__GNUC__) || defined(__clang__)) && !defined(GR_NO_VECTOR_EXTENSIONS)
#if defined(__AVX512F__)
#define GR__VBYTES 64
#elif defined(__AVX__)
#define GR__VBYTES 32
#else
#define GR__VBYTES 16
#endif
#define GR__VEC(V, T) typedef T V __attribute__((vector_size(GR__VBYTES)));
#define GR__V0 {0}
#else
#define GR__VBYTES 16
#define GR__VEC(V, T) typedef struct { T e[GR__VBYTES / sizeof(T)]; } V;
#define GR__V0 {{0}}
#endif

/* the micro-kernel: c[0..mr) x [0..nr) += a (4 rows, row stride rs, k stride cs) . bp (a strip).
   W = 2 vectors per row, or 1 for a strip of at most NR/2 columns. */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(GR_NO_VECTOR_EXTENSIONS)
#define GR__MK_FMA(acc, x, b) acc += (x) * (b)
#if defined(__x86_64__) || defined(__i386__)
#define GR__VREG(v) __asm__("" : "+v"(v))     /* keeps b in a register: GCC would reload it for every FMA */
#endif
#define GR__VADD_TO(p, acc) do { __typeof__(acc) u_; memcpy(&u_, (p), sizeof u_); u_ += (acc); memcpy((p), &u_, sizeof u_); } while (0)
#else
#define GR__VADD_TO(p, acc) do { int l_; for (l_ = 0; l_ < (int)(sizeof(acc) / sizeof(*(p))); l_++) (p)[l_] += (acc).e[l_]; } while (0)
#define GR__MK_FMA(acc, x, b) do { int l_; for (l_ = 0; l_ < (int)(sizeof(b) / sizeof(x)); l_++) (acc).e[l_] += (x) * (b).e[l_]; } while (0)
#endif
#ifndef GR__VREG
#define GR__VREG(v) ((void)0)
#endif
#define GR__GEMM_FLOAT(fn, T) \
    GR__VEC(fn##_v, T) \
    enum { fn##_NV = GR__VBYTES / (int)sizeof(T), fn##_NR = 2 * fn##_NV }; \
    static void fn##_mk2(int64_t kc, const T *a, int64_t rs, int64_t cs, const T *bp, T *c, int64_t ldc, int64_t mr, int64_t nr) { \
        fn##_v c00 = GR__V0, c01 = GR__V0, c10 = GR__V0, c11 = GR__V0, c20 = GR__V0, c21 = GR__V0, c30 = GR__V0, c31 = GR__V0, b0, b1; \
        T t[GR__GEMM_MR][fn##_NR]; \
        const T *a1 = a + rs, *a2 = a + 2 * rs, *a3 = a + 3 * rs; \
        int64_t k, r, j; \
        for (k = 0; k < kc; k++, bp += fn##_NR) { \
            T x0 = a[k * cs], x1 = a1[k * cs], x2 = a2[k * cs], x3 = a3[k * cs]; \
            memcpy(&b0, bp, sizeof b0); \
            memcpy(&b1, bp + fn##_NV, sizeof b1); \
            GR__VREG(b0); GR__VREG(b1); \
            GR__MK_FMA(c00, x0, b0); GR__MK_FMA(c01, x0, b1); GR__MK_FMA(c10, x1, b0); GR__MK_FMA(c11, x1, b1); \
            GR__MK_FMA(c20, x2, b0); GR__MK_FMA(c21, x2, b1); GR__MK_FMA(c30, x3, b0); GR__MK_FMA(c31, x3, b1); \
        } \
        if (mr == GR__GEMM_MR && nr == fn##_NR) {                /* a whole tile: vector adds into C */ \
            GR__VADD_TO(c, c00); GR__VADD_TO(c + fn##_NV, c01); c += ldc; \
            GR__VADD_TO(c, c10); GR__VADD_TO(c + fn##_NV, c11); c += ldc; \
            GR__VADD_TO(c, c20); GR__VADD_TO(c + fn##_NV, c21); c += ldc; \
            GR__VADD_TO(c, c30); GR__VADD_TO(c + fn##_NV, c31); \
            return; \
        } \
        memcpy(t[0], &c00, sizeof c00); memcpy(t[0] + fn##_NV, &c01, sizeof c01); \
        memcpy(t[1], &c10, sizeof c10); memcpy(t[1] + fn##_NV, &c11, sizeof c11); \
        memcpy(t[2], &c20, sizeof c20); memcpy(t[2] + fn##_NV, &c21, sizeof c21); \
        memcpy(t[3], &c30, sizeof c30); memcpy(t[3] + fn##_NV, &c31, sizeof c31); \
        for (r = 0; r < mr; r++, c += ldc) for (j = 0; j < nr; j++) c[j] += t[r][j]; \
    } \
    static void fn##_mk1(int64_t kc, const T *a, int64_t rs, int64_t cs, const T *bp, T *c, int64_t ldc, int64_t mr, int64_t nr) { \
        fn##_v c0 = GR__V0, c1 = GR__V0, c2 = GR__V0, c3 = GR__V0, b0; \
        T t[GR__GEMM_MR][fn##_NV]; \
        const T *a1 = a + rs, *a2 = a + 2 * rs, *a3 = a + 3 * rs; \
        int64_t k, r, j; \
        for (k = 0; k < kc; k++, bp += fn##_NR) { \
            memcpy(&b0, bp, sizeof b0); \
            GR__MK_FMA(c0, a[k * cs], b0); GR__MK_FMA(c1, a1[k * cs], b0); \
            GR__MK_FMA(c2, a2[k * cs], b0); GR__MK_FMA(c3, a3[k * cs], b0); \
        } \
        memcpy(t[0], &c0, sizeof c0); memcpy(t[1], &c1, sizeof c1); memcpy(t[2], &c2, sizeof c2); memcpy(t[3], &c3, sizeof c3); \
        for (r = 0; r < mr; r++, c += ldc) for (j = 0; j < nr; j++) c[j] += t[r][j]; \
    } \
    /* the work elements fn needs for N columns: the packed block of B, then the last rows of A */ \
    static GR__UNUSED int64_t fn##_work(int64_t N) { \
        int64_t nc = gr__gemm_nc(fn##_NR, (int64_t)sizeof(T)), n = (N + fn##_NR - 1) / fn##_NR * fn##_NR; \
        return GR__GEMM_KC * (n < nc ? n : nc) + GR__GEMM_KC * GR__GEMM_MR; \
    } \
    static GR__UNUSED void fn(int ta, int tb, int64_t M, int64_t N, int64_t K, const T *A, const T *B, T *C, T *work) { \
        enum { NR = fn##_NR }; \
        const int64_t NRL = NR, NCL = gr__gemm_nc(NR, (int64_t)sizeof(T)); \
        T *bp = work, *ap = work + fn##_work(N) - GR__GEMM_KC * GR__GEMM_MR; \
        int64_t i0, j0, k0, jr, j, k, r, rs = ta ? 1 : K, cs = ta ? M : 1; \
        if (M > 0 && N > 0) memset(C, 0, sizeof(T) * (size_t)(M * N)); \
        for (j0 = 0; j0 < N; j0 += NCL) { \
            int64_t nc = N - j0 < NCL ? N - j0 : NCL; \
            for (k0 = 0; k0 < K; k0 += GR__GEMM_KC) { \
                int64_t kc = K - k0 < GR__GEMM_KC ? K - k0 : GR__GEMM_KC; \
                for (jr = 0; jr < nc; jr += NR) {               /* pack op(B)[k0.., j0+jr..] as a strip */ \
                    int64_t nr = nc - jr < NRL ? nc - jr : NRL; \
                    T *s = bp + jr * kc; \
                    if (tb) \
                        for (j = 0; j < nr; j++) { const T *src = B + (j0 + jr + j) * K + k0; for (k = 0; k < kc; k++) s[k * NR + j] = src[k]; } \
                    else \
                        for (k = 0; k < kc; k++) { const T *src = B + (k0 + k) * N + j0 + jr; for (j = 0; j < nr; j++) s[k * NR + j] = src[j]; } \
                    if (nr < NR) for (k = 0; k < kc; k++) for (j = nr; j < NR; j++) s[k * NR + j] = 0; \
                } \
                for (i0 = 0; i0 < M; i0 += GR__GEMM_MR) { \
                    int64_t mr = M - i0 < GR__GEMM_MR ? M - i0 : GR__GEMM_MR, ars = rs, acs = cs; \
                    const T *at = A + i0 * rs + k0 * cs; \
                    if (mr < GR__GEMM_MR) {                      /* the last rows, zero-padded to 4 */ \
                        for (k = 0; k < kc; k++) \
                            for (r = 0; r < GR__GEMM_MR; r++) ap[k * GR__GEMM_MR + r] = r < mr ? at[r * rs + k * cs] : 0; \
                        at = ap; ars = 1; acs = GR__GEMM_MR; \
                    } \
                    for (jr = 0; jr < nc; jr += NR) { \
                        int64_t nr = nc - jr < NRL ? nc - jr : NRL; \
                        if (nr > fn##_NV) fn##_mk2(kc, at, ars, acs, bp + jr * kc, C + i0 * N + j0 + jr, N, mr, nr); \
                        else fn##_mk1(kc, at, ars, acs, bp + jr * kc, C + i0 * N + j0 + jr, N, mr, nr); \
                    } \
                } \
            } \
        } \
    }
GR__GEMM_FLOAT(gr__gemm_f64, double)
GR__GEMM_FLOAT(gr__gemm_f32, float)

/* int64 operands go through uint64_t: products and sums wrap modulo 2^64 like NumPy's, where
   int64_t arithmetic would overflow (undefined behaviour) */
static GR__UNUSED void gr__gemm_i64(int ta, int tb, int64_t M, int64_t N, int64_t K, const uint64_t *A, const uint64_t *B, uint64_t *C) {
    int64_t i, j, k;
    for (i = 0; i < M * N; i++) C[i] = 0;
    for (i = 0; i < M; i++)
        for (k = 0; k < K; k++) {
            uint64_t a = ta ? A[k * M + i] : A[i * K + k];
            uint64_t *c = C + i * N;
            if (tb) for (j = 0; j < N; j++) c[j] += a * B[j * K + k];
            else for (j = 0; j < N; j++) c[j] += a * B[k * N + j];
        }
}

/* y (M) = op(A) (M x K) . x (K) */
#define GR__GEMV(fn, T, TA) \
    static GR__UNUSED void fn(int ta, int64_t M, int64_t K, const T *A, const T *x, T *y) { \
        int64_t i, k; \
        if (!ta) { \
            for (i = 0; i < M; i++) { TA s = 0; const T *a = A + i * K; for (k = 0; k < K; k++) s += (TA)a[k] * (TA)x[k]; y[i] = (T)s; } \
        } else { \
            for (i = 0; i < M; i++) y[i] = 0; \
            for (k = 0; k < K; k++) { T xk = x[k]; const T *a = A + k * M; for (i = 0; i < M; i++) y[i] += a[i] * xk; } \
        } \
    }
GR__GEMV(gr__gemv_f64, double, double)
GR__GEMV(gr__gemv_f32, float, float)
GR__GEMV(gr__gemv_i64, uint64_t, uint64_t)

/* ---- the dispatcher: CBLAS with GRADIENT_CBLAS, else the kernels above ------------------------ */

/* the bytes of work memory gr__gemm_dt needs for a product with N columns (0: none) */
static size_t gr__gemm_work_bytes(int dt, int64_t N) {
#ifdef GRADIENT_CBLAS
    (void)dt; (void)N;
    return 0;
#else
    if (dt == GR_F64) return (size_t)gr__gemm_f64_work(N) * sizeof(double);
    if (dt == GR_F32) return (size_t)gr__gemm_f32_work(N) * sizeof(float);
    return 0;
#endif
}

/* C = op(A) op(B), of dtype dt; work: gr__gemm_work_bytes(dt, N) bytes, aligned for double */
static void gr__gemm_dt(int dt, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A, const void *B, void *C, void *work) {
    (void)work;
    if (M == 0 || N == 0) return;
    if (K == 0) { memset(C, 0, (size_t)(M * N) * gr__dsize(dt)); return; }
    if (dt == GR_F64) {
#ifdef GRADIENT_CBLAS
        cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, 1.0,
                    (const double *)A, (int)(ta ? M : K), (const double *)B, (int)(tb ? K : N), 0.0, (double *)C, (int)N);
#else
        gr__gemm_f64(ta, tb, M, N, K, (const double *)A, (const double *)B, (double *)C, (double *)work);
#endif
    } else if (dt == GR_F32) {
#ifdef GRADIENT_CBLAS
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, 1.0f,
                    (const float *)A, (int)(ta ? M : K), (const float *)B, (int)(tb ? K : N), 0.0f, (float *)C, (int)N);
#else
        gr__gemm_f32(ta, tb, M, N, K, (const float *)A, (const float *)B, (float *)C, (float *)work);
#endif
    } else
        gr__gemm_i64(ta, tb, M, N, K, (const uint64_t *)A, (const uint64_t *)B, (uint64_t *)C);
}

/* y = op(A) x, A stored rows x cols (op(A) is cols x rows when t), of dtype dt */
static void gr__gemv_dt(int dt, int t, int64_t rows, int64_t cols, const void *A, const void *x, void *y) {
    int64_t M = t ? cols : rows, K = t ? rows : cols;
    if (K == 0) {                         /* an empty sum; ?gemv returns early without writing y */
        if (M) memset(y, 0, (size_t)M * gr__dsize(dt));
    } else if (dt == GR_F64) {
#ifdef GRADIENT_CBLAS
        cblas_dgemv(CblasRowMajor, t ? CblasTrans : CblasNoTrans, (int)rows, (int)cols, 1.0, (const double *)A, (int)(cols ? cols : 1),
                    (const double *)x, 1, 0.0, (double *)y, 1);
#else
        gr__gemv_f64(t, M, K, (const double *)A, (const double *)x, (double *)y);
#endif
    } else if (dt == GR_F32) {
#ifdef GRADIENT_CBLAS
        cblas_sgemv(CblasRowMajor, t ? CblasTrans : CblasNoTrans, (int)rows, (int)cols, 1.0f, (const float *)A, (int)(cols ? cols : 1),
                    (const float *)x, 1, 0.0f, (float *)y, 1);
#else
        gr__gemv_f32(t, M, K, (const float *)A, (const float *)x, (float *)y);
#endif
    } else
        gr__gemv_i64(t, M, K, (const uint64_t *)A, (const uint64_t *)x, (uint64_t *)y);
}

/* *out = sum_k x_k y_k over K elements of dtype dt */
static void gr__dotv_dt(int dt, int64_t K, const void *xp, const void *yp, void *out) {
    int64_t i;
    if (dt == GR_F64) {
        const double *x = (const double *)xp, *y = (const double *)yp;
        double s = 0;
#ifdef GRADIENT_CBLAS
        s = cblas_ddot((int)K, x, 1, y, 1);
#else
        for (i = 0; i < K; i++) s += x[i] * y[i];
#endif
        *(double *)out = s;
    } else if (dt == GR_F32) {
        const float *x = (const float *)xp, *y = (const float *)yp;
        double s = 0;
        for (i = 0; i < K; i++) s += (double)x[i] * (double)y[i];
        *(float *)out = (float)s;
    } else {
        const uint64_t *x = (const uint64_t *)xp, *y = (const uint64_t *)yp;
        uint64_t s = 0;
        for (i = 0; i < K; i++) s += x[i] * y[i];
        *(int64_t *)out = (int64_t)s;
    }
}
#endif /* GR_NO_DOT */

/* ==== ops/dot.c: generated region; edit ops/dot.c, then run make gradient.h ==== */
/* ops/dot.c: the contractions Dot, TensorDot and MatMul, with transpose flags so that gradients
   never copy a transpose; they run on the products of ops/gemm.c.

   Shapes: op(A) is A or A^T by the flag ta (likewise op(B) by tb; flags apply to 2-d operands)
     Dot            (M,K) . (K,N) -> (M,N)   (M,K) . (K,) -> (M,)   (K,) . (K,N) -> (N,)   (K,) . (K,) -> ()
     TensorDot      a (*fa, *s) . b (*s, *fb) -> (*fa, *fb). a is seen as a matrix whose rows are
                    its first sa axes and whose columns are the others, b likewise split at sb;
                    ta / tb transpose those matrices as Dot's flags do, so that gradients never copy.
                    gr_tensordot moves the summed axes of a last and those of b first (DimShuffle)
                    unless a flag does it for free.
     MatMul         a (*ba, m, k) @ b (*bb, k, n) -> (*broadcast(ba, bb), m, n); ta / tb transpose
                    the last two axes. gr_matmul makes a 1-d a (1, k) and a 1-d b (k, 1) and drops
                    that axis again, as NumPy does.
   Derivatives (C = op(A) op(B), G its cotangent): 2-d.2-d: dA = G B^T, dB = A^T G with the flags
   folded in; TensorDot and MatMul the same on their matrices (MatMul then sums over the batch axes
   an operand was broadcast along). */

#ifndef GR_NO_DOT                  /* ops/table.h, op families: the whole file */

/* ---- Dot ------------------------------------------------------------------------------------------ */

typedef struct gr__dot_params { int ta, tb; } gr__dot_params;

static gr_var *gr__dot_flags(gr_var *a, gr_var *b, int ta, int tb) {
    gr__dot_params p;
    gr_var *args[2];
    gr_graph *g;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_dot", 2, args, &g)) return NULL;
    memset(&p, 0, sizeof p);
    p.ta = a->ndim == 2 ? ta : 0;
    p.tb = b->ndim == 2 ? tb : 0;
    return gr__node1(g, &gr__op_Dot, &p, sizeof p, 2, args);
}

GR_API gr_var *gr_dot(gr_var *a, gr_var *b) {
    gr_var *args[2];
    gr_graph *g;
    int T;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_dot", 2, args, &g)) return NULL;
    if (a->ndim == 0 || b->ndim == 0) return gr_mul(a, b);
    if (a->ndim > 2 || b->ndim > 2)
        return gr__fail(g, GR_ERR_TYPE, "gr_dot: takes 1-d and 2-d operands; %s has %d dimensions and %s %d "
                        "(gr_tensordot and gr_matmul take more)", gr__d(a).s, a->ndim, gr__d(b).s, b->ndim);
    T = gr__promote(2, args);
    a = gr__coerce(a, T);
    b = gr__coerce(b, T);
    return gr__dot_flags(a, b, 0, 0);
}

/* rows, cols of op(X) for a 2-d X */
static void gr__op_dims(const int64_t *shape, int t, int64_t *r, int64_t *c) {
    *r = t ? shape[1] : shape[0];
    *c = t ? shape[0] : shape[1];
}

/* result dims from the operands' dims; 0 when the inner dimensions differ */
static int gr__dot_dims(int annd, const int64_t *as, int ta, int bnd, const int64_t *bs, int tb, int *ond, int64_t *os,
                        int64_t *ka, int64_t *kb) {
    int64_t m = 1, n = 1;
    if (annd == 2) gr__op_dims(as, ta, &m, ka); else *ka = as[0];
    if (bnd == 2) gr__op_dims(bs, tb, kb, &n); else *kb = bs[0];
    *ond = 0;
    if (annd == 2) os[(*ond)++] = m;
    if (bnd == 2) os[(*ond)++] = n;
    return !(*ka >= 0 && *kb >= 0 && *ka != *kb);
}

static gr_status gr__Dot_infer(const gr_node *node, gr_type *out) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1];
    int64_t ka, kb;
    out->dtype = (gr_dtype)a->dtype;
    if (a->dtype != b->dtype || a->ndim < 1 || a->ndim > 2 || b->ndim < 1 || b->ndim > 2)
        return gr__error(node->graph, GR_ERR_TYPE, "gr_dot: operands %s and %s must be 1-d or 2-d of one dtype", gr__d(a).s, gr__d(b).s);
    if (!gr__dot_dims(a->ndim, gr__vshape(a), p->ta, b->ndim, gr__vshape(b), p->tb, &out->ndim, out->shape, &ka, &kb))
        return gr__error(node->graph, GR_ERR_SHAPE, "gr_dot: inner dimensions differ: %s %s%s and %s %s%s", gr__d(a).s,
                         gr__vs(a).s, p->ta ? " transposed" : "", gr__d(b).s, gr__vs(b).s, p->tb ? " transposed" : "");
    return GR_OK;
}

static gr_status gr__Dot_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    int64_t ka, kb;
    int nd;
    if (!gr__dot_dims(in[0]->ndim, in[0]->shape, p->ta, in[1]->ndim, in[1]->shape, p->tb, &nd, out[0]->shape, &ka, &kb))
        return gr_node_error(node, GR_ERR_SHAPE, "inner dimensions differ: %s %s%s and %s %s%s", gr__d(gr__in(node)[0]).s,
                             gr__as(in[0]).s, p->ta ? " transposed" : "", gr__d(gr__in(node)[1]).s, gr__as(in[1]).s,
                             p->tb ? " transposed" : "");
    return GR_OK;
}

static gr_status gr__Dot_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1];
    int64_t M, K;
    if (a->ndim == 1 && b->ndim == 1)                       /* inner product */
        gr__dotv_dt(a->dtype, a->shape[0], a->data, b->data, out[0]->data);
    else if (b->ndim == 1)                                  /* op(A) x */
        gr__gemv_dt(a->dtype, p->ta, a->shape[0], a->shape[1], a->data, b->data, out[0]->data);
    else if (a->ndim == 1)                                  /* x op(B) = op(B)^T x */
        gr__gemv_dt(a->dtype, !p->tb, b->shape[0], b->shape[1], b->data, a->data, out[0]->data);
    else {
        gr__op_dims(a->shape, p->ta, &M, &K);
        gr__gemm_dt(a->dtype, p->ta, p->tb, M, out[0]->shape[1], K, a->data, b->data, out[0]->data, out[node->n_out]->data);
    }
    return GR_OK;
}
/* the work memory of a matrix product (GR_SCRATCH_OPS): the GEMM's packing buffers */
static size_t gr__Dot_scratch(const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)node;
    return in[0]->ndim == 2 && in[1]->ndim == 2 ? gr__gemm_work_bytes(in[0]->dtype, out[0]->shape[1]) : 0;
}

/* C = op(A) op(B), G its cotangent; 2-d.2-d: dA = G B^T, dB = A^T G with the flags folded in */
static gr_status gr__Dot_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1], *G = og[0];
    if (!gr__is_float(gr__out(node)[0]->dtype)) {
        ig[0] = gr__zeros_grad(a);
        ig[1] = gr__zeros_grad(b);
    } else if (a->ndim == 1 && b->ndim == 1) {
        ig[0] = gr_mul(G, b);
        ig[1] = gr_mul(G, a);
    } else if (a->ndim == 2 && b->ndim == 1) {              /* c = op(A) b */
        ig[0] = p->ta ? gr_outer(b, G) : gr_outer(G, b);
        ig[1] = gr__dot_flags(a, G, !p->ta, 0);
    } else if (a->ndim == 1) {                              /* c = a op(B) */
        ig[0] = gr__dot_flags(b, G, p->tb, 0);
        ig[1] = p->tb ? gr_outer(G, a) : gr_outer(a, G);
    } else if (!p->ta && !p->tb) {
        ig[0] = gr__dot_flags(G, b, 0, 1);
        ig[1] = gr__dot_flags(a, G, 1, 0);
    } else if (p->ta && !p->tb) {                           /* C = A^T B */
        ig[0] = gr__dot_flags(b, G, 0, 1);
        ig[1] = gr__dot_flags(a, G, 0, 0);
    } else if (!p->ta) {                                    /* C = A B^T */
        ig[0] = gr__dot_flags(G, b, 0, 0);
        ig[1] = gr__dot_flags(G, a, 1, 0);
    } else {                                                /* C = A^T B^T */
        ig[0] = gr__dot_flags(b, G, 1, 1);
        ig[1] = gr__dot_flags(G, a, 1, 1);
    }
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}

static gr_status gr__Dot_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    gr_var *t = NULL;
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype)) return GR_OK;
    if (!gr_is_disconnected(ev[0])) t = gr__dot_flags(ev[0], gr__in(node)[1], p->ta, p->tb);
    if (!gr_is_disconnected(ev[1])) {
        gr_var *u = gr__dot_flags(gr__in(node)[0], ev[1], p->ta, p->tb);
        t = t ? gr_add(t, u) : u;
        if (!t) return node->graph->status;
    }
    if (gr_is_disconnected(ev[0]) && gr_is_disconnected(ev[1])) return GR_OK;
    orop[0] = t;
    return t ? GR_OK : node->graph->status;
}

/* the product of shape[from..to) */
static int64_t gr__dims_prod(const int64_t *shape, int from, int to) {
    int64_t p = 1;
    int i;
    for (i = from; i < to; i++) p *= shape[i];
    return p;
}

/* ---- Dot's rewrite rules (src/rewrite.h) -------------------------------------------------------- */

/* its signature: op(a)'s rows, then op(b)'s columns */
static void gr__Dot_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    const gr_var *a = gr__in(node)[0], *b = gr__in(node)[1];
    int32_t sa[GR_MAX_NDIM], sb[GR_MAX_NDIM];
    int m = 0;
    gr__sig_copy(rw, a, sa);
    gr__sig_copy(rw, b, sb);
    if (a->ndim == 2) out[m++] = sa[p->ta ? 1 : 0];
    if (b->ndim == 2) out[m++] = sb[p->tb ? 0 : 1];
}

/* diag(d) op(B) scales op(B)'s rows by d, op(B) diag(d) its columns (Jacobians: the identity seed
   times an elementwise derivative): O(m n) instead of a matrix product. NULL, *done 0: no diag. */
static gr_var *gr__dot_diag(gr__rewriter *rw, const gr__dot_params *p, gr_var *const *in, int *done) {
    static const int as_col[2] = { 0, GR_NEWAXIS }, as_row[2] = { GR_NEWAXIS, 0 }, swap[2] = { 1, 0 };
    int k;
    for (k = 0; k < 2; k++) {
        gr_var *other = in[1 - k], *d, *ob, *col;
        gr__dimshuffle_params dp;
        if (!(d = gr__banded_diag(rw, in[k]))) continue;
        if (other->ndim == 1) return gr__replaced(done, gr__rw_ew(rw, GR__EW_mul, d, other));   /* diag(d) v = v diag(d) = d * v */
        memset(&dp, 0, sizeof dp);
        dp.n = 2;
        ob = other;
        if (k == 0 ? p->tb : p->ta) {
            dp.pattern[0] = swap[0]; dp.pattern[1] = swap[1];
            if (!(ob = gr__rw1(rw, &gr__op_DimShuffle, &dp, sizeof dp, 1, &other))) return gr__replaced(done, NULL);
        }
        if (d->ndim == 0) col = d;
        else {
            dp.pattern[0] = k == 0 ? as_col[0] : as_row[0];
            dp.pattern[1] = k == 0 ? as_col[1] : as_row[1];
            if (!(col = gr__rw1(rw, &gr__op_DimShuffle, &dp, sizeof dp, 1, &d))) return gr__replaced(done, NULL);
        }
        return gr__replaced(done, gr__rw_ew(rw, GR__EW_mul, col, ob));
    }
    return NULL;
}

/* a diagonal operand scales the other; a transposed matrix operand becomes a flag (BLAS reads it in
   place, nothing is copied) */
static gr_var *gr__Dot_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    const gr__dot_params *p = (const gr__dot_params *)params;
    gr__dot_params q = *p;
    gr_var *args[2], *r;
    int k, changed = 0;
    r = gr__dot_diag(rw, p, in, done);
    if (*done) return r;
    args[0] = in[0]; args[1] = in[1];
    for (k = 0; k < 2; k++) {
        const gr_node *t = gr__owner(args[k]);
        if (args[k]->ndim == 2 && t && t->op == &gr__op_DimShuffle && gr__in(t)[0]->ndim == 2 &&
            gr__dsp(t)->pattern[0] == 1 && gr__dsp(t)->pattern[1] == 0) {
            args[k] = gr__in(t)[0];
            if (k == 0) q.ta = !q.ta; else q.tb = !q.tb;
            changed = 1;
        }
    }
    return changed ? gr__replaced(done, gr__rw1(rw, op, &q, sizeof q, 2, args)) : NULL;
}

/* ---- TensorDot ---------------------------------------------------------------------------------- */

typedef struct gr__tdot_params { int sa, sb, ta, tb; } gr__tdot_params;

/* where the free and the summed axes of an operand lie, split at s into rows and columns: the
   rows of a are free (its columns when transposed); the columns of b are free (its rows when
   transposed) */
static void gr__tdot_axes(int ndim, int s, int t, int is_a, int *f0, int *fn, int *c0, int *cn) {
    int rows_free = is_a ? !t : t;
    if (rows_free) { *f0 = 0; *fn = s; *c0 = s; *cn = ndim - s; }
    else { *c0 = 0; *cn = s; *f0 = s; *fn = ndim - s; }
}

static gr_var *gr__tdot(gr_var *a, gr_var *b, int sa, int sb, int ta, int tb) {
    gr__tdot_params p;
    gr_var *args[2];
    gr_graph *g;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_tensordot", 2, args, &g)) return NULL;
    memset(&p, 0, sizeof p);
    p.sa = sa; p.sb = sb; p.ta = ta; p.tb = tb;
    return gr__node1(g, &gr__op_TensorDot, &p, sizeof p, 2, args);
}

/* the n axes ax[] are 0, 1, ..., n-1 (first) or ndim-n, ..., ndim-1 (last), in that order */
static int gr__axes_run(const int *ax, int n, int start) {
    int i;
    for (i = 0; i < n; i++) if (ax[i] != start + i) return 0;
    return 1;
}

GR_API gr_var *gr_tensordot(gr_var *a, gr_var *b, int n, const int *a_axes, const int *b_axes) {
    gr_var *args[2];
    gr_graph *g;
    int ax[GR_MAX_NDIM], bx[GR_MAX_NDIM], pattern[GR_MAX_NDIM], i, m, T, sa, sb, ta = 0, tb = 0;
    uint32_t seen_a = 0, seen_b = 0;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_tensordot", 2, args, &g)) return NULL;
    if (n < 0 || n > a->ndim || n > b->ndim)
        return gr__fail(g, GR_ERR_VALUE, "gr_tensordot: %d summed axes for %s with %d dimensions and %s with %d", n, gr__d(a).s,
                        a->ndim, gr__d(b).s, b->ndim);
    if (n > 0 && (!a_axes || !b_axes)) return gr__fail(g, GR_ERR_VALUE, "gr_tensordot: a_axes or b_axes is NULL");
    for (i = 0; i < n; i++) {
        ax[i] = gr__axis(a_axes[i], a->ndim);
        bx[i] = gr__axis(b_axes[i], b->ndim);
        if (ax[i] < 0 || bx[i] < 0)
            return gr__fail(g, GR_ERR_VALUE, "gr_tensordot: axis %d of %s (%d-d) or axis %d of %s (%d-d) is out of range",
                            a_axes[i], gr__d(a).s, a->ndim, b_axes[i], gr__d(b).s, b->ndim);
        if ((seen_a & (1u << ax[i])) || (seen_b & (1u << bx[i])))
            return gr__fail(g, GR_ERR_VALUE, "gr_tensordot: axis %d of %s or axis %d of %s is repeated", a_axes[i], gr__d(a).s,
                            b_axes[i], gr__d(b).s);
        seen_a |= 1u << ax[i];
        seen_b |= 1u << bx[i];
        if (gr__vshape(a)[ax[i]] >= 0 && gr__vshape(b)[bx[i]] >= 0 && gr__vshape(a)[ax[i]] != gr__vshape(b)[bx[i]])
            return gr__fail(g, GR_ERR_SHAPE, "gr_tensordot: axis %d of %s %s and axis %d of %s %s differ in size", ax[i],
                            gr__d(a).s, gr__vs(a).s, bx[i], gr__d(b).s, gr__vs(b).s);
    }
    if (a->ndim + b->ndim - 2 * n > GR_MAX_NDIM)
        return gr__fail(g, GR_ERR_VALUE, "gr_tensordot: the result would have %d dimensions (at most %d)", a->ndim + b->ndim - 2 * n,
                        GR_MAX_NDIM);
    T = gr__promote(2, args);
    a = gr__coerce(a, T);
    b = gr__coerce(b, T);
    if (!a || !b) return NULL;
    /* a: the summed axes last, in the order given; already first in order, a flag does it */
    sa = a->ndim - n;
    if (!gr__axes_run(ax, n, a->ndim - n)) {
        if (gr__axes_run(ax, n, 0)) { sa = n; ta = 1; }
        else {
            for (i = 0, m = 0; i < a->ndim; i++) if (!(seen_a & (1u << i))) pattern[m++] = i;
            for (i = 0; i < n; i++) pattern[m++] = ax[i];
            a = gr__dimshuffle(a, a->ndim, pattern, 0);
        }
    }
    /* b: the summed axes first, in the order given; already last in order, a flag does it */
    sb = n;
    if (!gr__axes_run(bx, n, 0)) {
        if (gr__axes_run(bx, n, b->ndim - n)) { sb = b->ndim - n; tb = 1; }
        else {
            for (i = 0, m = 0; i < n; i++) pattern[m++] = bx[i];
            for (i = 0; i < b->ndim; i++) if (!(seen_b & (1u << i))) pattern[m++] = i;
            b = gr__dimshuffle(b, b->ndim, pattern, 0);
        }
    }
    return gr__tdot(a, b, sa, sb, ta, tb);
}

static gr_status gr__TensorDot_infer(const gr_node *node, gr_type *out) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1];
    int af0, afn, ac0, acn, bf0, bfn, bc0, bcn, i;
    out->dtype = (gr_dtype)a->dtype;
    if (a->dtype != b->dtype)
        return gr__error(node->graph, GR_ERR_TYPE, "gr_tensordot: operands %s and %s must have one dtype", gr__d(a).s, gr__d(b).s);
    if (p->sa < 0 || p->sa > a->ndim || p->sb < 0 || p->sb > b->ndim)
        return gr__error(node->graph, GR_ERR_VALUE, "gr_tensordot: split points %d and %d out of range for %s and %s", p->sa, p->sb,
                         gr__d(a).s, gr__d(b).s);
    gr__tdot_axes(a->ndim, p->sa, p->ta, 1, &af0, &afn, &ac0, &acn);
    gr__tdot_axes(b->ndim, p->sb, p->tb, 0, &bf0, &bfn, &bc0, &bcn);
    if (acn != bcn)
        return gr__error(node->graph, GR_ERR_SHAPE, "gr_tensordot: %s sums %d axes but %s %d", gr__d(a).s, acn, gr__d(b).s, bcn);
    for (i = 0; i < acn; i++) {
        int64_t x = gr__vshape(a)[ac0 + i], y = gr__vshape(b)[bc0 + i];
        if (x >= 0 && y >= 0 && x != y)
            return gr__error(node->graph, GR_ERR_SHAPE, "gr_tensordot: summed axes of %s %s and %s %s differ in size", gr__d(a).s,
                             gr__vs(a).s, gr__d(b).s, gr__vs(b).s);
    }
    if (afn + bfn > GR_MAX_NDIM)
        return gr__error(node->graph, GR_ERR_VALUE, "gr_tensordot: the result would have %d dimensions", afn + bfn);
    out->ndim = afn + bfn;
    for (i = 0; i < afn; i++) out->shape[i] = gr__vshape(a)[af0 + i];
    for (i = 0; i < bfn; i++) out->shape[afn + i] = gr__vshape(b)[bf0 + i];
    return GR_OK;
}

static gr_status gr__TensorDot_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1];
    int af0, afn, ac0, acn, bf0, bfn, bc0, bcn, i;
    gr__tdot_axes(a->ndim, p->sa, p->ta, 1, &af0, &afn, &ac0, &acn);
    gr__tdot_axes(b->ndim, p->sb, p->tb, 0, &bf0, &bfn, &bc0, &bcn);
    for (i = 0; i < acn; i++)
        if (a->shape[ac0 + i] != b->shape[bc0 + i])
            return gr_node_error(node, GR_ERR_SHAPE, "summed axes of %s %s and %s %s differ in size", gr__d(gr__in(node)[0]).s,
                                 gr__as(a).s, gr__d(gr__in(node)[1]).s, gr__as(b).s);
    for (i = 0; i < afn; i++) out[0]->shape[i] = a->shape[af0 + i];
    for (i = 0; i < bfn; i++) out[0]->shape[afn + i] = b->shape[bf0 + i];
    return GR_OK;
}

static gr_status gr__TensorDot_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1];
    int64_t ra = gr__dims_prod(a->shape, 0, p->sa), ca = gr__dims_prod(a->shape, p->sa, a->ndim);
    int64_t rb = gr__dims_prod(b->shape, 0, p->sb), cb = gr__dims_prod(b->shape, p->sb, b->ndim);
    gr__gemm_dt(a->dtype, p->ta, p->tb, p->ta ? ca : ra, p->tb ? rb : cb, p->ta ? ra : ca, a->data, b->data, out[0]->data,
                out[node->n_out]->data);
    return GR_OK;
}
static size_t gr__TensorDot_scratch(const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    (void)out;
    return gr__gemm_work_bytes(in[0]->dtype, p->tb ? gr__dims_prod(in[1]->shape, 0, p->sb) : gr__dims_prod(in[1]->shape, p->sb, in[1]->ndim));
}

/* C = op(A) op(B) on the matrices the split points make; G splits at the number of a's free axes.
   The four cases are Dot's, with the flags folded in so that no transpose is ever built. */
static gr_status gr__TensorDot_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1], *G = og[0];
    int sa = p->sa, sb = p->sb, sg = p->ta ? a->ndim - sa : sa;
    if (!gr__is_float(gr__out(node)[0]->dtype)) {
        ig[0] = gr__zeros_grad(a);
        ig[1] = gr__zeros_grad(b);
    } else if (!p->ta && !p->tb) {          /* C = A B:     dA = G B^T,     dB = A^T G */
        ig[0] = gr__tdot(G, b, sg, sb, 0, 1);
        ig[1] = gr__tdot(a, G, sa, sg, 1, 0);
    } else if (p->ta && !p->tb) {           /* C = A^T B:   dA = B G^T,     dB = A G */
        ig[0] = gr__tdot(b, G, sb, sg, 0, 1);
        ig[1] = gr__tdot(a, G, sa, sg, 0, 0);
    } else if (!p->ta) {                    /* C = A B^T:   dA = G B,       dB = G^T A */
        ig[0] = gr__tdot(G, b, sg, sb, 0, 0);
        ig[1] = gr__tdot(G, a, sg, sa, 1, 0);
    } else {                                /* C = A^T B^T: dA = B^T G^T,   dB = G^T A^T */
        ig[0] = gr__tdot(b, G, sb, sg, 1, 1);
        ig[1] = gr__tdot(G, a, sg, sa, 1, 1);
    }
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}

static gr_status gr__TensorDot_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    gr_var *t = NULL;
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || (gr_is_disconnected(ev[0]) && gr_is_disconnected(ev[1]))) return GR_OK;
    if (!gr_is_disconnected(ev[0])) t = gr__tdot(ev[0], gr__in(node)[1], p->sa, p->sb, p->ta, p->tb);
    if (!gr_is_disconnected(ev[1])) {
        gr_var *u = gr__tdot(gr__in(node)[0], ev[1], p->sa, p->sb, p->ta, p->tb);
        t = gr_is_disconnected(ev[0]) ? u : gr_add(t, u);
    }
    orop[0] = t;
    return t ? GR_OK : node->graph->status;
}

/* a batched a (its free rows gain the leading axis) is the same product; anything else row by row */
static gr_status gr__TensorDot_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    if (batched[0] && !batched[1] && !p->ta && gr__out(node)[0]->ndim < GR_MAX_NDIM) {
        out[0] = gr__tdot(in[0], in[1], p->sa + 1, p->sb, 0, p->tb);
        return out[0] ? GR_OK : node->graph->status;
    }
    return gr__map_batch(node, in, batched, out);
}

/* ---- MatMul ------------------------------------------------------------------------------------- */

typedef struct gr__matmul_params { int ta, tb; } gr__matmul_params;

static gr_var *gr__mm(gr_var *a, gr_var *b, int ta, int tb) {
    gr__matmul_params p;
    gr_var *args[2];
    gr_graph *g;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_matmul", 2, args, &g)) return NULL;
    memset(&p, 0, sizeof p);
    p.ta = ta; p.tb = tb;
    return gr__node1(g, &gr__op_MatMul, &p, sizeof p, 2, args);
}

/* the static size of two batch axes broadcast together; -2 when they conflict (1 broadcasts,
   -1 is unknown) */
static int64_t gr__bcast_dim(int64_t x, int64_t y) {
    if (x == 1) return y;
    if (y == 1 || y == -1) return x;
    if (x == -1 || x == y) return y;
    return -2;
}

GR_API gr_var *gr_matmul(gr_var *a, gr_var *b) {
    gr_var *args[2], *y;
    gr_graph *g;
    int pattern[GR_MAX_NDIM], T, i, nd, a1, b1;
    int64_t ka, kb;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_matmul", 2, args, &g)) return NULL;
    if (a->ndim == 0 || b->ndim == 0)
        return gr__fail(g, GR_ERR_TYPE, "gr_matmul: %s is 0-d; matmul takes 1-d or more (gr_mul scales)", gr__d(a->ndim ? b : a).s);
    ka = gr__vshape(a)[a->ndim - 1];
    kb = gr__vshape(b)[b->ndim == 1 ? 0 : b->ndim - 2];
    if (ka >= 0 && kb >= 0 && ka != kb)
        return gr__fail(g, GR_ERR_SHAPE, "gr_matmul: %s %s and %s %s: the inner dimensions %lld and %lld differ", gr__d(a).s,
                        gr__vs(a).s, gr__d(b).s, gr__vs(b).s, (long long)ka, (long long)kb);
    for (i = 3; i <= a->ndim && i <= b->ndim; i++)
        if (gr__bcast_dim(gr__vshape(a)[a->ndim - i], gr__vshape(b)[b->ndim - i]) == -2)
            return gr__fail(g, GR_ERR_SHAPE, "gr_matmul: the batch axes of %s %s and %s %s do not broadcast", gr__d(a).s,
                            gr__vs(a).s, gr__d(b).s, gr__vs(b).s);
    T = gr__promote(2, args);
    a = gr__coerce(a, T);
    b = gr__coerce(b, T);
    if (!a || !b) return NULL;
    /* NumPy's promotion of 1-d operands: a row (1, k), a column (k, 1), removed from the result */
    a1 = a->ndim == 1;
    b1 = b->ndim == 1;
    if (a1) { pattern[0] = GR_NEWAXIS; pattern[1] = 0; a = gr__dimshuffle(a, 2, pattern, 0); }
    if (b1) { pattern[0] = 0; pattern[1] = GR_NEWAXIS; b = gr__dimshuffle(b, 2, pattern, 0); }
    y = gr__mm(a, b, 0, 0);
    if (!y || (!a1 && !b1)) return y;
    nd = 0;
    for (i = 0; i < y->ndim; i++)
        if (!(a1 && i == y->ndim - 2) && !(b1 && i == y->ndim - 1)) pattern[nd++] = i;
    return gr__dimshuffle(y, nd, pattern, 1);
}

static gr_status gr__MatMul_infer(const gr_node *node, gr_type *out) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1];
    int nba, nbb, nbo, i;
    int64_t m, ka, kb, n;
    out->dtype = (gr_dtype)a->dtype;
    if (a->dtype != b->dtype || a->ndim < 2 || b->ndim < 2)
        return gr__error(node->graph, GR_ERR_TYPE, "gr_matmul: operands %s and %s must have 2 dimensions or more and one dtype",
                         gr__d(a).s, gr__d(b).s);
    nba = a->ndim - 2; nbb = b->ndim - 2;
    nbo = nba > nbb ? nba : nbb;
    gr__op_dims(gr__vshape(a) + nba, p->ta, &m, &ka);
    gr__op_dims(gr__vshape(b) + nbb, p->tb, &kb, &n);
    if (ka >= 0 && kb >= 0 && ka != kb)
        return gr__error(node->graph, GR_ERR_SHAPE, "gr_matmul: %s %s%s and %s %s%s: the inner dimensions differ", gr__d(a).s,
                         gr__vs(a).s, p->ta ? " transposed" : "", gr__d(b).s, gr__vs(b).s, p->tb ? " transposed" : "");
    for (i = 0; i < nbo; i++) {
        int64_t x = i - (nbo - nba) >= 0 ? gr__vshape(a)[i - (nbo - nba)] : 1, y = i - (nbo - nbb) >= 0 ? gr__vshape(b)[i - (nbo - nbb)] : 1;
        out->shape[i] = gr__bcast_dim(x, y);
        if (out->shape[i] == -2)
            return gr__error(node->graph, GR_ERR_SHAPE, "gr_matmul: the batch axes of %s %s and %s %s do not broadcast", gr__d(a).s,
                             gr__vs(a).s, gr__d(b).s, gr__vs(b).s);
    }
    out->ndim = nbo + 2;
    out->shape[nbo] = m;
    out->shape[nbo + 1] = n;
    return GR_OK;
}

static gr_status gr__MatMul_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1];
    int nba = a->ndim - 2, nbb = b->ndim - 2, nbo = out[0]->ndim - 2, i;
    int64_t m, ka, kb, n;
    gr__op_dims(a->shape + nba, p->ta, &m, &ka);
    gr__op_dims(b->shape + nbb, p->tb, &kb, &n);
    if (ka != kb)
        return gr_node_error(node, GR_ERR_SHAPE, "%s %s%s and %s %s%s: the inner dimensions differ", gr__d(gr__in(node)[0]).s, gr__as(a).s,
                             p->ta ? " transposed" : "", gr__d(gr__in(node)[1]).s, gr__as(b).s, p->tb ? " transposed" : "");
    for (i = 0; i < nbo; i++) {
        int64_t x = i - (nbo - nba) >= 0 ? a->shape[i - (nbo - nba)] : 1, y = i - (nbo - nbb) >= 0 ? b->shape[i - (nbo - nbb)] : 1;
        if (x != y && x != 1 && y != 1)
            return gr_node_error(node, GR_ERR_SHAPE, "the batch axes of %s %s and %s %s do not broadcast", gr__d(gr__in(node)[0]).s,
                                 gr__as(a).s, gr__d(gr__in(node)[1]).s, gr__as(b).s);
        out[0]->shape[i] = x == 1 ? y : x;
    }
    out[0]->shape[nbo] = m;
    out[0]->shape[nbo + 1] = n;
    return GR_OK;
}

/* one GEMM per output matrix, the operands found through broadcast strides (in matrices); when b
   has no batch and a's batch is the output's, one GEMM of all a's rows at once */
static gr_status gr__MatMul_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1];
    gr_array *c = out[0];
    int nba = a->ndim - 2, nbb = b->ndim - 2, nbo = c->ndim - 2, d;
    int64_t M, K, Kb, N, batch = gr__dims_prod(c->shape, 0, nbo), t;
    int64_t ast[GR_MAX_NDIM], bst[GR_MAX_NDIM], idx[GR_MAX_NDIM], aoff = 0, boff = 0, s;
    size_t es = gr__dsize(a->dtype), asz, bsz, csz;
    gr__op_dims(a->shape + nba, p->ta, &M, &K);
    gr__op_dims(b->shape + nbb, p->tb, &Kb, &N);
    asz = (size_t)(M * K) * es; bsz = (size_t)(K * N) * es; csz = (size_t)(M * N) * es;
    if (c->size == 0) return GR_OK;
    if (!p->ta && gr__dims_prod(b->shape, 0, nbb) == 1 && gr__dims_prod(a->shape, 0, nba) == batch) {
        gr__gemm_dt(a->dtype, 0, p->tb, batch * M, N, K, a->data, b->data, c->data, out[node->n_out]->data);
        return GR_OK;
    }
    for (d = nbo - 1, s = 1; d >= 0; d--) {     /* a's batch strides on the output's batch axes */
        int ai = d - (nbo - nba);
        ast[d] = ai >= 0 && a->shape[ai] != 1 ? s : 0;
        if (ai >= 0) s *= a->shape[ai];
        idx[d] = 0;
    }
    for (d = nbo - 1, s = 1; d >= 0; d--) {
        int bi = d - (nbo - nbb);
        bst[d] = bi >= 0 && b->shape[bi] != 1 ? s : 0;
        if (bi >= 0) s *= b->shape[bi];
    }
    for (t = 0; t < batch; t++) {
        gr__gemm_dt(a->dtype, p->ta, p->tb, M, N, K, (const char *)a->data + (size_t)aoff * asz, (const char *)b->data + (size_t)boff * bsz,
                    (char *)c->data + (size_t)t * csz, out[node->n_out]->data);
        for (d = nbo - 1; d >= 0; d--) {         /* the next output matrix */
            idx[d]++; aoff += ast[d]; boff += bst[d];
            if (idx[d] < c->shape[d]) break;
            aoff -= ast[d] * idx[d]; boff -= bst[d] * idx[d]; idx[d] = 0;
        }
    }
    return GR_OK;
}
static size_t gr__MatMul_scratch(const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)node;
    return gr__gemm_work_bytes(in[0]->dtype, out[0]->shape[out[0]->ndim - 1]);
}

/* Dot's four cases on the last two axes, then summed down over the batch axes an operand was
   broadcast along */
static gr_status gr__MatMul_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1], *G = og[0];
    if (!gr__is_float(gr__out(node)[0]->dtype)) {
        ig[0] = gr__zeros_grad(a);
        ig[1] = gr__zeros_grad(b);
        return ig[0] && ig[1] ? GR_OK : node->graph->status;
    }
    if (!p->ta && !p->tb) { ig[0] = gr__mm(G, b, 0, 1); ig[1] = gr__mm(a, G, 1, 0); }
    else if (p->ta && !p->tb) { ig[0] = gr__mm(b, G, 0, 1); ig[1] = gr__mm(a, G, 0, 0); }
    else if (!p->ta) { ig[0] = gr__mm(G, b, 0, 0); ig[1] = gr__mm(G, a, 1, 0); }
    else { ig[0] = gr__mm(b, G, 1, 1); ig[1] = gr__mm(G, a, 1, 1); }
    ig[0] = gr__sum_to(ig[0], a);
    ig[1] = gr__sum_to(ig[1], b);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}

static gr_status gr__MatMul_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    gr_var *t = NULL;
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || (gr_is_disconnected(ev[0]) && gr_is_disconnected(ev[1]))) return GR_OK;
    if (!gr_is_disconnected(ev[0])) t = gr__mm(ev[0], gr__in(node)[1], p->ta, p->tb);
    if (!gr_is_disconnected(ev[1])) {
        gr_var *u = gr__mm(gr__in(node)[0], ev[1], p->ta, p->tb);
        t = gr_is_disconnected(ev[0]) ? u : gr_add(t, u);
    }
    orop[0] = t;
    return t ? GR_OK : node->graph->status;
}

/* batching by shifting: a batched operand gets its missing batch axes (size 1) after the new
   leading one, so that it lines up with the output's batch axes and the other operand broadcasts */
static gr_status gr__MatMul_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    int nbo = gr__out(node)[0]->ndim - 2, k, i;
    gr_var *xs[2];
    if (nbo + 3 > GR_MAX_NDIM) return gr__map_batch(node, in, batched, out);
    for (k = 0; k < 2; k++) {
        int pattern[GR_MAX_NDIM], m = 0, nd = gr__in(node)[k]->ndim;
        xs[k] = in[k];
        if (!batched[k] || nd - 2 == nbo) continue;
        pattern[m++] = 0;
        for (i = 0; i < nbo - (nd - 2); i++) pattern[m++] = GR_NEWAXIS;
        for (i = 1; i <= nd; i++) pattern[m++] = i;
        xs[k] = gr__dimshuffle(in[k], m, pattern, 0);
        if (!xs[k]) return node->graph->status;
    }
    out[0] = gr__mm(xs[0], xs[1], p->ta, p->tb);
    return out[0] ? GR_OK : node->graph->status;
}
#endif /* GR_NO_DOT */

/* ==== ops/linalg.c: generated region; edit ops/linalg.c, then run make gradient.h ==== */
/* ops/linalg.c: the LAPACK-free linear algebra: LU factorisation, inverse, det, logdet, adjugate,
   solve, Cholesky, and Trace and TriScale, which their derivatives use.

   Shapes (A is square, n x n; users give b as (n,) or (n, k), rules may pass (n, *rest)):
     LUFactor       A (n, n) -> F (n + 1, n) float64: rows 0..n-1 hold L (unit diagonal, below it)
                    and U (on and above it) of P A = L U, as LAPACK's getrf; F[n][k] is the row
                    swapped with row k at step k.
     MatrixInverse  (A, F) -> (n, n)            Det, LogDet  (A, F) -> ()
     Adjugate       (A, F) -> (n, n): adj A, the transposed cofactors (det(A) A^-1 where A is
                    invertible); made by the derivatives of gr_det only
     Solve          (A, b, F) -> shape(b): x with A x = b, or A^T x = b when `trans`; b (n, *rest)
     Cholesky       A (n, n) -> L (n, n), lower, L L^T = A; reads the lower triangle of A only
     Trace          x (*s, n, m) -> (*s): the sum of x[..., i, i]
     TriScale       x (*s, n, m) -> (*s, n, m): x[..., i, j] times w_below (i > j), w_on or w_above

   Workspace. A steady-state gr_call allocates nothing, so no perform calls GR_MALLOC. The LU-based
   ops take their factorisation as an input: the constructor builds F = LUFactor(A), whose output
   buffer the memory plan provides like any other, and Det, LogDet, Adjugate, Solve and
   MatrixInverse read it (Solve, MatrixInverse and Adjugate then work in place in their own
   output). F carries no derivative (its connection pattern is 0): the rules differentiate A
   itself, and reuse F to solve with A or A^T. Cholesky factors in place in its output.

   Numerics. LU with partial pivoting, factored in float64 also for float32 matrices (the
   substitutions run in the matrix's dtype); a row-oriented Cholesky summing in float64. A matrix
   is singular when a pivot is exactly zero, as in LAPACK (det and logdet then give 0 and -inf;
   solve and inverse fail with GR_ERR_RUNTIME), or when the result of a solve or an inverse is not
   finite although A and b are (a pivot too small to divide by). The adjugate never divides by a
   pivot (see GR__LU_ADJUGATE): it is as accurate at a singular A as elsewhere, and 0 where the
   rank of A is n - 2 or less. Cholesky fails on a pivot that is not > 0 (NaN included).

   Derivatives (G the cotangent of the output, V the tangent of A, X = A^-1, x = A^-1 b):
     inverse   dA = -X^T G X^T                       R = -X V X
     det       dA = G adj(A)^T                       R = tr(adj(A) V)       (exact at singular A)
     adjugate  dA = tr(A^-1 G^T) adj(A)^T - A^-T G adj(A)^T    R = tr(A^-1 V) adj(A) - adj(A) V A^-1
               (from d(adj A) A + adj(A) dA = tr(adj(A) dA) I: these need A invertible, so the
               second derivatives of det fail the call at a singular A, as the inverse does)
     logdet    dA = G X^T                            R = tr(A^-1 V)
     solve     db = A^-T G, dA = -db x^T             R = A^-1 (v_b - V x)
     cholesky  P = Phi(L^T G), S = L^-T P L^-1, dA = (S + S^T) / 2;   R = L Phi(L^-1 V_s L^-T)
               Phi keeps the lower triangle and halves the diagonal, V_s = (V + V^T) / 2: these are
               the derivatives of A -> chol((A + A^T) / 2), so the gradient is symmetric and the
               R-op its adjoint for any V.
     trace     dA = G I                              R = tr V
   Every rule builds ordinary differentiable nodes, so gradients of gradients work. */

#ifndef GR_NO_LINALG                  /* ops/table.h, op families: the whole file */

/* ---- shared pieces ------------------------------------------------------------------------------- */

enum { GR__LU_FOR_INVERSE, GR__LU_FOR_DET, GR__LU_FOR_LOGDET, GR__LU_FOR_SOLVE, GR__LU_FOR_CHOLESKY, GR__LU_FOR_COUNT };
static const char *const gr__lu_for[GR__LU_FOR_COUNT] = {
    "gr_matrix_inverse", "gr_det", "gr_logdet", "gr_solve", "the derivatives of gr_cholesky" };

typedef struct gr__lu_params { int who; } gr__lu_params;            /* whose factorisation: for messages */
typedef struct gr__solve_params { int trans; } gr__solve_params;    /* solve A^T x = b */
typedef struct gr__triscale_params { double w[3]; } gr__triscale_params;  /* below, on, above the diagonal */

static const char *const gr__lu_deriv[GR__LU_FOR_COUNT] = {
    "the derivatives of gr_matrix_inverse", "the derivatives of gr_det", "the derivatives of gr_logdet",
    "the derivatives of gr_solve", "the derivatives of gr_cholesky" };

/* the public function behind a node, for messages: an op reading a factor made for another
   function (an inverse in the gradient of gr_det) names that function's derivatives */
static const char *gr__la_fname(const gr_node *node) {
    const char *own = node->op == &gr__op_MatrixInverse ? "gr_matrix_inverse" : node->op == &gr__op_Det ? "gr_det"
                    : node->op == &gr__op_LogDet ? "gr_logdet" : node->op == &gr__op_Solve ? "gr_solve"
                    : node->op == &gr__op_Cholesky ? "gr_cholesky" : node->op->name;
    const gr_var *F = node->op == &gr__op_LUFactor ? NULL : node->n_in >= 2 ? gr__in(node)[node->n_in - 1] : NULL;
    int who = -1;
    if (node->op == &gr__op_LUFactor) who = ((const gr__lu_params *)gr__params(node))->who;
    else if (F && gr__owner(F) && gr__owner(F)->op == &gr__op_LUFactor) who = ((const gr__lu_params *)gr__params(gr__owner(F)))->who;
    if (who < 0 || who >= GR__LU_FOR_COUNT) return own;
    if (node->op == &gr__op_LUFactor || strcmp(gr__lu_for[who], own) == 0) return gr__lu_for[who];
    return gr__lu_deriv[who];
}

/* a user's matrix operand: 2-d (GR_ERR_TYPE), square where its static shape says (GR_ERR_SHAPE),
   integers and bools as float64 */
static gr_var *gr__la_operand(const char *fname, gr_graph *g, gr_var *a) {
    if (a->ndim != 2)
        return gr__fail(g, GR_ERR_TYPE, "%s: %s must be a matrix (2-d); it has %d dimensions", fname, gr__d(a).s, a->ndim);
    if (gr__vshape(a)[0] >= 0 && gr__vshape(a)[1] >= 0 && gr__vshape(a)[0] != gr__vshape(a)[1])
        return gr__fail(g, GR_ERR_SHAPE, "%s: %s of shape %s is not square", fname, gr__d(a).s, gr__vs(a).s);
    return gr__is_float(a->dtype) ? a : gr_cast(a, GR_F64);
}

/* the same checks in a type rule (the operand is already float there) */
static gr_status gr__la_square_static(const gr_node *node, const gr_var *a) {
    if (a->ndim != 2 || !gr__is_float(a->dtype))
        return gr__error(node->graph, GR_ERR_TYPE, "%s: %s must be a 2-d float matrix; it is %d-d %s", gr__la_fname(node),
                         gr__d(a).s, a->ndim, gr_dtype_name((gr_dtype)a->dtype));
    if (gr__vshape(a)[0] >= 0 && gr__vshape(a)[1] >= 0 && gr__vshape(a)[0] != gr__vshape(a)[1])
        return gr__error(node->graph, GR_ERR_SHAPE, "%s: %s of shape %s is not square", gr__la_fname(node), gr__d(a).s, gr__vs(a).s);
    return GR_OK;
}
/* a factor input: float64, 2-d (made by LUFactor, or a row of one when batched row by row) */
static gr_status gr__lu_static(const gr_node *node, const gr_var *F) {
    if (F->dtype != GR_F64 || F->ndim != 2)
        return gr__error(node->graph, GR_ERR_TYPE, "%s: %s is not an LU factorisation (LUFactor)", gr__la_fname(node), gr__d(F).s);
    return GR_OK;
}

/* at call time: A square; F, when given, the (n + 1, n) factor of an n x n matrix */
static gr_status gr__la_square_check(const gr_node *node, const gr_array *A, const gr_array *F) {
    if (A->shape[0] != A->shape[1])
        return gr_node_error(node, GR_ERR_SHAPE, "%s of shape %s is not square (in %s)", gr__d(gr__in(node)[0]).s, gr__as(A).s,
                             gr__la_fname(node));
    if (F && (F->shape[0] != A->shape[0] + 1 || F->shape[1] != A->shape[0]))
        return gr_node_error(node, GR_ERR_SHAPE, "the factorisation %s %s does not belong to %s %s (in %s)",
                             gr__d(gr__in(node)[node->n_in - 1]).s, gr__as(F).s, gr__d(gr__in(node)[0]).s, gr__as(A).s, gr__la_fname(node));
    return GR_OK;
}

static gr_var *gr__lu(gr_var *a, int who) {
    gr__lu_params p;
    if (!a) return NULL;
    memset(&p, 0, sizeof p);
    p.who = who;
    return gr__node1(a->graph, &gr__op_LUFactor, &p, sizeof p, 1, &a);
}
/* an op of (A, F) */
static gr_var *gr__la_with_lu(const gr_op_def *op, gr_var *a, gr_var *F) {
    gr_var *args[2];
    if (!a || !F) return NULL;
    args[0] = a; args[1] = F;
    return gr__node1(a->graph, op, NULL, 0, 2, args);
}
static gr_var *gr__solve_lu(gr_var *a, gr_var *b, gr_var *F, int trans) {
    gr__solve_params p;
    gr_var *args[3];
    if (!a || !b || !F) return NULL;
    memset(&p, 0, sizeof p);
    p.trans = trans;
    args[0] = a; args[1] = b; args[2] = F;
    return gr__node1(a->graph, &gr__op_Solve, &p, sizeof p, 3, args);
}
static gr_var *gr__triscale(gr_var *x, double below, double on, double above) {
    gr__triscale_params p;
    if (!x) return NULL;
    memset(&p, 0, sizeof p);
    p.w[0] = below; p.w[1] = on; p.w[2] = above;
    return gr__node1(x->graph, &gr__op_TriScale, &p, sizeof p, 1, &x);
}
static gr_var *gr__trace_any(gr_var *x) {
    return x ? gr__node1(x->graph, &gr__op_Trace, NULL, 0, 1, &x) : NULL;
}
/* (x + x^T) / 2 of a square matrix */
static gr_var *gr__sym(gr_var *x) {
    if (!x) return NULL;
    return gr_mul(gr__scalar_const(x->graph, x->dtype, 0.5, 0), gr_add(x, gr_transpose(x)));
}

/* ---- kernels --------------------------------------------------------------------------------------- */

static void gr__swap_rows(void *x, int64_t row_elems, int64_t i, int64_t j, size_t es) {
    size_t nb = (size_t)row_elems * es, q;
    unsigned char *a, *b;
    if (i == j) return;
    a = (unsigned char *)x + (size_t)i * nb;
    b = (unsigned char *)x + (size_t)j * nb;
    for (q = 0; q < nb; q++) { unsigned char t = a[q]; a[q] = b[q]; b[q] = t; }
}

/* P A = L U into F (see LUFactor), right-looking by rows with partial pivoting. A zero column
   leaves a zero pivot (the matrix is singular) and the elimination goes on past it, as getrf. */
static void gr__lu_factor(const gr_array *a, double *F) {
    int64_t n = a->shape[0], i, j, k;
    double *piv = F + n * n;
    gr__convert(GR_F64, F, a->dtype, a->data, n * n);
    for (k = 0; k < n; k++) {
        double *rk, best = fabs(F[k * n + k]);
        int64_t p = k;
        for (i = k + 1; i < n; i++)
            if (fabs(F[i * n + k]) > best) { best = fabs(F[i * n + k]); p = i; }
        piv[k] = (double)p;
        gr__swap_rows(F, n, k, p, sizeof(double));
        rk = F + k * n;
        if (rk[k] == 0) continue;
        for (i = k + 1; i < n; i++) {
            double *ri = F + i * n, l = ri[k] / rk[k];
            ri[k] = l;
            if (l != 0) for (j = k + 1; j < n; j++) ri[j] -= l * rk[j];
        }
    }
}

/* the first zero pivot of a factor, or -1 */
static int64_t gr__lu_zero_pivot(const double *F, int64_t n) {
    int64_t k;
    for (k = 0; k < n; k++) if (F[k * n + k] == 0) return k;
    return -1;
}

/* det A: U's diagonal, negated for every row swap */
static double gr__lu_det(const double *F, int64_t n) {
    const double *piv = F + n * n;
    double d = 1;
    int64_t k;
    for (k = 0; k < n; k++) {
        d *= F[k * n + k];
        if ((int64_t)piv[k] != k) d = -d;
    }
    return d;
}

/* log |det A| (summed, so that it neither overflows nor underflows) and the sign of det A; a zero
   pivot gives -inf with sign 0 */
static double gr__lu_logabsdet(const double *F, int64_t n, int *sign) {
    const double *piv = F + n * n;
    double l = 0;
    int64_t k;
    int s = 1;
    for (k = 0; k < n; k++) {
        double u = F[k * n + k];
        if (u == 0) { *sign = 0; return -INFINITY; }
        if (u < 0) { s = -s; u = -u; }
        if ((int64_t)piv[k] != k) s = -s;
        l += log(u);
    }
    *sign = s;
    return l;
}

/* adj A into X from A's factor F, never dividing by a pivot, so that it is exact where A is
   singular too. adj(X Y) = adj(Y) adj(X) for any square X and Y, so A = P^T L U gives
   adj A = adj(U) adj(L) adj(P^T) = det(P) adj(U) L^-1 P. U is upper triangular with diagonal d,
   and so is adj U: adj(U)[i][j] = (prod_{k<i} d_k) z_ij (prod_{k>j} d_k) for i <= j, with z_jj = 1
   and z_ij = -sum_{i<k<=j} U[i][k] (prod_{i<m<k} d_m) z_kj, which is back substitution for U^-1
   with every division by a pivot multiplied out (both sides are polynomials in U that agree
   wherever U is invertible). Then each row y of adj(U) becomes w = y L^-1 (w L = y, from the last
   column), the columns are swapped as P on the right asks (the swaps in reverse order), and the
   sign of P applied. O(n^3) like the inverse; a pivot that is zero makes the products that hold it
   zero, and two of them make every entry zero (rank n - 2). */
#define GR__LU_ADJUGATE(fn, T) \
    static void fn(const double *F, int64_t n, T *X) { \
        const double *piv = F + n * n; \
        double pre = 1; \
        int64_t i, j, k, swaps = 0; \
        for (j = 0; j < n; j++) {                    /* z, column by column, from the diagonal up */ \
            X[j * n + j] = 1; \
            for (i = j - 1; i >= 0; i--) { \
                double s = 0, q = 1; \
                for (k = i + 1; k <= j; k++) { s += F[i * n + k] * q * (double)X[k * n + j]; q *= F[k * n + k]; } \
                X[i * n + j] = (T)-s; \
            } \
            for (i = j + 1; i < n; i++) X[i * n + j] = 0; \
        } \
        for (i = 0; i < n; i++) {                    /* adj U = the pivots before row i and after column j, times z */ \
            double suf = 1; \
            for (j = n - 1; j >= i; j--) { X[i * n + j] = (T)((double)X[i * n + j] * pre * suf); suf *= F[j * n + j]; } \
            pre *= F[i * n + i]; \
        } \
        for (i = 0; i < n; i++) {                    /* row i times L^-1 */ \
            T *xi = X + i * n; \
            for (j = n - 2; j >= 0; j--) { \
                double s = (double)xi[j]; \
                for (k = j + 1; k < n; k++) s -= (double)xi[k] * F[k * n + j]; \
                xi[j] = (T)s; \
            } \
        } \
        for (k = n - 1; k >= 0; k--) {               /* times P: columns k and piv[k] swapped */ \
            int64_t p = (int64_t)piv[k]; \
            if (p == k) continue; \
            swaps++; \
            for (i = 0; i < n; i++) { T t = X[i * n + k]; X[i * n + k] = X[i * n + p]; X[i * n + p] = t; } \
        } \
        if (swaps % 2) for (k = 0; k < n * n; k++) X[k] = -X[k]; \
    }
GR__LU_ADJUGATE(gr__lu_adjugate_f64, double)
GR__LU_ADJUGATE(gr__lu_adjugate_f32, float)

/* x (n rows of R elements) := A^-1 x, or A^-T x when trans, from A's factor F. A = P^T L U, so
   A x = b is L y = P b then U x = y; A^T = U^T L^T P, so A^T x = b is U^T z = b, L^T w = z and
   x = P^T w (the swaps undone in reverse). Row-oriented: every inner loop runs along a row. */
#define GR__LU_SOLVE(fn, T) \
    static void fn(const double *F, int64_t n, int trans, T *x, int64_t R) { \
        const double *piv = F + n * n; \
        int64_t i, j, k, r; \
        if (!trans) { \
            for (k = 0; k < n; k++) gr__swap_rows(x, R, k, (int64_t)piv[k], sizeof(T)); \
            for (i = 1; i < n; i++) { \
                T *xi = x + i * R; \
                for (j = 0; j < i; j++) { \
                    T l = (T)F[i * n + j]; const T *xj = x + j * R; \
                    if (l != 0) for (r = 0; r < R; r++) xi[r] -= l * xj[r]; \
                } \
            } \
            for (i = n - 1; i >= 0; i--) { \
                T *xi = x + i * R, d = (T)F[i * n + i]; \
                for (j = i + 1; j < n; j++) { \
                    T u = (T)F[i * n + j]; const T *xj = x + j * R; \
                    if (u != 0) for (r = 0; r < R; r++) xi[r] -= u * xj[r]; \
                } \
                for (r = 0; r < R; r++) xi[r] /= d; \
            } \
        } else { \
            for (i = 0; i < n; i++) { \
                T *xi = x + i * R, d = (T)F[i * n + i]; \
                for (j = 0; j < i; j++) { \
                    T u = (T)F[j * n + i]; const T *xj = x + j * R; \
                    if (u != 0) for (r = 0; r < R; r++) xi[r] -= u * xj[r]; \
                } \
                for (r = 0; r < R; r++) xi[r] /= d; \
            } \
            for (i = n - 1; i >= 0; i--) { \
                T *xi = x + i * R; \
                for (j = i + 1; j < n; j++) { \
                    T l = (T)F[j * n + i]; const T *xj = x + j * R; \
                    if (l != 0) for (r = 0; r < R; r++) xi[r] -= l * xj[r]; \
                } \
            } \
            for (k = n - 1; k >= 0; k--) gr__swap_rows(x, R, k, (int64_t)piv[k], sizeof(T)); \
        } \
    }
GR__LU_SOLVE(gr__lu_solve_f64, double)
GR__LU_SOLVE(gr__lu_solve_f32, float)

static void gr__lu_solve(const double *F, int64_t n, int trans, gr_array *x) {
    int64_t R = n ? x->size / n : 0;
    if (x->dtype == GR_F64) gr__lu_solve_f64(F, n, trans, (double *)x->data, R);
    else gr__lu_solve_f32(F, n, trans, (float *)x->data, R);
}

/* L L^T = A from A's lower triangle, by rows (Cholesky-Banachiewicz): L[i][j] needs rows i and j
   of L up to column j, both contiguous. Sums in float64. Returns -1, or the row whose pivot is not
   positive (the leading minor of that order is not positive: A is not positive definite). */
#define GR__CHOLESKY(fn, T) \
    static int64_t fn(const T *A, T *L, int64_t n) { \
        int64_t i, j, k; \
        for (i = 0; i < n; i++) { \
            T *li = L + i * n; \
            for (j = 0; j <= i; j++) { \
                const T *lj = L + j * n; \
                double s = (double)A[i * n + j]; \
                for (k = 0; k < j; k++) s -= (double)li[k] * (double)lj[k]; \
                if (i == j) { \
                    if (!(s > 0)) return i; \
                    li[i] = (T)sqrt(s); \
                } else \
                    li[j] = (T)(s / (double)lj[j]); \
            } \
            for (j = i + 1; j < n; j++) li[j] = 0; \
        } \
        return -1; \
    }
GR__CHOLESKY(gr__cholesky_f64, double)
GR__CHOLESKY(gr__cholesky_f32, float)

static int gr__all_finite(const gr_array *a) {
    int64_t k;
    if (a->dtype == GR_F64) {
        const double *d = (const double *)a->data;
        for (k = 0; k < a->size; k++) if (!isfinite(d[k])) return 0;
    } else if (a->dtype == GR_F32) {
        const float *f = (const float *)a->data;
        for (k = 0; k < a->size; k++) if (!isfinite(f[k])) return 0;
    }
    return 1;
}

/* after a solve: a zero pivot was caught before; an overflow from finite A and b is singularity
   to working precision (a pivot too small to divide by), reported rather than returned */
static gr_status gr__la_overflow_check(const gr_node *node, const gr_array *x, const gr_array *A, const gr_array *b) {
    if (gr__all_finite(x) || !gr__all_finite(A) || (b && !gr__all_finite(b))) return GR_OK;
    return gr_node_error(node, GR_ERR_RUNTIME, "the matrix %s is singular to working precision: the solution overflows (in %s)",
                         gr__d(gr__in(node)[0]).s, gr__la_fname(node));
}
static gr_status gr__la_singular(const gr_node *node, int64_t k) {
    return gr_node_error(node, GR_ERR_RUNTIME, "the matrix %s is singular: pivot %lld of its LU factorisation is zero (in %s)",
                         gr__d(gr__in(node)[0]).s, (long long)k, gr__la_fname(node));
}

/* ---- LUFactor ------------------------------------------------------------------------------------- */

static gr_status gr__LUFactor_infer(const gr_node *node, gr_type *out) {
    gr_var *a = gr__in(node)[0];
    int64_t n;
    gr_status st = gr__la_square_static(node, a);
    if (st != GR_OK) return st;
    n = gr__vshape(a)[0] >= 0 ? gr__vshape(a)[0] : gr__vshape(a)[1];
    out->dtype = GR_F64;
    out->ndim = 2;
    out->shape[0] = n >= 0 ? n + 1 : -1;
    out->shape[1] = n;
    return GR_OK;
}
static gr_status gr__LUFactor_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    gr_status st = gr__la_square_check(node, in[0], NULL);
    if (st != GR_OK) return st;
    out[0]->shape[0] = in[0]->shape[0] + 1;
    out[0]->shape[1] = in[0]->shape[0];
    return GR_OK;
}
static gr_status gr__LUFactor_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    gr__lu_factor(in[0], (double *)out[0]->data);
    return GR_OK;
}
static gr_status gr__LUFactor_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    (void)og;
    ig[0] = gr_disconnected_like(gr__in(node)[0]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__LUFactor_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node; (void)ev;
    orop[0] = NULL;                      /* a workspace: the consumers differentiate A */
    return GR_OK;
}

/* ---- MatrixInverse and Cholesky: a square matrix to a square matrix --------------------------- */

static gr_status gr__la_square_infer(const gr_node *node, gr_type *out) {
    gr_status st = gr__la_square_static(node, gr__in(node)[0]);
    if (st == GR_OK && node->n_in == 2) st = gr__lu_static(node, gr__in(node)[1]);
    if (st != GR_OK) return st;
    gr_var_type(gr__in(node)[0], out);
    if (out->shape[0] < 0) out->shape[0] = out->shape[1];
    if (out->shape[1] < 0) out->shape[1] = out->shape[0];
    return GR_OK;
}
static gr_status gr__la_square_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    gr_status st = gr__la_square_check(node, in[0], node->n_in == 2 ? in[1] : NULL);
    if (st != GR_OK) return st;
    out[0]->shape[0] = out[0]->shape[1] = in[0]->shape[0];
    return GR_OK;
}

GR_API gr_var *gr_matrix_inverse(gr_var *a) {
    gr_graph *g;
    if (!gr__operands("gr_matrix_inverse", 1, &a, &g)) return NULL;
    a = gr__la_operand("gr_matrix_inverse", g, a);
    return gr__la_with_lu(&gr__op_MatrixInverse, a, gr__lu(a, GR__LU_FOR_INVERSE));
}

/* X := I, then X := A^-1 X in place */
static gr_status gr__MatrixInverse_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const double *F = (const double *)in[1]->data;
    gr_array *X = out[0];
    int64_t n = in[0]->shape[0], k = gr__lu_zero_pivot(F, n);
    if (k >= 0) return gr__la_singular(node, k);
    memset(X->data, 0, (size_t)X->size * gr__dsize(X->dtype));
    for (k = 0; k < n; k++) gr__store(X->dtype, X->data, k * n + k, 1.0);
    gr__lu_solve(F, n, 0, X);
    return gr__la_overflow_check(node, X, in[0], NULL);
}
static gr_status gr__MatrixInverse_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *X = gr__out(node)[0];
    ig[0] = gr_neg(gr__dot_flags(X, gr__dot_flags(og[0], X, 0, 1), 1, 0));      /* -X^T (G X^T) */
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__MatrixInverse_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *X = gr__out(node)[0];
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr_neg(gr_dot(gr_dot(X, ev[0]), X));                             /* -X V X */
    return orop[0] ? GR_OK : node->graph->status;
}

GR_API gr_var *gr_cholesky(gr_var *a) {
    gr_graph *g;
    if (!gr__operands("gr_cholesky", 1, &a, &g)) return NULL;
    a = gr__la_operand("gr_cholesky", g, a);
    return a ? gr__node1(g, &gr__op_Cholesky, NULL, 0, 1, &a) : NULL;
}

static gr_status gr__Cholesky_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t n = in[0]->shape[0], bad;
    if (in[0]->dtype == GR_F64) bad = gr__cholesky_f64((const double *)in[0]->data, (double *)out[0]->data, n);
    else bad = gr__cholesky_f32((const float *)in[0]->data, (float *)out[0]->data, n);
    if (bad >= 0)
        return gr_node_error(node, GR_ERR_RUNTIME, "the matrix %s is not positive definite: its leading minor of order %lld is not "
                             "positive (in gr_cholesky)", gr__d(gr__in(node)[0]).s, (long long)(bad + 1));
    return GR_OK;
}
/* P = Phi(L^T G), S = L^-T P L^-1, dA = (S + S^T) / 2 */
static gr_status gr__Cholesky_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *L = gr__out(node)[0], *Li = gr__la_with_lu(&gr__op_MatrixInverse, L, gr__lu(L, GR__LU_FOR_CHOLESKY));
    gr_var *P = gr__triscale(gr__dot_flags(L, og[0], 1, 0), 1.0, 0.5, 0.0);
    ig[0] = gr__sym(gr__dot_flags(Li, gr_dot(P, Li), 1, 0));
    return ig[0] ? GR_OK : node->graph->status;
}
/* L Phi(L^-1 V_s L^-T) */
static gr_status gr__Cholesky_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *L = gr__out(node)[0], *Li;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    Li = gr__la_with_lu(&gr__op_MatrixInverse, L, gr__lu(L, GR__LU_FOR_CHOLESKY));
    orop[0] = gr_dot(L, gr__triscale(gr_dot(Li, gr__dot_flags(gr__sym(ev[0]), Li, 0, 1)), 1.0, 0.5, 0.0));
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- Det and LogDet: a square matrix to a scalar ------------------------------------------------ */

static gr_status gr__la_scalar_infer(const gr_node *node, gr_type *out) {
    gr_status st = gr__la_square_static(node, gr__in(node)[0]);
    if (st == GR_OK) st = gr__lu_static(node, gr__in(node)[1]);
    if (st != GR_OK) return st;
    out->dtype = (gr_dtype)gr__in(node)[0]->dtype;
    out->ndim = 0;
    return GR_OK;
}
static gr_status gr__la_scalar_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)out;
    return gr__la_square_check(node, in[0], in[1]);
}

GR_API gr_var *gr_det(gr_var *a) {
    gr_graph *g;
    if (!gr__operands("gr_det", 1, &a, &g)) return NULL;
    a = gr__la_operand("gr_det", g, a);
    return gr__la_with_lu(&gr__op_Det, a, gr__lu(a, GR__LU_FOR_DET));
}
GR_API gr_var *gr_logdet(gr_var *a) {
    gr_graph *g;
    if (!gr__operands("gr_logdet", 1, &a, &g)) return NULL;
    a = gr__la_operand("gr_logdet", g, a);
    return gr__la_with_lu(&gr__op_LogDet, a, gr__lu(a, GR__LU_FOR_LOGDET));
}

static gr_status gr__Det_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    gr__store(out[0]->dtype, out[0]->data, 0, gr__lu_det((const double *)in[1]->data, in[0]->shape[0]));
    return GR_OK;
}
static gr_status gr__LogDet_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int sign;
    double l = gr__lu_logabsdet((const double *)in[1]->data, in[0]->shape[0], &sign);
    (void)node;
    gr__store(out[0]->dtype, out[0]->data, 0, sign < 0 ? NAN : l);    /* NaN: the log of a negative number */
    return GR_OK;
}
/* G adj(A)^T: no division by det, so exact at a singular A too */
static gr_status gr__Det_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *J = gr__la_with_lu(&gr__op_Adjugate, gr__in(node)[0], gr__in(node)[1]);
    ig[0] = gr_mul(og[0], gr_transpose(J));
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
/* tr(adj(A) V) = sum(adj(A)^T * V) */
static gr_status gr__Det_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr_sum(gr_mul(gr_transpose(gr__la_with_lu(&gr__op_Adjugate, gr__in(node)[0], gr__in(node)[1])), ev[0]));
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- Adjugate: the derivatives of det ------------------------------------------------------------ */

static gr_status gr__Adjugate_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const double *F = (const double *)in[1]->data;
    int64_t n = in[0]->shape[0];
    (void)node;
    if (out[0]->dtype == GR_F64) gr__lu_adjugate_f64(F, n, (double *)out[0]->data);
    else gr__lu_adjugate_f32(F, n, (float *)out[0]->data);
    return GR_OK;
}
/* D adj(A)[W] = tr(A^-1 W) adj(A) - adj(A) W A^-1 is the derivative along W: its adjoint, the
   gradient, is (D adj(A)[G^T])^T, since <G, D adj(A)[W]> is the second derivative of det along G^T
   and W, which is symmetric. Both solve with A's factor: a singular A fails the call. */
static gr_status gr__Adjugate_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *A = gr__in(node)[0], *F = gr__in(node)[1], *J = gr__out(node)[0], *G = og[0];
    gr_var *t = gr__trace_any(gr__solve_lu(A, gr_transpose(G), F, 0));                 /* tr(A^-1 G^T) */
    ig[0] = gr_sub(gr_mul(t, gr_transpose(J)), gr__solve_lu(A, gr__dot_flags(G, J, 0, 1), F, 1)); /* - A^-T (G J^T) */
    ig[1] = gr_disconnected_like(F);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__Adjugate_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *A = gr__in(node)[0], *F = gr__in(node)[1], *J = gr__out(node)[0], *V = ev[0], *t;
    orop[0] = NULL;
    if (gr_is_disconnected(V)) return GR_OK;
    t = gr__trace_any(gr__solve_lu(A, V, F, 0));                                       /* tr(A^-1 V) */
    orop[0] = gr_sub(gr_mul(t, J), gr__dot_flags(J, gr__solve_lu(A, gr_transpose(V), F, 1), 0, 1));  /* - J (A^-T V^T)^T */
    return orop[0] ? GR_OK : node->graph->status;
}
/* G A^-T */
static gr_status gr__LogDet_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *X = gr__la_with_lu(&gr__op_MatrixInverse, gr__in(node)[0], gr__in(node)[1]);
    ig[0] = gr_mul(og[0], gr_transpose(X));
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
/* tr(A^-1 V) */
static gr_status gr__LogDet_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__trace_any(gr__solve_lu(gr__in(node)[0], ev[0], gr__in(node)[1], 0));
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- Solve ------------------------------------------------------------------------------------------ */

GR_API gr_var *gr_solve(gr_var *a, gr_var *b) {
    gr_var *args[2];
    gr_graph *g;
    int64_t n;
    int T;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_solve", 2, args, &g)) return NULL;
    if (a->ndim != 2)
        return gr__fail(g, GR_ERR_TYPE, "gr_solve: %s must be a matrix (2-d); it has %d dimensions", gr__d(a).s, a->ndim);
    if (b->ndim < 1 || b->ndim > 2)
        return gr__fail(g, GR_ERR_TYPE, "gr_solve: the right-hand side %s must be a vector or a matrix; it has %d dimensions",
                        gr__d(b).s, b->ndim);
    if (gr__vshape(a)[0] >= 0 && gr__vshape(a)[1] >= 0 && gr__vshape(a)[0] != gr__vshape(a)[1])
        return gr__fail(g, GR_ERR_SHAPE, "gr_solve: %s of shape %s is not square", gr__d(a).s, gr__vs(a).s);
    n = gr__vshape(a)[0] >= 0 ? gr__vshape(a)[0] : gr__vshape(a)[1];
    if (n >= 0 && gr__vshape(b)[0] >= 0 && gr__vshape(b)[0] != n)
        return gr__fail(g, GR_ERR_SHAPE, "gr_solve: %s %s and %s %s do not match: the right-hand side needs %lld rows", gr__d(a).s,
                        gr__vs(a).s, gr__d(b).s, gr__vs(b).s, (long long)n);
    T = gr__promote(2, args);
    if (!gr__is_float(T)) T = GR_F64;
    a = gr__coerce(a, T);
    b = gr__coerce(b, T);
    return gr__solve_lu(a, b, gr__lu(a, GR__LU_FOR_SOLVE), 0);
}

static gr_status gr__Solve_infer(const gr_node *node, gr_type *out) {
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1];
    int64_t n;
    gr_status st = gr__la_square_static(node, a);
    if (st == GR_OK) st = gr__lu_static(node, gr__in(node)[2]);
    if (st != GR_OK) return st;
    if (b->ndim < 1 || b->dtype != a->dtype)
        return gr__error(node->graph, GR_ERR_TYPE, "gr_solve: the right-hand side %s must have 1 dimension or more and the dtype "
                         "of %s", gr__d(b).s, gr__d(a).s);
    n = gr__vshape(a)[0] >= 0 ? gr__vshape(a)[0] : gr__vshape(a)[1];
    if (n >= 0 && gr__vshape(b)[0] >= 0 && gr__vshape(b)[0] != n)
        return gr__error(node->graph, GR_ERR_SHAPE, "gr_solve: %s %s and %s %s do not match", gr__d(a).s, gr__vs(a).s, gr__d(b).s,
                         gr__vs(b).s);
    gr_var_type(b, out);
    if (out->shape[0] < 0) out->shape[0] = n;
    return GR_OK;
}
static gr_status gr__Solve_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    gr_status st = gr__la_square_check(node, in[0], in[2]);
    if (st != GR_OK) return st;
    if (in[1]->shape[0] != in[0]->shape[0])
        return gr_node_error(node, GR_ERR_SHAPE, "%s %s and the right-hand side %s %s do not match (in gr_solve)", gr__d(gr__in(node)[0]).s,
                             gr__as(in[0]).s, gr__d(gr__in(node)[1]).s, gr__as(in[1]).s);
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[i] = in[1]->shape[i];
    return GR_OK;
}
/* x := b, then x := A^-1 x in place */
static gr_status gr__Solve_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const double *F = (const double *)in[2]->data;
    int64_t n = in[0]->shape[0], k = gr__lu_zero_pivot(F, n);
    if (k >= 0) return gr__la_singular(node, k);
    if (out[0]->data != in[1]->data) memcpy(out[0]->data, in[1]->data, (size_t)in[1]->size * gr__dsize(in[1]->dtype));
    gr__lu_solve(F, n, ((const gr__solve_params *)gr__params(node))->trans, out[0]);
    return gr__la_overflow_check(node, out[0], in[0], in[1]);
}
/* x = op(A)^-1 b: db = op(A)^-T G; dA = -db x^T (op = identity) or -x db^T (op = transpose),
   contracted over every axis of b but the first */
static gr_status gr__Solve_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    int trans = ((const gr__solve_params *)gr__params(node))->trans;
    gr_var *x = gr__out(node)[0], *db = gr__solve_lu(gr__in(node)[0], og[0], gr__in(node)[2], !trans);
    ig[1] = db;
    ig[0] = gr_neg(trans ? gr__tdot(x, db, 1, 1, 0, 1) : gr__tdot(db, x, 1, 1, 0, 1));
    ig[2] = gr_disconnected_like(gr__in(node)[2]);
    return ig[0] && ig[1] && ig[2] ? GR_OK : node->graph->status;
}
/* op(A)^-1 (v_b - op(V) x) */
static gr_status gr__Solve_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    int trans = ((const gr__solve_params *)gr__params(node))->trans;
    gr_var *rhs = NULL;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) && gr_is_disconnected(ev[1])) return GR_OK;
    if (!gr_is_disconnected(ev[0])) {
        gr_var *vx = gr__tdot(ev[0], gr__out(node)[0], 1, 1, trans, 0);
        rhs = gr_is_disconnected(ev[1]) ? gr_neg(vx) : gr_sub(ev[1], vx);
    } else
        rhs = ev[1];
    orop[0] = gr__solve_lu(gr__in(node)[0], rhs, gr__in(node)[2], trans);
    return orop[0] ? GR_OK : node->graph->status;
}
/* only b batched: one solve of all the right-hand sides, the batch axis moved behind b's first
   axis and back (a swap of axes 0 and 1 both ways); otherwise row by row */
static gr_status gr__Solve_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    int pattern[GR_MAX_NDIM], nd = in[1]->ndim, i;
    gr_var *x;
    if (batched[0] || batched[2] || !batched[1]) return gr__map_batch(node, in, batched, out);
    pattern[0] = 1; pattern[1] = 0;
    for (i = 2; i < nd; i++) pattern[i] = i;
    x = gr__solve_lu(in[0], gr__dimshuffle(in[1], nd, pattern, 0), in[2], ((const gr__solve_params *)gr__params(node))->trans);
    out[0] = gr__dimshuffle(x, nd, pattern, 0);
    return out[0] ? GR_OK : node->graph->status;
}

/* ---- Trace and TriScale: on the last two axes, whatever comes before --------------------------- */

GR_API gr_var *gr_trace(gr_var *a) {
    gr_graph *g;
    if (!gr__operands("gr_trace", 1, &a, &g)) return NULL;
    if (a->ndim != 2)
        return gr__fail(g, GR_ERR_TYPE, "gr_trace: %s must be a matrix (2-d); it has %d dimensions", gr__d(a).s, a->ndim);
    if (a->dtype == GR_BOOL) a = gr_cast(a, GR_I64);
    return gr__trace_any(a);
}

static gr_status gr__Trace_infer(const gr_node *node, gr_type *out) {
    gr_var *x = gr__in(node)[0];
    int i;
    if (x->ndim < 2 || x->dtype == GR_BOOL)
        return gr__error(node->graph, GR_ERR_TYPE, "gr_trace: %s must have 2 dimensions or more and a numeric dtype", gr__d(x).s);
    out->dtype = (gr_dtype)x->dtype;
    out->ndim = x->ndim - 2;
    for (i = 0; i < out->ndim; i++) out->shape[i] = gr__vshape(x)[i];
    return GR_OK;
}
static gr_status gr__Trace_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    (void)node;
    for (i = 0; i < out[0]->ndim; i++) out[0]->shape[i] = in[0]->shape[i];
    return GR_OK;
}
static gr_status gr__Trace_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[0];
    int64_t n = x->shape[x->ndim - 2], m = x->shape[x->ndim - 1], d = n < m ? n : m, outer = out[0]->size, o, i;
    (void)node;
    for (o = 0; o < outer; o++) {
        int64_t base = o * n * m;
        if (x->dtype == GR_I64) {
            uint64_t s = 0;                  /* wraps, as NumPy's int64 sum */
            for (i = 0; i < d; i++) s += (uint64_t)((const int64_t *)x->data)[base + i * m + i];
            ((int64_t *)out[0]->data)[o] = (int64_t)s;
        } else {
            double s = 0;
            for (i = 0; i < d; i++) s += gr__load(x->dtype, x->data, base + i * m + i);
            gr__store(x->dtype, out[0]->data, o, s);
        }
    }
    return GR_OK;
}
/* G on the diagonal: TriScale(0, 1, 0) of G broadcast to x's shape */
static gr_status gr__Trace_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0];
    int pattern[GR_MAX_NDIM], i, k = og[0]->ndim;
    if (!gr__is_float(x->dtype)) ig[0] = gr__zeros_grad(x);
    else {
        for (i = 0; i < k; i++) pattern[i] = i;
        pattern[k] = pattern[k + 1] = GR_NEWAXIS;
        ig[0] = gr__triscale(gr_broadcast_like(gr__dimshuffle(og[0], k + 2, pattern, 0), x), 0.0, 1.0, 0.0);
    }
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Trace_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__trace_any(ev[0]);
    return orop[0] ? GR_OK : node->graph->status;
}

#define GR__TRISCALE(fn, T) \
    static void fn(const T *x, T *y, int64_t outer, int64_t n, int64_t m, const double *w) { \
        int64_t o, i, j; \
        for (o = 0; o < outer; o++) \
            for (i = 0; i < n; i++) { \
                const T *xi = x + (o * n + i) * m; \
                T *yi = y + (o * n + i) * m; \
                for (j = 0; j < m; j++) yi[j] = xi[j] * (T)w[j < i ? 0 : j == i ? 1 : 2]; \
            } \
    }
GR__TRISCALE(gr__triscale_f64, double)
GR__TRISCALE(gr__triscale_f32, float)

static gr_status gr__TriScale_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const double *w = ((const gr__triscale_params *)gr__params(node))->w;
    const gr_array *x = in[0];
    int64_t n, m, outer;
    if (x->ndim < 2 || !gr__is_float(x->dtype))
        return gr_node_error(node, GR_ERR_TYPE, "%s must be a float tensor of 2 dimensions or more", gr__d(gr__in(node)[0]).s);
    n = x->shape[x->ndim - 2];
    m = x->shape[x->ndim - 1];
    outer = n * m != 0 ? x->size / (n * m) : 0;
    if (x->dtype == GR_F64) gr__triscale_f64((const double *)x->data, (double *)out[0]->data, outer, n, m, w);
    else gr__triscale_f32((const float *)x->data, (float *)out[0]->data, outer, n, m, w);
    return GR_OK;
}
/* a fixed weight per element: its own adjoint */
static gr_status gr__TriScale_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const double *w = ((const gr__triscale_params *)gr__params(node))->w;
    ig[0] = gr__triscale(og[0], w[0], w[1], w[2]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__TriScale_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const double *w = ((const gr__triscale_params *)gr__params(node))->w;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__triscale(ev[0], w[0], w[1], w[2]);
    return orop[0] ? GR_OK : node->graph->status;
}
#endif /* GR_NO_LINALG */

/* ==== ops/nnet.c: generated region; edit ops/nnet.c, then run make gradient.h ==== */
/* ops/nnet.c: Softmax and LogSoftmax over one axis, numerically stable; CrossEntropy and OneHot
   (the losses, at the end of the file).

   Shapes: x -> y of the same shape; the axis is split as (outer, n, inner).
   softmax(x)_i = e^(x_i - m) / sum_j e^(x_j - m),  log_softmax(x)_i = x_i - m - log sum_j e^(x_j - m),
   m = max_j x_j over the axis. */

typedef struct gr__axis_params { int axis; } gr__axis_params;   /* (ops/batch.c's axis rule) */

#ifndef GR_NO_NNET                  /* ops/table.h, op families: all but gr__axis_split */

static gr_var *gr__axis_op(const char *fname, const gr_op_def *op, gr_var *x, int axis) {
    gr__axis_params p;
    gr_graph *g;
    int a;
    if (!gr__operands(fname, 1, &x, &g)) return NULL;
    if (x->ndim == 0) return gr__fail(g, GR_ERR_VALUE, "%s: %s is 0-d; it needs an axis", fname, gr__d(x).s);
    a = gr__axis(axis, x->ndim);
    if (a < 0) return gr__fail(g, GR_ERR_VALUE, "%s: axis %d out of range for %s with %d dimensions", fname, axis, gr__d(x).s, x->ndim);
    if (!gr__is_float(x->dtype)) x = gr_cast(x, GR_F64);
    memset(&p, 0, sizeof p);
    p.axis = a;
    return gr__node1(g, op, &p, sizeof p, 1, &x);
}

GR_API gr_var *gr_softmax(gr_var *x, int axis) { return gr__axis_op("gr_softmax", &gr__op_Softmax, x, axis); }
GR_API gr_var *gr_log_softmax(gr_var *x, int axis) { return gr__axis_op("gr_log_softmax", &gr__op_LogSoftmax, x, axis); }

#endif /* GR_NO_NNET */

/* (outer, n, inner) of an array around axis (ops/reduce.c's along-one-axis ops too) */
static GR__UNUSED void gr__axis_split(const gr_array *x, int axis, int64_t *outer, int64_t *n, int64_t *inner) {
    int i;
    *outer = 1; *inner = 1; *n = x->shape[axis];
    for (i = 0; i < axis; i++) *outer *= x->shape[i];
    for (i = axis + 1; i < x->ndim; i++) *inner *= x->shape[i];
}

#ifndef GR_NO_NNET

#define GR__SOFTMAX(fn, T, EXP, LOG) \
    static void fn(int log_out, int64_t outer, int64_t n, int64_t inner, const T *x, T *y) { \
        int64_t o, i, j; \
        for (o = 0; o < outer; o++) \
            for (j = 0; j < inner; j++) { \
                const T *xs = x + o * n * inner + j; \
                T *ys = y + o * n * inner + j; \
                double m = -INFINITY, s = 0; \
                for (i = 0; i < n; i++) if ((double)xs[i * inner] > m) m = (double)xs[i * inner]; \
                if (m == -INFINITY) m = 0; \
                for (i = 0; i < n; i++) { double e = EXP((double)xs[i * inner] - m); s += e; if (!log_out) ys[i * inner] = (T)e; } \
                if (log_out) { double ls = m + LOG(s); for (i = 0; i < n; i++) ys[i * inner] = (T)((double)xs[i * inner] - ls); } \
                else { double inv = 1.0 / s; for (i = 0; i < n; i++) ys[i * inner] = (T)((double)ys[i * inner] * inv); } \
            } \
    }
GR__SOFTMAX(gr__softmax_f64, double, exp, log)
GR__SOFTMAX(gr__softmax_f32, float, exp, log)

static gr_status gr__softmax_run(const gr_node *node, int log_out, const gr_array *x, gr_array *y) {
    int64_t outer, n, inner;
    gr__axis_split(x, ((const gr__axis_params *)gr__params(node))->axis, &outer, &n, &inner);
    if (x->dtype == GR_F64) gr__softmax_f64(log_out, outer, n, inner, (const double *)x->data, (double *)y->data);
    else gr__softmax_f32(log_out, outer, n, inner, (const float *)x->data, (float *)y->data);
    return GR_OK;
}
static gr_status gr__Softmax_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    return gr__softmax_run(node, 0, in[0], out[0]);
}
static gr_status gr__LogSoftmax_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    return gr__softmax_run(node, 1, in[0], out[0]);
}

static gr_var *gr__sum_keep(gr_var *x, int axis) { return gr_sum_axes(x, 1, &axis, 1); }

/* softmax: J = diag(s) - s s^T (symmetric), so the gradient and the R-op are one formula:
   s * (g - sum_axis(s * g)) */
static gr_var *gr__softmax_jprod(const gr_node *node, gr_var *g) {
    gr_var *s = gr__out(node)[0];
    int axis = ((const gr__axis_params *)gr__params(node))->axis;
    return gr_mul(s, gr_sub(g, gr__sum_keep(gr_mul(s, g), axis)));
}
static gr_status gr__Softmax_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr__softmax_jprod(node, og[0]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Softmax_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__softmax_jprod(node, ev[0]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* log_softmax: J = I - 1 s^T. Gradient J^T g = g - s sum_axis(g); R-op J v = v - sum_axis(s v)
   (J v, the true JVP: Aesara's R-op reuses the gradient formula, but J is not symmetric) */
static gr_status gr__LogSoftmax_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    int axis = ((const gr__axis_params *)gr__params(node))->axis;
    gr_var *s = gr_exp(gr__out(node)[0]);
    ig[0] = gr_sub(og[0], gr_mul(s, gr__sum_keep(og[0], axis)));
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__LogSoftmax_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    int axis = ((const gr__axis_params *)gr__params(node))->axis;
    gr_var *s;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    s = gr_exp(gr__out(node)[0]);
    orop[0] = gr_sub(ev[0], gr__sum_keep(gr_mul(s, ev[0]), axis));
    return orop[0] ? GR_OK : node->graph->status;
}

/* log(softmax(x)) -> log_softmax(x): exact where the softmax underflows (src/rewrite.h) */
static gr_var *gr__log_softmax_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    const gr_node *n = gr__owner(in[0]);
    (void)row;
    if (!n || n->op != &gr__op_Softmax) return NULL;
    return gr__replaced(done, gr__rw1(rw, &gr__op_LogSoftmax, gr__params(n), n->params_size, 1, gr__in(n)));
}

/* ==== the losses: CrossEntropy and OneHot ========================================================

   Shapes: logits z (*rows, K) and labels t (*rows, K) -> 0-d, the mean over the N rows (N = the
           product of *rows) of
             sum_k t_k (lse(z) - z_k),   lse(z) = m + log sum_k e^(z_k - m),  m = max_k z_k,
           computed as t_k ((m - z_k) + log sum_k e^(z_k - m)): logits near 1e3 neither overflow nor
           cancel. A term with t_k == 0 counts as 0, so a class masked with a -inf logit stays finite.
           OneHot ids (*rows) I64, ref (*rows, K) -> ref's shape in a float dtype: row r is e_{ids[r]};
           an id outside [0, K) is GR_ERR_RUNTIME naming it.
   gr_crossentropy with I64 class ids builds CrossEntropy(z, OneHot(ids, z)); OneHot carries no
   derivative, so the ids are disconnected. Float labels (one-hot or soft) are differentiable:
     d/dz = (softmax(z) sum_k t_k - t) / N    (softmax(z) - onehot(ids)) / N with ids
     d/dt = -log_softmax(z) / N                                                                 */

typedef struct gr__onehot_params { int dtype; } gr__onehot_params;

GR_API gr_var *gr_crossentropy(gr_var *logits, gr_var *labels) {
    gr_var *args[2];
    gr_graph *g;
    int nd, T, i;
    args[0] = logits; args[1] = labels;
    if (!gr__operands("gr_crossentropy", 2, args, &g)) return NULL;
    nd = logits->ndim;
    if (nd == 0)
        return gr__fail(g, GR_ERR_TYPE, "gr_crossentropy: the logits %s are 0-d; they need a class axis (the last one)", gr__d(logits).s);
    T = gr__is_float(logits->dtype) ? (int)logits->dtype : (int)GR_F64;
    if (labels->dtype == GR_I64) {                   /* one class id per row */
        gr__onehot_params p;
        gr_var *oh[2];
        if (labels->ndim != nd - 1)
            return gr__fail(g, GR_ERR_TYPE, "gr_crossentropy: the class ids %s have %d dimensions; the logits %s %s need %d (one id per row)",
                            gr__d(labels).s, labels->ndim, gr__d(logits).s, gr__vs(logits).s, nd - 1);
        for (i = 0; i < nd - 1; i++)
            if (gr__vshape(labels)[i] >= 0 && gr__vshape(logits)[i] >= 0 && gr__vshape(labels)[i] != gr__vshape(logits)[i])
                return gr__fail(g, GR_ERR_SHAPE, "gr_crossentropy: the class ids %s %s do not match the rows of the logits %s %s",
                                gr__d(labels).s, gr__vs(labels).s, gr__d(logits).s, gr__vs(logits).s);
        args[0] = gr__coerce(logits, T);
        if (!args[0]) return NULL;
        memset(&p, 0, sizeof p);
        p.dtype = T;
        oh[0] = labels; oh[1] = args[0];
        args[1] = gr__node1(g, &gr__op_OneHot, &p, sizeof p, 2, oh);
    } else {                                         /* float (or bool) label rows, one-hot or soft */
        if (labels->ndim != nd)
            return gr__fail(g, GR_ERR_TYPE, "gr_crossentropy: the labels %s have %d dimensions; the logits %s %s have %d (give float "
                            "label rows, or int64 class ids)", gr__d(labels).s, labels->ndim, gr__d(logits).s, gr__vs(logits).s, nd);
        for (i = 0; i < nd; i++)
            if (gr__vshape(labels)[i] >= 0 && gr__vshape(logits)[i] >= 0 && gr__vshape(labels)[i] != gr__vshape(logits)[i])
                return gr__fail(g, GR_ERR_SHAPE, "gr_crossentropy: the labels %s %s do not match the logits %s %s", gr__d(labels).s,
                                gr__vs(labels).s, gr__d(logits).s, gr__vs(logits).s);
        if (labels->dtype == GR_F64) T = GR_F64;
        args[0] = gr__coerce(logits, T);
        args[1] = gr__coerce(labels, T);
    }
    if (!args[0] || !args[1]) return NULL;
    return gr__node1(g, &gr__op_CrossEntropy, NULL, 0, 2, args);
}

/* ---- type and shape rules --------------------------------------------------------------------- */

static gr_status gr__CrossEntropy_infer(const gr_node *node, gr_type *out) {
    const gr_var *z = gr__in(node)[0], *t = gr__in(node)[1];
    int i;
    if (z->ndim < 1 || t->ndim != z->ndim || t->dtype != z->dtype || !gr__is_float(z->dtype))
        return gr__error(node->graph, GR_ERR_TYPE, "CrossEntropy: logits %s (%s, %d-d) and labels %s (%s, %d-d) need one float dtype "
                         "and one ndim of at least 1", gr__d(z).s, gr_dtype_name((gr_dtype)z->dtype), z->ndim, gr__d(t).s,
                         gr_dtype_name((gr_dtype)t->dtype), t->ndim);
    for (i = 0; i < z->ndim; i++)
        if (gr__vshape(z)[i] >= 0 && gr__vshape(t)[i] >= 0 && gr__vshape(z)[i] != gr__vshape(t)[i])
            return gr__error(node->graph, GR_ERR_SHAPE, "CrossEntropy: labels %s %s do not match logits %s %s", gr__d(t).s, gr__vs(t).s,
                             gr__d(z).s, gr__vs(z).s);
    out->dtype = (gr_dtype)z->dtype;
    out->ndim = 0;
    return GR_OK;
}
static gr_status gr__CrossEntropy_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    (void)out;
    for (i = 0; i < in[0]->ndim; i++)
        if (in[0]->shape[i] != in[1]->shape[i])
            return gr_node_error(node, GR_ERR_SHAPE, "labels %s of shape %s do not match logits %s of shape %s", gr__d(gr__in(node)[1]).s,
                                 gr__as(in[1]).s, gr__d(gr__in(node)[0]).s, gr__as(in[0]).s);
    return GR_OK;
}

static gr_status gr__OneHot_infer(const gr_node *node, gr_type *out) {
    const gr_var *ids = gr__in(node)[0], *ref = gr__in(node)[1];
    int i;
    if (ids->dtype != GR_I64 || ref->ndim < 1 || ids->ndim != ref->ndim - 1)
        return gr__error(node->graph, GR_ERR_TYPE, "OneHot: class ids %s (%s, %d-d) need int64 and one dimension less than %s (%d-d)",
                         gr__d(ids).s, gr_dtype_name((gr_dtype)ids->dtype), ids->ndim, gr__d(ref).s, ref->ndim);
    for (i = 0; i < ids->ndim; i++)
        if (gr__vshape(ids)[i] >= 0 && gr__vshape(ref)[i] >= 0 && gr__vshape(ids)[i] != gr__vshape(ref)[i])
            return gr__error(node->graph, GR_ERR_SHAPE, "OneHot: class ids %s %s do not match the rows of %s %s", gr__d(ids).s,
                             gr__vs(ids).s, gr__d(ref).s, gr__vs(ref).s);
    gr_var_type(ref, out);
    out->dtype = (gr_dtype)((const gr__onehot_params *)gr__params(node))->dtype;
    return GR_OK;
}
static gr_status gr__OneHot_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    for (i = 0; i < in[0]->ndim; i++)
        if (in[0]->shape[i] != in[1]->shape[i])
            return gr_node_error(node, GR_ERR_SHAPE, "class ids %s of shape %s do not match the rows of %s of shape %s", gr__d(gr__in(node)[0]).s,
                                 gr__as(in[0]).s, gr__d(gr__in(node)[1]).s, gr__as(in[1]).s);
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[i] = in[1]->shape[i];
    return GR_OK;
}

/* ---- kernels ---------------------------------------------------------------------------------- */

/* the sum over the rows of sum_k t_k (lse(z) - z_k), in double */
#define GR__XENT(fn, T) \
    static double fn(int64_t rows, int64_t K, const T *z, const T *t) { \
        double total = 0; \
        int64_t r, k; \
        for (r = 0; r < rows; r++) { \
            const T *zr = z + r * K, *tr = t + r * K; \
            double m = -INFINITY, s = 0, log_s, row = 0; \
            for (k = 0; k < K; k++) { double v = (double)zr[k]; if (v > m || v != v) m = v; if (v != v) break; } \
            if (m == -INFINITY) m = 0;                   /* every logit -inf: log_s = -inf, the terms inf or NaN */ \
            for (k = 0; k < K; k++) s += exp((double)zr[k] - m); \
            log_s = log(s); \
            for (k = 0; k < K; k++) if (tr[k] != 0) row += (double)tr[k] * ((m - (double)zr[k]) + log_s); \
            total += row; \
        } \
        return total; \
    }
GR__XENT(gr__xent_f64, double)
GR__XENT(gr__xent_f32, float)

static gr_status gr__CrossEntropy_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *z = in[0];
    int64_t K = z->shape[z->ndim - 1], rows = 1;
    double total;
    int i;
    (void)node;
    for (i = 0; i < z->ndim - 1; i++) rows *= z->shape[i];
    if (z->dtype == GR_F64) total = gr__xent_f64(rows, K, (const double *)z->data, (const double *)in[1]->data);
    else total = gr__xent_f32(rows, K, (const float *)z->data, (const float *)in[1]->data);
    gr__store(out[0]->dtype, out[0]->data, 0, rows ? total / (double)rows : NAN);   /* no rows: a mean of nothing */
    return GR_OK;
}

static gr_status gr__OneHot_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const int64_t *ids = (const int64_t *)in[0]->data;
    int64_t K = in[1]->shape[in[1]->ndim - 1], r;
    memset(out[0]->data, 0, (size_t)out[0]->size * gr__dsize(out[0]->dtype));
    for (r = 0; r < in[0]->size; r++) {
        if (ids[r] < 0 || ids[r] >= K)
            return gr_node_error(node, GR_ERR_RUNTIME, "class id %lld (entry %lld of %s) is out of range for the %lld classes of %s",
                                 (long long)ids[r], (long long)r, gr__d(gr__in(node)[0]).s, (long long)K, gr__d(gr__in(node)[1]).s);
        gr__store(out[0]->dtype, out[0]->data, r * K + ids[r], 1.0);
    }
    return GR_OK;
}

/* ---- derivative rules ------------------------------------------------------------------------- */

/* *inv_n = 1/N (from the shapes only) and, when dz is given, *dz = softmax(z) sum_k t_k - t; one-hot
   rows made from class ids sum to 1, so there *dz = softmax(z) - t */
static void gr__xent_parts(const gr_node *node, gr_var **inv_n, gr_var **dz) {
    gr_var *z = gr__in(node)[0], *t = gr__in(node)[1], *tsum;
    int last = z->ndim - 1, dt = gr__out(node)[0]->dtype;
    if (gr__owner(t) && gr__owner(t)->op == &gr__op_OneHot) {
        *inv_n = gr__size_ratio(gr__out(node)[0], gr__in(gr__owner(t))[0], dt);   /* 1 / size(ids) */
        if (dz) *dz = gr_sub(gr_softmax(z, last), t);
        return;
    }
    tsum = gr_sum_axes(t, 1, &last, 1);                                /* (*rows, 1): N elements */
    *inv_n = tsum ? gr__size_ratio(gr__out(node)[0], tsum, dt) : NULL;
    if (dz) *dz = gr_sub(gr_mul(gr_softmax(z, last), tsum), t);
}

static gr_status gr__CrossEntropy_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *z = gr__in(node)[0], *inv_n = NULL, *dz = NULL, *scale;
    gr__xent_parts(node, &inv_n, &dz);
    scale = inv_n ? gr_mul(og[0], inv_n) : NULL;
    ig[0] = gr_mul(dz, scale);
    ig[1] = gr_mul(gr_neg(gr_log_softmax(z, z->ndim - 1)), scale);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}

/* the JVP: (sum(dz v) - sum(log_softmax(z) w)) / N for tangents v of z and w of t */
static gr_status gr__CrossEntropy_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *z = gr__in(node)[0], *inv_n = NULL, *dz = NULL, *acc = NULL;
    int has_v = !gr_is_disconnected(ev[0]), has_w = !gr_is_disconnected(ev[1]);
    orop[0] = NULL;
    if (!has_v && !has_w) return GR_OK;
    gr__xent_parts(node, &inv_n, has_v ? &dz : NULL);
    if (has_v) acc = gr_sum(gr_mul(dz, ev[0]));
    if (has_w) {
        gr_var *term = gr_sum(gr_mul(gr_log_softmax(z, z->ndim - 1), ev[1]));
        acc = has_v ? gr_sub(acc, term) : gr_neg(term);
    }
    orop[0] = gr_mul(acc, inv_n);
    return orop[0] ? GR_OK : node->graph->status;
}

/* OneHot: a constant of the class ids, no derivative to anything */
static gr_status gr__OneHot_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    (void)og;
    ig[0] = gr_disconnected_like(gr__in(node)[0]);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__OneHot_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node; (void)ev;
    orop[0] = NULL;
    return GR_OK;
}
#endif /* GR_NO_NNET */

/* ==== ops/gradops.c: generated region; edit ops/gradops.c, then run make gradient.h ==== */
/* ops/gradops.c: identities in the forward pass that change only the gradient (Aesara's
   zero_grad, disconnected_grad, grad_clip, ...). gr_function removes them: they compute nothing.
   Their R-ops are those of the forward identity, except where no derivative flows (below). */

typedef struct gr__clip_params { double lo, hi; } gr__clip_params;
typedef struct gr__scale_params { double m; } gr__scale_params;

static gr_var *gr__gradop(const char *fname, const gr_op_def *op, gr_var *x, const void *params, size_t size) {
    gr_graph *g;
    if (!gr__operands(fname, 1, &x, &g)) return NULL;
    return gr__node1(g, op, params, size, 1, &x);
}

GR_API gr_var *gr_zero_grad(gr_var *x) { return gr__gradop("gr_zero_grad", &gr__op_ZeroGrad, x, NULL, 0); }
GR_API gr_var *gr_disconnected_grad(gr_var *x) { return gr__gradop("gr_disconnected_grad", &gr__op_DisconnectedGrad, x, NULL, 0); }
GR_API gr_var *gr_undefined_grad(gr_var *x) { return gr__gradop("gr_undefined_grad", &gr__op_UndefinedGrad, x, NULL, 0); }
GR_API gr_var *gr_consider_constant(gr_var *x) {
    if (x) gr__log(x->graph, "gr_consider_constant is deprecated: use gr_zero_grad or gr_disconnected_grad");
    return gr__gradop("gr_consider_constant", &gr__op_ConsiderConstant, x, NULL, 0);
}
GR_API gr_var *gr_grad_clip(gr_var *x, double lower, double upper) {
    gr__clip_params p;
    if (!x) return NULL;
    if (!(upper >= lower))
        return gr__fail(x->graph, GR_ERR_VALUE, "gr_grad_clip: the upper bound %g of %s should be >= the lower bound %g",
                        upper, gr__d(x).s, lower);
    memset(&p, 0, sizeof p);
    p.lo = lower;
    p.hi = upper;
    return gr__gradop("gr_grad_clip", &gr__op_GradClip, x, &p, sizeof p);
}
GR_API gr_var *gr_grad_scale(gr_var *x, double multiplier) {
    gr__scale_params p;
    memset(&p, 0, sizeof p);
    p.m = multiplier;
    return gr__gradop("gr_grad_scale", &gr__op_GradScale, x, &p, sizeof p);
}

/* forward: the identity (the output shares the input's memory when not removed) */
static gr_status gr__identity_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    if (in[0]->size && out[0]->data != in[0]->data)
        memcpy(out[0]->data, in[0]->data, (size_t)in[0]->size * gr__dsize(in[0]->dtype));
    return GR_OK;
}
#define GR__IDENTITY_PERFORM(Name) \
    static gr_status gr__##Name##_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) { \
        return gr__identity_perform(node, in, out); }
GR__IDENTITY_PERFORM(ZeroGrad)
GR__IDENTITY_PERFORM(DisconnectedGrad)
GR__IDENTITY_PERFORM(ConsiderConstant)
GR__IDENTITY_PERFORM(GradClip)
GR__IDENTITY_PERFORM(GradScale)
GR__IDENTITY_PERFORM(UndefinedGrad)

/* zero_grad, consider_constant: zeros shaped like the output gradient */
static gr_status gr__ZeroGrad_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr__fill_like(og[0], og[0]->dtype, 0.0);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__ConsiderConstant_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { return gr__ZeroGrad_grad(node, og, ig); }
static gr_status gr__DisconnectedGrad_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    (void)og;
    ig[0] = gr_disconnected_like(gr__in(node)[0]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__UndefinedGrad_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    (void)og;
    ig[0] = gr_grad_undefined(node, 0, gr__in(node)[0], "gr_undefined_grad marks it so");
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__GradClip_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__clip_params *p = (const gr__clip_params *)gr__params(node);
    ig[0] = gr_clip(og[0], gr_const(node->graph, p->lo), gr_const(node->graph, p->hi));
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__GradScale_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__scale_params *p = (const gr__scale_params *)gr__params(node);
    ig[0] = gr_mul(og[0], gr_const(node->graph, p->m));
    return ig[0] ? GR_OK : node->graph->status;
}

/* R-ops: zeros shaped like the output (the op says the derivative is 0); m v (the gradient is
   scaled by m, so is the tangent); v; and no tangent through the last two (no derivative exists) */
static gr_status gr__ZeroGrad_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__fill_like(gr__out(node)[0], gr__grad_dtype(gr__out(node)[0]), 0.0);
    return orop[0] ? GR_OK : node->graph->status;
}
static gr_status gr__ConsiderConstant_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) { return gr__ZeroGrad_rop(node, ev, orop); }
static gr_status gr__GradScale_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__scale_params *p = (const gr__scale_params *)gr__params(node);
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr_mul(ev[0], gr_const(node->graph, p->m));
    return orop[0] ? GR_OK : node->graph->status;
}
static gr_status gr__GradClip_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node;
    orop[0] = gr_is_disconnected(ev[0]) ? NULL : ev[0];
    return GR_OK;
}
static gr_status gr__DisconnectedGrad_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node; (void)ev;
    orop[0] = NULL;
    return GR_OK;
}
static gr_status gr__UndefinedGrad_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node; (void)ev;
    orop[0] = NULL;
    return GR_OK;
}

/* ==== ops/index.c: generated region; edit ops/index.c, then run make gradient.h ==== */
/* ops/index.c: Slice, Index, Take and their updates (gr_set_subtensor / gr_inc_subtensor).

   Shapes, with x of shape (*pre, n, *post) along `axis`:
     Slice  x[start:stop:step] -> (*pre, count, *post), NumPy's bounds (negative from the end,
            GR_OPEN for an open end, clamped);
     Index  x[i] -> (*pre, *post); i < 0 counts from the end;
     Take   x[indices] -> (*pre, *shape(indices), *post), I64 indices, negative from the end;
     ViewUpdate(x, y), TakeUpdate(x, y, indices) -> shape(x), y broadcast to the viewed part.
   Out-of-range indices are GR_ERR_RUNTIME at call time, naming the index. A contiguous Slice or
   Index (nothing before the axis, step 1) is a view: no copy. */

#ifndef GR_NO_INDEX                  /* ops/table.h, op families: the whole file */

typedef struct gr__view_params {
    int axis;
    int is_index;                /* Index: one position, the axis is removed */
    int inc;                     /* ViewUpdate: increment (1) or set (0) */
    int64_t start, stop, step;   /* Slice; Index keeps its position in start */
} gr__view_params;

typedef struct gr__take_params { int axis; int inc; } gr__take_params;

static const gr__view_params *gr__vp(const gr_node *node) { return (const gr__view_params *)gr__params(node); }

/* (outer, n, inner) of shape around axis */
static void gr__split_axis(int ndim, const int64_t *shape, int axis, int64_t *outer, int64_t *n, int64_t *inner) {
    int i;
    *outer = 1; *inner = 1; *n = shape[axis];
    for (i = 0; i < axis; i++) *outer *= shape[i];
    for (i = axis + 1; i < ndim; i++) *inner *= shape[i];
}

/* NumPy's slice of a length-n axis (Python's slice.indices): the first position and the count,
   for any int64 bounds and step (step != 0; GR_OPEN is an open end, and a step of 1). The bounds
   are clamped into [0, n] (step > 0) or [-1, n - 1] (step < 0) before anything is added, so
   nothing overflows: with step = INT64_MAX, x[0:n:step] has 1 element. */
static void gr__slice_resolve(int64_t n, int64_t start, int64_t stop, int64_t step, int64_t *first, int64_t *count) {
    int64_t a, b;
    if (step == GR_OPEN) step = 1;
    if (step > 0) {
        a = start == GR_OPEN ? 0 : start < 0 ? (start < -n ? 0 : start + n) : (start > n ? n : start);
        b = stop == GR_OPEN ? n : stop < 0 ? (stop < -n ? 0 : stop + n) : (stop > n ? n : stop);
        *count = a < b ? (b - a - 1) / step + 1 : 0;
    } else {
        a = start == GR_OPEN ? n - 1 : start < 0 ? (start < -n ? -1 : start + n) : (start > n - 1 ? n - 1 : start);
        b = stop == GR_OPEN ? -1 : stop < 0 ? (stop < -n ? -1 : stop + n) : (stop > n - 1 ? n - 1 : stop);
        *count = b < a ? (a - b - 1) / -step + 1 : 0;
    }
    *first = a;
}

/* the position of an Index along a length-n axis, or -1 when out of range */
static int64_t gr__index_resolve(int64_t n, int64_t i) {
    if (i < 0) i += n;
    return i >= 0 && i < n ? i : -1;
}

/* ---- building ------------------------------------------------------------------------------------- */

static gr_var *gr__view(const char *fname, gr_var *x, int axis, int is_index, int64_t start, int64_t stop, int64_t step) {
    gr__view_params p;
    gr_graph *g;
    int a;
    if (!gr__operands(fname, 1, &x, &g)) return NULL;
    if (x->ndim == 0) return gr__fail(g, GR_ERR_VALUE, "%s: %s is 0-d and has no axis to index", fname, gr__d(x).s);
    a = gr__axis(axis, x->ndim);
    if (a < 0) return gr__fail(g, GR_ERR_VALUE, "%s: axis %d out of range for %s with %d dimensions", fname, axis, gr__d(x).s, x->ndim);
    if (!is_index && step == 0) return gr__fail(g, GR_ERR_VALUE, "%s: the step of a slice of %s is zero", fname, gr__d(x).s);
    if (is_index && gr__vshape(x)[a] >= 0 && gr__index_resolve(gr__vshape(x)[a], start) < 0)   /* a static size: known now */
        return gr__fail(g, GR_ERR_VALUE, "%s: index %lld is out of range for axis %d of %s with size %lld", fname, (long long)start, a,
                        gr__d(x).s, (long long)gr__vshape(x)[a]);
    if (!is_index && step == GR_OPEN) step = 1;
    memset(&p, 0, sizeof p);
    p.axis = a;
    p.is_index = is_index;
    p.start = start;
    p.stop = stop;
    p.step = step;
    return gr__node1(g, is_index ? &gr__op_Index : &gr__op_Slice, &p, sizeof p, 1, &x);
}

GR_API gr_var *gr_slice(gr_var *x, int axis, int64_t start, int64_t stop, int64_t step) {
    return gr__view("gr_slice", x, axis, 0, start, stop, step);
}
GR_API gr_var *gr_index(gr_var *x, int axis, int64_t i) { return gr__view("gr_index", x, axis, 1, i, 0, 1); }

GR_API gr_var *gr_take(gr_var *x, gr_var *indices, int axis) {
    gr__take_params p;
    gr_var *args[2];
    gr_graph *g;
    int a;
    args[0] = x; args[1] = indices;
    if (!gr__operands("gr_take", 2, args, &g)) return NULL;
    if (x->ndim == 0) return gr__fail(g, GR_ERR_VALUE, "gr_take: %s is 0-d and has no axis to index", gr__d(x).s);
    a = gr__axis(axis, x->ndim);
    if (a < 0) return gr__fail(g, GR_ERR_VALUE, "gr_take: axis %d out of range for %s with %d dimensions", axis, gr__d(x).s, x->ndim);
    if (indices->dtype != GR_I64 && !gr__is_weak(indices))
        return gr__fail(g, GR_ERR_TYPE, "gr_take: the indices %s must be int64, not %s", gr__d(indices).s, gr_dtype_name((gr_dtype)indices->dtype));
    if (x->ndim - 1 + indices->ndim > GR_MAX_NDIM)
        return gr__fail(g, GR_ERR_VALUE, "gr_take: the result would have %d dimensions", x->ndim - 1 + indices->ndim);
    args[1] = gr__coerce(indices, GR_I64);
    memset(&p, 0, sizeof p);
    p.axis = a;
    return gr__node1(g, &gr__op_Take, &p, sizeof p, 2, args);
}

/* y must broadcast to the static shape of the view */
static int gr__fits_view(const gr_var *y, const gr_var *view) {
    int i, off = view->ndim - y->ndim;
    if (off < 0) return 0;
    for (i = 0; i < y->ndim; i++) {
        int64_t a = gr__vshape(y)[i], b = gr__vshape(view)[off + i];
        if (a >= 0 && a != 1 && b >= 0 && a != b) return 0;
    }
    return 1;
}

static gr_var *gr__update(const char *fname, gr_var *view, gr_var *y, int inc) {
    gr_var *args[3], *x;
    gr_graph *g;
    const gr_op_def *op;
    args[0] = view; args[1] = y;
    if (!gr__operands(fname, 2, args, &g)) return NULL;
    op = gr__owner(view) ? gr__owner(view)->op : NULL;
    if (op != &gr__op_Slice && op != &gr__op_Index && op != &gr__op_Take)
        return gr__fail(g, GR_ERR_VALUE, "%s: %s is not a view (a result of gr_slice, gr_index or gr_take)", fname, gr__d(view).s);
    if (!gr__fits_view(y, view))
        return gr__fail(g, GR_ERR_SHAPE, "%s: %s %s does not broadcast to the view %s %s", fname, gr__d(y).s, gr__vs(y).s,
                        gr__d(view).s, gr__vs(view).s);
    x = gr__in(gr__owner(view))[0];
    args[0] = x;
    args[1] = gr__coerce(y, x->dtype);
    if (!args[1]) return NULL;
    if (op == &gr__op_Take) {
        gr__take_params p = *(const gr__take_params *)gr__params(gr__owner(view));
        p.inc = inc;
        args[2] = gr__in(gr__owner(view))[1];
        return gr__node1(g, &gr__op_TakeUpdate, &p, sizeof p, 3, args);
    } else {
        gr__view_params p = *gr__vp(gr__owner(view));
        p.inc = inc;
        return gr__node1(g, &gr__op_ViewUpdate, &p, sizeof p, 2, args);
    }
}

GR_API gr_var *gr_set_subtensor(gr_var *view, gr_var *y) { return gr__update("gr_set_subtensor", view, y, 0); }
GR_API gr_var *gr_inc_subtensor(gr_var *view, gr_var *y) { return gr__update("gr_inc_subtensor", view, y, 1); }

/* ---- type and shape rules ----------------------------------------------------------------------- */

static gr_status gr__view_infer(const gr_node *node, gr_type *out) {
    const gr__view_params *p = gr__vp(node);
    gr_var *x = gr__in(node)[0];
    int i, m = 0;
    out->dtype = (gr_dtype)x->dtype;
    for (i = 0; i < x->ndim; i++) {
        if (i != p->axis) { out->shape[m++] = gr__vshape(x)[i]; continue; }
        if (p->is_index) continue;
        if (gr__vshape(x)[i] < 0) out->shape[m++] = -1;
        else {
            int64_t first, count;
            gr__slice_resolve(gr__vshape(x)[i], p->start, p->stop, p->step, &first, &count);
            out->shape[m++] = count;
        }
    }
    out->ndim = m;
    return GR_OK;
}

static gr_status gr__view_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__view_params *p = gr__vp(node);
    const gr_array *x = in[0];
    int i, m = 0;
    for (i = 0; i < x->ndim; i++) {
        if (i != p->axis) { out[0]->shape[m++] = x->shape[i]; continue; }
        if (p->is_index) {
            if (gr__index_resolve(x->shape[i], p->start) < 0)
                return gr_node_error(node, GR_ERR_RUNTIME, "index %lld is out of range for axis %d of %s with size %lld",
                                     (long long)p->start, i, gr__d(gr__in(node)[0]).s, (long long)x->shape[i]);
            continue;
        } else {
            int64_t first, count;
            gr__slice_resolve(x->shape[i], p->start, p->stop, p->step, &first, &count);
            out[0]->shape[m++] = count;
        }
    }
    return GR_OK;
}

/* first position, count and step of a view on x (an Index is a slice of one) */
static void gr__view_span(const gr__view_params *p, const gr_array *x, int64_t *first, int64_t *count, int64_t *step) {
    if (p->is_index) { *first = gr__index_resolve(x->shape[p->axis], p->start); *count = 1; *step = 1; return; }
    gr__slice_resolve(x->shape[p->axis], p->start, p->stop, p->step, first, count);
    *step = p->step == GR_OPEN ? 1 : p->step;
}

static gr_status gr__view_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[0];
    int64_t outer, n, inner, first, count, step, o, k;
    size_t es = gr__dsize(x->dtype);
    gr__split_axis(x->ndim, x->shape, gr__vp(node)->axis, &outer, &n, &inner);
    gr__view_span(gr__vp(node), x, &first, &count, &step);
    for (o = 0; o < outer; o++) {
        if (step == 1) {                                 /* one span of count rows */
            memcpy((char *)out[0]->data + (size_t)(o * count * inner) * es,
                   (const char *)x->data + (size_t)((o * n + first) * inner) * es, (size_t)(count * inner) * es);
            continue;
        }
        for (k = 0; k < count; k++)
            memcpy((char *)out[0]->data + (size_t)((o * count + k) * inner) * es,
                   (const char *)x->data + (size_t)((o * n + first + k * step) * inner) * es, (size_t)inner * es);
    }
    return GR_OK;
}
static gr_status gr__Slice_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) { return gr__view_perform(node, in, out); }
static gr_status gr__Index_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) { return gr__view_perform(node, in, out); }

/* contiguous views share x's memory */
static int64_t gr__view_alias(const gr_node *node, const gr_array *const *in, const gr_array *out) {
    int64_t outer, n, inner, first, count, step;
    (void)out;
    gr__split_axis(in[0]->ndim, in[0]->shape, gr__vp(node)->axis, &outer, &n, &inner);
    gr__view_span(gr__vp(node), in[0], &first, &count, &step);
    if (count == 0 || (outer != 1 && count * inner != 0) || (step != 1 && count > 1)) return -1;
    return (int64_t)((size_t)(first * inner) * gr__dsize(in[0]->dtype));
}

static gr_status gr__Take_infer(const gr_node *node, gr_type *out) {
    const gr__take_params *p = (const gr__take_params *)gr__params(node);
    gr_var *x = gr__in(node)[0], *idx = gr__in(node)[1];
    int i, m = 0;
    out->dtype = (gr_dtype)x->dtype;
    for (i = 0; i < p->axis; i++) out->shape[m++] = gr__vshape(x)[i];
    for (i = 0; i < idx->ndim; i++) out->shape[m++] = gr__vshape(idx)[i];
    for (i = p->axis + 1; i < x->ndim; i++) out->shape[m++] = gr__vshape(x)[i];
    out->ndim = m;
    return GR_OK;
}
static gr_status gr__Take_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__take_params *p = (const gr__take_params *)gr__params(node);
    int i, m = 0;
    for (i = 0; i < p->axis; i++) out[0]->shape[m++] = in[0]->shape[i];
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[m++] = in[1]->shape[i];
    for (i = p->axis + 1; i < in[0]->ndim; i++) out[0]->shape[m++] = in[0]->shape[i];
    return GR_OK;
}
/* checks every index; the first bad one is reported */
static gr_status gr__check_indices(const gr_node *node, const gr_array *idx, int64_t n, int axis) {
    const int64_t *ix = (const int64_t *)idx->data;
    int64_t t;
    for (t = 0; t < idx->size; t++)
        if (gr__index_resolve(n, ix[t]) < 0)
            return gr_node_error(node, GR_ERR_RUNTIME, "index %lld (entry %lld of %s) is out of range for axis %d of %s with size %lld",
                                 (long long)ix[t], (long long)t, gr__d(gr__in(node)[node->n_in - 1]).s, axis, gr__d(gr__in(node)[0]).s, (long long)n);
    return GR_OK;
}
static gr_status gr__Take_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__take_params *p = (const gr__take_params *)gr__params(node);
    const gr_array *x = in[0], *idx = in[1];
    const int64_t *ix = (const int64_t *)idx->data;
    int64_t outer, n, inner, o, t;
    size_t es = gr__dsize(x->dtype);
    gr_status st;
    gr__split_axis(x->ndim, x->shape, p->axis, &outer, &n, &inner);
    if ((st = gr__check_indices(node, idx, n, p->axis)) != GR_OK) return st;
    for (o = 0; o < outer; o++)
        for (t = 0; t < idx->size; t++)
            memcpy((char *)out[0]->data + (size_t)((o * idx->size + t) * inner) * es,
                   (const char *)x->data + (size_t)((o * n + gr__index_resolve(n, ix[t])) * inner) * es, (size_t)inner * es);
    return GR_OK;
}

/* ---- updates --------------------------------------------------------------------------------------
   out = x, then each element of the viewed part is set to (or incremented by) y's element, y
   broadcast to the view's shape. The view's elements are visited in row-major order, so with
   repeated indices the last write wins (set) and all writes add up (inc). */

/* element strides (0 where broadcast) of y against the view shape vshape */
static void gr__bcast_elem_strides(const gr_array *y, int nd, const int64_t *vshape, int64_t *st) {
    int i, off = nd - y->ndim;
    int64_t s = 1;
    for (i = nd - 1; i >= 0; i--) {
        int64_t len = i >= off ? y->shape[i - off] : 1;
        st[i] = len == 1 && vshape[i] != 1 ? 0 : (i >= off ? s : 0);
        if (i >= off) s *= len;
    }
}

/* one write of y's element yi into x's element xi, by dtype */
static void gr__update_elem(int dt, void *xd, int64_t xi, const void *yd, int64_t yi, int inc) {
    switch (dt) {
    case GR_F64: if (inc) ((double *)xd)[xi] += ((const double *)yd)[yi]; else ((double *)xd)[xi] = ((const double *)yd)[yi]; break;
    case GR_F32: if (inc) ((float *)xd)[xi] += ((const float *)yd)[yi]; else ((float *)xd)[xi] = ((const float *)yd)[yi]; break;
    case GR_I64:
        if (inc) ((int64_t *)xd)[xi] = (int64_t)((uint64_t)((int64_t *)xd)[xi] + (uint64_t)((const int64_t *)yd)[yi]);
        else ((int64_t *)xd)[xi] = ((const int64_t *)yd)[yi];
        break;
    default:
        if (inc) ((uint8_t *)xd)[xi] = (uint8_t)(((uint8_t *)xd)[xi] | ((const uint8_t *)yd)[yi]);
        else ((uint8_t *)xd)[xi] = ((const uint8_t *)yd)[yi];
        break;
    }
}

/* Writes y into the viewed part of out, x's (outer, n, inner) around the axis. The view's shape
   vshape is (*pre, *mid, *post): n_pre axes before x's axis, n_mid for it (1 for a slice, 0 for
   an index, the indices' ndim for a take), then x's axes after it. Row k of the view (k the flat
   index over the mid axes) is position idx ? idx[k] (negative from the end) : first + k * step of
   x's axis; y is broadcast to vshape. An odometer walks every axis but the last, whose run has
   constant strides, so nothing is divided per element. */
static void gr__scatter(const gr_array *y, gr_array *out, int inc, int64_t n, int64_t inner, const int64_t *idx,
                        int64_t first, int64_t step, int vnd, const int64_t *vshape, int n_pre, int n_mid) {
    int64_t yst[GR_MAX_NDIM], xst[GR_MAX_NDIM], kst[GR_MAX_NDIM], i_d[GR_MAX_NDIM], vsize = 1, run, runs, r, j;
    int d, last = vnd - 1;
    for (d = 0; d < vnd; d++) vsize *= vshape[d];
    if (vsize == 0) return;
    gr__bcast_elem_strides(y, vnd, vshape, yst);
    {   /* x strides of the pre and post axes, flat-k strides of the mid axes */
        int64_t s = 1;
        for (d = vnd - 1; d >= n_pre + n_mid; d--) { xst[d] = s; kst[d] = 0; s *= vshape[d]; }
        s = 1;
        for (d = n_pre + n_mid - 1; d >= n_pre; d--) { xst[d] = 0; kst[d] = s; s *= vshape[d]; }
        s = n * inner;
        for (d = n_pre - 1; d >= 0; d--) { xst[d] = s; kst[d] = 0; s *= vshape[d]; }
    }
    if (vnd == 0) { run = 1; runs = 1; }
    else { run = vshape[last]; runs = vsize / run; }
    for (d = 0; d < vnd; d++) i_d[d] = 0;
    for (r = 0; r < runs; r++) {
        int64_t xo = 0, ko = 0, yo = 0;
        for (d = 0; d < last; d++) { xo += i_d[d] * xst[d]; ko += i_d[d] * kst[d]; yo += i_d[d] * yst[d]; }
        if (vnd == 0 || kst[last] == 0 || !idx) {      /* constant strides along the run */
            int64_t pos = idx ? gr__index_resolve(n, idx[ko]) : first + ko * step;
            int64_t x0 = xo + pos * inner, ys = vnd ? yst[last] : 0;
            int64_t xs = vnd == 0 ? 0 : kst[last] ? step * inner : xst[last];   /* a slice moves by step rows */
#define GR__SCATTER_RUN(T) \
            { T *xd = (T *)out->data; const T *yd = (const T *)y->data; \
              if (inc) for (j = 0; j < run; j++) xd[x0 + j * xs] += yd[yo + j * ys]; \
              else for (j = 0; j < run; j++) xd[x0 + j * xs] = yd[yo + j * ys]; }
            if (out->dtype == GR_F64) GR__SCATTER_RUN(double)
            else if (out->dtype == GR_F32) GR__SCATTER_RUN(float)
            else for (j = 0; j < run; j++) gr__update_elem(out->dtype, out->data, x0 + j * xs, y->data, yo + j * ys, inc);
#undef GR__SCATTER_RUN
        } else                                          /* the run moves along a take's indices */
            for (j = 0; j < run; j++) {
                int64_t k = ko + j * kst[last];
                int64_t pos = idx ? gr__index_resolve(n, idx[k]) : first + k * step;
                gr__update_elem(out->dtype, out->data, xo + pos * inner, y->data, yo + j * yst[last], inc);
            }
        for (d = last - 1; d >= 0; d--) { if (++i_d[d] < vshape[d]) break; i_d[d] = 0; }
    }
}

static gr_status gr__ViewUpdate_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__view_params *p = gr__vp(node);
    const gr_array *x = in[0], *y = in[1];
    int64_t outer, n, inner, first, count, step, vshape[GR_MAX_NDIM];
    int i, vnd = 0;
    if (out[0]->data != x->data) memcpy(out[0]->data, x->data, (size_t)x->size * gr__dsize(x->dtype));
    gr__split_axis(x->ndim, x->shape, p->axis, &outer, &n, &inner);
    if (p->is_index && gr__index_resolve(n, p->start) < 0)
        return gr_node_error(node, GR_ERR_RUNTIME, "index %lld is out of range for axis %d of %s with size %lld",
                             (long long)p->start, p->axis, gr__d(gr__in(node)[0]).s, (long long)n);
    gr__view_span(p, x, &first, &count, &step);
    for (i = 0; i < x->ndim; i++) {
        if (i != p->axis) vshape[vnd++] = x->shape[i];
        else if (!p->is_index) vshape[vnd++] = count;
    }
    {   /* y must broadcast to the view */
        int off = vnd - y->ndim;
        for (i = 0; i < y->ndim; i++)
            if (off < 0 || (y->shape[i] != 1 && y->shape[i] != vshape[off + i])) {
                char b1[200];
                return gr_node_error(node, GR_ERR_SHAPE, "%s of shape %s does not broadcast to the viewed part %s of %s",
                                     gr__d(gr__in(node)[1]).s, gr__as(y).s, gr__shape_str(b1, sizeof b1, vnd, vshape), gr__d(gr__in(node)[0]).s);
            }
    }
    gr__scatter(y, out[0], p->inc, n, inner, NULL, first, step, vnd, vshape, p->axis, p->is_index ? 0 : 1);
    return GR_OK;
}

static gr_status gr__TakeUpdate_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__take_params *p = (const gr__take_params *)gr__params(node);
    const gr_array *x = in[0], *y = in[1], *idx = in[2];
    int64_t outer, n, inner, vshape[GR_MAX_NDIM];
    int i, vnd = 0;
    gr_status st;
    if (out[0]->data != x->data) memcpy(out[0]->data, x->data, (size_t)x->size * gr__dsize(x->dtype));
    gr__split_axis(x->ndim, x->shape, p->axis, &outer, &n, &inner);
    if ((st = gr__check_indices(node, idx, n, p->axis)) != GR_OK) return st;
    for (i = 0; i < p->axis; i++) vshape[vnd++] = x->shape[i];
    for (i = 0; i < idx->ndim; i++) vshape[vnd++] = idx->shape[i];
    for (i = p->axis + 1; i < x->ndim; i++) vshape[vnd++] = x->shape[i];
    {
        int off = vnd - y->ndim;
        for (i = 0; i < y->ndim; i++)
            if (off < 0 || (y->shape[i] != 1 && y->shape[i] != vshape[off + i])) {
                char b1[200];
                return gr_node_error(node, GR_ERR_SHAPE, "%s of shape %s does not broadcast to the viewed part %s of %s",
                                     gr__d(gr__in(node)[1]).s, gr__as(y).s, gr__shape_str(b1, sizeof b1, vnd, vshape), gr__d(gr__in(node)[0]).s);
            }
    }
    gr__scatter(y, out[0], p->inc, n, inner, (const int64_t *)idx->data, 0, 1, vnd, vshape, p->axis, idx->ndim);
    return GR_OK;
}

/* ---- rewrite rules (src/rewrite.h) ------------------------------------------------------------------ */

/* a view's signature: the other axes keep their symbols, an Index's axis goes; a unit step from a
   start >= 0 to a stop < 0 (or open ends) trims a + b rows, the same for every slice trimming as many */
static void gr__view_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    const gr__view_params *p = gr__vp(node);
    int32_t s[GR_MAX_NDIM];
    int i, m = 0;
    gr__sig_copy(rw, gr__in(node)[0], s);
    for (i = 0; i < gr__in(node)[0]->ndim; i++) {
        if (i != p->axis) { out[m++] = s[i]; continue; }
        if (p->is_index) continue;
        if (s[i] >= 0 && p->step == 1 && (p->start == GR_OPEN || (p->start >= 0 && p->start < ((int64_t)1 << 40))) &&
            (p->stop == GR_OPEN || (p->stop < 0 && p->stop > -((int64_t)1 << 40))))
            out[m] = gr__sig_trimmed(rw, s[i], (p->start == GR_OPEN ? 0 : p->start) + (p->stop == GR_OPEN ? 0 : -p->stop));
        m++;
    }
}

/* a view's start when its columns move a banded matrix's diagonals: a unit step from a start >= 0;
   -1 otherwise */
static int64_t gr__view_unit_start(const gr__view_params *vp) {
    int64_t s0 = vp->start == GR_OPEN ? 0 : vp->start;
    return !vp->is_index && vp->step == 1 && s0 >= 0 && s0 < ((int64_t)1 << 40) ? s0 : -1;
}

/* columns s, s+1, ... of a banded matrix: its diagonals' elements from s on, offsets down by s */
static gr_var *gr__Slice_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    const gr__view_params *vp = (const gr__view_params *)params;
    gr__view_params cp;
    int64_t s0 = gr__view_unit_start(vp);
    if (!gr__banded_n(in[0]) || !(vp->axis == 1 || vp->axis == -1) || s0 < 0) return NULL;
    cp = *vp;
    cp.axis = 0;
    return gr__replaced(done, gr__banded_map(rw, in[0], op, &cp, sizeof cp, NULL, NULL, -s0));
}

/* x + (zeros with y added at a view) -> x with y added at that view: one pass, in place */
static gr_var *gr__update_into_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    int k;
    (void)row;
    for (k = 0; k < 2; k++) {
        gr_var *u = in[k], *x = in[1 - k], *z = NULL, *args[3];
        const gr_node *n = gr__owner(u);
        if (!n || !(n->op == &gr__op_ViewUpdate || n->op == &gr__op_TakeUpdate)) continue;
        if (n->op == &gr__op_ViewUpdate && !gr__vp(n)->inc) continue;
        if (n->op == &gr__op_TakeUpdate && !((const gr__take_params *)gr__params(n))->inc) continue;
        if (!gr__rw_zeros(gr__in(n)[0], &z) || !gr__sig_same(rw, x, u) || x->dtype != u->dtype) continue;
        args[0] = x; args[1] = gr__in(n)[1];
        if (n->n_in == 3) args[2] = gr__in(n)[2];
        return gr__replaced(done, gr__rw1(rw, n->op, gr__params(n), n->params_size, n->n_in, args));
    }
    return NULL;
}

/* ---- derivative rules --------------------------------------------------------------------------- */

/* x's view, rebuilt with the params of node (a Slice, Index or a ViewUpdate) */
static gr_var *gr__view_like(const gr_node *node, gr_var *x) {
    gr__view_params p = *gr__vp(node);
    p.inc = 0;
    return gr__node1(node->graph, p.is_index ? &gr__op_Index : &gr__op_Slice, &p, sizeof p, 1, &x);
}
static gr_var *gr__view_update(const gr_node *node, gr_var *x, gr_var *y, int inc) {
    gr__view_params p = *gr__vp(node);
    gr_var *args[2];
    p.inc = inc;
    args[0] = x; args[1] = y;
    return gr__node1(node->graph, &gr__op_ViewUpdate, &p, sizeof p, 2, args);
}
static gr_var *gr__take_like(const gr_node *node, gr_var *x, gr_var *idx) {
    gr__take_params p = *(const gr__take_params *)gr__params(node);
    gr_var *args[2];
    p.inc = 0;
    args[0] = x; args[1] = idx;
    return gr__node1(node->graph, &gr__op_Take, &p, sizeof p, 2, args);
}
static gr_var *gr__take_update(const gr_node *node, gr_var *x, gr_var *y, gr_var *idx, int inc) {
    gr__take_params p = *(const gr__take_params *)gr__params(node);
    gr_var *args[3];
    p.inc = inc;
    args[0] = x; args[1] = y; args[2] = idx;
    return gr__node1(node->graph, &gr__op_TakeUpdate, &p, sizeof p, 3, args);
}

/* the gradient of a view: zeros shaped like x with gz added at the view */
static gr_status gr__view_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr__view_update(node, gr__zeros_grad(gr__in(node)[0]), og[0], 1);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Slice_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { return gr__view_grad(node, og, ig); }
static gr_status gr__Index_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { return gr__view_grad(node, og, ig); }
static gr_status gr__view_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__view_like(node, ev[0]);
    return orop[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Slice_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) { return gr__view_rop(node, ev, orop); }
static gr_status gr__Index_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) { return gr__view_rop(node, ev, orop); }

static gr_status gr__Take_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr__take_update(node, gr__zeros_grad(gr__in(node)[0]), og[0], gr__in(node)[1], 1);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__Take_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__take_like(node, ev[0], gr__in(node)[1]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* inc: x gets gz, y gets gz at the view (summed over y's broadcasting); set: x gets gz with the
   view zeroed, y the same as inc */
static gr_status gr__ViewUpdate_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0], *y = gr__in(node)[1];
    if (!gr__is_float(x->dtype)) { ig[0] = gr__zeros_grad(x); ig[1] = gr__zeros_grad(y); }
    else {
        ig[0] = gr__vp(node)->inc ? og[0] : gr__view_update(node, og[0], gr__scalar_const(node->graph, og[0]->dtype, 0.0, 0), 0);
        ig[1] = gr__sum_to(gr__view_like(node, og[0]), y);
    }
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__ViewUpdate_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *vx = ev[0], *vy = ev[1];
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || (gr_is_disconnected(vx) && gr_is_disconnected(vy))) return GR_OK;
    if (gr_is_disconnected(vx)) vx = gr__zeros_grad(gr__in(node)[0]);
    if (gr_is_disconnected(vy)) vy = gr__scalar_const(node->graph, gr__out(node)[0]->dtype, 0.0, 0);
    orop[0] = gr__view_update(node, vx, vy, gr__vp(node)->inc);
    return orop[0] ? GR_OK : node->graph->status;
}
static gr_status gr__TakeUpdate_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0], *y = gr__in(node)[1], *idx = gr__in(node)[2];
    const gr__take_params *p = (const gr__take_params *)gr__params(node);
    if (!gr__is_float(x->dtype)) { ig[0] = gr__zeros_grad(x); ig[1] = gr__zeros_grad(y); }
    else {
        ig[0] = p->inc ? og[0] : gr__take_update(node, og[0], gr__scalar_const(node->graph, og[0]->dtype, 0.0, 0), idx, 0);
        ig[1] = gr__sum_to(gr__take_like(node, og[0], idx), y);
    }
    ig[2] = gr_disconnected_like(idx);
    return ig[0] && ig[1] && ig[2] ? GR_OK : node->graph->status;
}
static gr_status gr__TakeUpdate_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *vx = ev[0], *vy = ev[1];
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || (gr_is_disconnected(vx) && gr_is_disconnected(vy))) return GR_OK;
    if (gr_is_disconnected(vx)) vx = gr__zeros_grad(gr__in(node)[0]);
    if (gr_is_disconnected(vy)) vy = gr__scalar_const(node->graph, gr__out(node)[0]->dtype, 0.0, 0);
    orop[0] = gr__take_update(node, vx, vy, gr__in(node)[2], ((const gr__take_params *)gr__params(node))->inc);
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- batching: the axis moves one to the right ---------------------------------------------- */

static gr_status gr__view_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr__view_params p = *gr__vp(node);
    (void)batched;
    p.axis += 1;
    out[0] = gr__node1(node->graph, node->op, &p, sizeof p, 1, in);
    return out[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Take_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr__take_params p = *(const gr__take_params *)gr__params(node);
    if (batched[1]) return gr__map_batch(node, in, batched, out);
    p.axis += 1;
    out[0] = gr__node1(node->graph, node->op, &p, sizeof p, 2, in);
    return out[0] ? GR_OK : node->graph->status;
}
#endif /* GR_NO_INDEX */

/* ==== ops/batch.c: generated region; edit ops/batch.c, then run make gradient.h ==== */
/* ops/batch.c: batching, for Jacobians evaluated in one pass over their rows.

   gr__vectorize (src/jacobian.c) rebuilds a graph in which some variables gained a leading batch
   axis of size B; each op says how through its table row's `batch` column:
     ew, reduce, DimShuffle, axis, same   rules that rebuild the op on the batched operands;
     map                                  the Batched op: the original op applied to every row,
                                          through views into the rows (contiguous: no copies).
   Also EyeLike, the identity seed of the batch, and Unflatten, which gives a Jacobian its shape.

   Shapes: EyeLike ref -> (size(ref), *shape(ref)); Unflatten x (size(ref), *r) -> (*shape(ref), *r);
           Batched: row shapes (B, *s_i) -> (B, *s_out) for the batched inputs, others as they are. */

/* the derivative rules of the ops only gr_function makes (Banded, Fused): never asked for */
static gr_status gr__compiled_only(const gr_node *node) {
    return gr__error(node->graph, GR_ERR_VALUE, "%s nodes exist only inside compiled functions", gr__on(node->op).s);
}

#ifndef GR_NO_BATCH                  /* ops/table.h, op families: the rest of the file */

/* ---- EyeLike -------------------------------------------------------------------------------- */

typedef struct gr__dtype_params { int dtype; } gr__dtype_params;

static gr_var *gr__eye_like(gr_var *ref, int dtype) {
    gr__dtype_params p;
    gr_graph *g;
    if (!gr__operands("eye_like", 1, &ref, &g)) return NULL;
    if (ref->ndim + 1 > GR_MAX_NDIM) return gr__fail(g, GR_ERR_VALUE, "gr_jacobian: %s has too many dimensions", gr__d(ref).s);
    memset(&p, 0, sizeof p);
    p.dtype = dtype;
    return gr__node1(g, &gr__op_EyeLike, &p, sizeof p, 1, &ref);
}
static gr_status gr__EyeLike_infer(const gr_node *node, gr_type *out) {
    gr_var *ref = gr__in(node)[0];
    int i;
    out->dtype = (gr_dtype)((const gr__dtype_params *)gr__params(node))->dtype;
    out->ndim = ref->ndim + 1;
    out->shape[0] = gr__static_known(ref) ? gr__shape_size(ref->ndim, gr__vshape(ref)) : -1;
    for (i = 0; i < ref->ndim; i++) out->shape[i + 1] = gr__vshape(ref)[i];
    return GR_OK;
}
static gr_status gr__EyeLike_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    (void)node;
    out[0]->shape[0] = in[0]->size;
    for (i = 0; i < in[0]->ndim; i++) out[0]->shape[i + 1] = in[0]->shape[i];
    return GR_OK;
}
static gr_status gr__EyeLike_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t m = in[0]->size, k;
    (void)node;
    memset(out[0]->data, 0, (size_t)out[0]->size * gr__dsize(out[0]->dtype));
    for (k = 0; k < m; k++) gr__store(out[0]->dtype, out[0]->data, k * m + k, 1.0);
    return GR_OK;
}
static gr_status gr__EyeLike_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    (void)og;
    ig[0] = gr_disconnected_like(gr__in(node)[0]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__EyeLike_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node; (void)ev;
    orop[0] = NULL;                      /* a constant of the shapes only */
    return GR_OK;
}

/* ---- Banded: a matrix given by some of its diagonals ---------------------------------------------
   Made by gr_function only (the rewrite rules below), where Jacobians and Hessians of elementwise functions of
   slices are banded: the identity seed of the batch is one diagonal, and slicing, elementwise
   scaling and the slices' gradients move or scale diagonals without ever filling a dense matrix.
   Inputs (ref, c_1 .. c_d), all c_i 1-d of the same length m; output (size(ref), m) with
       out[b, j] = sum over i with j - b == k_i of c_i[j]        (every other entry 0)
   params: d and the column offsets k_1 < ... < k_d. */

#define GR__BANDED_MAX 16
typedef struct gr__banded_params { int64_t n; int64_t k[GR__BANDED_MAX]; } gr__banded_params;
#define GR__BANDED_PSIZE(n) (sizeof(int64_t) * (size_t)(1 + (n)))

static gr_status gr__Banded_infer(const gr_node *node, gr_type *out) {
    gr_var *ref = gr__in(node)[0], *c = gr__in(node)[1];
    out->dtype = (gr_dtype)c->dtype;
    out->ndim = 2;
    out->shape[0] = gr__static_known(ref) ? gr__shape_size(ref->ndim, gr__vshape(ref)) : -1;
    out->shape[1] = gr__vshape(c)[0];
    return GR_OK;
}
static gr_status gr__Banded_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    for (i = 2; i < node->n_in; i++)
        if (in[i]->size != in[1]->size)                 /* the rewriter proved them equal: a bug if not */
            return gr_node_error(node, GR_ERR_SHAPE, "diagonals of %lld and %lld elements", (long long)in[1]->size, (long long)in[i]->size);
    out[0]->shape[0] = in[0]->size;
    out[0]->shape[1] = in[1]->size;
    return GR_OK;
}
static gr_status gr__Banded_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__banded_params *p = (const gr__banded_params *)gr__params(node);
    int64_t B = out[0]->shape[0], m = out[0]->shape[1], i, j;
    int dt = out[0]->dtype;
    memset(out[0]->data, 0, (size_t)out[0]->size * gr__dsize(dt));
    for (i = 0; i < p->n; i++) {
        int64_t k = p->k[i], lo = k > 0 ? k : 0, hi = B + k < m ? B + k : m;
        const gr_array *c = in[i + 1];
        if (dt == GR_F64 && c->dtype == GR_F64) {
            const double *cd = (const double *)c->data;
            double *o = (double *)out[0]->data;
            for (j = lo; j < hi; j++) o[(j - k) * m + j] += cd[j];
        } else if (dt == GR_F32 && c->dtype == GR_F32) {
            const float *cd = (const float *)c->data;
            float *o = (float *)out[0]->data;
            for (j = lo; j < hi; j++) o[(j - k) * m + j] += cd[j];
        } else {
            for (j = lo; j < hi; j++) {
                int64_t at = (j - k) * m + j;
                gr__store(dt, out[0]->data, at, gr__load(dt, out[0]->data, at) + gr__load(c->dtype, c->data, j));
            }
        }
    }
    return GR_OK;
}
static gr_status gr__Banded_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { (void)og; (void)ig; return gr__compiled_only(node); }
static gr_status gr__Banded_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) { (void)ev; (void)orop; return gr__compiled_only(node); }

/* ---- Banded and EyeLike in the rewrites (src/rewrite.h) ---------------------------------------------
   A Jacobian or Hessian is built from the identity seed of its batch (EyeLike). For a vector wrt,
   the seed becomes a Banded matrix (one diagonal of ones), and what Jacobians of elementwise
   functions of slices do to it keeps it banded: slicing its columns moves the diagonals (Slice's
   rule, ops/index.c), scaling by a vector or a scalar scales them, sums of banded matrices merge
   them, and a slice's gradient (a row placed into zeros at a slice, Batched's rule below) moves
   them back. So such a Hessian costs a few vectors and one fill of the result instead of a dozen
   dense passes. Like x * 0, a structural zero stays zero where the dense product would have met
   an infinity or a NaN. */

static const gr__banded_params *gr__banded_of(const gr_var *v) {
    return gr__owner(v) && gr__owner(v)->op == &gr__op_Banded ? (const gr__banded_params *)gr__params(gr__owner(v)) : NULL;
}
static GR__UNUSED int gr__banded_n(const gr_var *v) {
    const gr__banded_params *p = gr__banded_of(v);
    return p ? (int)p->n : 0;
}

/* Banded(ref, c; k) for n diagonals, in offset order, equal offsets summed; NULL when too many */
static gr_var *gr__banded_make(gr__rewriter *rw, gr_var *ref, int n, gr_var **c, int64_t *k) {
    gr__banded_params p;
    gr_var *ins[GR__BANDED_MAX + 1];
    int i, j, m = 0;
    for (i = 1; i < n; i++)                              /* insertion sort: a handful of diagonals */
        for (j = i; j > 0 && k[j - 1] > k[j]; j--) {
            int64_t tk = k[j]; gr_var *tc = c[j];
            k[j] = k[j - 1]; c[j] = c[j - 1];
            k[j - 1] = tk; c[j - 1] = tc;
        }
    memset(&p, 0, sizeof p);
    ins[0] = ref;
    for (i = 0; i < n; i++) {
        if (m && p.k[m - 1] == k[i]) {
            if (!(ins[m] = gr__rw_ew(rw, GR__EW_add, ins[m], c[i]))) return NULL;
            continue;
        }
        if (m == GR__BANDED_MAX) return NULL;
        p.k[m] = k[i];
        ins[++m] = c[i];
    }
    p.n = m;
    return gr__rw1(rw, &gr__op_Banded, &p, GR__BANDED_PSIZE(m), m + 1, ins);
}

/* the banded matrix X with each diagonal c replaced by op(pre, c, post) (pre, post: operands before
   and after it, or NULL) and every offset moved by dk; NULL when out of memory */
static gr_var *gr__banded_map(gr__rewriter *rw, const gr_var *X, const gr_op_def *op, const void *params, size_t psize,
                              gr_var *pre, gr_var *post, int64_t dk) {
    const gr__banded_params *p = gr__banded_of(X);
    gr_var *c[GR__BANDED_MAX], *args[3];
    int64_t k[GR__BANDED_MAX];
    int i, n;
    for (i = 0; i < p->n; i++) {
        n = 0;
        if (pre) args[n++] = pre;
        args[n++] = gr__in(gr__owner(X))[i + 1];
        if (post) args[n++] = post;
        if (!(c[i] = gr__rw1(rw, op, params, psize, n, args))) return NULL;
        k[i] = p->k[i] + dk;
    }
    return gr__banded_make(rw, gr__in(gr__owner(X))[0], (int)p->n, c, k);
}

/* v is the diagonal matrix diag(d): a square Banded matrix with one diagonal d, at offset 0 */
static GR__UNUSED gr_var *gr__banded_diag(gr__rewriter *rw, const gr_var *v) {
    const gr__banded_params *p = gr__banded_of(v);
    int32_t s[GR_MAX_NDIM];
    if (v->ndim != 2 || !p || p->n != 1 || p->k[0] != 0) return NULL;
    gr__sig_copy(rw, v, s);
    return s[0] == s[1] ? gr__in(gr__owner(v))[1] : NULL;
}

/* Banded's signature: (size(ref), the diagonals' length); size(ref) is ref's length when ref is 1-d */
static void gr__Banded_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    int32_t s[GR_MAX_NDIM];
    if (gr__in(node)[0]->ndim == 1) { gr__sig_copy(rw, gr__in(node)[0], s); out[0] = s[0]; }
    gr__sig_copy(rw, gr__in(node)[1], s);
    out[1] = s[0];
}

/* the identity of a vector's size (gr_jacobian's seed, always): one diagonal of ones. (So EyeLike
   needs no signature rule: no EyeLike node is left to ask.) */
static gr_var *gr__EyeLike_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    gr_var *one, *ones;
    int64_t k0 = 0;
    (void)op;
    if (in[0]->ndim != 1) return NULL;
    one = gr__scalar_const(rw->cg, ((const gr__dtype_params *)params)->dtype, 1.0, 0);
    if (!one || !(ones = gr__rw_fill(rw, one, in[0]))) return gr__replaced(done, NULL);
    return gr__replaced(done, gr__banded_make(rw, in[0], 1, &ones, &k0));
}

/* B1 + B2 -> one Banded of both's diagonals (same shape and dtype) */
static gr_var *gr__banded_sum_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    const gr__banded_params *pa = gr__banded_of(in[0]), *pb = gr__banded_of(in[1]);
    gr_var *c[2 * GR__BANDED_MAX], *r;
    int64_t k[2 * GR__BANDED_MAX];
    int i, n = 0;
    (void)row;
    if (!pa || !pb || in[0]->dtype != in[1]->dtype || !gr__sig_same(rw, in[0], in[1])) return NULL;
    for (i = 0; i < pa->n; i++) { c[n] = gr__in(gr__owner(in[0]))[i + 1]; k[n++] = pa->k[i]; }
    for (i = 0; i < pb->n; i++) { c[n] = gr__in(gr__owner(in[1]))[i + 1]; k[n++] = pb->k[i]; }
    r = gr__banded_make(rw, gr__in(gr__owner(in[0]))[0], n, c, k);   /* NULL, nothing built: too many */
    return r || rw->cg->status != GR_OK ? gr__replaced(done, r) : NULL;
}

/* -B, B * s, s * B, B / s for a scalar s, or a vector s along the columns (never widening B): each
   diagonal scaled (the ops pullbacks apply to a cotangent) */
static gr_var *gr__banded_scale_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    gr_var *a = in[0], *b = row == GR__EW_neg ? NULL : in[1], *x, *v, *r;
    const gr__banded_params *pa = gr__banded_of(a), *pb = b ? gr__banded_of(b) : NULL;
    if (!pa && !(pb && row == GR__EW_mul)) return NULL;              /* a divisor is never banded here */
    x = pa ? a : b;
    v = pa ? b : a;
    if (row != GR__EW_neg && (pa && pb ? 1 : v->ndim > 1 || (v->ndim == 1 && !gr__sig_into(rw, v, x)))) return NULL;
    r = gr__banded_map(rw, x, gr__ew_ops[row], NULL, 0, pa ? NULL : v, pa ? v : NULL, 0);
    return r || rw->cg->status != GR_OK ? gr__replaced(done, r) : NULL;
}

/* ---- Unflatten -------------------------------------------------------------------------------- */

static gr_var *gr__unflatten(gr_var *x, gr_var *ref) {
    gr_var *args[2];
    gr_graph *g;
    args[0] = x; args[1] = ref;
    if (!gr__operands("unflatten", 2, args, &g)) return NULL;
    if (x->ndim < 1 || ref->ndim + x->ndim - 1 > GR_MAX_NDIM)
        return gr__fail(g, GR_ERR_VALUE, "gr_jacobian: the result would have %d dimensions (at most %d)", ref->ndim + x->ndim - 1, GR_MAX_NDIM);
    return gr__node1(g, &gr__op_Unflatten, NULL, 0, 2, args);
}
static gr_status gr__Unflatten_infer(const gr_node *node, gr_type *out) {
    gr_var *x = gr__in(node)[0], *ref = gr__in(node)[1];
    int i;
    out->dtype = (gr_dtype)x->dtype;
    out->ndim = ref->ndim + x->ndim - 1;
    for (i = 0; i < ref->ndim; i++) out->shape[i] = gr__vshape(ref)[i];
    for (i = 1; i < x->ndim; i++) out->shape[ref->ndim + i - 1] = gr__vshape(x)[i];
    return GR_OK;
}
static gr_status gr__Unflatten_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    if (in[0]->shape[0] != in[1]->size)
        return gr_node_error(node, GR_ERR_SHAPE, "leading axis %lld of %s does not match the %lld elements of %s",
                             (long long)in[0]->shape[0], gr__d(gr__in(node)[0]).s, (long long)in[1]->size, gr__d(gr__in(node)[1]).s);
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[i] = in[1]->shape[i];
    for (i = 1; i < in[0]->ndim; i++) out[0]->shape[in[1]->ndim + i - 1] = in[0]->shape[i];
    return GR_OK;
}
static gr_status gr__Unflatten_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    return gr__Reshape_perform(node, in, out);
}
static gr_status gr__Unflatten_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr_reshape_like(og[0], gr__in(node)[0]);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__Unflatten_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__unflatten(ev[0], gr__in(node)[1]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- Batched: an op applied to every row --------------------------------------------------------
   params: this header, then n_in gr_type (the row types of the inputs), then the op's params.
   The type rule builds the op's node over row-typed placeholders in the node's own graph (again
   in every copy of the graph) and keeps it in `inner`: perform and the shape rule run it on
   views of the rows. */

typedef struct gr__batched_params {
    const gr_op_def *op;
    gr_node *inner;                      /* filled by the type rule, in this node's graph */
    uint32_t batched;                    /* bit i: input i has the leading batch axis */
    int n_in;
    size_t inner_psize;
} gr__batched_params;

#define GR__BP_TYPES(p) ((gr_type *)(void *)((char *)(p) + ((sizeof(gr__batched_params) + 15u) & ~(size_t)15u)))
#define GR__BP_INNER(p) ((void *)(GR__BP_TYPES(p) + (p)->n_in))

/* the node whose connection pattern a Batched node has: the op it applies to every row */
static const gr_node *gr__conn_node(const gr_node *node) {
    const gr_node *inner = ((const gr__batched_params *)gr__params(node))->inner;
    return inner ? inner : node;
}

static gr_status gr__map_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr_graph *g = node->graph;
    size_t head = (sizeof(gr__batched_params) + 15u) & ~(size_t)15u;
    size_t size = head + sizeof(gr_type) * (size_t)node->n_in + node->params_size;
    gr__batched_params *p;
    int i;
    if (node->n_out != 1)
        return gr__error(g, GR_ERR_GRAD_NOT_IMPLEMENTED, "gr_jacobian: %s has several outputs and no batching rule", gr__on(node->op).s);
    if (node->n_in > 32) return gr__error(g, GR_ERR_VALUE, "gr_jacobian: %s has too many inputs to batch", gr__on(node->op).s);
    p = (gr__batched_params *)gr__calloc(1, size);
    if (!p) return gr__error(g, GR_ERR_NOMEM, "out of memory");
    p->op = node->op;
    p->n_in = node->n_in;
    p->inner_psize = node->params_size;
    for (i = 0; i < node->n_in; i++) {
        if (batched[i]) p->batched |= 1u << i;
        gr_var_type(gr__in(node)[i], &GR__BP_TYPES(p)[i]);
    }
    if (node->params_size) memcpy(GR__BP_INNER(p), gr__params(node), node->params_size);
    out[0] = gr__node1(g, &gr__op_Batched, p, size, node->n_in, in);
    GR_FREE(p);
    return out[0] ? GR_OK : g->status;
}

static gr_status gr__Batched_infer(const gr_node *node, gr_type *out) {
    gr__batched_params *p = (gr__batched_params *)gr__params(node);    /* the node's own copy */
    gr_graph *g = node->graph;
    gr_var *ph[32], *res = NULL;
    int i, lead = -1;
    gr_status st;
    for (i = 0; i < p->n_in; i++) {
        const gr_type *t = &GR__BP_TYPES(p)[i];
        ph[i] = gr__new_var(g, (int)t->dtype, t->ndim, t->shape, GR__VK_INPUT);
        if (!ph[i]) return GR_ERR_NOMEM;
        if (lead < 0 && (p->batched & (1u << i))) lead = i;
    }
    st = gr__make_node(g, p->op, GR__BP_INNER(p), p->inner_psize, p->n_in, ph, &res);
    if (st != GR_OK) return st;
    p->inner = gr__owner(res);
    if (res->ndim + 1 > GR_MAX_NDIM) return gr__error(g, GR_ERR_VALUE, "gr_jacobian: a batched %s has too many dimensions", gr__on(p->op).s);
    out->dtype = (gr_dtype)res->dtype;
    out->ndim = res->ndim + 1;
    out->shape[0] = lead >= 0 ? gr__vshape(gr__in(node)[lead])[0] : 1;
    for (i = 0; i < res->ndim; i++) out->shape[i + 1] = gr__vshape(res)[i];
    return GR_OK;
}

/* row k of every input: a view, or the input itself when not batched; returns the batch size */
static int64_t gr__batched_rows(const gr_node *node, const gr_array *const *in, gr_array *rows, const gr_array **row_ptrs, int64_t k) {
    const gr__batched_params *p = (const gr__batched_params *)gr__params(node);
    int64_t B = -1;
    int i, d;
    for (i = 0; i < p->n_in; i++) {
        if (!(p->batched & (1u << i))) { row_ptrs[i] = in[i]; continue; }
        if (B < 0) B = in[i]->shape[0];
        rows[i] = *in[i];
        rows[i].ndim = in[i]->ndim - 1;
        for (d = 0; d < rows[i].ndim; d++) rows[i].shape[d] = in[i]->shape[d + 1];
        rows[i].size = in[i]->shape[0] ? in[i]->size / in[i]->shape[0] : gr__shape_size(rows[i].ndim, rows[i].shape);
        rows[i].data = in[i]->data ? (char *)in[i]->data + (size_t)(k * rows[i].size) * gr__dsize(in[i]->dtype) : NULL;
        row_ptrs[i] = &rows[i];
    }
    return B;
}

/* a view when the wrapped op's output is a view of row 0 at its start and input 0 carries the batch:
   every row is then a view of its own row, and rows are contiguous */
static int64_t gr__Batched_alias(const gr_node *node, const gr_array *const *in, const gr_array *out) {
    const gr__batched_params *p = (const gr__batched_params *)gr__params(node);
    gr_array rows[32], row_out;
    const gr_array *row_ptrs[32];
    int d;
    if (!(p->batched & 1u) || !gr__alias_of(p->op) || in[0]->dtype != out->dtype || in[0]->size != out->size) return -1;
    gr__batched_rows(node, in, rows, row_ptrs, 0);
    row_out = *out;
    row_out.ndim = out->ndim - 1;
    for (d = 0; d < row_out.ndim; d++) row_out.shape[d] = out->shape[d + 1];
    row_out.size = out->shape[0] ? out->size / out->shape[0] : 0;
    return gr__alias_of(p->op)(p->inner, row_ptrs, &row_out) == 0 ? 0 : -1;
}

static gr_status gr__Batched_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__batched_params *p = (const gr__batched_params *)gr__params(node);
    gr_array rows[32], row_out;
    const gr_array *row_ptrs[32];
    gr_array *row_out_ptr = &row_out;
    gr_node *inner = p->inner;
    int64_t B;
    int i;
    gr_status st;
    B = gr__batched_rows(node, in, rows, row_ptrs, 0);
    for (i = 0; i < p->n_in; i++)
        if ((p->batched & (1u << i)) && in[i]->shape[0] != B)
            return gr_node_error(node, GR_ERR_SHAPE, "batched inputs of %s have %lld and %lld rows", gr__on(p->op).s,
                                 (long long)B, (long long)in[i]->shape[0]);
    memset(&row_out, 0, sizeof row_out);
    row_out.dtype = (gr_dtype)gr__out(inner)[0]->dtype;
    row_out.ndim = gr__out(inner)[0]->ndim;
    st = p->op->shape ? p->op->shape(inner, row_ptrs, &row_out_ptr) : gr__like0_shape(inner, row_ptrs, &row_out_ptr);
    if (st != GR_OK) return st;
    out[0]->shape[0] = B;
    for (i = 0; i < row_out.ndim; i++) out[0]->shape[i + 1] = row_out.shape[i];
    return GR_OK;
}

static gr_status gr__Batched_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__batched_params *p = (const gr__batched_params *)gr__params(node);
    gr_array rows[32], row_out;
    const gr_array *row_ptrs[32];
    gr_array *row_out_ptr = &row_out;
    int64_t B = out[0]->shape[0], k, row_size = B ? out[0]->size / B : 0;
    int d;
    row_out = *out[0];
    row_out.ndim = out[0]->ndim - 1;
    for (d = 0; d < row_out.ndim; d++) row_out.shape[d] = out[0]->shape[d + 1];
    row_out.size = row_size;
#ifndef GR_NO_DOT
    /* a dot whose left operand carries the batch is one matrix product over all the rows */
    if (p->op == &gr__op_Dot && p->batched == 1u && in[0]->ndim == 3 && !((const gr__dot_params *)GR__BP_INNER(p))->ta) {
        gr_array a = *in[0], c = *out[0];
        const gr_array *ab[2];
        gr_array *cp = &c;
        a.ndim = 2; a.shape[0] = in[0]->shape[0] * in[0]->shape[1]; a.shape[1] = in[0]->shape[2];
        c.ndim = in[1]->ndim == 2 ? 2 : 1;
        c.shape[0] = a.shape[0];
        if (in[1]->ndim == 2) c.shape[1] = out[0]->shape[2];
        gr_array *cw[2];
        ab[0] = &a; ab[1] = in[1];
        cw[0] = cp; cw[1] = out[node->n_out];          /* the output, then the work memory */
        return p->op->perform(p->inner, ab, cw);
    }
#endif
    for (k = 0; k < B; k++) {
        gr_status st;
        gr_array *ow[2];
        gr__batched_rows(node, in, rows, row_ptrs, k);
        row_out.data = (char *)out[0]->data + (size_t)(k * row_size) * gr__dsize(out[0]->dtype);
        ow[0] = row_out_ptr; ow[1] = out[node->n_out];
        st = p->op->perform(p->inner, row_ptrs, ow);
        if (st != GR_OK) return st;
    }
    return GR_OK;
}
/* the work memory of the op applied to each row: a matrix product's largest (its rows' shapes are
   not at hand here) */
static size_t gr__Batched_scratch(const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr__batched_params *p = (const gr__batched_params *)gr__params(node);
    (void)in; (void)out;
    while (p->op == &gr__op_Batched) p = (const gr__batched_params *)gr__params(p->inner);
#ifndef GR_NO_DOT
    if (p->op == &gr__op_Dot || p->op == &gr__op_TensorDot || p->op == &gr__op_MatMul) return gr__gemm_work_bytes(out[0]->dtype, (int64_t)1 << 40);
#endif
    return 0;
}

/* Derivatives of an op applied row by row: the op's own rule, applied to its row-typed node, gives
   a graph in terms of the row placeholders; vectorising that graph with the placeholders replaced
   by the real operands (batched where they are) gives the rule for all rows at once. */
static gr_status gr__vectorize(gr_graph *g, int n_seed, gr_var *const *seed, gr_var *const *seed_b, const uint8_t *seed_isb,
                               int n, gr_var *const *roots, gr_var **out, uint8_t *out_b);
static gr_status gr__rop_by_pullback(const gr_node *node, gr_var *const *ev, gr_var **orop);

/* the seeds mapping the inner node's placeholders (and its output) to the real operands */
static int gr__batched_seeds(const gr_node *node, gr_var **seed, gr_var **seed_b, uint8_t *isb) {
    const gr__batched_params *p = (const gr__batched_params *)gr__params(node);
    int i, n = 0;
    for (i = 0; i < p->n_in; i++) {
        seed[n] = gr__in(p->inner)[i];
        seed_b[n] = gr__in(node)[i];
        isb[n++] = (uint8_t)((p->batched >> i) & 1u);
    }
    seed[n] = gr__out(p->inner)[0];
    seed_b[n] = gr__out(node)[0];
    isb[n++] = 1;
    return n;
}

static gr_status gr__Batched_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__batched_params *p = (const gr__batched_params *)gr__params(node);
    gr_graph *g = node->graph;
    gr_node *inner = p->inner;
    gr_var *seed[34], *seed_b[34], *terms[32], *u, *res;
    uint8_t isb[34], rb;
    int i, ns;
    gr_status st;
    u = gr__new_var(g, gr__grad_dtype(gr__out(inner)[0]), gr__out(inner)[0]->ndim, gr__vshape(gr__out(inner)[0]), GR__VK_INPUT);
    if (!u) return g->status;
    for (i = 0; i < p->n_in; i++) terms[i] = NULL;
    if (!p->op->grad) {
        for (i = 0; i < p->n_in; i++)
            if (!(ig[i] = gr_grad_not_implemented(node, i, gr__in(node)[i], "(the batched op has no grad rule)"))) return g->status;
        return GR_OK;
    }
    st = p->op->grad(inner, &u, terms);
    if (st != GR_OK || g->status != GR_OK) return g->status != GR_OK ? g->status : st;
    ns = gr__batched_seeds(node, seed, seed_b, isb);
    seed[ns] = u; seed_b[ns] = og[0]; isb[ns++] = 1;
    for (i = 0; i < p->n_in; i++) {
        gr_var *t = terms[i], *x = gr__in(node)[i];
        if (!t) return gr__error(g, GR_ERR_TYPE, "the grad rule of %s returned NULL for input %d", gr__on(p->op).s, i);
        if (gr__is_marker(t)) { ig[i] = t->kind == GR__VK_DISC ? gr_disconnected_like(x) : t; if (!ig[i]) return g->status; continue; }
        if ((st = gr__vectorize(g, ns, seed, seed_b, isb, 1, &t, &res, &rb)) != GR_OK) return st;
        if ((p->batched >> i) & 1u) ig[i] = rb ? res : gr_broadcast_like(res, x);
        else ig[i] = rb ? gr_sum_axis(res, 0) : gr__zeros_grad(x);   /* an operand shared by every row */
        if (!ig[i]) return g->status;
    }
    return GR_OK;
}

static gr_status gr__Batched_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__batched_params *p = (const gr__batched_params *)gr__params(node);
    gr_graph *g = node->graph;
    gr_node *inner = p->inner;
    gr_var *seed[66], *seed_b[66], *tv[32], *r = NULL, *res;
    uint8_t isb[66], rb;
    int i, ns;
    gr_status st;
    orop[0] = NULL;
    ns = gr__batched_seeds(node, seed, seed_b, isb);
    for (i = 0; i < p->n_in; i++) {
        gr_var *ph = gr__in(inner)[i];
        if (gr_is_disconnected(ev[i])) { tv[i] = gr_disconnected_like(ph); if (!tv[i]) return g->status; continue; }
        tv[i] = gr__new_var(g, ph->dtype, ph->ndim, gr__vshape(ph), GR__VK_INPUT);
        if (!tv[i]) return g->status;
        seed[ns] = tv[i]; seed_b[ns] = ev[i]; isb[ns++] = (uint8_t)((p->batched >> i) & 1u);
    }
    st = p->op->rop ? p->op->rop(inner, tv, &r) : gr__rop_by_pullback(inner, tv, &r);
    if (st != GR_OK || g->status != GR_OK) return g->status != GR_OK ? g->status : st;
    if (!r || gr__is_marker(r)) return GR_OK;
    if ((st = gr__vectorize(g, ns, seed, seed_b, isb, 1, &r, &res, &rb)) != GR_OK) return st;
    orop[0] = rb ? res : gr_broadcast_like(res, gr__out(node)[0]);
    return orop[0] ? GR_OK : g->status;
}

/* ops applied row by row that need not be (Jacobians and Hessians are full of them): a row-wise
   ReduceLike, BroadcastLike or ReshapeLike whose rows already have ref's shape is the identity;
   rows placed into zeros at a slice (a slice's gradient) of a banded matrix are its diagonals,
   offsets up by the slice's start; a vector operand of Dot batched into rows is one matrix product */
static gr_var *gr__Batched_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    const gr__batched_params *bp = (const gr__batched_params *)params;
    const gr_op_def *iop = bp->op;
    gr_var *z = NULL;
    (void)op; (void)z;
    if ((iop == &gr__op_ReduceLike || iop == &gr__op_BroadcastLike || iop == &gr__op_ReshapeLike) && bp->batched == 1u &&
        in[0]->ndim == in[1]->ndim + 1 && in[0]->dtype == GR__BP_TYPES(bp)[0].dtype) {
        int32_t sx[GR_MAX_NDIM], sr[GR_MAX_NDIM];
        int i, same = 1;
        gr__sig_copy(rw, in[0], sx);
        gr__sig_copy(rw, in[1], sr);
        for (i = 0; i < in[1]->ndim; i++) if (sx[i + 1] != sr[i]) same = 0;
        if (same) return gr__replaced(done, in[0]);
    }
#ifndef GR_NO_INDEX
    if (iop == &gr__op_ViewUpdate && bp->batched == 2u && gr__banded_n(in[1]) && in[0]->ndim == 1 && in[0]->dtype == in[1]->dtype &&
        gr__rw_zeros(in[0], &z) && z) {
        const gr__view_params *vp = (const gr__view_params *)GR__BP_INNER(bp);
        int64_t s0 = gr__view_unit_start(vp);
        if (vp->axis == 0 && s0 >= 0) return gr__replaced(done, gr__banded_map(rw, in[1], iop, vp, bp->inner_psize, in[0], NULL, s0));
    }
#endif
#ifndef GR_NO_DOT
    if (iop == &gr__op_Dot && (bp->batched == 1u || bp->batched == 2u) && GR__BP_TYPES(bp)[bp->batched == 1u ? 0 : 1].ndim == 1) {
        const gr__dot_params *ip = (const gr__dot_params *)GR__BP_INNER(bp);
        gr__dot_params q;
        gr_var *args[2];
        memset(&q, 0, sizeof q);
        if (bp->batched == 2u) {                    /* row k: op(a) b_k  ->  B op(a)^T */
            args[0] = in[1]; args[1] = in[0];
            q.tb = in[0]->ndim == 2 ? !ip->ta : 0;
        } else {                                    /* row k: a_k op(b)  ->  A op(b) */
            args[0] = in[0]; args[1] = in[1];
            q.tb = in[1]->ndim == 2 ? ip->tb : 0;
        }
        return gr__replaced(done, gr__rw1(rw, iop, &q, sizeof q, 2, args));
    }
#endif
    return NULL;
}

#else /* GR_NO_BATCH: no Jacobians of non-scalars (src/jacobian.c says so); what other families'
         batching rules and rewrites name of this file, none of it reached */
static GR__UNUSED const gr_node *gr__conn_node(const gr_node *node) { return node; }
static GR__UNUSED gr_status gr__map_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    (void)in; (void)batched; out[0] = NULL;
    return gr__error(node->graph, GR_ERR_VALUE, "gr_jacobian: gradient.h was built without batching (GR_NO_BATCH)");
}
static GR__UNUSED gr_status gr__vectorize(gr_graph *g, int n_seed, gr_var *const *seed, gr_var *const *seed_b, const uint8_t *seed_isb,
                                          int n, gr_var *const *roots, gr_var **out, uint8_t *out_b) {
    (void)n_seed; (void)seed; (void)seed_b; (void)seed_isb; (void)n; (void)roots; (void)out; (void)out_b;
    return gr__error(g, GR_ERR_VALUE, "gr_jacobian: gradient.h was built without batching (GR_NO_BATCH)");
}
static GR__UNUSED int gr__banded_n(const gr_var *v) { (void)v; return 0; }
static GR__UNUSED gr_var *gr__banded_diag(gr__rewriter *rw, const gr_var *v) { (void)rw; (void)v; return NULL; }
static GR__UNUSED gr_var *gr__banded_map(gr__rewriter *rw, const gr_var *X, const gr_op_def *op, const void *params, size_t psize,
                                       gr_var *pre, gr_var *post, int64_t dk) {
    (void)rw; (void)X; (void)op; (void)params; (void)psize; (void)pre; (void)post; (void)dk;
    return NULL;
}
#endif /* GR_NO_BATCH */

/* ---- batching rules ------------------------------------------------------------------------------ */

/* unary ops that do not care about shapes: the same op on the batched operand */
static GR__UNUSED gr_status gr__same_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    (void)batched;
    out[0] = gr__node1(node->graph, node->op, gr__params(node), node->params_size, node->n_in, in);
    return out[0] ? GR_OK : node->graph->status;
}

/* elementwise: batched operands get their missing axes after the batch axis; NumPy broadcasting
   aligns the rest on the right */
static GR__UNUSED gr_status gr__ew_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr_var *xs[3];
    int d = gr__out(node)[0]->ndim, i;
    for (i = 0; i < node->n_in; i++) {
        int n_i = gr__in(node)[i]->ndim;
        xs[i] = in[i];
        if (batched[i] && n_i < d) {
            int pattern[GR_MAX_NDIM], k, m = 0;
            pattern[m++] = 0;
            for (k = 0; k < d - n_i; k++) pattern[m++] = GR_NEWAXIS;
            for (k = 0; k < n_i; k++) pattern[m++] = k + 1;
            xs[i] = gr__dimshuffle(in[i], m, pattern, 0);
            if (!xs[i]) return node->graph->status;
        }
    }
    out[0] = gr__node1(node->graph, node->op, NULL, 0, node->n_in, xs);
    return out[0] ? GR_OK : node->graph->status;
}

static GR__UNUSED gr_status gr__reduce_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr__reduce_params p = *gr__rp(node);
    (void)batched;
    if (gr__in(node)[0]->ndim + 1 > GR_MAX_NDIM) return gr__map_batch(node, in, batched, out);
    p.mask <<= 1;
    out[0] = gr__node1(node->graph, node->op, &p, sizeof p, 1, in);
    return out[0] ? GR_OK : node->graph->status;
}

static GR__UNUSED gr_status gr__DimShuffle_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    const gr__dimshuffle_params *p = gr__dsp(node);
    int pattern[GR_MAX_NDIM], i;
    if (p->n + 1 > GR_MAX_NDIM) return gr__map_batch(node, in, batched, out);
    pattern[0] = 0;
    for (i = 0; i < p->n; i++) pattern[i + 1] = p->pattern[i] < 0 ? GR_NEWAXIS : p->pattern[i] + 1;
    out[0] = gr__dimshuffle(in[0], p->n + 1, pattern, 0);
    return out[0] ? GR_OK : node->graph->status;
}

/* ops with one axis parameter: the axis moves one to the right */
static GR__UNUSED gr_status gr__axis_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr__axis_params p = *(const gr__axis_params *)gr__params(node);
    (void)batched;
    p.axis += 1;
    out[0] = gr__node1(node->graph, node->op, &p, sizeof p, 1, in);
    return out[0] ? GR_OK : node->graph->status;
}

/* ==== ops/scan.c: generated region; edit ops/scan.c, then run make gradient.h ==== */
/* ops/scan.c: loops (gr_scan, after aesara.scan).

   A loop is one Scan node. Its body is a graph of its own (the loop's gr__scan_def, shared by every
   node and compiled function that applies it), made once from the user's step function: the step
   builds one iteration on stand-ins for the sequences' and states' taps; the nodes that depend on
   the stand-ins are copied into the body, and every other variable they read becomes an input of
   the loop, computed once outside it (loop-invariant code stays out of the loop).

   Inputs of a Scan node:  [n_steps] the offsets of the sequences that have one, the sequences,
                           the initial value of each output with a state, the values the body reads
                           (the non-sequences, then what it captured)
   Outputs:                every output at every step run (a new first axis; only the final value
                           for an output kept LAST), then the number of steps run (I64, 0-d)
   The body's inputs:      each sequence's taps, each state's taps, the values read
   The body's outputs:     one step of every output, then the until condition

   Shapes: sequence (len, *s) -> tap value *s; state initial *s (the one tap -1) or (rows, *s) with
   rows >= D = -min(taps); output (L, *s); steps run ().

   A sequence's tap k at step t reads row off + dir t + k - m (m = min(0, min taps), M = max(0, max
   taps)): dir +1 and off 0 for aesara.scan; dir -1 and off len - (M - m) - 1 for go_backwards (from
   the end of what the taps allow, as Aesara), when the sequence has no offset input; a gradient's
   loop reads its forward loop's sequences backwards, with an offset computed from the steps that
   loop ran. A state's tap k at step t reads the output of step t + k, or the initial value when
   t + k < 0 (row t + k + D of a mit-sot's initial). */

#ifndef GR_NO_SCAN                  /* ops/table.h, op families: all but gr__batch_like */

typedef struct gr__scan_def {
    gr__graphop head;                    /* first: counted; the loop's connection pattern */
    gr_graph *ig;                        /* the body */
    int n_seq, n_out, n_state, n_val;    /* n_val: the values the body reads (non-sequences, captured) */
    int has_n_steps, n_off, has_until;   /* n_off: sequences with an offset input */
    int n_bin, n_bout;                   /* the body's inputs and outputs */
    gr_var **bin, **bout;                /* in ig */
    int *seq_ntaps, *seq_at, *seq_dir, *seq_off, *seq_m, *seq_M;   /* per sequence; its taps at taps + seq_at;
                                                                      seq_off: its offset input, or -1 */
    int *out_state;                      /* per output: its state, or -1 */
    int *st_out, *st_ntaps, *st_at, *st_D;                  /* per state: its output, its taps, -min(taps) */
    unsigned char *out_last;             /* per output: only the final value is kept (gradients' states) */
    int *taps;
    int64_t truncate, checkpoints;
    int go_backwards;
    /* a checkpointed gradient's loop: the states' histories it reads are recomputed from the forward
       loop (replay, counted) instead of stored: sequence i is the history of replay's state
       seq_replay[i] (-1: an ordinary sequence); the forward sequences are this loop's sequences
       from replay_seq0, the forward initial values its values from replay_init0 */
    struct gr__scan_def *replay;
    int *seq_replay, replay_seq0, replay_init0;
    char name[64];
} gr__scan_def;

/* a Scan node's params: the loop, and the compiled function's state for it (NULL in user graphs) */
typedef struct gr__scan_rt gr__scan_rt;
typedef struct gr__scan_params {
    gr__scan_def *def;
    gr__scan_rt *rt;
    uint64_t narrowed;                   /* outputs j < 64 a compiled function reads only at their last row
                                            (Aesara's scan_save_mem): kept as LAST (gr__Scan_narrow) */
    uint64_t front;                      /* outputs j < 64 of a plain state that a compiled function reads
                                            behind their initial value (a gradient's history): kept with
                                            it as row 0, L + 1 rows, instead of joined to it by a copy */
} gr__scan_params;

static gr__scan_def *gr__sdef(const gr_node *node) { return ((const gr__scan_params *)gr__params(node))->def; }
static gr__scan_rt *gr__scan_rt_of(const gr_node *node) { return ((const gr__scan_params *)gr__params(node))->rt; }
/* output j keeps only its final value: the loop's own choice (a gradient's states) or the function's */
static int gr__scan_last(const gr_node *node, int j) {
    const gr__scan_params *p = (const gr__scan_params *)gr__params(node);
    return p->def->out_last[j] || (j < 64 && ((p->narrowed >> j) & 1u));
}

/* output j keeps its initial value as row 0 (gr__scan_params.front) */
static int gr__scan_front(const gr_node *node, int j) {
    const gr__scan_params *p = (const gr__scan_params *)gr__params(node);
    return j < 64 && ((p->front >> j) & 1u);
}

/* where a node's inputs start */
static int gr__scan_i_off(const gr__scan_def *d) { return d->has_n_steps; }
static int gr__scan_i_seq(const gr__scan_def *d) { return d->has_n_steps + d->n_off; }
static int gr__scan_i_init(const gr__scan_def *d) { return gr__scan_i_seq(d) + d->n_seq; }
static int gr__scan_i_val(const gr__scan_def *d) { return gr__scan_i_init(d) + d->n_state; }
static int gr__scan_n_in(const gr__scan_def *d) { return gr__scan_i_val(d) + d->n_val; }
/* where the body's inputs start: sequences' taps, states' taps, values */
static int gr__scan_b_state(const gr__scan_def *d) { return d->n_seq ? d->seq_at[d->n_seq - 1] + d->seq_ntaps[d->n_seq - 1] : 0; }
static int gr__scan_b_val(const gr__scan_def *d) { return d->n_bin - d->n_val; }

static void gr__scan_destroy(gr__graphop *o) {
    gr__scan_def *d = (gr__scan_def *)o;
    gr_graph_free(d->ig);
    GR_FREE(d->head.conn);
    GR_FREE(d->bin); GR_FREE(d->bout);
    GR_FREE(d->seq_ntaps); GR_FREE(d->out_state); GR_FREE(d->st_out); GR_FREE(d->out_last); GR_FREE(d->taps);
    GR_FREE(d->seq_replay);
    if (d->replay && --d->replay->head.refs == 0) d->replay->head.destroy(&d->replay->head);
    GR_FREE(d);
}

static gr_status gr__scan_grad_some(const gr_node *node, gr_var *const *og, gr_var **ig, const uint8_t *skip);
static gr_status gr__scan_grad_any(const gr_node *node, gr_var *const *og, gr_var **ig, const uint8_t *skip);

/* a loop's body, under its node (src/print.c): its inputs (the taps and the values) and outputs */
static void gr__scan_print(gr__printer *p, const gr__graphop *o) {
    const gr__scan_def *d = (const gr__scan_def *)o;
    gr__print_inner(p, "body", d->n_bin, d->bin, d->n_bout, d->bout, d->has_until ? "the last: until" : NULL);
}

/* ---- the loop as the user describes it, and as gradients do ---------------------------------------- */

typedef struct gr__scan_spec {
    int n_seq;
    gr_var *const *seq;
    const int *seq_ntaps;                /* 0: the one tap 0 */
    const int *const *seq_taps;
    const int *seq_dir;                  /* NULL: all +1, or all -1 when go_backwards */
    gr_var *const *seq_off;              /* NULL, or per sequence its offset (0-d I64) or NULL */
    int n_out;
    gr_var *const *init;                 /* per output: its initial value, or NULL (no state) */
    const int *out_ntaps;                /* 0 with an initial: the one tap -1 */
    const int *const *out_taps;
    const unsigned char *out_last;       /* NULL: every row of every output */
    int n_val;
    gr_var *const *val;
    gr_var *n_steps;
    int go_backwards;
    int64_t truncate, checkpoints;
    const char *name;
    gr_scan_step step;
    void *user;
    gr__scan_def *replay;                /* see gr__scan_def */
    const int *seq_replay;
    int replay_seq0, replay_init0;
} gr__scan_spec;

static const int gr__tap0 = 0, gr__tap_m1 = -1;

static int gr__scan_seq_ntaps(const gr__scan_spec *sp, int i) { return sp->seq_ntaps[i] ? sp->seq_ntaps[i] : 1; }
static const int *gr__scan_seq_taps(const gr__scan_spec *sp, int i) { return sp->seq_ntaps[i] ? sp->seq_taps[i] : &gr__tap0; }
static int gr__scan_out_ntaps(const gr__scan_spec *sp, int j) { return !sp->init[j] ? 0 : sp->out_ntaps[j] ? sp->out_ntaps[j] : 1; }
static const int *gr__scan_out_taps(const gr__scan_spec *sp, int j) { return sp->out_ntaps[j] ? sp->out_taps[j] : &gr__tap_m1; }
/* a plain state (the one tap -1: the initial is the state itself), not a mit-sot */
static int gr__scan_sitsot(const gr__scan_spec *sp, int j) { return sp->init[j] && (!sp->out_ntaps[j] || (sp->out_ntaps[j] == 1 && sp->out_taps[j][0] == -1)); }

/* a stand-in for a tap: a free input typed like one row of x (x itself when rows is 0); shapes of
   shared values are left unknown (gr_shared_set may change them) */
static gr_var *gr__scan_standin(gr_graph *g, const gr_var *x, int rows) {
    int64_t shape[GR_MAX_NDIM];
    int i;
    for (i = rows; i < x->ndim; i++) shape[i - rows] = x->kind == GR__VK_SHARED ? -1 : gr__vshape(x)[i];
    return gr__new_var(g, x->dtype, x->ndim - rows, shape, GR__VK_INPUT);
}

/* a checkpointed gradient's loop: a replayed sequence (a forward state's history) carries what reaches
   that state in the forward loop, whose inputs are this loop's forward sequences, initial values and
   values (see gr__scan_def) */
static void gr__scan_pattern_replay(const gr__scan_def *d, unsigned char *conn) {
    const gr__scan_def *fd = d->replay;
    int no = d->n_out + 1, fno, i, a, j;
    if (!fd) return;
    fno = fd->n_out + 1;
    for (i = 0; i < d->n_seq; i++) {
        const unsigned char *row = conn + (size_t)(gr__scan_i_seq(d) + i) * (size_t)no;
        int jo;
        if (d->seq_replay[i] < 0) continue;
        jo = fd->st_out[d->seq_replay[i]];
        for (a = gr__scan_i_seq(fd); a < gr__scan_n_in(fd); a++) {
            int at;
            if (!fd->head.conn[(size_t)a * (size_t)fno + (size_t)jo]) continue;
            if (a < gr__scan_i_init(fd)) at = gr__scan_i_seq(d) + d->replay_seq0 + (a - gr__scan_i_seq(fd));
            else if (a < gr__scan_i_val(fd)) at = gr__scan_i_val(d) + d->replay_init0 + (a - gr__scan_i_init(fd));
            else at = gr__scan_i_val(d) + (a - gr__scan_i_val(fd));
            for (j = 0; j < d->n_out; j++) conn[(size_t)at * (size_t)no + (size_t)j] |= row[j];
        }
    }
}

/* Which inputs reach which outputs, through the recurrence: the body's own pattern (body input ->
   body output, by reachability in ig), then closed over the states (a state's taps reach what its
   output's value reaches at the next steps) until nothing changes. */
static gr_status gr__scan_pattern(gr__scan_def *d) {
    gr_graph *ig = d->ig;
    uint32_t nv = ig->var_base + ig->n_vars, k;
    int n_in = gr__scan_n_in(d), no = d->n_out + 1, b, j, s, t, changed;
    unsigned char *reach = (unsigned char *)gr__calloc((size_t)nv * (size_t)d->n_bin + 1, 1);   /* var x body input */
    unsigned char *bconn = (unsigned char *)gr__calloc((size_t)d->n_bin * (size_t)no + 1, 1);  /* body input x output */
    unsigned char *conn = (unsigned char *)gr__calloc((size_t)n_in * (size_t)no + 1, 1);
    if (!reach || !bconn || !conn) { GR_FREE(reach); GR_FREE(bconn); GR_FREE(conn); return GR_ERR_NOMEM; }
    for (b = 0; b < d->n_bin; b++) reach[(size_t)d->bin[b]->id * (size_t)d->n_bin + (size_t)b] = 1;
    for (k = 0; k < ig->n_nodes; k++) {                 /* nodes in the order made: inputs first */
        gr_node *node = ig->nodes[k];
        int i, o;
        for (o = 0; o < node->n_out; o++)
            for (i = 0; i < node->n_in; i++) {
                const unsigned char *src = reach + (size_t)gr__in(node)[i]->id * (size_t)d->n_bin;
                unsigned char *dst = reach + (size_t)gr__out(node)[o]->id * (size_t)d->n_bin;
                if (!gr__connected(node, i, o) || gr__is_marker(gr__out(node)[o])) continue;
                for (b = 0; b < d->n_bin; b++) dst[b] |= src[b];
            }
    }
    for (j = 0; j < d->n_out; j++)
        for (b = 0; b < d->n_bin; b++) bconn[b * no + j] = reach[(size_t)d->bout[j]->id * (size_t)d->n_bin + (size_t)b];
    /* a state's taps reach, at later steps, whatever its own output reaches */
    do {
        changed = 0;
        for (s = 0; s < d->n_state; s++) {
            int jo = d->st_out[s], bs = gr__scan_b_state(d) + d->st_at[s] - d->st_at[0];
            for (t = 0; t < d->st_ntaps[s]; t++)
                for (b = 0; b < d->n_bin; b++)
                    if (bconn[b * no + jo])                /* b reaches the state: it reaches what its taps reach */
                        for (j = 0; j < d->n_out; j++)
                            if (bconn[(bs + t) * no + j] && !bconn[b * no + j]) { bconn[b * no + j] = 1; changed = 1; }
        }
    } while (changed);
    /* node inputs: n_steps and offsets reach nothing differentiable; a sequence through its taps; an
       initial through its state's taps; a value through its body input */
    for (s = 0; s < d->n_seq; s++)
        for (t = 0; t < d->seq_ntaps[s]; t++)
            for (j = 0; j < d->n_out; j++) conn[(gr__scan_i_seq(d) + s) * no + j] |= bconn[(d->seq_at[s] + t) * no + j];
    for (s = 0; s < d->n_state; s++)
        for (t = 0; t < d->st_ntaps[s]; t++)
            for (j = 0; j < d->n_out; j++)
                conn[(gr__scan_i_init(d) + s) * no + j] |= bconn[(gr__scan_b_state(d) + d->st_at[s] - d->st_at[0] + t) * no + j];
    for (s = 0; s < d->n_val; s++)
        for (j = 0; j < d->n_out; j++) conn[(gr__scan_i_val(d) + s) * no + j] = bconn[(gr__scan_b_val(d) + s) * no + j];
    gr__scan_pattern_replay(d, conn);
    GR_FREE(reach);
    GR_FREE(bconn);
    d->head.conn = conn;
    return GR_OK;
}

/* An open-addressing set of variables (the values the body reads, in the order found) */
typedef struct gr__vset { gr_var **slot; int32_t *idx; uint32_t cap; gr_var **list; int n, cap_list; } gr__vset;
static int32_t gr__vset_find(const gr__vset *s, const gr_var *v) {
    uint32_t h = (uint32_t)(((uintptr_t)v >> 4) * 2654435761u) & (s->cap - 1u);
    while (s->slot[h]) { if (s->slot[h] == v) return s->idx[h]; h = (h + 1u) & (s->cap - 1u); }
    return -1;
}
/* index of v, added when new; -1 when out of memory */
static int32_t gr__vset_add(gr__vset *s, gr_var *v) {
    uint32_t h, i;
    int32_t at = s->cap ? gr__vset_find(s, v) : -1;
    if (at >= 0) return at;
    if (2u * ((uint32_t)s->n + 1u) > s->cap) {
        uint32_t cap = s->cap ? 2u * s->cap : 16u;
        gr_var **slot = (gr_var **)gr__calloc(cap, sizeof(gr_var *));
        int32_t *idx = (int32_t *)gr__calloc(cap, sizeof(int32_t));
        if (!slot || !idx) { GR_FREE(slot); GR_FREE(idx); return -1; }
        for (i = 0; i < s->cap; i++)
            if (s->slot[i]) {
                h = (uint32_t)(((uintptr_t)s->slot[i] >> 4) * 2654435761u) & (cap - 1u);
                while (slot[h]) h = (h + 1u) & (cap - 1u);
                slot[h] = s->slot[i];
                idx[h] = s->idx[i];
            }
        GR_FREE(s->slot); GR_FREE(s->idx);
        s->slot = slot; s->idx = idx; s->cap = cap;
    }
    if (s->n >= s->cap_list) {
        int cap = s->cap_list ? 2 * s->cap_list : 16;
        gr_var **l = (gr_var **)GR_REALLOC(s->list, sizeof(gr_var *) * (size_t)cap);
        if (!l) return -1;
        s->list = l; s->cap_list = cap;
    }
    h = (uint32_t)(((uintptr_t)v >> 4) * 2654435761u) & (s->cap - 1u);
    while (s->slot[h]) h = (h + 1u) & (s->cap - 1u);
    s->slot[h] = v;
    s->idx[h] = s->n;
    s->list[s->n] = v;
    return s->n++;
}
/* v appended even when present (the positions of the explicit values are kept; a capture finds the
   first); -1 when out of memory */
static int32_t gr__vset_push(gr__vset *s, gr_var *v) {
    int32_t at = s->cap ? gr__vset_find(s, v) : -1, n;
    if (at < 0) return gr__vset_add(s, v);
    if (s->n >= s->cap_list) {
        int cap = s->cap_list ? 2 * s->cap_list : 16;
        gr_var **l = (gr_var **)GR_REALLOC(s->list, sizeof(gr_var *) * (size_t)cap);
        if (!l) return -1;
        s->list = l; s->cap_list = cap;
    }
    n = s->n++;
    s->list[n] = v;
    return n;
}
static void gr__vset_free(gr__vset *s) { GR_FREE(s->slot); GR_FREE(s->idx); GR_FREE(s->list); }

/* d's body made again in g, on the counterparts of its inputs that map holds (map: by body variable
   id; map[bin[i]->id] set for every input): the nodes its outputs need, in order, each typed again
   from its inputs there; constants copied. out[j]: output j's counterpart (n_bout of them). Errors
   are recorded on g. */
static gr_status gr__scan_clone(const gr__scan_def *d, gr_graph *g, gr_var **map, gr_var **out) {
    gr_node **order = NULL;
    uint32_t n = 0, k;
    gr_var *ins_stack[8], **ins = ins_stack, *o_stack[8], **o = o_stack;
    int i, j, cap = 8;
    gr_status st = gr__toposort(d->ig, d->n_bout, d->bout, NULL, &order, &n);
    if (st != GR_OK) { gr_graph_clear_error(d->ig); return gr__error(g, st, "gr_scan '%s': out of memory", d->name); }
    for (k = 0; k < n && st == GR_OK; k++) {
        gr_node *node = order[k];
        if (node->n_in > cap || node->n_out > cap) {
            cap = node->n_in > node->n_out ? node->n_in : node->n_out;
            if (ins != ins_stack) { GR_FREE(ins); GR_FREE(o); }
            ins = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)cap);
            o = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)cap);
            if (!ins || !o) { st = gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name); break; }
        }
        for (i = 0; i < node->n_in; i++) {
            gr_var *x = gr__in(node)[i];
            if (!map[x->id] && x->kind == GR__VK_CONST) map[x->id] = gr__constant(g, (const gr_array *)gr__ext(x), x->flags);
            if (!(ins[i] = map[x->id])) break;
        }
        if (i < node->n_in) st = g->status != GR_OK ? g->status : gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
        else st = gr__make_node_n(g, node->op, gr__params(node), node->params_size, node->n_in, ins, node->n_out, o);
        for (j = 0; st == GR_OK && j < node->n_out; j++) map[gr__out(node)[j]->id] = o[j];
    }
    for (j = 0; st == GR_OK && j < d->n_bout; j++) {
        gr_var *b = d->bout[j];
        if (!map[b->id] && b->kind == GR__VK_CONST) map[b->id] = gr__constant(g, (const gr_array *)gr__ext(b), b->flags);
        if (!(out[j] = map[b->id])) st = g->status != GR_OK ? g->status : gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
    }
    if (ins != ins_stack) { GR_FREE(ins); GR_FREE(o); }
    GR_FREE(order);
    return st;
}

/* What gr__scan_make works on: the spec; the step's inputs (the stand-ins of the taps, then the
   values) and results; the variables and nodes the step made (after v0 and n0 of g), which of them
   depend on the stand-ins (dep, by variable) and which the body needs (need, by node); the values
   the body reads; the loop; per variable the step made, its counterpart in the body (map). */
typedef struct gr__scan_build {
    gr_graph *g;
    const gr__scan_spec *sp;
    const char *name;
    int n_stap, n_ttap, n_state;         /* the sequences' taps, the states' taps, the states */
    gr_var **in, **out, *until;
    uint32_t v0, n0, nv, nn;
    uint8_t *dep, *need;
    gr__vset vals;
    gr__scan_def *d;
    gr_var **map;
} gr__scan_build;

/* v was made by the step and depends on a stand-in */
static int gr__scan_dep(const gr__scan_build *b, const gr_var *v) {
    return v->graph == b->g && v->id >= b->g->var_base + b->v0 && b->dep[v->id - b->g->var_base - b->v0];
}
static gr_status gr__scan_nomem(const gr__scan_build *b) { return gr__error(b->g, GR_ERR_NOMEM, "gr_scan '%s': out of memory", b->name); }

/* output j of the step: a value of this graph typed as its state (a weak scalar coerced to it) */
static gr_status gr__scan_check_out(gr__scan_build *b, int j) {
    const gr__scan_spec *sp = b->sp;
    gr_graph *g = b->g;
    const char *name = b->name;
    gr_var *o = b->out[j];
    if (!o) return g->status != GR_OK ? g->status : gr__error(g, GR_ERR_VALUE, "gr_scan '%s': the step left output %d NULL", name, j);
    if (o->graph != g) return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': output %d of the step belongs to another graph", name, j);
    if (gr__is_marker(o)) return gr__error(g, GR_ERR_TYPE, "gr_scan '%s': output %d of the step is a gradient marker", name, j);
    if (sp->init[j]) {
        const gr_var *s0 = sp->init[j];
        int rows = gr__scan_sitsot(sp, j) ? 0 : 1, dd;
        if (o->dtype != s0->dtype && gr__is_weak(o) && s0->ndim - rows == 0) {
            if (!(o = b->out[j] = gr__coerce(o, s0->dtype))) return g->status;
        }
        if (o->dtype != s0->dtype || o->ndim != s0->ndim - rows)
            return gr__error(g, GR_ERR_TYPE, "gr_scan '%s': output %d of the step is %s with %d dimensions; its state %s is %s with %d",
                             name, j, gr_dtype_name((gr_dtype)o->dtype), o->ndim, gr__d(s0).s, gr_dtype_name((gr_dtype)s0->dtype),
                             s0->ndim - rows);
        for (dd = 0; dd < o->ndim; dd++) {
            int64_t a = gr__vshape(o)[dd], c = s0->kind == GR__VK_SHARED ? -1 : gr__vshape(s0)[dd + rows];
            if (a >= 0 && c >= 0 && a != c)
                return gr__error(g, GR_ERR_SHAPE, "gr_scan '%s': output %d of the step has the shape %s; its state %s has rows of %lld along axis %d",
                                 name, j, gr__vs(o).s, gr__d(s0).s, (long long)c, dd);
        }
    }
    return GR_OK;
}

/* 1. the stand-ins and the step, its outputs checked */
static gr_status gr__scan_run_step(gr__scan_build *b) {
    const gr__scan_spec *sp = b->sp;
    gr_graph *g = b->g;
    int i, j, t, pos;
    gr_status st;
    for (i = 0, pos = 0; i < sp->n_seq; i++)
        for (t = 0; t < gr__scan_seq_ntaps(sp, i); t++)
            if (!(b->in[pos++] = gr__scan_standin(g, sp->seq[i], 1))) return GR_ERR_NOMEM;
    for (j = 0; j < sp->n_out; j++)
        for (t = 0; t < gr__scan_out_ntaps(sp, j); t++)
            if (!(b->in[pos++] = gr__scan_standin(g, sp->init[j], gr__scan_sitsot(sp, j) ? 0 : 1))) return GR_ERR_NOMEM;
    for (i = 0; i < sp->n_val; i++) b->in[pos++] = sp->val[i];
    st = sp->step(g, b->in, b->out, &b->until, sp->user);
    if (st != GR_OK) {
        if (g->status == GR_OK) gr__error(g, st, "gr_scan '%s': the step function failed (%s)", b->name, gr_status_string(st));
        return st;
    }
    for (j = 0; j < sp->n_out; j++) if ((st = gr__scan_check_out(b, j)) != GR_OK) return st;
    if (b->until) {
        if (b->until->graph != g || gr__is_marker(b->until) || b->until->ndim != 0)
            return gr__error(g, GR_ERR_TYPE, "gr_scan '%s': the until condition must be a 0-d value of this graph, not %s", b->name,
                             gr__d(b->until).s);
        b->out[sp->n_out] = b->until;
    }
    return GR_OK;
}

/* 2. what depends on the stand-ins (the nodes made since, in the order made), the nodes of it the
   outputs need (the body), and the values the body reads */
static gr_status gr__scan_find_body(gr__scan_build *b) {
    const gr__scan_spec *sp = b->sp;
    gr_graph *g = b->g;
    uint32_t k;
    int i, j;
    b->nv = g->n_vars - b->v0;
    b->nn = g->n_nodes - b->n0;
    b->dep = (uint8_t *)gr__calloc((size_t)b->nv + 1, 1);
    b->need = (uint8_t *)gr__calloc((size_t)b->nn + 1, 1);
    if (!b->dep || !b->need) return gr__scan_nomem(b);
    for (i = 0; i < b->n_stap + b->n_ttap; i++) b->dep[b->in[i]->id - g->var_base - b->v0] = 1;
    for (k = 0; k < b->nn; k++) {
        gr_node *node = g->nodes[b->n0 + k];
        int any = 0;
        for (i = 0; i < node->n_in && !any; i++) any = gr__scan_dep(b, gr__in(node)[i]);
        if (any) for (j = 0; j < node->n_out; j++) b->dep[gr__out(node)[j]->id - g->var_base - b->v0] = 1;
    }
    /* the body: the dependent nodes the outputs need, found going back down the new nodes */
    for (j = 0; j <= sp->n_out; j++)
        if (b->out[j] && gr__scan_dep(b, b->out[j]) && gr__owner(b->out[j])) b->need[gr__owner(b->out[j])->id - g->node_base - b->n0] = 1;
    for (k = b->nn; k-- > 0;) {
        gr_node *node = g->nodes[b->n0 + k];
        if (!b->need[k]) continue;
        for (i = 0; i < node->n_in; i++) {
            gr_var *x = gr__in(node)[i];
            if (gr__scan_dep(b, x) && gr__owner(x)) b->need[gr__owner(x)->id - g->node_base - b->n0] = 1;
        }
    }
    /* the values the body reads: the non-sequences first, then what its nodes and outputs capture */
    for (i = 0; i < sp->n_val; i++) if (gr__vset_push(&b->vals, sp->val[i]) < 0) return gr__scan_nomem(b);
    for (k = 0; k < b->nn; k++) {
        gr_node *node = g->nodes[b->n0 + k];
        if (!b->need[k]) continue;
        for (i = 0; i < node->n_in; i++) {
            gr_var *x = gr__in(node)[i];
            if (!gr__scan_dep(b, x) && x->kind != GR__VK_CONST && gr__vset_add(&b->vals, x) < 0) return gr__scan_nomem(b);
        }
    }
    for (j = 0; j <= sp->n_out; j++)
        if (b->out[j] && !gr__scan_dep(b, b->out[j]) && b->out[j]->kind != GR__VK_CONST && gr__vset_add(&b->vals, b->out[j]) < 0)
            return gr__scan_nomem(b);
    return GR_OK;
}

/* the loop's taps: per sequence its taps, direction, offset input and span; per state its output,
   taps and depth D */
static void gr__scan_def_taps(gr__scan_def *d, const gr__scan_spec *sp) {
    int i, j, t, pos, n_state;
    for (i = 0, pos = 0, t = 0; i < sp->n_seq; i++) {
        const int *tp = gr__scan_seq_taps(sp, i);
        int u;
        d->seq_ntaps[i] = gr__scan_seq_ntaps(sp, i);
        d->seq_at[i] = pos;
        d->seq_dir[i] = sp->seq_dir ? sp->seq_dir[i] : sp->go_backwards ? -1 : 1;
        d->seq_off[i] = sp->seq_off && sp->seq_off[i] ? t++ : -1;
        d->seq_m[i] = d->seq_M[i] = 0;
        for (u = 0; u < d->seq_ntaps[i]; u++) {
            d->taps[pos++] = tp[u];
            if (tp[u] < d->seq_m[i]) d->seq_m[i] = tp[u];
            if (tp[u] > d->seq_M[i]) d->seq_M[i] = tp[u];
        }
    }
    for (j = 0, n_state = 0; j < sp->n_out; j++) {
        d->out_last[j] = sp->out_last ? sp->out_last[j] : 0;
        d->out_state[j] = -1;
        if (!sp->init[j]) continue;
        {
            const int *tp = gr__scan_out_taps(sp, j);
            int s = n_state++;
            d->out_state[j] = s;
            d->st_out[s] = j;
            d->st_ntaps[s] = gr__scan_out_ntaps(sp, j);
            d->st_at[s] = pos;
            d->st_D[s] = 0;
            for (t = 0; t < d->st_ntaps[s]; t++) {
                d->taps[pos++] = tp[t];
                if (-tp[t] > d->st_D[s]) d->st_D[s] = -tp[t];
            }
        }
    }
}

/* 3. the loop's description (b->d, its body graph still empty) */
static gr_status gr__scan_def_new(gr__scan_build *b) {
    const gr__scan_spec *sp = b->sp;
    int i, n_state = b->n_state, n_taps = b->n_stap + b->n_ttap;
    gr__scan_def *d = b->d = (gr__scan_def *)gr__calloc(1, sizeof(gr__scan_def));
    if (!d) return gr__scan_nomem(b);
    d->head.refs = 1;
    d->head.destroy = gr__scan_destroy;
    d->head.name = d->name;
    d->head.print = gr__scan_print;
    d->head.grad_some = gr__scan_grad_any;
    d->n_seq = sp->n_seq;
    d->n_out = sp->n_out;
    d->n_state = n_state;
    d->n_val = b->vals.n;
    d->has_n_steps = sp->n_steps != NULL;
    for (i = 0; sp->seq_off && i < sp->n_seq; i++) d->n_off += sp->seq_off[i] != NULL;
    d->has_until = b->until != NULL;
    d->n_bin = n_taps + b->vals.n;
    d->n_bout = sp->n_out + d->has_until;
    d->go_backwards = sp->go_backwards;
    d->truncate = sp->truncate;
    d->checkpoints = sp->checkpoints;
    snprintf(d->name, sizeof d->name, "%s", b->name);
    if (sp->replay) {
        if (!(d->seq_replay = (int *)gr__calloc((size_t)sp->n_seq + 1, sizeof(int)))) return gr__scan_nomem(b);
        memcpy(d->seq_replay, sp->seq_replay, sizeof(int) * (size_t)sp->n_seq);
        d->replay = sp->replay;
        d->replay->head.refs++;
        d->replay_seq0 = sp->replay_seq0;
        d->replay_init0 = sp->replay_init0;
    }
    d->head.n_in = gr__scan_n_in(d);
    d->head.n_out = sp->n_out + 1;
    d->bin = (gr_var **)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_var *));
    d->bout = (gr_var **)gr__calloc((size_t)d->n_bout + 1, sizeof(gr_var *));
    d->seq_ntaps = (int *)gr__calloc(6u * (size_t)sp->n_seq + 1, sizeof(int));
    d->out_state = (int *)gr__calloc((size_t)sp->n_out + 1, sizeof(int));
    d->st_out = (int *)gr__calloc(4u * (size_t)n_state + 1, sizeof(int));
    d->out_last = (unsigned char *)gr__calloc((size_t)sp->n_out + 1, 1);
    d->taps = (int *)gr__calloc((size_t)n_taps + 1, sizeof(int));
    d->ig = gr_graph_new();
    if (!d->bin || !d->bout || !d->seq_ntaps || !d->out_state || !d->st_out || !d->out_last || !d->taps || !d->ig) return gr__scan_nomem(b);
    d->seq_at = d->seq_ntaps + sp->n_seq;
    d->seq_dir = d->seq_at + sp->n_seq;
    d->seq_off = d->seq_dir + sp->n_seq;
    d->seq_m = d->seq_off + sp->n_seq;
    d->seq_M = d->seq_m + sp->n_seq;
    d->st_ntaps = d->st_out + n_state;
    d->st_at = d->st_ntaps + n_state;
    d->st_D = d->st_at + n_state;
    gr__scan_def_taps(d, sp);
    return GR_OK;
}

/* the body's counterpart of x, read by a node the body copies: made by the step, a constant, or a value read */
static gr_var *gr__scan_body_var(const gr__scan_build *b, gr_var *x) {
    if (gr__scan_dep(b, x)) return b->map[x->id - b->g->var_base - b->v0];
    if (x->kind == GR__VK_CONST) return gr__constant(b->d->ig, (const gr_array *)gr__ext(x), x->flags);
    return b->d->bin[b->n_stap + b->n_ttap + gr__vset_find(&b->vals, x)];
}

/* the error of a failed copy into the body, recorded on g */
static gr_status gr__scan_body_failed(const gr__scan_build *b) {
    gr_status st = b->d->ig->status != GR_OK ? b->d->ig->status : GR_ERR_NOMEM;
    gr__error(b->g, st, "gr_scan '%s': copying the body: %s", b->name, b->d->ig->message[0] ? b->d->ig->message : "out of memory");
    return st;
}

/* node k of the step (in the order made) copied into the body (ins: room for its inputs) */
static gr_status gr__scan_copy_node(gr__scan_build *b, uint32_t k, gr_var **ins) {
    gr_node *node = b->g->nodes[b->n0 + k];
    gr__scan_def *d = b->d;
    gr_var *bo[64], **bouts = bo;
    gr_status st = GR_OK;
    int i, j;
    if (node->n_out > 64) {
        bouts = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)node->n_out);
        if (!bouts) return gr__scan_nomem(b);
    }
    for (i = 0; i < node->n_in; i++) if (!(ins[i] = gr__scan_body_var(b, gr__in(node)[i]))) break;
    if (i < node->n_in || gr__make_node_n(d->ig, node->op, gr__params(node), node->params_size, node->n_in, ins, node->n_out, bouts) != GR_OK)
        st = gr__scan_body_failed(b);
    for (j = 0; st == GR_OK && j < node->n_out; j++) {
        b->map[gr__out(node)[j]->id - b->g->var_base - b->v0] = bouts[j];
        if (gr__vname(gr__out(node)[j]) && !gr__set_name(d->ig, bouts[j], gr__vname(gr__out(node)[j]))) st = gr__scan_body_failed(b);
    }
    if (bouts != bo) GR_FREE(bouts);
    return st;
}

/* the body's graph: its inputs, then the needed nodes copied in the order made, its outputs, the
   loop's connection pattern */
static gr_status gr__scan_copy_body(gr__scan_build *b) {
    gr__scan_def *d = b->d;
    gr_graph *g = b->g;
    int i, j, n_taps = b->n_stap + b->n_ttap, max_in = 8;
    gr_var **ins;
    uint32_t k;
    gr_status st = GR_OK;
    b->map = (gr_var **)gr__calloc((size_t)b->nv + 1, sizeof(gr_var *));
    if (!b->map) return gr__scan_nomem(b);
    for (i = 0; i < n_taps; i++) {
        gr_var *x = gr__new_var(d->ig, b->in[i]->dtype, b->in[i]->ndim, gr__vshape(b->in[i]), GR__VK_INPUT);
        if (!x) return gr__scan_body_failed(b);
        d->bin[i] = b->map[b->in[i]->id - g->var_base - b->v0] = x;
    }
    for (i = 0; i < b->vals.n; i++) {
        gr_var *x = b->vals.list[i];
        if (!(d->bin[n_taps + i] = gr__scan_standin(d->ig, x, 0))) return gr__scan_body_failed(b);
        if (gr__vname(x) && !gr__set_name(d->ig, d->bin[n_taps + i], gr__vname(x))) return gr__scan_body_failed(b);
    }
    for (k = 0; k < b->nn; k++) if (b->need[k] && g->nodes[b->n0 + k]->n_in > max_in) max_in = g->nodes[b->n0 + k]->n_in;
    ins = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(max_in + 1));
    if (!ins) return gr__scan_nomem(b);
    for (k = 0; k < b->nn && st == GR_OK; k++) if (b->need[k]) st = gr__scan_copy_node(b, k, ins);
    GR_FREE(ins);
    if (st != GR_OK) return st;
    for (j = 0; j < d->n_bout; j++) if (!(d->bout[j] = gr__scan_body_var(b, b->out[j]))) return gr__scan_body_failed(b);
    if (gr__scan_pattern(d) != GR_OK) return gr__scan_nomem(b);
    return GR_OK;
}

/* Builds the loop of sp in g: the stand-ins, the user's step, the body copied into a graph of its
   own, and the Scan node. results: n_out + 1 entries (the last: the number of steps run). */
static gr_status gr__scan_make(gr_graph *g, const gr__scan_spec *sp, gr_var **results) {
    gr__scan_build b;
    gr_var **ins = NULL;
    gr__scan_params prm;
    int i, j, pos;
    gr_status st;
    memset(&b, 0, sizeof b);
    b.g = g;
    b.sp = sp;
    b.name = sp->name ? sp->name : "scan";
    b.v0 = g->n_vars;
    b.n0 = g->n_nodes;
    for (i = 0; i <= sp->n_out; i++) results[i] = NULL;
    for (i = 0; i < sp->n_seq; i++) b.n_stap += gr__scan_seq_ntaps(sp, i);
    for (j = 0; j < sp->n_out; j++) if (sp->init[j]) { b.n_state++; b.n_ttap += gr__scan_out_ntaps(sp, j); }
    b.in = (gr_var **)gr__calloc((size_t)(b.n_stap + b.n_ttap + sp->n_val) + 1, sizeof(gr_var *));
    b.out = (gr_var **)gr__calloc((size_t)sp->n_out + 2, sizeof(gr_var *));
    if (!b.in || !b.out) { st = gr__scan_nomem(&b); goto done; }
    if ((st = gr__scan_run_step(&b)) != GR_OK || (st = gr__scan_find_body(&b)) != GR_OK || (st = gr__scan_def_new(&b)) != GR_OK ||
        (st = gr__scan_copy_body(&b)) != GR_OK)
        goto done;
    /* 4. the node */
    ins = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(gr__scan_n_in(b.d) + 1));
    if (!ins) { st = gr__scan_nomem(&b); goto done; }
    pos = 0;
    if (sp->n_steps) ins[pos++] = sp->n_steps;
    for (i = 0; sp->seq_off && i < sp->n_seq; i++) if (sp->seq_off[i]) ins[pos++] = sp->seq_off[i];
    for (i = 0; i < sp->n_seq; i++) ins[pos++] = sp->seq[i];
    for (j = 0; j < sp->n_out; j++) if (sp->init[j]) ins[pos++] = sp->init[j];
    for (i = 0; i < b.vals.n; i++) ins[pos++] = b.vals.list[i];
    memset(&prm, 0, sizeof prm);
    prm.def = b.d;
    st = gr__make_node_n(g, &gr__op_Scan, &prm, sizeof prm, pos, ins, sp->n_out + 1, results);
    if (st != GR_OK) for (i = 0; i <= sp->n_out; i++) results[i] = NULL;
done:
    if (b.d && --b.d->head.refs == 0) b.d->head.destroy(&b.d->head);   /* the node's graph holds it now */
    gr__vset_free(&b.vals);
    GR_FREE(b.in); GR_FREE(b.out); GR_FREE(b.dep); GR_FREE(b.need); GR_FREE(b.map); GR_FREE(ins);
    return st;
}

/* ---- gr_scan: the user's loop ------------------------------------------------------------------------ */

static int gr__scan_bad_var(gr_graph *g, const char *name, const char *what, int i, gr_var *v, gr_status *st) {
    if (v->graph != g) { *st = gr__error(g, GR_ERR_VALUE, "gr_scan '%s': %s %d (%s) belongs to another graph", name, what, i, gr__d(v).s); return 1; }
    if (gr__is_marker(v)) { *st = gr__error(g, GR_ERR_TYPE, "gr_scan '%s': %s %d is a gradient marker, not a value", name, what, i); return 1; }
    return 0;
}

/* output j's taps and initial value: taps given with an initial value, negative, distinct; a
   mit-sot's initial value has the rows its taps read. Else the error is recorded on g (*st): 1 */
static int gr__scan_bad_out(gr_graph *g, const char *name, int j, const gr_scan_out *o, gr_status *st) {
    gr_var *x = o->initial;
    int t, u;
    if (o->n_taps < 0 || (o->n_taps > 0 && (!o->taps || !x))) {
        *st = gr__error(g, GR_ERR_VALUE, "gr_scan '%s': output %d has %d taps, taps %s and %s initial value", name, j, o->n_taps,
                        o->taps ? "given" : "NULL", x ? "an" : "no");
        return 1;
    }
    if (!x) return 0;
    if (gr__scan_bad_var(g, name, "initial value", j, x, st)) return 1;
    for (t = 0; t < o->n_taps; t++) {
        if (o->taps[t] >= 0) {
            *st = gr__error(g, GR_ERR_VALUE, "gr_scan '%s': output %d has the tap %d; a state's taps are negative", name, j, o->taps[t]);
            return 1;
        }
        for (u = 0; u < t; u++)
            if (o->taps[u] == o->taps[t]) {
                *st = gr__error(g, GR_ERR_VALUE, "gr_scan '%s': output %d has the tap %d twice", name, j, o->taps[t]);
                return 1;
            }
    }
    if (!(o->n_taps == 0 || (o->n_taps == 1 && o->taps[0] == -1))) {   /* a mit-sot: rows of initial values */
        int D = 0;
        for (t = 0; t < o->n_taps; t++) if (-o->taps[t] > D) D = -o->taps[t];
        if (x->ndim < 1) {
            *st = gr__error(g, GR_ERR_VALUE, "gr_scan '%s': output %d has taps down to %d, so its initial value needs %d rows; %s is 0-d",
                            name, j, -D, D, gr__d(x).s);
            return 1;
        }
        if (x->kind != GR__VK_SHARED && gr__vshape(x)[0] >= 0 && gr__vshape(x)[0] < D) {
            *st = gr__error(g, GR_ERR_SHAPE, "gr_scan '%s': output %d has taps down to %d, so its initial value needs %d rows; %s has %lld",
                            name, j, -D, D, gr__d(x).s, (long long)gr__vshape(x)[0]);
            return 1;
        }
    }
    return 0;
}

GR_API gr_status gr_scan(gr_scan_step step, void *user, int n_seq, const gr_scan_seq *seqs, int n_out, const gr_scan_out *outs,
                         int n_nonseq, gr_var *const *non_seqs, const gr_scan_opts *opts, gr_var **results) {
    gr_graph *g = NULL;
    const char *name = opts && opts->name ? opts->name : "scan";
    gr_var **seq = NULL, **init = NULL, **res = NULL;
    int *ntaps = NULL, *ontaps = NULL, i, j;
    const int **taps = NULL, **otaps = NULL;
    gr__scan_spec sp;
    gr_status st = GR_ERR_NOMEM;
    if (results) for (j = 0; j < n_out; j++) results[j] = NULL;
    /* the graph: the first non-NULL of the sequences, the initial values, the non-sequences, n_steps */
    for (i = 0; !g && seqs && i < n_seq; i++) if (seqs[i].x) g = seqs[i].x->graph;
    for (j = 0; !g && outs && j < n_out; j++) if (outs[j].initial) g = outs[j].initial->graph;
    for (i = 0; !g && non_seqs && i < n_nonseq; i++) if (non_seqs[i]) g = non_seqs[i]->graph;
    if (!g && opts && opts->n_steps) g = opts->n_steps->graph;
    if (!g) return GR_ERR_VALUE;
    if (!step) return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': step is NULL", name);
    if (!results) return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': results is NULL", name);
    if (n_seq < 0 || n_out < 0 || n_nonseq < 0)
        return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': %d sequences, %d outputs and %d non-sequences", name, n_seq, n_out, n_nonseq);
    if ((n_seq && !seqs) || (n_out && !outs) || (n_nonseq && !non_seqs))
        return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': %s is NULL", name, n_seq && !seqs ? "seqs" : n_out && !outs ? "outs" : "non_seqs");
    if (n_out == 0) return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': a loop needs at least one output", name);
    for (i = 0; i < n_seq; i++) {
        gr_var *x = seqs[i].x;
        if (!x) return g->status != GR_OK ? g->status : gr__error(g, GR_ERR_VALUE, "gr_scan '%s': sequence %d is NULL", name, i);
        if (gr__scan_bad_var(g, name, "sequence", i, x, &st)) return st;
        if (x->ndim < 1) return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': sequence %d (%s) is 0-d: there is no axis to iterate", name, i, gr__d(x).s);
        if (seqs[i].n_taps < 0 || (seqs[i].n_taps > 0 && !seqs[i].taps))
            return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': sequence %d has %d taps and taps %s", name, i, seqs[i].n_taps,
                             seqs[i].taps ? "given" : "NULL");
    }
    for (j = 0; j < n_out; j++) if (gr__scan_bad_out(g, name, j, &outs[j], &st)) return st;
    for (i = 0; i < n_nonseq; i++) {
        if (!non_seqs[i]) return g->status != GR_OK ? g->status : gr__error(g, GR_ERR_VALUE, "gr_scan '%s': non-sequence %d is NULL", name, i);
        if (gr__scan_bad_var(g, name, "non-sequence", i, non_seqs[i], &st)) return st;
    }
    if (opts && opts->n_steps) {
        gr_var *n = opts->n_steps;
        if (n->graph != g) return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': n_steps (%s) belongs to another graph", name, gr__d(n).s);
        if (gr__is_marker(n) || n->ndim != 0 || n->dtype != GR_I64)
            return gr__error(g, GR_ERR_TYPE, "gr_scan '%s': n_steps must be a 0-d int64, not %s", name, gr__d(n).s);
    } else if (n_seq == 0)
        return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': without sequences the loop needs n_steps", name);
    if (opts && (opts->truncate_gradient < 0 || opts->checkpoints < 0))
        return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': truncate_gradient and checkpoints are counts (0: off), given %lld and %lld", name,
                         (long long)opts->truncate_gradient, (long long)opts->checkpoints);
    seq = (gr_var **)gr__calloc((size_t)n_seq + 1, sizeof(gr_var *));
    ntaps = (int *)gr__calloc((size_t)(n_seq + n_out) + 1, sizeof(int));
    taps = (const int **)gr__calloc((size_t)(n_seq + n_out) + 1, sizeof(int *));
    init = (gr_var **)gr__calloc((size_t)n_out + 1, sizeof(gr_var *));
    res = (gr_var **)gr__calloc((size_t)n_out + 2, sizeof(gr_var *));
    if (!seq || !ntaps || !taps || !init || !res) { st = gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory", name); goto done; }
    ontaps = ntaps + n_seq;
    otaps = taps + n_seq;
    for (i = 0; i < n_seq; i++) { seq[i] = seqs[i].x; ntaps[i] = seqs[i].n_taps; taps[i] = seqs[i].taps; }
    for (j = 0; j < n_out; j++) { init[j] = outs[j].initial; ontaps[j] = outs[j].n_taps; otaps[j] = outs[j].taps; }
    memset(&sp, 0, sizeof sp);
    sp.n_seq = n_seq; sp.seq = seq; sp.seq_ntaps = ntaps; sp.seq_taps = taps;
    sp.n_out = n_out; sp.init = init; sp.out_ntaps = ontaps; sp.out_taps = otaps;
    sp.n_val = n_nonseq; sp.val = non_seqs;
    sp.n_steps = opts ? opts->n_steps : NULL;
    sp.go_backwards = opts ? opts->go_backwards != 0 : 0;
    sp.truncate = opts ? opts->truncate_gradient : 0;
    sp.checkpoints = opts ? opts->checkpoints : 0;
    sp.name = name;
    sp.step = step;
    sp.user = user;
    st = gr__scan_make(g, &sp, res);
    if (st == GR_OK) for (j = 0; j < n_out; j++) results[j] = res[j];
done:
    GR_FREE(seq); GR_FREE(ntaps); GR_FREE(taps); GR_FREE(init); GR_FREE(res);
    return st;
}

/* ---- type ---------------------------------------------------------------------------------------------- */

/* the steps the loop runs, when known at build time: -1 otherwise */
static int64_t gr__scan_static_steps(const gr_node *node) {
    const gr__scan_def *d = gr__sdef(node);
    int64_t L = -1;
    int i;
    if (d->has_until) return -1;
    if (d->has_n_steps) {
        const gr_var *n = gr__in(node)[0];
        return n->kind == GR__VK_CONST ? (int64_t)gr__load(GR_I64, ((const gr_array *)gr__ext(n))->data, 0) : -1;
    }
    for (i = 0; i < d->n_seq; i++) {
        const gr_var *x = gr__in(node)[gr__scan_i_seq(d) + i];
        int64_t len = x->kind == GR__VK_SHARED ? -1 : gr__vshape(x)[0];
        if (len < 0 || d->seq_off[i] >= 0) return -1;
        len -= d->seq_M[i] - d->seq_m[i];
        if (len < 0) len = 0;
        if (L < 0 || len < L) L = len;
    }
    return L;
}

static gr_status gr__Scan_infer(const gr_node *node, gr_type *out) {
    const gr__scan_def *d = gr__sdef(node);
    int64_t L = gr__scan_static_steps(node);
    int j, i;
    for (j = 0; j < d->n_out; j++) {
        const gr_var *b = d->bout[j];
        int lead = gr__scan_last(node, j) ? 0 : 1;
        if (b->ndim + lead > GR_MAX_NDIM)
            return gr__error(node->graph, GR_ERR_VALUE, "gr_scan '%s': output %d would have more than %d dimensions", d->name, j, GR_MAX_NDIM);
        out[j].dtype = (gr_dtype)b->dtype;
        out[j].ndim = b->ndim + lead;
        if (lead) out[j].shape[0] = L >= 0 && gr__scan_front(node, j) ? L + 1 : L;
        for (i = 0; i < b->ndim; i++) out[j].shape[i + lead] = gr__vshape(b)[i];
    }
    out[d->n_out].dtype = GR_I64;
    out[d->n_out].ndim = 0;
    return GR_OK;
}

/* never asked: a loop's shapes are known once it has run (GR__OPF_DYNSHAPE) */
static gr_status gr__Scan_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)in; (void)out;
    return gr_node_error(node, GR_ERR_VALUE, "a loop's shapes are known only by running it");
}

/* ---- running -------------------------------------------------------------------------------------------- */

typedef struct gr__scan_rows { void *data; size_t cap; } gr__scan_rows;
/* The replay of a checkpointed gradient's loop: the forward states' windows (each state's last D
   rows) at the steps the backward loop needs, in decreasing order, recomputed from at most
   `checkpoints` stored windows by binomial checkpointing (Griewank and Walther, "Algorithm 799:
   revolve", ACM TOMS 26, 2000): to reverse steps [a, b) holding the window at a and s free slots,
   with r the least repetition count such that C(s + r, s) >= b - a, advance to m = a + max(1,
   b - a - C(s - 1 + r, s - 1)), keep the window at m in a slot, reverse [m, b) with s - 1 slots,
   free it, then reverse [a, m) with s. An explicit stack: no recursion over steps. */
typedef struct gr__rframe { int64_t a, b; int s, slot, owns; } gr__rframe;
typedef struct gr__replay {
    gr_fn *body;                         /* the forward loop's body, compiled as the forward loop's */
    int64_t *spec;                       /* its input shapes (see gr__scan_rt) */
    gr_array *bin;
    const gr_array **bin_ptr, **bout;
    int n_slots;                         /* checkpoints */
    unsigned char *mem;                  /* n_slots + 2 windows: the slots, the start's, the one advanced */
    size_t wbytes, *s_off, *s_row;       /* a window's bytes; per forward state: its rows' place and size */
    int *slot_free;                      /* stack of free slots */
    int n_free;
    size_t memcap;
    gr__rframe *stack;
    int sp;
} gr__replay;

struct gr__scan_rt {
    gr_fn *body;
    gr_fn *body2;                        /* a second instance, when steps alternate between the two: an
                                            output keeping its final value only is then passed from one
                                            step to the next without a copy (gr__scan_pingpong) */
    const gr_array **bout2;
    int level;                           /* the enclosing function's optimisation level */
    int64_t *spec;                       /* the body's input shapes it was compiled for (n_bin x (1 + GR_MAX_NDIM)) */
    gr__replay *rp;                      /* a checkpointed gradient's loop: its forward replay */
    gr_array *bin;                       /* the body's inputs for a step: views into rows, or the values */
    const gr_array **bin_ptr;
    const gr_array **bout;               /* the body's results of a step */
    gr__scan_rows *res;                  /* per output: its rows (a LAST output's: D rows, a ring) */
    int64_t *rows;                       /* per output: rows res holds room for */
    int64_t steps;                       /* the steps of the last call: the steps output's value */
};

/* output j goes from step to step without a copy: only its final value is kept, and it is a plain
   state or has no state (a window of several rows is a ring, copied into) */
static int gr__scan_pingpong(const gr_node *node, int j) {
    const gr__scan_def *d = gr__sdef(node);
    return gr__scan_last(node, j) && (d->out_state[j] < 0 || d->st_D[d->out_state[j]] == 1);
}

static gr_status gr__Scan_runtime(gr_node *node, int level) {
    gr__scan_params *p = (gr__scan_params *)gr__params(node);
    gr__scan_def *d = p->def;
    gr__scan_rt *rt = (gr__scan_rt *)gr__calloc(1, sizeof(gr__scan_rt));
    gr_fn_opts fo;
    int i;
    if (!rt) return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
    p->rt = rt;
    memset(&fo, 0, sizeof fo);
    fo.optimize = (gr_optimize)level;
    rt->bin = (gr_array *)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_array));
    rt->bin_ptr = (const gr_array **)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_array *));
    rt->bout = (const gr_array **)gr__calloc((size_t)d->n_bout + 1, sizeof(gr_array *));
    rt->bout2 = (const gr_array **)gr__calloc((size_t)d->n_bout + 1, sizeof(gr_array *));
    rt->res = (gr__scan_rows *)gr__calloc((size_t)d->n_out + 1, sizeof(gr__scan_rows));
    rt->rows = (int64_t *)gr__calloc((size_t)d->n_out + 1, sizeof(int64_t));
    if (!rt->bin || !rt->bin_ptr || !rt->bout || !rt->bout2 || !rt->res || !rt->rows)
        return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
    for (i = 0; i < d->n_bin; i++) rt->bin_ptr[i] = &rt->bin[i];
    rt->level = level;
    rt->spec = (int64_t *)gr__calloc((size_t)d->n_bin * (1 + GR_MAX_NDIM) + 1, sizeof(int64_t));
    if (!rt->spec) return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
    rt->body = gr_function(d->n_bin, d->bin, d->n_bout, d->bout, &fo);   /* (its errors show now; calls specialise it) */
    if (!rt->body) {
        gr_status st = gr__error(node->graph, d->ig->status != GR_OK ? d->ig->status : GR_ERR_NOMEM, "gr_scan '%s': compiling the body: %s",
                                 d->name, d->ig->message);
        gr_graph_clear_error(d->ig);
        return st;
    }
    if (d->replay) {                             /* the forward loop's body, for the replay */
        const gr__scan_def *f = d->replay;
        gr__replay *rp = (gr__replay *)gr__calloc(1, sizeof(gr__replay));
        if (!rp) return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
        rt->rp = rp;
        rp->n_slots = d->checkpoints > 0 && d->checkpoints < INT_MAX - 4 ? (int)d->checkpoints : 1;
        rp->bin = (gr_array *)gr__calloc((size_t)f->n_bin + 1, sizeof(gr_array));
        rp->bin_ptr = (const gr_array **)gr__calloc((size_t)f->n_bin + 1, sizeof(gr_array *));
        rp->bout = (const gr_array **)gr__calloc((size_t)f->n_bout + 1, sizeof(gr_array *));
        rp->s_off = (size_t *)gr__calloc(2u * (size_t)f->n_state + 1, sizeof(size_t));
        rp->slot_free = (int *)gr__calloc((size_t)rp->n_slots + 1, sizeof(int));
        if (!rp->bin || !rp->bin_ptr || !rp->bout || !rp->s_off || !rp->slot_free)
            return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
        rp->s_row = rp->s_off + f->n_state;
        for (i = 0; i < f->n_bin; i++) rp->bin_ptr[i] = &rp->bin[i];
        rp->spec = (int64_t *)gr__calloc((size_t)f->n_bin * (1 + GR_MAX_NDIM) + 1, sizeof(int64_t));
        if (!rp->spec) return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
        rp->body = gr_function(f->n_bin, f->bin, f->n_bout, f->bout, &fo);
        if (!rp->body) {
            gr_status st = gr__error(node->graph, f->ig->status != GR_OK ? f->ig->status : GR_ERR_NOMEM,
                                     "gr_scan '%s': compiling the forward body: %s", d->name, f->ig->message);
            gr_graph_clear_error(f->ig);
            return st;
        }
    }
    return GR_OK;
}
static void gr__Scan_release(gr_node *node) {
    gr__scan_params *p = (gr__scan_params *)gr__params(node);
    gr__scan_rt *rt = p->rt;
    int j;
    if (!rt) return;
    gr_fn_free(rt->body);
    gr_fn_free(rt->body2);
    GR_FREE(rt->bout2);
    GR_FREE(rt->spec);
    if (rt->rp) {
        gr_fn_free(rt->rp->body);
        GR_FREE(rt->rp->spec);
        GR_FREE(rt->rp->bin); GR_FREE(rt->rp->bin_ptr); GR_FREE(rt->rp->bout); GR_FREE(rt->rp->s_off);
        GR_FREE(rt->rp->slot_free); GR_FREE(rt->rp->mem); GR_FREE(rt->rp->stack);
        GR_FREE(rt->rp);
    }
    for (j = 0; rt->res && j < p->def->n_out; j++) GR_FREE(rt->res[j].data);
    GR_FREE(rt->bin); GR_FREE(rt->bin_ptr); GR_FREE(rt->bout); GR_FREE(rt->res); GR_FREE(rt->rows);
    GR_FREE(rt);
    p->rt = NULL;
}

/* a (ndim - 1)-d view of row r of x */
static void gr__row_view(gr_array *v, const gr_array *x, int64_t r) {
    int i;
    memset(v, 0, sizeof *v);
    v->dtype = x->dtype;
    v->ndim = x->ndim - 1;
    v->size = 1;
    for (i = 1; i < x->ndim; i++) { v->shape[i - 1] = x->shape[i]; v->size *= x->shape[i]; }
    v->data = (char *)x->data + (size_t)r * (size_t)v->size * gr__dsize(x->dtype);
}

/* *body compiled for this call's input shapes (bin: the body's inputs of a step): when they differ from
   those it was compiled for (spec), the body is copied with them as static shapes (its nodes typed
   again) and compiled, so that the rewrites know every size: a ReduceLike to the same shape goes, the
   recomputation nothing reads then goes, fusion sees equal shapes. The first call, and a call with
   other shapes, compile; a steady-state call compares the shapes only. */
static gr_status gr__scan_specialise(const gr_node *node, const gr__scan_def *d, const gr_array *bin, int level, gr_fn **body,
                                     gr_fn **body2, int64_t *spec) {
    gr_graph *cg = NULL;
    gr_var **map = NULL, **cin = NULL, **cout = NULL;
    int i, same = spec[0] != 0;
    gr_fn_opts fo;
    gr_fn *f;
    gr_status st = GR_ERR_NOMEM;
    for (i = 0; same && i < d->n_bin; i++) {
        const int64_t *e = spec + 1 + (size_t)i * (1 + GR_MAX_NDIM);
        same = e[0] == bin[i].ndim && memcmp(e + 1, bin[i].shape, sizeof(int64_t) * (size_t)bin[i].ndim) == 0;
    }
    if (same) return GR_OK;
    cg = gr_graph_new();
    map = (gr_var **)gr__calloc((size_t)d->ig->n_vars + 1, sizeof(gr_var *));
    cin = (gr_var **)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_var *));
    cout = (gr_var **)gr__calloc((size_t)d->n_bout + 1, sizeof(gr_var *));
    if (!cg || !map || !cin || !cout) goto nomem;
    for (i = 0; i < d->n_bin; i++)
        if (!(cin[i] = map[d->bin[i]->id] = gr__new_var(cg, d->bin[i]->dtype, bin[i].ndim, bin[i].shape, GR__VK_INPUT))) goto failed;
    if (gr__scan_clone(d, cg, map, cout) != GR_OK) goto failed;
    memset(&fo, 0, sizeof fo);
    fo.optimize = (gr_optimize)level;
    if (!(f = gr_function(d->n_bin, cin, d->n_bout, cout, &fo))) goto failed;
    gr_fn_free(*body);
    *body = f;
    if (body2) {                                  /* the same program again: identical results */
        if (!(f = gr_function(d->n_bin, cin, d->n_bout, cout, &fo))) goto failed;
        gr_fn_free(*body2);
        *body2 = f;
    }
    for (i = 0; i < d->n_bin; i++) {
        int64_t *e = spec + 1 + (size_t)i * (1 + GR_MAX_NDIM);
        e[0] = bin[i].ndim;
        memcpy(e + 1, bin[i].shape, sizeof(int64_t) * (size_t)bin[i].ndim);
    }
    spec[0] = 1;
    st = GR_OK;
    goto done;
failed:
    st = gr__error(node->graph, cg && cg->status != GR_OK ? cg->status : GR_ERR_NOMEM, "gr_scan '%s': the body for these shapes: %s",
                   d->name, cg && cg->message[0] ? cg->message : "out of memory");
    goto done;
nomem:
    st = gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
done:
    GR_FREE(map); GR_FREE(cin); GR_FREE(cout);
    gr_graph_free(cg);
    return st;
}

/* room for `rows` rows of `bytes` each in output j's buffer, its rows kept; 0 when out of memory */
static int gr__scan_room(gr__scan_rt *rt, int j, int64_t rows, size_t bytes) {
    size_t need = (size_t)rows * bytes;
    if (need <= rt->res[j].cap) return 1;
    {
        size_t cap = rt->res[j].cap ? 2 * rt->res[j].cap : 64;
        void *p;
        while (cap < need) cap *= 2;
        p = GR_REALLOC(rt->res[j].data, cap);
        if (!p) return 0;
        rt->res[j].data = p;
        rt->res[j].cap = cap;
    }
    return 1;
}

/* C(s + r, s), saturated far above any number of steps */
static int64_t gr__binom(int64_t s, int64_t r) {
    int64_t k, lo = s < r ? s : r, v = 1;
    for (k = 1; k <= lo; k++) {              /* v = C(s + r - lo + k, k), exactly */
        int64_t top = s + r - lo + k;
        if (v > ((int64_t)1 << 52) / top) return (int64_t)1 << 52;
        v = v * top / k;
    }
    return v;
}

/* rp's window w: the slots, then the start's (n_slots), then the one advanced (n_slots + 1) */
static unsigned char *gr__replay_w(const gr__replay *rp, int w) { return rp->mem + (size_t)w * rp->wbytes; }

/* window dst := the forward loop's window at step t, from window src at step a (a <= t): the forward
   body run over steps a .. t-1. in: the gradient loop's inputs; off: its sequences' offsets */
static gr_status gr__replay_advance(const gr_node *node, gr__replay *rp, const gr_array *const *in, const int64_t *off, int64_t lm1,
                                    int src, int dst, int64_t a, int64_t t) {
    const gr__scan_def *d = gr__sdef(node), *f = d->replay;
    unsigned char *w = gr__replay_w(rp, dst);
    int64_t u;
    int i, k, s, pos;
    gr_status st;
    if (src != dst) memcpy(w, gr__replay_w(rp, src), rp->wbytes);
    for (u = a; u < t; u++) {
        for (i = 0, pos = 0; i < f->n_seq; i++) {     /* forward sequence i is this loop's replay_seq0 + i */
            int bi = d->replay_seq0 + i;
            int64_t off_f = off[bi] + (int64_t)d->seq_dir[bi] * lm1, dir_f = -d->seq_dir[bi];
            for (k = 0; k < f->seq_ntaps[i]; k++)
                gr__row_view(&rp->bin[pos++], in[gr__scan_i_seq(d) + bi], off_f + dir_f * u + f->taps[f->seq_at[i] + k] - f->seq_m[i]);
        }
        for (s = 0; s < f->n_state; s++) {
            const gr_array *x0 = in[gr__scan_i_val(d) + d->replay_init0 + s];
            int sit = f->st_ntaps[s] == 1 && f->taps[f->st_at[s]] == -1;
            for (k = 0; k < f->st_ntaps[s]; k++) {
                gr_array *v = &rp->bin[pos++];
                *v = *x0;
                if (!sit) gr__row_view(v, x0, 0);
                v->data = w + rp->s_off[s] + (size_t)(f->st_D[s] + f->taps[f->st_at[s] + k]) * rp->s_row[s];
            }
        }
        for (i = 0; i < f->n_val; i++) rp->bin[pos++] = *in[gr__scan_i_val(d) + i];
        if ((st = gr__scan_specialise(node, f, rp->bin, gr__scan_rt_of(node)->level, &rp->body, NULL, rp->spec)) != GR_OK) return st;
        if ((st = gr_call(rp->body, rp->bin_ptr, rp->bout)) != GR_OK) {
            const char *msg = gr_fn_message(rp->body);
            return gr__error(node->graph, st, "gr_scan '%s', recomputing step %lld: %s", d->name, (long long)u,
                             strncmp(msg, "gr_call: ", 9) == 0 ? msg + 9 : msg);
        }
        for (s = 0; s < f->n_state; s++) {           /* the window moves one row */
            const gr_array *y = rp->bout[f->st_out[s]];
            unsigned char *rows = w + rp->s_off[s];
            if ((size_t)y->size * gr__dsize(y->dtype) != rp->s_row[s])
                return gr__error(node->graph, GR_ERR_SHAPE, "gr_scan '%s', recomputing step %lld: a state changed its shape", d->name, (long long)u);
            if (f->st_D[s] > 1) memmove(rows, rows + rp->s_row[s], (size_t)(f->st_D[s] - 1) * rp->s_row[s]);
            if (rp->s_row[s]) memcpy(rows + (size_t)(f->st_D[s] - 1) * rp->s_row[s], y->data, rp->s_row[s]);
        }
    }
    return GR_OK;
}

/* the window of the next forward step the gradient's loop needs (decreasing steps), in *win */
static gr_status gr__replay_next(const gr_node *node, gr__replay *rp, const gr_array *const *in, const int64_t *off, int64_t lm1,
                                 int64_t want, const unsigned char **win) {
    const gr__scan_def *d = gr__sdef(node);
    gr_status st;
    while (rp->sp > 0) {
        gr__rframe *fr = &rp->stack[rp->sp - 1];
        int64_t n = fr->b - fr->a;
        if (n == 1) {
            if (fr->a != want) break;
            *win = gr__replay_w(rp, fr->slot);
            if (fr->owns) rp->slot_free[rp->n_free++] = fr->slot;   /* read before the next advance */
            rp->sp--;
            return GR_OK;
        }
        if (fr->s == 0 || rp->n_free == 0) {         /* no slot left (not reached by the schedule): recompute */
            if ((st = gr__replay_advance(node, rp, in, off, lm1, fr->slot, rp->n_slots + 1, fr->a, fr->b - 1)) != GR_OK) return st;
            if (fr->b - 1 != want) break;
            *win = gr__replay_w(rp, rp->n_slots + 1);
            fr->b--;
            return GR_OK;
        }
        {
            int64_t r = 0, m;
            int slot = rp->slot_free[--rp->n_free];
            while (gr__binom(fr->s, r) < n) r++;
            m = n - gr__binom(fr->s - 1, r);
            m = fr->a + (m < 1 ? 1 : m);
            if ((st = gr__replay_advance(node, rp, in, off, lm1, fr->slot, slot, fr->a, m)) != GR_OK) return st;
            rp->stack[rp->sp].a = m;                 /* the right part first: later steps come first */
            rp->stack[rp->sp].b = fr->b;
            rp->stack[rp->sp].s = fr->s - 1;
            rp->stack[rp->sp].slot = slot;
            rp->stack[rp->sp].owns = 1;
            fr->b = m;
            rp->sp++;
        }
    }
    return gr__error(node->graph, GR_ERR_VALUE, "gr_scan '%s': the replay lost step %lld (internal)", d->name, (long long)want);
}

/* the replay ready to give the windows of steps L-1 down to start: the forward windows' layout, the
   window at `start` (from the initial values), the schedule's root */
static gr_status gr__replay_begin(const gr_node *node, gr__replay *rp, const gr_array *const *in, const int64_t *off, int64_t lm1,
                                  int64_t start) {
    const gr__scan_def *d = gr__sdef(node), *f = d->replay;
    unsigned char *w0;
    size_t total = 0, need;
    int s, i;
    for (s = 0; s < f->n_state; s++) {
        const gr_array *x0 = in[gr__scan_i_val(d) + d->replay_init0 + s];
        int sit = f->st_ntaps[s] == 1 && f->taps[f->st_at[s]] == -1;
        rp->s_row[s] = (size_t)(sit ? x0->size : (x0->shape[0] ? x0->size / x0->shape[0] : 0)) * gr__dsize(x0->dtype);
        rp->s_off[s] = total;
        total += ((size_t)f->st_D[s] * rp->s_row[s] + 15u) & ~(size_t)15u;
    }
    rp->wbytes = total ? total : 16;
    need = (size_t)(rp->n_slots + 2) * rp->wbytes;
    if (!rp->mem || need > rp->memcap) {                 /* made again only when a window grew */
        GR_FREE(rp->mem);
        rp->mem = (unsigned char *)GR_MALLOC(need);
        rp->memcap = rp->mem ? need : 0;
        if (!rp->mem) return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory (checkpoints)", d->name);
    }
    if (!rp->stack) {
        rp->stack = (gr__rframe *)GR_MALLOC(sizeof(gr__rframe) * (size_t)(rp->n_slots + 2));
        if (!rp->stack) return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory (checkpoints)", d->name);
    }
    w0 = gr__replay_w(rp, rp->n_slots + 1);              /* the initial window, then the start's */
    for (s = 0; s < f->n_state; s++) {
        const gr_array *x0 = in[gr__scan_i_val(d) + d->replay_init0 + s];
        if (rp->s_row[s]) memcpy(w0 + rp->s_off[s], x0->data, (size_t)f->st_D[s] * rp->s_row[s]);
    }
    for (i = 0; i < rp->n_slots; i++) rp->slot_free[i] = rp->n_slots - 1 - i;
    rp->n_free = rp->n_slots;
    rp->sp = 0;
    if (start > lm1 + 1) return GR_OK;                    /* no step: nothing to give */
    {
        gr_status st = gr__replay_advance(node, rp, in, off, lm1, rp->n_slots + 1, rp->n_slots, 0, start);
        if (st != GR_OK) return st;
    }
    rp->stack[0].a = start;
    rp->stack[0].b = lm1 + 1;
    rp->stack[0].s = rp->n_slots;
    rp->stack[0].slot = rp->n_slots;
    rp->stack[0].owns = 0;
    rp->sp = lm1 + 1 > start ? 1 : 0;
    return GR_OK;
}

/* What one run of a loop works on (gr__Scan_perform): the node, its loop and runtime state, the
   node's arrays; the steps to run (L) and run; a checkpointed gradient's last forward step (lm1, or
   -1); per sequence its offset; per output the bytes of its rows and whether it goes from step to
   step without a copy (pp; any_pp: one does). */
typedef struct gr__scan_call {
    const gr_node *node;
    const gr__scan_def *d;
    gr__scan_rt *rt;
    const gr_array *const *in;
    gr_array *const *out;
    int64_t L, run, lm1, *off;
    size_t *rowb;
    unsigned char *pp;
    int any_pp;
} gr__scan_call;

/* the number of steps (c->L) and each sequence's offset (c->off), which allows the steps whose rows
   off + dir t + k - m stay in [0, len); a mit-sot's initial rows checked */
static gr_status gr__scan_steps(gr__scan_call *c) {
    const gr__scan_def *d = c->d;
    const gr_array *const *in = c->in;
    gr_graph *g = c->node->graph;
    int64_t L = -1, *off = c->off;
    int i, s, i_seq = gr__scan_i_seq(d), i_init = gr__scan_i_init(d);
    if (d->has_n_steps) {
        L = (int64_t)gr__load(GR_I64, in[0]->data, 0);
        if (L < 0) return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': n_steps is %lld; it must not be negative", d->name, (long long)L);
    }
    for (i = 0; i < d->n_seq; i++) {
        const gr_array *x = in[i_seq + i];
        int64_t span = d->seq_M[i] - d->seq_m[i], allows;
        off[i] = d->seq_off[i] >= 0 ? (int64_t)gr__load(GR_I64, in[gr__scan_i_off(d) + d->seq_off[i]]->data, 0)
               : d->seq_dir[i] > 0 ? 0 : x->shape[0] - span - 1;
        if (d->replay && d->seq_replay[i] >= 0) continue;   /* recomputed, not read from x */
        if (d->seq_dir[i] > 0) allows = off[i] < 0 ? -1 : x->shape[0] - span - off[i];
        else allows = off[i] + span > x->shape[0] - 1 ? -1 : off[i] + 1;
        if (allows < 0 || (d->has_n_steps && allows < L))
            return gr__error(g, GR_ERR_SHAPE, "gr_scan '%s': sequence %d has %lld rows; %lld steps with its taps need %lld", d->name, i,
                             (long long)x->shape[0], (long long)(d->has_n_steps ? L : 0),
                             (long long)((d->has_n_steps ? L : 0) + span));
        if (!d->has_n_steps && (L < 0 || allows < L)) L = allows;
    }
    for (s = 0; s < d->n_state; s++) {
        const gr_array *x0 = in[i_init + s];
        if (d->taps[d->st_at[s]] != -1 || d->st_ntaps[s] != 1) {        /* a mit-sot: D rows of initial values */
            if (x0->shape[0] < d->st_D[s])
                return gr__error(g, GR_ERR_SHAPE, "gr_scan '%s': output %d has taps down to %d, so its initial value needs %d rows; it has %lld",
                                 d->name, d->st_out[s], -d->st_D[s], d->st_D[s], (long long)x0->shape[0]);
        }
    }
    c->L = L;
    return GR_OK;
}

/* the rows of the outputs with a state: their state's shape, room for the first (row 0: the initial
   value, when kept in front); 0 when out of memory */
static int gr__scan_state_rows(gr__scan_call *c) {
    const gr__scan_def *d = c->d;
    const gr_node *node = c->node;
    size_t *rowb = c->rowb;
    int j, s;
    for (j = 0; j < d->n_out; j++) {
        rowb[j] = 0;
        s = d->out_state[j];
        if (s >= 0) {
            const gr_array *x0 = c->in[gr__scan_i_init(d) + s];
            gr_array *o = c->out[j];
            int sit = d->st_ntaps[s] == 1 && d->taps[d->st_at[s]] == -1, a;
            size_t n = 1;
            for (a = sit ? 0 : 1; a < x0->ndim; a++) n *= (size_t)x0->shape[a];
            rowb[j] = n * gr__dsize(x0->dtype);
            o->ndim = d->bout[j]->ndim + (gr__scan_last(node, j) ? 0 : 1);
            for (a = sit ? 0 : 1; a < x0->ndim; a++) o->shape[a - (sit ? 0 : 1) + (gr__scan_last(node, j) ? 0 : 1)] = x0->shape[a];
            if (!gr__scan_room(c->rt, j, gr__scan_last(node, j) ? d->st_D[s] : 1 + gr__scan_front(node, j), rowb[j] ? rowb[j] : 1)) return 0;
            if (gr__scan_front(node, j) && rowb[j]) memcpy(c->rt->res[j].data, x0->data, rowb[j]);   /* row 0: the initial value */
        }
    }
    return 1;
}

/* the body's inputs at step t: the sequences' rows (a replayed forward state's from win), the
   states' taps (the initial value's rows, the other instance's output, or the rows kept), the values */
static void gr__scan_bind(gr__scan_call *c, int64_t t, const unsigned char *win) {
    const gr__scan_def *d = c->d;
    const gr_node *node = c->node;
    const gr_array *const *in = c->in;
    gr__scan_rt *rt = c->rt;
    int i, j, s, k, pos, i_seq = gr__scan_i_seq(d), i_init = gr__scan_i_init(d), i_val = gr__scan_i_val(d);
    for (i = 0, pos = 0; i < d->n_seq; i++)
        for (k = 0; k < d->seq_ntaps[i]; k++) {
            gr_array *v = &rt->bin[pos++];
            if (win && d->seq_replay[i] >= 0) {      /* a forward state's row, from the replayed window */
                int fs = d->seq_replay[i];
                gr__row_view(v, in[i_seq + i], 0);
                v->data = (unsigned char *)(uintptr_t)win + rt->rp->s_off[fs] +
                          (size_t)(d->replay->st_D[fs] + d->taps[d->seq_at[i] + k]) * rt->rp->s_row[fs];
            } else
                gr__row_view(v, in[i_seq + i], c->off[i] + d->seq_dir[i] * t + d->taps[d->seq_at[i] + k] - d->seq_m[i]);
        }
    for (s = 0; s < d->n_state; s++) {
        const gr_array *x0 = in[i_init + s];
        int sit = d->st_ntaps[s] == 1 && d->taps[d->st_at[s]] == -1, D = d->st_D[s];
        j = d->st_out[s];
        for (k = 0; k < d->st_ntaps[s]; k++) {
            int64_t r = t + d->taps[d->st_at[s] + k];
            gr_array *v = &rt->bin[pos++];
            if (r < 0) {
                if (sit) *v = *x0;
                else gr__row_view(v, x0, r + D);
            } else if (c->pp[j]) {               /* the other instance's output of the step before */
                *v = *x0;
                v->data = (t & 1 ? rt->bout : rt->bout2)[j]->data;
            } else {
                int64_t slot = gr__scan_last(node, j) ? r % D : r + gr__scan_front(node, j);
                *v = *x0;                     /* dtype; the state's row shape */
                if (!sit) gr__row_view(v, x0, 0);
                v->data = (char *)rt->res[j].data + (size_t)slot * c->rowb[j];
            }
        }
    }
    for (i = 0; i < d->n_val; i++) rt->bin[pos++] = *in[i_val + i];
}

/* the outputs of step t kept: each checked against the shape of its rows (an output without a
   state takes the first step's), then copied to its row (a ping-pong output: at the last step only) */
static gr_status gr__scan_keep(gr__scan_call *c, int64_t t) {
    const gr__scan_def *d = c->d;
    const gr_node *node = c->node;
    gr__scan_rt *rt = c->rt;
    gr_array *const *out = c->out;
    size_t *rowb = c->rowb;
    int j, s;
    for (j = 0; j < d->n_out; j++) {
        const gr_array *b = (c->any_pp && (t & 1) ? rt->bout2 : rt->bout)[j];
        size_t bytes = (size_t)b->size * gr__dsize(b->dtype);
        int64_t slot = t + gr__scan_front(node, j);
        s = d->out_state[j];
        if (t == 0 && s < 0) {                /* an output without state: its rows take the first step's shape */
            int a;
            rowb[j] = bytes;
            out[j]->ndim = b->ndim + (gr__scan_last(node, j) ? 0 : 1);
            for (a = 0; a < b->ndim; a++) out[j]->shape[a + (gr__scan_last(node, j) ? 0 : 1)] = b->shape[a];
        }
        {
            int a, lead = gr__scan_last(node, j) ? 0 : 1, same = b->ndim + lead == out[j]->ndim;
            for (a = 0; same && a < b->ndim; a++) same = b->shape[a] == out[j]->shape[a + lead];
            if (!same)
                return gr__error(node->graph, GR_ERR_SHAPE, "gr_scan '%s', step %lld: output %d has the shape %s; %s", d->name, (long long)t, j,
                                 gr__as(b).s, s >= 0 ? "its state has another" : "the first step's was another");
        }
        if (c->pp[j] && !(t + 1 == c->L)) continue;   /* read from the instance's output: copied at the end only */
        if (gr__scan_last(node, j)) slot = s >= 0 ? t % d->st_D[s] : 0;
        if (!gr__scan_room(rt, j, slot + 1, rowb[j] ? rowb[j] : 1))
            return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
        if (bytes) memcpy((char *)rt->res[j].data + (size_t)slot * rowb[j], b->data, bytes);
    }
    return GR_OK;
}

/* the outputs, once the steps ran: their shapes, and their data in the rows kept (a LAST output's
   final row; with no step, the initial value's last tap) */
static gr_status gr__scan_give(gr__scan_call *c) {
    const gr__scan_def *d = c->d;
    const gr_node *node = c->node;
    gr__scan_rt *rt = c->rt;
    gr_graph *g = node->graph;
    int64_t run = c->run;
    size_t *rowb = c->rowb;
    int j, s;
    for (j = 0; j < d->n_out; j++) {
        gr_array *o = c->out[j];
        int a;
        if (run == 0 && d->out_state[j] < 0) {   /* no step ran: the body's shape at step 0, from its static shape */
            const gr_var *b = d->bout[j];
            o->ndim = b->ndim + (gr__scan_last(node, j) ? 0 : 1);
            for (a = 0; a < b->ndim; a++) o->shape[a + (gr__scan_last(node, j) ? 0 : 1)] = gr__vshape(b)[a] > 0 ? gr__vshape(b)[a] : 0;
        }
        if (!gr__scan_last(node, j)) o->shape[0] = run + gr__scan_front(node, j);
        o->size = 1;
        for (a = 0; a < o->ndim; a++) o->size *= o->shape[a];
        if (!gr__scan_room(rt, j, 1, 1)) return gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
        if (run == 0 && !d->out_last[j] && gr__scan_last(node, j))   /* read at row -1, which 0 steps do not have */
            return gr__error(g, GR_ERR_RUNTIME, "gr_scan '%s': output %d is read at its last row, and no step ran", d->name, j);
        if (gr__scan_last(node, j)) {
            s = d->out_state[j];
            if (run == 0 && s >= 0) {             /* the state before any step: the initial's last tap */
                const gr_array *x0 = c->in[gr__scan_i_init(d) + s];
                int sit = d->st_ntaps[s] == 1 && d->taps[d->st_at[s]] == -1;
                if (!gr__scan_room(rt, j, d->st_D[s], rowb[j] ? rowb[j] : 1)) return gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
                memcpy(rt->res[j].data, (const char *)x0->data + (sit ? 0 : (size_t)(d->st_D[s] - 1) * rowb[j]), rowb[j]);
                o->data = rt->res[j].data;
            } else
                o->data = (char *)rt->res[j].data + (size_t)(s >= 0 ? (run - 1) % d->st_D[s] : 0) * rowb[j];
        } else
            o->data = rt->res[j].data;
    }
    rt->steps = run;
    c->out[d->n_out]->size = 1;
    c->out[d->n_out]->data = &rt->steps;
    return GR_OK;
}

static gr_status gr__Scan_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__scan_params *p = (const gr__scan_params *)gr__params(node);
    const gr__scan_def *d = p->def;
    gr__scan_rt *rt = p->rt;
    gr_graph *g = node->graph;
    gr__scan_call c;
    int64_t t, off_stack[16];
    unsigned char pp_stack[16];
    size_t rowb_stack[16];
    int i, j, done = 0;
    gr_status st = GR_OK;
    if (!rt) return gr_node_error(node, GR_ERR_VALUE, "'%s' is run outside the function that compiled it", d->name);
    memset(&c, 0, sizeof c);
    c.node = node; c.d = d; c.rt = rt; c.in = in; c.out = out;
    c.L = -1; c.lm1 = -1;
    c.off = d->n_seq <= 16 ? off_stack : (int64_t *)GR_MALLOC(sizeof(int64_t) * (size_t)d->n_seq);
    c.rowb = d->n_out <= 16 ? rowb_stack : (size_t *)GR_MALLOC(sizeof(size_t) * (size_t)d->n_out);
    if (!c.off || !c.rowb) goto nomem;
    if ((st = gr__scan_steps(&c)) != GR_OK) goto out;
    if (!gr__scan_state_rows(&c)) goto nomem;
    /* a checkpointed gradient's loop: the forward windows of steps lm1 down to lm1 + 1 - L */
    if (rt->rp) {
        for (i = 0; i < d->n_seq && d->seq_replay[i] < 0; i++) {}
        c.lm1 = i < d->n_seq ? c.off[i] : -1;
        if (i < d->n_seq && (st = gr__replay_begin(node, rt->rp, in, c.off, c.lm1, c.lm1 + 1 - c.L)) != GR_OK) goto out;
    }
    c.pp = d->n_out <= 16 ? pp_stack : (unsigned char *)GR_MALLOC((size_t)d->n_out);
    if (!c.pp) goto nomem;
    for (j = 0; j < d->n_out; j++) { c.pp[j] = (unsigned char)gr__scan_pingpong(node, j); c.any_pp |= c.pp[j]; }
    /* the steps */
    for (t = 0; t < c.L && !done; t++) {
        const unsigned char *win = NULL;
        int odd = c.any_pp && (t & 1);           /* the step runs the second instance */
        if (rt->rp && c.lm1 >= 0 && (st = gr__replay_next(node, rt->rp, in, c.off, c.lm1, c.lm1 - t, &win)) != GR_OK) goto out;
        gr__scan_bind(&c, t, win);
        if (t == 0 && (st = gr__scan_specialise(node, d, rt->bin, rt->level, &rt->body, c.any_pp ? &rt->body2 : NULL, rt->spec)) != GR_OK)
            goto out;
        if ((st = gr_call(odd ? rt->body2 : rt->body, rt->bin_ptr, odd ? rt->bout2 : rt->bout)) != GR_OK) {
            const char *msg = gr_fn_message(odd ? rt->body2 : rt->body);
            st = gr__error(g, st, "gr_scan '%s', step %lld: %s", d->name, (long long)t, strncmp(msg, "gr_call: ", 9) == 0 ? msg + 9 : msg);
            goto out;
        }
        if ((st = gr__scan_keep(&c, t)) != GR_OK) goto out;
        c.run = t + 1;
        {
            const gr_array *cond = (odd ? rt->bout2 : rt->bout)[d->n_out];
            if (d->has_until && gr__load(cond->dtype, cond->data, 0) != 0) done = 1;
        }
        if (done && c.any_pp && t + 1 < c.L)              /* the last step: its ping-pong values kept now */
            for (j = 0; j < d->n_out; j++) {
                const gr_array *b = (t & 1 ? rt->bout2 : rt->bout)[j];
                if (!c.pp[j]) continue;
                if (!gr__scan_room(rt, j, 1, c.rowb[j] ? c.rowb[j] : 1)) goto nomem;
                if (b->size) memcpy(rt->res[j].data, b->data, (size_t)b->size * gr__dsize(b->dtype));
            }
    }
    st = gr__scan_give(&c);
    goto out;
nomem:
    st = gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
out:
    if (c.off && c.off != off_stack) GR_FREE(c.off);
    if (c.pp && c.pp != pp_stack) GR_FREE(c.pp);
    if (c.rowb && c.rowb != rowb_stack) GR_FREE(c.rowb);
    return st;
}

/* ---- Rows, ScanPlace, ScanGather: what the gradient's loop reads and writes ------------------------ */

/* Rows x: x.shape[0], an I64 0-d (the offsets of a gradient's loop are computed from it) */
static gr_var *gr__rows(gr_var *x) {
    gr_graph *g;
    if (!gr__operands("rows", 1, &x, &g)) return NULL;
    return gr__node1(g, &gr__op_Rows, NULL, 0, 1, &x);
}
static gr_status gr__Rows_infer(const gr_node *node, gr_type *out) {
    const gr_var *x = gr__in(node)[0];
    if (x->ndim < 1) return gr__error(node->graph, GR_ERR_VALUE, "Rows: %s is 0-d", gr__d(x).s);
    out->dtype = GR_I64;
    out->ndim = 0;
    return GR_OK;
}
static gr_status gr__Rows_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node; (void)in; (void)out;
    return GR_OK;
}
static gr_status gr__Rows_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    gr__store(GR_I64, out[0]->data, 0, (double)in[0]->shape[0]);
    return GR_OK;
}
static gr_status gr__Rows_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    (void)og;
    ig[0] = gr_disconnected_like(gr__in(node)[0]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Rows_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node; (void)ev;
    orop[0] = NULL;
    return GR_OK;
}

/* ScanPlace (r, like, off): zeros shaped like `like`, with row t of r added to row off + dir t + k
   (t < rows(r)): a sequence's gradient, from the rows a gradient's loop wrote for one of its taps.
   ScanGather (g, like, off): shaped like `like` (rows(like) rows), row t is row off + dir t + k of g.
   Each is the other's adjoint. */
typedef struct gr__place_params { int dir, k; } gr__place_params;

static gr_var *gr__place(const gr_op_def *op, gr_var *r, gr_var *like, gr_var *off, int dir, int k) {
    gr__place_params p;
    gr_var *ins[3];
    gr_graph *g;
    ins[0] = r; ins[1] = like; ins[2] = off;
    if (!gr__operands(op->name, 3, ins, &g)) return NULL;
    memset(&p, 0, sizeof p);
    p.dir = dir;
    p.k = k;
    return gr__node1(g, op, &p, sizeof p, 3, ins);
}
static gr_status gr__place_infer(const gr_node *node, gr_type *out) {
    const gr_var *r = gr__in(node)[0], *like = gr__in(node)[1], *off = gr__in(node)[2];
    if (r->ndim != like->ndim || r->ndim < 1 || off->ndim != 0 || off->dtype != GR_I64)
        return gr__error(node->graph, GR_ERR_TYPE, "%s: rows %s, like %s, offset %s", node->op->name, gr__d(r).s, gr__d(like).s, gr__d(off).s);
    gr_var_type(like, out);
    out->dtype = (gr_dtype)r->dtype;
    return GR_OK;
}
static gr_status gr__place_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    (void)node;
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[i] = in[1]->shape[i];
    return GR_OK;
}
/* rows t of `from` (rows n) go to or come from rows off + dir t + k of `at` (rows m); 0 when some row
   is out of range */
static int gr__place_rows_ok(const gr_node *node, int64_t off, int64_t n, int64_t m) {
    const gr__place_params *p = (const gr__place_params *)gr__params(node);
    int64_t first = off + p->k, last = off + (int64_t)p->dir * (n - 1) + p->k;
    return n == 0 || (first >= 0 && first < m && last >= 0 && last < m);
}
static gr_status gr__ScanPlace_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__place_params *p = (const gr__place_params *)gr__params(node);
    const gr_array *r = in[0];
    int64_t off = (int64_t)gr__load(GR_I64, in[2]->data, 0), row = r->shape[0] ? r->size / r->shape[0] : 0, t, e;
    gr_array *o = out[0];
    memset(o->data, 0, (size_t)o->size * gr__dsize(o->dtype));
    if (r->shape[0] && (!gr__place_rows_ok(node, off, r->shape[0], o->shape[0]) || row != (o->shape[0] ? o->size / o->shape[0] : 0)))
        return gr_node_error(node, GR_ERR_SHAPE, "rows of %s do not fit %s at offset %lld", gr__as(r).s, gr__as(o).s, (long long)off);
    for (t = 0; t < r->shape[0]; t++) {
        int64_t at = (off + (int64_t)p->dir * t + p->k) * row;
        for (e = 0; e < row; e++) gr__store(o->dtype, o->data, at + e, gr__load(o->dtype, o->data, at + e) + gr__load(r->dtype, r->data, t * row + e));
    }
    return GR_OK;
}
static gr_status gr__ScanGather_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__place_params *p = (const gr__place_params *)gr__params(node);
    const gr_array *src = in[0];
    gr_array *o = out[0];
    int64_t off = (int64_t)gr__load(GR_I64, in[2]->data, 0), row = o->shape[0] ? o->size / o->shape[0] : 0, t;
    if (o->shape[0] && (!gr__place_rows_ok(node, off, o->shape[0], src->shape[0]) || row != (src->shape[0] ? src->size / src->shape[0] : 0)))
        return gr_node_error(node, GR_ERR_SHAPE, "rows of %s do not fit %s at offset %lld", gr__as(o).s, gr__as(src).s, (long long)off);
    for (t = 0; t < o->shape[0]; t++)
        memcpy((char *)o->data + (size_t)(t * row) * gr__dsize(o->dtype),
               (const char *)src->data + (size_t)((off + (int64_t)p->dir * t + p->k) * row) * gr__dsize(o->dtype), (size_t)row * gr__dsize(o->dtype));
    return GR_OK;
}
static gr_status gr__ScanPlace_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__place_params *p = (const gr__place_params *)gr__params(node);
    ig[0] = gr__place(&gr__op_ScanGather, og[0], gr__in(node)[0], gr__in(node)[2], p->dir, p->k);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    ig[2] = gr_disconnected_like(gr__in(node)[2]);
    return ig[0] && ig[1] && ig[2] ? GR_OK : node->graph->status;
}
static gr_status gr__ScanGather_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__place_params *p = (const gr__place_params *)gr__params(node);
    ig[0] = gr__place(&gr__op_ScanPlace, og[0], gr__in(node)[0], gr__in(node)[2], p->dir, p->k);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    ig[2] = gr_disconnected_like(gr__in(node)[2]);
    return ig[0] && ig[1] && ig[2] ? GR_OK : node->graph->status;
}
static gr_status gr__ScanPlace_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__place_params *p = (const gr__place_params *)gr__params(node);
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__place(&gr__op_ScanPlace, ev[0], gr__in(node)[1], gr__in(node)[2], p->dir, p->k);
    return orop[0] ? GR_OK : node->graph->status;
}
static gr_status gr__ScanGather_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__place_params *p = (const gr__place_params *)gr__params(node);
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__place(&gr__op_ScanGather, ev[0], gr__in(node)[1], gr__in(node)[2], p->dir, p->k);
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- the gradient: a loop backwards over the forward loop's steps ------------------------------------

   Forward step t computes y_j[t] = f_j(taps of the sequences and states at t, values). The
   backward loop runs t = L-1 .. 0 (its own steps t_b = L-1-t) and carries, for each output with a
   state of D_j = -min(taps) rows, the adjoints still pending for y_j[t], ..., y_j[t-D_j+1] (B_j: the
   state itself when D_j = 1, else a (D_j, *s) window), and for each value the sum of its
   gradient so far. At step t the output adjoints are a_j = G_j[t] + B_j[0]; the body's
   vector-Jacobian product (the forward body copied into the gradient's body, so that gradients of
   gradients are loops too) gives the gradients of the taps: a sequence tap's is a row of the
   sequence's gradient, a state tap k's is pending for y_j[t+k] (B_j moves one row and takes it), a
   value's is added to its sum. The states' history (initial rows, then every row computed) and the
   sequences are read backwards with offsets computed from the steps the forward loop ran. After
   the loop, B_j holds the adjoints of the initial rows; truncate_gradient = k runs the last k
   steps only (the initial values then get a zero gradient when more steps ran). */

typedef struct gr__bptt {
    const gr_node *node;                 /* the forward loop */
    const gr__scan_def *d;
    int n_g;                             /* gradient sequences (outputs with every row and a gradient) */
    int *g_of;                           /* per output: its gradient sequence, or -1 */
    int *b_of;                           /* per state: its B state among the backward loop's states, or -1 */
    int *acc_of;                         /* per value: its sum among the backward loop's states, or -1 */
    int n_b, n_acc, n_sg;                /* B states, sums, and sequence-tap gradient outputs */
    int *sg_of;                          /* per sequence: its first tap-gradient output, or -1 */
    gr_var **null_of;                    /* per forward node input: a null gradient met in the body */
    int n_hy;                            /* states whose history also gives y[t] (tap 0): their count, */
    int *hy;                             /* and per state that tap's place among the step's inputs, or -1 */
} gr__bptt;

static int gr__scan_float_seq(const gr__scan_def *d, const gr_node *node, int i) { return gr__is_float(gr__in(node)[gr__scan_i_seq(d) + i]->dtype); }
/* input i reaches an output whose gradient is not disconnected (the steps count aside) */
static int gr__scan_flows(const gr_node *node, gr_var *const *og, int i) {
    int j;
    for (j = 0; j + 1 < node->n_out; j++) if (!gr_is_disconnected(og[j]) && gr__connected(node, i, j)) return 1;
    return 0;
}

/* where forward body input b (a sequence's or a state's tap) is among the gradient step's inputs:
   after the outputs' gradients, in the same order, each state's history with its tap 0 after the
   forward taps when c->hy says so */
static int gr__bptt_at(const gr__bptt *c, int b) {
    const gr__scan_def *d = c->d;
    int s, at = c->n_g + b;
    for (s = 0; s < d->n_state; s++) if (c->hy[s] >= 0 && d->st_at[s] + d->st_ntaps[s] <= b) at++;
    return at;
}

/* the status of a failed construction on g: its error, or out of memory */
static gr_status gr__scan_failed(const gr_graph *g) { return g->status != GR_OK ? g->status : GR_ERR_NOMEM; }

/* where the gradient step's B states start among its inputs: after the outputs' gradients, the taps
   and the histories' tap 0; its values come after the B states and the sums */
static int gr__bptt_b_states(const gr__bptt *c) { return c->n_g + gr__scan_b_val(c->d) + c->n_hy; }
static int gr__bptt_b_vals(const gr__bptt *c) { return gr__bptt_b_states(c) + c->n_b + c->n_acc; }

/* One gradient step's work (gr__bptt_step): the forward body's outputs on the step's values (fo),
   their adjoints (ev), what the gradient is taken with respect to (wrt; wrt_of: per wrt, its forward
   body input, or -(1 + value)) and the gradients (gr). */
typedef struct gr__bptt_work {
    gr_var **map, **fo, **ev, **wrt, **gr;
    int *wrt_of;
    int n_wrt;
} gr__bptt_work;

/* the outputs' adjoints at this step: the gradient's row, and what later steps left pending */
static gr_status gr__bptt_adjoints(const gr__bptt *c, gr_graph *g, gr_var *const *in, gr__bptt_work *w) {
    const gr__scan_def *d = c->d;
    int j, s, b_states = gr__bptt_b_states(c);
    gr_var **fo = w->fo, **ev = w->ev;
    for (j = 0; j < d->n_out; j++) {
        gr_var *a = NULL;
        s = d->out_state[j];
        if (!gr__is_float(fo[j]->dtype)) { ev[j] = gr_zeros_like(fo[j]); if (!ev[j]) return gr__scan_failed(g); continue; }
        if (c->g_of[j] >= 0) a = in[c->g_of[j]];
        if (s >= 0 && c->b_of[s] >= 0) {
            gr_var *bj = in[b_states + c->b_of[s]];
            if (d->st_D[s] > 1) bj = gr_index(bj, 0, 0);
            a = a ? gr_add(a, bj) : bj;
        }
        ev[j] = a ? a : gr_zeros_like(fo[j]);
        if (ev[j] && ev[j]->dtype != fo[j]->dtype) ev[j] = gr_cast(ev[j], (gr_dtype)fo[j]->dtype);
        if (!ev[j]) return gr__scan_failed(g);
    }
    return GR_OK;
}

/* the gradients of the taps and values: with respect to the float sequences' taps, the float states'
   taps and the float values, of sum_j <a_j, y_j>; nodes made since n_fwd_nodes read the stored
   history instead of a recomputed output; a null gradient noted for the loop's input, zeros here */
static gr_status gr__bptt_grads(const gr__bptt *c, gr_graph *g, gr_var *const *in, gr__bptt_work *w, uint32_t n_fwd_nodes) {
    const gr__scan_def *d = c->d;
    int i, s, k, n_wrt = 0, wi, n_stap = gr__scan_b_state(d), b_vals = gr__bptt_b_vals(c);
    gr_var **fo = w->fo, **wrt = w->wrt, **gr = w->gr;
    int *wrt_of = w->wrt_of;
    uint32_t kk;
    gr_grad_opts lo;
    gr_status st;
    for (i = 0; i < d->n_seq; i++)
        if (c->sg_of[i] >= 0)
            for (k = 0; k < d->seq_ntaps[i]; k++) { wrt_of[n_wrt] = d->seq_at[i] + k; wrt[n_wrt++] = in[gr__bptt_at(c, d->seq_at[i] + k)]; }
    for (s = 0; s < d->n_state; s++)
        if (c->b_of[s] >= 0)
            for (k = 0; k < d->st_ntaps[s]; k++) { wrt_of[n_wrt] = d->st_at[s] + k; wrt[n_wrt++] = in[gr__bptt_at(c, d->st_at[s] + k)]; }
    for (i = 0; i < d->n_val; i++)
        if (c->acc_of[i] >= 0) { wrt_of[n_wrt] = -1 - i; wrt[n_wrt++] = in[b_vals + i]; }
    w->n_wrt = n_wrt;
    memset(&lo, 0, sizeof lo);
    lo.disconnected_inputs = GR_IGNORE;
    lo.return_disconnected = GR_RETURN_ZERO;
    lo.null_gradients = GR_NULL_RETURN;
    {   /* sum_j <a_j, y_j>: one cost, so that an output that is also an intermediate value of another
           gets both adjoints (gr_lop, as Aesara's known_grads, takes a given gradient as the whole one) */
        gr_var *cost = NULL;
        int j;
        for (j = 0; j < d->n_out; j++) {
            gr_var *term;
            if (!gr__is_float(fo[j]->dtype)) continue;
            term = gr_sum(gr_mul(fo[j], w->ev[j]));
            cost = cost ? gr_add(cost, term) : term;
            if (!cost) return gr__scan_failed(g);
        }
        if (!cost) cost = gr__scalar_const(g, GR_F64, 0, 0);
        if ((st = gr_grad(cost, n_wrt, wrt, gr, &lo)) != GR_OK) return st;
    }
    /* the forward values the gradient reads are the stored ones: a node made for the gradient that reads
       a recomputed output y_j[t] reads the history's row of it instead (the recomputation is then dead
       where the rules read outputs, not intermediates: tanh's gradient reads tanh's output) */
    for (kk = n_fwd_nodes; kk < g->n_nodes; kk++) {
        gr_node *node = g->nodes[kk];
        for (i = 0; i < node->n_in; i++)
            for (s = 0; s < d->n_state; s++)
                if (c->hy[s] >= 0 && gr__in(node)[i] == fo[d->st_out[s]]) gr__in(node)[i] = in[c->hy[s]];
    }
    for (wi = 0; wi < n_wrt; wi++)                /* a null gradient: noted for the loop's input, zeros here */
        if (gr_is_null(gr[wi]) || gr_is_disconnected(gr[wi])) {
            int b = wrt_of[wi], pos;
            if (gr_is_null(gr[wi])) {
                if (b < 0) pos = gr__scan_i_val(d) - 1 - b;
                else if (b < n_stap) { for (i = 0; i + 1 < d->n_seq && d->seq_at[i + 1] <= b; i++) {} pos = gr__scan_i_seq(d) + i; }
                else { for (s = 0; s + 1 < d->n_state && d->st_at[s + 1] <= b; s++) {} pos = gr__scan_i_init(d) + s; }
                if (!c->null_of[pos]) c->null_of[pos] = gr[wi];
            }
            if (!(gr[wi] = gr__zeros_grad(wrt[wi]))) return gr__scan_failed(g);
        }
    return GR_OK;
}

/* state s's B window moved one row: row k is pending for y[t-1-k], B[k+1] and the tap -(k+1)'s
   gradient; NULL when out of memory (recorded on g) */
static gr_var *gr__bptt_window(const gr__bptt *c, gr_graph *g, gr_var *const *in, const gr__bptt_work *w, int s) {
    const gr__scan_def *d = c->d;
    int D = d->st_D[s], k, wi;
    gr_var *rows_stack[8], **rows = rows_stack, *bj = in[gr__bptt_b_states(c) + c->b_of[s]], *y;
    if (D > 8 && !(rows = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)D))) {
        gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", d->name);
        return NULL;
    }
    for (k = 0; k < D; k++) {
        gr_var *r = D > 1 && k + 1 < D ? gr_index(bj, 0, k + 1) : NULL;
        for (wi = 0; wi < w->n_wrt; wi++)
            if (w->wrt_of[wi] >= d->st_at[s] && w->wrt_of[wi] < d->st_at[s] + d->st_ntaps[s] && d->taps[w->wrt_of[wi]] == -(k + 1))
                r = r ? gr_add(r, w->gr[wi]) : w->gr[wi];
        rows[k] = r ? r : D == 1 ? gr__zeros_grad(bj) : gr__zeros_grad(gr_index(bj, 0, k));
    }
    for (k = 0; k < D && rows[k]; k++) {}
    y = k < D ? NULL : D == 1 ? rows[0] : gr_stack(D, rows, 0);
    if (rows != rows_stack) GR_FREE(rows);
    if (y && y->dtype != bj->dtype) y = gr_cast(y, (gr_dtype)bj->dtype);
    return y;
}

/* the step's outputs: the sequences' tap gradients, the moved B windows, the sums */
static gr_status gr__bptt_outputs(const gr__bptt *c, gr_graph *g, gr_var *const *in, gr_var **out, const gr__bptt_work *w) {
    const gr__scan_def *d = c->d;
    int i, s, wi, q = 0, n_stap = gr__scan_b_state(d);
    for (wi = 0; wi < w->n_wrt && w->wrt_of[wi] >= 0 && w->wrt_of[wi] < n_stap; wi++) out[q++] = w->gr[wi];
    for (s = 0; s < d->n_state; s++) {
        if (c->b_of[s] < 0) continue;
        if (!(out[q++] = gr__bptt_window(c, g, in, w, s))) return gr__scan_failed(g);
    }
    for (i = 0; i < d->n_val; i++) {
        gr_var *acc;
        if (c->acc_of[i] < 0) continue;
        acc = in[gr__bptt_b_states(c) + c->n_b + c->acc_of[i]];
        for (wi = 0; wi < w->n_wrt && w->wrt_of[wi] != -1 - i; wi++) {}
        out[q] = gr_add(acc, w->gr[wi]);
        if (out[q] && out[q]->dtype != acc->dtype) out[q] = gr_cast(out[q], (gr_dtype)acc->dtype);
        if (!out[q++]) return gr__scan_failed(g);
    }
    return GR_OK;
}

/* the gradient loop's step: the forward body on the step's values, the outputs' adjoints, the
   body's vector-Jacobian product, the step's outputs */
static gr_status gr__bptt_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    gr__bptt *c = (gr__bptt *)user;
    const gr__scan_def *d = c->d;
    int i, b_vals = gr__bptt_b_vals(c);
    uint32_t n_fwd_nodes;
    gr__bptt_work w;
    gr_status st;
    (void)until;
    memset(&w, 0, sizeof w);
    w.map = (gr_var **)gr__calloc((size_t)d->ig->n_vars + 1, sizeof(gr_var *));
    w.fo = (gr_var **)gr__calloc((size_t)d->n_out + 1, sizeof(gr_var *));
    w.ev = (gr_var **)gr__calloc((size_t)d->n_out + 1, sizeof(gr_var *));
    w.wrt = (gr_var **)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_var *));
    w.gr = (gr_var **)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_var *));
    w.wrt_of = (int *)gr__calloc((size_t)d->n_bin + 1, sizeof(int));
    if (!w.map || !w.fo || !w.ev || !w.wrt || !w.gr || !w.wrt_of) {
        st = gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", d->name);
        goto done;
    }
    /* the forward body, on the backward step's values of its inputs */
    for (i = 0; i < d->n_bin; i++)
        w.map[d->bin[i]->id] = i < gr__scan_b_val(d) ? in[gr__bptt_at(c, i)] : in[b_vals + i - gr__scan_b_val(d)];
    if ((st = gr__scan_clone(d, g, w.map, w.fo)) != GR_OK) goto done;
    n_fwd_nodes = g->n_nodes;
    if ((st = gr__bptt_adjoints(c, g, in, &w)) != GR_OK || (st = gr__bptt_grads(c, g, in, &w, n_fwd_nodes)) != GR_OK) goto done;
    st = gr__bptt_outputs(c, g, in, out, &w);
done:
    GR_FREE(w.map); GR_FREE(w.fo); GR_FREE(w.ev); GR_FREE(w.wrt); GR_FREE(w.gr); GR_FREE(w.wrt_of);
    return st;
}

/* a copy of d (its body copied too) whose outputs keep every row: the history a gradient needs of a
   loop whose states keep only their final value */
enum { GR__SCOPY_LAST = 1, GR__SCOPY_REPLAY = 2, GR__SCOPY_NSTEPS = 4 };
static gr__scan_def *gr__scan_def_copy(const gr__scan_def *d, gr_graph *g, unsigned how);
static gr__scan_def *gr__scan_def_all_rows(const gr__scan_def *d, gr_graph *g) { return gr__scan_def_copy(d, g, GR__SCOPY_REPLAY); }

/* a copy of d, its body copied too. how: LAST, its outputs keep only their final value where d's do
   (else every row); REPLAY, a checkpointed gradient's loop stays one (else its replayed sequences
   become ordinary sequences, which the caller gives whole); NSTEPS, the steps are an input (input 0) */
static gr__scan_def *gr__scan_def_copy(const gr__scan_def *d, gr_graph *g, unsigned how) {
    gr__scan_def *c = (gr__scan_def *)gr__calloc(1, sizeof(gr__scan_def));
    gr_var **map = NULL;
    size_t n_taps = (size_t)d->n_bin - (size_t)d->n_val;
    int i;
    if (!c) { gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", d->name); return NULL; }
    *c = *d;
    c->head.refs = 1;
    c->head.conn = NULL;
    c->head.name = c->name;
    c->seq_replay = NULL;
    c->replay = NULL;
    if (how & GR__SCOPY_NSTEPS) c->has_n_steps = 1;
    if (d->replay && (how & GR__SCOPY_REPLAY)) {
        if (!(c->seq_replay = (int *)gr__calloc((size_t)d->n_seq + 1, sizeof(int)))) {
            GR_FREE(c);
            gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", d->name);
            return NULL;
        }
        memcpy(c->seq_replay, d->seq_replay, sizeof(int) * (size_t)d->n_seq);
        c->replay = d->replay;
        c->replay->head.refs++;
    }
    c->ig = gr_graph_new();
    c->bin = (gr_var **)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_var *));
    c->bout = (gr_var **)gr__calloc((size_t)d->n_bout + 1, sizeof(gr_var *));
    c->seq_ntaps = (int *)gr__calloc(6u * (size_t)d->n_seq + 1, sizeof(int));
    c->out_state = (int *)gr__calloc((size_t)d->n_out + 1, sizeof(int));
    c->st_out = (int *)gr__calloc(4u * (size_t)d->n_state + 1, sizeof(int));
    c->out_last = (unsigned char *)gr__calloc((size_t)d->n_out + 1, 1);
    c->taps = (int *)gr__calloc(n_taps + 1, sizeof(int));
    map = (gr_var **)gr__calloc((size_t)d->ig->n_vars + 1, sizeof(gr_var *));
    if (!c->ig || !c->bin || !c->bout || !c->seq_ntaps || !c->out_state || !c->st_out || !c->out_last || !c->taps || !map) goto fail;
    memcpy(c->seq_ntaps, d->seq_ntaps, sizeof(int) * 6u * (size_t)d->n_seq);
    c->seq_at = c->seq_ntaps + d->n_seq; c->seq_dir = c->seq_at + d->n_seq; c->seq_off = c->seq_dir + d->n_seq;
    c->seq_m = c->seq_off + d->n_seq; c->seq_M = c->seq_m + d->n_seq;
    memcpy(c->out_state, d->out_state, sizeof(int) * (size_t)d->n_out);
    memcpy(c->st_out, d->st_out, sizeof(int) * 4u * (size_t)d->n_state);
    c->st_ntaps = c->st_out + d->n_state; c->st_at = c->st_ntaps + d->n_state; c->st_D = c->st_at + d->n_state;
    memcpy(c->taps, d->taps, sizeof(int) * n_taps);
    if (how & GR__SCOPY_LAST) memcpy(c->out_last, d->out_last, (size_t)d->n_out);
    for (i = 0; i < d->n_bin; i++)
        if (!(c->bin[i] = map[d->bin[i]->id] = gr__new_var(c->ig, d->bin[i]->dtype, d->bin[i]->ndim, gr__vshape(d->bin[i]), GR__VK_INPUT))) goto fail;
    if (gr__scan_clone(d, c->ig, map, c->bout) != GR_OK) goto fail;
    if (gr__scan_pattern(c) != GR_OK) goto fail;
    GR_FREE(map);
    return c;
fail:
    GR_FREE(map);
    gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", d->name);
    gr__scan_destroy(&c->head);
    return NULL;
}

/* the forward loop's rows of every output with a state: the node itself, or a rerun keeping them */
static const gr_node *gr__scan_history(const gr_node *node) {
    const gr__scan_def *d = gr__sdef(node);
    gr__scan_def *c;
    gr__scan_params prm;
    gr_var *outs_stack[16], **outs = outs_stack;
    const gr_node *h = NULL;
    int j;
    for (j = 0; j < d->n_out && !(d->out_last[j] && d->out_state[j] >= 0); j++) {}
    if (j == d->n_out) return node;
    if (!(c = gr__scan_def_all_rows(d, node->graph))) return NULL;
    if (d->n_out + 1 > 16 && !(outs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(d->n_out + 1)))) {
        gr__scan_destroy(&c->head);
        gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", d->name);
        return NULL;
    }
    memset(&prm, 0, sizeof prm);
    prm.def = c;
    if (gr__make_node_n(node->graph, &gr__op_Scan, &prm, sizeof prm, node->n_in, gr__in(node), node->n_out, outs) == GR_OK) h = gr__owner(outs[0]);
    if (--c->head.refs == 0) gr__scan_destroy(&c->head);
    if (outs != outs_stack) GR_FREE(outs);
    return h;
}

/* the forward offset of sequence i (row off + dir t + k - m), as a graph value */
static gr_var *gr__scan_seq_offset(const gr_node *node, int i) {
    const gr__scan_def *d = gr__sdef(node);
    gr_graph *g = node->graph;
    gr_var *x = gr__in(node)[gr__scan_i_seq(d) + i];
    if (d->seq_off[i] >= 0) return gr__in(node)[gr__scan_i_off(d) + d->seq_off[i]];
    if (d->seq_dir[i] > 0) return gr__scalar_const(g, GR_I64, 0, 0);
    return gr_sub(gr__rows(x), gr__scalar_const(g, GR_I64, (double)(d->seq_M[i] - d->seq_m[i] + 1), 0));
}

/* y when og, the gradient of a loop's output, is zeros but at the last row, where it is y (the
   gradient of gr_index(r, 0, -1)); else NULL. The loop then takes y as the final value's gradient
   instead of reading rows of zeros at every step. */
static gr_var *gr__scan_last_row_grad(gr_var *og) {
    const gr_node *u = og ? gr__owner(og) : NULL;
    const gr__view_params *vp;
    if (!u || u->op != &gr__op_ViewUpdate) return NULL;
    vp = (const gr__view_params *)gr__params(u);
    return vp->is_index && vp->axis == 0 && vp->start == -1 && gr__is_zero(gr__in(u)[0]) == 1 ? gr__in(u)[1] : NULL;
}

/* The forward loop a checkpointed gradient's loop replays, as a node of its graph keeping every row:
   its inputs are the gradient loop's (the forward sequences, initial values and values), its steps
   one more than the replay's first step (the offset at which the loop reads the histories). */
static gr_status gr__scan_replay_node(const gr_node *node, gr_var *lm1, gr_var **fout) {
    const gr__scan_def *d = gr__sdef(node), *fd = d->replay;
    gr_graph *g = node->graph;
    gr__scan_def *fc = gr__scan_def_copy(fd, g, GR__SCOPY_NSTEPS);
    gr__scan_params prm;
    gr_var **fin = NULL;
    gr_status st = GR_ERR_NOMEM;
    int i;
    if (!fc) return g->status != GR_OK ? g->status : GR_ERR_NOMEM;
    if (!(fin = (gr_var **)gr__calloc((size_t)gr__scan_n_in(fc) + 1, sizeof(gr_var *)))) goto done;
    fin[0] = gr_add(lm1, gr__scalar_const(g, GR_I64, 1, 0));
    for (i = 0; i < fd->n_seq; i++) {
        int gs = d->replay_seq0 + i;
        fin[gr__scan_i_seq(fc) + i] = gr__in(node)[gr__scan_i_seq(d) + gs];
        if (fd->seq_off[i] >= 0) {         /* the gradient loop reads it backwards from o -+ lm1 */
            gr_var *o = gr__scan_seq_offset(node, gs);
            fin[gr__scan_i_off(fc) + fd->seq_off[i]] = d->seq_dir[gs] > 0 ? gr_add(o, lm1) : gr_sub(o, lm1);
        }
    }
    for (i = 0; i < fd->n_state; i++) fin[gr__scan_i_init(fc) + i] = gr__in(node)[gr__scan_i_val(d) + d->replay_init0 + i];
    for (i = 0; i < fd->n_val; i++) fin[gr__scan_i_val(fc) + i] = gr__in(node)[gr__scan_i_val(d) + i];
    for (i = 0; i < gr__scan_n_in(fc); i++)
        if (!fin[i]) { st = g->status != GR_OK ? g->status : GR_ERR_NOMEM; goto done; }
    memset(&prm, 0, sizeof prm);
    prm.def = fc;
    st = gr__make_node_n(g, &gr__op_Scan, &prm, sizeof prm, gr__scan_n_in(fc), fin, fd->n_out + 1, fout);
done:
    if (--fc->head.refs == 0) gr__scan_destroy(&fc->head);
    GR_FREE(fin);
    return st != GR_OK && st != GR_ERR_NOMEM ? st : st == GR_OK ? GR_OK : gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", d->name);
}

/* a + b for two gradients of one input, either of them disconnected (absent) or null (kept) */
static gr_var *gr__scan_gsum(gr_var *a, gr_var *b) {
    if (!a || !b) return NULL;
    if (gr_is_disconnected(b) || gr_is_null(a)) return a;
    if (gr_is_disconnected(a) || gr_is_null(b)) return b;
    return gr_add(a, b);
}

/* The gradient of a checkpointed gradient's loop (a second derivative through checkpoints): the same
   loop U, reading the forward states' histories as ordinary sequences recomputed by F, the replayed
   forward loop keeping every row. The node's partial derivatives are U's, with a history's rows
   split between the initial rows (the node's input) and F's rows, whose gradient F's rule carries
   to the node's forward sequences, initial values and values. This derivative stores the
   histories: it is not checkpointed itself. */
static gr_status gr__scan_grad_replayed(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__scan_def *d = gr__sdef(node), *fd = d->replay;
    gr_graph *g = node->graph;
    gr__scan_def *uc = NULL;
    gr__scan_params prm;
    int nf_in = gr__scan_n_in(fd) + 1, i, a, first;
    size_t n = (size_t)fd->n_out + 1 + 3u * (size_t)node->n_in + (size_t)node->n_out + 2u * (size_t)nf_in + 2;
    gr_var **buf, **fout, **uin, **uout, **igu, **ogf, **igf, *lm1 = NULL;
    const gr_node *fnode = NULL;
    gr_status st = GR_ERR_NOMEM;
    if (!(buf = (gr_var **)gr__calloc(n, sizeof(gr_var *)))) return gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", d->name);
    fout = buf; uin = fout + fd->n_out + 1; igu = uin + node->n_in; uout = igu + node->n_in;
    ogf = uout + node->n_out; igf = ogf + fd->n_out + 1;
    for (first = 0; first < d->n_seq && d->seq_replay[first] < 0; first++) {}
    if (first == d->n_seq) { GR_FREE(buf); return gr__scan_grad_some(node, og, ig, NULL); }
    if (!(lm1 = gr__scan_seq_offset(node, first))) goto failed;
    if ((st = gr__scan_replay_node(node, lm1, fout)) != GR_OK) goto done;
    fnode = gr__owner(fout[0]);
    for (i = 0; i < node->n_in; i++) uin[i] = gr__in(node)[i];
    for (i = 0; i < d->n_seq; i++) {       /* the history: the initial rows (the input), then every step's */
        gr_var *both[2];
        if (d->seq_replay[i] < 0) continue;
        both[0] = gr__in(node)[gr__scan_i_seq(d) + i];
        both[1] = fout[fd->st_out[d->seq_replay[i]]];
        if (!(uin[gr__scan_i_seq(d) + i] = gr_concatenate(2, both, 0))) goto failed;
    }
    if (!(uc = gr__scan_def_copy(d, g, GR__SCOPY_LAST))) goto failed;
    memset(&prm, 0, sizeof prm);
    prm.def = uc;
    if ((st = gr__make_node_n(g, &gr__op_Scan, &prm, sizeof prm, node->n_in, uin, node->n_out, uout)) != GR_OK) goto done;
    if ((st = gr__scan_grad_some(gr__owner(uout[0]), og, igu, NULL)) != GR_OK) goto done;
    for (i = 0; i < node->n_in; i++) ig[i] = igu[i];
    for (a = 0; a <= fd->n_out; a++) if (!(ogf[a] = gr_disconnected_like(fout[a]))) goto failed;
    for (i = 0; i < d->n_seq; i++) {       /* a history's gradient: its initial rows, then F's rows */
        int at = gr__scan_i_seq(d) + i, s = d->seq_replay[i];
        int64_t D;
        gr_var *gh = igu[at];
        if (s < 0 || gr_is_disconnected(gh)) continue;
        if (gr_is_null(gh)) { ogf[fd->st_out[s]] = gh; continue; }
        D = fd->st_D[s];                   /* the initial rows (a plain state's one) */
        ig[at] = gr_slice(gh, 0, 0, D, 1);
        ogf[fd->st_out[s]] = gr_slice(gh, 0, D, INT64_MAX, 1);
        if (!ig[at] || !ogf[fd->st_out[s]]) goto failed;
    }
    if ((st = gr__scan_grad_some(fnode, ogf, igf, NULL)) != GR_OK) goto done;
    for (a = gr__scan_i_seq(fd) + 1; a < nf_in; a++) {   /* (F has an n_steps input: fd's inputs are one on) */
        int fi = a - 1, at;
        if (fi < gr__scan_i_init(fd)) at = gr__scan_i_seq(d) + d->replay_seq0 + (fi - gr__scan_i_seq(fd));
        else if (fi < gr__scan_i_val(fd)) at = gr__scan_i_val(d) + d->replay_init0 + (fi - gr__scan_i_init(fd));
        else at = gr__scan_i_val(d) + (fi - gr__scan_i_val(fd));
        if (!(ig[at] = gr__scan_gsum(ig[at], igf[a]))) goto failed;
    }
    st = GR_OK;
    goto done;
failed:
    st = g->status != GR_OK ? g->status : gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", d->name);
done:
    if (uc && --uc->head.refs == 0) gr__scan_destroy(&uc->head);
    GR_FREE(buf);
    return st;
}

/* a loop's gradient: a checkpointed gradient's loop is differentiated as its unreplayed equal */
static gr_status gr__scan_grad_any(const gr_node *node, gr_var *const *og, gr_var **ig, const uint8_t *skip) {
    return gr__sdef(node)->replay ? gr__scan_grad_replayed(node, og, ig) : gr__scan_grad_some(node, og, ig, skip);
}
static gr_status gr__Scan_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { return gr__scan_grad_any(node, og, ig, NULL); }

/* The arrays of a derived loop's spec (a gradient's or an R-op's loop, made by gr__scan_make): its
   sequences (offsets, taps, directions), its outputs (initial values, taps, which keep their final
   value only), the values it reads, its results. */
typedef struct gr__loop_spec {
    gr_var **seq, **off, **init, **vals, **res;
    int *ntaps, *dir, *ontaps;
    const int **taps, **otaps;
    unsigned char *last;
} gr__loop_spec;

/* room in b for n_seq sequences, n_out outputs and n_val values; 0 when out of memory */
static int gr__loop_spec_alloc(gr__loop_spec *b, int n_seq, int n_out, int n_val) {
    memset(b, 0, sizeof *b);
    b->seq = (gr_var **)gr__calloc((size_t)n_seq + 1, sizeof(gr_var *));
    b->off = (gr_var **)gr__calloc((size_t)n_seq + 1, sizeof(gr_var *));
    b->ntaps = (int *)gr__calloc(2u * (size_t)n_seq + 1, sizeof(int));
    b->taps = (const int **)gr__calloc((size_t)n_seq + 1, sizeof(int *));
    b->init = (gr_var **)gr__calloc((size_t)n_out + 1, sizeof(gr_var *));
    b->ontaps = (int *)gr__calloc((size_t)n_out + 1, sizeof(int));
    b->otaps = (const int **)gr__calloc((size_t)n_out + 1, sizeof(int *));
    b->last = (unsigned char *)gr__calloc((size_t)n_out + 1, 1);
    b->vals = (gr_var **)gr__calloc((size_t)n_val + 1, sizeof(gr_var *));
    b->res = (gr_var **)gr__calloc((size_t)n_out + 2, sizeof(gr_var *));
    if (!b->seq || !b->off || !b->ntaps || !b->taps || !b->init || !b->ontaps || !b->otaps || !b->last || !b->vals || !b->res) return 0;
    b->dir = b->ntaps + n_seq;
    return 1;
}
static void gr__loop_spec_free(gr__loop_spec *b) {
    GR_FREE(b->seq); GR_FREE(b->off); GR_FREE(b->ntaps); GR_FREE(b->taps); GR_FREE(b->init); GR_FREE(b->ontaps); GR_FREE(b->otaps);
    GR_FREE(b->last); GR_FREE(b->vals); GR_FREE(b->res);
}
/* sp: the loop of b's first n_seq sequences, n_out outputs and n_val values (the rest zero) */
static void gr__loop_spec_fill(gr__scan_spec *sp, const gr__loop_spec *b, int n_seq, int n_out, int n_val) {
    memset(sp, 0, sizeof *sp);
    sp->n_seq = n_seq; sp->seq = b->seq; sp->seq_ntaps = b->ntaps; sp->seq_taps = b->taps; sp->seq_dir = b->dir; sp->seq_off = b->off;
    sp->n_out = n_out; sp->init = b->init; sp->out_ntaps = b->ontaps; sp->out_taps = b->otaps; sp->out_last = b->last;
    sp->n_val = n_val; sp->val = b->vals;
}

/* What gr__scan_grad_some works on: the forward node, the gradient step's context (c), the backward
   loop's spec (b: n_bseq sequences, n_bout outputs), the forward loop's rows (hist), its steps L and
   L - 1; whether the states are recomputed (ckpt; replayed: per backward sequence, the forward state
   whose history it is, or -1); the histories' taps with tap 0 after them (htaps). */
typedef struct gr__bptt_build {
    const gr_node *node;
    gr__bptt c;
    gr__loop_spec b;
    const gr_node *hist;
    gr_var *L, *Lm1;
    int n_bseq, n_bout, ckpt;
    int *replayed, *htaps;
} gr__bptt_build;

static gr_status gr__bptt_nomem(const gr__bptt_build *bb) {
    return gr__error(bb->node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", bb->c.d->name);
}

/* the backward loop's first sequences: the outputs' gradients (read backwards), then the forward
   sequences (read backwards from the forward loop's last step) */
static gr_status gr__bptt_sequences(gr__bptt_build *bb, gr_var *const *og) {
    const gr_node *node = bb->node;
    const gr__scan_def *d = bb->c.d;
    gr__loop_spec *b = &bb->b;
    int i, j, n = 0;
    for (j = 0; j < d->n_out; j++) {
        bb->c.g_of[j] = -1;
        if (d->out_last[j] || gr_is_disconnected(og[j]) || gr_is_null(og[j]) || !gr__is_float(og[j]->dtype)) continue;
        if (d->out_state[j] >= 0 && gr__scan_last_row_grad(og[j])) continue;     /* seeds its state instead */
        bb->c.g_of[j] = n;
        b->seq[n] = og[j]; b->off[n] = bb->Lm1; b->dir[n] = -1; b->ntaps[n] = 0; b->taps[n] = NULL;
        n++;
    }
    bb->c.n_g = n;
    for (i = 0; i < d->n_seq; i++) {
        gr_var *o = gr__scan_seq_offset(node, i);
        b->seq[n] = gr__in(node)[gr__scan_i_seq(d) + i];
        b->off[n] = d->seq_dir[i] > 0 ? gr_add(o, bb->Lm1) : gr_sub(o, bb->Lm1);
        if (!o || !b->off[n]) return gr__scan_failed(node->graph);
        b->dir[n] = -d->seq_dir[i];
        b->ntaps[n] = d->seq_ntaps[i];
        b->taps[n] = d->taps + d->seq_at[i];
        n++;
    }
    bb->n_bseq = n;
    return GR_OK;
}

/* the backward loop's last sequences: each state's history (the initial rows the taps read, then every
   row; recomputed by the loop when checkpointed), read with the state's taps and, stored, tap 0 too */
static gr_status gr__bptt_histories(gr__bptt_build *bb) {
    const gr_node *node = bb->node;
    const gr__scan_def *d = bb->c.d;
    gr__loop_spec *b = &bb->b;
    gr__bptt *c = &bb->c;
    int i, s, hy_at, n = bb->n_bseq;
    c->hy = (int *)gr__calloc((size_t)d->n_state + 1, sizeof(int));
    bb->htaps = (int *)gr__calloc((size_t)(gr__scan_b_val(d) - gr__scan_b_state(d) + d->n_state) + 1, sizeof(int));
    if (!c->hy || !bb->htaps) return gr__bptt_nomem(bb);
    for (i = 0, hy_at = 0; i < n; i++) hy_at += b->ntaps[i] ? b->ntaps[i] : 1;   /* where the histories' taps start */
    if (bb->ckpt && !(bb->replayed = (int *)gr__calloc((size_t)(d->n_out + d->n_seq + d->n_state) + 1, sizeof(int)))) return gr__bptt_nomem(bb);
    for (i = 0; bb->ckpt && i < n; i++) bb->replayed[i] = -1;
    for (s = 0; s < d->n_state; s++) {     /* history: the initial rows the taps read, then every row */
        gr_var *x0 = gr__in(node)[gr__scan_i_init(d) + s], *rows0, *both[2];
        int sit = d->st_ntaps[s] == 1 && d->taps[d->st_at[s]] == -1;
        rows0 = sit ? gr_stack(1, &x0, 0) : gr_slice(x0, 0, 0, d->st_D[s], 1);
        if (bb->ckpt) {                       /* recomputed by the gradient's loop: rows0 only gives the type */
            bb->replayed[n] = s;
            b->seq[n] = rows0;
        } else {
            both[0] = rows0;
            both[1] = gr__out(bb->hist)[d->st_out[s]];
            b->seq[n] = gr_concatenate(2, both, 0);
        }
        if (!b->seq[n]) return gr__scan_failed(node->graph);
        b->off[n] = bb->Lm1; b->dir[n] = -1;
        b->ntaps[n] = d->st_ntaps[s];
        b->taps[n] = d->taps + d->st_at[s];
        c->hy[s] = -1;
        if (!bb->ckpt) {                      /* and y[t] itself (tap 0): what the gradient reads of the output */
            int *ht = bb->htaps + d->st_at[s] - gr__scan_b_state(d) + s;
            memcpy(ht, d->taps + d->st_at[s], sizeof(int) * (size_t)d->st_ntaps[s]);
            ht[d->st_ntaps[s]] = 0;
            b->taps[n] = ht;
            b->ntaps[n] = d->st_ntaps[s] + 1;
            c->hy[s] = hy_at + d->st_ntaps[s];
            c->n_hy++;
        }
        hy_at += b->ntaps[n];
        n++;
    }
    bb->n_bseq = n;
    return GR_OK;
}

/* the backward loop's states: the pending adjoints of the float states (seeded by the final value's
   gradient), the sums of the float values; then its outputs: the float sequences' tap gradients
   (every row), then the states (final values) */
static gr_status gr__bptt_states(gr__bptt_build *bb, gr_var *const *og, const uint8_t *skip) {
    const gr_node *node = bb->node;
    const gr__scan_def *d = bb->c.d;
    gr__loop_spec *b = &bb->b;
    gr__bptt *c = &bb->c;
    int i, s, k, pos = 0, q = 0;
    for (s = 0; s < d->n_state; s++) {
        gr_var *x0 = gr__in(node)[gr__scan_i_init(d) + s], *z;
        int jo = d->st_out[s], sit = d->st_ntaps[s] == 1 && d->taps[d->st_at[s]] == -1;
        c->b_of[s] = -1;
        if (!gr__is_float(x0->dtype)) continue;
        c->b_of[s] = c->n_b++;
        z = d->st_D[s] == 1 ? (sit ? gr__zeros_grad(x0) : gr__zeros_grad(gr_index(x0, 0, 0))) : gr__zeros_grad(gr_slice(x0, 0, 0, d->st_D[s], 1));
        if (z && !gr_is_disconnected(og[jo]) && !gr_is_null(og[jo]) && (d->out_last[jo] || gr__scan_last_row_grad(og[jo]))) {
            gr_var *y = d->out_last[jo] ? og[jo] : gr__scan_last_row_grad(og[jo]);   /* the final value's gradient */
            z = d->st_D[s] == 1 ? gr_cast(y, (gr_dtype)z->dtype) : gr_set_subtensor(gr_index(z, 0, 0), y);
        }
        if (!z) return gr__scan_failed(node->graph);
        b->init[pos++] = z;
    }
    for (s = 0; bb->ckpt && s < d->n_state; s++) b->vals[d->n_val + s] = gr__in(node)[gr__scan_i_init(d) + s];   /* the replay's */
    for (i = 0; i < d->n_val; i++) {
        gr_var *v = gr__in(node)[gr__scan_i_val(d) + i];
        b->vals[i] = v;
        c->acc_of[i] = -1;
        if (!gr__is_float(v->dtype) || !gr__scan_flows(node, og, gr__scan_i_val(d) + i) || (skip && skip[gr__scan_i_val(d) + i])) continue;
        c->acc_of[i] = c->n_acc++;
        if (!(b->init[pos++] = gr__zeros_grad(v))) return gr__scan_failed(node->graph);
    }
    for (i = 0; i < d->n_seq; i++) {
        c->sg_of[i] = -1;
        if (!gr__scan_float_seq(d, node, i) || (skip && skip[gr__scan_i_seq(d) + i])) continue;
        c->sg_of[i] = q;
        q += d->seq_ntaps[i];
    }
    c->n_sg = q;
    /* the spec's outputs: [tap gradients (no state)] [states] */
    memmove(b->init + q, b->init, sizeof(gr_var *) * (size_t)pos);
    for (k = 0; k < q; k++) b->init[k] = NULL;
    for (k = 0; k < q + pos; k++) { b->ontaps[k] = 0; b->otaps[k] = NULL; b->last[k] = k >= q; }
    bb->n_bout = q + pos;
    return GR_OK;
}

/* the gradients of the loop's inputs: disconnected, zeros (not float, or not asked for), null, or from
   the backward loop's results: a sequence's every tap's rows placed where the loop read them, an
   initial's the adjoints pending after step 0, a value's its sum */
static gr_status gr__bptt_input_grads(gr__bptt_build *bb, gr_var *const *og, const uint8_t *skip, gr_var **ig) {
    const gr_node *node = bb->node;
    const gr__scan_def *d = bb->c.d;
    const gr__bptt *c = &bb->c;
    gr_graph *g = node->graph;
    gr_var **bres = bb->b.res;
    int i, s, k, r;
    for (i = 0; i < node->n_in; i++) {
        gr_var *x = gr__in(node)[i];
        if (i < gr__scan_i_seq(d) || !gr__scan_flows(node, og, i)) ig[i] = gr_disconnected_like(x);
        else if (!gr__is_float(x->dtype) || (skip && skip[i])) ig[i] = gr__zeros_grad(x);   /* (not asked for) */
        else if (c->null_of[i]) ig[i] = gr__null_var(g, x, (gr_status)c->null_of[i]->aux, gr__null_reason(c->null_of[i]));
        if (!ig[i] && (i < gr__scan_i_seq(d) || !gr__scan_flows(node, og, i) || !gr__is_float(x->dtype) || (skip && skip[i]) || c->null_of[i]))
            return gr__scan_failed(g);
    }
    for (i = 0; i < d->n_seq; i++) {       /* a sequence's: every tap's rows, where the backward loop read them */
        int at = gr__scan_i_seq(d) + i;
        gr_var *sum = NULL;
        if (ig[at] || c->sg_of[i] < 0) continue;
        for (k = 0; k < d->seq_ntaps[i]; k++) {
            gr_var *p = gr__place(&gr__op_ScanPlace, bres[c->sg_of[i] + k], gr__in(node)[at], bb->b.off[c->n_g + i], -d->seq_dir[i],
                                  d->taps[d->seq_at[i] + k] - d->seq_m[i]);
            sum = sum && p ? gr_add(sum, p) : p;
            if (!sum) return gr__scan_failed(g);
        }
        ig[at] = sum;
    }
    for (s = 0, r = c->n_sg; s < d->n_state; s++) {   /* an initial's: the adjoints pending after step 0 */
        int at = gr__scan_i_init(d) + s, sit = d->st_ntaps[s] == 1 && d->taps[d->st_at[s]] == -1;
        gr_var *bf, *x0 = gr__in(node)[at];
        if (c->b_of[s] < 0) continue;
        bf = bres[r + c->b_of[s]];
        if (ig[at]) continue;
        if (!sit) {                          /* row d of the window is initial row D-1-d; rows past D get 0 */
            if (d->st_D[s] == 1) bf = gr_stack(1, &bf, 0);
            else bf = gr_slice(bf, 0, GR_OPEN, GR_OPEN, -1);
            bf = gr__place(&gr__op_ScanPlace, bf, x0, gr__scalar_const(g, GR_I64, 0, 0), 1, 0);
        }
        if (bf && d->truncate > 0)           /* outside the window when more steps ran */
            bf = gr_where(gr_gt(bb->L, gr__scalar_const(g, GR_I64, (double)d->truncate, 0)), gr_zeros_like(bf), bf);
        if (!(ig[at] = bf)) return gr__scan_failed(g);
    }
    for (i = 0, r = c->n_sg + c->n_b; i < d->n_val; i++) {
        int at = gr__scan_i_val(d) + i;
        if (ig[at]) continue;
        if (c->acc_of[i] < 0) { if (!(ig[at] = gr__zeros_grad(gr__in(node)[at]))) return gr__scan_failed(g); continue; }
        ig[at] = bres[r + c->acc_of[i]];
        if (!ig[at]) return gr__scan_failed(g);
    }
    return GR_OK;
}

/* skip (NULL: none): inputs whose terms are not needed get zeros, and the loop computes nothing for them */
static gr_status gr__scan_grad_some(const gr_node *node, gr_var *const *og, gr_var **ig, const uint8_t *skip) {
    const gr__scan_def *d = gr__sdef(node);
    gr_graph *g = node->graph;
    gr__bptt_build bb;
    gr__bptt *c = &bb.c;
    gr__scan_spec sp;
    int i;
    char name[80];
    gr_status st;
    memset(&bb, 0, sizeof bb);
    for (i = 0; i < node->n_in; i++) ig[i] = NULL;
    bb.node = node;
    c->node = node;
    c->d = d;
    bb.hist = d->checkpoints > 0 ? node : gr__scan_history(node);   /* (a checkpointed gradient recomputes the states) */
    if (!bb.hist) return g->status != GR_OK ? g->status : gr__bptt_nomem(&bb);
    bb.L = gr__out(node)[d->n_out];
    bb.Lm1 = gr_sub(bb.L, gr__scalar_const(g, GR_I64, 1, 0));
    if (!bb.Lm1) return g->status != GR_OK ? g->status : gr__bptt_nomem(&bb);
    c->g_of = (int *)gr__calloc((size_t)d->n_out + 1, sizeof(int));
    c->b_of = (int *)gr__calloc((size_t)d->n_state + 1, sizeof(int));
    c->acc_of = (int *)gr__calloc((size_t)d->n_val + 1, sizeof(int));
    c->sg_of = (int *)gr__calloc((size_t)d->n_seq + 1, sizeof(int));
    c->null_of = (gr_var **)gr__calloc((size_t)node->n_in + 1, sizeof(gr_var *));
    if (!gr__loop_spec_alloc(&bb.b, d->n_out + d->n_seq + d->n_state, d->n_bin + d->n_state + d->n_val + 1, d->n_val + d->n_state) ||
        !c->g_of || !c->b_of || !c->acc_of || !c->sg_of || !c->null_of) {
        st = gr__bptt_nomem(&bb);
        goto done;
    }
    bb.ckpt = d->checkpoints > 0 && d->n_state > 0;
    if ((st = gr__bptt_sequences(&bb, og)) != GR_OK || (st = gr__bptt_histories(&bb)) != GR_OK || (st = gr__bptt_states(&bb, og, skip)) != GR_OK)
        goto done;
    gr__loop_spec_fill(&sp, &bb.b, bb.n_bseq, bb.n_bout, d->n_val + (bb.ckpt ? d->n_state : 0));
    if (bb.ckpt) {
        sp.replay = (gr__scan_def *)(uintptr_t)d;
        sp.seq_replay = bb.replayed;
        sp.replay_seq0 = c->n_g;
        sp.replay_init0 = d->n_val;
    }
    sp.n_steps = d->truncate > 0 ? gr_minimum(bb.L, gr__scalar_const(g, GR_I64, (double)d->truncate, 0)) : bb.L;
    if (!sp.n_steps) { st = gr__scan_failed(g); goto done; }
    sp.checkpoints = d->checkpoints;
    snprintf(name, sizeof name, "grad_of_%s", d->name);
    sp.name = name;
    sp.step = gr__bptt_step;
    sp.user = c;
    if ((st = gr__scan_make(g, &sp, bb.b.res)) != GR_OK) goto done;
    st = gr__bptt_input_grads(&bb, og, skip, ig);
done:
    GR_FREE(c->g_of); GR_FREE(c->b_of); GR_FREE(c->acc_of); GR_FREE(c->sg_of); GR_FREE(c->null_of); GR_FREE(c->hy);
    gr__loop_spec_free(&bb.b);
    GR_FREE(bb.replayed); GR_FREE(bb.htaps);
    return st;
}

/* ---- the R-op: one loop computing the forward values and their tangents together ---------------------

   The tangent loop has the forward loop's sequences, states and values, and beside each one with a
   tangent (a float input whose eval point is connected) its tangent: a sequence with the same taps
   and reading order, a state with the same taps (the eval point of its initial, or zeros), a value.
   Its body is the forward body and, on it, the body's R-op along the tangents; its outputs are the
   forward outputs (the states carry the recurrence; only their final values are kept) and the
   tangents of the float outputs, which keep every row as the forward outputs do. A while loop
   stops where the forward one did: the same condition, on the same values. */

typedef struct gr__rop_ctx {
    const gr_node *node;
    const gr__scan_def *d;
    int *seq_t, *st_t, *val_t;           /* per forward sequence / state / value: its tangent's index, or -1 */
    int *out_t;                          /* per forward output: its tangent output's index, or -1 */
    int n_seq_t, n_st_t, n_val_t, n_out_t, n_seqtap_t, n_sttap_t;
} gr__rop_ctx;

static gr_status gr__rop_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    gr__rop_ctx *c = (gr__rop_ctx *)user;
    const gr__scan_def *d = c->d;
    gr_graph *ig = d->ig;
    int n_stap = gr__scan_b_state(d), n_ttap = gr__scan_b_val(d) - n_stap;
    int at_ttap = n_stap + c->n_seqtap_t, at_tttap = at_ttap + n_ttap, at_val = at_tttap + c->n_sttap_t, at_tval = at_val + d->n_val;
    int i, j, k, s, n_wrt = 0, q;
    gr_var **map = NULL, **fo = NULL, **wrt = NULL, **tan = NULL, **ro = NULL;
    int tpos;
    gr_rop_opts ro_opts;
    gr_status st = GR_ERR_NOMEM;
    map = (gr_var **)gr__calloc((size_t)ig->n_vars + 1, sizeof(gr_var *));
    fo = (gr_var **)gr__calloc((size_t)d->n_bout + 1, sizeof(gr_var *));
    wrt = (gr_var **)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_var *));
    tan = (gr_var **)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_var *));
    ro = (gr_var **)gr__calloc((size_t)d->n_out + 1, sizeof(gr_var *));
    if (!map || !fo || !wrt || !tan || !ro) goto nomem;
    /* the forward body on the forward values: sequence taps, state taps, values */
    for (i = 0; i < n_stap; i++) map[d->bin[i]->id] = in[i];
    for (i = 0; i < n_ttap; i++) map[d->bin[n_stap + i]->id] = in[at_ttap + i];
    for (i = 0; i < d->n_val; i++) map[d->bin[gr__scan_b_val(d) + i]->id] = in[at_val + i];
    if ((st = gr__scan_clone(d, g, map, fo)) != GR_OK) goto done;
    /* the tangents along which the body's R-op runs */
    for (i = 0, tpos = 0; i < d->n_seq; i++)
        for (k = 0; k < d->seq_ntaps[i]; k++)
            if (c->seq_t[i] >= 0) { wrt[n_wrt] = in[d->seq_at[i] + k]; tan[n_wrt++] = in[n_stap + tpos++]; }
    for (s = 0, tpos = 0; s < d->n_state; s++)
        for (k = 0; k < d->st_ntaps[s]; k++)
            if (c->st_t[s] >= 0) { wrt[n_wrt] = in[at_ttap + d->st_at[s] - n_stap + k]; tan[n_wrt++] = in[at_tttap + tpos++]; }
    for (i = 0; i < d->n_val; i++)
        if (c->val_t[i] >= 0) { wrt[n_wrt] = in[at_val + i]; tan[n_wrt++] = in[at_tval + c->val_t[i]]; }
    memset(&ro_opts, 0, sizeof ro_opts);
    ro_opts.disconnected_outputs = GR_IGNORE;
    ro_opts.return_disconnected = GR_RETURN_ZERO;
    if (n_wrt > 0 && (st = gr_rop(d->n_out, fo, n_wrt, wrt, tan, ro, &ro_opts)) != GR_OK) goto done;
    for (j = 0, q = 0; j < d->n_out; j++) out[q++] = fo[j];
    for (j = 0; j < d->n_out; j++) {
        gr_var *t;
        if (c->out_t[j] < 0) continue;
        t = n_wrt > 0 && ro[j] && !gr_is_disconnected(ro[j]) ? ro[j] : gr_zeros_like(fo[j]);
        if (t && t->dtype != fo[j]->dtype) t = gr_cast(t, (gr_dtype)fo[j]->dtype);
        if (!(out[q++] = t)) goto failed;
    }
    if (d->has_until) *until = fo[d->n_out];
    st = GR_OK;
    goto done;
failed:
    st = g->status != GR_OK ? g->status : GR_ERR_NOMEM;
    goto done;
nomem:
    st = gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (R-op)", d->name);
done:
    GR_FREE(map); GR_FREE(fo); GR_FREE(wrt); GR_FREE(tan); GR_FREE(ro);
    return st;
}

static int gr__rop_has(gr_var *ev) { return ev && !gr_is_disconnected(ev) && !gr_is_null(ev) && gr__is_float(ev->dtype); }

/* the tangents the loop carries: per forward sequence, state and value, its tangent's index or -1
   (a float state carries one, zeros without an eval point); 0 when no input has a tangent */
static int gr__rop_plan(gr__rop_ctx *c, gr_var *const *ev) {
    const gr_node *node = c->node;
    const gr__scan_def *d = c->d;
    int i, s, any = 0;
    for (i = 0; i < d->n_seq; i++) {
        c->seq_t[i] = gr__rop_has(ev[gr__scan_i_seq(d) + i]) ? c->n_seq_t++ : -1;
        if (c->seq_t[i] >= 0) { c->n_seqtap_t += d->seq_ntaps[i]; any = 1; }
    }
    for (s = 0; s < d->n_state; s++) {      /* a float state carries a tangent (zeros without an eval point) */
        gr_var *x0 = gr__in(node)[gr__scan_i_init(d) + s];
        c->st_t[s] = gr__is_float(x0->dtype) ? c->n_st_t++ : -1;
        if (c->st_t[s] >= 0) c->n_sttap_t += d->st_ntaps[s];
        if (gr__rop_has(ev[gr__scan_i_init(d) + s])) any = 1;
    }
    for (i = 0; i < d->n_val; i++) {
        c->val_t[i] = gr__rop_has(ev[gr__scan_i_val(d) + i]) ? c->n_val_t++ : -1;
        if (c->val_t[i] >= 0) any = 1;
    }
    return any;
}

/* the tangent loop's sequences, outputs and values in b: the forward ones, then their tangents */
static gr_status gr__rop_spec(const gr__rop_ctx *c, gr__loop_spec *b, gr_var *const *ev) {
    const gr_node *node = c->node;
    const gr__scan_def *d = c->d;
    int i, j, s, q;
    for (i = 0; i < d->n_seq; i++) {          /* the sequences, then their tangents, read alike */
        int at = gr__scan_i_seq(d) + i;
        gr_var *o = d->seq_off[i] >= 0 ? gr__in(node)[gr__scan_i_off(d) + d->seq_off[i]] : NULL;
        b->seq[i] = gr__in(node)[at]; b->off[i] = o; b->dir[i] = d->seq_dir[i];
        b->ntaps[i] = d->seq_ntaps[i]; b->taps[i] = d->taps + d->seq_at[i];
        if (c->seq_t[i] < 0) continue;
        q = d->n_seq + c->seq_t[i];
        b->seq[q] = ev[at]->dtype == b->seq[i]->dtype ? ev[at] : gr_cast(ev[at], (gr_dtype)b->seq[i]->dtype);
        b->off[q] = o; b->dir[q] = d->seq_dir[i]; b->ntaps[q] = d->seq_ntaps[i]; b->taps[q] = d->taps + d->seq_at[i];
        if (!b->seq[q]) return gr__scan_failed(node->graph);
    }
    for (j = 0; j < d->n_out; j++) {          /* the outputs (their final values), then the tangents */
        s = d->out_state[j];
        b->last[j] = 1;
        if (s >= 0) {
            b->init[j] = gr__in(node)[gr__scan_i_init(d) + s];
            b->ontaps[j] = d->st_ntaps[s];
            b->otaps[j] = d->taps + d->st_at[s];
        }
        if (c->out_t[j] < 0) continue;
        q = d->n_out + c->out_t[j];
        b->last[q] = d->out_last[j];
        if (s >= 0) {
            gr_var *e = ev[gr__scan_i_init(d) + s], *x0 = b->init[j];
            b->init[q] = gr__rop_has(e) ? (e->dtype == x0->dtype ? e : gr_cast(e, (gr_dtype)x0->dtype)) : gr_zeros_like(x0);
            b->ontaps[q] = d->st_ntaps[s];
            b->otaps[q] = d->taps + d->st_at[s];
            if (!b->init[q]) return gr__scan_failed(node->graph);
        }
    }
    for (i = 0; i < d->n_val; i++) {
        int at = gr__scan_i_val(d) + i;
        b->vals[i] = gr__in(node)[at];
        if (c->val_t[i] >= 0) {
            q = d->n_val + c->val_t[i];
            b->vals[q] = ev[at]->dtype == b->vals[i]->dtype ? ev[at] : gr_cast(ev[at], (gr_dtype)b->vals[i]->dtype);
            if (!b->vals[q]) return gr__scan_failed(node->graph);
        }
    }
    return GR_OK;
}

static gr_status gr__Scan_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__scan_def *d = gr__sdef(node);
    gr_graph *g = node->graph;
    gr__rop_ctx c;
    gr__loop_spec b;
    gr__scan_spec sp;
    int n_seq2, n_out2, n_val2, j;
    char name[80];
    gr_status st;
    for (j = 0; j < node->n_out; j++) orop[j] = NULL;
    memset(&c, 0, sizeof c);
    memset(&b, 0, sizeof b);
    c.node = node;
    c.d = d;
    c.seq_t = (int *)gr__calloc((size_t)(d->n_seq + d->n_state + d->n_val + d->n_out) + 1, sizeof(int));
    if (!c.seq_t) return gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (R-op)", d->name);
    c.st_t = c.seq_t + d->n_seq; c.val_t = c.st_t + d->n_state; c.out_t = c.val_t + d->n_val;
    if (!gr__rop_plan(&c, ev)) { GR_FREE(c.seq_t); return GR_OK; }       /* nothing moves: every output is disconnected */
    for (j = 0; j < d->n_out; j++) c.out_t[j] = gr__is_float(d->bout[j]->dtype) ? c.n_out_t++ : -1;
    n_seq2 = d->n_seq + c.n_seq_t;
    n_out2 = d->n_out + c.n_out_t;
    n_val2 = d->n_val + c.n_val_t;
    if (!gr__loop_spec_alloc(&b, n_seq2, n_out2, n_val2)) { st = gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (R-op)", d->name); goto done; }
    if ((st = gr__rop_spec(&c, &b, ev)) != GR_OK) goto done;
    gr__loop_spec_fill(&sp, &b, n_seq2, n_out2, n_val2);
    sp.n_steps = d->has_n_steps ? gr__in(node)[0] : NULL;
    sp.checkpoints = d->checkpoints;
    snprintf(name, sizeof name, "rop_of_%s", d->name);
    sp.name = name;
    sp.step = gr__rop_step;
    sp.user = &c;
    if ((st = gr__scan_make(g, &sp, b.res)) != GR_OK) goto done;
    for (j = 0; j < d->n_out; j++) if (c.out_t[j] >= 0) orop[j] = b.res[d->n_out + c.out_t[j]];
done:
    GR_FREE(c.seq_t);
    gr__loop_spec_free(&b);
    return st;
}

/* ---- batching (Jacobians and Hessians through loops): one loop over batched rows ---------------------

   Inputs that gained a leading batch axis B stay batched inside the loop: a sequence (B, len, *s) is
   iterated as (len, B, *s), a value stays (B, ...), and a state is batched when its initial value is
   or when its output depends on a batched input (through the recurrence too); such a state's
   initial value is broadcast to (B, *s) when it is not batched itself. The body is the forward body
   vectorised (src/jacobian.c) over the batched inputs; a batched output comes out (L, B, *s) and is
   given back as (B, L, *s). */

static gr_status gr__vectorize(gr_graph *g, int n_seed, gr_var *const *seed, gr_var *const *seed_b, const uint8_t *seed_isb,
                               int n, gr_var *const *roots, gr_var **out, uint8_t *out_b);

#endif /* GR_NO_SCAN */
/* x (unbatched) broadcast along a leading axis of the size of ref's leading (batch) axis */
static GR__UNUSED gr_var *gr__batch_like(gr_var *x, gr_var *ref) {
    int axes[GR_MAX_NDIM], pat[GR_MAX_NDIM + 1], i;
    gr_var *r = ref, *z;
    if (!x || !ref) return NULL;
    for (i = 1; i < ref->ndim; i++) axes[i - 1] = i;
    if (ref->ndim > 1) r = gr_sum_axes(ref, ref->ndim - 1, axes, 0);     /* (B,) */
    z = gr_zeros_like(r);
    if (z && z->dtype != x->dtype) z = gr_cast(z, (gr_dtype)x->dtype);
    pat[0] = 0;
    for (i = 0; i < x->ndim; i++) pat[i + 1] = GR_NEWAXIS;
    z = z ? gr__dimshuffle(z, x->ndim + 1, pat, 0) : NULL;               /* (B, 1, ..., 1) */
    pat[0] = GR_NEWAXIS;
    for (i = 0; i < x->ndim; i++) pat[i + 1] = i;
    return z ? gr_add(z, gr__dimshuffle(x, x->ndim + 1, pat, 0)) : NULL;
}
#ifndef GR_NO_SCAN
/* x with its first two axes swapped */
static gr_var *gr__swap01(gr_var *x) {
    int pat[GR_MAX_NDIM], i;
    if (!x) return NULL;
    pat[0] = 1; pat[1] = 0;
    for (i = 2; i < x->ndim; i++) pat[i] = i;
    return gr__dimshuffle(x, x->ndim, pat, 0);
}

typedef struct gr__batch_ctx {
    const gr__scan_def *d;
    const unsigned char *bin_b;          /* per body input: batched */
    const unsigned char *out_b;          /* per output: batched */
} gr__batch_ctx;

static gr_status gr__batch_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    gr__batch_ctx *c = (gr__batch_ctx *)user;
    const gr__scan_def *d = c->d;
    gr_graph *ig = d->ig;
    gr_var **map = NULL, **seed = NULL, **roots = NULL, **vo = NULL, *ref = NULL;
    uint8_t *isb = NULL, *ob = NULL;
    int i, j;
    gr_status st = GR_ERR_NOMEM;
    map = (gr_var **)gr__calloc((size_t)ig->n_vars + 1, sizeof(gr_var *));
    seed = (gr_var **)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_var *));
    roots = (gr_var **)gr__calloc((size_t)d->n_bout + 1, sizeof(gr_var *));
    vo = (gr_var **)gr__calloc((size_t)d->n_bout + 1, sizeof(gr_var *));
    isb = (uint8_t *)gr__calloc((size_t)d->n_bin + 1, 1);
    ob = (uint8_t *)gr__calloc((size_t)d->n_bout + 1, 1);
    if (!map || !seed || !roots || !vo || !isb || !ob) goto nomem;
    /* the body, on stand-ins of its inputs' unbatched types, then vectorised onto the step's inputs */
    for (i = 0; i < d->n_bin; i++) {
        if (!(seed[i] = map[d->bin[i]->id] = gr__new_var(g, d->bin[i]->dtype, d->bin[i]->ndim, gr__vshape(d->bin[i]), GR__VK_INPUT))) goto failed;
        isb[i] = c->bin_b[i];
        if (isb[i] && !ref) ref = in[i];
    }
    if ((st = gr__scan_clone(d, g, map, roots)) != GR_OK) goto done;
    if ((st = gr__vectorize(g, d->n_bin, seed, in, isb, d->n_bout, roots, vo, ob)) != GR_OK) goto done;
    for (j = 0; j < d->n_out; j++) {
        out[j] = vo[j];
        if (c->out_b[j] && !ob[j]) out[j] = gr__batch_like(vo[j], ref);     /* a batched state's step */
        if (!out[j]) goto failed;
    }
    if (d->has_until) {
        if (ob[d->n_out]) { st = gr__error(g, GR_ERR_GRAD_NOT_IMPLEMENTED, "gr_scan '%s': its until condition would differ from row to row of a batch", d->name); goto done; }
        *until = vo[d->n_out];
    }
    st = GR_OK;
    goto done;
failed:
    st = g->status != GR_OK ? g->status : GR_ERR_NOMEM;
    goto done;
nomem:
    st = gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (batching)", d->name);
done:
    GR_FREE(map); GR_FREE(seed); GR_FREE(roots); GR_FREE(vo); GR_FREE(isb); GR_FREE(ob);
    return st;
}

/* which outputs depend on the batched body inputs (data, not derivatives: through every node, and
   the states' recurrence) */
static void gr__scan_batched_outputs(const gr__scan_def *d, unsigned char *bin_b, unsigned char *out_b, unsigned char *reach) {
    gr_graph *ig = d->ig;
    uint32_t k;
    int i, j, s, t, changed;
    do {
        changed = 0;
        memset(reach, 0, (size_t)ig->n_vars);
        for (i = 0; i < d->n_bin; i++) reach[d->bin[i]->id] = bin_b[i];
        for (k = 0; k < ig->n_nodes; k++) {
            gr_node *node = ig->nodes[k];
            int any = 0;
            for (i = 0; i < node->n_in && !any; i++) any = reach[gr__in(node)[i]->id];
            for (j = 0; any && j < node->n_out; j++) reach[gr__out(node)[j]->id] = 1;
        }
        for (j = 0; j < d->n_bout; j++) if (reach[d->bout[j]->id] && !out_b[j]) { out_b[j] = 1; changed = 1; }
        for (s = 0; s < d->n_state; s++)     /* a batched output batches its state's taps */
            if (out_b[d->st_out[s]])
                for (t = 0; t < d->st_ntaps[s]; t++)
                    if (!bin_b[d->st_at[s] + t]) { bin_b[d->st_at[s] + t] = 1; changed = 1; }
    } while (changed);
}

static gr_status gr__Scan_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    const gr__scan_def *d = gr__sdef(node);
    gr_graph *g = node->graph;
    gr__batch_ctx c;
    gr__scan_spec sp;
    unsigned char *bin_b = NULL, *out_b = NULL, *reach = NULL;
    gr_var **seq = NULL, **init = NULL, **vals = NULL, **off = NULL, **res = NULL, *ref = NULL;
    int *ntaps = NULL, *dir = NULL, *ontaps = NULL, i, j, s, t;
    const int **taps = NULL, **otaps = NULL;
    gr_status st = GR_ERR_NOMEM;
    for (j = 0; j < node->n_out; j++) out[j] = NULL;
    bin_b = (unsigned char *)gr__calloc((size_t)d->n_bin + 1, 1);
    out_b = (unsigned char *)gr__calloc((size_t)d->n_bout + 1, 1);
    reach = (unsigned char *)gr__calloc((size_t)d->ig->n_vars + 1, 1);
    seq = (gr_var **)gr__calloc((size_t)d->n_seq + 1, sizeof(gr_var *));
    off = (gr_var **)gr__calloc((size_t)d->n_seq + 1, sizeof(gr_var *));
    ntaps = (int *)gr__calloc(2u * (size_t)d->n_seq + 1, sizeof(int));
    taps = (const int **)gr__calloc((size_t)d->n_seq + 1, sizeof(int *));
    init = (gr_var **)gr__calloc((size_t)d->n_out + 1, sizeof(gr_var *));
    ontaps = (int *)gr__calloc((size_t)d->n_out + 1, sizeof(int));
    otaps = (const int **)gr__calloc((size_t)d->n_out + 1, sizeof(int *));
    vals = (gr_var **)gr__calloc((size_t)(d->n_val + d->n_state) + 1, sizeof(gr_var *));
    res = (gr_var **)gr__calloc((size_t)d->n_out + 2, sizeof(gr_var *));
    if (!bin_b || !out_b || !reach || !seq || !off || !ntaps || !taps || !init || !ontaps || !otaps || !vals || !res) goto nomem;
    dir = ntaps + d->n_seq;
    for (i = 0; i < node->n_in; i++)
        if (batched[i] && i < gr__scan_i_seq(d))
            return gr__error(g, GR_ERR_GRAD_NOT_IMPLEMENTED, "gr_scan '%s': its number of steps would differ from row to row of a batch", d->name);
    for (i = 0; i < node->n_in && !ref; i++) if (batched[i]) ref = in[i];
    for (i = 0; i < d->n_seq; i++)
        for (t = 0; t < d->seq_ntaps[i]; t++) bin_b[d->seq_at[i] + t] = batched[gr__scan_i_seq(d) + i];
    for (s = 0; s < d->n_state; s++)
        for (t = 0; t < d->st_ntaps[s]; t++) bin_b[d->st_at[s] + t] = batched[gr__scan_i_init(d) + s];
    for (i = 0; i < d->n_val; i++) bin_b[gr__scan_b_val(d) + i] = batched[gr__scan_i_val(d) + i];
    gr__scan_batched_outputs(d, bin_b, out_b, reach);
    for (i = 0; i < d->n_seq; i++) {
        int at = gr__scan_i_seq(d) + i;
        seq[i] = batched[at] ? gr__swap01(in[at]) : in[at];
        off[i] = d->seq_off[i] >= 0 ? in[gr__scan_i_off(d) + d->seq_off[i]] : NULL;
        dir[i] = d->seq_dir[i];
        ntaps[i] = d->seq_ntaps[i];
        taps[i] = d->taps + d->seq_at[i];
        if (!seq[i]) goto failed;
    }
    for (j = 0; j < d->n_out; j++) {
        s = d->out_state[j];
        if (s < 0) continue;
        {
            int at = gr__scan_i_init(d) + s, sit = d->st_ntaps[s] == 1 && d->taps[d->st_at[s]] == -1;
            gr_var *x0 = in[at];
            if (out_b[j] && !batched[at]) x0 = sit ? gr__batch_like(x0, ref) : gr__swap01(gr__batch_like(x0, ref));
            else if (batched[at] && !sit) x0 = gr__swap01(x0);      /* (B, rows, *s) -> (rows, B, *s) */
            init[j] = x0;
            ontaps[j] = d->st_ntaps[s];
            otaps[j] = d->taps + d->st_at[s];
            if (!x0) goto failed;
        }
    }
    for (i = 0; i < d->n_val; i++) vals[i] = in[gr__scan_i_val(d) + i];
    c.d = d;
    c.bin_b = bin_b;
    c.out_b = out_b;
    memset(&sp, 0, sizeof sp);
    sp.n_seq = d->n_seq; sp.seq = seq; sp.seq_ntaps = ntaps; sp.seq_taps = taps; sp.seq_dir = dir; sp.seq_off = off;
    sp.n_out = d->n_out; sp.init = init; sp.out_ntaps = ontaps; sp.out_taps = otaps; sp.out_last = d->out_last;
    sp.n_val = d->n_val; sp.val = vals;
    sp.n_steps = d->has_n_steps ? in[0] : NULL;
    sp.truncate = d->truncate;
    sp.checkpoints = d->checkpoints;
    sp.name = d->name;
    sp.step = gr__batch_step;
    sp.user = &c;
    if ((st = gr__scan_make(g, &sp, res)) != GR_OK) goto done;
    for (j = 0; j < d->n_out; j++) {
        out[j] = out_b[j] && !d->out_last[j] ? gr__swap01(res[j]) : res[j];
        if (!out[j]) goto failed;
    }
    out[d->n_out] = res[d->n_out];
    st = GR_OK;
    goto done;
failed:
    st = g->status != GR_OK ? g->status : GR_ERR_NOMEM;
    goto done;
nomem:
    st = gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (batching)", d->name);
done:
    GR_FREE(bin_b); GR_FREE(out_b); GR_FREE(reach); GR_FREE(seq); GR_FREE(off); GR_FREE(ntaps); GR_FREE(taps);
    GR_FREE(init); GR_FREE(ontaps); GR_FREE(otaps); GR_FREE(vals); GR_FREE(res);
    return st;
}

/* ---- what a compiled function reads: an output read only at its last row keeps that row alone, a
   history read behind its initial value keeps it in front ------------------------------------------ */

/* x is the initial value x0 of a state as one row, x0[None]: a dimshuffle of x0 putting a new axis
   in front, or a constant holding x0's constant values in that shape */
static int gr__scan_is_row_of(const gr_var *x, const gr_var *x0) {
    const gr_node *w = gr__owner(x);
    if (x->ndim != x0->ndim + 1 || x->dtype != x0->dtype) return 0;
    if (w && w->op == &gr__op_DimShuffle && gr__in(w)[0] == x0) {
        const gr__dimshuffle_params *dp = (const gr__dimshuffle_params *)gr__params(w);
        int k;
        if (dp->n != x0->ndim + 1 || dp->pattern[0] != GR_NEWAXIS) return 0;
        for (k = 0; k < x0->ndim; k++) if (dp->pattern[k + 1] != k) return 0;
        return 1;
    }
    if (!w && x->kind == GR__VK_CONST && x0->kind == GR__VK_CONST) {
        const gr_array *a = (const gr_array *)gr__ext(x), *b = (const gr_array *)gr__ext(x0);
        return a->size == b->size && a->shape[0] == 1 && memcmp(a->data, b->data, (size_t)a->size * gr__dsize(a->dtype)) == 0;
    }
    return 0;
}

/* a reader r of output j (state s) joins the state's initial value and j's rows: [x0[None]; out_j] */
static int gr__scan_front_join(const gr_node *node, int s, const gr_node *r, const gr_var *o) {
    const gr__scan_def *d = gr__sdef(node);
    return r->op == &gr__op_Join && r->n_in == 2 && gr__in(r)[1] == o && gr__out(r)[0]->ndim == o->ndim &&
           ((const gr__join_params *)gr__params(r))->axis == -o->ndim && gr__scan_is_row_of(gr__in(r)[0], gr__in(node)[gr__scan_i_init(d) + s]);
}

/* gr_function (src/function.c, gr__fn_narrow) shows each loop the readers of its outputs:
   - an output that the function does not return and whose every reader takes its last row
     (gr_index(r, 0, -1)) is kept as LAST: its readers read the narrowed output instead (Aesara's
     scan_save_mem): a loop whose last state only is read holds one row, not one a step;
   - an output of a plain state (one tap, -1) that the function does not return and that a reader
     joins behind the state's initial value ([x0[None]; r], the history a gradient's loop reads) is
     kept with x0 as row 0: those readers read it instead, the others the view of its rows from 1,
     and the history is not copied.
   The loop is made again with those outputs changed. */
static gr_status gr__Scan_narrow(gr_node *node, const gr__readers *rd, gr_var **map) {
    const gr__scan_params *p = (const gr__scan_params *)gr__params(node);
    const gr__scan_def *d = p->def;
    gr__scan_params np = *p;
    gr_var *outs_stack[16], **outs = outs_stack;
    int j, k;
    gr_status st;
    for (j = 0; j < d->n_out && j < 64; j++) {
        gr_var *o = gr__out(node)[j];
        int n = 0, ok = !d->out_last[j] && !rd->root[o->id - rd->base], s = d->out_state[j], joins = 0;
        for (k = rd->first[o->id - rd->base]; ok && k >= 0; k = rd->next[k]) {
            const gr_node *r = rd->node[k];
            const gr__view_params *vp = (const gr__view_params *)gr__params(r);
            ok = r->op == &gr__op_Index && vp->axis == 0 && vp->start == -1;
            n++;
        }
        if (ok && n > 0) np.narrowed |= (uint64_t)1 << j;
        else if (!d->out_last[j] && !rd->root[o->id - rd->base] && s >= 0 && d->st_ntaps[s] == 1 && d->taps[d->st_at[s]] == -1) {
            for (k = rd->first[o->id - rd->base]; k >= 0; k = rd->next[k]) joins += gr__scan_front_join(node, s, rd->node[k], o);
            if (joins) np.front |= (uint64_t)1 << j;
        }
    }
    if (np.narrowed == p->narrowed && np.front == p->front) return GR_OK;
    if (node->n_out > 16 && !(outs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)node->n_out)))
        return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
    np.rt = NULL;
    st = gr__make_node_n(node->graph, &gr__op_Scan, &np, sizeof np, node->n_in, gr__in(node), node->n_out, outs);
    for (j = 0; st == GR_OK && j < node->n_out; j++) {
        gr_var *o = gr__out(node)[j];
        map[o->id - rd->base] = outs[j];
        if (j < 64 && ((np.narrowed >> j) & 1u))    /* its readers read the narrowed output itself */
            for (k = rd->first[o->id - rd->base]; k >= 0; k = rd->next[k]) map[gr__out(rd->node[k])[0]->id - rd->base] = outs[j];
        if (j < 64 && ((np.front >> j) & 1u) && !((p->front >> j) & 1u)) {   /* the joins read it, the others its rows from 1 */
            int others = 0;
            for (k = rd->first[o->id - rd->base]; k >= 0; k = rd->next[k]) {
                if (gr__scan_front_join(node, d->out_state[j], rd->node[k], o)) map[gr__out(rd->node[k])[0]->id - rd->base] = outs[j];
                else others = 1;
            }
            if (others && !(map[o->id - rd->base] = gr_slice(outs[j], 0, 1, GR_OPEN, 1))) st = node->graph->status != GR_OK ? node->graph->status : GR_ERR_NOMEM;
        }
    }
    if (outs != outs_stack) GR_FREE(outs);
    return st;
}
#endif /* GR_NO_SCAN */

/* ==== ops/ifelse.c: generated region; edit ops/ifelse.c, then run make gradient.h ==== */
/* ops/ifelse.c: lazy conditionals (gr_ifelse, after aesara.ifelse).

   IfElse (cond, a, b) -> cond ? a : b, one node per pair: cond is 0-d (nonzero is true, -0.0 false,
   NaN true); a and b have one dtype and ndim and may differ in shape (the result has the shape of
   the side taken). The op is LAZY (src/impl.c): a compiled function gives every node the region of
   the conditionals' sides that read it and runs it only when that side is taken (src/function.c,
   src/call.c), and the gradient driver keeps a side's backward nodes inside it (src/grad.c): the
   rule below hands the output gradient to both sides as it is, and the driver makes it zero where
   it leaves a side untaken (Aesara's ifelse(cond, g, zeros), without computing zeros of an untaken
   value).

   Shapes: cond (), a (*s), b (*t) -> (*s) when cond is true, (*t) otherwise. */

#ifndef GR_NO_IFELSE                  /* ops/table.h, op families: the whole file */

/* out[i] = cond ? a_i : b_i; a weak constant on one side takes the other side's dtype */
GR_API gr_status gr_ifelse(gr_var *cond, int n, gr_var *const *then_vals, gr_var *const *else_vals, gr_var **out) {
    gr_graph *g = cond ? cond->graph : NULL;
    int i;
    if (out) for (i = 0; i < n; i++) out[i] = NULL;
    for (i = 0; !g && then_vals && i < n; i++) if (then_vals[i]) g = then_vals[i]->graph;
    for (i = 0; !g && else_vals && i < n; i++) if (else_vals[i]) g = else_vals[i]->graph;
    if (!g) return GR_ERR_VALUE;
    if (n < 0) return gr__error(g, GR_ERR_VALUE, "gr_ifelse: n is %d", n);
    if (n == 0) return GR_OK;
    if (!out || !then_vals || !else_vals)
        return gr__error(g, GR_ERR_VALUE, "gr_ifelse: %s is NULL", !out ? "out" : !then_vals ? "then_vals" : "else_vals");
    if (!cond) return g->status != GR_OK ? g->status : gr__error(g, GR_ERR_VALUE, "gr_ifelse: the condition is NULL");
    if (cond->graph != g) return gr__error(g, GR_ERR_VALUE, "gr_ifelse: the condition %s belongs to another graph", gr__d(cond).s);
    if (gr__is_marker(cond)) return gr__error(g, GR_ERR_TYPE, "gr_ifelse: the condition is a gradient marker, not a value");
    if (cond->ndim != 0) return gr__error(g, GR_ERR_TYPE, "gr_ifelse: the condition %s must be 0-d, not %d-d", gr__d(cond).s, cond->ndim);
    for (i = 0; i < n; i++) {
        gr_var *a = then_vals[i], *b = else_vals[i];
        if (!a || !b)
            return g->status != GR_OK ? g->status : gr__error(g, GR_ERR_VALUE, "gr_ifelse: %s[%d] is NULL", !a ? "then_vals" : "else_vals", i);
        if (a->graph != g || b->graph != g)
            return gr__error(g, GR_ERR_VALUE, "gr_ifelse: %s[%d] (%s) belongs to another graph", a->graph != g ? "then_vals" : "else_vals", i,
                             gr__d(a->graph != g ? a : b).s);
        if (gr__is_marker(a) || gr__is_marker(b))
            return gr__error(g, GR_ERR_TYPE, "gr_ifelse: %s[%d] is a gradient marker, not a value", gr__is_marker(a) ? "then_vals" : "else_vals", i);
        if (a->ndim != b->ndim || (a->dtype != b->dtype && !gr__is_weak(a) && !gr__is_weak(b)))
            return gr__error(g, GR_ERR_TYPE, "gr_ifelse: pair %d differs: then value %s is %s with %d dimensions, else value %s is %s with %d",
                             i, gr__d(a).s, gr_dtype_name((gr_dtype)a->dtype), a->ndim, gr__d(b).s, gr_dtype_name((gr_dtype)b->dtype), b->ndim);
    }
    for (i = 0; i < n; i++) {
        gr_var *in[3];
        in[0] = cond;
        in[1] = then_vals[i];
        in[2] = else_vals[i];
        if (in[1]->dtype != in[2]->dtype) {          /* one side is a weak constant */
            if (gr__is_weak(in[1]) && !gr__is_weak(in[2])) in[1] = gr__coerce(in[1], in[2]->dtype);
            else in[2] = gr__coerce(in[2], in[1]->dtype);
        }
        if (!(out[i] = gr__node1(g, &gr__op_IfElse, NULL, 0, 3, in))) break;
    }
    if (i < n) {
        for (i = 0; i < n; i++) out[i] = NULL;
        return g->status != GR_OK ? g->status : gr__error(g, GR_ERR_NOMEM, "gr_ifelse: out of memory");
    }
    return GR_OK;
}

/* one IfElse node (the rules' builder) */
static gr_var *gr__ifelse1(gr_var *cond, gr_var *a, gr_var *b) {
    gr_var *r = NULL;
    return gr_ifelse(cond, 1, &a, &b, &r) == GR_OK ? r : NULL;
}

/* the static shape: what both sides agree on */
static gr_status gr__IfElse_infer(const gr_node *node, gr_type *out) {
    const gr_var *a = gr__in(node)[1], *b = gr__in(node)[2];
    int d;
    out[0].dtype = (gr_dtype)a->dtype;
    out[0].ndim = a->ndim;
    for (d = 0; d < a->ndim; d++) out[0].shape[d] = gr__vshape(a)[d] == gr__vshape(b)[d] ? gr__vshape(a)[d] : -1;
    return GR_OK;
}

/* the side taken (the condition is computed when this is asked: gr_call runs such a function step by step) */
static int gr__ifelse_taken(const gr_array *cond) { return gr__load(cond->dtype, cond->data, 0) != 0; }

static gr_status gr__IfElse_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[gr__ifelse_taken(in[0]) ? 1 : 2];
    int d;
    (void)node;
    for (d = 0; d < x->ndim; d++) out[0]->shape[d] = x->shape[d];
    return GR_OK;
}

static gr_status gr__IfElse_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[gr__ifelse_taken(in[0]) ? 1 : 2];
    (void)node;
    if (x->size && x->data != out[0]->data) memcpy(out[0]->data, x->data, (size_t)x->size * gr__dsize(x->dtype));
    return GR_OK;
}

/* Each side receives the output gradient as it is: valid where that side is taken, and the driver
   (src/grad.c) makes a term zero where it leaves the side (ifelse(cond, g, zeros like the variable
   it reaches)), so that the side's backward nodes run only when it is taken. The condition gets
   real zeros (Aesara's condition.zeros_like()). */
static gr_status gr__IfElse_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    int k;
    if (!(ig[0] = gr__zeros_grad(gr__in(node)[0]))) return node->graph->status;
    for (k = 1; k <= 2; k++) {
        gr_var *x = gr__in(node)[k];
        if (gr_is_disconnected(og[0])) ig[k] = gr_disconnected_like(x);
        else if (!gr__is_float(gr__out(node)[0]->dtype)) ig[k] = gr__zeros_grad(x);
        else ig[k] = og[0];
        if (!ig[k]) return node->graph->status;
    }
    return GR_OK;
}

/* R-op: ifelse(cond, R_a, R_b); a side without a tangent gives zeros like its value (computed on
   that side only) */
static gr_status gr__IfElse_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *t[3];
    int k;
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || (gr_is_disconnected(ev[1]) && gr_is_disconnected(ev[2]))) return GR_OK;
    for (k = 1; k <= 2; k++) {
        t[k] = gr_is_disconnected(ev[k]) ? gr__zeros_grad(gr__in(node)[k]) : ev[k];
        if (t[k] && t[k]->dtype != gr__out(node)[0]->dtype) t[k] = gr_cast(t[k], (gr_dtype)gr__out(node)[0]->dtype);
    }
    orop[0] = gr__ifelse1(gr__in(node)[0], t[1], t[2]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* batched sides: the other side gains the batch axis too; a batched condition (one per row) is
   applied row by row */
static gr_status gr__IfElse_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr_var *a = in[1], *b = in[2];
    if (batched[0]) return gr__map_batch(node, in, batched, out);
    if (batched[1] && !batched[2]) b = gr__batch_like(b, a);
    if (batched[2] && !batched[1]) a = gr__batch_like(a, b);
    out[0] = gr__ifelse1(in[0], a, b);
    return out[0] ? GR_OK : node->graph->status;
}

/* the shape of a side when both sides have it in every call */
static void gr__IfElse_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    if (gr__sig_same(rw, gr__in(node)[1], gr__in(node)[2])) gr__sig_copy(rw, gr__in(node)[1], out);
}

/* a constant condition chooses its side; ifelse(c, ifelse(c, a, b), ifelse(c, d, e)) -> ifelse(c, a, e);
   ifelse(c, a, a) -> a (the same shape whichever side) */
static gr_var *gr__IfElse_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    gr_var *ins[3];
    int k, changed = 0;
    (void)params;
    if (in[0]->kind == GR__VK_CONST)
        return gr__replaced(done, in[gr_array_get((const gr_array *)gr__ext(in[0]), 0) != 0 ? 1 : 2]);
    if (in[1] == in[2]) return gr__replaced(done, in[1]);
    ins[0] = in[0];
    for (k = 1; k <= 2; k++) {
        const gr_node *n = gr__owner(in[k]);
        ins[k] = in[k];
        if (n && n->op == op && gr__in(n)[0] == in[0]) { ins[k] = gr__in(n)[k]; changed = 1; }
    }
    if (!changed) return NULL;
    return gr__replaced(done, gr__rw1(rw, op, NULL, 0, 3, ins));
}

#else /* GR_NO_IFELSE: the gradient driver names gr_ifelse (src/grad.c), only for nodes of IfElse */
GR_API gr_status gr_ifelse(gr_var *cond, int n, gr_var *const *then_vals, gr_var *const *else_vals, gr_var **out) {
    int i;
    for (i = 0; out && i < n; i++) out[i] = NULL;
    (void)then_vals; (void)else_vals;
    if (!cond) return GR_ERR_VALUE;
    return gr__error(cond->graph, GR_ERR_VALUE, "gr_ifelse: gradient.h was built without conditionals (GR_NO_IFELSE)");
}
#endif /* GR_NO_IFELSE */

/* ==== ops/graphop.c: generated region; edit ops/graphop.c, then run make gradient.h ==== */
/* ops/graphop.c: ops made of graphs (gr_op_from_graph, after Aesara's OpFromGraph).

   gr_op_from_graph copies the part of the user's graph that the outputs need into a graph of its
   own (the op's gr__gop_def, counted: every graph and compiled function applying the op holds a
   reference, gr_op_free drops the caller's). Shared variables read there become inputs of that
   inner graph too (implicit inputs): a node applying the op takes the operands, then the shared
   variables themselves, so that their current value is read at every call and gr_grad with
   respect to one reaches through the node. Ops made of graphs met in the copy are copied as nodes,
   or, when inlined, replaced by their own inner nodes: an inner graph never holds an inlined op.

   Inputs of an OpFromGraph node:  the operands (n_in), then the shared variables read (n_sh)
   Outputs:                        the inner graph's outputs (n_out)
   Shapes: every output's shape comes from the inner graph's shape rules on the operands' shapes
   (nothing runs); an inner graph holding a loop or a conditional gives shapes only by running (the
   dynamic variant, gr__op_OpFromGraphDyn).

   Running: not inlined, each compiled function compiles the inner graph once, shared by the nodes
   applying the op (OpFromGraph's runtime state); inlined (opts->inline_graph), gr_function puts the
   inner nodes in place of the node before its rewrites (gr__gop_expand).
   Derivatives: a user's gradient and R-op rules (overrides) are called on the node; otherwise the
   gradient is another op made of a graph, the inner graph's vector-Jacobian product (inputs: the
   operands and shared variables, then one seed per float output), and the R-op likewise (the
   operands and shared variables, then one tangent per float input); both are made on first use
   and kept by the op. With a gradient override alone the R-op is its double pullback. */

#ifndef GR_NO_GRAPHOP                  /* ops/table.h, op families: the whole file */

typedef struct gr__gop_def gr__gop_def;
typedef struct gr__gop_handle { gr_op_def op; gr__gop_def *def; } gr__gop_handle;   /* op first: the user's pointer */

struct gr__gop_def {
    gr__graphop head;                    /* first: counted; the connection pattern (n_in + n_sh) x n_out */
    gr__gop_handle handle;               /* what gr_op_from_graph returns */
    gr_graph *ig;                        /* the inner graph */
    int n_in, n_sh, n_out;
    gr_var **bin, **bout;                /* in ig: n_in + n_sh inputs, n_out outputs */
    gr_node **order;                     /* the inner nodes the outputs need, in order */
    uint32_t n_order;
    gr__storage **sh;                    /* the shared variables read (a reference each) */
    gr_var **sh_var; uint32_t *sh_id;    /* per shared variable: the one the last application read, and its
                                            id (checked against the graph before it is read again) */
    int inline_graph, dynamic;
    gr_graph_op_rule grad, rop;
    void *grad_user, *rop_user;
    gr__gop_def *gdef, *rdef;            /* the derived gradient and R-op ops, made on first use */
    int *g_at;                           /* per input: its gradient's output of gdef; -1 none, -2 null */
    int *r_at;                           /* per output: its tangent's output of rdef; -1 none */
    int g_made, r_made;
    char name[64];
};

typedef struct gr__gop_fn { int refs; gr_fn *f; } gr__gop_fn;   /* one compiled inner graph, shared */
typedef struct gr__gop_rt {
    gr__gop_fn *fn;
    const gr_array **res;                /* the inner function's results */
    void **buf; size_t *cap;             /* the dynamic variant's outputs */
} gr__gop_rt;
typedef struct gr__gop_params { gr__gop_def *def; gr__gop_rt *rt; } gr__gop_params;

static gr__gop_def *gr__gdef(const gr_node *node) { return ((const gr__gop_params *)gr__params(node))->def; }
static gr__gop_rt *gr__grt(const gr_node *node) { return ((const gr__gop_params *)gr__params(node))->rt; }

/* the variant of the row whose shapes are known only by running (an inner loop): the row's rules
   and code, with DYNSHAPE */
static const struct gr__builtin gr__builtin_OpFromGraphDyn = { GR__OP_OpFromGraph, GR__OPF_GRAPHOP_RUNTIME | GR__OPF_DYNSHAPE,
                                                                gr__none_alias, gr__OpFromGraph_batch };
static const gr_op_def gr__op_OpFromGraphDyn = { "OpFromGraph", -1, -1, gr__OpFromGraph_infer, gr__OpFromGraph_shape, NULL,
                                                 gr__OpFromGraph_perform, gr__OpFromGraph_grad, gr__OpFromGraph_rop,
                                                 &gr__builtin_OpFromGraphDyn };
/* what a handle carries: it is no node's op (gr_apply makes the node) */
static gr_status gr__gop_handle_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)in; (void)out;
    return gr_node_error(node, GR_ERR_VALUE, "an op made of a graph runs as an OpFromGraph node");
}
static const struct gr__builtin gr__gop_handle_builtin = { GR__OP_OpFromGraph, GR__OPF_GRAPHOP, gr__none_alias, gr__map_batch };

static gr_status gr__rewrite_node(gr__rewriter *rw, const gr_node *node, gr_var **ins, gr_var **outs);
static gr_status gr__vectorize(gr_graph *g, int n_seed, gr_var *const *seed, gr_var *const *seed_b, const uint8_t *seed_isb,
                               int n, gr_var *const *roots, gr_var **out, uint8_t *out_b);
static gr_status gr__rop_by_pullback(const gr_node *node, gr_var *const *ev, gr_var **orop);
static gr_status gr__fn_out_shapes(gr_fn *f, const gr_array *const *inputs, gr_array *const *out);
static gr_var *gr__gop_leaf(gr_graph *g, gr__gop_def *d, gr_var *x, gr_var **map, int *cap_sh);

static void gr__gop_destroy(gr__graphop *o) {
    gr__gop_def *d = (gr__gop_def *)o;
    int k;
    gr_graph_free(d->ig);
    for (k = 0; d->sh && k < d->n_sh; k++) gr__storage_release(d->sh[k]);
    if (d->gdef && --d->gdef->head.refs == 0) d->gdef->head.destroy(&d->gdef->head);
    if (d->rdef && --d->rdef->head.refs == 0) d->rdef->head.destroy(&d->rdef->head);
    GR_FREE(d->head.conn);
    GR_FREE(d->bin); GR_FREE(d->bout); GR_FREE(d->order); GR_FREE(d->sh); GR_FREE(d->g_at); GR_FREE(d->r_at);
    GR_FREE(d->sh_var); GR_FREE(d->sh_id);
    GR_FREE(d);
}

GR_API void gr_op_free(gr_op_def *op) {
    gr__gop_def *d;
    if (!op || op->builtin != &gr__gop_handle_builtin) return;
    d = ((gr__gop_handle *)op)->def;
    if (--d->head.refs == 0) d->head.destroy(&d->head);
}

/* the inner graph under its node (src/print.c) */
static void gr__gop_print(gr__printer *p, const gr__graphop *o) {
    const gr__gop_def *d = (const gr__gop_def *)o;
    gr__print_inner(p, "graph", d->n_in + d->n_sh, d->bin, d->n_out, d->bout, d->n_sh ? "the last inputs: shared variables" : NULL);
}

/* ---- copying the inner graph --------------------------------------------------------------------- */

/* d's inner nodes made again on ins (n_in + n_sh variables): in dst (rw NULL), or through the
   rewriter of a compiled function (gr__rewrite_node: its rewrites see the inner nodes). out: the
   n_out outputs. Errors are recorded on dst (rw->cg). */
static gr_status gr__gop_clone(const gr__gop_def *d, gr_graph *dst, gr__rewriter *rw, gr_var *const *ins, gr_var **out) {
    gr_graph *ig = d->ig;
    gr_var **map = (gr_var **)gr__calloc((size_t)ig->n_vars + 1, sizeof(gr_var *)), **xs = NULL, **ys = NULL;
    int i, j, cap = 0;
    uint32_t k;
    gr_status st = GR_OK;
    if (rw) dst = rw->cg;
    if (!map) return gr__error(dst, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
    for (i = 0; i < d->n_in + d->n_sh; i++) map[d->bin[i]->id] = ins[i];
#define GR__GOP_MAP(x) (map[(x)->id] ? map[(x)->id] : (x)->kind == GR__VK_CONST ? \
    (map[(x)->id] = gr__constant(dst, (const gr_array *)gr__ext(x), (x)->flags)) : NULL)
    for (k = 0; k < d->n_order && st == GR_OK; k++) {
        gr_node *node = d->order[k];
        if (node->n_in > cap || node->n_out > cap) {
            cap = (node->n_in > node->n_out ? node->n_in : node->n_out) + 8;
            GR_FREE(xs); GR_FREE(ys);
            xs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)cap);
            ys = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)cap);
            if (!xs || !ys) { st = gr__error(dst, GR_ERR_NOMEM, "op '%s': out of memory", d->name); break; }
        }
        for (i = 0; i < node->n_in; i++) if (!(xs[i] = GR__GOP_MAP(gr__in(node)[i]))) break;
        if (i < node->n_in) { st = dst->status != GR_OK ? dst->status : gr__error(dst, GR_ERR_NOMEM, "op '%s': out of memory", d->name); break; }
        st = rw ? gr__rewrite_node(rw, node, xs, ys)
                : gr__make_node_n(dst, node->op, gr__params(node), node->params_size, node->n_in, xs, node->n_out, ys);
        for (j = 0; st == GR_OK && j < node->n_out; j++) map[gr__out(node)[j]->id] = ys[j];
    }
    for (j = 0; st == GR_OK && j < d->n_out; j++)
        if (!(out[j] = GR__GOP_MAP(d->bout[j]))) st = dst->status != GR_OK ? dst->status : gr__error(dst, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
#undef GR__GOP_MAP
    if (st != GR_OK && dst->status == GR_OK) gr__error(dst, st, "op '%s': copying its graph failed", d->name);
    GR_FREE(map); GR_FREE(xs); GR_FREE(ys);
    return st;
}

/* gr_function, inlining: the node's inner nodes in its place (rewritten as they are built) */
static gr_status gr__gop_expand(gr__rewriter *rw, const gr_node *node, gr_var *const *ins, gr_var **outs) {
    return gr__gop_clone(gr__gdef(node), NULL, rw, ins, outs);
}

/* which inputs reach which outputs in the inner graph (through each node's own pattern) */
static gr_status gr__gop_pattern(gr__gop_def *d, const unsigned char *user) {
    gr_graph *ig = d->ig;
    int n_all = d->n_in + d->n_sh, i, j, b;
    uint32_t k;
    unsigned char *reach = (unsigned char *)gr__calloc((size_t)ig->n_vars * (size_t)n_all + 1, 1);
    unsigned char *conn = (unsigned char *)gr__calloc((size_t)n_all * (size_t)d->n_out + 1, 1);
    if (!reach || !conn) { GR_FREE(reach); GR_FREE(conn); return GR_ERR_NOMEM; }
    for (b = 0; b < n_all; b++) reach[(size_t)d->bin[b]->id * (size_t)n_all + (size_t)b] = 1;
    for (k = 0; k < d->n_order; k++) {
        gr_node *node = d->order[k];
        int o;
        for (o = 0; o < node->n_out; o++)
            for (i = 0; i < node->n_in; i++) {
                const unsigned char *src = reach + (size_t)gr__in(node)[i]->id * (size_t)n_all;
                unsigned char *dst = reach + (size_t)gr__out(node)[o]->id * (size_t)n_all;
                if (!gr__connected(node, i, o)) continue;
                for (b = 0; b < n_all; b++) dst[b] |= src[b];
            }
    }
    for (j = 0; j < d->n_out; j++)
        for (b = 0; b < n_all; b++) conn[b * d->n_out + j] = reach[(size_t)d->bout[j]->id * (size_t)n_all + (size_t)b];
    if (user)                                        /* the user's pattern for the operands */
        for (i = 0; i < d->n_in; i++)
            for (j = 0; j < d->n_out; j++) conn[i * d->n_out + j] = user[i * d->n_out + j] != 0;
    GR_FREE(reach);
    d->head.conn = conn;
    return GR_OK;
}

/* the variable of g standing for shared variable k of d: the one the last application read when it
   is g's (its slot in g holds it), else the one g has, else a new one */
static gr_var *gr__gop_shared_in(gr_graph *g, gr__gop_def *d, int k) {
    gr__storage *s = d->sh[k];
    const char *name = gr__vname(d->bin[d->n_in + k]);
    uint32_t i = d->sh_id[k] - g->var_base;
    gr_var *v;
    if (d->sh_var[k] && d->sh_id[k] >= g->var_base && i < g->n_vars && g->vars[i] == d->sh_var[k] &&
        d->sh_var[k]->kind == GR__VK_SHARED && gr__ext(d->sh_var[k]) == (void *)s)
        return d->sh_var[k];
    for (i = 0, v = NULL; i < g->n_vars && !v; i++)
        if (g->vars[i] && g->vars[i]->kind == GR__VK_SHARED && gr__ext(g->vars[i]) == (void *)s) v = g->vars[i];
    if (!v) {
        if (!gr__grow((void **)&g->stores, &g->cap_stores, g->n_stores, sizeof(void *))) return gr__fail(g, GR_ERR_NOMEM, "out of memory");
        v = gr__new_var(g, s->value->dtype, s->value->ndim, s->value->shape, GR__VK_SHARED);
        if (!v) return NULL;
        v->u.ext = s;
        s->refs++;
        g->stores[g->n_stores++] = s;
        if (name && !gr__set_name(g, v, name)) return NULL;
    }
    d->sh_var[k] = v;
    d->sh_id[k] = v->id;
    return v;
}

/* ---- gr_op_from_graph -------------------------------------------------------------------------------- */

/* the operands are free variables of g and the outputs values of g; else the error is recorded on g: 1 */
static int gr__gop_bad_args(gr_graph *g, const char *name, int n_in, gr_var *const *inputs, int n_out, gr_var *const *outputs) {
    int i, j;
    for (i = 0; i < n_in; i++) {
        gr_var *x = inputs[i];
        if (!x) { gr__error(g, GR_ERR_VALUE, "gr_op_from_graph '%s': input %d is NULL", name, i); return 1; }
        if (x->graph != g) { gr__error(g, GR_ERR_VALUE, "gr_op_from_graph '%s': input %d (%s) belongs to another graph", name, i, gr__d(x).s); return 1; }
        if (x->kind != GR__VK_INPUT) {
            gr__error(g, gr__is_marker(x) ? GR_ERR_TYPE : GR_ERR_VALUE, "gr_op_from_graph '%s': input %d (%s) is %s", name, i, gr__d(x).s,
                      x->kind == GR__VK_CONST ? "a constant; inputs are free variables (gr_tensor)" :
                      x->kind == GR__VK_SHARED ? "a shared variable; those are read as they are, without being inputs" :
                      x->kind == GR__VK_OUT ? "computed; inputs are free variables (gr_tensor)" : "a gradient marker, not a value");
            return 1;
        }
    }
    for (j = 0; j < n_out; j++) {
        gr_var *y = outputs[j];
        if (!y) { gr__error(g, GR_ERR_VALUE, "gr_op_from_graph '%s': output %d is NULL", name, j); return 1; }
        if (y->graph != g) { gr__error(g, GR_ERR_VALUE, "gr_op_from_graph '%s': output %d (%s) belongs to another graph", name, j, gr__d(y).s); return 1; }
        if (gr__is_marker(y)) { gr__error(g, GR_ERR_TYPE, "gr_op_from_graph '%s': output %d is a gradient marker, not a value", name, j); return 1; }
    }
    return 0;
}

/* d's description: its name, counts, rules and handle (the inner graph not made yet) */
static void gr__gop_describe(gr__gop_def *d, const char *name, int n_in, int n_out, const gr_graph_op_opts *opts) {
    d->head.refs = 1;
    d->head.destroy = gr__gop_destroy;
    d->head.name = d->name;
    d->head.print = gr__gop_print;
    if (opts && opts->inline_graph) d->head.expand = gr__gop_expand;
    snprintf(d->name, sizeof d->name, "%s", name);
    d->n_in = n_in;
    d->n_out = n_out;
    d->inline_graph = opts && opts->inline_graph;
    if (opts) { d->grad = opts->grad; d->grad_user = opts->grad_user; d->rop = opts->rop; d->rop_user = opts->rop_user; }
    d->handle.def = d;
    d->handle.op.name = d->name;
    d->handle.op.n_in = n_in;
    d->handle.op.n_out = n_out;
    d->handle.op.perform = gr__gop_handle_perform;
    d->handle.op.builtin = &gr__gop_handle_builtin;
}

/* the error of a failed copy into d->ig, recorded on g */
static gr_status gr__gop_copy_failed(gr_graph *g, const gr__gop_def *d, const char *name) {
    gr_status st = d->ig->status != GR_OK ? d->ig->status : GR_ERR_NOMEM;
    gr__error(g, st, "gr_op_from_graph '%s': copying the graph: %s", name, d->ig->message[0] ? d->ig->message : "out of memory");
    return st;
}

/* the nodes of g the outputs need (given: the operands, by variable id) copied into d->ig, then the
   inner outputs; map: g's variable id -> its counterpart (the operands' already there). Errors are
   recorded on g. */
static gr_status gr__gop_copy(gr_graph *g, gr__gop_def *d, const char *name, int n_out, gr_var *const *outputs, const uint8_t *given,
                              gr_var **map) {
    gr_node **order = NULL;
    uint32_t n_order = 0, k;
    gr_var **xs = NULL, **ys = NULL;
    int i, j, cap = 0, cap_sh = 0;
    gr_status st = GR_OK;
    if (gr__needed_in_order(g, n_out, outputs, given, &order, &n_order) != GR_OK) return g->status != GR_OK ? g->status : GR_ERR_NOMEM;
    /* a leaf's counterpart: an input, a constant, or the stand-in of a shared variable (a new
       input of the inner graph, after the operands) */
#define GR__GOP_LEAF(x) (map[(x)->id] ? map[(x)->id] : gr__gop_leaf(g, d, x, map, &cap_sh))
    for (k = 0; k < n_order; k++) {
        gr_node *node = order[k];
        if (node->n_in > cap || node->n_out > cap) {
            cap = (node->n_in > node->n_out ? node->n_in : node->n_out) + 8;
            GR_FREE(xs); GR_FREE(ys);
            xs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)cap);
            ys = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)cap);
            if (!xs || !ys) { st = gr__error(g, GR_ERR_NOMEM, "gr_op_from_graph '%s': out of memory", name); goto done; }
        }
        for (i = 0; i < node->n_in; i++) if (!(xs[i] = GR__GOP_LEAF(gr__in(node)[i]))) goto leaf_failed;
        if ((gr__flags_of(node->op) & GR__OPF_GRAPHOP) && (*(gr__graphop *const *)gr__params(node))->expand) {
            if (gr__gop_clone(gr__gdef(node), d->ig, NULL, xs, ys) != GR_OK) goto inner;   /* an inlined op: its nodes */
        } else if (gr__make_node_n(d->ig, node->op, gr__params(node), node->params_size, node->n_in, xs, node->n_out, ys) != GR_OK)
            goto inner;
        for (j = 0; j < node->n_out; j++) {
            gr_var *o = gr__out(node)[j];
            map[o->id] = ys[j];
            if (gr__vname(o) && !gr__vname(ys[j]) && ys[j]->graph == d->ig && !gr__set_name(d->ig, ys[j], gr__vname(o))) goto inner;
        }
    }
    for (j = 0; j < n_out; j++) if (!(d->bout[j] = GR__GOP_LEAF(outputs[j]))) goto leaf_failed;
#undef GR__GOP_LEAF
    goto done;
leaf_failed:
    if (g->status != GR_OK) { st = g->status; goto done; }
inner:
    st = gr__gop_copy_failed(g, d, name);
done:
    GR_FREE(order); GR_FREE(xs); GR_FREE(ys);
    return st;
}

static gr_op_def *gr__gop_make(gr_graph *g, const char *name, int n_in, gr_var *const *inputs, int n_out, gr_var *const *outputs,
                               const gr_graph_op_opts *opts) {
    gr__gop_def *d = NULL;
    uint32_t k;
    uint8_t *given = NULL;
    gr_var **map = NULL;
    int i, j;
    if (!name) name = "op_from_graph";
    if (gr__gop_bad_args(g, name, n_in, inputs, n_out, outputs)) return NULL;
    given = (uint8_t *)gr__calloc((size_t)g->var_base + g->n_vars + 1, 1);      /* (by variable id) */
    map = (gr_var **)gr__calloc((size_t)g->var_base + g->n_vars + 1, sizeof(gr_var *));
    d = (gr__gop_def *)gr__calloc(1, sizeof(gr__gop_def));
    if (!given || !map || !d) goto nomem;
    for (i = 0; i < n_in; i++) {
        uint32_t id = inputs[i]->id;
        if (given[id]) {
            for (j = 0; inputs[j] != inputs[i]; j++) {}
            gr__error(g, GR_ERR_VALUE, "gr_op_from_graph '%s': %s is given twice (inputs %d and %d)", name, gr__d(inputs[i]).s, j, i);
            goto fail;
        }
        given[id] = 1;
    }
    gr__gop_describe(d, name, n_in, n_out, opts);
    d->ig = gr_graph_new();
    d->bin = (gr_var **)gr__calloc((size_t)n_in + 1, sizeof(gr_var *));
    d->bout = (gr_var **)gr__calloc((size_t)n_out + 1, sizeof(gr_var *));
    if (!d->ig || !d->bin || !d->bout) goto nomem;
    for (i = 0; i < n_in; i++) {
        gr_var *x = inputs[i];
        if (!(d->bin[i] = map[x->id] = gr__new_var(d->ig, x->dtype, x->ndim, gr__vshape(x), GR__VK_INPUT))) goto inner;
        if (gr__vname(x) && !gr__set_name(d->ig, d->bin[i], gr__vname(x))) goto inner;
    }
    if (gr__gop_copy(g, d, name, n_out, outputs, given, map) != GR_OK) goto fail;
    if (gr__needed_in_order(d->ig, n_out, d->bout, NULL, &d->order, &d->n_order) != GR_OK) goto inner;
    for (k = 0; k < d->n_order; k++)                 /* a loop's or a conditional's shapes: known by running */
        if (gr__flags_of(d->order[k]->op) & (GR__OPF_DYNSHAPE | GR__OPF_LAZY)) d->dynamic = 1;
    d->head.n_in = d->n_in + d->n_sh;
    d->head.n_out = n_out;
    d->g_at = (int *)gr__calloc((size_t)(d->n_in + d->n_sh) + 1, sizeof(int));
    d->r_at = (int *)gr__calloc((size_t)n_out + 1, sizeof(int));
    d->sh_var = (gr_var **)gr__calloc((size_t)d->n_sh + 1, sizeof(gr_var *));
    d->sh_id = (uint32_t *)gr__calloc((size_t)d->n_sh + 1, sizeof(uint32_t));
    if (!d->g_at || !d->r_at || !d->sh_var || !d->sh_id) goto nomem;
    if (gr__gop_pattern(d, opts ? opts->connection_pattern : NULL) != GR_OK) goto nomem;
    GR_FREE(given); GR_FREE(map);
    return &d->handle.op;
inner:
    gr__gop_copy_failed(g, d, name);
    goto fail;
nomem:
    gr__error(g, GR_ERR_NOMEM, "gr_op_from_graph '%s': out of memory", name);
fail:
    if (d) gr__gop_destroy(&d->head);
    GR_FREE(given); GR_FREE(map);
    return NULL;
}

/* the counterpart in d->ig of leaf x of g met in the copy (errors recorded on g; NULL) */
static gr_var *gr__gop_leaf(gr_graph *g, gr__gop_def *d, gr_var *x, gr_var **map, int *cap_sh) {
    gr_var *c;
    if (x->kind == GR__VK_CONST) c = gr__constant(d->ig, (const gr_array *)gr__ext(x), x->flags);
    else if (x->kind == GR__VK_SHARED) {             /* an implicit input, after the operands */
        int n = d->n_in + d->n_sh;
        int64_t shape[GR_MAX_NDIM];
        int a;
        if (d->n_sh + 1 > *cap_sh) {
            int ncap = 2 * *cap_sh + 4;
            gr__storage **sh = (gr__storage **)GR_REALLOC(d->sh, sizeof(gr__storage *) * (size_t)ncap);
            gr_var **bin;
            if (!sh) return gr__fail(g, GR_ERR_NOMEM, "gr_op_from_graph '%s': out of memory", d->name);
            d->sh = sh;
            bin = (gr_var **)GR_REALLOC(d->bin, sizeof(gr_var *) * (size_t)(d->n_in + ncap + 1));
            if (!bin) return gr__fail(g, GR_ERR_NOMEM, "gr_op_from_graph '%s': out of memory", d->name);
            d->bin = bin;
            *cap_sh = ncap;
        }
        for (a = 0; a < x->ndim; a++) shape[a] = -1;  /* (gr_shared_set may change its shape) */
        c = gr__new_var(d->ig, x->dtype, x->ndim, shape, GR__VK_INPUT);
        if (!c) return gr__fail(g, d->ig->status, "gr_op_from_graph '%s': %s", d->name, d->ig->message);
        if (gr__vname(x) && !gr__set_name(d->ig, c, gr__vname(x))) return gr__fail(g, GR_ERR_NOMEM, "gr_op_from_graph '%s': out of memory", d->name);
        d->bin[n] = c;
        d->sh[d->n_sh++] = (gr__storage *)gr__ext(x);
        ((gr__storage *)gr__ext(x))->refs++;
    } else if (x->kind == GR__VK_INPUT)
        return gr__fail(g, GR_ERR_VALUE, "gr_op_from_graph '%s': the outputs need %s, which is not among the inputs", d->name, gr__d(x).s);
    else return gr__fail(g, GR_ERR_TYPE, "gr_op_from_graph '%s': %s is a gradient marker, not a value", d->name, gr__d(x).s);
    if (!c) return gr__fail(g, d->ig->status != GR_OK ? d->ig->status : GR_ERR_NOMEM, "gr_op_from_graph '%s': out of memory", d->name);
    map[x->id] = c;
    return c;
}

GR_API gr_op_def *gr_op_from_graph(const char *name, int n_in, gr_var *const *inputs, int n_out, gr_var *const *outputs,
                                   const gr_graph_op_opts *opts) {
    gr_graph *g;
    if (!outputs || n_out < 1 || !outputs[0]) return NULL;
    g = outputs[0]->graph;
    if (n_in < 0 || (n_in > 0 && !inputs)) {
        gr__error(g, GR_ERR_VALUE, "gr_op_from_graph '%s': %s", name ? name : "op_from_graph", n_in < 0 ? "n_in is negative" : "inputs is NULL");
        return NULL;
    }
    return gr__gop_make(g, name, n_in, inputs, n_out, outputs, opts);
}

/* ---- applying it ---------------------------------------------------------------------------------- */

/* gr_apply of an op with the GRAPHOP flag (src/graph.c): a handle of gr_op_from_graph makes an
   OpFromGraph node on the operands and the shared variables read; other such ops are rows */
static gr_status gr__graph_op_apply(gr_graph *g, const gr_op_def *op, int n_in, gr_var *const *inputs, gr_var **outputs) {
    gr__gop_def *d;
    gr__gop_params prm;
    gr_var *stack[16], **ins = stack, *x;
    int i, a, n_all;
    gr_status st;
    if (op->builtin != &gr__gop_handle_builtin)
        return gr__error(g, GR_ERR_VALUE, "gr_apply: %s is a built-in op with parameters of its own; build it with its gr_ function", op->name);
    d = ((const gr__gop_handle *)op)->def;
    n_all = d->n_in + d->n_sh;
    if (n_all > 16 && !(ins = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)n_all))) return gr__error(g, GR_ERR_NOMEM, "gr_apply: out of memory");
    for (i = 0; i < n_in; i++) {
        const gr_var *b = d->bin[i];
        x = inputs[i];
        if (x->dtype != b->dtype && gr__is_weak(x) && x->ndim == b->ndim) x = gr__coerce(x, b->dtype);
        if (!x) { st = g->status; goto done; }
        if (x->dtype != b->dtype || x->ndim != b->ndim) {
            st = gr__error(g, GR_ERR_TYPE, "gr_apply: op '%s': operand %d (%s) is %s with %d dimensions; its input %s is %s with %d",
                           d->name, i, gr__d(x).s, gr_dtype_name((gr_dtype)x->dtype), x->ndim, gr__d(b).s, gr_dtype_name((gr_dtype)b->dtype), b->ndim);
            goto done;
        }
        for (a = 0; a < x->ndim; a++)
            if (gr__vshape(b)[a] >= 0 && gr__vshape(x)[a] >= 0 && gr__vshape(b)[a] != gr__vshape(x)[a]) {
                st = gr__error(g, GR_ERR_SHAPE, "gr_apply: op '%s': operand %d (%s) has the shape %s; its input %s has %s", d->name, i,
                               gr__d(x).s, gr__vs(x).s, gr__d(b).s, gr__vs(b).s);
                goto done;
            }
        ins[i] = x;
    }
    for (i = 0; i < d->n_sh; i++)
        if (!(ins[d->n_in + i] = gr__gop_shared_in(g, d, i))) { st = g->status != GR_OK ? g->status : GR_ERR_NOMEM; goto done; }
    memset(&prm, 0, sizeof prm);
    prm.def = d;
    st = gr__make_node_n(g, d->dynamic ? &gr__op_OpFromGraphDyn : &gr__op_OpFromGraph, &prm, sizeof prm, n_all, ins, d->n_out, outputs);
    if (st != GR_OK) for (i = 0; i < d->n_out; i++) outputs[i] = NULL;
done:
    if (ins != stack) GR_FREE(ins);
    return st;
}

/* ---- type and shape -------------------------------------------------------------------------------- */

/* the outputs' types: the inner graph's, with the static shapes it gives the operands' (the inner
   graph typed again on them when they know more: x - y of two (3,4) operands is (3,4)); a conflict
   between those shapes is GR_ERR_SHAPE */
static gr_status gr__OpFromGraph_infer(const gr_node *node, gr_type *out) {
    const gr__gop_def *d = gr__gdef(node);
    int j, a, i, more = 0;
    for (j = 0; j < d->n_out; j++) {
        const gr_var *b = d->bout[j];
        out[j].dtype = (gr_dtype)b->dtype;
        out[j].ndim = b->ndim;
        for (a = 0; a < b->ndim; a++) out[j].shape[a] = gr__vshape(b)[a];
    }
    for (i = 0; i < node->n_in && !more; i++)
        for (a = 0; a < d->bin[i]->ndim; a++)
            if (gr__vshape(d->bin[i])[a] < 0 && gr__vshape(gr__in(node)[i])[a] >= 0 && gr__in(node)[i]->kind != GR__VK_SHARED) more = 1;
    if (more) {
        gr_graph *sg = gr_graph_new();
        gr_var **x = (gr_var **)gr__calloc((size_t)(node->n_in + d->n_out) + 1, sizeof(gr_var *)), **y;
        gr_status st = sg && x ? GR_OK : GR_ERR_NOMEM;
        for (i = 0; st == GR_OK && i < node->n_in; i++) {
            const gr_var *v = gr__in(node)[i];
            int64_t shape[GR_MAX_NDIM];
            for (a = 0; a < v->ndim; a++) shape[a] = v->kind == GR__VK_SHARED ? gr__vshape(d->bin[i])[a] : gr__vshape(v)[a];
            if (!(x[i] = gr__new_var(sg, d->bin[i]->dtype, d->bin[i]->ndim, shape, GR__VK_INPUT))) st = GR_ERR_NOMEM;
        }
        if (st == GR_OK) {
            y = x + node->n_in;
            st = gr__gop_clone(d, sg, NULL, x, y);
            for (j = 0; st == GR_OK && j < d->n_out; j++)
                for (a = 0; a < y[j]->ndim; a++) out[j].shape[a] = gr__vshape(y[j])[a];
            if (st != GR_OK && st != GR_ERR_NOMEM)      /* (out of memory: the shapes above will do) */
                gr__error(node->graph, st, "op '%s': %s", d->name, sg->message);
        }
        gr_graph_free(sg);
        GR_FREE(x);
        if (st != GR_OK && st != GR_ERR_NOMEM) return st;
    }
    return GR_OK;
}

/* the inner graph compiled (errors recorded on the node's graph; NULL) */
static gr_fn *gr__gop_compile(const gr_node *node, int level) {
    gr__gop_def *d = gr__gdef(node);
    gr_fn_opts fo;
    gr_fn *f;
    memset(&fo, 0, sizeof fo);
    fo.optimize = (gr_optimize)level;
    f = gr_function(d->n_in + d->n_sh, d->bin, d->n_out, d->bout, &fo);
    if (!f) {
        gr__error(node->graph, d->ig->status != GR_OK ? d->ig->status : GR_ERR_NOMEM, "op '%s': compiling its graph: %s", d->name,
                  d->ig->message[0] ? d->ig->message : "out of memory");
        gr_graph_clear_error(d->ig);
    }
    return f;
}

/* the outputs' shapes by the inner graph's shape rules: nothing runs */
static gr_status gr__OpFromGraph_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__gop_rt *rt = gr__grt(node);
    gr_fn *f = rt && rt->fn ? rt->fn->f : NULL, *tmp = NULL;
    gr_status st;
    if (gr__gdef(node)->dynamic) return gr_node_error(node, GR_ERR_VALUE, "'%s': its shapes are known only by running it", gr__gdef(node)->name);
    if (!f && !(f = tmp = gr__gop_compile(node, GR_OPT_FULL))) return node->graph->status;
    st = gr__fn_out_shapes(f, in, out);
    if (st != GR_OK) gr_node_error(node, st, "'%s': %s", gr__gdef(node)->name, gr_fn_message(f));
    gr_fn_free(tmp);
    return st;
}

/* ---- running ------------------------------------------------------------------------------------------ */

/* a compiled function's state: the inner graph compiled once for every node applying the op */
static gr_status gr__OpFromGraph_runtime(gr_node *node, int level) {
    gr__gop_params *p = (gr__gop_params *)gr__params(node);
    gr__gop_def *d = p->def;
    gr_graph *cg = node->graph;
    gr__gop_rt *rt = (gr__gop_rt *)gr__calloc(1, sizeof(gr__gop_rt));
    uint32_t k;
    if (!rt) return gr__error(cg, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
    p->rt = rt;
    rt->res = (const gr_array **)gr__calloc((size_t)d->n_out + 1, sizeof(gr_array *));
    rt->buf = (void **)gr__calloc((size_t)d->n_out + 1, sizeof(void *));
    rt->cap = (size_t *)gr__calloc((size_t)d->n_out + 1, sizeof(size_t));
    if (!rt->res || !rt->buf || !rt->cap) return gr__error(cg, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
    for (k = 0; k < cg->n_nodes; k++) {             /* another node of this function applying the op */
        gr_node *o = cg->nodes[k];
        if (o != node && o->op->perform == gr__OpFromGraph_perform && gr__gdef(o) == d && gr__grt(o) && gr__grt(o)->fn) {
            rt->fn = gr__grt(o)->fn;
            rt->fn->refs++;
            return GR_OK;
        }
    }
    rt->fn = (gr__gop_fn *)gr__calloc(1, sizeof(gr__gop_fn));
    if (!rt->fn) return gr__error(cg, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
    rt->fn->refs = 1;
    rt->fn->f = gr__gop_compile(node, level);
    return rt->fn->f ? GR_OK : cg->status;
}
static void gr__OpFromGraph_release(gr_node *node) {
    gr__gop_params *p = (gr__gop_params *)gr__params(node);
    gr__gop_rt *rt = p->rt;
    int j;
    if (!rt) return;
    if (rt->fn && --rt->fn->refs == 0) { gr_fn_free(rt->fn->f); GR_FREE(rt->fn); }
    for (j = 0; rt->buf && j < p->def->n_out; j++) GR_FREE(rt->buf[j]);
    GR_FREE(rt->buf); GR_FREE(rt->cap); GR_FREE(rt->res);
    GR_FREE(rt);
    p->rt = NULL;
}
static gr_status gr__OpFromGraph_narrow(gr_node *node, const gr__readers *rd, gr_var **map) {
    (void)node; (void)rd; (void)map;
    return GR_OK;
}

static gr_status gr__OpFromGraph_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__gop_def *d = gr__gdef(node);
    gr__gop_rt *rt = gr__grt(node);
    gr_fn *f = rt && rt->fn ? rt->fn->f : NULL, *tmp = NULL;
    const gr_array *stack[8], **res = rt ? rt->res : stack;
    gr_status st;
    int j, a;
    if (!rt && d->n_out > 8) return gr_node_error(node, GR_ERR_VALUE, "'%s': runs in a compiled function only", d->name);
    if (!f && (d->dynamic || !(f = tmp = gr__gop_compile(node, GR_OPT_FULL))))
        return d->dynamic ? gr_node_error(node, GR_ERR_VALUE, "'%s': runs in a compiled function only", d->name) : node->graph->status;
    st = gr_call(f, in, res);
    if (st != GR_OK) { gr_node_error(node, st, "'%s': %s", d->name, gr_fn_message(f)); goto done; }
    for (j = 0; j < d->n_out; j++) {
        gr_array *o = out[j];
        size_t bytes = (size_t)res[j]->size * gr__dsize(res[j]->dtype);
        if (d->dynamic) {                        /* memory of its own (DYNSHAPE) */
            if (rt->cap[j] < bytes + 1) {
                void *b = GR_MALLOC(bytes + 64);
                if (!b) { st = gr_node_error(node, GR_ERR_NOMEM, "'%s': out of memory", d->name); goto done; }
                GR_FREE(rt->buf[j]);
                rt->buf[j] = b;
                rt->cap[j] = bytes + 64;
            }
            for (a = 0; a < o->ndim; a++) o->shape[a] = res[j]->shape[a];
            o->size = res[j]->size;
            o->data = rt->buf[j];
        } else
            for (a = 0; a < o->ndim; a++)
                if (o->shape[a] != res[j]->shape[a]) {
                    st = gr_node_error(node, GR_ERR_SHAPE, "'%s': output %d has the shape %s, not the %s its shape rule gave", d->name, j,
                                       gr__as(res[j]).s, gr__as(o).s);
                    goto done;
                }
        if (bytes) memcpy(o->data, res[j]->data, bytes);
    }
done:
    gr_fn_free(tmp);
    return st;
}

/* ---- derivatives ---------------------------------------------------------------------------------------- */

/* the derived op (gradient: which 0, R-op: which 1) of d, made once in a graph of its own: the
   inner graph copied on fresh inputs, then the driver (gr_lop / gr_rop) on it. Errors recorded on g. */
static gr_status gr__gop_derived(gr__gop_def *d, gr_graph *g, int which) {
    int n_all = d->n_in + d->n_sh, n_extra = 0, n_res = 0, i, j;
    gr_graph *dg = gr_graph_new();
    /* x: the op's inputs (inner inputs, then seeds or tangents); y: the copied outputs; s: seeds or
       tangents of the outputs; f: what is differentiated, then the op's outputs; w: wrt; ts: the
       tangents of wrt, or the gradients */
    gr_var **x = (gr_var **)gr__calloc((size_t)(5 * n_all + 4 * d->n_out) + 1, sizeof(gr_var *)), **y, **s, **f, **w, **ts;
    gr_status st = GR_ERR_NOMEM;
    char name[80];
    if (!dg || !x) goto nomem;
    y = x + 2 * n_all + d->n_out; s = y + d->n_out; f = s + d->n_out; w = f + d->n_out + n_all; ts = w + n_all;
    for (i = 0; i < n_all; i++)
        if (!(x[i] = gr__new_var(dg, d->bin[i]->dtype, d->bin[i]->ndim, gr__vshape(d->bin[i]), GR__VK_INPUT))) goto inner;
    if (gr__gop_clone(d, dg, NULL, x, y) != GR_OK) goto inner;
    if (which == 0) {                                /* seeds of the float outputs; gradients of the float inputs */
        gr_grad_opts o;
        int nf = 0, nw = 0;
        for (j = 0; j < d->n_out; j++)
            if (gr__is_float(y[j]->dtype)) {
                f[nf] = y[j];
                if (!(s[nf] = gr__new_var(dg, y[j]->dtype, y[j]->ndim, gr__vshape(y[j]), GR__VK_INPUT))) goto inner;
                x[n_all + nf] = s[nf];
                nf++;
            }
        n_extra = nf;
        for (i = 0; i < n_all; i++) { d->g_at[i] = -1; if (gr__is_float(x[i]->dtype)) w[nw++] = x[i]; }
        if (nf > 0 && nw > 0) {
            memset(&o, 0, sizeof o);
            o.disconnected_inputs = GR_IGNORE;
            o.return_disconnected = GR_RETURN_DISCONNECTED;
            o.null_gradients = GR_NULL_RETURN;
            o.no_names = 1;
            if (gr_lop(nf, f, nw, w, s, ts, &o) != GR_OK) goto inner;
            for (i = 0, nw = 0; i < n_all; i++) {
                gr_var *t;
                if (!gr__is_float(x[i]->dtype)) continue;
                t = ts[nw++];
                if (gr_is_disconnected(t)) continue;
                if (gr_is_null(t)) { d->g_at[i] = -2; continue; }
                d->g_at[i] = n_res;
                f[n_res++] = t;                      /* (f's earlier entries are read no more) */
            }
        }
    } else {                                         /* tangents of the float inputs; tangents of the outputs */
        gr_rop_opts o;
        int nw = 0;
        for (i = 0; i < n_all; i++)
            if (gr__is_float(x[i]->dtype)) {
                w[nw] = x[i];
                if (!(ts[nw] = gr__new_var(dg, x[i]->dtype, x[i]->ndim, gr__vshape(x[i]), GR__VK_INPUT))) goto inner;
                x[n_all + nw] = ts[nw];
                nw++;
            }
        n_extra = nw;
        for (j = 0; j < d->n_out; j++) d->r_at[j] = -1;
        if (nw > 0) {
            memset(&o, 0, sizeof o);
            o.disconnected_outputs = GR_IGNORE;
            o.return_disconnected = GR_RETURN_DISCONNECTED;
            if (gr_rop(d->n_out, y, nw, w, ts, s, &o) != GR_OK) goto inner;
            for (j = 0; j < d->n_out; j++) {
                if (!gr__is_float(y[j]->dtype) || gr__is_marker(s[j])) continue;
                d->r_at[j] = n_res;
                f[n_res++] = s[j];
            }
        }
    }
    if (n_res > 0) {
        gr_graph_op_opts oo;
        gr_op_def *op;
        memset(&oo, 0, sizeof oo);
        oo.inline_graph = d->inline_graph;
        snprintf(name, sizeof name, "%s_%s", d->name, which ? "rop" : "grad");
        op = gr__gop_make(dg, name, n_all + n_extra, x, n_res, f, &oo);
        if (!op) goto inner;
        if (which) d->rdef = ((gr__gop_handle *)op)->def; else d->gdef = ((gr__gop_handle *)op)->def;
    }
    if (which) d->r_made = 1; else d->g_made = 1;
    st = GR_OK;
    goto done;
inner:
    st = dg->status != GR_OK ? dg->status : GR_ERR_NOMEM;
    gr__error(g, st, "op '%s': its %s from its graph: %s", d->name, which ? "R-op" : "gradient", dg->message[0] ? dg->message : "out of memory");
    goto done;
nomem:
    gr__error(g, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
done:
    gr_graph_free(dg);
    GR_FREE(x);
    return st;
}

/* a value for the user's rule's result for input or output v: checked, cast to the dtype wanted */
static gr_var *gr__gop_result(const gr_node *node, const char *what, int k, gr_var *r, gr_var *v, int dt) {
    gr_graph *g = node->graph;
    const gr__gop_def *d = gr__gdef(node);
    if (!r) return g->status != GR_OK ? NULL : gr__fail(g, GR_ERR_VALUE, "op '%s': its %s rule left result %d NULL", d->name, what, k);
    if (r->graph != g) return gr__fail(g, GR_ERR_VALUE, "op '%s': result %d of its %s rule belongs to another graph", d->name, k, what);
    if (gr__is_marker(r)) return r;
    if (r->ndim != v->ndim)
        return gr__fail(g, GR_ERR_TYPE, "op '%s': result %d of its %s rule has %d dimensions; %s has %d", d->name, k, what, r->ndim,
                        gr__d(v).s, v->ndim);
    if (!gr__is_float(r->dtype))
        return gr__fail(g, GR_ERR_TYPE, "op '%s': result %d of its %s rule is %s, not a float", d->name, k, what, gr_dtype_name((gr_dtype)r->dtype));
    return r->dtype == dt ? r : gr_cast(r, (gr_dtype)dt);
}

/* input i reaches an output whose gradient is not disconnected */
static int gr__gop_iconn(const gr_node *node, gr_var *const *og, int i) {
    int j;
    for (j = 0; j < node->n_out; j++) if (gr__connected(node, i, j) && !gr_is_disconnected(og[j])) return 1;
    return 0;
}

static gr_status gr__OpFromGraph_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr__gop_def *d = gr__gdef(node);
    gr_graph *g = node->graph;
    int n_all = node->n_in, i, j, ns = 0, from = d->grad ? d->n_in : 0;
    gr_var **res = (gr_var **)gr__calloc((size_t)(2 * n_all + d->n_out) + 1, sizeof(gr_var *)), **ins, **gout = NULL;
    gr_status st = GR_OK;
    if (!res) return gr__error(g, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
    ins = res + n_all;
    for (i = 0; i < n_all; i++) ig[i] = NULL;
    if (d->grad) {                                   /* the user's rule, for the operands */
        st = d->grad(d->grad_user, gr__in(node), gr__out(node), og, res);
        if (st != GR_OK) {
            if (g->status == GR_OK) gr__error(g, st, "op '%s': its gradient rule failed (%s)", d->name, gr_status_string(st));
            goto done;
        }
        for (i = 0; i < d->n_in; i++) {
            gr_var *x = gr__in(node)[i], *t = gr__gop_result(node, "gradient", i, res[i], x, gr__grad_dtype(x));
            if (!t) { st = g->status != GR_OK ? g->status : GR_ERR_NOMEM; goto done; }
            if (gr_is_disconnected(t) && gr__gop_iconn(node, og, i)) t = gr__zeros_grad(x);   /* connected: zeros */
            if (!(ig[i] = t)) { st = g->status; goto done; }
        }
    }
    for (i = from; i < n_all; i++) if (gr__gop_iconn(node, og, i)) break;
    if (i < n_all) {                                 /* the gradient from the inner graph */
        if (!d->g_made && (st = gr__gop_derived(d, g, 0)) != GR_OK) goto done;
        if (d->gdef) {
            for (i = 0; i < n_all; i++) ins[i] = gr__in(node)[i];
            for (j = 0; j < d->n_out; j++) {
                gr_var *y = gr__out(node)[j], *s = og[j];
                if (!gr__is_float(y->dtype)) continue;
                if (gr__is_marker(s)) s = gr__fill_like(y, y->dtype, 0.0);   /* (pytensor#723: zeros for an unused output) */
                else if (s->dtype != y->dtype) s = gr_cast(s, (gr_dtype)y->dtype);
                if (!s) { st = g->status; goto done; }
                ins[n_all + ns++] = s;
            }
            gout = (gr_var **)gr__calloc((size_t)d->gdef->n_out + 1, sizeof(gr_var *));
            if (!gout) { st = gr__error(g, GR_ERR_NOMEM, "op '%s': out of memory", d->name); goto done; }
            if ((st = gr__graph_op_apply(g, &d->gdef->handle.op, n_all + ns, ins, gout)) != GR_OK) goto done;
        }
    }
    for (i = from; i < n_all; i++) {
        gr_var *x = gr__in(node)[i];
        if (!gr__gop_iconn(node, og, i)) ig[i] = gr_disconnected_like(x);
        else if (d->g_at[i] >= 0 && gout) ig[i] = gout[d->g_at[i]];
        else if (d->g_at[i] == -2) ig[i] = gr_grad_not_implemented(node, i, x, "(an op of its graph has no gradient)");
        else ig[i] = gr__zeros_grad(x);
        if (!ig[i]) { st = g->status != GR_OK ? g->status : GR_ERR_NOMEM; goto done; }
    }
done:
    GR_FREE(res);
    GR_FREE(gout);
    return st;
}

/* orop[j] += the tangents from the inner graph, from the inputs that `use` marks (NULL: all) */
static gr_status gr__gop_rop_derived(const gr_node *node, gr_var *const *ev, const uint8_t *use, gr_var **orop) {
    gr__gop_def *d = gr__gdef(node);
    gr_graph *g = node->graph;
    int n_all = node->n_in, i, j, nt = 0;
    gr_var **ins, **rout;
    gr_status st;
    if (!d->r_made && (st = gr__gop_derived(d, g, 1)) != GR_OK) return st;
    if (!d->rdef) return GR_OK;
    ins = (gr_var **)gr__calloc((size_t)(2 * n_all + d->rdef->n_out) + 1, sizeof(gr_var *));
    if (!ins) return gr__error(g, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
    rout = ins + 2 * n_all;
    for (i = 0; i < n_all; i++) {
        gr_var *x = gr__in(node)[i], *t = ev[i];
        ins[i] = x;
        if (!gr__is_float(x->dtype)) continue;
        if (gr__is_marker(t) || (use && !use[i])) t = gr__fill_like(x, x->dtype, 0.0);
        else if (t->dtype != x->dtype) t = gr_cast(t, (gr_dtype)x->dtype);
        if (!t) { GR_FREE(ins); return g->status; }
        ins[n_all + nt++] = t;
    }
    st = gr__graph_op_apply(g, &d->rdef->handle.op, n_all + nt, ins, rout);
    for (j = 0; st == GR_OK && j < d->n_out; j++) {
        int any = 0;
        if (d->r_at[j] < 0) continue;
        for (i = 0; i < n_all; i++)
            if (gr__connected(node, i, j) && !gr__is_marker(ev[i]) && (!use || use[i]) && gr__is_float(gr__in(node)[i]->dtype)) any = 1;
        if (!any) continue;
        orop[j] = orop[j] ? gr_add(orop[j], rout[d->r_at[j]]) : rout[d->r_at[j]];
        if (!orop[j]) st = g->status;
    }
    GR_FREE(ins);
    return st;
}

static gr_status gr__OpFromGraph_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr__gop_def *d = gr__gdef(node);
    gr_graph *g = node->graph;
    int i, j, shared_ev = 0;
    gr_status st = GR_OK;
    for (j = 0; j < node->n_out; j++) orop[j] = NULL;
    if (!d->rop) return d->grad ? gr__rop_by_pullback(node, ev, orop) : gr__gop_rop_derived(node, ev, NULL, orop);
    {                                                /* the user's rule, for the operands */
        gr_var **res = (gr_var **)gr__calloc((size_t)d->n_out + 1, sizeof(gr_var *));
        if (!res) return gr__error(g, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
        st = d->rop(d->rop_user, gr__in(node), gr__out(node), ev, res);
        if (st != GR_OK && g->status == GR_OK) gr__error(g, st, "op '%s': its R-op rule failed (%s)", d->name, gr_status_string(st));
        for (j = 0; st == GR_OK && j < d->n_out; j++) {
            gr_var *y = gr__out(node)[j], *t = gr__gop_result(node, "R-op", j, res[j], y, y->dtype);
            if (!t) st = g->status != GR_OK ? g->status : GR_ERR_NOMEM;
            else orop[j] = gr__is_marker(t) || !gr__is_float(y->dtype) ? NULL : t;
        }
        GR_FREE(res);
        if (st != GR_OK) return st;
    }
    for (i = d->n_in; i < node->n_in; i++) if (!gr__is_marker(ev[i])) shared_ev = 1;
    if (shared_ev) {                                 /* the shared variables' part, from the inner graph */
        uint8_t *use = (uint8_t *)gr__calloc((size_t)node->n_in + 1, 1);
        if (!use) return gr__error(g, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
        for (i = d->n_in; i < node->n_in; i++) use[i] = 1;
        st = gr__gop_rop_derived(node, ev, use, orop);
        GR_FREE(use);
    }
    return st;
}

/* ---- batching (Jacobians and Hessians through the op) ----------------------------------------------------

   The node rebuilt on operands of which those flagged gained a leading batch axis: an op made of the
   inner graph vectorised over those inputs (src/jacobian.c), every output batched (an output that
   does not read a batched input is broadcast along the batch axis). */
static gr_status gr__OpFromGraph_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr__gop_def *d = gr__gdef(node);
    gr_graph *g = node->graph, *bg = gr_graph_new();
    int n_all = node->n_in, i, j, first = -1;
    gr_var **x = (gr_var **)gr__calloc((size_t)(3 * n_all + 2 * d->n_out) + 1, sizeof(gr_var *)), **xb, **bi, **y, **yb;
    uint8_t *isb = (uint8_t *)gr__calloc((size_t)(n_all + d->n_out) + 1, 1), *yisb;
    gr_op_def *op = NULL;
    gr_status st = GR_ERR_NOMEM;
    if (!bg || !x || !isb) goto nomem;
    xb = x + n_all; bi = xb + n_all; y = bi + n_all; yb = y + d->n_out;
    yisb = isb + n_all;
    for (i = 0; i < n_all; i++) {
        int64_t shape[GR_MAX_NDIM + 1];
        int a;
        if (!(x[i] = gr__new_var(bg, d->bin[i]->dtype, d->bin[i]->ndim, gr__vshape(d->bin[i]), GR__VK_INPUT))) goto inner;
        isb[i] = batched[i] != 0;
        if (!isb[i]) { xb[i] = bi[i] = x[i]; continue; }
        if (first < 0) first = i;
        for (a = 0; a <= d->bin[i]->ndim && a < GR_MAX_NDIM; a++) shape[a] = -1;
        if (d->bin[i]->ndim + 1 > GR_MAX_NDIM) { st = gr__error(g, GR_ERR_VALUE, "gr_jacobian: a batched %s has too many dimensions", d->name); goto done; }
        if (!(xb[i] = bi[i] = gr__new_var(bg, d->bin[i]->dtype, d->bin[i]->ndim + 1, shape, GR__VK_INPUT))) goto inner;
    }
    if (gr__gop_clone(d, bg, NULL, x, y) != GR_OK) goto inner;
    if (gr__vectorize(bg, n_all, x, xb, isb, d->n_out, y, yb, yisb) != GR_OK) goto inner;
    for (j = 0; j < d->n_out; j++)
        if (!yisb[j] && !(yb[j] = first >= 0 ? gr__batch_like(yb[j], xb[first]) : NULL)) goto inner;
    {
        gr_graph_op_opts oo;
        char name[80];
        memset(&oo, 0, sizeof oo);
        oo.inline_graph = d->inline_graph;
        snprintf(name, sizeof name, "%s_batched", d->name);
        op = gr__gop_make(bg, name, n_all, bi, d->n_out, yb, &oo);
    }
    if (!op) goto inner;
    st = gr__graph_op_apply(g, op, n_all, in, out);
    goto done;
inner:
    st = bg->status != GR_OK ? bg->status : GR_ERR_NOMEM;
    gr__error(g, st, "gr_jacobian: batching op '%s': %s", d->name, bg->message[0] ? bg->message : "out of memory");
    goto done;
nomem:
    st = gr__error(g, GR_ERR_NOMEM, "gr_jacobian: batching op '%s': out of memory", d->name);
done:
    gr_op_free(op);
    gr_graph_free(bg);
    GR_FREE(x);
    GR_FREE(isb);
    return st;
}

#else /* GR_NO_GRAPHOP: gr_apply names this for an op flagged GRAPHOP (src/graph.c): only a loop is left,
         refused as in the full build */
static gr_status gr__graph_op_apply(gr_graph *g, const gr_op_def *op, int n_in, gr_var *const *inputs, gr_var **outputs) {
    (void)n_in; (void)inputs; (void)outputs;
    return gr__error(g, GR_ERR_VALUE, "gr_apply: %s is a built-in op with parameters of its own; build it with its gr_ function", op->name);
}
#endif /* GR_NO_GRAPHOP */

/* ==== src/grad.c: generated region; edit src/grad.c, then run make gradient.h ==== */
/* src/grad.c: reverse mode: gr_grad, gr_grad1, gr_lop, gr_subgraph_grad,
   and the null gradients gr_grad_not_implemented / gr_grad_undefined.

   gr_grad follows aesara.gradient.grad step by step, without recursion:
     1. seed the gradients of the cost (ones) and of the known variables;
     2. a depth-first walk down from the cost records, for every variable, the (node, input
        position) pairs through which it reaches the cost, in discovery order (this order fixes
        the summation order of gradient terms: deterministic, left fold);
     3. a sweep up from wrt keeps only the variables that depend on some wrt;
     4. the nodes involved are visited in reverse topological order: each op's grad rule is
        called once, its terms checked against the op contract (gr__node_terms_check);
     5. each wrt's gradient is the sum of its terms, then the disconnected / null policies. */

/* ---- null gradients ---------------------------------------------------------------------------- */

static gr_var *gr__null_var(gr_graph *g, const gr_var *like, gr_status code, const char *reason) {
    gr_var *v = gr__new_var(g, like ? (int)like->dtype : (int)GR_F64, like ? like->ndim : 0, like ? gr__vshape(like) : NULL, GR__VK_NULL);
    if (!v) return NULL;
    v->aux = (uint8_t)code;
    v->u.ext = gr__arena_strdup(&g->arena, reason ? reason : "(no explanation given)");
    if (!gr__ext(v)) return gr__fail(g, GR_ERR_NOMEM, "out of memory (a null gradient's reason)");
    return v;
}

static gr_var *gr__null_for(const gr_node *node, int x_pos, gr_var *x, const char *comment, gr_status code) {
    char reason[GR__MSG];
    if (!x) return NULL;
    snprintf(reason, sizeof reason, "This variable is Null because the grad method for input %d (%s) of the %s op is not implemented.%s%s",
             x_pos, gr__d(x).s, gr__on(node ? node->op : NULL).s, comment && comment[0] ? " " : "", comment ? comment : "");
    return gr__null_var(x->graph, x, code, reason);
}

GR_API gr_var *gr_grad_not_implemented(const gr_node *node, int x_pos, gr_var *x, const char *comment) {
    return gr__null_for(node, x_pos, x, comment, GR_ERR_GRAD_NOT_IMPLEMENTED);
}
GR_API gr_var *gr_grad_undefined(const gr_node *node, int x_pos, gr_var *x, const char *comment) {
    return gr__null_for(node, x_pos, x, comment, GR_ERR_GRAD_UNDEFINED);
}

/* the reason carried by a null variable */
static const char *gr__null_reason(const gr_var *v) { return v && v->kind == GR__VK_NULL && gr__ext(v) ? (const char *)gr__ext(v) : ""; }
GR_API const char *gr_null_reason(const gr_var *v) { return gr__null_reason(v); }

/* ---- conditionals' regions --------------------------------------------------------------------------

   A region is a side of a condition (GR__OPF_LAZY nodes) within its parent region, region 0 being
   everything: the nodes whose outputs are read only on one side, or within it, belong to it (a
   compiled function runs them only when it is on, src/function.c). The gradient keeps them so: a
   node's terms are valid where its region is on and zero elsewhere, so a term that leaves a region
   for a variable of an enclosing one is made ifelse(cond, term, zeros like the variable) for each
   side it leaves; the backward nodes of a side then belong to it too (the gradient of
   ifelse(x > 0, sqrt(x), 0) at 0 is 0, where multiplying a zero by sqrt's infinite derivative gives
   NaN). */
typedef struct gr__region { int32_t parent, depth; gr_var *cond; int32_t cond_slot; int side; } gr__region;

/* the innermost region holding both a and b (-1: none known yet) */
static int32_t gr__region_lca(const gr__region *r, int32_t a, int32_t b) {
    if (a < 0) return b;
    if (b < 0) return a;
    while (a != b) {
        if (r[a].depth >= r[b].depth) a = r[a].parent; else b = r[b].parent;
    }
    return a;
}

/* the region (parent, cond, side), made when new (parent -1: region 0 itself); -1 when out of memory */
static int32_t gr__region_get(gr__region **regs, int32_t *n, uint32_t *cap, int32_t parent, gr_var *cond, int side) {
    int32_t r;
    for (r = 1; r < *n; r++)
        if ((*regs)[r].parent == parent && (*regs)[r].cond == cond && (*regs)[r].side == side) return r;
    if (!gr__grow((void **)regs, cap, (uint32_t)*n, sizeof(gr__region))) return -1;
    r = (*n)++;
    (*regs)[r].parent = parent < 0 ? 0 : parent;
    (*regs)[r].depth = parent < 0 ? 0 : (*regs)[parent].depth + 1;
    (*regs)[r].cond = cond;
    (*regs)[r].cond_slot = -1;
    (*regs)[r].side = side;
    return r;
}

/* the regions of n nodes (a topological order) whose outputs the roots read: nreg[k] is node k's
   (the regions made in *regs; region 0 first when there are none yet). Errors are recorded on g. */
static gr_status gr__regions_of(gr_graph *g, gr_node *const *nodes, uint32_t n, int n_roots, gr_var *const *roots,
                                gr__region **regs, int32_t *n_regs, uint32_t *cap, int32_t *nreg) {
    uint32_t nv = g->var_base + g->n_vars, k;
    int32_t *vreg = (int32_t *)GR_MALLOC(sizeof(int32_t) * (nv + 1u));
    int i, j;
    if (!vreg || (*n_regs == 0 && gr__region_get(regs, n_regs, cap, -1, NULL, 0) != 0)) goto nomem;
    for (k = 0; k < nv; k++) vreg[k] = -1;
    for (i = 0; i < n_roots; i++) if (roots[i]->id < nv) vreg[roots[i]->id] = 0;
    for (k = n; k-- > 0;) {                           /* readers before producers */
        gr_node *node = nodes[k];
        int32_t r = -1;
        int lazy = (gr__flags_of(node->op) & GR__OPF_LAZY) != 0, half = (node->n_in - 1) / 2;
        for (j = 0; j < node->n_out; j++) if (gr__out(node)[j]->id < nv) r = gr__region_lca(*regs, r, vreg[gr__out(node)[j]->id]);
        if (r < 0) r = 0;
        nreg[k] = r;
        for (i = 0; i < node->n_in; i++) {
            gr_var *x = gr__in(node)[i];
            int32_t u = r;
            if (lazy && i > 0 && (u = gr__region_get(regs, n_regs, cap, r, gr__in(node)[0], i <= half)) < 0) goto nomem;
            if (x->id < nv) vreg[x->id] = gr__region_lca(*regs, vreg[x->id], u);
        }
    }
    GR_FREE(vreg);
    return GR_OK;
nomem:
    GR_FREE(vreg);
    return gr__error(g, GR_ERR_NOMEM, "out of memory (the conditionals' regions)");
}

/* ---- the walk ------------------------------------------------------------------------------------ */

static const gr_node *gr__conn_node(const gr_node *node);

/* the node whose connection pattern is node's: the wrapped one for a Batched node */
static const gr_node *gr__pattern_node(const gr_node *node) {
    return (gr__flags_of(node->op) & GR__OPF_INNERCONN) ? gr__conn_node(node) : node;
}

/* node has a connection pattern (else everything is connected) */
static int gr__has_pattern(const gr_node *node) {
    node = gr__pattern_node(node);
    if (gr__flags_of(node->op) & GR__OPF_GRAPHOP) return (*(gr__graphop *const *)gr__params(node))->conn != NULL;
    return (gr__flags_of(node->op) & GR__OPF_CONN0) || node->op->connection_pattern;
}

/* input i of node affects output j */
static int gr__connected(const gr_node *node, int i, int j) {
    const unsigned char *p;
    node = gr__pattern_node(node);
    if (gr__flags_of(node->op) & GR__OPF_CONN0) return i == 0;
    p = (gr__flags_of(node->op) & GR__OPF_GRAPHOP) ? (*(gr__graphop *const *)gr__params(node))->conn : node->op->connection_pattern;
    return !p || p[i * node->n_out + j];
}

/* one (node, input position) through which a variable reaches the cost; the uses of a variable are
   a list through `next` (1 + an index in gr__gctx.use, 0 at the end). 12 bytes: a graph of a
   million links records five million of them. */
typedef struct gr__use { uint32_t node, pos, next; } gr__use;

typedef struct gr__gctx {
    gr_graph  *g;
    const char *fname;
    uint32_t   nv, nn;           /* variables and nodes that existed when the call began */
    gr__arena  scratch;
    gr__use   *use;              /* every use recorded */
    uint32_t   n_use, cap_use;
    uint32_t  *uses;             /* by variable: 1 + the index of its first use toward the cost, 0 none */
    uint32_t  *tails;            /* by variable: 1 + the index of the last */
    uint8_t   *reached;          /* by variable: depends on some wrt */
    uint8_t   *constant;         /* by variable: in consider_constant */
    uint8_t   *in_s;             /* by node: its grad rule is needed (its id orders it: consumers after producers) */
    gr_var   **total;            /* by variable: its gradient, once known */
    gr_var  ***terms;            /* by node: its terms, once computed */
    gr_var    *cost;
    int        add_names;
    gr__region *regs;            /* with conditionals: the regions (see above) */
    int32_t    n_regs;
    uint32_t   cap_regs;
    int32_t   *vreg;             /* by variable: its region, -1 before its total; NULL without conditionals */
    int32_t   *nreg;             /* by node: its region */
} gr__gctx;

static int gr__in_map(const gr__gctx *c, const gr_var *v) { return v->id < c->nv && c->uses[v->id] && c->reached[v->id]; }

/* whether a single-output node already recorded v at an input before pos (it records its inputs in
   order, during its one visit) */
static int gr__used_before(const gr_node *node, const gr_var *v, int pos) {
    int j;
    for (j = 0; j < pos; j++) if (gr__in(node)[j] == v && gr__connected(node, j, 0)) return 1;
    return 0;
}

/* records that v reaches the cost through input `pos` of node, once, keeping one group per node in
   first-seen order (Aesara's ordered map node -> positions). The group of a single-output node is
   usually v's last entry; only when the walk below an earlier input of node recorded other uses of
   v in between (A = f(v, g(v), v)), or for a multi-output node (visited once per output), is the
   group searched for. O(1) otherwise, which matters for a constant shared by a million nodes. */
#define GR__USE(c, e) (&(c)->use[(e) - 1])        /* the use of list entry e (> 0) */
static int gr__record(gr__gctx *c, gr_var *v, gr_node *node, int pos) {
    uint32_t tail = c->tails[v->id], group = 0, e, nid = node->id;
    if (tail && GR__USE(c, tail)->node == nid) group = tail;
    else if (tail && (node->n_out > 1 || gr__used_before(node, v, pos)))
        for (e = c->uses[v->id]; e; e = GR__USE(c, e)->next) if (GR__USE(c, e)->node == nid) group = e;
    if (group) {                                      /* the end of node's group, unless pos is in it */
        if (node->n_out > 1)                          /* a single-output node records each position once */
            for (e = c->uses[v->id]; e; e = GR__USE(c, e)->next)
                if (GR__USE(c, e)->node == nid && GR__USE(c, e)->pos == (uint32_t)pos) return 1;
        while (GR__USE(c, group)->next && GR__USE(c, GR__USE(c, group)->next)->node == nid) group = GR__USE(c, group)->next;
    }
    if (c->n_use >= UINT32_MAX - 1u || !gr__grow((void **)&c->use, &c->cap_use, c->n_use, sizeof(gr__use))) return 0;
    e = ++c->n_use;
    GR__USE(c, e)->node = nid;
    GR__USE(c, e)->pos = (uint32_t)pos;
    if (group) {
        GR__USE(c, e)->next = GR__USE(c, group)->next;
        GR__USE(c, group)->next = e;
        if (group == tail) c->tails[v->id] = e;
    } else {
        GR__USE(c, e)->next = 0;
        if (tail) GR__USE(c, tail)->next = e; else c->uses[v->id] = e;
        c->tails[v->id] = e;
    }
    return 1;
}

/* step 2: the walk down from the outputs (Aesara's account_for) */
static gr_status gr__walk_down(gr__gctx *c, int n_out, gr_var *const *outs) {
    uint8_t *visited = (uint8_t *)gr__calloc(c->nv, 1);
    gr_var **stack = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (c->nv + 1u));
    int *next = (int *)GR_MALLOC(sizeof(int) * (c->nv + 1u));
    uint32_t sp = 0;
    int k;
    gr_status st = GR_OK;
    if (!visited || !stack || !next) { st = gr__error(c->g, GR_ERR_NOMEM, "%s: out of memory", c->fname); goto done; }
    for (k = 0; k < n_out; k++) {
        gr_var *o = outs[k];
        if (visited[o->id]) continue;
        visited[o->id] = 1;
        stack[sp] = o; next[sp] = 0; sp++;
        while (sp) {
            gr_var *v = stack[sp - 1];
            gr_node *node = gr__owner(v);
            gr_var *in;
            int i;
            if (!node || c->constant[v->id] || next[sp - 1] >= node->n_in) { sp--; continue; }
            i = next[sp - 1]++;
            if (!gr__connected(node, i, v->out_index)) continue;
            in = gr__in(node)[i];
            if (!gr__record(c, in, node, i)) { st = gr__error(c->g, GR_ERR_NOMEM, "%s: out of memory", c->fname); goto done; }
            if (!visited[in->id]) {
                visited[in->id] = 1;
                stack[sp] = in; next[sp] = 0; sp++;
            }
        }
    }
done:
    GR_FREE(visited); GR_FREE(stack); GR_FREE(next);
    return st;
}

/* step 3: what depends on some wrt (Aesara's visit), and the nodes whose grad rule is needed:
   those reading such a variable toward the cost. A variable's id is above its producer's inputs',
   so one sweep up the ids, from the lowest wrt, reaches what a walk up from wrt would. */
static void gr__walk_up(gr__gctx *c, int n_wrt, gr_var *const *wrt) {
    uint32_t lo = c->nv, v;
    int k;
    for (k = 0; k < n_wrt; k++) {
        gr_var *w = wrt[k];
        if (!c->uses[w->id]) continue;
        c->reached[w->id] = 1;
        if (w->id < lo) lo = w->id;
    }
    for (v = lo; v < c->nv; v++) {
        uint32_t e;
        if (!c->reached[v]) continue;
        for (e = c->uses[v]; e; e = GR__USE(c, e)->next) {
            const gr__use *u = GR__USE(c, e);
            gr_node *node = c->g->nodes[u->node];
            int j;
            c->in_s[u->node] = 1;                     /* a node reading a reached variable: its rule is needed */
            for (j = 0; j < node->n_out; j++) {
                const gr_var *o = gr__out(node)[j];
                if (gr__connected(node, (int)u->pos, j) && c->uses[o->id]) c->reached[o->id] = 1;
            }
        }
    }
}

/* ---- terms and totals ------------------------------------------------------------------------ */

static gr_var *gr__total(gr__gctx *c, gr_var *v);

/* "yes" (1), "no" (0) or "maybe" (-1), as Aesara's _is_zero */
static int gr__is_zero(const gr_var *t) {
    if (t->kind == GR__VK_DISC) return 1;
    if (t->kind == GR__VK_NULL) return 0;
    if (gr__owner(t) && (gr__flags_of(gr__owner(t)->op) & GR__OPF_FILL)) t = gr__in(gr__owner(t))[0];   /* a fill: its value */
    if (t->kind == GR__VK_CONST) {
        const gr_array *a = (const gr_array *)gr__ext(t);
        int64_t i;
        for (i = 0; i < a->size; i++) if (gr_array_get(a, i) != 0) return 0;
        return 1;
    }
    return -1;
}

/* the grad rule of node on the output gradients og: ig[i] the term of input i (null "not
   implemented" ones for the connected inputs of an op without a grad rule) */
static gr_status gr__node_rule(gr__gctx *c, gr_node *node, gr_var *const *og, gr_var **ig, const uint8_t *iconn) {
    gr_graph *g = c->g;
    gr_status before = g->status, st;                /* an error left from earlier calls is not this rule's */
    int i, ni = node->n_in;
    for (i = 0; i < ni; i++) ig[i] = NULL;
    if (!node->op->grad) {
        for (i = 0; i < ni; i++) {
            ig[i] = iconn[i] ? gr_grad_not_implemented(node, i, gr__in(node)[i], "(the op has no grad rule)") : gr_disconnected_like(gr__in(node)[i]);
            if (!ig[i]) return g->status;
        }
        return GR_OK;
    }
    if (node->op->grad == gr__ew_grad && ni <= 8) {   /* built-in elementwise: no terms for inputs off the path */
        uint8_t skip[8];
        for (i = 0; i < ni; i++) skip[i] = (uint8_t)!(gr__in(node)[i]->id < c->nv && c->reached[gr__in(node)[i]->id]);
        st = gr__ew_grad_some(node, og, ig, skip);
    } else if ((gr__flags_of(node->op) & GR__OPF_GRAPHOP) && (*(gr__graphop *const *)gr__params(node))->grad_some) {
        uint8_t *skip = (uint8_t *)gr__arena_alloc(&c->scratch, (size_t)ni + 1);   /* the same, for an op made of a graph */
        if (!skip) return gr__error(g, GR_ERR_NOMEM, "%s: out of memory", c->fname);
        for (i = 0; i < ni; i++) skip[i] = (uint8_t)!(gr__in(node)[i]->id < c->nv && c->reached[gr__in(node)[i]->id]);
        st = (*(gr__graphop *const *)gr__params(node))->grad_some(node, og, ig, skip);
    } else st = node->op->grad(node, og, ig);
    if (st != GR_OK || (before == GR_OK && g->status != GR_OK)) {
        if (g->status == GR_OK) gr__error(g, st, "%s: the grad rule of %s failed (%s)", c->fname, gr__on(node->op).s, gr_status_string(st));
        return st != GR_OK ? st : g->status;
    }
    return GR_OK;
}

/* the terms of a grad rule checked against the op contract: a term for every input (a null
   gradient reaching an input wins over the rule's term), float and of the input's ndim, zero where
   only integer-valued outputs are reached, disconnected exactly where the connection pattern says
   so (an op without a pattern gets a warning only) */
static gr_status gr__node_terms_check(gr__gctx *c, gr_node *node, gr_var *const *og, gr_var **ig, const uint8_t *onan,
                                      const uint8_t *iconn, const uint8_t *only_int) {
    gr_graph *g = c->g;
    int i, j, ni = node->n_in, no = node->n_out;
    for (i = 0; i < ni; i++) {
        gr_var *t = ig[i], *x = gr__in(node)[i];
        if (!t)
            return gr__error(g, GR_ERR_TYPE, "%s: the grad rule of %s returned NULL for input %d (%s); return gr_disconnected_like(x), "
                             "zeros, or a null gradient instead", c->fname, gr__on(node->op).s, i, gr__d(x).s);
        for (j = 0; j < no; j++)                     /* null gradients poison what they reach */
            if (onan[j] && gr__connected(node, i, j) && t->kind != GR__VK_DISC) ig[i] = t = og[j];
        if (t->kind == GR__VK_OUT || t->kind == GR__VK_CONST || t->kind == GR__VK_INPUT || t->kind == GR__VK_SHARED) {
            if (!gr__is_float(t->dtype))
                return gr__error(g, GR_ERR_TYPE, "%s: the grad rule of %s illegally returned an integer-valued variable "
                                 "(input %d, dtype %s)", c->fname, gr__on(node->op).s, i, gr_dtype_name((gr_dtype)t->dtype));
            if (t->ndim != x->ndim)
                return gr__error(g, GR_ERR_TYPE, "%s: the grad rule of %s returned a term with %d dimensions for input %d (%s), "
                                 "but %d are required", c->fname, gr__on(node->op).s, t->ndim, i, gr__d(x).s, x->ndim);
        }
        if (iconn[i] && only_int[i] && !gr__is_marker(t) && gr__is_zero(t) == 0)   /* null terms are allowed there */
            return gr__error(g, GR_ERR_VALUE, "%s: the grad rule of %s returned a nonzero gradient for input %d (%s), which only "
                             "reaches integer-valued outputs", c->fname, gr__on(node->op).s, i, gr__d(x).s);
        if (t->kind != GR__VK_DISC && !iconn[i])
            return gr__error(g, GR_ERR_TYPE, "%s: the grad rule of %s returned a gradient for input %d (%s), but its connection "
                             "pattern says the input is disconnected: return gr_disconnected_like(x)", c->fname, gr__on(node->op).s, i, gr__d(x).s);
        if (t->kind == GR__VK_DISC && iconn[i]) {
            if (gr__has_pattern(node))
                return gr__error(g, GR_ERR_TYPE, "%s: the grad rule of %s returned a disconnected gradient for input %d (%s), "
                                 "but its connection pattern connects it", c->fname, gr__on(node->op).s, i, gr__d(x).s);
            gr__log(g, "%s: the grad rule of %s returned a disconnected gradient for input %d (%s); give the op a connection "
                    "pattern saying so", c->fname, gr__on(node->op).s, i, gr__d(x).s);
        }
    }
    return GR_OK;
}

/* step 4 for one node: its output gradients, then its grad rule and the checks of its terms; the
   shortcuts skip the rule when nothing, or only null gradients, flow back */
static gr_status gr__node_terms(gr__gctx *c, gr_node *node) {
    gr_graph *g = c->g;
    int ni = node->n_in, no = node->n_out, i, j, any_in = 0, all_nan = 1, first_nan = -1;
    gr_status st;
    gr_var **og = (gr_var **)gr__arena_alloc(&c->scratch, sizeof(gr_var *) * (size_t)(no + ni + 1)), **ig;
    uint8_t flags_stack[64], *oconn, *onan, *oint, *iconn, *only_nan, *only_int;
    uint8_t *fl = flags_stack;
    if (!og) return gr__error(g, GR_ERR_NOMEM, "%s: out of memory", c->fname);
    ig = og + no;
    if (3 * no + 3 * ni > 64) {
        fl = (uint8_t *)gr__arena_alloc(&c->scratch, (size_t)(3 * no + 3 * ni));
        if (!fl) return gr__error(g, GR_ERR_NOMEM, "%s: out of memory", c->fname);
    }
    oconn = fl; onan = oconn + no; oint = onan + no; iconn = oint + no; only_nan = iconn + ni; only_int = only_nan + ni;
    for (j = 0; j < no; j++) {
        og[j] = gr__total(c, gr__out(node)[j]);
        if (!og[j]) return g->status != GR_OK ? g->status : GR_ERR_NOMEM;
        oconn[j] = og[j]->kind != GR__VK_DISC;
        onan[j] = og[j]->kind == GR__VK_NULL;
        oint[j] = !gr__is_float(gr__out(node)[j]->dtype);
        if (onan[j] && first_nan < 0) first_nan = j;
    }
    if (c->vreg) {                                   /* its region: where its outputs' gradients come from */
        int32_t r = -1;
        for (j = 0; j < no; j++)
            if (oconn[j]) r = gr__region_lca(c->regs, r, c->vreg[gr__out(node)[j]->id] >= 0 ? c->vreg[gr__out(node)[j]->id] : 0);
        c->nreg[node->id] = r < 0 ? 0 : r;
    }
    for (i = 0; i < ni; i++) {
        int conn = 0, nonnan = 0, nonint = 0;
        for (j = 0; j < no; j++) {
            if (!gr__connected(node, i, j) || !oconn[j]) continue;
            conn = 1;
            if (!onan[j]) nonnan = 1;
            if (!oint[j]) nonint = 1;
        }
        iconn[i] = (uint8_t)conn;
        only_nan[i] = (uint8_t)!nonnan;
        only_int[i] = (uint8_t)!nonint;
        if (conn) any_in = 1;
        if (!only_nan[i]) all_nan = 0;
    }
    c->terms[node->id] = ig;
    if (!any_in) {                                   /* shortcut A: nothing flows back */
        for (i = 0; i < ni; i++) if (!(ig[i] = gr_disconnected_like(gr__in(node)[i]))) return g->status;
        return GR_OK;
    }
    if (all_nan) {                                   /* shortcut B: only null gradients flow back */
        for (i = 0; i < ni; i++) {
            ig[i] = iconn[i] ? og[first_nan] : gr_disconnected_like(gr__in(node)[i]);
            if (!ig[i]) return g->status;
        }
        return GR_OK;
    }
    for (j = 0; j < no; j++)                         /* keep float32 graphs float32 */
        if (oconn[j] && !onan[j] && !oint[j] && og[j]->dtype != gr__out(node)[j]->dtype) {
            og[j] = gr_cast(og[j], (gr_dtype)gr__out(node)[j]->dtype);
            if (!og[j]) return g->status;
        }
    if ((st = gr__node_rule(c, node, og, ig, iconn)) != GR_OK) return st;
    return gr__node_terms_check(c, node, og, ig, onan, iconn, only_int);
}

/* the region of a use: its node's, or the side of a conditional that reads it there */
static int32_t gr__use_region(gr__gctx *c, const gr__use *u) {
    const gr_node *node = c->g->nodes[u->node];
    int32_t r = c->nreg[u->node], s;
    if (!(gr__flags_of(node->op) & GR__OPF_LAZY) || u->pos == 0) return r;
    s = gr__region_get(&c->regs, &c->n_regs, &c->cap_regs, r, gr__in(node)[0], (int)u->pos <= (node->n_in - 1) / 2);
    if (s < 0) gr__error(c->g, GR_ERR_NOMEM, "%s: out of memory", c->fname);
    return s;
}

/* term t for v, valid in region `from`, made valid in region `to` (an enclosing one): zero where a
   side between them is not taken */
static gr_var *gr__region_leave(gr__gctx *c, gr_var *t, gr_var *v, int32_t from, int32_t to) {
    gr_var *z = NULL;
    int32_t r;
    if (from < 0) return NULL;
    for (r = from; t && r != to && r > 0; r = c->regs[r].parent) {
        gr_var *a, *b, *res = NULL;
        if (!z && !(z = gr__fill_like(v, t->dtype, 0.0))) return NULL;
        a = c->regs[r].side ? t : z;
        b = c->regs[r].side ? z : t;
        if (gr_ifelse(c->regs[r].cond, 1, &a, &b, &res) != GR_OK) return NULL;
        t = res;
    }
    return t;
}

/* the total gradient of an original variable (Aesara's access_grad: the sum of its terms, left to right) */
static gr_var *gr__total(gr__gctx *c, gr_var *v) {
    gr_var *null_term = NULL, *sum = NULL, *t;
    uint32_t e;
    if (c->total[v->id]) return c->total[v->id];
    if (!gr__in_map(c, v)) return c->total[v->id] = gr_disconnected_like(v);
    if (c->vreg) {                                   /* v's region: where its uses are */
        int32_t r = -1;
        for (e = c->uses[v->id]; e; e = GR__USE(c, e)->next) {
            int32_t ur = gr__use_region(c, GR__USE(c, e));
            if (ur < 0) return NULL;
            r = gr__region_lca(c->regs, r, ur);
        }
        c->vreg[v->id] = r < 0 ? 0 : r;
    }
    for (e = c->uses[v->id]; e; e = GR__USE(c, e)->next) {
        const gr__use *u = GR__USE(c, e);
        gr_var **terms = c->terms[u->node];
        if (!terms) {
            gr__error(c->g, GR_ERR_VALUE, "%s: internal order error at %s", c->fname, gr__on(c->g->nodes[u->node]->op).s);
            return NULL;
        }
        t = terms[u->pos];
        if (c->vreg && !gr__is_marker(t) && !(t = gr__region_leave(c, t, v, gr__use_region(c, u), c->vreg[v->id]))) return NULL;
        if (t->kind == GR__VK_NULL) { if (!null_term) null_term = t; }
        else if (t->kind != GR__VK_DISC) {
            sum = sum ? gr_add(sum, t) : t;
            if (!sum) return NULL;
        }
    }
    t = null_term ? null_term : sum ? sum : gr_disconnected_like(v);
    if (t && c->add_names && t == sum && t->id >= c->nv && c->cost && gr__vname(c->cost) && gr__vname(v)) {
        char name[256];
        snprintf(name, sizeof name, "(d%.120s/d%.120s)", gr__vname(c->cost), gr__vname(v));
        gr_var_set_name(t, name);
    }
    return c->total[v->id] = t;
}

/* ---- gr_grad --------------------------------------------------------------------------------- */

static void gr__warn_disconnected(gr_graph *g, const char *fname, const gr_var *v) {
    gr__log(g, "%s was asked to compute the gradient with respect to a variable that is not part of the computational "
            "graph of the cost, or is used only by a non-differentiable operator: %s", fname, gr__d(v).s);
}

/* the disconnected policy for v; GR_OK unless it raises */
static gr_status gr__on_disconnected(gr_graph *g, const char *fname, int policy, const gr_var *v) {
    if (policy == GR_IGNORE) return GR_OK;
    if (policy == GR_WARN) { gr__warn_disconnected(g, fname, v); return GR_OK; }
    return gr__error(g, GR_ERR_DISCONNECTED_INPUT, "%s: %s is not part of the computational graph of the cost, or is used "
                     "only by a non-differentiable operator", fname, gr__d(v).s);
}

/* the graph of the first non-NULL variable argument */
static gr_graph *gr__driver_graph(gr_var *cost, int n_wrt, gr_var *const *wrt, const gr_grad_opts *o) {
    int i;
    if (cost) return cost->graph;
    for (i = 0; wrt && i < n_wrt; i++) if (wrt[i]) return wrt[i]->graph;
    for (i = 0; o->consider_constant && i < o->n_consider_constant; i++) if (o->consider_constant[i]) return o->consider_constant[i]->graph;
    for (i = 0; o->known_vars && i < o->n_known; i++) if (o->known_vars[i]) return o->known_vars[i]->graph;
    for (i = 0; o->known_grads && i < o->n_known; i++) if (o->known_grads[i]) return o->known_grads[i]->graph;
    return NULL;
}

/* the arguments of gr__grad: counts, NULL entries, policies, graphs, the cost's type, and the dtype
   and ndim of the known gradients; GR_OK or the error recorded */
static gr_status gr__grad_check(gr_graph *g, const char *fname, gr_var *cost, int n_wrt, gr_var *const *wrt, gr_var **grads,
                                const gr_grad_opts *opts) {
    const gr_grad_opts o = *opts;
    int i;
    if (n_wrt < 0 || (n_wrt > 0 && (!wrt || !grads)))
        return gr__error(g, GR_ERR_VALUE, "%s: %s", fname, n_wrt < 0 ? "n_wrt is negative" : !wrt ? "wrt is NULL" : "grads is NULL");
    if (o.n_known < 0 || o.n_consider_constant < 0 || (o.n_known > 0 && (!o.known_vars || !o.known_grads)) ||
        (o.n_consider_constant > 0 && !o.consider_constant))
        return gr__error(g, GR_ERR_VALUE, "%s: known_vars/known_grads or consider_constant is NULL or has a negative count", fname);
    if ((unsigned)o.disconnected_inputs > GR_IGNORE || (unsigned)o.return_disconnected > GR_RETURN_DISCONNECTED ||
        (unsigned)o.null_gradients > GR_NULL_RETURN)
        return gr__error(g, GR_ERR_VALUE, "%s: invalid value for disconnected_inputs, return_disconnected or null_gradients", fname);
    if (!cost && o.n_known == 0)               /* (a cost that is NULL because its builder failed: that error) */
        return g->status != GR_OK ? g->status : gr__error(g, GR_ERR_VALUE, "%s: cost and known gradients can't both be NULL", fname);
    for (i = 0; i < n_wrt; i++) if (!wrt[i]) return gr__driver_null(g, fname, "wrt", i);
    for (i = 0; i < o.n_known; i++) if (!o.known_vars[i]) return gr__driver_null(g, fname, "known_vars", i);
    for (i = 0; i < o.n_known; i++) if (!o.known_grads[i]) return gr__driver_null(g, fname, "known_grads", i);
    for (i = 0; i < o.n_consider_constant; i++) if (!o.consider_constant[i]) return gr__driver_null(g, fname, "consider_constant", i);
    if (cost && cost->kind == GR__VK_NULL)
        return gr__error(g, GR_ERR_VALUE, "%s: can't differentiate a null cost; it is null because %s", fname, gr__null_reason(cost));
    if (cost && cost->ndim != 0)
        return gr__error(g, GR_ERR_TYPE, "%s: the cost must be a scalar; %s has %d dimensions", fname, gr__d(cost).s, cost->ndim);
    for (i = 0; i < n_wrt; i++)
        if (wrt[i]->graph != g) return gr__error(g, GR_ERR_VALUE, "%s: wrt[%d] (%s) belongs to another graph", fname, i, gr__d(wrt[i]).s);
    for (i = 0; i < o.n_consider_constant; i++)
        if (o.consider_constant[i]->graph != g)
            return gr__error(g, GR_ERR_VALUE, "%s: consider_constant[%d] (%s) belongs to another graph", fname, i,
                             gr__d(o.consider_constant[i]).s);
    for (i = 0; i < o.n_known; i++) {
        gr_var *kv = o.known_vars[i], *kg = o.known_grads[i];
        if (kv->graph != g || kg->graph != g)
            return gr__error(g, GR_ERR_VALUE, "%s: known gradient %d (%s) belongs to another graph", fname, i, gr__d(kv).s);
        if (!gr__is_marker(kg) && !gr__is_float(kg->dtype))
            return gr__error(g, GR_ERR_TYPE, "%s: gradients must always be null, disconnected, or float, but the known gradient "
                             "of %s is %s", fname, gr__d(kv).s, gr_dtype_name((gr_dtype)kg->dtype));
        if (!gr__is_marker(kg) && kg->ndim != kv->ndim)
            return gr__error(g, GR_ERR_TYPE, "%s: the known gradient of %s has %d dimensions, but %d are required", fname,
                             gr__d(kv).s, kg->ndim, kv->ndim);
    }
    return GR_OK;
}

/* step 4: the terms of every node whose rule is needed, consumers before producers (down the
   ids); the graph's progress callback hears "grad", counted in those nodes. A rule that calls
   gr_grad on this graph again is not heard (the callback is off meanwhile): one "grad" stage a call. */
static gr_status gr__all_terms(gr__gctx *c) {
    gr_graph *g = c->g;
    gr_progress_fn fn = g->progress;
    size_t total = 0, done = 0;
    uint32_t k;
    gr_status st = GR_OK;
    g->progress = NULL;
    if (fn)
        for (k = 0; k < c->nn; k++) total += c->in_s[k];
    gr__progress_to(fn, g->progress_user, "grad", 0, total);
    for (k = c->nn; k-- > 0 && st == GR_OK;) {
        if (!c->in_s[k]) continue;
        if ((st = gr__node_terms(c, g->nodes[k])) == GR_OK) gr__progress_to(fn, g->progress_user, "grad", ++done, total);
    }
    g->progress = fn;
    return st;
}

static gr_status gr__grad(const char *fname, gr_var *cost, int n_wrt, gr_var *const *wrt, gr_var **grads, const gr_grad_opts *opts) {
    gr_grad_opts o;
    gr__gctx c;
    gr_graph *g;
    gr_var **outs = NULL;
    uint32_t k;
    int i, n_outs = 0;
    gr_status st;
    if (opts) o = *opts; else memset(&o, 0, sizeof o);
    if (grads) for (i = 0; i < n_wrt; i++) grads[i] = NULL;
    g = gr__driver_graph(cost, n_wrt, wrt, &o);
    if (!g) return GR_ERR_VALUE;
    if ((st = gr__grad_check(g, fname, cost, n_wrt, wrt, grads, &o)) != GR_OK) return st;
    memset(&c, 0, sizeof c);
    c.g = g; c.fname = fname; c.nv = g->n_vars; c.nn = g->n_nodes; c.cost = cost; c.add_names = !o.no_names;
    c.uses = (uint32_t *)gr__calloc(c.nv, sizeof(uint32_t));
    c.tails = (uint32_t *)gr__calloc(c.nv, sizeof(uint32_t));
    c.reached = (uint8_t *)gr__calloc(c.nv, 1);
    c.constant = (uint8_t *)gr__calloc(c.nv, 1);
    c.in_s = (uint8_t *)gr__calloc(c.nn, 1);
    c.total = (gr_var **)gr__calloc(c.nv, sizeof(gr_var *));
    c.terms = (gr_var ***)gr__calloc(c.nn, sizeof(gr_var **));
    outs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(o.n_known + 1));
    if (c.nn < UINT32_MAX / 4u) gr__reserve((void **)&c.use, &c.cap_use, 2u * c.nn + 64u, sizeof(gr__use));   /* (a hint) */
    if (!c.uses || !c.tails || !c.reached || !c.constant || !c.in_s || !c.total || !c.terms || !outs) {
        st = gr__error(g, GR_ERR_NOMEM, "%s: out of memory", fname);
        goto done;
    }
    for (i = 0; i < o.n_consider_constant; i++) c.constant[o.consider_constant[i]->id] = 1;
    /* 1. seeds: ones for the cost (float; the cost's dtype if float), then the known gradients */
    if (cost) {
        outs[n_outs++] = cost;
        c.total[cost->id] = gr__scalar_const(g, gr__grad_dtype(cost), 1.0, 0);
        if (!c.total[cost->id]) { st = g->status; goto done; }
    }
    for (i = 0; i < o.n_known; i++) {
        outs[n_outs++] = o.known_vars[i];
        c.total[o.known_vars[i]->id] = o.known_grads[i];
    }
    /* 2, 3. connectivity */
    if ((st = gr__walk_down(&c, n_outs, outs)) != GR_OK) goto done;
    gr__walk_up(&c, n_wrt, wrt);                    /* (marks in_s too) */
    for (k = 0; k < c.nn && !c.vreg; k++)           /* conditionals: their regions are tracked */
        if (c.in_s[k] && (gr__flags_of(g->nodes[k]->op) & GR__OPF_LAZY)) {
            uint32_t v;
            c.vreg = (int32_t *)GR_MALLOC(sizeof(int32_t) * (c.nv + 1u));
            c.nreg = (int32_t *)gr__calloc(c.nn + 1u, sizeof(int32_t));
            if (!c.vreg || !c.nreg || gr__region_get(&c.regs, &c.n_regs, &c.cap_regs, -1, NULL, 0) != 0) {
                st = gr__error(g, GR_ERR_NOMEM, "%s: out of memory", fname);
                goto done;
            }
            for (v = 0; v < c.nv; v++) c.vreg[v] = -1;
        }
    /* wrt that do not reach the cost: the disconnected_inputs policy */
    for (i = 0; i < n_wrt; i++) {
        gr_var *w = wrt[i];
        if (gr__in_map(&c, w) || c.total[w->id]) continue;
        if ((st = gr__on_disconnected(g, fname, o.disconnected_inputs, w)) != GR_OK) goto done;
        if (!(c.total[w->id] = gr_disconnected_like(w))) { st = g->status; goto done; }
    }
    /* 4. every needed grad rule, consumers before producers (down the ids) */
    if ((st = gr__all_terms(&c)) != GR_OK) goto done;
    /* 5. totals and the policies (null_gradients, disconnected_inputs, return_disconnected) */
    for (i = 0; i < n_wrt; i++) {
        gr_var *t = gr__total(&c, wrt[i]);
        if (t && c.vreg && !gr__is_marker(t) && c.vreg[wrt[i]->id] > 0)   /* what the caller gets is valid everywhere */
            t = gr__region_leave(&c, t, wrt[i], c.vreg[wrt[i]->id], 0);
        if (!t) { st = g->status != GR_OK ? g->status : GR_ERR_NOMEM; goto done; }
        if (t->kind == GR__VK_NULL && o.null_gradients == GR_NULL_RAISE) {
            st = gr__error(g, GR_ERR_NULL_GRAD, "%s encountered a null gradient for %s: %s", fname, gr__d(wrt[i]).s, gr__null_reason(t));
            goto done;
        }
        if (t->kind == GR__VK_DISC) {
            if ((st = gr__on_disconnected(g, fname, o.disconnected_inputs, wrt[i])) != GR_OK) goto done;
            if (o.return_disconnected == GR_RETURN_ZERO) t = gr__zeros_grad(wrt[i]);
            else if (o.return_disconnected == GR_RETURN_NONE) t = NULL;
            if (!t && o.return_disconnected != GR_RETURN_NONE) { st = g->status; goto done; }
        }
        grads[i] = t;
    }
done:
    if (st != GR_OK) for (i = 0; i < n_wrt; i++) grads[i] = NULL;
    gr__arena_free(&c.scratch);
    GR_FREE(c.use); GR_FREE(c.uses); GR_FREE(c.tails); GR_FREE(c.reached); GR_FREE(c.constant); GR_FREE(c.in_s); GR_FREE(c.total); GR_FREE(c.terms);
    GR_FREE(c.regs); GR_FREE(c.vreg); GR_FREE(c.nreg);
    GR_FREE(outs);
    return st;
}

GR_API gr_status gr_grad(gr_var *cost, int n_wrt, gr_var *const *wrt, gr_var **grads, const gr_grad_opts *opts) {
    return gr__grad("gr_grad", cost, n_wrt, wrt, grads, opts);
}

GR_API gr_var *gr_grad1(gr_var *cost, gr_var *wrt) {
    gr_var *out = NULL;
    if (!cost || !wrt) return NULL;
    gr__grad("gr_grad1", cost, 1, &wrt, &out, NULL);
    return out;
}

/* ---- gr_lop: sum_i eval_points[i] . df[i]/dwrt ----------------------------------------------- */

GR_API gr_status gr_lop(int n_f, gr_var *const *f, int n_wrt, gr_var *const *wrt, gr_var *const *eval_points,
                        gr_var **out, const gr_grad_opts *opts) {
    gr_grad_opts o;
    gr_graph *g = NULL;
    int i;
    if (out) for (i = 0; i < n_wrt; i++) out[i] = NULL;
    for (i = 0; f && i < n_f && !g; i++) if (f[i]) g = f[i]->graph;
    for (i = 0; wrt && i < n_wrt && !g; i++) if (wrt[i]) g = wrt[i]->graph;
    for (i = 0; eval_points && i < n_f && !g; i++) if (eval_points[i]) g = eval_points[i]->graph;
    if (!g) return GR_ERR_VALUE;
    if (n_f < 1 || !f || !eval_points)
        return gr__error(g, GR_ERR_VALUE, "gr_lop: %s", n_f < 1 ? "needs at least one f" : !f ? "f is NULL" : "eval_points is NULL");
    for (i = 0; i < n_f; i++) if (!f[i]) return gr__driver_null(g, "gr_lop", "f", i);
    for (i = 0; i < n_f; i++) if (!eval_points[i]) return gr__driver_null(g, "gr_lop", "eval_points", i);
    for (i = 0; i < n_f; i++) {
        if (eval_points[i]->ndim != f[i]->ndim)
            return gr__error(g, GR_ERR_TYPE, "gr_lop: eval point %d has %d dimensions but f[%d] (%s) has %d", i,
                             eval_points[i]->ndim, i, gr__d(f[i]).s, f[i]->ndim);
    }
    if (opts) o = *opts; else memset(&o, 0, sizeof o);
    o.known_vars = f;
    o.known_grads = eval_points;
    o.n_known = n_f;
    o.null_gradients = GR_NULL_RAISE;
    o.no_names = 1;
    return gr__grad("gr_lop", NULL, n_wrt, wrt, out, &o);
}

/* ---- gr_subgraph_grad ------------------------------------------------------------------------ */

GR_API gr_status gr_subgraph_grad(int n_wrt, gr_var *const *wrt, int n_end, gr_var *const *end, int n_start,
                                  gr_var *const *start_vars, gr_var *const *start_grads, gr_var *cost,
                                  gr_var **wrt_grads, gr_var **end_grads) {
    gr_graph *g = cost ? cost->graph : NULL;
    gr_var **params = NULL, **from_start = NULL, **from_cost = NULL;
    gr_grad_opts o;
    int i, n = n_wrt + n_end;
    gr_status st = GR_OK;
    if (wrt_grads) for (i = 0; i < n_wrt; i++) wrt_grads[i] = NULL;
    if (end_grads) for (i = 0; i < n_end; i++) end_grads[i] = NULL;
    for (i = 0; !g && wrt && i < n_wrt; i++) if (wrt[i]) g = wrt[i]->graph;
    for (i = 0; !g && end && i < n_end; i++) if (end[i]) g = end[i]->graph;
    for (i = 0; !g && start_vars && i < n_start; i++) if (start_vars[i]) g = start_vars[i]->graph;
    for (i = 0; !g && start_grads && i < n_start; i++) if (start_grads[i]) g = start_grads[i]->graph;
    if (!g) return GR_ERR_VALUE;
    if (!cost && n_start <= 0)
        return g->status != GR_OK ? g->status : gr__error(g, GR_ERR_VALUE, "gr_subgraph_grad: cost or start must be given");
    if (n_wrt < 0 || n_end < 0 || n_start < 0 || (n_wrt && (!wrt || !wrt_grads)) || (n_end && (!end || !end_grads)) ||
        (n_start && (!start_vars || !start_grads)))
        return gr__error(g, GR_ERR_VALUE, "gr_subgraph_grad: a NULL array or a negative count");
    for (i = 0; i < n_wrt; i++) if (!wrt[i]) return gr__driver_null(g, "gr_subgraph_grad", "wrt", i);
    for (i = 0; i < n_end; i++) if (!end[i]) return gr__driver_null(g, "gr_subgraph_grad", "end", i);
    for (i = 0; i < n_start; i++) if (!start_vars[i]) return gr__driver_null(g, "gr_subgraph_grad", "start", i);
    for (i = 0; i < n_start; i++) if (!start_grads[i]) return gr__driver_null(g, "gr_subgraph_grad", "start_grads", i);
    params = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(n + 1));
    from_start = (gr_var **)gr__calloc((size_t)n + 1, sizeof(gr_var *));
    from_cost = (gr_var **)gr__calloc((size_t)n + 1, sizeof(gr_var *));
    if (!params || !from_start || !from_cost) { st = gr__error(g, GR_ERR_NOMEM, "gr_subgraph_grad: out of memory"); goto done; }
    for (i = 0; i < n_wrt; i++) params[i] = wrt[i];
    for (i = 0; i < n_end; i++) params[n_wrt + i] = end[i];
    memset(&o, 0, sizeof o);
    o.consider_constant = end;
    o.n_consider_constant = n_end;
    o.disconnected_inputs = GR_IGNORE;
    if (n_start > 0) {
        o.known_vars = start_vars;
        o.known_grads = start_grads;
        o.n_known = n_start;
        if ((st = gr__grad("gr_subgraph_grad", NULL, n, params, from_start, &o)) != GR_OK) goto done;
        o.known_vars = NULL; o.known_grads = NULL; o.n_known = 0;
    }
    if (cost && (st = gr__grad("gr_subgraph_grad", cost, n, params, from_cost, &o)) != GR_OK) goto done;
    for (i = 0; i < n; i++) {
        gr_var *t = from_start[i] && from_cost[i] ? gr_add(from_start[i], from_cost[i]) : from_start[i] ? from_start[i] : from_cost[i];
        if (!t) { st = g->status != GR_OK ? g->status : GR_ERR_VALUE; goto done; }
        if (i < n_wrt) wrt_grads[i] = t; else end_grads[i - n_wrt] = t;
    }
done:
    if (st != GR_OK) {
        for (i = 0; wrt_grads && i < n_wrt; i++) wrt_grads[i] = NULL;
        for (i = 0; end_grads && i < n_end; i++) end_grads[i] = NULL;
    }
    GR_FREE(params); GR_FREE(from_start); GR_FREE(from_cost);
    return st;
}

/* ==== src/rop.c: generated region; edit src/rop.c, then run make gradient.h ==== */
/* src/rop.c: forward mode: gr_rop.

   Tangents flow forward through the nodes between wrt and f, in topological order, without
   recursion. Every variable's tangent is in one of three states:
     REAL  a variable holding the tangent;
     ZERO  known to be zero: a root not in wrt (Aesara gives roots zero tangents), or computed
           only from such; kept symbolic so that no zero arithmetic is built;
     NONE  no derivative reaches it: every path from wrt passes a non-differentiable op
           (gr_disconnected_grad, gr_undefined_grad, an integer-valued output).
   An op's R-op rule sees REAL tangents and disconnected markers for the others. An op without an
   R-op rule gets one from its grad rule by the double pullback: the gradient g(u) of the node for
   a dummy cotangent u is linear in u, so the gradient of <g(u), v> with respect to u is J v (a
   user's op needs only a grad rule to get an R-op). */

enum { GR__T_UNSET, GR__T_NONE, GR__T_ZERO, GR__T_REAL };

/* an op's outputs carry no derivative */
static int gr__nondiff_out(const gr_node *node, int j) {
    return (gr__flags_of(node->op) & GR__OPF_NONDIFF) || !gr__is_float(gr__out(node)[j]->dtype);
}

/* The state of output j of a node whose R-op gave it no tangent. A NONE input (a tangent from
   wrt stopped upstream), or a REAL one stopped here by a non-differentiable output, makes it
   NONE whatever ZERO inputs say: zeros from roots are no contribution (dot(disconnected_grad(x),
   y) with respect to x is disconnected, although Aesara's direct path gives zeros from y's zero
   tangent). With only ZERO inputs it is ZERO, non-differentiable or not: no tangent from wrt
   reaches it, so it is a function of roots. For a differentiable output, inputs its connection
   pattern excludes (a shape reference) do not count: the R-op of grad(dot(x, v).sum(), v) with
   respect to v is zeros. */
static int gr__no_tangent_state(const gr_node *node, int j, const uint8_t *state) {
    int i, real = 0, none = 0, zero = 0, nondiff = gr__nondiff_out(node, j);
    for (i = 0; i < node->n_in; i++) {
        int s = state[gr__in(node)[i]->id];
        if (!nondiff && !gr__connected(node, i, j)) continue;
        if (s == GR__T_REAL) real = 1;
        else if (s == GR__T_NONE) none = 1;
        else zero = 1;
    }
    if (none || (real && nondiff)) return GR__T_NONE;
    if (!real) return GR__T_ZERO;
    return zero ? GR__T_ZERO : GR__T_NONE;   /* a rule that gives nothing for a real tangent */
}

/* the double pullback for one node: orop[j] = J_j . ev, NULL where nothing flows */
static gr_status gr__rop_by_pullback(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_graph *g = node->graph;
    int ni = node->n_in, no = node->n_out, i, j, nk = 0, nu = 0;
    gr_var **u = (gr_var **)gr__calloc((size_t)(2 * no + 3 * ni + 1), sizeof(gr_var *)), **ig, **kv, **kg, **res;
    int *u_out = (int *)gr__calloc((size_t)no + 1, sizeof(int));
    gr_grad_opts o;
    gr_status st = GR_OK;
    for (j = 0; j < no; j++) orop[j] = NULL;
    if (!u || !u_out) { st = gr__error(g, GR_ERR_NOMEM, "gr_rop: out of memory"); goto done; }
    ig = u + no; kv = ig + ni; kg = kv + ni; res = kg + ni;
    if (!node->op->grad) {
        st = gr__error(g, GR_ERR_GRAD_NOT_IMPLEMENTED, "gr_rop: %s has neither an R-op rule nor a grad rule", gr__on(node->op).s);
        goto done;
    }
    for (j = 0; j < no; j++) {                       /* dummy cotangents: zeros like each float output */
        gr_var *o_j = gr__out(node)[j];
        if (!gr__is_float(o_j->dtype)) { u[j] = gr_disconnected_like(o_j); continue; }
        u[j] = gr__fill_like(o_j, o_j->dtype, 0.0);
        if (!u[j]) { st = g->status; goto done; }
    }
    for (i = 0; i < ni; i++) ig[i] = NULL;
    st = node->op->grad(node, u, ig);
    if (st != GR_OK || g->status != GR_OK) { st = g->status != GR_OK ? g->status : st; goto done; }
    for (i = 0; i < ni; i++) {
        if (gr_is_disconnected(ev[i]) || !ig[i] || gr_is_disconnected(ig[i])) continue;
        if (gr_is_null(ig[i])) {
            st = gr__error(g, (gr_status)ig[i]->aux, "gr_rop: %s has no R-op rule and its gradient for input %d is null: %s",
                           gr__on(node->op).s, i, gr__null_reason(ig[i]));
            goto done;
        }
        kv[nk] = ig[i];
        kg[nk] = gr__is_float(ev[i]->dtype) && ev[i]->dtype == ig[i]->dtype ? ev[i] : gr_cast(ev[i], (gr_dtype)ig[i]->dtype);
        if (!kg[nk]) { st = g->status; goto done; }
        nk++;
    }
    if (nk == 0) goto done;
    for (j = 0; j < no; j++) if (!gr_is_disconnected(u[j])) { u_out[nu] = j; u[nu++] = u[j]; }
    memset(&o, 0, sizeof o);
    o.known_vars = kv;
    o.known_grads = kg;
    o.n_known = nk;
    o.disconnected_inputs = GR_IGNORE;
    o.return_disconnected = GR_RETURN_DISCONNECTED;
    o.no_names = 1;
    if ((st = gr__grad("gr_rop", NULL, nu, u, res, &o)) != GR_OK) goto done;
    for (j = 0; j < nu; j++) orop[u_out[j]] = gr_is_disconnected(res[j]) ? NULL : res[j];
done:
    GR_FREE(u);
    GR_FREE(u_out);
    return st;
}

static gr_status gr__rop_policy(gr_graph *g, int policy, const gr_var *v) {
    if (policy == GR_IGNORE) return GR_OK;
    if (policy == GR_WARN) {
        gr__log(g, "gr_rop was asked to compute the gradient with respect to a variable that is not part of the computational "
                "graph of variables in wrt, or is used only by a non-differentiable operator: %s", gr__d(v).s);
        return GR_OK;
    }
    return gr__error(g, GR_ERR_DISCONNECTED_INPUT, "gr_rop: no tangent from wrt reaches %s (it is not computed from wrt, or only "
                     "through a non-differentiable operator)", gr__d(v).s);
}

/* the arguments of gr_rop (g: the graph of the first one given): counts, NULL entries, policies,
   graphs, matching dimensionalities, no gradient markers; GR_OK or the error recorded */
static gr_status gr__rop_check(gr_graph *g, int n_f, gr_var *const *f, int n_wrt, gr_var *const *wrt, gr_var *const *eval_points,
                               gr_var **out, const gr_rop_opts *o) {
    int i;
    if (n_f < 1 || n_wrt < 0 || !f || !out || (n_wrt > 0 && (!wrt || !eval_points)))
        return gr__error(g, GR_ERR_VALUE, "gr_rop: %s", n_f < 1 ? "needs at least one f" : n_wrt < 0 ? "n_wrt is negative" : "a NULL array");
    if ((unsigned)o->disconnected_outputs > GR_IGNORE || (unsigned)o->return_disconnected > GR_RETURN_DISCONNECTED)
        return gr__error(g, GR_ERR_VALUE, "gr_rop: invalid value for disconnected_outputs or return_disconnected");
    for (i = 0; i < n_f; i++) if (!f[i]) return gr__driver_null(g, "gr_rop", "f", i);
    for (i = 0; i < n_wrt; i++) if (!wrt[i]) return gr__driver_null(g, "gr_rop", "wrt", i);
    for (i = 0; i < n_wrt; i++) if (!eval_points[i]) return gr__driver_null(g, "gr_rop", "eval_points", i);
    for (i = 0; i < n_wrt; i++) {
        if (wrt[i]->graph != g || eval_points[i]->graph != g)
            return gr__error(g, GR_ERR_VALUE, "gr_rop: wrt[%d] or its eval point belongs to another graph", i);
        if (wrt[i]->ndim != eval_points[i]->ndim)
            return gr__error(g, GR_ERR_TYPE, "gr_rop: elements %d of wrt (%s) and eval_points have mismatched dimensionalities: %d and %d",
                             i, gr__d(wrt[i]).s, wrt[i]->ndim, eval_points[i]->ndim);
        if (gr__is_marker(eval_points[i]) || gr__is_marker(wrt[i]))
            return gr__error(g, GR_ERR_TYPE, "gr_rop: wrt[%d] or its eval point is a gradient marker, not a value", i);
    }
    for (i = 0; i < n_f; i++) {
        if (f[i]->graph != g) return gr__error(g, GR_ERR_VALUE, "gr_rop: f[%d] belongs to another graph", i);
        if (gr__is_marker(f[i])) return gr__error(g, GR_ERR_TYPE, "gr_rop: f[%d] is a gradient marker, not a value", i);
    }
    return GR_OK;
}

/* the tangents of node's outputs from those of its inputs (tan[], state[] by variable id): its R-op
   rule (or the double pullback) on the REAL tangents, a state for every output it gives none;
   ev and orop: room for node's inputs and outputs */
static gr_status gr__rop_node(gr_graph *g, gr_node *node, uint8_t *state, gr_var **tan, gr_var **ev, gr_var **orop) {
    int i, j, any_real = 0;
    gr_status st;
    for (i = 0; i < node->n_in; i++) {
        gr_var *x = gr__in(node)[i];
        if (state[x->id] == GR__T_UNSET) state[x->id] = GR__T_ZERO;   /* a root not in wrt */
        if (state[x->id] == GR__T_REAL) {
            gr_var *t = tan[x->id];
            ev[i] = t->dtype == x->dtype ? t : gr_cast(t, (gr_dtype)x->dtype);
            any_real = 1;
        } else
            ev[i] = gr_disconnected_like(x);
        if (!ev[i]) return g->status;
    }
    for (j = 0; j < node->n_out; j++) orop[j] = NULL;
    if (any_real) {
        st = node->op->rop ? node->op->rop(node, ev, orop) : gr__rop_by_pullback(node, ev, orop);
        if (st != GR_OK || g->status != GR_OK) {
            if (g->status == GR_OK) gr__error(g, st, "gr_rop: the R-op rule of %s failed (%s)", gr__on(node->op).s, gr_status_string(st));
            return g->status;
        }
    }
    for (j = 0; j < node->n_out; j++) {
        gr_var *y = gr__out(node)[j], *r = orop[j];
        if (r && !gr__is_marker(r)) {
            if (r->dtype != y->dtype && gr__is_float(y->dtype)) r = gr_cast(r, (gr_dtype)y->dtype);
            if (!r) return g->status;
            if (r->ndim != y->ndim)
                return gr__error(g, GR_ERR_TYPE, "gr_rop: the R-op rule of %s returned a tangent with %d dimensions for output %d, "
                                 "but %d are required", gr__on(node->op).s, r->ndim, j, y->ndim);
            state[y->id] = GR__T_REAL;
            tan[y->id] = r;
        } else
            state[y->id] = gr__no_tangent_state(node, j, state);
    }
    return GR_OK;
}

/* out[i]: f[i]'s tangent, zeros where it is known to be zero, else what the policies say */
static gr_status gr__rop_results(gr_graph *g, int n_f, gr_var *const *f, const uint8_t *state, const uint8_t *stop,
                                 gr_var *const *tan, gr_var **out, const gr_rop_opts *o) {
    int i;
    gr_status st;
    for (i = 0; i < n_f; i++) {
        gr_var *y = f[i], *r = NULL;
        int s = state[y->id];
        if (!gr__owner(y) && !stop[y->id]) s = GR__T_NONE;   /* a root not in wrt: no tangent reaches it */
        if (s == GR__T_REAL) r = tan[y->id];
        else if (s == GR__T_ZERO) r = gr__zeros_grad(y);
        else {
            if ((st = gr__rop_policy(g, o->disconnected_outputs, y)) != GR_OK) return st;
            if (o->return_disconnected == GR_RETURN_ZERO) r = gr__zeros_grad(y);
            else if (o->return_disconnected == GR_RETURN_DISCONNECTED) r = gr_disconnected_like(y);
            else { out[i] = NULL; continue; }
        }
        if (!r) return g->status != GR_OK ? g->status : GR_ERR_VALUE;
        out[i] = r;
    }
    return GR_OK;
}

GR_API gr_status gr_rop(int n_f, gr_var *const *f, int n_wrt, gr_var *const *wrt, gr_var *const *eval_points, gr_var **out,
                        const gr_rop_opts *opts) {
    gr_rop_opts o;
    gr_graph *g = NULL;
    uint8_t *state = NULL, *stop = NULL;
    gr_var **tan = NULL, **ev = NULL, **orop = NULL;
    gr_node **order = NULL;
    uint32_t n_order = 0, k, nv;
    int i, cap = 0;
    gr_status st;
    if (out) for (i = 0; i < n_f; i++) out[i] = NULL;
    for (i = 0; f && i < n_f && !g; i++) if (f[i]) g = f[i]->graph;
    for (i = 0; wrt && i < n_wrt && !g; i++) if (wrt[i]) g = wrt[i]->graph;
    for (i = 0; eval_points && i < n_wrt && !g; i++) if (eval_points[i]) g = eval_points[i]->graph;
    if (!g) return GR_ERR_VALUE;
    if (opts) o = *opts; else memset(&o, 0, sizeof o);
    if ((st = gr__rop_check(g, n_f, f, n_wrt, wrt, eval_points, out, &o)) != GR_OK) return st;
    nv = g->n_vars;
    state = (uint8_t *)gr__calloc(nv, 1);
    stop = (uint8_t *)gr__calloc(nv, 1);
    tan = (gr_var **)gr__calloc(nv, sizeof(gr_var *));
    if (!state || !stop || !tan) { st = gr__error(g, GR_ERR_NOMEM, "gr_rop: out of memory"); goto done; }
    for (i = n_wrt - 1; i >= 0; i--) {               /* the first of repeated wrt wins */
        stop[wrt[i]->id] = 1;
        state[wrt[i]->id] = GR__T_REAL;
        tan[wrt[i]->id] = eval_points[i];
    }
    if ((st = gr__toposort(g, n_f, f, stop, &order, &n_order)) != GR_OK) goto done;
    for (k = 0; k < n_order; k++) {
        gr_node *node = order[k];
        if (node->n_in > cap || node->n_out > cap) {
            cap = node->n_in > node->n_out ? node->n_in : node->n_out;
            GR_FREE(ev);
            ev = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(2 * cap));
            if (!ev) { st = gr__error(g, GR_ERR_NOMEM, "gr_rop: out of memory"); goto done; }
            orop = ev + cap;
        }
        if ((st = gr__rop_node(g, node, state, tan, ev, orop)) != GR_OK) goto done;
    }
    st = gr__rop_results(g, n_f, f, state, stop, tan, out, &o);
done:
    if (st != GR_OK) for (i = 0; i < n_f; i++) out[i] = NULL;
    GR_FREE(state); GR_FREE(stop); GR_FREE(tan); GR_FREE(ev); GR_FREE(order);
    return st;
}

/* ==== src/jacobian.c: generated region; edit src/jacobian.c, then run make gradient.h ==== */
/* src/jacobian.c: gr_jacobian and gr_hessian.

   The Jacobian of an expression e (any ndim, m elements) with respect to w is built from ONE
   pullback: g(u) = Lop(flatten(e), w, u) for a cotangent u of m elements, linear in u. The graph
   of g is then vectorised: u is replaced by the m x m identity, every node that reads it gains a
   leading batch axis (ops/batch.c), so the m rows of the Jacobian come out of one pass, shaped
   (m, *w.shape), then (*e.shape, *w.shape). The Hessian is the Jacobian of the gradient, one
   diagonal block per wrt. */

#ifndef GR_NO_BATCH                  /* without batching (ops/table.h), only 0-d expressions */
/* A copy of what `roots` compute from the seeds, with seed[i] replaced by seed_b[i]: a batched
   replacement (one more leading axis) when seed_isb is NULL or seed_isb[i], a plain substitute
   otherwise. Every node reading a replaced value is rebuilt: by its op's batch rule when it reads
   a batched one, as the same op on the substitutes otherwise. out[k] is root k's counterpart and
   out_b[k] says whether it is batched. */
static gr_status gr__vectorize(gr_graph *g, int n_seed, gr_var *const *seed, gr_var *const *seed_b, const uint8_t *seed_isb,
                               int n, gr_var *const *roots, gr_var **out, uint8_t *out_b) {
    uint32_t nv = g->n_vars, n_order = 0, k;
    gr_var **map = (gr_var **)gr__calloc(nv, sizeof(gr_var *));
    uint8_t *isb = (uint8_t *)gr__calloc(nv, 1), *stop = (uint8_t *)gr__calloc(nv, 1);
    gr_node **order = NULL;
    gr_var *ins_s[8], *outs_s[8], **ins = ins_s, **outs = outs_s;
    unsigned char bat_s[8], *bat = bat_s;
    int cap = 8, i, j;
    gr_status st = GR_OK;
    if (!map || !isb || !stop) { st = gr__error(g, GR_ERR_NOMEM, "gr_jacobian: out of memory"); goto done; }
    for (i = 0; i < n_seed; i++) {
        map[seed[i]->id] = seed_b[i];
        isb[seed[i]->id] = (uint8_t)(seed_isb ? seed_isb[i] : 1);
        stop[seed[i]->id] = 1;
    }
    if ((st = gr__toposort(g, n, roots, stop, &order, &n_order)) != GR_OK) goto done;
    for (k = 0; k < n_order; k++) {
        gr_node *node = order[k];
        int any_b = 0, any_sub = 0;
        if (node->n_in > cap || node->n_out > cap) {
            cap = node->n_in > node->n_out ? node->n_in : node->n_out;
            if (ins != ins_s) { GR_FREE(ins); GR_FREE(outs); GR_FREE(bat); }
            ins = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)cap);
            outs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)cap);
            bat = (unsigned char *)GR_MALLOC((size_t)cap);
            if (!ins || !outs || !bat) { st = gr__error(g, GR_ERR_NOMEM, "gr_jacobian: out of memory"); goto done; }
        }
        for (i = 0; i < node->n_in; i++) {
            gr_var *x = gr__in(node)[i];
            gr_var *m = x->id < nv ? map[x->id] : NULL;
            bat[i] = (unsigned char)(m && isb[x->id]);
            ins[i] = m ? m : x;
            any_b |= bat[i];
            any_sub |= m != NULL;
        }
        if (!any_sub) continue;                      /* reads nothing replaced: shared as it is */
        for (j = 0; j < node->n_out; j++) outs[j] = NULL;
        if (any_b) st = gr__batch_of(node->op) ? gr__batch_of(node->op)(node, ins, bat, outs) : gr__map_batch(node, ins, bat, outs);
        else st = gr__make_node_n(g, node->op, gr__params(node), node->params_size, node->n_in, ins, node->n_out, outs);
        if (st != GR_OK || g->status != GR_OK) { st = g->status != GR_OK ? g->status : st; goto done; }
        for (j = 0; j < node->n_out; j++) {
            if (!outs[j]) { st = gr__error(g, GR_ERR_VALUE, "gr_jacobian: the batching rule of %s gave no output", gr__on(node->op).s); goto done; }
            map[gr__out(node)[j]->id] = outs[j];
            isb[gr__out(node)[j]->id] = (uint8_t)any_b;
        }
    }
    for (i = 0; i < n; i++) {
        gr_var *m = roots[i]->id < nv ? map[roots[i]->id] : NULL;
        out[i] = m ? m : roots[i];
        out_b[i] = (uint8_t)(m && isb[roots[i]->id]);
    }
done:
    if (ins != ins_s) { GR_FREE(ins); GR_FREE(outs); GR_FREE(bat); }
    GR_FREE(map); GR_FREE(isb); GR_FREE(stop); GR_FREE(order);
    return st;
}

/* zeros of shape (*shape(lead), *shape(w)) of dtype dt */
static gr_var *gr__zeros_outer(gr_var *lead, gr_var *w, int dt) {
    int pattern[GR_MAX_NDIM], i;
    gr_var *a, *b;
    for (i = 0; i < lead->ndim; i++) pattern[i] = i;
    for (i = 0; i < w->ndim; i++) pattern[lead->ndim + i] = GR_NEWAXIS;
    a = gr__dimshuffle(gr__fill_like(lead, dt, 0.0), lead->ndim + w->ndim, pattern, 0);
    b = gr__fill_like(w, dt, 0.0);
    return gr_add(a, b);
}

/* the graph of gr_jacobian's or gr_hessian's first non-NULL variable argument */
#endif

static gr_graph *gr__jh_graph(gr_var *first, int n_wrt, gr_var *const *wrt) {
    int i;
    if (first) return first->graph;
    for (i = 0; wrt && i < n_wrt; i++) if (wrt[i]) return wrt[i]->graph;
    return NULL;
}

static gr_status gr__jacobian(const char *fname, gr_var *expr, int n_wrt, gr_var *const *wrt, gr_var **out, const gr_grad_opts *opts,
                              int disconnected) {
    gr_graph *g;
    gr_grad_opts o;
    gr_var *flat, *u, *seed_b, **pulled = NULL, **batched = NULL;
    uint8_t *isb = NULL;
    int i, dt;
    gr_status st = GR_OK;
    if (out) for (i = 0; i < n_wrt; i++) out[i] = NULL;
    if (!(g = gr__jh_graph(expr, n_wrt, wrt))) return GR_ERR_VALUE;
    if (!expr) return gr__driver_null(g, fname, "the expression", -1);
    if (n_wrt < 0 || (n_wrt > 0 && (!wrt || !out))) return gr__error(g, GR_ERR_VALUE, "%s: a NULL array or a negative count", fname);
    for (i = 0; i < n_wrt; i++) if (!wrt[i]) return gr__driver_null(g, fname, "wrt", i);
    if (gr__is_marker(expr)) return gr__error(g, GR_ERR_TYPE, "%s: the expression is a gradient marker, not a value", fname);
    memset(&o, 0, sizeof o);
    if (opts) {
        o.consider_constant = opts->consider_constant;
        o.n_consider_constant = opts->n_consider_constant;
    }
    o.disconnected_inputs = (gr_on_disconnected)disconnected;
    o.no_names = 1;
    if (expr->ndim == 0) return gr__grad(fname, expr, n_wrt, wrt, out, &o);
    for (i = 0; i < n_wrt; i++)
        if (expr->ndim + wrt[i]->ndim > GR_MAX_NDIM)
            return gr__error(g, GR_ERR_VALUE, "%s: the Jacobian of %s with respect to %s would have %d dimensions (at most %d)", fname,
                             gr__d(expr).s, gr__d(wrt[i]).s, expr->ndim + wrt[i]->ndim, GR_MAX_NDIM);
#ifdef GR_NO_BATCH
    (void)flat; (void)u; (void)seed_b; (void)pulled; (void)batched; (void)isb; (void)dt; (void)st;
    return gr__error(g, GR_ERR_VALUE, "%s: gradient.h was built without batching (GR_NO_BATCH): only the Jacobian of a 0-d "
                     "expression (its gradient) is available, and %s is %d-d", fname, gr__d(expr).s, expr->ndim);
#else
    dt = gr__grad_dtype(expr);
    flat = expr->ndim == 1 ? expr : gr_flatten(expr);
    if (!flat) return g->status;
    /* one pullback with a placeholder cotangent ... */
    u = gr__new_var(g, dt, 1, gr__vshape(flat), GR__VK_INPUT);
    if (!u) return g->status;
    if (!gr__set_name(g, u, "jacobian cotangent")) return g->status;
    pulled = (gr_var **)gr__calloc((size_t)n_wrt + 1, sizeof(gr_var *));
    batched = (gr_var **)gr__calloc((size_t)n_wrt + 1, sizeof(gr_var *));
    isb = (uint8_t *)gr__calloc((size_t)n_wrt + 1, 1);
    if (!pulled || !batched || !isb) { st = gr__error(g, GR_ERR_NOMEM, "%s: out of memory", fname); goto done; }
    o.known_vars = &flat;
    o.known_grads = &u;
    o.n_known = 1;
    if ((st = gr__grad(fname, NULL, n_wrt, wrt, pulled, &o)) != GR_OK) goto done;
    /* ... vectorised over the rows of the identity */
    seed_b = gr__eye_like(flat, dt);
    if (!seed_b) { st = g->status; goto done; }
    if ((st = gr__vectorize(g, 1, &u, &seed_b, NULL, n_wrt, pulled, batched, isb)) != GR_OK) goto done;
    for (i = 0; i < n_wrt; i++) {
        gr_var *j = isb[i] ? batched[i] : gr__zeros_outer(flat, wrt[i], gr__grad_dtype(wrt[i]));
        if (j && expr->ndim != 1) j = gr__unflatten(j, expr);
        if (!j) { st = g->status; goto done; }
        out[i] = j;
    }
done:
    if (st != GR_OK) for (i = 0; i < n_wrt; i++) out[i] = NULL;
    GR_FREE(pulled); GR_FREE(batched); GR_FREE(isb);
    return st;
#endif
}

GR_API gr_status gr_jacobian(gr_var *expression, int n_wrt, gr_var *const *wrt, gr_var **out, const gr_grad_opts *opts) {
    return gr__jacobian("gr_jacobian", expression, n_wrt, wrt, out, opts, opts ? (int)opts->disconnected_inputs : (int)GR_RAISE);
}

GR_API gr_status gr_hessian(gr_var *cost, int n_wrt, gr_var *const *wrt, gr_var **out, const gr_grad_opts *opts) {
    gr_graph *g;
    gr_grad_opts o;
    int i;
    gr_status st = GR_OK;
    if (out) for (i = 0; i < n_wrt; i++) out[i] = NULL;
    if (!(g = gr__jh_graph(cost, n_wrt, wrt))) return GR_ERR_VALUE;
    if (!cost) return gr__driver_null(g, "gr_hessian", "cost", -1);
    if (n_wrt < 0 || (n_wrt > 0 && (!wrt || !out))) return gr__error(g, GR_ERR_VALUE, "gr_hessian: a NULL array or a negative count");
    for (i = 0; i < n_wrt; i++) if (!wrt[i]) return gr__driver_null(g, "gr_hessian", "wrt", i);
    if (cost->ndim != 0) return gr__error(g, GR_ERR_TYPE, "gr_hessian: the cost must be a scalar; %s has %d dimensions", gr__d(cost).s, cost->ndim);
    memset(&o, 0, sizeof o);
    if (opts) {
        o.consider_constant = opts->consider_constant;
        o.n_consider_constant = opts->n_consider_constant;
        o.disconnected_inputs = opts->disconnected_inputs;
    }
    o.no_names = 1;
    for (i = 0; i < n_wrt; i++) {
        gr_var *gw = NULL;
        if ((st = gr__grad("gr_hessian", cost, 1, &wrt[i], &gw, &o)) != GR_OK) break;
        /* the gradient may not depend on w although the cost does (a linear cost): ignore there */
        if ((st = gr__jacobian("gr_hessian", gw, 1, &wrt[i], &out[i], &o, GR_IGNORE)) != GR_OK) break;
    }
    if (st != GR_OK) for (i = 0; i < n_wrt; i++) out[i] = NULL;
    return st;
}

/* ==== src/signature.c: generated region; edit src/signature.c, then run make gradient.h ==== */
/* src/signature.c: shape signatures (src/rewrite.h): one code per axis, a static size or a symbol
   for a size unknown until the call; equal symbols, equal sizes in every call. An elementwise
   result keeps an axis's symbol where its operands agree on it; a structural node's output 0 gets
   what its row's `sig` rule (ops/table.h) says; anything else fresh symbols. */

/* room for v's codes; NULL when out of memory */
static int32_t *gr__sig_slot(gr__rewriter *rw, const gr_var *v) {
    uint32_t id = v->id;
    if (!gr__grow_fill((void **)&rw->sig_at, &rw->cap_sig_at, id, sizeof(int64_t), 0xFF)) return NULL;   /* -1: unknown */
    if (rw->n_sig + (uint32_t)v->ndim + 1 > rw->cap_sig &&
        !gr__grow((void **)&rw->sig, &rw->cap_sig, rw->n_sig + (uint32_t)v->ndim + 1, sizeof(int32_t)))
        return NULL;
    rw->sig_at[id] = rw->n_sig;
    rw->n_sig += (uint32_t)v->ndim;
    return rw->sig + rw->sig_at[id];
}

static int32_t gr__fresh_code(gr__rewriter *rw, const gr_var *v, int axis) {
    return gr__vshape(v)[axis] >= 0 ? GR__SIG_STATIC(gr__vshape(v)[axis]) : rw->next_sym++;
}

/* the symbol of an axis of symbol `sym` with k rows trimmed off (x[a:-b] trims a + b): the same
   for every slice that trims as many, so x[:-1] and x[1:] have the same length */
static GR__UNUSED int32_t gr__sig_trimmed(gr__rewriter *rw, int32_t sym, int64_t k) {
    uint32_t mask, i;
    if (k == 0) return sym;
    if (rw->n_trim * 2 + 2 >= rw->cap_trim) {
        uint32_t nc = rw->cap_trim ? rw->cap_trim * 2 : 64, q;
        int64_t *t = (int64_t *)GR_MALLOC(sizeof(int64_t) * 3 * nc);
        if (!t) return rw->next_sym++;
        for (q = 0; q < nc; q++) t[3 * q] = -1;
        for (q = 0; q < rw->cap_trim; q++) {
            int64_t *e = rw->trim + 3 * q;
            if (e[0] < 0) continue;
            i = (uint32_t)gr__hash64((uint64_t)e[0] * 1000003u + (uint64_t)e[1]) & (nc - 1);
            while (t[3 * i] >= 0) i = (i + 1) & (nc - 1);
            t[3 * i] = e[0]; t[3 * i + 1] = e[1]; t[3 * i + 2] = e[2];
        }
        GR_FREE(rw->trim);
        rw->trim = t;
        rw->cap_trim = nc;
    }
    mask = rw->cap_trim - 1;
    for (i = (uint32_t)gr__hash64((uint64_t)sym * 1000003u + (uint64_t)k) & mask; rw->trim[3 * i] >= 0; i = (i + 1) & mask)
        if (rw->trim[3 * i] == sym && rw->trim[3 * i + 1] == k) return (int32_t)rw->trim[3 * i + 2];
    rw->trim[3 * i] = sym;
    rw->trim[3 * i + 1] = k;
    rw->trim[3 * i + 2] = rw->next_sym++;
    rw->n_trim++;
    return (int32_t)rw->trim[3 * i + 2];
}

/* the elementwise rule: an axis keeps the symbol its operands agree on (broadcast ones aside) */
static void gr__ew_sig(gr__rewriter *rw, const gr_node *node, const gr_var *v, int32_t *out) {
    int nd = v->ndim, i, k;
    for (i = 0; i < nd; i++) {
        int32_t code = GR__SIG_ONE;
        int clash = 0;
        for (k = 0; k < node->n_in; k++) {
            const gr_var *x = gr__in(node)[k];
            int xi = i - (nd - x->ndim);
            int32_t c;
            if (xi < 0) continue;
            c = gr__sig(rw, x)[xi];
            if (c == GR__SIG_ONE) continue;
            if (code == GR__SIG_ONE) code = c;
            else if (code != c) clash = 1;
        }
        if (!clash && (gr__vshape(v)[i] < 0 || GR__SIG_STATIC(gr__vshape(v)[i]) == code)) out[i] = code;
    }
}

/* the signature of v (a node's output) from its inputs' (already known) signatures */
static void gr__sig_compute(gr__rewriter *rw, const gr_var *v, int32_t *out) {
    const gr_node *node = gr__owner(v);
    const gr__row_rules *rules;
    int i;
    for (i = 0; i < v->ndim; i++) out[i] = gr__fresh_code(rw, v, i);     /* the default: nothing known */
    if (!node || v->out_index != 0) return;
    if (gr__flags_of(node->op) & GR__OPF_ELEMWISE) gr__ew_sig(rw, node, v, out);
    else if ((rules = gr__rules_of(node->op)) != NULL) rules->sig(rw, node, out);
    for (i = 0; i < v->ndim; i++)                   /* what the static type knows wins */
        if (gr__vshape(v)[i] >= 0) out[i] = GR__SIG_STATIC(gr__vshape(v)[i]);
}

/* v's signature; for a variable built outside the rewriter, from its inputs' when they are known
   (never recursively), else fresh symbols */
static const int32_t *gr__sig(gr__rewriter *rw, const gr_var *v) {
    static const int32_t none[GR_MAX_NDIM] = { 0 };
    int32_t *out;
    int i;
    if (v->ndim == 0) return none;                  /* nothing to know: no entry (most nodes of a scalar chain) */
    if (v->id < rw->cap_sig_at && rw->sig_at[v->id] >= 0) return rw->sig + rw->sig_at[v->id];
    if (gr__owner(v))
        for (i = 0; i < gr__owner(v)->n_in; i++) {
            const gr_var *x = gr__in(gr__owner(v))[i];
            if (x->ndim > 0 && !(x->id < rw->cap_sig_at && rw->sig_at[x->id] >= 0) && gr__owner(x)) {
                out = gr__sig_slot(rw, v);          /* inputs unknown: nothing is known */
                if (!out) return none;
                for (i = 0; i < v->ndim; i++) out[i] = gr__fresh_code(rw, v, i);
                return out;
            }
        }
    {
        int32_t tmp[GR_MAX_NDIM];
        gr__sig_compute(rw, v, tmp);                /* may add the inputs' (leaves') signatures */
        out = gr__sig_slot(rw, v);
        if (!out) return none;
        for (i = 0; i < v->ndim; i++) out[i] = tmp[i];
        return out;
    }
}

/* v's codes copied to out (the pool may move when another signature is added) */
static void gr__sig_copy(gr__rewriter *rw, const gr_var *v, int32_t *out) {
    const int32_t *s = gr__sig(rw, v);
    int i;
    for (i = 0; i < v->ndim; i++) out[i] = s[i];
}

/* a and b have the same shape in every call */
static int gr__sig_same(gr__rewriter *rw, const gr_var *a, const gr_var *b) {
    int32_t sa[GR_MAX_NDIM], sb[GR_MAX_NDIM];
    int i;
    if (a->ndim != b->ndim) return 0;
    gr__sig_copy(rw, a, sa);
    gr__sig_copy(rw, b, sb);
    for (i = 0; i < a->ndim; i++) if (sa[i] != sb[i]) return 0;
    return 1;
}

/* x broadcasts to r's shape without changing it, in every call */
static int gr__sig_into(gr__rewriter *rw, const gr_var *x, const gr_var *r) {
    int32_t sx[GR_MAX_NDIM], sr[GR_MAX_NDIM];
    int i, off = r->ndim - x->ndim;
    if (off < 0) return 0;
    gr__sig_copy(rw, x, sx);
    gr__sig_copy(rw, r, sr);
    for (i = 0; i < x->ndim; i++) if (sx[i] != GR__SIG_ONE && sx[i] != sr[off + i]) return 0;
    return 1;
}

/* ---- the shared rules ------------------------------------------------------------------------------ */

/* none: nothing known, every axis a fresh symbol */
static void gr__none_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) { (void)rw; (void)node; (void)out; }

/* like0: output 0 is shaped like input 0 (the like0 type rule, Cast, the updates) */
static void gr__like0_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    if (gr__in(node)[0]->ndim == gr__out(node)[0]->ndim) gr__sig_copy(rw, gr__in(node)[0], out);
}

/* ==== src/simplify.c: generated region; edit src/simplify.c, then run make gradient.h ==== */
/* src/simplify.c: local simplification (src/rewrite.h). A node about to be built is replaced by what
   the first applicable rule of its row builds: the `simp` rule of a structural row, or the rows of
   GR_ELEMWISE_REWRITES for an elementwise one. A replacement is built through the rewrites in turn,
   and a node's inputs are final when it is built, so one pass reaches the fixed point. */

/* ---- recognising values ---------------------------------------------------------------------------- */

/* v is the 0-d constant c */
static int gr__rw_is_scalar(const gr_var *v, double c) {
    return v->kind == GR__VK_CONST && v->ndim == 0 && gr_array_get((const gr_array *)gr__ext(v), 0) == c;
}

/* v is a fill (a FILL row: input 0 broadcast to input 1's shape): the value filled, and *ref; NULL otherwise */
static gr_var *gr__rw_filled(const gr_var *v, gr_var **ref) {
    const gr_node *n = gr__owner(v);
    if (!n || !(gr__flags_of(n->op) & GR__OPF_FILL)) return NULL;
    *ref = gr__in(n)[1];
    return gr__in(n)[0];
}

/* v is zeros: a 0-d zero (*ref = NULL) or a 0-d zero filled to the shape of *ref */
static int gr__rw_zeros(const gr_var *v, gr_var **ref) {
    gr_var *x;
    if (gr__rw_is_scalar(v, 0.0)) { *ref = NULL; return 1; }
    return (x = gr__rw_filled(v, ref)) != NULL && gr__rw_is_scalar(x, 0.0);
}

/* zeros of dtype dt shaped like ref (a 0-d zero when ref is NULL or 0-d) */
static gr_var *gr__rw_zero_fill(gr__rewriter *rw, int dt, gr_var *ref) {
    gr_var *z = gr__scalar_const(rw->cg, dt, 0.0, 0);
    if (!z || !ref || ref->ndim == 0) return z;
    return gr__rw_fill(rw, z, ref);
}

/* ---- asking the rows ------------------------------------------------------------------------------- */

/* none: a structural row without simplifications */
static gr_var *gr__none_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    (void)rw; (void)op; (void)params; (void)in; (void)done;
    return NULL;
}

/* node op(params; in)'s replacement, or NULL with *done 0 when it is built as it is */
static gr_var *gr__rw_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    const gr__row_rules *rules;
    *done = 0;
    if (gr__flags_of(op) & GR__OPF_ELEMWISE) {
        const gr__ew_rewrite *e;
        int row = gr__code_of(op);
        for (e = gr__ew_rewrites; e->rule; e++) {
            gr_var *r;
            if (e->row != row) continue;
            r = e->rule(rw, row, in, done);
            if (*done) return r;
        }
        return NULL;
    }
    rules = gr__rules_of(op);
    return rules ? rules->simplify(rw, op, params, in, done) : NULL;
}

/* ==== src/merge.c: generated region; edit src/merge.c, then run make gradient.h ==== */
/* src/merge.c: merging and constant folding, the last steps of building a node through the
   rewrites (src/rewrite.c): a node equal to one already built (op, params, inputs) is that one; a
   small node of constants is run now and becomes a constant. */

static uint32_t gr__cse_hash(const gr_op_def *op, const void *params, size_t psize, int n_in, gr_var *const *ins) {
    uint64_t h = gr__hash64((uint64_t)(uintptr_t)op ^ ((uint64_t)psize << 40));
    size_t k;
    int i;
    for (i = 0; i < n_in; i++) h = gr__hash64(h ^ (uint64_t)ins[i]->id);
    for (k = 0; k + 8 <= psize; k += 8) {             /* the parameters 8 bytes at a time */
        uint64_t w;
        memcpy(&w, (const unsigned char *)params + k, 8);
        h = gr__hash64(h ^ w) + k;
    }
    if (k < psize) {
        uint64_t w = 0;
        memcpy(&w, (const unsigned char *)params + k, psize - k);
        h = gr__hash64(h ^ w) + k;
    }
    return (uint32_t)(h ^ (h >> 32));
}
static int gr__cse_equal(const gr_node *n, const gr_op_def *op, const void *params, size_t psize, int n_in, gr_var *const *ins) {
    int i;
    if (n->op != op || n->n_in != n_in || n->params_size != psize) return 0;
    for (i = 0; i < n_in; i++) if (gr__in(n)[i] != ins[i]) return 0;
    return psize == 0 || memcmp(gr__params(n), params, psize) == 0;
}
/* Merging files each node under one of its inputs, its key: the newest (highest id), which an
   equal node reads too. The nodes filed under a variable just built sit in memory touched a moment
   ago, where a hash table of every node would cost a cache miss per probe. A key with more than
   GR__CSE_LIST nodes filed under it is "hot": they move to the hash table, and so do the later
   ones, as do the nodes without inputs. So a lookup walks at most GR__CSE_LIST nodes, or probes the
   table, and a node is filed once (a lookup list of one entry a node, not one an input). */
#ifndef GR__CSE_LIST
#define GR__CSE_LIST 16
#endif

static const gr_var *gr__cse_key(int n_in, gr_var *const *ins) {
    const gr_var *key = NULL;
    int i;
    for (i = 0; i < n_in; i++) if (!key || ins[i]->id > key->id) key = ins[i];
    return key;
}

static uint32_t gr__use_count(const gr__rewriter *rw, const gr_var *v) { return v->id < rw->cap_use_count ? rw->use_count[v->id] : 0; }

static gr_node *gr__cse_find(gr__rewriter *rw, uint32_t h, const gr_op_def *op, const void *params, size_t psize, int n_in,
                            gr_var *const *ins) {
    const gr_var *key = gr__cse_key(n_in, ins);
    uint32_t mask, i;
    if (key && gr__use_count(rw, key) <= GR__CSE_LIST) {   /* an equal node is filed under this key */
        int32_t e;
        if (gr__use_count(rw, key) == 0) return NULL;
        for (e = rw->use_head[key->id]; e >= 0; e = rw->use_next[e])
            if (gr__cse_equal(rw->use_node[e], op, params, psize, n_in, ins)) return rw->use_node[e];
        return NULL;
    }
    if (!rw->cap_cse) return NULL;
    mask = rw->cap_cse - 1;
    for (i = h & mask; rw->cse[i]; i = (i + 1) & mask)
        if (rw->cse_hash[i] == h && gr__cse_equal(rw->cse[i], op, params, psize, n_in, ins)) return rw->cse[i];
    return NULL;
}

/* enters node in the hash table */
static int gr__cse_table_add(gr__rewriter *rw, gr_node *node, uint32_t h) {
    uint32_t mask, i;
    if (rw->n_cse * 2 >= rw->cap_cse) {
        uint32_t nc = rw->cap_cse ? rw->cap_cse * 2 : 1024, k;
        gr_node **t = (gr_node **)gr__calloc(nc, sizeof(gr_node *));
        uint32_t *th = (uint32_t *)GR_MALLOC(sizeof(uint32_t) * nc);
        if (!t || !th) { GR_FREE(t); GR_FREE(th); return 0; }
        for (k = 0; k < rw->cap_cse; k++) {
            uint32_t j;
            if (!rw->cse[k]) continue;
            for (j = rw->cse_hash[k] & (nc - 1); t[j]; j = (j + 1) & (nc - 1)) {}
            t[j] = rw->cse[k];
            th[j] = rw->cse_hash[k];
        }
        GR_FREE(rw->cse);
        GR_FREE(rw->cse_hash);
        rw->cse = t;
        rw->cse_hash = th;
        rw->cap_cse = nc;
    }
    mask = rw->cap_cse - 1;
    for (i = h & mask; rw->cse[i]; i = (i + 1) & mask) {}
    rw->cse[i] = node;
    rw->cse_hash[i] = h;
    rw->n_cse++;
    return 1;
}

/* files node (h: its hash) for the lookups of later nodes */
static int gr__cse_add(gr__rewriter *rw, gr_node *node, uint32_t h) {
    const gr_var *key = gr__cse_key(node->n_in, gr__in(node));
    uint32_t count;
    if (!key) return gr__cse_table_add(rw, node, h);
    if (!gr__grow_fill((void **)&rw->use_head, &rw->cap_use_head, key->id, sizeof(int32_t), 0xFF) ||   /* -1: none */
        !gr__grow_fill((void **)&rw->use_count, &rw->cap_use_count, key->id, sizeof(uint32_t), 0))
        return 0;
    count = rw->use_count[key->id]++;
    if (count == GR__CSE_LIST) {                       /* the key turns hot: its nodes move to the table */
        int32_t e;
        for (e = rw->use_head[key->id]; e >= 0; e = rw->use_next[e]) {
            gr_node *m = rw->use_node[e];
            if (!gr__cse_table_add(rw, m, gr__cse_hash(m->op, gr__params(m), m->params_size, m->n_in, gr__in(m)))) return 0;
        }
    }
    if (count >= GR__CSE_LIST) return gr__cse_table_add(rw, node, h);
    if (!gr__grow((void **)&rw->use_node, &rw->cap_use_node, rw->n_use, sizeof(gr_node *)) ||
        !gr__grow((void **)&rw->use_next, &rw->cap_use_next, rw->n_use, sizeof(int32_t)))
        return 0;
    rw->use_node[rw->n_use] = node;
    rw->use_next[rw->n_use] = rw->use_head[key->id];
    rw->use_head[key->id] = (int32_t)rw->n_use++;
    return 1;
}

/* ---- constant folding ----------------------------------------------------------------------------- */

#define GR__FOLD_MAX 4096                        /* elements: bigger results are computed at call time */

/* runs node (all of whose inputs are constants) now; outs become constants. 0: leave it alone */
static int gr__rw_fold(gr__rewriter *rw, gr_node *node, gr_var **outs) {
    gr_graph *cg = rw->cg;
    gr_array *res[5], *shaped[4];
    const gr_array *in[8];
    gr_status saved = cg->status, st;
    int i, j, ok = 0;
    if (node->n_out > 4 || node->n_in > 8 || (gr__flags_of(node->op) & GR__OPF_GRADMOD)) return 0;
    for (i = 0; i < node->n_in; i++) in[i] = (const gr_array *)gr__ext(gr__in(node)[i]);
    res[node->n_out] = NULL;                     /* then the work memory (GR_SCRATCH_OPS) */
    for (j = 0; j < node->n_out; j++) {
        res[j] = NULL;
        shaped[j] = (gr_array *)gr__calloc(1, sizeof(gr_array));
        if (!shaped[j]) goto done;
        shaped[j]->dtype = (gr_dtype)gr__out(node)[j]->dtype;
        shaped[j]->ndim = gr__out(node)[j]->ndim;
    }
    st = node->op->shape ? node->op->shape(node, in, shaped) : gr__like0_shape(node, in, shaped);
    if (st != GR_OK) goto done;
    for (j = 0; j < node->n_out; j++) {
        int64_t size = gr__shape_size(shaped[j]->ndim, shaped[j]->shape);
        if (size < 0 || size > GR__FOLD_MAX) goto done;
        res[j] = gr_array_new(shaped[j]->dtype, shaped[j]->ndim, shaped[j]->shape);
        if (!res[j]) goto done;
    }
    {
        int64_t words = (int64_t)((gr__scratch_bytes(node, in, (const gr_array *const *)res) + sizeof(double) - 1) / sizeof(double));
        if (!(res[node->n_out] = gr_array_new(GR_F64, 1, &words))) goto done;
    }
    if (node->op->perform(node, in, res) != GR_OK) goto done;
    for (j = 0; j < node->n_out; j++) {
        gr_var *c = res[j]->ndim == 0 ? gr__scalar_const(cg, res[j]->dtype, gr_array_get(res[j], 0), 0) : gr__constant(cg, res[j], 0);
        if (!c) goto done;
        outs[j] = c;
    }
    ok = 1;
done:
    for (j = 0; j < node->n_out; j++) { GR_FREE(shaped[j]); gr_array_free(res[j]); }
    gr_array_free(res[node->n_out]);
    if (!ok && saved == GR_OK && cg->status != GR_OK) gr_graph_clear_error(cg);   /* the call will report it */
    return ok;
}

/* ==== src/rewrite.c: generated region; edit src/rewrite.c, then run make gradient.h ==== */
/* src/rewrite.c: the rewrites applied while gr_function copies the graph (at GR_OPT_FULL).

   Every node is rebuilt in the function's private graph after its inputs, through gr__rw_build:
     1. simplification (src/simplify.c): the rules of its row (src/rewrite.h), such as the algebra
        (x+0, x*1, x*0 from zero gradients, neg(neg x)), zero fills, dimshuffle and reshape
        composition, transposes folded into Dot's flags, stabilisation (log(softmax) ->
        log_softmax, log(1+x) -> log1p, log(sigmoid x) -> -softplus(-x), exp(x)-1 -> expm1);
        a replacement is itself built through gr__rw_build;
     2. merging (src/merge.c): a node equal to one already built (op, params, inputs) is that one;
     3. constant folding (src/merge.c): a small node of constants is run now and becomes a constant.
   A node's inputs are final when it is built, so these local rewrites reach their fixed point in
   one pass. The gradient-modifying identities are removed at every level (they compute nothing).
   Signatures (src/signature.c) tell when a rewrite keeps a result's shape. */

static gr__rewriter *gr__rewriter_new(gr_graph *g, gr_graph *cg, int level) {
    gr__rewriter *rw = (gr__rewriter *)gr__calloc(1, sizeof(gr__rewriter));
    if (!rw) return NULL;
    rw->g = g;
    rw->cg = cg;
    rw->level = level;
    return rw;
}

static void gr__rewriter_free(gr__rewriter *rw) {
    if (!rw) return;
    GR_FREE(rw->cse);
    GR_FREE(rw->cse_hash);
    GR_FREE(rw->use_head);
    GR_FREE(rw->use_count);
    GR_FREE(rw->use_node);
    GR_FREE(rw->use_next);
    GR_FREE(rw->sig);
    GR_FREE(rw->sig_at);
    GR_FREE(rw->trim);
    GR_FREE(rw->view);
    GR_FREE(rw->view_depth);
    GR_FREE(rw->depth);
    GR_FREE(rw->repl);
    GR_FREE(rw);
}

/* what merging keeps (the nodes filed by key and the hash table), and the depths by variable,
   freed once the copy is built: fusion needs the signatures and the view only */
static void gr__rewriter_drop_merging(gr__rewriter *rw) {
    GR_FREE(rw->cse); GR_FREE(rw->cse_hash);
    GR_FREE(rw->use_head); GR_FREE(rw->use_count); GR_FREE(rw->use_node); GR_FREE(rw->use_next);
    rw->cse = NULL; rw->cse_hash = NULL;
    rw->use_head = NULL; rw->use_node = NULL; rw->use_next = NULL; rw->use_count = NULL;
    GR_FREE(rw->depth); rw->depth = NULL; rw->cap_depth = 0;
    rw->n_cse = rw->cap_cse = rw->cap_use_head = rw->cap_use_count = 0;
    rw->n_use = rw->cap_use_node = rw->cap_use_next = 0;
}

/* ---- building through the rewrites ------------------------------------------------------------- */

static gr_status gr__rw_build(gr__rewriter *rw, const gr_op_def *op, const void *params, size_t psize, int n_in,
                              gr_var *const *ins, gr_var **outs);

static gr_var *gr__rw1(gr__rewriter *rw, const gr_op_def *op, const void *params, size_t psize, int n_in, gr_var *const *ins) {
    gr_var *out = NULL;
    return gr__rw_build(rw, op, params, psize, n_in, ins, &out) == GR_OK ? out : NULL;
}
static gr_var *gr__rw_ew(gr__rewriter *rw, int row, gr_var *a, gr_var *b) {
    gr_var *ab[2];
    ab[0] = a; ab[1] = b;
    return gr__rw1(rw, gr__ew_ops[row], NULL, 0, gr__ew_ops[row]->n_in, ab);
}

/* ---- the pipeline ------------------------------------------------------------------------------------ */

/* a variable with v's shape in every call that is cheaper to have: down the producers of v while
   one of their inputs has the same signature (a value read for its shape only then needs nothing of
   what came after). The producers walked through are those shaped like an input by their rows:
   elementwise, fills, and the like0 signature rule's. */
static gr_var *gr__rw_shape_source(gr__rewriter *rw, gr_var *v) {
    int guard = 0;
    while (gr__owner(v) && guard++ < 64) {
        const gr_node *n = gr__owner(v);
        const gr__row_rules *rules = gr__rules_of(n->op);
        int i, found = -1;
        if (!(gr__flags_of(n->op) & (GR__OPF_ELEMWISE | GR__OPF_FILL)) && !(rules && rules->sig == gr__like0_sig))
            break;
        for (i = 0; i < n->n_in && found < 0; i++)
            if (gr__in(n)[i]->ndim == v->ndim && gr__sig_same(rw, gr__in(n)[i], v)) found = i;
        if (found < 0) break;
        v = gr__in(n)[found];
    }
    return v;
}

/* orig's outputs are typed as its inputs are now: a shared value whose shape changed since orig was
   built leaves it stale, and then it is rebuilt. Asked only of a node reading a shared variable:
   gr_shared_set is the one thing that changes a variable's type, and a node reading a stale node's
   output is rebuilt anyway (its input is the rebuilt one). (Batched's type rule builds its inner
   node in the node's graph: such a node is always rebuilt. A rule that fails leaves the source
   graph as it was.) */
static int gr__rw_types_current(const gr_node *orig) {
    gr_type t[4];
    int i, j;
    if (orig->n_out > 4 || (gr__flags_of(orig->op) & GR__OPF_INNERCONN)) return 0;
    memset(t, 0, sizeof t);
    if (orig->op->infer) {
        gr_status before = orig->graph->status;
        if (orig->op->infer(orig, t) != GR_OK) {
            if (before == GR_OK) gr_graph_clear_error(orig->graph);
            return 0;
        }
    } else
        for (j = 0; j < orig->n_out; j++) gr_var_type(gr__in(orig)[0], &t[j]);
    for (j = 0; j < orig->n_out; j++) {
        const gr_var *v = gr__out(orig)[j];
        if ((int)t[j].dtype != v->dtype || t[j].ndim != v->ndim) return 0;
        for (i = 0; i < v->ndim; i++) if (t[j].shape[i] != gr__vshape(v)[i]) return 0;
    }
    return 1;
}

static gr_status gr__rw_build(gr__rewriter *rw, const gr_op_def *op, const void *params, size_t psize, int n_in,
                              gr_var *const *ins_given, gr_var **outs) {
    gr_graph *cg = rw->cg;
    gr_node *node;
    gr_var *r = NULL, *ins_local[8] = { NULL };
    gr_var *const *ins = ins_given;
    const gr_node *orig = rw->orig;      /* only this call: the builds of replacements have none */
    uint32_t h;
    int i, j, done = 0, all_const = 1, shared_in = 0;
    gr_status st;
    rw->orig = NULL;
    if ((st = gr__inputs_present(cg, gr__on(op).s, n_in, ins_given)) != GR_OK) return st;   /* a replacement's builder failed */
    if ((gr__flags_of(op) & GR__OPF_SHAPEREF) && op->connection_pattern && n_in <= 8 && op->n_out == 1) {
        /* inputs read for their shape only: the cheapest variable of the same shape */
        for (i = 0; i < n_in; i++)
            ins_local[i] = op->connection_pattern[i] ? ins_given[i] : gr__rw_shape_source(rw, ins_given[i]);
        ins = ins_local;
    }
    if (op->n_out == 1 && !(gr__flags_of(op) & GR__OPF_GRADMOD)) {
        r = gr__rw_simplify(rw, op, params, ins, &done);
        if (done) {
            if (!r) return cg->status != GR_OK ? cg->status : GR_ERR_NOMEM;
            outs[0] = r;
            return GR_OK;
        }
    }
    h = gr__cse_hash(op, params, psize, n_in, ins);
    node = gr__cse_find(rw, h, op, params, psize, n_in, ins);
    if (node) {
        for (j = 0; j < node->n_out; j++) outs[j] = gr__out(node)[j];
        return GR_OK;
    }
    for (i = 0; i < n_in; i++) {
        if (ins[i]->kind != GR__VK_CONST) all_const = 0;
        if (ins[i]->kind == GR__VK_SHARED) shared_in = 1;
    }
    /* the source node itself when nothing changed (same inputs, not foldable): no copy is made, and
       the function's graph reads the source graph's node until gr__fn_compact (src/function.c) */
    for (i = 0; orig && i < n_in && gr__in(orig)[i] == ins[i]; i++) {}
    if (orig && i == n_in && orig->op == op && orig->n_in == n_in && !(all_const && n_in > 0) &&
        !(gr__flags_of(orig->op) & GR__OPF_INNERCONN) && (!shared_in || gr__rw_types_current(orig))) {
        node = (gr_node *)orig;
        for (j = 0; j < node->n_out; j++) { outs[j] = gr__out(node)[j]; gr__sig(rw, gr__out(node)[j]); }
        if (!gr__cse_add(rw, node, h)) return gr__error(cg, GR_ERR_NOMEM, "out of memory (rewriting)");
        return GR_OK;
    }
    st = gr__make_node_n(cg, op, params, psize, n_in, ins, orig ? orig->n_out : op->n_out, outs);
    if (st != GR_OK) return st;
    node = gr__owner(outs[0]);
    for (j = 0; j < node->n_out; j++) gr__sig(rw, gr__out(node)[j]);     /* now, while the inputs' are known */
    if (all_const && n_in > 0 && !(gr__flags_of(op) & GR__OPF_RUNTIME) && gr__rw_fold(rw, node, outs)) return GR_OK;   /* (a loop runs with a function's state) */
    if (!gr__cse_add(rw, node, h)) return gr__error(cg, GR_ERR_NOMEM, "out of memory (rewriting)");
    return GR_OK;
}

/* builds node's counterpart from the copied inputs ins; outs receives its outputs */
static gr_status gr__rewrite_node(gr__rewriter *rw, const gr_node *node, gr_var **ins, gr_var **outs) {
    gr_status st;
    int j;
    if (gr__flags_of(node->op) & GR__OPF_GRADMOD) {
        outs[0] = ins[0];
        return GR_OK;
    }
    if ((gr__flags_of(node->op) & GR__OPF_GRAPHOP) && (*(gr__graphop *const *)gr__params(node))->expand)   /* inlined */
        return (*(gr__graphop *const *)gr__params(node))->expand(rw, node, ins, outs);
    if (rw->level == GR_OPT_NONE) st = gr__make_node_n(rw->cg, node->op, gr__params(node), node->params_size, node->n_in, ins, node->n_out, outs);
    else {
        rw->orig = node;
        st = gr__rw_build(rw, node->op, gr__params(node), node->params_size, node->n_in, ins, outs);
        rw->orig = NULL;
    }
    if (st != GR_OK) return st;
    for (j = 0; j < node->n_out; j++)           /* (the source graph's variables are never written) */
        if (gr__vname(gr__out(node)[j]) && !gr__vname(outs[j]) && gr__owner(outs[j]) && outs[j]->graph == rw->cg &&
            !gr__set_name(rw->cg, outs[j], gr__vname(gr__out(node)[j])))
            return rw->cg->status;
    return GR_OK;
}

/* ==== src/fuse.c: generated region; edit src/fuse.c, then run make gradient.h ==== */
/* src/fuse.c: elementwise fusion (at GR_OPT_FULL, after the rewrites).

   Connected elementwise nodes (and copies: the CONVERT and FILL rows, Cast and BroadcastLike) whose
   outputs have the same shape signature (src/signature.c: the same size along every axis in every
   call) become one Fused node: a program of the table's kernels run over the data block by block,
   so a chain of elementwise ops is one pass with no full-size temporaries. Members read their operands from the group's external
   inputs (broadcast, as the ops would), 0-d constants (immediates), block-sized registers, or
   the group's outputs; a value used outside the group, or returned, is an output.

   Groups grow in topological order: a node joins an open group of its signature when each of its
   inputs is a member, a leaf, or computed before the group's first member. Nothing computed
   after the group started can then feed it, so no cycle can appear, and a group may have any
   number of outputs. A chain of a million scalar links is one node. */

typedef struct gr__fop {                 /* one instruction (24 bytes: a chain of a million links has millions) */
    int32_t arg[3];                      /* operand references */
    int32_t out, out2;                   /* the references written (out2: the second of a pair, else -1) */
    uint8_t n_args, dtype, odtype, row;  /* row: the table's row (its kernel for dtype), GR__FOP_PAIR (arg[1]:
                                            the pair's index in gr__ew_pairs), GR__FOP_MULADD, or
                                            GR__FOP_COPY + the code of a copying row */
} gr__fop;

enum {
    GR__FOP_PAIR = GR__EW_COUNT,         /* first(x) and second(x) of a row of GR_ELEMWISE_PAIRS */
    GR__FOP_MULADD = GR__EW_COUNT + 1,   /* a * b + c: a float mul whose product only the add after it reads */
    GR__FOP_COPY = GR__EW_COUNT + 2      /* a CONVERT or FILL row (Cast, BroadcastLike): gr__convert_run */
};
typedef char gr__fop_rows_fit[(int)GR__FOP_COPY + (int)GR__OP_COUNT <= 255 ? 1 : -1];   /* every row fits in row */

/* the printed name of an instruction (CamelCase, as gr__on): its row's (Sin), its pair's rows'
   (SinCos), or MulAdd */
static gr__oname gr__fop_name(const gr__fop *op) {
    gr__oname o;
    size_t n = 0;
    o.s[0] = 0;
    if (op->row >= GR__FOP_COPY) return gr__on(gr__struct_ops[op->row - GR__FOP_COPY]);
    if (op->row == GR__FOP_MULADD) { gr__camel(o.s, &n, "mul"); gr__camel(o.s, &n, "add"); }
    else if (op->row == GR__FOP_PAIR) {
        gr__camel(o.s, &n, gr__ew_ops[gr__ew_pairs[op->arg[1]].first]->name);
        gr__camel(o.s, &n, gr__ew_ops[gr__ew_pairs[op->arg[1]].second]->name);
    } else gr__camel(o.s, &n, gr__ew_ops[op->row]->name);
    return o;
}

/* o = a * b + c over n elements (strides 0 or 1), rounded as the mul then the add are (the product
   is a double or a float before the sum: no fused multiply-add); o may be a, b or c (stride 1) */
#define GR__MULADD(fn, T) \
    static void fn(int64_t n, void *out_, const void *const *in, const int64_t *st) { \
        T *o = (T *)out_; const T *a = (const T *)in[0], *b = (const T *)in[1], *c = (const T *)in[2]; int64_t i; \
        if (st[0] == 0 && st[1] == 1 && st[2] == 1) { T s = a[0]; for (i = 0; i < n; i++) { T p = s * b[i]; o[i] = p + c[i]; } } \
        else if (st[0] == 1 && st[1] == 0 && st[2] == 1) { T s = b[0]; for (i = 0; i < n; i++) { T p = a[i] * s; o[i] = p + c[i]; } } \
        else if (st[0] == 1 && st[1] == 1 && st[2] == 1) { for (i = 0; i < n; i++) { T p = a[i] * b[i]; o[i] = p + c[i]; } } \
        else { int64_t sa = st[0], sb = st[1], sc = st[2]; for (i = 0; i < n; i++) { T p = a[i * sa] * b[i * sb]; o[i] = p + c[i * sc]; } } \
    }
GR__MULADD(gr__muladd_f64, double)
GR__MULADD(gr__muladd_f32, float)

/* operand references: [0, n_ext) external inputs, then n_imm immediates, then n_out outputs,
   then n_reg registers of blk elements each */
typedef struct gr__fprog {
    int32_t n_ext, n_imm, n_out, n_reg, n_ops, n_refs;
    int64_t blk;
    gr__fop *ops;
    double *imm;                         /* an immediate's value, stored in its dtype's bytes */
    unsigned char *regs;
    const void **ptr;                    /* per reference, set block by block */
    int64_t *st;                         /* per reference: 0 (broadcast) or 1 */
    int64_t *ext_st;                     /* scratch: n_ext x GR_MAX_NDIM element strides */
    int64_t *ext_off;                    /* scratch: n_ext offsets */
    gr_type *out_types;
} gr__fprog;

typedef struct gr__fused_params { gr__fprog *prog; } gr__fused_params;

static const gr__fprog *gr__fp(const gr_node *node) { return ((const gr__fused_params *)gr__params(node))->prog; }

static gr_status gr__Fused_infer(const gr_node *node, gr_type *out) {
    const gr__fprog *p = gr__fp(node);
    int j;
    for (j = 0; j < node->n_out; j++) out[j] = p->out_types[j];
    return GR_OK;
}

/* the shapes do not broadcast: replay the program's shapes to name the member op that fails */
static gr_status gr__Fused_shape_error(const gr_node *node, const gr_array *const *in) {
    const gr__fprog *p = gr__fp(node);
    gr_array *shapes = (gr_array *)gr__calloc((size_t)p->n_refs + 1, sizeof(gr_array));
    int k, a, e;
    if (!shapes) return gr_node_error(node, GR_ERR_SHAPE, "shapes do not broadcast");
    for (e = 0; e < p->n_ext; e++) shapes[e] = *in[e];
    for (k = 0; k < p->n_ops; k++) {
        const gr__fop *op = &p->ops[k];
        gr_array r;
        memset(&r, 0, sizeof r);
        for (a = 0; a < op->n_args; a++) {
            const gr_array *x = &shapes[op->arg[a]];
            int off, i;
            if (x->ndim > r.ndim) {             /* right-align what we have against x */
                int grow = x->ndim - r.ndim;
                for (i = r.ndim - 1; i >= 0; i--) r.shape[i + grow] = r.shape[i];
                for (i = 0; i < grow; i++) r.shape[i] = 1;
                r.ndim = x->ndim;
            }
            off = r.ndim - x->ndim;
            for (i = 0; i < x->ndim; i++) {
                int64_t have = r.shape[off + i], want = x->shape[i];
                if (have == 1) r.shape[off + i] = want;
                else if (want != 1 && want != have) {
                    char b1[200], b2[200];
                    /* an elementwise row by its constructor, as when it runs unfused (gr_add) */
                    int row = op->row == GR__FOP_PAIR ? gr__ew_pairs[op->arg[1]].first
                            : op->row == GR__FOP_MULADD ? (a < 2 ? (int)GR__EW_mul : (int)GR__EW_add) : (int)op->row;
                    gr__oname on = gr__fop_name(op);
                    const char *opname = row < (int)GR__EW_COUNT ? gr__ew_fnames[row] : on.s;
                    gr_status st;
                    gr__shape_str(b1, sizeof b1, x->ndim, x->shape);
                    gr__shape_str(b2, sizeof b2, r.ndim, r.shape);
                    if (op->arg[a] < p->n_ext)
                        st = gr__error(node->graph, GR_ERR_SHAPE, "%s: shapes do not broadcast: %s of %s against %s", opname, b1,
                                       gr__d(gr__in(node)[op->arg[a]]).s, b2);
                    else
                        st = gr__error(node->graph, GR_ERR_SHAPE, "%s: shapes do not broadcast: %s against %s", opname, b1, b2);
                    GR_FREE(shapes);
                    return st;
                }
            }
        }
        shapes[op->out] = r;
        if (op->row == GR__FOP_PAIR) shapes[op->out2] = r;
    }
    GR_FREE(shapes);
    return gr_node_error(node, GR_ERR_SHAPE, "shapes do not broadcast");
}

static gr_status gr__Fused_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    gr_array it;
    int j, d;
    memset(&it, 0, sizeof it);
    it.ndim = out[0]->ndim;
    if (node->n_in > 0) {
        gr_status before = node->graph->status;
        if (gr__broadcast_shapes(node, node->n_in, in, &it) != GR_OK) {
            if (before == GR_OK) gr_graph_clear_error(node->graph);
            return gr__Fused_shape_error(node, in);
        }
    } else
        for (d = 0; d < it.ndim; d++) it.shape[d] = 1;
    for (j = 0; j < node->n_out; j++)
        for (d = 0; d < out[j]->ndim; d++) out[j]->shape[d] = it.shape[d];
    return GR_OK;
}

/* n elements from src (element stride sst, 0 or 1) converted into dst */
static void gr__convert_run(int dt, void *dst, int st, const void *src, int64_t sst, int64_t n) {
    int64_t i;
    if (sst == 1 || n <= 1) { gr__convert(dt, dst, st, src, n); return; }
    gr__convert(dt, dst, st, src, 1);                  /* one value, then filled */
    switch (dt) {
    case GR_F64: { double v = *(double *)dst; for (i = 1; i < n; i++) ((double *)dst)[i] = v; break; }
    case GR_F32: { float v = *(float *)dst; for (i = 1; i < n; i++) ((float *)dst)[i] = v; break; }
    case GR_I64: { int64_t v = *(int64_t *)dst; for (i = 1; i < n; i++) ((int64_t *)dst)[i] = v; break; }
    default: memset((char *)dst + 1, *(unsigned char *)dst, (size_t)(n - 1)); break;
    }
}

/* a program of one kernel instruction over a 2-d iteration (rows x inner): the kernel row by row,
   its operands' pointers moved by their row strides (a rank-1 update c + a b^T, a row or a column
   broadcast over a matrix). No registers, so no blocks. 0 when the program is not one. */
static int gr__Fused_rows(const gr__fprog *p, const gr_array *const *in, gr_array *const *out, const int64_t *shape, int64_t inner) {
    const gr__fop *op = &p->ops[0];
    gr__ew_kernel kern;
    const char *arg[3];
    const void *args[3];
    int64_t sts[3], step[3], r;
    char *o;
    size_t ostep;
    int a, m = op->out - p->n_ext - p->n_imm;
    if (p->n_ops != 1 || m < 0 || m >= p->n_out) return 0;
    if (op->row == GR__FOP_MULADD) kern = op->dtype == GR_F64 ? gr__muladd_f64 : gr__muladd_f32;
    else if (op->row < GR__EW_COUNT) kern = gr__ew_kernels[op->row][op->dtype];
    else return 0;
    for (a = 0; a < op->n_args; a++) {
        int32_t ref = op->arg[a];
        if (ref >= p->n_ext + p->n_imm) return 0;          /* (an output or a register: not one instruction) */
        sts[a] = p->st[ref];
        arg[a] = ref < p->n_ext ? (const char *)in[ref]->data : (const char *)p->ptr[ref];
        step[a] = ref < p->n_ext ? p->ext_st[ref * GR_MAX_NDIM] * (int64_t)gr__dsize(in[ref]->dtype) : 0;
    }
    o = (char *)out[m]->data;
    ostep = (size_t)inner * gr__dsize(out[m]->dtype);
    for (r = 0; r < shape[0]; r++) {
        for (a = 0; a < op->n_args; a++) { args[a] = arg[a]; arg[a] += step[a]; }
        kern(inner, o, args, sts);
        o += ostep;
    }
    return 1;
}

static gr_status gr__Fused_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    gr__fprog *p = (gr__fprog *)gr__fp(node);
    const gr_array *o0 = out[0];
    int64_t shape[GR_MAX_NDIM], idx[GR_MAX_NDIM], inner, rows, r, j0, e;
    int nd = 0, d, k, m;
    if (o0->size == 0) return GR_OK;
    /* element strides of every external input over the output's shape (0 where broadcast), with
       axes of size 1 dropped and neighbours merged where every operand is contiguous across them */
    for (d = 0; d < o0->ndim; d++) {
        int merge;
        if (o0->shape[d] == 1) continue;
        merge = nd > 0;
        for (e = 0; e < p->n_ext; e++) {
            const gr_array *a = in[e];
            int ad = d - (o0->ndim - a->ndim);
            int64_t s = 0, q;
            if (ad >= 0 && a->shape[ad] != 1) {
                s = 1;
                for (q = ad + 1; q < a->ndim; q++) s *= a->shape[q];
            }
            if (merge && p->ext_st[e * GR_MAX_NDIM + nd - 1] != s * o0->shape[d]) merge = 0;
            p->ext_off[e] = s;                       /* this axis's stride, for now */
        }
        if (merge) {
            shape[nd - 1] *= o0->shape[d];
            for (e = 0; e < p->n_ext; e++) p->ext_st[e * GR_MAX_NDIM + nd - 1] = p->ext_off[e];
        } else {
            shape[nd] = o0->shape[d];
            for (e = 0; e < p->n_ext; e++) p->ext_st[e * GR_MAX_NDIM + nd] = p->ext_off[e];
            nd++;
        }
    }
    inner = nd ? shape[nd - 1] : 1;
    rows = o0->size / inner;
    for (d = 0; d < nd; d++) idx[d] = 0;
    for (e = 0; e < p->n_ext; e++) {
        p->st[e] = nd && p->ext_st[e * GR_MAX_NDIM + nd - 1] ? 1 : 0;
        p->ext_off[e] = 0;                         /* where the row starts in input e, kept as the rows go */
    }
    if (nd == 2 && gr__Fused_rows(p, in, out, shape, inner)) return GR_OK;
    for (r = 0; r < rows; r++) {
        for (j0 = 0; j0 < inner; j0 += p->blk) {
            int64_t n = inner - j0 < p->blk ? inner - j0 : p->blk;
            for (e = 0; e < p->n_ext; e++)
                p->ptr[e] = (const char *)in[e]->data + (size_t)(p->ext_off[e] + j0 * p->st[e]) * gr__dsize(in[e]->dtype);
            for (m = 0; m < p->n_out; m++)
                p->ptr[p->n_ext + p->n_imm + m] = (char *)out[m]->data + (size_t)(r * inner + j0) * gr__dsize(out[m]->dtype);
            for (k = 0; k < p->n_ops; k++) {
                const gr__fop *op = &p->ops[k];
                if (op->row < GR__EW_COUNT || op->row == GR__FOP_MULADD) {
                    const void *args[3];
                    int64_t sts[3];
                    int a;
                    for (a = 0; a < op->n_args; a++) { args[a] = p->ptr[op->arg[a]]; sts[a] = p->st[op->arg[a]]; }
                    if (op->row == GR__FOP_MULADD)
                        (op->dtype == GR_F64 ? gr__muladd_f64 : gr__muladd_f32)(n, (void *)p->ptr[op->out], args, sts);
                    else
                        gr__ew_kernels[op->row][op->dtype](n, (void *)p->ptr[op->out], args, sts);
                } else if (op->row == GR__FOP_PAIR)
                    gr__ew_pairs[op->arg[1]].run(op->dtype, (void *)p->ptr[op->out], (void *)p->ptr[op->out2], p->ptr[op->arg[0]],
                                                 p->st[op->arg[0]], n);
                else
                    gr__convert_run(op->odtype, (void *)p->ptr[op->out], op->dtype, p->ptr[op->arg[0]], p->st[op->arg[0]], n);
            }
        }
        for (d = nd - 2; d >= 0; d--) {              /* the next row: an odometer over the outer axes */
            if (++idx[d] < shape[d]) {
                for (e = 0; e < p->n_ext; e++) p->ext_off[e] += p->ext_st[e * GR_MAX_NDIM + d];
                break;
            }
            idx[d] = 0;
            for (e = 0; e < p->n_ext; e++) p->ext_off[e] -= (shape[d] - 1) * p->ext_st[e * GR_MAX_NDIM + d];
        }
    }
    return GR_OK;
}

static gr_status gr__Fused_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { (void)og; (void)ig; return gr__compiled_only(node); }
static gr_status gr__Fused_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) { (void)ev; (void)orop; return gr__compiled_only(node); }

/* A program's memory: blocks the private graph owns, not its arena, so that gr__fn_compact can
   hand them over with their Fused node. One block holds n parts of the given sizes; at[i] is where
   part i starts (every part 16-byte aligned). */
static void *gr__fprog_block(gr_graph *cg, int n, const size_t *size, size_t *at) {
    size_t total = 0;
    void *block;
    int i;
    for (i = 0; i < n; i++) { at[i] = total; total += (size[i] + 15u) & ~(size_t)15u; }
    block = GR_MALLOC(total ? total : 1);
    if (!block) { gr__error(cg, GR_ERR_NOMEM, "out of memory (fusion)"); return NULL; }
    return gr__own(cg, block) ? block : NULL;
}

/* ---- the schedule ---------------------------------------------------------------------------------- */

/* the node of id `id` among the function's: its private graph's, or the source graph's it reuses */
static gr_node *gr__fuse_node(const gr__rewriter *rw, const gr_graph *cg, uint32_t id) {
    return id < cg->node_base ? rw->g->nodes[id] : cg->nodes[id - cg->node_base];
}
/* x, or the Fused output that replaces it */
static gr_var *gr__fuse_in(gr_graph *cg, const uint32_t *repl, uint32_t nv, gr_var *x) {
    return x->id < nv && repl[x->id] ? cg->vars[repl[x->id] - 1 - cg->var_base] : x;
}

/* The nodes the roots need (not above a variable v with given[v->id]), as their positions in the
   order the copy made them (rw->view: a topological order of the function's nodes, the reused
   source nodes among them): one sweep back down the list marks what is needed, reading a node only
   when it is. */
static gr_status gr__fuse_needed(gr__rewriter *rw, int n_roots, gr_var *const *roots, const uint8_t *given, uint32_t nn,
                                 uint32_t **out, uint32_t *n_out) {
    gr_graph *cg = rw->cg;
    uint8_t *need = (uint8_t *)gr__calloc(nn + 1u, 1);
    uint32_t *order;
    uint32_t k, n = 0;
    int r;
    *out = NULL;
    *n_out = 0;
    if (!need) return gr__error(cg, GR_ERR_NOMEM, "out of memory (fusion)");
    for (r = 0; r < n_roots; r++)
        if (gr__owner(roots[r]) && !given[roots[r]->id]) need[gr__owner(roots[r])->id] = 1;
    for (k = rw->n_view; k-- > 0;) {
        gr_node *node;
        int i;
        if (!need[rw->view[k]]) continue;
        n++;
        node = gr__fuse_node(rw, cg, rw->view[k]);
        for (i = 0; i < node->n_in; i++)
            if (gr__owner(gr__in(node)[i]) && !given[gr__in(node)[i]->id]) need[gr__owner(gr__in(node)[i])->id] = 1;
    }
    order = (uint32_t *)GR_MALLOC(sizeof(uint32_t) * (n + 1u));
    if (!order) { GR_FREE(need); return gr__error(cg, GR_ERR_NOMEM, "out of memory (fusion)"); }
    for (n = 0, k = 0; k < rw->n_view; k++) if (need[rw->view[k]]) { order[n++] = k; need[rw->view[k]] = 0; }
    GR_FREE(need);
    *out = order;
    *n_out = n;
    return GR_OK;
}

#define GR__FUSE_OPEN 8                  /* groups kept open at once */
enum {                                   /* fusion's flags of a variable */
    GR__FV_OUT = 1,                      /* read outside the group making it (or a root) */
    GR__FV_ALIASED = 2,                  /* a fill read in place: its register is its source's */
    GR__FV_MINE = 4                      /* made by the group being fused */
};
#define GR__FUSE_BLK 256                 /* elements per block */

/* fusion's state over the schedule (ids: the function's variables and nodes, both graphs') */
typedef struct gr__fuser {
    gr__rewriter *rw;
    gr_graph *cg;
    uint32_t nn, nv;                     /* id bounds of the nodes and the variables */
    uint32_t n_order;
    uint32_t *oid;                       /* the schedule, as node ids: the passes read ids without touching the nodes */
    int32_t *pos;                        /* by node id: its position in the schedule, -1 none */
    int32_t *group;                      /* by node id: its group, -1 none */
    int32_t *gstart;                     /* each group's first position in the schedule */
    uint32_t cap_gstart;
    int32_t n_groups, last_big;          /* last_big: the last group fused (two members or more) */
    int32_t *gmem_at;                    /* where each group's members start in gmem */
    uint32_t *gmem;                      /* each group's members (node ids) in schedule order, group after group */
    uint8_t *vflag;                      /* by variable id: GR__FV_* */
    uint32_t *last;                      /* by variable id: 1 + the schedule position of its last reader, 0 none */
    int32_t *ref;                        /* by variable id: its operand reference in the program being made */
    uint32_t *second_of;                 /* by variable id: 1 + the id of the member computing the second of a pair of it */
    uint8_t *paired;                     /* by node id: computed with the first of its pair */
    uint32_t *repl;                      /* by variable id: 1 + the id of the Fused output that replaces it, 0 none */
    uint32_t n_fused;                    /* Fused nodes made so far */
    int32_t *reg;                        /* with conditionals, by node id: its region (src/grad.c); a group
                                            keeps to one, so that a side not taken computes nothing */
} gr__fuser;

/* input i of node, or the Fused output that replaces it (none before the first Fused node) */
static gr_var *gr__fuse_input(const gr__fuser *fz, const gr_node *node, int i) {
    return fz->n_fused ? gr__fuse_in(fz->cg, fz->repl, fz->nv, gr__in(node)[i]) : gr__in(node)[i];
}

static gr_status gr__fuse_nomem(gr__fuser *fz) { return gr__error(fz->cg, GR_ERR_NOMEM, "out of memory (fusion)"); }

/* the schedule: the needed nodes by depth (the longest path from the leaves, which the copy noted
   in rw->view_depth), a topological order too: a node comes as early as it can, so a view of an
   input precedes every group that reads it. order (positions in rw->view) is freed. */
static gr_status gr__fuse_schedule(gr__fuser *fz, uint32_t *order) {
    gr__rewriter *rw = fz->rw;
    uint32_t max_depth = 0, *count, k;
    fz->oid = (uint32_t *)GR_MALLOC(sizeof(uint32_t) * (fz->n_order + 1u));
    if (!fz->oid) { GR_FREE(order); return gr__fuse_nomem(fz); }
    for (k = 0; k < fz->n_order; k++) if (rw->view_depth[order[k]] > max_depth) max_depth = rw->view_depth[order[k]];
    count = (uint32_t *)gr__calloc((size_t)max_depth + 2, sizeof(uint32_t));
    if (!count) { GR_FREE(order); return gr__fuse_nomem(fz); }
    for (k = 0; k < fz->n_order; k++) count[rw->view_depth[order[k]] + 1]++;
    for (k = 1; k <= max_depth + 1; k++) count[k] += count[k - 1];
    for (k = 0; k < fz->n_order; k++) fz->oid[count[rw->view_depth[order[k]]]++] = rw->view[order[k]];
    GR_FREE(count);
    GR_FREE(order);
    for (k = 0; k < fz->nn; k++) { fz->group[k] = -1; fz->pos[k] = -1; }
    for (k = 0; k < fz->n_order; k++) fz->pos[fz->oid[k]] = (int32_t)k;
    return GR_OK;
}

/* with conditionals: each scheduled node's region (fz->reg), so that groups keep to one */
static gr_status gr__fuse_regions(gr__fuser *fz, int n_roots, gr_var *const *roots) {
    gr_node **nodes;
    gr__region *regs = NULL;
    int32_t n_regs = 0, *nreg;
    uint32_t cap = 0, k;
    int any = 0;
    gr_status st;
    for (k = 0; k < fz->n_order && !any; k++) any = (gr__flags_of(gr__fuse_node(fz->rw, fz->cg, fz->oid[k])->op) & GR__OPF_LAZY) != 0;
    if (!any) return GR_OK;
    nodes = (gr_node **)GR_MALLOC(sizeof(gr_node *) * (fz->n_order + 1u));
    nreg = (int32_t *)GR_MALLOC(sizeof(int32_t) * (fz->n_order + 1u));
    fz->reg = (int32_t *)gr__calloc(fz->nn + 1u, sizeof(int32_t));
    if (!nodes || !nreg || !fz->reg) { GR_FREE(nodes); GR_FREE(nreg); return gr__fuse_nomem(fz); }
    for (k = 0; k < fz->n_order; k++) nodes[k] = gr__fuse_node(fz->rw, fz->cg, fz->oid[k]);
    st = gr__regions_of(fz->cg, nodes, fz->n_order, n_roots, roots, &regs, &n_regs, &cap, nreg);
    for (k = 0; st == GR_OK && k < fz->n_order; k++) fz->reg[fz->oid[k]] = nreg[k];
    GR_FREE(nodes); GR_FREE(nreg); GR_FREE(regs);
    return st;
}

/* ---- grouping ------------------------------------------------------------------------------------ */

/* elementwise rows with a kernel for the dtype; CONVERT and FILL rows (Cast, BroadcastLike) become
   copies (a fill's reference is an input read for its shape) */
static int gr__fusable(const gr_node *node) {
    if (node->n_out != 1) return 0;
    if (gr__flags_of(node->op) & GR__OPF_ELEMWISE) return gr__ew_kernels[gr__code_of(node->op)][gr__in(node)[node->n_in - 1]->dtype] != NULL;
    return (gr__flags_of(node->op) & (GR__OPF_CONVERT | GR__OPF_FILL)) != 0;
}

/* the open group node can join: one of its signature none of whose inputs was computed after the
   group started outside it; -1 none */
static int32_t gr__fuse_joinable(gr__fuser *fz, const gr_node *node, const int32_t *open, int n_open) {
    int o, i;
    for (o = n_open - 1; o >= 0; o--) {
        gr_node *first = gr__fuse_node(fz->rw, fz->cg, fz->oid[fz->gstart[open[o]]]);
        int ok = (!fz->reg || fz->reg[node->id] == fz->reg[first->id]) && gr__sig_same(fz->rw, gr__out(node)[0], gr__out(first)[0]);
        for (i = 0; ok && i < node->n_in; i++) {
            gr_node *w = gr__owner(gr__in(node)[i]);
            if (w && fz->group[w->id] != open[o] && fz->pos[w->id] >= fz->gstart[open[o]]) ok = 0;
        }   /* (no Fused node exists yet: every id is below nn) */
        if (ok) return open[o];
    }
    return -1;
}

/* 1. groups, in schedule order; in the same pass, which values leave the group that makes them,
   and the last reader of each value */
static gr_status gr__fuse_group(gr__fuser *fz) {
    int32_t open[GR__FUSE_OPEN], n_open = 0;
    uint32_t k;
    int i;
    for (k = 0; k < fz->n_order; k++) {
        gr_node *node = gr__fuse_node(fz->rw, fz->cg, fz->oid[k]);
        int32_t joined = -1;
        if (gr__fusable(node)) {
            joined = gr__fuse_joinable(fz, node, open, n_open);
            if (joined < 0) {                       /* a new group, the oldest open one closed */
                if (!gr__grow((void **)&fz->gstart, &fz->cap_gstart, (uint32_t)fz->n_groups, sizeof(int32_t))) return gr__fuse_nomem(fz);
                joined = fz->n_groups++;
                fz->gstart[joined] = (int32_t)k;
                if (n_open == GR__FUSE_OPEN) { memmove(open, open + 1, sizeof(int32_t) * (GR__FUSE_OPEN - 1)); n_open--; }
                open[n_open++] = joined;
            }
            fz->group[node->id] = joined;
        }
        for (i = 0; i < node->n_in; i++) {
            gr_node *w = gr__owner(gr__in(node)[i]);
            if (w && fz->group[w->id] >= 0 && fz->group[w->id] != joined) fz->vflag[gr__in(node)[i]->id] |= GR__FV_OUT;   /* ids < nn here */
            fz->last[gr__in(node)[i]->id] = k + 1;
        }
    }
    return GR_OK;
}

/* each group's members, group after group; the grouping's arrays are freed (room for the programs) */
static gr_status gr__fuse_members(gr__fuser *fz) {
    uint32_t k;
    int32_t g, *fill;
    fz->gmem_at = (int32_t *)gr__calloc((size_t)fz->n_groups + 1, sizeof(int32_t));
    fz->gmem = (uint32_t *)GR_MALLOC(sizeof(uint32_t) * (fz->n_order + 1u));
    fz->repl = (uint32_t *)gr__calloc(fz->nv + 1u, sizeof(uint32_t));
    if (!fz->gmem_at || !fz->gmem || !fz->repl) return gr__fuse_nomem(fz);
    for (k = 0; k < fz->n_order; k++) if (fz->group[fz->oid[k]] >= 0) fz->gmem_at[fz->group[fz->oid[k]] + 1]++;
    for (g = 0; g < fz->n_groups; g++) fz->gmem_at[g + 1] += fz->gmem_at[g];
    fill = fz->gstart;                              /* gstart is not needed any more: a cursor per group */
    for (g = 0; g < fz->n_groups; g++) fill[g] = fz->gmem_at[g];
    for (k = 0; k < fz->n_order; k++) if (fz->group[fz->oid[k]] >= 0) fz->gmem[fill[fz->group[fz->oid[k]]]++] = fz->oid[k];
    GR_FREE(fz->group); GR_FREE(fz->oid); GR_FREE(fz->gstart);
    fz->group = fz->gstart = NULL;
    fz->oid = NULL;
    return GR_OK;
}

/* ---- one group's program ------------------------------------------------------------------------- */

/* the group being fused */
typedef struct gr__fgroup {
    const uint32_t *mem;                 /* its members (node ids), in schedule order */
    int32_t n_members;
    gr_var **ext, **outs_old, **outs_new;
    int32_t *free_regs;
    uint32_t cap_ext, cap_out, cap_free; /* grown as used: a group of millions has a few externals */
    int32_t n_ext, n_imm, n_out, n_reg, n_free, op_i;
    gr__fprog *p;
} gr__fgroup;

/* operands: externals (and immediates) in first-use order; outputs; in the same pass, inputs made by
   groups fused before now read their Fused outputs, and the seconds of pairs are noted
   (second_of[a] is the member computing second(a)) */
static gr_status gr__fgroup_operands(gr__fuser *fz, gr__fgroup *gs) {
    gr_var **tmp;
    int32_t mi, e = 0, m = 0;
    int i;
    for (mi = 0; mi < gs->n_members; mi++) {
        gr_node *node = gr__fuse_node(fz->rw, fz->cg, gs->mem[mi]);
        gr_var *y = gr__out(node)[0];
        for (i = 0; i < node->n_in; i++) {
            gr_var *x = gr__fuse_input(fz, node, i);
            if ((fz->vflag[x->id] & GR__FV_MINE) || fz->ref[x->id] != -1) continue;
            fz->ref[x->id] = -2 - (x->kind == GR__VK_CONST && x->ndim == 0);   /* -2 external, -3 immediate */
            if (!gr__grow((void **)&gs->ext, &gs->cap_ext, (uint32_t)gs->n_ext, sizeof(gr_var *))) return GR_ERR_NOMEM;
            gs->ext[gs->n_ext++] = x;
        }
        if (fz->vflag[y->id] & GR__FV_OUT) {
            if (!gr__grow((void **)&gs->outs_old, &gs->cap_out, (uint32_t)gs->n_out, sizeof(gr_var *))) return GR_ERR_NOMEM;
            gs->outs_old[gs->n_out++] = y;
        }
        fz->vflag[y->id] |= GR__FV_MINE;
        if ((gr__flags_of(node->op) & GR__OPF_ELEMWISE) && gr__ew_pair_second(gr__code_of(node->op)) && gr__is_float(gr__fuse_input(fz, node, 0)->dtype))
            fz->second_of[gr__fuse_input(fz, node, 0)->id] = node->id + 1;
    }
    tmp = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(gs->n_ext + 1));
    gs->outs_new = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(gs->n_out + 1));
    if (!tmp || !gs->outs_new) { GR_FREE(tmp); return GR_ERR_NOMEM; }
    for (i = 0; i < gs->n_ext; i++) if (fz->ref[gs->ext[i]->id] == -2) tmp[e++] = gs->ext[i];   /* externals first, then immediates */
    gs->n_imm = gs->n_ext - e;
    for (i = 0; i < gs->n_ext; i++) if (fz->ref[gs->ext[i]->id] == -3) tmp[e + m++] = gs->ext[i];
    for (i = 0; i < gs->n_ext; i++) { gs->ext[i] = tmp[i]; fz->ref[gs->ext[i]->id] = i; }
    gs->n_ext = e;
    GR_FREE(tmp);
    return GR_OK;
}

/* the program and its instructions: one block (see gr__fprog_block), with the immediates' values,
   the outputs' references and types */
static gr_status gr__fgroup_program(gr__fuser *fz, gr__fgroup *gs) {
    size_t at[4], size[4];
    unsigned char *b;
    gr__fprog *p;
    int i;
    size[0] = sizeof(gr__fprog);
    size[1] = sizeof(gr__fop) * (size_t)gs->n_members;
    size[2] = sizeof(double) * (size_t)(gs->n_imm + 1);
    size[3] = sizeof(gr_type) * (size_t)(gs->n_out + 1);
    b = (unsigned char *)gr__fprog_block(fz->cg, 4, size, at);
    if (!b) return GR_ERR_NOMEM;
    p = gs->p = (gr__fprog *)b;
    memset(p, 0, sizeof *p);
    p->ops = (gr__fop *)(b + at[1]);
    p->imm = (double *)(b + at[2]);
    p->out_types = (gr_type *)(b + at[3]);
    p->n_ext = gs->n_ext;
    p->n_imm = gs->n_imm;
    p->n_out = gs->n_out;
    p->blk = gr__out(gr__fuse_node(fz->rw, fz->cg, gs->mem[0]))[0]->ndim == 0 ? 1 : GR__FUSE_BLK;
    for (i = 0; i < gs->n_out; i++) fz->ref[gs->outs_old[i]->id] = gs->n_ext + gs->n_imm + i;
    for (i = 0; i < gs->n_imm; i++)
        memcpy(&p->imm[i], ((const gr_array *)gr__ext(gs->ext[gs->n_ext + i]))->data, gr__dsize(gs->ext[gs->n_ext + i]->dtype));
    for (i = 0; i < gs->n_out; i++) gr_var_type(gs->outs_old[i], &p->out_types[i]);
    return GR_OK;
}

/* y's register: one freed before, or a new one */
static void gr__fgroup_reg(gr__fuser *fz, gr__fgroup *gs, const gr_var *y) {
    if (fz->ref[y->id] < 0) fz->ref[y->id] = gs->n_free ? gs->free_regs[--gs->n_free] : gs->n_ext + gs->n_imm + gs->n_out + gs->n_reg++;
}

/* the registers of node's inputs whose last reader it is (at schedule position q) become free */
static gr_status gr__fgroup_free_inputs(gr__fuser *fz, gr__fgroup *gs, const gr_node *node, uint32_t q) {
    int i, i2;
    for (i = 0; i < node->n_in; i++) {
        gr_var *x = gr__fuse_input(fz, node, i);
        int dup = 0;
        for (i2 = 0; i2 < i; i2++) if (gr__fuse_input(fz, node, i2) == x) dup = 1;
        if (!dup && (fz->vflag[x->id] & (GR__FV_MINE | GR__FV_OUT | GR__FV_ALIASED)) == GR__FV_MINE && fz->last[x->id] == q + 1) {
            if (!gr__grow((void **)&gs->free_regs, &gs->cap_free, (uint32_t)gs->n_free, sizeof(int32_t))) return GR_ERR_NOMEM;
            gs->free_regs[gs->n_free++] = fz->ref[x->id];
        }
    }
    return GR_OK;
}

/* add node (at schedule position q) joins the instruction before it when that is a mul of the same
   float dtype whose product, in a register, only this add reads: one muladd instruction, one pass
   over the block instead of two. 1 when it did (the add's inputs' registers are still to free) */
static int gr__fgroup_muladd(gr__fuser *fz, gr__fgroup *gs, const gr_node *node, uint32_t q) {
    gr__fop *prev = gs->op_i > 0 ? &gs->p->ops[gs->op_i - 1] : NULL;
    gr_var *y = gr__out(node)[0];
    int k;
    if (!prev || prev->row != GR__EW_mul || prev->n_args != 2 || node->n_in != 2) return 0;
    if ((y->dtype != GR_F64 && y->dtype != GR_F32) || prev->dtype != y->dtype || prev->odtype != y->dtype) return 0;
    for (k = 0; k < 2; k++) {
        gr_var *m = gr__fuse_input(fz, node, k), *c = gr__fuse_input(fz, node, 1 - k);
        if (fz->ref[m->id] != prev->out || fz->ref[c->id] == prev->out || c->dtype != y->dtype || m->dtype != y->dtype) continue;
        if ((fz->vflag[m->id] & (GR__FV_MINE | GR__FV_OUT | GR__FV_ALIASED)) != GR__FV_MINE || fz->last[m->id] != q + 1) continue;
        prev->row = GR__FOP_MULADD;
        prev->n_args = 3;
        prev->arg[2] = fz->ref[c->id];
        gr__fgroup_reg(fz, gs, y);
        prev->out = fz->ref[y->id];
        return 1;
    }
    return 0;
}

/* member node's instruction, with registers reused after their last reader: the result's register
   first, then the registers whose last reader this is (an op never writes over its own operands: a
   cast between element sizes could not) */
static gr_status gr__fgroup_emit(gr__fuser *fz, gr__fgroup *gs, gr_node *node) {
    gr_var *y = gr__out(node)[0], *x0 = gr__fuse_input(fz, node, 0);
    uint32_t q = (uint32_t)fz->pos[node->id];
    int row = (gr__flags_of(node->op) & GR__OPF_ELEMWISE) ? gr__code_of(node->op) : -1, i;
    const gr__ew_pair *pair = row >= 0 ? gr__ew_pair_first(row) : NULL;
    uint32_t second = fz->second_of[x0->id];
    gr__fop *op;
    if (row >= 0 && gr__ew_pair_second(row)) {
        if (fz->paired[node->id]) return gr__fgroup_free_inputs(fz, gs, node, q);   /* computed with its first */
        if (second == node->id + 1) fz->second_of[x0->id] = 0;                    /* computed here: a later first stays alone */
    }
    if ((gr__flags_of(node->op) & GR__OPF_FILL) && !(fz->vflag[y->id] & GR__FV_OUT) && fz->ref[y->id] < 0) {
        /* a fill read only inside the group: its readers read the source itself, with the source's
           (broadcast) stride; the source stays live as long as they read it */
        fz->ref[y->id] = fz->ref[x0->id];
        fz->vflag[y->id] |= GR__FV_ALIASED;          /* its register is x0's, freed through x0 */
        if ((fz->vflag[x0->id] & GR__FV_MINE) && fz->last[y->id] > fz->last[x0->id]) fz->last[x0->id] = fz->last[y->id];
        return GR_OK;
    }
    if (row == GR__EW_add && gr__fgroup_muladd(fz, gs, node, q)) return gr__fgroup_free_inputs(fz, gs, node, q);
    op = &gs->p->ops[gs->op_i++];
    op->out2 = -1;
    if (pair && second && second != node->id + 1) {  /* first(x0) and second(x0) in one instruction */
        gr_node *c = gr__fuse_node(fz->rw, fz->cg, second - 1);
        gr_var *yc = gr__out(c)[0];
        fz->paired[c->id] = 1;
        op->n_args = 1;
        op->dtype = op->odtype = (uint8_t)y->dtype;
        op->row = GR__FOP_PAIR;
        op->arg[0] = fz->ref[x0->id];
        op->arg[1] = (int32_t)(pair - gr__ew_pairs);
        gr__fgroup_reg(fz, gs, y);
        gr__fgroup_reg(fz, gs, yc);
        op->out = fz->ref[y->id];
        op->out2 = fz->ref[yc->id];
        return gr__fgroup_free_inputs(fz, gs, node, q);
    }
    if (row >= 0) {
        op->n_args = (uint8_t)node->n_in;
        op->dtype = (uint8_t)gr__fuse_input(fz, node, node->n_in - 1)->dtype;
        op->row = (uint8_t)row;
    } else {                                         /* a copy: a cast, or a fill */
        op->n_args = 1;
        op->dtype = (uint8_t)x0->dtype;
        op->row = (uint8_t)(GR__FOP_COPY + gr__code_of(node->op));
    }
    op->odtype = (uint8_t)y->dtype;
    for (i = 0; i < op->n_args; i++) op->arg[i] = fz->ref[gr__fuse_input(fz, node, i)->id];
    gr__fgroup_reg(fz, gs, y);
    op->out = fz->ref[y->id];
    return gr__fgroup_free_inputs(fz, gs, node, q);
}

/* the scratch a call uses: registers, and per reference its pointer and stride */
static gr_status gr__fgroup_scratch(gr__fuser *fz, gr__fgroup *gs) {
    gr__fprog *p = gs->p;
    size_t at[5], size[5];
    unsigned char *b;
    int32_t n_ext = gs->n_ext, n_imm = gs->n_imm, n_out = gs->n_out, n_reg = gs->n_reg, i;
    p->n_ops = gs->op_i;
    p->n_reg = n_reg;
    p->n_refs = n_ext + n_imm + n_out + n_reg;
    size[0] = (size_t)(n_reg + 1) * (size_t)p->blk * 8u;
    size[1] = sizeof(void *) * (size_t)p->n_refs;
    size[2] = sizeof(int64_t) * (size_t)p->n_refs;
    size[3] = sizeof(int64_t) * (size_t)(n_ext + 1) * GR_MAX_NDIM;
    size[4] = sizeof(int64_t) * (size_t)(n_ext + 1);
    b = (unsigned char *)gr__fprog_block(fz->cg, 5, size, at);
    if (!b) return GR_ERR_NOMEM;
    p->regs = b;
    p->ptr = (const void **)(b + at[1]);
    p->st = (int64_t *)(b + at[2]);
    p->ext_st = (int64_t *)(b + at[3]);
    p->ext_off = (int64_t *)(b + at[4]);
    for (i = 0; i < n_imm; i++) { p->ptr[n_ext + i] = &p->imm[i]; p->st[n_ext + i] = 0; }
    for (i = 0; i < n_out; i++) p->st[n_ext + n_imm + i] = 1;
    for (i = 0; i < n_reg; i++) {
        p->ptr[n_ext + n_imm + n_out + i] = p->regs + (size_t)i * (size_t)p->blk * 8u;
        p->st[n_ext + n_imm + n_out + i] = 1;
    }
    return GR_OK;
}

/* the group as one Fused node; readers outside the group, and the roots, will read its outputs */
static gr_status gr__fgroup_node(gr__fuser *fz, gr__fgroup *gs) {
    gr__fused_params fp;
    gr_status st;
    int i;
    fp.prog = gs->p;
    st = gr__make_node_n(fz->cg, &gr__op_Fused, &fp, sizeof fp, gs->n_ext, gs->ext, gs->n_out, gs->outs_new);
    if (st != GR_OK) return st;
    for (i = 0; i < gs->n_out; i++)
        if (gr__vname(gs->outs_old[i]) && !gr__set_name(fz->cg, gs->outs_new[i], gr__vname(gs->outs_old[i]))) return fz->cg->status;
    for (i = 0; i < gs->n_out; i++) fz->repl[gs->outs_old[i]->id] = gs->outs_new[i]->id + 1;
    fz->n_fused++;
    return GR_OK;
}

/* group g of two members or more as one Fused node */
static gr_status gr__fuse_one(gr__fuser *fz, int32_t g) {
    gr__fgroup gs;
    gr_status st;
    int32_t mi;
    memset(&gs, 0, sizeof gs);
    gs.mem = fz->gmem + fz->gmem_at[g];
    gs.n_members = fz->gmem_at[g + 1] - fz->gmem_at[g];
    st = gr__fgroup_operands(fz, &gs);
    if (st == GR_OK) st = gr__fgroup_program(fz, &gs);
    for (mi = 0; st == GR_OK && mi < gs.n_members; mi++) st = gr__fgroup_emit(fz, &gs, gr__fuse_node(fz->rw, fz->cg, gs.mem[mi]));
    if (st == GR_OK) st = gr__fgroup_scratch(fz, &gs);
    if (st == GR_OK) st = gr__fgroup_node(fz, &gs);
    for (mi = 0; mi < gs.n_members && g < fz->last_big; mi++) {   /* reset the references for the next group */
        gr_node *node = gr__fuse_node(fz->rw, fz->cg, gs.mem[mi]);
        int i;
        for (i = 0; i < node->n_in; i++) { fz->ref[gr__fuse_input(fz, node, i)->id] = -1; fz->second_of[gr__fuse_input(fz, node, i)->id] = 0; }
        fz->ref[gr__out(node)[0]->id] = -1;
        fz->vflag[gr__out(node)[0]->id] &= (uint8_t)~GR__FV_MINE;
    }
    GR_FREE(gs.ext); GR_FREE(gs.outs_old); GR_FREE(gs.outs_new); GR_FREE(gs.free_regs);
    if (st != GR_OK && fz->cg->status == GR_OK) gr__error(fz->cg, st, "out of memory (fusion)");
    return st;
}

/* ---- fusion ---------------------------------------------------------------------------------------- */

/* Fuses the elementwise nodes of the schedule of roots (the function's outputs and update
   values, patched when they are group outputs) in cg. */
static gr_status gr__fuse(gr__rewriter *rw, gr_graph *cg, int n_roots, gr_var **roots, const uint8_t *given) {
    gr__fuser fz;
    uint32_t *order = NULL, k;           /* the needed nodes' positions in rw->view */
    int32_t g;
    gr_status st;
    memset(&fz, 0, sizeof fz);
    fz.rw = rw;
    fz.cg = cg;
    fz.nn = cg->node_base + cg->n_nodes;
    fz.nv = cg->var_base + cg->n_vars;
    fz.last_big = -1;
    if ((st = gr__fuse_needed(rw, n_roots, roots, given, fz.nn, &order, &fz.n_order)) != GR_OK) return st;
    fz.group = (int32_t *)GR_MALLOC(sizeof(int32_t) * (fz.nn + 1u));
    fz.pos = (int32_t *)GR_MALLOC(sizeof(int32_t) * (fz.nn + 1u));
    if (!fz.group || !fz.pos) { GR_FREE(order); st = gr__fuse_nomem(&fz); goto done; }
    if ((st = gr__fuse_schedule(&fz, order)) != GR_OK) goto done;
    if ((st = gr__fuse_regions(&fz, n_roots, roots)) != GR_OK) goto done;
    /* (the Fused nodes' outputs, made below, are at most one per scheduled node) */
    fz.vflag = (uint8_t *)gr__calloc(fz.nv + fz.n_order + 1u, 1);
    fz.last = (uint32_t *)gr__calloc(fz.nv + 1u, sizeof(uint32_t));
    if (!fz.vflag || !fz.last) { st = gr__fuse_nomem(&fz); goto done; }
    if ((st = gr__fuse_group(&fz)) != GR_OK) goto done;
    gr__progress(rw->g, "fuse", 0, (size_t)fz.n_groups);      /* (counted in groups) */
    if (fz.n_groups == 0) goto done;
    if ((st = gr__fuse_members(&fz)) != GR_OK) goto done;
    /* 2. the values the roots read leave their groups too */
    fz.ref = (int32_t *)GR_MALLOC(sizeof(int32_t) * (fz.nv + fz.n_order + 1u));
    fz.second_of = (uint32_t *)gr__calloc(fz.nv + fz.n_order + 1u, sizeof(uint32_t));
    fz.paired = (uint8_t *)gr__calloc(fz.nn + 1u, 1);
    if (!fz.ref || !fz.second_of || !fz.paired) { st = gr__fuse_nomem(&fz); goto done; }
    for (k = 0; k < fz.nv + fz.n_order + 1u; k++) fz.ref[k] = -1;
    for (g = 0; g < fz.n_groups; g++) if (fz.gmem_at[g + 1] - fz.gmem_at[g] >= 2) fz.last_big = g;
    for (k = 0; k < (uint32_t)n_roots; k++) fz.vflag[roots[k]->id] |= GR__FV_OUT;
    /* 3. one Fused node per group of two or more */
    for (g = 0; g < fz.n_groups; g++) {
        if (fz.gmem_at[g + 1] - fz.gmem_at[g] >= 2 && (st = gr__fuse_one(&fz, g)) != GR_OK) goto done;
        gr__progress(rw->g, "fuse", (size_t)g + 1u, (size_t)fz.n_groups);
    }
    /* the roots read the Fused outputs; so do the nodes left alone, through rw->repl (no node is
       written: some are the source graph's) */
    for (k = 0; k < (uint32_t)n_roots; k++) roots[k] = gr__fuse_in(cg, fz.repl, fz.nv, roots[k]);
    rw->repl = fz.repl;
    rw->n_repl = fz.nv;
    fz.repl = NULL;
done:
    GR_FREE(fz.gmem_at); GR_FREE(fz.gmem); GR_FREE(fz.repl); GR_FREE(fz.oid);
    GR_FREE(fz.group); GR_FREE(fz.pos); GR_FREE(fz.gstart); GR_FREE(fz.vflag); GR_FREE(fz.ref); GR_FREE(fz.last);
    GR_FREE(fz.second_of); GR_FREE(fz.paired); GR_FREE(fz.reg);
    return st;
}

/* ==== src/function.c: generated region; edit src/function.c, then run make gradient.h ==== */
/* src/function.c: gr_function: copy, rewrite, fuse, compact and schedule (gr_call: src/call.c).

   A gr_fn owns a private graph holding a copy of what its outputs and updates need, rewritten
   (src/rewrite.c) and scheduled in a fixed order. Every variable the schedule touches has a slot:
   an array header whose data is the caller's (inputs), a shared storage's, a constant's, a view
   into another slot, or one of the plan's buffers. The plan is made at the first call and again
   only when some shape changes, so a steady-state call allocates nothing. */

enum gr__slot_kind { GR__SK_INPUT, GR__SK_CONST, GR__SK_SHARED, GR__SK_COMPUTED };

typedef struct gr__slot {
    gr_array arr;                /* dtype and ndim fixed; shape, size, data set per call or plan */
    gr_var  *var;                /* in the private graph */
    int64_t  last_use;           /* last step reading it; n_steps for outputs and update values */
    int64_t  producer;           /* the step computing it, -1 for leaves */
    int32_t  buf;                /* plan: its buffer, -1 if none (leaf or view) */
    int32_t  view_of;            /* plan: the slot whose memory it shares, -1 if none */
    int64_t  view_off;           /* byte offset into that slot's memory */
    uint8_t  kind, external;     /* external: its memory is not the function's (input, shared) */
} gr__slot;

typedef struct gr__buffer { void *data; size_t cap; } gr__buffer;

struct gr__cap_class { size_t cap; int32_t head; };   /* free buffers of one capacity (gr__fn_plan) */

struct gr_fn {
    gr_graph   *g;                        /* the private graph */
    int         n_in, n_out, n_upd;
    int32_t    *in_slot, *out_slot, *upd_slot;
    gr__storage **upd_store;
    gr_var    **upd_var;                  /* the update targets, in the private graph */
    int64_t     n_steps;
    gr_node   **steps;
    int32_t    *step_io;                  /* per step: slots of its inputs then of its outputs */
    int64_t    *step_io_at;
    const gr_array **io;                  /* per step: pointers to those slots' arrays, then to scratch */
    gr_array    scratch;                  /* the work memory of the steps that need some (GR_SCRATCH_OPS):
                                             one buffer, sized for the largest, kept across calls */
    gr__buffer  scratch_buf;
    int64_t     n_slots;
    gr__slot   *slots;
    /* the plan */
    int         planned;
    int         dynamic;                  /* a step's shapes are known only once it has run: gr_call
                                             plans step by step (src/call.c, gr__call_dynamic) */
    int32_t    *step_reg;                 /* with conditionals: each step's region (0: always run) */
    gr__region *regs;              /* the regions (gr__fn_regions); regs[0] is the function's */
    int32_t     n_regs;
    int8_t     *reg_on;                   /* per call: a region is on (1), off (0), not yet known (-1) */
    int64_t    *shape_cache;              /* every slot's shape at the last plan */
    int64_t    *shape_at;
    gr__buffer *bufs;  int32_t cap_bufs;      /* buffers are kept (never shrunk) across plans */
    int32_t    *plan_refs, *plan_next;    /* the planner's scratch, made with the schedule so that */
    size_t     *plan_caps;                /* replanning allocates only buffers that must grow */
    struct gr__cap_class *plan_cls;       /* the free buffers, by capacity (see gr__fn_plan) */
    int64_t    *plan_seen;                /* by slot: the step that last released it (read twice by a step) */
    gr_array   *out_copy;                 /* outputs whose memory is not the function's */
    gr__buffer *out_bufs;
    gr__buffer *stage;                    /* update values that must be copied before writing */
    uint8_t    *upd_staged;
    char        message[GR__MSG];
};

static gr_status gr__fn_error(gr_fn *f, gr_status code, const char *fmt, ...) GR__PRINTF(3, 4);
static gr_status gr__fn_error(gr_fn *f, gr_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
    GR__TRAP();
    return code;
}

/* ---- copying the needed subgraph into the private graph ----------------------------------- */

/* a copy of leaf v (an input, constant or shared variable) in cg */
static gr_var *gr__copy_leaf(gr_graph *cg, gr_var *v) {
    gr_var *c;
    if (v->kind == GR__VK_CONST) return gr__constant(cg, (const gr_array *)gr__ext(v), v->flags);
    if (v->kind == GR__VK_SHARED) {
        gr__storage *s = (gr__storage *)gr__ext(v);
        if (!gr__grow((void **)&cg->stores, &cg->cap_stores, cg->n_stores, sizeof(void *)))
            return gr__fail(cg, GR_ERR_NOMEM, "out of memory");
        c = gr__new_var(cg, v->dtype, v->ndim, gr__vshape(v), GR__VK_SHARED);
        if (!c) return NULL;
        c->u.ext = s;
        s->refs++;
        cg->stores[cg->n_stores++] = s;
    } else c = gr__new_var(cg, v->dtype, v->ndim, gr__vshape(v), GR__VK_INPUT);
    if (c && !gr__set_name(cg, c, gr__vname(v))) return NULL;
    return c;
}

GR_API void gr_fn_free(gr_fn *f) {
    int32_t i;
    int64_t k;
    if (!f) return;
    for (k = 0; f->steps && k < f->n_steps; k++)
        if (gr__flags_of(f->steps[k]->op) & GR__OPF_RUNTIME) gr__runtime_release(f->steps[k]);
    for (i = 0; f->bufs && i < f->cap_bufs; i++) GR_FREE(f->bufs[i].data);
    for (i = 0; f->out_bufs && i < f->n_out; i++) GR_FREE(f->out_bufs[i].data);
    for (i = 0; f->stage && i < f->n_upd; i++) GR_FREE(f->stage[i].data);
    GR_FREE(f->scratch_buf.data);
    GR_FREE(f->bufs); GR_FREE(f->out_bufs); GR_FREE(f->stage); GR_FREE(f->out_copy); GR_FREE(f->upd_staged);
    GR_FREE(f->in_slot); GR_FREE(f->out_slot); GR_FREE(f->upd_slot); GR_FREE(f->upd_store); GR_FREE(f->upd_var);
    GR_FREE(f->steps); GR_FREE(f->step_io); GR_FREE(f->step_io_at); GR_FREE((void *)f->io);
    GR_FREE(f->slots); GR_FREE(f->shape_cache); GR_FREE(f->shape_at);
    GR_FREE(f->plan_refs); GR_FREE(f->plan_next); GR_FREE(f->plan_cls); GR_FREE(f->plan_caps); GR_FREE(f->plan_seen);
    GR_FREE(f->step_reg); GR_FREE(f->regs); GR_FREE(f->reg_on);
    gr_graph_free(f->g);
    GR_FREE(f);
}

/* checks the inputs, outputs and updates of gr_function, in that order (the first error is the
   one reported); seen (by variable id of g, zeroed; NULL when there is at most one input and one
   update) marks the inputs (bit 1) and update targets (bit 2) met so far, so that a repeat is found
   in one pass however many there are; the earlier position is looked up only then */
static gr_status gr__fn_check_args(gr_graph *g, int n_in, gr_var *const *inputs, int n_out, gr_var *const *outputs,
                                   int n_upd, const gr_update *updates, uint8_t *seen) {
    int i, j;
    for (i = 0; i < n_in; i++) {
        gr_var *v = inputs[i];
        if (!v) return gr__error(g, GR_ERR_VALUE, "gr_function: input %d is NULL", i);
        if (v->graph != g) return gr__error(g, GR_ERR_VALUE, "gr_function: input %d (%s) belongs to another graph", i, gr__d(v).s);
        if (v->kind != GR__VK_INPUT && v->kind != GR__VK_OUT)
            return gr__error(g, GR_ERR_VALUE, "gr_function: input %d (%s) is a %s; only free inputs and computed variables can be given",
                             i, gr__d(v).s, v->kind == GR__VK_CONST ? "constant" : v->kind == GR__VK_SHARED ? "shared variable" : "gradient marker");
        if (seen && (seen[v->id] & 1u)) {
            for (j = 0; inputs[j] != v; j++) {}
            return gr__error(g, GR_ERR_VALUE, "gr_function: %s is given twice (inputs %d and %d)", gr__d(v).s, j, i);
        }
        if (seen) seen[v->id] |= 1u;
    }
    for (i = 0; i < n_out; i++) {
        gr_var *v = outputs[i];
        if (!v) return gr__error(g, GR_ERR_VALUE, "gr_function: output %d is NULL", i);
        if (v->graph != g) return gr__error(g, GR_ERR_VALUE, "gr_function: output %d (%s) belongs to another graph", i, gr__d(v).s);
        if (v->kind == GR__VK_NULL)
            return gr__error(g, (gr_status)v->aux, "gr_function: output %d is a null gradient: %s", i, gr__ext(v) ? (const char *)gr__ext(v) : "");
        if (v->kind == GR__VK_DISC)
            return gr__error(g, GR_ERR_TYPE, "gr_function: output %d is a disconnected gradient marker, not a value", i);
    }
    for (i = 0; i < n_upd; i++) {
        const gr_update *u = &updates[i];
        if (!u->shared || !u->value) return gr__error(g, GR_ERR_VALUE, "gr_function: update %d has a NULL %s", i, u->shared ? "value" : "shared variable");
        if (u->shared->graph != g || u->value->graph != g)
            return gr__error(g, GR_ERR_VALUE, "gr_function: update %d (%s) belongs to another graph", i, gr__d(u->shared).s);
        if (u->shared->kind != GR__VK_SHARED)
            return gr__error(g, GR_ERR_VALUE, "gr_function: update %d targets %s, which is not a shared variable", i, gr__d(u->shared).s);
        if (gr__is_marker(u->value))
            return gr__error(g, u->value->kind == GR__VK_NULL ? (gr_status)u->value->aux : GR_ERR_TYPE,
                             "gr_function: the update of %s is a %s gradient marker", gr__d(u->shared).s,
                             u->value->kind == GR__VK_NULL ? "null" : "disconnected");
        if (u->value->ndim != u->shared->ndim || (u->value->dtype != u->shared->dtype && !gr__is_weak(u->value)))
            return gr__error(g, GR_ERR_TYPE, "gr_function: the update of %s (%s, %d-d) is %s with %d dimensions", gr__d(u->shared).s,
                             gr_dtype_name((gr_dtype)u->shared->dtype), u->shared->ndim, gr_dtype_name((gr_dtype)u->value->dtype), u->value->ndim);
        if (seen && (seen[u->shared->id] & 2u)) {
            for (j = 0; updates[j].shared != u->shared; j++) {}
            return gr__error(g, GR_ERR_VALUE, "gr_function: %s is updated twice (updates %d and %d)", gr__d(u->shared).s, j, i);
        }
        if (seen) seen[u->shared->id] |= 2u;
    }
    return GR_OK;
}

/* checks gr_function's arguments; returns the graph to report to (NULL when none is known) */
static gr_status gr__fn_check(int n_in, gr_var *const *inputs, int n_out, gr_var *const *outputs, const gr_fn_opts *opts,
                              gr_graph **gout) {
    gr_graph *g = NULL;
    uint8_t *seen = NULL;
    gr_status st;
    int i, n_upd = opts ? opts->n_updates : 0;
    for (i = 0; !g && outputs && i < n_out; i++) if (outputs[i]) g = outputs[i]->graph;
    for (i = 0; !g && inputs && i < n_in; i++) if (inputs[i]) g = inputs[i]->graph;
    for (i = 0; !g && opts && opts->updates && i < n_upd; i++) {
        if (opts->updates[i].shared) g = opts->updates[i].shared->graph;
        else if (opts->updates[i].value) g = opts->updates[i].value->graph;
    }
    *gout = g;
    if (!g) return GR_ERR_VALUE;
    if (n_in < 0 || n_out < 0 || n_upd < 0)
        return gr__error(g, GR_ERR_VALUE, "gr_function: negative count (n_in %d, n_out %d, n_updates %d)", n_in, n_out, n_upd);
    if (n_in > 0 && !inputs) return gr__error(g, GR_ERR_VALUE, "gr_function: inputs is NULL but n_in is %d", n_in);
    if (n_out > 0 && !outputs) return gr__error(g, GR_ERR_VALUE, "gr_function: outputs is NULL but n_out is %d", n_out);
    if (n_upd > 0 && !opts->updates) return gr__error(g, GR_ERR_VALUE, "gr_function: updates is NULL but n_updates is %d", n_upd);
    if ((n_in > 1 || n_upd > 1) && !(seen = (uint8_t *)gr__calloc((size_t)g->n_vars + 1u, 1)))
        return gr__error(g, GR_ERR_NOMEM, "gr_function: out of memory");
    st = gr__fn_check_args(g, n_in, inputs, n_out, outputs, n_upd, n_upd > 0 ? opts->updates : NULL, seen);
    GR_FREE(seen);
    return st;
}

/* v's counterpart in cg, for a leaf (a constant, a shared variable, a marker) met for the first time */
static gr_status gr__fn_copy_leaf(gr_graph *g, gr_graph *cg, gr__rewriter *rw, gr_var *v, gr_var **map) {
    if (v->kind == GR__VK_INPUT)
        return gr__error(g, GR_ERR_VALUE, "gr_function: %s is needed but is not among the function's inputs", gr__d(v).s);
    /* (rewritten, the function reads the source graph's leaf until gr__fn_compact copies it) */
    map[v->id] = rw->level == GR_OPT_FULL ? v : gr__copy_leaf(cg, v);
    return map[v->id] ? GR_OK : cg->status != GR_OK ? cg->status : GR_ERR_NOMEM;
}

/* adds node to rw->view, the function's nodes in a topological order, with its depth (read while its
   inputs are at hand, so that fusion orders by depth without visiting the nodes again) */
static int gr__fn_view_add(gr__rewriter *rw, const gr_node *node) {
    uint32_t d = 0;
    int i;
    for (i = 0; i < node->n_in; i++) {
        const gr_var *x = gr__in(node)[i];
        if (gr__owner(x)) {                          /* (a producer outside the view counts as depth 0) */
            uint32_t dx = x->id < rw->cap_depth ? rw->depth[x->id] : 0;
            if (dx + 1 > d) d = dx + 1;
        }
    }
    for (i = 0; i < node->n_out; i++) {
        if (!gr__grow_fill((void **)&rw->depth, &rw->cap_depth, gr__out(node)[i]->id, sizeof(uint32_t), 0)) return 0;
        rw->depth[gr__out(node)[i]->id] = d;
    }
    if (!gr__grow((void **)&rw->view, &rw->cap_view, rw->n_view, sizeof(uint32_t)) ||
        !gr__grow((void **)&rw->view_depth, &rw->cap_view_depth, rw->n_view, sizeof(uint32_t)))
        return 0;
    rw->view_depth[rw->n_view] = d;
    rw->view[rw->n_view++] = node->id;
    return 1;
}

/* copies what the roots need into cg through the rewriter; map[v->id] is v's counterpart. Leaves
   are copied when first read, in the order of the schedule (deterministic). At GR_OPT_FULL a leaf,
   and a node the rewrites leave as it is, stand for themselves (no copy); rw->view lists the
   function's nodes in a topological order, and gr__fn_compact later copies those still needed. */
static gr_status gr__fn_copy(gr_graph *g, gr_graph *cg, gr__rewriter *rw, int n_in, gr_var *const *inputs, int n_roots,
                             gr_var *const *roots, gr_var **map) {
    uint8_t *given = (uint8_t *)gr__calloc(g->n_vars, 1);
    gr_node **order = NULL;
    uint32_t n_order = 0, k;
    gr_var *ins_stack[8], *outs_stack[8], **ins = ins_stack, **outs = outs_stack;
    int cap = 8, i, j;
    gr_status st;
    if (!given) return gr__error(g, GR_ERR_NOMEM, "out of memory");
    for (i = 0; i < n_in; i++) given[inputs[i]->id] = 1;
    st = gr__needed_in_order(g, n_roots, roots, given, &order, &n_order);
    if (st != GR_OK) { GR_FREE(given); return st; }
    if (rw->level == GR_OPT_FULL && n_order < UINT32_MAX / 4u) {
        /* room at once: the view and merging get a node or so per source node; the tables by
           variable id cover the source graph's ids, which the reused nodes keep */
        uint32_t nv = g->var_base + g->n_vars;
        if (!gr__reserve((void **)&rw->view, &rw->cap_view, n_order + 64u, sizeof(uint32_t)) ||
            !gr__reserve((void **)&rw->view_depth, &rw->cap_view_depth, n_order + 64u, sizeof(uint32_t)) ||
            !gr__reserve((void **)&rw->use_node, &rw->cap_use_node, n_order + 64u, sizeof(gr_node *)) ||
            !gr__reserve((void **)&rw->use_next, &rw->cap_use_next, n_order + 64u, sizeof(int32_t)) ||
            !gr__reserve_fill((void **)&rw->depth, &rw->cap_depth, nv, sizeof(uint32_t), 0) ||
            !gr__reserve_fill((void **)&rw->use_head, &rw->cap_use_head, nv, sizeof(int32_t), 0xFF) ||
            !gr__reserve_fill((void **)&rw->use_count, &rw->cap_use_count, nv, sizeof(uint32_t), 0)) {
            GR_FREE(given);
            GR_FREE(order);
            return gr__error(g, GR_ERR_NOMEM, "out of memory");
        }
    }
    for (i = 0; i < n_in; i++) {                     /* the function's inputs, in order */
        gr_var *c;
        if (rw->level == GR_OPT_FULL && inputs[i]->kind == GR__VK_INPUT) { map[inputs[i]->id] = inputs[i]; continue; }
        c = gr__new_var(cg, inputs[i]->dtype, inputs[i]->ndim, gr__vshape(inputs[i]), GR__VK_INPUT);
        if (!c) { st = GR_ERR_NOMEM; goto done; }
        if (!gr__set_name(cg, c, gr__vname(inputs[i]))) { st = GR_ERR_NOMEM; goto done; }
        map[inputs[i]->id] = c;
    }
    gr__progress(g, "rewrite", 0, n_order);
    for (k = 0; k < n_order; k++) {
        gr_node *node = order[k];
        uint32_t made = cg->n_nodes, q;
        if (node->n_in > cap || node->n_out > cap) {
            int need = node->n_in > node->n_out ? node->n_in : node->n_out;
            if (ins != ins_stack) { GR_FREE(ins); GR_FREE(outs); }
            ins = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)need);
            outs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)need);
            cap = need;
            if (!ins || !outs) { st = gr__error(g, GR_ERR_NOMEM, "out of memory"); goto done; }
        }
        for (j = 0; j < node->n_in; j++) {
            gr_var *v = gr__in(node)[j];
            if (!map[v->id] && !gr__owner(v) && (st = gr__fn_copy_leaf(g, cg, rw, v, map)) != GR_OK) goto done;
            ins[j] = map[v->id];
        }
        st = gr__rewrite_node(rw, node, ins, outs);
        if (st != GR_OK) goto done;
        if (rw->level == GR_OPT_FULL) {
            for (q = made; q < cg->n_nodes; q++)
                if (!gr__fn_view_add(rw, cg->nodes[q])) { st = gr__error(g, GR_ERR_NOMEM, "out of memory"); goto done; }
            if (node->n_out > 0 && outs[0] == gr__out(node)[0] && !gr__fn_view_add(rw, node)) {
                st = gr__error(g, GR_ERR_NOMEM, "out of memory");
                goto done;
            }
        }
        for (j = 0; j < node->n_out; j++)
            if (!map[gr__out(node)[j]->id]) map[gr__out(node)[j]->id] = outs[j];   /* a given output keeps its input */
        gr__progress(g, "rewrite", k + 1u, n_order);
    }
    for (j = 0; j < n_roots; j++)                    /* roots that are leaves */
        if (!map[roots[j]->id] && !gr__owner(roots[j]) && (st = gr__fn_copy_leaf(g, cg, rw, roots[j], map)) != GR_OK) goto done;
    st = GR_OK;
done:
    if (st != GR_OK && cg->status != GR_OK && g->status == GR_OK)
        gr__error(g, cg->status, "gr_function: %s", cg->message);
    else if (st != GR_OK && g->status == GR_OK)
        gr__error(g, st, "gr_function: %s", gr_status_string(st));
    if (ins != ins_stack) { GR_FREE(ins); GR_FREE(outs); }
    GR_FREE(order);
    GR_FREE(given);
    return st;
}

/* what the passes over the private graph start from: *roots, f's outputs then its update values,
   and *given, a mark on each of its inputs (by variable id); both GR_MALLOC'd, 0 when out of memory */
static int gr__fn_roots(const gr_fn *f, gr_var *const *cin, gr_var *const *cout, gr_var *const *cupd, gr_var ***roots,
                        uint8_t **given) {
    int i;
    *roots = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(f->n_out + f->n_upd + 1));
    *given = (uint8_t *)gr__calloc(f->g->var_base + f->g->n_vars + 1u, 1);
    if (!*roots || !*given) { GR_FREE(*roots); GR_FREE(*given); *roots = NULL; *given = NULL; return 0; }
    for (i = 0; i < f->n_out; i++) (*roots)[i] = cout[i];
    for (i = 0; i < f->n_upd; i++) (*roots)[f->n_out + i] = cupd[i];
    for (i = 0; i < f->n_in; i++) (*given)[cin[i]->id] = 1;
    return 1;
}

/* fuses the elementwise nodes that the outputs and update values need (cout and cupd are patched
   where they are outputs of a fused group) */
static gr_status gr__fn_fuse(gr_fn *f, gr__rewriter *rw, gr_var **cin, gr_var **cout, gr_var **cupd) {
    gr_graph *cg = f->g;
    int n_roots = f->n_out + f->n_upd, i;
    gr_var **roots;
    uint8_t *given;
    gr_status st;
    if (!gr__fn_roots(f, cin, cout, cupd, &roots, &given)) return gr__error(cg, GR_ERR_NOMEM, "out of memory (fusion)");
    st = gr__fuse(rw, cg, n_roots, roots, given);
    for (i = 0; i < f->n_out; i++) cout[i] = roots[i];
    for (i = 0; i < f->n_upd; i++) cupd[i] = roots[f->n_out + i];
    GR_FREE(roots);
    GR_FREE(given);
    return st;
}

static int gr__ptr_cmp(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return x < y ? -1 : x > y;
}

/* x as the schedule reads it: the Fused output that replaces it, if any (ctx: the rewriter) */
static gr_var *gr__fn_read(const void *ctx, gr_var *x) {
    const gr__rewriter *rw = (const gr__rewriter *)ctx;
    return rw->repl ? gr__fuse_in(rw->cg, rw->repl, rw->n_repl, x) : x;
}

/* After fusion the private graph still holds every node the copy built, most of them fused away,
   merged or rewritten out, and (at GR_OPT_FULL) it reads the source graph's leaves and the nodes the
   rewrites left as they were. The nodes still needed move to a fresh graph (the Fused programs'
   blocks change owner with their nodes) and the old graph is freed: the function owns what it runs,
   and a compiled chain of a million links keeps its program, not the copy it was made from. At
   GR_OPT_NONE, where the copy is all the function's own, this is done only when more than half of
   it is dead. */
static gr_status gr__fn_compact(gr_fn *f, gr__rewriter *rw, gr_var **cin, gr_var **cout, gr_var **cupd) {
    gr_graph *cg = f->g, *ng = NULL;
    gr_node **order = NULL;
    gr_var **map = NULL, **roots = NULL, *ins_stack[8], *outs_stack[8], **ins = ins_stack, **outs = outs_stack;
    void **progs = NULL;
    uint8_t *given = NULL;
    uint32_t nv = cg->var_base + cg->n_vars, n_order = 0, n_progs = 0, k, max_io = 8;
    int i, j, n_roots = f->n_out + f->n_upd;
    gr_status st = GR_ERR_NOMEM;
    if (!gr__fn_roots(f, cin, cout, cupd, &roots, &given)) goto done;
    /* the nodes the roots need, each after those it reads */
    if ((st = gr__toposort_read(cg, n_roots, roots, given, gr__fn_read, rw, &order, &n_order)) != GR_OK) goto done;
    st = GR_OK;
    if (rw->level != GR_OPT_FULL && (uint64_t)n_order * 2 >= cg->n_nodes) goto done;    /* little to gain */
    st = GR_ERR_NOMEM;
    ng = gr_graph_new();
    map = (gr_var **)gr__calloc(nv + 1u, sizeof(gr_var *));
    progs = (void **)GR_MALLOC(sizeof(void *) * (2u * (size_t)n_order + 1));
    if (!ng || !map || !progs) goto done;
    for (k = 0; k < n_order; k++) {
        if ((uint32_t)order[k]->n_in > max_io) max_io = (uint32_t)order[k]->n_in;
        if ((uint32_t)order[k]->n_out > max_io) max_io = (uint32_t)order[k]->n_out;
    }
    if (max_io > 8) {
        ins = (gr_var **)GR_MALLOC(sizeof(gr_var *) * max_io);
        outs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * max_io);
        if (!ins || !outs) goto done;
    }
    /* the leaves (inputs first, in their order), then the nodes in schedule order */
#define GR__COMPACT_LEAF(v) (map[(v)->id] ? map[(v)->id] : (map[(v)->id] = gr__copy_leaf(ng, (v))))
    for (i = 0; i < f->n_in; i++) if (!GR__COMPACT_LEAF(cin[i])) goto failed;
    for (k = 0; k < n_order; k++) {
        gr_node *node = order[k];
        for (j = 0; j < node->n_in; j++)
            if (!(ins[j] = GR__COMPACT_LEAF(gr__fn_read(rw, gr__in(node)[j])))) goto failed;
        if (gr__make_node_n(ng, node->op, gr__params(node), node->params_size, node->n_in, ins, node->n_out, outs) != GR_OK) goto failed;
        for (j = 0; j < node->n_out; j++) {
            map[gr__out(node)[j]->id] = outs[j];
            if (gr__vname(gr__out(node)[j]) && !gr__set_name(ng, outs[j], gr__vname(gr__out(node)[j]))) goto failed;
        }
        if (node->op == &gr__op_Fused) { progs[n_progs++] = (void *)gr__fp(node); progs[n_progs++] = gr__fp(node)->regs; }
    }
    for (i = 0; i < f->n_out; i++) if (!(cout[i] = GR__COMPACT_LEAF(cout[i]))) goto failed;
    for (i = 0; i < f->n_upd; i++) if (!(cupd[i] = GR__COMPACT_LEAF(cupd[i]))) goto failed;
    for (i = 0; i < f->n_upd; i++) if (!(f->upd_var[i] = GR__COMPACT_LEAF(f->upd_var[i]))) goto failed;
    for (i = 0; i < f->n_in; i++) cin[i] = map[cin[i]->id];
#undef GR__COMPACT_LEAF
    /* the programs change owner: the old graph forgets them */
    qsort(progs, n_progs, sizeof(void *), gr__ptr_cmp);
    if (n_progs && !gr__grow((void **)&ng->owned, &ng->cap_owned, ng->n_owned + n_progs, sizeof(void *))) goto done;
    for (k = 0; k < cg->n_owned; k++)
        if (n_progs && bsearch(&cg->owned[k], progs, n_progs, sizeof(void *), gr__ptr_cmp)) {
            ng->owned[ng->n_owned++] = cg->owned[k];
            cg->owned[k] = NULL;
        }
    f->g = ng;
    gr_graph_free(cg);
    ng = NULL;
    st = GR_OK;
    goto done;
failed:
    st = ng->status != GR_OK ? ng->status : GR_ERR_NOMEM;
    gr__error(cg, st, "%s", ng->message[0] ? ng->message : "out of memory (compacting)");
done:
    if (st == GR_ERR_NOMEM && cg->status == GR_OK) gr__error(cg, st, "out of memory (compacting)");
    gr_graph_free(ng);
    if (ins != ins_stack) GR_FREE(ins);
    if (outs != outs_stack) GR_FREE(outs);
    GR_FREE(order); GR_FREE(map); GR_FREE(progs); GR_FREE(given); GR_FREE(roots);
    return st;
}

/* Ops that keep state of their own (loops) see who reads their outputs and may compute less: a
   node's narrow rule makes a replacement and maps the variables it replaces (gr__readers,
   src/impl.c), which every node and root then reads instead. Costs nothing without such a node. */
static gr_status gr__fn_narrow(gr_fn *f, gr_var **cin, gr_var **cout, gr_var **cupd) {
    gr_graph *cg = f->g;
    uint32_t base = cg->var_base, nv = cg->n_vars, n_order = 0, k, n_use = 0;
    gr_node **order = NULL;
    gr_var **roots = NULL, **map = NULL;
    uint8_t *given = NULL, *root = NULL;
    int32_t *first = NULL, *next = NULL;
    gr_node **rnode = NULL;
    gr__readers rd;
    int i, j, any = 0, n_roots = f->n_out + f->n_upd;
    gr_status st = GR_ERR_NOMEM;
    (void)cin;
    for (k = 0; k < cg->n_nodes && !any; k++) any = (gr__flags_of(cg->nodes[k]->op) & GR__OPF_RUNTIME) != 0;
    if (!any) return GR_OK;
    if (!gr__fn_roots(f, cin, cout, cupd, &roots, &given)) goto done;
    if ((st = gr__toposort(cg, n_roots, roots, given, &order, &n_order)) != GR_OK) goto done;
    st = GR_ERR_NOMEM;
    for (k = 0; k < n_order; k++) n_use += (uint32_t)order[k]->n_in;
    first = (int32_t *)GR_MALLOC(sizeof(int32_t) * (nv + 1u));
    next = (int32_t *)GR_MALLOC(sizeof(int32_t) * (n_use + 1u));
    rnode = (gr_node **)GR_MALLOC(sizeof(gr_node *) * (n_use + 1u));
    root = (uint8_t *)gr__calloc(nv + 1u, 1);
    map = (gr_var **)gr__calloc(nv + 1u, sizeof(gr_var *));
    if (!first || !next || !rnode || !root || !map) goto done;
    for (k = 0; k < nv; k++) first[k] = -1;
    for (i = 0; i < n_roots; i++) if (roots[i]->graph == cg && roots[i]->id >= base) root[roots[i]->id - base] = 1;
    for (k = 0, n_use = 0; k < n_order; k++)
        for (i = 0; i < order[k]->n_in; i++) {
            gr_var *x = gr__in(order[k])[i];
            if (x->graph != cg || x->id < base || x->id - base >= nv) continue;
            rnode[n_use] = order[k];
            next[n_use] = first[x->id - base];
            first[x->id - base] = (int32_t)n_use++;
        }
    rd.base = base; rd.first = first; rd.next = next; rd.node = rnode; rd.root = root;
    for (k = 0; k < n_order; k++)
        if ((gr__flags_of(order[k]->op) & GR__OPF_RUNTIME) && (st = gr__runtime_narrow(order[k], &rd, map)) != GR_OK) goto done;
    /* everything reads the replacements */
#define GR__NARROWED(x) ((x)->graph == cg && (x)->id >= base && (x)->id - base < nv && map[(x)->id - base] ? map[(x)->id - base] : (x))
    for (k = 0; k < cg->n_nodes; k++)
        for (j = 0; j < cg->nodes[k]->n_in; j++) gr__in(cg->nodes[k])[j] = GR__NARROWED(gr__in(cg->nodes[k])[j]);
    for (i = 0; i < f->n_out; i++) cout[i] = GR__NARROWED(cout[i]);
    for (i = 0; i < f->n_upd; i++) cupd[i] = GR__NARROWED(cupd[i]);
#undef GR__NARROWED
    st = GR_OK;
done:
    if (st == GR_ERR_NOMEM && cg->status == GR_OK) gr__error(cg, st, "out of memory (narrowing)");
    GR_FREE(order); GR_FREE(roots); GR_FREE(given); GR_FREE(first); GR_FREE(next); GR_FREE(rnode); GR_FREE(root); GR_FREE(map);
    return st;
}

/* ---- conditionals: which steps run when ---------------------------------------------------------

   A step belongs to the region where its outputs are read: the function's own (region 0, always
   run), or one side of a condition (GR__OPF_LAZY nodes: input 0 the condition, the first half of
   the others read when it is nonzero, the second half when it is zero) inside the region of the
   conditional node, when every read of it is on that side or within it. A region is (parent,
   condition, side): conditionals on one condition in one region share their sides. gr_call runs a
   step only when its region is on (src/call.c); so that each condition is known first, the steps
   are put in a stable topological order in which every region's condition (and its ancestors')
   comes before the region's steps. */
/* the regions of the n steps (a topological order), and the steps ordered again (see above) */
static gr_status gr__fn_regions(gr_fn *f, gr_node **steps, uint32_t n, int n_roots, gr_var *const *roots) {
    gr_graph *cg = f->g;
    uint32_t nn = cg->node_base + cg->n_nodes, cap = 0, k, n_edge = 0, e, n_heap = 0;
    int32_t *nreg = NULL, *step_of = NULL;
    uint32_t *indeg = NULL, *first = NULL, *adj = NULL, *heap = NULL;
    gr_node **order = NULL;
    int i, any = 0;
    gr_status st = GR_ERR_NOMEM;
    for (k = 0; k < n && !any; k++) any = (gr__flags_of(steps[k]->op) & GR__OPF_LAZY) != 0;
    if (!any) return GR_OK;
    f->dynamic = 1;                                   /* a conditional's shape is the side taken's */
    nreg = (int32_t *)GR_MALLOC(sizeof(int32_t) * (n + 1u));
    step_of = (int32_t *)GR_MALLOC(sizeof(int32_t) * (nn + 1u));
    f->step_reg = (int32_t *)GR_MALLOC(sizeof(int32_t) * (n + 1u));
    if (!nreg || !step_of || !f->step_reg) goto done;
    if ((st = gr__regions_of(cg, steps, n, n_roots, roots, &f->regs, &f->n_regs, &cap, nreg)) != GR_OK) goto done;
    st = GR_ERR_NOMEM;
    for (k = 0; k < nn; k++) step_of[k] = -1;
    for (k = 0; k < n; k++) step_of[steps[k]->id] = (int32_t)k;
    /* the order: edges producer -> reader, and the condition of each region up the chain -> each step in it */
    indeg = (uint32_t *)gr__calloc(n + 1u, sizeof(uint32_t));
    first = (uint32_t *)gr__calloc(n + 2u, sizeof(uint32_t));
    heap = (uint32_t *)GR_MALLOC(sizeof(uint32_t) * (n + 1u));
    order = (gr_node **)GR_MALLOC(sizeof(gr_node *) * (n + 1u));
    if (!indeg || !first || !heap || !order) goto done;
#define GR__REGION_EDGES(EDGE) \
    for (k = 0; k < n; k++) { \
        int32_t r; \
        for (i = 0; i < steps[k]->n_in; i++) { \
            gr_node *p = gr__owner(gr__in(steps[k])[i]); \
            if (p && p->id < nn && step_of[p->id] >= 0) EDGE((uint32_t)step_of[p->id], k); \
        } \
        for (r = nreg[k]; r > 0; r = f->regs[r].parent) { \
            gr_node *p = gr__owner(f->regs[r].cond); \
            if (p && p->id < nn && step_of[p->id] >= 0) EDGE((uint32_t)step_of[p->id], k); \
        } \
    }
#define GR__COUNT_EDGE(a, b) (first[(a) + 1]++, indeg[b]++, n_edge++)
    GR__REGION_EDGES(GR__COUNT_EDGE)
    for (k = 0; k < n; k++) first[k + 1] += first[k];
    adj = (uint32_t *)GR_MALLOC(sizeof(uint32_t) * (n_edge + 1u));
    if (!adj) goto done;
    {
        uint32_t *fill = heap;                        /* (the heap is not in use yet) */
        for (k = 0; k < n; k++) fill[k] = first[k];
#define GR__PUT_EDGE(a, b) (adj[fill[a]++] = (b))
        GR__REGION_EDGES(GR__PUT_EDGE)
#undef GR__PUT_EDGE
    }
#undef GR__COUNT_EDGE
#undef GR__REGION_EDGES
    /* Kahn's algorithm, the earliest ready step first (a binary min-heap of step numbers) */
    for (k = 0; k < n; k++)
        if (!indeg[k]) {
            uint32_t at = n_heap++;
            while (at && heap[(at - 1) / 2] > k) { heap[at] = heap[(at - 1) / 2]; at = (at - 1) / 2; }
            heap[at] = k;
        }
    for (k = 0; k < n; k++) {
        uint32_t s, last, at = 0;
        if (!n_heap) { st = gr__error(cg, GR_ERR_VALUE, "internal error: the conditionals' order has a cycle"); goto done; }
        s = heap[0];
        last = heap[--n_heap];
        for (;;) {                                    /* sift the last entry down from the top */
            uint32_t c = 2 * at + 1;
            if (c >= n_heap) break;
            if (c + 1 < n_heap && heap[c + 1] < heap[c]) c++;
            if (heap[c] >= last) break;
            heap[at] = heap[c];
            at = c;
        }
        if (n_heap) heap[at] = last;
        order[k] = steps[s];
        f->step_reg[k] = nreg[s];
        for (e = first[s]; e < first[s + 1]; e++)
            if (--indeg[adj[e]] == 0) {
                uint32_t t = adj[e];
                at = n_heap++;
                while (at && heap[(at - 1) / 2] > t) { heap[at] = heap[(at - 1) / 2]; at = (at - 1) / 2; }
                heap[at] = t;
            }
    }
    memcpy(steps, order, sizeof(gr_node *) * n);
    if (!(f->reg_on = (int8_t *)GR_MALLOC((size_t)f->n_regs))) goto done;
    st = GR_OK;
done:
    if (st == GR_ERR_NOMEM) gr__error(cg, st, "out of memory (scheduling conditionals)");
    GR_FREE(nreg); GR_FREE(step_of); GR_FREE(indeg); GR_FREE(first); GR_FREE(adj); GR_FREE(heap); GR_FREE(order);
    return st;
}

static int32_t gr__slot_new(gr_fn *f, int32_t *slot_of, gr_var *v) {
    gr__slot *s;
    if (slot_of[v->id] >= 0) return slot_of[v->id];
    s = &f->slots[f->n_slots];
    memset(s, 0, sizeof *s);
    s->var = v;
    s->arr.dtype = (gr_dtype)v->dtype;
    s->arr.ndim = v->ndim;
    s->producer = -1;
    s->last_use = -1;
    s->buf = -1;
    s->view_of = -1;
    switch (v->kind) {
    case GR__VK_INPUT: s->kind = GR__SK_INPUT; s->external = 1; break;
    case GR__VK_SHARED: s->kind = GR__SK_SHARED; s->external = 1; break;
    case GR__VK_CONST: {
        const gr_array *c = (const gr_array *)gr__ext(v);
        s->kind = GR__SK_CONST;
        s->arr = *c;
        break;
    }
    default: s->kind = GR__SK_COMPUTED; break;
    }
    slot_of[v->id] = (int32_t)f->n_slots;
    return (int32_t)f->n_slots++;
}

/* schedules the private graph: steps, slots, liveness */
/* (pg: the source graph, whose progress callback hears "schedule", counted in steps) */
static gr_status gr__fn_schedule(gr_fn *f, const gr_graph *pg, gr_var *const *cin, gr_var *const *cout, gr_var *const *cupd) {
    gr_graph *cg = f->g;
    int32_t *slot_of = NULL;
    gr_var **roots = NULL;
    uint8_t *given = NULL;
    uint32_t n_order = 0, k;
    int64_t n_io = 0, at = 0;
    int i, j, n_roots = f->n_out + f->n_upd;
    gr_status st = GR_ERR_NOMEM;
    slot_of = (int32_t *)GR_MALLOC(sizeof(int32_t) * (cg->var_base + cg->n_vars + 1u));
    if (!slot_of || !gr__fn_roots(f, cin, cout, cupd, &roots, &given)) goto done;
    st = gr__toposort(cg, n_roots, roots, given, &f->steps, &n_order);
    if (st != GR_OK) goto done;
    if ((st = gr__fn_regions(f, f->steps, n_order, n_roots, roots)) != GR_OK) goto done;
    st = GR_ERR_NOMEM;
    f->n_steps = n_order;
    for (k = 0; k < n_order; k++) n_io += f->steps[k]->n_in + f->steps[k]->n_out + 1;
    f->step_io = (int32_t *)GR_MALLOC(sizeof(int32_t) * (size_t)(n_io + 1));
    f->step_io_at = (int64_t *)GR_MALLOC(sizeof(int64_t) * (size_t)(n_order + 1));
    f->io = (const gr_array **)GR_MALLOC(sizeof(gr_array *) * (size_t)(n_io + 1));
    /* a slot per variable the schedule touches: at most one per variable of the private graph */
    f->slots = (gr__slot *)GR_MALLOC(sizeof(gr__slot) * (size_t)(cg->n_vars + 1u));
    f->in_slot = (int32_t *)GR_MALLOC(sizeof(int32_t) * (size_t)(f->n_in + 1));
    f->out_slot = (int32_t *)GR_MALLOC(sizeof(int32_t) * (size_t)(f->n_out + 1));
    f->upd_slot = (int32_t *)GR_MALLOC(sizeof(int32_t) * (size_t)(f->n_upd + 1));
    if (!f->step_io || !f->step_io_at || !f->io || !f->slots || !f->in_slot || !f->out_slot || !f->upd_slot) goto done;
    for (k = 0; k < cg->var_base + cg->n_vars; k++) slot_of[k] = -1;
    for (i = 0; i < f->n_in; i++) f->in_slot[i] = gr__slot_new(f, slot_of, cin[i]);
    gr__progress(pg, "schedule", 0, n_order);
    for (k = 0; k < n_order; k++) {
        gr_node *node = f->steps[k];
        f->step_io_at[k] = at;
        for (j = 0; j < node->n_in; j++) {
            int32_t s = gr__slot_new(f, slot_of, gr__in(node)[j]);
            f->slots[s].last_use = (int64_t)k;
            f->step_io[at] = s;
            f->io[at++] = &f->slots[s].arr;
        }
        for (j = 0; j < node->n_out; j++) {
            int32_t s = gr__slot_new(f, slot_of, gr__out(node)[j]);
            f->slots[s].producer = (int64_t)k;
            f->step_io[at] = s;
            f->io[at++] = &f->slots[s].arr;
        }
        f->step_io[at] = -1;                   /* out[n_out]: the work memory */
        f->io[at++] = &f->scratch;
        gr__progress(pg, "schedule", k + 1u, n_order);
    }
    f->step_io_at[n_order] = at;
    for (i = 1; i < f->n_regs; i++) f->regs[i].cond_slot = slot_of[f->regs[i].cond->id];
    for (k = 0; k < n_order; k++)              /* outputs shaped by running: memory the step owns */
        if (gr__flags_of(f->steps[k]->op) & GR__OPF_DYNSHAPE) {
            f->dynamic = 1;
            for (j = 0; j < f->steps[k]->n_out; j++) f->slots[f->step_io[f->step_io_at[k] + f->steps[k]->n_in + j]].external = 1;
        }
    for (i = 0; i < f->n_out; i++) {
        f->out_slot[i] = gr__slot_new(f, slot_of, cout[i]);
        f->slots[f->out_slot[i]].last_use = f->n_steps;
    }
    for (i = 0; i < f->n_upd; i++) {
        f->upd_slot[i] = gr__slot_new(f, slot_of, cupd[i]);
        f->slots[f->upd_slot[i]].last_use = f->n_steps;
    }
    f->shape_at = (int64_t *)GR_MALLOC(sizeof(int64_t) * (size_t)(f->n_slots + 1));
    if (!f->shape_at) goto done;
    {
        int64_t total = 0, s;
        for (s = 0; s < f->n_slots; s++) { f->shape_at[s] = total; total += f->slots[s].arr.ndim + 1; }
        f->shape_cache = (int64_t *)gr__calloc((size_t)(total + 1), sizeof(int64_t));
        if (!f->shape_cache) goto done;
    }
    f->plan_refs = (int32_t *)GR_MALLOC(sizeof(int32_t) * (size_t)(f->n_slots + 1));
    f->plan_next = (int32_t *)GR_MALLOC(sizeof(int32_t) * (size_t)(f->n_slots + 1));
    f->plan_cls = (struct gr__cap_class *)GR_MALLOC(sizeof(struct gr__cap_class) * (size_t)(f->n_slots + 1));
    f->plan_caps = (size_t *)GR_MALLOC(sizeof(size_t) * (size_t)(f->n_slots + 1));
    f->plan_seen = (int64_t *)GR_MALLOC(sizeof(int64_t) * (size_t)(f->n_slots + 1));
    if (!f->plan_refs || !f->plan_next || !f->plan_cls || !f->plan_caps || !f->plan_seen) goto done;
    st = GR_OK;
done:
    GR_FREE(roots);
    GR_FREE(given);
    GR_FREE(slot_of);
    if (st != GR_OK) gr__error(cg, st, "out of memory (scheduling)");
    return st;
}

GR_API gr_fn *gr_function(int n_in, gr_var *const *inputs, int n_out, gr_var *const *outputs, const gr_fn_opts *opts) {
    gr_graph *g = NULL, *cg = NULL;
    gr_fn *f = NULL;
    gr_var **map = NULL, **roots = NULL, **cin = NULL, **cout = NULL, **cupd = NULL;
    gr__rewriter *rw = NULL;
    int n_upd = opts ? opts->n_updates : 0, level = opts ? (int)opts->optimize : (int)GR_OPT_FULL, i, j;
    gr_status st;
    st = gr__fn_check(n_in, inputs, n_out, outputs, opts, &g);
    if (st != GR_OK) return NULL;
    if (n_in == 0 && n_out == 0 && n_upd == 0) { gr__error(g, GR_ERR_VALUE, "gr_function: nothing to compute"); return NULL; }
    f = (gr_fn *)gr__calloc(1, sizeof(gr_fn));
    cg = gr_graph_new();
    map = (gr_var **)gr__calloc(g->n_vars, sizeof(gr_var *));
    roots = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(n_out + n_upd + 1));
    cin = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(n_in + 1));
    cout = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(n_out + 1));
    cupd = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(n_upd + 1));
    if (f) f->g = cg;                               /* from here on gr_fn_free(f) frees cg too */
    if (!f || !cg || !map || !roots || !cin || !cout || !cupd) { gr__error(g, GR_ERR_NOMEM, "gr_function: out of memory"); goto fail; }
    f->n_in = n_in; f->n_out = n_out; f->n_upd = n_upd;
    for (i = 0; i < n_out; i++) roots[i] = outputs[i];
    for (i = 0; i < n_upd; i++) roots[n_out + i] = opts->updates[i].value;
    cg->var_base = g->n_vars;                       /* ids apart from the source graph's, which it may reuse */
    cg->node_base = g->n_nodes;
    rw = gr__rewriter_new(g, cg, level);
    if (!rw) { gr__error(g, GR_ERR_NOMEM, "gr_function: out of memory"); goto fail; }
    if (gr__fn_copy(g, cg, rw, n_in, inputs, n_out + n_upd, roots, map) != GR_OK) goto fail;
    for (i = 0; i < n_in; i++) cin[i] = map[inputs[i]->id];
    for (i = 0; i < n_out; i++) cout[i] = map[outputs[i]->id];
    f->upd_store = (gr__storage **)GR_MALLOC(sizeof(gr__storage *) * (size_t)(n_upd + 1));
    f->upd_var = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(n_upd + 1));
    f->upd_staged = (uint8_t *)gr__calloc((size_t)n_upd + 1, 1);
    if (!f->upd_store || !f->upd_var || !f->upd_staged) { gr__error(g, GR_ERR_NOMEM, "gr_function: out of memory"); goto fail; }
    for (i = 0; i < n_upd; i++) {
        gr_var *sv = opts->updates[i].shared;
        cupd[i] = map[opts->updates[i].value->id];
        if (gr__is_weak(cupd[i]))                   /* (made in cg: cupd[i] may be the source graph's) */
            cupd[i] = sv->dtype != GR_F64 ? gr__scalar_const(cg, sv->dtype, gr__weak_value(cupd[i]), 0) : gr__coerce(cupd[i], sv->dtype);
        /* a target the function does not read gets its counterpart here (holding a reference) */
        if (!map[sv->id]) map[sv->id] = gr__copy_leaf(cg, sv);
        if (!cupd[i] || !map[sv->id]) { gr__error(g, cg->status, "gr_function: %s", cg->message); goto fail; }
        f->upd_var[i] = map[sv->id];
        f->upd_store[i] = (gr__storage *)gr__ext(sv);
        /* static shapes compared on the copies: they are typed against the shared values' shapes of
           now, which gr_shared_set may have changed since the user's graph was built */
        for (j = 0; j < cupd[i]->ndim; j++)
            if (gr__vshape(cupd[i])[j] >= 0 && gr__vshape(cupd[i])[j] != gr__vshape(f->upd_var[i])[j]) {
                gr__error(g, GR_ERR_SHAPE, "gr_function: the update of %s %s has shape %s", gr__d(sv).s,
                          gr__vs(f->upd_var[i]).s, gr__vs(cupd[i]).s);
                goto fail;
            }
    }
    gr__rewriter_drop_merging(rw);                  /* the peak of a big compile is fusion's: room for it */
    GR_FREE(map);
    map = NULL;
    if (level == GR_OPT_FULL && gr__fn_fuse(f, rw, cin, cout, cupd) != GR_OK) { gr__error(g, cg->status, "gr_function: %s", cg->message); goto fail; }
    if (gr__fn_compact(f, rw, cin, cout, cupd) != GR_OK) { gr__error(g, cg->status, "gr_function: %s", cg->message); goto fail; }
    cg = f->g;
    if (level == GR_OPT_FULL && gr__fn_narrow(f, cin, cout, cupd) != GR_OK) { gr__error(g, cg->status, "gr_function: %s", cg->message); goto fail; }
    if (gr__fn_schedule(f, g, cin, cout, cupd) != GR_OK) { gr__error(g, cg->status, "gr_function: %s", cg->message); goto fail; }
    for (i = 0; i < f->n_steps; i++)                /* state of the function's own (a loop's compiled body) */
        if ((gr__flags_of(f->steps[i]->op) & GR__OPF_RUNTIME) && gr__runtime_make(f->steps[i], level) != GR_OK) {
            gr__error(g, cg->status != GR_OK ? cg->status : GR_ERR_NOMEM, "gr_function: %s", cg->message);
            goto fail;
        }
    gr__rewriter_free(rw);
    GR_FREE(map); GR_FREE(roots); GR_FREE(cin); GR_FREE(cout); GR_FREE(cupd);
    return f;
fail:
    gr__rewriter_free(rw);
    GR_FREE(map); GR_FREE(roots); GR_FREE(cin); GR_FREE(cout); GR_FREE(cupd);
    if (f) gr_fn_free(f);
    else gr_graph_free(cg);
    return NULL;
}

GR_API const char *gr_fn_message(const gr_fn *f) { return f ? f->message : ""; }
GR_API size_t gr_fn_node_count(const gr_fn *f) { return f ? (size_t)f->n_steps : 0; }

/* ==== src/call.c: generated region; edit src/call.c, then run make gradient.h ==== */
/* src/call.c: gr_call: the shapes of a call, the memory plan, running the steps, the results.

   The plan gives every computed slot of a gr_fn (src/function.c) its memory: a view into another
   slot, an input's buffer taken over in place, or one of the function's buffers, reused once every
   slot living in it is dead. It is made at the first call and again only when some shape changes,
   so a steady-state call allocates nothing. */

/* ---- the memory plan ---------------------------------------------------------------------------- */

/* the slot whose memory s finally lives in */
static int32_t gr__slot_root(const gr_fn *f, int32_t s) {
    while (f->slots[s].view_of >= 0) s = f->slots[s].view_of;
    return s;
}

static size_t gr__slot_bytes(const gr__slot *s) {
    size_t b = (size_t)s->arr.size * gr__dsize(s->arr.dtype);
    return b ? b : 1;
}

/* The free buffers, grouped by capacity: one list (through plan_next) per capacity, the capacities
   sorted, so that the smallest free buffer that fits is a binary search away however many are free
   (a scan of one free list was quadratic in graphs that free many small buffers and then ask for a
   big one). Graphs have few distinct sizes: inserting a new one moves few entries. */

/* the first class with a capacity >= need (n when none) */
static int32_t gr__cap_find(const struct gr__cap_class *cls, int32_t n, size_t need) {
    int32_t lo = 0, hi = n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (cls[mid].cap < need) lo = mid + 1; else hi = mid;
    }
    return lo;
}
static void gr__cap_release(struct gr__cap_class *cls, int32_t *n, int32_t *next, size_t cap, int32_t b) {
    int32_t at = gr__cap_find(cls, *n, cap);
    if (at == *n || cls[at].cap != cap) {
        memmove(cls + at + 1, cls + at, sizeof(*cls) * (size_t)(*n - at));
        cls[at].cap = cap;
        cls[at].head = -1;
        (*n)++;
    }
    next[b] = cls[at].head;
    cls[at].head = b;
}
static int32_t gr__cap_take(struct gr__cap_class *cls, int32_t *n, const int32_t *next, int32_t at) {
    int32_t b = cls[at].head;
    cls[at].head = next[b];
    if (cls[at].head < 0) { memmove(cls + at, cls + at + 1, sizeof(*cls) * (size_t)(*n - at - 1)); (*n)--; }
    return b;
}

/* Whether step k may write its output into the buffer of its input q. The input must die here,
   own its buffer alone (no view of it lives on: refs 1) and match the output's size; and no other
   value the step reads may live in that buffer, or the writes would change what is still to be
   read. An elementwise op reads each input at the position it writes, so the same slot read twice
   (add(y, y)) is safe; an INPLACE0 op (ViewUpdate, TakeUpdate) writes input 0 at positions other
   than those it reads its other inputs at, so there every other input that is the same slot (the
   user's y = the view's base, also when compilation removed an identity between them), a view of
   it or a value it is a view of blocks the reuse. */
static int gr__fn_inplace_ok(const gr_fn *f, const gr_node *node, const int32_t *io, int q, int64_t k, const gr__slot *out) {
    const gr__slot *in = &f->slots[io[q]];
    int q2, same_pos = (gr__flags_of(node->op) & GR__OPF_ELEMWISE) != 0;
    if (in->last_use != k || in->buf < 0 || in->view_of >= 0 || f->plan_refs[in->buf] != 1 || in->arr.size != out->arr.size ||
        gr__dsize(in->arr.dtype) != gr__dsize(out->arr.dtype))
        return 0;
    for (q2 = 0; q2 < node->n_in; q2++)
        if (q2 != q && f->slots[gr__slot_root(f, io[q2])].buf == in->buf && !(same_pos && io[q2] == io[q])) return 0;
    return 1;
}

/* the planner's state: the free buffers by capacity (f->plan_cls, n_cls of them) and the buffers
   made so far; f->plan_refs counts the slots living in each buffer, f->plan_caps its capacity */
typedef struct gr__planner { int32_t n_cls, n_bufs; } gr__planner;

/* output j of step k: a view of input 0, in place over a dying input, or a free buffer that fits
   (the largest one grown, or a new one, when none does) */
static void gr__plan_output(gr_fn *f, gr__planner *pl, int64_t k, int j) {
    gr_node *node = f->steps[k];
    const int32_t *io = f->step_io + f->step_io_at[k];
    int32_t *refs = f->plan_refs, b = -1;
    size_t *caps = f->plan_caps;
    gr__slot *out = &f->slots[io[node->n_in + j]];
    size_t need = gr__slot_bytes(out);
    unsigned flags = gr__flags_of(node->op);
    int64_t off = -1;
    if (j == 0 && gr__alias_of(node->op) && node->n_in > 0)
        off = gr__alias_of(node->op)(node, f->io + f->step_io_at[k], &out->arr);
    if (off >= 0) {                                      /* a view of input 0 */
        int32_t r = gr__slot_root(f, io[0]);
        out->view_of = io[0];
        out->view_off = off;
        if (f->slots[r].buf >= 0) refs[f->slots[r].buf]++;
        return;
    }
    if (flags & (GR__OPF_ELEMWISE | GR__OPF_INPLACE0)) {   /* in place over an input read here last */
        int q, nq = (flags & GR__OPF_ELEMWISE) ? node->n_in : 1;
        for (q = 0; q < nq && b < 0; q++)
            if (gr__fn_inplace_ok(f, node, io, q, k, out)) { b = f->slots[io[q]].buf; refs[b]++; }
    }
    if (b < 0) {
        int32_t at = gr__cap_find(f->plan_cls, pl->n_cls, need);
        if (at < pl->n_cls) b = gr__cap_take(f->plan_cls, &pl->n_cls, f->plan_next, at);
        else if (pl->n_cls > 0) {                        /* grow the largest free buffer */
            b = gr__cap_take(f->plan_cls, &pl->n_cls, f->plan_next, pl->n_cls - 1);
            caps[b] = need;
        } else {                                         /* a new buffer: as big as what it already has */
            b = pl->n_bufs++;
            caps[b] = b < f->cap_bufs && f->bufs[b].cap > need ? f->bufs[b].cap : need;
        }
        refs[b] = 1;
    }
    out->buf = b;
}

/* after step k: what it read for the last time, and outputs nobody reads, return their buffers */
static void gr__plan_release(gr_fn *f, gr__planner *pl, int64_t k) {
    gr_node *node = f->steps[k];
    const int32_t *io = f->step_io + f->step_io_at[k];
    int j;
    for (j = 0; j < node->n_in + node->n_out; j++) {
        int32_t q = io[j], rb;
        gr__slot *sl = &f->slots[q];
        if (sl->kind != GR__SK_COMPUTED) continue;
        if (j < node->n_in ? sl->last_use != k : sl->last_use != -1) continue;
        if (f->plan_seen[q] == k) continue;              /* read twice by this step: released once */
        f->plan_seen[q] = k;
        rb = f->slots[gr__slot_root(f, q)].buf;
        if (rb >= 0 && --f->plan_refs[rb] == 0) gr__cap_release(f->plan_cls, &pl->n_cls, f->plan_next, f->plan_caps[rb], rb);
    }
}

/* the n_bufs buffers made real, an old allocation kept where it is big enough; 0 when out of memory */
static int gr__plan_buffers(gr_fn *f, int32_t n_bufs) {
    int64_t s;
    int32_t i;
    if (n_bufs > f->cap_bufs) {
        gr__buffer *nb = (gr__buffer *)GR_REALLOC(f->bufs, sizeof(gr__buffer) * (size_t)n_bufs);
        if (!nb) return 0;
        for (i = f->cap_bufs; i < n_bufs; i++) { nb[i].data = NULL; nb[i].cap = 0; }
        f->bufs = nb;
        f->cap_bufs = n_bufs;
    }
    for (i = 0; i < n_bufs; i++) {
        if (f->bufs[i].data && f->bufs[i].cap >= f->plan_caps[i]) continue;
        GR_FREE(f->bufs[i].data);
        f->bufs[i].data = GR_MALLOC(f->plan_caps[i] + 64);
        f->bufs[i].cap = f->bufs[i].data ? f->plan_caps[i] : 0;
        if (!f->bufs[i].data) return 0;
    }
    for (s = 0; s < f->n_slots; s++)
        if (f->slots[s].buf >= 0) f->slots[s].arr.data = f->bufs[f->slots[s].buf].data;
    return 1;
}

/* *b holds at least need bytes (its contents are not kept); 0 when out of memory */
static int gr__buffer_fit(gr__buffer *b, size_t need) {
    if (b->cap >= need) return 1;
    GR_FREE(b->data);
    b->data = GR_MALLOC(need);
    b->cap = b->data ? need : 0;
    return b->data != NULL;
}

/* the scratch array holds at least need bytes (kept from call to call); 0 when out of memory */
static int gr__scratch_fit(gr_fn *f, size_t need) {
    if (!gr__buffer_fit(&f->scratch_buf, need)) return 0;
    f->scratch.data = f->scratch_buf.data;
    f->scratch.dtype = GR_F64;
    f->scratch.ndim = 1;
    f->scratch.shape[0] = f->scratch.size = (int64_t)(f->scratch_buf.cap / sizeof(double));
    return 1;
}
/* the work memory step k needs, its shapes settled */
static size_t gr__step_scratch(const gr_fn *f, int64_t k) {
    const gr_node *node = f->steps[k];
    const gr_array *const *io = f->io + f->step_io_at[k];
    return gr__scratch_bytes(node, io, (const gr_array *const *)(io + node->n_in));
}

/* room for the outputs and update values that live in memory the function does not own (an input's,
   a shared variable's): outputs are copied out, and update values staged before any is written */
static int gr__plan_external(gr_fn *f) {
    int i;
    if (!f->out_copy && f->n_out && !(f->out_copy = (gr_array *)gr__calloc((size_t)f->n_out, sizeof(gr_array)))) return 0;
    if (!f->out_bufs && f->n_out && !(f->out_bufs = (gr__buffer *)gr__calloc((size_t)f->n_out, sizeof(gr__buffer)))) return 0;
    if (!f->stage && f->n_upd && !(f->stage = (gr__buffer *)gr__calloc((size_t)f->n_upd, sizeof(gr__buffer)))) return 0;
    for (i = 0; i < f->n_upd; i++) {
        f->upd_staged[i] = f->slots[gr__slot_root(f, f->upd_slot[i])].kind == GR__SK_SHARED;
        if (f->upd_staged[i] && !gr__buffer_fit(&f->stage[i], gr__slot_bytes(&f->slots[f->upd_slot[i]]))) return 0;
    }
    for (i = 0; i < f->n_out; i++)
        if (f->slots[gr__slot_root(f, f->out_slot[i])].external &&
            !gr__buffer_fit(&f->out_bufs[i], gr__slot_bytes(&f->slots[f->out_slot[i]])))
            return 0;
    return 1;
}

/* an empty plan: no buffer yet, every slot without one */
static void gr__plan_reset(gr_fn *f, gr__planner *pl) {
    int64_t s;
    pl->n_cls = 0;
    pl->n_bufs = 0;
    for (s = 0; s < f->n_slots; s++) {
        gr__slot *sl = &f->slots[s];
        sl->buf = -1;
        sl->view_of = -1;
        sl->view_off = 0;
        f->plan_seen[s] = -1;
    }
}

/* Assigns every computed slot a buffer, a view, or in-place reuse of a dying input, walking the
   schedule once: a buffer returns to the free buffers after the last read of every slot living in
   it, and a new slot takes the smallest free buffer that fits. */
static gr_status gr__fn_plan(gr_fn *f) {
    gr__planner pl;
    int64_t k;
    size_t need = 0;
    int j;
    f->planned = 0;
    gr__plan_reset(f, &pl);
    for (k = 0; k < f->n_steps; k++) {
        size_t w = gr__step_scratch(f, k);
        if (w > need) need = w;
        for (j = 0; j < f->steps[k]->n_out; j++) gr__plan_output(f, &pl, k, j);
        gr__plan_release(f, &pl, k);
    }
    if (!gr__plan_buffers(f, pl.n_bufs) || !gr__plan_external(f) || !gr__scratch_fit(f, need)) return GR_ERR_NOMEM;
    f->planned = 1;
    return GR_OK;
}

/* ---- calling ----------------------------------------------------------------------------------- */

/* moves an error recorded on the private graph (by an op's shape rule or perform) to f */
static gr_status gr__fn_take_error(gr_fn *f, gr_status st, const gr_node *node) {
    if (f->g->status != GR_OK) {
        st = f->g->status;
        size_t n = strlen(f->g->message);
        memcpy(f->message, "gr_call: ", 9);
        if (n > sizeof f->message - 10) n = sizeof f->message - 10;
        memcpy(f->message + 9, f->g->message, n);
        f->message[9 + n] = 0;
        gr_graph_clear_error(f->g);
    } else
        gr__fn_error(f, st, "gr_call: %s failed computing %s (%s)", gr__on(node->op).s, gr__d(gr__out(node)[0]).s, gr_status_string(st));
    return st;
}

/* checks a slot's shape against its static type and notes whether it changed since the plan */
static gr_status gr__fn_settle_shape(gr_fn *f, int64_t s, int *changed) {
    gr__slot *sl = &f->slots[s];
    int64_t *cache = f->shape_cache + f->shape_at[s];
    int64_t size = gr__shape_size(sl->arr.ndim, sl->arr.shape);
    int i;
    if (size < 0) return gr__fn_error(f, GR_ERR_SHAPE, "gr_call: %s would have the invalid shape %s", gr__d(sl->var).s, gr__as(&sl->arr).s);
    if ((uint64_t)size > (uint64_t)(SIZE_MAX - 128) / gr__dsize(sl->arr.dtype))   /* its bytes would not fit a size_t */
        return gr__fn_error(f, GR_ERR_SHAPE, "gr_call: %s would have the shape %s, too large for memory", gr__d(sl->var).s,
                            gr__as(&sl->arr).s);
    sl->arr.size = size;
    for (i = 0; i < sl->arr.ndim; i++)
        if (gr__vshape(sl->var)[i] >= 0 && gr__vshape(sl->var)[i] != sl->arr.shape[i])
            return gr__fn_error(f, GR_ERR_SHAPE, "gr_call: %s has shape %s, but its static shape is %s", gr__d(sl->var).s,
                                gr__as(&sl->arr).s, gr__vs(sl->var).s);
    if (cache[0] != size) { cache[0] = size; *changed = 1; }
    for (i = 0; i < sl->arr.ndim; i++)
        if (cache[i + 1] != sl->arr.shape[i]) { cache[i + 1] = sl->arr.shape[i]; *changed = 1; }
    if (*changed) f->planned = 0;        /* a call failing before the plan must not keep the old one */
    return GR_OK;
}

/* binds the caller's arrays to the input slots, after checking them against the function's types */
static gr_status gr__call_bind(gr_fn *f, const gr_array *const *inputs) {
    int i, d;
    for (i = 0; i < f->n_in; i++) {
        const gr_array *a = inputs[i];
        gr__slot *sl = &f->slots[f->in_slot[i]];
        if (!a) return gr__fn_error(f, GR_ERR_VALUE, "gr_call: input %d (%s) is NULL", i, gr__d(sl->var).s);
        if (!gr__array_valid(a)) return gr__fn_error(f, GR_ERR_VALUE, "gr_call: input %d (%s) is a malformed array", i, gr__d(sl->var).s);
        if (a->dtype != sl->arr.dtype || a->ndim != sl->arr.ndim)
            return gr__fn_error(f, GR_ERR_TYPE, "gr_call: input %d (%s) must be %s with %d dimensions, not %s with %d", i,
                                gr__d(sl->var).s, gr_dtype_name(sl->arr.dtype), sl->arr.ndim, gr_dtype_name(a->dtype), a->ndim);
        for (d = 0; d < a->ndim; d++)
            if (gr__vshape(sl->var)[d] >= 0 && gr__vshape(sl->var)[d] != a->shape[d])
                return gr__fn_error(f, GR_ERR_SHAPE, "gr_call: input %d (%s) has shape %s, but the function takes %s", i,
                                    gr__d(sl->var).s, gr__as(a).s, gr__vs(sl->var).s);
        for (d = 0; d < a->ndim; d++) sl->arr.shape[d] = a->shape[d];
        sl->arr.size = a->size;
        sl->arr.data = a->data;
    }
    return GR_OK;
}

/* the leaves' shapes for this call (shared variables bound to their storage); *changed when some
   shape differs from the plan's */
static gr_status gr__call_leaf_shapes(gr_fn *f, int *changed) {
    int64_t s;
    int d;
    gr_status st;
    for (s = 0; s < f->n_slots; s++) {
        gr__slot *sl = &f->slots[s];
        if (sl->kind == GR__SK_SHARED) {
            const gr_array *v = ((const gr__storage *)gr__ext(sl->var))->value;
            for (d = 0; d < v->ndim; d++)
                if (gr__vshape(sl->var)[d] >= 0 && gr__vshape(sl->var)[d] != v->shape[d])
                    return gr__fn_error(f, GR_ERR_SHAPE, "gr_call: shared variable %s now has shape %s; the function was built for %s",
                                        gr__d(sl->var).s, gr__as(v).s, gr__vs(sl->var).s);
            for (d = 0; d < v->ndim; d++) sl->arr.shape[d] = v->shape[d];
            sl->arr.size = v->size;
            sl->arr.data = v->data;
        }
        if (sl->kind != GR__SK_COMPUTED && (st = gr__fn_settle_shape(f, s, changed)) != GR_OK) return st;
    }
    return GR_OK;
}
/* every slot's shape for this call: the leaves', then each step's outputs by its shape rule */
static gr_status gr__call_shapes(gr_fn *f, int *changed) {
    int64_t k;
    int i, d;
    gr_status st = gr__call_leaf_shapes(f, changed);
    if (st != GR_OK) return st;
    for (k = 0; k < f->n_steps; k++) {
        gr_node *node = f->steps[k];
        const gr_array *const *in = f->io + f->step_io_at[k];
        gr_array *const *out = (gr_array *const *)(f->io + f->step_io_at[k] + node->n_in);
        st = node->op->shape ? node->op->shape(node, in, out) : gr__like0_shape(node, in, out);
        if (st != GR_OK || f->g->status != GR_OK) return gr__fn_take_error(f, st != GR_OK ? st : f->g->status, node);
        for (i = 0; i < node->n_out; i++)
            if ((st = gr__fn_settle_shape(f, f->step_io[f->step_io_at[k] + node->n_in + i], changed)) != GR_OK) return st;
    }
    for (i = 0; i < f->n_upd; i++) {    /* an update keeps the shape of its shared variable (whose static shape the graph knows) */
        const gr__slot *sl = &f->slots[f->upd_slot[i]];
        const gr_array *cur = f->upd_store[i]->value;
        for (d = 0; d < cur->ndim; d++)
            if (sl->arr.shape[d] != cur->shape[d])
                return gr__fn_error(f, GR_ERR_SHAPE, "gr_call: the update of shared variable %s has shape %s; the variable has shape %s",
                                    gr__d(f->upd_var[i]).s, gr__as(&sl->arr).s, gr__as(cur).s);
    }
    return GR_OK;
}

/* runs the steps in order; a view is pointed at its base's memory, and computes nothing */
static gr_status gr__call_run(gr_fn *f) {
    int64_t k;
    gr_status st;
    for (k = 0; k < f->n_steps; k++) {
        gr_node *node = f->steps[k];
        const int32_t *io = f->step_io + f->step_io_at[k];
        int j;
        for (j = 0; j < node->n_out; j++) {
            gr__slot *o = &f->slots[io[node->n_in + j]];
            if (o->view_of >= 0) o->arr.data = (char *)f->slots[o->view_of].arr.data + o->view_off;
        }
        if (f->slots[io[node->n_in]].view_of >= 0 && node->n_out == 1) continue;
        st = node->op->perform(node, f->io + f->step_io_at[k], (gr_array *const *)(f->io + f->step_io_at[k] + node->n_in));
        if (st != GR_OK || f->g->status != GR_OK) return gr__fn_take_error(f, st != GR_OK ? st : f->g->status, node);
    }
    return GR_OK;
}

/* the outputs (the function's own memory, or a copy of memory it does not own), then the updates:
   values that live in a shared storage are copied first, so that their order does not matter */
static gr_status gr__call_results(gr_fn *f, const gr_array **outputs) {
    int i;
    for (i = 0; i < f->n_out; i++) {
        gr__slot *sl = &f->slots[f->out_slot[i]];
        if (f->slots[gr__slot_root(f, f->out_slot[i])].external) {
            gr_array *c = &f->out_copy[i];
            *c = sl->arr;
            c->data = f->out_bufs[i].data;
            if (sl->arr.size) memcpy(c->data, sl->arr.data, (size_t)sl->arr.size * gr__dsize(sl->arr.dtype));
            outputs[i] = c;
        } else outputs[i] = &sl->arr;
    }
    for (i = 0; i < f->n_upd; i++) {
        gr__slot *sl = &f->slots[f->upd_slot[i]];
        if (f->upd_staged[i] && sl->arr.size)
            memcpy(f->stage[i].data, sl->arr.data, (size_t)sl->arr.size * gr__dsize(sl->arr.dtype));
    }
    for (i = 0; i < f->n_upd; i++) {
        gr__slot *sl = &f->slots[f->upd_slot[i]];
        gr_array v = sl->arr;
        if (f->upd_staged[i]) v.data = f->stage[i].data;
        if (gr__storage_assign(f->upd_store[i], &v) != GR_OK)
            return gr__fn_error(f, GR_ERR_NOMEM, "gr_call: out of memory updating a shared variable");
    }
    return GR_OK;
}

/* whether region r of f's conditionals is on in this call: its parent is on and its condition (computed
   by now: the schedule puts it first) chose its side; decided once per call, top down */
static int gr__region_on(gr_fn *f, int32_t r) {
    while (f->reg_on[r] < 0) {
        int32_t p = r;
        while (f->reg_on[f->regs[p].parent] < 0) p = f->regs[p].parent;
        if (!f->reg_on[f->regs[p].parent]) f->reg_on[p] = 0;
        else {
            const gr_array *c = &f->slots[f->regs[p].cond_slot].arr;
            f->reg_on[p] = (int8_t)((gr__load(c->dtype, c->data, 0) != 0) == (f->regs[p].side != 0));
        }
    }
    return f->reg_on[r];
}

/* The plan and the run together, step by step, for a function with a step whose outputs' shapes
   are known only once it has run (GR__OPF_DYNSHAPE: a loop's rows) or with conditionals (a step of a
   side not taken neither runs nor takes memory, so the plan holds per side): each step's shapes, then its
   outputs' memory (the same walk as gr__fn_plan, a buffer made real when it is taken and too
   small: it is free then, so nothing live moves), then the step. The walk is made at every call;
   while the shapes stay the same it takes the same decisions, so a steady-state call allocates
   nothing. A DYNSHAPE step's outputs are memory of its own (external slots). */
static gr_status gr__call_dynamic(gr_fn *f) {
    gr__planner pl;
    int64_t k;
    int changed = 0, i, j;
    gr_status st;
    gr__plan_reset(f, &pl);
    for (i = 0; i < f->n_regs; i++) f->reg_on[i] = (int8_t)(i == 0 ? 1 : -1);
    if (f->cap_bufs < (int32_t)f->n_slots + 1) {          /* room for every buffer the walk can make */
        gr__buffer *nb = (gr__buffer *)GR_REALLOC(f->bufs, sizeof(gr__buffer) * (size_t)(f->n_slots + 1));
        if (!nb) return gr__fn_error(f, GR_ERR_NOMEM, "gr_call: out of memory for the buffers");
        for (i = f->cap_bufs; i < (int32_t)f->n_slots + 1; i++) { nb[i].data = NULL; nb[i].cap = 0; }
        f->bufs = nb;
        f->cap_bufs = (int32_t)f->n_slots + 1;
    }
    for (k = 0; k < f->n_steps; k++) {
        gr_node *node = f->steps[k];
        const int32_t *io = f->step_io + f->step_io_at[k];
        const gr_array *const *in = f->io + f->step_io_at[k];
        gr_array *const *out = (gr_array *const *)(f->io + f->step_io_at[k] + node->n_in);
        int dyn = (gr__flags_of(node->op) & GR__OPF_DYNSHAPE) != 0;
        if (f->step_reg && !gr__region_on(f, f->step_reg[k])) {   /* a side of a conditional not taken */
            gr__plan_release(f, &pl, k);
            continue;
        }
        if (!dyn) {
            st = node->op->shape ? node->op->shape(node, in, out) : gr__like0_shape(node, in, out);
            if (st != GR_OK || f->g->status != GR_OK) return gr__fn_take_error(f, st != GR_OK ? st : f->g->status, node);
            for (j = 0; j < node->n_out; j++)
                if ((st = gr__fn_settle_shape(f, io[node->n_in + j], &changed)) != GR_OK) return st;
            for (j = 0; j < node->n_out; j++) {
                gr__slot *o = &f->slots[io[node->n_in + j]];
                gr__plan_output(f, &pl, k, j);
                if (o->buf >= 0) {
                    gr__buffer *b = &f->bufs[o->buf];
                    if (b->cap < f->plan_caps[o->buf]) {
                        GR_FREE(b->data);
                        b->data = GR_MALLOC(f->plan_caps[o->buf] + 64);
                        b->cap = b->data ? f->plan_caps[o->buf] : 0;
                        if (!b->data) return gr__fn_error(f, GR_ERR_NOMEM, "gr_call: out of memory for the buffers");
                    }
                    o->arr.data = b->data;
                } else if (o->view_of >= 0)
                    o->arr.data = (char *)f->slots[o->view_of].arr.data + o->view_off;
            }
        }
        if (dyn || !(f->slots[io[node->n_in]].view_of >= 0 && node->n_out == 1)) {
            if (!gr__scratch_fit(f, gr__step_scratch(f, k))) return gr__fn_error(f, GR_ERR_NOMEM, "gr_call: out of memory for the buffers");
            st = node->op->perform(node, in, out);
            if (st != GR_OK || f->g->status != GR_OK) return gr__fn_take_error(f, st != GR_OK ? st : f->g->status, node);
        }
        if (dyn)
            for (j = 0; j < node->n_out; j++)
                if ((st = gr__fn_settle_shape(f, io[node->n_in + j], &changed)) != GR_OK) return st;
        gr__plan_release(f, &pl, k);
    }
    for (i = 0; i < f->n_upd; i++) {
        const gr__slot *sl = &f->slots[f->upd_slot[i]];
        const gr_array *cur = f->upd_store[i]->value;
        int d;
        for (d = 0; d < cur->ndim; d++)
            if (sl->arr.shape[d] != cur->shape[d])
                return gr__fn_error(f, GR_ERR_SHAPE, "gr_call: the update of shared variable %s has shape %s; the variable has shape %s",
                                    gr__d(f->upd_var[i]).s, gr__as(&sl->arr).s, gr__as(cur).s);
    }
    if (!gr__plan_external(f)) return gr__fn_error(f, GR_ERR_NOMEM, "gr_call: out of memory for the buffers");
    return GR_OK;
}

/* the shapes f's outputs would have for these inputs, from the shape rules alone: nothing runs
   (an op made of a graph asks its inner function: ops/graphop.c) */
static GR__UNUSED gr_status gr__fn_out_shapes(gr_fn *f, const gr_array *const *inputs, gr_array *const *out) {
    int changed = 0, i, d;
    gr_status st;
    if (f->dynamic) return gr__fn_error(f, GR_ERR_VALUE, "gr_call: its shapes are known only by running it");
    for (i = 0; i < f->n_in; i++) {              /* the inputs' shapes (their data may not exist yet) */
        const gr_array *a = inputs[i];
        gr__slot *sl = &f->slots[f->in_slot[i]];
        if (a->dtype != sl->arr.dtype || a->ndim != sl->arr.ndim)
            return gr__fn_error(f, GR_ERR_TYPE, "gr_call: input %d (%s) must be %s with %d dimensions, not %s with %d", i,
                                gr__d(sl->var).s, gr_dtype_name(sl->arr.dtype), sl->arr.ndim, gr_dtype_name(a->dtype), a->ndim);
        for (d = 0; d < a->ndim; d++) sl->arr.shape[d] = a->shape[d];
        sl->arr.size = a->size;
        if ((st = gr__fn_settle_shape(f, f->in_slot[i], &changed)) != GR_OK) return st;
    }
    if ((st = gr__call_shapes(f, &changed)) != GR_OK) return st;
    for (i = 0; i < f->n_out; i++) {
        const gr__slot *sl = &f->slots[f->out_slot[i]];
        for (d = 0; d < sl->arr.ndim; d++) out[i]->shape[d] = sl->arr.shape[d];
        out[i]->size = sl->arr.size;
    }
    return GR_OK;
}

GR_API gr_status gr_call(gr_fn *f, const gr_array *const *inputs, const gr_array **outputs) {
    int i, changed;
    gr_status st;
    if (!f) return GR_ERR_VALUE;
    changed = !f->planned;
    f->message[0] = 0;
    for (i = 0; outputs && i < f->n_out; i++) outputs[i] = NULL;     /* stays so when the call fails */
    if (f->n_in > 0 && !inputs) return gr__fn_error(f, GR_ERR_VALUE, "gr_call: inputs is NULL but the function takes %d", f->n_in);
    if (f->n_out > 0 && !outputs) return gr__fn_error(f, GR_ERR_VALUE, "gr_call: outputs is NULL but the function gives %d", f->n_out);
    if ((st = gr__call_bind(f, inputs)) != GR_OK) return st;
    if (f->dynamic) {
        if ((st = gr__call_leaf_shapes(f, &changed)) != GR_OK || (st = gr__call_dynamic(f)) != GR_OK) return st;
        return gr__call_results(f, outputs);
    }
    if ((st = gr__call_shapes(f, &changed)) != GR_OK) return st;
    if (changed && gr__fn_plan(f) != GR_OK) return gr__fn_error(f, GR_ERR_NOMEM, "gr_call: out of memory for the buffers");
    if ((st = gr__call_run(f)) != GR_OK) return st;
    return gr__call_results(f, outputs);
}

/* ==== src/numeric.c: generated region; edit src/numeric.c, then run make gradient.h ==== */
/* src/numeric.c: finite differences and gr_verify_grad, as Aesara's numeric_grad and verify_grad.

   One-sided differences g_k = (f(x + eps e_k) - f(x)) / eps, eps 1e-7 for F64 and 3e-4 for F32
   (the largest among the inputs); errors abs = |a - b|, rel = abs / max(|a| + |b|, 1e-8); a
   gradient fails only where both exceed their tolerance (1e-4 for F64, 1e-2 for F32). */

struct gr_numeric_grad {
    int n;
    gr_array **gf;               /* the numeric gradient of each argument, F64 */
    double tol;                  /* the default tolerance of the least precise argument */
};

static double gr__type_eps(int dt) { return dt == GR_F32 ? 3e-4 : 1e-7; }
static double gr__type_tol(int dt) { return dt == GR_F32 ? 1e-2 : 1e-4; }

GR_API void gr_numeric_grad_free(gr_numeric_grad *ng) {
    int i;
    if (!ng) return;
    for (i = 0; i < ng->n; i++) gr_array_free(ng->gf[i]);
    GR_FREE(ng->gf);
    GR_FREE(ng);
}

/* the scalar f(pt) as a double; NaN if the call fails */
static double gr__eval_scalar(gr_fn *f, const gr_array *const *pt, gr_status *st) {
    const gr_array *out[1];
    *st = gr_call(f, pt, out);
    if (*st != GR_OK) return NAN;
    return gr_array_get(out[0], 0);
}

/* gr_numeric_grad_new, with the status of a failure in *status (the message goes to f) */
static gr_numeric_grad *gr__numeric_grad_new(gr_fn *f, int n, const gr_array *const *pt, double eps, gr_status *status) {
    gr_numeric_grad *ng = NULL;
    gr_array **work = NULL;
    double f0, max_eps = 0, tol = 0;
    int i;
    gr_status st;
    *status = GR_ERR_VALUE;
    if (!f) return NULL;
    if (n != f->n_in || n < 1 || !pt || f->n_out != 1 || f->slots[f->out_slot[0]].arr.ndim != 0) {
        gr__fn_error(f, GR_ERR_VALUE, "gr_numeric_grad_new: needs a function of the %d given points with one 0-d output", n);
        return NULL;
    }
    for (i = 0; i < n; i++) {
        if (!pt[i] || !gr__array_valid(pt[i])) { gr__fn_error(f, GR_ERR_VALUE, "gr_numeric_grad_new: point %d is NULL or malformed", i); return NULL; }
        if (!gr__is_float(pt[i]->dtype)) {
            *status = gr__fn_error(f, GR_ERR_TYPE, "gr_numeric_grad_new: point %d is %s; finite differences need float points", i,
                                   gr_dtype_name(pt[i]->dtype));
            return NULL;
        }
        if (gr__type_eps(pt[i]->dtype) > max_eps) max_eps = gr__type_eps(pt[i]->dtype);
        if (gr__type_tol(pt[i]->dtype) > tol) tol = gr__type_tol(pt[i]->dtype);
    }
    if (eps == 0) eps = max_eps;
    ng = (gr_numeric_grad *)gr__calloc(1, sizeof *ng);
    work = (gr_array **)gr__calloc((size_t)n, sizeof(gr_array *));
    if (!ng || !work) goto nomem;
    ng->gf = (gr_array **)gr__calloc((size_t)n, sizeof(gr_array *));
    if (!ng->gf) goto nomem;
    ng->n = n;
    ng->tol = tol;
    for (i = 0; i < n; i++) {
        work[i] = gr_array_copy(pt[i]);
        ng->gf[i] = gr_array_new(GR_F64, pt[i]->ndim, pt[i]->shape);
        if (!work[i] || !ng->gf[i]) goto nomem;
    }
    f0 = gr__eval_scalar(f, (const gr_array *const *)work, &st);
    if (st != GR_OK) goto fail;
    for (i = 0; i < n; i++) {
        int64_t k;
        for (k = 0; k < work[i]->size; k++) {
            double x = gr_array_get(work[i], k), fk;
            gr_array_set(work[i], k, x + eps);
            fk = gr__eval_scalar(f, (const gr_array *const *)work, &st);
            gr_array_set(work[i], k, x);
            if (st != GR_OK) goto fail;
            ((double *)ng->gf[i]->data)[k] = (fk - f0) / eps;
        }
    }
    for (i = 0; i < n; i++) gr_array_free(work[i]);
    GR_FREE(work);
    *status = GR_OK;
    return ng;
nomem:
    st = gr__fn_error(f, GR_ERR_NOMEM, "gr_numeric_grad_new: out of memory");
fail:                                            /* st: the failure (a failed call of f: its status) */
    *status = st;
    for (i = 0; work && i < n; i++) gr_array_free(work[i]);
    GR_FREE(work);
    gr_numeric_grad_free(ng);
    return NULL;
}

GR_API gr_numeric_grad *gr_numeric_grad_new(gr_fn *f, int n, const gr_array *const *pt, double eps) {
    gr_status st;
    return gr__numeric_grad_new(f, n, pt, eps, &st);
}

GR_API const gr_array *gr_numeric_grad_get(const gr_numeric_grad *ng, int i) {
    return ng && i >= 0 && i < ng->n ? ng->gf[i] : NULL;
}

GR_API void gr_abs_rel_err(double a, double b, double *abs_err, double *rel_err) {
    double ae = fabs(a - b), denom = fabs(a) + fabs(b);
    if (denom < 1e-8) denom = 1e-8;
    if (abs_err) *abs_err = ae;
    if (rel_err) *rel_err = ae / denom;
}

static void gr__where_fill(gr_gradient_error *w, int arg, int64_t pos, const gr_array *shape_of, double v1, double v2,
                           double ae, double re, double at, double rt) {
    int d;
    if (!w) return;
    memset(w, 0, sizeof *w);
    w->arg = arg;
    w->err_pos = pos;
    w->ndim = shape_of ? shape_of->ndim : 0;
    for (d = 0; shape_of && d < shape_of->ndim; d++) w->shape[d] = shape_of->shape[d];
    w->val1 = v1; w->val2 = v2;
    w->abs_err = ae; w->rel_err = re;
    w->abs_tol = at; w->rel_tol = rt;
}

GR_API double gr_numeric_grad_max_err(const gr_numeric_grad *ng, const gr_array *const *g_pt, double abs_tol, double rel_tol,
                                      gr_gradient_error *where) {
    double best = -1;
    int i, d;
    if (!ng || !g_pt) { gr__where_fill(where, -1, -1, NULL, NAN, NAN, NAN, NAN, abs_tol, rel_tol); return INFINITY; }
    if (abs_tol == 0) abs_tol = ng->tol;
    if (rel_tol == 0) rel_tol = ng->tol;
    for (i = 0; i < ng->n; i++) {
        const gr_array *a = g_pt[i], *num = ng->gf[i];
        int64_t k;
        int same = a && a->ndim == num->ndim && a->size == num->size;
        for (d = 0; same && d < a->ndim; d++) if (a->shape[d] != num->shape[d]) same = 0;
        if (!same) {                                   /* the argument has the wrong shape */
            gr__where_fill(where, i, -1, num, NAN, NAN, INFINITY, INFINITY, abs_tol, rel_tol);
            return INFINITY;
        }
        for (k = 0; k < a->size; k++) {
            double v1 = gr_array_get(a, k), v2 = ((const double *)num->data)[k], ae, re, scaled;
            gr_abs_rel_err(v1, v2, &ae, &re);
            if (!isfinite(ae) || !isfinite(re)) {
                gr__where_fill(where, i, k, num, v1, v2, ae, re, abs_tol, rel_tol);
                return INFINITY;
            }
            scaled = ae / abs_tol < re / rel_tol ? ae / abs_tol : re / rel_tol;
            if (scaled > best) {
                best = scaled;
                gr__where_fill(where, i, k, num, v1, v2, ae, re, abs_tol, rel_tol);
            }
        }
    }
    if (best < 0) { gr__where_fill(where, -1, -1, NULL, 0, 0, 0, 0, abs_tol, rel_tol); best = 0; }
    return best;
}

GR_API int gr_gradient_error_format(const gr_gradient_error *e, char *buf, size_t size) {
    char shape[200];
    if (!e || !buf || !size) return 0;
    gr__shape_str(shape, sizeof shape, e->ndim, e->shape);
    return snprintf(buf, size,
                    "GradientError: numeric gradient and analytic gradient exceed tolerance:\n"
                    "        At position %lld of argument %d with shape %s,\n"
                    "            val1 = %f      ,  val2 = %f\n"
                    "            abs. error = %f,  abs. tolerance = %f\n"
                    "            rel. error = %f,  rel. tolerance = %f",
                    (long long)e->err_pos, e->arg, shape, e->val1, e->val2, e->abs_err, e->abs_tol, e->rel_err, e->rel_tol);
}

/* ---- gr_verify_grad --------------------------------------------------------------------------- */

static uint64_t gr__splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static double gr__uniform(uint64_t *state) { return (double)(gr__splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);   /* 2^-53 */ }

/* u drawn uniform in [0.5, 1.5) */
static void gr__projection(gr_array *u, uint64_t *rng) {
    int64_t k;
    for (k = 0; k < u->size; k++) gr_array_set(u, k, gr__uniform(rng) + 0.5);
}

GR_API gr_status gr_verify_grad(gr_builder fun, void *user, int n, const gr_array *const *pt, const gr_verify_opts *opts,
                                gr_gradient_error *err) {
    gr_verify_opts o;
    gr_graph *g = NULL;
    gr_var **inputs = NULL, **grads = NULL, *out, *u_var, *cost;
    gr_fn *out_fn = NULL, *cost_fn = NULL, *grad_fn = NULL;
    gr_array *u = NULL;
    const gr_array **gvals = NULL;
    gr_numeric_grad *ng = NULL;
    gr_grad_opts go;
    uint64_t rng;
    double tol = 0;
    int i, t, n_tests;
    gr_status st = GR_OK;
    if (err) memset(err, 0, sizeof *err);
    if (!fun || n < 1 || !pt) return GR_ERR_VALUE;
    for (i = 0; i < n; i++) {
        if (!pt[i] || !gr__array_valid(pt[i])) return GR_ERR_VALUE;
        if (!gr__is_float(pt[i]->dtype)) return GR_ERR_TYPE;
        if (gr__type_tol(pt[i]->dtype) > tol) tol = gr__type_tol(pt[i]->dtype);
    }
    if (opts) o = *opts; else memset(&o, 0, sizeof o);
    n_tests = o.n_tests > 0 ? o.n_tests : 2;
    if (o.abs_tol == 0) o.abs_tol = tol;
    if (o.rel_tol == 0) o.rel_tol = tol;
    rng = o.seed ? o.seed : 666u;
    g = gr_graph_new();
    inputs = (gr_var **)gr__calloc((size_t)n, sizeof(gr_var *));
    grads = (gr_var **)gr__calloc((size_t)n, sizeof(gr_var *));
    gvals = (const gr_array **)gr__calloc((size_t)n, sizeof(gr_array *));
    if (!g || !inputs || !grads || !gvals) { st = GR_ERR_NOMEM; goto done; }
    for (i = 0; i < n; i++) {
        int64_t shape[GR_MAX_NDIM];
        char name[32];
        int d;
        for (d = 0; d < pt[i]->ndim; d++) shape[d] = pt[i]->shape[d] == 1 ? 1 : -1;
        snprintf(name, sizeof name, "input %d", i);
        inputs[i] = gr_tensor(g, pt[i]->dtype, pt[i]->ndim, shape, name);
    }
    /* the builder gets every input; making them fails only out of memory (not logged: before the builder's log) */
    if (g->status != GR_OK) { st = g->status; goto done; }
    out = fun(g, inputs, user);
    if (!out || g->status != GR_OK) { st = g->status != GR_OK ? g->status : GR_ERR_VALUE; goto report; }
    if (out->kind != GR__VK_OUT && out->kind != GR__VK_INPUT && out->kind != GR__VK_CONST && out->kind != GR__VK_SHARED) {
        st = gr__error(g, GR_ERR_TYPE, "the builder returned a gradient marker");
        goto report;
    }
    /* the output's shape, for the projection */
    out_fn = gr_function(n, inputs, 1, &out, NULL);
    if (!out_fn) { st = g->status; goto report; }
    {
        const gr_array *ov[1];
        int use32 = o.cast_to_output_type && out->dtype == GR_F32;
        if ((st = gr_call(out_fn, pt, ov)) != GR_OK) { gr__error(g, st, "%s", out_fn->message); goto report; }
        u = gr_array_new(use32 ? GR_F32 : GR_F64, ov[0]->ndim, ov[0]->shape);
        if (!u) { st = GR_ERR_NOMEM; goto done; }
    }
    gr__projection(u, &rng);
    u_var = gr_shared(g, u, "random projection");
    cost = gr_sum(gr_mul(u_var, out));
    memset(&go, 0, sizeof go);
    go.disconnected_inputs = GR_IGNORE;
    if (!cost || (st = gr_grad(cost, n, inputs, grads, &go)) != GR_OK) { st = g->status != GR_OK ? g->status : st; goto report; }
    cost_fn = gr_function(n, inputs, 1, &cost, NULL);
    grad_fn = cost_fn ? gr_function(n, inputs, n, grads, NULL) : NULL;
    if (!cost_fn || !grad_fn) { st = g->status; goto report; }
    for (t = 0; t < n_tests; t++) {
        gr_gradient_error where;
        double max_err;
        if (t > 0) {                                  /* a new projection between tests */
            gr__projection(u, &rng);
            if ((st = gr_shared_set(u_var, u)) != GR_OK) goto report;
        }
        ng = gr__numeric_grad_new(cost_fn, n, pt, o.eps, &st);
        if (!ng) { gr__error(g, st, "%s", cost_fn->message); goto report; }   /* out of memory, or the call's failure */
        if ((st = gr_call(grad_fn, pt, gvals)) != GR_OK) { gr__error(g, st, "%s", grad_fn->message); goto report; }
        max_err = gr_numeric_grad_max_err(ng, gvals, o.abs_tol, o.rel_tol, &where);
        gr_numeric_grad_free(ng);
        ng = NULL;
        if (max_err > 1) {
            if (err) *err = where;
            st = GR_ERR_GRADIENT;
            goto done;
        }
    }
    goto done;
report:
    if (g && g->status != GR_OK) gr__log(g, "gr_verify_grad: %s", g->message);
    if (st == GR_OK) st = GR_ERR_VALUE;
done:
    gr_numeric_grad_free(ng);
    gr_fn_free(out_fn); gr_fn_free(cost_fn); gr_fn_free(grad_fn);
    gr_array_free(u);
    GR_FREE(inputs); GR_FREE(grads); GR_FREE((void *)gvals);
    gr_graph_free(g);
    return st;
}

/* ==== src/print.c: generated region; edit src/print.c, then run make gradient.h ==== */
/* src/print.c: printing graphs and compiled functions.

   gr_print and gr_fn_print list one node a line; gr_debugprint draws the tree under each variable
   (Aesara's debugprint); gr_pp writes one infix expression (Aesara's pp); gr_print_dot and
   gr_fn_print_dot write Graphviz DOT. Every printer walks with explicit stacks (a chain of a
   million nodes prints). An op made of graphs (a loop) prints its inner graphs through its
   graphop's print hook, which calls gr__print_inner once per inner graph: the hook names the
   graph and its inputs and outputs, the printer in use draws it in its own style, indented under
   the node (or as a cluster in DOT). Inner graphs nest up to GR__PR_NEST levels deep. */
#ifndef GR_NO_STDIO


#define GR__PR_NEST 8                /* inner graphs inside inner graphs: deeper ones show their name only */
#define GR__PR_VALUES 6              /* values of a constant shown */

enum { GR__PM_LIST, GR__PM_TREE, GR__PM_DOT };

struct gr__printer {
    FILE *out;
    int mode;                        /* GR__PM_* */
    int depth;                       /* inner-graph nesting */
    const char *prefix;              /* list and tree: what each line of this graph starts with */
    const gr_node *node;             /* the node whose inner graphs print (its hook is running) */
    int gid, cur;                    /* DOT: graphs numbered so far, and this graph's number */
};

/* ---- small pieces: values, variables, op names ------------------------------------------------- */

static double gr__pr_value(const gr_var *v, int64_t k) { return gr_array_get((const gr_array *)gr__ext(v), k); }

/* a constant's values: "2" for a 0-d one, "[1, 2, 3]" (flat, the first GR__PR_VALUES) otherwise */
static void gr__pr_values(FILE *out, const gr_var *v) {
    const gr_array *a = (const gr_array *)gr__ext(v);
    int64_t k;
    if (v->ndim == 0) { fprintf(out, "%g", gr__pr_value(v, 0)); return; }
    fprintf(out, "[");
    for (k = 0; k < a->size && k < GR__PR_VALUES; k++) fprintf(out, "%s%g", k ? ", " : "", gr__pr_value(v, k));
    fprintf(out, "%s]", a->size > GR__PR_VALUES ? ", ..." : "");
}

/* a variable as an operand: its name, a 0-d constant's value, or #id */
static void gr__print_var(FILE *out, const gr_var *v) {
    if (gr__vname(v)) fprintf(out, "%s", gr__vname(v));
    else if (v->kind == GR__VK_CONST && v->ndim == 0) gr__pr_values(out, v);
    else fprintf(out, "#%lu", (unsigned long)v->id);
}

/* op's printed name (gr__on: CamelCase; a user's op's name whole), in *tmp when made */
static const char *gr__pr_name(const gr_op_def *op, gr__oname *tmp) {
    if (!(gr__flags_of(op) & GR__OPF_ELEMWISE)) return op->name;
    *tmp = gr__on(op);
    return tmp->s;
}

/* the op of node: its name, the op it wraps (Batched[ReduceLike]), a graph op's name in quotes */
static void gr__pr_opname(FILE *out, const gr_node *node) {
    gr__oname t;
    fprintf(out, "%s", gr__pr_name(node->op, &t));
    if (gr__flags_of(node->op) & GR__OPF_INNERCONN) fprintf(out, "[%s]", gr__pr_name(gr__conn_node(node)->op, &t));
    if (gr__flags_of(node->op) & GR__OPF_CONVERT) fprintf(out, "{%s}", gr_dtype_name((gr_dtype)gr__out(node)[0]->dtype));
}

static const char *gr__pr_shape(char *buf, size_t size, const gr_var *v) { return gr__shape_str(buf, size, v->ndim, gr__vshape(v)); }

/* the constants among the inputs of nodes[0..n) that print as #id (not 0-d, unnamed), once each,
   with their values: "constants: #5 float64 (3) = [1, 2, 3]" */
static void gr__pr_constants(FILE *out, const char *prefix, int64_t n, gr_node *const *nodes) {
    int64_t k, k2;
    int i, i2, first = 1;
    for (k = 0; k < n; k++)
        for (i = 0; i < nodes[k]->n_in; i++) {
            const gr_var *c = gr__in(nodes[k])[i];
            int dup = 0;
            char buf[200];
            if (c->kind != GR__VK_CONST || c->ndim == 0 || gr__vname(c)) continue;
            for (k2 = 0; k2 <= k && !dup; k2++)           /* printed already (an earlier reader)? */
                for (i2 = 0; i2 < (k2 < k ? nodes[k2]->n_in : i); i2++)
                    if (gr__in(nodes[k2])[i2] == c) { dup = 1; break; }
            if (dup) continue;
            fprintf(out, "%s%s", first ? prefix : "", first ? "constants:\n" : "");
            first = 0;
            fprintf(out, "%s  #%lu = ", prefix, (unsigned long)c->id);
            gr__pr_values(out, c);
            fprintf(out, " :%s%s\n", gr_dtype_name((gr_dtype)c->dtype), gr__pr_shape(buf, sizeof buf, c));
        }
}

/* a string built in pieces (gr_pp, the inner prefixes); stops growing at cap, ending in "..." */
typedef struct gr__sb { char *s; size_t n, cap, max; int full; } gr__sb;
static void gr__sb_put(gr__sb *b, const char *s, size_t len) {
    if (b->full) return;
    if (b->n + len > b->max) { len = b->max > b->n ? b->max - b->n : 0; b->full = 1; }
    if (b->n + len + 4 > b->cap) {
        size_t cap = (b->n + len + 4) * 2;
        char *t = (char *)GR_REALLOC(b->s, cap);
        if (!t) { b->full = 2; return; }
        b->s = t; b->cap = cap;
    }
    memcpy(b->s + b->n, s, len);
    b->n += len;
    if (b->full) { memcpy(b->s + b->n, "...", 3); b->n += 3; }
    b->s[b->n] = 0;
}
static void gr__sb_str(gr__sb *b, const char *s) { gr__sb_put(b, s, strlen(s)); }

/* ---- inner graphs ------------------------------------------------------------------------------- */

static void gr__pr_list(gr__printer *p, gr_graph *g, int n, gr_var *const *roots);
static void gr__dot_esc(FILE *out, const char *s);
static void gr__pr_tree(gr__printer *p, int n, gr_var *const *roots);
static void gr__pr_dot(gr__printer *p, int64_t n_nodes, gr_node *const *nodes, int n_roots, gr_var *const *roots);

/* node is an op made of graphs: its hook draws each inner graph through gr__print_inner */
static void gr__pr_graphop(gr__printer *p, const gr_node *node, const char *prefix) {
    const gr__graphop *o = *(gr__graphop *const *)gr__params(node);
    gr__printer inner = *p;
    if (!o->print) return;
    inner.node = node;
    inner.prefix = prefix;
    inner.depth = p->depth + 1;
    if (inner.depth > GR__PR_NEST) {
        if (p->mode != GR__PM_DOT) fprintf(p->out, "%s(the inner graphs of '%s', nested too deep to print)\n", prefix, o->name);
        return;
    }
    o->print(&inner, o);
    p->gid = inner.gid;
}

/* One inner graph of the node whose hook runs: `what` names it ("body"), in[0..n_in) are its
   inputs (leaves of its graph), out[0..n_out) its results; note (may be NULL) follows them. */
static void gr__print_inner(gr__printer *p, const char *what, int n_in, gr_var *const *in, int n_out,
                            gr_var *const *out, const char *note) {
    const gr__graphop *o = *(gr__graphop *const *)gr__params(p->node);
    int i;
    if (n_out < 1 || !out[0]) return;
    if (p->mode == GR__PM_DOT) {
        int me = ++p->gid, outer = p->cur;
        fprintf(p->out, "  subgraph cluster_%d {\n    label=\"%s of '", me, what);
        gr__dot_esc(p->out, o->name);
        fprintf(p->out, "'%s%s\"; style=dashed;\n", note ? ", " : "", note ? note : "");
        p->cur = me;
        gr__pr_dot(p, -1, NULL, n_out, out);
        p->cur = outer;
        fprintf(p->out, "  }\n");
        for (i = 0; i < n_out; i++)                  /* the results flow into the node */
            if (gr__owner(out[i]))
                fprintf(p->out, "  g%dn%lu -> g%dn%lu [style=dashed, label=\"%s %d\"];\n", me, (unsigned long)gr__owner(out[i])->id,
                        outer, (unsigned long)p->node->id, what, i);
            else
                fprintf(p->out, "  g%dv%lu -> g%dn%lu [style=dashed, label=\"%s %d\"];\n", me, (unsigned long)out[i]->id, outer,
                        (unsigned long)p->node->id, what, i);
        return;
    }
    fprintf(p->out, "%s%s of '%s' (inputs:", p->prefix, what, o->name);
    for (i = 0; i < n_in; i++) { fprintf(p->out, " "); gr__print_var(p->out, in[i]); }
    fprintf(p->out, "):\n");
    if (p->mode == GR__PM_LIST) gr__pr_list(p, out[0]->graph, n_out, out);
    else gr__pr_tree(p, n_out, out);
    fprintf(p->out, "%soutputs of '%s':", p->prefix, o->name);
    for (i = 0; i < n_out; i++) { fprintf(p->out, " "); gr__print_var(p->out, out[i]); }
    if (note) fprintf(p->out, " (%s)", note);
    fprintf(p->out, "\n");
}

/* ---- gr_print and gr_fn_print: one node a line ----------------------------------------------- */

static void gr__pr_node_line(gr__printer *p, const gr_node *node) {
    FILE *out = p->out;
    gr__oname t;
    int j;
    fprintf(out, "%s", p->prefix);
    for (j = 0; j < node->n_out; j++) {
        char buf[200];
        const gr_var *o = gr__out(node)[j];
        if (j) fprintf(out, ", ");
        gr__print_var(out, o);
        fprintf(out, ":%s%s", gr_dtype_name((gr_dtype)o->dtype), gr__pr_shape(buf, sizeof buf, o));
    }
    fprintf(out, " = %s", gr__pr_name(node->op, &t));
    if (gr__flags_of(node->op) & GR__OPF_INNERCONN) fprintf(out, "[%s]", gr__pr_name(gr__conn_node(node)->op, &t));   /* the op it wraps */
    fprintf(out, "(");
    for (j = 0; j < node->n_in; j++) {
        if (j) fprintf(out, ", ");
        gr__print_var(out, gr__in(node)[j]);
    }
    fprintf(out, ")");
    if (node->op == &gr__op_Fused) {            /* the ops run in one pass */
        const gr__fprog *fp = gr__fp(node);
        int k;
        fprintf(out, " {");
        for (k = 0; k < fp->n_ops && k < 40; k++)
            fprintf(out, "%s%s", k ? " " : "", gr__fop_name(&fp->ops[k]).s);
        if (fp->n_ops > 40) fprintf(out, " ... %d ops", (int)fp->n_ops);
        fprintf(out, "}");
    }
    if (gr__flags_of(node->op) & GR__OPF_GRAPHOP) {   /* an op made of graphs: its name, then those graphs */
        char prefix[4 * GR__PR_NEST + 8];
        snprintf(prefix, sizeof prefix, "%s    ", p->prefix);
        fprintf(out, " '%s'\n", (*(gr__graphop *const *)gr__params(node))->name);
        gr__pr_graphop(p, node, prefix);
        return;
    }
    fprintf(out, "\n");
}

static void gr__pr_list(gr__printer *p, gr_graph *g, int n, gr_var *const *roots) {
    gr_node **order = NULL;
    uint32_t n_order = 0, k;
    if (gr__toposort(g, n, roots, NULL, &order, &n_order) != GR_OK) return;
    for (k = 0; k < n_order; k++) gr__pr_node_line(p, order[k]);
    gr__pr_constants(p->out, p->prefix, (int64_t)n_order, order);
    GR_FREE(order);
}

static void gr__pr_init(gr__printer *p, FILE *out, int mode) {
    memset(p, 0, sizeof *p);
    p->out = out;
    p->mode = mode;
    p->prefix = mode == GR__PM_LIST ? "  " : "";
}

GR_API void gr_print(FILE *out, gr_var *v) {
    gr__printer p;
    if (!out || !v) return;
    if (!gr__owner(v)) {
        gr__print_var(out, v);
        fprintf(out, " (leaf)\n");
        return;
    }
    gr__pr_init(&p, out, GR__PM_LIST);
    gr__pr_list(&p, v->graph, 1, &v);
}

GR_API void gr_fn_print(FILE *out, const gr_fn *f) {
    gr__printer p;
    int64_t k;
    int i;
    if (!out || !f) return;
    gr__pr_init(&p, out, GR__PM_LIST);
    fprintf(out, "function of (");
    for (i = 0; i < f->n_in; i++) {
        if (i) fprintf(out, ", ");
        gr__print_var(out, f->slots[f->in_slot[i]].var);
    }
    fprintf(out, "), %lld nodes:\n", (long long)f->n_steps);
    for (k = 0; k < f->n_steps; k++) gr__pr_node_line(&p, f->steps[k]);
    gr__pr_constants(out, "", f->n_steps, f->steps);
    fprintf(out, "outputs:");
    for (i = 0; i < f->n_out; i++) {
        fprintf(out, " ");
        gr__print_var(out, f->slots[f->out_slot[i]].var);
    }
    fprintf(out, "\n");
}

/* ---- gr_debugprint: the tree under each variable ---------------------------------------------- */

/* one variable's line (after the tree's prefix): what computes it, #id, name, dtype, shape */
static void gr__pr_tree_line(FILE *out, const gr_var *v, int again) {
    char buf[200];
    const gr_node *node = gr__owner(v);
    const char *name = gr__vname(v);
    if (node) {
        gr__pr_opname(out, node);
        if (node->n_out > 1) fprintf(out, ".%d", (int)v->out_index);
        if (gr__flags_of(node->op) & GR__OPF_GRAPHOP) fprintf(out, " '%s'", (*(gr__graphop *const *)gr__params(node))->name);
    } else if (v->kind == GR__VK_CONST) {
        if (v->ndim == 0) gr__pr_values(out, v);
        else fprintf(out, "constant");
    } else if (v->kind == GR__VK_DISC) fprintf(out, "disconnected");
    else if (v->kind == GR__VK_NULL) fprintf(out, "null gradient");
    else fprintf(out, "%s", name ? name : v->kind == GR__VK_SHARED ? "shared" : "input");
    fprintf(out, " #%lu", (unsigned long)v->id);
    if (name && node) fprintf(out, " '%s'", name);
    if (again && node) { fprintf(out, " (above)\n"); return; }
    fprintf(out, " %s %s", gr_dtype_name((gr_dtype)v->dtype), gr__pr_shape(buf, sizeof buf, v));
    if (v->kind == GR__VK_SHARED) fprintf(out, "%s", name ? " shared" : "");
    if (v->kind == GR__VK_CONST && v->ndim) { fprintf(out, " = "); gr__pr_values(out, v); }
    if (v->kind == GR__VK_NULL) fprintf(out, ": %s", gr__null_reason(v));
    fprintf(out, "\n");
}

#define GR__PR_LEVELS 100            /* tree levels drawn; deeper lines say their depth */

/* roots' trees, depth first with an explicit stack: a variable under a node already drawn shows
   "(above)" instead of its subtree again; a graph op's inner graphs print under its line */
static void gr__pr_tree(gr__printer *p, int n, gr_var *const *roots) {
    typedef struct { const gr_var *v; int next; } frame;
    frame *st = NULL;
    uint8_t *seen = NULL;
    char *bars = NULL;                   /* the bars of the open levels: " |" or "  " each */
    const gr_graph *g = NULL;
    size_t cap = 0, sp;
    int r;
    for (r = 0; r < n; r++) {
        if (!roots[r]) continue;
        if (roots[r]->graph != g) {       /* a new graph: marks for its variables */
            g = roots[r]->graph;
            GR_FREE(seen);
            seen = (uint8_t *)gr__calloc((size_t)g->var_base + g->n_vars + 1u, 1);
            if (!seen) break;
        }
        sp = 0;
        if (sp + 1 > cap) {
            cap = 64;
            st = (frame *)GR_REALLOC(st, cap * sizeof(frame));
            bars = (char *)GR_REALLOC(bars, 2 * GR__PR_LEVELS + 8);
            if (!st || !bars) break;
        }
        st[sp].v = roots[r]; st[sp].next = -1; sp++;
        while (sp) {
            frame *fr = &st[sp - 1];
            const gr_node *node = gr__owner(fr->v);
            if (fr->next < 0) {           /* first visit: the line, then the inner graphs */
                size_t lv = sp - 1 < GR__PR_LEVELS ? sp - 1 : GR__PR_LEVELS;
                int again = seen[fr->v->id] && node;
                fprintf(p->out, "%s", p->prefix);
                if (sp - 1 > GR__PR_LEVELS) fprintf(p->out, "[depth %lu] ", (unsigned long)(sp - 1));
                if (lv) fprintf(p->out, "%.*s|", (int)(2 * lv - 1), bars);
                gr__pr_tree_line(p->out, fr->v, again);
                fr->next = 0;
                if (again || !node) { sp--; continue; }
                seen[fr->v->id] = 1;
                if (gr__flags_of(node->op) & GR__OPF_GRAPHOP) {
                    gr__sb pre;
                    memset(&pre, 0, sizeof pre);
                    pre.max = 4 * GR__PR_LEVELS + 1024;
                    gr__sb_str(&pre, p->prefix);
                    if (lv) gr__sb_put(&pre, bars, 2 * lv);
                    gr__sb_str(&pre, node->n_in ? " |    " : "      ");
                    if (pre.s && pre.full != 2) gr__pr_graphop(p, node, pre.s);
                    GR_FREE(pre.s);
                }
                {                                /* the node is drawn: its other outputs show "(above)" */
                    int j;
                    for (j = 0; j < node->n_out; j++) seen[gr__out(node)[j]->id] = 1;
                }
            }
            if (fr->next >= node->n_in) { sp--; continue; }
            {
                size_t lv = sp < GR__PR_LEVELS + 1 ? sp : GR__PR_LEVELS + 1;
                const gr_var *c = gr__in(node)[fr->next++];
                if (sp <= GR__PR_LEVELS) {     /* this level's bar: open while more inputs follow */
                    bars[2 * (lv - 1)] = ' ';
                    bars[2 * (lv - 1) + 1] = fr->next < node->n_in ? '|' : ' ';
                }
                if (sp + 1 > cap) {
                    frame *t = (frame *)GR_REALLOC(st, 2 * cap * sizeof(frame));
                    if (!t) { sp = 0; break; }
                    st = t; cap *= 2;
                }
                st[sp].v = c; st[sp].next = -1; sp++;
            }
        }
    }
    GR_FREE(st); GR_FREE(seen); GR_FREE(bars);
}

GR_API void gr_debugprint(FILE *out, int n, gr_var *const *vs) {
    gr__printer p;
    if (!out || n < 1 || !vs) return;
    gr__pr_init(&p, out, GR__PM_TREE);
    gr__pr_tree(&p, n, vs);
}

/* ---- gr_pp: one infix expression ------------------------------------------------------------- */

/* Aesara's spellings and precedences (aesara.printing: + and - -2, * / % -1, unary - 0, ** 1),
   with Python's for the comparisons and the logical (bitwise) operators; assoc: 0 either side
   (x + y + z), 1 left (x - y - z), 2 right (x ** y ** z) */
typedef struct { const char *sym; int prec, assoc; } gr__pp_opr;
static int gr__pp_operator(const gr_node *node, gr__pp_opr *o) {
    if (!(gr__flags_of(node->op) & GR__OPF_ELEMWISE)) return 0;
    switch (gr__code_of(node->op)) {
    case GR__EW_add: o->sym = "+"; o->prec = -2; o->assoc = 0; return 1;
    case GR__EW_sub: o->sym = "-"; o->prec = -2; o->assoc = 1; return 1;
    case GR__EW_mul: o->sym = "*"; o->prec = -1; o->assoc = 0; return 1;
    case GR__EW_div: o->sym = "/"; o->prec = -1; o->assoc = 1; return 1;
    case GR__EW_mod: o->sym = "%"; o->prec = -1; o->assoc = 1; return 1;
    case GR__EW_pow: o->sym = "**"; o->prec = 1; o->assoc = 2; return 1;
    case GR__EW_neg: o->sym = "-"; o->prec = 0; o->assoc = 0; return 1;
    case GR__EW_logical_not: o->sym = "~"; o->prec = 0; o->assoc = 0; return 1;
    case GR__EW_logical_and: o->sym = "&"; o->prec = -3; o->assoc = 0; return 1;
    case GR__EW_logical_or: o->sym = "|"; o->prec = -4; o->assoc = 0; return 1;
    case GR__EW_gt: o->sym = ">"; o->prec = -5; o->assoc = 1; return 1;
    case GR__EW_lt: o->sym = "<"; o->prec = -5; o->assoc = 1; return 1;
    case GR__EW_ge: o->sym = ">="; o->prec = -5; o->assoc = 1; return 1;
    case GR__EW_le: o->sym = "<="; o->prec = -5; o->assoc = 1; return 1;
    case GR__EW_eq: o->sym = "=="; o->prec = -5; o->assoc = 1; return 1;
    case GR__EW_neq: o->sym = "!="; o->prec = -5; o->assoc = 1; return 1;
    default: return 0;
    }
}

#define GR__PP_MAX 4000              /* characters of one subexpression; longer ones end in "..." */
#define GR__PP_ATOM 1000             /* precedence of a name, a value or a call */

/* v as an operand, into b: a named variable (other than the root) by its name, a leaf by what
   gr_print shows, a computed one by its expression str[v->id] (parenthesised when its precedence
   is below want, or equal on the side its operator does not associate) */
static void gr__pp_operand(gr__sb *b, const gr_var *v, const gr_var *root, char **str, const int *prec, int want, int eq_ok) {
    char buf[64];
    const char *name = gr__vname(v);
    if (name && v != root) { gr__sb_str(b, name); return; }
    if (!gr__owner(v)) {
        if (v->kind == GR__VK_CONST && v->ndim == 0) snprintf(buf, sizeof buf, "%g", gr__pr_value(v, 0));
        else snprintf(buf, sizeof buf, "%s#%lu", v->kind == GR__VK_CONST ? "constant" : v->kind == GR__VK_SHARED ? "shared" : "",
                      (unsigned long)v->id);
        gr__sb_str(b, buf);
        return;
    }
    if (prec[v->id] < want || (prec[v->id] == want && !eq_ok)) {
        gr__sb_str(b, "(");
        gr__sb_str(b, str[v->id] ? str[v->id] : "?");
        gr__sb_str(b, ")");
    } else gr__sb_str(b, str[v->id] ? str[v->id] : "?");
}

GR_API void gr_pp(FILE *out, gr_var *v) {
    gr_graph *g;
    gr_node **order = NULL;
    uint32_t n_order = 0, k, nv;
    char **str;
    int *prec, *uses;
    if (!out || !v) return;
    g = v->graph;
    if (!gr__owner(v)) {
        gr__sb b;
        memset(&b, 0, sizeof b);
        b.max = GR__PP_MAX;
        gr__pp_operand(&b, v, NULL, NULL, NULL, 0, 1);
        fprintf(out, "%s\n", b.s ? b.s : "");
        GR_FREE(b.s);
        return;
    }
    if (gr__toposort(g, 1, &v, NULL, &order, &n_order) != GR_OK) return;
    nv = g->var_base + g->n_vars + 1u;
    str = (char **)gr__calloc(nv, sizeof(char *));
    prec = (int *)gr__calloc(nv, sizeof(int));
    uses = (int *)gr__calloc(nv, sizeof(int));
    if (str && prec && uses) {
        int i, j;
        for (k = 0; k < n_order; k++)                  /* readers left of each value: freed after the last */
            for (i = 0; i < order[k]->n_in; i++) uses[gr__in(order[k])[i]->id]++;
        for (k = 0; k < n_order; k++) {
            gr_node *node = order[k];
            gr__pp_opr o;
            gr__sb b;
            int p;
            memset(&b, 0, sizeof b);
            b.max = GR__PP_MAX;
            if (gr__pp_operator(node, &o) && node->n_in == 1) {
                gr__sb_str(&b, o.sym);
                gr__pp_operand(&b, gr__in(node)[0], v, str, prec, o.prec, 1);
                p = o.prec;
            } else if (gr__pp_operator(node, &o) && node->n_in == 2) {
                gr__pp_operand(&b, gr__in(node)[0], v, str, prec, o.prec, o.assoc != 2);
                gr__sb_str(&b, " ");
                gr__sb_str(&b, o.sym);
                gr__sb_str(&b, " ");
                gr__pp_operand(&b, gr__in(node)[1], v, str, prec, o.prec, o.assoc == 0 || o.assoc == 2);
                p = o.prec;
            } else {                                     /* f(x, y) */
                gr__sb_str(&b, node->op->name);
                if (gr__flags_of(node->op) & GR__OPF_INNERCONN) {
                    gr__sb_str(&b, "[");
                    gr__sb_str(&b, gr__conn_node(node)->op->name);
                    gr__sb_str(&b, "]");
                }
                if (gr__flags_of(node->op) & GR__OPF_CONVERT) {
                    gr__sb_str(&b, "{");
                    gr__sb_str(&b, gr_dtype_name((gr_dtype)gr__out(node)[0]->dtype));
                    gr__sb_str(&b, "}");
                }
                if (gr__flags_of(node->op) & GR__OPF_GRAPHOP) {
                    gr__sb_str(&b, "{'");
                    gr__sb_str(&b, (*(gr__graphop *const *)gr__params(node))->name);
                    gr__sb_str(&b, "'}");
                }
                gr__sb_str(&b, "(");
                for (i = 0; i < node->n_in; i++) {
                    if (i) gr__sb_str(&b, ", ");
                    gr__pp_operand(&b, gr__in(node)[i], v, str, prec, -1000, 1);
                }
                gr__sb_str(&b, ")");
                p = GR__PP_ATOM;
            }
            if (b.full == 2) { GR_FREE(b.s); break; }
            for (j = 0; j < node->n_out; j++) {        /* a second output: "Split(x)[1]" */
                gr_var *o2 = gr__out(node)[j];
                if (node->n_out == 1) { str[o2->id] = b.s; b.s = NULL; }
                else {
                    gr__sb c;
                    char idx[32];
                    memset(&c, 0, sizeof c);
                    c.max = GR__PP_MAX + 40;
                    gr__sb_str(&c, b.s);
                    snprintf(idx, sizeof idx, "[%d]", j);
                    gr__sb_str(&c, idx);
                    str[o2->id] = c.s;
                }
                prec[o2->id] = p;
            }
            GR_FREE(b.s);
            for (i = 0; i < node->n_in; i++) {           /* operands read for the last time */
                gr_var *x = gr__in(node)[i];
                if (--uses[x->id] == 0 && x != v) { GR_FREE(str[x->id]); str[x->id] = NULL; }
            }
        }
        if (str[v->id]) fprintf(out, "%s\n", str[v->id]);
        for (k = 0; k < nv; k++) GR_FREE(str[k]);
    }
    GR_FREE(str); GR_FREE(prec); GR_FREE(uses); GR_FREE(order);
}

/* ---- DOT ------------------------------------------------------------------------------------- */

/* s inside a DOT string: quotes and backslashes escaped */
static void gr__dot_esc(FILE *out, const char *s) {
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', out);
        fputc(*s, out);
    }
}

/* the id of the node drawing v in graph number gnum: its op's node, or the leaf's box; for an
   output of a Fused node, the instruction that writes it (gr_fn_print_dot draws those) */
static int gr__fused_writer(const gr__fprog *fp, int32_t ref) {
    int k, w = -1;
    for (k = 0; k < fp->n_ops; k++)
        if (fp->ops[k].out == ref || fp->ops[k].out2 == ref) w = k;
    return w;
}
static void gr__dot_src(FILE *out, int gnum, const gr_var *v, int fused) {
    const gr_node *node = gr__owner(v);
    if (!node) fprintf(out, "g%dv%lu", gnum, (unsigned long)v->id);
    else if (fused && node->op == &gr__op_Fused) {
        const gr__fprog *fp = gr__fp(node);
        fprintf(out, "g%dn%lu_%d", gnum, (unsigned long)node->id, gr__fused_writer(fp, fp->n_ext + fp->n_imm + v->out_index));
    } else fprintf(out, "g%dn%lu", gnum, (unsigned long)node->id);
}

static void gr__dot_leaf(FILE *out, int gnum, const gr_var *v) {
    char buf[200];
    const char *name = gr__vname(v);
    fprintf(out, "    g%dv%lu [shape=box, style=filled, fillcolor=%s, label=\"", gnum, (unsigned long)v->id,
            v->kind == GR__VK_CONST ? "lightgrey" : v->kind == GR__VK_SHARED ? "lightcyan" : "palegreen");
    if (name) { gr__dot_esc(out, name); fprintf(out, "\\n"); }
    if (v->kind == GR__VK_CONST) { gr__pr_values(out, v); fprintf(out, "\\n"); }
    else if (v->kind == GR__VK_SHARED) fprintf(out, "shared ");
    else if (v->kind == GR__VK_DISC) fprintf(out, "disconnected ");
    else if (v->kind == GR__VK_NULL) fprintf(out, "null gradient ");
    fprintf(out, "#%lu %s %s\"];\n", (unsigned long)v->id, gr_dtype_name((gr_dtype)v->dtype), gr__pr_shape(buf, sizeof buf, v));
}

/* a Fused node as a cluster: one DOT node per instruction, immediates as constant boxes, edges
   along the program's operands */
static void gr__dot_fused(gr__printer *p, const gr_node *node, uint8_t *seen) {
    const gr__fprog *fp = gr__fp(node);
    int *writer = (int *)GR_MALLOC(sizeof(int) * ((size_t)fp->n_refs + 1u));
    int k, a;
    FILE *out = p->out;
    fprintf(out, "  subgraph cluster_f%lu {\n    label=\"Fused #%lu (one pass, %d ops)\"; style=filled; fillcolor=lightyellow;\n",
            (unsigned long)node->id, (unsigned long)node->id, (int)fp->n_ops);
    if (writer) for (k = 0; k < fp->n_refs; k++) writer[k] = -1;
    for (k = 0; k < fp->n_ops; k++) {
        const gr__fop *op = &fp->ops[k];
        fprintf(out, "    g%dn%lu_%d [shape=ellipse, label=\"%s\"];\n", p->cur, (unsigned long)node->id, k, gr__fop_name(op).s);
        for (a = 0; a < op->n_args; a++) {
            int32_t r = op->arg[a];
            if (op->row == GR__FOP_PAIR && a == 1) break;          /* arg[1] of a pair is its row */
            if (r < fp->n_ext) {
                const gr_var *x = gr__in(node)[r];
                if (!gr__owner(x) && !seen[x->id]) { seen[x->id] = 1; gr__dot_leaf(out, p->cur, x); }
                fprintf(out, "    ");
                gr__dot_src(out, p->cur, x, 1);
            } else if (r < fp->n_ext + fp->n_imm) {                  /* an immediate: its value */
                const unsigned char *imm = (const unsigned char *)&fp->imm[r - fp->n_ext];
                double val;
                int dt = (op->row == GR__EW_where && a == 0) ? (int)GR_BOOL : (int)op->dtype;
                if (dt == GR_F64) memcpy(&val, imm, 8);
                else if (dt == GR_F32) { float t; memcpy(&t, imm, 4); val = t; }
                else if (dt == GR_I64) { int64_t t; memcpy(&t, imm, 8); val = (double)t; }
                else val = imm[0];
                fprintf(out, "    g%dn%lu_%d_%d [shape=box, style=filled, fillcolor=lightgrey, label=\"%g\"];\n    g%dn%lu_%d_%d",
                        p->cur, (unsigned long)node->id, k, a, val, p->cur, (unsigned long)node->id, k, a);
            } else if (writer && writer[r] >= 0)
                fprintf(out, "    g%dn%lu_%d", p->cur, (unsigned long)node->id, writer[r]);
            else continue;
            fprintf(out, " -> g%dn%lu_%d", p->cur, (unsigned long)node->id, k);
            if (op->n_args > 1 && !(op->row == GR__FOP_PAIR)) fprintf(out, " [label=\"%d\"]", a);
            fprintf(out, ";\n");
        }
        if (writer) { writer[op->out] = k; if (op->out2 >= 0) writer[op->out2] = k; }
    }
    fprintf(out, "  }\n");
    GR_FREE(writer);
}

/* nodes[0..n_nodes) (n_nodes < 0: the nodes roots need, in order) as DOT statements of graph
   number p->cur; roots as output boxes. Fused nodes become clusters when given (a function). */
static void gr__pr_dot(gr__printer *p, int64_t n_nodes, gr_node *const *nodes, int n_roots, gr_var *const *roots) {
    gr_node **order = NULL;
    uint32_t n_order = 0;
    int64_t k;
    int i, fused = nodes != NULL;
    uint32_t nv = 0;
    uint8_t *seen;
    FILE *out = p->out;
    if (n_nodes < 0) {
        if (gr__toposort(roots[0]->graph, n_roots, roots, NULL, &order, &n_order) != GR_OK) return;
        nodes = order;
        n_nodes = n_order;
    }
    for (k = 0; k < n_nodes; k++)                    /* marks for every variable met (a function's steps */
        for (i = 0; i < nodes[k]->n_in; i++)           /* and outputs may number theirs in two graphs) */
            if (gr__in(nodes[k])[i]->id >= nv) nv = gr__in(nodes[k])[i]->id + 1u;
    for (i = 0; i < n_roots; i++)
        if (roots[i]->id >= nv) nv = roots[i]->id + 1u;
    seen = (uint8_t *)gr__calloc((size_t)nv + 1u, 1);
    if (!seen) { GR_FREE(order); return; }
    for (k = 0; k < n_nodes; k++)                    /* the leaves first: outside any cluster drawn below */
        for (i = 0; i < nodes[k]->n_in; i++) {
            const gr_var *x = gr__in(nodes[k])[i];
            if (!gr__owner(x) && !seen[x->id]) { seen[x->id] = 1; gr__dot_leaf(out, p->cur, x); }
        }
    for (k = 0; k < n_nodes; k++) {
        const gr_node *node = nodes[k];
        char buf[200];
        if (fused && node->op == &gr__op_Fused) { gr__dot_fused(p, node, seen); continue; }
        fprintf(out, "    g%dn%lu [shape=ellipse, label=\"", p->cur, (unsigned long)node->id);
        {                                            /* the op, then each output's name, dtype, shape */
            int j;
            gr__oname t;
            gr__dot_esc(out, gr__pr_name(node->op, &t));
            if (gr__flags_of(node->op) & GR__OPF_INNERCONN) {
                fprintf(out, "[");
                gr__dot_esc(out, gr__pr_name(gr__conn_node(node)->op, &t));
                fprintf(out, "]");
            }
            if (gr__flags_of(node->op) & GR__OPF_CONVERT) fprintf(out, "{%s}", gr_dtype_name((gr_dtype)gr__out(node)[0]->dtype));
            if (gr__flags_of(node->op) & GR__OPF_GRAPHOP) {
                fprintf(out, " '");
                gr__dot_esc(out, (*(gr__graphop *const *)gr__params(node))->name);
                fprintf(out, "'");
            }
            for (j = 0; j < node->n_out; j++) {
                const gr_var *o = gr__out(node)[j];
                fprintf(out, "\\n");
                if (gr__vname(o)) { gr__dot_esc(out, gr__vname(o)); fprintf(out, " "); }
                fprintf(out, "#%lu %s %s", (unsigned long)o->id, gr_dtype_name((gr_dtype)o->dtype), gr__pr_shape(buf, sizeof buf, o));
            }
        }
        fprintf(out, "\"];\n");
        for (i = 0; i < node->n_in; i++) {
            const gr_var *x = gr__in(node)[i];
            if (!gr__owner(x) && !seen[x->id]) { seen[x->id] = 1; gr__dot_leaf(out, p->cur, x); }
            fprintf(out, "    ");
            gr__dot_src(out, p->cur, x, fused);
            fprintf(out, " -> g%dn%lu", p->cur, (unsigned long)node->id);
            if (node->n_in > 1 || (gr__owner(x) && gr__owner(x)->n_out > 1)) {
                fprintf(out, " [label=\"");
                if (gr__owner(x) && gr__owner(x)->n_out > 1) fprintf(out, "out %d", (int)x->out_index);
                if (node->n_in > 1) fprintf(out, "%sin %d", gr__owner(x) && gr__owner(x)->n_out > 1 ? ", " : "", i);
                fprintf(out, "\"]");
            }
            fprintf(out, ";\n");
        }
        if (gr__flags_of(node->op) & GR__OPF_GRAPHOP) gr__pr_graphop(p, node, "");
    }
    for (i = 0; i < n_roots; i++) {                  /* the results */
        const gr_var *r = roots[i];
        if (!gr__owner(r) && !seen[r->id]) { seen[r->id] = 1; gr__dot_leaf(out, p->cur, r); }
        if (p->depth) continue;                       /* an inner graph's results flow into its node */
        fprintf(out, "    g%dout%d [shape=box, style=filled, fillcolor=lightblue, label=\"output %d\"];\n    ", p->cur, i, i);
        gr__dot_src(out, p->cur, r, fused);
        fprintf(out, " -> g%dout%d;\n", p->cur, i);
    }
    GR_FREE(seen);
    GR_FREE(order);
}

GR_API void gr_print_dot(FILE *out, int n, gr_var *const *vs) {
    gr__printer p;
    int i;
    if (!out) return;
    fprintf(out, "digraph gradient {\n  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=9];\n");
    for (i = 0; vs && i < n; i++)
        if (!vs[i]) break;
    if (vs && n > 0 && i == n) {
        int j, same = 1;
        for (j = 1; j < n; j++) same &= vs[j]->graph == vs[0]->graph;
        gr__pr_init(&p, out, GR__PM_DOT);
        if (same) gr__pr_dot(&p, -1, NULL, n, vs);
        else for (j = 0; j < n; j++) { p.cur = ++p.gid; gr__pr_dot(&p, -1, NULL, 1, &vs[j]); }
    }
    fprintf(out, "}\n");
}

GR_API void gr_fn_print_dot(FILE *out, const gr_fn *f) {
    gr__printer p;
    gr_var **outs;
    int i;
    if (!out || !f) return;
    fprintf(out, "digraph gradient_function {\n  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=9];\n");
    outs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * ((size_t)f->n_out + 1u));
    if (outs) {
        for (i = 0; i < f->n_out; i++) outs[i] = f->slots[f->out_slot[i]].var;
        gr__pr_init(&p, out, GR__PM_DOT);
        if (f->n_steps > 0 || f->n_out > 0) {
            if (f->n_steps > 0) gr__pr_dot(&p, f->n_steps, f->steps, f->n_out, outs);
            else gr__pr_dot(&p, -1, NULL, f->n_out, outs);
        }
        for (i = 0; i < f->n_upd; i++) {            /* each update: the new value to its shared variable */
            fprintf(out, "    g0upd%d [shape=box, style=filled, fillcolor=lightcyan, label=\"update ", i);
            if (gr__vname(f->upd_var[i])) gr__dot_esc(out, gr__vname(f->upd_var[i]));
            else fprintf(out, "#%lu", (unsigned long)f->upd_var[i]->id);
            fprintf(out, "\"];\n    ");
            gr__dot_src(out, 0, f->slots[f->upd_slot[i]].var, 1);
            fprintf(out, " -> g0upd%d;\n", i);
        }
        GR_FREE(outs);
    }
    fprintf(out, "}\n");
}

#else /* GR_NO_STDIO: no printers; the graph-op hooks still name this */
static void gr__print_inner(gr__printer *p, const char *what, int n_in, gr_var *const *in, int n_out,
                            gr_var *const *out, const char *note) {
    (void)p; (void)what; (void)n_in; (void)in; (void)n_out; (void)out; (void)note;
}
#endif

/* ==== src/tail.c: generated region; edit src/tail.c, then run make gradient.h ==== */
#ifdef __cplusplus
}
#endif
#endif /* GRADIENT_IMPLEMENTATION_DONE */
#endif /* GRADIENT_IMPLEMENTATION */

/*
MIT License

Copyright (c) 2026 the gradient.h authors

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
associated documentation files (the "Software"), to deal in the Software without restriction,
including without limitation the rights to use, copy, modify, merge, publish, distribute,
sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all copies or
substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT
NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM,
DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT
OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
*/
