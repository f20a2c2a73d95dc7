/* The derivative of f at x, in ten lines: f(x) = x sin x, f'(x) = sin x + x cos x, at x = 2. */
#include <math.h>
#include <stdio.h>
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"

int main(void) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x");                  /* a 0-d float64 input */
    gr_var *dfdx = gr_grad1(gr_mul(x, gr_sin(x)), x);       /* d/dx (x sin x), as a graph */
    gr_fn *f = gr_function(1, &x, 1, &dfdx, NULL);          /* compiled */
    gr_array *two = gr_array_scalar(GR_F64, 2.0);
    const gr_array *in[1] = { two }, *out[1];
    if (!f || gr_call(f, in, out) != GR_OK) return 1;
    double got = gr_array_get(out[0], 0), want = sin(2.0) + 2.0 * cos(2.0);
    printf("f'(2) = %.12f (sin 2 + 2 cos 2 = %.12f)\n", got, want);
    gr_array_free(two); gr_fn_free(f); gr_graph_free(g);
    return fabs(got - want) < 1e-12 ? 0 : 1;
}
