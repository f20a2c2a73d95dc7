/* examples/subgraph_grad.c: backpropagation layer by layer with gr_subgraph_grad (SEMANTICS 8),
   checked against one gr_grad of the whole cost.
   Build: cc -O2 examples/subgraph_grad.c -lm

     a1 = tanh(x . w1), a2 = tanh(a1 . w2)
     cost2 = sum((a2 - t)^2) + (sum w2)^2,  cost1 = (sum w1)^2
   Step 1 differentiates cost2 down to a1 (the "end"), returning d/dw2 and d/da1; step 2 starts
   from d/da1 and goes down to x, returning d/dw1. */
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"
#include <math.h>

static double det(uint64_t i) {               /* deterministic values in [-1, 1) */
    uint64_t z = i * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return 2.0 * ((double)(z >> 11) / 9007199254740992.0) - 1.0;
}

static gr_array *filled(int ndim, const int64_t *shape, uint64_t seed) {
    gr_array *a = gr_array_new(GR_F64, ndim, shape);
    int64_t i;
    for (i = 0; i < a->size; i++) gr_array_set(a, i, det(seed * 1000 + (uint64_t)i));
    return a;
}

int main(void) {
    int64_t s34[2] = { 3, 4 }, s42[2] = { 4, 2 }, n3 = 3, n2 = 2;
    gr_graph *g = gr_graph_new();
    gr_array *w1v = filled(2, s34, 1), *w2v = filled(2, s42, 2), *xv = filled(1, &n3, 3), *tv = filled(1, &n2, 4);
    gr_var *x = gr_vector(g, GR_F64, "x"), *t = gr_vector(g, GR_F64, "t");
    gr_var *w1 = gr_shared(g, w1v, "w1"), *w2 = gr_shared(g, w2v, "w2");
    gr_var *a1 = gr_tanh(gr_dot(x, w1)), *a2 = gr_tanh(gr_dot(a1, w2));
    gr_var *cost2 = gr_add(gr_sum(gr_sqr(gr_sub(a2, t))), gr_sqr(gr_sum(w2)));
    gr_var *cost1 = gr_sqr(gr_sum(w1));
    gr_var *gw2, *ga1, *gw1, *gx, *full[2], *wrt_full[2], *outs[4], *ins[2];
    gr_fn *f;
    const gr_array *in[2], *out[4];
    double diff = 0;
    int64_t i;

    /* layer 2: from cost2 down to a1 */
    if (gr_subgraph_grad(1, &w2, 1, &a1, 0, NULL, NULL, cost2, &gw2, &ga1) != GR_OK) goto fail;
    /* layer 1: start from d cost2 / d a1, add cost1, go down to x */
    if (gr_subgraph_grad(1, &w1, 1, &x, 1, &a1, &ga1, cost1, &gw1, &gx) != GR_OK) goto fail;
    /* the same through one gr_grad */
    wrt_full[0] = w2; wrt_full[1] = w1;
    if (gr_grad(gr_add(cost1, cost2), 2, wrt_full, full, NULL) != GR_OK) goto fail;

    ins[0] = x; ins[1] = t;
    outs[0] = gw2; outs[1] = gw1; outs[2] = full[0]; outs[3] = full[1];
    f = gr_function(2, ins, 4, outs, NULL);
    if (!f) goto fail;
    in[0] = xv; in[1] = tv;
    if (gr_call(f, in, out) != GR_OK) { fprintf(stderr, "error: %s\n", gr_fn_message(f)); return 1; }
    printf("d cost / d w2, layer by layer (4x2):\n");
    for (i = 0; i < out[0]->size; i += 2) printf("  %9.5f %9.5f\n", gr_array_get(out[0], i), gr_array_get(out[0], i + 1));
    for (i = 0; i < 2; i++) {
        int64_t k;
        for (k = 0; k < out[i]->size; k++) diff += fabs(gr_array_get(out[i], k) - gr_array_get(out[i + 2], k));
    }
    printf("sum |layer by layer - whole gradient| over w2 and w1 = %.3g\n", diff);
    gr_fn_free(f);
    gr_graph_free(g);
    gr_array_free(w1v); gr_array_free(w2v); gr_array_free(xv); gr_array_free(tv);
    return diff < 1e-10 ? 0 : 1;
fail:
    fprintf(stderr, "error: %s\n", gr_graph_message(g));
    return 1;
}
