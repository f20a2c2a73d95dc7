/* examples/jacobian.c: Jacobians with gr_jacobian, whose result for w has the shape
   (*expression.shape, *w.shape), all its rows computed in one batched pass.
   Build: cc -O2 examples/jacobian.c -lm

   1. y = tanh(A x + b), y of 4 elements, x of 3:
        dy/dx = diag(1 - y^2) A                  shape (4, 3)
        dy/dA [i, j, k] = (1 - y_i^2) [i == j] x_k   shape (4, 4, 3)
      both checked against plain C;
   2. an expression with 2 dimensions: Y = outer(x, x) for x = (0, 1, 2), so that
        dY/dx [i, j, k] = [i == k] x_j + x_i [j == k]   shape (3, 3, 3)
      printed as three 3 x 3 slices (PyTensor's example: J[1] = [[1,0,0],[0,2,0],[0,2,1]]). */
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"

#include <math.h>
#include <stdio.h>

enum { M = 4, N = 3 };

static const double A[M * N] = { 0.5, -0.2, 0.1,
                                 0.3,  0.8, -0.6,
                                -0.7,  0.4, 0.2,
                                 0.1,  0.1, 0.9 };
static const double B[M] = { 0.1, -0.3, 0.0, 0.2 };
static const double X[N] = { 0.6, -1.1, 0.4 };

static void print_shape(const char *what, const gr_array *a) {
    int d;
    printf("%s: shape (", what);
    for (d = 0; d < a->ndim; d++) printf("%s%d", d ? ", " : "", (int)a->shape[d]);
    printf(")\n");
}

/* part 1; returns the largest difference from plain C, or -1 on an error */
static double tanh_layer(void) {
    int64_t sa[2] = { M, N }, sb = M, sx = N;
    gr_graph *g = gr_graph_new();
    gr_array *xa = gr_array_from(GR_F64, 1, &sx, X), *aa = gr_array_from(GR_F64, 2, sa, A);
    gr_array *ba = gr_array_from(GR_F64, 1, &sb, B);
    gr_var *x = gr_vector(g, GR_F64, "x"), *Av = gr_matrix(g, GR_F64, "A"), *b = gr_constant(g, ba);
    gr_var *y = gr_tanh(gr_add(gr_dot(Av, x), b));
    gr_var *wrt[2], *jac[2] = { NULL, NULL }, *outs[3], *ins[2];
    gr_fn *f;
    const gr_array *in[2], *out[3];
    double worst = -1, yv[M];
    int i, j, k;
    wrt[0] = x; wrt[1] = Av;
    if (gr_jacobian(y, 2, wrt, jac, NULL) != GR_OK) { fprintf(stderr, "error: %s\n", gr_graph_message(g)); goto done; }
    outs[0] = y; outs[1] = jac[0]; outs[2] = jac[1];
    ins[0] = x; ins[1] = Av;
    f = gr_function(2, ins, 3, outs, NULL);
    if (!f) { fprintf(stderr, "error: %s\n", gr_graph_message(g)); goto done; }
    in[0] = xa; in[1] = aa;
    if (gr_call(f, in, out) != GR_OK) { fprintf(stderr, "error: %s\n", gr_fn_message(f)); gr_fn_free(f); goto done; }

    printf("1. y = tanh(A x + b), A %d x %d\n", M, N);
    print_shape("   dy/dx", out[1]);
    worst = 0;
    for (i = 0; i < M; i++) {
        double s = B[i];
        for (k = 0; k < N; k++) s += A[i * N + k] * X[k];
        yv[i] = tanh(s);
        printf("     [");
        for (k = 0; k < N; k++) {
            double got = gr_array_get(out[1], i * N + k), want = (1 - yv[i] * yv[i]) * A[i * N + k];
            if (fabs(got - want) > worst) worst = fabs(got - want);
            printf(" %+.6f", got);
        }
        printf(" ]\n");
    }
    print_shape("   dy/dA", out[2]);
    for (i = 0; i < M; i++)
        for (j = 0; j < M; j++)
            for (k = 0; k < N; k++) {
                double got = gr_array_get(out[2], (i * M + j) * N + k);
                double want = i == j ? (1 - yv[i] * yv[i]) * X[k] : 0.0;
                if (fabs(got - want) > worst) worst = fabs(got - want);
            }
    printf("   dy/dA[1] (row 1 of y; only its row 1 is nonzero):\n");
    for (j = 0; j < M; j++) {
        printf("     [");
        for (k = 0; k < N; k++) printf(" %+.6f", gr_array_get(out[2], (1 * M + j) * N + k) + 0.0);   /* + 0.0: no -0 */
        printf(" ]\n");
    }
    printf("   largest difference from diag(1 - y^2) A and (1 - y_i^2) x_k: %.3g\n\n", worst);
    gr_fn_free(f);
done:
    gr_array_free(xa); gr_array_free(aa); gr_array_free(ba);
    gr_graph_free(g);
    return worst;
}

/* part 2; returns the largest difference from the closed form, or -1 on an error */
static double outer_product(void) {
    int64_t n = 3;
    static const double xs[3] = { 0, 1, 2 };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    gr_var *Y = gr_outer(x, x), *J = NULL;                   /* Y: (3, 3) */
    gr_fn *f = NULL;
    gr_array *xa = gr_array_from(GR_F64, 1, &n, xs);
    const gr_array *in[1], *out[1];
    double worst = -1;
    int i, j, k;
    if (gr_jacobian(Y, 1, &x, &J, NULL) != GR_OK || !(f = gr_function(1, &x, 1, &J, NULL))) {
        fprintf(stderr, "error: %s\n", gr_graph_message(g));
        goto done;
    }
    in[0] = xa;
    if (gr_call(f, in, out) != GR_OK) { fprintf(stderr, "error: %s\n", gr_fn_message(f)); goto done; }
    printf("2. Y = outer(x, x), x = (0, 1, 2): an expression with 2 dimensions\n");
    print_shape("   dY/dx", out[0]);
    worst = 0;
    for (i = 0; i < 3; i++) {
        printf("   dY/dx[%d] = dY[%d, :]/dx:\n", i, i);
        for (j = 0; j < 3; j++) {
            printf("     [");
            for (k = 0; k < 3; k++) {
                double got = gr_array_get(out[0], (i * 3 + j) * 3 + k);
                double want = (i == k ? xs[j] : 0.0) + (j == k ? xs[i] : 0.0);
                if (fabs(got - want) > worst) worst = fabs(got - want);
                printf(" %g", got);
            }
            printf(" ]\n");
        }
    }
    printf("   largest difference from [i == k] x_j + x_i [j == k]: %.3g\n", worst);
done:
    gr_fn_free(f);
    gr_array_free(xa);
    gr_graph_free(g);
    return worst;
}

int main(void) {
    double e1 = tanh_layer(), e2 = e1 < 0 ? -1 : outer_product();
    int ok = e1 >= 0 && e1 < 1e-12 && e2 >= 0 && e2 < 1e-12;
    printf("\n%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
