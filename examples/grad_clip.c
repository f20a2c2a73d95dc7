/* examples/grad_clip.c: gr_grad_clip leaves the forward value alone and clips the gradient.
   Build: cc -O2 examples/grad_clip.c -lm
   d/dx clip_grad(x)^2 at x = 2 is clip(2x, -1, 1) = 1, where the plain gradient is 4. */
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"

int main(void) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x");
    gr_var *clipped = gr_sqr(gr_grad_clip(x, -1.0, 1.0));   /* forward: x^2 */
    gr_var *plain = gr_sqr(x);
    gr_var *outs[4];
    gr_array *xa = gr_array_scalar(GR_F64, 2.0);
    const gr_array *in[1], *out[4];
    gr_fn *f;
    outs[0] = clipped;
    outs[1] = gr_grad1(clipped, x);
    outs[2] = plain;
    outs[3] = gr_grad1(plain, x);
    f = gr_function(1, &x, 4, outs, NULL);
    if (!f) { fprintf(stderr, "error: %s\n", gr_graph_message(g)); return 1; }
    in[0] = xa;
    if (gr_call(f, in, out) != GR_OK) { fprintf(stderr, "error: %s\n", gr_fn_message(f)); return 1; }
    printf("x = 2\n");
    printf("  grad_clip(x, -1, 1)^2 = %g, gradient %g\n", gr_array_get(out[0], 0), gr_array_get(out[1], 0));
    printf("  x^2                   = %g, gradient %g\n", gr_array_get(out[2], 0), gr_array_get(out[3], 0));
    gr_array_free(xa);
    gr_fn_free(f);
    gr_graph_free(g);
    return 0;
}
