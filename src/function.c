/* src/function.c: gr_function: copy, rewrite, fuse, compact and schedule (gr_call: src/call.c).

   A gr_fn owns a private graph holding a copy of what its outputs and updates need, rewritten
   (src/rewrite.c) and scheduled in a fixed order. Every variable the schedule touches has a slot:
   an array header whose data is the caller's (inputs), a shared storage's, a constant's, a view
   into another slot, or one of the plan's buffers. The plan is made at the first call and again
   only when some shape changes, so a steady-state call allocates nothing. */

enum gr__slot_kind { GR__SK_INPUT, GR__SK_CONST, GR__SK_SHARED, GR__SK_COMPUTED };

typedef struct gr__slot {
    gr_array arr;                /* dtype and ndim fixed; shape, size, data set per call or plan */
    gr_var  *var;                /* in the private graph */
    int64_t  last_use;           /* last step reading it; n_steps for outputs and update values */
    int64_t  producer;           /* the step computing it, -1 for leaves */
    int32_t  buf;                /* plan: its buffer, -1 if none (leaf or view) */
    int32_t  view_of;            /* plan: the slot whose memory it shares, -1 if none */
    int64_t  view_off;           /* byte offset into that slot's memory */
    uint8_t  kind, external;     /* external: its memory is not the function's (input, shared) */
} gr__slot;

typedef struct gr__buffer { void *data; size_t cap; } gr__buffer;

struct gr__cap_class { size_t cap; int32_t head; };   /* free buffers of one capacity (gr__fn_plan) */

struct gr_fn {
    gr_graph   *g;                        /* the private graph */
    int         n_in, n_out, n_upd;
    int32_t    *in_slot, *out_slot, *upd_slot;
    gr__storage **upd_store;
    gr_var    **upd_var;                  /* the update targets, in the private graph */
    int64_t     n_steps;
    gr_node   **steps;
    int32_t    *step_io;                  /* per step: slots of its inputs then of its outputs */
    int64_t    *step_io_at;
    const gr_array **io;                  /* per step: pointers to those slots' arrays, then to scratch */
    gr_array    scratch;                  /* the work memory of the steps that need some (GR_SCRATCH_OPS):
                                             one buffer, sized for the largest, kept across calls */
    gr__buffer  scratch_buf;
    int64_t     n_slots;
    gr__slot   *slots;
    /* the plan */
    int         planned;
    int         dynamic;                  /* a step's shapes are known only once it has run: gr_call
                                             plans step by step (src/call.c, gr__call_dynamic) */
    int32_t    *step_reg;                 /* with conditionals: each step's region (0: always run) */
    gr__region *regs;              /* the regions (gr__fn_regions); regs[0] is the function's */
    int32_t     n_regs;
    int8_t     *reg_on;                   /* per call: a region is on (1), off (0), not yet known (-1) */
    int64_t    *shape_cache;              /* every slot's shape at the last plan */
    int64_t    *shape_at;
    int32_t    *shared_slots;             /* the slots of shared variables (bound at every call) */
    int32_t     n_shared_slots;
    int         shape_pure;               /* every step's shape rule reads its inputs' shapes only (the
                                             library's ops but for a wrapper of another op): a call with
                                             the plan's leaf shapes skips them */
    gr__fprog  *scalar;                   /* set by the plan when the function is one Fused node of float64
                                             scalars: gr_call's shortest path (src/call.c, gr__call_scalar) */
    gr__buffer *bufs;  int32_t cap_bufs;      /* buffers are kept (never shrunk) across plans */
    int32_t    *plan_refs, *plan_next;    /* the planner's scratch, made with the schedule so that */
    size_t     *plan_caps;                /* replanning allocates only buffers that must grow */
    struct gr__cap_class *plan_cls;       /* the free buffers, by capacity (see gr__fn_plan) */
    int64_t    *plan_seen;                /* by slot: the step that last released it (read twice by a step) */
    gr_array   *out_copy;                 /* outputs whose memory is not the function's */
    gr__buffer *out_bufs;
    gr__buffer *stage;                    /* update values that must be copied before writing */
    uint8_t    *upd_staged;
    char        message[GR__MSG];
};

static gr_status gr__fn_error(gr_fn *f, gr_status code, const char *fmt, ...) GR__PRINTF(3, 4);
static gr_status gr__fn_error(gr_fn *f, gr_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
    GR__TRAP();
    return code;
}

/* ---- copying the needed subgraph into the private graph ----------------------------------- */

/* a copy of leaf v (an input, constant or shared variable) in cg */
static gr_var *gr__copy_leaf(gr_graph *cg, gr_var *v) {
    gr_var *c;
    if (v->kind == GR__VK_CONST) return gr__constant(cg, (const gr_array *)gr__ext(v), v->flags);
    if (v->kind == GR__VK_SHARED) {
        gr__storage *s = (gr__storage *)gr__ext(v);
        if (!gr__grow((void **)&cg->stores, &cg->cap_stores, cg->n_stores, sizeof(void *)))
            return gr__fail(cg, GR_ERR_NOMEM, "out of memory");
        c = gr__new_var(cg, v->dtype, v->ndim, gr__vshape(v), GR__VK_SHARED);
        if (!c) return NULL;
        c->u.ext = s;
        s->refs++;
        cg->stores[cg->n_stores++] = s;
    } else c = gr__new_var(cg, v->dtype, v->ndim, gr__vshape(v), GR__VK_INPUT);
    if (c && !gr__set_name(cg, c, gr__vname(v))) return NULL;
    return c;
}

GR_API void gr_fn_free(gr_fn *f) {
    int32_t i;
    int64_t k;
    if (!f) return;
    for (k = 0; f->steps && k < f->n_steps; k++)
        if (gr__flags_of(f->steps[k]->op) & GR__OPF_RUNTIME) gr__runtime_release(f->steps[k]);
    for (i = 0; f->bufs && i < f->cap_bufs; i++) GR_FREE(f->bufs[i].data);
    for (i = 0; f->out_bufs && i < f->n_out; i++) GR_FREE(f->out_bufs[i].data);
    for (i = 0; f->stage && i < f->n_upd; i++) GR_FREE(f->stage[i].data);
    GR_FREE(f->scratch_buf.data);
    GR_FREE(f->bufs); GR_FREE(f->out_bufs); GR_FREE(f->stage); GR_FREE(f->out_copy); GR_FREE(f->upd_staged);
    GR_FREE(f->in_slot); GR_FREE(f->out_slot); GR_FREE(f->upd_slot); GR_FREE(f->upd_store); GR_FREE(f->upd_var);
    GR_FREE(f->steps); GR_FREE(f->step_io); GR_FREE(f->step_io_at); GR_FREE((void *)f->io);
    GR_FREE(f->slots); GR_FREE(f->shape_cache); GR_FREE(f->shape_at); GR_FREE(f->shared_slots);
    GR_FREE(f->plan_refs); GR_FREE(f->plan_next); GR_FREE(f->plan_cls); GR_FREE(f->plan_caps); GR_FREE(f->plan_seen);
    GR_FREE(f->step_reg); GR_FREE(f->regs); GR_FREE(f->reg_on);
    gr_graph_free(f->g);
    GR_FREE(f);
}

/* checks the inputs, outputs and updates of gr_function, in that order (the first error is the
   one reported); seen (by variable id of g, zeroed; NULL when there is at most one input and one
   update) marks the inputs (bit 1) and update targets (bit 2) met so far, so that a repeat is found
   in one pass however many there are; the earlier position is looked up only then */
static gr_status gr__fn_check_args(gr_graph *g, int n_in, gr_var *const *inputs, int n_out, gr_var *const *outputs,
                                   int n_upd, const gr_update *updates, uint8_t *seen) {
    int i, j;
    for (i = 0; i < n_in; i++) {
        gr_var *v = inputs[i];
        if (!v) return gr__error(g, GR_ERR_VALUE, "gr_function: input %d is NULL", i);
        if (v->graph != g) return gr__error(g, GR_ERR_VALUE, "gr_function: input %d (%s) belongs to another graph", i, gr__d(v).s);
        if (v->kind != GR__VK_INPUT && v->kind != GR__VK_OUT)
            return gr__error(g, GR_ERR_VALUE, "gr_function: input %d (%s) is a %s; only free inputs and computed variables can be given",
                             i, gr__d(v).s, v->kind == GR__VK_CONST ? "constant" : v->kind == GR__VK_SHARED ? "shared variable" : "gradient marker");
        if (seen && (seen[v->id] & 1u)) {
            for (j = 0; inputs[j] != v; j++) {}
            return gr__error(g, GR_ERR_VALUE, "gr_function: %s is given twice (inputs %d and %d)", gr__d(v).s, j, i);
        }
        if (seen) seen[v->id] |= 1u;
    }
    for (i = 0; i < n_out; i++) {
        gr_var *v = outputs[i];
        if (!v) return gr__error(g, GR_ERR_VALUE, "gr_function: output %d is NULL", i);
        if (v->graph != g) return gr__error(g, GR_ERR_VALUE, "gr_function: output %d (%s) belongs to another graph", i, gr__d(v).s);
        if (v->kind == GR__VK_NULL)
            return gr__error(g, (gr_status)v->aux, "gr_function: output %d is a null gradient: %s", i, gr__ext(v) ? (const char *)gr__ext(v) : "");
        if (v->kind == GR__VK_DISC)
            return gr__error(g, GR_ERR_TYPE, "gr_function: output %d is a disconnected gradient marker, not a value", i);
    }
    for (i = 0; i < n_upd; i++) {
        const gr_update *u = &updates[i];
        if (!u->shared || !u->value) return gr__error(g, GR_ERR_VALUE, "gr_function: update %d has a NULL %s", i, u->shared ? "value" : "shared variable");
        if (u->shared->graph != g || u->value->graph != g)
            return gr__error(g, GR_ERR_VALUE, "gr_function: update %d (%s) belongs to another graph", i, gr__d(u->shared).s);
        if (u->shared->kind != GR__VK_SHARED)
            return gr__error(g, GR_ERR_VALUE, "gr_function: update %d targets %s, which is not a shared variable", i, gr__d(u->shared).s);
        if (gr__is_marker(u->value))
            return gr__error(g, u->value->kind == GR__VK_NULL ? (gr_status)u->value->aux : GR_ERR_TYPE,
                             "gr_function: the update of %s is a %s gradient marker", gr__d(u->shared).s,
                             u->value->kind == GR__VK_NULL ? "null" : "disconnected");
        if (u->value->ndim != u->shared->ndim || (u->value->dtype != u->shared->dtype && !gr__is_weak(u->value)))
            return gr__error(g, GR_ERR_TYPE, "gr_function: the update of %s (%s, %d-d) is %s with %d dimensions", gr__d(u->shared).s,
                             gr_dtype_name((gr_dtype)u->shared->dtype), u->shared->ndim, gr_dtype_name((gr_dtype)u->value->dtype), u->value->ndim);
        if (seen && (seen[u->shared->id] & 2u)) {
            for (j = 0; updates[j].shared != u->shared; j++) {}
            return gr__error(g, GR_ERR_VALUE, "gr_function: %s is updated twice (updates %d and %d)", gr__d(u->shared).s, j, i);
        }
        if (seen) seen[u->shared->id] |= 2u;
    }
    return GR_OK;
}

/* checks gr_function's arguments; returns the graph to report to (NULL when none is known) */
static gr_status gr__fn_check(int n_in, gr_var *const *inputs, int n_out, gr_var *const *outputs, const gr_fn_opts *opts,
                              gr_graph **gout) {
    gr_graph *g = NULL;
    uint8_t *seen = NULL;
    gr_status st;
    int i, n_upd = opts ? opts->n_updates : 0;
    for (i = 0; !g && outputs && i < n_out; i++) if (outputs[i]) g = outputs[i]->graph;
    for (i = 0; !g && inputs && i < n_in; i++) if (inputs[i]) g = inputs[i]->graph;
    for (i = 0; !g && opts && opts->updates && i < n_upd; i++) {
        if (opts->updates[i].shared) g = opts->updates[i].shared->graph;
        else if (opts->updates[i].value) g = opts->updates[i].value->graph;
    }
    *gout = g;
    if (!g) return GR_ERR_VALUE;
    if (n_in < 0 || n_out < 0 || n_upd < 0)
        return gr__error(g, GR_ERR_VALUE, "gr_function: negative count (n_in %d, n_out %d, n_updates %d)", n_in, n_out, n_upd);
    if (n_in > 0 && !inputs) return gr__error(g, GR_ERR_VALUE, "gr_function: inputs is NULL but n_in is %d", n_in);
    if (n_out > 0 && !outputs) return gr__error(g, GR_ERR_VALUE, "gr_function: outputs is NULL but n_out is %d", n_out);
    if (n_upd > 0 && !opts->updates) return gr__error(g, GR_ERR_VALUE, "gr_function: updates is NULL but n_updates is %d", n_upd);
    if ((n_in > 1 || n_upd > 1) && !(seen = (uint8_t *)gr__calloc((size_t)g->n_vars + 1u, 1)))
        return gr__error(g, GR_ERR_NOMEM, "gr_function: out of memory");
    st = gr__fn_check_args(g, n_in, inputs, n_out, outputs, n_upd, n_upd > 0 ? opts->updates : NULL, seen);
    GR_FREE(seen);
    return st;
}

/* v's counterpart in cg, for a leaf (a constant, a shared variable, a marker) met for the first time */
static gr_status gr__fn_copy_leaf(gr_graph *g, gr_graph *cg, gr__rewriter *rw, gr_var *v, gr_var **map) {
    if (v->kind == GR__VK_INPUT)
        return gr__error(g, GR_ERR_VALUE, "gr_function: %s is needed but is not among the function's inputs", gr__d(v).s);
    /* (rewritten, the function reads the source graph's leaf until gr__fn_compact copies it) */
    map[v->id] = rw->level == GR_OPT_FULL ? v : gr__copy_leaf(cg, v);
    return map[v->id] ? GR_OK : cg->status != GR_OK ? cg->status : GR_ERR_NOMEM;
}

/* adds node to rw->view, the function's nodes in a topological order, with its depth (read while its
   inputs are at hand, so that fusion orders by depth without visiting the nodes again). A view (a
   node whose output is always its input's memory) is as deep as its input: it is scheduled as soon
   as that is there, so a group that reads a view of a value computed before it can take in what
   reads the view */
static int gr__fn_view_add(gr__rewriter *rw, const gr_node *node) {
    gr__alias_fn al = gr__alias_of(node->op);
    uint32_t d = 0;
    int i;
    for (i = 0; i < node->n_in; i++) {
        const gr_var *x = gr__in(node)[i];
        if (gr__owner(x)) {                          /* (a producer outside the view counts as depth 0) */
            uint32_t dx = x->id < rw->cap_depth ? rw->depth[x->id] : 0;
            if (dx > d) d = dx;
        }
    }
    if (!al || al == gr__none_alias || al == gr__same_size_alias) d++;   /* a view: as deep as its input */
    for (i = 0; i < node->n_out; i++) {
        if (!gr__grow_fill((void **)&rw->depth, &rw->cap_depth, gr__out(node)[i]->id, sizeof(uint32_t), 0)) return 0;
        rw->depth[gr__out(node)[i]->id] = d;
    }
    if (!gr__grow((void **)&rw->view, &rw->cap_view, rw->n_view, sizeof(uint32_t)) ||
        !gr__grow((void **)&rw->view_depth, &rw->cap_view_depth, rw->n_view, sizeof(uint32_t)))
        return 0;
    rw->view_depth[rw->n_view] = d;
    rw->view[rw->n_view++] = node->id;
    return 1;
}

/* copies what the roots need into cg through the rewriter; map[v->id] is v's counterpart. Leaves
   are copied when first read, in the order of the schedule (deterministic). At GR_OPT_FULL a leaf,
   and a node the rewrites leave as it is, stand for themselves (no copy); rw->view lists the
   function's nodes in a topological order, and gr__fn_compact later copies those still needed. */
static gr_status gr__fn_copy(gr_graph *g, gr_graph *cg, gr__rewriter *rw, int n_in, gr_var *const *inputs, int n_roots,
                             gr_var *const *roots, gr_var **map) {
    uint8_t *given = (uint8_t *)gr__calloc(g->n_vars, 1);
    gr_node **order = NULL;
    uint32_t n_order = 0, k;
    gr_var *ins_stack[8], *outs_stack[8], **ins = ins_stack, **outs = outs_stack;
    int cap = 8, i, j;
    gr_status st;
    if (!given) return gr__error(g, GR_ERR_NOMEM, "out of memory");
    for (i = 0; i < n_in; i++) given[inputs[i]->id] = 1;
    st = gr__needed_in_order(g, n_roots, roots, given, &order, &n_order);
    if (st != GR_OK) { GR_FREE(given); return st; }
    if (rw->level == GR_OPT_FULL && n_order < UINT32_MAX / 4u) {
        /* room at once: the view and merging get a node or so per source node; the tables by
           variable id cover the source graph's ids, which the reused nodes keep */
        uint32_t nv = g->var_base + g->n_vars;
        if (!gr__reserve((void **)&rw->view, &rw->cap_view, n_order + 64u, sizeof(uint32_t)) ||
            !gr__reserve((void **)&rw->view_depth, &rw->cap_view_depth, n_order + 64u, sizeof(uint32_t)) ||
            !gr__reserve((void **)&rw->use_node, &rw->cap_use_node, n_order + 64u, sizeof(gr_node *)) ||
            !gr__reserve((void **)&rw->use_next, &rw->cap_use_next, n_order + 64u, sizeof(int32_t)) ||
            !gr__reserve_fill((void **)&rw->depth, &rw->cap_depth, nv, sizeof(uint32_t), 0) ||
            !gr__reserve_fill((void **)&rw->use_head, &rw->cap_use_head, nv, sizeof(int32_t), 0xFF) ||
            !gr__reserve_fill((void **)&rw->use_count, &rw->cap_use_count, nv, sizeof(uint32_t), 0)) {
            GR_FREE(given);
            GR_FREE(order);
            return gr__error(g, GR_ERR_NOMEM, "out of memory");
        }
    }
    for (i = 0; i < n_in; i++) {                     /* the function's inputs, in order */
        gr_var *c;
        if (rw->level == GR_OPT_FULL && inputs[i]->kind == GR__VK_INPUT) { map[inputs[i]->id] = inputs[i]; continue; }
        c = gr__new_var(cg, inputs[i]->dtype, inputs[i]->ndim, gr__vshape(inputs[i]), GR__VK_INPUT);
        if (!c) { st = GR_ERR_NOMEM; goto done; }
        if (!gr__set_name(cg, c, gr__vname(inputs[i]))) { st = GR_ERR_NOMEM; goto done; }
        map[inputs[i]->id] = c;
    }
    gr__progress(g, "rewrite", 0, n_order);
    for (k = 0; k < n_order; k++) {
        gr_node *node = order[k];
        uint32_t made = cg->n_nodes, q;
        if (node->n_in > cap || node->n_out > cap) {
            int need = node->n_in > node->n_out ? node->n_in : node->n_out;
            if (ins != ins_stack) { GR_FREE(ins); GR_FREE(outs); }
            ins = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)need);
            outs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)need);
            cap = need;
            if (!ins || !outs) { st = gr__error(g, GR_ERR_NOMEM, "out of memory"); goto done; }
        }
        for (j = 0; j < node->n_in; j++) {
            gr_var *v = gr__in(node)[j];
            if (!map[v->id] && !gr__owner(v) && (st = gr__fn_copy_leaf(g, cg, rw, v, map)) != GR_OK) goto done;
            ins[j] = map[v->id];
        }
        st = gr__rewrite_node(rw, node, ins, outs);
        if (st != GR_OK) goto done;
        if (rw->level == GR_OPT_FULL) {
            for (q = made; q < cg->n_nodes; q++)
                if (!gr__fn_view_add(rw, cg->nodes[q])) { st = gr__error(g, GR_ERR_NOMEM, "out of memory"); goto done; }
            if (node->n_out > 0 && outs[0] == gr__out(node)[0] && !gr__fn_view_add(rw, node)) {
                st = gr__error(g, GR_ERR_NOMEM, "out of memory");
                goto done;
            }
        }
        for (j = 0; j < node->n_out; j++)
            if (!map[gr__out(node)[j]->id]) map[gr__out(node)[j]->id] = outs[j];   /* a given output keeps its input */
        gr__progress(g, "rewrite", k + 1u, n_order);
    }
    for (j = 0; j < n_roots; j++)                    /* roots that are leaves */
        if (!map[roots[j]->id] && !gr__owner(roots[j]) && (st = gr__fn_copy_leaf(g, cg, rw, roots[j], map)) != GR_OK) goto done;
    st = GR_OK;
done:
    if (st != GR_OK && cg->status != GR_OK && g->status == GR_OK)
        gr__error(g, cg->status, "gr_function: %s", cg->message);
    else if (st != GR_OK && g->status == GR_OK)
        gr__error(g, st, "gr_function: %s", gr_status_string(st));
    if (ins != ins_stack) { GR_FREE(ins); GR_FREE(outs); }
    GR_FREE(order);
    GR_FREE(given);
    return st;
}

/* what the passes over the private graph start from: *roots, f's outputs then its update values,
   and *given, a mark on each of its inputs (by variable id); both GR_MALLOC'd, 0 when out of memory */
static int gr__fn_roots(const gr_fn *f, gr_var *const *cin, gr_var *const *cout, gr_var *const *cupd, gr_var ***roots,
                        uint8_t **given) {
    int i;
    *roots = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(f->n_out + f->n_upd + 1));
    *given = (uint8_t *)gr__calloc(f->g->var_base + f->g->n_vars + 1u, 1);
    if (!*roots || !*given) { GR_FREE(*roots); GR_FREE(*given); *roots = NULL; *given = NULL; return 0; }
    for (i = 0; i < f->n_out; i++) (*roots)[i] = cout[i];
    for (i = 0; i < f->n_upd; i++) (*roots)[f->n_out + i] = cupd[i];
    for (i = 0; i < f->n_in; i++) (*given)[cin[i]->id] = 1;
    return 1;
}

/* fuses the elementwise nodes that the outputs and update values need (cout and cupd are patched
   where they are outputs of a fused group) */
static gr_status gr__fn_fuse(gr_fn *f, gr__rewriter *rw, gr_var **cin, gr_var **cout, gr_var **cupd) {
    gr_graph *cg = f->g;
    int n_roots = f->n_out + f->n_upd, i;
    gr_var **roots;
    uint8_t *given;
    gr_status st;
    if (!gr__fn_roots(f, cin, cout, cupd, &roots, &given)) return gr__error(cg, GR_ERR_NOMEM, "out of memory (fusion)");
    st = gr__fuse(rw, cg, n_roots, roots, given);
    for (i = 0; i < f->n_out; i++) cout[i] = roots[i];
    for (i = 0; i < f->n_upd; i++) cupd[i] = roots[f->n_out + i];
    GR_FREE(roots);
    GR_FREE(given);
    return st;
}

static int gr__ptr_cmp(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return x < y ? -1 : x > y;
}

/* x as the schedule reads it: the Fused output that replaces it, if any (ctx: the rewriter) */
static gr_var *gr__fn_read(const void *ctx, gr_var *x) {
    const gr__rewriter *rw = (const gr__rewriter *)ctx;
    return rw->repl ? gr__fuse_in(rw->cg, rw->repl, rw->n_repl, x) : x;
}

/* After fusion the private graph still holds every node the copy built, most of them fused away,
   merged or rewritten out, and (at GR_OPT_FULL) it reads the source graph's leaves and the nodes the
   rewrites left as they were. The nodes still needed move to a fresh graph (the Fused programs'
   blocks change owner with their nodes) and the old graph is freed: the function owns what it runs,
   and a compiled chain of a million links keeps its program, not the copy it was made from. At
   GR_OPT_NONE, where the copy is all the function's own, this is done only when more than half of
   it is dead. */
static gr_status gr__fn_compact(gr_fn *f, gr__rewriter *rw, gr_var **cin, gr_var **cout, gr_var **cupd) {
    gr_graph *cg = f->g, *ng = NULL;
    gr_node **order = NULL;
    gr_var **map = NULL, **roots = NULL, *ins_stack[8], *outs_stack[8], **ins = ins_stack, **outs = outs_stack;
    void **progs = NULL;
    uint8_t *given = NULL;
    uint32_t nv = cg->var_base + cg->n_vars, n_order = 0, n_progs = 0, k, max_io = 8;
    int i, j, n_roots = f->n_out + f->n_upd;
    gr_status st = GR_ERR_NOMEM;
    if (!gr__fn_roots(f, cin, cout, cupd, &roots, &given)) goto done;
    /* the nodes the roots need, each after those it reads */
    if ((st = gr__toposort_read(cg, n_roots, roots, given, gr__fn_read, rw, &order, &n_order)) != GR_OK) goto done;
    st = GR_OK;
    if (rw->level != GR_OPT_FULL && (uint64_t)n_order * 2 >= cg->n_nodes) goto done;    /* little to gain */
    st = GR_ERR_NOMEM;
    ng = gr_graph_new();
    map = (gr_var **)gr__calloc(nv + 1u, sizeof(gr_var *));
    progs = (void **)GR_MALLOC(sizeof(void *) * (2u * (size_t)n_order + 1));
    if (!ng || !map || !progs) goto done;
    for (k = 0; k < n_order; k++) {
        if ((uint32_t)order[k]->n_in > max_io) max_io = (uint32_t)order[k]->n_in;
        if ((uint32_t)order[k]->n_out > max_io) max_io = (uint32_t)order[k]->n_out;
    }
    if (max_io > 8) {
        ins = (gr_var **)GR_MALLOC(sizeof(gr_var *) * max_io);
        outs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * max_io);
        if (!ins || !outs) goto done;
    }
    /* the leaves (inputs first, in their order), then the nodes in schedule order */
#define GR__COMPACT_LEAF(v) (map[(v)->id] ? map[(v)->id] : (map[(v)->id] = gr__copy_leaf(ng, (v))))
    for (i = 0; i < f->n_in; i++) if (!GR__COMPACT_LEAF(cin[i])) goto failed;
    for (k = 0; k < n_order; k++) {
        gr_node *node = order[k];
        for (j = 0; j < node->n_in; j++)
            if (!(ins[j] = GR__COMPACT_LEAF(gr__fn_read(rw, gr__in(node)[j])))) goto failed;
        if (gr__make_node_n(ng, node->op, gr__params(node), node->params_size, node->n_in, ins, node->n_out, outs) != GR_OK) goto failed;
        for (j = 0; j < node->n_out; j++) {
            map[gr__out(node)[j]->id] = outs[j];
            if (gr__vname(gr__out(node)[j]) && !gr__set_name(ng, outs[j], gr__vname(gr__out(node)[j]))) goto failed;
        }
        if (node->op == &gr__op_Fused) { progs[n_progs++] = (void *)gr__fp(node); progs[n_progs++] = gr__fp(node)->regs; }
    }
    for (i = 0; i < f->n_out; i++) if (!(cout[i] = GR__COMPACT_LEAF(cout[i]))) goto failed;
    for (i = 0; i < f->n_upd; i++) if (!(cupd[i] = GR__COMPACT_LEAF(cupd[i]))) goto failed;
    for (i = 0; i < f->n_upd; i++) if (!(f->upd_var[i] = GR__COMPACT_LEAF(f->upd_var[i]))) goto failed;
    for (i = 0; i < f->n_in; i++) cin[i] = map[cin[i]->id];
#undef GR__COMPACT_LEAF
    /* the programs change owner: the old graph forgets them */
    qsort(progs, n_progs, sizeof(void *), gr__ptr_cmp);
    if (n_progs && !gr__grow((void **)&ng->owned, &ng->cap_owned, ng->n_owned + n_progs, sizeof(void *))) goto done;
    for (k = 0; k < cg->n_owned; k++)
        if (n_progs && bsearch(&cg->owned[k], progs, n_progs, sizeof(void *), gr__ptr_cmp)) {
            ng->owned[ng->n_owned++] = cg->owned[k];
            cg->owned[k] = NULL;
        }
    f->g = ng;
    gr_graph_free(cg);
    ng = NULL;
    st = GR_OK;
    goto done;
failed:
    st = ng->status != GR_OK ? ng->status : GR_ERR_NOMEM;
    gr__error(cg, st, "%s", ng->message[0] ? ng->message : "out of memory (compacting)");
done:
    if (st == GR_ERR_NOMEM && cg->status == GR_OK) gr__error(cg, st, "out of memory (compacting)");
    gr_graph_free(ng);
    if (ins != ins_stack) GR_FREE(ins);
    if (outs != outs_stack) GR_FREE(outs);
    GR_FREE(order); GR_FREE(map); GR_FREE(progs); GR_FREE(given); GR_FREE(roots);
    return st;
}

/* Ops that keep state of their own (loops) see who reads their outputs and may compute less: a
   node's narrow rule makes a replacement and maps the variables it replaces (gr__readers,
   src/impl.c), which every node and root then reads instead. Costs nothing without such a node. */
static gr_status gr__fn_narrow(gr_fn *f, gr_var **cin, gr_var **cout, gr_var **cupd) {
    gr_graph *cg = f->g;
    uint32_t base = cg->var_base, nv = cg->n_vars, n_order = 0, k, n_use = 0;
    gr_node **order = NULL;
    gr_var **roots = NULL, **map = NULL;
    uint8_t *given = NULL, *root = NULL;
    int32_t *first = NULL, *next = NULL;
    gr_node **rnode = NULL;
    gr__readers rd;
    int i, j, any = 0, n_roots = f->n_out + f->n_upd;
    gr_status st = GR_ERR_NOMEM;
    (void)cin;
    for (k = 0; k < cg->n_nodes && !any; k++) any = (gr__flags_of(cg->nodes[k]->op) & GR__OPF_RUNTIME) != 0;
    if (!any) return GR_OK;
    if (!gr__fn_roots(f, cin, cout, cupd, &roots, &given)) goto done;
    if ((st = gr__toposort(cg, n_roots, roots, given, &order, &n_order)) != GR_OK) goto done;
    st = GR_ERR_NOMEM;
    for (k = 0; k < n_order; k++) n_use += (uint32_t)order[k]->n_in;
    first = (int32_t *)GR_MALLOC(sizeof(int32_t) * (nv + 1u));
    next = (int32_t *)GR_MALLOC(sizeof(int32_t) * (n_use + 1u));
    rnode = (gr_node **)GR_MALLOC(sizeof(gr_node *) * (n_use + 1u));
    root = (uint8_t *)gr__calloc(nv + 1u, 1);
    map = (gr_var **)gr__calloc(nv + 1u, sizeof(gr_var *));
    if (!first || !next || !rnode || !root || !map) goto done;
    for (k = 0; k < nv; k++) first[k] = -1;
    for (i = 0; i < n_roots; i++) if (roots[i]->graph == cg && roots[i]->id >= base) root[roots[i]->id - base] = 1;
    for (k = 0, n_use = 0; k < n_order; k++)
        for (i = 0; i < order[k]->n_in; i++) {
            gr_var *x = gr__in(order[k])[i];
            if (x->graph != cg || x->id < base || x->id - base >= nv) continue;
            rnode[n_use] = order[k];
            next[n_use] = first[x->id - base];
            first[x->id - base] = (int32_t)n_use++;
        }
    rd.base = base; rd.first = first; rd.next = next; rd.node = rnode; rd.root = root;
    for (k = 0; k < n_order; k++)
        if ((gr__flags_of(order[k]->op) & GR__OPF_RUNTIME) && (st = gr__runtime_narrow(order[k], &rd, map)) != GR_OK) goto done;
    /* everything reads the replacements */
#define GR__NARROWED(x) ((x)->graph == cg && (x)->id >= base && (x)->id - base < nv && map[(x)->id - base] ? map[(x)->id - base] : (x))
    for (k = 0; k < cg->n_nodes; k++)
        for (j = 0; j < cg->nodes[k]->n_in; j++) gr__in(cg->nodes[k])[j] = GR__NARROWED(gr__in(cg->nodes[k])[j]);
    for (i = 0; i < f->n_out; i++) cout[i] = GR__NARROWED(cout[i]);
    for (i = 0; i < f->n_upd; i++) cupd[i] = GR__NARROWED(cupd[i]);
#undef GR__NARROWED
    st = GR_OK;
done:
    if (st == GR_ERR_NOMEM && cg->status == GR_OK) gr__error(cg, st, "out of memory (narrowing)");
    GR_FREE(order); GR_FREE(roots); GR_FREE(given); GR_FREE(first); GR_FREE(next); GR_FREE(rnode); GR_FREE(root); GR_FREE(map);
    return st;
}

/* ---- conditionals: which steps run when ---------------------------------------------------------

   A step belongs to the region where its outputs are read: the function's own (region 0, always
   run), or one side of a condition (GR__OPF_LAZY nodes: input 0 the condition, the first half of
   the others read when it is nonzero, the second half when it is zero) inside the region of the
   conditional node, when every read of it is on that side or within it. A region is (parent,
   condition, side): conditionals on one condition in one region share their sides. gr_call runs a
   step only when its region is on (src/call.c); so that each condition is known first, the steps
   are put in a stable topological order in which every region's condition (and its ancestors')
   comes before the region's steps. */
/* the regions of the n steps (a topological order), and the steps ordered again (see above) */
static gr_status gr__fn_regions(gr_fn *f, gr_node **steps, uint32_t n, int n_roots, gr_var *const *roots) {
    gr_graph *cg = f->g;
    uint32_t nn = cg->node_base + cg->n_nodes, cap = 0, k, n_edge = 0, e, n_heap = 0;
    int32_t *nreg = NULL, *step_of = NULL;
    uint32_t *indeg = NULL, *first = NULL, *adj = NULL, *heap = NULL;
    gr_node **order = NULL;
    int i, any = 0;
    gr_status st = GR_ERR_NOMEM;
    for (k = 0; k < n && !any; k++) any = (gr__flags_of(steps[k]->op) & GR__OPF_LAZY) != 0;
    if (!any) return GR_OK;
    f->dynamic = 1;                                   /* a conditional's shape is the side taken's */
    nreg = (int32_t *)GR_MALLOC(sizeof(int32_t) * (n + 1u));
    step_of = (int32_t *)GR_MALLOC(sizeof(int32_t) * (nn + 1u));
    f->step_reg = (int32_t *)GR_MALLOC(sizeof(int32_t) * (n + 1u));
    if (!nreg || !step_of || !f->step_reg) goto done;
    if ((st = gr__regions_of(cg, steps, n, n_roots, roots, &f->regs, &f->n_regs, &cap, nreg)) != GR_OK) goto done;
    st = GR_ERR_NOMEM;
    for (k = 0; k < nn; k++) step_of[k] = -1;
    for (k = 0; k < n; k++) step_of[steps[k]->id] = (int32_t)k;
    /* the order: edges producer -> reader, and the condition of each region up the chain -> each step in it */
    indeg = (uint32_t *)gr__calloc(n + 1u, sizeof(uint32_t));
    first = (uint32_t *)gr__calloc(n + 2u, sizeof(uint32_t));
    heap = (uint32_t *)GR_MALLOC(sizeof(uint32_t) * (n + 1u));
    order = (gr_node **)GR_MALLOC(sizeof(gr_node *) * (n + 1u));
    if (!indeg || !first || !heap || !order) goto done;
#define GR__REGION_EDGES(EDGE) \
    for (k = 0; k < n; k++) { \
        int32_t r; \
        for (i = 0; i < steps[k]->n_in; i++) { \
            gr_node *p = gr__owner(gr__in(steps[k])[i]); \
            if (p && p->id < nn && step_of[p->id] >= 0) EDGE((uint32_t)step_of[p->id], k); \
        } \
        for (r = nreg[k]; r > 0; r = f->regs[r].parent) { \
            gr_node *p = gr__owner(f->regs[r].cond); \
            if (p && p->id < nn && step_of[p->id] >= 0) EDGE((uint32_t)step_of[p->id], k); \
        } \
    }
#define GR__COUNT_EDGE(a, b) (first[(a) + 1]++, indeg[b]++, n_edge++)
    GR__REGION_EDGES(GR__COUNT_EDGE)
    for (k = 0; k < n; k++) first[k + 1] += first[k];
    adj = (uint32_t *)GR_MALLOC(sizeof(uint32_t) * (n_edge + 1u));
    if (!adj) goto done;
    {
        uint32_t *fill = heap;                        /* (the heap is not in use yet) */
        for (k = 0; k < n; k++) fill[k] = first[k];
#define GR__PUT_EDGE(a, b) (adj[fill[a]++] = (b))
        GR__REGION_EDGES(GR__PUT_EDGE)
#undef GR__PUT_EDGE
    }
#undef GR__COUNT_EDGE
#undef GR__REGION_EDGES
    /* Kahn's algorithm, the earliest ready step first (a binary min-heap of step numbers) */
    for (k = 0; k < n; k++)
        if (!indeg[k]) {
            uint32_t at = n_heap++;
            while (at && heap[(at - 1) / 2] > k) { heap[at] = heap[(at - 1) / 2]; at = (at - 1) / 2; }
            heap[at] = k;
        }
    for (k = 0; k < n; k++) {
        uint32_t s, last, at = 0;
        if (!n_heap) { st = gr__error(cg, GR_ERR_VALUE, "internal error: the conditionals' order has a cycle"); goto done; }
        s = heap[0];
        last = heap[--n_heap];
        for (;;) {                                    /* sift the last entry down from the top */
            uint32_t c = 2 * at + 1;
            if (c >= n_heap) break;
            if (c + 1 < n_heap && heap[c + 1] < heap[c]) c++;
            if (heap[c] >= last) break;
            heap[at] = heap[c];
            at = c;
        }
        if (n_heap) heap[at] = last;
        order[k] = steps[s];
        f->step_reg[k] = nreg[s];
        for (e = first[s]; e < first[s + 1]; e++)
            if (--indeg[adj[e]] == 0) {
                uint32_t t = adj[e];
                at = n_heap++;
                while (at && heap[(at - 1) / 2] > t) { heap[at] = heap[(at - 1) / 2]; at = (at - 1) / 2; }
                heap[at] = t;
            }
    }
    memcpy(steps, order, sizeof(gr_node *) * n);
    if (!(f->reg_on = (int8_t *)GR_MALLOC((size_t)f->n_regs))) goto done;
    st = GR_OK;
done:
    if (st == GR_ERR_NOMEM) gr__error(cg, st, "out of memory (scheduling conditionals)");
    GR_FREE(nreg); GR_FREE(step_of); GR_FREE(indeg); GR_FREE(first); GR_FREE(adj); GR_FREE(heap); GR_FREE(order);
    return st;
}

static int32_t gr__slot_new(gr_fn *f, int32_t *slot_of, gr_var *v) {
    gr__slot *s;
    if (slot_of[v->id] >= 0) return slot_of[v->id];
    s = &f->slots[f->n_slots];
    memset(s, 0, sizeof *s);
    s->var = v;
    s->arr.dtype = (gr_dtype)v->dtype;
    s->arr.ndim = v->ndim;
    s->producer = -1;
    s->last_use = -1;
    s->buf = -1;
    s->view_of = -1;
    switch (v->kind) {
    case GR__VK_INPUT: s->kind = GR__SK_INPUT; s->external = 1; break;
    case GR__VK_SHARED: s->kind = GR__SK_SHARED; s->external = 1; break;
    case GR__VK_CONST: {
        const gr_array *c = (const gr_array *)gr__ext(v);
        s->kind = GR__SK_CONST;
        s->arr = *c;
        break;
    }
    default: s->kind = GR__SK_COMPUTED; break;
    }
    slot_of[v->id] = (int32_t)f->n_slots;
    return (int32_t)f->n_slots++;
}

/* schedules the private graph: steps, slots, liveness */
/* (pg: the source graph, whose progress callback hears "schedule", counted in steps) */
static gr_status gr__fn_schedule(gr_fn *f, const gr_graph *pg, gr_var *const *cin, gr_var *const *cout, gr_var *const *cupd) {
    gr_graph *cg = f->g;
    int32_t *slot_of = NULL;
    gr_var **roots = NULL;
    uint8_t *given = NULL;
    uint32_t n_order = 0, k;
    int64_t n_io = 0, at = 0;
    int i, j, n_roots = f->n_out + f->n_upd;
    gr_status st = GR_ERR_NOMEM;
    slot_of = (int32_t *)GR_MALLOC(sizeof(int32_t) * (cg->var_base + cg->n_vars + 1u));
    if (!slot_of || !gr__fn_roots(f, cin, cout, cupd, &roots, &given)) goto done;
    st = gr__toposort(cg, n_roots, roots, given, &f->steps, &n_order);
    if (st != GR_OK) goto done;
    if ((st = gr__fn_regions(f, f->steps, n_order, n_roots, roots)) != GR_OK) goto done;
    st = GR_ERR_NOMEM;
    f->n_steps = n_order;
    for (k = 0; k < n_order; k++) n_io += f->steps[k]->n_in + f->steps[k]->n_out + 1;
    f->step_io = (int32_t *)GR_MALLOC(sizeof(int32_t) * (size_t)(n_io + 1));
    f->step_io_at = (int64_t *)GR_MALLOC(sizeof(int64_t) * (size_t)(n_order + 1));
    f->io = (const gr_array **)GR_MALLOC(sizeof(gr_array *) * (size_t)(n_io + 1));
    /* a slot per variable the schedule touches: at most one per variable of the private graph */
    f->slots = (gr__slot *)GR_MALLOC(sizeof(gr__slot) * (size_t)(cg->n_vars + 1u));
    f->in_slot = (int32_t *)GR_MALLOC(sizeof(int32_t) * (size_t)(f->n_in + 1));
    f->out_slot = (int32_t *)GR_MALLOC(sizeof(int32_t) * (size_t)(f->n_out + 1));
    f->upd_slot = (int32_t *)GR_MALLOC(sizeof(int32_t) * (size_t)(f->n_upd + 1));
    if (!f->step_io || !f->step_io_at || !f->io || !f->slots || !f->in_slot || !f->out_slot || !f->upd_slot) goto done;
    for (k = 0; k < cg->var_base + cg->n_vars; k++) slot_of[k] = -1;
    for (i = 0; i < f->n_in; i++) f->in_slot[i] = gr__slot_new(f, slot_of, cin[i]);
    gr__progress(pg, "schedule", 0, n_order);
    for (k = 0; k < n_order; k++) {
        gr_node *node = f->steps[k];
        f->step_io_at[k] = at;
        for (j = 0; j < node->n_in; j++) {
            int32_t s = gr__slot_new(f, slot_of, gr__in(node)[j]);
            f->slots[s].last_use = (int64_t)k;
            f->step_io[at] = s;
            f->io[at++] = &f->slots[s].arr;
        }
        for (j = 0; j < node->n_out; j++) {
            int32_t s = gr__slot_new(f, slot_of, gr__out(node)[j]);
            f->slots[s].producer = (int64_t)k;
            f->step_io[at] = s;
            f->io[at++] = &f->slots[s].arr;
        }
        f->step_io[at] = -1;                   /* out[n_out]: the work memory */
        f->io[at++] = &f->scratch;
        gr__progress(pg, "schedule", k + 1u, n_order);
    }
    f->step_io_at[n_order] = at;
    f->shape_pure = 1;
    for (k = 0; k < n_order; k++)
        if (!f->steps[k]->op->builtin || (gr__flags_of(f->steps[k]->op) & GR__OPF_INNERCONN)) f->shape_pure = 0;
    for (i = 1; i < f->n_regs; i++) f->regs[i].cond_slot = slot_of[f->regs[i].cond->id];
    for (k = 0; k < n_order; k++)              /* outputs shaped by running: memory the step owns */
        if (gr__flags_of(f->steps[k]->op) & GR__OPF_DYNSHAPE) {
            f->dynamic = 1;
            for (j = 0; j < f->steps[k]->n_out; j++) f->slots[f->step_io[f->step_io_at[k] + f->steps[k]->n_in + j]].external = 1;
        }
    for (i = 0; i < f->n_out; i++) {
        f->out_slot[i] = gr__slot_new(f, slot_of, cout[i]);
        f->slots[f->out_slot[i]].last_use = f->n_steps;
    }
    for (i = 0; i < f->n_upd; i++) {
        f->upd_slot[i] = gr__slot_new(f, slot_of, cupd[i]);
        f->slots[f->upd_slot[i]].last_use = f->n_steps;
    }
    f->shape_at = (int64_t *)GR_MALLOC(sizeof(int64_t) * (size_t)(f->n_slots + 1));
    if (!f->shape_at) goto done;
    {
        int64_t total = 0, s;
        for (s = 0; s < f->n_slots; s++) { f->shape_at[s] = total; total += f->slots[s].arr.ndim + 1; }
        f->shape_cache = (int64_t *)gr__calloc((size_t)(total + 1), sizeof(int64_t));
        f->shared_slots = (int32_t *)GR_MALLOC(sizeof(int32_t) * (size_t)(f->n_slots + 1));
        if (!f->shape_cache || !f->shared_slots) goto done;
        for (s = 0; s < f->n_slots; s++)
            if (f->slots[s].kind == GR__SK_SHARED) f->shared_slots[f->n_shared_slots++] = (int32_t)s;
    }
    f->plan_refs = (int32_t *)GR_MALLOC(sizeof(int32_t) * (size_t)(f->n_slots + 1));
    f->plan_next = (int32_t *)GR_MALLOC(sizeof(int32_t) * (size_t)(f->n_slots + 1));
    f->plan_cls = (struct gr__cap_class *)GR_MALLOC(sizeof(struct gr__cap_class) * (size_t)(f->n_slots + 1));
    f->plan_caps = (size_t *)GR_MALLOC(sizeof(size_t) * (size_t)(f->n_slots + 1));
    f->plan_seen = (int64_t *)GR_MALLOC(sizeof(int64_t) * (size_t)(f->n_slots + 1));
    if (!f->plan_refs || !f->plan_next || !f->plan_cls || !f->plan_caps || !f->plan_seen) goto done;
    st = GR_OK;
done:
    GR_FREE(roots);
    GR_FREE(given);
    GR_FREE(slot_of);
    if (st != GR_OK) gr__error(cg, st, "out of memory (scheduling)");
    return st;
}

GR_API gr_fn *gr_function(int n_in, gr_var *const *inputs, int n_out, gr_var *const *outputs, const gr_fn_opts *opts) {
    gr_graph *g = NULL, *cg = NULL;
    gr_fn *f = NULL;
    gr_var **map = NULL, **roots = NULL, **cin = NULL, **cout = NULL, **cupd = NULL;
    gr__rewriter *rw = NULL;
    int n_upd = opts ? opts->n_updates : 0, level = opts ? (int)opts->optimize : (int)GR_OPT_FULL, i, j;
    gr_status st;
    st = gr__fn_check(n_in, inputs, n_out, outputs, opts, &g);
    if (st != GR_OK) return NULL;
    if (n_in == 0 && n_out == 0 && n_upd == 0) { gr__error(g, GR_ERR_VALUE, "gr_function: nothing to compute"); return NULL; }
    f = (gr_fn *)gr__calloc(1, sizeof(gr_fn));
    cg = gr_graph_new();
    map = (gr_var **)gr__calloc(g->n_vars, sizeof(gr_var *));
    roots = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(n_out + n_upd + 1));
    cin = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(n_in + 1));
    cout = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(n_out + 1));
    cupd = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(n_upd + 1));
    if (f) f->g = cg;                               /* from here on gr_fn_free(f) frees cg too */
    if (!f || !cg || !map || !roots || !cin || !cout || !cupd) { gr__error(g, GR_ERR_NOMEM, "gr_function: out of memory"); goto fail; }
    f->n_in = n_in; f->n_out = n_out; f->n_upd = n_upd;
    for (i = 0; i < n_out; i++) roots[i] = outputs[i];
    for (i = 0; i < n_upd; i++) roots[n_out + i] = opts->updates[i].value;
    cg->var_base = g->n_vars;                       /* ids apart from the source graph's, which it may reuse */
    cg->node_base = g->n_nodes;
    rw = gr__rewriter_new(g, cg, level);
    if (!rw) { gr__error(g, GR_ERR_NOMEM, "gr_function: out of memory"); goto fail; }
    if (gr__fn_copy(g, cg, rw, n_in, inputs, n_out + n_upd, roots, map) != GR_OK) goto fail;
    for (i = 0; i < n_in; i++) cin[i] = map[inputs[i]->id];
    for (i = 0; i < n_out; i++) cout[i] = map[outputs[i]->id];
    f->upd_store = (gr__storage **)GR_MALLOC(sizeof(gr__storage *) * (size_t)(n_upd + 1));
    f->upd_var = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(n_upd + 1));
    f->upd_staged = (uint8_t *)gr__calloc((size_t)n_upd + 1, 1);
    if (!f->upd_store || !f->upd_var || !f->upd_staged) { gr__error(g, GR_ERR_NOMEM, "gr_function: out of memory"); goto fail; }
    for (i = 0; i < n_upd; i++) {
        gr_var *sv = opts->updates[i].shared;
        cupd[i] = map[opts->updates[i].value->id];
        if (gr__is_weak(cupd[i]))                   /* (made in cg: cupd[i] may be the source graph's) */
            cupd[i] = sv->dtype != GR_F64 ? gr__scalar_const(cg, sv->dtype, gr__weak_value(cupd[i]), 0) : gr__coerce(cupd[i], sv->dtype);
        /* a target the function does not read gets its counterpart here (holding a reference) */
        if (!map[sv->id]) map[sv->id] = gr__copy_leaf(cg, sv);
        if (!cupd[i] || !map[sv->id]) { gr__error(g, cg->status, "gr_function: %s", cg->message); goto fail; }
        f->upd_var[i] = map[sv->id];
        f->upd_store[i] = (gr__storage *)gr__ext(sv);
        /* static shapes compared on the copies: they are typed against the shared values' shapes of
           now, which gr_shared_set may have changed since the user's graph was built */
        for (j = 0; j < cupd[i]->ndim; j++)
            if (gr__vshape(cupd[i])[j] >= 0 && gr__vshape(cupd[i])[j] != gr__vshape(f->upd_var[i])[j]) {
                gr__error(g, GR_ERR_SHAPE, "gr_function: the update of %s %s has shape %s", gr__d(sv).s,
                          gr__vs(f->upd_var[i]).s, gr__vs(cupd[i]).s);
                goto fail;
            }
    }
    gr__rewriter_drop_merging(rw);                  /* the peak of a big compile is fusion's: room for it */
    GR_FREE(map);
    map = NULL;
    if (level == GR_OPT_FULL && gr__fn_fuse(f, rw, cin, cout, cupd) != GR_OK) { gr__error(g, cg->status, "gr_function: %s", cg->message); goto fail; }
    if (gr__fn_compact(f, rw, cin, cout, cupd) != GR_OK) { gr__error(g, cg->status, "gr_function: %s", cg->message); goto fail; }
    cg = f->g;
    if (level == GR_OPT_FULL && gr__fn_narrow(f, cin, cout, cupd) != GR_OK) { gr__error(g, cg->status, "gr_function: %s", cg->message); goto fail; }
    if (gr__fn_schedule(f, g, cin, cout, cupd) != GR_OK) { gr__error(g, cg->status, "gr_function: %s", cg->message); goto fail; }
    for (i = 0; i < f->n_steps; i++)                /* state of the function's own (a loop's compiled body) */
        if ((gr__flags_of(f->steps[i]->op) & GR__OPF_RUNTIME) && gr__runtime_make(f->steps[i], level) != GR_OK) {
            gr__error(g, cg->status != GR_OK ? cg->status : GR_ERR_NOMEM, "gr_function: %s", cg->message);
            goto fail;
        }
    gr__rewriter_free(rw);
    GR_FREE(map); GR_FREE(roots); GR_FREE(cin); GR_FREE(cout); GR_FREE(cupd);
    return f;
fail:
    gr__rewriter_free(rw);
    GR_FREE(map); GR_FREE(roots); GR_FREE(cin); GR_FREE(cout); GR_FREE(cupd);
    if (f) gr_fn_free(f);
    else gr_graph_free(cg);
    return NULL;
}

GR_API const char *gr_fn_message(const gr_fn *f) { return f ? f->message : ""; }
GR_API size_t gr_fn_node_count(const gr_fn *f) { return f ? (size_t)f->n_steps : 0; }
