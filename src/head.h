/* gradient.h v0.1.0 - symbolic differentiation of tensor expressions in one C11 header. MIT licence.

   Build graphs of tensor operations, ask for gradients (gr_grad), vector-Jacobian and
   Jacobian-vector products (gr_lop, gr_rop), Jacobians and Hessians, check them against finite
   differences (gr_verify_grad), and evaluate them with compiled functions (gr_function, gr_call).
   Needs only libc and libm. Generated from src/ and ops/ by `make gradient.h`: edit those.

   USAGE
     In exactly one C or C++ file:        #define GRADIENT_IMPLEMENTATION
                                          #include "gradient.h"
     Everywhere else:                     #include "gradient.h"
     Build:                               cc -O2 prog.c -lm

   OPTIONS (define before including)
     GRADIENT_IMPLEMENTATION   one file only      emit the implementation
     GRADIENT_STATIC           every file using it  every function is static (then each file
                                                  defines GRADIENT_IMPLEMENTATION too)
     GRADIENT_CBLAS            the implementation  dot goes through cblas_?gemm / cblas_?gemv
                                                  (link -lopenblas or another CBLAS); the header
                                                  then defines GR_HAVE_CBLAS
     GR_MALLOC(n), GR_REALLOC(p, n), GR_FREE(p)   the implementation, all three or none: the
                                                  allocator (default malloc/realloc/free)
     GR_ASSERT(c)              the implementation  internal invariants only (default assert)
     GR_TRAP_ON_ERROR          the implementation  trap (__builtin_trap) at the first error recorded,
                                                  to get a call stack in a debugger

   EXAMPLE
     gr_graph *g = gr_graph_new();
     gr_var *x = gr_vector(g, GR_F64, "x");
     gr_var *y = gr_sum(gr_mul(gr_sin(x), x));              // y = sum(x sin x)
     gr_var *dy = gr_grad1(y, x);                           // dy/dx = sin x + x cos x
     gr_var *outs[2] = { y, dy };
     gr_fn *f = gr_function(1, &x, 2, outs, NULL);
     if (!f) { fprintf(stderr, "%s\n", gr_graph_message(g)); return 1; }
     gr_graph_free(g);                                      // f no longer needs the graph
     int64_t n = 3; double xs[3] = { 0.5, 1.0, 2.0 };
     gr_array *xa = gr_array_from(GR_F64, 1, &n, xs);
     const gr_array *in[1] = { xa }, *out[2];
     if (gr_call(f, in, out) == GR_OK) printf("y = %g\n", gr_array_get(out[0], 0));
     gr_array_free(xa); gr_fn_free(f);

   ERRORS   Nothing aborts on bad input. A failing builder records the first error on its graph
            (code and a message naming the op and the variable) and returns NULL; builders given a
            NULL operand return NULL silently, so a chain can be checked once at the end with
            gr_graph_status / gr_graph_message. gr_call returns a status; gr_fn_message says why.
   MEMORY   A graph owns every variable and node built in it (one arena, freed by gr_graph_free).
            Arrays belong to whoever created them. A gr_fn owns a private copy of the graph it
            needs and its buffers: buffers are allocated at the first call and reused while the
            shapes stay the same, so a steady-state gr_call allocates nothing.
   THREADS  No global mutable state. A graph, and a gr_fn, must be used by one thread at a time;
            different graphs and functions may be used from different threads at once, except
            that shared variables are shared by every function that uses them.
*/
#ifndef GRADIENT_H
#define GRADIENT_H
