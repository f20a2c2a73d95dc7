/* quick start: y = tanh(X w + b) for a batch of rows, the mean of y^2, and its gradient in w */
#include <stdio.h>
#define GRADIENT_IMPLEMENTATION   /* in exactly one file of the program */
#include "gradient.h"

int main(void) {
    gr_graph *g = gr_graph_new();                 /* owns every variable built in it */
    gr_var *X = gr_matrix(g, GR_F64, "X");        /* inputs: a dtype and an ndim; */
    gr_var *w = gr_vector(g, GR_F64, "w");        /* their shapes come with each call */
    gr_var *b = gr_const(g, 0.5);                 /* takes the dtype of what it meets */
    gr_var *y = gr_tanh(gr_add(gr_dot(X, w), b));
    gr_var *loss = gr_mean(gr_sqr(y));
    gr_var *dw = gr_grad1(loss, w);               /* d loss / d w: a graph too, shaped like w */
    gr_var *ins[2] = { X, w }, *outs[3] = { y, loss, dw };
    gr_fn *f = gr_function(2, ins, 3, outs, NULL);
    if (!f) {                   /* a failed builder returns NULL and the next ones pass it on, */
        fprintf(stderr, "error: %s\n", gr_graph_message(g));   /* so one check is enough */
        gr_graph_free(g);
        return 1;
    }
    gr_graph_free(g);                             /* f keeps its own copy of what it needs */

    int64_t xshape[2] = { 3, 2 }, wshape[1] = { 2 };
    double xdata[6] = { 1, 2, 3, 4, 5, 6 }, wdata[2] = { 0.25, -0.125 };
    gr_array *xa = gr_array_from(GR_F64, 2, xshape, xdata);   /* copies the data */
    gr_array *wa = gr_array_from(GR_F64, 1, wshape, wdata);
    const gr_array *in[2] = { xa, wa }, *out[3];
    int status = gr_call(f, in, out);
    if (status == GR_OK) {                        /* out[] belong to f until its next call */
        for (int64_t i = 0; i < out[0]->size; i++) printf("y[%d] = %.6f\n", (int)i, gr_array_get(out[0], i));
        printf("loss = %.6f\n", gr_array_get(out[1], 0));
        printf("dloss/dw = [%.6f, %.6f]\n", gr_array_get(out[2], 0), gr_array_get(out[2], 1));
    }
    in[0] = wa;                                   /* a wrong call: a vector where X goes */
    if (gr_call(f, in, out) != GR_OK) printf("error: %s\n", gr_fn_message(f));

    gr_array_free(xa);
    gr_array_free(wa);
    gr_fn_free(f);
    return status == GR_OK ? 0 : 1;
}
