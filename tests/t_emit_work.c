/* tests/t_emit_work.c: the bench workloads W1 (an MLP's cost and gradient) and W4 (the Jacobian of
   tanh(A x + b)) built small, as bench/bench.c builds them, for gr_fn_emit_c (SEMANTICS.md §20.1).

   suite_emit_work (every run of the test binary): each workload's gr_call against plain C written
   from its definition (the forward pass and the hand-derived gradient), and its emission succeeds
   (every op of the compiled function has a rule). make test-emit (tests/t_emit.c) records one call of
   each through gt_em_work_build, so that the emitted functions are compared with gr_call bit for bit.
   W1's product X W1 sums over D = 140 > 128 (GR__GEMM_KC): the GEMM's blocking is in the comparison. */
#include "harness.h"

#include "t_emit_work.h"

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

int gt_em_work_build(int k, gt_em_work *w) {
    memset(w, 0, sizeof *w);
    switch (k) {
    case 0: return tw_w1(w, GR_F64) ? 1 : -1;
    case 1: return tw_w1(w, GR_F32) ? 1 : -1;
    case 2: return tw_w4(w) ? 1 : -1;
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

SUITE(suite_emit_work) = {
    CASE(test_emit_work_w1),
    CASE(test_emit_work_w1_f32),
    CASE(test_emit_work_w4),
    END_SUITE
};
