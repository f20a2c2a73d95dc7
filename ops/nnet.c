/* ops/nnet.c: Softmax and LogSoftmax over one axis, numerically stable.

   Shapes: x -> y of the same shape; the axis is split as (outer, n, inner).
   softmax(x)_i = e^(x_i - m) / sum_j e^(x_j - m),  log_softmax(x)_i = x_i - m - log sum_j e^(x_j - m),
   m = max_j x_j over the axis. */

typedef struct gr__axis_params { int axis; } gr__axis_params;

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

/* (outer, n, inner) of an array around axis */
static void gr__axis_split(const gr_array *x, int axis, int64_t *outer, int64_t *n, int64_t *inner) {
    int i;
    *outer = 1; *inner = 1; *n = x->shape[axis];
    for (i = 0; i < axis; i++) *outer *= x->shape[i];
    for (i = axis + 1; i < x->ndim; i++) *inner *= x->shape[i];
}

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
GR__SOFTMAX(gr__softmax_f64, double, exp, log)
GR__SOFTMAX(gr__softmax_f32, float, exp, log)

static gr_status gr__softmax_run(const gr_node *node, int log_out, const gr_array *x, gr_array *y) {
    int64_t outer, n, inner;
    gr__axis_split(x, ((const gr__axis_params *)node->params)->axis, &outer, &n, &inner);
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
    gr_var *s = node->out[0];
    int axis = ((const gr__axis_params *)node->params)->axis;
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
   (SEMANTICS decision 4: not the gradient formula, which is Aesara's bug) */
static gr_status gr__LogSoftmax_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    int axis = ((const gr__axis_params *)node->params)->axis;
    gr_var *s = gr_exp(node->out[0]);
    ig[0] = gr_sub(og[0], gr_mul(s, gr__sum_keep(og[0], axis)));
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__LogSoftmax_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    int axis = ((const gr__axis_params *)node->params)->axis;
    gr_var *s;
    orop[0] = NULL;
    if (gr_is_disconnected(ev[0])) return GR_OK;
    s = gr_exp(node->out[0]);
    orop[0] = gr_sub(ev[0], gr__sum_keep(gr_mul(s, ev[0]), axis));
    return orop[0] ? GR_OK : node->graph->status;
}
