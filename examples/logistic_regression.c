/* examples/logistic_regression.c: logistic regression trained by gradient descent, with gr_grad
   and shared variables updated by the compiled function after every call.
   Build: cc -O2 examples/logistic_regression.c -lm

     p = sigmoid(X w + b),  cost = mean(cross-entropy(p, y)) + 0.01 sum(w^2)
     w := w - 0.5 dcost/dw,  b := b - 0.5 dcost/db  (one gr_call per step) */
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"

#define N 400
#define FEATS 20

static double det(uint64_t i) {
    uint64_t z = i * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return 2.0 * ((double)(z >> 11) / 9007199254740992.0) - 1.0;
}

int main(void) {
    static double xs[N * FEATS], ys[N], true_w[FEATS];
    int64_t xshape[2] = { N, FEATS }, n = N, nf = FEATS;
    gr_graph *g = gr_graph_new();
    gr_array *w0 = gr_array_new(GR_F64, 1, &nf), *b0 = gr_array_scalar(GR_F64, 0.0), *xa, *ya;
    gr_var *X = gr_matrix(g, GR_F64, "X"), *y = gr_vector(g, GR_F64, "y");
    gr_var *w = gr_shared(g, w0, "w"), *b = gr_shared(g, b0, "b");
    gr_var *z = gr_add(gr_dot(X, w), b);
    /* cross-entropy of sigmoid(z), written stably: y softplus(-z) + (1 - y) softplus(z) */
    gr_var *xent = gr_add(gr_mul(y, gr_softplus(gr_neg(z))), gr_mul(gr_sub(gr_const(g, 1.0), y), gr_softplus(z)));
    gr_var *cost = gr_add(gr_mean(xent), gr_mul(gr_const(g, 0.01), gr_sum(gr_sqr(w))));
    gr_var *correct = gr_mean(gr_eq(gr_gt(z, gr_const(g, 0.0)), gr_gt(y, gr_const(g, 0.5))));
    gr_var *params[2], *grads[2], *ins[2], *outs[2];
    gr_update upd[2];
    gr_fn_opts fo;
    gr_fn *train;
    const gr_array *in[2], *out[2];
    int i, j, step;

    for (j = 0; j < FEATS; j++) true_w[j] = det(7000 + (uint64_t)j);
    for (i = 0; i < N; i++) {                  /* labels from a hidden linear rule, with noise */
        double s = 0;
        for (j = 0; j < FEATS; j++) { xs[i * FEATS + j] = det((uint64_t)(i * FEATS + j)); s += xs[i * FEATS + j] * true_w[j]; }
        ys[i] = s + 0.3 * det(9000 + (uint64_t)i) > 0 ? 1.0 : 0.0;
    }
    xa = gr_array_from(GR_F64, 2, xshape, xs);
    ya = gr_array_from(GR_F64, 1, &n, ys);

    params[0] = w; params[1] = b;
    if (gr_grad(cost, 2, params, grads, NULL) != GR_OK) goto fail;
    upd[0].shared = w; upd[0].value = gr_sub(w, gr_mul(gr_const(g, 0.5), grads[0]));
    upd[1].shared = b; upd[1].value = gr_sub(b, gr_mul(gr_const(g, 0.5), grads[1]));
    memset(&fo, 0, sizeof fo);
    fo.updates = upd;
    fo.n_updates = 2;
    ins[0] = X; ins[1] = y; outs[0] = cost; outs[1] = correct;
    train = gr_function(2, ins, 2, outs, &fo);
    if (!train) goto fail;
    gr_graph_free(g);                          /* the function no longer needs the graph */

    in[0] = xa; in[1] = ya;
    for (step = 0; step <= 300; step++) {
        if (gr_call(train, in, out) != GR_OK) { fprintf(stderr, "error: %s\n", gr_fn_message(train)); return 1; }
        if (step % 50 == 0)
            printf("step %3d  cost %.5f  accuracy %.3f\n", step, gr_array_get(out[0], 0), gr_array_get(out[1], 0));
    }
    gr_fn_free(train);
    gr_array_free(w0); gr_array_free(b0); gr_array_free(xa); gr_array_free(ya);
    return 0;
fail:
    fprintf(stderr, "error: %s\n", gr_graph_message(g));
    return 1;
}
