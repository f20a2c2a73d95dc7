/* tests/main.c: the implementation's translation unit and the test binary's main. */
#define GRADIENT_IMPLEMENTATION
#define GT_RUNNER_IMPLEMENTATION
#include "harness.h"

/* build/suites.h lists every SUITE(suite_...) of tests/t_*.c (made by the Makefile) */
#include "suites.h"
#define GT_DECL(s) extern const gt_case s[];
GT_SUITES(GT_DECL)

int main(void) {
#define GT_RUN(s) gt_run(s);
    GT_SUITES(GT_RUN)
    return gt_report("tests");
}
