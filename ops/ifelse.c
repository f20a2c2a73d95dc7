/* ops/ifelse.c: lazy conditionals (gr_ifelse, after aesara.ifelse).

   IfElse (cond, a, b) -> cond ? a : b, one node per pair: cond is 0-d (nonzero is true, -0.0 false,
   NaN true); a and b have one dtype and ndim and may differ in shape (the result has the shape of
   the side taken). The op is LAZY (src/impl.c): a compiled function gives every node the region of
   the conditionals' sides that read it and runs it only when that side is taken (src/function.c,
   src/call.c), and the gradient driver keeps a side's backward nodes inside it (src/grad.c): the
   rule below hands the output gradient to both sides as it is, and the driver makes it zero where
   it leaves a side untaken (Aesara's ifelse(cond, g, zeros), without computing zeros of an untaken
   value).

   Shapes: cond (), a (*s), b (*t) -> (*s) when cond is true, (*t) otherwise. */

#ifndef GR_NO_IFELSE                  /* ops/table.h, op families: the whole file */

/* out[i] = cond ? a_i : b_i; a weak constant on one side takes the other side's dtype */
GR_API gr_status gr_ifelse(gr_var *cond, int n, gr_var *const *then_vals, gr_var *const *else_vals, gr_var **out) {
    gr_graph *g = cond ? cond->graph : NULL;
    int i;
    if (out) for (i = 0; i < n; i++) out[i] = NULL;
    for (i = 0; !g && then_vals && i < n; i++) if (then_vals[i]) g = then_vals[i]->graph;
    for (i = 0; !g && else_vals && i < n; i++) if (else_vals[i]) g = else_vals[i]->graph;
    if (!g) return GR_ERR_VALUE;
    if (n < 0) return gr__error(g, GR_ERR_VALUE, "gr_ifelse: n is %d", n);
    if (n == 0) return GR_OK;
    if (!out || !then_vals || !else_vals)
        return gr__error(g, GR_ERR_VALUE, "gr_ifelse: %s is NULL", !out ? "out" : !then_vals ? "then_vals" : "else_vals");
    if (!cond) return g->status != GR_OK ? g->status : gr__error(g, GR_ERR_VALUE, "gr_ifelse: the condition is NULL");
    if (cond->graph != g) return gr__error(g, GR_ERR_VALUE, "gr_ifelse: the condition %s belongs to another graph", gr__d(cond).s);
    if (gr__is_marker(cond)) return gr__error(g, GR_ERR_TYPE, "gr_ifelse: the condition is a gradient marker, not a value");
    if (cond->ndim != 0) return gr__error(g, GR_ERR_TYPE, "gr_ifelse: the condition %s must be 0-d, not %d-d", gr__d(cond).s, cond->ndim);
    for (i = 0; i < n; i++) {
        gr_var *a = then_vals[i], *b = else_vals[i];
        if (!a || !b)
            return g->status != GR_OK ? g->status : gr__error(g, GR_ERR_VALUE, "gr_ifelse: %s[%d] is NULL", !a ? "then_vals" : "else_vals", i);
        if (a->graph != g || b->graph != g)
            return gr__error(g, GR_ERR_VALUE, "gr_ifelse: %s[%d] (%s) belongs to another graph", a->graph != g ? "then_vals" : "else_vals", i,
                             gr__d(a->graph != g ? a : b).s);
        if (gr__is_marker(a) || gr__is_marker(b))
            return gr__error(g, GR_ERR_TYPE, "gr_ifelse: %s[%d] is a gradient marker, not a value", gr__is_marker(a) ? "then_vals" : "else_vals", i);
        if (a->ndim != b->ndim || (a->dtype != b->dtype && !gr__is_weak(a) && !gr__is_weak(b)))
            return gr__error(g, GR_ERR_TYPE, "gr_ifelse: pair %d differs: then value %s is %s with %d dimensions, else value %s is %s with %d",
                             i, gr__d(a).s, gr_dtype_name((gr_dtype)a->dtype), a->ndim, gr__d(b).s, gr_dtype_name((gr_dtype)b->dtype), b->ndim);
    }
    for (i = 0; i < n; i++) {
        gr_var *in[3];
        in[0] = cond;
        in[1] = then_vals[i];
        in[2] = else_vals[i];
        if (in[1]->dtype != in[2]->dtype) {          /* one side is a weak constant */
            if (gr__is_weak(in[1]) && !gr__is_weak(in[2])) in[1] = gr__coerce(in[1], in[2]->dtype);
            else in[2] = gr__coerce(in[2], in[1]->dtype);
        }
        if (!(out[i] = gr__node1(g, &gr__op_IfElse, NULL, 0, 3, in))) break;
    }
    if (i < n) {
        for (i = 0; i < n; i++) out[i] = NULL;
        return g->status != GR_OK ? g->status : gr__error(g, GR_ERR_NOMEM, "gr_ifelse: out of memory");
    }
    return GR_OK;
}

/* one IfElse node (the rules' builder) */
static gr_var *gr__ifelse1(gr_var *cond, gr_var *a, gr_var *b) {
    gr_var *r = NULL;
    return gr_ifelse(cond, 1, &a, &b, &r) == GR_OK ? r : NULL;
}

/* the static shape: what both sides agree on */
static gr_status gr__IfElse_infer(const gr_node *node, gr_type *out) {
    const gr_var *a = gr__in(node)[1], *b = gr__in(node)[2];
    int d;
    out[0].dtype = (gr_dtype)a->dtype;
    out[0].ndim = a->ndim;
    for (d = 0; d < a->ndim; d++) out[0].shape[d] = gr__vshape(a)[d] == gr__vshape(b)[d] ? gr__vshape(a)[d] : -1;
    return GR_OK;
}

/* the side taken (the condition is computed when this is asked: gr_call runs such a function step by step) */
static int gr__ifelse_taken(const gr_array *cond) { return gr__load(cond->dtype, cond->data, 0) != 0; }

static gr_status gr__IfElse_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[gr__ifelse_taken(in[0]) ? 1 : 2];
    int d;
    (void)node;
    for (d = 0; d < x->ndim; d++) out[0]->shape[d] = x->shape[d];
    return GR_OK;
}

static gr_status gr__IfElse_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *x = in[gr__ifelse_taken(in[0]) ? 1 : 2];
    (void)node;
    if (x->size && x->data != out[0]->data) memcpy(out[0]->data, x->data, (size_t)x->size * gr__dsize(x->dtype));
    return GR_OK;
}

/* Each side receives the output gradient as it is: valid where that side is taken, and the driver
   (src/grad.c) makes a term zero where it leaves the side (ifelse(cond, g, zeros like the variable
   it reaches)), so that the side's backward nodes run only when it is taken. The condition gets
   real zeros (Aesara's condition.zeros_like()). */
static gr_status gr__IfElse_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    int k;
    if (!(ig[0] = gr__zeros_grad(gr__in(node)[0]))) return node->graph->status;
    for (k = 1; k <= 2; k++) {
        gr_var *x = gr__in(node)[k];
        if (gr_is_disconnected(og[0])) ig[k] = gr_disconnected_like(x);
        else if (!gr__is_float(gr__out(node)[0]->dtype)) ig[k] = gr__zeros_grad(x);
        else ig[k] = og[0];
        if (!ig[k]) return node->graph->status;
    }
    return GR_OK;
}

/* R-op: ifelse(cond, R_a, R_b); a side without a tangent gives zeros like its value (computed on
   that side only) */
static gr_status gr__IfElse_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *t[3];
    int k;
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || (gr_is_disconnected(ev[1]) && gr_is_disconnected(ev[2]))) return GR_OK;
    for (k = 1; k <= 2; k++) {
        t[k] = gr_is_disconnected(ev[k]) ? gr__zeros_grad(gr__in(node)[k]) : ev[k];
        if (t[k] && t[k]->dtype != gr__out(node)[0]->dtype) t[k] = gr_cast(t[k], (gr_dtype)gr__out(node)[0]->dtype);
    }
    orop[0] = gr__ifelse1(gr__in(node)[0], t[1], t[2]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* batched sides: the other side gains the batch axis too; a batched condition (one per row) is
   applied row by row */
static gr_status gr__IfElse_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    gr_var *a = in[1], *b = in[2];
    if (batched[0]) return gr__map_batch(node, in, batched, out);
    if (batched[1] && !batched[2]) b = gr__batch_like(b, a);
    if (batched[2] && !batched[1]) a = gr__batch_like(a, b);
    out[0] = gr__ifelse1(in[0], a, b);
    return out[0] ? GR_OK : node->graph->status;
}

/* the shape of a side when both sides have it in every call */
static void gr__IfElse_sig(gr__rewriter *rw, const gr_node *node, int32_t *out) {
    if (gr__sig_same(rw, gr__in(node)[1], gr__in(node)[2])) gr__sig_copy(rw, gr__in(node)[1], out);
}

/* a constant condition chooses its side; ifelse(c, ifelse(c, a, b), ifelse(c, d, e)) -> ifelse(c, a, e);
   ifelse(c, a, a) -> a (the same shape whichever side) */
static gr_var *gr__IfElse_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    gr_var *ins[3];
    int k, changed = 0;
    (void)params;
    if (in[0]->kind == GR__VK_CONST)
        return gr__replaced(done, in[gr_array_get((const gr_array *)gr__ext(in[0]), 0) != 0 ? 1 : 2]);
    if (in[1] == in[2]) return gr__replaced(done, in[1]);
    ins[0] = in[0];
    for (k = 1; k <= 2; k++) {
        const gr_node *n = gr__owner(in[k]);
        ins[k] = in[k];
        if (n && n->op == op && gr__in(n)[0] == in[0]) { ins[k] = gr__in(n)[k]; changed = 1; }
    }
    if (!changed) return NULL;
    return gr__replaced(done, gr__rw1(rw, op, NULL, 0, 3, ins));
}

/* ---- C code generation (gr_fn_emit_c) ------------------------------------------------------------------

   The emitted function is lazy as gr_call is: the steps of each side sit in an `if` block on the
   condition (src/emit.c, from the function's regions); this node copies the side taken. An emitted
   function has one shape per value: when the sides' shapes differ for the example's shapes, the
   node is specialised to the side the example takes (the function run on the example up to it; the
   then side where the example does not reach it), and the emitted code returns GR_ERR_SHAPE when a
   call takes the other side. Inside an op made of a graph or a loop's body (no example of its own)
   such a node is not emitted (GR_ERR_SHAPE, naming it). */
static int gr__ifelse_same_shape(const gr_array *a, const gr_array *b) {
    int d;
    for (d = 0; d < a->ndim; d++) if (a->shape[d] != b->shape[d]) return 0;
    return 1;
}
static gr_status gr__IfElse_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    char c[GR__EM_OPND], y[GR__EM_OPND];
    unsigned long bytes = (unsigned long)((size_t)out[0]->size * gr__dsize(out[0]->dtype));
    int side;
    if (gr__em_shaping(e)) {
        if (gr__ifelse_same_shape(in[1], in[2])) side = 1;
        else if ((side = gr__em_example_side(e)) == -2)
            return gr__em_fail(e, GR_ERR_SHAPE, "gr_fn_emit_c: IfElse %s: its sides have the shapes %s and %s, and the side an example "
                               "takes is not known inside an op made of a graph or a loop (an emitted function has one shape per value)",
                               gr__d(gr__out(node)[0]).s, gr__as(in[1]).s, gr__as(in[2]).s);
        gr__em_set_shape(e, 0, in[side != 0 ? 1 : 2]->shape);
        return GR_OK;
    }
    snprintf(c, sizeof c, "%s", gr__em_in(e, 0));
    snprintf(y, sizeof y, "%s", gr__em_out(e, 0));
    if (gr__ifelse_same_shape(in[1], in[2])) {
        char a[GR__EM_OPND];
        snprintf(a, sizeof a, "%s", gr__em_in(e, 1));
        gr__em_line(e, "memcpy(%s, %s[0] != 0 ? (const void *)%s : (const void *)%s, %lu);", y, c, a, gr__em_in(e, 2), bytes);
        return GR_OK;
    }
    side = gr__ifelse_same_shape(out[0], in[1]);      /* the side it was specialised to (shape phase) */
    gr__em_line(e, "if (%s[0] %s 0) return %d;   /* the other side's shape: not this file's */", c, side ? "==" : "!=", (int)GR_ERR_SHAPE);
    gr__em_line(e, "memcpy(%s, %s, %lu);", y, gr__em_in(e, side ? 1 : 2), bytes);
    return GR_OK;
}
#else /* GR_NO_IFELSE: the gradient driver names gr_ifelse (src/grad.c), only for nodes of IfElse */
GR_API gr_status gr_ifelse(gr_var *cond, int n, gr_var *const *then_vals, gr_var *const *else_vals, gr_var **out) {
    int i;
    for (i = 0; out && i < n; i++) out[i] = NULL;
    (void)then_vals; (void)else_vals;
    if (!cond) return GR_ERR_VALUE;
    return gr__error(cond->graph, GR_ERR_VALUE, "gr_ifelse: gradient.h was built without conditionals (GR_NO_IFELSE)");
}
#endif /* GR_NO_IFELSE */
