/* ops/graphop.c: ops made of graphs (gr_op_from_graph, after Aesara's OpFromGraph).

   gr_op_from_graph copies the part of the user's graph that the outputs need into a graph of its
   own (the op's gr__gop_def, counted: every graph and compiled function applying the op holds a
   reference, gr_op_free drops the caller's). Shared variables read there become inputs of that
   inner graph too (implicit inputs): a node applying the op takes the operands, then the shared
   variables themselves, so that their current value is read at every call and gr_grad with
   respect to one reaches through the node. Ops made of graphs met in the copy are copied as nodes,
   or, when inlined, replaced by their own inner nodes: an inner graph never holds an inlined op.

   Inputs of an OpFromGraph node:  the operands (n_in), then the shared variables read (n_sh)
   Outputs:                        the inner graph's outputs (n_out)
   Shapes: every output's shape comes from the inner graph's shape rules on the operands' shapes
   (nothing runs); an inner graph holding a loop or a conditional gives shapes only by running (the
   dynamic variant, gr__op_OpFromGraphDyn).

   Running: not inlined, each compiled function compiles the inner graph once, shared by the nodes
   applying the op (OpFromGraph's runtime state); inlined (opts->inline_graph), gr_function puts the
   inner nodes in place of the node before its rewrites (gr__gop_expand).
   Derivatives: a user's gradient and R-op rules (overrides) are called on the node; otherwise the
   gradient is another op made of a graph, the inner graph's vector-Jacobian product (inputs: the
   operands and shared variables, then one seed per float output), and the R-op likewise (the
   operands and shared variables, then one tangent per float input); both are made on first use
   and kept by the op. With a gradient override alone the R-op is its double pullback. */

#ifndef GR_NO_GRAPHOP                  /* ops/table.h, op families: the whole file */

typedef struct gr__gop_def gr__gop_def;
typedef struct gr__gop_handle { gr_op_def op; gr__gop_def *def; } gr__gop_handle;   /* op first: the user's pointer */

struct gr__gop_def {
    gr__graphop head;                    /* first: counted; the connection pattern (n_in + n_sh) x n_out */
    gr__gop_handle handle;               /* what gr_op_from_graph returns */
    gr_graph *ig;                        /* the inner graph */
    int n_in, n_sh, n_out;
    gr_var **bin, **bout;                /* in ig: n_in + n_sh inputs, n_out outputs */
    gr_node **order;                     /* the inner nodes the outputs need, in order */
    uint32_t n_order;
    gr__storage **sh;                    /* the shared variables read (a reference each) */
    gr_var **sh_var; uint32_t *sh_id;    /* per shared variable: the one the last application read, and its
                                            id (checked against the graph before it is read again) */
    int inline_graph, dynamic;
    gr_graph_op_rule grad, rop;
    void *grad_user, *rop_user;
    gr__gop_def *gdef, *rdef;            /* the derived gradient and R-op ops, made on first use */
    int *g_at;                           /* per input: its gradient's output of gdef; -1 none, -2 null */
    int *r_at;                           /* per output: its tangent's output of rdef; -1 none */
    int g_made, r_made;
    char name[64];
};

typedef struct gr__gop_fn { int refs; gr_fn *f; } gr__gop_fn;   /* one compiled inner graph, shared */
typedef struct gr__gop_rt {
    gr__gop_fn *fn;
    const gr_array **res;                /* the inner function's results */
    void **buf; size_t *cap;             /* the dynamic variant's outputs */
} gr__gop_rt;
typedef struct gr__gop_params { gr__gop_def *def; gr__gop_rt *rt; } gr__gop_params;

static gr__gop_def *gr__gdef(const gr_node *node) { return ((const gr__gop_params *)gr__params(node))->def; }
static gr__gop_rt *gr__grt(const gr_node *node) { return ((const gr__gop_params *)gr__params(node))->rt; }

/* the variant of the row whose shapes are known only by running (an inner loop): the row's rules
   and code, with DYNSHAPE */
static const struct gr__builtin gr__builtin_OpFromGraphDyn = { GR__OP_OpFromGraph, GR__OPF_GRAPHOP_RUNTIME | GR__OPF_DYNSHAPE,
                                                                gr__none_alias, gr__OpFromGraph_batch,
                                                                GR__EMIT_RULE(OpFromGraph) };
static const gr_op_def gr__op_OpFromGraphDyn = { "OpFromGraph", -1, -1, gr__OpFromGraph_infer, gr__OpFromGraph_shape, NULL,
                                                 gr__OpFromGraph_perform, gr__OpFromGraph_grad, gr__OpFromGraph_rop,
                                                 &gr__builtin_OpFromGraphDyn };
/* what a handle carries: it is no node's op (gr_apply makes the node) */
static gr_status gr__gop_handle_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)in; (void)out;
    return gr_node_error(node, GR_ERR_VALUE, "an op made of a graph runs as an OpFromGraph node");
}
static const struct gr__builtin gr__gop_handle_builtin = { GR__OP_OpFromGraph, GR__OPF_GRAPHOP, gr__none_alias, gr__map_batch, NULL };

static gr_status gr__rewrite_node(gr__rewriter *rw, const gr_node *node, gr_var **ins, gr_var **outs);
static gr_status gr__vectorize(gr_graph *g, int n_seed, gr_var *const *seed, gr_var *const *seed_b, const uint8_t *seed_isb,
                               int n, gr_var *const *roots, gr_var **out, uint8_t *out_b);
static gr_status gr__rop_by_pullback(const gr_node *node, gr_var *const *ev, gr_var **orop);
static gr_status gr__fn_out_shapes(gr_fn *f, const gr_array *const *inputs, gr_array *const *out);
static gr_var *gr__gop_leaf(gr_graph *g, gr__gop_def *d, gr_var *x, gr_var **map, int *cap_sh);

static void gr__gop_destroy(gr__graphop *o) {
    gr__gop_def *d = (gr__gop_def *)o;
    int k;
    gr_graph_free(d->ig);
    for (k = 0; d->sh && k < d->n_sh; k++) gr__storage_release(d->sh[k]);
    if (d->gdef && --d->gdef->head.refs == 0) d->gdef->head.destroy(&d->gdef->head);
    if (d->rdef && --d->rdef->head.refs == 0) d->rdef->head.destroy(&d->rdef->head);
    GR_FREE(d->head.conn);
    GR_FREE(d->bin); GR_FREE(d->bout); GR_FREE(d->order); GR_FREE(d->sh); GR_FREE(d->g_at); GR_FREE(d->r_at);
    GR_FREE(d->sh_var); GR_FREE(d->sh_id);
    GR_FREE(d);
}

GR_API void gr_op_free(gr_op_def *op) {
    gr__gop_def *d;
    if (!op || op->builtin != &gr__gop_handle_builtin) return;
    d = ((gr__gop_handle *)op)->def;
    if (--d->head.refs == 0) d->head.destroy(&d->head);
}

/* the inner graph under its node (src/print.c) */
static void gr__gop_print(gr__printer *p, const gr__graphop *o) {
    const gr__gop_def *d = (const gr__gop_def *)o;
    gr__print_inner(p, "graph", d->n_in + d->n_sh, d->bin, d->n_out, d->bout, d->n_sh ? "the last inputs: shared variables" : NULL);
}

/* ---- copying the inner graph --------------------------------------------------------------------- */

/* d's inner nodes made again on ins (n_in + n_sh variables): in dst (rw NULL), or through the
   rewriter of a compiled function (gr__rewrite_node: its rewrites see the inner nodes). out: the
   n_out outputs. Errors are recorded on dst (rw->cg). */
static gr_status gr__gop_clone(const gr__gop_def *d, gr_graph *dst, gr__rewriter *rw, gr_var *const *ins, gr_var **out) {
    gr_graph *ig = d->ig;
    gr_var **map = (gr_var **)gr__calloc((size_t)ig->n_vars + 1, sizeof(gr_var *)), **xs = NULL, **ys = NULL;
    int i, j, cap = 0;
    uint32_t k;
    gr_status st = GR_OK;
    if (rw) dst = rw->cg;
    if (!map) return gr__error(dst, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
    for (i = 0; i < d->n_in + d->n_sh; i++) map[d->bin[i]->id] = ins[i];
#define GR__GOP_MAP(x) (map[(x)->id] ? map[(x)->id] : (x)->kind == GR__VK_CONST ? \
    (map[(x)->id] = gr__constant(dst, (const gr_array *)gr__ext(x), (x)->flags)) : NULL)
    for (k = 0; k < d->n_order && st == GR_OK; k++) {
        gr_node *node = d->order[k];
        if (node->n_in > cap || node->n_out > cap) {
            cap = (node->n_in > node->n_out ? node->n_in : node->n_out) + 8;
            GR_FREE(xs); GR_FREE(ys);
            xs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)cap);
            ys = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)cap);
            if (!xs || !ys) { st = gr__error(dst, GR_ERR_NOMEM, "op '%s': out of memory", d->name); break; }
        }
        for (i = 0; i < node->n_in; i++) if (!(xs[i] = GR__GOP_MAP(gr__in(node)[i]))) break;
        if (i < node->n_in) { st = dst->status != GR_OK ? dst->status : gr__error(dst, GR_ERR_NOMEM, "op '%s': out of memory", d->name); break; }
        st = rw ? gr__rewrite_node(rw, node, xs, ys)
                : gr__make_node_n(dst, node->op, gr__params(node), node->params_size, node->n_in, xs, node->n_out, ys);
        for (j = 0; st == GR_OK && j < node->n_out; j++) map[gr__out(node)[j]->id] = ys[j];
    }
    for (j = 0; st == GR_OK && j < d->n_out; j++)
        if (!(out[j] = GR__GOP_MAP(d->bout[j]))) st = dst->status != GR_OK ? dst->status : gr__error(dst, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
#undef GR__GOP_MAP
    if (st != GR_OK && dst->status == GR_OK) gr__error(dst, st, "op '%s': copying its graph failed", d->name);
    GR_FREE(map); GR_FREE(xs); GR_FREE(ys);
    return st;
}

/* gr_function, inlining: the node's inner nodes in its place (rewritten as they are built) */
static gr_status gr__gop_expand(gr__rewriter *rw, const gr_node *node, gr_var *const *ins, gr_var **outs) {
    return gr__gop_clone(gr__gdef(node), NULL, rw, ins, outs);
}

/* which inputs reach which outputs in the inner graph (through each node's own pattern) */
static gr_status gr__gop_pattern(gr__gop_def *d, const unsigned char *user) {
    gr_graph *ig = d->ig;
    int n_all = d->n_in + d->n_sh, i, j, b;
    uint32_t k;
    unsigned char *reach = (unsigned char *)gr__calloc((size_t)ig->n_vars * (size_t)n_all + 1, 1);
    unsigned char *conn = (unsigned char *)gr__calloc((size_t)n_all * (size_t)d->n_out + 1, 1);
    if (!reach || !conn) { GR_FREE(reach); GR_FREE(conn); return GR_ERR_NOMEM; }
    for (b = 0; b < n_all; b++) reach[(size_t)d->bin[b]->id * (size_t)n_all + (size_t)b] = 1;
    for (k = 0; k < d->n_order; k++) {
        gr_node *node = d->order[k];
        int o;
        for (o = 0; o < node->n_out; o++)
            for (i = 0; i < node->n_in; i++) {
                const unsigned char *src = reach + (size_t)gr__in(node)[i]->id * (size_t)n_all;
                unsigned char *dst = reach + (size_t)gr__out(node)[o]->id * (size_t)n_all;
                if (!gr__connected(node, i, o)) continue;
                for (b = 0; b < n_all; b++) dst[b] |= src[b];
            }
    }
    for (j = 0; j < d->n_out; j++)
        for (b = 0; b < n_all; b++) conn[b * d->n_out + j] = reach[(size_t)d->bout[j]->id * (size_t)n_all + (size_t)b];
    if (user)                                        /* the user's pattern for the operands */
        for (i = 0; i < d->n_in; i++)
            for (j = 0; j < d->n_out; j++) conn[i * d->n_out + j] = user[i * d->n_out + j] != 0;
    GR_FREE(reach);
    d->head.conn = conn;
    return GR_OK;
}

/* the variable of g standing for shared variable k of d: the one the last application read when it
   is g's (its slot in g holds it), else the one g has, else a new one */
static gr_var *gr__gop_shared_in(gr_graph *g, gr__gop_def *d, int k) {
    gr__storage *s = d->sh[k];
    const char *name = gr__vname(d->bin[d->n_in + k]);
    uint32_t i = d->sh_id[k] - g->var_base;
    gr_var *v;
    if (d->sh_var[k] && d->sh_id[k] >= g->var_base && i < g->n_vars && g->vars[i] == d->sh_var[k] &&
        d->sh_var[k]->kind == GR__VK_SHARED && gr__ext(d->sh_var[k]) == (void *)s)
        return d->sh_var[k];
    for (i = 0, v = NULL; i < g->n_vars && !v; i++)
        if (g->vars[i] && g->vars[i]->kind == GR__VK_SHARED && gr__ext(g->vars[i]) == (void *)s) v = g->vars[i];
    if (!v) {
        if (!gr__grow((void **)&g->stores, &g->cap_stores, g->n_stores, sizeof(void *))) return gr__fail(g, GR_ERR_NOMEM, "out of memory");
        v = gr__new_var(g, s->value->dtype, s->value->ndim, s->value->shape, GR__VK_SHARED);
        if (!v) return NULL;
        v->u.ext = s;
        s->refs++;
        g->stores[g->n_stores++] = s;
        if (name && !gr__set_name(g, v, name)) return NULL;
    }
    d->sh_var[k] = v;
    d->sh_id[k] = v->id;
    return v;
}

/* ---- gr_op_from_graph -------------------------------------------------------------------------------- */

/* the operands are free variables of g and the outputs values of g; else the error is recorded on g: 1 */
static int gr__gop_bad_args(gr_graph *g, const char *name, int n_in, gr_var *const *inputs, int n_out, gr_var *const *outputs) {
    int i, j;
    for (i = 0; i < n_in; i++) {
        gr_var *x = inputs[i];
        if (!x) { gr__error(g, GR_ERR_VALUE, "gr_op_from_graph '%s': input %d is NULL", name, i); return 1; }
        if (x->graph != g) { gr__error(g, GR_ERR_VALUE, "gr_op_from_graph '%s': input %d (%s) belongs to another graph", name, i, gr__d(x).s); return 1; }
        if (x->kind != GR__VK_INPUT) {
            gr__error(g, gr__is_marker(x) ? GR_ERR_TYPE : GR_ERR_VALUE, "gr_op_from_graph '%s': input %d (%s) is %s", name, i, gr__d(x).s,
                      x->kind == GR__VK_CONST ? "a constant; inputs are free variables (gr_tensor)" :
                      x->kind == GR__VK_SHARED ? "a shared variable; those are read as they are, without being inputs" :
                      x->kind == GR__VK_OUT ? "computed; inputs are free variables (gr_tensor)" : "a gradient marker, not a value");
            return 1;
        }
    }
    for (j = 0; j < n_out; j++) {
        gr_var *y = outputs[j];
        if (!y) { gr__error(g, GR_ERR_VALUE, "gr_op_from_graph '%s': output %d is NULL", name, j); return 1; }
        if (y->graph != g) { gr__error(g, GR_ERR_VALUE, "gr_op_from_graph '%s': output %d (%s) belongs to another graph", name, j, gr__d(y).s); return 1; }
        if (gr__is_marker(y)) { gr__error(g, GR_ERR_TYPE, "gr_op_from_graph '%s': output %d is a gradient marker, not a value", name, j); return 1; }
    }
    return 0;
}

/* d's description: its name, counts, rules and handle (the inner graph not made yet) */
static void gr__gop_describe(gr__gop_def *d, const char *name, int n_in, int n_out, const gr_graph_op_opts *opts) {
    d->head.refs = 1;
    d->head.destroy = gr__gop_destroy;
    d->head.name = d->name;
    d->head.print = gr__gop_print;
    if (opts && opts->inline_graph) d->head.expand = gr__gop_expand;
    snprintf(d->name, sizeof d->name, "%s", name);
    d->n_in = n_in;
    d->n_out = n_out;
    d->inline_graph = opts && opts->inline_graph;
    if (opts) { d->grad = opts->grad; d->grad_user = opts->grad_user; d->rop = opts->rop; d->rop_user = opts->rop_user; }
    d->handle.def = d;
    d->handle.op.name = d->name;
    d->handle.op.n_in = n_in;
    d->handle.op.n_out = n_out;
    d->handle.op.perform = gr__gop_handle_perform;
    d->handle.op.builtin = &gr__gop_handle_builtin;
}

/* the error of a failed copy into d->ig, recorded on g */
static gr_status gr__gop_copy_failed(gr_graph *g, const gr__gop_def *d, const char *name) {
    gr_status st = d->ig->status != GR_OK ? d->ig->status : GR_ERR_NOMEM;
    gr__error(g, st, "gr_op_from_graph '%s': copying the graph: %s", name, d->ig->message[0] ? d->ig->message : "out of memory");
    return st;
}

/* the nodes of g the outputs need (given: the operands, by variable id) copied into d->ig, then the
   inner outputs; map: g's variable id -> its counterpart (the operands' already there). Errors are
   recorded on g. */
static gr_status gr__gop_copy(gr_graph *g, gr__gop_def *d, const char *name, int n_out, gr_var *const *outputs, const uint8_t *given,
                              gr_var **map) {
    gr_node **order = NULL;
    uint32_t n_order = 0, k;
    gr_var **xs = NULL, **ys = NULL;
    int i, j, cap = 0, cap_sh = 0;
    gr_status st = GR_OK;
    if (gr__needed_in_order(g, n_out, outputs, given, &order, &n_order) != GR_OK) return g->status != GR_OK ? g->status : GR_ERR_NOMEM;
    /* a leaf's counterpart: an input, a constant, or the stand-in of a shared variable (a new
       input of the inner graph, after the operands) */
#define GR__GOP_LEAF(x) (map[(x)->id] ? map[(x)->id] : gr__gop_leaf(g, d, x, map, &cap_sh))
    for (k = 0; k < n_order; k++) {
        gr_node *node = order[k];
        if (node->n_in > cap || node->n_out > cap) {
            cap = (node->n_in > node->n_out ? node->n_in : node->n_out) + 8;
            GR_FREE(xs); GR_FREE(ys);
            xs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)cap);
            ys = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)cap);
            if (!xs || !ys) { st = gr__error(g, GR_ERR_NOMEM, "gr_op_from_graph '%s': out of memory", name); goto done; }
        }
        for (i = 0; i < node->n_in; i++) if (!(xs[i] = GR__GOP_LEAF(gr__in(node)[i]))) goto leaf_failed;
        if ((gr__flags_of(node->op) & GR__OPF_GRAPHOP) && (*(gr__graphop *const *)gr__params(node))->expand) {
            if (gr__gop_clone(gr__gdef(node), d->ig, NULL, xs, ys) != GR_OK) goto inner;   /* an inlined op: its nodes */
        } else if (gr__make_node_n(d->ig, node->op, gr__params(node), node->params_size, node->n_in, xs, node->n_out, ys) != GR_OK)
            goto inner;
        for (j = 0; j < node->n_out; j++) {
            gr_var *o = gr__out(node)[j];
            map[o->id] = ys[j];
            if (gr__vname(o) && !gr__vname(ys[j]) && ys[j]->graph == d->ig && !gr__set_name(d->ig, ys[j], gr__vname(o))) goto inner;
        }
    }
    for (j = 0; j < n_out; j++) if (!(d->bout[j] = GR__GOP_LEAF(outputs[j]))) goto leaf_failed;
#undef GR__GOP_LEAF
    goto done;
leaf_failed:
    if (g->status != GR_OK) { st = g->status; goto done; }
inner:
    st = gr__gop_copy_failed(g, d, name);
done:
    GR_FREE(order); GR_FREE(xs); GR_FREE(ys);
    return st;
}

static gr_op_def *gr__gop_make(gr_graph *g, const char *name, int n_in, gr_var *const *inputs, int n_out, gr_var *const *outputs,
                               const gr_graph_op_opts *opts) {
    gr__gop_def *d = NULL;
    uint32_t k;
    uint8_t *given = NULL;
    gr_var **map = NULL;
    int i, j;
    if (!name) name = "op_from_graph";
    if (gr__gop_bad_args(g, name, n_in, inputs, n_out, outputs)) return NULL;
    given = (uint8_t *)gr__calloc((size_t)g->var_base + g->n_vars + 1, 1);      /* (by variable id) */
    map = (gr_var **)gr__calloc((size_t)g->var_base + g->n_vars + 1, sizeof(gr_var *));
    d = (gr__gop_def *)gr__calloc(1, sizeof(gr__gop_def));
    if (!given || !map || !d) goto nomem;
    for (i = 0; i < n_in; i++) {
        uint32_t id = inputs[i]->id;
        if (given[id]) {
            for (j = 0; inputs[j] != inputs[i]; j++) {}
            gr__error(g, GR_ERR_VALUE, "gr_op_from_graph '%s': %s is given twice (inputs %d and %d)", name, gr__d(inputs[i]).s, j, i);
            goto fail;
        }
        given[id] = 1;
    }
    gr__gop_describe(d, name, n_in, n_out, opts);
    d->ig = gr_graph_new();
    d->bin = (gr_var **)gr__calloc((size_t)n_in + 1, sizeof(gr_var *));
    d->bout = (gr_var **)gr__calloc((size_t)n_out + 1, sizeof(gr_var *));
    if (!d->ig || !d->bin || !d->bout) goto nomem;
    for (i = 0; i < n_in; i++) {
        gr_var *x = inputs[i];
        if (!(d->bin[i] = map[x->id] = gr__new_var(d->ig, x->dtype, x->ndim, gr__vshape(x), GR__VK_INPUT))) goto inner;
        if (gr__vname(x) && !gr__set_name(d->ig, d->bin[i], gr__vname(x))) goto inner;
    }
    if (gr__gop_copy(g, d, name, n_out, outputs, given, map) != GR_OK) goto fail;
    if (gr__needed_in_order(d->ig, n_out, d->bout, NULL, &d->order, &d->n_order) != GR_OK) goto inner;
    for (k = 0; k < d->n_order; k++)                 /* a loop's or a conditional's shapes: known by running */
        if (gr__flags_of(d->order[k]->op) & (GR__OPF_DYNSHAPE | GR__OPF_LAZY)) d->dynamic = 1;
    d->head.n_in = d->n_in + d->n_sh;
    d->head.n_out = n_out;
    d->g_at = (int *)gr__calloc((size_t)(d->n_in + d->n_sh) + 1, sizeof(int));
    d->r_at = (int *)gr__calloc((size_t)n_out + 1, sizeof(int));
    d->sh_var = (gr_var **)gr__calloc((size_t)d->n_sh + 1, sizeof(gr_var *));
    d->sh_id = (uint32_t *)gr__calloc((size_t)d->n_sh + 1, sizeof(uint32_t));
    if (!d->g_at || !d->r_at || !d->sh_var || !d->sh_id) goto nomem;
    if (gr__gop_pattern(d, opts ? opts->connection_pattern : NULL) != GR_OK) goto nomem;
    GR_FREE(given); GR_FREE(map);
    return &d->handle.op;
inner:
    gr__gop_copy_failed(g, d, name);
    goto fail;
nomem:
    gr__error(g, GR_ERR_NOMEM, "gr_op_from_graph '%s': out of memory", name);
fail:
    if (d) gr__gop_destroy(&d->head);
    GR_FREE(given); GR_FREE(map);
    return NULL;
}

/* the counterpart in d->ig of leaf x of g met in the copy (errors recorded on g; NULL) */
static gr_var *gr__gop_leaf(gr_graph *g, gr__gop_def *d, gr_var *x, gr_var **map, int *cap_sh) {
    gr_var *c;
    if (x->kind == GR__VK_CONST) c = gr__constant(d->ig, (const gr_array *)gr__ext(x), x->flags);
    else if (x->kind == GR__VK_SHARED) {             /* an implicit input, after the operands */
        int n = d->n_in + d->n_sh;
        int64_t shape[GR_MAX_NDIM];
        int a;
        if (d->n_sh + 1 > *cap_sh) {
            int ncap = 2 * *cap_sh + 4;
            gr__storage **sh = (gr__storage **)GR_REALLOC(d->sh, sizeof(gr__storage *) * (size_t)ncap);
            gr_var **bin;
            if (!sh) return gr__fail(g, GR_ERR_NOMEM, "gr_op_from_graph '%s': out of memory", d->name);
            d->sh = sh;
            bin = (gr_var **)GR_REALLOC(d->bin, sizeof(gr_var *) * (size_t)(d->n_in + ncap + 1));
            if (!bin) return gr__fail(g, GR_ERR_NOMEM, "gr_op_from_graph '%s': out of memory", d->name);
            d->bin = bin;
            *cap_sh = ncap;
        }
        for (a = 0; a < x->ndim; a++) shape[a] = -1;  /* (gr_shared_set may change its shape) */
        c = gr__new_var(d->ig, x->dtype, x->ndim, shape, GR__VK_INPUT);
        if (!c) return gr__fail(g, d->ig->status, "gr_op_from_graph '%s': %s", d->name, d->ig->message);
        if (gr__vname(x) && !gr__set_name(d->ig, c, gr__vname(x))) return gr__fail(g, GR_ERR_NOMEM, "gr_op_from_graph '%s': out of memory", d->name);
        d->bin[n] = c;
        d->sh[d->n_sh++] = (gr__storage *)gr__ext(x);
        ((gr__storage *)gr__ext(x))->refs++;
    } else if (x->kind == GR__VK_INPUT)
        return gr__fail(g, GR_ERR_VALUE, "gr_op_from_graph '%s': the outputs need %s, which is not among the inputs", d->name, gr__d(x).s);
    else return gr__fail(g, GR_ERR_TYPE, "gr_op_from_graph '%s': %s is a gradient marker, not a value", d->name, gr__d(x).s);
    if (!c) return gr__fail(g, d->ig->status != GR_OK ? d->ig->status : GR_ERR_NOMEM, "gr_op_from_graph '%s': out of memory", d->name);
    map[x->id] = c;
    return c;
}

GR_API gr_op_def *gr_op_from_graph(const char *name, int n_in, gr_var *const *inputs, int n_out, gr_var *const *outputs,
                                   const gr_graph_op_opts *opts) {
    gr_graph *g;
    if (!outputs || n_out < 1 || !outputs[0]) return NULL;
    g = outputs[0]->graph;
    if (n_in < 0 || (n_in > 0 && !inputs)) {
        gr__error(g, GR_ERR_VALUE, "gr_op_from_graph '%s': %s", name ? name : "op_from_graph", n_in < 0 ? "n_in is negative" : "inputs is NULL");
        return NULL;
    }
    return gr__gop_make(g, name, n_in, inputs, n_out, outputs, opts);
}

/* ---- applying it ---------------------------------------------------------------------------------- */

/* gr_apply of an op with the GRAPHOP flag (src/graph.c): a handle of gr_op_from_graph makes an
   OpFromGraph node on the operands and the shared variables read; other such ops are rows */
static gr_status gr__graph_op_apply(gr_graph *g, const gr_op_def *op, int n_in, gr_var *const *inputs, gr_var **outputs) {
    gr__gop_def *d;
    gr__gop_params prm;
    gr_var *stack[16], **ins = stack, *x;
    int i, a, n_all;
    gr_status st;
    if (op->builtin != &gr__gop_handle_builtin)
        return gr__error(g, GR_ERR_VALUE, "gr_apply: %s is a built-in op with parameters of its own; build it with its gr_ function", op->name);
    d = ((const gr__gop_handle *)op)->def;
    n_all = d->n_in + d->n_sh;
    if (n_all > 16 && !(ins = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)n_all))) return gr__error(g, GR_ERR_NOMEM, "gr_apply: out of memory");
    for (i = 0; i < n_in; i++) {
        const gr_var *b = d->bin[i];
        x = inputs[i];
        if (x->dtype != b->dtype && gr__is_weak(x) && x->ndim == b->ndim) x = gr__coerce(x, b->dtype);
        if (!x) { st = g->status; goto done; }
        if (x->dtype != b->dtype || x->ndim != b->ndim) {
            st = gr__error(g, GR_ERR_TYPE, "gr_apply: op '%s': operand %d (%s) is %s with %d dimensions; its input %s is %s with %d",
                           d->name, i, gr__d(x).s, gr_dtype_name((gr_dtype)x->dtype), x->ndim, gr__d(b).s, gr_dtype_name((gr_dtype)b->dtype), b->ndim);
            goto done;
        }
        for (a = 0; a < x->ndim; a++)
            if (gr__vshape(b)[a] >= 0 && gr__vshape(x)[a] >= 0 && gr__vshape(b)[a] != gr__vshape(x)[a]) {
                st = gr__error(g, GR_ERR_SHAPE, "gr_apply: op '%s': operand %d (%s) has the shape %s; its input %s has %s", d->name, i,
                               gr__d(x).s, gr__vs(x).s, gr__d(b).s, gr__vs(b).s);
                goto done;
            }
        ins[i] = x;
    }
    for (i = 0; i < d->n_sh; i++)
        if (!(ins[d->n_in + i] = gr__gop_shared_in(g, d, i))) { st = g->status != GR_OK ? g->status : GR_ERR_NOMEM; goto done; }
    memset(&prm, 0, sizeof prm);
    prm.def = d;
    st = gr__make_node_n(g, d->dynamic ? &gr__op_OpFromGraphDyn : &gr__op_OpFromGraph, &prm, sizeof prm, n_all, ins, d->n_out, outputs);
    if (st != GR_OK) for (i = 0; i < d->n_out; i++) outputs[i] = NULL;
done:
    if (ins != stack) GR_FREE(ins);
    return st;
}

/* ---- type and shape -------------------------------------------------------------------------------- */

/* the outputs' types: the inner graph's, with the static shapes it gives the operands' (the inner
   graph typed again on them when they know more: x - y of two (3,4) operands is (3,4)); a conflict
   between those shapes is GR_ERR_SHAPE */
static gr_status gr__OpFromGraph_infer(const gr_node *node, gr_type *out) {
    const gr__gop_def *d = gr__gdef(node);
    int j, a, i, more = 0;
    for (j = 0; j < d->n_out; j++) {
        const gr_var *b = d->bout[j];
        out[j].dtype = (gr_dtype)b->dtype;
        out[j].ndim = b->ndim;
        for (a = 0; a < b->ndim; a++) out[j].shape[a] = gr__vshape(b)[a];
    }
    for (i = 0; i < node->n_in && !more; i++)
        for (a = 0; a < d->bin[i]->ndim; a++)
            if (gr__vshape(d->bin[i])[a] < 0 && gr__vshape(gr__in(node)[i])[a] >= 0 && gr__in(node)[i]->kind != GR__VK_SHARED) more = 1;
    if (more) {
        gr_graph *sg = gr_graph_new();
        gr_var **x = (gr_var **)gr__calloc((size_t)(node->n_in + d->n_out) + 1, sizeof(gr_var *)), **y;
        gr_status st = sg && x ? GR_OK : GR_ERR_NOMEM;
        for (i = 0; st == GR_OK && i < node->n_in; i++) {
            const gr_var *v = gr__in(node)[i];
            int64_t shape[GR_MAX_NDIM];
            for (a = 0; a < v->ndim; a++) shape[a] = v->kind == GR__VK_SHARED ? gr__vshape(d->bin[i])[a] : gr__vshape(v)[a];
            if (!(x[i] = gr__new_var(sg, d->bin[i]->dtype, d->bin[i]->ndim, shape, GR__VK_INPUT))) st = GR_ERR_NOMEM;
        }
        if (st == GR_OK) {
            y = x + node->n_in;
            st = gr__gop_clone(d, sg, NULL, x, y);
            for (j = 0; st == GR_OK && j < d->n_out; j++)
                for (a = 0; a < y[j]->ndim; a++) out[j].shape[a] = gr__vshape(y[j])[a];
            if (st != GR_OK && st != GR_ERR_NOMEM)      /* (out of memory: the shapes above will do) */
                gr__error(node->graph, st, "op '%s': %s", d->name, sg->message);
        }
        gr_graph_free(sg);
        GR_FREE(x);
        if (st != GR_OK && st != GR_ERR_NOMEM) return st;
    }
    return GR_OK;
}

/* the inner graph compiled (errors recorded on the node's graph; NULL) */
static gr_fn *gr__gop_compile(const gr_node *node, int level) {
    gr__gop_def *d = gr__gdef(node);
    gr_fn_opts fo;
    gr_fn *f;
    memset(&fo, 0, sizeof fo);
    fo.optimize = (gr_optimize)level;
    f = gr_function(d->n_in + d->n_sh, d->bin, d->n_out, d->bout, &fo);
    if (!f) {
        gr__error(node->graph, d->ig->status != GR_OK ? d->ig->status : GR_ERR_NOMEM, "op '%s': compiling its graph: %s", d->name,
                  d->ig->message[0] ? d->ig->message : "out of memory");
        gr_graph_clear_error(d->ig);
    }
    return f;
}

/* the outputs' shapes by the inner graph's shape rules: nothing runs */
static gr_status gr__OpFromGraph_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__gop_rt *rt = gr__grt(node);
    gr_fn *f = rt && rt->fn ? rt->fn->f : NULL, *tmp = NULL;
    gr_status st;
    if (gr__gdef(node)->dynamic) return gr_node_error(node, GR_ERR_VALUE, "'%s': its shapes are known only by running it", gr__gdef(node)->name);
    if (!f && !(f = tmp = gr__gop_compile(node, GR_OPT_FULL))) return node->graph->status;
    st = gr__fn_out_shapes(f, in, out);
    if (st != GR_OK) gr_node_error(node, st, "'%s': %s", gr__gdef(node)->name, gr_fn_message(f));
    gr_fn_free(tmp);
    return st;
}

/* ---- running ------------------------------------------------------------------------------------------ */

/* a compiled function's state: the inner graph compiled once for every node applying the op */
static gr_status gr__OpFromGraph_runtime(gr_node *node, int level) {
    gr__gop_params *p = (gr__gop_params *)gr__params(node);
    gr__gop_def *d = p->def;
    gr_graph *cg = node->graph;
    gr__gop_rt *rt = (gr__gop_rt *)gr__calloc(1, sizeof(gr__gop_rt));
    uint32_t k;
    if (!rt) return gr__error(cg, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
    p->rt = rt;
    rt->res = (const gr_array **)gr__calloc((size_t)d->n_out + 1, sizeof(gr_array *));
    rt->buf = (void **)gr__calloc((size_t)d->n_out + 1, sizeof(void *));
    rt->cap = (size_t *)gr__calloc((size_t)d->n_out + 1, sizeof(size_t));
    if (!rt->res || !rt->buf || !rt->cap) return gr__error(cg, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
    for (k = 0; k < cg->n_nodes; k++) {             /* another node of this function applying the op */
        gr_node *o = cg->nodes[k];
        if (o != node && o->op->perform == gr__OpFromGraph_perform && gr__gdef(o) == d && gr__grt(o) && gr__grt(o)->fn) {
            rt->fn = gr__grt(o)->fn;
            rt->fn->refs++;
            return GR_OK;
        }
    }
    rt->fn = (gr__gop_fn *)gr__calloc(1, sizeof(gr__gop_fn));
    if (!rt->fn) return gr__error(cg, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
    rt->fn->refs = 1;
    rt->fn->f = gr__gop_compile(node, level);
    return rt->fn->f ? GR_OK : cg->status;
}
static void gr__OpFromGraph_release(gr_node *node) {
    gr__gop_params *p = (gr__gop_params *)gr__params(node);
    gr__gop_rt *rt = p->rt;
    int j;
    if (!rt) return;
    if (rt->fn && --rt->fn->refs == 0) { gr_fn_free(rt->fn->f); GR_FREE(rt->fn); }
    for (j = 0; rt->buf && j < p->def->n_out; j++) GR_FREE(rt->buf[j]);
    GR_FREE(rt->buf); GR_FREE(rt->cap); GR_FREE(rt->res);
    GR_FREE(rt);
    p->rt = NULL;
}
static gr_status gr__OpFromGraph_narrow(gr_node *node, const gr__readers *rd, gr_var **map) {
    (void)node; (void)rd; (void)map;
    return GR_OK;
}

static gr_status gr__OpFromGraph_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__gop_def *d = gr__gdef(node);
    gr__gop_rt *rt = gr__grt(node);
    gr_fn *f = rt && rt->fn ? rt->fn->f : NULL, *tmp = NULL;
    const gr_array *stack[8], **res = rt ? rt->res : stack;
    gr_status st;
    int j, a;
    if (!rt && d->n_out > 8) return gr_node_error(node, GR_ERR_VALUE, "'%s': runs in a compiled function only", d->name);
    if (!f && (d->dynamic || !(f = tmp = gr__gop_compile(node, GR_OPT_FULL))))
        return d->dynamic ? gr_node_error(node, GR_ERR_VALUE, "'%s': runs in a compiled function only", d->name) : node->graph->status;
    st = gr_call(f, in, res);
    if (st != GR_OK) { gr_node_error(node, st, "'%s': %s", d->name, gr_fn_message(f)); goto done; }
    for (j = 0; j < d->n_out; j++) {
        gr_array *o = out[j];
        size_t bytes = (size_t)res[j]->size * gr__dsize(res[j]->dtype);
        if (d->dynamic) {                        /* memory of its own (DYNSHAPE) */
            if (rt->cap[j] < bytes + 1) {
                void *b = GR_MALLOC(bytes + 64);
                if (!b) { st = gr_node_error(node, GR_ERR_NOMEM, "'%s': out of memory", d->name); goto done; }
                GR_FREE(rt->buf[j]);
                rt->buf[j] = b;
                rt->cap[j] = bytes + 64;
            }
            for (a = 0; a < o->ndim; a++) o->shape[a] = res[j]->shape[a];
            o->size = res[j]->size;
            o->data = rt->buf[j];
        } else
            for (a = 0; a < o->ndim; a++)
                if (o->shape[a] != res[j]->shape[a]) {
                    st = gr_node_error(node, GR_ERR_SHAPE, "'%s': output %d has the shape %s, not the %s its shape rule gave", d->name, j,
                                       gr__as(res[j]).s, gr__as(o).s);
                    goto done;
                }
        if (bytes) memcpy(o->data, res[j]->data, bytes);
    }
done:
    gr_fn_free(tmp);
    return st;
}

/* ---- derivatives ---------------------------------------------------------------------------------------- */

/* the derived op (gradient: which 0, R-op: which 1) of d, made once in a graph of its own: the
   inner graph copied on fresh inputs, then the driver (gr_lop / gr_rop) on it. Errors recorded on g. */
static gr_status gr__gop_derived(gr__gop_def *d, gr_graph *g, int which) {
    int n_all = d->n_in + d->n_sh, n_extra = 0, n_res = 0, i, j;
    gr_graph *dg = gr_graph_new();
    /* x: the op's inputs (inner inputs, then seeds or tangents); y: the copied outputs; s: seeds or
       tangents of the outputs; f: what is differentiated, then the op's outputs; w: wrt; ts: the
       tangents of wrt, or the gradients */
    gr_var **x = (gr_var **)gr__calloc((size_t)(5 * n_all + 4 * d->n_out) + 1, sizeof(gr_var *)), **y, **s, **f, **w, **ts;
    gr_status st = GR_ERR_NOMEM;
    char name[80];
    if (!dg || !x) goto nomem;
    y = x + 2 * n_all + d->n_out; s = y + d->n_out; f = s + d->n_out; w = f + d->n_out + n_all; ts = w + n_all;
    for (i = 0; i < n_all; i++)
        if (!(x[i] = gr__new_var(dg, d->bin[i]->dtype, d->bin[i]->ndim, gr__vshape(d->bin[i]), GR__VK_INPUT))) goto inner;
    if (gr__gop_clone(d, dg, NULL, x, y) != GR_OK) goto inner;
    if (which == 0) {                                /* seeds of the float outputs; gradients of the float inputs */
        gr_grad_opts o;
        int nf = 0, nw = 0;
        for (j = 0; j < d->n_out; j++)
            if (gr__is_float(y[j]->dtype)) {
                f[nf] = y[j];
                if (!(s[nf] = gr__new_var(dg, y[j]->dtype, y[j]->ndim, gr__vshape(y[j]), GR__VK_INPUT))) goto inner;
                x[n_all + nf] = s[nf];
                nf++;
            }
        n_extra = nf;
        for (i = 0; i < n_all; i++) { d->g_at[i] = -1; if (gr__is_float(x[i]->dtype)) w[nw++] = x[i]; }
        if (nf > 0 && nw > 0) {
            memset(&o, 0, sizeof o);
            o.disconnected_inputs = GR_IGNORE;
            o.return_disconnected = GR_RETURN_DISCONNECTED;
            o.null_gradients = GR_NULL_RETURN;
            o.no_names = 1;
            if (gr_lop(nf, f, nw, w, s, ts, &o) != GR_OK) goto inner;
            for (i = 0, nw = 0; i < n_all; i++) {
                gr_var *t;
                if (!gr__is_float(x[i]->dtype)) continue;
                t = ts[nw++];
                if (gr_is_disconnected(t)) continue;
                if (gr_is_null(t)) { d->g_at[i] = -2; continue; }
                d->g_at[i] = n_res;
                f[n_res++] = t;                      /* (f's earlier entries are read no more) */
            }
        }
    } else {                                         /* tangents of the float inputs; tangents of the outputs */
        gr_rop_opts o;
        int nw = 0;
        for (i = 0; i < n_all; i++)
            if (gr__is_float(x[i]->dtype)) {
                w[nw] = x[i];
                if (!(ts[nw] = gr__new_var(dg, x[i]->dtype, x[i]->ndim, gr__vshape(x[i]), GR__VK_INPUT))) goto inner;
                x[n_all + nw] = ts[nw];
                nw++;
            }
        n_extra = nw;
        for (j = 0; j < d->n_out; j++) d->r_at[j] = -1;
        if (nw > 0) {
            memset(&o, 0, sizeof o);
            o.disconnected_outputs = GR_IGNORE;
            o.return_disconnected = GR_RETURN_DISCONNECTED;
            if (gr_rop(d->n_out, y, nw, w, ts, s, &o) != GR_OK) goto inner;
            for (j = 0; j < d->n_out; j++) {
                if (!gr__is_float(y[j]->dtype) || gr__is_marker(s[j])) continue;
                d->r_at[j] = n_res;
                f[n_res++] = s[j];
            }
        }
    }
    if (n_res > 0) {
        gr_graph_op_opts oo;
        gr_op_def *op;
        memset(&oo, 0, sizeof oo);
        oo.inline_graph = d->inline_graph;
        snprintf(name, sizeof name, "%s_%s", d->name, which ? "rop" : "grad");
        op = gr__gop_make(dg, name, n_all + n_extra, x, n_res, f, &oo);
        if (!op) goto inner;
        if (which) d->rdef = ((gr__gop_handle *)op)->def; else d->gdef = ((gr__gop_handle *)op)->def;
    }
    if (which) d->r_made = 1; else d->g_made = 1;
    st = GR_OK;
    goto done;
inner:
    st = dg->status != GR_OK ? dg->status : GR_ERR_NOMEM;
    gr__error(g, st, "op '%s': its %s from its graph: %s", d->name, which ? "R-op" : "gradient", dg->message[0] ? dg->message : "out of memory");
    goto done;
nomem:
    gr__error(g, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
done:
    gr_graph_free(dg);
    GR_FREE(x);
    return st;
}

/* a value for the user's rule's result for input or output v: checked, cast to the dtype wanted */
static gr_var *gr__gop_result(const gr_node *node, const char *what, int k, gr_var *r, gr_var *v, int dt) {
    gr_graph *g = node->graph;
    const gr__gop_def *d = gr__gdef(node);
    if (!r) return g->status != GR_OK ? NULL : gr__fail(g, GR_ERR_VALUE, "op '%s': its %s rule left result %d NULL", d->name, what, k);
    if (r->graph != g) return gr__fail(g, GR_ERR_VALUE, "op '%s': result %d of its %s rule belongs to another graph", d->name, k, what);
    if (gr__is_marker(r)) return r;
    if (r->ndim != v->ndim)
        return gr__fail(g, GR_ERR_TYPE, "op '%s': result %d of its %s rule has %d dimensions; %s has %d", d->name, k, what, r->ndim,
                        gr__d(v).s, v->ndim);
    if (!gr__is_float(r->dtype))
        return gr__fail(g, GR_ERR_TYPE, "op '%s': result %d of its %s rule is %s, not a float", d->name, k, what, gr_dtype_name((gr_dtype)r->dtype));
    return r->dtype == dt ? r : gr_cast(r, (gr_dtype)dt);
}

/* input i reaches an output whose gradient is not disconnected */
static int gr__gop_iconn(const gr_node *node, gr_var *const *og, int i) {
    int j;
    for (j = 0; j < node->n_out; j++) if (gr__connected(node, i, j) && !gr_is_disconnected(og[j])) return 1;
    return 0;
}

static gr_status gr__OpFromGraph_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr__gop_def *d = gr__gdef(node);
    gr_graph *g = node->graph;
    int n_all = node->n_in, i, j, ns = 0, from = d->grad ? d->n_in : 0;
    gr_var **res = (gr_var **)gr__calloc((size_t)(2 * n_all + d->n_out) + 1, sizeof(gr_var *)), **ins, **gout = NULL;
    gr_status st = GR_OK;
    if (!res) return gr__error(g, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
    ins = res + n_all;
    for (i = 0; i < n_all; i++) ig[i] = NULL;
    if (d->grad) {                                   /* the user's rule, for the operands */
        st = d->grad(d->grad_user, gr__in(node), gr__out(node), og, res);
        if (st != GR_OK) {
            if (g->status == GR_OK) gr__error(g, st, "op '%s': its gradient rule failed (%s)", d->name, gr_status_string(st));
            goto done;
        }
        for (i = 0; i < d->n_in; i++) {
            gr_var *x = gr__in(node)[i], *t = gr__gop_result(node, "gradient", i, res[i], x, gr__grad_dtype(x));
            if (!t) { st = g->status != GR_OK ? g->status : GR_ERR_NOMEM; goto done; }
            if (gr_is_disconnected(t) && gr__gop_iconn(node, og, i)) t = gr__zeros_grad(x);   /* connected: zeros */
            if (!(ig[i] = t)) { st = g->status; goto done; }
        }
    }
    for (i = from; i < n_all; i++) if (gr__gop_iconn(node, og, i)) break;
    if (i < n_all) {                                 /* the gradient from the inner graph */
        if (!d->g_made && (st = gr__gop_derived(d, g, 0)) != GR_OK) goto done;
        if (d->gdef) {
            for (i = 0; i < n_all; i++) ins[i] = gr__in(node)[i];
            for (j = 0; j < d->n_out; j++) {
                gr_var *y = gr__out(node)[j], *s = og[j];
                if (!gr__is_float(y->dtype)) continue;
                if (gr__is_marker(s)) s = gr__fill_like(y, y->dtype, 0.0);   /* (pytensor#723: zeros for an unused output) */
                else if (s->dtype != y->dtype) s = gr_cast(s, (gr_dtype)y->dtype);
                if (!s) { st = g->status; goto done; }
                ins[n_all + ns++] = s;
            }
            gout = (gr_var **)gr__calloc((size_t)d->gdef->n_out + 1, sizeof(gr_var *));
            if (!gout) { st = gr__error(g, GR_ERR_NOMEM, "op '%s': out of memory", d->name); goto done; }
            if ((st = gr__graph_op_apply(g, &d->gdef->handle.op, n_all + ns, ins, gout)) != GR_OK) goto done;
        }
    }
    for (i = from; i < n_all; i++) {
        gr_var *x = gr__in(node)[i];
        if (!gr__gop_iconn(node, og, i)) ig[i] = gr_disconnected_like(x);
        else if (d->g_at[i] >= 0 && gout) ig[i] = gout[d->g_at[i]];
        else if (d->g_at[i] == -2) ig[i] = gr_grad_not_implemented(node, i, x, "(an op of its graph has no gradient)");
        else ig[i] = gr__zeros_grad(x);
        if (!ig[i]) { st = g->status != GR_OK ? g->status : GR_ERR_NOMEM; goto done; }
    }
done:
    GR_FREE(res);
    GR_FREE(gout);
    return st;
}

/* orop[j] += the tangents from the inner graph, from the inputs that `use` marks (NULL: all) */
static gr_status gr__gop_rop_derived(const gr_node *node, gr_var *const *ev, const uint8_t *use, gr_var **orop) {
    gr__gop_def *d = gr__gdef(node);
    gr_graph *g = node->graph;
    int n_all = node->n_in, i, j, nt = 0;
    gr_var **ins, **rout;
    gr_status st;
    if (!d->r_made && (st = gr__gop_derived(d, g, 1)) != GR_OK) return st;
    if (!d->rdef) return GR_OK;
    ins = (gr_var **)gr__calloc((size_t)(2 * n_all + d->rdef->n_out) + 1, sizeof(gr_var *));
    if (!ins) return gr__error(g, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
    rout = ins + 2 * n_all;
    for (i = 0; i < n_all; i++) {
        gr_var *x = gr__in(node)[i], *t = ev[i];
        ins[i] = x;
        if (!gr__is_float(x->dtype)) continue;
        if (gr__is_marker(t) || (use && !use[i])) t = gr__fill_like(x, x->dtype, 0.0);
        else if (t->dtype != x->dtype) t = gr_cast(t, (gr_dtype)x->dtype);
        if (!t) { GR_FREE(ins); return g->status; }
        ins[n_all + nt++] = t;
    }
    st = gr__graph_op_apply(g, &d->rdef->handle.op, n_all + nt, ins, rout);
    for (j = 0; st == GR_OK && j < d->n_out; j++) {
        int any = 0;
        if (d->r_at[j] < 0) continue;
        for (i = 0; i < n_all; i++)
            if (gr__connected(node, i, j) && !gr__is_marker(ev[i]) && (!use || use[i]) && gr__is_float(gr__in(node)[i]->dtype)) any = 1;
        if (!any) continue;
        orop[j] = orop[j] ? gr_add(orop[j], rout[d->r_at[j]]) : rout[d->r_at[j]];
        if (!orop[j]) st = g->status;
    }
    GR_FREE(ins);
    return st;
}

static gr_status gr__OpFromGraph_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr__gop_def *d = gr__gdef(node);
    gr_graph *g = node->graph;
    int i, j, shared_ev = 0;
    gr_status st = GR_OK;
    for (j = 0; j < node->n_out; j++) orop[j] = NULL;
    if (!d->rop) return d->grad ? gr__rop_by_pullback(node, ev, orop) : gr__gop_rop_derived(node, ev, NULL, orop);
    {                                                /* the user's rule, for the operands */
        gr_var **res = (gr_var **)gr__calloc((size_t)d->n_out + 1, sizeof(gr_var *));
        if (!res) return gr__error(g, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
        st = d->rop(d->rop_user, gr__in(node), gr__out(node), ev, res);
        if (st != GR_OK && g->status == GR_OK) gr__error(g, st, "op '%s': its R-op rule failed (%s)", d->name, gr_status_string(st));
        for (j = 0; st == GR_OK && j < d->n_out; j++) {
            gr_var *y = gr__out(node)[j], *t = gr__gop_result(node, "R-op", j, res[j], y, y->dtype);
            if (!t) st = g->status != GR_OK ? g->status : GR_ERR_NOMEM;
            else orop[j] = gr__is_marker(t) || !gr__is_float(y->dtype) ? NULL : t;
        }
        GR_FREE(res);
        if (st != GR_OK) return st;
    }
    for (i = d->n_in; i < node->n_in; i++) if (!gr__is_marker(ev[i])) shared_ev = 1;
    if (shared_ev) {                                 /* the shared variables' part, from the inner graph */
        uint8_t *use = (uint8_t *)gr__calloc((size_t)node->n_in + 1, 1);
        if (!use) return gr__error(g, GR_ERR_NOMEM, "op '%s': out of memory", d->name);
        for (i = d->n_in; i < node->n_in; i++) use[i] = 1;
        st = gr__gop_rop_derived(node, ev, use, orop);
        GR_FREE(use);
    }
    return st;
}

/* ---- batching (Jacobians and Hessians through the op) ----------------------------------------------------

   The node rebuilt on operands of which those flagged gained a leading batch axis: an op made of the
   inner graph vectorised over those inputs (src/jacobian.c), every output batched (an output that
   does not read a batched input is broadcast along the batch axis). */
static gr_status gr__OpFromGraph_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr__gop_def *d = gr__gdef(node);
    gr_graph *g = node->graph, *bg = gr_graph_new();
    int n_all = node->n_in, i, j, first = -1;
    gr_var **x = (gr_var **)gr__calloc((size_t)(3 * n_all + 2 * d->n_out) + 1, sizeof(gr_var *)), **xb, **bi, **y, **yb;
    uint8_t *isb = (uint8_t *)gr__calloc((size_t)(n_all + d->n_out) + 1, 1), *yisb;
    gr_op_def *op = NULL;
    gr_status st = GR_ERR_NOMEM;
    if (!bg || !x || !isb) goto nomem;
    xb = x + n_all; bi = xb + n_all; y = bi + n_all; yb = y + d->n_out;
    yisb = isb + n_all;
    for (i = 0; i < n_all; i++) {
        int64_t shape[GR_MAX_NDIM + 1];
        int a;
        if (!(x[i] = gr__new_var(bg, d->bin[i]->dtype, d->bin[i]->ndim, gr__vshape(d->bin[i]), GR__VK_INPUT))) goto inner;
        isb[i] = batched[i] != 0;
        if (!isb[i]) { xb[i] = bi[i] = x[i]; continue; }
        if (first < 0) first = i;
        for (a = 0; a <= d->bin[i]->ndim && a < GR_MAX_NDIM; a++) shape[a] = -1;
        if (d->bin[i]->ndim + 1 > GR_MAX_NDIM) { st = gr__error(g, GR_ERR_VALUE, "gr_jacobian: a batched %s has too many dimensions", d->name); goto done; }
        if (!(xb[i] = bi[i] = gr__new_var(bg, d->bin[i]->dtype, d->bin[i]->ndim + 1, shape, GR__VK_INPUT))) goto inner;
    }
    if (gr__gop_clone(d, bg, NULL, x, y) != GR_OK) goto inner;
    if (gr__vectorize(bg, n_all, x, xb, isb, d->n_out, y, yb, yisb) != GR_OK) goto inner;
    for (j = 0; j < d->n_out; j++)
        if (!yisb[j] && !(yb[j] = first >= 0 ? gr__batch_like(yb[j], xb[first]) : NULL)) goto inner;
    {
        gr_graph_op_opts oo;
        char name[80];
        memset(&oo, 0, sizeof oo);
        oo.inline_graph = d->inline_graph;
        snprintf(name, sizeof name, "%s_batched", d->name);
        op = gr__gop_make(bg, name, n_all, bi, d->n_out, yb, &oo);
    }
    if (!op) goto inner;
    st = gr__graph_op_apply(g, op, n_all, in, out);
    goto done;
inner:
    st = bg->status != GR_OK ? bg->status : GR_ERR_NOMEM;
    gr__error(g, st, "gr_jacobian: batching op '%s': %s", d->name, bg->message[0] ? bg->message : "out of memory");
    goto done;
nomem:
    st = gr__error(g, GR_ERR_NOMEM, "gr_jacobian: batching op '%s': out of memory", d->name);
done:
    gr_op_free(op);
    gr_graph_free(bg);
    GR_FREE(x);
    GR_FREE(isb);
    return st;
}

/* ---- C code generation (gr_fn_emit_c) ------------------------------------------------------------------

   The inner graph's compiled function (the node's runtime state) is a static function of the emitted
   file (src/emit.c, gr__em_function), specialised to the operands' shapes, its work carved from the
   node's scratch; the node calls it. The derived gradient and R-op are ops made of graphs too. The
   dynamic variant (an inner conditional or loop) gives its shapes in the shape phase from the inner
   function's (gr__em_fn_shapes). */
static gr_status gr__OpFromGraph_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr__gop_def *d = gr__gdef(node);
    gr__gop_rt *rt = gr__grt(node);
    gr_fn *f = rt && rt->fn ? rt->fn->f : NULL;
    const char *name;
    size_t work;
    gr_status st = GR_OK;
    (void)out;
    if (!f) return gr__em_fail(e, GR_ERR_VALUE, "gr_fn_emit_c: op '%s' (OpFromGraph) has no compiled graph", d->name);
    if (gr__em_shaping(e)) {
        gr_array *shapes = (gr_array *)gr__calloc((size_t)node->n_out + 1, sizeof(gr_array));
        int j;
        if (!shapes) return gr__em_fail(e, GR_ERR_NOMEM, "gr_fn_emit_c: out of memory");
        if ((st = gr__em_fn_shapes(e, f, in, shapes)) == GR_OK)
            for (j = 0; j < node->n_out; j++) gr__em_set_shape(e, j, shapes[j].shape);
        GR_FREE(shapes);
        return st;
    }
    if (!(name = gr__em_function(e, f, in, &work))) return GR_ERR_VALUE;   /* (e's status says why) */
    gr__em_call(e, name, node->n_in, NULL, node->n_out, NULL, gr__em_scratch_n(e, work));
    return GR_OK;
}
#else /* GR_NO_GRAPHOP: gr_apply names this for an op flagged GRAPHOP (src/graph.c): only a loop is left,
         refused as in the full build */
static gr_status gr__graph_op_apply(gr_graph *g, const gr_op_def *op, int n_in, gr_var *const *inputs, gr_var **outputs) {
    (void)n_in; (void)inputs; (void)outputs;
    return gr__error(g, GR_ERR_VALUE, "gr_apply: %s is a built-in op with parameters of its own; build it with its gr_ function", op->name);
}
#endif /* GR_NO_GRAPHOP */
