/* src/fuse.c: elementwise fusion (at GR_OPT_FULL, after the rewrites).

   Connected elementwise nodes (and casts) whose outputs have the same shape signature (see
   src/rewrite.c: the same size along every axis in every call) become one Fused node: a program
   of the table's kernels run over the data block by block, so a chain of elementwise ops is one
   pass with no full-size temporaries. Members read their operands from the group's external
   inputs (broadcast, as the ops would), 0-d constants (immediates), block-sized registers, or
   the group's outputs; a value used outside the group, or returned, is an output.

   Groups grow in topological order: a node joins an open group of its signature when each of its
   inputs is a member, a leaf, or computed before the group's first member. Nothing computed
   after the group started can then feed it, so no cycle can appear, and a group may have any
   number of outputs. A chain of a million scalar links is one node. */

typedef struct gr__fop {                 /* one instruction (24 bytes: a chain of a million links has millions) */
    int32_t arg[3];                      /* operand references */
    int32_t out, out2;                   /* the references written (out2: sincos's cosine) */
    uint8_t n_args, dtype, odtype, row;  /* row: the table's row (its kernel for dtype), or one of GR__FOP_* */
} gr__fop;

enum { GR__FOP_SINCOS = 253, GR__FOP_COPY = 254, GR__FOP_CAST = 255 };
typedef char gr__fop_rows_fit[(int)GR__EW_COUNT < (int)GR__FOP_SINCOS ? 1 : -1];   /* the table's rows stay below them */

/* sin and cos of one operand in one loop, which compilers turn into one sincos call, as they do for
   a hand-fused loop */
static void gr__sincos_run(int dt, void *s, void *c, const void *a, int64_t sa, int64_t n) {
    int64_t i;
    if (dt == GR_F64) {
        const double *x = (const double *)a;
        double *ps = (double *)s, *pc = (double *)c;
        for (i = 0; i < n; i++) { double v = x[i * sa]; ps[i] = sin(v); pc[i] = cos(v); }
    } else {
        const float *x = (const float *)a;
        float *ps = (float *)s, *pc = (float *)c;
        for (i = 0; i < n; i++) { float v = x[i * sa]; ps[i] = sinf(v); pc[i] = cosf(v); }
    }
}

/* operand references: [0, n_ext) external inputs, then n_imm immediates, then n_out outputs,
   then n_reg registers of blk elements each */
typedef struct gr__fprog {
    int32_t n_ext, n_imm, n_out, n_reg, n_ops, n_refs;
    int64_t blk;
    gr__fop *ops;
    double *imm;                         /* an immediate's value, stored in its dtype's bytes */
    unsigned char *regs;
    const void **ptr;                    /* per reference, set block by block */
    int64_t *st;                         /* per reference: 0 (broadcast) or 1 */
    int64_t *ext_st;                     /* scratch: n_ext x GR_MAX_NDIM element strides */
    int64_t *ext_off;                    /* scratch: n_ext offsets */
    gr_type *out_types;
} gr__fprog;

typedef struct gr__fused_params { gr__fprog *prog; } gr__fused_params;

static const gr__fprog *gr__fp(const gr_node *node) { return ((const gr__fused_params *)gr__params(node))->prog; }

static gr_status gr__Fused_infer(const gr_node *node, gr_type *out) {
    const gr__fprog *p = gr__fp(node);
    int j;
    for (j = 0; j < node->n_out; j++) out[j] = p->out_types[j];
    return GR_OK;
}

/* the shapes do not broadcast: replay the program's shapes to name the member op that fails */
static gr_status gr__Fused_shape_error(const gr_node *node, const gr_array *const *in) {
    const gr__fprog *p = gr__fp(node);
    gr_array *shapes = (gr_array *)gr__calloc((size_t)p->n_refs + 1, sizeof(gr_array));
    int k, a, e;
    if (!shapes) return gr_node_error(node, GR_ERR_SHAPE, "shapes do not broadcast");
    for (e = 0; e < p->n_ext; e++) shapes[e] = *in[e];
    for (k = 0; k < p->n_ops; k++) {
        const gr__fop *op = &p->ops[k];
        gr_array r;
        memset(&r, 0, sizeof r);
        for (a = 0; a < op->n_args; a++) {
            const gr_array *x = &shapes[op->arg[a]];
            int off, i;
            if (x->ndim > r.ndim) {             /* right-align what we have against x */
                int grow = x->ndim - r.ndim;
                for (i = r.ndim - 1; i >= 0; i--) r.shape[i + grow] = r.shape[i];
                for (i = 0; i < grow; i++) r.shape[i] = 1;
                r.ndim = x->ndim;
            }
            off = r.ndim - x->ndim;
            for (i = 0; i < x->ndim; i++) {
                int64_t have = r.shape[off + i], want = x->shape[i];
                if (have == 1) r.shape[off + i] = want;
                else if (want != 1 && want != have) {
                    char b1[200], b2[200];
                    const char *opname = op->row == GR__FOP_CAST ? "Cast" : op->row == GR__FOP_COPY ? "BroadcastLike" :
                                         op->row == GR__FOP_SINCOS ? "sin" : gr__ew_ops[op->row]->name;
                    gr_status st;
                    gr__shape_str(b1, sizeof b1, x->ndim, x->shape);
                    gr__shape_str(b2, sizeof b2, r.ndim, r.shape);
                    if (op->arg[a] < p->n_ext)
                        st = gr__error(node->graph, GR_ERR_SHAPE, "%s: shapes do not broadcast: %s of %s against %s", opname, b1,
                                       gr__d(gr__in(node)[op->arg[a]]).s, b2);
                    else
                        st = gr__error(node->graph, GR_ERR_SHAPE, "%s: shapes do not broadcast: %s against %s", opname, b1, b2);
                    GR_FREE(shapes);
                    return st;
                }
            }
        }
        shapes[op->out] = r;
        if (op->row == GR__FOP_SINCOS) shapes[op->out2] = r;
    }
    GR_FREE(shapes);
    return gr_node_error(node, GR_ERR_SHAPE, "shapes do not broadcast");
}

static gr_status gr__Fused_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    gr_array it;
    int j, d;
    memset(&it, 0, sizeof it);
    it.ndim = out[0]->ndim;
    if (node->n_in > 0) {
        gr_status before = node->graph->status;
        if (gr__broadcast_shapes(node, node->n_in, in, &it) != GR_OK) {
            if (before == GR_OK) gr_graph_clear_error(node->graph);
            return gr__Fused_shape_error(node, in);
        }
    } else
        for (d = 0; d < it.ndim; d++) it.shape[d] = 1;
    for (j = 0; j < node->n_out; j++)
        for (d = 0; d < out[j]->ndim; d++) out[j]->shape[d] = it.shape[d];
    return GR_OK;
}

/* n elements from src (element stride sst, 0 or 1) converted into dst */
static void gr__convert_run(int dt, void *dst, int st, const void *src, int64_t sst, int64_t n) {
    int64_t i;
    if (sst == 1 || n <= 1) { gr__convert(dt, dst, st, src, n); return; }
    gr__convert(dt, dst, st, src, 1);                  /* one value, then filled */
    switch (dt) {
    case GR_F64: { double v = *(double *)dst; for (i = 1; i < n; i++) ((double *)dst)[i] = v; break; }
    case GR_F32: { float v = *(float *)dst; for (i = 1; i < n; i++) ((float *)dst)[i] = v; break; }
    case GR_I64: { int64_t v = *(int64_t *)dst; for (i = 1; i < n; i++) ((int64_t *)dst)[i] = v; break; }
    default: memset((char *)dst + 1, *(unsigned char *)dst, (size_t)(n - 1)); break;
    }
}

static gr_status gr__Fused_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    gr__fprog *p = (gr__fprog *)gr__fp(node);
    const gr_array *o0 = out[0];
    int64_t shape[GR_MAX_NDIM], idx[GR_MAX_NDIM], inner, rows, r, j0, e;
    int nd = 0, d, k, m;
    if (o0->size == 0) return GR_OK;
    /* element strides of every external input over the output's shape (0 where broadcast), with
       axes of size 1 dropped and neighbours merged where every operand is contiguous across them */
    for (d = 0; d < o0->ndim; d++) {
        int merge;
        if (o0->shape[d] == 1) continue;
        merge = nd > 0;
        for (e = 0; e < p->n_ext; e++) {
            const gr_array *a = in[e];
            int ad = d - (o0->ndim - a->ndim);
            int64_t s = 0, q;
            if (ad >= 0 && a->shape[ad] != 1) {
                s = 1;
                for (q = ad + 1; q < a->ndim; q++) s *= a->shape[q];
            }
            if (merge && p->ext_st[e * GR_MAX_NDIM + nd - 1] != s * o0->shape[d]) merge = 0;
            p->ext_off[e] = s;                       /* this axis's stride, for now */
        }
        if (merge) {
            shape[nd - 1] *= o0->shape[d];
            for (e = 0; e < p->n_ext; e++) p->ext_st[e * GR_MAX_NDIM + nd - 1] = p->ext_off[e];
        } else {
            shape[nd] = o0->shape[d];
            for (e = 0; e < p->n_ext; e++) p->ext_st[e * GR_MAX_NDIM + nd] = p->ext_off[e];
            nd++;
        }
    }
    inner = nd ? shape[nd - 1] : 1;
    rows = o0->size / inner;
    for (d = 0; d < nd; d++) idx[d] = 0;
    for (e = 0; e < p->n_ext; e++) p->st[e] = nd && p->ext_st[e * GR_MAX_NDIM + nd - 1] ? 1 : 0;
    for (r = 0; r < rows; r++) {
        for (e = 0; e < p->n_ext; e++) {           /* where this row starts in every input */
            int64_t off = 0;
            for (d = 0; d < nd - 1; d++) off += idx[d] * p->ext_st[e * GR_MAX_NDIM + d];
            p->ext_off[e] = off;
        }
        for (j0 = 0; j0 < inner; j0 += p->blk) {
            int64_t n = inner - j0 < p->blk ? inner - j0 : p->blk;
            for (e = 0; e < p->n_ext; e++)
                p->ptr[e] = (const char *)in[e]->data + (size_t)(p->ext_off[e] + j0 * p->st[e]) * gr__dsize(in[e]->dtype);
            for (m = 0; m < p->n_out; m++)
                p->ptr[p->n_ext + p->n_imm + m] = (char *)out[m]->data + (size_t)(r * inner + j0) * gr__dsize(out[m]->dtype);
            for (k = 0; k < p->n_ops; k++) {
                const gr__fop *op = &p->ops[k];
                if (op->row < GR__EW_COUNT) {
                    const void *args[3];
                    int64_t sts[3];
                    int a;
                    for (a = 0; a < op->n_args; a++) { args[a] = p->ptr[op->arg[a]]; sts[a] = p->st[op->arg[a]]; }
                    gr__ew_kernels[op->row][op->dtype](n, (void *)p->ptr[op->out], args, sts);
                } else if (op->row == GR__FOP_SINCOS)
                    gr__sincos_run(op->dtype, (void *)p->ptr[op->out], (void *)p->ptr[op->out2], p->ptr[op->arg[0]], p->st[op->arg[0]], n);
                else
                    gr__convert_run(op->odtype, (void *)p->ptr[op->out], op->dtype, p->ptr[op->arg[0]], p->st[op->arg[0]], n);
            }
        }
        for (d = nd - 2; d >= 0; d--) { if (++idx[d] < shape[d]) break; idx[d] = 0; }
    }
    return GR_OK;
}

static gr_status gr__Fused_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { (void)og; (void)ig; return gr__compiled_only(node); }
static gr_status gr__Fused_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) { (void)ev; (void)orop; return gr__compiled_only(node); }

/* A program's memory: blocks the private graph owns, not its arena, so that gr__fn_compact can
   hand them over with their Fused node. One block holds n parts of the given sizes; at[i] is where
   part i starts (every part 16-byte aligned). */
static void *gr__fprog_block(gr_graph *cg, int n, const size_t *size, size_t *at) {
    size_t total = 0;
    void *block;
    int i;
    for (i = 0; i < n; i++) { at[i] = total; total += (size[i] + 15u) & ~(size_t)15u; }
    block = GR_MALLOC(total ? total : 1);
    if (!block) { gr__error(cg, GR_ERR_NOMEM, "out of memory (fusion)"); return NULL; }
    return gr__own(cg, block) ? block : NULL;
}

/* ---- grouping ------------------------------------------------------------------------------------ */

/* casts and broadcasts become copies (a broadcast's reference is an input read for its shape) */
static int gr__fusable(const gr_node *node) {
    if (node->n_out != 1) return 0;
    if (gr__op_flags(node->op) & GR__OPF_ELEMWISE) return gr__ew_kernels[gr__op_code(node->op)][gr__in(node)[node->n_in - 1]->dtype] != NULL;
    return node->op == &gr__op_Cast || node->op == &gr__op_BroadcastLike;
}

/* the node of id `id` among the function's: its private graph's, or the source graph's it reuses */
#define GR__NODE(id) ((id) < cg->node_base ? rw->g->nodes[id] : cg->nodes[(id) - cg->node_base])
/* x, or the Fused output that replaces it */
static gr_var *gr__fuse_in(gr_graph *cg, const uint32_t *repl, uint32_t nv, gr_var *x) {
    return x->id < nv && repl[x->id] ? cg->vars[repl[x->id] - 1 - cg->var_base] : x;
}
#define GR__FIN(node, i) (n_fused ? gr__fuse_in(cg, repl, nv, gr__in((node))[i]) : gr__in((node))[i])   /* (none before the first) */

/* The nodes the roots need (not above a variable v with given[v->id]), as their positions in the
   order the copy made them (rw->view: a topological order of the function's nodes, the reused
   source nodes among them): one sweep back down the list marks what is needed, reading a node only
   when it is. */
static gr_status gr__fuse_needed(gr__rewriter *rw, int n_roots, gr_var *const *roots, const uint8_t *given, uint32_t nn,
                                 uint32_t **out, uint32_t *n_out) {
    gr_graph *cg = rw->cg;
    uint8_t *need = (uint8_t *)gr__calloc(nn + 1u, 1);
    uint32_t *order;
    uint32_t k, n = 0;
    int r;
    *out = NULL;
    *n_out = 0;
    if (!need) return gr__error(cg, GR_ERR_NOMEM, "out of memory (fusion)");
    for (r = 0; r < n_roots; r++)
        if (gr__owner(roots[r]) && !given[roots[r]->id]) need[gr__owner(roots[r])->id] = 1;
    for (k = rw->n_view; k-- > 0;) {
        gr_node *node;
        int i;
        if (!need[rw->view[k]]) continue;
        n++;
        node = GR__NODE(rw->view[k]);
        for (i = 0; i < node->n_in; i++)
            if (gr__owner(gr__in(node)[i]) && !given[gr__in(node)[i]->id]) need[gr__owner(gr__in(node)[i])->id] = 1;
    }
    order = (uint32_t *)GR_MALLOC(sizeof(uint32_t) * (n + 1u));
    if (!order) { GR_FREE(need); return gr__error(cg, GR_ERR_NOMEM, "out of memory (fusion)"); }
    for (n = 0, k = 0; k < rw->n_view; k++) if (need[rw->view[k]]) { order[n++] = k; need[rw->view[k]] = 0; }
    GR_FREE(need);
    *out = order;
    *n_out = n;
    return GR_OK;
}

#define GR__FUSE_OPEN 8                  /* groups kept open at once */
enum {                                   /* fusion's flags of a variable */
    GR__FV_OUT = 1,                      /* read outside the group making it (or a root) */
    GR__FV_ALIASED = 2,                  /* a broadcast read in place: its register is its source's */
    GR__FV_MINE = 4                      /* made by the group being fused */
};
#define GR__FUSE_BLK 256                 /* elements per block */

/* Fuses the elementwise nodes of the schedule of roots (the function's outputs and update
   values, patched when they are group outputs) in cg. */
static gr_status gr__fuse(gr__rewriter *rw, gr_graph *cg, int n_roots, gr_var **roots, const uint8_t *given) {
    uint32_t *order = NULL;              /* the needed nodes' positions in rw->view */
    uint32_t n_order = 0, k, nn = cg->node_base + cg->n_nodes, nv = cg->var_base + cg->n_vars;   /* id bounds */
    int32_t *group = NULL, *pos = NULL, *ref = NULL, *gstart = NULL, *gmem_at = NULL;
    uint32_t cap_gstart = 0;             /* gstart: each group's first position in the schedule */
    uint32_t *last = NULL;               /* by variable id: 1 + the schedule position of its last reader, 0 none */
    uint32_t *gmem = NULL;               /* each group's members (node ids) in schedule order, group after group */
    uint32_t *repl = NULL;               /* by variable id: 1 + the id of the Fused output that replaces it, 0 none */
    uint32_t *oid = NULL;                /* the schedule, as node ids: the passes below read ids without touching the nodes */
    uint8_t *vflag = NULL;               /* by variable id: GR__FV_* */
    uint8_t *paired = NULL;
    uint32_t n_fused = 0;                /* Fused nodes made so far */
    uint32_t *cos_of = NULL;             /* by variable id: 1 + the id of the member computing its cosine, 0 none */
    int32_t open[GR__FUSE_OPEN], n_open = 0, n_groups = 0, g, last_big = -1;   /* last_big: the last group fused */
    gr_status st = GR_OK;
    if ((st = gr__fuse_needed(rw, n_roots, roots, given, nn, &order, &n_order)) != GR_OK) return st;
    group = (int32_t *)GR_MALLOC(sizeof(int32_t) * (nn + 1u));
    pos = (int32_t *)GR_MALLOC(sizeof(int32_t) * (nn + 1u));
    if (!group || !pos) { st = gr__error(cg, GR_ERR_NOMEM, "out of memory (fusion)"); goto done; }
    {   /* nodes by depth (the longest path from the leaves, which the copy noted in rw->view_depth),
           a topological order too: a node comes as early as it can, so a view of an input precedes
           every group that reads it */
        uint32_t max_depth = 0, *count = NULL;
        oid = (uint32_t *)GR_MALLOC(sizeof(uint32_t) * (n_order + 1u));
        if (!oid) { st = gr__error(cg, GR_ERR_NOMEM, "out of memory (fusion)"); goto done; }
        for (k = 0; k < n_order; k++) if (rw->view_depth[order[k]] > max_depth) max_depth = rw->view_depth[order[k]];
        count = (uint32_t *)gr__calloc((size_t)max_depth + 2, sizeof(uint32_t));
        if (!count) { st = gr__error(cg, GR_ERR_NOMEM, "out of memory (fusion)"); goto done; }
        for (k = 0; k < n_order; k++) count[rw->view_depth[order[k]] + 1]++;
        for (k = 1; k <= max_depth + 1; k++) count[k] += count[k - 1];
        for (k = 0; k < n_order; k++) oid[count[rw->view_depth[order[k]]]++] = rw->view[order[k]];
        GR_FREE(count);
        GR_FREE(order);                             /* from here on the schedule is oid */
        order = NULL;
    }
    for (k = 0; k < nn; k++) { group[k] = -1; pos[k] = -1; }
    for (k = 0; k < n_order; k++) pos[oid[k]] = (int32_t)k;
    /* (the Fused nodes' outputs, made below, are at most one per scheduled node) */
    vflag = (uint8_t *)gr__calloc(nv + n_order + 1u, 1);
    last = (uint32_t *)gr__calloc(nv + 1u, sizeof(uint32_t));
    if (!vflag || !last) { st = gr__error(cg, GR_ERR_NOMEM, "out of memory (fusion)"); goto done; }
    /* 1. groups; in the same pass, which values leave the group that makes them, and the last
       reader of each value */
    for (k = 0; k < n_order; k++) {
        gr_node *node = GR__NODE(oid[k]);
        int o, i, joined = -1;
        if (!gr__fusable(node)) goto readers;
        for (o = n_open - 1; o >= 0 && joined < 0; o--) {
            gr_node *first = GR__NODE(oid[gstart[open[o]]]);
            int ok = gr__sig_same(rw, gr__out(node)[0], gr__out(first)[0]);
            for (i = 0; ok && i < node->n_in; i++) {
                gr_node *w = gr__owner(gr__in(node)[i]);
                if (w && group[w->id] != open[o] && pos[w->id] >= gstart[open[o]]) ok = 0;
            }   /* (no Fused node exists yet: every id is below nn) */
            if (ok) joined = open[o];
        }
        if (joined < 0) {
            if (!gr__grow((void **)&gstart, &cap_gstart, (uint32_t)n_groups, sizeof(int32_t))) {
                st = gr__error(cg, GR_ERR_NOMEM, "out of memory (fusion)");
                goto done;
            }
            joined = n_groups++;
            gstart[joined] = (int32_t)k;
            if (n_open == GR__FUSE_OPEN) { memmove(open, open + 1, sizeof(int32_t) * (GR__FUSE_OPEN - 1)); n_open--; }
            open[n_open++] = joined;
        }
        group[node->id] = joined;
    readers:
        for (i = 0; i < node->n_in; i++) {
            gr_node *w = gr__owner(gr__in(node)[i]);
            if (w && group[w->id] >= 0 && group[w->id] != joined) vflag[gr__in(node)[i]->id] |= GR__FV_OUT;   /* ids < nn here */
            last[gr__in(node)[i]->id] = k + 1;
        }
    }
    if (n_groups == 0) goto done;
    gmem_at = (int32_t *)gr__calloc((size_t)n_groups + 1, sizeof(int32_t));
    gmem = (uint32_t *)GR_MALLOC(sizeof(uint32_t) * (n_order + 1u));
    repl = (uint32_t *)gr__calloc(nv + 1u, sizeof(uint32_t));
    if (!gmem_at || !gmem || !repl) { st = gr__error(cg, GR_ERR_NOMEM, "out of memory (fusion)"); goto done; }
    for (k = 0; k < n_order; k++) if (group[oid[k]] >= 0) gmem_at[group[oid[k]] + 1]++;
    for (g = 0; g < n_groups; g++) gmem_at[g + 1] += gmem_at[g];
    {
        int32_t *fill = gstart;                     /* gstart is not needed any more: a cursor per group */
        for (g = 0; g < n_groups; g++) fill[g] = gmem_at[g];
        for (k = 0; k < n_order; k++) if (group[oid[k]] >= 0) gmem[fill[group[oid[k]]]++] = oid[k];
    }
    GR_FREE(group); GR_FREE(oid); GR_FREE(gstart);  /* not read below: room for the programs */
    group = gstart = NULL;
    oid = NULL;
    /* 2. the values the roots read leave their groups too */
    ref = (int32_t *)GR_MALLOC(sizeof(int32_t) * (nv + n_order + 1u));
    cos_of = (uint32_t *)gr__calloc(nv + n_order + 1u, sizeof(uint32_t));
    paired = (uint8_t *)gr__calloc(nn + 1u, 1);
    if (!ref || !cos_of || !paired) { st = gr__error(cg, GR_ERR_NOMEM, "out of memory (fusion)"); goto done; }
    for (k = 0; k < nv + n_order + 1u; k++) ref[k] = -1;
    for (g = 0; g < n_groups; g++) if (gmem_at[g + 1] - gmem_at[g] >= 2) last_big = g;
    for (k = 0; k < (uint32_t)n_roots; k++) vflag[roots[k]->id] |= GR__FV_OUT;
    /* 3. one Fused node per group of two or more */
    for (g = 0; g < n_groups; g++) {
        gr__fprog *p = NULL;
        gr__fused_params fp;
        gr_var **ext = NULL, **tmp = NULL, **outs_old = NULL, **outs_new = NULL;
        int32_t *free_regs = NULL, n_free = 0, n_members = 0, n_ext = 0, n_imm = 0, n_out = 0, n_reg = 0, op_i = 0;
        uint32_t cap_ext = 0, cap_out = 0, cap_free = 0;   /* grown as used: a group of millions has a few externals */
        const uint32_t *mem = gmem + gmem_at[g];
        int32_t mi;
        uint32_t q;
        int i;
        n_members = gmem_at[g + 1] - gmem_at[g];
        if (n_members < 2) continue;
        /* operands: externals (and immediates) in first-use order; outputs; in the same pass, inputs
           made by groups fused before now read their Fused outputs, and sin(a) and cos(a) of one
           operand pair up (cos_of[a] is the member computing cos(a)) */
        for (mi = 0; mi < n_members; mi++) {
            gr_node *node = GR__NODE(mem[mi]);
            for (i = 0; i < node->n_in; i++) {
                gr_var *x = GR__FIN(node, i);
                if ((vflag[x->id] & GR__FV_MINE) || ref[x->id] != -1) continue;
                ref[x->id] = -2 - (x->kind == GR__VK_CONST && x->ndim == 0);  /* -2 external, -3 immediate */
                if (!gr__grow((void **)&ext, &cap_ext, (uint32_t)n_ext, sizeof(gr_var *))) { st = GR_ERR_NOMEM; goto group_done; }
                ext[n_ext++] = x;
            }
            if (vflag[gr__out(node)[0]->id] & GR__FV_OUT) {
                if (!gr__grow((void **)&outs_old, &cap_out, (uint32_t)n_out, sizeof(gr_var *))) { st = GR_ERR_NOMEM; goto group_done; }
                outs_old[n_out++] = gr__out(node)[0];
            }
            vflag[gr__out(node)[0]->id] |= GR__FV_MINE;
            if (node->op == &gr__op_ew_cos && gr__is_float(GR__FIN(node, 0)->dtype)) cos_of[GR__FIN(node, 0)->id] = node->id + 1;
        }
        tmp = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(n_ext + 1));
        outs_new = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(n_out + 1));
        if (!tmp || !outs_new) { st = GR_ERR_NOMEM; goto group_done; }
        {   /* externals first, then immediates */
            int32_t e = 0, m = 0;
            for (i = 0; i < n_ext; i++) if (ref[ext[i]->id] == -2) tmp[e++] = ext[i];
            n_imm = n_ext - e;
            for (i = 0; i < n_ext; i++) if (ref[ext[i]->id] == -3) tmp[e + m++] = ext[i];
            for (i = 0; i < n_ext; i++) { ext[i] = tmp[i]; ref[ext[i]->id] = i; }
            n_ext = e;
        }
        {   /* the program and its instructions: one block (see gr__fprog_block) */
            size_t at[4], size[4];
            unsigned char *b;
            size[0] = sizeof(gr__fprog);
            size[1] = sizeof(gr__fop) * (size_t)n_members;
            size[2] = sizeof(double) * (size_t)(n_imm + 1);
            size[3] = sizeof(gr_type) * (size_t)(n_out + 1);
            b = (unsigned char *)gr__fprog_block(cg, 4, size, at);
            if (!b) { st = GR_ERR_NOMEM; goto group_done; }
            p = (gr__fprog *)b;
            memset(p, 0, sizeof *p);
            p->ops = (gr__fop *)(b + at[1]);
            p->imm = (double *)(b + at[2]);
            p->out_types = (gr_type *)(b + at[3]);
        }
        p->n_ext = n_ext;
        p->n_imm = n_imm;
        p->n_out = n_out;
        p->blk = gr__out(GR__NODE(mem[0]))[0]->ndim == 0 ? 1 : GR__FUSE_BLK;
        for (i = 0; i < n_out; i++) ref[outs_old[i]->id] = n_ext + n_imm + i;
        for (i = 0; i < n_imm; i++) memcpy(&p->imm[i], ((const gr_array *)gr__ext(ext[n_ext + i]))->data, gr__dsize(ext[n_ext + i]->dtype));
        for (i = 0; i < n_out; i++) gr_var_type(outs_old[i], &p->out_types[i]);
        /* the program, with registers reused after their last reader */
        for (mi = 0; mi < n_members; mi++) {
            gr_node *node = GR__NODE(mem[mi]);
            gr__fop *op;
            gr_var *y = gr__out(node)[0];
            q = (uint32_t)pos[node->id];
            if (node->op == &gr__op_ew_cos) {
                if (paired[node->id]) goto free_inputs;    /* computed with its sin */
                cos_of[GR__FIN(node, 0)->id] = 0;               /* computed here: a later sin stays alone */
            }
            if (node->op == &gr__op_BroadcastLike && !(vflag[y->id] & GR__FV_OUT) && ref[y->id] < 0) {
                /* a broadcast read only inside the group: its readers read the source itself, with the
                   source's (broadcast) stride; the source stays live as long as they read it */
                gr_var *x = GR__FIN(node, 0);
                ref[y->id] = ref[x->id];
                vflag[y->id] |= GR__FV_ALIASED;           /* its register is x's, freed through x */
                if ((vflag[x->id] & GR__FV_MINE) && last[y->id] > last[x->id]) last[x->id] = last[y->id];
                continue;
            }
            op = &p->ops[op_i++];
            op->out2 = -1;
            if (node->op == &gr__op_ew_sin && cos_of[GR__FIN(node, 0)->id] && cos_of[GR__FIN(node, 0)->id] != node->id + 1) {
                gr_node *c = GR__NODE(cos_of[GR__FIN(node, 0)->id] - 1);
                gr_var *yc = gr__out(c)[0];
                paired[c->id] = 1;
                op->n_args = 1;
                op->dtype = op->odtype = (uint8_t)y->dtype;
                op->row = GR__FOP_SINCOS;
                op->arg[0] = ref[GR__FIN(node, 0)->id];
                if (ref[y->id] < 0) ref[y->id] = n_free ? free_regs[--n_free] : n_ext + n_imm + n_out + n_reg++;
                if (ref[yc->id] < 0) ref[yc->id] = n_free ? free_regs[--n_free] : n_ext + n_imm + n_out + n_reg++;
                op->out = ref[y->id];
                op->out2 = ref[yc->id];
                goto free_inputs;
            }
            if (gr__op_flags(node->op) & GR__OPF_ELEMWISE) {
                op->n_args = (uint8_t)node->n_in;
                op->dtype = (uint8_t)GR__FIN(node, node->n_in - 1)->dtype;
                op->row = (uint8_t)gr__op_code(node->op);
            } else {                                     /* a cast, or a broadcast (a copy) */
                op->n_args = 1;
                op->dtype = (uint8_t)GR__FIN(node, 0)->dtype;
                op->row = (uint8_t)(node->op == &gr__op_Cast ? GR__FOP_CAST : GR__FOP_COPY);
            }
            op->odtype = (uint8_t)y->dtype;
            for (i = 0; i < op->n_args; i++) op->arg[i] = ref[GR__FIN(node, i)->id];
            /* the result's register first, then the registers whose last reader this is: an op never
               writes over its own operands (a cast between element sizes could not) */
            if (ref[y->id] < 0) ref[y->id] = n_free ? free_regs[--n_free] : n_ext + n_imm + n_out + n_reg++;
            op->out = ref[y->id];
        free_inputs:
            for (i = 0; i < node->n_in; i++) {
                gr_var *x = GR__FIN(node, i);
                int i2, dup = 0;
                for (i2 = 0; i2 < i; i2++) if (GR__FIN(node, i2) == x) dup = 1;
                if (!dup && (vflag[x->id] & (GR__FV_MINE | GR__FV_OUT | GR__FV_ALIASED)) == GR__FV_MINE && last[x->id] == q + 1) {
                    if (!gr__grow((void **)&free_regs, &cap_free, (uint32_t)n_free, sizeof(int32_t))) { st = GR_ERR_NOMEM; goto group_done; }
                    free_regs[n_free++] = ref[x->id];
                }
            }
        }
        p->n_ops = op_i;
        p->n_reg = n_reg;
        p->n_refs = n_ext + n_imm + n_out + n_reg;
        {   /* the scratch a call uses: registers, and per reference its pointer and stride */
            size_t at[5], size[5];
            unsigned char *b;
            size[0] = (size_t)(n_reg + 1) * (size_t)p->blk * 8u;
            size[1] = sizeof(void *) * (size_t)p->n_refs;
            size[2] = sizeof(int64_t) * (size_t)p->n_refs;
            size[3] = sizeof(int64_t) * (size_t)(n_ext + 1) * GR_MAX_NDIM;
            size[4] = sizeof(int64_t) * (size_t)(n_ext + 1);
            b = (unsigned char *)gr__fprog_block(cg, 5, size, at);
            if (!b) { st = GR_ERR_NOMEM; goto group_done; }
            p->regs = b;
            p->ptr = (const void **)(b + at[1]);
            p->st = (int64_t *)(b + at[2]);
            p->ext_st = (int64_t *)(b + at[3]);
            p->ext_off = (int64_t *)(b + at[4]);
        }
        for (i = 0; i < n_imm; i++) { p->ptr[n_ext + i] = &p->imm[i]; p->st[n_ext + i] = 0; }
        for (i = 0; i < n_out; i++) p->st[n_ext + n_imm + i] = 1;
        for (i = 0; i < n_reg; i++) {
            p->ptr[n_ext + n_imm + n_out + i] = p->regs + (size_t)i * (size_t)p->blk * 8u;
            p->st[n_ext + n_imm + n_out + i] = 1;
        }
        fp.prog = p;
        st = gr__make_node_n(cg, &gr__op_Fused, &fp, sizeof fp, n_ext, ext, n_out, outs_new);
        if (st != GR_OK) goto group_done;
        for (i = 0; i < n_out; i++) {
            if (gr__vname(outs_old[i]) && !gr__set_name(cg, outs_new[i], gr__vname(outs_old[i]))) { st = cg->status; goto group_done; }
        }
        /* readers outside the group, and the roots, will read the Fused node's outputs */
        for (i = 0; i < n_out; i++) repl[outs_old[i]->id] = outs_new[i]->id + 1;
        n_fused++;
    group_done:
        for (mi = 0; mi < n_members && g < last_big; mi++) {   /* reset the references for the next group */
            gr_node *node = GR__NODE(mem[mi]);
            for (i = 0; i < node->n_in; i++) { ref[GR__FIN(node, i)->id] = -1; cos_of[GR__FIN(node, i)->id] = 0; }
            ref[gr__out(node)[0]->id] = -1;
            vflag[gr__out(node)[0]->id] &= (uint8_t)~GR__FV_MINE;
        }
        GR_FREE(ext); GR_FREE(tmp); GR_FREE(outs_old); GR_FREE(outs_new); GR_FREE(free_regs);
        if (st != GR_OK) { if (cg->status == GR_OK) gr__error(cg, st, "out of memory (fusion)"); goto done; }
    }
    /* the roots read the Fused outputs; so do the nodes left alone, through rw->repl (no node is
       written: some are the source graph's) */
    for (k = 0; k < (uint32_t)n_roots; k++) roots[k] = gr__fuse_in(cg, repl, nv, roots[k]);
    rw->repl = repl;
    rw->n_repl = nv;
    repl = NULL;
done:
    GR_FREE(gmem_at); GR_FREE(gmem); GR_FREE(repl); GR_FREE(oid);
    GR_FREE(order); GR_FREE(group); GR_FREE(pos); GR_FREE(gstart); GR_FREE(vflag); GR_FREE(ref); GR_FREE(last);
    GR_FREE(cos_of); GR_FREE(paired);
    return st;
}
