/* examples/least_squares.c: linear least squares two ways, which must agree.
   Build: cc -O2 examples/least_squares.c -lm

     cost(w) = mean((X w - y)^2)                            X (N x D), y (N)
     1. gradient descent: w := w - lr dcost/dw, one gr_call per step (w is a shared variable);
     2. the normal equations: w* = solve(X^T X, X^T y) with gr_solve.
   The program checks that both give the same w to 1e-9 (relative), that the gradient vanishes at
   w*, and that w* recovers the hidden coefficients up to the noise; it exits 0 only then. */
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"

#define N 300
#define D 6
#define STEPS 400

/* deterministic data in [-1, 1) */
static double det(uint64_t i) {
    uint64_t z = i * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return 2.0 * ((double)(z >> 11) / 9007199254740992.0) - 1.0;
}

int main(void) {
    static double xs[N * D], ys[N];
    double true_w[D], w_gd[D], w_ne[D], err = 0, scale = 0, grad_ne = 0, fit_err = 0;
    int64_t xshape[2] = { N, D }, n = N, d = D;
    gr_graph *g = gr_graph_new();
    gr_array *w0 = gr_array_new(GR_F64, 1, &d), *xa, *ya;
    gr_var *X = gr_matrix(g, GR_F64, "X"), *y = gr_vector(g, GR_F64, "y"), *w = gr_shared(g, w0, "w");
    gr_var *cost = gr_mean(gr_sqr(gr_sub(gr_matmul(X, w), y)));
    gr_var *gw = gr_grad1(cost, w);
    gr_var *Xt = gr_transpose(X);
    gr_var *w_star = gr_solve(gr_matmul(Xt, X), gr_matmul(Xt, y));     /* the normal equations */
    gr_var *wv = gr_vector(g, GR_F64, "w_at"), *ins[3], *outs[2];
    gr_var *g_at;                                                     /* the gradient at any w */
    gr_update upd;
    gr_fn_opts fo;
    gr_fn *step = NULL, *normal = NULL, *grad_at = NULL;
    const gr_array *in[3], *out[2];
    gr_array *wa = NULL;
    int i, j, k, ok = 1;

    for (j = 0; j < D; j++) true_w[j] = 2.0 * det(5000 + (uint64_t)j);
    for (i = 0; i < N; i++) {
        double s = 0;
        for (j = 0; j < D; j++) { xs[i * D + j] = det((uint64_t)(i * D + j)); s += xs[i * D + j] * true_w[j]; }
        ys[i] = s + 0.05 * det(9000 + (uint64_t)i);
    }
    xa = gr_array_from(GR_F64, 2, xshape, xs);
    ya = gr_array_from(GR_F64, 1, &n, ys);

    /* 1. gradient descent: one call computes the cost and moves w */
    upd.shared = w;
    upd.value = gr_sub(w, gr_mul(gr_const(g, 1.0), gw));
    memset(&fo, 0, sizeof fo);
    fo.updates = &upd;
    fo.n_updates = 1;
    ins[0] = X; ins[1] = y;
    step = gr_function(2, ins, 1, &cost, &fo);
    /* 2. the normal equations, and the gradient at a given w (the cost rebuilt on an input) */
    normal = gr_function(2, ins, 1, &w_star, NULL);
    g_at = gr_grad1(gr_mean(gr_sqr(gr_sub(gr_matmul(X, wv), y))), wv);
    ins[2] = wv;
    outs[0] = g_at;
    grad_at = gr_function(3, ins, 1, outs, NULL);
    if (!step || !normal || !grad_at) {
        fprintf(stderr, "building failed: %s\n", gr_graph_message(g));
        return 1;
    }

    in[0] = xa; in[1] = ya;
    for (k = 0; k < STEPS; k++) {
        if (gr_call(step, in, out) != GR_OK) { fprintf(stderr, "step %d: %s\n", k, gr_fn_message(step)); return 1; }
        if (k % 100 == 0) printf("step %3d  cost %.10f\n", k, gr_array_get(out[0], 0));
    }
    for (j = 0; j < D; j++) w_gd[j] = gr_array_get(gr_shared_get(w), j);

    if (gr_call(normal, in, out) != GR_OK) { fprintf(stderr, "normal equations: %s\n", gr_fn_message(normal)); return 1; }
    for (j = 0; j < D; j++) w_ne[j] = gr_array_get(out[0], j);

    wa = gr_array_from(GR_F64, 1, &d, w_ne);
    in[2] = wa;
    if (gr_call(grad_at, in, out) != GR_OK) { fprintf(stderr, "gradient: %s\n", gr_fn_message(grad_at)); return 1; }
    for (j = 0; j < D; j++) {
        if (fabs(gr_array_get(out[0], j)) > grad_ne) grad_ne = fabs(gr_array_get(out[0], j));
        if (fabs(w_gd[j] - w_ne[j]) > err) err = fabs(w_gd[j] - w_ne[j]);
        if (fabs(w_ne[j]) > scale) scale = fabs(w_ne[j]);
        if (fabs(w_ne[j] - true_w[j]) > fit_err) fit_err = fabs(w_ne[j] - true_w[j]);
    }
    printf("\n   j   gradient descent   normal equations   hidden\n");
    for (j = 0; j < D; j++) printf("%4d %18.12f %18.12f %8.4f\n", j, w_gd[j], w_ne[j], true_w[j]);
    printf("\nmax |w_gd - w_ne| / max |w_ne| = %.3g\n", err / scale);
    printf("max |dcost/dw| at w_ne          = %.3g\n", grad_ne);
    printf("max |w_ne - hidden|             = %.3g (noise 0.05)\n", fit_err);

    if (!(err <= 1e-9 * scale)) { printf("FAILED: gradient descent and the normal equations disagree\n"); ok = 0; }
    if (!(grad_ne <= 1e-12)) { printf("FAILED: the gradient does not vanish at the normal-equations solution\n"); ok = 0; }
    if (!(fit_err <= 0.05)) { printf("FAILED: the fit is far from the hidden coefficients\n"); ok = 0; }
    if (ok) printf("least_squares: ok\n");

    gr_fn_free(step); gr_fn_free(normal); gr_fn_free(grad_at);
    gr_array_free(w0); gr_array_free(xa); gr_array_free(ya); gr_array_free(wa);
    gr_graph_free(g);
    return ok ? 0 : 1;
}
