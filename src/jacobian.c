/* src/jacobian.c: gr_jacobian and gr_hessian.

   The Jacobian of an expression e (any ndim, m elements) with respect to w is built from ONE
   pullback: g(u) = Lop(flatten(e), w, u) for a cotangent u of m elements, linear in u. The graph
   of g is then vectorised: u is replaced by the m x m identity, every node that reads it gains a
   leading batch axis (ops/batch.c), so the m rows of the Jacobian come out of one pass, shaped
   (m, *w.shape), then (*e.shape, *w.shape). The Hessian is the Jacobian of the gradient, one
   diagonal block per wrt. */

#ifndef GR_NO_BATCH                  /* without batching (ops/table.h), only 0-d expressions */
/* A copy of what `roots` compute from the seeds, with seed[i] replaced by seed_b[i]: a batched
   replacement (one more leading axis) when seed_isb is NULL or seed_isb[i], a plain substitute
   otherwise. Every node reading a replaced value is rebuilt: by its op's batch rule when it reads
   a batched one, as the same op on the substitutes otherwise. out[k] is root k's counterpart and
   out_b[k] says whether it is batched. */
static gr_status gr__vectorize(gr_graph *g, int n_seed, gr_var *const *seed, gr_var *const *seed_b, const uint8_t *seed_isb,
                               int n, gr_var *const *roots, gr_var **out, uint8_t *out_b) {
    uint32_t nv = g->n_vars, n_order = 0, k;
    gr_var **map = (gr_var **)gr__calloc(nv, sizeof(gr_var *));
    uint8_t *isb = (uint8_t *)gr__calloc(nv, 1), *stop = (uint8_t *)gr__calloc(nv, 1);
    gr_node **order = NULL;
    gr_var *ins_s[8], *outs_s[8], **ins = ins_s, **outs = outs_s;
    unsigned char bat_s[8], *bat = bat_s;
    int cap = 8, i, j;
    gr_status st = GR_OK;
    if (!map || !isb || !stop) { st = gr__error(g, GR_ERR_NOMEM, "gr_jacobian: out of memory"); goto done; }
    for (i = 0; i < n_seed; i++) {
        map[seed[i]->id] = seed_b[i];
        isb[seed[i]->id] = (uint8_t)(seed_isb ? seed_isb[i] : 1);
        stop[seed[i]->id] = 1;
    }
    if ((st = gr__toposort(g, n, roots, stop, &order, &n_order)) != GR_OK) goto done;
    for (k = 0; k < n_order; k++) {
        gr_node *node = order[k];
        int any_b = 0, any_sub = 0;
        if (node->n_in > cap || node->n_out > cap) {
            cap = node->n_in > node->n_out ? node->n_in : node->n_out;
            if (ins != ins_s) { GR_FREE(ins); GR_FREE(outs); GR_FREE(bat); }
            ins = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)cap);
            outs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)cap);
            bat = (unsigned char *)GR_MALLOC((size_t)cap);
            if (!ins || !outs || !bat) { st = gr__error(g, GR_ERR_NOMEM, "gr_jacobian: out of memory"); goto done; }
        }
        for (i = 0; i < node->n_in; i++) {
            gr_var *x = gr__in(node)[i];
            gr_var *m = x->id < nv ? map[x->id] : NULL;
            bat[i] = (unsigned char)(m && isb[x->id]);
            ins[i] = m ? m : x;
            any_b |= bat[i];
            any_sub |= m != NULL;
        }
        if (!any_sub) continue;                      /* reads nothing replaced: shared as it is */
        for (j = 0; j < node->n_out; j++) outs[j] = NULL;
        if (any_b) st = gr__batch_of(node->op) ? gr__batch_of(node->op)(node, ins, bat, outs) : gr__map_batch(node, ins, bat, outs);
        else st = gr__make_node_n(g, node->op, gr__params(node), node->params_size, node->n_in, ins, node->n_out, outs);
        if (st != GR_OK || g->status != GR_OK) { st = g->status != GR_OK ? g->status : st; goto done; }
        for (j = 0; j < node->n_out; j++) {
            if (!outs[j]) { st = gr__error(g, GR_ERR_VALUE, "gr_jacobian: the batching rule of %s gave no output", gr__on(node->op).s); goto done; }
            map[gr__out(node)[j]->id] = outs[j];
            isb[gr__out(node)[j]->id] = (uint8_t)any_b;
        }
    }
    for (i = 0; i < n; i++) {
        gr_var *m = roots[i]->id < nv ? map[roots[i]->id] : NULL;
        out[i] = m ? m : roots[i];
        out_b[i] = (uint8_t)(m && isb[roots[i]->id]);
    }
done:
    if (ins != ins_s) { GR_FREE(ins); GR_FREE(outs); GR_FREE(bat); }
    GR_FREE(map); GR_FREE(isb); GR_FREE(stop); GR_FREE(order);
    return st;
}

/* zeros of shape (*shape(lead), *shape(w)) of dtype dt */
static gr_var *gr__zeros_outer(gr_var *lead, gr_var *w, int dt) {
    int pattern[GR_MAX_NDIM], i;
    gr_var *a, *b;
    for (i = 0; i < lead->ndim; i++) pattern[i] = i;
    for (i = 0; i < w->ndim; i++) pattern[lead->ndim + i] = GR_NEWAXIS;
    a = gr__dimshuffle(gr__fill_like(lead, dt, 0.0), lead->ndim + w->ndim, pattern, 0);
    b = gr__fill_like(w, dt, 0.0);
    return gr_add(a, b);
}

/* the graph of gr_jacobian's or gr_hessian's first non-NULL variable argument */
#endif

static gr_graph *gr__jh_graph(gr_var *first, int n_wrt, gr_var *const *wrt) {
    int i;
    if (first) return first->graph;
    for (i = 0; wrt && i < n_wrt; i++) if (wrt[i]) return wrt[i]->graph;
    return NULL;
}

static gr_status gr__jacobian(const char *fname, gr_var *expr, int n_wrt, gr_var *const *wrt, gr_var **out, const gr_grad_opts *opts,
                              int disconnected) {
    gr_graph *g;
    gr_grad_opts o;
    gr_var *flat, *u, *seed_b, **pulled = NULL, **batched = NULL;
    uint8_t *isb = NULL;
    int i, dt;
    gr_status st = GR_OK;
    if (out) for (i = 0; i < n_wrt; i++) out[i] = NULL;
    if (!(g = gr__jh_graph(expr, n_wrt, wrt))) return GR_ERR_VALUE;
    if (!expr) return gr__driver_null(g, fname, "the expression", -1);
    if (n_wrt < 0 || (n_wrt > 0 && (!wrt || !out))) return gr__error(g, GR_ERR_VALUE, "%s: a NULL array or a negative count", fname);
    for (i = 0; i < n_wrt; i++) if (!wrt[i]) return gr__driver_null(g, fname, "wrt", i);
    if (gr__is_marker(expr)) return gr__error(g, GR_ERR_TYPE, "%s: the expression is a gradient marker, not a value", fname);
    memset(&o, 0, sizeof o);
    if (opts) {
        o.consider_constant = opts->consider_constant;
        o.n_consider_constant = opts->n_consider_constant;
    }
    o.disconnected_inputs = (gr_on_disconnected)disconnected;
    o.no_names = 1;
    if (expr->ndim == 0) return gr__grad(fname, expr, n_wrt, wrt, out, &o);
    for (i = 0; i < n_wrt; i++)
        if (expr->ndim + wrt[i]->ndim > GR_MAX_NDIM)
            return gr__error(g, GR_ERR_VALUE, "%s: the Jacobian of %s with respect to %s would have %d dimensions (at most %d)", fname,
                             gr__d(expr).s, gr__d(wrt[i]).s, expr->ndim + wrt[i]->ndim, GR_MAX_NDIM);
#ifdef GR_NO_BATCH
    (void)flat; (void)u; (void)seed_b; (void)pulled; (void)batched; (void)isb; (void)dt; (void)st;
    return gr__error(g, GR_ERR_VALUE, "%s: gradient.h was built without batching (GR_NO_BATCH): only the Jacobian of a 0-d "
                     "expression (its gradient) is available, and %s is %d-d", fname, gr__d(expr).s, expr->ndim);
#else
    dt = gr__grad_dtype(expr);
    flat = expr->ndim == 1 ? expr : gr_flatten(expr);
    if (!flat) return g->status;
    /* one pullback with a placeholder cotangent ... */
    u = gr__new_var(g, dt, 1, gr__vshape(flat), GR__VK_INPUT);
    if (!u) return g->status;
    if (!gr__set_name(g, u, "jacobian cotangent")) return g->status;
    pulled = (gr_var **)gr__calloc((size_t)n_wrt + 1, sizeof(gr_var *));
    batched = (gr_var **)gr__calloc((size_t)n_wrt + 1, sizeof(gr_var *));
    isb = (uint8_t *)gr__calloc((size_t)n_wrt + 1, 1);
    if (!pulled || !batched || !isb) { st = gr__error(g, GR_ERR_NOMEM, "%s: out of memory", fname); goto done; }
    o.known_vars = &flat;
    o.known_grads = &u;
    o.n_known = 1;
    if ((st = gr__grad(fname, NULL, n_wrt, wrt, pulled, &o)) != GR_OK) goto done;
    /* ... vectorised over the rows of the identity */
    seed_b = gr__eye_like(flat, dt);
    if (!seed_b) { st = g->status; goto done; }
    if ((st = gr__vectorize(g, 1, &u, &seed_b, NULL, n_wrt, pulled, batched, isb)) != GR_OK) goto done;
    for (i = 0; i < n_wrt; i++) {
        gr_var *j = isb[i] ? batched[i] : gr__zeros_outer(flat, wrt[i], gr__grad_dtype(wrt[i]));
        if (j && expr->ndim != 1) j = gr__unflatten(j, expr);
        if (!j) { st = g->status; goto done; }
        out[i] = j;
    }
done:
    if (st != GR_OK) for (i = 0; i < n_wrt; i++) out[i] = NULL;
    GR_FREE(pulled); GR_FREE(batched); GR_FREE(isb);
    return st;
#endif
}

GR_API gr_status gr_jacobian(gr_var *expression, int n_wrt, gr_var *const *wrt, gr_var **out, const gr_grad_opts *opts) {
    return gr__jacobian("gr_jacobian", expression, n_wrt, wrt, out, opts, opts ? (int)opts->disconnected_inputs : (int)GR_RAISE);
}

GR_API gr_status gr_hessian(gr_var *cost, int n_wrt, gr_var *const *wrt, gr_var **out, const gr_grad_opts *opts) {
    gr_graph *g;
    gr_grad_opts o;
    int i;
    gr_status st = GR_OK;
    if (out) for (i = 0; i < n_wrt; i++) out[i] = NULL;
    if (!(g = gr__jh_graph(cost, n_wrt, wrt))) return GR_ERR_VALUE;
    if (!cost) return gr__driver_null(g, "gr_hessian", "cost", -1);
    if (n_wrt < 0 || (n_wrt > 0 && (!wrt || !out))) return gr__error(g, GR_ERR_VALUE, "gr_hessian: a NULL array or a negative count");
    for (i = 0; i < n_wrt; i++) if (!wrt[i]) return gr__driver_null(g, "gr_hessian", "wrt", i);
    if (cost->ndim != 0) return gr__error(g, GR_ERR_TYPE, "gr_hessian: the cost must be a scalar; %s has %d dimensions", gr__d(cost).s, cost->ndim);
    memset(&o, 0, sizeof o);
    if (opts) {
        o.consider_constant = opts->consider_constant;
        o.n_consider_constant = opts->n_consider_constant;
        o.disconnected_inputs = opts->disconnected_inputs;
    }
    o.no_names = 1;
    for (i = 0; i < n_wrt; i++) {
        gr_var *gw = NULL;
        if ((st = gr__grad("gr_hessian", cost, 1, &wrt[i], &gw, &o)) != GR_OK) break;
        /* the gradient may not depend on w although the cost does (a linear cost): ignore there */
        if ((st = gr__jacobian("gr_hessian", gw, 1, &wrt[i], &out[i], &o, GR_IGNORE)) != GR_OK) break;
    }
    if (st != GR_OK) for (i = 0; i < n_wrt; i++) out[i] = NULL;
    return st;
}
