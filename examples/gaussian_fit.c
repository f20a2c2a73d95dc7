/* examples/gaussian_fit.c: a multivariate Gaussian fitted by gradient descent on its negative
   log-likelihood, with the covariance parametrised through a Cholesky factor.
   Build: cc -O2 examples/gaussian_fit.c -lm

     Sigma = S S^T + eps I        (S free, 3 x 3: Sigma stays symmetric positive definite)
     L     = cholesky(Sigma),     Z = L^-1 (X - mu)^T     (gr_solve with the triangular L)
     nll   = (logdet(Sigma) + sum(Z^2) / N + d log(2 pi)) / 2     per sample
   The minimum is known in closed form: mu = the sample mean, Sigma = the sample covariance (divided
   by N). The program checks that gradient descent reaches it (1e-6), that the two log-determinants
   agree (gr_logdet(Sigma) = 2 logdet(L)), and exits 0 only then. */
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"

#define N 500
#define DIM 3
#define STEPS 600

static double det(uint64_t i) {
    uint64_t z = i * 0x9E3779B97F4A7C15ULL + 0x1234567887654321ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}
/* a standard normal draw (Box-Muller) */
static double normal(uint64_t i) {
    double u = det(2 * i) + 1e-12, v = det(2 * i + 1);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

int main(void) {
    static double xs[N * DIM];
    /* the data: x = m + C z, so the true covariance is C C^T */
    const double m[DIM] = { 1.0, -2.0, 0.5 }, C[DIM * DIM] = { 1.2, 0, 0, 0.5, 0.8, 0, -0.3, 0.4, 0.6 };
    double mean[DIM] = { 0 }, cov[DIM * DIM] = { 0 }, s0[DIM * DIM] = { 1, 0, 0, 0, 1, 0, 0, 0, 1 }, err_mu = 0, err_cov = 0;
    double nll_min, logdet_cov;
    int64_t xshape[2] = { N, DIM }, d = DIM, sshape[2] = { DIM, DIM };
    gr_graph *g = gr_graph_new();
    gr_array *xa, *mu0 = gr_array_new(GR_F64, 1, &d), *S0 = gr_array_from(GR_F64, 2, sshape, s0), *eye = gr_array_new(GR_F64, 2, sshape);
    gr_var *X = gr_matrix(g, GR_F64, "X"), *mu = gr_shared(g, mu0, "mu"), *S = gr_shared(g, S0, "S");
    gr_var *Sigma, *L, *Z, *nll, *ld_direct, *ld_chol, *params[2], *grads[2], *outs[4];
    gr_update upd[2];
    gr_fn_opts fo;
    gr_fn *train;
    const gr_array *in[1], *out[4];
    int i, j, k, step, ok = 1;

    for (i = 0; i < N; i++)
        for (j = 0; j < DIM; j++) {
            double s = m[j];
            for (k = 0; k < DIM; k++) s += C[j * DIM + k] * normal((uint64_t)(i * DIM + k));
            xs[i * DIM + j] = s;
        }
    xa = gr_array_from(GR_F64, 2, xshape, xs);
    for (k = 0; k < DIM; k++) gr_array_set(eye, k * DIM + k, 1e-6);

    Sigma = gr_add(gr_matmul(S, gr_transpose(S)), gr_constant(g, eye));
    L = gr_cholesky(Sigma);
    Z = gr_solve(L, gr_transpose(gr_sub(X, mu)));                    /* L^-1 (x_i - mu), one column per sample */
    ld_direct = gr_logdet(Sigma);
    ld_chol = gr_mul(gr_const(g, 2.0), gr_logdet(L));                /* log det L L^T */
    nll = gr_mul(gr_const(g, 0.5), gr_add(gr_add(ld_direct, gr_div(gr_sum(gr_sqr(Z)), gr_const(g, N))),
                                          gr_const(g, DIM * log(6.283185307179586))));
    params[0] = mu; params[1] = S;
    if (gr_grad(nll, 2, params, grads, NULL) != GR_OK) { fprintf(stderr, "gradient: %s\n", gr_graph_message(g)); return 1; }
    upd[0].shared = mu; upd[0].value = gr_sub(mu, gr_mul(gr_const(g, 0.1), grads[0]));
    upd[1].shared = S;  upd[1].value = gr_sub(S, gr_mul(gr_const(g, 0.1), grads[1]));
    memset(&fo, 0, sizeof fo);
    fo.updates = upd;
    fo.n_updates = 2;
    outs[0] = nll; outs[1] = Sigma; outs[2] = ld_direct; outs[3] = ld_chol;
    train = gr_function(1, &X, 4, outs, &fo);
    if (!train) { fprintf(stderr, "building failed: %s\n", gr_graph_message(g)); return 1; }

    in[0] = xa;
    for (step = 0; step <= STEPS; step++) {
        if (gr_call(train, in, out) != GR_OK) { fprintf(stderr, "step %d: %s\n", step, gr_fn_message(train)); return 1; }
        if (step % 100 == 0) printf("step %4d  nll %.12f\n", step, gr_array_get(out[0], 0));
    }

    /* the closed-form optimum */
    for (i = 0; i < N; i++) for (j = 0; j < DIM; j++) mean[j] += xs[i * DIM + j] / N;
    for (i = 0; i < N; i++)
        for (j = 0; j < DIM; j++)
            for (k = 0; k < DIM; k++) cov[j * DIM + k] += (xs[i * DIM + j] - mean[j]) * (xs[i * DIM + k] - mean[k]) / N;
    logdet_cov = log(cov[0] * (cov[4] * cov[8] - cov[5] * cov[7]) - cov[1] * (cov[3] * cov[8] - cov[5] * cov[6]) +
                     cov[2] * (cov[3] * cov[7] - cov[4] * cov[6]));
    nll_min = 0.5 * (logdet_cov + DIM + DIM * log(6.283185307179586));
    /* out[] shows the values before the last update: the fit has converged, so they are the same */
    for (j = 0; j < DIM; j++) {
        double e = fabs(gr_array_get(gr_shared_get(mu), j) - mean[j]);
        if (e > err_mu) err_mu = e;
        for (k = 0; k < DIM; k++) {
            double c = fabs(gr_array_get(out[1], j * DIM + k) - cov[j * DIM + k]);
            if (c > err_cov) err_cov = c;
        }
    }
    printf("\nfitted mu:     ");
    for (j = 0; j < DIM; j++) printf(" %10.6f", gr_array_get(gr_shared_get(mu), j));
    printf("\nsample mean:   ");
    for (j = 0; j < DIM; j++) printf(" %10.6f", mean[j]);
    printf("\nfitted Sigma (sample covariance):\n");
    for (j = 0; j < DIM; j++) {
        for (k = 0; k < DIM; k++) printf(" %10.6f (%10.6f)", gr_array_get(out[1], j * DIM + k), cov[j * DIM + k]);
        printf("\n");
    }
    printf("nll %.12f, closed-form minimum %.12f\n", gr_array_get(out[0], 0), nll_min);
    printf("logdet(Sigma) %.12f, 2 logdet(L) %.12f\n", gr_array_get(out[2], 0), gr_array_get(out[3], 0));

    if (!(err_mu <= 1e-6 && err_cov <= 1e-6)) { printf("FAILED: the fit is not the sample mean and covariance\n"); ok = 0; }
    if (!(fabs(gr_array_get(out[0], 0) - nll_min) <= 1e-9)) { printf("FAILED: the likelihood is not at its maximum\n"); ok = 0; }
    if (!(fabs(gr_array_get(out[2], 0) - gr_array_get(out[3], 0)) <= 1e-9)) { printf("FAILED: the log-determinants disagree\n"); ok = 0; }
    if (ok) printf("gaussian_fit: ok\n");

    gr_fn_free(train);
    gr_array_free(xa); gr_array_free(mu0); gr_array_free(S0); gr_array_free(eye);
    gr_graph_free(g);
    return ok ? 0 : 1;
}
