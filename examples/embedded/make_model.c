/* examples/embedded/make_model.c: the host half of the embedded example (README.md, "Embedding").
   Build and run from the repository root:
       cc -O2 examples/embedded/make_model.c -lm -o make_model && ./make_model DIR
   It builds the cost of a small model-predictive controller and its gradient with respect to the
   controls with gradient.h, checks both against plain C, and writes them with gr_fn_emit_c as
   DIR/mpc.c (DIR: "." when not given), with DIR/mpc.h for examples/embedded/main.c, the program
   that runs on the microcontroller without gradient.h.

   The model: a unit mass on a spring (k = 4) with a damper (c = 0.4), state x = (position,
   velocity), one force u; semi-implicit Euler steps of dt = 0.1 s make x[k+1] = A x[k] + B u[k].
   Over a horizon of N = 20 steps from x[0] = x0 the cost of the controls u[0..N) is
       J(x0, u) = sum_{k=1..N} x[k]^T Q x[k] + r sum_k u[k]^2,     Q = diag(10, 1), r = 0.1,
   in single precision (the Cortex-M4's FPU), and the emitted function computes J and dJ/du.
   Checks (exit 1 on a failure): J and dJ/du of gr_call against a plain-C rollout in double and its
   adjoint recursion, that recursion against central differences of the plain-C cost.
   Built with -DEMBED_CHECK -IDIR and linked with DIR/mpc.c (make test-embedded), it emits nothing
   and checks instead that the emitted mpc() gives gr_call's values bit for bit. */
#define GRADIENT_IMPLEMENTATION
#include "../../gradient.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#ifdef EMBED_CHECK
#include "mpc.h"
#endif

enum { N = 20, TRIALS = 5 };
static const double DT = 0.1, SPRING = 4, DAMPER = 0.4, Q0 = 10, Q1 = 1, R = 0.1;

/* the semi-implicit Euler step: v += dt (-k p - c v + u), then p += dt v */
static void dynamics(double A[2][2], double B[2]) {
    A[0][0] = 1 - SPRING * DT * DT; A[0][1] = DT * (1 - DAMPER * DT);
    A[1][0] = -SPRING * DT;         A[1][1] = 1 - DAMPER * DT;
    B[0] = DT * DT;                 B[1] = DT;
}

/* the truth in double: J by the rollout; its gradient by the adjoint (costate) recursion
   lambda[k] = 2 Q x[k] + A^T lambda[k+1], dJ/du[k] = 2 r u[k] + B^T lambda[k+1] */
static double cost_ref(const double *x0, const double *u, double *grad) {
    double A[2][2], B[2], x[N + 1][2], lam[2] = { 0, 0 }, J = 0;
    int k;
    dynamics(A, B);
    x[0][0] = x0[0]; x[0][1] = x0[1];
    for (k = 0; k < N; k++) {
        x[k + 1][0] = A[0][0] * x[k][0] + A[0][1] * x[k][1] + B[0] * u[k];
        x[k + 1][1] = A[1][0] * x[k][0] + A[1][1] * x[k][1] + B[1] * u[k];
        J += Q0 * x[k + 1][0] * x[k + 1][0] + Q1 * x[k + 1][1] * x[k + 1][1] + R * u[k] * u[k];
    }
    for (k = N - 1; grad && k >= 0; k--) {
        double a = 2 * Q0 * x[k + 1][0] + lam[0], b = 2 * Q1 * x[k + 1][1] + lam[1];
        grad[k] = 2 * R * u[k] + B[0] * a + B[1] * b;
        lam[0] = A[0][0] * a + A[1][0] * b;
        lam[1] = A[0][1] * a + A[1][1] * b;
    }
    return J;
}

/* the same cost as a graph: inputs x0 (2) and u (N), outputs J and dJ/du, float32 */
static gr_fn *build(gr_graph *g) {
    double A[2][2], B[2];
    float af[4], bf[2], qf[2] = { (float)Q0, (float)Q1 };
    int64_t s22[2] = { 2, 2 }, two = 2;
    gr_array *aa, *ba, *qa;
    gr_var *x0 = gr_vector(g, GR_F32, "x0"), *u = gr_vector(g, GR_F32, "u"), *a, *b, *q, *x, *J, *io[2], *out[2];
    gr_fn *f;
    int k;
    dynamics(A, B);
    af[0] = (float)A[0][0]; af[1] = (float)A[0][1]; af[2] = (float)A[1][0]; af[3] = (float)A[1][1];
    bf[0] = (float)B[0]; bf[1] = (float)B[1];
    aa = gr_array_from(GR_F32, 2, s22, af); ba = gr_array_from(GR_F32, 1, &two, bf); qa = gr_array_from(GR_F32, 1, &two, qf);
    a = gr_constant(g, aa); b = gr_constant(g, ba); q = gr_constant(g, qa);
    gr_array_free(aa); gr_array_free(ba); gr_array_free(qa);
    J = gr_mul(gr_const(g, R), gr_sum(gr_sqr(u)));
    for (x = x0, k = 0; k < N; k++) {
        x = gr_add(gr_matmul(a, x), gr_mul(b, gr_index(u, 0, k)));     /* x[k+1] = A x[k] + B u[k] */
        J = gr_add(J, gr_sum(gr_mul(q, gr_sqr(x))));                    /* + x^T Q x, Q diagonal */
    }
    io[0] = x0; io[1] = u;
    out[0] = J; out[1] = gr_grad1(J, u);
    f = gr_function(2, io, 2, out, NULL);
    if (!f) fprintf(stderr, "make_model: %s\n", gr_graph_message(g));
    return f;
}

/* deterministic values in [-1, 1) */
static double det(unsigned i) {
    unsigned long long z = i * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return 2.0 * ((double)(z >> 11) / 9007199254740992.0) - 1.0;
}

#ifdef EMBED_CHECK
/* the emitted function against gr_call, bit for bit */
static int check_emitted(const float *x0, const float *u, const gr_array *J, const gr_array *dJ) {
    static double work[mpc_WORK_BYTES / sizeof(double) + 1];
    float cost = -1, grad[N];
    const void *in[2];
    void *out[2];
    int st;
    in[0] = x0; in[1] = u; out[0] = &cost; out[1] = grad;
    st = mpc(in, out, work);
    if (st != 0 || memcmp(&cost, J->data, sizeof cost) != 0 || memcmp(grad, dJ->data, sizeof grad) != 0) {
        printf("emitted mpc() returned %d, J = %.9g (gr_call %.9g): not gr_call's values\n", st, cost, ((const float *)J->data)[0]);
        return 0;
    }
    return 1;
}
#else
/* DIR/mpc.c by gr_fn_emit_c, and DIR/mpc.h: the horizon, the prototype and mpc_WORK_BYTES */
static int emit(gr_fn *f, const char *dir) {
    char path[1024], line[256];
    int64_t two = 2, n = N;
    gr_array *x0 = gr_array_new(GR_F32, 1, &two), *u = gr_array_new(GR_F32, 1, &n);
    const gr_array *example[2];
    gr_emit_opts opts;
    gr_status st = GR_ERR_VALUE;
    FILE *c, *h;
    example[0] = x0; example[1] = u;
    opts.name = "mpc";
    snprintf(path, sizeof path, "%s/mpc.c", dir);
    if ((c = fopen(path, "w")) != NULL) { st = gr_fn_emit_c(f, example, c, &opts); fclose(c); }
    gr_array_free(x0); gr_array_free(u);
    if (st != GR_OK) { printf("gr_fn_emit_c: %s (%s)\n", gr_status_string(st), gr_fn_message(f)); return 0; }
    snprintf(line, sizeof line, "%s/mpc.h", dir);
    if (!(c = fopen(path, "r")) || !(h = fopen(line, "w"))) { if (c) fclose(c); printf("cannot write %s\n", line); return 0; }
    fprintf(h, "/* mpc.h: written by examples/embedded/make_model.c for the emitted mpc.c */\n");
    fprintf(h, "#define MPC_N %d   /* the horizon: inputs x0[2], u[MPC_N]; outputs J, dJ/du[MPC_N] (float) */\n", N);
    while (fgets(line, sizeof line, c)) if (!strncmp(line, "#define mpc_WORK_BYTES ", 23)) fputs(line, h);
    fprintf(h, "int mpc(const void *const *inputs, void *const *outputs, void *work);\n");
    fclose(c);
    return fclose(h) == 0;
}
#endif

int main(int argc, char **argv) {
    gr_graph *g = gr_graph_new();
    gr_fn *f = build(g);
    int64_t two = 2, n = N;
    gr_array *xa = gr_array_new(GR_F32, 1, &two), *ua = gr_array_new(GR_F32, 1, &n);
    const gr_array *in[2], *out[2];
    double err_J = 0, err_g = 0, err_fd = 0;
    int t, k, ok = f != NULL;
    in[0] = xa; in[1] = ua;
    for (t = 0; ok && t < TRIALS; t++) {
        float *x0 = (float *)xa->data, *u = (float *)ua->data;
        double x0d[2], ud[N], gd[N], gmax = 0, J;
        x0d[0] = x0[0] = (float)det(100u * (unsigned)t);
        x0d[1] = x0[1] = (float)det(100u * (unsigned)t + 1);
        for (k = 0; k < N; k++) ud[k] = u[k] = (float)det(100u * (unsigned)t + 2 + (unsigned)k);
        if (gr_call(f, in, out) != GR_OK) { printf("gr_call: %s\n", gr_fn_message(f)); ok = 0; break; }
        J = cost_ref(x0d, ud, gd);
        err_J = fmax(err_J, fabs(((const float *)out[0]->data)[0] - J) / J);
        for (k = 0; k < N; k++) gmax = fmax(gmax, fabs(gd[k]));
        for (k = 0; k < N; k++) {
            double h = 1e-5, up[N], um[N];
            memcpy(up, ud, sizeof ud); memcpy(um, ud, sizeof ud);
            up[k] += h; um[k] -= h;
            err_g = fmax(err_g, fabs(((const float *)out[1]->data)[k] - gd[k]) / gmax);
            err_fd = fmax(err_fd, fabs((cost_ref(x0d, up, NULL) - cost_ref(x0d, um, NULL)) / (2 * h) - gd[k]) / gmax);
        }
#ifdef EMBED_CHECK
        ok = check_emitted(x0, u, out[0], out[1]);
#endif
    }
    if (ok) {
        printf("MPC cost over %d steps and its gradient, %d random (x0, u): gr_call against the plain-C rollout\n", N, TRIALS);
        printf("  J: %.1e, dJ/du: %.1e (relative, float32); the adjoint against central differences: %.1e\n", err_J, err_g, err_fd);
        ok = err_J < 1e-5 && err_g < 1e-5 && err_fd < 1e-7;
    }
#ifdef EMBED_CHECK
    if (ok) printf("the emitted mpc() gives gr_call's J and dJ/du bit for bit\n");
#else
    if (ok && (ok = emit(f, argc > 1 ? argv[1] : ".")) != 0)
        printf("wrote %s/mpc.c (%zu nodes) and %s/mpc.h\n", argc > 1 ? argv[1] : ".", gr_fn_node_count(f), argc > 1 ? argv[1] : ".");
#endif
    (void)argc; (void)argv;
    gr_array_free(xa); gr_array_free(ua); gr_fn_free(f); gr_graph_free(g);
    return ok ? 0 : 1;
}
