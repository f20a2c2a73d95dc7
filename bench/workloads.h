/* bench/workloads.h: the data ("det" recipe) and the graphs of the workloads W1-W4 (PEERS.md),
   shared by bench/bench.c, which times them, and bench/emitgen.c, which writes them as C with
   gr_fn_emit_c for bench.c to time beside gr_call. Include after gradient.h. */
#ifndef BENCH_WORKLOADS_H
#define BENCH_WORKLOADS_H

static uint64_t splitmix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static double det_sym(uint32_t s, uint64_t i, double scale) {
    double u = (double)(splitmix64(((uint64_t)s << 32) + i) >> 11) * (1.0 / 9007199254740992.0);
    return scale * (2.0 * u - 1.0);
}
static int det_label(uint32_t s, uint64_t i, int k) { return (int)(splitmix64(((uint64_t)s << 32) + i) % (uint64_t)k); }

/* an array of det_sym(stream) values, rounded to dt */
static gr_array *det_array(gr_dtype dt, int ndim, const int64_t *shape, uint32_t stream, double scale) {
    gr_array *a = gr_array_new(dt, ndim, shape);
    int64_t i;
    for (i = 0; a && i < a->size; i++) gr_array_set(a, i, det_sym(stream, (uint64_t)i, scale));
    return a;
}

enum { W1_N = 256, W1_D = 784, W1_H = 256, W1_C = 10, W2_N = 1000000, W3_N = 1000, W3_NH = 200, W4_N = 200 };

/* W1: h = tanh(X W1 + b1), logits = h W2 + b2, cost = mean_r(logsumexp(logits[r,:]) - logits[r, y[r]]),
   logsumexp written with a max shift, logits[r, y[r]] as the sum of logits * one-hot Y.
   Inputs (X, Y, W1, b1, W2, b2) into ins, outputs (cost, dW1, db1, dW2, db2) into outs */
static gr_status w1_graph(gr_graph *g, gr_dtype dt, gr_var **ins, gr_var **outs) {
    gr_var *vX = gr_matrix(g, dt, "X"), *vY = gr_matrix(g, dt, "Y"), *vW1 = gr_matrix(g, dt, "W1"), *vb1 = gr_vector(g, dt, "b1");
    gr_var *vW2 = gr_matrix(g, dt, "W2"), *vb2 = gr_vector(g, dt, "b2"), *h, *logits, *m, *lse, *cost, *params[4];
    static const int axis1[1] = { 1 };
    gr_status st;
    h = gr_tanh(gr_add(gr_dot(vX, vW1), vb1));
    logits = gr_add(gr_dot(h, vW2), vb2);
    m = gr_zero_grad(gr_max_axes(logits, 1, axis1, 1));
    lse = gr_add(gr_log(gr_sum_axis(gr_exp(gr_sub(logits, m)), 1)), gr_sum_axis(m, 1));
    cost = gr_mean(gr_sub(lse, gr_sum_axis(gr_mul(logits, vY), 1)));
    params[0] = vW1; params[1] = vb1; params[2] = vW2; params[3] = vb2;
    if ((st = gr_grad(cost, 4, params, outs + 1, NULL)) != GR_OK) return st;
    ins[0] = vX; ins[1] = vY; ins[2] = vW1; ins[3] = vb1; ins[4] = vW2; ins[5] = vb2;
    outs[0] = cost;
    return GR_OK;
}
/* W1's inputs; y (W1_N labels) filled when not NULL */
static void w1_data(gr_dtype dt, gr_array **in, int *y) {
    int64_t xs[2] = { W1_N, W1_D }, w1s[2] = { W1_D, W1_H }, b1s = W1_H, w2s[2] = { W1_H, W1_C }, b2s = W1_C, ys[2] = { W1_N, W1_C };
    int r;
    in[0] = det_array(dt, 2, xs, 1, 1.0); in[1] = gr_array_new(dt, 2, ys); in[2] = det_array(dt, 2, w1s, 2, 0.1);
    in[3] = det_array(dt, 1, &b1s, 3, 0.1); in[4] = det_array(dt, 2, w2s, 4, 0.2); in[5] = det_array(dt, 1, &b2s, 5, 0.1);
    for (r = 0; r < W1_N; r++) {
        int l = det_label(6, (uint64_t)r, W1_C);
        if (y) y[r] = l;
        gr_array_set(in[1], r * W1_C + l, 1.0);
    }
}

/* W2: cost = sum(sin(x) exp(-x x) + log1p(x x) + tanh(x) x); fc gives (cost), fg (cost, dcost/dx) */
static int w2_functions(gr_graph *g, gr_fn **fc, gr_fn **fg) {
    gr_var *vx = gr_vector(g, GR_F64, "x"), *xx = gr_mul(vx, vx);
    gr_var *cost = gr_sum(gr_add(gr_add(gr_mul(gr_sin(vx), gr_exp(gr_neg(xx))), gr_log1p(xx)), gr_mul(gr_tanh(vx), vx)));
    gr_var *outs[2];
    outs[0] = cost;
    outs[1] = gr_grad1(cost, vx);
    *fc = gr_function(1, &vx, 1, outs, NULL);
    *fg = gr_function(1, &vx, 2, outs, NULL);
    return *fc && *fg;
}
static gr_array *w2_data(void) { int64_t n = W2_N; return det_array(GR_F64, 1, &n, 7, 2.0); }

/* W3: Rosenbrock f(x) = sum_{i<n-1} 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2 with slices */
static gr_var *rosenbrock(gr_graph *g, gr_var *x) {
    gr_var *head = gr_slice(x, 0, 0, -1, 1), *tail = gr_slice(x, 0, 1, GR_OPEN, 1);
    gr_var *a = gr_sub(tail, gr_sqr(head)), *b = gr_sub(gr_const(g, 1.0), head);
    return gr_sum(gr_add(gr_mul(gr_const(g, 100.0), gr_sqr(a)), gr_sqr(b)));
}
/* W3's functions: f[0] the gradient (x), f[1] the Hessian-vector product (x, v), f[2] the Hessian
   (x). x and v are vectors of unknown length, as bench.c times them; with `declared`, their shapes are
   declared (1000, and 200 for the Hessian), as a program that emits C for those sizes knows them:
   a product of an x-derived and a v-derived array is then known to be elementwise over one shape,
   so fusion joins what the unknown lengths keep apart */
static int w3_functions(gr_graph *g, gr_fn **f, int declared) {
    int64_t n = W3_N, nh = W3_NH;
    gr_var *vx = declared ? gr_tensor(g, GR_F64, 1, &n, "x") : gr_vector(g, GR_F64, "x");
    gr_var *vv = declared ? gr_tensor(g, GR_F64, 1, &n, "v") : gr_vector(g, GR_F64, "v");
    gr_var *xh = declared ? gr_tensor(g, GR_F64, 1, &nh, "x") : vx, *cost = rosenbrock(g, vx), *costh = declared ? rosenbrock(g, xh) : cost;
    gr_var *gx = gr_grad1(cost, vx), *hv = NULL, *H = NULL, *ins[2];
    f[0] = f[1] = f[2] = NULL;
    if (gr_rop(1, &gx, 1, &vx, &vv, &hv, NULL) != GR_OK || gr_hessian(costh, 1, &xh, &H, NULL) != GR_OK) return 0;
    ins[0] = vx; ins[1] = vv;
    f[0] = gr_function(1, &vx, 1, &gx, NULL);
    f[1] = gr_function(2, ins, 1, &hv, NULL);
    f[2] = gr_function(1, &xh, 1, &H, NULL);
    return f[0] && f[1] && f[2];
}
/* x (n = 1000), v (1000), x[:200] */
static void w3_data(gr_array **in) {
    int64_t n = W3_N, n2 = W3_NH;
    in[0] = det_array(GR_F64, 1, &n, 8, 1.0);
    in[1] = det_array(GR_F64, 1, &n, 9, 1.0);
    in[2] = in[0] ? gr_array_from(GR_F64, 1, &n2, in[0]->data) : NULL;
}

/* W4: J = jacobian(tanh(A x + b), x), A 200x200; shapes declared, as a program that knows them
   would: unknown ones allow NumPy broadcasting of A x against b, which the Jacobian's graph then
   has to allow for. Inputs (A, b, x) */
static gr_fn *w4_function(gr_graph *g) {
    int64_t as[2] = { W4_N, W4_N }, n = W4_N;
    gr_var *vA = gr_tensor(g, GR_F64, 2, as, "A"), *vb = gr_tensor(g, GR_F64, 1, &n, "b"), *vx = gr_tensor(g, GR_F64, 1, &n, "x");
    gr_var *J = NULL, *ins[3];
    if (gr_jacobian(gr_tanh(gr_add(gr_dot(vA, vx), vb)), 1, &vx, &J, NULL) != GR_OK) return NULL;
    ins[0] = vA; ins[1] = vb; ins[2] = vx;
    return gr_function(3, ins, 1, &J, NULL);
}
static void w4_data(gr_array **in) {
    int64_t as[2] = { W4_N, W4_N }, n = W4_N;
    in[0] = det_array(GR_F64, 2, as, 10, 0.1);
    in[1] = det_array(GR_F64, 1, &n, 11, 0.1);
    in[2] = det_array(GR_F64, 1, &n, 12, 1.0);
}

#endif
