/* tests/t_runtime.c: compiled functions at run time: shared variables and updates, functions that
   outlive their graph, outputs that are inputs or constants, a million-node chain, printing. */
#include "harness.h"
#include <stdint.h>

static gr_array *r_vec(int64_t n, const double *xs) { return gr_array_from(GR_F64, 1, &n, xs); }

static void r_check_vec(const gr_array *a, int64_t n, const double *want, double tol) {
    int64_t i;
    CHECK(a != NULL);
    if (!a) return;
    CHECK(a->ndim == 1 && a->shape[0] == n && a->size == n);
    for (i = 0; i < n && i < a->size; i++) CHECK_NEAR(gr_array_get(a, i), want[i], tol);
}

/* what was printed to fp, as a string (truncated to size - 1) */
static size_t r_slurp(FILE *fp, char *buf, size_t size) {
    size_t n;
    rewind(fp);
    n = fread(buf, 1, size - 1, fp);
    buf[n] = 0;
    return n;
}

/* f printed into tmp (then closed; NULL: nothing to check) contains a, b and c */
static void r_check_fn_prints(const gr_fn *f, FILE *tmp, const char *a, const char *b, const char *c) {
    char buf[4096];
    if (!tmp) return;
    gr_fn_print(tmp, f);
    r_slurp(tmp, buf, sizeof buf);
    CHECK_CONTAINS(buf, a);
    CHECK_CONTAINS(buf, b);
    CHECK_CONTAINS(buf, c);
    fclose(tmp);
}

/* ---- shared variables and updates ------------------------------------------------------------- */

TEST(test_updates_applied_each_call) {
    gr_graph *g = gr_graph_new();
    double w0[3] = { 1, 2, 3 }, x0[3] = { 1, -1, 0.5 };
    gr_array *wa = r_vec(3, w0), *xa = r_vec(3, x0);
    gr_var *w = gr_shared(g, wa, "W"), *x = gr_vector(g, GR_F64, "x");
    gr_var *y = gr_sum(gr_mul(w, x));
    gr_update u;
    gr_fn_opts o;
    gr_fn *f;
    const gr_array *in[1], *out[1];
    double wv[3];
    int call, i;
    memset(&o, 0, sizeof o);
    u.shared = w; u.value = gr_add(w, x);               /* W := W + x after each call */
    o.updates = &u; o.n_updates = 1;
    f = gr_function(1, &x, 1, &y, &o);
    CHECK(f != NULL);
    in[0] = xa;
    memcpy(wv, w0, sizeof wv);
    for (call = 0; call < 5; call++) {
        double want = 0;
        for (i = 0; i < 3; i++) want += wv[i] * x0[i];  /* the output uses W before the update */
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        CHECK_NEAR(gr_array_get(out[0], 0), want, 1e-15);
        for (i = 0; i < 3; i++) wv[i] += x0[i];
        r_check_vec(gr_shared_get(w), 3, wv, 0);        /* gr_shared_get sees the update */
    }
    /* gr_shared_set is seen by the next call */
    CHECK_STATUS(gr_shared_set(w, wa), GR_OK);
    CHECK_STATUS(gr_call(f, in, out), GR_OK);
    CHECK_NEAR(gr_array_get(out[0], 0), 1 - 2 + 1.5, 1e-15);
    CHECK_NEAR(gr_array_get(gr_shared_get(w), 0), 2, 0);
    gr_array_free(wa); gr_array_free(xa);
    gr_fn_free(f);
    gr_graph_free(g);
}

/* one value read and written by two functions, and by the graph */
TEST(test_shared_between_functions) {
    gr_graph *g = gr_graph_new();
    gr_array *c0 = gr_array_scalar(GR_I64, 0), *c100 = gr_array_scalar(GR_I64, 100);
    gr_var *c = gr_shared(g, c0, "count");
    gr_var *tenfold = gr_mul(c, gr_const(g, 10));
    gr_update u;
    gr_fn_opts o;
    gr_fn *inc, *read;
    const gr_array *out[1];
    int i;
    memset(&o, 0, sizeof o);
    u.shared = c; u.value = gr_add(c, gr_const(g, 1));
    o.updates = &u; o.n_updates = 1;
    inc = gr_function(0, NULL, 0, NULL, &o);            /* updates only, no outputs */
    read = gr_function(0, NULL, 1, &tenfold, NULL);
    CHECK(inc != NULL && read != NULL);
    CHECK_EQ_INT(gr_var_dtype(tenfold), GR_I64);
    for (i = 0; i < 3; i++) CHECK_STATUS(gr_call(inc, NULL, NULL), GR_OK);
    CHECK_STATUS(gr_call(read, NULL, out), GR_OK);
    CHECK(out[0]->dtype == GR_I64);
    CHECK_EQ_INT(((const int64_t *)out[0]->data)[0], 30);
    CHECK_EQ_INT(((const int64_t *)gr_shared_get(c)->data)[0], 3);
    CHECK_STATUS(gr_shared_set(c, c100), GR_OK);
    /* the storage outlives the graph: both functions keep using it */
    gr_graph_free(g);
    CHECK_STATUS(gr_call(inc, NULL, NULL), GR_OK);
    CHECK_STATUS(gr_call(read, NULL, out), GR_OK);
    CHECK_EQ_INT(((const int64_t *)out[0]->data)[0], 1010);
    gr_fn_free(inc);
    CHECK_STATUS(gr_call(read, NULL, out), GR_OK);
    CHECK_EQ_INT(((const int64_t *)out[0]->data)[0], 1010);
    gr_fn_free(read);
    gr_array_free(c0); gr_array_free(c100);
}

/* an output that is a shared variable (or computed from it) shows its value before the updates */
TEST(test_shared_output_before_update) {
    gr_graph *g = gr_graph_new();
    double w0[4] = { 1, 2, 3, 4 }, w1[4], w2[4];
    int64_t s22[2] = { 2, 2 }, m1 = -1;
    gr_array *wa = gr_array_from(GR_F64, 2, s22, w0);
    gr_var *w = gr_shared(g, wa, "W");
    gr_var *outs[4];
    gr_update u;
    gr_fn_opts o;
    gr_fn *f;
    const gr_array *out[4];
    int i;
    memset(&o, 0, sizeof o);
    outs[0] = w;                                        /* the variable itself */
    outs[1] = gr_reshape(w, 1, &m1);                    /* a view of it */
    outs[2] = gr_mul(w, gr_const(g, 1.0));              /* computed from it */
    outs[3] = gr_transpose(w);
    u.shared = w; u.value = gr_mul(w, gr_const(g, 2.0));
    o.updates = &u; o.n_updates = 1;
    f = gr_function(0, NULL, 4, outs, &o);
    CHECK(f != NULL);
    CHECK_STATUS(gr_call(f, NULL, out), GR_OK);
    for (i = 0; i < 4; i++) {
        CHECK_NEAR(gr_array_get(out[0], i), w0[i], 0);
        CHECK_NEAR(gr_array_get(out[1], i), w0[i], 0);
        CHECK_NEAR(gr_array_get(out[2], i), w0[i], 0);
        w1[i] = 2 * w0[i];
        w2[i] = 4 * w0[i];
    }
    CHECK(out[0] != gr_shared_get(w));                  /* a copy owned by the function */
    CHECK(out[0]->ndim == 2 && out[1]->ndim == 1 && out[1]->shape[0] == 4);
    CHECK_NEAR(gr_array_get(out[3], 1), w0[2], 0);
    CHECK_NEAR(gr_array_get(gr_shared_get(w), 3), w1[3], 0);
    CHECK_STATUS(gr_call(f, NULL, out), GR_OK);
    for (i = 0; i < 4; i++) {
        CHECK_NEAR(gr_array_get(out[0], i), w1[i], 0);
        CHECK_NEAR(gr_array_get(out[1], i), w1[i], 0);
        CHECK_NEAR(gr_array_get(gr_shared_get(w), i), w2[i], 0);
    }
    gr_array_free(wa);
    gr_fn_free(f);
    gr_graph_free(g);
}

/* a := b, b := a swaps (every update reads the values from before the call) */
TEST(test_swap_updates) {
    gr_graph *g = gr_graph_new();
    double a0[2] = { 1, 2 }, b0[2] = { 3, 4 }, c0[2] = { 5, 6 };
    gr_array *aa = r_vec(2, a0), *ba = r_vec(2, b0), *ca = r_vec(2, c0);
    gr_var *a = gr_shared(g, aa, "a"), *b = gr_shared(g, ba, "b"), *c = gr_shared(g, ca, "c");
    gr_var *s;
    gr_update u[3];
    gr_fn_opts o;
    gr_fn *swap, *rot, *mixed;
    const gr_array *out[1];
    memset(&o, 0, sizeof o);
    u[0].shared = a; u[0].value = b;
    u[1].shared = b; u[1].value = a;
    o.updates = u; o.n_updates = 2;
    swap = gr_function(0, NULL, 0, NULL, &o);
    CHECK(swap != NULL);
    CHECK_STATUS(gr_call(swap, NULL, NULL), GR_OK);
    r_check_vec(gr_shared_get(a), 2, b0, 0);
    r_check_vec(gr_shared_get(b), 2, a0, 0);
    CHECK_STATUS(gr_call(swap, NULL, NULL), GR_OK);
    r_check_vec(gr_shared_get(a), 2, a0, 0);
    r_check_vec(gr_shared_get(b), 2, b0, 0);
    /* a rotation of three, one value computed: a := b, b := c * 1, c := a */
    u[0].shared = a; u[0].value = b;
    u[1].shared = b; u[1].value = gr_mul(c, gr_const(g, 1.0));
    u[2].shared = c; u[2].value = a;
    o.n_updates = 3;
    rot = gr_function(0, NULL, 0, NULL, &o);
    CHECK(rot != NULL);
    CHECK_STATUS(gr_call(rot, NULL, NULL), GR_OK);
    r_check_vec(gr_shared_get(a), 2, b0, 0);
    r_check_vec(gr_shared_get(b), 2, c0, 0);
    r_check_vec(gr_shared_get(c), 2, a0, 0);
    CHECK_STATUS(gr_call(rot, NULL, NULL), GR_OK);
    CHECK_STATUS(gr_call(rot, NULL, NULL), GR_OK);
    r_check_vec(gr_shared_get(a), 2, a0, 0);
    r_check_vec(gr_shared_get(b), 2, b0, 0);
    r_check_vec(gr_shared_get(c), 2, c0, 0);
    /* an output and updates together: s = sum(a) before, a := a + b, b := a */
    s = gr_sum(a);
    u[0].shared = a; u[0].value = gr_add(a, b);
    u[1].shared = b; u[1].value = a;
    o.n_updates = 2;
    mixed = gr_function(0, NULL, 1, &s, &o);
    CHECK(mixed != NULL);
    CHECK_STATUS(gr_call(mixed, NULL, out), GR_OK);          /* a = 4,6  b = 1,2 */
    CHECK_NEAR(gr_array_get(out[0], 0), 3, 0);
    CHECK_STATUS(gr_call(mixed, NULL, out), GR_OK);          /* a = 5,8  b = 4,6 */
    CHECK_NEAR(gr_array_get(out[0], 0), 10, 0);
    {
        double wa_[2] = { 5, 8 }, wb_[2] = { 4, 6 };
        r_check_vec(gr_shared_get(a), 2, wa_, 0);
        r_check_vec(gr_shared_get(b), 2, wb_, 0);
    }
    gr_array_free(aa); gr_array_free(ba); gr_array_free(ca);
    gr_fn_free(swap); gr_fn_free(rot); gr_fn_free(mixed);
    gr_graph_free(g);
}

/* ---- functions and their graph ----------------------------------------------------------------- */

TEST(test_function_outlives_graph) {
    gr_graph *g = gr_graph_new();
    double w0[3] = { 0.5, -1, 2 }, x0[3] = { 1, 2, 3 };
    gr_array *wa = r_vec(3, w0), *xa = r_vec(3, x0);
    gr_var *w = gr_shared(g, wa, "weights"), *x = gr_vector(g, GR_F64, "x");
    gr_var *y = gr_tanh(gr_add(gr_mul(w, x), gr_const(g, 0.25)));
    gr_fn *f;
    const gr_array *in[1], *out[1];
    FILE *tmp = tmpfile();
    int i, call;
    gr_var_set_name(y, "act");
    f = gr_function(1, &x, 1, &y, NULL);
    CHECK(f != NULL);
    gr_graph_free(g);                                   /* the function keeps what it needs */
    gr_array_free(wa);
    in[0] = xa;
    for (call = 0; call < 2; call++) {
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        for (i = 0; i < 3; i++) CHECK_NEAR(gr_array_get(out[0], i), tanh(w0[i] * x0[i] + 0.25), 1e-15);
    }
    /* errors still name the variables */
    in[0] = NULL;
    CHECK_STATUS(gr_call(f, in, out), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_fn_message(f), "'x'");
    r_check_fn_prints(f, tmp, "weights", "act", "Tanh");
    gr_array_free(xa);
    gr_fn_free(f);
}

/* outputs that are inputs, constants, the same variable twice; unused inputs */
TEST(test_identity_constant_outputs) {
    gr_graph *g = gr_graph_new();
    double x0[3] = { 1, 2, 3 }, k0[2] = { 7, 8 }, x2[3];
    gr_array *xa = r_vec(3, x0), *ka = r_vec(2, k0), *unused = gr_array_scalar(GR_I64, 5);
    gr_var *x = gr_vector(g, GR_F64, "x"), *z = gr_scalar(g, GR_I64, "unused"), *k = gr_constant(g, ka);
    gr_var *y = gr_mul(x, gr_const(g, 2.0));
    gr_var *ins[2], *outs[7];
    gr_fn *f;
    const gr_array *in[2], *out[7];
    int i;
    ins[0] = x; ins[1] = z;
    outs[0] = x; outs[1] = k; outs[2] = y; outs[3] = y; outs[4] = x; outs[5] = gr_const(g, 2.5);
    outs[6] = gr_sum(k);
    f = gr_function(2, ins, 7, outs, NULL);
    CHECK(f != NULL);
    in[0] = xa; in[1] = unused;
    CHECK_STATUS(gr_call(f, in, out), GR_OK);
    for (i = 0; i < 3; i++) x2[i] = 2 * x0[i];
    r_check_vec(out[0], 3, x0, 0);
    r_check_vec(out[1], 2, k0, 0);
    r_check_vec(out[2], 3, x2, 0);
    r_check_vec(out[3], 3, x2, 0);
    r_check_vec(out[4], 3, x0, 0);
    CHECK(out[5]->ndim == 0 && out[5]->dtype == GR_F64);
    CHECK_NEAR(gr_array_get(out[5], 0), 2.5, 0);
    CHECK_NEAR(gr_array_get(out[6], 0), 15, 0);
    CHECK(out[0] != xa);                                /* owned by the function */
    /* the identity output is a copy: it survives changes to the caller's array */
    gr_array_set(xa, 0, -50);
    CHECK_NEAR(gr_array_get(out[0], 0), 1, 0);
    /* the unused input is still checked for dtype, and may change freely otherwise */
    {
        gr_array *bad = gr_array_scalar(GR_F64, 5);
        in[1] = bad;
        CHECK_STATUS(gr_call(f, in, out), GR_ERR_TYPE);
        CHECK_CONTAINS(gr_fn_message(f), "'unused'");
        gr_array_free(bad);
    }
    in[1] = unused;
    CHECK_STATUS(gr_call(f, in, out), GR_OK);
    CHECK_NEAR(gr_array_get(out[0], 0), -50, 0);
    CHECK_NEAR(gr_array_get(out[2], 0), -100, 0);
    CHECK_NEAR(gr_array_get(out[4], 0), -50, 0);
    gr_array_free(xa); gr_array_free(ka); gr_array_free(unused);
    gr_fn_free(f);
    gr_graph_free(g);
}

/* a function of an input that is only passed through, and one given a computed variable as input */
TEST(test_computed_variable_as_input) {
    gr_graph *g = gr_graph_new();
    double x0[2] = { 0.5, 1.5 }, h0[2] = { 10, 20 };
    gr_array *xa = r_vec(2, x0), *ha = r_vec(2, h0);
    gr_var *x = gr_vector(g, GR_F64, "x");
    gr_var *h = gr_exp(x);                              /* given directly: exp is not computed */
    gr_var *y = gr_add(h, gr_const(g, 1.0));
    gr_fn *f = gr_function(1, &h, 1, &y, NULL);
    const gr_array *in[1], *out[1];
    CHECK(f != NULL);
    in[0] = ha;
    CHECK_STATUS(gr_call(f, in, out), GR_OK);
    CHECK_NEAR(gr_array_get(out[0], 0), 11, 0);
    CHECK_NEAR(gr_array_get(out[0], 1), 21, 0);
    gr_fn_free(f);
    gr_array_free(xa); gr_array_free(ha);
    gr_graph_free(g);
}

/* ---- a chain of a million elementwise nodes ----------------------------------------------------- */

TEST(test_million_node_chain) {
    enum { LINKS = 500000 };                            /* two nodes a link: 1,000,000 nodes */
    gr_graph *g = gr_graph_new();
    double x0[3] = { 0.25, -3.0, 1e3 }, want[3];
    gr_array *xa = r_vec(3, x0), *ca = gr_array_scalar(GR_F64, 0.999999), *da = gr_array_scalar(GR_F64, 1e-6);
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = x;
    gr_var *c = gr_constant(g, ca), *d = gr_constant(g, da);
    gr_fn *f, *f0;
    gr_fn_opts o;
    const gr_array *in[1], *out[1];
    long k;
    int i;
    for (k = 0; k < LINKS && y; k++) y = gr_add(gr_mul(y, c), d);
    CHECK(y != NULL);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    for (i = 0; i < 3; i++) {                           /* the same arithmetic in a plain loop */
        double v = x0[i];
        for (k = 0; k < LINKS; k++) v = v * 0.999999 + 1e-6;
        want[i] = v;
    }
    CHECK_NEAR(want[0], 1 + (0.25 - 1) * pow(0.999999, LINKS), 1e-9);   /* the loop itself is right */
    in[0] = xa;
    /* one function at a time, to keep the peak memory down */
    f = gr_function(1, &x, 1, &y, NULL);
    CHECK(f != NULL);
    CHECK(gr_fn_node_count(f) >= 1 && gr_fn_node_count(f) <= 2u * LINKS);
    CHECK_STATUS(gr_call(f, in, out), GR_OK);
    r_check_vec(out[0], 3, want, 1e-12);
    gr_fn_free(f);
    memset(&o, 0, sizeof o);
    o.optimize = GR_OPT_NONE;
    f0 = gr_function(1, &x, 1, &y, &o);
    CHECK(f0 != NULL);
    CHECK_EQ_INT(gr_fn_node_count(f0), 2 * LINKS);
    gr_graph_free(g);                                   /* freeing a million nodes: no recursion either */
    CHECK_STATUS(gr_call(f0, in, out), GR_OK);
    r_check_vec(out[0], 3, want, 1e-12);
    CHECK_STATUS(gr_call(f0, in, out), GR_OK);
    r_check_vec(out[0], 3, want, 1e-12);
    gr_array_free(xa); gr_array_free(ca); gr_array_free(da);
    gr_fn_free(f0);
}

/* ---- many inputs: gr_function finds a repeated input or update target in one pass ---------------- */

/* 200,000 scalar inputs, summed by a chain of adds: compiles and computes the sum (checking every
   input against every earlier one took 6 s here); a repeated input far down the list, and a
   repeated update target among many updates, are still reported with both positions */
TEST(test_function_many_inputs) {
    enum { N = 200000, NU = 1000 };
    gr_graph *g = gr_graph_new();
    gr_var **ins = (gr_var **)malloc(sizeof(gr_var *) * N), *s = NULL, *keep;
    gr_array **vals = (gr_array **)malloc(sizeof(gr_array *) * N);
    const gr_array **in = (const gr_array **)malloc(sizeof(gr_array *) * N), *out[1];
    gr_update *u = (gr_update *)malloc(sizeof(gr_update) * NU);
    gr_array *w0 = gr_array_scalar(GR_F64, 1.0);
    gr_fn_opts o;
    gr_fn *f;
    double want = 0;
    long i;
    CHECK(ins && vals && in && u);
    if (!ins || !vals || !in || !u) { free(ins); free(vals); free(in); free(u); gr_array_free(w0); gr_graph_free(g); return; }
    for (i = 0; i < N; i++) {
        ins[i] = gr_scalar(g, GR_F64, NULL);
        s = i ? gr_add(s, ins[i]) : ins[0];
        vals[i] = gr_array_scalar(GR_F64, (double)(i % 97) - 48.0);
        in[i] = vals[i];
        want += (double)(i % 97) - 48.0;
    }
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    f = gr_function(N, ins, 1, &s, NULL);
    CHECK(f != NULL);
    if (f) {
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        CHECK_NEAR(gr_array_get(out[0], 0), want, 0);   /* integers: exact in any order */
    }
    gr_fn_free(f);
    /* input 150000 is input 7 again */
    keep = ins[150000];
    ins[150000] = ins[7];
    CHECK(gr_function(N, ins, 1, &s, NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "is given twice (inputs 7 and 150000)");
    gr_graph_clear_error(g);
    ins[150000] = keep;
    /* NU shared variables, each updated once, then update 900 targets the variable of update 123 */
    for (i = 0; i < NU; i++) {
        u[i].shared = gr_shared(g, w0, NULL);
        u[i].value = gr_add(u[i].shared, ins[i]);
    }
    memset(&o, 0, sizeof o);
    o.updates = u;
    o.n_updates = NU;
    f = gr_function(NU, ins, 0, NULL, &o);
    CHECK(f != NULL);
    gr_fn_free(f);
    u[900].shared = u[123].shared;
    CHECK(gr_function(NU, ins, 0, NULL, &o) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "is updated twice (updates 123 and 900)");
    gr_graph_clear_error(g);
    for (i = 0; i < N; i++) gr_array_free(vals[i]);
    free(ins); free(vals); free(in); free(u);
    gr_array_free(w0);
    gr_graph_free(g);
}

/* ---- many fused groups: elementwise runs cut by non-elementwise ops -------------------------------- */

/* y <- cumsum(tanh(y) * 0.5 + y * 0.25) repeated: every run of elementwise ops between two cumsums is a
   group of its own, each reading the previous group's Fused output through a cumsum. The values and
   the gradient of sum(y) match a plain-C forward and backward pass. */
TEST(test_fusion_many_groups) {
    enum { STEPS = 3000, N = 4 };
    gr_graph *g = gr_graph_new();
    double x0[N] = { 0.3, -0.2, 0.1, 0.05 }, ys[STEPS + 1][N], y[N], gy[N], want_g[N];
    gr_array *xa = r_vec(N, x0);
    gr_var *x = gr_vector(g, GR_F64, "x"), *v = x, *outs[2];
    gr_fn *f;
    const gr_array *in[1], *out[2];
    int k, i, j;
    for (k = 0; k < STEPS && v; k++) v = gr_cumsum(gr_add(gr_mul(gr_tanh(v), gr_const(g, 0.5)), gr_mul(v, gr_const(g, 0.25))), 0);
    outs[0] = v;
    outs[1] = gr_grad1(gr_sum(v), x);
    CHECK(outs[0] != NULL && outs[1] != NULL);
    f = gr_function(1, &x, 2, outs, NULL);
    CHECK(f != NULL);
    /* the groups stay apart, and every reader of a group reads its Fused node (not a re-run of the
       members): forward a cumsum and a Fused node a step, backward as many */
    CHECK(gr_fn_node_count(f) >= 2u * STEPS && gr_fn_node_count(f) <= 4u * STEPS);
    /* the same computation in plain C; tanh' = 1 - tanh^2; cumsum's pullback is a reversed cumsum */
    memcpy(ys[0], x0, sizeof x0);
    for (k = 0; k < STEPS; k++) {
        double acc = 0;
        for (i = 0; i < N; i++) { acc += tanh(ys[k][i]) * 0.5 + ys[k][i] * 0.25; ys[k + 1][i] = acc; }
    }
    memcpy(y, ys[STEPS], sizeof y);
    for (i = 0; i < N; i++) gy[i] = 1;
    for (k = STEPS - 1; k >= 0; k--) {
        double acc = 0, gz[N];
        for (i = N - 1; i >= 0; i--) { acc += gy[i]; gz[i] = acc; }
        for (i = 0; i < N; i++) { double t = tanh(ys[k][i]); gy[i] = gz[i] * ((1 - t * t) * 0.5 + 0.25); }
    }
    memcpy(want_g, gy, sizeof gy);
    in[0] = xa;
    for (j = 0; f && j < 2; j++) {                   /* twice: the second call runs on the plan of the first */
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        r_check_vec(out[0], N, y, 1e-9 * (fabs(y[N - 1]) + 1));
        r_check_vec(out[1], N, want_g, 1e-9 * (fabs(want_g[0]) + 1));
    }
    gr_fn_free(f);
    gr_graph_free(g);
    gr_array_free(xa);
}

/* ---- wide nodes: many inputs, some read more than once by one step --------------------------------- */

/* gr_stack of 20,000 computed scalars (each a distinct product) with some of them repeated: every
   value read, the repeated ones released once; the sum of squares and its gradient vs plain C */
TEST(test_plan_wide_nodes) {
    enum { PARTS = 20000, N = 7 };
    gr_graph *g = gr_graph_new();
    double x0[N] = { 0.5, -1.0, 0.25, 2.0, -0.75, 1.5, 0.125 }, want = 0, want_g[N];
    gr_array *xa = r_vec(N, x0);
    gr_var *x = gr_vector(g, GR_F64, "x"), **parts = (gr_var **)malloc(sizeof(gr_var *) * (PARTS + 2)), *outs[2], *h;
    gr_fn *f;
    const gr_array *in[1], *out[2];
    int k, i;
    CHECK(parts != NULL);
    if (!parts) return;
    h = gr_exp(gr_sum(x));                               /* a computed value, read three times by the stack */
    for (k = 0; k < PARTS; k++) parts[k] = gr_mul(gr_index(x, 0, k % N), gr_const(g, 1.0 + k % 13));
    parts[PARTS] = h;
    parts[PARTS + 1] = h;
    parts[5] = h;
    outs[0] = gr_sum(gr_sqr(gr_stack(PARTS + 2, parts, 0)));
    outs[1] = gr_grad1(outs[0], x);
    f = gr_function(1, &x, 2, outs, NULL);
    CHECK(f != NULL);
    {   /* plain C: cost = sum_k p_k^2 with p_k = x[k % N] (1 + k % 13), three of them e = exp(sum x) */
        double e = 0;
        for (i = 0; i < N; i++) { e += x0[i]; want_g[i] = 0; }
        e = exp(e);
        for (k = 0; k < PARTS + 2; k++) {
            if (k == 5 || k >= PARTS) { want += e * e; for (i = 0; i < N; i++) want_g[i] += 2 * e * e; continue; }
            want += (x0[k % N] * (1.0 + k % 13)) * (x0[k % N] * (1.0 + k % 13));
            want_g[k % N] += 2 * x0[k % N] * (1.0 + k % 13) * (1.0 + k % 13);
        }
    }
    in[0] = xa;
    for (k = 0; f && k < 2; k++) {
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        CHECK_NEAR(gr_array_get(out[0], 0), want, 1e-10 * want);
        r_check_vec(out[1], N, want_g, 1e-10 * want);
    }
    gr_fn_free(f);
    gr_graph_free(g);
    gr_array_free(xa);
    free(parts);
}

/* ---- the memory plan: views, in-place reuse and shapes that switch between them ----------------- */

/* transposing an (n,1) or (1,n) matrix is a view, an (n,m) one a copy: the choice follows the
   shapes of each call, and a buffer that a view shares must not be overwritten while the view is
   still to be read */
TEST(test_plan_views_and_in_place) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_matrix(g, GR_F64, "x");
    gr_var *t = gr_exp(x);                               /* a buffer */
    gr_var *v = gr_transpose(t);                         /* a view of it, or a copy */
    gr_var *w = gr_add(gr_mul(v, gr_const(g, 2.0)), gr_const(g, 1.0));
    gr_var *u = gr_mul(t, t);
    gr_var *outs[5];
    int64_t m1 = -1;
    gr_fn *f;
    static const int64_t shapes[][2] = { { 3, 1 }, { 3, 4 }, { 1, 4 }, { 1, 1 }, { 5, 7 }, { 3, 1 }, { 5, 7 }, { 0, 3 }, { 2, 2 } };
    int c;
    outs[0] = gr_transpose(x);                           /* a view of the input, or a copy */
    outs[1] = w;
    outs[2] = u;
    outs[3] = gr_add(gr_sum(u), gr_sum(w));
    outs[4] = gr_reshape(t, 1, &m1);                     /* a flat view of t */
    f = gr_function(1, &x, 5, outs, NULL);
    CHECK(f != NULL);
    for (c = 0; f && c < (int)(sizeof shapes / sizeof shapes[0]); c++) {
        int64_t n = shapes[c][0], m = shapes[c][1], i, j;
        gr_array *xa = gr_array_new(GR_F64, 2, shapes[c]);
        const gr_array *in[1], *out[5];
        double s = 0;
        for (i = 0; i < n * m; i++) gr_array_set(xa, i, 0.1 * (double)(i % 7) - 0.2 + 0.01 * c);
        in[0] = xa;
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        CHECK(out[0]->shape[0] == m && out[0]->shape[1] == n && out[1]->shape[0] == m && out[1]->shape[1] == n);
        CHECK(out[4]->ndim == 1 && out[4]->size == n * m);
        for (i = 0; i < n; i++)
            for (j = 0; j < m; j++) {
                double xv = gr_array_get(xa, i * m + j), tv = exp(xv);
                CHECK_NEAR(gr_array_get(out[0], j * n + i), xv, 0);
                CHECK_NEAR(gr_array_get(out[1], j * n + i), 2 * tv + 1, 1e-15);
                CHECK_NEAR(gr_array_get(out[2], i * m + j), tv * tv, 1e-15);
                CHECK_NEAR(gr_array_get(out[4], i * m + j), tv, 1e-15);
                s += tv * tv + 2 * tv + 1;
            }
        CHECK_NEAR(gr_array_get(out[3], 0), s, 1e-13);
        gr_array_free(xa);
    }
    gr_fn_free(f);
    gr_graph_free(g);
}

/* a buffer read through a view after its last direct read must not be reused in place */
TEST(test_plan_no_in_place_under_a_view) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    int64_t s2[2] = { 2, -1 };
    gr_var *a = gr_sin(x);
    gr_var *b = gr_reshape(a, 2, s2);                    /* a view of a's buffer */
    gr_var *c = gr_cos(a);                               /* a's last direct read */
    gr_var *d = gr_mul(b, gr_const(g, 2.0));             /* reads the view afterwards */
    gr_var *e = gr_add(gr_sqr(c), gr_sqr(c));            /* c read twice by one node */
    gr_var *outs[3];
    gr_fn *f;
    double xs[6] = { 0.1, 0.2, 0.3, -0.4, 1.5, 2.5 };
    gr_array *xa = r_vec(6, xs);
    const gr_array *in[1], *out[3];
    int i;
    outs[0] = c; outs[1] = d; outs[2] = e;
    f = gr_function(1, &x, 3, outs, NULL);
    CHECK(f != NULL);
    in[0] = xa;
    CHECK_STATUS(gr_call(f, in, out), GR_OK);
    CHECK(out[1]->ndim == 2 && out[1]->shape[0] == 2 && out[1]->shape[1] == 3);
    for (i = 0; i < 6; i++) {
        CHECK_NEAR(gr_array_get(out[0], i), cos(sin(xs[i])), 1e-15);
        CHECK_NEAR(gr_array_get(out[1], i), 2 * sin(xs[i]), 1e-15);
        CHECK_NEAR(gr_array_get(out[2], i), 2 * cos(sin(xs[i])) * cos(sin(xs[i])), 1e-15);
    }
    gr_array_free(xa);
    gr_fn_free(f);
    gr_graph_free(g);
}

/* a user's op: errors from its perform reach gr_call's status and message, and the next call works */
typedef struct r_limit { double max; } r_limit;
static gr_status r_limited_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const r_limit *p = (const r_limit *)gr_node_params(node);
    int64_t i;
    for (i = 0; i < in[0]->size; i++) {
        double v = gr_array_get(in[0], i);
        if (v > p->max) return gr_node_error(node, GR_ERR_RUNTIME, "element %lld is %g, above %g", (long long)i, v, p->max);
        gr_array_set(out[0], i, 3 * v);
    }
    return GR_OK;
}
static gr_status r_silent_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node; (void)out;
    return in[0]->size > 2 ? GR_ERR_RUNTIME : GR_OK;     /* fails without a message */
}

TEST(test_user_op_errors) {
    gr_op_def limited, silent;
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = NULL, *z = NULL, *outs[2];
    r_limit lim;
    gr_fn *f;
    double ok[2] = { 1, 2 }, bad[3] = { 1, 5, 2 };
    gr_array *oka = r_vec(2, ok), *bada = r_vec(3, bad);
    const gr_array *in[1], *out[2];
    memset(&limited, 0, sizeof limited);
    limited.name = "Limited"; limited.n_in = 1; limited.n_out = 1; limited.perform = r_limited_perform;
    silent = limited;
    silent.name = "Silent"; silent.perform = r_silent_perform;
    lim.max = 4;
    CHECK_STATUS(gr_apply(&limited, &lim, sizeof lim, 1, &x, &y), GR_OK);
    lim.max = -100;                                      /* params were copied */
    CHECK_STATUS(gr_apply(&silent, NULL, 0, 1, &x, &z), GR_OK);
    CHECK_STATUS(gr_apply(&limited, NULL, sizeof lim, 1, &x, &z), GR_ERR_VALUE);   /* params NULL */
    CHECK(z == NULL);
    gr_graph_clear_error(g);
    CHECK_STATUS(gr_apply(&silent, NULL, 0, 1, &x, &z), GR_OK);
    outs[0] = y; outs[1] = z;
    f = gr_function(1, &x, 2, outs, NULL);
    CHECK(f != NULL);
    in[0] = bada;
    CHECK_STATUS(gr_call(f, in, out), GR_ERR_RUNTIME);
    CHECK(strlen(gr_fn_message(f)) > 0);
    CHECK(strstr(gr_fn_message(f), "Limited") != NULL || strstr(gr_fn_message(f), "Silent") != NULL);
    in[0] = oka;
    CHECK_STATUS(gr_call(f, in, out), GR_OK);
    CHECK(strcmp(gr_fn_message(f), "") == 0);
    CHECK_NEAR(gr_array_get(out[0], 1), 6, 0);
    /* the error of Limited names the op and the element; then Silent's status gets a message too */
    {
        gr_fn *f1 = gr_function(1, &x, 1, &y, NULL), *f2 = gr_function(1, &x, 1, &z, NULL);
        CHECK(f1 != NULL && f2 != NULL);
        in[0] = bada;
        CHECK_STATUS(gr_call(f1, in, out), GR_ERR_RUNTIME);
        CHECK_CONTAINS(gr_fn_message(f1), "Limited");
        CHECK_CONTAINS(gr_fn_message(f1), "element 1 is 5");
        CHECK_STATUS(gr_call(f2, in, out), GR_ERR_RUNTIME);
        CHECK_CONTAINS(gr_fn_message(f2), "Silent");
        in[0] = oka;
        CHECK_STATUS(gr_call(f1, in, out), GR_OK);
        CHECK_NEAR(gr_array_get(out[0], 0), 3, 0);
        CHECK_STATUS(gr_call(f2, in, out), GR_OK);
        gr_fn_free(f1);
        gr_fn_free(f2);
    }
    gr_array_free(oka); gr_array_free(bada);
    gr_fn_free(f);
    gr_graph_free(g);
}

/* ---- printing ------------------------------------------------------------------------------------ */

TEST(test_print) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *m = gr_matrix(g, GR_F32, "m");
    gr_var *y = gr_sum(gr_mul(gr_exp(x), gr_const(g, 3.0)));
    gr_var *z = gr_dot(m, gr_cast(x, GR_F32)), *ins[2], *outs[2];
    gr_fn *f;
    FILE *fp = tmpfile();
    char buf[8192];
    size_t n;
    CHECK(fp != NULL);
    if (!fp) { gr_graph_free(g); return; }
    gr_var_set_name(y, "total");
    gr_print(fp, y);
    n = r_slurp(fp, buf, sizeof buf);
    CHECK(n > 0);
    CHECK_CONTAINS(buf, "Exp");
    CHECK_CONTAINS(buf, "Mul");
    CHECK_CONTAINS(buf, "Sum");
    CHECK_CONTAINS(buf, "total");
    CHECK_CONTAINS(buf, "x");
    fclose(fp);
    fp = tmpfile();
    if (!fp) { gr_graph_free(g); return; }
    gr_print(fp, x);                                    /* a leaf */
    n = r_slurp(fp, buf, sizeof buf);
    CHECK_CONTAINS(buf, "x");
    fclose(fp);
    ins[0] = x; ins[1] = m;
    outs[0] = y; outs[1] = z;
    {                                                   /* rewritten: fewer nodes or as many */
        gr_fn *full = gr_function(2, ins, 2, outs, NULL);
        CHECK(full != NULL);
        CHECK(gr_fn_node_count(full) >= 2 && gr_fn_node_count(full) <= 5);
        gr_fn_free(full);
    }
    {
        gr_fn_opts o;
        memset(&o, 0, sizeof o);
        o.optimize = GR_OPT_NONE;
        f = gr_function(2, ins, 2, outs, &o);
    }
    CHECK(f != NULL);
    CHECK_EQ_INT(gr_fn_node_count(f), 5);               /* exp, mul, Sum, Cast, Dot */
    fp = tmpfile();
    if (!fp) { gr_fn_free(f); gr_graph_free(g); return; }
    gr_fn_print(fp, f);
    n = r_slurp(fp, buf, sizeof buf);
    CHECK(n > 0);
    CHECK_CONTAINS(buf, "Dot");
    CHECK_CONTAINS(buf, "Cast");
    CHECK_CONTAINS(buf, "Exp");
    CHECK_CONTAINS(buf, "Sum");
    CHECK_CONTAINS(buf, "total");
    CHECK_CONTAINS(buf, "m");
    {                                                   /* one node a line */
        size_t lines = 0, i;
        for (i = 0; i < n; i++) lines += buf[i] == '\n';
        CHECK(lines >= gr_fn_node_count(f));
    }
    fclose(fp);
    gr_fn_free(f);
    gr_graph_free(g);
}

/* The memory plan's free buffers come in many capacities: 60 partial sums over slices of 60
   lengths free 60 buffers of distinct sizes, then 60 full-length products each take the smallest
   free one that fits (or grow one). Values against plain C, across shape changes (replanning). */
TEST(test_plan_many_sizes) {
    enum { K = 60 };
    static const int64_t lens[3] = { 50, 80, 50 };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *s[K], *out = NULL;
    gr_fn *f;
    int k, t;
    for (k = 0; k < K; k++) {
        int64_t m = 1 + (k * 37) % 70;
        s[k] = gr_sum(gr_mul(gr_exp(gr_slice(x, 0, GR_OPEN, m, 1)), gr_const(g, 1.0 + k)));
    }
    for (k = 0; k < K; k++) {
        gr_var *v = gr_mul(gr_sin(x), s[k]);
        out = out ? gr_add(out, v) : v;
    }
    f = gr_function(1, &x, 1, &out, NULL);
    CHECK(f != NULL);
    for (t = 0; f && t < 3; t++) {
        int64_t n = lens[t], i;
        double *x0 = (double *)malloc(sizeof(double) * (size_t)n), *want = (double *)malloc(sizeof(double) * (size_t)n), tot = 0;
        gr_array *xa;
        const gr_array *in[1], *res[1];
        for (i = 0; i < n; i++) x0[i] = 0.01 * (double)((i * 13) % 17) - 0.08;
        for (k = 0; k < K; k++) {
            int64_t m = 1 + (k * 37) % 70, j;
            double sk = 0;
            for (j = 0; j < m && j < n; j++) sk += exp(x0[j]) * (1.0 + k);
            tot += sk;
        }
        for (i = 0; i < n; i++) want[i] = sin(x0[i]) * tot;
        xa = r_vec(n, x0);
        in[0] = xa;
        CHECK_STATUS(gr_call(f, in, res), GR_OK);
        if (res[0]) r_check_vec(res[0], n, want, 1e-10 * fabs(tot));
        gr_array_free(xa);
        free(x0); free(want);
    }
    gr_fn_free(f);
    gr_graph_free(g);
}

/* A function whose chain fuses away most of its private copy keeps only what it runs (a fresh
   graph); what it keeps must still work: an input passed through, a constant and a shared variable
   as outputs, an update of a shared variable it does not read, names in messages and in print
   (test_function_outlives_graph frees the graph first). */
TEST(test_compacted_function_keeps_leaves) {
    gr_graph *g = gr_graph_new();
    double x0[3] = { 0.25, -0.5, 1.0 }, w0[3] = { 2, 3, 4 }, zero = 0;
    gr_array *xa = r_vec(3, x0), *wa = r_vec(3, w0), *ta = gr_array_from(GR_F64, 0, NULL, &zero);
    gr_var *x = gr_vector(g, GR_F64, "x"), *w = gr_shared(g, wa, "w"), *t = gr_shared(g, ta, "total");
    gr_var *y = x, *outs[4];
    gr_update up;
    gr_fn_opts opts;
    gr_fn *f;
    const gr_array *in[1], *out[4];
    FILE *tmp = tmpfile();
    int k, i, call;
    for (k = 0; k < 12; k++) y = gr_add(gr_mul(gr_sin(y), gr_const(g, 0.5)), w);
    gr_var_set_name(y, "result");
    outs[0] = y; outs[1] = x; outs[2] = gr_const(g, 3.5); outs[3] = w;
    up.shared = t; up.value = gr_sum(y);
    memset(&opts, 0, sizeof opts);
    opts.updates = &up; opts.n_updates = 1;
    f = gr_function(1, &x, 4, outs, &opts);
    CHECK(f != NULL);
    if (!f) { gr_graph_free(g); gr_array_free(xa); gr_array_free(wa); gr_array_free(ta); if (tmp) fclose(tmp); return; }
    CHECK(gr_fn_node_count(f) <= 3);
    in[0] = xa;
    for (call = 1; call <= 2; call++) {
        double want[3], s = 0;
        for (i = 0; i < 3; i++) {
            want[i] = x0[i];
            for (k = 0; k < 12; k++) want[i] = sin(want[i]) * 0.5 + w0[i];
            s += want[i];
        }
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        r_check_vec(out[0], 3, want, 1e-15);
        r_check_vec(out[1], 3, x0, 0);
        CHECK_NEAR(gr_array_get(out[2], 0), 3.5, 0);
        r_check_vec(out[3], 3, w0, 0);
        CHECK_NEAR(gr_array_get(gr_shared_get(t), 0), s, 1e-14);   /* the same every call: t is not read */
    }
    in[0] = NULL;
    CHECK_STATUS(gr_call(f, in, out), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_fn_message(f), "'x'");
    r_check_fn_prints(f, tmp, "result", "Fused", "");
    gr_fn_free(f);
    gr_graph_free(g);                                   /* (kept until now for gr_shared_get(t)) */
    gr_array_free(xa); gr_array_free(wa); gr_array_free(ta);
}

/* gr_function reads its graph and never writes it: at GR_OPT_FULL its copy stands on the source
   nodes the rewrites leave as they are until it compacts, and the source graph must come out as it
   went in (printed before and after: the same text), still working for more gradients and functions */
static void r_print_to(char *buf, size_t size, gr_var *a, gr_var *b) {
    FILE *t = tmpfile();
    buf[0] = 0;
    if (!t) return;
    gr_print(t, a);
    gr_print(t, b);
    r_slurp(t, buf, size);
    fclose(t);
}

TEST(test_function_leaves_graph_unchanged) {
    static char before[16384], after[16384];
    gr_graph *g = gr_graph_new();
    double x0[3] = { 0.3, -0.7, 1.1 }, w0[3] = { 0.5, 2.0, -1.5 };
    gr_array *xa = r_vec(3, x0), *wa = r_vec(3, w0);
    gr_var *x = gr_vector(g, GR_F64, "x"), *w = gr_shared(g, wa, "w");
    gr_var *t = gr_tanh(gr_mul(x, w)), *y, *outs[3];
    gr_fn *f;
    const gr_array *in[1], *out[3];
    int round, i;
    gr_var_set_name(t, "t");
    y = gr_add(gr_mul(t, gr_const(g, 1.0)), gr_neg(gr_neg(x)));   /* rewritten: t + x */
    outs[0] = y;
    outs[1] = gr_grad1(gr_sum(y), x);
    outs[2] = gr_mul(t, gr_sum(t));                     /* a second fused group, reading the first's t */
    r_print_to(before, sizeof before, outs[1], outs[2]);
    CHECK(strlen(before) > 100);
    for (round = 0; round < 2; round++) {               /* a second function from the same graph */
        double st = 0;
        f = gr_function(1, &x, 3, outs, NULL);
        CHECK(f != NULL);
        if (!f) break;
        r_print_to(after, sizeof after, outs[1], outs[2]);
        CHECK(strcmp(before, after) == 0);
        CHECK_STATUS(gr_graph_status(g), GR_OK);
        in[0] = xa;
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        for (i = 0; i < 3; i++) st += tanh(x0[i] * w0[i]);
        for (i = 0; i < 3; i++) {
            double th = tanh(x0[i] * w0[i]);
            CHECK_NEAR(gr_array_get(out[0], i), th + x0[i], 1e-15);
            CHECK_NEAR(gr_array_get(out[1], i), (1 - th * th) * w0[i] + 1, 1e-15);
            CHECK_NEAR(gr_array_get(out[2], i), th * st, 1e-15);
        }
        CHECK(gr_fn_node_count(f) >= 3);                /* two groups and the sum between them */
        gr_fn_free(f);
    }
    /* the graph still differentiates: d/dw sum(y) = (1 - t^2) x */
    {
        gr_var *dw = gr_grad1(gr_sum(y), w);
        CHECK(dw != NULL);
        f = dw ? gr_function(1, &x, 1, &dw, NULL) : NULL;
        CHECK(f != NULL);
        if (f) {
            CHECK_STATUS(gr_call(f, in, out), GR_OK);
            for (i = 0; i < 3; i++) {
                double th = tanh(x0[i] * w0[i]);
                CHECK_NEAR(gr_array_get(out[0], i), (1 - th * th) * x0[i], 1e-15);
            }
            gr_fn_free(f);
        }
    }
    gr_graph_free(g);
    gr_array_free(xa); gr_array_free(wa);
}

/* gr_call reads the user's memory where it is: a gr_array filled by hand over the user's data (no
   gr_array_from, no copy) is an input; changing the data between calls changes the result; the
   data is never written; an output that is the input itself, or a view of it, is the function's
   copy (its data is not the user's pointer) */
TEST(test_call_reads_user_memory) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *outs[3];
    double data[4] = { 1, 2, 3, 4 };
    gr_array view;
    gr_fn *f;
    outs[0] = gr_sum(gr_mul(x, x));
    outs[1] = x;
    outs[2] = gr_slice(x, 0, 1, 3, 1);
    f = gr_function(1, &x, 3, outs, NULL);
    memset(&view, 0, sizeof view);
    view.dtype = GR_F64; view.ndim = 1; view.shape[0] = 4; view.size = 4; view.data = data;
    CHECK(f != NULL);
    if (f) {
        const gr_array *in[1], *out[3];
        int round;
        in[0] = &view;
        for (round = 0; round < 2; round++) {
            double want = 0;
            int i;
            for (i = 0; i < 4; i++) want += data[i] * data[i];
            CHECK_STATUS(gr_call(f, in, out), GR_OK);
            CHECK_NEAR(gr_array_get(out[0], 0), want, 1e-15);
            CHECK(out[1]->data != (void *)data && out[2]->data != (void *)(data + 1));
            for (i = 0; i < 4; i++) CHECK(gr_array_get(out[1], i) == data[i]);
            CHECK(gr_array_get(out[2], 0) == data[1] && gr_array_get(out[2], 1) == data[2]);
            data[0] = 10; data[3] = -5;                /* the next call reads the new values */
        }
        CHECK(data[0] == 10 && data[1] == 2 && data[2] == 3 && data[3] == -5);
        gr_fn_free(f);
    }
    gr_graph_free(g);
}

/* a call with the leaf shapes of the one before skips the shape rules (src/call.c,
   gr__call_same_shapes): a shared variable's new value of the same shape is read, a change of an
   input's shape (and back) replans, a shared value of another shape fails as without the shortcut */
TEST(test_call_same_shapes_shortcut) {
    static const double s3[] = { 1, 2, 3 }, s1[] = { 1, 1, 1 }, s2[] = { 4, 5 };
    static const double x2[] = { 1, 2 }, x3[] = { 1, 2, 3 }, x1[] = { 5 };
    int64_t n3 = 3, n2 = 2, n1 = 1;
    gr_array *a_s3 = gr_array_from(GR_F64, 1, &n3, s3), *a_s1 = gr_array_from(GR_F64, 1, &n3, s1), *a_s2 = gr_array_from(GR_F64, 1, &n2, s2);
    gr_array *a_x2 = gr_array_from(GR_F64, 1, &n2, x2), *a_x3 = gr_array_from(GR_F64, 1, &n3, x3), *a_x1 = gr_array_from(GR_F64, 1, &n1, x1);
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *s = gr_shared(g, a_s3, "s");
    gr_var *y = gr_mul(x, gr_sum(s));
    gr_fn *f = gr_function(1, &x, 1, &y, NULL);
    const gr_array *in[1], *out[1];
    CHECK(f != NULL);
    if (f) {
        in[0] = a_x2;
        CHECK_STATUS(gr_call(f, in, out), GR_OK);              /* 6 x */
        CHECK(out[0] && out[0]->size == 2 && gr_array_get(out[0], 0) == 6 && gr_array_get(out[0], 1) == 12);
        CHECK_STATUS(gr_call(f, in, out), GR_OK);              /* the same shapes: the same values */
        CHECK(out[0] && out[0]->size == 2 && gr_array_get(out[0], 1) == 12);
        CHECK_STATUS(gr_shared_set(s, a_s1), GR_OK);           /* new data, same shape: read */
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        CHECK(out[0] && out[0]->size == 2 && gr_array_get(out[0], 0) == 3 && gr_array_get(out[0], 1) == 6);
        in[0] = a_x3;                                          /* another shape, then back */
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        CHECK(out[0] && out[0]->size == 3 && gr_array_get(out[0], 2) == 9);
        in[0] = a_x1;
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        CHECK(out[0] && out[0]->size == 1 && gr_array_get(out[0], 0) == 15);
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        CHECK(out[0] && out[0]->size == 1 && gr_array_get(out[0], 0) == 15);
        CHECK_STATUS(gr_shared_set(s, a_s2), GR_OK);           /* a value of another shape: the function's is (3) */
        CHECK_STATUS(gr_call(f, in, out), GR_ERR_SHAPE);
        CHECK(out[0] == NULL && strstr(gr_fn_message(f), "shared variable") && strstr(gr_fn_message(f), "'s'"));
        CHECK_STATUS(gr_shared_set(s, a_s3), GR_OK);
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        CHECK(out[0] && out[0]->size == 1 && gr_array_get(out[0], 0) == 30);
    }
    gr_fn_free(f);
    gr_graph_free(g);
    gr_array_free(a_s3); gr_array_free(a_s1); gr_array_free(a_s2); gr_array_free(a_x2); gr_array_free(a_x3); gr_array_free(a_x1);
}

/* a fused group of one element runs as a straight-line program (src/fuse.c gr__Fused_scalar): its
   values are those of the same expressions in plain C, bit for bit, and those of the whole-array
   loops on vectors (element by element) */
static double rt_scalar_ref(double x, double y) {
    double t = x * y, u = t - x, v = u + y * y, w = -x, q = v * w, r = fabs(t);
    return q + r * y;
}
TEST(test_fused_scalar_program) {
    static const double xs[5] = { 0.7, -1.25, 3.0, 1e-3, -40.5 }, ys[5] = { -1.3, 0.5, 2.0, 7.0, 0.125 };
    int64_t n5 = 5;
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *y = gr_scalar(g, GR_F64, "y"), *xv = gr_vector(g, GR_F64, "xv"), *yv = gr_vector(g, GR_F64, "yv");
    gr_var *ins[2], *e, *ev;
    gr_fn *f, *fv;
    gr_array *av = gr_array_from(GR_F64, 1, &n5, xs), *bv = gr_array_from(GR_F64, 1, &n5, ys);
    const gr_array *in[2], *out[1];
    int k;
#define RT_EXPR(X, Y) gr_add(gr_mul(gr_add(gr_sub(gr_mul(X, Y), X), gr_sqr(Y)), gr_neg(X)), gr_mul(gr_abs(gr_mul(X, Y)), Y))
    e = RT_EXPR(x, y);
    ev = RT_EXPR(xv, yv);
#undef RT_EXPR
    ins[0] = x; ins[1] = y;
    f = gr_function(2, ins, 1, &e, NULL);
    ins[0] = xv; ins[1] = yv;
    fv = gr_function(2, ins, 1, &ev, NULL);
    CHECK(f != NULL && fv != NULL && gr_fn_node_count(f) == 1);
    in[0] = av; in[1] = bv;
    CHECK_STATUS(gr_call(fv, in, out), GR_OK);
    for (k = 0; f && fv && out[0] && k < 5; k++) {
        gr_array *a = gr_array_scalar(GR_F64, xs[k]), *b = gr_array_scalar(GR_F64, ys[k]);
        const gr_array *sin_[2], *sout[1];
        double want = rt_scalar_ref(xs[k], ys[k]);
        sin_[0] = a; sin_[1] = b;
        CHECK_STATUS(gr_call(f, sin_, sout), GR_OK);
        CHECK_MSG(sout[0] && gr_array_get(sout[0], 0) == want, "x %g y %g: %.17g, plain C %.17g", xs[k], ys[k],
                  sout[0] ? gr_array_get(sout[0], 0) : 0.0, want);
        CHECK_MSG(gr_array_get(out[0], k) == want, "element %d: %.17g, plain C %.17g", k, gr_array_get(out[0], k), want);
        gr_array_free(a); gr_array_free(b);
    }
    gr_fn_free(f); gr_fn_free(fv);
    gr_graph_free(g);
    gr_array_free(av); gr_array_free(bv);
}

/* A function that is one fused node of float64 scalars runs its program alone at a call of
   one-element float64 inputs (src/call.c, gr__call_scalar): the values of plain C (libm's sin and cos,
   within 2 ulp), new values in the user's arrays read at every call, other shapes after it (a
   replan, and back), wrong inputs still refused with the input named, then right again; and the
   same with inputs used in another order than given, an unused input, a constant of shape (1) and
   an output that is an input */
static void rt_tiny_ref(double x, double y, double *r) {
    double c = cos(x * y);
    r[0] = sin(x * y) + x * x;
    r[1] = c * y + 2 * x;
    r[2] = c * x;
}
static void rt_tiny_check(const gr_array *const *out, int64_t n, const double *xs, const double *ys) {
    int64_t k;
    int i;
    for (k = 0; k < n; k++) {
        double want[3];
        rt_tiny_ref(xs[k], ys[k], want);
        for (i = 0; i < 3; i++)
            CHECK_MSG(out[i] && out[i]->size == n && fabs(gr_array_get(out[i], k) - want[i]) <= 4.5e-16 * (fabs(want[i]) + 1),
                      "output %d element %d at x %g y %g: %.17g, plain C %.17g", i, (int)k, xs[k], ys[k],
                      out[i] ? gr_array_get(out[i], k) : 0.0, want[i]);
    }
}
TEST(test_call_scalar_shortcut) {
    static const double xs[3] = { 0.7, -2.0, 0.25 }, ys[3] = { 0.5, 0.5, 0.5 };
    int64_t n1 = 1, i;
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_scalar(g, GR_F64, "y"), *ins[2], *outs[3];
    gr_var *xy = gr_mul(x, y);
    gr_array *ax = gr_array_new(GR_F64, 1, &n1), *ay = gr_array_scalar(GR_F64, 0), *ax3 = r_vec(3, xs), *af = gr_array_new(GR_F32, 1, &n1);
    const gr_array *in[2], *out[3];
    gr_fn *f;
    ins[0] = x; ins[1] = y;
    outs[0] = gr_add(gr_sin(xy), gr_mul(x, x));
    outs[1] = gr_add(gr_mul(gr_cos(xy), y), gr_mul(gr_const(g, 2), x));
    outs[2] = gr_mul(gr_cos(xy), x);
    f = gr_function(2, ins, 3, outs, NULL);
    CHECK(f != NULL && gr_fn_node_count(f) == 1);
    if (f && ax && ay && ax3 && af) {
        in[0] = ax; in[1] = ay;
        for (i = 0; i < 4; i++) {                              /* the first call plans; then the shortcut */
            double *xd = (double *)ax->data, *yd = (double *)ay->data;
            xd[0] = i == 3 ? 1.9 : 0.7 + 0.1 * (double)i;      /* (x y from -0.91 to -2.47: past 3 pi/4) */
            yd[0] = -1.3;
            CHECK_STATUS(gr_call(f, in, out), GR_OK);
            rt_tiny_check(out, 1, xd, yd);
        }
        in[0] = ax3;                                           /* another shape, then back */
        ((double *)ay->data)[0] = ys[0];
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        rt_tiny_check(out, 3, xs, ys);
        in[0] = ax;
        ((double *)ax->data)[0] = xs[1];
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        rt_tiny_check(out, 1, xs + 1, ys + 1);
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        rt_tiny_check(out, 1, xs + 1, ys + 1);
        in[0] = af;                                            /* wrong inputs after the shortcut: named */
        CHECK_STATUS(gr_call(f, in, out), GR_ERR_TYPE);
        CHECK(out[0] == NULL && out[2] == NULL && strstr(gr_fn_message(f), "input 0") && strstr(gr_fn_message(f), "'x'"));
        in[0] = ax; in[1] = ax;
        CHECK_STATUS(gr_call(f, in, out), GR_ERR_TYPE);
        CHECK(out[0] == NULL && strstr(gr_fn_message(f), "input 1") && strstr(gr_fn_message(f), "'y'") && strstr(gr_fn_message(f), "0 dimensions"));
        in[1] = NULL;
        CHECK_STATUS(gr_call(f, in, out), GR_ERR_VALUE);
        CHECK(out[0] == NULL && strstr(gr_fn_message(f), "input 1") && strstr(gr_fn_message(f), "NULL"));
        in[1] = ay;
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        CHECK(gr_fn_message(f)[0] == 0);
        rt_tiny_check(out, 1, xs + 1, ys + 1);
    }
    gr_fn_free(f);
    {   /* inputs given as (z, t, s), read as (s, t), z unused, a constant of shape (1); then one returning s */
        static const double cv[1] = { 3.0 };
        gr_var *s = gr_scalar(g, GR_F64, "s"), *t = gr_scalar(g, GR_F64, "t"), *z = gr_scalar(g, GR_F64, "z"), *in3[3], *o3[2], *u;
        gr_array *c1 = r_vec(1, cv), *as = gr_array_scalar(GR_F64, 0), *at = gr_array_scalar(GR_F64, 0), *az = gr_array_scalar(GR_F64, 9.0);
        const gr_array *ci[3], *co[2];
        gr_fn *h, *h2;
        int k, j;
        u = gr_mul(s, gr_constant(g, c1));
        in3[0] = z; in3[1] = t; in3[2] = s;
        o3[0] = gr_sub(gr_div(t, u), t);
        o3[1] = gr_add(u, t);
        h = gr_function(3, in3, 2, o3, NULL);
        o3[1] = s;
        h2 = gr_function(3, in3, 2, o3, NULL);
        CHECK(h != NULL && h2 != NULL && gr_fn_node_count(h) == 1);
        ci[0] = az; ci[1] = at; ci[2] = as;
        for (k = 0; h && h2 && as && at && az && k < 6; k++) {
            double sv = 1.5 + k, tv = -4.0 + 0.5 * k;
            ((double *)as->data)[0] = sv;
            ((double *)at->data)[0] = tv;
            for (j = 0; j < 2; j++) {
                CHECK_STATUS(gr_call(j ? h2 : h, ci, co), GR_OK);
                CHECK(co[0] && co[0]->ndim == 1 && co[0]->size == 1 && gr_array_get(co[0], 0) == tv / (sv * 3.0) - tv);
                CHECK(co[1] && co[1]->size == 1 && gr_array_get(co[1], 0) == (j ? sv : sv * 3.0 + tv));
            }
        }
        ci[2] = ax;                                            /* (1) for 0-d s: refused, named */
        CHECK_STATUS(gr_call(h, ci, co), GR_ERR_TYPE);
        CHECK(co[0] == NULL && strstr(gr_fn_message(h), "input 2") && strstr(gr_fn_message(h), "'s'") && strstr(gr_fn_message(h), "0 dimensions"));
        gr_fn_free(h); gr_fn_free(h2);
        gr_array_free(c1); gr_array_free(as); gr_array_free(at); gr_array_free(az);
    }
    gr_graph_free(g);
    gr_array_free(ax); gr_array_free(ay); gr_array_free(ax3); gr_array_free(af);
}

SUITE(suite_runtime) = {
    CASE(test_call_scalar_shortcut),
    CASE(test_fused_scalar_program),
    CASE(test_call_same_shapes_shortcut),
    CASE(test_call_reads_user_memory),
    CASE(test_updates_applied_each_call),
    CASE(test_shared_between_functions),
    CASE(test_shared_output_before_update),
    CASE(test_swap_updates),
    CASE(test_function_outlives_graph),
    CASE(test_identity_constant_outputs),
    CASE(test_computed_variable_as_input),
    CASE(test_plan_views_and_in_place),
    CASE(test_plan_no_in_place_under_a_view),
    CASE(test_user_op_errors),
    CASE(test_million_node_chain),
    CASE(test_function_many_inputs),
    CASE(test_fusion_many_groups),
    CASE(test_plan_wide_nodes),
    CASE(test_plan_many_sizes),
    CASE(test_compacted_function_keeps_leaves),
    CASE(test_function_leaves_graph_unchanged),
    CASE(test_print),
    END_SUITE
};
