/* tests/t_rewrite.c: the rewrites gr_function applies (src/rewrite.c and the op rules) fire (the optimised graph shows it) and keeps
   the values of GR_OPT_NONE. */
#include "harness.h"

/* the printed optimised graph of a function of ins -> out, in buf */
static void print_fn(gr_fn *f, char *buf, size_t size) {
    FILE *t = tmpfile();
    size_t n;
    buf[0] = 0;
    if (!t) return;
    gr_fn_print(t, f);
    rewind(t);
    n = fread(buf, 1, size - 1, t);
    buf[n] = 0;
    fclose(t);
}

/* out evaluated at both levels on xs (a vector): same values; returns the node counts */
static void both_levels(gr_var *x, gr_var *out, const double *xs, int64_t n, size_t *full, size_t *none, char *printed, size_t psize) {
    gr_fn_opts o;
    gr_fn *ff, *fn;
    gr_array *xa = gr_array_from(GR_F64, 1, &n, xs);
    const gr_array *in[1], *r1[1], *r2[1];
    int64_t k;
    memset(&o, 0, sizeof o);
    ff = gr_function(1, &x, 1, &out, NULL);
    o.optimize = GR_OPT_NONE;
    fn = gr_function(1, &x, 1, &out, &o);
    CHECK(ff && fn);
    in[0] = xa;
    if (ff && fn && gr_call(ff, in, r1) == GR_OK && gr_call(fn, in, r2) == GR_OK) {
        CHECK_EQ_INT(r1[0]->size, r2[0]->size);
        for (k = 0; k < r1[0]->size && k < r2[0]->size; k++) CHECK_NEAR(gr_array_get(r1[0], k), gr_array_get(r2[0], k), 1e-14);
    } else CHECK_MSG(0, "a call failed: %s %s", ff ? gr_fn_message(ff) : "", fn ? gr_fn_message(fn) : "");
    *full = gr_fn_node_count(ff);
    *none = gr_fn_node_count(fn);
    if (printed) print_fn(ff, printed, psize);
    gr_fn_free(ff);
    gr_fn_free(fn);
    gr_array_free(xa);
}

static const double xs[4] = { 0.3, -1.2, 2.5, 0.01 };

TEST(test_rewrite_algebra) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    size_t full, none;
    char buf[4096];
    /* x*1 + 0 - 0 -> x: nothing left to compute but the copy of the input */
    both_levels(x, gr_sub(gr_add(gr_mul(x, gr_const(g, 1)), gr_const(g, 0)), gr_const(g, 0)), xs, 4, &full, &none, NULL, 0);
    CHECK_EQ_INT(full, 0);
    CHECK_EQ_INT(none, 3);
    /* neg(neg(exp x)) -> exp x */
    both_levels(x, gr_neg(gr_neg(gr_exp(x))), xs, 4, &full, &none, buf, sizeof buf);
    CHECK_EQ_INT(full, 1);
    CHECK(strstr(buf, "Neg") == NULL);
    /* merging: exp(x) + exp(x) computes exp once */
    both_levels(x, gr_add(gr_exp(x), gr_exp(x)), xs, 4, &full, &none, buf, sizeof buf);
    CHECK_MSG(strstr(buf, "Exp") && !strstr(strstr(buf, "Exp") + 3, "Exp"), "Exp computed twice:\n%s", buf);
    CHECK_EQ_INT(none, 3);
    /* constant folding: x * (2 * 3 + 1) multiplies by one constant */
    both_levels(x, gr_mul(x, gr_add(gr_mul(gr_const(g, 2), gr_const(g, 3)), gr_const(g, 1))), xs, 4, &full, &none, buf, sizeof buf);
    CHECK_EQ_INT(full, 1);
    CHECK_MSG(strstr(buf, "Mul(x, 7)") != NULL, "not folded:\n%s", buf);
    /* a zero gradient: d/dx (x * zero_grad(x)) = zero_grad(x) + x * 0 -> x */
    both_levels(x, gr_grad1(gr_sum(gr_mul(x, gr_zero_grad(x))), x), xs, 4, &full, &none, buf, sizeof buf);
    CHECK(full < none);
    CHECK_MSG(strstr(buf, "BroadcastLike(0") == NULL, "zeros survive the rewrites:\n%s", buf);
    gr_graph_free(g);
}

/* occurrences of word in s */
static int count_of(const char *s, const char *word) {
    int n = 0;
    for (s = strstr(s, word); s; s = strstr(s + 1, word)) n++;
    return n;
}

/* merging finds equal nodes whether few nodes are filed under their newest input (its list) or
   many (the table): dot(a, b) is built before and after b turns hot, cumsum(a) twice after a does */
TEST(test_rewrite_merge_hot_inputs) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    gr_var *ca[40], *cb[40], *a, *b, *t1, *t2, *c1, *c2, *acc;
    size_t full, none;
    char buf[16384];
    int k;
    for (k = 0; k < 40; k++) { ca[k] = gr_const(g, k + 2.0); cb[k] = gr_const(g, k + 3.0); }   /* older than a and b */
    a = gr_exp(x);
    b = gr_sin(x);
    t1 = gr_dot(a, b);
    acc = gr_add(t1, gr_dot(b, a));                 /* not equal to t1: the operands' order differs */
    for (k = 0; k < 40; k++)                        /* forty readers of a and of b, filed under them */
        acc = gr_add(acc, gr_sum(gr_add(gr_mul(a, ca[k]), gr_mul(b, cb[k]))));
    t2 = gr_dot(a, b);
    c1 = gr_cumsum(a, 0);
    c2 = gr_cumsum(a, 0);
    acc = gr_add(gr_add(acc, t2), gr_sum(gr_mul(c1, c2)));
    both_levels(x, acc, xs, 4, &full, &none, buf, sizeof buf);
    CHECK_MSG(count_of(buf, "= Dot(") == 2, "dot(a, b) and dot(b, a) expected once each:\n%.2000s", buf);
    CHECK_MSG(count_of(buf, "= CumSum(") == 1, "cumsum(a) expected once:\n%.2000s", buf);
    CHECK(full < none);
    gr_graph_free(g);
}

TEST(test_rewrite_stabilise) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");
    size_t full, none;
    char buf[4096];
    both_levels(x, gr_log(gr_softmax(x, 0)), xs, 4, &full, &none, buf, sizeof buf);
    CHECK(strstr(buf, "LogSoftmax") != NULL && strstr(buf, "= Log(") == NULL);
    both_levels(x, gr_log(gr_add(gr_const(g, 1), gr_sqr(x))), xs, 4, &full, &none, buf, sizeof buf);
    CHECK(strstr(buf, "Log1p") != NULL);
    both_levels(x, gr_log(gr_sigmoid(x)), xs, 4, &full, &none, buf, sizeof buf);
    CHECK(strstr(buf, "Softplus") != NULL && strstr(buf, "Sigmoid") == NULL);
    both_levels(x, gr_sub(gr_exp(x), gr_const(g, 1)), xs, 4, &full, &none, buf, sizeof buf);
    CHECK(strstr(buf, "Expm1") != NULL);
    gr_graph_free(g);
    {   /* log(softmax) is exact where the naive form underflows: logits of magnitude 1e3 */
        double big[3] = { 1000, 0, -1000 }, want = -2000.0;
        int64_t n = 3;
        gr_graph *g2 = gr_graph_new();
        gr_var *v = gr_vector(g2, GR_F64, "v"), *y = gr_log(gr_softmax(v, 0));
        gr_fn *f = gr_function(1, &v, 1, &y, NULL);
        gr_array *a = gr_array_from(GR_F64, 1, &n, big);
        const gr_array *in[1], *out[1];
        in[0] = a;
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        CHECK_NEAR(gr_array_get(out[0], 2), want, 1e-12);
        gr_fn_free(f);
        gr_array_free(a);
        gr_graph_free(g2);
    }
}

TEST(test_rewrite_transpose_flags) {
    gr_graph *g = gr_graph_new();
    gr_var *A = gr_matrix(g, GR_F64, "A"), *B = gr_matrix(g, GR_F64, "B"), *ins[2];
    gr_var *y = gr_dot(gr_transpose(A), gr_transpose(gr_transpose(B)));
    gr_fn *f;
    double av[6] = { 1, 2, 3, 4, 5, 6 }, bv[6] = { 1, 0, -1, 2, 0.5, 3 };
    int64_t s23[2] = { 2, 3 };
    gr_array *a = gr_array_from(GR_F64, 2, s23, av), *b = gr_array_from(GR_F64, 2, s23, bv);
    const gr_array *in[2], *out[1];
    char buf[2048];
    int i, j, k;
    ins[0] = A; ins[1] = B;
    f = gr_function(2, ins, 1, &y, NULL);
    print_fn(f, buf, sizeof buf);
    CHECK_MSG(gr_fn_node_count(f) == 1 && strstr(buf, "DimShuffle") == NULL, "a transpose is copied:\n%s", buf);
    in[0] = a; in[1] = b;
    CHECK_STATUS(gr_call(f, in, out), GR_OK);
    for (i = 0; i < 3; i++)
        for (j = 0; j < 3; j++) {
            double s = 0;
            for (k = 0; k < 2; k++) s += av[k * 3 + i] * bv[k * 3 + j];
            CHECK_NEAR(gr_array_get(out[0], i * 3 + j), s, 1e-14);
        }
    gr_fn_free(f);
    gr_array_free(a); gr_array_free(b);
    gr_graph_free(g);
}

/* the printed graph has one Fused node running exactly the ops `ops` ("{Exp Mul}") */
static int fused_ops_are(const char *printed, const char *ops) {
    const char *b = strstr(printed, "Fused(");
    size_t n = strlen(ops);
    return b && strchr(b, '{') && strncmp(strchr(b, '{'), ops, n) == 0 && strchr(b, '{')[n] == '\n' && !strstr(b + 1, "Fused(");
}
/* y of x (vector, xs) under both levels, equal to a relative 1e-15; the optimised one printed */
static void scale_case(gr_var *x, gr_var *y, gr_dtype dt, char *buf, size_t size) {
    gr_fn_opts o;
    gr_fn *ff, *fn;
    int64_t n = 4, k;
    gr_array *xa = gr_array_new(dt, 1, &n);
    const gr_array *in[1], *r1[1], *r2[1];
    for (k = 0; k < n; k++) gr_array_set(xa, k, xs[k]);
    memset(&o, 0, sizeof o);
    o.optimize = GR_OPT_NONE;
    ff = gr_function(1, &x, 1, &y, NULL);
    fn = gr_function(1, &x, 1, &y, &o);
    in[0] = xa;
    buf[0] = 0;
    CHECK(ff && fn);
    if (ff && fn && gr_call(ff, in, r1) == GR_OK && gr_call(fn, in, r2) == GR_OK) {
        CHECK_EQ_INT(r1[0]->dtype, r2[0]->dtype);
        for (k = 0; k < r1[0]->size; k++) {
            double u = gr_array_get(r1[0], k), v = gr_array_get(r2[0], k);
            CHECK_MSG(fabs(u - v) <= (r2[0]->dtype == GR_F32 ? 1e-6 : 1e-15) * fabs(v), "element %d: %.17g vs %.17g", (int)k, u, v);
        }
        print_fn(ff, buf, size);
    }
    gr_fn_free(ff);
    gr_fn_free(fn);
    gr_array_free(xa);
}

TEST(test_rewrite_constant_factors) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *x32 = gr_vector(g, GR_F32, "x32"), *e = gr_exp(x), *s = gr_sin(x), *gx;
    char buf[4096];
    /* mul(2, mul(3, exp x)): one product by 6 */
    scale_case(x, gr_mul(gr_const(g, 2), gr_mul(gr_const(g, 3), e)), GR_F64, buf, sizeof buf);
    CHECK_MSG(fused_ops_are(buf, "{Exp Mul}"), "not Exp * 6:\n%s", buf);
    /* neg(mul(2, exp x)) and mul(2, neg(exp x)): a product by -2 */
    scale_case(x, gr_neg(gr_mul(gr_const(g, 2), e)), GR_F64, buf, sizeof buf);
    CHECK_MSG(fused_ops_are(buf, "{Exp Mul}"), "not Exp * -2:\n%s", buf);
    scale_case(x, gr_mul(gr_neg(e), gr_const(g, 2)), GR_F64, buf, sizeof buf);
    CHECK_MSG(fused_ops_are(buf, "{Exp Mul}"), "not Exp * -2:\n%s", buf);
    /* mul(mul(2, exp x), mul(3, sin x)): 6 (exp x sin x), two products instead of three */
    scale_case(x, gr_mul(gr_mul(gr_const(g, 2), e), gr_mul(s, gr_const(g, 3))), GR_F64, buf, sizeof buf);
    CHECK_MSG(fused_ops_are(buf, "{Exp Sin Mul Mul}"), "three products:\n%s", buf);
    /* the gradient of sum(3 exp x): ones broadcast to x's shape times 3 exp x is 3 exp x */
    gx = gr_grad1(gr_sum(gr_mul(gr_const(g, 3), e)), x);
    scale_case(x, gx, GR_F64, buf, sizeof buf);
    CHECK_MSG(fused_ops_are(buf, "{Exp Mul}") && !strstr(buf, "BroadcastLike"), "ones kept:\n%s", buf);
    /* a float32 operand under a float64 constant is promoted: nothing gathered across the cast */
    {
        gr_array *c64 = gr_array_scalar(GR_F64, 0.1);
        gr_var *y = gr_mul(gr_constant(g, c64), gr_mul(gr_const(g, 3), gr_exp(x32)));
        scale_case(x32, y, GR_F32, buf, sizeof buf);
        CHECK(gr_var_dtype(y) == GR_F64);
        /* mul(mul(0.1, x32), x32) is a float64 product of float32 values: x32 * x32 must not be
           taken in float32 first (1e-15 relative would fail) */
        y = gr_mul(gr_mul(gr_constant(g, c64), x32), x32);
        scale_case(x32, y, GR_F32, buf, sizeof buf);
        y = gr_mul(x32, gr_mul(x32, gr_constant(g, c64)));
        scale_case(x32, y, GR_F32, buf, sizeof buf);
        gr_array_free(c64);
    }
    /* Rosenbrock's gradient: its elementwise part is eight ops (thirteen before the factors gathered),
       and the two slices' gradients are added into the result in the same pass (two ScatterAdd) */
    {
        gr_var *h = gr_slice(x, 0, 0, -1, 1), *t = gr_slice(x, 0, 1, GR_OPEN, 1);
        gr_var *a = gr_sub(t, gr_sqr(h)), *b = gr_sub(gr_const(g, 1), h);
        gr_var *f = gr_sum(gr_add(gr_mul(gr_const(g, 100), gr_sqr(a)), gr_sqr(b)));
        gr_fn *fg;
        gx = gr_grad1(f, x);
        fg = gr_function(1, &x, 1, &gx, NULL);
        CHECK(fg != NULL);
        if (fg) {
            int ops = 0;
            const char *p;
            print_fn(fg, buf, sizeof buf);
            p = strstr(buf, "Fused(") ? strchr(strstr(buf, "Fused("), '{') : NULL;
            for (; p && *p && *p != '}'; p++) if (*p == ' ') ops++;
            ops -= 2;                                 /* (the two ScatterAdd) */
            CHECK_MSG(strstr(buf, "Fused(") && ops + 1 <= 8 && !strstr(buf, "Neg"), "%d ops:\n%s", ops + 1, buf);
            CHECK_MSG(gr_fn_node_count(fg) == 3 && strstr(buf, "ScatterAdd ScatterAdd}") && !strstr(buf, "ViewUpdate") && !strstr(buf, "BroadcastLike"),
                      "the slices' gradients not added in the pass:\n%s", buf);
            gr_fn_free(fg);
        }
    }
    gr_graph_free(g);
}

SUITE(suite_rewrite) = { CASE(test_rewrite_algebra), CASE(test_rewrite_merge_hot_inputs), CASE(test_rewrite_stabilise), CASE(test_rewrite_transpose_flags), CASE(test_rewrite_constant_factors), END_SUITE };
