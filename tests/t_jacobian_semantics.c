/* tests/t_jacobian_semantics.c: gr_jacobian (SEMANTICS 6, decision 5: any ndim, shape
   (*expr.shape, *wrt.shape)) and gr_hessian (SEMANTICS 7, decision 6: diagonal blocks, any ndim)
   against plain-C values, with the disconnected policies, consider_constant and the error codes. */
#include "rs_util.h"

/* jacobian(2x, x) = 2 I; jacobian(x * z, [x, z]) = [diag(z), diag(x)] */
TEST(test_js_linear_and_product) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *z = gr_vector(g, GR_F64, "z"), *wrt[2], *J[3] = { NULL, NULL, NULL }, *ins[2];
    double xs[4] = { 0.5, -1, 2, 3 }, zs[4] = { 4, 0, -2, 1.5 }, w0[16], w1[16], w2[16];
    int64_t s44[2] = { 4, 4 };
    gr_array *va[2], *res[3];
    int i, j;
    CHECK_STATUS(gr_jacobian(gr_mul(gr_const(g, 2.0), x), 1, &x, &J[0], NULL), GR_OK);
    wrt[0] = x; wrt[1] = z;
    CHECK_STATUS(gr_jacobian(gr_mul(x, z), 2, wrt, &J[1], NULL), GR_OK);
    for (i = 0; i < 4; i++)
        for (j = 0; j < 4; j++) {
            w0[i * 4 + j] = i == j ? 2 : 0;
            w1[i * 4 + j] = i == j ? zs[i] : 0;
            w2[i * 4 + j] = i == j ? xs[i] : 0;
        }
    ins[0] = x; ins[1] = z;
    va[0] = rs_vec(4, xs); va[1] = rs_vec(4, zs);
    CHECK(rs_run(2, ins, (const gr_array *const *)va, 3, J, res));
    for (i = 0; i < 3; i++) CHECK_SHAPE(res[i], 2, s44);
    CHECK_ARR(res[0], 16, w0, 0);
    CHECK_ARR(res[1], 16, w1, 0);
    CHECK_ARR(res[2], 16, w2, 0);
    rs_free(3, res); rs_free(2, va);
    gr_graph_free(g);
}

/* jacobian(2 X.sum(axis=0), X) for a 10 x 10 X: J[j, i, k] = 2 if k == j else 0 */
TEST(test_js_sum_axis0) {
    gr_graph *g = gr_graph_new();
    gr_var *X = gr_matrix(g, GR_F64, "X"), *J = NULL;
    double xs[100], want[1000];
    int64_t s3[3] = { 10, 10, 10 };
    uint64_t seed = 7;
    gr_array *va[1], *res[1];
    int j, i, k;
    rs_fill(&seed, xs, 100, -1, 1);
    CHECK_STATUS(gr_jacobian(gr_mul(gr_const(g, 2.0), gr_sum_axis(X, 0)), 1, &X, &J, NULL), GR_OK);
    CHECK_EQ_INT(gr_var_ndim(J), 3);
    for (j = 0; j < 10; j++)
        for (i = 0; i < 10; i++)
            for (k = 0; k < 10; k++) want[(j * 10 + i) * 10 + k] = k == j ? 2 : 0;
    va[0] = rs_mat(10, 10, xs);
    CHECK(rs_run(1, &X, (const gr_array *const *)va, 1, &J, res));
    CHECK_SHAPE(res[0], 3, s3);
    CHECK_ARR(res[0], 1000, want, 0);
    rs_free(1, res); rs_free(1, va);
    gr_graph_free(g);
}

/* jacobian((X * Z).sum(axis=1), [X, Z]): J_X[i, i, :] = Z[i, :], J_Z[i, i, :] = X[i, :], zeros elsewhere */
TEST(test_js_rowwise_product) {
    gr_graph *g = gr_graph_new();
    gr_var *X = gr_matrix(g, GR_F64, "X"), *Z = gr_matrix(g, GR_F64, "Z"), *wrt[2], *J[2] = { NULL, NULL };
    double xs[12], zs[12], wx[36], wz[36];
    int64_t s3[3] = { 3, 3, 4 };
    uint64_t seed = 11;
    gr_array *va[2], *res[2];
    int a, i, k;
    rs_fill(&seed, xs, 12, -2, 2);
    rs_fill(&seed, zs, 12, -2, 2);
    wrt[0] = X; wrt[1] = Z;
    CHECK_STATUS(gr_jacobian(gr_sum_axis(gr_mul(X, Z), 1), 2, wrt, J, NULL), GR_OK);
    for (a = 0; a < 3; a++)
        for (i = 0; i < 3; i++)
            for (k = 0; k < 4; k++) {
                wx[(a * 3 + i) * 4 + k] = a == i ? zs[i * 4 + k] : 0;
                wz[(a * 3 + i) * 4 + k] = a == i ? xs[i * 4 + k] : 0;
            }
    va[0] = rs_mat(3, 4, xs); va[1] = rs_mat(3, 4, zs);
    CHECK(rs_run(2, wrt, (const gr_array *const *)va, 2, J, res));
    CHECK_SHAPE(res[0], 3, s3);
    CHECK_SHAPE(res[1], 3, s3);
    CHECK_ARR(res[0], 36, wx, 0);
    CHECK_ARR(res[1], 36, wz, 0);
    rs_free(2, res); rs_free(2, va);
    gr_graph_free(g);
}

/* jacobian(1 + v1, v2): IGNORE -> zeros (4, 4), the scalar analogue -> 0; RAISE (the default) ->
   GR_ERR_DISCONNECTED_INPUT with every entry NULL; WARN -> one message and zeros */
TEST(test_js_disconnected) {
    gr_graph *g = gr_graph_new();
    gr_var *v1 = gr_vector(g, GR_F64, "v1"), *v2 = gr_vector(g, GR_F64, "v2"), *s1 = gr_scalar(g, GR_F64, "s1"), *s2 = gr_scalar(g, GR_F64, "s2");
    gr_var *e = gr_add(gr_const(g, 1.0), v1), *es = gr_add(gr_const(g, 1.0), s1), *J[2] = { v1, v1 }, *ins[4], *wrt[2];
    double a4[4] = { 1, 2, 3, 4 }, b4[4] = { 5, 6, 7, 8 };
    int64_t s44[2] = { 4, 4 };
    gr_array *va[4], *res[2];
    gr_grad_opts o;
    rs_log lg;
    CHECK_STATUS(gr_jacobian(e, 1, &v2, J, NULL), GR_ERR_DISCONNECTED_INPUT);
    CHECK(J[0] == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_DISCONNECTED_INPUT);
    gr_graph_clear_error(g);
    wrt[0] = v1; wrt[1] = v2;
    J[0] = J[1] = v1;
    CHECK_STATUS(gr_jacobian(e, 2, wrt, J, NULL), GR_ERR_DISCONNECTED_INPUT);
    CHECK(J[0] == NULL && J[1] == NULL);
    gr_graph_clear_error(g);
    CHECK_STATUS(gr_jacobian(es, 1, &s2, J, NULL), GR_ERR_DISCONNECTED_INPUT);
    gr_graph_clear_error(g);
    memset(&o, 0, sizeof o);
    o.disconnected_inputs = GR_IGNORE;
    CHECK_STATUS(gr_jacobian(e, 1, &v2, &J[0], &o), GR_OK);
    CHECK_STATUS(gr_jacobian(es, 1, &s2, &J[1], &o), GR_OK);
    CHECK_EQ_INT(gr_var_ndim(J[1]), 0);
    ins[0] = v1; ins[1] = v2; ins[2] = s1; ins[3] = s2;
    va[0] = rs_vec(4, a4); va[1] = rs_vec(4, b4); va[2] = gr_array_scalar(GR_F64, 3); va[3] = gr_array_scalar(GR_F64, 4);
    CHECK(rs_run(4, ins, (const gr_array *const *)va, 2, J, res));
    CHECK_SHAPE(res[0], 2, s44);
    CHECK(rs_all_zero(res[0]));
    CHECK(res[1] && res[1]->ndim == 0 && rs_all_zero(res[1]));
    rs_free(2, res);
    /* WARN */
    memset(&lg, 0, sizeof lg);
    gr_graph_set_log(g, rs_log_fn, &lg);
    o.disconnected_inputs = GR_WARN;
    CHECK_STATUS(gr_jacobian(e, 1, &v2, &J[0], &o), GR_OK);
    CHECK(lg.calls >= 1);
    CHECK(rs_run(4, ins, (const gr_array *const *)va, 1, J, res));
    CHECK(rs_all_zero(res[0]));
    rs_free(1, res); rs_free(4, va);
    gr_graph_free(g);
}

/* a 0-d expression gives the plain gradient, shaped like wrt */
TEST(test_js_scalar_expression) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *m = gr_matrix(g, GR_F64, "m"), *wrt[2], *J[2] = { NULL, NULL }, *e;
    double xs[3] = { 1, -2, 0.5 }, ms[6] = { 1, 2, 3, 4, 5, 6 }, wx[3], wm[6];
    int64_t s23[2] = { 2, 3 }, n3 = 3;
    gr_array *va[2], *res[2];
    int i;
    e = gr_add(gr_sum(gr_sqr(x)), gr_sum(gr_mul(m, m)));
    wrt[0] = x; wrt[1] = m;
    CHECK_STATUS(gr_jacobian(e, 2, wrt, J, NULL), GR_OK);
    CHECK_EQ_INT(gr_var_ndim(J[0]), 1);
    CHECK_EQ_INT(gr_var_ndim(J[1]), 2);
    for (i = 0; i < 3; i++) wx[i] = 2 * xs[i];
    for (i = 0; i < 6; i++) wm[i] = 2 * ms[i];
    va[0] = rs_vec(3, xs); va[1] = rs_mat(2, 3, ms);
    CHECK(rs_run(2, wrt, (const gr_array *const *)va, 2, J, res));
    CHECK_SHAPE(res[0], 1, &n3);
    CHECK_SHAPE(res[1], 2, s23);
    CHECK_ARR(res[0], 3, wx, 0);
    CHECK_ARR(res[1], 6, wm, 0);
    rs_free(2, res); rs_free(2, va);
    gr_graph_free(g);
}

/* PyTensor: x = [0, 1, 2], J = jacobian(outer(x, x), x), J[1] = [[1,0,0],[0,2,0],[0,2,1]] */
TEST(test_js_outer) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *J = NULL;
    double xs[3] = { 0, 1, 2 }, j1[9] = { 1, 0, 0, 0, 2, 0, 0, 2, 1 }, row[9];
    int64_t s3[3] = { 3, 3, 3 };
    gr_array *va[1], *res[1];
    int i;
    CHECK_STATUS(gr_jacobian(gr_outer(x, x), 1, &x, &J, NULL), GR_OK);
    va[0] = rs_vec(3, xs);
    CHECK(rs_run(1, &x, (const gr_array *const *)va, 1, &J, res));
    CHECK_SHAPE(res[0], 3, s3);
    for (i = 0; res[0] && i < 9; i++) row[i] = gr_array_get(res[0], 9 + i);
    {
        gr_array *r1 = rs_mat(3, 3, row);
        CHECK_ARR(r1, 9, j1, 0);
        gr_array_free(r1);
    }
    rs_free(1, res); rs_free(1, va);
    gr_graph_free(g);
}

/* expressions of ndim 2 and 3 (decision 5): shape (*expr, *wrt) */
TEST(test_js_higher_ndim) {
    gr_graph *g = gr_graph_new();
    int64_t s234[3] = { 2, 3, 4 };
    gr_var *X = gr_matrix(g, GR_F64, "X"), *T = gr_tensor(g, GR_F64, 3, NULL, "T"), *w = gr_vector(g, GR_F64, "w");
    gr_var *J2 = NULL, *J3[2] = { NULL, NULL }, *wrt[2], *ins[3];
    double xs[6], ts[24], ws[4], want2[36], want3w[96], want3t[576];
    int64_t s2323[4] = { 2, 3, 2, 3 }, s3w[4] = { 2, 3, 4, 4 }, s3t[6] = { 2, 3, 4, 2, 3, 4 };
    uint64_t seed = 5;
    gr_array *va[3], *res[3];
    int a, b, c, k;
    rs_fill(&seed, xs, 6, -1, 1);
    rs_fill(&seed, ts, 24, -1, 1);
    rs_fill(&seed, ws, 4, -1, 1);
    /* ndim 2: E = X * X (2 x 3) with respect to X: J[i,j,k,l] = 2 X[i,j] d(ik) d(jl) */
    CHECK_STATUS(gr_jacobian(gr_mul(X, X), 1, &X, &J2, NULL), GR_OK);
    CHECK_EQ_INT(gr_var_ndim(J2), 4);
    for (a = 0; a < 6; a++)
        for (k = 0; k < 6; k++) want2[a * 6 + k] = a == k ? 2 * xs[a] : 0;
    /* ndim 3: E = sin(T) * w (w along the last axis) with respect to w and T */
    wrt[0] = w; wrt[1] = T;
    CHECK_STATUS(gr_jacobian(gr_mul(gr_sin(T), w), 2, wrt, J3, NULL), GR_OK);
    CHECK_EQ_INT(gr_var_ndim(J3[0]), 4);
    CHECK_EQ_INT(gr_var_ndim(J3[1]), 6);
    for (a = 0; a < 2; a++)
        for (b = 0; b < 3; b++)
            for (c = 0; c < 4; c++) {
                int e = (a * 3 + b) * 4 + c;
                for (k = 0; k < 4; k++) want3w[e * 4 + k] = k == c ? sin(ts[e]) : 0;
                for (k = 0; k < 24; k++) want3t[e * 24 + k] = k == e ? cos(ts[e]) * ws[c] : 0;
            }
    ins[0] = X; ins[1] = T; ins[2] = w;
    va[0] = rs_mat(2, 3, xs); va[1] = rs_arr(3, s234, ts); va[2] = rs_vec(4, ws);
    {
        gr_var *outs[3];
        outs[0] = J2; outs[1] = J3[0]; outs[2] = J3[1];
        CHECK(rs_run(3, ins, (const gr_array *const *)va, 3, outs, res));
    }
    CHECK_SHAPE(res[0], 4, s2323);
    CHECK_SHAPE(res[1], 4, s3w);
    CHECK_SHAPE(res[2], 6, s3t);
    CHECK_ARR(res[0], 36, want2, 1e-15);
    CHECK_ARR(res[1], 96, want3w, 1e-15);
    CHECK_ARR(res[2], 576, want3t, 1e-15);
    rs_free(3, res); rs_free(3, va);
    gr_graph_free(g);
}

/* consider_constant: with c = sin(x) held constant, jacobian(x * c, x) = diag(sin x) */
TEST(test_js_consider_constant) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *c = gr_sin(x), *e = gr_mul(x, c), *J[2] = { NULL, NULL };
    double xs[3] = { 0.5, -1, 2 }, w0[9], w1[9];
    gr_array *va[1], *res[2];
    gr_grad_opts o;
    int i, j;
    memset(&o, 0, sizeof o);
    o.consider_constant = &c;
    o.n_consider_constant = 1;
    CHECK_STATUS(gr_jacobian(e, 1, &x, &J[0], &o), GR_OK);
    CHECK_STATUS(gr_jacobian(e, 1, &x, &J[1], NULL), GR_OK);
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) {
            w0[i * 3 + j] = i == j ? sin(xs[i]) : 0;
            w1[i * 3 + j] = i == j ? sin(xs[i]) + xs[i] * cos(xs[i]) : 0;
        }
    va[0] = rs_vec(3, xs);
    CHECK(rs_run(1, &x, (const gr_array *const *)va, 2, J, res));
    CHECK_ARR(res[0], 9, w0, 1e-15);
    CHECK_ARR(res[1], 9, w1, 1e-15);
    rs_free(2, res); rs_free(1, va);
    gr_graph_free(g);
}

/* y = tanh(A x + b) for a random 7 x 5 A: dy/dx = diag(1 - y^2) A, dy/db = diag(1 - y^2),
   dy/dA[i, j, k] = (1 - y_i^2) d(ij) x_k; computed in plain C */
TEST(test_js_tanh_layer) {
    gr_graph *g = gr_graph_new();
    gr_var *A = gr_matrix(g, GR_F64, "A"), *x = gr_vector(g, GR_F64, "x"), *b = gr_vector(g, GR_F64, "b");
    gr_var *y = gr_tanh(gr_add(gr_dot(A, x), b)), *wrt[3], *J[3] = { NULL, NULL, NULL };
    double as[35], xs[5], bs[7], ys[7], wx[35], wb[49], wA[245];
    int64_t s75[2] = { 7, 5 }, s77[2] = { 7, 7 }, s775[3] = { 7, 7, 5 };
    uint64_t seed = 2024;
    gr_array *va[3], *res[3];
    int i, j, k;
    rs_fill(&seed, as, 35, -1, 1);
    rs_fill(&seed, xs, 5, -1, 1);
    rs_fill(&seed, bs, 7, -0.5, 0.5);
    for (i = 0; i < 7; i++) {
        double s = bs[i];
        for (k = 0; k < 5; k++) s += as[i * 5 + k] * xs[k];
        ys[i] = tanh(s);
    }
    for (i = 0; i < 7; i++) {
        double d = 1 - ys[i] * ys[i];
        for (k = 0; k < 5; k++) wx[i * 5 + k] = d * as[i * 5 + k];
        for (j = 0; j < 7; j++) {
            wb[i * 7 + j] = i == j ? d : 0;
            for (k = 0; k < 5; k++) wA[(i * 7 + j) * 5 + k] = i == j ? d * xs[k] : 0;
        }
    }
    wrt[0] = x; wrt[1] = b; wrt[2] = A;
    CHECK_STATUS(gr_jacobian(y, 3, wrt, J, NULL), GR_OK);
    va[0] = rs_vec(5, xs); va[1] = rs_vec(7, bs); va[2] = rs_mat(7, 5, as);
    CHECK(rs_run(3, wrt, (const gr_array *const *)va, 3, J, res));
    CHECK_SHAPE(res[0], 2, s75);
    CHECK_SHAPE(res[1], 2, s77);
    CHECK_SHAPE(res[2], 3, s775);
    CHECK_ARR(res[0], 35, wx, 1e-14);
    CHECK_ARR(res[1], 49, wb, 1e-14);
    CHECK_ARR(res[2], 245, wA, 1e-14);
    rs_free(3, res); rs_free(3, va);
    gr_graph_free(g);
}

/* W4 as users write it: the Jacobian of tanh(A x + b) wrt x with the shapes undeclared compiles to
   the graph the declared shapes give (d[:, None] * A, no dense product of a diagonal matrix: src
   rewrite gr__dot_rowsum_diag), and stays right where the addition broadcasts: A with one row
   against b of 7, and b of one element against A's 7 rows. Truth: J[i, :] = (1 - y_i^2) A[r(i), :] */
TEST(test_js_tanh_layer_undeclared_broadcast) {
    static const int64_t rows_a[3] = { 7, 1, 7 }, len_b[3] = { 7, 7, 1 };
    double as[35], xs[5], bs[7], ys[7], wx[35];
    int64_t s75[2] = { 7, 5 }, s5 = 5, s7 = 7, as_shape[2] = { 7, 5 };
    uint64_t seed = 2025;
    size_t n_decl = 0;
    int c, i, k;
    rs_fill(&seed, as, 35, -1, 1);
    rs_fill(&seed, xs, 5, -1, 1);
    rs_fill(&seed, bs, 7, -0.5, 0.5);
    {                                         /* the declared shapes' compiled graph */
        gr_graph *g = gr_graph_new();
        gr_var *A = gr_tensor(g, GR_F64, 2, as_shape, "A"), *x = gr_tensor(g, GR_F64, 1, &s5, "x"), *b = gr_tensor(g, GR_F64, 1, &s7, "b");
        gr_var *J = NULL, *ins[3];
        gr_fn *f;
        CHECK_STATUS(gr_jacobian(gr_tanh(gr_add(gr_dot(A, x), b)), 1, &x, &J, NULL), GR_OK);
        ins[0] = A; ins[1] = x; ins[2] = b;
        f = gr_function(3, ins, 1, &J, NULL);
        CHECK(f != NULL);
        n_decl = gr_fn_node_count(f);
        gr_fn_free(f);
        gr_graph_free(g);
    }
    for (c = 0; c < 3; c++) {
        gr_graph *g = gr_graph_new();
        gr_var *A = gr_matrix(g, GR_F64, "A"), *x = gr_vector(g, GR_F64, "x"), *b = gr_vector(g, GR_F64, "b");
        gr_var *J = NULL, *ins[3];
        gr_array *va[3], *res[1];
        gr_fn *f;
        for (i = 0; i < 7; i++) {
            const double *ar = as + (rows_a[c] == 1 ? 0 : i) * 5;
            double s = bs[len_b[c] == 1 ? 0 : i], d;
            for (k = 0; k < 5; k++) s += ar[k] * xs[k];
            ys[i] = tanh(s);
            d = 1 - ys[i] * ys[i];
            for (k = 0; k < 5; k++) wx[i * 5 + k] = d * ar[k];
        }
        CHECK_STATUS(gr_jacobian(gr_tanh(gr_add(gr_dot(A, x), b)), 1, &x, &J, NULL), GR_OK);
        ins[0] = A; ins[1] = x; ins[2] = b;
        f = gr_function(3, ins, 1, &J, NULL);
        CHECK(f != NULL && gr_fn_node_count(f) == n_decl);
        gr_fn_free(f);
        va[0] = rs_mat(rows_a[c], 5, as); va[1] = rs_vec(5, xs); va[2] = rs_vec(len_b[c], bs);
        CHECK(rs_run(3, ins, (const gr_array *const *)va, 1, &J, res));
        CHECK_SHAPE(res[0], 2, s75);
        CHECK_ARR(res[0], 35, wx, 1e-14);
        rs_free(1, res); rs_free(3, va);
        gr_graph_free(g);
    }
}

/* a repeated wrt gives the same block twice; an intermediate wrt cuts the graph there
   (jacobian(sin(h), h) = diag(cos h) for h = exp(x)); an integer wrt gets a float Jacobian, as if
   it were real (SEMANTICS 2.7: xi 2.5 xi -> diag(5 xi); but sqr(xi) is integer-valued, so
   sqr(xi) 2.5 -> zeros); a float32 expression keeps float32 */
TEST(test_js_wrt_kinds) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *h = gr_exp(x), *xi = gr_vector(g, GR_I64, "xi"), *x32 = gr_vector(g, GR_F32, "x32");
    gr_var *wrt[2], *J[5] = { NULL, NULL, NULL, NULL, NULL }, *ins[3];
    double xs[2] = { 0.5, -1 }, w0[4], w2[4], w3[4], w4[4];
    int64_t xis[2] = { 3, -4 }, n2 = 2;
    float x32s[2] = { 0.25f, 2.0f };
    gr_array *va[3], *res[5];
    int i, j;
    wrt[0] = x; wrt[1] = x;
    CHECK_STATUS(gr_jacobian(gr_sin(x), 2, wrt, J, NULL), GR_OK);
    CHECK_STATUS(gr_jacobian(gr_sin(h), 1, &h, &J[2], NULL), GR_OK);
    CHECK_STATUS(gr_jacobian(gr_mul(gr_mul(xi, gr_const(g, 2.5)), xi), 1, &xi, &J[3], NULL), GR_OK);
    CHECK_STATUS(gr_jacobian(gr_sin(x32), 1, &x32, &J[4], NULL), GR_OK);
    CHECK_EQ_INT(gr_var_dtype(J[3]), GR_F64);
    CHECK_EQ_INT(gr_var_dtype(J[4]), GR_F32);
    for (i = 0; i < 2; i++)
        for (j = 0; j < 2; j++) {
            w0[i * 2 + j] = i == j ? cos(xs[i]) : 0;
            w2[i * 2 + j] = i == j ? cos(exp(xs[i])) : 0;
            w3[i * 2 + j] = i == j ? 5.0 * (double)xis[i] : 0;
            w4[i * 2 + j] = i == j ? cos((double)x32s[i]) : 0;
        }
    ins[0] = x; ins[1] = xi; ins[2] = x32;
    va[0] = rs_vec(2, xs); va[1] = gr_array_from(GR_I64, 1, &n2, xis); va[2] = gr_array_from(GR_F32, 1, &n2, x32s);
    CHECK(rs_run(3, ins, (const gr_array *const *)va, 5, J, res));
    CHECK_ARR(res[0], 4, w0, 1e-15);
    CHECK_ARR(res[1], 4, w0, 1e-15);
    CHECK_ARR(res[2], 4, w2, 1e-15);
    CHECK_ARR(res[3], 4, w3, 1e-15);
    CHECK_ARR(res[4], 4, w4, 1e-6);
    rs_free(5, res);
    {
        gr_var *Jz = NULL;
        CHECK_STATUS(gr_jacobian(gr_mul(gr_sqr(xi), gr_const(g, 2.5)), 1, &xi, &Jz, NULL), GR_OK);
        CHECK(rs_run(1, &xi, (const gr_array *const *)&va[1], 1, &Jz, res));
        CHECK(res[0] && res[0]->size == 4 && rs_all_zero(res[0]));
        rs_free(1, res);
    }
    rs_free(3, va);
    gr_graph_free(g);
}

/* ---- hessian ------------------------------------------------------------------------------------ */

/* hessian(sum(x^2)) at arange(10) = 2 I; the doc example x = [4, 4] -> [[2, 0], [0, 2]] */
TEST(test_hs_sum_sq) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *H = NULL;
    double xs[10], want[100], x2[2] = { 4, 4 }, w2[4] = { 2, 0, 0, 2 };
    int64_t s10[2] = { 10, 10 }, s2[2] = { 2, 2 };
    gr_array *va[1], *res[1];
    int i, j;
    for (i = 0; i < 10; i++) xs[i] = i;
    for (i = 0; i < 10; i++)
        for (j = 0; j < 10; j++) want[i * 10 + j] = i == j ? 2 : 0;
    CHECK_STATUS(gr_hessian(gr_sum(gr_sqr(x)), 1, &x, &H, NULL), GR_OK);
    va[0] = rs_vec(10, xs);
    CHECK(rs_run(1, &x, (const gr_array *const *)va, 1, &H, res));
    CHECK_SHAPE(res[0], 2, s10);
    CHECK_ARR(res[0], 100, want, 0);
    rs_free(1, res); rs_free(1, va);
    va[0] = rs_vec(2, x2);
    CHECK(rs_run(1, &x, (const gr_array *const *)va, 1, &H, res));
    CHECK_SHAPE(res[0], 2, s2);
    CHECK_ARR(res[0], 4, w2, 0);
    rs_free(1, res); rs_free(1, va);
    gr_graph_free(g);
}

/* a linear cost: zero Hessian, no error (the second level ignores disconnection); a cost that does
   not depend on w at all follows disconnected_inputs */
TEST(test_hs_linear_and_disconnected) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *H[2] = { NULL, NULL }, *ins[2];
    double xs[3] = { 1, 2, 3 };
    int64_t s33[2] = { 3, 3 };
    gr_array *va[2], *res[2];
    gr_grad_opts o;
    CHECK_STATUS(gr_hessian(gr_sum(gr_mul(gr_const(g, 3.0), x)), 1, &x, &H[0], NULL), GR_OK);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    H[1] = x;
    CHECK_STATUS(gr_hessian(gr_sum(gr_exp(y)), 1, &x, &H[1], NULL), GR_ERR_DISCONNECTED_INPUT);
    CHECK(H[1] == NULL);
    gr_graph_clear_error(g);
    memset(&o, 0, sizeof o);
    o.disconnected_inputs = GR_IGNORE;
    CHECK_STATUS(gr_hessian(gr_sum(gr_exp(y)), 1, &x, &H[1], &o), GR_OK);
    ins[0] = x; ins[1] = y;
    va[0] = rs_vec(3, xs); va[1] = rs_vec(3, xs);
    CHECK(rs_run(2, ins, (const gr_array *const *)va, 2, H, res));
    CHECK_SHAPE(res[0], 2, s33);
    CHECK(rs_all_zero(res[0]));
    CHECK_SHAPE(res[1], 2, s33);
    CHECK(rs_all_zero(res[1]));
    rs_free(2, res); rs_free(2, va);
    gr_graph_free(g);
}

/* wrt of ndim 0 and 2 (decision 6): shape (*w, *w) */
TEST(test_hs_ndim0_ndim2) {
    gr_graph *g = gr_graph_new();
    gr_var *s = gr_scalar(g, GR_F64, "s"), *X = gr_matrix(g, GR_F64, "X"), *H[2] = { NULL, NULL }, *ins[2], *sx;
    double sv = 0.7, xs[6] = { 1, -2, 0.5, 3, -1, 2 }, w0[1], w1[36];
    int64_t s2323[4] = { 2, 3, 2, 3 };
    gr_array *va[2], *res[2];
    int a, b;
    CHECK_STATUS(gr_hessian(gr_add(gr_mul(gr_sqr(s), s), gr_sin(s)), 1, &s, &H[0], NULL), GR_OK);
    CHECK_EQ_INT(gr_var_ndim(H[0]), 0);
    /* sum(X^3) + (sum X)^2: H[ab] = 6 X_a d(ab) + 2 */
    sx = gr_sum(X);
    CHECK_STATUS(gr_hessian(gr_add(gr_sum(gr_mul(gr_sqr(X), X)), gr_sqr(sx)), 1, &X, &H[1], NULL), GR_OK);
    CHECK_EQ_INT(gr_var_ndim(H[1]), 4);
    w0[0] = 6 * sv - sin(sv);
    for (a = 0; a < 6; a++)
        for (b = 0; b < 6; b++) w1[a * 6 + b] = (a == b ? 6 * xs[a] : 0) + 2;
    ins[0] = s; ins[1] = X;
    va[0] = gr_array_scalar(GR_F64, sv); va[1] = rs_mat(2, 3, xs);
    CHECK(rs_run(2, ins, (const gr_array *const *)va, 2, H, res));
    CHECK(res[0] && res[0]->ndim == 0);
    CHECK_ARR(res[0], 1, w0, 1e-14);
    CHECK_SHAPE(res[1], 4, s2323);
    CHECK_ARR(res[1], 36, w1, 1e-14);
    rs_free(2, res); rs_free(2, va);
    gr_graph_free(g);
}

/* several wrt: the diagonal blocks only. c = sum(x^2 y) + sum(y^3) + sum(x) sum(y):
   H_xx = diag(2 y), H_yy = diag(6 y) (the cross terms 2x d + 1 are not returned) */
TEST(test_hs_diagonal_blocks) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *wrt[2], *H[2] = { NULL, NULL }, *c;
    double xs[3] = { 1, -2, 0.5 }, ys[3] = { 3, 0.25, -1 }, wx[9], wy[9];
    gr_array *va[2], *res[2];
    int i, j;
    c = gr_add(gr_add(gr_sum(gr_mul(gr_sqr(x), y)), gr_sum(gr_mul(gr_sqr(y), y))), gr_mul(gr_sum(x), gr_sum(y)));
    wrt[0] = x; wrt[1] = y;
    CHECK_STATUS(gr_hessian(c, 2, wrt, H, NULL), GR_OK);
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) {
            wx[i * 3 + j] = i == j ? 2 * ys[i] : 0;
            wy[i * 3 + j] = i == j ? 6 * ys[i] : 0;
        }
    va[0] = rs_vec(3, xs); va[1] = rs_vec(3, ys);
    CHECK(rs_run(2, wrt, (const gr_array *const *)va, 2, H, res));
    CHECK_ARR(res[0], 9, wx, 1e-15);
    CHECK_ARR(res[1], 9, wy, 1e-15);
    rs_free(2, res); rs_free(2, va);
    gr_graph_free(g);
}

/* a cost that is not 0-d: GR_ERR_TYPE, every entry NULL; consider_constant is honoured */
TEST(test_hs_errors_and_options) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *H[2] = { x, x }, *wrt[2], *c, *k;
    double xs[3] = { 1, -2, 0.5 }, w[9];
    gr_array *va[1], *res[1];
    gr_grad_opts o;
    int i, j;
    wrt[0] = x; wrt[1] = x;
    CHECK_STATUS(gr_hessian(gr_sqr(x), 2, wrt, H, NULL), GR_ERR_TYPE);
    CHECK(H[0] == NULL && H[1] == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    gr_graph_clear_error(g);
    CHECK_STATUS(gr_hessian(gr_outer(x, x), 1, &x, H, NULL), GR_ERR_TYPE);
    gr_graph_clear_error(g);
    /* c = sum(x^2 k) with k = exp(x) held constant: H = diag(2 exp(x)) */
    k = gr_exp(x);
    c = gr_sum(gr_mul(gr_sqr(x), k));
    memset(&o, 0, sizeof o);
    o.consider_constant = &k;
    o.n_consider_constant = 1;
    CHECK_STATUS(gr_hessian(c, 1, &x, H, &o), GR_OK);
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) w[i * 3 + j] = i == j ? 2 * exp(xs[i]) : 0;
    va[0] = rs_vec(3, xs);
    CHECK(rs_run(1, &x, (const gr_array *const *)va, 1, H, res));
    CHECK_ARR(res[0], 9, w, 1e-14);
    rs_free(1, res); rs_free(1, va);
    gr_graph_free(g);
}

SUITE(suite_jacobian_semantics) = {
    CASE(test_js_linear_and_product), CASE(test_js_sum_axis0), CASE(test_js_rowwise_product), CASE(test_js_disconnected),
    CASE(test_js_scalar_expression), CASE(test_js_outer), CASE(test_js_higher_ndim), CASE(test_js_consider_constant),
    CASE(test_js_tanh_layer), CASE(test_js_tanh_layer_undeclared_broadcast), CASE(test_hs_sum_sq), CASE(test_hs_linear_and_disconnected), CASE(test_hs_ndim0_ndim2),
    CASE(test_hs_diagonal_blocks), CASE(test_hs_errors_and_options), CASE(test_js_wrt_kinds), END_SUITE
};
