/* tests/deriv.h: table-driven derivative checks of every op (tests/t_deriv.c runs them).

   Any tests/t_*.c file may define a spec table:

       GTD_SPECS(gtd_specs_mine) = {
           { "sin", "sin of a matrix", build_sin, NULL, 1, { GTD_IN(2, 3, 4, -2, 2) }, 0 },
           ...
           GTD_END
       };

   The Makefile lists every GTD_SPECS(name) of tests/t_*.c in build/dspecs.h. For every spec, in
   F64 and then F32 (unless GTD_F64_ONLY), with pseudo-random points drawn in each input's domain:
     1. gr_verify_grad: the gradient against one-sided finite differences;
     2. gr_rop against central finite differences along random tangents;
     3. the adjoint identity <u, Rop(f, x, v)> = sum_i <Lop(f, x, u)_i, v_i> for random u, v;
     4. with GTD_GRADGRAD: gr_verify_grad of the gradient of sum(f) with respect to input 0.
   A row of GR_ELEMWISE_OPS or GR_STRUCT_OPS that no spec names fails the suite.
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
#define GTD_SPECS(name) const gtd_spec name[]
#define GTD_END { NULL, NULL, NULL, NULL, 0, { GTD_IN(0, 0, 0, 0, 0) }, 0 }

#endif
