/* tests/t_deriv.c: runs every derivative spec of every tests/t_*.c file (see tests/deriv.h) and
   checks that every row of the op tables has one. */
#include "deriv.h"
#include "dspecs.h"      /* build/dspecs.h: #define GTD_ALL(X) X(gtd_specs_...) ... */

#define GTD_DECL(s) extern const gtd_spec s[];
GTD_ALL(GTD_DECL)
#undef GTD_DECL

#define GTD_TABLE(s) s,
static const gtd_spec *const gtd_tables[] = { GTD_ALL(GTD_TABLE) NULL };
#undef GTD_TABLE

/* ---- helpers ------------------------------------------------------------------------------------ */

static uint64_t gtd_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static double gtd_uniform(uint64_t *s, double lo, double hi) {
    return lo + (hi - lo) * ((double)(gtd_next(s) >> 11) / 9007199254740992.0);
}
static gr_array *gtd_random(uint64_t *s, gr_dtype dt, int ndim, const int64_t *shape, double lo, double hi) {
    gr_array *a = gr_array_new(dt, ndim, shape);
    int64_t k;
    for (k = 0; a && k < a->size; k++) gr_array_set(a, k, gtd_uniform(s, lo, hi));
    return a;
}
/* the input as verify_grad declares it: dims of size 1 are broadcastable, the rest unknown */
static gr_var *gtd_input_var(gr_graph *g, gr_dtype dt, const gtd_input *in, const char *name) {
    int64_t shape[GR_MAX_NDIM];
    int d;
    for (d = 0; d < in->ndim; d++) shape[d] = in->shape[d] == 1 ? 1 : -1;
    return gr_tensor(g, dt, in->ndim, shape, name);
}
static double gtd_dot(const gr_array *a, const gr_array *b) {
    double s = 0;
    int64_t k;
    for (k = 0; k < a->size && k < b->size; k++) s += gr_array_get(a, k) * gr_array_get(b, k);
    return s;
}
static double gtd_maxabs(const gr_array *a) {
    double m = 0;
    int64_t k;
    for (k = 0; k < a->size; k++) if (fabs(gr_array_get(a, k)) > m) m = fabs(gr_array_get(a, k));
    return m;
}

/* ---- the checks ----------------------------------------------------------------------------------- */

static void gtd_check_verify(const gtd_spec *s, gr_dtype dt, gr_builder build, void *user, const gr_array *const *pts, const char *what) {
    gr_verify_opts o;
    gr_gradient_error e;
    gr_status st;
    memset(&o, 0, sizeof o);
    o.seed = 4321;
    st = gr_verify_grad(build, user, s->n_in, pts, &o, &e);
    gt.checks++;
    if (st != GR_OK) {
        char buf[1024];
        if (st == GR_ERR_GRADIENT) gr_gradient_error_format(&e, buf, sizeof buf); else snprintf(buf, sizeof buf, "%s", gr_status_string(st));
        gt_fail(__FILE__, __LINE__, "%s [%s, %s] %s: %s", s->row, s->label, gr_dtype_name(dt), what, buf);
    }
}

/* the gradient of sum(f) with respect to input 0 (which may not reach it: a linear op's gradient
   does not depend on its inputs, and then zeros are the right second derivative) */
static gr_var *gtd_gradgrad_build(gr_graph *g, gr_var *const *ins, void *user) {
    const gtd_spec *s = (const gtd_spec *)user;
    gr_var *out = s->build(g, ins, s->user), *gx = NULL;
    gr_grad_opts o;
    (void)g;
    memset(&o, 0, sizeof o);
    o.disconnected_inputs = GR_IGNORE;
    if (!out || gr_grad(gr_sum(out), 1, ins, &gx, &o) != GR_OK) return NULL;
    return gx;
}

/* R-op against central differences, and the adjoint identity */
static void gtd_check_rop(const gtd_spec *s, gr_dtype dt, const gr_array *const *pts, uint64_t *rng) {
    int n = s->n_in, i;
    gr_graph *g = gr_graph_new();
    gr_var *ins[GTD_MAX_IN], *vs[GTD_MAX_IN], *all[2 * GTD_MAX_IN + 1], *out, *r = NULL, *u, *lop[GTD_MAX_IN], *outs[2 + GTD_MAX_IN];
    gr_array *vv[GTD_MAX_IN], *ua = NULL, *xp[GTD_MAX_IN], *xm[GTD_MAX_IN];
    const gr_array *args[2 * GTD_MAX_IN + 1], *res[2 + GTD_MAX_IN], *fres[1];
    gr_fn *f_out = NULL, *f_all = NULL;
    gr_rop_opts ro;
    gr_grad_opts lo;
    double h = dt == GR_F64 ? 1e-6 : 3e-3, tol_fd = dt == GR_F64 ? 1e-6 : 3e-2, tol_adj = dt == GR_F64 ? 1e-9 : 2e-3;
    char msg[256];
    snprintf(msg, sizeof msg, "%s [%s, %s]", s->row, s->label, gr_dtype_name(dt));
    for (i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        ins[i] = gtd_input_var(g, dt, &s->in[i], name);
        snprintf(name, sizeof name, "v%d", i);
        vs[i] = gtd_input_var(g, dt, &s->in[i], name);
        vv[i] = gtd_random(rng, dt, s->in[i].ndim, s->in[i].shape, -1, 1);
        xp[i] = gr_array_copy(pts[i]);
        xm[i] = gr_array_copy(pts[i]);
    }
    out = s->build(g, ins, s->user);
    if (!out) { gt_fail(__FILE__, __LINE__, "%s: build failed: %s", msg, gr_graph_message(g)); goto done; }
    f_out = gr_function(n, ins, 1, &out, NULL);
    if (!f_out || gr_call(f_out, pts, fres) != GR_OK) {
        gt_fail(__FILE__, __LINE__, "%s: the function fails: %s %s", msg, gr_graph_message(g), f_out ? gr_fn_message(f_out) : "");
        goto done;
    }
    u = gr_tensor(g, gr_var_dtype(out) == GR_F32 ? GR_F32 : GR_F64, gr_var_ndim(out), NULL, "u");
    ua = gtd_random(rng, gr_var_dtype(u), fres[0]->ndim, fres[0]->shape, -1, 1);
    memset(&ro, 0, sizeof ro);
    ro.disconnected_outputs = (s->flags & GTD_NONDIFF) ? GR_IGNORE : GR_RAISE;
    memset(&lo, 0, sizeof lo);
    lo.disconnected_inputs = GR_IGNORE;
    if (gr_rop(1, &out, n, ins, vs, &r, &ro) != GR_OK || gr_lop(1, &out, n, ins, &u, lop, &lo) != GR_OK) {
        gt_fail(__FILE__, __LINE__, "%s: gr_rop or gr_lop fails: %s", msg, gr_graph_message(g));
        goto done;
    }
    for (i = 0; i < n; i++) { all[i] = ins[i]; all[n + i] = vs[i]; args[n + i] = vv[i]; args[i] = pts[i]; }
    all[2 * n] = u;
    args[2 * n] = ua;
    outs[0] = out; outs[1] = r;
    for (i = 0; i < n; i++) outs[2 + i] = lop[i];
    f_all = gr_function(2 * n + 1, all, 2 + n, outs, NULL);
    if (!f_all || gr_call(f_all, args, res) != GR_OK) {
        gt_fail(__FILE__, __LINE__, "%s: the R-op/L-op function fails: %s %s", msg, gr_graph_message(g), f_all ? gr_fn_message(f_all) : "");
        goto done;
    }
    {   /* the same values without the rewrites (GR_OPT_NONE), up to rounding */
        gr_fn_opts none;
        gr_fn *f_none;
        const gr_array *res_none[2 + GTD_MAX_IN];
        double tol_lvl = dt == GR_F64 ? 1e-10 : 1e-4;
        memset(&none, 0, sizeof none);
        none.optimize = GR_OPT_NONE;
        f_none = gr_function(2 * n + 1, all, 2 + n, outs, &none);
        if (!f_none || gr_call(f_none, args, res_none) != GR_OK)
            gt_fail(__FILE__, __LINE__, "%s: the function fails at GR_OPT_NONE: %s", msg, f_none ? gr_fn_message(f_none) : gr_graph_message(g));
        else {
            int o;
            gt.checks++;
            for (o = 0; o < 2 + n; o++) {
                double scale = 1 + gtd_maxabs(res[o]), e = 0;
                int64_t k;
                if (res_none[o]->size != res[o]->size) { gt_fail(__FILE__, __LINE__, "%s: output %d differs in size between levels", msg, o); continue; }
                for (k = 0; k < res[o]->size; k++) {
                    double d = fabs(gr_array_get(res[o], k) - gr_array_get(res_none[o], k));
                    if (d > e || d != d) e = d;
                }
                if (!(e <= tol_lvl * scale)) gt_fail(__FILE__, __LINE__, "%s: output %d differs by %.3g between GR_OPT_FULL and GR_OPT_NONE", msg, o, e);
            }
        }
        gr_fn_free(f_none);
    }
    {   /* the adjoint identity */
        double lhs = gtd_dot(ua, res[1]), rhs = 0, scale = 1;
        for (i = 0; i < n; i++) rhs += gtd_dot(res[2 + i], vv[i]);
        scale = fabs(lhs) + fabs(rhs) + 1;
        gt.checks++;
        if (!(fabs(lhs - rhs) <= tol_adj * scale))
            gt_fail(__FILE__, __LINE__, "%s: <u, Jv> = %.12g but <J^T u, v> = %.12g", msg, lhs, rhs);
    }
    if (s->flags & GTD_NONDIFF) {
        gt.checks++;
        if (gtd_maxabs(res[1]) != 0) gt_fail(__FILE__, __LINE__, "%s: a non-differentiable op has a nonzero R-op", msg);
        goto done;
    }
    if (!(s->flags & GTD_NO_ROP_FD)) {     /* central differences along v, evaluated in double */
        gr_array *rop = gr_array_copy(res[1]), *fp = NULL;
        double err = 0, scale;
        int64_t k;
        for (i = 0; i < n; i++)
            for (k = 0; k < xp[i]->size; k++) {
                gr_array_set(xp[i], k, gr_array_get(pts[i], k) + h * gr_array_get(vv[i], k));
                gr_array_set(xm[i], k, gr_array_get(pts[i], k) - h * gr_array_get(vv[i], k));
            }
        if (gr_call(f_out, (const gr_array *const *)xp, fres) != GR_OK) { gt_fail(__FILE__, __LINE__, "%s: f(x + hv) fails", msg); gr_array_free(rop); goto done; }
        fp = gr_array_copy(fres[0]);
        if (gr_call(f_out, (const gr_array *const *)xm, fres) != GR_OK) { gt_fail(__FILE__, __LINE__, "%s: f(x - hv) fails", msg); gr_array_free(rop); gr_array_free(fp); goto done; }
        scale = 1 + gtd_maxabs(rop);
        gt.checks++;
        for (k = 0; k < rop->size; k++) {
            /* the step actually taken, for float32 points */
            double fd = (gr_array_get(fp, k) - gr_array_get(fres[0], k)) / (2 * h), e = fabs(fd - gr_array_get(rop, k));
            if (e > err) err = e;
        }
        if (!(err <= tol_fd * scale)) gt_fail(__FILE__, __LINE__, "%s: R-op and central differences differ by %.3g (scale %.3g)", msg, err, scale);
        gr_array_free(rop);
        gr_array_free(fp);
    }
done:
    for (i = 0; i < n; i++) { gr_array_free(vv[i]); gr_array_free(xp[i]); gr_array_free(xm[i]); }
    gr_array_free(ua);
    gr_fn_free(f_out);
    gr_fn_free(f_all);
    gr_graph_free(g);
}

static void gtd_run(gr_dtype dt) {
    int t, k, i;
    for (t = 0; gtd_tables[t]; t++)
        for (k = 0; gtd_tables[t][k].row; k++) {
            const gtd_spec *s = &gtd_tables[t][k];
            gr_array *pts[GTD_MAX_IN];
            uint64_t rng = 777 + (uint64_t)k * 31 + (uint64_t)t * 1009;
            if (dt == GR_F32 && (s->flags & GTD_F64_ONLY)) continue;
            for (i = 0; i < s->n_in; i++) pts[i] = gtd_random(&rng, dt, s->in[i].ndim, s->in[i].shape, s->in[i].lo, s->in[i].hi);
            gtd_check_verify(s, dt, s->build, s->user, (const gr_array *const *)pts, "gradient");
            gtd_check_rop(s, dt, (const gr_array *const *)pts, &rng);
            if ((s->flags & GTD_GRADGRAD) && !(s->flags & GTD_NONDIFF))
                gtd_check_verify(s, dt, gtd_gradgrad_build, (void *)s, (const gr_array *const *)pts, "gradient of the gradient");
            for (i = 0; i < s->n_in; i++) gr_array_free(pts[i]);
        }
}

TEST(test_deriv_f64) { gtd_run(GR_F64); }
TEST(test_deriv_f32) { gtd_run(GR_F32); }

/* every row of both tables is named by some spec */
#define GTD_EW_NAME(name, ...) #name,
#define GTD_ST_NAME(Name, ...) #Name,
static const char *const gtd_rows[] = { GR_ELEMWISE_OPS(GTD_EW_NAME) GR_STRUCT_OPS(GTD_ST_NAME) NULL };
TEST(test_deriv_rows_have_specs) {
    int r, t, k;
    for (r = 0; gtd_rows[r]; r++) {
        int found = 0;
        for (t = 0; gtd_tables[t] && !found; t++)
            for (k = 0; gtd_tables[t][k].row; k++) if (strcmp(gtd_tables[t][k].row, gtd_rows[r]) == 0) found = 1;
        CHECK_MSG(found, "op %s has no derivative spec: add one to a GTD_SPECS table (tests/deriv.h)", gtd_rows[r]);
    }
}

SUITE(suite_deriv) = { CASE(test_deriv_rows_have_specs), CASE(test_deriv_f64), CASE(test_deriv_f32), END_SUITE };

/* ---- a few specs ------------------------------------------------------------------------------------ */

static gr_var *gtd_b_sin(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_sin(x[0]); }
static gr_var *gtd_b_add(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_add(x[0], x[1]); }
static gr_var *gtd_b_dot(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_dot(x[0], x[1]); }

/* a Jacobian differentiated again: the pullback's dot runs row by row (Batched), so this checks
   Batched's own gradient and R-op, with one batched operand and one shared by every row */
static gr_var *gtd_b_jac(gr_graph *g, gr_var *const *x, void *u) {
    gr_var *J = NULL, *xv = x[1];
    (void)g; (void)u;
    if (gr_jacobian(gr_dot(x[0], gr_tanh(xv)), 1, &xv, &J, NULL) != GR_OK) return NULL;
    return J;
}

/* elementwise chains, which gr_function fuses into one pass: the derivatives through Fused nodes */
static gr_var *gtd_b_chain(gr_graph *g, gr_var *const *x, void *u) {
    (void)u;
    return gr_add(gr_mul(gr_exp(gr_mul(gr_sin(x[0]), x[1])), gr_tanh(x[1])), gr_div(x[0], gr_add(gr_sqr(x[1]), gr_const(g, 1))));
}

GTD_SPECS(gtd_specs_basic) = {
    { "Fused", "exp(sin(a) b) tanh(b) + a / (b^2 + 1), (3,4) (4,)", gtd_b_chain, NULL, 2, { GTD_IN(2, 3, 4, -1, 1), GTD_IN(1, 4, 0, -1, 1) }, GTD_GRADGRAD },
    { "Fused", "the same, (3,1) (1,4)", gtd_b_chain, NULL, 2, { GTD_IN(2, 3, 1, -1, 1), GTD_IN(2, 1, 4, -1, 1) }, GTD_GRADGRAD },
    { "Fused", "the same, 0-d", gtd_b_chain, NULL, 2, { GTD_IN(0, 0, 0, -1, 1), GTD_IN(0, 0, 0, -1, 1) }, GTD_GRADGRAD },
    { "Batched", "jacobian(dot(A, tanh x), x) wrt A and x", gtd_b_jac, NULL, 2, { GTD_IN(2, 3, 4, -1, 1), GTD_IN(1, 4, 0, -1, 1) }, 0 },
    { "sin", "matrix", gtd_b_sin, NULL, 1, { GTD_IN(2, 3, 4, -3, 3) }, GTD_GRADGRAD },
    { "sin", "0-d", gtd_b_sin, NULL, 1, { GTD_IN(0, 0, 0, -3, 3) }, GTD_GRADGRAD },
    { "add", "(3,4) + (4,)", gtd_b_add, NULL, 2, { GTD_IN(2, 3, 4, -2, 2), GTD_IN(1, 4, 0, -2, 2) }, 0 },
    { "add", "(3,1) + (1,4)", gtd_b_add, NULL, 2, { GTD_IN(2, 3, 1, -2, 2), GTD_IN(2, 1, 4, -2, 2) }, 0 },
    { "Dot", "(3,4).(4,2)", gtd_b_dot, NULL, 2, { GTD_IN(2, 3, 4, -1, 1), GTD_IN(2, 4, 2, -1, 1) }, 0 },
    { "Dot", "(4,).(4,2)", gtd_b_dot, NULL, 2, { GTD_IN(1, 4, 0, -1, 1), GTD_IN(2, 4, 2, -1, 1) }, 0 },
    GTD_END
};
