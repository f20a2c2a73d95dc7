/* tests/harness.h: what every file of the test binary includes: gradient.h, the op tables and the
   runner (tests/runner.h: TEST, SUITE, CHECK...). tests/main.c, the file holding the implementation,
   runs every suite and prints "tests: N passed, N failed, M checks". */
#ifndef GR_TEST_HARNESS_H
#define GR_TEST_HARNESS_H

#include "../gradient.h"
#include "../ops/table.h"   /* the op tables, for the tests that iterate them: gradient.h holds them
                               only behind GRADIENT_IMPLEMENTATION (the same text: make check-header) */
#include "runner.h"
#include <stdlib.h>

/* |got - want| in ulp of want rounded to a format of mant bits and smallest normal exponent min_exp
   (tests/t_vmath.c) */
double gt_ulps(long double got, long double want, int mant, int min_exp);

/* every gr_call of the test binary goes through gt_call (tests/t_emit.c), which calls gr_call and,
   when the binary runs with GT_EMIT_OUT, first emits the function as C for the call's inputs (the
   allocation tests, tests/alloc_hook.h, call gr_call itself) */
#ifndef GR_TEST_ALLOC_HOOK_H
gr_status gt_call(gr_fn *f, const gr_array *const *inputs, const gr_array **outputs);
#define gr_call gt_call
#endif

#endif
