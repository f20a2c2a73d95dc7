/* src/fuse.c: elementwise fusion (at GR_OPT_FULL, after the rewrites).

   Connected elementwise nodes (and copies: the CONVERT and FILL rows, Cast and BroadcastLike) whose
   outputs have the same shape signature (src/signature.c: the same size along every axis in every
   call) become one Fused node: a program of the table's kernels run over the data block by block,
   so a chain of elementwise ops is one pass with no full-size temporaries. Members read their operands from the group's external
   inputs (broadcast, as the ops would), 0-d constants (immediates), block-sized registers, or
   the group's outputs; a value used outside the group, or returned, is an output.

   Groups grow in topological order: a node joins an open group of its signature when each of its
   inputs is a member, a leaf, or computed before the group's first member. Nothing computed
   after the group started can then feed it, so no cycle can appear, and a group may have any
   number of outputs. A chain of a million scalar links is one node. */

typedef struct gr__fop {                 /* one instruction (24 bytes: a chain of a million links has millions) */
    int32_t arg[3];                      /* operand references */
    int32_t out, out2;                   /* the references written (out2: the second of a pair, else -1) */
    uint8_t n_args, dtype, odtype, row;  /* row: the table's row (its kernel for dtype), GR__FOP_PAIR (arg[1]:
                                            the pair's index in gr__ew_pairs), GR__FOP_MULADD, or
                                            GR__FOP_COPY + the code of a copying row */
} gr__fop;

enum {
    GR__FOP_PAIR = GR__EW_COUNT,         /* first(x) and second(x) of a row of GR_ELEMWISE_PAIRS */
    GR__FOP_MULADD = GR__EW_COUNT + 1,   /* a * b + c: a float mul whose product only the add after it reads */
    GR__FOP_SUM = GR__EW_COUNT + 2,      /* the sum of every element of arg[0] (a FOLD row: Sum), taken block by
                                            block into sums[arg[1]] (gr__sum8), out a 0-d output */
    GR__FOP_SCATTER = GR__EW_COUNT + 3,  /* arg[0] added into view arg[2] of the vector scat[arg[1]] (out), a
                                            slice's increment of zeros (gr__inc_slice): see gr__fscat */
    GR__FOP_COPY = GR__EW_COUNT + 4      /* a CONVERT or FILL row (Cast, BroadcastLike): gr__convert_run */
};
typedef char gr__fop_rows_fit[(int)GR__FOP_COPY + (int)GR__OP_COUNT <= 255 ? 1 : -1];   /* every row fits in row */

/* the printed name of an instruction (CamelCase, as gr__on): its row's (Sin), its pair's rows'
   (SinCos), or MulAdd */
static gr__oname gr__fop_name(const gr__fop *op) {
    gr__oname o;
    size_t n = 0;
    o.s[0] = 0;
    if (op->row >= GR__FOP_COPY) return gr__on(gr__struct_ops[op->row - GR__FOP_COPY]);
    if (op->row == GR__FOP_MULADD) { gr__camel(o.s, &n, "mul"); gr__camel(o.s, &n, "add"); }
    else if (op->row == GR__FOP_SUM) gr__camel(o.s, &n, "sum");
    else if (op->row == GR__FOP_SCATTER) gr__camel(o.s, &n, "scatter_add");
    else if (op->row == GR__FOP_PAIR) {
        gr__camel(o.s, &n, gr__ew_ops[gr__ew_pairs[op->arg[1]].first]->name);
        gr__camel(o.s, &n, gr__ew_ops[gr__ew_pairs[op->arg[1]].second]->name);
    } else gr__camel(o.s, &n, gr__ew_ops[op->row]->name);
    return o;
}

/* o = a * b + c over n elements (strides 0 or 1), rounded as the mul then the add are (the product
   is a double or a float before the sum: no fused multiply-add); o may be a, b or c (stride 1) */
#define GR__MULADD(fn, T) \
    static void fn(int64_t n, void *out_, const void *const *in, const int64_t *st) { \
        T *o = (T *)out_; const T *a = (const T *)in[0], *b = (const T *)in[1], *c = (const T *)in[2]; int64_t i; \
        if (st[0] == 0 && st[1] == 1 && st[2] == 1) { T s = a[0]; for (i = 0; i < n; i++) { T p = s * b[i]; o[i] = p + c[i]; } } \
        else if (st[0] == 1 && st[1] == 0 && st[2] == 1) { T s = b[0]; for (i = 0; i < n; i++) { T p = a[i] * s; o[i] = p + c[i]; } } \
        else if (st[0] == 1 && st[1] == 1 && st[2] == 1) { for (i = 0; i < n; i++) { T p = a[i] * b[i]; o[i] = p + c[i]; } } \
        else { int64_t sa = st[0], sb = st[1], sc = st[2]; for (i = 0; i < n; i++) { T p = a[i * sa] * b[i * sb]; o[i] = p + c[i * sc]; } } \
    }
GR__MULADD(gr__muladd_f64, double)
GR__MULADD(gr__muladd_f32, float)

/* A group's sum: its accumulator and its output (a 0-d one). */
typedef struct gr__fsum { gr__sum8 acc; int32_t out; } gr__fsum;

/* A vector the group's pass adds values into (output `out`, shaped like external input `ref`): the
   fill of zeros that one or two increments of unit-step slices (gr__inc_slice) update, each view
   as long as the pass (m). What the unfused nodes compute is 0 + a at an element one view covers,
   (0 + a) + b at one both cover (the same bits in either order), 0 elsewhere: so the elements no
   view covers are set to 0 before the pass, and a view's value at position i is set (0 + v) when
   the other view's has not been written there yet, else added (gr__fscat_adds). */
typedef struct gr__fscat {
    int32_t out, ref, n_views, op0;
    int64_t start[2], stop[2];           /* each view's slice */
    int64_t first[2];                    /* per call: each view's first element */
} gr__fscat;

/* operand references: [0, n_ext) external inputs, then n_imm immediates, then n_out outputs,
   then n_reg registers of blk elements each. The outputs [0, n_full) have the group's shape (of
   ndim axes: the broadcast of the external inputs' shapes), the others are its sums (0-d) and the
   vectors it adds into */
typedef struct gr__fprog {
    int32_t n_ext, n_imm, n_out, n_reg, n_ops, n_refs;
    int32_t ndim, n_full, n_sums, n_scat;
    int32_t n_bext;                      /* the external inputs [0, n_bext) are read; the others only for their
                                            shapes (the vectors added into), and no part of the broadcast */
    gr__fsum *sums;
    gr__fscat *scat;
    int64_t pos, iter_n;                 /* per call: the block's first position, the positions of the pass */
    int64_t blk;
    gr__fop *ops;
    double *imm;                         /* an immediate's value, stored in its dtype's bytes */
    double *val;                         /* the scalar program's values, one per reference (in its dtype's
                                            bytes): inputs copied in, immediates, outputs, registers */
    int32_t f64;                         /* every instruction runs in gr__fscalar_f64 */
    unsigned char *regs;
    const void **ptr;                    /* per reference, set block by block */
    int64_t *st;                         /* per reference: 0 (broadcast) or 1 */
    int64_t *ext_st;                     /* scratch: n_ext x GR_MAX_NDIM element strides */
    int64_t *ext_off;                    /* scratch: n_ext offsets */
    gr_type *out_types;
} gr__fprog;

typedef struct gr__fused_params { gr__fprog *prog; } gr__fused_params;

static const gr__fprog *gr__fp(const gr_node *node) { return ((const gr__fused_params *)gr__params(node))->prog; }

static gr_status gr__Fused_infer(const gr_node *node, gr_type *out) {
    const gr__fprog *p = gr__fp(node);
    int j;
    for (j = 0; j < node->n_out; j++) out[j] = p->out_types[j];
    return GR_OK;
}

/* the shapes do not broadcast: replay the program's shapes to name the member op that fails */
static gr_status gr__Fused_shape_error(const gr_node *node, const gr_array *const *in) {
    const gr__fprog *p = gr__fp(node);
    gr_array *shapes = (gr_array *)gr__calloc((size_t)p->n_refs + 1, sizeof(gr_array));
    int k, a, e;
    if (!shapes) return gr_node_error(node, GR_ERR_SHAPE, "shapes do not broadcast");
    for (e = 0; e < p->n_ext; e++) shapes[e] = *in[e];
    for (k = 0; k < p->n_ops; k++) {
        const gr__fop *op = &p->ops[k];
        gr_array r;
        memset(&r, 0, sizeof r);
        for (a = 0; a < op->n_args; a++) {
            const gr_array *x = &shapes[op->arg[a]];
            int off, i;
            if (x->ndim > r.ndim) {             /* right-align what we have against x */
                int grow = x->ndim - r.ndim;
                for (i = r.ndim - 1; i >= 0; i--) r.shape[i + grow] = r.shape[i];
                for (i = 0; i < grow; i++) r.shape[i] = 1;
                r.ndim = x->ndim;
            }
            off = r.ndim - x->ndim;
            for (i = 0; i < x->ndim; i++) {
                int64_t have = r.shape[off + i], want = x->shape[i];
                if (have == 1) r.shape[off + i] = want;
                else if (want != 1 && want != have) {
                    char b1[200], b2[200];
                    /* an elementwise row by its constructor, as when it runs unfused (gr_add) */
                    int row = op->row == GR__FOP_PAIR ? gr__ew_pairs[op->arg[1]].first
                            : op->row == GR__FOP_MULADD ? (a < 2 ? (int)GR__EW_mul : (int)GR__EW_add) : (int)op->row;
                    gr__oname on = gr__fop_name(op);
                    const char *opname = row < (int)GR__EW_COUNT ? gr__ew_fnames[row] : on.s;
                    gr_status st;
                    gr__shape_str(b1, sizeof b1, x->ndim, x->shape);
                    gr__shape_str(b2, sizeof b2, r.ndim, r.shape);
                    if (op->arg[a] < p->n_ext)
                        st = gr__error(node->graph, GR_ERR_SHAPE, "%s: shapes do not broadcast: %s of %s against %s", opname, b1,
                                       gr__d(gr__in(node)[op->arg[a]]).s, b2);
                    else
                        st = gr__error(node->graph, GR_ERR_SHAPE, "%s: shapes do not broadcast: %s against %s", opname, b1, b2);
                    GR_FREE(shapes);
                    return st;
                }
            }
        }
        shapes[op->out] = r;
        if (op->row == GR__FOP_PAIR) shapes[op->out2] = r;
    }
    GR_FREE(shapes);
    return gr_node_error(node, GR_ERR_SHAPE, "shapes do not broadcast");
}

static gr_status gr__Fused_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    gr_array it;
    int j, d;
    memset(&it, 0, sizeof it);
    it.ndim = gr__fp(node)->ndim;
    if (node->n_in > 0) {
        gr_status before = node->graph->status;
        if (gr__broadcast_shapes(node, gr__fp(node)->n_bext, in, &it) != GR_OK) {
            if (before == GR_OK) gr_graph_clear_error(node->graph);
            return gr__Fused_shape_error(node, in);
        }
    } else
        for (d = 0; d < it.ndim; d++) it.shape[d] = 1;
    for (j = 0; j < gr__fp(node)->n_full; j++)
        for (d = 0; d < out[j]->ndim; d++) out[j]->shape[d] = it.shape[d];
    for (j = 0; j < gr__fp(node)->n_scat; j++) {     /* a vector added into: its fill's shape */
        const gr__fscat *c = &gr__fp(node)->scat[j];
        out[c->out]->shape[0] = in[c->ref]->shape[0];
    }
    return GR_OK;
}

/* n elements from src (element stride sst, 0 or 1) converted into dst */
static void gr__convert_run(int dt, void *dst, int st, const void *src, int64_t sst, int64_t n) {
    int64_t i;
    if (sst == 1 || n <= 1) { gr__convert(dt, dst, st, src, n); return; }
    gr__convert(dt, dst, st, src, 1);                  /* one value, then filled */
    switch (dt) {
    case GR_F64: { double v = *(double *)dst; for (i = 1; i < n; i++) ((double *)dst)[i] = v; break; }
    case GR_F32: { float v = *(float *)dst; for (i = 1; i < n; i++) ((float *)dst)[i] = v; break; }
    case GR_I64: { int64_t v = *(int64_t *)dst; for (i = 1; i < n; i++) ((int64_t *)dst)[i] = v; break; }
    default: memset((char *)dst + 1, *(unsigned char *)dst, (size_t)(n - 1)); break;
    }
}

/* a program of one kernel instruction over a 2-d iteration (rows x inner): the kernel row by row,
   its operands' pointers moved by their row strides (a rank-1 update c + a b^T, a row or a column
   broadcast over a matrix). No registers, so no blocks. 0 when the program is not one. */
static int gr__Fused_rows(const gr__fprog *p, const gr_array *const *in, gr_array *const *out, const int64_t *shape, int64_t inner) {
    const gr__fop *op = &p->ops[0];
    gr__ew_kernel kern;
    const char *arg[3];
    const void *args[3];
    int64_t sts[3], step[3], r;
    char *o;
    size_t ostep;
    int a, m = op->out - p->n_ext - p->n_imm;
    if (p->n_ops != 1 || m < 0 || m >= p->n_out) return 0;
    if (op->row == GR__FOP_MULADD) kern = op->dtype == GR_F64 ? gr__muladd_f64 : gr__muladd_f32;
    else if (op->row < GR__EW_COUNT) kern = gr__ew_kernels[op->row][op->dtype];
    else return 0;
    for (a = 0; a < op->n_args; a++) {
        int32_t ref = op->arg[a];
        if (ref >= p->n_ext + p->n_imm) return 0;          /* (an output or a register: not one instruction) */
        sts[a] = p->st[ref];
        arg[a] = ref < p->n_ext ? (const char *)in[ref]->data : (const char *)p->ptr[ref];
        step[a] = ref < p->n_ext ? p->ext_st[ref * GR_MAX_NDIM] * (int64_t)gr__dsize(in[ref]->dtype) : 0;
    }
    o = (char *)out[m]->data;
    ostep = (size_t)inner * gr__dsize(out[m]->dtype);
    for (r = 0; r < shape[0]; r++) {
        for (a = 0; a < op->n_args; a++) { args[a] = arg[a]; arg[a] += step[a]; }
        kern(inner, o, args, sts);
        o += ostep;
    }
    return 1;
}

/* view v of c, the pass over m positions in blocks of B, at the block [j0, j0 + n): the positions
   whose element the other view has written already, [*lo, *hi) (the others are the first write).
   Position i of view v is the other's i + d; that one was written in an earlier block, or in this
   one when the other view's instruction comes first (view 0's). The emitted loops ask the same
   with their own blocks (one element: B = 1). */
static void gr__fscat_adds(const gr__fscat *c, int v, int64_t m, int64_t B, int64_t j0, int64_t n, int64_t *lo, int64_t *hi) {
    int64_t d, h, bound;
    *lo = *hi = j0;
    if (c->n_views < 2) return;
    d = c->first[v] - c->first[1 - v];
    *lo = -d > j0 ? -d : j0;
    if (*lo > j0 + n) *lo = j0 + n;
    h = m - d < j0 + n ? m - d : j0 + n;
    bound = v == 1 ? j0 + B - d : j0 - d;
    if (bound < h) h = bound;
    *hi = h > *lo ? h : *lo;
}

/* the views of c over a vector of n, the pass m long: each view's first element; 0 when a view does
   not have m elements (the signatures say it has) */
static int gr__fscat_plan(gr__fscat *c, int64_t n, int64_t m) {
    int v;
    for (v = 0; v < c->n_views; v++) {
        int64_t count;
        gr__inc_slice_span(n, c->start[v], c->stop[v], &c->first[v], &count);
        if (count != m) return 0;
    }
    return 1;
}

/* the parts of the vector (of n) no view of c covers, as up to three [z[2k], z[2k + 1]) */
static int gr__fscat_gaps(const gr__fscat *c, int64_t n, int64_t m, int64_t *z) {
    int64_t a = c->first[0], b = c->n_views > 1 ? c->first[1] : c->first[0], lo = a < b ? a : b, hi = a < b ? b : a;
    int k = 0;
    if (lo > 0) { z[k++] = 0; z[k++] = lo; }
    if (lo + m < hi) { z[k++] = lo + m; z[k++] = hi; }
    if (hi + m < n) { z[k++] = hi + m; z[k++] = n; }
    return k / 2;
}

/* a GR__FOP_SCATTER instruction over the block at p->pos: the first write of an element is 0 + v */
#define GR__FSCAT(fn, T) \
    static void fn(const gr__fprog *p, const gr__fop *op, int64_t n) { \
        const gr__fscat *c = &p->scat[op->arg[1]]; \
        const T *v = (const T *)p->ptr[op->arg[0]]; \
        T *z = (T *)p->ptr[op->out] + c->first[op->arg[2]] + p->pos; \
        int64_t st = p->st[op->arg[0]], lo, hi, i; \
        gr__fscat_adds(c, op->arg[2], p->iter_n, p->blk, p->pos, n, &lo, &hi); \
        lo -= p->pos; hi -= p->pos; \
        for (i = 0; i < lo; i++) z[i] = (T)0 + v[i * st]; \
        for (; i < hi; i++) z[i] += v[i * st]; \
        for (; i < n; i++) z[i] = (T)0 + v[i * st]; \
    }
GR__FSCAT(gr__fscat_f64, double)
GR__FSCAT(gr__fscat_f32, float)

/* one instruction over n elements (the kernel of its row, a pair, a multiply-add or a conversion) */
static void gr__fop_run(const gr__fprog *p, const gr__fop *op, int64_t n) {
    if (op->row < GR__EW_COUNT || op->row == GR__FOP_MULADD) {
        const void *args[3];
        int64_t sts[3];
        int a;
        for (a = 0; a < op->n_args; a++) { args[a] = p->ptr[op->arg[a]]; sts[a] = p->st[op->arg[a]]; }
        if (op->row == GR__FOP_MULADD)
            (op->dtype == GR_F64 ? gr__muladd_f64 : gr__muladd_f32)(n, (void *)p->ptr[op->out], args, sts);
        else
            gr__ew_kernels[op->row][op->dtype](n, (void *)p->ptr[op->out], args, sts);
    } else if (op->row == GR__FOP_PAIR)
        gr__ew_pairs[op->arg[1]].run(op->dtype, (void *)p->ptr[op->out], (void *)p->ptr[op->out2], p->ptr[op->arg[0]], p->st[op->arg[0]], n);
    else if (op->row == GR__FOP_SUM) {
        if (op->dtype == GR_F64) gr__sum8_f64(&p->sums[op->arg[1]].acc, (const double *)p->ptr[op->arg[0]], p->st[op->arg[0]], n);
        else gr__sum8_f32(&p->sums[op->arg[1]].acc, (const float *)p->ptr[op->arg[0]], p->st[op->arg[0]], n);
    } else if (op->row == GR__FOP_SCATTER) {
        if (op->dtype == GR_F64) gr__fscat_f64(p, op, n);
        else gr__fscat_f32(p, op, n);
    } else
        gr__convert_run(op->odtype, (void *)p->ptr[op->out], op->dtype, p->ptr[op->arg[0]], p->st[op->arg[0]], n);
}

/* ---- the scalar program: a group of one element (scalar functions) ------------------------------
   Every value in one flat array, val[ref] (a reference's value in its dtype's bytes): the inputs
   are copied in, the immediates are there from the start, the outputs are copied out at the end.
   float64 instructions compute in place: add, sub, mul, neg, sqr and the multiply-add as the
   table's expressions, sin and cos together as their pair's kernel does (gr__vm_sincos1), the other
   rows by their scalar function (gr__ew_scalar_f64: the float64 kernel's value for one element);
   the rest (other dtypes, comparisons, where, casts) by the kernel on one element. */

/* one instruction by its kernel on one element, the operands in v */
static void gr__fop_run1(double *v, const gr__fop *op) {
    const void *args[3];
    int64_t st[3] = { 0, 0, 0 };
    int a;
    if (op->row == GR__FOP_SUM) {                    /* the sum of one element: 0 + x (gr__sum8) */
        if (op->dtype == GR_F64) v[op->out] = 0.0 + v[op->arg[0]];
        else { float x; memcpy(&x, &v[op->arg[0]], sizeof x); x = (float)(0.0 + (double)x); memcpy(&v[op->out], &x, sizeof x); }
        return;
    }
    if (op->row < GR__EW_COUNT || op->row == GR__FOP_MULADD) {
        for (a = 0; a < op->n_args; a++) args[a] = &v[op->arg[a]];
        if (op->row == GR__FOP_MULADD)
            (op->dtype == GR_F64 ? gr__muladd_f64 : gr__muladd_f32)(1, &v[op->out], args, st);
        else
            gr__ew_kernels[op->row][op->dtype](1, &v[op->out], args, st);
    } else if (op->row == GR__FOP_PAIR)
        gr__ew_pairs[op->arg[1]].run(op->dtype, &v[op->out], &v[op->out2], &v[op->arg[0]], 0, 1);
    else
        gr__convert_run(op->odtype, &v[op->out], op->dtype, &v[op->arg[0]], 0, 1);
}

/* whether instruction op is one gr__fscalar_f64 runs: float64 in and out, and add, sub, mul, neg,
   sqr, the multiply-add, the pair sin and cos (whose pair index, read as an operand, is a reference),
   or a row with a scalar function */
static int gr__fop_f64(const gr__fprog *p, const gr__fop *op) {
    if (op->dtype != GR_F64 || op->odtype != GR_F64) return 0;
    if (op->row == GR__FOP_MULADD) return 1;
    if (op->row == GR__FOP_PAIR)
        return gr__ew_pairs[op->arg[1]].first == GR__EW_sin && gr__ew_pairs[op->arg[1]].second == GR__EW_cos && op->arg[1] < p->n_refs;
    return op->row < GR__EW_COUNT && gr__ew_scalar_f64[op->row] != NULL;
}

/* the instructions, every one float64 (gr__fop_f64), over v: the operands loaded before the row is
   looked at (an operand an instruction does not have reads arg[0]), the rows most programs are made
   of tested first. The last result also stays in a register (r, of reference last): an operand
   that is the instruction before's result is taken from there, not reloaded from v just after
   its store (a chain of a million links is a chain of such reads). */
static void gr__fscalar_f64(const gr__fop *op, const gr__fop *end, double *v) {
    double r = 0;
    int32_t last = -1;
    for (; op < end; op++) {
        int row = op->row;
        double a, b;
        if (op->arg[0] == last) a = r; else a = v[op->arg[0]];
        if (op->arg[1] == last) b = r; else b = v[op->arg[1]];
        if (row == GR__EW_mul) r = a * b;
        else if (row == GR__EW_add) r = a + b;
        else if (row == GR__FOP_MULADD) { double t = a * b; r = t + (op->arg[2] == last ? r : v[op->arg[2]]); }
        else if (row == GR__FOP_PAIR) gr__vm_sincos1(a, &r, &v[op->out2]);   /* (the pair's kernel's values) */
        else if (row == GR__EW_sub) r = a - b;
        else if (row == GR__EW_neg) r = -a;
        else if (row == GR__EW_sqr) r = a * a;
        else r = gr__ew_scalar_f64[row](a, b, v[op->arg[2]]);
        v[op->out] = r;
        last = op->out;
    }
}

/* the instructions over v, in order: runs of float64 ones as above, the others by their kernel */
static void gr__fscalar_run(const gr__fprog *p, const gr__fop *op, const gr__fop *end, double *v) {
    while (op < end) {
        const gr__fop *run = op;
        while (run < end && gr__fop_f64(p, run)) run++;
        gr__fscalar_f64(op, run, v);
        if (run < end) gr__fop_run1(v, run++);
        op = run;
    }
}

/* the program on one element; 0 when some input has more than one element (broadcast into the one
   output element: not here) */
static int gr__Fused_scalar(gr__fprog *p, const gr_array *const *in, gr_array *const *out) {
    double *v = p->val, *vo = p->val + p->n_ext + p->n_imm;
    int32_t e, m;
    for (e = 0; e < p->n_bext; e++) {                /* (v is scratch: a refusal leaves nothing behind) */
        const gr_array *a = in[e];
        if (a->size != 1) return 0;
        if (a->dtype == GR_F64) v[e] = *(const double *)a->data;
        else memcpy(&v[e], a->data, gr__dsize(a->dtype));
    }
    if (p->f64) gr__fscalar_f64(p->ops, p->ops + p->n_ops, v);
    else gr__fscalar_run(p, p->ops, p->ops + p->n_ops, v);
    for (m = 0; m < p->n_out; m++) {
        if (out[m]->dtype == GR_F64) *(double *)out[m]->data = vo[m];
        else memcpy(out[m]->data, &vo[m], gr__dsize(out[m]->dtype));
    }
    return 1;
}

/* the float64 program on one element, every input and output one float64 (gr_call's path for a
   function that is one such node: gr__fused_scalar_prog, src/call.c) */
static void gr__fscalar_call(gr__fprog *p, const gr_array *const *in, gr_array *const *out) {
    double *v = p->val, *vo = p->val + p->n_ext + p->n_imm;
    int32_t e, m;
    for (e = 0; e < p->n_ext; e++) v[e] = *(const double *)in[e]->data;
    gr__fscalar_f64(p->ops, p->ops + p->n_ops, v);
    for (m = 0; m < p->n_out; m++) *(double *)out[m]->data = vo[m];
}

/* the program of a Fused node whose every instruction is float64 (gr__fscalar_f64), else NULL */
static gr__fprog *gr__fused_scalar_prog(const gr_node *node) {
    gr__fprog *p;
    if (node->op->perform != gr__Fused_perform) return NULL;
    p = (gr__fprog *)gr__fp(node);
    return p->f64 ? p : NULL;
}

/* a sum into its 0-d output (float64, or float32 rounded once) */
static void gr__Fused_put_sum(gr_array *y, double v) {
    if (y->dtype == GR_F64) *(double *)y->data = v;
    else *(float *)y->data = (float)v;
}

/* the program over the data block by block, o0 the shape iterated (kept out of gr__Fused_perform,
   whose scalar calls then need none of its frame) */
#if defined(__GNUC__) || defined(__clang__)
#define GR__FUSE_NOINLINE __attribute__((noinline))
#else
#define GR__FUSE_NOINLINE
#endif
static GR__FUSE_NOINLINE gr_status gr__Fused_blocks(gr__fprog *p, const gr_array *const *in, gr_array *const *out, const gr_array *o0) {
    int64_t shape[GR_MAX_NDIM], idx[GR_MAX_NDIM], inner, rows, r, j0, e;
    int nd = 0, d, k, m;
    /* element strides of every external input over the output's shape (0 where broadcast), with
       axes of size 1 dropped and neighbours merged where every operand is contiguous across them */
    for (d = 0; d < o0->ndim; d++) {
        int merge;
        if (o0->shape[d] == 1) continue;
        merge = nd > 0;
        for (e = 0; e < p->n_bext; e++) {
            const gr_array *a = in[e];
            int ad = d - (o0->ndim - a->ndim);
            int64_t s = 0, q;
            if (ad >= 0 && a->shape[ad] != 1) {
                s = 1;
                for (q = ad + 1; q < a->ndim; q++) s *= a->shape[q];
            }
            if (merge && p->ext_st[e * GR_MAX_NDIM + nd - 1] != s * o0->shape[d]) merge = 0;
            p->ext_off[e] = s;                       /* this axis's stride, for now */
        }
        if (merge) {
            shape[nd - 1] *= o0->shape[d];
            for (e = 0; e < p->n_bext; e++) p->ext_st[e * GR_MAX_NDIM + nd - 1] = p->ext_off[e];
        } else {
            shape[nd] = o0->shape[d];
            for (e = 0; e < p->n_bext; e++) p->ext_st[e * GR_MAX_NDIM + nd] = p->ext_off[e];
            nd++;
        }
    }
    inner = nd ? shape[nd - 1] : 1;
    rows = o0->size / inner;
    for (d = 0; d < nd; d++) idx[d] = 0;
    for (e = 0; e < p->n_bext; e++) {
        p->st[e] = nd && p->ext_st[e * GR_MAX_NDIM + nd - 1] ? 1 : 0;
        p->ext_off[e] = 0;                         /* where the row starts in input e, kept as the rows go */
    }
    if (nd == 2 && gr__Fused_rows(p, in, out, shape, inner)) return GR_OK;
    for (k = 0; k < p->n_sums; k++) gr__sum8_init(&p->sums[k].acc, o0->size);
    for (k = 0; k < p->n_scat; k++) p->ptr[p->n_ext + p->n_imm + p->scat[k].out] = out[p->scat[k].out]->data;
    p->iter_n = o0->size;
    for (r = 0; r < rows; r++) {
        for (j0 = 0; j0 < inner; j0 += p->blk) {
            int64_t n = inner - j0 < p->blk ? inner - j0 : p->blk;
            for (e = 0; e < p->n_bext; e++)
                p->ptr[e] = (const char *)in[e]->data + (size_t)(p->ext_off[e] + j0 * p->st[e]) * gr__dsize(in[e]->dtype);
            for (m = 0; m < p->n_full; m++)
                p->ptr[p->n_ext + p->n_imm + m] = (char *)out[m]->data + (size_t)(r * inner + j0) * gr__dsize(out[m]->dtype);
            p->pos = r * inner + j0;
            for (k = 0; k < p->n_ops; k++) gr__fop_run(p, &p->ops[k], n);
        }
        for (d = nd - 2; d >= 0; d--) {              /* the next row: an odometer over the outer axes */
            if (++idx[d] < shape[d]) {
                for (e = 0; e < p->n_bext; e++) p->ext_off[e] += p->ext_st[e * GR_MAX_NDIM + d];
                break;
            }
            idx[d] = 0;
            for (e = 0; e < p->n_bext; e++) p->ext_off[e] -= (shape[d] - 1) * p->ext_st[e * GR_MAX_NDIM + d];
        }
    }
    for (k = 0; k < p->n_sums; k++) gr__Fused_put_sum(out[p->sums[k].out], gr__sum8_end(&p->sums[k].acc));
    return GR_OK;
}

/* before the pass over m positions: each vector's views placed, what none covers set to 0 */
static gr_status gr__Fused_scat_start(const gr_node *node, gr__fprog *p, gr_array *const *out, int64_t m) {
    int32_t k;
    for (k = 0; k < p->n_scat; k++) {
        gr__fscat *c = &p->scat[k];
        gr_array *y = out[c->out];
        int64_t z[6];
        int g, n_gaps;
        size_t es = gr__dsize(y->dtype);
        if (!gr__fscat_plan(c, y->size, m))
            return gr_node_error(node, GR_ERR_SHAPE, "a slice of %s updated by %lld values does not have %lld elements",
                                 gr__d(gr__in(node)[c->ref]).s, (long long)m, (long long)m);
        n_gaps = gr__fscat_gaps(c, y->size, m, z);
        for (g = 0; g < n_gaps; g++) memset((char *)y->data + (size_t)z[2 * g] * es, 0, (size_t)(z[2 * g + 1] - z[2 * g]) * es);
    }
    return GR_OK;
}

/* the shape the group iterates over (it: its ndim, shape and size) when no output has it: the
   broadcast of the inputs' shapes, which the shape rule has checked */
static void gr__Fused_iter(const gr__fprog *p, int n_in, const gr_array *const *in, gr_array *it) {
    int d, k;
    it->ndim = p->ndim;
    for (d = 0; d < it->ndim; d++) it->shape[d] = 1;
    for (k = 0; k < n_in; k++)
        for (d = 0; d < in[k]->ndim; d++)
            if (in[k]->shape[d] != 1) it->shape[it->ndim - in[k]->ndim + d] = in[k]->shape[d];
    it->size = 1;
    for (d = 0; d < it->ndim; d++) it->size *= it->shape[d];
}

static gr_status gr__Fused_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    gr__fprog *p = (gr__fprog *)gr__fp(node);
    const gr_array *o0 = out[0];
    gr_array it;
    int32_t k;
    if (p->n_full == 0) { gr__Fused_iter(p, p->n_bext, in, &it); o0 = &it; }
    if (p->n_scat) {
        gr_status st = gr__Fused_scat_start(node, p, out, o0->size);
        if (st != GR_OK) return st;
    }
    if (o0->size == 0) {                             /* sums of nothing */
        for (k = 0; k < p->n_sums; k++) gr__Fused_put_sum(out[p->sums[k].out], 0.0);
        return GR_OK;
    }
    if (o0->size == 1 && !p->n_scat && gr__Fused_scalar(p, in, out)) return GR_OK;
    return gr__Fused_blocks(p, in, out, o0);
}

static gr_status gr__Fused_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { (void)og; (void)ig; return gr__compiled_only(node); }
static gr_status gr__Fused_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) { (void)ev; (void)orop; return gr__compiled_only(node); }

/* A program's memory: blocks the private graph owns, not its arena, so that gr__fn_compact can
   hand them over with their Fused node. One block holds n parts of the given sizes; at[i] is where
   part i starts (every part 16-byte aligned). */
static void *gr__fprog_block(gr_graph *cg, int n, const size_t *size, size_t *at) {
    size_t total = 0;
    void *block;
    int i;
    for (i = 0; i < n; i++) { at[i] = total; total += (size[i] + 15u) & ~(size_t)15u; }
    block = GR_MALLOC(total ? total : 1);
    if (!block) { gr__error(cg, GR_ERR_NOMEM, "out of memory (fusion)"); return NULL; }
    return gr__own(cg, block) ? block : NULL;
}

/* ---- the schedule ---------------------------------------------------------------------------------- */

/* the node of id `id` among the function's: its private graph's, or the source graph's it reuses */
static gr_node *gr__fuse_node(const gr__rewriter *rw, const gr_graph *cg, uint32_t id) {
    return id < cg->node_base ? rw->g->nodes[id] : cg->nodes[id - cg->node_base];
}
/* x, or the Fused output that replaces it */
static gr_var *gr__fuse_in(gr_graph *cg, const uint32_t *repl, uint32_t nv, gr_var *x) {
    return x->id < nv && repl[x->id] ? cg->vars[repl[x->id] - 1 - cg->var_base] : x;
}

/* The nodes the roots need (not above a variable v with given[v->id]), as their positions in the
   order the copy made them (rw->view: a topological order of the function's nodes, the reused
   source nodes among them): one sweep back down the list marks what is needed, reading a node only
   when it is. */
static gr_status gr__fuse_needed(gr__rewriter *rw, int n_roots, gr_var *const *roots, const uint8_t *given, uint32_t nn,
                                 uint32_t **out, uint32_t *n_out) {
    gr_graph *cg = rw->cg;
    uint8_t *need = (uint8_t *)gr__calloc(nn + 1u, 1);
    uint32_t *order;
    uint32_t k, n = 0;
    int r;
    *out = NULL;
    *n_out = 0;
    if (!need) return gr__error(cg, GR_ERR_NOMEM, "out of memory (fusion)");
    for (r = 0; r < n_roots; r++)
        if (gr__owner(roots[r]) && !given[roots[r]->id]) need[gr__owner(roots[r])->id] = 1;
    for (k = rw->n_view; k-- > 0;) {
        gr_node *node;
        int i;
        if (!need[rw->view[k]]) continue;
        n++;
        node = gr__fuse_node(rw, cg, rw->view[k]);
        for (i = 0; i < node->n_in; i++)
            if (gr__owner(gr__in(node)[i]) && !given[gr__in(node)[i]->id]) need[gr__owner(gr__in(node)[i])->id] = 1;
    }
    order = (uint32_t *)GR_MALLOC(sizeof(uint32_t) * (n + 1u));
    if (!order) { GR_FREE(need); return gr__error(cg, GR_ERR_NOMEM, "out of memory (fusion)"); }
    for (n = 0, k = 0; k < rw->n_view; k++) if (need[rw->view[k]]) { order[n++] = k; need[rw->view[k]] = 0; }
    GR_FREE(need);
    *out = order;
    *n_out = n;
    return GR_OK;
}

#define GR__FUSE_OPEN 8                  /* groups kept open at once */
enum {                                   /* fusion's flags of a variable */
    GR__FV_OUT = 1,                      /* read outside the group making it (or a root) */
    GR__FV_ALIASED = 2,                  /* a fill read in place: its register is its source's */
    GR__FV_MINE = 4                      /* made by the group being fused */
};
#define GR__FUSE_BLK 256                 /* elements per block */

/* fusion's state over the schedule (ids: the function's variables and nodes, both graphs') */
typedef struct gr__fuser {
    gr__rewriter *rw;
    gr_graph *cg;
    uint32_t nn, nv;                     /* id bounds of the nodes and the variables */
    uint32_t n_order;
    uint32_t *oid;                       /* the schedule, as node ids: the passes read ids without touching the nodes */
    int32_t *pos;                        /* by node id: its position in the schedule, -1 none */
    int32_t *group;                      /* by node id: its group, -1 none */
    int32_t *gstart;                     /* each group's first position in the schedule */
    uint32_t cap_gstart;
    int32_t n_groups, last_big;          /* last_big: the last group fused (two members or more) */
    int32_t *gmem_at;                    /* where each group's members start in gmem */
    uint32_t *gmem;                      /* each group's members (node ids) in schedule order, group after group */
    uint8_t *vflag;                      /* by variable id: GR__FV_* */
    uint32_t *last;                      /* by variable id: 1 + the schedule position of its last reader, 0 none */
    int32_t *ref;                        /* by variable id: its operand reference in the program being made */
    uint32_t *second_of;                 /* by variable id: 1 + the id of the member computing the second of a pair of it */
    uint8_t *paired;                     /* by node id: computed with the first of its pair */
    uint32_t *repl;                      /* by variable id: 1 + the id of the Fused output that replaces it, 0 none */
    uint32_t n_fused;                    /* Fused nodes made so far */
    int32_t *reg;                        /* with conditionals, by node id: its region (src/grad.c); a group
                                            keeps to one, so that a side not taken computes nothing */
    uint8_t *nread;                      /* by variable id: its readers among the scheduled nodes and the roots
                                            (counted up to 2: one byte a variable) */
    uint8_t *scat;                       /* by node id: GR__FS_* (a slice's increment its group runs, or a fill it absorbs) */
} gr__fuser;

enum { GR__FS_VIEW1 = 1, GR__FS_VIEW2 = 2, GR__FS_FILL = 3 };   /* the first or second increment of a vector, its zeros */

/* a member that is not elementwise: a sum, a slice's increment, or the zeros it absorbed */
static int gr__fuse_edge(const gr__fuser *fz, const gr_node *node) {
    return (gr__flags_of(node->op) & GR__OPF_FOLD) || (fz->scat && fz->scat[node->id]);
}

/* input i of node, or the Fused output that replaces it (none before the first Fused node) */
static gr_var *gr__fuse_input(const gr__fuser *fz, const gr_node *node, int i) {
    return fz->n_fused ? gr__fuse_in(fz->cg, fz->repl, fz->nv, gr__in(node)[i]) : gr__in(node)[i];
}

static gr_status gr__fuse_nomem(gr__fuser *fz) { return gr__error(fz->cg, GR_ERR_NOMEM, "out of memory (fusion)"); }

/* the schedule: the needed nodes by depth (the longest path from the leaves, which the copy noted
   in rw->view_depth), a topological order too: a node comes as early as it can, so a view of an
   input precedes every group that reads it. order (positions in rw->view) is freed. */
static gr_status gr__fuse_schedule(gr__fuser *fz, uint32_t *order) {
    gr__rewriter *rw = fz->rw;
    uint32_t max_depth = 0, *count, k;
    fz->oid = (uint32_t *)GR_MALLOC(sizeof(uint32_t) * (fz->n_order + 1u));
    if (!fz->oid) { GR_FREE(order); return gr__fuse_nomem(fz); }
    for (k = 0; k < fz->n_order; k++) if (rw->view_depth[order[k]] > max_depth) max_depth = rw->view_depth[order[k]];
    count = (uint32_t *)gr__calloc((size_t)max_depth + 2, sizeof(uint32_t));
    if (!count) { GR_FREE(order); return gr__fuse_nomem(fz); }
    for (k = 0; k < fz->n_order; k++) count[rw->view_depth[order[k]] + 1]++;
    for (k = 1; k <= max_depth + 1; k++) count[k] += count[k - 1];
    for (k = 0; k < fz->n_order; k++) fz->oid[count[rw->view_depth[order[k]]]++] = rw->view[order[k]];
    GR_FREE(count);
    GR_FREE(order);
    for (k = 0; k < fz->nn; k++) { fz->group[k] = -1; fz->pos[k] = -1; }
    for (k = 0; k < fz->n_order; k++) fz->pos[fz->oid[k]] = (int32_t)k;
    return GR_OK;
}

/* with conditionals: each scheduled node's region (fz->reg), so that groups keep to one */
static gr_status gr__fuse_regions(gr__fuser *fz, int n_roots, gr_var *const *roots) {
    gr_node **nodes;
    gr__region *regs = NULL;
    int32_t n_regs = 0, *nreg;
    uint32_t cap = 0, k;
    int any = 0;
    gr_status st;
    for (k = 0; k < fz->n_order && !any; k++) any = (gr__flags_of(gr__fuse_node(fz->rw, fz->cg, fz->oid[k])->op) & GR__OPF_LAZY) != 0;
    if (!any) return GR_OK;
    nodes = (gr_node **)GR_MALLOC(sizeof(gr_node *) * (fz->n_order + 1u));
    nreg = (int32_t *)GR_MALLOC(sizeof(int32_t) * (fz->n_order + 1u));
    fz->reg = (int32_t *)gr__calloc(fz->nn + 1u, sizeof(int32_t));
    if (!nodes || !nreg || !fz->reg) { GR_FREE(nodes); GR_FREE(nreg); return gr__fuse_nomem(fz); }
    for (k = 0; k < fz->n_order; k++) nodes[k] = gr__fuse_node(fz->rw, fz->cg, fz->oid[k]);
    st = gr__regions_of(fz->cg, nodes, fz->n_order, n_roots, roots, &regs, &n_regs, &cap, nreg);
    for (k = 0; st == GR_OK && k < fz->n_order; k++) fz->reg[fz->oid[k]] = nreg[k];
    GR_FREE(nodes); GR_FREE(nreg); GR_FREE(regs);
    return st;
}

/* ---- grouping ------------------------------------------------------------------------------------ */

/* elementwise rows with a kernel for the dtype; CONVERT and FILL rows (Cast, BroadcastLike) become
   copies (a fill's reference is an input read for its shape) */
static int gr__fusable(const gr_node *node) {
    if (node->n_out != 1) return 0;
    if (gr__flags_of(node->op) & GR__OPF_ELEMWISE) return gr__ew_kernels[gr__code_of(node->op)][gr__in(node)[node->n_in - 1]->dtype] != NULL;
    return (gr__flags_of(node->op) & (GR__OPF_CONVERT | GR__OPF_FILL)) != 0;
}

/* the open group node can join: one of its signature none of whose inputs was computed after the
   group started outside it; -1 none */
static int32_t gr__fuse_joinable(gr__fuser *fz, const gr_node *node, const int32_t *open, int n_open) {
    int o, i;
    for (o = n_open - 1; o >= 0; o--) {
        gr_node *first = gr__fuse_node(fz->rw, fz->cg, fz->oid[fz->gstart[open[o]]]);
        int ok = (!fz->reg || fz->reg[node->id] == fz->reg[first->id]) && gr__sig_same(fz->rw, gr__out(node)[0], gr__out(first)[0]);
        for (i = 0; ok && i < node->n_in; i++) {
            gr_node *w = gr__owner(gr__in(node)[i]);
            if (w && fz->group[w->id] != open[o] && fz->pos[w->id] >= fz->gstart[open[o]]) ok = 0;
            if (w && fz->group[w->id] == open[o] && gr__fuse_edge(fz, w)) ok = 0;   /* a sum is done after the pass */
        }   /* (no Fused node exists yet: every id is below nn) */
        if (ok) return open[o];
    }
    return -1;
}

/* the open group a sum node takes its place in: the one making its input, when it is a FOLD row (a
   whole sum, 0-d) of float64 or float32 into the same dtype; -1 none */
static int32_t gr__fuse_fold_group(gr__fuser *fz, const gr_node *node, const int32_t *open, int n_open) {
    const gr_var *x, *y;
    gr_node *w;
    int o;
    if (!(gr__flags_of(node->op) & GR__OPF_FOLD) || node->n_in != 1 || node->n_out != 1) return -1;
    x = gr__in(node)[0];
    y = gr__out(node)[0];
    w = gr__owner(x);
    if (y->ndim != 0 || (x->dtype != GR_F64 && x->dtype != GR_F32) || y->dtype != x->dtype || !w || fz->group[w->id] < 0) return -1;
    if (gr__fuse_edge(fz, w) || (fz->reg && fz->reg[node->id] != fz->reg[w->id])) return -1;
    for (o = 0; o < n_open; o++) if (open[o] == fz->group[w->id]) return open[o];
    return -1;
}

/* the open group a slice's increment node takes its place in: its value's, when node increments a
   unit-step slice of a vector (gr__inc_slice) by a float vector that group makes, and the vector is
   a fill of +0 (absorbed: the group makes the zeros) or the group's first increment of one (two at
   most), read by node alone; -1 none */
static int32_t gr__fuse_scatter_group(gr__fuser *fz, gr_node *node, const int32_t *open, int n_open) {
    gr_var *x, *y;
    gr_node *w, *b;
    int64_t start, stop;
    int32_t g = -1;
    int o;
    if (!gr__inc_slice(fz->rw, node, &start, &stop)) return -1;
    x = gr__in(node)[0];
    y = gr__in(node)[1];
    w = gr__owner(y);
    b = gr__owner(x);
    if (!w || !b || fz->group[w->id] < 0 || (gr__flags_of(w->op) & GR__OPF_FOLD) || fz->scat[w->id]) return -1;
    if ((x->dtype != GR_F64 && x->dtype != GR_F32) || y->dtype != x->dtype || fz->nread[x->id] != 1) return -1;
    if (fz->reg && fz->reg[node->id] != fz->reg[w->id]) return -1;
    if (gr__out(gr__fuse_node(fz->rw, fz->cg, fz->oid[fz->gstart[fz->group[w->id]]]))[0]->ndim != 1) return -1;
    for (o = 0; o < n_open; o++) if (open[o] == fz->group[w->id]) g = open[o];
    if (g < 0) return -1;
    if (fz->scat[b->id] == GR__FS_VIEW1 && fz->group[b->id] == g) { fz->scat[node->id] = GR__FS_VIEW2; return g; }
    if ((gr__flags_of(b->op) & GR__OPF_FILL) && !fz->scat[b->id]) {
        const gr_var *z = gr__in(b)[0];
        const gr_array *za = z->kind == GR__VK_CONST && z->ndim == 0 ? (const gr_array *)gr__ext(z) : NULL;
        double zv = za ? gr_array_get(za, 0) : 1.0;
        if (!za || zv != 0 || signbit(zv) || gr__in(b)[1]->ndim != 1 || (fz->reg && fz->reg[b->id] != fz->reg[node->id])) return -1;
        fz->scat[b->id] = GR__FS_FILL;
        fz->group[b->id] = g;
        fz->scat[node->id] = GR__FS_VIEW1;
        return g;
    }
    return -1;
}

/* 1. groups, in schedule order; in the same pass, which values leave the group that makes them,
   and the last reader of each value */
static gr_status gr__fuse_group(gr__fuser *fz) {
    int32_t open[GR__FUSE_OPEN], n_open = 0;
    uint32_t k;
    int i;
    for (k = 0; k < fz->n_order; k++) {
        gr_node *node = gr__fuse_node(fz->rw, fz->cg, fz->oid[k]);
        int32_t joined = -1;
        if (gr__fusable(node)) {
            joined = gr__fuse_joinable(fz, node, open, n_open);
            if (joined < 0) {                       /* a new group, the oldest open one closed */
                if (!gr__grow((void **)&fz->gstart, &fz->cap_gstart, (uint32_t)fz->n_groups, sizeof(int32_t))) return gr__fuse_nomem(fz);
                joined = fz->n_groups++;
                fz->gstart[joined] = (int32_t)k;
                if (n_open == GR__FUSE_OPEN) { memmove(open, open + 1, sizeof(int32_t) * (GR__FUSE_OPEN - 1)); n_open--; }
                open[n_open++] = joined;
            }
            fz->group[node->id] = joined;
        } else if ((joined = gr__fuse_fold_group(fz, node, open, n_open)) >= 0 ||
                   (joined = gr__fuse_scatter_group(fz, node, open, n_open)) >= 0)
            fz->group[node->id] = joined;
        for (i = 0; i < node->n_in; i++) {
            gr_node *w = gr__owner(gr__in(node)[i]);
            if (w && fz->group[w->id] >= 0 && fz->group[w->id] != joined) fz->vflag[gr__in(node)[i]->id] |= GR__FV_OUT;   /* ids < nn here */
            fz->last[gr__in(node)[i]->id] = k + 1;
        }
    }
    return GR_OK;
}

/* each group's members, group after group; the grouping's arrays are freed (room for the programs) */
static gr_status gr__fuse_members(gr__fuser *fz) {
    uint32_t k;
    int32_t g, *fill;
    fz->gmem_at = (int32_t *)gr__calloc((size_t)fz->n_groups + 1, sizeof(int32_t));
    fz->gmem = (uint32_t *)GR_MALLOC(sizeof(uint32_t) * (fz->n_order + 1u));
    fz->repl = (uint32_t *)gr__calloc(fz->nv + 1u, sizeof(uint32_t));
    if (!fz->gmem_at || !fz->gmem || !fz->repl) return gr__fuse_nomem(fz);
    for (k = 0; k < fz->n_order; k++) if (fz->group[fz->oid[k]] >= 0) fz->gmem_at[fz->group[fz->oid[k]] + 1]++;
    for (g = 0; g < fz->n_groups; g++) fz->gmem_at[g + 1] += fz->gmem_at[g];
    fill = fz->gstart;                              /* gstart is not needed any more: a cursor per group */
    for (g = 0; g < fz->n_groups; g++) fill[g] = fz->gmem_at[g];
    for (k = 0; k < fz->n_order; k++) if (fz->group[fz->oid[k]] >= 0) fz->gmem[fill[fz->group[fz->oid[k]]]++] = fz->oid[k];
    GR_FREE(fz->group); GR_FREE(fz->oid); GR_FREE(fz->gstart);
    fz->group = fz->gstart = NULL;
    fz->oid = NULL;
    return GR_OK;
}

/* ---- one group's program ------------------------------------------------------------------------- */

/* the group being fused */
typedef struct gr__fgroup {
    const uint32_t *mem;                 /* its members (node ids), in schedule order */
    int32_t n_members;
    gr_var **ext, **outs_old, **outs_new;
    int32_t *free_regs;
    uint32_t cap_ext, cap_out, cap_free; /* grown as used: a group of millions has a few externals */
    int32_t n_ext, n_imm, n_out, n_reg, n_free, op_i;
    int32_t n_full, n_sums;              /* outputs of the group's shape (the sums' come after them); sums */
    int32_t n_bext;                      /* externals read (the others: a vector's shape) */
    gr__fscat *scat;                     /* the vectors its increments add into */
    uint32_t cap_scat;
    int32_t n_scat;
    gr__fprog *p;
} gr__fgroup;

/* the externals only absorbed fills read (for a vector's shape) moved after the others: the pass
   neither reads them nor broadcasts against them */
static void gr__fgroup_shape_only(gr__fuser *fz, gr__fgroup *gs) {
    int32_t mi, i, k = 0;
    int j, any = 0;
    gs->n_bext = gs->n_ext;
    for (mi = 0; mi < gs->n_members && !any; mi++) any = fz->scat[gs->mem[mi]] == GR__FS_FILL;
    if (!any) return;                                /* (no absorbed fill: every external is read) */
    for (i = 0; i < gs->n_ext; i++) fz->ref[gs->ext[i]->id] = -4;   /* read by no instruction yet */
    for (mi = 0; mi < gs->n_members; mi++) {
        gr_node *node = gr__fuse_node(fz->rw, fz->cg, gs->mem[mi]);
        if (fz->scat[node->id] == GR__FS_FILL) continue;
        for (j = 0; j < node->n_in; j++) {
            gr_var *x = gr__fuse_input(fz, node, j);
            if (fz->ref[x->id] == -4) fz->ref[x->id] = -5;
        }
    }
    for (i = 0; i < gs->n_ext; i++) if (fz->ref[gs->ext[i]->id] == -5) { gr_var *t = gs->ext[k]; gs->ext[k++] = gs->ext[i]; gs->ext[i] = t; }
    gs->n_bext = k;
    for (i = 0; i < gs->n_ext; i++) fz->ref[gs->ext[i]->id] = i;
}

/* operands: externals (and immediates) in first-use order; outputs; in the same pass, inputs made by
   groups fused before now read their Fused outputs, and the seconds of pairs are noted
   (second_of[a] is the member computing second(a)) */
static gr_status gr__fgroup_operands(gr__fuser *fz, gr__fgroup *gs) {
    gr_var **tmp;
    int32_t mi, e = 0, m = 0;
    int i;
    for (mi = 0; mi < gs->n_members; mi++) {
        gr_node *node = gr__fuse_node(fz->rw, fz->cg, gs->mem[mi]);
        gr_var *y = gr__out(node)[0];
        for (i = 0; i < node->n_in; i++) {
            gr_var *x = gr__fuse_input(fz, node, i);
            if ((fz->vflag[x->id] & GR__FV_MINE) || fz->ref[x->id] != -1) continue;
            fz->ref[x->id] = -2 - (x->kind == GR__VK_CONST && x->ndim == 0);   /* -2 external, -3 immediate */
            if (!gr__grow((void **)&gs->ext, &gs->cap_ext, (uint32_t)gs->n_ext, sizeof(gr_var *))) return GR_ERR_NOMEM;
            gs->ext[gs->n_ext++] = x;
        }
        if (fz->vflag[y->id] & GR__FV_OUT) {
            if (!gr__grow((void **)&gs->outs_old, &gs->cap_out, (uint32_t)gs->n_out, sizeof(gr_var *))) return GR_ERR_NOMEM;
            gs->outs_old[gs->n_out++] = y;
        }
        fz->vflag[y->id] |= GR__FV_MINE;
        if ((gr__flags_of(node->op) & GR__OPF_ELEMWISE) && gr__ew_pair_second(gr__code_of(node->op)) && gr__is_float(gr__fuse_input(fz, node, 0)->dtype))
            fz->second_of[gr__fuse_input(fz, node, 0)->id] = node->id + 1;
    }
    tmp = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(gs->n_ext + 1));
    gs->outs_new = (gr_var **)GR_MALLOC(sizeof(gr_var *) * (size_t)(gs->n_out + 1));
    if (!tmp || !gs->outs_new) { GR_FREE(tmp); return GR_ERR_NOMEM; }
    for (i = 0; i < gs->n_ext; i++) if (fz->ref[gs->ext[i]->id] == -2) tmp[e++] = gs->ext[i];   /* externals first, then immediates */
    gs->n_imm = gs->n_ext - e;
    for (i = 0; i < gs->n_ext; i++) if (fz->ref[gs->ext[i]->id] == -3) tmp[e + m++] = gs->ext[i];
    for (i = 0; i < gs->n_ext; i++) { gs->ext[i] = tmp[i]; fz->ref[gs->ext[i]->id] = i; }
    gs->n_ext = e;
    GR_FREE(tmp);
    gr__fgroup_shape_only(fz, gs);
    for (i = 0, m = 0; i < gs->n_out; i++)           /* the sums' and vectors' outputs last (outs_new is scratch here) */
        if (!gr__fuse_edge(fz, gr__owner(gs->outs_old[i]))) gs->outs_new[m++] = gs->outs_old[i];
    gs->n_full = m;
    for (i = 0; i < gs->n_out; i++)
        if (gr__fuse_edge(fz, gr__owner(gs->outs_old[i]))) gs->outs_new[m++] = gs->outs_old[i];
    memcpy(gs->outs_old, gs->outs_new, sizeof(gr_var *) * (size_t)gs->n_out);
    return GR_OK;
}

/* the program and its instructions: one block (see gr__fprog_block), with the immediates' values,
   the outputs' references and types */
static gr_status gr__fgroup_program(gr__fuser *fz, gr__fgroup *gs) {
    size_t at[4], size[4];
    unsigned char *b;
    gr__fprog *p;
    int i;
    size[0] = sizeof(gr__fprog);
    size[1] = sizeof(gr__fop) * (size_t)gs->n_members;
    size[2] = sizeof(double) * (size_t)(gs->n_imm + 1);
    size[3] = sizeof(gr_type) * (size_t)(gs->n_out + 1);
    b = (unsigned char *)gr__fprog_block(fz->cg, 4, size, at);
    if (!b) return GR_ERR_NOMEM;
    p = gs->p = (gr__fprog *)b;
    memset(p, 0, sizeof *p);
    p->ops = (gr__fop *)(b + at[1]);
    p->imm = (double *)(b + at[2]);
    p->out_types = (gr_type *)(b + at[3]);
    p->n_ext = gs->n_ext;
    p->n_bext = gs->n_bext;
    p->n_imm = gs->n_imm;
    p->n_out = gs->n_out;
    p->n_full = gs->n_full;
    p->ndim = gr__out(gr__fuse_node(fz->rw, fz->cg, gs->mem[0]))[0]->ndim;   /* (the first member is elementwise) */
    p->blk = p->ndim == 0 ? 1 : GR__FUSE_BLK;
    for (i = 0; i < gs->n_out; i++) fz->ref[gs->outs_old[i]->id] = gs->n_ext + gs->n_imm + i;
    for (i = 0; i < gs->n_imm; i++)
        memcpy(&p->imm[i], ((const gr_array *)gr__ext(gs->ext[gs->n_ext + i]))->data, gr__dsize(gs->ext[gs->n_ext + i]->dtype));
    for (i = 0; i < gs->n_out; i++) gr_var_type(gs->outs_old[i], &p->out_types[i]);
    return GR_OK;
}

/* y's register: one freed before, or a new one */
static void gr__fgroup_reg(gr__fuser *fz, gr__fgroup *gs, const gr_var *y) {
    if (fz->ref[y->id] < 0) fz->ref[y->id] = gs->n_free ? gs->free_regs[--gs->n_free] : gs->n_ext + gs->n_imm + gs->n_out + gs->n_reg++;
}

/* the registers of node's inputs whose last reader it is (at schedule position q) become free */
static gr_status gr__fgroup_free_inputs(gr__fuser *fz, gr__fgroup *gs, const gr_node *node, uint32_t q) {
    int i, i2;
    for (i = 0; i < node->n_in; i++) {
        gr_var *x = gr__fuse_input(fz, node, i);
        int dup = 0;
        for (i2 = 0; i2 < i; i2++) if (gr__fuse_input(fz, node, i2) == x) dup = 1;
        if (!dup && (fz->vflag[x->id] & (GR__FV_MINE | GR__FV_OUT | GR__FV_ALIASED)) == GR__FV_MINE && fz->last[x->id] == q + 1 &&
            fz->ref[x->id] >= 0) {                   /* (a vector added into has no register) */
            if (!gr__grow((void **)&gs->free_regs, &gs->cap_free, (uint32_t)gs->n_free, sizeof(int32_t))) return GR_ERR_NOMEM;
            gs->free_regs[gs->n_free++] = fz->ref[x->id];
        }
    }
    return GR_OK;
}

/* add node (at schedule position q) joins the instruction before it when that is a mul of the same
   float dtype whose product, in a register, only this add reads: one muladd instruction, one pass
   over the block instead of two. 1 when it did (the add's inputs' registers are still to free) */
static int gr__fgroup_muladd(gr__fuser *fz, gr__fgroup *gs, const gr_node *node, uint32_t q) {
    gr__fop *prev = gs->op_i > 0 ? &gs->p->ops[gs->op_i - 1] : NULL;
    gr_var *y = gr__out(node)[0];
    int k;
    if (!prev || prev->row != GR__EW_mul || prev->n_args != 2 || node->n_in != 2) return 0;
    if ((y->dtype != GR_F64 && y->dtype != GR_F32) || prev->dtype != y->dtype || prev->odtype != y->dtype) return 0;
    for (k = 0; k < 2; k++) {
        gr_var *m = gr__fuse_input(fz, node, k), *c = gr__fuse_input(fz, node, 1 - k);
        if (fz->ref[m->id] != prev->out || fz->ref[c->id] == prev->out || c->dtype != y->dtype || m->dtype != y->dtype) continue;
        if ((fz->vflag[m->id] & (GR__FV_MINE | GR__FV_OUT | GR__FV_ALIASED)) != GR__FV_MINE || fz->last[m->id] != q + 1) continue;
        prev->row = GR__FOP_MULADD;
        prev->n_args = 3;
        prev->arg[2] = fz->ref[c->id];
        gr__fgroup_reg(fz, gs, y);
        prev->out = fz->ref[y->id];
        return 1;
    }
    return 0;
}

/* increment node's instruction (op): its value added into view k of its vector, the first view's
   vector a new one; the vector's output, once the last increment's is known, written into every
   instruction adding into it */
static gr_status gr__fgroup_scatter(gr__fuser *fz, gr__fgroup *gs, gr_node *node, gr__fop *op, uint32_t q) {
    gr_var *x = gr__fuse_input(fz, node, 0), *v = gr__fuse_input(fz, node, 1), *y = gr__out(node)[0];
    gr__fscat *c;
    int32_t ci, k;
    if (fz->scat[node->id] == GR__FS_VIEW1) {
        if (!gr__grow((void **)&gs->scat, &gs->cap_scat, (uint32_t)gs->n_scat, sizeof(gr__fscat))) return GR_ERR_NOMEM;
        ci = gs->n_scat++;
        c = &gs->scat[ci];
        memset(c, 0, sizeof *c);
        c->ref = fz->ref[gr__fuse_input(fz, gr__owner(x), 1)->id];   /* the fill's shape, an external input */
        c->out = -1;
        c->op0 = gs->op_i - 1;
    } else {
        ci = -16 - fz->ref[x->id];
        c = &gs->scat[ci];
    }
    gr__inc_slice(fz->rw, node, &c->start[c->n_views], &c->stop[c->n_views]);
    op->n_args = 1;
    op->dtype = op->odtype = (uint8_t)v->dtype;
    op->row = GR__FOP_SCATTER;
    op->arg[0] = fz->ref[v->id];
    op->arg[1] = ci;
    op->arg[2] = c->n_views++;
    op->out = -1;
    if (fz->vflag[y->id] & GR__FV_OUT) {
        c->out = fz->ref[y->id] - gs->n_ext - gs->n_imm;
        for (k = c->op0; k < gs->op_i; k++)
            if (gs->p->ops[k].row == GR__FOP_SCATTER && gs->p->ops[k].arg[1] == ci) gs->p->ops[k].out = fz->ref[y->id];
    } else
        fz->ref[y->id] = -16 - ci;                   /* read by the second increment alone */
    return gr__fgroup_free_inputs(fz, gs, node, q);
}

/* member node's instruction, with registers reused after their last reader: the result's register
   first, then the registers whose last reader this is (an op never writes over its own operands: a
   cast between element sizes could not) */
static gr_status gr__fgroup_emit(gr__fuser *fz, gr__fgroup *gs, gr_node *node) {
    gr_var *y = gr__out(node)[0], *x0 = gr__fuse_input(fz, node, 0);
    uint32_t q = (uint32_t)fz->pos[node->id];
    int row = (gr__flags_of(node->op) & GR__OPF_ELEMWISE) ? gr__code_of(node->op) : -1, i;
    const gr__ew_pair *pair = row >= 0 ? gr__ew_pair_first(row) : NULL;
    uint32_t second = fz->second_of[x0->id];
    gr__fop *op;
    if (fz->scat[node->id] == GR__FS_FILL) return GR_OK;   /* zeros: made by the increments */
    if (row >= 0 && gr__ew_pair_second(row)) {
        if (fz->paired[node->id]) return gr__fgroup_free_inputs(fz, gs, node, q);   /* computed with its first */
        if (second == node->id + 1) fz->second_of[x0->id] = 0;                    /* computed here: a later first stays alone */
    }
    if ((gr__flags_of(node->op) & GR__OPF_FILL) && !(fz->vflag[y->id] & GR__FV_OUT) && fz->ref[y->id] < 0) {
        /* a fill read only inside the group: its readers read the source itself, with the source's
           (broadcast) stride; the source stays live as long as they read it */
        fz->ref[y->id] = fz->ref[x0->id];
        fz->vflag[y->id] |= GR__FV_ALIASED;          /* its register is x0's, freed through x0 */
        if ((fz->vflag[x0->id] & GR__FV_MINE) && fz->last[y->id] > fz->last[x0->id]) fz->last[x0->id] = fz->last[y->id];
        return GR_OK;
    }
    if (row == GR__EW_add && gr__fgroup_muladd(fz, gs, node, q)) return gr__fgroup_free_inputs(fz, gs, node, q);
    op = &gs->p->ops[gs->op_i++];
    op->out2 = -1;
    if (fz->scat[node->id]) return gr__fgroup_scatter(fz, gs, node, op, q);
    if (gr__flags_of(node->op) & GR__OPF_FOLD) {     /* a sum of x0, into its output */
        op->n_args = 1;
        op->dtype = op->odtype = (uint8_t)x0->dtype;
        op->row = GR__FOP_SUM;
        op->arg[0] = fz->ref[x0->id];
        op->arg[1] = gs->n_sums++;
        gr__fgroup_reg(fz, gs, y);
        op->out = fz->ref[y->id];
        return gr__fgroup_free_inputs(fz, gs, node, q);
    }
    if (pair && second && second != node->id + 1) {  /* first(x0) and second(x0) in one instruction */
        gr_node *c = gr__fuse_node(fz->rw, fz->cg, second - 1);
        gr_var *yc = gr__out(c)[0];
        fz->paired[c->id] = 1;
        op->n_args = 1;
        op->dtype = op->odtype = (uint8_t)y->dtype;
        op->row = GR__FOP_PAIR;
        op->arg[0] = fz->ref[x0->id];
        op->arg[1] = (int32_t)(pair - gr__ew_pairs);
        gr__fgroup_reg(fz, gs, y);
        gr__fgroup_reg(fz, gs, yc);
        op->out = fz->ref[y->id];
        op->out2 = fz->ref[yc->id];
        return gr__fgroup_free_inputs(fz, gs, node, q);
    }
    if (row >= 0) {
        op->n_args = (uint8_t)node->n_in;
        op->dtype = (uint8_t)gr__fuse_input(fz, node, node->n_in - 1)->dtype;
        op->row = (uint8_t)row;
    } else {                                         /* a copy: a cast, or a fill */
        op->n_args = 1;
        op->dtype = (uint8_t)x0->dtype;
        op->row = (uint8_t)(GR__FOP_COPY + gr__code_of(node->op));
    }
    op->odtype = (uint8_t)y->dtype;
    for (i = 0; i < op->n_args; i++) op->arg[i] = fz->ref[gr__fuse_input(fz, node, i)->id];
    gr__fgroup_reg(fz, gs, y);
    op->out = fz->ref[y->id];
    return gr__fgroup_free_inputs(fz, gs, node, q);
}

/* the scratch a call uses: registers, and per reference its pointer and stride */
static gr_status gr__fgroup_scratch(gr__fuser *fz, gr__fgroup *gs) {
    gr__fprog *p = gs->p;
    size_t at[8], size[8];
    unsigned char *b;
    int32_t n_ext = gs->n_ext, n_imm = gs->n_imm, n_out = gs->n_out, n_reg = gs->n_reg, i, k;
    p->n_ops = gs->op_i;
    p->n_sums = gs->n_sums;
    p->n_reg = n_reg;
    p->n_refs = n_ext + n_imm + n_out + n_reg;
    size[0] = (size_t)(n_reg + 1) * (size_t)p->blk * 8u;
    size[1] = sizeof(void *) * (size_t)p->n_refs;
    size[2] = sizeof(int64_t) * (size_t)p->n_refs;
    size[3] = sizeof(int64_t) * (size_t)(n_ext + 1) * GR_MAX_NDIM;
    size[4] = sizeof(int64_t) * (size_t)(n_ext + 1);
    size[5] = sizeof(double) * (size_t)p->n_refs;
    size[6] = sizeof(gr__fsum) * (size_t)(gs->n_sums + 1);
    size[7] = sizeof(gr__fscat) * (size_t)(gs->n_scat + 1);
    b = (unsigned char *)gr__fprog_block(fz->cg, 8, size, at);
    if (!b) return GR_ERR_NOMEM;
    p->regs = b;
    p->ptr = (const void **)(b + at[1]);
    p->st = (int64_t *)(b + at[2]);
    p->ext_st = (int64_t *)(b + at[3]);
    p->ext_off = (int64_t *)(b + at[4]);
    p->val = (double *)(b + at[5]);
    p->sums = (gr__fsum *)(b + at[6]);
    p->scat = (gr__fscat *)(b + at[7]);
    p->n_scat = gs->n_scat;
    if (gs->n_scat) memcpy(p->scat, gs->scat, sizeof(gr__fscat) * (size_t)gs->n_scat);
    memset(p->val, 0, size[5]);
    for (i = 0; i < n_imm; i++) { p->ptr[n_ext + i] = &p->imm[i]; p->st[n_ext + i] = 0; memcpy(&p->val[n_ext + i], &p->imm[i], sizeof(double)); }
    p->f64 = 1;
    for (k = 0; k < p->n_ops; k++) {                /* an operand an instruction does not have reads arg[0] */
        if (p->ops[k].row == GR__FOP_SUM) p->sums[p->ops[k].arg[1]].out = p->ops[k].out - n_ext - n_imm;
        if (p->ops[k].row != GR__FOP_PAIR && p->ops[k].row != GR__FOP_SUM && p->ops[k].row != GR__FOP_SCATTER)
            for (i = p->ops[k].n_args; i < 3; i++) p->ops[k].arg[i] = p->ops[k].arg[0];
        if (!gr__fop_f64(p, &p->ops[k])) p->f64 = 0;
    }
    for (i = 0; i < n_out; i++) p->st[n_ext + n_imm + i] = 1;
    for (i = 0; i < n_reg; i++) {
        p->ptr[n_ext + n_imm + n_out + i] = p->regs + (size_t)i * (size_t)p->blk * 8u;
        p->st[n_ext + n_imm + n_out + i] = 1;
    }
    return GR_OK;
}

/* the group as one Fused node; readers outside the group, and the roots, will read its outputs */
static gr_status gr__fgroup_node(gr__fuser *fz, gr__fgroup *gs) {
    gr__fused_params fp;
    gr_status st;
    int i;
    fp.prog = gs->p;
    st = gr__make_node_n(fz->cg, &gr__op_Fused, &fp, sizeof fp, gs->n_ext, gs->ext, gs->n_out, gs->outs_new);
    if (st != GR_OK) return st;
    for (i = 0; i < gs->n_out; i++)
        if (gr__vname(gs->outs_old[i]) && !gr__set_name(fz->cg, gs->outs_new[i], gr__vname(gs->outs_old[i]))) return fz->cg->status;
    for (i = 0; i < gs->n_out; i++) fz->repl[gs->outs_old[i]->id] = gs->outs_new[i]->id + 1;
    fz->n_fused++;
    return GR_OK;
}

/* group g of two members or more as one Fused node */
static gr_status gr__fuse_one(gr__fuser *fz, int32_t g) {
    gr__fgroup gs;
    gr_status st;
    int32_t mi;
    memset(&gs, 0, sizeof gs);
    gs.mem = fz->gmem + fz->gmem_at[g];
    gs.n_members = fz->gmem_at[g + 1] - fz->gmem_at[g];
    st = gr__fgroup_operands(fz, &gs);
    if (st == GR_OK) st = gr__fgroup_program(fz, &gs);
    for (mi = 0; st == GR_OK && mi < gs.n_members; mi++) st = gr__fgroup_emit(fz, &gs, gr__fuse_node(fz->rw, fz->cg, gs.mem[mi]));
    if (st == GR_OK) st = gr__fgroup_scratch(fz, &gs);
    if (st == GR_OK) st = gr__fgroup_node(fz, &gs);
    for (mi = 0; mi < gs.n_members && g < fz->last_big; mi++) {   /* reset the references for the next group */
        gr_node *node = gr__fuse_node(fz->rw, fz->cg, gs.mem[mi]);
        int i;
        for (i = 0; i < node->n_in; i++) { fz->ref[gr__fuse_input(fz, node, i)->id] = -1; fz->second_of[gr__fuse_input(fz, node, i)->id] = 0; }
        fz->ref[gr__out(node)[0]->id] = -1;
        fz->vflag[gr__out(node)[0]->id] &= (uint8_t)~GR__FV_MINE;
    }
    GR_FREE(gs.ext); GR_FREE(gs.outs_old); GR_FREE(gs.outs_new); GR_FREE(gs.free_regs); GR_FREE(gs.scat);
    if (st != GR_OK && fz->cg->status == GR_OK) gr__error(fz->cg, st, "out of memory (fusion)");
    return st;
}

/* ---- fusion ---------------------------------------------------------------------------------------- */

/* Fuses the elementwise nodes of the schedule of roots (the function's outputs and update
   values, patched when they are group outputs) in cg. */
static gr_status gr__fuse(gr__rewriter *rw, gr_graph *cg, int n_roots, gr_var **roots, const uint8_t *given) {
    gr__fuser fz;
    uint32_t *order = NULL, k;           /* the needed nodes' positions in rw->view */
    int32_t g;
    gr_status st;
    memset(&fz, 0, sizeof fz);
    fz.rw = rw;
    fz.cg = cg;
    fz.nn = cg->node_base + cg->n_nodes;
    fz.nv = cg->var_base + cg->n_vars;
    fz.last_big = -1;
    if ((st = gr__fuse_needed(rw, n_roots, roots, given, fz.nn, &order, &fz.n_order)) != GR_OK) return st;
    fz.group = (int32_t *)GR_MALLOC(sizeof(int32_t) * (fz.nn + 1u));
    fz.pos = (int32_t *)GR_MALLOC(sizeof(int32_t) * (fz.nn + 1u));
    if (!fz.group || !fz.pos) { GR_FREE(order); st = gr__fuse_nomem(&fz); goto done; }
    if ((st = gr__fuse_schedule(&fz, order)) != GR_OK) goto done;
    if ((st = gr__fuse_regions(&fz, n_roots, roots)) != GR_OK) goto done;
    /* (the Fused nodes' outputs, made below, are at most one per scheduled node) */
    fz.vflag = (uint8_t *)gr__calloc(fz.nv + fz.n_order + 1u, 1);
    fz.last = (uint32_t *)gr__calloc(fz.nv + 1u, sizeof(uint32_t));
    fz.nread = (uint8_t *)gr__calloc(fz.nv + 1u, 1);
    fz.scat = (uint8_t *)gr__calloc(fz.nn + 1u, 1);
    if (!fz.vflag || !fz.last || !fz.nread || !fz.scat) { st = gr__fuse_nomem(&fz); goto done; }
    for (k = 0; k < fz.n_order; k++) {
        const gr_node *node = gr__fuse_node(rw, cg, fz.oid[k]);
        int i;
        for (i = 0; i < node->n_in; i++) if (fz.nread[gr__in(node)[i]->id] < 2) fz.nread[gr__in(node)[i]->id]++;
    }
    for (k = 0; k < (uint32_t)n_roots; k++) if (fz.nread[roots[k]->id] < 2) fz.nread[roots[k]->id]++;
    if ((st = gr__fuse_group(&fz)) != GR_OK) goto done;
    gr__progress(rw->g, "fuse", 0, (size_t)fz.n_groups);      /* (counted in groups) */
    if (fz.n_groups == 0) goto done;
    if ((st = gr__fuse_members(&fz)) != GR_OK) goto done;
    /* 2. the values the roots read leave their groups too */
    fz.ref = (int32_t *)GR_MALLOC(sizeof(int32_t) * (fz.nv + fz.n_order + 1u));
    fz.second_of = (uint32_t *)gr__calloc(fz.nv + fz.n_order + 1u, sizeof(uint32_t));
    fz.paired = (uint8_t *)gr__calloc(fz.nn + 1u, 1);
    if (!fz.ref || !fz.second_of || !fz.paired) { st = gr__fuse_nomem(&fz); goto done; }
    for (k = 0; k < fz.nv + fz.n_order + 1u; k++) fz.ref[k] = -1;
    for (g = 0; g < fz.n_groups; g++) if (fz.gmem_at[g + 1] - fz.gmem_at[g] >= 2) fz.last_big = g;
    for (k = 0; k < (uint32_t)n_roots; k++) fz.vflag[roots[k]->id] |= GR__FV_OUT;
    /* 3. one Fused node per group of two or more */
    for (g = 0; g < fz.n_groups; g++) {
        if (fz.gmem_at[g + 1] - fz.gmem_at[g] >= 2 && (st = gr__fuse_one(&fz, g)) != GR_OK) goto done;
        gr__progress(rw->g, "fuse", (size_t)g + 1u, (size_t)fz.n_groups);
    }
    /* the roots read the Fused outputs; so do the nodes left alone, through rw->repl (no node is
       written: some are the source graph's) */
    for (k = 0; k < (uint32_t)n_roots; k++) roots[k] = gr__fuse_in(cg, fz.repl, fz.nv, roots[k]);
    rw->repl = fz.repl;
    rw->n_repl = fz.nv;
    fz.repl = NULL;
done:
    GR_FREE(fz.gmem_at); GR_FREE(fz.gmem); GR_FREE(fz.repl); GR_FREE(fz.oid);
    GR_FREE(fz.group); GR_FREE(fz.pos); GR_FREE(fz.gstart); GR_FREE(fz.vflag); GR_FREE(fz.ref); GR_FREE(fz.last);
    GR_FREE(fz.second_of); GR_FREE(fz.paired); GR_FREE(fz.reg); GR_FREE(fz.nread); GR_FREE(fz.scat);
    return st;
}
