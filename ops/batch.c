/* ops/batch.c: batching, for Jacobians evaluated in one pass over their rows.

   gr__vectorize (src/jacobian.c) rebuilds a graph in which some variables gained a leading batch
   axis of size B; each op says how through its table row's `batch` column:
     ew, reduce, DimShuffle, axis, same   rules that rebuild the op on the batched operands;
     map                                  the Batched op: the original op applied to every row,
                                          through views into the rows (contiguous: no copies).
   Also EyeLike, the identity seed of the batch, and Unflatten, which gives a Jacobian its shape.
   Batched has a gradient and an R-op (the op's own rules applied to one row, then batched), so
   Jacobians can be differentiated again: Rop or grad of a Jacobian, third derivatives.

   Shapes: EyeLike ref -> (size(ref), *shape(ref)); Unflatten x (size(ref), *r) -> (*shape(ref), *r);
           Batched: row shapes (B, *s_i) -> (B, *s_out) for the batched inputs, others as they are. */

/* ---- EyeLike -------------------------------------------------------------------------------- */

typedef struct gr__dtype_params { int dtype; } gr__dtype_params;

static gr_var *gr__eye_like(gr_var *ref, int dtype) {
    gr__dtype_params p;
    gr_graph *g;
    if (!gr__operands("eye_like", 1, &ref, &g)) return NULL;
    if (ref->ndim + 1 > GR_MAX_NDIM) return gr__fail(g, GR_ERR_VALUE, "gr_jacobian: %s has too many dimensions", gr__d(ref).s);
    memset(&p, 0, sizeof p);
    p.dtype = dtype;
    return gr__node1(g, &gr__op_EyeLike, &p, sizeof p, 1, &ref);
}
static gr_status gr__EyeLike_infer(const gr_node *node, gr_type *out) {
    gr_var *ref = node->in[0];
    int i;
    out->dtype = (gr_dtype)((const gr__dtype_params *)node->params)->dtype;
    out->ndim = ref->ndim + 1;
    out->shape[0] = gr__static_known(ref) ? gr__shape_size(ref->ndim, ref->shape) : -1;
    for (i = 0; i < ref->ndim; i++) out->shape[i + 1] = ref->shape[i];
    return GR_OK;
}
static gr_status gr__EyeLike_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    (void)node;
    out[0]->shape[0] = in[0]->size;
    for (i = 0; i < in[0]->ndim; i++) out[0]->shape[i + 1] = in[0]->shape[i];
    return GR_OK;
}
static gr_status gr__EyeLike_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t m = in[0]->size, k;
    (void)node;
    memset(out[0]->data, 0, (size_t)out[0]->size * gr__dsize(out[0]->dtype));
    for (k = 0; k < m; k++) gr__store(out[0]->dtype, out[0]->data, k * m + k, 1.0);
    return GR_OK;
}
static gr_status gr__EyeLike_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    (void)og;
    ig[0] = gr_disconnected_like(node->in[0]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__EyeLike_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node; (void)ev;
    orop[0] = NULL;                      /* a constant of the shapes only */
    return GR_OK;
}

/* ---- Unflatten -------------------------------------------------------------------------------- */

static gr_var *gr__unflatten(gr_var *x, gr_var *ref) {
    gr_var *args[2];
    gr_graph *g;
    args[0] = x; args[1] = ref;
    if (!gr__operands("unflatten", 2, args, &g)) return NULL;
    if (x->ndim < 1 || ref->ndim + x->ndim - 1 > GR_MAX_NDIM)
        return gr__fail(g, GR_ERR_VALUE, "gr_jacobian: the result would have %d dimensions (at most %d)", ref->ndim + x->ndim - 1, GR_MAX_NDIM);
    return gr__node1(g, &gr__op_Unflatten, NULL, 0, 2, args);
}
static gr_status gr__Unflatten_infer(const gr_node *node, gr_type *out) {
    gr_var *x = node->in[0], *ref = node->in[1];
    int i;
    out->dtype = (gr_dtype)x->dtype;
    out->ndim = ref->ndim + x->ndim - 1;
    for (i = 0; i < ref->ndim; i++) out->shape[i] = ref->shape[i];
    for (i = 1; i < x->ndim; i++) out->shape[ref->ndim + i - 1] = x->shape[i];
    return GR_OK;
}
static gr_status gr__Unflatten_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    if (in[0]->shape[0] != in[1]->size)
        return gr_node_error(node, GR_ERR_SHAPE, "leading axis %lld of %s does not match the %lld elements of %s",
                             (long long)in[0]->shape[0], gr__d(node->in[0]).s, (long long)in[1]->size, gr__d(node->in[1]).s);
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[i] = in[1]->shape[i];
    for (i = 1; i < in[0]->ndim; i++) out[0]->shape[in[1]->ndim + i - 1] = in[0]->shape[i];
    return GR_OK;
}
static gr_status gr__Unflatten_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    return gr__Reshape_perform(node, in, out);
}
static gr_status gr__Unflatten_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr_reshape_like(og[0], node->in[0]);
    ig[1] = gr_disconnected_like(node->in[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__Unflatten_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__unflatten(ev[0], node->in[1]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- Batched: an op applied to every row --------------------------------------------------------
   params: this header, then n_in gr_type (the row types of the inputs), then the op's params.
   The type rule builds the op's node over row-typed placeholders in the node's own graph (again
   in every copy of the graph) and keeps it in `inner`: perform and the shape rule run it on
   views of the rows. */

typedef struct gr__batched_params {
    const gr_op_def *op;
    gr_node *inner;                      /* filled by the type rule, in this node's graph */
    uint32_t batched;                    /* bit i: input i has the leading batch axis */
    int n_in;
    size_t inner_psize;
} gr__batched_params;

static gr_node *gr__batched_inner(const gr_node *node) { return ((const gr__batched_params *)node->params)->inner; }

#define GR__BP_TYPES(p) ((gr_type *)(void *)((char *)(p) + ((sizeof(gr__batched_params) + 15u) & ~(size_t)15u)))
#define GR__BP_INNER(p) ((void *)(GR__BP_TYPES(p) + (p)->n_in))

static gr_status gr__map_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr_graph *g = node->graph;
    size_t head = (sizeof(gr__batched_params) + 15u) & ~(size_t)15u;
    size_t size = head + sizeof(gr_type) * (size_t)node->n_in + node->params_size;
    gr__batched_params *p;
    int i;
    if (node->n_out != 1)
        return gr__error(g, GR_ERR_GRAD_NOT_IMPLEMENTED, "gr_jacobian: %s has several outputs and no batching rule", node->op->name);
    if (node->n_in > 32) return gr__error(g, GR_ERR_VALUE, "gr_jacobian: %s has too many inputs to batch", node->op->name);
    p = (gr__batched_params *)gr__calloc(1, size);
    if (!p) return gr__error(g, GR_ERR_NOMEM, "out of memory");
    p->op = node->op;
    p->n_in = node->n_in;
    p->inner_psize = node->params_size;
    for (i = 0; i < node->n_in; i++) {
        if (batched[i]) p->batched |= 1u << i;
        gr_var_type(node->in[i], &GR__BP_TYPES(p)[i]);
    }
    if (node->params_size) memcpy(GR__BP_INNER(p), node->params, node->params_size);
    out[0] = gr__node1(g, &gr__op_Batched, p, size, node->n_in, in);
    GR_FREE(p);
    return out[0] ? GR_OK : g->status;
}

static gr_status gr__Batched_infer(const gr_node *node, gr_type *out) {
    gr__batched_params *p = (gr__batched_params *)node->params;    /* the node's own copy */
    gr_graph *g = node->graph;
    gr_var *ph[32], *res = NULL;
    int i, lead = -1;
    gr_status st;
    for (i = 0; i < p->n_in; i++) {
        const gr_type *t = &GR__BP_TYPES(p)[i];
        ph[i] = gr__new_var(g, (int)t->dtype, t->ndim, t->shape, GR__VK_INPUT);
        if (!ph[i]) return GR_ERR_NOMEM;
        if (lead < 0 && (p->batched & (1u << i))) lead = i;
    }
    st = gr__make_node(g, p->op, GR__BP_INNER(p), p->inner_psize, p->n_in, ph, &res);
    if (st != GR_OK) return st;
    p->inner = res->owner;
    if (res->ndim + 1 > GR_MAX_NDIM) return gr__error(g, GR_ERR_VALUE, "gr_jacobian: a batched %s has too many dimensions", p->op->name);
    out->dtype = (gr_dtype)res->dtype;
    out->ndim = res->ndim + 1;
    out->shape[0] = lead >= 0 ? node->in[lead]->shape[0] : 1;
    for (i = 0; i < res->ndim; i++) out->shape[i + 1] = res->shape[i];
    return GR_OK;
}

/* row k of every input: a view, or the input itself when not batched; returns the batch size */
static int64_t gr__batched_rows(const gr_node *node, const gr_array *const *in, gr_array *rows, const gr_array **row_ptrs, int64_t k) {
    const gr__batched_params *p = (const gr__batched_params *)node->params;
    int64_t B = -1;
    int i, d;
    for (i = 0; i < p->n_in; i++) {
        if (!(p->batched & (1u << i))) { row_ptrs[i] = in[i]; continue; }
        if (B < 0) B = in[i]->shape[0];
        rows[i] = *in[i];
        rows[i].ndim = in[i]->ndim - 1;
        for (d = 0; d < rows[i].ndim; d++) rows[i].shape[d] = in[i]->shape[d + 1];
        rows[i].size = in[i]->shape[0] ? in[i]->size / in[i]->shape[0] : gr__shape_size(rows[i].ndim, rows[i].shape);
        rows[i].data = (char *)in[i]->data + (size_t)(k * rows[i].size) * gr__dsize(in[i]->dtype);
        row_ptrs[i] = &rows[i];
    }
    return B;
}

static gr_status gr__Batched_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__batched_params *p = (const gr__batched_params *)node->params;
    gr_array rows[32], row_out;
    const gr_array *row_ptrs[32];
    gr_array *row_out_ptr = &row_out;
    gr_node *inner = p->inner;
    int64_t B;
    int i;
    gr_status st;
    B = gr__batched_rows(node, in, rows, row_ptrs, 0);
    for (i = 0; i < p->n_in; i++)
        if ((p->batched & (1u << i)) && in[i]->shape[0] != B)
            return gr_node_error(node, GR_ERR_SHAPE, "batched inputs of %s have %lld and %lld rows", p->op->name,
                                 (long long)B, (long long)in[i]->shape[0]);
    memset(&row_out, 0, sizeof row_out);
    row_out.dtype = (gr_dtype)inner->out[0]->dtype;
    row_out.ndim = inner->out[0]->ndim;
    st = p->op->shape ? p->op->shape(inner, row_ptrs, &row_out_ptr) : gr__like0_shape(inner, row_ptrs, &row_out_ptr);
    if (st != GR_OK) return st;
    out[0]->shape[0] = B;
    for (i = 0; i < row_out.ndim; i++) out[0]->shape[i + 1] = row_out.shape[i];
    return GR_OK;
}

static gr_status gr__Batched_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__batched_params *p = (const gr__batched_params *)node->params;
    gr_array rows[32], row_out;
    const gr_array *row_ptrs[32];
    gr_array *row_out_ptr = &row_out;
    int64_t B = out[0]->shape[0], k, row_size = B ? out[0]->size / B : 0;
    int d;
    row_out = *out[0];
    row_out.ndim = out[0]->ndim - 1;
    for (d = 0; d < row_out.ndim; d++) row_out.shape[d] = out[0]->shape[d + 1];
    row_out.size = row_size;
    /* a dot whose left operand carries the batch is one matrix product over all the rows */
    if (p->op == &gr__op_Dot && p->batched == 1u && in[0]->ndim == 3 && !((const gr__dot_params *)GR__BP_INNER(p))->ta) {
        gr_array a = *in[0], c = *out[0];
        const gr_array *ab[2];
        gr_array *cp = &c;
        a.ndim = 2; a.shape[0] = in[0]->shape[0] * in[0]->shape[1]; a.shape[1] = in[0]->shape[2];
        c.ndim = in[1]->ndim == 2 ? 2 : 1;
        c.shape[0] = a.shape[0];
        if (in[1]->ndim == 2) c.shape[1] = out[0]->shape[2];
        ab[0] = &a; ab[1] = in[1];
        return p->op->perform(p->inner, ab, &cp);
    }
    for (k = 0; k < B; k++) {
        gr_status st;
        gr__batched_rows(node, in, rows, row_ptrs, k);
        row_out.data = (char *)out[0]->data + (size_t)(k * row_size) * gr__dsize(out[0]->dtype);
        st = p->op->perform(p->inner, row_ptrs, &row_out_ptr);
        if (st != GR_OK) return st;
    }
    return GR_OK;
}

/* Derivatives of a row-by-row op are the op's own derivatives, row by row: the rule is applied
   once to the inner node (over row-typed placeholders), and the resulting row graph is batched by
   gr__vectorize with the placeholders of batched inputs replaced by those inputs (and the row
   cotangent or tangents by the batched ones), the others by the node's unbatched inputs. */
static gr_status gr__grad(const char *fname, gr_var *cost, int n_wrt, gr_var *const *wrt, gr_var **grads, const gr_grad_opts *opts);
static gr_status gr__rop_by_pullback(const gr_node *node, gr_var *const *ev, gr_var **orop);
static gr_status gr__vectorize(gr_graph *g, int n_seed, gr_var *const *seed, gr_var *const *seed_b, int n_sub, gr_var *const *sub,
                               gr_var *const *sub_to, int n, gr_var *const *roots, gr_var **out, uint8_t *out_b);

/* row[k] (a graph over the inner placeholders and the row seeds rs[0..n_rs)) batched: out[k] and
   whether it gained the batch axis; seeds rs[i] become rs_to[i], batched when rs_b[i] */
static gr_status gr__batched_rows_graph(const gr_node *node, int n_rs, gr_var *const *rs, gr_var *const *rs_to, const uint8_t *rs_b,
                                        int n, gr_var *const *row, gr_var **out, uint8_t *out_b) {
    const gr__batched_params *p = (const gr__batched_params *)node->params;
    gr_graph *g = node->graph;
    int m = p->n_in + n_rs, i, ns = 0, nb = 0;
    gr_var **buf = (gr_var **)gr__calloc((size_t)(4 * m + 1), sizeof(gr_var *));
    gr_var **seed = buf, **seed_b = buf + m, **sub = buf + 2 * m, **sub_to = buf + 3 * m;
    gr_status st;
    if (!buf) return gr__error(g, GR_ERR_NOMEM, "out of memory");
    for (i = 0; i < p->n_in; i++) {
        if (p->batched & (1u << i)) { seed[nb] = p->inner->in[i]; seed_b[nb++] = node->in[i]; }
        else { sub[ns] = p->inner->in[i]; sub_to[ns++] = node->in[i]; }
    }
    for (i = 0; i < n_rs; i++) {
        if (rs_b[i]) { seed[nb] = rs[i]; seed_b[nb++] = rs_to[i]; }
        else { sub[ns] = rs[i]; sub_to[ns++] = rs_to[i]; }
    }
    st = gr__vectorize(g, nb, seed, seed_b, ns, sub, sub_to, n, row, out, out_b);
    GR_FREE(buf);
    return st;
}

static gr_status gr__Batched_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__batched_params *p = (const gr__batched_params *)node->params;
    gr_graph *g = node->graph;
    gr_var *y = p->inner->out[0], *u, **rows = NULL, **res = NULL;
    uint8_t *isb = NULL, one = 1;
    gr_grad_opts o;
    gr_status st = GR_OK;
    int i;
    if (gr_is_disconnected(og[0])) {
        for (i = 0; i < node->n_in; i++) if (!(ig[i] = gr_disconnected_like(node->in[i]))) return g->status;
        return GR_OK;
    }
    u = gr__new_var(g, gr__grad_dtype(y), y->ndim, y->shape, GR__VK_INPUT);     /* the row cotangent */
    rows = (gr_var **)gr__calloc((size_t)(2 * node->n_in + 1), sizeof(gr_var *));
    isb = (uint8_t *)gr__calloc((size_t)node->n_in + 1, 1);
    if (!u || !rows || !isb) { st = gr__error(g, GR_ERR_NOMEM, "out of memory"); goto done; }
    res = rows + node->n_in;
    memset(&o, 0, sizeof o);
    o.known_vars = &y;
    o.known_grads = &u;
    o.n_known = 1;
    o.disconnected_inputs = GR_IGNORE;
    o.return_disconnected = GR_RETURN_DISCONNECTED;
    o.null_gradients = GR_NULL_RETURN;
    o.no_names = 1;
    if ((st = gr__grad("the gradient of a batched op", NULL, p->n_in, p->inner->in, rows, &o)) != GR_OK) goto done;
    for (i = 0; i < node->n_in; i++) {
        if (gr__is_marker(rows[i])) res[i] = rows[i];
        else if ((st = gr__batched_rows_graph(node, 1, &u, &og[0], &one, 1, &rows[i], &res[i], &isb[i])) != GR_OK) goto done;
    }
    for (i = 0; i < node->n_in; i++) {
        gr_var *x = node->in[i], *r = res[i];
        if (gr_is_disconnected(r)) ig[i] = gr_disconnected_like(x);
        else if (gr_is_null(r)) ig[i] = r;
        else if (p->batched & (1u << i)) ig[i] = isb[i] ? r : gr__spread_to(r, x);   /* unbatched: zeros, shaped up */
        else ig[i] = isb[i] ? gr_sum_axis(r, 0) : r;                                  /* shared by every row: summed */
        if (!ig[i]) { st = g->status; goto done; }
    }
done:
    GR_FREE(rows); GR_FREE(isb);
    return st;
}

static gr_status gr__Batched_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__batched_params *p = (const gr__batched_params *)node->params;
    gr_graph *g = node->graph;
    int n = p->n_in, i, n_rs = 0;
    gr_var **t = (gr_var **)gr__calloc((size_t)(3 * n + 1), sizeof(gr_var *)), **rs = t + n, **rs_to = t + 2 * n, *r = NULL;
    uint8_t *rs_b = (uint8_t *)gr__calloc((size_t)n + 1, 1), isb = 0;
    gr_status st = GR_OK;
    orop[0] = NULL;
    if (!t || !rs_b) { st = gr__error(g, GR_ERR_NOMEM, "out of memory"); goto done; }
    for (i = 0; i < n; i++) {                        /* row tangents: placeholders where a tangent flows */
        gr_var *x = p->inner->in[i];
        if (gr_is_disconnected(ev[i])) { t[i] = ev[i]; continue; }
        t[i] = gr__new_var(g, ev[i]->dtype, x->ndim, x->shape, GR__VK_INPUT);
        if (!t[i]) { st = g->status; goto done; }
        rs[n_rs] = t[i]; rs_to[n_rs] = ev[i]; rs_b[n_rs++] = (uint8_t)((p->batched >> i) & 1u);
    }
    st = p->op->rop ? p->op->rop(p->inner, t, &r) : gr__rop_by_pullback(p->inner, t, &r);
    if (st != GR_OK || g->status != GR_OK) { st = g->status != GR_OK ? g->status : st; goto done; }
    if (!r || gr__is_marker(r)) goto done;
    if ((st = gr__batched_rows_graph(node, n_rs, rs, rs_to, rs_b, 1, &r, &orop[0], &isb)) != GR_OK) goto done;
    if (!isb) orop[0] = gr__spread_to(orop[0], node->out[0]);   /* the same for every row */
    if (!orop[0]) st = g->status;
done:
    GR_FREE(t); GR_FREE(rs_b);
    return st;
}

/* ---- batching rules ------------------------------------------------------------------------------ */

/* unary ops that do not care about shapes: the same op on the batched operand */
static gr_status gr__same_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    (void)batched;
    out[0] = gr__node1(node->graph, node->op, node->params, node->params_size, node->n_in, in);
    return out[0] ? GR_OK : node->graph->status;
}

/* elementwise: batched operands get their missing axes after the batch axis; NumPy broadcasting
   aligns the rest on the right */
static gr_status gr__ew_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr_var *xs[3];
    int d = node->out[0]->ndim, i;
    for (i = 0; i < node->n_in; i++) {
        int n_i = node->in[i]->ndim;
        xs[i] = in[i];
        if (batched[i] && n_i < d) {
            int pattern[GR_MAX_NDIM], k, m = 0;
            pattern[m++] = 0;
            for (k = 0; k < d - n_i; k++) pattern[m++] = GR_NEWAXIS;
            for (k = 0; k < n_i; k++) pattern[m++] = k + 1;
            xs[i] = gr__dimshuffle(in[i], m, pattern, 0);
            if (!xs[i]) return node->graph->status;
        }
    }
    out[0] = gr__node1(node->graph, node->op, NULL, 0, node->n_in, xs);
    return out[0] ? GR_OK : node->graph->status;
}

static gr_status gr__reduce_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr__reduce_params p = *gr__rp(node);
    (void)batched;
    if (node->in[0]->ndim + 1 > GR_MAX_NDIM) return gr__map_batch(node, in, batched, out);
    p.mask <<= 1;
    out[0] = gr__node1(node->graph, node->op, &p, sizeof p, 1, in);
    return out[0] ? GR_OK : node->graph->status;
}

static gr_status gr__DimShuffle_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    const gr__dimshuffle_params *p = gr__dsp(node);
    int pattern[GR_MAX_NDIM], i;
    if (p->n + 1 > GR_MAX_NDIM) return gr__map_batch(node, in, batched, out);
    pattern[0] = 0;
    for (i = 0; i < p->n; i++) pattern[i + 1] = p->pattern[i] < 0 ? GR_NEWAXIS : p->pattern[i] + 1;
    out[0] = gr__dimshuffle(in[0], p->n + 1, pattern, 0);
    return out[0] ? GR_OK : node->graph->status;
}

/* ops with one axis parameter: the axis moves one to the right */
static gr_status gr__axis_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr__axis_params p = *(const gr__axis_params *)node->params;
    (void)batched;
    p.axis += 1;
    out[0] = gr__node1(node->graph, node->op, &p, sizeof p, 1, in);
    return out[0] ? GR_OK : node->graph->status;
}
