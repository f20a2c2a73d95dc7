/* src/rewrite.h: what gr_function's rewrites (at GR_OPT_FULL) share with the op rules.

   The machinery is generic and lives in src/: shape signatures (src/signature.c), simplification
   to a fixed point (src/simplify.c), merging and constant folding (src/merge.c), the pipeline that
   rebuilds every node through them (src/rewrite.c) and fusion (src/fuse.c). What is true of one op
   is a rule in its family file, named by its table row (ops/table.h):
     gr__<sig>_sig          the `sig` column: output 0's signature from the inputs';
     gr__<simp>_simplify    the `simp` column: a cheaper equivalent of a structural node;
     gr__<rule>_rewrite     a row of GR_ELEMWISE_REWRITES: a cheaper equivalent of an elementwise
                            node (the algebra: x + 0 -> x, x * 1 -> x, -(-x) -> x, ...).
   `none` in a column names the rule that knows nothing (gr__none_sig, gr__none_simplify).

   Shapes: each variable has a signature, one code per axis: a static size, or a symbol standing
   for an unknown size. Two axes with the same symbol have the same size in every call; an
   elementwise result keeps an axis's symbol when its operands agree on it. This tells when a
   rewrite keeps a result's shape, and (src/fuse.c) which elementwise nodes iterate alike. */

typedef struct gr__rewriter gr__rewriter;
struct gr__rewriter {
    gr_graph *cg;
    gr_graph *g;                 /* the source graph: a node the rewrites leave as it is is not copied */
    const gr_node *orig;         /* the source node being rebuilt (read once by gr__rw_build) */
    int level;                   /* GR_OPT_FULL or GR_OPT_NONE */
    gr_node **cse;               /* open addressing over the nodes filed under a hot key, or without inputs (see merging) */
    uint32_t *cse_hash;          /* each entry's hash: probes compare it before touching the node */
    uint32_t n_cse, cap_cse;
    int32_t *use_head;           /* by variable id of cg: the newest node filed under it (an index below), -1 none */
    uint32_t *use_count;         /* by variable id of cg: how many nodes are filed under it */
    uint32_t cap_use_head, cap_use_count;
    gr_node **use_node;          /* a filing: the node, and the next older one under the same key */
    int32_t *use_next;
    uint32_t n_use, cap_use_node, cap_use_next;
    int32_t *sig;                /* signature codes: >= 0 a symbol, < 0 the static size -code - 1 */
    uint32_t n_sig, cap_sig;
    int64_t *sig_at;             /* by variable id of cg: where its codes start, -1 when not yet known */
    uint32_t cap_sig_at;
    int32_t next_sym;
    int64_t *trim;               /* symbols of trimmed axes: (symbol, rows trimmed) -> symbol, open addressing */
    uint32_t n_trim, cap_trim;
    uint32_t *view;              /* the function's nodes as the copy made or reused them (ids, topological) */
    uint32_t *view_depth;        /* each one's depth: the longest path up from the leaves (fusion's order) */
    uint32_t n_view, cap_view, cap_view_depth;
    uint32_t *depth;             /* by variable id, during the copy: its producer's depth */
    uint32_t cap_depth;
    uint32_t *repl;              /* after fusion, by variable id: 1 + the id of the Fused output replacing it */
    uint32_t n_repl;
};

#define GR__SIG_STATIC(n) ((int32_t)(-(n) - 1))
#define GR__SIG_ONE GR__SIG_STATIC(1)

/* ---- the rules' forms -------------------------------------------------------------------------
   sig       out[0 .. ndim of output 0) arrives holding fresh symbols; the rule sets the axes it knows
             from the inputs' signatures (gr__sig_copy). What the static type knows wins afterwards.
   simplify  node op(params; in) about to be built: its replacement, built through gr__rw1 (so that
             it is rewritten in turn), with *done set (gr__replaced); NULL with *done still 0 when no
             rewrite applies. NULL with *done set: building the replacement failed.
   rewrite   the same for a node of elementwise row `row` on operands in. */
typedef void (*gr__sig_rule)(gr__rewriter *rw, const gr_node *node, int32_t *out);
typedef gr_var *(*gr__simplify_rule)(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done);
typedef gr_var *(*gr__rewrite_rule)(gr__rewriter *rw, int row, gr_var *const *in, int *done);

/* a rule's answer: node replaced by r (NULL: building it failed) */
static gr_var *gr__replaced(int *done, gr_var *r) {
    *done = 1;
    return r;
}

/* ---- what the rules may call -------------------------------------------------------------------- */

/* signatures (src/signature.c) */
static const int32_t *gr__sig(gr__rewriter *rw, const gr_var *v);
static void gr__sig_copy(gr__rewriter *rw, const gr_var *v, int32_t *out);   /* the pool may move: copy */
static int gr__sig_same(gr__rewriter *rw, const gr_var *a, const gr_var *b); /* the same shape in every call */
static int gr__sig_into(gr__rewriter *rw, const gr_var *x, const gr_var *r); /* x broadcasts to r's shape, keeping it */
static int32_t gr__sig_trimmed(gr__rewriter *rw, int32_t sym, int64_t k);    /* sym's axis with k rows trimmed off */

/* building through the rewrites (src/rewrite.c): the node's output, or NULL on failure */
static gr_var *gr__rw1(gr__rewriter *rw, const gr_op_def *op, const void *params, size_t psize, int n_in, gr_var *const *ins);
static gr_var *gr__rw_ew(gr__rewriter *rw, int row, gr_var *a, gr_var *b);  /* elementwise row on a (and b: two operands) */

/* recognising values (src/simplify.c) */
static int gr__rw_is_scalar(const gr_var *v, double c);                      /* the 0-d constant c */
static gr_var *gr__rw_filled(const gr_var *v, gr_var **ref);                 /* a fill (a FILL row): its value and ref */
static int gr__rw_zeros(const gr_var *v, gr_var **ref);                      /* a 0-d zero (*ref NULL) or one filled to ref */
static gr_var *gr__rw_zero_fill(gr__rewriter *rw, int dt, gr_var *ref);      /* zeros of dtype dt shaped like ref */

/* the fill: x broadcast to the shape of ref (ops/shape.c) */
static gr_var *gr__rw_fill(gr__rewriter *rw, gr_var *x, gr_var *ref);

/* banded matrices (ops/batch.c): Jacobians and Hessians kept as a few diagonals */
static int gr__banded_n(const gr_var *v);                                    /* its diagonals; 0: not banded */
static gr_var *gr__banded_diag(gr__rewriter *rw, const gr_var *v);           /* v = diag(d), square: d */
static gr_var *gr__rowsum_diag(gr__rewriter *rw, const gr_var *v, gr_var **like);   /* v = diag(d)'s rows summed like a vector: d */
#ifndef GR_NO_INDEX
struct gr__view_params;
static gr_var *gr__banded_cols(gr__rewriter *rw, const gr_var *X, const struct gr__view_params *vp, int64_t s0);   /* columns s0.. */
#endif

/* an increment of a unit-step slice of a vector (ops/index.c): 1 with its bounds; and the part of
   a vector of n they cover */
#ifndef GR_NO_INDEX
static int gr__inc_slice(gr__rewriter *rw, const gr_node *node, int64_t *start, int64_t *stop);
static void gr__inc_slice_span(int64_t n, int64_t start, int64_t stop, int64_t *first, int64_t *count);
#else
static int gr__inc_slice(gr__rewriter *rw, const gr_node *node, int64_t *start, int64_t *stop) {
    (void)rw; (void)node; (void)start; (void)stop;
    return 0;
}
static void gr__inc_slice_span(int64_t n, int64_t start, int64_t stop, int64_t *first, int64_t *count) {
    (void)n; (void)start; (void)stop; *first = 0; *count = 0;
}
#endif

/* ---- the rules named by the tables --------------------------------------------------------------- */

#define GR__RULE_PROTO(Name, nin, nout, rules, conn, alias, flags, batch, sig, simp) \
    static void gr__##sig##_sig(gr__rewriter *rw, const gr_node *node, int32_t *out); \
    static gr_var *gr__##simp##_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done);
GR_STRUCT_OPS(GR__RULE_PROTO)
#undef GR__RULE_PROTO

#define GR__REWRITE_PROTO(ewrow, rule) static gr_var *gr__##rule##_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done);
GR_ELEMWISE_REWRITES(GR__REWRITE_PROTO)
#undef GR__REWRITE_PROTO

/* the rules of each structural row, by code */
typedef struct gr__row_rules {
    gr__sig_rule sig;
    gr__simplify_rule simplify;
} gr__row_rules;

static const gr__row_rules gr__struct_rules[GR__OP_COUNT + 1] = {
#define GR__RULE_ROW(Name, nin, nout, rules, conn, alias, flags, batch, sig, simp) \
    { gr__##sig##_sig, gr__##simp##_simplify },
    GR_STRUCT_OPS(GR__RULE_ROW)
#undef GR__RULE_ROW
    { NULL, NULL }
};

/* the rules of op's row; NULL for an elementwise row or a user's op */
static const gr__row_rules *gr__rules_of(const gr_op_def *op) {
    if (!op->builtin || (gr__flags_of(op) & GR__OPF_ELEMWISE)) return NULL;
    return &gr__struct_rules[gr__code_of(op)];
}

/* the elementwise rewrite rows, in the table's order */
typedef struct gr__ew_rewrite { int row; gr__rewrite_rule rule; } gr__ew_rewrite;

static const gr__ew_rewrite gr__ew_rewrites[] = {
#define GR__REWRITE_ROW(ewrow, rule) { GR__EW_##ewrow, gr__##rule##_rewrite },
    GR_ELEMWISE_REWRITES(GR__REWRITE_ROW)
#undef GR__REWRITE_ROW
    { -1, NULL }
};
