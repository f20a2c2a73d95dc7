/* tests/ops_index.c: the ops of ops/index.c: Slice and Index (views of one axis), Take (advanced
   indexing with int64 indices) and their updates ViewUpdate and TakeUpdate (gr_set_subtensor,
   gr_inc_subtensor), with NumPy's semantics.
     - values against a plain-C reference in every dtype: slices with any bounds and step against
       Python's slice.indices (the extremes of int64 included), indices from either end, repeated
       take indices, set (the last write wins) and inc (repeats accumulate), y broadcast; static
       and call-time shapes;
     - derivative specs (views, updates of them, y broadcast), and set with repeated indices;
     - the errors of the constructors, at build time and at call time. */
#include "ops.h"


/* ---- indexing: NumPy's semantics, by a plain-C reference ---------------------------------------- */

/* NumPy's positions of x[start:stop:step] on a length-n axis */
static int64_t gts_slice_positions(int64_t n, int64_t start, int64_t stop, int64_t step, int64_t *pos) {
    int64_t m = 0, i;
    if (step > 0) {
        int64_t a = start == GR_OPEN ? 0 : start < 0 ? start + n : start, b = stop == GR_OPEN ? n : stop < 0 ? stop + n : stop;
        if (a < 0) a = 0;
        if (b > n) b = n;
        for (i = a; i < b; i += step) pos[m++] = i;
    } else {
        int64_t a = start == GR_OPEN ? n - 1 : start < 0 ? start + n : start, b = stop == GR_OPEN ? -1 : stop < 0 ? stop + n : stop;
        if (a > n - 1) a = n - 1;
        if (b < -1) b = -1;
        for (i = a; i > b; i += step) pos[m++] = i;
    }
    return m;
}

/* x (2,5,3): gr_slice along each axis for many bounds; gr_index along each axis */
TEST(gts_op_Slice) {
    static const int64_t shape[3] = { 2, 5, 3 };
    static const int64_t bounds[][3] = {
        { 0, 5, 1 }, { 1, 4, 1 }, { GR_OPEN, GR_OPEN, 2 }, { -4, -1, 1 }, { GR_OPEN, GR_OPEN, -1 }, { 4, 0, -2 },
        { -1, GR_OPEN, -3 }, { 3, 1, 1 }, { -100, 100, 1 }, { 100, -100, -1 }, { 2, GR_OPEN, 7 }, { GR_OPEN, 2, 1 },
    };
    gtf_rng rng;
    int axis, b, dyn, d;
    rng.s = 130;
    for (axis = 0; axis < 3; axis++)
        for (b = 0; b < (int)(sizeof bounds / sizeof bounds[0]); b++)
            for (dyn = 0; dyn < 2; dyn++)
                for (d = 0; d < 3; d++) {
                    gr_dtype dt = gts_dtypes[d];
                    gr_graph *g = gr_graph_new();
                    gr_var *x = gtf_input(g, dt, 3, shape, dyn, "x");
                    gr_array *a = gtf_random(&rng, dt, 3, shape, -5, 5), *want;
                    int64_t pos[8], m = gts_slice_positions(shape[axis], bounds[b][0], bounds[b][1], bounds[b][2], pos), ws[3], i, j, k;
                    char label[128];
                    for (i = 0; i < 3; i++) ws[i] = i == axis ? m : shape[i];
                    want = gts_want(dt, 3, ws);
                    for (i = 0; i < ws[0]; i++)
                        for (j = 0; j < ws[1]; j++)
                            for (k = 0; k < ws[2]; k++) {
                                int64_t src[3];
                                src[0] = i; src[1] = j; src[2] = k;
                                src[axis] = pos[src[axis]];
                                gts_copy_elem(want, (i * ws[1] + j) * ws[2] + k, a, (src[0] * 5 + src[1]) * 3 + src[2]);
                            }
                    snprintf(label, sizeof label, "gr_slice axis %d bounds %d (%s, %s)", axis, b, gr_dtype_name(dt), dyn ? "dynamic" : "static");
                    gtf_expect(g, 1, &x, (const gr_array *const *)&a, gr_slice(x, axis, bounds[b][0], bounds[b][1], bounds[b][2]), dt, want, 0, label);
                    if (!dyn) gtf_static_shape_is(gr_slice(x, axis, bounds[b][0], bounds[b][1], bounds[b][2]), 3, ws, label);
                    gr_array_free(a);
                    gr_array_free(want);
                    gr_graph_free(g);
                }
    {   /* a zero step is a bad argument */
        gr_graph *g = gr_graph_new();
        CHECK(gr_slice(gr_vector(g, GR_F64, "x"), 0, 0, 1, 0) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        gr_graph_free(g);
    }
}

TEST(gts_op_Index) {
    static const int64_t shape[3] = { 2, 5, 3 };
    static const int64_t idx[] = { 0, 1, -1, -2 };
    gtf_rng rng;
    int axis, b, dyn;
    rng.s = 131;
    for (axis = 0; axis < 3; axis++)
        for (b = 0; b < 4; b++)
            for (dyn = 0; dyn < 2; dyn++) {
                gr_graph *g = gr_graph_new();
                gr_var *x = gtf_input(g, GR_F64, 3, shape, dyn, "x");
                gr_array *a = gtf_random(&rng, GR_F64, 3, shape, -5, 5), *want;
                int64_t ws[2], i, j, m = 0, at = idx[b] < 0 ? idx[b] + shape[axis] : idx[b];
                char label[96];
                for (i = 0; i < 3; i++) if (i != axis) ws[m++] = shape[i];
                want = gr_array_new(GR_F64, 2, ws);
                for (i = 0; i < ws[0]; i++)
                    for (j = 0; j < ws[1]; j++) {
                        int64_t src[3], q = 0, t;
                        for (t = 0; t < 3; t++) src[t] = t == axis ? at : (q++ == 0 ? i : j);
                        ((double *)want->data)[i * ws[1] + j] = gr_array_get(a, (src[0] * 5 + src[1]) * 3 + src[2]);
                    }
                snprintf(label, sizeof label, "gr_index axis %d at %lld", axis, (long long)idx[b]);
                gtf_expect(g, 1, &x, (const gr_array *const *)&a, gr_index(x, axis, idx[b]), GR_F64, want, 0, label);
                gr_array_free(a);
                gr_array_free(want);
                gr_graph_free(g);
            }
    {   /* out of range: GR_ERR_RUNTIME at call time naming the index */
        int64_t n = 3;
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_index(x, 0, 7);
        gr_array *a = gr_array_new(GR_F64, 1, &n);
        gr_fn *f = gr_function(1, &x, 1, &y, NULL);
        const gr_array *in[1], *out[1];
        in[0] = a;
        CHECK_STATUS(gr_call(f, in, out), GR_ERR_RUNTIME);
        CHECK_CONTAINS(gr_fn_message(f), "7");
        gr_fn_free(f);
        gr_array_free(a);
        gr_graph_free(g);
    }
}

TEST(gts_op_Take) {
    static const int64_t shape[2] = { 4, 3 };
    static const int64_t ix[5] = { 2, 0, -1, 2, 1 };
    gtf_rng rng;
    int axis, dyn;
    rng.s = 132;
    for (axis = 0; axis < 2; axis++)
        for (dyn = 0; dyn < 2; dyn++) {
            int64_t ishape[2] = { 1, 5 }, ws[3], i, t, r;
            gr_graph *g = gr_graph_new();
            gr_var *x = gtf_input(g, GR_F64, 2, shape, dyn, "x"), *ind = gtf_input(g, GR_I64, 2, ishape, dyn, "ind"), *ins[2];
            gr_array *arr[2], *want;
            char label[96];
            int64_t n = shape[axis];
            arr[0] = gtf_random(&rng, GR_F64, 2, shape, -5, 5);
            arr[1] = gr_array_from(GR_I64, 2, ishape, ix);
            if (axis == 0) { ws[0] = 1; ws[1] = 5; ws[2] = 3; }
            else { ws[0] = 4; ws[1] = 1; ws[2] = 5; }
            want = gr_array_new(GR_F64, 3, ws);
            for (r = 0; r < (axis == 0 ? 3 : 4); r++)
                for (t = 0; t < 5; t++) {
                    int64_t p = ix[t] < 0 ? ix[t] + n : ix[t];
                    i = axis == 0 ? t * 3 + r : r * 5 + t;
                    ((double *)want->data)[i] = gr_array_get(arr[0], axis == 0 ? p * 3 + r : r * 3 + p);
                }
            ins[0] = x; ins[1] = ind;
            snprintf(label, sizeof label, "gr_take axis %d", axis);
            gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_take(x, ind, axis), GR_F64, want, 0, label);
            gr_array_free(arr[0]);
            ((int64_t *)arr[1]->data)[3] = 4;           /* out of range for both axes */
            arr[0] = gtf_random(&rng, GR_F64, 2, shape, -5, 5);
            gtf_expect_call_error(g, 2, ins, (const gr_array *const *)arr, gr_take(x, ind, axis), GR_ERR_RUNTIME, label);
            gr_array_free(arr[0]);
            gr_array_free(arr[1]);
            gr_array_free(want);
            gr_graph_free(g);
        }
    {   /* float indices are a type error */
        gr_graph *g = gr_graph_new();
        CHECK(gr_take(gr_vector(g, GR_F64, "x"), gr_vector(g, GR_F64, "i"), 0) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
        gr_graph_free(g);
    }
}

/* set / inc of a slice, an index and a take, with y broadcast; repeated take indices: the last
   write wins in set, all writes add up in inc */
TEST(gts_op_ViewUpdate) {
    static const int64_t shape[2] = { 5, 3 }, ys[1] = { 3 };
    gtf_rng rng;
    int inc, kind, dyn;
    rng.s = 133;
    for (inc = 0; inc < 2; inc++)
        for (kind = 0; kind < 3; kind++)
            for (dyn = 0; dyn < 2; dyn++) {
                gr_graph *g = gr_graph_new();
                gr_var *x = gtf_input(g, GR_F64, 2, shape, dyn, "x"), *y = gtf_input(g, GR_F64, 1, ys, dyn, "y"), *v, *ins[2];
                gr_var *y_in = y;
                gr_array *arr[2], *want;
                int64_t r, c;
                char label[96];
                arr[0] = gtf_random(&rng, GR_F64, 2, shape, -5, 5);
                arr[1] = gtf_random(&rng, GR_F64, 1, ys, -5, 5);
                want = gr_array_copy(arr[0]);
                v = kind == 0 ? gr_slice(x, 0, -1, 0, -2) : kind == 1 ? gr_index(x, 0, -2) : gr_slice(x, 1, 1, 2, 1);
                for (r = 0; r < 5; r++)
                    for (c = 0; c < 3; c++) {
                        int hit = kind == 0 ? (r == 4 || r == 2) : kind == 1 ? r == 3 : c == 1;
                        double yv = gr_array_get(arr[1], kind == 2 ? r % 3 : c);
                        if (hit) ((double *)want->data)[r * 3 + c] = inc ? gr_array_get(arr[0], r * 3 + c) + yv : yv;
                    }
                if (kind == 2) {                        /* x[:, 1:2] is (5, 1): y of shape (3,) does not fit; use y[0] */
                    gr_array_free(want);
                    want = gr_array_copy(arr[0]);
                    for (r = 0; r < 5; r++) {
                        double yv = gr_array_get(arr[1], 0);
                        ((double *)want->data)[r * 3 + 1] = inc ? gr_array_get(arr[0], r * 3 + 1) + yv : yv;
                    }
                    y = gr_index(y, 0, 0);
                }
                ins[0] = x; ins[1] = y_in;
                snprintf(label, sizeof label, "%s of view kind %d", inc ? "gr_inc_subtensor" : "gr_set_subtensor", kind);
                gtf_expect(g, 2, ins, (const gr_array *const *)arr, inc ? gr_inc_subtensor(v, y) : gr_set_subtensor(v, y),
                           GR_F64, want, GTF_TOL_F64, label);
                gr_array_free(arr[0]);
                gr_array_free(arr[1]);
                gr_array_free(want);
                gr_graph_free(g);
            }
    {   /* not a view: a bad argument */
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x");
        CHECK(gr_set_subtensor(gr_exp(x), x) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        gr_graph_free(g);
    }
}

/* a 0-d view (one element of a vector) of integers and bools, set and incremented: the integer
   scatter once read y's stride of axis -1 of the 0-d view (UBSan; found by the fuzzer) */
TEST(test_view_update_0d_int) {
    static const int64_t xs[1] = { 3 };
    static const int64_t xi[3] = { 5, -7, 9 };
    static const uint8_t xb[3] = { 1, 0, 1 };
    int inc, b;
    for (b = 0; b < 2; b++)
        for (inc = 0; inc < 2; inc++) {
            gr_dtype dt = b ? GR_BOOL : GR_I64;
            gr_graph *g = gr_graph_new();
            gr_var *x = gr_vector(g, dt, "x"), *y = gr_scalar(g, dt, "y"), *ins[2];
            gr_array *arr[2], *want;
            char label[64];
            arr[0] = gr_array_from(dt, 1, xs, b ? (const void *)xb : (const void *)xi);
            arr[1] = gr_array_scalar(dt, b ? 1 : 4);
            want = gr_array_new(GR_I64, 1, xs);             /* (integer wants are I64) */
            /* x[1] := y, or x[1] += y (a bool sum is a logical or) */
            ((int64_t *)want->data)[0] = b ? 1 : 5;
            ((int64_t *)want->data)[1] = b ? 1 : inc ? -7 + 4 : 4;
            ((int64_t *)want->data)[2] = b ? 1 : 9;
            ins[0] = x; ins[1] = y;
            snprintf(label, sizeof label, "%s of x[1], %s", inc ? "gr_inc_subtensor" : "gr_set_subtensor", gr_dtype_name(dt));
            gtf_expect(g, 2, ins, (const gr_array *const *)arr, inc ? gr_inc_subtensor(gr_index(x, 0, 1), y) : gr_set_subtensor(gr_index(x, 0, 1), y),
                       dt, want, 0, label);
            gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(want);
            gr_graph_free(g);
        }
}

TEST(gts_op_TakeUpdate) {
    static const int64_t xs[1] = { 5 }, is[1] = { 4 }, idx[4] = { 1, -1, 1, 3 };
    static const double yv[4] = { 10, 20, 30, 40 };
    int inc;
    for (inc = 0; inc < 2; inc++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *ind = gr_vector(g, GR_I64, "ind"), *y = gr_vector(g, GR_F64, "y"), *ins[3], *out;
        double x0[5] = { 1, 2, 3, 4, 5 };
        gr_array *arr[3], *want = gr_array_from(GR_F64, 1, xs, x0);
        arr[0] = gr_array_from(GR_F64, 1, xs, x0);
        arr[1] = gr_array_from(GR_I64, 1, is, idx);
        arr[2] = gr_array_from(GR_F64, 1, is, yv);
        if (inc) { ((double *)want->data)[1] += 10 + 30; ((double *)want->data)[4] += 20; ((double *)want->data)[3] += 40; }
        else { ((double *)want->data)[1] = 30; ((double *)want->data)[4] = 20; ((double *)want->data)[3] = 40; }
        ins[0] = x; ins[1] = ind; ins[2] = y;
        out = inc ? gr_inc_subtensor(gr_take(x, ind, 0), y) : gr_set_subtensor(gr_take(x, ind, 0), y);
        gtf_expect(g, 3, ins, (const gr_array *const *)arr, out, GR_F64, want, 0, inc ? "inc take, repeated" : "set take, repeated");
        gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(arr[2]); gr_array_free(want);
        gr_graph_free(g);
    }
}

/* Python's slice(start, stop, step).indices(n) and the length of the range, as CPython computes
   them (PySlice_Unpack, then PySlice_AdjustIndices in Objects/sliceobject.c), with has_* = 0 for
   None; NumPy's basic slicing uses the same. step != 0. */
static void e_py_slice(int64_t n, int has_start, int64_t start, int has_stop, int64_t stop, int64_t step, int64_t *first, int64_t *len) {
    if (step < -INT64_MAX) step = -INT64_MAX;           /* Unpack: so that -step is safe */
    if (!has_start) start = step < 0 ? INT64_MAX : 0;
    if (!has_stop) stop = step < 0 ? INT64_MIN : INT64_MAX;
    if (start < 0) {
        start += n;
        if (start < 0) start = step < 0 ? -1 : 0;
    } else if (start >= n)
        start = step < 0 ? n - 1 : n;
    if (stop < 0) {
        stop += n;
        if (stop < 0) stop = step < 0 ? -1 : 0;
    } else if (stop >= n)
        stop = step < 0 ? n - 1 : n;
    if (step < 0) *len = stop < start ? (start - stop - 1) / (-step) + 1 : 0;
    else *len = start < stop ? (stop - start - 1) / step + 1 : 0;
    *first = start;
}

/* gr_slice against that reference over many (start, stop, step, n), the extremes included (a
   step of INT64_MAX or INT64_MIN + 1 overflowed: 0 elements where NumPy has 1): the static length
   at build time (a constant), and the values at call time (an input of unknown length, sliced
   along axis 1 of a (2, n) matrix), with the gradient for some steps */
TEST(test_slice_matches_python) {
    static const int64_t bounds[] = { GR_OPEN, INT64_MIN + 1, -1000, -7, -4, -3, -2, -1, 0, 1, 2, 3, 4, 7, 1000, INT64_MAX - 1, INT64_MAX };
    static const int64_t steps[] = { GR_OPEN, INT64_MIN + 1, INT64_MIN + 2, -1000, -3, -2, -1, 1, 2, 3, 1000, INT64_MAX - 1, INT64_MAX };
    static const int64_t ns[] = { 0, 1, 2, 3, 4, 7 };
    enum { NB = sizeof bounds / sizeof bounds[0], NS = sizeof steps / sizeof steps[0], NN = sizeof ns / sizeof ns[0] };
    int a, b, c, k;
    /* build time: the static length of a slice of a constant */
    for (k = 0; k < NN; k++) {
        gr_graph *g = gr_graph_new();
        gr_var *cv = e_const_vec(g, ns[k]);
        int bad = 0;
        for (c = 0; c < NS; c++)
            for (a = 0; a < NB; a++)
                for (b = 0; b < NB; b++) {
                    int64_t step = steps[c] == GR_OPEN ? 1 : steps[c], first, len;
                    gr_var *s = gr_slice(cv, 0, bounds[a], bounds[b], steps[c]);
                    gr_type t;
                    e_py_slice(ns[k], bounds[a] != GR_OPEN, bounds[a], bounds[b] != GR_OPEN, bounds[b], step, &first, &len);
                    if (!gr_var_type(s, &t) || t.shape[0] != len) {
                        if (bad++ < 5)
                            CHECK_MSG(0, "n %lld, [%lld:%lld:%lld]: static length %lld, Python's %lld", (long long)ns[k], (long long)bounds[a],
                                      (long long)bounds[b], (long long)steps[c], s ? (long long)t.shape[0] : -99LL, (long long)len);
                    }
                }
        CHECK_OK_GRAPH(g);
        gr_graph_free(g);
    }
    /* call time: one function per step, one output per (start, stop), and for some steps the
       gradient of the sum of every slice: each position counts the slices that take it */
    for (c = 0; c < NS; c++) {
        int64_t step = steps[c] == GR_OPEN ? 1 : steps[c];
        int with_grad = step == INT64_MAX || step == INT64_MIN + 1 || step == -2 || step == 3, bad = 0;
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_matrix(g, GR_F64, "x"), *outs[NB * NB + 1], *total = NULL;
        gr_fn *f;
        for (a = 0; a < NB; a++)
            for (b = 0; b < NB; b++) {
                gr_var *s = gr_slice(x, 1, bounds[a], bounds[b], steps[c]);
                outs[a * NB + b] = s;
                if (with_grad) total = total ? gr_add(total, gr_sum(s)) : gr_sum(s);
            }
        outs[NB * NB] = with_grad ? gr_grad1(total, x) : x;
        f = gr_function(1, &x, NB * NB + 1, outs, NULL);
        CHECK_MSG(f != NULL, "%s", gr_graph_message(g));
        for (k = 0; f && k < NN; k++) {
            int64_t shape[2], i, count[8] = { 0 };
            gr_array *xa;
            const gr_array *in[1], *out[NB * NB + 1];
            shape[0] = 2; shape[1] = ns[k];
            xa = gr_array_new(GR_F64, 2, shape);
            for (i = 0; i < xa->size; i++) gr_array_set(xa, i, 100.0 + (double)i);
            in[0] = xa;
            CHECK_STATUS(gr_call(f, in, out), GR_OK);
            for (a = 0; a < NB; a++)
                for (b = 0; b < NB; b++) {
                    const gr_array *o = out[a * NB + b];
                    int64_t first, len, r;
                    e_py_slice(ns[k], bounds[a] != GR_OPEN, bounds[a], bounds[b] != GR_OPEN, bounds[b], step, &first, &len);
                    if (o->ndim != 2 || o->shape[0] != 2 || o->shape[1] != len) {
                        if (bad++ < 5)
                            CHECK_MSG(0, "n %lld, [%lld:%lld:%lld]: %lld elements, Python's %lld", (long long)ns[k], (long long)bounds[a],
                                      (long long)bounds[b], (long long)steps[c], (long long)o->shape[1], (long long)len);
                        continue;
                    }
                    for (i = 0; i < len; i++) {
                        int64_t pos = first + i * step;       /* i < len: in [0, n) */
                        count[pos]++;
                        for (r = 0; r < 2; r++)
                            if (gr_array_get(o, r * len + i) != 100.0 + (double)(r * ns[k] + pos) && bad++ < 5)
                                CHECK_MSG(0, "n %lld, [%lld:%lld:%lld]: element %lld of row %lld is %g", (long long)ns[k], (long long)bounds[a],
                                          (long long)bounds[b], (long long)steps[c], (long long)i, (long long)r, gr_array_get(o, r * len + i));
                    }
                }
            if (with_grad)
                for (i = 0; i < ns[k]; i++) {
                    CHECK_NEAR(gr_array_get(out[NB * NB], i), (double)count[i], 0);
                    CHECK_NEAR(gr_array_get(out[NB * NB], ns[k] + i), (double)count[i], 0);
                }
            gr_array_free(xa);
        }
        gr_fn_free(f);
        gr_graph_free(g);
    }
}


/* ==== derivative builders ======================================================================== */

typedef struct gts_view { int axis; int64_t start, stop, step; } gts_view;
static gts_view sl_rows = { 0, 1, 4, 1 }, sl_cols_step = { 1, GR_OPEN, GR_OPEN, 2 }, sl_rev = { 0, GR_OPEN, GR_OPEN, -1 },
                sl_neg = { -1, -3, -1, 1 }, sl_mid = { 1, 1, 3, 1 }, sl_empty = { 0, 3, 1, 1 }, sl_rev_step = { 1, -1, 0, -2 };
static gts_view ix_row = { 0, 2, 0, 0 }, ix_last_col = { 1, -1, 0, 0 }, ix_first = { 0, 0, 0, 0 }, ix_mid = { 1, 1, 0, 0 };

static gr_var *gts_slice(gr_graph *g, gr_var *const *x, void *u) {
    const gts_view *v = (const gts_view *)u;
    (void)g;
    return gr_slice(x[0], v->axis, v->start, v->stop, v->step);
}
static gr_var *gts_index(gr_graph *g, gr_var *const *x, void *u) {
    const gts_view *v = (const gts_view *)u;
    (void)g;
    return gr_index(x[0], v->axis, v->start);
}
/* a view of a view, times x1: the gradient scatters into a scatter */
static gr_var *gts_slice_index(gr_graph *g, gr_var *const *x, void *u) {
    (void)g; (void)u;
    return gr_mul(gr_index(gr_slice(x[0], 1, 3, 0, -1), 0, -1), x[1]);
}

typedef struct gts_takep { int axis; int ndim; int64_t shape[2]; int64_t idx[8]; } gts_takep;
static gts_takep tk_rep = { 0, 1, { 4, 0 }, { 3, 0, 3, 1 } }, tk_2d = { 1, 2, { 2, 2 }, { 0, 3, 3, 3 } },
                tk_neg = { 0, 1, { 3, 0 }, { -1, 0, -5 } }, tk_0d = { 0, 0, { 0, 0 }, { 2 } }, tk_unique = { 0, 1, { 3, 0 }, { 4, 0, 2 } },
                tk_mid = { 1, 1, { 3, 0 }, { 2, 2, 0 } },
                tk_cols = { 1, 1, { 3, 0 }, { 2, 0, 3 } };
static gr_var *gts_take_var(gr_graph *g, gr_var *x, const gts_takep *t) { return gr_take(x, gts_indices(g, t->ndim, t->shape, t->idx), t->axis); }
static gr_var *gts_take(gr_graph *g, gr_var *const *x, void *u) { return gts_take_var(g, x[0], (const gts_takep *)u); }

/* updates: user = which view and set (0) or inc (1) */
typedef struct gts_upd { int kind; int inc; const void *view; } gts_upd;    /* kind 0 slice, 1 index, 2 take */
static gr_var *gts_view_of(gr_graph *g, gr_var *x, const gts_upd *p) {
    if (p->kind == 2) return gts_take_var(g, x, (const gts_takep *)p->view);
    {
        const gts_view *v = (const gts_view *)p->view;
        return p->kind == 0 ? gr_slice(x, v->axis, v->start, v->stop, v->step) : gr_index(x, v->axis, v->start);
    }
}
static gr_var *gts_update(gr_graph *g, gr_var *const *x, void *u) {
    const gts_upd *p = (const gts_upd *)u;
    gr_var *view = gts_view_of(g, x[0], p);
    return p->inc ? gr_inc_subtensor(view, x[1]) : gr_set_subtensor(view, x[1]);
}
/* y computed from x0 itself: sin(view(x0)) * x1 written back into x0 */
static gr_var *gts_update_self(gr_graph *g, gr_var *const *x, void *u) {
    const gts_upd *p = (const gts_upd *)u;
    gr_var *view = gts_view_of(g, x[0], p), *y = gr_mul(gr_sin(view), x[1]);
    return p->inc ? gr_inc_subtensor(view, y) : gr_set_subtensor(view, y);
}
/* set with repeated indices: the last write wins, so y's gradient there is not the true one
   (every write gets the cotangent, as in Aesara); y is a constant here, and what is checked is
   x's gradient through the update (zero at every written position), times sin(x0) */
static gr_var *gts_update_const_y(gr_graph *g, gr_var *const *x, void *u) {
    static const double yv[4] = { 0.5, -1.5, 2.5, 3.0 };
    static const int64_t ys = 4;
    const gts_upd *p = (const gts_upd *)u;
    gr_var *view = gts_view_of(g, x[0], p);
    return gr_mul(p->inc ? gr_inc_subtensor(view, gts_const_like(x[0], 1, &ys, yv)) : gr_set_subtensor(view, gts_const_like(x[0], 1, &ys, yv)),
                  gr_sin(x[0]));
}

static gts_upd up_set_rows = { 0, 0, &sl_rows }, up_inc_rows = { 0, 1, &sl_rows }, up_set_rev = { 0, 0, &sl_rev_step },
               up_inc_rev = { 0, 1, &sl_rev_step }, up_set_row = { 1, 0, &ix_row }, up_inc_col = { 1, 1, &ix_last_col },
               up_set_take = { 2, 0, &tk_unique }, up_inc_take_rep = { 2, 1, &tk_rep }, up_set_take_rep = { 2, 0, &tk_rep },
               up_inc_take_2d = { 2, 1, &tk_2d }, up_set_take_cols = { 2, 0, &tk_cols }, up_inc_take_mid = { 2, 1, &tk_mid };

/* set_subtensor with repeated take indices: the last write wins, so x's gradient is 0 at every
   written row; y's gradient gives every write the cotangent (Aesara's rule), which is not the
   derivative for an overwritten write: that is why the specs keep y constant there. Pinned here */
TEST(test_deriv_set_repeated) {
    static const int64_t idx[3] = { 1, 1, 0 }, three = 3;
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *i = gts_indices(g, 1, &three, idx), *s, *outs[3], *ins[2];
    static const double xv[3] = { 1, 2, 3 }, yv[3] = { 10, 20, 30 };
    const double *vals[2];
    double res[9];
    s = gr_set_subtensor(gr_take(x, i, 0), y);
    ins[0] = x; ins[1] = y;
    vals[0] = xv; vals[1] = yv;
    outs[0] = s;
    outs[1] = gr_grad1(gr_sum(gr_mul(s, gr_const(g, 2.0))), x);
    outs[2] = gr_grad1(gr_sum(gr_mul(s, gr_const(g, 2.0))), y);
    CHECK(gts_eval(2, ins, vals, 3, 3, outs, res));
    CHECK_NEAR(res[0], 30, 0); CHECK_NEAR(res[1], 20, 0); CHECK_NEAR(res[2], 3, 0);   /* x[1] = 10 then 20 */
    CHECK_NEAR(res[3], 0, 0); CHECK_NEAR(res[4], 0, 0); CHECK_NEAR(res[5], 2, 0);
    CHECK_NEAR(res[6], 2, 0); CHECK_NEAR(res[7], 2, 0); CHECK_NEAR(res[8], 2, 0);     /* y[0] is overwritten, yet gets 2 */
    gr_graph_free(g);
}

/* a static size is known when the op is built: an index outside [-size, size) is GR_ERR_VALUE
   then, naming the op, the index and the size (negative indices count from the end); an axis of
   unknown size is checked at call time (GR_ERR_RUNTIME) */
TEST(test_index_static_range) {
    gr_graph *g = gr_graph_new();
    int64_t s23[2] = { 2, 3 };
    gr_var *m = gr_tensor(g, GR_F64, 2, s23, "m"), *c = e_const_vec(g, 3), *u = gr_vector(g, GR_F64, "u"), *outs[3];
    gr_fn *f;
    CHECK(gr_index(m, 1, 3) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_index: index 3 is out of range for axis 1 of 'm' with size 3");
    gr_graph_clear_error(g);
    CHECK(gr_index(m, 0, -3) == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "index -3 is out of range for axis 0 of 'm' with size 2");
    gr_graph_clear_error(g);
    CHECK(gr_index(c, 0, INT64_MIN) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    CHECK(gr_index(c, -1, INT64_MAX) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    /* in range, from either end; unknown sizes pass the build */
    outs[0] = gr_index(c, 0, -3);                       /* c[0] = 0.5 */
    outs[1] = gr_index(m, -1, 2);
    outs[2] = gr_index(u, 0, 5);
    CHECK(outs[0] && outs[1] && outs[2]);
    CHECK_OK_GRAPH(g);
    {
        gr_var *ins[2];
        ins[0] = m; ins[1] = u;
        f = gr_function(2, ins, 3, outs, NULL);
    }
    CHECK(f != NULL);
    if (f) {
        double ms[6] = { 1, 2, 3, 4, 5, 6 }, us[3] = { 7, 8, 9 };
        gr_array *ma = e_mat(2, 3, ms), *ua = e_vec(3, us);
        const gr_array *in[2], *out[3];
        in[0] = ma; in[1] = ua;
        CHECK_STATUS(gr_call(f, in, out), GR_ERR_RUNTIME);            /* u has 3 elements: u[5] is not there */
        CHECK_CONTAINS(gr_fn_message(f), "index 5 is out of range");
        gr_array_free(ua);
        {
            double us6[6] = { 7, 8, 9, 10, 11, 12 };
            ua = e_vec(6, us6);
        }
        in[1] = ua;
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        CHECK_NEAR(gr_array_get(out[0], 0), 0.5, 0);
        CHECK_NEAR(gr_array_get(out[1], 0), 3.0, 0);
        CHECK_NEAR(gr_array_get(out[1], 1), 6.0, 0);
        CHECK_NEAR(gr_array_get(out[2], 0), 12.0, 0);
        gr_array_free(ma); gr_array_free(ua);
    }
    gr_fn_free(f);
    gr_graph_free(g);
}


/* a 0-d operand, an axis out of range, a zero step: GR_ERR_VALUE naming the builder and the
   variable; NULL operands silently */
TEST(test_slice_errors) {
    gr_graph *g = gr_graph_new();
    gr_var *m = gr_matrix(g, GR_F64, "m");
    CHECK(gr_slice(NULL, 0, 0, 1, 1) == NULL && gr_index(NULL, 0, 0) == NULL);
    CHECK_OK_GRAPH(g);
    CHECK(gr_slice(gr_scalar(g, GR_F64, "s"), 0, 0, 1, 1) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_slice");
    CHECK_CONTAINS(gr_graph_message(g), "'s'");
    gr_graph_clear_error(g);
    CHECK(gr_slice(m, 2, 0, 1, 1) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "axis 2");
    gr_graph_clear_error(g);
    CHECK(gr_slice(m, -3, 0, 1, 1) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    CHECK(gr_slice(m, 1, 0, 1, 0) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "step");
    CHECK_CONTAINS(gr_graph_message(g), "'m'");
    gr_graph_clear_error(g);
    CHECK(gr_slice(gr_disconnected_like(m), 0, 0, 1, 1) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    gr_graph_clear_error(g);
    CHECK(gr_slice(m, -2, GR_OPEN, GR_OPEN, -1) != NULL);
    CHECK_OK_GRAPH(g);
    gr_graph_free(g);
}

/* indices that are not int64 are GR_ERR_TYPE; a 0-d operand, an axis out of range, a result of too
   many dimensions GR_ERR_VALUE; each names gr_take and the variable */
TEST(test_take_errors) {
    int64_t s8[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
    gr_graph *g = gr_graph_new();
    gr_var *m = gr_matrix(g, GR_F64, "m"), *i = gr_vector(g, GR_I64, "i");
    CHECK(gr_take(NULL, i, 0) == NULL && gr_take(m, NULL, 0) == NULL);
    CHECK_OK_GRAPH(g);
    CHECK(gr_take(m, gr_vector(g, GR_F32, "fi"), 0) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_take");
    CHECK_CONTAINS(gr_graph_message(g), "'fi'");
    gr_graph_clear_error(g);
    CHECK(gr_take(gr_scalar(g, GR_F64, "s"), i, 0) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "'s'");
    gr_graph_clear_error(g);
    CHECK(gr_take(m, i, 2) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "axis 2");
    gr_graph_clear_error(g);
    CHECK(gr_take(m, gr_tensor(g, GR_I64, 8, s8, "i8"), 0) == NULL);      /* 1 + 8 dimensions */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    CHECK(gr_take(m, i, -1) != NULL);
    CHECK_OK_GRAPH(g);
    gr_graph_free(g);
}

/* gr_set_subtensor / gr_inc_subtensor of something that is not a view: GR_ERR_VALUE; a value that
   does not broadcast to the view: GR_ERR_SHAPE; each names the builder */
TEST(test_update_errors) {
    int64_t s34[2] = { 3, 4 }, s5 = 5, s2 = 2, s51[2] = { 5, 1 };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_tensor(g, GR_F64, 2, s34, "x"), *y5 = gr_tensor(g, GR_F64, 1, &s5, "y5");
    gr_var *row = gr_index(x, 0, 1), *rows = gr_slice(x, 0, 0, 2, 1), *taken = gr_take(x, gr_vector(g, GR_I64, "i"), 1);
    CHECK(gr_set_subtensor(NULL, y5) == NULL && gr_inc_subtensor(row, NULL) == NULL);
    CHECK_OK_GRAPH(g);
    CHECK(gr_set_subtensor(x, y5) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_set_subtensor");
    CHECK_CONTAINS(gr_graph_message(g), "not a view");
    gr_graph_clear_error(g);
    CHECK(gr_inc_subtensor(gr_exp(x), y5) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_inc_subtensor");
    gr_graph_clear_error(g);
    CHECK(gr_set_subtensor(row, y5) == NULL);                        /* (5,) into (4,) */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "'y5'");
    gr_graph_clear_error(g);
    CHECK(gr_inc_subtensor(rows, gr_tensor(g, GR_F64, 1, &s2, "y2")) == NULL);   /* (2,) into (2,4) */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    gr_graph_clear_error(g);
    CHECK(gr_set_subtensor(taken, gr_tensor(g, GR_F64, 2, s51, "y51")) == NULL);     /* (5,1) into (3,?) */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    gr_graph_clear_error(g);
    CHECK(gr_set_subtensor(row, gr_disconnected_like(row)) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    gr_graph_clear_error(g);
    CHECK(gr_set_subtensor(row, gr_const(g, 2.0)) != NULL && gr_inc_subtensor(taken, gr_const(g, 1.0)) != NULL);
    CHECK_OK_GRAPH(g);
    gr_graph_free(g);
}

static const gtd_spec specs_Slice[] = {
    { "Slice", "rows 1:4 of (5,4)", gts_slice, &sl_rows, 1, { GTD_IN(2, 5, 4, -2, 2) }, GG },
    { "Slice", "columns ::2 of (3,4)", gts_slice, &sl_cols_step, 1, { M34(-2, 2) }, GG },
    { "Slice", "rows ::-1 of (3,4)", gts_slice, &sl_rev, 1, { M34(-2, 2) }, GG },
    { "Slice", "-3:-1 on the last axis of (2,3,4)", gts_slice, &sl_neg, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "Slice", "columns -1:0:-2 of (3,4)", gts_slice, &sl_rev_step, 1, { M34(-2, 2) }, GG },
    { "Slice", "rows 3:1 of (3,4): empty", gts_slice, &sl_empty, 1, { M34(-2, 2) }, GG },
    { "Slice", "columns 1:3 of (3,4)", gts_slice, &sl_mid, 1, { M34(-2, 2) }, GG },
    GTD_END
};
static const gtd_spec specs_Index[] = {
    { "Index", "row 2 of (5,4)", gts_index, &ix_row, 1, { GTD_IN(2, 5, 4, -2, 2) }, GG },
    { "Index", "column -1 of (3,4)", gts_index, &ix_last_col, 1, { M34(-2, 2) }, GG },
    { "Index", "element 0 of (4,): 0-d", gts_index, &ix_first, 1, { V4(-2, 2) }, GG },
    { "Index", "[:, 1] of (2,3,4)", gts_index, &ix_mid, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "Index", "row -1 of columns 3::-1, times (3,)", gts_slice_index, NULL, 2, { M34(-2, 2), GTD_IN(1, 3, 0, -2, 2) }, GG },
    GTD_END
};
static const gtd_spec specs_Take[] = {
    { "Take", "rows [3,0,3,1] of (5,4): repeated", gts_take, &tk_rep, 1, { GTD_IN(2, 5, 4, -2, 2) }, GG },
    { "Take", "columns [[0,3],[3,3]] of (3,4)", gts_take, &tk_2d, 1, { M34(-2, 2) }, GG },
    { "Take", "rows [-1,0,-5] of (5,4): negative", gts_take, &tk_neg, 1, { GTD_IN(2, 5, 4, -2, 2) }, GG },
    { "Take", "element [2] (0-d indices) of (4,)", gts_take, &tk_0d, 1, { V4(-2, 2) }, GG },
    GTD_END
};
static const gtd_spec specs_ViewUpdate[] = {
    { "ViewUpdate", "set rows 1:4 of (5,4) to (3,4)", gts_update, &up_set_rows, 2, { GTD_IN(2, 5, 4, -2, 2), M34(-2, 2) }, GG },
    { "ViewUpdate", "set rows 1:4 of (5,4) to (4,): broadcast", gts_update, &up_set_rows, 2, { GTD_IN(2, 5, 4, -2, 2), V4(-2, 2) }, GG },
    { "ViewUpdate", "inc rows 1:4 of (5,4) by (3,1): broadcast", gts_update, &up_inc_rows, 2, { GTD_IN(2, 5, 4, -2, 2), GTD_IN(2, 3, 1, -2, 2) }, GG },
    { "ViewUpdate", "set columns -1:0:-2 of (3,4) to 0-d", gts_update, &up_set_rev, 2, { M34(-2, 2), S0(-2, 2) }, GG },
    { "ViewUpdate", "inc columns -1:0:-2 of (3,4) by (3,2)", gts_update, &up_inc_rev, 2, { M34(-2, 2), GTD_IN(2, 3, 2, -2, 2) }, GG },
    { "ViewUpdate", "set row 2 of (5,4) to (4,)", gts_update, &up_set_row, 2, { GTD_IN(2, 5, 4, -2, 2), V4(-2, 2) }, GG },
    { "ViewUpdate", "inc column -1 of (3,4) by 0-d", gts_update, &up_inc_col, 2, { M34(-2, 2), S0(-2, 2) }, GG },
    { "ViewUpdate", "set rows 1:4 of (5,4) to sin(rows) * (4,)", gts_update_self, &up_set_rows, 2, { GTD_IN(2, 5, 4, -2, 2), V4(-2, 2) }, GG },
    { "ViewUpdate", "set row 2 of (5,4) to sin(row) * 0-d", gts_update_self, &up_set_row, 2, { GTD_IN(2, 5, 4, -2, 2), S0(-2, 2) }, GG },
    GTD_END
};
static const gtd_spec specs_TakeUpdate[] = {
    /* TakeUpdate: set with unique indices, inc with repeated ones; set with repeated indices only
       with a constant y */
    { "TakeUpdate", "set rows [4,0,2] of (5,4) to (3,4)", gts_update, &up_set_take, 2, { GTD_IN(2, 5, 4, -2, 2), M34(-2, 2) }, GG },
    { "TakeUpdate", "set rows [4,0,2] of (5,4) to (4,): broadcast", gts_update, &up_set_take, 2, { GTD_IN(2, 5, 4, -2, 2), V4(-2, 2) }, GG },
    { "TakeUpdate", "inc rows [3,0,3,1] of (5,4) by (4,4): repeated", gts_update, &up_inc_take_rep, 2, { GTD_IN(2, 5, 4, -2, 2), GTD_IN(2, 4, 4, -2, 2) }, GG },
    { "TakeUpdate", "inc rows [3,0,3,1] of (5,4) by 0-d: repeated", gts_update, &up_inc_take_rep, 2, { GTD_IN(2, 5, 4, -2, 2), S0(-2, 2) }, GG },
    { "TakeUpdate", "inc columns [[0,3],[3,3]] of (3,4) by (2,1)", gts_update, &up_inc_take_2d, 2, { M34(-2, 2), GTD_IN(2, 2, 1, -2, 2) }, GG },
    { "TakeUpdate", "set rows [3,0,3,1] of (5,4) to a constant: repeated, x only", gts_update_const_y, &up_set_take_rep, 1, { GTD_IN(2, 5, 4, -2, 2) }, GG },
    { "TakeUpdate", "inc rows [3,0,3,1] of (5,4) by a constant", gts_update_const_y, &up_inc_take_rep, 1, { GTD_IN(2, 5, 4, -2, 2) }, GG },
    { "TakeUpdate", "inc columns [2,2,0] of (3,4) by sin(view) * (3,): repeated", gts_update_self, &up_inc_take_mid, 2, { M34(-2, 2), GTD_IN(1, 3, 0, -2, 2) }, GG },
    { "TakeUpdate", "set columns [2,0,3] of (3,4) to (3,1): broadcast", gts_update, &up_set_take_cols, 2, { M34(-2, 2), GTD_IN(2, 3, 1, -2, 2) }, GG },
    { "TakeUpdate", "set columns [2,0,3] of (3,4) to sin(view) * 0-d", gts_update_self, &up_set_take_cols, 2, { M34(-2, 2), S0(-2, 2) }, GG },
    GTD_END
};

GT_CASES(Slice) = { GT_VALUES(gts_op_Slice), GT_VALUES(test_slice_matches_python), GT_SPECS(specs_Slice), GT_ERRORS(test_slice_errors), GT_END };
GT_CASES(Index) = { GT_VALUES(gts_op_Index), GT_SPECS(specs_Index), GT_ERRORS(test_index_static_range), GT_END };
GT_CASES(Take) = { GT_VALUES(gts_op_Take), GT_SPECS(specs_Take), GT_ERRORS(test_take_errors), GT_END };
GT_CASES(ViewUpdate) = {
    GT_VALUES(gts_op_ViewUpdate),
    GT_VALUES(test_view_update_0d_int),
    GT_SPECS(specs_ViewUpdate),
    GT_ERRORS(test_update_errors),
    GT_END
};
/* gr_set_subtensor and gr_inc_subtensor make a ViewUpdate or a TakeUpdate by the view's kind, with
   the same checks: test_update_errors tries both kinds */
GT_CASES(TakeUpdate) = {
    GT_VALUES(gts_op_TakeUpdate),
    GT_SPECS(specs_TakeUpdate),
    GT_DERIVS(test_deriv_set_repeated),
    GT_ERRORS_WITH(ViewUpdate),
    GT_END
};
