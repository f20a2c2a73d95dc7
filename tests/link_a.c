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

#define GT_RUNNER_IMPLEMENTATION
#include "runner.h"

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

static const double xs[4] = { 0.5, -1.0, 2.0, 0.25 };

TEST(test_sum_exp_here) {
    double want = 0;
    int i;
    for (i = 0; i < 4; i++) want += exp(xs[i]);
    CHECK_NEAR(sum_exp(xs, 4), want, 1e-12);
}

TEST(test_sum_of_squares_there) {
    double want = 0;
    int i;
    for (i = 0; i < 4; i++) want += xs[i] * xs[i];
    CHECK_NEAR(link_b_sum_of_squares(xs, 4), want, 1e-12);
}

#ifndef LINK_STATIC
/* one library: a variable made here, used by the other file */
TEST(test_graph_across_files) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    CHECK_NEAR(link_b_eval_twice_plus(x, xs, 4), 2 * (0.5 - 1.0 + 2.0 + 0.25) + 4, 1e-12);
    gr_graph_free(g);
}
#endif

static const gt_case suite_link[] = {
    CASE(test_sum_exp_here),
    CASE(test_sum_of_squares_there),
#ifndef LINK_STATIC
    CASE(test_graph_across_files),
#endif
    END_SUITE
};

int main(void) {
    gt_run(suite_link);
    return gt_report(VARIANT);
}
