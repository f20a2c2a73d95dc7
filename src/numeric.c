/* src/numeric.c: finite differences and gr_verify_grad, as Aesara's numeric_grad and verify_grad.

   One-sided differences g_k = (f(x + eps e_k) - f(x)) / eps, eps 1e-7 for F64 and 3e-4 for F32
   (the largest among the inputs); errors abs = |a - b|, rel = abs / max(|a| + |b|, 1e-8); a
   gradient fails only where both exceed their tolerance (1e-4 for F64, 1e-2 for F32). */

struct gr_numeric_grad {
    int n;
    gr_array **gf;               /* the numeric gradient of each argument, F64 */
    double tol;                  /* the default tolerance of the least precise argument */
};

static double gr__type_eps(int dt) { return dt == GR_F32 ? 3e-4 : 1e-7; }
static double gr__type_tol(int dt) { return dt == GR_F32 ? 1e-2 : 1e-4; }

GR_API void gr_numeric_grad_free(gr_numeric_grad *ng) {
    int i;
    if (!ng) return;
    for (i = 0; i < ng->n; i++) gr_array_free(ng->gf[i]);
    GR_FREE(ng->gf);
    GR_FREE(ng);
}

/* the scalar f(pt) as a double; NaN if the call fails */
static double gr__eval_scalar(gr_fn *f, const gr_array *const *pt, gr_status *st) {
    const gr_array *out[1];
    *st = gr_call(f, pt, out);
    if (*st != GR_OK) return NAN;
    return gr_array_get(out[0], 0);
}

/* gr_numeric_grad_new, with the status of a failure in *status (the message goes to f) */
static gr_numeric_grad *gr__numeric_grad_new(gr_fn *f, int n, const gr_array *const *pt, double eps, gr_status *status) {
    gr_numeric_grad *ng = NULL;
    gr_array **work = NULL;
    double f0, max_eps = 0, tol = 0;
    int i;
    gr_status st;
    *status = GR_ERR_VALUE;
    if (!f) return NULL;
    if (n != f->n_in || n < 1 || !pt || f->n_out != 1 || f->slots[f->out_slot[0]].arr.ndim != 0) {
        gr__fn_error(f, GR_ERR_VALUE, "gr_numeric_grad_new: needs a function of the %d given points with one 0-d output", n);
        return NULL;
    }
    for (i = 0; i < n; i++) {
        if (!pt[i] || !gr__array_valid(pt[i])) { gr__fn_error(f, GR_ERR_VALUE, "gr_numeric_grad_new: point %d is NULL or malformed", i); return NULL; }
        if (!gr__is_float(pt[i]->dtype)) {
            *status = gr__fn_error(f, GR_ERR_TYPE, "gr_numeric_grad_new: point %d is %s; finite differences need float points", i,
                                   gr_dtype_name(pt[i]->dtype));
            return NULL;
        }
        if (gr__type_eps(pt[i]->dtype) > max_eps) max_eps = gr__type_eps(pt[i]->dtype);
        if (gr__type_tol(pt[i]->dtype) > tol) tol = gr__type_tol(pt[i]->dtype);
    }
    if (eps == 0) eps = max_eps;
    ng = (gr_numeric_grad *)gr__calloc(1, sizeof *ng);
    work = (gr_array **)gr__calloc((size_t)n, sizeof(gr_array *));
    if (!ng || !work) goto nomem;
    ng->gf = (gr_array **)gr__calloc((size_t)n, sizeof(gr_array *));
    if (!ng->gf) goto nomem;
    ng->n = n;
    ng->tol = tol;
    for (i = 0; i < n; i++) {
        work[i] = gr_array_copy(pt[i]);
        ng->gf[i] = gr_array_new(GR_F64, pt[i]->ndim, pt[i]->shape);
        if (!work[i] || !ng->gf[i]) goto nomem;
    }
    f0 = gr__eval_scalar(f, (const gr_array *const *)work, &st);
    if (st != GR_OK) goto fail;
    for (i = 0; i < n; i++) {
        int64_t k;
        for (k = 0; k < work[i]->size; k++) {
            double x = gr_array_get(work[i], k), fk;
            gr_array_set(work[i], k, x + eps);
            fk = gr__eval_scalar(f, (const gr_array *const *)work, &st);
            gr_array_set(work[i], k, x);
            if (st != GR_OK) goto fail;
            ((double *)ng->gf[i]->data)[k] = (fk - f0) / eps;
        }
    }
    for (i = 0; i < n; i++) gr_array_free(work[i]);
    GR_FREE(work);
    *status = GR_OK;
    return ng;
nomem:
    st = gr__fn_error(f, GR_ERR_NOMEM, "gr_numeric_grad_new: out of memory");
fail:                                            /* st: the failure (a failed call of f: its status) */
    *status = st;
    for (i = 0; work && i < n; i++) gr_array_free(work[i]);
    GR_FREE(work);
    gr_numeric_grad_free(ng);
    return NULL;
}

GR_API gr_numeric_grad *gr_numeric_grad_new(gr_fn *f, int n, const gr_array *const *pt, double eps) {
    gr_status st;
    return gr__numeric_grad_new(f, n, pt, eps, &st);
}

GR_API const gr_array *gr_numeric_grad_get(const gr_numeric_grad *ng, int i) {
    return ng && i >= 0 && i < ng->n ? ng->gf[i] : NULL;
}

GR_API void gr_abs_rel_err(double a, double b, double *abs_err, double *rel_err) {
    double ae = fabs(a - b), denom = fabs(a) + fabs(b);
    if (denom < 1e-8) denom = 1e-8;
    if (abs_err) *abs_err = ae;
    if (rel_err) *rel_err = ae / denom;
}

static void gr__where_fill(gr_gradient_error *w, int arg, int64_t pos, const gr_array *shape_of, double v1, double v2,
                           double ae, double re, double at, double rt) {
    int d;
    if (!w) return;
    memset(w, 0, sizeof *w);
    w->arg = arg;
    w->err_pos = pos;
    w->ndim = shape_of ? shape_of->ndim : 0;
    for (d = 0; shape_of && d < shape_of->ndim; d++) w->shape[d] = shape_of->shape[d];
    w->val1 = v1; w->val2 = v2;
    w->abs_err = ae; w->rel_err = re;
    w->abs_tol = at; w->rel_tol = rt;
}

GR_API double gr_numeric_grad_max_err(const gr_numeric_grad *ng, const gr_array *const *g_pt, double abs_tol, double rel_tol,
                                      gr_gradient_error *where) {
    double best = -1;
    int i, d;
    if (!ng || !g_pt) { gr__where_fill(where, -1, -1, NULL, NAN, NAN, NAN, NAN, abs_tol, rel_tol); return INFINITY; }
    if (abs_tol == 0) abs_tol = ng->tol;
    if (rel_tol == 0) rel_tol = ng->tol;
    for (i = 0; i < ng->n; i++) {
        const gr_array *a = g_pt[i], *num = ng->gf[i];
        int64_t k;
        int same = a && a->ndim == num->ndim && a->size == num->size;
        for (d = 0; same && d < a->ndim; d++) if (a->shape[d] != num->shape[d]) same = 0;
        if (!same) {                                   /* the argument has the wrong shape */
            gr__where_fill(where, i, -1, num, NAN, NAN, INFINITY, INFINITY, abs_tol, rel_tol);
            return INFINITY;
        }
        for (k = 0; k < a->size; k++) {
            double v1 = gr_array_get(a, k), v2 = ((const double *)num->data)[k], ae, re, scaled;
            gr_abs_rel_err(v1, v2, &ae, &re);
            if (!isfinite(ae) || !isfinite(re)) {
                gr__where_fill(where, i, k, num, v1, v2, ae, re, abs_tol, rel_tol);
                return INFINITY;
            }
            scaled = ae / abs_tol < re / rel_tol ? ae / abs_tol : re / rel_tol;
            if (scaled > best) {
                best = scaled;
                gr__where_fill(where, i, k, num, v1, v2, ae, re, abs_tol, rel_tol);
            }
        }
    }
    if (best < 0) { gr__where_fill(where, -1, -1, NULL, 0, 0, 0, 0, abs_tol, rel_tol); best = 0; }
    return best;
}

GR_API int gr_gradient_error_format(const gr_gradient_error *e, char *buf, size_t size) {
    char shape[200];
    if (!e || !buf || !size) return 0;
    gr__shape_str(shape, sizeof shape, e->ndim, e->shape);
    return snprintf(buf, size,
                    "GradientError: numeric gradient and analytic gradient exceed tolerance:\n"
                    "        At position %lld of argument %d with shape %s,\n"
                    "            val1 = %f      ,  val2 = %f\n"
                    "            abs. error = %f,  abs. tolerance = %f\n"
                    "            rel. error = %f,  rel. tolerance = %f",
                    (long long)e->err_pos, e->arg, shape, e->val1, e->val2, e->abs_err, e->abs_tol, e->rel_err, e->rel_tol);
}

/* ---- gr_verify_grad --------------------------------------------------------------------------- */

static uint64_t gr__splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static double gr__uniform(uint64_t *state) { return (double)(gr__splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);   /* 2^-53 */ }

/* u drawn uniform in [0.5, 1.5) */
static void gr__projection(gr_array *u, uint64_t *rng) {
    int64_t k;
    for (k = 0; k < u->size; k++) gr_array_set(u, k, gr__uniform(rng) + 0.5);
}

GR_API gr_status gr_verify_grad(gr_builder fun, void *user, int n, const gr_array *const *pt, const gr_verify_opts *opts,
                                gr_gradient_error *err) {
    gr_verify_opts o;
    gr_graph *g = NULL;
    gr_var **inputs = NULL, **grads = NULL, *out, *u_var, *cost;
    gr_fn *out_fn = NULL, *cost_fn = NULL, *grad_fn = NULL;
    gr_array *u = NULL;
    const gr_array **gvals = NULL;
    gr_numeric_grad *ng = NULL;
    gr_grad_opts go;
    uint64_t rng;
    double tol = 0;
    int i, t, n_tests;
    gr_status st = GR_OK;
    if (err) memset(err, 0, sizeof *err);
    if (!fun || n < 1 || !pt) return GR_ERR_VALUE;
    for (i = 0; i < n; i++) {
        if (!pt[i] || !gr__array_valid(pt[i])) return GR_ERR_VALUE;
        if (!gr__is_float(pt[i]->dtype)) return GR_ERR_TYPE;
        if (gr__type_tol(pt[i]->dtype) > tol) tol = gr__type_tol(pt[i]->dtype);
    }
    if (opts) o = *opts; else memset(&o, 0, sizeof o);
    n_tests = o.n_tests > 0 ? o.n_tests : 2;
    if (o.abs_tol == 0) o.abs_tol = tol;
    if (o.rel_tol == 0) o.rel_tol = tol;
    rng = o.seed ? o.seed : 666u;
    g = gr_graph_new();
    inputs = (gr_var **)gr__calloc((size_t)n, sizeof(gr_var *));
    grads = (gr_var **)gr__calloc((size_t)n, sizeof(gr_var *));
    gvals = (const gr_array **)gr__calloc((size_t)n, sizeof(gr_array *));
    if (!g || !inputs || !grads || !gvals) { st = GR_ERR_NOMEM; goto done; }
    for (i = 0; i < n; i++) {
        int64_t shape[GR_MAX_NDIM];
        char name[32];
        int d;
        for (d = 0; d < pt[i]->ndim; d++) shape[d] = pt[i]->shape[d] == 1 ? 1 : -1;
        snprintf(name, sizeof name, "input %d", i);
        inputs[i] = gr_tensor(g, pt[i]->dtype, pt[i]->ndim, shape, name);
    }
    /* the builder gets every input; making them fails only out of memory (not logged: before the builder's log) */
    if (g->status != GR_OK) { st = g->status; goto done; }
    out = fun(g, inputs, user);
    if (!out || g->status != GR_OK) { st = g->status != GR_OK ? g->status : GR_ERR_VALUE; goto report; }
    if (out->kind != GR__VK_OUT && out->kind != GR__VK_INPUT && out->kind != GR__VK_CONST && out->kind != GR__VK_SHARED) {
        st = gr__error(g, GR_ERR_TYPE, "the builder returned a gradient marker");
        goto report;
    }
    /* the output's shape, for the projection */
    out_fn = gr_function(n, inputs, 1, &out, NULL);
    if (!out_fn) { st = g->status; goto report; }
    {
        const gr_array *ov[1];
        int use32 = o.cast_to_output_type && out->dtype == GR_F32;
        if ((st = gr_call(out_fn, pt, ov)) != GR_OK) { gr__error(g, st, "%s", out_fn->message); goto report; }
        u = gr_array_new(use32 ? GR_F32 : GR_F64, ov[0]->ndim, ov[0]->shape);
        if (!u) { st = GR_ERR_NOMEM; goto done; }
    }
    gr__projection(u, &rng);
    u_var = gr_shared(g, u, "random projection");
    cost = gr_sum(gr_mul(u_var, out));
    memset(&go, 0, sizeof go);
    go.disconnected_inputs = GR_IGNORE;
    if (!cost || (st = gr_grad(cost, n, inputs, grads, &go)) != GR_OK) { st = g->status != GR_OK ? g->status : st; goto report; }
    cost_fn = gr_function(n, inputs, 1, &cost, NULL);
    grad_fn = cost_fn ? gr_function(n, inputs, n, grads, NULL) : NULL;
    if (!cost_fn || !grad_fn) { st = g->status; goto report; }
    for (t = 0; t < n_tests; t++) {
        gr_gradient_error where;
        double max_err;
        if (t > 0) {                                  /* a new projection between tests */
            gr__projection(u, &rng);
            if ((st = gr_shared_set(u_var, u)) != GR_OK) goto report;
        }
        ng = gr__numeric_grad_new(cost_fn, n, pt, o.eps, &st);
        if (!ng) { gr__error(g, st, "%s", cost_fn->message); goto report; }   /* out of memory, or the call's failure */
        if ((st = gr_call(grad_fn, pt, gvals)) != GR_OK) { gr__error(g, st, "%s", grad_fn->message); goto report; }
        max_err = gr_numeric_grad_max_err(ng, gvals, o.abs_tol, o.rel_tol, &where);
        gr_numeric_grad_free(ng);
        ng = NULL;
        if (max_err > 1) {
            if (err) *err = where;
            st = GR_ERR_GRADIENT;
            goto done;
        }
    }
    goto done;
report:
    if (g && g->status != GR_OK) gr__log(g, "gr_verify_grad: %s", g->message);
    if (st == GR_OK) st = GR_ERR_VALUE;
done:
    gr_numeric_grad_free(ng);
    gr_fn_free(out_fn); gr_fn_free(cost_fn); gr_fn_free(grad_fn);
    gr_array_free(u);
    GR_FREE(inputs); GR_FREE(grads); GR_FREE((void *)gvals);
    gr_graph_free(g);
    return st;
}
