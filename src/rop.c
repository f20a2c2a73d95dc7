/* src/rop.c: forward mode: gr_rop.

   Tangents flow forward through the nodes between wrt and f, in topological order, without
   recursion. Every variable's tangent is in one of three states:
     REAL  a variable holding the tangent;
     ZERO  known to be zero: a root not in wrt (Aesara gives roots zero tangents), or computed
           only from such; kept symbolic so that no zero arithmetic is built;
     NONE  no derivative reaches it: every path from wrt passes a non-differentiable op
           (gr_disconnected_grad, gr_undefined_grad, an integer-valued output).
   An op's R-op rule sees REAL tangents and disconnected markers for the others. An op without an
   R-op rule gets one from its grad rule by the double pullback: the gradient g(u) of the node for
   a dummy cotangent u is linear in u, so the gradient of <g(u), v> with respect to u is J v (a
   user's op needs only a grad rule to get an R-op). */

enum { GR__T_UNSET, GR__T_NONE, GR__T_ZERO, GR__T_REAL };

/* an op's outputs carry no derivative */
static int gr__nondiff_out(const gr_node *node, int j) {
    return (gr__flags_of(node->op) & GR__OPF_NONDIFF) || !gr__is_float(gr__out(node)[j]->dtype);
}

/* The state of output j of a node whose R-op gave it no tangent. A NONE input (a tangent from
   wrt stopped upstream), or a REAL one stopped here by a non-differentiable output, makes it
   NONE whatever ZERO inputs say: zeros from roots are no contribution (dot(disconnected_grad(x),
   y) with respect to x is disconnected, although Aesara's direct path gives zeros from y's zero
   tangent). With only ZERO inputs it is ZERO, non-differentiable or not: no tangent from wrt
   reaches it, so it is a function of roots. For a differentiable output, inputs its connection
   pattern excludes (a shape reference) do not count: the R-op of grad(dot(x, v).sum(), v) with
   respect to v is zeros. */
static int gr__no_tangent_state(const gr_node *node, int j, const uint8_t *state) {
    int i, real = 0, none = 0, zero = 0, nondiff = gr__nondiff_out(node, j);
    for (i = 0; i < node->n_in; i++) {
        int s = state[gr__in(node)[i]->id];
        if (!nondiff && !gr__connected(node, i, j)) continue;
        if (s == GR__T_REAL) real = 1;
        else if (s == GR__T_NONE) none = 1;
        else zero = 1;
    }
    if (none || (real && nondiff)) return GR__T_NONE;
    if (!real) return GR__T_ZERO;
    return zero ? GR__T_ZERO : GR__T_NONE;   /* a rule that gives nothing for a real tangent */
}

/* the double pullback for one node: orop[j] = J_j . ev, NULL where nothing flows */
static gr_status gr__rop_by_pullback(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_graph *g = node->graph;
    int ni = node->n_in, no = node->n_out, i, j, nk = 0, nu = 0;
    gr_var **u = (gr_var **)gr__calloc((size_t)(2 * no + 3 * ni + 1), sizeof(gr_var *)), **ig, **kv, **kg, **res;
    int *u_out = (int *)gr__calloc((size_t)no + 1, sizeof(int));
    gr_grad_opts o;
    gr_status st = GR_OK;
    for (j = 0; j < no; j++) orop[j] = NULL;
    if (!u || !u_out) { st = gr__error(g, GR_ERR_NOMEM, "gr_rop: out of memory"); goto done; }
    ig = u + no; kv = ig + ni; kg = kv + ni; res = kg + ni;
    if (!node->op->grad) {
        st = gr__error(g, GR_ERR_GRAD_NOT_IMPLEMENTED, "gr_rop: %s has neither an R-op rule nor a grad rule", gr__on(node->op).s);
        goto done;
    }
    for (j = 0; j < no; j++) {                       /* dummy cotangents: zeros like each float output */
        gr_var *o_j = gr__out(node)[j];
        if (!gr__is_float(o_j->dtype)) { u[j] = gr_disconnected_like(o_j); continue; }
        u[j] = gr__fill_like(o_j, o_j->dtype, 0.0);
        if (!u[j]) { st = g->status; goto done; }
    }
    for (i = 0; i < ni; i++) ig[i] = NULL;
    st = node->op->grad(node, u, ig);
    if (st != GR_OK || g->status != GR_OK) { st = g->status != GR_OK ? g->status : st; goto done; }
    for (i = 0; i < ni; i++) {
        if (gr_is_disconnected(ev[i]) || !ig[i] || gr_is_disconnected(ig[i])) continue;
        if (gr_is_null(ig[i])) {
            st = gr__error(g, (gr_status)ig[i]->aux, "gr_rop: %s has no R-op rule and its gradient for input %d is null: %s",
                           gr__on(node->op).s, i, gr__null_reason(ig[i]));
            goto done;
        }
        kv[nk] = ig[i];
        kg[nk] = gr__is_float(ev[i]->dtype) && ev[i]->dtype == ig[i]->dtype ? ev[i] : gr_cast(ev[i], (gr_dtype)ig[i]->dtype);
        if (!kg[nk]) { st = g->status; goto done; }
        nk++;
    }
    if (nk == 0) goto done;
    for (j = 0; j < no; j++) if (!gr_is_disconnected(u[j])) { u_out[nu] = j; u[nu++] = u[j]; }
    memset(&o, 0, sizeof o);
    o.known_vars = kv;
    o.known_grads = kg;
    o.n_known = nk;
    o.disconnected_inputs = GR_IGNORE;
    o.return_disconnected = GR_RETURN_DISCONNECTED;
    o.no_names = 1;
    if ((st = gr__grad("gr_rop", NULL, nu, u, res, &o)) != GR_OK) goto done;
    for (j = 0; j < nu; j++) orop[u_out[j]] = gr_is_disconnected(res[j]) ? NULL : res[j];
done:
    GR_FREE(u);
    GR_FREE(u_out);
    return st;
}

static gr_status gr__rop_policy(gr_graph *g, int policy, const gr_var *v) {
    if (policy == GR_IGNORE) return GR_OK;
    if (policy == GR_WARN) {
        gr__log(g, "gr_rop was asked to compute the gradient with respect to a variable that is not part of the computational "
                "graph of variables in wrt, or is used only by a non-differentiable operator: %s", gr__d(v).s);
        return GR_OK;
    }
    return gr__error(g, GR_ERR_DISCONNECTED_INPUT, "gr_rop: no tangent from wrt reaches %s (it is not computed from wrt, or only "
                     "through a non-differentiable operator)", gr__d(v).s);
}

/* the arguments of gr_rop (g: the graph of the first one given): counts, NULL entries, policies,
   graphs, matching dimensionalities, no gradient markers; GR_OK or the error recorded */
static gr_status gr__rop_check(gr_graph *g, int n_f, gr_var *const *f, int n_wrt, gr_var *const *wrt, gr_var *const *eval_points,
                               gr_var **out, const gr_rop_opts *o) {
    int i;
    if (n_f < 1 || n_wrt < 0 || !f || !out || (n_wrt > 0 && (!wrt || !eval_points)))
        return gr__error(g, GR_ERR_VALUE, "gr_rop: %s", n_f < 1 ? "needs at least one f" : n_wrt < 0 ? "n_wrt is negative" : "a NULL array");
    if ((unsigned)o->disconnected_outputs > GR_IGNORE || (unsigned)o->return_disconnected > GR_RETURN_DISCONNECTED)
        return gr__error(g, GR_ERR_VALUE, "gr_rop: invalid value for disconnected_outputs or return_disconnected");
    for (i = 0; i < n_f; i++) if (!f[i]) return gr__driver_null(g, "gr_rop", "f", i);
    for (i = 0; i < n_wrt; i++) if (!wrt[i]) return gr__driver_null(g, "gr_rop", "wrt", i);
    for (i = 0; i < n_wrt; i++) if (!eval_points[i]) return gr__driver_null(g, "gr_rop", "eval_points", i);
    for (i = 0; i < n_wrt; i++) {
        if (wrt[i]->graph != g || eval_points[i]->graph != g)
            return gr__error(g, GR_ERR_VALUE, "gr_rop: wrt[%d] or its eval point belongs to another graph", i);
        if (wrt[i]->ndim != eval_points[i]->ndim)
            return gr__error(g, GR_ERR_TYPE, "gr_rop: elements %d of wrt (%s) and eval_points have mismatched dimensionalities: %d and %d",
                             i, gr__d(wrt[i]).s, wrt[i]->ndim, eval_points[i]->ndim);
        if (gr__is_marker(eval_points[i]) || gr__is_marker(wrt[i]))
            return gr__error(g, GR_ERR_TYPE, "gr_rop: wrt[%d] or its eval point is a gradient marker, not a value", i);
    }
    for (i = 0; i < n_f; i++) {
        if (f[i]->graph != g) return gr__error(g, GR_ERR_VALUE, "gr_rop: f[%d] belongs to another graph", i);
        if (gr__is_marker(f[i])) return gr__error(g, GR_ERR_TYPE, "gr_rop: f[%d] is a gradient marker, not a value", i);
    }
    return GR_OK;
}

/* the eval point t of a vector wrt x as the graph reads it: t in x's shape (a view), unless their
   static shapes are known and equal. An eval point has its wrt's shape (a call with another length
   fails here, naming both), and said so, the compiled function knows that t and x have one length:
   what is computed from both fuses into one pass (W3's Hessian-vector product) */
static gr_var *gr__rop_eval_point(gr_var *t, gr_var *x) {
    if (x->ndim != 1 || t->ndim != 1 || (gr__vshape(x)[0] >= 0 && gr__vshape(t)[0] == gr__vshape(x)[0])) return t;
    return gr_reshape_like(t, x);
}

/* the tangents of node's outputs from those of its inputs (tan[], state[] by variable id; stop: the
   wrt): its R-op rule (or the double pullback) on the REAL tangents, a state for every output it
   gives none; ev and orop: room for node's inputs and outputs */
static gr_status gr__rop_node(gr_graph *g, gr_node *node, uint8_t *state, const uint8_t *stop, gr_var **tan, gr_var **ev, gr_var **orop) {
    int i, j, any_real = 0;
    gr_status st;
    for (i = 0; i < node->n_in; i++) {
        gr_var *x = gr__in(node)[i];
        if (state[x->id] == GR__T_UNSET) state[x->id] = GR__T_ZERO;   /* a root not in wrt */
        if (state[x->id] == GR__T_REAL) {
            gr_var *t = stop[x->id] ? gr__rop_eval_point(tan[x->id], x) : tan[x->id];
            if (!t) return g->status;
            ev[i] = t->dtype == x->dtype ? t : gr_cast(t, (gr_dtype)x->dtype);
            any_real = 1;
        } else
            ev[i] = gr_disconnected_like(x);
        if (!ev[i]) return g->status;
    }
    for (j = 0; j < node->n_out; j++) orop[j] = NULL;
    if (any_real) {
        st = node->op->rop ? node->op->rop(node, ev, orop) : gr__rop_by_pullback(node, ev, orop);
        if (st != GR_OK || g->status != GR_OK) {
            if (g->status == GR_OK) gr__error(g, st, "gr_rop: the R-op rule of %s failed (%s)", gr__on(node->op).s, gr_status_string(st));
            return g->status;
        }
    }
    for (j = 0; j < node->n_out; j++) {
        gr_var *y = gr__out(node)[j], *r = orop[j];
        if (r && !gr__is_marker(r)) {
            if (r->dtype != y->dtype && gr__is_float(y->dtype)) r = gr_cast(r, (gr_dtype)y->dtype);
            if (!r) return g->status;
            if (r->ndim != y->ndim)
                return gr__error(g, GR_ERR_TYPE, "gr_rop: the R-op rule of %s returned a tangent with %d dimensions for output %d, "
                                 "but %d are required", gr__on(node->op).s, r->ndim, j, y->ndim);
            state[y->id] = GR__T_REAL;
            tan[y->id] = r;
        } else
            state[y->id] = gr__no_tangent_state(node, j, state);
    }
    return GR_OK;
}

/* out[i]: f[i]'s tangent, zeros where it is known to be zero, else what the policies say */
static gr_status gr__rop_results(gr_graph *g, int n_f, gr_var *const *f, const uint8_t *state, const uint8_t *stop,
                                 gr_var *const *tan, gr_var **out, const gr_rop_opts *o) {
    int i;
    gr_status st;
    for (i = 0; i < n_f; i++) {
        gr_var *y = f[i], *r = NULL;
        int s = state[y->id];
        if (!gr__owner(y) && !stop[y->id]) s = GR__T_NONE;   /* a root not in wrt: no tangent reaches it */
        if (s == GR__T_REAL) r = tan[y->id];
        else if (s == GR__T_ZERO) r = gr__zeros_grad(y);
        else {
            if ((st = gr__rop_policy(g, o->disconnected_outputs, y)) != GR_OK) return st;
            if (o->return_disconnected == GR_RETURN_ZERO) r = gr__zeros_grad(y);
            else if (o->return_disconnected == GR_RETURN_DISCONNECTED) r = gr_disconnected_like(y);
            else { out[i] = NULL; continue; }
        }
        if (!r) return g->status != GR_OK ? g->status : GR_ERR_VALUE;
        out[i] = r;
    }
    return GR_OK;
}

GR_API gr_status gr_rop(int n_f, gr_var *const *f, int n_wrt, gr_var *const *wrt, gr_var *const *eval_points, gr_var **out,
                        const gr_rop_opts *opts) {
    gr_rop_opts o;
    gr_graph *g = NULL;
    uint8_t *state = NULL, *stop = NULL;
    gr_var **tan = NULL, **ev = NULL, **orop = NULL;
    gr_node **order = NULL;
    uint32_t n_order = 0, k, nv;
    int i, cap = 0;
    gr_status st;
    if (out) for (i = 0; i < n_f; i++) out[i] = NULL;
    for (i = 0; f && i < n_f && !g; i++) if (f[i]) g = f[i]->graph;
    for (i = 0; wrt && i < n_wrt && !g; i++) if (wrt[i]) g = wrt[i]->graph;
    for (i = 0; eval_points && i < n_wrt && !g; i++) if (eval_points[i]) g = eval_points[i]->graph;
    if (!g) return GR_ERR_VALUE;
    if (opts) o = *opts; else memset(&o, 0, sizeof o);
    if ((st = gr__rop_check(g, n_f, f, n_wrt, wrt, eval_points, out, &o)) != GR_OK) return st;
    nv = g->n_vars;
    state = (uint8_t *)gr__calloc(nv, 1);
    stop = (uint8_t *)gr__calloc(nv, 1);
    tan = (gr_var **)gr__calloc(nv, sizeof(gr_var *));
    if (!state || !stop || !tan) { st = gr__error(g, GR_ERR_NOMEM, "gr_rop: out of memory"); goto done; }
    for (i = n_wrt - 1; i >= 0; i--) {               /* the first of repeated wrt wins */
        stop[wrt[i]->id] = 1;
        state[wrt[i]->id] = GR__T_REAL;
        tan[wrt[i]->id] = eval_points[i];
    }
    if ((st = gr__toposort(g, n_f, f, stop, &order, &n_order)) != GR_OK) goto done;
    for (k = 0; k < n_order; k++) {
        gr_node *node = order[k];
        if (node->n_in > cap || node->n_out > cap) {
            cap = node->n_in > node->n_out ? node->n_in : node->n_out;
            GR_FREE(ev);
            ev = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(2 * cap));
            if (!ev) { st = gr__error(g, GR_ERR_NOMEM, "gr_rop: out of memory"); goto done; }
            orop = ev + cap;
        }
        if ((st = gr__rop_node(g, node, state, stop, tan, ev, orop)) != GR_OK) goto done;
    }
    st = gr__rop_results(g, n_f, f, state, stop, tan, out, &o);
done:
    if (st != GR_OK) for (i = 0; i < n_f; i++) out[i] = NULL;
    GR_FREE(state); GR_FREE(stop); GR_FREE(tan); GR_FREE(ev); GR_FREE(order);
    return st;
}
