/* gradient.h v0.1.0 - symbolic differentiation of tensor expressions in one C11 header. MIT licence.

   Build graphs of tensor operations (NumPy-style broadcasting, reductions, dot, reshapes, softmax,
   indexing, ...), differentiate them symbolically after Aesara's aesara.gradient (reverse mode:
   gr_grad, gr_grad1, gr_lop, gr_subgraph_grad and the gradient-modifying ops; forward mode:
   gr_rop; gr_jacobian and gr_hessian, batched; gr_verify_grad and finite differences), and
   evaluate them with compiled functions (gr_function, gr_call) that optimise the graph, plan their
   memory once and update shared variables after each call. Gradients are graphs too, so they can
   be differentiated again. Needs only libc and libm. Generated from src/ and ops/ by
   `make gradient.h`: edit those.

   USAGE
     In exactly one C or C++ file:        #define GRADIENT_IMPLEMENTATION
                                          #include "gradient.h"
     Everywhere else:                     #include "gradient.h"
     Build:                               cc -O2 prog.c -lm

   OPTIONS (define before including)
     GRADIENT_IMPLEMENTATION   one file only      emit the implementation
     GRADIENT_STATIC           every file using it  every function is static (then each file
                                                  defines GRADIENT_IMPLEMENTATION too)
     GRADIENT_CBLAS            the implementation  dot calls cblas_?gemm / ?gemv / ?dot from
                                                  <cblas.h> (link -lopenblas or another CBLAS);
                                                  the header then defines GR_HAVE_CBLAS
     GR_MALLOC(n), GR_REALLOC(p, n), GR_FREE(p)   the implementation, all three or none: the
                                                  allocator (default malloc/realloc/free)
     GR_ASSERT(c)              the implementation  internal invariants only (default assert)
     GR_TRAP_ON_ERROR          the implementation  trap (__builtin_trap, else abort) when a graph
                                                  records its first error or a call fails, to get
                                                  a call stack in a debugger
     GR_NO_VECTOR_EXTENSIONS   the implementation  the built-in GEMM in plain C, without GCC/Clang
                                                  vector extensions (which it uses by default, at
                                                  the widest vector width the target enables), and
                                                  the C library's exp, log, sin... instead of the
                                                  library's vectorised ones (ops/vmath.c)

   EXAMPLE
     gr_graph *g = gr_graph_new();
     gr_var *x = gr_vector(g, GR_F64, "x");
     gr_var *y = gr_sum(gr_mul(gr_sin(x), x));              // y = sum(x sin x)
     gr_var *outs[2] = { y, gr_grad1(y, x) };               // and dy/dx = sin x + x cos x
     gr_fn *f = gr_function(1, &x, 2, outs, NULL);          // compiled: independent of g
     if (!f) { fprintf(stderr, "%s\n", gr_graph_message(g)); gr_graph_free(g); return 1; }
     gr_graph_free(g);
     int64_t n = 3; double xs[3] = { 0.5, 1.0, 2.0 };
     gr_array *xa = gr_array_from(GR_F64, 1, &n, xs);       // copies xs
     const gr_array *in[1] = { xa }, *out[2];
     if (gr_call(f, in, out) == GR_OK)   // y = 2.89978, dy/dx = (0.918217, 1.38177, 0.0770038)
         printf("y = %g, dy/dx = (%g, %g, %g)\n", gr_array_get(out[0], 0),
                gr_array_get(out[1], 0), gr_array_get(out[1], 1), gr_array_get(out[1], 2));
     else fprintf(stderr, "%s\n", gr_fn_message(f));
     gr_array_free(xa); gr_fn_free(f);                      // out[] belonged to f

   LAYOUT   The declarations follow, grouped: types, graph and arrays, leaves, ops by family,
            drivers, compiled functions, checking gradients, printing, defining an op. The
            implementation (behind GRADIENT_IMPLEMENTATION) opens with the op tables; the licence
            is at the end.

   ERRORS   Nothing aborts on bad input. A failing builder records its error on the graph (a code
            and a message naming the op and the variable; the first sticks until
            gr_graph_clear_error) and returns NULL; given a NULL operand it returns NULL, so a
            chain is checked once, at the end. gr_function fails alike; gr_call returns a status
            and gr_fn_message says why.
   MEMORY   A graph owns everything built in it (one arena, freed by gr_graph_free). Arrays belong
            to whoever made them; those gr_call gives back are the function's until its next call.
            A gr_fn owns a copy of what it needs and buffers made at its first call and reused
            while the shapes stay: a steady-state gr_call allocates nothing. A shared variable's
            value lives until the last graph or function holding it is freed.
   THREADS  No global mutable state. A graph or a gr_fn is used by one thread at a time
            (gr_function reads its graph); different ones may run at once, except those holding
            the same shared variable, whose storage is not locked.
*/
#ifndef GRADIENT_H
#define GRADIENT_H
