/* tests/t_fuzz.c: random graphs. Each draws a dozen ops over four inputs of broadcastable shapes
   ((3,4), (4,), (), (3,1)): smooth elementwise ops, broadcasting binaries, the patterns the rewrites
   look for (x * 1, x + 0, neg(neg x), scaled products, log(1 + x)), reductions, transposes, slices,
   products, cumulative sums, loops over rows (gr_scan, some checkpointed, some backwards, some
   read at their last row only) and conditionals on the data (gr_ifelse), with values read by
   several later ops. Every other graph has inputs whose sizes are known only when called (the
   rewrites and fusion then work from shape signatures, and sizes that do not broadcast are found
   by the call, which must fail alike at both levels). A quarter of the graphs are float32 and a
   quarter mix float32 and float64 inputs (casts and promotions inside fused groups); those are
   compared across levels only. Then, for every graph that runs:
     - the outputs and the gradient of a cost, compiled with every rewrite and fusion (GR_OPT_FULL),
       agree with the same compiled without (GR_OPT_NONE), over two calls (the memory plan's reuse);
     - the gradient agrees with central differences of the cost, one element of every input;
     - the R-op of the first output along random directions agrees with central differences.
   The truths are the unoptimised evaluation and finite differences, both independent of the
   rewrites, fusion, compaction, views and in-place updates under test. */
#include "harness.h"
#include <math.h>
#include <string.h>

typedef struct fz_rng { uint64_t s; } fz_rng;
static uint64_t fz_next(fz_rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static int fz_int(fz_rng *r, int n) { return (int)(fz_next(r) % (uint64_t)n); }
static double fz_unif(fz_rng *r) { return (double)(fz_next(r) >> 11) * 0x1p-53 * 2.0 - 1.0; }

enum { FZ_IN = 4, FZ_OPS = 14, FZ_POOL = FZ_IN + FZ_OPS, FZ_GRAPHS = 400 };
static const int fz_ndim[FZ_IN] = { 2, 1, 0, 2 };
static const int64_t fz_shape[FZ_IN][2] = { { 3, 4 }, { 4, 0 }, { 0, 0 }, { 3, 1 } };
static const int64_t fz_unknown[2] = { -1, -1 };     /* every other graph: sizes known only when called */

/* a loop's step: s_t = tanh(0.9 s_{t-1} + x_t) (in: x_t, s_{t-1}) */
static gr_status fz_loop_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)until; (void)user;
    out[0] = gr_tanh(gr_add(gr_mul(gr_const(g, 0.9), in[1]), in[0]));
    return out[0] ? GR_OK : gr_graph_status(g);
}
/* a loop over the rows of x from half its first row, every state or the last (its gradient
   through time, its R-op and both optimisation levels then meet the rest of the graph) */
static gr_var *fz_loop(fz_rng *r, gr_graph *g, gr_var *x) {
    gr_scan_seq sq;
    gr_scan_out so;
    gr_scan_opts o;
    gr_var *res = NULL;
    if (gr_var_ndim(x) < 1) return NULL;
    memset(&o, 0, sizeof o);
    o.go_backwards = fz_int(r, 2);
    o.checkpoints = fz_int(r, 3);
    sq.x = x; sq.n_taps = 0; sq.taps = NULL;
    so.initial = gr_mul(gr_const(g, 0.5), gr_index(x, 0, 0)); so.n_taps = 0; so.taps = NULL;
    if (gr_scan(fz_loop_step, NULL, 1, &sq, 1, &so, 0, NULL, &o, &res) != GR_OK) return NULL;
    return fz_int(r, 2) ? gr_index(res, 0, -1) : res;
}

/* a conditional on the data: sum(y) > 0 ? tanh(x y) : x cos(y), each side computed only when taken */
static gr_var *fz_ifelse(gr_graph *g, gr_var *x, gr_var *y) {
    gr_var *a = gr_tanh(gr_mul(x, y)), *b = gr_mul(x, gr_cos(y)), *v = NULL;
    return gr_ifelse(gr_gt(gr_sum(y), gr_const(g, 0.0)), 1, &a, &b, &v) == GR_OK ? v : NULL;
}

/* one random op over the pool; NULL when the drawn operands do not fit it (the error is cleared) */
static gr_var *fz_op(fz_rng *r, gr_graph *g, gr_var *const *pool, int n) {
    gr_var *x = pool[n - 1 - fz_int(r, n < 6 ? n : 6)], *y = pool[fz_int(r, n)], *v = NULL;
    int nd = gr_var_ndim(x), ax;
    switch (fz_int(r, 23)) {
    case 0: v = gr_sin(x); break;
    case 1: v = gr_tanh(x); break;
    case 2: v = gr_add(x, y); break;
    case 3: v = gr_mul(x, y); break;
    case 4: v = gr_sub(y, x); break;
    case 5: v = gr_div(x, gr_add(gr_const(g, 1.0), gr_sqr(y))); break;
    case 6: v = gr_neg(gr_neg(x)); break;
    case 7: v = gr_add(gr_mul(x, gr_const(g, 1.0)), gr_const(g, 0.0)); break;
    case 8: v = gr_mul(gr_const(g, 2.5), gr_mul(gr_const(g, -0.5), x)); break;
    case 9: v = gr_mul(gr_mul(gr_const(g, 3.0), x), gr_mul(y, gr_const(g, 0.25))); break;
    case 10: v = gr_log1p(gr_sqr(x)); break;                      /* log(1 + x^2) as well: */
    case 11: v = gr_log(gr_add(gr_const(g, 1.0), gr_sqr(x))); break;
    case 12: v = nd ? gr_sum_axis(x, fz_int(r, nd)) : gr_exp(gr_tanh(x)); break;
    case 13: ax = nd ? fz_int(r, nd) : 0; v = gr_sum_axes(x, nd ? 1 : 0, &ax, 1); break;
    case 14: v = nd == 2 ? gr_transpose(x) : gr_cos(x); break;
    case 15: v = nd ? gr_slice(x, nd - 1, 0, 2, 1) : gr_sigmoid(x); break;
    case 16: v = gr_dot(x, y); break;
    case 17: v = nd ? gr_cumsum(x, 0) : gr_softplus(x); break;
    case 18: v = gr_mul(gr_exp(gr_tanh(x)), gr_sigmoid(y)); break;
    case 19: v = gr_mean(x); break;
    case 20: v = gr_add(gr_sin(x), gr_cos(x)); break;              /* sin and cos of one operand */
    case 21: v = nd ? fz_loop(r, g, x) : fz_ifelse(g, x, y); break;     /* a loop over the rows of x, or a conditional */
    default: v = gr_mul(x, gr_sum(y)); break;                      /* a group reading a reduction */
    }
    if (!v) gr_graph_clear_error(g);
    return v;
}

/* the cost: the outputs' sums with weights, plus a little of every input (all connected) */
static gr_var *fz_cost(gr_graph *g, gr_var *const *in, gr_var *o1, gr_var *o2) {
    gr_var *c = gr_add(gr_sum(o1), gr_mul(gr_const(g, 0.7), gr_sum(o2)));
    int i;
    for (i = 0; i < FZ_IN; i++) c = gr_add(c, gr_mul(gr_const(g, 0.1 * (i + 1)), gr_sum(in[i])));
    return c;
}

static int fz_close(double a, double b, double tol) { return fabs(a - b) <= tol * (fabs(b) > 1 ? fabs(b) : 1.0); }

TEST(test_fuzz_random_graphs) {
    fz_rng r = { 20261122u };
    int gi, built = 0, fused = 0, ran = 0, bad = 0;
    for (gi = 0; gi < FZ_GRAPHS && bad < 3; gi++) {
        gr_graph *g = gr_graph_new();
        gr_var *pool[FZ_POOL], *outs[2 + FZ_IN + 1], *cost;
        gr_array *xa[FZ_IN];
        gr_fn *f[2] = { NULL, NULL };
        gr_fn_opts o;
        const gr_array *in[FZ_IN], *res[2][2 + FZ_IN + 1];
        int n = FZ_IN, i, k, lvl, call, n_out = 2 + FZ_IN + 1, dyn = gi % 2, runs = 1;
        int kind = gi % 4;                /* 0, 1: float64; 2: float32; 3: a and c float32, b and d float64 */
        double tol = kind < 2 ? 1e-11 : 2e-5;
        for (i = 0; i < FZ_IN; i++) {
            int64_t e, sz = 1;
            char name[8];
            name[0] = (char)('a' + i); name[1] = 0;
            gr_dtype dt = kind == 2 || (kind == 3 && i % 2 == 0) ? GR_F32 : GR_F64;
            pool[i] = gr_tensor(g, dt, fz_ndim[i], dyn ? fz_unknown : fz_shape[i], name);
            xa[i] = gr_array_new(dt, fz_ndim[i], fz_shape[i]);
            for (k = 0; k < fz_ndim[i]; k++) sz *= fz_shape[i][k];
            for (e = 0; e < sz; e++) gr_array_set(xa[i], e, fz_unif(&r));
            in[i] = xa[i];
        }
        for (k = 0; k < 4 * FZ_OPS && n < FZ_POOL; k++) {
            gr_var *v = fz_op(&r, g, pool, n);
            if (v) pool[n++] = v;
        }
        outs[0] = pool[n - 1];
        outs[1] = pool[FZ_IN + fz_int(&r, n - FZ_IN)];
        cost = fz_cost(g, pool, outs[0], outs[1]);
        CHECK(cost != NULL);
        if (!cost || gr_grad(cost, FZ_IN, pool, outs + 2, NULL) != GR_OK) {
            CHECK_MSG(0, "graph %d: %s", gi, gr_graph_message(g));
            bad++;
            gr_graph_free(g);
            for (i = 0; i < FZ_IN; i++) gr_array_free(xa[i]);
            continue;
        }
        outs[2 + FZ_IN] = cost;
        built++;
        memset(&o, 0, sizeof o);
        for (lvl = 0; lvl < 2; lvl++) {
            o.optimize = lvl ? GR_OPT_NONE : GR_OPT_FULL;
            f[lvl] = gr_function(FZ_IN, pool, n_out, outs, &o);
            CHECK_MSG(f[lvl] != NULL, "graph %d, level %d: %s", gi, lvl, gr_graph_message(g));
        }
        if (f[0] && f[1] && gr_fn_node_count(f[0]) < gr_fn_node_count(f[1])) fused++;
        if (f[0] && f[1] && dyn) {       /* sizes that do not broadcast are found by the call: at both levels alike */
            gr_status s0 = gr_call(f[0], in, res[0]), s1 = gr_call(f[1], in, res[1]);
            CHECK_MSG(s0 == s1, "graph %d: the call gives %s optimised, %s not (%s | %s)", gi, gr_status_string(s0), gr_status_string(s1),
                      gr_fn_message(f[0]), gr_fn_message(f[1]));
            if (s0 != s1) bad++;
            runs = s0 == GR_OK && s1 == GR_OK;
        }
        ran += runs && f[0] && f[1];
        for (call = 0; runs && f[0] && f[1] && call < 2; call++) {
            int ok = 1;
            for (lvl = 0; lvl < 2; lvl++) CHECK_STATUS(gr_call(f[lvl], in, res[lvl]), GR_OK);
            for (k = 0; k < n_out && ok; k++) {
                int64_t e;
                CHECK(res[0][k]->size == res[1][k]->size && res[0][k]->ndim == res[1][k]->ndim);
                if (res[0][k]->size != res[1][k]->size) { ok = 0; break; }
                for (e = 0; e < res[0][k]->size; e++) {
                    double a = gr_array_get(res[0][k], e), b = gr_array_get(res[1][k], e);
                    if (!fz_close(a, b, tol)) {
                        CHECK_MSG(0, "graph %d, call %d, output %d[%lld]: %.17g optimised, %.17g not", gi, call, k, (long long)e, a, b);
                        ok = 0;
                        break;
                    }
                }
            }
            if (!ok) bad++;
        }
        /* the gradient against central differences of the cost (unoptimised), one element per input */
        if (f[1] && runs && kind < 2) {                     /* (differences need float64) */
            const gr_array *grads[FZ_IN];
            for (i = 0; i < FZ_IN; i++) {
                const gr_array *now[2 + FZ_IN + 1];
                int64_t e = xa[i]->size > 1 ? (int64_t)fz_int(&r, (int)xa[i]->size) : 0;
                double x0 = gr_array_get(xa[i], e), h = 1e-5, cp, cm, want;
                CHECK_STATUS(gr_call(f[1], in, now), GR_OK);
                grads[i] = now[2 + i];
                want = gr_array_get(grads[i], e);
                gr_array_set(xa[i], e, x0 + h);
                CHECK_STATUS(gr_call(f[1], in, now), GR_OK);
                cp = gr_array_get(now[2 + FZ_IN], 0);
                gr_array_set(xa[i], e, x0 - h);
                CHECK_STATUS(gr_call(f[1], in, now), GR_OK);
                cm = gr_array_get(now[2 + FZ_IN], 0);
                gr_array_set(xa[i], e, x0);
                if (!fz_close((cp - cm) / (2 * h), want, 1e-6)) {
                    CHECK_MSG(0, "graph %d: d cost / d %c[%lld] is %.12g, central differences %.12g", gi, 'a' + i, (long long)e, want,
                              (cp - cm) / (2 * h));
                    bad++;
                }
            }
        }
        /* the R-op of the first output along random directions, against central differences */
        if (runs && kind < 2) {
            gr_var *vv[FZ_IN], *jv = NULL, *rin[2 * FZ_IN], *routs[2];
            gr_array *va[FZ_IN];
            gr_fn *fr = NULL;
            for (i = 0; i < FZ_IN; i++) {
                int64_t e;
                char name[8];
                name[0] = 'v'; name[1] = (char)('a' + i); name[2] = 0;
                vv[i] = gr_tensor(g, GR_F64, fz_ndim[i], dyn ? fz_unknown : fz_shape[i], name);
                va[i] = gr_array_new(GR_F64, fz_ndim[i], fz_shape[i]);
                for (e = 0; e < va[i]->size; e++) gr_array_set(va[i], e, fz_unif(&r));
                rin[i] = pool[i];
                rin[FZ_IN + i] = vv[i];
            }
            CHECK_STATUS(gr_rop(1, &outs[0], FZ_IN, pool, vv, &jv, NULL), GR_OK);
            routs[0] = outs[0];
            routs[1] = jv;
            if (jv) fr = gr_function(2 * FZ_IN, rin, 2, routs, NULL);
            CHECK_MSG(!jv || fr, "graph %d: R-op function: %s", gi, gr_graph_message(g));
            if (fr) {
                const gr_array *rargs[2 * FZ_IN], *ro[2];
                gr_array *jv_got = NULL, *fp = NULL;
                double h = 1e-5;
                int64_t e;
                int pass;
                for (i = 0; i < FZ_IN; i++) { rargs[i] = xa[i]; rargs[FZ_IN + i] = va[i]; }
                CHECK_STATUS(gr_call(fr, rargs, ro), GR_OK);
                jv_got = gr_array_copy(ro[1]);
                for (pass = 0; pass < 2; pass++) {           /* x + h v, then x - h v */
                    for (i = 0; i < FZ_IN; i++)
                        for (e = 0; e < xa[i]->size; e++)
                            gr_array_set(xa[i], e, gr_array_get(xa[i], e) + (pass ? -2 : 1) * h * gr_array_get(va[i], e));
                    CHECK_STATUS(gr_call(fr, rargs, ro), GR_OK);
                    if (!pass) fp = gr_array_copy(ro[0]);
                }
                for (i = 0; i < FZ_IN; i++)                  /* back to x */
                    for (e = 0; e < xa[i]->size; e++) gr_array_set(xa[i], e, gr_array_get(xa[i], e) + h * gr_array_get(va[i], e));
                for (e = 0; jv_got && fp && e < jv_got->size; e++) {
                    double want = (gr_array_get(fp, e) - gr_array_get(ro[0], e)) / (2 * h), got = gr_array_get(jv_got, e);
                    if (!fz_close(got, want, 1e-6)) {
                        CHECK_MSG(0, "graph %d: R-op element %lld is %.12g, central differences %.12g", gi, (long long)e, got, want);
                        bad++;
                        break;
                    }
                }
                gr_array_free(jv_got);
                gr_array_free(fp);
                gr_fn_free(fr);
            }
            for (i = 0; i < FZ_IN; i++) gr_array_free(va[i]);
        }
        if (bad && f[0]) {                                  /* the graph that failed, for the record */
            fprintf(stderr, "  graph %d, optimised:\n", gi);
            gr_fn_print(stderr, f[0]);
        }
        gr_fn_free(f[0]);
        gr_fn_free(f[1]);
        gr_graph_free(g);
        for (i = 0; i < FZ_IN; i++) gr_array_free(xa[i]);
    }
    CHECK_MSG(built >= FZ_GRAPHS * 9 / 10, "only %d of %d graphs built", built, FZ_GRAPHS);
    CHECK_MSG(fused >= built / 2, "fusion shortened only %d of %d functions", fused, built);
    CHECK_MSG(ran >= built * 3 / 4, "only %d of %d functions could be called", ran, built);
}

SUITE(suite_fuzz) = {
    CASE(test_fuzz_random_graphs),
    END_SUITE
};
