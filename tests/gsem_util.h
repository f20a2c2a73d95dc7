/* tests/gsem_util.h: small helpers shared by the tests/t_grad_*.c files that check SEMANTICS 2-12:
   arrays from doubles, one-shot evaluation of variables, capture of warnings, and the test ops
   defined through gr_op_def. */
#ifndef GR_TEST_GSEM_UTIL_H
#define GR_TEST_GSEM_UTIL_H

#include "harness.h"
#include <stdarg.h>

/* an array of dtype dt from doubles (converted element by element) */
static inline gr_array *gs_arr(gr_dtype dt, int ndim, const int64_t *shape, const double *v) {
    gr_array *a = gr_array_new(dt, ndim, shape);
    int64_t i;
    if (a && v) for (i = 0; i < a->size; i++) gr_array_set(a, i, v[i]);
    return a;
}
static inline gr_array *gs_vec(gr_dtype dt, int64_t n, const double *v) { return gs_arr(dt, 1, &n, v); }
static inline gr_array *gs_mat(gr_dtype dt, int64_t r, int64_t c, const double *v) {
    int64_t shape[2];
    shape[0] = r; shape[1] = c;
    return gs_arr(dt, 2, shape, v);
}

/* compiles f(in) -> outs, calls it once at vals and copies each output into res[i] (the caller
   frees them; NULL on failure). Returns the status of gr_function (as recorded on the graph) or of
   gr_call. */
static inline gr_status gs_run(int n_in, gr_var *const *in, const gr_array *const *vals, int n_out, gr_var *const *outs,
                               gr_array **res) {
    gr_fn *f;
    const gr_array *o[32];
    gr_status st;
    int i;
    for (i = 0; i < n_out; i++) res[i] = NULL;
    if (n_out > 32) return GR_ERR_VALUE;
    f = gr_function(n_in, in, n_out, outs, NULL);
    if (!f) {
        gr_graph *g = NULL;
        for (i = 0; !g && i < n_out; i++) g = gr_var_graph(outs[i]);
        for (i = 0; !g && i < n_in; i++) g = gr_var_graph(in[i]);
        st = g ? gr_graph_status(g) : GR_ERR_VALUE;
        return st == GR_OK ? GR_ERR_VALUE : st;
    }
    st = gr_call(f, vals, o);
    if (st == GR_OK) for (i = 0; i < n_out; i++) res[i] = gr_array_copy(o[i]);
    else fprintf(stderr, "gs_run: gr_call failed: %s\n", gr_fn_message(f));
    gr_fn_free(f);
    return st;
}

/* the single output of f(in) at vals, or NULL */
static inline gr_array *gs_eval(int n_in, gr_var *const *in, const gr_array *const *vals, gr_var *out) {
    gr_array *r = NULL;
    if (!out) return NULL;
    gs_run(n_in, in, vals, 1, &out, &r);
    return r;
}

/* how many elements of a differ from want by more than tol * max(1, |want|) (printing the first
   few); a wrong size or a NULL array counts as a mismatch too */
static inline int gs_diff(const gr_array *a, int64_t n, const double *want, double tol) {
    int64_t i;
    int bad = 0;
    if (!a) { fprintf(stderr, "  gs_diff: array is NULL\n"); return 1; }
    if (a->size != n) { fprintf(stderr, "  gs_diff: size %lld, want %lld\n", (long long)a->size, (long long)n); return 1; }
    for (i = 0; i < n; i++) {
        double v = gr_array_get(a, i), w = want[i];
        if (!(fabs(v - w) <= tol * (fabs(w) > 1 ? fabs(w) : 1.0))) {
            if (bad < 4) fprintf(stderr, "  gs_diff: element %lld is %.17g, want %.17g\n", (long long)i, v, w);
            bad++;
        }
    }
    return bad;
}
/* every element equals c exactly */
static inline int gs_all(const gr_array *a, int64_t n, double c) {
    int64_t i;
    if (!a || a->size != n) return 0;
    for (i = 0; i < n; i++) if (gr_array_get(a, i) != c) return 0;
    return 1;
}

/* ---- warnings through gr_graph_set_log ------------------------------------------------------ */

typedef struct gs_log { int count; char first[1024], last[1024]; } gs_log;
static inline void gs_log_fn(void *user, const char *message) {
    gs_log *l = (gs_log *)user;
    if (l->count == 0) snprintf(l->first, sizeof l->first, "%s", message);
    snprintf(l->last, sizeof l->last, "%s", message);
    l->count++;
}
static inline void gs_log_attach(gr_graph *g, gs_log *l) {
    memset(l, 0, sizeof *l);
    gr_graph_set_log(g, gs_log_fn, l);
}

/* everything gr_print writes for v, into buf */
static inline void gs_print(gr_var *v, char *buf, size_t size) {
    FILE *f = tmpfile();
    size_t n = 0;
    buf[0] = 0;
    if (!f) return;
    gr_print(f, v);
    rewind(f);
    n = fread(buf, 1, size - 1, f);
    buf[n] = 0;
    fclose(f);
}
static inline void gs_fn_print(const gr_fn *fn, char *buf, size_t size) {
    FILE *f = tmpfile();
    size_t n = 0;
    buf[0] = 0;
    if (!f) return;
    gr_fn_print(f, fn);
    rewind(f);
    n = fread(buf, 1, size - 1, f);
    buf[n] = 0;
    fclose(f);
}

/* ---- Cube: a user op y = x^3 whose grad rule is og * coef * x^2 (coef 3 is right) -------------- */

typedef struct gs_cube_params {
    double coef;                 /* the rule's d/dx x^3 = coef x^2 */
    int *grad_calls, *perform_calls;
    gr_var **og_seen;            /* the output gradient the rule was given */
} gs_cube_params;

static inline gr_status gs_cube_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gs_cube_params *p = (const gs_cube_params *)gr_node_params(node);
    int64_t i;
    if (p->perform_calls) (*p->perform_calls)++;
    for (i = 0; i < in[0]->size; i++) {
        double x = gr_array_get(in[0], i);
        gr_array_set(out[0], i, x * x * x);
    }
    return GR_OK;
}
static inline gr_status gs_cube_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gs_cube_params *p = (const gs_cube_params *)gr_node_params(node);
    gr_var *x = gr_node_input(node, 0);
    if (p->grad_calls) (*p->grad_calls)++;
    if (p->og_seen) *p->og_seen = og[0];
    ig[0] = gr_mul(og[0], gr_mul(gr_const(gr_var_graph(x), p->coef), gr_sqr(x)));
    return ig[0] ? GR_OK : gr_graph_status(gr_var_graph(x));
}
static const gr_op_def gs_op_cube = { .name = "Cube", .n_in = 1, .n_out = 1, .perform = gs_cube_perform, .grad = gs_cube_grad };

static inline gr_var *gs_cube(gr_var *x, double coef, int *grad_calls, int *perform_calls, gr_var **og_seen) {
    gs_cube_params p;
    gr_var *y = NULL;
    memset(&p, 0, sizeof p);
    p.coef = coef; p.grad_calls = grad_calls; p.perform_calls = perform_calls; p.og_seen = og_seen;
    if (gr_apply(&gs_op_cube, &p, sizeof p, 1, &x, &y) != GR_OK) return NULL;
    return y;
}

#endif
