/* tests/forward.h: helpers shared by the op tests (tests/ops_*.c) and the drivers' tests, defined
   in tests/forward.c. Expected values are plain gr_arrays built by the tests: GR_I64 for integer
   and bool results (compared exactly), GR_F64 for everything else. Every comparison counts as a
   check (gt.checks). */
#ifndef GT_FORWARD_H
#define GT_FORWARD_H

#include "harness.h"
#include <stdint.h>

/* splitmix64: deterministic pseudo-random inputs */
typedef struct gtf_rng { uint64_t s; } gtf_rng;
uint64_t gtf_next(gtf_rng *r);
double   gtf_uniform(gtf_rng *r, double lo, double hi);          /* [lo, hi) */
int64_t  gtf_int(gtf_rng *r, int64_t lo, int64_t hi);            /* [lo, hi] */

/* an array of dtype dt with values uniform in [lo, hi) (floats), integers in [lo, hi] (I64), or
   0/1 (BOOL) */
gr_array *gtf_random(gtf_rng *r, gr_dtype dt, int ndim, const int64_t *shape, double lo, double hi);

/* an input of dtype dt: with its static shape, or (dynamic) with every dimension unknown
   (gr_scalar / gr_vector / gr_matrix / gr_tensor with a NULL shape) */
gr_var *gtf_input(gr_graph *g, gr_dtype dt, int ndim, const int64_t *shape, int dynamic, const char *name);

/* the flat index, in an array of shape (ndim, shape) right-aligned against the output shape
   (ondim, oshape), of output element `flat` under NumPy broadcasting */
int64_t gtf_bcast_index(int64_t flat, int ondim, const int64_t *oshape, int ndim, const int64_t *shape);

/* element k of want (F64 or I64) as double / as int64 */
double  gtf_wantf(const gr_array *want, int64_t k);

/* got has dtype `dtype`, want's shape, and want's values: I64 wants exactly, F64 wants within
   |got - want| <= tol * max(1, |want|) (tol == 0: exactly, after rounding want to F32 for an F32
   result; NaN matches NaN). Reports the first difference; returns 1 when equal. */
int gtf_same(const gr_array *got, gr_dtype dtype, const gr_array *want, double tol, const char *label);

/* out (built from the n inputs ins) has the static dtype `dtype` and ndim of want, and evaluates
   to want on `arrays` under both GR_OPT_FULL and GR_OPT_NONE. Returns 1 when all holds. */
int gtf_expect(gr_graph *g, int n, gr_var *const *ins, const gr_array *const *arrays, gr_var *out, gr_dtype dtype,
               const gr_array *want, double tol, const char *label);

/* out builds, compiles, and its call fails with `code` under both optimize levels */
int gtf_expect_call_error(gr_graph *g, int n, gr_var *const *ins, const gr_array *const *arrays, gr_var *out,
                          gr_status code, const char *label);

/* the static shape of v is fully known and equals (ndim, shape) */
int gtf_static_shape_is(const gr_var *v, int ndim, const int64_t *shape, const char *label);

/* "(2,3)" */
const char *gtf_shape_str(char *buf, size_t n, int ndim, const int64_t *shape);

#define GTF_TOL_F64 1e-13
#define GTF_TOL_F32 1e-5

/* ---- the structural ops' helpers ---------------------------------------------------------------- */

extern const gr_dtype gts_dtypes[4];     /* F64, F32, I64, BOOL */
int gts_is_float(gr_dtype dt);
/* an expected-value array for results of dtype dt: I64 for integers and bools, else F64 */
gr_array *gts_want(gr_dtype dt, int ndim, const int64_t *shape);
/* want[k] = x[xk], exactly */
void gts_copy_elem(gr_array *want, int64_t k, const gr_array *x, int64_t xk);
/* element k of an I64 or BOOL array (0 for floats) */
int64_t gts_int_at(const gr_array *x, int64_t k);
/* values of a random input: floats in [lo, hi), ints in [ilo, ihi], bools 0/1 */
gr_array *gts_random(gtf_rng *r, gr_dtype dt, int ndim, const int64_t *shape, double lo, double hi, int64_t ilo, int64_t ihi);
/* GTF_TOL_F32 / GTF_TOL_F64 by the result's dtype, 0 (exact) for integers and bools */
double gts_tol(gr_dtype dt);
/* gtf_expect of one input */
int gts_expect1(gr_graph *g, gr_var *x, const gr_array *xa, gr_var *y, gr_dtype dt, const gr_array *want, double tol,
                const char *label);

/* gr_fn_print of f into buf (size bytes) */
void gts_fn_print(gr_fn *f, char *buf, size_t size);

/* compiles out from the n inputs, calls it on arr and copies the result to *res; 1 when all worked */
int gtr_call1(gr_graph *g, int n, gr_var *const *ins, const gr_array *const *arr, gr_var *out, gr_array **res, const char *label);

/* log(e^a + e^b) without overflow, a reference independent of the kernels' max shift */
double gtr_logaddexp(double a, double b);

/* the variable of op `name` feeding v's node as input `pos` (the rules' internals, by name) */
gr_var *gtr_input_of(gr_var *v, int pos, const char *name, const char *label);

/* ---- the linear algebra's helpers --------------------------------------------------------------- */

/* compiles out from the n inputs ins, calls it on arrays and returns a copy of the result (NULL,
   reported, when anything fails) */
gr_array *gtl_eval(int n, gr_var *const *ins, const gr_array *const *arrays, gr_var *out, const char *label);
/* max |got - want| <= tol * max |want| (normwise relative), shapes equal; NaN only where want has it */
int gtl_close(const gr_array *got, const gr_array *want, double tol, const char *label);
/* an (r, c) array of dtype dt from v (row-major; NULL: zeros) */
gr_array *gtl_matrix(gr_dtype dt, int64_t r, int64_t c, const double *v);

typedef gr_var *(*gtl_unary)(gr_var *);
/* f(A) built from a dynamic float64 matrix A (r, c) of the values a fails at call time with `code`,
   the message naming A and holding needle */
void gtl_call_fails(gtl_unary op, const double *a, int64_t r, int64_t c, gr_status code, const char *needle, const char *label);

/* the Jacobian of f (built from the single input x) against central differences of f, in float64 */
void gtl_jacobian_fd(gr_var *(*build)(gr_var *x, void *u), void *u, int ndim, const int64_t *shape, const gr_array *x0, const char *label);

/* a 3x3 well-conditioned constant (shift added to its diagonal) */
gr_var *gtl_const_matrix(gr_graph *g, double shift);

/* ---- the error tests' helpers ------------------------------------------------------------------- */

gr_array *e_vec(int64_t n, const double *xs);               /* a F64 vector of xs */
gr_array *e_mat(int64_t r, int64_t c, const double *xs);    /* a F64 (r, c) matrix of xs */
gr_array *e_ramp(int64_t n);                                 /* 0.5, 1.5, 2.5, ... (n elements) */
gr_var *e_const_vec(gr_graph *g, int64_t n);                 /* the constant e_ramp(n) */
gr_var *e_const_mat(gr_graph *g, int64_t r, int64_t c);      /* a constant (r, c) of zeros */
/* the graph has no error and no message */
#define CHECK_OK_GRAPH(g) do { CHECK_STATUS(gr_graph_status(g), GR_OK); CHECK(strcmp(gr_graph_message(g), "") == 0); } while (0)

#endif
