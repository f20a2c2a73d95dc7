/* ops/batch.c: batching, for Jacobians evaluated in one pass over their rows.

   gr__vectorize (src/jacobian.c) rebuilds a graph in which some variables gained a leading batch
   axis of size B; each op says how through its table row's `batch` column:
     ew, reduce, DimShuffle, axis, same   rules that rebuild the op on the batched operands;
     map                                  the Batched op: the original op applied to every row,
                                          through views into the rows (contiguous: no copies).
   Also EyeLike, the identity seed of the batch, and Unflatten, which gives a Jacobian its shape.

   Shapes: EyeLike ref -> (size(ref), *shape(ref)); Unflatten x (size(ref), *r) -> (*shape(ref), *r);
           Batched: row shapes (B, *s_i) -> (B, *s_out) for the batched inputs, others as they are. */

/* the derivative rules of the ops only gr_function makes (Banded, Fused): never asked for */
static gr_status gr__compiled_only(const gr_node *node) {
    return gr__error(node->graph, GR_ERR_VALUE, "%s nodes exist only inside compiled functions", gr__on(node->op).s);
}

#ifndef GR_NO_BATCH                  /* ops/table.h, op families: the rest of the file */

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
    gr_var *ref = gr__in(node)[0];
    int i;
    out->dtype = (gr_dtype)((const gr__dtype_params *)gr__params(node))->dtype;
    out->ndim = ref->ndim + 1;
    out->shape[0] = gr__static_known(ref) ? gr__shape_size(ref->ndim, gr__vshape(ref)) : -1;
    for (i = 0; i < ref->ndim; i++) out->shape[i + 1] = gr__vshape(ref)[i];
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
    ig[0] = gr_disconnected_like(gr__in(node)[0]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__EyeLike_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node; (void)ev;
    orop[0] = NULL;                      /* a constant of the shapes only */
    return GR_OK;
}

/* ---- Banded: a matrix given by some of its diagonals ---------------------------------------------
   Made by gr_function only (the rewrite rules below), where Jacobians and Hessians of elementwise functions of
   slices are banded: the identity seed of the batch is one diagonal, and slicing, elementwise
   scaling and the slices' gradients move or scale diagonals without ever filling a dense matrix.
   Inputs (ref, cols, c_1 .. c_d), cols and the c_i 1-d; output (size(ref), m), m = size(cols), with
       out[b, j] = sum over i with j - b == k_i and s_i <= j < e_i of c_i[j - s_i]   (every other entry 0)
   where [s_i, e_i) is a unit-step view of the m columns (s_i >= 0; e_i open, or negative: from the end;
   clamped as a slice is) and c_i has the view's length. A full band (0, open) is a whole diagonal; a
   part of one is what a slice's gradient leaves (a row placed into zeros at a view: the zeros never
   computed). params: d and each band's (k_i, s_i, e_i), offsets ascending (equal ones in the order made). */

#define GR__BANDED_MAX 16
#define GR__BANDED_C 2                   /* band i is input GR__BANDED_C + i */
typedef struct gr__band { int64_t k, s, e; } gr__band;
typedef struct gr__banded_params { int64_t n; gr__band b[GR__BANDED_MAX]; } gr__banded_params;
#define GR__BANDED_PSIZE(n) (sizeof(int64_t) + sizeof(gr__band) * (size_t)(n))

static int gr__band_full(const gr__band *b) { return b->s == 0 && b->e == GR_OPEN; }

/* band b of a (B, m) matrix: its view's columns [*vs, *ve), and the columns [*lo, *hi) where it has entries */
static void gr__band_range(const gr__band *b, int64_t B, int64_t m, int64_t *vs, int64_t *ve, int64_t *lo, int64_t *hi) {
    int64_t s = b->s < m ? b->s : m, e = b->e == GR_OPEN ? m : b->e < 0 ? m + b->e : b->e < m ? b->e : m;
    if (e < s) e = s;
    *vs = s; *ve = e;
    *lo = b->k > s ? b->k : s;
    *hi = B + b->k < e ? B + b->k : e;
}

static gr_status gr__Banded_infer(const gr_node *node, gr_type *out) {
    gr_var *ref = gr__in(node)[0], *c = gr__in(node)[GR__BANDED_C];
    out->dtype = (gr_dtype)c->dtype;
    out->ndim = 2;
    out->shape[0] = gr__static_known(ref) ? gr__shape_size(ref->ndim, gr__vshape(ref)) : -1;
    out->shape[1] = gr__vshape(gr__in(node)[1])[0];
    return GR_OK;
}
static gr_status gr__Banded_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__banded_params *p = (const gr__banded_params *)gr__params(node);
    int64_t m = in[1]->size, vs, ve, lo, hi, i;
    for (i = 0; i < p->n; i++) {                        /* the rewriter proved the lengths: a bug if not */
        gr__band_range(&p->b[i], in[0]->size, m, &vs, &ve, &lo, &hi);
        if (in[GR__BANDED_C + i]->size != ve - vs)
            return gr_node_error(node, GR_ERR_SHAPE, "diagonal %d has %lld elements for %lld of %lld columns", (int)i,
                                 (long long)in[GR__BANDED_C + i]->size, (long long)(ve - vs), (long long)m);
    }
    out[0]->shape[0] = in[0]->size;
    out[0]->shape[1] = m;
    return GR_OK;
}
static gr_status gr__Banded_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__banded_params *p = (const gr__banded_params *)gr__params(node);
    int64_t B = out[0]->shape[0], m = out[0]->shape[1], i, j, vs, ve, lo, hi;
    int dt = out[0]->dtype;
    memset(out[0]->data, 0, (size_t)out[0]->size * gr__dsize(dt));
    for (i = 0; i < p->n; i++) {
        int64_t k = p->b[i].k;
        const gr_array *c = in[GR__BANDED_C + i];
        gr__band_range(&p->b[i], B, m, &vs, &ve, &lo, &hi);
        if (dt == GR_F64 && c->dtype == GR_F64) {
            const double *cd = (const double *)c->data - vs;
            double *o = (double *)out[0]->data;
            for (j = lo; j < hi; j++) o[(j - k) * m + j] += cd[j];
        } else if (dt == GR_F32 && c->dtype == GR_F32) {
            const float *cd = (const float *)c->data - vs;
            float *o = (float *)out[0]->data;
            for (j = lo; j < hi; j++) o[(j - k) * m + j] += cd[j];
        } else {
            for (j = lo; j < hi; j++) {
                int64_t at = (j - k) * m + j;
                gr__store(dt, out[0]->data, at, gr__load(dt, out[0]->data, at) + gr__load(c->dtype, c->data, j - vs));
            }
        }
    }
    return GR_OK;
}
static gr_status gr__Banded_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { (void)og; (void)ig; return gr__compiled_only(node); }
static gr_status gr__Banded_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) { (void)ev; (void)orop; return gr__compiled_only(node); }

/* ---- Banded and EyeLike in the rewrites (src/rewrite.h) ---------------------------------------------
   A Jacobian or Hessian is built from the identity seed of its batch (EyeLike). For a vector wrt,
   the seed becomes a Banded matrix (one diagonal of ones), and what Jacobians of elementwise
   functions of slices do to it keeps it banded: slicing its columns moves the diagonals (Slice's
   rule, ops/index.c), scaling by a vector or a scalar scales them, sums of banded matrices merge
   them, and a slice's gradient (a row placed into zeros at a slice, Batched's rule below) moves
   them back. So such a Hessian costs a few vectors and one fill of the result instead of a dozen
   dense passes. Like x * 0, a structural zero stays zero where the dense product would have met
   an infinity or a NaN. */

static const gr__banded_params *gr__banded_of(const gr_var *v) {
    return gr__owner(v) && gr__owner(v)->op == &gr__op_Banded ? (const gr__banded_params *)gr__params(gr__owner(v)) : NULL;
}
static GR__UNUSED int gr__banded_n(const gr_var *v) {
    const gr__banded_params *p = gr__banded_of(v);
    return p ? (int)p->n : 0;
}
static int gr__banded_partial(const gr__banded_params *p) {
    int i;
    for (i = 0; i < p->n; i++) if (!gr__band_full(&p->b[i])) return 1;
    return 0;
}

/* Banded(ref, cols, c; b) for n bands, in offset order (a stable sort), full bands of equal offsets
   summed; NULL when too many */
static gr_var *gr__banded_make(gr__rewriter *rw, gr_var *ref, gr_var *cols, int n, gr_var **c, gr__band *b) {
    gr__banded_params p;
    gr_var *ins[GR__BANDED_MAX + GR__BANDED_C];
    int i, j, m = 0;
    for (i = 1; i < n; i++)                              /* insertion sort: a handful of diagonals */
        for (j = i; j > 0 && b[j - 1].k > b[j].k; j--) {
            gr__band tb = b[j]; gr_var *tc = c[j];
            b[j] = b[j - 1]; c[j] = c[j - 1];
            b[j - 1] = tb; c[j - 1] = tc;
        }
    memset(&p, 0, sizeof p);
    ins[0] = ref;
    ins[1] = cols;
    for (i = 0; i < n; i++) {
        if (m && p.b[m - 1].k == b[i].k && gr__band_full(&p.b[m - 1]) && gr__band_full(&b[i])) {
            gr_var **last = &ins[GR__BANDED_C + m - 1];
            if (!(*last = gr__rw_ew(rw, GR__EW_add, *last, c[i]))) return NULL;
            continue;
        }
        if (m == GR__BANDED_MAX) return NULL;
        p.b[m] = b[i];
        ins[GR__BANDED_C + m++] = c[i];
    }
    p.n = m;
    return gr__rw1(rw, &gr__op_Banded, &p, GR__BANDED_PSIZE(m), m + GR__BANDED_C, ins);
}

/* the banded matrix X with each diagonal c replaced by op(pre, c, post) (pre, post: operands before
   and after it, or NULL; a vector one only when every band is full) and every offset moved by dk;
   NULL when out of memory or not so */
static gr_var *gr__banded_map(gr__rewriter *rw, const gr_var *X, const gr_op_def *op, const void *params, size_t psize,
                              gr_var *pre, gr_var *post, int64_t dk) {
    const gr__banded_params *p = gr__banded_of(X);
    gr_var *c[GR__BANDED_MAX], *args[3];
    gr__band b[GR__BANDED_MAX];
    int i, n;
    if (((pre && pre->ndim) || (post && post->ndim)) && gr__banded_partial(p)) return NULL;
    for (i = 0; i < p->n; i++) {
        n = 0;
        if (pre) args[n++] = pre;
        args[n++] = gr__in(gr__owner(X))[GR__BANDED_C + i];
        if (post) args[n++] = post;
        if (!(c[i] = gr__rw1(rw, op, params, psize, n, args))) return NULL;
        b[i] = p->b[i];
        b[i].k += dk;
    }
    return gr__banded_make(rw, gr__in(gr__owner(X))[0], gr__in(gr__owner(X))[1], (int)p->n, c, b);
}

#ifndef GR_NO_INDEX
/* columns s0, s0 + 1, ... of the banded matrix X (the unit-step view vp, on axis 0 of a vector): the
   full diagonals sliced alike, a part of one moved (and cut where it starts before s0), offsets down by
   s0. A part needs a view open at the end, and to be open or to count from the end itself; NULL
   otherwise, or when out of memory. */
static gr_var *gr__banded_cols(gr__rewriter *rw, const gr_var *X, const struct gr__view_params *vp, int64_t s0) {
    const gr__banded_params *p = gr__banded_of(X);
    const gr_node *bn = gr__owner(X);
    gr_var *c[GR__BANDED_MAX], *cols, *in1;
    gr__band b[GR__BANDED_MAX];
    int i;
    for (i = 0; i < p->n; i++)
        if (!gr__band_full(&p->b[i]) && (vp->stop != GR_OPEN || (p->b[i].e != GR_OPEN && p->b[i].e >= 0))) return NULL;
    in1 = gr__in(bn)[1];
    if (!(cols = gr__rw1(rw, &gr__op_Slice, vp, sizeof *vp, 1, &in1))) return NULL;
    for (i = 0; i < p->n; i++) {
        gr__view_params q = *vp;
        b[i] = p->b[i];
        b[i].k -= s0;
        c[i] = gr__in(bn)[GR__BANDED_C + i];
        if (gr__band_full(&b[i]) || b[i].s < s0) {           /* the vector from column s0 on */
            if (!gr__band_full(&b[i])) { q.start = s0 - b[i].s; b[i].s = 0; }
            if (!(c[i] = gr__rw1(rw, &gr__op_Slice, &q, sizeof q, 1, &c[i]))) return NULL;
        } else
            b[i].s -= s0;
    }
    return gr__banded_make(rw, gr__in(bn)[0], cols, (int)p->n, c, b);
}
#endif

/* v is the diagonal matrix diag(d): a square Banded matrix with one full diagonal d, at offset 0 */
static GR__UNUSED gr_var *gr__banded_diag(gr__rewriter *rw, const gr_var *v) {
    const gr__banded_params *p = gr__banded_of(v);
    int32_t s[GR_MAX_NDIM];
    if (v->ndim != 2 || !p || p->n != 1 || p->b[0].k != 0 || !gr__band_full(&p->b[0])) return NULL;
    gr__sig_copy(rw, v, s);
    return s[0] == s[1] ? gr__in(gr__owner(v))[GR__BANDED_C] : NULL;
}

/* Banded's signature: (size(ref), size(cols)); size(ref) is ref's length when ref is 1-d */
static void gr__Banded_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    int32_t s[GR_MAX_NDIM];
    if (gr__in(node)[0]->ndim == 1) { gr__sig_copy(rw, gr__in(node)[0], s); out[0] = s[0]; }
    gr__sig_copy(rw, gr__in(node)[1], s);
    out[1] = s[0];
}

/* the identity of a vector's size (gr_jacobian's seed, always): one diagonal of ones. (So EyeLike
   needs no signature rule: no EyeLike node is left to ask.) */
static gr_var *gr__EyeLike_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    gr_var *one, *ones;
    gr__band b0 = { 0, 0, GR_OPEN };
    (void)op;
    if (in[0]->ndim != 1) return NULL;
    one = gr__scalar_const(rw->cg, ((const gr__dtype_params *)params)->dtype, 1.0, 0);
    if (!one || !(ones = gr__rw_fill(rw, one, in[0]))) return gr__replaced(done, NULL);
    return gr__replaced(done, gr__banded_make(rw, in[0], ones, 1, &ones, &b0));
}

/* B1 + B2 -> one Banded of both's diagonals (same shape and dtype) */
static gr_var *gr__banded_sum_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    const gr__banded_params *pa = gr__banded_of(in[0]), *pb = gr__banded_of(in[1]);
    gr_var *c[2 * GR__BANDED_MAX], *r;
    gr__band b[2 * GR__BANDED_MAX];
    int i, n = 0;
    (void)row;
    if (!pa || !pb || in[0]->dtype != in[1]->dtype || !gr__sig_same(rw, in[0], in[1])) return NULL;
    for (i = 0; i < pa->n; i++) { c[n] = gr__in(gr__owner(in[0]))[GR__BANDED_C + i]; b[n++] = pa->b[i]; }
    for (i = 0; i < pb->n; i++) { c[n] = gr__in(gr__owner(in[1]))[GR__BANDED_C + i]; b[n++] = pb->b[i]; }
    r = gr__banded_make(rw, gr__in(gr__owner(in[0]))[0], gr__in(gr__owner(in[0]))[1], n, c, b);   /* NULL, nothing built: too many */
    return r || rw->cg->status != GR_OK ? gr__replaced(done, r) : NULL;
}

/* -B, B * s, s * B, B / s for a scalar s, or a vector s along the columns (never widening B): each
   diagonal scaled (the ops pullbacks apply to a cotangent) */
static gr_var *gr__banded_scale_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    gr_var *a = in[0], *b = row == GR__EW_neg ? NULL : in[1], *x, *v, *r;
    const gr__banded_params *pa = gr__banded_of(a), *pb = b ? gr__banded_of(b) : NULL;
    if (!pa && !(pb && row == GR__EW_mul)) return NULL;              /* a divisor is never banded here */
    x = pa ? a : b;
    v = pa ? b : a;
    if (row != GR__EW_neg && (pa && pb ? 1 : v->ndim > 1 || (v->ndim == 1 && !gr__sig_into(rw, v, x)))) return NULL;
    r = gr__banded_map(rw, x, gr__ew_ops[row], NULL, 0, pa ? NULL : v, pa ? v : NULL, 0);
    return r || rw->cg->status != GR_OK ? gr__replaced(done, r) : NULL;
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
    gr_var *x = gr__in(node)[0], *ref = gr__in(node)[1];
    int i;
    out->dtype = (gr_dtype)x->dtype;
    out->ndim = ref->ndim + x->ndim - 1;
    for (i = 0; i < ref->ndim; i++) out->shape[i] = gr__vshape(ref)[i];
    for (i = 1; i < x->ndim; i++) out->shape[ref->ndim + i - 1] = gr__vshape(x)[i];
    return GR_OK;
}
static gr_status gr__Unflatten_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    if (in[0]->shape[0] != in[1]->size)
        return gr_node_error(node, GR_ERR_SHAPE, "leading axis %lld of %s does not match the %lld elements of %s",
                             (long long)in[0]->shape[0], gr__d(gr__in(node)[0]).s, (long long)in[1]->size, gr__d(gr__in(node)[1]).s);
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[i] = in[1]->shape[i];
    for (i = 1; i < in[0]->ndim; i++) out[0]->shape[in[1]->ndim + i - 1] = in[0]->shape[i];
    return GR_OK;
}
static gr_status gr__Unflatten_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    return gr__Reshape_perform(node, in, out);
}
static gr_status gr__Unflatten_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr_reshape_like(og[0], gr__in(node)[0]);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__Unflatten_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__unflatten(ev[0], gr__in(node)[1]);
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

#define GR__BP_TYPES(p) ((gr_type *)(void *)((char *)(p) + ((sizeof(gr__batched_params) + 15u) & ~(size_t)15u)))
#define GR__BP_INNER(p) ((void *)(GR__BP_TYPES(p) + (p)->n_in))

/* the node whose connection pattern a Batched node has: the op it applies to every row */
static const gr_node *gr__conn_node(const gr_node *node) {
    const gr_node *inner = ((const gr__batched_params *)gr__params(node))->inner;
    return inner ? inner : node;
}

static gr_status gr__map_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr_graph *g = node->graph;
    size_t head = (sizeof(gr__batched_params) + 15u) & ~(size_t)15u;
    size_t size = head + sizeof(gr_type) * (size_t)node->n_in + node->params_size;
    gr__batched_params *p;
    int i;
    if (node->n_out != 1)
        return gr__error(g, GR_ERR_GRAD_NOT_IMPLEMENTED, "gr_jacobian: %s has several outputs and no batching rule", gr__on(node->op).s);
    if (node->n_in > 32) return gr__error(g, GR_ERR_VALUE, "gr_jacobian: %s has too many inputs to batch", gr__on(node->op).s);
    p = (gr__batched_params *)gr__calloc(1, size);
    if (!p) return gr__error(g, GR_ERR_NOMEM, "out of memory");
    p->op = node->op;
    p->n_in = node->n_in;
    p->inner_psize = node->params_size;
    for (i = 0; i < node->n_in; i++) {
        if (batched[i]) p->batched |= 1u << i;
        gr_var_type(gr__in(node)[i], &GR__BP_TYPES(p)[i]);
    }
    if (node->params_size) memcpy(GR__BP_INNER(p), gr__params(node), node->params_size);
    out[0] = gr__node1(g, &gr__op_Batched, p, size, node->n_in, in);
    GR_FREE(p);
    return out[0] ? GR_OK : g->status;
}

static gr_status gr__Batched_infer(const gr_node *node, gr_type *out) {
    gr__batched_params *p = (gr__batched_params *)gr__params(node);    /* the node's own copy */
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
    p->inner = gr__owner(res);
    if (res->ndim + 1 > GR_MAX_NDIM) return gr__error(g, GR_ERR_VALUE, "gr_jacobian: a batched %s has too many dimensions", gr__on(p->op).s);
    out->dtype = (gr_dtype)res->dtype;
    out->ndim = res->ndim + 1;
    out->shape[0] = lead >= 0 ? gr__vshape(gr__in(node)[lead])[0] : 1;
    for (i = 0; i < res->ndim; i++) out->shape[i + 1] = gr__vshape(res)[i];
    return GR_OK;
}

/* row k of every input: a view, or the input itself when not batched; returns the batch size */
static int64_t gr__batched_rows(const gr_node *node, const gr_array *const *in, gr_array *rows, const gr_array **row_ptrs, int64_t k) {
    const gr__batched_params *p = (const gr__batched_params *)gr__params(node);
    int64_t B = -1;
    int i, d;
    for (i = 0; i < p->n_in; i++) {
        if (!(p->batched & (1u << i))) { row_ptrs[i] = in[i]; continue; }
        if (B < 0) B = in[i]->shape[0];
        rows[i] = *in[i];
        rows[i].ndim = in[i]->ndim - 1;
        for (d = 0; d < rows[i].ndim; d++) rows[i].shape[d] = in[i]->shape[d + 1];
        rows[i].size = in[i]->shape[0] ? in[i]->size / in[i]->shape[0] : gr__shape_size(rows[i].ndim, rows[i].shape);
        rows[i].data = in[i]->data ? (char *)in[i]->data + (size_t)(k * rows[i].size) * gr__dsize(in[i]->dtype) : NULL;
        row_ptrs[i] = &rows[i];
    }
    return B;
}

/* a view when the wrapped op's output is a view of row 0 at its start and input 0 carries the batch:
   every row is then a view of its own row, and rows are contiguous */
static int64_t gr__Batched_alias(const gr_node *node, const gr_array *const *in, const gr_array *out) {
    const gr__batched_params *p = (const gr__batched_params *)gr__params(node);
    gr_array rows[32], row_out;
    const gr_array *row_ptrs[32];
    int d;
    if (!(p->batched & 1u) || !gr__alias_of(p->op) || in[0]->dtype != out->dtype || in[0]->size != out->size) return -1;
    gr__batched_rows(node, in, rows, row_ptrs, 0);
    row_out = *out;
    row_out.ndim = out->ndim - 1;
    for (d = 0; d < row_out.ndim; d++) row_out.shape[d] = out->shape[d + 1];
    row_out.size = out->shape[0] ? out->size / out->shape[0] : 0;
    return gr__alias_of(p->op)(p->inner, row_ptrs, &row_out) == 0 ? 0 : -1;
}

static gr_status gr__Batched_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__batched_params *p = (const gr__batched_params *)gr__params(node);
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
            return gr_node_error(node, GR_ERR_SHAPE, "batched inputs of %s have %lld and %lld rows", gr__on(p->op).s,
                                 (long long)B, (long long)in[i]->shape[0]);
    memset(&row_out, 0, sizeof row_out);
    row_out.dtype = (gr_dtype)gr__out(inner)[0]->dtype;
    row_out.ndim = gr__out(inner)[0]->ndim;
    st = p->op->shape ? p->op->shape(inner, row_ptrs, &row_out_ptr) : gr__like0_shape(inner, row_ptrs, &row_out_ptr);
    if (st != GR_OK) return st;
    out[0]->shape[0] = B;
    for (i = 0; i < row_out.ndim; i++) out[0]->shape[i + 1] = row_out.shape[i];
    return GR_OK;
}

static gr_status gr__Batched_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__batched_params *p = (const gr__batched_params *)gr__params(node);
    gr_array rows[32], row_out;
    const gr_array *row_ptrs[32];
    gr_array *row_out_ptr = &row_out;
    int64_t B = out[0]->shape[0], k, row_size = B ? out[0]->size / B : 0;
    int d;
    row_out = *out[0];
    row_out.ndim = out[0]->ndim - 1;
    for (d = 0; d < row_out.ndim; d++) row_out.shape[d] = out[0]->shape[d + 1];
    row_out.size = row_size;
#ifndef GR_NO_DOT
    /* a dot whose left operand carries the batch is one matrix product over all the rows */
    if (p->op == &gr__op_Dot && p->batched == 1u && in[0]->ndim == 3 && !((const gr__dot_params *)GR__BP_INNER(p))->ta) {
        gr_array a = *in[0], c = *out[0];
        const gr_array *ab[2];
        gr_array *cp = &c;
        a.ndim = 2; a.shape[0] = in[0]->shape[0] * in[0]->shape[1]; a.shape[1] = in[0]->shape[2];
        c.ndim = in[1]->ndim == 2 ? 2 : 1;
        c.shape[0] = a.shape[0];
        if (in[1]->ndim == 2) c.shape[1] = out[0]->shape[2];
        gr_array *cw[2];
        ab[0] = &a; ab[1] = in[1];
        cw[0] = cp; cw[1] = out[node->n_out];          /* the output, then the work memory */
        return p->op->perform(p->inner, ab, cw);
    }
#endif
    for (k = 0; k < B; k++) {
        gr_status st;
        gr_array *ow[2];
        gr__batched_rows(node, in, rows, row_ptrs, k);
        row_out.data = (char *)out[0]->data + (size_t)(k * row_size) * gr__dsize(out[0]->dtype);
        ow[0] = row_out_ptr; ow[1] = out[node->n_out];
        st = p->op->perform(p->inner, row_ptrs, ow);
        if (st != GR_OK) return st;
    }
    return GR_OK;
}
/* the work memory of the op applied to each row: a matrix product's largest (its rows' shapes are
   not at hand here) */
static size_t gr__Batched_scratch(const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr__batched_params *p = (const gr__batched_params *)gr__params(node);
    (void)in; (void)out;
    while (p->op == &gr__op_Batched) p = (const gr__batched_params *)gr__params(p->inner);
#ifndef GR_NO_DOT
    if (p->op == &gr__op_Dot || p->op == &gr__op_TensorDot || p->op == &gr__op_MatMul) return gr__gemm_work_bytes(out[0]->dtype, (int64_t)1 << 40, (int64_t)1 << 40);
#endif
    return 0;
}

/* Derivatives of an op applied row by row: the op's own rule, applied to its row-typed node, gives
   a graph in terms of the row placeholders; vectorising that graph with the placeholders replaced
   by the real operands (batched where they are) gives the rule for all rows at once. */
static gr_status gr__vectorize(gr_graph *g, int n_seed, gr_var *const *seed, gr_var *const *seed_b, const uint8_t *seed_isb,
                               int n, gr_var *const *roots, gr_var **out, uint8_t *out_b);
static gr_status gr__rop_by_pullback(const gr_node *node, gr_var *const *ev, gr_var **orop);

/* the seeds mapping the inner node's placeholders (and its output) to the real operands */
static int gr__batched_seeds(const gr_node *node, gr_var **seed, gr_var **seed_b, uint8_t *isb) {
    const gr__batched_params *p = (const gr__batched_params *)gr__params(node);
    int i, n = 0;
    for (i = 0; i < p->n_in; i++) {
        seed[n] = gr__in(p->inner)[i];
        seed_b[n] = gr__in(node)[i];
        isb[n++] = (uint8_t)((p->batched >> i) & 1u);
    }
    seed[n] = gr__out(p->inner)[0];
    seed_b[n] = gr__out(node)[0];
    isb[n++] = 1;
    return n;
}

static gr_status gr__Batched_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__batched_params *p = (const gr__batched_params *)gr__params(node);
    gr_graph *g = node->graph;
    gr_node *inner = p->inner;
    gr_var *seed[34], *seed_b[34], *terms[32], *u, *res;
    uint8_t isb[34], rb;
    int i, ns;
    gr_status st;
    u = gr__new_var(g, gr__grad_dtype(gr__out(inner)[0]), gr__out(inner)[0]->ndim, gr__vshape(gr__out(inner)[0]), GR__VK_INPUT);
    if (!u) return g->status;
    for (i = 0; i < p->n_in; i++) terms[i] = NULL;
    if (!p->op->grad) {
        for (i = 0; i < p->n_in; i++)
            if (!(ig[i] = gr_grad_not_implemented(node, i, gr__in(node)[i], "(the batched op has no grad rule)"))) return g->status;
        return GR_OK;
    }
    st = p->op->grad(inner, &u, terms);
    if (st != GR_OK || g->status != GR_OK) return g->status != GR_OK ? g->status : st;
    ns = gr__batched_seeds(node, seed, seed_b, isb);
    seed[ns] = u; seed_b[ns] = og[0]; isb[ns++] = 1;
    for (i = 0; i < p->n_in; i++) {
        gr_var *t = terms[i], *x = gr__in(node)[i];
        if (!t) return gr__error(g, GR_ERR_TYPE, "the grad rule of %s returned NULL for input %d", gr__on(p->op).s, i);
        if (gr__is_marker(t)) { ig[i] = t->kind == GR__VK_DISC ? gr_disconnected_like(x) : t; if (!ig[i]) return g->status; continue; }
        if ((st = gr__vectorize(g, ns, seed, seed_b, isb, 1, &t, &res, &rb)) != GR_OK) return st;
        if ((p->batched >> i) & 1u) ig[i] = rb ? res : gr_broadcast_like(res, x);
        else ig[i] = rb ? gr_sum_axis(res, 0) : gr__zeros_grad(x);   /* an operand shared by every row */
        if (!ig[i]) return g->status;
    }
    return GR_OK;
}

static gr_status gr__Batched_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__batched_params *p = (const gr__batched_params *)gr__params(node);
    gr_graph *g = node->graph;
    gr_node *inner = p->inner;
    gr_var *seed[66], *seed_b[66], *tv[32], *r = NULL, *res;
    uint8_t isb[66], rb;
    int i, ns;
    gr_status st;
    orop[0] = NULL;
    ns = gr__batched_seeds(node, seed, seed_b, isb);
    for (i = 0; i < p->n_in; i++) {
        gr_var *ph = gr__in(inner)[i];
        if (gr_is_disconnected(ev[i])) { tv[i] = gr_disconnected_like(ph); if (!tv[i]) return g->status; continue; }
        tv[i] = gr__new_var(g, ph->dtype, ph->ndim, gr__vshape(ph), GR__VK_INPUT);
        if (!tv[i]) return g->status;
        seed[ns] = tv[i]; seed_b[ns] = ev[i]; isb[ns++] = (uint8_t)((p->batched >> i) & 1u);
    }
    st = p->op->rop ? p->op->rop(inner, tv, &r) : gr__rop_by_pullback(inner, tv, &r);
    if (st != GR_OK || g->status != GR_OK) return g->status != GR_OK ? g->status : st;
    if (!r || gr__is_marker(r)) return GR_OK;
    if ((st = gr__vectorize(g, ns, seed, seed_b, isb, 1, &r, &res, &rb)) != GR_OK) return st;
    orop[0] = rb ? res : gr_broadcast_like(res, gr__out(node)[0]);
    return orop[0] ? GR_OK : g->status;
}

/* v is diag(d)'s rows each summed to the shape of a vector `like` (Batched ReduceLike: a Jacobian's rows
   through a broadcasting addition whose shapes the graph does not know): d, and *like. Since the
   forward addition broadcast like to d's length, like has that length or 1: v is diag(d) or the
   column d, and v B = d[:, None] * B in both cases (B's rows: like's length, broadcasting) */
static GR__UNUSED gr_var *gr__rowsum_diag(gr__rewriter *rw, const gr_var *v, gr_var **like) {
    const gr_node *t = gr__owner(v);
    const gr__batched_params *bp;
    gr_var *d;
    if (!t || t->op != &gr__op_Batched || v->ndim != 2) return NULL;
    bp = (const gr__batched_params *)gr__params(t);
    if (bp->op != &gr__op_ReduceLike || bp->batched != 1u || gr__in(t)[1]->ndim != 1) return NULL;
    if (!(d = gr__banded_diag(rw, gr__in(t)[0]))) return NULL;
    *like = gr__in(t)[1];
    return d;
}

#ifndef GR_NO_INDEX
/* the rows of the banded matrix X placed into the zeros z at a unit-step view vp from s0 (a slice's
   gradient, row by row): each band keeps its vector, moved to the view's columns, offsets up by s0,
   and the zeros are never made. Only when X's rows have the view's length in every call (a row of
   one element would broadcast) and the view ends open or counts from the end; NULL otherwise, or
   when out of memory. */
static gr_var *gr__banded_place(gr__rewriter *rw, const gr_var *X, gr_var *z, const gr__view_params *vp, int64_t s0) {
    const gr__banded_params *p = gr__banded_of(X);
    const gr_node *bn = gr__owner(X);
    int32_t sx[GR_MAX_NDIM], sz[GR_MAX_NDIM], len;
    gr_var *c[GR__BANDED_MAX];
    gr__band b[GR__BANDED_MAX];
    int i;
    if (vp->stop != GR_OPEN && (vp->stop >= 0 || vp->stop <= -((int64_t)1 << 40))) return NULL;
    gr__sig_copy(rw, X, sx);
    gr__sig_copy(rw, z, sz);
    if (sz[0] < 0) {                                     /* a static length m: the view's, clamped */
        int64_t m = -(int64_t)sz[0] - 1, e = vp->stop == GR_OPEN ? m : m + vp->stop, s = s0 < m ? s0 : m;
        len = GR__SIG_STATIC(e > s ? e - s : 0);
    } else
        len = gr__sig_trimmed(rw, sz[0], s0 + (vp->stop == GR_OPEN ? 0 : -vp->stop));
    if (len != sx[1]) return NULL;
    for (i = 0; i < p->n; i++) {
        b[i] = p->b[i];
        b[i].k += s0;
        b[i].s += s0;
        if (b[i].e == GR_OPEN) b[i].e = vp->stop;        /* a band to X's last column ends where the view does */
        else if (vp->stop != GR_OPEN) b[i].e += vp->stop;   /* both from the end */
        c[i] = gr__in(bn)[GR__BANDED_C + i];
    }
    return gr__banded_make(rw, gr__in(bn)[0], z, (int)p->n, c, b);
}
#endif

/* ops applied row by row that need not be (Jacobians and Hessians are full of them): a row-wise
   ReduceLike, BroadcastLike or ReshapeLike whose rows already have ref's shape is the identity;
   rows placed into zeros at a slice (a slice's gradient) of a banded matrix are its diagonals,
   offsets up by the slice's start; a vector operand of Dot batched into rows is one matrix product */
static gr_var *gr__Batched_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    const gr__batched_params *bp = (const gr__batched_params *)params;
    const gr_op_def *iop = bp->op;
    gr_var *z = NULL;
    (void)op; (void)z;
    if ((iop == &gr__op_ReduceLike || iop == &gr__op_BroadcastLike || iop == &gr__op_ReshapeLike) && bp->batched == 1u &&
        in[0]->ndim == in[1]->ndim + 1 && in[0]->dtype == GR__BP_TYPES(bp)[0].dtype) {
        int32_t sx[GR_MAX_NDIM], sr[GR_MAX_NDIM];
        int i, same = 1;
        gr__sig_copy(rw, in[0], sx);
        gr__sig_copy(rw, in[1], sr);
        for (i = 0; i < in[1]->ndim; i++) if (sx[i + 1] != sr[i]) same = 0;
        if (same) return gr__replaced(done, in[0]);
    }
#ifndef GR_NO_INDEX
    if (iop == &gr__op_ViewUpdate && bp->batched == 2u && gr__banded_n(in[1]) && in[0]->ndim == 1 && in[0]->dtype == in[1]->dtype &&
        gr__rw_zeros(in[0], &z) && z) {
        const gr__view_params *vp = (const gr__view_params *)GR__BP_INNER(bp);
        int64_t s0 = gr__view_unit_start(vp);
        if (vp->axis == 0 && s0 >= 0) {
            gr_var *r = gr__banded_place(rw, in[1], z, vp, s0);   /* (z: the zeros' shape, not made) */
            if (!r && rw->cg->status == GR_OK)           /* full diagonals each placed into the zeros */
                r = gr__banded_map(rw, in[1], iop, vp, bp->inner_psize, in[0], NULL, s0);
            return r || rw->cg->status != GR_OK ? gr__replaced(done, r) : NULL;
        }
    }
#endif
#ifndef GR_NO_DOT
    if (iop == &gr__op_Dot && (bp->batched == 1u || bp->batched == 2u) && GR__BP_TYPES(bp)[bp->batched == 1u ? 0 : 1].ndim == 1) {
        const gr__dot_params *ip = (const gr__dot_params *)GR__BP_INNER(bp);
        gr__dot_params q;
        gr_var *args[2];
        memset(&q, 0, sizeof q);
        if (bp->batched == 2u) {                    /* row k: op(a) b_k  ->  B op(a)^T */
            args[0] = in[1]; args[1] = in[0];
            q.tb = in[0]->ndim == 2 ? !ip->ta : 0;
        } else {                                    /* row k: a_k op(b)  ->  A op(b) */
            args[0] = in[0]; args[1] = in[1];
            q.tb = in[1]->ndim == 2 ? ip->tb : 0;
        }
        return gr__replaced(done, gr__rw1(rw, iop, &q, sizeof q, 2, args));
    }
#endif
    return NULL;
}

#else /* GR_NO_BATCH: no Jacobians of non-scalars (src/jacobian.c says so); what other families'
         batching rules and rewrites name of this file, none of it reached */
static GR__UNUSED const gr_node *gr__conn_node(const gr_node *node) { return node; }
static GR__UNUSED gr_status gr__map_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    (void)in; (void)batched; out[0] = NULL;
    return gr__error(node->graph, GR_ERR_VALUE, "gr_jacobian: gradient.h was built without batching (GR_NO_BATCH)");
}
static GR__UNUSED gr_status gr__vectorize(gr_graph *g, int n_seed, gr_var *const *seed, gr_var *const *seed_b, const uint8_t *seed_isb,
                                          int n, gr_var *const *roots, gr_var **out, uint8_t *out_b) {
    (void)n_seed; (void)seed; (void)seed_b; (void)seed_isb; (void)n; (void)roots; (void)out; (void)out_b;
    return gr__error(g, GR_ERR_VALUE, "gr_jacobian: gradient.h was built without batching (GR_NO_BATCH)");
}
static GR__UNUSED int gr__banded_n(const gr_var *v) { (void)v; return 0; }
static GR__UNUSED gr_var *gr__banded_diag(gr__rewriter *rw, const gr_var *v) { (void)rw; (void)v; return NULL; }
static GR__UNUSED gr_var *gr__rowsum_diag(gr__rewriter *rw, const gr_var *v, gr_var **like) { (void)rw; (void)v; (void)like; return NULL; }
#ifndef GR_NO_INDEX
static GR__UNUSED gr_var *gr__banded_cols(gr__rewriter *rw, const gr_var *X, const struct gr__view_params *vp, int64_t s0) {
    (void)rw; (void)X; (void)vp; (void)s0;
    return NULL;
}
#endif
#endif /* GR_NO_BATCH */

/* ---- batching rules ------------------------------------------------------------------------------ */

/* unary ops that do not care about shapes: the same op on the batched operand */
static GR__UNUSED gr_status gr__same_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    (void)batched;
    out[0] = gr__node1(node->graph, node->op, gr__params(node), node->params_size, node->n_in, in);
    return out[0] ? GR_OK : node->graph->status;
}

/* elementwise: batched operands get their missing axes after the batch axis; NumPy broadcasting
   aligns the rest on the right */
static GR__UNUSED gr_status gr__ew_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr_var *xs[3];
    int d = gr__out(node)[0]->ndim, i;
    for (i = 0; i < node->n_in; i++) {
        int n_i = gr__in(node)[i]->ndim;
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

static GR__UNUSED gr_status gr__reduce_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr__reduce_params p = *gr__rp(node);
    (void)batched;
    if (gr__in(node)[0]->ndim + 1 > GR_MAX_NDIM) return gr__map_batch(node, in, batched, out);
    p.mask <<= 1;
    out[0] = gr__node1(node->graph, node->op, &p, sizeof p, 1, in);
    return out[0] ? GR_OK : node->graph->status;
}

static GR__UNUSED gr_status gr__DimShuffle_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    const gr__dimshuffle_params *p = gr__dsp(node);
    int pattern[GR_MAX_NDIM], i;
    if (p->n + 1 > GR_MAX_NDIM) return gr__map_batch(node, in, batched, out);
    pattern[0] = 0;
    for (i = 0; i < p->n; i++) pattern[i + 1] = p->pattern[i] < 0 ? GR_NEWAXIS : p->pattern[i] + 1;
    out[0] = gr__dimshuffle(in[0], p->n + 1, pattern, 0);
    return out[0] ? GR_OK : node->graph->status;
}

/* ops with one axis parameter: the axis moves one to the right */
static GR__UNUSED gr_status gr__axis_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr__axis_params p = *(const gr__axis_params *)gr__params(node);
    (void)batched;
    p.axis += 1;
    out[0] = gr__node1(node->graph, node->op, &p, sizeof p, 1, in);
    return out[0] ? GR_OK : node->graph->status;
}

#ifndef GR_NO_BATCH
/* ---- C code generation (gr_fn_emit_c) ------------------------------------------------------------- */

/* zeros, then ones on the diagonal of the (size(ref), size(ref)) matrix */
static gr_status gr__EyeLike_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const char *Y = gr__em_out(e, 0);
    (void)node;
    if (out[0]->size == 0) return GR_OK;
    gr__em_line(e, "memset(%s, 0, %lu);", Y, (unsigned long)((size_t)out[0]->size * gr__dsize(out[0]->dtype)));
    gr__em_line(e, "for (int64_t k = 0; k < %lld; k++) %s[k * %lld + k] = 1;", (long long)in[0]->size, Y, (long long)in[0]->size);
    return GR_OK;
}
static gr_status gr__Unflatten_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)node; (void)out;
    if (in[0]->size)
        gr__em_line(e, "memcpy(%s, %s, %lu);", gr__em_out(e, 0), gr__em_in(e, 0), (unsigned long)((size_t)in[0]->size * gr__dsize(in[0]->dtype)));
    return GR_OK;
}
/* band c's entry added: o[at] + c[j - vs] as C, in the output's dtype dt (through double where the
   dtypes differ, as perform) */
static void gr__banded_sum(gr__em *e, int dt, int cdt, const char *c, int64_t vs, char *sum, size_t size) {
    char s2[96], cj[48];
    if (vs) snprintf(cj, sizeof cj, "%s[j - %lld]", c, (long long)vs);
    else snprintf(cj, sizeof cj, "%s[j]", c);
    if (gr__is_float(dt) && cdt == dt) { snprintf(sum, size, "o[at] + %s", cj); return; }
    snprintf(s2, sizeof s2, "((double)o[at] + (double)%s)", cj);
    snprintf(sum, size, "%s", gr__em_conv(e, dt, GR_F64, s2, 0));
}
/* zeros, then each band's entries added; with few bands one pass over the rows (each row's entries
   in band order, as the band-by-band loops add them) */
static gr_status gr__Banded_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr__banded_params *p = (const gr__banded_params *)gr__params(node);
    int64_t B = out[0]->shape[0], m = out[0]->shape[1], i;
    int dt = out[0]->dtype, rows = 0, pass;
    char Y[GR__EM_OPND], sum[GR__EM_OPND], c[16];
    if (out[0]->size == 0) return GR_OK;
    snprintf(Y, sizeof Y, "%s", gr__em_out(e, 0));
    gr__em_line(e, "memset(%s, 0, %lu);", Y, (unsigned long)((size_t)out[0]->size * gr__dsize(dt)));
    for (i = 0; i < p->n; i++) {                         /* (rows: few bands, some with entries) */
        int64_t vs, ve, lo, hi;
        gr__band_range(&p->b[i], B, m, &vs, &ve, &lo, &hi);
        if (lo < hi) rows = p->n <= 8;
    }
    if (rows) { gr__em_line(e, "{"); gr__em_line(e, "%s *o = %s;", gr__em_ctype(dt), Y); }
    for (pass = 0; pass < 1 + rows; pass++) {            /* (rows: the bands' arrays, then the loop) */
        if (pass == 1) gr__em_line(e, "for (int64_t r = 0; r < %lld; r++) {", (long long)B);
        for (i = 0; i < p->n; i++) {
            int64_t k = p->b[i].k, vs, ve, lo, hi;
            int cdt = in[GR__BANDED_C + i]->dtype;
            gr__band_range(&p->b[i], B, m, &vs, &ve, &lo, &hi);
            if (lo >= hi) continue;
            snprintf(c, sizeof c, rows ? "c%d" : "c", (int)i);
            gr__banded_sum(e, dt, cdt, c, vs, sum, sizeof sum);
            if (pass == 1)
                gr__em_line(e, "{ int64_t j = r + %lld, at = r * %lld + j; if (j >= %lld && j < %lld) o[at] = %s; }", (long long)k, (long long)m,
                            (long long)lo, (long long)hi, sum);
            else if (rows) gr__em_line(e, "const %s *%s = %s;", gr__em_ctype(cdt), c, gr__em_in(e, GR__BANDED_C + (int)i));
            else {
                gr__em_line(e, "{ %s *o = %s; const %s *c = %s;", gr__em_ctype(dt), Y, gr__em_ctype(cdt), gr__em_in(e, GR__BANDED_C + (int)i));
                gr__em_line(e, "  for (int64_t j = %lld; j < %lld; j++) { int64_t at = (j - %lld) * %lld + j; o[at] = %s; } }", (long long)lo,
                            (long long)hi, (long long)k, (long long)m, sum);
            }
        }
    }
    if (rows) { gr__em_line(e, "}"); gr__em_line(e, "}"); }
    return GR_OK;
}


/* the wrapped op's rule on its row-typed node: a dot whose left operand carries the batch as one
   product over all the rows (as perform), anything else inside a loop over the rows, in which
   gr__em_in / gr__em_out name row k of the batched operands (gr__em_redirect) */
#ifndef GR_NO_DOT
static gr_status gr__batched_dot_emit(gr__em *e, const gr_node *node, gr__emit_fn rule, const gr_array *const *in, const gr_array *const *out) {
    const gr__batched_params *p = (const gr__batched_params *)gr__params(node);
    gr_array a = *in[0], c = *out[0];
    const gr_array *ab[2], *cw[1];
    a.ndim = 2; a.shape[0] = in[0]->shape[0] * in[0]->shape[1]; a.shape[1] = in[0]->shape[2];
    c.ndim = in[1]->ndim == 2 ? 2 : 1;
    c.shape[0] = a.shape[0];
    if (in[1]->ndim == 2) c.shape[1] = out[0]->shape[2];
    ab[0] = &a; ab[1] = in[1]; cw[0] = &c;
    return rule(e, p->inner, ab, cw);
}
#endif
static gr_status gr__Batched_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr__batched_params *p = (const gr__batched_params *)gr__params(node);
    gr__emit_fn rule = gr__emit_of(p->op);
    gr_array rows[32], row_out;
    const gr_array *row_ptrs[32], *row_outp = &row_out;
    const char *rin[32], *rout[1];
    char *room;
    int64_t B = out[0]->shape[0];
    int i, d, depth;
    if (!rule) return gr__em_fail(e, GR_ERR_VALUE, "gr_fn_emit_c: op %s (applied row by row) cannot be emitted", p->op->name);
#ifndef GR_NO_DOT
    if (p->op == &gr__op_Dot && p->batched == 1u && in[0]->ndim == 3 && !((const gr__dot_params *)GR__BP_INNER(p))->ta)
        return gr__batched_dot_emit(e, node, rule, in, out);
#endif
    if (B == 0) return GR_OK;
    if (!(room = (char *)GR_MALLOC((size_t)(p->n_in + 1) * GR__EM_OPND))) return gr__em_fail(e, GR_ERR_NOMEM, "gr_fn_emit_c: out of memory");
    gr__batched_rows(node, in, rows, row_ptrs, 0);
    row_out = *out[0];
    row_out.ndim = out[0]->ndim - 1;
    for (d = 0; d < row_out.ndim; d++) row_out.shape[d] = out[0]->shape[d + 1];
    row_out.size = out[0]->size / B;
    for (i = 0; i <= p->n_in; i++)               /* the batched operands before the loop: outer rows, or slots */
        if (i == p->n_in || (p->batched & (1u << i)))
            snprintf(room + (size_t)i * GR__EM_OPND, GR__EM_OPND, "%s", i < p->n_in ? gr__em_in(e, i) : gr__em_out(e, 0));
    if (!(depth = gr__em_redirect(e, rin, rout))) { GR_FREE(room); return GR_OK; }      /* too deep: failed */
    for (i = 0; i <= p->n_in; i++) {
        char *x = room + (size_t)i * GR__EM_OPND, tmp[GR__EM_OPND];
        int64_t rsize = i < p->n_in ? rows[i].size : row_out.size;
        if (i < p->n_in && !(p->batched & (1u << i))) { rin[i] = NULL; continue; }
        if (snprintf(tmp, sizeof tmp, "(%s + bk%d * %lld)", x, depth, (long long)rsize) >= (int)sizeof tmp)
            gr__em_fail(e, GR_ERR_VALUE, "gr_fn_emit_c: row loops of %s nested too deep", p->op->name);
        memcpy(x, tmp, sizeof tmp);
        if (i < p->n_in) rin[i] = x; else rout[0] = x;
    }
    gr__em_line(e, "for (int64_t bk%d = 0; bk%d < %lld; bk%d++) {", depth, depth, (long long)B, depth);
    rule(e, p->inner, row_ptrs, &row_outp);
    gr__em_line(e, "}");
    gr__em_redirect(e, NULL, NULL);
    GR_FREE(room);
    return GR_OK;
}
#endif /* GR_NO_BATCH */
