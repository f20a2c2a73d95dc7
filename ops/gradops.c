/* ops/gradops.c: identities in the forward pass that change only the gradient (Aesara's
   zero_grad, disconnected_grad, grad_clip, ...). gr_function removes them: they compute nothing.
   Their R-ops are those of the forward identity, except where no derivative flows (below). */

typedef struct gr__clip_params { double lo, hi; } gr__clip_params;
typedef struct gr__scale_params { double m; } gr__scale_params;

static gr_var *gr__gradop(const char *fname, const gr_op_def *op, gr_var *x, const void *params, size_t size) {
    gr_graph *g;
    if (!gr__operands(fname, 1, &x, &g)) return NULL;
    return gr__node1(g, op, params, size, 1, &x);
}

GR_API gr_var *gr_zero_grad(gr_var *x) { return gr__gradop("gr_zero_grad", &gr__op_ZeroGrad, x, NULL, 0); }
GR_API gr_var *gr_disconnected_grad(gr_var *x) { return gr__gradop("gr_disconnected_grad", &gr__op_DisconnectedGrad, x, NULL, 0); }
GR_API gr_var *gr_undefined_grad(gr_var *x) { return gr__gradop("gr_undefined_grad", &gr__op_UndefinedGrad, x, NULL, 0); }
GR_API gr_var *gr_consider_constant(gr_var *x) {
    if (x) gr__log(x->graph, "gr_consider_constant is deprecated: use gr_zero_grad or gr_disconnected_grad");
    return gr__gradop("gr_consider_constant", &gr__op_ConsiderConstant, x, NULL, 0);
}
GR_API gr_var *gr_grad_clip(gr_var *x, double lower, double upper) {
    gr__clip_params p;
    if (!x) return NULL;
    if (!(upper >= lower))
        return gr__fail(x->graph, GR_ERR_VALUE, "gr_grad_clip: the upper bound %g of %s should be >= the lower bound %g",
                        upper, gr__d(x).s, lower);
    memset(&p, 0, sizeof p);
    p.lo = lower;
    p.hi = upper;
    return gr__gradop("gr_grad_clip", &gr__op_GradClip, x, &p, sizeof p);
}
GR_API gr_var *gr_grad_scale(gr_var *x, double multiplier) {
    gr__scale_params p;
    memset(&p, 0, sizeof p);
    p.m = multiplier;
    return gr__gradop("gr_grad_scale", &gr__op_GradScale, x, &p, sizeof p);
}

/* forward: the identity (the output shares the input's memory when not removed) */
static gr_status gr__identity_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    if (in[0]->size && out[0]->data != in[0]->data)
        memcpy(out[0]->data, in[0]->data, (size_t)in[0]->size * gr__dsize(in[0]->dtype));
    return GR_OK;
}
#define GR__IDENTITY_PERFORM(Name) \
    static gr_status gr__##Name##_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) { \
        return gr__identity_perform(node, in, out); }
GR__IDENTITY_PERFORM(ZeroGrad)
GR__IDENTITY_PERFORM(DisconnectedGrad)
GR__IDENTITY_PERFORM(ConsiderConstant)
GR__IDENTITY_PERFORM(GradClip)
GR__IDENTITY_PERFORM(GradScale)
GR__IDENTITY_PERFORM(UndefinedGrad)

/* zero_grad, consider_constant: zeros shaped like the output gradient */
static gr_status gr__ZeroGrad_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr__fill_like(og[0], og[0]->dtype, 0.0);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__ConsiderConstant_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { return gr__ZeroGrad_grad(node, og, ig); }
static gr_status gr__DisconnectedGrad_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    (void)og;
    ig[0] = gr_disconnected_like(gr__in(node)[0]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__UndefinedGrad_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    (void)og;
    ig[0] = gr_grad_undefined(node, 0, gr__in(node)[0], "gr_undefined_grad marks it so");
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__GradClip_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__clip_params *p = (const gr__clip_params *)gr__params(node);
    ig[0] = gr_clip(og[0], gr_const(node->graph, p->lo), gr_const(node->graph, p->hi));
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__GradScale_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__scale_params *p = (const gr__scale_params *)gr__params(node);
    ig[0] = gr_mul(og[0], gr_const(node->graph, p->m));
    return ig[0] ? GR_OK : node->graph->status;
}

/* R-ops: zeros shaped like the output (the op says the derivative is 0); m v (the gradient is
   scaled by m, so is the tangent); v; and no tangent through the last two (no derivative exists) */
static gr_status gr__ZeroGrad_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__fill_like(gr__out(node)[0], gr__grad_dtype(gr__out(node)[0]), 0.0);
    return orop[0] ? GR_OK : node->graph->status;
}
static gr_status gr__ConsiderConstant_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) { return gr__ZeroGrad_rop(node, ev, orop); }
static gr_status gr__GradScale_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__scale_params *p = (const gr__scale_params *)gr__params(node);
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr_mul(ev[0], gr_const(node->graph, p->m));
    return orop[0] ? GR_OK : node->graph->status;
}
static gr_status gr__GradClip_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node;
    orop[0] = gr_is_disconnected(ev[0]) ? NULL : ev[0];
    return GR_OK;
}
static gr_status gr__DisconnectedGrad_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node; (void)ev;
    orop[0] = NULL;
    return GR_OK;
}
static gr_status gr__UndefinedGrad_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node; (void)ev;
    orop[0] = NULL;
    return GR_OK;
}

/* ---- C code generation (gr_fn_emit_c): a copy (a compiled function removes these nodes, or plans
   them as views of their input) ----------------------------------------------------------------- */

static gr_status gr__identity_emit(gr__em *e, const gr_array *const *in, const gr_array *const *out) {
    if (out[0]->size > 0)
        gr__em_line(e, "memmove(%s, %s, %lu);", gr__em_out(e, 0), gr__em_in(e, 0), (unsigned long)((size_t)in[0]->size * gr__dsize(in[0]->dtype)));
    return GR_OK;
}
#define GR__IDENTITY_EMIT(Name) \
    static gr_status gr__##Name##_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) { \
        (void)node; return gr__identity_emit(e, in, out); }
GR__IDENTITY_EMIT(ZeroGrad)
GR__IDENTITY_EMIT(DisconnectedGrad)
GR__IDENTITY_EMIT(ConsiderConstant)
GR__IDENTITY_EMIT(GradClip)
GR__IDENTITY_EMIT(GradScale)
GR__IDENTITY_EMIT(UndefinedGrad)
