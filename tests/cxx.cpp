// tests/cxx.cpp: the whole header, implementation included, compiled as C++ (with the runner).
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"
#define GT_RUNNER_IMPLEMENTATION
#include "runner.h"

TEST(test_cxx_tanh_f32) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F32, "x");
    gr_var *y = gr_sum(gr_mul(gr_tanh(x), gr_const(g, 2.0)));
    gr_fn *f = gr_function(1, &x, 1, &y, NULL);
    float xs[4] = { 0.1f, -0.5f, 1.5f, 2.0f };
    int64_t n = 4;
    gr_array *xa = gr_array_from(GR_F32, 1, &n, xs);
    const gr_array *in[1] = { xa };
    const gr_array *out[1] = { NULL };
    CHECK(f != NULL);
    if (f) {
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        if (out[0]) {
            double want = 0;
            for (int i = 0; i < 4; i++) want += 2.0 * tanh((double)xs[i]);
            CHECK_EQ_INT(out[0]->dtype, GR_F32);
            CHECK(fabs(gr_array_get(out[0], 0) - want) <= 1e-5);
        }
    }
    gr_array_free(xa);
    gr_fn_free(f);
    gr_graph_free(g);
}

static const gt_case suite_cxx[] = { CASE(test_cxx_tanh_f32), END_SUITE };

int main() {
    gt_run(suite_cxx);
    return gt_report("C++ build");
}
