/* examples/newton_rosenbrock.c: Newton's method on the Rosenbrock function, with the gradient from
   gr_grad1 and the Hessian from gr_hessian, the Newton system solved in plain C (Cholesky).
   Build: cc -O2 examples/newton_rosenbrock.c -lm

     f(x) = sum_{i < n-1} 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2,    minimum f = 0 at x = (1, ..., 1)

   written with vector ops: lo = x[:-1] and hi = x[1:] are two gr_slice views of x. Each step
   solves H d = -g by a Cholesky factorisation of H (+ mu I when H is not positive definite) and
   halves d until f decreases enough (Armijo). The Hessian is first checked against its closed form. */
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"

#include <math.h>
#include <stdio.h>

enum { N = 10, MAX_ITERS = 100 };

/* the Hessian of f in closed form (for the check) */
static void hessian_reference(const double *x, double *H) {
    int i;
    for (i = 0; i < N * N; i++) H[i] = 0;
    for (i = 0; i < N - 1; i++) {
        H[i * N + i] += 1200 * x[i] * x[i] - 400 * x[i + 1] + 2;
        H[(i + 1) * N + i + 1] += 200;
        H[i * N + i + 1] = H[(i + 1) * N + i] = -400 * x[i];
    }
}

/* solves (H + mu I) d = b by Cholesky, H symmetric n x n; 0 when H + mu I is not positive definite */
static int cholesky_solve(const double *H, double mu, const double *b, double *d) {
    double L[N * N];
    int i, j, k;
    for (i = 0; i < N; i++) {
        for (j = 0; j <= i; j++) {
            double s = H[i * N + j] + (i == j ? mu : 0);
            for (k = 0; k < j; k++) s -= L[i * N + k] * L[j * N + k];
            if (i == j) {
                if (s <= 0) return 0;
                L[i * N + i] = sqrt(s);
            } else {
                L[i * N + j] = s / L[j * N + j];
            }
        }
    }
    for (i = 0; i < N; i++) {                    /* L y = b */
        double s = b[i];
        for (k = 0; k < i; k++) s -= L[i * N + k] * d[k];
        d[i] = s / L[i * N + i];
    }
    for (i = N - 1; i >= 0; i--) {               /* L^T d = y */
        double s = d[i];
        for (k = i + 1; k < N; k++) s -= L[k * N + i] * d[k];
        d[i] = s / L[i * N + i];
    }
    return 1;
}

int main(void) {
    int64_t n = N;
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    gr_var *lo = gr_slice(x, 0, 0, -1, 1);                   /* x[:-1] */
    gr_var *hi = gr_slice(x, 0, 1, GR_OPEN, 1);              /* x[1:]  */
    gr_var *f = gr_sum(gr_add(gr_mul(gr_const(g, 100.0), gr_sqr(gr_sub(hi, gr_sqr(lo)))),
                              gr_sqr(gr_sub(gr_const(g, 1.0), lo))));
    gr_var *grad = gr_grad1(f, x);                           /* shape (N,) */
    gr_var *outs[3], *H = NULL;
    gr_fn *fgh;
    gr_array *xa;
    double xs[N], Href[N * N], worst = 0;
    int i, it, converged = 0;

    if (gr_hessian(f, 1, &x, &H, NULL) != GR_OK) {          /* shape (N, N) */
        fprintf(stderr, "error: %s\n", gr_graph_message(g));
        return 1;
    }
    outs[0] = f; outs[1] = grad; outs[2] = H;
    fgh = gr_function(1, &x, 3, outs, NULL);
    if (!fgh) { fprintf(stderr, "error: %s\n", gr_graph_message(g)); return 1; }
    gr_graph_free(g);

    for (i = 0; i < N; i++) xs[i] = 0.0;   /* from the classic (-1.2, 1, -1.2, ...) it finds the other local
                                            minimum of this chained form, near x[0] = -1 */
    xa = gr_array_from(GR_F64, 1, &n, xs);
    printf("Newton's method on the %d-dimensional Rosenbrock function\n", N);

    for (it = 0; it <= MAX_ITERS && !converged; it++) {
        const gr_array *in[1], *out[3];
        double fx, gnorm = 0, gv[N], Hv[N * N], d[N], step = 1, mu = 0, slope = 0;
        in[0] = xa;
        if (gr_call(fgh, in, out) != GR_OK) { fprintf(stderr, "error: %s\n", gr_fn_message(fgh)); return 1; }
        fx = gr_array_get(out[0], 0);
        for (i = 0; i < N; i++) { gv[i] = gr_array_get(out[1], i); gnorm += gv[i] * gv[i]; }
        for (i = 0; i < N * N; i++) Hv[i] = gr_array_get(out[2], i);
        gnorm = sqrt(gnorm);
        if (it == 0) {                                       /* check gr_hessian against the closed form */
            hessian_reference(xs, Href);
            for (i = 0; i < N * N; i++) if (fabs(Hv[i] - Href[i]) > worst) worst = fabs(Hv[i] - Href[i]);
            printf("gr_hessian at the start: %d x %d, largest difference from the closed form %.3g\n\n",
                   (int)out[2]->shape[0], (int)out[2]->shape[1], worst);
            printf("iter  f(x)                |grad f|    step      x[0]       x[%d]\n", N - 1);
        }
        printf("%4d  %.12e  %.3e", it, fx, gnorm);
        if (gnorm < 1e-10) { converged = 1; printf("\n"); break; }

        /* Newton direction: (H + mu I) d = -g, mu raised until the factorisation succeeds */
        for (i = 0; i < N; i++) gv[i] = -gv[i];
        while (!cholesky_solve(Hv, mu, gv, d)) mu = mu > 0 ? 10 * mu : 1e-3;
        for (i = 0; i < N; i++) slope -= gv[i] * d[i];       /* g . d < 0 */

        /* backtracking: halve the step until f(x + t d) <= f(x) + 1e-4 t g.d */
        for (;;) {
            double xt[N];
            const gr_array *o2[3];
            gr_array *ta;
            gr_status st;
            for (i = 0; i < N; i++) xt[i] = xs[i] + step * d[i];
            ta = gr_array_from(GR_F64, 1, &n, xt);
            in[0] = ta;
            st = gr_call(fgh, in, o2);
            if (st == GR_OK && gr_array_get(o2[0], 0) <= fx + 1e-4 * step * slope) {
                for (i = 0; i < N; i++) { xs[i] = xt[i]; gr_array_set(xa, i, xt[i]); }
                gr_array_free(ta);
                break;
            }
            gr_array_free(ta);
            if (st != GR_OK) { fprintf(stderr, "error: %s\n", gr_fn_message(fgh)); return 1; }
            step /= 2;
            if (step < 1e-12) { fprintf(stderr, "line search failed\n"); return 1; }
        }
        printf("  %-8g  %+.6f  %+.6f%s\n", step, xs[0], xs[N - 1], mu > 0 ? "  (H + mu I)" : "");
    }

    {
        double err = 0;
        for (i = 0; i < N; i++) if (fabs(xs[i] - 1) > err) err = fabs(xs[i] - 1);
        printf("\nx = (");
        for (i = 0; i < N; i++) printf("%s%.10f", i ? ", " : "", xs[i]);
        printf(")\nmax |x[i] - 1| = %.3g after %d iterations (%s)\n", err, it, converged && err < 1e-8 && worst < 1e-9 ? "ok" : "FAILED");
        gr_array_free(xa);
        gr_fn_free(fgh);
        return converged && err < 1e-8 && worst < 1e-9 ? 0 : 1;
    }
}
