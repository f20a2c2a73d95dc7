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
        if (!(seen & (1u << i)) && strict && gr__vshape(x)[i] != 1)
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

static const gr__dimshuffle_params *gr__dsp(const gr_node *node) { return (const gr__dimshuffle_params *)gr__params(node); }

static gr_status gr__DimShuffle_infer(const gr_node *node, gr_type *out) {
    const gr__dimshuffle_params *p = gr__dsp(node);
    int i;
    out->dtype = (gr_dtype)gr__in(node)[0]->dtype;
    out->ndim = p->n;
    for (i = 0; i < p->n; i++) out->shape[i] = p->pattern[i] < 0 ? 1 : gr__vshape(gr__in(node)[0])[p->pattern[i]];
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
                                 gr__d(gr__in(node)[0]).s, (long long)in[0]->shape[i]);
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
    int inv[GR_MAX_NDIM], i, nd = gr__in(node)[0]->ndim;
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

/* its signature: the input's axes in the pattern's order, broadcastable ones added */
static void gr__DimShuffle_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    const gr__dimshuffle_params *p = gr__dsp(node);
    int32_t s[GR_MAX_NDIM];
    int i;
    gr__sig_copy(rw, gr__in(node)[0], s);
    for (i = 0; i < p->n; i++) out[i] = p->pattern[i] < 0 ? GR__SIG_ONE : s[p->pattern[i]];
}
/* a DimShuffle of a DimShuffle is one (none when they cancel); of zeros, zeros */
static gr_var *gr__DimShuffle_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    const gr__dimshuffle_params *p = (const gr__dimshuffle_params *)params;
    gr_var *x = in[0], *z, *ref;
    if (gr__owner(x) && gr__owner(x)->op == op) {                        /* compose the two patterns */
        const gr__dimshuffle_params *q = gr__dsp(gr__owner(x));
        gr__dimshuffle_params c;
        int i, identity = p->n == gr__in(gr__owner(x))[0]->ndim;
        memset(&c, 0, sizeof c);
        c.n = p->n;
        for (i = 0; i < p->n; i++) {
            c.pattern[i] = p->pattern[i] < 0 ? GR_NEWAXIS : q->pattern[p->pattern[i]];
            if (c.pattern[i] != i) identity = 0;
        }
        if (identity) return gr__replaced(done, gr__in(gr__owner(x))[0]);
        return gr__replaced(done, gr__rw1(rw, op, &c, sizeof c, 1, gr__in(gr__owner(x))));
    }
    if (!gr__rw_zeros(x, &z) || !z) return NULL;                          /* (a 0-d zero: as it is) */
    if (!(ref = gr__rw1(rw, op, params, sizeof *p, 1, &z))) return gr__replaced(done, NULL);
    return gr__replaced(done, gr__rw_zero_fill(rw, x->dtype, ref));
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
    if (gr__static_known(x) && !gr__reshape_resolve(&p, gr__shape_size(x->ndim, gr__vshape(x)), tmp))
        return gr__fail(g, GR_ERR_SHAPE, "gr_reshape: cannot reshape %s of shape %s to %s", gr__d(x).s, gr__vs(x).s,
                        gr__shape_str(buf, sizeof buf, ndim, p.shape));
    return gr__node1(g, &gr__op_Reshape, &p, sizeof p, 1, &x);
}

GR_API gr_var *gr_flatten(gr_var *x) {
    int64_t m1 = -1;
    return gr_reshape(x, 1, &m1);
}

static gr_status gr__Reshape_infer(const gr_node *node, gr_type *out) {
    const gr__reshape_params *p = (const gr__reshape_params *)gr__params(node);
    gr_var *x = gr__in(node)[0];
    out->dtype = (gr_dtype)x->dtype;
    out->ndim = p->ndim;
    gr__reshape_resolve(p, gr__static_known(x) ? gr__shape_size(x->ndim, gr__vshape(x)) : -1, out->shape);
    return GR_OK;
}
static gr_status gr__Reshape_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__reshape_params *p = (const gr__reshape_params *)gr__params(node);
    if (!gr__reshape_resolve(p, in[0]->size, out[0]->shape)) {
        char buf[200];
        return gr_node_error(node, GR_ERR_SHAPE, "cannot reshape %s of shape %s to %s", gr__d(gr__in(node)[0]).s, gr__as(in[0]).s,
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
    ig[0] = gr_reshape_like(og[0], gr__in(node)[0]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Reshape_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__node1(node->graph, &gr__op_Reshape, gr__params(node), node->params_size, 1, &ev[0]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* a Reshape of a Reshape is one */
static gr_var *gr__Reshape_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    const gr_node *n = gr__owner(in[0]);
    if (!n || n->op != op) return NULL;
    return gr__replaced(done, gr__rw1(rw, op, params, sizeof(gr__reshape_params), 1, gr__in(n)));
}

/* ---- ReshapeLike: a's data in ref's shape ---------------------------------------------------- */

GR_API gr_var *gr_reshape_like(gr_var *x, gr_var *ref) {
    gr_var *args[2];
    gr_graph *g;
    args[0] = x; args[1] = ref;
    if (!gr__operands("gr_reshape_like", 2, args, &g)) return NULL;
    if (gr__static_known(x) && gr__static_known(ref) &&
        gr__shape_size(x->ndim, gr__vshape(x)) != gr__shape_size(ref->ndim, gr__vshape(ref)))
        return gr__fail(g, GR_ERR_SHAPE, "gr_reshape_like: %s %s and %s %s differ in size", gr__d(x).s, gr__vs(x).s,
                        gr__d(ref).s, gr__vs(ref).s);
    return gr__node1(g, &gr__op_ReshapeLike, NULL, 0, 2, args);
}

static gr_status gr__ReshapeLike_infer(const gr_node *node, gr_type *out) {
    gr_var_type(gr__in(node)[1], out);
    out->dtype = (gr_dtype)gr__in(node)[0]->dtype;
    return GR_OK;
}
static gr_status gr__ReshapeLike_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    if (in[0]->size != in[1]->size)
        return gr_node_error(node, GR_ERR_SHAPE, "%s of shape %s does not have the %lld elements of %s", gr__d(gr__in(node)[0]).s,
                             gr__as(in[0]).s, (long long)in[1]->size, gr__d(gr__in(node)[1]).s);
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[i] = in[1]->shape[i];
    return GR_OK;
}
static gr_status gr__ReshapeLike_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    return gr__Reshape_perform(node, in, out);
}
static gr_status gr__ReshapeLike_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *args[2];
    args[0] = og[0]; args[1] = gr__in(node)[0];
    ig[0] = gr__node1(node->graph, &gr__op_ReshapeLike, NULL, 0, 2, args);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__ReshapeLike_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *args[2];
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    args[0] = ev[0]; args[1] = gr__in(node)[1];
    orop[0] = gr__node1(node->graph, &gr__op_ReshapeLike, NULL, 0, 2, args);
    return orop[0] ? GR_OK : node->graph->status;
}

/* the signature of BroadcastLike, ReduceLike and ReshapeLike: ref's (input 1), when as many axes */
static void gr__like1_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    if (gr__in(node)[1]->ndim == gr__out(node)[0]->ndim) gr__sig_copy(rw, gr__in(node)[1], out);
}
/* zeros in ref's shape are zeros filled to it; x already in ref's shape is x */
static gr_var *gr__ReshapeLike_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    gr_var *z;
    (void)op; (void)params;
    if (gr__rw_zeros(in[0], &z)) return gr__replaced(done, gr__rw_zero_fill(rw, in[0]->dtype, in[1]));
    if (in[0]->ndim == in[1]->ndim && gr__sig_same(rw, in[0], in[1])) return gr__replaced(done, in[0]);
    return NULL;
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
        int64_t a = gr__vshape(x)[i], b = gr__vshape(ref)[off + i];
        if (a >= 0 && a != 1 && b >= 0 && a != b)
            return gr__fail(g, GR_ERR_SHAPE, "gr_broadcast_like: %s %s does not broadcast to %s %s", gr__d(x).s, gr__vs(x).s,
                            gr__d(ref).s, gr__vs(ref).s);
    }
    return gr__node1(g, &gr__op_BroadcastLike, NULL, 0, 2, args);
}

static gr_status gr__BroadcastLike_infer(const gr_node *node, gr_type *out) {
    gr_var *x = gr__in(node)[0], *ref = gr__in(node)[1];
    int i, off = ref->ndim - x->ndim;
    gr_var_type(ref, out);
    out->dtype = (gr_dtype)x->dtype;
    for (i = 0; i < x->ndim; i++)
        if (out->shape[off + i] < 0 && gr__vshape(x)[i] > 1) out->shape[off + i] = gr__vshape(x)[i];
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
        return gr_node_error(node, GR_ERR_SHAPE, "%s of shape %s does not broadcast to shape %s of %s", gr__d(gr__in(node)[0]).s,
                             gr__as(in[0]).s, gr__as(in[1]).s, gr__d(gr__in(node)[1]).s);
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
    ig[0] = gr_reduce_like(og[0], gr__in(node)[0]);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__BroadcastLike_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr_broadcast_like(ev[0], gr__in(node)[1]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* the fill the rewrites make: x broadcast to the shape of ref (src/rewrite.h) */
static gr_var *gr__rw_fill(gr__rewriter *rw, gr_var *x, gr_var *ref) {
    gr_var *args[2];
    args[0] = x; args[1] = ref;
    return gr__rw1(rw, &gr__op_BroadcastLike, NULL, 0, 2, args);
}
/* filled zeros (not a 0-d zero: that is the fill itself) are zeros filled to ref; x already in ref's
   shape is x */
static gr_var *gr__BroadcastLike_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    gr_var *z;
    (void)op; (void)params;
    if (gr__rw_zeros(in[0], &z) && z) return gr__replaced(done, gr__rw_zero_fill(rw, in[0]->dtype, in[1]));
    if (gr__sig_same(rw, in[0], in[1])) return gr__replaced(done, in[0]);
    return NULL;
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
        int64_t a = gr__vshape(ref)[i], b = gr__vshape(x)[off + i];
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
    gr_var_type(gr__in(node)[1], out);
    out->dtype = (gr_dtype)gr__in(node)[0]->dtype;
    return GR_OK;
}
static gr_status gr__ReduceLike_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    if (!gr__broadcasts_to(in[1], in[0]))
        return gr_node_error(node, GR_ERR_SHAPE, "shape %s of %s does not broadcast to shape %s of %s", gr__as(in[1]).s,
                             gr__d(gr__in(node)[1]).s, gr__as(in[0]).s, gr__d(gr__in(node)[0]).s);
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[i] = in[1]->shape[i];
    return GR_OK;
}
/* the axes of x that ReduceLike sums: those ref lacks, and those ref has as 1 where x does not */
static uint32_t gr__reducelike_mask(const gr_array *x, const gr_array *ref) {
    uint32_t mask = 0;
    int i, off = x->ndim - ref->ndim;
    for (i = 0; i < x->ndim; i++)
        if (i < off || (ref->shape[i - off] == 1 && x->shape[i] != 1)) mask |= 1u << i;
    return mask;
}
static gr_status gr__ReduceLike_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[0];
    uint32_t mask = gr__reducelike_mask(x, in[1]);
    (void)node;
    gr__reduce_sum_into(x, mask, out[0]);
    return GR_OK;
}
static gr_status gr__ReduceLike_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr_broadcast_like(og[0], gr__in(node)[0]);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__ReduceLike_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr_reduce_like(ev[0], gr__in(node)[1]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* zeros summed down are zeros in ref's shape; x already in ref's shape is x */
static gr_var *gr__ReduceLike_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    gr_var *z;
    (void)op; (void)params;
    if (gr__rw_zeros(in[0], &z)) return gr__replaced(done, gr__rw_zero_fill(rw, in[0]->dtype, in[1]));
    if (gr__sig_same(rw, in[0], in[1])) return gr__replaced(done, in[0]);
    return NULL;
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
    out->dtype = (gr_dtype)((const gr__size_ratio_params *)gr__params(node))->dtype;
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
    ig[0] = gr_disconnected_like(gr__in(node)[0]);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
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

#ifndef GR_NO_JOIN                  /* ops/table.h, op families: to zeros_like, then Tile to the end */
/* ==== joining, splitting, broadcasting, tiling ===================================================

   Join, Split, BroadcastTo, Tile and Untile; the builders gr_concatenate, gr_stack, gr_split,
   gr_broadcast_to, gr_tile, and gr_zeros_like, gr_ones_like, gr_arange built from other ops.

   Shapes (Join and Split keep their axis counted from the end, so that a leading batch axis added
   for a Jacobian leaves it alone):
     Join         x_i (*pre, n_i, *post) -> (*pre, sum n_i, *post), any number of operands
     Split        x (*pre, n, *post) -> k outputs (*pre, s_j, *post) with sum s_j = n, any k; the
                  sizes s_j follow the params (gr_split), or (Join's gradient) are the axis lengths
                  of k reference inputs x_1..x_k that give only their shapes
     BroadcastTo  x -> the given shape, NumPy's broadcasting (x right-aligned against it)
     Tile         x (s) by reps (r), both left-padded with 1s to m = max(len r, ndim x) axes ->
                  (r_0 s_0, ..., r_m-1 s_m-1)
     Untile       g (*b, r_0 s_0, ...) with ref (s) -> (*b, *s): g summed over its tiles, the
                  axes Tile prepended summed away: the adjoint of Tile (b: leading batch axes)
   zeros_like and ones_like are BroadcastLike of a constant (the operand gives only its shape);
   arange is a constant computed when it is built.

   Split's row says -1 outputs, as Fused's: a node has as many as it has pieces (gr__make_node_n).
   Its flag CONN0 is its connection pattern for any arity: input 0 reaches every output, the
   references none. */

static gr_status gr__map_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out);

typedef struct gr__join_params { int axis; } gr__join_params;     /* axis - ndim: from the end */

/* Split's parameters; with refs == 0 the k sizes (int64_t) follow them */
typedef struct gr__split_params {
    int axis;                            /* axis - ndim: from the end */
    int refs;                            /* 1: the sizes are the axis lengths of inputs 1..k */
} gr__split_params;

/* ---- building ---------------------------------------------------------------------------------- */

/* one Join node over n operands of one dtype and ndim; one operand is itself */
static gr_var *gr__join_node(gr_graph *g, int n, gr_var *const *xs, int axis) {
    gr__join_params p;
    if (n == 1) return xs[0];
    memset(&p, 0, sizeof p);
    p.axis = axis;
    return gr__node1(g, &gr__op_Join, &p, sizeof p, n, xs);
}

/* the dtype n joined operands take: bools stay bools, anything else promotes as in elementwise ops */
static int gr__join_dtype(int n, gr_var *const *xs) {
    int i;
    for (i = 0; i < n; i++) if (xs[i]->dtype != GR_BOOL || gr__is_weak(xs[i])) return gr__promote(n, xs);
    return GR_BOOL;
}

/* the operands of gr_concatenate / gr_stack brought to one dtype (and, for gr_stack, a new axis
   at `insert`), then joined along axis a of the result */
static gr_var *gr__join_build(gr_graph *g, int n, gr_var *const *xs, int insert, int a, int nd_out) {
    gr_var *stack_buf[16], **cs = stack_buf, *y = NULL;
    int T = gr__join_dtype(n, xs), i;
    if (n > 16) {
        cs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)n);
        if (!cs) return gr__fail(g, GR_ERR_NOMEM, "out of memory (%d operands to join)", n);
    }
    for (i = 0; i < n; i++) {
        cs[i] = gr__coerce(xs[i], T);
        if (cs[i] && insert >= 0) {
            int pattern[GR_MAX_NDIM], d, m = 0;
            for (d = 0; d < nd_out - 1; d++) {
                if (d == insert) pattern[m++] = GR_NEWAXIS;
                pattern[m++] = d;
            }
            if (insert == nd_out - 1) pattern[m++] = GR_NEWAXIS;
            cs[i] = gr__dimshuffle(cs[i], nd_out, pattern, 0);
        }
        if (!cs[i]) goto done;
    }
    y = gr__join_node(g, n, cs, a - nd_out);
done:
    if (cs != stack_buf) GR_FREE(cs);
    return y;
}

/* common checks of gr_concatenate and gr_stack: same ndim (else GR_ERR_TYPE) and static shapes
   that agree outside `skip` (-1: everywhere; else GR_ERR_SHAPE) */
static int gr__join_check(const char *fname, gr_graph *g, int n, gr_var *const *xs, int skip) {
    int i, d, nd = xs[0]->ndim;
    for (i = 1; i < n; i++)
        if (xs[i]->ndim != nd) {
            gr__error(g, GR_ERR_TYPE, "%s: operand %d %s has %d dimensions, operand 0 %s has %d", fname, i, gr__d(xs[i]).s,
                      xs[i]->ndim, gr__d(xs[0]).s, nd);
            return 0;
        }
    for (d = 0; d < nd; d++) {
        int known = -1;                              /* the first operand whose size along d is known */
        if (d == skip) continue;
        for (i = 0; i < n; i++) {
            if (gr__vshape(xs[i])[d] < 0) continue;
            if (known < 0) { known = i; continue; }
            if (gr__vshape(xs[i])[d] != gr__vshape(xs[known])[d]) {
                gr__error(g, GR_ERR_SHAPE, "%s: operand %d %s of shape %s and operand %d %s of shape %s differ along axis %d%s", fname,
                          known, gr__d(xs[known]).s, gr__vs(xs[known]).s, i, gr__d(xs[i]).s, gr__vs(xs[i]).s, d,
                          skip >= 0 ? " (only the joining axis may differ)" : "");
                return 0;
            }
        }
    }
    return 1;
}

GR_API gr_var *gr_concatenate(int n, gr_var *const *xs, int axis) {
    gr_graph *g;
    int a, nd;
    if (n < 1 || !xs) return NULL;                  /* no operand: no graph to report to */
    if (!gr__operands("gr_concatenate", n, xs, &g)) return NULL;
    nd = xs[0]->ndim;
    if (nd == 0) return gr__fail(g, GR_ERR_VALUE, "gr_concatenate: operand 0 %s is 0-d and has no axis to join along", gr__d(xs[0]).s);
    a = gr__axis(axis, nd);
    if (a < 0) return gr__fail(g, GR_ERR_VALUE, "gr_concatenate: axis %d out of range for %s with %d dimensions", axis, gr__d(xs[0]).s, nd);
    if (!gr__join_check("gr_concatenate", g, n, xs, a)) return NULL;
    return gr__join_build(g, n, xs, -1, a, nd);
}

GR_API gr_var *gr_stack(int n, gr_var *const *xs, int axis) {
    gr_graph *g;
    int a, nd;
    if (n < 1 || !xs) return NULL;                  /* no operand: no graph to report to */
    if (!gr__operands("gr_stack", n, xs, &g)) return NULL;
    nd = xs[0]->ndim;
    if (nd + 1 > GR_MAX_NDIM)
        return gr__fail(g, GR_ERR_VALUE, "gr_stack: the result would have %d dimensions (at most %d)", nd + 1, GR_MAX_NDIM);
    a = gr__axis(axis, nd + 1);
    if (a < 0) return gr__fail(g, GR_ERR_VALUE, "gr_stack: axis %d out of range for a result with %d dimensions", axis, nd + 1);
    if (!gr__join_check("gr_stack", g, n, xs, -1)) return NULL;
    return gr__join_build(g, n, xs, a, a, nd + 1);
}

/* one Split node: the n pieces of x with sizes known when built (their sum already checked) */
static gr_status gr__split_static(gr_graph *g, gr_var *x, int axis, int n, const int64_t *sizes, gr_var **out) {
    int64_t stack_buf[1 + 16], *buf = stack_buf;      /* the parameters, then the sizes */
    size_t psize = sizeof(int64_t) * (size_t)(1 + n);
    gr__split_params p;
    gr_status st;
    if (n > 16 && !(buf = (int64_t *)GR_MALLOC(psize)))
        return gr__error(g, GR_ERR_NOMEM, "gr_split: out of memory (%d pieces of %s)", n, gr__d(x).s);
    memset(&p, 0, sizeof p);
    p.axis = axis;
    memcpy(buf, &p, sizeof p);
    memcpy(buf + 1, sizes, sizeof(int64_t) * (size_t)n);
    st = gr__make_node_n(g, &gr__op_Split, buf, psize, 1, &x, n, out);
    if (buf != stack_buf) GR_FREE(buf);
    return st;
}

GR_API gr_status gr_split(gr_var *x, int axis, int n, const int64_t *sizes, gr_var **out) {
    gr_graph *g;
    int64_t total = 0;
    int i, a;
    gr_status st;
    if (out) for (i = 0; i < n; i++) out[i] = NULL;
    if (!gr__operands("gr_split", 1, &x, &g)) return g && g->status != GR_OK ? g->status : GR_ERR_VALUE;
    if (!out) return gr__error(g, GR_ERR_VALUE, "gr_split: out is NULL (splitting %s)", gr__d(x).s);
    if (n < 1) return gr__error(g, GR_ERR_VALUE, "gr_split: %d pieces of %s (at least 1)", n, gr__d(x).s);
    if (!sizes) return gr__error(g, GR_ERR_VALUE, "gr_split: sizes is NULL (splitting %s)", gr__d(x).s);
    if (x->ndim == 0) return gr__error(g, GR_ERR_VALUE, "gr_split: %s is 0-d and has no axis to split", gr__d(x).s);
    a = gr__axis(axis, x->ndim);
    if (a < 0) return gr__error(g, GR_ERR_VALUE, "gr_split: axis %d out of range for %s with %d dimensions", axis, gr__d(x).s, x->ndim);
    for (i = 0; i < n; i++) {
        if (sizes[i] < 0) return gr__error(g, GR_ERR_VALUE, "gr_split: negative size %lld of piece %d of %s", (long long)sizes[i], i, gr__d(x).s);
        if (total > INT64_MAX - sizes[i]) return gr__error(g, GR_ERR_VALUE, "gr_split: the sizes of the pieces of %s overflow", gr__d(x).s);
        total += sizes[i];
    }
    if (gr__vshape(x)[a] >= 0 && total != gr__vshape(x)[a])
        return gr__error(g, GR_ERR_SHAPE, "gr_split: the %d sizes add up to %lld, but axis %d of %s of shape %s has length %lld", n,
                         (long long)total, a, gr__d(x).s, gr__vs(x).s, (long long)gr__vshape(x)[a]);
    st = gr__split_static(g, x, a - x->ndim, n, sizes, out);
    if (st != GR_OK) {
        for (i = 0; i < n; i++) out[i] = NULL;
        return g->status != GR_OK ? g->status : st;
    }
    return GR_OK;
}

/* pieces of x along axis (from the end) shaped like refs[0..k) there (Join's gradient) */
static gr_status gr__split_like(gr_graph *g, gr_var *x, int axis, int k, gr_var *const *refs, gr_var **out) {
    gr__split_params p;
    gr_var *stack_buf[1 + 16], **ins = stack_buf;
    gr_status st;
    int j;
    if (k > 16 && !(ins = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(k + 1))))
        return gr__error(g, GR_ERR_NOMEM, "Join: out of memory (the gradient of %d operands)", k);
    memset(&p, 0, sizeof p);
    p.axis = axis;
    p.refs = 1;
    ins[0] = x;
    for (j = 0; j < k; j++) ins[j + 1] = refs[j];
    st = gr__make_node_n(g, &gr__op_Split, &p, sizeof p, k + 1, ins, k, out);
    if (ins != stack_buf) GR_FREE(ins);
    return st;
}

/* ---- Join ---------------------------------------------------------------------------------------- */

static gr_status gr__Join_infer(const gr_node *node, gr_type *out) {
    const gr__join_params *p = (const gr__join_params *)gr__params(node);
    gr_var *x0 = gr__in(node)[0];
    int nd = x0->ndim, a = nd + p->axis, i, d;
    int64_t total = 0;
    if (a < 0 || a >= nd) return gr__error(node->graph, GR_ERR_VALUE, "Join: axis %d out of range for %s with %d dimensions", a, gr__d(x0).s, nd);
    gr_var_type(x0, out);
    for (i = 0; i < node->n_in; i++) {
        gr_var *x = gr__in(node)[i];
        if (x->dtype != x0->dtype || x->ndim != nd)
            return gr__error(node->graph, GR_ERR_TYPE, "Join: operand %d %s is %s with %d dimensions, operand 0 %s is %s with %d", i,
                             gr__d(x).s, gr_dtype_name((gr_dtype)x->dtype), x->ndim, gr__d(x0).s, gr_dtype_name((gr_dtype)x0->dtype), nd);
        for (d = 0; d < nd; d++) {
            if (d == a || gr__vshape(x)[d] < 0) continue;
            if (out->shape[d] >= 0 && out->shape[d] != gr__vshape(x)[d]) {
                char b1[200];
                return gr__error(node->graph, GR_ERR_SHAPE, "Join: operand %d %s of shape %s does not match the shape %s of the others "
                                 "along axis %d", i, gr__d(x).s, gr__vs(x).s, gr__shape_str(b1, sizeof b1, nd, out->shape), d);
            }
            out->shape[d] = gr__vshape(x)[d];
        }
        if (total >= 0) {
            if (gr__vshape(x)[a] < 0) total = -1;
            else if (total > INT64_MAX - gr__vshape(x)[a])
                return gr__error(node->graph, GR_ERR_SHAPE, "Join: the lengths along axis %d overflow", a);
            else total += gr__vshape(x)[a];
        }
    }
    out->shape[a] = total;
    return GR_OK;
}

static gr_status gr__Join_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__join_params *p = (const gr__join_params *)gr__params(node);
    int nd = in[0]->ndim, a = nd + p->axis, i, d;
    int64_t total = 0;
    for (i = 0; i < node->n_in; i++) {
        for (d = 0; d < nd; d++)
            if (d != a && in[i]->shape[d] != in[0]->shape[d])
                return gr_node_error(node, GR_ERR_SHAPE, "operand %d %s of shape %s and operand 0 %s of shape %s differ along axis %d "
                                     "(only axis %d may differ)", i, gr__d(gr__in(node)[i]).s, gr__as(in[i]).s, gr__d(gr__in(node)[0]).s,
                                     gr__as(in[0]).s, d, a);
        total += in[i]->shape[a];                   /* arrays in memory: no overflow */
    }
    for (d = 0; d < nd; d++) out[0]->shape[d] = in[0]->shape[d];
    out[0]->shape[a] = total;
    return GR_OK;
}

/* its signature: operand 0's along every axis but the joined one (the call checks that the operands
   agree there) */
static void gr__Join_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    const gr__join_params *p = (const gr__join_params *)gr__params(node);
    int32_t s[GR_MAX_NDIM];
    int nd = gr__out(node)[0]->ndim, a = nd + p->axis, d;
    gr__sig_copy(rw, gr__in(node)[0], s);
    for (d = 0; d < nd; d++)
        if (d != a) out[d] = s[d];
}

/* the product of shape[0..a) and of shape[a+1..nd) */
static void gr__around_axis(int nd, const int64_t *shape, int a, int64_t *outer, int64_t *inner) {
    int d;
    *outer = 1; *inner = 1;
    for (d = 0; d < a; d++) *outer *= shape[d];
    for (d = a + 1; d < nd; d++) *inner *= shape[d];
}

/* out = [x_0 | x_1 | ...] along the axis: for each position before it, one block of each operand */
static gr_status gr__Join_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__join_params *p = (const gr__join_params *)gr__params(node);
    int a = out[0]->ndim + p->axis, i;
    int64_t outer, inner, o;
    size_t es = gr__dsize(out[0]->dtype);
    char *dst = (char *)out[0]->data;
    if (out[0]->size == 0) return GR_OK;
    gr__around_axis(out[0]->ndim, out[0]->shape, a, &outer, &inner);
    for (o = 0; o < outer; o++)
        for (i = 0; i < node->n_in; i++) {
            size_t block = (size_t)(in[i]->shape[a] * inner) * es;
            if (block) memcpy(dst, (const char *)in[i]->data + (size_t)o * block, block);
            dst += block;
        }
    return GR_OK;
}

/* the gradient of a join is the split of gz into pieces shaped like the operands */
static gr_status gr__Join_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    int i;
    if (!gr__is_float(gr__out(node)[0]->dtype)) {
        for (i = 0; i < node->n_in; i++) if (!(ig[i] = gr__zeros_grad(gr__in(node)[i]))) return node->graph->status;
        return GR_OK;
    }
    return gr__split_like(node->graph, og[0], ((const gr__join_params *)gr__params(node))->axis, node->n_in, gr__in(node), ig);
}

/* linear: the join of the tangents, zeros for operands without one */
static gr_status gr__Join_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *stack_buf[16], **vs = stack_buf;
    int i, any = 0;
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype)) return GR_OK;
    for (i = 0; i < node->n_in; i++) if (!gr_is_disconnected(ev[i])) any = 1;
    if (!any) return GR_OK;
    if (node->n_in > 16 && !(vs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)node->n_in)))
        return gr__error(node->graph, GR_ERR_NOMEM, "Join: out of memory (the R-op of %d operands)", (int)node->n_in);
    for (i = 0; i < node->n_in; i++) {
        vs[i] = gr_is_disconnected(ev[i]) ? gr__zeros_grad(gr__in(node)[i]) : ev[i];
        if (!vs[i]) break;
    }
    orop[0] = i == node->n_in ? gr__join_node(node->graph, node->n_in, vs, ((const gr__join_params *)gr__params(node))->axis) : NULL;
    if (vs != stack_buf) GR_FREE(vs);
    return orop[0] ? GR_OK : node->graph->status;
}

/* every operand batched: the same join (its axis counts from the end); some not: row by row */
static gr_status gr__Join_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    int i;
    for (i = 0; i < node->n_in; i++) if (!batched[i]) return gr__map_batch(node, in, batched, out);
    out[0] = gr__node1(node->graph, node->op, gr__params(node), node->params_size, node->n_in, in);
    return out[0] ? GR_OK : node->graph->status;
}

/* ---- Split ----------------------------------------------------------------------------------------- */

static const gr__split_params *gr__spp(const gr_node *node) { return (const gr__split_params *)gr__params(node); }
static const int64_t *gr__split_sizes(const gr_node *node) { return (const int64_t *)gr__params(node) + 1; }   /* refs == 0 */

static gr_status gr__Split_infer(const gr_node *node, gr_type *out) {
    const gr__split_params *p = gr__spp(node);
    gr_var *x = gr__in(node)[0];
    int k = node->n_out, a = x->ndim + p->axis, j, known = 1;
    int64_t total = 0;
    if (a < 0 || a >= x->ndim) return gr__error(node->graph, GR_ERR_VALUE, "Split: axis %d out of range for %s with %d dimensions", a, gr__d(x).s, x->ndim);
    if (node->n_in != (p->refs ? k + 1 : 1))
        return gr__error(node->graph, GR_ERR_VALUE, "Split: %d inputs for %d pieces%s", (int)node->n_in, k, p->refs ? " shaped like references" : "");
    if (!p->refs && node->params_size != sizeof(int64_t) * (size_t)(1 + k))
        return gr__error(node->graph, GR_ERR_VALUE, "Split: %lu bytes of parameters for %d pieces of %s", (unsigned long)node->params_size,
                         k, gr__d(x).s);
    for (j = 0; j < k; j++) {
        int64_t s = p->refs ? -1 : gr__split_sizes(node)[j];
        if (p->refs) {
            gr_var *r = gr__in(node)[j + 1];
            if (r->ndim + p->axis < 0)
                return gr__error(node->graph, GR_ERR_TYPE, "Split: reference %s has %d dimensions, too few for axis %d from the end",
                                 gr__d(r).s, r->ndim, -p->axis);
            s = gr__vshape(r)[r->ndim + p->axis];
        }
        gr_var_type(x, &out[j]);
        out[j].shape[a] = s;
        if (s < 0) known = 0;
        else if (total <= INT64_MAX - s) total += s;
    }
    if (known && gr__vshape(x)[a] >= 0 && total != gr__vshape(x)[a])
        return gr__error(node->graph, GR_ERR_SHAPE, "Split: the %d pieces add up to %lld along axis %d, but %s has shape %s", k,
                         (long long)total, a, gr__d(x).s, gr__vs(x).s);
    return GR_OK;
}

static gr_status gr__Split_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__split_params *p = gr__spp(node);
    const gr_array *x = in[0];
    int k = node->n_out, a = x->ndim + p->axis, j, d;
    int64_t total = 0;
    for (j = 0; j < k; j++) {
        int64_t s = p->refs ? in[j + 1]->shape[in[j + 1]->ndim + p->axis] : gr__split_sizes(node)[j];
        for (d = 0; d < x->ndim; d++) out[j]->shape[d] = x->shape[d];
        out[j]->shape[a] = s;
        total += s;                                 /* lengths of arrays or checked sizes: no overflow */
    }
    if (total != x->shape[a])
        return gr_node_error(node, GR_ERR_SHAPE, "the %d pieces add up to %lld along axis %d, but %s has shape %s", k, (long long)total,
                             a, gr__d(gr__in(node)[0]).s, gr__as(x).s);
    return GR_OK;
}

static gr_status gr__Split_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[0];
    int a = x->ndim + gr__spp(node)->axis, j;
    int64_t outer, inner, o;
    size_t es = gr__dsize(x->dtype);
    const char *src = (const char *)x->data;
    if (x->size == 0) return GR_OK;
    gr__around_axis(x->ndim, x->shape, a, &outer, &inner);
    for (o = 0; o < outer; o++)
        for (j = 0; j < node->n_out; j++) {
            size_t block = (size_t)(out[j]->shape[a] * inner) * es;
            if (block) memcpy((char *)out[j]->data + (size_t)o * block, src, block);
            src += block;
        }
    return GR_OK;
}

/* the join of the output gradients. A piece that does not reach the cost has a disconnected
   gradient: it contributes zeros shaped like itself (Theano#1589, Aesara#1200) */
static gr_status gr__Split_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *stack_buf[16], **pieces = stack_buf, *x = gr__in(node)[0];
    int i, j;
    for (i = 1; i < node->n_in; i++) if (!(ig[i] = gr_disconnected_like(gr__in(node)[i]))) return node->graph->status;
    if (!gr__is_float(x->dtype)) {
        ig[0] = gr__zeros_grad(x);
        return ig[0] ? GR_OK : node->graph->status;
    }
    for (j = 0; j < node->n_out; j++)
        if (gr_is_null(og[j])) { ig[0] = og[j]; return GR_OK; }    /* a null gradient poisons x anyway */
    if (node->n_out > 16 && !(pieces = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)node->n_out)))
        return gr__error(node->graph, GR_ERR_NOMEM, "Split: out of memory (the gradient of %d pieces)", (int)node->n_out);
    for (j = 0; j < node->n_out; j++) {
        pieces[j] = gr_is_disconnected(og[j]) ? gr__zeros_grad(gr__out(node)[j]) : og[j];
        if (!pieces[j]) break;
    }
    ig[0] = j == node->n_out ? gr__join_node(node->graph, node->n_out, pieces, gr__spp(node)->axis) : NULL;
    if (pieces != stack_buf) GR_FREE(pieces);
    return ig[0] ? GR_OK : node->graph->status;
}

/* linear: the same split of the tangent */
static gr_status gr__Split_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *stack_buf[1 + 16], **ins = stack_buf;
    gr_status st;
    int i;
    for (i = 0; i < node->n_out; i++) orop[i] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || gr_is_disconnected(ev[0])) return GR_OK;
    if (node->n_in > 1 + 16 && !(ins = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)node->n_in)))
        return gr__error(node->graph, GR_ERR_NOMEM, "Split: out of memory (the R-op of %d pieces)", (int)node->n_out);
    ins[0] = ev[0];
    for (i = 1; i < node->n_in; i++) ins[i] = gr__in(node)[i];
    st = gr__make_node_n(node->graph, node->op, gr__params(node), node->params_size, node->n_in, ins, node->n_out, orop);
    if (ins != stack_buf) GR_FREE(ins);
    return st;
}

/* x batched: the same split (its axis counts from the end, so references may or may not be
   batched); x not batched while a reference is would give every row the same pieces, which the
   references' shapes alone cannot make: not supported */
static gr_status gr__Split_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    if (!batched[0])
        return gr__error(node->graph, GR_ERR_GRAD_NOT_IMPLEMENTED, "gr_jacobian: a Split of %s whose only batched inputs are "
                         "references (shapes) cannot be batched", gr__d(gr__in(node)[0]).s);
    return gr__make_node_n(node->graph, node->op, gr__params(node), node->params_size, node->n_in, in, node->n_out, out);
}

/* ---- BroadcastTo ----------------------------------------------------------------------------------- */

typedef struct gr__bto_params {
    int ndim;
    int64_t shape[GR_MAX_NDIM];          /* -1 (only from the batching rule): x's own aligned length */
} gr__bto_params;

GR_API gr_var *gr_broadcast_to(gr_var *x, int ndim, const int64_t *shape) {
    gr__bto_params p;
    gr_graph *g;
    char buf[200];
    int i, off, same;
    if (!gr__operands("gr_broadcast_to", 1, &x, &g)) return NULL;
    if (ndim < 0 || ndim > GR_MAX_NDIM)
        return gr__fail(g, GR_ERR_VALUE, "gr_broadcast_to: ndim %d out of range for %s (at most %d)", ndim, gr__d(x).s, GR_MAX_NDIM);
    if (ndim > 0 && !shape) return gr__fail(g, GR_ERR_VALUE, "gr_broadcast_to: shape is NULL for %s", gr__d(x).s);
    memset(&p, 0, sizeof p);
    p.ndim = ndim;
    for (i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return gr__fail(g, GR_ERR_VALUE, "gr_broadcast_to: negative size %lld in the shape for %s", (long long)shape[i], gr__d(x).s);
        p.shape[i] = shape[i];
    }
    if (gr__static_overflows(ndim, p.shape))
        return gr__fail(g, GR_ERR_VALUE, "gr_broadcast_to: the element count of the shape %s for %s overflows",
                        gr__shape_str(buf, sizeof buf, ndim, p.shape), gr__d(x).s);
    off = ndim - x->ndim;
    if (off < 0)
        return gr__fail(g, GR_ERR_SHAPE, "gr_broadcast_to: %s of shape %s has more dimensions than the shape %s", gr__d(x).s,
                        gr__vs(x).s, gr__shape_str(buf, sizeof buf, ndim, p.shape));
    same = off == 0;
    for (i = 0; i < x->ndim; i++) {
        int64_t s = gr__vshape(x)[i];
        if (s >= 0 && s != 1 && s != p.shape[off + i])
            return gr__fail(g, GR_ERR_SHAPE, "gr_broadcast_to: %s of shape %s does not broadcast to %s", gr__d(x).s, gr__vs(x).s,
                            gr__shape_str(buf, sizeof buf, ndim, p.shape));
        if (s != p.shape[off + i]) same = 0;
    }
    if (same) return x;                              /* already that shape */
    return gr__node1(g, &gr__op_BroadcastTo, &p, sizeof p, 1, &x);
}

static gr_status gr__BroadcastTo_infer(const gr_node *node, gr_type *out) {
    const gr__bto_params *p = (const gr__bto_params *)gr__params(node);
    gr_var *x = gr__in(node)[0];
    int i, off = p->ndim - x->ndim;
    char buf[200];
    if (off < 0)
        return gr__error(node->graph, GR_ERR_SHAPE, "BroadcastTo: %s of shape %s has more dimensions than the shape %s", gr__d(x).s,
                         gr__vs(x).s, gr__shape_str(buf, sizeof buf, p->ndim, p->shape));
    out->dtype = (gr_dtype)x->dtype;
    out->ndim = p->ndim;
    for (i = 0; i < p->ndim; i++) {
        int64_t s = i >= off ? gr__vshape(x)[i - off] : 1, t = p->shape[i];
        if (t < 0) {
            if (i < off) return gr__error(node->graph, GR_ERR_VALUE, "BroadcastTo: axis %d keeps the length of %s, which has no such axis", i, gr__d(x).s);
            out->shape[i] = s;
            continue;
        }
        if (s >= 0 && s != 1 && s != t)
            return gr__error(node->graph, GR_ERR_SHAPE, "BroadcastTo: %s of shape %s does not broadcast to %s", gr__d(x).s, gr__vs(x).s,
                             gr__shape_str(buf, sizeof buf, p->ndim, p->shape));
        out->shape[i] = t;
    }
    return GR_OK;
}

static gr_status gr__BroadcastTo_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__bto_params *p = (const gr__bto_params *)gr__params(node);
    int i, off = p->ndim - in[0]->ndim;
    for (i = 0; i < p->ndim; i++) {
        int64_t s = i >= off ? in[0]->shape[i - off] : 1, t = p->shape[i] < 0 ? s : p->shape[i];
        if (s != 1 && s != t) {
            char buf[200];
            return gr_node_error(node, GR_ERR_SHAPE, "%s of shape %s does not broadcast to %s", gr__d(gr__in(node)[0]).s, gr__as(in[0]).s,
                                 gr__shape_str(buf, sizeof buf, p->ndim, p->shape));
        }
        out[0]->shape[i] = t;
    }
    return GR_OK;
}

static gr_status gr__BroadcastTo_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    gr__broadcast_copy(in[0], out[0]);
    return GR_OK;
}

/* the gradient of a broadcast sums back over the broadcast axes */
static gr_status gr__BroadcastTo_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0];
    ig[0] = gr__is_float(x->dtype) ? gr__sum_to(og[0], x) : gr__zeros_grad(x);
    return ig[0] ? GR_OK : node->graph->status;
}

static gr_status gr__BroadcastTo_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__node1(node->graph, &gr__op_BroadcastTo, gr__params(node), node->params_size, 1, &ev[0]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* x (B, *s): its axes move right past the ones the broadcast prepends, and the batch axis keeps
   its length */
static gr_status gr__BroadcastTo_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr__bto_params p;
    const gr__bto_params *q = (const gr__bto_params *)gr__params(node);
    int pattern[GR_MAX_NDIM], nd = gr__in(node)[0]->ndim, i, m = 0;
    gr_var *x;
    if (q->ndim + 1 > GR_MAX_NDIM) return gr__map_batch(node, in, batched, out);
    pattern[m++] = 0;
    for (i = 0; i < q->ndim - nd; i++) pattern[m++] = GR_NEWAXIS;
    for (i = 0; i < nd; i++) pattern[m++] = i + 1;
    x = gr__dimshuffle(in[0], m, pattern, 0);
    if (!x) return node->graph->status;
    memset(&p, 0, sizeof p);
    p.ndim = q->ndim + 1;
    p.shape[0] = -1;
    for (i = 0; i < q->ndim; i++) p.shape[i + 1] = q->shape[i];
    out[0] = gr__node1(node->graph, &gr__op_BroadcastTo, &p, sizeof p, 1, &x);
    return out[0] ? GR_OK : node->graph->status;
}

#endif /* GR_NO_JOIN */

/* ---- zeros_like, ones_like, arange ------------------------------------------------------------------ */

GR_API gr_var *gr_zeros_like(gr_var *x) {
    gr_graph *g;
    if (!gr__operands("gr_zeros_like", 1, &x, &g)) return NULL;
    return gr__fill_like(x, x->dtype, 0.0);
}

GR_API gr_var *gr_ones_like(gr_var *x) {
    gr_graph *g;
    if (!gr__operands("gr_ones_like", 1, &x, &g)) return NULL;
    return gr__fill_like(x, x->dtype, 1.0);
}

/* NumPy's arange: ceil((stop - start) / step) values start + i step, computed in double and
   converted to the dtype (integers truncate toward zero); integral int64 ranges are exact */
GR_API gr_var *gr_arange(gr_graph *g, double start, double stop, double step, gr_dtype dtype) {
    gr_array *a;
    gr_var *v;
    double len;
    int64_t n, i;
    if (!g) return NULL;
    if (!gr__dtype_ok((int)dtype)) return gr__fail(g, GR_ERR_VALUE, "gr_arange: unknown dtype %d", (int)dtype);
    if (dtype == GR_BOOL) return gr__fail(g, GR_ERR_VALUE, "gr_arange: a range cannot be bool");
    if (!(start - start == 0) || !(stop - stop == 0) || !(step - step == 0))
        return gr__fail(g, GR_ERR_VALUE, "gr_arange: start %g, stop %g and step %g must be finite", start, stop, step);
    if (step == 0) return gr__fail(g, GR_ERR_VALUE, "gr_arange: the step is zero");
    len = ceil((stop - start) / step);
    if (!(len > 0)) len = 0;
    if (len > 9007199254740992.0) return gr__fail(g, GR_ERR_VALUE, "gr_arange: [%g, %g) by %g would have %g elements", start, stop, step, len);
    n = (int64_t)len;
    a = gr__array_alloc((int)dtype, 1, &n);
    if (!a) return gr__fail(g, GR_ERR_NOMEM, "out of memory (gr_arange of %lld elements)", (long long)n);
    if (dtype == GR_I64 && start == floor(start) && step == floor(step) && fabs(start) + fabs(step) * len < 9.0e18) {
        int64_t s0 = (int64_t)start, d = (int64_t)step;
        for (i = 0; i < n; i++) ((int64_t *)a->data)[i] = s0 + i * d;
    } else
        for (i = 0; i < n; i++) gr__store((int)dtype, a->data, i, start + (double)i * step);
    if (!gr__own(g, a)) return NULL;
    v = gr__new_var(g, (int)dtype, 1, &n, GR__VK_CONST);
    if (v) v->u.ext = a;
    return v;
}

#ifndef GR_NO_JOIN
/* ---- Tile and Untile ----------------------------------------------------------------------------------- */

typedef struct gr__tile_params { int n; int64_t reps[GR_MAX_NDIM]; } gr__tile_params;

/* reps and shape left-padded with 1s to m = max(n, nd) axes; returns m */
static int gr__tile_pad(const gr__tile_params *p, int nd, const int64_t *shape, int64_t *r, int64_t *s) {
    int m = p->n > nd ? p->n : nd, k;
    for (k = 0; k < m; k++) {
        r[k] = k >= m - p->n ? p->reps[k - (m - p->n)] : 1;
        s[k] = k >= m - nd ? shape[k - (m - nd)] : 1;
    }
    return m;
}

/* r s, or -1 when s is unknown (and r is not 0), or -2 when it overflows */
static int64_t gr__tile_len(int64_t r, int64_t s) {
    if (r == 0 || s == 0) return 0;
    if (s < 0) return -1;
    return r > INT64_MAX / s ? -2 : r * s;
}

GR_API gr_var *gr_tile(gr_var *x, int n, const int64_t *reps) {
    gr__tile_params p;
    gr_graph *g;
    int64_t r[GR_MAX_NDIM], s[GR_MAX_NDIM], o[GR_MAX_NDIM];
    int i, m, trivial = 1;
    char buf[200];
    if (!gr__operands("gr_tile", 1, &x, &g)) return NULL;
    if (n < 0 || n > GR_MAX_NDIM) return gr__fail(g, GR_ERR_VALUE, "gr_tile: %d repetitions for %s (0 to %d)", n, gr__d(x).s, GR_MAX_NDIM);
    if (n > 0 && !reps) return gr__fail(g, GR_ERR_VALUE, "gr_tile: reps is NULL for %s", gr__d(x).s);
    memset(&p, 0, sizeof p);
    p.n = n;
    for (i = 0; i < n; i++) {
        if (reps[i] < 0) return gr__fail(g, GR_ERR_VALUE, "gr_tile: negative repetition %lld for %s", (long long)reps[i], gr__d(x).s);
        p.reps[i] = reps[i];
        if (reps[i] != 1) trivial = 0;
    }
    if (trivial && n <= x->ndim) return x;           /* nothing repeated, no axis added */
    m = gr__tile_pad(&p, x->ndim, gr__vshape(x), r, s);
    for (i = 0; i < m; i++) {
        o[i] = gr__tile_len(r[i], s[i]);
        if (o[i] == -2) break;
    }
    if (i < m || gr__static_overflows(m, o))
        return gr__fail(g, GR_ERR_VALUE, "gr_tile: %s of shape %s tiled by %s would have too many elements", gr__d(x).s, gr__vs(x).s,
                        gr__shape_str(buf, sizeof buf, n, p.reps));
    return gr__node1(g, &gr__op_Tile, &p, sizeof p, 1, &x);
}

static gr_status gr__Tile_infer(const gr_node *node, gr_type *out) {
    const gr__tile_params *p = (const gr__tile_params *)gr__params(node);
    gr_var *x = gr__in(node)[0];
    int64_t r[GR_MAX_NDIM], s[GR_MAX_NDIM];
    int m = gr__tile_pad(p, x->ndim, gr__vshape(x), r, s), k;
    out->dtype = (gr_dtype)x->dtype;
    out->ndim = m;
    for (k = 0; k < m; k++) {
        out->shape[k] = gr__tile_len(r[k], s[k]);
        if (out->shape[k] == -2) {
            char buf[200];
            return gr__error(node->graph, GR_ERR_SHAPE, "Tile: %s of shape %s tiled by %s overflows", gr__d(x).s, gr__vs(x).s,
                             gr__shape_str(buf, sizeof buf, p->n, p->reps));
        }
    }
    return GR_OK;
}

static gr_status gr__Tile_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__tile_params *p = (const gr__tile_params *)gr__params(node);
    int64_t r[GR_MAX_NDIM], s[GR_MAX_NDIM];
    int m = gr__tile_pad(p, in[0]->ndim, in[0]->shape, r, s), k;
    for (k = 0; k < m; k++) {
        out[0]->shape[k] = gr__tile_len(r[k], s[k]);
        if (out[0]->shape[k] < 0) {
            char buf[200];
            return gr_node_error(node, GR_ERR_SHAPE, "%s of shape %s tiled by %s overflows", gr__d(gr__in(node)[0]).s, gr__as(in[0]).s,
                                 gr__shape_str(buf, sizeof buf, p->n, p->reps));
        }
    }
    return GR_OK;
}

/* each output row (all axes but the last) is a row of x, repeated r_last times: output position i
   along axis k reads x at i mod s_k */
static gr_status gr__Tile_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__tile_params *p = (const gr__tile_params *)gr__params(node);
    const gr_array *x = in[0];
    int64_t r[GR_MAX_NDIM], s[GR_MAX_NDIM], xst[GR_MAX_NDIM], idx[GR_MAX_NDIM], rows, row, len, t;
    int m = gr__tile_pad(p, x->ndim, x->shape, r, s), k;
    size_t es = gr__dsize(x->dtype), bytes;
    char *dst = (char *)out[0]->data;
    if (out[0]->size == 0) return GR_OK;
    if (m == 0) { memcpy(dst, x->data, es); return GR_OK; }
    len = s[m - 1];
    bytes = (size_t)len * es;
    xst[m - 1] = 1;
    for (k = m - 2; k >= 0; k--) xst[k] = xst[k + 1] * s[k + 1];
    rows = out[0]->size / (r[m - 1] * len);
    for (k = 0; k < m; k++) idx[k] = 0;
    for (row = 0; row < rows; row++) {
        int64_t off = 0;
        for (k = 0; k < m - 1; k++) off += (idx[k] % s[k]) * xst[k];
        for (t = 0; t < r[m - 1]; t++, dst += bytes) memcpy(dst, (const char *)x->data + (size_t)off * es, bytes);
        for (k = m - 2; k >= 0; k--) { if (++idx[k] < r[k] * s[k]) break; idx[k] = 0; }
    }
    return GR_OK;
}

static gr_var *gr__untile(gr_var *g_, gr_var *ref, const gr__tile_params *p) {
    gr_var *args[2];
    args[0] = g_; args[1] = ref;
    if (!g_ || !ref) return NULL;
    return gr__node1(g_->graph, &gr__op_Untile, p, sizeof *p, 2, args);
}

/* x tiled after its first b axes (which are repeated once): x (*b, s) -> (*b, r s) */
static gr_var *gr__tile_after(gr_graph *g, gr_var *x, int b, const gr__tile_params *p) {
    gr__tile_params q;
    int pattern[GR_MAX_NDIM], d = x->ndim - b, m = p->n > d ? p->n : d, i, k = 0;
    if (b == 0) return gr__node1(g, &gr__op_Tile, p, sizeof *p, 1, &x);
    if (b + m > GR_MAX_NDIM) return gr__fail(g, GR_ERR_VALUE, "Tile: %s with %d batch axes would have too many dimensions", gr__d(x).s, b);
    for (i = 0; i < b; i++) pattern[k++] = i;
    for (i = 0; i < m - d; i++) pattern[k++] = GR_NEWAXIS;
    for (i = 0; i < d; i++) pattern[k++] = b + i;
    if (m > d && !(x = gr__dimshuffle(x, k, pattern, 0))) return NULL;
    memset(&q, 0, sizeof q);
    q.n = b + m;
    for (i = 0; i < b; i++) q.reps[i] = 1;
    for (i = 0; i < m; i++) q.reps[b + i] = i >= m - p->n ? p->reps[i - (m - p->n)] : 1;
    return gr__node1(g, &gr__op_Tile, &q, sizeof q, 1, &x);
}

static gr_status gr__Tile_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0];
    ig[0] = gr__is_float(x->dtype) ? gr__untile(og[0], x, (const gr__tile_params *)gr__params(node)) : gr__zeros_grad(x);
    return ig[0] ? GR_OK : node->graph->status;
}

static gr_status gr__Tile_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__node1(node->graph, &gr__op_Tile, gr__params(node), node->params_size, 1, &ev[0]);
    return orop[0] ? GR_OK : node->graph->status;
}

static gr_status gr__Tile_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    const gr__tile_params *p = (const gr__tile_params *)gr__params(node);
    int d = gr__in(node)[0]->ndim, m = p->n > d ? p->n : d;
    if (m + 1 > GR_MAX_NDIM) return gr__map_batch(node, in, batched, out);
    out[0] = gr__tile_after(node->graph, in[0], 1, p);
    return out[0] ? GR_OK : node->graph->status;
}

/* Untile: the leading batch axes b = ndim(g) - m */
static int gr__untile_dims(const gr_node *node, int nd_g, int nd_ref, int *m) {
    const gr__tile_params *p = (const gr__tile_params *)gr__params(node);
    *m = p->n > nd_ref ? p->n : nd_ref;
    return nd_g - *m;
}

static gr_status gr__Untile_infer(const gr_node *node, gr_type *out) {
    const gr__tile_params *p = (const gr__tile_params *)gr__params(node);
    gr_var *g_ = gr__in(node)[0], *ref = gr__in(node)[1];
    int64_t r[GR_MAX_NDIM], s[GR_MAX_NDIM];
    int m, b = gr__untile_dims(node, g_->ndim, ref->ndim, &m), k;
    if (b < 0 || g_->dtype == GR_BOOL)
        return gr__error(node->graph, GR_ERR_TYPE, "Untile: %s (%s with %d dimensions) cannot be the tiles of %s with %d dimensions", gr__d(g_).s,
                         gr_dtype_name((gr_dtype)g_->dtype), g_->ndim, gr__d(ref).s, ref->ndim);
    gr__tile_pad(p, ref->ndim, gr__vshape(ref), r, s);
    out->dtype = (gr_dtype)g_->dtype;
    out->ndim = b + ref->ndim;
    for (k = 0; k < b; k++) out->shape[k] = gr__vshape(g_)[k];
    for (k = 0; k < m; k++) {
        int64_t gl = gr__vshape(g_)[b + k], want = gr__tile_len(r[k], s[k]);
        if (gl >= 0 && want >= 0 && gl != want) {
            char buf[200];
            return gr__error(node->graph, GR_ERR_SHAPE, "Untile: %s of shape %s is not %s of shape %s tiled by %s", gr__d(g_).s, gr__vs(g_).s,
                             gr__d(ref).s, gr__vs(ref).s, gr__shape_str(buf, sizeof buf, p->n, p->reps));
        }
        if (k >= m - ref->ndim) {
            int64_t sk = s[k];
            if (sk < 0 && gl >= 0 && r[k] > 0) sk = gl / r[k];    /* known from the tiles */
            out->shape[b + k - (m - ref->ndim)] = sk;
        }
    }
    return GR_OK;
}

static gr_status gr__Untile_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__tile_params *p = (const gr__tile_params *)gr__params(node);
    const gr_array *g_ = in[0], *ref = in[1];
    int64_t r[GR_MAX_NDIM], s[GR_MAX_NDIM];
    int m, b = gr__untile_dims(node, g_->ndim, ref->ndim, &m), k;
    gr__tile_pad(p, ref->ndim, ref->shape, r, s);
    for (k = 0; k < m; k++)
        if (g_->shape[b + k] != gr__tile_len(r[k], s[k])) {
            char buf[200];
            return gr_node_error(node, GR_ERR_SHAPE, "%s of shape %s is not %s of shape %s tiled by %s", gr__d(gr__in(node)[0]).s, gr__as(g_).s,
                                 gr__d(gr__in(node)[1]).s, gr__as(ref).s, gr__shape_str(buf, sizeof buf, p->n, p->reps));
        }
    for (k = 0; k < b; k++) out[0]->shape[k] = g_->shape[k];
    for (k = 0; k < ref->ndim; k++) out[0]->shape[b + k] = ref->shape[k];
    return GR_OK;
}

/* out[β, i] = sum over the tiles t of g[β, t s + i]: g is walked row by row (all axes but the last),
   each row adding its r_last tiles into the output row it maps to */
#define GR__UNTILE_ROW(T, ADD) do { \
        T *o_ = (T *)out[0]->data + orow; const T *g_row = (const T *)g_->data + row * glen; int64_t t_, i_; \
        for (t_ = 0; t_ < rl; t_++) for (i_ = 0; i_ < sl; i_++) o_[i_] = ADD(o_[i_], g_row[t_ * sl + i_]); \
    } while (0)
#define GR__UNTILE_FADD(a, b) ((a) + (b))
#define GR__UNTILE_IADD(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
static gr_status gr__Untile_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__tile_params *p = (const gr__tile_params *)gr__params(node);
    const gr_array *g_ = in[0], *ref = in[1];
    int64_t r[GR_MAX_NDIM + GR_MAX_NDIM], s[GR_MAX_NDIM + GR_MAX_NDIM], ost[GR_MAX_NDIM + GR_MAX_NDIM], idx[GR_MAX_NDIM + GR_MAX_NDIM];
    int64_t rows, row, rl, sl, glen;
    int m, b = gr__untile_dims(node, g_->ndim, ref->ndim, &m), D = b + m, k;
    memset(out[0]->data, 0, (size_t)out[0]->size * gr__dsize(out[0]->dtype));
    if (g_->size == 0) return GR_OK;
    if (D == 0) { memcpy(out[0]->data, g_->data, gr__dsize(g_->dtype)); return GR_OK; }
    /* axes 0..b: batch (repeated once), then the m tiled axes */
    for (k = 0; k < b; k++) { r[k] = 1; s[k] = g_->shape[k]; }
    gr__tile_pad(p, ref->ndim, ref->shape, r + b, s + b);
    ost[D - 1] = 1;
    for (k = D - 2; k >= 0; k--) ost[k] = ost[k + 1] * s[k + 1];
    rl = r[D - 1]; sl = s[D - 1]; glen = rl * sl;
    rows = g_->size / glen;
    for (k = 0; k < D; k++) idx[k] = 0;
    for (row = 0; row < rows; row++) {
        int64_t orow = 0;
        for (k = 0; k < D - 1; k++) orow += (idx[k] % s[k]) * ost[k];
        switch (g_->dtype) {
        case GR_F64: GR__UNTILE_ROW(double, GR__UNTILE_FADD); break;
        case GR_F32: GR__UNTILE_ROW(float, GR__UNTILE_FADD); break;
        default: GR__UNTILE_ROW(int64_t, GR__UNTILE_IADD); break;
        }
        for (k = D - 2; k >= 0; k--) { if (++idx[k] < r[k] * s[k]) break; idx[k] = 0; }
    }
    return GR_OK;
}
#undef GR__UNTILE_ROW
#undef GR__UNTILE_FADD
#undef GR__UNTILE_IADD

/* the gradient of a sum over tiles is the tiling of gz */
static gr_status gr__Untile_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *g_ = gr__in(node)[0];
    int m, b = gr__untile_dims(node, g_->ndim, gr__in(node)[1]->ndim, &m);
    ig[0] = gr__is_float(g_->dtype) ? gr__tile_after(node->graph, og[0], b, (const gr__tile_params *)gr__params(node)) : gr__zeros_grad(g_);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}

static gr_status gr__Untile_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__untile(ev[0], gr__in(node)[1], (const gr__tile_params *)gr__params(node));
    return orop[0] ? GR_OK : node->graph->status;
}

/* g batched: the same op, one more batch axis; a batched reference: row by row */
static gr_status gr__Untile_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    if (batched[1] || in[0]->ndim > GR_MAX_NDIM) return gr__map_batch(node, in, batched, out);
    out[0] = gr__untile(in[0], in[1], (const gr__tile_params *)gr__params(node));
    return out[0] ? GR_OK : node->graph->status;
}

#endif /* GR_NO_JOIN */

/* ---- C code generation (gr_fn_emit_c): copies in the order perform makes them ---------------------- */

static gr_status gr__DimShuffle_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    int64_t st[GR_MAX_NDIM];
    gr__dimshuffle_strides(gr__dsp(node), in[0], st);
    gr__em_gather(e, in[0]->dtype, out[0]->ndim, out[0]->shape, st, gr__em_in(e, 0), gr__em_out(e, 0));
    return GR_OK;
}
/* the same bytes (these are views of their input when planned) */
static gr_status gr__same_bytes_emit(gr__em *e, const gr_array *const *in) {
    if (in[0]->size)
        gr__em_line(e, "memmove(%s, %s, %lu);", gr__em_out(e, 0), gr__em_in(e, 0), (unsigned long)((size_t)in[0]->size * gr__dsize(in[0]->dtype)));
    return GR_OK;
}
static gr_status gr__Reshape_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)node; (void)out;
    return gr__same_bytes_emit(e, in);
}
static gr_status gr__ReshapeLike_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)node; (void)out;
    return gr__same_bytes_emit(e, in);
}
/* x broadcast to the output: a gather with 0 strides along the broadcast axes */
static gr_status gr__broadcast_emit(gr__em *e, const gr_array *const *in, const gr_array *const *out) {
    int64_t st[GR_MAX_NDIM];
    gr__em_strides(out[0], in[0], st);
    gr__em_gather(e, in[0]->dtype, out[0]->ndim, out[0]->shape, st, gr__em_in(e, 0), gr__em_out(e, 0));
    return GR_OK;
}
static gr_status gr__BroadcastLike_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)node;
    return gr__broadcast_emit(e, in, out);
}
#ifndef GR_NO_JOIN
static gr_status gr__BroadcastTo_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)node;
    return gr__broadcast_emit(e, in, out);
}
#endif
static gr_status gr__ReduceLike_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr_array *x = in[0];
    uint32_t mask = gr__reducelike_mask(x, in[1]);
    (void)node;
    gr__reduce_sum_emit(e, x, mask, out[0], gr__em_in(e, 0), gr__em_out(e, 0));
    return GR_OK;
}
/* a constant of the shapes */
static gr_status gr__SizeRatio_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    double v = in[1]->size ? (double)in[0]->size / (double)in[1]->size : 0.0;
    const char *T = gr__em_ctype(out[0]->dtype);
    (void)node;
    gr__em_line(e, "%s[0] = (%s)%s;", gr__em_out(e, 0), T, gr__em_value(e, GR_F64, &v, 0));
    return GR_OK;
}
#ifndef GR_NO_JOIN
/* for each position before the axis, one block of each operand (Join) or piece (Split): whole is the
   joined array (Join's output, Split's input), part(k) the k-th of the n others */
static gr_status gr__joinsplit_emit(gr__em *e, int split, const gr_array *whole, int axis, int n, const gr_array *const *parts) {
    int a = whole->ndim + axis, k;
    int64_t outer, inner;
    size_t es = gr__dsize(whole->dtype), row = (size_t)whole->shape[a], at = 0;
    if (whole->size == 0) return GR_OK;
    gr__around_axis(whole->ndim, whole->shape, a, &outer, &inner);
    row *= (size_t)inner * es;
    gr__em_line(e, "{");
    gr__em_line(e, split ? "const char *x = (const char *)%s;" : "char *y = (char *)%s;", split ? gr__em_in(e, 0) : gr__em_out(e, 0));
    gr__em_line(e, "for (size_t o = 0; o < %lld; o++) {", (long long)outer);
    for (k = 0; k < n; k++) {
        size_t block = (size_t)(parts[k]->shape[a] * inner) * es;
        if (block && split)
            gr__em_line(e, "memcpy((char *)%s + o * %lu, x + o * %lu + %lu, %lu);", gr__em_out(e, k), (unsigned long)block,
                        (unsigned long)row, (unsigned long)at, (unsigned long)block);
        else if (block)
            gr__em_line(e, "memcpy(y + o * %lu + %lu, (const char *)%s + o * %lu, %lu);", (unsigned long)row, (unsigned long)at,
                        gr__em_in(e, k), (unsigned long)block, (unsigned long)block);
        at += block;
    }
    gr__em_line(e, "}");
    gr__em_line(e, "}");
    return GR_OK;
}
static gr_status gr__Join_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    return gr__joinsplit_emit(e, 0, out[0], ((const gr__join_params *)gr__params(node))->axis, node->n_in, in);
}
static gr_status gr__Split_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    return gr__joinsplit_emit(e, 1, in[0], gr__spp(node)->axis, node->n_out, out);
}
/* Tile: the output's axis k as (tile, position) pairs, position i of a tile reading x at i */
static gr_status gr__Tile_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr_array *x = in[0];
    int64_t r[GR_MAX_NDIM], s[GR_MAX_NDIM], shape[2 * GR_MAX_NDIM], st[2 * GR_MAX_NDIM], xs = 1;
    int m = gr__tile_pad((const gr__tile_params *)gr__params(node), x->ndim, x->shape, r, s), k;
    if (out[0]->size == 0) return GR_OK;
    for (k = m - 1; k >= 0; k--) {
        shape[2 * k] = r[k]; shape[2 * k + 1] = s[k];
        st[2 * k] = 0; st[2 * k + 1] = xs;
        xs *= s[k];
    }
    gr__em_gather(e, x->dtype, 2 * m, shape, st, gr__em_in(e, 0), gr__em_out(e, 0));
    return GR_OK;
}
/* Untile: zeros, then g's elements in order, each added to the output element it tiles */
static gr_status gr__Untile_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr_array *g_ = in[0], *ref = in[1];
    int64_t r[2 * GR_MAX_NDIM], s[2 * GR_MAX_NDIM], shape[4 * GR_MAX_NDIM], gst[4 * GR_MAX_NDIM], ost[4 * GR_MAX_NDIM], gs = 1, os = 1;
    int m, b = gr__untile_dims(node, g_->ndim, ref->ndim, &m), D = b + m, k, n;
    const char *T = gr__em_ctype(g_->dtype);
    char oi[GR__MSG / 2], gi[GR__MSG / 2];
    for (k = 0; k < b; k++) { r[k] = 1; s[k] = g_->shape[k]; }
    gr__tile_pad((const gr__tile_params *)gr__params(node), ref->ndim, ref->shape, r + b, s + b);
    gr__em_line(e, "{");
    gr__em_line(e, "const %s *g = %s;", T, gr__em_in(e, 0));
    gr__em_line(e, "%s *o = %s;", T, gr__em_out(e, 0));
    if (out[0]->size) gr__em_line(e, "memset(o, 0, %lu);", (unsigned long)((size_t)out[0]->size * gr__dsize(g_->dtype)));
    if (g_->size && D == 0) gr__em_line(e, "memcpy(o, g, %lu);", (unsigned long)gr__dsize(g_->dtype));
    if (g_->size && D > 0) {
        for (k = D - 1; k >= 0; k--) {
            shape[2 * k] = r[k]; shape[2 * k + 1] = s[k];
            gst[2 * k + 1] = gs; gst[2 * k] = gs * s[k]; gs *= r[k] * s[k];
            ost[2 * k + 1] = os; ost[2 * k] = 0; os *= s[k];
        }
        n = gr__em_open(e, 2 * D, shape);
        snprintf(oi, sizeof oi, "%s", gr__em_index(e, 2 * D, shape, ost));
        snprintf(gi, sizeof gi, "%s", gr__em_index(e, 2 * D, shape, gst));
        if (g_->dtype == GR_I64) gr__em_line(e, "o[%s] = (int64_t)((uint64_t)o[%s] + (uint64_t)g[%s]);", oi, oi, gi);
        else gr__em_line(e, "o[%s] = o[%s] + g[%s];", oi, oi, gi);
        gr__em_close(e, n);
    }
    gr__em_line(e, "}");
    return GR_OK;
}
#endif /* GR_NO_JOIN */
