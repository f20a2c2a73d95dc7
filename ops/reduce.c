/* ops/reduce.c: Sum, Mean, Prod, Max, Min over a set of axes, with keepdims.

   Shapes: x (d0, ..., dn-1) -> y with the reduced axes removed (or kept as 1 with keepdims).
   Params: a bit mask of the reduced axes. Integer sums and products stay I64 (BOOL counts as I64),
   Max/Min keep the dtype, Mean is float (F64 for integers). */

typedef struct gr__reduce_params { uint32_t mask; int keepdims; } gr__reduce_params;

static gr_var *gr__reduce(const char *fname, const gr_op_def *op, gr_var *x, int n, const int *axes, int keepdims) {
    gr__reduce_params p;
    gr_graph *g;
    int k;
    if (!gr__operands(fname, 1, &x, &g)) return NULL;
    memset(&p, 0, sizeof p);
    if (n < 0) return gr__fail(g, GR_ERR_VALUE, "%s: negative number of axes (%d) for %s", fname, n, gr__d(x).s);
    if (n > 0 && !axes) return gr__fail(g, GR_ERR_VALUE, "%s: axes is NULL for %s", fname, gr__d(x).s);
    for (k = 0; k < n; k++) {
        int a = gr__axis(axes[k], x->ndim);
        if (a < 0)
            return gr__fail(g, GR_ERR_VALUE, "%s: axis %d out of range for %s with %d dimensions", fname, axes[k],
                            gr__d(x).s, x->ndim);
        if (p.mask & (1u << a)) return gr__fail(g, GR_ERR_VALUE, "%s: axis %d repeated for %s", fname, axes[k], gr__d(x).s);
        p.mask |= 1u << a;
    }
    if (n == 0) p.mask = x->ndim ? (uint32_t)((1u << x->ndim) - 1u) : 0u;
    p.keepdims = keepdims ? 1 : 0;
    if (x->dtype == GR_BOOL && (op == &gr__op_Sum || op == &gr__op_Prod)) x = gr_cast(x, GR_I64);
    return gr__node1(g, op, &p, sizeof p, 1, &x);
}

GR_API gr_var *gr_sum_axes(gr_var *x, int n, const int *axes, int keepdims) { return gr__reduce("gr_sum_axes", &gr__op_Sum, x, n, axes, keepdims); }
GR_API gr_var *gr_mean_axes(gr_var *x, int n, const int *axes, int keepdims) { return gr__reduce("gr_mean_axes", &gr__op_Mean, x, n, axes, keepdims); }
GR_API gr_var *gr_prod_axes(gr_var *x, int n, const int *axes, int keepdims) { return gr__reduce("gr_prod_axes", &gr__op_Prod, x, n, axes, keepdims); }
GR_API gr_var *gr_max_axes(gr_var *x, int n, const int *axes, int keepdims) { return gr__reduce("gr_max_axes", &gr__op_Max, x, n, axes, keepdims); }
GR_API gr_var *gr_min_axes(gr_var *x, int n, const int *axes, int keepdims) { return gr__reduce("gr_min_axes", &gr__op_Min, x, n, axes, keepdims); }
GR_API gr_var *gr_sum(gr_var *x) { return gr__reduce("gr_sum", &gr__op_Sum, x, 0, NULL, 0); }
GR_API gr_var *gr_mean(gr_var *x) { return gr__reduce("gr_mean", &gr__op_Mean, x, 0, NULL, 0); }
GR_API gr_var *gr_prod(gr_var *x) { return gr__reduce("gr_prod", &gr__op_Prod, x, 0, NULL, 0); }
GR_API gr_var *gr_max(gr_var *x) { return gr__reduce("gr_max", &gr__op_Max, x, 0, NULL, 0); }
GR_API gr_var *gr_min(gr_var *x) { return gr__reduce("gr_min", &gr__op_Min, x, 0, NULL, 0); }
GR_API gr_var *gr_sum_axis(gr_var *x, int axis) { return gr__reduce("gr_sum_axis", &gr__op_Sum, x, 1, &axis, 0); }
GR_API gr_var *gr_mean_axis(gr_var *x, int axis) { return gr__reduce("gr_mean_axis", &gr__op_Mean, x, 1, &axis, 0); }
GR_API gr_var *gr_prod_axis(gr_var *x, int axis) { return gr__reduce("gr_prod_axis", &gr__op_Prod, x, 1, &axis, 0); }
GR_API gr_var *gr_max_axis(gr_var *x, int axis) { return gr__reduce("gr_max_axis", &gr__op_Max, x, 1, &axis, 0); }
GR_API gr_var *gr_min_axis(gr_var *x, int axis) { return gr__reduce("gr_min_axis", &gr__op_Min, x, 1, &axis, 0); }

static const gr__reduce_params *gr__rp(const gr_node *node) { return (const gr__reduce_params *)node->params; }

static gr_status gr__reduce_infer(const gr_node *node, gr_type *out) {
    const gr_var *x = node->in[0];
    const gr__reduce_params *p = gr__rp(node);
    int i, m = 0;
    out->dtype = (gr_dtype)x->dtype;
    if (node->op == &gr__op_Mean && !gr__is_float(x->dtype)) out->dtype = GR_F64;
    for (i = 0; i < x->ndim; i++) {
        if (p->mask & (1u << i)) { if (p->keepdims) out->shape[m++] = 1; }
        else out->shape[m++] = x->shape[i];
    }
    out->ndim = m;
    return GR_OK;
}

static gr_status gr__reduce_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__reduce_params *p = gr__rp(node);
    int64_t count = 1, rest = 1;
    int i, m = 0;
    for (i = 0; i < in[0]->ndim; i++) {
        if (p->mask & (1u << i)) {
            count *= in[0]->shape[i];
            if (p->keepdims) out[0]->shape[m++] = 1;
        } else {
            rest *= in[0]->shape[i];
            out[0]->shape[m++] = in[0]->shape[i];
        }
    }
    if (count == 0 && rest > 0 && (node->op == &gr__op_Max || node->op == &gr__op_Min))
        return gr_node_error(node, GR_ERR_RUNTIME, "reduction over an empty axis of %s has no identity", gr__d(node->in[0]).s);
    return GR_OK;
}

/* The reduction as alternating groups of kept and reduced axes (axes of size 1 dropped, neighbours
   of the same kind merged), so a sum over the last axis is one (K, R) loop and over the first
   axis one (R, K) loop. */
typedef struct gr__rgroups {
    int n;
    int64_t len[GR_MAX_NDIM];
    int red[GR_MAX_NDIM];
    int64_t ist[GR_MAX_NDIM], ost[GR_MAX_NDIM];   /* element strides in input and output */
    int64_t out_size, count;                      /* output elements; elements reduced into each */
} gr__rgroups;

static void gr__rgroups_init(gr__rgroups *G, int ndim, const int64_t *shape, uint32_t mask) {
    int i, k;
    int64_t s;
    G->n = 0; G->out_size = 1; G->count = 1;
    for (i = 0; i < ndim; i++) {
        int r = (mask >> i) & 1u;
        if (r) G->count *= shape[i]; else G->out_size *= shape[i];
        if (shape[i] == 1) continue;
        if (G->n > 0 && G->red[G->n - 1] == r) G->len[G->n - 1] *= shape[i];
        else { G->len[G->n] = shape[i]; G->red[G->n] = r; G->n++; }
    }
    s = 1;
    for (k = G->n - 1; k >= 0; k--) { G->ist[k] = s; s *= G->len[k]; }
    s = 1;
    for (k = G->n - 1; k >= 0; k--) {
        if (G->red[k]) G->ost[k] = 0;
        else { G->ost[k] = s; s *= G->len[k]; }
    }
}

#define GR__C_SUM(a, b) ((a) + (b))
#define GR__C_PROD(a, b) ((a) * (b))
#define GR__C_MAX(a, b) (((a) != (a) || (a) > (b)) ? (a) : (b))
#define GR__C_MIN(a, b) (((a) != (a) || (a) < (b)) ? (a) : (b))
#define GR__C_IMAX(a, b) ((a) > (b) ? (a) : (b))
#define GR__C_IMIN(a, b) ((a) < (b) ? (a) : (b))

/* fn(G, in, out): out = identity, then every input element combined into its output element;
   TA is the accumulator of an innermost reduced run */
#define GR__RED_KERNEL(fn, TI, TO, TA, INIT, COMB) \
    static void fn(const gr__rgroups *G, const void *in_, void *out_) { \
        const TI *in = (const TI *)in_; TO *out = (TO *)out_; \
        int64_t i, idx[GR_MAX_NDIM], outer = 1, r, inner; \
        int k, last = G->n - 1; \
        for (i = 0; i < G->out_size; i++) out[i] = (TO)(INIT); \
        if (G->out_size == 0 || G->count == 0) return; \
        if (G->n == 0) { out[0] = (TO)COMB((TA)(INIT), (TA)in[0]); return; } \
        for (k = 0; k < last; k++) { idx[k] = 0; outer *= G->len[k]; } \
        inner = G->len[last]; \
        for (r = 0; r < outer; r++) { \
            int64_t io = 0, oo = 0; \
            for (k = 0; k < last; k++) { io += idx[k] * G->ist[k]; oo += idx[k] * G->ost[k]; } \
            if (G->red[last]) { \
                TA acc = (TA)out[oo]; \
                for (i = 0; i < inner; i++) acc = COMB(acc, (TA)in[io + i]); \
                out[oo] = (TO)acc; \
            } else { \
                for (i = 0; i < inner; i++) out[oo + i] = (TO)COMB((TA)out[oo + i], (TA)in[io + i]); \
            } \
            for (k = last - 1; k >= 0; k--) { if (++idx[k] < G->len[k]) break; idx[k] = 0; } \
        } \
    }

GR__RED_KERNEL(gr__red_sum_f64, double, double, double, 0, GR__C_SUM)
GR__RED_KERNEL(gr__red_sum_f32, float, float, double, 0, GR__C_SUM)
/* integer sums and products accumulate in uint64_t: they wrap modulo 2^64 like NumPy's, where
   int64_t arithmetic would overflow (undefined behaviour) */
GR__RED_KERNEL(gr__red_sum_i64, int64_t, int64_t, uint64_t, 0, GR__C_SUM)
GR__RED_KERNEL(gr__red_sum_i64_f64, int64_t, double, double, 0, GR__C_SUM)
GR__RED_KERNEL(gr__red_sum_b8_f64, uint8_t, double, double, 0, GR__C_SUM)
GR__RED_KERNEL(gr__red_prod_f64, double, double, double, 1, GR__C_PROD)
GR__RED_KERNEL(gr__red_prod_f32, float, float, double, 1, GR__C_PROD)
GR__RED_KERNEL(gr__red_prod_i64, int64_t, int64_t, uint64_t, 1, GR__C_PROD)
GR__RED_KERNEL(gr__red_max_f64, double, double, double, -INFINITY, GR__C_MAX)
GR__RED_KERNEL(gr__red_max_f32, float, float, float, -INFINITY, GR__C_MAX)
GR__RED_KERNEL(gr__red_max_i64, int64_t, int64_t, int64_t, INT64_MIN, GR__C_IMAX)
GR__RED_KERNEL(gr__red_max_b8, uint8_t, uint8_t, int, 0, GR__C_IMAX)
GR__RED_KERNEL(gr__red_min_f64, double, double, double, INFINITY, GR__C_MIN)
GR__RED_KERNEL(gr__red_min_f32, float, float, float, INFINITY, GR__C_MIN)
GR__RED_KERNEL(gr__red_min_i64, int64_t, int64_t, int64_t, INT64_MAX, GR__C_IMIN)
GR__RED_KERNEL(gr__red_min_b8, uint8_t, uint8_t, int, 1, GR__C_IMIN)

typedef void (*gr__red_kernel)(const gr__rgroups *G, const void *in, void *out);

/* sums x over the axes in mask into out, an array of the kept shape: F64 (from any dtype), or F32
   from F32, or I64 from I64 */
static void gr__reduce_sum_into(const gr_array *x, uint32_t mask, gr_array *out) {
    gr__rgroups G;
    gr__red_kernel k;
    GR_ASSERT(out->dtype == GR_F64 || out->dtype == x->dtype);
    GR_ASSERT(out->dtype != GR_BOOL);
    gr__rgroups_init(&G, x->ndim, x->shape, mask);
    if (out->dtype == GR_F32) k = gr__red_sum_f32;
    else if (out->dtype == GR_I64) k = gr__red_sum_i64;
    else if (x->dtype == GR_I64) k = gr__red_sum_i64_f64;
    else if (x->dtype == GR_BOOL) k = gr__red_sum_b8_f64;
    else k = gr__red_sum_f64;
    k(&G, x->data, out->data);
}

static gr_status gr__reduce_perform(const gr_node *node, const gr_array *x, gr_array *y) {
    const gr__reduce_params *p = gr__rp(node);
    gr__rgroups G;
    gr__red_kernel k = NULL;
    int dt = x->dtype;
    gr__rgroups_init(&G, x->ndim, x->shape, p->mask);
    switch (node->op->code) {
    case GR__OP_Sum:
    case GR__OP_Mean:
        gr__reduce_sum_into(x, p->mask, y);
        if (node->op->code == GR__OP_Mean) {
            int64_t i;
            double inv = G.count ? 1.0 / (double)G.count : NAN;
            if (y->dtype == GR_F32) for (i = 0; i < y->size; i++) ((float *)y->data)[i] = (float)(((float *)y->data)[i] * inv);
            else for (i = 0; i < y->size; i++) ((double *)y->data)[i] *= inv;
        }
        return GR_OK;
    case GR__OP_Prod: k = dt == GR_F64 ? gr__red_prod_f64 : dt == GR_F32 ? gr__red_prod_f32 : gr__red_prod_i64; break;
    case GR__OP_Max: k = dt == GR_F64 ? gr__red_max_f64 : dt == GR_F32 ? gr__red_max_f32 : dt == GR_I64 ? gr__red_max_i64 : gr__red_max_b8; break;
    default: k = dt == GR_F64 ? gr__red_min_f64 : dt == GR_F32 ? gr__red_min_f32 : dt == GR_I64 ? gr__red_min_i64 : gr__red_min_b8; break;
    }
    k(&G, x->data, y->data);
    return GR_OK;
}

static gr_status gr__Sum_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) { return gr__reduce_perform(node, in[0], out[0]); }
static gr_status gr__Mean_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) { return gr__reduce_perform(node, in[0], out[0]); }
static gr_status gr__Prod_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) { return gr__reduce_perform(node, in[0], out[0]); }
static gr_status gr__Max_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) { return gr__reduce_perform(node, in[0], out[0]); }
static gr_status gr__Min_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) { return gr__reduce_perform(node, in[0], out[0]); }

/* ---- derivative rules ------------------------------------------------------------------------- */

static gr_var *gr__dimshuffle(gr_var *x, int n, const int *pattern, int strict);

/* y (a reduction's output, or its gradient) with the reduced axes back as axes of size 1 */
static gr_var *gr__unreduce(gr_var *y, const gr_node *node) {
    const gr__reduce_params *p = gr__rp(node);
    int pattern[GR_MAX_NDIM], i, m = 0, nd = node->in[0]->ndim;
    if (!y || p->keepdims) return y;
    for (i = 0; i < nd; i++) pattern[i] = (p->mask & (1u << i)) ? GR_NEWAXIS : m++;
    return gr__dimshuffle(y, nd, pattern, 0);
}

/* gz broadcast back over the reduced axes, shaped like x */
static gr_var *gr__spread_back(gr_var *gz, const gr_node *node) {
    return gr__spread_to(gr__unreduce(gz, node), node->in[0]);
}

static gr_var *gr__size_ratio(gr_var *a, gr_var *b, int dtype);

static gr_status gr__Sum_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = node->in[0];
    ig[0] = gr__is_float(node->out[0]->dtype) ? gr__spread_back(og[0], node) : gr__zeros_grad(x);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Sum_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__reduce_params *p = gr__rp(node);
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) || !gr__is_float(node->out[0]->dtype)) return GR_OK;
    orop[0] = gr__node1(node->graph, &gr__op_Sum, p, sizeof *p, 1, &ev[0]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* the gradient of a mean is the spread cotangent times count(y) / count(x) */
static gr_status gr__Mean_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = node->in[0], *y = node->out[0], *scale;
    if (gr__static_known(x)) {
        int64_t nx = gr__shape_size(x->ndim, x->shape), ny = gr__shape_size(y->ndim, y->shape);
        scale = gr__scalar_const(node->graph, y->dtype, nx ? (double)ny / (double)nx : 0.0, 0);
    } else scale = gr__size_ratio(y, x, y->dtype);
    ig[0] = gr__spread_back(gr_mul(og[0], scale), node);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Mean_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__reduce_params *p = gr__rp(node);
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__node1(node->graph, &gr__op_Mean, p, sizeof *p, 1, &ev[0]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* d prod / d x_i, zero-safe: with no zero in the slice, prod / x_i; with exactly one zero, the
   product of the others at the zero and 0 elsewhere; with two or more, 0 everywhere */
static gr_var *gr__prod_partial(const gr_node *node) {
    const gr__reduce_params *p = gr__rp(node);
    gr__reduce_params keep = *p;
    gr_var *x = node->in[0], *is0, *nz, *safe, *pnz, *zero_case, *plain_case, *one, *zero;
    gr_graph *g = node->graph;
    keep.keepdims = 1;
    one = gr_const(g, 1.0);
    zero = gr_const(g, 0.0);
    is0 = gr_eq(x, zero);
    safe = gr_where(is0, one, x);
    nz = gr_cast(is0, GR_I64);                                               /* a BOOL sum counts as I64 */
    nz = nz ? gr__node1(g, &gr__op_Sum, &keep, sizeof keep, 1, &nz) : NULL;  /* zeros per slice */
    pnz = gr__node1(g, &gr__op_Prod, &keep, sizeof keep, 1, &safe);         /* product of the non-zeros */
    zero_case = gr_where(gr_logical_and(is0, gr_eq(nz, gr_const(g, 1.0))), pnz, zero);
    plain_case = gr_where(gr_eq(nz, zero), gr_div(pnz, safe), zero);
    return gr_where(is0, zero_case, plain_case);
}

static gr_status gr__Prod_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = node->in[0];
    if (!gr__is_float(node->out[0]->dtype)) ig[0] = gr__zeros_grad(x);
    else ig[0] = gr_mul(gr__spread_back(og[0], node), gr__prod_partial(node));
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Prod_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__reduce_params *p = gr__rp(node);
    gr_var *t;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) || !gr__is_float(node->out[0]->dtype)) return GR_OK;
    t = gr_mul(ev[0], gr__prod_partial(node));
    orop[0] = t ? gr__node1(node->graph, &gr__op_Sum, p, sizeof *p, 1, &t) : NULL;
    return orop[0] ? GR_OK : node->graph->status;
}

/* where x attains the extremum of its slice, as x's dtype (ties: every tied element) */
static gr_var *gr__argext_mask(const gr_node *node) {
    gr_var *x = node->in[0];
    return gr__cast_like(gr_eq(x, gr__spread_back(node->out[0], node)), x);
}
static gr_status gr__extremum_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = node->in[0];
    if (!gr__is_float(x->dtype)) ig[0] = gr__zeros_grad(x);
    else ig[0] = gr_mul(gr__spread_back(og[0], node), gr__argext_mask(node));
    return ig[0] ? GR_OK : node->graph->status;
}
/* R-op: the tangents of the tied extrema summed (PyTensor), the adjoint of the gradient */
static gr_status gr__extremum_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__reduce_params *p = gr__rp(node);
    gr_var *t;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) || !gr__is_float(node->out[0]->dtype)) return GR_OK;
    t = gr_mul(ev[0], gr__argext_mask(node));
    orop[0] = t ? gr__node1(node->graph, &gr__op_Sum, p, sizeof *p, 1, &t) : NULL;
    return orop[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Max_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { return gr__extremum_grad(node, og, ig); }
static gr_status gr__Min_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { return gr__extremum_grad(node, og, ig); }
static gr_status gr__Max_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) { return gr__extremum_rop(node, ev, orop); }
static gr_status gr__Min_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) { return gr__extremum_rop(node, ev, orop); }
