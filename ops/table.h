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
    X(pow,        2, ARITH, GR_M(gr__m_pow)(a, b),      gr__ipow(a, b),      D(gr_mul(x1, gr_pow(x0, gr_sub(x1, K(1))))), \
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
    X(exp,        1, FLOAT, GR_M(gr__m_exp)(a),                0,                   D(y), D_NONE, D_NONE) /* e^x */ \
    X(exp2,       1, FLOAT, GR_M(gr__m_exp2)(a),            0,                   D(gr_mul(y, K(0.69314718055994530942))), D_NONE, D_NONE) /* 2^x */ \
    X(expm1,      1, FLOAT, GR_M(gr__m_expm1)(a),              0,                   D(gr_add(y, K(1))), D_NONE, D_NONE) /* e^x - 1 */ \
    X(log,        1, FLOAT, GR_M(gr__m_log)(a),                0,                   D(gr_reciprocal(x0)), D_NONE, D_NONE) /* ln x */ \
    X(log2,       1, FLOAT, GR_M(gr__m_log2)(a),            0,                   D(gr_reciprocal(gr_mul(x0, K(0.69314718055994530942)))), D_NONE, D_NONE) /* log2 x */ \
    X(log1p,      1, FLOAT, GR_M(gr__m_log1p)(a),              0,                   D(gr_reciprocal(gr_add(x0, K(1)))), D_NONE, D_NONE) /* ln(1 + x) */ \
    X(sqrt,       1, FLOAT, GR_M(sqrt)(a),              0,                   D(gr_div(K(0.5), y)), D_NONE, D_NONE) /* sqrt x */ \
    X(cbrt,       1, FLOAT, GR_M(gr__m_cbrt)(a),        0,                   D(gr_div(K(1.0 / 3.0), gr_sqr(y))), D_NONE, D_NONE) /* cube root */ \
    X(reciprocal, 1, FLOAT, (GR_T)1 / a,                0,                   D(gr_neg(gr_sqr(y))), D_NONE, D_NONE) /* 1 / x */ \
    /* trigonometric and hyperbolic */ \
    X(sin,        1, FLOAT, GR_M(gr__m_sin)(a),                0,                   D(gr_cos(x0)), D_NONE, D_NONE) /* sin x */ \
    X(cos,        1, FLOAT, GR_M(gr__m_cos)(a),                0,                   D(gr_neg(gr_sin(x0))), D_NONE, D_NONE) /* cos x */ \
    X(tan,        1, FLOAT, GR_M(gr__m_tan)(a),         0,                   D(gr_add(gr_sqr(y), K(1))), D_NONE, D_NONE) /* tan x */ \
    X(arcsin,     1, FLOAT, GR_M(gr__m_arcsin)(a),      0,                   D(gr_reciprocal(gr_sqrt(gr_sub(K(1), gr_sqr(x0))))), D_NONE, D_NONE) /* asin x */ \
    X(arccos,     1, FLOAT, GR_M(gr__m_arccos)(a),      0,                   D(gr_neg(gr_reciprocal(gr_sqrt(gr_sub(K(1), gr_sqr(x0)))))), D_NONE, D_NONE) /* acos x */ \
    X(arctan,     1, FLOAT, GR_M(gr__m_arctan)(a),      0,                   D(gr_reciprocal(gr_add(gr_sqr(x0), K(1)))), D_NONE, D_NONE) /* atan x */ \
    X(arctan2,    2, FLOAT, GR_M(gr__m_arctan2)(a, b),  0,                   D(gr_div(x1, gr_add(gr_sqr(x0), gr_sqr(x1)))), \
                  D(gr_neg(gr_div(x0, gr_add(gr_sqr(x0), gr_sqr(x1))))), D_NONE) /* atan2(a, b) */ \
    X(sinh,       1, FLOAT, GR_M(gr__m_sinh)(a),            0,                   D(gr_cosh(x0)), D_NONE, D_NONE) /* sinh x */ \
    X(cosh,       1, FLOAT, GR_M(gr__m_cosh)(a),            0,                   D(gr_sinh(x0)), D_NONE, D_NONE) /* cosh x */ \
    X(tanh,       1, FLOAT, GR_M(gr__m_tanh)(a),               0,                   D(gr_sub(K(1), gr_sqr(y))), D_NONE, D_NONE) /* tanh x */ \
    X(arcsinh,    1, FLOAT, GR_M(gr__m_arcsinh)(a),     0,                   D(gr_reciprocal(gr_sqrt(gr_add(gr_sqr(x0), K(1))))), D_NONE, D_NONE) /* asinh x */ \
    X(arccosh,    1, FLOAT, GR_M(gr__m_arccosh)(a),     0,                   D(gr_reciprocal(gr_sqrt(gr_sub(gr_sqr(x0), K(1))))), D_NONE, D_NONE) /* acosh x */ \
    X(arctanh,    1, FLOAT, GR_M(gr__m_arctanh)(a),     0,                   D(gr_reciprocal(gr_sub(K(1), gr_sqr(x0)))), D_NONE, D_NONE) /* atanh x */ \
    /* special functions and activations */ \
    X(erf,        1, FLOAT, GR_M(gr__m_erf)(a),             0,                   D(gr_mul(K(1.12837916709551257390), gr_exp(gr_neg(gr_sqr(x0))))), D_NONE, D_NONE) /* erf x */ \
    X(erfc,       1, FLOAT, GR_M(gr__m_erfc)(a),            0,                   D(gr_mul(K(-1.12837916709551257390), gr_exp(gr_neg(gr_sqr(x0))))), D_NONE, D_NONE) /* 1 - erf x */ \
    X(sigmoid,    1, FLOAT, GR_M(gr__m_sigmoid)(a),     0,                   D(gr_mul(y, gr_sub(K(1), y))), D_NONE, D_NONE) /* 1 / (1 + e^-x) */ \
    X(softplus,   1, FLOAT, GR_M(gr__m_softplus)(a),    0,                   D(gr_sigmoid(x0)), D_NONE, D_NONE) /* ln(1 + e^x) */ \
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
    /* ops/dot.c: a sum of outer products is one product of stacked rows (joined) */ \
    GR__FAMILY_DOT(GR__FAMILY_JOIN( \
    X(add,   outer_sum)        /* u1 v1 + u2 v2 (u (m,1), v (1,n)) -> [u1^T; u2^T]^T [v1; v2] */ \
    )) \
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
            side needs run only then); FOLD: with a 0-d output, the sum of all of input 0, which a
            fused group making input 0 may take as it goes (src/fuse.c, gr__sum8: the same bits);
            two joined by _ (NONDIFF_SHAPEREF) are both; 0 otherwise
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
    X(Sum,              1,  1,  reduce,        NULL,         none,       FOLD,             reduce,      reduce,     none)           /* y = sum over axes */ \
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
    X(Join,             -1, 1,  Join,          NULL,         none,       0,                Join,        Join,       none)           /* [x_0 | x_1 | ...] along an axis */ \
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
