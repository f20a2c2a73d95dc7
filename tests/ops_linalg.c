/* tests/ops_linalg.c: the linear algebra of ops/linalg.c: gr_matrix_inverse, gr_det, gr_logdet,
   gr_solve, gr_cholesky, gr_trace, and the internal rows LUFactor (the factorisation the others
   read), Adjugate (det's gradient) and TriScale (in the derivatives of trace and cholesky).
     - values against plain-C references computed in long double: 50x50 well-conditioned problems
       to 1e-10 relative (normwise) in float64, to 1e-4 in float32, and small cases;
     - derivative specs of every row; the closed forms of the gradients on a 50x50 problem; the
       derivatives of det where A is singular (rank n - 1 and n - 2, sizes 1 to 4): the gradient
       (the transposed adjugate) and the R-op against central differences of det in long double and
       against the closed form; the second derivatives there (a call-time error) and where A is
       invertible; logdet's derivatives at a singular A (a call-time error); Jacobians and
       Hessians through the batching rules, against finite differences;
     - the errors: build-time types and shapes of each constructor; at call time, singular and
       numerically singular matrices, matrices that are not positive definite, shapes that do not
       fit. */
#include "ops.h"

/* ==== references ========================================================================================== */


/* random entries in [-1, 1) plus n on the diagonal (condition number a few units); with `shuffle`
   the rows come in reverse order, so that the dominant entries are off the diagonal and the LU
   must pivot */
static gr_array *gtl_well_conditioned(gtf_rng *rng, gr_dtype dt, int64_t n, int shuffle) {
    gr_array *a = gtl_matrix(dt, n, n, NULL);
    int64_t i, j;
    for (i = 0; i < n; i++)
        for (j = 0; j < n; j++) {
            double v = gtf_uniform(rng, -1, 1) + (i == j ? (double)n : 0.0);
            gr_array_set(a, (shuffle ? n - 1 - i : i) * n + j, v);
        }
    return a;
}
/* M M^T / n + I for a random M: symmetric positive definite, well conditioned */
static gr_array *gtl_spd(gtf_rng *rng, gr_dtype dt, int64_t n) {
    gr_array *a = gtl_matrix(dt, n, n, NULL);
    double *m = (double *)malloc(sizeof(double) * (size_t)(n * n));
    int64_t i, j, k;
    for (k = 0; k < n * n; k++) m[k] = gtf_uniform(rng, -1, 1);
    for (i = 0; i < n; i++)
        for (j = 0; j < n; j++) {
            long double s = 0;
            for (k = 0; k < n; k++) s += (long double)m[i * n + k] * m[j * n + k];
            gr_array_set(a, i * n + j, (double)(s / n) + (i == j ? 1.0 : 0.0));
        }
    free(m);
    return a;
}

/* x + c I in x's dtype (x square, static size n) */
static gr_var *gtl_shift(gr_graph *g, gr_var *x, int64_t n, double c) {
    gr_array *e = gtl_matrix(gr_var_dtype(x), n, n, NULL);
    gr_var *ev;
    int64_t k;
    for (k = 0; k < n; k++) gr_array_set(e, k * n + k, c);
    ev = gr_constant(g, e);
    gr_array_free(e);
    return gr_add(x, ev);
}

/* ---- references in long double ------------------------------------------------------------------- */

/* LU with partial pivoting of a (n x n) in place; returns the sign of the permutation, 0 if singular */
static int gtl_ref_lu(long double *a, int64_t n, int64_t *perm) {
    int64_t i, j, k;
    int sign = 1;
    for (i = 0; i < n; i++) perm[i] = i;
    for (k = 0; k < n; k++) {
        int64_t p = k;
        for (i = k + 1; i < n; i++) if (fabsl(a[i * n + k]) > fabsl(a[p * n + k])) p = i;
        if (a[p * n + k] == 0) return 0;
        if (p != k) {
            int64_t t = perm[k]; perm[k] = perm[p]; perm[p] = t;
            for (j = 0; j < n; j++) { long double u = a[k * n + j]; a[k * n + j] = a[p * n + j]; a[p * n + j] = u; }
            sign = -sign;
        }
        for (i = k + 1; i < n; i++) {
            long double l = a[i * n + k] / a[k * n + k];
            a[i * n + k] = l;
            for (j = k + 1; j < n; j++) a[i * n + j] -= l * a[k * n + j];
        }
    }
    return sign;
}
static long double *gtl_ld(const gr_array *a) {
    long double *m = (long double *)malloc(sizeof(long double) * (size_t)(a->size ? a->size : 1));
    int64_t k;
    for (k = 0; k < a->size; k++) m[k] = gr_array_get(a, k);
    return m;
}
/* A^-1 B (B: n x r, or n when r_is_vec), as float64 */
static gr_array *gtl_ref_solve(const gr_array *A, const gr_array *B) {
    int64_t n = A->shape[0], r = B->ndim == 2 ? B->shape[1] : 1, i, j, c, *perm = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n + 1));
    long double *a = gtl_ld(A), *x = (long double *)malloc(sizeof(long double) * (size_t)(n * r + 1));
    gr_array *out = gr_array_new(GR_F64, B->ndim, B->shape);
    gtl_ref_lu(a, n, perm);
    for (c = 0; c < r; c++) {
        long double *y = x + c * n;
        for (i = 0; i < n; i++) y[i] = gr_array_get(B, perm[i] * r + c);
        for (i = 0; i < n; i++) for (j = 0; j < i; j++) y[i] -= a[i * n + j] * y[j];
        for (i = n - 1; i >= 0; i--) {
            for (j = i + 1; j < n; j++) y[i] -= a[i * n + j] * y[j];
            y[i] /= a[i * n + i];
        }
        for (i = 0; i < n; i++) ((double *)out->data)[i * r + c] = (double)y[i];
    }
    free(a); free(x); free(perm);
    return out;
}
static gr_array *gtl_ref_inverse(const gr_array *A) {
    int64_t n = A->shape[0], k;
    gr_array *I = gtl_matrix(GR_F64, n, n, NULL), *X;
    for (k = 0; k < n; k++) gr_array_set(I, k * n + k, 1.0);
    X = gtl_ref_solve(A, I);
    gr_array_free(I);
    return X;
}
/* det A, and log|det A| with its sign */
static long double gtl_ref_det(const gr_array *A, long double *logabs, int *sign) {
    int64_t n = A->shape[0], k, *perm = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n + 1));
    long double *a = gtl_ld(A), d;
    int s = gtl_ref_lu(a, n, perm);
    d = s;
    *logabs = 0;
    for (k = 0; s && k < n; k++) {
        d *= a[k * n + k];
        *logabs += logl(fabsl(a[k * n + k]));
        if (a[k * n + k] < 0) s = -s;
    }
    *sign = s;
    if (!s) *logabs = -INFINITY;
    free(a); free(perm);
    return d;
}
static gr_array *gtl_ref_cholesky(const gr_array *A) {
    int64_t n = A->shape[0], i, j, k;
    long double *l = (long double *)calloc((size_t)(n * n + 1), sizeof(long double));
    gr_array *out = gtl_matrix(GR_F64, n, n, NULL);
    for (j = 0; j < n; j++) {
        long double s = gr_array_get(A, j * n + j);
        for (k = 0; k < j; k++) s -= l[j * n + k] * l[j * n + k];
        l[j * n + j] = sqrtl(s);
        for (i = j + 1; i < n; i++) {
            long double t = gr_array_get(A, i * n + j);
            for (k = 0; k < j; k++) t -= l[i * n + k] * l[j * n + k];
            l[i * n + j] = t / l[j * n + j];
        }
    }
    for (k = 0; k < n * n; k++) ((double *)out->data)[k] = (double)l[k];
    free(l);
    return out;
}


/* ==== forward values ============================================================================== */

/* the op's value on a 50x50 problem of each kind and dtype, against the reference */
typedef gr_var *(*gtl_unary)(gr_var *);

static void gtl_square_case(gr_dtype dt, int kind, gtl_unary op, gr_array *(*ref)(const gr_array *), const char *name) {
    gtf_rng rng;
    gr_graph *g = gr_graph_new();
    gr_var *A = gr_matrix(g, dt, "A");
    gr_array *a, *got, *want;
    char label[128];
    rng.s = 50 + (uint64_t)kind;
    a = kind == 2 ? gtl_spd(&rng, dt, 50) : gtl_well_conditioned(&rng, dt, 50, kind);
    if (op == gr_det && kind != 2) {   /* det of the matrix / 50: of order 1, where float32 holds it */
        int64_t k;
        for (k = 0; k < a->size; k++) gr_array_set(a, k, gr_array_get(a, k) / 50);
    }
    want = ref(a);
    snprintf(label, sizeof label, "%s of a 50x50 %s matrix (%s)", name, kind == 2 ? "positive definite" : kind ? "pivoting" : "dominant",
             gr_dtype_name(dt));
    got = gtl_eval(1, &A, (const gr_array *const *)&a, op(A), label);
    if (got) CHECK_MSG(got->dtype == dt, "%s: dtype %s", label, gr_dtype_name(got->dtype));
    gtl_close(got, want, dt == GR_F64 ? 1e-10 : 1e-4, label);
    gr_array_free(a); gr_array_free(got); gr_array_free(want);
    gr_graph_free(g);
}

TEST(gtl_forward_MatrixInverse) {
    int kind, d;
    for (d = 0; d < 2; d++)
        for (kind = 0; kind < 3; kind++) gtl_square_case(d ? GR_F32 : GR_F64, kind, gr_matrix_inverse, gtl_ref_inverse, "gr_matrix_inverse");
    {   /* small: 0x0, 1x1, 2x2 exactly, an int64 matrix (float64 result), a static shape */
        gr_graph *g = gr_graph_new();
        int64_t s22[2] = { 2, 2 }, s00[2] = { 0, 0 };
        gr_var *A = gr_matrix(g, GR_F64, "A"), *Ai = gr_matrix(g, GR_I64, "Ai"), *As = gr_tensor(g, GR_F64, 2, s22, "As");
        double a2[4] = { 4, 7, 2, 6 }, w2[4] = { 0.6, -0.7, -0.2, 0.4 }, one = 4;
        gr_array *a = gtl_matrix(GR_F64, 2, 2, a2), *w = gtl_matrix(GR_F64, 2, 2, w2), *ai = gtl_matrix(GR_I64, 2, 2, a2);
        gr_array *e = gr_array_new(GR_F64, 2, s00), *o = gtl_matrix(GR_F64, 1, 1, &one), *wo;
        gtf_expect(g, 1, &A, (const gr_array *const *)&a, gr_matrix_inverse(A), GR_F64, w, 1e-15, "inverse of [[4,7],[2,6]]");
        gtf_expect(g, 1, &As, (const gr_array *const *)&a, gr_matrix_inverse(As), GR_F64, w, 1e-15, "inverse, static (2,2)");
        gtf_static_shape_is(gr_matrix_inverse(As), 2, s22, "inverse, static (2,2)");
        gtf_expect(g, 1, &Ai, (const gr_array *const *)&ai, gr_matrix_inverse(Ai), GR_F64, w, 1e-15, "inverse of an int64 matrix");
        gtf_expect(g, 1, &A, (const gr_array *const *)&e, gr_matrix_inverse(A), GR_F64, e, 0, "inverse of a 0x0 matrix");
        one = 0.25;
        wo = gtl_matrix(GR_F64, 1, 1, &one);
        gtf_expect(g, 1, &A, (const gr_array *const *)&o, gr_matrix_inverse(A), GR_F64, wo, 0, "inverse of [[4]]");
        gr_array_free(a); gr_array_free(w); gr_array_free(ai); gr_array_free(e); gr_array_free(o); gr_array_free(wo);
        gr_graph_free(g);
    }
}

static gr_array *gtl_ref_det_arr(const gr_array *A) {
    long double l;
    int s;
    return gr_array_scalar(GR_F64, (double)gtl_ref_det(A, &l, &s));
}
static gr_array *gtl_ref_logdet_arr(const gr_array *A) {
    long double l;
    int s;
    gtl_ref_det(A, &l, &s);
    return gr_array_scalar(GR_F64, s < 0 ? NAN : (double)l);
}

TEST(gtl_forward_Det) {
    int kind, d;
    for (d = 0; d < 2; d++)
        for (kind = 0; kind < 3; kind++) gtl_square_case(d ? GR_F32 : GR_F64, kind, gr_det, gtl_ref_det_arr, "gr_det");
    {   /* singular: exactly 0, not an error; a row swap flips the sign; 0x0 gives 1 */
        gr_graph *g = gr_graph_new();
        gr_var *A = gr_matrix(g, GR_F64, "A"), *Ai = gr_matrix(g, GR_I64, "Ai");
        double sing[9] = { 1, 2, 3, 2, 4, 6, 1, 1, 1 }, sw[4] = { 0, 1, 1, 0 }, z = 0;
        int64_t s00[2] = { 0, 0 };
        gr_array *a = gtl_matrix(GR_F64, 3, 3, sing), *zero = gr_array_scalar(GR_F64, 0), *b = gtl_matrix(GR_F64, 2, 2, sw);
        gr_array *m1 = gr_array_scalar(GR_F64, -1), *e = gr_array_new(GR_F64, 2, s00), *one = gr_array_scalar(GR_F64, 1);
        gr_array *zr = gtl_matrix(GR_F64, 1, 1, &z), *bi = gtl_matrix(GR_I64, 2, 2, sw);
        gtf_expect(g, 1, &A, (const gr_array *const *)&a, gr_det(A), GR_F64, zero, 0, "det of a singular matrix is 0");
        gtf_expect(g, 1, &A, (const gr_array *const *)&zr, gr_det(A), GR_F64, zero, 0, "det of [[0]]");
        gtf_expect(g, 1, &A, (const gr_array *const *)&b, gr_det(A), GR_F64, m1, 0, "det of a swap");
        gtf_expect(g, 1, &Ai, (const gr_array *const *)&bi, gr_det(Ai), GR_F64, m1, 0, "det of an int64 swap");
        gtf_expect(g, 1, &A, (const gr_array *const *)&e, gr_det(A), GR_F64, one, 0, "det of a 0x0 matrix");
        gr_array_free(a); gr_array_free(zero); gr_array_free(b); gr_array_free(m1); gr_array_free(e); gr_array_free(one);
        gr_array_free(zr); gr_array_free(bi);
        gr_graph_free(g);
    }
}

TEST(gtl_forward_LogDet) {
    int kind, d;
    for (d = 0; d < 2; d++)
        for (kind = 0; kind < 3; kind++) gtl_square_case(d ? GR_F32 : GR_F64, kind, gr_logdet, gtl_ref_logdet_arr, "gr_logdet");
    {   /* -inf when singular, NaN when negative, no overflow where det itself overflows */
        gr_graph *g = gr_graph_new();
        gr_var *A = gr_matrix(g, GR_F64, "A");
        double sing[4] = { 1, 2, 2, 4 }, neg[4] = { 0, 1, 1, 0 }, big[9] = { 1e200, 0, 0, 0, 1e200, 0, 0, 0, 1e-50 };
        gr_array *a = gtl_matrix(GR_F64, 2, 2, sing), *n = gtl_matrix(GR_F64, 2, 2, neg), *bg = gtl_matrix(GR_F64, 3, 3, big);
        gr_array *minf = gr_array_scalar(GR_F64, -INFINITY), *nan = gr_array_scalar(GR_F64, NAN);
        gr_array *wl = gr_array_scalar(GR_F64, 350 * log(10.0)), *inf = gr_array_scalar(GR_F64, INFINITY);
        gtf_expect(g, 1, &A, (const gr_array *const *)&a, gr_logdet(A), GR_F64, minf, 0, "logdet of a singular matrix is -inf");
        gtf_expect(g, 1, &A, (const gr_array *const *)&n, gr_logdet(A), GR_F64, nan, 0, "logdet with det < 0 is NaN");
        gtf_expect(g, 1, &A, (const gr_array *const *)&bg, gr_logdet(A), GR_F64, wl, 1e-14, "logdet of det 1e350");
        gtf_expect(g, 1, &A, (const gr_array *const *)&bg, gr_det(A), GR_F64, inf, 0, "det 1e350 overflows");
        gr_array_free(a); gr_array_free(n); gr_array_free(bg); gr_array_free(minf); gr_array_free(nan); gr_array_free(wl);
        gr_array_free(inf);
        gr_graph_free(g);
    }
}

static void gtl_solve_case(gr_dtype dt, int kind, int rhs_cols) {
    gtf_rng rng;
    gr_graph *g = gr_graph_new();
    gr_var *ins[2], *x;
    gr_array *arr[2], *got, *want;
    int64_t n = 50;
    char label[128];
    rng.s = 60 + (uint64_t)kind;
    ins[0] = gr_matrix(g, dt, "A");
    ins[1] = rhs_cols ? gr_matrix(g, dt, "b") : gr_vector(g, dt, "b");
    arr[0] = gtl_well_conditioned(&rng, dt, n, kind);
    if (rhs_cols) arr[1] = gtf_random(&rng, dt, 2, (int64_t[2]){ n, rhs_cols }, -1, 1);
    else arr[1] = gtf_random(&rng, dt, 1, &n, -1, 1);
    want = gtl_ref_solve(arr[0], arr[1]);
    x = gr_solve(ins[0], ins[1]);
    snprintf(label, sizeof label, "gr_solve 50x50 %s, b %s (%s)", kind ? "pivoting" : "dominant", rhs_cols ? "(50,7)" : "(50,)",
             gr_dtype_name(dt));
    got = gtl_eval(2, ins, (const gr_array *const *)arr, x, label);
    gtl_close(got, want, dt == GR_F64 ? 1e-10 : 1e-4, label);
    gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(got); gr_array_free(want);
    gr_graph_free(g);
}

TEST(gtl_forward_Solve) {
    int d, kind;
    for (d = 0; d < 2; d++)
        for (kind = 0; kind < 2; kind++) {
            gtl_solve_case(d ? GR_F32 : GR_F64, kind, 0);
            gtl_solve_case(d ? GR_F32 : GR_F64, kind, 7);
        }
    {   /* small exact cases: mixed dtypes promote, int64 operands give float64 */
        gr_graph *g = gr_graph_new();
        gr_var *ins[2];
        double a2[4] = { 2, 1, 1, 3 }, b2[2] = { 3, 5 }, x2[2] = { 0.8, 1.4 };
        int64_t two = 2;
        gr_array *arr[2], *want = gr_array_from(GR_F64, 1, &two, x2);
        ins[0] = gr_matrix(g, GR_F32, "A");
        ins[1] = gr_vector(g, GR_F64, "b");
        arr[0] = gtl_matrix(GR_F32, 2, 2, a2);
        arr[1] = gr_array_from(GR_F64, 1, &two, b2);
        gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_solve(ins[0], ins[1]), GR_F64, want, 1e-15, "solve f32 A, f64 b");
        gr_array_free(arr[0]); gr_array_free(arr[1]);
        ins[0] = gr_matrix(g, GR_I64, "Ai");
        ins[1] = gr_vector(g, GR_I64, "bi");
        arr[0] = gtl_matrix(GR_I64, 2, 2, a2);
        arr[1] = gr_array_new(GR_I64, 1, &two);
        gr_array_set(arr[1], 0, 3); gr_array_set(arr[1], 1, 5);
        gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_solve(ins[0], ins[1]), GR_F64, want, 1e-15, "solve int64");
        gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(want);
        gr_graph_free(g);
    }
}

TEST(gtl_forward_Cholesky) {
    gtl_square_case(GR_F64, 2, gr_cholesky, gtl_ref_cholesky, "gr_cholesky");
    gtl_square_case(GR_F32, 2, gr_cholesky, gtl_ref_cholesky, "gr_cholesky");
    {   /* the upper triangle is never read; L is lower with zeros above; 0x0 */
        gr_graph *g = gr_graph_new();
        gr_var *A = gr_matrix(g, GR_F64, "A");
        double a[9] = { 4, 99, NAN, 2, 5, -7, -2, 1, 3 }, l[9] = { 2, 0, 0, 1, 2, 0, -1, 1, 1 };
        int64_t s00[2] = { 0, 0 };
        gr_array *aa = gtl_matrix(GR_F64, 3, 3, a), *wl = gtl_matrix(GR_F64, 3, 3, l), *e = gr_array_new(GR_F64, 2, s00);
        gtf_expect(g, 1, &A, (const gr_array *const *)&aa, gr_cholesky(A), GR_F64, wl, 1e-15, "cholesky reads the lower triangle");
        gtf_expect(g, 1, &A, (const gr_array *const *)&e, gr_cholesky(A), GR_F64, e, 0, "cholesky of 0x0");
        gr_array_free(aa); gr_array_free(wl); gr_array_free(e);
        gr_graph_free(g);
    }
}

TEST(gtl_forward_Trace) {
    static const gr_dtype dts[4] = { GR_F64, GR_F32, GR_I64, GR_BOOL };
    static const int64_t shapes[][2] = { { 3, 3 }, { 2, 5 }, { 5, 2 }, { 0, 4 }, { 1, 1 } };
    gtf_rng rng;
    int d, c, dyn;
    rng.s = 70;
    for (d = 0; d < 4; d++)
        for (c = 0; c < 5; c++)
            for (dyn = 0; dyn < 2; dyn++) {
                gr_graph *g = gr_graph_new();
                gr_var *x = gtf_input(g, dts[d], 2, shapes[c], dyn, "x");
                gr_array *a = gtf_random(&rng, dts[d], 2, shapes[c], -5, 5), *want;
                gr_dtype odt = dts[d] == GR_BOOL ? GR_I64 : dts[d];
                int64_t i, m = shapes[c][0] < shapes[c][1] ? shapes[c][0] : shapes[c][1];
                double s = 0;
                char label[96];
                for (i = 0; i < m; i++) s += gr_array_get(a, i * shapes[c][1] + i);
                want = gr_array_scalar(odt == GR_F64 || odt == GR_F32 ? GR_F64 : GR_I64, s);
                snprintf(label, sizeof label, "gr_trace (%lld,%lld) %s %s", (long long)shapes[c][0], (long long)shapes[c][1],
                         gr_dtype_name(dts[d]), dyn ? "dynamic" : "static");
                gtf_expect(g, 1, &x, (const gr_array *const *)&a, gr_trace(x), odt, want, odt == GR_F32 ? 1e-6 : 1e-15, label);
                gr_array_free(a); gr_array_free(want);
                gr_graph_free(g);
            }
}

/* the output variable of the first node named `op` above v (a breadth-first walk), or NULL */
static gr_var *gtl_find(gr_var *v, const char *op) {
    gr_var *queue[256];
    int head = 0, tail = 0, i;
    queue[tail++] = v;
    while (head < tail) {
        gr_node *n = gr_var_owner(queue[head++]);
        if (!n) continue;
        if (strcmp(gr_node_op(n)->name, op) == 0) return gr_node_output(n, 0);
        for (i = 0; i < gr_node_n_inputs(n) && tail < 256; i++) queue[tail++] = gr_node_input(n, i);
    }
    return NULL;
}

/* ---- the adjugate ------------------------------------------------------------------------------- */

/* det of the n x n matrix a (row stride `stride`) by expansion along the first row, in long double:
   exact for the small integer matrices below (n <= 7) */
static long double gtl_laplace_det(int n, const long double *a, int stride) {
    long double s = 0, m[49];
    int c, i, j, q;
    if (n == 0) return 1;
    if (n == 1) return a[0];
    for (c = 0; c < n; c++) {
        if (a[c] == 0) continue;
        for (i = 1, q = 0; i < n; i++) for (j = 0; j < n; j++) if (j != c) m[q++] = a[i * stride + j];
        s += (c % 2 ? -a[c] : a[c]) * gtl_laplace_det(n - 1, m, n - 1);
    }
    return s;
}
/* adj A[i][j] = (-1)^(i+j) det(A without row j and column i), in long double (n <= 8) */
static void gtl_ref_adjugate(int n, const long double *a, long double *adj) {
    long double m[49];
    int i, j, r, c, q;
    for (i = 0; i < n; i++)
        for (j = 0; j < n; j++) {
            for (r = 0, q = 0; r < n; r++) if (r != j) for (c = 0; c < n; c++) if (c != i) m[q++] = a[r * n + c];
            adj[i * n + j] = ((i + j) % 2 ? -1 : 1) * gtl_laplace_det(n - 1, m, n - 1);
        }
}
/* max |a| over the entries of an n x n matrix, raised to n - 1: the scale of adj A */
static double gtl_adj_scale(int n, const long double *a) {
    long double m = 0, s = 1;
    int k;
    for (k = 0; k < n * n; k++) if (fabsl(a[k]) > m) m = fabsl(a[k]);
    for (k = 0; k < n - 1; k++) s *= m;
    return s > 1 ? (double)s : 1.0;
}
/* an n x n integer matrix of rank r (entries in [-3, 3] times [-3, 3], summed over r), the rows of
   the first factor drawn so that the rank is r exactly (checked on the adjugate for r = n - 1) */
static void gtl_rank_matrix(gtf_rng *rng, int n, int r, long double *a) {
    long double adj[49];
    int tries, i, j, k;
    for (tries = 0; tries < 100; tries++) {
        long double B[49], C[49], d;
        int nz = 0;
        for (k = 0; k < n * r; k++) { B[k] = (long double)gtf_int(rng, -3, 3); C[k] = (long double)gtf_int(rng, -3, 3); }
        for (i = 0; i < n; i++)
            for (j = 0; j < n; j++) {
                long double t = 0;
                for (k = 0; k < r; k++) t += B[i * r + k] * C[k * n + j];
                a[i * n + j] = t;
            }
        d = gtl_laplace_det(n, a, n);
        gtl_ref_adjugate(n, a, adj);
        for (k = 0; k < n * n; k++) nz |= adj[k] != 0;
        if (r == n ? d != 0 : r == n - 1 ? nz : 1) return;
    }
}

/* the Adjugate node the gradient of det(A) reads, and its value at a */
static gr_array *gtl_adjugate_of(gr_dtype dt, const gr_array *a, const char *label) {
    gr_graph *g = gr_graph_new();
    gr_var *A = gr_matrix(g, dt, "A"), *J = gtl_find(gr_grad1(gr_det(A), A), "Adjugate");
    gr_array *got = NULL;
    CHECK_MSG(J != NULL, "%s: no Adjugate in the gradient of gr_det", label);
    if (J) got = gtl_eval(1, &A, (const gr_array *const *)&a, J, label);
    if (got) CHECK_MSG(got->dtype == dt && got->ndim == 2 && got->shape[0] == a->shape[0] && got->shape[1] == a->shape[0],
                       "%s: %s of shape (%lld, %lld)", label, gr_dtype_name(got->dtype), (long long)got->shape[0], (long long)got->shape[1]);
    gr_graph_free(g);
    return got;
}
/* got (an n x n array) against want within tol * scale, elementwise */
static void gtl_close_scaled(const gr_array *got, int n, const long double *want, double tol, double scale, const char *label) {
    int k;
    gt.checks++;
    if (!got || got->size != (int64_t)n * n) { gt_fail(__FILE__, __LINE__, "%s: missing or of the wrong size", label); return; }
    for (k = 0; k < n * n; k++) {
        double e = fabs(gr_array_get(got, k) - (double)want[k]);
        if (!(e <= tol * scale)) {
            gt_fail(__FILE__, __LINE__, "%s: element %d is %.17g, want %.17Lg (scale %g)", label, k, gr_array_get(got, k), want[k], scale);
            return;
        }
    }
}

/* Adjugate (A, LUFactor(A)) -> adj A: against the cofactors of sizes 0 to 6, invertible (random,
   and integer matrices that pivot), of rank n - 1 and n - 2 (exactly 0), float64 and float32; and a
   50 x 50 against det(A) A^-1 */
TEST(gtl_forward_Adjugate) {
    gtf_rng rng;
    int n, r, d, t;
    rng.s = 90;
    for (d = 0; d < 2; d++)
        for (n = 0; n <= 6; n++)
            for (r = n; r >= n - 2 && r >= 0; r--)
                for (t = 0; t < 2; t++) {
                    gr_dtype dt = d ? GR_F32 : GR_F64;
                    long double a[49], want[49];
                    gr_array *aa = gtl_matrix(dt, n, n, NULL), *got;
                    char label[160];
                    int k;
                    if (t == 0 || r < n) gtl_rank_matrix(&rng, n, r, a);        /* integers: exact in both dtypes */
                    else for (k = 0; k < n * n; k++) a[k] = (long double)(float)gtf_uniform(&rng, -1, 1);
                    for (k = 0; k < n * n; k++) gr_array_set(aa, k, (double)a[k]);
                    gtl_ref_adjugate(n, a, want);
                    snprintf(label, sizeof label, "adjugate of a %dx%d %s matrix of rank %d (%s)", n, n, t && r == n ? "random" : "integer", r,
                             gr_dtype_name(dt));
                    got = gtl_adjugate_of(dt, aa, label);
                    gtl_close_scaled(got, n, want, d ? 1e-5 : 1e-13, gtl_adj_scale(n, a), label);
                    gr_array_free(aa); gr_array_free(got);
                }
    {   /* [[1, 2], [2, 4]]: [[4, -2], [-2, 1]]; [[5]] and [[0]]: [[1]] */
        static const double s2[4] = { 1, 2, 2, 4 }, five = 5, zero = 0;
        static const long double w2[4] = { 4, -2, -2, 1 }, w1[1] = { 1 };
        gr_array *a2 = gtl_matrix(GR_F64, 2, 2, s2), *a5 = gtl_matrix(GR_F64, 1, 1, &five), *a0 = gtl_matrix(GR_F64, 1, 1, &zero), *got;
        got = gtl_adjugate_of(GR_F64, a2, "adjugate of [[1,2],[2,4]]");
        gtl_close_scaled(got, 2, w2, 0, 1, "adjugate of [[1,2],[2,4]]");
        gr_array_free(got);
        got = gtl_adjugate_of(GR_F64, a5, "adjugate of [[5]]");
        gtl_close_scaled(got, 1, w1, 0, 1, "adjugate of [[5]]");
        gr_array_free(got);
        got = gtl_adjugate_of(GR_F64, a0, "adjugate of [[0]]");
        gtl_close_scaled(got, 1, w1, 0, 1, "adjugate of [[0]]");
        gr_array_free(got);
        gr_array_free(a2); gr_array_free(a5); gr_array_free(a0);
    }
    for (d = 0; d < 2; d++) {   /* 50 x 50, pivoting, det of order 1: det(A) A^-1 */
        gr_dtype dt = d ? GR_F32 : GR_F64;
        gr_array *a = gtl_well_conditioned(&rng, dt, 50, 1), *X, *want, *got;
        long double l, det;
        int sign;
        int64_t k;
        for (k = 0; k < a->size; k++) gr_array_set(a, k, gr_array_get(a, k) / 50);
        det = gtl_ref_det(a, &l, &sign);
        X = gtl_ref_inverse(a);
        want = gr_array_copy(X);
        for (k = 0; k < want->size; k++) gr_array_set(want, k, (double)(det * gr_array_get(X, k)));
        got = gtl_adjugate_of(dt, a, "adjugate of a 50x50 matrix");
        gtl_close(got, want, d ? 1e-4 : 1e-10, d ? "adjugate of a 50x50 matrix (float32)" : "adjugate of a 50x50 matrix (float64)");
        gr_array_free(a); gr_array_free(X); gr_array_free(want); gr_array_free(got);
    }
}

TEST(gtl_forward_LUFactor) {
    /* F = (L\U; pivots) of the A behind gr_det: P A = L U to 1e-14, |L| <= 1, pivots in range */
    gtf_rng rng;
    int kind;
    rng.s = 80;
    for (kind = 0; kind < 2; kind++) {
        gr_graph *g = gr_graph_new();
        gr_var *A = gr_matrix(g, GR_F32, "A"), *F = gtl_find(gr_det(A), "LUFactor");
        int64_t n = 9, i, j, k, perm[9];
        gr_array *a = gtl_well_conditioned(&rng, GR_F32, n, kind), *f = F ? gtl_eval(1, &A, (const gr_array *const *)&a, F, "LUFactor") : NULL;
        double err = 0;
        CHECK_MSG(F != NULL, "no LUFactor above gr_det");
        if (f) {
            CHECK(f->dtype == GR_F64 && f->ndim == 2 && f->shape[0] == n + 1 && f->shape[1] == n);
            for (i = 0; i < n; i++) perm[i] = i;
            for (k = 0; k < n; k++) {                         /* the swaps, in order */
                int64_t p = (int64_t)gr_array_get(f, n * n + k), t;
                CHECK_MSG(p >= k && p < n && (double)p == gr_array_get(f, n * n + k), "pivot %lld of step %lld", (long long)p, (long long)k);
                if (p < k || p >= n) break;
                t = perm[k]; perm[k] = perm[p]; perm[p] = t;
            }
            for (i = 0; i < n; i++)
                for (j = 0; j < n; j++) {
                    long double s = 0;
                    for (k = 0; k <= (i < j ? i : j); k++)
                        s += (long double)(k == i ? 1.0 : gr_array_get(f, i * n + k)) * gr_array_get(f, k * n + j);
                    if (fabsl(s - gr_array_get(a, perm[i] * n + j)) > err) err = (double)fabsl(s - gr_array_get(a, perm[i] * n + j));
                    if (j < i) CHECK(fabs(gr_array_get(f, i * n + j)) <= 1.0);
                }
            CHECK_MSG(err <= 1e-14 * n, "P A = L U to %.3g", err);
            if (kind == 1) CHECK_MSG(perm[0] != 0, "the reversed dominant matrix needs pivoting");
        }
        gr_array_free(a); gr_array_free(f);
        gr_graph_free(g);
    }
}

TEST(gtl_forward_TriScale) {
    /* the TriScale nodes inside the gradients of trace (diagonal only) and of cholesky (the lower
       triangle, the diagonal halved): each output equals its input times the weights */
    static const double weights[2][3] = { { 0, 1, 0 }, { 1, 0.5, 0 } };
    gtf_rng rng;
    int c;
    rng.s = 90;
    for (c = 0; c < 2; c++) {
        gr_graph *g = gr_graph_new();
        gr_var *A = gr_matrix(g, GR_F64, "A"), *cost, *grad, *T, *outs[2];
        gr_fn *f = NULL;
        const gr_array *res[2];
        gr_array *a = c ? gtl_spd(&rng, GR_F64, 4) : gtf_random(&rng, GR_F64, 2, (int64_t[2]){ 4, 4 }, -1, 1);
        cost = c ? gr_sum(gr_mul(gr_cholesky(A), gr_cholesky(A))) : gr_sqr(gr_trace(A));
        grad = gr_grad1(cost, A);
        T = grad ? gtl_find(grad, "TriScale") : NULL;
        CHECK_MSG(T != NULL, "no TriScale in the gradient (%s)", gr_graph_message(g));
        if (T) {
            outs[0] = gr_node_input(gr_var_owner(T), 0);
            outs[1] = T;
            f = gr_function(1, &A, 2, outs, NULL);
        }
        if (f && gr_call(f, (const gr_array *const *)&a, res) == GR_OK) {
            int64_t i, j;
            for (i = 0; i < 4; i++)
                for (j = 0; j < 4; j++) {
                    double w = weights[c][j < i ? 0 : j == i ? 1 : 2];
                    CHECK_NEAR(gr_array_get(res[1], i * 4 + j), w * gr_array_get(res[0], i * 4 + j), 0);
                }
        } else if (T) gt_fail(__FILE__, __LINE__, "TriScale case %d: %s", c, f ? gr_fn_message(f) : gr_graph_message(g));
        gr_fn_free(f);
        gr_array_free(a);
        gr_graph_free(g);
    }
}


static gr_var *gtl_solve_ones(gr_var *A) { return gr_solve(A, gr_sum_axis(A, 1)); }
static gr_var *gtl_solve_ones_t(gr_var *A) { return gr_solve(A, gr_transpose(A)); }

TEST(test_linalg_singular) {
    static const double sing[9] = { 1, 2, 3, 2, 4, 6, 1, 1, 1 }, zero_col[4] = { 0, 1, 0, 2 };
    static const double tiny[4] = { 1e-310, 0, 0, 1 }, notpd[4] = { 1, 2, 2, 1 }, negdiag[4] = { -1, 0, 0, 1 };
    static const double nanm[4] = { 1, 0, NAN, 1 };
    gtl_call_fails(gr_matrix_inverse, sing, 3, 3, GR_ERR_RUNTIME, "singular", "inverse of a singular matrix");
    gtl_call_fails(gr_matrix_inverse, zero_col, 2, 2, GR_ERR_RUNTIME, "singular", "inverse with a zero column");
    gtl_call_fails(gtl_solve_ones, sing, 3, 3, GR_ERR_RUNTIME, "singular", "solve with a singular matrix");
    gtl_call_fails(gtl_solve_ones_t, sing, 3, 3, GR_ERR_RUNTIME, "singular", "solve with a singular matrix, matrix b");
    /* a pivot so small that the solution overflows: singular to working precision */
    gtl_call_fails(gr_matrix_inverse, tiny, 2, 2, GR_ERR_RUNTIME, "working precision", "inverse overflows");
    gtl_call_fails(gr_cholesky, notpd, 2, 2, GR_ERR_RUNTIME, "not positive definite", "cholesky, indefinite");
    gtl_call_fails(gr_cholesky, negdiag, 2, 2, GR_ERR_RUNTIME, "order 1", "cholesky, negative first pivot");
    gtl_call_fails(gr_cholesky, nanm, 2, 2, GR_ERR_RUNTIME, "not positive definite", "cholesky of NaN");
    gtl_call_fails(gr_cholesky, sing, 3, 3, GR_ERR_RUNTIME, "not positive definite", "cholesky of a singular matrix");
    {   /* a function recovers after a failed call; float32 fails the same way */
        gr_graph *g = gr_graph_new();
        gr_var *A = gr_matrix(g, GR_F32, "A"), *y = gr_matrix_inverse(A);
        gr_fn *f = gr_function(1, &A, 1, &y, NULL);
        double good[4] = { 2, 0, 0, 4 };
        gr_array *s = gtl_matrix(GR_F32, 3, 3, sing), *ok = gtl_matrix(GR_F32, 2, 2, good);
        const gr_array *res[1];
        CHECK_STATUS(gr_call(f, (const gr_array *const *)&s, res), GR_ERR_RUNTIME);
        CHECK_CONTAINS(gr_fn_message(f), "'A'");
        CHECK_STATUS(gr_call(f, (const gr_array *const *)&ok, res), GR_OK);
        CHECK_NEAR(gr_array_get(res[0], 0), 0.5, 0);
        CHECK_NEAR(gr_array_get(res[0], 3), 0.25, 0);
        CHECK_EQ_INT(strlen(gr_fn_message(f)), 0);
        gr_array_free(s); gr_array_free(ok);
        gr_fn_free(f);
        gr_graph_free(g);
    }
}

/* builders that must fail, with the code and a word of the message */
#define GTL_FAILS(expr, code, needle) do { \
        gr_graph_clear_error(g); \
        CHECK_MSG((expr) == NULL, "%s built", #expr); \
        CHECK_STATUS(gr_graph_status(g), code); \
        CHECK_CONTAINS(gr_graph_message(g), needle); } while (0)

/* the operands of the error tests */
typedef struct gtl_bad { gr_graph *g; gr_var *v, *t3, *r, *sq, *b4, *s, *m43; } gtl_bad;
static gtl_bad gtl_bad_new(void) {
    int64_t s34[2] = { 3, 4 }, s33[2] = { 3, 3 }, s4 = 4, s43[2] = { 4, 3 };
    gtl_bad b;
    b.g = gr_graph_new();
    b.v = gr_vector(b.g, GR_F64, "v");
    b.t3 = gr_tensor(b.g, GR_F64, 3, NULL, "t3");
    b.r = gr_tensor(b.g, GR_F64, 2, s34, "r");
    b.sq = gr_tensor(b.g, GR_F64, 2, s33, "sq");
    b.b4 = gr_tensor(b.g, GR_F64, 1, &s4, "b4");
    b.s = gr_scalar(b.g, GR_F64, "s");
    b.m43 = gr_tensor(b.g, GR_F64, 2, s43, "m43");
    return b;
}

static const double gtl_m34v[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };

TEST(test_det_errors) {
    gtl_bad b = gtl_bad_new();
    gr_graph *g = b.g;
    GTL_FAILS(gr_det(b.v), GR_ERR_TYPE, "gr_det: 'v' must be a matrix");
    GTL_FAILS(gr_det(b.r), GR_ERR_SHAPE, "'r' of shape (3,4) is not square");
    gr_graph_clear_error(g);
    CHECK(gr_det(NULL) == NULL);                         /* NULL operands: NULL, nothing recorded */
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    gtf_static_shape_is(gr_det(b.sq), 0, NULL, "det static");
    gr_graph_free(g);
    gtl_call_fails(gr_det, gtl_m34v, 3, 4, GR_ERR_SHAPE, "(3,4)", "det of (3,4)");
}

TEST(test_logdet_errors) {
    gtl_bad b = gtl_bad_new();
    gr_graph *g = b.g;
    GTL_FAILS(gr_logdet(b.t3), GR_ERR_TYPE, "gr_logdet");
    GTL_FAILS(gr_logdet(b.r), GR_ERR_SHAPE, "(3,4)");
    gr_graph_clear_error(g);
    CHECK(gr_logdet(NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    gr_graph_free(g);
    gtl_call_fails(gr_logdet, gtl_m34v, 3, 4, GR_ERR_SHAPE, "not square", "logdet of (3,4)");
}

TEST(test_inverse_errors) {
    gtl_bad b = gtl_bad_new();
    gr_graph *g = b.g;
    GTL_FAILS(gr_matrix_inverse(b.s), GR_ERR_TYPE, "gr_matrix_inverse");
    GTL_FAILS(gr_matrix_inverse(b.r), GR_ERR_SHAPE, "gr_matrix_inverse");
    gr_graph_clear_error(g);
    CHECK(gr_matrix_inverse(NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    gr_graph_free(g);
    gtl_call_fails(gr_matrix_inverse, gtl_m34v, 4, 3, GR_ERR_SHAPE, "(4,3)", "inverse of (4,3)");
}

TEST(test_cholesky_errors) {
    gtl_bad b = gtl_bad_new();
    gr_graph *g = b.g;
    GTL_FAILS(gr_cholesky(b.t3), GR_ERR_TYPE, "gr_cholesky");
    GTL_FAILS(gr_cholesky(b.r), GR_ERR_SHAPE, "gr_cholesky");
    gr_graph_clear_error(g);
    CHECK(gr_cholesky(NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    gr_graph_free(g);
    gtl_call_fails(gr_cholesky, gtl_m34v, 3, 4, GR_ERR_SHAPE, "not square", "cholesky of (3,4)");
}

TEST(test_trace_errors) {
    gtl_bad b = gtl_bad_new();
    gr_graph *g = b.g;
    GTL_FAILS(gr_trace(b.v), GR_ERR_TYPE, "gr_trace");
    gr_graph_clear_error(g);
    CHECK(gr_trace(NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    gr_graph_free(g);
}

TEST(test_solve_errors) {
    gtl_bad b = gtl_bad_new();
    gr_graph *g = b.g;
    int64_t s34[2] = { 3, 4 };
    GTL_FAILS(gr_solve(b.r, b.v), GR_ERR_SHAPE, "not square");
    GTL_FAILS(gr_solve(b.v, b.v), GR_ERR_TYPE, "'v' must be a matrix");
    GTL_FAILS(gr_solve(b.sq, b.s), GR_ERR_TYPE, "right-hand side 's'");
    GTL_FAILS(gr_solve(b.sq, b.t3), GR_ERR_TYPE, "vector or a matrix");
    GTL_FAILS(gr_solve(b.sq, b.b4), GR_ERR_SHAPE, "needs 3 rows");
    GTL_FAILS(gr_solve(b.sq, b.m43), GR_ERR_SHAPE, "(4,3)");
    gr_graph_clear_error(g);
    CHECK(gr_solve(b.sq, NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    gtf_static_shape_is(gr_solve(b.sq, gr_tensor(g, GR_F64, 2, s34, "b")), 2, s34, "solve static");
    {   /* b's rows against A at call time */
        gr_var *ins[2];
        int64_t n4 = 4, s33[2] = { 3, 3 };
        gr_array *arr[2];
        ins[0] = gr_matrix(g, GR_F64, "A");
        ins[1] = gr_vector(g, GR_F64, "b");
        arr[0] = gr_array_new(GR_F64, 2, s33);
        arr[1] = gr_array_new(GR_F64, 1, &n4);
        gtf_expect_call_error(g, 2, ins, (const gr_array *const *)arr, gr_solve(ins[0], ins[1]), GR_ERR_SHAPE, "solve (3,3) with (4,)");
        gr_array_free(arr[0]); gr_array_free(arr[1]);
    }
    gr_graph_free(g);
}
#undef GTL_FAILS

static gr_var *gtl_j_solve_b(gr_var *x, void *u) { (void)u; return gr_solve(gtl_const_matrix(gr_var_graph(x), 2), x); }
static gr_var *gtl_j_solve_A(gr_var *x, void *u) {
    double b[3] = { 1, -2, 0.5 };
    int64_t n = 3;
    gr_array *ba = gr_array_from(GR_F64, 1, &n, b);
    gr_var *bv = gr_constant(gr_var_graph(x), ba);
    (void)u;
    gr_array_free(ba);
    return gr_solve(x, bv);
}
static gr_var *gtl_j_solve_Bmat(gr_var *x, void *u) { (void)u; return gr_solve(gtl_const_matrix(gr_var_graph(x), 2), gr_mul(x, x)); }
static gr_var *gtl_j_det(gr_var *x, void *u) { (void)u; return gr_mul(gr_det(x), x); }
static gr_var *gtl_j_inv(gr_var *x, void *u) { (void)u; return gr_matrix_inverse(x); }
static gr_var *gtl_j_chol(gr_var *x, void *u) { (void)u; return gr_cholesky(gr_dot(x, gr_transpose(x))); }
static gr_var *gtl_j_logdet_grad(gr_var *x, void *u) { (void)u; return gr_grad1(gr_logdet(x), x); }
static gr_var *gtl_j_trace(gr_var *x, void *u) { (void)u; return gr_mul(gr_trace(x), gr_sum_axis(x, 0)); }

TEST(test_linalg_jacobians) {
    gtf_rng rng;
    gr_array *a3, *v3, *m33, *m32;
    double sh[9] = { 2.3, 0.1, -0.4, 0.2, 1.9, 0.3, -0.1, 0.5, 2.6 };
    int64_t n3 = 3, s33[2] = { 3, 3 }, s32[2] = { 3, 2 };
    rng.s = 120;
    a3 = gtl_matrix(GR_F64, 3, 3, sh);
    v3 = gtf_random(&rng, GR_F64, 1, &n3, -1, 1);
    m33 = gtf_random(&rng, GR_F64, 2, s33, -1, 1);
    m32 = gtf_random(&rng, GR_F64, 2, s32, -1, 1);
    gtl_jacobian_fd(gtl_j_solve_b, NULL, 1, &n3, v3, "jacobian of solve(A, b) wrt b (Solve batched by shifting)");
    gtl_jacobian_fd(gtl_j_solve_Bmat, NULL, 2, s32, m32, "jacobian of solve(A, B*B) wrt B");
    gtl_jacobian_fd(gtl_j_solve_A, NULL, 2, s33, a3, "jacobian of solve(A, b) wrt A");
    gtl_jacobian_fd(gtl_j_det, NULL, 2, s33, a3, "jacobian of det(A) A wrt A");
    gtl_jacobian_fd(gtl_j_inv, NULL, 2, s33, a3, "jacobian of inv(A) wrt A");
    gtl_jacobian_fd(gtl_j_chol, NULL, 2, s33, a3, "jacobian of chol(A A^T) wrt A");
    gtl_jacobian_fd(gtl_j_logdet_grad, NULL, 2, s33, a3, "hessian of logdet as the jacobian of its gradient");
    gtl_jacobian_fd(gtl_j_trace, NULL, 2, s33, m33, "jacobian of trace(X) sum(X, 0)");
    {   /* gr_hessian of logdet: H[i,j,k,l] = -X[l,i] X[j,k], X = A^-1 */
        gr_graph *g = gr_graph_new();
        gr_var *A = gr_matrix(g, GR_F64, "A"), *H = NULL;
        gr_array *h = NULL, *X = gtl_ref_inverse(a3), *want = gr_array_new(GR_F64, 4, (int64_t[4]){ 3, 3, 3, 3 });
        int i, j, k, l;
        for (i = 0; i < 3; i++) for (j = 0; j < 3; j++) for (k = 0; k < 3; k++) for (l = 0; l < 3; l++)
            gr_array_set(want, ((i * 3 + j) * 3 + k) * 3 + l, -gr_array_get(X, l * 3 + i) * gr_array_get(X, j * 3 + k));
        CHECK_STATUS(gr_hessian(gr_logdet(A), 1, &A, &H, NULL), GR_OK);
        h = gtl_eval(1, &A, (const gr_array *const *)&a3, H, "hessian of logdet");
        gtl_close(h, want, 1e-12, "hessian of logdet");
        gr_array_free(h); gr_array_free(X); gr_array_free(want);
        gr_graph_free(g);
    }
    gr_array_free(a3); gr_array_free(v3); gr_array_free(m33); gr_array_free(m32);
}

/* the closed forms of the gradients on a 50x50 problem, to 1e-10 */
TEST(test_linalg_gradients_50) {
    gtf_rng rng;
    gr_graph *g = gr_graph_new();
    gr_var *A = gr_matrix(g, GR_F64, "A"), *gl = gr_grad1(gr_logdet(A), A), *gd = gr_grad1(gr_det(A), A);
    gr_array *a, *X, *got, *want;
    int64_t n = 50, i, j;
    long double la;
    int sign;
    double d;
    rng.s = 130;
    a = gtl_well_conditioned(&rng, GR_F64, n, 1);
    X = gtl_ref_inverse(a);
    want = gtl_matrix(GR_F64, n, n, NULL);
    for (i = 0; i < n; i++) for (j = 0; j < n; j++) gr_array_set(want, i * n + j, gr_array_get(X, j * n + i));
    got = gtl_eval(1, &A, (const gr_array *const *)&a, gl, "grad of logdet, 50x50");
    gtl_close(got, want, 1e-10, "grad of logdet = A^-T, 50x50");
    gr_array_free(got);
    d = (double)gtl_ref_det(a, &la, &sign);
    for (i = 0; i < n * n; i++) gr_array_set(want, i, gr_array_get(want, i) * d);
    got = gtl_eval(1, &A, (const gr_array *const *)&a, gd, "grad of det, 50x50");
    gtl_close(got, want, 1e-10, "grad of det = det A^-T, 50x50");
    gr_array_free(got); gr_array_free(a); gr_array_free(X); gr_array_free(want);
    gr_graph_free(g);
}


/* ==== the derivatives of det where A is singular ===================================================== */

/* f(A, V) -> outputs, compiled at `level` and called at (a, v); copies of the outputs, or the call's
   status in *st (and its message in msg) */
static int gtl_run2(gr_var *A, gr_var *V, int n_out, gr_var *const *outs, gr_optimize level, const gr_array *a, const gr_array *v,
                    gr_array **res, gr_status *st, char *msg, size_t msg_size) {
    gr_var *ins[2];
    const gr_array *in[2], *o[2];
    gr_fn_opts opts;
    gr_fn *f;
    int i;
    memset(&opts, 0, sizeof opts);
    opts.optimize = level;
    ins[0] = A; ins[1] = V;
    in[0] = a; in[1] = v;
    for (i = 0; i < n_out; i++) res[i] = NULL;
    f = gr_function(2, ins, n_out, outs, &opts);
    if (!f) { gt_fail(__FILE__, __LINE__, "gr_function: %s", gr_graph_message(gr_var_graph(A))); return 0; }
    *st = gr_call(f, in, o);
    if (msg) snprintf(msg, msg_size, "%s", gr_fn_message(f));
    for (i = 0; *st == GR_OK && i < n_out; i++) res[i] = gr_array_copy(o[i]);
    gr_fn_free(f);
    return *st == GR_OK;
}

/* The gradient of det at A is adj(A)^T and its R-op tr(adj(A) V): at singular A of sizes 1 to 4, of
   rank n - 1 and n - 2 (integer matrices, exact in float64, and rank n - 1 products of random
   floats, which the LU sees with a tiny pivot), against central differences of det in long double
   (det is affine in each entry: the difference along one entry is its cofactor) and against the
   cofactors themselves, at both optimisation levels, in float64 and float32 */
TEST(test_linalg_det_grad_singular) {
    gtf_rng rng;
    int n, r, t, level, d;
    rng.s = 91;
    for (n = 1; n <= 4; n++)
        for (r = n - 1; r >= n - 2 && r >= 0; r--)
            for (t = 0; t < 3; t++)
                for (d = 0; d < 2; d++)
                    for (level = 0; level < 2; level++) {
                        gr_dtype dt = d ? GR_F32 : GR_F64;
                        gr_graph *g = gr_graph_new();
                        gr_var *A = gr_matrix(g, dt, "A"), *V = gr_matrix(g, dt, "V"), *D = gr_det(A), *outs[2];
                        long double a[16], v[16], adj[16], fd[16], h = 1e-3L, rfd, ap[16], am[16];
                        gr_array *aa = gtl_matrix(dt, n, n, NULL), *va = gtl_matrix(dt, n, n, NULL), *res[2];
                        double scale, tol = d ? 2e-6 : 1e-12;
                        char label[160];
                        gr_status st;
                        int i, k;
                        if (t < 2) gtl_rank_matrix(&rng, n, r, a);
                        else {                                        /* float64 only: a product of random floats */
                            long double B[16], C[16];
                            int j, q;
                            for (k = 0; k < n * r; k++) { B[k] = gtf_uniform(&rng, -1, 1); C[k] = gtf_uniform(&rng, -1, 1); }
                            for (i = 0; i < n; i++)
                                for (j = 0; j < n; j++) {
                                    double s = 0;
                                    for (q = 0; q < r; q++) s += (double)(B[i * r + q] * C[q * n + j]);
                                    a[i * n + j] = (long double)(d ? (double)(float)s : s);
                                }
                        }
                        for (k = 0; k < n * n; k++) {
                            v[k] = (long double)(float)gtf_uniform(&rng, -1, 1);
                            gr_array_set(aa, k, (double)a[k]);
                            gr_array_set(va, k, (double)v[k]);
                        }
                        gtl_ref_adjugate(n, a, adj);
                        scale = gtl_adj_scale(n, a);
                        if (t == 2) scale *= 1e3;                     /* the rounding of the product is not in the reference */
                        for (k = 0; k < n * n; k++) {                 /* central differences of det */
                            memcpy(ap, a, sizeof(long double) * (size_t)(n * n));
                            memcpy(am, a, sizeof(long double) * (size_t)(n * n));
                            ap[k] += h; am[k] -= h;
                            fd[k] = (gtl_laplace_det(n, ap, n) - gtl_laplace_det(n, am, n)) / (2 * h);
                        }
                        for (k = 0; k < n * n; k++) { ap[k] = a[k] + h * v[k]; am[k] = a[k] - h * v[k]; }
                        rfd = (gtl_laplace_det(n, ap, n) - gtl_laplace_det(n, am, n)) / (2 * h);
                        snprintf(label, sizeof label, "det of a %dx%d %s matrix of rank %d (%s, level %d)", n, n, t < 2 ? "integer" : "float",
                                 r, gr_dtype_name(dt), level);
                        outs[0] = gr_grad1(D, A);
                        outs[1] = NULL;
                        CHECK_STATUS(gr_rop(1, &D, 1, &A, &V, &outs[1], NULL), GR_OK);
                        if (outs[0] && outs[1] && gtl_run2(A, V, 2, outs, (gr_optimize)level, aa, va, res, &st, NULL, 0)) {
                            long double tr = 0, want[16];
                            for (i = 0; i < n * n; i++) want[i] = adj[(i % n) * n + i / n];      /* adj^T */
                            gtl_close_scaled(res[0], n, fd, tol, scale, label);
                            gtl_close_scaled(res[0], n, want, tol, scale, label);
                            for (i = 0; i < n; i++) for (k = 0; k < n; k++) tr += adj[i * n + k] * v[k * n + i];
                            CHECK_MSG(fabs(gr_array_get(res[1], 0) - (double)rfd) <= (d ? 1e-5 : 1e-8) * n * scale &&
                                      fabs(gr_array_get(res[1], 0) - (double)tr) <= tol * n * scale,
                                      "%s: R-op %.17g, central differences %.17Lg, tr(adj(A) V) %.17Lg", label, gr_array_get(res[1], 0), rfd, tr);
                        } else CHECK_MSG(0, "%s: the call failed", label);
                        gr_array_free(res[0]); gr_array_free(res[1]);
                        gr_array_free(aa); gr_array_free(va);
                        gr_graph_free(g);
                    }
    {   /* the closed form of the issue: the gradient of det at [[1, 2], [2, 4]] is [[4, -2], [-2, 1]] */
        static const double s2[4] = { 1, 2, 2, 4 };
        static const long double w[4] = { 4, -2, -2, 1 };
        for (d = 0; d < 2; d++) {
            gr_graph *g = gr_graph_new();
            gr_var *A = gr_matrix(g, d ? GR_F32 : GR_F64, "A"), *gd = gr_grad1(gr_det(A), A);
            gr_array *a = gtl_matrix(d ? GR_F32 : GR_F64, 2, 2, s2), *got = gtl_eval(1, &A, (const gr_array *const *)&a, gd, "grad det");
            gtl_close_scaled(got, 2, w, 0, 1, d ? "gradient of det at [[1,2],[2,4]] (float32)" : "gradient of det at [[1,2],[2,4]]");
            gr_array_free(a); gr_array_free(got);
            gr_graph_free(g);
        }
    }
}

/* The second derivatives of det: where A is invertible, the Hessian against central differences of
   the cofactors (each affine in every other entry); where A is singular, the Hessian and a
   Hessian-vector product fail the call with GR_ERR_RUNTIME naming the derivatives of gr_det (their
   rule solves with A). logdet's gradient and R-op at a singular A fail the same way (its value
   is -inf there; gr_matrix_inverse of it stays a call-time error too). */
TEST(test_linalg_det_second_derivatives) {
    static const double inv3[9] = { 2, -1, 0, 1, 3, -2, 0, 1, 1 }, sing3[9] = { 1, 2, 3, 2, 4, 6, 1, 1, 1 };
    static const double v3[9] = { 0.5, -1, 0.25, 2, 0, -0.75, 1, 1.5, -0.5 };
    int level;
    for (level = 0; level < 2; level++) {
        gr_graph *g = gr_graph_new();
        gr_var *A = gr_matrix(g, GR_F64, "A"), *V = gr_matrix(g, GR_F64, "V"), *D = gr_det(A), *H = NULL, *gd = gr_grad1(D, A);
        gr_var *hv = NULL, *outs[2], *L = gr_logdet(A), *gl = gr_grad1(L, A), *rl = NULL, *Xi = gr_matrix_inverse(A);
        gr_array *ai = gtl_matrix(GR_F64, 3, 3, inv3), *as = gtl_matrix(GR_F64, 3, 3, sing3), *va = gtl_matrix(GR_F64, 3, 3, v3), *res[2];
        gr_status st;
        char msg[512];
        CHECK_STATUS(gr_hessian(D, 1, &A, &H, NULL), GR_OK);
        CHECK_STATUS(gr_rop(1, &gd, 1, &A, &V, &hv, NULL), GR_OK);
        CHECK_STATUS(gr_rop(1, &L, 1, &A, &V, &rl, NULL), GR_OK);
        outs[0] = H; outs[1] = hv;
        if (gtl_run2(A, V, 2, outs, (gr_optimize)level, ai, va, res, &st, msg, sizeof msg)) {
            long double a[9], cp[9], cm[9], h = 1e-3L;
            int i, j, k, l;
            for (k = 0; k < 9; k++) a[k] = inv3[k];
            for (k = 0; k < 9; k++) {                      /* H[i,j,k,l] = d C_ij / d A_kl, C = adj^T */
                long double hvk = 0;
                a[k] += h; gtl_ref_adjugate(3, a, cp);
                a[k] -= 2 * h; gtl_ref_adjugate(3, a, cm);
                a[k] += h;
                for (i = 0; i < 3; i++)
                    for (j = 0; j < 3; j++) {
                        long double want = (cp[j * 3 + i] - cm[j * 3 + i]) / (2 * h);
                        CHECK_MSG(fabs(gr_array_get(res[0], (i * 3 + j) * 9 + k) - (double)want) <= 1e-12 * 10,
                                  "Hessian of det [%d,%d,%d,%d] is %.17g, want %.17Lg", i, j, k / 3, k % 3,
                                  gr_array_get(res[0], (i * 3 + j) * 9 + k), want);
                    }
                for (l = 0; l < 9; l++) {                  /* (H v)_k = sum_l H[k, l] v_l */
                    a[l] += h; gtl_ref_adjugate(3, a, cp);
                    a[l] -= 2 * h; gtl_ref_adjugate(3, a, cm);
                    a[l] += h;
                    hvk += (cp[(k % 3) * 3 + k / 3] - cm[(k % 3) * 3 + k / 3]) / (2 * h) * v3[l];
                }
                CHECK_MSG(fabs(gr_array_get(res[1], k) - (double)hvk) <= 1e-11 * 10, "HVP of det [%d] is %.17g, want %.17Lg", k,
                          gr_array_get(res[1], k), hvk);
            }
        } else CHECK_MSG(0, "second derivatives of det at an invertible matrix: %s", msg);
        gr_array_free(res[0]); gr_array_free(res[1]);
        CHECK(!gtl_run2(A, V, 1, &H, (gr_optimize)level, as, va, res, &st, msg, sizeof msg));
        CHECK_STATUS(st, GR_ERR_RUNTIME);
        CHECK_CONTAINS(msg, "singular");
        CHECK_CONTAINS(msg, "the derivatives of gr_det");
        CHECK(!gtl_run2(A, V, 1, &hv, (gr_optimize)level, as, va, res, &st, msg, sizeof msg));
        CHECK_STATUS(st, GR_ERR_RUNTIME);
        CHECK_CONTAINS(msg, "the derivatives of gr_det");
        CHECK(!gtl_run2(A, V, 1, &gl, (gr_optimize)level, as, va, res, &st, msg, sizeof msg));
        CHECK_STATUS(st, GR_ERR_RUNTIME);
        CHECK_CONTAINS(msg, "the derivatives of gr_logdet");
        CHECK(!gtl_run2(A, V, 1, &rl, (gr_optimize)level, as, va, res, &st, msg, sizeof msg));
        CHECK_STATUS(st, GR_ERR_RUNTIME);
        CHECK_CONTAINS(msg, "the derivatives of gr_logdet");
        CHECK(!gtl_run2(A, V, 1, &Xi, (gr_optimize)level, as, va, res, &st, msg, sizeof msg));
        CHECK_STATUS(st, GR_ERR_RUNTIME);
        CHECK_CONTAINS(msg, "gr_matrix_inverse");
        gr_array_free(ai); gr_array_free(as); gr_array_free(va);
        gr_graph_free(g);
    }
}

static gr_var *gtl_b_det(gr_graph *g, gr_var *const *x, void *u) { (void)u; return gr_det(gtl_shift(g, x[0], 3, 3)); }
static gr_var *gtl_b_logdet(gr_graph *g, gr_var *const *x, void *u) { (void)u; return gr_logdet(gtl_shift(g, x[0], 3, 3)); }
static gr_var *gtl_b_grad_det(gr_graph *g, gr_var *const *x, void *u) { return gr_grad1(gtl_b_det(g, x, u), x[0]); }
static gr_var *gtl_b_grad_det_plain(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_grad1(gr_det(x[0]), x[0]); }
static gr_var *gtl_b_inverse(gr_graph *g, gr_var *const *x, void *u) { (void)u; return gr_matrix_inverse(gtl_shift(g, x[0], 3, 3)); }
static gr_var *gtl_b_solve(gr_graph *g, gr_var *const *x, void *u) { (void)u; return gr_solve(gtl_shift(g, x[0], 3, 3), x[1]); }
/* cholesky's derivatives are those of chol((A + A^T) / 2): the builders give it symmetric matrices */
static gr_var *gtl_b_chol_gram(gr_graph *g, gr_var *const *x, void *u) {
    (void)u;
    return gr_cholesky(gtl_shift(g, gr_dot(x[0], gr_transpose(x[0])), 3, 1));
}
static gr_var *gtl_b_chol_sym(gr_graph *g, gr_var *const *x, void *u) {
    (void)u;
    return gr_cholesky(gtl_shift(g, gr_add(x[0], gr_transpose(x[0])), 3, 4));
}
static gr_var *gtl_b_trace(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_trace(x[0]); }
static gr_var *gtl_b_trace_sq(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_sqr(gr_trace(gr_sin(x[0]))); }
/* TriScale appears only inside gradients: these builders are gradients, whose own derivatives go
   through TriScale's rules */
static gr_var *gtl_b_grad_trace(gr_graph *g, gr_var *const *x, void *u) { (void)u; return gr_grad1(gtl_b_trace_sq(g, x, NULL), x[0]); }
static gr_var *gtl_b_grad_chol(gr_graph *g, gr_var *const *x, void *u) {
    gr_var *L = gtl_b_chol_sym(g, x, u);
    return gr_grad1(gr_sum(gr_mul(L, gr_sin(L))), x[0]);
}

static const gtd_spec specs_LUFactor[] = {
    /* LUFactor is a workspace without derivatives; these check that the ops reading it
       differentiate A itself (its connection pattern keeps gradients from flowing into it) */
    { "LUFactor", "through gr_det", gtl_b_det, NULL, 1, { GTD_IN(2, 3, 3, -1, 1) }, 0 },
    { "LUFactor", "through gr_solve", gtl_b_solve, NULL, 2, { GTD_IN(2, 3, 3, -1, 1), GTD_IN(1, 3, 0, -1, 1) }, 0 },
    GTD_END
};
static const gtd_spec specs_MatrixInverse[] = {
    { "MatrixInverse", "inv(X + 3I)", gtl_b_inverse, NULL, 1, { GTD_IN(2, 3, 3, -1, 1) }, GTD_GRADGRAD },
    GTD_END
};
static const gtd_spec specs_Det[] = {
    { "Det", "det(X + 3I)", gtl_b_det, NULL, 1, { GTD_IN(2, 3, 3, -1, 1) }, GTD_GRADGRAD },
    GTD_END
};
static const gtd_spec specs_Adjugate[] = {
    { "Adjugate", "the gradient of det(X + 3I), adj(X + 3I)^T", gtl_b_grad_det, NULL, 1, { GTD_IN(2, 3, 3, -1, 1) }, GTD_GRADGRAD },
    { "Adjugate", "the gradient of det(X), X (4,4) in (-1, 1)", gtl_b_grad_det_plain, NULL, 1, { GTD_IN(2, 4, 4, -1, 1) }, 0 },
    GTD_END
};
static const gtd_spec specs_LogDet[] = {
    { "LogDet", "logdet(X + 3I)", gtl_b_logdet, NULL, 1, { GTD_IN(2, 3, 3, -1, 1) }, GTD_GRADGRAD },
    GTD_END
};
static const gtd_spec specs_Solve[] = {
    { "Solve", "solve(X + 3I, b), b (3,)", gtl_b_solve, NULL, 2, { GTD_IN(2, 3, 3, -1, 1), GTD_IN(1, 3, 0, -1, 1) }, GTD_GRADGRAD },
    { "Solve", "solve(X + 3I, B), B (3,2)", gtl_b_solve, NULL, 2, { GTD_IN(2, 3, 3, -1, 1), GTD_IN(2, 3, 2, -1, 1) }, GTD_GRADGRAD },
    GTD_END
};
static const gtd_spec specs_Cholesky[] = {
    { "Cholesky", "chol(X X^T + I)", gtl_b_chol_gram, NULL, 1, { GTD_IN(2, 3, 3, -1, 1) }, GTD_GRADGRAD },
    { "Cholesky", "chol(X + X^T + 4I)", gtl_b_chol_sym, NULL, 1, { GTD_IN(2, 3, 3, -1, 1) }, GTD_GRADGRAD },
    GTD_END
};
static const gtd_spec specs_Trace[] = {
    { "Trace", "trace (3,3)", gtl_b_trace, NULL, 1, { GTD_IN(2, 3, 3, -1, 1) }, 0 },
    { "Trace", "trace(sin X)^2, X (3,4)", gtl_b_trace_sq, NULL, 1, { GTD_IN(2, 3, 4, -1, 1) }, GTD_GRADGRAD },
    GTD_END
};
static const gtd_spec specs_TriScale[] = {
    { "TriScale", "the gradient of trace(sin X)^2 (diagonal)", gtl_b_grad_trace, NULL, 1, { GTD_IN(2, 3, 4, -1, 1) }, 0 },
    { "TriScale", "the gradient through cholesky (lower, halved diagonal)", gtl_b_grad_chol, NULL, 1, { GTD_IN(2, 3, 3, -1, 1) }, 0 },
    GTD_END
};


/* An identity whose gradient rule applies every linear-algebra op to the cotangent itself. The
   rule is not linear in the cotangent, so this is no true gradient: it only makes gr_jacobian
   batch those ops row by row (their `map` rule), which real gradients never need (they apply the
   ops to forward values, and the cotangents only as right-hand sides). Row k of the "Jacobian"
   must equal the rule evaluated at the k-th unit cotangent. */
static gr_var *gtl_probe_rule(gr_var *G, gr_var *x) {
    gr_graph *g = gr_var_graph(x);
    gr_var *M = gtl_shift(g, G, 3, 3);
    gr_var *t1 = gr_add(gr_mul(gr_det(M), x), gr_mul(gr_logdet(M), x));
    gr_var *t2 = gr_add(gr_matrix_inverse(M), gr_cholesky(gtl_shift(g, gr_dot(G, gr_transpose(G)), 3, 1)));
    return gr_add(gr_add(t1, t2), gr_add(gr_solve(M, x), gr_trace(G)));
}
static gr_status gtl_probe_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    memcpy(out[0]->data, in[0]->data, (size_t)in[0]->size * sizeof(double));
    return GR_OK;
}
static gr_status gtl_probe_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gtl_probe_rule(og[0], gr_node_input(node, 0));
    return ig[0] ? GR_OK : gr_graph_status(gr_var_graph(og[0]));
}
static const gr_op_def gtl_probe = { .name = "probe", .n_in = 1, .n_out = 1, .perform = gtl_probe_perform, .grad = gtl_probe_grad };

TEST(test_linalg_batched_row_by_row) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_matrix(g, GR_F64, "x"), *G = gr_matrix(g, GR_F64, "G"), *y = NULL, *J = NULL, *ins[2];
    double xv[9] = { 0.3, -0.2, 0.5, 0.1, 0.4, -0.3, -0.6, 0.2, 0.1 };
    gr_array *xa = gtl_matrix(GR_F64, 3, 3, xv), *j = NULL, *arr[2];
    gr_fn *rule;
    int k;
    CHECK_STATUS(gr_apply(&gtl_probe, NULL, 0, 1, &x, &y), GR_OK);
    CHECK_STATUS(gr_jacobian(y, 1, &x, &J, NULL), GR_OK);
    j = gtl_eval(1, &x, (const gr_array *const *)&xa, J, "the probe's Jacobian");
    ins[0] = G; ins[1] = x;
    rule = gr_function(2, ins, 1, (gr_var *[1]){ gtl_probe_rule(G, x) }, NULL);
    CHECK(rule != NULL);
    for (k = 0; j && rule && k < 9; k++) {
        const gr_array *res[1];
        int64_t e;
        arr[0] = gtl_matrix(GR_F64, 3, 3, NULL);
        arr[1] = xa;
        gr_array_set(arr[0], k, 1.0);
        if (gr_call(rule, (const gr_array *const *)arr, res) == GR_OK)
            for (e = 0; e < 9; e++) CHECK_NEAR(gr_array_get(j, k * 9 + e), gr_array_get(res[0], e), 1e-13);
        else gt_fail(__FILE__, __LINE__, "the rule fails: %s", gr_fn_message(rule));
        gr_array_free(arr[0]);
    }
    gr_fn_free(rule);
    gr_array_free(xa); gr_array_free(j);
    gr_graph_free(g);
}

/* ==== the family's other tests: every op applied row by row ============================================ */

SUITE(suite_ops_linalg) = { CASE(test_linalg_batched_row_by_row), END_SUITE };

/* ==== the rows ============================================================================================ */

GT_CASES(LUFactor) = {
    GT_VALUES(gtl_forward_LUFactor),
    GT_SPECS(specs_LUFactor),
    GT_NO_ERRORS("made only by the constructors of det, logdet, inverse and solve, from their checked matrix"),
    GT_END
};
GT_CASES(MatrixInverse) = {
    GT_VALUES(gtl_forward_MatrixInverse),
    GT_SPECS(specs_MatrixInverse),
    GT_DERIVS(test_linalg_jacobians),
    GT_ERRORS(test_inverse_errors),
    GT_ERRORS(test_linalg_singular),
    GT_END
};
GT_CASES(Det) = {
    GT_VALUES(gtl_forward_Det),
    GT_SPECS(specs_Det),
    GT_DERIVS(test_linalg_gradients_50),
    GT_DERIVS(test_linalg_det_grad_singular),
    GT_DERIVS(test_linalg_det_second_derivatives),
    GT_ERRORS(test_det_errors),
    GT_END
};
GT_CASES(Adjugate) = {
    GT_VALUES(gtl_forward_Adjugate),
    GT_SPECS(specs_Adjugate),
    GT_NO_ERRORS("made only by the derivatives of gr_det, from checked operands"),
    GT_END
};
GT_CASES(LogDet) = { GT_VALUES(gtl_forward_LogDet), GT_SPECS(specs_LogDet), GT_ERRORS(test_logdet_errors), GT_END };
GT_CASES(Solve) = { GT_VALUES(gtl_forward_Solve), GT_SPECS(specs_Solve), GT_ERRORS(test_solve_errors), GT_END };
GT_CASES(Cholesky) = { GT_VALUES(gtl_forward_Cholesky), GT_SPECS(specs_Cholesky), GT_ERRORS(test_cholesky_errors), GT_END };
GT_CASES(Trace) = { GT_VALUES(gtl_forward_Trace), GT_SPECS(specs_Trace), GT_ERRORS(test_trace_errors), GT_END };
GT_CASES(TriScale) = {
    GT_VALUES(gtl_forward_TriScale),
    GT_SPECS(specs_TriScale),
    GT_NO_ERRORS("made only by the derivatives of gr_trace and gr_cholesky, from checked operands"),
    GT_END
};
