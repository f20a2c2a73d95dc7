/* tests/ops_graphop.c: the ops of ops/graphop.c: ops made of graphs (gr_op_from_graph, the
   OpFromGraph row).
     - Aesara's TestOpFromGraph (tests/compile/test_builders.py) ported with closed forms, each
       inlined and not, at both optimize levels: straightforward, size changes, gradients and the
       gradient of the gradient, shared variables (read, updated elsewhere, differentiated through
       the op), gradient and R-op overrides (a rule of C, or one applying another op made of a
       graph; an R-op from a gradient override alone), the connection pattern (derived and given),
       nesting, shapes from the inner graph without running it;
     - what upstream gets wrong: outputs that do not reach the cost (pytensor#723), overrides that
       read variables of the enclosing graph (Theano#5685);
     - the adjoint identity through the op, Jacobians and Hessians (its batching rule), an inner loop
       and an inner conditional (shapes known by running), the op on a side of a conditional, the op
       freed before the graphs and functions applying it, printing, every error path;
     - values against plain C in every dtype and derivative specs (gradient, R-op, adjoint). */
#include "ops.h"

/* ---- helpers ------------------------------------------------------------------------------------ */

static int64_t go_size(int ndim, const int64_t *shape) {
    int64_t n = 1;
    int d;
    for (d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* an op of the given graph, or NULL (reported) */
static gr_op_def *go_op(const char *name, int n_in, gr_var *const *ins, int n_out, gr_var *const *outs, int inl) {
    gr_graph_op_opts o;
    gr_op_def *op;
    memset(&o, 0, sizeof o);
    o.inline_graph = inl;
    op = gr_op_from_graph(name, n_in, ins, n_out, outs, &o);
    CHECK_MSG(op != NULL, "gr_op_from_graph '%s': %s", name, outs && outs[0] ? gr_graph_message(gr_var_graph(outs[0])) : "");
    return op;
}
static gr_var *go_apply1(gr_op_def *op, int n, gr_var *const *xs) {
    gr_var *o[4] = { NULL, NULL, NULL, NULL };
    if (!op) return NULL;
    CHECK_STATUS(gr_apply(op, NULL, 0, n, xs, o), GR_OK);
    return o[0];
}

/* compiles outs of ins at level and calls it on vals; res[k]: a copy of output k. 1 when it worked */
static int go_call(int level, int n_in, gr_var *const *ins, gr_array *const *vals, int n_out, gr_var *const *outs, gr_array **res,
                   const char *label) {
    gr_fn_opts fo;
    gr_fn *f;
    const gr_array *r[8];
    gr_status st;
    int k;
    for (k = 0; k < n_out; k++) res[k] = NULL;
    memset(&fo, 0, sizeof fo);
    fo.optimize = level ? GR_OPT_FULL : GR_OPT_NONE;
    f = gr_function(n_in, ins, n_out, outs, &fo);
    CHECK_MSG(f != NULL, "%s: gr_function: %s", label, n_out > 0 && outs[0] ? gr_graph_message(gr_var_graph(outs[0])) : "");
    if (!f) return 0;
    st = gr_call(f, (const gr_array *const *)vals, r);
    CHECK_MSG(st == GR_OK, "%s: gr_call: %s", label, gr_fn_message(f));
    for (k = 0; st == GR_OK && k < n_out; k++) res[k] = gr_array_copy(r[k]);
    gr_fn_free(f);
    return st == GR_OK;
}
static void go_free(int n, gr_array **a) {
    int k;
    for (k = 0; k < n; k++) { gr_array_free(a[k]); a[k] = NULL; }
}
/* a has shape (ndim, shape) and values want within tol (relative to max(1, |want|)) */
static void go_near_at(const char *file, int line, const char *label, const gr_array *a, int ndim, const int64_t *shape, const double *want,
                       double tol) {
    int64_t i, n = go_size(ndim, shape);
    int d;
    gt.checks++;
    if (!a) { gt_fail(file, line, "%s: no result", label); return; }
    if (a->ndim != ndim) { gt_fail(file, line, "%s: ndim %d, want %d", label, a->ndim, ndim); return; }
    for (d = 0; d < ndim; d++)
        if (a->shape[d] != shape[d]) { gt_fail(file, line, "%s: axis %d has %lld, want %lld", label, d, (long long)a->shape[d], (long long)shape[d]); return; }
    for (i = 0; i < n; i++) {
        double got = gr_array_get(a, i), w = want[i];
        if (!(fabs(got - w) <= tol * (fabs(w) > 1 ? fabs(w) : 1))) {
            gt_fail(file, line, "%s: element %lld is %.17g, want %.17g", label, (long long)i, got, w);
            return;
        }
    }
}
#define GO_NEAR(label, a, nd, shape, want, tol) go_near_at(__FILE__, __LINE__, label, a, nd, shape, want, tol)

static double go_v(const gr_array *a, int64_t i) { return gr_array_get(a, i); }
static gr_array *go_rand(gtf_rng *r, int ndim, const int64_t *shape, double lo, double hi) {
    return gtf_random(r, GR_F64, ndim, shape, lo, hi);
}
static const char *go_mode(int inl, int level) {
    static const char *m[4] = { "not inlined, GR_OPT_NONE", "not inlined, GR_OPT_FULL", "inlined, GR_OPT_NONE", "inlined, GR_OPT_FULL" };
    return m[2 * (inl != 0) + (level != 0)];
}

/* ---- TestOpFromGraph ------------------------------------------------------------------------------ */

/* op(x, y, z) = x + y z; f = op(x, y, z) - op(y, z, x) = x + y z - y - z x */
static void test_ofg_straightforward(void) {
    int64_t sh[2] = { 2, 3 };
    int inl, lv;
    gtf_rng rng = { 101 };
    gr_array *xa = go_rand(&rng, 2, sh, -2, 2), *ya = go_rand(&rng, 2, sh, -2, 2), *za = go_rand(&rng, 2, sh, -2, 2);
    for (inl = 0; inl < 2; inl++) {
        gr_graph *ig = gr_graph_new(), *g = gr_graph_new();
        gr_var *x = gr_matrix(ig, GR_F64, "x"), *y = gr_matrix(ig, GR_F64, "y"), *z = gr_matrix(ig, GR_F64, "z");
        gr_var *e = gr_add(x, gr_mul(y, z)), *xyz[3] = { x, y, z };
        gr_op_def *op = go_op("op", 3, xyz, 1, &e, inl);
        gr_var *a = gr_matrix(g, GR_F64, "a"), *b = gr_matrix(g, GR_F64, "b"), *c = gr_matrix(g, GR_F64, "c");
        gr_var *abc[3] = { a, b, c }, *bca[3] = { b, c, a };
        gr_var *f = gr_sub(go_apply1(op, 3, abc), go_apply1(op, 3, bca));
        gr_array *vals[3] = { xa, ya, za }, *res[1];
        double want[6];
        int64_t i;
        gr_graph_free(ig);                           /* the op keeps its own copy */
        for (i = 0; i < 6; i++) want[i] = go_v(xa, i) + go_v(ya, i) * go_v(za, i) - go_v(ya, i) - go_v(za, i) * go_v(xa, i);
        for (lv = 0; lv < 2; lv++) {
            if (go_call(lv, 3, abc, vals, 1, &f, res, go_mode(inl, lv))) GO_NEAR(go_mode(inl, lv), res[0], 2, sh, want, 1e-14);
            go_free(1, res);
        }
        gr_op_free(op);
        gr_graph_free(g);
    }
    gr_array_free(xa); gr_array_free(ya); gr_array_free(za);
}

/* op(x, y) = x . y; op(x, op(y, z)) with (2,3), (3,4), (4,5): a (2,5) result */
static void test_ofg_size_changes(void) {
    int64_t s23[2] = { 2, 3 }, s34[2] = { 3, 4 }, s45[2] = { 4, 5 }, s25[2] = { 2, 5 };
    gtf_rng rng = { 102 };
    gr_array *xa = go_rand(&rng, 2, s23, -1, 1), *ya = go_rand(&rng, 2, s34, -1, 1), *za = go_rand(&rng, 2, s45, -1, 1);
    double yz[20], want[10];
    int inl, lv, i, j, k;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 5; j++) { yz[i * 5 + j] = 0; for (k = 0; k < 4; k++) yz[i * 5 + j] += go_v(ya, i * 4 + k) * go_v(za, k * 5 + j); }
    for (i = 0; i < 2; i++)
        for (j = 0; j < 5; j++) { want[i * 5 + j] = 0; for (k = 0; k < 3; k++) want[i * 5 + j] += go_v(xa, i * 3 + k) * yz[k * 5 + j]; }
    for (inl = 0; inl < 2; inl++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_matrix(g, GR_F64, "x"), *y = gr_matrix(g, GR_F64, "y"), *e = gr_dot(x, y), *xy[2] = { x, y };
        gr_op_def *op = go_op("dot", 2, xy, 1, &e, inl);
        gr_var *a = gr_matrix(g, GR_F64, "a"), *b = gr_matrix(g, GR_F64, "b"), *c = gr_matrix(g, GR_F64, "c");
        gr_var *bc[2] = { b, c }, *inner = go_apply1(op, 2, bc), *a_in[2] = { a, inner }, *f = go_apply1(op, 2, a_in), *abc[3] = { a, b, c };
        gr_array *vals[3] = { xa, ya, za }, *res[1];
        for (lv = 0; lv < 2; lv++) {
            if (go_call(lv, 3, abc, vals, 1, &f, res, go_mode(inl, lv))) GO_NEAR(go_mode(inl, lv), res[0], 2, s25, want, 1e-13);
            go_free(1, res);
        }
        gr_op_free(op);
        gr_graph_free(g);
    }
    gr_array_free(xa); gr_array_free(ya); gr_array_free(za);
}

/* op(x, y, z) = x + y z; f = op - d sum(op)/dy = x + y z - z; again: x + y z - 2 z (test_grad, test_grad_grad) */
static void test_ofg_grad_and_grad_grad(void) {
    int64_t sh[2] = { 2, 2 };
    gtf_rng rng = { 103 };
    gr_array *xa = go_rand(&rng, 2, sh, -2, 2), *ya = go_rand(&rng, 2, sh, -2, 2), *za = go_rand(&rng, 2, sh, -2, 2);
    int inl, lv, times;
    for (inl = 0; inl < 2; inl++)
        for (times = 1; times <= 2; times++) {
            gr_graph *g = gr_graph_new();
            gr_var *x = gr_matrix(g, GR_F64, "x"), *y = gr_matrix(g, GR_F64, "y"), *z = gr_matrix(g, GR_F64, "z");
            gr_var *e = gr_add(x, gr_mul(y, z)), *xyz[3] = { x, y, z };
            gr_op_def *op = go_op("op", 3, xyz, 1, &e, inl);
            gr_var *f = go_apply1(op, 3, xyz);
            gr_array *vals[3] = { xa, ya, za }, *res[1];
            double want[4];
            int t, i;
            for (t = 0; t < times; t++) f = gr_sub(f, gr_grad1(gr_sum(f), y));
            for (i = 0; i < 4; i++) want[i] = go_v(xa, i) + go_v(ya, i) * go_v(za, i) - times * go_v(za, i);
            for (lv = 0; lv < 2; lv++) {
                if (go_call(lv, 3, xyz, vals, 1, &f, res, go_mode(inl, lv))) GO_NEAR(go_mode(inl, lv), res[0], 2, sh, want, 1e-14);
                go_free(1, res);
            }
            gr_op_free(op);
            gr_graph_free(g);
        }
    gr_array_free(xa); gr_array_free(ya); gr_array_free(za);
}

/* op(x, y, z) = x + y z + s, s shared: op(x, y, z) - op(y, z, x) = x - y + y z - z x; the value of s
   read at every call (gr_shared_set, and an update by another function); d sum(op)/ds = ones, and
   op - d sum(op)/dy = x + y z + s - z (test_shared, test_shared_grad) */
static void test_ofg_shared(void) {
    int64_t sh[2] = { 2, 2 };
    gtf_rng rng = { 104 };
    gr_array *xa = go_rand(&rng, 2, sh, -2, 2), *ya = go_rand(&rng, 2, sh, -2, 2), *za = go_rand(&rng, 2, sh, -2, 2);
    gr_array *sa = go_rand(&rng, 2, sh, -2, 2);
    int inl, lv;
    for (inl = 0; inl < 2; inl++)
        for (lv = 0; lv < 2; lv++) {
            gr_graph *ig = gr_graph_new(), *g = gr_graph_new();
            gr_var *s = gr_shared(ig, sa, "s");
            gr_var *x = gr_matrix(ig, GR_F64, "x"), *y = gr_matrix(ig, GR_F64, "y"), *z = gr_matrix(ig, GR_F64, "z");
            gr_var *e = gr_add(gr_add(x, gr_mul(y, z)), s), *xyz[3] = { x, y, z };
            gr_op_def *op = go_op("op", 3, xyz, 1, &e, inl);
            gr_var *a = gr_matrix(g, GR_F64, "a"), *b = gr_matrix(g, GR_F64, "b"), *c = gr_matrix(g, GR_F64, "c");
            gr_var *abc[3] = { a, b, c }, *bca[3] = { b, c, a }, *o1 = go_apply1(op, 3, abc);
            gr_var *f = gr_sub(o1, go_apply1(op, 3, bca)), *fg = gr_sub(o1, gr_grad1(gr_sum(o1), b));
            gr_array *vals[3] = { xa, ya, za }, *res[2];
            double want[4], want2[4], s2[4] = { 1, -2, 3, 0.5 };
            int64_t i;
            gr_var *outs[2];
            gr_graph_free(ig);                       /* the storage of s lives on in the op and in g */
            outs[0] = f;
            outs[1] = fg;
            for (i = 0; i < 4; i++) {
                want[i] = go_v(xa, i) - go_v(ya, i) + go_v(ya, i) * go_v(za, i) - go_v(za, i) * go_v(xa, i);
                want2[i] = go_v(xa, i) + go_v(ya, i) * go_v(za, i) + go_v(sa, i) - go_v(za, i);
            }
            if (go_call(lv, 3, abc, vals, 2, outs, res, go_mode(inl, lv))) {
                GO_NEAR(go_mode(inl, lv), res[0], 2, sh, want, 1e-14);
                GO_NEAR(go_mode(inl, lv), res[1], 2, sh, want2, 1e-14);
            }
            go_free(2, res);
            {   /* the shared variable of g standing for s: gr_shared_set, an update by another function, and
                   the gradient with respect to it through the op */
                gr_var *sv = gr_node_input(gr_var_owner(o1), 3), *one = gr_const(g, 1.0), *ds = NULL;
                gr_array *s2a = gtl_matrix(GR_F64, 2, 2, s2);
                gr_update u;
                gr_fn_opts fo;
                gr_fn *fu;
                const gr_array *none[1];
                double w3[4], ones[4] = { 1, 1, 1, 1 };
                CHECK(sv != NULL && gr_shared_get(sv) != NULL);
                CHECK(gr_node_input(gr_var_owner(gr_node_input(gr_var_owner(f), 1)), 3) == sv);   /* one variable for both applications */
                CHECK_STATUS(gr_shared_set(sv, s2a), GR_OK);
                memset(&fo, 0, sizeof fo);
                u.shared = sv;
                u.value = gr_add(sv, one);
                fo.updates = &u;
                fo.n_updates = 1;
                fu = gr_function(0, NULL, 0, NULL, &fo);
                CHECK(fu != NULL);
                if (fu) CHECK_STATUS(gr_call(fu, NULL, none), GR_OK);   /* s := s2 + 1 */
                gr_fn_free(fu);
                for (i = 0; i < 4; i++) w3[i] = go_v(xa, i) + go_v(ya, i) * go_v(za, i) + s2[i] + 1;
                if (go_call(lv, 3, abc, vals, 1, &o1, res, "after an update elsewhere")) GO_NEAR("after an update elsewhere", res[0], 2, sh, w3, 1e-14);
                go_free(1, res);
                ds = gr_grad1(gr_sum(o1), sv);
                if (go_call(lv, 3, abc, vals, 1, &ds, res, "d sum(op)/ds")) GO_NEAR("d sum(op)/ds", res[0], 2, sh, ones, 0);
                go_free(1, res);
                gr_array_free(s2a);
            }
            gr_op_free(op);
            gr_graph_free(g);
        }
    gr_array_free(xa); gr_array_free(ya); gr_array_free(za); gr_array_free(sa);
}

/* ---- overrides ---------------------------------------------------------------------------------- */

/* Aesara's go: d(x y) replaced by (2 g y, 1.5 g x) */
static gr_status go_mul_grad(void *user, gr_var *const *in, gr_var *const *out, gr_var *const *seeds, gr_var **res) {
    gr_graph *g = gr_var_graph(in[0]);
    (void)user; (void)out;
    res[0] = gr_mul(gr_mul(seeds[0], in[1]), gr_const(g, 2.0));
    res[1] = gr_mul(gr_mul(seeds[0], in[0]), gr_const(g, 1.5));
    return GR_OK;
}
/* the same rule as an op made of a graph (user: the op, of inputs x, y, g) */
static gr_status go_mul_grad_op(void *user, gr_var *const *in, gr_var *const *out, gr_var *const *seeds, gr_var **res) {
    gr_var *xs[3];
    (void)out;
    xs[0] = in[0]; xs[1] = in[1]; xs[2] = seeds[0];
    return gr_apply((const gr_op_def *)user, NULL, 0, 3, xs, res);
}

/* test_grad_override: the gradient of sum(op(x, y)) is (2 y, 1.5 x), by a rule and by an op; the R-op
   is the double pullback through the rule: du 2 y + dv 1.5 x */
static void test_ofg_grad_override(void) {
    int64_t n = 4;
    gtf_rng rng = { 105 };
    gr_array *xa = go_rand(&rng, 1, &n, -2, 2), *ya = go_rand(&rng, 1, &n, -2, 2), *ua = go_rand(&rng, 1, &n, -2, 2), *va = go_rand(&rng, 1, &n, -2, 2);
    int inl, lv, by_op;
    for (by_op = 0; by_op < 2; by_op++)
        for (inl = 0; inl < 2; inl++) {
            gr_graph *g = gr_graph_new();
            gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *dz = gr_vector(g, GR_F64, "dz");
            gr_var *xy[2] = { x, y }, *xyd[3] = { x, y, dz }, *e = gr_mul(x, y), *gg[2] = { NULL, NULL };
            gr_op_def *gop = NULL, *op;
            gr_graph_op_opts o;
            gr_var *a = gr_vector(g, GR_F64, "a"), *b = gr_vector(g, GR_F64, "b"), *u = gr_vector(g, GR_F64, "u"), *v = gr_vector(g, GR_F64, "v");
            gr_var *ab[2] = { a, b }, *uv[2] = { u, v }, *z, *dw = NULL, *all[4] = { a, b, u, v }, *outs[3];
            gr_array *vals[4] = { xa, ya, ua, va }, *res[3];
            double wa[4], wb[4], wr[4];
            int i;
            CHECK_STATUS(go_mul_grad(NULL, xy, NULL, &dz, gg), GR_OK);
            gop = go_op("mul_grad", 3, xyd, 2, gg, inl);
            memset(&o, 0, sizeof o);
            o.inline_graph = inl;
            o.grad = by_op ? go_mul_grad_op : go_mul_grad;
            o.grad_user = gop;
            op = gr_op_from_graph("mul", 2, xy, 1, &e, &o);
            CHECK(op != NULL);
            z = go_apply1(op, 2, ab);
            CHECK_STATUS(gr_grad(gr_sum(z), 2, ab, gg, NULL), GR_OK);
            CHECK_STATUS(gr_rop(1, &z, 2, ab, uv, &dw, NULL), GR_OK);
            outs[0] = gg[0]; outs[1] = gg[1]; outs[2] = dw;
            for (i = 0; i < 4; i++) {
                wa[i] = 2 * go_v(ya, i);
                wb[i] = 1.5 * go_v(xa, i);
                wr[i] = go_v(ua, i) * 2 * go_v(ya, i) + go_v(va, i) * 1.5 * go_v(xa, i);
            }
            for (lv = 0; lv < 2; lv++) {
                if (go_call(lv, 4, all, vals, 3, outs, res, go_mode(inl, lv))) {
                    GO_NEAR("override: d/dx", res[0], 1, &n, wa, 1e-15);
                    GO_NEAR("override: d/dy", res[1], 1, &n, wb, 1e-15);
                    GO_NEAR("override: R-op by the double pullback", res[2], 1, &n, wr, 1e-14);
                }
                go_free(3, res);
            }
            gr_op_free(op);
            gr_op_free(gop);
            gr_graph_free(g);
        }
    gr_array_free(xa); gr_array_free(ya); gr_array_free(ua); gr_array_free(va);
}

/* test_lop_override: sigmoid with the gradient 2 y (1 - y) g, from the op's output */
static gr_status go_sig_lop(void *user, gr_var *const *in, gr_var *const *out, gr_var *const *seeds, gr_var **res) {
    gr_graph *g = gr_var_graph(in[0]);
    (void)user;
    res[0] = gr_mul(gr_mul(gr_mul(gr_const(g, 2.0), out[0]), gr_sub(gr_const(g, 1.0), out[0])), seeds[0]);
    return GR_OK;
}
static void test_ofg_lop_override(void) {
    int64_t n = 5;
    gtf_rng rng = { 106 };
    gr_array *xa = go_rand(&rng, 1, &n, -3, 3), *res[1];
    int inl, lv, i;
    double want[5];
    for (i = 0; i < 5; i++) { double s = 1 / (1 + exp(-go_v(xa, i))); want[i] = 2 * s * (1 - s); }
    for (inl = 0; inl < 2; inl++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_div(gr_const(g, 1.0), gr_add(gr_const(g, 1.0), gr_exp(gr_neg(x))));
        gr_graph_op_opts o;
        gr_op_def *op;
        gr_var *a = gr_vector(g, GR_F64, "a"), *d;
        memset(&o, 0, sizeof o);
        o.inline_graph = inl;
        o.grad = go_sig_lop;
        op = gr_op_from_graph("sigmoid", 1, &x, 1, &y, &o);
        d = gr_grad1(gr_sum(go_apply1(op, 1, &a)), a);
        for (lv = 0; lv < 2; lv++) {
            if (go_call(lv, 1, &a, &xa, 1, &d, res, go_mode(inl, lv))) GO_NEAR("lop override", res[0], 1, &n, want, 1e-14);
            go_free(1, res);
        }
        gr_op_free(op);
        gr_graph_free(g);
    }
    gr_array_free(xa);
}

/* test_rop: op(a, M) = a . M; Rop(op(x, W), x, du) = du . W; the R-op with respect to W too: x . dW */
static void test_ofg_rop(void) {
    int64_t n3 = 3, s34[2] = { 3, 4 }, n4 = 4;
    gtf_rng rng = { 107 };
    gr_array *xa = go_rand(&rng, 1, &n3, -1, 1), *Wa = go_rand(&rng, 2, s34, -1, 1), *ua = go_rand(&rng, 1, &n3, -1, 1);
    gr_array *Va = go_rand(&rng, 2, s34, -1, 1), *res[2];
    double w1[4], w2[4];
    int inl, lv, i, j;
    for (j = 0; j < 4; j++) {
        w1[j] = w2[j] = 0;
        for (i = 0; i < 3; i++) {
            w1[j] += go_v(ua, i) * go_v(Wa, i * 4 + j);
            w2[j] += go_v(ua, i) * go_v(Wa, i * 4 + j) + go_v(xa, i) * go_v(Va, i * 4 + j);
        }
    }
    for (inl = 0; inl < 2; inl++) {
        gr_graph *g = gr_graph_new();
        gr_var *a = gr_vector(g, GR_F64, "a"), *M = gr_matrix(g, GR_F64, "M"), *b = gr_dot(a, M), *aM[2] = { a, M };
        gr_op_def *op = go_op("matmul", 2, aM, 1, &b, inl);
        gr_var *x = gr_vector(g, GR_F64, "x"), *W = gr_matrix(g, GR_F64, "W"), *du = gr_vector(g, GR_F64, "du"), *dW = gr_matrix(g, GR_F64, "dW");
        gr_var *xW[2] = { x, W }, *y = go_apply1(op, 2, xW), *ev[2] = { du, dW }, *r[2] = { NULL, NULL }, *all[4] = { x, W, du, dW };
        gr_array *vals[4] = { xa, Wa, ua, Va };
        CHECK_STATUS(gr_rop(1, &y, 1, &x, &du, &r[0], NULL), GR_OK);
        CHECK_STATUS(gr_rop(1, &y, 2, xW, ev, &r[1], NULL), GR_OK);
        for (lv = 0; lv < 2; lv++) {
            if (go_call(lv, 4, all, vals, 2, r, res, go_mode(inl, lv))) {
                GO_NEAR("Rop wrt x", res[0], 1, &n4, w1, 1e-14);
                GO_NEAR("Rop wrt x and W", res[1], 1, &n4, w2, 1e-14);
            }
            go_free(2, res);
        }
        gr_op_free(op);
        gr_graph_free(g);
    }
    gr_array_free(xa); gr_array_free(Wa); gr_array_free(ua); gr_array_free(Va);
}

/* Aesara's ro: the R-op of x y replaced by u y 2 + x v 1.5 (by a rule, and by an op of (x, y, u, v)) */
static gr_status go_mul_rop(void *user, gr_var *const *in, gr_var *const *out, gr_var *const *ev, gr_var **res) {
    gr_graph *g = gr_var_graph(in[0]);
    gr_var *u = ev[0], *v = ev[1];
    (void)user; (void)out;
    if (gr_is_disconnected(u)) u = gr_zeros_like(in[0]);
    if (gr_is_disconnected(v)) v = gr_zeros_like(in[1]);
    res[0] = gr_add(gr_mul(gr_mul(u, in[1]), gr_const(g, 2.0)), gr_mul(gr_mul(in[0], v), gr_const(g, 1.5)));
    return GR_OK;
}
static gr_status go_mul_rop_op(void *user, gr_var *const *in, gr_var *const *out, gr_var *const *ev, gr_var **res) {
    gr_var *xs[4];
    (void)out;
    xs[0] = in[0]; xs[1] = in[1];
    xs[2] = gr_is_disconnected(ev[0]) ? gr_zeros_like(in[0]) : ev[0];
    xs[3] = gr_is_disconnected(ev[1]) ? gr_zeros_like(in[1]) : ev[1];
    return gr_apply((const gr_op_def *)user, NULL, 0, 4, xs, res);
}
/* test_rop_override: always honoured (PyTensor ignores it unless asked) */
static void test_ofg_rop_override(void) {
    int64_t n = 4;
    gtf_rng rng = { 108 };
    gr_array *xa = go_rand(&rng, 1, &n, -2, 2), *ya = go_rand(&rng, 1, &n, -2, 2), *ua = go_rand(&rng, 1, &n, -2, 2), *va = go_rand(&rng, 1, &n, -2, 2);
    gr_array *res[2];
    double w[4], wx[4];
    int inl, lv, by_op, i;
    for (i = 0; i < 4; i++) {
        w[i] = go_v(ua, i) * go_v(ya, i) * 2 + go_v(xa, i) * go_v(va, i) * 1.5;
        wx[i] = go_v(ua, i) * go_v(ya, i) * 2;
    }
    for (by_op = 0; by_op < 2; by_op++)
        for (inl = 0; inl < 2; inl++) {
            gr_graph *g = gr_graph_new();
            gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *u = gr_vector(g, GR_F64, "u"), *v = gr_vector(g, GR_F64, "v");
            gr_var *xy[2] = { x, y }, *xyuv[4] = { x, y, u, v }, *e = gr_mul(x, y), *ro = NULL, *uv[2] = { u, v };
            gr_op_def *rop_op, *op;
            gr_graph_op_opts o;
            gr_var *z, *r[2] = { NULL, NULL };
            gr_array *vals[4] = { xa, ya, ua, va };
            CHECK_STATUS(go_mul_rop(NULL, xy, NULL, uv, &ro), GR_OK);
            rop_op = go_op("mul_rop", 4, xyuv, 1, &ro, inl);
            memset(&o, 0, sizeof o);
            o.inline_graph = inl;
            o.rop = by_op ? go_mul_rop_op : go_mul_rop;
            o.rop_user = rop_op;
            op = gr_op_from_graph("mul", 2, xy, 1, &e, &o);
            z = go_apply1(op, 2, xy);
            CHECK_STATUS(gr_rop(1, &z, 2, xy, uv, &r[0], NULL), GR_OK);
            CHECK_STATUS(gr_rop(1, &z, 1, &x, &u, &r[1], NULL), GR_OK);    /* y's eval point: a disconnected marker */
            for (lv = 0; lv < 2; lv++) {
                if (go_call(lv, 4, xyuv, vals, 2, r, res, go_mode(inl, lv))) {
                    GO_NEAR("rop override", res[0], 1, &n, w, 1e-14);
                    GO_NEAR("rop override, x alone", res[1], 1, &n, wx, 1e-14);
                }
                go_free(2, res);
            }
            gr_op_free(op);
            gr_op_free(rop_op);
            gr_graph_free(g);
        }
    gr_array_free(xa); gr_array_free(ya); gr_array_free(ua); gr_array_free(va);
}

/* test_connection_pattern_override: op(x, y) = y + 1, pattern x -> out, y -/-> out, gradient (g, disconnected) */
static gr_status go_f1_back(void *user, gr_var *const *in, gr_var *const *out, gr_var *const *seeds, gr_var **res) {
    (void)user; (void)out;
    res[0] = seeds[0];
    res[1] = gr_disconnected_like(in[1]);
    return GR_OK;
}
static void test_ofg_connection_pattern_override(void) {
    int64_t n = 5;
    static const unsigned char pattern[2] = { 1, 0 };
    double ones[5] = { 1, 1, 1, 1, 1 }, zeros[5] = { 0, 0, 0, 0, 0 };
    gr_array *xa = gtl_matrix(GR_F64, 1, 5, ones), *res[2];
    int inl, lv;
    xa->ndim = 1;
    xa->shape[0] = 5;
    for (inl = 0; inl < 2; inl++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *e = gr_add(y, gr_const(g, 1.0)), *xy[2] = { x, y };
        gr_graph_op_opts o;
        gr_op_def *op;
        gr_var *c, *gr2[2] = { NULL, NULL };
        gr_grad_opts go;
        gr_array *vals[2] = { xa, xa };
        memset(&o, 0, sizeof o);
        o.inline_graph = inl;
        o.grad = go_f1_back;
        o.connection_pattern = pattern;
        op = gr_op_from_graph("f1", 2, xy, 1, &e, &o);
        CHECK(op != NULL);
        c = go_apply1(op, 2, xy);
        /* y is disconnected by the pattern: an error by default, zeros when ignored */
        CHECK_STATUS(gr_grad(gr_sum(c), 1, &y, gr2, NULL), GR_ERR_DISCONNECTED_INPUT);
        gr_graph_clear_error(g);
        memset(&go, 0, sizeof go);
        go.disconnected_inputs = GR_IGNORE;
        CHECK_STATUS(gr_grad(gr_sum(c), 2, xy, gr2, &go), GR_OK);
        for (lv = 0; lv < 2; lv++) {
            if (go_call(lv, 2, xy, vals, 2, gr2, res, go_mode(inl, lv))) {
                GO_NEAR("pattern override: d/dx", res[0], 1, &n, ones, 0);
                GO_NEAR("pattern override: d/dy", res[1], 1, &n, zeros, 0);
            }
            go_free(2, res);
        }
        gr_op_free(op);
        gr_graph_free(g);
    }
    gr_array_free(xa);
}

/* test_connection_pattern: op(x, y, z) = (x y, y z): x -> 0, y -> 0 1, z -> 1, seen by the gradient
   drivers; nested in another op, the pattern composes */
static void test_ofg_connection_pattern(void) {
    int inl;
    for (inl = 0; inl < 2; inl++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_matrix(g, GR_F64, "x"), *y = gr_matrix(g, GR_F64, "y"), *z = gr_matrix(g, GR_F64, "z");
        gr_var *xyz[3] = { x, y, z }, *o2[2], *res[2] = { NULL, NULL }, *r3[3] = { NULL, NULL, NULL };
        gr_op_def *op1, *op2;
        gr_grad_opts go;
        o2[0] = gr_mul(x, y);
        o2[1] = gr_mul(y, z);
        op1 = go_op("op1", 3, xyz, 2, o2, inl);
        if (op1) CHECK_STATUS(gr_apply(op1, NULL, 0, 3, xyz, res), GR_OK);
        memset(&go, 0, sizeof go);
        go.disconnected_inputs = GR_IGNORE;
        go.return_disconnected = GR_RETURN_DISCONNECTED;
        CHECK_STATUS(gr_grad(gr_sum(res[0]), 3, xyz, r3, &go), GR_OK);
        CHECK(r3[0] && !gr_is_disconnected(r3[0]) && r3[1] && !gr_is_disconnected(r3[1]) && r3[2] && gr_is_disconnected(r3[2]));
        CHECK_STATUS(gr_grad(gr_sum(res[1]), 3, xyz, r3, &go), GR_OK);
        CHECK(r3[0] && gr_is_disconnected(r3[0]) && r3[1] && !gr_is_disconnected(r3[1]) && r3[2] && !gr_is_disconnected(r3[2]));
        CHECK_STATUS(gr_grad(gr_sum(res[0]), 1, &z, r3, NULL), GR_ERR_DISCONNECTED_INPUT);
        gr_graph_clear_error(g);
        {   /* op2(x, y, z) = (op1(x, y, z)[0] * 2, x): y and z reach output 0, z nothing */
            gr_var *p[2], *q[2] = { NULL, NULL };
            p[0] = gr_mul(res[0], gr_const(g, 2.0));
            p[1] = x;
            op2 = go_op("op2", 3, xyz, 2, p, !inl);
            if (op2) CHECK_STATUS(gr_apply(op2, NULL, 0, 3, xyz, q), GR_OK);
            CHECK_STATUS(gr_grad(gr_add(gr_sum(q[0]), gr_sum(q[1])), 3, xyz, r3, &go), GR_OK);
            CHECK(r3[0] && !gr_is_disconnected(r3[0]) && r3[1] && !gr_is_disconnected(r3[1]) && r3[2] && gr_is_disconnected(r3[2]));
            CHECK_STATUS(gr_grad(gr_sum(q[1]), 3, xyz, r3, &go), GR_OK);
            CHECK(r3[0] && !gr_is_disconnected(r3[0]) && r3[1] && gr_is_disconnected(r3[1]) && r3[2] && gr_is_disconnected(r3[2]));
            gr_op_free(op2);
        }
        gr_op_free(op1);
        gr_graph_free(g);
    }
}

/* test_nested: op_ft(x, y) = (x + y, x - y), op_ift(x, y) = ((x + y)/2, (x - y)/2): op_ift(op_ft(a, b))
   = (a, b); the same inside a third op, with every combination of inlining; its gradient is ones */
static void test_ofg_nested(void) {
    int64_t n = 3;
    gtf_rng rng = { 109 };
    gr_array *xa = go_rand(&rng, 1, &n, -2, 2), *ya = go_rand(&rng, 1, &n, -2, 2), *res[4];
    double wx[3], wy[3], ones[3] = { 1, 1, 1 };
    int mode, lv, i;
    for (i = 0; i < 3; i++) { wx[i] = go_v(xa, i); wy[i] = go_v(ya, i); }
    for (mode = 0; mode < 8; mode++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *xy[2] = { x, y }, *ft[2], *ift[2], *m[2] = { NULL, NULL };
        gr_var *r[2] = { NULL, NULL }, *outer[2] = { NULL, NULL }, *gg[2] = { NULL, NULL }, *outs[4];
        gr_op_def *op_ft, *op_ift, *op_id = NULL;
        gr_array *vals[2] = { xa, ya };
        ft[0] = gr_add(x, y);
        ft[1] = gr_sub(x, y);
        ift[0] = gr_div(ft[0], gr_const(g, 2.0));
        ift[1] = gr_div(ft[1], gr_const(g, 2.0));
        op_ft = go_op("ft", 2, xy, 2, ft, mode & 1);
        op_ift = go_op("ift", 2, xy, 2, ift, (mode >> 1) & 1);
        if (op_ft && op_ift) {
            CHECK_STATUS(gr_apply(op_ft, NULL, 0, 2, xy, m), GR_OK);
            CHECK_STATUS(gr_apply(op_ift, NULL, 0, 2, m, r), GR_OK);
            op_id = go_op("identity", 2, xy, 2, r, (mode >> 2) & 1);
        }
        gr_op_free(op_ft);                           /* the nodes keep them */
        gr_op_free(op_ift);
        if (op_id) CHECK_STATUS(gr_apply(op_id, NULL, 0, 2, xy, outer), GR_OK);
        CHECK_STATUS(gr_grad(gr_add(gr_sum(outer[0]), gr_sum(outer[1])), 1, &x, gg, NULL), GR_OK);
        CHECK_STATUS(gr_grad(gr_sum(outer[1]), 1, &y, gg + 1, NULL), GR_OK);
        outs[0] = r[0]; outs[1] = outer[1]; outs[2] = gg[0]; outs[3] = gg[1];
        for (lv = 0; lv < 2; lv++) {
            if (go_call(lv, 2, xy, vals, 4, outs, res, "nested")) {
                GO_NEAR("nested: x", res[0], 1, &n, wx, 1e-15);
                GO_NEAR("nested in an op: y", res[1], 1, &n, wy, 1e-15);
                GO_NEAR("nested: d(sum both)/dx", res[2], 1, &n, ones, 1e-15);
                GO_NEAR("nested: d(sum y)/dy", res[3], 1, &n, ones, 1e-15);
            }
            go_free(4, res);
        }
        gr_op_free(op_id);
        gr_graph_free(g);
    }
    gr_array_free(xa); gr_array_free(ya);
}

/* a user's op counting its performs: y = x */
static gr_status go_count_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int *count = *(int *const *)gr_node_params(node);
    (*count)++;
    if (in[0]->size) memcpy(out[0]->data, in[0]->data, (size_t)in[0]->size * sizeof(double));
    return GR_OK;
}
static const gr_op_def go_counter = { "Counter", 1, 1, NULL, NULL, NULL, go_count_perform, NULL, NULL, NULL };

/* test_infer_shape: op(x, y) = x - counter(y): its output's shape comes from the inner graph's shape
   rules (the counter runs once a call, by the op's perform only); static shapes are kept */
static void test_ofg_infer_shape(void) {
    int64_t s34[2] = { 3, 4 }, s23[2] = { 2, 3 };
    gtf_rng rng = { 110 };
    gr_array *xa = go_rand(&rng, 2, s34, -1, 1), *ya = go_rand(&rng, 2, s34, -1, 1), *res[1];
    double want[12];
    int inl, lv, i;
    for (i = 0; i < 12; i++) want[i] = go_v(xa, i) - go_v(ya, i);
    for (inl = 0; inl < 2; inl++)
        for (lv = 0; lv < 2; lv++) {
            gr_graph *g = gr_graph_new();
            int count = 0, *pc = &count;
            gr_var *x = gr_matrix(g, GR_F64, "x"), *y = gr_matrix(g, GR_F64, "y"), *cy = NULL, *e, *xy[2] = { x, y }, *o;
            gr_var *xs = gr_tensor(g, GR_F64, 2, s23, "xs"), *es = gr_exp(xs), *os;
            gr_op_def *op, *ops;
            CHECK_STATUS(gr_apply(&go_counter, &pc, sizeof pc, 1, &y, &cy), GR_OK);
            e = gr_sub(x, cy);
            op = go_op("sub", 2, xy, 1, &e, inl);
            o = go_apply1(op, 2, xy);
            if (go_call(lv, 2, xy, (gr_array *[]){ xa, ya }, 1, &o, res, go_mode(inl, lv))) {
                GO_NEAR("infer_shape", res[0], 2, s34, want, 0);
                CHECK_EQ_INT(count, 1);
            }
            go_free(1, res);
            ops = go_op("exp", 1, &xs, 1, &es, inl);
            os = go_apply1(ops, 1, &xs);
            if (os) gtf_static_shape_is(os, 2, s23, "the static shape through the op");
            {   /* operands of static shapes given to an op of unknown ones: the inner graph typed on them */
                gr_var *p = gr_tensor(g, GR_F64, 2, s34, "p"), *q = gr_tensor(g, GR_F64, 2, s34, "q"), *pq[2] = { p, q }, *r = NULL;
                gr_var *q3 = gr_tensor(g, GR_F64, 2, s23, "q3"), *pq3[2] = { p, q3 };
                r = go_apply1(op, 2, pq);
                if (r) gtf_static_shape_is(r, 2, s34, "static shapes given to the op's inner graph");
                CHECK_STATUS(gr_apply(op, NULL, 0, 2, pq3, &r), GR_ERR_SHAPE);          /* (3,4) - (2,3) */
                CHECK_CONTAINS(gr_graph_message(g), "op 'sub'");
                CHECK(r == NULL);
                gr_graph_clear_error(g);
            }
            gr_op_free(op);
            gr_op_free(ops);
            gr_graph_free(g);
        }
    gr_array_free(xa); gr_array_free(ya);
}

/* ---- upstream's bugs ------------------------------------------------------------------------------- */

/* pytensor#723: op(x, y) = (x y, x + y); a cost of output 1 alone, and of output 0 alone (the other
   output's gradient disconnected); an op with a constant output and an input it does not read */
static void test_ofg_disconnected_outputs(void) {
    int64_t n = 3;
    gtf_rng rng = { 111 };
    gr_array *xa = go_rand(&rng, 1, &n, -2, 2), *ya = go_rand(&rng, 1, &n, -2, 2), *res[4];
    double ones[3] = { 1, 1, 1 }, wx[3], wy[3];
    int inl, lv, i;
    for (i = 0; i < 3; i++) { wx[i] = go_v(ya, i); wy[i] = go_v(xa, i); }
    for (inl = 0; inl < 2; inl++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *xy[2] = { x, y }, *o[2], *r[2] = { NULL, NULL };
        gr_var *g1[2] = { NULL, NULL }, *g0[2] = { NULL, NULL }, *outs[4];
        gr_op_def *op;
        gr_array *vals[2] = { xa, ya };
        o[0] = gr_mul(x, y);
        o[1] = gr_add(x, y);
        op = go_op("two", 2, xy, 2, o, inl);
        if (op) CHECK_STATUS(gr_apply(op, NULL, 0, 2, xy, r), GR_OK);
        CHECK_STATUS(gr_grad(gr_sum(r[1]), 2, xy, g1, NULL), GR_OK);
        CHECK_STATUS(gr_grad(gr_sum(r[0]), 2, xy, g0, NULL), GR_OK);
        outs[0] = g1[0]; outs[1] = g1[1]; outs[2] = g0[0]; outs[3] = g0[1];
        for (lv = 0; lv < 2; lv++) {
            if (go_call(lv, 2, xy, vals, 4, outs, res, go_mode(inl, lv))) {
                GO_NEAR("output 1 alone: d/dx", res[0], 1, &n, ones, 0);
                GO_NEAR("output 1 alone: d/dy", res[1], 1, &n, ones, 0);
                GO_NEAR("output 0 alone: d/dx", res[2], 1, &n, wx, 0);
                GO_NEAR("output 0 alone: d/dy", res[3], 1, &n, wy, 0);
            }
            go_free(4, res);
        }
        gr_op_free(op);
        {   /* an output that reads no input (a constant) and an input that reaches nothing: the cost of
               both outputs has the gradient 2 for x and none for y (zeros when ignored) */
            gr_var *p[2], *q[2] = { NULL, NULL }, *gz[2] = { NULL, NULL }, *twos3[1];
            gr_grad_opts go;
            double twos[3] = { 2, 2, 2 }, zeros[3] = { 0, 0, 0 };
            gr_op_def *op3;
            p[0] = gr_mul(x, gr_const(g, 2.0));
            p[1] = gr_const(g, 3.0);
            op3 = go_op("const_out", 2, xy, 2, p, inl);
            if (op3) CHECK_STATUS(gr_apply(op3, NULL, 0, 2, xy, q), GR_OK);
            memset(&go, 0, sizeof go);
            go.disconnected_inputs = GR_IGNORE;
            CHECK_STATUS(gr_grad(gr_add(gr_sum(q[0]), q[1]), 2, xy, gz, &go), GR_OK);
            CHECK_STATUS(gr_grad(gr_add(gr_sum(q[0]), q[1]), 1, &y, twos3, NULL), GR_ERR_DISCONNECTED_INPUT);
            gr_graph_clear_error(g);
            if (go_call(1, 2, xy, vals, 2, gz, res, "a constant output")) {
                GO_NEAR("a constant output: d/dx", res[0], 1, &n, twos, 0);
                GO_NEAR("a constant output: d/dy", res[1], 1, &n, zeros, 0);
            }
            go_free(2, res);
            gr_op_free(op3);
        }
        gr_graph_free(g);
    }
    gr_array_free(xa); gr_array_free(ya);
}

/* Theano#5685: an override reading a variable of the enclosing graph (W, through user): the gradient
   of op(x) = 3 x is replaced by g W; d sum(op(x) W)/dW = 3 x + W x ... reaches W through the rule */
static gr_status go_grad_times_w(void *user, gr_var *const *in, gr_var *const *out, gr_var *const *seeds, gr_var **res) {
    (void)in; (void)out;
    res[0] = gr_mul(seeds[0], (gr_var *)user);
    return GR_OK;
}
static void test_ofg_override_reads_outer(void) {
    int64_t n = 4;
    gtf_rng rng = { 112 };
    gr_array *xa = go_rand(&rng, 1, &n, -2, 2), *wa = go_rand(&rng, 1, &n, -2, 2), *res[2];
    double wx[4], ww[4];
    int inl, lv, i;
    for (inl = 0; inl < 2; inl++) {
        gr_graph *ig = gr_graph_new(), *g = gr_graph_new();
        gr_var *x = gr_vector(ig, GR_F64, "x"), *e = gr_mul(x, gr_const(ig, 3.0));
        gr_var *a = gr_vector(g, GR_F64, "a"), *W = gr_vector(g, GR_F64, "W"), *aw[2] = { a, W }, *y, *c, *gg[2] = { NULL, NULL };
        gr_graph_op_opts o;
        gr_op_def *op;
        gr_array *vals[2] = { xa, wa };
        memset(&o, 0, sizeof o);
        o.inline_graph = inl;
        o.grad = go_grad_times_w;
        o.grad_user = W;
        op = gr_op_from_graph("triple", 1, &x, 1, &e, &o);
        gr_graph_free(ig);
        y = go_apply1(op, 1, &a);
        c = gr_sum(gr_mul(y, W));                    /* d/da = W * W (the rule's g W with g = W); d/dW = 3 a */
        CHECK_STATUS(gr_grad(c, 2, aw, gg, NULL), GR_OK);
        for (i = 0; i < 4; i++) { wx[i] = go_v(wa, i) * go_v(wa, i); ww[i] = 3 * go_v(xa, i); }
        for (lv = 0; lv < 2; lv++) {
            if (go_call(lv, 2, aw, vals, 2, gg, res, go_mode(inl, lv))) {
                GO_NEAR("override reading W: d/da", res[0], 1, &n, wx, 1e-15);
                GO_NEAR("override reading W: d/dW", res[1], 1, &n, ww, 1e-15);
            }
            go_free(2, res);
        }
        {   /* its gradient again: d sum(d c/da)/dW = 2 W, through the rule's W */
            gr_var *h = gr_grad1(gr_sum(gg[0]), W);
            for (i = 0; i < 4; i++) wx[i] = 2 * go_v(wa, i);
            if (go_call(1, 2, aw, vals, 1, &h, res, "the rule's W, differentiated")) GO_NEAR("the rule's W, differentiated", res[0], 1, &n, wx, 1e-15);
            go_free(1, res);
        }
        gr_op_free(op);
        gr_graph_free(g);
    }
    gr_array_free(xa); gr_array_free(wa);
}

/* ---- the adjoint identity, an inner loop, the lifetime ------------------------------------------------ */

/* <u, J v> = <J^T u, v> through op(x, W) = (tanh(x . W), sum(x^2)) with respect to x and W */
static void test_ofg_adjoint(void) {
    int64_t n3 = 3, s34[2] = { 3, 4 }, n4 = 4;
    gtf_rng rng = { 113 };
    gr_array *xa = go_rand(&rng, 1, &n3, -1, 1), *Wa = go_rand(&rng, 2, s34, -1, 1), *va = go_rand(&rng, 1, &n3, -1, 1);
    gr_array *Va = go_rand(&rng, 2, s34, -1, 1), *ua = go_rand(&rng, 1, &n4, -1, 1), *u2 = gtf_random(&rng, GR_F64, 0, NULL, -1, 1);
    gr_array *res[4];
    int inl, lv;
    for (inl = 0; inl < 2; inl++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *W = gr_matrix(g, GR_F64, "W"), *xW[2] = { x, W }, *o[2], *y[2] = { NULL, NULL };
        gr_var *v = gr_vector(g, GR_F64, "v"), *V = gr_matrix(g, GR_F64, "V"), *u = gr_vector(g, GR_F64, "u"), *us = gr_scalar(g, GR_F64, "us");
        gr_var *ev[2] = { v, V }, *jv[2] = { NULL, NULL }, *seeds[2] = { u, us }, *jtu[2] = { NULL, NULL }, *outs[4];
        gr_var *all[6] = { x, W, v, V, u, us };
        gr_array *vals[6] = { xa, Wa, va, Va, ua, u2 };
        gr_op_def *op;
        o[0] = gr_tanh(gr_dot(x, W));
        o[1] = gr_sum(gr_sqr(x));
        op = go_op("layer", 2, xW, 2, o, inl);
        if (op) CHECK_STATUS(gr_apply(op, NULL, 0, 2, xW, y), GR_OK);
        CHECK_STATUS(gr_rop(2, y, 2, xW, ev, jv, NULL), GR_OK);
        CHECK_STATUS(gr_lop(2, y, 2, xW, seeds, jtu, NULL), GR_OK);
        outs[0] = gr_add(gr_sum(gr_mul(u, jv[0])), gr_mul(us, jv[1]));
        outs[1] = gr_add(gr_sum(gr_mul(jtu[0], v)), gr_sum(gr_mul(jtu[1], V)));
        outs[2] = jv[1];
        outs[3] = gr_mul(gr_const(g, 2.0), gr_sum(gr_mul(x, v)));
        for (lv = 0; lv < 2; lv++) {
            if (go_call(lv, 6, all, vals, 4, outs, res, go_mode(inl, lv))) {
                double l = go_v(res[0], 0), r = go_v(res[1], 0);
                CHECK_MSG(fabs(l - r) <= 1e-13 * (1 + fabs(l)), "%s: <u, J v> = %.17g, <J^T u, v> = %.17g", go_mode(inl, lv), l, r);
                CHECK_NEAR(go_v(res[2], 0), go_v(res[3], 0), 1e-14);   /* the R-op of sum(x^2): 2 x . v */
                CHECK(fabs(l) > 1e-3);
            }
            go_free(4, res);
        }
        gr_op_free(op);
        gr_graph_free(g);
    }
    gr_array_free(xa); gr_array_free(Wa); gr_array_free(va); gr_array_free(Va); gr_array_free(ua); gr_array_free(u2);
}

/* an inner loop (shapes known by running): op(u, s0) = the running sum s0 + u_0 + ... + u_t, with its
   gradient (d sum / du_t = L - t) */
static gr_status go_step_acc(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = gr_add(in[1], in[0]);
    return GR_OK;
}
static void test_ofg_inner_loop(void) {
    int64_t n = 5;
    gtf_rng rng = { 114 };
    gr_array *ua = go_rand(&rng, 1, &n, -2, 2), *sa = gtf_random(&rng, GR_F64, 0, NULL, -1, 1), *res[2];
    double want[5], wg[5], acc;
    int inl, lv, i;
    for (i = 0, acc = go_v(sa, 0); i < 5; i++) { acc += go_v(ua, i); want[i] = acc; wg[i] = 5 - i; }
    for (inl = 0; inl < 2; inl++) {
        gr_graph *g = gr_graph_new();
        gr_var *u = gr_vector(g, GR_F64, "u"), *s0 = gr_scalar(g, GR_F64, "s0"), *us[2] = { u, s0 }, *rs[2] = { NULL, NULL };
        gr_scan_seq seq;
        gr_scan_out so;
        gr_op_def *op = NULL;
        gr_var *y, *d, *outs[2];
        gr_array *vals[2] = { ua, sa };
        memset(&seq, 0, sizeof seq);
        memset(&so, 0, sizeof so);
        seq.x = u;
        so.initial = s0;
        CHECK_STATUS(gr_scan(go_step_acc, NULL, 1, &seq, 1, &so, 0, NULL, NULL, rs), GR_OK);
        if (rs[0]) op = go_op("running_sum", 2, us, 1, rs, inl);
        y = go_apply1(op, 2, us);
        d = gr_grad1(gr_sum(y), u);
        outs[0] = y;
        outs[1] = d;
        for (lv = 0; lv < 2; lv++) {
            if (go_call(lv, 2, us, vals, 2, outs, res, go_mode(inl, lv))) {
                GO_NEAR("inner loop", res[0], 1, &n, want, 1e-14);
                GO_NEAR("inner loop: gradient", res[1], 1, &n, wg, 1e-14);
            }
            go_free(2, res);
        }
        gr_op_free(op);
        gr_graph_free(g);
    }
    gr_array_free(ua); gr_array_free(sa);
}

/* gr_op_free while graphs and functions apply it: freed after applying, after compiling, and
   between calls; one compiled inner function serves both applications (same values) */
static void test_ofg_free_early(void) {
    int64_t n = 3;
    double xv[3] = { 0.5, -1, 2 }, want[3], w2[3];
    gr_array *xa = e_vec(3, xv);
    int inl, when, i;
    for (i = 0; i < 3; i++) { want[i] = sin(xv[i]) * 2; w2[i] = sin(sin(xv[i]) * 2) * 2; }
    for (inl = 0; inl < 2; inl++)
        for (when = 0; when < 3; when++) {
            gr_graph *ig = gr_graph_new(), *g = gr_graph_new();
            gr_var *x = gr_vector(ig, GR_F64, "x"), *e = gr_mul(gr_sin(x), gr_const(ig, 2.0));
            gr_op_def *op = go_op("f", 1, &x, 1, &e, inl);
            gr_var *a = gr_vector(g, GR_F64, "a"), *y = go_apply1(op, 1, &a), *y2 = go_apply1(op, 1, &y), *outs[2] = { y, y2 };
            gr_fn *f;
            const gr_array *r[2];
            gr_graph_free(ig);
            if (when == 0) { gr_op_free(op); op = NULL; }
            f = gr_function(1, &a, 2, outs, NULL);
            CHECK(f != NULL);
            if (when == 1) { gr_op_free(op); op = NULL; }
            gr_graph_free(g);                        /* the function keeps what it needs */
            if (f && gr_call(f, (const gr_array *const *)&xa, r) == GR_OK) {
                GO_NEAR("freed early", r[0], 1, &n, want, 1e-15);
                GO_NEAR("freed early: applied twice", r[1], 1, &n, w2, 1e-15);
            } else CHECK_MSG(0, "call: %s", gr_fn_message(f));
            gr_op_free(op);
            if (f && gr_call(f, (const gr_array *const *)&xa, r) == GR_OK) GO_NEAR("freed early, again", r[0], 1, &n, want, 1e-15);
            gr_fn_free(f);
        }
    gr_array_free(xa);
}

/* Jacobians and Hessians through the op (its batching rule: an op of the inner graph vectorised):
   op(x, w) = (sin(x) w, sum(x^2)): d out0/dx = diag(cos(x) w), d out0/dw = diag(sin x), Hessian of
   out1 = 2 I */
static void test_ofg_jacobian_hessian(void) {
    int64_t n = 3, s33[2] = { 3, 3 };
    double xv[3] = { 0.3, -1, 2 }, wv[3] = { 1, 2, 3 }, jx[9], jw[9], h[9];
    gr_array *xa = e_vec(3, xv), *wa = e_vec(3, wv), *res[3];
    int inl, lv, i, j;
    (void)n;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) {
            jx[i * 3 + j] = i == j ? cos(xv[i]) * wv[i] : 0;
            jw[i * 3 + j] = i == j ? sin(xv[i]) : 0;
            h[i * 3 + j] = i == j ? 2 : 0;
        }
    for (inl = 0; inl < 2; inl++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *w = gr_vector(g, GR_F64, "w"), *xw[2] = { x, w }, *o[2], *r[2] = { NULL, NULL };
        gr_var *J[2] = { NULL, NULL }, *H = NULL, *outs[3];
        gr_array *vals[2] = { xa, wa };
        gr_op_def *op;
        o[0] = gr_mul(gr_sin(x), w);
        o[1] = gr_sum(gr_sqr(x));
        op = go_op("f", 2, xw, 2, o, inl);
        if (op) CHECK_STATUS(gr_apply(op, NULL, 0, 2, xw, r), GR_OK);
        CHECK_STATUS(gr_jacobian(r[0], 2, xw, J, NULL), GR_OK);
        CHECK_STATUS(gr_hessian(r[1], 1, &x, &H, NULL), GR_OK);
        outs[0] = J[0]; outs[1] = J[1]; outs[2] = H;
        for (lv = 0; lv < 2; lv++) {
            if (go_call(lv, 2, xw, vals, 3, outs, res, go_mode(inl, lv))) {
                GO_NEAR("Jacobian wrt x", res[0], 2, s33, jx, 1e-15);
                GO_NEAR("Jacobian wrt w", res[1], 2, s33, jw, 1e-15);
                GO_NEAR("Hessian", res[2], 2, s33, h, 1e-15);
            }
            go_free(3, res);
        }
        gr_op_free(op);
        gr_graph_free(g);
    }
    gr_array_free(xa); gr_array_free(wa);
}

/* with conditionals: an op whose graph is ifelse(x > 0, sqrt(x), 0) (its gradient at 0 is 0, the
   side not taken not run), inlined or not, and the op on one side of a conditional */
static void test_ofg_with_ifelse(void) {
    double xv[4] = { 4, 0, -1, 2.25 }, want[4], dwant[4], w2[4];
    int64_t n = 1;
    int inl, lv, k;
    for (k = 0; k < 4; k++) {
        want[k] = xv[k] > 0 ? sqrt(xv[k]) : 0;
        dwant[k] = xv[k] > 0 ? 0.5 / sqrt(xv[k]) : 0;
        w2[k] = xv[k] > 1 ? want[k] : -xv[k];
    }
    for (inl = 0; inl < 2; inl++) {
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_scalar(g, GR_F64, "x"), *r = gr_sqrt(x), *z = gr_mul(x, gr_const(g, 0.0)), *e = NULL, *y, *d, *c = NULL;
        gr_var *yy, *nx, *outs[3];
        gr_op_def *op;
        CHECK_STATUS(gr_ifelse(gr_gt(x, gr_const(g, 0.0)), 1, &r, &z, &e), GR_OK);
        op = go_op("safe_sqrt", 1, &x, 1, &e, inl);
        y = go_apply1(op, 1, &x);
        d = gr_grad1(y, x);
        yy = go_apply1(op, 1, &x);
        nx = gr_neg(x);
        CHECK_STATUS(gr_ifelse(gr_gt(x, gr_const(g, 1.0)), 1, &yy, &nx, &c), GR_OK);
        outs[0] = y; outs[1] = d; outs[2] = c;
        for (lv = 0; lv < 2; lv++)
            for (k = 0; k < 4; k++) {
                gr_array *xa = gr_array_scalar(GR_F64, xv[k]), *res[3];
                if (go_call(lv, 1, &x, &xa, 3, outs, res, go_mode(inl, lv))) {
                    GO_NEAR("ifelse inside", res[0], 0, &n, &want[k], 1e-15);
                    GO_NEAR("its gradient (0 at 0, not NaN)", res[1], 0, &n, &dwant[k], 1e-15);
                    GO_NEAR("the op on one side", res[2], 0, &n, &w2[k], 1e-15);
                }
                go_free(3, res);
                gr_array_free(xa);
            }
        gr_op_free(op);
        gr_graph_free(g);
    }
}

/* gr_print and gr_fn_print show the op's graph under its node (not inlined) */
static void test_ofg_print(void) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *e = gr_exp(x);
    gr_op_def *op = go_op("expo", 1, &x, 1, &e, 0);
    gr_var *a = gr_vector(g, GR_F64, "a"), *y = go_apply1(op, 1, &a);
    gr_fn *f = y ? gr_function(1, &a, 1, &y, NULL) : NULL;
    FILE *fp = tmpfile();
    char buf[2048];
    size_t n;
    CHECK(f != NULL && fp != NULL);
    if (f && fp) {
        gr_print(fp, y);
        gr_fn_print(fp, f);
        rewind(fp);
        n = fread(buf, 1, sizeof buf - 1, fp);
        buf[n] = 0;
        CHECK_CONTAINS(buf, "= OpFromGraph(a) 'expo'");
        CHECK_CONTAINS(buf, "graph of 'expo' (inputs: x):");
        CHECK_CONTAINS(buf, "= Exp(x)");
        CHECK_CONTAINS(buf, "outputs of 'expo':");
    }
    if (fp) fclose(fp);
    gr_fn_free(f);
    gr_op_free(op);
    gr_graph_free(g);
}

/* ---- errors ---------------------------------------------------------------------------------------------- */

static gr_status go_grad_null(void *user, gr_var *const *in, gr_var *const *out, gr_var *const *seeds, gr_var **res) {
    (void)user; (void)in; (void)out; (void)seeds;
    res[0] = NULL;
    return GR_OK;
}
static gr_status go_grad_ndim(void *user, gr_var *const *in, gr_var *const *out, gr_var *const *seeds, gr_var **res) {
    (void)user; (void)out; (void)seeds;
    res[0] = gr_sum(in[0]);
    return GR_OK;
}
static gr_status go_grad_int(void *user, gr_var *const *in, gr_var *const *out, gr_var *const *seeds, gr_var **res) {
    (void)user; (void)out; (void)seeds;
    res[0] = gr_cast(in[0], GR_I64);
    return GR_OK;
}
static gr_status go_grad_fails(void *user, gr_var *const *in, gr_var *const *out, gr_var *const *seeds, gr_var **res) {
    (void)user; (void)in; (void)out; (void)seeds; (void)res;
    return GR_ERR_VALUE;
}
static gr_status go_grad_other_graph(void *user, gr_var *const *in, gr_var *const *out, gr_var *const *seeds, gr_var **res) {
    (void)in; (void)out; (void)seeds;
    res[0] = (gr_var *)user;
    return GR_OK;
}

static void test_ofg_errors_build(void) {
    gr_graph *g = gr_graph_new(), *h = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *e = gr_add(x, y), *xy[2] = { x, y }, *xx[2] = { x, x };
    gr_var *c = gr_const(g, 1.0), *s, *hx = gr_vector(h, GR_F64, "hx"), *cx[2], *d = gr_disconnected_like(x);
    double v3[3] = { 1, 2, 3 };
    gr_array *sa = e_vec(3, v3);
    gr_op_def *op;
    s = gr_shared(g, sa, "s");
    /* gr_op_from_graph */
    CHECK(gr_op_from_graph("f", 2, xy, 0, &e, NULL) == NULL);
    CHECK(gr_op_from_graph("f", 2, xy, 1, NULL, NULL) == NULL);
    CHECK_OK_GRAPH(g);
#define GO_FAILS(call, code, needle) do { CHECK((call) == NULL); CHECK_STATUS(gr_graph_status(g), code); \
        CHECK_CONTAINS(gr_graph_message(g), needle); gr_graph_clear_error(g); } while (0)
    GO_FAILS(gr_op_from_graph("f", -1, xy, 1, &e, NULL), GR_ERR_VALUE, "gr_op_from_graph 'f': n_in is negative");
    GO_FAILS(gr_op_from_graph("f", 2, NULL, 1, &e, NULL), GR_ERR_VALUE, "inputs is NULL");
    cx[0] = x; cx[1] = NULL;
    GO_FAILS(gr_op_from_graph("f", 2, cx, 1, &e, NULL), GR_ERR_VALUE, "input 1 is NULL");
    cx[1] = c;
    GO_FAILS(gr_op_from_graph("f", 2, cx, 1, &e, NULL), GR_ERR_VALUE, "input 1 (");
    cx[1] = s;
    GO_FAILS(gr_op_from_graph("f", 2, cx, 1, &e, NULL), GR_ERR_VALUE, "is a shared variable");
    cx[1] = e;
    GO_FAILS(gr_op_from_graph("f", 2, cx, 1, &e, NULL), GR_ERR_VALUE, "computed");
    cx[1] = hx;
    GO_FAILS(gr_op_from_graph("f", 2, cx, 1, &e, NULL), GR_ERR_VALUE, "belongs to another graph");
    cx[1] = d;
    GO_FAILS(gr_op_from_graph("f", 2, cx, 1, &e, NULL), GR_ERR_TYPE, "gradient marker");
    GO_FAILS(gr_op_from_graph("f", 2, xx, 1, &e, NULL), GR_ERR_VALUE, "given twice (inputs 0 and 1)");
    GO_FAILS(gr_op_from_graph("f", 1, &x, 1, &e, NULL), GR_ERR_VALUE, "the outputs need 'y', which is not among the inputs");
    cx[0] = e; cx[1] = d;
    GO_FAILS(gr_op_from_graph("f", 2, xy, 2, cx, NULL), GR_ERR_TYPE, "output 1 is a gradient marker");
    cx[1] = NULL;
    GO_FAILS(gr_op_from_graph("f", 2, xy, 2, cx, NULL), GR_ERR_VALUE, "output 1 is NULL");
    cx[1] = hx;
    GO_FAILS(gr_op_from_graph("f", 2, xy, 2, cx, NULL), GR_ERR_VALUE, "output 1 ('hx') belongs to another graph");
    /* gr_apply */
    op = gr_op_from_graph("f", 2, xy, 1, &e, NULL);
    CHECK(op != NULL);
    if (op) {
        gr_var *o = NULL, *f32 = gr_vector(g, GR_F32, "f32"), *m = gr_matrix(g, GR_F64, "m"), *n4, *n3;
        gr_var *bad[2];
        int64_t four = 4, three = 3;
        n4 = gr_tensor(g, GR_F64, 1, &four, "n4");
        n3 = gr_tensor(g, GR_F64, 1, &three, "n3");
        CHECK_STATUS(gr_apply(op, NULL, 0, 1, xy, &o), GR_ERR_VALUE);
        CHECK_CONTAINS(gr_graph_message(g), "takes 2 inputs");
        gr_graph_clear_error(g);
        bad[0] = x; bad[1] = f32;
        CHECK_STATUS(gr_apply(op, NULL, 0, 2, bad, &o), GR_ERR_TYPE);
        CHECK_CONTAINS(gr_graph_message(g), "op 'f': operand 1 ('f32') is float32 with 1 dimensions; its input 'y' is float64 with 1");
        CHECK(o == NULL);
        gr_graph_clear_error(g);
        bad[1] = m;
        CHECK_STATUS(gr_apply(op, NULL, 0, 2, bad, &o), GR_ERR_TYPE);
        gr_graph_clear_error(g);
        bad[1] = NULL;
        CHECK_STATUS(gr_apply(op, NULL, 0, 2, bad, &o), GR_ERR_VALUE);   /* a NULL operand: silent */
        CHECK_OK_GRAPH(g);
        bad[1] = d;
        CHECK_STATUS(gr_apply(op, NULL, 0, 2, bad, &o), GR_ERR_TYPE);
        CHECK_CONTAINS(gr_graph_message(g), "gradient marker");
        gr_graph_clear_error(g);
        {   /* static shapes: an op of (3,) inputs given a (4,) operand */
            gr_var *p3[2] = { n3, n3 }, *e3 = gr_mul(n3, gr_const(g, 2.0)), *p4[2] = { n4, n4 };
            gr_op_def *op3 = gr_op_from_graph("g3", 1, p3, 1, &e3, NULL);
            CHECK(op3 != NULL);
            if (op3) {
                CHECK_STATUS(gr_apply(op3, NULL, 0, 1, p4, &o), GR_ERR_SHAPE);
                CHECK_CONTAINS(gr_graph_message(g), "op 'g3': operand 0 ('n4') has the shape (4); its input 'n3' has (3)");
                gr_graph_clear_error(g);
            }
            gr_op_free(op3);
        }
        {   /* an OpFromGraph node's op given to gr_apply: it takes a handle */
            gr_var *oo = go_apply1(op, 2, xy);
            const gr_op_def *row = oo ? gr_node_op(gr_var_owner(oo)) : NULL;
            if (row) {
                CHECK_STATUS(gr_apply(row, NULL, 0, 2, xy, &o), GR_ERR_VALUE);
                CHECK_CONTAINS(gr_graph_message(g), "gr_apply: OpFromGraph");
                gr_graph_clear_error(g);
            }
        }
        gr_op_free(op);
    }
    gr_op_free(NULL);
    gr_array_free(sa);
    gr_graph_free(g);
    gr_graph_free(h);
}

static void test_ofg_errors_rules(void) {
    static const gr_graph_op_rule rules[5] = { go_grad_null, go_grad_ndim, go_grad_int, go_grad_fails, go_grad_other_graph };
    static const gr_status codes[5] = { GR_ERR_VALUE, GR_ERR_TYPE, GR_ERR_TYPE, GR_ERR_VALUE, GR_ERR_VALUE };
    static const char *const needles[5] = { "its gradient rule left result 0 NULL", "result 0 of its gradient rule has 0 dimensions",
                                            "result 0 of its gradient rule is int64", "its gradient rule failed", "belongs to another graph" };
    static const char *const rop_needles[5] = { "its R-op rule left result 0 NULL", "result 0 of its R-op rule has 0 dimensions",
                                                "result 0 of its R-op rule is int64", "its R-op rule failed", "belongs to another graph" };
    int k, rop;
    for (rop = 0; rop < 2; rop++)
        for (k = 0; k < 5; k++) {
            gr_graph *g = gr_graph_new(), *h = gr_graph_new();
            gr_var *x = gr_vector(g, GR_F64, "x"), *e = gr_sin(x), *y, *r = NULL, *v = gr_vector(g, GR_F64, "v");
            gr_graph_op_opts o;
            gr_op_def *op;
            memset(&o, 0, sizeof o);
            if (rop) { o.rop = rules[k]; o.rop_user = gr_vector(h, GR_F64, "elsewhere"); }
            else { o.grad = rules[k]; o.grad_user = gr_vector(h, GR_F64, "elsewhere"); }
            op = gr_op_from_graph("f", 1, &x, 1, &e, &o);
            y = go_apply1(op, 1, &x);
            if (rop) CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, &r, NULL), codes[k]);
            else CHECK_STATUS(gr_grad(gr_sum(y), 1, &x, &r, NULL), codes[k]);
            CHECK_CONTAINS(gr_graph_message(g), rop ? rop_needles[k] : needles[k]);
            CHECK_CONTAINS(gr_graph_message(g), "'f'");
            gr_op_free(op);
            gr_graph_free(g);
            gr_graph_free(h);
        }
}

/* a call-time failure inside the op: an index out of range, named with the op */
static void test_ofg_errors_call(void) {
    int inl, lv;
    for (inl = 0; inl < 2; inl++)
        for (lv = 0; lv < 2; lv++) {
            gr_graph *g = gr_graph_new();
            gr_var *x = gr_vector(g, GR_F64, "x"), *i = gr_scalar(g, GR_I64, "i"), *xi[2] = { x, i }, *e = gr_take(x, i, 0), *y;
            gr_op_def *op = go_op("pick", 2, xi, 1, &e, inl);
            double xv[3] = { 1, 2, 3 };
            gr_array *xa = e_vec(3, xv), *ia = gr_array_scalar(GR_I64, 5), *vals[2];
            gr_fn_opts fo;
            gr_fn *f;
            const gr_array *r[1];
            vals[0] = xa; vals[1] = ia;
            y = go_apply1(op, 2, xi);
            memset(&fo, 0, sizeof fo);
            fo.optimize = lv ? GR_OPT_FULL : GR_OPT_NONE;
            f = gr_function(2, xi, 1, &y, &fo);
            CHECK(f != NULL);
            if (f) {
                CHECK_STATUS(gr_call(f, (const gr_array *const *)vals, r), GR_ERR_RUNTIME);
                CHECK_CONTAINS(gr_fn_message(f), "index 5");
                if (!inl) CHECK_CONTAINS(gr_fn_message(f), "'pick'");
            }
            gr_fn_free(f);
            gr_op_free(op);
            gr_array_free(xa); gr_array_free(ia);
            gr_graph_free(g);
        }
}

/* ---- the row's cases ---------------------------------------------------------------------------------- */

/* values against plain C: op(x, y) = x * y + 2 (elementwise, broadcast within) in F64, F32, I64, with
   static and call-time shapes, inlined and not */
static void gtgo_values(void) {
    static const gr_dtype dts[3] = { GR_F64, GR_F32, GR_I64 };
    int64_t s23[2] = { 2, 3 }, s3[1] = { 3 };
    gtf_rng rng = { 115 };
    int k, dyn, inl;
    for (k = 0; k < 3; k++)
        for (dyn = 0; dyn < 2; dyn++)
            for (inl = 0; inl < 2; inl++) {
                gr_dtype dt = dts[k];
                gr_graph *ig = gr_graph_new(), *g = gr_graph_new();
                gr_var *x = gtf_input(ig, dt, 2, s23, dyn, "x"), *y = gtf_input(ig, dt, 1, s3, dyn, "y");
                gr_var *e = gr_add(gr_mul(x, y), gr_const(ig, 2.0)), *xy[2] = { x, y };
                gr_op_def *op = go_op("mul_add", 2, xy, 1, &e, inl);
                gr_var *a = gtf_input(g, dt, 2, s23, dyn, "a"), *b = gtf_input(g, dt, 1, s3, dyn, "b"), *ab[2] = { a, b };
                gr_var *o = go_apply1(op, 2, ab);
                gr_array *xa = gts_random(&rng, dt, 2, s23, -3, 3, -5, 5), *ya = gts_random(&rng, dt, 1, s3, -3, 3, -5, 5);
                gr_array *want = gts_want(dt, 2, s23);
                const gr_array *arrs[2] = { xa, ya };
                int64_t i;
                char label[96];
                gr_graph_free(ig);
                for (i = 0; i < 6; i++) {
                    if (dt == GR_I64) ((int64_t *)want->data)[i] = gts_int_at(xa, i) * gts_int_at(ya, i % 3) + 2;
                    else ((double *)want->data)[i] = gr_array_get(xa, i) * gr_array_get(ya, i % 3) + 2;
                }
                snprintf(label, sizeof label, "op(x, y) = x y + 2, %s, %s, %s", gr_dtype_name(dt), dyn ? "call-time shapes" : "static shapes",
                         inl ? "inlined" : "not inlined");
                if (o) gtf_expect(g, 2, ab, arrs, o, dt, want, gts_tol(dt), label);
                gr_op_free(op);
                gr_array_free(xa); gr_array_free(ya); gr_array_free(want);
                gr_graph_free(g);
            }
}

/* the specs' ops: made in the dtype under test from a graph of their own, applied, freed */
static gr_var *gtgo_apply_made(gr_graph *g, int n, gr_var *const *in, int which, int inl) {
    gr_graph *ig = gr_graph_new();
    gr_var *xs[3], *e[2], *o[2] = { NULL, NULL };
    gr_op_def *op;
    int i, n_out = 1;
    for (i = 0; i < n; i++) {
        gr_type t;
        gr_var_type(in[i], &t);
        xs[i] = gr_tensor(ig, t.dtype, t.ndim, NULL, NULL);
    }
    if (which == 0) e[0] = gr_tanh(gr_dot(xs[0], xs[1]));                                  /* a layer */
    else if (which == 1) { e[0] = gr_mul(gr_exp(xs[0]), xs[1]); e[1] = gr_sin(xs[0]); n_out = 2; }   /* two outputs */
    else e[0] = gr_div(xs[0], gr_add(gr_sqr(xs[1]), gr_const(ig, 1.0)));
    op = gr_op_from_graph("spec", n, xs, n_out, e, NULL);
    if (op && inl) { gr_op_free(op); op = NULL; }
    if (inl) {
        gr_graph_op_opts oo;
        memset(&oo, 0, sizeof oo);
        oo.inline_graph = 1;
        op = gr_op_from_graph("spec", n, xs, n_out, e, &oo);
    }
    gr_graph_free(ig);
    if (!op) return NULL;
    gr_apply(op, NULL, 0, n, in, o);
    gr_op_free(op);
    (void)g;
    return n_out == 2 && o[0] && o[1] ? gr_add(o[0], gr_mul(o[1], gr_const(g, 0.5))) : o[0];
}
static gr_var *gtgo_b_layer(gr_graph *g, gr_var *const *in, void *u) { return gtgo_apply_made(g, 2, in, 0, u != NULL); }
static gr_var *gtgo_b_two(gr_graph *g, gr_var *const *in, void *u) { return gtgo_apply_made(g, 2, in, 1, u != NULL); }
static gr_var *gtgo_b_ratio(gr_graph *g, gr_var *const *in, void *u) { return gtgo_apply_made(g, 2, in, 2, u != NULL); }
static int gtgo_inl = 1;
static const gtd_spec specs_OpFromGraph[] = {
    { "OpFromGraph", "tanh(x . W), x (4,) W (4,3)", gtgo_b_layer, NULL, 2, { V4(-1, 1), GTD_IN(2, 4, 3, -1, 1) }, GTD_GRADGRAD },
    { "OpFromGraph", "tanh(x . W), inlined", gtgo_b_layer, &gtgo_inl, 2, { V4(-1, 1), GTD_IN(2, 4, 3, -1, 1) }, GTD_GRADGRAD },
    { "OpFromGraph", "(e^x y, sin x) combined, (3,4) and (4,)", gtgo_b_two, NULL, 2, { M34(-1, 1), V4(-1, 1) }, 0 },
    { "OpFromGraph", "x / (y^2 + 1), broadcast (3,1) (1,4), inlined", gtgo_b_ratio, &gtgo_inl, 2, { C31(-2, 2), R14(-2, 2) }, 0 },
    GTD_END
};

GT_CASES(OpFromGraph) = {
    GT_VALUES(gtgo_values),
    GT_SPECS(specs_OpFromGraph),
    GT_DERIVS(test_ofg_grad_and_grad_grad),
    GT_DERIVS(test_ofg_rop),
    GT_DERIVS(test_ofg_adjoint),
    GT_ERRORS(test_ofg_errors_build),
    GT_ERRORS(test_ofg_errors_rules),
    GT_ERRORS(test_ofg_errors_call),
    GT_END
};

SUITE(suite_graphop) = {
    CASE(test_ofg_straightforward), CASE(test_ofg_size_changes), CASE(test_ofg_shared), CASE(test_ofg_grad_override),
    CASE(test_ofg_lop_override), CASE(test_ofg_rop_override), CASE(test_ofg_connection_pattern_override),
    CASE(test_ofg_connection_pattern), CASE(test_ofg_nested), CASE(test_ofg_infer_shape), CASE(test_ofg_disconnected_outputs),
    CASE(test_ofg_override_reads_outer), CASE(test_ofg_inner_loop), CASE(test_ofg_free_early),
    CASE(test_ofg_jacobian_hessian), CASE(test_ofg_with_ifelse), CASE(test_ofg_print), END_SUITE
};
