/* tests/t_emit_work.c: the bench workloads W1 (an MLP's cost and gradient) and W4 (the Jacobian of
   tanh(A x + b)) built small, as bench/bench.c builds them, and loops (a W6-like recurrent network and
   its BPTT gradient, RK4 time stepping and its gradient, a loop with several taps, a loop holding a loop,
   a while loop read at its final value), for gr_fn_emit_c (SEMANTICS.md §20.1).

   suite_emit_work (every run of the test binary): each workload's gr_call against plain C written
   from its definition (the forward pass and the hand-derived gradient), and its emission succeeds
   (every op of the compiled function has a rule). make test-emit (tests/t_emit.c) records one call of
   each through gt_em_work_build, so that the emitted functions are compared with gr_call bit for bit.
   W1's product X W1 sums over D = 140 > 128 (GR__GEMM_KC): the GEMM's blocking is in the comparison. */
#include "harness.h"

#include "t_emit_work.h"
#include "forward.h"

enum { TW_N = 6, TW_D = 140, TW_H = 5, TW_C = 3, TW_M = 7 };

/* deterministic values in [-scale, scale] */
static gr_array *tw_array(gr_dtype dt, int ndim, const int64_t *shape, unsigned seed, double scale) {
    gr_array *a = gr_array_new(dt, ndim, shape);
    int64_t i;
    for (i = 0; a && i < a->size; i++) gr_array_set(a, i, scale * sin(1.7 * (double)(i + 1) + 0.37 * (double)seed));
    return a;
}

/* W1: h = tanh(X W1 + b1), logits = h W2 + b2, cost = mean_r(logsumexp(logits[r, :]) - sum(logits[r, :] Y[r, :]))
   with Y one-hot; outputs cost, dW1, db1, dW2, db2 */
static int tw_w1(gt_em_work *w, gr_dtype dt) {
    int64_t xs[2] = { TW_N, TW_D }, w1s[2] = { TW_D, TW_H }, b1s = TW_H, w2s[2] = { TW_H, TW_C }, b2s = TW_C, ys[2] = { TW_N, TW_C };
    gr_graph *g = w->g = gr_graph_new();
    gr_var *vX = gr_matrix(g, dt, "X"), *vY = gr_matrix(g, dt, "Y"), *vW1 = gr_matrix(g, dt, "W1"), *vb1 = gr_vector(g, dt, "b1");
    gr_var *vW2 = gr_matrix(g, dt, "W2"), *vb2 = gr_vector(g, dt, "b2"), *h, *logits, *m, *lse, *cost, *params[4], *outs[5], *ins[6];
    static const int axis1[1] = { 1 };
    int i, r;
    w->name = dt == GR_F32 ? "W1 (float32): an MLP's cost and gradient" : "W1: an MLP's cost and gradient";
    w->in[0] = tw_array(dt, 2, xs, 1, 1.0); w->in[1] = gr_array_new(dt, 2, ys); w->in[2] = tw_array(dt, 2, w1s, 2, 0.1);
    w->in[3] = tw_array(dt, 1, &b1s, 3, 0.1); w->in[4] = tw_array(dt, 2, w2s, 4, 0.5); w->in[5] = tw_array(dt, 1, &b2s, 5, 0.1);
    w->n_in = 6;
    w->n_out = 5;
    for (r = 0; r < TW_N; r++) gr_array_set(w->in[1], r * TW_C + (r * 7) % TW_C, 1.0);
    h = gr_tanh(gr_add(gr_dot(vX, vW1), vb1));
    logits = gr_add(gr_dot(h, vW2), vb2);
    m = gr_zero_grad(gr_max_axes(logits, 1, axis1, 1));
    lse = gr_add(gr_log(gr_sum_axis(gr_exp(gr_sub(logits, m)), 1)), gr_sum_axis(m, 1));
    cost = gr_mean(gr_sub(lse, gr_sum_axis(gr_mul(logits, vY), 1)));
    params[0] = vW1; params[1] = vb1; params[2] = vW2; params[3] = vb2;
    if (gr_grad(cost, 4, params, outs + 1, NULL) != GR_OK) return 0;
    outs[0] = cost;
    ins[0] = vX; ins[1] = vY; ins[2] = vW1; ins[3] = vb1; ins[4] = vW2; ins[5] = vb2;
    w->f = gr_function(6, ins, 5, outs, NULL);
    for (i = 0; i < w->n_in; i++) if (!w->in[i]) return 0;
    return w->f != NULL;
}

/* W4: J = jacobian(tanh(A x + b), x), A (M, M) with static shapes as the bench declares them */
static int tw_w4(gt_em_work *w) {
    int64_t as[2] = { TW_M, TW_M }, n = TW_M;
    gr_graph *g = w->g = gr_graph_new();
    gr_var *vA = gr_tensor(g, GR_F64, 2, as, "A"), *vb = gr_tensor(g, GR_F64, 1, &n, "b"), *vx = gr_tensor(g, GR_F64, 1, &n, "x");
    gr_var *J = NULL, *ins[3];
    w->name = "W4: the Jacobian of tanh(A x + b)";
    w->in[0] = tw_array(GR_F64, 2, as, 10, 0.5); w->in[1] = tw_array(GR_F64, 1, &n, 11, 0.1); w->in[2] = tw_array(GR_F64, 1, &n, 12, 1.0);
    w->n_in = 3;
    w->n_out = 1;
    if (gr_jacobian(gr_tanh(gr_add(gr_dot(vA, vx), vb)), 1, &vx, &J, NULL) != GR_OK) return 0;
    ins[0] = vA; ins[1] = vb; ins[2] = vx;
    w->f = gr_function(3, ins, 1, &J, NULL);
    return w->f != NULL && w->in[0] && w->in[1] && w->in[2];
}

/* W3's Hessian-vector product as bench.c builds it: x and v vectors of unknown length, so that the
   compiled function keeps arrays of x and of v in separate steps (their lengths may differ in another
   call); the emitted file, specialised to equal lengths, computes them in one loop (merged loops) */
enum { TW_RN = 13 };
static gr_var *tw_rosenbrock(gr_graph *g, gr_var *x) {
    gr_var *head = gr_slice(x, 0, 0, -1, 1), *tail = gr_slice(x, 0, 1, GR_OPEN, 1);
    gr_var *a = gr_sub(tail, gr_sqr(head)), *b = gr_sub(gr_const(g, 1.0), head);
    return gr_sum(gr_add(gr_mul(gr_const(g, 100.0), gr_sqr(a)), gr_sqr(b)));
}
static int tw_w3_hv(gt_em_work *w, int declared) {
    int64_t n = TW_RN;
    gr_graph *g = w->g = gr_graph_new();
    gr_var *vx = declared ? gr_tensor(g, GR_F64, 1, &n, "x") : gr_vector(g, GR_F64, "x");
    gr_var *vv = declared ? gr_tensor(g, GR_F64, 1, &n, "v") : gr_vector(g, GR_F64, "v");
    gr_var *gx = gr_grad1(tw_rosenbrock(g, vx), vx), *hv = NULL, *ins[2];
    w->name = declared ? "W3: Hessian-vector product, lengths declared" : "W3: Hessian-vector product, lengths unknown";
    w->in[0] = tw_array(GR_F64, 1, &n, 13, 1.5); w->in[1] = tw_array(GR_F64, 1, &n, 14, 1.0);
    w->n_in = 2;
    w->n_out = 1;
    if (gr_rop(1, &gx, 1, &vx, &vv, &hv, NULL) != GR_OK) return 0;
    ins[0] = vx; ins[1] = vv;
    w->f = gr_function(2, ins, 1, &hv, NULL);
    return w->f != NULL && w->in[0] && w->in[1];
}
/* elementwise steps of unknown lengths whose memory the plan reuses, in float64 and float32, with a
   scalar read at every element: merged loops must not write memory a step of the loop still reads
   at other elements. outputs: c = float64(float32(e^x y) + z) - 2 x s, d = c y, b = float32(e^x y) + z */
static int tw_mixed(gt_em_work *w) {
    int64_t n = TW_RN;
    gr_graph *g = w->g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *z = gr_vector(g, GR_F32, "z"), *s = gr_scalar(g, GR_F64, "s");
    gr_var *a = gr_mul(gr_exp(x), y), *b = gr_add(gr_cast(a, GR_F32), z);
    gr_var *c = gr_sub(gr_cast(b, GR_F64), gr_mul(gr_mul(x, gr_const(g, 2.0)), s)), *outs[3], *ins[4];
    w->name = "elementwise steps of unknown lengths, float64 and float32 (merged loops)";
    w->in[0] = tw_array(GR_F64, 1, &n, 15, 1.0); w->in[1] = tw_array(GR_F64, 1, &n, 16, 1.0);
    w->in[2] = tw_array(GR_F32, 1, &n, 17, 1.0); w->in[3] = tw_array(GR_F64, 0, NULL, 18, 1.0);
    w->n_in = 4;
    w->n_out = 3;
    outs[0] = c; outs[1] = gr_mul(c, y); outs[2] = b;
    ins[0] = x; ins[1] = y; ins[2] = z; ins[3] = s;
    w->f = gr_function(4, ins, 3, outs, NULL);
    return w->f != NULL && w->in[0] && w->in[1] && w->in[2] && w->in[3];
}

/* ---- loops (gr_scan): the emitted function is a C for over the steps ------------------------------- */

enum { TW_LH = 4, TW_LI = 3, TW_LT = 7, TW_RK = 12, TW_UL = 10, TW_US = TW_UL - 3 };
#define TW_RK_H 0.05

/* W6-like: h_t = tanh(W h_{t-1} + U x_t), cost = sum(h_T) (only the last row is read); outputs cost and its
   gradient (BPTT, a loop backwards) with respect to W, U and h_0 */
static gr_status tw_rnn_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = gr_tanh(gr_add(gr_dot(in[2], in[1]), gr_dot(in[3], in[0])));
    return GR_OK;
}
static int tw_rnn(gt_em_work *w, int64_t checkpoints) {
    int64_t ws[2] = { TW_LH, TW_LH }, us[2] = { TW_LH, TW_LI }, xs[2] = { TW_LT, TW_LI }, hs = TW_LH;
    gr_graph *g = w->g = gr_graph_new();
    gr_var *vX = gr_tensor(g, GR_F64, 2, xs, "X"), *vh0 = gr_tensor(g, GR_F64, 1, &hs, "h0");
    gr_var *vW = gr_tensor(g, GR_F64, 2, ws, "W"), *vU = gr_tensor(g, GR_F64, 2, us, "U"), *ns[2], *r = NULL, *cost, *wrt[3], *outs[4], *ins[4];
    gr_scan_seq sq;
    gr_scan_out so;
    gr_scan_opts so_opts;
    w->name = checkpoints ? "a recurrent network's cost and its BPTT gradient, 3 checkpoints (states recomputed)"
                          : "a recurrent network's cost (W6-like) and its BPTT gradient";
    memset(&so_opts, 0, sizeof so_opts);
    so_opts.checkpoints = checkpoints;
    w->in[0] = tw_array(GR_F64, 2, xs, 20, 1.0); w->in[1] = tw_array(GR_F64, 1, &hs, 21, 0.3);
    w->in[2] = tw_array(GR_F64, 2, ws, 22, 0.6); w->in[3] = tw_array(GR_F64, 2, us, 23, 0.5);
    w->n_in = 4;
    w->n_out = 4;
    sq.x = vX; sq.n_taps = 0; sq.taps = NULL;
    so.initial = vh0; so.n_taps = 0; so.taps = NULL;
    ns[0] = vW; ns[1] = vU;
    if (gr_scan(tw_rnn_step, NULL, 1, &sq, 1, &so, 2, ns, &so_opts, &r) != GR_OK) return 0;
    cost = gr_sum(gr_index(r, 0, -1));
    wrt[0] = vW; wrt[1] = vU; wrt[2] = vh0;
    if (gr_grad(cost, 3, wrt, outs + 1, NULL) != GR_OK) return 0;
    outs[0] = cost;
    ins[0] = vX; ins[1] = vh0; ins[2] = vW; ins[3] = vU;
    w->f = gr_function(4, ins, 4, outs, NULL);
    return w->f != NULL && w->in[0] && w->in[1] && w->in[2] && w->in[3];
}

/* RK4 time stepping of a damped pendulum y' = (y1, -p0 sin(y0) - p1 y1), TW_RK steps of TW_RK_H (n_steps
   a constant); outputs the trajectory, cost = sum(y_N^2) and its gradient with respect to y_0 and p */
static gr_var *tw_pend(gr_var *y, gr_var *p) {
    gr_var *two[2];
    two[0] = gr_index(y, 0, 1);
    two[1] = gr_sub(gr_neg(gr_mul(gr_index(p, 0, 0), gr_sin(gr_index(y, 0, 0)))), gr_mul(gr_index(p, 0, 1), gr_index(y, 0, 1)));
    return gr_stack(2, two, 0);
}
static gr_status tw_rk4_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    gr_var *y = in[0], *p = in[1], *hh = gr_const(g, TW_RK_H), *half = gr_const(g, 0.5 * TW_RK_H), *k1, *k2, *k3, *k4;
    (void)until; (void)user;
    k1 = tw_pend(y, p);
    k2 = tw_pend(gr_add(y, gr_mul(half, k1)), p);
    k3 = tw_pend(gr_add(y, gr_mul(half, k2)), p);
    k4 = tw_pend(gr_add(y, gr_mul(hh, k3)), p);
    out[0] = gr_add(y, gr_mul(gr_const(g, TW_RK_H / 6), gr_add(gr_add(k1, gr_mul(gr_const(g, 2), k2)), gr_add(gr_mul(gr_const(g, 2), k3), k4))));
    return GR_OK;
}
static int tw_rk4(gt_em_work *w) {
    int64_t two = 2;
    gr_graph *g = w->g = gr_graph_new();
    gr_var *vy = gr_tensor(g, GR_F64, 1, &two, "y0"), *vp = gr_tensor(g, GR_F64, 1, &two, "p"), *r = NULL, *cost, *wrt[2], *outs[4], *ins[2];
    gr_array *na = gr_array_scalar(GR_I64, TW_RK);
    gr_scan_out so;
    gr_scan_opts opts;
    w->name = "RK4 time stepping (n_steps a constant) and its gradient";
    w->in[0] = gr_array_new(GR_F64, 1, &two); w->in[1] = gr_array_new(GR_F64, 1, &two);
    w->n_in = 2;
    w->n_out = 4;
    if (w->in[0]) { gr_array_set(w->in[0], 0, 1.1); gr_array_set(w->in[0], 1, -0.4); }
    if (w->in[1]) { gr_array_set(w->in[1], 0, 9.0); gr_array_set(w->in[1], 1, 0.3); }
    so.initial = vy; so.n_taps = 0; so.taps = NULL;
    memset(&opts, 0, sizeof opts);
    opts.n_steps = gr_constant(g, na);
    opts.name = "rk4";
    gr_array_free(na);
    if (gr_scan(tw_rk4_step, NULL, 0, NULL, 1, &so, 1, &vp, &opts, &r) != GR_OK) return 0;
    cost = gr_sum(gr_sqr(gr_index(r, 0, -1)));
    wrt[0] = vy; wrt[1] = vp;
    if (gr_grad(cost, 2, wrt, outs + 2, NULL) != GR_OK) return 0;
    outs[0] = r; outs[1] = cost;
    ins[0] = vy; ins[1] = vp;
    w->f = gr_function(2, ins, 4, outs, NULL);
    return w->f != NULL && w->in[0] && w->in[1];
}

/* several taps: sequence u with taps {-2, 0, 1} (step t reads u[t], u[t+2], u[t+3]), a state with taps
   {-3, -1} (three initial rows) and an output without state:
   s_t = 0.5 s_{t-3} - 0.4 tanh(s_{t-1}) + u[t] + 0.25 u[t+2] u[t+3], z_t = s_t u[t+2];
   outputs S, Z, cost = sum(S) + sum(Z^2) and its gradient with respect to u and the initial rows */
static gr_status tw_taps_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    gr_var *s = gr_add(gr_sub(gr_mul(gr_const(g, 0.5), in[3]), gr_mul(gr_const(g, 0.4), gr_tanh(in[4]))),
                       gr_add(in[0], gr_mul(gr_const(g, 0.25), gr_mul(in[1], in[2]))));
    (void)until; (void)user;
    out[0] = s;
    out[1] = gr_mul(s, in[1]);
    return GR_OK;
}
static int tw_taps(gt_em_work *w, int64_t checkpoints) {
    static const int staps[3] = { -2, 0, 1 }, otaps[2] = { -3, -1 };
    int64_t nu = TW_UL, n3 = 3;
    gr_graph *g = w->g = gr_graph_new();
    gr_var *vu = gr_tensor(g, GR_F64, 1, &nu, "u"), *vs = gr_tensor(g, GR_F64, 1, &n3, "s0"), *r[2] = { NULL, NULL }, *cost, *wrt[2], *outs[5], *ins[2];
    gr_scan_seq sq;
    gr_scan_out so[2];
    gr_scan_opts opts;
    w->name = checkpoints ? "a loop with several taps and its gradient, 2 checkpoints (states recomputed)"
                          : "a loop with several taps (sequence {-2, 0, 1}, state {-3, -1}) and its gradient";
    memset(&opts, 0, sizeof opts);
    opts.checkpoints = checkpoints;
    w->in[0] = tw_array(GR_F64, 1, &nu, 30, 0.8); w->in[1] = tw_array(GR_F64, 1, &n3, 31, 0.5);
    w->n_in = 2;
    w->n_out = 5;
    sq.x = vu; sq.n_taps = 3; sq.taps = staps;
    so[0].initial = vs; so[0].n_taps = 2; so[0].taps = otaps;
    so[1].initial = NULL; so[1].n_taps = 0; so[1].taps = NULL;
    if (gr_scan(tw_taps_step, NULL, 1, &sq, 2, so, 0, NULL, &opts, r) != GR_OK) return 0;
    cost = gr_add(gr_sum(r[0]), gr_sum(gr_sqr(r[1])));
    wrt[0] = vu; wrt[1] = vs;
    if (gr_grad(cost, 2, wrt, outs + 3, NULL) != GR_OK) return 0;
    outs[0] = r[0]; outs[1] = r[1]; outs[2] = cost;
    ins[0] = vu; ins[1] = vs;
    w->f = gr_function(2, ins, 5, outs, NULL);
    return w->f != NULL && w->in[0] && w->in[1];
}

/* a while loop read at its final value only: x_t = 1.3 x_{t-1} + y_t until x_t > 5 (the until loop's
   rows are not an output, so its shapes are fixed) */
static gr_status tw_until_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)user;
    out[0] = gr_add(gr_mul(gr_const(g, 1.3), in[1]), in[0]);
    *until = gr_gt(out[0], gr_const(g, 5.0));
    return GR_OK;
}
static int tw_until(gt_em_work *w) {
    int64_t ny = TW_UL;
    gr_graph *g = w->g = gr_graph_new();
    gr_var *vy = gr_tensor(g, GR_F64, 1, &ny, "y"), *vx = gr_scalar(g, GR_F64, "x0"), *r = NULL, *outs[1], *ins[2];
    gr_scan_seq sq;
    gr_scan_out so;
    w->name = "a while loop (until) read at its final value";
    w->in[0] = tw_array(GR_F64, 1, &ny, 40, 1.0); w->in[1] = gr_array_scalar(GR_F64, 2.0);
    w->n_in = 2;
    w->n_out = 1;
    sq.x = vy; sq.n_taps = 0; sq.taps = NULL;
    so.initial = vx; so.n_taps = 0; so.taps = NULL;
    if (gr_scan(tw_until_step, NULL, 1, &sq, 1, &so, 0, NULL, NULL, &r) != GR_OK) return 0;
    outs[0] = gr_index(r, 0, -1);
    ins[0] = vy; ins[1] = vx;
    w->f = gr_function(2, ins, 1, outs, NULL);
    return w->f != NULL && w->in[0] && w->in[1];
}

/* a loop whose body holds a loop: over the rows u of U (TW_NR x TW_NC), h_t = the inner loop over u's
   elements s_k = 0.5 s_{k-1} + sin(u_k) from s = h_{t-1}, read at its final value; outputs the rows h,
   cost = sum(h^2) and its gradient with respect to U and h_0 */
enum { TW_NR = 5, TW_NC = 3 };
static gr_status tw_inner_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    out[0] = gr_add(gr_mul(in[1], gr_const(g, 0.5)), gr_sin(in[0]));
    return GR_OK;
}
static gr_status tw_outer_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    gr_scan_seq sq;
    gr_scan_out so;
    gr_var *r = NULL;
    (void)until; (void)user;
    sq.x = in[0]; sq.n_taps = 0; sq.taps = NULL;
    so.initial = in[1]; so.n_taps = 0; so.taps = NULL;
    if (gr_scan(tw_inner_step, NULL, 1, &sq, 1, &so, 0, NULL, NULL, &r) != GR_OK) return gr_graph_status(g);
    out[0] = gr_index(r, 0, -1);
    return GR_OK;
}
static int tw_nested(gt_em_work *w) {
    int64_t us[2] = { TW_NR, TW_NC };
    gr_graph *g = w->g = gr_graph_new();
    gr_var *vU = gr_tensor(g, GR_F64, 2, us, "U"), *vh = gr_scalar(g, GR_F64, "h0"), *r = NULL, *cost, *wrt[2], *outs[4], *ins[2];
    gr_scan_seq sq;
    gr_scan_out so;
    w->name = "a loop whose body holds a loop, and its gradient";
    w->in[0] = tw_array(GR_F64, 2, us, 50, 1.2); w->in[1] = gr_array_scalar(GR_F64, 0.4);
    w->n_in = 2;
    w->n_out = 4;
    sq.x = vU; sq.n_taps = 0; sq.taps = NULL;
    so.initial = vh; so.n_taps = 0; so.taps = NULL;
    if (gr_scan(tw_outer_step, NULL, 1, &sq, 1, &so, 0, NULL, NULL, &r) != GR_OK) return 0;
    cost = gr_sum(gr_sqr(r));
    wrt[0] = vU; wrt[1] = vh;
    if (gr_grad(cost, 2, wrt, outs + 2, NULL) != GR_OK) return 0;
    outs[0] = r; outs[1] = cost;
    ins[0] = vU; ins[1] = vh;
    w->f = gr_function(2, ins, 4, outs, NULL);
    return w->f != NULL && w->in[0] && w->in[1];
}

int gt_em_work_build(int k, gt_em_work *w) {
    memset(w, 0, sizeof *w);
    switch (k) {
    case 0: return tw_w1(w, GR_F64) ? 1 : -1;
    case 1: return tw_w1(w, GR_F32) ? 1 : -1;
    case 2: return tw_w4(w) ? 1 : -1;
    case 3: return tw_rnn(w, 0) ? 1 : -1;
    case 4: return tw_rk4(w) ? 1 : -1;
    case 5: return tw_taps(w, 0) ? 1 : -1;
    case 6: return tw_until(w) ? 1 : -1;
    case 7: return tw_rnn(w, 3) ? 1 : -1;
    case 8: return tw_taps(w, 2) ? 1 : -1;
    case 9: return tw_nested(w) ? 1 : -1;
    case 10: return tw_w3_hv(w, 0) ? 1 : -1;
    case 11: return tw_w3_hv(w, 1) ? 1 : -1;
    case 12: return tw_mixed(w) ? 1 : -1;
    default: return 0;
    }
}

void gt_em_work_free(gt_em_work *w) {
    int i;
    for (i = 0; i < w->n_in; i++) gr_array_free(w->in[i]);
    gr_fn_free(w->f);
    gr_graph_free(w->g);
    memset(w, 0, sizeof *w);
}

/* ---- plain C from the definitions ------------------------------------------------------------------ */

/* W1's cost and gradient from the chain rule by hand: dlogits = (softmax(logits) - Y) / N,
   dW2 = h^T dlogits, db2 = sum_r dlogits, dh = dlogits W2^T, dz = dh (1 - h^2), dW1 = X^T dz, db1 = sum_r dz */
static void tw_w1_ref(const gt_em_work *w, double *cost, double *dW1, double *db1, double *dW2, double *db2) {
    double h[TW_N][TW_H], dl[TW_N][TW_C], dz[TW_N][TW_H];
    int r, i, j, k;
#define TW_AT(a, i) gr_array_get(w->in[a], i)
    *cost = 0;
    for (r = 0; r < TW_N; r++) {
        double l[TW_C], m = -INFINITY, s = 0;
        for (j = 0; j < TW_H; j++) {
            double z = TW_AT(3, j);
            for (k = 0; k < TW_D; k++) z += TW_AT(0, r * TW_D + k) * TW_AT(2, k * TW_H + j);
            h[r][j] = tanh(z);
        }
        for (j = 0; j < TW_C; j++) {
            l[j] = TW_AT(5, j);
            for (i = 0; i < TW_H; i++) l[j] += h[r][i] * TW_AT(4, i * TW_C + j);
            if (l[j] > m) m = l[j];
        }
        for (j = 0; j < TW_C; j++) s += exp(l[j] - m);
        for (j = 0; j < TW_C; j++) {
            *cost += (log(s) + m - l[j]) * TW_AT(1, r * TW_C + j) / TW_N;
            dl[r][j] = (exp(l[j] - m) / s - TW_AT(1, r * TW_C + j)) / TW_N;
        }
    }
    for (i = 0; i < TW_H; i++)
        for (j = 0; j < TW_C; j++) { dW2[i * TW_C + j] = 0; for (r = 0; r < TW_N; r++) dW2[i * TW_C + j] += h[r][i] * dl[r][j]; }
    for (j = 0; j < TW_C; j++) { db2[j] = 0; for (r = 0; r < TW_N; r++) db2[j] += dl[r][j]; }
    for (r = 0; r < TW_N; r++)
        for (i = 0; i < TW_H; i++) {
            double d = 0;
            for (j = 0; j < TW_C; j++) d += dl[r][j] * TW_AT(4, i * TW_C + j);
            dz[r][i] = d * (1 - h[r][i] * h[r][i]);
        }
    for (k = 0; k < TW_D; k++)
        for (i = 0; i < TW_H; i++) { dW1[k * TW_H + i] = 0; for (r = 0; r < TW_N; r++) dW1[k * TW_H + i] += TW_AT(0, r * TW_D + k) * dz[r][i]; }
    for (i = 0; i < TW_H; i++) { db1[i] = 0; for (r = 0; r < TW_N; r++) db1[i] += dz[r][i]; }
#undef TW_AT
}

/* gr_call against the reference; the emission succeeds */
static void tw_check_w1(gr_dtype dt) {
    gt_em_work w;
    const gr_array *out[5];
    double cost, dW1[TW_D * TW_H], db1[TW_H], dW2[TW_H * TW_C], db2[TW_C], tol = dt == GR_F32 ? 1e-5 : 1e-12;
    const double *ref[5];
    int64_t sizes[5] = { 1, TW_D * TW_H, TW_H, TW_H * TW_C, TW_C }, i;
    int k;
    FILE *fp = tmpfile();
    CHECK_EQ_INT(gt_em_work_build(dt == GR_F32 ? 1 : 0, &w), 1);
    if (w.f && fp) {
        CHECK_STATUS(gr_call(w.f, (const gr_array *const *)w.in, out), GR_OK);
        tw_w1_ref(&w, &cost, dW1, db1, dW2, db2);
        ref[0] = &cost; ref[1] = dW1; ref[2] = db1; ref[3] = dW2; ref[4] = db2;
        for (k = 0; k < 5; k++)
            for (i = 0; i < sizes[k]; i++) CHECK_NEAR(gr_array_get(out[k], i), ref[k][i], tol);
        CHECK_STATUS(gr_fn_emit_c(w.f, (const gr_array *const *)w.in, fp, NULL), GR_OK);
        CHECK_MSG(gr_fn_message(w.f)[0] == 0, "%s", gr_fn_message(w.f));
    }
    if (fp) fclose(fp);
    gt_em_work_free(&w);
}
TEST(test_emit_work_w1) { tw_check_w1(GR_F64); }
TEST(test_emit_work_w1_f32) { tw_check_w1(GR_F32); }

/* J = diag(1 - y^2) A, y = tanh(A x + b) */
TEST(test_emit_work_w4) {
    gt_em_work w;
    const gr_array *out[1];
    FILE *fp = tmpfile();
    int i, j, k;
    CHECK_EQ_INT(gt_em_work_build(2, &w), 1);
    if (w.f && fp) {
        CHECK_STATUS(gr_call(w.f, (const gr_array *const *)w.in, out), GR_OK);
        for (i = 0; i < TW_M; i++) {
            double s = gr_array_get(w.in[1], i), d;
            for (k = 0; k < TW_M; k++) s += gr_array_get(w.in[0], i * TW_M + k) * gr_array_get(w.in[2], k);
            d = 1 - tanh(s) * tanh(s);
            for (j = 0; j < TW_M; j++) CHECK_NEAR(gr_array_get(out[0], i * TW_M + j), d * gr_array_get(w.in[0], i * TW_M + j), 1e-13);
        }
        CHECK_STATUS(gr_fn_emit_c(w.f, (const gr_array *const *)w.in, fp, NULL), GR_OK);
        CHECK_MSG(gr_fn_message(w.f)[0] == 0, "%s", gr_fn_message(w.f));
    }
    if (fp) fclose(fp);
    gt_em_work_free(&w);
}

/* the emission of w's function succeeds */
static void tw_emits(const gt_em_work *w) {
    FILE *fp = tmpfile();
    CHECK(fp != NULL);
    if (!fp || !w->f) { if (fp) fclose(fp); return; }
    CHECK_STATUS(gr_fn_emit_c(w->f, (const gr_array *const *)w->in, fp, NULL), GR_OK);
    CHECK_MSG(gr_fn_message(w->f)[0] == 0, "%s", gr_fn_message(w->f));
    fclose(fp);
}

/* the recurrent network forwards, and its gradient backwards through time by hand:
   dh_T = 1, dz_t = dh_t (1 - h_t^2), dW += dz_t h_{t-1}^T, dU += dz_t x_t^T, dh_{t-1} = W^T dz_t */
static void tw_check_rnn(int k) {
    gt_em_work w;
    const gr_array *out[4];
    double h[TW_LT + 1][TW_LH], dh[TW_LH], dz[TW_LH], dW[TW_LH * TW_LH], dU[TW_LH * TW_LI], cost = 0;
    int t, i, j;
    CHECK_EQ_INT(gt_em_work_build(k, &w), 1);
    if (w.f) {
#define TW_AT(a, i) gr_array_get(w.in[a], i)
        for (i = 0; i < TW_LH; i++) h[0][i] = TW_AT(1, i);
        for (t = 1; t <= TW_LT; t++)
            for (i = 0; i < TW_LH; i++) {
                double z = 0;
                for (j = 0; j < TW_LH; j++) z += TW_AT(2, i * TW_LH + j) * h[t - 1][j];
                for (j = 0; j < TW_LI; j++) z += TW_AT(3, i * TW_LI + j) * TW_AT(0, (t - 1) * TW_LI + j);
                h[t][i] = tanh(z);
            }
        for (i = 0; i < TW_LH; i++) { cost += h[TW_LT][i]; dh[i] = 1; }
        memset(dW, 0, sizeof dW);
        memset(dU, 0, sizeof dU);
        for (t = TW_LT; t >= 1; t--) {
            for (i = 0; i < TW_LH; i++) dz[i] = dh[i] * (1 - h[t][i] * h[t][i]);
            for (i = 0; i < TW_LH; i++) {
                for (j = 0; j < TW_LH; j++) dW[i * TW_LH + j] += dz[i] * h[t - 1][j];
                for (j = 0; j < TW_LI; j++) dU[i * TW_LI + j] += dz[i] * TW_AT(0, (t - 1) * TW_LI + j);
            }
            for (j = 0; j < TW_LH; j++) { dh[j] = 0; for (i = 0; i < TW_LH; i++) dh[j] += TW_AT(2, i * TW_LH + j) * dz[i]; }
        }
#undef TW_AT
        CHECK_STATUS(gr_call(w.f, (const gr_array *const *)w.in, out), GR_OK);
        if (out[0]) {
            CHECK_NEAR(gr_array_get(out[0], 0), cost, 1e-13);
            for (i = 0; i < TW_LH * TW_LH; i++) CHECK_NEAR(gr_array_get(out[1], i), dW[i], 1e-13);
            for (i = 0; i < TW_LH * TW_LI; i++) CHECK_NEAR(gr_array_get(out[2], i), dU[i], 1e-13);
            for (i = 0; i < TW_LH; i++) CHECK_NEAR(gr_array_get(out[3], i), dh[i], 1e-13);
        }
        tw_emits(&w);
    }
    gt_em_work_free(&w);
}

TEST(test_emit_work_rnn) { tw_check_rnn(3); }
TEST(test_emit_work_rnn_checkpoints) { tw_check_rnn(7); }

/* RK4 in plain C: the trajectory and the cost */
static double tw_rk4_ref(const double *y0, const double *p, double *traj) {
    double y[2] = { y0[0], y0[1] }, k[4][2];
    int n, s;
    for (n = 0; n < TW_RK; n++) {
        for (s = 0; s < 4; s++) {
            double c = s == 0 ? 0 : s == 3 ? TW_RK_H : 0.5 * TW_RK_H;
            double a = s ? y[0] + c * k[s - 1][0] : y[0], b = s ? y[1] + c * k[s - 1][1] : y[1];
            k[s][0] = b;
            k[s][1] = -(p[0] * sin(a)) - p[1] * b;
        }
        y[0] = y[0] + TW_RK_H / 6 * ((k[0][0] + 2 * k[1][0]) + (2 * k[2][0] + k[3][0]));
        y[1] = y[1] + TW_RK_H / 6 * ((k[0][1] + 2 * k[1][1]) + (2 * k[2][1] + k[3][1]));
        if (traj) { traj[2 * n] = y[0]; traj[2 * n + 1] = y[1]; }
    }
    return y[0] * y[0] + y[1] * y[1];
}
/* the trajectory against plain C, the gradient against its central differences */
TEST(test_emit_work_rk4) {
    gt_em_work w;
    const gr_array *out[4];
    double y0[2], p[2], traj[2 * TW_RK], v[4], hstep = 1e-6;
    int i, q;
    CHECK_EQ_INT(gt_em_work_build(4, &w), 1);
    if (w.f) {
        for (i = 0; i < 2; i++) { y0[i] = gr_array_get(w.in[0], i); p[i] = gr_array_get(w.in[1], i); }
        CHECK_STATUS(gr_call(w.f, (const gr_array *const *)w.in, out), GR_OK);
        if (out[0]) {
            double cost = tw_rk4_ref(y0, p, traj);
            for (i = 0; i < 2 * TW_RK; i++) CHECK_NEAR(gr_array_get(out[0], i), traj[i], 1e-13);
            CHECK_NEAR(gr_array_get(out[1], 0), cost, 1e-13);
            for (q = 0; q < 4; q++) {
                double *x = q < 2 ? &y0[q] : &p[q - 2], keep = *x, hi, lo;
                *x = keep + hstep; hi = tw_rk4_ref(y0, p, NULL);
                *x = keep - hstep; lo = tw_rk4_ref(y0, p, NULL);
                *x = keep;
                v[q] = (hi - lo) / (2 * hstep);
                CHECK_NEAR(gr_array_get(out[q < 2 ? 2 : 3], q % 2), v[q], 1e-6);
            }
        }
        tw_emits(&w);
    }
    gt_em_work_free(&w);
}

/* the several-taps loop in plain C: S, Z and the cost */
static double tw_taps_ref(const double *u, const double *s0, double *S, double *Z) {
    double s[3 + TW_US], cost = 0;
    int t;
    for (t = 0; t < 3; t++) s[t] = s0[t];
    for (t = 0; t < TW_US; t++) {
        double st = (0.5 * s[t] - 0.4 * tanh(s[t + 2])) + (u[t] + 0.25 * (u[t + 2] * u[t + 3])), z = st * u[t + 2];
        s[t + 3] = st;
        if (S) { S[t] = st; Z[t] = z; }
        cost += st;
    }
    for (t = 0; t < TW_US; t++) { double z = s[t + 3] * u[t + 2]; cost += z * z; }
    return cost;
}
static void tw_check_taps(int k) {
    gt_em_work w;
    const gr_array *out[5];
    double u[TW_UL], s0[3], S[TW_US], Z[TW_US], hstep = 1e-6;
    int i;
    CHECK_EQ_INT(gt_em_work_build(k, &w), 1);
    if (w.f) {
        for (i = 0; i < TW_UL; i++) u[i] = gr_array_get(w.in[0], i);
        for (i = 0; i < 3; i++) s0[i] = gr_array_get(w.in[1], i);
        CHECK_STATUS(gr_call(w.f, (const gr_array *const *)w.in, out), GR_OK);
        if (out[0]) {
            double cost = tw_taps_ref(u, s0, S, Z);
            CHECK_EQ_INT(out[0]->size, TW_US);
            for (i = 0; i < TW_US; i++) { CHECK_NEAR(gr_array_get(out[0], i), S[i], 1e-13); CHECK_NEAR(gr_array_get(out[1], i), Z[i], 1e-13); }
            CHECK_NEAR(gr_array_get(out[2], 0), cost, 1e-12);
            for (i = 0; i < TW_UL + 3; i++) {
                double *x = i < TW_UL ? &u[i] : &s0[i - TW_UL], keep = *x, hi, lo;
                *x = keep + hstep; hi = tw_taps_ref(u, s0, NULL, NULL);
                *x = keep - hstep; lo = tw_taps_ref(u, s0, NULL, NULL);
                *x = keep;
                CHECK_NEAR(gr_array_get(out[i < TW_UL ? 3 : 4], i < TW_UL ? i : i - TW_UL), (hi - lo) / (2 * hstep), 1e-6);
            }
        }
        tw_emits(&w);
    }
    gt_em_work_free(&w);
}

TEST(test_emit_work_taps) { tw_check_taps(5); }
TEST(test_emit_work_taps_checkpoints) { tw_check_taps(8); }

/* the nested loops in plain C: the rows and the cost */
static double tw_nested_ref(const double *U, double h0, double *h) {
    double x = h0, cost = 0;
    int t, k;
    for (t = 0; t < TW_NR; t++) {
        for (k = 0; k < TW_NC; k++) x = x * 0.5 + sin(U[t * TW_NC + k]);
        if (h) h[t] = x;
        cost += x * x;
    }
    return cost;
}
TEST(test_emit_work_nested) {
    gt_em_work w;
    const gr_array *out[4];
    double U[TW_NR * TW_NC], h0, h[TW_NR], hstep = 1e-6;
    int i;
    CHECK_EQ_INT(gt_em_work_build(9, &w), 1);
    if (w.f) {
        for (i = 0; i < TW_NR * TW_NC; i++) U[i] = gr_array_get(w.in[0], i);
        h0 = gr_array_get(w.in[1], 0);
        CHECK_STATUS(gr_call(w.f, (const gr_array *const *)w.in, out), GR_OK);
        if (out[0]) {
            double cost = tw_nested_ref(U, h0, h);
            for (i = 0; i < TW_NR; i++) CHECK_NEAR(gr_array_get(out[0], i), h[i], 1e-14);
            CHECK_NEAR(gr_array_get(out[1], 0), cost, 1e-13);
            for (i = 0; i <= TW_NR * TW_NC; i++) {
                double *x = i < TW_NR * TW_NC ? &U[i] : &h0, keep = *x, hi, lo;
                *x = keep + hstep; hi = tw_nested_ref(U, h0, NULL);
                *x = keep - hstep; lo = tw_nested_ref(U, h0, NULL);
                *x = keep;
                CHECK_NEAR(gr_array_get(out[i < TW_NR * TW_NC ? 2 : 3], i < TW_NR * TW_NC ? i : 0), (hi - lo) / (2 * hstep), 1e-6);
            }
        }
        tw_emits(&w);
    }
    gt_em_work_free(&w);
}

/* the while loop's final value against plain C; the same loop's every row as an output has as many
   rows as the steps run, which the emitted function's fixed shapes cannot say: refused, naming it */
TEST(test_emit_work_until) {
    gt_em_work w;
    const gr_array *out[1];
    double x;
    int t;
    CHECK_EQ_INT(gt_em_work_build(6, &w), 1);
    if (w.f) {
        x = gr_array_get(w.in[1], 0);
        for (t = 0; t < TW_UL; t++) {
            x = 1.3 * x + gr_array_get(w.in[0], t);
            if (x > 5) break;
        }
        CHECK(t > 0 && t < TW_UL - 1);                  /* the loop stops early */
        CHECK_STATUS(gr_call(w.f, (const gr_array *const *)w.in, out), GR_OK);
        if (out[0]) CHECK_NEAR(gr_array_get(out[0], 0), x, 1e-14);
        tw_emits(&w);
        {
            gr_var *y = gr_vector(w.g, GR_F64, "y2"), *x0 = gr_scalar(w.g, GR_F64, "x02"), *r = NULL, *ins[2];
            gr_scan_seq sq;
            gr_scan_out so;
            gr_scan_opts o;
            gr_fn *f;
            FILE *fp = tmpfile();
            sq.x = y; sq.n_taps = 0; sq.taps = NULL;
            so.initial = x0; so.n_taps = 0; so.taps = NULL;
            memset(&o, 0, sizeof o);
            o.name = "grow";
            CHECK_STATUS(gr_scan(tw_until_step, NULL, 1, &sq, 1, &so, 0, NULL, &o, &r), GR_OK);
            ins[0] = y; ins[1] = x0;
            f = gr_function(2, ins, 1, &r, NULL);
            CHECK(f != NULL && fp != NULL);
            if (f && fp) {
                CHECK_STATUS(gr_fn_emit_c(f, (const gr_array *const *)w.in, fp, NULL), GR_ERR_VALUE);
                CHECK_CONTAINS(gr_fn_message(f), "gr_fn_emit_c: Scan 'grow': its output 0");
                CHECK_CONTAINS(gr_fn_message(f), "depends on the data (until)");
                CHECK(ftell(fp) == 0);
                CHECK_STATUS(gr_call(f, (const gr_array *const *)w.in, out), GR_OK);   /* gr_call still runs it */
                if (out[0]) CHECK_EQ_INT(out[0]->size, t + 1);
            }
            if (fp) fclose(fp);
            gr_fn_free(f);
        }
    }
    gt_em_work_free(&w);
}

/* the text of w's emitted function (NULL: emission failed); *loops: its for statements */
static char *tw_emitted(const gt_em_work *w, int *loops) {
    FILE *fp = tmpfile();
    char *text = NULL;
    long n;
    const char *s;
    *loops = 0;
    if (!fp || !w->f) { if (fp) fclose(fp); return NULL; }
    CHECK_STATUS(gr_fn_emit_c(w->f, (const gr_array *const *)w->in, fp, NULL), GR_OK);
    n = ftell(fp);
    if (n > 0 && (text = (char *)calloc((size_t)n + 1, 1)) != NULL) {
        rewind(fp);
        if (fread(text, 1, (size_t)n, fp) != (size_t)n) text[0] = 0;
        for (s = strstr(text, "for ("); s; s = strstr(s + 5, "for (")) ++*loops;
    }
    fclose(fp);
    return text;
}

/* Hv of Rosenbrock's f by hand: with a_i = x_{i+1} - x_i^2, g_i = -400 x_i a_i - 2 (1 - x_i) (i < n-1)
   and g_{i+1} += 200 a_i, Hv_i = (1200 x_i^2 - 400 x_{i+1} + 2) v_i - 400 x_i v_{i+1} (i < n-1),
   Hv_{i+1} += 200 v_{i+1} - 400 x_i v_i. Lengths unknown or declared: the same values, one fused group
   (gr_rop reads the eval point in x's shape, so the function knows v and x have one length), and the
   file emitted for the unknown lengths has no more loops than the declared one's */
TEST(test_emit_work_w3_hv_merged) {
    gt_em_work w[2];
    const gr_array *out[1];
    int loops[2] = { 0, 0 }, d, i;
    for (d = 0; d < 2; d++) {
        char *text;
        CHECK_EQ_INT(gt_em_work_build(10 + d, &w[d]), 1);
        if (!w[d].f) continue;
        CHECK_STATUS(gr_call(w[d].f, (const gr_array *const *)w[d].in, out), GR_OK);
        if (out[0]) {
            double hv[TW_RN] = { 0 };
            for (i = 0; i < TW_RN - 1; i++) {
                double x0 = gr_array_get(w[d].in[0], i), x1 = gr_array_get(w[d].in[0], i + 1);
                double v0 = gr_array_get(w[d].in[1], i), v1 = gr_array_get(w[d].in[1], i + 1);
                hv[i] += (1200 * x0 * x0 - 400 * x1 + 2) * v0 - 400 * x0 * v1;
                hv[i + 1] += 200 * v1 - 400 * x0 * v0;
            }
            for (i = 0; i < TW_RN; i++) CHECK_NEAR(gr_array_get(out[0], i), hv[i], 1e-10 * (1 + fabs(hv[i])));
        }
        text = tw_emitted(&w[d], &loops[d]);
        CHECK(text != NULL);
        if (d == 0) {                                   /* the eval point has x's length: one fused pass */
            char buf[4096];
            const char *q;
            int fused = 0;
            gts_fn_print(w[d].f, buf, sizeof buf);
            for (q = strstr(buf, "= Fused("); q; q = strstr(q + 1, "= Fused(")) fused++;
            CHECK_MSG(fused == 1, "unknown lengths: %d fused groups:\n%s", fused, buf);
        }
        free(text);
    }
    CHECK_MSG(loops[0] > 0 && loops[0] <= loops[1], "unknown lengths: %d loops, declared: %d", loops[0], loops[1]);
    gt_em_work_free(&w[0]);
    gt_em_work_free(&w[1]);
}

/* the mixed-dtype workload's outputs against plain C (make test-emit compares its emitted file with
   gr_call bit for bit, also with an output over an input) */
TEST(test_emit_work_mixed_merged) {
    gt_em_work w;
    const gr_array *out[3];
    int loops = 0, i;
    char *text;
    CHECK_EQ_INT(gt_em_work_build(12, &w), 1);
    if (w.f) {
        CHECK_STATUS(gr_call(w.f, (const gr_array *const *)w.in, out), GR_OK);
        for (i = 0; out[0] && out[1] && out[2] && i < TW_RN; i++) {
            double x = gr_array_get(w.in[0], i), y = gr_array_get(w.in[1], i), s = gr_array_get(w.in[3], 0);
            float b = (float)(exp(x) * y) + (float)gr_array_get(w.in[2], i);
            double c = (double)b - x * 2.0 * s;
            CHECK_NEAR(gr_array_get(out[2], i), (double)b, 1e-6 * (1 + fabs((double)b)));
            CHECK_NEAR(gr_array_get(out[0], i), c, 1e-6 * (1 + fabs(c)));
            CHECK_NEAR(gr_array_get(out[1], i), c * y, 1e-6 * (1 + fabs(c * y)));
        }
        text = tw_emitted(&w, &loops);
        CHECK(text != NULL && loops > 0);
        free(text);
    }
    gt_em_work_free(&w);
}

SUITE(suite_emit_work) = {
    CASE(test_emit_work_w1),
    CASE(test_emit_work_w1_f32),
    CASE(test_emit_work_w4),
    CASE(test_emit_work_rnn),
    CASE(test_emit_work_rnn_checkpoints),
    CASE(test_emit_work_rk4),
    CASE(test_emit_work_taps),
    CASE(test_emit_work_taps_checkpoints),
    CASE(test_emit_work_nested),
    CASE(test_emit_work_until),
    CASE(test_emit_work_w3_hv_merged),
    CASE(test_emit_work_mixed_merged),
    END_SUITE
};
