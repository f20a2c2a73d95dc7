/* examples/digits_mlp.c: a small neural network on real data, the 8x8 handwritten digits
   (examples/data/digits.csv: 1797 images of 64 pixels, 0..16, and their digit; the UCI "Optical
   Recognition of Handwritten Digits" test set, as scikit-learn ships it (load_digits); CC BY 4.0;
   source and licence in examples/data/README.md).
   Build and run from the repository root:
       cc -O2 examples/digits_mlp.c -lm && ./a.out [examples/data/digits.csv]

   A multilayer perceptron, 64 pixels (scaled to [0, 1]) -> 32 tanh units -> 10 logits. The images
   are put in a random order (a fixed seed); the first 1350 train it by minibatch gradient descent
   (batches of 50, in a new order each epoch; the four weight arrays are shared variables moved by
   gr_update), the other 447 test it, one progress line per epoch. It checks the data (1797
   images, the class counts of the set), that the first cost is log 10 (the output layer starts at
   zero, so every digit has probability 1/10), that the training cost falls below 0.1, that at
   least 95 % of the test images are classified right (97.8 % after 25 epochs), and that a forward
   pass in plain C with the learned weights classifies exactly the same number of test images
   right as the compiled graph; it exits 0 only then. About 0.1 s at -O2. */
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#define N_ALL 1797
#define N_TRAIN 1350
#define P 64                    /* pixels */
#define H 32                    /* hidden units */
#define C 10                    /* digits */
#define BATCH 50
#define EPOCHS 25
#define LR 0.3
#define MIN_ACCURACY 0.95        /* 97.8 % with these settings */

/* reads rows of 64 pixels and a digit after a header line; returns the count, -1 on error */
static int read_digits(const char *path, double *x, int64_t *label) {
    char line[512];
    int n = 0;
    FILE *fp = fopen(path, "r");
    if (!fp) return -1;
    if (!fgets(line, sizeof line, fp)) { fclose(fp); return -1; }      /* the header */
    while (n < N_ALL && fgets(line, sizeof line, fp)) {
        char *s = line, *end;
        int j;
        for (j = 0; j <= P; j++) {
            double v = strtod(s, &end);
            if (end == s) break;
            if (j < P) x[n * P + j] = v / 16.0;
            else label[n] = (int64_t)v;
            s = *end == ',' ? end + 1 : end;
        }
        if (j == P + 1 && label[n] >= 0 && label[n] < C) n++;
    }
    fclose(fp);
    return n;
}

static uint64_t rng_state = 88172645463325252ull;
static double uniform(void) {                      /* xorshift64: [0, 1) */
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* a gr_array over the caller's memory, no copy */
static gr_array view(gr_dtype dt, int rows, int cols, void *data) {
    gr_array a;
    memset(&a, 0, sizeof a);
    a.dtype = dt; a.ndim = cols ? 2 : 1; a.shape[0] = rows; a.shape[1] = cols;
    a.size = (int64_t)rows * (cols ? cols : 1); a.data = data;
    return a;
}

/* the test images the learned weights classify right, in plain C (tanh layer, then argmax) */
static int plain_correct(const double *x, const int64_t *label, int n, const gr_array *W1, const gr_array *b1,
                         const gr_array *W2, const gr_array *b2) {
    int i, j, k, h, right = 0;
    for (i = 0; i < n; i++) {
        double a[H], best = -INFINITY;
        int arg = 0;
        for (h = 0; h < H; h++) {
            double z = gr_array_get(b1, h);
            for (j = 0; j < P; j++) z += x[i * P + j] * gr_array_get(W1, j * H + h);
            a[h] = tanh(z);
        }
        for (k = 0; k < C; k++) {
            double z = gr_array_get(b2, k);
            for (h = 0; h < H; h++) z += a[h] * gr_array_get(W2, h * C + k);
            if (z > best) { best = z; arg = k; }        /* the first of equal maxima, as argmax */
        }
        right += arg == label[i];
    }
    return right;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "examples/data/digits.csv";
    static double x[N_ALL * P], xb[BATCH * P];
    static int64_t label[N_ALL], yb[BATCH];
    static const int want_counts[C] = { 178, 182, 177, 183, 181, 182, 181, 179, 174, 180 };
    int n = read_digits(path, x, label), order[N_TRAIN], counts[C] = { 0 }, i, j, k, epoch, failures = 0;
    int n_test = n - N_TRAIN, graph_right = 0, c_right;
    int64_t s1[2] = { P, H }, s1b[1] = { H }, s2[2] = { H, C }, s2b[1] = { C };
    double first_cost = -1, train_cost = 0, acc = 0, scale = sqrt(6.0 / (P + H));
    gr_graph *g;
    gr_array *w1, *b1a, *w2, *b2a, xa, ya;
    gr_var *X, *y, *W1, *b1, *W2, *b2, *logits, *cost, *wrt[4], *grads[4] = { NULL, NULL, NULL, NULL }, *ins[2], *evals[2];
    gr_update upd[4];
    gr_fn_opts fo;
    gr_fn *step, *eval;
    const gr_array *in[2], *out[2];
    if (n < 1) { fprintf(stderr, "cannot read %s (run from the repository root, or give the path)\n", path); return 1; }

    for (i = 0; i < n; i++) counts[label[i]]++;
    printf("%d images, %d for training, %d for testing; per digit:", n, N_TRAIN, n_test);
    for (k = 0; k < C; k++) printf(" %d", counts[k]);
    printf("\n");
    if (n != N_ALL || memcmp(counts, want_counts, sizeof counts) != 0) { printf("WRONG: not the data set\n"); return 1; }

    for (i = n - 1; i > 0; i--) {                      /* the images in a random order (Fisher-Yates, fixed seed) */
        int r = (int)(uniform() * (i + 1));
        double t[P];
        int64_t tl = label[i];
        memcpy(t, &x[i * P], sizeof t); memcpy(&x[i * P], &x[r * P], sizeof t); memcpy(&x[r * P], t, sizeof t);
        label[i] = label[r]; label[r] = tl;
    }
    g = gr_graph_new();                                /* weights: W1 uniform in +-sqrt(6 / (64 + 32)), the rest 0 */
    w1 = gr_array_new(GR_F64, 2, s1); b1a = gr_array_new(GR_F64, 1, s1b);
    w2 = gr_array_new(GR_F64, 2, s2); b2a = gr_array_new(GR_F64, 1, s2b);
    for (i = 0; i < P * H; i++) gr_array_set(w1, i, scale * (2 * uniform() - 1));
    X = gr_matrix(g, GR_F64, "X");
    y = gr_vector(g, GR_I64, "digit");
    W1 = gr_shared(g, w1, "W1"); b1 = gr_shared(g, b1a, "b1");
    W2 = gr_shared(g, w2, "W2"); b2 = gr_shared(g, b2a, "b2");
    logits = gr_add(gr_dot(gr_tanh(gr_add(gr_dot(X, W1), b1)), W2), b2);
    cost = gr_crossentropy(logits, y);
    gr_var_set_name(cost, "cost");
    wrt[0] = W1; wrt[1] = b1; wrt[2] = W2; wrt[3] = b2;
    gr_grad(cost, 4, wrt, grads, NULL);
    for (k = 0; k < 4; k++) { upd[k].shared = wrt[k]; upd[k].value = gr_sub(wrt[k], gr_mul(gr_const(g, LR), grads[k])); }
    memset(&fo, 0, sizeof fo);
    fo.updates = upd; fo.n_updates = 4;
    ins[0] = X; ins[1] = y;
    step = gr_function(2, ins, 1, &cost, &fo);         /* one minibatch step: the cost, then the update */
    evals[0] = cost;
    evals[1] = gr_sum(gr_cast(gr_eq(gr_argmax_axis(logits, 1), y), GR_I64));           /* images right */
    eval = gr_function(2, ins, 2, evals, NULL);
    if (!step || !eval) { fprintf(stderr, "%s\n", gr_graph_message(g)); return 1; }

    for (i = 0; i < N_TRAIN; i++) order[i] = i;
    xa = view(GR_F64, BATCH, P, xb); ya = view(GR_I64, BATCH, 0, yb);
    for (epoch = 1; epoch <= EPOCHS; epoch++) {
        for (i = N_TRAIN - 1; i > 0; i--) {            /* a new order (Fisher-Yates) */
            int r = (int)(uniform() * (i + 1)), t = order[i];
            order[i] = order[r]; order[r] = t;
        }
        train_cost = 0;
        for (i = 0; i < N_TRAIN; i += BATCH) {
            for (j = 0; j < BATCH; j++) {
                memcpy(&xb[j * P], &x[order[i + j] * P], sizeof(double) * P);
                yb[j] = label[order[i + j]];
            }
            in[0] = &xa; in[1] = &ya;
            if (gr_call(step, in, out) != GR_OK) { fprintf(stderr, "%s\n", gr_fn_message(step)); return 1; }
            if (first_cost < 0) first_cost = gr_array_get(out[0], 0);
            train_cost += gr_array_get(out[0], 0) * BATCH / N_TRAIN;   /* (the mean over the epoch's batches) */
        }
        {
            gr_array ta = view(GR_F64, n_test, P, &x[N_TRAIN * P]), tl = view(GR_I64, n_test, 0, &label[N_TRAIN]);
            in[0] = &ta; in[1] = &tl;
            if (gr_call(eval, in, out) != GR_OK) { fprintf(stderr, "%s\n", gr_fn_message(eval)); return 1; }
            graph_right = (int)gr_array_get(out[1], 0);
            acc = (double)graph_right / n_test;
            printf("epoch %2d  training cost %.4f  test cost %.4f  test accuracy %.4f\n", epoch, train_cost,
                   gr_array_get(out[0], 0), acc);
        }
    }

    c_right = plain_correct(&x[N_TRAIN * P], &label[N_TRAIN], n_test, gr_shared_get(W1), gr_shared_get(b1),
                            gr_shared_get(W2), gr_shared_get(b2));
    printf("test images right: %d by the compiled graph, %d by plain C\n", graph_right, c_right);
    if (fabs(first_cost - log(10.0)) > 1e-12) { printf("WRONG: the first cost %.15f is not log 10\n", first_cost); failures++; }
    if (!(train_cost < 0.1)) { printf("WRONG: the training cost did not fall below 0.1\n"); failures++; }
    if (c_right != graph_right) { printf("WRONG: plain C and the graph disagree\n"); failures++; }
    if (!(acc >= MIN_ACCURACY)) { printf("WRONG: test accuracy below %.2f\n", MIN_ACCURACY); failures++; }
    if (failures) printf("FAILED\n");
    else printf("ok: log 10 at the start, %.1f %% of the %d test digits classified right\n", 100.0 * acc, n_test);
    gr_fn_free(step); gr_fn_free(eval);
    gr_array_free(w1); gr_array_free(b1a); gr_array_free(w2); gr_array_free(b2a);
    gr_graph_free(g);
    return failures ? 1 : 0;
}
