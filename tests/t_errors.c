/* tests/t_errors.c: the error model. Errors never abort and never leak: a bad argument returns NULL
   or a status, records the first error on the graph (code and a message naming the op and the
   variable), and a later good call still works. Every test here also runs under ASan/LSan. The
   errors of each op's constructor are tested with the op (tests/ops_<family>.c); here, what holds
   for every op and driver. */
#include "forward.h"

/* ---- NULL operands ----------------------------------------------------------------------------- */

TEST(test_null_operands_record_nothing) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    gr_var *m = gr_matrix(g, GR_F64, "m");
    gr_var *outs[2];
    int64_t shp[2] = { 2, -1 };
    int pat[2] = { 1, 0 }, ax[1] = { 0 };
    double one = 1.0;
    gr_array *a = e_vec(1, &one);
    CHECK(x != NULL && m != NULL);
    CHECK(gr_neg(NULL) == NULL);
    CHECK(gr_exp(NULL) == NULL);
    CHECK(gr_add(NULL, x) == NULL);
    CHECK(gr_add(x, NULL) == NULL);
    CHECK(gr_mul(NULL, NULL) == NULL);
    CHECK(gr_div(x, NULL) == NULL);
    CHECK(gr_pow(NULL, x) == NULL);
    CHECK(gr_gt(x, NULL) == NULL);
    CHECK(gr_where(NULL, x, x) == NULL);
    CHECK(gr_where(x, NULL, x) == NULL);
    CHECK(gr_clip(x, x, NULL) == NULL);
    CHECK(gr_cast(NULL, GR_F32) == NULL);
    CHECK(gr_sum(NULL) == NULL);
    CHECK(gr_mean(NULL) == NULL);
    CHECK(gr_sum_axis(NULL, 0) == NULL);
    CHECK(gr_max_axes(NULL, 1, ax, 1) == NULL);
    CHECK(gr_prod(NULL) == NULL);
    CHECK(gr_dot(NULL, x) == NULL);
    CHECK(gr_dot(m, NULL) == NULL);
    CHECK(gr_outer(x, NULL) == NULL);
    CHECK(gr_transpose(NULL) == NULL);
    CHECK(gr_dimshuffle(NULL, 2, pat) == NULL);
    CHECK(gr_reshape(NULL, 2, shp) == NULL);
    CHECK(gr_flatten(NULL) == NULL);
    CHECK(gr_softmax(NULL, 0) == NULL);
    CHECK(gr_log_softmax(NULL, 0) == NULL);
    CHECK(gr_broadcast_like(NULL, m) == NULL);
    CHECK(gr_reduce_like(m, NULL) == NULL);
    CHECK(gr_reshape_like(NULL, x) == NULL);
    CHECK(gr_size_ratio(x, NULL, GR_F64) == NULL);
    CHECK(gr_disconnected_like(NULL) == NULL);
    /* leaves without a graph */
    CHECK(gr_tensor(NULL, GR_F64, 1, NULL, "t") == NULL);
    CHECK(gr_scalar(NULL, GR_F64, "s") == NULL);
    CHECK(gr_const(NULL, 1.0) == NULL);
    CHECK(gr_constant(NULL, a) == NULL);
    CHECK(gr_shared(NULL, a, "w") == NULL);
    /* gr_apply with a NULL input: a status, outputs NULL, nothing recorded */
    {
        gr_var *ins[2];
        ins[0] = x; ins[1] = NULL;
        outs[0] = x;
        CHECK(gr_apply(gr_node_op(gr_var_owner(gr_add(x, x))), NULL, 0, 2, ins, outs) != GR_OK);
        CHECK(outs[0] == NULL);
    }
    /* a NULL operand wins over a would-be error in the same call (nothing new is recorded) */
    CHECK(gr_add(NULL, gr_disconnected_like(x)) == NULL);
    CHECK_OK_GRAPH(g);
    /* accessors of NULL */
    CHECK(gr_var_name(NULL) == NULL);
    CHECK_EQ_INT(gr_var_ndim(NULL), -1);
    CHECK(gr_var_graph(NULL) == NULL);
    CHECK(gr_shared_get(NULL) == NULL);
    CHECK(gr_shared_get(x) == NULL);
    CHECK(!gr_is_disconnected(NULL) && !gr_is_null(NULL));
    CHECK(strcmp(gr_graph_message(NULL), "") == 0);
    CHECK_OK_GRAPH(g);
    gr_array_free(a);
    gr_graph_free(g);
}

/* a chain of builders checked once at the end keeps the first error */
TEST(test_chain_checked_once) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    gr_var *a = e_const_vec(g, 3), *b = e_const_vec(g, 4);
    gr_var *y;
    gr_var_set_name(b, "b4");
    /* the error happens deep inside; every later builder sees a NULL operand */
    y = gr_sum(gr_mul(gr_exp(gr_add(gr_sin(x), gr_add(a, b))), gr_tanh(x)));
    CHECK(y == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_add");
    CHECK_CONTAINS(gr_graph_message(g), "'b4'");
    /* a function over the failed chain is refused too, keeping the first message */
    {
        char before[1100];
        snprintf(before, sizeof before, "%s", gr_graph_message(g));
        CHECK(gr_function(1, &x, 1, &y, NULL) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
        CHECK(strcmp(before, gr_graph_message(g)) == 0);
    }
    gr_graph_free(g);
}

TEST(test_first_error_sticks) {
    gr_graph *g = gr_graph_new();
    gr_var *a = e_const_vec(g, 3), *b = e_const_vec(g, 4), *m = gr_matrix(g, GR_F64, "m");
    char first[1100];
    CHECK(gr_add(a, b) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    snprintf(first, sizeof first, "%s", gr_graph_message(g));
    CHECK_CONTAINS(first, "gr_add");
    /* a second, different error: the status and the message stay */
    CHECK(gr_sum_axis(m, 7) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK(strcmp(first, gr_graph_message(g)) == 0);
    /* good builders still work while an error is recorded */
    CHECK(gr_add(a, a) != NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    gr_graph_clear_error(g);
    CHECK_OK_GRAPH(g);
    /* and after the clear the next error is recorded */
    CHECK(gr_sum_axis(m, 7) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_sum_axis");
    CHECK_CONTAINS(gr_graph_message(g), "'m'");
    gr_graph_clear_error(NULL);
    CHECK_STATUS(gr_graph_status(NULL), GR_ERR_VALUE);
    gr_graph_free(g);
}

TEST(test_two_graphs) {
    gr_graph *g1 = gr_graph_new(), *g2 = gr_graph_new();
    gr_var *x = gr_vector(g1, GR_F64, "x1"), *y = gr_vector(g2, GR_F64, "y2");
    gr_var *z;
    CHECK(gr_add(x, y) == NULL);
    CHECK_STATUS(gr_graph_status(g1), GR_ERR_VALUE);
    CHECK_STATUS(gr_graph_status(g2), GR_OK);
    CHECK_CONTAINS(gr_graph_message(g1), "gr_add");
    CHECK_CONTAINS(gr_graph_message(g1), "'y2'");
    CHECK_CONTAINS(gr_graph_message(g1), "another graph");
    gr_graph_clear_error(g1);
    CHECK(gr_dot(y, x) == NULL);                        /* recorded on the first operand's graph */
    CHECK_STATUS(gr_graph_status(g2), GR_ERR_VALUE);
    CHECK_STATUS(gr_graph_status(g1), GR_OK);
    gr_graph_clear_error(g2);
    CHECK(gr_where(x, x, y) == NULL);
    CHECK_STATUS(gr_graph_status(g1), GR_ERR_VALUE);
    gr_graph_clear_error(g1);
    /* gr_function: an input of another graph, an output of another graph */
    z = gr_mul(x, x);
    CHECK(gr_function(1, &y, 1, &z, NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g1), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g1), "another graph");
    gr_graph_clear_error(g1);
    {
        gr_var *outs[2];
        outs[0] = z; outs[1] = y;
        CHECK(gr_function(1, &x, 2, outs, NULL) == NULL);
        CHECK_STATUS(gr_graph_status(g1), GR_ERR_VALUE);
    }
    CHECK_STATUS(gr_graph_status(g2), GR_OK);
    gr_graph_free(g1);
    gr_graph_free(g2);
}

TEST(test_markers_as_operands) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    gr_var *d = gr_disconnected_like(x);
    int64_t shp[1] = { -1 };
    int pat[2] = { 0, GR_NEWAXIS };
    CHECK(d != NULL && gr_is_disconnected(d) && !gr_is_null(d));
    CHECK_EQ_INT(gr_var_ndim(d), 1);
    CHECK_OK_GRAPH(g);
    CHECK(gr_add(x, d) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_add");
    CHECK_CONTAINS(gr_graph_message(g), "disconnected");
    gr_graph_clear_error(g);
    CHECK(gr_exp(d) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE); gr_graph_clear_error(g);
    CHECK(gr_sum(d) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE); gr_graph_clear_error(g);
    CHECK(gr_dot(x, d) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE); gr_graph_clear_error(g);
    CHECK(gr_reshape(d, 1, shp) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE); gr_graph_clear_error(g);
    CHECK(gr_dimshuffle(d, 2, pat) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE); gr_graph_clear_error(g);
    CHECK(gr_softmax(d, 0) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE); gr_graph_clear_error(g);
    CHECK(gr_cast(d, GR_F32) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE); gr_graph_clear_error(g);
    CHECK(gr_where(gr_gt(x, x), x, d) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE); gr_graph_clear_error(g);
    /* nor can a marker be a function's output or an update value */
    CHECK(gr_function(1, &x, 1, &d, NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    gr_graph_clear_error(g);
    {
        gr_array *w0 = e_ramp(3);
        gr_var *w = gr_shared(g, w0, "w");
        gr_update u;
        gr_fn_opts o;
        gr_var *y = gr_sum(x);
        memset(&o, 0, sizeof o);
        u.shared = w; u.value = gr_disconnected_like(w);
        o.updates = &u; o.n_updates = 1;
        CHECK(gr_function(1, &x, 1, &y, &o) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
        gr_array_free(w0);
    }
    gr_graph_free(g);
}

/* ---- static shapes ---------------------------------------------------------------------------- */

TEST(test_static_shape_conflicts) {
    gr_graph *g = gr_graph_new();
    int64_t s4[1] = { 4 }, s32[2] = { 3, 2 };
    gr_var *a = e_const_vec(g, 3);
    gr_var *b = gr_tensor(g, GR_F64, 1, s4, "b");
    gr_var *w, *m23 = e_const_mat(g, 2, 3), *y;
    gr_array *w0;
    gr_type t;
    gr_var_set_name(a, "a3");
    CHECK(gr_add(a, b) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_add");
    CHECK_CONTAINS(gr_graph_message(g), "(3)");
    CHECK_CONTAINS(gr_graph_message(g), "(4)");
    CHECK_CONTAINS(gr_graph_message(g), "'a3'");
    CHECK_CONTAINS(gr_graph_message(g), "'b'");
    gr_graph_clear_error(g);
    /* a shared variable knows its shape */
    w0 = gr_array_new(GR_F64, 2, s32 + 0);
    w = gr_shared(g, w0, "W");
    CHECK(gr_mul(w, m23) == NULL);                      /* (3,2) * (2,3) */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_mul");
    CHECK_CONTAINS(gr_graph_message(g), "'W'");
    CHECK_CONTAINS(gr_graph_message(g), "(3,2)");
    CHECK_CONTAINS(gr_graph_message(g), "(2,3)");
    gr_graph_clear_error(g);
    /* right-aligned broadcasting: (2,3) with (3) is fine, with (2) it is not */
    y = gr_sub(m23, a);
    CHECK(y != NULL);
    CHECK(gr_var_type(y, &t) && t.ndim == 2 && t.shape[0] == 2 && t.shape[1] == 3);
    CHECK(gr_sub(m23, e_const_vec(g, 2)) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_sub");
    gr_graph_clear_error(g);
    /* an unknown size combines with anything; a 1 broadcasts */
    {
        int64_t u1[2] = { -1, 1 };
        gr_var *u = gr_tensor(g, GR_F64, 2, u1, "u");
        y = gr_add(u, a);
        CHECK(y != NULL && gr_var_type(y, &t) && t.shape[0] == -1 && t.shape[1] == 3);
    }
    /* ternary ops check all three */
    CHECK(gr_where(gr_gt(a, a), a, b) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_where");
    gr_graph_clear_error(g);
    CHECK(gr_clip(a, e_const_vec(g, 1), b) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_clip");
    gr_graph_clear_error(g);
    /* dot: inner dimensions */
    CHECK(gr_dot(m23, e_const_vec(g, 2)) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_dot");
    CHECK_CONTAINS(gr_graph_message(g), "(2,3)");
    gr_graph_clear_error(g);
    CHECK(gr_dot(m23, w) != NULL);                      /* (2,3).(3,2) */
    CHECK(gr_dot(w, w) == NULL);                        /* (3,2).(3,2) */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    gr_graph_clear_error(g);
    /* broadcast_like / reduce_like / reshape_like check statically */
    CHECK(gr_broadcast_like(b, m23) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_broadcast_like");
    gr_graph_clear_error(g);
    CHECK(gr_reshape_like(m23, b) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    gr_graph_clear_error(g);
    CHECK(gr_reshape_like(m23, w) != NULL);
    CHECK_OK_GRAPH(g);
    gr_array_free(w0);
    gr_graph_free(g);
}

TEST(test_tensor_bad_args) {
    gr_graph *g = gr_graph_new();
    int64_t neg[2] = { -2, 3 }, ok8[8] = { 1, 2, 1, 2, 1, 2, 1, -1 }, nine[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
    gr_type t;
    gr_var *v;
    CHECK(gr_tensor(g, GR_F64, 2, neg, "t") == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_tensor");
    CHECK_CONTAINS(gr_graph_message(g), "'t'");
    gr_graph_clear_error(g);
    CHECK(gr_tensor(g, GR_F64, 9, nine, "t9") == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "'t9'");
    gr_graph_clear_error(g);
    CHECK(gr_tensor(g, GR_F64, -1, NULL, "tn") == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE); gr_graph_clear_error(g);
    CHECK(gr_tensor(g, (gr_dtype)7, 1, NULL, "bad") == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE); gr_graph_clear_error(g);
    v = gr_tensor(g, GR_I64, 8, ok8, "t8");
    CHECK(v != NULL && gr_var_type(v, &t) && t.ndim == 8 && t.shape[1] == 2 && t.shape[7] == -1 && t.dtype == GR_I64);
    v = gr_tensor(g, GR_F32, 3, NULL, NULL);              /* NULL shape: all unknown */
    CHECK(v != NULL && gr_var_type(v, &t) && t.shape[0] == -1 && t.shape[2] == -1 && gr_var_name(v) == NULL);
    CHECK_OK_GRAPH(g);
    /* malformed arrays given to leaves */
    {
        gr_array bad;
        memset(&bad, 0, sizeof bad);
        bad.dtype = GR_F64; bad.ndim = 1; bad.shape[0] = 3; bad.size = 2;   /* size is not the product */
        CHECK(gr_constant(g, &bad) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        gr_graph_clear_error(g);
        CHECK(gr_shared(g, &bad, "w") == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        gr_graph_clear_error(g);
        CHECK(gr_constant(g, NULL) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        gr_graph_clear_error(g);
    }
    gr_graph_free(g);
}

TEST(test_overflowing_shapes) {
    gr_graph *g = gr_graph_new();
    int64_t big[2] = { INT64_MAX, 2 }, big3[3] = { (int64_t)1 << 31, (int64_t)1 << 31, (int64_t)1 << 31 };
    int64_t neg[2] = { 2, -1 }, zero[2] = { 0, INT64_MAX }, s[2] = { 2, 3 };
    gr_array *a;
    gr_var *x, *u;
    CHECK(gr_array_new(GR_F64, 2, big) == NULL);
    CHECK(gr_array_new(GR_BOOL, 3, big3) == NULL);
    CHECK(gr_array_new(GR_F64, 2, neg) == NULL);
    CHECK(gr_array_new(GR_F64, 9, big3) == NULL);
    CHECK(gr_array_new(GR_F64, -1, NULL) == NULL);
    CHECK(gr_array_new(GR_F64, 2, NULL) == NULL);
    CHECK(gr_array_new((gr_dtype)9, 0, NULL) == NULL);
    CHECK(gr_array_from(GR_F64, 2, s, NULL) == NULL);       /* no data for 6 elements */
    a = gr_array_new(GR_F64, 2, zero);                       /* 0 x huge has no elements: fine */
    CHECK(a != NULL && a->size == 0);
    gr_array_free(a);
    /* a static shape whose element count overflows is refused */
    CHECK(gr_tensor(g, GR_F64, 2, big, "huge") == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "'huge'");
    gr_graph_clear_error(g);
    /* gr_reshape to an overflowing shape, with and without a -1, known or unknown input shape */
    x = e_const_mat(g, 2, 3);
    u = gr_matrix(g, GR_F64, "u");
    CHECK(gr_reshape(x, 2, big) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_reshape");
    gr_graph_clear_error(g);
    {
        int64_t m1big[3] = { -1, INT64_MAX, 4 }, big2[3] = { 3, INT64_MAX / 2, 3 };
        CHECK(gr_reshape(x, 3, m1big) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        gr_graph_clear_error(g);
        CHECK(gr_reshape(u, 3, m1big) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        gr_graph_clear_error(g);
        CHECK(gr_reshape(u, 3, big2) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        gr_graph_clear_error(g);
    }
    /* broadcasting two valid static shapes into one that overflows */
    {
        int64_t tall[2] = { (int64_t)1 << 62, 1 }, wide[2] = { 1, 8 };
        gr_var *p = gr_tensor(g, GR_F64, 2, tall, "tall"), *q = gr_tensor(g, GR_F64, 2, wide, "wide");
        CHECK(p != NULL && q != NULL);
        CHECK(gr_add(p, q) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
        CHECK_CONTAINS(gr_graph_message(g), "Add");
        gr_graph_clear_error(g);
    }
    gr_graph_free(g);
}

/* ---- shared variables ------------------------------------------------------------------------- */

TEST(test_shared_set_type) {
    gr_graph *g = gr_graph_new();
    double w0[3] = { 1, 2, 3 };
    float f3[3] = { 9, 9, 9 };
    int64_t n3 = 3, i3[3] = { 7, 7, 7 }, s13[2] = { 1, 3 };
    gr_array *a = e_vec(3, w0), *af = gr_array_from(GR_F32, 1, &n3, f3), *ai = gr_array_from(GR_I64, 1, &n3, i3);
    gr_array *am = gr_array_from(GR_F64, 2, s13, w0), *a0 = gr_array_scalar(GR_F64, 4.0);
    gr_var *w = gr_shared(g, a, "W"), *x = gr_vector(g, GR_F64, "x"), *k;
    const gr_array *cur;
    int i;
    CHECK(w != NULL);
    CHECK_STATUS(gr_shared_set(w, af), GR_ERR_TYPE);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_shared_set");
    CHECK_CONTAINS(gr_graph_message(g), "'W'");
    gr_graph_clear_error(g);
    CHECK_STATUS(gr_shared_set(w, ai), GR_ERR_TYPE); gr_graph_clear_error(g);
    CHECK_STATUS(gr_shared_set(w, am), GR_ERR_TYPE); gr_graph_clear_error(g);
    CHECK_STATUS(gr_shared_set(w, a0), GR_ERR_TYPE); gr_graph_clear_error(g);
    CHECK_STATUS(gr_shared_set(w, NULL), GR_ERR_VALUE); gr_graph_clear_error(g);
    CHECK_STATUS(gr_shared_set(x, a), GR_ERR_VALUE);     /* not a shared variable */
    CHECK_CONTAINS(gr_graph_message(g), "'x'");
    gr_graph_clear_error(g);
    CHECK_STATUS(gr_shared_set(NULL, a), GR_ERR_VALUE);
    CHECK_OK_GRAPH(g);
    cur = gr_shared_get(w);
    CHECK(cur != NULL && cur->dtype == GR_F64 && cur->ndim == 1 && cur->shape[0] == 3);
    for (i = 0; i < 3; i++) CHECK_NEAR(gr_array_get(cur, i), w0[i], 0);
    /* an integer shared variable refuses a float value */
    k = gr_shared(g, ai, "K");
    CHECK_STATUS(gr_shared_set(k, a), GR_ERR_TYPE);
    gr_graph_clear_error(g);
    CHECK_NEAR(gr_array_get(gr_shared_get(k), 2), 7, 0);
    /* the stored value is a copy: changing the caller's array changes nothing */
    gr_array_set(a, 0, -100);
    CHECK_NEAR(gr_array_get(gr_shared_get(w), 0), 1, 0);
    gr_array_free(a); gr_array_free(af); gr_array_free(ai); gr_array_free(am); gr_array_free(a0);
    gr_graph_free(g);
}

TEST(test_shared_shape_change) {
    gr_graph *g = gr_graph_new();
    gr_array *w3 = e_ramp(3), *w4 = e_ramp(4);
    gr_var *w = gr_shared(g, w3, "W");
    gr_var *y = gr_sum(gr_mul(w, gr_const(g, 2.0)));
    gr_fn *f3 = gr_function(0, NULL, 1, &y, NULL), *f4;
    const gr_array *out[1];
    gr_type t;
    CHECK(f3 != NULL);
    CHECK_STATUS(gr_call(f3, NULL, out), GR_OK);
    CHECK_NEAR(gr_array_get(out[0], 0), 2 * (0.5 + 1.5 + 2.5), 1e-15);
    CHECK_STATUS(gr_shared_set(w, w4), GR_OK);
    CHECK(gr_var_type(w, &t) && t.shape[0] == 4);        /* new ops see the new shape */
    CHECK_STATUS(gr_call(f3, NULL, out), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_fn_message(f3), "'W'");
    CHECK_CONTAINS(gr_fn_message(f3), "(4)");
    CHECK_CONTAINS(gr_fn_message(f3), "(3)");
    /* a function built after the change works; static checks use the new shape */
    y = gr_sum(gr_mul(w, gr_const(g, 2.0)));
    f4 = gr_function(0, NULL, 1, &y, NULL);
    CHECK(f4 != NULL);
    CHECK_STATUS(gr_call(f4, NULL, out), GR_OK);
    CHECK_NEAR(gr_array_get(out[0], 0), 2 * (0.5 + 1.5 + 2.5 + 3.5), 1e-15);
    CHECK(gr_add(w, e_const_vec(g, 3)) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    gr_graph_clear_error(g);
    /* back to the old shape: the old function works again and the new one fails */
    CHECK_STATUS(gr_shared_set(w, w3), GR_OK);
    CHECK_STATUS(gr_call(f3, NULL, out), GR_OK);
    CHECK_NEAR(gr_array_get(out[0], 0), 9.0, 1e-15);
    CHECK(strcmp(gr_fn_message(f3), "") == 0);
    CHECK_STATUS(gr_call(f4, NULL, out), GR_ERR_SHAPE);
    /* expressions built before a shape change compile against the new shape, updates included */
    {
        gr_var *twice = gr_mul(w, gr_const(g, 2.0)), *s = gr_sum(twice);   /* typed (3) */
        gr_update u;
        gr_fn_opts o;
        gr_fn *f5;
        memset(&o, 0, sizeof o);
        u.shared = w; u.value = twice;
        o.updates = &u; o.n_updates = 1;
        CHECK_STATUS(gr_shared_set(w, w4), GR_OK);
        f5 = gr_function(0, NULL, 1, &s, &o);
        CHECK(f5 != NULL);
        CHECK_STATUS(gr_call(f5, NULL, out), GR_OK);
        CHECK_NEAR(gr_array_get(out[0], 0), 16.0, 1e-15);
        CHECK(gr_shared_get(w)->shape[0] == 4);
        CHECK_NEAR(gr_array_get(gr_shared_get(w), 3), 7.0, 0);
        gr_fn_free(f5);
    }
    gr_array_free(w3); gr_array_free(w4);
    gr_fn_free(f3); gr_fn_free(f4);
    gr_graph_free(g);
}

/* ---- call-time errors --------------------------------------------------------------------------- */

TEST(test_call_errors) {
    gr_graph *g = gr_graph_new();
    int64_t s3[1] = { 3 };
    gr_var *x = gr_tensor(g, GR_F64, 1, s3, "x");
    gr_var *y = gr_mul(x, gr_const(g, 2.0));
    gr_fn *f = gr_function(1, &x, 1, &y, NULL);
    double v3[3] = { 1, 2, 3 }, v4[4] = { 1, 2, 3, 4 };
    float f3[3] = { 1, 2, 3 };
    int64_t n3 = 3;
    gr_array *a3 = e_vec(3, v3), *a4 = e_vec(4, v4), *af = gr_array_from(GR_F32, 1, &n3, f3), *am = e_mat(1, 3, v3);
    const gr_array *in[1], *out[1];
    int i;
    CHECK(f != NULL);
    in[0] = NULL;
    CHECK_STATUS(gr_call(f, in, out), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_fn_message(f), "'x'");
    CHECK(out[0] == NULL);                               /* a failed call gives no outputs */
    in[0] = af;
    CHECK_STATUS(gr_call(f, in, out), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_fn_message(f), "float32");
    CHECK_CONTAINS(gr_fn_message(f), "'x'");
    in[0] = am;
    CHECK_STATUS(gr_call(f, in, out), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_fn_message(f), "'x'");
    in[0] = a4;
    CHECK_STATUS(gr_call(f, in, out), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_fn_message(f), "'x'");
    CHECK_CONTAINS(gr_fn_message(f), "(4)");
    CHECK_STATUS(gr_call(f, NULL, out), GR_ERR_VALUE);
    in[0] = a3;
    CHECK_STATUS(gr_call(f, in, NULL), GR_ERR_VALUE);
    CHECK(strlen(gr_fn_message(f)) > 0);
    /* a malformed array */
    {
        gr_array bad = *a3;
        bad.size = 5;
        in[0] = &bad;
        CHECK_STATUS(gr_call(f, in, out), GR_ERR_VALUE);
    }
    /* and then a good call works, with an empty message */
    in[0] = a3;
    CHECK_STATUS(gr_call(f, in, out), GR_OK);
    CHECK(strcmp(gr_fn_message(f), "") == 0);
    for (i = 0; i < 3; i++) CHECK_NEAR(gr_array_get(out[0], i), 2 * v3[i], 0);
    CHECK_STATUS(gr_call(NULL, in, out), GR_ERR_VALUE);
    CHECK(gr_fn_message(NULL) != NULL && strcmp(gr_fn_message(NULL), "") == 0);
    CHECK_EQ_INT(gr_fn_node_count(NULL), 0);
    CHECK_OK_GRAPH(g);                                   /* call errors belong to the function */
    gr_array_free(a3); gr_array_free(a4); gr_array_free(af); gr_array_free(am);
    gr_fn_free(f);
    gr_graph_free(g);
}

/* two inputs of unknown shape that do not broadcast */
TEST(test_call_broadcast_error) {
    gr_graph *g = gr_graph_new();
    gr_var *a = gr_vector(g, GR_F64, "a"), *b = gr_vector(g, GR_F64, "b");
    gr_var *ins[2], *y;
    gr_fn *f;
    gr_array *a3 = e_ramp(3), *a4 = e_ramp(4), *a1 = e_ramp(1);
    const gr_array *in[2], *out[1];
    int i;
    ins[0] = a; ins[1] = b;
    y = gr_exp(gr_add(gr_sqr(a), b));
    f = gr_function(2, ins, 1, &y, NULL);
    CHECK(f != NULL);
    CHECK(strcmp(gr_fn_message(f), "") == 0);            /* never NULL, "" before any call */
    in[0] = a3; in[1] = a4;
    CHECK_STATUS(gr_call(f, in, out), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_fn_message(f), "gr_add");   /* the constructor, fused or not */
    CHECK_CONTAINS(gr_fn_message(f), "'b'");
    CHECK_CONTAINS(gr_fn_message(f), "(4)");
    in[0] = a3; in[1] = a1;                              /* a 1 broadcasts at call time */
    CHECK_STATUS(gr_call(f, in, out), GR_OK);
    CHECK(strcmp(gr_fn_message(f), "") == 0);
    CHECK(out[0]->ndim == 1 && out[0]->shape[0] == 3);
    for (i = 0; i < 3; i++) CHECK_NEAR(gr_array_get(out[0], i), exp((0.5 + i) * (0.5 + i) + 0.5), 1e-14);
    in[0] = a4; in[1] = a3;
    CHECK_STATUS(gr_call(f, in, out), GR_ERR_SHAPE);
    in[0] = a4; in[1] = a4;
    CHECK_STATUS(gr_call(f, in, out), GR_OK);
    for (i = 0; i < 4; i++) CHECK_NEAR(gr_array_get(out[0], i), exp((0.5 + i) * (0.5 + i) + 0.5 + i), 1e-14);
    gr_array_free(a3); gr_array_free(a4); gr_array_free(a1);
    gr_fn_free(f);
    gr_graph_free(g);
}

/* The memory plan is redone correctly when shapes change and after failures. */
static double e_want(const double *a, int64_t i, const double *b, int64_t j) {
    double t = a[i] * 1.5 + b[j];
    return exp(-t * t) * t + a[i];
}

TEST(test_plan_after_failures) {
    gr_graph *g = gr_graph_new();
    int64_t sa[2] = { -1, 1 }, sb[2] = { 1, -1 }, half[2] = { 2, -1 };
    gr_var *a = gr_tensor(g, GR_F64, 2, sa, "a"), *b = gr_tensor(g, GR_F64, 2, sb, "b");
    gr_var *ins[2], *outs[4], *t;
    gr_fn *f;
    /* (rows, cols) per call, bigger, smaller, back again; odd rows make the call fail at the last
       step (the reshape), after every other shape was worked out */
    static const int64_t plan[][2] = { { 4, 5 }, { 40, 70 }, { 2, 2 }, { 7, 9 }, { 40, 70 }, { 2, 1 }, { 3, 3 },
                                       { 4, 5 }, { 100, 3 }, { 4, 5 }, { 1, 1 }, { 5, 200 }, { 2, 200 }, { 4, 5 },
                                       { 41, 71 }, { 40, 70 } };
    int c;
    ins[0] = a; ins[1] = b;
    t = gr_add(gr_mul(a, gr_const(g, 1.5)), b);                     /* (r, c) */
    outs[0] = gr_add(gr_mul(gr_exp(gr_neg(gr_sqr(t))), t), a);     /* (r, c) */
    outs[1] = gr_sum_axis(outs[0], 1);                              /* (r) */
    outs[2] = gr_transpose(t);                                      /* (c, r) */
    outs[3] = gr_reshape(gr_exp(a), 2, half);                       /* (2, r/2) */
    f = gr_function(2, ins, 4, outs, NULL);
    CHECK(f != NULL);
    for (c = 0; c < (int)(sizeof plan / sizeof plan[0]); c++) {
        int64_t r = plan[c][0], k = plan[c][1], i, j, shape_a[2], shape_b[2];
        double *da, *db;
        gr_array *xa, *xb;
        const gr_array *in[2], *out[4];
        shape_a[0] = r; shape_a[1] = 1; shape_b[0] = 1; shape_b[1] = k;
        xa = gr_array_new(GR_F64, 2, shape_a);
        xb = gr_array_new(GR_F64, 2, shape_b);
        da = (double *)xa->data; db = (double *)xb->data;
        for (i = 0; i < r; i++) da[i] = 0.01 * (double)(i + c) - 0.3;
        for (j = 0; j < k; j++) db[j] = 0.02 * (double)(j - c) + 0.1;
        in[0] = xa; in[1] = xb;
        if (r % 2) {
            CHECK_STATUS(gr_call(f, in, out), GR_ERR_SHAPE);
            CHECK_CONTAINS(gr_fn_message(f), "Reshape");
            gr_array_free(xa); gr_array_free(xb);
            continue;
        }
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        CHECK(strcmp(gr_fn_message(f), "") == 0);
        CHECK(out[0]->ndim == 2 && out[0]->shape[0] == r && out[0]->shape[1] == k);
        CHECK(out[1]->ndim == 1 && out[1]->shape[0] == r);
        CHECK(out[2]->ndim == 2 && out[2]->shape[0] == k && out[2]->shape[1] == r);
        CHECK(out[3]->ndim == 2 && out[3]->shape[0] == 2 && out[3]->shape[1] == r / 2);
        for (i = 0; i < r; i++) {
            double s = 0;
            for (j = 0; j < k; j++) {
                double w = e_want(da, i, db, j);
                s += w;
                CHECK_NEAR(gr_array_get(out[0], i * k + j), w, 1e-14);
                CHECK_NEAR(gr_array_get(out[2], j * r + i), da[i] * 1.5 + db[j], 1e-15);
            }
            CHECK_NEAR(gr_array_get(out[1], i), s, 1e-12);
            CHECK_NEAR(gr_array_get(out[3], i), exp(da[i]), 1e-15);
        }
        gr_array_free(xa); gr_array_free(xb);
    }
    gr_fn_free(f);
    gr_graph_free(g);
}

/* an update whose value has no static shape may not change the shared variable's shape */
TEST(test_update_shape_checked_at_call) {
    gr_graph *g = gr_graph_new();
    gr_array *w3 = e_ramp(3), *x3 = e_ramp(3), *x5 = e_ramp(5);
    gr_var *w = gr_shared(g, w3, "W"), *x = gr_vector(g, GR_F64, "x");
    gr_var *y = gr_sum(x);
    gr_update u;
    gr_fn_opts o;
    gr_fn *f;
    const gr_array *in[1], *out[1];
    memset(&o, 0, sizeof o);
    u.shared = w; u.value = gr_mul(x, gr_const(g, 2.0));
    o.updates = &u; o.n_updates = 1;
    f = gr_function(1, &x, 1, &y, &o);
    CHECK(f != NULL);
    in[0] = x5;
    CHECK_STATUS(gr_call(f, in, out), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_fn_message(f), "'W'");
    CHECK(gr_shared_get(w)->shape[0] == 3);              /* nothing written */
    CHECK_NEAR(gr_array_get(gr_shared_get(w), 2), 2.5, 0);
    in[0] = x3;
    CHECK_STATUS(gr_call(f, in, out), GR_OK);
    CHECK_NEAR(gr_array_get(out[0], 0), 4.5, 1e-15);
    CHECK_NEAR(gr_array_get(gr_shared_get(w), 2), 5.0, 0);
    gr_array_free(w3); gr_array_free(x3); gr_array_free(x5);
    gr_fn_free(f);
    gr_graph_free(g);
}

/* a user's op whose shape rule asks for more bytes than memory can have: refused at call time,
   never a short buffer */
static gr_status e_huge_infer(const gr_node *node, gr_type *out) {
    (void)node;
    out->dtype = GR_F64;
    out->ndim = 1;
    out->shape[0] = -1;
    return GR_OK;
}
static gr_status e_huge_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    out[0]->shape[0] = (int64_t)gr_array_get(in[0], 0);
    return GR_OK;
}
static gr_status e_huge_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node; (void)in;
    if (out[0]->size > 0) ((double *)out[0]->data)[out[0]->size - 1] = 1;   /* touches its last element */
    return GR_OK;
}

TEST(test_call_time_huge_shapes) {
    gr_op_def huge;
    gr_graph *g = gr_graph_new();
    gr_var *n = gr_scalar(g, GR_I64, "n"), *y = NULL;
    gr_fn *f;
    const gr_array *in[1], *out[1];
    static const double sizes[] = { 3, 2305843009213693952.0 /* 2^61 doubles: 2^64 bytes */, 9.2e18 /* near 2^63 */, 5 };
    int i;
    memset(&huge, 0, sizeof huge);
    huge.name = "Huge"; huge.n_in = 1; huge.n_out = 1;
    huge.infer = e_huge_infer; huge.shape = e_huge_shape; huge.perform = e_huge_perform;
    CHECK_STATUS(gr_apply(&huge, NULL, 0, 1, &n, &y), GR_OK);
    f = gr_function(1, &n, 1, &y, NULL);
    CHECK(f != NULL);
    for (i = 0; f && i < 4; i++) {
        gr_array *na = gr_array_scalar(GR_I64, sizes[i]);
        gr_status st;
        in[0] = na;
        st = gr_call(f, in, out);
        if (sizes[i] < 100) {
            CHECK_STATUS(st, GR_OK);
            CHECK(out[0] != NULL && out[0]->size == (int64_t)sizes[i]);
            CHECK_NEAR(gr_array_get(out[0], out[0]->size - 1), 1, 0);
        } else {
            CHECK(st == GR_ERR_SHAPE || st == GR_ERR_NOMEM);
            CHECK(out[0] == NULL);
            CHECK(strlen(gr_fn_message(f)) > 0);
        }
        gr_array_free(na);
    }
    gr_fn_free(f);
    gr_graph_free(g);
}

/* ---- gr_apply: bad op definitions and type rules ---------------------------------------------- */

/* out[j] = in[0] converted to out[j]'s dtype (a perform for the ops below) */
static gr_status e_copy_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int j;
    int64_t i;
    for (j = 0; j < gr_node_n_outputs(node); j++)
        for (i = 0; i < out[j]->size && i < in[0]->size; i++) gr_array_set(out[j], i, gr_array_get(in[0], i));
    return GR_OK;
}
static gr_status e_bad_infer_fail(const gr_node *node, gr_type *out) { (void)node; (void)out; return GR_ERR_TYPE; }
static gr_status e_bad_infer_ndim(const gr_node *node, gr_type *out) { (void)node; out->ndim = 12; return GR_OK; }
static gr_status e_bad_infer_neg(const gr_node *node, gr_type *out) {
    (void)node;
    out->dtype = GR_F64; out->ndim = 1; out->shape[0] = -5;
    return GR_OK;
}
static gr_status e_two_infer(const gr_node *node, gr_type *out) {
    int j;
    for (j = 0; j < 6; j++) { gr_var_type(gr_node_input(node, 0), &out[j]); out[j].dtype = j % 2 ? GR_I64 : GR_F32; }
    return GR_OK;
}

TEST(test_apply_errors) {
    gr_op_def op;
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *ins[2], *outs[6];
    int j;
    ins[0] = x; ins[1] = x;
    memset(&op, 0, sizeof op);
    op.name = "Mine"; op.n_in = 1; op.n_out = 1; op.perform = e_copy_perform;
    CHECK_STATUS(gr_apply(NULL, NULL, 0, 1, ins, outs), GR_ERR_VALUE);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    CHECK_STATUS(gr_apply(&op, NULL, 0, 1, ins, NULL), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    outs[0] = x;
    CHECK_STATUS(gr_apply(&op, NULL, 0, 2, ins, outs), GR_ERR_VALUE);     /* takes 1 input */
    CHECK(outs[0] == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "Mine");
    gr_graph_clear_error(g);
    op.n_out = 0;
    CHECK_STATUS(gr_apply(&op, NULL, 0, 1, ins, outs), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    op.n_out = 1;
    op.infer = e_bad_infer_fail;                           /* fails without a message */
    CHECK_STATUS(gr_apply(&op, NULL, 0, 1, ins, outs), GR_ERR_TYPE);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_graph_message(g), "Mine");
    gr_graph_clear_error(g);
    op.infer = e_bad_infer_ndim;
    CHECK_STATUS(gr_apply(&op, NULL, 0, 1, ins, outs), GR_ERR_VALUE);
    CHECK(outs[0] == NULL);
    gr_graph_clear_error(g);
    op.infer = e_bad_infer_neg;
    CHECK_STATUS(gr_apply(&op, NULL, 0, 1, ins, outs), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    /* many outputs (more than fit the builder's stack), typed by the rule */
    op.infer = e_two_infer; op.n_out = 6;
    CHECK_STATUS(gr_apply(&op, NULL, 0, 1, ins, outs), GR_OK);
    for (j = 0; j < 6; j++) {
        CHECK(outs[j] != NULL && gr_var_ndim(outs[j]) == 1);
        CHECK_EQ_INT(gr_var_dtype(outs[j]), j % 2 ? GR_I64 : GR_F32);
        CHECK(gr_node_output(gr_var_owner(outs[0]), j) == outs[j]);
    }
    CHECK_EQ_INT(gr_node_n_outputs(gr_var_owner(outs[0])), 6);
    CHECK(gr_node_input(gr_var_owner(outs[0]), 0) == x);
    CHECK(gr_node_input(gr_var_owner(outs[0]), 1) == NULL);
    /* a marker or another graph's variable as an input */
    {
        gr_graph *g2 = gr_graph_new();
        gr_var *other = gr_vector(g2, GR_F64, "other");
        op.infer = NULL; op.n_out = 1;
        ins[0] = gr_disconnected_like(x);
        CHECK_STATUS(gr_apply(&op, NULL, 0, 1, ins, outs), GR_ERR_TYPE);
        gr_graph_clear_error(g);
        ins[0] = x; ins[1] = other;
        op.n_in = 2;
        CHECK_STATUS(gr_apply(&op, NULL, 0, 2, ins, outs), GR_ERR_VALUE);
        CHECK_STATUS(gr_graph_status(g2), GR_OK);
        CHECK_CONTAINS(gr_graph_message(g), "another graph");
        gr_graph_clear_error(g);
        gr_graph_free(g2);
    }
    gr_graph_free(g);
}

/* ---- gr_function errors ---------------------------------------------------------------------- */

TEST(test_function_errors) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *z = gr_vector(g, GR_F64, "zz"), *y = gr_add(x, z), *ins[2], *outs[2];
    gr_array *w0 = e_ramp(3), *wf0;
    gr_var *w = gr_shared(g, w0, "W"), *c = e_const_vec(g, 3);
    gr_update u[2];
    gr_fn_opts o;
    int64_t n3 = 3;
    wf0 = gr_array_new(GR_F32, 1, &n3);
    memset(&o, 0, sizeof o);
    /* an output needing an input that is not listed */
    CHECK(gr_function(1, &x, 1, &y, NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_function");
    CHECK_CONTAINS(gr_graph_message(g), "'zz'");
    gr_graph_clear_error(g);
    /* the same input twice */
    ins[0] = x; ins[1] = x;
    CHECK(gr_function(2, ins, 1, &y, NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "'x'");
    CHECK_CONTAINS(gr_graph_message(g), "(inputs 0 and 1)");
    gr_graph_clear_error(g);
    /* NULL outputs */
    ins[0] = x; ins[1] = z;
    outs[0] = y; outs[1] = NULL;
    CHECK(gr_function(2, ins, 2, outs, NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    CHECK(gr_function(2, ins, 1, NULL, NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    ins[1] = NULL;
    CHECK(gr_function(2, ins, 1, &y, NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    ins[1] = z;
    CHECK(gr_function(-1, ins, 1, &y, NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    CHECK(gr_function(0, NULL, 0, NULL, NULL) == NULL);  /* nothing at all: no graph to report to */
    /* a constant or a shared variable is not an input */
    ins[0] = c;
    CHECK(gr_function(1, ins, 1, &c, NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    /* updates: a target that is not shared, the wrong dtype, the wrong ndim, a wrong static shape,
       twice the same target, a NULL value */
    o.updates = u; o.n_updates = 1;
    u[0].shared = x; u[0].value = gr_mul(x, x);
    CHECK(gr_function(1, &x, 1, &u[0].value, &o) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "'x'");
    gr_graph_clear_error(g);
    u[0].shared = w; u[0].value = gr_cast(x, GR_F32);   /* F32 into F64 */
    CHECK(gr_function(1, &x, 1, &x, &o) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_graph_message(g), "'W'");
    gr_graph_clear_error(g);
    u[0].value = gr_sum(x);
    CHECK(gr_function(1, &x, 1, &x, &o) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    gr_graph_clear_error(g);
    {
        gr_var *wf = gr_shared(g, wf0, "WF");
        u[0].shared = wf; u[0].value = x;                /* F64 into F32 */
        CHECK(gr_function(1, &x, 1, &x, &o) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
        gr_graph_clear_error(g);
    }
    u[0].shared = w; u[0].value = e_const_vec(g, 4);
    CHECK(gr_function(1, &x, 1, &x, &o) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    gr_graph_clear_error(g);
    o.n_updates = 2;
    u[0].shared = w; u[0].value = gr_add(w, x);
    u[1].shared = w; u[1].value = w;
    CHECK(gr_function(1, &x, 1, &x, &o) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "'W' is updated twice (updates 0 and 1)");
    gr_graph_clear_error(g);
    u[1].value = NULL;
    CHECK(gr_function(1, &x, 1, &x, &o) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    o.updates = NULL;
    CHECK(gr_function(1, &x, 1, &x, &o) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    /* after all that, a good function */
    {
        gr_fn *f;
        gr_array *xa = e_ramp(3);
        const gr_array *in[1], *out[1];
        o.updates = u; o.n_updates = 1;
        u[0].shared = w; u[0].value = gr_add(w, x);
        f = gr_function(1, &x, 1, &x, &o);
        CHECK(f != NULL);
        CHECK_OK_GRAPH(g);
        in[0] = xa;
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        CHECK_NEAR(gr_array_get(gr_shared_get(w), 1), 3.0, 0);
        CHECK_NEAR(gr_array_get(out[0], 1), 1.5, 0);
        gr_array_free(xa);
        gr_fn_free(f);
    }
    gr_array_free(w0); gr_array_free(wf0);
    gr_graph_free(g);
}

TEST(test_function_without_inputs) {
    gr_graph *g = gr_graph_new();
    gr_var *c = e_const_vec(g, 4);
    gr_var *y = gr_sum(gr_mul(c, c));
    gr_fn *f = gr_function(0, NULL, 1, &y, NULL);
    const gr_array *out[1];
    const gr_array *none[1];
    CHECK(f != NULL);
    CHECK_STATUS(gr_call(f, NULL, out), GR_OK);
    CHECK_NEAR(gr_array_get(out[0], 0), 0.25 + 2.25 + 6.25 + 12.25, 1e-15);
    none[0] = NULL;
    CHECK_STATUS(gr_call(f, none, out), GR_OK);          /* the inputs array is not read */
    CHECK_NEAR(gr_array_get(out[0], 0), 21.0, 1e-15);
    gr_fn_free(f);
    gr_graph_free(g);
}

/* ---- users' ops: the rules gr_op_def requires, and the NULL rules it allows ------------------- */

static gr_status e_scale2_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    (void)node;
    ig[0] = og[0];                                      /* the copy's gradient: J = I */
    return ig[0] ? GR_OK : GR_ERR_VALUE;
}

/* perform is required (gr_call would jump to it); builtin belongs to the built-in ops; infer,
   shape, connection_pattern, grad and rop may be NULL, each meaning what API.md says */
TEST(test_user_op_rules) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *v = gr_vector(g, GR_F64, "v"), *y = NULL, *d = NULL, *outs[2];
    gr_op_def op;
    gr_grad_opts o;
    double xs[3] = { 1, 2, 3 }, vs[3] = { 0.5, -1, 4 };
    gr_array *xa = e_vec(3, xs), *va = e_vec(3, vs);
    gr_fn *f;
    memset(&op, 0, sizeof op);
    op.name = "Copy"; op.n_in = 1; op.n_out = 1;
    /* no perform */
    outs[0] = x;
    CHECK_STATUS(gr_apply(&op, NULL, 0, 1, &x, outs), GR_ERR_VALUE);
    CHECK(outs[0] == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "gr_apply: Copy has no perform rule");
    gr_graph_clear_error(g);
    /* a built-in op's own fields borrowed by a user's op; a built-in perform without them */
    op.perform = e_copy_perform;
    op.builtin = gr_node_op(gr_var_owner(gr_neg(x)))->builtin;
    CHECK(op.builtin != NULL);
    CHECK_STATUS(gr_apply(&op, NULL, 0, 1, &x, outs), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "Copy");
    CHECK_CONTAINS(gr_graph_message(g), "built-in");
    gr_graph_clear_error(g);
    op.builtin = NULL;
    {
        gr_op_def neg = *gr_node_op(gr_var_owner(gr_neg(x)));
        gr_var *z = x;
        neg.builtin = NULL;
        CHECK_STATUS(gr_apply(&neg, NULL, 0, 1, &x, &z), GR_ERR_VALUE);
        CHECK(z == NULL);
        CHECK_CONTAINS(gr_graph_message(g), "built-in op's perform rule without its built-in fields");
        gr_graph_clear_error(g);
    }
    /* a built-in op taken from a node is one of the table's: accepted */
    {
        gr_var *ins[2], *z = NULL;
        const gr_array *out[1];
        ins[0] = x; ins[1] = x;
        CHECK_STATUS(gr_apply(gr_node_op(gr_var_owner(gr_add(x, x))), NULL, 0, 2, ins, &z), GR_OK);
        f = gr_function(1, &x, 1, &z, NULL);
        CHECK(f != NULL);
        if (f) {
            const gr_array *in[1];
            in[0] = xa;
            CHECK_STATUS(gr_call(f, in, out), GR_OK);
            CHECK_NEAR(gr_array_get(out[0], 2), 6.0, 0);
        }
        gr_fn_free(f);
    }
    /* a structural one reads parameters only its builder makes (here Sum's axes; NULL params were
       read as a struct before): refused, whatever params are given */
    {
        gr_var *z = NULL;
        char junk[4] = { 0, 0, 0, 0 };
        const gr_op_def *sum_op = gr_node_op(gr_var_owner(gr_sum(x)));
        CHECK_STATUS(gr_apply(sum_op, NULL, 0, 1, &x, &z), GR_ERR_VALUE);
        CHECK(z == NULL);
        CHECK_CONTAINS(gr_graph_message(g), "built-in op with parameters");
        gr_graph_clear_error(g);
        CHECK_STATUS(gr_apply(sum_op, junk, sizeof junk, 1, &x, &z), GR_ERR_VALUE);
        CHECK(z == NULL);
        gr_graph_clear_error(g);
    }
    /* NULL infer and shape: typed and shaped like input 0; NULL grad: a null "not implemented"
       gradient; NULL rop and grad: gr_rop has nothing to build from */
    CHECK_STATUS(gr_apply(&op, NULL, 0, 1, &x, &y), GR_OK);
    CHECK(y != NULL && gr_var_ndim(y) == 1 && gr_var_dtype(y) == GR_F64);
    memset(&o, 0, sizeof o);
    CHECK_STATUS(gr_grad(gr_sum(y), 1, &x, &d, &o), GR_ERR_NULL_GRAD);
    CHECK_CONTAINS(gr_graph_message(g), "Copy");
    gr_graph_clear_error(g);
    o.null_gradients = GR_NULL_RETURN;
    CHECK_STATUS(gr_grad(gr_sum(y), 1, &x, &d, &o), GR_OK);
    CHECK(gr_is_null(d));
    outs[0] = y; outs[1] = d;
    CHECK(gr_function(1, &x, 2, outs, NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_GRAD_NOT_IMPLEMENTED);
    gr_graph_clear_error(g);
    CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, &d, NULL), GR_ERR_GRAD_NOT_IMPLEMENTED);
    CHECK(d == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "Copy has neither an R-op rule nor a grad rule");
    gr_graph_clear_error(g);
    f = gr_function(1, &x, 1, &y, NULL);
    CHECK(f != NULL);
    if (f) {
        const gr_array *in[1], *out[1];
        in[0] = xa;
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        CHECK(out[0]->ndim == 1 && out[0]->size == 3);
        CHECK_NEAR(gr_array_get(out[0], 1), 2.0, 0);
    }
    gr_fn_free(f);
    /* NULL rop with a grad rule: the double pullback gives J v = v */
    op.grad = e_scale2_grad;
    y = NULL;
    CHECK_STATUS(gr_apply(&op, NULL, 0, 1, &x, &y), GR_OK);
    CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, &d, NULL), GR_OK);
    outs[0] = d;
    {
        gr_var *ins[2];
        ins[0] = x; ins[1] = v;
        f = gr_function(2, ins, 1, outs, NULL);
    }
    CHECK(f != NULL);
    if (f) {
        const gr_array *in[2], *out[1];
        int i;
        in[0] = xa; in[1] = va;
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        for (i = 0; i < 3; i++) CHECK_NEAR(gr_array_get(out[0], i), vs[i], 0);
    }
    gr_fn_free(f);
    CHECK_OK_GRAPH(g);
    gr_array_free(xa); gr_array_free(va);
    gr_graph_free(g);
}

/* ---- drivers given NULL entries ---------------------------------------------------------------- */

/* the driver's status is GR_ERR_VALUE, recorded on the graph of its first non-NULL variable
   argument with a message naming the driver and the argument; its outputs are NULL. When the graph
   already holds an error (the NULL came from a failed builder), that error is returned, unchanged. */
#define E_DRIVER_NULL(call, text) do { \
        gr_graph_clear_error(g); \
        res[0] = res[1] = x; \
        CHECK_STATUS(call, GR_ERR_VALUE); \
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE); \
        CHECK_CONTAINS(gr_graph_message(g), text); \
        CHECK(res[0] == NULL); \
    } while (0)

TEST(test_driver_null_entries) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *c = gr_sum(gr_mul(x, y)), *h = gr_sin(x);
    gr_var *res[2], *two[2], *nul[2], *cst[1];
    gr_grad_opts o;
    two[0] = x; two[1] = y;
    nul[0] = x; nul[1] = NULL;
    memset(&o, 0, sizeof o);
    E_DRIVER_NULL(gr_grad(c, 2, nul, res, NULL), "gr_grad: wrt[1] is NULL");
    o.known_vars = nul + 1; o.known_grads = &x; o.n_known = 1;
    E_DRIVER_NULL(gr_grad(c, 1, &x, res, &o), "gr_grad: known_vars[0] is NULL");
    o.known_vars = &h; o.known_grads = nul + 1;
    E_DRIVER_NULL(gr_grad(NULL, 1, &x, res, &o), "gr_grad: known_grads[0] is NULL");
    memset(&o, 0, sizeof o);
    cst[0] = NULL;
    o.consider_constant = cst; o.n_consider_constant = 1;
    E_DRIVER_NULL(gr_grad(c, 1, &x, res, &o), "gr_grad: consider_constant[0] is NULL");
    E_DRIVER_NULL(gr_grad(NULL, 1, &x, res, NULL), "gr_grad: cost and known gradients can't both be NULL");
    E_DRIVER_NULL(gr_lop(1, nul + 1, 1, &x, &x, res, NULL), "gr_lop: f[0] is NULL");
    E_DRIVER_NULL(gr_lop(1, &h, 1, &x, nul + 1, res, NULL), "gr_lop: eval_points[0] is NULL");
    E_DRIVER_NULL(gr_lop(1, &h, 2, nul, two, res, NULL), "gr_lop: wrt[1] is NULL");
    E_DRIVER_NULL(gr_rop(2, nul, 1, &x, &y, res, NULL), "gr_rop: f[1] is NULL");
    E_DRIVER_NULL(gr_rop(1, &h, 2, nul, two, res, NULL), "gr_rop: wrt[1] is NULL");
    E_DRIVER_NULL(gr_rop(1, &h, 2, two, nul, res, NULL), "gr_rop: eval_points[1] is NULL");
    E_DRIVER_NULL(gr_rop(1, nul + 1, 1, nul + 1, &x, res, NULL), "gr_rop: f[0] is NULL");   /* only the eval point names the graph */
    E_DRIVER_NULL(gr_jacobian(h, 2, nul, res, NULL), "gr_jacobian: wrt[1] is NULL");
    E_DRIVER_NULL(gr_jacobian(NULL, 1, &x, res, NULL), "gr_jacobian: the expression is NULL");
    E_DRIVER_NULL(gr_hessian(c, 2, nul, res, NULL), "gr_hessian: wrt[1] is NULL");
    E_DRIVER_NULL(gr_hessian(NULL, 1, &x, res, NULL), "gr_hessian: cost is NULL");
    E_DRIVER_NULL(gr_subgraph_grad(2, nul, 1, &h, 0, NULL, NULL, c, res, res + 1), "gr_subgraph_grad: wrt[1] is NULL");
    E_DRIVER_NULL(gr_subgraph_grad(1, &x, 1, nul + 1, 0, NULL, NULL, c, res, res + 1), "gr_subgraph_grad: end[0] is NULL");
    E_DRIVER_NULL(gr_subgraph_grad(1, &x, 0, NULL, 1, nul + 1, &x, NULL, res, NULL), "gr_subgraph_grad: start[0] is NULL");
    E_DRIVER_NULL(gr_subgraph_grad(1, &x, 0, NULL, 1, &h, nul + 1, NULL, res, NULL), "gr_subgraph_grad: start_grads[0] is NULL");
    /* builders stay silent */
    gr_graph_clear_error(g);
    CHECK(gr_grad1(NULL, x) == NULL && gr_grad1(c, NULL) == NULL);
    CHECK_OK_GRAPH(g);
    /* a NULL from a failed builder: the driver returns that builder's error */
    {
        gr_var *bad = gr_dot(x, gr_matrix(g, GR_F64, "m3"));        /* fine so far */
        gr_var *fail = gr_reshape(x, 1, NULL);                        /* GR_ERR_VALUE: shape is NULL */
        char msg[256];
        (void)bad;
        CHECK(fail == NULL);
        snprintf(msg, sizeof msg, "%s", gr_graph_message(g));
        gr_graph_clear_error(g);
        fail = gr_sum(gr_dimshuffle(x, 2, NULL));                    /* GR_ERR_VALUE recorded by gr_dimshuffle */
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        snprintf(msg, sizeof msg, "%s", gr_graph_message(g));
        CHECK_STATUS(gr_grad(fail, 1, &x, res, NULL), GR_ERR_VALUE);
        CHECK_STATUS(gr_hessian(fail, 1, &x, res, NULL), GR_ERR_VALUE);
        CHECK(strcmp(gr_graph_message(g), msg) == 0);                /* nothing new recorded */
        gr_graph_clear_error(g);
        fail = gr_softmax(y, 3);                                      /* axis out of range */
        CHECK(fail == NULL);
        snprintf(msg, sizeof msg, "%s", gr_graph_message(g));
        two[1] = fail;
        CHECK_STATUS(gr_rop(1, &h, 2, two, two, res, NULL), GR_ERR_VALUE);
        CHECK(strcmp(gr_graph_message(g), msg) == 0);
        CHECK(res[0] == NULL);
    }
    /* nothing to record on: every variable NULL */
    gr_graph_clear_error(g);
    CHECK_STATUS(gr_grad(NULL, 1, nul + 1, res, NULL), GR_ERR_VALUE);
    CHECK_STATUS(gr_hessian(NULL, 0, NULL, NULL, NULL), GR_ERR_VALUE);
    CHECK_OK_GRAPH(g);
    gr_graph_free(g);
}

TEST(test_free_null) {
    gr_graph_free(NULL);
    gr_array_free(NULL);
    gr_fn_free(NULL);
    gr_var_set_name(NULL, "x");
    gr_print(NULL, NULL);
    gr_fn_print(NULL, NULL);
    CHECK_EQ_INT(gr_var_type(NULL, NULL), 0);
    CHECK(gr_node_input(NULL, 0) == NULL && gr_node_output(NULL, 0) == NULL && gr_node_params(NULL) == NULL);
    CHECK(isnan(gr_array_get(NULL, 0)));
    CHECK(strcmp(gr_status_string(GR_ERR_SHAPE), "shapes do not combine") == 0);
    CHECK(strcmp(gr_status_string((gr_status)99), "unknown status") == 0);
}

SUITE(suite_errors) = {
    CASE(test_null_operands_record_nothing),
    CASE(test_chain_checked_once),
    CASE(test_first_error_sticks),
    CASE(test_two_graphs),
    CASE(test_markers_as_operands),
    CASE(test_static_shape_conflicts),
    CASE(test_tensor_bad_args),
    CASE(test_overflowing_shapes),
    CASE(test_shared_set_type),
    CASE(test_shared_shape_change),
    CASE(test_call_errors),
    CASE(test_call_broadcast_error),
    CASE(test_plan_after_failures),
    CASE(test_update_shape_checked_at_call),
    CASE(test_call_time_huge_shapes),
    CASE(test_apply_errors),
    CASE(test_function_errors),
    CASE(test_function_without_inputs),
    CASE(test_user_op_rules),
    CASE(test_driver_null_entries),
    CASE(test_free_null),
    END_SUITE
};
