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

#endif
