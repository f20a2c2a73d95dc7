/* tests/link_a.c and tests/link_b.c: gradient.h in a program of two translation units.

   Default: this file defines GRADIENT_IMPLEMENTATION and link_b.c includes the header plain, so
   the library's functions are defined once (here) and called from both files; a graph made here
   is extended and compiled over there.
   With -DLINK_STATIC: both files define GRADIENT_STATIC and GRADIENT_IMPLEMENTATION, so each
   holds its own private (static) copy of the library, and the program must still link.
   `make test-link` builds and runs both. */
#ifdef LINK_STATIC
#define GRADIENT_STATIC
#endif
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"

#include <math.h>
#include <stdio.h>

#ifdef LINK_STATIC
#define VARIANT "link-static"
#else
#define VARIANT "link"
#endif

/* in link_b.c */
double link_b_sum_of_squares(const double *xs, int n);
#ifndef LINK_STATIC
double link_b_eval_twice_plus(gr_var *x, const double *xs, int n);
#endif

static int passed, failed;

static void check(const char *what, double got, double want) {
    if (fabs(got - want) <= 1e-12 * (fabs(want) > 1 ? fabs(want) : 1)) passed++;
    else {
        failed++;
        fprintf(stderr, "FAIL %s: %s = %.17g, want %.17g\n", VARIANT, what, got, want);
    }
}

/* sum(exp(x)) computed with this file's copy of the library */
static double sum_exp(const double *xs, int n) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    gr_var *y = gr_sum(gr_exp(x));
    gr_fn *f = gr_function(1, &x, 1, &y, NULL);
    int64_t len = n;
    gr_array *xa = gr_array_from(GR_F64, 1, &len, xs);
    const gr_array *in[1], *out[1];
    double r = NAN;
    in[0] = xa;
    if (f && gr_call(f, in, out) == GR_OK) r = gr_array_get(out[0], 0);
    else fprintf(stderr, "%s: %s%s\n", VARIANT, gr_graph_message(g), f ? gr_fn_message(f) : "");
    gr_array_free(xa);
    gr_fn_free(f);
    gr_graph_free(g);
    return r;
}

int main(void) {
    static const double xs[4] = { 0.5, -1.0, 2.0, 0.25 };
    double want_exp = 0, want_sq = 0;
    int i;
    for (i = 0; i < 4; i++) { want_exp += exp(xs[i]); want_sq += xs[i] * xs[i]; }
    check("sum(exp(x)) in link_a.c", sum_exp(xs, 4), want_exp);
    check("sum(x*x) in link_b.c", link_b_sum_of_squares(xs, 4), want_sq);
#ifndef LINK_STATIC
    {   /* one library: a variable made here, used by the other file */
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x");
        check("sum(2x + 1) across the files", link_b_eval_twice_plus(x, xs, 4), 2 * (0.5 - 1.0 + 2.0 + 0.25) + 4);
        gr_graph_free(g);
    }
#endif
    printf("%s: %d passed, %d failed\n", VARIANT, passed, failed);
    return failed ? 1 : 0;
}
