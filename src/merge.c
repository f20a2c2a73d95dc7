/* src/merge.c: merging and constant folding, the last steps of building a node through the
   rewrites (src/rewrite.c): a node equal to one already built (op, params, inputs) is that one; a
   small node of constants is run now and becomes a constant. */

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
    gr_array *res[5], *shaped[4];
    const gr_array *in[8];
    gr_status saved = cg->status, st;
    int i, j, ok = 0;
    if (node->n_out > 4 || node->n_in > 8 || (gr__flags_of(node->op) & GR__OPF_GRADMOD)) return 0;
    for (i = 0; i < node->n_in; i++) in[i] = (const gr_array *)gr__ext(gr__in(node)[i]);
    res[node->n_out] = NULL;                     /* then the work memory (GR_SCRATCH_OPS) */
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
    {
        int64_t words = (int64_t)((gr__scratch_bytes(node, in, (const gr_array *const *)res) + sizeof(double) - 1) / sizeof(double));
        if (!(res[node->n_out] = gr_array_new(GR_F64, 1, &words))) goto done;
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
    gr_array_free(res[node->n_out]);
    if (!ok && saved == GR_OK && cg->status != GR_OK) gr_graph_clear_error(cg);   /* the call will report it */
    return ok;
}
