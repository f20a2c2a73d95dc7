/* tests/small_target.c: the library on a small target (issue 18's six-node program).

   f(x, y) = sum(sin(x y) + x^2 - y / 2) over 4-vectors, its gradient (df/dx = y cos(xy) + 2x,
   df/dy = x cos(xy) - 1/2), compiled and called twice. Run on the host it checks the values against
   those closed forms and prints the heap the library held at its peak (the counting allocator of
   tests/alloc_hook.h); `make test-small` also checks every stack frame of this program for the host
   and, when arm-none-eabi-gcc is installed, builds it for a Cortex-M4 (-Os, --gc-sections) with the
   same frame check and prints its size: no function's frame above 4 KB (GR_STACK_LIMIT). Built with
   -DGR_SMALL_NO_HOOK it uses the plain allocator (for the Cortex-M4 build: its flash and heap are
   the library's own). `make test-small` also builds it with GR_ONLY_CORE (no op family beyond the
   core) and GR_ELEMWISE_ONLY with the kernels of the six elementwise rows its function runs. */
#ifndef GR_SMALL_NO_HOOK
#include "alloc_hook.h"
#else
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"
#endif

static int small_run(double *err) {
    gr_graph *g = gr_graph_new();
    gr_var *x, *y, *f, *wrt[2], *dg[2] = { NULL, NULL }, *outs[3], *ins[2];
    gr_fn *fn = NULL;
    static const double xv[4] = { 0.1, -0.7, 1.3, 2.0 }, yv[4] = { 1.0, 0.5, -2.0, 3.0 };
    int64_t n = 4;
    gr_array *a[2] = { NULL, NULL };
    const gr_array *o[3];
    int rc = 1, call, i;
    if (!g) return 1;
    x = gr_vector(g, GR_F64, "x");
    y = gr_vector(g, GR_F64, "y");
    f = gr_sum(gr_sub(gr_add(gr_sin(gr_mul(x, y)), gr_mul(x, x)), gr_mul(y, gr_const(g, 0.5))));
    wrt[0] = x; wrt[1] = y;
    if (gr_grad(f, 2, wrt, dg, NULL) != GR_OK) goto done;
    ins[0] = x; ins[1] = y; outs[0] = f; outs[1] = dg[0]; outs[2] = dg[1];
    if (!(fn = gr_function(2, ins, 3, outs, NULL))) goto done;
    a[0] = gr_array_from(GR_F64, 1, &n, xv);
    a[1] = gr_array_from(GR_F64, 1, &n, yv);
    if (!a[0] || !a[1]) goto done;
    *err = 0;
    for (call = 0; call < 2; call++) {
        double want = 0, e;
        if (gr_call(fn, (const gr_array *const *)a, o) != GR_OK) goto done;
        for (i = 0; i < 4; i++) {
            double p = xv[i] * yv[i];
            want += sin(p) + xv[i] * xv[i] - yv[i] / 2;
            e = fabs(gr_array_get(o[1], i) - (yv[i] * cos(p) + 2 * xv[i])) + fabs(gr_array_get(o[2], i) - (xv[i] * cos(p) - 0.5));
            if (e > *err) *err = e;
        }
        e = fabs(gr_array_get(o[0], 0) - want);
        if (e > *err) *err = e;
    }
    rc = 0;
done:
    gr_fn_free(fn);
    gr_graph_free(g);
    gr_array_free(a[0]);
    gr_array_free(a[1]);
    return rc;
}

#ifndef GR_SMALL_NO_HOOK
TEST(test_small_target) {
    double err = 1;
    ac.peak = ac.bytes = 0;
    CHECK(small_run(&err) == 0);
    CHECK_MSG(err <= 1e-14, "largest error against the closed forms: %g", err);
    CHECK_MSG(ac.live == 0, "%ld blocks left", ac.live);
    printf("small target: heap peak %zu bytes (graph, gradient, compiled function, two calls)\n", ac.peak);
    CHECK_MSG(ac.peak < 64 * 1024, "heap peak %zu bytes", ac.peak);
}

static const gt_case suite_small[] = { CASE(test_small_target), END_SUITE };

int main(void) {
    gt_run(suite_small);
    return gt_report("small target");
}
#else
int main(void) {
    double err = 1;
    return small_run(&err) != 0 || err > 1e-14;
}
#endif
