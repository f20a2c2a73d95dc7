/* examples/softmax_classifier.c: a softmax classifier trained by minibatch gradient descent.
   The data stay in shared variables; a step takes a vector of row indices and gathers its rows
   with gr_take, so one compiled function serves every minibatch, and another evaluates any split.
   Build: cc -O2 examples/softmax_classifier.c -lm

     logits = X[idx] W + b,   cost = crossentropy(logits, y[idx]) + 1e-3 sum(W^2)
     W := W - 0.5 dcost/dW,   b := b - 0.5 dcost/db       (one gr_call per minibatch)
     accuracy = mean(argmax(logits, axis 1) == y[idx])

   It exits with 0 when the held-out accuracy is at least 0.9 and the training loss it reports
   agrees with the same loss computed in plain C from the learned W and b. */
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"
#include <math.h>

#define N 900          /* rows: the first N_TRAIN train, the rest are held out */
#define N_TRAIN 750
#define D 5            /* features */
#define K 3            /* classes */
#define BATCH 50
#define EPOCHS 20

static uint64_t mix(uint64_t z) {
    z = z * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static double det(uint64_t i) { return 2.0 * ((double)(mix(i) >> 11) / 9007199254740992.0) - 1.0; }   /* [-1, 1) */

/* the mean cross-entropy of rows [lo, hi) of x under (w, b), in plain C, stable */
static double plain_loss(const double *x, const int64_t *y, const double *w, const double *b, int lo, int hi) {
    double total = 0;
    int i, j, k;
    for (i = lo; i < hi; i++) {
        double z[K], m = -INFINITY, s = 0;
        for (k = 0; k < K; k++) {
            z[k] = b[k];
            for (j = 0; j < D; j++) z[k] += x[i * D + j] * w[j * K + k];
            if (z[k] > m) m = z[k];
        }
        for (k = 0; k < K; k++) s += exp(z[k] - m);
        total += m + log(s) - z[y[i]];
    }
    return total / (hi - lo);
}

int main(void) {
    static double xs[N * D], true_w[D * K];
    static int64_t ys[N], order[N_TRAIN], eval_train[N_TRAIN], eval_test[N - N_TRAIN];
    int64_t xshape[2] = { N, D }, n = N, wshape[2] = { D, K }, nk = K, nb = BATCH, ntr = N_TRAIN, nte = N - N_TRAIN;
    gr_graph *g = gr_graph_new();
    gr_array *xa, *ya, *w0 = gr_array_new(GR_F64, 2, wshape), *b0 = gr_array_new(GR_F64, 1, &nk);
    gr_array *batch = gr_array_new(GR_I64, 1, &nb), *train_idx, *test_idx;
    gr_var *X, *Y, *W, *B, *idx = gr_vector(g, GR_I64, "idx"), *logits, *labels, *xent, *cost, *accuracy, *params[2], *grads[2], *outs[2];
    gr_update upd[2];
    gr_fn_opts fo;
    gr_fn *train = NULL, *eval = NULL;
    const gr_array *in[1], *out[2];
    double first_loss = 0, train_loss = 0, train_acc = 0, test_acc = 0, plain;
    int i, j, k, epoch, ok;

    /* three classes from a hidden linear rule with noise */
    for (j = 0; j < D * K; j++) true_w[j] = 2.0 * det(5000 + (uint64_t)j);
    for (i = 0; i < N; i++) {
        double best = -INFINITY;
        for (j = 0; j < D; j++) xs[i * D + j] = det((uint64_t)(i * D + j));
        for (k = 0; k < K; k++) {
            double s = 0.25 * det(9000 + (uint64_t)(i * K + k));
            for (j = 0; j < D; j++) s += xs[i * D + j] * true_w[j * K + k];
            if (s > best) { best = s; ys[i] = k; }
        }
    }
    xa = gr_array_from(GR_F64, 2, xshape, xs);
    ya = gr_array_from(GR_I64, 1, &n, ys);
    for (i = 0; i < N_TRAIN; i++) eval_train[i] = order[i] = i;
    for (i = N_TRAIN; i < N; i++) eval_test[i - N_TRAIN] = i;
    train_idx = gr_array_from(GR_I64, 1, &ntr, eval_train);
    test_idx = gr_array_from(GR_I64, 1, &nte, eval_test);

    /* the model: the data and the parameters are shared; only the row indices come in */
    X = gr_shared(g, xa, "X");
    Y = gr_shared(g, ya, "y");
    W = gr_shared(g, w0, "W");
    B = gr_shared(g, b0, "b");
    logits = gr_add(gr_dot(gr_take(X, idx, 0), W), B);
    labels = gr_take(Y, idx, 0);
    xent = gr_crossentropy(logits, labels);
    cost = gr_add(xent, gr_mul(gr_const(g, 1e-3), gr_sum(gr_sqr(W))));
    accuracy = gr_mean(gr_eq(gr_argmax_axis(logits, 1), labels));
    params[0] = W; params[1] = B;
    if (gr_grad(cost, 2, params, grads, NULL) != GR_OK) goto fail;
    upd[0].shared = W; upd[0].value = gr_sub(W, gr_mul(gr_const(g, 0.5), grads[0]));
    upd[1].shared = B; upd[1].value = gr_sub(B, gr_mul(gr_const(g, 0.5), grads[1]));
    memset(&fo, 0, sizeof fo);
    fo.updates = upd;
    fo.n_updates = 2;
    outs[0] = cost; outs[1] = accuracy;
    train = gr_function(1, &idx, 2, outs, &fo);
    outs[0] = xent;
    eval = gr_function(1, &idx, 2, outs, NULL);
    if (!train || !eval) goto fail;

    for (epoch = 1; epoch <= EPOCHS; epoch++) {
        double sum_cost = 0;
        int steps = 0;
        for (i = N_TRAIN - 1; i > 0; i--) {       /* a fresh order every epoch (Fisher-Yates) */
            int r = (int)(mix((uint64_t)(epoch * N_TRAIN + i)) % (uint64_t)(i + 1));
            int64_t t = order[i]; order[i] = order[r]; order[r] = t;
        }
        for (i = 0; i + BATCH <= N_TRAIN; i += BATCH, steps++) {
            memcpy(batch->data, order + i, sizeof(int64_t) * BATCH);
            in[0] = batch;
            if (gr_call(train, in, out) != GR_OK) { fprintf(stderr, "error: %s\n", gr_fn_message(train)); return 1; }
            if (epoch == 1 && i == 0) first_loss = gr_array_get(out[0], 0);
            sum_cost += gr_array_get(out[0], 0);
        }
        in[0] = train_idx;
        if (gr_call(eval, in, out) != GR_OK) { fprintf(stderr, "error: %s\n", gr_fn_message(eval)); return 1; }
        train_loss = gr_array_get(out[0], 0);
        train_acc = gr_array_get(out[1], 0);
        in[0] = test_idx;
        if (gr_call(eval, in, out) != GR_OK) { fprintf(stderr, "error: %s\n", gr_fn_message(eval)); return 1; }
        test_acc = gr_array_get(out[1], 0);
        if (epoch == 1 || epoch % 5 == 0)
            printf("epoch %2d  minibatch cost %.4f  train loss %.4f  train accuracy %.3f  test accuracy %.3f\n", epoch,
                   sum_cost / steps, train_loss, train_acc, test_acc);
    }

    plain = plain_loss(xs, ys, (const double *)gr_shared_get(W)->data, (const double *)gr_shared_get(B)->data, 0, N_TRAIN);
    ok = test_acc >= 0.9 && train_loss < 0.5 * first_loss && fabs(plain - train_loss) <= 1e-12 * (1 + plain);
    printf("first minibatch cost %.4f; train loss %.6f (plain C: %.6f); test accuracy %.3f: %s\n", first_loss, train_loss, plain,
           test_acc, ok ? "ok" : "FAILED");

    gr_fn_free(train);
    gr_fn_free(eval);
    gr_graph_free(g);
    gr_array_free(xa); gr_array_free(ya); gr_array_free(w0); gr_array_free(b0);
    gr_array_free(batch); gr_array_free(train_idx); gr_array_free(test_idx);
    return ok ? 0 : 1;
fail:
    fprintf(stderr, "error: %s\n", gr_graph_message(g));
    return 1;
}
