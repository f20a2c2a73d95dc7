/* tests/runner.h: the test runner every test program shares (the test binary, tests/main.c with
   tests/ops_*.c and tests/t_*.c; alloc_count.c, alloc_ops.c, alloc_linalg.c, api_min.c, link_a.c,
   cxx.cpp). It needs only the C library, and gradient.h for CHECK_STATUS.

   A test is a function of no arguments, TEST(name); a suite lists tests, SUITE(suite_x) = {
   CASE(name), ..., END_SUITE }, and gt_run runs one. Every CHECK counts (gt.checks); a failed one
   prints "FAIL test (file:line): what" and fails its test. gt_report(program) closes a program
   with the line "program: N passed, N failed, M checks" and returns its exit status.

   One file of each program defines GT_RUNNER_IMPLEMENTATION before including this. C and C++. */
#ifndef GT_RUNNER_H
#define GT_RUNNER_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct gt_state {
    int passed, failed;          /* tests */
    long checks;                 /* checks made */
    int checks_failed;
    const char *test;            /* the test running */
} gt_state;
extern gt_state gt;

void gt_fail(const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#define CHECK(c) do { gt.checks++; if (!(c)) gt_fail(__FILE__, __LINE__, "CHECK(%s)", #c); } while (0)
#define CHECK_MSG(c, ...) do { gt.checks++; if (!(c)) gt_fail(__FILE__, __LINE__, __VA_ARGS__); } while (0)
/* |a - b| <= tol * max(1, |b|); NaN matches NaN, and an infinity itself */
#define CHECK_NEAR(a, b, tol) do { double gt_a_ = (double)(a), gt_b_ = (double)(b); gt.checks++; \
    if (!(fabs(gt_a_ - gt_b_) <= (tol) * (fabs(gt_b_) > 1 ? fabs(gt_b_) : 1.0)) && !(gt_a_ != gt_a_ && gt_b_ != gt_b_) && \
        !(isinf(gt_a_) && gt_a_ == gt_b_)) \
        gt_fail(__FILE__, __LINE__, "CHECK_NEAR(%s, %s): %.17g vs %.17g", #a, #b, gt_a_, gt_b_); } while (0)
#define CHECK_EQ_INT(a, b) do { long long gt_a_ = (long long)(a), gt_b_ = (long long)(b); gt.checks++; \
    if (gt_a_ != gt_b_) gt_fail(__FILE__, __LINE__, "CHECK_EQ_INT(%s, %s): %lld vs %lld", #a, #b, gt_a_, gt_b_); } while (0)
#define CHECK_STATUS(st, want) do { gr_status gt_s_ = (st); gt.checks++; \
    if (gt_s_ != (want)) gt_fail(__FILE__, __LINE__, "status of %s: %s, want %s", #st, gr_status_string(gt_s_), gr_status_string(want)); } while (0)
#define CHECK_CONTAINS(hay, needle) do { const char *gt_h_ = (hay); gt.checks++; \
    if (!gt_h_ || !strstr(gt_h_, (needle))) gt_fail(__FILE__, __LINE__, "message \"%s\" lacks \"%s\"", gt_h_ ? gt_h_ : "(null)", needle); } while (0)

typedef void (*gt_fn)(void);
typedef struct gt_case { const char *name; gt_fn fn; } gt_case;
#define TEST(name) static void name(void)
#define SUITE(suite) const gt_case suite[]
#define CASE(name) { #name, name }
#define END_SUITE { NULL, NULL }

void gt_run(const gt_case *cases);       /* runs a suite */
void gt_run1(const char *name, gt_fn fn);  /* runs one test under a name */
int gt_report(const char *program);      /* prints the closing line; 0 when nothing failed, else 1 */

#ifdef GT_RUNNER_IMPLEMENTATION
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

void gt_run1(const char *name, gt_fn fn) {
    int before = gt.checks_failed;
    gt.test = name;
    fn();
    if (gt.checks_failed == before) gt.passed++;
    else gt.failed++;
    gt.test = NULL;
}

void gt_run(const gt_case *cases) {
    int i;
    for (i = 0; cases[i].name; i++) gt_run1(cases[i].name, cases[i].fn);
}

int gt_report(const char *program) {
    if (gt.checks_failed && !gt.failed) gt.failed = 1;     /* a check outside every test failed */
    printf("%s: %d passed, %d failed, %ld checks\n", program, gt.passed, gt.failed, gt.checks);
    return gt.failed ? 1 : 0;
}
#endif

#endif
