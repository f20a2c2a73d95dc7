/* bench/peers/ref.c: the results gradient.h gives on the rows bench/peers/run.sh sets beside NumPy,
   PyTorch and ADOL-C, written as raw float64 files (little-endian, row-major) into the directory
   argv[1], for each peer to print its largest difference from them. The graphs are those of
   bench/bench.c (W1-W4 from bench/workloads.h); bench.c checks them against its hand-written C.
   Files: <row>.f64, one per output (names below). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define GRADIENT_IMPLEMENTATION
#include "../../gradient.h"
#include "../workloads.h"

static const char *g_dir;
static int g_fail;

static void save(const char *name, const gr_array *a) {
    char path[512];
    FILE *f;
    int64_t i;
    snprintf(path, sizeof path, "%s/%s.f64", g_dir, name);
    f = fopen(path, "wb");
    if (!f || !a) { fprintf(stderr, "peers-ref: cannot write %s\n", path); g_fail = 1; if (f) fclose(f); return; }
    for (i = 0; i < a->size; i++) { double v = gr_array_get(a, i); fwrite(&v, sizeof v, 1, f); }
    fclose(f);
}
/* calls f on in and saves its n outputs under names[] */
static void run(gr_fn *f, const gr_array *const *in, int n, const char *const *names) {
    const gr_array *out[8];
    int i;
    if (!f || gr_call(f, in, out) != GR_OK) { fprintf(stderr, "peers-ref: %s: %s\n", names[0], f ? gr_fn_message(f) : "no function"); g_fail = 1; return; }
    for (i = 0; i < n; i++) save(names[i], out[i]);
}

static void ref_w1(int f32) {
    static const char *const n64[5] = { "w1_f64_cost", "w1_f64_dW1", "w1_f64_db1", "w1_f64_dW2", "w1_f64_db2" };
    static const char *const n32[5] = { "w1_f32_cost", "w1_f32_dW1", "w1_f32_db1", "w1_f32_dW2", "w1_f32_db2" };
    gr_graph *g = gr_graph_new();
    gr_var *ins[6], *outs[5];
    gr_array *in[6];
    gr_fn *f = NULL;
    int i;
    w1_data(f32 ? GR_F32 : GR_F64, in, NULL);
    if (w1_graph(g, f32 ? GR_F32 : GR_F64, ins, outs) == GR_OK) f = gr_function(6, ins, 5, outs, NULL);
    run(f, (const gr_array *const *)in, 5, f32 ? n32 : n64);
    gr_fn_free(f);
    gr_graph_free(g);
    for (i = 0; i < 6; i++) gr_array_free(in[i]);
}
static void ref_w2(void) {
    static const char *const names[2] = { "w2_cost", "w2_grad" };
    gr_graph *g = gr_graph_new();
    gr_fn *fc = NULL, *fg = NULL;
    gr_array *x = w2_data();
    w2_functions(g, &fc, &fg);
    run(fg, (const gr_array *const *)&x, 2, names);
    gr_fn_free(fc); gr_fn_free(fg);
    gr_graph_free(g);
    gr_array_free(x);
}
static void ref_w3(void) {
    static const char *const ng[1] = { "w3_grad" }, *const nhv[1] = { "w3_hv" }, *const nh[1] = { "w3_hessian" }, *const ncg[2] = { "w3_cost", "w3_grad2" };
    gr_graph *g = gr_graph_new();
    gr_fn *f[3], *fcg = NULL;
    gr_array *in[3];
    const gr_array *xv[2];
    gr_var *vx, *outs[2];
    int k;
    w3_data(in);
    w3_functions(g, f, 0);
    xv[0] = in[0]; xv[1] = in[1];
    run(f[0], xv, 1, ng);
    run(f[1], xv, 1, nhv);
    xv[0] = in[2];
    run(f[2], xv, 1, nh);
    vx = gr_vector(g, GR_F64, "x");                      /* cost and gradient from one function */
    outs[0] = rosenbrock(g, vx);
    outs[1] = gr_grad1(outs[0], vx);
    fcg = gr_function(1, &vx, 2, outs, NULL);
    xv[0] = in[0];
    run(fcg, xv, 2, ncg);
    for (k = 0; k < 3; k++) { gr_fn_free(f[k]); gr_array_free(in[k]); }
    gr_fn_free(fcg);
    gr_graph_free(g);
}
static void ref_w4(void) {
    static const char *const names[1] = { "w4_jacobian" };
    gr_graph *g = gr_graph_new();
    gr_array *in[3];
    gr_fn *f;
    int i;
    w4_data(in);
    f = w4_function(g);
    run(f, (const gr_array *const *)in, 1, names);
    gr_fn_free(f);
    gr_graph_free(g);
    for (i = 0; i < 3; i++) gr_array_free(in[i]);
}
static void ref_tiny(void) {                              /* f = sin(x y) + x^2 at x = 0.7, y = -1.3 */
    static const char *const names[3] = { "tiny_f", "tiny_dfdx", "tiny_dfdy" };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *y = gr_scalar(g, GR_F64, "y"), *ins[2], *outs[3], *grads[2];
    gr_array *in[2];
    gr_fn *f = NULL;
    ins[0] = x; ins[1] = y;
    outs[0] = gr_add(gr_sin(gr_mul(x, y)), gr_mul(x, x));
    if (gr_grad(outs[0], 2, ins, grads, NULL) == GR_OK) {
        outs[1] = grads[0]; outs[2] = grads[1];
        f = gr_function(2, ins, 3, outs, NULL);
    }
    in[0] = gr_array_scalar(GR_F64, 0.7); in[1] = gr_array_scalar(GR_F64, -1.3);
    run(f, (const gr_array *const *)in, 3, names);
    gr_fn_free(f);
    gr_graph_free(g);
    gr_array_free(in[0]); gr_array_free(in[1]);
}
static void ref_w5(int n) {                               /* y_{k+1} = sin(y_k) / n + y_k from y_0 = x = 0.5: (y_n, dy_n/dx) */
    char c0[32], c1[32];
    const char *names[2];
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *y = x, *inv = gr_const(g, 1.0 / n), *outs[2];
    gr_array *xa = gr_array_scalar(GR_F64, 0.5);
    gr_fn *f;
    int k;
    for (k = 0; k < n; k++) y = gr_add(gr_mul(gr_sin(y), inv), y);
    outs[0] = y;
    outs[1] = gr_grad1(y, x);
    f = gr_function(1, &x, 2, outs, NULL);
    snprintf(c0, sizeof c0, "w5_%d_cost", n);
    snprintf(c1, sizeof c1, "w5_%d_grad", n);
    names[0] = c0; names[1] = c1;
    run(f, (const gr_array *const *)&xa, 2, names);
    gr_fn_free(f);
    gr_graph_free(g);
    gr_array_free(xa);
}
static void ref_w6(void) {                                /* h_t = tanh(W h_{t-1} + U x_t), cost = sum(h_T): dW, dU */
    static const char *const names[2] = { "w6_dW", "w6_dU" };
    int64_t ws[2] = { 64, 64 }, us[2] = { 64, 32 }, xs[2] = { 100, 32 }, hs = 64;
    gr_array *in[3], *h0 = gr_array_new(GR_F64, 1, &hs);
    gr_graph *g = gr_graph_new();
    gr_var *vW = gr_matrix(g, GR_F64, "W"), *vU = gr_matrix(g, GR_F64, "U"), *vX = gr_matrix(g, GR_F64, "X"), *h = gr_constant(g, h0);
    gr_var *params[2], *grads[2], *ins[3];
    gr_fn *f = NULL;
    int t;
    in[0] = det_array(GR_F64, 2, ws, 13, 0.15); in[1] = det_array(GR_F64, 2, us, 14, 0.2); in[2] = det_array(GR_F64, 2, xs, 15, 1.0);
    for (t = 0; t < 100; t++) h = gr_tanh(gr_add(gr_dot(vW, h), gr_dot(vU, gr_index(vX, 0, t))));
    params[0] = vW; params[1] = vU;
    ins[0] = vW; ins[1] = vU; ins[2] = vX;
    if (gr_grad(gr_sum(h), 2, params, grads, NULL) == GR_OK) f = gr_function(3, ins, 2, grads, NULL);
    run(f, (const gr_array *const *)in, 2, names);
    gr_fn_free(f);
    gr_graph_free(g);
    for (t = 0; t < 3; t++) gr_array_free(in[t]);
    gr_array_free(h0);
}

int main(int argc, char **argv) {
    int n;
    if (argc != 2) { fprintf(stderr, "usage: peers-ref DIR\n"); return 2; }
    g_dir = argv[1];
    ref_w1(0);
    ref_w1(1);
    ref_w2();
    ref_w3();
    ref_w4();
    ref_tiny();
    for (n = 1000; n <= 100000; n *= 10) ref_w5(n);
    ref_w6();
    return g_fail;
}
