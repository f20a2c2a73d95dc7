/* tests/t_progress.c: the progress callback (gr_graph_set_progress, issue 19 item 4). What the
   callback hears is recorded and checked against the contract: each stage in its order ("grad",
   then gr_function's "rewrite", "fuse" at GR_OPT_FULL only, "schedule"), each starting at done 0,
   its counts rising, its total fixed, ending at done == total; the units are counted by hand for
   small graphs (the nodes whose gradient rule is needed), and a chain of 70,000 nodes reports at 0,
   65,536 and its end only; gr_grad called by a grad rule on the same graph is not heard. A NULL
   callback is never called, and what it computes is unchanged. */
#include "harness.h"

#define CHECK_TEXT_EQ(got, want) do { const char *tg_g_ = (got), *tg_w_ = (want); \
    CHECK_MSG(strcmp(tg_g_, tg_w_) == 0, "stages \"%s\", expected \"%s\"", tg_g_, tg_w_); } while (0)

#define TG_MAX 64
typedef struct tg_log {
    int n, overflow;
    const char *stage[TG_MAX];
    size_t done[TG_MAX], total[TG_MAX];
} tg_log;

static void tg_hear(void *user, const char *stage, size_t done, size_t total) {
    tg_log *l = (tg_log *)user;
    if (l->n == TG_MAX) { l->overflow = 1; return; }
    l->stage[l->n] = stage;
    l->done[l->n] = done;
    l->total[l->n] = total;
    l->n++;
}

/* the stages the log heard, in order, joined by spaces (a stage once per run of calls), into buf;
   checks each run: starts at 0, rises, keeps its total, ends at done == total */
static const char *tg_stages(const tg_log *l, char *buf, size_t cap) {
    int i = 0;
    buf[0] = 0;
    CHECK(!l->overflow);
    while (i < l->n) {
        int j = i + 1;
        while (j < l->n && strcmp(l->stage[j], l->stage[i]) == 0) j++;
        if (strlen(buf) + strlen(l->stage[i]) + 2 < cap) {
            if (buf[0]) strcat(buf, " ");
            strcat(buf, l->stage[i]);
        }
        CHECK_MSG(l->done[i] == 0, "%s starts at %lu", l->stage[i], (unsigned long)l->done[i]);
        CHECK_MSG(l->done[j - 1] == l->total[j - 1], "%s ends at %lu of %lu", l->stage[i],
                  (unsigned long)l->done[j - 1], (unsigned long)l->total[j - 1]);
        for (; i + 1 < j; i++) {
            CHECK_MSG(l->done[i + 1] > l->done[i], "%s: %lu after %lu", l->stage[i], (unsigned long)l->done[i + 1],
                      (unsigned long)l->done[i]);
            CHECK(l->total[i + 1] == l->total[i]);
        }
        i = j;
    }
    return buf;
}

/* cost = sum(sin(x) * x): three nodes whose gradient rule is needed (sum, mul, sin), and a
   compiled gradient 2 cos x ... checked at one point against the formula */
TEST(test_progress_stages_in_order) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    gr_var *cost = gr_sum(gr_mul(gr_sin(x), x)), *gx = NULL;
    gr_fn *f;
    tg_log l;
    char buf[128];
    memset(&l, 0, sizeof l);
    gr_graph_set_progress(g, tg_hear, &l);
    CHECK_STATUS(gr_grad(cost, 1, &x, &gx, NULL), GR_OK);
    CHECK_TEXT_EQ(tg_stages(&l, buf, sizeof buf), "grad");
    CHECK_EQ_INT(l.n, 2);                      /* 0 and 3 of 3 */
    CHECK_EQ_INT(l.total[0], 3);
    memset(&l, 0, sizeof l);
    f = gr_function(1, &x, 1, &gx, NULL);
    CHECK(f != NULL);
    CHECK_TEXT_EQ(tg_stages(&l, buf, sizeof buf), "rewrite fuse schedule");
    CHECK_EQ_INT(l.total[l.n - 1], gr_fn_node_count(f));   /* schedule counts the steps */
    if (f) {
        double xv[2] = {0.5, -1.25};
        int64_t n = 2;
        gr_array *xa = gr_array_from(GR_F64, 1, &n, xv);
        const gr_array *in[1], *out[1];
        int i;
        in[0] = xa;
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        for (i = 0; i < 2; i++) CHECK_NEAR(gr_array_get(out[0], i), cos(xv[i]) * xv[i] + sin(xv[i]), 1e-14);
        gr_array_free(xa);
    }
    gr_fn_free(f);
    memset(&l, 0, sizeof l);                   /* without the rewrites: no fusion */
    {
        gr_fn_opts o;
        memset(&o, 0, sizeof o);
        o.optimize = GR_OPT_NONE;
        f = gr_function(1, &x, 1, &gx, &o);
        CHECK(f != NULL);
        CHECK_TEXT_EQ(tg_stages(&l, buf, sizeof buf), "rewrite schedule");
        gr_fn_free(f);
    }
    gr_graph_free(g);
}

/* a chain of 70,000 sins: 70,001 rules needed (the sum too), heard at 0, 65,536 and 70,001 */
TEST(test_progress_bounded_rate) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *y = x, *gx = NULL;
    tg_log l;
    char buf[128];
    int i;
    for (i = 0; i < 70000; i++) y = gr_sin(y);
    memset(&l, 0, sizeof l);
    gr_graph_set_progress(g, tg_hear, &l);
    CHECK_STATUS(gr_grad(gr_sum(y), 1, &x, &gx, NULL), GR_OK);
    CHECK_TEXT_EQ(tg_stages(&l, buf, sizeof buf), "grad");
    CHECK_EQ_INT(l.n, 3);
    CHECK_EQ_INT(l.done[1], 65536);
    CHECK_EQ_INT(l.total[0], 70001);
    gr_graph_free(g);
}

/* a user's op, y = 2 x, whose grad rule asks gr_grad on the same graph (d sum(2 x) / dx = 2) */
static gr_status tg_twice_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    int64_t i;
    (void)node;
    for (i = 0; i < in[0]->size; i++) gr_array_set(out[0], i, 2 * gr_array_get(in[0], i));
    return GR_OK;
}
static gr_status tg_twice_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr_node_input(node, 0);
    gr_var *two = gr_grad1(gr_sum(gr_mul(gr_const(gr_var_graph(x), 2), x)), x);
    ig[0] = gr_mul(og[0], two);
    return ig[0] ? GR_OK : GR_ERR_NOMEM;
}

/* gr_grad inside a grad rule, on the same graph, is not heard: the caller's one "grad" stage,
   counting its own two rules (sum, then the op), and the right gradient, 2 cos(2 x) */
TEST(test_progress_nested_grad) {
    gr_op_def twice;
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = NULL, *gx = NULL;
    tg_log l;
    char buf[128];
    memset(&twice, 0, sizeof twice);
    twice.name = "Twice"; twice.n_in = 1; twice.n_out = 1;
    twice.perform = tg_twice_perform; twice.grad = tg_twice_grad;
    CHECK_STATUS(gr_apply(&twice, NULL, 0, 1, &x, &y), GR_OK);
    memset(&l, 0, sizeof l);
    gr_graph_set_progress(g, tg_hear, &l);
    CHECK_STATUS(gr_grad(gr_sum(gr_sin(y)), 1, &x, &gx, NULL), GR_OK);
    CHECK_TEXT_EQ(tg_stages(&l, buf, sizeof buf), "grad");
    CHECK_EQ_INT(l.n, 2);
    CHECK_EQ_INT(l.total[0], 3);                    /* sum, sin, Twice */
    gr_graph_set_progress(g, NULL, NULL);
    {
        gr_fn *f = gr_function(1, &x, 1, &gx, NULL);
        double xv[3] = {0.25, -0.5, 1.5};
        int64_t n = 3;
        gr_array *xa = gr_array_from(GR_F64, 1, &n, xv);
        const gr_array *in[1], *out[1];
        int i;
        in[0] = xa;
        CHECK(f != NULL);
        if (f && gr_call(f, in, out) == GR_OK)
            for (i = 0; i < 3; i++) CHECK_NEAR(gr_array_get(out[0], i), 2 * cos(2 * xv[i]), 1e-14);
        else CHECK(0);
        gr_array_free(xa);
        gr_fn_free(f);
    }
    gr_graph_free(g);
}

/* a NULL callback (the default, or set back to NULL) is never called; the gradient is the same */
TEST(test_progress_null_callback) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x");
    gr_var *gx = NULL;
    gr_fn *f;
    tg_log l;
    memset(&l, 0, sizeof l);
    gr_graph_set_progress(g, tg_hear, &l);
    gr_graph_set_progress(g, NULL, &l);
    gr_graph_set_progress(NULL, tg_hear, &l);  /* no graph: nothing happens */
    gx = gr_grad1(gr_mul(gr_exp(x), x), x);
    f = gr_function(1, &x, 1, &gx, NULL);
    CHECK(f != NULL);
    CHECK_EQ_INT(l.n, 0);
    if (f) {
        gr_array *xa = gr_array_scalar(GR_F64, 0.75);
        const gr_array *in[1], *out[1];
        in[0] = xa;
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        CHECK_NEAR(gr_array_get(out[0], 0), exp(0.75) * 1.75, 1e-14);   /* d/dx x e^x = (1 + x) e^x */
        gr_array_free(xa);
    }
    gr_fn_free(f);
    gr_graph_free(g);
}

SUITE(suite_progress) = {
    CASE(test_progress_stages_in_order),
    CASE(test_progress_bounded_rate),
    CASE(test_progress_nested_grad),
    CASE(test_progress_null_callback),
    END_SUITE
};
