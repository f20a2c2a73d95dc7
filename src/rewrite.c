/* src/rewrite.c: rewrites applied while gr_function copies the graph.

   Every node is rebuilt in the function's private graph after its inputs, so a rewrite of a node
   sees inputs that are already final: local rewrites applied here reach a fixed point in one
   pass. The gradient-modifying identities are removed at every level (SEMANTICS decision 10). */

typedef struct gr__rewriter gr__rewriter;
struct gr__rewriter {
    gr_graph *cg;
    int level;                   /* GR_OPT_FULL or GR_OPT_NONE */
};

static gr__rewriter *gr__rewriter_new(gr_graph *cg, int level) {
    gr__rewriter *rw = (gr__rewriter *)gr__calloc(1, sizeof(gr__rewriter));
    if (!rw) return NULL;
    rw->cg = cg;
    rw->level = level;
    return rw;
}

static void gr__rewriter_free(gr__rewriter *rw) { GR_FREE(rw); }

static gr_var *gr__rewrite_leaf(gr__rewriter *rw, gr_var *v) {
    (void)rw;
    return v;
}

/* builds node's counterpart from the copied inputs ins; outs receives its outputs */
static gr_status gr__rewrite_node(gr__rewriter *rw, const gr_node *node, gr_var **ins, gr_var **outs) {
    gr_status st;
    int j;
    if (node->op->flags & GR__OPF_GRADMOD) {
        outs[0] = ins[0];
        return GR_OK;
    }
    st = gr__make_node(rw->cg, node->op, node->params, node->params_size, node->n_in, ins, outs);
    if (st != GR_OK) return st;
    for (j = 0; j < node->n_out; j++)
        if (node->out[j]->name && !outs[j]->name && !gr__set_name(rw->cg, outs[j], node->out[j]->name)) return GR_ERR_NOMEM;
    return GR_OK;
}
