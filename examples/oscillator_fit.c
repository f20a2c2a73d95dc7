/* examples/oscillator_fit.c: fitting the stiffness and damping of an oscillator to observations, by
   gradient descent through a loop.

   The model is x'' = -k x - c x', stepped with RK4 (h = 0.05) for T = 200 steps from x = 1, x' = 0:
   one gr_scan whose state is (x, v) and whose non-sequence is theta = (k, c). The loss is the mean
   squared difference between the positions and the observations (made here from k = 4, c = 0.5
   with a little deterministic noise); its gradient in theta is a loop too, running backwards over
   the steps (backpropagation through time). Plain gradient descent with a fixed step brings theta
   from (2, 0.1) to the true values.

   Build: cc -O2 examples/oscillator_fit.c -lm */
#include <math.h>
#include <stdio.h>
#include <string.h>
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"

enum { T = 200 };
static const double h = 0.05;

/* (v, -k x - c v) for s = (x, v) */
static gr_var *rhs(gr_var *s, gr_var *k, gr_var *c) {
    gr_var *x = gr_index(s, 0, 0), *v = gr_index(s, 0, 1), *parts[2];
    parts[0] = v;
    parts[1] = gr_sub(gr_neg(gr_mul(k, x)), gr_mul(c, v));
    return gr_stack(2, parts, 0);
}

/* one RK4 step: in = (s_{t-1}, theta); out = s_t */
static gr_status rk4(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    gr_var *s = in[0], *k = gr_index(in[1], 0, 0), *c = gr_index(in[1], 0, 1);
    gr_var *half = gr_const(g, 0.5 * h), *full = gr_const(g, h), *k1, *k2, *k3, *k4;
    (void)until; (void)user;
    k1 = rhs(s, k, c);
    k2 = rhs(gr_add(s, gr_mul(half, k1)), k, c);
    k3 = rhs(gr_add(s, gr_mul(half, k2)), k, c);
    k4 = rhs(gr_add(s, gr_mul(full, k3)), k, c);
    out[0] = gr_add(s, gr_mul(gr_const(g, h / 6), gr_add(gr_add(k1, k4), gr_mul(gr_const(g, 2.0), gr_add(k2, k3)))));
    return out[0] ? GR_OK : gr_graph_status(g);
}

/* the observations: the same model in plain C from the true parameters, plus a small wobble */
static void observe(double k, double c, double *obs) {
    double s[2] = { 1, 0 }, a[2], b[2], d[2], e[2], t2[2];
    int t, i;
    for (t = 0; t < T; t++) {
        a[0] = s[1]; a[1] = -k * s[0] - c * s[1];
        for (i = 0; i < 2; i++) t2[i] = s[i] + 0.5 * h * a[i];
        b[0] = t2[1]; b[1] = -k * t2[0] - c * t2[1];
        for (i = 0; i < 2; i++) t2[i] = s[i] + 0.5 * h * b[i];
        d[0] = t2[1]; d[1] = -k * t2[0] - c * t2[1];
        for (i = 0; i < 2; i++) t2[i] = s[i] + h * d[i];
        e[0] = t2[1]; e[1] = -k * t2[0] - c * t2[1];
        for (i = 0; i < 2; i++) s[i] += h / 6 * (a[i] + 2 * b[i] + 2 * d[i] + e[i]);
        obs[t] = s[0] + 0.01 * sin(7.3 * t);
    }
}

int main(void) {
    gr_graph *g = gr_graph_new();
    gr_var *theta = gr_vector(g, GR_F64, "theta"), *obs = gr_vector(g, GR_F64, "obs");
    gr_var *s0 = gr_vector(g, GR_F64, "s0"), *traj = NULL, *loss, *dtheta, *ins[3], *outs[2];
    gr_scan_out state = { NULL, 0, NULL };
    gr_scan_opts opts;
    gr_array *n_steps = gr_array_scalar(GR_I64, T);
    gr_fn *f;
    double obs_v[T], th[2] = { 2.0, 0.1 }, s0_v[2] = { 1, 0 }, lr = 0.5;
    int64_t two = 2, nt = T;
    int it, status = 0;

    memset(&opts, 0, sizeof opts);
    opts.n_steps = gr_constant(g, n_steps);
    opts.name = "rk4";
    state.initial = s0;
    /* traj: (T, 2), the states after each step */
    if (gr_scan(rk4, NULL, 0, NULL, 1, &state, 1, &theta, &opts, &traj) != GR_OK) {
        fprintf(stderr, "gr_scan: %s\n", gr_graph_message(g));
        return 1;
    }
    loss = gr_mean(gr_sqr(gr_sub(gr_reshape(gr_slice(traj, 1, 0, 1, 1), 1, &nt), obs)));
    dtheta = gr_grad1(loss, theta);
    ins[0] = theta; ins[1] = obs; ins[2] = s0;
    outs[0] = loss; outs[1] = dtheta;
    f = gr_function(3, ins, 2, outs, NULL);
    if (!f) {
        fprintf(stderr, "error: %s\n", gr_graph_message(g));
        gr_graph_free(g);
        return 1;
    }
    gr_graph_free(g);
    gr_array_free(n_steps);

    observe(4.0, 0.5, obs_v);
    {
        gr_array *a_obs = gr_array_from(GR_F64, 1, &nt, obs_v), *a_s0 = gr_array_from(GR_F64, 1, &two, s0_v);
        for (it = 0; it <= 400; it++) {
            gr_array *a_th = gr_array_from(GR_F64, 1, &two, th);
            const gr_array *in[3], *out[2];
            in[0] = a_th; in[1] = a_obs; in[2] = a_s0;
            if (gr_call(f, in, out) != GR_OK) {
                fprintf(stderr, "gr_call: %s\n", gr_fn_message(f));
                status = 1;
                gr_array_free(a_th);
                break;
            }
            if (it % 100 == 0)
                printf("step %3d: loss %.6f  k %.4f  c %.4f\n", it, gr_array_get(out[0], 0), th[0], th[1]);
            th[0] -= lr * gr_array_get(out[1], 0);
            th[1] -= lr * gr_array_get(out[1], 1);
            gr_array_free(a_th);
        }
        gr_array_free(a_obs);
        gr_array_free(a_s0);
    }
    printf("fitted k = %.3f, c = %.3f (observations made with k = 4, c = 0.5)\n", th[0], th[1]);
    if (fabs(th[0] - 4.0) > 0.1 || fabs(th[1] - 0.5) > 0.1) status = 1;
    gr_fn_free(f);
    return status;
}
