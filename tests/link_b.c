/* tests/link_b.c: the second translation unit of the link test (see tests/link_a.c). */
#ifdef LINK_STATIC
#define GRADIENT_STATIC
#define GRADIENT_IMPLEMENTATION   /* static functions are per file: this one needs its own copy */
#endif
#include "../gradient.h"

#include <math.h>
#include <stdio.h>

double link_b_sum_of_squares(const double *xs, int n);
double link_b_eval_twice_plus(gr_var *x, const double *xs, int n);

/* evaluates y (a 0-d function of the vector x) at xs; NaN on failure */
static double eval_at(gr_var *x, gr_var *y, const double *xs, int n) {
    gr_fn *f = gr_function(1, &x, 1, &y, NULL);
    int64_t len = n;
    gr_array *xa = gr_array_from(GR_F64, 1, &len, xs);
    const gr_array *in[1], *out[1];
    double r = NAN;
    in[0] = xa;
    if (f && gr_call(f, in, out) == GR_OK) r = gr_array_get(out[0], 0);
    else fprintf(stderr, "link_b.c: %s%s\n", gr_graph_message(gr_var_graph(x)), f ? gr_fn_message(f) : "");
    gr_array_free(xa);
    gr_fn_free(f);
    return r;
}

double link_b_sum_of_squares(const double *xs, int n) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    double r = eval_at(x, gr_sum(gr_sqr(x)), xs, n);
    gr_graph_free(g);
    return r;
}

/* x belongs to a graph made by the caller, in another file */
double link_b_eval_twice_plus(gr_var *x, const double *xs, int n) {
    gr_graph *g = gr_var_graph(x);
    return eval_at(x, gr_sum(gr_add(gr_mul(x, gr_const(g, 2)), gr_const(g, 1))), xs, n);
}
