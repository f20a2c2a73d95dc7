/* src/simplify.c: local simplification (src/rewrite.h). A node about to be built is replaced by what
   the first applicable rule of its row builds: the `simp` rule of a structural row, or the rows of
   GR_ELEMWISE_REWRITES for an elementwise one. A replacement is built through the rewrites in turn,
   and a node's inputs are final when it is built, so one pass reaches the fixed point. */

/* ---- recognising values ---------------------------------------------------------------------------- */

/* v is the 0-d constant c */
static int gr__rw_is_scalar(const gr_var *v, double c) {
    return v->kind == GR__VK_CONST && v->ndim == 0 && gr_array_get((const gr_array *)gr__ext(v), 0) == c;
}

/* v is a fill (a FILL row: input 0 broadcast to input 1's shape): the value filled, and *ref; NULL otherwise */
static gr_var *gr__rw_filled(const gr_var *v, gr_var **ref) {
    const gr_node *n = gr__owner(v);
    if (!n || !(gr__flags_of(n->op) & GR__OPF_FILL)) return NULL;
    *ref = gr__in(n)[1];
    return gr__in(n)[0];
}

/* v is zeros: a 0-d zero (*ref = NULL) or a 0-d zero filled to the shape of *ref */
static int gr__rw_zeros(const gr_var *v, gr_var **ref) {
    gr_var *x;
    if (gr__rw_is_scalar(v, 0.0)) { *ref = NULL; return 1; }
    return (x = gr__rw_filled(v, ref)) != NULL && gr__rw_is_scalar(x, 0.0);
}

/* zeros of dtype dt shaped like ref (a 0-d zero when ref is NULL or 0-d) */
static gr_var *gr__rw_zero_fill(gr__rewriter *rw, int dt, gr_var *ref) {
    gr_var *z = gr__scalar_const(rw->cg, dt, 0.0, 0);
    if (!z || !ref || ref->ndim == 0) return z;
    return gr__rw_fill(rw, z, ref);
}

/* ---- asking the rows ------------------------------------------------------------------------------- */

/* none: a structural row without simplifications */
static gr_var *gr__none_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    (void)rw; (void)op; (void)params; (void)in; (void)done;
    return NULL;
}

/* node op(params; in)'s replacement, or NULL with *done 0 when it is built as it is */
static gr_var *gr__rw_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    const gr__row_rules *rules;
    *done = 0;
    if (gr__flags_of(op) & GR__OPF_ELEMWISE) {
        const gr__ew_rewrite *e;
        int row = gr__code_of(op);
        for (e = gr__ew_rewrites; e->rule; e++) {
            gr_var *r;
            if (e->row != row) continue;
            r = e->rule(rw, row, in, done);
            if (*done) return r;
        }
        return NULL;
    }
    rules = gr__rules_of(op);
    return rules ? rules->simplify(rw, op, params, in, done) : NULL;
}
