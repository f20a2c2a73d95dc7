/* tests/t_grad_semantics.c: every option and error path of gr_grad (SEMANTICS 2): consider_constant,
   the disconnected / return_disconnected / null_gradients policies, names, known gradients, the
   argument checks, integer inputs and costs (2.7), float32 graphs, and the order and count of
   grad-rule calls. Values are evaluated with gr_function / gr_call and compared with formulas
   computed here in plain C. */
#include "gsem_util.h"

/* ---- consider_constant (SEMANTICS 2.3) ---------------------------------------------------------- */

TEST(test_grad_constant) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *y = gr_scalar(g, GR_F64, "y");
    gr_array *three = gr_array_scalar(GR_F64, 3.0);
    gr_var *c = gr_constant(g, three);                /* a typed constant (a weak gr_const is re-typed at each use) */
    gr_var *in[2], *gr_[3], *cc[1];
    gr_array *vals[2], *r[3];
    gr_grad_opts o;
    memset(&o, 0, sizeof o);
    in[0] = x; in[1] = y;
    vals[0] = gr_array_scalar(GR_F64, 0.7);
    vals[1] = gr_array_scalar(GR_F64, -1.3);

    /* grad(x + y, x, consider_constant=[x]) is 1: the constant itself still gets its gradient */
    cc[0] = x; o.consider_constant = cc; o.n_consider_constant = 1;
    CHECK_STATUS(gr_grad(gr_add(x, y), 1, &x, gr_, &o), GR_OK);
    CHECK_STATUS(gs_run(2, in, (const gr_array *const *)vals, 1, gr_, r), GR_OK);
    CHECK(gs_all(r[0], 1, 1.0));
    gr_array_free(r[0]);
    /* the same as the gradient with respect to a true constant */
    CHECK_STATUS(gr_grad(gr_add(c, y), 1, &c, gr_, NULL), GR_OK);
    CHECK_STATUS(gs_run(2, in, (const gr_array *const *)vals, 1, gr_, r), GR_OK);
    CHECK(gs_all(r[0], 1, 1.0));
    gr_array_free(r[0]);

    /* gradients stop at a constant's ancestors: cost = sin(x) y + x with sin(x) constant */
    {
        gr_var *z = gr_sin(x), *cost = gr_add(gr_mul(z, y), x), *w[3];
        double xv = 0.7, yv = -1.3;
        w[0] = x; w[1] = z; w[2] = y;
        cc[0] = z;
        CHECK_STATUS(gr_grad(cost, 3, w, gr_, &o), GR_OK);
        CHECK_STATUS(gs_run(2, in, (const gr_array *const *)vals, 3, gr_, r), GR_OK);
        CHECK_NEAR(gr_array_get(r[0], 0), 1.0, 1e-15);            /* not 1 + y cos x */
        CHECK_NEAR(gr_array_get(r[1], 0), yv, 1e-15);
        CHECK_NEAR(gr_array_get(r[2], 0), sin(xv), 1e-15);
        gr_array_free(r[0]); gr_array_free(r[1]); gr_array_free(r[2]);
        /* without the direct path x is disconnected */
        gr_[0] = (gr_var *)&o;                                    /* garbage that must be cleared */
        CHECK_STATUS(gr_grad(gr_mul(z, y), 1, &x, gr_, &o), GR_ERR_DISCONNECTED_INPUT);
        CHECK(gr_[0] == NULL);
        CHECK_CONTAINS(gr_graph_message(g), "'x'");
        gr_graph_clear_error(g);
        /* and without consider_constant it is 1 + y cos x */
        CHECK_STATUS(gr_grad(cost, 1, &x, gr_, NULL), GR_OK);
        CHECK_STATUS(gs_run(2, in, (const gr_array *const *)vals, 1, gr_, r), GR_OK);
        CHECK_NEAR(gr_array_get(r[0], 0), 1.0 + yv * cos(xv), 1e-15);
        gr_array_free(r[0]);
    }
    gr_array_free(vals[0]); gr_array_free(vals[1]); gr_array_free(three);
    gr_graph_free(g);
}

/* a consider_constant variable of another graph is a bad argument, not an out-of-bounds write */
TEST(test_consider_constant_other_graph) {
    gr_graph *g = gr_graph_new(), *h = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *foreign = NULL, *d = (gr_var *)g;
    gr_grad_opts o;
    int i;
    for (i = 0; i < 300; i++) foreign = gr_scalar(h, GR_F64, "h");   /* an id far beyond g's */
    memset(&o, 0, sizeof o);
    o.consider_constant = &foreign; o.n_consider_constant = 1;
    CHECK_STATUS(gr_grad(gr_sin(x), 1, &x, &d, &o), GR_ERR_VALUE);
    CHECK(d == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "another graph");
    gr_graph_free(g); gr_graph_free(h);
}

/* ---- disconnected inputs (SEMANTICS 2.4, 2.6) ---------------------------------------------------- */

static const char *const disc_sentence =
    "was asked to compute the gradient with respect to a variable that is not part of the computational graph of the cost, "
    "or is used only by a non-differentiable operator: 'y'";

TEST(test_disconnected_raise) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y");
    gr_var *w[2], *d[2];
    gs_log l;
    gs_log_attach(g, &l);
    w[0] = x; w[1] = y;
    d[0] = d[1] = x;
    CHECK_STATUS(gr_grad(gr_sum(gr_mul(x, gr_const(g, 2.0))), 2, w, d, NULL), GR_ERR_DISCONNECTED_INPUT);
    CHECK(d[0] == NULL && d[1] == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_DISCONNECTED_INPUT);
    CHECK_CONTAINS(gr_graph_message(g), "'y'");
    CHECK_EQ_INT(l.count, 0);
    gr_graph_clear_error(g);
    /* gr_grad1 takes the default options: raise, and NULL */
    CHECK(gr_grad1(gr_sum(x), y) == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_DISCONNECTED_INPUT);
    gr_graph_free(g);
}

TEST(test_disconnected_warn) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y");
    gr_var *w[2], *d[2], *in[2];
    gr_array *vals[2], *r[2];
    double xv[3] = { 1, 2, 3 }, yv[4] = { 5, 6, 7, 8 }, two[3] = { 2, 2, 2 };
    gr_grad_opts o;
    gs_log l;
    gs_log_attach(g, &l);
    memset(&o, 0, sizeof o);
    o.disconnected_inputs = GR_WARN;
    w[0] = x; w[1] = y;
    CHECK_STATUS(gr_grad(gr_sum(gr_mul(x, gr_const(g, 2.0))), 2, w, d, &o), GR_OK);
    /* warned in the pre-check and again after the backward pass (SEMANTICS 2.6) */
    CHECK_EQ_INT(l.count, 2);
    CHECK_CONTAINS(l.first, "gr_grad");
    CHECK_CONTAINS(l.first, disc_sentence);
    CHECK(strcmp(l.first, l.last) == 0);
    CHECK_EQ_INT(gr_graph_status(g), GR_OK);
    /* the disconnected one is float zeros shaped like y */
    in[0] = x; in[1] = y;
    vals[0] = gs_vec(GR_F64, 3, xv); vals[1] = gs_vec(GR_F64, 4, yv);
    CHECK_STATUS(gs_run(2, in, (const gr_array *const *)vals, 2, d, r), GR_OK);
    CHECK_EQ_INT(gs_diff(r[0], 3, two, 0), 0);
    CHECK(gs_all(r[1], 4, 0.0));
    CHECK_EQ_INT(gr_var_dtype(d[1]), GR_F64);
    gr_array_free(r[0]); gr_array_free(r[1]);
    gr_array_free(vals[0]); gr_array_free(vals[1]);
    gr_graph_free(g);
}

TEST(test_disconnected_ignore) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *y = gr_matrix(g, GR_F64, "y");
    gr_var *w[2], *d[2], *in[2];
    gr_array *vals[2], *r[2];
    double yv[6] = { 1, 2, 3, 4, 5, 6 };
    gr_grad_opts o;
    gs_log l;
    gs_log_attach(g, &l);
    memset(&o, 0, sizeof o);
    o.disconnected_inputs = GR_IGNORE;
    w[0] = x; w[1] = y;
    CHECK_STATUS(gr_grad(gr_exp(x), 2, w, d, &o), GR_OK);
    CHECK_EQ_INT(l.count, 0);
    CHECK_EQ_INT(gr_var_ndim(d[1]), 2);
    in[0] = x; in[1] = y;
    vals[0] = gr_array_scalar(GR_F64, 0.25); vals[1] = gs_mat(GR_F64, 2, 3, yv);
    CHECK_STATUS(gs_run(2, in, (const gr_array *const *)vals, 2, d, r), GR_OK);
    CHECK_NEAR(gr_array_get(r[0], 0), exp(0.25), 1e-15);
    CHECK(r[1] && r[1]->ndim == 2 && r[1]->shape[0] == 2 && r[1]->shape[1] == 3 && gs_all(r[1], 6, 0.0));
    gr_array_free(r[0]); gr_array_free(r[1]);
    gr_array_free(vals[0]); gr_array_free(vals[1]);
    gr_graph_free(g);
}

/* ---- names (SEMANTICS 2.5) --------------------------------------------------------------------------- */

TEST(test_grad_name) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    gr_var *f = gr_sum(gr_sin(x)), *u = gr_sum(gr_cos(x)), *d;
    gr_grad_opts o;
    gr_var_set_name(f, "f");
    d = gr_grad1(f, x);
    CHECK(d && gr_var_name(d) && strcmp(gr_var_name(d), "(df/dx)") == 0);
    /* add_names = False */
    memset(&o, 0, sizeof o);
    o.no_names = 1;
    CHECK_STATUS(gr_grad(f, 1, &x, &d, &o), GR_OK);
    CHECK(d && gr_var_name(d) == NULL);
    /* an unnamed cost names nothing */
    d = gr_grad1(u, x);
    CHECK(d && gr_var_name(d) == NULL);
    /* a seeded gradient (the cost's own) is never renamed */
    d = gr_grad1(f, f);
    CHECK(d && (gr_var_name(d) == NULL || strcmp(gr_var_name(d), "(df/df)") != 0));
    CHECK(gr_var_name(f) && strcmp(gr_var_name(f), "f") == 0);
    gr_graph_free(g);
}

/* ---- known gradients (SEMANTICS 2.1 step 6, 2.2) ------------------------------------------------------ */

TEST(test_known_grads_no_cost) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *gy = gr_vector(g, GR_F64, "gy");
    gr_var *y = gr_mul(x, x), *d = NULL, *in[2];
    gr_array *vals[2], *r;
    double xv[3] = { 0.5, -2, 3 }, gv[3] = { 1, 10, 100 }, want[3];
    gr_grad_opts o;
    int i;
    memset(&o, 0, sizeof o);
    o.known_vars = &y; o.known_grads = &gy; o.n_known = 1;
    CHECK_STATUS(gr_grad(NULL, 1, &x, &d, &o), GR_OK);
    in[0] = x; in[1] = gy;
    vals[0] = gs_vec(GR_F64, 3, xv); vals[1] = gs_vec(GR_F64, 3, gv);
    r = gs_eval(2, in, (const gr_array *const *)vals, d);
    for (i = 0; i < 3; i++) want[i] = 2 * xv[i] * gv[i];
    CHECK_EQ_INT(gs_diff(r, 3, want, 1e-15), 0);
    gr_array_free(r);
    /* cost NULL and no known gradients */
    d = x;
    CHECK_STATUS(gr_grad(NULL, 1, &x, &d, NULL), GR_ERR_VALUE);
    CHECK(d == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "can't both be NULL");
    gr_graph_clear_error(g);
    gr_array_free(vals[0]); gr_array_free(vals[1]);
    gr_graph_free(g);
}

TEST(test_known_grads_integers) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_I64, "x"), *gx = gr_scalar(g, GR_F64, "gx"), *d = NULL;
    gr_var *bad = gr_scalar(g, GR_I64, "bad");
    gr_grad_opts o;
    memset(&o, 0, sizeof o);
    o.known_vars = &x; o.known_grads = &gx; o.n_known = 1;
    CHECK_STATUS(gr_grad(NULL, 1, &x, &d, &o), GR_OK);
    CHECK(d == gx);                                   /* returned unchanged */
    /* a non-float known gradient */
    o.known_grads = &bad;
    d = x;
    CHECK_STATUS(gr_grad(NULL, 1, &x, &d, &o), GR_ERR_TYPE);
    CHECK(d == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "float");
    CHECK_CONTAINS(gr_graph_message(g), "int64");
    gr_graph_free(g);
}

/* a known gradient for the cost itself replaces the ones seed, un-cast (SEMANTICS 2.2) */
TEST(test_known_grad_of_cost) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F32, "x"), *k = gr_scalar(g, GR_F64, "k"), *in[2];
    gr_var *cost = gr_sum(gr_mul(x, x)), *w[2], *d[2];
    double xv[2] = { 1.5, -0.5 }, want[2] = { -6, 2 };
    gr_array *vals[2], *r[2];
    gr_grad_opts o;
    memset(&o, 0, sizeof o);
    o.known_vars = &cost; o.known_grads = &k; o.n_known = 1;
    w[0] = x; w[1] = cost;
    CHECK_STATUS(gr_grad(cost, 2, w, d, &o), GR_OK);
    CHECK(d[1] == k);
    CHECK_EQ_INT(gr_var_dtype(d[0]), GR_F32);
    in[0] = x; in[1] = k;
    vals[0] = gs_vec(GR_F32, 2, xv); vals[1] = gr_array_scalar(GR_F64, -2.0);
    CHECK_STATUS(gs_run(2, in, (const gr_array *const *)vals, 1, d, r), GR_OK);
    CHECK_EQ_INT(gs_diff(r[0], 2, want, 1e-6), 0);
    gr_array_free(r[0]); gr_array_free(vals[0]); gr_array_free(vals[1]);
    gr_graph_free(g);
}

/* test_known_grads: the gradient with the known gradients of any "layer" of the graph equals the
   plain gradient */
TEST(test_known_grads_layers) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *c = gr_vector(g, GR_F64, "c");
    gr_var *ct = gr_sum(c), *p = gr_pow(x, gr_const(g, 3.0)), *y = gr_mul(ct, p), *cost = gr_sqr(y);
    gr_var *inputs[2], *truth[2], *layers[4][2], *first[2], *full[2];
    int n_layer[4] = { 1, 1, 2, 2 }, k, i;
    gr_array *vals[2], *rt[2], *rf[2];
    double cv[3] = { 0.5, 1.5, -0.25 }, xv = 1.3;
    gr_grad_opts o;
    inputs[0] = c; inputs[1] = x;
    layers[0][0] = cost; layers[1][0] = y; layers[2][0] = ct; layers[2][1] = p; layers[3][0] = c; layers[3][1] = x;
    vals[0] = gs_vec(GR_F64, 3, cv); vals[1] = gr_array_scalar(GR_F64, xv);
    CHECK_STATUS(gr_grad(cost, 2, inputs, truth, NULL), GR_OK);
    CHECK_STATUS(gs_run(2, inputs, (const gr_array *const *)vals, 2, truth, rt), GR_OK);
    {   /* d cost/dc_i = 2 y p, d cost/dx = 2 y ct 3 x^2 */
        double s = cv[0] + cv[1] + cv[2], pv = xv * xv * xv, yv = s * pv, wc[3];
        for (i = 0; i < 3; i++) wc[i] = 2 * yv * pv;
        CHECK_EQ_INT(gs_diff(rt[0], 3, wc, 1e-14), 0);
        CHECK_NEAR(gr_array_get(rt[1], 0), 2 * yv * s * 3 * xv * xv, 1e-14);
    }
    for (k = 0; k < 4; k++) {
        CHECK_STATUS(gr_grad(cost, n_layer[k], layers[k], first, NULL), GR_OK);
        memset(&o, 0, sizeof o);
        o.known_vars = layers[k]; o.known_grads = first; o.n_known = n_layer[k];
        o.disconnected_inputs = GR_IGNORE;
        CHECK_STATUS(gr_grad(NULL, 2, inputs, full, &o), GR_OK);
        CHECK_STATUS(gs_run(2, inputs, (const gr_array *const *)vals, 2, full, rf), GR_OK);
        CHECK_EQ_INT(gs_diff(rf[0], 3, (const double *)rt[0]->data, 1e-14), 0);
        CHECK_NEAR(gr_array_get(rf[1], 0), gr_array_get(rt[1], 0), 1e-14);
        gr_array_free(rf[0]); gr_array_free(rf[1]);
    }
    gr_array_free(rt[0]); gr_array_free(rt[1]);
    gr_array_free(vals[0]); gr_array_free(vals[1]);
    gr_graph_free(g);
}

/* ---- return_disconnected (SEMANTICS 2.6) -------------------------------------------------------------- */

TEST(test_return_disconnected) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *n = gr_matrix(g, GR_I64, "n");
    gr_var *cost = gr_sum(gr_mul(x, x)), *w[3], *d[3], *in[3];
    gr_array *vals[3], *r[3];
    double xv[2] = { 1.5, -2 }, yv[4] = { 1, 2, 3, 4 }, nv[6] = { 1, 2, 3, 4, 5, 6 }, want[2] = { 3, -4 };
    gr_grad_opts o;
    memset(&o, 0, sizeof o);
    o.disconnected_inputs = GR_IGNORE;
    w[0] = in[0] = x; w[1] = in[1] = y; w[2] = in[2] = n;
    vals[0] = gs_vec(GR_F64, 2, xv); vals[1] = gs_vec(GR_F64, 4, yv); vals[2] = gs_mat(GR_I64, 3, 2, nv);

    /* ZERO (the default): float zeros shaped like wrt, F64 for the integer one */
    CHECK_STATUS(gr_grad(cost, 3, w, d, &o), GR_OK);
    CHECK_EQ_INT(gr_var_dtype(d[1]), GR_F64);
    CHECK_EQ_INT(gr_var_dtype(d[2]), GR_F64);
    CHECK_EQ_INT(gr_var_ndim(d[2]), 2);
    CHECK_STATUS(gs_run(3, in, (const gr_array *const *)vals, 3, d, r), GR_OK);
    CHECK_EQ_INT(gs_diff(r[0], 2, want, 1e-15), 0);
    CHECK(r[1] && r[1]->dtype == GR_F64 && r[1]->ndim == 1 && gs_all(r[1], 4, 0.0));
    CHECK(r[2] && r[2]->dtype == GR_F64 && r[2]->ndim == 2 && r[2]->shape[0] == 3 && r[2]->shape[1] == 2 && gs_all(r[2], 6, 0.0));
    gr_array_free(r[0]); gr_array_free(r[1]); gr_array_free(r[2]);

    /* NONE: NULL entries, and the call still succeeds */
    o.return_disconnected = GR_RETURN_NONE;
    d[1] = d[2] = x;
    CHECK_STATUS(gr_grad(cost, 3, w, d, &o), GR_OK);
    CHECK(d[0] != NULL && d[1] == NULL && d[2] == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_OK);

    /* DISCONNECTED: markers, which are not values */
    o.return_disconnected = GR_RETURN_DISCONNECTED;
    CHECK_STATUS(gr_grad(cost, 3, w, d, &o), GR_OK);
    CHECK(!gr_is_disconnected(d[0]) && gr_is_disconnected(d[1]) && gr_is_disconnected(d[2]));
    CHECK(!gr_is_null(d[1]));
    CHECK(gr_add(d[1], y) == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_TYPE);
    gr_graph_clear_error(g);
    gr_array_free(vals[0]); gr_array_free(vals[1]); gr_array_free(vals[2]);
    gr_graph_free(g);
}

/* ---- null gradients (SEMANTICS 2.6, 12) --------------------------------------------------------------- */

static gr_status nograd_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t i;
    (void)node;
    for (i = 0; i < in[0]->size; i++) gr_array_set(out[0], i, gr_array_get(in[0], i));
    return GR_OK;
}
/* no grad rule at all: every connected input's gradient is "not implemented" */
static const gr_op_def op_nograd = { .name = "NoGrad", .n_in = 1, .n_out = 1, .perform = nograd_perform };

static gr_var *nograd(gr_var *x) {
    gr_var *y = NULL;
    gr_apply(&op_nograd, NULL, 0, 1, &x, &y);
    return y;
}

static const char *const null_prefix = "This variable is Null because the grad method for input 0 (";

TEST(test_null_gradients_not_implemented) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *z = gr_vector(g, GR_F64, "z");
    gr_var *cost = gr_add(gr_sum(gr_mul(nograd(x), gr_const(g, 2.0))), gr_sum(gr_sin(z)));
    gr_var *w[2], *d[2], *in[2];
    gr_array *vals[2], *r;
    double zv[2] = { 0.25, -1 }, want[2];
    gr_grad_opts o;
    memset(&o, 0, sizeof o);
    w[0] = x; w[1] = z;

    /* RAISE (the default) */
    d[0] = d[1] = x;
    CHECK_STATUS(gr_grad(cost, 2, w, d, &o), GR_ERR_NULL_GRAD);
    CHECK(d[0] == NULL && d[1] == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "This variable is Null because the grad method for input 0 ('x') of the NoGrad op is not implemented.");
    gr_graph_clear_error(g);

    /* RETURN: the null gradient, its reason, and the other gradient as usual */
    o.null_gradients = GR_NULL_RETURN;
    CHECK_STATUS(gr_grad(cost, 2, w, d, &o), GR_OK);
    CHECK(gr_is_null(d[0]) && !gr_is_disconnected(d[0]));
    CHECK(strncmp(gr_null_reason(d[0]), null_prefix, strlen(null_prefix)) == 0);
    CHECK_CONTAINS(gr_null_reason(d[0]), " of the NoGrad op is not implemented.");
    CHECK(!gr_is_null(d[1]));
    CHECK(strcmp(gr_null_reason(d[1]), "") == 0);
    in[0] = x; in[1] = z;
    vals[0] = gs_vec(GR_F64, 2, zv); vals[1] = gs_vec(GR_F64, 2, zv);
    r = gs_eval(2, in, (const gr_array *const *)vals, d[1]);
    want[0] = cos(zv[0]); want[1] = cos(zv[1]);
    CHECK_EQ_INT(gs_diff(r, 2, want, 1e-15), 0);
    gr_array_free(r);
    /* a function of it cannot be compiled */
    CHECK(gr_function(1, &x, 1, &d[0], NULL) == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_GRAD_NOT_IMPLEMENTED);
    CHECK_CONTAINS(gr_graph_message(g), "NoGrad");
    gr_graph_clear_error(g);
    /* a null variable is not a value either */
    CHECK(gr_add(d[0], x) == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_TYPE);
    gr_graph_clear_error(g);
    gr_array_free(vals[0]); gr_array_free(vals[1]);
    gr_graph_free(g);
}

/* the null gradient poisons what lies below it and keeps its reason */
TEST(test_null_gradient_propagates) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    gr_var *w = gr_mul(x, gr_const(g, 2.0));
    gr_var *cost = gr_sum(gr_add(gr_exp(nograd(w)), x)), *d = NULL;
    gr_grad_opts o;
    memset(&o, 0, sizeof o);
    o.null_gradients = GR_NULL_RETURN;
    CHECK_STATUS(gr_grad(cost, 1, &x, &d, &o), GR_OK);
    CHECK(gr_is_null(d));                              /* the first null term wins over x's real term */
    CHECK_CONTAINS(gr_null_reason(d), "of the NoGrad op is not implemented.");
    CHECK(gr_function(1, &x, 1, &d, NULL) == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_GRAD_NOT_IMPLEMENTED);
    gr_graph_free(g);
}

TEST(test_undefined_grad) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x");
    gr_var *cost = gr_mul(gr_undefined_grad(x), x), *d = x;
    gr_grad_opts o;
    memset(&o, 0, sizeof o);
    CHECK_STATUS(gr_grad(cost, 1, &x, &d, &o), GR_ERR_NULL_GRAD);
    CHECK(d == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "of the UndefinedGrad op is not implemented.");
    gr_graph_clear_error(g);
    o.null_gradients = GR_NULL_RETURN;
    CHECK_STATUS(gr_grad(cost, 1, &x, &d, &o), GR_OK);
    CHECK(gr_is_null(d));
    CHECK(strncmp(gr_null_reason(d), null_prefix, strlen(null_prefix)) == 0);
    CHECK(gr_function(1, &x, 1, &d, NULL) == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_GRAD_UNDEFINED);
    gr_graph_free(g);
}

/* ---- argument checks (SEMANTICS 2.1) ------------------------------------------------------------------- */

TEST(test_cost_checks) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *m = gr_matrix(g, GR_F64, "m"), *s = gr_scalar(g, GR_F64, "s");
    gr_var *d[2], *w[2], *nullcost;
    gr_grad_opts o;
    w[0] = x; w[1] = m;
    /* test_cost_is_scalar: vectors and matrices are rejected */
    d[0] = d[1] = x;
    CHECK_STATUS(gr_grad(gr_sin(x), 2, w, d, NULL), GR_ERR_TYPE);
    CHECK(d[0] == NULL && d[1] == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "scalar");
    gr_graph_clear_error(g);
    CHECK_STATUS(gr_grad(gr_exp(m), 1, &m, d, NULL), GR_ERR_TYPE);
    gr_graph_clear_error(g);
    CHECK(gr_grad1(x, x) == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_TYPE);
    gr_graph_clear_error(g);
    /* a null cost */
    memset(&o, 0, sizeof o);
    o.null_gradients = GR_NULL_RETURN;
    CHECK_STATUS(gr_grad(gr_undefined_grad(s), 1, &s, &nullcost, &o), GR_OK);
    CHECK(gr_is_null(nullcost));
    d[0] = s;
    CHECK_STATUS(gr_grad(nullcost, 1, &s, d, NULL), GR_ERR_VALUE);
    CHECK(d[0] == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "null cost");
    gr_graph_clear_error(g);
    /* NULL wrt entries and negative counts */
    w[0] = NULL;
    d[0] = d[1] = x;
    CHECK(gr_grad(gr_sum(x), 2, w, d, NULL) != GR_OK);
    CHECK(d[0] == NULL && d[1] == NULL);
    CHECK_STATUS(gr_grad(gr_sum(x), -1, w, d, NULL), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    /* an invalid option value */
    memset(&o, 0, sizeof o);
    o.disconnected_inputs = (gr_on_disconnected)7;
    CHECK_STATUS(gr_grad(gr_sum(x), 1, &x, d, &o), GR_ERR_VALUE);
    CHECK(d[0] == NULL);
    gr_graph_free(g);
}

/* ---- integer inputs and costs (SEMANTICS 2.7) ---------------------------------------------------------- */

TEST(test_dxdx) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_I64, "x"), *d = gr_grad1(x, x);
    gr_array *xv = gr_array_scalar(GR_I64, 7), *r;
    CHECK(d != NULL);
    CHECK_EQ_INT(gr_var_dtype(d), GR_F64);
    r = gs_eval(1, &x, (const gr_array *const *)&xv, d);
    CHECK(r && r->dtype == GR_F64 && r->ndim == 0 && gr_array_get(r, 0) == 1.0);
    gr_array_free(r); gr_array_free(xv);
    gr_graph_free(g);
}

/* test_grad_int: the gradient with respect to an integer X equals the float one */
TEST(test_grad_int) {
    gr_graph *g = gr_graph_new();
    gr_var *Xi = gr_matrix(g, GR_I64, "Xi"), *Xf = gr_matrix(g, GR_F64, "Xf");
    gr_var *W = gr_matrix(g, GR_F64, "W"), *b = gr_vector(g, GR_F64, "b");
    gr_var *ci = gr_sum(gr_sigmoid(gr_add(gr_dot(Xi, W), b))), *cf = gr_sum(gr_sigmoid(gr_add(gr_dot(Xf, W), b)));
    gr_var *di = gr_grad1(ci, Xi), *df = gr_grad1(cf, Xf), *in[4], *outs[2];
    double xv[6] = { 1, -2, 0, 3, 1, -1 }, wv[6] = { 0.1, -0.2, 0.3, 0.05, -0.4, 0.25 }, bv[2] = { 0.5, -0.5 }, want[6];
    gr_array *vals[4], *r[2];
    int i, j, k;
    CHECK(di && df);
    CHECK_EQ_INT(gr_var_dtype(di), GR_F64);
    in[0] = Xi; in[1] = Xf; in[2] = W; in[3] = b;
    vals[0] = gs_mat(GR_I64, 2, 3, xv); vals[1] = gs_mat(GR_F64, 2, 3, xv);
    vals[2] = gs_mat(GR_F64, 3, 2, wv); vals[3] = gs_vec(GR_F64, 2, bv);
    outs[0] = di; outs[1] = df;
    CHECK_STATUS(gs_run(4, in, (const gr_array *const *)vals, 2, outs, r), GR_OK);
    /* dX[i][k] = sum_j s(1-s)[i][j] W[k][j] */
    for (i = 0; i < 2; i++)
        for (k = 0; k < 3; k++) {
            double acc = 0;
            for (j = 0; j < 2; j++) {
                double z = bv[j], s;
                int kk;
                for (kk = 0; kk < 3; kk++) z += xv[i * 3 + kk] * wv[kk * 2 + j];
                s = 1 / (1 + exp(-z));
                acc += s * (1 - s) * wv[k * 2 + j];
            }
            want[i * 3 + k] = acc;
        }
    CHECK_EQ_INT(gs_diff(r[0], 6, want, 1e-14), 0);
    CHECK(r[0] && r[1] && r[0]->dtype == GR_F64 && memcmp(r[0]->data, r[1]->data, 6 * sizeof(double)) == 0);
    gr_array_free(r[0]); gr_array_free(r[1]);
    for (i = 0; i < 4; i++) gr_array_free(vals[i]);
    gr_graph_free(g);
}

/* piecewise-constant ops give float zeros (connected, so no disconnected error) */
TEST(test_step_ops_zero_grad) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    gr_var *costs[7], *d;
    double xv[4] = { -1.5, 0.3, 2.5, 0.7 }, ind[4];
    gr_array *xa = gs_vec(GR_F64, 4, xv), *r;
    int k;
    costs[0] = gr_sum(gr_floor(x));
    costs[1] = gr_sum(gr_round(x));
    costs[2] = gr_sum(gr_sign(x));
    costs[3] = gr_sum(gr_ceil(x));
    costs[4] = gr_sum(gr_cast(gr_gt(x, gr_const(g, 0.5)), GR_F64));
    costs[5] = gr_sum(gr_cast(gr_lt(x, gr_const(g, 0.5)), GR_F64));
    costs[6] = gr_sum(gr_cast(gr_cast(x, GR_I64), GR_F64));      /* cast to int */
    for (k = 0; k < 7; k++) {
        d = gr_grad1(costs[k], x);
        CHECK_MSG(d != NULL, "cost %d: %s", k, gr_graph_message(g));
        if (!d) { gr_graph_clear_error(g); continue; }
        CHECK_EQ_INT(gr_var_dtype(d), GR_F64);
        r = gs_eval(1, &x, (const gr_array *const *)&xa, d);
        CHECK_MSG(gs_all(r, 4, 0.0), "cost %d", k);
        gr_array_free(r);
    }
    /* a comparison kills only its own path: d/dx sum(x * (x > 0.5)) = (x > 0.5) */
    d = gr_grad1(gr_sum(gr_mul(x, gr_cast(gr_gt(x, gr_const(g, 0.5)), GR_F64))), x);
    r = gs_eval(1, &x, (const gr_array *const *)&xa, d);
    for (k = 0; k < 4; k++) ind[k] = xv[k] > 0.5;
    CHECK_EQ_INT(gs_diff(r, 4, ind, 0), 0);
    gr_array_free(r);
    gr_array_free(xa);
    gr_graph_free(g);
}

/* SEMANTICS 2.7 case 5: C = 0.5 float(int(x)): dC/dy = 0.5 for the int y, dC/dx = 0 */
TEST(test_int_cast_chain) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *y = gr_cast(x, GR_I64);
    gr_var *C = gr_mul(gr_const(g, 0.5), gr_cast(y, GR_F64)), *w[2], *d[2];
    gr_array *xa = gr_array_scalar(GR_F64, 2.7), *r[2];
    w[0] = x; w[1] = y;
    CHECK_STATUS(gr_grad(C, 2, w, d, NULL), GR_OK);
    CHECK_EQ_INT(gr_var_dtype(d[1]), GR_F64);
    CHECK_STATUS(gs_run(1, &x, (const gr_array *const *)&xa, 2, d, r), GR_OK);
    CHECK(r[0] && gr_array_get(r[0], 0) == 0.0);
    CHECK(r[1] && r[1]->dtype == GR_F64 && gr_array_get(r[1], 0) == 0.5);
    gr_array_free(r[0]); gr_array_free(r[1]); gr_array_free(xa);
    gr_graph_free(g);
}

/* SEMANTICS 2.7 cases 1 and 2: int . int dot gives zeros to both; float . int the usual gradient */
TEST(test_int_dot) {
    gr_graph *g = gr_graph_new();
    gr_var *A = gr_matrix(g, GR_I64, "A"), *B = gr_matrix(g, GR_I64, "B"), *F = gr_matrix(g, GR_F64, "F");
    gr_var *w[2], *d[2], *in[3];
    double av[4] = { 1, 2, 3, 4 }, bv[4] = { -1, 5, 2, 0 }, gF[4], gB[4];
    gr_array *vals[3], *r[2];
    int i, j;
    in[0] = A; in[1] = B; in[2] = F;
    vals[0] = gs_mat(GR_I64, 2, 2, av); vals[1] = gs_mat(GR_I64, 2, 2, bv); vals[2] = gs_mat(GR_F64, 2, 2, av);
    w[0] = A; w[1] = B;
    CHECK_STATUS(gr_grad(gr_sum(gr_dot(A, B)), 2, w, d, NULL), GR_OK);
    CHECK_STATUS(gs_run(3, in, (const gr_array *const *)vals, 2, d, r), GR_OK);
    CHECK(r[0] && r[0]->dtype == GR_F64 && gs_all(r[0], 4, 0.0));
    CHECK(r[1] && r[1]->dtype == GR_F64 && gs_all(r[1], 4, 0.0));
    gr_array_free(r[0]); gr_array_free(r[1]);
    /* F . B with F float: dF = 1 B^T, dB = F^T 1 */
    w[0] = F;
    CHECK_STATUS(gr_grad(gr_sum(gr_dot(F, B)), 2, w, d, NULL), GR_OK);
    CHECK_STATUS(gs_run(3, in, (const gr_array *const *)vals, 2, d, r), GR_OK);
    for (i = 0; i < 2; i++)
        for (j = 0; j < 2; j++) {
            gF[i * 2 + j] = bv[j * 2 + 0] + bv[j * 2 + 1];
            gB[i * 2 + j] = av[0 * 2 + i] + av[1 * 2 + i];
        }
    CHECK_EQ_INT(gs_diff(r[0], 4, gF, 0), 0);
    CHECK_EQ_INT(gs_diff(r[1], 4, gB, 0), 0);
    gr_array_free(r[0]); gr_array_free(r[1]);
    for (i = 0; i < 3; i++) gr_array_free(vals[i]);
    gr_graph_free(g);
}

/* an integer cost: the seed is float ones, and the integer-valued ops give zeros */
TEST(test_int_cost) {
    gr_graph *g = gr_graph_new();
    gr_var *n = gr_vector(g, GR_I64, "n"), *cost = gr_sum(gr_mul(n, n)), *d;
    double nv[3] = { 1, 2, 3 };
    gr_array *na = gs_vec(GR_I64, 3, nv), *r;
    CHECK_EQ_INT(gr_var_dtype(cost), GR_I64);
    d = gr_grad1(cost, n);
    CHECK(d && gr_var_dtype(d) == GR_F64);
    r = gs_eval(1, &n, (const gr_array *const *)&na, d);
    CHECK(gs_all(r, 3, 0.0));
    gr_array_free(r);
    /* the cost itself: ones, float */
    d = gr_grad1(cost, cost);
    CHECK(d && gr_var_dtype(d) == GR_F64);
    r = gs_eval(1, &n, (const gr_array *const *)&na, d);
    CHECK(gs_all(r, 1, 1.0));
    gr_array_free(r); gr_array_free(na);
    gr_graph_free(g);
}

/* ---- float32 graphs stay float32 (test_downcast_dtype) ------------------------------------------------- */

TEST(test_downcast_dtype) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F32, "x"), *z = gr_scalar(g, GR_I64, "z");
    gr_var *y = gr_mul(x, gr_const(g, 2.0)), *c = gr_add(y, z), *w[4], *d[4], *in[2];
    gr_array *vals[2], *r[4];
    CHECK_EQ_INT(gr_var_dtype(y), GR_F32);
    CHECK_EQ_INT(gr_var_dtype(c), GR_F32);
    w[0] = x; w[1] = y; w[2] = z; w[3] = c;
    CHECK_STATUS(gr_grad(c, 4, w, d, NULL), GR_OK);
    CHECK_EQ_INT(gr_var_dtype(d[0]), GR_F32);
    CHECK(gr_var_dtype(d[3]) == GR_F32 || gr_var_dtype(d[3]) == GR_F64);
    in[0] = x; in[1] = z;
    vals[0] = gr_array_scalar(GR_F32, 1.5); vals[1] = gr_array_scalar(GR_I64, 4);
    CHECK_STATUS(gs_run(2, in, (const gr_array *const *)vals, 4, d, r), GR_OK);
    CHECK(r[0] && r[0]->dtype == GR_F32 && gr_array_get(r[0], 0) == 2.0);
    CHECK(r[1] && gr_array_get(r[1], 0) == 1.0);
    CHECK(r[2] && gr_array_get(r[2], 0) == 1.0);
    CHECK(r[3] && gr_array_get(r[3], 0) == 1.0);
    for (int k = 0; k < 4; k++) gr_array_free(r[k]);
    gr_array_free(vals[0]); gr_array_free(vals[1]);
    gr_graph_free(g);
}

/* a float64 gradient arriving at a float32 output is cast back, so what lies below stays float32 */
TEST(test_downcast_dtype_mixed) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F32, "x"), *v = gr_vector(g, GR_F64, "v");
    gr_var *y = gr_mul(x, x), *cost = gr_sum(gr_mul(gr_add(y, v), gr_const(g, 3.0)));
    gr_var *w[2], *d[2], *in[2];
    double xv[3] = { 0.5, -1.25, 2 }, vv[3] = { 1, 2, 3 }, want[3];
    gr_array *vals[2], *r[2];
    int i;
    CHECK_EQ_INT(gr_var_dtype(cost), GR_F64);
    w[0] = x; w[1] = y;
    CHECK_STATUS(gr_grad(cost, 2, w, d, NULL), GR_OK);
    CHECK_EQ_INT(gr_var_dtype(d[0]), GR_F32);
    in[0] = x; in[1] = v;
    vals[0] = gs_vec(GR_F32, 3, xv); vals[1] = gs_vec(GR_F64, 3, vv);
    CHECK_STATUS(gs_run(2, in, (const gr_array *const *)vals, 2, d, r), GR_OK);
    for (i = 0; i < 3; i++) want[i] = 6 * xv[i];
    CHECK(r[0] && r[0]->dtype == GR_F32);
    CHECK_EQ_INT(gs_diff(r[0], 3, want, 1e-6), 0);
    gr_array_free(r[0]); gr_array_free(r[1]);
    /* and a weak constant alone keeps F32 */
    {
        gr_var *c2 = gr_sum(gr_mul(gr_sin(x), gr_const(g, 3.0))), *d2 = gr_grad1(c2, x);
        gr_array *r2;
        CHECK_EQ_INT(gr_var_dtype(c2), GR_F32);
        CHECK(d2 && gr_var_dtype(d2) == GR_F32);
        r2 = gs_eval(1, &x, (const gr_array *const *)vals, d2);
        for (i = 0; i < 3; i++) want[i] = 3 * cos(xv[i]);
        CHECK(r2 && r2->dtype == GR_F32);
        CHECK_EQ_INT(gs_diff(r2, 3, want, 1e-6), 0);
        gr_array_free(r2);
    }
    gr_array_free(vals[0]); gr_array_free(vals[1]);
    gr_graph_free(g);
}

/* ---- each grad rule once per gr_grad; terms summed in discovery order, left fold (decision 8) ------- */

TEST(test_grad_rule_once_and_order) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *k1 = gr_scalar(g, GR_F64, "k1"), *k2 = gr_scalar(g, GR_F64, "k2");
    gr_var *k3 = gr_scalar(g, GR_F64, "k3"), *seen = NULL;
    int calls = 0;
    gr_var *y = gs_cube(x, 3.0, &calls, NULL, &seen);
    gr_var *cost = gr_add(gr_add(gr_mul(y, k1), gr_mul(y, k2)), gr_mul(y, k3));
    gr_var *w[2], *d[2], *in[4], *t12, *t1, *t2, *t3;
    gr_array *vals[4], *r[2];
    double xv = 1.5, kv[3] = { 2, -3, 0.5 };
    int i;
    w[0] = x; w[1] = y;
    CHECK_STATUS(gr_grad(cost, 2, w, d, NULL), GR_OK);
    CHECK_EQ_INT(calls, 1);
    CHECK(seen == d[1]);                               /* the rule got y's total gradient */
    /* ((t1 + t2) + t3) with t_i = gz * k_i, in the order the walk down met them; gz is the seed 1
       here, and the grad rules leave 1 * k_i as k_i */
    CHECK(seen && strcmp(gr_node_op(gr_var_owner(seen))->name, "add") == 0);
    t12 = gr_node_input(gr_var_owner(seen), 0);
    t3 = gr_node_input(gr_var_owner(seen), 1);
    CHECK(t12 && gr_var_owner(t12) && strcmp(gr_node_op(gr_var_owner(t12))->name, "add") == 0);
    t1 = gr_node_input(gr_var_owner(t12), 0);
    t2 = gr_node_input(gr_var_owner(t12), 1);
    CHECK(t1 == k1);
    CHECK(t2 == k2);
    CHECK(t3 == k3);
    in[0] = x; in[1] = k1; in[2] = k2; in[3] = k3;
    vals[0] = gr_array_scalar(GR_F64, xv);
    for (i = 0; i < 3; i++) vals[i + 1] = gr_array_scalar(GR_F64, kv[i]);
    CHECK_STATUS(gs_run(4, in, (const gr_array *const *)vals, 2, d, r), GR_OK);
    CHECK_NEAR(gr_array_get(r[0], 0), 3 * xv * xv * (kv[0] + kv[1] + kv[2]), 1e-15);
    CHECK_NEAR(gr_array_get(r[1], 0), kv[0] + kv[1] + kv[2], 1e-15);
    gr_array_free(r[0]); gr_array_free(r[1]);
    /* once more per call */
    CHECK(gr_grad1(cost, x) != NULL);
    CHECK_EQ_INT(calls, 2);
    /* fifty consumers of y and several wrt: still once, and sum_i i = 1225 */
    {
        gr_var *acc = y, *w3[3], *d3[3];
        gr_grad_opts o;
        for (i = 0; i < 50; i++) acc = gr_add(acc, gr_mul(y, gr_const(g, (double)i)));
        memset(&o, 0, sizeof o);
        o.disconnected_inputs = GR_IGNORE;
        w3[0] = x; w3[1] = y; w3[2] = k1;
        CHECK_STATUS(gr_grad(acc, 3, w3, d3, &o), GR_OK);
        CHECK_EQ_INT(calls, 3);
        CHECK_STATUS(gs_run(4, in, (const gr_array *const *)vals, 2, d3, r), GR_OK);
        CHECK_NEAR(gr_array_get(r[0], 0), 3 * xv * xv * 1226, 1e-15);
        CHECK_NEAR(gr_array_get(r[1], 0), 1226, 1e-15);
        gr_array_free(r[0]); gr_array_free(r[1]);
    }
    for (i = 0; i < 4; i++) gr_array_free(vals[i]);
    gr_graph_free(g);
}

/* Tri(a, b, c) = a + 2b + 3c, whose rule returns og * (i + 1) for input i */
static gr_status tri_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t i;
    (void)node;
    for (i = 0; i < out[0]->size; i++)
        gr_array_set(out[0], i, gr_array_get(in[0], i) + 2 * gr_array_get(in[1], i) + 3 * gr_array_get(in[2], i));
    return GR_OK;
}
static gr_status tri_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_graph *g = gr_var_graph(og[0]);
    int i;
    for (i = 0; i < 3; i++) ig[i] = gr_mul(og[0], gr_const(g, i + 1.0));
    (void)node;
    return GR_OK;
}
static const gr_op_def op_tri = { .name = "Tri", .n_in = 3, .n_out = 1, .perform = tri_perform, .grad = tri_grad };

/* terms are grouped by consumer in first-seen order, as Aesara's ordered map node -> positions:
   for A = Tri(y, sin(y), y) the walk meets (A, 0), then (sin, 0) below A's second input, then
   (A, 2); the sum is ((A0 + A2) + sin0) */
TEST(test_grad_terms_grouped_by_node) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *seen = NULL, *in[3], *a = NULL, *d, *left, *right;
    int calls = 0;
    gr_var *y = gs_cube(x, 3.0, &calls, NULL, &seen);
    gr_array *xa = gr_array_scalar(GR_F64, 0.75), *r;
    double yv = 0.75 * 0.75 * 0.75;
    in[0] = y; in[1] = gr_sin(y); in[2] = y;
    CHECK_STATUS(gr_apply(&op_tri, NULL, 0, 3, in, &a), GR_OK);
    d = gr_grad1(a, x);
    CHECK(d && seen);
    if (!d || !seen) { gr_graph_free(g); gr_array_free(xa); return; }
    CHECK(strcmp(gr_node_op(gr_var_owner(seen))->name, "add") == 0);
    left = gr_node_input(gr_var_owner(seen), 0);
    right = gr_node_input(gr_var_owner(seen), 1);
    CHECK(strcmp(gr_node_op(gr_var_owner(left))->name, "add") == 0);          /* A0 + A2 */
    CHECK(strcmp(gr_node_op(gr_var_owner(right))->name, "mul") == 0);         /* sin's term: gz cos y */
    CHECK(gr_var_owner(gr_node_input(gr_var_owner(right), 1)) &&
          strcmp(gr_node_op(gr_var_owner(gr_node_input(gr_var_owner(right), 1)))->name, "cos") == 0);
    r = gs_eval(1, &x, (const gr_array *const *)&xa, d);
    CHECK(r != NULL);
    if (r) CHECK_NEAR(gr_array_get(r, 0), (1 + 3 + 2 * cos(yv)) * 3 * 0.75 * 0.75, 1e-15);
    gr_array_free(r); gr_array_free(xa);
    gr_graph_free(g);
}

/* the same graph built twice gives the same gradient graph, node for node */
static void build_and_print(char *buf, size_t size) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *a = gr_vector(g, GR_F64, "a");
    gr_var *s = gr_sin(x), *e = gr_exp(gr_mul(x, a));
    gr_var *cost = gr_sum(gr_add(gr_add(gr_mul(s, e), gr_mul(s, s)), gr_mul(e, gr_tanh(s)))), *w[2], *d[2];
    w[0] = x; w[1] = a;
    gr_var_set_name(cost, "c");
    if (gr_grad(cost, 2, w, d, NULL) != GR_OK) { buf[0] = 0; gr_graph_free(g); return; }
    gs_print(d[0], buf, size / 2);
    gs_print(d[1], buf + strlen(buf), size / 2);
    gr_graph_free(g);
}

TEST(test_grad_deterministic) {
    static char b1[16384], b2[16384];
    build_and_print(b1, sizeof b1);
    build_and_print(b2, sizeof b2);
    CHECK(strlen(b1) > 100);
    CHECK(strcmp(b1, b2) == 0);
}

SUITE(suite_grad_semantics) = {
    CASE(test_grad_constant), CASE(test_consider_constant_other_graph), CASE(test_disconnected_raise),
    CASE(test_disconnected_warn), CASE(test_disconnected_ignore), CASE(test_grad_name), CASE(test_known_grads_no_cost),
    CASE(test_known_grads_integers), CASE(test_known_grad_of_cost), CASE(test_known_grads_layers), CASE(test_return_disconnected),
    CASE(test_null_gradients_not_implemented), CASE(test_null_gradient_propagates), CASE(test_undefined_grad),
    CASE(test_cost_checks), CASE(test_dxdx), CASE(test_grad_int), CASE(test_step_ops_zero_grad), CASE(test_int_cast_chain),
    CASE(test_int_dot), CASE(test_int_cost), CASE(test_downcast_dtype), CASE(test_downcast_dtype_mixed),
    CASE(test_grad_rule_once_and_order), CASE(test_grad_deterministic), CASE(test_grad_terms_grouped_by_node), END_SUITE
};
