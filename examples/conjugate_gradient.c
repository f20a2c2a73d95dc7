/* examples/conjugate_gradient.c: Newton-CG (truncated Newton) on the Rosenbrock function, the
   Hessian never formed: every Hessian-vector product H v is gr_rop of the gradient.
   Build: cc -O2 examples/conjugate_gradient.c -lm

     f(x) = sum_{i < n-1} 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2,   n = 100, minimum 0 at x = 1
     g    = gr_grad1(f, x)                   the gradient, shape (n,)
     H v  = gr_rop(g, x, v)                  forward mode through the gradient graph, shape (n,)

   Each outer iteration runs conjugate gradients on H d = -g, stopping when the residual is below
   min(0.5, sqrt|g|) |g| or when a direction of negative curvature appears, then backtracks along d
   until f decreases enough (Armijo). The first H v is checked against its closed form. */
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"

#include <math.h>
#include <stdio.h>

enum { N = 100, MAX_OUTER = 200 };

/* the start: SciPy's Newton-CG tutorial point (1.3, 0.7, 0.8, 1.9, 1.2), repeated */
static const double START[5] = { 1.3, 0.7, 0.8, 1.9, 1.2 };

static double dot(const double *a, const double *b) {
    double s = 0;
    int i;
    for (i = 0; i < N; i++) s += a[i] * b[i];
    return s;
}

/* H v of f in closed form (SciPy's rosen_hess_prod), for the check */
static void hessp_reference(const double *x, const double *v, double *hv) {
    int i;
    for (i = 0; i < N; i++) {
        double h = 0;
        if (i < N - 1) h += (1200 * x[i] * x[i] - 400 * x[i + 1] + 2) * v[i] - 400 * x[i] * v[i + 1];
        if (i > 0) h += 200 * v[i] - 400 * x[i - 1] * v[i - 1];
        hv[i] = h;
    }
}

typedef struct problem {
    gr_fn *fg;      /* x    -> f, g */
    gr_fn *hvp;     /* x, v -> H v  */
    gr_array *xa, *va;
    int n_hvp;      /* Hessian-vector products computed */
} problem;

/* f and g at x (g may be NULL); 0 on an error */
static int eval_fg(problem *p, const double *x, double *f, double *g) {
    const gr_array *in[1], *out[2];
    int i;
    for (i = 0; i < N; i++) gr_array_set(p->xa, i, x[i]);
    in[0] = p->xa;
    if (gr_call(p->fg, in, out) != GR_OK) { fprintf(stderr, "error: %s\n", gr_fn_message(p->fg)); return 0; }
    *f = gr_array_get(out[0], 0);
    if (g) for (i = 0; i < N; i++) g[i] = gr_array_get(out[1], i);
    return 1;
}

/* hv = H(x) v; 0 on an error */
static int eval_hvp(problem *p, const double *x, const double *v, double *hv) {
    const gr_array *in[2], *out[1];
    int i;
    for (i = 0; i < N; i++) { gr_array_set(p->xa, i, x[i]); gr_array_set(p->va, i, v[i]); }
    in[0] = p->xa; in[1] = p->va;
    if (gr_call(p->hvp, in, out) != GR_OK) { fprintf(stderr, "error: %s\n", gr_fn_message(p->hvp)); return 0; }
    for (i = 0; i < N; i++) hv[i] = gr_array_get(out[0], i);
    p->n_hvp++;
    return 1;
}

/* truncated CG on H d = -g; returns the number of CG iterations, -1 on an error */
static int newton_cg_direction(problem *p, const double *x, const double *g, double *d) {
    double r[N], q[N], hq[N], gnorm = sqrt(dot(g, g));
    double tol = (gnorm < 0.25 ? sqrt(gnorm) : 0.5) * gnorm, rr;
    int i, k;
    for (i = 0; i < N; i++) { d[i] = 0; r[i] = -g[i]; q[i] = r[i]; }
    rr = dot(r, r);
    for (k = 0; k < 2 * N; k++) {
        double curv, alpha, beta, rr_new;
        if (!eval_hvp(p, x, q, hq)) return -1;
        curv = dot(q, hq);
        if (curv <= 0) {                       /* negative curvature: stop (steepest descent at first) */
            if (k == 0) for (i = 0; i < N; i++) d[i] = -g[i];
            return k + 1;
        }
        alpha = rr / curv;
        for (i = 0; i < N; i++) { d[i] += alpha * q[i]; r[i] -= alpha * hq[i]; }
        rr_new = dot(r, r);
        if (sqrt(rr_new) < tol) return k + 1;
        beta = rr_new / rr;
        rr = rr_new;
        for (i = 0; i < N; i++) q[i] = r[i] + beta * q[i];
    }
    return k;
}

int main(void) {
    int64_t n = N;
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *v = gr_vector(g, GR_F64, "v");
    gr_var *lo = gr_slice(x, 0, 0, -1, 1), *hi = gr_slice(x, 0, 1, GR_OPEN, 1);   /* x[:-1], x[1:] */
    gr_var *f = gr_sum(gr_add(gr_mul(gr_const(g, 100.0), gr_sqr(gr_sub(hi, gr_sqr(lo)))),
                              gr_sqr(gr_sub(gr_const(g, 1.0), lo))));
    gr_var *grad = gr_grad1(f, x), *hv = NULL, *ins[2], *outs[2];
    problem p = { 0 };
    double xs[N], gs[N], d[N], hv0[N], hv_ref[N], vs[N], fx = 0, worst = 0, err = 0;
    int i, it, total_cg = 0, converged = 0;

    /* H v = J_grad(x) v: forward mode through the gradient graph */
    if (gr_rop(1, &grad, 1, &x, &v, &hv, NULL) != GR_OK) { fprintf(stderr, "error: %s\n", gr_graph_message(g)); return 1; }
    outs[0] = f; outs[1] = grad;
    ins[0] = x; ins[1] = v;
    p.fg = gr_function(1, &x, 2, outs, NULL);
    p.hvp = gr_function(2, ins, 1, &hv, NULL);
    if (!p.fg || !p.hvp) { fprintf(stderr, "error: %s\n", gr_graph_message(g)); return 1; }
    gr_graph_free(g);
    p.xa = gr_array_new(GR_F64, 1, &n);
    p.va = gr_array_new(GR_F64, 1, &n);

    for (i = 0; i < N; i++) { xs[i] = i % 2 ? 1.0 : -1.2; vs[i] = 0.5 * i; }      /* for the check */
    if (!eval_hvp(&p, xs, vs, hv0)) return 1;
    hessp_reference(xs, vs, hv_ref);
    for (i = 0; i < N; i++) if (fabs(hv0[i] - hv_ref[i]) > worst) worst = fabs(hv0[i] - hv_ref[i]);
    printf("Newton-CG on the %d-dimensional Rosenbrock function, H v from gr_rop of the gradient\n", N);
    printf("H v at the start against the closed form: largest difference %.3g\n\n", worst);
    for (i = 0; i < N; i++) xs[i] = START[i % 5];

    printf("iter  f(x)                |grad f|    CG its  step\n");
    for (it = 0; it <= MAX_OUTER; it++) {
        double gnorm, slope, step = 1, ft;
        int cg;
        if (!eval_fg(&p, xs, &fx, gs)) return 1;
        gnorm = sqrt(dot(gs, gs));
        printf("%4d  %.12e  %.3e", it, fx, gnorm);
        if (gnorm < 1e-9) { converged = 1; printf("\n"); break; }
        cg = newton_cg_direction(&p, xs, gs, d);
        if (cg < 0) return 1;
        total_cg += cg;
        slope = dot(gs, d);
        for (;;) {                               /* f(x + t d) <= f(x) + 1e-4 t g.d */
            double xt[N];
            for (i = 0; i < N; i++) xt[i] = xs[i] + step * d[i];
            if (!eval_fg(&p, xt, &ft, NULL)) return 1;
            if (ft <= fx + 1e-4 * step * slope) { for (i = 0; i < N; i++) xs[i] = xt[i]; break; }
            step /= 2;
            if (step < 1e-12) { fprintf(stderr, "\nline search failed\n"); return 1; }
        }
        printf("  %6d  %g\n", cg, step);
    }
    for (i = 0; i < N; i++) if (fabs(xs[i] - 1) > err) err = fabs(xs[i] - 1);
    printf("\n%d outer iterations, %d CG iterations, %d Hessian-vector products, no Hessian formed\n", it, total_cg, p.n_hvp);
    printf("max |x[i] - 1| = %.3g (%s)\n", err, converged && err < 1e-8 && worst < 1e-9 ? "ok" : "FAILED");
    gr_fn_free(p.fg);
    gr_fn_free(p.hvp);
    gr_array_free(p.xa);
    gr_array_free(p.va);
    return converged && err < 1e-8 && worst < 1e-9 ? 0 : 1;
}
