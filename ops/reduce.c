/* ops/reduce.c: Sum, Mean, Prod, Max, Min over a set of axes, with keepdims; ArgMax, LogSumExp,
   CumSum, CumProd, Diff and LinScan along one axis (at the end of the file).

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

static const gr__reduce_params *gr__rp(const gr_node *node) { return (const gr__reduce_params *)gr__params(node); }

static gr_status gr__reduce_infer(const gr_node *node, gr_type *out) {
    const gr_var *x = gr__in(node)[0];
    const gr__reduce_params *p = gr__rp(node);
    int i, m = 0;
    out->dtype = (gr_dtype)x->dtype;
    if (node->op == &gr__op_Mean && !gr__is_float(x->dtype)) out->dtype = GR_F64;
    for (i = 0; i < x->ndim; i++) {
        if (p->mask & (1u << i)) { if (p->keepdims) out->shape[m++] = 1; }
        else out->shape[m++] = gr__vshape(x)[i];
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
        return gr_node_error(node, GR_ERR_RUNTIME, "reduction over an empty axis of %s has no identity", gr__d(gr__in(node)[0]).s);
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

/* an innermost reduced run p[0..n) combined into acc: in order, or (RUN8: sums accumulated in double)
   in eight interleaved partial sums added pairwise, then the tail in order (NumPy's pairwise sum's
   block: eight chains in flight instead of one, and a smaller rounding error). The emitted code
   writes the same (gr__red_emit_loops). */
#define GR__RUN1(acc, p, n, TA, COMB) \
    for (i = 0; i < (n); i++) acc = COMB(acc, (TA)(p)[i]);
#define GR__RUN8(acc, p, n, TA, COMB) \
    if ((n) >= 16) { \
        TA r0 = (TA)(p)[0], r1 = (TA)(p)[1], r2 = (TA)(p)[2], r3 = (TA)(p)[3], r4 = (TA)(p)[4], r5 = (TA)(p)[5], r6 = (TA)(p)[6], r7 = (TA)(p)[7]; \
        for (i = 8; i + 8 <= (n); i += 8) { \
            r0 += (TA)(p)[i]; r1 += (TA)(p)[i + 1]; r2 += (TA)(p)[i + 2]; r3 += (TA)(p)[i + 3]; \
            r4 += (TA)(p)[i + 4]; r5 += (TA)(p)[i + 5]; r6 += (TA)(p)[i + 6]; r7 += (TA)(p)[i + 7]; \
        } \
        acc += ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)); \
        for (; i < (n); i++) acc += (TA)(p)[i]; \
    } else GR__RUN1(acc, p, n, TA, COMB)

/* fn(G, in, out): out = identity, then every input element combined into its output element;
   TA is the accumulator of an innermost reduced run, RUN how the run is combined */
#define GR__RED_KERNEL(fn, TI, TO, TA, INIT, COMB) GR__RED_KERNEL_R(fn, TI, TO, TA, INIT, COMB, GR__RUN1)
#define GR__RED_KERNEL_R(fn, TI, TO, TA, INIT, COMB, RUN) \
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
                RUN(acc, in + io, inner, TA, COMB) \
                out[oo] = (TO)acc; \
            } else { \
                for (i = 0; i < inner; i++) out[oo + i] = (TO)COMB((TA)out[oo + i], (TA)in[io + i]); \
            } \
            for (k = last - 1; k >= 0; k--) { if (++idx[k] < G->len[k]) break; idx[k] = 0; } \
        } \
    }

GR__RED_KERNEL_R(gr__red_sum_f64, double, double, double, 0, GR__C_SUM, GR__RUN8)
GR__RED_KERNEL_R(gr__red_sum_f32, float, float, double, 0, GR__C_SUM, GR__RUN8)
/* integer sums and products accumulate in uint64_t: they wrap modulo 2^64 like NumPy's, where
   int64_t arithmetic would overflow (undefined behaviour) */
GR__RED_KERNEL(gr__red_sum_i64, int64_t, int64_t, uint64_t, 0, GR__C_SUM)
GR__RED_KERNEL_R(gr__red_sum_i64_f64, int64_t, double, double, 0, GR__C_SUM, GR__RUN8)
GR__RED_KERNEL_R(gr__red_sum_b8_f64, uint8_t, double, double, 0, GR__C_SUM, GR__RUN8)

/* A whole sum taken piece by piece, as a fused group computes it (src/fuse.c: the Sum of a value
   the group makes, no array of it written): rounded as gr__red_sum_f64 / _f32 round one run of the
   same elements in the same order. With 16 or more, element i goes into lane i mod 8 up to the last
   multiple of eight (nb), the lanes are added pairwise onto 0, then the rest in order; with fewer,
   every element in order onto 0. (The kernel starts lane l at element l, here at 0 + element l: the
   two differ at most in the sign of a zero lane, and the sum onto 0 makes such zeros +0.) */
/* GR_KERNEL gr__sum8 */
typedef struct gr__sum8 { double r[8], acc; int64_t seen, nb, total; } gr__sum8;
static void gr__sum8_init(gr__sum8 *s, int64_t total) {
    int l;
    for (l = 0; l < 8; l++) s->r[l] = 0;
    s->acc = 0;
    s->seen = 0;
    s->total = total;
    s->nb = total >= 16 ? total - total % 8 : 0;
}
static void gr__sum8_fold(gr__sum8 *s) {
    s->acc = 0.0 + (((s->r[0] + s->r[1]) + (s->r[2] + s->r[3])) + ((s->r[4] + s->r[5]) + (s->r[6] + s->r[7])));
}
/* the sum, once every element is in */
static double gr__sum8_end(gr__sum8 *s) {
    if (s->nb == s->total) gr__sum8_fold(s);
    return s->acc;
}
/* fn(s, p, st, n): the next n elements, p[i * st] */
/* GR_KERNEL GR__SUM8 */
#define GR__SUM8(fn, T) \
    static void fn(gr__sum8 *s, const T *p, int64_t st, int64_t n) { \
        int64_t i = 0; \
        if (st == 1 && (s->seen & 7) == 0 && s->seen + 8 <= s->nb) { \
            double r[8]; \
            int l; \
            for (l = 0; l < 8; l++) r[l] = s->r[l]; \
            for (; i + 8 <= n && s->seen + i + 8 <= s->nb; i += 8) \
                for (l = 0; l < 8; l++) r[l] += (double)p[i + l]; \
            for (l = 0; l < 8; l++) s->r[l] = r[l]; \
        } \
        for (; i < n; i++) { \
            int64_t c = s->seen + i; \
            if (c < s->nb) s->r[c & 7] += (double)p[i * st]; \
            else { if (c == s->nb) gr__sum8_fold(s); s->acc += (double)p[i * st]; } \
        } \
        s->seen += n; \
    }
/* GR_KERNEL gr__sum8_f64 */
GR__SUM8(gr__sum8_f64, double)
/* GR_KERNEL gr__sum8_f32 */
GR__SUM8(gr__sum8_f32, float)
/* GR_KERNEL_END */

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
    switch (gr__code_of(node->op)) {
    case GR__OP_Sum:
    case GR__OP_Mean:
        gr__reduce_sum_into(x, p->mask, y);
        if (gr__code_of(node->op) == GR__OP_Mean) {
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

/* its signature: the kept axes keep their symbols; a reduced one kept (keepdims) has size 1 */
static void gr__reduce_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    const gr__reduce_params *p = gr__rp(node);
    int32_t s[GR_MAX_NDIM];
    int i, m = 0;
    gr__sig_copy(rw, gr__in(node)[0], s);
    for (i = 0; i < gr__in(node)[0]->ndim; i++) {
        if (p->mask & (1u << i)) { if (p->keepdims) out[m++] = GR__SIG_ONE; }
        else out[m++] = s[i];
    }
}

/* ---- derivative rules ------------------------------------------------------------------------- */

static gr_var *gr__dimshuffle(gr_var *x, int n, const int *pattern, int strict);

/* y (a reduction's output, or its gradient) with the reduced axes back as axes of size 1 */
static gr_var *gr__unreduce(gr_var *y, const gr_node *node) {
    const gr__reduce_params *p = gr__rp(node);
    int pattern[GR_MAX_NDIM], i, m = 0, nd = gr__in(node)[0]->ndim;
    if (!y || p->keepdims) return y;
    for (i = 0; i < nd; i++) pattern[i] = (p->mask & (1u << i)) ? GR_NEWAXIS : m++;
    return gr__dimshuffle(y, nd, pattern, 0);
}

/* gz broadcast back over the reduced axes, shaped like x */
static gr_var *gr__spread_back(gr_var *gz, const gr_node *node) {
    return gr__spread_to(gr__unreduce(gz, node), gr__in(node)[0]);
}

static gr_var *gr__size_ratio(gr_var *a, gr_var *b, int dtype);

static gr_status gr__Sum_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0];
    ig[0] = gr__is_float(gr__out(node)[0]->dtype) ? gr__spread_back(og[0], node) : gr__zeros_grad(x);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Sum_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__reduce_params *p = gr__rp(node);
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) || !gr__is_float(gr__out(node)[0]->dtype)) return GR_OK;
    orop[0] = gr__node1(node->graph, &gr__op_Sum, p, sizeof *p, 1, &ev[0]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* the gradient of a mean is the spread cotangent times count(y) / count(x) */
static gr_status gr__Mean_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0], *y = gr__out(node)[0], *scale;
    if (gr__static_known(x)) {
        int64_t nx = gr__shape_size(x->ndim, gr__vshape(x)), ny = gr__shape_size(y->ndim, gr__vshape(y));
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

/* d prod / d x_i, zero-safe, written so that its own derivatives are right at zeros too (gradients
   of gradients, Hessians):
     x_i != 0:  y / x_i, with y the product (0 when the slice has a zero; its gradient is this rule,
                so the derivative toward a lone zero x_k is y's partial there, not 0);
     x_i == 0:  the product of the others: p, the product of the non-zeros, when x_i is the slice's
                only zero; p x_m when one other zero x_m is there, written p (s - x_i) with s the
                sum of the slice's zeros, which is 0 but keeps the derivative p toward x_m; 0 with
                three zeros or more (every derivative of it is 0 too) */
static gr_var *gr__prod_partial(const gr_node *node) {
    const gr__reduce_params *p = gr__rp(node);
    gr__reduce_params keep = *p;
    gr_var *x = gr__in(node)[0], *is0, *zeros_at, *nz, *safe, *pnz, *s0, *x0s, *zero_case, *plain_case, *one, *zero;
    gr_graph *g = node->graph;
    keep.keepdims = 1;
    one = gr_const(g, 1.0);
    zero = gr_const(g, 0.0);
    is0 = gr_eq(x, zero);
    safe = gr_where(is0, one, x);
    zeros_at = gr__cast_like(is0, x);                                        /* a Sum node takes no BOOL */
    nz = zeros_at ? gr__node1(g, &gr__op_Sum, &keep, sizeof keep, 1, &zeros_at) : NULL;   /* zeros per slice */
    pnz = safe ? gr__node1(g, &gr__op_Prod, &keep, sizeof keep, 1, &safe) : NULL;         /* product of the non-zeros */
    x0s = gr_where(is0, x, zero);
    s0 = x0s ? gr__node1(g, &gr__op_Sum, &keep, sizeof keep, 1, &x0s) : NULL;            /* sum of the zeros: 0 */
    /* with two zeros the derivative is 0 but its derivative is not: pnz * (s0 - x) keeps both right */
    zero_case = gr_where(gr_eq(nz, one), pnz, gr_where(gr_eq(nz, gr_const(g, 2.0)), gr_mul(pnz, gr_sub(s0, x)), zero));
    plain_case = gr_div(gr__unreduce(gr__out(node)[0], node), safe);
    return gr_where(is0, zero_case, plain_case);
}

static gr_status gr__Prod_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0];
    if (!gr__is_float(gr__out(node)[0]->dtype)) ig[0] = gr__zeros_grad(x);
    else ig[0] = gr_mul(gr__spread_back(og[0], node), gr__prod_partial(node));
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Prod_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__reduce_params *p = gr__rp(node);
    gr_var *t;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) || !gr__is_float(gr__out(node)[0]->dtype)) return GR_OK;
    t = gr_mul(ev[0], gr__prod_partial(node));
    orop[0] = t ? gr__node1(node->graph, &gr__op_Sum, p, sizeof *p, 1, &t) : NULL;
    return orop[0] ? GR_OK : node->graph->status;
}

/* where x attains the extremum of its slice, as x's dtype (ties: every tied element) */
static gr_var *gr__argext_mask(const gr_node *node) {
    gr_var *x = gr__in(node)[0];
    return gr__cast_like(gr_eq(x, gr__spread_back(gr__out(node)[0], node)), x);
}
static gr_status gr__extremum_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0];
    if (!gr__is_float(x->dtype)) ig[0] = gr__zeros_grad(x);
    else ig[0] = gr_mul(gr__spread_back(og[0], node), gr__argext_mask(node));
    return ig[0] ? GR_OK : node->graph->status;
}
/* R-op: the tangents of the tied extrema summed (PyTensor), the adjoint of the gradient */
static gr_status gr__extremum_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__reduce_params *p = gr__rp(node);
    gr_var *t;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) || !gr__is_float(gr__out(node)[0]->dtype)) return GR_OK;
    t = gr_mul(ev[0], gr__argext_mask(node));
    orop[0] = t ? gr__node1(node->graph, &gr__op_Sum, p, sizeof *p, 1, &t) : NULL;
    return orop[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Max_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { return gr__extremum_grad(node, og, ig); }
static gr_status gr__Min_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { return gr__extremum_grad(node, og, ig); }
static gr_status gr__Max_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) { return gr__extremum_rop(node, ev, orop); }
static gr_status gr__Min_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) { return gr__extremum_rop(node, ev, orop); }

#ifndef GR_NO_AXIS                  /* ops/table.h, op families: to the end of the file */
/* ==== along one axis: ArgMax, LogSumExp, CumSum, CumProd, Diff and LinScan ========================

   Each works along one axis of x, seen as (outer, n, inner): element i of the slice (o, j) is
   x[(o n + i) inner + j].
     ArgMax     x (*pre, n, *post) -> (*pre, *post), I64: the first position of the largest element
                (NaN counts as the largest: the first NaN, as NumPy); not differentiable
     LogSumExp  x (*pre, n, *post) -> (*pre, *post): m + log sum_i e^(x_i - m), m = max_i x_i
     CumSum     x -> x's shape: y_k = sum_{i<=k} x_i (reverse: sum_{i>=k}); I64 wraps modulo 2^64
     CumProd    x -> x's shape: y_k = prod_{i<=k} x_i
     Diff       x (*pre, n, *post) -> (*pre, n - 1, *post): y_k = x_{k+1} - x_k (NumPy diff, n = 1); I64
                wraps, BOOL gives x_{k+1} != x_k (as NumPy); an axis of length 0 is an error
     LinScan    a, b (one shape, float) -> s, the linear recurrence behind CumProd's derivatives:
                  forward  s_k = a_k s_{k-1} + b_k,       s_{-1} = 0
                  reverse  s_k = a_{k+1} s_{k+1} + b_k,   s_n = 0
                As maps of b the two are each other's transpose, so each one's gradient is the
                other and no derivative of a cumulative product divides by x (zero-safe).
   Params: the axis (normalised) and the direction (CumSum and LinScan; the others are forward). */

typedef struct gr__axdir_params { int axis; int reverse; } gr__axdir_params;

static const gr__axdir_params *gr__adp(const gr_node *node) { return (const gr__axdir_params *)gr__params(node); }
static void gr__axis_split(const gr_array *x, int axis, int64_t *outer, int64_t *n, int64_t *inner);

/* g: the operands' graph (an operand may be NULL: its builder failed) */
static gr_var *gr__axdir_node(const gr_op_def *op, int axis, int reverse, int n, gr_var *const *xs, gr_graph *g) {
    gr__axdir_params p;
    memset(&p, 0, sizeof p);
    p.axis = axis;
    p.reverse = reverse;
    return gr__node1(g, op, &p, sizeof p, n, xs);
}

static gr_var *gr__axdir_op(const char *fname, const gr_op_def *op, gr_var *x, int axis) {
    gr_graph *g;
    int a;
    if (!gr__operands(fname, 1, &x, &g)) return NULL;
    if (x->ndim == 0) return gr__fail(g, GR_ERR_VALUE, "%s: %s is 0-d; it needs an axis", fname, gr__d(x).s);
    a = gr__axis(axis, x->ndim);
    if (a < 0) return gr__fail(g, GR_ERR_VALUE, "%s: axis %d out of range for %s with %d dimensions", fname, axis, gr__d(x).s, x->ndim);
    if (op == &gr__op_LogSumExp && !gr__is_float(x->dtype)) x = gr_cast(x, GR_F64);
    else if ((op == &gr__op_CumSum || op == &gr__op_CumProd) && x->dtype == GR_BOOL) x = gr_cast(x, GR_I64);   /* NumPy counts */
    return gr__axdir_node(op, a, 0, 1, &x, g);
}

GR_API gr_var *gr_argmax_axis(gr_var *x, int axis) { return gr__axdir_op("gr_argmax_axis", &gr__op_ArgMax, x, axis); }
GR_API gr_var *gr_logsumexp(gr_var *x, int axis) { return gr__axdir_op("gr_logsumexp", &gr__op_LogSumExp, x, axis); }
GR_API gr_var *gr_cumsum(gr_var *x, int axis) { return gr__axdir_op("gr_cumsum", &gr__op_CumSum, x, axis); }
GR_API gr_var *gr_cumprod(gr_var *x, int axis) { return gr__axdir_op("gr_cumprod", &gr__op_CumProd, x, axis); }
GR_API gr_var *gr_diff(gr_var *x, int axis) { return gr__axdir_op("gr_diff", &gr__op_Diff, x, axis); }

/* the recurrence s = LinScan(a, b) along axis (rules only: a and b float, of one dtype and shape) */
static gr_var *gr__linscan(gr_var *a, gr_var *b, int axis, int reverse) {
    gr_var *xs[2];
    if (!a || !b) return NULL;
    xs[0] = a; xs[1] = b;
    return gr__axdir_node(&gr__op_LinScan, axis, reverse, 2, xs, a->graph);
}

/* ---- type and shape rules --------------------------------------------------------------------- */

/* ArgMax and LogSumExp: the axis goes */
static gr_status gr__axisred_infer(const gr_node *node, gr_type *out) {
    const gr_var *x = gr__in(node)[0];
    int axis = gr__adp(node)->axis, i, m = 0;
    out->dtype = node->op == &gr__op_ArgMax ? GR_I64 : (gr_dtype)x->dtype;
    for (i = 0; i < x->ndim; i++) if (i != axis) out->shape[m++] = gr__vshape(x)[i];
    out->ndim = m;
    return GR_OK;
}
static gr_status gr__axisred_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int axis = gr__adp(node)->axis, i, m = 0;
    int64_t rest = 1;
    for (i = 0; i < in[0]->ndim; i++)
        if (i != axis) { out[0]->shape[m++] = in[0]->shape[i]; rest *= in[0]->shape[i]; }
    if (node->op == &gr__op_ArgMax && in[0]->shape[axis] == 0 && rest > 0)
        return gr_node_error(node, GR_ERR_RUNTIME, "axis %d of %s %s is empty: it has no largest element", axis, gr__d(gr__in(node)[0]).s,
                             gr__as(in[0]).s);
    return GR_OK;
}

/* Diff: the axis loses a row, so it needs one */
static gr_status gr__Diff_infer(const gr_node *node, gr_type *out) {
    const gr_var *x = gr__in(node)[0];
    int axis = gr__adp(node)->axis;
    int64_t n = gr__vshape(x)[axis];
    gr_var_type(x, out);
    if (n == 0)
        return gr__error(node->graph, GR_ERR_SHAPE, "gr_diff: axis %d of %s %s has length 0: no differences", axis, gr__d(x).s, gr__vs(x).s);
    out->shape[axis] = n > 0 ? n - 1 : -1;
    return GR_OK;
}
static gr_status gr__Diff_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int axis = gr__adp(node)->axis, i;
    if (in[0]->shape[axis] == 0)
        return gr_node_error(node, GR_ERR_SHAPE, "axis %d of %s %s has length 0: no differences", axis, gr__d(gr__in(node)[0]).s,
                             gr__as(in[0]).s);
    for (i = 0; i < in[0]->ndim; i++) out[0]->shape[i] = in[0]->shape[i] - (i == axis);
    return GR_OK;
}

static gr_status gr__LinScan_infer(const gr_node *node, gr_type *out) {
    const gr_var *a = gr__in(node)[0], *b = gr__in(node)[1];
    int i;
    if (a->ndim != b->ndim || a->dtype != b->dtype || !gr__is_float(a->dtype))
        return gr__error(node->graph, GR_ERR_TYPE, "LinScan: a %s (%s, %d-d) and b %s (%s, %d-d) need one float dtype and one ndim",
                         gr__d(a).s, gr_dtype_name((gr_dtype)a->dtype), a->ndim, gr__d(b).s, gr_dtype_name((gr_dtype)b->dtype), b->ndim);
    out->dtype = (gr_dtype)a->dtype;
    out->ndim = a->ndim;
    for (i = 0; i < a->ndim; i++) {
        if (gr__vshape(a)[i] >= 0 && gr__vshape(b)[i] >= 0 && gr__vshape(a)[i] != gr__vshape(b)[i])
            return gr__error(node->graph, GR_ERR_SHAPE, "LinScan: a %s %s and b %s %s differ in shape", gr__d(a).s, gr__vs(a).s,
                             gr__d(b).s, gr__vs(b).s);
        out->shape[i] = gr__vshape(a)[i] >= 0 ? gr__vshape(a)[i] : gr__vshape(b)[i];
    }
    return GR_OK;
}
static gr_status gr__LinScan_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    for (i = 0; i < in[0]->ndim; i++) {
        if (in[0]->shape[i] != in[1]->shape[i])
            return gr_node_error(node, GR_ERR_SHAPE, "a %s of shape %s and b %s of shape %s differ", gr__d(gr__in(node)[0]).s,
                                 gr__as(in[0]).s, gr__d(gr__in(node)[1]).s, gr__as(in[1]).s);
        out[0]->shape[i] = in[0]->shape[i];
    }
    return GR_OK;
}

/* ---- kernels ---------------------------------------------------------------------------------- */

/* ISNAN(v) is 0 for integer types */
/* GR_KERNEL GR__ARGMAX */
#define GR__ARGMAX(fn, T, ISNAN) \
    static void fn(int64_t outer, int64_t n, int64_t inner, const T *x, int64_t *y) { \
        int64_t o, j, i; \
        for (o = 0; o < outer; o++) \
            for (j = 0; j < inner; j++) { \
                const T *xs = x + o * n * inner + j; \
                int64_t best = 0; \
                T b = xs[0]; \
                for (i = 1; i < n && !ISNAN(b); i++) { \
                    T v = xs[i * inner]; \
                    if (v > b || ISNAN(v)) { best = i; b = v; } \
                } \
                y[o * inner + j] = best; \
            } \
    }
/* GR_KERNEL GR__ISNAN_F */
#define GR__ISNAN_F(v) ((v) != (v))
#define GR__ISNAN_I(v) 0
/* GR_KERNEL gr__argmax_f64 */
GR__ARGMAX(gr__argmax_f64, double, GR__ISNAN_F)
/* GR_KERNEL gr__argmax_f32 */
GR__ARGMAX(gr__argmax_f32, float, GR__ISNAN_F)
/* GR_KERNEL gr__argmax_i64 */
GR__ARGMAX(gr__argmax_i64, int64_t, GR__ISNAN_I)
/* GR_KERNEL gr__argmax_b8 */
GR__ARGMAX(gr__argmax_b8, uint8_t, GR__ISNAN_I)

/* m + log sum e^(x - m) in double; an infinite or NaN maximum is the answer itself (all -inf,
   an empty slice: -inf; any +inf: +inf; any NaN: NaN) */
/* GR_KERNEL GR__LOGSUMEXP */
#define GR__LOGSUMEXP(fn, T) \
    static void fn(int64_t outer, int64_t n, int64_t inner, const T *x, T *y) { \
        int64_t o, j, i; \
        for (o = 0; o < outer; o++) \
            for (j = 0; j < inner; j++) { \
                const T *xs = x + o * n * inner + j; \
                double m = -INFINITY, s = 0; \
                for (i = 0; i < n; i++) { double v = (double)xs[i * inner]; if (v > m || v != v) m = v; if (v != v) break; } \
                if (m == INFINITY || m == -INFINITY || m != m) { y[o * inner + j] = (T)m; continue; } \
                for (i = 0; i < n; i++) s += exp((double)xs[i * inner] - m); \
                y[o * inner + j] = (T)(m + log(s)); \
            } \
    }
/* GR_KERNEL gr__logsumexp_f64 */
GR__LOGSUMEXP(gr__logsumexp_f64, double)
/* GR_KERNEL gr__logsumexp_f32 */
GR__LOGSUMEXP(gr__logsumexp_f32, float)

/* row i of a block (its inner elements, contiguous) from row i - 1 in the order of the scan, so
   the loops stream through memory whatever the axis. U is the type of the arithmetic (uint64_t
   for I64: it wraps instead of overflowing). */
/* GR_KERNEL GR__CUM */
#define GR__CUM(fn, T, U, OP) \
    static void fn(int rev, int64_t outer, int64_t n, int64_t inner, const T *x, T *y) { \
        int64_t o, t, j; \
        for (o = 0; o < outer; o++) { \
            const T *xo = x + o * n * inner; \
            T *yo = y + o * n * inner; \
            for (t = 0; t < n; t++) { \
                int64_t i = rev ? n - 1 - t : t, p = rev ? i + 1 : i - 1; \
                if (t == 0) for (j = 0; j < inner; j++) yo[i * inner + j] = xo[i * inner + j]; \
                else for (j = 0; j < inner; j++) yo[i * inner + j] = (T)((U)yo[p * inner + j] OP (U)xo[i * inner + j]); \
            } \
        } \
    }
/* GR_KERNEL gr__cumsum_f64 */
GR__CUM(gr__cumsum_f64, double, double, +)
/* GR_KERNEL gr__cumsum_f32 */
GR__CUM(gr__cumsum_f32, float, float, +)
/* GR_KERNEL gr__cumsum_i64 */
GR__CUM(gr__cumsum_i64, int64_t, uint64_t, +)
/* GR_KERNEL gr__cumprod_f64 */
GR__CUM(gr__cumprod_f64, double, double, *)
/* GR_KERNEL gr__cumprod_f32 */
GR__CUM(gr__cumprod_f32, float, float, *)
/* GR_KERNEL gr__cumprod_i64 */
GR__CUM(gr__cumprod_i64, int64_t, uint64_t, *)

/* y_i = x_{i+1} - x_i along the axis, row by row (U: the arithmetic's type, wrapping for I64) */
/* GR_KERNEL GR__DIFF */
#define GR__DIFF(fn, T, U) \
    static void fn(int64_t outer, int64_t n, int64_t inner, const T *x, T *y) { \
        int64_t o, i, j; \
        for (o = 0; o < outer; o++) \
            for (i = 0; i + 1 < n; i++) { \
                const T *x0 = x + (o * n + i) * inner, *x1 = x0 + inner; \
                T *yi = y + (o * (n - 1) + i) * inner; \
                for (j = 0; j < inner; j++) yi[j] = (T)((U)x1[j] - (U)x0[j]); \
            } \
    }
/* GR_KERNEL gr__diff_f64 */
GR__DIFF(gr__diff_f64, double, double)
/* GR_KERNEL gr__diff_f32 */
GR__DIFF(gr__diff_f32, float, float)
/* GR_KERNEL gr__diff_i64 */
GR__DIFF(gr__diff_i64, int64_t, uint64_t)
/* BOOL: whether neighbours differ (NumPy's diff of bools is not_equal) */
/* GR_KERNEL gr__diff_b8 */
static void gr__diff_b8(int64_t outer, int64_t n, int64_t inner, const uint8_t *x, uint8_t *y) {
    int64_t o, i, j;
    for (o = 0; o < outer; o++)
        for (i = 0; i + 1 < n; i++) {
            const uint8_t *x0 = x + (o * n + i) * inner, *x1 = x0 + inner;
            uint8_t *yi = y + (o * (n - 1) + i) * inner;
            for (j = 0; j < inner; j++) yi[j] = (uint8_t)((x1[j] != 0) != (x0[j] != 0));
        }
}

/* s_i = a_i s_prev + b_i forward, a_prev s_prev + b_i in reverse (prev: the row before in the
   order of the scan) */
/* GR_KERNEL GR__LINSCAN */
#define GR__LINSCAN(fn, T) \
    static void fn(int rev, int64_t outer, int64_t n, int64_t inner, const T *a, const T *b, T *s) { \
        int64_t o, t, j; \
        for (o = 0; o < outer; o++) { \
            const T *ao = a + o * n * inner, *bo = b + o * n * inner; \
            T *so = s + o * n * inner; \
            for (t = 0; t < n; t++) { \
                int64_t i = rev ? n - 1 - t : t, p = rev ? i + 1 : i - 1; \
                const T *ai = ao + (rev ? p : i) * inner; \
                if (t == 0) for (j = 0; j < inner; j++) so[i * inner + j] = bo[i * inner + j]; \
                else for (j = 0; j < inner; j++) so[i * inner + j] = ai[j] * so[p * inner + j] + bo[i * inner + j]; \
            } \
        } \
    }
/* GR_KERNEL gr__linscan_f64 */
GR__LINSCAN(gr__linscan_f64, double)
/* GR_KERNEL gr__linscan_f32 */
GR__LINSCAN(gr__linscan_f32, float)
/* GR_KERNEL_END */

static gr_status gr__ArgMax_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[0];
    int64_t outer, n, inner, *y = (int64_t *)out[0]->data;
    gr__axis_split(x, gr__adp(node)->axis, &outer, &n, &inner);
    if (n == 0) return GR_OK;                                  /* nothing to write: the shape rule saw to it */
    switch (x->dtype) {
    case GR_F64: gr__argmax_f64(outer, n, inner, (const double *)x->data, y); break;
    case GR_F32: gr__argmax_f32(outer, n, inner, (const float *)x->data, y); break;
    case GR_I64: gr__argmax_i64(outer, n, inner, (const int64_t *)x->data, y); break;
    default: gr__argmax_b8(outer, n, inner, (const uint8_t *)x->data, y); break;
    }
    return GR_OK;
}
static gr_status gr__LogSumExp_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[0];
    int64_t outer, n, inner;
    gr__axis_split(x, gr__adp(node)->axis, &outer, &n, &inner);
    if (x->dtype == GR_F64) gr__logsumexp_f64(outer, n, inner, (const double *)x->data, (double *)out[0]->data);
    else gr__logsumexp_f32(outer, n, inner, (const float *)x->data, (float *)out[0]->data);
    return GR_OK;
}
static gr_status gr__cum_perform(const gr_node *node, int prod, const gr_array *x, gr_array *y) {
    int64_t outer, n, inner;
    int rev = gr__adp(node)->reverse;
    gr__axis_split(x, gr__adp(node)->axis, &outer, &n, &inner);
    switch (x->dtype) {
    case GR_F64:
        if (prod) gr__cumprod_f64(rev, outer, n, inner, (const double *)x->data, (double *)y->data);
        else gr__cumsum_f64(rev, outer, n, inner, (const double *)x->data, (double *)y->data);
        break;
    case GR_F32:
        if (prod) gr__cumprod_f32(rev, outer, n, inner, (const float *)x->data, (float *)y->data);
        else gr__cumsum_f32(rev, outer, n, inner, (const float *)x->data, (float *)y->data);
        break;
    case GR_I64:
        if (prod) gr__cumprod_i64(rev, outer, n, inner, (const int64_t *)x->data, (int64_t *)y->data);
        else gr__cumsum_i64(rev, outer, n, inner, (const int64_t *)x->data, (int64_t *)y->data);
        break;
    default: return gr_node_error(node, GR_ERR_TYPE, "no kernel for %s", gr_dtype_name(x->dtype));
    }
    return GR_OK;
}
static gr_status gr__CumSum_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    return gr__cum_perform(node, 0, in[0], out[0]);
}
static gr_status gr__CumProd_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    return gr__cum_perform(node, 1, in[0], out[0]);
}
static gr_status gr__Diff_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[0];
    int64_t outer, n, inner;
    gr__axis_split(x, gr__adp(node)->axis, &outer, &n, &inner);
    switch (x->dtype) {
    case GR_F64: gr__diff_f64(outer, n, inner, (const double *)x->data, (double *)out[0]->data); break;
    case GR_F32: gr__diff_f32(outer, n, inner, (const float *)x->data, (float *)out[0]->data); break;
    case GR_I64: gr__diff_i64(outer, n, inner, (const int64_t *)x->data, (int64_t *)out[0]->data); break;
    default: gr__diff_b8(outer, n, inner, (const uint8_t *)x->data, (uint8_t *)out[0]->data); break;
    }
    return GR_OK;
}
static gr_status gr__LinScan_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t outer, n, inner;
    int rev = gr__adp(node)->reverse;
    gr__axis_split(in[0], gr__adp(node)->axis, &outer, &n, &inner);
    if (in[0]->dtype == GR_F64)
        gr__linscan_f64(rev, outer, n, inner, (const double *)in[0]->data, (const double *)in[1]->data, (double *)out[0]->data);
    else gr__linscan_f32(rev, outer, n, inner, (const float *)in[0]->data, (const float *)in[1]->data, (float *)out[0]->data);
    return GR_OK;
}

/* ---- derivative rules ------------------------------------------------------------------------- */

/* ArgMax is piecewise constant: a zero gradient for x (an integer output of a float input, as in
   Aesara), no tangent */
static gr_status gr__ArgMax_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    (void)og;
    ig[0] = gr__zeros_grad(gr__in(node)[0]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__ArgMax_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node; (void)ev;
    orop[0] = NULL;
    return GR_OK;
}

/* y (with the axis removed) with the axis back, of size 1 */
static gr_var *gr__axis_back(gr_var *y, int axis, int ndim) {
    int pattern[GR_MAX_NDIM], i, m = 0;
    if (!y) return NULL;
    for (i = 0; i < ndim; i++) pattern[i] = i == axis ? GR_NEWAXIS : m++;
    return gr__dimshuffle(y, ndim, pattern, 0);
}

/* d lse / d x = softmax(x) along the axis: gradient gz softmax(x), R-op sum_axis(softmax(x) v) */
static gr_status gr__LogSumExp_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0];
    int axis = gr__adp(node)->axis;
    ig[0] = gr_mul(gr__axis_back(og[0], axis, x->ndim), gr_softmax(x, axis));
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__LogSumExp_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    int axis = gr__adp(node)->axis;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr_sum_axis(gr_mul(gr_softmax(gr__in(node)[0], axis), ev[0]), axis);
    return orop[0] ? GR_OK : node->graph->status;
}

/* CumSum is linear: its gradient is the cumulative sum the other way, its R-op the same sum of
   the tangent */
static gr_status gr__CumSum_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__axdir_params *p = gr__adp(node);
    ig[0] = gr__is_float(gr__out(node)[0]->dtype) ? gr__axdir_node(&gr__op_CumSum, p->axis, !p->reverse, 1, &og[0], node->graph)
                                              : gr__zeros_grad(gr__in(node)[0]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__CumSum_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__axdir_params *p = gr__adp(node);
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) || !gr__is_float(gr__out(node)[0]->dtype)) return GR_OK;
    orop[0] = gr__axdir_node(&gr__op_CumSum, p->axis, p->reverse, 1, &ev[0], node->graph);
    return orop[0] ? GR_OK : node->graph->status;
}

/* Diff is linear. Its gradient is the adjoint (-g_0, g_0 - g_1, ..., g_{n-3} - g_{n-2}, g_{n-2}):
   minus the diff of g with a row of zeros at both ends; its R-op is the diff of the tangent */
static gr_status gr__Diff_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0], *zeros, *padded[3], *g0;
    int axis = gr__adp(node)->axis;
    if (!gr__is_float(gr__out(node)[0]->dtype)) {
        ig[0] = gr__zeros_grad(x);
        return ig[0] ? GR_OK : node->graph->status;
    }
    zeros = gr__fill_like(gr_slice(x, axis, 0, 1, 1), og[0]->dtype, 0.0);   /* one row, shaped like x[0:1] */
    padded[0] = zeros; padded[1] = og[0]; padded[2] = zeros;
    g0 = gr_concatenate(3, padded, axis);
    ig[0] = g0 ? gr_neg(gr__axdir_node(&gr__op_Diff, axis, 0, 1, &g0, node->graph)) : NULL;
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Diff_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) || !gr__is_float(gr__out(node)[0]->dtype)) return GR_OK;
    orop[0] = gr__axdir_node(&gr__op_Diff, gr__adp(node)->axis, 0, 1, &ev[0], node->graph);
    return orop[0] ? GR_OK : node->graph->status;
}

/* z moved one position along axis: dir > 0 gives out_k = z_{k-1} (the row before, forward), dir < 0
   out_k = z_{k+1}; the position left open is `fill` */
static gr_var *gr__shift(gr_var *z, int axis, int dir, double fill) {
    gr_var *base;
    if (!z) return NULL;
    base = gr__fill_like(z, z->dtype, fill);
    if (dir > 0) return gr_set_subtensor(gr_slice(base, axis, 1, GR_OPEN, 1), gr_slice(z, axis, 0, -1, 1));
    return gr_set_subtensor(gr_slice(base, axis, 0, -1, 1), gr_slice(z, axis, 1, GR_OPEN, 1));
}

/* CumProd, y_k = prod_{i<=k} x_i. With E the exclusive product (E_k = prod_{i<k} x_i = y_{k-1}):
     dy_k/dx_i = E_i prod_{i<j<=k} x_j  (k >= i), no division anywhere, so zeros are fine:
     gradient  g_x = E * S,  S_i = g_i + x_{i+1} S_{i+1}   = E * LinScan(x, g, reverse)
     R-op      r_k = x_k r_{k-1} + E_k v_k                 = LinScan(x, E * v, forward) */
static gr_status gr__CumProd_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0];
    int axis = gr__adp(node)->axis;
    if (!gr__is_float(gr__out(node)[0]->dtype)) ig[0] = gr__zeros_grad(x);
    else ig[0] = gr_mul(gr__shift(gr__out(node)[0], axis, 1, 1.0), gr__linscan(x, og[0], axis, 1));
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__CumProd_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    int axis = gr__adp(node)->axis;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) || !gr__is_float(gr__out(node)[0]->dtype)) return GR_OK;
    orop[0] = gr__linscan(gr__in(node)[0], gr_mul(gr__shift(gr__out(node)[0], axis, 1, 1.0), ev[0]), axis, 0);
    return orop[0] ? GR_OK : node->graph->status;
}

/* LinScan, s = L(a, b). With prev(z)_k = z_{k-1} (0 at the start) and next(z)_k = z_{k+1} (0 at
   the end):
     forward  ds = L(a, da prev(s) + db);          gradient: l = L'(a, g), g_b = l, g_a = l prev(s)
     reverse  ds = L'(a, next(da s) + db);         gradient: m = L(a, g),  g_b = m, g_a = prev(m) s
   (L' the reverse scan), so its derivatives are LinScans again and differentiate further. */
static gr_status gr__LinScan_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *a = gr__in(node)[0], *s = gr__out(node)[0], *l;
    const gr__axdir_params *p = gr__adp(node);
    l = gr__linscan(a, og[0], p->axis, !p->reverse);
    ig[1] = l;
    ig[0] = p->reverse ? gr_mul(gr__shift(l, p->axis, 1, 0.0), s) : gr_mul(l, gr__shift(s, p->axis, 1, 0.0));
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__LinScan_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *a = gr__in(node)[0], *s = gr__out(node)[0], *w = NULL;
    const gr__axdir_params *p = gr__adp(node);
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0]) && gr_is_disconnected(ev[1])) return GR_OK;
    if (!gr_is_disconnected(ev[0]))
        w = p->reverse ? gr__shift(gr_mul(ev[0], s), p->axis, -1, 0.0) : gr_mul(ev[0], gr__shift(s, p->axis, 1, 0.0));
    if (!gr_is_disconnected(ev[1])) w = w ? gr_add(w, ev[1]) : ev[1];
    orop[0] = gr__linscan(a, w, p->axis, p->reverse);
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- rewrite rules (src/rewrite.h) ------------------------------------------------------------------ */

/* Diff's signature: the other axes keep their symbols; its axis is the input's with one row
   trimmed off, the length of x[1:] in every call (a static length is the static type's) */
static void gr__Diff_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    int32_t s[GR_MAX_NDIM];
    int axis = gr__adp(node)->axis, i;
    gr__sig_copy(rw, gr__in(node)[0], s);
    for (i = 0; i < gr__in(node)[0]->ndim; i++)
        if (i != axis) out[i] = s[i];
        else if (s[i] >= 0) out[i] = gr__sig_trimmed(rw, s[i], 1);
}

/* ---- batching: the axis moves one to the right; an operand without the batch axis is
   broadcast to the batched one's shape (LinScan's operands share one shape) -------------------- */

static gr_status gr__axdir_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    const gr__axdir_params *p = gr__adp(node);
    gr_var *xs[2];
    int i, lead = 0;
    if (gr__in(node)[0]->ndim + 1 > GR_MAX_NDIM) return gr__map_batch(node, in, batched, out);
    while (lead < node->n_in && !batched[lead]) lead++;
    for (i = 0; i < node->n_in; i++) {
        xs[i] = batched[i] ? in[i] : gr_broadcast_like(in[i], in[lead]);
        if (!xs[i]) return node->graph->status;
    }
    out[0] = gr__axdir_node(node->op, p->axis + 1, p->reverse, node->n_in, xs, node->graph);
    return out[0] ? GR_OK : node->graph->status;
}

#endif /* GR_NO_AXIS */

/* ---- C code generation (gr_fn_emit_c): the reductions as their kernels run -------------------------
   The loops of GR__RED_KERNEL over the groups of gr__rgroups_init, written out: out = INIT, then for
   each row of the outer groups one innermost run, reduced into an accumulator of TA when the run is
   reduced; so the sums round as the library's do. */

enum { GR__RC_SUM, GR__RC_PROD, GR__RC_MAX, GR__RC_MIN, GR__RC_IMAX, GR__RC_IMIN };

/* COMB(a, b) of GR__RED_KERNEL as C */
static const char *gr__red_comb(char *buf, size_t n, int comb, const char *a, const char *b) {
    switch (comb) {
    case GR__RC_SUM: snprintf(buf, n, "%s + %s", a, b); break;
    case GR__RC_PROD: snprintf(buf, n, "%s * %s", a, b); break;
    case GR__RC_MAX: snprintf(buf, n, "(%s != %s || %s > %s) ? %s : %s", a, a, a, b, a, b); break;
    case GR__RC_MIN: snprintf(buf, n, "(%s != %s || %s < %s) ? %s : %s", a, a, a, b, a, b); break;
    case GR__RC_IMAX: snprintf(buf, n, "%s > %s ? %s : %s", a, b, a, b); break;
    default: snprintf(buf, n, "%s < %s ? %s : %s", a, b, a, b); break;
    }
    return buf;
}

typedef struct gr__red_emit { const char *ti, *to, *ta, *init; int comb; } gr__red_emit;

/* GR__RUN8 as C: the run of n >= 16 elements at in + io summed into acc in eight partial sums */
static void gr__red_emit_run8(gr__em *e, const char *ti, const char *ta, const char *io, int64_t n) {
    gr__em_line(e, "{");
    gr__em_line(e, "const %s *p = in + %s;", ti, io);
    gr__em_line(e, "%s r0 = (%s)p[0], r1 = (%s)p[1], r2 = (%s)p[2], r3 = (%s)p[3], r4 = (%s)p[4], r5 = (%s)p[5], r6 = (%s)p[6], r7 = (%s)p[7];",
                ta, ta, ta, ta, ta, ta, ta, ta, ta);
    gr__em_line(e, "size_t j;");
    gr__em_line(e, "for (j = 8; j < %lld; j += 8) {", (long long)(n - n % 8));
    gr__em_line(e, "r0 += (%s)p[j]; r1 += (%s)p[j + 1]; r2 += (%s)p[j + 2]; r3 += (%s)p[j + 3];", ta, ta, ta, ta);
    gr__em_line(e, "r4 += (%s)p[j + 4]; r5 += (%s)p[j + 5]; r6 += (%s)p[j + 6]; r7 += (%s)p[j + 7];", ta, ta, ta, ta);
    gr__em_line(e, "}");
    gr__em_line(e, "acc += ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7));");
    if (n % 8) gr__em_line(e, "for (j = %lld; j < %lld; j++) acc += (%s)p[j];", (long long)(n - n % 8), (long long)n, ta);
    gr__em_line(e, "}");
}

static void gr__red_emit_loops(gr__em *e, const gr__rgroups *G, const gr__red_emit *k, const char *x, const char *y) {
    char c[1500], a[240], b[240], io[200], oo[200];   /* (the frame stays small: test-small) */
    int last = G->n - 1, n;
    gr__em_line(e, "{");
    gr__em_line(e, "const %s *in = %s;", k->ti, x);
    gr__em_line(e, "%s *out = %s;", k->to, y);
    gr__em_line(e, "(void)in; (void)out;");
    if (G->out_size > 0) gr__em_line(e, "for (size_t i = 0; i < %lld; i++) out[i] = (%s)(%s);", (long long)G->out_size, k->to, k->init);
    if (G->out_size > 0 && G->count > 0 && G->n == 0) {
        snprintf(a, sizeof a, "(%s)(%s)", k->ta, k->init);
        snprintf(b, sizeof b, "(%s)in[0]", k->ta);
        gr__em_line(e, "out[0] = (%s)(%s);", k->to, gr__red_comb(c, sizeof c, k->comb, a, b));
    } else if (G->out_size > 0 && G->count > 0) {
        n = gr__em_open(e, last, G->len);
        snprintf(io, sizeof io, "%s", gr__em_index(e, last, G->len, G->ist));
        snprintf(oo, sizeof oo, "%s", gr__em_index(e, last, G->len, G->ost));
        snprintf(b, sizeof b, "(%s)in[%s + j]", k->ta, io);
        if (G->red[last]) {
            gr__em_line(e, "%s acc = (%s)out[%s];", k->ta, k->ta, oo);
            if (k->comb == GR__RC_SUM && strcmp(k->ta, "double") == 0 && G->len[last] >= 16)   /* GR__RUN8's order */
                gr__red_emit_run8(e, k->ti, k->ta, io, G->len[last]);
            else
                gr__em_line(e, "for (size_t j = 0; j < %lld; j++) acc = %s;", (long long)G->len[last], gr__red_comb(c, sizeof c, k->comb, "acc", b));
            gr__em_line(e, "out[%s] = (%s)acc;", oo, k->to);
        } else {
            snprintf(a, sizeof a, "(%s)out[%s + j]", k->ta, oo);
            gr__em_line(e, "for (size_t j = 0; j < %lld; j++) out[%s + j] = (%s)(%s);", (long long)G->len[last], oo, k->to,
                        gr__red_comb(c, sizeof c, k->comb, a, b));
        }
        gr__em_close(e, n);
    }
    gr__em_line(e, "}");
}

/* gr__reduce_sum_into as C: x (C pointer x_c) summed over the axes in mask into out (y_c) */
static void gr__reduce_sum_emit(gr__em *e, const gr_array *x, uint32_t mask, const gr_array *out, const char *x_c, const char *y_c) {
    static const gr__red_emit f32 = { "float", "float", "double", "0", GR__RC_SUM }, i64 = { "int64_t", "int64_t", "uint64_t", "0", GR__RC_SUM };
    static const gr__red_emit i64_f64 = { "int64_t", "double", "double", "0", GR__RC_SUM }, b8_f64 = { "uint8_t", "double", "double", "0", GR__RC_SUM };
    static const gr__red_emit f64 = { "double", "double", "double", "0", GR__RC_SUM };
    gr__rgroups G;
    char xc[GR__MSG / 2], yc[GR__MSG / 2];
    snprintf(xc, sizeof xc, "%s", x_c);
    snprintf(yc, sizeof yc, "%s", y_c);
    gr__rgroups_init(&G, x->ndim, x->shape, mask);
    gr__red_emit_loops(e, &G, out->dtype == GR_F32 ? &f32 : out->dtype == GR_I64 ? &i64 : x->dtype == GR_I64 ? &i64_f64 :
                               x->dtype == GR_BOOL ? &b8_f64 : &f64, xc, yc);
}

static gr_status gr__reduce_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    static const gr__red_emit k[3][4] = {      /* [Prod, Max, Min][F64, F32, I64, BOOL] */
        { { "double", "double", "double", "1", GR__RC_PROD }, { "float", "float", "double", "1", GR__RC_PROD },
          { "int64_t", "int64_t", "uint64_t", "1", GR__RC_PROD }, { "uint8_t", "uint8_t", "int", "1", GR__RC_PROD } },
        { { "double", "double", "double", "-INFINITY", GR__RC_MAX }, { "float", "float", "float", "-INFINITY", GR__RC_MAX },
          { "int64_t", "int64_t", "int64_t", "INT64_MIN", GR__RC_IMAX }, { "uint8_t", "uint8_t", "int", "0", GR__RC_IMAX } },
        { { "double", "double", "double", "INFINITY", GR__RC_MIN }, { "float", "float", "float", "INFINITY", GR__RC_MIN },
          { "int64_t", "int64_t", "int64_t", "INT64_MAX", GR__RC_IMIN }, { "uint8_t", "uint8_t", "int", "1", GR__RC_IMIN } } };
    const gr__reduce_params *p = gr__rp(node);
    int code = gr__code_of(node->op);
    gr__rgroups G;
    char xc[GR__MSG / 2], yc[GR__MSG / 2];
    snprintf(xc, sizeof xc, "%s", gr__em_in(e, 0));
    snprintf(yc, sizeof yc, "%s", gr__em_out(e, 0));
    gr__rgroups_init(&G, in[0]->ndim, in[0]->shape, p->mask);
    if (code == GR__OP_Sum || code == GR__OP_Mean) {
        gr__reduce_sum_emit(e, in[0], p->mask, out[0], xc, yc);
        if (code == GR__OP_Mean && out[0]->size > 0) {
            double inv = G.count ? 1.0 / (double)G.count : NAN;
            const char *T = gr__em_ctype(out[0]->dtype);
            gr__em_line(e, "for (size_t i = 0; i < %lld; i++) ((%s *)%s)[i] = (%s)(((%s *)%s)[i] * %s);", (long long)out[0]->size, T, yc, T, T,
                        yc, gr__em_value(e, GR_F64, &inv, 0));
        }
    } else
        gr__red_emit_loops(e, &G, &k[code == GR__OP_Prod ? 0 : code == GR__OP_Max ? 1 : 2][in[0]->dtype], xc, yc);
    return GR_OK;
}
static gr_status gr__Sum_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) { return gr__reduce_emit(e, node, in, out); }
static gr_status gr__Mean_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) { return gr__reduce_emit(e, node, in, out); }
static gr_status gr__Prod_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) { return gr__reduce_emit(e, node, in, out); }
static gr_status gr__Max_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) { return gr__reduce_emit(e, node, in, out); }
static gr_status gr__Min_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) { return gr__reduce_emit(e, node, in, out); }

#ifndef GR_NO_AXIS
/* the axis ops: a call of their kernel above, which the file gets from the same source (GR_KERNEL) */
static gr_status gr__axis_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out,
                               const char *macro, const char *fn, int rev) {
    static const char *const suffix[4] = { "f64", "f32", "i64", "b8" };
    const gr_array *x = in[0];
    int64_t outer, n, inner;
    char name[64], r[8];
    gr__axis_split(x, gr__adp(node)->axis, &outer, &n, &inner);
    snprintf(name, sizeof name, "%s_%s", fn, suffix[x->dtype]);
    snprintf(r, sizeof r, "%s", rev < 0 ? "" : gr__adp(node)->reverse ? "1, " : "0, ");
    if ((macro && !gr__em_kernel(e, macro)) || (!strcmp(fn, "gr__argmax") && !gr__em_kernel(e, "GR__ISNAN_F")) || !gr__em_kernel(e, name))
        return gr__em_fail(e, GR_ERR_VALUE, "gr_fn_emit_c: op %s has no kernel for %s", node->op->name, gr_dtype_name(x->dtype));
    if (node->n_in == 2)
        gr__em_line(e, "%s(%s%lld, %lld, %lld, %s, %s, %s);", name, r, (long long)outer, (long long)n, (long long)inner, gr__em_in(e, 0),
                    gr__em_in(e, 1), gr__em_out(e, 0));
    else gr__em_line(e, "%s(%s%lld, %lld, %lld, %s, %s);", name, r, (long long)outer, (long long)n, (long long)inner, gr__em_in(e, 0), gr__em_out(e, 0));
    (void)out;
    return GR_OK;
}
static gr_status gr__ArgMax_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    int64_t outer, n, inner;
    gr__axis_split(in[0], gr__adp(node)->axis, &outer, &n, &inner);
    return n == 0 ? GR_OK : gr__axis_emit(e, node, in, out, "GR__ARGMAX", "gr__argmax", -1);
}
static gr_status gr__LogSumExp_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    return gr__axis_emit(e, node, in, out, "GR__LOGSUMEXP", "gr__logsumexp", -1);
}
static gr_status gr__CumSum_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    return gr__axis_emit(e, node, in, out, "GR__CUM", "gr__cumsum", 1);
}
static gr_status gr__CumProd_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    return gr__axis_emit(e, node, in, out, "GR__CUM", "gr__cumprod", 1);
}
static gr_status gr__Diff_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    return gr__axis_emit(e, node, in, out, in[0]->dtype == GR_BOOL ? NULL : "GR__DIFF", "gr__diff", -1);
}
static gr_status gr__LinScan_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    return gr__axis_emit(e, node, in, out, "GR__LINSCAN", "gr__linscan", 1);
}
#endif /* GR_NO_AXIS */
