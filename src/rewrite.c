/* src/rewrite.c: rewrites applied while gr_function copies the graph (at GR_OPT_FULL).

   Every node is rebuilt in the function's private graph after its inputs, through gr__rw_build:
     1. local simplification: algebra (x+0, x*1, x*0 from zero gradients, neg(neg x)), zero fills,
        dimshuffle and reshape composition, transposes folded into Dot's flags, stabilisation
        (log(softmax) -> log_softmax, log(1+x) -> log1p, log(sigmoid x) -> -softplus(-x),
        exp(x)-1 -> expm1); a replacement is itself built through gr__rw_build;
     2. merging: a node equal to one already built (op, params, inputs) is that one;
     3. constant folding: a small node of constants is run now and becomes a constant.
   A node's inputs are final when it is built, so these local rewrites reach their fixed point in
   one pass. The gradient-modifying identities are removed at every level (they compute nothing).

   Shapes: each variable has a signature, one code per axis: a static size, or a symbol standing
   for an unknown size. Two axes with the same symbol have the same size in every call; an
   elementwise result keeps an axis's symbol when its operands agree on it. This tells when a
   rewrite keeps a result's shape, and (src/fuse.c) which elementwise nodes iterate alike. */

typedef struct gr__rewriter gr__rewriter;
struct gr__rewriter {
    gr_graph *cg;
    gr_graph *g;                 /* the source graph: a node the rewrites leave as it is is not copied */
    const gr_node *orig;         /* the source node being rebuilt (read once by gr__rw_build) */
    int level;                   /* GR_OPT_FULL or GR_OPT_NONE */
    gr_node **cse;               /* open addressing over the nodes filed under a hot key, or without inputs (see merging) */
    uint32_t *cse_hash;          /* each entry's hash: probes compare it before touching the node */
    uint32_t n_cse, cap_cse;
    int32_t *use_head;           /* by variable id of cg: the newest node filed under it (an index below), -1 none */
    uint32_t *use_count;         /* by variable id of cg: how many nodes are filed under it */
    uint32_t cap_use_head, cap_use_count;
    gr_node **use_node;          /* a filing: the node, and the next older one under the same key */
    int32_t *use_next;
    uint32_t n_use, cap_use_node, cap_use_next;
    int32_t *sig;                /* signature codes: >= 0 a symbol, < 0 the static size -code - 1 */
    uint32_t n_sig, cap_sig;
    int64_t *sig_at;             /* by variable id of cg: where its codes start, -1 when not yet known */
    uint32_t cap_sig_at;
    int32_t next_sym;
    int64_t *trim;               /* symbols of trimmed axes: (symbol, rows trimmed) -> symbol, open addressing */
    uint32_t n_trim, cap_trim;
    uint32_t *view;              /* the function's nodes as the copy made or reused them (ids, topological) */
    uint32_t *view_depth;        /* each one's depth: the longest path up from the leaves (fusion's order) */
    uint32_t n_view, cap_view, cap_view_depth;
    uint32_t *depth;             /* by variable id, during the copy: its producer's depth */
    uint32_t cap_depth;
    uint32_t *repl;              /* after fusion, by variable id: 1 + the id of the Fused output replacing it */
    uint32_t n_repl;
};

#define GR__SIG_STATIC(n) ((int32_t)(-(n) - 1))
#define GR__SIG_ONE GR__SIG_STATIC(1)

static gr__rewriter *gr__rewriter_new(gr_graph *g, gr_graph *cg, int level) {
    gr__rewriter *rw = (gr__rewriter *)gr__calloc(1, sizeof(gr__rewriter));
    if (!rw) return NULL;
    rw->g = g;
    rw->cg = cg;
    rw->level = level;
    return rw;
}

static void gr__rewriter_free(gr__rewriter *rw) {
    if (!rw) return;
    GR_FREE(rw->cse);
    GR_FREE(rw->cse_hash);
    GR_FREE(rw->use_head);
    GR_FREE(rw->use_count);
    GR_FREE(rw->use_node);
    GR_FREE(rw->use_next);
    GR_FREE(rw->sig);
    GR_FREE(rw->sig_at);
    GR_FREE(rw->trim);
    GR_FREE(rw->view);
    GR_FREE(rw->view_depth);
    GR_FREE(rw->depth);
    GR_FREE(rw->repl);
    GR_FREE(rw);
}

/* what merging keeps (the nodes filed by key and the hash table), and the depths by variable,
   freed once the copy is built: fusion needs the signatures and the view only */
static void gr__rewriter_drop_merging(gr__rewriter *rw) {
    GR_FREE(rw->cse); GR_FREE(rw->cse_hash);
    GR_FREE(rw->use_head); GR_FREE(rw->use_count); GR_FREE(rw->use_node); GR_FREE(rw->use_next);
    rw->cse = NULL; rw->cse_hash = NULL;
    rw->use_head = NULL; rw->use_node = NULL; rw->use_next = NULL; rw->use_count = NULL;
    GR_FREE(rw->depth); rw->depth = NULL; rw->cap_depth = 0;
    rw->n_cse = rw->cap_cse = rw->cap_use_head = rw->cap_use_count = 0;
    rw->n_use = rw->cap_use_node = rw->cap_use_next = 0;
}

/* ---- signatures ---------------------------------------------------------------------------------- */

/* room for v's codes; NULL when out of memory */
static int32_t *gr__sig_slot(gr__rewriter *rw, const gr_var *v) {
    uint32_t id = v->id;
    if (!gr__grow_fill((void **)&rw->sig_at, &rw->cap_sig_at, id, sizeof(int64_t), 0xFF)) return NULL;   /* -1: unknown */
    if (rw->n_sig + (uint32_t)v->ndim + 1 > rw->cap_sig &&
        !gr__grow((void **)&rw->sig, &rw->cap_sig, rw->n_sig + (uint32_t)v->ndim + 1, sizeof(int32_t)))
        return NULL;
    rw->sig_at[id] = rw->n_sig;
    rw->n_sig += (uint32_t)v->ndim;
    return rw->sig + rw->sig_at[id];
}

static int32_t gr__fresh_code(gr__rewriter *rw, const gr_var *v, int axis) {
    return gr__vshape(v)[axis] >= 0 ? GR__SIG_STATIC(gr__vshape(v)[axis]) : rw->next_sym++;
}

static const int32_t *gr__sig(gr__rewriter *rw, const gr_var *v);
static void gr__sig_copy(gr__rewriter *rw, const gr_var *v, int32_t *out);

/* the symbol of an axis of symbol `sym` with k rows trimmed off (x[a:-b] trims a + b): the same
   for every slice that trims as many, so x[:-1] and x[1:] have the same length */
static int32_t gr__sig_trimmed(gr__rewriter *rw, int32_t sym, int64_t k) {
    uint32_t mask, i;
    if (k == 0) return sym;
    if (rw->n_trim * 2 + 2 >= rw->cap_trim) {
        uint32_t nc = rw->cap_trim ? rw->cap_trim * 2 : 64, q;
        int64_t *t = (int64_t *)GR_MALLOC(sizeof(int64_t) * 3 * nc);
        if (!t) return rw->next_sym++;
        for (q = 0; q < nc; q++) t[3 * q] = -1;
        for (q = 0; q < rw->cap_trim; q++) {
            int64_t *e = rw->trim + 3 * q;
            if (e[0] < 0) continue;
            i = (uint32_t)gr__hash64((uint64_t)e[0] * 1000003u + (uint64_t)e[1]) & (nc - 1);
            while (t[3 * i] >= 0) i = (i + 1) & (nc - 1);
            t[3 * i] = e[0]; t[3 * i + 1] = e[1]; t[3 * i + 2] = e[2];
        }
        GR_FREE(rw->trim);
        rw->trim = t;
        rw->cap_trim = nc;
    }
    mask = rw->cap_trim - 1;
    for (i = (uint32_t)gr__hash64((uint64_t)sym * 1000003u + (uint64_t)k) & mask; rw->trim[3 * i] >= 0; i = (i + 1) & mask)
        if (rw->trim[3 * i] == sym && rw->trim[3 * i + 1] == k) return (int32_t)rw->trim[3 * i + 2];
    rw->trim[3 * i] = sym;
    rw->trim[3 * i + 1] = k;
    rw->trim[3 * i + 2] = rw->next_sym++;
    rw->n_trim++;
    return (int32_t)rw->trim[3 * i + 2];
}

/* the signature of node's output j, from its inputs' (already known) signatures */
static void gr__sig_compute(gr__rewriter *rw, const gr_var *v, int32_t *out) {
    const gr_node *node = gr__owner(v);
    const gr_op_def *op = node ? node->op : NULL;
    int nd = v->ndim, i, k;
    for (i = 0; i < nd; i++) out[i] = gr__fresh_code(rw, v, i);     /* the default: nothing known */
    if (!node || v->out_index != 0) return;
    if (gr__op_flags(op) & GR__OPF_ELEMWISE) {
        for (i = 0; i < nd; i++) {
            int32_t code = GR__SIG_ONE;
            int clash = 0;
            for (k = 0; k < node->n_in; k++) {
                const gr_var *x = gr__in(node)[k];
                int xi = i - (nd - x->ndim);
                int32_t c;
                if (xi < 0) continue;
                c = gr__sig(rw, x)[xi];
                if (c == GR__SIG_ONE) continue;
                if (code == GR__SIG_ONE) code = c;
                else if (code != c) clash = 1;
            }
            if (!clash && (gr__vshape(v)[i] < 0 || GR__SIG_STATIC(gr__vshape(v)[i]) == code)) out[i] = code;
        }
    } else if (op == &gr__op_DimShuffle) {
        const gr__dimshuffle_params *p = gr__dsp(node);
        int32_t s[GR_MAX_NDIM];
        gr__sig_copy(rw, gr__in(node)[0], s);
        for (i = 0; i < nd; i++) out[i] = p->pattern[i] < 0 ? GR__SIG_ONE : s[p->pattern[i]];
    } else if (op->infer == gr__reduce_infer) {
        const gr__reduce_params *p = gr__rp(node);
        int32_t s[GR_MAX_NDIM];
        int m = 0;
        gr__sig_copy(rw, gr__in(node)[0], s);
        for (i = 0; i < gr__in(node)[0]->ndim; i++) {
            if (p->mask & (1u << i)) { if (p->keepdims) out[m++] = GR__SIG_ONE; }
            else out[m++] = s[i];
        }
    } else if (op == &gr__op_BroadcastLike || op == &gr__op_ReduceLike || op == &gr__op_ReshapeLike) {
        if (gr__in(node)[1]->ndim == nd) gr__sig_copy(rw, gr__in(node)[1], out);
    } else if (op == &gr__op_Slice || op == &gr__op_Index) {
        const gr__view_params *p = gr__vp(node);
        int32_t s[GR_MAX_NDIM];
        int m = 0;
        gr__sig_copy(rw, gr__in(node)[0], s);
        for (i = 0; i < gr__in(node)[0]->ndim; i++) {
            if (i != p->axis) { out[m++] = s[i]; continue; }
            if (p->is_index) continue;
            /* a unit step from a start >= 0 to a stop < 0 (or open ends) trims a + b rows */
            if (s[i] >= 0 && p->step == 1 && (p->start == GR_OPEN || (p->start >= 0 && p->start < ((int64_t)1 << 40))) &&
                (p->stop == GR_OPEN || (p->stop < 0 && p->stop > -((int64_t)1 << 40))))
                out[m] = gr__sig_trimmed(rw, s[i], (p->start == GR_OPEN ? 0 : p->start) + (p->stop == GR_OPEN ? 0 : -p->stop));
            m++;
        }
    } else if (op == &gr__op_Banded) {                /* (size(ref), length of the diagonals) */
        int32_t s[GR_MAX_NDIM];
        if (gr__in(node)[0]->ndim == 1) { gr__sig_copy(rw, gr__in(node)[0], s); out[0] = s[0]; }
        gr__sig_copy(rw, gr__in(node)[1], s);
        out[1] = s[0];
    } else if (op == &gr__op_EyeLike) {              /* (size(r), *shape(r)): rows as long as r when r is 1-d */
        int32_t s[GR_MAX_NDIM];
        gr__sig_copy(rw, gr__in(node)[0], s);
        if (gr__in(node)[0]->ndim == 1) out[0] = s[0];
        for (i = 0; i < gr__in(node)[0]->ndim; i++) out[i + 1] = s[i];
    } else if (op->infer == gr__like0_infer || op == &gr__op_Cast || op == &gr__op_ViewUpdate || op == &gr__op_TakeUpdate) {
        if (gr__in(node)[0]->ndim == nd) gr__sig_copy(rw, gr__in(node)[0], out);
    } else if (op == &gr__op_Dot) {
        const gr__dot_params *p = (const gr__dot_params *)gr__params(node);
        const gr_var *a = gr__in(node)[0], *b = gr__in(node)[1];
        int32_t sa[GR_MAX_NDIM], sb[GR_MAX_NDIM];
        int m = 0;
        gr__sig_copy(rw, a, sa);
        gr__sig_copy(rw, b, sb);
        if (a->ndim == 2) out[m++] = sa[p->ta ? 1 : 0];
        if (b->ndim == 2) out[m++] = sb[p->tb ? 0 : 1];
    }
    for (i = 0; i < nd; i++)                        /* what the static type knows wins */
        if (gr__vshape(v)[i] >= 0) out[i] = GR__SIG_STATIC(gr__vshape(v)[i]);
}

/* v's signature; for a variable built outside the rewriter, from its inputs' when they are known
   (never recursively), else fresh symbols */
static const int32_t *gr__sig(gr__rewriter *rw, const gr_var *v) {
    static const int32_t none[GR_MAX_NDIM] = { 0 };
    int32_t *out;
    int i;
    if (v->ndim == 0) return none;                  /* nothing to know: no entry (most nodes of a scalar chain) */
    if (v->id < rw->cap_sig_at && rw->sig_at[v->id] >= 0) return rw->sig + rw->sig_at[v->id];
    if (gr__owner(v))
        for (i = 0; i < gr__owner(v)->n_in; i++) {
            const gr_var *x = gr__in(gr__owner(v))[i];
            if (x->ndim > 0 && !(x->id < rw->cap_sig_at && rw->sig_at[x->id] >= 0) && gr__owner(x)) {
                out = gr__sig_slot(rw, v);          /* inputs unknown: nothing is known */
                if (!out) return none;
                for (i = 0; i < v->ndim; i++) out[i] = gr__fresh_code(rw, v, i);
                return out;
            }
        }
    {
        int32_t tmp[GR_MAX_NDIM];
        gr__sig_compute(rw, v, tmp);                /* may add the inputs' (leaves') signatures */
        out = gr__sig_slot(rw, v);
        if (!out) return none;
        for (i = 0; i < v->ndim; i++) out[i] = tmp[i];
        return out;
    }
}

/* v's codes copied to out (the pool may move when another signature is added) */
static void gr__sig_copy(gr__rewriter *rw, const gr_var *v, int32_t *out) {
    const int32_t *s = gr__sig(rw, v);
    int i;
    for (i = 0; i < v->ndim; i++) out[i] = s[i];
}

/* a and b have the same shape in every call */
static int gr__sig_same(gr__rewriter *rw, const gr_var *a, const gr_var *b) {
    int32_t sa[GR_MAX_NDIM], sb[GR_MAX_NDIM];
    int i;
    if (a->ndim != b->ndim) return 0;
    gr__sig_copy(rw, a, sa);
    gr__sig_copy(rw, b, sb);
    for (i = 0; i < a->ndim; i++) if (sa[i] != sb[i]) return 0;
    return 1;
}

/* x broadcasts to r's shape without changing it, in every call */
static int gr__sig_into(gr__rewriter *rw, const gr_var *x, const gr_var *r) {
    int32_t sx[GR_MAX_NDIM], sr[GR_MAX_NDIM];
    int i, off = r->ndim - x->ndim;
    if (off < 0) return 0;
    gr__sig_copy(rw, x, sx);
    gr__sig_copy(rw, r, sr);
    for (i = 0; i < x->ndim; i++) if (sx[i] != GR__SIG_ONE && sx[i] != sr[off + i]) return 0;
    return 1;
}

/* ---- recognising values ------------------------------------------------------------------------- */

/* v is the 0-d constant c */
static int gr__rw_is_scalar(const gr_var *v, double c) {
    return v->kind == GR__VK_CONST && v->ndim == 0 && gr_array_get((const gr_array *)gr__ext(v), 0) == c;
}
/* v is zeros: a 0-d zero (*ref = NULL) or zeros broadcast to the shape of *ref */
static int gr__rw_zeros(const gr_var *v, gr_var **ref) {
    if (gr__rw_is_scalar(v, 0.0)) { *ref = NULL; return 1; }
    if (gr__owner(v) && gr__owner(v)->op == &gr__op_BroadcastLike && gr__rw_is_scalar(gr__in(gr__owner(v))[0], 0.0)) {
        *ref = gr__in(gr__owner(v))[1];
        return 1;
    }
    return 0;
}

/* v is the diagonal matrix diag(d): a square Banded matrix with one diagonal d, at offset 0 */
static gr_var *gr__rw_diag(gr__rewriter *rw, const gr_var *v) {
    const gr__banded_params *p;
    int32_t s[GR_MAX_NDIM];
    if (v->ndim != 2 || !gr__owner(v) || gr__owner(v)->op != &gr__op_Banded) return NULL;
    p = (const gr__banded_params *)gr__params(gr__owner(v));
    if (p->n != 1 || p->k[0] != 0) return NULL;
    gr__sig_copy(rw, v, s);
    return s[0] == s[1] ? gr__in(gr__owner(v))[1] : NULL;
}

/* ---- building through the rewrites ------------------------------------------------------------- */

static gr_status gr__rw_build(gr__rewriter *rw, const gr_op_def *op, const void *params, size_t psize, int n_in,
                              gr_var *const *ins, gr_var **outs);

static gr_var *gr__rw1(gr__rewriter *rw, const gr_op_def *op, const void *params, size_t psize, int n_in, gr_var *const *ins) {
    gr_var *out = NULL;
    return gr__rw_build(rw, op, params, psize, n_in, ins, &out) == GR_OK ? out : NULL;
}
static gr_var *gr__rw_ew1(gr__rewriter *rw, int row, gr_var *a) { return gr__rw1(rw, gr__ew_ops[row], NULL, 0, 1, &a); }
static gr_var *gr__rw_bcast(gr__rewriter *rw, gr_var *x, gr_var *ref) {
    gr_var *args[2];
    args[0] = x; args[1] = ref;
    return gr__rw1(rw, &gr__op_BroadcastLike, NULL, 0, 2, args);
}
/* zeros of dtype dt shaped like ref (a 0-d zero when ref is NULL or 0-d) */
static gr_var *gr__rw_zero_fill(gr__rewriter *rw, int dt, gr_var *ref) {
    gr_var *z = gr__scalar_const(rw->cg, dt, 0.0, 0);
    if (!z || !ref || ref->ndim == 0) return z;
    return gr__rw_bcast(rw, z, ref);
}

/* ---- banded matrices ------------------------------------------------------------------------------
   A Jacobian or Hessian is built from the identity seed of its batch (EyeLike). For a vector wrt,
   the seed becomes a Banded matrix (one diagonal of ones), and what Jacobians of elementwise
   functions of slices do to it keeps it banded: slicing its columns moves the diagonals, scaling
   by a vector or a scalar scales them, sums of banded matrices merge them, and a slice's gradient
   (a row placed into zeros at a slice) moves them back. So such a Hessian costs a few vectors and
   one fill of the result instead of a dozen dense passes. Like x * 0 above, a structural zero stays
   zero where the dense product would have met an infinity or a NaN. */

static const gr__banded_params *gr__rw_banded(const gr_var *v) {
    return gr__owner(v) && gr__owner(v)->op == &gr__op_Banded ? (const gr__banded_params *)gr__params(gr__owner(v)) : NULL;
}

/* Banded(ref, c; k) for n diagonals, in offset order, equal offsets summed; NULL when too many */
static gr_var *gr__rw_make_banded(gr__rewriter *rw, gr_var *ref, int n, gr_var **c, int64_t *k) {
    gr__banded_params p;
    gr_var *ins[GR__BANDED_MAX + 1];
    int i, j, m = 0;
    for (i = 1; i < n; i++)                              /* insertion sort: a handful of diagonals */
        for (j = i; j > 0 && k[j - 1] > k[j]; j--) {
            int64_t tk = k[j]; gr_var *tc = c[j];
            k[j] = k[j - 1]; c[j] = c[j - 1];
            k[j - 1] = tk; c[j - 1] = tc;
        }
    memset(&p, 0, sizeof p);
    ins[0] = ref;
    for (i = 0; i < n; i++) {
        if (m && p.k[m - 1] == k[i]) {
            gr_var *ab[2];
            ab[0] = ins[m]; ab[1] = c[i];
            if (!(ins[m] = gr__rw1(rw, &gr__op_ew_add, NULL, 0, 2, ab))) return NULL;
            continue;
        }
        if (m == GR__BANDED_MAX) return NULL;
        p.k[m] = k[i];
        ins[++m] = c[i];
    }
    p.n = m;
    return gr__rw1(rw, &gr__op_Banded, &p, GR__BANDED_PSIZE(m), m + 1, ins);
}

/* a view's start when its columns move diagonals: a unit step from a start >= 0; -1 otherwise */
static int64_t gr__rw_unit_start(const gr__view_params *vp) {
    int64_t s0 = vp->start == GR_OPEN ? 0 : vp->start;
    return !vp->is_index && vp->step == 1 && s0 >= 0 && s0 < ((int64_t)1 << 40) ? s0 : -1;
}

/* the banded matrix X with each diagonal c replaced by op(pre, c, post) (pre, post: operands before
   and after it, or NULL) and every offset moved by dk; NULL when out of memory */
static gr_var *gr__rw_banded_map(gr__rewriter *rw, const gr_var *X, const gr_op_def *op, const void *params, size_t psize,
                                 gr_var *pre, gr_var *post, int64_t dk) {
    const gr__banded_params *p = gr__rw_banded(X);
    gr_var *c[GR__BANDED_MAX], *args[3];
    int64_t k[GR__BANDED_MAX];
    int i, n;
    for (i = 0; i < p->n; i++) {
        n = 0;
        if (pre) args[n++] = pre;
        args[n++] = gr__in(gr__owner(X))[i + 1];
        if (post) args[n++] = post;
        if (!(c[i] = gr__rw1(rw, op, params, psize, n, args))) return NULL;
        k[i] = p->k[i] + dk;
    }
    return gr__rw_make_banded(rw, gr__in(gr__owner(X))[0], (int)p->n, c, k);
}

/* neg, mul, div and add of banded matrices that stay banded (the ops pullbacks apply to a cotangent);
   NULL (nothing built) otherwise */
static gr_var *gr__rw_banded_ew(gr__rewriter *rw, int row, gr_var *a, gr_var *b, int *failed) {
    const gr__banded_params *pa = gr__rw_banded(a), *pb = b ? gr__rw_banded(b) : NULL;
    gr_var *c[2 * GR__BANDED_MAX], *x = pa ? a : b, *v = pa ? b : a, *r = NULL;
    int64_t k[2 * GR__BANDED_MAX];
    int i, n = 0;
    *failed = 0;
    if (row == GR__EW_add) {                            /* both banded, the same shape and dtype */
        if (!pa || !pb || a->dtype != b->dtype || !gr__sig_same(rw, a, b)) return NULL;
        for (i = 0; i < pa->n; i++) { c[n] = gr__in(gr__owner(a))[i + 1]; k[n++] = pa->k[i]; }
        for (i = 0; i < pb->n; i++) { c[n] = gr__in(gr__owner(b))[i + 1]; k[n++] = pb->k[i]; }
        r = gr__rw_make_banded(rw, gr__in(gr__owner(x))[0], n, c, k);     /* NULL, nothing built: too many */
    } else if (row == GR__EW_neg || row == GR__EW_mul || (row == GR__EW_div && pa)) {
        /* scaled by a scalar or by a vector along the columns (never widening them) */
        if (row != GR__EW_neg && (pa && pb ? 1 : v->ndim > 1 || (v->ndim == 1 && !gr__sig_into(rw, v, x)))) return NULL;
        r = gr__rw_banded_map(rw, x, gr__ew_ops[row], NULL, 0, pa ? NULL : v, pa ? v : NULL, 0);
    }
    if (!r && rw->cg->status != GR_OK) *failed = 1;
    return r;
}

/* ---- constant factors ------------------------------------------------------------------------------
   Gradients are full of scalings: 2 x from a square, a constant cost weight, neg from a difference,
   ones broadcast to a term's shape. Over float operands of one dtype a product gathers its constant
   factors into one: mul(c1, mul(c2, x)) -> mul(c1 c2, x), mul(mul(c1, x), mul(c2, y)) ->
   mul(c1 c2, mul(x, y)), neg(mul(c, x)) = mul(c, neg x) -> mul(-c, x), a broadcast scalar times a
   scalar is their product broadcast, and a scalar constant (or a one-element one) broadcast to a
   shape the other operand already has is read as the scalar. Results change by
   rounding only (a product's factors are taken in another order). */

/* v is a 0-d float constant (any_ndim: a one-element one) that can scale a value of dtype dt without
   changing its dtype: *c its value */
static int gr__rw_factor_of(const gr_var *v, int dt, int any_ndim, double *c) {
    if (v->kind != GR__VK_CONST || !gr__is_float(dt) || (v->dtype != dt && !gr__is_weak(v))) return 0;
    if (any_ndim ? ((const gr_array *)gr__ext(v))->size != 1 : v->ndim != 0) return 0;
    *c = gr_array_get((const gr_array *)gr__ext(v), 0);
    return 1;
}
static int gr__rw_factor(const gr_var *v, int dt, double *c) { return gr__rw_factor_of(v, dt, 0, c); }

/* v is mul(c, x) (or mul(x, c)) for a constant factor c: x, and c in *c; NULL otherwise */
static gr_var *gr__rw_scaled(const gr_var *v, int dt, double *c) {
    int j;
    if (!gr__owner(v) || gr__owner(v)->op != &gr__op_ew_mul || v->dtype != dt) return NULL;
    for (j = 0; j < 2; j++)
        if (gr__in(gr__owner(v))[1 - j]->dtype == dt && gr__in(gr__owner(v))[1 - j]->ndim == v->ndim && gr__rw_factor(gr__in(gr__owner(v))[j], dt, c))
            return gr__in(gr__owner(v))[1 - j];
    return NULL;
}

/* mul(a, b) and neg(a) (b NULL) with their constant factors gathered; NULL when nothing applies */
static gr_var *gr__rw_scale(gr__rewriter *rw, gr_var *a, gr_var *b) {
    gr_var *ab[2];
    double c, c2;
    int k, dt = a->dtype;
    if (!b) {                                                      /* neg(mul(c, x)) */
        if (!(ab[1] = gr__rw_scaled(a, dt, &c)) || !(ab[0] = gr__scalar_const(rw->cg, dt, -c, 0))) return NULL;
        return gr__rw1(rw, &gr__op_ew_mul, NULL, 0, 2, ab);
    }
    if (a->dtype != b->dtype || !gr__is_float(dt)) return NULL;
    for (k = 0; k < 2; k++) {
        gr_var *u = k ? b : a, *y = k ? a : b, *x;
        const gr_node *un = gr__owner(u);
        if (!un) continue;
        /* a broadcast scalar times a scalar: the product broadcast */
        if (un->op == &gr__op_BroadcastLike && gr__rw_factor_of(gr__in(un)[0], dt, 1, &c) && gr__rw_factor(y, dt, &c2) && u->dtype == dt) {
            if (!(ab[0] = gr__scalar_const(rw->cg, dt, c * c2, 0))) return NULL;
            ab[1] = gr__in(un)[1];
            return gr__rw1(rw, &gr__op_BroadcastLike, NULL, 0, 2, ab);
        }
        /* a scalar broadcast to a shape y has: the scalar */
        if (un->op == &gr__op_BroadcastLike && gr__rw_factor_of(gr__in(un)[0], dt, 1, &c) && gr__sig_into(rw, u, y)) {
            if (!(ab[0] = gr__scalar_const(rw->cg, dt, c, 0))) return NULL;
            ab[1] = y;
            return gr__rw1(rw, &gr__op_ew_mul, NULL, 0, 2, ab);
        }
        if (gr__rw_factor(y, dt, &c) && un->op == &gr__op_ew_neg && gr__in(un)[0]->dtype == dt) {   /* mul(c, neg x) */
            if (!(ab[0] = gr__scalar_const(rw->cg, dt, -c, 0))) return NULL;
            ab[1] = gr__in(un)[0];
            return gr__rw1(rw, &gr__op_ew_mul, NULL, 0, 2, ab);
        }
        if (!(x = gr__rw_scaled(u, dt, &c2))) continue;
        if (gr__rw_factor(y, dt, &c)) {                             /* mul(c, mul(c2, x)) */
            if (!(ab[0] = gr__scalar_const(rw->cg, dt, c * c2, 0))) return NULL;
            ab[1] = x;
        } else {                                                   /* mul(mul(c2, x), mul(c, z)) */
            gr_var *z = gr__rw_scaled(y, dt, &c);
            if (!z) continue;                                      /* (one factor alone: no product saved) */
            ab[0] = x; ab[1] = z;
            if (!(ab[1] = gr__rw1(rw, &gr__op_ew_mul, NULL, 0, 2, ab))) return NULL;
            if (!(ab[0] = gr__scalar_const(rw->cg, dt, c * c2, 0))) return NULL;
        }
        return gr__rw1(rw, &gr__op_ew_mul, NULL, 0, 2, ab);
    }
    return NULL;
}

/* an elementwise node's equivalent, or NULL (and *done 0) to build it as it is */
static gr_var *gr__rw_simplify_ew(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    gr_var *a = in[0], *b = gr__ew_ops[row]->n_in > 1 ? in[1] : NULL, *za = NULL, *zb = NULL;
    int a0 = gr__rw_zeros(a, &za), b0 = b && gr__rw_zeros(b, &zb), T = a->dtype;
    *done = 1;
    if (gr__rw_banded(a) || (b && gr__rw_banded(b))) {
        int failed;
        gr_var *r = gr__rw_banded_ew(rw, row, a, b, &failed);
        if (r || failed) return r;
    }
    if (row == GR__EW_add) {
        /* x + (zeros with b added at a view) = x with b added at that view: one pass, in place */
        int k;
        for (k = 0; k < 2; k++) {
            gr_var *u = in[k], *x = in[1 - k], *z = NULL;
            if (!gr__owner(u) || !(gr__owner(u)->op == &gr__op_ViewUpdate || gr__owner(u)->op == &gr__op_TakeUpdate)) continue;
            if (!((const gr__view_params *)gr__params(gr__owner(u)))->inc && gr__owner(u)->op == &gr__op_ViewUpdate) continue;
            if (gr__owner(u)->op == &gr__op_TakeUpdate && !((const gr__take_params *)gr__params(gr__owner(u)))->inc) continue;
            if (!gr__rw_zeros(gr__in(gr__owner(u))[0], &z) || !gr__sig_same(rw, x, u) || x->dtype != u->dtype) continue;
            {
                gr_var *args[3];
                args[0] = x; args[1] = gr__in(gr__owner(u))[1];
                if (gr__owner(u)->n_in == 3) args[2] = gr__in(gr__owner(u))[2];
                return gr__rw1(rw, gr__owner(u)->op, gr__params(gr__owner(u)), gr__owner(u)->params_size, gr__owner(u)->n_in, args);
            }
        }
    }
    switch (row) {
    case GR__EW_add:
    case GR__EW_sub:
        if (b0 && (!zb || gr__sig_into(rw, zb, a))) return a;                 /* a + 0 */
        if (b0 && zb && gr__sig_into(rw, a, zb)) return gr__rw_bcast(rw, a, zb);
        if (a0 && (!za || gr__sig_into(rw, za, b))) return row == GR__EW_add ? b : gr__rw_ew1(rw, GR__EW_neg, b);
        break;
    case GR__EW_mul:
        if (gr__rw_is_scalar(b, 1.0)) return a;
        if (gr__rw_is_scalar(a, 1.0)) return b;
        if (gr__rw_is_scalar(b, -1.0)) return gr__rw_ew1(rw, GR__EW_neg, a);
        if (gr__rw_is_scalar(a, -1.0)) return gr__rw_ew1(rw, GR__EW_neg, b);
        /* x * 0, as zero gradients make it (like Aesara, x's infinities and NaNs are not kept) */
        if (a0 && (!za ? b->ndim == 0 : gr__sig_into(rw, b, za))) return a;
        if (b0 && (!zb ? a->ndim == 0 : gr__sig_into(rw, a, zb))) return b;
        if (a0 && (!za || gr__sig_into(rw, za, b))) return gr__rw_zero_fill(rw, T, b);
        if (b0 && (!zb || gr__sig_into(rw, zb, a))) return gr__rw_zero_fill(rw, T, a);
        {
            gr_var *r = gr__rw_scale(rw, a, b);
            if (r || rw->cg->status != GR_OK) return r;
        }
        break;
    case GR__EW_div:
        if (gr__rw_is_scalar(b, 1.0)) return a;
        if (a0 && (!za ? b->ndim == 0 : gr__sig_into(rw, b, za))) return a;
        break;
    case GR__EW_neg:
        if (gr__owner(a) && gr__owner(a)->op == &gr__op_ew_neg) return gr__in(gr__owner(a))[0];
        if (a0) return a;
        {
            gr_var *r = gr__rw_scale(rw, a, NULL);
            if (r || rw->cg->status != GR_OK) return r;
        }
        break;
    case GR__EW_pow:
        if (gr__rw_is_scalar(b, 1.0)) return a;
        if (gr__rw_is_scalar(b, 2.0)) return gr__rw_ew1(rw, GR__EW_sqr, a);
        break;
    case GR__EW_log:
        if (gr__owner(a) && gr__owner(a)->op == &gr__op_Softmax)                   /* log(softmax x) */
            return gr__rw1(rw, &gr__op_LogSoftmax, gr__params(gr__owner(a)), gr__owner(a)->params_size, 1, gr__in(gr__owner(a)));
        if (gr__owner(a) && gr__owner(a)->op == &gr__op_ew_add) {                   /* log(1 + x) */
            gr_var *p = gr__in(gr__owner(a))[0], *q = gr__in(gr__owner(a))[1];
            if (gr__rw_is_scalar(p, 1.0) && q->ndim == a->ndim) return gr__rw_ew1(rw, GR__EW_log1p, q);
            if (gr__rw_is_scalar(q, 1.0) && p->ndim == a->ndim) return gr__rw_ew1(rw, GR__EW_log1p, p);
        }
        if (gr__owner(a) && gr__owner(a)->op == &gr__op_ew_sigmoid) {               /* log(sigmoid x) = -softplus(-x) */
            gr_var *x = gr__in(gr__owner(a))[0];
            return gr__rw_ew1(rw, GR__EW_neg, gr__rw_ew1(rw, GR__EW_softplus, gr__rw_ew1(rw, GR__EW_neg, x)));
        }
        break;
    default:
        break;
    }
    if (row == GR__EW_sub && gr__rw_is_scalar(b, 1.0) && gr__owner(a) && gr__owner(a)->op == &gr__op_ew_exp)
        return gr__rw_ew1(rw, GR__EW_expm1, gr__in(gr__owner(a))[0]);                  /* exp(x) - 1 */
    *done = 0;
    return NULL;
}

/* a structural node's equivalent, or NULL (and *done 0) */
static gr_var *gr__rw_simplify_struct(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    gr_var *x = in[0], *z = NULL;
    *done = 1;
    if (op == &gr__op_BroadcastLike || op == &gr__op_ReduceLike || op == &gr__op_ReshapeLike) {
        gr_var *ref = in[1];
        if (gr__rw_zeros(x, &z) && (z || op != &gr__op_BroadcastLike)) return gr__rw_zero_fill(rw, x->dtype, ref);
        if (op != &gr__op_ReshapeLike && gr__sig_same(rw, x, ref)) return x;
        if (op == &gr__op_ReshapeLike && x->ndim == ref->ndim && gr__sig_same(rw, x, ref)) return x;
    } else if (op == &gr__op_DimShuffle) {
        const gr__dimshuffle_params *p = (const gr__dimshuffle_params *)params;
        if (gr__owner(x) && gr__owner(x)->op == &gr__op_DimShuffle) {               /* compose the two patterns */
            const gr__dimshuffle_params *q = gr__dsp(gr__owner(x));
            gr__dimshuffle_params c;
            int i, identity = p->n == gr__in(gr__owner(x))[0]->ndim;
            memset(&c, 0, sizeof c);
            c.n = p->n;
            for (i = 0; i < p->n; i++) {
                c.pattern[i] = p->pattern[i] < 0 ? GR_NEWAXIS : q->pattern[p->pattern[i]];
                if (c.pattern[i] != i) identity = 0;
            }
            if (identity) return gr__in(gr__owner(x))[0];
            return gr__rw1(rw, &gr__op_DimShuffle, &c, sizeof c, 1, gr__in(gr__owner(x)));
        }
        if (gr__rw_zeros(x, &z)) {
            gr_var *ref;
            if (!z) { *done = 0; return NULL; }
            if (!(ref = gr__rw1(rw, &gr__op_DimShuffle, params, sizeof *p, 1, &z))) return NULL;   /* (not a 0-d zero) */
            return gr__rw_zero_fill(rw, x->dtype, ref);
        }
    } else if (op == &gr__op_Dot) {
        /* a transposed matrix operand becomes a flag: BLAS reads it in place, nothing is copied */
        const gr__dot_params *p = (const gr__dot_params *)params;
        gr__dot_params q = *p;
        gr_var *args[2], *d;
        int k, changed = 0;
        args[0] = in[0]; args[1] = in[1];
        /* diag(d) op(B) scales op(B)'s rows by d, op(B) diag(d) its columns (Jacobians: the
           identity seed times an elementwise derivative): O(m n) instead of a matrix product */
        for (k = 0; k < 2; k++) {
            gr_var *other = args[1 - k], *ob, *col;
            int t_other = k == 0 ? p->tb : p->ta;
            static const int as_col[2] = { 0, GR_NEWAXIS }, as_row[2] = { GR_NEWAXIS, 0 }, swap[2] = { 1, 0 };
            gr__dimshuffle_params dp;
            if (!(d = gr__rw_diag(rw, args[k]))) continue;
            if (other->ndim == 1) {                     /* diag(d) v = v diag(d) = d * v */
                gr_var *mv[2];
                mv[0] = d; mv[1] = other;
                return gr__rw1(rw, &gr__op_ew_mul, NULL, 0, 2, mv);
            }
            memset(&dp, 0, sizeof dp);
            dp.n = 2;
            ob = other;
            if (t_other) { dp.pattern[0] = swap[0]; dp.pattern[1] = swap[1]; ob = gr__rw1(rw, &gr__op_DimShuffle, &dp, sizeof dp, 1, &other); }
            if (!ob) return NULL;
            if (d->ndim == 0) col = d;
            else {
                dp.pattern[0] = k == 0 ? as_col[0] : as_row[0];
                dp.pattern[1] = k == 0 ? as_col[1] : as_row[1];
                col = gr__rw1(rw, &gr__op_DimShuffle, &dp, sizeof dp, 1, &d);
                if (!col) return NULL;
            }
            {
                gr_var *mm[2];
                mm[0] = col; mm[1] = ob;
                return gr__rw1(rw, &gr__op_ew_mul, NULL, 0, 2, mm);
            }
        }
        for (k = 0; k < 2; k++) {
            gr_var *v = args[k];
            if (v->ndim == 2 && gr__owner(v) && gr__owner(v)->op == &gr__op_DimShuffle && gr__in(gr__owner(v))[0]->ndim == 2 &&
                gr__dsp(gr__owner(v))->pattern[0] == 1 && gr__dsp(gr__owner(v))->pattern[1] == 0) {
                args[k] = gr__in(gr__owner(v))[0];
                if (k == 0) q.ta = !q.ta; else q.tb = !q.tb;
                changed = 1;
            }
        }
        if (changed) return gr__rw1(rw, &gr__op_Dot, &q, sizeof q, 2, args);
    } else if (op == &gr__op_Batched) {
        /* ops applied row by row that need not be (Jacobians and Hessians are full of them) */
        const gr__batched_params *bp = (const gr__batched_params *)params;
        const gr_op_def *iop = bp->op;
        if ((iop == &gr__op_ReduceLike || iop == &gr__op_BroadcastLike || iop == &gr__op_ReshapeLike) && bp->batched == 1u &&
            in[0]->ndim == in[1]->ndim + 1 && in[0]->dtype == GR__BP_TYPES(bp)[0].dtype) {
            int32_t sx[GR_MAX_NDIM], sr[GR_MAX_NDIM];
            int i, same = 1;
            gr__sig_copy(rw, in[0], sx);
            gr__sig_copy(rw, in[1], sr);
            for (i = 0; i < in[1]->ndim; i++) if (sx[i + 1] != sr[i]) same = 0;
            if (same) return in[0];                     /* every row already has ref's shape */
        }
        if (iop == &gr__op_ViewUpdate && bp->batched == 2u && gr__rw_banded(in[1]) && in[0]->ndim == 1 && in[0]->dtype == in[1]->dtype &&
            gr__rw_zeros(in[0], &z) && z) {
            /* every row placed into zeros at a slice (a slice's gradient): the diagonals are, offsets up by s */
            const gr__view_params *vp = (const gr__view_params *)GR__BP_INNER(bp);
            int64_t s0 = gr__rw_unit_start(vp);
            if (vp->axis == 0 && s0 >= 0) return gr__rw_banded_map(rw, in[1], &gr__op_ViewUpdate, vp, bp->inner_psize, in[0], NULL, s0);
        }
        if (iop == &gr__op_Dot && (bp->batched == 1u || bp->batched == 2u) && GR__BP_TYPES(bp)[bp->batched == 1u ? 0 : 1].ndim == 1) {
            /* a vector operand batched into rows: one matrix product for all the rows */
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
            return gr__rw1(rw, &gr__op_Dot, &q, sizeof q, 2, args);
        }
    } else if (op == &gr__op_EyeLike && x->ndim == 1) {  /* the identity: one diagonal of ones */
        gr_var *one = gr__scalar_const(rw->cg, ((const gr__dtype_params *)params)->dtype, 1.0, 0), *ones;
        int64_t k0 = 0;
        if (!one || !(ones = gr__rw_bcast(rw, one, x))) return NULL;
        return gr__rw_make_banded(rw, x, 1, &ones, &k0);
    } else if (op == &gr__op_Slice && gr__rw_banded(x)) {
        /* columns s, s+1, ... of a banded matrix: its diagonals' elements from s on, offsets down by s */
        const gr__view_params *vp = (const gr__view_params *)params;
        int64_t s0 = gr__rw_unit_start(vp);
        if ((vp->axis == 1 || vp->axis == -1) && s0 >= 0) {
            gr__view_params cp = *vp;
            cp.axis = 0;
            return gr__rw_banded_map(rw, x, &gr__op_Slice, &cp, sizeof cp, NULL, NULL, -s0);
        }
    } else if (op == &gr__op_Reshape && gr__owner(x) && gr__owner(x)->op == &gr__op_Reshape) {
        return gr__rw1(rw, &gr__op_Reshape, params, sizeof(gr__reshape_params), 1, gr__in(gr__owner(x)));
    } else if (op == &gr__op_Cast && gr__rw_zeros(x, &z)) {
        return gr__rw_zero_fill(rw, ((const gr__cast_params *)params)->dtype, z);
    } else if (op == &gr__op_ew_neg) {
        /* handled with the elementwise rows */
    }
    *done = 0;
    return NULL;
}

/* ---- merging ------------------------------------------------------------------------------------- */

static uint32_t gr__cse_hash(const gr_op_def *op, const void *params, size_t psize, int n_in, gr_var *const *ins) {
    uint64_t h = gr__hash64((uint64_t)(uintptr_t)op ^ ((uint64_t)psize << 40));
    size_t k;
    int i;
    for (i = 0; i < n_in; i++) h = gr__hash64(h ^ (uint64_t)ins[i]->id);
    for (k = 0; k + 8 <= psize; k += 8) {             /* the parameters 8 bytes at a time */
        uint64_t w;
        memcpy(&w, (const unsigned char *)params + k, 8);
        h = gr__hash64(h ^ w) + k;
    }
    if (k < psize) {
        uint64_t w = 0;
        memcpy(&w, (const unsigned char *)params + k, psize - k);
        h = gr__hash64(h ^ w) + k;
    }
    return (uint32_t)(h ^ (h >> 32));
}
static int gr__cse_equal(const gr_node *n, const gr_op_def *op, const void *params, size_t psize, int n_in, gr_var *const *ins) {
    int i;
    if (n->op != op || n->n_in != n_in || n->params_size != psize) return 0;
    for (i = 0; i < n_in; i++) if (gr__in(n)[i] != ins[i]) return 0;
    return psize == 0 || memcmp(gr__params(n), params, psize) == 0;
}
/* Merging files each node under one of its inputs, its key: the newest (highest id), which an
   equal node reads too. The nodes filed under a variable just built sit in memory touched a moment
   ago, where a hash table of every node would cost a cache miss per probe. A key with more than
   GR__CSE_LIST nodes filed under it is "hot": they move to the hash table, and so do the later
   ones, as do the nodes without inputs. So a lookup walks at most GR__CSE_LIST nodes, or probes the
   table, and a node is filed once (a lookup list of one entry a node, not one an input). */
#ifndef GR__CSE_LIST
#define GR__CSE_LIST 16
#endif

static const gr_var *gr__cse_key(int n_in, gr_var *const *ins) {
    const gr_var *key = NULL;
    int i;
    for (i = 0; i < n_in; i++) if (!key || ins[i]->id > key->id) key = ins[i];
    return key;
}

static uint32_t gr__use_count(const gr__rewriter *rw, const gr_var *v) { return v->id < rw->cap_use_count ? rw->use_count[v->id] : 0; }

static gr_node *gr__cse_find(gr__rewriter *rw, uint32_t h, const gr_op_def *op, const void *params, size_t psize, int n_in,
                            gr_var *const *ins) {
    const gr_var *key = gr__cse_key(n_in, ins);
    uint32_t mask, i;
    if (key && gr__use_count(rw, key) <= GR__CSE_LIST) {   /* an equal node is filed under this key */
        int32_t e;
        if (gr__use_count(rw, key) == 0) return NULL;
        for (e = rw->use_head[key->id]; e >= 0; e = rw->use_next[e])
            if (gr__cse_equal(rw->use_node[e], op, params, psize, n_in, ins)) return rw->use_node[e];
        return NULL;
    }
    if (!rw->cap_cse) return NULL;
    mask = rw->cap_cse - 1;
    for (i = h & mask; rw->cse[i]; i = (i + 1) & mask)
        if (rw->cse_hash[i] == h && gr__cse_equal(rw->cse[i], op, params, psize, n_in, ins)) return rw->cse[i];
    return NULL;
}

/* enters node in the hash table */
static int gr__cse_table_add(gr__rewriter *rw, gr_node *node, uint32_t h) {
    uint32_t mask, i;
    if (rw->n_cse * 2 >= rw->cap_cse) {
        uint32_t nc = rw->cap_cse ? rw->cap_cse * 2 : 1024, k;
        gr_node **t = (gr_node **)gr__calloc(nc, sizeof(gr_node *));
        uint32_t *th = (uint32_t *)GR_MALLOC(sizeof(uint32_t) * nc);
        if (!t || !th) { GR_FREE(t); GR_FREE(th); return 0; }
        for (k = 0; k < rw->cap_cse; k++) {
            uint32_t j;
            if (!rw->cse[k]) continue;
            for (j = rw->cse_hash[k] & (nc - 1); t[j]; j = (j + 1) & (nc - 1)) {}
            t[j] = rw->cse[k];
            th[j] = rw->cse_hash[k];
        }
        GR_FREE(rw->cse);
        GR_FREE(rw->cse_hash);
        rw->cse = t;
        rw->cse_hash = th;
        rw->cap_cse = nc;
    }
    mask = rw->cap_cse - 1;
    for (i = h & mask; rw->cse[i]; i = (i + 1) & mask) {}
    rw->cse[i] = node;
    rw->cse_hash[i] = h;
    rw->n_cse++;
    return 1;
}

/* files node (h: its hash) for the lookups of later nodes */
static int gr__cse_add(gr__rewriter *rw, gr_node *node, uint32_t h) {
    const gr_var *key = gr__cse_key(node->n_in, gr__in(node));
    uint32_t count;
    if (!key) return gr__cse_table_add(rw, node, h);
    if (!gr__grow_fill((void **)&rw->use_head, &rw->cap_use_head, key->id, sizeof(int32_t), 0xFF) ||   /* -1: none */
        !gr__grow_fill((void **)&rw->use_count, &rw->cap_use_count, key->id, sizeof(uint32_t), 0))
        return 0;
    count = rw->use_count[key->id]++;
    if (count == GR__CSE_LIST) {                       /* the key turns hot: its nodes move to the table */
        int32_t e;
        for (e = rw->use_head[key->id]; e >= 0; e = rw->use_next[e]) {
            gr_node *m = rw->use_node[e];
            if (!gr__cse_table_add(rw, m, gr__cse_hash(m->op, gr__params(m), m->params_size, m->n_in, gr__in(m)))) return 0;
        }
    }
    if (count >= GR__CSE_LIST) return gr__cse_table_add(rw, node, h);
    if (!gr__grow((void **)&rw->use_node, &rw->cap_use_node, rw->n_use, sizeof(gr_node *)) ||
        !gr__grow((void **)&rw->use_next, &rw->cap_use_next, rw->n_use, sizeof(int32_t)))
        return 0;
    rw->use_node[rw->n_use] = node;
    rw->use_next[rw->n_use] = rw->use_head[key->id];
    rw->use_head[key->id] = (int32_t)rw->n_use++;
    return 1;
}

/* ---- constant folding ----------------------------------------------------------------------------- */

#define GR__FOLD_MAX 4096                        /* elements: bigger results are computed at call time */

/* runs node (all of whose inputs are constants) now; outs become constants. 0: leave it alone */
static int gr__rw_fold(gr__rewriter *rw, gr_node *node, gr_var **outs) {
    gr_graph *cg = rw->cg;
    gr_array *res[4], *shaped[4];
    const gr_array *in[8];
    gr_status saved = cg->status, st;
    int i, j, ok = 0;
    if (node->n_out > 4 || node->n_in > 8 || (gr__op_flags(node->op) & GR__OPF_GRADMOD)) return 0;
    for (i = 0; i < node->n_in; i++) in[i] = (const gr_array *)gr__ext(gr__in(node)[i]);
    for (j = 0; j < node->n_out; j++) {
        res[j] = NULL;
        shaped[j] = (gr_array *)gr__calloc(1, sizeof(gr_array));
        if (!shaped[j]) goto done;
        shaped[j]->dtype = (gr_dtype)gr__out(node)[j]->dtype;
        shaped[j]->ndim = gr__out(node)[j]->ndim;
    }
    st = node->op->shape ? node->op->shape(node, in, shaped) : gr__like0_shape(node, in, shaped);
    if (st != GR_OK) goto done;
    for (j = 0; j < node->n_out; j++) {
        int64_t size = gr__shape_size(shaped[j]->ndim, shaped[j]->shape);
        if (size < 0 || size > GR__FOLD_MAX) goto done;
        res[j] = gr_array_new(shaped[j]->dtype, shaped[j]->ndim, shaped[j]->shape);
        if (!res[j]) goto done;
    }
    if (node->op->perform(node, in, res) != GR_OK) goto done;
    for (j = 0; j < node->n_out; j++) {
        gr_var *c = res[j]->ndim == 0 ? gr__scalar_const(cg, res[j]->dtype, gr_array_get(res[j], 0), 0) : gr__constant(cg, res[j], 0);
        if (!c) goto done;
        outs[j] = c;
    }
    ok = 1;
done:
    for (j = 0; j < node->n_out; j++) { GR_FREE(shaped[j]); gr_array_free(res[j]); }
    if (!ok && saved == GR_OK && cg->status != GR_OK) gr_graph_clear_error(cg);   /* the call will report it */
    return ok;
}

/* ---- the pipeline ------------------------------------------------------------------------------------ */

/* a variable with v's shape in every call that is cheaper to have: down the producers of v while
   one of their inputs has the same signature (a value read for its shape only then needs nothing of
   what came after) */
static gr_var *gr__rw_shape_source(gr__rewriter *rw, gr_var *v) {
    int guard = 0;
    while (gr__owner(v) && guard++ < 64) {
        const gr_node *n = gr__owner(v);
        int i, found = -1;
        if (!(gr__op_flags(n->op) & GR__OPF_ELEMWISE) && n->op != &gr__op_Cast && n->op != &gr__op_BroadcastLike &&
            n->op->infer != gr__like0_infer)
            break;
        for (i = 0; i < n->n_in && found < 0; i++)
            if (gr__in(n)[i]->ndim == v->ndim && gr__sig_same(rw, gr__in(n)[i], v)) found = i;
        if (found < 0) break;
        v = gr__in(n)[found];
    }
    return v;
}

/* orig's outputs are typed as its inputs are now: a shared value whose shape changed since orig was
   built leaves it stale, and then it is rebuilt. Asked only of a node reading a shared variable:
   gr_shared_set is the one thing that changes a variable's type, and a node reading a stale node's
   output is rebuilt anyway (its input is the rebuilt one). (Batched's type rule builds its inner
   node in the node's graph: such a node is always rebuilt. A rule that fails leaves the source
   graph as it was.) */
static int gr__rw_types_current(const gr_node *orig) {
    gr_type t[4];
    int i, j;
    if (orig->n_out > 4 || (gr__op_flags(orig->op) & GR__OPF_INNERCONN)) return 0;
    memset(t, 0, sizeof t);
    if (orig->op->infer) {
        gr_status before = orig->graph->status;
        if (orig->op->infer(orig, t) != GR_OK) {
            if (before == GR_OK) gr_graph_clear_error(orig->graph);
            return 0;
        }
    } else
        for (j = 0; j < orig->n_out; j++) gr_var_type(gr__in(orig)[0], &t[j]);
    for (j = 0; j < orig->n_out; j++) {
        const gr_var *v = gr__out(orig)[j];
        if ((int)t[j].dtype != v->dtype || t[j].ndim != v->ndim) return 0;
        for (i = 0; i < v->ndim; i++) if (t[j].shape[i] != gr__vshape(v)[i]) return 0;
    }
    return 1;
}

static gr_status gr__rw_build(gr__rewriter *rw, const gr_op_def *op, const void *params, size_t psize, int n_in,
                              gr_var *const *ins_given, gr_var **outs) {
    gr_graph *cg = rw->cg;
    gr_node *node;
    gr_var *r = NULL, *ins_local[8] = { NULL };
    gr_var *const *ins = ins_given;
    const gr_node *orig = rw->orig;      /* only this call: the builds of replacements have none */
    uint32_t h;
    int i, j, done = 0, all_const = 1, shared_in = 0;
    gr_status st;
    rw->orig = NULL;
    if ((st = gr__inputs_present(cg, op->name, n_in, ins_given)) != GR_OK) return st;   /* a replacement's builder failed */
    if ((gr__op_flags(op) & GR__OPF_SHAPEREF) && op->connection_pattern && n_in <= 8 && op->n_out == 1) {
        /* inputs read for their shape only: the cheapest variable of the same shape */
        for (i = 0; i < n_in; i++)
            ins_local[i] = op->connection_pattern[i] ? ins_given[i] : gr__rw_shape_source(rw, ins_given[i]);
        ins = ins_local;
    }
    if (op->n_out == 1 && !(gr__op_flags(op) & GR__OPF_GRADMOD)) {
        r = (gr__op_flags(op) & GR__OPF_ELEMWISE) ? gr__rw_simplify_ew(rw, gr__op_code(op), ins, &done) : gr__rw_simplify_struct(rw, op, params, ins, &done);
        if (done) {
            if (!r) return cg->status != GR_OK ? cg->status : GR_ERR_NOMEM;
            outs[0] = r;
            return GR_OK;
        }
    }
    h = gr__cse_hash(op, params, psize, n_in, ins);
    node = gr__cse_find(rw, h, op, params, psize, n_in, ins);
    if (node) {
        for (j = 0; j < node->n_out; j++) outs[j] = gr__out(node)[j];
        return GR_OK;
    }
    for (i = 0; i < n_in; i++) {
        if (ins[i]->kind != GR__VK_CONST) all_const = 0;
        if (ins[i]->kind == GR__VK_SHARED) shared_in = 1;
    }
    /* the source node itself when nothing changed (same inputs, not foldable): no copy is made, and
       the function's graph reads the source graph's node until gr__fn_compact (src/function.c) */
    for (i = 0; orig && i < n_in && gr__in(orig)[i] == ins[i]; i++) {}
    if (orig && i == n_in && orig->op == op && orig->n_in == n_in && !(all_const && n_in > 0) &&
        !(gr__op_flags(orig->op) & GR__OPF_INNERCONN) && (!shared_in || gr__rw_types_current(orig))) {
        node = (gr_node *)orig;
        for (j = 0; j < node->n_out; j++) { outs[j] = gr__out(node)[j]; gr__sig(rw, gr__out(node)[j]); }
        if (!gr__cse_add(rw, node, h)) return gr__error(cg, GR_ERR_NOMEM, "out of memory (rewriting)");
        return GR_OK;
    }
    st = gr__make_node_n(cg, op, params, psize, n_in, ins, orig ? orig->n_out : op->n_out, outs);
    if (st != GR_OK) return st;
    node = gr__owner(outs[0]);
    for (j = 0; j < node->n_out; j++) gr__sig(rw, gr__out(node)[j]);     /* now, while the inputs' are known */
    if (all_const && n_in > 0 && gr__rw_fold(rw, node, outs)) return GR_OK;
    if (!gr__cse_add(rw, node, h)) return gr__error(cg, GR_ERR_NOMEM, "out of memory (rewriting)");
    return GR_OK;
}

/* builds node's counterpart from the copied inputs ins; outs receives its outputs */
static gr_status gr__rewrite_node(gr__rewriter *rw, const gr_node *node, gr_var **ins, gr_var **outs) {
    gr_status st;
    int j;
    if (gr__op_flags(node->op) & GR__OPF_GRADMOD) {
        outs[0] = ins[0];
        return GR_OK;
    }
    if (rw->level == GR_OPT_NONE) st = gr__make_node_n(rw->cg, node->op, gr__params(node), node->params_size, node->n_in, ins, node->n_out, outs);
    else {
        rw->orig = node;
        st = gr__rw_build(rw, node->op, gr__params(node), node->params_size, node->n_in, ins, outs);
        rw->orig = NULL;
    }
    if (st != GR_OK) return st;
    for (j = 0; j < node->n_out; j++)           /* (the source graph's variables are never written) */
        if (gr__vname(gr__out(node)[j]) && !gr__vname(outs[j]) && gr__owner(outs[j]) && outs[j]->graph == rw->cg &&
            !gr__set_name(rw->cg, outs[j], gr__vname(gr__out(node)[j])))
            return rw->cg->status;
    return GR_OK;
}
