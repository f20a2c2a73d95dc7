/* ops/dot.c: the contractions Dot, TensorDot and MatMul, with transpose flags so that gradients
   never copy a transpose; they run on the products of ops/gemm.c.

   Shapes: op(A) is A or A^T by the flag ta (likewise op(B) by tb; flags apply to 2-d operands)
     Dot            (M,K) . (K,N) -> (M,N)   (M,K) . (K,) -> (M,)   (K,) . (K,N) -> (N,)   (K,) . (K,) -> ()
     TensorDot      a (*fa, *s) . b (*s, *fb) -> (*fa, *fb). a is seen as a matrix whose rows are
                    its first sa axes and whose columns are the others, b likewise split at sb;
                    ta / tb transpose those matrices as Dot's flags do, so that gradients never copy.
                    gr_tensordot moves the summed axes of a last and those of b first (DimShuffle)
                    unless a flag does it for free.
     MatMul         a (*ba, m, k) @ b (*bb, k, n) -> (*broadcast(ba, bb), m, n); ta / tb transpose
                    the last two axes. gr_matmul makes a 1-d a (1, k) and a 1-d b (k, 1) and drops
                    that axis again, as NumPy does.
   Derivatives (C = op(A) op(B), G its cotangent): 2-d.2-d: dA = G B^T, dB = A^T G with the flags
   folded in; TensorDot and MatMul the same on their matrices (MatMul then sums over the batch axes
   an operand was broadcast along). */

#ifndef GR_NO_DOT                  /* ops/table.h, op families: the whole file */

/* ---- Dot ------------------------------------------------------------------------------------------ */

typedef struct gr__dot_params { int ta, tb; } gr__dot_params;

static gr_var *gr__dot_flags(gr_var *a, gr_var *b, int ta, int tb) {
    gr__dot_params p;
    gr_var *args[2];
    gr_graph *g;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_dot", 2, args, &g)) return NULL;
    memset(&p, 0, sizeof p);
    p.ta = a->ndim == 2 ? ta : 0;
    p.tb = b->ndim == 2 ? tb : 0;
    return gr__node1(g, &gr__op_Dot, &p, sizeof p, 2, args);
}

GR_API gr_var *gr_dot(gr_var *a, gr_var *b) {
    gr_var *args[2];
    gr_graph *g;
    int T;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_dot", 2, args, &g)) return NULL;
    if (a->ndim == 0 || b->ndim == 0) return gr_mul(a, b);
    if (a->ndim > 2 || b->ndim > 2)
        return gr__fail(g, GR_ERR_TYPE, "gr_dot: takes 1-d and 2-d operands; %s has %d dimensions and %s %d "
                        "(gr_tensordot and gr_matmul take more)", gr__d(a).s, a->ndim, gr__d(b).s, b->ndim);
    T = gr__promote(2, args);
    a = gr__coerce(a, T);
    b = gr__coerce(b, T);
    return gr__dot_flags(a, b, 0, 0);
}

/* rows, cols of op(X) for a 2-d X */
static void gr__op_dims(const int64_t *shape, int t, int64_t *r, int64_t *c) {
    *r = t ? shape[1] : shape[0];
    *c = t ? shape[0] : shape[1];
}

/* result dims from the operands' dims; 0 when the inner dimensions differ */
static int gr__dot_dims(int annd, const int64_t *as, int ta, int bnd, const int64_t *bs, int tb, int *ond, int64_t *os,
                        int64_t *ka, int64_t *kb) {
    int64_t m = 1, n = 1;
    if (annd == 2) gr__op_dims(as, ta, &m, ka); else *ka = as[0];
    if (bnd == 2) gr__op_dims(bs, tb, kb, &n); else *kb = bs[0];
    *ond = 0;
    if (annd == 2) os[(*ond)++] = m;
    if (bnd == 2) os[(*ond)++] = n;
    return !(*ka >= 0 && *kb >= 0 && *ka != *kb);
}

static gr_status gr__Dot_infer(const gr_node *node, gr_type *out) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1];
    int64_t ka, kb;
    out->dtype = (gr_dtype)a->dtype;
    if (a->dtype != b->dtype || a->ndim < 1 || a->ndim > 2 || b->ndim < 1 || b->ndim > 2)
        return gr__error(node->graph, GR_ERR_TYPE, "gr_dot: operands %s and %s must be 1-d or 2-d of one dtype", gr__d(a).s, gr__d(b).s);
    if (!gr__dot_dims(a->ndim, gr__vshape(a), p->ta, b->ndim, gr__vshape(b), p->tb, &out->ndim, out->shape, &ka, &kb))
        return gr__error(node->graph, GR_ERR_SHAPE, "gr_dot: inner dimensions differ: %s %s%s and %s %s%s", gr__d(a).s,
                         gr__vs(a).s, p->ta ? " transposed" : "", gr__d(b).s, gr__vs(b).s, p->tb ? " transposed" : "");
    return GR_OK;
}

static gr_status gr__Dot_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    int64_t ka, kb;
    int nd;
    if (!gr__dot_dims(in[0]->ndim, in[0]->shape, p->ta, in[1]->ndim, in[1]->shape, p->tb, &nd, out[0]->shape, &ka, &kb))
        return gr_node_error(node, GR_ERR_SHAPE, "inner dimensions differ: %s %s%s and %s %s%s", gr__d(gr__in(node)[0]).s,
                             gr__as(in[0]).s, p->ta ? " transposed" : "", gr__d(gr__in(node)[1]).s, gr__as(in[1]).s,
                             p->tb ? " transposed" : "");
    return GR_OK;
}

static gr_status gr__Dot_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1];
    int64_t M, K;
    if (a->ndim == 1 && b->ndim == 1)                       /* inner product */
        gr__dotv_dt(a->dtype, a->shape[0], a->data, b->data, out[0]->data);
    else if (b->ndim == 1)                                  /* op(A) x */
        gr__gemv_dt(a->dtype, p->ta, a->shape[0], a->shape[1], a->data, b->data, out[0]->data);
    else if (a->ndim == 1)                                  /* x op(B) = op(B)^T x */
        gr__gemv_dt(a->dtype, !p->tb, b->shape[0], b->shape[1], b->data, a->data, out[0]->data);
    else {
        gr__op_dims(a->shape, p->ta, &M, &K);
        gr__gemm_dt(a->dtype, p->ta, p->tb, M, out[0]->shape[1], K, a->data, b->data, out[0]->data, out[node->n_out]->data);
    }
    return GR_OK;
}
/* the same in an emitted file: one product, its operands as C expressions */
static gr_status gr__Dot_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1];
    const char *A = gr__em_in(e, 0), *B = gr__em_in(e, 1), *C = gr__em_out(e, 0);
    int64_t M, K;
    if (a->ndim == 1 && b->ndim == 1) gr__em_dotv(e, a->dtype, a->shape[0], A, B, C);
    else if (b->ndim == 1) gr__em_gemv(e, a->dtype, p->ta, a->shape[0], a->shape[1], A, B, C);
    else if (a->ndim == 1) gr__em_gemv(e, a->dtype, !p->tb, b->shape[0], b->shape[1], B, A, C);
    else {
        gr__op_dims(a->shape, p->ta, &M, &K);
        gr__em_gemm(e, a->dtype, p->ta, p->tb, M, out[0]->shape[1], K, A, B, C);
    }
    return GR_OK;
}
/* the work memory of a matrix product (GR_SCRATCH_OPS): the GEMM's packing buffers */
static size_t gr__Dot_scratch(const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    return in[0]->ndim == 2 && in[1]->ndim == 2 ? gr__gemm_work_bytes(in[0]->dtype, out[0]->shape[1], in[0]->shape[p->ta ? 0 : 1]) : 0;
}

/* C = op(A) op(B), G its cotangent; 2-d.2-d: dA = G B^T, dB = A^T G with the flags folded in */
static gr_status gr__Dot_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1], *G = og[0];
    if (!gr__is_float(gr__out(node)[0]->dtype)) {
        ig[0] = gr__zeros_grad(a);
        ig[1] = gr__zeros_grad(b);
    } else if (a->ndim == 1 && b->ndim == 1) {
        ig[0] = gr_mul(G, b);
        ig[1] = gr_mul(G, a);
    } else if (a->ndim == 2 && b->ndim == 1) {              /* c = op(A) b */
        ig[0] = p->ta ? gr_outer(b, G) : gr_outer(G, b);
        ig[1] = gr__dot_flags(a, G, !p->ta, 0);
    } else if (a->ndim == 1) {                              /* c = a op(B) */
        ig[0] = gr__dot_flags(b, G, p->tb, 0);
        ig[1] = p->tb ? gr_outer(G, a) : gr_outer(a, G);
    } else if (!p->ta && !p->tb) {
        ig[0] = gr__dot_flags(G, b, 0, 1);
        ig[1] = gr__dot_flags(a, G, 1, 0);
    } else if (p->ta && !p->tb) {                           /* C = A^T B */
        ig[0] = gr__dot_flags(b, G, 0, 1);
        ig[1] = gr__dot_flags(a, G, 0, 0);
    } else if (!p->ta) {                                    /* C = A B^T */
        ig[0] = gr__dot_flags(G, b, 0, 0);
        ig[1] = gr__dot_flags(G, a, 1, 0);
    } else {                                                /* C = A^T B^T */
        ig[0] = gr__dot_flags(b, G, 1, 1);
        ig[1] = gr__dot_flags(G, a, 1, 1);
    }
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}

static gr_status gr__Dot_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    gr_var *t = NULL;
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype)) return GR_OK;
    if (!gr_is_disconnected(ev[0])) t = gr__dot_flags(ev[0], gr__in(node)[1], p->ta, p->tb);
    if (!gr_is_disconnected(ev[1])) {
        gr_var *u = gr__dot_flags(gr__in(node)[0], ev[1], p->ta, p->tb);
        t = t ? gr_add(t, u) : u;
        if (!t) return node->graph->status;
    }
    if (gr_is_disconnected(ev[0]) && gr_is_disconnected(ev[1])) return GR_OK;
    orop[0] = t;
    return t ? GR_OK : node->graph->status;
}

/* the product of shape[from..to) */
static int64_t gr__dims_prod(const int64_t *shape, int from, int to) {
    int64_t p = 1;
    int i;
    for (i = from; i < to; i++) p *= shape[i];
    return p;
}

/* ---- Dot's rewrite rules (src/rewrite.h) -------------------------------------------------------- */

/* its signature: op(a)'s rows, then op(b)'s columns */
static void gr__Dot_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
    const gr_var *a = gr__in(node)[0], *b = gr__in(node)[1];
    int32_t sa[GR_MAX_NDIM], sb[GR_MAX_NDIM];
    int m = 0;
    gr__sig_copy(rw, a, sa);
    gr__sig_copy(rw, b, sb);
    if (a->ndim == 2) out[m++] = sa[p->ta ? 1 : 0];
    if (b->ndim == 2) out[m++] = sb[p->tb ? 0 : 1];
}

/* R op(B) with R diag(d)'s rows summed like a vector (gr__rowsum_diag) whose length is op(B)'s rows':
   d[:, None] * op(B), broadcasting op(B)'s rows when like has one element. The same graph whether
   the shapes are declared or not (a Jacobian through A x + b with shapes unknown: O(m n) instead of
   a dense product of a diagonal matrix) */
static gr_var *gr__dot_rowsum_diag(gr__rewriter *rw, const gr__dot_params *p, gr_var *const *in, int *done) {
    static const int as_col[2] = { 0, GR_NEWAXIS }, swap[2] = { 1, 0 };
    gr_var *like = NULL, *d, *ob = in[1], *col;
    gr__dimshuffle_params dp;
    int32_t sl[GR_MAX_NDIM], sb[GR_MAX_NDIM];
    if (p->ta || in[1]->ndim != 2 || !(d = gr__rowsum_diag(rw, in[0], &like)) || d->ndim != 1) return NULL;
    gr__sig_copy(rw, like, sl);
    gr__sig_copy(rw, in[1], sb);
    if (sl[0] != sb[p->tb ? 1 : 0]) return NULL;          /* like's length is op(B)'s rows', in every call */
    memset(&dp, 0, sizeof dp);
    dp.n = 2;
    if (p->tb) {
        dp.pattern[0] = swap[0]; dp.pattern[1] = swap[1];
        if (!(ob = gr__rw1(rw, &gr__op_DimShuffle, &dp, sizeof dp, 1, &in[1]))) return gr__replaced(done, NULL);
    }
    dp.pattern[0] = as_col[0]; dp.pattern[1] = as_col[1];
    if (!(col = gr__rw1(rw, &gr__op_DimShuffle, &dp, sizeof dp, 1, &d))) return gr__replaced(done, NULL);
    return gr__replaced(done, gr__rw_ew(rw, GR__EW_mul, col, ob));
}

/* diag(d) op(B) scales op(B)'s rows by d, op(B) diag(d) its columns (Jacobians: the identity seed
   times an elementwise derivative): O(m n) instead of a matrix product. NULL, *done 0: no diag. */
static gr_var *gr__dot_diag(gr__rewriter *rw, const gr__dot_params *p, gr_var *const *in, int *done) {
    static const int as_col[2] = { 0, GR_NEWAXIS }, as_row[2] = { GR_NEWAXIS, 0 }, swap[2] = { 1, 0 };
    int k;
    for (k = 0; k < 2; k++) {
        gr_var *other = in[1 - k], *d, *ob, *col;
        gr__dimshuffle_params dp;
        if (!(d = gr__banded_diag(rw, in[k]))) continue;
        if (other->ndim == 1) return gr__replaced(done, gr__rw_ew(rw, GR__EW_mul, d, other));   /* diag(d) v = v diag(d) = d * v */
        memset(&dp, 0, sizeof dp);
        dp.n = 2;
        ob = other;
        if (k == 0 ? p->tb : p->ta) {
            dp.pattern[0] = swap[0]; dp.pattern[1] = swap[1];
            if (!(ob = gr__rw1(rw, &gr__op_DimShuffle, &dp, sizeof dp, 1, &other))) return gr__replaced(done, NULL);
        }
        if (d->ndim == 0) col = d;
        else {
            dp.pattern[0] = k == 0 ? as_col[0] : as_row[0];
            dp.pattern[1] = k == 0 ? as_col[1] : as_row[1];
            if (!(col = gr__rw1(rw, &gr__op_DimShuffle, &dp, sizeof dp, 1, &d))) return gr__replaced(done, NULL);
        }
        return gr__replaced(done, gr__rw_ew(rw, GR__EW_mul, col, ob));
    }
    return gr__dot_rowsum_diag(rw, p, in, done);
}

/* a diagonal operand scales the other; a transposed matrix operand becomes a flag (BLAS reads it in
   place, nothing is copied) */
static gr_var *gr__Dot_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    const gr__dot_params *p = (const gr__dot_params *)params;
    gr__dot_params q = *p;
    gr_var *args[2], *r;
    int k, changed = 0;
    r = gr__dot_diag(rw, p, in, done);
    if (*done) return r;
    args[0] = in[0]; args[1] = in[1];
    for (k = 0; k < 2; k++) {
        const gr_node *t = gr__owner(args[k]);
        if (args[k]->ndim == 2 && t && t->op == &gr__op_DimShuffle && gr__in(t)[0]->ndim == 2 &&
            gr__dsp(t)->pattern[0] == 1 && gr__dsp(t)->pattern[1] == 0) {
            args[k] = gr__in(t)[0];
            if (k == 0) q.ta = !q.ta; else q.tb = !q.tb;
            changed = 1;
        }
    }
    return changed ? gr__replaced(done, gr__rw1(rw, op, &q, sizeof q, 2, args)) : NULL;
}

#ifndef GR_NO_JOIN
/* ---- sums of outer products: one matrix product --------------------------------------------------

   The gradient of W through y_t = W h_t, t = 1..T (an unrolled recurrence), is the sum of T outer
   products g_t h_t^T: T passes over an m x n matrix and as many temporaries. The sum is one
   product of stacked rows, sum_t u_t v_t^T = P^T Q with row t of P u_t^T and of Q v_t^T: the rows
   are joined and one GEMM of depth T adds them. A term is u * v with u of static shape (m, 1) and
   v (1, n), its rows u's and its columns v's in every call; a sum already rewritten is
   Dot(Join(rows), Join(rows)) with the first transposed, every joined piece one row long, and a
   term or another such sum extends it. The operands of the add agree in shape in every call, so
   the joined rows do. Values: the same products, summed in k order by the GEMM. */

/* v = u * w (or w * u), u (m, 1), w (1, n), v's rows u's and its columns w's: 1 + the index of u; 0 not */
static int gr__outer_term(gr__rewriter *rw, const gr_var *v) {
    const gr_node *n = gr__owner(v);
    int32_t sv[GR_MAX_NDIM], su[GR_MAX_NDIM], sw[GR_MAX_NDIM];
    int k;
    if (!n || n->op != &gr__op_ew_mul) return 0;
    for (k = 0; k < 2; k++) {
        const gr_var *u = gr__in(n)[k], *w = gr__in(n)[1 - k];
        if (u->ndim != 2 || w->ndim != 2 || u->dtype != v->dtype || w->dtype != v->dtype) continue;
        if (gr__vshape(u)[1] != 1 || gr__vshape(w)[0] != 1) continue;
        gr__sig_copy(rw, v, sv);
        gr__sig_copy(rw, u, su);
        gr__sig_copy(rw, w, sw);
        if (su[0] == sv[0] && sw[1] == sv[1]) return k + 1;
    }
    return 0;
}

/* j = Join along axis 0 of rows (static length 1 along it) of v's dtype: their number; 0 not */
static int gr__outer_rows(const gr_var *j, int dt) {
    const gr_node *n = gr__owner(j);
    int i;
    if (!n || n->op != &gr__op_Join || j->ndim != 2 || ((const gr__join_params *)gr__params(n))->axis != -2) return 0;
    for (i = 0; i < n->n_in; i++)
        if (gr__in(n)[i]->ndim != 2 || gr__vshape(gr__in(n)[i])[0] != 1 || gr__in(n)[i]->dtype != dt) return 0;
    return n->n_in;
}

/* the length of row w (1 x n) as a signature code, in every call that computes `from` (the other
   factor of w's term): w's own; or when w is a vector b as a row and `from` is computed from a
   Dot(X, b) (found among a few of its producers), X's columns (its rows when transposed). A
   gradient's outer product g b^T is such a term: g comes from the Dot that read b, so b's length is
   the matrix's, where b's own signature may be fresh (b = tanh(W h + U x) in a recurrence) */
static int32_t gr__outer_len(gr__rewriter *rw, const gr_var *w, const gr_var *from) {
    const gr_node *ds = gr__owner(w), *seen[24];
    const gr_var *b;
    int32_t s[GR_MAX_NDIM];
    int n = 0, k, i;
    gr__sig_copy(rw, w, s);
    if (!ds || ds->op != &gr__op_DimShuffle || gr__in(ds)[0]->ndim != 1 || gr__dsp(ds)->pattern[0] >= 0) return s[1];
    b = gr__in(ds)[0];
    if (gr__owner(from)) seen[n++] = gr__owner(from);
    for (k = 0; k < n; k++) {                                  /* breadth first over at most 24 producers */
        const gr_node *x = seen[k];
        if (x->op == &gr__op_Dot && x->n_in == 2 && gr__in(x)[1] == b && gr__in(x)[0]->ndim == 2) {
            gr__sig_copy(rw, gr__in(x)[0], s);
            return s[((const gr__dot_params *)gr__params(x))->ta ? 0 : 1];
        }
        for (i = 0; i < x->n_in && n < 24; i++)
            if (gr__owner(gr__in(x)[i])) seen[n++] = gr__owner(gr__in(x)[i]);
    }
    gr__sig_copy(rw, w, s);
    return s[1];
}

/* v = Dot(Join(rows), Join(rows)), the first transposed, as many rows each: their number; 0 not */
static int gr__outer_stack(const gr_var *v) {
    const gr_node *n = gr__owner(v);
    const gr__dot_params *p;
    int k;
    if (!n || n->op != &gr__op_Dot) return 0;
    p = (const gr__dot_params *)gr__params(n);
    if (!p->ta || p->tb) return 0;
    k = gr__outer_rows(gr__in(n)[0], v->dtype);
    return k && gr__outer_rows(gr__in(n)[1], v->dtype) == k ? k : 0;
}

/* the shape (codes) of term v (1 + the index of its column): the column's length and the row's */
static void gr__outer_term_shape(gr__rewriter *rw, const gr_var *v, int term, int32_t *mn) {
    const gr_node *n = gr__owner(v);
    int32_t s[GR_MAX_NDIM];
    gr__sig_copy(rw, gr__in(n)[term - 1], s);
    mn[0] = s[0];
    mn[1] = gr__outer_len(rw, gr__in(n)[2 - term], gr__in(n)[term - 1]);
}

/* what v is, with its number of terms in *count and its shape (codes) in mn: a term (1 + the index
   of its column), a sum already joined (GR__OUTER_STACK: its first rows' shape), a sum of two terms
   of one shape left as it was (GR__OUTER_PAIR), or nothing (0) */
enum { GR__OUTER_STACK = 3, GR__OUTER_PAIR = 4 };
static int gr__outer_kind(gr__rewriter *rw, const gr_var *v, int *count, int32_t *mn) {
    const gr_node *n = gr__owner(v);
    int32_t s[GR_MAX_NDIM], m2[2];
    int t, t2;
    if ((*count = gr__outer_stack(v)) != 0) {
        const gr_var *a = gr__in(gr__owner(gr__in(n)[0]))[0], *b = gr__in(gr__owner(gr__in(n)[1]))[0];
        gr__sig_copy(rw, a, s);
        mn[0] = s[1];
        mn[1] = gr__outer_len(rw, b, a);
        return GR__OUTER_STACK;
    }
    *count = 1;
    if ((t = gr__outer_term(rw, v)) != 0) {
        gr__outer_term_shape(rw, v, t, mn);
        return t;
    }
    if (!n || n->op != &gr__op_ew_add || (t = gr__outer_term(rw, gr__in(n)[0])) == 0 || (t2 = gr__outer_term(rw, gr__in(n)[1])) == 0) return 0;
    gr__outer_term_shape(rw, gr__in(n)[0], t, mn);
    gr__outer_term_shape(rw, gr__in(n)[1], t2, m2);
    *count = 2;
    return mn[0] == m2[0] && mn[1] == m2[1] ? GR__OUTER_PAIR : 0;
}

/* term v's rows: u^T into a[*n], w into b[*n] */
static int gr__outer_collect_term(gr__rewriter *rw, gr_var *v, int term, gr_var **a, gr_var **b, int *n) {
    static const int swap[2] = { 1, 0 };
    const gr_node *node = gr__owner(v);
    gr__dimshuffle_params dp;
    memset(&dp, 0, sizeof dp);
    dp.n = 2;
    dp.pattern[0] = swap[0]; dp.pattern[1] = swap[1];
    if (!(a[*n] = gr__rw1(rw, &gr__op_DimShuffle, &dp, sizeof dp, 1, &gr__in(node)[term - 1]))) return 0;
    b[(*n)++] = gr__in(node)[2 - term];
    return 1;
}

/* v's rows (of kind `kind`) appended to a and b at *n */
static int gr__outer_collect(gr__rewriter *rw, gr_var *v, int kind, gr_var **a, gr_var **b, int *n) {
    const gr_node *node = gr__owner(v);
    int i;
    if (kind == GR__OUTER_STACK) {
        const gr_node *ja = gr__owner(gr__in(node)[0]), *jb = gr__owner(gr__in(node)[1]);
        for (i = 0; i < ja->n_in; i++, (*n)++) { a[*n] = gr__in(ja)[i]; b[*n] = gr__in(jb)[i]; }
        return 1;
    }
    if (kind == GR__OUTER_PAIR)
        return gr__outer_collect_term(rw, gr__in(node)[0], gr__outer_term(rw, gr__in(node)[0]), a, b, n) &&
               gr__outer_collect_term(rw, gr__in(node)[1], gr__outer_term(rw, gr__in(node)[1]), a, b, n);
    return gr__outer_collect_term(rw, v, kind, a, b, n);
}

/* a joined sum holds at most this many terms (one block of the GEMM's depth): a longer chain is a
   sum of such products, so that the joins the chain builds on its way (each one longer than the
   last, all but the last dropped) stay linear in its length */
#define GR__OUTER_MAX 128

/* x is a term or a sum of them, or an add whose second operand is */
static int gr__outer_ends(gr__rewriter *rw, const gr_var *x) {
    const gr_node *n = gr__owner(x);
    int32_t mn[2];
    int c;
    return gr__outer_kind(rw, x, &c, mn) || (n && n->op == &gr__op_ew_add && gr__outer_kind(rw, gr__in(n)[1], &c, mn));
}

/* (x + s) + t, s and t terms or sums of one shape in every call that fit in one: x + (s + t), the
   inner sum rewritten, when s + t is one product or x ends in one (a chain longer than one sum
   goes on); NULL when in is not so */
static gr_var *gr__outer_regroup(gr__rewriter *rw, gr_var *const *in, int count1, const int32_t *mn1) {
    const gr_node *n = gr__owner(in[0]);
    gr_var *s, *st;
    int32_t mn[2];
    int c;
    if (!n || n->op != &gr__op_ew_add || gr__in(n)[0]->ndim != 2 || gr__in(n)[0]->dtype != in[0]->dtype) return NULL;
    s = gr__in(n)[1];
    if (!gr__outer_kind(rw, s, &c, mn) || c + count1 > GR__OUTER_MAX || mn[0] != mn1[0] || mn[1] != mn1[1]) return NULL;
    if (c + count1 < 3 && !gr__outer_ends(rw, gr__in(n)[0])) return NULL;
    if (!(st = gr__rw_ew(rw, GR__EW_add, s, in[1]))) return NULL;
    return gr__rw_ew(rw, GR__EW_add, gr__in(n)[0], st);
}

/* u1 v1 + u2 v2 + u3 v3 -> Dot(Join(u1^T, u2^T, u3^T), Join(v1, v2, v3)), the first transposed, and
   sums extended alike. A sum of two terms alone stays elementwise: one pass over the matrix, where
   the GEMM would clear it and then add into it. */
static gr_var *gr__outer_sum_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    gr__join_params jp;
    gr__dot_params dp;
    gr_var **rows, *ab[2], *r = NULL;
    int32_t mn[2][2];
    int kind[2], count[2], k, n = 0;
    (void)row;
    if (in[0]->ndim != 2 || !gr__is_float(in[0]->dtype) || in[1]->dtype != in[0]->dtype) return NULL;
    if ((kind[1] = gr__outer_kind(rw, in[1], &count[1], mn[1])) == 0) return NULL;
    if ((kind[0] = gr__outer_kind(rw, in[0], &count[0], mn[0])) == 0) {
        r = gr__outer_regroup(rw, in, count[1], mn[1]);
        return r || rw->cg->status != GR_OK ? gr__replaced(done, r) : NULL;
    }
    if (count[0] + count[1] < 3 || count[0] + count[1] > GR__OUTER_MAX) return NULL;
    if (mn[0][0] != mn[1][0] || mn[0][1] != mn[1][1]) return NULL;      /* the same shape in every call: no broadcast */
    rows = (gr_var **)gr__calloc((size_t)(count[0] + count[1]) * 2, sizeof *rows);
    if (!rows) {
        gr__error(rw->cg, GR_ERR_NOMEM, "out of memory (rewriting)");
        return gr__replaced(done, NULL);
    }
    for (k = 0; k < 2; k++)
        if (!gr__outer_collect(rw, in[k], kind[k], rows, rows + count[0] + count[1], &n)) goto done;
    memset(&jp, 0, sizeof jp);
    jp.axis = -2;
    if (!(ab[0] = gr__rw1(rw, &gr__op_Join, &jp, sizeof jp, n, rows)) || !(ab[1] = gr__rw1(rw, &gr__op_Join, &jp, sizeof jp, n, rows + n)))
        goto done;
    memset(&dp, 0, sizeof dp);
    dp.ta = 1;
    r = gr__rw1(rw, &gr__op_Dot, &dp, sizeof dp, 2, ab);
done:
    GR_FREE(rows);
    return gr__replaced(done, r);
}
#endif /* GR_NO_JOIN */

/* ---- TensorDot ---------------------------------------------------------------------------------- */

typedef struct gr__tdot_params { int sa, sb, ta, tb; } gr__tdot_params;

/* where the free and the summed axes of an operand lie, split at s into rows and columns: the
   rows of a are free (its columns when transposed); the columns of b are free (its rows when
   transposed) */
static void gr__tdot_axes(int ndim, int s, int t, int is_a, int *f0, int *fn, int *c0, int *cn) {
    int rows_free = is_a ? !t : t;
    if (rows_free) { *f0 = 0; *fn = s; *c0 = s; *cn = ndim - s; }
    else { *c0 = 0; *cn = s; *f0 = s; *fn = ndim - s; }
}

static gr_var *gr__tdot(gr_var *a, gr_var *b, int sa, int sb, int ta, int tb) {
    gr__tdot_params p;
    gr_var *args[2];
    gr_graph *g;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_tensordot", 2, args, &g)) return NULL;
    memset(&p, 0, sizeof p);
    p.sa = sa; p.sb = sb; p.ta = ta; p.tb = tb;
    return gr__node1(g, &gr__op_TensorDot, &p, sizeof p, 2, args);
}

/* the n axes ax[] are 0, 1, ..., n-1 (first) or ndim-n, ..., ndim-1 (last), in that order */
static int gr__axes_run(const int *ax, int n, int start) {
    int i;
    for (i = 0; i < n; i++) if (ax[i] != start + i) return 0;
    return 1;
}

GR_API gr_var *gr_tensordot(gr_var *a, gr_var *b, int n, const int *a_axes, const int *b_axes) {
    gr_var *args[2];
    gr_graph *g;
    int ax[GR_MAX_NDIM], bx[GR_MAX_NDIM], pattern[GR_MAX_NDIM], i, m, T, sa, sb, ta = 0, tb = 0;
    uint32_t seen_a = 0, seen_b = 0;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_tensordot", 2, args, &g)) return NULL;
    if (n < 0 || n > a->ndim || n > b->ndim)
        return gr__fail(g, GR_ERR_VALUE, "gr_tensordot: %d summed axes for %s with %d dimensions and %s with %d", n, gr__d(a).s,
                        a->ndim, gr__d(b).s, b->ndim);
    if (n > 0 && (!a_axes || !b_axes)) return gr__fail(g, GR_ERR_VALUE, "gr_tensordot: a_axes or b_axes is NULL");
    for (i = 0; i < n; i++) {
        ax[i] = gr__axis(a_axes[i], a->ndim);
        bx[i] = gr__axis(b_axes[i], b->ndim);
        if (ax[i] < 0 || bx[i] < 0)
            return gr__fail(g, GR_ERR_VALUE, "gr_tensordot: axis %d of %s (%d-d) or axis %d of %s (%d-d) is out of range",
                            a_axes[i], gr__d(a).s, a->ndim, b_axes[i], gr__d(b).s, b->ndim);
        if ((seen_a & (1u << ax[i])) || (seen_b & (1u << bx[i])))
            return gr__fail(g, GR_ERR_VALUE, "gr_tensordot: axis %d of %s or axis %d of %s is repeated", a_axes[i], gr__d(a).s,
                            b_axes[i], gr__d(b).s);
        seen_a |= 1u << ax[i];
        seen_b |= 1u << bx[i];
        if (gr__vshape(a)[ax[i]] >= 0 && gr__vshape(b)[bx[i]] >= 0 && gr__vshape(a)[ax[i]] != gr__vshape(b)[bx[i]])
            return gr__fail(g, GR_ERR_SHAPE, "gr_tensordot: axis %d of %s %s and axis %d of %s %s differ in size", ax[i],
                            gr__d(a).s, gr__vs(a).s, bx[i], gr__d(b).s, gr__vs(b).s);
    }
    if (a->ndim + b->ndim - 2 * n > GR_MAX_NDIM)
        return gr__fail(g, GR_ERR_VALUE, "gr_tensordot: the result would have %d dimensions (at most %d)", a->ndim + b->ndim - 2 * n,
                        GR_MAX_NDIM);
    T = gr__promote(2, args);
    a = gr__coerce(a, T);
    b = gr__coerce(b, T);
    if (!a || !b) return NULL;
    /* a: the summed axes last, in the order given; already first in order, a flag does it */
    sa = a->ndim - n;
    if (!gr__axes_run(ax, n, a->ndim - n)) {
        if (gr__axes_run(ax, n, 0)) { sa = n; ta = 1; }
        else {
            for (i = 0, m = 0; i < a->ndim; i++) if (!(seen_a & (1u << i))) pattern[m++] = i;
            for (i = 0; i < n; i++) pattern[m++] = ax[i];
            a = gr__dimshuffle(a, a->ndim, pattern, 0);
        }
    }
    /* b: the summed axes first, in the order given; already last in order, a flag does it */
    sb = n;
    if (!gr__axes_run(bx, n, 0)) {
        if (gr__axes_run(bx, n, b->ndim - n)) { sb = b->ndim - n; tb = 1; }
        else {
            for (i = 0, m = 0; i < n; i++) pattern[m++] = bx[i];
            for (i = 0; i < b->ndim; i++) if (!(seen_b & (1u << i))) pattern[m++] = i;
            b = gr__dimshuffle(b, b->ndim, pattern, 0);
        }
    }
    return gr__tdot(a, b, sa, sb, ta, tb);
}

static gr_status gr__TensorDot_infer(const gr_node *node, gr_type *out) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1];
    int af0, afn, ac0, acn, bf0, bfn, bc0, bcn, i;
    out->dtype = (gr_dtype)a->dtype;
    if (a->dtype != b->dtype)
        return gr__error(node->graph, GR_ERR_TYPE, "gr_tensordot: operands %s and %s must have one dtype", gr__d(a).s, gr__d(b).s);
    if (p->sa < 0 || p->sa > a->ndim || p->sb < 0 || p->sb > b->ndim)
        return gr__error(node->graph, GR_ERR_VALUE, "gr_tensordot: split points %d and %d out of range for %s and %s", p->sa, p->sb,
                         gr__d(a).s, gr__d(b).s);
    gr__tdot_axes(a->ndim, p->sa, p->ta, 1, &af0, &afn, &ac0, &acn);
    gr__tdot_axes(b->ndim, p->sb, p->tb, 0, &bf0, &bfn, &bc0, &bcn);
    if (acn != bcn)
        return gr__error(node->graph, GR_ERR_SHAPE, "gr_tensordot: %s sums %d axes but %s %d", gr__d(a).s, acn, gr__d(b).s, bcn);
    for (i = 0; i < acn; i++) {
        int64_t x = gr__vshape(a)[ac0 + i], y = gr__vshape(b)[bc0 + i];
        if (x >= 0 && y >= 0 && x != y)
            return gr__error(node->graph, GR_ERR_SHAPE, "gr_tensordot: summed axes of %s %s and %s %s differ in size", gr__d(a).s,
                             gr__vs(a).s, gr__d(b).s, gr__vs(b).s);
    }
    if (afn + bfn > GR_MAX_NDIM)
        return gr__error(node->graph, GR_ERR_VALUE, "gr_tensordot: the result would have %d dimensions", afn + bfn);
    out->ndim = afn + bfn;
    for (i = 0; i < afn; i++) out->shape[i] = gr__vshape(a)[af0 + i];
    for (i = 0; i < bfn; i++) out->shape[afn + i] = gr__vshape(b)[bf0 + i];
    return GR_OK;
}

static gr_status gr__TensorDot_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1];
    int af0, afn, ac0, acn, bf0, bfn, bc0, bcn, i;
    gr__tdot_axes(a->ndim, p->sa, p->ta, 1, &af0, &afn, &ac0, &acn);
    gr__tdot_axes(b->ndim, p->sb, p->tb, 0, &bf0, &bfn, &bc0, &bcn);
    for (i = 0; i < acn; i++)
        if (a->shape[ac0 + i] != b->shape[bc0 + i])
            return gr_node_error(node, GR_ERR_SHAPE, "summed axes of %s %s and %s %s differ in size", gr__d(gr__in(node)[0]).s,
                                 gr__as(a).s, gr__d(gr__in(node)[1]).s, gr__as(b).s);
    for (i = 0; i < afn; i++) out[0]->shape[i] = a->shape[af0 + i];
    for (i = 0; i < bfn; i++) out[0]->shape[afn + i] = b->shape[bf0 + i];
    return GR_OK;
}

static gr_status gr__TensorDot_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1];
    int64_t ra = gr__dims_prod(a->shape, 0, p->sa), ca = gr__dims_prod(a->shape, p->sa, a->ndim);
    int64_t rb = gr__dims_prod(b->shape, 0, p->sb), cb = gr__dims_prod(b->shape, p->sb, b->ndim);
    gr__gemm_dt(a->dtype, p->ta, p->tb, p->ta ? ca : ra, p->tb ? rb : cb, p->ta ? ra : ca, a->data, b->data, out[0]->data,
                out[node->n_out]->data);
    return GR_OK;
}
static gr_status gr__TensorDot_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1];
    int64_t ra = gr__dims_prod(a->shape, 0, p->sa), ca = gr__dims_prod(a->shape, p->sa, a->ndim);
    int64_t rb = gr__dims_prod(b->shape, 0, p->sb), cb = gr__dims_prod(b->shape, p->sb, b->ndim);
    (void)out;
    gr__em_gemm(e, a->dtype, p->ta, p->tb, p->ta ? ca : ra, p->tb ? rb : cb, p->ta ? ra : ca, gr__em_in(e, 0), gr__em_in(e, 1), gr__em_out(e, 0));
    return GR_OK;
}
static size_t gr__TensorDot_scratch(const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1];
    int64_t ra = gr__dims_prod(a->shape, 0, p->sa), ca = gr__dims_prod(a->shape, p->sa, a->ndim);
    (void)out;
    return gr__gemm_work_bytes(a->dtype, p->tb ? gr__dims_prod(b->shape, 0, p->sb) : gr__dims_prod(b->shape, p->sb, b->ndim), p->ta ? ra : ca);
}

/* C = op(A) op(B) on the matrices the split points make; G splits at the number of a's free axes.
   The four cases are Dot's, with the flags folded in so that no transpose is ever built. */
static gr_status gr__TensorDot_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1], *G = og[0];
    int sa = p->sa, sb = p->sb, sg = p->ta ? a->ndim - sa : sa;
    if (!gr__is_float(gr__out(node)[0]->dtype)) {
        ig[0] = gr__zeros_grad(a);
        ig[1] = gr__zeros_grad(b);
    } else if (!p->ta && !p->tb) {          /* C = A B:     dA = G B^T,     dB = A^T G */
        ig[0] = gr__tdot(G, b, sg, sb, 0, 1);
        ig[1] = gr__tdot(a, G, sa, sg, 1, 0);
    } else if (p->ta && !p->tb) {           /* C = A^T B:   dA = B G^T,     dB = A G */
        ig[0] = gr__tdot(b, G, sb, sg, 0, 1);
        ig[1] = gr__tdot(a, G, sa, sg, 0, 0);
    } else if (!p->ta) {                    /* C = A B^T:   dA = G B,       dB = G^T A */
        ig[0] = gr__tdot(G, b, sg, sb, 0, 0);
        ig[1] = gr__tdot(G, a, sg, sa, 1, 0);
    } else {                                /* C = A^T B^T: dA = B^T G^T,   dB = G^T A^T */
        ig[0] = gr__tdot(b, G, sb, sg, 1, 1);
        ig[1] = gr__tdot(G, a, sg, sa, 1, 1);
    }
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}

static gr_status gr__TensorDot_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    gr_var *t = NULL;
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || (gr_is_disconnected(ev[0]) && gr_is_disconnected(ev[1]))) return GR_OK;
    if (!gr_is_disconnected(ev[0])) t = gr__tdot(ev[0], gr__in(node)[1], p->sa, p->sb, p->ta, p->tb);
    if (!gr_is_disconnected(ev[1])) {
        gr_var *u = gr__tdot(gr__in(node)[0], ev[1], p->sa, p->sb, p->ta, p->tb);
        t = gr_is_disconnected(ev[0]) ? u : gr_add(t, u);
    }
    orop[0] = t;
    return t ? GR_OK : node->graph->status;
}

/* a batched a (its free rows gain the leading axis) is the same product; anything else row by row */
static gr_status gr__TensorDot_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    const gr__tdot_params *p = (const gr__tdot_params *)gr__params(node);
    if (batched[0] && !batched[1] && !p->ta && gr__out(node)[0]->ndim < GR_MAX_NDIM) {
        out[0] = gr__tdot(in[0], in[1], p->sa + 1, p->sb, 0, p->tb);
        return out[0] ? GR_OK : node->graph->status;
    }
    return gr__map_batch(node, in, batched, out);
}

/* ---- MatMul ------------------------------------------------------------------------------------- */

typedef struct gr__matmul_params { int ta, tb; } gr__matmul_params;

static gr_var *gr__mm(gr_var *a, gr_var *b, int ta, int tb) {
    gr__matmul_params p;
    gr_var *args[2];
    gr_graph *g;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_matmul", 2, args, &g)) return NULL;
    memset(&p, 0, sizeof p);
    p.ta = ta; p.tb = tb;
    return gr__node1(g, &gr__op_MatMul, &p, sizeof p, 2, args);
}

/* the static size of two batch axes broadcast together; -2 when they conflict (1 broadcasts,
   -1 is unknown) */
static int64_t gr__bcast_dim(int64_t x, int64_t y) {
    if (x == 1) return y;
    if (y == 1 || y == -1) return x;
    if (x == -1 || x == y) return y;
    return -2;
}

GR_API gr_var *gr_matmul(gr_var *a, gr_var *b) {
    gr_var *args[2], *y;
    gr_graph *g;
    int pattern[GR_MAX_NDIM], T, i, nd, a1, b1;
    int64_t ka, kb;
    args[0] = a; args[1] = b;
    if (!gr__operands("gr_matmul", 2, args, &g)) return NULL;
    if (a->ndim == 0 || b->ndim == 0)
        return gr__fail(g, GR_ERR_TYPE, "gr_matmul: %s is 0-d; matmul takes 1-d or more (gr_mul scales)", gr__d(a->ndim ? b : a).s);
    ka = gr__vshape(a)[a->ndim - 1];
    kb = gr__vshape(b)[b->ndim == 1 ? 0 : b->ndim - 2];
    if (ka >= 0 && kb >= 0 && ka != kb)
        return gr__fail(g, GR_ERR_SHAPE, "gr_matmul: %s %s and %s %s: the inner dimensions %lld and %lld differ", gr__d(a).s,
                        gr__vs(a).s, gr__d(b).s, gr__vs(b).s, (long long)ka, (long long)kb);
    for (i = 3; i <= a->ndim && i <= b->ndim; i++)
        if (gr__bcast_dim(gr__vshape(a)[a->ndim - i], gr__vshape(b)[b->ndim - i]) == -2)
            return gr__fail(g, GR_ERR_SHAPE, "gr_matmul: the batch axes of %s %s and %s %s do not broadcast", gr__d(a).s,
                            gr__vs(a).s, gr__d(b).s, gr__vs(b).s);
    T = gr__promote(2, args);
    a = gr__coerce(a, T);
    b = gr__coerce(b, T);
    if (!a || !b) return NULL;
    /* NumPy's promotion of 1-d operands: a row (1, k), a column (k, 1), removed from the result */
    a1 = a->ndim == 1;
    b1 = b->ndim == 1;
    if (a1) { pattern[0] = GR_NEWAXIS; pattern[1] = 0; a = gr__dimshuffle(a, 2, pattern, 0); }
    if (b1) { pattern[0] = 0; pattern[1] = GR_NEWAXIS; b = gr__dimshuffle(b, 2, pattern, 0); }
    y = gr__mm(a, b, 0, 0);
    if (!y || (!a1 && !b1)) return y;
    nd = 0;
    for (i = 0; i < y->ndim; i++)
        if (!(a1 && i == y->ndim - 2) && !(b1 && i == y->ndim - 1)) pattern[nd++] = i;
    return gr__dimshuffle(y, nd, pattern, 1);
}

static gr_status gr__MatMul_infer(const gr_node *node, gr_type *out) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1];
    int nba, nbb, nbo, i;
    int64_t m, ka, kb, n;
    out->dtype = (gr_dtype)a->dtype;
    if (a->dtype != b->dtype || a->ndim < 2 || b->ndim < 2)
        return gr__error(node->graph, GR_ERR_TYPE, "gr_matmul: operands %s and %s must have 2 dimensions or more and one dtype",
                         gr__d(a).s, gr__d(b).s);
    nba = a->ndim - 2; nbb = b->ndim - 2;
    nbo = nba > nbb ? nba : nbb;
    gr__op_dims(gr__vshape(a) + nba, p->ta, &m, &ka);
    gr__op_dims(gr__vshape(b) + nbb, p->tb, &kb, &n);
    if (ka >= 0 && kb >= 0 && ka != kb)
        return gr__error(node->graph, GR_ERR_SHAPE, "gr_matmul: %s %s%s and %s %s%s: the inner dimensions differ", gr__d(a).s,
                         gr__vs(a).s, p->ta ? " transposed" : "", gr__d(b).s, gr__vs(b).s, p->tb ? " transposed" : "");
    for (i = 0; i < nbo; i++) {
        int64_t x = i - (nbo - nba) >= 0 ? gr__vshape(a)[i - (nbo - nba)] : 1, y = i - (nbo - nbb) >= 0 ? gr__vshape(b)[i - (nbo - nbb)] : 1;
        out->shape[i] = gr__bcast_dim(x, y);
        if (out->shape[i] == -2)
            return gr__error(node->graph, GR_ERR_SHAPE, "gr_matmul: the batch axes of %s %s and %s %s do not broadcast", gr__d(a).s,
                             gr__vs(a).s, gr__d(b).s, gr__vs(b).s);
    }
    out->ndim = nbo + 2;
    out->shape[nbo] = m;
    out->shape[nbo + 1] = n;
    return GR_OK;
}

static gr_status gr__MatMul_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1];
    int nba = a->ndim - 2, nbb = b->ndim - 2, nbo = out[0]->ndim - 2, i;
    int64_t m, ka, kb, n;
    gr__op_dims(a->shape + nba, p->ta, &m, &ka);
    gr__op_dims(b->shape + nbb, p->tb, &kb, &n);
    if (ka != kb)
        return gr_node_error(node, GR_ERR_SHAPE, "%s %s%s and %s %s%s: the inner dimensions differ", gr__d(gr__in(node)[0]).s, gr__as(a).s,
                             p->ta ? " transposed" : "", gr__d(gr__in(node)[1]).s, gr__as(b).s, p->tb ? " transposed" : "");
    for (i = 0; i < nbo; i++) {
        int64_t x = i - (nbo - nba) >= 0 ? a->shape[i - (nbo - nba)] : 1, y = i - (nbo - nbb) >= 0 ? b->shape[i - (nbo - nbb)] : 1;
        if (x != y && x != 1 && y != 1)
            return gr_node_error(node, GR_ERR_SHAPE, "the batch axes of %s %s and %s %s do not broadcast", gr__d(gr__in(node)[0]).s,
                                 gr__as(a).s, gr__d(gr__in(node)[1]).s, gr__as(b).s);
        out[0]->shape[i] = x == 1 ? y : x;
    }
    out[0]->shape[nbo] = m;
    out[0]->shape[nbo + 1] = n;
    return GR_OK;
}

/* one GEMM per output matrix, the operands found through broadcast strides (in matrices); when b
   has no batch and a's batch is the output's, one GEMM of all a's rows at once */
static gr_status gr__MatMul_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1];
    gr_array *c = out[0];
    int nba = a->ndim - 2, nbb = b->ndim - 2, nbo = c->ndim - 2, d;
    int64_t M, K, Kb, N, batch = gr__dims_prod(c->shape, 0, nbo), t;
    int64_t ast[GR_MAX_NDIM], bst[GR_MAX_NDIM], idx[GR_MAX_NDIM], aoff = 0, boff = 0, s;
    size_t es = gr__dsize(a->dtype), asz, bsz, csz;
    gr__op_dims(a->shape + nba, p->ta, &M, &K);
    gr__op_dims(b->shape + nbb, p->tb, &Kb, &N);
    asz = (size_t)(M * K) * es; bsz = (size_t)(K * N) * es; csz = (size_t)(M * N) * es;
    if (c->size == 0) return GR_OK;
    if (!p->ta && gr__dims_prod(b->shape, 0, nbb) == 1 && gr__dims_prod(a->shape, 0, nba) == batch) {
        gr__gemm_dt(a->dtype, 0, p->tb, batch * M, N, K, a->data, b->data, c->data, out[node->n_out]->data);
        return GR_OK;
    }
    for (d = nbo - 1, s = 1; d >= 0; d--) {     /* a's batch strides on the output's batch axes */
        int ai = d - (nbo - nba);
        ast[d] = ai >= 0 && a->shape[ai] != 1 ? s : 0;
        if (ai >= 0) s *= a->shape[ai];
        idx[d] = 0;
    }
    for (d = nbo - 1, s = 1; d >= 0; d--) {
        int bi = d - (nbo - nbb);
        bst[d] = bi >= 0 && b->shape[bi] != 1 ? s : 0;
        if (bi >= 0) s *= b->shape[bi];
    }
    for (t = 0; t < batch; t++) {
        gr__gemm_dt(a->dtype, p->ta, p->tb, M, N, K, (const char *)a->data + (size_t)aoff * asz, (const char *)b->data + (size_t)boff * bsz,
                    (char *)c->data + (size_t)t * csz, out[node->n_out]->data);
        for (d = nbo - 1; d >= 0; d--) {         /* the next output matrix */
            idx[d]++; aoff += ast[d]; boff += bst[d];
            if (idx[d] < c->shape[d]) break;
            aoff -= ast[d] * idx[d]; boff -= bst[d] * idx[d]; idx[d] = 0;
        }
    }
    return GR_OK;
}
/* the same in an emitted file: the loop over the output matrices, each one's operands found from
   its index by the broadcast strides */
static gr_status gr__MatMul_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    const gr_array *a = in[0], *b = in[1], *c = out[0];
    int nba = a->ndim - 2, nbb = b->ndim - 2, nbo = c->ndim - 2, d;
    int64_t M, K, Kb, N, batch = gr__dims_prod(c->shape, 0, nbo), ast[GR_MAX_NDIM], bst[GR_MAX_NDIM], s;
    char A[GR__EM_OPND], B[GR__EM_OPND], C[GR__EM_OPND];
    gr__op_dims(a->shape + nba, p->ta, &M, &K);
    gr__op_dims(b->shape + nbb, p->tb, &Kb, &N);
    if (c->size == 0) return GR_OK;
    if (!p->ta && gr__dims_prod(b->shape, 0, nbb) == 1 && gr__dims_prod(a->shape, 0, nba) == batch) {
        gr__em_gemm(e, a->dtype, 0, p->tb, batch * M, N, K, gr__em_in(e, 0), gr__em_in(e, 1), gr__em_out(e, 0));
        return GR_OK;
    }
    for (d = nbo - 1, s = 1; d >= 0; d--) {     /* a's batch strides on the output's batch axes */
        int ai = d - (nbo - nba);
        ast[d] = ai >= 0 && a->shape[ai] != 1 ? s : 0;
        if (ai >= 0) s *= a->shape[ai];
    }
    for (d = nbo - 1, s = 1; d >= 0; d--) {
        int bi = d - (nbo - nbb);
        bst[d] = bi >= 0 && b->shape[bi] != 1 ? s : 0;
        if (bi >= 0) s *= b->shape[bi];
    }
    snprintf(A, sizeof A, "(%s + mm_a * %lld)", gr__em_in(e, 0), (long long)(M * K));
    snprintf(B, sizeof B, "(%s + mm_b * %lld)", gr__em_in(e, 1), (long long)(K * N));
    snprintf(C, sizeof C, "(%s + mm_t * %lld)", gr__em_out(e, 0), (long long)(M * N));
    gr__em_line(e, "for (int64_t mm_t = 0; mm_t < %lld; mm_t++) {", (long long)batch);
    gr__em_line(e, "int64_t mm_r = mm_t, mm_a = 0, mm_b = 0, mm_q = 0;");
    for (d = nbo - 1; d >= 0; d--)
        if (c->shape[d] > 1)
            gr__em_line(e, "mm_q = mm_r %% %lld; mm_r /= %lld; mm_a += mm_q * %lld; mm_b += mm_q * %lld;", (long long)c->shape[d],
                        (long long)c->shape[d], (long long)ast[d], (long long)bst[d]);
    gr__em_line(e, "(void)mm_r; (void)mm_a; (void)mm_b; (void)mm_q;");
    gr__em_gemm(e, a->dtype, p->ta, p->tb, M, N, K, A, B, C);
    gr__em_line(e, "}");
    return GR_OK;
}
static size_t gr__MatMul_scratch(const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    return gr__gemm_work_bytes(in[0]->dtype, out[0]->shape[out[0]->ndim - 1], in[0]->shape[in[0]->ndim - (p->ta ? 2 : 1)]);
}

/* Dot's four cases on the last two axes, then summed down over the batch axes an operand was
   broadcast along */
static gr_status gr__MatMul_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    gr_var *a = gr__in(node)[0], *b = gr__in(node)[1], *G = og[0];
    if (!gr__is_float(gr__out(node)[0]->dtype)) {
        ig[0] = gr__zeros_grad(a);
        ig[1] = gr__zeros_grad(b);
        return ig[0] && ig[1] ? GR_OK : node->graph->status;
    }
    if (!p->ta && !p->tb) { ig[0] = gr__mm(G, b, 0, 1); ig[1] = gr__mm(a, G, 1, 0); }
    else if (p->ta && !p->tb) { ig[0] = gr__mm(b, G, 0, 1); ig[1] = gr__mm(a, G, 0, 0); }
    else if (!p->ta) { ig[0] = gr__mm(G, b, 0, 0); ig[1] = gr__mm(G, a, 1, 0); }
    else { ig[0] = gr__mm(b, G, 1, 1); ig[1] = gr__mm(G, a, 1, 1); }
    ig[0] = gr__sum_to(ig[0], a);
    ig[1] = gr__sum_to(ig[1], b);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}

static gr_status gr__MatMul_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    gr_var *t = NULL;
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || (gr_is_disconnected(ev[0]) && gr_is_disconnected(ev[1]))) return GR_OK;
    if (!gr_is_disconnected(ev[0])) t = gr__mm(ev[0], gr__in(node)[1], p->ta, p->tb);
    if (!gr_is_disconnected(ev[1])) {
        gr_var *u = gr__mm(gr__in(node)[0], ev[1], p->ta, p->tb);
        t = gr_is_disconnected(ev[0]) ? u : gr_add(t, u);
    }
    orop[0] = t;
    return t ? GR_OK : node->graph->status;
}

/* batching by shifting: a batched operand gets its missing batch axes (size 1) after the new
   leading one, so that it lines up with the output's batch axes and the other operand broadcasts */
static gr_status gr__MatMul_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    const gr__matmul_params *p = (const gr__matmul_params *)gr__params(node);
    int nbo = gr__out(node)[0]->ndim - 2, k, i;
    gr_var *xs[2];
    if (nbo + 3 > GR_MAX_NDIM) return gr__map_batch(node, in, batched, out);
    for (k = 0; k < 2; k++) {
        int pattern[GR_MAX_NDIM], m = 0, nd = gr__in(node)[k]->ndim;
        xs[k] = in[k];
        if (!batched[k] || nd - 2 == nbo) continue;
        pattern[m++] = 0;
        for (i = 0; i < nbo - (nd - 2); i++) pattern[m++] = GR_NEWAXIS;
        for (i = 1; i <= nd; i++) pattern[m++] = i;
        xs[k] = gr__dimshuffle(in[k], m, pattern, 0);
        if (!xs[k]) return node->graph->status;
    }
    out[0] = gr__mm(xs[0], xs[1], p->ta, p->tb);
    return out[0] ? GR_OK : node->graph->status;
}

/* ---- C code generation (gr_fn_emit_c): the rules not written yet fail, naming the op ---------------- */

#endif /* GR_NO_DOT */
