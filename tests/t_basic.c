/* tests/t_basic.c: a first end-to-end check. */
#include "harness.h"

TEST(test_add_eval) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    gr_var *y = gr_mul(gr_add(x, gr_const(g, 1.0)), gr_sin(x));
    gr_fn *f = gr_function(1, &x, 1, &y, NULL);
    double xs[3] = { 0.5, 1.0, -2.0 };
    int64_t n = 3;
    gr_array *xa = gr_array_from(GR_F64, 1, &n, xs);
    const gr_array *in[1], *out[1];
    int i;
    CHECK(f != NULL);
    in[0] = xa;
    CHECK_STATUS(gr_call(f, in, out), GR_OK);
    for (i = 0; i < 3; i++) CHECK_NEAR(gr_array_get(out[0], i), (xs[i] + 1.0) * sin(xs[i]), 1e-15);
    gr_array_free(xa);
    gr_fn_free(f);
    gr_graph_free(g);
}

SUITE(suite_basic) = { CASE(test_add_eval), END_SUITE };
