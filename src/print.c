/* src/print.c: one node a line, for graphs and compiled functions. */

static void gr__print_var(FILE *out, const gr_var *v) {
    if (gr__vname(v)) fprintf(out, "%s", gr__vname(v));
    else if (v->kind == GR__VK_CONST && v->ndim == 0) fprintf(out, "%g", gr_array_get((const gr_array *)gr__ext(v), 0));
    else fprintf(out, "#%lu", (unsigned long)v->id);
}

static void gr__print_node_at(FILE *out, const gr_node *node, int indent) {
    int j;
    fprintf(out, "%*s", 2 + indent, "");
    for (j = 0; j < node->n_out; j++) {
        char buf[200];
        const gr_var *o = gr__out(node)[j];
        if (j) fprintf(out, ", ");
        gr__print_var(out, o);
        fprintf(out, ":%s%s", gr_dtype_name((gr_dtype)o->dtype), gr__shape_str(buf, sizeof buf, o->ndim, gr__vshape(o)));
    }
    fprintf(out, " = %s", node->op->name);
    if (gr__op_flags(node->op) & GR__OPF_INNERCONN) fprintf(out, "[%s]", gr__conn_node(node)->op->name);   /* the op it wraps (every row gets) */
    fprintf(out, "(");
    for (j = 0; j < node->n_in; j++) {
        if (j) fprintf(out, ", ");
        gr__print_var(out, gr__in(node)[j]);
    }
    fprintf(out, ")");
    if (node->op == &gr__op_Fused) {            /* the ops run in one pass */
        const gr__fprog *p = gr__fp(node);
        int k;
        fprintf(out, " {");
        for (k = 0; k < p->n_ops && k < 40; k++)
            fprintf(out, "%s%s", k ? " " : "", gr__fop_name(&p->ops[k]));
        if (p->n_ops > 40) fprintf(out, " ... %d ops", (int)p->n_ops);
        fprintf(out, "}");
    }
    if (gr__op_flags(node->op) & GR__OPF_GRAPHOP) {   /* an op made of a graph: its name, then that graph */
        const gr__graphop *o = *(gr__graphop *const *)gr__params(node);
        fprintf(out, " '%s'\n", o->name);
        if (indent == 0 && o->print) o->print(out, o);
        return;
    }
    fprintf(out, "\n");
}
static void gr__print_node(FILE *out, const gr_node *node) { gr__print_node_at(out, node, 0); }

GR_API void gr_print(FILE *out, gr_var *v) {
    gr_node **order = NULL;
    uint32_t n = 0, k;
    if (!out || !v) return;
    if (!gr__owner(v)) {
        gr__print_var(out, v);
        fprintf(out, " (leaf)\n");
        return;
    }
    if (gr__toposort(v->graph, 1, &v, NULL, &order, &n) != GR_OK) return;
    for (k = 0; k < n; k++) gr__print_node(out, order[k]);
    GR_FREE(order);
}

GR_API void gr_fn_print(FILE *out, const gr_fn *f) {
    int64_t k;
    int i;
    if (!out || !f) return;
    fprintf(out, "function of (");
    for (i = 0; i < f->n_in; i++) {
        if (i) fprintf(out, ", ");
        gr__print_var(out, f->slots[f->in_slot[i]].var);
    }
    fprintf(out, "), %lld nodes:\n", (long long)f->n_steps);
    for (k = 0; k < f->n_steps; k++) gr__print_node(out, f->steps[k]);
    fprintf(out, "outputs:");
    for (i = 0; i < f->n_out; i++) {
        fprintf(out, " ");
        gr__print_var(out, f->slots[f->out_slot[i]].var);
    }
    fprintf(out, "\n");
}
