/* tests/t_grad_chain.c: decision 7 (no recursion anywhere). A chain of a million nodes,
   y_{k+1} = sin(y_k) * (1/N) + y_k from a scalar x (three nodes a link, so N = 333,334 links and
   1,000,002 nodes; its gradient graph adds over two million more), is built, differentiated with
   gr_grad1, compiled and evaluated on the normal stack, and checked against a plain C forward and
   backward loop. (N = 1e6 links also works, but needs about 30 s and 4.7 GB, most of it in
   gr_function, which is too much for every run of the suite under the sanitizers.) */
#include "gsem_util.h"

#define CHAIN_N 333334

TEST(test_chain_million_nodes) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *y = x, *inv = gr_const(g, 1.0 / CHAIN_N), *d, *outs[2];
    gr_array *xa = gr_array_scalar(GR_F64, 0.5), *r[2];
    double *ys = (double *)malloc(sizeof(double) * (CHAIN_N + 1)), gb = 1.0;
    long k;
    for (k = 0; k < CHAIN_N && y; k++) y = gr_add(gr_mul(gr_sin(y), inv), y);
    CHECK(y != NULL);
    d = gr_grad1(y, x);
    CHECK_MSG(d != NULL, "%s", gr_graph_message(g));
    outs[0] = y; outs[1] = d;
    CHECK_STATUS(gs_run(1, &x, (const gr_array *const *)&xa, 2, outs, r), GR_OK);
    /* the same in plain C: forward, then dy_N/dx = prod_k (1 + cos(y_k) / N) backward */
    ys[0] = 0.5;
    for (k = 0; k < CHAIN_N; k++) ys[k + 1] = sin(ys[k]) * (1.0 / CHAIN_N) + ys[k];
    for (k = CHAIN_N - 1; k >= 0; k--) gb = gb * (cos(ys[k]) * (1.0 / CHAIN_N)) + gb;
    CHECK(r[0] && r[1]);
    if (r[0] && r[1]) {
        CHECK_MSG(fabs(gr_array_get(r[0], 0) - ys[CHAIN_N]) <= 1e-9 * fabs(ys[CHAIN_N]), "y_N %.17g vs %.17g",
                  gr_array_get(r[0], 0), ys[CHAIN_N]);
        CHECK_MSG(fabs(gr_array_get(r[1], 0) - gb) <= 1e-9 * fabs(gb), "dy_N/dx %.17g vs %.17g", gr_array_get(r[1], 0), gb);
        CHECK(gb > 1.5);                              /* a long way from the identity */
    }
    gr_array_free(r[0]); gr_array_free(r[1]);
    gr_array_free(xa);
    free(ys);
    gr_graph_free(g);
}

SUITE(suite_grad_chain) = { CASE(test_chain_million_nodes), END_SUITE };
