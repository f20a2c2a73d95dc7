/* tests/ops.h: the op tests, by row of the op tables (ops/table.h).

   Every row has its cases in the test file of its family, tests/ops_<family>.c (the family file
   ops/<family>.c that holds its rules), under a name that tests/ops.c takes from the table:
   gt_cases_<Name> for a row of GR_STRUCT_OPS, gt_ew_<name> for a row of GR_ELEMWISE_OPS. A row
   without its cases does not build (the link fails on the undefined name), and
   test_ops_rows_complete fails for a row whose cases lack a kind.

   A structural row's cases are one list, in the order they run:

       GT_CASES(Softmax) = {
           GT_VALUES(test_softmax_values),   forward values against plain C: at least one
           GT_SPECS(specs_Softmax),          derivative specs (tests/deriv.h), each naming the row:
                                             gradient and R-op against finite differences, the
                                             adjoint identity: at least one list
           GT_DERIVS(test_softmax_rop),      derivatives at chosen points, R-ops, Jacobians: any
           GT_ERRORS(test_softmax_errors),   the error paths of its constructor: at least one, or
           GT_ERRORS_WITH(Sum),              its constructor is another row's, tested there, or
           GT_NO_ERRORS("why"),              it has no constructor of its own (say who makes it)
           GT_END
       };

   An elementwise row's cases are its plain-C reference, the domains its values are drawn from,
   its derivative specs and any further cases:

       static const gtd_spec specs_neg[] = { ..., GTD_END };
       GT_EW(neg) = { GTE_REF_FI(neg), { GTE_DOM(-5, 5, -9, 9, GTE_Q), GTE_DX, GTE_DX }, 1, specs_neg, NULL };

   From them come, for every row alike (tests/ops_elemwise.c): its values in every dtype its class
   computes in, over same-shape, broadcast, 0-d and empty operands (inputs of static and call-time
   shapes, constants, shared variables, computed operands) at both optimize levels; its derivative
   specs; and the errors of its constructor (NULL and marker operands, shapes that do not broadcast
   when built and when called). */
#ifndef GT_OPS_H
#define GT_OPS_H

#include "forward.h"
#include "deriv.h"

/* ---- structural rows ------------------------------------------------------------------------------ */

enum { GT_K_END, GT_K_VALUES, GT_K_SPECS, GT_K_DERIVS, GT_K_ERRORS, GT_K_ERRORS_WITH, GT_K_NO_ERRORS };
typedef struct gt_opcase {
    int kind;
    const char *name;              /* the test; ERRORS_WITH: the row; NO_ERRORS: the reason */
    gt_fn fn;                      /* VALUES, DERIVS, ERRORS */
    const gtd_spec *specs;         /* SPECS */
} gt_opcase;

#define GT_CASES(Name) const gt_opcase gt_cases_##Name[]
#define GT_VALUES(fn) { GT_K_VALUES, #fn, fn, NULL }
#define GT_SPECS(specs) { GT_K_SPECS, #specs, NULL, specs }
#define GT_DERIVS(fn) { GT_K_DERIVS, #fn, fn, NULL }
#define GT_ERRORS(fn) { GT_K_ERRORS, #fn, fn, NULL }
#define GT_ERRORS_WITH(Row) { GT_K_ERRORS_WITH, #Row, NULL, NULL }
#define GT_NO_ERRORS(why) { GT_K_NO_ERRORS, why, NULL, NULL }
#define GT_END { GT_K_END, NULL, NULL, NULL }

/* ---- elementwise rows ------------------------------------------------------------------------------ */

/* the domain of one input: floats in [lo, hi], integers in [ilo, ihi] (bools: 0/1 within it) */
enum {
    GTE_NZ = 1,          /* nonzero: |x| >= 0.25 for floats, x != 0 for integers and bools */
    GTE_Q  = 2,          /* half of the float values rounded to multiples of 0.5 (ties, halves, zeros) */
    GTE_QH = 4,          /* every float value a multiple of 0.5 */
    GTE_QI = 8           /* every float value an integer */
};
typedef struct gte_dom { double lo, hi; int64_t ilo, ihi; unsigned flags; } gte_dom;
#define GTE_DOM(lo, hi, ilo, ihi, fl) { lo, hi, ilo, ihi, fl }
#define GTE_DX GTE_DOM(0, 0, 0, 0, 0)

typedef struct gt_ew {
    double (*f)(double, double, double);      /* float inputs, and integer inputs of FLOAT rows */
    int64_t (*i)(int64_t, int64_t, int64_t);  /* integer and bool inputs of every other class */
    gte_dom dom[3];
    int exact;            /* F64 equal to f, F32 equal to f rounded to float; else within tolerance */
    const gtd_spec *specs;
    const gt_opcase *more; /* NULL, or further VALUES and DERIVS cases, GT_END-terminated */
} gt_ew;

#define GT_EW(name) const gt_ew gt_ew_##name
/* the plain-C references gte_f_<name> (double) and gte_i_<name> (int64_t) of a row */
#define GTE_F(name, expr) \
    static double gte_f_##name(double a, double b, double c) { (void)a; (void)b; (void)c; return (double)(expr); }
#define GTE_I(name, expr) \
    static int64_t gte_i_##name(int64_t a, int64_t b, int64_t c) { (void)a; (void)b; (void)c; return (int64_t)(expr); }
#define GTE_REF_F(name) gte_f_##name, NULL
#define GTE_REF_FI(name) gte_f_##name, gte_i_##name

/* a row as tests/ops.c expands it from GR_ELEMWISE_OPS */
enum { GTE_FLOAT, GTE_ARITH, GTE_STEP, GTE_CMP, GTE_LOGIC, GTE_SELECT };
typedef struct gte_row {
    const char *name;
    int arity, cls;
    gr_var *(*b1)(gr_var *);
    gr_var *(*b2)(gr_var *, gr_var *);
    gr_var *(*b3)(gr_var *, gr_var *, gr_var *);
    const gt_ew *cases;
} gte_row;

/* tests/ops.c: the row of that name, NULL if none */
const gte_row *gte_row_of(const char *name);

/* tests/ops_elemwise.c: the row's values in every dtype of its class; its constructor's errors */
void gte_values(const gte_row *row);
void gte_errors(const gte_row *row);

/* tests/ops.c: every case of every row (tests/main.c calls it) */
void gt_run_ops(void);

#endif
