/* tests/forward.h: helpers shared by the forward-value tests (tests/t_forward*.c); defined in
   tests/t_forward.c. Expected values are plain gr_arrays built by the tests: GR_I64 for integer and
   bool results (compared exactly), GR_F64 for everything else. */
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

#define GTF_TOL_F64 1e-13
#define GTF_TOL_F32 1e-5

#endif
