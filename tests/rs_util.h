/* tests/rs_util.h: helpers of the R-op, Jacobian and Hessian semantics tests (t_rop_*.c,
   t_jacobian_*.c): F64 arrays from C data, compile-and-call with copied results, element-wise
   comparison with a message, central differences along a direction, a seeded generator.
   Everything is static inline, so a file that uses only some of them stays warning-free. */
#ifndef GT_RS_UTIL_H
#define GT_RS_UTIL_H

#include "harness.h"

static inline gr_array *rs_arr(int ndim, const int64_t *shape, const double *data) {
    return data ? gr_array_from(GR_F64, ndim, shape, data) : gr_array_new(GR_F64, ndim, shape);
}
static inline gr_array *rs_vec(int64_t n, const double *data) { return rs_arr(1, &n, data); }
static inline gr_array *rs_mat(int64_t r, int64_t c, const double *data) {
    int64_t s[2];
    s[0] = r; s[1] = c;
    return rs_arr(2, s, data);
}

/* compiles outs from ins, calls it on vals and copies every output into res (NULL on failure,
   with the messages on stderr); returns 1 when all went well */
static inline int rs_run(int n_in, gr_var *const *ins, const gr_array *const *vals, int n_out, gr_var *const *outs, gr_array **res) {
    gr_fn *f;
    const gr_array *o[16];
    int i, ok = 1;
    for (i = 0; i < n_out; i++) res[i] = NULL;
    if (n_out > 16) return 0;
    for (i = 0; i < n_out; i++)
        if (!outs[i]) { fprintf(stderr, "rs_run: output %d is NULL\n", i); return 0; }
    f = gr_function(n_in, ins, n_out, outs, NULL);
    if (!f) {
        fprintf(stderr, "rs_run: gr_function failed: %s\n", gr_graph_message(gr_var_graph(outs[0])));
        return 0;
    }
    if (gr_call(f, vals, o) != GR_OK) {
        fprintf(stderr, "rs_run: gr_call failed: %s\n", gr_fn_message(f));
        ok = 0;
    } else
        for (i = 0; i < n_out; i++) if (!(res[i] = gr_array_copy(o[i]))) ok = 0;
    gr_fn_free(f);
    return ok;
}
static inline void rs_free(int n, gr_array **a) {
    int i;
    for (i = 0; i < n; i++) { gr_array_free(a[i]); a[i] = NULL; }
}

/* |a[k] - want[k]| <= tol * max(1, |want[k]|) for k < n, and a has n elements; why gets the first
   failure */
static inline int rs_close(const gr_array *a, int64_t n, const double *want, double tol, char *why, size_t wsz) {
    int64_t k;
    if (!a) { snprintf(why, wsz, "no array"); return 0; }
    if (a->size != n) { snprintf(why, wsz, "%lld elements, want %lld", (long long)a->size, (long long)n); return 0; }
    for (k = 0; k < n; k++) {
        double x = gr_array_get(a, k), w = want[k];
        if (!(fabs(x - w) <= tol * (fabs(w) > 1 ? fabs(w) : 1.0))) {
            snprintf(why, wsz, "element %lld is %.17g, want %.17g", (long long)k, x, w);
            return 0;
        }
    }
    return 1;
}
#define CHECK_ARR(a, n, want, tol) do { char rs_w_[256]; \
    CHECK_MSG(rs_close((a), (n), (want), (tol), rs_w_, sizeof rs_w_), "%s: %s", #a, rs_w_); } while (0)
/* the array has this ndim and shape */
static inline int rs_shape_is(const gr_array *a, int ndim, const int64_t *shape) {
    int d;
    if (!a || a->ndim != ndim) return 0;
    for (d = 0; d < ndim; d++) if (a->shape[d] != shape[d]) return 0;
    return 1;
}
#define CHECK_SHAPE(a, nd, shape) CHECK_MSG(rs_shape_is((a), (nd), (shape)), "%s: ndim %d, not the wanted shape", #a, (a) ? (a)->ndim : -1)
/* every element is exactly zero */
static inline int rs_all_zero(const gr_array *a) {
    int64_t k;
    if (!a) return 0;
    for (k = 0; k < a->size; k++) if (gr_array_get(a, k) != 0.0) return 0;
    return 1;
}

/* (f(x + eps d) - f(x - eps d)) / (2 eps) for the single output of `outs` computed from ins, where
   x is input `which` (valued vals[which]) and d the direction; NULL on failure */
static inline gr_array *rs_central(int n_in, gr_var *const *ins, const gr_array *const *vals, gr_var *out, int which,
                                   const gr_array *d, double eps) {
    const gr_array *v[16];
    gr_array *xp, *xm, *rp = NULL, *rm = NULL, *res = NULL;
    int64_t k;
    int i;
    if (n_in > 16) return NULL;
    xp = gr_array_copy(vals[which]);
    xm = gr_array_copy(vals[which]);
    for (k = 0; xp && xm && k < xp->size; k++) {
        gr_array_set(xp, k, gr_array_get(vals[which], k) + eps * gr_array_get(d, k));
        gr_array_set(xm, k, gr_array_get(vals[which], k) - eps * gr_array_get(d, k));
    }
    for (i = 0; i < n_in; i++) v[i] = vals[i];
    v[which] = xp;
    if (rs_run(n_in, ins, v, 1, &out, &rp)) {
        v[which] = xm;
        if (rs_run(n_in, ins, v, 1, &out, &rm) && (res = gr_array_copy(rp)) != NULL)
            for (k = 0; k < res->size; k++) gr_array_set(res, k, (gr_array_get(rp, k) - gr_array_get(rm, k)) / (2 * eps));
    }
    gr_array_free(xp); gr_array_free(xm); gr_array_free(rp); gr_array_free(rm);
    return res;
}

/* a seeded generator (splitmix64) and uniform draws */
static inline uint64_t rs_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static inline double rs_uniform(uint64_t *s, double lo, double hi) {
    return lo + (hi - lo) * ((double)(rs_next(s) >> 11) / 9007199254740992.0);
}
static inline void rs_fill(uint64_t *s, double *d, int64_t n, double lo, double hi) {
    int64_t k;
    for (k = 0; k < n; k++) d[k] = rs_uniform(s, lo, hi);
}

/* counts the warnings given to gr_graph_set_log */
typedef struct rs_log { int calls; char last[512]; } rs_log;
static inline void rs_log_fn(void *user, const char *message) {
    rs_log *l = (rs_log *)user;
    l->calls++;
    snprintf(l->last, sizeof l->last, "%s", message);
}

#endif
