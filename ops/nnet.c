/* ops/nnet.c: Softmax and LogSoftmax over one axis, numerically stable; CrossEntropy and OneHot
   (the losses, at the end of the file).

   Shapes: x -> y of the same shape; the axis is split as (outer, n, inner).
   softmax(x)_i = e^(x_i - m) / sum_j e^(x_j - m),  log_softmax(x)_i = x_i - m - log sum_j e^(x_j - m),
   m = max_j x_j over the axis. */

typedef struct gr__axis_params { int axis; } gr__axis_params;   /* (ops/batch.c's axis rule) */

#ifndef GR_NO_NNET                  /* ops/table.h, op families: all but gr__axis_split */

static gr_var *gr__axis_op(const char *fname, const gr_op_def *op, gr_var *x, int axis) {
    gr__axis_params p;
    gr_graph *g;
    int a;
    if (!gr__operands(fname, 1, &x, &g)) return NULL;
    if (x->ndim == 0) return gr__fail(g, GR_ERR_VALUE, "%s: %s is 0-d; it needs an axis", fname, gr__d(x).s);
    a = gr__axis(axis, x->ndim);
    if (a < 0) return gr__fail(g, GR_ERR_VALUE, "%s: axis %d out of range for %s with %d dimensions", fname, axis, gr__d(x).s, x->ndim);
    if (!gr__is_float(x->dtype)) x = gr_cast(x, GR_F64);
    memset(&p, 0, sizeof p);
    p.axis = a;
    return gr__node1(g, op, &p, sizeof p, 1, &x);
}

GR_API gr_var *gr_softmax(gr_var *x, int axis) { return gr__axis_op("gr_softmax", &gr__op_Softmax, x, axis); }
GR_API gr_var *gr_log_softmax(gr_var *x, int axis) { return gr__axis_op("gr_log_softmax", &gr__op_LogSoftmax, x, axis); }

#endif /* GR_NO_NNET */

/* (outer, n, inner) of an array around axis (ops/reduce.c's along-one-axis ops too) */
static GR__UNUSED void gr__axis_split(const gr_array *x, int axis, int64_t *outer, int64_t *n, int64_t *inner) {
    int i;
    *outer = 1; *inner = 1; *n = x->shape[axis];
    for (i = 0; i < axis; i++) *outer *= x->shape[i];
    for (i = axis + 1; i < x->ndim; i++) *inner *= x->shape[i];
}

#ifndef GR_NO_NNET

/* GR_KERNEL gr__softmax */
#define GR__SOFTMAX(fn, T, EXP, LOG) \
    static void fn(int log_out, int64_t outer, int64_t n, int64_t inner, const T *x, T *y) { \
        int64_t o, i, j; \
        for (o = 0; o < outer; o++) \
            for (j = 0; j < inner; j++) { \
                const T *xs = x + o * n * inner + j; \
                T *ys = y + o * n * inner + j; \
                double m = -INFINITY, s = 0; \
                for (i = 0; i < n; i++) if ((double)xs[i * inner] > m) m = (double)xs[i * inner]; \
                if (m == -INFINITY) m = 0; \
                for (i = 0; i < n; i++) { double e = EXP((double)xs[i * inner] - m); s += e; if (!log_out) ys[i * inner] = (T)e; } \
                if (log_out) { double ls = m + LOG(s); for (i = 0; i < n; i++) ys[i * inner] = (T)((double)xs[i * inner] - ls); } \
                else { double inv = 1.0 / s; for (i = 0; i < n; i++) ys[i * inner] = (T)((double)ys[i * inner] * inv); } \
            } \
    }
/* GR_KERNEL gr__softmax_f64 */
GR__SOFTMAX(gr__softmax_f64, double, exp, log)
/* GR_KERNEL gr__softmax_f32 */
GR__SOFTMAX(gr__softmax_f32, float, exp, log)
/* GR_KERNEL_END */

static gr_status gr__softmax_run(const gr_node *node, int log_out, const gr_array *x, gr_array *y) {
    int64_t outer, n, inner;
    gr__axis_split(x, ((const gr__axis_params *)gr__params(node))->axis, &outer, &n, &inner);
    if (x->dtype == GR_F64) gr__softmax_f64(log_out, outer, n, inner, (const double *)x->data, (double *)y->data);
    else gr__softmax_f32(log_out, outer, n, inner, (const float *)x->data, (float *)y->data);
    return GR_OK;
}
static gr_status gr__Softmax_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    return gr__softmax_run(node, 0, in[0], out[0]);
}
static gr_status gr__LogSoftmax_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    return gr__softmax_run(node, 1, in[0], out[0]);
}

static gr_var *gr__sum_keep(gr_var *x, int axis) { return gr_sum_axes(x, 1, &axis, 1); }

/* softmax: J = diag(s) - s s^T (symmetric), so the gradient and the R-op are one formula:
   s * (g - sum_axis(s * g)) */
static gr_var *gr__softmax_jprod(const gr_node *node, gr_var *g) {
    gr_var *s = gr__out(node)[0];
    int axis = ((const gr__axis_params *)gr__params(node))->axis;
    return gr_mul(s, gr_sub(g, gr__sum_keep(gr_mul(s, g), axis)));
}
static gr_status gr__Softmax_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    ig[0] = gr__softmax_jprod(node, og[0]);
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Softmax_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr__softmax_jprod(node, ev[0]);
    return orop[0] ? GR_OK : node->graph->status;
}

/* log_softmax: J = I - 1 s^T. Gradient J^T g = g - s sum_axis(g); R-op J v = v - sum_axis(s v)
   (J v, the true JVP: Aesara's R-op reuses the gradient formula, but J is not symmetric) */
static gr_status gr__LogSoftmax_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    int axis = ((const gr__axis_params *)gr__params(node))->axis;
    gr_var *s = gr_exp(gr__out(node)[0]);
    ig[0] = gr_sub(og[0], gr_mul(s, gr__sum_keep(og[0], axis)));
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__LogSoftmax_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    int axis = ((const gr__axis_params *)gr__params(node))->axis;
    gr_var *s;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    s = gr_exp(gr__out(node)[0]);
    orop[0] = gr_sub(ev[0], gr__sum_keep(gr_mul(s, ev[0]), axis));
    return orop[0] ? GR_OK : node->graph->status;
}

/* log(softmax(x)) -> log_softmax(x): exact where the softmax underflows (src/rewrite.h) */
static gr_var *gr__log_softmax_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    const gr_node *n = gr__owner(in[0]);
    (void)row;
    if (!n || n->op != &gr__op_Softmax) return NULL;
    return gr__replaced(done, gr__rw1(rw, &gr__op_LogSoftmax, gr__params(n), n->params_size, 1, gr__in(n)));
}

/* ==== the losses: CrossEntropy and OneHot ========================================================

   Shapes: logits z (*rows, K) and labels t (*rows, K) -> 0-d, the mean over the N rows (N = the
           product of *rows) of
             sum_k t_k (lse(z) - z_k),   lse(z) = m + log sum_k e^(z_k - m),  m = max_k z_k,
           computed as t_k ((m - z_k) + log sum_k e^(z_k - m)): logits near 1e3 neither overflow nor
           cancel. A term with t_k == 0 counts as 0, so a class masked with a -inf logit stays finite.
           OneHot ids (*rows) I64, ref (*rows, K) -> ref's shape in a float dtype: row r is e_{ids[r]};
           an id outside [0, K) is GR_ERR_RUNTIME naming it.
   gr_crossentropy with I64 class ids builds CrossEntropy(z, OneHot(ids, z)); OneHot carries no
   derivative, so the ids are disconnected. Float labels (one-hot or soft) are differentiable:
     d/dz = (softmax(z) sum_k t_k - t) / N    (softmax(z) - onehot(ids)) / N with ids
     d/dt = -log_softmax(z) / N                                                                 */

typedef struct gr__onehot_params { int dtype; } gr__onehot_params;

GR_API gr_var *gr_crossentropy(gr_var *logits, gr_var *labels) {
    gr_var *args[2];
    gr_graph *g;
    int nd, T, i;
    args[0] = logits; args[1] = labels;
    if (!gr__operands("gr_crossentropy", 2, args, &g)) return NULL;
    nd = logits->ndim;
    if (nd == 0)
        return gr__fail(g, GR_ERR_TYPE, "gr_crossentropy: the logits %s are 0-d; they need a class axis (the last one)", gr__d(logits).s);
    T = gr__is_float(logits->dtype) ? (int)logits->dtype : (int)GR_F64;
    if (labels->dtype == GR_I64) {                   /* one class id per row */
        gr__onehot_params p;
        gr_var *oh[2];
        if (labels->ndim != nd - 1)
            return gr__fail(g, GR_ERR_TYPE, "gr_crossentropy: the class ids %s have %d dimensions; the logits %s %s need %d (one id per row)",
                            gr__d(labels).s, labels->ndim, gr__d(logits).s, gr__vs(logits).s, nd - 1);
        for (i = 0; i < nd - 1; i++)
            if (gr__vshape(labels)[i] >= 0 && gr__vshape(logits)[i] >= 0 && gr__vshape(labels)[i] != gr__vshape(logits)[i])
                return gr__fail(g, GR_ERR_SHAPE, "gr_crossentropy: the class ids %s %s do not match the rows of the logits %s %s",
                                gr__d(labels).s, gr__vs(labels).s, gr__d(logits).s, gr__vs(logits).s);
        args[0] = gr__coerce(logits, T);
        if (!args[0]) return NULL;
        memset(&p, 0, sizeof p);
        p.dtype = T;
        oh[0] = labels; oh[1] = args[0];
        args[1] = gr__node1(g, &gr__op_OneHot, &p, sizeof p, 2, oh);
    } else {                                         /* float (or bool) label rows, one-hot or soft */
        if (labels->ndim != nd)
            return gr__fail(g, GR_ERR_TYPE, "gr_crossentropy: the labels %s have %d dimensions; the logits %s %s have %d (give float "
                            "label rows, or int64 class ids)", gr__d(labels).s, labels->ndim, gr__d(logits).s, gr__vs(logits).s, nd);
        for (i = 0; i < nd; i++)
            if (gr__vshape(labels)[i] >= 0 && gr__vshape(logits)[i] >= 0 && gr__vshape(labels)[i] != gr__vshape(logits)[i])
                return gr__fail(g, GR_ERR_SHAPE, "gr_crossentropy: the labels %s %s do not match the logits %s %s", gr__d(labels).s,
                                gr__vs(labels).s, gr__d(logits).s, gr__vs(logits).s);
        if (labels->dtype == GR_F64) T = GR_F64;
        args[0] = gr__coerce(logits, T);
        args[1] = gr__coerce(labels, T);
    }
    if (!args[0] || !args[1]) return NULL;
    return gr__node1(g, &gr__op_CrossEntropy, NULL, 0, 2, args);
}

/* ---- type and shape rules --------------------------------------------------------------------- */

static gr_status gr__CrossEntropy_infer(const gr_node *node, gr_type *out) {
    const gr_var *z = gr__in(node)[0], *t = gr__in(node)[1];
    int i;
    if (z->ndim < 1 || t->ndim != z->ndim || t->dtype != z->dtype || !gr__is_float(z->dtype))
        return gr__error(node->graph, GR_ERR_TYPE, "CrossEntropy: logits %s (%s, %d-d) and labels %s (%s, %d-d) need one float dtype "
                         "and one ndim of at least 1", gr__d(z).s, gr_dtype_name((gr_dtype)z->dtype), z->ndim, gr__d(t).s,
                         gr_dtype_name((gr_dtype)t->dtype), t->ndim);
    for (i = 0; i < z->ndim; i++)
        if (gr__vshape(z)[i] >= 0 && gr__vshape(t)[i] >= 0 && gr__vshape(z)[i] != gr__vshape(t)[i])
            return gr__error(node->graph, GR_ERR_SHAPE, "CrossEntropy: labels %s %s do not match logits %s %s", gr__d(t).s, gr__vs(t).s,
                             gr__d(z).s, gr__vs(z).s);
    out->dtype = (gr_dtype)z->dtype;
    out->ndim = 0;
    return GR_OK;
}
static gr_status gr__CrossEntropy_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    (void)out;
    for (i = 0; i < in[0]->ndim; i++)
        if (in[0]->shape[i] != in[1]->shape[i])
            return gr_node_error(node, GR_ERR_SHAPE, "labels %s of shape %s do not match logits %s of shape %s", gr__d(gr__in(node)[1]).s,
                                 gr__as(in[1]).s, gr__d(gr__in(node)[0]).s, gr__as(in[0]).s);
    return GR_OK;
}

static gr_status gr__OneHot_infer(const gr_node *node, gr_type *out) {
    const gr_var *ids = gr__in(node)[0], *ref = gr__in(node)[1];
    int i;
    if (ids->dtype != GR_I64 || ref->ndim < 1 || ids->ndim != ref->ndim - 1)
        return gr__error(node->graph, GR_ERR_TYPE, "OneHot: class ids %s (%s, %d-d) need int64 and one dimension less than %s (%d-d)",
                         gr__d(ids).s, gr_dtype_name((gr_dtype)ids->dtype), ids->ndim, gr__d(ref).s, ref->ndim);
    for (i = 0; i < ids->ndim; i++)
        if (gr__vshape(ids)[i] >= 0 && gr__vshape(ref)[i] >= 0 && gr__vshape(ids)[i] != gr__vshape(ref)[i])
            return gr__error(node->graph, GR_ERR_SHAPE, "OneHot: class ids %s %s do not match the rows of %s %s", gr__d(ids).s,
                             gr__vs(ids).s, gr__d(ref).s, gr__vs(ref).s);
    gr_var_type(ref, out);
    out->dtype = (gr_dtype)((const gr__onehot_params *)gr__params(node))->dtype;
    return GR_OK;
}
static gr_status gr__OneHot_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int i;
    for (i = 0; i < in[0]->ndim; i++)
        if (in[0]->shape[i] != in[1]->shape[i])
            return gr_node_error(node, GR_ERR_SHAPE, "class ids %s of shape %s do not match the rows of %s of shape %s", gr__d(gr__in(node)[0]).s,
                                 gr__as(in[0]).s, gr__d(gr__in(node)[1]).s, gr__as(in[1]).s);
    for (i = 0; i < in[1]->ndim; i++) out[0]->shape[i] = in[1]->shape[i];
    return GR_OK;
}

/* ---- kernels ---------------------------------------------------------------------------------- */

/* the sum over the rows of sum_k t_k (lse(z) - z_k), in double */
/* GR_KERNEL gr__xent */
#define GR__XENT(fn, T) \
    static double fn(int64_t rows, int64_t K, const T *z, const T *t) { \
        double total = 0; \
        int64_t r, k; \
        for (r = 0; r < rows; r++) { \
            const T *zr = z + r * K, *tr = t + r * K; \
            double m = -INFINITY, s = 0, log_s, row = 0; \
            for (k = 0; k < K; k++) { double v = (double)zr[k]; if (v > m || v != v) m = v; if (v != v) break; } \
            if (m == -INFINITY) m = 0;                   /* every logit -inf: log_s = -inf, the terms inf or NaN */ \
            for (k = 0; k < K; k++) s += exp((double)zr[k] - m); \
            log_s = log(s); \
            for (k = 0; k < K; k++) if (tr[k] != 0) row += (double)tr[k] * ((m - (double)zr[k]) + log_s); \
            total += row; \
        } \
        return total; \
    }
/* GR_KERNEL gr__xent_f64 */
GR__XENT(gr__xent_f64, double)
/* GR_KERNEL gr__xent_f32 */
GR__XENT(gr__xent_f32, float)
/* GR_KERNEL_END */

/* y (n rows of K) := the rows e_{ids[r]}; returns the first r whose id is outside [0, K), or -1 */
/* GR_KERNEL gr__onehot */
#define GR__ONEHOT(fn, T) \
    static int64_t fn(const int64_t *ids, int64_t n, int64_t K, T *y) { \
        int64_t r; \
        for (r = 0; r < n * K; r++) y[r] = 0; \
        for (r = 0; r < n; r++) { \
            if (ids[r] < 0 || ids[r] >= K) return r; \
            y[r * K + ids[r]] = 1; \
        } \
        return -1; \
    }
/* GR_KERNEL gr__onehot_f64 */
GR__ONEHOT(gr__onehot_f64, double)
/* GR_KERNEL gr__onehot_f32 */
GR__ONEHOT(gr__onehot_f32, float)
/* GR_KERNEL_END */

static gr_status gr__CrossEntropy_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const gr_array *z = in[0];
    int64_t K = z->shape[z->ndim - 1], rows = 1;
    double total;
    int i;
    (void)node;
    for (i = 0; i < z->ndim - 1; i++) rows *= z->shape[i];
    if (z->dtype == GR_F64) total = gr__xent_f64(rows, K, (const double *)z->data, (const double *)in[1]->data);
    else total = gr__xent_f32(rows, K, (const float *)z->data, (const float *)in[1]->data);
    gr__store(out[0]->dtype, out[0]->data, 0, rows ? total / (double)rows : NAN);   /* no rows: a mean of nothing */
    return GR_OK;
}

static gr_status gr__OneHot_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    const int64_t *ids = (const int64_t *)in[0]->data;
    int64_t K = in[1]->shape[in[1]->ndim - 1], r;
    if (out[0]->dtype == GR_F32) r = gr__onehot_f32(ids, in[0]->size, K, (float *)out[0]->data);
    else r = gr__onehot_f64(ids, in[0]->size, K, (double *)out[0]->data);
    if (r >= 0)
        return gr_node_error(node, GR_ERR_RUNTIME, "class id %lld (entry %lld of %s) is out of range for the %lld classes of %s",
                             (long long)ids[r], (long long)r, gr__d(gr__in(node)[0]).s, (long long)K, gr__d(gr__in(node)[1]).s);
    return GR_OK;
}

/* ---- derivative rules ------------------------------------------------------------------------- */

/* *inv_n = 1/N (from the shapes only) and, when dz is given, *dz = softmax(z) sum_k t_k - t; one-hot
   rows made from class ids sum to 1, so there *dz = softmax(z) - t */
static void gr__xent_parts(const gr_node *node, gr_var **inv_n, gr_var **dz) {
    gr_var *z = gr__in(node)[0], *t = gr__in(node)[1], *tsum;
    int last = z->ndim - 1, dt = gr__out(node)[0]->dtype;
    if (gr__owner(t) && gr__owner(t)->op == &gr__op_OneHot) {
        *inv_n = gr__size_ratio(gr__out(node)[0], gr__in(gr__owner(t))[0], dt);   /* 1 / size(ids) */
        if (dz) *dz = gr_sub(gr_softmax(z, last), t);
        return;
    }
    tsum = gr_sum_axes(t, 1, &last, 1);                                /* (*rows, 1): N elements */
    *inv_n = tsum ? gr__size_ratio(gr__out(node)[0], tsum, dt) : NULL;
    if (dz) *dz = gr_sub(gr_mul(gr_softmax(z, last), tsum), t);
}

static gr_status gr__CrossEntropy_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *z = gr__in(node)[0], *inv_n = NULL, *dz = NULL, *scale;
    gr__xent_parts(node, &inv_n, &dz);
    scale = inv_n ? gr_mul(og[0], inv_n) : NULL;
    ig[0] = gr_mul(dz, scale);
    ig[1] = gr_mul(gr_neg(gr_log_softmax(z, z->ndim - 1)), scale);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}

/* the JVP: (sum(dz v) - sum(log_softmax(z) w)) / N for tangents v of z and w of t */
static gr_status gr__CrossEntropy_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *z = gr__in(node)[0], *inv_n = NULL, *dz = NULL, *acc = NULL;
    int has_v = !gr_is_disconnected(ev[0]), has_w = !gr_is_disconnected(ev[1]);
    orop[0] = NULL;
    if (!has_v && !has_w) return GR_OK;
    gr__xent_parts(node, &inv_n, has_v ? &dz : NULL);
    if (has_v) acc = gr_sum(gr_mul(dz, ev[0]));
    if (has_w) {
        gr_var *term = gr_sum(gr_mul(gr_log_softmax(z, z->ndim - 1), ev[1]));
        acc = has_v ? gr_sub(acc, term) : gr_neg(term);
    }
    orop[0] = gr_mul(acc, inv_n);
    return orop[0] ? GR_OK : node->graph->status;
}

/* OneHot: a constant of the class ids, no derivative to anything */
static gr_status gr__OneHot_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    (void)og;
    ig[0] = gr_disconnected_like(gr__in(node)[0]);
    ig[1] = gr_disconnected_like(gr__in(node)[1]);
    return ig[0] && ig[1] ? GR_OK : node->graph->status;
}
static gr_status gr__OneHot_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    (void)node; (void)ev;
    orop[0] = NULL;
    return GR_OK;
}

/* ---- C code generation (gr_fn_emit_c): the same kernels, called from the emitted function -------- */

/* kernels macro (a GR__ macro) and name (its instance) written before the function; returns name */
static const char *gr__nn_need(gr__em *e, const char *macro, const char *name) {
    if (!gr__em_kernel(e, macro) || !gr__em_kernel(e, name)) gr__em_fail(e, GR_ERR_VALUE, "gr_fn_emit_c: no kernel %s", name);
    return name;
}
static gr_status gr__nn_softmax_emit(gr__em *e, const gr_node *node, int log_out, const gr_array *x) {
    int64_t outer, n, inner;
    gr__axis_split(x, ((const gr__axis_params *)gr__params(node))->axis, &outer, &n, &inner);
    gr__em_line(e, "%s(%d, %lld, %lld, %lld, %s, %s);", gr__nn_need(e, "gr__softmax", x->dtype == GR_F32 ? "gr__softmax_f32" : "gr__softmax_f64"), log_out, (long long)outer, (long long)n,
                (long long)inner, gr__em_in(e, 0), gr__em_out(e, 0));
    return GR_OK;
}
static gr_status gr__Softmax_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)out;
    return gr__nn_softmax_emit(e, node, 0, in[0]);
}
static gr_status gr__LogSoftmax_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)out;
    return gr__nn_softmax_emit(e, node, 1, in[0]);
}
/* the mean over the rows; NaN when there are none */
static gr_status gr__CrossEntropy_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    const gr_array *z = in[0];
    int64_t K = z->shape[z->ndim - 1], rows = 1;
    const char *T = gr__em_ctype(out[0]->dtype), *Y = gr__em_out(e, 0);
    int i;
    (void)node;
    for (i = 0; i < z->ndim - 1; i++) rows *= z->shape[i];
    if (!rows) {
        gr__em_line(e, "%s[0] = (%s)NAN;", Y, T);
        return GR_OK;
    }
    gr__em_line(e, "%s[0] = (%s)(%s(%lld, %lld, %s, %s) / (double)%lld);", Y, T, gr__nn_need(e, "gr__xent", z->dtype == GR_F32 ? "gr__xent_f32" : "gr__xent_f64"), (long long)rows,
                (long long)K, gr__em_in(e, 0), gr__em_in(e, 1), (long long)rows);
    return GR_OK;
}
/* an id out of range: GR_ERR_RUNTIME */
static gr_status gr__OneHot_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)node;
    gr__em_line(e, "if (%s(%s, %lld, %lld, %s) >= 0) return %d;", gr__nn_need(e, "gr__onehot", out[0]->dtype == GR_F32 ? "gr__onehot_f32" : "gr__onehot_f64"), gr__em_in(e, 0),
                (long long)in[0]->size, (long long)in[1]->shape[in[1]->ndim - 1], gr__em_out(e, 0), (int)GR_ERR_RUNTIME);
    return GR_OK;
}
#endif /* GR_NO_NNET */
