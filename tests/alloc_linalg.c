/* tests/alloc_linalg.c: the linear algebra (ops/linalg.c, ops/dot.c) through the counting
   allocator, as tests/alloc_count.c does for elementwise ops, reductions, dot and softmax:
     1. steady state: calls 3..10 of a function computing every new op, their gradients, a
        Jacobian (batching rules) and an R-op allocate nothing, and give the values of call 1;
     2. out of memory: the same with the N-th allocation failing, for every N; each run ends
        cleanly (GR_ERR_NOMEM or success) and frees everything.
   `make test-alloc` runs it (with tests/alloc_hook.h's allocator). */
#include "alloc_hook.h"

#define AL_CALLS 10
#define AL_OUTS 12

static gr_array *al_fill(int ndim, const int64_t *shape, double scale, double diag) {
    gr_array *a = gr_array_new(GR_F64, ndim, shape);
    int64_t i;
    for (i = 0; a && i < a->size; i++) gr_array_set(a, i, scale * sin(1.0 + 0.7 * (double)i));
    if (a && diag != 0) for (i = 0; i < shape[0]; i++) gr_array_set(a, i * shape[0] + i, gr_array_get(a, i * shape[0] + i) + diag);
    return a;
}

/* builds and calls the function; returns the number of good calls. inject: allocations may fail */
static int al_scenario(int inject, gr_array *const *arrays, gr_array **first) {
    gr_graph *g;
    gr_var *A, *b, *B, *X, *W, *ins[5], *outs[AL_OUTS], *cost, *wrt[2], *grads[2], *jac = NULL, *rop = NULL, *V;
    gr_fn *f;
    int k, good = 0, failed_calls = 0, i;
    if (inject) { ac.armed = 1; ac.armed_calls = 0; }
    g = gr_graph_new();
    A = gr_matrix(g, GR_F64, "A");
    b = gr_vector(g, GR_F64, "b");
    B = gr_matrix(g, GR_F64, "B");
    X = gr_tensor(g, GR_F64, 3, NULL, "X");
    W = gr_matrix(g, GR_F64, "W");
    ins[0] = A; ins[1] = b; ins[2] = B; ins[3] = X; ins[4] = W;
    outs[0] = gr_det(A);
    outs[1] = gr_logdet(A);
    outs[2] = gr_matrix_inverse(A);
    outs[3] = gr_solve(A, b);
    outs[4] = gr_cholesky(gr_dot(A, gr_transpose(A)));
    outs[5] = gr_trace(B);
    outs[6] = gr_matmul(X, W);
    outs[7] = gr_tensordot(X, W, 1, (const int[1]){ 2 }, (const int[1]){ 0 });
    cost = gr_add(gr_add(outs[1], gr_sum(outs[3])), gr_add(gr_sum(outs[4]), gr_sum(gr_solve(A, B))));
    wrt[0] = A; wrt[1] = B;
    outs[8] = outs[9] = outs[10] = outs[11] = NULL;
    if (cost && gr_grad(cost, 2, wrt, grads, NULL) == GR_OK) { outs[8] = grads[0]; outs[9] = grads[1]; }
    if (outs[3] && gr_jacobian(outs[3], 1, &b, &jac, NULL) == GR_OK) outs[10] = jac;
    V = gr_transpose(A);
    if (outs[0] && gr_rop(1, &outs[0], 1, &A, &V, &rop, NULL) == GR_OK) outs[11] = rop;
    f = gr_function(5, ins, AL_OUTS, outs, NULL);
    if (!inject) CHECK_MSG(f != NULL, "build: %s", gr_graph_message(g));
    else if (!f) {
        CHECK_MSG(ac.failed, "a build failed without an allocation failing: %s", gr_graph_message(g));
        if (g) CHECK_MSG(gr_graph_status(g) == GR_ERR_NOMEM, "build failed with %s: %s", gr_status_string(gr_graph_status(g)),
                        gr_graph_message(g));
    }
    gr_graph_free(g);
    for (k = 0; f && k < AL_CALLS; k++) {
        const gr_array *out[AL_OUTS];
        long before = ac.calls;
        gr_status st = gr_call(f, (const gr_array *const *)arrays, out);
        if (!inject) {
            CHECK_MSG(st == GR_OK, "call %d: %s", k + 1, gr_fn_message(f));
            if (k >= 2) CHECK_MSG(ac.calls == before, "call %d allocated %ld times", k + 1, ac.calls - before);
        } else if (st != GR_OK) {
            CHECK_MSG(st == GR_ERR_NOMEM, "call failed with %s: %s", gr_status_string(st), gr_fn_message(f));
            CHECK_MSG(++failed_calls == 1, "more than one failed call");
        }
        if (st != GR_OK) continue;
        good++;
        for (i = 0; i < AL_OUTS; i++) {
            if (!first[i]) { if (!inject) first[i] = gr_array_copy(out[i]); continue; }
            CHECK_MSG(out[i]->size == first[i]->size && memcmp(out[i]->data, first[i]->data, (size_t)out[i]->size * 8) == 0,
                     "output %d of call %d differs from the first call's", i, k + 1);
        }
    }
    ac.armed = 0;
    gr_fn_free(f);
    return good;
}

static gr_array *al_arrays[5], *al_first[AL_OUTS];

TEST(test_linalg_steady_state) {
    int64_t s44[2] = { 4, 4 }, s4 = 4, s42[2] = { 4, 2 }, s234[3] = { 2, 3, 4 }, s45[2] = { 4, 5 };
    long live;
    al_arrays[0] = al_fill(2, s44, 1.0, 4.0);
    al_arrays[1] = al_fill(1, &s4, 1.0, 0);
    al_arrays[2] = al_fill(2, s42, 0.5, 0);
    al_arrays[3] = al_fill(3, s234, 1.0, 0);
    al_arrays[4] = al_fill(2, s45, 1.0, 0);
    memset(al_first, 0, sizeof al_first);
    live = ac.live;
    CHECK_MSG(al_scenario(0, al_arrays, al_first) == AL_CALLS, "steady state: not every call succeeded");
    CHECK_MSG(ac.live == live + AL_OUTS, "steady state: %ld blocks left allocated", ac.live - live - AL_OUTS);
}

/* against the values of the steady state (al_first) */
TEST(test_linalg_out_of_memory) {
    long n;
    int i;
    for (n = 0; n < 200000; n++) {
        long before = ac.live;
        int checks = gt.checks_failed, good;
        ac.fail_at = n;
        ac.failed = 0;
        good = al_scenario(1, al_arrays, al_first);
        CHECK_MSG(ac.live == before, "allocation %ld failing: %ld blocks leaked", n, ac.live - before);
        if (gt.checks_failed != checks) { fprintf(stderr, "  (allocation %ld failing)\n", n); if (gt.checks_failed > 10) break; }
        if (!ac.failed) { CHECK_MSG(good == AL_CALLS, "%d good calls without a failure", good); break; }
    }
    ac.fail_at = -1;
    printf("alloc_linalg: out of memory: %ld allocations made to fail in turn\n", n);
    for (i = 0; i < AL_OUTS; i++) gr_array_free(al_first[i]);
    for (i = 0; i < 5; i++) gr_array_free(al_arrays[i]);
}

static const gt_case suite_alloc_linalg[] = { CASE(test_linalg_steady_state), CASE(test_linalg_out_of_memory), END_SUITE };

int main(void) {
    gt_run(suite_alloc_linalg);
    CHECK_MSG(ac.live == 0, "%ld blocks still allocated at exit", ac.live);
    return gt_report("alloc_linalg");
}
