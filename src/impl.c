/* src/impl.c: the core's structures (variables, nodes, graphs), the built-in ops' own fields, and
   the op tables expanded: rule prototypes, op numbers, and the gr_op_def of every row. */

#define GR__MSG 1024                 /* room for one error message */

/* ---- internal structures ------------------------------------------------------------------- */

typedef struct gr__chunk { struct gr__chunk *next; size_t size, used; } gr__chunk;
typedef struct gr__arena { gr__chunk *head; size_t total; } gr__arena;

/* the storage of a shared variable: one value, shared by the graph and every function using it */
typedef struct gr__storage { int refs; gr_array *value; } gr__storage;

enum gr__var_kind {
    GR__VK_OUT,          /* output of a node */
    GR__VK_INPUT,        /* a free input */
    GR__VK_CONST,        /* a constant; ext is its gr_array */
    GR__VK_SHARED,       /* a shared variable; ext is its gr__storage */
    GR__VK_DISC,         /* DisconnectedType marker */
    GR__VK_NULL          /* NullType marker; ext is its reason, aux its status code */
};
enum {
    GR__VF_WEAK  = 1,                /* a weakly typed gr_const */
    GR__VF_NAMED = 2                 /* the graph's name table holds a name for it */
};

/* A variable is 32 bytes, followed by its ndim shape entries (-1 unknown); a node is 32 bytes,
   followed by its input and output variables and its parameters. Graphs of tens of millions of
   nodes are memory-bound, so nothing that can be computed or is rare (names) is stored. */
struct gr_var {
    gr_graph *graph;
    union {
        gr_node *owner;              /* GR__VK_OUT: the node computing it */
        void    *ext;                /* the constant's gr_array, the shared variable's gr__storage,
                                        the null gradient's reason */
    } u;
    uint32_t  id;                    /* index in graph->vars (after var_base) */
    int32_t   out_index;
    uint8_t   dtype, ndim, kind, flags, aux;
};

struct gr_node {
    const gr_op_def *op;
    gr_graph *graph;
    uint32_t  params_size;
    uint32_t  id;
    int32_t   n_in, n_out;
};

typedef char gr__var_is_small[sizeof(gr_var) <= 2 * sizeof(void *) + 16 ? 1 : -1];  /* 32 bytes on 64-bit targets, 24 on 32-bit */
typedef char gr__node_is_small[sizeof(gr_node) <= 2 * sizeof(void *) + 16 ? 1 : -1];

static int64_t *gr__vshape(const gr_var *v) { return (int64_t *)(uintptr_t)(v + 1); }
static gr_node *gr__owner(const gr_var *v) { return v->kind == GR__VK_OUT ? v->u.owner : NULL; }
static void *gr__ext(const gr_var *v) { return v->kind == GR__VK_OUT ? NULL : v->u.ext; }
static gr_var **gr__in(const gr_node *n) { return (gr_var **)(uintptr_t)(n + 1); }
static gr_var **gr__out(const gr_node *n) { return (gr_var **)(uintptr_t)(n + 1) + n->n_in; }
static void *gr__params(const gr_node *n) {
    return n->params_size ? (void *)((gr_var **)(uintptr_t)(n + 1) + n->n_in + n->n_out) : NULL;
}
static const char *gr__vname(const gr_var *v);

/* An object that nodes reach through their parameters (a loop's body, an op made of a graph), kept
   alive by a counted reference from every graph holding such a node; the last release destroys it.
   Its head carries the per-node connection pattern (n_in x n_out) the grad driver reads. */
struct gr__rewriter;
typedef struct gr__printer gr__printer;   /* a printer at work (src/print.c) */
static void gr__print_inner(gr__printer *p, const char *what, int n_in, gr_var *const *in, int n_out,
                            gr_var *const *out, const char *note) GR__UNUSED;
typedef struct gr__graphop {
    int refs;
    void (*destroy)(struct gr__graphop *o);
    int n_in, n_out;
    unsigned char *conn;             /* NULL: every input reaches every output */
    const char *name;                /* printed after the op's name */
    /* draws the inner graphs under the node (src/print.c): calls gr__print_inner once for each,
       naming it and giving its inputs and results; the printer in use draws it in its own style */
    void (*print)(struct gr__printer *p, const struct gr__graphop *o);
    /* the grad rule told which inputs' terms are not needed (skip[i]: zeros will do), so that a loop
       computes no gradient of a sequence nobody asked for; NULL: the op's grad */
    gr_status (*grad_some)(const gr_node *node, gr_var *const *og, gr_var **ig, const uint8_t *skip);
    /* gr_function puts the node's inner nodes in its place (an inlined op made of a graph); NULL: never */
    gr_status (*expand)(struct gr__rewriter *rw, const gr_node *node, gr_var *const *ins, gr_var **outs);
} gr__graphop;

struct gr_graph {
    gr__arena     arena;
    gr_var      **vars;    uint32_t n_vars, cap_vars;
    gr_node     **nodes;   uint32_t n_nodes, cap_nodes;
    uint32_t      var_base, node_base;   /* ids start here: a function's private graph numbers its own
                                            after its source graph's, whose nodes it may reuse */
    void        **owned;   uint32_t n_owned, cap_owned;      /* big blocks freed with the graph */
    gr__storage **stores;  uint32_t n_stores, cap_stores;    /* shared storages referenced */
    gr_var      **consts;  uint32_t n_consts, cap_consts;    /* typed scalar constants, by value */
    struct gr__name *names; uint32_t n_names, cap_names;     /* names of the named variables, by id (open
                                                                addressing; cap a power of 2) */
    gr__graphop **held;    uint32_t n_held, cap_held;        /* one reference for each node of a GRAPHOP op */
    gr_status     status;
    char          message[GR__MSG];
    gr_log_fn     log;
    void         *log_user;
    gr_progress_fn progress;             /* gr_graph_set_progress; NULL: none */
    void         *progress_user;
};

/* ---- C code generation: what an op's emit rule may call (src/emit.c) ------------------------

   gr_fn_emit_c writes a compiled function as C. A structural row's rule gr__<Name>_emit (in its
   family file, named by the table through struct gr__builtin's emit) writes the C of one node:
   in / out are the node's arrays as gr_call hands them to perform (dtype, ndim, shape) but their
   data pointers are meaningless; memory is named only through gr__em_in / _out / _scratch, C
   expressions valid until 16 more of them are asked. Elementwise rows need no rule: their
   float_expr / int_expr are the C. A rule that cannot emit its node fails with gr__em_fail. */
typedef struct gr__em gr__em;        /* one gr_fn_emit_c at work */
typedef gr_status (*gr__emit_fn)(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out);
static const char *gr__em_in(gr__em *e, int i) GR__UNUSED;      /* a `const T *` to input i's data */
static const char *gr__em_out(gr__em *e, int j) GR__UNUSED;     /* a `T *` to output j's data */
static const char *gr__em_scratch(gr__em *e) GR__UNUSED;        /* the node's scratch (GR_SCRATCH_OPS), a `void *` */
static const char *gr__em_scratch_n(gr__em *e, size_t bytes) GR__UNUSED;  /* the same, at least bytes long (the rule's own need) */
static void gr__em_line(gr__em *e, const char *fmt, ...) GR__PRINTF(2, 3) GR__UNUSED;   /* one line of NAME's body */
static int gr__em_kernel(gr__em *e, const char *name) GR__UNUSED;  /* kernel `name` written once, before NAME; 0: unknown */
/* a row loop (Batched): until undone, gr__em_in(e, i) / gr__em_out(e, j) return in_expr[i] / out_expr[j] (a NULL
   array or entry: what they returned before); returns the loops in force, a name for the loop's counter.
   gr__em_redirect(e, NULL, NULL) undoes the innermost. The arrays are read, not copied, while in force. */
static int gr__em_redirect(gr__em *e, const char *const *in_expr, const char *const *out_expr) GR__UNUSED;
static gr_status gr__em_fail(gr__em *e, gr_status code, const char *fmt, ...) GR__PRINTF(3, 4) GR__UNUSED;  /* gr_fn_message */
/* a row whose shape rule reads data or runs (LAZY, DYNSHAPE: a conditional, a loop) has its rule called first
   in a shape phase, where gr__em_shaping(e) is 1: it gives its outputs' shapes for the example's
   (gr__em_set_shape(e, j, shape)), or fails naming itself, and writes nothing */
static int gr__em_shaping(gr__em *e) GR__UNUSED;
static void gr__em_set_shape(gr__em *e, int j, const int64_t *shape) GR__UNUSED;
/* in the shape phase of a conditional: the side the example takes there (1 then, 0 else; the function
   run on the example up to it), -1 when the example does not reach it, -2 when not known (an inner
   function; or the run failed, and e's status says why) */
static int gr__em_example_side(gr__em *e) GR__UNUSED;
/* an inner compiled function (an op made of a graph's, a loop's body) as a static function of the file,
   `static int <name>(const void *const *inputs, void *const *outputs, void *work)` (NAME's contract),
   specialised to the shapes of in[0..inner's n_in) (their data not read), written once per function
   and shapes: its name (NULL: failed, e's status says why) and *work, the bytes of work it needs (carve
   them from the node's scratch: gr__em_scratch_n). gr__em_fn_shapes: its outputs' shapes only (into
   out[0..n_out), for the shape phase). gr__em_call writes a block calling such a function on inputs
   in[] and outputs out[] (C pointers; a NULL array: the node's own) with work `work`, which returns
   its nonzero status. */
static const char *gr__em_function(gr__em *e, gr_fn *inner, const gr_array *const *in, size_t *work) GR__UNUSED;
static gr_status gr__em_fn_shapes(gr__em *e, gr_fn *inner, const gr_array *const *in, gr_array *out) GR__UNUSED;
static void gr__em_call(gr__em *e, const char *fn, int n_in, const char *const *in, int n_out, const char *const *out,
                        const char *work) GR__UNUSED;
static const char *gr__em_ctype(int dtype) GR__UNUSED;          /* "double", "float", "int64_t", "uint8_t" */
/* loops: gr__em_open writes one `for` per axis of shape longer than 1 (counters i<axis>) and returns
   how many, which gr__em_close closes; gr__em_strides gives a's element strides over out's axes
   (broadcast, right-aligned: 0 where a has size 1), gr__em_index the flat index they make there */
static int gr__em_open(gr__em *e, int nd, const int64_t *shape) GR__UNUSED;
static void gr__em_close(gr__em *e, int n) GR__UNUSED;
static void gr__em_strides(const gr_array *out, const gr_array *a, int64_t *st) GR__UNUSED;
static const char *gr__em_index(gr__em *e, int nd, const int64_t *shape, const int64_t *st) GR__UNUSED;
/* y = x gathered: y's elements in order over shape (nd <= 2 GR_MAX_NDIM axes), element k of them read
   from x at sum_d i_d st[d] (C pointers x, y of dtype dt) */
static void gr__em_gather(gr__em *e, int dt, int nd, const int64_t *shape, const int64_t *st, const char *x, const char *y) GR__UNUSED;
/* C text: element i of data of dtype dt as a constant (bit for bit); x (C of dtype st) converted to
   dt as gr__convert does (i64_f32_direct: int64 to float32 without double, as Cast does); the C of
   elementwise row `row` over scalars a, b, c of dtype dt (its helpers written as kernels) */
static const char *gr__em_value(gr__em *e, int dt, const void *data, int64_t i) GR__UNUSED;
static const char *gr__em_conv(gr__em *e, int dt, int st, const char *x, int i64_f32_direct) GR__UNUSED;
static const char *gr__em_expr(gr__em *e, int row, int dt) GR__UNUSED;
#define GR__EM_OPND 320                  /* room for an operand's C expression built by a rule */
/* Loops (src/emit.c): the emitted function has fixed shapes, so a loop's rule fails (in the shape phase)
   when its rows depend on data. gr__em_known_in(e, i): input i's value when it is known while emitting
   (a constant, or small values computed from known ones, such as a loop's steps), else NULL;
   gr__em_known_set gives output j's. gr__em_status: the emission's first failure, or GR_OK. An inner
   function written INLINE (a loop's body, inside the loop's C for): gr__em_inner_shapes gives inner's
   output shapes (out[j]: its slots' arrays, no data) for inputs shaped like in; gr__em_inner writes its
   steps here, its inputs' data the C pointer expressions in_expr[i], its memory from work + base on
   (*end, if not NULL: where its buffers end; its steps' scratch is counted in the work), out_expr[j]
   a C `const T *` to its output j. gr__em_loop_id: a number for a rule's locals, distinct in the file. */
static gr_status gr__em_status(const gr__em *e) GR__UNUSED;
static const void *gr__em_known_in(gr__em *e, int i) GR__UNUSED;
static void gr__em_known_set(gr__em *e, int j, const void *value) GR__UNUSED;
static gr_status gr__em_inner_shapes(gr__em *e, gr_fn *inner, const gr_array *const *in, const gr_array **out) GR__UNUSED;
static gr_status gr__em_inner(gr__em *e, gr_fn *inner, const gr_array *const *in, const char *const *in_expr, size_t base, size_t *end,
                              char (*out_expr)[GR__EM_OPND]) GR__UNUSED;
static int gr__em_loop_id(gr__em *e) GR__UNUSED;
static size_t gr__em_scratch_at(const gr__em *e) GR__UNUSED;   /* the byte offset in work of gr__em_scratch(e) */
/* the rule of a row not emitted yet (one line in its family file) */
#define GR__EMIT_NOT_YET(Name) \
    static gr_status gr__##Name##_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) { \
        (void)in; (void)out; return gr__em_fail(e, GR_ERR_VALUE, "gr_fn_emit_c: op %s is not emitted yet", node->op->name); }
#ifndef GR_NO_STDIO
#define GR__EMIT_RULE(Name) gr__##Name##_emit
#else                                /* no gr_fn_emit_c: the rules are left out */
#define GR__EMIT_RULE(Name) NULL
#endif

/* ---- the built-in ops' own fields --------------------------------------------------------------- */

/* what the core knows of a built-in op besides its public rules; users' ops have none (NULL) */
struct gr__builtin {
    int      code;                            /* elementwise row, or structural op number */
    unsigned flags;                           /* GR__OPF_* */
    int64_t (*alias)(const gr_node *node, const gr_array *const *in, const gr_array *out);
          /* byte offset at which output 0 can share input 0's memory, or -1 */
    gr_status (*batch)(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out);
          /* the node rebuilt on inputs of which those flagged gained a leading batch axis;
             NULL: the op is applied row by row */
    gr__emit_fn emit;                         /* its C for gr_fn_emit_c (structural rows; NULL for
                                                 elementwise rows, whose expressions are their C) */
};

/* op flags */
enum {
    GR__OPF_ELEMWISE = 1,            /* an elementwise row: code is the row */
    GR__OPF_GRADMOD  = 2,            /* identity that only changes the gradient: removed when compiled */
    GR__OPF_NONDIFF  = 4,            /* outputs carry no derivative (R-op: contributes nothing) */
    GR__OPF_INNERCONN = 8,           /* wraps an op, whose connection pattern it has (Batched) */
    GR__OPF_SHAPEREF = 16,           /* inputs the connection pattern excludes are read for their shape only */
    GR__OPF_INPLACE0 = 32,           /* output 0 may take input 0's memory when input 0 dies there */
    GR__OPF_CONVERT  = 64,           /* output 0 is input 0 converted to its dtype, element by element */
    GR__OPF_FILL     = 128,          /* output 0 is input 0 broadcast to input 1's shape, dtype and values kept */
    GR__OPF_CONN0    = 256,          /* input 0 alone reaches the outputs (any arity): the pattern */
    GR__OPF_DYNSHAPE = 512,          /* its outputs' shapes are known once it has run (a loop): its
                                        perform sets them and points them at memory of its own */
    GR__OPF_RUNTIME  = 1024,         /* a compiled function keeps state of its own for each such node
                                        (GR_RUNTIME_OPS: made when the function is, freed with it) */
    GR__OPF_GRAPHOP  = 2048,         /* its params begin with a gr__graphop *: counted, and its
                                        connection pattern is the node's */
    GR__OPF_LAZY     = 4096,         /* a conditional: input 0 is a 0-d condition, inputs 1..k are read
                                        only when it is nonzero, inputs k+1..2k only when it is zero
                                        (n_in = 2k + 1); a compiled function runs the nodes only one
                                        side needs only then, and so does the backward pass */
    GR__OPF_FOLD     = 8192          /* with a 0-d output, the sum of every element of input 0 (a float
                                        dtype kept): a fused group making input 0 takes it as it goes */
};

typedef int64_t (*gr__alias_fn)(const gr_node *node, const gr_array *const *in, const gr_array *out);
typedef gr_status (*gr__batch_fn)(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out);

/* an op's built-in fields: 0 and NULL for users' ops */
static unsigned gr__flags_of(const gr_op_def *op) { return op->builtin ? op->builtin->flags : 0u; }
static gr__alias_fn gr__alias_of(const gr_op_def *op) { return op->builtin ? op->builtin->alias : NULL; }
static GR__UNUSED gr__batch_fn gr__batch_of(const gr_op_def *op) { return op->builtin ? op->builtin->batch : NULL; }
static GR__UNUSED gr__emit_fn gr__emit_of(const gr_op_def *op) { return op->builtin ? op->builtin->emit : NULL; }
/* a built-in op's row (the caller knows it is one) */
static int gr__code_of(const gr_op_def *op) { GR_ASSERT(op->builtin); return op->builtin->code; }

/* ---- prototypes of every rule named by the structural table --------------------------------- */

#define GR__STRUCT_PROTO(Name, nin, nout, rules, conn, alias, flags, batch, sig, simp) \
    static gr_status gr__##rules##_infer(const gr_node *node, gr_type *out); \
    static gr_status gr__##rules##_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out); \
    static gr_status gr__##Name##_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out); \
    static gr_status gr__##Name##_grad(const gr_node *node, gr_var *const *og, gr_var **ig); \
    static gr_status gr__##Name##_rop(const gr_node *node, gr_var *const *ev, gr_var **orop); \
    static int64_t gr__##alias##_alias(const gr_node *node, const gr_array *const *in, const gr_array *out); \
    static gr_status gr__##batch##_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) GR__UNUSED; \
    static gr_status gr__##Name##_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) GR__UNUSED;
GR_STRUCT_OPS(GR__STRUCT_PROTO)
#undef GR__STRUCT_PROTO

static const unsigned char gr__conn_10[2] = { 1, 0 };   /* input 0 connected, input 1 shape only */
static const unsigned char gr__conn_00[2] = { 0, 0 };   /* both inputs shape only */
static const unsigned char gr__conn_0[1] = { 0 };       /* the input does not reach the output's gradient */
static const unsigned char gr__conn_100[3] = { 1, 0, 0 };  /* input 0 connected, inputs 1 and 2 not */
static const unsigned char gr__conn_110[3] = { 1, 1, 0 }; /* inputs 0 and 1 connected, input 2 (indices) not */

enum gr__struct_code {
#define GR__STRUCT_CODE(Name, nin, nout, rules, conn, alias, flags, batch, sig, simp) GR__OP_##Name,
    GR_STRUCT_OPS(GR__STRUCT_CODE)
#undef GR__STRUCT_CODE
    GR__OP_COUNT
};

#define GR__OPF_0 0
#define GR__OPF_LOOP (GR__OPF_DYNSHAPE | GR__OPF_RUNTIME | GR__OPF_GRAPHOP)
#define GR__OPF_GRAPHOP_RUNTIME (GR__OPF_GRAPHOP | GR__OPF_RUNTIME)
#define GR__OPF_NONDIFF_SHAPEREF (GR__OPF_NONDIFF | GR__OPF_SHAPEREF)
#define GR__OPF_SHAPEREF_FILL (GR__OPF_SHAPEREF | GR__OPF_FILL)
#define GR__OPF_GRADMOD_NONDIFF (GR__OPF_GRADMOD | GR__OPF_NONDIFF)
#ifdef GR_NO_BATCH                  /* no Jacobians: the batching rules are left unreferenced */
#define GR__BATCH_RULE(batch) NULL
#else
#define GR__BATCH_RULE(batch) gr__##batch##_batch
#endif
#define GR__STRUCT_DEF(Name, nin, nout, rules, conn, alias, flags, batch, sig, simp) \
    static const struct gr__builtin gr__builtin_##Name GR__UNUSED = { GR__OP_##Name, GR__OPF_##flags, gr__##alias##_alias, \
        GR__BATCH_RULE(batch), GR__EMIT_RULE(Name) }; \
    static const gr_op_def gr__op_##Name GR__UNUSED = { #Name, nin, nout, gr__##rules##_infer, gr__##rules##_shape, conn, \
        gr__##Name##_perform, gr__##Name##_grad, gr__##Name##_rop, &gr__builtin_##Name };
GR_STRUCT_OPS(GR__STRUCT_DEF)
#undef GR__STRUCT_DEF

/* ops/graphop.c: gr_apply of an op made of a graph (src/graph.c) */
static gr_status gr__graph_op_apply(gr_graph *g, const gr_op_def *op, int n_in, gr_var *const *inputs, gr_var **outputs);

/* src/grad.c, for the loops' gradients (ops/scan.c) */
static int gr__connected(const gr_node *node, int i, int j);   /* input i of node affects output j */
static gr_var *gr__null_var(gr_graph *g, const gr_var *like, gr_status code, const char *reason);
static const char *gr__null_reason(const gr_var *v);
static int gr__is_zero(const gr_var *t);                      /* 1: zeros, 0: not, -1: not known when built */

/* the readers of a compiled function's variables (ids from base): a list per variable through next,
   and whether the function returns or updates it (root) */
typedef struct gr__readers {
    uint32_t base;
    const int32_t *first, *next;
    gr_node *const *node;
    const uint8_t *root;
} gr__readers;
/* the ops whose nodes keep state of their own in a compiled function (flag RUNTIME): made once the
   function is scheduled, released when it is freed */
#define GR__RUNTIME_PROTO(Name) \
    static gr_status gr__##Name##_runtime(gr_node *node, int level); \
    static void gr__##Name##_release(gr_node *node); \
    static gr_status gr__##Name##_narrow(gr_node *node, const gr__readers *rd, gr_var **map);
GR_RUNTIME_OPS(GR__RUNTIME_PROTO)
#undef GR__RUNTIME_PROTO
static gr_status gr__runtime_make(gr_node *node, int level) {
    (void)node; (void)level;                  /* (no such op: ops/table.h, op families) */
#define GR__RUNTIME_MAKE(Name) if (node->op->perform == gr__##Name##_perform) return gr__##Name##_runtime(node, level);
    GR_RUNTIME_OPS(GR__RUNTIME_MAKE)
#undef GR__RUNTIME_MAKE
    return GR_OK;
}
static gr_status gr__runtime_narrow(gr_node *node, const gr__readers *rd, gr_var **map) {
    (void)node; (void)rd; (void)map;                  /* (no such op: ops/table.h, op families) */
#define GR__RUNTIME_NARROW(Name) if (node->op->perform == gr__##Name##_perform) return gr__##Name##_narrow(node, rd, map);
    GR_RUNTIME_OPS(GR__RUNTIME_NARROW)
#undef GR__RUNTIME_NARROW
    return GR_OK;
}
static void gr__runtime_release(gr_node *node) {
    (void)node;                  /* (no such op: ops/table.h, op families) */
#define GR__RUNTIME_RELEASE(Name) if (node->op->perform == gr__##Name##_perform) { gr__##Name##_release(node); return; }
    GR_RUNTIME_OPS(GR__RUNTIME_RELEASE)
#undef GR__RUNTIME_RELEASE
}
#define GR__SCRATCH_PROTO(Name) static size_t gr__##Name##_scratch(const gr_node *node, const gr_array *const *in, const gr_array *const *out);
GR_SCRATCH_OPS(GR__SCRATCH_PROTO)
#undef GR__SCRATCH_PROTO
/* the work memory node's perform needs, its inputs' and outputs' shapes known (GR_SCRATCH_OPS) */
static size_t gr__scratch_bytes(const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)node; (void)in; (void)out;                  /* (no such op: ops/table.h, op families) */
#define GR__SCRATCH_OF(Name) if (node->op == &gr__op_##Name) return gr__##Name##_scratch(node, in, out);
    GR_SCRATCH_OPS(GR__SCRATCH_OF)
#undef GR__SCRATCH_OF
    return 0;
}
/* the structural rows by code */
static const gr_op_def *const gr__struct_ops[GR__OP_COUNT + 1] = {
#define GR__STRUCT_PTR(Name, nin, nout, rules, conn, alias, flags, batch, sig, simp) &gr__op_##Name,
    GR_STRUCT_OPS(GR__STRUCT_PTR)
#undef GR__STRUCT_PTR
    NULL
};

/* ---- the elementwise rows ------------------------------------------------------------------- */

enum gr__ew_row {
#define GR__EW_ROW(name, arity, cls, fexpr, iexpr, d0, d1, d2) GR__EW_##name,
    GR_ELEMWISE_OPS(GR__EW_ROW)
#undef GR__EW_ROW
    GR__EW_COUNT
};

static gr_status gr__ew_infer(const gr_node *node, gr_type *out);
static gr_status gr__ew_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out);
static gr_status gr__ew_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out);
static gr_status gr__ew_grad(const gr_node *node, gr_var *const *og, gr_var **ig);
static gr_status gr__ew_rop(const gr_node *node, gr_var *const *ev, gr_var **orop);
static gr_status gr__ew_batch(const gr_node *node, gr_var *const *in, const unsigned char *batched, gr_var **out) GR__UNUSED;

#define GR__EW_DEF(name, arity, cls, fexpr, iexpr, d0, d1, d2) \
    static const struct gr__builtin gr__builtin_ew_##name GR__UNUSED = { GR__EW_##name, GR__OPF_ELEMWISE, NULL, GR__BATCH_RULE(ew), NULL }; \
    static const gr_op_def gr__op_ew_##name GR__UNUSED = { #name, arity, 1, gr__ew_infer, gr__ew_shape, NULL, \
        gr__ew_perform, gr__ew_grad, gr__ew_rop, &gr__builtin_ew_##name };
GR_ELEMWISE_OPS(GR__EW_DEF)
#undef GR__EW_DEF

static const gr_op_def *const gr__ew_ops[GR__EW_COUNT + 1] = {
#define GR__EW_PTR(name, arity, cls, fexpr, iexpr, d0, d1, d2) &gr__op_ew_##name,
    GR_ELEMWISE_OPS(GR__EW_PTR)
#undef GR__EW_PTR
    NULL
};
