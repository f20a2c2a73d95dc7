/* src/grad.c: reverse mode: gr_grad, gr_grad1, gr_lop, gr_subgraph_grad,
   and the null gradients gr_grad_not_implemented / gr_grad_undefined.

   gr_grad follows aesara.gradient.grad step by step, without recursion:
     1. seed the gradients of the cost (ones) and of the known variables;
     2. a depth-first walk down from the cost records, for every variable, the (node, input
        position) pairs through which it reaches the cost, in discovery order (this order fixes
        the summation order of gradient terms: deterministic, left fold);
     3. a sweep up from wrt keeps only the variables that depend on some wrt;
     4. the nodes involved are visited in reverse topological order: each op's grad rule is
        called once, its terms checked against the op contract (gr__node_terms_check);
     5. each wrt's gradient is the sum of its terms, then the disconnected / null policies. */

/* ---- null gradients ---------------------------------------------------------------------------- */

static gr_var *gr__null_var(gr_graph *g, const gr_var *like, gr_status code, const char *reason) {
    gr_var *v = gr__new_var(g, like ? (int)like->dtype : (int)GR_F64, like ? like->ndim : 0, like ? gr__vshape(like) : NULL, GR__VK_NULL);
    if (!v) return NULL;
    v->aux = (uint8_t)code;
    v->u.ext = gr__arena_strdup(&g->arena, reason ? reason : "(no explanation given)");
    if (!gr__ext(v)) return gr__fail(g, GR_ERR_NOMEM, "out of memory (a null gradient's reason)");
    return v;
}

static gr_var *gr__null_for(const gr_node *node, int x_pos, gr_var *x, const char *comment, gr_status code) {
    char reason[GR__MSG];
    if (!x) return NULL;
    snprintf(reason, sizeof reason, "This variable is Null because the grad method for input %d (%s) of the %s op is not implemented.%s%s",
             x_pos, gr__d(x).s, gr__on(node ? node->op : NULL).s, comment && comment[0] ? " " : "", comment ? comment : "");
    return gr__null_var(x->graph, x, code, reason);
}

GR_API gr_var *gr_grad_not_implemented(const gr_node *node, int x_pos, gr_var *x, const char *comment) {
    return gr__null_for(node, x_pos, x, comment, GR_ERR_GRAD_NOT_IMPLEMENTED);
}
GR_API gr_var *gr_grad_undefined(const gr_node *node, int x_pos, gr_var *x, const char *comment) {
    return gr__null_for(node, x_pos, x, comment, GR_ERR_GRAD_UNDEFINED);
}

/* the reason carried by a null variable */
static const char *gr__null_reason(const gr_var *v) { return v && v->kind == GR__VK_NULL && gr__ext(v) ? (const char *)gr__ext(v) : ""; }
GR_API const char *gr_null_reason(const gr_var *v) { return gr__null_reason(v); }

/* ---- conditionals' regions --------------------------------------------------------------------------

   A region is a side of a condition (GR__OPF_LAZY nodes) within its parent region, region 0 being
   everything: the nodes whose outputs are read only on one side, or within it, belong to it (a
   compiled function runs them only when it is on, src/function.c). The gradient keeps them so: a
   node's terms are valid where its region is on and zero elsewhere, so a term that leaves a region
   for a variable of an enclosing one is made ifelse(cond, term, zeros like the variable) for each
   side it leaves; the backward nodes of a side then belong to it too (the gradient of
   ifelse(x > 0, sqrt(x), 0) at 0 is 0, where multiplying a zero by sqrt's infinite derivative gives
   NaN). */
typedef struct gr__region { int32_t parent, depth; gr_var *cond; int32_t cond_slot; int side; } gr__region;

/* the innermost region holding both a and b (-1: none known yet) */
static int32_t gr__region_lca(const gr__region *r, int32_t a, int32_t b) {
    if (a < 0) return b;
    if (b < 0) return a;
    while (a != b) {
        if (r[a].depth >= r[b].depth) a = r[a].parent; else b = r[b].parent;
    }
    return a;
}

/* the region (parent, cond, side), made when new (parent -1: region 0 itself); -1 when out of memory */
static int32_t gr__region_get(gr__region **regs, int32_t *n, uint32_t *cap, int32_t parent, gr_var *cond, int side) {
    int32_t r;
    for (r = 1; r < *n; r++)
        if ((*regs)[r].parent == parent && (*regs)[r].cond == cond && (*regs)[r].side == side) return r;
    if (!gr__grow((void **)regs, cap, (uint32_t)*n, sizeof(gr__region))) return -1;
    r = (*n)++;
    (*regs)[r].parent = parent < 0 ? 0 : parent;
    (*regs)[r].depth = parent < 0 ? 0 : (*regs)[parent].depth + 1;
    (*regs)[r].cond = cond;
    (*regs)[r].cond_slot = -1;
    (*regs)[r].side = side;
    return r;
}

/* the regions of n nodes (a topological order) whose outputs the roots read: nreg[k] is node k's
   (the regions made in *regs; region 0 first when there are none yet). Errors are recorded on g. */
static gr_status gr__regions_of(gr_graph *g, gr_node *const *nodes, uint32_t n, int n_roots, gr_var *const *roots,
                                gr__region **regs, int32_t *n_regs, uint32_t *cap, int32_t *nreg) {
    uint32_t nv = g->var_base + g->n_vars, k;
    int32_t *vreg = (int32_t *)GR_MALLOC(sizeof(int32_t) * (nv + 1u));
    int i, j;
    if (!vreg || (*n_regs == 0 && gr__region_get(regs, n_regs, cap, -1, NULL, 0) != 0)) goto nomem;
    for (k = 0; k < nv; k++) vreg[k] = -1;
    for (i = 0; i < n_roots; i++) if (roots[i]->id < nv) vreg[roots[i]->id] = 0;
    for (k = n; k-- > 0;) {                           /* readers before producers */
        gr_node *node = nodes[k];
        int32_t r = -1;
        int lazy = (gr__flags_of(node->op) & GR__OPF_LAZY) != 0, half = (node->n_in - 1) / 2;
        for (j = 0; j < node->n_out; j++) if (gr__out(node)[j]->id < nv) r = gr__region_lca(*regs, r, vreg[gr__out(node)[j]->id]);
        if (r < 0) r = 0;
        nreg[k] = r;
        for (i = 0; i < node->n_in; i++) {
            gr_var *x = gr__in(node)[i];
            int32_t u = r;
            if (lazy && i > 0 && (u = gr__region_get(regs, n_regs, cap, r, gr__in(node)[0], i <= half)) < 0) goto nomem;
            if (x->id < nv) vreg[x->id] = gr__region_lca(*regs, vreg[x->id], u);
        }
    }
    GR_FREE(vreg);
    return GR_OK;
nomem:
    GR_FREE(vreg);
    return gr__error(g, GR_ERR_NOMEM, "out of memory (the conditionals' regions)");
}

/* ---- the walk ------------------------------------------------------------------------------------ */

static const gr_node *gr__conn_node(const gr_node *node);

/* the node whose connection pattern is node's: the wrapped one for a Batched node */
static const gr_node *gr__pattern_node(const gr_node *node) {
    return (gr__flags_of(node->op) & GR__OPF_INNERCONN) ? gr__conn_node(node) : node;
}

/* node has a connection pattern (else everything is connected) */
static int gr__has_pattern(const gr_node *node) {
    node = gr__pattern_node(node);
    if (gr__flags_of(node->op) & GR__OPF_GRAPHOP) return (*(gr__graphop *const *)gr__params(node))->conn != NULL;
    return (gr__flags_of(node->op) & GR__OPF_CONN0) || node->op->connection_pattern;
}

/* input i of node affects output j */
static int gr__connected(const gr_node *node, int i, int j) {
    const unsigned char *p;
    node = gr__pattern_node(node);
    if (gr__flags_of(node->op) & GR__OPF_CONN0) return i == 0;
    p = (gr__flags_of(node->op) & GR__OPF_GRAPHOP) ? (*(gr__graphop *const *)gr__params(node))->conn : node->op->connection_pattern;
    return !p || p[i * node->n_out + j];
}

/* one (node, input position) through which a variable reaches the cost; the uses of a variable are
   a list through `next` (1 + an index in gr__gctx.use, 0 at the end). 12 bytes: a graph of a
   million links records five million of them. */
typedef struct gr__use { uint32_t node, pos, next; } gr__use;

typedef struct gr__gctx {
    gr_graph  *g;
    const char *fname;
    uint32_t   nv, nn;           /* variables and nodes that existed when the call began */
    gr__arena  scratch;
    gr__use   *use;              /* every use recorded */
    uint32_t   n_use, cap_use;
    uint32_t  *uses;             /* by variable: 1 + the index of its first use toward the cost, 0 none */
    uint32_t  *tails;            /* by variable: 1 + the index of the last */
    uint8_t   *reached;          /* by variable: depends on some wrt */
    uint8_t   *constant;         /* by variable: in consider_constant */
    uint8_t   *in_s;             /* by node: its grad rule is needed (its id orders it: consumers after producers) */
    gr_var   **total;            /* by variable: its gradient, once known */
    gr_var  ***terms;            /* by node: its terms, once computed */
    gr_var    *cost;
    int        add_names;
    gr__region *regs;            /* with conditionals: the regions (see above) */
    int32_t    n_regs;
    uint32_t   cap_regs;
    int32_t   *vreg;             /* by variable: its region, -1 before its total; NULL without conditionals */
    int32_t   *nreg;             /* by node: its region */
} gr__gctx;

static int gr__in_map(const gr__gctx *c, const gr_var *v) { return v->id < c->nv && c->uses[v->id] && c->reached[v->id]; }

/* whether a single-output node already recorded v at an input before pos (it records its inputs in
   order, during its one visit) */
static int gr__used_before(const gr_node *node, const gr_var *v, int pos) {
    int j;
    for (j = 0; j < pos; j++) if (gr__in(node)[j] == v && gr__connected(node, j, 0)) return 1;
    return 0;
}

/* records that v reaches the cost through input `pos` of node, once, keeping one group per node in
   first-seen order (Aesara's ordered map node -> positions). The group of a single-output node is
   usually v's last entry; only when the walk below an earlier input of node recorded other uses of
   v in between (A = f(v, g(v), v)), or for a multi-output node (visited once per output), is the
   group searched for. O(1) otherwise, which matters for a constant shared by a million nodes. */
#define GR__USE(c, e) (&(c)->use[(e) - 1])        /* the use of list entry e (> 0) */
static int gr__record(gr__gctx *c, gr_var *v, gr_node *node, int pos) {
    uint32_t tail = c->tails[v->id], group = 0, e, nid = node->id;
    if (tail && GR__USE(c, tail)->node == nid) group = tail;
    else if (tail && (node->n_out > 1 || gr__used_before(node, v, pos)))
        for (e = c->uses[v->id]; e; e = GR__USE(c, e)->next) if (GR__USE(c, e)->node == nid) group = e;
    if (group) {                                      /* the end of node's group, unless pos is in it */
        if (node->n_out > 1)                          /* a single-output node records each position once */
            for (e = c->uses[v->id]; e; e = GR__USE(c, e)->next)
                if (GR__USE(c, e)->node == nid && GR__USE(c, e)->pos == (uint32_t)pos) return 1;
        while (GR__USE(c, group)->next && GR__USE(c, GR__USE(c, group)->next)->node == nid) group = GR__USE(c, group)->next;
    }
    if (c->n_use >= UINT32_MAX - 1u || !gr__grow((void **)&c->use, &c->cap_use, c->n_use, sizeof(gr__use))) return 0;
    e = ++c->n_use;
    GR__USE(c, e)->node = nid;
    GR__USE(c, e)->pos = (uint32_t)pos;
    if (group) {
        GR__USE(c, e)->next = GR__USE(c, group)->next;
        GR__USE(c, group)->next = e;
        if (group == tail) c->tails[v->id] = e;
    } else {
        GR__USE(c, e)->next = 0;
        if (tail) GR__USE(c, tail)->next = e; else c->uses[v->id] = e;
        c->tails[v->id] = e;
    }
    return 1;
}

/* step 2: the walk down from the outputs (Aesara's account_for) */
static gr_status gr__walk_down(gr__gctx *c, int n_out, gr_var *const *outs) {
    uint8_t *visited = (uint8_t *)gr__calloc(c->nv, 1);
    gr_var **stack = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (c->nv + 1u));
    int *next = (int *)GR_MALLOC(sizeof(int) * (c->nv + 1u));
    uint32_t sp = 0;
    int k;
    gr_status st = GR_OK;
    if (!visited || !stack || !next) { st = gr__error(c->g, GR_ERR_NOMEM, "%s: out of memory", c->fname); goto done; }
    for (k = 0; k < n_out; k++) {
        gr_var *o = outs[k];
        if (visited[o->id]) continue;
        visited[o->id] = 1;
        stack[sp] = o; next[sp] = 0; sp++;
        while (sp) {
            gr_var *v = stack[sp - 1];
            gr_node *node = gr__owner(v);
            gr_var *in;
            int i;
            if (!node || c->constant[v->id] || next[sp - 1] >= node->n_in) { sp--; continue; }
            i = next[sp - 1]++;
            if (!gr__connected(node, i, v->out_index)) continue;
            in = gr__in(node)[i];
            if (!gr__record(c, in, node, i)) { st = gr__error(c->g, GR_ERR_NOMEM, "%s: out of memory", c->fname); goto done; }
            if (!visited[in->id]) {
                visited[in->id] = 1;
                stack[sp] = in; next[sp] = 0; sp++;
            }
        }
    }
done:
    GR_FREE(visited); GR_FREE(stack); GR_FREE(next);
    return st;
}

/* step 3: what depends on some wrt (Aesara's visit), and the nodes whose grad rule is needed:
   those reading such a variable toward the cost. A variable's id is above its producer's inputs',
   so one sweep up the ids, from the lowest wrt, reaches what a walk up from wrt would. */
static void gr__walk_up(gr__gctx *c, int n_wrt, gr_var *const *wrt) {
    uint32_t lo = c->nv, v;
    int k;
    for (k = 0; k < n_wrt; k++) {
        gr_var *w = wrt[k];
        if (!c->uses[w->id]) continue;
        c->reached[w->id] = 1;
        if (w->id < lo) lo = w->id;
    }
    for (v = lo; v < c->nv; v++) {
        uint32_t e;
        if (!c->reached[v]) continue;
        for (e = c->uses[v]; e; e = GR__USE(c, e)->next) {
            const gr__use *u = GR__USE(c, e);
            gr_node *node = c->g->nodes[u->node];
            int j;
            c->in_s[u->node] = 1;                     /* a node reading a reached variable: its rule is needed */
            for (j = 0; j < node->n_out; j++) {
                const gr_var *o = gr__out(node)[j];
                if (gr__connected(node, (int)u->pos, j) && c->uses[o->id]) c->reached[o->id] = 1;
            }
        }
    }
}

/* ---- terms and totals ------------------------------------------------------------------------ */

static gr_var *gr__total(gr__gctx *c, gr_var *v);

/* "yes" (1), "no" (0) or "maybe" (-1), as Aesara's _is_zero */
static int gr__is_zero(const gr_var *t) {
    if (t->kind == GR__VK_DISC) return 1;
    if (t->kind == GR__VK_NULL) return 0;
    if (gr__owner(t) && (gr__flags_of(gr__owner(t)->op) & GR__OPF_FILL)) t = gr__in(gr__owner(t))[0];   /* a fill: its value */
    if (t->kind == GR__VK_CONST) {
        const gr_array *a = (const gr_array *)gr__ext(t);
        int64_t i;
        for (i = 0; i < a->size; i++) if (gr_array_get(a, i) != 0) return 0;
        return 1;
    }
    return -1;
}

/* the grad rule of node on the output gradients og: ig[i] the term of input i (null "not
   implemented" ones for the connected inputs of an op without a grad rule) */
static gr_status gr__node_rule(gr__gctx *c, gr_node *node, gr_var *const *og, gr_var **ig, const uint8_t *iconn) {
    gr_graph *g = c->g;
    gr_status before = g->status, st;                /* an error left from earlier calls is not this rule's */
    int i, ni = node->n_in;
    for (i = 0; i < ni; i++) ig[i] = NULL;
    if (!node->op->grad) {
        for (i = 0; i < ni; i++) {
            ig[i] = iconn[i] ? gr_grad_not_implemented(node, i, gr__in(node)[i], "(the op has no grad rule)") : gr_disconnected_like(gr__in(node)[i]);
            if (!ig[i]) return g->status;
        }
        return GR_OK;
    }
    if (node->op->grad == gr__ew_grad && ni <= 8) {   /* built-in elementwise: no terms for inputs off the path */
        uint8_t skip[8];
        for (i = 0; i < ni; i++) skip[i] = (uint8_t)!(gr__in(node)[i]->id < c->nv && c->reached[gr__in(node)[i]->id]);
        st = gr__ew_grad_some(node, og, ig, skip);
    } else if ((gr__flags_of(node->op) & GR__OPF_GRAPHOP) && (*(gr__graphop *const *)gr__params(node))->grad_some) {
        uint8_t *skip = (uint8_t *)gr__arena_alloc(&c->scratch, (size_t)ni + 1);   /* the same, for an op made of a graph */
        if (!skip) return gr__error(g, GR_ERR_NOMEM, "%s: out of memory", c->fname);
        for (i = 0; i < ni; i++) skip[i] = (uint8_t)!(gr__in(node)[i]->id < c->nv && c->reached[gr__in(node)[i]->id]);
        st = (*(gr__graphop *const *)gr__params(node))->grad_some(node, og, ig, skip);
    } else st = node->op->grad(node, og, ig);
    if (st != GR_OK || (before == GR_OK && g->status != GR_OK)) {
        if (g->status == GR_OK) gr__error(g, st, "%s: the grad rule of %s failed (%s)", c->fname, gr__on(node->op).s, gr_status_string(st));
        return st != GR_OK ? st : g->status;
    }
    return GR_OK;
}

/* the terms of a grad rule checked against the op contract: a term for every input (a null
   gradient reaching an input wins over the rule's term), float and of the input's ndim, zero where
   only integer-valued outputs are reached, disconnected exactly where the connection pattern says
   so (an op without a pattern gets a warning only) */
static gr_status gr__node_terms_check(gr__gctx *c, gr_node *node, gr_var *const *og, gr_var **ig, const uint8_t *onan,
                                      const uint8_t *iconn, const uint8_t *only_int) {
    gr_graph *g = c->g;
    int i, j, ni = node->n_in, no = node->n_out;
    for (i = 0; i < ni; i++) {
        gr_var *t = ig[i], *x = gr__in(node)[i];
        if (!t)
            return gr__error(g, GR_ERR_TYPE, "%s: the grad rule of %s returned NULL for input %d (%s); return gr_disconnected_like(x), "
                             "zeros, or a null gradient instead", c->fname, gr__on(node->op).s, i, gr__d(x).s);
        for (j = 0; j < no; j++)                     /* null gradients poison what they reach */
            if (onan[j] && gr__connected(node, i, j) && t->kind != GR__VK_DISC) ig[i] = t = og[j];
        if (t->kind == GR__VK_OUT || t->kind == GR__VK_CONST || t->kind == GR__VK_INPUT || t->kind == GR__VK_SHARED) {
            if (!gr__is_float(t->dtype))
                return gr__error(g, GR_ERR_TYPE, "%s: the grad rule of %s illegally returned an integer-valued variable "
                                 "(input %d, dtype %s)", c->fname, gr__on(node->op).s, i, gr_dtype_name((gr_dtype)t->dtype));
            if (t->ndim != x->ndim)
                return gr__error(g, GR_ERR_TYPE, "%s: the grad rule of %s returned a term with %d dimensions for input %d (%s), "
                                 "but %d are required", c->fname, gr__on(node->op).s, t->ndim, i, gr__d(x).s, x->ndim);
        }
        if (iconn[i] && only_int[i] && !gr__is_marker(t) && gr__is_zero(t) == 0)   /* null terms are allowed there */
            return gr__error(g, GR_ERR_VALUE, "%s: the grad rule of %s returned a nonzero gradient for input %d (%s), which only "
                             "reaches integer-valued outputs", c->fname, gr__on(node->op).s, i, gr__d(x).s);
        if (t->kind != GR__VK_DISC && !iconn[i])
            return gr__error(g, GR_ERR_TYPE, "%s: the grad rule of %s returned a gradient for input %d (%s), but its connection "
                             "pattern says the input is disconnected: return gr_disconnected_like(x)", c->fname, gr__on(node->op).s, i, gr__d(x).s);
        if (t->kind == GR__VK_DISC && iconn[i]) {
            if (gr__has_pattern(node))
                return gr__error(g, GR_ERR_TYPE, "%s: the grad rule of %s returned a disconnected gradient for input %d (%s), "
                                 "but its connection pattern connects it", c->fname, gr__on(node->op).s, i, gr__d(x).s);
            gr__log(g, "%s: the grad rule of %s returned a disconnected gradient for input %d (%s); give the op a connection "
                    "pattern saying so", c->fname, gr__on(node->op).s, i, gr__d(x).s);
        }
    }
    return GR_OK;
}

/* step 4 for one node: its output gradients, then its grad rule and the checks of its terms; the
   shortcuts skip the rule when nothing, or only null gradients, flow back */
static gr_status gr__node_terms(gr__gctx *c, gr_node *node) {
    gr_graph *g = c->g;
    int ni = node->n_in, no = node->n_out, i, j, any_in = 0, all_nan = 1, first_nan = -1;
    gr_status st;
    gr_var **og = (gr_var **)gr__arena_alloc(&c->scratch, sizeof(gr_var *) * (size_t)(no + ni + 1)), **ig;
    uint8_t flags_stack[64], *oconn, *onan, *oint, *iconn, *only_nan, *only_int;
    uint8_t *fl = flags_stack;
    if (!og) return gr__error(g, GR_ERR_NOMEM, "%s: out of memory", c->fname);
    ig = og + no;
    if (3 * no + 3 * ni > 64) {
        fl = (uint8_t *)gr__arena_alloc(&c->scratch, (size_t)(3 * no + 3 * ni));
        if (!fl) return gr__error(g, GR_ERR_NOMEM, "%s: out of memory", c->fname);
    }
    oconn = fl; onan = oconn + no; oint = onan + no; iconn = oint + no; only_nan = iconn + ni; only_int = only_nan + ni;
    for (j = 0; j < no; j++) {
        og[j] = gr__total(c, gr__out(node)[j]);
        if (!og[j]) return g->status != GR_OK ? g->status : GR_ERR_NOMEM;
        oconn[j] = og[j]->kind != GR__VK_DISC;
        onan[j] = og[j]->kind == GR__VK_NULL;
        oint[j] = !gr__is_float(gr__out(node)[j]->dtype);
        if (onan[j] && first_nan < 0) first_nan = j;
    }
    if (c->vreg) {                                   /* its region: where its outputs' gradients come from */
        int32_t r = -1;
        for (j = 0; j < no; j++)
            if (oconn[j]) r = gr__region_lca(c->regs, r, c->vreg[gr__out(node)[j]->id] >= 0 ? c->vreg[gr__out(node)[j]->id] : 0);
        c->nreg[node->id] = r < 0 ? 0 : r;
    }
    for (i = 0; i < ni; i++) {
        int conn = 0, nonnan = 0, nonint = 0;
        for (j = 0; j < no; j++) {
            if (!gr__connected(node, i, j) || !oconn[j]) continue;
            conn = 1;
            if (!onan[j]) nonnan = 1;
            if (!oint[j]) nonint = 1;
        }
        iconn[i] = (uint8_t)conn;
        only_nan[i] = (uint8_t)!nonnan;
        only_int[i] = (uint8_t)!nonint;
        if (conn) any_in = 1;
        if (!only_nan[i]) all_nan = 0;
    }
    c->terms[node->id] = ig;
    if (!any_in) {                                   /* shortcut A: nothing flows back */
        for (i = 0; i < ni; i++) if (!(ig[i] = gr_disconnected_like(gr__in(node)[i]))) return g->status;
        return GR_OK;
    }
    if (all_nan) {                                   /* shortcut B: only null gradients flow back */
        for (i = 0; i < ni; i++) {
            ig[i] = iconn[i] ? og[first_nan] : gr_disconnected_like(gr__in(node)[i]);
            if (!ig[i]) return g->status;
        }
        return GR_OK;
    }
    for (j = 0; j < no; j++)                         /* keep float32 graphs float32 */
        if (oconn[j] && !onan[j] && !oint[j] && og[j]->dtype != gr__out(node)[j]->dtype) {
            og[j] = gr_cast(og[j], (gr_dtype)gr__out(node)[j]->dtype);
            if (!og[j]) return g->status;
        }
    if ((st = gr__node_rule(c, node, og, ig, iconn)) != GR_OK) return st;
    return gr__node_terms_check(c, node, og, ig, onan, iconn, only_int);
}

/* the region of a use: its node's, or the side of a conditional that reads it there */
static int32_t gr__use_region(gr__gctx *c, const gr__use *u) {
    const gr_node *node = c->g->nodes[u->node];
    int32_t r = c->nreg[u->node], s;
    if (!(gr__flags_of(node->op) & GR__OPF_LAZY) || u->pos == 0) return r;
    s = gr__region_get(&c->regs, &c->n_regs, &c->cap_regs, r, gr__in(node)[0], (int)u->pos <= (node->n_in - 1) / 2);
    if (s < 0) gr__error(c->g, GR_ERR_NOMEM, "%s: out of memory", c->fname);
    return s;
}

/* term t for v, valid in region `from`, made valid in region `to` (an enclosing one): zero where a
   side between them is not taken */
static gr_var *gr__region_leave(gr__gctx *c, gr_var *t, gr_var *v, int32_t from, int32_t to) {
    gr_var *z = NULL;
    int32_t r;
    if (from < 0) return NULL;
    for (r = from; t && r != to && r > 0; r = c->regs[r].parent) {
        gr_var *a, *b, *res = NULL;
        if (!z && !(z = gr__fill_like(v, t->dtype, 0.0))) return NULL;
        a = c->regs[r].side ? t : z;
        b = c->regs[r].side ? z : t;
        if (gr_ifelse(c->regs[r].cond, 1, &a, &b, &res) != GR_OK) return NULL;
        t = res;
    }
    return t;
}

/* the total gradient of an original variable (Aesara's access_grad: the sum of its terms, left to right) */
static gr_var *gr__total(gr__gctx *c, gr_var *v) {
    gr_var *null_term = NULL, *sum = NULL, *t;
    uint32_t e;
    if (c->total[v->id]) return c->total[v->id];
    if (!gr__in_map(c, v)) return c->total[v->id] = gr_disconnected_like(v);
    if (c->vreg) {                                   /* v's region: where its uses are */
        int32_t r = -1;
        for (e = c->uses[v->id]; e; e = GR__USE(c, e)->next) {
            int32_t ur = gr__use_region(c, GR__USE(c, e));
            if (ur < 0) return NULL;
            r = gr__region_lca(c->regs, r, ur);
        }
        c->vreg[v->id] = r < 0 ? 0 : r;
    }
    for (e = c->uses[v->id]; e; e = GR__USE(c, e)->next) {
        const gr__use *u = GR__USE(c, e);
        gr_var **terms = c->terms[u->node];
        if (!terms) {
            gr__error(c->g, GR_ERR_VALUE, "%s: internal order error at %s", c->fname, gr__on(c->g->nodes[u->node]->op).s);
            return NULL;
        }
        t = terms[u->pos];
        if (c->vreg && !gr__is_marker(t) && !(t = gr__region_leave(c, t, v, gr__use_region(c, u), c->vreg[v->id]))) return NULL;
        if (t->kind == GR__VK_NULL) { if (!null_term) null_term = t; }
        else if (t->kind != GR__VK_DISC) {
            sum = sum ? gr_add(sum, t) : t;
            if (!sum) return NULL;
        }
    }
    t = null_term ? null_term : sum ? sum : gr_disconnected_like(v);
    if (t && c->add_names && t == sum && t->id >= c->nv && c->cost && gr__vname(c->cost) && gr__vname(v)) {
        char name[256];
        snprintf(name, sizeof name, "(d%.120s/d%.120s)", gr__vname(c->cost), gr__vname(v));
        gr_var_set_name(t, name);
    }
    return c->total[v->id] = t;
}

/* ---- gr_grad --------------------------------------------------------------------------------- */

static void gr__warn_disconnected(gr_graph *g, const char *fname, const gr_var *v) {
    gr__log(g, "%s was asked to compute the gradient with respect to a variable that is not part of the computational "
            "graph of the cost, or is used only by a non-differentiable operator: %s", fname, gr__d(v).s);
}

/* the disconnected policy for v; GR_OK unless it raises */
static gr_status gr__on_disconnected(gr_graph *g, const char *fname, int policy, const gr_var *v) {
    if (policy == GR_IGNORE) return GR_OK;
    if (policy == GR_WARN) { gr__warn_disconnected(g, fname, v); return GR_OK; }
    return gr__error(g, GR_ERR_DISCONNECTED_INPUT, "%s: %s is not part of the computational graph of the cost, or is used "
                     "only by a non-differentiable operator", fname, gr__d(v).s);
}

/* the graph of the first non-NULL variable argument */
static gr_graph *gr__driver_graph(gr_var *cost, int n_wrt, gr_var *const *wrt, const gr_grad_opts *o) {
    int i;
    if (cost) return cost->graph;
    for (i = 0; wrt && i < n_wrt; i++) if (wrt[i]) return wrt[i]->graph;
    for (i = 0; o->consider_constant && i < o->n_consider_constant; i++) if (o->consider_constant[i]) return o->consider_constant[i]->graph;
    for (i = 0; o->known_vars && i < o->n_known; i++) if (o->known_vars[i]) return o->known_vars[i]->graph;
    for (i = 0; o->known_grads && i < o->n_known; i++) if (o->known_grads[i]) return o->known_grads[i]->graph;
    return NULL;
}

/* the arguments of gr__grad: counts, NULL entries, policies, graphs, the cost's type, and the dtype
   and ndim of the known gradients; GR_OK or the error recorded */
static gr_status gr__grad_check(gr_graph *g, const char *fname, gr_var *cost, int n_wrt, gr_var *const *wrt, gr_var **grads,
                                const gr_grad_opts *opts) {
    const gr_grad_opts o = *opts;
    int i;
    if (n_wrt < 0 || (n_wrt > 0 && (!wrt || !grads)))
        return gr__error(g, GR_ERR_VALUE, "%s: %s", fname, n_wrt < 0 ? "n_wrt is negative" : !wrt ? "wrt is NULL" : "grads is NULL");
    if (o.n_known < 0 || o.n_consider_constant < 0 || (o.n_known > 0 && (!o.known_vars || !o.known_grads)) ||
        (o.n_consider_constant > 0 && !o.consider_constant))
        return gr__error(g, GR_ERR_VALUE, "%s: known_vars/known_grads or consider_constant is NULL or has a negative count", fname);
    if ((unsigned)o.disconnected_inputs > GR_IGNORE || (unsigned)o.return_disconnected > GR_RETURN_DISCONNECTED ||
        (unsigned)o.null_gradients > GR_NULL_RETURN)
        return gr__error(g, GR_ERR_VALUE, "%s: invalid value for disconnected_inputs, return_disconnected or null_gradients", fname);
    if (!cost && o.n_known == 0)               /* (a cost that is NULL because its builder failed: that error) */
        return g->status != GR_OK ? g->status : gr__error(g, GR_ERR_VALUE, "%s: cost and known gradients can't both be NULL", fname);
    for (i = 0; i < n_wrt; i++) if (!wrt[i]) return gr__driver_null(g, fname, "wrt", i);
    for (i = 0; i < o.n_known; i++) if (!o.known_vars[i]) return gr__driver_null(g, fname, "known_vars", i);
    for (i = 0; i < o.n_known; i++) if (!o.known_grads[i]) return gr__driver_null(g, fname, "known_grads", i);
    for (i = 0; i < o.n_consider_constant; i++) if (!o.consider_constant[i]) return gr__driver_null(g, fname, "consider_constant", i);
    if (cost && cost->kind == GR__VK_NULL)
        return gr__error(g, GR_ERR_VALUE, "%s: can't differentiate a null cost; it is null because %s", fname, gr__null_reason(cost));
    if (cost && cost->ndim != 0)
        return gr__error(g, GR_ERR_TYPE, "%s: the cost must be a scalar; %s has %d dimensions", fname, gr__d(cost).s, cost->ndim);
    for (i = 0; i < n_wrt; i++)
        if (wrt[i]->graph != g) return gr__error(g, GR_ERR_VALUE, "%s: wrt[%d] (%s) belongs to another graph", fname, i, gr__d(wrt[i]).s);
    for (i = 0; i < o.n_consider_constant; i++)
        if (o.consider_constant[i]->graph != g)
            return gr__error(g, GR_ERR_VALUE, "%s: consider_constant[%d] (%s) belongs to another graph", fname, i,
                             gr__d(o.consider_constant[i]).s);
    for (i = 0; i < o.n_known; i++) {
        gr_var *kv = o.known_vars[i], *kg = o.known_grads[i];
        if (kv->graph != g || kg->graph != g)
            return gr__error(g, GR_ERR_VALUE, "%s: known gradient %d (%s) belongs to another graph", fname, i, gr__d(kv).s);
        if (!gr__is_marker(kg) && !gr__is_float(kg->dtype))
            return gr__error(g, GR_ERR_TYPE, "%s: gradients must always be null, disconnected, or float, but the known gradient "
                             "of %s is %s", fname, gr__d(kv).s, gr_dtype_name((gr_dtype)kg->dtype));
        if (!gr__is_marker(kg) && kg->ndim != kv->ndim)
            return gr__error(g, GR_ERR_TYPE, "%s: the known gradient of %s has %d dimensions, but %d are required", fname,
                             gr__d(kv).s, kg->ndim, kv->ndim);
    }
    return GR_OK;
}

/* step 4: the terms of every node whose rule is needed, consumers before producers (down the
   ids); the graph's progress callback hears "grad", counted in those nodes. A rule that calls
   gr_grad on this graph again is not heard (the callback is off meanwhile): one "grad" stage a call. */
static gr_status gr__all_terms(gr__gctx *c) {
    gr_graph *g = c->g;
    gr_progress_fn fn = g->progress;
    size_t total = 0, done = 0;
    uint32_t k;
    gr_status st = GR_OK;
    g->progress = NULL;
    if (fn)
        for (k = 0; k < c->nn; k++) total += c->in_s[k];
    gr__progress_to(fn, g->progress_user, "grad", 0, total);
    for (k = c->nn; k-- > 0 && st == GR_OK;) {
        if (!c->in_s[k]) continue;
        if ((st = gr__node_terms(c, g->nodes[k])) == GR_OK) gr__progress_to(fn, g->progress_user, "grad", ++done, total);
    }
    g->progress = fn;
    return st;
}

static gr_status gr__grad(const char *fname, gr_var *cost, int n_wrt, gr_var *const *wrt, gr_var **grads, const gr_grad_opts *opts) {
    gr_grad_opts o;
    gr__gctx c;
    gr_graph *g;
    gr_var **outs = NULL;
    uint32_t k;
    int i, n_outs = 0;
    gr_status st;
    if (opts) o = *opts; else memset(&o, 0, sizeof o);
    if (grads) for (i = 0; i < n_wrt; i++) grads[i] = NULL;
    g = gr__driver_graph(cost, n_wrt, wrt, &o);
    if (!g) return GR_ERR_VALUE;
    if ((st = gr__grad_check(g, fname, cost, n_wrt, wrt, grads, &o)) != GR_OK) return st;
    memset(&c, 0, sizeof c);
    c.g = g; c.fname = fname; c.nv = g->n_vars; c.nn = g->n_nodes; c.cost = cost; c.add_names = !o.no_names;
    c.uses = (uint32_t *)gr__calloc(c.nv, sizeof(uint32_t));
    c.tails = (uint32_t *)gr__calloc(c.nv, sizeof(uint32_t));
    c.reached = (uint8_t *)gr__calloc(c.nv, 1);
    c.constant = (uint8_t *)gr__calloc(c.nv, 1);
    c.in_s = (uint8_t *)gr__calloc(c.nn, 1);
    c.total = (gr_var **)gr__calloc(c.nv, sizeof(gr_var *));
    c.terms = (gr_var ***)gr__calloc(c.nn, sizeof(gr_var **));
    outs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(o.n_known + 1));
    if (c.nn < UINT32_MAX / 4u) gr__reserve((void **)&c.use, &c.cap_use, 2u * c.nn + 64u, sizeof(gr__use));   /* (a hint) */
    if (!c.uses || !c.tails || !c.reached || !c.constant || !c.in_s || !c.total || !c.terms || !outs) {
        st = gr__error(g, GR_ERR_NOMEM, "%s: out of memory", fname);
        goto done;
    }
    for (i = 0; i < o.n_consider_constant; i++) c.constant[o.consider_constant[i]->id] = 1;
    /* 1. seeds: ones for the cost (float; the cost's dtype if float), then the known gradients */
    if (cost) {
        outs[n_outs++] = cost;
        c.total[cost->id] = gr__scalar_const(g, gr__grad_dtype(cost), 1.0, 0);
        if (!c.total[cost->id]) { st = g->status; goto done; }
    }
    for (i = 0; i < o.n_known; i++) {
        outs[n_outs++] = o.known_vars[i];
        c.total[o.known_vars[i]->id] = o.known_grads[i];
    }
    /* 2, 3. connectivity */
    if ((st = gr__walk_down(&c, n_outs, outs)) != GR_OK) goto done;
    gr__walk_up(&c, n_wrt, wrt);                    /* (marks in_s too) */
    for (k = 0; k < c.nn && !c.vreg; k++)           /* conditionals: their regions are tracked */
        if (c.in_s[k] && (gr__flags_of(g->nodes[k]->op) & GR__OPF_LAZY)) {
            uint32_t v;
            c.vreg = (int32_t *)GR_MALLOC(sizeof(int32_t) * (c.nv + 1u));
            c.nreg = (int32_t *)gr__calloc(c.nn + 1u, sizeof(int32_t));
            if (!c.vreg || !c.nreg || gr__region_get(&c.regs, &c.n_regs, &c.cap_regs, -1, NULL, 0) != 0) {
                st = gr__error(g, GR_ERR_NOMEM, "%s: out of memory", fname);
                goto done;
            }
            for (v = 0; v < c.nv; v++) c.vreg[v] = -1;
        }
    /* wrt that do not reach the cost: the disconnected_inputs policy */
    for (i = 0; i < n_wrt; i++) {
        gr_var *w = wrt[i];
        if (gr__in_map(&c, w) || c.total[w->id]) continue;
        if ((st = gr__on_disconnected(g, fname, o.disconnected_inputs, w)) != GR_OK) goto done;
        if (!(c.total[w->id] = gr_disconnected_like(w))) { st = g->status; goto done; }
    }
    /* 4. every needed grad rule, consumers before producers (down the ids) */
    if ((st = gr__all_terms(&c)) != GR_OK) goto done;
    /* 5. totals and the policies (null_gradients, disconnected_inputs, return_disconnected) */
    for (i = 0; i < n_wrt; i++) {
        gr_var *t = gr__total(&c, wrt[i]);
        if (t && c.vreg && !gr__is_marker(t) && c.vreg[wrt[i]->id] > 0)   /* what the caller gets is valid everywhere */
            t = gr__region_leave(&c, t, wrt[i], c.vreg[wrt[i]->id], 0);
        if (!t) { st = g->status != GR_OK ? g->status : GR_ERR_NOMEM; goto done; }
        if (t->kind == GR__VK_NULL && o.null_gradients == GR_NULL_RAISE) {
            st = gr__error(g, GR_ERR_NULL_GRAD, "%s encountered a null gradient for %s: %s", fname, gr__d(wrt[i]).s, gr__null_reason(t));
            goto done;
        }
        if (t->kind == GR__VK_DISC) {
            if ((st = gr__on_disconnected(g, fname, o.disconnected_inputs, wrt[i])) != GR_OK) goto done;
            if (o.return_disconnected == GR_RETURN_ZERO) t = gr__zeros_grad(wrt[i]);
            else if (o.return_disconnected == GR_RETURN_NONE) t = NULL;
            if (!t && o.return_disconnected != GR_RETURN_NONE) { st = g->status; goto done; }
        }
        grads[i] = t;
    }
done:
    if (st != GR_OK) for (i = 0; i < n_wrt; i++) grads[i] = NULL;
    gr__arena_free(&c.scratch);
    GR_FREE(c.use); GR_FREE(c.uses); GR_FREE(c.tails); GR_FREE(c.reached); GR_FREE(c.constant); GR_FREE(c.in_s); GR_FREE(c.total); GR_FREE(c.terms);
    GR_FREE(c.regs); GR_FREE(c.vreg); GR_FREE(c.nreg);
    GR_FREE(outs);
    return st;
}

GR_API gr_status gr_grad(gr_var *cost, int n_wrt, gr_var *const *wrt, gr_var **grads, const gr_grad_opts *opts) {
    return gr__grad("gr_grad", cost, n_wrt, wrt, grads, opts);
}

GR_API gr_var *gr_grad1(gr_var *cost, gr_var *wrt) {
    gr_var *out = NULL;
    if (!cost || !wrt) return NULL;
    gr__grad("gr_grad1", cost, 1, &wrt, &out, NULL);
    return out;
}

/* ---- gr_lop: sum_i eval_points[i] . df[i]/dwrt ----------------------------------------------- */

GR_API gr_status gr_lop(int n_f, gr_var *const *f, int n_wrt, gr_var *const *wrt, gr_var *const *eval_points,
                        gr_var **out, const gr_grad_opts *opts) {
    gr_grad_opts o;
    gr_graph *g = NULL;
    int i;
    if (out) for (i = 0; i < n_wrt; i++) out[i] = NULL;
    for (i = 0; f && i < n_f && !g; i++) if (f[i]) g = f[i]->graph;
    for (i = 0; wrt && i < n_wrt && !g; i++) if (wrt[i]) g = wrt[i]->graph;
    for (i = 0; eval_points && i < n_f && !g; i++) if (eval_points[i]) g = eval_points[i]->graph;
    if (!g) return GR_ERR_VALUE;
    if (n_f < 1 || !f || !eval_points)
        return gr__error(g, GR_ERR_VALUE, "gr_lop: %s", n_f < 1 ? "needs at least one f" : !f ? "f is NULL" : "eval_points is NULL");
    for (i = 0; i < n_f; i++) if (!f[i]) return gr__driver_null(g, "gr_lop", "f", i);
    for (i = 0; i < n_f; i++) if (!eval_points[i]) return gr__driver_null(g, "gr_lop", "eval_points", i);
    for (i = 0; i < n_f; i++) {
        if (eval_points[i]->ndim != f[i]->ndim)
            return gr__error(g, GR_ERR_TYPE, "gr_lop: eval point %d has %d dimensions but f[%d] (%s) has %d", i,
                             eval_points[i]->ndim, i, gr__d(f[i]).s, f[i]->ndim);
    }
    if (opts) o = *opts; else memset(&o, 0, sizeof o);
    o.known_vars = f;
    o.known_grads = eval_points;
    o.n_known = n_f;
    o.null_gradients = GR_NULL_RAISE;
    o.no_names = 1;
    return gr__grad("gr_lop", NULL, n_wrt, wrt, out, &o);
}

/* ---- gr_subgraph_grad ------------------------------------------------------------------------ */

GR_API gr_status gr_subgraph_grad(int n_wrt, gr_var *const *wrt, int n_end, gr_var *const *end, int n_start,
                                  gr_var *const *start_vars, gr_var *const *start_grads, gr_var *cost,
                                  gr_var **wrt_grads, gr_var **end_grads) {
    gr_graph *g = cost ? cost->graph : NULL;
    gr_var **params = NULL, **from_start = NULL, **from_cost = NULL;
    gr_grad_opts o;
    int i, n = n_wrt + n_end;
    gr_status st = GR_OK;
    if (wrt_grads) for (i = 0; i < n_wrt; i++) wrt_grads[i] = NULL;
    if (end_grads) for (i = 0; i < n_end; i++) end_grads[i] = NULL;
    for (i = 0; !g && wrt && i < n_wrt; i++) if (wrt[i]) g = wrt[i]->graph;
    for (i = 0; !g && end && i < n_end; i++) if (end[i]) g = end[i]->graph;
    for (i = 0; !g && start_vars && i < n_start; i++) if (start_vars[i]) g = start_vars[i]->graph;
    for (i = 0; !g && start_grads && i < n_start; i++) if (start_grads[i]) g = start_grads[i]->graph;
    if (!g) return GR_ERR_VALUE;
    if (!cost && n_start <= 0)
        return g->status != GR_OK ? g->status : gr__error(g, GR_ERR_VALUE, "gr_subgraph_grad: cost or start must be given");
    if (n_wrt < 0 || n_end < 0 || n_start < 0 || (n_wrt && (!wrt || !wrt_grads)) || (n_end && (!end || !end_grads)) ||
        (n_start && (!start_vars || !start_grads)))
        return gr__error(g, GR_ERR_VALUE, "gr_subgraph_grad: a NULL array or a negative count");
    for (i = 0; i < n_wrt; i++) if (!wrt[i]) return gr__driver_null(g, "gr_subgraph_grad", "wrt", i);
    for (i = 0; i < n_end; i++) if (!end[i]) return gr__driver_null(g, "gr_subgraph_grad", "end", i);
    for (i = 0; i < n_start; i++) if (!start_vars[i]) return gr__driver_null(g, "gr_subgraph_grad", "start", i);
    for (i = 0; i < n_start; i++) if (!start_grads[i]) return gr__driver_null(g, "gr_subgraph_grad", "start_grads", i);
    params = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(n + 1));
    from_start = (gr_var **)gr__calloc((size_t)n + 1, sizeof(gr_var *));
    from_cost = (gr_var **)gr__calloc((size_t)n + 1, sizeof(gr_var *));
    if (!params || !from_start || !from_cost) { st = gr__error(g, GR_ERR_NOMEM, "gr_subgraph_grad: out of memory"); goto done; }
    for (i = 0; i < n_wrt; i++) params[i] = wrt[i];
    for (i = 0; i < n_end; i++) params[n_wrt + i] = end[i];
    memset(&o, 0, sizeof o);
    o.consider_constant = end;
    o.n_consider_constant = n_end;
    o.disconnected_inputs = GR_IGNORE;
    if (n_start > 0) {
        o.known_vars = start_vars;
        o.known_grads = start_grads;
        o.n_known = n_start;
        if ((st = gr__grad("gr_subgraph_grad", NULL, n, params, from_start, &o)) != GR_OK) goto done;
        o.known_vars = NULL; o.known_grads = NULL; o.n_known = 0;
    }
    if (cost && (st = gr__grad("gr_subgraph_grad", cost, n, params, from_cost, &o)) != GR_OK) goto done;
    for (i = 0; i < n; i++) {
        gr_var *t = from_start[i] && from_cost[i] ? gr_add(from_start[i], from_cost[i]) : from_start[i] ? from_start[i] : from_cost[i];
        if (!t) { st = g->status != GR_OK ? g->status : GR_ERR_VALUE; goto done; }
        if (i < n_wrt) wrt_grads[i] = t; else end_grads[i - n_wrt] = t;
    }
done:
    if (st != GR_OK) {
        for (i = 0; wrt_grads && i < n_wrt; i++) wrt_grads[i] = NULL;
        for (i = 0; end_grads && i < n_end; i++) end_grads[i] = NULL;
    }
    GR_FREE(params); GR_FREE(from_start); GR_FREE(from_cost);
    return st;
}
