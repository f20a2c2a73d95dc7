/* tests/t_grad_contract.c: the op contract of SEMANTICS 2.5 / 2.7 / 5 checked by gr_grad on users'
   ops (gr_op_def + gr_apply): terms of the wrong ndim or dtype, NULL terms, terms that contradict
   the connection pattern, multi-output ops whose other output does not reach the cost, integer-
   valued outputs, ops without a grad rule, and undefined gradients. */
#include "gsem_util.h"

/* ---- Bad: y = x0 + x1 (same shapes), with a grad rule that misbehaves as its params say --------- */

enum bad_mode {
    BAD_OK,              /* og, og */
    BAD_WRONG_NDIM,      /* sum(og) for input 0 */
    BAD_INT_TERM,        /* cast(og, I64) for input 0 */
    BAD_NULL_TERM,       /* NULL for input 0 */
    BAD_REAL_BOTH,       /* og, og (wrong when the pattern excludes input 1) */
    BAD_DISC_1,          /* og, disconnected */
    BAD_FAIL,            /* returns GR_ERR_RUNTIME */
    BAD_UNDEFINED,       /* gr_grad_undefined for input 0, og for input 1 */
    BAD_NOT_IMPL         /* gr_grad_not_implemented for input 1, og for input 0 */
};
typedef struct bad_params { int mode; } bad_params;

static gr_status bad_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t i;
    (void)node;
    for (i = 0; i < out[0]->size; i++) gr_array_set(out[0], i, gr_array_get(in[0], i) + gr_array_get(in[1], i));
    return GR_OK;
}
static gr_status bad_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const bad_params *p = (const bad_params *)gr_node_params(node);
    gr_var *x0 = gr_node_input(node, 0), *x1 = gr_node_input(node, 1);
    ig[0] = og[0];
    ig[1] = og[0];
    switch (p->mode) {
    case BAD_WRONG_NDIM: ig[0] = gr_sum(og[0]); break;
    case BAD_INT_TERM: ig[0] = gr_cast(og[0], GR_I64); break;
    case BAD_NULL_TERM: ig[0] = NULL; break;
    case BAD_DISC_1: ig[1] = gr_disconnected_like(x1); break;
    case BAD_FAIL: return GR_ERR_RUNTIME;
    case BAD_UNDEFINED: ig[0] = gr_grad_undefined(node, 0, x0, "x0 is a count"); break;
    case BAD_NOT_IMPL: ig[1] = gr_grad_not_implemented(node, 1, x1, "nobody wrote it"); break;
    default: break;
    }
    return GR_OK;
}
static const unsigned char conn_10[2] = { 1, 0 };
static const unsigned char conn_11[2] = { 1, 1 };
static const gr_op_def op_bad = { .name = "Bad", .n_in = 2, .n_out = 1, .perform = bad_perform, .grad = bad_grad };
static const gr_op_def op_bad_10 = { .name = "Bad10", .n_in = 2, .n_out = 1, .connection_pattern = conn_10,
                                     .perform = bad_perform, .grad = bad_grad };
static const gr_op_def op_bad_11 = { .name = "Bad11", .n_in = 2, .n_out = 1, .connection_pattern = conn_11,
                                     .perform = bad_perform, .grad = bad_grad };

static gr_var *bad(const gr_op_def *op, int mode, gr_var *x0, gr_var *x1) {
    bad_params p;
    gr_var *in[2], *y = NULL;
    p.mode = mode;
    in[0] = x0; in[1] = x1;
    gr_apply(op, &p, sizeof p, 2, in, &y);
    return y;
}

/* gr_grad of sum(op(x0, x1)) with respect to both; returns the status, checks that a failure
   leaves both entries NULL */
static gr_status bad_grad_status(const gr_op_def *op, int mode, gr_graph *g, gr_var **d, const gr_grad_opts *o) {
    gr_var *x0 = gr_vector(g, GR_F64, "x0"), *x1 = gr_vector(g, GR_F64, "x1"), *w[2];
    gr_status st;
    w[0] = x0; w[1] = x1;
    d[0] = d[1] = x0;
    st = gr_grad(gr_sum(bad(op, mode, x0, x1)), 2, w, d, o);
    if (st != GR_OK) CHECK(d[0] == NULL && d[1] == NULL);
    return st;
}

TEST(test_contract_ok) {
    gr_graph *g = gr_graph_new();
    gr_var *a = gr_vector(g, GR_F64, "a"), *b = gr_vector(g, GR_F64, "b"), *w[2], *d[2];
    gr_var *cost = gr_sum(gr_mul(bad(&op_bad_11, BAD_OK, a, b), gr_const(g, 4.0)));
    gr_array *vals[2], *r[2];
    double v[3] = { 1, 2, 3 };
    w[0] = a; w[1] = b;
    CHECK_STATUS(gr_grad(cost, 2, w, d, NULL), GR_OK);
    vals[0] = gs_vec(GR_F64, 3, v); vals[1] = gs_vec(GR_F64, 3, v);
    CHECK_STATUS(gs_run(2, w, (const gr_array *const *)vals, 2, d, r), GR_OK);
    CHECK(gs_all(r[0], 3, 4.0) && gs_all(r[1], 3, 4.0));
    gr_array_free(r[0]); gr_array_free(r[1]); gr_array_free(vals[0]); gr_array_free(vals[1]);
    CHECK_STATUS(bad_grad_status(&op_bad, BAD_OK, g, d, NULL), GR_OK);
    gr_graph_free(g);
}

TEST(test_contract_wrong_ndim) {
    gr_graph *g = gr_graph_new();
    gr_var *d[2];
    CHECK_STATUS(bad_grad_status(&op_bad, BAD_WRONG_NDIM, g, d, NULL), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_graph_message(g), "the grad rule of Bad returned a term with 0 dimensions for input 0");
    CHECK_CONTAINS(gr_graph_message(g), "but 1 are required");
    gr_graph_free(g);
}

TEST(test_contract_int_term) {
    gr_graph *g = gr_graph_new();
    gr_var *d[2];
    CHECK_STATUS(bad_grad_status(&op_bad, BAD_INT_TERM, g, d, NULL), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_graph_message(g), "Bad illegally returned an integer-valued variable");
    CHECK_CONTAINS(gr_graph_message(g), "int64");
    gr_graph_free(g);
}

TEST(test_contract_null_term) {
    gr_graph *g = gr_graph_new();
    gr_var *d[2];
    CHECK_STATUS(bad_grad_status(&op_bad, BAD_NULL_TERM, g, d, NULL), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_graph_message(g), "the grad rule of Bad returned NULL for input 0");
    gr_graph_free(g);
}

/* a real term where the connection pattern says "disconnected" */
TEST(test_contract_real_for_excluded) {
    gr_graph *g = gr_graph_new();
    gr_var *d[2];
    gr_grad_opts o;
    memset(&o, 0, sizeof o);
    o.disconnected_inputs = GR_IGNORE;
    CHECK_STATUS(bad_grad_status(&op_bad_10, BAD_REAL_BOTH, g, d, &o), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_graph_message(g), "input 1");
    CHECK_CONTAINS(gr_graph_message(g), "connection pattern says the input is disconnected");
    gr_graph_clear_error(g);
    /* honest: a disconnected marker there, and input 1 is disconnected for gr_grad too */
    CHECK_STATUS(bad_grad_status(&op_bad_10, BAD_DISC_1, g, d, &o), GR_OK);
    CHECK(d[0] && !gr_is_disconnected(d[0]));
    CHECK(d[1] && !gr_is_disconnected(d[1]));            /* zeros (return_disconnected ZERO) */
    gr_graph_free(g);
}

/* a disconnected term where an explicit connection pattern connects: an error; without a pattern
   only a warning (and then the input is disconnected) */
TEST(test_contract_disconnected_for_connected) {
    gr_graph *g = gr_graph_new();
    gr_var *d[2];
    gr_grad_opts o;
    gs_log l;
    gs_log_attach(g, &l);
    CHECK_STATUS(bad_grad_status(&op_bad_11, BAD_DISC_1, g, d, NULL), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_graph_message(g), "the grad rule of Bad11 returned a disconnected gradient for input 1");
    CHECK_CONTAINS(gr_graph_message(g), "connection pattern connects it");
    gr_graph_clear_error(g);
    /* no pattern: a warning, then the disconnected policy for x1 (once: it is in the graph) */
    memset(&o, 0, sizeof o);
    o.disconnected_inputs = GR_WARN;
    CHECK_STATUS(bad_grad_status(&op_bad, BAD_DISC_1, g, d, &o), GR_OK);
    CHECK_EQ_INT(l.count, 2);
    CHECK_CONTAINS(l.first, "the grad rule of Bad returned a disconnected gradient for input 1");
    CHECK_CONTAINS(l.first, "connection pattern");
    CHECK_CONTAINS(l.last, "not part of the computational graph of the cost");
    CHECK_CONTAINS(l.last, "'x1'");
    /* and with RAISE the structurally connected x1 raises after the backward pass */
    o.disconnected_inputs = GR_RAISE;
    CHECK_STATUS(bad_grad_status(&op_bad, BAD_DISC_1, g, d, &o), GR_ERR_DISCONNECTED_INPUT);
    CHECK_CONTAINS(gr_graph_message(g), "'x1'");
    gr_graph_free(g);
}

TEST(test_contract_rule_fails) {
    gr_graph *g = gr_graph_new();
    gr_var *d[2];
    CHECK_STATUS(bad_grad_status(&op_bad, BAD_FAIL, g, d, NULL), GR_ERR_RUNTIME);
    CHECK_CONTAINS(gr_graph_message(g), "the grad rule of Bad failed");
    gr_graph_free(g);
}

/* a stale error left on the graph does not make later gr_grad calls fail */
TEST(test_grad_after_uncleared_error) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *d[2], *dx;
    double v[2] = { 2, -1 }, want[2] = { 12, 3 };
    gr_array *xa = gs_vec(GR_F64, 2, v), *r;
    CHECK(gr_grad1(gr_sin(x), x) == NULL);             /* not a scalar cost: GR_ERR_TYPE stays recorded */
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_TYPE);
    dx = gr_grad1(gr_sum(gs_cube(x, 3.0, NULL, NULL, NULL)), x);
    CHECK(dx != NULL);
    r = gs_eval(1, &x, (const gr_array *const *)&xa, dx);
    CHECK_EQ_INT(gs_diff(r, 2, want, 1e-15), 0);
    gr_array_free(r);
    CHECK_STATUS(bad_grad_status(&op_bad_11, BAD_OK, g, d, NULL), GR_OK);
    /* the first error is still the one on record */
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_TYPE);
    gr_array_free(xa);
    gr_graph_free(g);
}

/* undefined and not-implemented terms from a rule */
TEST(test_contract_null_terms) {
    gr_graph *g = gr_graph_new();
    gr_var *d[2];
    gr_grad_opts o;
    memset(&o, 0, sizeof o);
    CHECK_STATUS(bad_grad_status(&op_bad, BAD_UNDEFINED, g, d, &o), GR_ERR_NULL_GRAD);
    CHECK_CONTAINS(gr_graph_message(g), "This variable is Null because the grad method for input 0 ('x0') of the Bad op is not implemented. x0 is a count");
    gr_graph_clear_error(g);
    o.null_gradients = GR_NULL_RETURN;
    CHECK_STATUS(bad_grad_status(&op_bad, BAD_UNDEFINED, g, d, &o), GR_OK);
    CHECK(gr_is_null(d[0]) && !gr_is_null(d[1]));
    CHECK(gr_function(0, NULL, 1, &d[0], NULL) == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_GRAD_UNDEFINED);
    CHECK_CONTAINS(gr_graph_message(g), "x0 is a count");
    gr_graph_clear_error(g);
    CHECK_STATUS(bad_grad_status(&op_bad, BAD_NOT_IMPL, g, d, &o), GR_OK);
    CHECK(!gr_is_null(d[0]) && gr_is_null(d[1]));
    CHECK(strcmp(gr_null_reason(d[1]), "This variable is Null because the grad method for input 1 ('x1') of the Bad op is not "
                                       "implemented. nobody wrote it") == 0);
    CHECK(gr_function(0, NULL, 1, &d[1], NULL) == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_GRAD_NOT_IMPLEMENTED);
    gr_graph_free(g);
}

/* ---- Pair: one input, two outputs 2x and 3x; the rule records which output gradients arrive ----- */

typedef struct pair_params { int *seen_disc0, *seen_disc1, *calls; } pair_params;

static gr_status pair_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t i;
    (void)node;
    for (i = 0; i < in[0]->size; i++) {
        gr_array_set(out[0], i, 2 * gr_array_get(in[0], i));
        gr_array_set(out[1], i, 3 * gr_array_get(in[0], i));
    }
    return GR_OK;
}
static gr_status pair_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const pair_params *p = (const pair_params *)gr_node_params(node);
    gr_graph *g = gr_var_graph(gr_node_input(node, 0));
    gr_var *t = NULL;
    (*p->calls)++;
    *p->seen_disc0 = gr_is_disconnected(og[0]);
    *p->seen_disc1 = gr_is_disconnected(og[1]);
    if (!og[0] || !og[1]) return GR_ERR_VALUE;         /* never NULL (API.md) */
    /* markers are not values: skip disconnected (and null) output gradients */
    if (!gr_is_disconnected(og[0]) && !gr_is_null(og[0])) t = gr_mul(og[0], gr_const(g, 2.0));
    if (!gr_is_disconnected(og[1]) && !gr_is_null(og[1])) {
        gr_var *t1 = gr_mul(og[1], gr_const(g, 3.0));
        t = t ? gr_add(t, t1) : t1;
    }
    ig[0] = t;
    return GR_OK;
}
static const gr_op_def op_pair = { .name = "Pair", .n_in = 1, .n_out = 2, .perform = pair_perform, .grad = pair_grad };

TEST(test_multi_output_disconnected_output) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y[2], *d;
    int disc0 = -1, disc1 = -1, calls = 0, which;
    pair_params p;
    double xv[3] = { 1, -2, 0.5 };
    gr_array *xa = gs_vec(GR_F64, 3, xv), *r;
    p.seen_disc0 = &disc0; p.seen_disc1 = &disc1; p.calls = &calls;
    CHECK_STATUS(gr_apply(&op_pair, &p, sizeof p, 1, &x, y), GR_OK);
    for (which = 0; which < 3; which++) {
        gr_var *cost = which == 0 ? gr_sum(y[0]) : which == 1 ? gr_sum(gr_sin(y[1])) : gr_add(gr_sum(y[0]), gr_sum(y[1]));
        double want[3];
        int i;
        d = gr_grad1(cost, x);
        CHECK_MSG(d != NULL, "case %d: %s", which, gr_graph_message(g));
        CHECK_EQ_INT(calls, which + 1);
        CHECK_EQ_INT(disc0, which == 1);
        CHECK_EQ_INT(disc1, which == 0);
        r = gs_eval(1, &x, (const gr_array *const *)&xa, d);
        for (i = 0; i < 3; i++) want[i] = which == 0 ? 2 : which == 1 ? 3 * cos(3 * xv[i]) : 5;
        CHECK_EQ_INT(gs_diff(r, 3, want, 1e-15), 0);
        gr_array_free(r);
    }
    /* both outputs disconnected from the cost: the rule is not called at all (shortcut A) */
    {
        gr_var *z = gr_vector(g, GR_F64, "z"), *w[2], *dd[2];
        gr_grad_opts o;
        memset(&o, 0, sizeof o);
        o.disconnected_inputs = GR_IGNORE;
        w[0] = x; w[1] = z;
        CHECK_STATUS(gr_grad(gr_sum(z), 2, w, dd, &o), GR_OK);
        CHECK_EQ_INT(calls, 3);
    }
    gr_array_free(xa);
    gr_graph_free(g);
}

static gr_status nograd_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t i;
    (void)node;
    for (i = 0; i < in[0]->size; i++) gr_array_set(out[0], i, gr_array_get(in[0], i));
    return GR_OK;
}
static const gr_op_def op_nograd = { .name = "NoGrad", .n_in = 1, .n_out = 1, .perform = nograd_perform };

/* a null gradient on one output of a multi-output op poisons the inputs connected to it */
TEST(test_multi_output_null_output) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y[2], *z = NULL, *d = NULL;
    int disc0 = -1, disc1 = -1, calls = 0;
    pair_params p;
    gr_grad_opts o;
    p.seen_disc0 = &disc0; p.seen_disc1 = &disc1; p.calls = &calls;
    CHECK_STATUS(gr_apply(&op_pair, &p, sizeof p, 1, &x, y), GR_OK);
    CHECK_STATUS(gr_apply(&op_nograd, NULL, 0, 1, &y[0], &z), GR_OK);
    memset(&o, 0, sizeof o);
    CHECK_STATUS(gr_grad(gr_add(gr_sum(z), gr_sum(y[1])), 1, &x, &d, &o), GR_ERR_NULL_GRAD);
    CHECK_CONTAINS(gr_graph_message(g), "of the NoGrad op is not implemented.");
    gr_graph_clear_error(g);
    o.null_gradients = GR_NULL_RETURN;
    CHECK_STATUS(gr_grad(gr_add(gr_sum(z), gr_sum(y[1])), 1, &x, &d, &o), GR_OK);
    CHECK(gr_is_null(d));
    CHECK_CONTAINS(gr_null_reason(d), "NoGrad");
    CHECK_EQ_INT(calls, 2);                            /* the rule ran (one output is real), its term was replaced */
    /* only the null output reaches the cost: the rule is not called (shortcut B), the reason is kept */
    CHECK_STATUS(gr_grad(gr_sum(z), 1, &x, &d, &o), GR_OK);
    CHECK(gr_is_null(d));
    CHECK_CONTAINS(gr_null_reason(d), "NoGrad");
    CHECK_EQ_INT(calls, 2);
    gr_graph_free(g);
}

/* known gradients may be markers (SEMANTICS 2.2) */
TEST(test_known_grads_markers) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *w = gr_vector(g, GR_F64, "w"), *y = gr_mul(x, x), *d = NULL, *nul = NULL, *kg;
    gr_var *nw = NULL;
    gr_grad_opts o;
    /* a disconnected known gradient: x is disconnected */
    memset(&o, 0, sizeof o);
    kg = gr_disconnected_like(y);
    o.known_vars = &y; o.known_grads = &kg; o.n_known = 1;
    CHECK_STATUS(gr_grad(NULL, 1, &x, &d, &o), GR_ERR_DISCONNECTED_INPUT);
    gr_graph_clear_error(g);
    o.disconnected_inputs = GR_IGNORE;
    o.return_disconnected = GR_RETURN_DISCONNECTED;
    CHECK_STATUS(gr_grad(NULL, 1, &x, &d, &o), GR_OK);
    CHECK(gr_is_disconnected(d));
    /* a null known gradient: x's gradient is null, with the same reason */
    CHECK_STATUS(gr_apply(&op_nograd, NULL, 0, 1, &w, &nw), GR_OK);
    memset(&o, 0, sizeof o);
    o.null_gradients = GR_NULL_RETURN;
    CHECK_STATUS(gr_grad(gr_sum(nw), 1, &w, &nul, &o), GR_OK);
    CHECK(gr_is_null(nul));
    memset(&o, 0, sizeof o);
    o.known_vars = &y; o.known_grads = &nul; o.n_known = 1;
    CHECK_STATUS(gr_grad(NULL, 1, &x, &d, &o), GR_ERR_NULL_GRAD);
    CHECK_CONTAINS(gr_graph_message(g), "of the NoGrad op is not implemented.");
    gr_graph_free(g);
}

/* ---- ToInt: an integer-valued output (floor, as I64) ------------------------------------------------ */

enum { TOINT_ZEROS, TOINT_NONZERO, TOINT_UNDEFINED, TOINT_MAYBE };
typedef struct toint_params { int mode; } toint_params;

static gr_status toint_infer(const gr_node *node, gr_type *out) {
    gr_var_type(gr_node_input(node, 0), out);
    out->dtype = GR_I64;
    return GR_OK;
}
static gr_status toint_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t i;
    (void)node;
    for (i = 0; i < in[0]->size; i++) gr_array_set(out[0], i, floor(gr_array_get(in[0], i)));
    return GR_OK;
}
static gr_status toint_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const toint_params *p = (const toint_params *)gr_node_params(node);
    gr_var *x = gr_node_input(node, 0);
    gr_graph *g = gr_var_graph(x);
    gr_array *c;
    switch (p->mode) {
    case TOINT_ZEROS:
    case TOINT_NONZERO:
        c = gr_array_scalar(GR_F64, p->mode == TOINT_ZEROS ? 0.0 : 3.0);
        ig[0] = gr_constant(g, c);
        gr_array_free(c);
        break;
    case TOINT_UNDEFINED: ig[0] = gr_grad_undefined(node, 0, x, "floor as an integer"); break;
    default: ig[0] = gr_mul(og[0], gr_const(g, 0.0)); break;     /* not a constant: "maybe" zero, accepted silently */
    }
    return ig[0] ? GR_OK : gr_graph_status(g);
}
static const gr_op_def op_toint = { .name = "ToInt", .n_in = 1, .n_out = 1, .infer = toint_infer, .perform = toint_perform,
                                    .grad = toint_grad };
static const gr_op_def op_toint_nograd = { .name = "ToIntNoGrad", .n_in = 1, .n_out = 1, .infer = toint_infer,
                                           .perform = toint_perform };

static gr_var *toint(const gr_op_def *op, int mode, gr_var *x) {
    toint_params p;
    gr_var *y = NULL;
    p.mode = mode;
    gr_apply(op, &p, sizeof p, 1, &x, &y);
    return y;
}

TEST(test_integer_output_terms) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *d;
    gr_array *xa = gr_array_scalar(GR_F64, 2.5), *r;
    gr_grad_opts o;
    /* zeros: fine, and the gradient is 0 */
    CHECK_EQ_INT(gr_var_dtype(toint(&op_toint, TOINT_ZEROS, x)), GR_I64);
    d = gr_grad1(gr_cast(toint(&op_toint, TOINT_ZEROS, x), GR_F64), x);
    CHECK(d != NULL);
    r = gs_eval(1, &x, (const gr_array *const *)&xa, d);
    CHECK(gs_all(r, 1, 0.0));
    gr_array_free(r);
    /* a nonzero constant for an input that only reaches integer outputs: GR_ERR_VALUE */
    CHECK(gr_grad1(gr_cast(toint(&op_toint, TOINT_NONZERO, x), GR_F64), x) == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "ToInt");
    CHECK_CONTAINS(gr_graph_message(g), "integer-valued outputs");
    gr_graph_clear_error(g);
    /* a non-constant term: "maybe", accepted silently */
    d = gr_grad1(gr_cast(toint(&op_toint, TOINT_MAYBE, x), GR_F64), x);
    CHECK(d != NULL);
    r = gs_eval(1, &x, (const gr_array *const *)&xa, d);
    CHECK(gs_all(r, 1, 0.0));
    gr_array_free(r);
    /* a null term is allowed for an integer-valued output (SEMANTICS 2.7: zeros or NullType) */
    memset(&o, 0, sizeof o);
    d = x;
    CHECK_STATUS(gr_grad(gr_cast(toint(&op_toint, TOINT_UNDEFINED, x), GR_F64), 1, &x, &d, &o), GR_ERR_NULL_GRAD);
    CHECK(d == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "floor as an integer");
    gr_graph_clear_error(g);
    o.null_gradients = GR_NULL_RETURN;
    CHECK_STATUS(gr_grad(gr_cast(toint(&op_toint, TOINT_UNDEFINED, x), GR_F64), 1, &x, &d, &o), GR_OK);
    CHECK(gr_is_null(d));
    CHECK(gr_function(1, &x, 1, &d, NULL) == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_GRAD_UNDEFINED);
    gr_graph_clear_error(g);
    /* no grad rule at all on an integer-valued op: "not implemented", like any other op */
    o.null_gradients = GR_NULL_RAISE;
    CHECK_STATUS(gr_grad(gr_cast(toint(&op_toint_nograd, 0, x), GR_F64), 1, &x, &d, &o), GR_ERR_NULL_GRAD);
    CHECK_CONTAINS(gr_graph_message(g), "of the ToIntNoGrad op is not implemented.");
    gr_graph_clear_error(g);
    o.null_gradients = GR_NULL_RETURN;
    CHECK_STATUS(gr_grad(gr_cast(toint(&op_toint_nograd, 0, x), GR_F64), 1, &x, &d, &o), GR_OK);
    CHECK(gr_function(1, &x, 1, &d, NULL) == NULL);
    CHECK_EQ_INT(gr_graph_status(g), GR_ERR_GRAD_NOT_IMPLEMENTED);
    gr_array_free(xa);
    gr_graph_free(g);
}

/* ---- output gradients given to a rule are cast to the output's float dtype (test_downcast_dtype) ---- */

TEST(test_rule_sees_output_dtype) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F32, "x"), *v = gr_vector(g, GR_F64, "v"), *seen = NULL, *d;
    int calls = 0;
    gr_var *y = gs_cube(x, 3.0, &calls, NULL, &seen);
    double xv[2] = { 0.5, -2 }, want[2];
    gr_array *vals[2], *r;
    gr_var *in[2];
    d = gr_grad1(gr_sum(gr_add(y, v)), x);               /* y's gradient is F64 (it meets v) */
    CHECK(d != NULL && seen != NULL);
    CHECK_EQ_INT(gr_var_dtype(seen), GR_F32);
    CHECK_EQ_INT(gr_var_dtype(d), GR_F32);
    in[0] = x; in[1] = v;
    vals[0] = gs_vec(GR_F32, 2, xv); vals[1] = gs_vec(GR_F64, 2, xv);
    r = gs_eval(2, in, (const gr_array *const *)vals, d);
    want[0] = 3 * xv[0] * xv[0]; want[1] = 3 * xv[1] * xv[1];
    CHECK(r && r->dtype == GR_F32);
    CHECK_EQ_INT(gs_diff(r, 2, want, 1e-6), 0);
    gr_array_free(r); gr_array_free(vals[0]); gr_array_free(vals[1]);
    gr_graph_free(g);
}

SUITE(suite_grad_contract) = {
    CASE(test_contract_ok), CASE(test_contract_wrong_ndim), CASE(test_contract_int_term), CASE(test_contract_null_term),
    CASE(test_contract_real_for_excluded), CASE(test_contract_disconnected_for_connected), CASE(test_contract_rule_fails),
    CASE(test_grad_after_uncleared_error), CASE(test_contract_null_terms), CASE(test_multi_output_disconnected_output), CASE(test_multi_output_null_output), CASE(test_known_grads_markers),
    CASE(test_integer_output_terms), CASE(test_rule_sees_output_dtype), END_SUITE
};
