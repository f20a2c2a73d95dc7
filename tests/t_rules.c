/* tests/t_rules.c: the rewrite rules the op table names (ops/table.h, src/rewrite.h).

   A structural row names a signature rule (`sig`) and a simplification rule (`simp`), `none` when
   it has none; the elementwise algebra is the rows of GR_ELEMWISE_REWRITES. A row without the
   columns, or naming a function nobody wrote, does not build. Here every rule the table names
   (other than `none`) has a case that shows it at work in what gr_function makes, and the values
   of both optimisation levels are checked against plain C:
     sig      two nodes whose shapes only the rule relates, on inputs of unknown shape, fuse into
              one pass (a fresh symbol would keep them apart), at two sizes;
     simp     the node the rule replaces is gone from the compiled function;
     rewrite  likewise for an elementwise pattern.
   test_rules_have_cases fails for a rule the table names without a case here, and for a case
   naming no rule of the table: a new rule cannot go untested. */
#include "harness.h"

/* ---- the table, as strings ------------------------------------------------------------------ */

typedef struct tr_row { const char *name, *sig, *simp; } tr_row;
#define TR_ROW(Name, nin, nout, rules, conn, alias, flags, batch, sig, simp) { #Name, #sig, #simp },
static const tr_row tr_rows[] = { GR_STRUCT_OPS(TR_ROW) { NULL, NULL, NULL } };
#undef TR_ROW

typedef struct tr_rewrite_row { const char *row, *rule; } tr_rewrite_row;
#define TR_REWRITE_ROW(row, rule) { #row, #rule },
static const tr_rewrite_row tr_rewrite_rows[] = { GR_ELEMWISE_REWRITES(TR_REWRITE_ROW) { NULL, NULL } };
#undef TR_REWRITE_ROW

/* ---- helpers ---------------------------------------------------------------------------------- */

/* deterministic values in [0.2, 1.2] (logs, square roots and quotients stay finite) */
static gr_array *tr_arr(int ndim, const int64_t *shape, double seed) {
    gr_array *a = gr_array_new(GR_F64, ndim, shape);
    int64_t k;
    for (k = 0; a && k < a->size; k++) gr_array_set(a, k, 0.7 + 0.5 * sin(1.7 * (double)k + seed));
    return a;
}

static void tr_print(gr_fn *f, char *buf, size_t size) {
    FILE *t = tmpfile();
    size_t n;
    buf[0] = 0;
    if (!t) return;
    gr_fn_print(t, f);
    rewind(t);
    n = fread(buf, 1, size - 1, t);
    buf[n] = 0;
    fclose(t);
}

/* occurrences of word in s */
static int tr_count(const char *s, const char *word) {
    int n = 0;
    for (s = strstr(s, word); s; s = strstr(s + 1, word)) n++;
    return n;
}

/* the printed function has one Fused node, running exactly the instructions ops ("{Exp Add}") */
static int tr_fused(const char *printed, const char *ops) {
    const char *b = strstr(printed, "= Fused(");
    size_t n = strlen(ops);
    return b && tr_count(printed, "= Fused(") == 1 && strchr(b, '{') && strncmp(strchr(b, '{'), ops, n) == 0 && strchr(b, '{')[n] == '\n';
}

/* y of ins compiled with and without the rewrites: both give want at the inputs in (relative
   tolerance tol); the optimised function is printed into buf. Returns its node count, -1 if a
   step failed. */
static long tr_check(const char *rule, int n_in, gr_var **ins, gr_var *y, gr_array *const *in, const gr_array *want, double tol,
                     char *buf, size_t size) {
    gr_fn_opts o;
    gr_fn *f[2];
    long count = -1;
    int lv, k;
    memset(&o, 0, sizeof o);
    buf[0] = 0;
    for (lv = 0; lv < 2; lv++) {
        o.optimize = lv ? GR_OPT_NONE : GR_OPT_FULL;
        f[lv] = y ? gr_function(n_in, ins, 1, &y, &o) : NULL;
        CHECK_MSG(f[lv] != NULL, "%s: gr_function failed: %s", rule, y ? gr_graph_message(gr_var_graph(y)) : "no graph");
    }
    if (f[0] && f[1]) {
        count = (long)gr_fn_node_count(f[0]);
        tr_print(f[0], buf, size);
        for (lv = 0; lv < 2; lv++) {
            const gr_array *out[1];
            gr_status st = gr_call(f[lv], (const gr_array *const *)in, out);
            CHECK_MSG(st == GR_OK, "%s: call at level %d: %s", rule, lv, gr_fn_message(f[lv]));
            if (st != GR_OK) { count = -1; continue; }
            CHECK_MSG(out[0]->size == want->size && out[0]->ndim == want->ndim, "%s: level %d gives %lld elements, want %lld", rule, lv,
                      (long long)out[0]->size, (long long)want->size);
            for (k = 0; k < want->ndim && k < out[0]->ndim; k++) CHECK_EQ_INT(out[0]->shape[k], want->shape[k]);
            for (k = 0; k < want->size && k < out[0]->size; k++) {
                double u = gr_array_get(out[0], k), w = gr_array_get(want, k);
                CHECK_MSG(fabs(u - w) <= tol * (fabs(w) > 1 ? fabs(w) : 1), "%s: level %d, element %d: %.17g, want %.17g", rule, lv, k, u, w);
            }
        }
    }
    gr_fn_free(f[0]);
    gr_fn_free(f[1]);
    return count;
}

#define TR_TOL 1e-12
#define TR_FREE2(a, b) do { gr_array_free(a); gr_array_free(b); } while (0)
#define TR_GET(a, i) gr_array_get((a), (i))

/* ---- signature rules: two nodes related only by the rule fuse (inputs of unknown shape) --------- */

/* exp(P1) + P2 of one input x (n), at n = 3 and 5: one Fused node {exp add}; want(x, i) the value */
typedef double (*tr_ref1)(const gr_array *x, int64_t n, int64_t i);
static void tr_sig_vec(const char *rule, gr_var *x, gr_var *y, int64_t n_out_less, tr_ref1 ref) {
    int64_t n;
    char buf[4096];
    for (n = 3; n <= 5; n += 2) {
        int64_t m = n - n_out_less, i;
        gr_array *a = tr_arr(1, &n, 0.3 * (double)n), *want = gr_array_new(GR_F64, 1, &m);
        for (i = 0; i < m; i++) gr_array_set(want, i, ref(a, n, i));
        tr_check(rule, 1, &x, y, &a, want, TR_TOL, buf, sizeof buf);
        CHECK_MSG(tr_fused(buf, "{Exp Add}"), "%s: not one pass:\n%s", rule, buf);
        TR_FREE2(a, want);
    }
}

static double tr_ref_softmax(const gr_array *x, int64_t n, int64_t i) {
    double s = 0;
    int64_t k;
    for (k = 0; k < n; k++) s += exp(TR_GET(x, k));
    return exp(exp(TR_GET(x, i)) / s) + TR_GET(x, i);
}
/* like0 (Softmax): exp(softmax(x)) + x */
static void tr_sig_like0(const char *rule) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    tr_sig_vec(rule, x, gr_add(gr_exp(gr_softmax(x, 0)), x), 0, tr_ref_softmax);
    gr_graph_free(g);
}

static double tr_ref_view(const gr_array *x, int64_t n, int64_t i) { (void)n; return exp(TR_GET(x, i + 1)) + TR_GET(x, i); }
/* view (Slice): exp(x[1:]) + x[:-1], both one shorter than x */
static void tr_sig_view(const char *rule) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    tr_sig_vec(rule, x, gr_add(gr_exp(gr_slice(x, 0, 1, GR_OPEN, 1)), gr_slice(x, 0, 0, -1, 1)), 1, tr_ref_view);
    gr_graph_free(g);
}

/* exp(P1) + P2 of X (m, n) and another input, at two sizes: one Fused node {exp add} */
static void tr_sig_mat(const char *rule, int which) {
    static const int64_t sizes[2][3] = { { 3, 4, 2 }, { 2, 5, 3 } };
    gr_graph *g = gr_graph_new();
    gr_var *X = gr_matrix(g, GR_F64, "X"), *v = gr_vector(g, GR_F64, "v"), *B = gr_matrix(g, GR_F64, "B"), *ins[2], *y = NULL;
    int s;
    char buf[4096];
    ins[0] = X;
    ins[1] = which == 3 ? B : v;
    switch (which) {
    case 0: y = gr_add(gr_exp(gr_reduce_like(X, v)), v); break;                                /* like1 */
    case 1: y = gr_add(gr_exp(gr_sum_axis(X, 1)), gr_max_axis(X, 1)); break;                   /* reduce */
    case 2: y = gr_add(gr_exp(gr_transpose(gr_sin(X))), gr_transpose(X)); break;               /* DimShuffle */
    default: y = gr_add(gr_exp(gr_dot(X, gr_sin(B))), gr_dot(X, B)); break;                    /* Dot */
    }
    for (s = 0; s < 2; s++) {
        int64_t m = sizes[s][0], n = sizes[s][1], p = sizes[s][2], sx[2], sb[2], sw[2], i, j, k;
        gr_array *in[2], *want;
        sx[0] = m; sx[1] = n;
        sb[0] = n; sb[1] = p;
        in[0] = tr_arr(2, sx, 0.1 * (double)s);
        in[1] = which == 3 ? tr_arr(2, sb, 0.7) : tr_arr(1, &n, 0.9);
        sw[0] = which == 2 ? n : m;
        sw[1] = which == 2 ? m : p;
        want = which == 0 ? gr_array_new(GR_F64, 1, &n) : which == 1 ? gr_array_new(GR_F64, 1, &m) : gr_array_new(GR_F64, 2, sw);
        if (which == 0)
            for (j = 0; j < n; j++) {
                double c = 0;
                for (i = 0; i < m; i++) c += TR_GET(in[0], i * n + j);
                gr_array_set(want, j, exp(c) + TR_GET(in[1], j));
            }
        else if (which == 1)
            for (i = 0; i < m; i++) {
                double c = 0, mx = -HUGE_VAL;
                for (j = 0; j < n; j++) { c += TR_GET(in[0], i * n + j); if (TR_GET(in[0], i * n + j) > mx) mx = TR_GET(in[0], i * n + j); }
                gr_array_set(want, i, exp(c) + mx);
            }
        else if (which == 2)
            for (i = 0; i < m; i++)
                for (j = 0; j < n; j++) gr_array_set(want, j * m + i, exp(sin(TR_GET(in[0], i * n + j))) + TR_GET(in[0], i * n + j));
        else
            for (i = 0; i < m; i++)
                for (j = 0; j < p; j++) {
                    double a = 0, b = 0;
                    for (k = 0; k < n; k++) {
                        a += TR_GET(in[0], i * n + k) * sin(TR_GET(in[1], k * p + j));
                        b += TR_GET(in[0], i * n + k) * TR_GET(in[1], k * p + j);
                    }
                    gr_array_set(want, i * p + j, exp(a) + b);
                }
        tr_check(rule, which == 1 || which == 2 ? 1 : 2, ins, y, in, want, TR_TOL, buf, sizeof buf);
        CHECK_MSG(tr_fused(buf, "{Exp Add}"), "%s: not one pass:\n%s", rule, buf);
        gr_array_free(in[0]); gr_array_free(in[1]); gr_array_free(want);
    }
    gr_graph_free(g);
}
static void tr_sig_like1(const char *rule) { tr_sig_mat(rule, 0); }        /* ReduceLike: exp(reduce_like(X, v)) + v */
static void tr_sig_reduce(const char *rule) { tr_sig_mat(rule, 1); }       /* exp(sum_1 X) + max_1 X */
static void tr_sig_dimshuffle(const char *rule) { tr_sig_mat(rule, 2); }   /* exp(sin(X)^T) + X^T */
static void tr_sig_dot(const char *rule) { tr_sig_mat(rule, 3); }          /* exp(X sin(B)) + X B */

/* the Hessian of Rosenbrock's function of x (n unknown) at n = 3 and 6: one Banded node of
   diagonals, nothing applied row by row (the banded rules, and the signatures they rest on) */
static void tr_rosen_hessian(const char *rule) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *H = NULL;
    gr_var *h = gr_slice(x, 0, 0, -1, 1), *t = gr_slice(x, 0, 1, GR_OPEN, 1);
    gr_var *f = gr_sum(gr_add(gr_mul(gr_const(g, 100), gr_sqr(gr_sub(t, gr_sqr(h)))), gr_sqr(gr_sub(gr_const(g, 1), h))));
    int64_t n;
    char buf[8192];
    CHECK_STATUS(gr_hessian(f, 1, &x, &H, NULL), GR_OK);
    for (n = 3; n <= 6; n += 3) {
        int64_t s[2], i;
        gr_array *a = tr_arr(1, &n, 0.2), *want;
        s[0] = n; s[1] = n;
        want = gr_array_new(GR_F64, 2, s);
        for (i = 0; i < n; i++) {
            double xi = TR_GET(a, i), d = 0;
            if (i < n - 1) d += 1200 * xi * xi - 400 * TR_GET(a, i + 1) + 2;
            if (i > 0) d += 200;
            gr_array_set(want, i * n + i, d);
            if (i < n - 1) { gr_array_set(want, i * n + i + 1, -400 * xi); gr_array_set(want, (i + 1) * n + i, -400 * xi); }
        }
        tr_check(rule, 1, &x, H, &a, want, 1e-10, buf, sizeof buf);
        CHECK_MSG(tr_count(buf, "= Banded(") == 1 && !strstr(buf, "Batched") && !strstr(buf, "EyeLike") && !strstr(buf, "= Add("),
                  "%s: not one banded matrix:\n%s", rule, buf);
        TR_FREE2(a, want);
    }
    gr_graph_free(g);
}

static double tr_ref_diff(const gr_array *x, int64_t n, int64_t i) { (void)n; return exp(TR_GET(x, i + 1) - TR_GET(x, i)) + TR_GET(x, i); }
/* Diff: exp(diff(x)) + x[:-1], both one shorter than x */
static void tr_sig_diff(const char *rule) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    tr_sig_vec(rule, x, gr_add(gr_exp(gr_diff(x, 0)), gr_slice(x, 0, 0, -1, 1)), 1, tr_ref_diff);
    gr_graph_free(g);
}

/* IfElse: a side of the shape both sides have: exp(ifelse(sum X > 0, sin X, X)) + X is one pass */
static void tr_sig_ifelse(const char *rule) {
    gr_graph *g = gr_graph_new();
    gr_var *X = gr_matrix(g, GR_F64, "X"), *a = gr_sin(X), *b = X, *y = NULL;
    int64_t s[2] = { 3, 4 }, i;
    gr_array *in = tr_arr(2, s, 0.3), *want = gr_array_new(GR_F64, 2, s);
    char buf[4096];
    CHECK_STATUS(gr_ifelse(gr_gt(gr_sum(X), gr_const(g, 0.0)), 1, &a, &b, &y), GR_OK);
    y = gr_add(gr_exp(y), X);
    for (i = 0; i < 12; i++) gr_array_set(want, i, exp(sin(TR_GET(in, i))) + TR_GET(in, i));   /* (the sum is positive) */
    tr_check(rule, 1, &X, y, &in, want, TR_TOL, buf, sizeof buf);
    CHECK_MSG(tr_fused(buf, "{Exp Add}"), "%s: not one pass:\n%s", rule, buf);
    TR_FREE2(in, want);
    gr_graph_free(g);
}

/* Join: [X; B] (m + p, n) keeps X's columns: exp(sum_0 [X; B]) + max_0 X is one pass, at two sizes */
static void tr_sig_join(const char *rule) {
    static const int64_t sizes[2][3] = { { 3, 4, 2 }, { 2, 5, 3 } };
    gr_graph *g = gr_graph_new();
    gr_var *X = gr_matrix(g, GR_F64, "X"), *B = gr_matrix(g, GR_F64, "B"), *ins[2], *y;
    int s;
    char buf[4096];
    ins[0] = X; ins[1] = B;
    y = gr_add(gr_exp(gr_sum_axis(gr_concatenate(2, ins, 0), 0)), gr_max_axis(X, 0));
    for (s = 0; s < 2; s++) {
        int64_t m = sizes[s][0], n = sizes[s][1], p = sizes[s][2], sx[2], sb[2], i, j;
        gr_array *in[2], *want = gr_array_new(GR_F64, 1, &n);
        sx[0] = m; sx[1] = n; sb[0] = p; sb[1] = n;
        in[0] = tr_arr(2, sx, 0.1 * (double)s);
        in[1] = tr_arr(2, sb, 0.7);
        for (j = 0; j < n; j++) {
            double c = 0, mx = -HUGE_VAL;
            for (i = 0; i < m; i++) { c += TR_GET(in[0], i * n + j); if (TR_GET(in[0], i * n + j) > mx) mx = TR_GET(in[0], i * n + j); }
            for (i = 0; i < p; i++) c += TR_GET(in[1], i * n + j);
            gr_array_set(want, j, exp(c) + mx);
        }
        tr_check(rule, 2, ins, y, in, want, TR_TOL, buf, sizeof buf);
        CHECK_MSG(tr_fused(buf, "{Exp Add}"), "%s: not one pass:\n%s", rule, buf);
        gr_array_free(in[0]); gr_array_free(in[1]); gr_array_free(want);
    }
    gr_graph_free(g);
}

static const struct { const char *rule; void (*run)(const char *rule); } tr_sig_cases[] = {
    { "like0", tr_sig_like0 }, { "like1", tr_sig_like1 }, { "reduce", tr_sig_reduce }, { "DimShuffle", tr_sig_dimshuffle },
    { "view", tr_sig_view }, { "Dot", tr_sig_dot }, { "Banded", tr_rosen_hessian }, { "Diff", tr_sig_diff },
    { "IfElse", tr_sig_ifelse }, { "Join", tr_sig_join }, { NULL, NULL }
};

/* ---- simplification and rewrite rules: the pattern is gone --------------------------------------- */

/* f(x) of a vector x (unknown length n = 4), compiled: values of both levels against want(x_i) (or
   against a full vector when want_all is given); buf receives the optimised function */
typedef double (*tr_ref_ew)(double x);
static long tr_vec_case(const char *rule, gr_var *x, gr_var *y, tr_ref_ew want_i, char *buf, size_t size) {
    int64_t n = 4, i;
    gr_array *a = tr_arr(1, &n, 0.4), *want = gr_array_new(GR_F64, 1, &n);
    long count;
    for (i = 0; i < n; i++) gr_array_set(want, i, want_i(TR_GET(a, i)));
    count = tr_check(rule, 1, &x, y, &a, want, TR_TOL, buf, size);
    TR_FREE2(a, want);
    return count;
}

static double tr_exp(double v) { return exp(v); }
static double tr_zero(double v) { (void)v; return 0.0; }
static double tr_negexp(double v) { return -exp(v); }
static double tr_identity(double v) { return v; }

/* Cast of zeros is zeros: cast(zeros_like(x32)) + cast(x32) is the cast alone */
static void tr_simp_cast(const char *rule) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F32, "x"), *y = gr_add(gr_cast(gr_zeros_like(x), GR_F64), gr_cast(x, GR_F64));
    int64_t n = 4, i;
    gr_array *a = gr_array_new(GR_F32, 1, &n), *want = gr_array_new(GR_F64, 1, &n);
    char buf[2048];
    for (i = 0; i < n; i++) { gr_array_set(a, i, 0.25 * (double)i - 0.3); gr_array_set(want, i, (double)(float)(0.25 * (double)i - 0.3)); }
    CHECK_MSG(tr_check(rule, 1, &x, y, &a, want, 0, buf, sizeof buf) == 1 && !strstr(buf, "Add") && !strstr(buf, "BroadcastLike"),
              "%s: zeros kept:\n%s", rule, buf);
    TR_FREE2(a, want);
    gr_graph_free(g);
}

/* A^T B for A, B (2, 3) (unknown shapes) against plain C; buf receives the optimised function */
static void tr_atb(const char *rule, gr_var *A, gr_var *B, gr_var *y, char *buf, size_t size) {
    int64_t s23[2] = { 2, 3 }, s33[2] = { 3, 3 }, i, j, k;
    gr_array *in[2], *want = gr_array_new(GR_F64, 2, s33);
    gr_var *ins[2];
    ins[0] = A; ins[1] = B;
    in[0] = tr_arr(2, s23, 0.1);
    in[1] = tr_arr(2, s23, 1.3);
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) {
            double c = 0;
            for (k = 0; k < 2; k++) c += TR_GET(in[0], k * 3 + i) * TR_GET(in[1], k * 3 + j);
            gr_array_set(want, i * 3 + j, c);
        }
    tr_check(rule, 2, ins, y, in, want, TR_TOL, buf, size);
    gr_array_free(in[0]); gr_array_free(in[1]); gr_array_free(want);
}

/* a DimShuffle of a DimShuffle is one (none here: they cancel); of zeros, zeros */
static void tr_simp_dimshuffle(const char *rule) {
    gr_graph *g = gr_graph_new();
    gr_var *A = gr_matrix(g, GR_F64, "A"), *B = gr_matrix(g, GR_F64, "B");
    char buf[2048];
    tr_atb(rule, A, B, gr_dot(gr_transpose(gr_transpose(gr_transpose(A))), B), buf, sizeof buf);
    CHECK_MSG(!strstr(buf, "DimShuffle") && tr_count(buf, "= ") == 1, "%s: transposes kept:\n%s", rule, buf);
    tr_atb(rule, A, B, gr_add(gr_dot(gr_transpose(A), B), gr_transpose(gr_transpose(gr_zeros_like(gr_dot(gr_transpose(A), B))))), buf,
           sizeof buf);
    CHECK_MSG(!strstr(buf, "Add") && !strstr(buf, "BroadcastLike"), "%s: zeros transposed kept:\n%s", rule, buf);
    gr_graph_free(g);
}

/* a Reshape of a Reshape is one */
static void tr_simp_reshape(const char *rule) {
    gr_graph *g = gr_graph_new();
    int64_t s23[2] = { 2, 3 }, s6 = 6, i;
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_exp(gr_reshape(gr_reshape(x, 2, s23), 1, &s6));
    gr_array *a = tr_arr(1, &s6, 0.5), *want = gr_array_new(GR_F64, 1, &s6);
    char buf[2048];
    for (i = 0; i < 6; i++) gr_array_set(want, i, exp(TR_GET(a, i)));
    tr_check(rule, 1, &x, y, &a, want, TR_TOL, buf, sizeof buf);
    CHECK_MSG(tr_count(buf, "Reshape(") == 1, "%s: two reshapes:\n%s", rule, buf);
    TR_FREE2(a, want);
    gr_graph_free(g);
}

/* BroadcastLike, ReduceLike, ReshapeLike of x already in ref's shape are x */
static void tr_simp_like(const char *rule, int which) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *e = gr_exp(x);
    gr_var *y = which == 0 ? gr_broadcast_like(e, x) : which == 1 ? gr_reduce_like(e, x) : gr_reshape_like(e, x);
    const char *name = which == 0 ? "BroadcastLike" : which == 1 ? "ReduceLike" : "ReshapeLike";
    char buf[2048];
    CHECK_MSG(tr_vec_case(rule, x, y, tr_exp, buf, sizeof buf) == 1 && !strstr(buf, name), "%s: kept:\n%s", rule, buf);
    /* and zeros stay zeros: x + zeros of v's shape brought to x's shape is x */
    {
        gr_var *z = gr_zeros_like(gr_mul(x, gr_const(g, 2)));
        y = gr_add(x, which == 0 ? gr_broadcast_like(z, x) : which == 1 ? gr_reduce_like(z, x) : gr_reshape_like(z, x));
        CHECK_MSG(tr_vec_case(rule, x, y, tr_identity, buf, sizeof buf) == 0, "%s: zeros kept:\n%s", rule, buf);
    }
    gr_graph_free(g);
}
static void tr_simp_broadcast_like(const char *rule) { tr_simp_like(rule, 0); }
static void tr_simp_reduce_like(const char *rule) { tr_simp_like(rule, 1); }
static void tr_simp_reshape_like(const char *rule) { tr_simp_like(rule, 2); }

/* Dot: a transposed operand is a flag; diag(d) v is d * v */
static void tr_simp_dot(const char *rule) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *J = NULL, *ins[2];
    int64_t n = 4, i;
    gr_array *in[2], *want = gr_array_new(GR_F64, 1, &n);
    char buf[2048];
    CHECK_STATUS(gr_jacobian(gr_sin(x), 1, &x, &J, NULL), GR_OK);
    ins[0] = x;
    ins[1] = gr_vector(g, GR_F64, "v");
    in[0] = tr_arr(1, &n, 0.1);
    in[1] = tr_arr(1, &n, 1.1);
    for (i = 0; i < n; i++) gr_array_set(want, i, cos(TR_GET(in[0], i)) * TR_GET(in[1], i));
    tr_check(rule, 2, ins, gr_dot(J, ins[1]), in, want, TR_TOL, buf, sizeof buf);
    CHECK_MSG(!strstr(buf, "Dot") && !strstr(buf, "Banded"), "%s: a diagonal matrix product:\n%s", rule, buf);
    /* A^T B: the transpose a flag of the product */
    {
        gr_var *A = gr_matrix(g, GR_F64, "A"), *B = gr_matrix(g, GR_F64, "B");
        tr_atb(rule, A, B, gr_dot(gr_transpose(A), B), buf, sizeof buf);
        CHECK_MSG(!strstr(buf, "DimShuffle") && tr_count(buf, "= ") == 1, "%s: a transpose copied:\n%s", rule, buf);
    }
    gr_array_free(in[0]); gr_array_free(in[1]); gr_array_free(want);
    gr_graph_free(g);
}

/* the Jacobian of sin(x): diag(cos x), from a Banded identity seed */
static void tr_jac_sin(const char *rule, double c) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *J = NULL;
    int64_t n = 4, s[2] = { 4, 4 }, i;
    gr_array *a = tr_arr(1, &n, 0.6), *want = gr_array_new(GR_F64, 2, s);
    char buf[2048];
    CHECK_STATUS(gr_jacobian(c == 1 ? gr_sin(x) : gr_mul(gr_const(g, c), gr_sin(x)), 1, &x, &J, NULL), GR_OK);
    for (i = 0; i < n; i++) gr_array_set(want, i * n + i, c * cos(TR_GET(a, i)));
    CHECK_MSG(tr_check(rule, 1, &x, J, &a, want, TR_TOL, buf, sizeof buf) == 2 && tr_count(buf, "= Banded(") == 1 && !strstr(buf, "EyeLike"),
              "%s: not one banded matrix:\n%s", rule, buf);
    TR_FREE2(a, want);
    gr_graph_free(g);
}
static void tr_simp_eyelike(const char *rule) { tr_jac_sin(rule, 1); }
static void tr_rw_banded_scale(const char *rule) { tr_jac_sin(rule, 2); }

/* Batched: rows of Rosenbrock's Hessian placed at slices, and a vector operand of Dot batched */
static void tr_simp_batched(const char *rule) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *A = gr_matrix(g, GR_F64, "A"), *J = NULL, *ins[2];
    int64_t n = 3, sa[2] = { 2, 3 }, i, j;
    gr_array *in[2], *want = gr_array_new(GR_F64, 2, sa);
    char buf[4096];
    tr_rosen_hessian(rule);
    CHECK_STATUS(gr_jacobian(gr_dot(A, gr_tanh(x)), 1, &x, &J, NULL), GR_OK);
    ins[0] = x; ins[1] = A;
    in[0] = tr_arr(1, &n, 0.3);
    in[1] = tr_arr(2, sa, 0.8);
    for (i = 0; i < 2; i++)
        for (j = 0; j < 3; j++) gr_array_set(want, i * 3 + j, TR_GET(in[1], i * 3 + j) * (1 - tanh(TR_GET(in[0], j)) * tanh(TR_GET(in[0], j))));
    tr_check(rule, 2, ins, J, in, want, TR_TOL, buf, sizeof buf);
    CHECK_MSG(!strstr(buf, "Batched[Dot]"), "%s: a matrix product row by row:\n%s", rule, buf);
    gr_array_free(in[0]); gr_array_free(in[1]); gr_array_free(want);
    gr_graph_free(g);
}

/* IfElse: conditionals nested on one condition become one, a constant condition leaves its side:
   ifelse(c, ifelse(c, exp x, sin x), ifelse(c, cos x, x)) * ifelse(1, 1, x) -> ifelse(c, exp x, x) */
static void tr_simp_ifelse(const char *rule) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *c = gr_gt(gr_sum(x), gr_const(g, 0.0)), *a[3], *b[3], *o[3] = { NULL, NULL, NULL }, *y;
    char buf[4096];
    a[0] = gr_exp(x); b[0] = gr_sin(x);
    a[1] = gr_cos(x); b[1] = x;
    CHECK_STATUS(gr_ifelse(c, 2, a, b, o), GR_OK);
    a[2] = gr_const(g, 1.0); b[2] = gr_sum(x);
    CHECK_STATUS(gr_ifelse(gr_const(g, 1.0), 1, a + 2, b + 2, o + 2), GR_OK);
    CHECK_STATUS(gr_ifelse(c, 1, o, o + 1, &y), GR_OK);
    y = gr_mul(y, o[2]);
    CHECK_MSG(tr_vec_case(rule, x, y, tr_exp, buf, sizeof buf) >= 1 && !strstr(buf, "Sin") && !strstr(buf, "Cos") && !strstr(buf, "Mul"),
              "%s: not simplified:\n%s", rule, buf);
    gr_graph_free(g);
}

static const struct { const char *rule; void (*run)(const char *rule); } tr_simp_cases[] = {
    { "Cast", tr_simp_cast }, { "DimShuffle", tr_simp_dimshuffle }, { "Reshape", tr_simp_reshape },
    { "BroadcastLike", tr_simp_broadcast_like }, { "ReduceLike", tr_simp_reduce_like }, { "ReshapeLike", tr_simp_reshape_like },
    { "Dot", tr_simp_dot }, { "EyeLike", tr_simp_eyelike }, { "Batched", tr_simp_batched }, { "Slice", tr_rosen_hessian },
    { "IfElse", tr_simp_ifelse }, { NULL, NULL }
};

/* ---- the elementwise rewrite rows ---------------------------------------------------------------- */

/* y of x (a vector) has no node printed as `gone` (NULL: any) and `nodes` nodes, values want(x_i) */
static void tr_gone(const char *rule, gr_var *x, gr_var *y, tr_ref_ew want, long nodes, const char *gone, const char *fused) {
    char buf[2048];
    long count = tr_vec_case(rule, x, y, want, buf, sizeof buf);
    CHECK_MSG(count == nodes && (!gone || !strstr(buf, gone)) && (!fused || tr_fused(buf, fused)), "%s: %ld nodes, want %ld%s%s:\n%s", rule,
              count, nodes, gone ? " without " : "", gone ? gone : "", buf);
}

/* x + (zeros with y added at a slice): y added into x in place */
static void tr_rw_update_into(const char *rule) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    gr_var *gx = gr_grad1(gr_add(gr_sum(gr_sin(gr_slice(x, 0, 1, GR_OPEN, 1))), gr_sum(gr_sqr(x))), x);
    int64_t n = 4, i;
    gr_array *a = tr_arr(1, &n, 0.9), *want = gr_array_new(GR_F64, 1, &n);
    char buf[2048];
    for (i = 0; i < n; i++) gr_array_set(want, i, 2 * TR_GET(a, i) + (i > 0 ? cos(TR_GET(a, i)) : 0));
    tr_check(rule, 1, &x, gx, &a, want, TR_TOL, buf, sizeof buf);
    CHECK_MSG(!strstr(buf, "Add") && !strstr(buf, "BroadcastLike(0") && tr_count(buf, "ViewUpdate") == 1, "%s: zeros updated, then added:\n%s", rule, buf);
    TR_FREE2(a, want);
    gr_graph_free(g);
}

static double tr_expm1(double v) { return expm1(v); }
static double tr_6exp(double v) { return 6 * exp(v); }
static double tr_m2exp(double v) { return -2 * exp(v); }
static double tr_exp2x(double v) { return exp(2 * v); }
static double tr_log1p_sqr(double v) { return log1p(v * v); }
static double tr_log_sigmoid(double v) { return -log1p(exp(-v)); }

static void tr_rw_algebra(const char *rule) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *e = gr_exp(x), *z = gr_zeros_like(x);
    gr_var *c0 = gr_const(g, 0), *c1 = gr_const(g, 1), *c2 = gr_const(g, 2), *c3 = gr_const(g, 3);
    if (!strcmp(rule, "add_zero")) {
        tr_gone(rule, x, gr_sub(gr_add(e, c0), c0), tr_exp, 1, NULL, NULL);
        tr_gone(rule, x, gr_add(z, e), tr_exp, 1, NULL, NULL);
        tr_gone(rule, x, gr_sub(c0, e), tr_negexp, 1, "Sub", "{Exp Neg}");
    } else if (!strcmp(rule, "expm1")) tr_gone(rule, x, gr_sub(e, c1), tr_expm1, 1, "Sub", NULL);
    else if (!strcmp(rule, "mul_one")) {
        tr_gone(rule, x, gr_mul(c1, gr_mul(e, c1)), tr_exp, 1, NULL, NULL);
        tr_gone(rule, x, gr_mul(e, gr_const(g, -1)), tr_negexp, 1, "Mul", "{Exp Neg}");
    } else if (!strcmp(rule, "mul_zero")) tr_gone(rule, x, gr_mul(e, z), tr_zero, 1, "Exp", NULL);
    else if (!strcmp(rule, "mul_consts")) {
        tr_gone(rule, x, gr_mul(c2, gr_mul(c3, e)), tr_6exp, 1, NULL, "{Exp Mul}");
        tr_gone(rule, x, gr_mul(gr_neg(e), c2), tr_m2exp, 1, NULL, "{Exp Mul}");
    } else if (!strcmp(rule, "div_one")) tr_gone(rule, x, gr_div(e, c1), tr_exp, 1, "Div", NULL);
    else if (!strcmp(rule, "zero_div")) tr_gone(rule, x, gr_div(z, e), tr_zero, 1, "Exp", NULL);
    else if (!strcmp(rule, "neg_neg")) tr_gone(rule, x, gr_neg(gr_neg(e)), tr_exp, 1, "Neg", NULL);
    else if (!strcmp(rule, "neg_zero")) tr_gone(rule, x, gr_add(e, gr_neg(z)), tr_exp, 1, "Neg", NULL);
    else if (!strcmp(rule, "neg_consts")) tr_gone(rule, x, gr_neg(gr_mul(c2, e)), tr_m2exp, 1, "Neg", "{Exp Mul}");
    else if (!strcmp(rule, "pow_small")) {
        tr_gone(rule, x, gr_pow(e, c1), tr_exp, 1, "Pow", NULL);
        tr_gone(rule, x, gr_pow(e, c2), tr_exp2x, 1, "Pow", "{Exp Sqr}");
    } else if (!strcmp(rule, "log1p")) tr_gone(rule, x, gr_log(gr_add(c1, gr_sqr(x))), tr_log1p_sqr, 1, "Log(", "{Sqr Log1p}");
    else if (!strcmp(rule, "log_sigmoid")) tr_gone(rule, x, gr_log(gr_sigmoid(x)), tr_log_sigmoid, 1, "Sigmoid", NULL);
    else CHECK_MSG(0, "%s: no algebra case", rule);
    gr_graph_free(g);
}

/* log(softmax(x)) is LogSoftmax */
static void tr_rw_log_softmax(const char *rule) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    int64_t n = 4, i;
    gr_array *a = tr_arr(1, &n, 0.2), *want = gr_array_new(GR_F64, 1, &n);
    double s = 0;
    char buf[2048];
    for (i = 0; i < n; i++) s += exp(TR_GET(a, i));
    for (i = 0; i < n; i++) gr_array_set(want, i, TR_GET(a, i) - log(s));
    CHECK_MSG(tr_check(rule, 1, &x, gr_log(gr_softmax(x, 0)), &a, want, TR_TOL, buf, sizeof buf) == 1 && strstr(buf, "LogSoftmax"),
              "%s: not LogSoftmax:\n%s", rule, buf);
    TR_FREE2(a, want);
    gr_graph_free(g);
}

/* sum_k A[k] B[k]^T over the K rows of A (K x m) and B (K x n), at three sizes: with K >= 3 one
   Join of each side and one matrix product; with K = 2 one elementwise pass; with K = 131 two
   products (128 terms and 3) added. Outer products of vectors of unrelated lengths are left as
   they are (one may broadcast: lengths 3, 3 and 1) */
static void tr_rw_outer_sum(const char *rule) {
    static const int64_t sizes[3][3] = { { 4, 3, 5 }, { 2, 4, 2 }, { 131, 2, 3 } };
    static char buf[65536];
    int s;
    for (s = 0; s < 3; s++) {
        gr_graph *g = gr_graph_new();
        gr_var *A = gr_matrix(g, GR_F64, "A"), *B = gr_matrix(g, GR_F64, "B"), *ins[2], *y = NULL;
        int64_t K = sizes[s][0], m = sizes[s][1], n = sizes[s][2], sa[2], sb[2], sw[2], i, j, k;
        gr_array *in[2], *want;
        ins[0] = A; ins[1] = B;
        for (k = 0; k < K; k++) {
            gr_var *t = gr_outer(gr_index(A, 0, k), gr_index(B, 0, k));
            y = y ? gr_add(y, t) : t;
        }
        sa[0] = K; sa[1] = m; sb[0] = K; sb[1] = n; sw[0] = m; sw[1] = n;
        in[0] = tr_arr(2, sa, 0.3);
        in[1] = tr_arr(2, sb, 1.1);
        want = gr_array_new(GR_F64, 2, sw);
        for (i = 0; i < m; i++)
            for (j = 0; j < n; j++) {
                double c = 0;
                for (k = 0; k < K; k++) c += TR_GET(in[0], k * m + i) * TR_GET(in[1], k * n + j);
                gr_array_set(want, i * n + j, c);
            }
        tr_check(rule, 2, ins, y, in, want, TR_TOL, buf, sizeof buf);
        if (K > 128)
            CHECK_MSG(tr_count(buf, "= Dot(") == 2 && tr_count(buf, "= Join(") == 4 && !strstr(buf, "Mul") && tr_count(buf, "= Add(") == 1,
                      "%s: not two products added:\n%s", rule, buf);
        else if (K >= 3)
            CHECK_MSG(tr_count(buf, "= Dot(") == 1 && tr_count(buf, "= Join(") == 2 && !strstr(buf, "Mul") && !strstr(buf, "Add"),
                      "%s: not one product of joined rows:\n%s", rule, buf);
        else
            CHECK_MSG(!strstr(buf, "Dot") && !strstr(buf, "Join") && tr_fused(buf, "{Mul MulAdd}"), "%s: two terms not one pass:\n%s", rule, buf);
        gr_array_free(in[0]); gr_array_free(in[1]); gr_array_free(want);
        gr_graph_free(g);
    }
    {
        gr_graph *g = gr_graph_new();
        gr_var *u[3], *v = gr_vector(g, GR_F64, "v"), *ins[4], *y = NULL;
        int64_t lens[3] = { 3, 3, 1 }, n = 2, sw[2] = { 3, 2 }, i, j, k;
        gr_array *in[4], *want = gr_array_new(GR_F64, 2, sw);
        for (k = 0; k < 3; k++) {
            ins[k] = u[k] = gr_vector(g, GR_F64, NULL);
            in[k] = tr_arr(1, &lens[k], 0.2 * (double)k);
            y = y ? gr_add(y, gr_outer(u[k], v)) : gr_outer(u[k], v);
        }
        ins[3] = v;
        in[3] = tr_arr(1, &n, 0.5);
        for (i = 0; i < 3; i++)
            for (j = 0; j < n; j++) {
                double c = 0;
                for (k = 0; k < 3; k++) c += TR_GET(in[k], lens[k] == 1 ? 0 : i) * TR_GET(in[3], j);
                gr_array_set(want, i * n + j, c);
            }
        tr_check(rule, 4, ins, y, in, want, TR_TOL, buf, sizeof buf);
        CHECK_MSG(!strstr(buf, "Join"), "%s: rows of unrelated lengths joined:\n%s", rule, buf);
        for (k = 0; k < 4; k++) gr_array_free(in[k]);
        gr_array_free(want);
        gr_graph_free(g);
    }
}

/* the cost sum(h_T) of h_t = tanh(W h_{t-1} + U x_t), h_0 = 0 (W 3 x 3, U 3 x 2, x_t row t of X) */
enum { TR_H = 3, TR_I = 2, TR_T = 5 };
static double tr_rnn_cost(const double *W, const double *U, const double *X) {
    double h[TR_H] = { 0 }, z[TR_H], c = 0;
    int t, i, j;
    for (t = 0; t < TR_T; t++) {
        for (i = 0; i < TR_H; i++) {
            z[i] = 0;
            for (j = 0; j < TR_H; j++) z[i] += W[i * TR_H + j] * h[j];
            for (j = 0; j < TR_I; j++) z[i] += U[i * TR_I + j] * X[t * TR_I + j];
        }
        for (i = 0; i < TR_H; i++) h[i] = tanh(z[i]);
    }
    for (i = 0; i < TR_H; i++) c += h[i];
    return c;
}

/* the unrolled RNN's gradient wrt W: its T outer products dz_t h_{t-1}^T are one product of joined
   rows (h_t's length is W's columns because W h_t is computed: the rule finds that Dot), but for
   dz_1 h_0^T (h_0 a constant of static length: one pass), equal to central differences of the
   plain-C cost; likewise wrt U (x_t rows of X), no term left over */
static void tr_rw_outer_rnn(const char *rule) {
    gr_graph *g = gr_graph_new();
    int64_t sw[2] = { TR_H, TR_H }, su[2] = { TR_H, TR_I }, sx[2] = { TR_T, TR_I }, hs = TR_H;
    gr_array *h0 = gr_array_new(GR_F64, 1, &hs), *in[3], *want[2];
    gr_var *W = gr_matrix(g, GR_F64, "W"), *U = gr_matrix(g, GR_F64, "U"), *X = gr_matrix(g, GR_F64, "X"), *h = gr_constant(g, h0);
    gr_var *ins[3], *grads[2] = { NULL, NULL };
    char buf[65536];
    int t, w, k;
    for (t = 0; t < TR_T; t++) h = gr_tanh(gr_add(gr_dot(W, h), gr_dot(U, gr_index(X, 0, t))));
    ins[0] = W; ins[1] = U; ins[2] = X;
    CHECK_STATUS(gr_grad(gr_sum(h), 2, ins, grads, NULL), GR_OK);
    in[0] = tr_arr(2, sw, 0.4); in[1] = tr_arr(2, su, 1.3); in[2] = tr_arr(2, sx, 2.1);
    for (k = 0; k < 9; k++) gr_array_set(in[0], k, 0.6 * TR_GET(in[0], k) - 0.4);   /* signs mixed, tanh not saturated */
    want[0] = gr_array_new(GR_F64, 2, sw); want[1] = gr_array_new(GR_F64, 2, su);
    for (w = 0; w < 2; w++)
        for (k = 0; k < want[w]->size; k++) {              /* central differences, step 1e-5: error ~1e-10 */
            double *p = (double *)in[w]->data + k, x0 = *p, fp, fm;
            *p = x0 + 1e-5; fp = tr_rnn_cost((const double *)in[0]->data, (const double *)in[1]->data, (const double *)in[2]->data);
            *p = x0 - 1e-5; fm = tr_rnn_cost((const double *)in[0]->data, (const double *)in[1]->data, (const double *)in[2]->data);
            *p = x0;
            gr_array_set(want[w], k, (fp - fm) / 2e-5);
        }
    for (w = 0; w < 2; w++) {
        tr_check(rule, 3, ins, grads[w], in, want[w], 1e-8, buf, sizeof buf);
        CHECK_MSG(tr_count(buf, "= Join(") == 2 && !strstr(buf, "= Add(") && tr_count(buf, "MulAdd") == (w == 0), "%s: gradient %d not one product:\n%s",
                  rule, w, buf);
    }
    for (k = 0; k < 3; k++) gr_array_free(in[k]);
    TR_FREE2(want[0], want[1]);
    gr_array_free(h0);
    gr_graph_free(g);
}
static void tr_rw_outer(const char *rule) { tr_rw_outer_sum(rule); tr_rw_outer_rnn(rule); }

static const struct { const char *rule; void (*run)(const char *rule); } tr_rewrite_cases[] = {
    { "banded_sum", tr_rosen_hessian }, { "banded_scale", tr_rw_banded_scale }, { "update_into", tr_rw_update_into },
    { "add_zero", tr_rw_algebra }, { "expm1", tr_rw_algebra }, { "mul_one", tr_rw_algebra }, { "mul_zero", tr_rw_algebra },
    { "mul_consts", tr_rw_algebra }, { "div_one", tr_rw_algebra }, { "zero_div", tr_rw_algebra }, { "neg_neg", tr_rw_algebra },
    { "neg_zero", tr_rw_algebra }, { "neg_consts", tr_rw_algebra }, { "pow_small", tr_rw_algebra }, { "log1p", tr_rw_algebra },
    { "log_sigmoid", tr_rw_algebra }, { "log_softmax", tr_rw_log_softmax }, { "outer_sum", tr_rw_outer }, { NULL, NULL }
};

/* ---- the tests -------------------------------------------------------------------------------------- */

TEST(test_rules_sig) {
    int k;
    for (k = 0; tr_sig_cases[k].rule; k++) tr_sig_cases[k].run(tr_sig_cases[k].rule);
}
TEST(test_rules_simp) {
    int k;
    for (k = 0; tr_simp_cases[k].rule; k++) tr_simp_cases[k].run(tr_simp_cases[k].rule);
}
TEST(test_rules_rewrite) {
    int k;
    for (k = 0; tr_rewrite_cases[k].rule; k++) tr_rewrite_cases[k].run(tr_rewrite_cases[k].rule);
}

/* every rule the table names has a case above, and every case names a rule of the table */
TEST(test_rules_have_cases) {
    int r, k, found;
    for (r = 0; tr_rows[r].name; r++) {
        if (strcmp(tr_rows[r].sig, "none") != 0) {
            for (found = 0, k = 0; tr_sig_cases[k].rule; k++) found |= !strcmp(tr_sig_cases[k].rule, tr_rows[r].sig);
            CHECK_MSG(found, "row %s: its signature rule %s has no case in tests/t_rules.c", tr_rows[r].name, tr_rows[r].sig);
        }
        if (strcmp(tr_rows[r].simp, "none") != 0) {
            for (found = 0, k = 0; tr_simp_cases[k].rule; k++) found |= !strcmp(tr_simp_cases[k].rule, tr_rows[r].simp);
            CHECK_MSG(found, "row %s: its simplification rule %s has no case in tests/t_rules.c", tr_rows[r].name, tr_rows[r].simp);
        }
    }
    for (r = 0; tr_rewrite_rows[r].rule; r++) {
        for (found = 0, k = 0; tr_rewrite_cases[k].rule; k++) found |= !strcmp(tr_rewrite_cases[k].rule, tr_rewrite_rows[r].rule);
        CHECK_MSG(found, "rewrite row (%s, %s) has no case in tests/t_rules.c", tr_rewrite_rows[r].row, tr_rewrite_rows[r].rule);
    }
    for (k = 0; tr_sig_cases[k].rule; k++) {
        for (found = 0, r = 0; tr_rows[r].name; r++) found |= !strcmp(tr_sig_cases[k].rule, tr_rows[r].sig);
        CHECK_MSG(found, "signature case %s names no rule of GR_STRUCT_OPS", tr_sig_cases[k].rule);
    }
    for (k = 0; tr_simp_cases[k].rule; k++) {
        for (found = 0, r = 0; tr_rows[r].name; r++) found |= !strcmp(tr_simp_cases[k].rule, tr_rows[r].simp);
        CHECK_MSG(found, "simplification case %s names no rule of GR_STRUCT_OPS", tr_simp_cases[k].rule);
    }
    for (k = 0; tr_rewrite_cases[k].rule; k++) {
        for (found = 0, r = 0; tr_rewrite_rows[r].rule; r++) found |= !strcmp(tr_rewrite_cases[k].rule, tr_rewrite_rows[r].rule);
        CHECK_MSG(found, "rewrite case %s names no row of GR_ELEMWISE_REWRITES", tr_rewrite_cases[k].rule);
    }
}

SUITE(suite_rules) = { CASE(test_rules_have_cases), CASE(test_rules_sig), CASE(test_rules_simp), CASE(test_rules_rewrite), END_SUITE };
