/* src/print.c: printing graphs and compiled functions.

   gr_print and gr_fn_print list one node a line; gr_debugprint draws the tree under each variable
   (Aesara's debugprint); gr_pp writes one infix expression (Aesara's pp); gr_print_dot and
   gr_fn_print_dot write Graphviz DOT. Every printer walks with explicit stacks (a chain of a
   million nodes prints). An op made of graphs (a loop) prints its inner graphs through its
   graphop's print hook, which calls gr__print_inner once per inner graph: the hook names the
   graph and its inputs and outputs, the printer in use draws it in its own style, indented under
   the node (or as a cluster in DOT). Inner graphs nest up to GR__PR_NEST levels deep. */
#ifndef GR_NO_STDIO


#define GR__PR_NEST 8                /* inner graphs inside inner graphs: deeper ones show their name only */
#define GR__PR_VALUES 6              /* values of a constant shown */

enum { GR__PM_LIST, GR__PM_TREE, GR__PM_DOT };

struct gr__printer {
    FILE *out;
    int mode;                        /* GR__PM_* */
    int depth;                       /* inner-graph nesting */
    const char *prefix;              /* list and tree: what each line of this graph starts with */
    const gr_node *node;             /* the node whose inner graphs print (its hook is running) */
    int gid, cur;                    /* DOT: graphs numbered so far, and this graph's number */
};

/* ---- small pieces: values, variables, op names ------------------------------------------------- */

static double gr__pr_value(const gr_var *v, int64_t k) { return gr_array_get((const gr_array *)gr__ext(v), k); }

/* a constant's values: "2" for a 0-d one, "[1, 2, 3]" (flat, the first GR__PR_VALUES) otherwise */
static void gr__pr_values(FILE *out, const gr_var *v) {
    const gr_array *a = (const gr_array *)gr__ext(v);
    int64_t k;
    if (v->ndim == 0) { fprintf(out, "%g", gr__pr_value(v, 0)); return; }
    fprintf(out, "[");
    for (k = 0; k < a->size && k < GR__PR_VALUES; k++) fprintf(out, "%s%g", k ? ", " : "", gr__pr_value(v, k));
    fprintf(out, "%s]", a->size > GR__PR_VALUES ? ", ..." : "");
}

/* a variable as an operand: its name, a 0-d constant's value, or #id */
static void gr__print_var(FILE *out, const gr_var *v) {
    if (gr__vname(v)) fprintf(out, "%s", gr__vname(v));
    else if (v->kind == GR__VK_CONST && v->ndim == 0) gr__pr_values(out, v);
    else fprintf(out, "#%lu", (unsigned long)v->id);
}

/* op's printed name (gr__on: CamelCase; a user's op's name whole), in *tmp when made */
static const char *gr__pr_name(const gr_op_def *op, gr__oname *tmp) {
    if (!(gr__flags_of(op) & GR__OPF_ELEMWISE)) return op->name;
    *tmp = gr__on(op);
    return tmp->s;
}

/* the op of node: its name, the op it wraps (Batched[ReduceLike]), a graph op's name in quotes */
static void gr__pr_opname(FILE *out, const gr_node *node) {
    gr__oname t;
    fprintf(out, "%s", gr__pr_name(node->op, &t));
    if (gr__flags_of(node->op) & GR__OPF_INNERCONN) fprintf(out, "[%s]", gr__pr_name(gr__conn_node(node)->op, &t));
    if (gr__flags_of(node->op) & GR__OPF_CONVERT) fprintf(out, "{%s}", gr_dtype_name((gr_dtype)gr__out(node)[0]->dtype));
}

static const char *gr__pr_shape(char *buf, size_t size, const gr_var *v) { return gr__shape_str(buf, size, v->ndim, gr__vshape(v)); }

/* the constants among the inputs of nodes[0..n) that print as #id (not 0-d, unnamed), once each,
   with their values: "constants: #5 float64 (3) = [1, 2, 3]" */
static void gr__pr_constants(FILE *out, const char *prefix, int64_t n, gr_node *const *nodes) {
    int64_t k, k2;
    int i, i2, first = 1;
    for (k = 0; k < n; k++)
        for (i = 0; i < nodes[k]->n_in; i++) {
            const gr_var *c = gr__in(nodes[k])[i];
            int dup = 0;
            char buf[200];
            if (c->kind != GR__VK_CONST || c->ndim == 0 || gr__vname(c)) continue;
            for (k2 = 0; k2 <= k && !dup; k2++)           /* printed already (an earlier reader)? */
                for (i2 = 0; i2 < (k2 < k ? nodes[k2]->n_in : i); i2++)
                    if (gr__in(nodes[k2])[i2] == c) { dup = 1; break; }
            if (dup) continue;
            fprintf(out, "%s%s", first ? prefix : "", first ? "constants:\n" : "");
            first = 0;
            fprintf(out, "%s  #%lu = ", prefix, (unsigned long)c->id);
            gr__pr_values(out, c);
            fprintf(out, " :%s%s\n", gr_dtype_name((gr_dtype)c->dtype), gr__pr_shape(buf, sizeof buf, c));
        }
}

/* a string built in pieces (gr_pp, the inner prefixes); stops growing at cap, ending in "..." */
typedef struct gr__sb { char *s; size_t n, cap, max; int full; } gr__sb;
static void gr__sb_put(gr__sb *b, const char *s, size_t len) {
    if (b->full) return;
    if (b->n + len > b->max) { len = b->max > b->n ? b->max - b->n : 0; b->full = 1; }
    if (b->n + len + 4 > b->cap) {
        size_t cap = (b->n + len + 4) * 2;
        char *t = (char *)GR_REALLOC(b->s, cap);
        if (!t) { b->full = 2; return; }
        b->s = t; b->cap = cap;
    }
    memcpy(b->s + b->n, s, len);
    b->n += len;
    if (b->full) { memcpy(b->s + b->n, "...", 3); b->n += 3; }
    b->s[b->n] = 0;
}
static void gr__sb_str(gr__sb *b, const char *s) { gr__sb_put(b, s, strlen(s)); }

/* ---- inner graphs ------------------------------------------------------------------------------- */

static void gr__pr_list(gr__printer *p, gr_graph *g, int n, gr_var *const *roots);
static void gr__dot_esc(FILE *out, const char *s);
static void gr__pr_tree(gr__printer *p, int n, gr_var *const *roots);
static void gr__pr_dot(gr__printer *p, int64_t n_nodes, gr_node *const *nodes, int n_roots, gr_var *const *roots);

/* node is an op made of graphs: its hook draws each inner graph through gr__print_inner */
static void gr__pr_graphop(gr__printer *p, const gr_node *node, const char *prefix) {
    const gr__graphop *o = *(gr__graphop *const *)gr__params(node);
    gr__printer inner = *p;
    if (!o->print) return;
    inner.node = node;
    inner.prefix = prefix;
    inner.depth = p->depth + 1;
    if (inner.depth > GR__PR_NEST) {
        if (p->mode != GR__PM_DOT) fprintf(p->out, "%s(the inner graphs of '%s', nested too deep to print)\n", prefix, o->name);
        return;
    }
    o->print(&inner, o);
    p->gid = inner.gid;
}

/* One inner graph of the node whose hook runs: `what` names it ("body"), in[0..n_in) are its
   inputs (leaves of its graph), out[0..n_out) its results; note (may be NULL) follows them. */
static void gr__print_inner(gr__printer *p, const char *what, int n_in, gr_var *const *in, int n_out,
                            gr_var *const *out, const char *note) {
    const gr__graphop *o = *(gr__graphop *const *)gr__params(p->node);
    int i;
    if (n_out < 1 || !out[0]) return;
    if (p->mode == GR__PM_DOT) {
        int me = ++p->gid, outer = p->cur;
        fprintf(p->out, "  subgraph cluster_%d {\n    label=\"%s of '", me, what);
        gr__dot_esc(p->out, o->name);
        fprintf(p->out, "'%s%s\"; style=dashed;\n", note ? ", " : "", note ? note : "");
        p->cur = me;
        gr__pr_dot(p, -1, NULL, n_out, out);
        p->cur = outer;
        fprintf(p->out, "  }\n");
        for (i = 0; i < n_out; i++)                  /* the results flow into the node */
            if (gr__owner(out[i]))
                fprintf(p->out, "  g%dn%lu -> g%dn%lu [style=dashed, label=\"%s %d\"];\n", me, (unsigned long)gr__owner(out[i])->id,
                        outer, (unsigned long)p->node->id, what, i);
            else
                fprintf(p->out, "  g%dv%lu -> g%dn%lu [style=dashed, label=\"%s %d\"];\n", me, (unsigned long)out[i]->id, outer,
                        (unsigned long)p->node->id, what, i);
        return;
    }
    fprintf(p->out, "%s%s of '%s' (inputs:", p->prefix, what, o->name);
    for (i = 0; i < n_in; i++) { fprintf(p->out, " "); gr__print_var(p->out, in[i]); }
    fprintf(p->out, "):\n");
    if (p->mode == GR__PM_LIST) gr__pr_list(p, out[0]->graph, n_out, out);
    else gr__pr_tree(p, n_out, out);
    fprintf(p->out, "%soutputs of '%s':", p->prefix, o->name);
    for (i = 0; i < n_out; i++) { fprintf(p->out, " "); gr__print_var(p->out, out[i]); }
    if (note) fprintf(p->out, " (%s)", note);
    fprintf(p->out, "\n");
}

/* ---- gr_print and gr_fn_print: one node a line ----------------------------------------------- */

static void gr__pr_node_line(gr__printer *p, const gr_node *node) {
    FILE *out = p->out;
    gr__oname t;
    int j;
    fprintf(out, "%s", p->prefix);
    for (j = 0; j < node->n_out; j++) {
        char buf[200];
        const gr_var *o = gr__out(node)[j];
        if (j) fprintf(out, ", ");
        gr__print_var(out, o);
        fprintf(out, ":%s%s", gr_dtype_name((gr_dtype)o->dtype), gr__pr_shape(buf, sizeof buf, o));
    }
    fprintf(out, " = %s", gr__pr_name(node->op, &t));
    if (gr__flags_of(node->op) & GR__OPF_INNERCONN) fprintf(out, "[%s]", gr__pr_name(gr__conn_node(node)->op, &t));   /* the op it wraps */
    fprintf(out, "(");
    for (j = 0; j < node->n_in; j++) {
        if (j) fprintf(out, ", ");
        gr__print_var(out, gr__in(node)[j]);
    }
    fprintf(out, ")");
    if (node->op == &gr__op_Fused) {            /* the ops run in one pass */
        const gr__fprog *fp = gr__fp(node);
        int k;
        fprintf(out, " {");
        for (k = 0; k < fp->n_ops && k < 40; k++)
            fprintf(out, "%s%s", k ? " " : "", gr__fop_name(&fp->ops[k]).s);
        if (fp->n_ops > 40) fprintf(out, " ... %d ops", (int)fp->n_ops);
        fprintf(out, "}");
    }
    if (gr__flags_of(node->op) & GR__OPF_GRAPHOP) {   /* an op made of graphs: its name, then those graphs */
        char prefix[4 * GR__PR_NEST + 8];
        snprintf(prefix, sizeof prefix, "%s    ", p->prefix);
        fprintf(out, " '%s'\n", (*(gr__graphop *const *)gr__params(node))->name);
        gr__pr_graphop(p, node, prefix);
        return;
    }
    fprintf(out, "\n");
}

static void gr__pr_list(gr__printer *p, gr_graph *g, int n, gr_var *const *roots) {
    gr_node **order = NULL;
    uint32_t n_order = 0, k;
    if (gr__toposort(g, n, roots, NULL, &order, &n_order) != GR_OK) return;
    for (k = 0; k < n_order; k++) gr__pr_node_line(p, order[k]);
    gr__pr_constants(p->out, p->prefix, (int64_t)n_order, order);
    GR_FREE(order);
}

static void gr__pr_init(gr__printer *p, FILE *out, int mode) {
    memset(p, 0, sizeof *p);
    p->out = out;
    p->mode = mode;
    p->prefix = mode == GR__PM_LIST ? "  " : "";
}

GR_API void gr_print(FILE *out, gr_var *v) {
    gr__printer p;
    if (!out || !v) return;
    if (!gr__owner(v)) {
        gr__print_var(out, v);
        fprintf(out, " (leaf)\n");
        return;
    }
    gr__pr_init(&p, out, GR__PM_LIST);
    gr__pr_list(&p, v->graph, 1, &v);
}

GR_API void gr_fn_print(FILE *out, const gr_fn *f) {
    gr__printer p;
    int64_t k;
    int i;
    if (!out || !f) return;
    gr__pr_init(&p, out, GR__PM_LIST);
    fprintf(out, "function of (");
    for (i = 0; i < f->n_in; i++) {
        if (i) fprintf(out, ", ");
        gr__print_var(out, f->slots[f->in_slot[i]].var);
    }
    fprintf(out, "), %lld nodes:\n", (long long)f->n_steps);
    for (k = 0; k < f->n_steps; k++) gr__pr_node_line(&p, f->steps[k]);
    gr__pr_constants(out, "", f->n_steps, f->steps);
    fprintf(out, "outputs:");
    for (i = 0; i < f->n_out; i++) {
        fprintf(out, " ");
        gr__print_var(out, f->slots[f->out_slot[i]].var);
    }
    fprintf(out, "\n");
}

/* ---- gr_debugprint: the tree under each variable ---------------------------------------------- */

/* one variable's line (after the tree's prefix): what computes it, #id, name, dtype, shape */
static void gr__pr_tree_line(FILE *out, const gr_var *v, int again) {
    char buf[200];
    const gr_node *node = gr__owner(v);
    const char *name = gr__vname(v);
    if (node) {
        gr__pr_opname(out, node);
        if (node->n_out > 1) fprintf(out, ".%d", (int)v->out_index);
        if (gr__flags_of(node->op) & GR__OPF_GRAPHOP) fprintf(out, " '%s'", (*(gr__graphop *const *)gr__params(node))->name);
    } else if (v->kind == GR__VK_CONST) {
        if (v->ndim == 0) gr__pr_values(out, v);
        else fprintf(out, "constant");
    } else if (v->kind == GR__VK_DISC) fprintf(out, "disconnected");
    else if (v->kind == GR__VK_NULL) fprintf(out, "null gradient");
    else fprintf(out, "%s", name ? name : v->kind == GR__VK_SHARED ? "shared" : "input");
    fprintf(out, " #%lu", (unsigned long)v->id);
    if (name && node) fprintf(out, " '%s'", name);
    if (again && node) { fprintf(out, " (above)\n"); return; }
    fprintf(out, " %s %s", gr_dtype_name((gr_dtype)v->dtype), gr__pr_shape(buf, sizeof buf, v));
    if (v->kind == GR__VK_SHARED) fprintf(out, "%s", name ? " shared" : "");
    if (v->kind == GR__VK_CONST && v->ndim) { fprintf(out, " = "); gr__pr_values(out, v); }
    if (v->kind == GR__VK_NULL) fprintf(out, ": %s", gr__null_reason(v));
    fprintf(out, "\n");
}

#define GR__PR_LEVELS 100            /* tree levels drawn; deeper lines say their depth */

/* roots' trees, depth first with an explicit stack: a variable under a node already drawn shows
   "(above)" instead of its subtree again; a graph op's inner graphs print under its line */
static void gr__pr_tree(gr__printer *p, int n, gr_var *const *roots) {
    typedef struct { const gr_var *v; int next; } frame;
    frame *st = NULL;
    uint8_t *seen = NULL;
    char *bars = NULL;                   /* the bars of the open levels: " |" or "  " each */
    const gr_graph *g = NULL;
    size_t cap = 0, sp;
    int r;
    for (r = 0; r < n; r++) {
        if (!roots[r]) continue;
        if (roots[r]->graph != g) {       /* a new graph: marks for its variables */
            g = roots[r]->graph;
            GR_FREE(seen);
            seen = (uint8_t *)gr__calloc((size_t)g->var_base + g->n_vars + 1u, 1);
            if (!seen) break;
        }
        sp = 0;
        if (sp + 1 > cap) {
            cap = 64;
            st = (frame *)GR_REALLOC(st, cap * sizeof(frame));
            bars = (char *)GR_REALLOC(bars, 2 * GR__PR_LEVELS + 8);
            if (!st || !bars) break;
        }
        st[sp].v = roots[r]; st[sp].next = -1; sp++;
        while (sp) {
            frame *fr = &st[sp - 1];
            const gr_node *node = gr__owner(fr->v);
            if (fr->next < 0) {           /* first visit: the line, then the inner graphs */
                size_t lv = sp - 1 < GR__PR_LEVELS ? sp - 1 : GR__PR_LEVELS;
                int again = seen[fr->v->id] && node;
                fprintf(p->out, "%s", p->prefix);
                if (sp - 1 > GR__PR_LEVELS) fprintf(p->out, "[depth %lu] ", (unsigned long)(sp - 1));
                if (lv) fprintf(p->out, "%.*s|", (int)(2 * lv - 1), bars);
                gr__pr_tree_line(p->out, fr->v, again);
                fr->next = 0;
                if (again || !node) { sp--; continue; }
                seen[fr->v->id] = 1;
                if (gr__flags_of(node->op) & GR__OPF_GRAPHOP) {
                    gr__sb pre;
                    memset(&pre, 0, sizeof pre);
                    pre.max = 4 * GR__PR_LEVELS + 1024;
                    gr__sb_str(&pre, p->prefix);
                    if (lv) gr__sb_put(&pre, bars, 2 * lv);
                    gr__sb_str(&pre, node->n_in ? " |    " : "      ");
                    if (pre.s && pre.full != 2) gr__pr_graphop(p, node, pre.s);
                    GR_FREE(pre.s);
                }
                {                                /* the node is drawn: its other outputs show "(above)" */
                    int j;
                    for (j = 0; j < node->n_out; j++) seen[gr__out(node)[j]->id] = 1;
                }
            }
            if (fr->next >= node->n_in) { sp--; continue; }
            {
                size_t lv = sp < GR__PR_LEVELS + 1 ? sp : GR__PR_LEVELS + 1;
                const gr_var *c = gr__in(node)[fr->next++];
                if (sp <= GR__PR_LEVELS) {     /* this level's bar: open while more inputs follow */
                    bars[2 * (lv - 1)] = ' ';
                    bars[2 * (lv - 1) + 1] = fr->next < node->n_in ? '|' : ' ';
                }
                if (sp + 1 > cap) {
                    frame *t = (frame *)GR_REALLOC(st, 2 * cap * sizeof(frame));
                    if (!t) { sp = 0; break; }
                    st = t; cap *= 2;
                }
                st[sp].v = c; st[sp].next = -1; sp++;
            }
        }
    }
    GR_FREE(st); GR_FREE(seen); GR_FREE(bars);
}

GR_API void gr_debugprint(FILE *out, int n, gr_var *const *vs) {
    gr__printer p;
    if (!out || n < 1 || !vs) return;
    gr__pr_init(&p, out, GR__PM_TREE);
    gr__pr_tree(&p, n, vs);
}

/* ---- gr_pp: one infix expression ------------------------------------------------------------- */

/* Aesara's spellings and precedences (aesara.printing: + and - -2, * / % -1, unary - 0, ** 1),
   with Python's for the comparisons and the logical (bitwise) operators; assoc: 0 either side
   (x + y + z), 1 left (x - y - z), 2 right (x ** y ** z) */
typedef struct { const char *sym; int prec, assoc; } gr__pp_opr;
static int gr__pp_operator(const gr_node *node, gr__pp_opr *o) {
    if (!(gr__flags_of(node->op) & GR__OPF_ELEMWISE)) return 0;
    switch (gr__code_of(node->op)) {
    case GR__EW_add: o->sym = "+"; o->prec = -2; o->assoc = 0; return 1;
    case GR__EW_sub: o->sym = "-"; o->prec = -2; o->assoc = 1; return 1;
    case GR__EW_mul: o->sym = "*"; o->prec = -1; o->assoc = 0; return 1;
    case GR__EW_div: o->sym = "/"; o->prec = -1; o->assoc = 1; return 1;
    case GR__EW_mod: o->sym = "%"; o->prec = -1; o->assoc = 1; return 1;
    case GR__EW_pow: o->sym = "**"; o->prec = 1; o->assoc = 2; return 1;
    case GR__EW_neg: o->sym = "-"; o->prec = 0; o->assoc = 0; return 1;
    case GR__EW_logical_not: o->sym = "~"; o->prec = 0; o->assoc = 0; return 1;
    case GR__EW_logical_and: o->sym = "&"; o->prec = -3; o->assoc = 0; return 1;
    case GR__EW_logical_or: o->sym = "|"; o->prec = -4; o->assoc = 0; return 1;
    case GR__EW_gt: o->sym = ">"; o->prec = -5; o->assoc = 1; return 1;
    case GR__EW_lt: o->sym = "<"; o->prec = -5; o->assoc = 1; return 1;
    case GR__EW_ge: o->sym = ">="; o->prec = -5; o->assoc = 1; return 1;
    case GR__EW_le: o->sym = "<="; o->prec = -5; o->assoc = 1; return 1;
    case GR__EW_eq: o->sym = "=="; o->prec = -5; o->assoc = 1; return 1;
    case GR__EW_neq: o->sym = "!="; o->prec = -5; o->assoc = 1; return 1;
    default: return 0;
    }
}

#define GR__PP_MAX 4000              /* characters of one subexpression; longer ones end in "..." */
#define GR__PP_ATOM 1000             /* precedence of a name, a value or a call */

/* v as an operand, into b: a named variable (other than the root) by its name, a leaf by what
   gr_print shows, a computed one by its expression str[v->id] (parenthesised when its precedence
   is below want, or equal on the side its operator does not associate) */
static void gr__pp_operand(gr__sb *b, const gr_var *v, const gr_var *root, char **str, const int *prec, int want, int eq_ok) {
    char buf[64];
    const char *name = gr__vname(v);
    if (name && v != root) { gr__sb_str(b, name); return; }
    if (!gr__owner(v)) {
        if (v->kind == GR__VK_CONST && v->ndim == 0) snprintf(buf, sizeof buf, "%g", gr__pr_value(v, 0));
        else snprintf(buf, sizeof buf, "%s#%lu", v->kind == GR__VK_CONST ? "constant" : v->kind == GR__VK_SHARED ? "shared" : "",
                      (unsigned long)v->id);
        gr__sb_str(b, buf);
        return;
    }
    if (prec[v->id] < want || (prec[v->id] == want && !eq_ok)) {
        gr__sb_str(b, "(");
        gr__sb_str(b, str[v->id] ? str[v->id] : "?");
        gr__sb_str(b, ")");
    } else gr__sb_str(b, str[v->id] ? str[v->id] : "?");
}

GR_API void gr_pp(FILE *out, gr_var *v) {
    gr_graph *g;
    gr_node **order = NULL;
    uint32_t n_order = 0, k, nv;
    char **str;
    int *prec, *uses;
    if (!out || !v) return;
    g = v->graph;
    if (!gr__owner(v)) {
        gr__sb b;
        memset(&b, 0, sizeof b);
        b.max = GR__PP_MAX;
        gr__pp_operand(&b, v, NULL, NULL, NULL, 0, 1);
        fprintf(out, "%s\n", b.s ? b.s : "");
        GR_FREE(b.s);
        return;
    }
    if (gr__toposort(g, 1, &v, NULL, &order, &n_order) != GR_OK) return;
    nv = g->var_base + g->n_vars + 1u;
    str = (char **)gr__calloc(nv, sizeof(char *));
    prec = (int *)gr__calloc(nv, sizeof(int));
    uses = (int *)gr__calloc(nv, sizeof(int));
    if (str && prec && uses) {
        int i, j;
        for (k = 0; k < n_order; k++)                  /* readers left of each value: freed after the last */
            for (i = 0; i < order[k]->n_in; i++) uses[gr__in(order[k])[i]->id]++;
        for (k = 0; k < n_order; k++) {
            gr_node *node = order[k];
            gr__pp_opr o;
            gr__sb b;
            int p;
            memset(&b, 0, sizeof b);
            b.max = GR__PP_MAX;
            if (gr__pp_operator(node, &o) && node->n_in == 1) {
                gr__sb_str(&b, o.sym);
                gr__pp_operand(&b, gr__in(node)[0], v, str, prec, o.prec, 1);
                p = o.prec;
            } else if (gr__pp_operator(node, &o) && node->n_in == 2) {
                gr__pp_operand(&b, gr__in(node)[0], v, str, prec, o.prec, o.assoc != 2);
                gr__sb_str(&b, " ");
                gr__sb_str(&b, o.sym);
                gr__sb_str(&b, " ");
                gr__pp_operand(&b, gr__in(node)[1], v, str, prec, o.prec, o.assoc == 0 || o.assoc == 2);
                p = o.prec;
            } else {                                     /* f(x, y) */
                gr__sb_str(&b, node->op->name);
                if (gr__flags_of(node->op) & GR__OPF_INNERCONN) {
                    gr__sb_str(&b, "[");
                    gr__sb_str(&b, gr__conn_node(node)->op->name);
                    gr__sb_str(&b, "]");
                }
                if (gr__flags_of(node->op) & GR__OPF_CONVERT) {
                    gr__sb_str(&b, "{");
                    gr__sb_str(&b, gr_dtype_name((gr_dtype)gr__out(node)[0]->dtype));
                    gr__sb_str(&b, "}");
                }
                if (gr__flags_of(node->op) & GR__OPF_GRAPHOP) {
                    gr__sb_str(&b, "{'");
                    gr__sb_str(&b, (*(gr__graphop *const *)gr__params(node))->name);
                    gr__sb_str(&b, "'}");
                }
                gr__sb_str(&b, "(");
                for (i = 0; i < node->n_in; i++) {
                    if (i) gr__sb_str(&b, ", ");
                    gr__pp_operand(&b, gr__in(node)[i], v, str, prec, -1000, 1);
                }
                gr__sb_str(&b, ")");
                p = GR__PP_ATOM;
            }
            if (b.full == 2) { GR_FREE(b.s); break; }
            for (j = 0; j < node->n_out; j++) {        /* a second output: "Split(x)[1]" */
                gr_var *o2 = gr__out(node)[j];
                if (node->n_out == 1) { str[o2->id] = b.s; b.s = NULL; }
                else {
                    gr__sb c;
                    char idx[32];
                    memset(&c, 0, sizeof c);
                    c.max = GR__PP_MAX + 40;
                    gr__sb_str(&c, b.s);
                    snprintf(idx, sizeof idx, "[%d]", j);
                    gr__sb_str(&c, idx);
                    str[o2->id] = c.s;
                }
                prec[o2->id] = p;
            }
            GR_FREE(b.s);
            for (i = 0; i < node->n_in; i++) {           /* operands read for the last time */
                gr_var *x = gr__in(node)[i];
                if (--uses[x->id] == 0 && x != v) { GR_FREE(str[x->id]); str[x->id] = NULL; }
            }
        }
        if (str[v->id]) fprintf(out, "%s\n", str[v->id]);
        for (k = 0; k < nv; k++) GR_FREE(str[k]);
    }
    GR_FREE(str); GR_FREE(prec); GR_FREE(uses); GR_FREE(order);
}

/* ---- DOT ------------------------------------------------------------------------------------- */

/* s inside a DOT string: quotes and backslashes escaped */
static void gr__dot_esc(FILE *out, const char *s) {
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', out);
        fputc(*s, out);
    }
}

/* the id of the node drawing v in graph number gnum: its op's node, or the leaf's box; for an
   output of a Fused node, the instruction that writes it (gr_fn_print_dot draws those) */
static int gr__fused_writer(const gr__fprog *fp, int32_t ref) {
    int k, w = -1;
    for (k = 0; k < fp->n_ops; k++)
        if (fp->ops[k].out == ref || fp->ops[k].out2 == ref) w = k;
    return w;
}
static void gr__dot_src(FILE *out, int gnum, const gr_var *v, int fused) {
    const gr_node *node = gr__owner(v);
    if (!node) fprintf(out, "g%dv%lu", gnum, (unsigned long)v->id);
    else if (fused && node->op == &gr__op_Fused) {
        const gr__fprog *fp = gr__fp(node);
        fprintf(out, "g%dn%lu_%d", gnum, (unsigned long)node->id, gr__fused_writer(fp, fp->n_ext + fp->n_imm + v->out_index));
    } else fprintf(out, "g%dn%lu", gnum, (unsigned long)node->id);
}

static void gr__dot_leaf(FILE *out, int gnum, const gr_var *v) {
    char buf[200];
    const char *name = gr__vname(v);
    fprintf(out, "    g%dv%lu [shape=box, style=filled, fillcolor=%s, label=\"", gnum, (unsigned long)v->id,
            v->kind == GR__VK_CONST ? "lightgrey" : v->kind == GR__VK_SHARED ? "lightcyan" : "palegreen");
    if (name) { gr__dot_esc(out, name); fprintf(out, "\\n"); }
    if (v->kind == GR__VK_CONST) { gr__pr_values(out, v); fprintf(out, "\\n"); }
    else if (v->kind == GR__VK_SHARED) fprintf(out, "shared ");
    else if (v->kind == GR__VK_DISC) fprintf(out, "disconnected ");
    else if (v->kind == GR__VK_NULL) fprintf(out, "null gradient ");
    fprintf(out, "#%lu %s %s\"];\n", (unsigned long)v->id, gr_dtype_name((gr_dtype)v->dtype), gr__pr_shape(buf, sizeof buf, v));
}

/* a Fused node as a cluster: one DOT node per instruction, immediates as constant boxes, edges
   along the program's operands */
static void gr__dot_fused(gr__printer *p, const gr_node *node, uint8_t *seen) {
    const gr__fprog *fp = gr__fp(node);
    int *writer = (int *)GR_MALLOC(sizeof(int) * ((size_t)fp->n_refs + 1u));
    int k, a;
    FILE *out = p->out;
    fprintf(out, "  subgraph cluster_f%lu {\n    label=\"Fused #%lu (one pass, %d ops)\"; style=filled; fillcolor=lightyellow;\n",
            (unsigned long)node->id, (unsigned long)node->id, (int)fp->n_ops);
    if (writer) for (k = 0; k < fp->n_refs; k++) writer[k] = -1;
    for (k = 0; k < fp->n_ops; k++) {
        const gr__fop *op = &fp->ops[k];
        fprintf(out, "    g%dn%lu_%d [shape=ellipse, label=\"%s\"];\n", p->cur, (unsigned long)node->id, k, gr__fop_name(op).s);
        for (a = 0; a < op->n_args; a++) {
            int32_t r = op->arg[a];
            if (op->row == GR__FOP_PAIR && a == 1) break;          /* arg[1] of a pair is its row */
            if (r < fp->n_ext) {
                const gr_var *x = gr__in(node)[r];
                if (!gr__owner(x) && !seen[x->id]) { seen[x->id] = 1; gr__dot_leaf(out, p->cur, x); }
                fprintf(out, "    ");
                gr__dot_src(out, p->cur, x, 1);
            } else if (r < fp->n_ext + fp->n_imm) {                  /* an immediate: its value */
                const unsigned char *imm = (const unsigned char *)&fp->imm[r - fp->n_ext];
                double val;
                int dt = (op->row == GR__EW_where && a == 0) ? (int)GR_BOOL : (int)op->dtype;
                if (dt == GR_F64) memcpy(&val, imm, 8);
                else if (dt == GR_F32) { float t; memcpy(&t, imm, 4); val = t; }
                else if (dt == GR_I64) { int64_t t; memcpy(&t, imm, 8); val = (double)t; }
                else val = imm[0];
                fprintf(out, "    g%dn%lu_%d_%d [shape=box, style=filled, fillcolor=lightgrey, label=\"%g\"];\n    g%dn%lu_%d_%d",
                        p->cur, (unsigned long)node->id, k, a, val, p->cur, (unsigned long)node->id, k, a);
            } else if (writer && writer[r] >= 0)
                fprintf(out, "    g%dn%lu_%d", p->cur, (unsigned long)node->id, writer[r]);
            else continue;
            fprintf(out, " -> g%dn%lu_%d", p->cur, (unsigned long)node->id, k);
            if (op->n_args > 1 && !(op->row == GR__FOP_PAIR)) fprintf(out, " [label=\"%d\"]", a);
            fprintf(out, ";\n");
        }
        if (writer) { writer[op->out] = k; if (op->out2 >= 0) writer[op->out2] = k; }
    }
    fprintf(out, "  }\n");
    GR_FREE(writer);
}

/* nodes[0..n_nodes) (n_nodes < 0: the nodes roots need, in order) as DOT statements of graph
   number p->cur; roots as output boxes. Fused nodes become clusters when given (a function). */
static void gr__pr_dot(gr__printer *p, int64_t n_nodes, gr_node *const *nodes, int n_roots, gr_var *const *roots) {
    gr_node **order = NULL;
    uint32_t n_order = 0;
    int64_t k;
    int i, fused = nodes != NULL;
    uint32_t nv = 0;
    uint8_t *seen;
    FILE *out = p->out;
    if (n_nodes < 0) {
        if (gr__toposort(roots[0]->graph, n_roots, roots, NULL, &order, &n_order) != GR_OK) return;
        nodes = order;
        n_nodes = n_order;
    }
    for (k = 0; k < n_nodes; k++)                    /* marks for every variable met (a function's steps */
        for (i = 0; i < nodes[k]->n_in; i++)           /* and outputs may number theirs in two graphs) */
            if (gr__in(nodes[k])[i]->id >= nv) nv = gr__in(nodes[k])[i]->id + 1u;
    for (i = 0; i < n_roots; i++)
        if (roots[i]->id >= nv) nv = roots[i]->id + 1u;
    seen = (uint8_t *)gr__calloc((size_t)nv + 1u, 1);
    if (!seen) { GR_FREE(order); return; }
    for (k = 0; k < n_nodes; k++)                    /* the leaves first: outside any cluster drawn below */
        for (i = 0; i < nodes[k]->n_in; i++) {
            const gr_var *x = gr__in(nodes[k])[i];
            if (!gr__owner(x) && !seen[x->id]) { seen[x->id] = 1; gr__dot_leaf(out, p->cur, x); }
        }
    for (k = 0; k < n_nodes; k++) {
        const gr_node *node = nodes[k];
        char buf[200];
        if (fused && node->op == &gr__op_Fused) { gr__dot_fused(p, node, seen); continue; }
        fprintf(out, "    g%dn%lu [shape=ellipse, label=\"", p->cur, (unsigned long)node->id);
        {                                            /* the op, then each output's name, dtype, shape */
            int j;
            gr__oname t;
            gr__dot_esc(out, gr__pr_name(node->op, &t));
            if (gr__flags_of(node->op) & GR__OPF_INNERCONN) {
                fprintf(out, "[");
                gr__dot_esc(out, gr__pr_name(gr__conn_node(node)->op, &t));
                fprintf(out, "]");
            }
            if (gr__flags_of(node->op) & GR__OPF_CONVERT) fprintf(out, "{%s}", gr_dtype_name((gr_dtype)gr__out(node)[0]->dtype));
            if (gr__flags_of(node->op) & GR__OPF_GRAPHOP) {
                fprintf(out, " '");
                gr__dot_esc(out, (*(gr__graphop *const *)gr__params(node))->name);
                fprintf(out, "'");
            }
            for (j = 0; j < node->n_out; j++) {
                const gr_var *o = gr__out(node)[j];
                fprintf(out, "\\n");
                if (gr__vname(o)) { gr__dot_esc(out, gr__vname(o)); fprintf(out, " "); }
                fprintf(out, "#%lu %s %s", (unsigned long)o->id, gr_dtype_name((gr_dtype)o->dtype), gr__pr_shape(buf, sizeof buf, o));
            }
        }
        fprintf(out, "\"];\n");
        for (i = 0; i < node->n_in; i++) {
            const gr_var *x = gr__in(node)[i];
            if (!gr__owner(x) && !seen[x->id]) { seen[x->id] = 1; gr__dot_leaf(out, p->cur, x); }
            fprintf(out, "    ");
            gr__dot_src(out, p->cur, x, fused);
            fprintf(out, " -> g%dn%lu", p->cur, (unsigned long)node->id);
            if (node->n_in > 1 || (gr__owner(x) && gr__owner(x)->n_out > 1)) {
                fprintf(out, " [label=\"");
                if (gr__owner(x) && gr__owner(x)->n_out > 1) fprintf(out, "out %d", (int)x->out_index);
                if (node->n_in > 1) fprintf(out, "%sin %d", gr__owner(x) && gr__owner(x)->n_out > 1 ? ", " : "", i);
                fprintf(out, "\"]");
            }
            fprintf(out, ";\n");
        }
        if (gr__flags_of(node->op) & GR__OPF_GRAPHOP) gr__pr_graphop(p, node, "");
    }
    for (i = 0; i < n_roots; i++) {                  /* the results */
        const gr_var *r = roots[i];
        if (!gr__owner(r) && !seen[r->id]) { seen[r->id] = 1; gr__dot_leaf(out, p->cur, r); }
        if (p->depth) continue;                       /* an inner graph's results flow into its node */
        fprintf(out, "    g%dout%d [shape=box, style=filled, fillcolor=lightblue, label=\"output %d\"];\n    ", p->cur, i, i);
        gr__dot_src(out, p->cur, r, fused);
        fprintf(out, " -> g%dout%d;\n", p->cur, i);
    }
    GR_FREE(seen);
    GR_FREE(order);
}

GR_API void gr_print_dot(FILE *out, int n, gr_var *const *vs) {
    gr__printer p;
    int i;
    if (!out) return;
    fprintf(out, "digraph gradient {\n  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=9];\n");
    for (i = 0; vs && i < n; i++)
        if (!vs[i]) break;
    if (vs && n > 0 && i == n) {
        int j, same = 1;
        for (j = 1; j < n; j++) same &= vs[j]->graph == vs[0]->graph;
        gr__pr_init(&p, out, GR__PM_DOT);
        if (same) gr__pr_dot(&p, -1, NULL, n, vs);
        else for (j = 0; j < n; j++) { p.cur = ++p.gid; gr__pr_dot(&p, -1, NULL, 1, &vs[j]); }
    }
    fprintf(out, "}\n");
}

GR_API void gr_fn_print_dot(FILE *out, const gr_fn *f) {
    gr__printer p;
    gr_var **outs;
    int i;
    if (!out || !f) return;
    fprintf(out, "digraph gradient_function {\n  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=9];\n");
    outs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * ((size_t)f->n_out + 1u));
    if (outs) {
        for (i = 0; i < f->n_out; i++) outs[i] = f->slots[f->out_slot[i]].var;
        gr__pr_init(&p, out, GR__PM_DOT);
        if (f->n_steps > 0 || f->n_out > 0) {
            if (f->n_steps > 0) gr__pr_dot(&p, f->n_steps, f->steps, f->n_out, outs);
            else gr__pr_dot(&p, -1, NULL, f->n_out, outs);
        }
        for (i = 0; i < f->n_upd; i++) {            /* each update: the new value to its shared variable */
            fprintf(out, "    g0upd%d [shape=box, style=filled, fillcolor=lightcyan, label=\"update ", i);
            if (gr__vname(f->upd_var[i])) gr__dot_esc(out, gr__vname(f->upd_var[i]));
            else fprintf(out, "#%lu", (unsigned long)f->upd_var[i]->id);
            fprintf(out, "\"];\n    ");
            gr__dot_src(out, 0, f->slots[f->upd_slot[i]].var, 1);
            fprintf(out, " -> g0upd%d;\n", i);
        }
        GR_FREE(outs);
    }
    fprintf(out, "}\n");
}

#else /* GR_NO_STDIO: no printers; the graph-op hooks still name this */
static void gr__print_inner(gr__printer *p, const char *what, int n_in, gr_var *const *in, int n_out,
                            gr_var *const *out, const char *note) {
    (void)p; (void)what; (void)n_in; (void)in; (void)n_out; (void)out; (void)note;
}
#endif
