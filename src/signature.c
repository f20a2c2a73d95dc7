/* src/signature.c: shape signatures (src/rewrite.h): one code per axis, a static size or a symbol
   for a size unknown until the call; equal symbols, equal sizes in every call. An elementwise
   result keeps an axis's symbol where its operands agree on it; a structural node's output 0 gets
   what its row's `sig` rule (ops/table.h) says; anything else fresh symbols. */

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

/* the symbol of an axis of symbol `sym` with k rows trimmed off (x[a:-b] trims a + b): the same
   for every slice that trims as many, so x[:-1] and x[1:] have the same length */
static GR__UNUSED int32_t gr__sig_trimmed(gr__rewriter *rw, int32_t sym, int64_t k) {
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

/* the elementwise rule: an axis keeps the symbol its operands agree on (broadcast ones aside) */
static void gr__ew_sig(gr__rewriter *rw, const gr_node *node, const gr_var *v, int32_t *out) {
    int nd = v->ndim, i, k;
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
}

/* the signature of v (a node's output) from its inputs' (already known) signatures */
static void gr__sig_compute(gr__rewriter *rw, const gr_var *v, int32_t *out) {
    const gr_node *node = gr__owner(v);
    const gr__row_rules *rules;
    int i;
    for (i = 0; i < v->ndim; i++) out[i] = gr__fresh_code(rw, v, i);     /* the default: nothing known */
    if (!node || v->out_index != 0) return;
    if (gr__flags_of(node->op) & GR__OPF_ELEMWISE) gr__ew_sig(rw, node, v, out);
    else if ((rules = gr__rules_of(node->op)) != NULL) rules->sig(rw, node, out);
    for (i = 0; i < v->ndim; i++)                   /* what the static type knows wins */
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
    if (gr__owner(v) && v->out_index == 0)          /* (outputs after the first get fresh symbols anyway: not
                                                       a look at every input for each of a split's n outputs) */
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

/* ---- the shared rules ------------------------------------------------------------------------------ */

/* none: nothing known, every axis a fresh symbol */
static void gr__none_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) { (void)rw; (void)node; (void)out; }

/* like0: output 0 is shaped like input 0 (the like0 type rule, Cast, the updates) */
static void gr__like0_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    if (gr__in(node)[0]->ndim == gr__out(node)[0]->ndim) gr__sig_copy(rw, gr__in(node)[0], out);
}
