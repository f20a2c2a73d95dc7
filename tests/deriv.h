/* tests/deriv.h: table-driven derivative checks of every op (tests/deriv.c holds them).

   Each row of the op tables has a list of specs in the test file of its family (tests/ops.h):

       static const gtd_spec specs_sin[] = {
           { "sin", "sin of a matrix", build_sin, NULL, 1, { GTD_IN(2, 3, 4, -2, 2) }, 0 },
           ...
           GTD_END
       };

   For every spec, in F64 and then F32 (unless GTD_F64_ONLY), with pseudo-random points drawn in
   each input's domain (seeded by the spec's row and label):
     1. gr_verify_grad: the gradient against one-sided finite differences;
     2. gr_rop against central finite differences along random tangents;
     3. the adjoint identity <u, Rop(f, x, v)> = sum_i <Lop(f, x, u)_i, v_i> for random u, v;
     4. with GTD_GRADGRAD: gr_verify_grad of the gradient of sum(f) with respect to input 0.
   Every spec of a row's list names that row (test_ops_rows_complete checks it).
   The builder gets the spec's inputs (all float, of the dtype under test) and its `user` pointer;
   integer operands (indices, labels) are made inside the builder as constants. */
#ifndef GT_DERIV_H
#define GT_DERIV_H

#include "harness.h"

#define GTD_MAX_IN 4

typedef struct gtd_input {
    int ndim;
    int64_t shape[GR_MAX_NDIM];
    double lo, hi;                       /* the domain: uniform in [lo, hi) */
} gtd_input;

enum {
    GTD_F64_ONLY  = 1,                   /* float32 finite differences are too coarse for this op */
    GTD_GRADGRAD  = 2,                   /* also check the gradient of the gradient */
    GTD_NONDIFF   = 4,                   /* integer-valued or piecewise constant: gradients and R-op are zero */
    GTD_NO_ROP_FD = 8                    /* skip the R-op finite differences (the adjoint still runs) */
};

typedef struct gtd_spec {
    const char *row;                     /* the table row it covers */
    const char *label;
    gr_builder build;
    void *user;
    int n_in;
    gtd_input in[GTD_MAX_IN];
    unsigned flags;
} gtd_spec;

/* GTD_IN(ndim, d0, d1, lo, hi): an input of up to two dimensions (0-d: GTD_IN(0, 0, 0, lo, hi)) */
#define GTD_IN(nd, d0, d1, lo, hi) { nd, { d0, d1 }, lo, hi }
#define GTD_IN3(d0, d1, d2, lo, hi) { 3, { d0, d1, d2 }, lo, hi }
/* the inputs most specs use: (3,4), (4,), (3,1), (1,4), 0-d, (2,3,2), each uniform in [lo, hi) */
#define M34(lo, hi) GTD_IN(2, 3, 4, lo, hi)
#define V4(lo, hi)  GTD_IN(1, 4, 0, lo, hi)
#define C31(lo, hi) GTD_IN(2, 3, 1, lo, hi)
#define R14(lo, hi) GTD_IN(2, 1, 4, lo, hi)
#define S0(lo, hi)  GTD_IN(0, 0, 0, lo, hi)
#define T232(lo, hi) GTD_IN3(2, 3, 2, lo, hi)
#define GG GTD_GRADGRAD
#define ND GTD_NONDIFF

#define GTD_END { NULL, NULL, NULL, NULL, 0, { GTD_IN(0, 0, 0, 0, 0) }, 0 }

/* a constant of x's dtype (float) with the given values */
gr_var *gts_const_like(gr_var *x, int ndim, const int64_t *shape, const double *v);
/* an I64 constant */
gr_var *gts_indices(gr_graph *g, int ndim, const int64_t *shape, const int64_t *v);
/* evaluates outs at the inputs (vectors of n elements, in each input's dtype, from vals) into
   res[k * n ...] (n doubles per output); 1 when everything worked */
int gts_eval(int n_in, gr_var *const *ins, const double *const *vals, int n, int n_out, gr_var *const *outs, double *res);

/* every check above for spec s (number k of its list: the seed) in dtype dt */
void gtd_run_spec(const gtd_spec *s, int k, gr_dtype dt);
/* every spec of a GTD_END-terminated list, in F64, then in F32 */
void gtd_run_specs(const gtd_spec *specs);

#endif
