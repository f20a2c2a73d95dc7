/* src/call.c: gr_call: the shapes of a call, the memory plan, running the steps, the results.

   The plan gives every computed slot of a gr_fn (src/function.c) its memory: a view into another
   slot, an input's buffer taken over in place, or one of the function's buffers, reused once every
   slot living in it is dead. It is made at the first call and again only when some shape changes,
   so a steady-state call allocates nothing. */

/* ---- the memory plan ---------------------------------------------------------------------------- */

/* the slot whose memory s finally lives in */
static int32_t gr__slot_root(const gr_fn *f, int32_t s) {
    while (f->slots[s].view_of >= 0) s = f->slots[s].view_of;
    return s;
}

static size_t gr__slot_bytes(const gr__slot *s) {
    size_t b = (size_t)s->arr.size * gr__dsize(s->arr.dtype);
    return b ? b : 1;
}

/* The free buffers, grouped by capacity: one list (through plan_next) per capacity, the capacities
   sorted, so that the smallest free buffer that fits is a binary search away however many are free
   (a scan of one free list was quadratic in graphs that free many small buffers and then ask for a
   big one). Graphs have few distinct sizes: inserting a new one moves few entries. */

/* the first class with a capacity >= need (n when none) */
static int32_t gr__cap_find(const struct gr__cap_class *cls, int32_t n, size_t need) {
    int32_t lo = 0, hi = n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (cls[mid].cap < need) lo = mid + 1; else hi = mid;
    }
    return lo;
}
static void gr__cap_release(struct gr__cap_class *cls, int32_t *n, int32_t *next, size_t cap, int32_t b) {
    int32_t at = gr__cap_find(cls, *n, cap);
    if (at == *n || cls[at].cap != cap) {
        memmove(cls + at + 1, cls + at, sizeof(*cls) * (size_t)(*n - at));
        cls[at].cap = cap;
        cls[at].head = -1;
        (*n)++;
    }
    next[b] = cls[at].head;
    cls[at].head = b;
}
static int32_t gr__cap_take(struct gr__cap_class *cls, int32_t *n, const int32_t *next, int32_t at) {
    int32_t b = cls[at].head;
    cls[at].head = next[b];
    if (cls[at].head < 0) { memmove(cls + at, cls + at + 1, sizeof(*cls) * (size_t)(*n - at - 1)); (*n)--; }
    return b;
}

/* Whether step k may write its output into the buffer of its input q. The input must die here,
   own its buffer alone (no view of it lives on: refs 1) and match the output's size; and no other
   value the step reads may live in that buffer, or the writes would change what is still to be
   read. An elementwise op reads each input at the position it writes, so the same slot read twice
   (add(y, y)) is safe; an INPLACE0 op (ViewUpdate, TakeUpdate) writes input 0 at positions other
   than those it reads its other inputs at, so there every other input that is the same slot (the
   user's y = the view's base, also when compilation removed an identity between them), a view of
   it or a value it is a view of blocks the reuse. */
static int gr__fn_inplace_ok(const gr_fn *f, const gr_node *node, const int32_t *io, int q, int64_t k, const gr__slot *out) {
    const gr__slot *in = &f->slots[io[q]];
    int q2, same_pos = (gr__flags_of(node->op) & GR__OPF_ELEMWISE) != 0;
    if (in->last_use != k || in->buf < 0 || in->view_of >= 0 || f->plan_refs[in->buf] != 1 || in->arr.size != out->arr.size ||
        gr__dsize(in->arr.dtype) != gr__dsize(out->arr.dtype))
        return 0;
    for (q2 = 0; q2 < node->n_in; q2++)
        if (q2 != q && f->slots[gr__slot_root(f, io[q2])].buf == in->buf && !(same_pos && io[q2] == io[q])) return 0;
    return 1;
}

/* the planner's state: the free buffers by capacity (f->plan_cls, n_cls of them) and the buffers
   made so far; f->plan_refs counts the slots living in each buffer, f->plan_caps its capacity */
typedef struct gr__planner { int32_t n_cls, n_bufs; } gr__planner;

/* output j of step k: a view of input 0, in place over a dying input, or a free buffer that fits
   (the largest one grown, or a new one, when none does) */
static void gr__plan_output(gr_fn *f, gr__planner *pl, int64_t k, int j) {
    gr_node *node = f->steps[k];
    const int32_t *io = f->step_io + f->step_io_at[k];
    int32_t *refs = f->plan_refs, b = -1;
    size_t *caps = f->plan_caps;
    gr__slot *out = &f->slots[io[node->n_in + j]];
    size_t need = gr__slot_bytes(out);
    unsigned flags = gr__flags_of(node->op);
    int64_t off = -1;
    if (j == 0 && gr__alias_of(node->op) && node->n_in > 0)
        off = gr__alias_of(node->op)(node, f->io + f->step_io_at[k], &out->arr);
    if (off >= 0) {                                      /* a view of input 0 */
        int32_t r = gr__slot_root(f, io[0]);
        out->view_of = io[0];
        out->view_off = off;
        if (f->slots[r].buf >= 0) refs[f->slots[r].buf]++;
        return;
    }
    if (flags & (GR__OPF_ELEMWISE | GR__OPF_INPLACE0)) {   /* in place over an input read here last */
        int q, nq = (flags & GR__OPF_ELEMWISE) ? node->n_in : 1;
        for (q = 0; q < nq && b < 0; q++)
            if (gr__fn_inplace_ok(f, node, io, q, k, out)) { b = f->slots[io[q]].buf; refs[b]++; }
    }
    if (b < 0) {
        int32_t at = gr__cap_find(f->plan_cls, pl->n_cls, need);
        if (at < pl->n_cls) b = gr__cap_take(f->plan_cls, &pl->n_cls, f->plan_next, at);
        else if (pl->n_cls > 0) {                        /* grow the largest free buffer */
            b = gr__cap_take(f->plan_cls, &pl->n_cls, f->plan_next, pl->n_cls - 1);
            caps[b] = need;
        } else {                                         /* a new buffer: as big as what it already has */
            b = pl->n_bufs++;
            caps[b] = b < f->cap_bufs && f->bufs[b].cap > need ? f->bufs[b].cap : need;
        }
        refs[b] = 1;
    }
    out->buf = b;
}

/* after step k: what it read for the last time, and outputs nobody reads, return their buffers */
static void gr__plan_release(gr_fn *f, gr__planner *pl, int64_t k) {
    gr_node *node = f->steps[k];
    const int32_t *io = f->step_io + f->step_io_at[k];
    int j;
    for (j = 0; j < node->n_in + node->n_out; j++) {
        int32_t q = io[j], rb;
        gr__slot *sl = &f->slots[q];
        if (sl->kind != GR__SK_COMPUTED) continue;
        if (j < node->n_in ? sl->last_use != k : sl->last_use != -1) continue;
        if (f->plan_seen[q] == k) continue;              /* read twice by this step: released once */
        f->plan_seen[q] = k;
        rb = f->slots[gr__slot_root(f, q)].buf;
        if (rb >= 0 && --f->plan_refs[rb] == 0) gr__cap_release(f->plan_cls, &pl->n_cls, f->plan_next, f->plan_caps[rb], rb);
    }
}

/* the n_bufs buffers made real, an old allocation kept where it is big enough; 0 when out of memory */
static int gr__plan_buffers(gr_fn *f, int32_t n_bufs) {
    int64_t s;
    int32_t i;
    if (n_bufs > f->cap_bufs) {
        gr__buffer *nb = (gr__buffer *)GR_REALLOC(f->bufs, sizeof(gr__buffer) * (size_t)n_bufs);
        if (!nb) return 0;
        for (i = f->cap_bufs; i < n_bufs; i++) { nb[i].data = NULL; nb[i].cap = 0; }
        f->bufs = nb;
        f->cap_bufs = n_bufs;
    }
    for (i = 0; i < n_bufs; i++) {
        if (f->bufs[i].data && f->bufs[i].cap >= f->plan_caps[i]) continue;
        GR_FREE(f->bufs[i].data);
        f->bufs[i].data = GR_MALLOC(f->plan_caps[i] + 64);
        f->bufs[i].cap = f->bufs[i].data ? f->plan_caps[i] : 0;
        if (!f->bufs[i].data) return 0;
    }
    for (s = 0; s < f->n_slots; s++)
        if (f->slots[s].buf >= 0) f->slots[s].arr.data = f->bufs[f->slots[s].buf].data;
    return 1;
}

/* *b holds at least need bytes (its contents are not kept); 0 when out of memory */
static int gr__buffer_fit(gr__buffer *b, size_t need) {
    if (b->cap >= need) return 1;
    GR_FREE(b->data);
    b->data = GR_MALLOC(need);
    b->cap = b->data ? need : 0;
    return b->data != NULL;
}

/* the scratch array holds at least need bytes (kept from call to call); 0 when out of memory */
static int gr__scratch_fit(gr_fn *f, size_t need) {
    if (!gr__buffer_fit(&f->scratch_buf, need)) return 0;
    f->scratch.data = f->scratch_buf.data;
    f->scratch.dtype = GR_F64;
    f->scratch.ndim = 1;
    f->scratch.shape[0] = f->scratch.size = (int64_t)(f->scratch_buf.cap / sizeof(double));
    return 1;
}
/* the work memory step k needs, its shapes settled */
static size_t gr__step_scratch(const gr_fn *f, int64_t k) {
    const gr_node *node = f->steps[k];
    const gr_array *const *io = f->io + f->step_io_at[k];
    return gr__scratch_bytes(node, io, (const gr_array *const *)(io + node->n_in));
}

/* room for the outputs and update values that live in memory the function does not own (an input's,
   a shared variable's): outputs are copied out, and update values staged before any is written */
static int gr__plan_external(gr_fn *f) {
    int i;
    if (!f->out_copy && f->n_out && !(f->out_copy = (gr_array *)gr__calloc((size_t)f->n_out, sizeof(gr_array)))) return 0;
    if (!f->out_bufs && f->n_out && !(f->out_bufs = (gr__buffer *)gr__calloc((size_t)f->n_out, sizeof(gr__buffer)))) return 0;
    if (!f->stage && f->n_upd && !(f->stage = (gr__buffer *)gr__calloc((size_t)f->n_upd, sizeof(gr__buffer)))) return 0;
    for (i = 0; i < f->n_upd; i++) {
        f->upd_staged[i] = f->slots[gr__slot_root(f, f->upd_slot[i])].kind == GR__SK_SHARED;
        if (f->upd_staged[i] && !gr__buffer_fit(&f->stage[i], gr__slot_bytes(&f->slots[f->upd_slot[i]]))) return 0;
    }
    for (i = 0; i < f->n_out; i++)
        if (f->slots[gr__slot_root(f, f->out_slot[i])].external &&
            !gr__buffer_fit(&f->out_bufs[i], gr__slot_bytes(&f->slots[f->out_slot[i]])))
            return 0;
    return 1;
}

/* an empty plan: no buffer yet, every slot without one */
static void gr__plan_reset(gr_fn *f, gr__planner *pl) {
    int64_t s;
    pl->n_cls = 0;
    pl->n_bufs = 0;
    for (s = 0; s < f->n_slots; s++) {
        gr__slot *sl = &f->slots[s];
        sl->buf = -1;
        sl->view_of = -1;
        sl->view_off = 0;
        f->plan_seen[s] = -1;
    }
}

/* Assigns every computed slot a buffer, a view, or in-place reuse of a dying input, walking the
   schedule once: a buffer returns to the free buffers after the last read of every slot living in
   it, and a new slot takes the smallest free buffer that fits. The walk alone allocates nothing:
   *n_bufs buffers of f->plan_caps bytes, and the largest scratch a step needs, returned
   (gr_fn_emit_c lays them out in its work buffer); gr__fn_plan makes them real. */
static size_t gr__fn_plan_walk(gr_fn *f, int32_t *n_bufs) {
    gr__planner pl;
    int64_t k;
    size_t need = 0;
    int j;
    gr__plan_reset(f, &pl);
    for (k = 0; k < f->n_steps; k++) {
        size_t w = gr__step_scratch(f, k);
        if (w > need) need = w;
        for (j = 0; j < f->steps[k]->n_out; j++) gr__plan_output(f, &pl, k, j);
        gr__plan_release(f, &pl, k);
    }
    *n_bufs = pl.n_bufs;
    return need;
}
/* the program of f's one step when f is one Fused node of float64 scalars (gr__fused_scalar_prog)
   planned for one-element inputs and outputs in buffers of its own, with no shared variable or
   update: gr_call then runs it alone (gr__call_scalar); else NULL */
static gr__fprog *gr__plan_scalar(const gr_fn *f) {
    const gr_node *node = f->n_steps == 1 ? f->steps[0] : NULL;
    const int32_t *io = f->step_io + (f->n_steps == 1 ? f->step_io_at[0] : 0);
    int i;
    if (!node || f->dynamic || !f->shape_pure || f->n_shared_slots || f->n_upd || !gr__fused_scalar_prog(node)) return NULL;
    for (i = 0; i < f->n_in; i++)
        if (f->slots[f->in_slot[i]].arr.dtype != GR_F64 || f->slots[f->in_slot[i]].arr.size != 1) return NULL;
    for (i = 0; i < node->n_in + node->n_out; i++) {
        const gr__slot *sl = &f->slots[io[i]];
        if (sl->arr.dtype != GR_F64 || sl->arr.size != 1 || (i >= node->n_in && (sl->buf < 0 || sl->view_of >= 0 || sl->external)))
            return NULL;
    }
    for (i = 0; i < f->n_out; i++)
        if (f->slots[f->out_slot[i]].view_of >= 0 || f->slots[f->out_slot[i]].external) return NULL;
    return gr__fused_scalar_prog(node);
}
static gr_status gr__fn_plan(gr_fn *f) {
    int32_t n_bufs;
    size_t need;
    f->planned = 0;
    f->scalar = NULL;
    need = gr__fn_plan_walk(f, &n_bufs);
    if (!gr__plan_buffers(f, n_bufs) || !gr__plan_external(f) || !gr__scratch_fit(f, need)) return GR_ERR_NOMEM;
    f->planned = 1;
    f->scalar = gr__plan_scalar(f);
    return GR_OK;
}

/* ---- calling ----------------------------------------------------------------------------------- */

/* moves an error recorded on the private graph (by an op's shape rule or perform) to f */
static gr_status gr__fn_take_error(gr_fn *f, gr_status st, const gr_node *node) {
    if (f->g->status != GR_OK) {
        st = f->g->status;
        size_t n = strlen(f->g->message);
        memcpy(f->message, "gr_call: ", 9);
        if (n > sizeof f->message - 10) n = sizeof f->message - 10;
        memcpy(f->message + 9, f->g->message, n);
        f->message[9 + n] = 0;
        gr_graph_clear_error(f->g);
    } else
        gr__fn_error(f, st, "gr_call: %s failed computing %s (%s)", gr__on(node->op).s, gr__d(gr__out(node)[0]).s, gr_status_string(st));
    return st;
}

/* checks a slot's shape against its static type and notes whether it changed since the plan */
static gr_status gr__fn_settle_shape(gr_fn *f, int64_t s, int *changed) {
    gr__slot *sl = &f->slots[s];
    int64_t *cache = f->shape_cache + f->shape_at[s];
    int64_t size = gr__shape_size(sl->arr.ndim, sl->arr.shape);
    int i;
    if (size < 0) return gr__fn_error(f, GR_ERR_SHAPE, "gr_call: %s would have the invalid shape %s", gr__d(sl->var).s, gr__as(&sl->arr).s);
    if ((uint64_t)size > (uint64_t)(SIZE_MAX - 128) / gr__dsize(sl->arr.dtype))   /* its bytes would not fit a size_t */
        return gr__fn_error(f, GR_ERR_SHAPE, "gr_call: %s would have the shape %s, too large for memory", gr__d(sl->var).s,
                            gr__as(&sl->arr).s);
    sl->arr.size = size;
    for (i = 0; i < sl->arr.ndim; i++)
        if (gr__vshape(sl->var)[i] >= 0 && gr__vshape(sl->var)[i] != sl->arr.shape[i])
            return gr__fn_error(f, GR_ERR_SHAPE, "gr_call: %s has shape %s, but its static shape is %s", gr__d(sl->var).s,
                                gr__as(&sl->arr).s, gr__vs(sl->var).s);
    if (cache[0] != size) { cache[0] = size; *changed = 1; }
    for (i = 0; i < sl->arr.ndim; i++)
        if (cache[i + 1] != sl->arr.shape[i]) { cache[i + 1] = sl->arr.shape[i]; *changed = 1; }
    if (*changed) f->planned = 0;        /* a call failing before the plan must not keep the old one */
    return GR_OK;
}

/* binds the caller's arrays to the input slots, after checking them against the function's types */
static gr_status gr__call_bind(gr_fn *f, const gr_array *const *inputs) {
    int i, d;
    for (i = 0; i < f->n_in; i++) {
        const gr_array *a = inputs[i];
        gr__slot *sl = &f->slots[f->in_slot[i]];
        if (!a) return gr__fn_error(f, GR_ERR_VALUE, "gr_call: input %d (%s) is NULL", i, gr__d(sl->var).s);
        if (!gr__array_valid(a)) return gr__fn_error(f, GR_ERR_VALUE, "gr_call: input %d (%s) is a malformed array", i, gr__d(sl->var).s);
        if (a->dtype != sl->arr.dtype || a->ndim != sl->arr.ndim)
            return gr__fn_error(f, GR_ERR_TYPE, "gr_call: input %d (%s) must be %s with %d dimensions, not %s with %d", i,
                                gr__d(sl->var).s, gr_dtype_name(sl->arr.dtype), sl->arr.ndim, gr_dtype_name(a->dtype), a->ndim);
        for (d = 0; d < a->ndim; d++)
            if (gr__vshape(sl->var)[d] >= 0 && gr__vshape(sl->var)[d] != a->shape[d])
                return gr__fn_error(f, GR_ERR_SHAPE, "gr_call: input %d (%s) has shape %s, but the function takes %s", i,
                                    gr__d(sl->var).s, gr__as(a).s, gr__vs(sl->var).s);
        for (d = 0; d < a->ndim; d++) sl->arr.shape[d] = a->shape[d];
        sl->arr.size = a->size;
        sl->arr.data = a->data;
    }
    return GR_OK;
}

/* The steady call: a function that is planned, whose steps' shapes follow from its leaves' alone
   and that has no shared variable, called with inputs of the dtypes and shapes of its plan (hence
   valid: the plan's shapes were checked). Their data bound, 1; else 0, and the full checks run (they
   bind every input again, and name what is wrong). */
static int gr__call_bind_steady(gr_fn *f, const gr_array *const *inputs) {
    int i, d;
    if (!f->planned || !f->shape_pure || f->dynamic || f->n_shared_slots) return 0;
    for (i = 0; i < f->n_in; i++) {
        const gr_array *a = inputs[i];
        int32_t s = f->in_slot[i];
        gr_array *b = &f->slots[s].arr;
        const int64_t *cache = f->shape_cache + f->shape_at[s];
        if (!a || a->dtype != b->dtype || a->ndim != b->ndim || a->size != cache[0] || (!a->data && a->size)) return 0;
        for (d = 0; d < a->ndim; d++) {
            if (a->shape[d] != cache[d + 1]) return 0;
            b->shape[d] = a->shape[d];
        }
        b->size = a->size;
        b->data = a->data;
    }
    return 1;
}

/* The shortest call: f is one Fused node of float64 scalars (f->scalar, set by the plan), called
   with one-element float64 inputs: they are bound, the program runs on their values and writes the
   outputs' buffers, with nothing else to check (no other shape, no view, no copy). 0 when some input
   is not such (nothing run; the other paths bind every input again, and name what is wrong). */
static int gr__call_scalar(gr_fn *f, const gr_array *const *inputs, const gr_array **outputs) {
    const gr_array *const *io = f->io + f->step_io_at[0];
    int i, d;
    for (i = 0; i < f->n_in; i++) {
        const gr_array *a = inputs[i];
        gr_array *b = &f->slots[f->in_slot[i]].arr;
        if (!a || a->dtype != GR_F64 || a->size != 1 || a->ndim != b->ndim || !a->data) return 0;
        for (d = 0; d < a->ndim; d++)
            if (a->shape[d] != 1) return 0;
        b->data = a->data;
    }
    gr__fscalar_call(f->scalar, io, (gr_array *const *)(io + f->steps[0]->n_in));
    for (i = 0; i < f->n_out; i++) outputs[i] = &f->slots[f->out_slot[i]].arr;
    return 1;
}

/* a shared variable's slot bound to its storage's value; 0 when its shape is not the static one */
static int gr__call_bind_shared(gr__slot *sl) {
    const gr_array *v = ((const gr__storage *)gr__ext(sl->var))->value;
    int d;
    for (d = 0; d < v->ndim; d++)
        if (gr__vshape(sl->var)[d] >= 0 && gr__vshape(sl->var)[d] != v->shape[d]) return 0;
    for (d = 0; d < v->ndim; d++) sl->arr.shape[d] = v->shape[d];
    sl->arr.size = v->size;
    sl->arr.data = v->data;
    return 1;
}
static gr_status gr__shared_shape_error(gr_fn *f, const gr__slot *sl) {
    return gr__fn_error(f, GR_ERR_SHAPE, "gr_call: shared variable %s now has shape %s; the function was built for %s", gr__d(sl->var).s,
                        gr__as(((const gr__storage *)gr__ext(sl->var))->value).s, gr__vs(sl->var).s);
}

/* the leaves' shapes for this call (shared variables bound to their storage); *changed when some
   shape differs from the plan's */
static gr_status gr__call_leaf_shapes(gr_fn *f, int *changed) {
    int64_t s;
    gr_status st;
    for (s = 0; s < f->n_slots; s++) {
        gr__slot *sl = &f->slots[s];
        if (sl->kind == GR__SK_SHARED && !gr__call_bind_shared(sl)) return gr__shared_shape_error(f, sl);
        if (sl->kind != GR__SK_COMPUTED && (st = gr__fn_settle_shape(f, s, changed)) != GR_OK) return st;
    }
    return GR_OK;
}
/* an update keeps the shape of its shared variable (whose static shape the graph knows) */
static gr_status gr__call_upd_shapes(gr_fn *f) {
    int i, d;
    for (i = 0; i < f->n_upd; i++) {
        const gr__slot *sl = &f->slots[f->upd_slot[i]];
        const gr_array *cur = f->upd_store[i]->value;
        for (d = 0; d < cur->ndim; d++)
            if (sl->arr.shape[d] != cur->shape[d])
                return gr__fn_error(f, GR_ERR_SHAPE, "gr_call: the update of shared variable %s has shape %s; the variable has shape %s",
                                    gr__d(f->upd_var[i]).s, gr__as(&sl->arr).s, gr__as(cur).s);
    }
    return GR_OK;
}

/* whether this call's leaves (inputs just bound, shared variables) have the shapes of the plan: then
   every computed slot has them too (a function that is not dynamic has shape rules that read shapes
   only), and the call skips the shape rules */
static int gr__call_same_shapes(const gr_fn *f) {
    int32_t s;
    int i, d;
    if (!f->planned || !f->shape_pure) return 0;
    for (i = 0; i < f->n_in; i++) {
        const gr__slot *sl = &f->slots[f->in_slot[i]];
        const int64_t *cache = f->shape_cache + f->shape_at[f->in_slot[i]];
        for (d = 0; d < sl->arr.ndim; d++)
            if (cache[d + 1] != sl->arr.shape[d]) return 0;
    }
    for (s = 0; s < f->n_shared_slots; s++) {
        int32_t k = f->shared_slots[s];
        const gr_array *v = ((const gr__storage *)gr__ext(f->slots[k].var))->value;
        const int64_t *cache = f->shape_cache + f->shape_at[k];
        for (d = 0; d < v->ndim; d++)
            if (cache[d + 1] != v->shape[d]) return 0;
    }
    return 1;
}
/* the shared variables' data bound (their shapes are the plan's: gr__call_same_shapes) */
static void gr__call_shared_data(gr_fn *f) {
    int32_t s;
    for (s = 0; s < f->n_shared_slots; s++) (void)gr__call_bind_shared(&f->slots[f->shared_slots[s]]);
}

/* every slot's shape for this call: the leaves', then each step's outputs by its shape rule */
static gr_status gr__call_shapes(gr_fn *f, int *changed) {
    int64_t k;
    int i;
    gr_status st = gr__call_leaf_shapes(f, changed);
    if (st != GR_OK) return st;
    for (k = 0; k < f->n_steps; k++) {
        gr_node *node = f->steps[k];
        const gr_array *const *in = f->io + f->step_io_at[k];
        gr_array *const *out = (gr_array *const *)(f->io + f->step_io_at[k] + node->n_in);
        st = node->op->shape ? node->op->shape(node, in, out) : gr__like0_shape(node, in, out);
        if (st != GR_OK || f->g->status != GR_OK) return gr__fn_take_error(f, st != GR_OK ? st : f->g->status, node);
        for (i = 0; i < node->n_out; i++)
            if ((st = gr__fn_settle_shape(f, f->step_io[f->step_io_at[k] + node->n_in + i], changed)) != GR_OK) return st;
    }
    return gr__call_upd_shapes(f);
}

/* runs the steps in order; a view is pointed at its base's memory, and computes nothing */
static gr_status gr__call_run(gr_fn *f) {
    int64_t k;
    gr_status st;
    for (k = 0; k < f->n_steps; k++) {
        gr_node *node = f->steps[k];
        const int32_t *io = f->step_io + f->step_io_at[k];
        int j;
        for (j = 0; j < node->n_out; j++) {
            gr__slot *o = &f->slots[io[node->n_in + j]];
            if (o->view_of >= 0) o->arr.data = (char *)f->slots[o->view_of].arr.data + o->view_off;
        }
        if (f->slots[io[node->n_in]].view_of >= 0 && node->n_out == 1) continue;
        st = node->op->perform(node, f->io + f->step_io_at[k], (gr_array *const *)(f->io + f->step_io_at[k] + node->n_in));
        if (st != GR_OK || f->g->status != GR_OK) return gr__fn_take_error(f, st != GR_OK ? st : f->g->status, node);
    }
    return GR_OK;
}

/* the outputs (the function's own memory, or a copy of memory it does not own), then the updates:
   values that live in a shared storage are copied first, so that their order does not matter */
static gr_status gr__call_results(gr_fn *f, const gr_array **outputs) {
    int i;
    for (i = 0; i < f->n_out; i++) {
        gr__slot *sl = &f->slots[f->out_slot[i]];
        if (sl->view_of < 0 && !sl->external) { outputs[i] = &sl->arr; continue; }   /* (its own memory: the common case) */
        if (f->slots[gr__slot_root(f, f->out_slot[i])].external) {
            gr_array *c = &f->out_copy[i];
            *c = sl->arr;
            c->data = f->out_bufs[i].data;
            if (sl->arr.size) memcpy(c->data, sl->arr.data, (size_t)sl->arr.size * gr__dsize(sl->arr.dtype));
            outputs[i] = c;
        } else outputs[i] = &sl->arr;
    }
    for (i = 0; i < f->n_upd; i++) {
        gr__slot *sl = &f->slots[f->upd_slot[i]];
        if (f->upd_staged[i] && sl->arr.size)
            memcpy(f->stage[i].data, sl->arr.data, (size_t)sl->arr.size * gr__dsize(sl->arr.dtype));
    }
    for (i = 0; i < f->n_upd; i++) {
        gr__slot *sl = &f->slots[f->upd_slot[i]];
        gr_array v = sl->arr;
        if (f->upd_staged[i]) v.data = f->stage[i].data;
        if (gr__storage_assign(f->upd_store[i], &v) != GR_OK)
            return gr__fn_error(f, GR_ERR_NOMEM, "gr_call: out of memory updating a shared variable");
    }
    return GR_OK;
}

/* whether region r of f's conditionals is on in this call: its parent is on and its condition (computed
   by now: the schedule puts it first) chose its side; decided once per call, top down */
static int gr__region_on(gr_fn *f, int32_t r) {
    while (f->reg_on[r] < 0) {
        int32_t p = r;
        while (f->reg_on[f->regs[p].parent] < 0) p = f->regs[p].parent;
        if (!f->reg_on[f->regs[p].parent]) f->reg_on[p] = 0;
        else {
            const gr_array *c = &f->slots[f->regs[p].cond_slot].arr;
            f->reg_on[p] = (int8_t)((gr__load(c->dtype, c->data, 0) != 0) == (f->regs[p].side != 0));
        }
    }
    return f->reg_on[r];
}

/* The plan and the run together, step by step, for a function with a step whose outputs' shapes
   are known only once it has run (GR__OPF_DYNSHAPE: a loop's rows) or with conditionals (a step of a
   side not taken neither runs nor takes memory, so the plan holds per side): each step's shapes, then its
   outputs' memory (the same walk as gr__fn_plan, a buffer made real when it is taken and too
   small: it is free then, so nothing live moves), then the step. The walk is made at every call;
   while the shapes stay the same it takes the same decisions, so a steady-state call allocates
   nothing. A DYNSHAPE step's outputs are memory of its own (external slots). Steps from `stop` on
   are not run (gr_fn_emit_c runs an example up to a conditional to see the side it takes). */
static gr_status gr__call_dynamic(gr_fn *f, int64_t stop) {
    gr__planner pl;
    int64_t k;
    int changed = 0, i, j;
    gr_status st;
    gr__plan_reset(f, &pl);
    for (i = 0; i < f->n_regs; i++) f->reg_on[i] = (int8_t)(i == 0 ? 1 : -1);
    if (f->cap_bufs < (int32_t)f->n_slots + 1) {          /* room for every buffer the walk can make */
        gr__buffer *nb = (gr__buffer *)GR_REALLOC(f->bufs, sizeof(gr__buffer) * (size_t)(f->n_slots + 1));
        if (!nb) return gr__fn_error(f, GR_ERR_NOMEM, "gr_call: out of memory for the buffers");
        for (i = f->cap_bufs; i < (int32_t)f->n_slots + 1; i++) { nb[i].data = NULL; nb[i].cap = 0; }
        f->bufs = nb;
        f->cap_bufs = (int32_t)f->n_slots + 1;
    }
    for (k = 0; k < stop; k++) {
        gr_node *node = f->steps[k];
        const int32_t *io = f->step_io + f->step_io_at[k];
        const gr_array *const *in = f->io + f->step_io_at[k];
        gr_array *const *out = (gr_array *const *)(f->io + f->step_io_at[k] + node->n_in);
        int dyn = (gr__flags_of(node->op) & GR__OPF_DYNSHAPE) != 0;
        if (f->step_reg && !gr__region_on(f, f->step_reg[k])) {   /* a side of a conditional not taken */
            gr__plan_release(f, &pl, k);
            continue;
        }
        if (!dyn) {
            st = node->op->shape ? node->op->shape(node, in, out) : gr__like0_shape(node, in, out);
            if (st != GR_OK || f->g->status != GR_OK) return gr__fn_take_error(f, st != GR_OK ? st : f->g->status, node);
            for (j = 0; j < node->n_out; j++)
                if ((st = gr__fn_settle_shape(f, io[node->n_in + j], &changed)) != GR_OK) return st;
            for (j = 0; j < node->n_out; j++) {
                gr__slot *o = &f->slots[io[node->n_in + j]];
                gr__plan_output(f, &pl, k, j);
                if (o->buf >= 0) {
                    gr__buffer *b = &f->bufs[o->buf];
                    if (b->cap < f->plan_caps[o->buf]) {
                        GR_FREE(b->data);
                        b->data = GR_MALLOC(f->plan_caps[o->buf] + 64);
                        b->cap = b->data ? f->plan_caps[o->buf] : 0;
                        if (!b->data) return gr__fn_error(f, GR_ERR_NOMEM, "gr_call: out of memory for the buffers");
                    }
                    o->arr.data = b->data;
                } else if (o->view_of >= 0)
                    o->arr.data = (char *)f->slots[o->view_of].arr.data + o->view_off;
            }
        }
        if (dyn || !(f->slots[io[node->n_in]].view_of >= 0 && node->n_out == 1)) {
            if (!gr__scratch_fit(f, gr__step_scratch(f, k))) return gr__fn_error(f, GR_ERR_NOMEM, "gr_call: out of memory for the buffers");
            st = node->op->perform(node, in, out);
            if (st != GR_OK || f->g->status != GR_OK) return gr__fn_take_error(f, st != GR_OK ? st : f->g->status, node);
        }
        if (dyn)
            for (j = 0; j < node->n_out; j++)
                if ((st = gr__fn_settle_shape(f, io[node->n_in + j], &changed)) != GR_OK) return st;
        gr__plan_release(f, &pl, k);
    }
    if (stop < f->n_steps) return GR_OK;
    if ((st = gr__call_upd_shapes(f)) != GR_OK) return st;
    if (!gr__plan_external(f)) return gr__fn_error(f, GR_ERR_NOMEM, "gr_call: out of memory for the buffers");
    return GR_OK;
}

/* the shapes f's outputs would have for these inputs, from the shape rules alone: nothing runs
   (an op made of a graph asks its inner function: ops/graphop.c) */
static GR__UNUSED gr_status gr__fn_out_shapes(gr_fn *f, const gr_array *const *inputs, gr_array *const *out) {
    int changed = 0, i, d;
    gr_status st;
    if (f->dynamic) return gr__fn_error(f, GR_ERR_VALUE, "gr_call: its shapes are known only by running it");
    for (i = 0; i < f->n_in; i++) {              /* the inputs' shapes (their data may not exist yet) */
        const gr_array *a = inputs[i];
        gr__slot *sl = &f->slots[f->in_slot[i]];
        if (a->dtype != sl->arr.dtype || a->ndim != sl->arr.ndim)
            return gr__fn_error(f, GR_ERR_TYPE, "gr_call: input %d (%s) must be %s with %d dimensions, not %s with %d", i,
                                gr__d(sl->var).s, gr_dtype_name(sl->arr.dtype), sl->arr.ndim, gr_dtype_name(a->dtype), a->ndim);
        for (d = 0; d < a->ndim; d++) sl->arr.shape[d] = a->shape[d];
        sl->arr.size = a->size;
        if ((st = gr__fn_settle_shape(f, f->in_slot[i], &changed)) != GR_OK) return st;
    }
    if ((st = gr__call_shapes(f, &changed)) != GR_OK) return st;
    for (i = 0; i < f->n_out; i++) {
        const gr__slot *sl = &f->slots[f->out_slot[i]];
        for (d = 0; d < sl->arr.ndim; d++) out[i]->shape[d] = sl->arr.shape[d];
        out[i]->size = sl->arr.size;
    }
    return GR_OK;
}

GR_API gr_status gr_call(gr_fn *f, const gr_array *const *inputs, const gr_array **outputs) {
    int i, changed;
    gr_status st;
    if (!f) return GR_ERR_VALUE;
    f->message[0] = 0;
    if (f->scalar && f->planned && inputs && outputs && gr__call_scalar(f, inputs, outputs)) return GR_OK;
    if ((inputs || !f->n_in) && (outputs || !f->n_out) && gr__call_bind_steady(f, inputs)) {   /* the plan's shapes: nothing to check or settle */
        if ((!f->n_upd || (st = gr__call_upd_shapes(f)) == GR_OK) && (st = gr__call_run(f)) == GR_OK) return gr__call_results(f, outputs);
        for (i = 0; i < f->n_out; i++) outputs[i] = NULL;           /* (as below) */
        return st;
    }
    changed = !f->planned;
    for (i = 0; outputs && i < f->n_out; i++) outputs[i] = NULL;     /* stays so when the call fails */
    if (f->n_in > 0 && !inputs) return gr__fn_error(f, GR_ERR_VALUE, "gr_call: inputs is NULL but the function takes %d", f->n_in);
    if (f->n_out > 0 && !outputs) return gr__fn_error(f, GR_ERR_VALUE, "gr_call: outputs is NULL but the function gives %d", f->n_out);
    if ((st = gr__call_bind(f, inputs)) != GR_OK) return st;
    if (f->dynamic) {
        if ((st = gr__call_leaf_shapes(f, &changed)) != GR_OK || (st = gr__call_dynamic(f, f->n_steps)) != GR_OK) return st;
        return gr__call_results(f, outputs);
    }
    if (gr__call_same_shapes(f)) {                  /* the shapes of the plan: only the shared variables' data to bind */
        gr__call_shared_data(f);
        if ((st = gr__call_upd_shapes(f)) != GR_OK) return st;
    } else {
        if ((st = gr__call_shapes(f, &changed)) != GR_OK) return st;
        if (changed && gr__fn_plan(f) != GR_OK) return gr__fn_error(f, GR_ERR_NOMEM, "gr_call: out of memory for the buffers");
    }
    if ((st = gr__call_run(f)) != GR_OK) return st;
    return gr__call_results(f, outputs);
}
