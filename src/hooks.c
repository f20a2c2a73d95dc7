/* src/hooks.c: the implementation begins: its guard, the C library, and the hooks a user may
   define (GR_MALLOC/GR_REALLOC/GR_FREE, GR_ASSERT, GR_TRAP_ON_ERROR, GRADIENT_CBLAS). */
#ifdef GRADIENT_IMPLEMENTATION
#ifndef GRADIENT_IMPLEMENTATION_DONE
#define GRADIENT_IMPLEMENTATION_DONE

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>                    /* (v)snprintf for messages; streams only without GR_NO_STDIO */
#include <stdlib.h>
#include <string.h>

#if defined(GR_MALLOC) && defined(GR_REALLOC) && defined(GR_FREE)
/* the user's allocator */
#elif !defined(GR_MALLOC) && !defined(GR_REALLOC) && !defined(GR_FREE)
#define GR_MALLOC(n) malloc(n)
#define GR_REALLOC(p, n) realloc(p, n)
#define GR_FREE(p) free(p)
#else
#error "gradient.h: define all of GR_MALLOC, GR_REALLOC and GR_FREE, or none of them"
#endif

#if !defined(GR_ASSERT) && defined(GR_NO_STDIO)   /* assert prints to stderr: trap instead */
#if defined(__GNUC__) || defined(__clang__)
#define GR_ASSERT(c) do { if (!(c)) __builtin_trap(); } while (0)
#else
#define GR_ASSERT(c) do { if (!(c)) abort(); } while (0)
#endif
#endif
#ifndef GR_ASSERT
#include <assert.h>
#define GR_ASSERT(c) assert(c)
#endif

#ifdef GR_TRAP_ON_ERROR
#if defined(__GNUC__) || defined(__clang__)
#define GR__TRAP() __builtin_trap()
#else
#define GR__TRAP() abort()
#endif
#else
#define GR__TRAP() ((void)0)
#endif

#ifdef GRADIENT_CBLAS
#include <cblas.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif
