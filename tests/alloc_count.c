/* tests/alloc_count.c: the library through a counting allocator.

   1. Steady state: after two warm-up calls, the 3rd..10th gr_call of every function perform no
      allocation at all (elementwise with broadcasting, reductions, dot, softmax, shared updates).
   2. Freeing everything brings the number of live allocations back to zero.
   3. Out of memory: the same scenarios are run again with the N-th allocation failing, for every N
      until a run needs no failure. Each run must end in a clean status (GR_ERR_NOMEM or success, never
      a crash or another code), a call after a failed call must work with correct values, and
      freeing must leave nothing allocated. */
#include "alloc_hook.h"

/* ---- scenarios ------------------------------------------------------------------------------------
   Each builds a graph and a function, calls it 10 times checking every successful call's values
   against plain C, and frees everything. In MEASURE mode every step must succeed and calls 3..10
   must not allocate; in INJECT mode the injector is armed around the library's work and failures
   must be clean. Input arrays are made before arming (they are the caller's). */

enum { MEASURE, INJECT };
#define AC_CALLS 10

typedef struct ac_run { int mode, calls_ok, calls_failed; } ac_run;

static void ac_arm(int mode) { if (mode == INJECT) { ac.armed = 1; ac.armed_calls = 0; } }
static void ac_disarm(void) { ac.armed = 0; }

/* after building: f must exist when measuring; a failed build is an out-of-memory error */
static void ac_built(const ac_run *r, gr_graph *g, gr_fn *f) {
    if (r->mode == MEASURE) {
        CHECK(f != NULL);
        if (!f && g) fprintf(stderr, "  %s\n", gr_graph_message(g));
    } else if (!f) {
        CHECK(ac.failed);
        if (g) {
            CHECK_STATUS(gr_graph_status(g), GR_ERR_NOMEM);
            CHECK(strlen(gr_graph_message(g)) > 0);
        }
    }
}

/* one call: zero allocations from the 3rd call on when measuring; in INJECT mode out of memory is
   the only acceptable failure, and at most one call may fail (only one allocation fails) */
static int ac_call(ac_run *r, gr_fn *f, int k, const gr_array *const *in, const gr_array **out) {
    long before = ac.calls;
    gr_status st = gr_call(f, in, out);
    if (r->mode == MEASURE) {
        CHECK_STATUS(st, GR_OK);
        if (k >= 2) CHECK_MSG(ac.calls == before, "call %d allocated %ld times", k + 1, ac.calls - before);
    } else if (st != GR_OK) {
        CHECK_STATUS(st, GR_ERR_NOMEM);
        CHECK(strlen(gr_fn_message(f)) > 0);
        r->calls_failed++;
        CHECK(r->calls_failed == 1);
    }
    if (st == GR_OK) {
        r->calls_ok++;
        CHECK(strcmp(gr_fn_message(f), "") == 0);
    }
    return st == GR_OK;
}

static gr_array *ac_fill(gr_dtype dt, int ndim, const int64_t *shape, double scale, double shift) {
    gr_array *a = gr_array_new(dt, ndim, shape);
    int64_t i;
    for (i = 0; a && i < a->size; i++) gr_array_set(a, i, scale * sin(1.0 + 0.7 * (double)i) + shift);
    return a;
}

/* A: elementwise with broadcasting; y = tanh(2x + b) * exp(-b), and sum(y) */
static void scen_elemwise(ac_run *r) {
    int64_t s34[2] = { 3, 4 }, s4 = 4;
    gr_array *xa = ac_fill(GR_F64, 2, s34, 1.0, 0.0), *ba = ac_fill(GR_F64, 1, &s4, 0.5, 0.1);
    gr_graph *g;
    gr_var *x, *b, *ins[2], *outs[2], *y;
    gr_fn *f;
    int k;
    ac_arm(r->mode);
    g = gr_graph_new();
    x = gr_matrix(g, GR_F64, "x");
    b = gr_vector(g, GR_F64, "b");
    ins[0] = x; ins[1] = b;
    y = gr_mul(gr_tanh(gr_add(gr_mul(x, gr_const(g, 2.0)), b)), gr_exp(gr_neg(b)));
    outs[0] = y; outs[1] = gr_sum(y);
    f = gr_function(2, ins, 2, outs, NULL);
    ac_built(r, g, f);
    gr_graph_free(g);
    for (k = 0; f && k < AC_CALLS; k++) {
        const gr_array *in[2], *out[2];
        in[0] = xa; in[1] = ba;
        if (ac_call(r, f, k, in, out)) {
            double s = 0;
            int i, j;
            for (i = 0; i < 3; i++)
                for (j = 0; j < 4; j++) {
                    double xv = gr_array_get(xa, i * 4 + j), bv = gr_array_get(ba, j), w = tanh(2 * xv + bv) * exp(-bv);
                    s += w;
                    CHECK_NEAR(gr_array_get(out[0], i * 4 + j), w, 1e-15);
                }
            CHECK_NEAR(gr_array_get(out[1], 0), s, 1e-14);
        }
    }
    ac_disarm();
    gr_fn_free(f);
    gr_array_free(xa); gr_array_free(ba);
}

/* B: reductions: sum over axis 0, mean over axis 1 keeping it, max over axis 1, the product, and
   an integer sum */
static void scen_reduce(ac_run *r) {
    int64_t s34[2] = { 3, 4 }, s5 = 5;
    gr_array *xa = ac_fill(GR_F64, 2, s34, 1.0, 1.2), *ia = ac_fill(GR_I64, 1, &s5, 10.0, 0.0);
    gr_graph *g;
    gr_var *x, *iv, *ins[2], *outs[5];
    gr_fn *f;
    int ax1 = 1, k;
    ac_arm(r->mode);
    g = gr_graph_new();
    x = gr_matrix(g, GR_F64, "x");
    iv = gr_vector(g, GR_I64, "i");
    ins[0] = x; ins[1] = iv;
    outs[0] = gr_sum_axis(x, 0);
    outs[1] = gr_mean_axes(x, 1, &ax1, 1);
    outs[2] = gr_max_axis(x, -1);
    outs[3] = gr_prod(x);
    outs[4] = gr_sum(gr_mul(iv, iv));
    f = gr_function(2, ins, 5, outs, NULL);
    ac_built(r, g, f);
    gr_graph_free(g);
    for (k = 0; f && k < AC_CALLS; k++) {
        const gr_array *in[2], *out[5];
        in[0] = xa; in[1] = ia;
        if (ac_call(r, f, k, in, out)) {
            double p = 1;
            int64_t isum = 0;
            int i, j;
            for (j = 0; j < 4; j++) {
                double s = 0;
                for (i = 0; i < 3; i++) s += gr_array_get(xa, i * 4 + j);
                CHECK_NEAR(gr_array_get(out[0], j), s, 1e-15);
            }
            for (i = 0; i < 3; i++) {
                double s = 0, m = -INFINITY;
                for (j = 0; j < 4; j++) {
                    double v = gr_array_get(xa, i * 4 + j);
                    s += v; p *= v;
                    if (v > m) m = v;
                }
                CHECK_NEAR(gr_array_get(out[1], i), s / 4, 1e-15);
                CHECK_NEAR(gr_array_get(out[2], i), m, 0);
            }
            CHECK(out[1]->ndim == 2 && out[1]->shape[1] == 1);
            CHECK_NEAR(gr_array_get(out[3], 0), p, 1e-14);
            for (i = 0; i < 5; i++) isum += (int64_t)gr_array_get(ia, i) * (int64_t)gr_array_get(ia, i);
            CHECK(out[4]->dtype == GR_I64);
            CHECK_EQ_INT(((const int64_t *)out[4]->data)[0], isum);
        }
    }
    ac_disarm();
    gr_fn_free(f);
    gr_array_free(xa); gr_array_free(ia);
}

/* C: dot: matrix.matrix, matrix.vector, vector.vector, a transposed operand */
static void scen_dot(ac_run *r) {
    int64_t s34[2] = { 3, 4 }, s42[2] = { 4, 2 }, s4 = 4;
    gr_array *aa = ac_fill(GR_F64, 2, s34, 1.0, 0.0), *ba = ac_fill(GR_F64, 2, s42, 2.0, -0.5), *va = ac_fill(GR_F64, 1, &s4, 1.0, 0.3);
    gr_graph *g;
    gr_var *a, *b, *v, *ins[3], *outs[4];
    gr_fn *f;
    int k;
    ac_arm(r->mode);
    g = gr_graph_new();
    a = gr_matrix(g, GR_F64, "A");
    b = gr_matrix(g, GR_F64, "B");
    v = gr_vector(g, GR_F64, "v");
    ins[0] = a; ins[1] = b; ins[2] = v;
    outs[0] = gr_dot(a, b);                              /* (3,2) */
    outs[1] = gr_dot(a, v);                              /* (3) */
    outs[2] = gr_dot(v, v);                              /* () */
    outs[3] = gr_dot(gr_transpose(b), gr_transpose(a));  /* (2,3) */
    f = gr_function(3, ins, 4, outs, NULL);
    ac_built(r, g, f);
    gr_graph_free(g);
    for (k = 0; f && k < AC_CALLS; k++) {
        const gr_array *in[3], *out[4];
        in[0] = aa; in[1] = ba; in[2] = va;
        if (ac_call(r, f, k, in, out)) {
            int i, j, q;
            double vv = 0;
            for (i = 0; i < 3; i++) {
                double av = 0;
                for (j = 0; j < 2; j++) {
                    double s = 0;
                    for (q = 0; q < 4; q++) s += gr_array_get(aa, i * 4 + q) * gr_array_get(ba, q * 2 + j);
                    CHECK_NEAR(gr_array_get(out[0], i * 2 + j), s, 1e-14);
                    CHECK_NEAR(gr_array_get(out[3], j * 3 + i), s, 1e-14);
                }
                for (q = 0; q < 4; q++) av += gr_array_get(aa, i * 4 + q) * gr_array_get(va, q);
                CHECK_NEAR(gr_array_get(out[1], i), av, 1e-14);
            }
            for (q = 0; q < 4; q++) vv += gr_array_get(va, q) * gr_array_get(va, q);
            CHECK_NEAR(gr_array_get(out[2], 0), vv, 1e-14);
        }
    }
    ac_disarm();
    gr_fn_free(f);
    gr_array_free(aa); gr_array_free(ba); gr_array_free(va);
}

/* D: softmax over rows and log_softmax over columns, in float32 and float64 */
static void scen_softmax(ac_run *r) {
    int64_t s34[2] = { 3, 4 };
    gr_array *xa = ac_fill(GR_F64, 2, s34, 3.0, 0.0), *xf = ac_fill(GR_F32, 2, s34, 3.0, 0.0);
    gr_graph *g;
    gr_var *x, *x32, *ins[2], *outs[3];
    gr_fn *f;
    int k;
    ac_arm(r->mode);
    g = gr_graph_new();
    x = gr_matrix(g, GR_F64, "x");
    x32 = gr_matrix(g, GR_F32, "x32");
    ins[0] = x; ins[1] = x32;
    outs[0] = gr_softmax(x, 1);
    outs[1] = gr_log_softmax(x, 0);
    outs[2] = gr_softmax(x32, -1);
    f = gr_function(2, ins, 3, outs, NULL);
    ac_built(r, g, f);
    gr_graph_free(g);
    for (k = 0; f && k < AC_CALLS; k++) {
        const gr_array *in[2], *out[3];
        in[0] = xa; in[1] = xf;
        if (ac_call(r, f, k, in, out)) {
            int i, j;
            for (i = 0; i < 3; i++) {
                double z = 0;
                for (j = 0; j < 4; j++) z += exp(gr_array_get(xa, i * 4 + j));
                for (j = 0; j < 4; j++) {
                    CHECK_NEAR(gr_array_get(out[0], i * 4 + j), exp(gr_array_get(xa, i * 4 + j)) / z, 1e-15);
                    CHECK_NEAR(gr_array_get(out[2], i * 4 + j), exp(gr_array_get(xa, i * 4 + j)) / z, 1e-6);
                }
            }
            CHECK(out[2]->dtype == GR_F32);
            for (j = 0; j < 4; j++) {
                double z = 0;
                for (i = 0; i < 3; i++) z += exp(gr_array_get(xa, i * 4 + j));
                for (i = 0; i < 3; i++) CHECK_NEAR(gr_array_get(out[1], i * 4 + j), gr_array_get(xa, i * 4 + j) - log(z), 1e-14);
            }
        }
    }
    ac_disarm();
    gr_fn_free(f);
    gr_array_free(xa); gr_array_free(xf);
}

/* E: shared updates: h = W x, cost = sum(h^2); W := W - 0.01 outer(h, x); c := c + x; p and q
   swap; the outputs include the shared W itself (its value before the update) */
static void scen_updates(ac_run *r) {
    int64_t s23[2] = { 2, 3 }, s3 = 3, s2 = 2;
    gr_array *w0 = ac_fill(GR_F64, 2, s23, 1.0, 0.0), *c0 = ac_fill(GR_F64, 1, &s3, 1.0, 0.5);
    gr_array *p0 = ac_fill(GR_F64, 1, &s2, 1.0, 0.0), *q0 = ac_fill(GR_F64, 1, &s2, 1.0, 5.0);
    gr_array *xa = ac_fill(GR_F64, 1, &s3, 0.8, 0.2);
    double W[6], C[3], P[2], Q[2];
    gr_graph *g;
    gr_var *w, *c, *p, *q, *x, *h, *outs[2];
    gr_update u[4];
    gr_fn_opts o;
    gr_fn *f;
    int i, j, k;
    for (i = 0; i < 6; i++) W[i] = gr_array_get(w0, i);
    for (i = 0; i < 3; i++) C[i] = gr_array_get(c0, i);
    for (i = 0; i < 2; i++) { P[i] = gr_array_get(p0, i); Q[i] = gr_array_get(q0, i); }
    ac_arm(r->mode);
    g = gr_graph_new();
    w = gr_shared(g, w0, "W");
    c = gr_shared(g, c0, "c");
    p = gr_shared(g, p0, "p");
    q = gr_shared(g, q0, "q");
    x = gr_vector(g, GR_F64, "x");
    h = gr_dot(w, x);
    outs[0] = gr_sum(gr_sqr(h));
    outs[1] = w;
    u[0].shared = w; u[0].value = gr_sub(w, gr_mul(gr_const(g, 0.01), gr_outer(h, x)));
    u[1].shared = c; u[1].value = gr_add(c, x);
    u[2].shared = p; u[2].value = q;
    u[3].shared = q; u[3].value = p;
    memset(&o, 0, sizeof o);
    o.updates = u; o.n_updates = 4;
    f = gr_function(1, &x, 2, outs, &o);
    ac_built(r, g, f);
    for (k = 0; f && k < AC_CALLS; k++) {
        const gr_array *in[1], *out[2];
        in[0] = xa;
        if (ac_call(r, f, k, in, out)) {
            double hv[2], cost = 0;
            for (i = 0; i < 2; i++) {
                hv[i] = 0;
                for (j = 0; j < 3; j++) hv[i] += W[i * 3 + j] * gr_array_get(xa, j);
                cost += hv[i] * hv[i];
            }
            CHECK_NEAR(gr_array_get(out[0], 0), cost, 1e-14);
            for (i = 0; i < 6; i++) CHECK_NEAR(gr_array_get(out[1], i), W[i], 1e-15);
            for (i = 0; i < 2; i++)
                for (j = 0; j < 3; j++) W[i * 3 + j] -= 0.01 * hv[i] * gr_array_get(xa, j);
            for (j = 0; j < 3; j++) C[j] += gr_array_get(xa, j);
            for (i = 0; i < 2; i++) { double t = P[i]; P[i] = Q[i]; Q[i] = t; }
        }
    }
    ac_disarm();
    if (f) {                                             /* the stored values followed every good call */
        for (i = 0; i < 6; i++) CHECK_NEAR(gr_array_get(gr_shared_get(w), i), W[i], 1e-15);
        for (i = 0; i < 3; i++) CHECK_NEAR(gr_array_get(gr_shared_get(c), i), C[i], 1e-15);
        for (i = 0; i < 2; i++) {
            CHECK_NEAR(gr_array_get(gr_shared_get(p), i), P[i], 0);
            CHECK_NEAR(gr_array_get(gr_shared_get(q), i), Q[i], 0);
        }
        if (r->mode == MEASURE) CHECK_EQ_INT(r->calls_ok, AC_CALLS);
    }
    gr_graph_free(g);
    gr_fn_free(f);
    gr_array_free(w0); gr_array_free(c0); gr_array_free(p0); gr_array_free(q0); gr_array_free(xa);
}

/* F: outputs that are inputs, constants and views of inputs; shapes that change between calls
   (each change may allocate; repeating a shape already seen must not grow anything past it) */
static void scen_identity_and_shapes(ac_run *r) {
    int64_t n8 = 8, n3 = 3;
    gr_array *big = ac_fill(GR_F64, 1, &n8, 1.0, 0.0), *small = ac_fill(GR_F64, 1, &n3, 1.0, 2.0);
    gr_graph *g;
    gr_var *x, *outs[4];
    gr_fn *f;
    int64_t m1[2] = { 1, -1 };
    int k;
    ac_arm(r->mode);
    g = gr_graph_new();
    x = gr_vector(g, GR_F64, "x");
    outs[0] = x;
    outs[1] = gr_reshape(x, 2, m1);
    outs[2] = gr_const(g, 4.0);
    outs[3] = gr_exp(x);
    f = gr_function(1, &x, 4, outs, NULL);
    ac_built(r, g, f);
    gr_graph_free(g);
    for (k = 0; f && k < AC_CALLS + 4; k++) {
        const gr_array *in[1], *out[4];
        const gr_array *a = (k < 2 || k >= AC_CALLS) ? (k % 2 ? small : big) : big;
        long before = ac.calls;
        gr_status st;
        in[0] = a;
        st = gr_call(f, in, out);
        if (r->mode == MEASURE) {
            CHECK_STATUS(st, GR_OK);
            /* calls 3..10 repeat the big shape: nothing to allocate */
            if (k >= 2 && k < AC_CALLS) CHECK_MSG(ac.calls == before, "call %d allocated %ld times", k + 1, ac.calls - before);
        } else if (st != GR_OK) {
            CHECK_STATUS(st, GR_ERR_NOMEM);
            r->calls_failed++;
            CHECK(r->calls_failed == 1);
        }
        if (st == GR_OK) {
            int64_t i;
            r->calls_ok++;
            CHECK(out[0]->size == a->size && out[1]->ndim == 2 && out[1]->shape[1] == a->size);
            for (i = 0; i < a->size; i++) {
                CHECK_NEAR(gr_array_get(out[0], i), gr_array_get(a, i), 0);
                CHECK_NEAR(gr_array_get(out[1], i), gr_array_get(a, i), 0);
                CHECK_NEAR(gr_array_get(out[3], i), exp(gr_array_get(a, i)), 1e-15);
            }
            CHECK_NEAR(gr_array_get(out[2], 0), 4.0, 0);
        }
    }
    ac_disarm();
    gr_fn_free(f);
    gr_array_free(big); gr_array_free(small);
}

/* G: a chain long enough to grow the graph's tables and arena, names, a shared value changing size
   (gr_shared_set may fail: then nothing changes), and printing */
static void scen_chain_and_set(ac_run *r) {
    enum { LINKS = 300 };
    int64_t n3 = 3, n5 = 5;
    gr_array *xa = ac_fill(GR_F64, 1, &n3, 1.0, 0.0), *w3 = ac_fill(GR_F64, 1, &n3, 0.01, 0.0), *w5 = ac_fill(GR_F64, 1, &n5, 1.0, 0.0);
    gr_array *ca = gr_array_scalar(GR_F64, 0.999);
    gr_graph *g;
    gr_var *x, *w, *c, *y;
    gr_fn *f;
    gr_status set;
    FILE *fp = tmpfile();
    int i, k;
    ac_arm(r->mode);
    g = gr_graph_new();
    x = gr_vector(g, GR_F64, "x");
    w = gr_shared(g, w3, "w");
    c = gr_constant(g, ca);
    y = x;
    for (k = 0; k < LINKS; k++) y = gr_add(gr_mul(y, c), w);
    gr_var_set_name(y, "the_end_of_a_rather_long_chain");
    f = gr_function(1, &x, 1, &y, NULL);
    ac_built(r, g, f);
    for (k = 0; f && k < AC_CALLS; k++) {
        const gr_array *in[1], *out[1];
        in[0] = xa;
        if (ac_call(r, f, k, in, out)) {
            for (i = 0; i < 3; i++) {
                double v = gr_array_get(xa, i);
                int q;
                for (q = 0; q < LINKS; q++) v = v * 0.999 + gr_array_get(w3, i);
                CHECK_NEAR(gr_array_get(out[0], i), v, 1e-12);
            }
        }
    }
    set = gr_shared_set(w, w5);                          /* a new size: a new block */
    if (w) {
        const gr_array *now = gr_shared_get(w);
        if (r->mode == MEASURE) CHECK_STATUS(set, GR_OK);
        if (set == GR_OK) CHECK(now->shape[0] == 5 && gr_array_get(now, 4) == gr_array_get(w5, 4));
        else {
            CHECK_STATUS(set, GR_ERR_NOMEM);
            CHECK(now->shape[0] == 3 && gr_array_get(now, 2) == gr_array_get(w3, 2));
        }
        if (f) {
            const gr_array *in[1], *out[1];
            gr_status st;
            in[0] = xa;
            st = gr_call(f, in, out);
            if (set == GR_OK) CHECK_STATUS(st, GR_ERR_SHAPE);
            else CHECK(st == GR_OK || st == GR_ERR_NOMEM);
        }
    }
    if (fp) {
        char buf[256];
        size_t n;
        gr_print(fp, y);
        rewind(fp);
        n = fread(buf, 1, sizeof buf - 1, fp);
        buf[n] = 0;
        if (r->mode == MEASURE) CHECK(strstr(buf, "Mul") != NULL);
        gr_pp(fp, y);                                    /* the other printers: no leak, no crash */
        gr_debugprint(fp, 1, &y);
        gr_print_dot(fp, 1, &y);
        gr_fn_print_dot(fp, f);
        gr_fn_print(fp, f);
        fclose(fp);
    }
    ac_disarm();
    gr_fn_free(f);
    gr_graph_free(g);
    gr_array_free(xa); gr_array_free(w3); gr_array_free(w5); gr_array_free(ca);
}

/* H: a rewrite of zeros: a dimshuffled zeros_like is rebuilt as zeros of the new shape, then added
   to x. The rewrite's inner build must fail cleanly: under out of memory it once gave a 0-d zero,
   and the function returned x itself for the (2, 2) sum (fuzzer, tests/fuzz). */
static void scen_zeros_rewritten(ac_run *r) {
    int64_t n2 = 2;
    gr_array *xa = ac_fill(GR_F64, 1, &n2, 1.0, 0.5);
    gr_graph *g;
    gr_var *x, *y;
    gr_fn *f;
    int col[2] = { 0, GR_NEWAXIS }, k;
    ac_arm(r->mode);
    g = gr_graph_new();
    x = gr_vector(g, GR_F64, "x");
    y = gr_add(gr_dimshuffle(gr_zeros_like(x), 2, col), x);           /* 0[i] + x[j]: (2, 2) */
    f = gr_function(1, &x, 1, &y, NULL);
    ac_built(r, g, f);
    gr_graph_free(g);
    for (k = 0; f && k < AC_CALLS; k++) {
        const gr_array *in[1], *out[1];
        in[0] = xa;
        if (ac_call(r, f, k, in, out)) {
            int i, j;
            CHECK(out[0]->ndim == 2 && out[0]->shape[0] == 2 && out[0]->shape[1] == 2);
            for (i = 0; i < 2 && out[0]->size == 4; i++)
                for (j = 0; j < 2; j++) CHECK_NEAR(gr_array_get(out[0], i * 2 + j), gr_array_get(xa, j), 0);
        }
    }
    ac_disarm();
    gr_fn_free(f);
    gr_array_free(xa);
}

/* I: loops. h_t = tanh(u_t w + h_{t-1} v) (3-vectors, elementwise) over the T rows of u from h0; the
   function returns every h_t, the gradient of sum(h) with respect to u, h0, w and v (BPTT, a loop
   itself), the same gradient with checkpoints = 3 (states recomputed), and the R-op of h along
   (u, w) = (du, dw). Against the plain-C loop, its hand-written BPTT and its tangent recurrence;
   steady-state calls run every step of three loops without allocating. */
enum { AC_LT = 12 };
static gr_status ac_loop_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until;
    out[0] = gr_tanh(gr_add(gr_mul(in[0], in[2]), gr_mul(in[1], (gr_var *)user)));
    return GR_OK;
}
/* h (T x 3); dh (T x 3): d sum(h); du (T x 3), dh0, dw, dv (3); th (T x 3): the tangent */
static void ac_loop_ref(const gr_array *u, const gr_array *h0, const gr_array *w, const gr_array *v, const gr_array *du,
                        const gr_array *dw, double *h, double *gu, double *gh0, double *gw, double *gv, double *th) {
    int t, j;
    for (j = 0; j < 3; j++) {
        double hp = gr_array_get(h0, j), tp = 0, wj = gr_array_get(w, j), vj = gr_array_get(v, j), adj = 0;
        for (t = 0; t < AC_LT; t++) {
            double ut = gr_array_get(u, t * 3 + j), hn = tanh(ut * wj + hp * vj);
            th[t * 3 + j] = (1 - hn * hn) * (gr_array_get(du, t * 3 + j) * wj + ut * gr_array_get(dw, j) + tp * vj);
            h[t * 3 + j] = hn;
            hp = hn;
            tp = th[t * 3 + j];
        }
        gw[j] = gv[j] = 0;
        for (t = AC_LT - 1; t >= 0; t--) {    /* adj: d sum(h) / d h_t, through the later steps */
            double hn = h[t * 3 + j], a, hprev = t ? h[(t - 1) * 3 + j] : gr_array_get(h0, j);
            adj += 1.0;
            a = adj * (1 - hn * hn);
            gu[t * 3 + j] = a * wj;
            gw[j] += a * gr_array_get(u, t * 3 + j);
            gv[j] += a * hprev;
            adj = a * vj;
        }
        gh0[j] = adj;
    }
}
static void scen_loop(ac_run *r) {
    int64_t su[2] = { AC_LT, 3 }, s3 = 3;
    gr_array *ua = ac_fill(GR_F64, 2, su, 0.8, 0.1), *h0a = ac_fill(GR_F64, 1, &s3, 0.5, 0.0), *wa = ac_fill(GR_F64, 1, &s3, 0.6, 0.4);
    gr_array *va = ac_fill(GR_F64, 1, &s3, 0.3, 0.5), *dua = ac_fill(GR_F64, 2, su, 0.7, -0.2), *dwa = ac_fill(GR_F64, 1, &s3, 0.4, 0.3);
    double h[AC_LT * 3], gu[AC_LT * 3], gh0[3], gw[3], gv[3], th[AC_LT * 3];
    gr_graph *g;
    gr_var *u, *h0, *w, *v, *du, *dw, *ins[6], *outs[10], *res[2] = { NULL, NULL }, *wrt[4], *ev[2], *rwrt[2], *rop = NULL;
    gr_scan_seq s;
    gr_scan_out o;
    gr_scan_opts opts;
    gr_fn *f = NULL;
    int k, c;
    ac_loop_ref(ua, h0a, wa, va, dua, dwa, h, gu, gh0, gw, gv, th);
    ac_arm(r->mode);
    g = gr_graph_new();
    u = gr_matrix(g, GR_F64, "u"); h0 = gr_vector(g, GR_F64, "h0"); w = gr_vector(g, GR_F64, "w"); v = gr_vector(g, GR_F64, "v");
    du = gr_matrix(g, GR_F64, "du"); dw = gr_vector(g, GR_F64, "dw");
    ins[0] = u; ins[1] = h0; ins[2] = w; ins[3] = v; ins[4] = du; ins[5] = dw;
    wrt[0] = u; wrt[1] = h0; wrt[2] = w; wrt[3] = v;
    for (k = 0; k < 10; k++) outs[k] = NULL;
    s.x = u; s.n_taps = 0; s.taps = NULL;
    o.initial = h0; o.n_taps = 0; o.taps = NULL;
    for (c = 0; c < 2; c++) {
        memset(&opts, 0, sizeof opts);
        opts.checkpoints = c ? 3 : 0;
        if (gr_scan(ac_loop_step, v, 1, &s, 1, &o, 1, &w, &opts, &res[c]) == GR_OK)
            gr_grad(gr_sum(res[c]), 4, wrt, outs + 1 + 4 * c, NULL);
    }
    outs[0] = res[0];
    ev[0] = du; ev[1] = dw;
    rwrt[0] = u; rwrt[1] = w;
    if (res[0] && gr_rop(1, &res[0], 2, rwrt, ev, &rop, NULL) == GR_OK) outs[9] = rop;
    for (k = 0; k < 10 && outs[k]; k++) {}
    if (k == 10) f = gr_function(6, ins, 10, outs, NULL);
    ac_built(r, g, f);
    gr_graph_free(g);
    for (k = 0; f && k < AC_CALLS; k++) {
        const gr_array *in[6], *out[10];
        in[0] = ua; in[1] = h0a; in[2] = wa; in[3] = va; in[4] = dua; in[5] = dwa;
        if (ac_call(r, f, k, in, out)) {
            int i;
            for (i = 0; i < AC_LT * 3; i++) {
                CHECK_NEAR(gr_array_get(out[0], i), h[i], 1e-15);
                CHECK_NEAR(gr_array_get(out[1], i), gu[i], 1e-13);
                CHECK(gr_array_get(out[5], i) == gr_array_get(out[1], i));     /* checkpointed: the same bits */
                CHECK_NEAR(gr_array_get(out[9], i), th[i], 1e-13);
            }
            for (i = 0; i < 3; i++) {
                CHECK_NEAR(gr_array_get(out[2], i), gh0[i], 1e-13);
                CHECK_NEAR(gr_array_get(out[3], i), gw[i], 1e-13);
                CHECK_NEAR(gr_array_get(out[4], i), gv[i], 1e-13);
                for (c = 2; c <= 4; c++) CHECK(gr_array_get(out[c + 4], i) == gr_array_get(out[c], i));
            }
        }
    }
    ac_disarm();
    gr_fn_free(f);
    gr_array_free(ua); gr_array_free(h0a); gr_array_free(wa); gr_array_free(va); gr_array_free(dua); gr_array_free(dwa);
}

/* J: gr_fn_emit_c of a function with broadcasting, a reduction, a shared variable's update and a loop
   with its gradient (a loop over the rows of x, its state starting at s): it succeeds, or fails with
   out of memory and a message, leaks nothing, and the calls after it work */
static void scen_emit(ac_run *r) {
    int64_t s34[2] = { 3, 4 }, s4 = 4;
    gr_array *xa = ac_fill(GR_F64, 2, s34, 1.0, 0.0), *sa = ac_fill(GR_F64, 1, &s4, 0.5, 0.1);
    gr_graph *g;
    gr_var *x, *s, *outs[4], *y, *lr = NULL;
    gr_update up;
    gr_fn_opts o;
    gr_fn *f;
    gr_scan_seq sq;
    gr_scan_out so;
    FILE *fp = tmpfile();
    int k;
    ac_arm(r->mode);
    g = gr_graph_new();
    x = gr_matrix(g, GR_F64, "x");
    s = gr_shared(g, sa, "s");
    y = gr_tanh(gr_add(gr_mul(x, gr_const(g, 2.0)), s));
    outs[0] = y; outs[1] = gr_sum(y);
    sq.x = x; sq.n_taps = 0; sq.taps = NULL;
    so.initial = s; so.n_taps = 0; so.taps = NULL;
    outs[2] = outs[3] = NULL;
    if (gr_scan(ac_loop_step, s, 1, &sq, 1, &so, 1, &s, NULL, &lr) == GR_OK) {
        outs[2] = gr_sum(gr_index(lr, 0, -1));
        if (gr_grad(outs[2], 1, &x, &outs[3], NULL) != GR_OK) outs[3] = NULL;
    }
    up.shared = s; up.value = gr_add(gr_mul(s, gr_const(g, 0.5)), gr_const(g, 1.0));
    memset(&o, 0, sizeof o);
    o.updates = &up; o.n_updates = 1;
    f = outs[2] && outs[3] ? gr_function(1, &x, 4, outs, &o) : NULL;
    ac_built(r, g, f);
    if (f && fp) {
        const gr_array *in[1];
        gr_emit_opts eo;
        gr_status st;
        in[0] = xa;
        eo.name = "gr_emitted";
        st = gr_fn_emit_c(f, in, fp, &eo);
        if (r->mode == MEASURE) CHECK_STATUS(st, GR_OK);
        else if (st != GR_OK) { CHECK_STATUS(st, GR_ERR_NOMEM); CHECK(strlen(gr_fn_message(f)) > 0); CHECK(ftell(fp) == 0); }
        if (st == GR_OK) CHECK(ftell(fp) > 500);
    }
    if (fp) fclose(fp);
    gr_graph_free(g);
    for (k = 0; f && k < AC_CALLS; k++) {
        const gr_array *in[1], *out[4];
        in[0] = xa;
        if (ac_call(r, f, k, in, out)) CHECK(fabs(gr_array_get(out[0], 0)) <= 1.0 && gr_array_get(out[1], 0) == gr_array_get(out[1], 0));
    }
    ac_disarm();
    gr_fn_free(f);
    gr_array_free(xa); gr_array_free(sa);
}

/* K: gr_fn_emit_c of a function with an op made of a graph holding a conditional, that op's gradient
   (another such op), and a conditional whose sides differ in shape (the example run up to it) */
static void scen_emit_ctl(ac_run *r) {
    int64_t n3 = 3, n2 = 2;
    gr_array *xa = ac_fill(GR_F64, 1, &n3, 1.0, 0.2), *ba = ac_fill(GR_F64, 1, &n2, 2.0, 0.0), *ca = gr_array_scalar(GR_F64, 1.0);
    gr_graph *g;
    gr_var *a, *th, *ex, *z = NULL, *x, *b, *c, *ins[3], *outs[3], *x2;
    gr_op_def *op;
    gr_fn *f = NULL;
    FILE *fp = tmpfile();
    int k, i;
    ac_arm(r->mode);
    g = gr_graph_new();
    a = gr_tensor(g, GR_F64, 1, &n3, "a");
    th = gr_mul(gr_tanh(a), a);
    ex = gr_exp(a);
    x = gr_tensor(g, GR_F64, 1, &n3, "x");
    b = gr_vector(g, GR_F64, "b");
    c = gr_scalar(g, GR_F64, "c");
    x2 = gr_mul(x, gr_const(g, 2.0));
    op = gr_ifelse(gr_gt(gr_sum(a), gr_const(g, 0.0)), 1, &th, &ex, &z) == GR_OK ? gr_op_from_graph("k", 1, &a, 1, &z, NULL) : NULL;
    outs[0] = outs[1] = outs[2] = NULL;
    if (op && gr_apply(op, NULL, 0, 1, &x, &outs[0]) == GR_OK) outs[1] = gr_grad1(gr_sum(outs[0]), x);
    if (gr_ifelse(c, 1, &x2, &b, &outs[2]) != GR_OK) outs[2] = NULL;
    ins[0] = x; ins[1] = b; ins[2] = c;
    if (outs[0] && outs[1] && outs[2]) f = gr_function(3, ins, 3, outs, NULL);
    ac_built(r, g, f);
    if (f && fp) {
        const gr_array *in[3];
        gr_emit_opts eo;
        gr_status st;
        in[0] = xa; in[1] = ba; in[2] = ca;
        eo.name = "gr_emitted";
        st = gr_fn_emit_c(f, in, fp, &eo);
        if (r->mode == MEASURE) CHECK_STATUS(st, GR_OK);
        else if (st != GR_OK) { CHECK_STATUS(st, GR_ERR_NOMEM); CHECK(strlen(gr_fn_message(f)) > 0); CHECK(ftell(fp) == 0); }
        if (st == GR_OK) CHECK(ftell(fp) > 500);
    }
    if (fp) fclose(fp);
    gr_op_free(op);
    gr_graph_free(g);
    for (k = 0; f && k < AC_CALLS; k++) {
        const gr_array *in[3], *out[3];
        const double *xv = (const double *)xa->data;
        double s = xv[0] + xv[1] + xv[2];
        in[0] = xa; in[1] = ba; in[2] = ca;
        if (ac_call(r, f, k, in, out))
            for (i = 0; i < 3; i++) {
                CHECK_NEAR(gr_array_get(out[0], i), s > 0 ? tanh(xv[i]) * xv[i] : exp(xv[i]), 1e-15);
                CHECK_NEAR(gr_array_get(out[2], i), 2 * xv[i], 0);
            }
    }
    ac_disarm();
    gr_fn_free(f);
    gr_array_free(xa); gr_array_free(ba); gr_array_free(ca);
}

typedef void (*ac_scenario)(ac_run *r);
static const ac_scenario ac_scenarios[] = { scen_elemwise, scen_reduce, scen_dot, scen_softmax, scen_updates,
                                            scen_identity_and_shapes, scen_chain_and_set, scen_zeros_rewritten, scen_loop, scen_emit,
                                            scen_emit_ctl };
static const char *const ac_names[] = { "elemwise", "reduce", "dot", "softmax", "updates", "identity_and_shapes", "chain_and_set",
                                        "zeros_rewritten", "loop", "emit", "emit_ctl" };
#define AC_N_SCENARIOS ((int)(sizeof ac_scenarios / sizeof ac_scenarios[0]))

TEST(test_steady_state_allocates_nothing) {
    int s;
    for (s = 0; s < AC_N_SCENARIOS; s++) {
        ac_run r;
        long live = ac.live;
        memset(&r, 0, sizeof r);
        r.mode = MEASURE;
        ac_scenarios[s](&r);
        CHECK_MSG(r.calls_ok >= AC_CALLS, "%s: %d good calls", ac_names[s], r.calls_ok);
        CHECK_MSG(ac.live == live, "%s: %ld blocks left allocated", ac_names[s], ac.live - live);
    }
}

TEST(test_out_of_memory_everywhere) {
    int s;
    for (s = 0; s < AC_N_SCENARIOS; s++) {
        long n, failures = 0;
        for (n = 0; n < 100000; n++) {
            ac_run r;
            long live = ac.live, checks = gt.checks_failed;
            memset(&r, 0, sizeof r);
            r.mode = INJECT;
            ac.fail_at = n;
            ac.failed = 0;
            ac_scenarios[s](&r);
            CHECK_MSG(ac.live == live, "%s, allocation %ld failing: %ld blocks leaked", ac_names[s], n, ac.live - live);
            if (gt.checks_failed != checks) {
                fprintf(stderr, "  (%s with allocation %ld failing)\n", ac_names[s], n);
                if (++failures > 5) break;
            }
            if (!ac.failed) {                             /* every allocation has had its turn */
                CHECK_MSG(r.calls_ok >= AC_CALLS, "%s: %d good calls without a failure", ac_names[s], r.calls_ok);
                break;
            }
        }
        CHECK_MSG(n > 10 && n < 100000, "%s: %ld allocations", ac_names[s], n);
    }
    ac.fail_at = -1;
}

/* A compiled function keeps what it runs, not the copy it was made from: W5's chain
   y_{k+1} = sin(y_k) / N + y_k and its gradient fuse into one node, and once the graph is freed the
   function holds a fraction of the graph's bytes (before gr_function compacted its private graph
   it held more than the graph: every node it had copied, fused away or not), and compiling did not
   copy the graph. Values are checked against the chain computed by hand. */
TEST(test_function_keeps_only_its_program) {
    enum { N = 3000 };
    size_t before = ac.bytes, graph_bytes, fn_bytes, compile_bytes;
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *c = gr_const(g, 1.0 / N), *y = x, *outs[2];
    gr_array *xa = gr_array_scalar(GR_F64, 0.5);
    gr_fn *f;
    int k;
    for (k = 0; k < N; k++) y = gr_add(gr_mul(gr_sin(y), c), y);
    outs[0] = y;
    outs[1] = gr_grad1(y, x);
    graph_bytes = ac.bytes - before;
    ac.peak = ac.bytes;
    f = gr_function(1, &x, 2, outs, NULL);
    compile_bytes = ac.peak - before - graph_bytes;
    gr_graph_free(g);
    CHECK(f != NULL);
    if (!f) { gr_array_free(xa); return; }
    fn_bytes = ac.bytes - before;
    CHECK_MSG(fn_bytes * 4 < graph_bytes, "the function keeps %zu bytes; the graph had %zu", fn_bytes, graph_bytes);
    /* the rewrites change nothing in this graph (its gradient has no 1 * x to fold), so the function
       stands on the graph's own nodes: compiling takes less than the graph itself at its peak (a
       private copy of every node took 1.9 times the graph) */
    CHECK_MSG(compile_bytes < graph_bytes, "compiling took %zu bytes at its peak; the graph has %zu", compile_bytes, graph_bytes);
    CHECK(gr_fn_node_count(f) == 1);
    {
        const gr_array *in[1], *out[2];
        double v = 0.5, d = 1.0, ys[N];
        in[0] = xa;
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        for (k = 0; k < N; k++) { ys[k] = v; v = sin(v) / N + v; }
        for (k = N - 1; k >= 0; k--) d *= cos(ys[k]) / N + 1;
        CHECK_NEAR(gr_array_get(out[0], 0), v, 1e-12);
        CHECK_NEAR(gr_array_get(out[1], 0), d, 1e-12);
    }
    gr_fn_free(f);
    gr_array_free(xa);
    CHECK(ac.bytes == before);
}

/* What a graph costs: W5's chain (three nodes a link: sin, mul by a constant, add) at most 380 bytes
   a link with everything the graph holds (a node is 32 bytes and its variable 32, followed by the
   input and output pointers, 256 bytes for the three; the graph's tables of variables and nodes take
   8 bytes an entry, up to twice that while they grow: 84 here), and at most 820 with its gradient.
   The layout before (56-byte nodes and variables with pointers to their parts, a name pointer in
   every variable) took 505 and 1113 here. */
TEST(test_graph_bytes_a_link) {
    enum { N = 50000 };
    size_t before = ac.bytes, fwd, with_grad;
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *c = gr_const(g, 1.0 / N), *y = x, *dy;
    int k;
    for (k = 0; k < N; k++) y = gr_add(gr_mul(gr_sin(y), c), y);
    fwd = ac.bytes - before;
    dy = gr_grad1(y, x);
    with_grad = ac.bytes - before;
    CHECK(dy != NULL);
    CHECK_MSG(fwd <= 380u * N, "the chain takes %.1f bytes a link", (double)fwd / N);
    CHECK_MSG(with_grad <= 820u * N, "the chain and its gradient take %.1f bytes a link", (double)with_grad / N);
    gr_graph_free(g);
    CHECK(ac.bytes == before);
}

/* The memory of loops, from the counting allocator's peak during a function's first call:
   - a loop whose result is read only at its last row (save_mem) keeps O(1) rows: its peak does not
     grow from T = 1,000 to T = 8,000 steps;
   - the uncheckpointed gradient keeps each state once: its peak grows by one 16-vector a step (128
     bytes; a quarter more allowed), the history the gradient's loop reads behind h0 not copied;
   - the gradient of a loop with checkpoints = c keeps at most c states: its peak grows by less than
     a tenth of what the uncheckpointed gradient's grows from T = 1,000 to 8,000, and stays below it.
   The loop: h_t = tanh(u_t w + h_{t-1}) over 16-vectors, cost sum(h_T) (the last row), the gradient
   with respect to h0 and w (u's would be T rows itself). */
static gr_status ac_mem_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = gr_tanh(gr_add(gr_mul(in[0], in[2]), in[1]));
    return GR_OK;
}
/* the peak bytes of the first call (which allocates the function's buffers; later calls allocate
   nothing), above the live bytes before it; mode 0: the last row only; 1: the gradient; 2: the
   gradient with 4 checkpoints */
static size_t ac_loop_peak(int64_t T, int mode) {
    int64_t su[2], s16 = 16;
    gr_array *ua, *h0a, *wa;
    gr_graph *g = gr_graph_new();
    gr_var *u = gr_matrix(g, GR_F64, "u"), *h0 = gr_vector(g, GR_F64, "h0"), *w = gr_vector(g, GR_F64, "w"), *res = NULL, *y, *ins[3];
    gr_var *outs[3] = { NULL, NULL, NULL };
    gr_scan_seq s;
    gr_scan_out o;
    gr_scan_opts opts;
    gr_fn *f = NULL;
    size_t peak = 0;
    int n_out = mode ? 2 : 1;
    su[0] = T; su[1] = 16;
    ua = ac_fill(GR_F64, 2, su, 0.5, 0.0); h0a = ac_fill(GR_F64, 1, &s16, 0.3, 0.0); wa = ac_fill(GR_F64, 1, &s16, 0.5, 0.2);
    s.x = u; s.n_taps = 0; s.taps = NULL;
    o.initial = h0; o.n_taps = 0; o.taps = NULL;
    memset(&opts, 0, sizeof opts);
    opts.checkpoints = mode == 2 ? 4 : 0;
    ins[0] = u; ins[1] = h0; ins[2] = w;
    CHECK_STATUS(gr_scan(ac_mem_step, NULL, 1, &s, 1, &o, 1, &w, &opts, &res), GR_OK);
    y = gr_index(res, 0, -1);
    if (mode) CHECK_STATUS(gr_grad(gr_sum(y), 2, ins + 1, outs, NULL), GR_OK);   /* (u's gradient would be T rows) */
    if (!mode) outs[0] = y;
    f = gr_function(3, ins, n_out, outs, NULL);
    CHECK(f != NULL);
    if (f) {
        const gr_array *in[3], *out[3];
        size_t base = ac.bytes;
        in[0] = ua; in[1] = h0a; in[2] = wa;
        ac.peak = ac.bytes;
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        peak = ac.peak - base;
    }
    gr_fn_free(f);
    gr_graph_free(g);
    gr_array_free(ua); gr_array_free(h0a); gr_array_free(wa);
    return peak;
}
TEST(test_loop_memory) {
    size_t last1 = ac_loop_peak(1000, 0), last8 = ac_loop_peak(8000, 0);
    size_t grad1 = ac_loop_peak(1000, 1), grad8 = ac_loop_peak(8000, 1);
    size_t ckp1 = ac_loop_peak(1000, 2), ckp8 = ac_loop_peak(8000, 2);
    fprintf(stderr, "  loop peaks (bytes, T = 1000 / 8000): last row %zu / %zu; gradient %zu / %zu; 4 checkpoints %zu / %zu\n",
            last1, last8, grad1, grad8, ckp1, ckp8);
    CHECK_MSG(last8 <= last1 + 1024, "the last row of a loop: peak %zu bytes at T = 8000, %zu at T = 1000", last8, last1);
    CHECK_MSG(grad8 > grad1 + 7000 * 16 * 8, "the gradient keeps every state: %zu -> %zu bytes", grad1, grad8);
    CHECK_MSG(grad8 - grad1 <= 7000 * 16 * 8 * 5 / 4, "the gradient keeps each state once: %zu -> %zu bytes, %.1f a step", grad1, grad8,
              (double)(grad8 - grad1) / 7000);
    CHECK_MSG(ckp8 <= ckp1 + 1024, "checkpointed gradient: %zu -> %zu bytes", ckp1, ckp8);
    CHECK_MSG(ckp8 - ckp1 < (grad8 - grad1) / 10, "checkpointed gradient: %zu -> %zu bytes (uncheckpointed %zu -> %zu)", ckp1, ckp8,
              grad1, grad8);
    CHECK(ckp8 < grad8 / 4);
}

/* a conditional's memory is its side's: ifelse(c, sum(outer(x, x)), sum(x)) and its gradient at
   n = 1000, the first call's peak above the live bytes before it: a few kilobytes while c is false,
   the n x n temporary (8 MB) once it is true */
static size_t ac_ifelse_peak(gr_fn *f, const gr_array *xa, int c) {
    gr_array *ca = ac_fill(GR_BOOL, 0, NULL, (double)c, 0.0);
    const gr_array *in[2], *out[2];
    size_t base = ac.bytes, peak;
    in[0] = xa; in[1] = ca;
    ac.peak = ac.bytes;
    CHECK_STATUS(gr_call(f, in, out), GR_OK);
    peak = ac.peak - base;
    gr_array_free(ca);
    return peak;
}
TEST(test_ifelse_memory) {
    int64_t n = 1000;
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *c = gr_scalar(g, GR_BOOL, "c"), *a = gr_sum(gr_outer(x, x)), *b = gr_sum(x), *y = NULL, *ins[2], *outs[2];
    gr_array *xa = ac_fill(GR_F64, 1, &n, 0.001, 0.0);
    gr_fn *f;
    size_t off, on, again;
    CHECK_STATUS(gr_ifelse(c, 1, &a, &b, &y), GR_OK);
    ins[0] = x; ins[1] = c;
    outs[0] = y; outs[1] = gr_grad1(y, x);
    f = gr_function(2, ins, 2, outs, NULL);
    CHECK(f != NULL);
    if (f) {
        off = ac_ifelse_peak(f, xa, 0);
        on = ac_ifelse_peak(f, xa, 1);
        again = ac_ifelse_peak(f, xa, 0);
        fprintf(stderr, "  conditional peaks (bytes): side of sum(x) %zu, side of sum(outer(x, x)) %zu, then %zu\n", off, on, again);
        CHECK_MSG(off < 64 * 1024, "the side not taken took memory: %zu bytes", off);
        CHECK_MSG(on >= (size_t)(n * n * 8), "the side of the outer product: %zu bytes", on);
        CHECK_MSG(again == 0, "a call after the buffers grew allocated %zu bytes", again);
    }
    gr_fn_free(f);
    gr_graph_free(g);
    gr_array_free(xa);
}

static const gt_case suite_alloc[] = {
    CASE(test_graph_bytes_a_link),
    CASE(test_function_keeps_only_its_program),
    CASE(test_steady_state_allocates_nothing),
    CASE(test_out_of_memory_everywhere),
    CASE(test_loop_memory),
    CASE(test_ifelse_memory),
    END_SUITE
};

int main(void) {
    gt_run(suite_alloc);
    CHECK_MSG(ac.live == 0 && ac.bytes == 0, "%ld blocks (%zu bytes) still allocated at exit", ac.live, ac.bytes);
    return gt_report("alloc_count");
}
