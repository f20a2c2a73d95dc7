/* ops/index.c: Slice, Index, Take and their updates (gr_set_subtensor / gr_inc_subtensor).

   Shapes, with x of shape (*pre, n, *post) along `axis`:
     Slice  x[start:stop:step] -> (*pre, count, *post), NumPy's bounds (negative from the end,
            GR_OPEN for an open end, clamped);
     Index  x[i] -> (*pre, *post); i < 0 counts from the end;
     Take   x[indices] -> (*pre, *shape(indices), *post), I64 indices, negative from the end;
     ViewUpdate(x, y), TakeUpdate(x, y, indices) -> shape(x), y broadcast to the viewed part.
   Out-of-range indices are GR_ERR_RUNTIME at call time, naming the index. A contiguous Slice or
   Index (nothing before the axis, step 1) is a view: no copy. */

#ifndef GR_NO_INDEX                  /* ops/table.h, op families: the whole file */

typedef struct gr__view_params {
    int axis;
    int is_index;                /* Index: one position, the axis is removed */
    int inc;                     /* ViewUpdate: increment (1) or set (0) */
    int64_t start, stop, step;   /* Slice; Index keeps its position in start */
} gr__view_params;

typedef struct gr__take_params { int axis; int inc; } gr__take_params;

static const gr__view_params *gr__vp(const gr_node *node) { return (const gr__view_params *)gr__params(node); }

/* (outer, n, inner) of shape around axis */
static void gr__split_axis(int ndim, const int64_t *shape, int axis, int64_t *outer, int64_t *n, int64_t *inner) {
    int i;
    *outer = 1; *inner = 1; *n = shape[axis];
    for (i = 0; i < axis; i++) *outer *= shape[i];
    for (i = axis + 1; i < ndim; i++) *inner *= shape[i];
}

/* NumPy's slice of a length-n axis (Python's slice.indices): the first position and the count,
   for any int64 bounds and step (step != 0; GR_OPEN is an open end, and a step of 1). The bounds
   are clamped into [0, n] (step > 0) or [-1, n - 1] (step < 0) before anything is added, so
   nothing overflows: with step = INT64_MAX, x[0:n:step] has 1 element. */
static void gr__slice_resolve(int64_t n, int64_t start, int64_t stop, int64_t step, int64_t *first, int64_t *count) {
    int64_t a, b;
    if (step == GR_OPEN) step = 1;
    if (step > 0) {
        a = start == GR_OPEN ? 0 : start < 0 ? (start < -n ? 0 : start + n) : (start > n ? n : start);
        b = stop == GR_OPEN ? n : stop < 0 ? (stop < -n ? 0 : stop + n) : (stop > n ? n : stop);
        *count = a < b ? (b - a - 1) / step + 1 : 0;
    } else {
        a = start == GR_OPEN ? n - 1 : start < 0 ? (start < -n ? -1 : start + n) : (start > n - 1 ? n - 1 : start);
        b = stop == GR_OPEN ? -1 : stop < 0 ? (stop < -n ? -1 : stop + n) : (stop > n - 1 ? n - 1 : stop);
        *count = b < a ? (a - b - 1) / -step + 1 : 0;
    }
    *first = a;
}

/* the position of an Index along a length-n axis, or -1 when out of range */
/* GR_KERNEL gr__index_resolve */
static int64_t gr__index_resolve(int64_t n, int64_t i) {
    if (i < 0) i += n;
    return i >= 0 && i < n ? i : -1;
}
/* GR_KERNEL_END */

/* ---- building ------------------------------------------------------------------------------------- */

static gr_var *gr__view(const char *fname, gr_var *x, int axis, int is_index, int64_t start, int64_t stop, int64_t step) {
    gr__view_params p;
    gr_graph *g;
    int a;
    if (!gr__operands(fname, 1, &x, &g)) return NULL;
    if (x->ndim == 0) return gr__fail(g, GR_ERR_VALUE, "%s: %s is 0-d and has no axis to index", fname, gr__d(x).s);
    a = gr__axis(axis, x->ndim);
    if (a < 0) return gr__fail(g, GR_ERR_VALUE, "%s: axis %d out of range for %s with %d dimensions", fname, axis, gr__d(x).s, x->ndim);
    if (!is_index && step == 0) return gr__fail(g, GR_ERR_VALUE, "%s: the step of a slice of %s is zero", fname, gr__d(x).s);
    if (is_index && gr__vshape(x)[a] >= 0 && gr__index_resolve(gr__vshape(x)[a], start) < 0)   /* a static size: known now */
        return gr__fail(g, GR_ERR_VALUE, "%s: index %lld is out of range for axis %d of %s with size %lld", fname, (long long)start, a,
                        gr__d(x).s, (long long)gr__vshape(x)[a]);
    if (!is_index && step == GR_OPEN) step = 1;
    memset(&p, 0, sizeof p);
    p.axis = a;
    p.is_index = is_index;
    p.start = start;
    p.stop = stop;
    p.step = step;
    return gr__node1(g, is_index ? &gr__op_Index : &gr__op_Slice, &p, sizeof p, 1, &x);
}

GR_API gr_var *gr_slice(gr_var *x, int axis, int64_t start, int64_t stop, int64_t step) {
    return gr__view("gr_slice", x, axis, 0, start, stop, step);
}
GR_API gr_var *gr_index(gr_var *x, int axis, int64_t i) { return gr__view("gr_index", x, axis, 1, i, 0, 1); }

GR_API gr_var *gr_take(gr_var *x, gr_var *indices, int axis) {
    gr__take_params p;
    gr_var *args[2];
    gr_graph *g;
    int a;
    args[0] = x; args[1] = indices;
    if (!gr__operands("gr_take", 2, args, &g)) return NULL;
    if (x->ndim == 0) return gr__fail(g, GR_ERR_VALUE, "gr_take: %s is 0-d and has no axis to index", gr__d(x).s);
    a = gr__axis(axis, x->ndim);
    if (a < 0) return gr__fail(g, GR_ERR_VALUE, "gr_take: axis %d out of range for %s with %d dimensions", axis, gr__d(x).s, x->ndim);
    if (indices->dtype != GR_I64 && !gr__is_weak(indices))
        return gr__fail(g, GR_ERR_TYPE, "gr_take: the indices %s must be int64, not %s", gr__d(indices).s, gr_dtype_name((gr_dtype)indices->dtype));
    if (x->ndim - 1 + indices->ndim > GR_MAX_NDIM)
        return gr__fail(g, GR_ERR_VALUE, "gr_take: the result would have %d dimensions", x->ndim - 1 + indices->ndim);
    args[1] = gr__coerce(indices, GR_I64);
    memset(&p, 0, sizeof p);
    p.axis = a;
    return gr__node1(g, &gr__op_Take, &p, sizeof p, 2, args);
}

/* y must broadcast to the static shape of the view */
static int gr__fits_view(const gr_var *y, const gr_var *view) {
    int i, off = view->ndim - y->ndim;
    if (off < 0) return 0;
    for (i = 0; i < y->ndim; i++) {
        int64_t a = gr__vshape(y)[i], b = gr__vshape(view)[off + i];
        if (a >= 0 && a != 1 && b >= 0 && a != b) return 0;
    }
    return 1;
}

static gr_var *gr__update(const char *fname, gr_var *view, gr_var *y, int inc) {
    gr_var *args[3], *x;
    gr_graph *g;
    const gr_op_def *op;
    args[0] = view; args[1] = y;
    if (!gr__operands(fname, 2, args, &g)) return NULL;
    op = gr__owner(view) ? gr__owner(view)->op : NULL;
    if (op != &gr__op_Slice && op != &gr__op_Index && op != &gr__op_Take)
        return gr__fail(g, GR_ERR_VALUE, "%s: %s is not a view (a result of gr_slice, gr_index or gr_take)", fname, gr__d(view).s);
    if (!gr__fits_view(y, view))
        return gr__fail(g, GR_ERR_SHAPE, "%s: %s %s does not broadcast to the view %s %s", fname, gr__d(y).s, gr__vs(y).s,
                        gr__d(view).s, gr__vs(view).s);
    x = gr__in(gr__owner(view))[0];
    args[0] = x;
    args[1] = gr__coerce(y, x->dtype);
    if (!args[1]) return NULL;
    if (op == &gr__op_Take) {
        gr__take_params p = *(const gr__take_params *)gr__params(gr__owner(view));
        p.inc = inc;
        args[2] = gr__in(gr__owner(view))[1];
        return gr__node1(g, &gr__op_TakeUpdate, &p, sizeof p, 3, args);
    } else {
        gr__view_params p = *gr__vp(gr__owner(view));
        p.inc = inc;
        return gr__node1(g, &gr__op_ViewUpdate, &p, sizeof p, 2, args);
    }
}

GR_API gr_var *gr_set_subtensor(gr_var *view, gr_var *y) { return gr__update("gr_set_subtensor", view, y, 0); }
GR_API gr_var *gr_inc_subtensor(gr_var *view, gr_var *y) { return gr__update("gr_inc_subtensor", view, y, 1); }

/* ---- type and shape rules ----------------------------------------------------------------------- */

static gr_status gr__view_infer(const gr_node *node, gr_type *out) {
    const gr__view_params *p = gr__vp(node);
    gr_var *x = gr__in(node)[0];
    int i, m = 0;
    out->dtype = (gr_dtype)x->dtype;
    for (i = 0; i < x->ndim; i++) {
        if (i != p->axis) { out->shape[m++] = gr__vshape(x)[i]; continue; }
        if (p->is_index) continue;
        if (gr__vshape(x)[i] < 0) out->shape[m++] = -1;
        else {
            int64_t first, count;
            gr__slice_resolve(gr__vshape(x)[i], p->start, p->stop, p->step, &first, &count);
            out->shape[m++] = count;
        }
    }
    out->ndim = m;
    return GR_OK;
}

static gr_status gr__view_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__view_params *p = gr__vp(node);
    const gr_array *x = in[0];
    int i, m = 0;
    for (i = 0; i < x->ndim; i++) {
        if (i != p->axis) { out[0]->shape[m++] = x->shape[i]; continue; }
        if (p->is_index) {
            if (gr__index_resolve(x->shape[i], p->start) < 0)
                return gr_node_error(node, GR_ERR_RUNTIME, "index %lld is out of range for axis %d of %s with size %lld",
                                     (long long)p->start, i, gr__d(gr__in(node)[0]).s, (long long)x->shape[i]);
            continue;
        } else {
            int64_t first, count;
            gr__slice_resolve(x->shape[i], p->start, p->stop, p->step, &first, &count);
            out[0]->shape[m++] = count;
        }
    }
    return GR_OK;
}

/* first position, count and step of a view on x (an Index is a slice of one) */
static void gr__view_span(const gr__view_params *p, const gr_array *x, int64_t *first, int64_t *count, int64_t *step) {
    if (p->is_index) { *first = gr__index_resolve(x->shape[p->axis], p->start); *count = 1; *step = 1; return; }
    gr__slice_resolve(x->shape[p->axis], p->start, p->stop, p->step, first, count);
    *step = p->step == GR_OPEN ? 1 : p->step;
}

static gr_status gr__view_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[0];
    int64_t outer, n, inner, first, count, step, o, k;
    size_t es = gr__dsize(x->dtype);
    gr__split_axis(x->ndim, x->shape, gr__vp(node)->axis, &outer, &n, &inner);
    gr__view_span(gr__vp(node), x, &first, &count, &step);
    for (o = 0; o < outer; o++) {
        if (step == 1) {                                 /* one span of count rows */
            memcpy((char *)out[0]->data + (size_t)(o * count * inner) * es,
                   (const char *)x->data + (size_t)((o * n + first) * inner) * es, (size_t)(count * inner) * es);
            continue;
        }
        for (k = 0; k < count; k++)
            memcpy((char *)out[0]->data + (size_t)((o * count + k) * inner) * es,
                   (const char *)x->data + (size_t)((o * n + first + k * step) * inner) * es, (size_t)inner * es);
    }
    return GR_OK;
}
static gr_status gr__Slice_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) { return gr__view_perform(node, in, out); }
static gr_status gr__Index_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) { return gr__view_perform(node, in, out); }

/* contiguous views share x's memory */
static int64_t gr__view_alias(const gr_node *node, const gr_array *const *in, const gr_array *out) {
    int64_t outer, n, inner, first, count, step;
    (void)out;
    gr__split_axis(in[0]->ndim, in[0]->shape, gr__vp(node)->axis, &outer, &n, &inner);
    gr__view_span(gr__vp(node), in[0], &first, &count, &step);
    if (count == 0 || (outer != 1 && count * inner != 0) || (step != 1 && count > 1)) return -1;
    return (int64_t)((size_t)(first * inner) * gr__dsize(in[0]->dtype));
}

static gr_status gr__Take_infer(const gr_node *node, gr_type *out) {
    const gr__take_params *p = (const gr__take_params *)gr__params(node);
    gr_var *x = gr__in(node)[0], *idx = gr__in(node)[1];
    int i, m = 0;
    out->dtype = (gr_dtype)x->dtype;
    for (i = 0; i < p->axis; i++) out->shape[m++] = gr__vshape(x)[i];
    for (i = 0; i < idx->ndim; i++) out->shape[m++] = gr__vshape(idx)[i];
    for (i = p->axis + 1; i < x->ndim; i++) out->shape[m++] = gr__vshape(x)[i];
    out->ndim = m;
    return GR_OK;
}
static gr_status gr__Take_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__take_params *p = (const gr__take_params *)gr__params(node);
    int i, m = 0;
    for (i = 0; i < p->axis; i++) out[0]->shape[m++] = in[0]->shape[i];
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[m++] = in[1]->shape[i];
    for (i = p->axis + 1; i < in[0]->ndim; i++) out[0]->shape[m++] = in[0]->shape[i];
    return GR_OK;
}
/* checks every index; the first bad one is reported */
static gr_status gr__check_indices(const gr_node *node, const gr_array *idx, int64_t n, int axis) {
    const int64_t *ix = (const int64_t *)idx->data;
    int64_t t;
    for (t = 0; t < idx->size; t++)
        if (gr__index_resolve(n, ix[t]) < 0)
            return gr_node_error(node, GR_ERR_RUNTIME, "index %lld (entry %lld of %s) is out of range for axis %d of %s with size %lld",
                                 (long long)ix[t], (long long)t, gr__d(gr__in(node)[node->n_in - 1]).s, axis, gr__d(gr__in(node)[0]).s, (long long)n);
    return GR_OK;
}
static gr_status gr__Take_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__take_params *p = (const gr__take_params *)gr__params(node);
    const gr_array *x = in[0], *idx = in[1];
    const int64_t *ix = (const int64_t *)idx->data;
    int64_t outer, n, inner, o, t;
    size_t es = gr__dsize(x->dtype);
    gr_status st;
    gr__split_axis(x->ndim, x->shape, p->axis, &outer, &n, &inner);
    if ((st = gr__check_indices(node, idx, n, p->axis)) != GR_OK) return st;
    for (o = 0; o < outer; o++)
        for (t = 0; t < idx->size; t++)
            memcpy((char *)out[0]->data + (size_t)((o * idx->size + t) * inner) * es,
                   (const char *)x->data + (size_t)((o * n + gr__index_resolve(n, ix[t])) * inner) * es, (size_t)inner * es);
    return GR_OK;
}

/* ---- updates --------------------------------------------------------------------------------------
   out = x, then each element of the viewed part is set to (or incremented by) y's element, y
   broadcast to the view's shape. The view's elements are visited in row-major order, so with
   repeated indices the last write wins (set) and all writes add up (inc). */

/* element strides (0 where broadcast) of y against the view shape vshape */
static void gr__bcast_elem_strides(const gr_array *y, int nd, const int64_t *vshape, int64_t *st) {
    int i, off = nd - y->ndim;
    int64_t s = 1;
    for (i = nd - 1; i >= 0; i--) {
        int64_t len = i >= off ? y->shape[i - off] : 1;
        st[i] = len == 1 && vshape[i] != 1 ? 0 : (i >= off ? s : 0);
        if (i >= off) s *= len;
    }
}

/* one write of y's element yi into x's element xi, by dtype */
static void gr__update_elem(int dt, void *xd, int64_t xi, const void *yd, int64_t yi, int inc) {
    switch (dt) {
    case GR_F64: if (inc) ((double *)xd)[xi] += ((const double *)yd)[yi]; else ((double *)xd)[xi] = ((const double *)yd)[yi]; break;
    case GR_F32: if (inc) ((float *)xd)[xi] += ((const float *)yd)[yi]; else ((float *)xd)[xi] = ((const float *)yd)[yi]; break;
    case GR_I64:
        if (inc) ((int64_t *)xd)[xi] = (int64_t)((uint64_t)((int64_t *)xd)[xi] + (uint64_t)((const int64_t *)yd)[yi]);
        else ((int64_t *)xd)[xi] = ((const int64_t *)yd)[yi];
        break;
    default:
        if (inc) ((uint8_t *)xd)[xi] = (uint8_t)(((uint8_t *)xd)[xi] | ((const uint8_t *)yd)[yi]);
        else ((uint8_t *)xd)[xi] = ((const uint8_t *)yd)[yi];
        break;
    }
}

/* Writes y into the viewed part of out, x's (outer, n, inner) around the axis. The view's shape
   vshape is (*pre, *mid, *post): n_pre axes before x's axis, n_mid for it (1 for a slice, 0 for
   an index, the indices' ndim for a take), then x's axes after it. Row k of the view (k the flat
   index over the mid axes) is position idx ? idx[k] (negative from the end) : first + k * step of
   x's axis; y is broadcast to vshape. An odometer walks every axis but the last, whose run has
   constant strides, so nothing is divided per element. */
static void gr__scatter(const gr_array *y, gr_array *out, int inc, int64_t n, int64_t inner, const int64_t *idx,
                        int64_t first, int64_t step, int vnd, const int64_t *vshape, int n_pre, int n_mid) {
    int64_t yst[GR_MAX_NDIM], xst[GR_MAX_NDIM], kst[GR_MAX_NDIM], i_d[GR_MAX_NDIM], vsize = 1, run, runs, r, j;
    int d, last = vnd - 1;
    for (d = 0; d < vnd; d++) vsize *= vshape[d];
    if (vsize == 0) return;
    gr__bcast_elem_strides(y, vnd, vshape, yst);
    {   /* x strides of the pre and post axes, flat-k strides of the mid axes */
        int64_t s = 1;
        for (d = vnd - 1; d >= n_pre + n_mid; d--) { xst[d] = s; kst[d] = 0; s *= vshape[d]; }
        s = 1;
        for (d = n_pre + n_mid - 1; d >= n_pre; d--) { xst[d] = 0; kst[d] = s; s *= vshape[d]; }
        s = n * inner;
        for (d = n_pre - 1; d >= 0; d--) { xst[d] = s; kst[d] = 0; s *= vshape[d]; }
    }
    if (vnd == 0) { run = 1; runs = 1; }
    else { run = vshape[last]; runs = vsize / run; }
    for (d = 0; d < vnd; d++) i_d[d] = 0;
    for (r = 0; r < runs; r++) {
        int64_t xo = 0, ko = 0, yo = 0;
        for (d = 0; d < last; d++) { xo += i_d[d] * xst[d]; ko += i_d[d] * kst[d]; yo += i_d[d] * yst[d]; }
        if (vnd == 0 || kst[last] == 0 || !idx) {      /* constant strides along the run */
            int64_t pos = idx ? gr__index_resolve(n, idx[ko]) : first + ko * step;
            int64_t x0 = xo + pos * inner, ys = vnd ? yst[last] : 0;
            int64_t xs = vnd == 0 ? 0 : kst[last] ? step * inner : xst[last];   /* a slice moves by step rows */
#define GR__SCATTER_RUN(T) \
            { T *xd = (T *)out->data; const T *yd = (const T *)y->data; \
              if (xs == 1 && ys == 1) {                    /* a contiguous run (a unit-step slice): vectorised */ \
                  T *xr = xd + x0; const T *yr = yd + yo; \
                  if (inc) for (j = 0; j < run; j++) xr[j] += yr[j]; \
                  else for (j = 0; j < run; j++) xr[j] = yr[j]; \
              } else if (inc) for (j = 0; j < run; j++) xd[x0 + j * xs] += yd[yo + j * ys]; \
              else for (j = 0; j < run; j++) xd[x0 + j * xs] = yd[yo + j * ys]; }
            if (out->dtype == GR_F64) GR__SCATTER_RUN(double)
            else if (out->dtype == GR_F32) GR__SCATTER_RUN(float)
            else for (j = 0; j < run; j++) gr__update_elem(out->dtype, out->data, x0 + j * xs, y->data, yo + j * ys, inc);
#undef GR__SCATTER_RUN
        } else                                          /* the run moves along a take's indices */
            for (j = 0; j < run; j++) {
                int64_t k = ko + j * kst[last];
                int64_t pos = idx ? gr__index_resolve(n, idx[k]) : first + k * step;
                gr__update_elem(out->dtype, out->data, xo + pos * inner, y->data, yo + j * yst[last], inc);
            }
        for (d = last - 1; d >= 0; d--) { if (++i_d[d] < vshape[d]) break; i_d[d] = 0; }
    }
}

/* node increments a unit-step slice of a vector by a vector that has the slice's length in every
   call (a ViewUpdate with inc of a Slice along axis 0 of a 1-d x: what the gradient of x[a:b] puts
   into zeros; the lengths by the signatures, as gr__view_sig trims): 1 with its bounds, which
   gr__inc_slice_span resolves against x's length; 0 otherwise. Fusion (src/fuse.c) adds such a
   group's values into the vector in its pass. */
static int gr__inc_slice(gr__rewriter *rw, const gr_node *node, int64_t *start, int64_t *stop) {
    const gr__view_params *p;
    int32_t sx, sv;
    int64_t first, count, a, b;
    if (node->op != &gr__op_ViewUpdate) return 0;
    p = gr__vp(node);
    if (!p->inc || p->is_index || p->axis != 0 || (p->step != 1 && p->step != GR_OPEN) || gr__in(node)[0]->ndim != 1 ||
        gr__in(node)[1]->ndim != 1)
        return 0;
    sx = gr__sig(rw, gr__in(node)[0])[0];
    sv = gr__sig(rw, gr__in(node)[1])[0];
    a = p->start == GR_OPEN ? 0 : p->start;
    b = p->stop == GR_OPEN ? 0 : -p->stop;
    if (sx < 0) {                                    /* a static length: the slice's */
        gr__slice_resolve(-(int64_t)sx - 1, p->start, p->stop, 1, &first, &count);
        if (sv != GR__SIG_STATIC(count)) return 0;
    } else if (a < 0 || a >= ((int64_t)1 << 40) || b < 0 || b >= ((int64_t)1 << 40) || sv != gr__sig_trimmed(rw, sx, a + b))
        return 0;
    *start = p->start;
    *stop = p->stop;
    return 1;
}
static void gr__inc_slice_span(int64_t n, int64_t start, int64_t stop, int64_t *first, int64_t *count) {
    gr__slice_resolve(n, start, stop, 1, first, count);
}

static gr_status gr__ViewUpdate_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__view_params *p = gr__vp(node);
    const gr_array *x = in[0], *y = in[1];
    int64_t outer, n, inner, first, count, step, vshape[GR_MAX_NDIM];
    int i, vnd = 0;
    if (out[0]->data != x->data) memcpy(out[0]->data, x->data, (size_t)x->size * gr__dsize(x->dtype));
    gr__split_axis(x->ndim, x->shape, p->axis, &outer, &n, &inner);
    if (p->is_index && gr__index_resolve(n, p->start) < 0)
        return gr_node_error(node, GR_ERR_RUNTIME, "index %lld is out of range for axis %d of %s with size %lld",
                             (long long)p->start, p->axis, gr__d(gr__in(node)[0]).s, (long long)n);
    gr__view_span(p, x, &first, &count, &step);
    for (i = 0; i < x->ndim; i++) {
        if (i != p->axis) vshape[vnd++] = x->shape[i];
        else if (!p->is_index) vshape[vnd++] = count;
    }
    {   /* y must broadcast to the view */
        int off = vnd - y->ndim;
        for (i = 0; i < y->ndim; i++)
            if (off < 0 || (y->shape[i] != 1 && y->shape[i] != vshape[off + i])) {
                char b1[200];
                return gr_node_error(node, GR_ERR_SHAPE, "%s of shape %s does not broadcast to the viewed part %s of %s",
                                     gr__d(gr__in(node)[1]).s, gr__as(y).s, gr__shape_str(b1, sizeof b1, vnd, vshape), gr__d(gr__in(node)[0]).s);
            }
    }
    gr__scatter(y, out[0], p->inc, n, inner, NULL, first, step, vnd, vshape, p->axis, p->is_index ? 0 : 1);
    return GR_OK;
}

static gr_status gr__TakeUpdate_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__take_params *p = (const gr__take_params *)gr__params(node);
    const gr_array *x = in[0], *y = in[1], *idx = in[2];
    int64_t outer, n, inner, vshape[GR_MAX_NDIM];
    int i, vnd = 0;
    gr_status st;
    if (out[0]->data != x->data) memcpy(out[0]->data, x->data, (size_t)x->size * gr__dsize(x->dtype));
    gr__split_axis(x->ndim, x->shape, p->axis, &outer, &n, &inner);
    if ((st = gr__check_indices(node, idx, n, p->axis)) != GR_OK) return st;
    for (i = 0; i < p->axis; i++) vshape[vnd++] = x->shape[i];
    for (i = 0; i < idx->ndim; i++) vshape[vnd++] = idx->shape[i];
    for (i = p->axis + 1; i < x->ndim; i++) vshape[vnd++] = x->shape[i];
    {
        int off = vnd - y->ndim;
        for (i = 0; i < y->ndim; i++)
            if (off < 0 || (y->shape[i] != 1 && y->shape[i] != vshape[off + i])) {
                char b1[200];
                return gr_node_error(node, GR_ERR_SHAPE, "%s of shape %s does not broadcast to the viewed part %s of %s",
                                     gr__d(gr__in(node)[1]).s, gr__as(y).s, gr__shape_str(b1, sizeof b1, vnd, vshape), gr__d(gr__in(node)[0]).s);
            }
    }
    gr__scatter(y, out[0], p->inc, n, inner, (const int64_t *)idx->data, 0, 1, vnd, vshape, p->axis, idx->ndim);
    return GR_OK;
}

/* ---- rewrite rules (src/rewrite.h) ------------------------------------------------------------------ */

/* a view's signature: the other axes keep their symbols, an Index's axis goes; a unit step from a
   start >= 0 to a stop < 0 (or open ends) trims a + b rows, the same for every slice trimming as many */
static void gr__view_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    const gr__view_params *p = gr__vp(node);
    int32_t s[GR_MAX_NDIM];
    int i, m = 0;
    gr__sig_copy(rw, gr__in(node)[0], s);
    for (i = 0; i < gr__in(node)[0]->ndim; i++) {
        if (i != p->axis) { out[m++] = s[i]; continue; }
        if (p->is_index) continue;
        if (s[i] >= 0 && p->step == 1 && (p->start == GR_OPEN || (p->start >= 0 && p->start < ((int64_t)1 << 40))) &&
            (p->stop == GR_OPEN || (p->stop < 0 && p->stop > -((int64_t)1 << 40))))
            out[m] = gr__sig_trimmed(rw, s[i], (p->start == GR_OPEN ? 0 : p->start) + (p->stop == GR_OPEN ? 0 : -p->stop));
        m++;
    }
}

/* a view's start when its columns move a banded matrix's diagonals: a unit step from a start >= 0;
   -1 otherwise */
static int64_t gr__view_unit_start(const gr__view_params *vp) {
    int64_t s0 = vp->start == GR_OPEN ? 0 : vp->start;
    return !vp->is_index && vp->step == 1 && s0 >= 0 && s0 < ((int64_t)1 << 40) ? s0 : -1;
}

/* a slice of a scalar's fill is the fill of the slice (a view: so zeros and ones stay recognisable
   through slices, and the filled array shrinks); columns s, s+1, ... of a banded matrix: its
   diagonals' elements from s on, offsets down by s */
static gr_var *gr__Slice_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    const gr__view_params *vp = (const gr__view_params *)params;
    gr__view_params cp;
    gr_var *r, *ref = NULL, *f = gr__rw_filled(in[0], &ref);
    int64_t s0 = gr__view_unit_start(vp);
    if (f && f->ndim == 0) {
        r = gr__rw1(rw, op, vp, sizeof *vp, 1, &ref);
        return gr__replaced(done, r ? gr__rw_fill(rw, f, r) : NULL);
    }
    if (!gr__banded_n(in[0]) || !(vp->axis == 1 || vp->axis == -1) || s0 < 0) return NULL;
    cp = *vp;
    cp.axis = 0;
    (void)op;
    r = gr__banded_cols(rw, in[0], &cp, s0);
    return r || rw->cg->status != GR_OK ? gr__replaced(done, r) : NULL;
}

/* x + (zeros with y added at a view) -> x with y added at that view: one pass, in place */
static gr_var *gr__update_into_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    int k;
    (void)row;
    for (k = 0; k < 2; k++) {
        gr_var *u = in[k], *x = in[1 - k], *z = NULL, *args[3];
        const gr_node *n = gr__owner(u);
        if (!n || !(n->op == &gr__op_ViewUpdate || n->op == &gr__op_TakeUpdate)) continue;
        if (n->op == &gr__op_ViewUpdate && !gr__vp(n)->inc) continue;
        if (n->op == &gr__op_TakeUpdate && !((const gr__take_params *)gr__params(n))->inc) continue;
        if (!gr__rw_zeros(gr__in(n)[0], &z) || !gr__sig_same(rw, x, u) || x->dtype != u->dtype) continue;
        args[0] = x; args[1] = gr__in(n)[1];
        if (n->n_in == 3) args[2] = gr__in(n)[2];
        return gr__replaced(done, gr__rw1(rw, n->op, gr__params(n), n->params_size, n->n_in, args));
    }
    return NULL;
}

/* ---- derivative rules --------------------------------------------------------------------------- */

/* x's view, rebuilt with the params of node (a Slice, Index or a ViewUpdate) */
static gr_var *gr__view_like(const gr_node *node, gr_var *x) {
    gr__view_params p = *gr__vp(node);
    p.inc = 0;
    return gr__node1(node->graph, p.is_index ? &gr__op_Index : &gr__op_Slice, &p, sizeof p, 1, &x);
}
static gr_var *gr__view_update(const gr_node *node, gr_var *x, gr_var *y, int inc) {
    gr__view_params p = *gr__vp(node);
    gr_var *args[2];
    p.inc = inc;
    args[0] = x; args[1] = y;
    return gr__node1(node->graph, &gr__op_ViewUpdate, &p, sizeof p, 2, args);
}
static gr_var *gr__take_like(const gr_node *node, gr_var *x, gr_var *idx) {
    gr__take_params p = *(const gr__take_params *)gr__params(node);
    gr_var *args[2];
    p.inc = 0;
    args[0] = x; args[1] = idx;
    return gr__node1(node->graph, &gr__op_Take, &p, sizeof p, 2, args);
}
static gr_var *gr__take_update(const gr_node *node, gr_var *x, gr_var *y, gr_var *idx, int inc) {
    gr__take_params p = *(const gr__take_params *)gr__params(node);
    gr_var *args[3];
    p.inc = inc;
    args[0] = x; args[1] = y; args[2] = idx;
    return gr__node1(node->graph, &gr__op_TakeUpdate, &p, sizeof p, 3, args);
}

/* the gradient of a view: zeros shaped like x with gz added at the view */
static gr_status gr__view_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr__view_update(node, gr__zeros_grad(gr__in(node)[0]), og[0], 1);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Slice_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { return gr__view_grad(node, og, ig); }
static gr_status gr__Index_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { return gr__view_grad(node, og, ig); }
static gr_status gr__view_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__view_like(node, ev[0]);
    return orop[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Slice_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) { return gr__view_rop(node, ev, orop); }
static gr_status gr__Index_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) { return gr__view_rop(node, ev, orop); }

static gr_status gr__Take_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr__take_update(node, gr__zeros_grad(gr__in(node)[0]), og[0], gr__in(node)[1], 1);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__Take_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__take_like(node, ev[0], gr__in(node)[1]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* inc: x gets gz, y gets gz at the view (summed over y's broadcasting); set: x gets gz with the
   view zeroed, y the same as inc */
static gr_status gr__ViewUpdate_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0], *y = gr__in(node)[1];
    if (!gr__is_float(x->dtype)) { ig[0] = gr__zeros_grad(x); ig[1] = gr__zeros_grad(y); }
    else {
        ig[0] = gr__vp(node)->inc ? og[0] : gr__view_update(node, og[0], gr__scalar_const(node->graph, og[0]->dtype, 0.0, 0), 0);
        ig[1] = gr__sum_to(gr__view_like(node, og[0]), y);
    }
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__ViewUpdate_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *vx = ev[0], *vy = ev[1];
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || (gr_is_disconnected(vx) && gr_is_disconnected(vy))) return GR_OK;
    if (gr_is_disconnected(vx)) vx = gr__zeros_grad(gr__in(node)[0]);
    if (gr_is_disconnected(vy)) vy = gr__scalar_const(node->graph, gr__out(node)[0]->dtype, 0.0, 0);
    orop[0] = gr__view_update(node, vx, vy, gr__vp(node)->inc);
    return orop[0] ? GR_OK : node->graph->status;
}
static gr_status gr__TakeUpdate_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0], *y = gr__in(node)[1], *idx = gr__in(node)[2];
    const gr__take_params *p = (const gr__take_params *)gr__params(node);
    if (!gr__is_float(x->dtype)) { ig[0] = gr__zeros_grad(x); ig[1] = gr__zeros_grad(y); }
    else {
        ig[0] = p->inc ? og[0] : gr__take_update(node, og[0], gr__scalar_const(node->graph, og[0]->dtype, 0.0, 0), idx, 0);
        ig[1] = gr__sum_to(gr__take_like(node, og[0], idx), y);
    }
    ig[2] = gr_disconnected_like(idx);
    return ig[0] && ig[1] && ig[2] ? GR_OK : node->graph->status;
}
static gr_status gr__TakeUpdate_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *vx = ev[0], *vy = ev[1];
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || (gr_is_disconnected(vx) && gr_is_disconnected(vy))) return GR_OK;
    if (gr_is_disconnected(vx)) vx = gr__zeros_grad(gr__in(node)[0]);
    if (gr_is_disconnected(vy)) vy = gr__scalar_const(node->graph, gr__out(node)[0]->dtype, 0.0, 0);
    orop[0] = gr__take_update(node, vx, vy, gr__in(node)[2], ((const gr__take_params *)gr__params(node))->inc);
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- batching: the axis moves one to the right ---------------------------------------------- */

static gr_status gr__view_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr__view_params p = *gr__vp(node);
    (void)batched;
    p.axis += 1;
    out[0] = gr__node1(node->graph, node->op, &p, sizeof p, 1, in);
    return out[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Take_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr__take_params p = *(const gr__take_params *)gr__params(node);
    if (batched[1]) return gr__map_batch(node, in, batched, out);
    p.axis += 1;
    out[0] = gr__node1(node->graph, node->op, &p, sizeof p, 2, in);
    return out[0] ? GR_OK : node->graph->status;
}

/* ---- C code generation (gr_fn_emit_c): copies and scatters in perform's order ----------------------- */

/* Slice, Index (when not views): the (outer, count, inner) rows gathered from x */
static gr_status gr__view_emit(gr__em *e, const gr_node *node, const gr_array *const *in) {
    const gr_array *x = in[0];
    int64_t outer, n, inner, first, count, step, shape[3], st[3];
    char xs[GR__MSG];
    gr__split_axis(x->ndim, x->shape, gr__vp(node)->axis, &outer, &n, &inner);
    gr__view_span(gr__vp(node), x, &first, &count, &step);
    shape[0] = outer; shape[1] = count; shape[2] = inner;
    st[0] = n * inner; st[1] = step * inner; st[2] = 1;
    snprintf(xs, sizeof xs, "(%s + %lld)", gr__em_in(e, 0), (long long)(first * inner));
    gr__em_gather(e, x->dtype, 3, shape, st, xs, gr__em_out(e, 0));
    return GR_OK;
}
static gr_status gr__Slice_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)out;
    return gr__view_emit(e, node, in);
}
static gr_status gr__Index_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)out;
    return gr__view_emit(e, node, in);
}
/* every index checked (GR_ERR_RUNTIME on the first out of range), as gr__check_indices */
static void gr__indices_emit(gr__em *e, const gr_array *idx, int64_t n, const char *ix) {
    gr__em_kernel(e, "gr__index_resolve");
    if (idx->size)
        gr__em_line(e, "for (size_t t = 0; t < %lld; t++) if (gr__index_resolve(%lld, %s[t]) < 0) return %d;", (long long)idx->size,
                    (long long)n, ix, (int)GR_ERR_RUNTIME);
}
static gr_status gr__Take_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr__take_params *p = (const gr__take_params *)gr__params(node);
    const gr_array *x = in[0], *idx = in[1];
    int64_t outer, n, inner;
    size_t row;
    gr__split_axis(x->ndim, x->shape, p->axis, &outer, &n, &inner);
    row = (size_t)inner * gr__dsize(x->dtype);
    gr__em_line(e, "{");
    gr__em_line(e, "const int64_t *ix = %s;", gr__em_in(e, 1));
    gr__indices_emit(e, idx, n, "ix");
    if (out[0]->size) {
        gr__em_line(e, "const char *x = (const char *)%s;", gr__em_in(e, 0));
        gr__em_line(e, "char *y = (char *)%s;", gr__em_out(e, 0));
        gr__em_line(e, "for (size_t o = 0; o < %lld; o++)", (long long)outer);
        gr__em_line(e, "    for (size_t t = 0; t < %lld; t++) memcpy(y + (o * %lld + t) * %lu, x + (o * %lld + (size_t)gr__index_resolve(%lld, ix[t])) * %lu, %lu);",
                    (long long)idx->size, (long long)idx->size, (unsigned long)row, (long long)n, (long long)n, (unsigned long)row, (unsigned long)row);
    }
    gr__em_line(e, "}");
    return GR_OK;
}

/* out = x (unless in place), then y written into the view of shape vshape (n_pre axes before x's
   axis, n_mid for it, the rest after), element by element in row-major order: x's position along
   the axis is first + k step (ix: NULL), or the index ix[k] (k: the flat index over the mid axes) */
static void gr__scatter_emit(gr__em *e, const gr_array *const *in, const gr_array *const *out, int inc, int64_t n, int64_t inner,
                             const char *ix, int64_t first, int64_t step, int vnd, const int64_t *vshape, int n_pre, int n_mid) {
    const gr_array *x = in[0], *y = in[1];
    const char *T = gr__em_ctype(x->dtype);
    int64_t yst[GR_MAX_NDIM], xst[GR_MAX_NDIM], kst[GR_MAX_NDIM], s = 1, vsize = 1;
    char xi[900], yi[300], a[1300];                   /* (the frame stays small: test-small) */
    int d, nl;
    for (d = 0; d < vnd; d++) vsize *= vshape[d];
    gr__bcast_elem_strides(y, vnd, vshape, yst);
    for (d = vnd - 1; d >= n_pre + n_mid; d--) { xst[d] = s; kst[d] = 0; s *= vshape[d]; }
    s = 1;
    for (d = n_pre + n_mid - 1; d >= n_pre; d--) { xst[d] = ix ? 0 : step * inner; kst[d] = s; s *= vshape[d]; }
    s = n * inner;
    for (d = n_pre - 1; d >= 0; d--) { xst[d] = s; kst[d] = 0; s *= vshape[d]; }
    gr__em_line(e, "{");
    gr__em_line(e, "%s *xo = %s;", T, gr__em_out(e, 0));
    gr__em_line(e, "const %s *yv = %s;", T, gr__em_in(e, 1));
    if (x->size) gr__em_line(e, "if ((const void *)xo != (const void *)%s) memcpy(xo, %s, %lu);", gr__em_in(e, 0), gr__em_in(e, 0),
                             (unsigned long)((size_t)x->size * gr__dsize(x->dtype)));
    if (vsize == 0) gr__em_line(e, "(void)yv;");
    if (vsize > 0) {
        nl = gr__em_open(e, vnd, vshape);
        if (ix) snprintf(xi, sizeof xi, "%s + (size_t)gr__index_resolve(%lld, %s[%s]) * %lld", gr__em_index(e, vnd, vshape, xst), (long long)n, ix,
                         gr__em_index(e, vnd, vshape, kst), (long long)inner);
        else snprintf(xi, sizeof xi, "%lld + %s", (long long)(first * inner), gr__em_index(e, vnd, vshape, xst));
        snprintf(yi, sizeof yi, "%s", gr__em_index(e, vnd, vshape, yst));
        if (!inc) snprintf(a, sizeof a, "yv[%s]", yi);
        else if (x->dtype == GR_I64) snprintf(a, sizeof a, "(int64_t)((uint64_t)xo[%s] + (uint64_t)yv[%s])", xi, yi);
        else if (x->dtype == GR_BOOL) snprintf(a, sizeof a, "(uint8_t)(xo[%s] | yv[%s])", xi, yi);
        else snprintf(a, sizeof a, "xo[%s] + yv[%s]", xi, yi);
        gr__em_line(e, "xo[%s] = %s;", xi, a);
        gr__em_close(e, nl);
    }
    gr__em_line(e, "}");
    (void)out;
}
static gr_status gr__ViewUpdate_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr__view_params *p = gr__vp(node);
    const gr_array *x = in[0];
    int64_t outer, n, inner, first, count, step, vshape[GR_MAX_NDIM];
    int i, vnd = 0;
    gr__split_axis(x->ndim, x->shape, p->axis, &outer, &n, &inner);
    if (p->is_index && gr__index_resolve(n, p->start) < 0) {     /* fails at every call */
        gr__em_line(e, "return %d;", (int)GR_ERR_RUNTIME);
        return GR_OK;
    }
    gr__view_span(p, x, &first, &count, &step);
    for (i = 0; i < x->ndim; i++) {
        if (i != p->axis) vshape[vnd++] = x->shape[i];
        else if (!p->is_index) vshape[vnd++] = count;
    }
    gr__scatter_emit(e, in, out, p->inc, n, inner, NULL, first, step, vnd, vshape, p->axis, p->is_index ? 0 : 1);
    return GR_OK;
}
static gr_status gr__TakeUpdate_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr__take_params *p = (const gr__take_params *)gr__params(node);
    const gr_array *x = in[0], *idx = in[2];
    int64_t outer, n, inner, vshape[GR_MAX_NDIM];
    int i, vnd = 0;
    gr__split_axis(x->ndim, x->shape, p->axis, &outer, &n, &inner);
    for (i = 0; i < p->axis; i++) vshape[vnd++] = x->shape[i];
    for (i = 0; i < idx->ndim; i++) vshape[vnd++] = idx->shape[i];
    for (i = p->axis + 1; i < x->ndim; i++) vshape[vnd++] = x->shape[i];
    gr__em_line(e, "{");
    gr__em_line(e, "const int64_t *ix = %s;", gr__em_in(e, 2));
    gr__indices_emit(e, idx, n, "ix");
    if (!idx->size) gr__em_line(e, "(void)ix;");
    gr__scatter_emit(e, in, out, p->inc, n, inner, "ix", 0, 1, vnd, vshape, p->axis, idx->ndim);
    gr__em_line(e, "}");
    return GR_OK;
}
#endif /* GR_NO_INDEX */
