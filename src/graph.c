/* src/graph.c: graphs, variables, leaves, nodes and gr_apply. */

GR_API gr_graph *gr_graph_new(void) {
    gr_graph *g = (gr_graph *)gr__calloc(1, sizeof(gr_graph));
    return g;
}

static void gr__storage_release(gr__storage *s) {
    if (s && --s->refs == 0) {
        gr_array_free(s->value);
        GR_FREE(s);
    }
}

GR_API void gr_graph_free(gr_graph *g) {
    uint32_t i;
    if (!g) return;
    for (i = 0; i < g->n_owned; i++) GR_FREE(g->owned[i]);
    for (i = 0; i < g->n_stores; i++) gr__storage_release(g->stores[i]);
    for (i = 0; i < g->n_held; i++)
        if (--g->held[i]->refs == 0) g->held[i]->destroy(g->held[i]);
    GR_FREE(g->held);
    GR_FREE(g->consts);
    GR_FREE(g->names);
    GR_FREE(g->owned);
    GR_FREE(g->stores);
    GR_FREE(g->vars);
    GR_FREE(g->nodes);
    gr__arena_free(&g->arena);
    GR_FREE(g);
}

GR_API gr_status gr_graph_status(const gr_graph *g) { return g ? g->status : GR_ERR_VALUE; }
GR_API const char *gr_graph_message(const gr_graph *g) { return g ? g->message : ""; }
GR_API void gr_graph_clear_error(gr_graph *g) {
    if (!g) return;
    g->status = GR_OK;
    g->message[0] = 0;
}
GR_API void gr_graph_set_log(gr_graph *g, gr_log_fn fn, void *user) {
    if (!g) return;
    g->log = fn;
    g->log_user = user;
}
GR_API void gr_graph_set_progress(gr_graph *g, gr_progress_fn fn, void *user) {
    if (!g) return;
    g->progress = fn;
    g->progress_user = user;
}

static void *gr__alloc(gr_graph *g, size_t n) {
    void *p = gr__arena_alloc(&g->arena, n);
    if (!p) gr__error(g, GR_ERR_NOMEM, "out of memory (graph arena, %lu bytes)", (unsigned long)n);
    return p;
}

/* ---- names: most variables have none, so they live in a table of the graph, by variable id ---- */

struct gr__name { uint32_t id; char *name; };   /* name NULL: the variable was named, then unnamed */

static struct gr__name *gr__name_slot(const gr_graph *g, uint32_t id) {
    uint32_t mask = g->cap_names - 1u, h = (id * 2654435761u) & mask;
    while (g->names[h].name || g->names[h].id) {     /* (ids start at 1 in a slot: id + 1 is stored) */
        if (g->names[h].id == id + 1u) return &g->names[h];
        h = (h + 1u) & mask;
    }
    return &g->names[h];
}

static const char *gr__vname(const gr_var *v) {
    if (!(v->flags & GR__VF_NAMED) || !v->graph->cap_names) return NULL;
    return gr__name_slot(v->graph, v->id)->name;
}

/* v's name becomes a copy of name (NULL: unnamed) in g's arena; 0 (and an error recorded) when out
   of memory, leaving v unnamed */
static int gr__set_name(gr_graph *g, gr_var *v, const char *name) {
    struct gr__name *e;
    char *copy = NULL;
    if (!name && !(v->flags & GR__VF_NAMED)) return 1;
    if (2u * (g->n_names + 1u) > g->cap_names) {      /* at most half full */
        uint32_t cap = g->cap_names ? 2u * g->cap_names : 16u, i, old_cap = g->cap_names;
        struct gr__name *old = g->names;
        if (cap < g->cap_names || !(g->names = (struct gr__name *)gr__calloc(cap, sizeof(struct gr__name)))) {
            g->names = old;
            v->flags = (uint8_t)(v->flags & ~GR__VF_NAMED);
            gr__error(g, GR_ERR_NOMEM, "out of memory (variable names)");
            return 0;
        }
        g->cap_names = cap;
        for (i = 0; i < old_cap; i++) if (old[i].id) *gr__name_slot(g, old[i].id - 1u) = old[i];
        GR_FREE(old);
    }
    if (name) {
        size_t n = strlen(name) + 1;
        copy = (char *)gr__alloc(g, n);
        if (!copy) { v->flags = (uint8_t)(v->flags & ~GR__VF_NAMED); return 0; }
        memcpy(copy, name, n);
    }
    e = gr__name_slot(g, v->id);
    if (!e->id) { e->id = v->id + 1u; g->n_names++; }
    e->name = copy;
    v->flags = (uint8_t)(copy ? v->flags | GR__VF_NAMED : v->flags & ~GR__VF_NAMED);
    return 1;
}

/* keeps a GR_MALLOC'd block until the graph is freed */
static int gr__own(gr_graph *g, void *block) {
    if (!gr__grow((void **)&g->owned, &g->cap_owned, g->n_owned, sizeof(void *))) {
        GR_FREE(block);
        gr__error(g, GR_ERR_NOMEM, "out of memory");
        return 0;
    }
    g->owned[g->n_owned++] = block;
    return 1;
}

static gr_var *gr__new_var(gr_graph *g, int dtype, int ndim, const int64_t *shape, int kind) {
    gr_var *v;
    int i;
    if (g->n_vars >= UINT32_MAX - 1u - g->var_base) return gr__fail(g, GR_ERR_NOMEM, "too many variables (%lu)", (unsigned long)g->n_vars);
    if (!gr__grow((void **)&g->vars, &g->cap_vars, g->n_vars, sizeof(gr_var *)))
        return gr__fail(g, GR_ERR_NOMEM, "out of memory");
    v = (gr_var *)gr__alloc(g, sizeof(gr_var) + (size_t)ndim * sizeof(int64_t));
    if (!v) return NULL;
    memset(v, 0, sizeof *v);
    v->graph = g;
    for (i = 0; i < ndim; i++) gr__vshape(v)[i] = shape ? shape[i] : -1;
    v->dtype = (uint8_t)dtype;
    v->ndim = (uint8_t)ndim;
    v->kind = (uint8_t)kind;
    v->id = g->var_base + g->n_vars;
    g->vars[g->n_vars++] = v;
    return v;
}

/* ---- op names, as printers and messages show them (ops/README.md, "Printed names") -----------
   CamelCase: a structural row and a user's op show their own name (DimShuffle, Sum), an elementwise
   row the CamelCase of its row name (sin: Sin, logical_and: LogicalAnd, arctan2: Arctan2), made
   here from the row so that the table keeps one name a row. gr_pp keeps the infix and function
   spellings (x + y, sin(x)); a message about the user's call names its constructor (gr_sin). */

typedef struct gr__oname { char s[64]; } gr__oname;

/* appends s in CamelCase to d at *n: the first letter and each one after '_' in upper case, the
   '_' dropped (truncated to the size of gr__oname) */
static void gr__camel(char *d, size_t *n, const char *s) {
    int up = 1;
    for (; *s && *n + 1 < sizeof(gr__oname); s++) {
        if (*s == '_') { up = 1; continue; }
        d[(*n)++] = up && *s >= 'a' && *s <= 'z' ? (char)(*s - 'a' + 'A') : *s;
        up = 0;
    }
    d[*n] = 0;
}

static gr__oname gr__on(const gr_op_def *op) {
    gr__oname o;
    size_t n = 0;
    o.s[0] = 0;
    if (!op || !op->name) gr__camel(o.s, &n, "?");
    else if (gr__flags_of(op) & GR__OPF_ELEMWISE) gr__camel(o.s, &n, op->name);
    else snprintf(o.s, sizeof o.s, "%s", op->name);
    return o;
}

/* ---- describing variables in messages ------------------------------------------------------ */

typedef struct gr__desc { char s[112]; } gr__desc;

static gr__desc gr__d(const gr_var *v) {
    gr__desc d;
    if (!v) snprintf(d.s, sizeof d.s, "NULL");
    else if (gr__vname(v)) snprintf(d.s, sizeof d.s, "'%.80s'", gr__vname(v));
    else if (gr__owner(v)) snprintf(d.s, sizeof d.s, "#%lu (%.40s)", (unsigned long)v->id, gr__on(gr__owner(v)->op).s);
    else if (v->kind == GR__VK_CONST && v->ndim == 0)
        snprintf(d.s, sizeof d.s, "#%lu (constant %g)", (unsigned long)v->id, gr_array_get((const gr_array *)gr__ext(v), 0));
    else {
        static const char *const kinds[] = { "output", "input", "constant", "shared", "disconnected", "null" };
        snprintf(d.s, sizeof d.s, "#%lu (%s)", (unsigned long)v->id, kinds[v->kind]);
    }
    return d;
}

typedef struct gr__shp { char s[200]; } gr__shp;
static gr__shp gr__vs(const gr_var *v) {
    gr__shp s;
    gr__shape_str(s.s, sizeof s.s, v->ndim, gr__vshape(v));
    return s;
}
static gr__shp gr__as(const gr_array *a) {
    gr__shp s;
    gr__shape_str(s.s, sizeof s.s, a->ndim, a->shape);
    return s;
}

/* ---- leaves ---------------------------------------------------------------------------------- */

GR_API gr_var *gr_tensor(gr_graph *g, gr_dtype dtype, int ndim, const int64_t *shape, const char *name) {
    gr_var *v;
    int i;
    if (!g) return NULL;
    if (!gr__dtype_ok((int)dtype)) return gr__fail(g, GR_ERR_VALUE, "gr_tensor: unknown dtype %d", (int)dtype);
    if (ndim < 0 || ndim > GR_MAX_NDIM)
        return gr__fail(g, GR_ERR_VALUE, "gr_tensor: ndim %d out of range [0, %d] for %s%s%s", ndim, GR_MAX_NDIM,
                        name ? "'" : "", name ? name : "an unnamed input", name ? "'" : "");
    for (i = 0; shape && i < ndim; i++)
        if (shape[i] < -1)
            return gr__fail(g, GR_ERR_VALUE, "gr_tensor: negative size %lld at axis %d of %s%s%s", (long long)shape[i], i,
                            name ? "'" : "", name ? name : "an unnamed input", name ? "'" : "");
    if (shape && gr__static_overflows(ndim, shape)) {
        char buf[200];
        return gr__fail(g, GR_ERR_VALUE, "gr_tensor: the element count of the shape %s of %s%s%s overflows",
                        gr__shape_str(buf, sizeof buf, ndim, shape), name ? "'" : "", name ? name : "an unnamed input", name ? "'" : "");
    }
    v = gr__new_var(g, (int)dtype, ndim, shape, GR__VK_INPUT);
    if (v && !gr__set_name(g, v, name)) return NULL;
    return v;
}

GR_API gr_var *gr_scalar(gr_graph *g, gr_dtype dtype, const char *name) { return gr_tensor(g, dtype, 0, NULL, name); }
GR_API gr_var *gr_vector(gr_graph *g, gr_dtype dtype, const char *name) { return gr_tensor(g, dtype, 1, NULL, name); }
GR_API gr_var *gr_matrix(gr_graph *g, gr_dtype dtype, const char *name) { return gr_tensor(g, dtype, 2, NULL, name); }

/* a constant holding a copy of `value` (of any well-formed array) */
static gr_var *gr__constant(gr_graph *g, const gr_array *value, int flags) {
    gr_array *copy;
    gr_var *v;
    size_t bytes = (size_t)value->size * gr__dsize(value->dtype);
    if (bytes <= 64) {                       /* small constants live in the arena, beside the variable */
        copy = (gr_array *)gr__alloc(g, sizeof(gr_array) + 64);
        if (!copy) return NULL;
        *copy = *value;
        copy->data = copy + 1;
        if (bytes) memcpy(copy->data, value->data, bytes);
    } else {
        copy = gr_array_copy(value);
        if (!copy) return gr__fail(g, GR_ERR_NOMEM, "out of memory (constant of %lld elements)", (long long)value->size);
        if (!gr__own(g, copy)) return NULL;
    }
    v = gr__new_var(g, value->dtype, value->ndim, value->shape, GR__VK_CONST);
    if (!v) return NULL;
    v->u.ext = copy;
    v->flags = (uint8_t)flags;
    return v;
}

GR_API gr_var *gr_constant(gr_graph *g, const gr_array *value) {
    if (!g) return NULL;
    if (!value) return gr__fail(g, GR_ERR_VALUE, "gr_constant: value is NULL");
    if (!gr__array_valid(value))
        return gr__fail(g, GR_ERR_VALUE, "gr_constant: the array is malformed (dtype, ndim, shape, size or data)");
    return gr__constant(g, value, 0);
}

/* A 0-d constant of a given dtype. The typed ones (flags 0) are made once per graph for each dtype
   and value: derivative rules and weak constants ask for the same few values again and again. */
static gr_var *gr__scalar_const(gr_graph *g, int dtype, double value, int flags) {
    gr_array a;
    double d = value;
    float f = (float)value;
    int64_t i = gr__to_i64(value);
    uint8_t b = (uint8_t)(value != 0);
    uint64_t key = 0;
    uint32_t h = 0, mask;
    gr_var *v;
    memset(&a, 0, sizeof a);
    a.dtype = (gr_dtype)dtype;
    a.size = 1;
    a.data = dtype == GR_F64 ? (void *)&d : dtype == GR_F32 ? (void *)&f : dtype == GR_I64 ? (void *)&i : (void *)&b;
    if (flags) return gr__constant(g, &a, flags);
    memcpy(&key, a.data, gr__dsize(dtype));
    if (g->n_consts * 2 >= g->cap_consts) {            /* grow the open-addressing table */
        uint32_t nc = g->cap_consts ? g->cap_consts * 2 : 64, k;
        gr_var **t = (gr_var **)gr__calloc(nc, sizeof(gr_var *));
        if (!t) return gr__fail(g, GR_ERR_NOMEM, "out of memory");
        for (k = 0; k < g->cap_consts; k++) {
            gr_var *c = g->consts[k];
            uint64_t ck = 0;
            uint32_t j;
            if (!c) continue;
            memcpy(&ck, ((const gr_array *)gr__ext(c))->data, gr__dsize(c->dtype));
            j = (uint32_t)(gr__hash64(ck ^ ((uint64_t)c->dtype << 61))) & (nc - 1);
            while (t[j]) j = (j + 1) & (nc - 1);
            t[j] = c;
        }
        GR_FREE(g->consts);
        g->consts = t;
        g->cap_consts = nc;
    }
    mask = g->cap_consts - 1;
    h = (uint32_t)gr__hash64(key ^ ((uint64_t)dtype << 61)) & mask;
    for (; (v = g->consts[h]) != NULL; h = (h + 1) & mask) {
        uint64_t ck = 0;
        memcpy(&ck, ((const gr_array *)gr__ext(v))->data, gr__dsize(v->dtype));
        if (v->dtype == dtype && ck == key) return v;
    }
    v = gr__constant(g, &a, 0);
    if (!v) return NULL;
    g->consts[h] = v;
    g->n_consts++;
    return v;
}

GR_API gr_var *gr_const(gr_graph *g, double value) {
    if (!g) return NULL;
    return gr__scalar_const(g, GR_F64, value, GR__VF_WEAK);
}

GR_API gr_var *gr_shared(gr_graph *g, const gr_array *value, const char *name) {
    gr__storage *s;
    gr_var *v;
    if (!g) return NULL;
    if (!value) return gr__fail(g, GR_ERR_VALUE, "gr_shared: value is NULL for %s", name ? name : "an unnamed shared variable");
    if (!gr__array_valid(value))
        return gr__fail(g, GR_ERR_VALUE, "gr_shared: the array given for %s is malformed", name ? name : "an unnamed shared variable");
    if (!gr__grow((void **)&g->stores, &g->cap_stores, g->n_stores, sizeof(void *)))
        return gr__fail(g, GR_ERR_NOMEM, "out of memory");
    s = (gr__storage *)GR_MALLOC(sizeof *s);
    if (!s) return gr__fail(g, GR_ERR_NOMEM, "out of memory");
    s->refs = 1;
    s->value = gr_array_copy(value);
    if (!s->value) { GR_FREE(s); return gr__fail(g, GR_ERR_NOMEM, "out of memory (shared value)"); }
    g->stores[g->n_stores++] = s;
    v = gr__new_var(g, value->dtype, value->ndim, value->shape, GR__VK_SHARED);
    if (!v) return NULL;
    v->u.ext = s;
    if (!gr__set_name(g, v, name)) return NULL;
    return v;
}

GR_API const gr_array *gr_shared_get(const gr_var *v) {
    if (!v || v->kind != GR__VK_SHARED) return NULL;
    return ((const gr__storage *)gr__ext(v))->value;
}

/* the value of a shared storage becomes a copy of `value` (same dtype and ndim) */
static gr_status gr__storage_assign(gr__storage *s, const gr_array *value) {
    gr_array *cur = s->value;
    if (cur->size == value->size) {     /* same element count: reuse the block */
        int i;
        for (i = 0; i < value->ndim; i++) cur->shape[i] = value->shape[i];
        if (value->size) memmove(cur->data, value->data, (size_t)value->size * gr__dsize(value->dtype));
        return GR_OK;
    } else {
        gr_array *copy = gr_array_copy(value);
        if (!copy) return GR_ERR_NOMEM;
        gr_array_free(cur);
        s->value = copy;
        return GR_OK;
    }
}

GR_API gr_status gr_shared_set(gr_var *v, const gr_array *value) {
    gr__storage *s;
    int i;
    if (!v) return GR_ERR_VALUE;
    if (v->kind != GR__VK_SHARED)
        return gr__error(v->graph, GR_ERR_VALUE, "gr_shared_set: %s is not a shared variable", gr__d(v).s);
    if (!value) return gr__error(v->graph, GR_ERR_VALUE, "gr_shared_set: value is NULL for %s", gr__d(v).s);
    if (!gr__array_valid(value))
        return gr__error(v->graph, GR_ERR_VALUE, "gr_shared_set: the array given for %s is malformed", gr__d(v).s);
    if ((int)value->dtype != v->dtype || value->ndim != v->ndim)
        return gr__error(v->graph, GR_ERR_TYPE, "gr_shared_set: %s is %s with %d dimensions; the value is %s with %d",
                         gr__d(v).s, gr_dtype_name((gr_dtype)v->dtype), v->ndim, gr_dtype_name(value->dtype), value->ndim);
    s = (gr__storage *)gr__ext(v);
    if (gr__storage_assign(s, value) != GR_OK)
        return gr__error(v->graph, GR_ERR_NOMEM, "gr_shared_set: out of memory for %s", gr__d(v).s);
    for (i = 0; i < v->ndim; i++) gr__vshape(v)[i] = value->shape[i];
    return GR_OK;
}

/* ---- variable accessors ---------------------------------------------------------------------- */

GR_API const char *gr_var_name(const gr_var *v) { return v ? gr__vname(v) : NULL; }
GR_API void gr_var_set_name(gr_var *v, const char *name) {
    if (!v) return;
    gr__set_name(v->graph, v, name);
}
GR_API gr_dtype gr_var_dtype(const gr_var *v) { return v ? (gr_dtype)v->dtype : GR_F64; }
GR_API int gr_var_ndim(const gr_var *v) { return v ? v->ndim : -1; }
GR_API gr_graph *gr_var_graph(const gr_var *v) { return v ? v->graph : NULL; }
GR_API gr_node *gr_var_owner(const gr_var *v) { return v ? gr__owner(v) : NULL; }
GR_API int gr_is_disconnected(const gr_var *v) { return v && v->kind == GR__VK_DISC; }
GR_API int gr_is_null(const gr_var *v) { return v && v->kind == GR__VK_NULL; }
GR_API int gr_var_type(const gr_var *v, gr_type *out) {
    int i;
    if (!v || !out) return 0;
    memset(out, 0, sizeof *out);
    out->dtype = (gr_dtype)v->dtype;
    out->ndim = v->ndim;
    for (i = 0; i < v->ndim; i++) out->shape[i] = gr__vshape(v)[i];
    return 1;
}

GR_API gr_var *gr_disconnected_like(gr_var *x) {
    gr_var *v;
    if (!x) return NULL;
    v = gr__new_var(x->graph, x->dtype, x->ndim, gr__vshape(x), GR__VK_DISC);
    return v;
}

static int gr__is_marker(const gr_var *v) { return v->kind == GR__VK_DISC || v->kind == GR__VK_NULL; }

/* A driver's NULL variable argument, what[i] (i < 0: a single argument). When g already holds an
   error, the NULL is most likely what a failed builder returned: that error is returned as it is.
   Else GR_ERR_VALUE is recorded, naming the driver and the argument: drivers record on the graph of
   their first non-NULL variable argument, and only builders stay silent on a NULL operand. */
static gr_status gr__driver_null(gr_graph *g, const char *fname, const char *what, int i) {
    if (g->status != GR_OK) return g->status;
    if (i < 0) return gr__error(g, GR_ERR_VALUE, "%s: %s is NULL", fname, what);
    return gr__error(g, GR_ERR_VALUE, "%s: %s[%d] is NULL", fname, what, i);
}

/* operands of a builder: 0 if any is NULL (silently) or unusable (error recorded on the graph of
   the first non-NULL one); else 1 and *gout is their graph */
static int gr__operands(const char *fname, int n, gr_var *const *xs, gr_graph **gout) {
    gr_graph *g = NULL;
    int i;
    for (i = 0; i < n; i++) if (xs[i]) { g = xs[i]->graph; break; }
    *gout = g;
    for (i = 0; i < n; i++) if (!xs[i]) return 0;
    for (i = 0; i < n; i++) {
        if (xs[i]->graph != g) {
            gr__error(g, GR_ERR_VALUE, "%s: operand %d (%s) belongs to another graph", fname, i, gr__d(xs[i]).s);
            return 0;
        }
        if (gr__is_marker(xs[i])) {
            gr__error(g, GR_ERR_TYPE, "%s: operand %d is a %s gradient marker, not a value", fname, i,
                      xs[i]->kind == GR__VK_DISC ? "disconnected" : "null");
            return 0;
        }
    }
    return 1;
}

/* ---- nodes ----------------------------------------------------------------------------------- */

/* GR_OK when every input is there. A NULL input is a builder inside a builder or a rule that
   failed: the node is not made, and the failure propagates as NULL with the error that builder
   recorded; with none recorded (inner builders fail on valid operands only when out of memory),
   GR_ERR_NOMEM is recorded, naming the op */
static gr_status gr__inputs_present(gr_graph *g, const char *opname, int n_in, gr_var *const *in) {
    int i;
    for (i = 0; i < n_in; i++)
        if (!in || !in[i]) {
            if (g->status != GR_OK) return g->status;
            return gr__error(g, GR_ERR_NOMEM, "%s: input %d is missing: a builder inside it failed (out of memory)", opname, i);
        }
    return GR_OK;
}

/* a node of op with n_out outputs (op->n_out, or any number for an op whose n_out is -1); no node
   is made on a NULL input (see gr__inputs_present) */
static gr_status gr__make_node_n(gr_graph *g, const gr_op_def *op, const void *params, size_t psize, int n_in,
                                 gr_var *const *in, int n_out, gr_var **outs) {
    gr_node *node;
    gr_type stack_types[4];
    gr_type *types = stack_types;
    gr_status st;
    int i, j;
    if (!g) return GR_ERR_VALUE;
    if ((st = gr__inputs_present(g, gr__on(op).s, n_in, in)) != GR_OK) return st;
    if (psize > UINT32_MAX) return gr__error(g, GR_ERR_VALUE, "%s: %lu bytes of parameters (at most 4 GB)", gr__on(op).s, (unsigned long)psize);
    node = (gr_node *)gr__alloc(g, sizeof(gr_node) + (size_t)(n_in + n_out) * sizeof(gr_var *) + psize);
    if (!node) return GR_ERR_NOMEM;
    node->op = op;
    node->graph = g;
    node->params_size = (uint32_t)psize;
    node->n_in = n_in;
    node->n_out = n_out;
    node->id = UINT32_MAX;               /* numbered when registered, after the type rule (which may build nodes) */
    for (i = 0; i < n_in; i++) gr__in(node)[i] = in[i];
    for (j = 0; j < n_out; j++) gr__out(node)[j] = NULL;
    if (psize) memcpy(gr__params(node), params, psize);
    if (n_out > 4) {
        types = (gr_type *)gr__alloc(g, sizeof(gr_type) * (size_t)n_out);
        if (!types) return GR_ERR_NOMEM;
    }
    memset(types, 0, sizeof(gr_type) * (size_t)n_out);
    if (op->infer) {
        gr_status before = g->status;
        st = op->infer(node, types);
        if (st != GR_OK) {
            if (before == GR_OK && g->status == GR_OK)
                gr__error(g, st, "%s: its type rule failed (%s)", gr__on(op).s, gr_status_string(st));
            return st;
        }
    } else {
        if (n_in < 1) return gr__error(g, GR_ERR_VALUE, "%s: an op without inputs needs a type rule (infer)", gr__on(op).s);
        for (j = 0; j < n_out; j++) gr_var_type(in[0], &types[j]);
    }
    for (j = 0; j < n_out; j++) {
        gr_var *v;
        if (!gr__dtype_ok((int)types[j].dtype) || types[j].ndim < 0 || types[j].ndim > GR_MAX_NDIM)
            return gr__error(g, GR_ERR_VALUE, "%s: its type rule gave output %d an invalid dtype or ndim", gr__on(op).s, j);
        for (i = 0; i < types[j].ndim; i++)
            if (types[j].shape[i] < -1)
                return gr__error(g, GR_ERR_VALUE, "%s: its type rule gave output %d a negative size", gr__on(op).s, j);
        if (gr__static_overflows(types[j].ndim, types[j].shape)) {
            char buf[200];
            return gr__error(g, GR_ERR_SHAPE, "%s: output %d would have the shape %s, whose element count overflows (inputs %s%s%s)",
                             gr__on(op).s, j, gr__shape_str(buf, sizeof buf, types[j].ndim, types[j].shape), n_in > 0 ? gr__d(in[0]).s : "none",
                             n_in > 1 ? " and " : "", n_in > 1 ? gr__d(in[1]).s : "");
        }
        v = gr__new_var(g, (int)types[j].dtype, types[j].ndim, types[j].shape, GR__VK_OUT);
        if (!v) return GR_ERR_NOMEM;
        v->u.owner = node;
        v->out_index = j;
        gr__out(node)[j] = v;
    }
    /* registered only now: a type rule may build nodes of its own (Batched's builds its inner node),
       which take the slots and ids free before it ran */
    if (g->n_nodes >= UINT32_MAX - 1u - g->node_base) return gr__error(g, GR_ERR_NOMEM, "too many nodes (%lu)", (unsigned long)g->n_nodes);
    if (!gr__grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes, sizeof(gr_node *)))
        return gr__error(g, GR_ERR_NOMEM, "out of memory");
    if (gr__flags_of(op) & GR__OPF_GRAPHOP) {      /* the graph keeps what the node's params point at */
        gr__graphop *o = *(gr__graphop *const *)gr__params(node);
        if (!gr__grow((void **)&g->held, &g->cap_held, g->n_held, sizeof(gr__graphop *)))
            return gr__error(g, GR_ERR_NOMEM, "out of memory");
        o->refs++;
        g->held[g->n_held++] = o;
    }
    node->id = g->node_base + g->n_nodes;
    g->nodes[g->n_nodes++] = node;
    for (j = 0; j < n_out; j++) outs[j] = gr__out(node)[j];
    return GR_OK;
}

static gr_status gr__make_node(gr_graph *g, const gr_op_def *op, const void *params, size_t psize, int n_in,
                               gr_var *const *in, gr_var **outs) {
    GR_ASSERT(op->n_out >= 0);           /* an op of any number of outputs: gr__make_node_n */
    return gr__make_node_n(g, op, params, psize, n_in, in, op->n_out, outs);
}

/* one-output node, or NULL */
static gr_var *gr__node1(gr_graph *g, const gr_op_def *op, const void *params, size_t psize, int n_in, gr_var *const *in) {
    gr_var *out = NULL;
    if (gr__make_node(g, op, params, psize, n_in, in, &out) != GR_OK) return NULL;
    return out;
}

/* op is one of the table's (or a copy of one taken from gr_node_op): its perform is a table row's;
   1 for an elementwise row, 2 for a structural one */
static int gr__builtin_op(const gr_op_def *op) {
    if (op->perform == gr__ew_perform) return 1;
#define GR__BUILTIN_PERFORM(Name, nin, nout, rules, conn, alias, flags, batch, sig, simp) if (op->perform == gr__##Name##_perform) return 2;
    GR_STRUCT_OPS(GR__BUILTIN_PERFORM)
#undef GR__BUILTIN_PERFORM
    return 0;
}

GR_API gr_status gr_apply(const gr_op_def *op, const void *params, size_t params_size, int n_in,
                          gr_var *const *inputs, gr_var **outputs) {
    gr_graph *g = NULL;
    int i;
    if (op && outputs) for (i = 0; i < op->n_out; i++) outputs[i] = NULL;
    for (i = 0; inputs && i < n_in; i++) if (inputs[i]) { g = inputs[i]->graph; break; }
    if (!op) return g ? gr__error(g, GR_ERR_VALUE, "gr_apply: op is NULL") : GR_ERR_VALUE;
    if (!outputs) return g ? gr__error(g, GR_ERR_VALUE, "gr_apply: %s: outputs is NULL", op->name ? op->name : "?") : GR_ERR_VALUE;
    if (!op->name || op->n_out < 1 || n_in < 0 || (op->n_in >= 0 && op->n_in != n_in) || (n_in > 0 && !inputs))
        return g ? gr__error(g, GR_ERR_VALUE, "gr_apply: %s: takes %d inputs and %d outputs, given %d inputs",
                             op->name ? op->name : "unnamed op", op->n_in, op->n_out, n_in) : GR_ERR_VALUE;
    if (!g) return GR_ERR_VALUE;            /* no inputs, or NULL ones: nothing to report to */
    if (params_size && !params) return gr__error(g, GR_ERR_VALUE, "gr_apply: %s: params is NULL", op->name);
    if (!gr__operands(op->name, n_in, inputs, &g)) return g->status != GR_OK ? g->status : GR_ERR_VALUE;
    if (gr__flags_of(op) & GR__OPF_GRAPHOP) return gr__graph_op_apply(g, op, n_in, inputs, outputs);   /* ops/graphop.c */
    /* the rules gr_call and the drivers call without asking: perform, and the built-in fields */
    if (!op->perform) return gr__error(g, GR_ERR_VALUE, "gr_apply: %s has no perform rule (it is required)", op->name);
    if (!op->builtin != !gr__builtin_op(op))
        return gr__error(g, GR_ERR_VALUE, "gr_apply: %s %s", op->name, op->builtin ? "sets builtin, which belongs to built-in ops "
                         "(NULL in yours)" : "has a built-in op's perform rule without its built-in fields");
    /* a structural row's rules read a parameter struct of their own, which only its builder makes */
    if (gr__builtin_op(op) == 2)
        return gr__error(g, GR_ERR_VALUE, "gr_apply: %s is a built-in op with parameters of its own; build it with its gr_ function",
                         op->name);
    return gr__make_node(g, op, params, params_size, n_in, inputs, outputs);
}

GR_API gr_var *gr_node_input(const gr_node *node, int i) {
    return node && i >= 0 && i < node->n_in ? gr__in(node)[i] : NULL;
}
GR_API gr_var *gr_node_output(const gr_node *node, int i) {
    return node && i >= 0 && i < node->n_out ? gr__out(node)[i] : NULL;
}
GR_API int gr_node_n_inputs(const gr_node *node) { return node ? node->n_in : 0; }
GR_API int gr_node_n_outputs(const gr_node *node) { return node ? node->n_out : 0; }
GR_API const void *gr_node_params(const gr_node *node) { return node ? gr__params(node) : NULL; }
GR_API const gr_op_def *gr_node_op(const gr_node *node) { return node ? node->op : NULL; }

GR_API gr_status gr_node_error(const gr_node *node, gr_status code, const char *fmt, ...) {
    char buf[GR__MSG];
    va_list ap;
    if (!node) return code;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    gr__error(node->graph, code, "%s: %s", gr__on(node->op).s, buf);
    return code;
}

/* the first input's static type (the default type rule, and the like0 rule of the table) */
static gr_status gr__like0_infer(const gr_node *node, gr_type *out) {
    gr_var_type(gr__in(node)[0], out);
    return GR_OK;
}
static gr_status gr__like0_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i, j;
    for (j = 0; j < node->n_out; j++)        /* every output (users' multi-output ops too) */
        for (i = 0; i < in[0]->ndim && i < out[j]->ndim; i++) out[j]->shape[i] = in[0]->shape[i];
    return GR_OK;
}
static int64_t gr__none_alias(const gr_node *node, const gr_array *const *in, const gr_array *out) {
    (void)node; (void)in; (void)out;
    return -1;
}
static int64_t gr__always_alias(const gr_node *node, const gr_array *const *in, const gr_array *out) {
    (void)node; (void)in; (void)out;
    return 0;
}
static int64_t gr__same_size_alias(const gr_node *node, const gr_array *const *in, const gr_array *out) {
    (void)node;
    return in[0]->size == out->size && in[0]->dtype == out->dtype ? 0 : -1;
}

/* ---- axes ------------------------------------------------------------------------------------ */

/* normalises a possibly negative axis of an ndim-d variable; -1 if out of range */
static int gr__axis(int axis, int ndim) {
    if (axis < 0) axis += ndim;
    return axis >= 0 && axis < ndim ? axis : -1;
}

/* ---- walking the graph without recursion ----------------------------------------------------- */

/* The nodes needed to compute `roots`, each after the nodes it reads (post-order of an explicit-
   stack depth-first search, so a chain of a million nodes is fine). The walk does not go above a
   variable v with stop && stop[v->id]. read (may be NULL) gives the variable the walk takes in place
   of each node input (gr_function's compaction reads the Fused outputs that replace fused-away
   values). *out is GR_MALLOC'd (the caller frees it). */
typedef gr_var *(*gr__read_fn)(const void *ctx, gr_var *x);
static gr_status gr__toposort_read(gr_graph *g, int n_roots, gr_var *const *roots, const uint8_t *stop, gr__read_fn read,
                                   const void *ctx, gr_node ***out, uint32_t *n_out) {
    uint32_t nn = g->node_base + g->n_nodes;     /* every node id is below */
    uint8_t *state = (uint8_t *)gr__calloc(nn + 1u, 1);
    gr_node **stack = (gr_node **)GR_MALLOC(sizeof(gr_node *) * (nn + 1u));
    int *next = (int *)GR_MALLOC(sizeof(int) * (nn + 1u));
    gr_node **order = (gr_node **)GR_MALLOC(sizeof(gr_node *) * (nn + 1u));
    uint32_t sp = 0, n = 0;
    int r;
    *out = NULL;
    *n_out = 0;
    if (!state || !stack || !next || !order) {
        GR_FREE(state); GR_FREE(stack); GR_FREE(next); GR_FREE(order);
        return gr__error(g, GR_ERR_NOMEM, "out of memory (walking %lu nodes)", (unsigned long)g->n_nodes);
    }
    for (r = 0; r < n_roots; r++) {
        gr_var *v = roots[r];
        if (!v || !gr__owner(v) || (stop && stop[v->id]) || state[gr__owner(v)->id]) continue;
        state[gr__owner(v)->id] = 1;
        stack[sp] = gr__owner(v); next[sp] = 0; sp++;
        while (sp) {
            gr_node *node = stack[sp - 1];
            if (next[sp - 1] < node->n_in) {
                gr_var *in = gr__in(node)[next[sp - 1]++];
                if (read) in = read(ctx, in);
                if (gr__owner(in) && !(stop && stop[in->id]) && !state[gr__owner(in)->id]) {
                    state[gr__owner(in)->id] = 1;
                    stack[sp] = gr__owner(in); next[sp] = 0; sp++;
                }
            } else {
                state[node->id] = 2;
                order[n++] = node;
                sp--;
            }
        }
    }
    GR_FREE(state); GR_FREE(stack); GR_FREE(next);
    *out = order;
    *n_out = n;
    return GR_OK;
}
static gr_status gr__toposort(gr_graph *g, int n_roots, gr_var *const *roots, const uint8_t *stop, gr_node ***out,
                              uint32_t *n_out) {
    return gr__toposort_read(g, n_roots, roots, stop, NULL, NULL, out, n_out);
}

/* The nodes of g that roots need (not above a variable v with stop[v->id]), in the order they were
   made: a topological order, since a node is registered after its inputs exist (fusion never
   redirects a node's inputs: it records replacements beside them). One sweep down the node list
   marks what is needed: no stack, and memory read in order. *out is GR_MALLOC'd. */
static gr_status gr__needed_in_order(gr_graph *g, int n_roots, gr_var *const *roots, const uint8_t *stop, gr_node ***out,
                                     uint32_t *n_out) {
    uint32_t nn = g->n_nodes, k, n = 0;
    uint8_t *need = (uint8_t *)gr__calloc(nn + 1u, 1);
    gr_node **order;
    int r;
    *out = NULL;
    *n_out = 0;
    if (!need) return gr__error(g, GR_ERR_NOMEM, "out of memory (walking %lu nodes)", (unsigned long)nn);
    for (r = 0; r < n_roots; r++)
        if (roots[r] && gr__owner(roots[r]) && !(stop && stop[roots[r]->id])) need[gr__owner(roots[r])->id] = 1;
    for (k = nn; k-- > 0;) {
        gr_node *node;
        int i;
        if (!need[k]) continue;
        n++;
        node = g->nodes[k];
        for (i = 0; i < node->n_in; i++) {
            gr_var *in = gr__in(node)[i];
            if (gr__owner(in) && !(stop && stop[in->id])) need[gr__owner(in)->id] = 1;
        }
    }
    order = (gr_node **)GR_MALLOC(sizeof(gr_node *) * (n + 1u));
    if (!order) { GR_FREE(need); return gr__error(g, GR_ERR_NOMEM, "out of memory (walking %lu nodes)", (unsigned long)nn); }
    for (n = 0, k = 0; k < nn; k++) if (need[k]) order[n++] = g->nodes[k];
    GR_FREE(need);
    *out = order;
    *n_out = n;
    return GR_OK;
}
