/* examples/demo.c: a tour of gradient.h in one file.

   Build and run from the repository root:
       cc -O2 examples/demo.c -lm && ./a.out          (or: make demo)

   1. a 2-layer tanh network, forward pass:  h = tanh(X W1 + b1),  p = softmax(h W2 + b2) by rows,
      with the weights in shared variables and the biases broadcast over the rows of the batch;
   2. a shared counter that every call of the compiled function increments (a gr_update);
   3. the results checked against the same computation written as plain C loops.
   Gradients arrive in a later version of the library; their section will go where main() says. */
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
    m->probs = gr_softmax(gr_add(gr_dot(h, m->w2), m->b2), 1);               /* (BATCH, N_OUT) */
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

int main(void) {
    model m;
    double worst;
    int ok;

    printf("gradient.h %s demo: a 2-layer tanh network (%d -> %d -> %d), forward pass\n\n", GRADIENT_VERSION, N_IN, N_HID, N_OUT);
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

    /* gradients: a section here will differentiate a loss of probs with respect to W1, b1, W2, b2
       once the library has gr_grad (see README.md, "Gradients"). */

    gr_graph_free(m.g);
    return ok ? 0 : 1;
}
