/* tests/families.c: the implementation built without some op families (ops/table.h, GR_NO_<FAMILY>).

   `make test-small` compiles this file once with each switch (and with GR_ONLY_CORE, all of them)
   under -Wall -Wextra -Wpedantic -Wshadow -Werror, and runs the GR_ONLY_CORE build: a gradient and a
   compiled function still give the closed form's values, and what the core itself names of a family
   left out fails with a message naming the switch (gr_jacobian of a vector without GR_NO_BATCH's
   rows; gr_ifelse without GR_NO_IFELSE's); with GR_ELEMWISE_ONLY (and the GR_EW_<row> this file's
   functions run), a row left out fails when called, naming its GR_EW_<row>. Built with -DFAM_CALL_DET (and GR_NO_LINALG) it calls
   gr_det, which is not there: the build must fail naming gr_det. */
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"
#include <stdio.h>
#include <string.h>

static int fails;
#define FAM_CHECK(c, ...) do { if (!(c)) { fails++; printf("families.c:%d: ", __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

/* f = sum(x^3 - 2x), df/dx = 3x^2 - 2: the core without any family */
static void fam_core(void) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *f, *d = NULL, *outs[2];
    static const double xv[3] = { -1.5, 0.25, 2.0 };
    int64_t n = 3;
    gr_array *a = gr_array_from(GR_F64, 1, &n, xv);
    const gr_array *o[2];
    gr_fn *fn = NULL;
    int i;
    f = gr_sum(gr_sub(gr_mul(x, gr_sqr(x)), gr_mul(gr_const(g, 2.0), x)));
    FAM_CHECK(gr_grad(f, 1, &x, &d, NULL) == GR_OK, "gr_grad: %s", gr_graph_message(g));
    outs[0] = f; outs[1] = d;
    FAM_CHECK(d && (fn = gr_function(1, &x, 2, outs, NULL)) != NULL, "gr_function: %s", gr_graph_message(g));
    if (fn && a && gr_call(fn, (const gr_array *const *)&a, o) == GR_OK) {
        double want = 0;
        for (i = 0; i < 3; i++) {
            want += xv[i] * xv[i] * xv[i] - 2 * xv[i];
            FAM_CHECK(fabs(gr_array_get(o[1], i) - (3 * xv[i] * xv[i] - 2)) <= 1e-14, "df/dx[%d] = %g", i, gr_array_get(o[1], i));
        }
        FAM_CHECK(fabs(gr_array_get(o[0], 0) - want) <= 1e-14, "f = %g, want %g", gr_array_get(o[0], 0), want);
    } else FAM_CHECK(0, "gr_call failed: %s", fn ? gr_fn_message(fn) : "");
    gr_fn_free(fn);
    gr_array_free(a);
    gr_graph_free(g);
}

/* a Jacobian: of a 0-d expression it is the gradient (no batching needed); of a vector it needs the
   batching family */
static void fam_jacobian(void) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *j = NULL, *h = NULL;
    gr_status st = gr_jacobian(gr_sum(gr_sin(x)), 1, &x, &j, NULL);
    FAM_CHECK(st == GR_OK && j && j->ndim == 1, "jacobian of a 0-d expression: %s", gr_graph_message(g));
    st = gr_jacobian(gr_sin(x), 1, &x, &j, NULL);
#ifdef GR_NO_BATCH
    FAM_CHECK(st == GR_ERR_VALUE && !j, "gr_jacobian of a vector without batching: status %d", (int)st);
    FAM_CHECK(strstr(gr_graph_message(g), "gr_jacobian") && strstr(gr_graph_message(g), "GR_NO_BATCH"),
              "message: %s", gr_graph_message(g));
    gr_graph_free(g);                    /* a graph keeps its first message: a new one */
    g = gr_graph_new();
    x = gr_vector(g, GR_F64, "x");
    st = gr_hessian(gr_sum(gr_sin(x)), 1, &x, &h, NULL);
    FAM_CHECK(st == GR_ERR_VALUE && !h && strstr(gr_graph_message(g), "gr_hessian") && strstr(gr_graph_message(g), "GR_NO_BATCH"),
              "gr_hessian without batching: status %d, %s", (int)st, gr_graph_message(g));
#else
    FAM_CHECK(st == GR_OK && j && j->ndim == 2, "jacobian of a vector: %s", gr_graph_message(g));
    st = gr_hessian(gr_sum(gr_sin(x)), 1, &x, &h, NULL);
    FAM_CHECK(st == GR_OK && h && h->ndim == 2, "hessian: %s", gr_graph_message(g));
#endif
    gr_graph_free(g);
}

/* gr_ifelse: the gradient driver names it, so it stays, failing with a message without its family */
static void fam_ifelse(void) {
    gr_graph *g = gr_graph_new();
    gr_var *c = gr_scalar(g, GR_BOOL, "c"), *a = gr_scalar(g, GR_F64, "a"), *b = gr_scalar(g, GR_F64, "b"), *r = NULL;
    gr_status st = gr_ifelse(c, 1, &a, &b, &r);
#ifdef GR_NO_IFELSE
    FAM_CHECK(st == GR_ERR_VALUE && !r && strstr(gr_graph_message(g), "gr_ifelse") && strstr(gr_graph_message(g), "GR_NO_IFELSE"),
              "gr_ifelse without conditionals: status %d, %s", (int)st, gr_graph_message(g));
#else
    FAM_CHECK(st == GR_OK && r, "gr_ifelse: %s", gr_graph_message(g));
#endif
    gr_graph_free(g);
}

/* GR_ELEMWISE_ONLY: a row whose kernels were left out (no GR_EW_exp) fails when called, naming the
   macro that brings it back */
static void fam_elemwise_only(void) {
#if defined(GR_ELEMWISE_ONLY) && !defined(GR_EW_exp)
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_exp(x);
    gr_fn *fn = gr_function(1, &x, 1, &y, NULL);
    double xv[2] = { 0.5, 1.0 };
    int64_t n = 2;
    gr_array *a = gr_array_from(GR_F64, 1, &n, xv);
    const gr_array *o[1];
    FAM_CHECK(fn && a, "gr_function: %s", gr_graph_message(g));
    if (fn && a) {
        gr_status st = gr_call(fn, (const gr_array *const *)&a, o);
        FAM_CHECK(st == GR_ERR_VALUE && strstr(gr_fn_message(fn), "GR_EW_exp"), "gr_call of exp without its kernels: status %d, %s",
                  (int)st, gr_fn_message(fn));
    }
    gr_fn_free(fn);
    gr_array_free(a);
    gr_graph_free(g);
#endif
}

#ifdef FAM_CALL_DET
static gr_var *fam_det(gr_var *m) { return gr_det(m); }   /* not built with GR_NO_LINALG: the build fails */
#endif

int main(void) {
    fam_core();
    fam_jacobian();
    fam_ifelse();
    fam_elemwise_only();
#ifdef FAM_CALL_DET
    (void)fam_det(NULL);
#endif
    printf("families: %s\n", fails ? "FAILED" : "all passed");
    return fails != 0;
}
