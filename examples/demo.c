/* examples/demo.c: a tour of gradient.h in one file.

   Build and run from the repository root:
       cc -O2 examples/demo.c -lm && ./a.out          (or: make demo)

   1. a 2-layer tanh network, forward pass:  h = tanh(X W1 + b1),  p = softmax(h W2 + b2) by rows,
      with the weights in shared variables and the biases broadcast over the rows of the batch;
   2. a shared counter that every call of the compiled function increments (a gr_update);
   3. the results checked against the same computation written as plain C loops;
   4. gradients: the cross-entropy loss of the network differentiated with gr_grad with respect to
      the four shared weights, checked against central finite differences (each weight nudged with
      gr_shared_set), then a few steps of gradient descent made by gr_update, the loss going down. */
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"

#include <math.h>
#include <stdio.h>

enum { N_IN = 3, N_HID = 4, N_OUT = 2, BATCH = 3 };

/* fixed weights, so that the printed numbers never change */
static const double W1[N_IN * N_HID] = {  0.5, -0.3,  0.8,  0.1,
                                         -0.6,  0.2,  0.4, -0.9,
                                          0.3,  0.7, -0.5,  0.2 };
static const double B1[N_HID] = { 0.1, -0.1, 0.05, 0.0 };
static const double W2[N_HID * N_OUT] = {  1.0, -1.0,
                                          -0.5,  0.5,
                                           0.8,  0.2,
                                          -0.3,  0.9 };
static const double B2[N_OUT] = { 0.2, -0.2 };

/* three batches of BATCH rows, N_IN features each */
static const double BATCHES[3][BATCH * N_IN] = {
    { 1.0, 0.0, 0.0,   0.0, 1.0, 0.0,   0.0, 0.0, 1.0 },
    { 0.5, 0.5, 0.5,  -1.0, 2.0, 0.0,   2.0, -1.0, 1.0 },
    { 0.0, 0.0, 0.0,   3.0, 3.0, 3.0,  -2.0, -2.0, 0.5 },
};

/* ---- the model, as a graph ------------------------------------------------------------------ */

typedef struct model {
    gr_graph *g;
    gr_var *x;              /* input: a matrix of BATCH x N_IN (any number of rows) */
    gr_var *w1, *b1, *w2, *b2, *calls;   /* shared variables */
    gr_var *logits;         /* h W2 + b2, one row per input row */
    gr_var *probs;          /* softmax over the classes, one row per input row */
} model;

static gr_var *shared_from(gr_graph *g, int ndim, const int64_t *shape, const double *data, const char *name) {
    gr_array *a = gr_array_from(GR_F64, ndim, shape, data);
    gr_var *v = gr_shared(g, a, name);             /* the value is copied */
    gr_array_free(a);
    return v;
}

/* builds the graph; 0 on failure, with the reason in gr_graph_message(m->g) */
static int model_build(model *m) {
    static const int64_t s_w1[2] = { N_IN, N_HID }, s_b1[1] = { N_HID };
    static const int64_t s_w2[2] = { N_HID, N_OUT }, s_b2[1] = { N_OUT };
    gr_array *zero;
    gr_var *h;
    m->g = gr_graph_new();
    if (!m->g) return 0;
    m->x = gr_matrix(m->g, GR_F64, "x");
    m->w1 = shared_from(m->g, 2, s_w1, W1, "W1");
    m->b1 = shared_from(m->g, 1, s_b1, B1, "b1");
    m->w2 = shared_from(m->g, 2, s_w2, W2, "W2");
    m->b2 = shared_from(m->g, 1, s_b2, B2, "b2");
    zero = gr_array_scalar(GR_I64, 0);
    m->calls = gr_shared(m->g, zero, "calls");
    gr_array_free(zero);

    /* every builder returns NULL after a failure and passes NULL on, so one check at the end is enough */
    h = gr_tanh(gr_add(gr_dot(m->x, m->w1), m->b1));                          /* (BATCH, N_HID): b1 broadcast */
    m->logits = gr_add(gr_dot(h, m->w2), m->b2);                             /* (BATCH, N_OUT) */
    m->probs = gr_softmax(m->logits, 1);
    gr_var_set_name(m->probs, "probs");
    return gr_graph_status(m->g) == GR_OK;
}

/* ---- the same computation in plain C --------------------------------------------------------- */

static void reference(const double *x, double *probs) {
    int r, i, j, k;
    for (r = 0; r < BATCH; r++) {
        double h[N_HID], z[N_OUT], m, s = 0;
        for (j = 0; j < N_HID; j++) {
            double a = B1[j];
            for (i = 0; i < N_IN; i++) a += x[r * N_IN + i] * W1[i * N_HID + j];
            h[j] = tanh(a);
        }
        for (k = 0; k < N_OUT; k++) {
            z[k] = B2[k];
            for (j = 0; j < N_HID; j++) z[k] += h[j] * W2[j * N_OUT + k];
        }
        m = z[0];
        for (k = 1; k < N_OUT; k++) if (z[k] > m) m = z[k];
        for (k = 0; k < N_OUT; k++) s += exp(z[k] - m);
        for (k = 0; k < N_OUT; k++) probs[r * N_OUT + k] = exp(z[k] - m) / s;
    }
}

/* ---- sections -------------------------------------------------------------------------------- */

/* forward pass over the three batches; returns the largest difference from the plain C result,
   or -1 on an error */
static double forward_section(model *m) {
    static const int64_t shape_x[2] = { BATCH, N_IN };
    gr_var *outs[2];
    gr_update upd;
    gr_fn_opts opts = { 0 };
    gr_fn *f;
    double worst = 0;
    int b, r, k;

    outs[0] = m->probs;
    outs[1] = m->calls;                  /* an output that is a shared variable: its value before the update */
    upd.shared = m->calls;
    upd.value = gr_add(m->calls, gr_const(m->g, 1));   /* calls := calls + 1 after each call (stays int64) */
    opts.updates = &upd;
    opts.n_updates = 1;
    f = gr_function(1, &m->x, 2, outs, &opts);
    if (!f) {
        fprintf(stderr, "gr_function failed: %s\n", gr_graph_message(m->g));
        return -1;
    }
    printf("compiled: %lu nodes after the rewrites\n", (unsigned long)gr_fn_node_count(f));

    for (b = 0; b < 3; b++) {
        gr_array *xa = gr_array_from(GR_F64, 2, shape_x, BATCHES[b]);
        const gr_array *in[1];
        const gr_array *out[2];
        double want[BATCH * N_OUT];
        in[0] = xa;
        if (!xa || gr_call(f, in, out) != GR_OK) {
            fprintf(stderr, "gr_call failed: %s\n", gr_fn_message(f));
            gr_array_free(xa);
            gr_fn_free(f);
            return -1;
        }
        reference(BATCHES[b], want);
        printf("\ncall %d (calls before it: %.0f)\n", b + 1, gr_array_get(out[1], 0));
        printf("    x                          probs\n");
        for (r = 0; r < BATCH; r++) {
            printf("    [%5.2f %5.2f %5.2f]      [", BATCHES[b][r * N_IN], BATCHES[b][r * N_IN + 1], BATCHES[b][r * N_IN + 2]);
            for (k = 0; k < N_OUT; k++) {
                double p = gr_array_get(out[0], r * N_OUT + k);
                double d = fabs(p - want[r * N_OUT + k]);
                if (d > worst) worst = d;
                printf("%s%.6f", k ? " " : "", p);
            }
            printf("]\n");
        }
        gr_array_free(xa);
    }
    printf("\ncalls after 3 calls: %.0f (read with gr_shared_get)\n", gr_array_get(gr_shared_get(m->calls), 0));
    gr_fn_free(f);
    return worst;
}

/* the loss: the mean cross-entropy of the network's class probabilities against one-hot targets,
   loss = -mean_rows(sum_k T[r,k] log p[r,k]), with log p from gr_log_softmax (stable) */
static gr_var *loss_of(model *m, gr_var *targets) {
    gr_var *logp = gr_log_softmax(m->logits, 1);
    gr_var *loss = gr_neg(gr_mean(gr_sum_axis(gr_mul(targets, logp), 1)));
    gr_var_set_name(loss, "loss");
    return loss;
}

/* the loss as a plain double, by calling f_loss */
static int call_loss(gr_fn *f_loss, const gr_array *const *in, double *loss) {
    const gr_array *out[1];
    if (gr_call(f_loss, in, out) != GR_OK) {
        fprintf(stderr, "gr_call failed: %s\n", gr_fn_message(f_loss));
        return 0;
    }
    *loss = gr_array_get(out[0], 0);
    return 1;
}

/* the largest difference between the analytic gradients and central differences
   (loss(w + h) - loss(w - h)) / 2h, each weight of each shared variable nudged in turn; -1 on an error */
static double finite_difference_check(gr_var *const *params, const gr_array *const *grads, gr_fn *f_loss,
                                      const gr_array *const *in) {
    const double h = 1e-6;
    double worst = 0;
    int p;
    for (p = 0; p < 4; p++) {
        gr_array *w = gr_array_copy(gr_shared_get(params[p]));
        int64_t k;
        if (!w) return -1;
        for (k = 0; k < w->size; k++) {
            double w0 = gr_array_get(w, k), up, down, d;
            gr_array_set(w, k, w0 + h);
            if (gr_shared_set(params[p], w) != GR_OK || !call_loss(f_loss, in, &up)) { gr_array_free(w); return -1; }
            gr_array_set(w, k, w0 - h);
            if (gr_shared_set(params[p], w) != GR_OK || !call_loss(f_loss, in, &down)) { gr_array_free(w); return -1; }
            gr_array_set(w, k, w0);
            d = fabs((up - down) / (2 * h) - gr_array_get(grads[p], k));
            if (d > worst) worst = d;
        }
        if (gr_shared_set(params[p], w) != GR_OK) { gr_array_free(w); return -1; }   /* restored */
        gr_array_free(w);
    }
    return worst;
}

/* the gradient of the loss over all nine rows of BATCHES, checked, then STEPS steps of gradient
   descent; returns 1 when the check passed and the loss went down at every step */
static int gradient_section(model *m) {
    enum { ROWS = 3 * BATCH, STEPS = 8 };
    static const int64_t shape_x[2] = { ROWS, N_IN }, shape_t[2] = { ROWS, N_OUT };
    static const double TARGETS[ROWS * N_OUT] = { 1, 0,  0, 1,  1, 0,     /* one-hot classes of the rows */
                                                  1, 0,  0, 1,  1, 0,
                                                  0, 1,  1, 0,  0, 1 };
    const double rate = 0.5;
    gr_var *t = gr_matrix(m->g, GR_F64, "t");
    gr_var *loss = loss_of(m, t);
    gr_var *params[4], *grads[4], *ins[2];
    gr_update upd[4];
    gr_fn_opts opts = { 0 };
    gr_fn *f_loss = NULL, *f_grad = NULL, *train = NULL;
    gr_array *xa = gr_array_from(GR_F64, 2, shape_x, BATCHES), *ta = gr_array_from(GR_F64, 2, shape_t, TARGETS);
    const gr_array *in[2], *g_out[4];
    double worst, before, prev, now = 0;
    int p, step, ok = 0, down = 1;

    params[0] = m->w1; params[1] = m->b1; params[2] = m->w2; params[3] = m->b2;
    ins[0] = m->x; ins[1] = t;
    in[0] = xa; in[1] = ta;
    /* grads[p] = d loss / d params[p], each shaped like its parameter; NULL options: Aesara's defaults */
    if (gr_grad(loss, 4, params, grads, NULL) != GR_OK) goto fail;
    /* the new values of the weights: w - rate dloss/dw, applied after each call of train */
    for (p = 0; p < 4; p++) {
        upd[p].shared = params[p];
        upd[p].value = gr_sub(params[p], gr_mul(gr_const(m->g, rate), grads[p]));
    }
    opts.updates = upd;
    opts.n_updates = 4;
    f_loss = gr_function(2, ins, 1, &loss, NULL);
    f_grad = gr_function(2, ins, 4, grads, NULL);
    train = gr_function(2, ins, 1, &loss, &opts);     /* the loss before the step, then the step */
    if (!f_loss || !f_grad || !train) goto fail;

    printf("\ngradients of %s over the %d rows of the three batches, with gr_grad:\n", gr_var_name(loss), ROWS);
    if (gr_call(f_grad, in, g_out) != GR_OK) { fprintf(stderr, "gr_call failed: %s\n", gr_fn_message(f_grad)); goto done; }
    for (p = 0; p < 4; p++) {
        const gr_array *gp = g_out[p];
        int64_t k;
        char shape[32];
        if (gp->ndim == 2) snprintf(shape, sizeof shape, "(%d, %d)", (int)gp->shape[0], (int)gp->shape[1]);
        else snprintf(shape, sizeof shape, "(%d,)", (int)gp->shape[0]);
        printf("    %-12s %-7s", gr_var_name(grads[p]), shape);
        for (k = 0; k < gp->size && k < 4; k++) printf(" %+.6f", gr_array_get(gp, k));
        printf("%s\n", gp->size > 4 ? " ..." : "");
    }
    worst = finite_difference_check(params, g_out, f_loss, in);
    if (worst < 0) goto done;
    printf("largest difference from central finite differences: %.3g (%s)\n", worst, worst < 1e-7 ? "ok" : "WRONG");

    printf("\ngradient descent, w := w - %.1f dloss/dw for W1, b1, W2, b2 (gr_update):\n", rate);
    if (!call_loss(f_loss, in, &before)) goto done;
    prev = before;
    for (step = 0; step < STEPS; step++) {
        const gr_array *out[1];
        if (gr_call(train, in, out) != GR_OK) { fprintf(stderr, "gr_call failed: %s\n", gr_fn_message(train)); goto done; }
        now = gr_array_get(out[0], 0);                   /* the loss before this step */
        if (step > 0 && now >= prev) down = 0;
        printf("    step %d   loss %.6f\n", step, now);
        prev = now;
    }
    if (!call_loss(f_loss, in, &now)) goto done;
    if (now >= prev) down = 0;
    printf("    after %d steps   loss %.6f (%s)\n", STEPS, now, down ? "down at every step" : "NOT DECREASING");
    ok = worst < 1e-7 && down && now < before;
    goto done;
fail:
    fprintf(stderr, "building the gradient failed: %s\n", gr_graph_message(m->g));
done:
    gr_fn_free(f_loss); gr_fn_free(f_grad); gr_fn_free(train);
    gr_array_free(xa); gr_array_free(ta);
    return ok;
}

int main(void) {
    model m;
    double worst;
    int ok;

    printf("gradient.h %s demo: a 2-layer tanh network (%d -> %d -> %d), forward pass and gradients\n\n", GRADIENT_VERSION_STRING, N_IN, N_HID, N_OUT);
    if (!model_build(&m)) {
        fprintf(stderr, "building the graph failed: %s\n", gr_graph_message(m.g));
        gr_graph_free(m.g);
        return 1;
    }
    printf("the graph of probs:\n");
    gr_print(stdout, m.probs);
    printf("\n");

    worst = forward_section(&m);
    if (worst < 0) { gr_graph_free(m.g); return 1; }
    ok = worst < 1e-12;
    printf("largest difference from plain C loops: %.3g (%s)\n", worst, ok ? "ok" : "WRONG");

    if (ok) ok = gradient_section(&m);

    gr_graph_free(m.g);
    return ok ? 0 : 1;
}
