/* tests/install/consumer.c: a program built against an installed gradient.h (make test-install:
   through pkg-config, and through CMake's find_package, add_subdirectory and FetchContent). It
   checks the version macros against each other and d/dx x^3 = 3 x^2 at x = 2. */
#include <stdio.h>
#include <string.h>
#define GRADIENT_IMPLEMENTATION
#include <gradient.h>

int main(void) {
    char v[32];
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x");
    gr_var *d = gr_grad1(gr_mul(x, gr_mul(x, x)), x);
    gr_fn *f = gr_function(1, &x, 1, &d, NULL);
    gr_array *xa = gr_array_scalar(GR_F64, 2.0);
    const gr_array *in[1], *out[1];
    int ok;
    snprintf(v, sizeof v, "%d.%d.%d", GRADIENT_VERSION_MAJOR, GRADIENT_VERSION_MINOR, GRADIENT_VERSION_PATCH);
    in[0] = xa;
    ok = f && gr_call(f, in, out) == GR_OK && gr_array_get(out[0], 0) == 12.0 &&
         strcmp(v, GRADIENT_VERSION_STRING) == 0 &&
         GRADIENT_VERSION == GRADIENT_VERSION_MAJOR * 10000 + GRADIENT_VERSION_MINOR * 100 + GRADIENT_VERSION_PATCH;
    printf("consumer: gradient.h %s (%d): d/dx x^3 at 2 = %g: %s\n", GRADIENT_VERSION_STRING, GRADIENT_VERSION,
           ok ? gr_array_get(out[0], 0) : -1.0, ok ? "ok" : "WRONG");
    gr_array_free(xa);
    gr_fn_free(f);
    gr_graph_free(g);
    return ok ? 0 : 1;
}
