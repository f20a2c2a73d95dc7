/* src/rewrite.c: the rewrites applied while gr_function copies the graph (at GR_OPT_FULL).

   Every node is rebuilt in the function's private graph after its inputs, through gr__rw_build:
     1. simplification (src/simplify.c): the rules of its row (src/rewrite.h), such as the algebra
        (x+0, x*1, x*0 from zero gradients, neg(neg x)), zero fills, dimshuffle and reshape
        composition, transposes folded into Dot's flags, stabilisation (log(softmax) ->
        log_softmax, log(1+x) -> log1p, log(sigmoid x) -> -softplus(-x), exp(x)-1 -> expm1);
        a replacement is itself built through gr__rw_build;
     2. merging (src/merge.c): a node equal to one already built (op, params, inputs) is that one;
     3. constant folding (src/merge.c): a small node of constants is run now and becomes a constant.
   A node's inputs are final when it is built, so these local rewrites reach their fixed point in
   one pass. The gradient-modifying identities are removed at every level (they compute nothing).
   Signatures (src/signature.c) tell when a rewrite keeps a result's shape. */

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

/* ---- building through the rewrites ------------------------------------------------------------- */

static gr_status gr__rw_build(gr__rewriter *rw, const gr_op_def *op, const void *params, size_t psize, int n_in,
                              gr_var *const *ins, gr_var **outs);

static gr_var *gr__rw1(gr__rewriter *rw, const gr_op_def *op, const void *params, size_t psize, int n_in, gr_var *const *ins) {
    gr_var *out = NULL;
    return gr__rw_build(rw, op, params, psize, n_in, ins, &out) == GR_OK ? out : NULL;
}
static gr_var *gr__rw_ew(gr__rewriter *rw, int row, gr_var *a, gr_var *b) {
    gr_var *ab[2];
    ab[0] = a; ab[1] = b;
    return gr__rw1(rw, gr__ew_ops[row], NULL, 0, gr__ew_ops[row]->n_in, ab);
}

/* ---- the pipeline ------------------------------------------------------------------------------------ */

/* a variable with v's shape in every call that is cheaper to have: down the producers of v while
   one of their inputs has the same signature (a value read for its shape only then needs nothing of
   what came after). The producers walked through are those shaped like an input by their rows:
   elementwise, fills, and the like0 signature rule's. */
static gr_var *gr__rw_shape_source(gr__rewriter *rw, gr_var *v) {
    int guard = 0;
    while (gr__owner(v) && guard++ < 64) {
        const gr_node *n = gr__owner(v);
        const gr__row_rules *rules = gr__rules_of(n->op);
        int i, found = -1;
        if (!(gr__flags_of(n->op) & (GR__OPF_ELEMWISE | GR__OPF_FILL)) && !(rules && rules->sig == gr__like0_sig))
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
    if (orig->n_out > 4 || (gr__flags_of(orig->op) & GR__OPF_INNERCONN)) return 0;
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
    if ((st = gr__inputs_present(cg, gr__on(op).s, n_in, ins_given)) != GR_OK) return st;   /* a replacement's builder failed */
    if ((gr__flags_of(op) & GR__OPF_SHAPEREF) && op->connection_pattern && n_in <= 8 && op->n_out == 1) {
        /* inputs read for their shape only: the cheapest variable of the same shape */
        for (i = 0; i < n_in; i++)
            ins_local[i] = op->connection_pattern[i] ? ins_given[i] : gr__rw_shape_source(rw, ins_given[i]);
        ins = ins_local;
    }
    if (op->n_out == 1 && !(gr__flags_of(op) & GR__OPF_GRADMOD)) {
        r = gr__rw_simplify(rw, op, params, ins, &done);
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
        !(gr__flags_of(orig->op) & GR__OPF_INNERCONN) && (!shared_in || gr__rw_types_current(orig))) {
        node = (gr_node *)orig;
        for (j = 0; j < node->n_out; j++) { outs[j] = gr__out(node)[j]; gr__sig(rw, gr__out(node)[j]); }
        if (!gr__cse_add(rw, node, h)) return gr__error(cg, GR_ERR_NOMEM, "out of memory (rewriting)");
        return GR_OK;
    }
    st = gr__make_node_n(cg, op, params, psize, n_in, ins, orig ? orig->n_out : op->n_out, outs);
    if (st != GR_OK) return st;
    node = gr__owner(outs[0]);
    for (j = 0; j < node->n_out; j++) gr__sig(rw, gr__out(node)[j]);     /* now, while the inputs' are known */
    if (all_const && n_in > 0 && !(gr__flags_of(op) & GR__OPF_RUNTIME) && gr__rw_fold(rw, node, outs)) return GR_OK;   /* (a loop runs with a function's state) */
    if (!gr__cse_add(rw, node, h)) return gr__error(cg, GR_ERR_NOMEM, "out of memory (rewriting)");
    return GR_OK;
}

/* builds node's counterpart from the copied inputs ins; outs receives its outputs */
static gr_status gr__rewrite_node(gr__rewriter *rw, const gr_node *node, gr_var **ins, gr_var **outs) {
    gr_status st;
    int j;
    if (gr__flags_of(node->op) & GR__OPF_GRADMOD) {
        outs[0] = ins[0];
        return GR_OK;
    }
    if ((gr__flags_of(node->op) & GR__OPF_GRAPHOP) && (*(gr__graphop *const *)gr__params(node))->expand)   /* inlined */
        return (*(gr__graphop *const *)gr__params(node))->expand(rw, node, ins, outs);
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
