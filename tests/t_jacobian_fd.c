/* tests/t_jacobian_fd.c: the three derivative drivers against each other and against central
   differences, over a table of expressions that exercise the batching rules of gr_jacobian (views,
   take, updates, dot on either side, reductions, softmax, reshapes, users' ops): for each,
     gr_jacobian(e, x)     against the column-by-column central differences of e,
     gr_rop(e, x, v)       against J v,
     gr_lop(e, x, u)       against u^T J,
     gr_hessian(sum(e^2)/2 + sum(e), x) against the central differences of its gradient. */
#include "rs_util.h"

typedef gr_var *(*jf_build)(gr_var *x);

typedef struct jf_case {
    const char *name;
    jf_build build;
    int ndim;
    int64_t shape[3];
    double lo, hi;
    double eps, tol;             /* 0: the F64 defaults 1e-6 and 1e-6 */
} jf_case;

static gr_var *jf_const_vec(gr_graph *g, int64_t n, double start) {
    gr_array *a = gr_array_new(GR_F64, 1, &n);
    gr_var *c;
    int64_t k;
    for (k = 0; k < n; k++) gr_array_set(a, k, start + 0.5 * (double)k);
    c = gr_constant(g, a);
    gr_array_free(a);
    return c;
}
static gr_var *jf_index_const(gr_graph *g, int64_t n, const int64_t *idx) {
    gr_array *a = gr_array_from(GR_I64, 1, &n, idx);
    gr_var *c = gr_constant(g, a);
    gr_array_free(a);
    return c;
}

static gr_var *jf_slices(gr_var *x) { return gr_mul(gr_slice(x, 0, 1, GR_OPEN, 1), gr_sin(gr_slice(x, 0, 0, -1, 1))); }
static gr_var *jf_neg_step(gr_var *x) { return gr_add(gr_sqr(gr_slice(x, 0, GR_OPEN, GR_OPEN, -2)), gr_exp(gr_slice(x, 0, 1, GR_OPEN, 2))); }
static gr_var *jf_index(gr_var *x) { return gr_outer(gr_index(x, 0, 1), gr_sin(gr_index(x, 1, -1))); }
static gr_var *jf_take(gr_var *x) {
    int64_t idx[4] = { 4, 0, 0, 2 };
    return gr_sqr(gr_take(x, jf_index_const(gr_var_graph(x), 4, idx), 0));
}
static gr_var *jf_set_sub(gr_var *x) { return gr_mul(gr_set_subtensor(gr_slice(x, 0, 1, 3, 1), gr_sin(gr_slice(x, 0, 0, 2, 1))), x); }
static gr_var *jf_inc_take(gr_var *x) {
    int64_t idx[3] = { 1, 1, 3 };
    gr_graph *g = gr_var_graph(x);
    return gr_sqr(gr_inc_subtensor(gr_take(x, jf_index_const(g, 3, idx), 0), gr_exp(gr_slice(x, 0, 0, 3, 1))));
}
static gr_var *jf_dot_mv(gr_var *x) { return gr_tanh(gr_dot(x, jf_const_vec(gr_var_graph(x), 4, -1))); }
static gr_var *jf_dot_vm(gr_var *x) { return gr_dot(jf_const_vec(gr_var_graph(x), 3, 0.5), gr_sqr(x)); }
static gr_var *jf_dot_xxt(gr_var *x) { return gr_dot(x, gr_transpose(x)); }
static gr_var *jf_softmax(gr_var *x) { return gr_add(gr_softmax(x, 1), gr_log_softmax(x, 0)); }
static gr_var *jf_prod(gr_var *x) { int ax = 1; return gr_prod_axes(x, 1, &ax, 0); }
static gr_var *jf_max(gr_var *x) { int ax = 0; return gr_add(gr_max_axes(x, 1, &ax, 1), gr_min_axes(x, 1, &ax, 1)); }
static gr_var *jf_means(gr_var *x) { return gr_mul(gr_mean_axis(x, 0), gr_sum_axis(gr_exp(x), 0)); }
static gr_var *jf_reshape(gr_var *x) {
    int64_t s[2] = { 4, -1 };
    int pat[3] = { 1, GR_NEWAXIS, 0 };
    return gr_dimshuffle(gr_sin(gr_reshape(gr_transpose(x), 2, s)), 3, pat);
}
static gr_var *jf_elemwise(gr_var *x) {
    gr_graph *g = gr_var_graph(x);
    gr_var *a = gr_maximum(x, gr_const(g, 0.1)), *b = gr_clip(x, gr_const(g, -0.3), gr_const(g, 0.4));
    return gr_add(gr_mul(a, b), gr_where(gr_gt(x, gr_const(g, 0.0)), gr_pow(x, gr_const(g, 3.0)), gr_pow(gr_const(g, 2.0), x)));
}
static gr_var *jf_flatten3(gr_var *x) { return gr_mul(gr_flatten(x), gr_flatten(gr_cos(x))); }
static gr_var *jf_broadcast(gr_var *x) {             /* x (3, 1) times a row (1, 4) */
    static const int pat[2] = { GR_NEWAXIS, 0 };
    return gr_mul(x, gr_dimshuffle(jf_const_vec(gr_var_graph(x), 4, 1), 2, pat));
}
static gr_var *jf_f32(gr_var *x) { return gr_cast(gr_exp(gr_cast(x, GR_F32)), GR_F64); }

static gr_var *jf_unary_zoo(gr_var *x) {
    gr_graph *g = gr_var_graph(x);
    gr_var *one = gr_const(g, 1.0), *x2 = gr_sqr(x), *a, *b;
    a = gr_add(gr_add(gr_sigmoid(x), gr_softplus(x)), gr_add(gr_erf(x), gr_arctan(x)));
    b = gr_add(gr_add(gr_log1p(x2), gr_sqrt(gr_add(x2, one))), gr_add(gr_expm1(x), gr_tan(gr_mul(x, gr_const(g, 0.5)))));
    a = gr_add(a, gr_add(gr_cosh(x), gr_arcsinh(x)));
    return gr_add(gr_add(a, b), gr_add(gr_log(gr_add(x2, one)), gr_div(one, gr_add(x2, one))));
}
static gr_var *jf_binary_zoo(gr_var *x) {
    gr_graph *g = gr_var_graph(x);
    gr_var *p = gr_pow(gr_add(x, gr_const(g, 2.0)), gr_sin(x)), *t = gr_arctan2(x, gr_add(gr_sqr(x), gr_const(g, 1.0)));
    gr_var *m = gr_minimum(gr_maximum(x, gr_const(g, -0.5)), gr_mul(x, x));
    return gr_add(gr_add(p, t), gr_add(m, gr_add(gr_relu(x), gr_abs(x))));
}
static gr_var *jf_index_update(gr_var *x) {          /* x (3, 4) */
    int64_t idx[2] = { 3, 1 };
    gr_graph *g = gr_var_graph(x);
    gr_var *a = gr_inc_subtensor(gr_index(x, 0, 1), gr_sin(gr_index(x, 0, 2)));
    gr_var *b = gr_set_subtensor(gr_take(a, jf_index_const(g, 2, idx), 1), gr_exp(gr_slice(x, 1, 0, 2, 1)));
    return gr_mul(b, x);
}
static gr_var *jf_take_axis1(gr_var *x) {            /* x (3, 4): columns -1 and 0 */
    int64_t idx[2] = { -1, 0 };
    return gr_tanh(gr_take(x, jf_index_const(gr_var_graph(x), 2, idx), 1));
}
static gr_var *jf_transpose3(gr_var *x) {            /* x (2, 3, 4) -> (4, 3, 2) and (3, 2, 4) */
    int pat[3] = { 2, 1, 0 }, pat2[3] = { 1, 0, 2 };
    gr_var *t = gr_mul(gr_transpose(x), gr_sin(gr_dimshuffle(x, 3, pat)));
    return gr_mul(gr_dimshuffle(t, 3, pat2), gr_const(gr_var_graph(x), 2.0));
}
static gr_var *jf_keepdims(gr_var *x) {              /* x (2, 3, 2) */
    int ax[2] = { 0, 2 };
    return gr_add(gr_mul(x, gr_sum_axes(gr_exp(x), 2, ax, 1)), gr_mean_axes(gr_sqr(x), 2, ax, 1));
}
static gr_var *jf_square_dot(gr_var *x) { return gr_dot(x, gr_tanh(x)); }
static gr_var *jf_outer_cast(gr_var *x) { return gr_outer(x, gr_cast(gr_sin(x), GR_F64)); }

/* Cube (a user's op without an R-op rule): batched row by row */
static gr_status jf_cube_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t k;
    (void)node;
    for (k = 0; k < in[0]->size; k++) { double a = gr_array_get(in[0], k); gr_array_set(out[0], k, a * a * a); }
    return GR_OK;
}
static gr_status jf_cube_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr_node_input(node, 0);
    ig[0] = gr_mul(og[0], gr_mul(gr_const(gr_var_graph(x), 3.0), gr_sqr(x)));
    return ig[0] ? GR_OK : gr_graph_status(gr_var_graph(x));
}
static const gr_op_def jf_cube = { .name = "Cube", .n_in = 1, .n_out = 1, .perform = jf_cube_perform, .grad = jf_cube_grad };
static gr_var *jf_user(gr_var *x) {                   /* the op lives as long as the graph: static */
    gr_var *in = gr_sin(x), *y = NULL;
    if (gr_apply(&jf_cube, NULL, 0, 1, &in, &y) != GR_OK) return NULL;
    return gr_mul(y, x);
}

static const jf_case jf_cases[] = {
    { "slices", jf_slices, 1, { 5 }, -1, 1, 0, 0 },
    { "negative step", jf_neg_step, 1, { 6 }, -1, 1, 0, 0 },
    { "index", jf_index, 2, { 3, 4 }, -1, 1, 0, 0 },
    { "take", jf_take, 1, { 5 }, -1, 1, 0, 0 },
    { "set_subtensor", jf_set_sub, 1, { 5 }, -1, 1, 0, 0 },
    { "inc_subtensor of take", jf_inc_take, 1, { 5 }, -1, 1, 0, 0 },
    { "dot matrix vector", jf_dot_mv, 2, { 3, 4 }, -1, 1, 0, 0 },
    { "dot vector matrix", jf_dot_vm, 2, { 3, 2 }, -1, 1, 0, 0 },
    { "dot x x^T", jf_dot_xxt, 2, { 3, 2 }, -1, 1, 0, 0 },
    { "softmax", jf_softmax, 2, { 3, 4 }, -2, 2, 0, 0 },
    { "prod", jf_prod, 2, { 3, 4 }, 0.5, 2, 0, 0 },
    { "max and min", jf_max, 2, { 3, 4 }, -1, 1, 0, 0 },
    { "means", jf_means, 2, { 3, 4 }, -1, 1, 0, 0 },
    { "reshape", jf_reshape, 2, { 2, 4 }, -1, 1, 0, 0 },
    { "elementwise", jf_elemwise, 1, { 7 }, -1, 1, 0, 0 },
    { "flatten 3-d", jf_flatten3, 3, { 2, 2, 3 }, -1, 1, 0, 0 },
    { "broadcast", jf_broadcast, 2, { 3, 1 }, -1, 1, 0, 0 },
    { "float32 inside", jf_f32, 1, { 4 }, -1, 1, 1e-2, 2e-3 },
    { "user op", jf_user, 2, { 2, 3 }, -1, 1, 0, 0 },
    { "unary functions", jf_unary_zoo, 1, { 5 }, -0.9, 0.9, 0, 0 },
    { "binary functions", jf_binary_zoo, 1, { 6 }, -1, 1, 0, 0 },
    { "index updates", jf_index_update, 2, { 3, 4 }, -1, 1, 0, 0 },
    { "take on axis 1", jf_take_axis1, 2, { 3, 4 }, -1, 1, 0, 0 },
    { "transpose 3-d", jf_transpose3, 3, { 2, 3, 4 }, -1, 1, 0, 0 },
    { "keepdims", jf_keepdims, 3, { 2, 3, 2 }, -1, 1, 0, 0 },
    { "square dot", jf_square_dot, 2, { 3, 3 }, -1, 1, 0, 0 },
    { "outer", jf_outer_cast, 1, { 4 }, -1, 1, 0, 0 },
};

/* the maximum over elements of |a - b| / max(1, |b|) */
static double jf_err(const gr_array *a, const double *b, int64_t n) {
    double m = 0;
    int64_t k;
    if (!a || a->size != n) return INFINITY;
    for (k = 0; k < n; k++) {
        double d = fabs(gr_array_get(a, k) - b[k]) / (fabs(b[k]) > 1 ? fabs(b[k]) : 1.0);
        if (!(d <= m)) m = d;
    }
    return m;
}

static void jf_run_case(const jf_case *c, uint64_t *seed) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_tensor(g, GR_F64, c->ndim, NULL, "x"), *v = gr_tensor(g, GR_F64, c->ndim, NULL, "v"), *e = c->build(x);
    gr_var *u, *J = NULL, *R = NULL, *L = NULL, *H = NULL, *gc, *ins[3], *outs[4];
    gr_array *xa = rs_arr(c->ndim, c->shape, NULL), *va = rs_arr(c->ndim, c->shape, NULL), *ua = NULL, *res[4], *val[1];
    const gr_array *args[3];
    int64_t n = xa ? xa->size : 0, m, i, k;
    double *fd = NULL, *jv = NULL, *uj = NULL, *hfd = NULL, eps = c->eps ? c->eps : 1e-6, tol = c->tol ? c->tol : 1e-6;
    gr_fn *fe = NULL;
    CHECK_MSG(e != NULL, "%s: %s", c->name, gr_graph_message(g));
    if (!e) goto done;
    for (k = 0; k < n; k++) { gr_array_set(xa, k, rs_uniform(seed, c->lo, c->hi)); gr_array_set(va, k, rs_uniform(seed, -1, 1)); }
    u = gr_tensor(g, GR_F64, gr_var_ndim(e), NULL, "u");
    CHECK_MSG(gr_jacobian(e, 1, &x, &J, NULL) == GR_OK, "%s: jacobian: %s", c->name, gr_graph_message(g));
    CHECK_MSG(gr_rop(1, &e, 1, &x, &v, &R, NULL) == GR_OK, "%s: rop: %s", c->name, gr_graph_message(g));
    CHECK_MSG(gr_lop(1, &e, 1, &x, &u, &L, NULL) == GR_OK, "%s: lop: %s", c->name, gr_graph_message(g));
    gc = gr_add(gr_mul(gr_const(g, 0.5), gr_sum(gr_sqr(e))), gr_sum(e));
    CHECK_MSG(gr_hessian(gc, 1, &x, &H, NULL) == GR_OK, "%s: hessian: %s", c->name, gr_graph_message(g));
    if (!J || !R || !L || !H) goto done;
    /* e's value, to shape u */
    fe = gr_function(1, &x, 1, &e, NULL);
    args[0] = xa;
    CHECK(fe != NULL);
    if (!fe || !rs_run(1, &x, args, 1, &e, val)) goto done;
    m = val[0]->size;
    ua = gr_array_copy(val[0]);
    for (k = 0; k < m; k++) gr_array_set(ua, k, rs_uniform(seed, -1, 1));
    gr_array_free(val[0]);
    /* central differences of e, column by column: fd[i * n + k] = d e_i / d x_k */
    fd = (double *)calloc((size_t)(m * n + 1), sizeof(double));
    hfd = (double *)calloc((size_t)(n * n + 1), sizeof(double));
    jv = (double *)calloc((size_t)(m + 1), sizeof(double));
    uj = (double *)calloc((size_t)(n + 1), sizeof(double));
    if (!fd || !hfd || !jv || !uj) goto done;
    gc = gr_grad1(gc, x);
    for (k = 0; k < n; k++) {
        gr_array *dir = rs_arr(c->ndim, c->shape, NULL), *col, *hcol;
        gr_array_set(dir, k, 1.0);
        col = rs_central(1, &x, args, e, 0, dir, eps);
        hcol = rs_central(1, &x, args, gc, 0, dir, eps);
        for (i = 0; col && i < m; i++) fd[i * n + k] = gr_array_get(col, i);
        for (i = 0; hcol && i < n; i++) hfd[i * n + k] = gr_array_get(hcol, i);
        CHECK(col && hcol);
        gr_array_free(dir); gr_array_free(col); gr_array_free(hcol);
    }
    for (i = 0; i < m; i++)
        for (k = 0; k < n; k++) {
            jv[i] += fd[i * n + k] * gr_array_get(va, k);
            uj[k] += gr_array_get(ua, i) * fd[i * n + k];
        }
    ins[0] = x; ins[1] = v; ins[2] = u;
    args[0] = xa; args[1] = va; args[2] = ua;
    outs[0] = J; outs[1] = R; outs[2] = L; outs[3] = H;
    if (!rs_run(3, ins, args, 4, outs, res)) { CHECK_MSG(0, "%s: evaluation failed", c->name); goto done; }
    /* the shapes: J (*e, *x), R like e, L like x, H (*x, *x) */
    CHECK_MSG(res[0]->ndim == gr_var_ndim(e) + c->ndim && res[0]->size == m * n, "%s: J has ndim %d", c->name, res[0]->ndim);
    for (k = 0; k < c->ndim && k < res[0]->ndim; k++) CHECK(res[0]->shape[gr_var_ndim(e) + k] == c->shape[k]);
    CHECK_MSG(res[3]->ndim == 2 * c->ndim && res[3]->size == n * n, "%s: H has ndim %d", c->name, res[3]->ndim);
    CHECK_MSG(jf_err(res[0], fd, m * n) < tol, "%s: jacobian vs central differences: error %g", c->name, jf_err(res[0], fd, m * n));
    CHECK_MSG(jf_err(res[1], jv, m) < tol, "%s: rop vs J v: error %g", c->name, jf_err(res[1], jv, m));
    CHECK_MSG(jf_err(res[2], uj, n) < tol, "%s: lop vs u^T J: error %g", c->name, jf_err(res[2], uj, n));
    CHECK_MSG(jf_err(res[3], hfd, n * n) < 10 * tol, "%s: hessian vs central differences: error %g", c->name, jf_err(res[3], hfd, n * n));
    rs_free(4, res);
done:
    free(fd); free(hfd); free(jv); free(uj);
    gr_fn_free(fe);
    gr_array_free(xa); gr_array_free(va); gr_array_free(ua);
    gr_graph_free(g);
}

TEST(test_jf_table) {
    uint64_t seed = 31337;
    size_t i;
    for (i = 0; i < sizeof jf_cases / sizeof jf_cases[0]; i++) { if (getenv("JF_TRACE")) fprintf(stderr, "case %s\n", jf_cases[i].name); /* JF_TRACE=1: name each case */ jf_run_case(&jf_cases[i], &seed); }
}

/* derivatives of the Jacobian itself (its graph holds Batched nodes for ops batched row by row):
   Rop(J, x, v) against the central differences of J along v, and the gradient of sum(J * W)
   against the central differences of that scalar */
static void jf_run_second(const jf_case *c, uint64_t *seed) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_tensor(g, GR_F64, c->ndim, NULL, "x"), *v = gr_tensor(g, GR_F64, c->ndim, NULL, "v"), *e = c->build(x);
    gr_var *J = NULL, *W, *sc, *G = NULL, *RJ = NULL, *ins[3], *outs[2];
    gr_grad_opts go;
    gr_rop_opts ro;
    gr_array *xa = rs_arr(c->ndim, c->shape, NULL), *va = rs_arr(c->ndim, c->shape, NULL), *wa = NULL, *res[2], *fdj = NULL;
    const gr_array *args[3];
    int64_t n = xa ? xa->size : 0, k;
    double *gfd = NULL, *want = NULL, eps = c->eps ? c->eps : 1e-6, tol = 10 * (c->tol ? c->tol : 1e-6);
    res[0] = res[1] = NULL;
    if (!e || gr_jacobian(e, 1, &x, &J, NULL) != GR_OK) { CHECK_MSG(0, "%s: %s", c->name, gr_graph_message(g)); goto done; }
    for (k = 0; k < n; k++) { gr_array_set(xa, k, rs_uniform(seed, c->lo, c->hi)); gr_array_set(va, k, rs_uniform(seed, -1, 1)); }
    W = gr_tensor(g, GR_F64, gr_var_ndim(J), NULL, "W");
    sc = gr_sum(gr_mul(J, W));
    /* a linear e has a constant J (no path from x: 'broadcast'), the J of max/min reaches x only
       through comparisons (no R-op path): both give zeros under IGNORE */
    memset(&go, 0, sizeof go);
    go.disconnected_inputs = GR_IGNORE;
    memset(&ro, 0, sizeof ro);
    ro.disconnected_outputs = GR_IGNORE;
    CHECK_MSG(gr_grad(sc, 1, &x, &G, &go) == GR_OK, "%s: the gradient of a Jacobian: %s", c->name, gr_graph_message(g));
    CHECK_MSG(gr_rop(1, &J, 1, &x, &v, &RJ, &ro) == GR_OK, "%s: the R-op of a Jacobian: %s", c->name, gr_graph_message(g));
    if (!G || !RJ) goto done;
    args[0] = xa;
    if (!rs_run(1, &x, args, 1, &J, res)) { CHECK_MSG(0, "%s", c->name); goto done; }
    wa = gr_array_copy(res[0]);
    for (k = 0; k < wa->size; k++) gr_array_set(wa, k, rs_uniform(seed, -1, 1));
    rs_free(1, res);
    ins[0] = x; ins[1] = v; ins[2] = W;
    args[0] = xa; args[1] = va; args[2] = wa;
    gfd = (double *)calloc((size_t)n + 1, sizeof(double));
    fdj = rs_central(3, ins, args, J, 0, va, eps);
    want = fdj ? (double *)calloc((size_t)fdj->size + 1, sizeof(double)) : NULL;
    for (k = 0; want && k < fdj->size; k++) want[k] = gr_array_get(fdj, k);
    for (k = 0; gfd && k < n; k++) {
        gr_array *dir = rs_arr(c->ndim, c->shape, NULL), *d;
        gr_array_set(dir, k, 1.0);
        d = rs_central(3, ins, args, sc, 0, dir, eps);
        gfd[k] = d ? gr_array_get(d, 0) : NAN;
        gr_array_free(dir); gr_array_free(d);
    }
    outs[0] = RJ; outs[1] = G;
    if (!gfd || !want || !rs_run(3, ins, args, 2, outs, res)) { CHECK_MSG(0, "%s: evaluation failed", c->name); goto done; }
    CHECK_MSG(jf_err(res[0], want, fdj->size) < tol, "%s: Rop(J) vs central differences: error %g", c->name, jf_err(res[0], want, fdj->size));
    CHECK_MSG(jf_err(res[1], gfd, n) < tol, "%s: grad(sum(J W)) vs central differences: error %g", c->name, jf_err(res[1], gfd, n));
    rs_free(2, res);
done:
    free(gfd); free(want);
    gr_array_free(fdj); gr_array_free(xa); gr_array_free(va); gr_array_free(wa);
    gr_graph_free(g);
}

TEST(test_jf_jacobian_derivatives) {
    uint64_t seed = 4242;
    size_t i;
    for (i = 0; i < sizeof jf_cases / sizeof jf_cases[0]; i++) jf_run_second(&jf_cases[i], &seed);
}

/* the third derivative of f = sum(tanh(A x)) as the Jacobian of its Hessian (a graph of batched
   ops): T[i,j,k] = sum_r d3(s_r) A[r,i] A[r,j] A[r,k], with d3 = tanh''' = (1 - t^2)(6 t^2 - 2) */
TEST(test_jf_third_derivative) {
    gr_graph *g = gr_graph_new();
    gr_var *A = gr_matrix(g, GR_F64, "A"), *x = gr_vector(g, GR_F64, "x"), *H = NULL, *T = NULL, *ins[2];
    double as[12], xs[3], want[27];
    int64_t s333[3] = { 3, 3, 3 };
    uint64_t seed = 3;
    gr_array *va[2], *res[1];
    int i, j, k, r;
    rs_fill(&seed, as, 12, -1, 1);
    rs_fill(&seed, xs, 3, -1, 1);
    CHECK_STATUS(gr_hessian(gr_sum(gr_tanh(gr_dot(A, x))), 1, &x, &H, NULL), GR_OK);
    CHECK_STATUS(gr_jacobian(H, 1, &x, &T, NULL), GR_OK);
    memset(want, 0, sizeof want);
    for (r = 0; r < 4; r++) {
        double s = 0, t, d3;
        for (i = 0; i < 3; i++) s += as[r * 3 + i] * xs[i];
        t = tanh(s);
        d3 = (1 - t * t) * (6 * t * t - 2);
        for (i = 0; i < 3; i++)
            for (j = 0; j < 3; j++)
                for (k = 0; k < 3; k++) want[(i * 3 + j) * 3 + k] += d3 * as[r * 3 + i] * as[r * 3 + j] * as[r * 3 + k];
    }
    ins[0] = A; ins[1] = x;
    va[0] = rs_mat(4, 3, as); va[1] = rs_vec(3, xs);
    CHECK(rs_run(2, ins, (const gr_array *const *)va, 1, &T, res));
    CHECK_SHAPE(res[0], 3, s333);
    CHECK_ARR(res[0], 27, want, 1e-13);
    rs_free(1, res); rs_free(2, va);
    gr_graph_free(g);
}

/* one batched pass (decision 5): the compiled Jacobian has as many nodes for 3 rows as for 300 */
TEST(test_jf_one_pass) {
    size_t counts[2] = { 0, 0 };
    int64_t sizes[2] = { 3, 300 };
    int t;
    for (t = 0; t < 2; t++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_tensor(g, GR_F64, 1, &sizes[t], "x"), *J = NULL;
        gr_fn *f;
        CHECK_STATUS(gr_jacobian(gr_tanh(gr_mul(x, gr_sin(x))), 1, &x, &J, NULL), GR_OK);
        f = gr_function(1, &x, 1, &J, NULL);
        CHECK(f != NULL);
        counts[t] = gr_fn_node_count(f);
        gr_fn_free(f);
        gr_graph_free(g);
    }
    CHECK(counts[0] > 0);
    CHECK_EQ_INT(counts[0], counts[1]);
}

SUITE(suite_jacobian_fd) = { CASE(test_jf_table), CASE(test_jf_one_pass), CASE(test_jf_jacobian_derivatives), CASE(test_jf_third_derivative),
                              END_SUITE };
