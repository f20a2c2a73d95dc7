/* ops/shape.c: DimShuffle (and transpose), Reshape, BroadcastLike, ReduceLike, ReshapeLike,
   SizeRatio, and outer built from them.

   Shapes: DimShuffle x (d0..dn-1) with pattern p -> (d_p0, ...), GR_NEWAXIS gives 1;
           Reshape x -> the given shape (one -1 inferred); BroadcastLike x -> shape(ref);
           ReduceLike x -> shape(ref) (x summed over the axes ref broadcasts along; bools as I64). */

/* ---- strided copy: dst (contiguous, shape) from src with element strides st ---------------- */

static void gr__strided_copy(size_t es, int nd, const int64_t *shape, const int64_t *st, const char *src, char *dst) {
    int64_t idx[GR_MAX_NDIM], total = 1, n, r, rows;
    int i;
    for (i = 0; i < nd; i++) total *= shape[i];
    if (total == 0) return;
    if (nd == 0) { memcpy(dst, src, es); return; }
    if (nd >= 2 && st[nd - 1] != 1 && st[nd - 2] == 1) {
        /* an inner transpose: copy 32x32 tiles so both sides stay in cache */
        int64_t R = shape[nd - 2], C = shape[nd - 1], outer = total / (R * C), o, bi, bj, ii, jj;
        for (i = 0; i < nd - 2; i++) idx[i] = 0;
        for (o = 0; o < outer; o++) {
            int64_t base = 0;
            for (i = 0; i < nd - 2; i++) base += idx[i] * st[i];
            for (bi = 0; bi < R; bi += 32)
                for (bj = 0; bj < C; bj += 32)
                    for (ii = bi; ii < R && ii < bi + 32; ii++)
                        for (jj = bj; jj < C && jj < bj + 32; jj++)
                            memcpy(dst + (size_t)((o * R + ii) * C + jj) * es,
                                   src + (size_t)(base + ii + jj * st[nd - 1]) * es, es);
            for (i = nd - 3; i >= 0; i--) { if (++idx[i] < shape[i]) break; idx[i] = 0; }
        }
        return;
    }
    n = shape[nd - 1];
    rows = total / n;
    for (i = 0; i < nd; i++) idx[i] = 0;
    for (r = 0; r < rows; r++) {
        int64_t off = 0, j;
        char *d = dst + (size_t)(r * n) * es;
        for (i = 0; i < nd - 1; i++) off += idx[i] * st[i];
        if (st[nd - 1] == 1) memcpy(d, src + (size_t)off * es, (size_t)n * es);
        else if (es == 8) {
            const int64_t *s = (const int64_t *)(const void *)src + off;
            int64_t *dd = (int64_t *)(void *)d, s1 = st[nd - 1];
            for (j = 0; j < n; j++) dd[j] = s[j * s1];
        } else
            for (j = 0; j < n; j++) memcpy(d + (size_t)j * es, src + (size_t)(off + j * st[nd - 1]) * es, es);
        for (i = nd - 2; i >= 0; i--) { if (++idx[i] < shape[i]) break; idx[i] = 0; }
    }
}

/* ---- DimShuffle ------------------------------------------------------------------------------ */

typedef struct gr__dimshuffle_params { int n; int pattern[GR_MAX_NDIM]; } gr__dimshuffle_params;

/* strict: dropping an axis needs a static size of 1 (users' calls); rules pass 0 and the call
   checks the size instead */
static gr_var *gr__dimshuffle(gr_var *x, int n, const int *pattern, int strict) {
    gr__dimshuffle_params p;
    uint32_t seen = 0;
    gr_graph *g;
    int i, identity;
    if (!gr__operands("gr_dimshuffle", 1, &x, &g)) return NULL;
    if (n < 0 || n > GR_MAX_NDIM)
        return gr__fail(g, GR_ERR_VALUE, "gr_dimshuffle: %d output axes for %s (at most %d)", n, gr__d(x).s, GR_MAX_NDIM);
    if (n > 0 && !pattern) return gr__fail(g, GR_ERR_VALUE, "gr_dimshuffle: pattern is NULL for %s", gr__d(x).s);
    memset(&p, 0, sizeof p);
    p.n = n;
    identity = n == x->ndim;
    for (i = 0; i < n; i++) {
        int a = pattern[i];
        if (a == GR_NEWAXIS) { p.pattern[i] = GR_NEWAXIS; identity = 0; continue; }
        if (a < 0 || a >= x->ndim)
            return gr__fail(g, GR_ERR_VALUE, "gr_dimshuffle: axis %d out of range for %s with %d dimensions", a, gr__d(x).s, x->ndim);
        if (seen & (1u << a)) return gr__fail(g, GR_ERR_VALUE, "gr_dimshuffle: axis %d repeated for %s", a, gr__d(x).s);
        seen |= 1u << a;
        p.pattern[i] = a;
        if (a != i) identity = 0;
    }
    for (i = 0; i < x->ndim; i++)
        if (!(seen & (1u << i)) && strict && x->shape[i] != 1)
            return gr__fail(g, GR_ERR_VALUE, "gr_dimshuffle: axis %d of %s %s is dropped but its static size is not 1",
                            i, gr__d(x).s, gr__vs(x).s);
    if (identity) return x;
    return gr__node1(g, &gr__op_DimShuffle, &p, sizeof p, 1, &x);
}

GR_API gr_var *gr_dimshuffle(gr_var *x, int n, const int *pattern) { return gr__dimshuffle(x, n, pattern, 1); }

GR_API gr_var *gr_transpose(gr_var *x) {
    int pattern[GR_MAX_NDIM], i;
    gr_graph *g;
    if (!gr__operands("gr_transpose", 1, &x, &g)) return NULL;
    if (x->ndim < 2) return x;
    for (i = 0; i < x->ndim; i++) pattern[i] = x->ndim - 1 - i;
    return gr__dimshuffle(x, x->ndim, pattern, 1);
}

static const gr__dimshuffle_params *gr__dsp(const gr_node *node) { return (const gr__dimshuffle_params *)node->params; }

static gr_status gr__DimShuffle_infer(const gr_node *node, gr_type *out) {
    const gr__dimshuffle_params *p = gr__dsp(node);
    int i;
    out->dtype = (gr_dtype)node->in[0]->dtype;
    out->ndim = p->n;
    for (i = 0; i < p->n; i++) out->shape[i] = p->pattern[i] < 0 ? 1 : node->in[0]->shape[p->pattern[i]];
    return GR_OK;
}
static gr_status gr__DimShuffle_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__dimshuffle_params *p = gr__dsp(node);
    uint32_t seen = 0;
    int i;
    for (i = 0; i < p->n; i++) {
        out[0]->shape[i] = p->pattern[i] < 0 ? 1 : in[0]->shape[p->pattern[i]];
        if (p->pattern[i] >= 0) seen |= 1u << p->pattern[i];
    }
    for (i = 0; i < in[0]->ndim; i++)
        if (!(seen & (1u << i)) && in[0]->shape[i] != 1)
            return gr_node_error(node, GR_ERR_SHAPE, "axis %d of %s is dropped but has size %lld", i,
                                 gr__d(node->in[0]).s, (long long)in[0]->shape[i]);
    return GR_OK;
}
/* element strides of x seen through the pattern */
static void gr__dimshuffle_strides(const gr__dimshuffle_params *p, const gr_array *x, int64_t *st) {
    int64_t xs[GR_MAX_NDIM], s = 1;
    int i;
    for (i = x->ndim - 1; i >= 0; i--) { xs[i] = s; s *= x->shape[i]; }
    for (i = 0; i < p->n; i++) st[i] = p->pattern[i] < 0 ? 0 : xs[p->pattern[i]];
}
static gr_status gr__DimShuffle_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t st[GR_MAX_NDIM];
    gr__dimshuffle_strides(gr__dsp(node), in[0], st);
    gr__strided_copy(gr__dsize(in[0]->dtype), out[0]->ndim, out[0]->shape, st, (const char *)in[0]->data, (char *)out[0]->data);
    return GR_OK;
}
/* the same memory when the axes of size > 1 keep their order */
static int64_t gr__DimShuffle_alias(const gr_node *node, const gr_array *const *in, const gr_array *out) {
    const gr__dimshuffle_params *p = gr__dsp(node);
    int i, last = -1;
    (void)out;
    for (i = 0; i < p->n; i++) {
        int a = p->pattern[i];
        if (a < 0 || in[0]->shape[a] == 1) continue;
        if (a < last) return -1;
        last = a;
    }
    return 0;
}
static gr_status gr__DimShuffle_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__dimshuffle_params *p = gr__dsp(node);
    int inv[GR_MAX_NDIM], i, nd = node->in[0]->ndim;
    for (i = 0; i < nd; i++) inv[i] = GR_NEWAXIS;
    for (i = 0; i < p->n; i++) if (p->pattern[i] >= 0) inv[p->pattern[i]] = i;
    ig[0] = gr__dimshuffle(og[0], nd, inv, 0);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__DimShuffle_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__dimshuffle_params *p = gr__dsp(node);
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__dimshuffle(ev[0], p->n, p->pattern, 0);
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- Reshape ------------------------------------------------------------------------------- */

typedef struct gr__reshape_params { int ndim; int64_t shape[GR_MAX_NDIM]; } gr__reshape_params;

/* fills out[] from the requested shape and the element count (-1 if unknown); 0 when they cannot
   agree */
static int gr__reshape_resolve(const gr__reshape_params *p, int64_t size, int64_t *out) {
    int64_t known = 1;
    int i, free_axis = -1, zero = 0, over = 0;
    for (i = 0; i < p->ndim; i++) {
        out[i] = p->shape[i];
        if (p->shape[i] == -1) free_axis = i;
        else if (p->shape[i] == 0) zero = 1;
        else if (known > INT64_MAX / p->shape[i]) over = 1;
        else known *= p->shape[i];
    }
    if (zero) known = 0;
    if (size < 0) return 1;
    if (over && !zero) return 0;                     /* more elements than any array can have */
    if (free_axis >= 0) {
        if (known == 0 || size % known != 0) return 0;
        out[free_axis] = size / known;
        return 1;
    }
    return known == size;
}

GR_API gr_var *gr_reshape(gr_var *x, int ndim, const int64_t *shape) {
    gr__reshape_params p;
    int64_t tmp[GR_MAX_NDIM];
    gr_graph *g;
    int i, frees = 0;
    char buf[200];
    if (!gr__operands("gr_reshape", 1, &x, &g)) return NULL;
    if (ndim < 0 || ndim > GR_MAX_NDIM) return gr__fail(g, GR_ERR_VALUE, "gr_reshape: ndim %d out of range for %s", ndim, gr__d(x).s);
    if (ndim > 0 && !shape) return gr__fail(g, GR_ERR_VALUE, "gr_reshape: shape is NULL for %s", gr__d(x).s);
    memset(&p, 0, sizeof p);
    p.ndim = ndim;
    for (i = 0; i < ndim; i++) {
        if (shape[i] < -1) return gr__fail(g, GR_ERR_VALUE, "gr_reshape: negative size %lld for %s", (long long)shape[i], gr__d(x).s);
        if (shape[i] == -1) frees++;
        p.shape[i] = shape[i];
    }
    if (frees > 1) return gr__fail(g, GR_ERR_VALUE, "gr_reshape: more than one -1 in the new shape of %s", gr__d(x).s);
    if (gr__static_overflows(ndim, p.shape))         /* also keeps gr__reshape_resolve's product in range */
        return gr__fail(g, GR_ERR_VALUE, "gr_reshape: the element count of the new shape %s of %s overflows",
                        gr__shape_str(buf, sizeof buf, ndim, p.shape), gr__d(x).s);
    if (gr__static_known(x) && !gr__reshape_resolve(&p, gr__shape_size(x->ndim, x->shape), tmp))
        return gr__fail(g, GR_ERR_SHAPE, "gr_reshape: cannot reshape %s of shape %s to %s", gr__d(x).s, gr__vs(x).s,
                        gr__shape_str(buf, sizeof buf, ndim, p.shape));
    return gr__node1(g, &gr__op_Reshape, &p, sizeof p, 1, &x);
}

GR_API gr_var *gr_flatten(gr_var *x) {
    int64_t m1 = -1;
    return gr_reshape(x, 1, &m1);
}

static gr_status gr__Reshape_infer(const gr_node *node, gr_type *out) {
    const gr__reshape_params *p = (const gr__reshape_params *)node->params;
    gr_var *x = node->in[0];
    out->dtype = (gr_dtype)x->dtype;
    out->ndim = p->ndim;
    gr__reshape_resolve(p, gr__static_known(x) ? gr__shape_size(x->ndim, x->shape) : -1, out->shape);
    return GR_OK;
}
static gr_status gr__Reshape_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__reshape_params *p = (const gr__reshape_params *)node->params;
    if (!gr__reshape_resolve(p, in[0]->size, out[0]->shape)) {
        char buf[200];
        return gr_node_error(node, GR_ERR_SHAPE, "cannot reshape %s of shape %s to %s", gr__d(node->in[0]).s, gr__as(in[0]).s,
                             gr__shape_str(buf, sizeof buf, p->ndim, p->shape));
    }
    return GR_OK;
}
static gr_status gr__Reshape_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    if (in[0]->size) memcpy(out[0]->data, in[0]->data, (size_t)in[0]->size * gr__dsize(in[0]->dtype));
    return GR_OK;
}
static gr_status gr__Reshape_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr_reshape_like(og[0], node->in[0]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Reshape_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__node1(node->graph, &gr__op_Reshape, node->params, node->params_size, 1, &ev[0]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- ReshapeLike: a's data in ref's shape ---------------------------------------------------- */

GR_API gr_var *gr_reshape_like(gr_var *x, gr_var *ref) {
    gr_var *args[2];
    gr_graph *g;
    args[0] = x; args[1] = ref;
    if (!gr__operands("gr_reshape_like", 2, args, &g)) return NULL;
    if (gr__static_known(x) && gr__static_known(ref) &&
        gr__shape_size(x->ndim, x->shape) != gr__shape_size(ref->ndim, ref->shape))
        return gr__fail(g, GR_ERR_SHAPE, "gr_reshape_like: %s %s and %s %s differ in size", gr__d(x).s, gr__vs(x).s,
                        gr__d(ref).s, gr__vs(ref).s);
    return gr__node1(g, &gr__op_ReshapeLike, NULL, 0, 2, args);
}

static gr_status gr__ReshapeLike_infer(const gr_node *node, gr_type *out) {
    gr_var_type(node->in[1], out);
    out->dtype = (gr_dtype)node->in[0]->dtype;
    return GR_OK;
}
static gr_status gr__ReshapeLike_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    if (in[0]->size != in[1]->size)
        return gr_node_error(node, GR_ERR_SHAPE, "%s of shape %s does not have the %lld elements of %s", gr__d(node->in[0]).s,
                             gr__as(in[0]).s, (long long)in[1]->size, gr__d(node->in[1]).s);
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[i] = in[1]->shape[i];
    return GR_OK;
}
static gr_status gr__ReshapeLike_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    return gr__Reshape_perform(node, in, out);
}
static gr_status gr__ReshapeLike_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *args[2];
    args[0] = og[0]; args[1] = node->in[0];
    ig[0] = gr__node1(node->graph, &gr__op_ReshapeLike, NULL, 0, 2, args);
    ig[1] = gr_disconnected_like(node->in[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__ReshapeLike_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *args[2];
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    args[0] = ev[0]; args[1] = node->in[1];
    orop[0] = gr__node1(node->graph, &gr__op_ReshapeLike, NULL, 0, 2, args);
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- BroadcastLike ----------------------------------------------------------------------------- */

GR_API gr_var *gr_broadcast_like(gr_var *x, gr_var *ref) {
    gr_var *args[2];
    gr_graph *g;
    int i, off;
    args[0] = x; args[1] = ref;
    if (!gr__operands("gr_broadcast_like", 2, args, &g)) return NULL;
    off = ref->ndim - x->ndim;
    if (off < 0)
        return gr__fail(g, GR_ERR_SHAPE, "gr_broadcast_like: %s %s has more dimensions than %s %s", gr__d(x).s, gr__vs(x).s,
                        gr__d(ref).s, gr__vs(ref).s);
    for (i = 0; i < x->ndim; i++) {
        int64_t a = x->shape[i], b = ref->shape[off + i];
        if (a >= 0 && a != 1 && b >= 0 && a != b)
            return gr__fail(g, GR_ERR_SHAPE, "gr_broadcast_like: %s %s does not broadcast to %s %s", gr__d(x).s, gr__vs(x).s,
                            gr__d(ref).s, gr__vs(ref).s);
    }
    return gr__node1(g, &gr__op_BroadcastLike, NULL, 0, 2, args);
}

static gr_status gr__BroadcastLike_infer(const gr_node *node, gr_type *out) {
    gr_var *x = node->in[0], *ref = node->in[1];
    int i, off = ref->ndim - x->ndim;
    gr_var_type(ref, out);
    out->dtype = (gr_dtype)x->dtype;
    for (i = 0; i < x->ndim; i++)
        if (out->shape[off + i] < 0 && x->shape[i] > 1) out->shape[off + i] = x->shape[i];
    return GR_OK;
}
/* x's shape broadcasts to target's (right-aligned) */
static int gr__broadcasts_to(const gr_array *x, const gr_array *target) {
    int i, off = target->ndim - x->ndim;
    if (off < 0) return 0;
    for (i = 0; i < x->ndim; i++)
        if (x->shape[i] != 1 && x->shape[i] != target->shape[off + i]) return 0;
    return 1;
}
static gr_status gr__BroadcastLike_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    if (!gr__broadcasts_to(in[0], in[1]))
        return gr_node_error(node, GR_ERR_SHAPE, "%s of shape %s does not broadcast to shape %s of %s", gr__d(node->in[0]).s,
                             gr__as(in[0]).s, gr__as(in[1]).s, gr__d(node->in[1]).s);
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[i] = in[1]->shape[i];
    return GR_OK;
}
/* out = in broadcast to out's shape */
static void gr__broadcast_copy(const gr_array *in, gr_array *out) {
    gr__bloop L;
    int64_t idx[GR_MAX_NDIM], n, rows, r, j;
    size_t es = gr__dsize(out->dtype);
    int i;
    if (out->size == 0) return;
    gr__bloop_init(&L, out, 1, &in);
    if (L.nd == 0) { memcpy(out->data, in->data, es); return; }
    n = L.shape[L.nd - 1];
    rows = out->size / n;
    for (i = 0; i < L.nd; i++) idx[i] = 0;
    for (r = 0; r < rows; r++) {
        int64_t off = 0;
        const char *s;
        char *d = (char *)out->data + (size_t)(r * n) * es;
        for (i = 0; i < L.nd - 1; i++) off += idx[i] * L.st[1][i];
        s = (const char *)in->data + off;
        if (L.st[1][L.nd - 1]) memcpy(d, s, (size_t)n * es);
        else if (es == 8) { int64_t v; memcpy(&v, s, 8); for (j = 0; j < n; j++) ((int64_t *)(void *)d)[j] = v; }
        else if (es == 4) { int32_t v; memcpy(&v, s, 4); for (j = 0; j < n; j++) ((int32_t *)(void *)d)[j] = v; }
        else memset(d, *(const unsigned char *)s, (size_t)n);
        for (i = L.nd - 2; i >= 0; i--) { if (++idx[i] < L.shape[i]) break; idx[i] = 0; }
    }
}
static gr_status gr__BroadcastLike_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    gr__broadcast_copy(in[0], out[0]);
    return GR_OK;
}
static gr_status gr__BroadcastLike_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr_reduce_like(og[0], node->in[0]);
    ig[1] = gr_disconnected_like(node->in[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__BroadcastLike_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr_broadcast_like(ev[0], node->in[1]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- ReduceLike -------------------------------------------------------------------------------- */

GR_API gr_var *gr_reduce_like(gr_var *x, gr_var *ref) {
    gr_var *args[2];
    gr_graph *g;
    int i, off;
    args[0] = x; args[1] = ref;
    if (!gr__operands("gr_reduce_like", 2, args, &g)) return NULL;
    off = x->ndim - ref->ndim;
    if (off < 0)
        return gr__fail(g, GR_ERR_SHAPE, "gr_reduce_like: %s %s has fewer dimensions than %s %s", gr__d(x).s, gr__vs(x).s,
                        gr__d(ref).s, gr__vs(ref).s);
    for (i = 0; i < ref->ndim; i++) {
        int64_t a = ref->shape[i], b = x->shape[off + i];
        if (a >= 0 && a != 1 && b >= 0 && a != b)
            return gr__fail(g, GR_ERR_SHAPE, "gr_reduce_like: %s %s does not broadcast to %s %s", gr__d(ref).s, gr__vs(ref).s,
                            gr__d(x).s, gr__vs(x).s);
    }
    if (x->dtype == GR_BOOL) {           /* bools are counted, as by gr_sum (the kernels sum into I64 or floats) */
        args[0] = gr_cast(x, GR_I64);
        if (!args[0]) return NULL;
    }
    return gr__node1(g, &gr__op_ReduceLike, NULL, 0, 2, args);
}

static gr_status gr__ReduceLike_infer(const gr_node *node, gr_type *out) {
    gr_var_type(node->in[1], out);
    out->dtype = (gr_dtype)node->in[0]->dtype;
    return GR_OK;
}
static gr_status gr__ReduceLike_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    if (!gr__broadcasts_to(in[1], in[0]))
        return gr_node_error(node, GR_ERR_SHAPE, "shape %s of %s does not broadcast to shape %s of %s", gr__as(in[1]).s,
                             gr__d(node->in[1]).s, gr__as(in[0]).s, gr__d(node->in[0]).s);
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[i] = in[1]->shape[i];
    return GR_OK;
}
static gr_status gr__ReduceLike_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[0], *ref = in[1];
    uint32_t mask = 0;
    int i, off = x->ndim - ref->ndim;
    (void)node;
    for (i = 0; i < x->ndim; i++)
        if (i < off || (ref->shape[i - off] == 1 && x->shape[i] != 1)) mask |= 1u << i;
    gr__reduce_sum_into(x, mask, out[0]);
    return GR_OK;
}
static gr_status gr__ReduceLike_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr_broadcast_like(og[0], node->in[0]);
    ig[1] = gr_disconnected_like(node->in[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__ReduceLike_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr_reduce_like(ev[0], node->in[1]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- SizeRatio: size(a) / size(b) as a 0-d float (a constant of the shapes only) ---------- */

typedef struct gr__size_ratio_params { int dtype; } gr__size_ratio_params;

static gr_var *gr__size_ratio(gr_var *a, gr_var *b, int dtype) {
    gr__size_ratio_params p;
    gr_var *args[2];
    gr_graph *g;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_size_ratio", 2, args, &g)) return NULL;
    if (!gr__is_float(dtype)) return gr__fail(g, GR_ERR_VALUE, "gr_size_ratio: the dtype must be a float dtype");
    memset(&p, 0, sizeof p);
    p.dtype = dtype;
    return gr__node1(g, &gr__op_SizeRatio, &p, sizeof p, 2, args);
}
GR_API gr_var *gr_size_ratio(gr_var *a, gr_var *b, gr_dtype dtype) { return gr__size_ratio(a, b, (int)dtype); }

static gr_status gr__SizeRatio_infer(const gr_node *node, gr_type *out) {
    out->dtype = (gr_dtype)((const gr__size_ratio_params *)node->params)->dtype;
    out->ndim = 0;
    return GR_OK;
}
static gr_status gr__SizeRatio_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node; (void)in; (void)out;
    return GR_OK;
}
static gr_status gr__SizeRatio_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    gr__store(out[0]->dtype, out[0]->data, 0, in[1]->size ? (double)in[0]->size / (double)in[1]->size : 0.0);
    return GR_OK;
}
static gr_status gr__SizeRatio_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    (void)og;
    ig[0] = gr_disconnected_like(node->in[0]);
    ig[1] = gr_disconnected_like(node->in[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__SizeRatio_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node; (void)ev;
    orop[0] = NULL;                      /* depends on shapes only: no tangent */
    return GR_OK;
}

/* ---- outer ------------------------------------------------------------------------------------- */

GR_API gr_var *gr_outer(gr_var *a, gr_var *b) {
    static const int col[2] = { 0, GR_NEWAXIS }, row[2] = { GR_NEWAXIS, 0 };
    gr_var *args[2];
    gr_graph *g;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_outer", 2, args, &g)) return NULL;
    if (a->ndim != 1) a = gr_flatten(a);
    if (b->ndim != 1) b = gr_flatten(b);
    return gr_mul(gr__dimshuffle(a, 2, col, 0), gr__dimshuffle(b, 2, row, 0));
}
