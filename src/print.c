/* src/print.c: one node a line, for graphs and compiled functions. */

static void gr__print_var(FILE *out, const gr_var *v) {
    if (gr__vname(v)) fprintf(out, "%s", gr__vname(v));
    else if (v->kind == GR__VK_CONST && v->ndim == 0) fprintf(out, "%g", gr_array_get((const gr_array *)gr__ext(v), 0));
    else fprintf(out, "#%lu", (unsigned long)v->id);
}

static void gr__print_node(FILE *out, const gr_node *node) {
    int j;
    fprintf(out, "  ");
    for (j = 0; j < node->n_out; j++) {
        char buf[200];
        const gr_var *o = gr__out(node)[j];
        if (j) fprintf(out, ", ");
        gr__print_var(out, o);
        fprintf(out, ":%s%s", gr_dtype_name((gr_dtype)o->dtype), gr__shape_str(buf, sizeof buf, o->ndim, gr__vshape(o)));
    }
    fprintf(out, " = %s", node->op->name);
    if (node->op == &gr__op_Batched) fprintf(out, "[%s]", ((const gr__batched_params *)gr__params(node))->op->name);   /* what every row gets */
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
            fprintf(out, "%s%s", k ? " " : "", p->ops[k].row == GR__FOP_CAST ? "Cast" : p->ops[k].row == GR__FOP_COPY ? "BroadcastLike" :
                    p->ops[k].row == GR__FOP_SINCOS ? "sincos" : gr__ew_ops[p->ops[k].row]->name);
        if (p->n_ops > 40) fprintf(out, " ... %d ops", (int)p->n_ops);
        fprintf(out, "}");
    }
    fprintf(out, "\n");
}

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
