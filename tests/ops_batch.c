/* tests/ops_batch.c: the ops of ops/batch.c, which gr_jacobian and gr_hessian build: EyeLike (the
   identity rows a Jacobian starts from), Unflatten (its rows back in the shape of the variable),
   Batched (an op applied row by row over a batch axis) and Banded (banded Jacobians and Hessians
   that gr_function recognises).
     - values: Jacobians and Hessians against plain C, static and call-time shapes; banded results
       where gr_function makes them, and the same values without the rewrites;
     - derivative specs through builders returning Jacobians and Hessians, so that the rows' own
       gradients and R-ops are checked;
     - a Batched node made when the graph's node array is full (test-san saw a heap overflow).
   None has a constructor of its own: the drivers make them from checked operands. */
#include "ops.h"

/* ==== EyeLike, Unflatten, Batched ======================================================================== */


/* jacobian(X, X) for X (2,3) is the identity of shape (2,3,2,3): EyeLike then Unflatten */
static void gts_jacobian_identity(void) {
    static const int64_t shape[2] = { 2, 3 };
    gtf_rng rng;
    int dyn;
    rng.s = 120;
    for (dyn = 0; dyn < 2; dyn++) {
        int64_t jshape[4] = { 2, 3, 2, 3 }, k;
        gr_graph *g = gr_graph_new();
        gr_var *X = gtf_input(g, GR_F64, 2, shape, dyn, "X"), *J = NULL;
        gr_array *a = gtf_random(&rng, GR_F64, 2, shape, -1, 1), *want = gr_array_new(GR_F64, 4, jshape);
        for (k = 0; k < 6; k++) ((double *)want->data)[k * 6 + k] = 1.0;
        CHECK_STATUS(gr_jacobian(X, 1, &X, &J, NULL), GR_OK);
        gtf_expect(g, 1, &X, (const gr_array *const *)&a, J, GR_F64, want, 0, dyn ? "jacobian(X, X), unknown shape" : "jacobian(X, X)");
        gr_array_free(a);
        gr_array_free(want);
        gr_graph_free(g);
    }
}
TEST(gts_op_EyeLike) { gts_jacobian_identity(); }
TEST(gts_op_Unflatten) { gts_jacobian_identity(); }

/* jacobian(dot(A, x), x) = A: the pullback's dot runs row by row over the batch (Batched) */
TEST(gts_op_Batched) {
    static const int64_t as[2] = { 4, 3 }, xs[1] = { 3 };
    gtf_rng rng;
    int dyn;
    rng.s = 121;
    for (dyn = 0; dyn < 2; dyn++) {
        gr_graph *g = gr_graph_new();
        gr_var *A = gtf_input(g, GR_F64, 2, as, dyn, "A"), *x = gtf_input(g, GR_F64, 1, xs, dyn, "x"), *J = NULL, *ins[2];
        gr_array *arr[2], *want;
        int64_t k;
        arr[0] = gtf_random(&rng, GR_F64, 2, as, -1, 1);
        arr[1] = gtf_random(&rng, GR_F64, 1, xs, -1, 1);
        want = gr_array_copy(arr[0]);
        ins[0] = A; ins[1] = x;
        CHECK_STATUS(gr_jacobian(gr_dot(A, x), 1, &x, &J, NULL), GR_OK);
        gtf_expect(g, 2, ins, (const gr_array *const *)arr, J, GR_F64, want, GTF_TOL_F64, "jacobian(dot(A, x), x)");
        /* and a reshape in the pullback: jacobian(reshape(x, (3, 1)), x) is the identity as (3, 1, 3) */
        {
            int64_t rs[2] = { 3, 1 }, js[3] = { 3, 1, 3 };
            gr_var *Jr = NULL;
            gr_array *wr = gr_array_new(GR_F64, 3, js);
            for (k = 0; k < 3; k++) ((double *)wr->data)[k * 3 + k] = 1.0;
            CHECK_STATUS(gr_jacobian(gr_reshape(x, 2, rs), 1, &x, &Jr, NULL), GR_OK);
            gtf_expect(g, 1, &x, (const gr_array *const *)&arr[1], Jr, GR_F64, wr, 0, "jacobian(reshape(x), x)");
            gr_array_free(wr);
        }
        gr_array_free(arr[0]);
        gr_array_free(arr[1]);
        gr_array_free(want);
        gr_graph_free(g);
    }
}

/* row loops inside row loops (Batched of Batched): f(A) = A A x, f_i = sum_j A_ij (A x)_j, so
   d2 f_i / dA_pq dA_rs = [i = p][q = r] x_s + [i = r][p = s] x_q, a (2,2,2,2,2) array */
TEST(gts_op_Batched_nested) {
    static const int64_t as[2] = { 2, 2 }, xs[1] = { 2 }, hs[5] = { 2, 2, 2, 2, 2 };
    gtf_rng rng;
    int dyn;
    rng.s = 127;
    for (dyn = 0; dyn < 2; dyn++) {
        gr_graph *g = gr_graph_new();
        gr_var *A = gtf_input(g, GR_F64, 2, as, dyn, "A"), *x = gtf_input(g, GR_F64, 1, xs, dyn, "x"), *J = NULL, *H = NULL, *ins[2];
        gr_array *arr[2], *want = gr_array_new(GR_F64, 5, hs);
        int i, p, q, r, t;
        arr[0] = gtf_random(&rng, GR_F64, 2, as, -1, 1);
        arr[1] = gtf_random(&rng, GR_F64, 1, xs, -1, 1);
        for (i = 0; i < 2; i++) for (p = 0; p < 2; p++) for (q = 0; q < 2; q++) for (r = 0; r < 2; r++) for (t = 0; t < 2; t++)
            ((double *)want->data)[(((i * 2 + p) * 2 + q) * 2 + r) * 2 + t] =
                (i == p && q == r ? gr_array_get(arr[1], t) : 0) + (i == r && p == t ? gr_array_get(arr[1], q) : 0);
        ins[0] = A; ins[1] = x;
        CHECK_STATUS(gr_jacobian(gr_dot(gr_dot(A, A), x), 1, &A, &J, NULL), GR_OK);
        CHECK_STATUS(gr_jacobian(J, 1, &A, &H, NULL), GR_OK);
        gtf_expect(g, 2, ins, (const gr_array *const *)arr, H, GR_F64, want, GTF_TOL_F64, "jacobian(jacobian(dot(dot(A, A), x), A), A)");
        gr_array_free(arr[0]);
        gr_array_free(arr[1]);
        gr_array_free(want);
        gr_graph_free(g);
    }
}

/* A batching rule that applies an op row by row builds a Batched node whose type rule builds the
   op's own node in the same graph: both must get their own slot and id (under ASan, the node array
   once overflowed when the outer node was the one to fill it). Many Jacobians in one graph, with
   a varying number of nodes between them, meet every position of the array's growth. */
TEST(test_batched_node_registration) {
    static const int64_t s6[1] = { 6 };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *J = NULL, *last = NULL;
    gr_array *xa = gr_array_new(GR_F64, 1, s6);
    int i, k;
    for (i = 0; i < 300 && gr_graph_status(g) == GR_OK; i++) {
        int64_t shape[2] = { 2, 3 };
        gr_var *y = x;
        for (k = 0; k < i % 5; k++) y = gr_neg(y);
        if (gr_jacobian(gr_reshape(y, 2, shape), 1, &x, &J, NULL) != GR_OK) break;
        last = J;
    }
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    if (last) {   /* the last one still computes: J[r, c, k] = (-1)^(299 % 5) [3r + c == k] */
        gr_array *want;
        int64_t ws[3] = { 2, 3, 6 };
        want = gr_array_new(GR_F64, 3, ws);
        for (k = 0; k < 6; k++) ((double *)want->data)[k * 6 + k] = (299 % 5) % 2 ? -1 : 1;
        gts_expect1(g, x, xa, last, GR_F64, want, 0, "the 300th Jacobian of a reshape");
        gr_array_free(want);
    }
    gr_array_free(xa);
    gr_graph_free(g);
}

/* ==== Jacobians: EyeLike, Unflatten, Batched ============================================================= */

static gr_var *gts_jac1(gr_var *e, gr_var *w) {
    gr_var *j = NULL;
    return gr_jacobian(e, 1, &w, &j, NULL) == GR_OK ? j : NULL;
}
/* jacobian(x, x): EyeLike itself (then Unflatten for a matrix): depends on the shape only */
static gr_var *gts_jac_identity(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gts_jac1(x[0], x[0]); }
/* jacobian(sin(x) * x1, x): the identity times cos(x) x1, elementwise batching only (x vector) */
static gr_var *gts_jac_sin(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gts_jac1(gr_mul(gr_sin(x[0]), x[1]), x[0]); }
/* jacobian(dot(A, x), x) = A: the pullback's dot(A, u, transposed) runs as Batched, A not batched */
static gr_var *gts_jac_dot_x(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gts_jac1(gr_sin(gr_dot(x[0], x[1])), x[1]); }
/* jacobian(dot(A, B), A): Batched ReshapeLike and Dot (the batched left operand), then Unflatten */
static gr_var *gts_jac_dot_a(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gts_jac1(gr_dot(x[0], x[1]), x[0]); }
static gr_var *gts_jac_dot_b(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gts_jac1(gr_tanh(gr_dot(x[0], x[1])), x[1]); }
/* jacobian(sin(X) * x1, x1) for X (3,4), x1 (4,): ReduceLike runs batched, then Unflatten */
static gr_var *gts_jac_bcast(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gts_jac1(gr_mul(gr_sin(x[0]), x[1]), x[1]); }
/* jacobian of a matrix function of a matrix: (2,3,2,3) */
static gr_var *gts_jac_matrix(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gts_jac1(gr_mul(gr_sin(x[0]), x[0]), x[0]); }
/* hessian(sum(dot(X, B)^2), X): the Jacobian of a gradient */
static gr_var *gts_hessian(gr_graph *g, gr_var *const *x, void *u) {
    gr_var *h = NULL, *w = x[0];
    (void)g; (void)u;
    return gr_hessian(gr_sum(gr_sqr(gr_dot(x[0], x[1]))), 1, &w, &h, NULL) == GR_OK ? h : NULL;
}

/* Banded (gr_function's form of these Jacobians and Hessians): Rosenbrock's Hessian, tridiagonal */
static gr_var *gts_rosenbrock(gr_graph *g, gr_var *x) {
    gr_var *head = gr_slice(x, 0, 0, -1, 1), *tail = gr_slice(x, 0, 1, GR_OPEN, 1);
    gr_var *a = gr_sub(tail, gr_sqr(head)), *b = gr_sub(gr_const(g, 1.0), head);
    return gr_sum(gr_add(gr_mul(gr_const(g, 100.0), gr_sqr(a)), gr_sqr(b)));
}
static gr_var *gts_hess_rosen(gr_graph *g, gr_var *const *x, void *u) {
    gr_var *h = NULL, *w = x[0];
    (void)u;
    return gr_hessian(gts_rosenbrock(g, x[0]), 1, &w, &h, NULL) == GR_OK ? h : NULL;
}

/* a Jacobian differentiated again: the pullback's dot runs row by row (Batched), so this checks
   Batched's own gradient and R-op, with one batched operand and one shared by every row */
static gr_var *gtb_b_jac(gr_graph *g, gr_var *const *x, void *u) {
    gr_var *J = NULL, *xv = x[1];
    (void)g; (void)u;
    if (gr_jacobian(gr_dot(x[0], gr_tanh(xv)), 1, &xv, &J, NULL) != GR_OK) return NULL;
    return J;
}

/* a Batched node made when the graph's node array is full: its type rule builds a node of its own
   (a heap overflow before the fix; test-san sees it), then the Jacobian's values and its gradient */
TEST(test_deriv_batched_at_capacity) {
    static const double av[6] = { 1, 2, 3, 4, 5, 6 }, xv[3] = { 0.5, -1, 2 };
    int k;
    for (k = 0; k < 140; k++) {
        gr_graph *g = gr_graph_new();
        gr_var *A = gr_matrix(g, GR_F64, "A"), *x = gr_vector(g, GR_F64, "x"), *t = x, *J = NULL, *dA, *ins[2], *outs[2];
        int64_t as[2] = { 2, 3 }, n3 = 3, i;
        gr_array *a = gr_array_from(GR_F64, 2, as, av), *xa = gr_array_from(GR_F64, 1, &n3, xv);
        const gr_array *in[2], *out[2];
        gr_fn *f;
        for (i = 0; i < k; i++) t = gr_neg(t);          /* k nodes before the Jacobian's */
        CHECK_STATUS(gr_jacobian(gr_dot(A, t), 1, &x, &J, NULL), GR_OK);
        dA = gr_grad1(gr_sum(gr_sqr(J)), A);            /* through Batched's gradient */
        ins[0] = A; ins[1] = x; outs[0] = J; outs[1] = dA;
        in[0] = a; in[1] = xa;
        f = gr_function(2, ins, 2, outs, NULL);
        CHECK(f && gr_call(f, in, out) == GR_OK);
        for (i = 0; f && i < 6; i++) {
            double sign = (k % 2) ? -1.0 : 1.0;
            CHECK_NEAR(gr_array_get(out[0], i), sign * av[i], 0);
            CHECK_NEAR(gr_array_get(out[1], i), 2 * av[i], 0);
        }
        gr_fn_free(f);
        gr_array_free(a);
        gr_array_free(xa);
        gr_graph_free(g);
    }
}

/* ==== Banded ======================================================================================== */


static gr_var *gts_rosen(gr_graph *g, gr_var *x) {
    gr_var *head = gr_slice(x, 0, 0, -1, 1), *tail = gr_slice(x, 0, 1, GR_OPEN, 1);
    gr_var *a = gr_sub(tail, gr_sqr(head)), *b = gr_sub(gr_const(g, 1.0), head);
    return gr_sum(gr_add(gr_mul(gr_const(g, 100.0), gr_sqr(a)), gr_sqr(b)));
}

/* the compiled form of y has a Banded node and neither an identity nor a row-by-row op */
static void gts_expect_banded(gr_var *x, gr_var *y, const char *label) {
    gr_fn *f = gr_function(1, &x, 1, &y, NULL);
    char buf[4096];
    CHECK_MSG(f != NULL, "%s: gr_function failed", label);
    if (!f) return;
    gts_fn_print(f, buf, sizeof buf);
    CHECK_MSG(strstr(buf, "Banded") && !strstr(buf, "EyeLike") && !strstr(buf, "Batched"), "%s: not banded:\n%s", label, buf);
    gr_fn_free(f);
}

/* a function of nested slices whose Hessian has diagonals only in parts (the slices' gradients place
   them into zeros at views): sum(sin(x[1:][:-1])^2) + sum(cos(x[:-1][:-1])) + sum(x[2:] x[:-2]) */
static gr_var *gts_nested_slices(gr_graph *g, gr_var *x) {
    gr_var *a = gr_sum(gr_sqr(gr_sin(gr_slice(gr_slice(x, 0, 1, GR_OPEN, 1), 0, GR_OPEN, -1, 1))));
    gr_var *b = gr_sum(gr_cos(gr_slice(gr_slice(x, 0, GR_OPEN, -1, 1), 0, GR_OPEN, -1, 1)));
    (void)g;
    return gr_add(gr_add(a, b), gr_sum(gr_mul(gr_slice(x, 0, 2, GR_OPEN, 1), gr_slice(x, 0, GR_OPEN, -2, 1))));
}
static void gts_nested_hessian_want(const gr_array *a, gr_array *want) {
    int64_t n = a->size, i;
    double *w = (double *)want->data;
    for (i = 0; i < n; i++) {
        double xi = gr_array_get(a, i);
        w[i * n + i] = (i >= 1 && i <= n - 2 ? 2 * cos(2 * xi) : 0) + (i <= n - 3 ? -cos(xi) : 0);
        if (i + 2 < n) w[i * n + i + 2] = w[(i + 2) * n + i] = 1;
    }
}
/* Rosenbrock's Hessian H, then its columns c0.. (to the end or to stop from the end) */
static void gts_rosen_hessian_want(const gr_array *a, gr_array *want, int64_t c0, int64_t stop) {
    int64_t n = a->size, m = n - c0 + stop, i, j;
    for (i = 0; i < n; i++)
        for (j = 0; j < m; j++) {
            int64_t c = j + c0;
            double h = 0, xi = gr_array_get(a, i);
            if (c == i) h = (i < n - 1 ? 1200 * xi * xi - 400 * gr_array_get(a, i + 1) + 2 : 0) + (i > 0 ? 200 : 0);
            else if (c == i + 1) h = -400 * xi;
            else if (c == i - 1) h = -400 * gr_array_get(a, c);
            ((double *)want->data)[i * m + j] = h;
        }
}

/* Hessians whose diagonals are parts (slices' gradients): nested slices (parts moved twice, their
   ends from the end added), Rosenbrock's Hessian's columns from 1 and 2 on (parts cut or moved), and
   from 1 to -1 (a part no band describes: computed densely), each against its closed form, the banded
   ones with one Banded node and nothing row by row */
TEST(gts_op_Banded_parts) {
    static const int64_t cuts[4][2] = { { 1, 0 }, { 2, 0 }, { 1, -1 }, { 0, -1 } };
    gtf_rng rng;
    int dyn, c;
    rng.s = 157;
    for (dyn = 0; dyn < 2; dyn++) {
        int64_t n = 7, hs[2] = { 7, 7 };
        gr_graph *g = gr_graph_new();
        gr_var *x = gtf_input(g, GR_F64, 1, &n, dyn, "x"), *H = NULL;
        gr_array *a = gtf_random(&rng, GR_F64, 1, &n, -1.5, 1.5), *want = gr_array_new(GR_F64, 2, hs);
        const char *label = dyn ? "hessian of nested slices, unknown shape" : "hessian of nested slices";
        gts_nested_hessian_want(a, want);
        CHECK_STATUS(gr_hessian(gts_nested_slices(g, x), 1, &x, &H, NULL), GR_OK);
        gtf_expect(g, 1, &x, (const gr_array *const *)&a, H, GR_F64, want, GTF_TOL_F64, label);
        gts_expect_banded(x, H, label);
        gr_array_free(a); gr_array_free(want);
        gr_graph_free(g);
    }
    for (dyn = 0; dyn < 2; dyn++)
        for (c = 0; c < 4; c++) {
            int64_t n = 6, hs[2];
            gr_graph *g = gr_graph_new();
            gr_var *x = gtf_input(g, GR_F64, 1, &n, dyn, "x"), *H = NULL, *Hc;
            gr_array *a = gtf_random(&rng, GR_F64, 1, &n, -1.5, 1.5), *want;
            char label[96];
            hs[0] = n; hs[1] = n - cuts[c][0] + cuts[c][1];
            want = gr_array_new(GR_F64, 2, hs);
            gts_rosen_hessian_want(a, want, cuts[c][0], cuts[c][1]);
            snprintf(label, sizeof label, "hessian(rosenbrock)[:, %d:%d]%s", (int)cuts[c][0], (int)cuts[c][1], dyn ? ", unknown shape" : "");
            CHECK_STATUS(gr_hessian(gts_rosen(g, x), 1, &x, &H, NULL), GR_OK);
            Hc = gr_slice(H, 1, cuts[c][0], cuts[c][1] ? cuts[c][1] : GR_OPEN, 1);
            gtf_expect(g, 1, &x, (const gr_array *const *)&a, Hc, GR_F64, want, GTF_TOL_F64, label);
            if (cuts[c][1] == 0) gts_expect_banded(x, Hc, label);
            gr_array_free(a); gr_array_free(want);
            gr_graph_free(g);
        }
}

TEST(gts_op_Banded) {
    static const int64_t sizes[4] = { 1, 2, 3, 7 };
    gtf_rng rng;
    int dyn, si, t;
    rng.s = 151;
    for (t = 0; t < 2; t++)
        for (dyn = 0; dyn < 2; dyn++)
            for (si = 0; si < 4; si++) {   /* Rosenbrock's Hessian, tridiagonal; n = 1 has empty slices */
                gr_dtype dt = t ? GR_F32 : GR_F64;
                int64_t n = sizes[si], hs[2], i;
                gr_graph *g = gr_graph_new();
                gr_var *x = gtf_input(g, dt, 1, &n, dyn, "x"), *H = NULL;
                gr_array *a = gtf_random(&rng, dt, 1, &n, -1.5, 1.5), *want;
                char label[96];
                hs[0] = hs[1] = n;
                want = gr_array_new(GR_F64, 2, hs);
                for (i = 0; i + 1 < n; i++) {
                    double xi = gr_array_get(a, i), xj = gr_array_get(a, i + 1), *w = (double *)want->data;
                    w[i * n + i] += 1200 * xi * xi - 400 * xj + 2;
                    w[i * n + i + 1] = w[(i + 1) * n + i] = -400 * xi;
                    w[(i + 1) * n + i + 1] += 200;
                }
                snprintf(label, sizeof label, "hessian(rosenbrock), n = %d, %s%s", (int)n, t ? "float32" : "float64", dyn ? ", unknown shape" : "");
                CHECK_STATUS(gr_hessian(gts_rosen(g, x), 1, &x, &H, NULL), GR_OK);
                gtf_expect(g, 1, &x, (const gr_array *const *)&a, H, dt, want, t ? 1e-5 : GTF_TOL_F64, label);
                if (n > 1) gts_expect_banded(x, H, label);
                gr_array_free(a); gr_array_free(want);
                gr_graph_free(g);
            }
    for (dyn = 0; dyn < 2; dyn++) {   /* a rectangular Jacobian: three diagonals, one through a division */
        int64_t n = 6, js[2] = { 4, 6 }, i;
        gr_graph *g = gr_graph_new();
        gr_var *x = gtf_input(g, GR_F64, 1, &n, dyn, "x"), *J = NULL;
        gr_var *l = gr_slice(x, 0, GR_OPEN, -2, 1), *m = gr_slice(x, 0, 1, -1, 1), *r = gr_slice(x, 0, 2, GR_OPEN, 1);
        gr_var *e = gr_sub(gr_mul(gr_sin(r), l), gr_div(m, gr_add(gr_const(g, 1.0), gr_sqr(l))));
        gr_array *a = gtf_random(&rng, GR_F64, 1, &n, -1.5, 1.5), *want = gr_array_new(GR_F64, 2, js);
        double *w = (double *)want->data;
        for (i = 0; i < 4; i++) {
            double x0 = gr_array_get(a, i), x1 = gr_array_get(a, i + 1), x2 = gr_array_get(a, i + 2), q = 1 + x0 * x0;
            w[i * 6 + i] = sin(x2) + x1 * 2 * x0 / (q * q);
            w[i * 6 + i + 1] = -1 / q;
            w[i * 6 + i + 2] = cos(x2) * x0;
        }
        CHECK_STATUS(gr_jacobian(e, 1, &x, &J, NULL), GR_OK);
        gtf_expect(g, 1, &x, (const gr_array *const *)&a, J, GR_F64, want, GTF_TOL_F64, dyn ? "banded jacobian, unknown shape" : "banded jacobian");
        gts_expect_banded(x, J, "banded jacobian");
        gr_array_free(a); gr_array_free(want);
        gr_graph_free(g);
    }
    {   /* a moving sum of 20 shifted slices: more diagonals than a Banded node holds, the rest added densely */
        int64_t n = 24, js[2] = { 5, 24 }, i, s;
        gr_graph *g = gr_graph_new();
        gr_var *x = gtf_input(g, GR_F64, 1, &n, 1, "x"), *e = NULL, *J = NULL;
        gr_array *a = gtf_random(&rng, GR_F64, 1, &n, -1.5, 1.5), *want = gr_array_new(GR_F64, 2, js);
        for (s = 0; s < 20; s++) {
            gr_var *term = gr_mul(gr_const(g, (double)(s + 1)), gr_slice(x, 0, s, s - 19 == 0 ? GR_OPEN : s - 19, 1));
            e = e ? gr_add(e, term) : term;
            for (i = 0; i < 5; i++) ((double *)want->data)[i * 24 + i + s] = (double)(s + 1);
        }
        CHECK_STATUS(gr_jacobian(e, 1, &x, &J, NULL), GR_OK);
        gtf_expect(g, 1, &x, (const gr_array *const *)&a, J, GR_F64, want, GTF_TOL_F64, "jacobian of 20 shifted slices");
        gr_array_free(a); gr_array_free(want);
        gr_graph_free(g);
    }
    for (dyn = 0; dyn < 2; dyn++) {   /* slices no band follows (a step of 2, a start from the end): dense, right */
        int64_t n = 7, js[2] = { 7, 7 }, i;
        gr_graph *g = gr_graph_new();
        gr_var *x = gtf_input(g, GR_F64, 1, &n, dyn, "x"), *H = NULL;
        gr_var *f = gr_add(gr_sum(gr_sqr(gr_sin(gr_slice(x, 0, GR_OPEN, GR_OPEN, 2)))), gr_sum(gr_exp(gr_slice(x, 0, -3, GR_OPEN, 1))));
        gr_array *a = gtf_random(&rng, GR_F64, 1, &n, -1.5, 1.5), *want = gr_array_new(GR_F64, 2, js);
        for (i = 0; i < 7; i++) {
            double v = gr_array_get(a, i), h = 0;
            if (i % 2 == 0) h += 2 * cos(2 * v);         /* d2/dv2 sin(v)^2 */
            if (i >= 4) h += exp(v);
            ((double *)want->data)[i * 7 + i] = h;
        }
        CHECK_STATUS(gr_hessian(f, 1, &x, &H, NULL), GR_OK);
        gtf_expect(g, 1, &x, (const gr_array *const *)&a, H, GR_F64, want, GTF_TOL_F64, dyn ? "hessian through x[::2] and x[-3:], unknown shape" : "hessian through x[::2] and x[-3:]");
        gr_array_free(want);
        {   /* and a Jacobian, whose pullback places banded rows at x[::2] and x[-4:] */
            int64_t j4[2] = { 4, 7 };
            gr_var *e = gr_add(gr_sin(gr_slice(x, 0, GR_OPEN, GR_OPEN, 2)), gr_exp(gr_slice(x, 0, -4, GR_OPEN, 1))), *J = NULL;
            want = gr_array_new(GR_F64, 2, j4);
            for (i = 0; i < 4; i++) {
                ((double *)want->data)[i * 7 + 2 * i] += cos(gr_array_get(a, 2 * i));
                ((double *)want->data)[i * 7 + 3 + i] += exp(gr_array_get(a, 3 + i));
            }
            CHECK_STATUS(gr_jacobian(e, 1, &x, &J, NULL), GR_OK);
            gtf_expect(g, 1, &x, (const gr_array *const *)&a, J, GR_F64, want, GTF_TOL_F64, dyn ? "jacobian through x[::2] and x[-4:], unknown shape" : "jacobian through x[::2] and x[-4:]");
            gr_array_free(want);
        }
        gr_array_free(a);
        gr_graph_free(g);
    }
    for (dyn = 0; dyn < 2; dyn++) {   /* x[:1] * x: a one-column slice broadcast, not banded: still right */
        int64_t n = 4, js[2] = { 4, 4 }, i;
        gr_graph *g = gr_graph_new();
        gr_var *x = gtf_input(g, GR_F64, 1, &n, dyn, "x"), *J = NULL;
        gr_array *a = gtf_random(&rng, GR_F64, 1, &n, -1.5, 1.5), *want = gr_array_new(GR_F64, 2, js);
        double *w = (double *)want->data;
        for (i = 0; i < 4; i++) {
            w[i * 4 + i] += gr_array_get(a, 0);
            w[i * 4] += gr_array_get(a, i);
        }
        CHECK_STATUS(gr_jacobian(gr_mul(gr_slice(x, 0, GR_OPEN, 1, 1), x), 1, &x, &J, NULL), GR_OK);
        gtf_expect(g, 1, &x, (const gr_array *const *)&a, J, GR_F64, want, GTF_TOL_F64, dyn ? "jacobian(x[:1] x), unknown shape" : "jacobian(x[:1] x)");
        gr_array_free(a); gr_array_free(want);
        gr_graph_free(g);
    }
}

/* three diagonals of a rectangular Jacobian: sin(x[2:]) x[:-2] - x[1:-1] / (1 + x[:-2]^2) */
static gr_var *gts_band_expr(gr_graph *g, gr_var *x) {
    gr_var *l = gr_slice(x, 0, GR_OPEN, -2, 1), *m = gr_slice(x, 0, 1, -1, 1), *r = gr_slice(x, 0, 2, GR_OPEN, 1);
    return gr_sub(gr_mul(gr_sin(r), l), gr_div(m, gr_add(gr_const(g, 1.0), gr_sqr(l))));
}
static gr_var *gts_jac_band(gr_graph *g, gr_var *const *x, void *u) { (void)u; return gts_jac1(gts_band_expr(g, x[0]), x[0]); }
/* x[:1] * x: the slice's one column broadcasts, which no band describes (computed densely) */
static gr_var *gts_jac_first(gr_graph *g, gr_var *const *x, void *u) {
    (void)g; (void)u;
    return gts_jac1(gr_mul(gr_slice(x[0], 0, GR_OPEN, 1, 1), x[0]), x[0]);
}

static gr_var *gts_hess_nested(gr_graph *g, gr_var *const *x, void *u) {
    gr_var *h = NULL, *w = x[0];
    (void)u;
    return gr_hessian(gts_nested_slices(g, x[0]), 1, &w, &h, NULL) == GR_OK ? h : NULL;
}
static gr_var *gts_hess_rosen_cols(gr_graph *g, gr_var *const *x, void *u) {
    gr_var *h = gts_hess_rosen(g, x, u);
    return h ? gr_slice(h, 1, 1, GR_OPEN, 1) : NULL;
}
static const gtd_spec specs_EyeLike[] = {
    { "EyeLike", "jacobian(x, x), (4,): the identity", gts_jac_identity, NULL, 1, { V4(-2, 2) }, ND },
    { "EyeLike", "jacobian(sin(x0) * x1, x0), (4,) (4,)", gts_jac_sin, NULL, 2, { V4(-2, 2), V4(-2, 2) }, GG },
    { "EyeLike", "jacobian(sin(x0) * x1, x0), (4,) 0-d", gts_jac_sin, NULL, 2, { V4(-2, 2), S0(-2, 2) }, GG },
    GTD_END
};
static const gtd_spec specs_Unflatten[] = {
    { "Unflatten", "jacobian(X, X), (2,3): the identity (2,3,2,3)", gts_jac_identity, NULL, 1, { GTD_IN(2, 2, 3, -2, 2) }, ND },
    { "Unflatten", "jacobian(sin(X) * X, X), (2,3)", gts_jac_matrix, NULL, 1, { GTD_IN(2, 2, 3, -2, 2) }, GG },
    { "Unflatten", "jacobian(sin(X) * x1, x1), (3,4) (4,)", gts_jac_bcast, NULL, 2, { M34(-2, 2), V4(-2, 2) }, GG },
    GTD_END
};
static const gtd_spec specs_Batched[] = {
    { "Batched", "jacobian(sin(dot(A, x)), x), (3,4) (4,)", gts_jac_dot_x, NULL, 2, { M34(-1, 1), V4(-1, 1) }, GG },
    { "Batched", "jacobian(dot(A, B), A), (3,4) (4,2)", gts_jac_dot_a, NULL, 2, { M34(-1, 1), GTD_IN(2, 4, 2, -1, 1) }, GG },
    { "Batched", "jacobian(tanh(dot(A, B)), B), (3,4) (4,2)", gts_jac_dot_b, NULL, 2, { M34(-1, 1), GTD_IN(2, 4, 2, -1, 1) }, GG },
    { "Batched", "hessian(sum(dot(X, B)^2), X), (2,3) (3,2)", gts_hessian, NULL, 2, { GTD_IN(2, 2, 3, -1, 1), GTD_IN(2, 3, 2, -1, 1) }, GG },
    { "Batched", "jacobian(dot(A, tanh x), x) wrt A and x", gtb_b_jac, NULL, 2, { GTD_IN(2, 3, 4, -1, 1), GTD_IN(1, 4, 0, -1, 1) }, 0 },
    GTD_END
};
static const gtd_spec specs_Banded[] = {
    { "Banded", "hessian(rosenbrock(x), x), (6,)", gts_hess_rosen, NULL, 1, { GTD_IN(1, 6, 0, -1, 1) }, 0 },
    { "Banded", "jacobian(sin(x[2:]) x[:-2] - x[1:-1] / (1 + x[:-2]^2), x), (6,)", gts_jac_band, NULL, 1, { GTD_IN(1, 6, 0, -1, 1) }, 0 },
    { "Banded", "jacobian(x[:1] * x, x), (4,): not banded", gts_jac_first, NULL, 1, { V4(-1, 1) }, 0 },
    { "Banded", "hessian(nested slices of x, x), (7,): diagonals in parts", gts_hess_nested, NULL, 1, { GTD_IN(1, 7, 0, -1, 1) }, 0 },
    { "Banded", "hessian(rosenbrock(x), x)[:, 1:], (6,)", gts_hess_rosen_cols, NULL, 1, { GTD_IN(1, 6, 0, -1, 1) }, 0 },
    GTD_END
};

GT_CASES(EyeLike) = {
    GT_VALUES(gts_op_EyeLike),
    GT_SPECS(specs_EyeLike),
    GT_NO_ERRORS("made only by gr_jacobian and gr_hessian, from checked operands"),
    GT_END
};
GT_CASES(Unflatten) = {
    GT_VALUES(gts_op_Unflatten),
    GT_SPECS(specs_Unflatten),
    GT_NO_ERRORS("made only by gr_jacobian and gr_hessian, from checked operands"),
    GT_END
};
GT_CASES(Batched) = {
    GT_VALUES(gts_op_Batched),
    GT_VALUES(gts_op_Batched_nested),
    GT_VALUES(test_batched_node_registration),
    GT_SPECS(specs_Batched),
    GT_DERIVS(test_deriv_batched_at_capacity),
    GT_NO_ERRORS("made only by the batching rules of gr_jacobian and gr_hessian, from checked nodes"),
    GT_END
};
GT_CASES(Banded) = {
    GT_VALUES(gts_op_Banded),
    GT_VALUES(gts_op_Banded_parts),
    GT_SPECS(specs_Banded),
    GT_NO_ERRORS("made only by gr_function's rewrites, from checked nodes"),
    GT_END
};
