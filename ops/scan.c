/* ops/scan.c: loops (gr_scan, after aesara.scan).

   A loop is one Scan node. Its body is a graph of its own (the loop's gr__scan_def, shared by every
   node and compiled function that applies it), made once from the user's step function: the step
   builds one iteration on stand-ins for the sequences' and states' taps; the nodes that depend on
   the stand-ins are copied into the body, and every other variable they read becomes an input of
   the loop, computed once outside it (loop-invariant code stays out of the loop).

   Inputs of a Scan node:  [n_steps] the offsets of the sequences that have one, the sequences,
                           the initial value of each output with a state, the values the body reads
                           (the non-sequences, then what it captured)
   Outputs:                every output at every step run (a new first axis; only the final value
                           for an output kept LAST), then the number of steps run (I64, 0-d)
   The body's inputs:      each sequence's taps, each state's taps, the values read
   The body's outputs:     one step of every output, then the until condition

   Shapes: sequence (len, *s) -> tap value *s; state initial *s (the one tap -1) or (rows, *s) with
   rows >= D = -min(taps); output (L, *s); steps run ().

   A sequence's tap k at step t reads row off + dir t + k - m (m = min(0, min taps), M = max(0, max
   taps)): dir +1 and off 0 for aesara.scan; dir -1 and off len - (M - m) - 1 for go_backwards (from
   the end of what the taps allow, as Aesara), when the sequence has no offset input; a gradient's
   loop reads its forward loop's sequences backwards, with an offset computed from the steps that
   loop ran. A state's tap k at step t reads the output of step t + k, or the initial value when
   t + k < 0 (row t + k + D of a mit-sot's initial). */

#ifndef GR_NO_SCAN                  /* ops/table.h, op families: all but gr__batch_like */

typedef struct gr__scan_def {
    gr__graphop head;                    /* first: counted; the loop's connection pattern */
    gr_graph *ig;                        /* the body */
    int n_seq, n_out, n_state, n_val;    /* n_val: the values the body reads (non-sequences, captured) */
    int has_n_steps, n_off, has_until;   /* n_off: sequences with an offset input */
    int n_bin, n_bout;                   /* the body's inputs and outputs */
    gr_var **bin, **bout;                /* in ig */
    int *seq_ntaps, *seq_at, *seq_dir, *seq_off, *seq_m, *seq_M;   /* per sequence; its taps at taps + seq_at;
                                                                      seq_off: its offset input, or -1 */
    int *out_state;                      /* per output: its state, or -1 */
    int *st_out, *st_ntaps, *st_at, *st_D;                  /* per state: its output, its taps, -min(taps) */
    unsigned char *out_last;             /* per output: only the final value is kept (gradients' states) */
    int *taps;
    int64_t truncate, checkpoints;
    int go_backwards;
    /* a checkpointed gradient's loop: the states' histories it reads are recomputed from the forward
       loop (replay, counted) instead of stored: sequence i is the history of replay's state
       seq_replay[i] (-1: an ordinary sequence); the forward sequences are this loop's sequences
       from replay_seq0, the forward initial values its values from replay_init0 */
    struct gr__scan_def *replay;
    int *seq_replay, replay_seq0, replay_init0;
    char name[64];
} gr__scan_def;

/* a Scan node's params: the loop, and the compiled function's state for it (NULL in user graphs) */
typedef struct gr__scan_rt gr__scan_rt;
typedef struct gr__scan_params {
    gr__scan_def *def;
    gr__scan_rt *rt;
    uint64_t narrowed;                   /* outputs j < 64 a compiled function reads only at their last row
                                            (Aesara's scan_save_mem): kept as LAST (gr__Scan_narrow) */
    uint64_t front;                      /* outputs j < 64 of a plain state that a compiled function reads
                                            behind their initial value (a gradient's history): kept with
                                            it as row 0, L + 1 rows, instead of joined to it by a copy */
} gr__scan_params;

static gr__scan_def *gr__sdef(const gr_node *node) { return ((const gr__scan_params *)gr__params(node))->def; }
static gr__scan_rt *gr__scan_rt_of(const gr_node *node) { return ((const gr__scan_params *)gr__params(node))->rt; }
/* output j keeps only its final value: the loop's own choice (a gradient's states) or the function's */
static int gr__scan_last(const gr_node *node, int j) {
    const gr__scan_params *p = (const gr__scan_params *)gr__params(node);
    return p->def->out_last[j] || (j < 64 && ((p->narrowed >> j) & 1u));
}

/* output j keeps its initial value as row 0 (gr__scan_params.front) */
static int gr__scan_front(const gr_node *node, int j) {
    const gr__scan_params *p = (const gr__scan_params *)gr__params(node);
    return j < 64 && ((p->front >> j) & 1u);
}

/* where a node's inputs start */
static int gr__scan_i_off(const gr__scan_def *d) { return d->has_n_steps; }
static int gr__scan_i_seq(const gr__scan_def *d) { return d->has_n_steps + d->n_off; }
static int gr__scan_i_init(const gr__scan_def *d) { return gr__scan_i_seq(d) + d->n_seq; }
static int gr__scan_i_val(const gr__scan_def *d) { return gr__scan_i_init(d) + d->n_state; }
static int gr__scan_n_in(const gr__scan_def *d) { return gr__scan_i_val(d) + d->n_val; }
/* where the body's inputs start: sequences' taps, states' taps, values */
static int gr__scan_b_state(const gr__scan_def *d) { return d->n_seq ? d->seq_at[d->n_seq - 1] + d->seq_ntaps[d->n_seq - 1] : 0; }
static int gr__scan_b_val(const gr__scan_def *d) { return d->n_bin - d->n_val; }

static void gr__scan_destroy(gr__graphop *o) {
    gr__scan_def *d = (gr__scan_def *)o;
    gr_graph_free(d->ig);
    GR_FREE(d->head.conn);
    GR_FREE(d->bin); GR_FREE(d->bout);
    GR_FREE(d->seq_ntaps); GR_FREE(d->out_state); GR_FREE(d->st_out); GR_FREE(d->out_last); GR_FREE(d->taps);
    GR_FREE(d->seq_replay);
    if (d->replay && --d->replay->head.refs == 0) d->replay->head.destroy(&d->replay->head);
    GR_FREE(d);
}

static gr_status gr__scan_grad_some(const gr_node *node, gr_var *const *og, gr_var **ig, const uint8_t *skip);
static gr_status gr__scan_grad_any(const gr_node *node, gr_var *const *og, gr_var **ig, const uint8_t *skip);

/* a loop's body, under its node (src/print.c): its inputs (the taps and the values) and outputs */
static void gr__scan_print(gr__printer *p, const gr__graphop *o) {
    const gr__scan_def *d = (const gr__scan_def *)o;
    gr__print_inner(p, "body", d->n_bin, d->bin, d->n_bout, d->bout, d->has_until ? "the last: until" : NULL);
}

/* ---- the loop as the user describes it, and as gradients do ---------------------------------------- */

typedef struct gr__scan_spec {
    int n_seq;
    gr_var *const *seq;
    const int *seq_ntaps;                /* 0: the one tap 0 */
    const int *const *seq_taps;
    const int *seq_dir;                  /* NULL: all +1, or all -1 when go_backwards */
    gr_var *const *seq_off;              /* NULL, or per sequence its offset (0-d I64) or NULL */
    int n_out;
    gr_var *const *init;                 /* per output: its initial value, or NULL (no state) */
    const int *out_ntaps;                /* 0 with an initial: the one tap -1 */
    const int *const *out_taps;
    const unsigned char *out_last;       /* NULL: every row of every output */
    int n_val;
    gr_var *const *val;
    gr_var *n_steps;
    int go_backwards;
    int64_t truncate, checkpoints;
    const char *name;
    gr_scan_step step;
    void *user;
    gr__scan_def *replay;                /* see gr__scan_def */
    const int *seq_replay;
    int replay_seq0, replay_init0;
} gr__scan_spec;

static const int gr__tap0 = 0, gr__tap_m1 = -1;

static int gr__scan_seq_ntaps(const gr__scan_spec *sp, int i) { return sp->seq_ntaps[i] ? sp->seq_ntaps[i] : 1; }
static const int *gr__scan_seq_taps(const gr__scan_spec *sp, int i) { return sp->seq_ntaps[i] ? sp->seq_taps[i] : &gr__tap0; }
static int gr__scan_out_ntaps(const gr__scan_spec *sp, int j) { return !sp->init[j] ? 0 : sp->out_ntaps[j] ? sp->out_ntaps[j] : 1; }
static const int *gr__scan_out_taps(const gr__scan_spec *sp, int j) { return sp->out_ntaps[j] ? sp->out_taps[j] : &gr__tap_m1; }
/* a plain state (the one tap -1: the initial is the state itself), not a mit-sot */
static int gr__scan_sitsot(const gr__scan_spec *sp, int j) { return sp->init[j] && (!sp->out_ntaps[j] || (sp->out_ntaps[j] == 1 && sp->out_taps[j][0] == -1)); }

/* a stand-in for a tap: a free input typed like one row of x (x itself when rows is 0); shapes of
   shared values are left unknown (gr_shared_set may change them) */
static gr_var *gr__scan_standin(gr_graph *g, const gr_var *x, int rows) {
    int64_t shape[GR_MAX_NDIM];
    int i;
    for (i = rows; i < x->ndim; i++) shape[i - rows] = x->kind == GR__VK_SHARED ? -1 : gr__vshape(x)[i];
    return gr__new_var(g, x->dtype, x->ndim - rows, shape, GR__VK_INPUT);
}

/* a checkpointed gradient's loop: a replayed sequence (a forward state's history) carries what reaches
   that state in the forward loop, whose inputs are this loop's forward sequences, initial values and
   values (see gr__scan_def) */
static void gr__scan_pattern_replay(const gr__scan_def *d, unsigned char *conn) {
    const gr__scan_def *fd = d->replay;
    int no = d->n_out + 1, fno, i, a, j;
    if (!fd) return;
    fno = fd->n_out + 1;
    for (i = 0; i < d->n_seq; i++) {
        const unsigned char *row = conn + (size_t)(gr__scan_i_seq(d) + i) * (size_t)no;
        int jo;
        if (d->seq_replay[i] < 0) continue;
        jo = fd->st_out[d->seq_replay[i]];
        for (a = gr__scan_i_seq(fd); a < gr__scan_n_in(fd); a++) {
            int at;
            if (!fd->head.conn[(size_t)a * (size_t)fno + (size_t)jo]) continue;
            if (a < gr__scan_i_init(fd)) at = gr__scan_i_seq(d) + d->replay_seq0 + (a - gr__scan_i_seq(fd));
            else if (a < gr__scan_i_val(fd)) at = gr__scan_i_val(d) + d->replay_init0 + (a - gr__scan_i_init(fd));
            else at = gr__scan_i_val(d) + (a - gr__scan_i_val(fd));
            for (j = 0; j < d->n_out; j++) conn[(size_t)at * (size_t)no + (size_t)j] |= row[j];
        }
    }
}

/* Which inputs reach which outputs, through the recurrence: the body's own pattern (body input ->
   body output, by reachability in ig), then closed over the states (a state's taps reach what its
   output's value reaches at the next steps) until nothing changes. */
static gr_status gr__scan_pattern(gr__scan_def *d) {
    gr_graph *ig = d->ig;
    uint32_t nv = ig->var_base + ig->n_vars, k;
    int n_in = gr__scan_n_in(d), no = d->n_out + 1, b, j, s, t, changed;
    unsigned char *reach = (unsigned char *)gr__calloc((size_t)nv * (size_t)d->n_bin + 1, 1);   /* var x body input */
    unsigned char *bconn = (unsigned char *)gr__calloc((size_t)d->n_bin * (size_t)no + 1, 1);  /* body input x output */
    unsigned char *conn = (unsigned char *)gr__calloc((size_t)n_in * (size_t)no + 1, 1);
    if (!reach || !bconn || !conn) { GR_FREE(reach); GR_FREE(bconn); GR_FREE(conn); return GR_ERR_NOMEM; }
    for (b = 0; b < d->n_bin; b++) reach[(size_t)d->bin[b]->id * (size_t)d->n_bin + (size_t)b] = 1;
    for (k = 0; k < ig->n_nodes; k++) {                 /* nodes in the order made: inputs first */
        gr_node *node = ig->nodes[k];
        int i, o;
        for (o = 0; o < node->n_out; o++)
            for (i = 0; i < node->n_in; i++) {
                const unsigned char *src = reach + (size_t)gr__in(node)[i]->id * (size_t)d->n_bin;
                unsigned char *dst = reach + (size_t)gr__out(node)[o]->id * (size_t)d->n_bin;
                if (!gr__connected(node, i, o) || gr__is_marker(gr__out(node)[o])) continue;
                for (b = 0; b < d->n_bin; b++) dst[b] |= src[b];
            }
    }
    for (j = 0; j < d->n_out; j++)
        for (b = 0; b < d->n_bin; b++) bconn[b * no + j] = reach[(size_t)d->bout[j]->id * (size_t)d->n_bin + (size_t)b];
    /* a state's taps reach, at later steps, whatever its own output reaches */
    do {
        changed = 0;
        for (s = 0; s < d->n_state; s++) {
            int jo = d->st_out[s], bs = gr__scan_b_state(d) + d->st_at[s] - d->st_at[0];
            for (t = 0; t < d->st_ntaps[s]; t++)
                for (b = 0; b < d->n_bin; b++)
                    if (bconn[b * no + jo])                /* b reaches the state: it reaches what its taps reach */
                        for (j = 0; j < d->n_out; j++)
                            if (bconn[(bs + t) * no + j] && !bconn[b * no + j]) { bconn[b * no + j] = 1; changed = 1; }
        }
    } while (changed);
    /* node inputs: n_steps and offsets reach nothing differentiable; a sequence through its taps; an
       initial through its state's taps; a value through its body input */
    for (s = 0; s < d->n_seq; s++)
        for (t = 0; t < d->seq_ntaps[s]; t++)
            for (j = 0; j < d->n_out; j++) conn[(gr__scan_i_seq(d) + s) * no + j] |= bconn[(d->seq_at[s] + t) * no + j];
    for (s = 0; s < d->n_state; s++)
        for (t = 0; t < d->st_ntaps[s]; t++)
            for (j = 0; j < d->n_out; j++)
                conn[(gr__scan_i_init(d) + s) * no + j] |= bconn[(gr__scan_b_state(d) + d->st_at[s] - d->st_at[0] + t) * no + j];
    for (s = 0; s < d->n_val; s++)
        for (j = 0; j < d->n_out; j++) conn[(gr__scan_i_val(d) + s) * no + j] = bconn[(gr__scan_b_val(d) + s) * no + j];
    gr__scan_pattern_replay(d, conn);
    GR_FREE(reach);
    GR_FREE(bconn);
    d->head.conn = conn;
    return GR_OK;
}

/* An open-addressing set of variables (the values the body reads, in the order found) */
typedef struct gr__vset { gr_var **slot; int32_t *idx; uint32_t cap; gr_var **list; int n, cap_list; } gr__vset;
static int32_t gr__vset_find(const gr__vset *s, const gr_var *v) {
    uint32_t h = (uint32_t)(((uintptr_t)v >> 4) * 2654435761u) & (s->cap - 1u);
    while (s->slot[h]) { if (s->slot[h] == v) return s->idx[h]; h = (h + 1u) & (s->cap - 1u); }
    return -1;
}
/* index of v, added when new; -1 when out of memory */
static int32_t gr__vset_add(gr__vset *s, gr_var *v) {
    uint32_t h, i;
    int32_t at = s->cap ? gr__vset_find(s, v) : -1;
    if (at >= 0) return at;
    if (2u * ((uint32_t)s->n + 1u) > s->cap) {
        uint32_t cap = s->cap ? 2u * s->cap : 16u;
        gr_var **slot = (gr_var **)gr__calloc(cap, sizeof(gr_var *));
        int32_t *idx = (int32_t *)gr__calloc(cap, sizeof(int32_t));
        if (!slot || !idx) { GR_FREE(slot); GR_FREE(idx); return -1; }
        for (i = 0; i < s->cap; i++)
            if (s->slot[i]) {
                h = (uint32_t)(((uintptr_t)s->slot[i] >> 4) * 2654435761u) & (cap - 1u);
                while (slot[h]) h = (h + 1u) & (cap - 1u);
                slot[h] = s->slot[i];
                idx[h] = s->idx[i];
            }
        GR_FREE(s->slot); GR_FREE(s->idx);
        s->slot = slot; s->idx = idx; s->cap = cap;
    }
    if (s->n >= s->cap_list) {
        int cap = s->cap_list ? 2 * s->cap_list : 16;
        gr_var **l = (gr_var **)GR_REALLOC(s->list, sizeof(gr_var *) * (size_t)cap);
        if (!l) return -1;
        s->list = l; s->cap_list = cap;
    }
    h = (uint32_t)(((uintptr_t)v >> 4) * 2654435761u) & (s->cap - 1u);
    while (s->slot[h]) h = (h + 1u) & (s->cap - 1u);
    s->slot[h] = v;
    s->idx[h] = s->n;
    s->list[s->n] = v;
    return s->n++;
}
/* v appended even when present (the positions of the explicit values are kept; a capture finds the
   first); -1 when out of memory */
static int32_t gr__vset_push(gr__vset *s, gr_var *v) {
    int32_t at = s->cap ? gr__vset_find(s, v) : -1, n;
    if (at < 0) return gr__vset_add(s, v);
    if (s->n >= s->cap_list) {
        int cap = s->cap_list ? 2 * s->cap_list : 16;
        gr_var **l = (gr_var **)GR_REALLOC(s->list, sizeof(gr_var *) * (size_t)cap);
        if (!l) return -1;
        s->list = l; s->cap_list = cap;
    }
    n = s->n++;
    s->list[n] = v;
    return n;
}
static void gr__vset_free(gr__vset *s) { GR_FREE(s->slot); GR_FREE(s->idx); GR_FREE(s->list); }

/* d's body made again in g, on the counterparts of its inputs that map holds (map: by body variable
   id; map[bin[i]->id] set for every input): the nodes its outputs need, in order, each typed again
   from its inputs there; constants copied. out[j]: output j's counterpart (n_bout of them). Errors
   are recorded on g. */
static gr_status gr__scan_clone(const gr__scan_def *d, gr_graph *g, gr_var **map, gr_var **out) {
    gr_node **order = NULL;
    uint32_t n = 0, k;
    gr_var *ins_stack[8], **ins = ins_stack, *o_stack[8], **o = o_stack;
    int i, j, cap = 8;
    gr_status st = gr__toposort(d->ig, d->n_bout, d->bout, NULL, &order, &n);
    if (st != GR_OK) { gr_graph_clear_error(d->ig); return gr__error(g, st, "gr_scan '%s': out of memory", d->name); }
    for (k = 0; k < n && st == GR_OK; k++) {
        gr_node *node = order[k];
        if (node->n_in > cap || node->n_out > cap) {
            cap = node->n_in > node->n_out ? node->n_in : node->n_out;
            if (ins != ins_stack) { GR_FREE(ins); GR_FREE(o); }
            ins = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)cap);
            o = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)cap);
            if (!ins || !o) { st = gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name); break; }
        }
        for (i = 0; i < node->n_in; i++) {
            gr_var *x = gr__in(node)[i];
            if (!map[x->id] && x->kind == GR__VK_CONST) map[x->id] = gr__constant(g, (const gr_array *)gr__ext(x), x->flags);
            if (!(ins[i] = map[x->id])) break;
        }
        if (i < node->n_in) st = g->status != GR_OK ? g->status : gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
        else st = gr__make_node_n(g, node->op, gr__params(node), node->params_size, node->n_in, ins, node->n_out, o);
        for (j = 0; st == GR_OK && j < node->n_out; j++) map[gr__out(node)[j]->id] = o[j];
    }
    for (j = 0; st == GR_OK && j < d->n_bout; j++) {
        gr_var *b = d->bout[j];
        if (!map[b->id] && b->kind == GR__VK_CONST) map[b->id] = gr__constant(g, (const gr_array *)gr__ext(b), b->flags);
        if (!(out[j] = map[b->id])) st = g->status != GR_OK ? g->status : gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
    }
    if (ins != ins_stack) { GR_FREE(ins); GR_FREE(o); }
    GR_FREE(order);
    return st;
}

/* What gr__scan_make works on: the spec; the step's inputs (the stand-ins of the taps, then the
   values) and results; the variables and nodes the step made (after v0 and n0 of g), which of them
   depend on the stand-ins (dep, by variable) and which the body needs (need, by node); the values
   the body reads; the loop; per variable the step made, its counterpart in the body (map). */
typedef struct gr__scan_build {
    gr_graph *g;
    const gr__scan_spec *sp;
    const char *name;
    int n_stap, n_ttap, n_state;         /* the sequences' taps, the states' taps, the states */
    gr_var **in, **out, *until;
    uint32_t v0, n0, nv, nn;
    uint8_t *dep, *need;
    gr__vset vals;
    gr__scan_def *d;
    gr_var **map;
} gr__scan_build;

/* v was made by the step and depends on a stand-in */
static int gr__scan_dep(const gr__scan_build *b, const gr_var *v) {
    return v->graph == b->g && v->id >= b->g->var_base + b->v0 && b->dep[v->id - b->g->var_base - b->v0];
}
static gr_status gr__scan_nomem(const gr__scan_build *b) { return gr__error(b->g, GR_ERR_NOMEM, "gr_scan '%s': out of memory", b->name); }

/* output j of the step: a value of this graph typed as its state (a weak scalar coerced to it) */
static gr_status gr__scan_check_out(gr__scan_build *b, int j) {
    const gr__scan_spec *sp = b->sp;
    gr_graph *g = b->g;
    const char *name = b->name;
    gr_var *o = b->out[j];
    if (!o) return g->status != GR_OK ? g->status : gr__error(g, GR_ERR_VALUE, "gr_scan '%s': the step left output %d NULL", name, j);
    if (o->graph != g) return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': output %d of the step belongs to another graph", name, j);
    if (gr__is_marker(o)) return gr__error(g, GR_ERR_TYPE, "gr_scan '%s': output %d of the step is a gradient marker", name, j);
    if (sp->init[j]) {
        const gr_var *s0 = sp->init[j];
        int rows = gr__scan_sitsot(sp, j) ? 0 : 1, dd;
        if (o->dtype != s0->dtype && gr__is_weak(o) && s0->ndim - rows == 0) {
            if (!(o = b->out[j] = gr__coerce(o, s0->dtype))) return g->status;
        }
        if (o->dtype != s0->dtype || o->ndim != s0->ndim - rows)
            return gr__error(g, GR_ERR_TYPE, "gr_scan '%s': output %d of the step is %s with %d dimensions; its state %s is %s with %d",
                             name, j, gr_dtype_name((gr_dtype)o->dtype), o->ndim, gr__d(s0).s, gr_dtype_name((gr_dtype)s0->dtype),
                             s0->ndim - rows);
        for (dd = 0; dd < o->ndim; dd++) {
            int64_t a = gr__vshape(o)[dd], c = s0->kind == GR__VK_SHARED ? -1 : gr__vshape(s0)[dd + rows];
            if (a >= 0 && c >= 0 && a != c)
                return gr__error(g, GR_ERR_SHAPE, "gr_scan '%s': output %d of the step has the shape %s; its state %s has rows of %lld along axis %d",
                                 name, j, gr__vs(o).s, gr__d(s0).s, (long long)c, dd);
        }
    }
    return GR_OK;
}

/* 1. the stand-ins and the step, its outputs checked */
static gr_status gr__scan_run_step(gr__scan_build *b) {
    const gr__scan_spec *sp = b->sp;
    gr_graph *g = b->g;
    int i, j, t, pos;
    gr_status st;
    for (i = 0, pos = 0; i < sp->n_seq; i++)
        for (t = 0; t < gr__scan_seq_ntaps(sp, i); t++)
            if (!(b->in[pos++] = gr__scan_standin(g, sp->seq[i], 1))) return GR_ERR_NOMEM;
    for (j = 0; j < sp->n_out; j++)
        for (t = 0; t < gr__scan_out_ntaps(sp, j); t++)
            if (!(b->in[pos++] = gr__scan_standin(g, sp->init[j], gr__scan_sitsot(sp, j) ? 0 : 1))) return GR_ERR_NOMEM;
    for (i = 0; i < sp->n_val; i++) b->in[pos++] = sp->val[i];
    st = sp->step(g, b->in, b->out, &b->until, sp->user);
    if (st != GR_OK) {
        if (g->status == GR_OK) gr__error(g, st, "gr_scan '%s': the step function failed (%s)", b->name, gr_status_string(st));
        return st;
    }
    for (j = 0; j < sp->n_out; j++) if ((st = gr__scan_check_out(b, j)) != GR_OK) return st;
    if (b->until) {
        if (b->until->graph != g || gr__is_marker(b->until) || b->until->ndim != 0)
            return gr__error(g, GR_ERR_TYPE, "gr_scan '%s': the until condition must be a 0-d value of this graph, not %s", b->name,
                             gr__d(b->until).s);
        b->out[sp->n_out] = b->until;
    }
    return GR_OK;
}

/* 2. what depends on the stand-ins (the nodes made since, in the order made), the nodes of it the
   outputs need (the body), and the values the body reads */
static gr_status gr__scan_find_body(gr__scan_build *b) {
    const gr__scan_spec *sp = b->sp;
    gr_graph *g = b->g;
    uint32_t k;
    int i, j;
    b->nv = g->n_vars - b->v0;
    b->nn = g->n_nodes - b->n0;
    b->dep = (uint8_t *)gr__calloc((size_t)b->nv + 1, 1);
    b->need = (uint8_t *)gr__calloc((size_t)b->nn + 1, 1);
    if (!b->dep || !b->need) return gr__scan_nomem(b);
    for (i = 0; i < b->n_stap + b->n_ttap; i++) b->dep[b->in[i]->id - g->var_base - b->v0] = 1;
    for (k = 0; k < b->nn; k++) {
        gr_node *node = g->nodes[b->n0 + k];
        int any = 0;
        for (i = 0; i < node->n_in && !any; i++) any = gr__scan_dep(b, gr__in(node)[i]);
        if (any) for (j = 0; j < node->n_out; j++) b->dep[gr__out(node)[j]->id - g->var_base - b->v0] = 1;
    }
    /* the body: the dependent nodes the outputs need, found going back down the new nodes */
    for (j = 0; j <= sp->n_out; j++)
        if (b->out[j] && gr__scan_dep(b, b->out[j]) && gr__owner(b->out[j])) b->need[gr__owner(b->out[j])->id - g->node_base - b->n0] = 1;
    for (k = b->nn; k-- > 0;) {
        gr_node *node = g->nodes[b->n0 + k];
        if (!b->need[k]) continue;
        for (i = 0; i < node->n_in; i++) {
            gr_var *x = gr__in(node)[i];
            if (gr__scan_dep(b, x) && gr__owner(x)) b->need[gr__owner(x)->id - g->node_base - b->n0] = 1;
        }
    }
    /* the values the body reads: the non-sequences first, then what its nodes and outputs capture */
    for (i = 0; i < sp->n_val; i++) if (gr__vset_push(&b->vals, sp->val[i]) < 0) return gr__scan_nomem(b);
    for (k = 0; k < b->nn; k++) {
        gr_node *node = g->nodes[b->n0 + k];
        if (!b->need[k]) continue;
        for (i = 0; i < node->n_in; i++) {
            gr_var *x = gr__in(node)[i];
            if (!gr__scan_dep(b, x) && x->kind != GR__VK_CONST && gr__vset_add(&b->vals, x) < 0) return gr__scan_nomem(b);
        }
    }
    for (j = 0; j <= sp->n_out; j++)
        if (b->out[j] && !gr__scan_dep(b, b->out[j]) && b->out[j]->kind != GR__VK_CONST && gr__vset_add(&b->vals, b->out[j]) < 0)
            return gr__scan_nomem(b);
    return GR_OK;
}

/* the loop's taps: per sequence its taps, direction, offset input and span; per state its output,
   taps and depth D */
static void gr__scan_def_taps(gr__scan_def *d, const gr__scan_spec *sp) {
    int i, j, t, pos, n_state;
    for (i = 0, pos = 0, t = 0; i < sp->n_seq; i++) {
        const int *tp = gr__scan_seq_taps(sp, i);
        int u;
        d->seq_ntaps[i] = gr__scan_seq_ntaps(sp, i);
        d->seq_at[i] = pos;
        d->seq_dir[i] = sp->seq_dir ? sp->seq_dir[i] : sp->go_backwards ? -1 : 1;
        d->seq_off[i] = sp->seq_off && sp->seq_off[i] ? t++ : -1;
        d->seq_m[i] = d->seq_M[i] = 0;
        for (u = 0; u < d->seq_ntaps[i]; u++) {
            d->taps[pos++] = tp[u];
            if (tp[u] < d->seq_m[i]) d->seq_m[i] = tp[u];
            if (tp[u] > d->seq_M[i]) d->seq_M[i] = tp[u];
        }
    }
    for (j = 0, n_state = 0; j < sp->n_out; j++) {
        d->out_last[j] = sp->out_last ? sp->out_last[j] : 0;
        d->out_state[j] = -1;
        if (!sp->init[j]) continue;
        {
            const int *tp = gr__scan_out_taps(sp, j);
            int s = n_state++;
            d->out_state[j] = s;
            d->st_out[s] = j;
            d->st_ntaps[s] = gr__scan_out_ntaps(sp, j);
            d->st_at[s] = pos;
            d->st_D[s] = 0;
            for (t = 0; t < d->st_ntaps[s]; t++) {
                d->taps[pos++] = tp[t];
                if (-tp[t] > d->st_D[s]) d->st_D[s] = -tp[t];
            }
        }
    }
}

/* 3. the loop's description (b->d, its body graph still empty) */
static gr_status gr__scan_def_new(gr__scan_build *b) {
    const gr__scan_spec *sp = b->sp;
    int i, n_state = b->n_state, n_taps = b->n_stap + b->n_ttap;
    gr__scan_def *d = b->d = (gr__scan_def *)gr__calloc(1, sizeof(gr__scan_def));
    if (!d) return gr__scan_nomem(b);
    d->head.refs = 1;
    d->head.destroy = gr__scan_destroy;
    d->head.name = d->name;
    d->head.print = gr__scan_print;
    d->head.grad_some = gr__scan_grad_any;
    d->n_seq = sp->n_seq;
    d->n_out = sp->n_out;
    d->n_state = n_state;
    d->n_val = b->vals.n;
    d->has_n_steps = sp->n_steps != NULL;
    for (i = 0; sp->seq_off && i < sp->n_seq; i++) d->n_off += sp->seq_off[i] != NULL;
    d->has_until = b->until != NULL;
    d->n_bin = n_taps + b->vals.n;
    d->n_bout = sp->n_out + d->has_until;
    d->go_backwards = sp->go_backwards;
    d->truncate = sp->truncate;
    d->checkpoints = sp->checkpoints;
    snprintf(d->name, sizeof d->name, "%s", b->name);
    if (sp->replay) {
        if (!(d->seq_replay = (int *)gr__calloc((size_t)sp->n_seq + 1, sizeof(int)))) return gr__scan_nomem(b);
        memcpy(d->seq_replay, sp->seq_replay, sizeof(int) * (size_t)sp->n_seq);
        d->replay = sp->replay;
        d->replay->head.refs++;
        d->replay_seq0 = sp->replay_seq0;
        d->replay_init0 = sp->replay_init0;
    }
    d->head.n_in = gr__scan_n_in(d);
    d->head.n_out = sp->n_out + 1;
    d->bin = (gr_var **)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_var *));
    d->bout = (gr_var **)gr__calloc((size_t)d->n_bout + 1, sizeof(gr_var *));
    d->seq_ntaps = (int *)gr__calloc(6u * (size_t)sp->n_seq + 1, sizeof(int));
    d->out_state = (int *)gr__calloc((size_t)sp->n_out + 1, sizeof(int));
    d->st_out = (int *)gr__calloc(4u * (size_t)n_state + 1, sizeof(int));
    d->out_last = (unsigned char *)gr__calloc((size_t)sp->n_out + 1, 1);
    d->taps = (int *)gr__calloc((size_t)n_taps + 1, sizeof(int));
    d->ig = gr_graph_new();
    if (!d->bin || !d->bout || !d->seq_ntaps || !d->out_state || !d->st_out || !d->out_last || !d->taps || !d->ig) return gr__scan_nomem(b);
    d->seq_at = d->seq_ntaps + sp->n_seq;
    d->seq_dir = d->seq_at + sp->n_seq;
    d->seq_off = d->seq_dir + sp->n_seq;
    d->seq_m = d->seq_off + sp->n_seq;
    d->seq_M = d->seq_m + sp->n_seq;
    d->st_ntaps = d->st_out + n_state;
    d->st_at = d->st_ntaps + n_state;
    d->st_D = d->st_at + n_state;
    gr__scan_def_taps(d, sp);
    return GR_OK;
}

/* the body's counterpart of x, read by a node the body copies: made by the step, a constant, or a value read */
static gr_var *gr__scan_body_var(const gr__scan_build *b, gr_var *x) {
    if (gr__scan_dep(b, x)) return b->map[x->id - b->g->var_base - b->v0];
    if (x->kind == GR__VK_CONST) return gr__constant(b->d->ig, (const gr_array *)gr__ext(x), x->flags);
    return b->d->bin[b->n_stap + b->n_ttap + gr__vset_find(&b->vals, x)];
}

/* the error of a failed copy into the body, recorded on g */
static gr_status gr__scan_body_failed(const gr__scan_build *b) {
    gr_status st = b->d->ig->status != GR_OK ? b->d->ig->status : GR_ERR_NOMEM;
    gr__error(b->g, st, "gr_scan '%s': copying the body: %s", b->name, b->d->ig->message[0] ? b->d->ig->message : "out of memory");
    return st;
}

/* node k of the step (in the order made) copied into the body (ins: room for its inputs) */
static gr_status gr__scan_copy_node(gr__scan_build *b, uint32_t k, gr_var **ins) {
    gr_node *node = b->g->nodes[b->n0 + k];
    gr__scan_def *d = b->d;
    gr_var *bo[64], **bouts = bo;
    gr_status st = GR_OK;
    int i, j;
    if (node->n_out > 64) {
        bouts = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)node->n_out);
        if (!bouts) return gr__scan_nomem(b);
    }
    for (i = 0; i < node->n_in; i++) if (!(ins[i] = gr__scan_body_var(b, gr__in(node)[i]))) break;
    if (i < node->n_in || gr__make_node_n(d->ig, node->op, gr__params(node), node->params_size, node->n_in, ins, node->n_out, bouts) != GR_OK)
        st = gr__scan_body_failed(b);
    for (j = 0; st == GR_OK && j < node->n_out; j++) {
        b->map[gr__out(node)[j]->id - b->g->var_base - b->v0] = bouts[j];
        if (gr__vname(gr__out(node)[j]) && !gr__set_name(d->ig, bouts[j], gr__vname(gr__out(node)[j]))) st = gr__scan_body_failed(b);
    }
    if (bouts != bo) GR_FREE(bouts);
    return st;
}

/* the body's graph: its inputs, then the needed nodes copied in the order made, its outputs, the
   loop's connection pattern */
static gr_status gr__scan_copy_body(gr__scan_build *b) {
    gr__scan_def *d = b->d;
    gr_graph *g = b->g;
    int i, j, n_taps = b->n_stap + b->n_ttap, max_in = 8;
    gr_var **ins;
    uint32_t k;
    gr_status st = GR_OK;
    b->map = (gr_var **)gr__calloc((size_t)b->nv + 1, sizeof(gr_var *));
    if (!b->map) return gr__scan_nomem(b);
    for (i = 0; i < n_taps; i++) {
        gr_var *x = gr__new_var(d->ig, b->in[i]->dtype, b->in[i]->ndim, gr__vshape(b->in[i]), GR__VK_INPUT);
        if (!x) return gr__scan_body_failed(b);
        d->bin[i] = b->map[b->in[i]->id - g->var_base - b->v0] = x;
    }
    for (i = 0; i < b->vals.n; i++) {
        gr_var *x = b->vals.list[i];
        if (!(d->bin[n_taps + i] = gr__scan_standin(d->ig, x, 0))) return gr__scan_body_failed(b);
        if (gr__vname(x) && !gr__set_name(d->ig, d->bin[n_taps + i], gr__vname(x))) return gr__scan_body_failed(b);
    }
    for (k = 0; k < b->nn; k++) if (b->need[k] && g->nodes[b->n0 + k]->n_in > max_in) max_in = g->nodes[b->n0 + k]->n_in;
    ins = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(max_in + 1));
    if (!ins) return gr__scan_nomem(b);
    for (k = 0; k < b->nn && st == GR_OK; k++) if (b->need[k]) st = gr__scan_copy_node(b, k, ins);
    GR_FREE(ins);
    if (st != GR_OK) return st;
    for (j = 0; j < d->n_bout; j++) if (!(d->bout[j] = gr__scan_body_var(b, b->out[j]))) return gr__scan_body_failed(b);
    if (gr__scan_pattern(d) != GR_OK) return gr__scan_nomem(b);
    return GR_OK;
}

/* Builds the loop of sp in g: the stand-ins, the user's step, the body copied into a graph of its
   own, and the Scan node. results: n_out + 1 entries (the last: the number of steps run). */
static gr_status gr__scan_make(gr_graph *g, const gr__scan_spec *sp, gr_var **results) {
    gr__scan_build b;
    gr_var **ins = NULL;
    gr__scan_params prm;
    int i, j, pos;
    gr_status st;
    memset(&b, 0, sizeof b);
    b.g = g;
    b.sp = sp;
    b.name = sp->name ? sp->name : "scan";
    b.v0 = g->n_vars;
    b.n0 = g->n_nodes;
    for (i = 0; i <= sp->n_out; i++) results[i] = NULL;
    for (i = 0; i < sp->n_seq; i++) b.n_stap += gr__scan_seq_ntaps(sp, i);
    for (j = 0; j < sp->n_out; j++) if (sp->init[j]) { b.n_state++; b.n_ttap += gr__scan_out_ntaps(sp, j); }
    b.in = (gr_var **)gr__calloc((size_t)(b.n_stap + b.n_ttap + sp->n_val) + 1, sizeof(gr_var *));
    b.out = (gr_var **)gr__calloc((size_t)sp->n_out + 2, sizeof(gr_var *));
    if (!b.in || !b.out) { st = gr__scan_nomem(&b); goto done; }
    if ((st = gr__scan_run_step(&b)) != GR_OK || (st = gr__scan_find_body(&b)) != GR_OK || (st = gr__scan_def_new(&b)) != GR_OK ||
        (st = gr__scan_copy_body(&b)) != GR_OK)
        goto done;
    /* 4. the node */
    ins = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(gr__scan_n_in(b.d) + 1));
    if (!ins) { st = gr__scan_nomem(&b); goto done; }
    pos = 0;
    if (sp->n_steps) ins[pos++] = sp->n_steps;
    for (i = 0; sp->seq_off && i < sp->n_seq; i++) if (sp->seq_off[i]) ins[pos++] = sp->seq_off[i];
    for (i = 0; i < sp->n_seq; i++) ins[pos++] = sp->seq[i];
    for (j = 0; j < sp->n_out; j++) if (sp->init[j]) ins[pos++] = sp->init[j];
    for (i = 0; i < b.vals.n; i++) ins[pos++] = b.vals.list[i];
    memset(&prm, 0, sizeof prm);
    prm.def = b.d;
    st = gr__make_node_n(g, &gr__op_Scan, &prm, sizeof prm, pos, ins, sp->n_out + 1, results);
    if (st != GR_OK) for (i = 0; i <= sp->n_out; i++) results[i] = NULL;
done:
    if (b.d && --b.d->head.refs == 0) b.d->head.destroy(&b.d->head);   /* the node's graph holds it now */
    gr__vset_free(&b.vals);
    GR_FREE(b.in); GR_FREE(b.out); GR_FREE(b.dep); GR_FREE(b.need); GR_FREE(b.map); GR_FREE(ins);
    return st;
}

/* ---- gr_scan: the user's loop ------------------------------------------------------------------------ */

static int gr__scan_bad_var(gr_graph *g, const char *name, const char *what, int i, gr_var *v, gr_status *st) {
    if (v->graph != g) { *st = gr__error(g, GR_ERR_VALUE, "gr_scan '%s': %s %d (%s) belongs to another graph", name, what, i, gr__d(v).s); return 1; }
    if (gr__is_marker(v)) { *st = gr__error(g, GR_ERR_TYPE, "gr_scan '%s': %s %d is a gradient marker, not a value", name, what, i); return 1; }
    return 0;
}

/* output j's taps and initial value: taps given with an initial value, negative, distinct; a
   mit-sot's initial value has the rows its taps read. Else the error is recorded on g (*st): 1 */
static int gr__scan_bad_out(gr_graph *g, const char *name, int j, const gr_scan_out *o, gr_status *st) {
    gr_var *x = o->initial;
    int t, u;
    if (o->n_taps < 0 || (o->n_taps > 0 && (!o->taps || !x))) {
        *st = gr__error(g, GR_ERR_VALUE, "gr_scan '%s': output %d has %d taps, taps %s and %s initial value", name, j, o->n_taps,
                        o->taps ? "given" : "NULL", x ? "an" : "no");
        return 1;
    }
    if (!x) return 0;
    if (gr__scan_bad_var(g, name, "initial value", j, x, st)) return 1;
    for (t = 0; t < o->n_taps; t++) {
        if (o->taps[t] >= 0) {
            *st = gr__error(g, GR_ERR_VALUE, "gr_scan '%s': output %d has the tap %d; a state's taps are negative", name, j, o->taps[t]);
            return 1;
        }
        for (u = 0; u < t; u++)
            if (o->taps[u] == o->taps[t]) {
                *st = gr__error(g, GR_ERR_VALUE, "gr_scan '%s': output %d has the tap %d twice", name, j, o->taps[t]);
                return 1;
            }
    }
    if (!(o->n_taps == 0 || (o->n_taps == 1 && o->taps[0] == -1))) {   /* a mit-sot: rows of initial values */
        int D = 0;
        for (t = 0; t < o->n_taps; t++) if (-o->taps[t] > D) D = -o->taps[t];
        if (x->ndim < 1) {
            *st = gr__error(g, GR_ERR_VALUE, "gr_scan '%s': output %d has taps down to %d, so its initial value needs %d rows; %s is 0-d",
                            name, j, -D, D, gr__d(x).s);
            return 1;
        }
        if (x->kind != GR__VK_SHARED && gr__vshape(x)[0] >= 0 && gr__vshape(x)[0] < D) {
            *st = gr__error(g, GR_ERR_SHAPE, "gr_scan '%s': output %d has taps down to %d, so its initial value needs %d rows; %s has %lld",
                            name, j, -D, D, gr__d(x).s, (long long)gr__vshape(x)[0]);
            return 1;
        }
    }
    return 0;
}

GR_API gr_status gr_scan(gr_scan_step step, void *user, int n_seq, const gr_scan_seq *seqs, int n_out, const gr_scan_out *outs,
                         int n_nonseq, gr_var *const *non_seqs, const gr_scan_opts *opts, gr_var **results) {
    gr_graph *g = NULL;
    const char *name = opts && opts->name ? opts->name : "scan";
    gr_var **seq = NULL, **init = NULL, **res = NULL;
    int *ntaps = NULL, *ontaps = NULL, i, j;
    const int **taps = NULL, **otaps = NULL;
    gr__scan_spec sp;
    gr_status st = GR_ERR_NOMEM;
    if (results) for (j = 0; j < n_out; j++) results[j] = NULL;
    /* the graph: the first non-NULL of the sequences, the initial values, the non-sequences, n_steps */
    for (i = 0; !g && seqs && i < n_seq; i++) if (seqs[i].x) g = seqs[i].x->graph;
    for (j = 0; !g && outs && j < n_out; j++) if (outs[j].initial) g = outs[j].initial->graph;
    for (i = 0; !g && non_seqs && i < n_nonseq; i++) if (non_seqs[i]) g = non_seqs[i]->graph;
    if (!g && opts && opts->n_steps) g = opts->n_steps->graph;
    if (!g) return GR_ERR_VALUE;
    if (!step) return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': step is NULL", name);
    if (!results) return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': results is NULL", name);
    if (n_seq < 0 || n_out < 0 || n_nonseq < 0)
        return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': %d sequences, %d outputs and %d non-sequences", name, n_seq, n_out, n_nonseq);
    if ((n_seq && !seqs) || (n_out && !outs) || (n_nonseq && !non_seqs))
        return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': %s is NULL", name, n_seq && !seqs ? "seqs" : n_out && !outs ? "outs" : "non_seqs");
    if (n_out == 0) return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': a loop needs at least one output", name);
    for (i = 0; i < n_seq; i++) {
        gr_var *x = seqs[i].x;
        if (!x) return g->status != GR_OK ? g->status : gr__error(g, GR_ERR_VALUE, "gr_scan '%s': sequence %d is NULL", name, i);
        if (gr__scan_bad_var(g, name, "sequence", i, x, &st)) return st;
        if (x->ndim < 1) return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': sequence %d (%s) is 0-d: there is no axis to iterate", name, i, gr__d(x).s);
        if (seqs[i].n_taps < 0 || (seqs[i].n_taps > 0 && !seqs[i].taps))
            return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': sequence %d has %d taps and taps %s", name, i, seqs[i].n_taps,
                             seqs[i].taps ? "given" : "NULL");
    }
    for (j = 0; j < n_out; j++) if (gr__scan_bad_out(g, name, j, &outs[j], &st)) return st;
    for (i = 0; i < n_nonseq; i++) {
        if (!non_seqs[i]) return g->status != GR_OK ? g->status : gr__error(g, GR_ERR_VALUE, "gr_scan '%s': non-sequence %d is NULL", name, i);
        if (gr__scan_bad_var(g, name, "non-sequence", i, non_seqs[i], &st)) return st;
    }
    if (opts && opts->n_steps) {
        gr_var *n = opts->n_steps;
        if (n->graph != g) return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': n_steps (%s) belongs to another graph", name, gr__d(n).s);
        if (gr__is_marker(n) || n->ndim != 0 || n->dtype != GR_I64)
            return gr__error(g, GR_ERR_TYPE, "gr_scan '%s': n_steps must be a 0-d int64, not %s", name, gr__d(n).s);
    } else if (n_seq == 0)
        return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': without sequences the loop needs n_steps", name);
    if (opts && (opts->truncate_gradient < 0 || opts->checkpoints < 0))
        return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': truncate_gradient and checkpoints are counts (0: off), given %lld and %lld", name,
                         (long long)opts->truncate_gradient, (long long)opts->checkpoints);
    seq = (gr_var **)gr__calloc((size_t)n_seq + 1, sizeof(gr_var *));
    ntaps = (int *)gr__calloc((size_t)(n_seq + n_out) + 1, sizeof(int));
    taps = (const int **)gr__calloc((size_t)(n_seq + n_out) + 1, sizeof(int *));
    init = (gr_var **)gr__calloc((size_t)n_out + 1, sizeof(gr_var *));
    res = (gr_var **)gr__calloc((size_t)n_out + 2, sizeof(gr_var *));
    if (!seq || !ntaps || !taps || !init || !res) { st = gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory", name); goto done; }
    ontaps = ntaps + n_seq;
    otaps = taps + n_seq;
    for (i = 0; i < n_seq; i++) { seq[i] = seqs[i].x; ntaps[i] = seqs[i].n_taps; taps[i] = seqs[i].taps; }
    for (j = 0; j < n_out; j++) { init[j] = outs[j].initial; ontaps[j] = outs[j].n_taps; otaps[j] = outs[j].taps; }
    memset(&sp, 0, sizeof sp);
    sp.n_seq = n_seq; sp.seq = seq; sp.seq_ntaps = ntaps; sp.seq_taps = taps;
    sp.n_out = n_out; sp.init = init; sp.out_ntaps = ontaps; sp.out_taps = otaps;
    sp.n_val = n_nonseq; sp.val = non_seqs;
    sp.n_steps = opts ? opts->n_steps : NULL;
    sp.go_backwards = opts ? opts->go_backwards != 0 : 0;
    sp.truncate = opts ? opts->truncate_gradient : 0;
    sp.checkpoints = opts ? opts->checkpoints : 0;
    sp.name = name;
    sp.step = step;
    sp.user = user;
    st = gr__scan_make(g, &sp, res);
    if (st == GR_OK) for (j = 0; j < n_out; j++) results[j] = res[j];
done:
    GR_FREE(seq); GR_FREE(ntaps); GR_FREE(taps); GR_FREE(init); GR_FREE(res);
    return st;
}

/* ---- type ---------------------------------------------------------------------------------------------- */

/* the steps the loop runs, when known at build time: -1 otherwise */
static int64_t gr__scan_static_steps(const gr_node *node) {
    const gr__scan_def *d = gr__sdef(node);
    int64_t L = -1;
    int i;
    if (d->has_until) return -1;
    if (d->has_n_steps) {
        const gr_var *n = gr__in(node)[0];
        return n->kind == GR__VK_CONST ? (int64_t)gr__load(GR_I64, ((const gr_array *)gr__ext(n))->data, 0) : -1;
    }
    for (i = 0; i < d->n_seq; i++) {
        const gr_var *x = gr__in(node)[gr__scan_i_seq(d) + i];
        int64_t len = x->kind == GR__VK_SHARED ? -1 : gr__vshape(x)[0];
        if (len < 0 || d->seq_off[i] >= 0) return -1;
        len -= d->seq_M[i] - d->seq_m[i];
        if (len < 0) len = 0;
        if (L < 0 || len < L) L = len;
    }
    return L;
}

static gr_status gr__Scan_infer(const gr_node *node, gr_type *out) {
    const gr__scan_def *d = gr__sdef(node);
    int64_t L = gr__scan_static_steps(node);
    int j, i;
    for (j = 0; j < d->n_out; j++) {
        const gr_var *b = d->bout[j];
        int lead = gr__scan_last(node, j) ? 0 : 1;
        if (b->ndim + lead > GR_MAX_NDIM)
            return gr__error(node->graph, GR_ERR_VALUE, "gr_scan '%s': output %d would have more than %d dimensions", d->name, j, GR_MAX_NDIM);
        out[j].dtype = (gr_dtype)b->dtype;
        out[j].ndim = b->ndim + lead;
        if (lead) out[j].shape[0] = L >= 0 && gr__scan_front(node, j) ? L + 1 : L;
        for (i = 0; i < b->ndim; i++) out[j].shape[i + lead] = gr__vshape(b)[i];
    }
    out[d->n_out].dtype = GR_I64;
    out[d->n_out].ndim = 0;
    return GR_OK;
}

/* never asked: a loop's shapes are known once it has run (GR__OPF_DYNSHAPE) */
static gr_status gr__Scan_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)in; (void)out;
    return gr_node_error(node, GR_ERR_VALUE, "a loop's shapes are known only by running it");
}

/* ---- running -------------------------------------------------------------------------------------------- */

typedef struct gr__scan_rows { void *data; size_t cap; } gr__scan_rows;
/* The replay of a checkpointed gradient's loop: the forward states' windows (each state's last D
   rows) at the steps the backward loop needs, in decreasing order, recomputed from at most
   `checkpoints` stored windows by binomial checkpointing (Griewank and Walther, "Algorithm 799:
   revolve", ACM TOMS 26, 2000): to reverse steps [a, b) holding the window at a and s free slots,
   with r the least repetition count such that C(s + r, s) >= b - a, advance to m = a + max(1,
   b - a - C(s - 1 + r, s - 1)), keep the window at m in a slot, reverse [m, b) with s - 1 slots,
   free it, then reverse [a, m) with s. An explicit stack: no recursion over steps. */
typedef struct gr__rframe { int64_t a, b; int s, slot, owns; } gr__rframe;
typedef struct gr__replay {
    gr_fn *body;                         /* the forward loop's body, compiled as the forward loop's */
    int64_t *spec;                       /* its input shapes (see gr__scan_rt) */
    gr_array *bin;
    const gr_array **bin_ptr, **bout;
    int n_slots;                         /* checkpoints */
    unsigned char *mem;                  /* n_slots + 2 windows: the slots, the start's, the one advanced */
    size_t wbytes, *s_off, *s_row;       /* a window's bytes; per forward state: its rows' place and size */
    int *slot_free;                      /* stack of free slots */
    int n_free;
    size_t memcap;
    gr__rframe *stack;
    int sp;
} gr__replay;

struct gr__scan_rt {
    gr_fn *body;
    gr_fn *body2;                        /* a second instance, when steps alternate between the two: an
                                            output keeping its final value only is then passed from one
                                            step to the next without a copy (gr__scan_pingpong) */
    const gr_array **bout2;
    int level;                           /* the enclosing function's optimisation level */
    int64_t *spec;                       /* the body's input shapes it was compiled for (n_bin x (1 + GR_MAX_NDIM)) */
    gr__replay *rp;                      /* a checkpointed gradient's loop: its forward replay */
    gr_array *bin;                       /* the body's inputs for a step: views into rows, or the values */
    const gr_array **bin_ptr;
    const gr_array **bout;               /* the body's results of a step */
    gr__scan_rows *res;                  /* per output: its rows (a LAST output's: D rows, a ring) */
    int64_t *rows;                       /* per output: rows res holds room for */
    int64_t steps;                       /* the steps of the last call: the steps output's value */
};

/* output j goes from step to step without a copy: only its final value is kept, and it is a plain
   state or has no state (a window of several rows is a ring, copied into) */
static int gr__scan_pingpong(const gr_node *node, int j) {
    const gr__scan_def *d = gr__sdef(node);
    return gr__scan_last(node, j) && (d->out_state[j] < 0 || d->st_D[d->out_state[j]] == 1);
}

static gr_status gr__Scan_runtime(gr_node *node, int level) {
    gr__scan_params *p = (gr__scan_params *)gr__params(node);
    gr__scan_def *d = p->def;
    gr__scan_rt *rt = (gr__scan_rt *)gr__calloc(1, sizeof(gr__scan_rt));
    gr_fn_opts fo;
    int i;
    if (!rt) return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
    p->rt = rt;
    memset(&fo, 0, sizeof fo);
    fo.optimize = (gr_optimize)level;
    rt->bin = (gr_array *)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_array));
    rt->bin_ptr = (const gr_array **)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_array *));
    rt->bout = (const gr_array **)gr__calloc((size_t)d->n_bout + 1, sizeof(gr_array *));
    rt->bout2 = (const gr_array **)gr__calloc((size_t)d->n_bout + 1, sizeof(gr_array *));
    rt->res = (gr__scan_rows *)gr__calloc((size_t)d->n_out + 1, sizeof(gr__scan_rows));
    rt->rows = (int64_t *)gr__calloc((size_t)d->n_out + 1, sizeof(int64_t));
    if (!rt->bin || !rt->bin_ptr || !rt->bout || !rt->bout2 || !rt->res || !rt->rows)
        return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
    for (i = 0; i < d->n_bin; i++) rt->bin_ptr[i] = &rt->bin[i];
    rt->level = level;
    rt->spec = (int64_t *)gr__calloc((size_t)d->n_bin * (1 + GR_MAX_NDIM) + 1, sizeof(int64_t));
    if (!rt->spec) return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
    rt->body = gr_function(d->n_bin, d->bin, d->n_bout, d->bout, &fo);   /* (its errors show now; calls specialise it) */
    if (!rt->body) {
        gr_status st = gr__error(node->graph, d->ig->status != GR_OK ? d->ig->status : GR_ERR_NOMEM, "gr_scan '%s': compiling the body: %s",
                                 d->name, d->ig->message);
        gr_graph_clear_error(d->ig);
        return st;
    }
    if (d->replay) {                             /* the forward loop's body, for the replay */
        const gr__scan_def *f = d->replay;
        gr__replay *rp = (gr__replay *)gr__calloc(1, sizeof(gr__replay));
        if (!rp) return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
        rt->rp = rp;
        rp->n_slots = d->checkpoints > 0 && d->checkpoints < INT_MAX - 4 ? (int)d->checkpoints : 1;
        rp->bin = (gr_array *)gr__calloc((size_t)f->n_bin + 1, sizeof(gr_array));
        rp->bin_ptr = (const gr_array **)gr__calloc((size_t)f->n_bin + 1, sizeof(gr_array *));
        rp->bout = (const gr_array **)gr__calloc((size_t)f->n_bout + 1, sizeof(gr_array *));
        rp->s_off = (size_t *)gr__calloc(2u * (size_t)f->n_state + 1, sizeof(size_t));
        rp->slot_free = (int *)gr__calloc((size_t)rp->n_slots + 1, sizeof(int));
        if (!rp->bin || !rp->bin_ptr || !rp->bout || !rp->s_off || !rp->slot_free)
            return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
        rp->s_row = rp->s_off + f->n_state;
        for (i = 0; i < f->n_bin; i++) rp->bin_ptr[i] = &rp->bin[i];
        rp->spec = (int64_t *)gr__calloc((size_t)f->n_bin * (1 + GR_MAX_NDIM) + 1, sizeof(int64_t));
        if (!rp->spec) return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
        rp->body = gr_function(f->n_bin, f->bin, f->n_bout, f->bout, &fo);
        if (!rp->body) {
            gr_status st = gr__error(node->graph, f->ig->status != GR_OK ? f->ig->status : GR_ERR_NOMEM,
                                     "gr_scan '%s': compiling the forward body: %s", d->name, f->ig->message);
            gr_graph_clear_error(f->ig);
            return st;
        }
    }
    return GR_OK;
}
static void gr__Scan_release(gr_node *node) {
    gr__scan_params *p = (gr__scan_params *)gr__params(node);
    gr__scan_rt *rt = p->rt;
    int j;
    if (!rt) return;
    gr_fn_free(rt->body);
    gr_fn_free(rt->body2);
    GR_FREE(rt->bout2);
    GR_FREE(rt->spec);
    if (rt->rp) {
        gr_fn_free(rt->rp->body);
        GR_FREE(rt->rp->spec);
        GR_FREE(rt->rp->bin); GR_FREE(rt->rp->bin_ptr); GR_FREE(rt->rp->bout); GR_FREE(rt->rp->s_off);
        GR_FREE(rt->rp->slot_free); GR_FREE(rt->rp->mem); GR_FREE(rt->rp->stack);
        GR_FREE(rt->rp);
    }
    for (j = 0; rt->res && j < p->def->n_out; j++) GR_FREE(rt->res[j].data);
    GR_FREE(rt->bin); GR_FREE(rt->bin_ptr); GR_FREE(rt->bout); GR_FREE(rt->res); GR_FREE(rt->rows);
    GR_FREE(rt);
    p->rt = NULL;
}

/* a (ndim - 1)-d view of row r of x */
static void gr__row_view(gr_array *v, const gr_array *x, int64_t r) {
    int i;
    memset(v, 0, sizeof *v);
    v->dtype = x->dtype;
    v->ndim = x->ndim - 1;
    v->size = 1;
    for (i = 1; i < x->ndim; i++) { v->shape[i - 1] = x->shape[i]; v->size *= x->shape[i]; }
    v->data = (char *)x->data + (size_t)r * (size_t)v->size * gr__dsize(x->dtype);
}

/* *body compiled for this call's input shapes (bin: the body's inputs of a step): when they differ from
   those it was compiled for (spec), the body is copied with them as static shapes (its nodes typed
   again) and compiled, so that the rewrites know every size: a ReduceLike to the same shape goes, the
   recomputation nothing reads then goes, fusion sees equal shapes. The first call, and a call with
   other shapes, compile; a steady-state call compares the shapes only. */
static gr_status gr__scan_specialise(const gr_node *node, const gr__scan_def *d, const gr_array *bin, int level, gr_fn **body,
                                     gr_fn **body2, int64_t *spec) {
    gr_graph *cg = NULL;
    gr_var **map = NULL, **cin = NULL, **cout = NULL;
    int i, same = spec[0] != 0;
    gr_fn_opts fo;
    gr_fn *f;
    gr_status st = GR_ERR_NOMEM;
    for (i = 0; same && i < d->n_bin; i++) {
        const int64_t *e = spec + 1 + (size_t)i * (1 + GR_MAX_NDIM);
        same = e[0] == bin[i].ndim && memcmp(e + 1, bin[i].shape, sizeof(int64_t) * (size_t)bin[i].ndim) == 0;
    }
    if (same) return GR_OK;
    cg = gr_graph_new();
    map = (gr_var **)gr__calloc((size_t)d->ig->n_vars + 1, sizeof(gr_var *));
    cin = (gr_var **)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_var *));
    cout = (gr_var **)gr__calloc((size_t)d->n_bout + 1, sizeof(gr_var *));
    if (!cg || !map || !cin || !cout) goto nomem;
    for (i = 0; i < d->n_bin; i++)
        if (!(cin[i] = map[d->bin[i]->id] = gr__new_var(cg, d->bin[i]->dtype, bin[i].ndim, bin[i].shape, GR__VK_INPUT))) goto failed;
    if (gr__scan_clone(d, cg, map, cout) != GR_OK) goto failed;
    memset(&fo, 0, sizeof fo);
    fo.optimize = (gr_optimize)level;
    if (!(f = gr_function(d->n_bin, cin, d->n_bout, cout, &fo))) goto failed;
    gr_fn_free(*body);
    *body = f;
    if (body2) {                                  /* the same program again: identical results */
        if (!(f = gr_function(d->n_bin, cin, d->n_bout, cout, &fo))) goto failed;
        gr_fn_free(*body2);
        *body2 = f;
    }
    for (i = 0; i < d->n_bin; i++) {
        int64_t *e = spec + 1 + (size_t)i * (1 + GR_MAX_NDIM);
        e[0] = bin[i].ndim;
        memcpy(e + 1, bin[i].shape, sizeof(int64_t) * (size_t)bin[i].ndim);
    }
    spec[0] = 1;
    st = GR_OK;
    goto done;
failed:
    st = gr__error(node->graph, cg && cg->status != GR_OK ? cg->status : GR_ERR_NOMEM, "gr_scan '%s': the body for these shapes: %s",
                   d->name, cg && cg->message[0] ? cg->message : "out of memory");
    goto done;
nomem:
    st = gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
done:
    GR_FREE(map); GR_FREE(cin); GR_FREE(cout);
    gr_graph_free(cg);
    return st;
}

/* room for `rows` rows of `bytes` each in output j's buffer, its rows kept; 0 when out of memory */
static int gr__scan_room(gr__scan_rt *rt, int j, int64_t rows, size_t bytes) {
    size_t need = (size_t)rows * bytes;
    if (need <= rt->res[j].cap) return 1;
    {
        size_t cap = rt->res[j].cap ? 2 * rt->res[j].cap : 64;
        void *p;
        while (cap < need) cap *= 2;
        p = GR_REALLOC(rt->res[j].data, cap);
        if (!p) return 0;
        rt->res[j].data = p;
        rt->res[j].cap = cap;
    }
    return 1;
}

/* C(s + r, s), saturated far above any number of steps */
static int64_t gr__binom(int64_t s, int64_t r) {
    int64_t k, lo = s < r ? s : r, v = 1;
    for (k = 1; k <= lo; k++) {              /* v = C(s + r - lo + k, k), exactly */
        int64_t top = s + r - lo + k;
        if (v > ((int64_t)1 << 52) / top) return (int64_t)1 << 52;
        v = v * top / k;
    }
    return v;
}

/* rp's window w: the slots, then the start's (n_slots), then the one advanced (n_slots + 1) */
static unsigned char *gr__replay_w(const gr__replay *rp, int w) { return rp->mem + (size_t)w * rp->wbytes; }

/* window dst := the forward loop's window at step t, from window src at step a (a <= t): the forward
   body run over steps a .. t-1. in: the gradient loop's inputs; off: its sequences' offsets */
static gr_status gr__replay_advance(const gr_node *node, gr__replay *rp, const gr_array *const *in, const int64_t *off, int64_t lm1,
                                    int src, int dst, int64_t a, int64_t t) {
    const gr__scan_def *d = gr__sdef(node), *f = d->replay;
    unsigned char *w = gr__replay_w(rp, dst);
    int64_t u;
    int i, k, s, pos;
    gr_status st;
    if (src != dst) memcpy(w, gr__replay_w(rp, src), rp->wbytes);
    for (u = a; u < t; u++) {
        for (i = 0, pos = 0; i < f->n_seq; i++) {     /* forward sequence i is this loop's replay_seq0 + i */
            int bi = d->replay_seq0 + i;
            int64_t off_f = off[bi] + (int64_t)d->seq_dir[bi] * lm1, dir_f = -d->seq_dir[bi];
            for (k = 0; k < f->seq_ntaps[i]; k++)
                gr__row_view(&rp->bin[pos++], in[gr__scan_i_seq(d) + bi], off_f + dir_f * u + f->taps[f->seq_at[i] + k] - f->seq_m[i]);
        }
        for (s = 0; s < f->n_state; s++) {
            const gr_array *x0 = in[gr__scan_i_val(d) + d->replay_init0 + s];
            int sit = f->st_ntaps[s] == 1 && f->taps[f->st_at[s]] == -1;
            for (k = 0; k < f->st_ntaps[s]; k++) {
                gr_array *v = &rp->bin[pos++];
                *v = *x0;
                if (!sit) gr__row_view(v, x0, 0);
                v->data = w + rp->s_off[s] + (size_t)(f->st_D[s] + f->taps[f->st_at[s] + k]) * rp->s_row[s];
            }
        }
        for (i = 0; i < f->n_val; i++) rp->bin[pos++] = *in[gr__scan_i_val(d) + i];
        if ((st = gr__scan_specialise(node, f, rp->bin, gr__scan_rt_of(node)->level, &rp->body, NULL, rp->spec)) != GR_OK) return st;
        if ((st = gr_call(rp->body, rp->bin_ptr, rp->bout)) != GR_OK) {
            const char *msg = gr_fn_message(rp->body);
            return gr__error(node->graph, st, "gr_scan '%s', recomputing step %lld: %s", d->name, (long long)u,
                             strncmp(msg, "gr_call: ", 9) == 0 ? msg + 9 : msg);
        }
        for (s = 0; s < f->n_state; s++) {           /* the window moves one row */
            const gr_array *y = rp->bout[f->st_out[s]];
            unsigned char *rows = w + rp->s_off[s];
            if ((size_t)y->size * gr__dsize(y->dtype) != rp->s_row[s])
                return gr__error(node->graph, GR_ERR_SHAPE, "gr_scan '%s', recomputing step %lld: a state changed its shape", d->name, (long long)u);
            if (f->st_D[s] > 1) memmove(rows, rows + rp->s_row[s], (size_t)(f->st_D[s] - 1) * rp->s_row[s]);
            if (rp->s_row[s]) memcpy(rows + (size_t)(f->st_D[s] - 1) * rp->s_row[s], y->data, rp->s_row[s]);
        }
    }
    return GR_OK;
}

/* the window of the next forward step the gradient's loop needs (decreasing steps), in *win */
static gr_status gr__replay_next(const gr_node *node, gr__replay *rp, const gr_array *const *in, const int64_t *off, int64_t lm1,
                                 int64_t want, const unsigned char **win) {
    const gr__scan_def *d = gr__sdef(node);
    gr_status st;
    while (rp->sp > 0) {
        gr__rframe *fr = &rp->stack[rp->sp - 1];
        int64_t n = fr->b - fr->a;
        if (n == 1) {
            if (fr->a != want) break;
            *win = gr__replay_w(rp, fr->slot);
            if (fr->owns) rp->slot_free[rp->n_free++] = fr->slot;   /* read before the next advance */
            rp->sp--;
            return GR_OK;
        }
        if (fr->s == 0 || rp->n_free == 0) {         /* no slot left (not reached by the schedule): recompute */
            if ((st = gr__replay_advance(node, rp, in, off, lm1, fr->slot, rp->n_slots + 1, fr->a, fr->b - 1)) != GR_OK) return st;
            if (fr->b - 1 != want) break;
            *win = gr__replay_w(rp, rp->n_slots + 1);
            fr->b--;
            return GR_OK;
        }
        {
            int64_t r = 0, m;
            int slot = rp->slot_free[--rp->n_free];
            while (gr__binom(fr->s, r) < n) r++;
            m = n - gr__binom(fr->s - 1, r);
            m = fr->a + (m < 1 ? 1 : m);
            if ((st = gr__replay_advance(node, rp, in, off, lm1, fr->slot, slot, fr->a, m)) != GR_OK) return st;
            rp->stack[rp->sp].a = m;                 /* the right part first: later steps come first */
            rp->stack[rp->sp].b = fr->b;
            rp->stack[rp->sp].s = fr->s - 1;
            rp->stack[rp->sp].slot = slot;
            rp->stack[rp->sp].owns = 1;
            fr->b = m;
            rp->sp++;
        }
    }
    return gr__error(node->graph, GR_ERR_VALUE, "gr_scan '%s': the replay lost step %lld (internal)", d->name, (long long)want);
}

/* the replay ready to give the windows of steps L-1 down to start: the forward windows' layout, the
   window at `start` (from the initial values), the schedule's root */
static gr_status gr__replay_begin(const gr_node *node, gr__replay *rp, const gr_array *const *in, const int64_t *off, int64_t lm1,
                                  int64_t start) {
    const gr__scan_def *d = gr__sdef(node), *f = d->replay;
    unsigned char *w0;
    size_t total = 0, need;
    int s, i;
    for (s = 0; s < f->n_state; s++) {
        const gr_array *x0 = in[gr__scan_i_val(d) + d->replay_init0 + s];
        int sit = f->st_ntaps[s] == 1 && f->taps[f->st_at[s]] == -1;
        rp->s_row[s] = (size_t)(sit ? x0->size : (x0->shape[0] ? x0->size / x0->shape[0] : 0)) * gr__dsize(x0->dtype);
        rp->s_off[s] = total;
        total += ((size_t)f->st_D[s] * rp->s_row[s] + 15u) & ~(size_t)15u;
    }
    rp->wbytes = total ? total : 16;
    need = (size_t)(rp->n_slots + 2) * rp->wbytes;
    if (!rp->mem || need > rp->memcap) {                 /* made again only when a window grew */
        GR_FREE(rp->mem);
        rp->mem = (unsigned char *)GR_MALLOC(need);
        rp->memcap = rp->mem ? need : 0;
        if (!rp->mem) return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory (checkpoints)", d->name);
    }
    if (!rp->stack) {
        rp->stack = (gr__rframe *)GR_MALLOC(sizeof(gr__rframe) * (size_t)(rp->n_slots + 2));
        if (!rp->stack) return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory (checkpoints)", d->name);
    }
    w0 = gr__replay_w(rp, rp->n_slots + 1);              /* the initial window, then the start's */
    for (s = 0; s < f->n_state; s++) {
        const gr_array *x0 = in[gr__scan_i_val(d) + d->replay_init0 + s];
        if (rp->s_row[s]) memcpy(w0 + rp->s_off[s], x0->data, (size_t)f->st_D[s] * rp->s_row[s]);
    }
    for (i = 0; i < rp->n_slots; i++) rp->slot_free[i] = rp->n_slots - 1 - i;
    rp->n_free = rp->n_slots;
    rp->sp = 0;
    if (start > lm1 + 1) return GR_OK;                    /* no step: nothing to give */
    {
        gr_status st = gr__replay_advance(node, rp, in, off, lm1, rp->n_slots + 1, rp->n_slots, 0, start);
        if (st != GR_OK) return st;
    }
    rp->stack[0].a = start;
    rp->stack[0].b = lm1 + 1;
    rp->stack[0].s = rp->n_slots;
    rp->stack[0].slot = rp->n_slots;
    rp->stack[0].owns = 0;
    rp->sp = lm1 + 1 > start ? 1 : 0;
    return GR_OK;
}

/* What one run of a loop works on (gr__Scan_perform): the node, its loop and runtime state, the
   node's arrays; the steps to run (L) and run; a checkpointed gradient's last forward step (lm1, or
   -1); per sequence its offset; per output the bytes of its rows and whether it goes from step to
   step without a copy (pp; any_pp: one does). */
typedef struct gr__scan_call {
    const gr_node *node;
    const gr__scan_def *d;
    gr__scan_rt *rt;
    const gr_array *const *in;
    gr_array *const *out;
    int64_t L, run, lm1, *off;
    size_t *rowb;
    unsigned char *pp;
    int any_pp;
} gr__scan_call;

/* the number of steps (c->L) and each sequence's offset (c->off), which allows the steps whose rows
   off + dir t + k - m stay in [0, len); a mit-sot's initial rows checked */
static gr_status gr__scan_steps(gr__scan_call *c) {
    const gr__scan_def *d = c->d;
    const gr_array *const *in = c->in;
    gr_graph *g = c->node->graph;
    int64_t L = -1, *off = c->off;
    int i, s, i_seq = gr__scan_i_seq(d), i_init = gr__scan_i_init(d);
    if (d->has_n_steps) {
        L = (int64_t)gr__load(GR_I64, in[0]->data, 0);
        if (L < 0) return gr__error(g, GR_ERR_VALUE, "gr_scan '%s': n_steps is %lld; it must not be negative", d->name, (long long)L);
    }
    for (i = 0; i < d->n_seq; i++) {
        const gr_array *x = in[i_seq + i];
        int64_t span = d->seq_M[i] - d->seq_m[i], allows;
        off[i] = d->seq_off[i] >= 0 ? (int64_t)gr__load(GR_I64, in[gr__scan_i_off(d) + d->seq_off[i]]->data, 0)
               : d->seq_dir[i] > 0 ? 0 : x->shape[0] - span - 1;
        if (d->replay && d->seq_replay[i] >= 0) continue;   /* recomputed, not read from x */
        if (d->seq_dir[i] > 0) allows = off[i] < 0 ? -1 : x->shape[0] - span - off[i];
        else allows = off[i] + span > x->shape[0] - 1 ? -1 : off[i] + 1;
        if (allows < 0 || (d->has_n_steps && allows < L))
            return gr__error(g, GR_ERR_SHAPE, "gr_scan '%s': sequence %d has %lld rows; %lld steps with its taps need %lld", d->name, i,
                             (long long)x->shape[0], (long long)(d->has_n_steps ? L : 0),
                             (long long)((d->has_n_steps ? L : 0) + span));
        if (!d->has_n_steps && (L < 0 || allows < L)) L = allows;
    }
    for (s = 0; s < d->n_state; s++) {
        const gr_array *x0 = in[i_init + s];
        if (d->taps[d->st_at[s]] != -1 || d->st_ntaps[s] != 1) {        /* a mit-sot: D rows of initial values */
            if (x0->shape[0] < d->st_D[s])
                return gr__error(g, GR_ERR_SHAPE, "gr_scan '%s': output %d has taps down to %d, so its initial value needs %d rows; it has %lld",
                                 d->name, d->st_out[s], -d->st_D[s], d->st_D[s], (long long)x0->shape[0]);
        }
    }
    c->L = L;
    return GR_OK;
}

/* the rows of the outputs with a state: their state's shape, room for the first (row 0: the initial
   value, when kept in front); 0 when out of memory */
static int gr__scan_state_rows(gr__scan_call *c) {
    const gr__scan_def *d = c->d;
    const gr_node *node = c->node;
    size_t *rowb = c->rowb;
    int j, s;
    for (j = 0; j < d->n_out; j++) {
        rowb[j] = 0;
        s = d->out_state[j];
        if (s >= 0) {
            const gr_array *x0 = c->in[gr__scan_i_init(d) + s];
            gr_array *o = c->out[j];
            int sit = d->st_ntaps[s] == 1 && d->taps[d->st_at[s]] == -1, a;
            size_t n = 1;
            for (a = sit ? 0 : 1; a < x0->ndim; a++) n *= (size_t)x0->shape[a];
            rowb[j] = n * gr__dsize(x0->dtype);
            o->ndim = d->bout[j]->ndim + (gr__scan_last(node, j) ? 0 : 1);
            for (a = sit ? 0 : 1; a < x0->ndim; a++) o->shape[a - (sit ? 0 : 1) + (gr__scan_last(node, j) ? 0 : 1)] = x0->shape[a];
            if (!gr__scan_room(c->rt, j, gr__scan_last(node, j) ? d->st_D[s] : 1 + gr__scan_front(node, j), rowb[j] ? rowb[j] : 1)) return 0;
            if (gr__scan_front(node, j) && rowb[j]) memcpy(c->rt->res[j].data, x0->data, rowb[j]);   /* row 0: the initial value */
        }
    }
    return 1;
}

/* the body's inputs at step t: the sequences' rows (a replayed forward state's from win), the
   states' taps (the initial value's rows, the other instance's output, or the rows kept), the values */
static void gr__scan_bind(gr__scan_call *c, int64_t t, const unsigned char *win) {
    const gr__scan_def *d = c->d;
    const gr_node *node = c->node;
    const gr_array *const *in = c->in;
    gr__scan_rt *rt = c->rt;
    int i, j, s, k, pos, i_seq = gr__scan_i_seq(d), i_init = gr__scan_i_init(d), i_val = gr__scan_i_val(d);
    for (i = 0, pos = 0; i < d->n_seq; i++)
        for (k = 0; k < d->seq_ntaps[i]; k++) {
            gr_array *v = &rt->bin[pos++];
            if (win && d->seq_replay[i] >= 0) {      /* a forward state's row, from the replayed window */
                int fs = d->seq_replay[i];
                gr__row_view(v, in[i_seq + i], 0);
                v->data = (unsigned char *)(uintptr_t)win + rt->rp->s_off[fs] +
                          (size_t)(d->replay->st_D[fs] + d->taps[d->seq_at[i] + k]) * rt->rp->s_row[fs];
            } else
                gr__row_view(v, in[i_seq + i], c->off[i] + d->seq_dir[i] * t + d->taps[d->seq_at[i] + k] - d->seq_m[i]);
        }
    for (s = 0; s < d->n_state; s++) {
        const gr_array *x0 = in[i_init + s];
        int sit = d->st_ntaps[s] == 1 && d->taps[d->st_at[s]] == -1, D = d->st_D[s];
        j = d->st_out[s];
        for (k = 0; k < d->st_ntaps[s]; k++) {
            int64_t r = t + d->taps[d->st_at[s] + k];
            gr_array *v = &rt->bin[pos++];
            if (r < 0) {
                if (sit) *v = *x0;
                else gr__row_view(v, x0, r + D);
            } else if (c->pp[j]) {               /* the other instance's output of the step before */
                *v = *x0;
                v->data = (t & 1 ? rt->bout : rt->bout2)[j]->data;
            } else {
                int64_t slot = gr__scan_last(node, j) ? r % D : r + gr__scan_front(node, j);
                *v = *x0;                     /* dtype; the state's row shape */
                if (!sit) gr__row_view(v, x0, 0);
                v->data = (char *)rt->res[j].data + (size_t)slot * c->rowb[j];
            }
        }
    }
    for (i = 0; i < d->n_val; i++) rt->bin[pos++] = *in[i_val + i];
}

/* the outputs of step t kept: each checked against the shape of its rows (an output without a
   state takes the first step's), then copied to its row (a ping-pong output: at the last step only) */
static gr_status gr__scan_keep(gr__scan_call *c, int64_t t) {
    const gr__scan_def *d = c->d;
    const gr_node *node = c->node;
    gr__scan_rt *rt = c->rt;
    gr_array *const *out = c->out;
    size_t *rowb = c->rowb;
    int j, s;
    for (j = 0; j < d->n_out; j++) {
        const gr_array *b = (c->any_pp && (t & 1) ? rt->bout2 : rt->bout)[j];
        size_t bytes = (size_t)b->size * gr__dsize(b->dtype);
        int64_t slot = t + gr__scan_front(node, j);
        s = d->out_state[j];
        if (t == 0 && s < 0) {                /* an output without state: its rows take the first step's shape */
            int a;
            rowb[j] = bytes;
            out[j]->ndim = b->ndim + (gr__scan_last(node, j) ? 0 : 1);
            for (a = 0; a < b->ndim; a++) out[j]->shape[a + (gr__scan_last(node, j) ? 0 : 1)] = b->shape[a];
        }
        {
            int a, lead = gr__scan_last(node, j) ? 0 : 1, same = b->ndim + lead == out[j]->ndim;
            for (a = 0; same && a < b->ndim; a++) same = b->shape[a] == out[j]->shape[a + lead];
            if (!same)
                return gr__error(node->graph, GR_ERR_SHAPE, "gr_scan '%s', step %lld: output %d has the shape %s; %s", d->name, (long long)t, j,
                                 gr__as(b).s, s >= 0 ? "its state has another" : "the first step's was another");
        }
        if (c->pp[j] && !(t + 1 == c->L)) continue;   /* read from the instance's output: copied at the end only */
        if (gr__scan_last(node, j)) slot = s >= 0 ? t % d->st_D[s] : 0;
        if (!gr__scan_room(rt, j, slot + 1, rowb[j] ? rowb[j] : 1))
            return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
        if (bytes) memcpy((char *)rt->res[j].data + (size_t)slot * rowb[j], b->data, bytes);
    }
    return GR_OK;
}

/* the outputs, once the steps ran: their shapes, and their data in the rows kept (a LAST output's
   final row; with no step, the initial value's last tap) */
static gr_status gr__scan_give(gr__scan_call *c) {
    const gr__scan_def *d = c->d;
    const gr_node *node = c->node;
    gr__scan_rt *rt = c->rt;
    gr_graph *g = node->graph;
    int64_t run = c->run;
    size_t *rowb = c->rowb;
    int j, s;
    for (j = 0; j < d->n_out; j++) {
        gr_array *o = c->out[j];
        int a;
        if (run == 0 && d->out_state[j] < 0) {   /* no step ran: the body's shape at step 0, from its static shape */
            const gr_var *b = d->bout[j];
            o->ndim = b->ndim + (gr__scan_last(node, j) ? 0 : 1);
            for (a = 0; a < b->ndim; a++) o->shape[a + (gr__scan_last(node, j) ? 0 : 1)] = gr__vshape(b)[a] > 0 ? gr__vshape(b)[a] : 0;
        }
        if (!gr__scan_last(node, j)) o->shape[0] = run + gr__scan_front(node, j);
        o->size = 1;
        for (a = 0; a < o->ndim; a++) o->size *= o->shape[a];
        if (!gr__scan_room(rt, j, 1, 1)) return gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
        if (run == 0 && !d->out_last[j] && gr__scan_last(node, j))   /* read at row -1, which 0 steps do not have */
            return gr__error(g, GR_ERR_RUNTIME, "gr_scan '%s': output %d is read at its last row, and no step ran", d->name, j);
        if (gr__scan_last(node, j)) {
            s = d->out_state[j];
            if (run == 0 && s >= 0) {             /* the state before any step: the initial's last tap */
                const gr_array *x0 = c->in[gr__scan_i_init(d) + s];
                int sit = d->st_ntaps[s] == 1 && d->taps[d->st_at[s]] == -1;
                if (!gr__scan_room(rt, j, d->st_D[s], rowb[j] ? rowb[j] : 1)) return gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
                memcpy(rt->res[j].data, (const char *)x0->data + (sit ? 0 : (size_t)(d->st_D[s] - 1) * rowb[j]), rowb[j]);
                o->data = rt->res[j].data;
            } else
                o->data = (char *)rt->res[j].data + (size_t)(s >= 0 ? (run - 1) % d->st_D[s] : 0) * rowb[j];
        } else
            o->data = rt->res[j].data;
    }
    rt->steps = run;
    c->out[d->n_out]->size = 1;
    c->out[d->n_out]->data = &rt->steps;
    return GR_OK;
}

static gr_status gr__Scan_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__scan_params *p = (const gr__scan_params *)gr__params(node);
    const gr__scan_def *d = p->def;
    gr__scan_rt *rt = p->rt;
    gr_graph *g = node->graph;
    gr__scan_call c;
    int64_t t, off_stack[16];
    unsigned char pp_stack[16];
    size_t rowb_stack[16];
    int i, j, done = 0;
    gr_status st = GR_OK;
    if (!rt) return gr_node_error(node, GR_ERR_VALUE, "'%s' is run outside the function that compiled it", d->name);
    memset(&c, 0, sizeof c);
    c.node = node; c.d = d; c.rt = rt; c.in = in; c.out = out;
    c.L = -1; c.lm1 = -1;
    c.off = d->n_seq <= 16 ? off_stack : (int64_t *)GR_MALLOC(sizeof(int64_t) * (size_t)d->n_seq);
    c.rowb = d->n_out <= 16 ? rowb_stack : (size_t *)GR_MALLOC(sizeof(size_t) * (size_t)d->n_out);
    if (!c.off || !c.rowb) goto nomem;
    if ((st = gr__scan_steps(&c)) != GR_OK) goto out;
    if (!gr__scan_state_rows(&c)) goto nomem;
    /* a checkpointed gradient's loop: the forward windows of steps lm1 down to lm1 + 1 - L */
    if (rt->rp) {
        for (i = 0; i < d->n_seq && d->seq_replay[i] < 0; i++) {}
        c.lm1 = i < d->n_seq ? c.off[i] : -1;
        if (i < d->n_seq && (st = gr__replay_begin(node, rt->rp, in, c.off, c.lm1, c.lm1 + 1 - c.L)) != GR_OK) goto out;
    }
    c.pp = d->n_out <= 16 ? pp_stack : (unsigned char *)GR_MALLOC((size_t)d->n_out);
    if (!c.pp) goto nomem;
    for (j = 0; j < d->n_out; j++) { c.pp[j] = (unsigned char)gr__scan_pingpong(node, j); c.any_pp |= c.pp[j]; }
    /* the steps */
    for (t = 0; t < c.L && !done; t++) {
        const unsigned char *win = NULL;
        int odd = c.any_pp && (t & 1);           /* the step runs the second instance */
        if (rt->rp && c.lm1 >= 0 && (st = gr__replay_next(node, rt->rp, in, c.off, c.lm1, c.lm1 - t, &win)) != GR_OK) goto out;
        gr__scan_bind(&c, t, win);
        if (t == 0 && (st = gr__scan_specialise(node, d, rt->bin, rt->level, &rt->body, c.any_pp ? &rt->body2 : NULL, rt->spec)) != GR_OK)
            goto out;
        if ((st = gr_call(odd ? rt->body2 : rt->body, rt->bin_ptr, odd ? rt->bout2 : rt->bout)) != GR_OK) {
            const char *msg = gr_fn_message(odd ? rt->body2 : rt->body);
            st = gr__error(g, st, "gr_scan '%s', step %lld: %s", d->name, (long long)t, strncmp(msg, "gr_call: ", 9) == 0 ? msg + 9 : msg);
            goto out;
        }
        if ((st = gr__scan_keep(&c, t)) != GR_OK) goto out;
        c.run = t + 1;
        {
            const gr_array *cond = (odd ? rt->bout2 : rt->bout)[d->n_out];
            if (d->has_until && gr__load(cond->dtype, cond->data, 0) != 0) done = 1;
        }
        if (done && c.any_pp && t + 1 < c.L)              /* the last step: its ping-pong values kept now */
            for (j = 0; j < d->n_out; j++) {
                const gr_array *b = (t & 1 ? rt->bout2 : rt->bout)[j];
                if (!c.pp[j]) continue;
                if (!gr__scan_room(rt, j, 1, c.rowb[j] ? c.rowb[j] : 1)) goto nomem;
                if (b->size) memcpy(rt->res[j].data, b->data, (size_t)b->size * gr__dsize(b->dtype));
            }
    }
    st = gr__scan_give(&c);
    goto out;
nomem:
    st = gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
out:
    if (c.off && c.off != off_stack) GR_FREE(c.off);
    if (c.pp && c.pp != pp_stack) GR_FREE(c.pp);
    if (c.rowb && c.rowb != rowb_stack) GR_FREE(c.rowb);
    return st;
}

/* ---- Rows, ScanPlace, ScanGather: what the gradient's loop reads and writes ------------------------ */

/* Rows x: x.shape[0], an I64 0-d (the offsets of a gradient's loop are computed from it) */
static gr_var *gr__rows(gr_var *x) {
    gr_graph *g;
    if (!gr__operands("rows", 1, &x, &g)) return NULL;
    return gr__node1(g, &gr__op_Rows, NULL, 0, 1, &x);
}
static gr_status gr__Rows_infer(const gr_node *node, gr_type *out) {
    const gr_var *x = gr__in(node)[0];
    if (x->ndim < 1) return gr__error(node->graph, GR_ERR_VALUE, "Rows: %s is 0-d", gr__d(x).s);
    out->dtype = GR_I64;
    out->ndim = 0;
    return GR_OK;
}
static gr_status gr__Rows_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node; (void)in; (void)out;
    return GR_OK;
}
static gr_status gr__Rows_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    gr__store(GR_I64, out[0]->data, 0, (double)in[0]->shape[0]);
    return GR_OK;
}
static gr_status gr__Rows_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    (void)og;
    ig[0] = gr_disconnected_like(gr__in(node)[0]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Rows_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node; (void)ev;
    orop[0] = NULL;
    return GR_OK;
}

/* ScanPlace (r, like, off): zeros shaped like `like`, with row t of r added to row off + dir t + k
   (t < rows(r)): a sequence's gradient, from the rows a gradient's loop wrote for one of its taps.
   ScanGather (g, like, off): shaped like `like` (rows(like) rows), row t is row off + dir t + k of g.
   Each is the other's adjoint. */
typedef struct gr__place_params { int dir, k; } gr__place_params;

static gr_var *gr__place(const gr_op_def *op, gr_var *r, gr_var *like, gr_var *off, int dir, int k) {
    gr__place_params p;
    gr_var *ins[3];
    gr_graph *g;
    ins[0] = r; ins[1] = like; ins[2] = off;
    if (!gr__operands(op->name, 3, ins, &g)) return NULL;
    memset(&p, 0, sizeof p);
    p.dir = dir;
    p.k = k;
    return gr__node1(g, op, &p, sizeof p, 3, ins);
}
static gr_status gr__place_infer(const gr_node *node, gr_type *out) {
    const gr_var *r = gr__in(node)[0], *like = gr__in(node)[1], *off = gr__in(node)[2];
    if (r->ndim != like->ndim || r->ndim < 1 || off->ndim != 0 || off->dtype != GR_I64)
        return gr__error(node->graph, GR_ERR_TYPE, "%s: rows %s, like %s, offset %s", node->op->name, gr__d(r).s, gr__d(like).s, gr__d(off).s);
    gr_var_type(like, out);
    out->dtype = (gr_dtype)r->dtype;
    return GR_OK;
}
static gr_status gr__place_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    (void)node;
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[i] = in[1]->shape[i];
    return GR_OK;
}
/* rows t of `from` (rows n) go to or come from rows off + dir t + k of `at` (rows m); 0 when some row
   is out of range */
static int gr__place_rows_ok(const gr_node *node, int64_t off, int64_t n, int64_t m) {
    const gr__place_params *p = (const gr__place_params *)gr__params(node);
    int64_t first = off + p->k, last = off + (int64_t)p->dir * (n - 1) + p->k;
    return n == 0 || (first >= 0 && first < m && last >= 0 && last < m);
}
static gr_status gr__ScanPlace_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__place_params *p = (const gr__place_params *)gr__params(node);
    const gr_array *r = in[0];
    int64_t off = (int64_t)gr__load(GR_I64, in[2]->data, 0), row = r->shape[0] ? r->size / r->shape[0] : 0, t, e;
    gr_array *o = out[0];
    memset(o->data, 0, (size_t)o->size * gr__dsize(o->dtype));
    if (r->shape[0] && (!gr__place_rows_ok(node, off, r->shape[0], o->shape[0]) || row != (o->shape[0] ? o->size / o->shape[0] : 0)))
        return gr_node_error(node, GR_ERR_SHAPE, "rows of %s do not fit %s at offset %lld", gr__as(r).s, gr__as(o).s, (long long)off);
    for (t = 0; t < r->shape[0]; t++) {
        int64_t at = (off + (int64_t)p->dir * t + p->k) * row;
        for (e = 0; e < row; e++) gr__store(o->dtype, o->data, at + e, gr__load(o->dtype, o->data, at + e) + gr__load(r->dtype, r->data, t * row + e));
    }
    return GR_OK;
}
static gr_status gr__ScanGather_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr__place_params *p = (const gr__place_params *)gr__params(node);
    const gr_array *src = in[0];
    gr_array *o = out[0];
    int64_t off = (int64_t)gr__load(GR_I64, in[2]->data, 0), row = o->shape[0] ? o->size / o->shape[0] : 0, t;
    if (o->shape[0] && (!gr__place_rows_ok(node, off, o->shape[0], src->shape[0]) || row != (src->shape[0] ? src->size / src->shape[0] : 0)))
        return gr_node_error(node, GR_ERR_SHAPE, "rows of %s do not fit %s at offset %lld", gr__as(o).s, gr__as(src).s, (long long)off);
    for (t = 0; t < o->shape[0]; t++)
        memcpy((char *)o->data + (size_t)(t * row) * gr__dsize(o->dtype),
               (const char *)src->data + (size_t)((off + (int64_t)p->dir * t + p->k) * row) * gr__dsize(o->dtype), (size_t)row * gr__dsize(o->dtype));
    return GR_OK;
}
static gr_status gr__ScanPlace_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__place_params *p = (const gr__place_params *)gr__params(node);
    ig[0] = gr__place(&gr__op_ScanGather, og[0], gr__in(node)[0], gr__in(node)[2], p->dir, p->k);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    ig[2] = gr_disconnected_like(gr__in(node)[2]);
    return ig[0] && ig[1] && ig[2] ? GR_OK : node->graph->status;
}
static gr_status gr__ScanGather_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__place_params *p = (const gr__place_params *)gr__params(node);
    ig[0] = gr__place(&gr__op_ScanPlace, og[0], gr__in(node)[0], gr__in(node)[2], p->dir, p->k);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    ig[2] = gr_disconnected_like(gr__in(node)[2]);
    return ig[0] && ig[1] && ig[2] ? GR_OK : node->graph->status;
}
static gr_status gr__ScanPlace_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__place_params *p = (const gr__place_params *)gr__params(node);
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__place(&gr__op_ScanPlace, ev[0], gr__in(node)[1], gr__in(node)[2], p->dir, p->k);
    return orop[0] ? GR_OK : node->graph->status;
}
static gr_status gr__ScanGather_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__place_params *p = (const gr__place_params *)gr__params(node);
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__place(&gr__op_ScanGather, ev[0], gr__in(node)[1], gr__in(node)[2], p->dir, p->k);
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- the gradient: a loop backwards over the forward loop's steps ------------------------------------

   Forward step t computes y_j[t] = f_j(taps of the sequences and states at t, values). The
   backward loop runs t = L-1 .. 0 (its own steps t_b = L-1-t) and carries, for each output with a
   state of D_j = -min(taps) rows, the adjoints still pending for y_j[t], ..., y_j[t-D_j+1] (B_j: the
   state itself when D_j = 1, else a (D_j, *s) window), and for each value the sum of its
   gradient so far. At step t the output adjoints are a_j = G_j[t] + B_j[0]; the body's
   vector-Jacobian product (the forward body copied into the gradient's body, so that gradients of
   gradients are loops too) gives the gradients of the taps: a sequence tap's is a row of the
   sequence's gradient, a state tap k's is pending for y_j[t+k] (B_j moves one row and takes it), a
   value's is added to its sum. The states' history (initial rows, then every row computed) and the
   sequences are read backwards with offsets computed from the steps the forward loop ran. After
   the loop, B_j holds the adjoints of the initial rows; truncate_gradient = k runs the last k
   steps only (the initial values then get a zero gradient when more steps ran). */

typedef struct gr__bptt {
    const gr_node *node;                 /* the forward loop */
    const gr__scan_def *d;
    int n_g;                             /* gradient sequences (outputs with every row and a gradient) */
    int *g_of;                           /* per output: its gradient sequence, or -1 */
    int *b_of;                           /* per state: its B state among the backward loop's states, or -1 */
    int *acc_of;                         /* per value: its sum among the backward loop's states, or -1 */
    int n_b, n_acc, n_sg;                /* B states, sums, and sequence-tap gradient outputs */
    int *sg_of;                          /* per sequence: its first tap-gradient output, or -1 */
    gr_var **null_of;                    /* per forward node input: a null gradient met in the body */
    int n_hy;                            /* states whose history also gives y[t] (tap 0): their count, */
    int *hy;                             /* and per state that tap's place among the step's inputs, or -1 */
} gr__bptt;

static int gr__scan_float_seq(const gr__scan_def *d, const gr_node *node, int i) { return gr__is_float(gr__in(node)[gr__scan_i_seq(d) + i]->dtype); }
/* input i reaches an output whose gradient is not disconnected (the steps count aside) */
static int gr__scan_flows(const gr_node *node, gr_var *const *og, int i) {
    int j;
    for (j = 0; j + 1 < node->n_out; j++) if (!gr_is_disconnected(og[j]) && gr__connected(node, i, j)) return 1;
    return 0;
}

/* where forward body input b (a sequence's or a state's tap) is among the gradient step's inputs:
   after the outputs' gradients, in the same order, each state's history with its tap 0 after the
   forward taps when c->hy says so */
static int gr__bptt_at(const gr__bptt *c, int b) {
    const gr__scan_def *d = c->d;
    int s, at = c->n_g + b;
    for (s = 0; s < d->n_state; s++) if (c->hy[s] >= 0 && d->st_at[s] + d->st_ntaps[s] <= b) at++;
    return at;
}

/* the status of a failed construction on g: its error, or out of memory */
static gr_status gr__scan_failed(const gr_graph *g) { return g->status != GR_OK ? g->status : GR_ERR_NOMEM; }

/* where the gradient step's B states start among its inputs: after the outputs' gradients, the taps
   and the histories' tap 0; its values come after the B states and the sums */
static int gr__bptt_b_states(const gr__bptt *c) { return c->n_g + gr__scan_b_val(c->d) + c->n_hy; }
static int gr__bptt_b_vals(const gr__bptt *c) { return gr__bptt_b_states(c) + c->n_b + c->n_acc; }

/* One gradient step's work (gr__bptt_step): the forward body's outputs on the step's values (fo),
   their adjoints (ev), what the gradient is taken with respect to (wrt; wrt_of: per wrt, its forward
   body input, or -(1 + value)) and the gradients (gr). */
typedef struct gr__bptt_work {
    gr_var **map, **fo, **ev, **wrt, **gr;
    int *wrt_of;
    int n_wrt;
} gr__bptt_work;

/* the outputs' adjoints at this step: the gradient's row, and what later steps left pending */
static gr_status gr__bptt_adjoints(const gr__bptt *c, gr_graph *g, gr_var *const *in, gr__bptt_work *w) {
    const gr__scan_def *d = c->d;
    int j, s, b_states = gr__bptt_b_states(c);
    gr_var **fo = w->fo, **ev = w->ev;
    for (j = 0; j < d->n_out; j++) {
        gr_var *a = NULL;
        s = d->out_state[j];
        if (!gr__is_float(fo[j]->dtype)) { ev[j] = gr_zeros_like(fo[j]); if (!ev[j]) return gr__scan_failed(g); continue; }
        if (c->g_of[j] >= 0) a = in[c->g_of[j]];
        if (s >= 0 && c->b_of[s] >= 0) {
            gr_var *bj = in[b_states + c->b_of[s]];
            if (d->st_D[s] > 1) bj = gr_index(bj, 0, 0);
            a = a ? gr_add(a, bj) : bj;
        }
        ev[j] = a ? a : gr_zeros_like(fo[j]);
        if (ev[j] && ev[j]->dtype != fo[j]->dtype) ev[j] = gr_cast(ev[j], (gr_dtype)fo[j]->dtype);
        if (!ev[j]) return gr__scan_failed(g);
    }
    return GR_OK;
}

/* the gradients of the taps and values: with respect to the float sequences' taps, the float states'
   taps and the float values, of sum_j <a_j, y_j>; nodes made since n_fwd_nodes read the stored
   history instead of a recomputed output; a null gradient noted for the loop's input, zeros here */
static gr_status gr__bptt_grads(const gr__bptt *c, gr_graph *g, gr_var *const *in, gr__bptt_work *w, uint32_t n_fwd_nodes) {
    const gr__scan_def *d = c->d;
    int i, s, k, n_wrt = 0, wi, n_stap = gr__scan_b_state(d), b_vals = gr__bptt_b_vals(c);
    gr_var **fo = w->fo, **wrt = w->wrt, **gr = w->gr;
    int *wrt_of = w->wrt_of;
    uint32_t kk;
    gr_grad_opts lo;
    gr_status st;
    for (i = 0; i < d->n_seq; i++)
        if (c->sg_of[i] >= 0)
            for (k = 0; k < d->seq_ntaps[i]; k++) { wrt_of[n_wrt] = d->seq_at[i] + k; wrt[n_wrt++] = in[gr__bptt_at(c, d->seq_at[i] + k)]; }
    for (s = 0; s < d->n_state; s++)
        if (c->b_of[s] >= 0)
            for (k = 0; k < d->st_ntaps[s]; k++) { wrt_of[n_wrt] = d->st_at[s] + k; wrt[n_wrt++] = in[gr__bptt_at(c, d->st_at[s] + k)]; }
    for (i = 0; i < d->n_val; i++)
        if (c->acc_of[i] >= 0) { wrt_of[n_wrt] = -1 - i; wrt[n_wrt++] = in[b_vals + i]; }
    w->n_wrt = n_wrt;
    memset(&lo, 0, sizeof lo);
    lo.disconnected_inputs = GR_IGNORE;
    lo.return_disconnected = GR_RETURN_ZERO;
    lo.null_gradients = GR_NULL_RETURN;
    {   /* sum_j <a_j, y_j>: one cost, so that an output that is also an intermediate value of another
           gets both adjoints (gr_lop, as Aesara's known_grads, takes a given gradient as the whole one) */
        gr_var *cost = NULL;
        int j;
        for (j = 0; j < d->n_out; j++) {
            gr_var *term;
            if (!gr__is_float(fo[j]->dtype)) continue;
            term = gr_sum(gr_mul(fo[j], w->ev[j]));
            cost = cost ? gr_add(cost, term) : term;
            if (!cost) return gr__scan_failed(g);
        }
        if (!cost) cost = gr__scalar_const(g, GR_F64, 0, 0);
        if ((st = gr_grad(cost, n_wrt, wrt, gr, &lo)) != GR_OK) return st;
    }
    /* the forward values the gradient reads are the stored ones: a node made for the gradient that reads
       a recomputed output y_j[t] reads the history's row of it instead (the recomputation is then dead
       where the rules read outputs, not intermediates: tanh's gradient reads tanh's output) */
    for (kk = n_fwd_nodes; kk < g->n_nodes; kk++) {
        gr_node *node = g->nodes[kk];
        for (i = 0; i < node->n_in; i++)
            for (s = 0; s < d->n_state; s++)
                if (c->hy[s] >= 0 && gr__in(node)[i] == fo[d->st_out[s]]) gr__in(node)[i] = in[c->hy[s]];
    }
    for (wi = 0; wi < n_wrt; wi++)                /* a null gradient: noted for the loop's input, zeros here */
        if (gr_is_null(gr[wi]) || gr_is_disconnected(gr[wi])) {
            int b = wrt_of[wi], pos;
            if (gr_is_null(gr[wi])) {
                if (b < 0) pos = gr__scan_i_val(d) - 1 - b;
                else if (b < n_stap) { for (i = 0; i + 1 < d->n_seq && d->seq_at[i + 1] <= b; i++) {} pos = gr__scan_i_seq(d) + i; }
                else { for (s = 0; s + 1 < d->n_state && d->st_at[s + 1] <= b; s++) {} pos = gr__scan_i_init(d) + s; }
                if (!c->null_of[pos]) c->null_of[pos] = gr[wi];
            }
            if (!(gr[wi] = gr__zeros_grad(wrt[wi]))) return gr__scan_failed(g);
        }
    return GR_OK;
}

/* state s's B window moved one row: row k is pending for y[t-1-k], B[k+1] and the tap -(k+1)'s
   gradient; NULL when out of memory (recorded on g) */
static gr_var *gr__bptt_window(const gr__bptt *c, gr_graph *g, gr_var *const *in, const gr__bptt_work *w, int s) {
    const gr__scan_def *d = c->d;
    int D = d->st_D[s], k, wi;
    gr_var *rows_stack[8], **rows = rows_stack, *bj = in[gr__bptt_b_states(c) + c->b_of[s]], *y;
    if (D > 8 && !(rows = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)D))) {
        gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", d->name);
        return NULL;
    }
    for (k = 0; k < D; k++) {
        gr_var *r = D > 1 && k + 1 < D ? gr_index(bj, 0, k + 1) : NULL;
        for (wi = 0; wi < w->n_wrt; wi++)
            if (w->wrt_of[wi] >= d->st_at[s] && w->wrt_of[wi] < d->st_at[s] + d->st_ntaps[s] && d->taps[w->wrt_of[wi]] == -(k + 1))
                r = r ? gr_add(r, w->gr[wi]) : w->gr[wi];
        rows[k] = r ? r : D == 1 ? gr__zeros_grad(bj) : gr__zeros_grad(gr_index(bj, 0, k));
    }
    for (k = 0; k < D && rows[k]; k++) {}
    y = k < D ? NULL : D == 1 ? rows[0] : gr_stack(D, rows, 0);
    if (rows != rows_stack) GR_FREE(rows);
    if (y && y->dtype != bj->dtype) y = gr_cast(y, (gr_dtype)bj->dtype);
    return y;
}

/* the step's outputs: the sequences' tap gradients, the moved B windows, the sums */
static gr_status gr__bptt_outputs(const gr__bptt *c, gr_graph *g, gr_var *const *in, gr_var **out, const gr__bptt_work *w) {
    const gr__scan_def *d = c->d;
    int i, s, wi, q = 0, n_stap = gr__scan_b_state(d);
    for (wi = 0; wi < w->n_wrt && w->wrt_of[wi] >= 0 && w->wrt_of[wi] < n_stap; wi++) out[q++] = w->gr[wi];
    for (s = 0; s < d->n_state; s++) {
        if (c->b_of[s] < 0) continue;
        if (!(out[q++] = gr__bptt_window(c, g, in, w, s))) return gr__scan_failed(g);
    }
    for (i = 0; i < d->n_val; i++) {
        gr_var *acc;
        if (c->acc_of[i] < 0) continue;
        acc = in[gr__bptt_b_states(c) + c->n_b + c->acc_of[i]];
        for (wi = 0; wi < w->n_wrt && w->wrt_of[wi] != -1 - i; wi++) {}
        out[q] = gr_add(acc, w->gr[wi]);
        if (out[q] && out[q]->dtype != acc->dtype) out[q] = gr_cast(out[q], (gr_dtype)acc->dtype);
        if (!out[q++]) return gr__scan_failed(g);
    }
    return GR_OK;
}

/* the gradient loop's step: the forward body on the step's values, the outputs' adjoints, the
   body's vector-Jacobian product, the step's outputs */
static gr_status gr__bptt_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    gr__bptt *c = (gr__bptt *)user;
    const gr__scan_def *d = c->d;
    int i, b_vals = gr__bptt_b_vals(c);
    uint32_t n_fwd_nodes;
    gr__bptt_work w;
    gr_status st;
    (void)until;
    memset(&w, 0, sizeof w);
    w.map = (gr_var **)gr__calloc((size_t)d->ig->n_vars + 1, sizeof(gr_var *));
    w.fo = (gr_var **)gr__calloc((size_t)d->n_out + 1, sizeof(gr_var *));
    w.ev = (gr_var **)gr__calloc((size_t)d->n_out + 1, sizeof(gr_var *));
    w.wrt = (gr_var **)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_var *));
    w.gr = (gr_var **)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_var *));
    w.wrt_of = (int *)gr__calloc((size_t)d->n_bin + 1, sizeof(int));
    if (!w.map || !w.fo || !w.ev || !w.wrt || !w.gr || !w.wrt_of) {
        st = gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", d->name);
        goto done;
    }
    /* the forward body, on the backward step's values of its inputs */
    for (i = 0; i < d->n_bin; i++)
        w.map[d->bin[i]->id] = i < gr__scan_b_val(d) ? in[gr__bptt_at(c, i)] : in[b_vals + i - gr__scan_b_val(d)];
    if ((st = gr__scan_clone(d, g, w.map, w.fo)) != GR_OK) goto done;
    n_fwd_nodes = g->n_nodes;
    if ((st = gr__bptt_adjoints(c, g, in, &w)) != GR_OK || (st = gr__bptt_grads(c, g, in, &w, n_fwd_nodes)) != GR_OK) goto done;
    st = gr__bptt_outputs(c, g, in, out, &w);
done:
    GR_FREE(w.map); GR_FREE(w.fo); GR_FREE(w.ev); GR_FREE(w.wrt); GR_FREE(w.gr); GR_FREE(w.wrt_of);
    return st;
}

/* a copy of d (its body copied too) whose outputs keep every row: the history a gradient needs of a
   loop whose states keep only their final value */
enum { GR__SCOPY_LAST = 1, GR__SCOPY_REPLAY = 2, GR__SCOPY_NSTEPS = 4 };
static gr__scan_def *gr__scan_def_copy(const gr__scan_def *d, gr_graph *g, unsigned how);
static gr__scan_def *gr__scan_def_all_rows(const gr__scan_def *d, gr_graph *g) { return gr__scan_def_copy(d, g, GR__SCOPY_REPLAY); }

/* a copy of d, its body copied too. how: LAST, its outputs keep only their final value where d's do
   (else every row); REPLAY, a checkpointed gradient's loop stays one (else its replayed sequences
   become ordinary sequences, which the caller gives whole); NSTEPS, the steps are an input (input 0) */
static gr__scan_def *gr__scan_def_copy(const gr__scan_def *d, gr_graph *g, unsigned how) {
    gr__scan_def *c = (gr__scan_def *)gr__calloc(1, sizeof(gr__scan_def));
    gr_var **map = NULL;
    size_t n_taps = (size_t)d->n_bin - (size_t)d->n_val;
    int i;
    if (!c) { gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", d->name); return NULL; }
    *c = *d;
    c->head.refs = 1;
    c->head.conn = NULL;
    c->head.name = c->name;
    c->seq_replay = NULL;
    c->replay = NULL;
    if (how & GR__SCOPY_NSTEPS) c->has_n_steps = 1;
    if (d->replay && (how & GR__SCOPY_REPLAY)) {
        if (!(c->seq_replay = (int *)gr__calloc((size_t)d->n_seq + 1, sizeof(int)))) {
            GR_FREE(c);
            gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", d->name);
            return NULL;
        }
        memcpy(c->seq_replay, d->seq_replay, sizeof(int) * (size_t)d->n_seq);
        c->replay = d->replay;
        c->replay->head.refs++;
    }
    c->ig = gr_graph_new();
    c->bin = (gr_var **)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_var *));
    c->bout = (gr_var **)gr__calloc((size_t)d->n_bout + 1, sizeof(gr_var *));
    c->seq_ntaps = (int *)gr__calloc(6u * (size_t)d->n_seq + 1, sizeof(int));
    c->out_state = (int *)gr__calloc((size_t)d->n_out + 1, sizeof(int));
    c->st_out = (int *)gr__calloc(4u * (size_t)d->n_state + 1, sizeof(int));
    c->out_last = (unsigned char *)gr__calloc((size_t)d->n_out + 1, 1);
    c->taps = (int *)gr__calloc(n_taps + 1, sizeof(int));
    map = (gr_var **)gr__calloc((size_t)d->ig->n_vars + 1, sizeof(gr_var *));
    if (!c->ig || !c->bin || !c->bout || !c->seq_ntaps || !c->out_state || !c->st_out || !c->out_last || !c->taps || !map) goto fail;
    memcpy(c->seq_ntaps, d->seq_ntaps, sizeof(int) * 6u * (size_t)d->n_seq);
    c->seq_at = c->seq_ntaps + d->n_seq; c->seq_dir = c->seq_at + d->n_seq; c->seq_off = c->seq_dir + d->n_seq;
    c->seq_m = c->seq_off + d->n_seq; c->seq_M = c->seq_m + d->n_seq;
    memcpy(c->out_state, d->out_state, sizeof(int) * (size_t)d->n_out);
    memcpy(c->st_out, d->st_out, sizeof(int) * 4u * (size_t)d->n_state);
    c->st_ntaps = c->st_out + d->n_state; c->st_at = c->st_ntaps + d->n_state; c->st_D = c->st_at + d->n_state;
    memcpy(c->taps, d->taps, sizeof(int) * n_taps);
    if (how & GR__SCOPY_LAST) memcpy(c->out_last, d->out_last, (size_t)d->n_out);
    for (i = 0; i < d->n_bin; i++)
        if (!(c->bin[i] = map[d->bin[i]->id] = gr__new_var(c->ig, d->bin[i]->dtype, d->bin[i]->ndim, gr__vshape(d->bin[i]), GR__VK_INPUT))) goto fail;
    if (gr__scan_clone(d, c->ig, map, c->bout) != GR_OK) goto fail;
    if (gr__scan_pattern(c) != GR_OK) goto fail;
    GR_FREE(map);
    return c;
fail:
    GR_FREE(map);
    gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", d->name);
    gr__scan_destroy(&c->head);
    return NULL;
}

/* the forward loop's rows of every output with a state: the node itself, or a rerun keeping them */
static const gr_node *gr__scan_history(const gr_node *node) {
    const gr__scan_def *d = gr__sdef(node);
    gr__scan_def *c;
    gr__scan_params prm;
    gr_var *outs_stack[16], **outs = outs_stack;
    const gr_node *h = NULL;
    int j;
    for (j = 0; j < d->n_out && !(d->out_last[j] && d->out_state[j] >= 0); j++) {}
    if (j == d->n_out) return node;
    if (!(c = gr__scan_def_all_rows(d, node->graph))) return NULL;
    if (d->n_out + 1 > 16 && !(outs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(d->n_out + 1)))) {
        gr__scan_destroy(&c->head);
        gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", d->name);
        return NULL;
    }
    memset(&prm, 0, sizeof prm);
    prm.def = c;
    if (gr__make_node_n(node->graph, &gr__op_Scan, &prm, sizeof prm, node->n_in, gr__in(node), node->n_out, outs) == GR_OK) h = gr__owner(outs[0]);
    if (--c->head.refs == 0) gr__scan_destroy(&c->head);
    if (outs != outs_stack) GR_FREE(outs);
    return h;
}

/* the forward offset of sequence i (row off + dir t + k - m), as a graph value */
static gr_var *gr__scan_seq_offset(const gr_node *node, int i) {
    const gr__scan_def *d = gr__sdef(node);
    gr_graph *g = node->graph;
    gr_var *x = gr__in(node)[gr__scan_i_seq(d) + i];
    if (d->seq_off[i] >= 0) return gr__in(node)[gr__scan_i_off(d) + d->seq_off[i]];
    if (d->seq_dir[i] > 0) return gr__scalar_const(g, GR_I64, 0, 0);
    return gr_sub(gr__rows(x), gr__scalar_const(g, GR_I64, (double)(d->seq_M[i] - d->seq_m[i] + 1), 0));
}

/* y when og, the gradient of a loop's output, is zeros but at the last row, where it is y (the
   gradient of gr_index(r, 0, -1)); else NULL. The loop then takes y as the final value's gradient
   instead of reading rows of zeros at every step. */
static gr_var *gr__scan_last_row_grad(gr_var *og) {
    const gr_node *u = og ? gr__owner(og) : NULL;
    const gr__view_params *vp;
    if (!u || u->op != &gr__op_ViewUpdate) return NULL;
    vp = (const gr__view_params *)gr__params(u);
    return vp->is_index && vp->axis == 0 && vp->start == -1 && gr__is_zero(gr__in(u)[0]) == 1 ? gr__in(u)[1] : NULL;
}

/* The forward loop a checkpointed gradient's loop replays, as a node of its graph keeping every row:
   its inputs are the gradient loop's (the forward sequences, initial values and values), its steps
   one more than the replay's first step (the offset at which the loop reads the histories). */
static gr_status gr__scan_replay_node(const gr_node *node, gr_var *lm1, gr_var **fout) {
    const gr__scan_def *d = gr__sdef(node), *fd = d->replay;
    gr_graph *g = node->graph;
    gr__scan_def *fc = gr__scan_def_copy(fd, g, GR__SCOPY_NSTEPS);
    gr__scan_params prm;
    gr_var **fin = NULL;
    gr_status st = GR_ERR_NOMEM;
    int i;
    if (!fc) return g->status != GR_OK ? g->status : GR_ERR_NOMEM;
    if (!(fin = (gr_var **)gr__calloc((size_t)gr__scan_n_in(fc) + 1, sizeof(gr_var *)))) goto done;
    fin[0] = gr_add(lm1, gr__scalar_const(g, GR_I64, 1, 0));
    for (i = 0; i < fd->n_seq; i++) {
        int gs = d->replay_seq0 + i;
        fin[gr__scan_i_seq(fc) + i] = gr__in(node)[gr__scan_i_seq(d) + gs];
        if (fd->seq_off[i] >= 0) {         /* the gradient loop reads it backwards from o -+ lm1 */
            gr_var *o = gr__scan_seq_offset(node, gs);
            fin[gr__scan_i_off(fc) + fd->seq_off[i]] = d->seq_dir[gs] > 0 ? gr_add(o, lm1) : gr_sub(o, lm1);
        }
    }
    for (i = 0; i < fd->n_state; i++) fin[gr__scan_i_init(fc) + i] = gr__in(node)[gr__scan_i_val(d) + d->replay_init0 + i];
    for (i = 0; i < fd->n_val; i++) fin[gr__scan_i_val(fc) + i] = gr__in(node)[gr__scan_i_val(d) + i];
    for (i = 0; i < gr__scan_n_in(fc); i++)
        if (!fin[i]) { st = g->status != GR_OK ? g->status : GR_ERR_NOMEM; goto done; }
    memset(&prm, 0, sizeof prm);
    prm.def = fc;
    st = gr__make_node_n(g, &gr__op_Scan, &prm, sizeof prm, gr__scan_n_in(fc), fin, fd->n_out + 1, fout);
done:
    if (--fc->head.refs == 0) gr__scan_destroy(&fc->head);
    GR_FREE(fin);
    return st != GR_OK && st != GR_ERR_NOMEM ? st : st == GR_OK ? GR_OK : gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", d->name);
}

/* a + b for two gradients of one input, either of them disconnected (absent) or null (kept) */
static gr_var *gr__scan_gsum(gr_var *a, gr_var *b) {
    if (!a || !b) return NULL;
    if (gr_is_disconnected(b) || gr_is_null(a)) return a;
    if (gr_is_disconnected(a) || gr_is_null(b)) return b;
    return gr_add(a, b);
}

/* The gradient of a checkpointed gradient's loop (a second derivative through checkpoints): the same
   loop U, reading the forward states' histories as ordinary sequences recomputed by F, the replayed
   forward loop keeping every row. The node's partial derivatives are U's, with a history's rows
   split between the initial rows (the node's input) and F's rows, whose gradient F's rule carries
   to the node's forward sequences, initial values and values. This derivative stores the
   histories: it is not checkpointed itself. */
static gr_status gr__scan_grad_replayed(const gr_node *node, gr_var *const *og, gr_var **ig) {
    const gr__scan_def *d = gr__sdef(node), *fd = d->replay;
    gr_graph *g = node->graph;
    gr__scan_def *uc = NULL;
    gr__scan_params prm;
    int nf_in = gr__scan_n_in(fd) + 1, i, a, first;
    size_t n = (size_t)fd->n_out + 1 + 3u * (size_t)node->n_in + (size_t)node->n_out + 2u * (size_t)nf_in + 2;
    gr_var **buf, **fout, **uin, **uout, **igu, **ogf, **igf, *lm1 = NULL;
    const gr_node *fnode = NULL;
    gr_status st = GR_ERR_NOMEM;
    if (!(buf = (gr_var **)gr__calloc(n, sizeof(gr_var *)))) return gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", d->name);
    fout = buf; uin = fout + fd->n_out + 1; igu = uin + node->n_in; uout = igu + node->n_in;
    ogf = uout + node->n_out; igf = ogf + fd->n_out + 1;
    for (first = 0; first < d->n_seq && d->seq_replay[first] < 0; first++) {}
    if (first == d->n_seq) { GR_FREE(buf); return gr__scan_grad_some(node, og, ig, NULL); }
    if (!(lm1 = gr__scan_seq_offset(node, first))) goto failed;
    if ((st = gr__scan_replay_node(node, lm1, fout)) != GR_OK) goto done;
    fnode = gr__owner(fout[0]);
    for (i = 0; i < node->n_in; i++) uin[i] = gr__in(node)[i];
    for (i = 0; i < d->n_seq; i++) {       /* the history: the initial rows (the input), then every step's */
        gr_var *both[2];
        if (d->seq_replay[i] < 0) continue;
        both[0] = gr__in(node)[gr__scan_i_seq(d) + i];
        both[1] = fout[fd->st_out[d->seq_replay[i]]];
        if (!(uin[gr__scan_i_seq(d) + i] = gr_concatenate(2, both, 0))) goto failed;
    }
    if (!(uc = gr__scan_def_copy(d, g, GR__SCOPY_LAST))) goto failed;
    memset(&prm, 0, sizeof prm);
    prm.def = uc;
    if ((st = gr__make_node_n(g, &gr__op_Scan, &prm, sizeof prm, node->n_in, uin, node->n_out, uout)) != GR_OK) goto done;
    if ((st = gr__scan_grad_some(gr__owner(uout[0]), og, igu, NULL)) != GR_OK) goto done;
    for (i = 0; i < node->n_in; i++) ig[i] = igu[i];
    for (a = 0; a <= fd->n_out; a++) if (!(ogf[a] = gr_disconnected_like(fout[a]))) goto failed;
    for (i = 0; i < d->n_seq; i++) {       /* a history's gradient: its initial rows, then F's rows */
        int at = gr__scan_i_seq(d) + i, s = d->seq_replay[i];
        int64_t D;
        gr_var *gh = igu[at];
        if (s < 0 || gr_is_disconnected(gh)) continue;
        if (gr_is_null(gh)) { ogf[fd->st_out[s]] = gh; continue; }
        D = fd->st_D[s];                   /* the initial rows (a plain state's one) */
        ig[at] = gr_slice(gh, 0, 0, D, 1);
        ogf[fd->st_out[s]] = gr_slice(gh, 0, D, INT64_MAX, 1);
        if (!ig[at] || !ogf[fd->st_out[s]]) goto failed;
    }
    if ((st = gr__scan_grad_some(fnode, ogf, igf, NULL)) != GR_OK) goto done;
    for (a = gr__scan_i_seq(fd) + 1; a < nf_in; a++) {   /* (F has an n_steps input: fd's inputs are one on) */
        int fi = a - 1, at;
        if (fi < gr__scan_i_init(fd)) at = gr__scan_i_seq(d) + d->replay_seq0 + (fi - gr__scan_i_seq(fd));
        else if (fi < gr__scan_i_val(fd)) at = gr__scan_i_val(d) + d->replay_init0 + (fi - gr__scan_i_init(fd));
        else at = gr__scan_i_val(d) + (fi - gr__scan_i_val(fd));
        if (!(ig[at] = gr__scan_gsum(ig[at], igf[a]))) goto failed;
    }
    st = GR_OK;
    goto done;
failed:
    st = g->status != GR_OK ? g->status : gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", d->name);
done:
    if (uc && --uc->head.refs == 0) gr__scan_destroy(&uc->head);
    GR_FREE(buf);
    return st;
}

/* a loop's gradient: a checkpointed gradient's loop is differentiated as its unreplayed equal */
static gr_status gr__scan_grad_any(const gr_node *node, gr_var *const *og, gr_var **ig, const uint8_t *skip) {
    return gr__sdef(node)->replay ? gr__scan_grad_replayed(node, og, ig) : gr__scan_grad_some(node, og, ig, skip);
}
static gr_status gr__Scan_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { return gr__scan_grad_any(node, og, ig, NULL); }

/* The arrays of a derived loop's spec (a gradient's or an R-op's loop, made by gr__scan_make): its
   sequences (offsets, taps, directions), its outputs (initial values, taps, which keep their final
   value only), the values it reads, its results. */
typedef struct gr__loop_spec {
    gr_var **seq, **off, **init, **vals, **res;
    int *ntaps, *dir, *ontaps;
    const int **taps, **otaps;
    unsigned char *last;
} gr__loop_spec;

/* room in b for n_seq sequences, n_out outputs and n_val values; 0 when out of memory */
static int gr__loop_spec_alloc(gr__loop_spec *b, int n_seq, int n_out, int n_val) {
    memset(b, 0, sizeof *b);
    b->seq = (gr_var **)gr__calloc((size_t)n_seq + 1, sizeof(gr_var *));
    b->off = (gr_var **)gr__calloc((size_t)n_seq + 1, sizeof(gr_var *));
    b->ntaps = (int *)gr__calloc(2u * (size_t)n_seq + 1, sizeof(int));
    b->taps = (const int **)gr__calloc((size_t)n_seq + 1, sizeof(int *));
    b->init = (gr_var **)gr__calloc((size_t)n_out + 1, sizeof(gr_var *));
    b->ontaps = (int *)gr__calloc((size_t)n_out + 1, sizeof(int));
    b->otaps = (const int **)gr__calloc((size_t)n_out + 1, sizeof(int *));
    b->last = (unsigned char *)gr__calloc((size_t)n_out + 1, 1);
    b->vals = (gr_var **)gr__calloc((size_t)n_val + 1, sizeof(gr_var *));
    b->res = (gr_var **)gr__calloc((size_t)n_out + 2, sizeof(gr_var *));
    if (!b->seq || !b->off || !b->ntaps || !b->taps || !b->init || !b->ontaps || !b->otaps || !b->last || !b->vals || !b->res) return 0;
    b->dir = b->ntaps + n_seq;
    return 1;
}
static void gr__loop_spec_free(gr__loop_spec *b) {
    GR_FREE(b->seq); GR_FREE(b->off); GR_FREE(b->ntaps); GR_FREE(b->taps); GR_FREE(b->init); GR_FREE(b->ontaps); GR_FREE(b->otaps);
    GR_FREE(b->last); GR_FREE(b->vals); GR_FREE(b->res);
}
/* sp: the loop of b's first n_seq sequences, n_out outputs and n_val values (the rest zero) */
static void gr__loop_spec_fill(gr__scan_spec *sp, const gr__loop_spec *b, int n_seq, int n_out, int n_val) {
    memset(sp, 0, sizeof *sp);
    sp->n_seq = n_seq; sp->seq = b->seq; sp->seq_ntaps = b->ntaps; sp->seq_taps = b->taps; sp->seq_dir = b->dir; sp->seq_off = b->off;
    sp->n_out = n_out; sp->init = b->init; sp->out_ntaps = b->ontaps; sp->out_taps = b->otaps; sp->out_last = b->last;
    sp->n_val = n_val; sp->val = b->vals;
}

/* What gr__scan_grad_some works on: the forward node, the gradient step's context (c), the backward
   loop's spec (b: n_bseq sequences, n_bout outputs), the forward loop's rows (hist), its steps L and
   L - 1; whether the states are recomputed (ckpt; replayed: per backward sequence, the forward state
   whose history it is, or -1); the histories' taps with tap 0 after them (htaps). */
typedef struct gr__bptt_build {
    const gr_node *node;
    gr__bptt c;
    gr__loop_spec b;
    const gr_node *hist;
    gr_var *L, *Lm1;
    int n_bseq, n_bout, ckpt;
    int *replayed, *htaps;
} gr__bptt_build;

static gr_status gr__bptt_nomem(const gr__bptt_build *bb) {
    return gr__error(bb->node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory (gradient)", bb->c.d->name);
}

/* the backward loop's first sequences: the outputs' gradients (read backwards), then the forward
   sequences (read backwards from the forward loop's last step) */
static gr_status gr__bptt_sequences(gr__bptt_build *bb, gr_var *const *og) {
    const gr_node *node = bb->node;
    const gr__scan_def *d = bb->c.d;
    gr__loop_spec *b = &bb->b;
    int i, j, n = 0;
    for (j = 0; j < d->n_out; j++) {
        bb->c.g_of[j] = -1;
        if (d->out_last[j] || gr_is_disconnected(og[j]) || gr_is_null(og[j]) || !gr__is_float(og[j]->dtype)) continue;
        if (d->out_state[j] >= 0 && gr__scan_last_row_grad(og[j])) continue;     /* seeds its state instead */
        bb->c.g_of[j] = n;
        b->seq[n] = og[j]; b->off[n] = bb->Lm1; b->dir[n] = -1; b->ntaps[n] = 0; b->taps[n] = NULL;
        n++;
    }
    bb->c.n_g = n;
    for (i = 0; i < d->n_seq; i++) {
        gr_var *o = gr__scan_seq_offset(node, i);
        b->seq[n] = gr__in(node)[gr__scan_i_seq(d) + i];
        b->off[n] = d->seq_dir[i] > 0 ? gr_add(o, bb->Lm1) : gr_sub(o, bb->Lm1);
        if (!o || !b->off[n]) return gr__scan_failed(node->graph);
        b->dir[n] = -d->seq_dir[i];
        b->ntaps[n] = d->seq_ntaps[i];
        b->taps[n] = d->taps + d->seq_at[i];
        n++;
    }
    bb->n_bseq = n;
    return GR_OK;
}

/* the backward loop's last sequences: each state's history (the initial rows the taps read, then every
   row; recomputed by the loop when checkpointed), read with the state's taps and, stored, tap 0 too */
static gr_status gr__bptt_histories(gr__bptt_build *bb) {
    const gr_node *node = bb->node;
    const gr__scan_def *d = bb->c.d;
    gr__loop_spec *b = &bb->b;
    gr__bptt *c = &bb->c;
    int i, s, hy_at, n = bb->n_bseq;
    c->hy = (int *)gr__calloc((size_t)d->n_state + 1, sizeof(int));
    bb->htaps = (int *)gr__calloc((size_t)(gr__scan_b_val(d) - gr__scan_b_state(d) + d->n_state) + 1, sizeof(int));
    if (!c->hy || !bb->htaps) return gr__bptt_nomem(bb);
    for (i = 0, hy_at = 0; i < n; i++) hy_at += b->ntaps[i] ? b->ntaps[i] : 1;   /* where the histories' taps start */
    if (bb->ckpt && !(bb->replayed = (int *)gr__calloc((size_t)(d->n_out + d->n_seq + d->n_state) + 1, sizeof(int)))) return gr__bptt_nomem(bb);
    for (i = 0; bb->ckpt && i < n; i++) bb->replayed[i] = -1;
    for (s = 0; s < d->n_state; s++) {     /* history: the initial rows the taps read, then every row */
        gr_var *x0 = gr__in(node)[gr__scan_i_init(d) + s], *rows0, *both[2];
        int sit = d->st_ntaps[s] == 1 && d->taps[d->st_at[s]] == -1;
        rows0 = sit ? gr_stack(1, &x0, 0) : gr_slice(x0, 0, 0, d->st_D[s], 1);
        if (bb->ckpt) {                       /* recomputed by the gradient's loop: rows0 only gives the type */
            bb->replayed[n] = s;
            b->seq[n] = rows0;
        } else {
            both[0] = rows0;
            both[1] = gr__out(bb->hist)[d->st_out[s]];
            b->seq[n] = gr_concatenate(2, both, 0);
        }
        if (!b->seq[n]) return gr__scan_failed(node->graph);
        b->off[n] = bb->Lm1; b->dir[n] = -1;
        b->ntaps[n] = d->st_ntaps[s];
        b->taps[n] = d->taps + d->st_at[s];
        c->hy[s] = -1;
        if (!bb->ckpt) {                      /* and y[t] itself (tap 0): what the gradient reads of the output */
            int *ht = bb->htaps + d->st_at[s] - gr__scan_b_state(d) + s;
            memcpy(ht, d->taps + d->st_at[s], sizeof(int) * (size_t)d->st_ntaps[s]);
            ht[d->st_ntaps[s]] = 0;
            b->taps[n] = ht;
            b->ntaps[n] = d->st_ntaps[s] + 1;
            c->hy[s] = hy_at + d->st_ntaps[s];
            c->n_hy++;
        }
        hy_at += b->ntaps[n];
        n++;
    }
    bb->n_bseq = n;
    return GR_OK;
}

/* the backward loop's states: the pending adjoints of the float states (seeded by the final value's
   gradient), the sums of the float values; then its outputs: the float sequences' tap gradients
   (every row), then the states (final values) */
static gr_status gr__bptt_states(gr__bptt_build *bb, gr_var *const *og, const uint8_t *skip) {
    const gr_node *node = bb->node;
    const gr__scan_def *d = bb->c.d;
    gr__loop_spec *b = &bb->b;
    gr__bptt *c = &bb->c;
    int i, s, k, pos = 0, q = 0;
    for (s = 0; s < d->n_state; s++) {
        gr_var *x0 = gr__in(node)[gr__scan_i_init(d) + s], *z;
        int jo = d->st_out[s], sit = d->st_ntaps[s] == 1 && d->taps[d->st_at[s]] == -1;
        c->b_of[s] = -1;
        if (!gr__is_float(x0->dtype)) continue;
        c->b_of[s] = c->n_b++;
        z = d->st_D[s] == 1 ? (sit ? gr__zeros_grad(x0) : gr__zeros_grad(gr_index(x0, 0, 0))) : gr__zeros_grad(gr_slice(x0, 0, 0, d->st_D[s], 1));
        if (z && !gr_is_disconnected(og[jo]) && !gr_is_null(og[jo]) && (d->out_last[jo] || gr__scan_last_row_grad(og[jo]))) {
            gr_var *y = d->out_last[jo] ? og[jo] : gr__scan_last_row_grad(og[jo]);   /* the final value's gradient */
            z = d->st_D[s] == 1 ? gr_cast(y, (gr_dtype)z->dtype) : gr_set_subtensor(gr_index(z, 0, 0), y);
        }
        if (!z) return gr__scan_failed(node->graph);
        b->init[pos++] = z;
    }
    for (s = 0; bb->ckpt && s < d->n_state; s++) b->vals[d->n_val + s] = gr__in(node)[gr__scan_i_init(d) + s];   /* the replay's */
    for (i = 0; i < d->n_val; i++) {
        gr_var *v = gr__in(node)[gr__scan_i_val(d) + i];
        b->vals[i] = v;
        c->acc_of[i] = -1;
        if (!gr__is_float(v->dtype) || !gr__scan_flows(node, og, gr__scan_i_val(d) + i) || (skip && skip[gr__scan_i_val(d) + i])) continue;
        c->acc_of[i] = c->n_acc++;
        if (!(b->init[pos++] = gr__zeros_grad(v))) return gr__scan_failed(node->graph);
    }
    for (i = 0; i < d->n_seq; i++) {
        c->sg_of[i] = -1;
        if (!gr__scan_float_seq(d, node, i) || (skip && skip[gr__scan_i_seq(d) + i])) continue;
        c->sg_of[i] = q;
        q += d->seq_ntaps[i];
    }
    c->n_sg = q;
    /* the spec's outputs: [tap gradients (no state)] [states] */
    memmove(b->init + q, b->init, sizeof(gr_var *) * (size_t)pos);
    for (k = 0; k < q; k++) b->init[k] = NULL;
    for (k = 0; k < q + pos; k++) { b->ontaps[k] = 0; b->otaps[k] = NULL; b->last[k] = k >= q; }
    bb->n_bout = q + pos;
    return GR_OK;
}

/* the gradients of the loop's inputs: disconnected, zeros (not float, or not asked for), null, or from
   the backward loop's results: a sequence's every tap's rows placed where the loop read them, an
   initial's the adjoints pending after step 0, a value's its sum */
static gr_status gr__bptt_input_grads(gr__bptt_build *bb, gr_var *const *og, const uint8_t *skip, gr_var **ig) {
    const gr_node *node = bb->node;
    const gr__scan_def *d = bb->c.d;
    const gr__bptt *c = &bb->c;
    gr_graph *g = node->graph;
    gr_var **bres = bb->b.res;
    int i, s, k, r;
    for (i = 0; i < node->n_in; i++) {
        gr_var *x = gr__in(node)[i];
        if (i < gr__scan_i_seq(d) || !gr__scan_flows(node, og, i)) ig[i] = gr_disconnected_like(x);
        else if (!gr__is_float(x->dtype) || (skip && skip[i])) ig[i] = gr__zeros_grad(x);   /* (not asked for) */
        else if (c->null_of[i]) ig[i] = gr__null_var(g, x, (gr_status)c->null_of[i]->aux, gr__null_reason(c->null_of[i]));
        if (!ig[i] && (i < gr__scan_i_seq(d) || !gr__scan_flows(node, og, i) || !gr__is_float(x->dtype) || (skip && skip[i]) || c->null_of[i]))
            return gr__scan_failed(g);
    }
    for (i = 0; i < d->n_seq; i++) {       /* a sequence's: every tap's rows, where the backward loop read them */
        int at = gr__scan_i_seq(d) + i;
        gr_var *sum = NULL;
        if (ig[at] || c->sg_of[i] < 0) continue;
        for (k = 0; k < d->seq_ntaps[i]; k++) {
            gr_var *p = gr__place(&gr__op_ScanPlace, bres[c->sg_of[i] + k], gr__in(node)[at], bb->b.off[c->n_g + i], -d->seq_dir[i],
                                  d->taps[d->seq_at[i] + k] - d->seq_m[i]);
            sum = sum && p ? gr_add(sum, p) : p;
            if (!sum) return gr__scan_failed(g);
        }
        ig[at] = sum;
    }
    for (s = 0, r = c->n_sg; s < d->n_state; s++) {   /* an initial's: the adjoints pending after step 0 */
        int at = gr__scan_i_init(d) + s, sit = d->st_ntaps[s] == 1 && d->taps[d->st_at[s]] == -1;
        gr_var *bf, *x0 = gr__in(node)[at];
        if (c->b_of[s] < 0) continue;
        bf = bres[r + c->b_of[s]];
        if (ig[at]) continue;
        if (!sit) {                          /* row d of the window is initial row D-1-d; rows past D get 0 */
            if (d->st_D[s] == 1) bf = gr_stack(1, &bf, 0);
            else bf = gr_slice(bf, 0, GR_OPEN, GR_OPEN, -1);
            bf = gr__place(&gr__op_ScanPlace, bf, x0, gr__scalar_const(g, GR_I64, 0, 0), 1, 0);
        }
        if (bf && d->truncate > 0)           /* outside the window when more steps ran */
            bf = gr_where(gr_gt(bb->L, gr__scalar_const(g, GR_I64, (double)d->truncate, 0)), gr_zeros_like(bf), bf);
        if (!(ig[at] = bf)) return gr__scan_failed(g);
    }
    for (i = 0, r = c->n_sg + c->n_b; i < d->n_val; i++) {
        int at = gr__scan_i_val(d) + i;
        if (ig[at]) continue;
        if (c->acc_of[i] < 0) { if (!(ig[at] = gr__zeros_grad(gr__in(node)[at]))) return gr__scan_failed(g); continue; }
        ig[at] = bres[r + c->acc_of[i]];
        if (!ig[at]) return gr__scan_failed(g);
    }
    return GR_OK;
}

/* skip (NULL: none): inputs whose terms are not needed get zeros, and the loop computes nothing for them */
static gr_status gr__scan_grad_some(const gr_node *node, gr_var *const *og, gr_var **ig, const uint8_t *skip) {
    const gr__scan_def *d = gr__sdef(node);
    gr_graph *g = node->graph;
    gr__bptt_build bb;
    gr__bptt *c = &bb.c;
    gr__scan_spec sp;
    int i;
    char name[80];
    gr_status st;
    memset(&bb, 0, sizeof bb);
    for (i = 0; i < node->n_in; i++) ig[i] = NULL;
    bb.node = node;
    c->node = node;
    c->d = d;
    bb.hist = d->checkpoints > 0 ? node : gr__scan_history(node);   /* (a checkpointed gradient recomputes the states) */
    if (!bb.hist) return g->status != GR_OK ? g->status : gr__bptt_nomem(&bb);
    bb.L = gr__out(node)[d->n_out];
    bb.Lm1 = gr_sub(bb.L, gr__scalar_const(g, GR_I64, 1, 0));
    if (!bb.Lm1) return g->status != GR_OK ? g->status : gr__bptt_nomem(&bb);
    c->g_of = (int *)gr__calloc((size_t)d->n_out + 1, sizeof(int));
    c->b_of = (int *)gr__calloc((size_t)d->n_state + 1, sizeof(int));
    c->acc_of = (int *)gr__calloc((size_t)d->n_val + 1, sizeof(int));
    c->sg_of = (int *)gr__calloc((size_t)d->n_seq + 1, sizeof(int));
    c->null_of = (gr_var **)gr__calloc((size_t)node->n_in + 1, sizeof(gr_var *));
    if (!gr__loop_spec_alloc(&bb.b, d->n_out + d->n_seq + d->n_state, d->n_bin + d->n_state + d->n_val + 1, d->n_val + d->n_state) ||
        !c->g_of || !c->b_of || !c->acc_of || !c->sg_of || !c->null_of) {
        st = gr__bptt_nomem(&bb);
        goto done;
    }
    bb.ckpt = d->checkpoints > 0 && d->n_state > 0;
    if ((st = gr__bptt_sequences(&bb, og)) != GR_OK || (st = gr__bptt_histories(&bb)) != GR_OK || (st = gr__bptt_states(&bb, og, skip)) != GR_OK)
        goto done;
    gr__loop_spec_fill(&sp, &bb.b, bb.n_bseq, bb.n_bout, d->n_val + (bb.ckpt ? d->n_state : 0));
    if (bb.ckpt) {
        sp.replay = (gr__scan_def *)(uintptr_t)d;
        sp.seq_replay = bb.replayed;
        sp.replay_seq0 = c->n_g;
        sp.replay_init0 = d->n_val;
    }
    sp.n_steps = d->truncate > 0 ? gr_minimum(bb.L, gr__scalar_const(g, GR_I64, (double)d->truncate, 0)) : bb.L;
    if (!sp.n_steps) { st = gr__scan_failed(g); goto done; }
    sp.checkpoints = d->checkpoints;
    snprintf(name, sizeof name, "grad_of_%s", d->name);
    sp.name = name;
    sp.step = gr__bptt_step;
    sp.user = c;
    if ((st = gr__scan_make(g, &sp, bb.b.res)) != GR_OK) goto done;
    st = gr__bptt_input_grads(&bb, og, skip, ig);
done:
    GR_FREE(c->g_of); GR_FREE(c->b_of); GR_FREE(c->acc_of); GR_FREE(c->sg_of); GR_FREE(c->null_of); GR_FREE(c->hy);
    gr__loop_spec_free(&bb.b);
    GR_FREE(bb.replayed); GR_FREE(bb.htaps);
    return st;
}

/* ---- the R-op: one loop computing the forward values and their tangents together ---------------------

   The tangent loop has the forward loop's sequences, states and values, and beside each one with a
   tangent (a float input whose eval point is connected) its tangent: a sequence with the same taps
   and reading order, a state with the same taps (the eval point of its initial, or zeros), a value.
   Its body is the forward body and, on it, the body's R-op along the tangents; its outputs are the
   forward outputs (the states carry the recurrence; only their final values are kept) and the
   tangents of the float outputs, which keep every row as the forward outputs do. A while loop
   stops where the forward one did: the same condition, on the same values. */

typedef struct gr__rop_ctx {
    const gr_node *node;
    const gr__scan_def *d;
    int *seq_t, *st_t, *val_t;           /* per forward sequence / state / value: its tangent's index, or -1 */
    int *out_t;                          /* per forward output: its tangent output's index, or -1 */
    int n_seq_t, n_st_t, n_val_t, n_out_t, n_seqtap_t, n_sttap_t;
} gr__rop_ctx;

static gr_status gr__rop_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    gr__rop_ctx *c = (gr__rop_ctx *)user;
    const gr__scan_def *d = c->d;
    gr_graph *ig = d->ig;
    int n_stap = gr__scan_b_state(d), n_ttap = gr__scan_b_val(d) - n_stap;
    int at_ttap = n_stap + c->n_seqtap_t, at_tttap = at_ttap + n_ttap, at_val = at_tttap + c->n_sttap_t, at_tval = at_val + d->n_val;
    int i, j, k, s, n_wrt = 0, q;
    gr_var **map = NULL, **fo = NULL, **wrt = NULL, **tan = NULL, **ro = NULL;
    int tpos;
    gr_rop_opts ro_opts;
    gr_status st = GR_ERR_NOMEM;
    map = (gr_var **)gr__calloc((size_t)ig->n_vars + 1, sizeof(gr_var *));
    fo = (gr_var **)gr__calloc((size_t)d->n_bout + 1, sizeof(gr_var *));
    wrt = (gr_var **)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_var *));
    tan = (gr_var **)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_var *));
    ro = (gr_var **)gr__calloc((size_t)d->n_out + 1, sizeof(gr_var *));
    if (!map || !fo || !wrt || !tan || !ro) goto nomem;
    /* the forward body on the forward values: sequence taps, state taps, values */
    for (i = 0; i < n_stap; i++) map[d->bin[i]->id] = in[i];
    for (i = 0; i < n_ttap; i++) map[d->bin[n_stap + i]->id] = in[at_ttap + i];
    for (i = 0; i < d->n_val; i++) map[d->bin[gr__scan_b_val(d) + i]->id] = in[at_val + i];
    if ((st = gr__scan_clone(d, g, map, fo)) != GR_OK) goto done;
    /* the tangents along which the body's R-op runs */
    for (i = 0, tpos = 0; i < d->n_seq; i++)
        for (k = 0; k < d->seq_ntaps[i]; k++)
            if (c->seq_t[i] >= 0) { wrt[n_wrt] = in[d->seq_at[i] + k]; tan[n_wrt++] = in[n_stap + tpos++]; }
    for (s = 0, tpos = 0; s < d->n_state; s++)
        for (k = 0; k < d->st_ntaps[s]; k++)
            if (c->st_t[s] >= 0) { wrt[n_wrt] = in[at_ttap + d->st_at[s] - n_stap + k]; tan[n_wrt++] = in[at_tttap + tpos++]; }
    for (i = 0; i < d->n_val; i++)
        if (c->val_t[i] >= 0) { wrt[n_wrt] = in[at_val + i]; tan[n_wrt++] = in[at_tval + c->val_t[i]]; }
    memset(&ro_opts, 0, sizeof ro_opts);
    ro_opts.disconnected_outputs = GR_IGNORE;
    ro_opts.return_disconnected = GR_RETURN_ZERO;
    if (n_wrt > 0 && (st = gr_rop(d->n_out, fo, n_wrt, wrt, tan, ro, &ro_opts)) != GR_OK) goto done;
    for (j = 0, q = 0; j < d->n_out; j++) out[q++] = fo[j];
    for (j = 0; j < d->n_out; j++) {
        gr_var *t;
        if (c->out_t[j] < 0) continue;
        t = n_wrt > 0 && ro[j] && !gr_is_disconnected(ro[j]) ? ro[j] : gr_zeros_like(fo[j]);
        if (t && t->dtype != fo[j]->dtype) t = gr_cast(t, (gr_dtype)fo[j]->dtype);
        if (!(out[q++] = t)) goto failed;
    }
    if (d->has_until) *until = fo[d->n_out];
    st = GR_OK;
    goto done;
failed:
    st = g->status != GR_OK ? g->status : GR_ERR_NOMEM;
    goto done;
nomem:
    st = gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (R-op)", d->name);
done:
    GR_FREE(map); GR_FREE(fo); GR_FREE(wrt); GR_FREE(tan); GR_FREE(ro);
    return st;
}

static int gr__rop_has(gr_var *ev) { return ev && !gr_is_disconnected(ev) && !gr_is_null(ev) && gr__is_float(ev->dtype); }

/* the tangents the loop carries: per forward sequence, state and value, its tangent's index or -1
   (a float state carries one, zeros without an eval point); 0 when no input has a tangent */
static int gr__rop_plan(gr__rop_ctx *c, gr_var *const *ev) {
    const gr_node *node = c->node;
    const gr__scan_def *d = c->d;
    int i, s, any = 0;
    for (i = 0; i < d->n_seq; i++) {
        c->seq_t[i] = gr__rop_has(ev[gr__scan_i_seq(d) + i]) ? c->n_seq_t++ : -1;
        if (c->seq_t[i] >= 0) { c->n_seqtap_t += d->seq_ntaps[i]; any = 1; }
    }
    for (s = 0; s < d->n_state; s++) {      /* a float state carries a tangent (zeros without an eval point) */
        gr_var *x0 = gr__in(node)[gr__scan_i_init(d) + s];
        c->st_t[s] = gr__is_float(x0->dtype) ? c->n_st_t++ : -1;
        if (c->st_t[s] >= 0) c->n_sttap_t += d->st_ntaps[s];
        if (gr__rop_has(ev[gr__scan_i_init(d) + s])) any = 1;
    }
    for (i = 0; i < d->n_val; i++) {
        c->val_t[i] = gr__rop_has(ev[gr__scan_i_val(d) + i]) ? c->n_val_t++ : -1;
        if (c->val_t[i] >= 0) any = 1;
    }
    return any;
}

/* the tangent loop's sequences, outputs and values in b: the forward ones, then their tangents */
static gr_status gr__rop_spec(const gr__rop_ctx *c, gr__loop_spec *b, gr_var *const *ev) {
    const gr_node *node = c->node;
    const gr__scan_def *d = c->d;
    int i, j, s, q;
    for (i = 0; i < d->n_seq; i++) {          /* the sequences, then their tangents, read alike */
        int at = gr__scan_i_seq(d) + i;
        gr_var *o = d->seq_off[i] >= 0 ? gr__in(node)[gr__scan_i_off(d) + d->seq_off[i]] : NULL;
        b->seq[i] = gr__in(node)[at]; b->off[i] = o; b->dir[i] = d->seq_dir[i];
        b->ntaps[i] = d->seq_ntaps[i]; b->taps[i] = d->taps + d->seq_at[i];
        if (c->seq_t[i] < 0) continue;
        q = d->n_seq + c->seq_t[i];
        b->seq[q] = ev[at]->dtype == b->seq[i]->dtype ? ev[at] : gr_cast(ev[at], (gr_dtype)b->seq[i]->dtype);
        b->off[q] = o; b->dir[q] = d->seq_dir[i]; b->ntaps[q] = d->seq_ntaps[i]; b->taps[q] = d->taps + d->seq_at[i];
        if (!b->seq[q]) return gr__scan_failed(node->graph);
    }
    for (j = 0; j < d->n_out; j++) {          /* the outputs (their final values), then the tangents */
        s = d->out_state[j];
        b->last[j] = 1;
        if (s >= 0) {
            b->init[j] = gr__in(node)[gr__scan_i_init(d) + s];
            b->ontaps[j] = d->st_ntaps[s];
            b->otaps[j] = d->taps + d->st_at[s];
        }
        if (c->out_t[j] < 0) continue;
        q = d->n_out + c->out_t[j];
        b->last[q] = d->out_last[j];
        if (s >= 0) {
            gr_var *e = ev[gr__scan_i_init(d) + s], *x0 = b->init[j];
            b->init[q] = gr__rop_has(e) ? (e->dtype == x0->dtype ? e : gr_cast(e, (gr_dtype)x0->dtype)) : gr_zeros_like(x0);
            b->ontaps[q] = d->st_ntaps[s];
            b->otaps[q] = d->taps + d->st_at[s];
            if (!b->init[q]) return gr__scan_failed(node->graph);
        }
    }
    for (i = 0; i < d->n_val; i++) {
        int at = gr__scan_i_val(d) + i;
        b->vals[i] = gr__in(node)[at];
        if (c->val_t[i] >= 0) {
            q = d->n_val + c->val_t[i];
            b->vals[q] = ev[at]->dtype == b->vals[i]->dtype ? ev[at] : gr_cast(ev[at], (gr_dtype)b->vals[i]->dtype);
            if (!b->vals[q]) return gr__scan_failed(node->graph);
        }
    }
    return GR_OK;
}

static gr_status gr__Scan_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    const gr__scan_def *d = gr__sdef(node);
    gr_graph *g = node->graph;
    gr__rop_ctx c;
    gr__loop_spec b;
    gr__scan_spec sp;
    int n_seq2, n_out2, n_val2, j;
    char name[80];
    gr_status st;
    for (j = 0; j < node->n_out; j++) orop[j] = NULL;
    memset(&c, 0, sizeof c);
    memset(&b, 0, sizeof b);
    c.node = node;
    c.d = d;
    c.seq_t = (int *)gr__calloc((size_t)(d->n_seq + d->n_state + d->n_val + d->n_out) + 1, sizeof(int));
    if (!c.seq_t) return gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (R-op)", d->name);
    c.st_t = c.seq_t + d->n_seq; c.val_t = c.st_t + d->n_state; c.out_t = c.val_t + d->n_val;
    if (!gr__rop_plan(&c, ev)) { GR_FREE(c.seq_t); return GR_OK; }       /* nothing moves: every output is disconnected */
    for (j = 0; j < d->n_out; j++) c.out_t[j] = gr__is_float(d->bout[j]->dtype) ? c.n_out_t++ : -1;
    n_seq2 = d->n_seq + c.n_seq_t;
    n_out2 = d->n_out + c.n_out_t;
    n_val2 = d->n_val + c.n_val_t;
    if (!gr__loop_spec_alloc(&b, n_seq2, n_out2, n_val2)) { st = gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (R-op)", d->name); goto done; }
    if ((st = gr__rop_spec(&c, &b, ev)) != GR_OK) goto done;
    gr__loop_spec_fill(&sp, &b, n_seq2, n_out2, n_val2);
    sp.n_steps = d->has_n_steps ? gr__in(node)[0] : NULL;
    sp.checkpoints = d->checkpoints;
    snprintf(name, sizeof name, "rop_of_%s", d->name);
    sp.name = name;
    sp.step = gr__rop_step;
    sp.user = &c;
    if ((st = gr__scan_make(g, &sp, b.res)) != GR_OK) goto done;
    for (j = 0; j < d->n_out; j++) if (c.out_t[j] >= 0) orop[j] = b.res[d->n_out + c.out_t[j]];
done:
    GR_FREE(c.seq_t);
    gr__loop_spec_free(&b);
    return st;
}

/* ---- batching (Jacobians and Hessians through loops): one loop over batched rows ---------------------

   Inputs that gained a leading batch axis B stay batched inside the loop: a sequence (B, len, *s) is
   iterated as (len, B, *s), a value stays (B, ...), and a state is batched when its initial value is
   or when its output depends on a batched input (through the recurrence too); such a state's
   initial value is broadcast to (B, *s) when it is not batched itself. The body is the forward body
   vectorised (src/jacobian.c) over the batched inputs; a batched output comes out (L, B, *s) and is
   given back as (B, L, *s). */

static gr_status gr__vectorize(gr_graph *g, int n_seed, gr_var *const *seed, gr_var *const *seed_b, const uint8_t *seed_isb,
                               int n, gr_var *const *roots, gr_var **out, uint8_t *out_b);

#endif /* GR_NO_SCAN */
/* x (unbatched) broadcast along a leading axis of the size of ref's leading (batch) axis */
static GR__UNUSED gr_var *gr__batch_like(gr_var *x, gr_var *ref) {
    int axes[GR_MAX_NDIM], pat[GR_MAX_NDIM + 1], i;
    gr_var *r = ref, *z;
    if (!x || !ref) return NULL;
    for (i = 1; i < ref->ndim; i++) axes[i - 1] = i;
    if (ref->ndim > 1) r = gr_sum_axes(ref, ref->ndim - 1, axes, 0);     /* (B,) */
    z = gr_zeros_like(r);
    if (z && z->dtype != x->dtype) z = gr_cast(z, (gr_dtype)x->dtype);
    pat[0] = 0;
    for (i = 0; i < x->ndim; i++) pat[i + 1] = GR_NEWAXIS;
    z = z ? gr__dimshuffle(z, x->ndim + 1, pat, 0) : NULL;               /* (B, 1, ..., 1) */
    pat[0] = GR_NEWAXIS;
    for (i = 0; i < x->ndim; i++) pat[i + 1] = i;
    return z ? gr_add(z, gr__dimshuffle(x, x->ndim + 1, pat, 0)) : NULL;
}
#ifndef GR_NO_SCAN
/* x with its first two axes swapped */
static gr_var *gr__swap01(gr_var *x) {
    int pat[GR_MAX_NDIM], i;
    if (!x) return NULL;
    pat[0] = 1; pat[1] = 0;
    for (i = 2; i < x->ndim; i++) pat[i] = i;
    return gr__dimshuffle(x, x->ndim, pat, 0);
}

typedef struct gr__batch_ctx {
    const gr__scan_def *d;
    const unsigned char *bin_b;          /* per body input: batched */
    const unsigned char *out_b;          /* per output: batched */
} gr__batch_ctx;

static gr_status gr__batch_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    gr__batch_ctx *c = (gr__batch_ctx *)user;
    const gr__scan_def *d = c->d;
    gr_graph *ig = d->ig;
    gr_var **map = NULL, **seed = NULL, **roots = NULL, **vo = NULL, *ref = NULL;
    uint8_t *isb = NULL, *ob = NULL;
    int i, j;
    gr_status st = GR_ERR_NOMEM;
    map = (gr_var **)gr__calloc((size_t)ig->n_vars + 1, sizeof(gr_var *));
    seed = (gr_var **)gr__calloc((size_t)d->n_bin + 1, sizeof(gr_var *));
    roots = (gr_var **)gr__calloc((size_t)d->n_bout + 1, sizeof(gr_var *));
    vo = (gr_var **)gr__calloc((size_t)d->n_bout + 1, sizeof(gr_var *));
    isb = (uint8_t *)gr__calloc((size_t)d->n_bin + 1, 1);
    ob = (uint8_t *)gr__calloc((size_t)d->n_bout + 1, 1);
    if (!map || !seed || !roots || !vo || !isb || !ob) goto nomem;
    /* the body, on stand-ins of its inputs' unbatched types, then vectorised onto the step's inputs */
    for (i = 0; i < d->n_bin; i++) {
        if (!(seed[i] = map[d->bin[i]->id] = gr__new_var(g, d->bin[i]->dtype, d->bin[i]->ndim, gr__vshape(d->bin[i]), GR__VK_INPUT))) goto failed;
        isb[i] = c->bin_b[i];
        if (isb[i] && !ref) ref = in[i];
    }
    if ((st = gr__scan_clone(d, g, map, roots)) != GR_OK) goto done;
    if ((st = gr__vectorize(g, d->n_bin, seed, in, isb, d->n_bout, roots, vo, ob)) != GR_OK) goto done;
    for (j = 0; j < d->n_out; j++) {
        out[j] = vo[j];
        if (c->out_b[j] && !ob[j]) out[j] = gr__batch_like(vo[j], ref);     /* a batched state's step */
        if (!out[j]) goto failed;
    }
    if (d->has_until) {
        if (ob[d->n_out]) { st = gr__error(g, GR_ERR_GRAD_NOT_IMPLEMENTED, "gr_scan '%s': its until condition would differ from row to row of a batch", d->name); goto done; }
        *until = vo[d->n_out];
    }
    st = GR_OK;
    goto done;
failed:
    st = g->status != GR_OK ? g->status : GR_ERR_NOMEM;
    goto done;
nomem:
    st = gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (batching)", d->name);
done:
    GR_FREE(map); GR_FREE(seed); GR_FREE(roots); GR_FREE(vo); GR_FREE(isb); GR_FREE(ob);
    return st;
}

/* which outputs depend on the batched body inputs (data, not derivatives: through every node, and
   the states' recurrence) */
static void gr__scan_batched_outputs(const gr__scan_def *d, unsigned char *bin_b, unsigned char *out_b, unsigned char *reach) {
    gr_graph *ig = d->ig;
    uint32_t k;
    int i, j, s, t, changed;
    do {
        changed = 0;
        memset(reach, 0, (size_t)ig->n_vars);
        for (i = 0; i < d->n_bin; i++) reach[d->bin[i]->id] = bin_b[i];
        for (k = 0; k < ig->n_nodes; k++) {
            gr_node *node = ig->nodes[k];
            int any = 0;
            for (i = 0; i < node->n_in && !any; i++) any = reach[gr__in(node)[i]->id];
            for (j = 0; any && j < node->n_out; j++) reach[gr__out(node)[j]->id] = 1;
        }
        for (j = 0; j < d->n_bout; j++) if (reach[d->bout[j]->id] && !out_b[j]) { out_b[j] = 1; changed = 1; }
        for (s = 0; s < d->n_state; s++)     /* a batched output batches its state's taps */
            if (out_b[d->st_out[s]])
                for (t = 0; t < d->st_ntaps[s]; t++)
                    if (!bin_b[d->st_at[s] + t]) { bin_b[d->st_at[s] + t] = 1; changed = 1; }
    } while (changed);
}

static gr_status gr__Scan_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) {
    const gr__scan_def *d = gr__sdef(node);
    gr_graph *g = node->graph;
    gr__batch_ctx c;
    gr__scan_spec sp;
    unsigned char *bin_b = NULL, *out_b = NULL, *reach = NULL;
    gr_var **seq = NULL, **init = NULL, **vals = NULL, **off = NULL, **res = NULL, *ref = NULL;
    int *ntaps = NULL, *dir = NULL, *ontaps = NULL, i, j, s, t;
    const int **taps = NULL, **otaps = NULL;
    gr_status st = GR_ERR_NOMEM;
    for (j = 0; j < node->n_out; j++) out[j] = NULL;
    bin_b = (unsigned char *)gr__calloc((size_t)d->n_bin + 1, 1);
    out_b = (unsigned char *)gr__calloc((size_t)d->n_bout + 1, 1);
    reach = (unsigned char *)gr__calloc((size_t)d->ig->n_vars + 1, 1);
    seq = (gr_var **)gr__calloc((size_t)d->n_seq + 1, sizeof(gr_var *));
    off = (gr_var **)gr__calloc((size_t)d->n_seq + 1, sizeof(gr_var *));
    ntaps = (int *)gr__calloc(2u * (size_t)d->n_seq + 1, sizeof(int));
    taps = (const int **)gr__calloc((size_t)d->n_seq + 1, sizeof(int *));
    init = (gr_var **)gr__calloc((size_t)d->n_out + 1, sizeof(gr_var *));
    ontaps = (int *)gr__calloc((size_t)d->n_out + 1, sizeof(int));
    otaps = (const int **)gr__calloc((size_t)d->n_out + 1, sizeof(int *));
    vals = (gr_var **)gr__calloc((size_t)(d->n_val + d->n_state) + 1, sizeof(gr_var *));
    res = (gr_var **)gr__calloc((size_t)d->n_out + 2, sizeof(gr_var *));
    if (!bin_b || !out_b || !reach || !seq || !off || !ntaps || !taps || !init || !ontaps || !otaps || !vals || !res) goto nomem;
    dir = ntaps + d->n_seq;
    for (i = 0; i < node->n_in; i++)
        if (batched[i] && i < gr__scan_i_seq(d))
            return gr__error(g, GR_ERR_GRAD_NOT_IMPLEMENTED, "gr_scan '%s': its number of steps would differ from row to row of a batch", d->name);
    for (i = 0; i < node->n_in && !ref; i++) if (batched[i]) ref = in[i];
    for (i = 0; i < d->n_seq; i++)
        for (t = 0; t < d->seq_ntaps[i]; t++) bin_b[d->seq_at[i] + t] = batched[gr__scan_i_seq(d) + i];
    for (s = 0; s < d->n_state; s++)
        for (t = 0; t < d->st_ntaps[s]; t++) bin_b[d->st_at[s] + t] = batched[gr__scan_i_init(d) + s];
    for (i = 0; i < d->n_val; i++) bin_b[gr__scan_b_val(d) + i] = batched[gr__scan_i_val(d) + i];
    gr__scan_batched_outputs(d, bin_b, out_b, reach);
    for (i = 0; i < d->n_seq; i++) {
        int at = gr__scan_i_seq(d) + i;
        seq[i] = batched[at] ? gr__swap01(in[at]) : in[at];
        off[i] = d->seq_off[i] >= 0 ? in[gr__scan_i_off(d) + d->seq_off[i]] : NULL;
        dir[i] = d->seq_dir[i];
        ntaps[i] = d->seq_ntaps[i];
        taps[i] = d->taps + d->seq_at[i];
        if (!seq[i]) goto failed;
    }
    for (j = 0; j < d->n_out; j++) {
        s = d->out_state[j];
        if (s < 0) continue;
        {
            int at = gr__scan_i_init(d) + s, sit = d->st_ntaps[s] == 1 && d->taps[d->st_at[s]] == -1;
            gr_var *x0 = in[at];
            if (out_b[j] && !batched[at]) x0 = sit ? gr__batch_like(x0, ref) : gr__swap01(gr__batch_like(x0, ref));
            else if (batched[at] && !sit) x0 = gr__swap01(x0);      /* (B, rows, *s) -> (rows, B, *s) */
            init[j] = x0;
            ontaps[j] = d->st_ntaps[s];
            otaps[j] = d->taps + d->st_at[s];
            if (!x0) goto failed;
        }
    }
    for (i = 0; i < d->n_val; i++) vals[i] = in[gr__scan_i_val(d) + i];
    c.d = d;
    c.bin_b = bin_b;
    c.out_b = out_b;
    memset(&sp, 0, sizeof sp);
    sp.n_seq = d->n_seq; sp.seq = seq; sp.seq_ntaps = ntaps; sp.seq_taps = taps; sp.seq_dir = dir; sp.seq_off = off;
    sp.n_out = d->n_out; sp.init = init; sp.out_ntaps = ontaps; sp.out_taps = otaps; sp.out_last = d->out_last;
    sp.n_val = d->n_val; sp.val = vals;
    sp.n_steps = d->has_n_steps ? in[0] : NULL;
    sp.truncate = d->truncate;
    sp.checkpoints = d->checkpoints;
    sp.name = d->name;
    sp.step = gr__batch_step;
    sp.user = &c;
    if ((st = gr__scan_make(g, &sp, res)) != GR_OK) goto done;
    for (j = 0; j < d->n_out; j++) {
        out[j] = out_b[j] && !d->out_last[j] ? gr__swap01(res[j]) : res[j];
        if (!out[j]) goto failed;
    }
    out[d->n_out] = res[d->n_out];
    st = GR_OK;
    goto done;
failed:
    st = g->status != GR_OK ? g->status : GR_ERR_NOMEM;
    goto done;
nomem:
    st = gr__error(g, GR_ERR_NOMEM, "gr_scan '%s': out of memory (batching)", d->name);
done:
    GR_FREE(bin_b); GR_FREE(out_b); GR_FREE(reach); GR_FREE(seq); GR_FREE(off); GR_FREE(ntaps); GR_FREE(taps);
    GR_FREE(init); GR_FREE(ontaps); GR_FREE(otaps); GR_FREE(vals); GR_FREE(res);
    return st;
}

/* ---- what a compiled function reads: an output read only at its last row keeps that row alone, a
   history read behind its initial value keeps it in front ------------------------------------------ */

/* x is the initial value x0 of a state as one row, x0[None]: a dimshuffle of x0 putting a new axis
   in front, or a constant holding x0's constant values in that shape */
static int gr__scan_is_row_of(const gr_var *x, const gr_var *x0) {
    const gr_node *w = gr__owner(x);
    if (x->ndim != x0->ndim + 1 || x->dtype != x0->dtype) return 0;
    if (w && w->op == &gr__op_DimShuffle && gr__in(w)[0] == x0) {
        const gr__dimshuffle_params *dp = (const gr__dimshuffle_params *)gr__params(w);
        int k;
        if (dp->n != x0->ndim + 1 || dp->pattern[0] != GR_NEWAXIS) return 0;
        for (k = 0; k < x0->ndim; k++) if (dp->pattern[k + 1] != k) return 0;
        return 1;
    }
    if (!w && x->kind == GR__VK_CONST && x0->kind == GR__VK_CONST) {
        const gr_array *a = (const gr_array *)gr__ext(x), *b = (const gr_array *)gr__ext(x0);
        return a->size == b->size && a->shape[0] == 1 && memcmp(a->data, b->data, (size_t)a->size * gr__dsize(a->dtype)) == 0;
    }
    return 0;
}

/* a reader r of output j (state s) joins the state's initial value and j's rows: [x0[None]; out_j] */
static int gr__scan_front_join(const gr_node *node, int s, const gr_node *r, const gr_var *o) {
    const gr__scan_def *d = gr__sdef(node);
    return r->op == &gr__op_Join && r->n_in == 2 && gr__in(r)[1] == o && gr__out(r)[0]->ndim == o->ndim &&
           ((const gr__join_params *)gr__params(r))->axis == -o->ndim && gr__scan_is_row_of(gr__in(r)[0], gr__in(node)[gr__scan_i_init(d) + s]);
}

/* gr_function (src/function.c, gr__fn_narrow) shows each loop the readers of its outputs:
   - an output that the function does not return and whose every reader takes its last row
     (gr_index(r, 0, -1)) is kept as LAST: its readers read the narrowed output instead (Aesara's
     scan_save_mem): a loop whose last state only is read holds one row, not one a step;
   - an output of a plain state (one tap, -1) that the function does not return and that a reader
     joins behind the state's initial value ([x0[None]; r], the history a gradient's loop reads) is
     kept with x0 as row 0: those readers read it instead, the others the view of its rows from 1,
     and the history is not copied.
   The loop is made again with those outputs changed. */
static gr_status gr__Scan_narrow(gr_node *node, const gr__readers *rd, gr_var **map) {
    const gr__scan_params *p = (const gr__scan_params *)gr__params(node);
    const gr__scan_def *d = p->def;
    gr__scan_params np = *p;
    gr_var *outs_stack[16], **outs = outs_stack;
    int j, k;
    gr_status st;
    for (j = 0; j < d->n_out && j < 64; j++) {
        gr_var *o = gr__out(node)[j];
        int n = 0, ok = !d->out_last[j] && !rd->root[o->id - rd->base], s = d->out_state[j], joins = 0;
        for (k = rd->first[o->id - rd->base]; ok && k >= 0; k = rd->next[k]) {
            const gr_node *r = rd->node[k];
            const gr__view_params *vp = (const gr__view_params *)gr__params(r);
            ok = r->op == &gr__op_Index && vp->axis == 0 && vp->start == -1;
            n++;
        }
        if (ok && n > 0) np.narrowed |= (uint64_t)1 << j;
        else if (!d->out_last[j] && !rd->root[o->id - rd->base] && s >= 0 && d->st_ntaps[s] == 1 && d->taps[d->st_at[s]] == -1) {
            for (k = rd->first[o->id - rd->base]; k >= 0; k = rd->next[k]) joins += gr__scan_front_join(node, s, rd->node[k], o);
            if (joins) np.front |= (uint64_t)1 << j;
        }
    }
    if (np.narrowed == p->narrowed && np.front == p->front) return GR_OK;
    if (node->n_out > 16 && !(outs = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)node->n_out)))
        return gr__error(node->graph, GR_ERR_NOMEM, "gr_scan '%s': out of memory", d->name);
    np.rt = NULL;
    st = gr__make_node_n(node->graph, &gr__op_Scan, &np, sizeof np, node->n_in, gr__in(node), node->n_out, outs);
    for (j = 0; st == GR_OK && j < node->n_out; j++) {
        gr_var *o = gr__out(node)[j];
        map[o->id - rd->base] = outs[j];
        if (j < 64 && ((np.narrowed >> j) & 1u))    /* its readers read the narrowed output itself */
            for (k = rd->first[o->id - rd->base]; k >= 0; k = rd->next[k]) map[gr__out(rd->node[k])[0]->id - rd->base] = outs[j];
        if (j < 64 && ((np.front >> j) & 1u) && !((p->front >> j) & 1u)) {   /* the joins read it, the others its rows from 1 */
            int others = 0;
            for (k = rd->first[o->id - rd->base]; k >= 0; k = rd->next[k]) {
                if (gr__scan_front_join(node, d->out_state[j], rd->node[k], o)) map[gr__out(rd->node[k])[0]->id - rd->base] = outs[j];
                else others = 1;
            }
            if (others && !(map[o->id - rd->base] = gr_slice(outs[j], 0, 1, GR_OPEN, 1))) st = node->graph->status != GR_OK ? node->graph->status : GR_ERR_NOMEM;
        }
    }
    if (outs != outs_stack) GR_FREE(outs);
    return st;
}

/* ---- C code generation (gr_fn_emit_c): a loop as a C `for` over its steps ----------------------------

   The body, compiled for the step's shapes as the loop's first step compiles it (gr__scan_specialise),
   is written once inside the loop (gr__em_inner), its memory after the loop's own in the node's
   scratch. At step t its inputs are pointers: a sequence's rows off + dir t + k - m, a state's taps
   (the initial value's rows while t + k < 0, else the rows kept), the values. An output keeping every
   row writes its row t (row t + 1 when its initial value is row 0); one keeping its final value only,
   with a state of D rows, a ring of D + 1 rows (the taps read rows t - D .. t - 1 while row t is
   written), copied out after the loop. The emitted function has fixed shapes: a loop whose number of
   steps is not known from the example's shapes and the constants (n_steps from an input's value), or
   an output of a while loop (until) keeping every row, is not emitted (GR_ERR_VALUE naming the loop
   and the output). */

#ifndef GR_NO_STDIO

/* v: the shape of x without its first `drop` axes (no data) */
static void gr__scan_em_row(gr_array *v, const gr_array *x, int drop) {
    int a;
    memset(v, 0, sizeof *v);
    v->dtype = x->dtype;
    v->ndim = x->ndim - drop;
    v->size = 1;
    for (a = drop; a < x->ndim; a++) { v->shape[a - drop] = x->shape[a]; v->size *= x->shape[a]; }
}
static int gr__scan_sit(const gr__scan_def *d, int s) { return d->st_ntaps[s] == 1 && d->taps[d->st_at[s]] == -1; }
static size_t gr__scan_em_bytes(const gr_array *x, int drop) {   /* a row's bytes */
    return drop && x->shape[0] == 0 ? 0 : (size_t)(drop ? x->size / x->shape[0] : x->size) * gr__dsize(x->dtype);
}

/* the steps the loop runs (the most, with until), from the known values and the shapes; -1 after a
   failure. A sequence's offset read from an input not known here is checked by the emitted code. */
static int64_t gr__scan_em_steps(gr__em *e, const gr_node *node, const gr_array *const *in) {
    const gr__scan_def *d = gr__sdef(node);
    int64_t L = -1;
    int i, s;
    if (d->has_n_steps) {
        const void *p = gr__em_known_in(e, 0);
        if (!p) {
            gr__em_fail(e, GR_ERR_VALUE, "gr_fn_emit_c: Scan '%s': its number of steps (n_steps %s) depends on the data; the emitted "
                        "function has fixed shapes", d->name, gr__d(gr__in(node)[0]).s);
            return -1;
        }
        L = (int64_t)gr__load(in[0]->dtype, p, 0);
        if (L < 0) { gr__em_fail(e, GR_ERR_VALUE, "gr_fn_emit_c: Scan '%s': n_steps is %lld; it must not be negative", d->name, (long long)L); return -1; }
    }
    for (i = 0; i < d->n_seq; i++) {
        const gr_array *x = in[gr__scan_i_seq(d) + i];
        int64_t span = d->seq_M[i] - d->seq_m[i], allows, off;
        if (d->seq_off[i] >= 0) {
            const void *p = gr__em_known_in(e, gr__scan_i_off(d) + d->seq_off[i]);
            if (!p && d->has_n_steps) continue;
            if (!p) {
                gr__em_fail(e, GR_ERR_VALUE, "gr_fn_emit_c: Scan '%s': the offset of sequence %d depends on the data", d->name, i);
                return -1;
            }
            off = (int64_t)gr__load(GR_I64, p, 0);
        } else off = d->seq_dir[i] > 0 ? 0 : x->shape[0] - span - 1;
        if (d->replay && d->seq_replay[i] >= 0) continue;   /* recomputed, not read from x */
        if (d->seq_dir[i] > 0) allows = off < 0 ? -1 : x->shape[0] - span - off;
        else allows = off + span > x->shape[0] - 1 ? -1 : off + 1;
        if (allows < 0 || (d->has_n_steps && allows < L)) {
            gr__em_fail(e, GR_ERR_SHAPE, "gr_fn_emit_c: Scan '%s': sequence %d has %lld rows; %lld steps with its taps need %lld", d->name, i,
                        (long long)x->shape[0], (long long)(d->has_n_steps ? L : 0), (long long)((d->has_n_steps ? L : 0) + span));
            return -1;
        }
        if (!d->has_n_steps && (L < 0 || allows < L)) L = allows;
    }
    for (s = 0; s < d->n_state; s++)
        if (!gr__scan_sit(d, s) && in[gr__scan_i_init(d) + s]->shape[0] < d->st_D[s]) {
            gr__em_fail(e, GR_ERR_SHAPE, "gr_fn_emit_c: Scan '%s': output %d has taps down to %d, so its initial value needs %d rows; it has %lld",
                        d->name, d->st_out[s], -d->st_D[s], d->st_D[s], (long long)in[gr__scan_i_init(d) + s]->shape[0]);
            return -1;
        }
    return L;
}

/* the body's inputs' shapes at a step (bin), and the body compiled for them, as the first step does */
static gr_fn *gr__scan_em_body(gr__em *e, const gr_node *node, const gr_array *const *in, gr_array *bin) {
    const gr__scan_def *d = gr__sdef(node);
    gr__scan_rt *rt = gr__scan_rt_of(node);
    int i, k, s, j, pos = 0, any_pp = 0;
    gr_status st;
    for (i = 0; i < d->n_seq; i++)
        for (k = 0; k < d->seq_ntaps[i]; k++) gr__scan_em_row(&bin[pos++], in[gr__scan_i_seq(d) + i], 1);
    for (s = 0; s < d->n_state; s++)
        for (k = 0; k < d->st_ntaps[s]; k++) gr__scan_em_row(&bin[pos++], in[gr__scan_i_init(d) + s], gr__scan_sit(d, s) ? 0 : 1);
    for (i = 0; i < d->n_val; i++) gr__scan_em_row(&bin[pos++], in[gr__scan_i_val(d) + i], 0);
    if (!rt) { gr__em_fail(e, GR_ERR_VALUE, "gr_fn_emit_c: Scan '%s' is outside the function that compiled it", d->name); return NULL; }
    for (j = 0; j < d->n_out; j++) any_pp |= gr__scan_pingpong(node, j);   /* (the runtime's second instance too) */
    if ((st = gr__scan_specialise(node, d, bin, rt->level, &rt->body, any_pp ? &rt->body2 : NULL, rt->spec)) != GR_OK) {
        gr__em_fail(e, st, "gr_fn_emit_c: %s", node->graph->message);
        gr_graph_clear_error(node->graph);
        return NULL;
    }
    return rt->body;
}

/* the shape pass: the outputs' shapes (and the steps' number, a known value without until) */
static gr_status gr__scan_em_shapes(gr__em *e, const gr_node *node, const gr_array *const *in, gr_array *const *out, gr_array *bin,
                                    const gr_array **bo) {
    const gr__scan_def *d = gr__sdef(node);
    int64_t L = gr__scan_em_steps(e, node, in);
    gr_fn *body = L > 0 ? gr__scan_em_body(e, node, in, bin) : NULL;
    const gr_array **bin_ptr = (const gr_array **)(void *)bo + d->n_bout;
    int i, j, a;
    if (L < 0 || (L > 0 && !body)) return gr__em_fail(e, GR_ERR_VALUE, "gr_fn_emit_c: Scan '%s' failed", d->name);   /* (said already) */
    for (i = 0; i < d->n_bin; i++) bin_ptr[i] = &bin[i];
    if (L > 0 && gr__em_inner_shapes(e, body, bin_ptr, bo) != GR_OK) return gr__em_status(e);
    for (j = 0; j < d->n_out; j++) {
        int s = d->out_state[j], lead = gr__scan_last(node, j) ? 0 : 1;
        gr_array *o = (gr_array *)(uintptr_t)out[j], row;
        if (s >= 0) {
            gr__scan_em_row(&row, in[gr__scan_i_init(d) + s], gr__scan_sit(d, s) ? 0 : 1);
            if (L > 0 && (bo[j]->ndim != row.ndim || memcmp(bo[j]->shape, row.shape, sizeof(int64_t) * (size_t)row.ndim) != 0))
                return gr__em_fail(e, GR_ERR_SHAPE, "gr_fn_emit_c: Scan '%s': output %d has the shape %s; its state has another", d->name, j, gr__as(bo[j]).s);
        } else if (L > 0) row = *bo[j];
        else {                                   /* no step: the body's static shape (as gr_call) */
            memset(&row, 0, sizeof row);
            row.ndim = d->bout[j]->ndim;
            for (a = 0; a < row.ndim; a++) row.shape[a] = gr__vshape(d->bout[j])[a] > 0 ? gr__vshape(d->bout[j])[a] : 0;
        }
        if (d->has_until && lead)
            return gr__em_fail(e, GR_ERR_VALUE, "gr_fn_emit_c: Scan '%s': its output %d (%s) has as many rows as the steps run, which depends on "
                               "the data (until); the emitted function has fixed shapes", d->name, j, gr__d(gr__out(node)[j]).s);
        o->ndim = row.ndim + lead;
        if (lead) o->shape[0] = L + gr__scan_front(node, j);
        for (a = 0; a < row.ndim; a++) o->shape[a + lead] = row.shape[a];
    }
    ((gr_array *)(uintptr_t)out[d->n_out])->ndim = 0;
    if (!d->has_until) gr__em_known_set(e, d->n_out, &L);
    return GR_OK;
}
/* The emitted loop's names (l<id>_...): per sequence its offset o<i>; per body input its pointer b<k>;
   per output the bytes of a row (rowb) and, kept LAST with a state, its ring's offset in work. */
typedef struct gr__scan_em_rp gr__scan_em_rp;
typedef struct gr__scan_em {
    gr__em *e;
    const gr_node *node;
    const gr__scan_def *d;
    const gr_array *const *in, *const *out;
    int64_t L;
    int id;
    size_t *rowb, *ring;
    gr__scan_em_rp *rp;                  /* a checkpointed gradient's loop: its replay */
} gr__scan_em;

/* A checkpointed gradient's loop emitted: the forward windows (each forward state's last D rows, as
   gr__replay keeps them) at steps start + j K (j < nck <= checkpoints, K = ceil(L / checkpoints))
   kept in a first pass over the forward steps; backward step t copies the kept window at or before
   forward step lm1 - t and runs the forward body from there (the same body, so the same bits as
   the runtime's revolve schedule; at most checkpoints + 1 windows, O(L K) forward steps). */
struct gr__scan_em_rp {
    const gr__scan_def *f;               /* the forward loop */
    gr_fn *body;                         /* its body, compiled as the runtime's replay compiles it */
    int first;                           /* the first replayed sequence: its offset is the forward loop's last step */
    int64_t K, nck;
    size_t wbytes, slots, win;           /* a window's bytes; where the kept windows are in work, then the working one */
    size_t *s_off, *s_row;               /* per forward state: its rows' place in a window, a row's bytes */
    gr_array *fbin;
    const gr_array **fptr;
    char (*names)[24];
    const char **nm;
    char (*bo)[GR__EM_OPND];
};

/* the sequences' offsets, checked against their rows when read from an input at run time */
static void gr__scan_em_offsets(const gr__scan_em *c) {
    const gr__scan_def *d = c->d;
    int i;
    for (i = 0; i < d->n_seq; i++) {
        const gr_array *x = c->in[gr__scan_i_seq(d) + i];
        int64_t span = d->seq_M[i] - d->seq_m[i];
        if (d->seq_off[i] < 0) {
            gr__em_line(c->e, "const int64_t l%d_o%d = %lld;", c->id, i, (long long)(d->seq_dir[i] > 0 ? 0 : x->shape[0] - span - 1));
            continue;
        }
        gr__em_line(c->e, "const int64_t l%d_o%d = (%s)[0];", c->id, i, gr__em_in(c->e, gr__scan_i_off(d) + d->seq_off[i]));
        if (d->replay && d->seq_replay[i] >= 0) continue;   /* recomputed, not read from x */
        if (d->seq_dir[i] > 0)
            gr__em_line(c->e, "if (l%d_o%d < 0 || %lld - l%d_o%d < %lld) return %d;", c->id, i, (long long)(x->shape[0] - span), c->id, i,
                        (long long)c->L, (int)GR_ERR_SHAPE);
        else
            gr__em_line(c->e, "if (l%d_o%d > %lld || l%d_o%d + 1 < %lld) return %d;", c->id, i, (long long)(x->shape[0] - 1 - span), c->id, i,
                        (long long)c->L, (int)GR_ERR_SHAPE);
    }
}

/* the body's inputs at step l<id>_t, as pointers l<id>_b<k> */
static void gr__scan_em_bind(const gr__scan_em *c) {
    const gr__scan_def *d = c->d;
    gr__em *e = c->e;
    int i, k, s, pos = 0, id = c->id;
    char src[GR__EM_OPND];
    for (i = 0; i < d->n_seq; i++) {
        const gr_array *x = c->in[gr__scan_i_seq(d) + i];
        if (c->rp && d->seq_replay[i] >= 0) {       /* a forward state's rows, from the recomputed window */
            int fs = d->seq_replay[i];
            for (k = 0; k < d->seq_ntaps[i]; k++)
                gr__em_line(e, "const void *l%d_b%d = (const char *)work + %lu;", id, pos++, (unsigned long)(c->rp->win + c->rp->s_off[fs] +
                            (size_t)(d->replay->st_D[fs] + d->taps[d->seq_at[i] + k]) * c->rp->s_row[fs]));
            continue;
        }
        snprintf(src, sizeof src, "%s", gr__em_in(e, gr__scan_i_seq(d) + i));
        for (k = 0; k < d->seq_ntaps[i]; k++)
            gr__em_line(e, "const void *l%d_b%d = (const char *)%s + (l%d_o%d %c l%d_t + %d) * %lld;", id, pos++, src, id, i,
                        d->seq_dir[i] > 0 ? '+' : '-', id, d->taps[d->seq_at[i] + k] - d->seq_m[i], (long long)gr__scan_em_bytes(x, 1));
    }
    for (s = 0; s < d->n_state; s++) {
        int j = d->st_out[s], D = d->st_D[s], sit = gr__scan_sit(d, s);
        long long rb = (long long)c->rowb[j];
        char init[2 * GR__EM_OPND], rows[2 * GR__EM_OPND];
        snprintf(src, sizeof src, "%s", gr__em_in(e, gr__scan_i_init(d) + s));
        for (k = 0; k < d->st_ntaps[s]; k++) {
            int tap = d->taps[d->st_at[s] + k];
            if (sit) snprintf(init, sizeof init, "%s", src);
            else snprintf(init, sizeof init, "(const char *)%s + (l%d_t + %d) * %lld", src, id, tap + D, rb);
            if (gr__scan_last(c->node, j))
                snprintf(rows, sizeof rows, "(const char *)work + %lu + ((l%d_t + %d) %% %d) * %lld", (unsigned long)c->ring[j], id, tap, D + 1, rb);
            else snprintf(rows, sizeof rows, "(const char *)%s + (l%d_t + %d) * %lld", gr__em_out(e, j), id, tap + gr__scan_front(c->node, j), rb);
            gr__em_line(e, "const void *l%d_b%d = l%d_t + %d < 0 ? (const void *)(%s) : (const void *)(%s);", id, pos++, id, tap, init, rows);
        }
    }
    for (i = 0; i < d->n_val; i++) gr__em_line(e, "const void *l%d_b%d = %s;", id, pos++, gr__em_in(e, gr__scan_i_val(d) + i));
    for (i = 0; i < pos; i += 8) {        /* (what the body does not read) */
        char v[8 * 24];
        size_t n = 0;
        for (k = i; k < pos && k < i + 8; k++) n += (size_t)snprintf(v + n, sizeof v - n, "%s(void)l%d_b%d;", k > i ? " " : "", id, k);
        gr__em_line(e, "%s", v);
    }
}

/* step l<id>_t's outputs (the body's, at bo[j]) kept: every row's row, a ring's row, a final value */
static void gr__scan_em_keep(const gr__scan_em *c, char (*bo)[GR__EM_OPND]) {
    const gr__scan_def *d = c->d;
    gr__em *e = c->e;
    int j, id = c->id;
    for (j = 0; j < d->n_out; j++) {
        unsigned long rb = (unsigned long)c->rowb[j];
        if (!rb) continue;
        if (!gr__scan_last(c->node, j))
            gr__em_line(e, "memcpy((char *)%s + (l%d_t + %d) * %lu, %s, %lu);", gr__em_out(e, j), id, gr__scan_front(c->node, j), rb, bo[j], rb);
        else if (d->out_state[j] >= 0)
            gr__em_line(e, "memcpy((char *)work + %lu + (l%d_t %% %d) * %lu, %s, %lu);", (unsigned long)c->ring[j], id, d->st_D[d->out_state[j]] + 1, rb,
                        bo[j], rb);
        else gr__em_line(e, "memcpy(%s, %s, %lu);", gr__em_out(e, j), bo[j], rb);
    }
    gr__em_line(e, "l%d_run = l%d_t + 1;", id, id);
    if (d->has_until) gr__em_line(e, "if (((const %s *)%s)[0] != 0) break;", gr__em_ctype(d->bout[d->n_out]->dtype), bo[d->n_out]);
}

/* after the steps: the final values out of their rings (with no step, the initial's last rows), the
   rows in front, the steps run */
static void gr__scan_em_finish(const gr__scan_em *c) {
    const gr__scan_def *d = c->d;
    gr__em *e = c->e;
    int j, id = c->id;
    for (j = 0; j < d->n_out; j++) {
        int s = d->out_state[j];
        unsigned long rb = (unsigned long)c->rowb[j];
        if (!gr__scan_last(c->node, j) || !rb) continue;
        if (s >= 0 && c->L > 0)
            gr__em_line(e, "memcpy(%s, (const char *)work + %lu + ((l%d_run - 1) %% %d) * %lu, %lu);", gr__em_out(e, j), (unsigned long)c->ring[j], id,
                        d->st_D[s] + 1, rb, rb);
        else if (s >= 0)
            gr__em_line(e, "memcpy(%s, (const char *)%s + %lu, %lu);", gr__em_out(e, j), gr__em_in(e, gr__scan_i_init(d) + s),
                        gr__scan_sit(d, s) ? 0ul : (unsigned long)(d->st_D[s] - 1) * rb, rb);
        else if (c->L == 0 && !d->out_last[j])
            gr__em_line(e, "return %d;   /* output %d is read at its last row, and no step ran */", (int)GR_ERR_RUNTIME, j);
    }
    gr__em_line(e, "((int64_t *)%s)[0] = l%d_run;", gr__em_out(e, d->n_out), id);
}

/* the replay's layout and forward body (at = where its windows start in work); NULL after a failure */
static gr__scan_em_rp *gr__scan_em_rp_new(gr__scan_em *c, size_t at) {
    const gr__scan_def *d = c->d, *f = d->replay;
    gr__scan_rt *rt = gr__scan_rt_of(c->node);
    size_t n = (size_t)f->n_bin + (size_t)f->n_bout + 2, total = 0;
    gr__scan_em_rp *rp = (gr__scan_em_rp *)gr__calloc(1, sizeof(gr__scan_em_rp));
    int i, k, s, pos = 0;
    gr_status st;
    if (!rp || !(rp->s_off = (size_t *)gr__calloc(2 * (size_t)f->n_state + 1, sizeof(size_t))) ||
        !(rp->fbin = (gr_array *)gr__calloc(n, sizeof(gr_array))) || !(rp->fptr = (const gr_array **)gr__calloc(n, sizeof(gr_array *))) ||
        !(rp->names = (char (*)[24])gr__calloc(n, 24)) || !(rp->nm = (const char **)gr__calloc(n, sizeof(char *))) ||
        !(rp->bo = (char (*)[GR__EM_OPND])gr__calloc(n, GR__EM_OPND))) {
        gr__em_fail(c->e, GR_ERR_NOMEM, "gr_fn_emit_c: out of memory");
        return rp;
    }
    rp->f = f;
    rp->s_row = rp->s_off + f->n_state;
    for (rp->first = 0; rp->first < d->n_seq && d->seq_replay[rp->first] < 0; rp->first++) {}
    for (s = 0; s < f->n_state; s++) {
        const gr_array *x0 = c->in[gr__scan_i_val(d) + d->replay_init0 + s];
        rp->s_row[s] = gr__scan_em_bytes(x0, gr__scan_sit(f, s) ? 0 : 1);
        rp->s_off[s] = total;
        total += ((size_t)f->st_D[s] * rp->s_row[s] + 15u) & ~(size_t)15u;
    }
    rp->wbytes = (total + 63) & ~(size_t)63;
    rp->K = (c->L + d->checkpoints - 1) / d->checkpoints;
    rp->nck = c->L > 0 ? (c->L + rp->K - 1) / rp->K : 0;
    rp->slots = at;
    rp->win = at + (size_t)rp->nck * rp->wbytes;
    for (i = 0; i < f->n_seq; i++)
        for (k = 0; k < f->seq_ntaps[i]; k++) gr__scan_em_row(&rp->fbin[pos++], c->in[gr__scan_i_seq(d) + d->replay_seq0 + i], 1);
    for (s = 0; s < f->n_state; s++)
        for (k = 0; k < f->st_ntaps[s]; k++)
            gr__scan_em_row(&rp->fbin[pos++], c->in[gr__scan_i_val(d) + d->replay_init0 + s], gr__scan_sit(f, s) ? 0 : 1);
    for (i = 0; i < f->n_val; i++) gr__scan_em_row(&rp->fbin[pos++], c->in[gr__scan_i_val(d) + i], 0);
    for (i = 0; i < f->n_bin; i++) { rp->fptr[i] = &rp->fbin[i]; snprintf(rp->names[i], 24, "l%d_f%d", c->id, i); rp->nm[i] = rp->names[i]; }
    if (!rt || !rt->rp) { gr__em_fail(c->e, GR_ERR_VALUE, "gr_fn_emit_c: Scan '%s' is outside the function that compiled it", d->name); return rp; }
    if ((st = gr__scan_specialise(c->node, f, rp->fbin, rt->level, &rt->rp->body, NULL, rt->rp->spec)) != GR_OK) {
        gr__em_fail(c->e, st, "gr_fn_emit_c: %s", c->node->graph->message);
        gr_graph_clear_error(c->node->graph);
        return rp;
    }
    rp->body = rt->rp->body;
    return rp;
}
static void gr__scan_em_rp_free(gr__scan_em_rp *rp) {
    if (!rp) return;
    GR_FREE(rp->s_off); GR_FREE(rp->fbin); GR_FREE((void *)rp->fptr); GR_FREE(rp->names); GR_FREE((void *)rp->nm); GR_FREE(rp->bo);
    GR_FREE(rp);
}

/* the forward body's step u (the C counter named ctr) on the working window, which moves one row */
static gr_status gr__scan_em_fstep(const gr__scan_em *c, const char *ctr, size_t base) {
    const gr__scan_def *d = c->d, *f = c->rp->f;
    const gr__scan_em_rp *rp = c->rp;
    gr__em *e = c->e;
    int i, k, s, pos = 0, id = c->id;
    for (i = 0; i < f->n_seq; i++) {             /* forward sequence i is this loop's replay_seq0 + i, read the other way */
        int bi = d->replay_seq0 + i;
        const gr_array *x = c->in[gr__scan_i_seq(d) + bi];
        char src[GR__EM_OPND];
        snprintf(src, sizeof src, "%s", gr__em_in(e, gr__scan_i_seq(d) + bi));
        for (k = 0; k < f->seq_ntaps[i]; k++)
            gr__em_line(e, "const void *l%d_f%d = (const char *)%s + (l%d_o%d %c l%d_lm1 %c %s + %d) * %lld;", id, pos++, src, id, bi,
                        d->seq_dir[bi] > 0 ? '+' : '-', id, d->seq_dir[bi] > 0 ? '-' : '+', ctr, f->taps[f->seq_at[i] + k] - f->seq_m[i],
                        (long long)gr__scan_em_bytes(x, 1));
    }
    for (s = 0; s < f->n_state; s++)
        for (k = 0; k < f->st_ntaps[s]; k++)
            gr__em_line(e, "const void *l%d_f%d = (const char *)work + %lu;", id, pos++,
                        (unsigned long)(rp->win + rp->s_off[s] + (size_t)(f->st_D[s] + f->taps[f->st_at[s] + k]) * rp->s_row[s]));
    for (i = 0; i < f->n_val; i++) gr__em_line(e, "const void *l%d_f%d = %s;", id, pos++, gr__em_in(e, gr__scan_i_val(d) + i));
    for (i = 0; i < pos; i++) gr__em_line(e, "(void)l%d_f%d;", id, i);
    if (gr__em_inner(e, rp->body, rp->fptr, rp->nm, base, NULL, rp->bo) != GR_OK) return gr__em_status(e);
    for (s = 0; s < f->n_state; s++) {           /* the window moves one row (as gr__replay_advance) */
        unsigned long rows = (unsigned long)(rp->win + rp->s_off[s]), rb = (unsigned long)rp->s_row[s];
        if (!rb) continue;
        if (f->st_D[s] > 1) gr__em_line(e, "memmove((char *)work + %lu, (char *)work + %lu, %lu);", rows, rows + rb, (unsigned long)(f->st_D[s] - 1) * rb);
        gr__em_line(e, "memcpy((char *)work + %lu, %s, %lu);", rows + (unsigned long)(f->st_D[s] - 1) * rb, rp->bo[f->st_out[s]], rb);
    }
    return gr__em_status(e);
}

/* before the steps: the window at forward step 0 (the initial rows), then the forward steps, keeping
   the windows at start + j K */
static gr_status gr__scan_em_keep_windows(const gr__scan_em *c, size_t base) {
    const gr__scan_def *d = c->d, *f = c->rp->f;
    const gr__scan_em_rp *rp = c->rp;
    gr__em *e = c->e;
    int s, id = c->id;
    char ctr[24];
    gr__em_line(e, "const int64_t l%d_lm1 = l%d_o%d, l%d_start = l%d_lm1 + 1 - %lld;", id, id, rp->first, id, id, (long long)c->L);
    for (s = 0; s < f->n_state; s++)
        if (rp->s_row[s])
            gr__em_line(e, "memcpy((char *)work + %lu, %s, %lu);", (unsigned long)(rp->win + rp->s_off[s]),
                        gr__em_in(e, gr__scan_i_val(d) + d->replay_init0 + s), (unsigned long)((size_t)f->st_D[s] * rp->s_row[s]));
    gr__em_line(e, "for (int64_t l%d_u = 0;; l%d_u++) {", id, id);
    gr__em_line(e, "if (l%d_u >= l%d_start && (l%d_u - l%d_start) %% %lld == 0)", id, id, id, id, (long long)rp->K);
    gr__em_line(e, "    memcpy((char *)work + %lu + (size_t)((l%d_u - l%d_start) / %lld) * %lu, (char *)work + %lu, %lu);", (unsigned long)rp->slots,
                id, id, (long long)rp->K, (unsigned long)rp->wbytes, (unsigned long)rp->win, (unsigned long)rp->wbytes);
    gr__em_line(e, "if (l%d_u == l%d_start + %lld) break;", id, id, (long long)((rp->nck - 1) * rp->K));
    snprintf(ctr, sizeof ctr, "l%d_u", id);
    if (gr__scan_em_fstep(c, ctr, base) != GR_OK) return gr__em_status(e);
    gr__em_line(e, "}");
    return gr__em_status(e);
}

/* at backward step t: the forward window at step lm1 - t, from the kept one before it */
static gr_status gr__scan_em_window(const gr__scan_em *c, size_t base) {
    const gr__scan_em_rp *rp = c->rp;
    gr__em *e = c->e;
    int id = c->id;
    char ctr[24];
    gr__em_line(e, "{");
    gr__em_line(e, "const int64_t l%d_w = l%d_lm1 - l%d_t, l%d_j = (l%d_w - l%d_start) / %lld;", id, id, id, id, id, id, (long long)rp->K);
    gr__em_line(e, "memcpy((char *)work + %lu, (char *)work + %lu + (size_t)l%d_j * %lu, %lu);", (unsigned long)rp->win, (unsigned long)rp->slots,
                id, (unsigned long)rp->wbytes, (unsigned long)rp->wbytes);
    gr__em_line(e, "for (int64_t l%d_v = l%d_start + l%d_j * %lld; l%d_v < l%d_w; l%d_v++) {", id, id, id, (long long)rp->K, id, id, id);
    snprintf(ctr, sizeof ctr, "l%d_v", id);
    if (gr__scan_em_fstep(c, ctr, base) != GR_OK) return gr__em_status(e);
    gr__em_line(e, "}");
    gr__em_line(e, "}");
    return gr__em_status(e);
}

/* the loop */
static gr_status gr__scan_em_loop(gr__scan_em *c, gr_array *bin, const gr_array **bin_ptr, char (*bo)[GR__EM_OPND], char (*names)[24]) {
    const gr__scan_def *d = c->d;
    gr__em *e = c->e;
    size_t own = 0;
    int i, j;
    gr_fn *body = NULL;
    for (j = 0; j < d->n_out; j++) {
        const gr_array *o = c->out[j];
        int lead = gr__scan_last(c->node, j) ? 0 : 1;
        c->rowb[j] = lead ? gr__scan_em_bytes(o, 1) : gr__scan_em_bytes(o, 0);
        if (!lead && d->out_state[j] >= 0) {
            c->ring[j] = gr__em_scratch_at(e) + own;
            own += ((size_t)(d->st_D[d->out_state[j]] + 1) * c->rowb[j] + 63) & ~(size_t)63;
        }
    }
    if (c->L > 0 && d->replay && d->checkpoints > 0) {   /* the forward windows: kept ones, then the working one */
        c->rp = gr__scan_em_rp_new(c, gr__em_scratch_at(e) + own);
        if (!c->rp || gr__em_status(e) != GR_OK) return gr__em_status(e);
        if (c->rp->first == d->n_seq) { gr__scan_em_rp_free(c->rp); c->rp = NULL; }   /* (no state: nothing replayed) */
        else own += (size_t)(c->rp->nck + 1) * c->rp->wbytes;
    }
    if (c->L > 0 && !(body = gr__scan_em_body(e, c->node, c->in, bin))) return gr__em_status(e);
    gr__em_scratch_n(e, own);
    for (i = 0; d->name[i] && (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", d->name[i])); i++) {}
    gr__em_line(e, "/* the loop '%.40s' */", d->name[i] ? "" : d->name);   /* (a name that cannot end the comment) */
    gr__em_line(e, "{");
    gr__em_line(e, "int64_t l%d_run = 0;", c->id);
    gr__scan_em_offsets(c);
    for (j = 0; j < d->n_out; j++)            /* row 0: the initial value */
        if (gr__scan_front(c->node, j) && c->rowb[j])
            gr__em_line(e, "memcpy(%s, %s, %lu);", gr__em_out(e, j), gr__em_in(e, gr__scan_i_init(d) + d->out_state[j]), (unsigned long)c->rowb[j]);
    if (c->L > 0) {
        if (c->rp && gr__scan_em_keep_windows(c, gr__em_scratch_at(e) + own) != GR_OK) return gr__em_status(e);
        gr__em_line(e, "for (int64_t l%d_t = 0; l%d_t < %lld; l%d_t++) {", c->id, c->id, (long long)c->L, c->id);
        if (c->rp && gr__scan_em_window(c, gr__em_scratch_at(e) + own) != GR_OK) return gr__em_status(e);
        gr__scan_em_bind(c);
        for (i = 0; i < d->n_bin; i++) { snprintf(names[i], 24, "l%d_b%d", c->id, i); bin_ptr[i] = &bin[i]; }
        {
            const char **nm = (const char **)(void *)(bo + d->n_bout);   /* (room after the outputs' names) */
            for (i = 0; i < d->n_bin; i++) nm[i] = names[i];
            if (gr__em_inner(e, body, bin_ptr, nm, gr__em_scratch_at(e) + own, NULL, bo) != GR_OK) return gr__em_status(e);
        }
        gr__scan_em_keep(c, bo);
        gr__em_line(e, "}");
    }
    gr__scan_em_finish(c);
    gr__em_line(e, "}");
    return gr__em_status(e);
}

static gr_status gr__Scan_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr__scan_def *d = gr__sdef(node);
    size_t n = (size_t)d->n_bin + (size_t)d->n_bout + 2;
    gr_array *bin = (gr_array *)gr__calloc(n, sizeof(gr_array));
    char (*bo)[GR__EM_OPND] = (char (*)[GR__EM_OPND])gr__calloc(n, GR__EM_OPND);
    char (*names)[24] = (char (*)[24])gr__calloc(n, 24);
    const gr_array **bin_ptr = (const gr_array **)gr__calloc(2 * n, sizeof(gr_array *));
    size_t *rowb = (size_t *)gr__calloc(2 * ((size_t)d->n_out + 1), sizeof(size_t));
    gr_status st;
    if (!bin || !bo || !names || !bin_ptr || !rowb) st = gr__em_fail(e, GR_ERR_NOMEM, "gr_fn_emit_c: out of memory");
    else if (gr__em_shaping(e)) st = gr__scan_em_shapes(e, node, in, (gr_array *const *)(uintptr_t)out, bin, bin_ptr);
    else {
        gr__scan_em c;
        memset(&c, 0, sizeof c);
        c.e = e; c.node = node; c.d = d; c.in = in; c.out = out;
        c.rowb = rowb; c.ring = rowb + d->n_out + 1;
        c.id = gr__em_loop_id(e);
        c.L = gr__scan_em_steps(e, node, in);
        st = c.L < 0 ? gr__em_status(e) : gr__scan_em_loop(&c, bin, bin_ptr, bo, names);
        gr__scan_em_rp_free(c.rp);
    }
    GR_FREE(bin); GR_FREE(bo); GR_FREE(names); GR_FREE((void *)bin_ptr); GR_FREE(rowb);
    return st;
}

/* Rows: the rows of its input, fixed */
static gr_status gr__Rows_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)node; (void)out;
    gr__em_line(e, "((int64_t *)%s)[0] = %lld;", gr__em_out(e, 0), (long long)in[0]->shape[0]);
    return gr__em_status(e);
}

/* ScanPlace, ScanGather: the rows' offset read when the function runs, checked as perform does */
static void gr__place_em_check(gr__em *e, const gr_node *node, int64_t n, int64_t m) {
    const gr__place_params *p = (const gr__place_params *)gr__params(node);
    gr__em_line(e, "const int64_t off = (%s)[0];", gr__em_in(e, 2));
    if (n > 0)
        gr__em_line(e, "if (off + %d < 0 || off + %d >= %lld || off + %lld < 0 || off + %lld >= %lld) return %d;", p->k, p->k, (long long)m,
                    (long long)p->dir * (n - 1) + p->k, (long long)p->dir * (n - 1) + p->k, (long long)m, (int)GR_ERR_SHAPE);
}
static gr_status gr__ScanPlace_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr__place_params *p = (const gr__place_params *)gr__params(node);
    const gr_array *r = in[0], *o = out[0];
    int64_t n = r->shape[0], row = n ? r->size / n : 0;
    const char *T = gr__em_ctype(o->dtype);
    char sum[GR__EM_OPND];
    if (n && row != (o->shape[0] ? o->size / o->shape[0] : 0))
        return gr__em_fail(e, GR_ERR_SHAPE, "gr_fn_emit_c: ScanPlace: rows of %s do not fit %s", gr__as(r).s, gr__as(o).s);
    gr__em_line(e, "{");
    gr__em_line(e, "const %s *r = %s;", gr__em_ctype(r->dtype), gr__em_in(e, 0));
    gr__em_line(e, "%s *o = %s;", T, gr__em_out(e, 0));
    gr__place_em_check(e, node, n, o->shape[0]);
    gr__em_line(e, "memset(o, 0, %lu);", (unsigned long)((size_t)o->size * gr__dsize(o->dtype)));
    snprintf(sum, sizeof sum, "((double)o[at + i] + (double)r[t * %lld + i])", (long long)row);
    snprintf(sum, sizeof sum, "%s", gr__em_conv(e, o->dtype, GR_F64, sum, 0));
    gr__em_line(e, "for (int64_t t = 0; t < %lld; t++) {", (long long)n);
    gr__em_line(e, "const int64_t at = (off + %d * t + %d) * %lld;", p->dir, p->k, (long long)row);
    gr__em_line(e, "for (int64_t i = 0; i < %lld; i++) o[at + i] = %s;", (long long)row, sum);
    gr__em_line(e, "}");
    gr__em_line(e, "}");
    return gr__em_status(e);
}
static gr_status gr__ScanGather_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr__place_params *p = (const gr__place_params *)gr__params(node);
    const gr_array *src = in[0], *o = out[0];
    int64_t n = o->shape[0], row = n ? o->size / n : 0;
    size_t rb = (size_t)row * gr__dsize(o->dtype);
    if (n && row != (src->shape[0] ? src->size / src->shape[0] : 0))
        return gr__em_fail(e, GR_ERR_SHAPE, "gr_fn_emit_c: ScanGather: rows of %s do not fit %s", gr__as(o).s, gr__as(src).s);
    gr__em_line(e, "{");
    gr__place_em_check(e, node, n, src->shape[0]);
    gr__em_line(e, "for (int64_t t = 0; t < %lld; t++)", (long long)n);
    gr__em_line(e, "    memcpy((char *)%s + t * %lu, (const char *)%s + (off + %d * t + %d) * %lu, %lu);", gr__em_out(e, 0), (unsigned long)rb,
                gr__em_in(e, 0), p->dir, p->k, (unsigned long)rb, (unsigned long)rb);
    gr__em_line(e, "}");
    return gr__em_status(e);
}

#else
GR__EMIT_NOT_YET(Scan)
GR__EMIT_NOT_YET(Rows)
GR__EMIT_NOT_YET(ScanPlace)
GR__EMIT_NOT_YET(ScanGather)
#endif /* GR_NO_STDIO */
#endif /* GR_NO_SCAN */
