/* tests/t_print.c: the printers (issue 19, item 1): gr_pp's infix text against the precedence
   and associativity of Aesara's operators (each expected string written by hand from the rules:
   a parenthesis exactly where dropping it would change the value), gr_debugprint's tree and
   gr_print's list of small graphs and of a loop with its body (expected text written from the
   graphs' construction: ids in creation order), a folded constant shown by gr_fn_print, DOT that
   is well formed (every DOT written goes to $GT_DOT_DIR when set, where `make test-dot` runs
   `dot -Tsvg` on it), the op-name rule (CamelCase rows everywhere but gr_pp, messages), printing
   a chain of 20,000 nodes (no recursion), and NULL arguments. */
#include "harness.h"
#include <stdlib.h>

/* what print(fp) wrote, in a malloc'd string (NULL when no temporary file could be made) */
static char *tp_slurp(FILE *fp) {
    long n;
    char *s;
    if (!fp) return NULL;
    n = ftell(fp);
    rewind(fp);
    s = (char *)malloc((size_t)n + 1);
    if (s) s[fread(s, 1, (size_t)n, fp)] = 0;
    fclose(fp);
    return s;
}
static char *tp_pp(gr_var *v) { FILE *fp = tmpfile(); if (fp) gr_pp(fp, v); return tp_slurp(fp); }
static char *tp_tree(int n, gr_var *const *vs) { FILE *fp = tmpfile(); if (fp) gr_debugprint(fp, n, vs); return tp_slurp(fp); }
static char *tp_list(gr_var *v) { FILE *fp = tmpfile(); if (fp) gr_print(fp, v); return tp_slurp(fp); }
static char *tp_fn(const gr_fn *f) { FILE *fp = tmpfile(); if (fp) gr_fn_print(fp, f); return tp_slurp(fp); }

#define CHECK_TEXT(got, want) do { const char *tp_g_ = (got), *tp_w_ = (want); \
    CHECK_MSG(tp_g_ && strcmp(tp_g_, tp_w_) == 0, "printed:\n%s\nexpected:\n%s", tp_g_ ? tp_g_ : "(nothing)", tp_w_); } while (0)

/* checks s, then frees it */
static void tp_is(char *s, const char *want, int line) {
    if (!s || strcmp(s, want) != 0) gt_fail(__FILE__, line, "printed:\n%s\nexpected:\n%s", s ? s : "(nothing)", want);
    gt.checks++;
    free(s);
}
#define TP_IS(s, want) tp_is((s), (want), __LINE__)

/* DOT text: a digraph, braces balanced, every statement line ends in ';', '{' or '}' and every
   quoted string closes on its line; written to $GT_DOT_DIR/<name>.dot when the variable is set */
static void tp_dot_ok(const char *dot, const char *name) {
    const char *dir = getenv("GT_DOT_DIR"), *p;
    int depth = 0, bad = 0;
    CHECK(dot != NULL);
    if (!dot) return;
    CHECK_MSG(strncmp(dot, "digraph ", 8) == 0, "%s: DOT starts with '%.20s'", name, dot);
    for (p = dot; *p; ) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int quotes = 0;
        size_t i;
        for (i = 0; i < len; i++) {
            if (p[i] == '\\') { i++; continue; }
            if (p[i] == '"') quotes ^= 1;
            else if (!quotes && p[i] == '{') depth++;
            else if (!quotes && p[i] == '}') depth--;
        }
        if (quotes || depth < 0 || (len && strchr(";{}", p[len - 1]) == NULL)) bad++;
        p += len + (e ? 1 : 0);
    }
    CHECK_MSG(depth == 0 && bad == 0, "%s: DOT not well formed (depth %d, %d bad lines):\n%s", name, depth, bad, dot);
    if (dir && *dir) {
        char path[512];
        FILE *fp;
        snprintf(path, sizeof path, "%s/%s.dot", dir, name);
        fp = fopen(path, "w");
        CHECK_MSG(fp != NULL, "cannot write %s", path);
        if (fp) { fputs(dot, fp); fclose(fp); }
    }
}
static char *tp_dot(int n, gr_var *const *vs) { FILE *fp = tmpfile(); if (fp) gr_print_dot(fp, n, vs); return tp_slurp(fp); }
static char *tp_fn_dot(const gr_fn *f) { FILE *fp = tmpfile(); if (fp) gr_fn_print_dot(fp, f); return tp_slurp(fp); }

/* ---- gr_pp ------------------------------------------------------------------------------------ */

TEST(test_pp_precedence) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *y = gr_scalar(g, GR_F64, "y"), *z = gr_scalar(g, GR_F64, "z");
    TP_IS(tp_pp(gr_add(gr_mul(x, y), z)), "x * y + z\n");
    TP_IS(tp_pp(gr_mul(gr_add(x, y), z)), "(x + y) * z\n");
    TP_IS(tp_pp(gr_mul(z, gr_add(x, y))), "z * (x + y)\n");
    TP_IS(tp_pp(gr_add(x, gr_add(y, z))), "x + y + z\n");                    /* + associates */
    TP_IS(tp_pp(gr_sub(gr_sub(x, y), z)), "x - y - z\n");
    TP_IS(tp_pp(gr_sub(x, gr_sub(y, z))), "x - (y - z)\n");
    TP_IS(tp_pp(gr_sub(x, gr_add(y, z))), "x - (y + z)\n");
    TP_IS(tp_pp(gr_div(x, gr_mul(y, z))), "x / (y * z)\n");
    TP_IS(tp_pp(gr_div(gr_mul(x, y), z)), "x * y / z\n");
    TP_IS(tp_pp(gr_pow(gr_pow(x, y), z)), "(x ** y) ** z\n");
    TP_IS(tp_pp(gr_pow(x, gr_pow(y, z))), "x ** y ** z\n");                  /* ** associates to the right */
    TP_IS(tp_pp(gr_neg(gr_add(x, y))), "-(x + y)\n");
    TP_IS(tp_pp(gr_pow(gr_neg(x), gr_const(g, 2.0))), "(-x) ** 2\n");
    TP_IS(tp_pp(gr_neg(gr_pow(x, gr_const(g, 2.0)))), "-x ** 2\n");          /* Python's -(x ** 2) */
    TP_IS(tp_pp(gr_mod(gr_mul(x, y), z)), "x * y % z\n");
    TP_IS(tp_pp(gr_logical_and(gr_gt(x, y), gr_lt(y, z))), "(x > y) & (y < z)\n");
    TP_IS(tp_pp(gr_logical_not(gr_eq(x, y))), "~(x == y)\n");
    TP_IS(tp_pp(gr_sin(gr_add(x, gr_cos(y)))), "sin(x + cos(y))\n");
    TP_IS(tp_pp(gr_mul(gr_exp(x), gr_const(g, 0.5))), "exp(x) * 0.5\n");
    TP_IS(tp_pp(x), "x\n");
    gr_graph_free(g);
}

/* a named variable other than the one printed shows its name; gradients carry gr_grad's names */
TEST(test_pp_names_and_gradients) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *w = gr_vector(g, GR_F64, "w");
    gr_var *t = gr_mul(x, w), *c, *dw;
    gr_var_set_name(t, "t");
    c = gr_sum(gr_add(t, x));
    gr_var_set_name(c, "cost");
    TP_IS(tp_pp(t), "x * w\n");                                              /* the root is expanded */
    TP_IS(tp_pp(c), "Sum(t + x)\n");
    dw = gr_grad1(c, w);
    CHECK(gr_var_name(dw) && strcmp(gr_var_name(dw), "(dcost/dw)") == 0);
    TP_IS(tp_pp(gr_sub(w, gr_mul(gr_const(g, 0.1), dw))), "w - 0.1 * (dcost/dw)\n");
    {                                                                        /* a second output of a node */
        gr_var *p[2];
        int64_t sizes[2] = { 1, 2 };
        int64_t three = 3;
        gr_var *x3 = gr_tensor(g, GR_F64, 1, &three, "v");
        CHECK_STATUS(gr_split(x3, 0, 2, sizes, p), GR_OK);
        TP_IS(tp_pp(gr_mul(p[1], p[1])), "Split(v)[1] * Split(v)[1]\n");
    }
    gr_graph_free(g);
}

/* ---- gr_debugprint and gr_print ----------------------------------------------------------------- */

TEST(test_debugprint_tree) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x");                           /* #0 */
    gr_var *s = gr_sin(x);                                            /* #1 */
    gr_var *y = gr_mul(s, x);                                         /* #2 */
    gr_var *z = gr_add(y, gr_const(g, 2.0));                          /* #3 the constant, #4 */
    gr_var *both[2];
    gr_var_set_name(y, "y");
    TP_IS(tp_tree(1, &y),
          "Mul #2 'y' float64 (?)\n"
          " |Sin #1 float64 (?)\n"
          " | |x #0 float64 (?)\n"
          " |x #0 float64 (?)\n");
    both[0] = y; both[1] = z;                                         /* y again under z: not redrawn */
    TP_IS(tp_tree(2, both),
          "Mul #2 'y' float64 (?)\n"
          " |Sin #1 float64 (?)\n"
          " | |x #0 float64 (?)\n"
          " |x #0 float64 (?)\n"
          "Add #4 float64 (?)\n"
          " |Mul #2 'y' (above)\n"
          " |2 #3 float64 ()\n");
    TP_IS(tp_list(z),
          "  #1:float64(?) = Sin(x)\n"
          "  y:float64(?) = Mul(#1, x)\n"
          "  #4:float64(?) = Add(y, 2)\n");
    TP_IS(tp_tree(1, &x), "x #0 float64 (?)\n");
    gr_graph_free(g);
}

/* the bars of a level stay open while inputs below it follow; constants, shared variables and
   unnamed inputs say what they are */
TEST(test_debugprint_leaves_and_bars) {
    gr_graph *g = gr_graph_new();
    int64_t two = 2;
    double cv[2] = { 1.5, -2.0 };
    gr_array *ca = gr_array_from(GR_F64, 1, &two, cv);
    gr_var *a = gr_tensor(g, GR_F32, 1, &two, NULL);                  /* #0 */
    gr_var *w = gr_shared(g, ca, "w");                                /* #1 */
    gr_var *c = gr_constant(g, ca);                                   /* #2 */
    gr_var *e = gr_exp(gr_add(w, c));                                 /* #3, #4 */
    gr_var *r = gr_mul(e, gr_cast(a, GR_F64));                        /* #5 Cast, #6 */
    TP_IS(tp_tree(1, &r),
          "Mul #6 float64 (2)\n"
          " |Exp #4 float64 (2)\n"
          " | |Add #3 float64 (2)\n"
          " |   |w #1 float64 (2) shared\n"
          " |   |constant #2 float64 (2) = [1.5, -2]\n"
          " |Cast{float64} #5 float64 (2)\n"
          "   |input #0 float32 (2)\n");
    gr_array_free(ca);
    gr_graph_free(g);
}

/* a loop: its body indented under its node, in the tree and in the list */
static gr_status tp_acc_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = gr_add(in[0], in[1]);                                    /* h_t = x_t + h_{t-1} */
    return GR_OK;
}
static gr_var *tp_acc_loop(gr_graph *g) {
    gr_var *x = gr_vector(g, GR_F64, "x"), *h0 = gr_scalar(g, GR_F64, "h0"), *r = NULL;
    gr_scan_seq sq;
    gr_scan_out so;
    gr_scan_opts op;
    memset(&sq, 0, sizeof sq); memset(&so, 0, sizeof so); memset(&op, 0, sizeof op);
    sq.x = x; so.initial = h0; op.name = "acc";
    CHECK_STATUS(gr_scan(tp_acc_step, NULL, 1, &sq, 1, &so, 0, NULL, &op, &r), GR_OK);
    return r;
}

TEST(test_print_loop_body) {
    gr_graph *g = gr_graph_new();
    gr_var *r = tp_acc_loop(g);                                       /* x #0, h0 #1, the loop's #2 and #3 */
    CHECK(r != NULL);
    if (r) {
        char *t = tp_tree(1, &r), *l = tp_list(r), *d = tp_dot(1, &r);
        /* the body's own graph numbers its variables from 0: x_t #0, h_{t-1} #1, their sum #2; the
           loop's outputs come after the variables gr_scan makes for it (their ids are read back) */
        unsigned long id0 = 0, id1 = 0;
        const char *body = t ? strchr(t, '\n') : NULL;
        CHECK(t && sscanf(t, "Scan.0 'acc' #%lu float64 (?)\n", &id0) == 1 && id0 > 1);
        CHECK_TEXT(body, "\n |    body of 'acc' (inputs: #0 #1):\n"
                         " |    Add #2 float64 ()\n"
                         " |     |input #0 float64 ()\n"
                         " |     |input #1 float64 ()\n"
                         " |    outputs of 'acc': #2\n"
                         " |x #0 float64 (?)\n"
                         " |h0 #1 float64 ()\n");
        body = l ? strchr(l, '\n') : NULL;
        CHECK(l && sscanf(l, "  #%lu:float64(?), #%lu:int64() = Scan(x, h0) 'acc'\n", &id0, &id1) == 2 && id1 == id0 + 1);
        CHECK_TEXT(body, "\n      body of 'acc' (inputs: #0 #1):\n"
                         "      #2:float64() = Add(#0, #1)\n"
                         "      outputs of 'acc': #2\n");
        free(t); free(l);
        tp_dot_ok(d, "loop");
        CHECK(d && strstr(d, "subgraph cluster_1 {") && strstr(d, "label=\"body of 'acc'\"") &&
              strstr(d, "g1n0 -> g0n") &&
              strstr(d, " [style=dashed, label=\"body 0\"];\n"));
        free(d);
    }
    gr_graph_free(g);
}

/* ---- compiled functions ---------------------------------------------------------------------- */

/* a folded constant is shown: (c1 + c2) * x folds c1 + c2 = [11, 22, 33] */
TEST(test_fn_print_folded_constant) {
    gr_graph *g = gr_graph_new();
    int64_t three = 3;
    double c1[3] = { 1, 2, 3 }, c2[3] = { 10, 20, 30 }, xs[3] = { 2, 3, 4 };
    gr_array *a1 = gr_array_from(GR_F64, 1, &three, c1), *a2 = gr_array_from(GR_F64, 1, &three, c2);
    gr_array *xa = gr_array_from(GR_F64, 1, &three, xs);
    gr_var *x = gr_vector(g, GR_F64, "x");
    gr_var *y = gr_dot(gr_add(gr_constant(g, a1), gr_constant(g, a2)), x);
    gr_fn *f = gr_function(1, &x, 1, &y, NULL);
    CHECK(f != NULL);
    if (f) {
        const gr_array *in[1], *out[1];
        char *s = tp_fn(f), *d = tp_fn_dot(f);
        in[0] = xa;
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        CHECK_NEAR(gr_array_get(out[0], 0), 11 * 2 + 22 * 3 + 33 * 4, 1e-12);
        CHECK_CONTAINS(s, "constants:\n");
        CHECK_CONTAINS(s, " = [11, 22, 33] :float64(3)\n");
        CHECK_MSG(s && !strstr(s, "Add"), "the constants' sum is folded:\n%s", s ? s : "");
        tp_dot_ok(d, "fn_folded");
        CHECK_CONTAINS(d, "label=\"[11, 22, 33]\\n#");
        free(s); free(d);
        gr_fn_free(f);
    }
    gr_array_free(a1); gr_array_free(a2); gr_array_free(xa);
    gr_graph_free(g);
}

/* the naming rule (ops/README.md, "Printed names"): an elementwise row prints as the CamelCase of
   its row name (logical_and: LogicalAnd, arctan2: Arctan2), in every printer and in a fused
   group's instructions (sin and cos of one operand: SinCos); gr_pp keeps its spellings (& and
   arctan2(a, b)); a message about a node's op names it the same way, one about the user's call
   names the constructor. Each expected line is written from the graph built here. */
TEST(test_print_op_names) {
    gr_graph *g = gr_graph_new();
    gr_var *a = gr_vector(g, GR_F64, "a"), *b = gr_vector(g, GR_F64, "b");
    gr_var *gtab = gr_gt(a, b);
    gr_var *both = gr_logical_and(gtab, gr_lt(a, b));
    gr_var *at = gr_arctan2(a, b);
    gr_var *sa = gr_sin(a);
    gr_var *sc = gr_mul(sa, gr_cos(a));
    gr_var *p, *q, *dsa = NULL;
    int64_t three = 3, four = 4;
    gr_fn *f;
    char *s, *d;
    TP_IS(tp_list(both), "  #2:bool(?) = Gt(a, b)\n  #3:bool(?) = Lt(a, b)\n  #4:bool(?) = LogicalAnd(#2, #3)\n");
    TP_IS(tp_pp(both), "(a > b) & (a < b)\n");
    TP_IS(tp_tree(1, &at), "Arctan2 #5 float64 (?)\n |a #0 float64 (?)\n |b #1 float64 (?)\n");
    TP_IS(tp_pp(at), "arctan2(a, b)\n");
    d = tp_dot(1, &both);
    tp_dot_ok(d, "op_names");
    CHECK_CONTAINS(d, "label=\"LogicalAnd\\n#4 bool (?)\"");
    free(d);
    f = gr_function(1, &a, 1, &sc, NULL);
    s = tp_fn(f);
    CHECK_CONTAINS(s, "= Fused(a) {SinCos Mul}\n");
    d = tp_fn_dot(f);
    tp_dot_ok(d, "op_names_fused");
    CHECK_CONTAINS(d, "label=\"SinCos\"");
    free(s); free(d);
    gr_fn_free(f);
    p = gr_tensor(g, GR_BOOL, 1, &three, "p");
    q = gr_tensor(g, GR_BOOL, 1, &four, "q");
    CHECK(gr_logical_or(p, q) == NULL);
    CHECK_CONTAINS(gr_graph_message(g), "gr_logical_or: shapes do not broadcast");   /* the user's call */
    gr_graph_clear_error(g);
    CHECK_STATUS(gr_grad(gr_sum(b), 1, &sa, &dsa, NULL), GR_ERR_DISCONNECTED_INPUT);   /* a node's op */
    CHECK_CONTAINS(gr_graph_message(g), "#6 (Sin)");
    gr_graph_free(g);
}

/* a fused group is a cluster holding one DOT node per instruction, the immediate 0.5 drawn */
TEST(test_fn_print_dot_fused) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *w = gr_vector(g, GR_F64, "w");
    gr_var *y = gr_sum(gr_mul(gr_exp(gr_add(x, w)), gr_const(g, 0.5)));
    gr_var *outs[2];
    gr_var *ins[2];
    gr_fn *f;
    gr_var_set_name(y, "y");
    ins[0] = x; ins[1] = w;
    outs[0] = y; outs[1] = gr_grad1(y, w);
    f = gr_function(2, ins, 2, outs, NULL);
    CHECK(f != NULL);
    if (f) {
        char *d = tp_fn_dot(f), *s = tp_fn(f);
        tp_dot_ok(d, "fn_fused");
        CHECK_CONTAINS(s, "= Fused(");
        CHECK_CONTAINS(d, "subgraph cluster_f");
        CHECK_CONTAINS(d, "label=\"Exp\"");
        CHECK_CONTAINS(d, "label=\"0.5\"");
        CHECK_CONTAINS(d, "label=\"output 1\"");
        CHECK_CONTAINS(d, "label=\"x\\n#");
        free(d); free(s);
        gr_fn_free(f);
    }
    {                                                                /* the graph itself, two roots */
        char *d = tp_dot(2, outs);
        tp_dot_ok(d, "grad_graph");
        CHECK_CONTAINS(d, "label=\"Sum\\ny #");
        CHECK_CONTAINS(d, "\\n(dy/dw) #");
        free(d);
    }
    gr_graph_free(g);
}

/* a loop and its gradient compiled: the bodies as clusters, a loop's gradient loop included */
TEST(test_print_dot_loop_gradient) {
    gr_graph *g = gr_graph_new();
    gr_var *r = tp_acc_loop(g);
    if (r) {
        gr_var *ins[2], *x, *c, *gx;
        gr_fn *f;
        ins[0] = x = gr_node_input(gr_var_owner(r), 0);
        ins[1] = gr_node_input(gr_var_owner(r), 1);
        c = gr_sum(gr_mul(r, r));
        gx = gr_grad1(c, x);
        f = gr_function(2, ins, 1, &gx, NULL);
        char *d = tp_dot(1, &gx), *t = tp_tree(1, &gx);
        tp_dot_ok(d, "loop_grad_graph");
        CHECK_CONTAINS(d, "body of 'grad_of_acc'");
        CHECK_CONTAINS(t, "    body of 'grad_of_acc' (inputs:");
        CHECK(f != NULL);
        if (f) {
            char *fd = tp_fn_dot(f);
            tp_dot_ok(fd, "loop_grad_fn");
            CHECK_CONTAINS(fd, "subgraph cluster_1 {");
            free(fd);
            gr_fn_free(f);
        }
        free(d); free(t);
    }
    gr_graph_free(g);
}

/* ---- large graphs, NULL arguments ------------------------------------------------------------- */

/* a chain of 20,000 links prints without recursion: a tree as deep as the chain (its bars drawn to
   depth 100, deeper lines saying their depth), an expression cut at 4000 characters */
TEST(test_print_long_chain) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *v = x;
    int k;
    char *s;
    for (k = 0; k < 20000; k++) v = gr_add(gr_mul(v, gr_const(g, 0.5)), x);
    s = tp_pp(v);
    CHECK(s && strlen(s) <= 4010 && strlen(s) > 3000 && strstr(s, "...\n") && s[0] == '(');
    free(s);
    s = tp_tree(1, &v);
    CHECK_CONTAINS(s, "[depth 39999] ");
    CHECK(s && strstr(s, "[depth 40000] ") && strstr(s, "|x #0 float64 ()\n"));
    free(s);
    s = tp_dot(1, &v);
    CHECK(s && strstr(s, "g0out0"));
    free(s);
    gr_graph_free(g);
}

TEST(test_print_null_arguments) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *nul = NULL;
    FILE *fp = tmpfile();
    gr_pp(NULL, x); gr_debugprint(NULL, 1, &x); gr_print_dot(NULL, 1, &x); gr_fn_print_dot(NULL, NULL);
    if (fp) {
        char *s;
        gr_pp(fp, NULL);
        gr_debugprint(fp, 0, &x);
        gr_debugprint(fp, 1, NULL);
        gr_fn_print_dot(fp, NULL);
        s = tp_slurp(fp);
        TP_IS(s, "");
    }
    TP_IS(tp_tree(1, &nul), "");
    TP_IS(tp_dot(1, &nul), "digraph gradient {\n  node [fontname=\"Helvetica\", fontsize=10];\n"
                           "  edge [fontname=\"Helvetica\", fontsize=9];\n}\n");
    gr_graph_free(g);
}

SUITE(suite_print) = {
    CASE(test_pp_precedence),
    CASE(test_pp_names_and_gradients),
    CASE(test_debugprint_tree),
    CASE(test_debugprint_leaves_and_bars),
    CASE(test_print_loop_body),
    CASE(test_fn_print_folded_constant),
    CASE(test_print_op_names),
    CASE(test_fn_print_dot_fused),
    CASE(test_print_dot_loop_gradient),
    CASE(test_print_long_chain),
    CASE(test_print_null_arguments),
    END_SUITE
};
