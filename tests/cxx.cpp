// tests/cxx.cpp: the whole header, implementation included, compiled as C++.
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"
#include <cmath>
#include <cstdio>

int main() {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F32, "x");
    gr_var *y = gr_sum(gr_mul(gr_tanh(x), gr_const(g, 2.0)));
    gr_fn *f = gr_function(1, &x, 1, &y, NULL);
    float xs[4] = { 0.1f, -0.5f, 1.5f, 2.0f };
    int64_t n = 4;
    gr_array *xa = gr_array_from(GR_F32, 1, &n, xs);
    const gr_array *in[1] = { xa };
    const gr_array *out[1] = { NULL };
    int bad = 0;
    if (!f || gr_call(f, in, out) != GR_OK) bad = 1;
    else {
        double want = 0;
        for (int i = 0; i < 4; i++) want += 2.0 * std::tanh((double)xs[i]);
        if (out[0]->dtype != GR_F32 || std::fabs(gr_array_get(out[0], 0) - want) > 1e-5) bad = 1;
    }
    gr_array_free(xa);
    gr_fn_free(f);
    gr_graph_free(g);
    std::printf("%s\n", bad ? "C++ build: FAILED" : "C++ build: 1 passed, 0 failed");
    return bad;
}
