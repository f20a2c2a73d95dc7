/* tests/main.c: the implementation's translation unit and the test binary's main: the cases of
   every op row (tests/ops.c), then every suite of tests/ops_*.c and tests/t_*.c. */
#define GRADIENT_IMPLEMENTATION
#define GT_RUNNER_IMPLEMENTATION
#include "harness.h"

void gt_run_ops(void);

/* build/suites.h lists every SUITE(suite_...) of tests/ops_*.c and tests/t_*.c (made by the Makefile) */
#include "suites.h"
#define GT_DECL(s) extern const gt_case s[];
GT_SUITES(GT_DECL)

int gt_emit_gen(const char *dir);   /* tests/t_emit.c: the row-driven emission (make test-emit) */

int main(void) {
    if (getenv("GT_EMIT_OUT")) return gt_emit_gen(getenv("GT_EMIT_OUT"));
    gt_run_ops();
#define GT_RUN(s) gt_run(s);
    GT_SUITES(GT_RUN)
    return gt_report("tests");
}
