/* tests/harness.h: the test harness. Each tests/t_*.c defines tests with TEST(name) and lists them
   in a SUITE; tests/main.c (the file holding the implementation) runs every suite and prints
   "N passed, N failed". */
#ifndef GR_TEST_HARNESS_H
#define GR_TEST_HARNESS_H

#include "../gradient.h"
#include "../ops/table.h"   /* the op tables, for the tests that iterate them: gradient.h holds them
                               only behind GRADIENT_IMPLEMENTATION (the same text: make check-header) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gt_state { int passed, failed, checks_failed; const char *test; } gt_state;
extern gt_state gt;

void gt_fail(const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#define CHECK(c) do { if (!(c)) gt_fail(__FILE__, __LINE__, "CHECK(%s)", #c); } while (0)
#define CHECK_MSG(c, ...) do { if (!(c)) gt_fail(__FILE__, __LINE__, __VA_ARGS__); } while (0)
/* |a - b| <= tol * max(1, |b|) */
#define CHECK_NEAR(a, b, tol) do { double gt_a_ = (double)(a), gt_b_ = (double)(b); \
    if (!(fabs(gt_a_ - gt_b_) <= (tol) * (fabs(gt_b_) > 1 ? fabs(gt_b_) : 1.0)) && !(gt_a_ != gt_a_ && gt_b_ != gt_b_) && \
        !(isinf(gt_a_) && gt_a_ == gt_b_)) \
        gt_fail(__FILE__, __LINE__, "CHECK_NEAR(%s, %s): %.17g vs %.17g", #a, #b, gt_a_, gt_b_); } while (0)
#define CHECK_EQ_INT(a, b) do { long long gt_a_ = (long long)(a), gt_b_ = (long long)(b); \
    if (gt_a_ != gt_b_) gt_fail(__FILE__, __LINE__, "CHECK_EQ_INT(%s, %s): %lld vs %lld", #a, #b, gt_a_, gt_b_); } while (0)
#define CHECK_STATUS(st, want) do { gr_status gt_s_ = (st); \
    if (gt_s_ != (want)) gt_fail(__FILE__, __LINE__, "status of %s: %s, want %s", #st, gr_status_string(gt_s_), gr_status_string(want)); } while (0)
#define CHECK_CONTAINS(hay, needle) do { const char *gt_h_ = (hay); \
    if (!gt_h_ || !strstr(gt_h_, (needle))) gt_fail(__FILE__, __LINE__, "message \"%s\" lacks \"%s\"", gt_h_ ? gt_h_ : "(null)", needle); } while (0)

typedef void (*gt_fn)(void);
typedef struct gt_case { const char *name; gt_fn fn; } gt_case;
#define TEST(name) static void name(void)
#define SUITE(suite) const gt_case suite[]
#define CASE(name) { #name, name }
#define END_SUITE { NULL, NULL }

void gt_run(const gt_case *cases);

#endif
