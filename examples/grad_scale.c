/* examples/grad_scale.c: gr_grad_scale multiplies the gradient flowing through it; -1 reverses it.
   Build: cc -O2 examples/grad_scale.c -lm
   d/dx sin(x) at 2 is cos 2 = -0.416...; through grad_scale(., -1) it is +0.416... */
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"

int main(void) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x");
    gr_var *plain = gr_sin(x);
    gr_var *reversed = gr_grad_scale(gr_sin(x), -1.0);
    gr_var *doubled = gr_sqr(gr_grad_scale(x, 2.0));
    gr_var *outs[3];
    gr_array *xa = gr_array_scalar(GR_F64, 2.0);
    const gr_array *in[1], *out[3];
    gr_fn *f;
    outs[0] = gr_grad1(plain, x);
    outs[1] = gr_grad1(reversed, x);
    outs[2] = gr_grad1(doubled, x);
    f = gr_function(1, &x, 3, outs, NULL);
    if (!f) { fprintf(stderr, "error: %s\n", gr_graph_message(g)); return 1; }
    in[0] = xa;
    if (gr_call(f, in, out) != GR_OK) { fprintf(stderr, "error: %s\n", gr_fn_message(f)); return 1; }
    printf("at x = 2:\n");
    printf("  d/dx sin(x)                      = %+.6f\n", gr_array_get(out[0], 0));
    printf("  d/dx grad_scale(sin(x), -1)      = %+.6f\n", gr_array_get(out[1], 0));
    printf("  d/dx grad_scale(x, 2)^2          = %+.6f  (plain: 4)\n", gr_array_get(out[2], 0));
    gr_array_free(xa);
    gr_fn_free(f);
    gr_graph_free(g);
    return 0;
}
