/* ops/elemwise.c: the elementwise family, expanded from GR_ELEMWISE_OPS, and Cast.

   Shapes: NumPy broadcasting, right-aligned; a static 1 is broadcastable, -1 unknown until the call.
   Every input of an elementwise node has the node's compute dtype T (the builder inserts casts and
   types weak constants), so a kernel is one loop over one element type. */

/* ---- scalar helpers used by the table's expressions ---------------------------------------- */

/* GR_KERNEL gr__sign */
static double gr__sign(double a) { return a > 0 ? 1.0 : a < 0 ? -1.0 : a; }
/* GR_KERNEL gr__signf */
static float gr__signf(float a) { return a > 0 ? 1.0f : a < 0 ? -1.0f : a; }
/* GR_KERNEL gr__mod */
static double gr__mod(double a, double b) {
    double r = fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
/* GR_KERNEL gr__modf */
static float gr__modf(float a, float b) {
    float r = fmodf(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
/* GR_KERNEL gr__imod */
static int64_t gr__imod(int64_t a, int64_t b) {
    int64_t r;
    if (b == 0) return 0;
    if (b == -1) return 0;                          /* INT64_MIN % -1 overflows */
    r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
/* GR_KERNEL gr__ipow */
static int64_t gr__ipow(int64_t a, int64_t b) {   /* wraps on overflow like NumPy; b < 0 gives 0 unless |a| = 1 */
    uint64_t result = 1, base = (uint64_t)a;
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    while (b) {
        if (b & 1) result *= base;
        base *= base;
        b >>= 1;
    }
    return (int64_t)result;
}
/* GR_KERNEL gr__max */
static double gr__max(double a, double b) { return (a != a || a > b) ? a : b; }   /* NaN propagates */
/* GR_KERNEL gr__maxf */
static float gr__maxf(float a, float b) { return (a != a || a > b) ? a : b; }
/* GR_KERNEL gr__min */
static double gr__min(double a, double b) { return (a != a || a < b) ? a : b; }
/* GR_KERNEL gr__minf */
static float gr__minf(float a, float b) { return (a != a || a < b) ? a : b; }
/* GR_KERNEL gr__clip */
static double gr__clip(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }
/* GR_KERNEL gr__clipf */
static float gr__clipf(float x, float lo, float hi) { return x < lo ? lo : x > hi ? hi : x; }
/* GR_KERNEL_END */

/* integer results computed in uint64_t wrap around instead of overflowing (undefined in int64_t) */
#define GR__WRAP(e) ((GR_T)(e))

/* ---- kernels: one per row and dtype --------------------------------------------------------
   k(n, out, in, st): out[i] = f(in[0][i*st[0]], ...) for i < n, each st[k] 0 or 1; out may be
   in[k] itself (in place) when st[k] is 1. */
typedef void (*gr__ew_kernel)(int64_t n, void *out, const void *const *in, const int64_t *st);

#define GR__EWK_1(fn, TI, TO, expr) \
    static GR__UNUSED void fn(int64_t n, void *out_, const void *const *in, const int64_t *st) { \
        TO *o = (TO *)out_; const TI *pa = (const TI *)in[0]; int64_t i; \
        if (st[0] == 1) { for (i = 0; i < n; i++) { TI a = pa[i]; o[i] = (TO)(expr); } } \
        else { TI a = pa[0]; TO r = (TO)(expr); for (i = 0; i < n; i++) o[i] = r; } \
    }
#define GR__EWK_2(fn, TI, TO, expr) \
    static GR__UNUSED void fn(int64_t n, void *out_, const void *const *in, const int64_t *st) { \
        TO *o = (TO *)out_; const TI *pa = (const TI *)in[0], *pb = (const TI *)in[1]; int64_t i; \
        if (st[0] == 1 && st[1] == 1) { for (i = 0; i < n; i++) { TI a = pa[i], b = pb[i]; o[i] = (TO)(expr); } } \
        else if (st[0] == 0 && st[1] == 1) { TI a = pa[0]; for (i = 0; i < n; i++) { TI b = pb[i]; o[i] = (TO)(expr); } } \
        else if (st[0] == 1) { TI b = pb[0]; for (i = 0; i < n; i++) { TI a = pa[i]; o[i] = (TO)(expr); } } \
        else { TI a = pa[0], b = pb[0]; TO r = (TO)(expr); for (i = 0; i < n; i++) o[i] = r; } \
    }
#define GR__EWK_3(fn, TI, TO, expr) \
    static GR__UNUSED void fn(int64_t n, void *out_, const void *const *in, const int64_t *st) { \
        TO *o = (TO *)out_; const TI *pa = (const TI *)in[0], *pb = (const TI *)in[1], *pc = (const TI *)in[2]; \
        int64_t i, sa = st[0], sb = st[1], sc = st[2]; \
        if (sa == 1 && sb == 1 && sc == 1) { for (i = 0; i < n; i++) { TI a = pa[i], b = pb[i], c = pc[i]; o[i] = (TO)(expr); } } \
        else { for (i = 0; i < n; i++) { TI a = pa[i * sa], b = pb[i * sb], c = pc[i * sc]; o[i] = (TO)(expr); } } \
    }

/* which classes compute in which dtypes, and what they return */
#define GR__IF_FLT_FLOAT(...)  __VA_ARGS__
#define GR__IF_FLT_ARITH(...)  __VA_ARGS__
#define GR__IF_FLT_STEP(...)   __VA_ARGS__
#define GR__IF_FLT_CMP(...)    __VA_ARGS__
#define GR__IF_FLT_SELECT(...) __VA_ARGS__
#define GR__IF_FLT_LOGIC(...)
#define GR__IF_INT_FLOAT(...)
#define GR__IF_INT_ARITH(...)  __VA_ARGS__
#define GR__IF_INT_STEP(...)   __VA_ARGS__
#define GR__IF_INT_CMP(...)    __VA_ARGS__
#define GR__IF_INT_SELECT(...) __VA_ARGS__
#define GR__IF_INT_LOGIC(...)
#define GR__IF_B8_FLOAT(...)
#define GR__IF_B8_ARITH(...)
#define GR__IF_B8_STEP(...)
#define GR__IF_B8_CMP(...)
#define GR__IF_B8_SELECT(...)
#define GR__IF_B8_LOGIC(...)   __VA_ARGS__
#define GR__TO_FLOAT(T)  T
#define GR__TO_ARITH(T)  T
#define GR__TO_STEP(T)   T
#define GR__TO_SELECT(T) T
#define GR__TO_CMP(T)    uint8_t
#define GR__TO_LOGIC(T)  uint8_t

#define GR_T double
#define GR_M(f) f
#define GR__K64(name, arity, cls, fexpr, iexpr, d0, d1, d2) \
    GR__IF_FLT_##cls(GR__EWK_##arity(gr__ewk_##name##_f64, double, GR__TO_##cls(double), fexpr))
GR_ELEMWISE_OPS(GR__K64)
#undef GR__K64
#undef GR_T
#undef GR_M

#define GR_T float
#define GR_M(fn) fn##f
#define GR__K32(name, arity, cls, fexpr, iexpr, d0, d1, d2) \
    GR__IF_FLT_##cls(GR__EWK_##arity(gr__ewk_##name##_f32, float, GR__TO_##cls(float), fexpr))
GR_ELEMWISE_OPS(GR__K32)
#undef GR__K32
#undef GR_T
#undef GR_M

#define GR_T int64_t
#define GR_M(f) f
#define GR__KI64(name, arity, cls, fexpr, iexpr, d0, d1, d2) \
    GR__IF_INT_##cls(GR__EWK_##arity(gr__ewk_##name##_i64, int64_t, GR__TO_##cls(int64_t), iexpr))
GR_ELEMWISE_OPS(GR__KI64)
#undef GR__KI64
#undef GR_T

#define GR_T uint8_t
#define GR__KB8(name, arity, cls, fexpr, iexpr, d0, d1, d2) \
    GR__IF_B8_##cls(GR__EWK_##arity(gr__ewk_##name##_b8, uint8_t, uint8_t, iexpr))
GR_ELEMWISE_OPS(GR__KB8)
#undef GR__KB8
#undef GR_T
#undef GR_M

#define GR__VM_PICK_1(n, s)     gr__vmk_##n##_##s      /* ops/vmath.c's kernel (GR__VM_HAS) */
#define GR__VM_PICK_0(n, s)     gr__ewk_##n##_##s
#define GR__KP_FLT_FLOAT(n, s)  GR__EW_XCAT(GR__VM_PICK_, GR__VM_HAS(n))(n, s)
#define GR__KP_FLT_ARITH(n, s)  GR__EW_XCAT(GR__VM_PICK_, GR__VM_HAS(n))(n, s)   /* (pow) */
#define GR__KP_FLT_STEP(n, s)   gr__ewk_##n##_##s
#define GR__KP_FLT_CMP(n, s)    gr__ewk_##n##_##s
#define GR__KP_FLT_SELECT(n, s) gr__ewk_##n##_##s
#define GR__KP_FLT_LOGIC(n, s)  NULL
#define GR__KP_INT_FLOAT(n)     NULL
#define GR__KP_INT_ARITH(n)     gr__ewk_##n##_i64
#define GR__KP_INT_STEP(n)      gr__ewk_##n##_i64
#define GR__KP_INT_CMP(n)       gr__ewk_##n##_i64
#define GR__KP_INT_SELECT(n)    gr__ewk_##n##_i64
#define GR__KP_INT_LOGIC(n)     NULL
#define GR__KP_B8_LOGIC(n)      gr__ewk_##n##_b8
#define GR__KP_B8_FLOAT(n)      NULL
#define GR__KP_B8_ARITH(n)      NULL
#define GR__KP_B8_STEP(n)       NULL
#define GR__KP_B8_CMP(n)        NULL
#define GR__KP_B8_SELECT(n)     NULL

/* GR_ELEMWISE_ONLY (ops/table.h, op families): only the rows named by GR_EW_<row> get kernels.
   GR__EW_KEPT(name) is 1 when GR_EW_<name> is defined empty or as 1 (it pastes GR__EW_PROBE_ to
   the definition: a probe of two tokens moves the 1 into second place), else 0 */
#ifdef GR_ELEMWISE_ONLY
#define GR__EW_PROBE_ ~, 1
#define GR__EW_PROBE_1 ~, 1
#define GR__EW_2ND(a, b, ...) b
#define GR__EW_2ND_(...) GR__EW_2ND(__VA_ARGS__)
#define GR__EW_KEPT(name) GR__EW_KEPT1(GR_EW_##name)
#define GR__EW_KEPT1(v) GR__EW_KEPT2(v)                    /* v: GR_EW_<name>'s definition */
#define GR__EW_KEPT2(v) GR__EW_2ND_(GR__EW_PROBE_##v, 0, ~)
#else
#define GR__EW_KEPT(name) 1
#endif
#define GR__EW_CAT(a, b) a##b
#define GR__EW_XCAT(a, b) GR__EW_CAT(a, b)
#define GR__EW_WHEN_1(...) __VA_ARGS__
#define GR__EW_WHEN_0(...)
#define GR__EW_WHEN(c) GR__EW_XCAT(GR__EW_WHEN_, c)       /* GR__EW_WHEN(c)(x): x when c is 1 */
#define GR__EW_PICK_1(k) k
#define GR__EW_PICK_0(k) NULL
#define GR__EW_K(name, k) GR__EW_XCAT(GR__EW_PICK_, GR__EW_KEPT(name))(k)

/* indexed by [row][dtype] (GR_F64, GR_F32, GR_I64, GR_BOOL): the kernel, NULL where never used */
static const gr__ew_kernel gr__ew_kernels[GR__EW_COUNT][4] = {
#define GR__KROW(name, arity, cls, fexpr, iexpr, d0, d1, d2) \
    { GR__EW_K(name, GR__KP_FLT_##cls(name, f64)), GR__EW_K(name, GR__KP_FLT_##cls(name, f32)), \
      GR__EW_K(name, GR__KP_INT_##cls(name)), GR__EW_K(name, GR__KP_B8_##cls(name)) },
    GR_ELEMWISE_OPS(GR__KROW)
#undef GR__KROW
};

/* ---- scalar functions: a row's float64 value of one set of operands -----------------------------
   gr__ew_scalar_f64[row](a, b, c) is what the row's float64 kernel stores for one element: its
   float_expr (for ops/vmath.c's rows gr__m_<f>, which every lane of their vector kernels equals).
   The straight-line program of a fused scalar group calls it (src/fuse.c); NULL for the rows whose
   float64 result is not a float64 (CMP, LOGIC) or whose condition is not one (SELECT). */
typedef double (*gr__ew_scalar)(double a, double b, double c);
#define GR_T double
#define GR_M(f) f
#define GR__EWS_DEF(name, fexpr) \
    static GR__UNUSED double gr__ews_##name(double a, double b, double c) { (void)a; (void)b; (void)c; return (double)(fexpr); }
#define GR__EWS_FLOAT(name, fexpr)  GR__EWS_DEF(name, fexpr)
#define GR__EWS_ARITH(name, fexpr)  GR__EWS_DEF(name, fexpr)
#define GR__EWS_STEP(name, fexpr)   GR__EWS_DEF(name, fexpr)
#define GR__EWS_CMP(name, fexpr)
#define GR__EWS_LOGIC(name, fexpr)
#define GR__EWS_SELECT(name, fexpr)
#define GR__EWS(name, arity, cls, fexpr, iexpr, d0, d1, d2) GR__EWS_##cls(name, fexpr)
GR_ELEMWISE_OPS(GR__EWS)
#undef GR__EWS
#undef GR_T
#undef GR_M
#define GR__SP_FLOAT(n)  gr__ews_##n
#define GR__SP_ARITH(n)  gr__ews_##n
#define GR__SP_STEP(n)   gr__ews_##n
#define GR__SP_CMP(n)    NULL
#define GR__SP_LOGIC(n)  NULL
#define GR__SP_SELECT(n) NULL
static const gr__ew_scalar gr__ew_scalar_f64[GR__EW_COUNT] = {
#define GR__SROW(name, arity, cls, fexpr, iexpr, d0, d1, d2) GR__EW_K(name, GR__SP_##cls(name)),
    GR_ELEMWISE_OPS(GR__SROW)
#undef GR__SROW
};

enum gr__ew_class { GR__EC_FLOAT, GR__EC_ARITH, GR__EC_STEP, GR__EC_CMP, GR__EC_LOGIC, GR__EC_SELECT };
static const unsigned char gr__ew_class[GR__EW_COUNT] = {
#define GR__CROW(name, arity, cls, fexpr, iexpr, d0, d1, d2) GR__EC_##cls,
    GR_ELEMWISE_OPS(GR__CROW)
#undef GR__CROW
};

/* ---- broadcasting loops --------------------------------------------------------------------- */

/* A broadcast loop over an output of `nd` axes: per operand (0: the output, 1..: inputs) the byte
   stride of each axis (0 where broadcast), with axes of size 1 dropped and mergeable axes merged,
   so the innermost axis has element stride 0 or 1 for every operand. */
typedef struct gr__bloop {
    int nd, nops;
    int64_t shape[GR_MAX_NDIM];
    int64_t st[4][GR_MAX_NDIM];          /* byte strides */
    size_t esize[4];
} gr__bloop;

static void gr__bloop_init(gr__bloop *L, const gr_array *out, int n_in, const gr_array *const *in) {
    int64_t full[4][GR_MAX_NDIM];
    int nd = out->ndim, k, i, m = 0;
    L->nops = n_in + 1;
    for (k = 0; k < L->nops; k++) {
        const gr_array *a = k == 0 ? out : in[k - 1];
        int off = nd - a->ndim;
        int64_t s = (int64_t)gr__dsize(a->dtype);
        L->esize[k] = gr__dsize(a->dtype);
        for (i = nd - 1; i >= 0; i--) {
            int64_t len = i >= off ? a->shape[i - off] : 1;
            full[k][i] = len == 1 ? 0 : s;
            s *= len;
        }
    }
    for (i = 0; i < nd; i++) {
        if (out->shape[i] == 1) continue;
        if (m > 0) {                         /* merge with the previous kept axis when contiguous */
            int ok = 1;
            for (k = 0; k < L->nops; k++)
                if (L->st[k][m - 1] != full[k][i] * out->shape[i]) { ok = 0; break; }
            if (ok) {
                L->shape[m - 1] *= out->shape[i];
                for (k = 0; k < L->nops; k++) L->st[k][m - 1] = full[k][i];
                continue;
            }
        }
        L->shape[m] = out->shape[i];
        for (k = 0; k < L->nops; k++) L->st[k][m] = full[k][i];
        m++;
    }
    L->nd = m;
}

/* calls k over the whole output in runs of the innermost axis */
static void gr__ew_run(gr__ew_kernel k, const gr_array *out, int n_in, const gr_array *const *in) {
    gr__bloop L;
    int64_t idx[GR_MAX_NDIM], inner_st[3], n, count, r;
    const void *ptrs[3];
    char *base[4];
    int j, i;
    if (out->size == 0) return;
    gr__bloop_init(&L, out, n_in, in);
    base[0] = (char *)out->data;
    for (j = 0; j < n_in; j++) base[j + 1] = (char *)in[j]->data;
    if (L.nd == 0) {                         /* a single element */
        for (j = 0; j < n_in; j++) { ptrs[j] = base[j + 1]; inner_st[j] = 0; }
        k(1, base[0], ptrs, inner_st);
        return;
    }
    n = L.shape[L.nd - 1];
    for (j = 0; j < n_in; j++) inner_st[j] = L.st[j + 1][L.nd - 1] ? 1 : 0;
    count = out->size / n;
    for (i = 0; i < L.nd; i++) idx[i] = 0;
    for (r = 0; r < count; r++) {
        int64_t off[4] = { 0, 0, 0, 0 };
        for (i = 0; i < L.nd - 1; i++)
            for (j = 0; j < L.nops; j++) off[j] += idx[i] * L.st[j][i];
        for (j = 0; j < n_in; j++) ptrs[j] = base[j + 1] + off[j + 1];
        k(n, base[0] + off[0], ptrs, inner_st);
        for (i = L.nd - 2; i >= 0; i--) {    /* odometer over the outer axes */
            if (++idx[i] < L.shape[i]) break;
            idx[i] = 0;
        }
    }
}

/* ---- type and shape rules -------------------------------------------------------------------- */

/* static broadcast of n variables; returns -1 on success, else the index of the operand that
   conflicts with the ones before it */
static int gr__broadcast_static(int n, gr_var *const *xs, gr_type *out) {
    int nd = 0, i, k;
    for (k = 0; k < n; k++) if (xs[k]->ndim > nd) nd = xs[k]->ndim;
    out->ndim = nd;
    for (i = 0; i < nd; i++) out->shape[i] = 1;
    for (k = 0; k < n; k++) {
        int off = nd - xs[k]->ndim;
        for (i = 0; i < xs[k]->ndim; i++) {
            int64_t a = out->shape[off + i], b = gr__vshape(xs[k])[i];
            int64_t r;
            if (a == 1) r = b;
            else if (b == 1) r = a;
            else if (a == -1) r = b;
            else if (b == -1) r = a;
            else if (a == b) r = a;
            else return k;
            out->shape[off + i] = r;
        }
    }
    return -1;
}

/* "(3) of 'a' and (4) of 'b'": operands 0..bad, for the error of shapes that do not broadcast */
static void gr__broadcast_desc(char *buf, size_t size, int bad, gr_var *const *xs) {
    size_t used = 0;
    int k;
    buf[0] = 0;
    for (k = 0; k <= bad; k++)
        used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%s of %s", k ? " and " : "", gr__vs(xs[k]).s,
                                 gr__d(xs[k]).s);
}

static gr_status gr__ew_infer(const gr_node *node, gr_type *out) {
    int cls = gr__ew_class[gr__code_of(node->op)];
    int bad = gr__broadcast_static(node->n_in, gr__in(node), out);
    if (bad >= 0) {
        char buf[GR__MSG];
        gr__broadcast_desc(buf, sizeof buf, bad, gr__in(node));
        return gr__error(node->graph, GR_ERR_SHAPE, "gr_%s: shapes do not broadcast: %s", node->op->name, buf);
    }
    out->dtype = (cls == GR__EC_CMP || cls == GR__EC_LOGIC) ? GR_BOOL : (gr_dtype)gr__in(node)[node->n_in - 1]->dtype;
    return GR_OK;
}

/* runtime broadcast of the inputs' shapes into out */
static gr_status gr__broadcast_shapes(const gr_node *node, int n, const gr_array *const *in, gr_array *out) {
    int nd = out->ndim, i, k;
    for (i = 0; i < nd; i++) out->shape[i] = 1;
    for (k = 0; k < n; k++) {
        int off = nd - in[k]->ndim;
        for (i = 0; i < in[k]->ndim; i++) {
            int64_t a = out->shape[off + i], b = in[k]->shape[i];
            if (a == 1) out->shape[off + i] = b;
            else if (b != 1 && b != a) {
                char s1[200], s2[200];
                int j;
                gr_array tmp = *out;
                for (j = 0; j < off; j++) tmp.shape[j] = 1;
                return gr_node_error(node, GR_ERR_SHAPE, "shapes do not broadcast: %s of %s against %s so far",
                                     gr__shape_str(s1, sizeof s1, in[k]->ndim, in[k]->shape), gr__d(gr__in(node)[k]).s,
                                     gr__shape_str(s2, sizeof s2, nd, tmp.shape));
            }
        }
    }
    return GR_OK;
}

static gr_status gr__ew_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    return gr__broadcast_shapes(node, node->n_in, in, out[0]);
}

static gr_status gr__ew_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    gr__ew_kernel k = gr__ew_kernels[gr__code_of(node->op)][in[node->n_in - 1]->dtype];
#ifdef GR_ELEMWISE_ONLY
    if (!k && !gr__ew_kernels[gr__code_of(node->op)][0] && !gr__ew_kernels[gr__code_of(node->op)][2] && !gr__ew_kernels[gr__code_of(node->op)][3])
        return gr_node_error(node, GR_ERR_VALUE, "gradient.h was built without the kernels of %s (GR_ELEMWISE_ONLY: define GR_EW_%s)",
                             node->op->name, node->op->name);
#endif
    if (!k) return gr_node_error(node, GR_ERR_TYPE, "no kernel for %s", gr_dtype_name(in[0]->dtype));
    gr__ew_run(k, out[0], node->n_in, in);
    return GR_OK;
}

/* ---- building: dtype promotion and weak constants ------------------------------------------- */

static int gr__is_weak(const gr_var *v) { return v->kind == GR__VK_CONST && (v->flags & GR__VF_WEAK); }
static double gr__weak_value(const gr_var *v) { return gr_array_get((const gr_array *)gr__ext(v), 0); }

/* the dtype n operands combine to: F32 stays F32 unless it meets F64 (float32 graphs stay float32),
   floats absorb integers, weak constants take the other side's float dtype */
static int gr__promote(int n, gr_var *const *xs) {
    int f64 = 0, f32 = 0, ints = 0, weak_frac = 0, k;
    for (k = 0; k < n; k++) {
        if (gr__is_weak(xs[k])) {
            double v = gr__weak_value(xs[k]);
            if (v != floor(v) || v != v) weak_frac = 1;
        } else if (xs[k]->dtype == GR_F64) f64 = 1;
        else if (xs[k]->dtype == GR_F32) f32 = 1;
        else ints = 1;
    }
    if (f64) return GR_F64;
    if (f32) return GR_F32;
    if (ints) return weak_frac ? GR_F64 : GR_I64;
    return GR_F64;                        /* weak constants alone */
}

GR_API gr_var *gr_cast(gr_var *x, gr_dtype dtype);

/* x as dtype T: a weak constant becomes a typed constant (in float64 it stays itself, so that it can
   be differentiated against), anything else of another dtype a Cast */
static gr_var *gr__coerce(gr_var *x, int T) {
    if (gr__is_weak(x) && T != GR_F64) return gr__scalar_const(x->graph, T, gr__weak_value(x), 0);
    if (x->dtype == T) return x;
    return gr_cast(x, (gr_dtype)T);
}

/* the builders' names, for messages */
static const char *const gr__ew_fnames[GR__EW_COUNT] = {
#define GR__FNAME_ROW(name, arity, cls, fexpr, iexpr, d0, d1, d2) "gr_" #name,
    GR_ELEMWISE_OPS(GR__FNAME_ROW)
#undef GR__FNAME_ROW
};

static gr_var *gr__ew(int row, gr_var *const *args) {
    const gr_op_def *op = gr__ew_ops[row];
    int n = op->n_in, cls = gr__ew_class[row], T, k;
    gr_var *xs[3];
    gr_graph *g;
    gr_type t;
    if (!gr__operands(gr__ew_fnames[row], n, args, &g)) return NULL;
    if ((k = gr__broadcast_static(n, args, &t)) >= 0) {     /* before any cast, to name the operands */
        char buf[GR__MSG];
        gr__broadcast_desc(buf, sizeof buf, k, args);
        return gr__fail(g, GR_ERR_SHAPE, "%s: shapes do not broadcast: %s", gr__ew_fnames[row], buf);
    }
    switch (cls) {
    case GR__EC_LOGIC: T = GR_BOOL; break;
    case GR__EC_SELECT: T = gr__promote(n - 1, args + 1); break;
    default: T = gr__promote(n, args);
    }
    if (cls == GR__EC_FLOAT && !gr__is_float(T)) T = GR_F64;
    if (T == GR_BOOL && cls != GR__EC_LOGIC) T = GR_I64;
    for (k = 0; k < n; k++) {
        xs[k] = gr__coerce(args[k], T);
        if (!xs[k]) return NULL;
    }
    return gr__node1(g, op, NULL, 0, n, xs);
}

#define GR__EW_FN_1(name) GR_API gr_var *gr_##name(gr_var *x) { gr_var *xs[1]; xs[0] = x; return gr__ew(GR__EW_##name, xs); }
#define GR__EW_FN_2(name) GR_API gr_var *gr_##name(gr_var *a, gr_var *b) { \
        gr_var *xs[2]; xs[0] = a; xs[1] = b; return gr__ew(GR__EW_##name, xs); }
#define GR__EW_FN_3(name) GR_API gr_var *gr_##name(gr_var *a, gr_var *b, gr_var *c) { \
        gr_var *xs[3]; xs[0] = a; xs[1] = b; xs[2] = c; return gr__ew(GR__EW_##name, xs); }
#define GR__EW_FN(name, arity, cls, fexpr, iexpr, d0, d1, d2) GR__EW_FN_##arity(name)
GR_ELEMWISE_OPS(GR__EW_FN)
#undef GR__EW_FN

/* ---- helpers for rules ------------------------------------------------------------------------ */

static gr_var *gr__cast_like(gr_var *x, gr_var *ref) { return x && ref ? gr_cast(x, (gr_dtype)ref->dtype) : NULL; }

/* the float dtype a gradient of x has: x's own if float, else F64 */
static int gr__grad_dtype(const gr_var *x) { return gr__is_float(x->dtype) ? (int)x->dtype : (int)GR_F64; }

static int gr__static_known(const gr_var *v) {
    int i;
    for (i = 0; i < v->ndim; i++) if (gr__vshape(v)[i] < 0) return 0;
    return 1;
}
static int gr__same_static(const gr_var *a, const gr_var *b) {
    int i;
    if (a->ndim != b->ndim || !gr__static_known(a) || !gr__static_known(b)) return 0;
    for (i = 0; i < a->ndim; i++) if (gr__vshape(a)[i] != gr__vshape(b)[i]) return 0;
    return 1;
}

/* a constant `value` of dtype dt with x's shape (x is used for its shape only) */
static gr_var *gr__fill_like(gr_var *x, int dt, double value) {
    gr_var *c;
    if (!x) return NULL;
    c = gr__scalar_const(x->graph, dt, value, 0);
    if (!c || x->ndim == 0) return c;
    return gr_broadcast_like(c, x);
}
/* float zeros shaped like x, of x's gradient dtype */
static gr_var *gr__zeros_grad(gr_var *x) { return x ? gr__fill_like(x, gr__grad_dtype(x), 0.0) : NULL; }

/* t summed down to x's shape (the gradient of a broadcast); free when the shapes already agree */
static gr_var *gr__sum_to(gr_var *t, gr_var *x) {
    if (!t) return NULL;
    if (gr__same_static(t, x)) return t;
    return gr_reduce_like(t, x);
}
/* t broadcast up to y's shape */
static gr_var *gr__spread_to(gr_var *t, gr_var *y) {
    if (!t) return NULL;
    if (gr__same_static(t, y)) return t;
    return gr_broadcast_like(t, y);
}

/* ---- derivative rules from the table's partials ------------------------------------------- */

enum { GR__PD_EXPR, GR__PD_ONE, GR__PD_NEG_ONE, GR__PD_ZERO };

/* the partial derivative of node's output with respect to input k, as a graph; *kind says when it
   is a known constant instead (then NULL is returned) */
static gr_var *gr__ew_partial(const gr_node *node, int k, int *kind) {
    gr_graph *gr__g = node->graph;
    gr_var *x0 = gr__in(node)[0];
    gr_var *x1 = node->n_in > 1 ? gr__in(node)[1] : NULL;
    gr_var *x2 = node->n_in > 2 ? gr__in(node)[2] : NULL;
    gr_var *y = gr__out(node)[0];
    (void)x1; (void)x2; (void)y; (void)gr__g;
    *kind = GR__PD_EXPR;
#define D(e) (e)
#define D_ONE (*kind = GR__PD_ONE, (gr_var *)NULL)
#define D_NEG_ONE (*kind = GR__PD_NEG_ONE, (gr_var *)NULL)
#define D_ZERO (*kind = GR__PD_ZERO, (gr_var *)NULL)
#define D_NONE (*kind = GR__PD_ZERO, (gr_var *)NULL)
#define K(v) gr_const(gr__g, v)
    switch (gr__code_of(node->op)) {
#define GR__PD_ROW(name, arity, cls, fexpr, iexpr, d0, d1, d2) \
    case GR__EW_##name: return k == 0 ? d0 : k == 1 ? d1 : d2;
        GR_ELEMWISE_OPS(GR__PD_ROW)
#undef GR__PD_ROW
    default: break;
    }
#undef D
#undef D_ONE
#undef D_NEG_ONE
#undef D_ZERO
#undef D_NONE
#undef K
    *kind = GR__PD_ZERO;
    return NULL;
}

/* whether v is the constant scalar 1 of dtype dt: the seed of a scalar cost. 1 * t is t exactly, so
   the grad rules leave the product out rather than build a node every compiled function must fold
   (and everything downstream of it rebuild) */
static int gr__is_one(const gr_var *v, int dt) {
    return v->kind == GR__VK_CONST && v->ndim == 0 && v->dtype == dt && gr_array_get((const gr_array *)gr__ext(v), 0) == 1.0;
}

/* gradient: term_k = sum_to(gz * d_k, x_k); integer-valued outputs and piecewise-constant rows give
   float zeros (a gradient is always float, and zero where the function is locally constant).
   skip (may be NULL): inputs whose term nobody reads (gr_grad knows: they do not depend on any wrt);
   they get zeros, which for a 0-d input (a scalar constant, mostly) is a cached constant, not a node */
static gr_status gr__ew_grad_some(const gr_node *node, gr_var *const *og, gr_var **ig, const uint8_t *skip) {
    gr_var *y = gr__out(node)[0], *gz = og[0];
    int k;
    for (k = 0; k < node->n_in; k++) {
        gr_var *x = gr__in(node)[k], *t;
        int kind;
        if ((skip && skip[k]) || !gr__is_float(y->dtype) || gr__ew_class[gr__code_of(node->op)] == GR__EC_STEP) {
            ig[k] = gr__zeros_grad(x);
            if (!ig[k]) return node->graph->status;
            continue;
        }
        t = gr__ew_partial(node, k, &kind);
        switch (kind) {
        case GR__PD_ZERO: ig[k] = gr__zeros_grad(x); if (!ig[k]) return node->graph->status; continue;
        case GR__PD_ONE: t = gz; break;
        case GR__PD_NEG_ONE: t = gr_neg(gz); break;
        default: t = !t || gr__is_one(gz, t->dtype) ? t : gr_mul(gz, t); break;   /* (NULL: its builder failed) */
        }
        ig[k] = gr__sum_to(t, x);
        if (!ig[k]) return node->graph->status != GR_OK ? node->graph->status : GR_ERR_VALUE;
    }
    return GR_OK;
}
static gr_status gr__ew_grad(const gr_node *node, gr_var *const *og, gr_var **ig) { return gr__ew_grad_some(node, og, ig, NULL); }

/* R-op: sum_k d_k * v_k over the inputs that have a tangent */
static gr_status gr__ew_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    gr_var *y = gr__out(node)[0], *acc = NULL;
    int k, any = 0;
    orop[0] = NULL;
    if (!gr__is_float(y->dtype)) return GR_OK;          /* integer-valued: not differentiable */
    for (k = 0; k < node->n_in; k++) {
        gr_var *t;
        int kind;
        if (gr_is_disconnected(ev[k])) continue;
        any = 1;
        if (gr__ew_class[gr__code_of(node->op)] == GR__EC_STEP) continue;
        t = gr__ew_partial(node, k, &kind);
        switch (kind) {
        case GR__PD_ZERO: continue;
        case GR__PD_ONE: t = ev[k]; break;
        case GR__PD_NEG_ONE: t = gr_neg(ev[k]); break;
        default: t = gr_mul(t, ev[k]); break;
        }
        acc = acc ? gr_add(acc, t) : t;
        if (!acc) return node->graph->status != GR_OK ? node->graph->status : GR_ERR_VALUE;
    }
    if (!any) return GR_OK;
    orop[0] = acc ? gr__spread_to(acc, y) : gr__zeros_grad(y);
    return orop[0] ? GR_OK : node->graph->status;
}

/* ---- Cast ------------------------------------------------------------------------------------- */

typedef struct gr__cast_params { int dtype; } gr__cast_params;

GR_API gr_var *gr_cast(gr_var *x, gr_dtype dtype) {
    gr__cast_params p;
    gr_graph *g;
    if (!gr__operands("gr_cast", 1, &x, &g)) return NULL;
    if (!gr__dtype_ok((int)dtype)) return gr__fail(g, GR_ERR_VALUE, "gr_cast: unknown dtype %d for %s", (int)dtype, gr__d(x).s);
    if (x->dtype == (int)dtype) return x;
    if (gr__is_weak(x)) return gr__scalar_const(g, (int)dtype, gr__weak_value(x), 0);
    memset(&p, 0, sizeof p);
    p.dtype = (int)dtype;
    return gr__node1(g, &gr__op_Cast, &p, sizeof p, 1, &x);
}

static gr_status gr__Cast_infer(const gr_node *node, gr_type *out) {
    gr_var_type(gr__in(node)[0], out);
    out->dtype = (gr_dtype)((const gr__cast_params *)gr__params(node))->dtype;
    return GR_OK;
}
static gr_status gr__Cast_shape(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    return gr__like0_shape(node, in, out);
}
static gr_status gr__Cast_perform(const gr_node *node, const gr_array *const *in, gr_array *const *out) {
    (void)node;
    if (in[0]->dtype == GR_I64 && out[0]->dtype == GR_F32) {
        /* directly: through double, an int64 beyond 2^53 would be rounded twice (2^60 + 2^36 + 1
           must give 2^60 + 2^37, not 2^60) */
        const int64_t *x = (const int64_t *)in[0]->data;
        float *y = (float *)out[0]->data;
        int64_t i;
        for (i = 0; i < in[0]->size; i++) y[i] = (float)x[i];
        return GR_OK;
    }
    gr__convert(out[0]->dtype, out[0]->data, in[0]->dtype, in[0]->data, in[0]->size);
    return GR_OK;
}
/* float outputs pass the gradient back (cast to x's float dtype); integer outputs give zeros */
static gr_status gr__Cast_grad(const gr_node *node, gr_var *const *og, gr_var **ig) {
    gr_var *x = gr__in(node)[0];
    if (!gr__is_float(gr__out(node)[0]->dtype)) ig[0] = gr__zeros_grad(x);
    else ig[0] = gr_cast(og[0], (gr_dtype)gr__grad_dtype(x));
    return ig[0] ? GR_OK : node->graph->status;
}
static gr_status gr__Cast_rop(const gr_node *node, gr_var *const *ev, gr_var **orop) {
    orop[0] = NULL;
    if (!gr__is_float(gr__out(node)[0]->dtype) || gr_is_disconnected(ev[0])) return GR_OK;
    orop[0] = gr_cast(ev[0], (gr_dtype)gr__out(node)[0]->dtype);
    return orop[0] ? GR_OK : node->graph->status;
}

/* Cast of zeros: zeros of the new dtype */
static gr_var *gr__Cast_simplify(gr__rewriter *rw, const gr_op_def *op, const void *params, gr_var *const *in, int *done) {
    gr_var *z;
    (void)op;
    if (!gr__rw_zeros(in[0], &z)) return NULL;
    return gr__replaced(done, gr__rw_zero_fill(rw, ((const gr__cast_params *)params)->dtype, z));
}

/* ---- pairs (GR_ELEMWISE_PAIRS) ------------------------------------------------------------------ */

/* sin and cos of one operand in one loop; s[i] = sin(a[i sa]), c[i] = cos(a[i sa]) for F64 and F32 */
static GR__UNUSED void gr__sincos_pair(int dt, void *s, void *c, const void *a, int64_t sa, int64_t n) {
    gr__vm_sincos(dt, s, c, a, sa, n);        /* ops/vmath.c: the rows' own functions, one reduction */
}

typedef void (*gr__ew_pair_kernel)(int dt, void *first, void *second, const void *a, int64_t sa, int64_t n);
typedef struct gr__ew_pair { int first, second; const char *name; gr__ew_pair_kernel run; } gr__ew_pair;
static const gr__ew_pair gr__ew_pairs[] = {
#define GR__PAIR_ROW(first, second, name) GR__EW_WHEN(GR__EW_KEPT(first))(GR__EW_WHEN(GR__EW_KEPT(second))( \
    { GR__EW_##first, GR__EW_##second, #name, gr__##name##_pair },))
    GR_ELEMWISE_PAIRS(GR__PAIR_ROW)
#undef GR__PAIR_ROW
    { -1, -1, NULL, NULL }
};

/* the pair whose first row is `row`, or NULL */
static const gr__ew_pair *gr__ew_pair_first(int row) {
    const gr__ew_pair *p;
    for (p = gr__ew_pairs; p->run; p++) if (p->first == row) return p;
    return NULL;
}
/* row is the second of a pair */
static int gr__ew_pair_second(int row) {
    const gr__ew_pair *p;
    for (p = gr__ew_pairs; p->run; p++) if (p->second == row) return 1;
    return 0;
}

/* ---- rewrites (GR_ELEMWISE_REWRITES): the algebra ----------------------------------------------------
   Zeros are 0-d zeros or zeros filled to a shape (gr__rw_zeros); a zero operand is dropped only when
   the result keeps its shape in every call (gr__sig_into). */

/* x + 0 -> x, 0 + x -> x; x - 0 -> x, 0 - x -> -x */
static gr_var *gr__add_zero_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    gr_var *a = in[0], *b = in[1], *za = NULL, *zb = NULL;
    int a0 = gr__rw_zeros(a, &za), b0 = gr__rw_zeros(b, &zb);
    if (b0 && (!zb || gr__sig_into(rw, zb, a))) return gr__replaced(done, a);
    if (b0 && zb && gr__sig_into(rw, a, zb)) return gr__replaced(done, gr__rw_fill(rw, a, zb));
    if (a0 && (!za || gr__sig_into(rw, za, b))) return gr__replaced(done, row == GR__EW_add ? b : gr__rw_ew(rw, GR__EW_neg, b, NULL));
    return NULL;
}

/* exp(x) - 1 -> expm1(x) */
static gr_var *gr__expm1_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    const gr_node *e = gr__owner(in[0]);
    (void)row;
    if (!gr__rw_is_scalar(in[1], 1.0) || !e || e->op != &gr__op_ew_exp) return NULL;
    return gr__replaced(done, gr__rw_ew(rw, GR__EW_expm1, gr__in(e)[0], NULL));
}

/* x * 1 -> x, x * -1 -> -x (either side); x * ones (a 1 filled to a shape) -> x where the ones neither
   widen x nor change its dtype (a Jacobian's identity seed, scaled) */
static gr_var *gr__mul_one_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    gr_var *a = in[0], *b = in[1], *ref = NULL, *f;
    int k;
    (void)row;
    if (gr__rw_is_scalar(b, 1.0)) return gr__replaced(done, a);
    if (gr__rw_is_scalar(a, 1.0)) return gr__replaced(done, b);
    for (k = 0; k < 2; k++)
        if ((f = gr__rw_filled(in[k], &ref)) != NULL && gr__rw_is_scalar(f, 1.0) && in[1 - k]->dtype == in[k]->dtype &&
            gr__sig_into(rw, in[k], in[1 - k]))
            return gr__replaced(done, in[1 - k]);
    if (gr__rw_is_scalar(b, -1.0)) return gr__replaced(done, gr__rw_ew(rw, GR__EW_neg, a, NULL));
    if (gr__rw_is_scalar(a, -1.0)) return gr__replaced(done, gr__rw_ew(rw, GR__EW_neg, b, NULL));
    return NULL;
}

/* x * 0, as zero gradients make it: the zeros, shaped like the product (like Aesara, x's infinities
   and NaNs are not kept) */
static gr_var *gr__mul_zero_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    gr_var *a = in[0], *b = in[1], *za = NULL, *zb = NULL;
    int a0 = gr__rw_zeros(a, &za), b0 = gr__rw_zeros(b, &zb);
    (void)row;
    if (a0 && (!za ? b->ndim == 0 : gr__sig_into(rw, b, za))) return gr__replaced(done, a);
    if (b0 && (!zb ? a->ndim == 0 : gr__sig_into(rw, a, zb))) return gr__replaced(done, b);
    if (a0 && (!za || gr__sig_into(rw, za, b))) return gr__replaced(done, gr__rw_zero_fill(rw, a->dtype, b));
    if (b0 && (!zb || gr__sig_into(rw, zb, a))) return gr__replaced(done, gr__rw_zero_fill(rw, a->dtype, a));
    return NULL;
}

/* x / 1 -> x */
static gr_var *gr__div_one_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    (void)rw; (void)row;
    return gr__rw_is_scalar(in[1], 1.0) ? gr__replaced(done, in[0]) : NULL;
}

/* 0 / x -> 0, when x does not widen the zeros */
static gr_var *gr__zero_div_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    gr_var *za = NULL;
    (void)row;
    if (gr__rw_zeros(in[0], &za) && (!za ? in[1]->ndim == 0 : gr__sig_into(rw, in[1], za))) return gr__replaced(done, in[0]);
    return NULL;
}

/* -(-x) -> x */
static gr_var *gr__neg_neg_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    const gr_node *n = gr__owner(in[0]);
    (void)rw; (void)row;
    return n && n->op == &gr__op_ew_neg ? gr__replaced(done, gr__in(n)[0]) : NULL;
}

/* -0 -> 0 */
static gr_var *gr__neg_zero_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    gr_var *z;
    (void)rw; (void)row;
    return gr__rw_zeros(in[0], &z) ? gr__replaced(done, in[0]) : NULL;
}

/* x^1 -> x, x^2 -> sqr(x) */
static gr_var *gr__pow_small_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    (void)row;
    if (gr__rw_is_scalar(in[1], 1.0)) return gr__replaced(done, in[0]);
    if (gr__rw_is_scalar(in[1], 2.0)) return gr__replaced(done, gr__rw_ew(rw, GR__EW_sqr, in[0], NULL));
    return NULL;
}

/* log(1 + x) -> log1p(x) (either order; x not widened by the 1) */
static gr_var *gr__log1p_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    const gr_node *n = gr__owner(in[0]);
    gr_var *p, *q;
    (void)row;
    if (!n || n->op != &gr__op_ew_add) return NULL;
    p = gr__in(n)[0];
    q = gr__in(n)[1];
    if (gr__rw_is_scalar(p, 1.0) && q->ndim == in[0]->ndim) return gr__replaced(done, gr__rw_ew(rw, GR__EW_log1p, q, NULL));
    if (gr__rw_is_scalar(q, 1.0) && p->ndim == in[0]->ndim) return gr__replaced(done, gr__rw_ew(rw, GR__EW_log1p, p, NULL));
    return NULL;
}

/* log(sigmoid(x)) -> -softplus(-x) */
static gr_var *gr__log_sigmoid_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    const gr_node *n = gr__owner(in[0]);
    (void)row;
    if (!n || n->op != &gr__op_ew_sigmoid) return NULL;
    return gr__replaced(done, gr__rw_ew(rw, GR__EW_neg, gr__rw_ew(rw, GR__EW_softplus, gr__rw_ew(rw, GR__EW_neg, gr__in(n)[0], NULL), NULL), NULL));
}

/* ---- constant factors ------------------------------------------------------------------------------
   Gradients are full of scalings: 2 x from a square, a constant cost weight, neg from a difference,
   ones filled to a term's shape. Over float operands of one dtype a product gathers its constant
   factors into one: mul(c1, mul(c2, x)) -> mul(c1 c2, x), mul(mul(c1, x), mul(c2, y)) ->
   mul(c1 c2, mul(x, y)), neg(mul(c, x)) = mul(c, neg x) -> mul(-c, x), a filled scalar times a
   scalar is their product filled, and a scalar constant (or a one-element one) filled to a shape
   the other operand already has is read as the scalar. Results change by rounding only (a
   product's factors are taken in another order). */

/* v is a 0-d float constant (any_ndim: a one-element one) that can scale a value of dtype dt without
   changing its dtype: *c its value */
static int gr__rw_factor_of(const gr_var *v, int dt, int any_ndim, double *c) {
    if (v->kind != GR__VK_CONST || !gr__is_float(dt) || (v->dtype != dt && !gr__is_weak(v))) return 0;
    if (any_ndim ? ((const gr_array *)gr__ext(v))->size != 1 : v->ndim != 0) return 0;
    *c = gr_array_get((const gr_array *)gr__ext(v), 0);
    return 1;
}
static int gr__rw_factor(const gr_var *v, int dt, double *c) { return gr__rw_factor_of(v, dt, 0, c); }

/* v is mul(c, x) (or mul(x, c)) for a constant factor c: x, and c in *c; NULL otherwise */
static gr_var *gr__rw_scaled(const gr_var *v, int dt, double *c) {
    const gr_node *n = gr__owner(v);
    int j;
    if (!n || n->op != &gr__op_ew_mul || v->dtype != dt) return NULL;
    for (j = 0; j < 2; j++)
        if (gr__in(n)[1 - j]->dtype == dt && gr__in(n)[1 - j]->ndim == v->ndim && gr__rw_factor(gr__in(n)[j], dt, c))
            return gr__in(n)[1 - j];
    return NULL;
}

/* c * x for a constant c of dtype dt */
static gr_var *gr__rw_times(gr__rewriter *rw, int dt, double c, gr_var *x) {
    gr_var *k = gr__scalar_const(rw->cg, dt, c, 0);
    return k ? gr__rw_ew(rw, GR__EW_mul, k, x) : NULL;
}

/* mul(u, y) with u's constant factors gathered with y's; NULL when nothing applies */
static gr_var *gr__rw_scale_side(gr__rewriter *rw, gr_var *u, gr_var *y) {
    const gr_node *un = gr__owner(u);
    gr_var *f, *ref = NULL, *x, *z, *k;
    double c, c2;
    int dt = u->dtype;
    if (!un) return NULL;
    f = gr__rw_filled(u, &ref);
    if (f && gr__rw_factor_of(f, dt, 1, &c) && gr__rw_factor(y, dt, &c2)) {   /* a filled scalar times a scalar */
        k = gr__scalar_const(rw->cg, dt, c * c2, 0);
        return k ? gr__rw_fill(rw, k, ref) : NULL;
    }
    if (f && gr__rw_factor_of(f, dt, 1, &c) && gr__sig_into(rw, u, y)) return gr__rw_times(rw, dt, c, y);   /* filled to y's shape */
    if (gr__rw_factor(y, dt, &c) && un->op == &gr__op_ew_neg && gr__in(un)[0]->dtype == dt)   /* mul(c, neg x) */
        return gr__rw_times(rw, dt, -c, gr__in(un)[0]);
    if (!(x = gr__rw_scaled(u, dt, &c2))) return NULL;
    if (gr__rw_factor(y, dt, &c)) return gr__rw_times(rw, dt, c * c2, x);   /* mul(c, mul(c2, x)) */
    if (!(z = gr__rw_scaled(y, dt, &c))) return NULL;                       /* (one factor alone: no product saved) */
    if (!(z = gr__rw_ew(rw, GR__EW_mul, x, z))) return NULL;                /* mul(mul(c2, x), mul(c, z)) */
    return gr__rw_times(rw, dt, c * c2, z);
}

/* c1 (c2 x) -> (c1 c2) x, (c1 x)(c2 y) -> (c1 c2)(x y), c (-x) -> (-c) x, with the fills above */
static gr_var *gr__mul_consts_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    gr_var *a = in[0], *b = in[1], *r = NULL;
    (void)row;
    if (a->dtype == b->dtype && gr__is_float(a->dtype) && (r = gr__rw_scale_side(rw, a, b)) == NULL && rw->cg->status == GR_OK)
        r = gr__rw_scale_side(rw, b, a);
    return r || rw->cg->status != GR_OK ? gr__replaced(done, r) : NULL;
}

/* -(c x) -> (-c) x */
static gr_var *gr__neg_consts_rewrite(gr__rewriter *rw, int row, gr_var *const *in, int *done) {
    gr_var *x, *r;
    double c;
    (void)row;
    if (!(x = gr__rw_scaled(in[0], in[0]->dtype, &c))) return rw->cg->status != GR_OK ? gr__replaced(done, NULL) : NULL;
    r = gr__rw_times(rw, in[0]->dtype, -c, x);
    return r || rw->cg->status != GR_OK ? gr__replaced(done, r) : NULL;
}

/* ---- C code generation (gr_fn_emit_c) ------------------------------------------------------------- */

/* Cast: element by element as its perform converts (int64 to float32 directly) */
static gr_status gr__Cast_emit(gr__em *e, const gr_node *node, const gr_array *const *in, const gr_array *const *out) {
    (void)node;
    if (!in[0]->size) return GR_OK;
    gr__em_line(e, "{");
    gr__em_line(e, "const %s *x = %s;", gr__em_ctype(in[0]->dtype), gr__em_in(e, 0));
    gr__em_line(e, "%s *y = %s;", gr__em_ctype(out[0]->dtype), gr__em_out(e, 0));
    gr__em_line(e, "for (size_t i = 0; i < %lld; i++) y[i] = %s;", (long long)in[0]->size, gr__em_conv(e, out[0]->dtype, in[0]->dtype, "x[i]", 1));
    gr__em_line(e, "}");
    return GR_OK;
}
