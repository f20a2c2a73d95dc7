/* tests/main.c: the implementation's translation unit and the runner. */
#define GRADIENT_IMPLEMENTATION
#include "harness.h"
#include <stdarg.h>

gt_state gt;

void gt_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    gt.checks_failed++;
    fprintf(stderr, "FAIL %s (%s:%d): ", gt.test ? gt.test : "?", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
}

void gt_run(const gt_case *cases) {
    int i;
    for (i = 0; cases[i].name; i++) {
        int before = gt.checks_failed;
        gt.test = cases[i].name;
        cases[i].fn();
        if (gt.checks_failed == before) gt.passed++;
        else gt.failed++;
    }
}

/* build/suites.h lists every SUITE(suite_...) of tests/t_*.c (made by the Makefile) */
#include "suites.h"
#define GT_DECL(s) extern const gt_case s[];
GT_SUITES(GT_DECL)

int main(void) {
#define GT_RUN(s) gt_run(s);
    GT_SUITES(GT_RUN)
    printf("%d passed, %d failed\n", gt.passed, gt.failed);
    return gt.failed ? 1 : 0;
}
