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

/* ---- kernels ---------------------------------------------------------------------------------------
   Each is also the text gr_fn_emit_c writes into an emitted file (a GR_KERNEL region, src/emit.c). */

/* GR_KERNEL gr__swap_rows */
static void gr__swap_rows(void *x, int64_t row_elems, int64_t i, int64_t j, size_t es) {
    size_t nb = (size_t)row_elems * es, q;
    unsigned char *a, *b;
    if (i == j) return;
    a = (unsigned char *)x + (size_t)i * nb;
    b = (unsigned char *)x + (size_t)j * nb;
    for (q = 0; q < nb; q++) { unsigned char t = a[q]; a[q] = b[q]; b[q] = t; }
}

/* P A = L U into F (see LUFactor), F holding A (as float64) on entry; right-looking by rows with
   partial pivoting. A zero column leaves a zero pivot (the matrix is singular) and the elimination
   goes on past it, as getrf. */
/* GR_KERNEL gr__lu_factor */
static void gr__lu_factor(double *F, int64_t n) {
    int64_t i, j, k;
    double *piv = F + n * n;
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
/* GR_KERNEL gr__lu_zero_pivot */
static int64_t gr__lu_zero_pivot(const double *F, int64_t n) {
    int64_t k;
    for (k = 0; k < n; k++) if (F[k * n + k] == 0) return k;
    return -1;
}

/* det A: U's diagonal, negated for every row swap */
/* GR_KERNEL gr__lu_det */
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
/* GR_KERNEL gr__lu_logabsdet */
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
/* GR_KERNEL gr__lu_adjugate */
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
/* GR_KERNEL gr__lu_adjugate_f64 */
GR__LU_ADJUGATE(gr__lu_adjugate_f64, double)
/* GR_KERNEL gr__lu_adjugate_f32 */
GR__LU_ADJUGATE(gr__lu_adjugate_f32, float)
/* GR_KERNEL_END */

/* x (n rows of R elements) := A^-1 x, or A^-T x when trans, from A's factor F. A = P^T L U, so
   A x = b is L y = P b then U x = y; A^T = U^T L^T P, so A^T x = b is U^T z = b, L^T w = z and
   x = P^T w (the swaps undone in reverse). Row-oriented: every inner loop runs along a row. */
/* GR_KERNEL gr__lu_solve */
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
/* GR_KERNEL gr__lu_solve_f64 */
GR__LU_SOLVE(gr__lu_solve_f64, double)
/* GR_KERNEL gr__lu_solve_f32 */
GR__LU_SOLVE(gr__lu_solve_f32, float)
/* GR_KERNEL_END */

static void gr__lu_solve(const double *F, int64_t n, int trans, gr_array *x) {
    int64_t R = n ? x->size / n : 0;
    if (x->dtype == GR_F64) gr__lu_solve_f64(F, n, trans, (double *)x->data, R);
    else gr__lu_solve_f32(F, n, trans, (float *)x->data, R);
}

/* L L^T = A from A's lower triangle, by rows (Cholesky-Banachiewicz): L[i][j] needs rows i and j
   of L up to column j, both contiguous. Sums in float64. Returns -1, or the row whose pivot is not
   positive (the leading minor of that order is not positive: A is not positive definite). */
/* GR_KERNEL gr__cholesky */
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
/* GR_KERNEL gr__cholesky_f64 */
GR__CHOLESKY(gr__cholesky_f64, double)
/* GR_KERNEL gr__cholesky_f32 */
GR__CHOLESKY(gr__cholesky_f32, float)

/* GR_KERNEL gr__all_finite_f64 */
static int gr__all_finite_f64(const double *x, int64_t size) {
    int64_t k;
    for (k = 0; k < size; k++) if (!isfinite(x[k])) return 0;
    return 1;
}
/* GR_KERNEL gr__all_finite_f32 */
static int gr__all_finite_f32(const float *x, int64_t size) {
    int64_t k;
    for (k = 0; k < size; k++) if (!isfinite(x[k])) return 0;
    return 1;
}
/* GR_KERNEL_END */
static int gr__all_finite(const gr_array *a) {
    if (a->dtype == GR_F64) return gr__all_finite_f64((const double *)a->data, a->size);
    if (a->dtype == GR_F32) return gr__all_finite_f32((const float *)a->data, a->size);
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
    int64_t n = in[0]->shape[0];
    (void)node;
    gr__convert(GR_F64, out[0]->data, in[0]->dtype, in[0]->data, n * n);
    gr__lu_factor((double *)out[0]->data, n);
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
/* y[o] = sum_i x[o, i, i] over outer matrices n x m: floats summed in float64, int64 wrapping (as
   NumPy's int64 sum) */
/* GR_KERNEL gr__trace */
#define GR__TRACE(fn, T, TS) \
    static void fn(const T *x, T *y, int64_t outer, int64_t n, int64_t m) { \
        int64_t d = n < m ? n : m, o, i; \
        for (o = 0; o < outer; o++) { \
            TS s = 0; \
            for (i = 0; i < d; i++) s += (TS)x[o * n * m + i * m + i]; \
            y[o] = (T)s; \
        } \
    }
/* GR_KERNEL gr__trace_f64 */
GR__TRACE(gr__trace_f64, double, double)
/* GR_KERNEL gr__trace_f32 */
GR__TRACE(gr__trace_f32, float, double)
/* GR_KERNEL gr__trace_i64 */
GR__TRACE(gr__trace_i64, int64_t, uint64_t)
/* GR_KERNEL_END */

static gr_status gr__Trace_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[0];
    int64_t n = x->shape[x->ndim - 2], m = x->shape[x->ndim - 1], outer = out[0]->size;
    (void)node;
    if (x->dtype == GR_I64) gr__trace_i64((const int64_t *)x->data, (int64_t *)out[0]->data, outer, n, m);
    else if (x->dtype == GR_F32) gr__trace_f32((const float *)x->data, (float *)out[0]->data, outer, n, m);
    else gr__trace_f64((const double *)x->data, (double *)out[0]->data, outer, n, m);
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

/* GR_KERNEL gr__triscale */
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
/* GR_KERNEL gr__triscale_f64 */
GR__TRISCALE(gr__triscale_f64, double)
/* GR_KERNEL gr__triscale_f32 */
GR__TRISCALE(gr__triscale_f32, float)
/* GR_KERNEL_END */

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

/* ---- C code generation (gr_fn_emit_c): the same kernels, called from the emitted function -------- */

/* writes kernel name (a "%s" in it: the dtype's suffix, f64 or f32) before the function */
static void gr__la_need(gr__em *e, const char *name, int dt) {
    char full[48];
    snprintf(full, sizeof full, name, dt == GR_F32 ? "f32" : "f64");
    if (!gr__em_kernel(e, full)) gr__em_fail(e, GR_ERR_VALUE, "gr_fn_emit_c: no kernel %s", full);
}
/* return GR_ERR_RUNTIME from the emitted function when A's factor F has a zero pivot */
static void gr__la_em_singular(gr__em *e, const char *F, int64_t n) {
    gr__la_need(e, "gr__lu_zero_pivot", 0);
    gr__em_line(e, "if (gr__lu_zero_pivot(%s, %lld) >= 0) return %d;", F, (long long)n, (int)GR_ERR_RUNTIME);
}
/* X (n rows of R) := op(A)^-1 X from A's factor F */
static void gr__la_em_solve(gr__em *e, int dt, const char *F, int64_t n, int trans, const char *X, int64_t R) {
    gr__la_need(e, "gr__swap_rows", 0);
    gr__la_need(e, "gr__lu_solve", 0);
    gr__la_need(e, "gr__lu_solve_%s", dt);
    gr__em_line(e, "gr__lu_solve_%s(%s, %lld, %d, %s, %lld);", dt == GR_F32 ? "f32" : "f64", F, (long long)n, trans, X, (long long)R);
}
/* gr__la_overflow_check: GR_ERR_RUNTIME when X is not finite although A (and B, when given) are */
static void gr__la_em_overflow(gr__em *e, int dt, const char *X, int64_t xs, const char *A, int64_t as, const char *B, int64_t bs) {
    const char *sf = dt == GR_F32 ? "f32" : "f64";
    char b[GR__EM_OPND + 64] = "";
    gr__la_need(e, "gr__all_finite_%s", dt);
    if (B) snprintf(b, sizeof b, " && gr__all_finite_%s(%s, %lld)", sf, B, (long long)bs);
    gr__em_line(e, "if (!gr__all_finite_%s(%s, %lld) && gr__all_finite_%s(%s, %lld)%s) return %d;", sf, X, (long long)xs, sf, A,
                (long long)as, b, (int)GR_ERR_RUNTIME);
}

/* F := A as float64 (gr__convert), then factored in place */
static gr_status gr__LUFactor_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    int64_t n = in[0]->shape[0];
    const char *A = gr__em_in(e, 0), *F = gr__em_out(e, 0);
    (void)node; (void)out;
    if (n == 0) return GR_OK;
    if (in[0]->dtype == GR_F64) gr__em_line(e, "memcpy(%s, %s, %lu);", F, A, (unsigned long)(sizeof(double) * (size_t)(n * n)));
    else gr__em_line(e, "for (int64_t k = 0; k < %lld; k++) %s[k] = (double)%s[k];", (long long)(n * n), F, A);
    gr__la_need(e, "gr__swap_rows", 0);
    gr__la_need(e, "gr__lu_factor", 0);
    gr__em_line(e, "gr__lu_factor(%s, %lld);", F, (long long)n);
    return GR_OK;
}
/* X := I, then X := A^-1 X */
static gr_status gr__MatrixInverse_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    int64_t n = in[0]->shape[0];
    int dt = out[0]->dtype;
    const char *A = gr__em_in(e, 0), *F = gr__em_in(e, 1), *X = gr__em_out(e, 0);
    (void)node;
    gr__la_em_singular(e, F, n);
    if (n == 0) return GR_OK;
    gr__em_line(e, "memset(%s, 0, %lu);", X, (unsigned long)((size_t)(n * n) * gr__dsize(dt)));
    gr__em_line(e, "for (int64_t k = 0; k < %lld; k++) %s[k * %lld + k] = 1;", (long long)n, X, (long long)n);
    gr__la_em_solve(e, dt, F, n, 0, X, n);
    gr__la_em_overflow(e, dt, X, n * n, A, n * n, NULL, 0);
    return GR_OK;
}
static gr_status gr__Det_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)node;
    gr__la_need(e, "gr__lu_det", 0);
    gr__em_line(e, "%s[0] = (%s)gr__lu_det(%s, %lld);", gr__em_out(e, 0), gr__em_ctype(out[0]->dtype), gr__em_in(e, 1),
                (long long)in[0]->shape[0]);
    return GR_OK;
}
/* NaN for the log of a negative determinant */
static gr_status gr__LogDet_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)node;
    gr__la_need(e, "gr__lu_logabsdet", 0);
    gr__em_line(e, "{ int sign; double l = gr__lu_logabsdet(%s, %lld, &sign); %s[0] = (%s)(sign < 0 ? NAN : l); }", gr__em_in(e, 1),
                (long long)in[0]->shape[0], gr__em_out(e, 0), gr__em_ctype(out[0]->dtype));
    return GR_OK;
}
static gr_status gr__Adjugate_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)node;
    gr__la_need(e, "gr__lu_adjugate", 0);
    gr__la_need(e, "gr__lu_adjugate_%s", out[0]->dtype);
    gr__em_line(e, "gr__lu_adjugate_%s(%s, %lld, %s);", out[0]->dtype == GR_F32 ? "f32" : "f64", gr__em_in(e, 1), (long long)in[0]->shape[0],
                gr__em_out(e, 0));
    return GR_OK;
}
/* x := b, then x := op(A)^-1 x */
static gr_status gr__Solve_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    int64_t n = in[0]->shape[0], size = in[1]->size;
    int dt = out[0]->dtype;
    const char *A = gr__em_in(e, 0), *B = gr__em_in(e, 1), *F = gr__em_in(e, 2), *X = gr__em_out(e, 0);
    gr__la_em_singular(e, F, n);
    if (size == 0) return GR_OK;
    if (strcmp(X, B) != 0) gr__em_line(e, "memcpy(%s, %s, %lu);", X, B, (unsigned long)((size_t)size * gr__dsize(dt)));
    gr__la_em_solve(e, dt, F, n, ((const gr__solve_params *)gr__params(node))->trans, X, n ? size / n : 0);
    gr__la_em_overflow(e, dt, X, size, A, n * n, B, size);
    return GR_OK;
}
static gr_status gr__Cholesky_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    int dt = out[0]->dtype;
    (void)node;
    gr__la_need(e, "gr__cholesky", 0);
    gr__la_need(e, "gr__cholesky_%s", dt);
    gr__em_line(e, "if (gr__cholesky_%s(%s, %s, %lld) >= 0) return %d;", dt == GR_F32 ? "f32" : "f64", gr__em_in(e, 0), gr__em_out(e, 0),
                (long long)in[0]->shape[0], (int)GR_ERR_RUNTIME);
    return GR_OK;
}
static gr_status gr__Trace_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr_array *x = in[0];
    const char *sf = x->dtype == GR_I64 ? "i64" : x->dtype == GR_F32 ? "f32" : "f64";
    char name[32];
    (void)node;
    snprintf(name, sizeof name, "gr__trace_%s", sf);
    gr__la_need(e, "gr__trace", 0);
    gr__la_need(e, name, 0);
    gr__em_line(e, "%s(%s, %s, %lld, %lld, %lld);", name, gr__em_in(e, 0), gr__em_out(e, 0), (long long)out[0]->size,
                (long long)x->shape[x->ndim - 2], (long long)x->shape[x->ndim - 1]);
    return GR_OK;
}
static gr_status gr__TriScale_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const double *w = ((const gr__triscale_params *)gr__params(node))->w;
    const gr_array *x = in[0];
    int64_t n, m, outer;
    char ws[3][64];
    int k;
    (void)out;
    if (x->ndim < 2 || !gr__is_float(x->dtype))
        return gr__em_fail(e, GR_ERR_TYPE, "gr_fn_emit_c: TriScale of %s must be a float tensor of 2 dimensions or more", gr__d(gr__in(node)[0]).s);
    n = x->shape[x->ndim - 2];
    m = x->shape[x->ndim - 1];
    outer = n * m != 0 ? x->size / (n * m) : 0;
    for (k = 0; k < 3; k++) snprintf(ws[k], sizeof ws[k], "%s", gr__em_value(e, GR_F64, w, k));
    gr__la_need(e, "gr__triscale", 0);
    gr__la_need(e, "gr__triscale_%s", x->dtype);
    gr__em_line(e, "{ const double w[3] = { %s, %s, %s }; gr__triscale_%s(%s, %s, %lld, %lld, %lld, w); }", ws[0], ws[1], ws[2],
                x->dtype == GR_F32 ? "f32" : "f64", gr__em_in(e, 0), gr__em_out(e, 0), (long long)outer, (long long)n, (long long)m);
    return GR_OK;
}
#endif /* GR_NO_LINALG */
