/* examples/penguins_softmax.c: a softmax classifier of real data, the Palmer penguins
   (examples/data/penguins.csv: species and four measurements of 342 penguins; its source and
   licence, CC0, in examples/data/README.md).
   Build and run from the repository root:
       cc -O2 examples/penguins_softmax.c -lm && ./a.out [examples/data/penguins.csv]

   The species (Adelie, Chinstrap, Gentoo) from bill length, bill depth, flipper length and body
   mass, standardised: logits = X W + b, cost = crossentropy(logits, species) + (lambda / 2) |W|^2,
   minimised by full-batch gradient descent (W and b shared variables moved by gr_update, the
   gradient from gr_grad, the accuracy from gr_argmax_axis), one progress line per 500 epochs.
   The penalty makes the optimum unique (the classes are almost separable, and without it the
   weights would grow for ever). It checks the data (151, 68 and 123 birds of each species), that
   the first cost, at W = 0 and b = 0, is log 3, that the gradient at the end is below 1e-6 (the
   optimum is reached), that the cost there equals the same cost computed in plain C from the
   learned W and b, and that at least 98 % of the birds are classified right (a linear model
   separates these species almost perfectly); it exits 0 only then. */
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_ROWS 400
#define D 4
#define C 3
#define EPOCHS 1500
#define LR 1.0
#define LAMBDA 0.01

static const char *const species_names[C] = { "Adelie", "Chinstrap", "Gentoo" };

/* reads "species,bill_length,bill_depth,flipper_length,body_mass" rows; returns the count, -1 on error */
static int read_penguins(const char *path, double *x, int64_t *label) {
    char line[256], name[32];
    double v[D];
    int n = 0, c;
    FILE *fp = fopen(path, "r");
    if (!fp) return -1;
    if (!fgets(line, sizeof line, fp)) { fclose(fp); return -1; }          /* the header */
    while (n < MAX_ROWS && fgets(line, sizeof line, fp)) {
        if (sscanf(line, "%31[^,],%lf,%lf,%lf,%lf", name, &v[0], &v[1], &v[2], &v[3]) != 5) continue;
        for (c = 0; c < C && strcmp(name, species_names[c]) != 0; c++) {}
        if (c == C) continue;
        memcpy(&x[n * D], v, sizeof v);
        label[n++] = c;
    }
    fclose(fp);
    return n;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "examples/data/penguins.csv";
    static double x[MAX_ROWS * D];
    static int64_t label[MAX_ROWS];
    int n = read_penguins(path, x, label), i, j, k, epoch, counts[C] = { 0, 0, 0 }, failures = 0;
    double mean[D], sd[D], first_cost = 0, cost = 0, acc = 0, gnorm = 0;
    int64_t wshape[2] = { D, C }, bshape[1] = { C };
    gr_graph *g;
    gr_array *w0, *b0, xa, la;
    gr_var *X, *y, *W, *b, *logits, *loss, *wrt[2], *grads[2] = { NULL, NULL }, *outs[3], *ins[2];
    gr_update upd[2];
    gr_fn_opts fo;
    gr_fn *f;
    const gr_array *in[2], *out[3];
    if (n < 1) { fprintf(stderr, "cannot read %s (run from the repository root, or give the path)\n", path); return 1; }

    for (i = 0; i < n; i++) counts[label[i]]++;
    printf("%d penguins: %d %s, %d %s, %d %s\n", n, counts[0], species_names[0], counts[1], species_names[1],
           counts[2], species_names[2]);
    if (n != 342 || counts[0] != 151 || counts[1] != 68 || counts[2] != 123) { printf("WRONG: not the data set\n"); failures++; }
    for (j = 0; j < D; j++) {                                 /* standardise each measurement */
        mean[j] = sd[j] = 0;
        for (i = 0; i < n; i++) mean[j] += x[i * D + j] / n;
        for (i = 0; i < n; i++) sd[j] += (x[i * D + j] - mean[j]) * (x[i * D + j] - mean[j]) / n;
        sd[j] = sqrt(sd[j]);
        for (i = 0; i < n; i++) x[i * D + j] = (x[i * D + j] - mean[j]) / sd[j];
    }

    g = gr_graph_new();
    w0 = gr_array_new(GR_F64, 2, wshape);
    b0 = gr_array_new(GR_F64, 1, bshape);
    X = gr_matrix(g, GR_F64, "X");
    y = gr_vector(g, GR_I64, "species");
    W = gr_shared(g, w0, "W");
    b = gr_shared(g, b0, "b");
    logits = gr_add(gr_dot(X, W), b);
    loss = gr_add(gr_crossentropy(logits, y), gr_mul(gr_const(g, 0.5 * LAMBDA), gr_sum(gr_sqr(W))));
    gr_var_set_name(loss, "cost");
    wrt[0] = W; wrt[1] = b;
    gr_grad(loss, 2, wrt, grads, NULL);
    outs[0] = loss;
    outs[1] = gr_mean(gr_cast(gr_eq(gr_argmax_axis(logits, 1), y), GR_F64));              /* accuracy */
    outs[2] = gr_sqrt(gr_add(gr_sum(gr_sqr(grads[0])), gr_sum(gr_sqr(grads[1]))));        /* |gradient| */
    upd[0].shared = W; upd[0].value = gr_sub(W, gr_mul(gr_const(g, LR), grads[0]));
    upd[1].shared = b; upd[1].value = gr_sub(b, gr_mul(gr_const(g, LR), grads[1]));
    memset(&fo, 0, sizeof fo);
    fo.updates = upd; fo.n_updates = 2;
    ins[0] = X; ins[1] = y;
    f = gr_function(2, ins, 3, outs, &fo);
    if (!f) { fprintf(stderr, "%s\n", gr_graph_message(g)); return 1; }

    memset(&xa, 0, sizeof xa);                                 /* the data, without a copy */
    xa.dtype = GR_F64; xa.ndim = 2; xa.shape[0] = n; xa.shape[1] = D; xa.size = (int64_t)n * D; xa.data = x;
    memset(&la, 0, sizeof la);
    la.dtype = GR_I64; la.ndim = 1; la.shape[0] = n; la.size = n; la.data = label;
    in[0] = &xa; in[1] = &la;
    for (epoch = 1; epoch <= EPOCHS; epoch++) {                /* a call returns the cost before its update */
        if (gr_call(f, in, out) != GR_OK) { fprintf(stderr, "%s\n", gr_fn_message(f)); return 1; }
        cost = gr_array_get(out[0], 0); acc = gr_array_get(out[1], 0); gnorm = gr_array_get(out[2], 0);
        if (epoch == 1) first_cost = cost;
        if (epoch == 1 || epoch % 500 == 0)
            printf("epoch %4d  cost %.10f  accuracy %.4f  |gradient| %.2e\n", epoch, cost, acc, gnorm);
    }

    {
        const gr_array *Wa = gr_shared_get(W), *ba = gr_shared_get(b);
        double ce = 0, sq = 0, plain;                          /* the cost in plain C at the current W and b, */
        for (i = 0; i < n; i++) {
            double z[C], m = -INFINITY, s = 0;
            for (k = 0; k < C; k++) {
                z[k] = gr_array_get(ba, k);
                for (j = 0; j < D; j++) z[k] += x[i * D + j] * gr_array_get(Wa, j * C + k);
                if (z[k] > m) m = z[k];
            }
            for (k = 0; k < C; k++) s += exp(z[k] - m);
            ce += (log(s) + m - z[label[i]]) / n;
        }
        for (k = 0; k < D * C; k++) sq += gr_array_get(Wa, k) * gr_array_get(Wa, k);
        plain = ce + 0.5 * LAMBDA * sq;
        if (gr_call(f, in, out) != GR_OK) { fprintf(stderr, "%s\n", gr_fn_message(f)); return 1; }   /* which a call measures */
        printf("cost %.12f, the same cost in plain C %.12f\n", gr_array_get(out[0], 0), plain);
        if (fabs(gr_array_get(out[0], 0) - plain) > 1e-12 * fabs(plain)) { printf("WRONG: the costs differ\n"); failures++; }
    }
    for (k = 0; k < C; k++) {
        printf("%-9s weights:", species_names[k]);
        for (j = 0; j < D; j++) printf(" %8.4f", gr_array_get(gr_shared_get(W), j * C + k));
        printf("  bias %8.4f\n", gr_array_get(gr_shared_get(b), k));
    }
    if (fabs(first_cost - log(3.0)) > 1e-14) { printf("WRONG: the first cost is not log 3\n"); failures++; }
    if (!(gnorm < 1e-6)) { printf("WRONG: the gradient did not vanish\n"); failures++; }
    if (!(acc >= 0.98)) { printf("WRONG: accuracy below 0.98\n"); failures++; }
    printf(failures ? "FAILED\n" : "ok: log 3 at the start, the optimum reached, %.1f %% of the penguins classified right\n",
           100.0 * acc);
    gr_fn_free(f);
    gr_array_free(w0); gr_array_free(b0);
    gr_graph_free(g);
    return failures ? 1 : 0;
}
