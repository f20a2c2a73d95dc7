/* tests/forward.c: the helpers of tests/forward.h, shared by the op tests (tests/ops_*.c) and the
   drivers' tests: pseudo-random inputs, plain-C expectations checked under both optimize levels,
   and comparisons that count as checks. */
#include "forward.h"

/* ==== inputs and expectations ==================================================================== */

uint64_t gtf_next(gtf_rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

double gtf_uniform(gtf_rng *r, double lo, double hi) {
    double u = (double)(gtf_next(r) >> 11) * (1.0 / 9007199254740992.0);
    return lo + (hi - lo) * u;
}

int64_t gtf_int(gtf_rng *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)(gtf_next(r) % (uint64_t)(hi - lo + 1));
}

gr_array *gtf_random(gtf_rng *r, gr_dtype dt, int ndim, const int64_t *shape, double lo, double hi) {
    gr_array *a = gr_array_new(dt, ndim, shape);
    int64_t k;
    if (!a) return NULL;
    for (k = 0; k < a->size; k++) {
        switch (dt) {
        case GR_F64: ((double *)a->data)[k] = gtf_uniform(r, lo, hi); break;
        case GR_F32: ((float *)a->data)[k] = (float)gtf_uniform(r, lo, hi); break;
        case GR_I64: ((int64_t *)a->data)[k] = gtf_int(r, (int64_t)lo, (int64_t)hi); break;
        default: ((uint8_t *)a->data)[k] = (uint8_t)(gtf_next(r) & 1u); break;
        }
    }
    return a;
}

gr_var *gtf_input(gr_graph *g, gr_dtype dt, int ndim, const int64_t *shape, int dynamic, const char *name) {
    if (!dynamic) return gr_tensor(g, dt, ndim, shape, name);
    switch (ndim) {
    case 0: return gr_scalar(g, dt, name);
    case 1: return gr_vector(g, dt, name);
    case 2: return gr_matrix(g, dt, name);
    default: return gr_tensor(g, dt, ndim, NULL, name);
    }
}

int64_t gtf_bcast_index(int64_t flat, int ondim, const int64_t *oshape, int ndim, const int64_t *shape) {
    int64_t idx = 0, stride = 1;
    int i;
    for (i = ondim - 1; i >= 0; i--) {
        int64_t oi = flat % oshape[i];
        int j = i - (ondim - ndim);
        flat /= oshape[i];
        if (j < 0) continue;
        if (shape[j] != 1) idx += oi * stride;
        stride *= shape[j];
    }
    return idx;
}

double gtf_wantf(const gr_array *want, int64_t k) {
    return want->dtype == GR_I64 ? (double)((const int64_t *)want->data)[k] : ((const double *)want->data)[k];
}

static int64_t gtf_got_int(const gr_array *a, int64_t k) {
    if (a->dtype == GR_I64) return ((const int64_t *)a->data)[k];
    if (a->dtype == GR_BOOL) return ((const uint8_t *)a->data)[k];
    return (int64_t)gr_array_get(a, k);
}

const char *gtf_shape_str(char *buf, size_t n, int ndim, const int64_t *shape) {
    size_t used = (size_t)snprintf(buf, n, "(");
    int i;
    for (i = 0; i < ndim && used < n; i++) used += (size_t)snprintf(buf + used, n - used, "%s%lld", i ? "," : "", (long long)shape[i]);
    if (used < n) snprintf(buf + used, n - used, ")");
    return buf;
}

int gtf_same(const gr_array *got, gr_dtype dtype, const gr_array *want, double tol, const char *label) {
    char s1[96], s2[96];
    int64_t k;
    int i;
    gt.checks++;
    if (!got) { gt_fail(__FILE__, __LINE__, "%s: no result", label); return 0; }
    if (got->dtype != dtype) {
        gt_fail(__FILE__, __LINE__, "%s: result dtype %s, want %s", label, gr_dtype_name(got->dtype), gr_dtype_name(dtype));
        return 0;
    }
    if (got->ndim != want->ndim || got->size != want->size) {
        gt_fail(__FILE__, __LINE__, "%s: result shape %s, want %s", label, gtf_shape_str(s1, sizeof s1, got->ndim, got->shape),
                gtf_shape_str(s2, sizeof s2, want->ndim, want->shape));
        return 0;
    }
    for (i = 0; i < got->ndim; i++)
        if (got->shape[i] != want->shape[i]) {
            gt_fail(__FILE__, __LINE__, "%s: result shape %s, want %s", label, gtf_shape_str(s1, sizeof s1, got->ndim, got->shape),
                    gtf_shape_str(s2, sizeof s2, want->ndim, want->shape));
            return 0;
        }
    for (k = 0; k < got->size; k++) {
        if (want->dtype == GR_I64) {
            int64_t w = ((const int64_t *)want->data)[k], v;
            if (got->dtype != GR_I64 && got->dtype != GR_BOOL) {
                gt_fail(__FILE__, __LINE__, "%s: an integer result was wanted, got %s", label, gr_dtype_name(got->dtype));
                return 0;
            }
            v = gtf_got_int(got, k);
            if (v != w) {
                gt_fail(__FILE__, __LINE__, "%s: element %lld is %lld, want %lld", label, (long long)k, (long long)v, (long long)w);
                return 0;
            }
        } else {
            double w = ((const double *)want->data)[k], v = gr_array_get(got, k);
            int ok;
            if (tol == 0 && got->dtype == GR_F32) w = (double)(float)w;
            if (v != v || w != w) ok = v != v && w != w;
            else if (v == w) ok = 1;
            else ok = tol > 0 && fabs(v - w) <= tol * (fabs(w) > 1 ? fabs(w) : 1.0);
            if (!ok) {
                gt_fail(__FILE__, __LINE__, "%s: element %lld is %.17g, want %.17g (tol %g)", label, (long long)k, v, w, tol);
                return 0;
            }
        }
    }
    return 1;
}

int gtf_expect(gr_graph *g, int n, gr_var *const *ins, const gr_array *const *arrays, gr_var *out, gr_dtype dtype,
               const gr_array *want, double tol, const char *label) {
    int level, ok = 1;
    gr_type t;
    gt.checks++;                         /* the static type; gtf_same counts each level's values */
    if (!out) {
        gt_fail(__FILE__, __LINE__, "%s: building failed: %s", label, gr_graph_message(g));
        return 0;
    }
    if (gr_var_dtype(out) != dtype) {
        gt_fail(__FILE__, __LINE__, "%s: static dtype %s, want %s", label, gr_dtype_name(gr_var_dtype(out)), gr_dtype_name(dtype));
        ok = 0;
    }
    if (gr_var_ndim(out) != want->ndim) {
        gt_fail(__FILE__, __LINE__, "%s: static ndim %d, want %d", label, gr_var_ndim(out), want->ndim);
        return 0;
    }
    if (gr_var_type(out, &t)) {          /* what the static shape knows must be true */
        int i;
        for (i = 0; i < t.ndim; i++)
            if (t.shape[i] >= 0 && t.shape[i] != want->shape[i]) {
                gt_fail(__FILE__, __LINE__, "%s: static dimension %d is %lld, the result has %lld", label, i,
                        (long long)t.shape[i], (long long)want->shape[i]);
                ok = 0;
            }
    }
    for (level = 0; level < 2; level++) {
        gr_fn_opts o;
        gr_fn *f;
        const gr_array *res[1];
        char lbl[256];
        gr_status st;
        memset(&o, 0, sizeof o);
        o.optimize = level ? GR_OPT_NONE : GR_OPT_FULL;
        snprintf(lbl, sizeof lbl, "%s [%s]", label, level ? "GR_OPT_NONE" : "GR_OPT_FULL");
        f = gr_function(n, ins, 1, &out, &o);
        if (!f) {
            gt_fail(__FILE__, __LINE__, "%s: gr_function failed: %s", lbl, gr_graph_message(g));
            ok = 0;
            continue;
        }
        res[0] = NULL;
        st = gr_call(f, arrays, res);
        if (st != GR_OK) {
            gt_fail(__FILE__, __LINE__, "%s: gr_call failed (%s): %s", lbl, gr_status_string(st), gr_fn_message(f));
            ok = 0;
        } else if (!gtf_same(res[0], dtype, want, tol, lbl))
            ok = 0;
        gr_fn_free(f);
    }
    return ok;
}

int gtf_expect_call_error(gr_graph *g, int n, gr_var *const *ins, const gr_array *const *arrays, gr_var *out,
                          gr_status code, const char *label) {
    int level, ok = 1;
    if (!out) {
        gt_fail(__FILE__, __LINE__, "%s: building failed: %s", label, gr_graph_message(g));
        return 0;
    }
    for (level = 0; level < 2; level++) {
        gr_fn_opts o;
        gr_fn *f;
        const gr_array *res[1];
        gr_status st;
        memset(&o, 0, sizeof o);
        o.optimize = level ? GR_OPT_NONE : GR_OPT_FULL;
        f = gr_function(n, ins, 1, &out, &o);
        gt.checks++;
        if (!f) {
            gt_fail(__FILE__, __LINE__, "%s: gr_function failed: %s", label, gr_graph_message(g));
            ok = 0;
            continue;
        }
        st = gr_call(f, arrays, res);
        if (st != code) {
            gt_fail(__FILE__, __LINE__, "%s [%s]: gr_call gave %s, want %s", label, level ? "GR_OPT_NONE" : "GR_OPT_FULL",
                    gr_status_string(st), gr_status_string(code));
            ok = 0;
        } else if (!gr_fn_message(f)[0]) {
            gt_fail(__FILE__, __LINE__, "%s: the failed call left no message", label);
            ok = 0;
        }
        gr_fn_free(f);
    }
    return ok;
}

int gtf_static_shape_is(const gr_var *v, int ndim, const int64_t *shape, const char *label) {
    gr_type t;
    int i;
    gt.checks++;
    if (!gr_var_type(v, &t)) { gt_fail(__FILE__, __LINE__, "%s: no variable", label); return 0; }
    if (t.ndim != ndim) { gt_fail(__FILE__, __LINE__, "%s: static ndim %d, want %d", label, t.ndim, ndim); return 0; }
    for (i = 0; i < ndim; i++)
        if (t.shape[i] != shape[i]) {
            gt_fail(__FILE__, __LINE__, "%s: static dimension %d is %lld, want %lld", label, i, (long long)t.shape[i],
                    (long long)shape[i]);
            return 0;
        }
    return 1;
}

/* ==== the structural ops' helpers ================================================================ */

const gr_dtype gts_dtypes[4] = { GR_F64, GR_F32, GR_I64, GR_BOOL };

int gts_is_float(gr_dtype dt) { return dt == GR_F64 || dt == GR_F32; }

/* an expected-value array for results of dtype dt: I64 for integers and bools, else F64 */
gr_array *gts_want(gr_dtype dt, int ndim, const int64_t *shape) {
    return gr_array_new(gts_is_float(dt) ? GR_F64 : GR_I64, ndim, shape);
}
/* want[k] = x[xk], exactly */
void gts_copy_elem(gr_array *want, int64_t k, const gr_array *x, int64_t xk) {
    if (want->dtype == GR_I64)
        ((int64_t *)want->data)[k] = x->dtype == GR_I64 ? ((const int64_t *)x->data)[xk]
                                   : x->dtype == GR_BOOL ? (int64_t)((const uint8_t *)x->data)[xk] : (int64_t)gr_array_get(x, xk);
    else ((double *)want->data)[k] = gr_array_get(x, xk);
}
int64_t gts_int_at(const gr_array *x, int64_t k) {
    return x->dtype == GR_I64 ? ((const int64_t *)x->data)[k] : x->dtype == GR_BOOL ? (int64_t)((const uint8_t *)x->data)[k] : 0;
}
/* values of a random input: floats in [lo, hi), ints in [ilo, ihi], bools 0/1 */
gr_array *gts_random(gtf_rng *r, gr_dtype dt, int ndim, const int64_t *shape, double lo, double hi, int64_t ilo, int64_t ihi) {
    return dt == GR_I64 ? gtf_random(r, dt, ndim, shape, (double)ilo, (double)ihi) : gtf_random(r, dt, ndim, shape, lo, hi);
}
double gts_tol(gr_dtype dt) { return dt == GR_F32 ? GTF_TOL_F32 : dt == GR_F64 ? GTF_TOL_F64 : 0; }

/* one input, one output */
int gts_expect1(gr_graph *g, gr_var *x, const gr_array *xa, gr_var *y, gr_dtype dt, const gr_array *want, double tol,
                const char *label) {
    const gr_array *arr[1];
    arr[0] = xa;
    return gtf_expect(g, 1, &x, arr, y, dt, want, tol, label);
}

/* the printed program of a compiled function, in buf */
void gts_fn_print(gr_fn *f, char *buf, size_t size) {
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

int gtr_call1(gr_graph *g, int n, gr_var *const *ins, const gr_array *const *arr, gr_var *out, gr_array **res,
                     const char *label) {
    gr_fn *f = gr_function(n, ins, 1, &out, NULL);
    const gr_array *r[1];
    *res = NULL;
    if (!f) { gt_fail(__FILE__, __LINE__, "%s: gr_function failed: %s", label, gr_graph_message(g)); return 0; }
    if (gr_call(f, arr, r) != GR_OK) {
        gt_fail(__FILE__, __LINE__, "%s: gr_call failed: %s", label, gr_fn_message(f));
        gr_fn_free(f);
        return 0;
    }
    *res = gr_array_copy(r[0]);
    gr_fn_free(f);
    return 1;
}

/* log(e^a + e^b) without overflow, a reference independent of the kernels' max shift */
double gtr_logaddexp(double a, double b) {
    if (a != a || b != b) return NAN;
    if (a == -INFINITY) return b;
    if (b == -INFINITY) return a;
    if (a == INFINITY || b == INFINITY) return INFINITY;
    return a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
}

/* the variable of op `name` feeding v's node as input `pos` (the rules' internals, by name) */
gr_var *gtr_input_of(gr_var *v, int pos, const char *name, const char *label) {
    gr_var *in = gr_node_input(gr_var_owner(v), pos);
    const gr_op_def *op = gr_node_op(gr_var_owner(in));
    if (!op || strcmp(gr_node_op(gr_var_owner(in))->name, name) != 0) {
        gt_fail(__FILE__, __LINE__, "%s: input %d of %s is not a %s", label, pos, gr_var_owner(v) ? gr_node_op(gr_var_owner(v))->name : "a leaf",
                name);
        return NULL;
    }
    return in;
}

/* ==== the linear algebra's helpers =============================================================== */


/* a copy of an output that outlives the call */
gr_array *gtl_eval(int n, gr_var *const *ins, const gr_array *const *arrays, gr_var *out, const char *label) {
    gr_fn *f;
    const gr_array *res[1];
    gr_array *copy = NULL;
    if (!out) { gt_fail(__FILE__, __LINE__, "%s: build failed: %s", label, gr_graph_message(gr_var_graph(ins[0]))); return NULL; }
    f = gr_function(n, ins, 1, &out, NULL);
    if (!f) { gt_fail(__FILE__, __LINE__, "%s: gr_function failed: %s", label, gr_graph_message(gr_var_graph(out))); return NULL; }
    if (gr_call(f, arrays, res) != GR_OK) gt_fail(__FILE__, __LINE__, "%s: call failed: %s", label, gr_fn_message(f));
    else copy = gr_array_copy(res[0]);
    gr_fn_free(f);
    return copy;
}

/* max |got - want| <= tol * max |want| (normwise relative), shapes equal; NaN only where want has it */
int gtl_close(const gr_array *got, const gr_array *want, double tol, const char *label) {
    double err = 0, scale = 0;
    int64_t k;
    int d;
    gt.checks++;
    if (!got || !want) return 0;
    if (got->ndim != want->ndim || got->size != want->size) {
        gt_fail(__FILE__, __LINE__, "%s: got %d-d of %lld elements, want %d-d of %lld", label, got->ndim, (long long)got->size,
                want->ndim, (long long)want->size);
        return 0;
    }
    for (d = 0; d < got->ndim; d++)
        if (got->shape[d] != want->shape[d]) { gt_fail(__FILE__, __LINE__, "%s: axis %d is %lld, want %lld", label, d,
                                                       (long long)got->shape[d], (long long)want->shape[d]); return 0; }
    for (k = 0; k < want->size; k++) {
        double w = gr_array_get(want, k), g = gr_array_get(got, k);
        if (w != w || g != g) {
            if ((w != w) != (g != g)) { gt_fail(__FILE__, __LINE__, "%s: element %lld is %g, want %g", label, (long long)k, g, w); return 0; }
            continue;
        }
        if (fabs(w) > scale) scale = fabs(w);
        if (fabs(g - w) > err) err = fabs(g - w);
    }
    if (!(err <= tol * (scale > 0 ? scale : 1))) {
        gt_fail(__FILE__, __LINE__, "%s: relative error %.3g > %.3g", label, err / (scale > 0 ? scale : 1), tol);
        return 0;
    }
    return 1;
}

gr_array *gtl_matrix(gr_dtype dt, int64_t r, int64_t c, const double *v) {
    int64_t s[2], k;
    gr_array *a;
    s[0] = r; s[1] = c;
    a = gr_array_new(dt, 2, s);
    for (k = 0; v && k < r * c; k++) gr_array_set(a, k, v[k]);
    return a;
}

/* f(A) built from a dynamic float64 matrix A fails at call time with `code`, the message naming A */
void gtl_call_fails(gtl_unary op, const double *a, int64_t r, int64_t c, gr_status code, const char *needle, const char *label) {
    gr_graph *g = gr_graph_new();
    gr_var *A = gr_matrix(g, GR_F64, "Amat"), *y = op(A);
    gr_array *aa = gtl_matrix(GR_F64, r, c, a);
    gr_fn *f = y ? gr_function(1, &A, 1, &y, NULL) : NULL;
    const gr_array *res[1];
    CHECK_MSG(f != NULL, "%s: %s", label, gr_graph_message(g));
    if (f) {
        gr_status st = gr_call(f, (const gr_array *const *)&aa, res);
        CHECK_MSG(st == code, "%s: status %s, want %s (%s)", label, gr_status_string(st), gr_status_string(code), gr_fn_message(f));
        CHECK_CONTAINS(gr_fn_message(f), "'Amat'");
        CHECK_CONTAINS(gr_fn_message(f), needle);
    }
    gr_fn_free(f);
    gr_array_free(aa);
    gr_graph_free(g);
}

/* the Jacobian of f (built from the single input x) against central differences of f, in float64 */
void gtl_jacobian_fd(gr_var *(*build)(gr_var *x, void *u), void *u, int ndim, const int64_t *shape, const gr_array *x0,
                            const char *label) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_tensor(g, GR_F64, ndim, NULL, "x"), *y = build(x, u), *J = NULL;
    gr_array *jac = NULL, *xp = gr_array_copy(x0), *fp = NULL, *fm = NULL;
    int64_t k, i, m;
    double err = 0, scale = 0, h = 1e-6;
    (void)shape;
    if (!y || gr_jacobian(y, 1, &x, &J, NULL) != GR_OK) { gt_fail(__FILE__, __LINE__, "%s: %s", label, gr_graph_message(g)); goto done; }
    jac = gtl_eval(1, &x, (const gr_array *const *)&x0, J, label);
    if (!jac) goto done;
    m = jac->size / x0->size;
    for (k = 0; k < x0->size; k++) {
        gr_array_set(xp, k, gr_array_get(x0, k) + h);
        fp = gtl_eval(1, &x, (const gr_array *const *)&xp, y, label);
        gr_array_set(xp, k, gr_array_get(x0, k) - h);
        fm = gtl_eval(1, &x, (const gr_array *const *)&xp, y, label);
        gr_array_set(xp, k, gr_array_get(x0, k));
        if (!fp || !fm) { gr_array_free(fp); gr_array_free(fm); goto done; }
        for (i = 0; i < m; i++) {
            double fd = (gr_array_get(fp, i) - gr_array_get(fm, i)) / (2 * h), an = gr_array_get(jac, i * x0->size + k);
            if (fabs(fd - an) > err) err = fabs(fd - an);
            if (fabs(an) > scale) scale = fabs(an);
        }
        gr_array_free(fp); gr_array_free(fm);
    }
    CHECK_MSG(jac->ndim == gr_var_ndim(y) + ndim, "%s: the Jacobian has %d dimensions", label, jac->ndim);
    CHECK_MSG(err <= 1e-6 * (1 + scale), "%s: Jacobian and finite differences differ by %.3g (scale %.3g)", label, err, scale);
done:
    gr_array_free(jac); gr_array_free(xp);
    gr_graph_free(g);
}

/* 3x3 well-conditioned constant, and a fixed 3-vector, used by the builders below */
gr_var *gtl_const_matrix(gr_graph *g, double shift) {
    double a[9] = { 0.3, -0.2, 0.5, 0.1, 0.4, -0.3, -0.6, 0.2, 0.1 };
    int k;
    gr_array *arr;
    gr_var *c;
    for (k = 0; k < 3; k++) a[k * 4] += shift;
    arr = gtl_matrix(GR_F64, 3, 3, a);
    c = gr_constant(g, arr);
    gr_array_free(arr);
    return c;
}

/* ==== the error tests' helpers =================================================================== */

gr_array *e_vec(int64_t n, const double *xs) { return gr_array_from(GR_F64, 1, &n, xs); }

gr_array *e_mat(int64_t r, int64_t c, const double *xs) {
    int64_t shape[2];
    shape[0] = r; shape[1] = c;
    return gr_array_from(GR_F64, 2, shape, xs);
}

/* a vector 0.5, 1.5, 2.5, ... of n elements */
gr_array *e_ramp(int64_t n) {
    gr_array *a = gr_array_new(GR_F64, 1, &n);
    int64_t i;
    for (i = 0; a && i < n; i++) gr_array_set(a, i, 0.5 + (double)i);
    return a;
}

gr_var *e_const_vec(gr_graph *g, int64_t n) {
    gr_array *a = e_ramp(n);
    gr_var *v = gr_constant(g, a);
    gr_array_free(a);
    return v;
}

gr_var *e_const_mat(gr_graph *g, int64_t r, int64_t c) {
    int64_t shape[2];
    gr_array *a;
    gr_var *v;
    shape[0] = r; shape[1] = c;
    a = gr_array_new(GR_F64, 2, shape);
    v = gr_constant(g, a);
    gr_array_free(a);
    return v;
}

