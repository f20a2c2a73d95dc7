/* tests/alloc_hook.h: the counting allocator of the allocation tests (tests/alloc_count.c,
   tests/alloc_ops.c), installed as GR_MALLOC / GR_REALLOC / GR_FREE before the implementation,
   which it includes, with the runner's (a test program of one file). Armed, it fails the
   allocation call number fail_at (counted from the arming) and sets `failed`. */
#ifndef GR_TEST_ALLOC_HOOK_H
#define GR_TEST_ALLOC_HOOK_H

#include <stdlib.h>
#include <stddef.h>

typedef struct ac_state {
    long live;                    /* blocks allocated and not freed */
    long calls;                   /* allocation calls (malloc and realloc) */
    long armed_calls;             /* allocation calls since the injector was armed */
    long fail_at;                 /* the armed call that fails, -1 for none */
    int armed, failed;
    size_t bytes;                 /* bytes allocated and not freed */
    size_t peak;                  /* the most bytes allocated at once (reset by the tests) */
} ac_state;
static ac_state ac = { 0, 0, 0, -1, 0, 0, 0, 0 };

/* each block starts with its size */
typedef union ac_head { size_t n; long double ld; long long ll; void *p; } ac_head;

static int ac_should_fail(void) {
    if (!ac.armed) return 0;
    if (ac.armed_calls++ == ac.fail_at) { ac.failed = 1; return 1; }
    return 0;
}
static void *ac_malloc(size_t n) {
    ac_head *h;
    ac.calls++;
    if (ac_should_fail()) return NULL;
    h = (ac_head *)malloc(sizeof(ac_head) + n);
    if (!h) return NULL;
    h->n = n;
    ac.live++;
    ac.bytes += n;
    if (ac.bytes > ac.peak) ac.peak = ac.bytes;
    return h + 1;
}
static void *ac_realloc(void *old, size_t n) {
    ac_head *h;
    size_t was;
    if (!old) return ac_malloc(n);
    ac.calls++;
    if (ac_should_fail()) return NULL;
    was = ((ac_head *)old - 1)->n;
    h = (ac_head *)realloc((ac_head *)old - 1, sizeof(ac_head) + n);
    if (!h) return NULL;
    h->n = n;
    ac.bytes = ac.bytes - was + n;
    if (ac.bytes > ac.peak) ac.peak = ac.bytes;
    return h + 1;
}
static void ac_free(void *p) {
    if (!p) return;
    ac.live--;
    ac.bytes -= ((ac_head *)p - 1)->n;
    free((ac_head *)p - 1);
}

#define GR_MALLOC(n) ac_malloc(n)
#define GR_REALLOC(p, n) ac_realloc(p, n)
#define GR_FREE(p) ac_free(p)
#define GRADIENT_IMPLEMENTATION
#define GT_RUNNER_IMPLEMENTATION
#include "../gradient.h"
#include "harness.h"

#endif
