/* tests/t_deriv_struct.c: derivative specs (tests/deriv.h) for every row of GR_STRUCT_OPS, and the
   checks that need chosen points or exact values (suite_deriv_struct).

   Builders that need parameters (axes, patterns, shapes, indices) take them through the spec's
   `user` pointer. Integer operands (take indices) are constants made inside the builder.
   Rows and how they are reached:
     Cast                 float to float (the F32 run; float64 -> float32 cannot be checked by
                          finite differences in float64 and has an exact test below), float to
                          integer and bool (GTD_NONDIFF), and an integer path inside a float graph;
     Sum Mean Prod Max Min   several axis sets, keepdims, 0-d results and 0-d inputs; Prod with
                          zeros (masked, and at exact zeros in test_deriv_prod_zeros); Max/Min
                          draw continuous values, so there are no ties;
     DimShuffle Reshape BroadcastLike ReduceLike ReshapeLike SizeRatio   directly;
     Dot                  all rank combinations, transposes by gr_transpose, and Dot nodes with
                          transpose flags, which only gradients build: builders that return a
                          gradient put them under every check;
     Softmax LogSoftmax   axes 0, 1, -1 and the middle axis of a 3-d input;
     gradient ops         see the comment above their specs;
     EyeLike Unflatten Batched   through builders returning gr_jacobian / gr_hessian;
     Banded               Jacobians and Hessians that gr_function computes as banded matrices;
     Slice Index Take ViewUpdate TakeUpdate   views, updates of them, y broadcast. */
#include "deriv.h"

#define M34(lo, hi) GTD_IN(2, 3, 4, lo, hi)
#define V4(lo, hi)  GTD_IN(1, 4, 0, lo, hi)
#define S0(lo, hi)  GTD_IN(0, 0, 0, lo, hi)
#define GG GTD_GRADGRAD
#define ND GTD_NONDIFF

/* a constant of x's dtype (float) with the given values */
static gr_var *gts_const_like(gr_var *x, int ndim, const int64_t *shape, const double *v) {
    gr_array *a = gr_array_new(gr_var_dtype(x), ndim, shape);
    gr_var *c;
    int64_t k;
    if (!a) return NULL;
    for (k = 0; k < a->size; k++) gr_array_set(a, k, v[k]);
    c = gr_constant(gr_var_graph(x), a);
    gr_array_free(a);
    return c;
}
/* an I64 constant */
static gr_var *gts_indices(gr_graph *g, int ndim, const int64_t *shape, const int64_t *v) {
    gr_array *a = gr_array_from(GR_I64, ndim, shape, v);
    gr_var *c = a ? gr_constant(g, a) : NULL;
    gr_array_free(a);
    return c;
}

/* ==== Cast ======================================================================================= */

static gr_var *gts_cast_f64(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_cast(x[0], GR_F64); }
static gr_var *gts_cast_i64(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_cast(x[0], GR_I64); }
static gr_var *gts_cast_bool(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_cast(x[0], GR_BOOL); }
/* x1 * trunc(x0): the integer path (float -> I64 -> float) carries no derivative to x0 */
static gr_var *gts_cast_int_path(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_mul(x[1], gr_cast(x[0], GR_I64)); }
/* sin(cast(x, F64)) * x1: the cast feeds a float op; in the F32 run a real Cast node */
static gr_var *gts_cast_f64_sin(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_mul(gr_sin(gr_cast(x[0], GR_F64)), x[1]); }

/* ==== reductions ================================================================================= */

typedef struct gts_axes { int n; int axes[4]; int keepdims; } gts_axes;
static gts_axes ax_all = { 0, { 0 }, 0 }, ax_all_keep = { 0, { 0 }, 1 }, ax_0 = { 1, { 0 }, 0 }, ax_1 = { 1, { 1 }, 0 },
                ax_m1_keep = { 1, { -1 }, 1 }, ax_01_keep = { 2, { 0, 1 }, 1 }, ax_02 = { 2, { 0, 2 }, 0 },
                ax_1_keep = { 1, { 1 }, 1 }, ax_20 = { 2, { 2, 0 }, 1 }, ax_0_keep = { 1, { 0 }, 1 };

#define GTS_RED(Name, fn) \
    static gr_var *gts_##fn(gr_graph *g, gr_var *const *x, void *u) { \
        const gts_axes *a = (const gts_axes *)u; (void)g; return gr_##fn##_axes(x[0], a->n, a->axes, a->keepdims); }
GTS_RED(Sum, sum) GTS_RED(Mean, mean) GTS_RED(Prod, prod) GTS_RED(Max, max) GTS_RED(Min, min)
#undef GTS_RED

/* prod over axis 1 of x * mask, a (3,4) mask whose row 0 has no zero, row 1 one, row 2 two: the
   naive rule prod / x would give NaN (0/0) at the zeros */
static gr_var *gts_prod_masked(gr_graph *g, gr_var *const *x, void *u) {
    static const double mask[12] = { 1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 1, 0 };
    static const int64_t shape[2] = { 3, 4 };
    const gts_axes *a = (const gts_axes *)u;
    (void)g;
    return gr_prod_axes(gr_mul(x[0], gts_const_like(x[0], 2, shape, mask)), a->n, a->axes, a->keepdims);
}

/* a mean times the sum of a second input: the cotangent reaching Mean is not the projection alone
   (the specs' inputs have unknown static shapes, so Mean's gradient scales by a SizeRatio) */
static gr_var *gts_mean_scaled(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_mul(gr_mean_axis(x[0], 0), gr_sum(x[1])); }

/* ==== shape ops =================================================================================== */

typedef struct gts_pattern { int n; int p[GR_MAX_NDIM]; } gts_pattern;
static gts_pattern pat_newaxis = { 3, { GR_NEWAXIS, 1, 0 } }, pat_drop = { 1, { 0 } }, pat_swap_bcast = { 2, { 1, 0 } },
                   pat_scalar = { 2, { GR_NEWAXIS, GR_NEWAXIS } }, pat_3d = { 3, { 2, 0, 1 } }, pat_3d_drop = { 3, { 2, GR_NEWAXIS, 0 } };
static gr_var *gts_dimshuffle(gr_graph *g, gr_var *const *x, void *u) {
    const gts_pattern *p = (const gts_pattern *)u;
    (void)g;
    return gr_dimshuffle(x[0], p->n, p->p);
}
static gr_var *gts_transpose(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_transpose(x[0]); }
/* a dimshuffle whose gradient meets a broadcast: x0 (3,1) -> (1,3) times x1 (4,1) */
static gr_var *gts_dimshuffle_mul(gr_graph *g, gr_var *const *x, void *u) {
    const gts_pattern *p = (const gts_pattern *)u;
    (void)g;
    return gr_mul(gr_dimshuffle(x[0], p->n, p->p), x[1]);
}

typedef struct gts_shape { int n; int64_t s[GR_MAX_NDIM]; } gts_shape;
static gts_shape sh_2_6 = { 2, { 2, 6 } }, sh_flat = { 1, { -1 } }, sh_2_m1_3 = { 3, { 2, -1, 3 } }, sh_6_4 = { 2, { 6, 4 } },
                 sh_1_1 = { 2, { 1, 1 } }, sh_2_2 = { 2, { 2, 2 } }, sh_0d = { 0, { 0 } };
static gr_var *gts_reshape(gr_graph *g, gr_var *const *x, void *u) {
    const gts_shape *s = (const gts_shape *)u;
    (void)g;
    return gr_reshape(x[0], s->n, s->s);
}
/* reshape, then an elementwise product with a second input: the gradient is not just a reshape of u */
static gr_var *gts_reshape_mul(gr_graph *g, gr_var *const *x, void *u) { return gr_mul(gts_reshape(g, x, u), x[1]); }

static gr_var *gts_broadcast_like(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_broadcast_like(x[0], x[1]); }
static gr_var *gts_reduce_like(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_reduce_like(x[0], x[1]); }
static gr_var *gts_reshape_like(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_reshape_like(x[0], x[1]); }
/* the reference operand of the *_like ops also feeding the value: sin(x1) + op(x0, x1) */
static gr_var *gts_broadcast_like_ref(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_add(gr_sin(x[1]), gr_broadcast_like(x[0], x[1])); }
static gr_var *gts_reduce_like_ref(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_mul(gr_sin(x[1]), gr_reduce_like(x[0], x[1])); }
static gr_var *gts_reshape_like_ref(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_mul(gr_sin(x[1]), gr_reshape_like(x[0], x[1])); }
static gr_var *gts_size_ratio(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_size_ratio(x[0], x[1], gr_var_dtype(x[0])); }
/* x0 * size(x1) / size(x0): a value depending on x1's shape only */
static gr_var *gts_size_ratio_mul(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_mul(x[0], gr_size_ratio(x[1], x[0], gr_var_dtype(x[0]))); }

/* ==== Dot ========================================================================================== */

static gr_var *gts_dot(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_dot(x[0], x[1]); }
static gr_var *gts_dot_r(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_dot(x[1], x[0]); }
static gr_var *gts_dot_ta(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_dot(gr_transpose(x[0]), x[1]); }
static gr_var *gts_dot_tb(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_dot(x[0], gr_transpose(x[1])); }
static gr_var *gts_dot_tab(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_dot(gr_transpose(x[0]), gr_transpose(x[1])); }
/* gradients of sum(sin(dot(a, b))): their Dot nodes carry transpose flags (G b^T, a^T G, A^T g
   for a matrix-vector product), and the builder's output puts them under every check */
static gr_var *gts_dot_grad_a(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_grad1(gr_sum(gr_sin(gr_dot(x[0], x[1]))), x[0]); }
static gr_var *gts_dot_grad_b(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_grad1(gr_sum(gr_sin(gr_dot(x[0], x[1]))), x[1]); }
/* ... and of a product with a transposed operand: the flagged product then reads a DimShuffle */
static gr_var *gts_dot_ta_grad_b(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_grad1(gr_sum(gr_sin(gr_dot(gr_transpose(x[0]), x[1]))), x[1]); }

/* ==== Softmax, LogSoftmax ============================================================================ */

static int axis_0 = 0, axis_1 = 1, axis_m1 = -1;
static gr_var *gts_softmax(gr_graph *g, gr_var *const *x, void *u) { (void)g; return gr_softmax(x[0], *(const int *)u); }
static gr_var *gts_log_softmax(gr_graph *g, gr_var *const *x, void *u) { (void)g; return gr_log_softmax(x[0], *(const int *)u); }
/* weighted by a second input, so the cotangent reaching the op is not the projection alone */
static gr_var *gts_softmax_mul(gr_graph *g, gr_var *const *x, void *u) { (void)g; return gr_mul(gr_softmax(x[0], *(const int *)u), x[1]); }
static gr_var *gts_log_softmax_mul(gr_graph *g, gr_var *const *x, void *u) { (void)g; return gr_mul(gr_log_softmax(x[0], *(const int *)u), x[1]); }

/* ==== the gradient-modifying ops ========================================================================
   Each is the identity in the forward pass with a changed backward pass, so wherever the change
   matters the analytic derivative is, by design, not the true one and finite differences cannot
   agree. A spec can only check them where the change does not matter, and says which:
     ZeroGrad, ConsiderConstant, DisconnectedGrad
       applied to floor(x1): a value that does depend on x1, but piecewise constantly, so the true
       derivative through the op is zero, which is also what these ops give. The op's output
       multiplies x0, so its forward value (the identity) enters x0's derivative; its grad rule,
       its R-op rule (zeros, or no tangent) and its removal from compiled functions all run.
     GradClip
       bounds wider than any cotangent the checks send (|u cos x0 x1| < 3): the clip is the
       identity and the checks hold; a wrong rule (zeros, a fixed value) would fail them. The
       second spec returns a gradient that passes through an active clip: its value is
       clip(x0, -0.5, 0.5), which the checks differentiate again.
     GradScale
       two nested scales whose product is 1 (2, then 0.5): the gradient and the R-op (m v,
       decision 3) are then the true ones. The second spec returns the gradient through a scale
       of 3 (the value 3 x0), so the scaled gradient graph is itself differentiated.
     UndefinedGrad
       gr_grad raises GR_ERR_NULL_GRAD as soon as the op lies between the output and an input,
       so a passing spec can only use it where the gradient walk does not enter it: as the shape
       reference of gr_broadcast_like (connection pattern 10). Its R-op rule still runs there
       (no tangent, as the pattern needs). test_deriv_gradops_exact covers what the specs cannot:
       the exact modified gradients and R-ops, the raise, and GR_NULL_RETURN. */

static gr_var *gts_zero_grad(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_add(gr_mul(x[0], gr_zero_grad(gr_floor(x[1]))), gr_sin(x[0])); }
/* the deprecation warning of gr_consider_constant is expected here: keep it out of the test log */
static void gts_log_quiet_deprecated(void *user, const char *message) {
    (void)user;
    if (!strstr(message, "deprecated")) fprintf(stderr, "gradient.h: warning: %s\n", message);
}
static gr_var *gts_consider_constant(gr_graph *g, gr_var *const *x, void *u) {
    (void)u;
    gr_graph_set_log(g, gts_log_quiet_deprecated, NULL);
    return gr_add(gr_mul(x[0], gr_consider_constant(gr_floor(x[1]))), gr_sin(x[0]));
}
static gr_var *gts_disconnected_grad(gr_graph *g, gr_var *const *x, void *u) {
    (void)g; (void)u;
    return gr_add(gr_mul(x[0], gr_disconnected_grad(gr_floor(x[1]))), gr_sin(x[0]));
}
static gr_var *gts_grad_clip(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_mul(gr_sin(gr_grad_clip(x[0], -10, 10)), x[1]); }
static gr_var *gts_grad_clip_active(gr_graph *g, gr_var *const *x, void *u) {
    (void)g; (void)u;
    return gr_grad1(gr_sum(gr_mul(x[0], gr_grad_clip(x[1], -0.5, 0.5))), x[1]);
}
static gr_var *gts_grad_scale(gr_graph *g, gr_var *const *x, void *u) {
    (void)g; (void)u;
    return gr_mul(gr_grad_scale(gr_grad_scale(gr_sin(x[0]), 2.0), 0.5), x[1]);
}
static gr_var *gts_grad_scale_grad(gr_graph *g, gr_var *const *x, void *u) {
    (void)g; (void)u;
    return gr_grad1(gr_sum(gr_mul(x[0], gr_grad_scale(x[1], 3.0))), x[1]);
}
static gr_var *gts_undefined_grad(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_broadcast_like(gr_sin(x[0]), gr_undefined_grad(x[1])); }

/* ==== Jacobians: EyeLike, Unflatten, Batched ============================================================= */

static gr_var *gts_jac1(gr_var *e, gr_var *w) {
    gr_var *j = NULL;
    return gr_jacobian(e, 1, &w, &j, NULL) == GR_OK ? j : NULL;
}
/* jacobian(x, x): EyeLike itself (then Unflatten for a matrix): depends on the shape only */
static gr_var *gts_jac_identity(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gts_jac1(x[0], x[0]); }
/* jacobian(sin(x) * x1, x): the identity times cos(x) x1, elementwise batching only (x vector) */
static gr_var *gts_jac_sin(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gts_jac1(gr_mul(gr_sin(x[0]), x[1]), x[0]); }
/* jacobian(dot(A, x), x) = A: the pullback's dot(A, u, transposed) runs as Batched, A not batched */
static gr_var *gts_jac_dot_x(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gts_jac1(gr_sin(gr_dot(x[0], x[1])), x[1]); }
/* jacobian(dot(A, B), A): Batched ReshapeLike and Dot (the batched left operand), then Unflatten */
static gr_var *gts_jac_dot_a(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gts_jac1(gr_dot(x[0], x[1]), x[0]); }
static gr_var *gts_jac_dot_b(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gts_jac1(gr_tanh(gr_dot(x[0], x[1])), x[1]); }
/* jacobian(sin(X) * x1, x1) for X (3,4), x1 (4,): ReduceLike runs batched, then Unflatten */
static gr_var *gts_jac_bcast(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gts_jac1(gr_mul(gr_sin(x[0]), x[1]), x[1]); }
/* jacobian of a matrix function of a matrix: (2,3,2,3) */
static gr_var *gts_jac_matrix(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gts_jac1(gr_mul(gr_sin(x[0]), x[0]), x[0]); }
/* hessian(sum(dot(X, B)^2), X): the Jacobian of a gradient */
static gr_var *gts_hessian(gr_graph *g, gr_var *const *x, void *u) {
    gr_var *h = NULL, *w = x[0];
    (void)g; (void)u;
    return gr_hessian(gr_sum(gr_sqr(gr_dot(x[0], x[1]))), 1, &w, &h, NULL) == GR_OK ? h : NULL;
}

/* Banded (gr_function's form of these Jacobians and Hessians): Rosenbrock's Hessian, tridiagonal */
static gr_var *gts_rosenbrock(gr_graph *g, gr_var *x) {
    gr_var *head = gr_slice(x, 0, 0, -1, 1), *tail = gr_slice(x, 0, 1, GR_OPEN, 1);
    gr_var *a = gr_sub(tail, gr_sqr(head)), *b = gr_sub(gr_const(g, 1.0), head);
    return gr_sum(gr_add(gr_mul(gr_const(g, 100.0), gr_sqr(a)), gr_sqr(b)));
}
static gr_var *gts_hess_rosen(gr_graph *g, gr_var *const *x, void *u) {
    gr_var *h = NULL, *w = x[0];
    (void)u;
    return gr_hessian(gts_rosenbrock(g, x[0]), 1, &w, &h, NULL) == GR_OK ? h : NULL;
}
/* three diagonals of a rectangular Jacobian: sin(x[2:]) x[:-2] - x[1:-1] / (1 + x[:-2]^2) */
static gr_var *gts_band_expr(gr_graph *g, gr_var *x) {
    gr_var *l = gr_slice(x, 0, GR_OPEN, -2, 1), *m = gr_slice(x, 0, 1, -1, 1), *r = gr_slice(x, 0, 2, GR_OPEN, 1);
    return gr_sub(gr_mul(gr_sin(r), l), gr_div(m, gr_add(gr_const(g, 1.0), gr_sqr(l))));
}
static gr_var *gts_jac_band(gr_graph *g, gr_var *const *x, void *u) { (void)u; return gts_jac1(gts_band_expr(g, x[0]), x[0]); }
/* x[:1] * x: the slice's one column broadcasts, which no band describes (computed densely) */
static gr_var *gts_jac_first(gr_graph *g, gr_var *const *x, void *u) {
    (void)g; (void)u;
    return gts_jac1(gr_mul(gr_slice(x[0], 0, GR_OPEN, 1, 1), x[0]), x[0]);
}

/* ==== indexing ========================================================================================== */

typedef struct gts_view { int axis; int64_t start, stop, step; } gts_view;
static gts_view sl_rows = { 0, 1, 4, 1 }, sl_cols_step = { 1, GR_OPEN, GR_OPEN, 2 }, sl_rev = { 0, GR_OPEN, GR_OPEN, -1 },
                sl_neg = { -1, -3, -1, 1 }, sl_mid = { 1, 1, 3, 1 }, sl_empty = { 0, 3, 1, 1 }, sl_rev_step = { 1, -1, 0, -2 };
static gts_view ix_row = { 0, 2, 0, 0 }, ix_last_col = { 1, -1, 0, 0 }, ix_first = { 0, 0, 0, 0 }, ix_mid = { 1, 1, 0, 0 };

static gr_var *gts_slice(gr_graph *g, gr_var *const *x, void *u) {
    const gts_view *v = (const gts_view *)u;
    (void)g;
    return gr_slice(x[0], v->axis, v->start, v->stop, v->step);
}
static gr_var *gts_index(gr_graph *g, gr_var *const *x, void *u) {
    const gts_view *v = (const gts_view *)u;
    (void)g;
    return gr_index(x[0], v->axis, v->start);
}
/* a view of a view, times x1: the gradient scatters into a scatter */
static gr_var *gts_slice_index(gr_graph *g, gr_var *const *x, void *u) {
    (void)g; (void)u;
    return gr_mul(gr_index(gr_slice(x[0], 1, 3, 0, -1), 0, -1), x[1]);
}

typedef struct gts_takep { int axis; int ndim; int64_t shape[2]; int64_t idx[8]; } gts_takep;
static gts_takep tk_rep = { 0, 1, { 4, 0 }, { 3, 0, 3, 1 } }, tk_2d = { 1, 2, { 2, 2 }, { 0, 3, 3, 3 } },
                tk_neg = { 0, 1, { 3, 0 }, { -1, 0, -5 } }, tk_0d = { 0, 0, { 0, 0 }, { 2 } }, tk_unique = { 0, 1, { 3, 0 }, { 4, 0, 2 } },
                tk_mid = { 1, 1, { 3, 0 }, { 2, 2, 0 } },
                tk_cols = { 1, 1, { 3, 0 }, { 2, 0, 3 } };
static gr_var *gts_take_var(gr_graph *g, gr_var *x, const gts_takep *t) { return gr_take(x, gts_indices(g, t->ndim, t->shape, t->idx), t->axis); }
static gr_var *gts_take(gr_graph *g, gr_var *const *x, void *u) { return gts_take_var(g, x[0], (const gts_takep *)u); }

/* updates: user = which view and set (0) or inc (1) */
typedef struct gts_upd { int kind; int inc; const void *view; } gts_upd;    /* kind 0 slice, 1 index, 2 take */
static gr_var *gts_view_of(gr_graph *g, gr_var *x, const gts_upd *p) {
    if (p->kind == 2) return gts_take_var(g, x, (const gts_takep *)p->view);
    {
        const gts_view *v = (const gts_view *)p->view;
        return p->kind == 0 ? gr_slice(x, v->axis, v->start, v->stop, v->step) : gr_index(x, v->axis, v->start);
    }
}
static gr_var *gts_update(gr_graph *g, gr_var *const *x, void *u) {
    const gts_upd *p = (const gts_upd *)u;
    gr_var *view = gts_view_of(g, x[0], p);
    return p->inc ? gr_inc_subtensor(view, x[1]) : gr_set_subtensor(view, x[1]);
}
/* y computed from x0 itself: sin(view(x0)) * x1 written back into x0 */
static gr_var *gts_update_self(gr_graph *g, gr_var *const *x, void *u) {
    const gts_upd *p = (const gts_upd *)u;
    gr_var *view = gts_view_of(g, x[0], p), *y = gr_mul(gr_sin(view), x[1]);
    return p->inc ? gr_inc_subtensor(view, y) : gr_set_subtensor(view, y);
}
/* set with repeated indices: the last write wins, so y's gradient there is not the true one
   (every write gets the cotangent, as in Aesara); y is a constant here, and what is checked is
   x's gradient through the update (zero at every written position), times sin(x0) */
static gr_var *gts_update_const_y(gr_graph *g, gr_var *const *x, void *u) {
    static const double yv[4] = { 0.5, -1.5, 2.5, 3.0 };
    static const int64_t ys = 4;
    const gts_upd *p = (const gts_upd *)u;
    gr_var *view = gts_view_of(g, x[0], p);
    return gr_mul(p->inc ? gr_inc_subtensor(view, gts_const_like(x[0], 1, &ys, yv)) : gr_set_subtensor(view, gts_const_like(x[0], 1, &ys, yv)),
                  gr_sin(x[0]));
}

static gts_upd up_set_rows = { 0, 0, &sl_rows }, up_inc_rows = { 0, 1, &sl_rows }, up_set_rev = { 0, 0, &sl_rev_step },
               up_inc_rev = { 0, 1, &sl_rev_step }, up_set_row = { 1, 0, &ix_row }, up_inc_col = { 1, 1, &ix_last_col },
               up_set_take = { 2, 0, &tk_unique }, up_inc_take_rep = { 2, 1, &tk_rep }, up_set_take_rep = { 2, 0, &tk_rep },
               up_inc_take_2d = { 2, 1, &tk_2d }, up_set_take_cols = { 2, 0, &tk_cols }, up_inc_take_mid = { 2, 1, &tk_mid };

/* ==== the specs ========================================================================================== */

GTD_SPECS(gtd_specs_struct) = {
    /* Cast */
    { "Cast", "to F64 (a Cast node in the F32 run; the identity in F64)", gts_cast_f64, NULL, 1, { M34(-2, 2) }, GG },
    { "Cast", "to F64 under sin, times x1", gts_cast_f64_sin, NULL, 2, { M34(-2, 2), V4(-2, 2) }, GG },
    { "Cast", "to I64 (truncation), in (0.1, 0.9)", gts_cast_i64, NULL, 1, { M34(0.1, 0.9) }, ND },
    { "Cast", "to I64 (truncation), in (-2.9, -2.1)", gts_cast_i64, NULL, 1, { M34(-2.9, -2.1) }, ND },
    { "Cast", "to BOOL", gts_cast_bool, NULL, 1, { M34(0.2, 2) }, ND },
    { "Cast", "x1 * trunc(x0): an integer path in a float graph", gts_cast_int_path, NULL, 2, { M34(1.1, 2.9), V4(-2, 2) }, GG },
    /* Sum */
    { "Sum", "all of (3,4)", gts_sum, &ax_all, 1, { M34(-2, 2) }, GG },
    { "Sum", "all of (3,4), keepdims", gts_sum, &ax_all_keep, 1, { M34(-2, 2) }, GG },
    { "Sum", "axis 0 of (3,4)", gts_sum, &ax_0, 1, { M34(-2, 2) }, GG },
    { "Sum", "axis -1 of (3,4), keepdims", gts_sum, &ax_m1_keep, 1, { M34(-2, 2) }, GG },
    { "Sum", "axes (0,2) of (2,3,4)", gts_sum, &ax_02, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "Sum", "axes (2,0) of (2,3,4), keepdims", gts_sum, &ax_20, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "Sum", "of a 0-d", gts_sum, &ax_all, 1, { S0(-2, 2) }, GG },
    { "Sum", "axis 1 of (3,1)", gts_sum, &ax_1, 1, { GTD_IN(2, 3, 1, -2, 2) }, GG },
    /* Mean */
    { "Mean", "all of (3,4)", gts_mean, &ax_all, 1, { M34(-2, 2) }, GG },
    { "Mean", "axis 1 of (3,4)", gts_mean, &ax_1, 1, { M34(-2, 2) }, GG },
    { "Mean", "axes (0,1) of (3,4), keepdims", gts_mean, &ax_01_keep, 1, { M34(-2, 2) }, GG },
    { "Mean", "axis 1 of (2,3,4), keepdims", gts_mean, &ax_1_keep, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "Mean", "of a 0-d", gts_mean, &ax_all, 1, { S0(-2, 2) }, GG },
    { "Mean", "axis 0 times sum(x1)", gts_mean_scaled, NULL, 2, { M34(-2, 2), V4(-2, 2) }, GG },
    /* Prod: positive, negative, masked zeros (one and two per slice) */
    { "Prod", "all of (3,4), in (0.5, 1.5)", gts_prod, &ax_all, 1, { M34(0.5, 1.5) }, GG },
    { "Prod", "axis 1 of (3,4), in (-1.5, -0.5)", gts_prod, &ax_1, 1, { M34(-1.5, -0.5) }, GG },
    { "Prod", "axis 0 of (3,4), keepdims", gts_prod, &ax_0_keep, 1, { M34(0.5, 1.5) }, GG },
    { "Prod", "axes (0,1) of (3,4), keepdims", gts_prod, &ax_01_keep, 1, { M34(0.6, 1.4) }, GG },
    { "Prod", "axes (0,2) of (2,3,4)", gts_prod, &ax_02, 1, { GTD_IN3(2, 3, 4, 0.6, 1.4) }, GG },
    { "Prod", "of a 0-d", gts_prod, &ax_all, 1, { S0(-2, 2) }, GG },
    { "Prod", "axis 1 of x * mask: no, one and two zeros per row", gts_prod_masked, &ax_1, 1, { M34(0.5, 1.5) }, GG },
    { "Prod", "all of x * mask (three zeros)", gts_prod_masked, &ax_all, 1, { M34(0.5, 1.5) }, GG },
    { "Prod", "axis 0 of x * mask, keepdims: one zero in columns 0, 1 and 3", gts_prod_masked, &ax_0_keep, 1, { M34(-1.5, -0.5) }, GG },
    /* Max, Min: continuous draws, no ties */
    { "Max", "all of (3,4)", gts_max, &ax_all, 1, { M34(-2, 2) }, GG },
    { "Max", "axis 0 of (3,4)", gts_max, &ax_0, 1, { M34(-2, 2) }, GG },
    { "Max", "axis -1 of (3,4), keepdims", gts_max, &ax_m1_keep, 1, { M34(-2, 2) }, GG },
    { "Max", "axes (0,2) of (2,3,4)", gts_max, &ax_02, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "Max", "of a 0-d", gts_max, &ax_all, 1, { S0(-2, 2) }, GG },
    { "Min", "all of (3,4)", gts_min, &ax_all, 1, { M34(-2, 2) }, GG },
    { "Min", "axis 1 of (3,4)", gts_min, &ax_1, 1, { M34(-2, 2) }, GG },
    { "Min", "axes (0,1) of (3,4), keepdims", gts_min, &ax_01_keep, 1, { M34(-2, 2) }, GG },
    { "Min", "axes (2,0) of (2,3,4), keepdims", gts_min, &ax_20, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "Min", "of a 0-d", gts_min, &ax_all, 1, { S0(-2, 2) }, GG },
    /* DimShuffle */
    { "DimShuffle", "transpose (3,4)", gts_transpose, NULL, 1, { M34(-2, 2) }, GG },
    { "DimShuffle", "(3,4) -> (1,4,3)", gts_dimshuffle, &pat_newaxis, 1, { M34(-2, 2) }, GG },
    { "DimShuffle", "(3,1) -> (3,): drop", gts_dimshuffle, &pat_drop, 1, { GTD_IN(2, 3, 1, -2, 2) }, GG },
    { "DimShuffle", "0-d -> (1,1)", gts_dimshuffle, &pat_scalar, 1, { S0(-2, 2) }, GG },
    { "DimShuffle", "(2,3,4) -> (4,2,3)", gts_dimshuffle, &pat_3d, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "DimShuffle", "(2,1,4) -> (4,1,2): drop and insert", gts_dimshuffle, &pat_3d_drop, 1, { GTD_IN3(2, 1, 4, -2, 2) }, GG },
    { "DimShuffle", "(3,1) -> (1,3), times (4,1)", gts_dimshuffle_mul, &pat_swap_bcast, 2, { GTD_IN(2, 3, 1, -2, 2), GTD_IN(2, 4, 1, -2, 2) }, GG },
    /* Reshape */
    { "Reshape", "(3,4) -> (2,6)", gts_reshape, &sh_2_6, 1, { M34(-2, 2) }, GG },
    { "Reshape", "(3,4) -> flat", gts_reshape, &sh_flat, 1, { M34(-2, 2) }, GG },
    { "Reshape", "(3,4) -> (2,-1,3)", gts_reshape, &sh_2_m1_3, 1, { M34(-2, 2) }, GG },
    { "Reshape", "(2,3,4) -> (6,4)", gts_reshape, &sh_6_4, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "Reshape", "0-d -> (1,1)", gts_reshape, &sh_1_1, 1, { S0(-2, 2) }, GG },
    { "Reshape", "(1,1) -> 0-d", gts_reshape, &sh_0d, 1, { GTD_IN(2, 1, 1, -2, 2) }, GG },
    { "Reshape", "(4,) -> (2,2), times (2,1)", gts_reshape_mul, &sh_2_2, 2, { V4(-2, 2), GTD_IN(2, 2, 1, -2, 2) }, GG },
    /* BroadcastLike, ReduceLike, ReshapeLike: the reference gives a shape only */
    { "BroadcastLike", "(4,) to (3,4)", gts_broadcast_like, NULL, 2, { V4(-2, 2), M34(-2, 2) }, GG },
    { "BroadcastLike", "(3,1) to (3,4)", gts_broadcast_like, NULL, 2, { GTD_IN(2, 3, 1, -2, 2), M34(-2, 2) }, GG },
    { "BroadcastLike", "0-d to (3,4)", gts_broadcast_like, NULL, 2, { S0(-2, 2), M34(-2, 2) }, GG },
    { "BroadcastLike", "(1,4) to (2,3,4)", gts_broadcast_like, NULL, 2, { GTD_IN(2, 1, 4, -2, 2), GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "BroadcastLike", "(4,) to (3,4), plus sin(ref)", gts_broadcast_like_ref, NULL, 2, { V4(-2, 2), M34(-2, 2) }, GG },
    { "ReduceLike", "(3,4) to (4,)", gts_reduce_like, NULL, 2, { M34(-2, 2), V4(-2, 2) }, GG },
    { "ReduceLike", "(3,4) to (3,1)", gts_reduce_like, NULL, 2, { M34(-2, 2), GTD_IN(2, 3, 1, -2, 2) }, GG },
    { "ReduceLike", "(3,4) to 0-d", gts_reduce_like, NULL, 2, { M34(-2, 2), S0(-2, 2) }, GG },
    { "ReduceLike", "(2,3,4) to (1,4)", gts_reduce_like, NULL, 2, { GTD_IN3(2, 3, 4, -2, 2), GTD_IN(2, 1, 4, -2, 2) }, GG },
    { "ReduceLike", "(3,4) to (4,), times sin(ref)", gts_reduce_like_ref, NULL, 2, { M34(-2, 2), V4(-2, 2) }, GG },
    { "ReshapeLike", "(3,4) like (2,6)", gts_reshape_like, NULL, 2, { M34(-2, 2), GTD_IN(2, 2, 6, -2, 2) }, GG },
    { "ReshapeLike", "(2,3,2) like (12,)", gts_reshape_like, NULL, 2, { GTD_IN3(2, 3, 2, -2, 2), GTD_IN(1, 12, 0, -2, 2) }, GG },
    { "ReshapeLike", "0-d like (1,1)", gts_reshape_like, NULL, 2, { S0(-2, 2), GTD_IN(2, 1, 1, -2, 2) }, GG },
    { "ReshapeLike", "(3,4) like (4,3), times sin(ref)", gts_reshape_like_ref, NULL, 2, { M34(-2, 2), GTD_IN(2, 4, 3, -2, 2) }, GG },
    /* SizeRatio: a function of the shapes only */
    { "SizeRatio", "size(3,4) / size(4,)", gts_size_ratio, NULL, 2, { M34(-2, 2), V4(-2, 2) }, ND },
    { "SizeRatio", "x0 * size(x1) / size(x0)", gts_size_ratio_mul, NULL, 2, { M34(-2, 2), GTD_IN(2, 2, 6, -2, 2) }, GG },
    /* Dot */
    { "Dot", "(3,4).(4,2)", gts_dot, NULL, 2, { M34(-1, 1), GTD_IN(2, 4, 2, -1, 1) }, GG },
    { "Dot", "(4,).(4,2)", gts_dot, NULL, 2, { V4(-1, 1), GTD_IN(2, 4, 2, -1, 1) }, GG },
    { "Dot", "(3,4).(4,)", gts_dot, NULL, 2, { M34(-1, 1), V4(-1, 1) }, GG },
    { "Dot", "(4,).(4,)", gts_dot, NULL, 2, { V4(-1, 1), V4(-1, 1) }, GG },
    { "Dot", "swapped: (3,4).(4,2), input 0 is b", gts_dot_r, NULL, 2, { GTD_IN(2, 4, 2, -1, 1), M34(-1, 1) }, GG },
    { "Dot", "swapped: (3,4).(4,), input 0 is b", gts_dot_r, NULL, 2, { V4(-1, 1), M34(-1, 1) }, GG },
    { "Dot", "swapped: (4,).(4,2), input 0 is b", gts_dot_r, NULL, 2, { GTD_IN(2, 4, 2, -1, 1), V4(-1, 1) }, GG },
    { "Dot", "transpose(4,3).(4,2)", gts_dot_ta, NULL, 2, { GTD_IN(2, 4, 3, -1, 1), GTD_IN(2, 4, 2, -1, 1) }, GG },
    { "Dot", "(3,4).transpose(2,4)", gts_dot_tb, NULL, 2, { M34(-1, 1), GTD_IN(2, 2, 4, -1, 1) }, GG },
    { "Dot", "transpose(4,3).transpose(2,4)", gts_dot_tab, NULL, 2, { GTD_IN(2, 4, 3, -1, 1), GTD_IN(2, 2, 4, -1, 1) }, GG },
    { "Dot", "transpose(4,3).(4,)", gts_dot_ta, NULL, 2, { GTD_IN(2, 4, 3, -1, 1), V4(-1, 1) }, GG },
    { "Dot", "flags: the gradient of a (3,4).(4,2) wrt a: G b^T", gts_dot_grad_a, NULL, 2, { M34(-1, 1), GTD_IN(2, 4, 2, -1, 1) }, GG },
    { "Dot", "flags: the gradient of a (3,4).(4,2) wrt b: a^T G", gts_dot_grad_b, NULL, 2, { M34(-1, 1), GTD_IN(2, 4, 2, -1, 1) }, GG },
    { "Dot", "flags: the gradient of a (3,4).(4,) wrt b: A^T g", gts_dot_grad_b, NULL, 2, { M34(-1, 1), V4(-1, 1) }, GG },
    { "Dot", "flags: the gradient of a (4,).(4,2) wrt a: B g", gts_dot_grad_a, NULL, 2, { V4(-1, 1), GTD_IN(2, 4, 2, -1, 1) }, GG },
    { "Dot", "flags: the gradient of transpose(4,3).(4,2) wrt b", gts_dot_ta_grad_b, NULL, 2, { GTD_IN(2, 4, 3, -1, 1), GTD_IN(2, 4, 2, -1, 1) }, GG },
    /* Softmax, LogSoftmax */
    { "Softmax", "axis 0 of (3,4)", gts_softmax, &axis_0, 1, { M34(-2, 2) }, GG },
    { "Softmax", "axis 1 of (3,4)", gts_softmax, &axis_1, 1, { M34(-2, 2) }, GG },
    { "Softmax", "axis -1 of (3,4)", gts_softmax, &axis_m1, 1, { M34(-2, 2) }, GG },
    { "Softmax", "axis 1 of (2,3,4), times (3,1)", gts_softmax_mul, &axis_1, 2, { GTD_IN3(2, 3, 4, -2, 2), GTD_IN(2, 3, 1, -2, 2) }, GG },
    { "Softmax", "axis 0 of (4,), times (4,)", gts_softmax_mul, &axis_0, 2, { V4(-2, 2), V4(-2, 2) }, GG },
    { "LogSoftmax", "axis 0 of (3,4)", gts_log_softmax, &axis_0, 1, { M34(-2, 2) }, GG },
    { "LogSoftmax", "axis 1 of (3,4)", gts_log_softmax, &axis_1, 1, { M34(-2, 2) }, GG },
    { "LogSoftmax", "axis -1 of (3,4)", gts_log_softmax, &axis_m1, 1, { M34(-2, 2) }, GG },
    { "LogSoftmax", "axis 1 of (2,3,4), times (3,1)", gts_log_softmax_mul, &axis_1, 2, { GTD_IN3(2, 3, 4, -2, 2), GTD_IN(2, 3, 1, -2, 2) }, GG },
    { "LogSoftmax", "axis 0 of (4,), times (4,)", gts_log_softmax_mul, &axis_0, 2, { V4(-2, 2), V4(-2, 2) }, GG },
    /* the gradient-modifying ops (see the comment above their builders) */
    { "ZeroGrad", "x0 * zero_grad(floor(x1)) + sin(x0)", gts_zero_grad, NULL, 2, { M34(-2, 2), V4(0.1, 2.9) }, GG },
    { "ZeroGrad", "x0 * zero_grad(floor(x1)) + sin(x0), 0-d", gts_zero_grad, NULL, 2, { S0(-2, 2), S0(-2.9, -0.1) }, GG },
    { "ConsiderConstant", "x0 * consider_constant(floor(x1)) + sin(x0)", gts_consider_constant, NULL, 2, { M34(-2, 2), V4(0.1, 2.9) }, GG },
    { "DisconnectedGrad", "x0 * disconnected_grad(floor(x1)) + sin(x0)", gts_disconnected_grad, NULL, 2, { M34(-2, 2), V4(0.1, 2.9) }, GG },
    { "DisconnectedGrad", "x0 * disconnected_grad(floor(x1)) + sin(x0), (3,1) (1,4)", gts_disconnected_grad, NULL, 2,
      { GTD_IN(2, 3, 1, -2, 2), GTD_IN(2, 1, 4, -2.9, -0.1) }, GG },
    { "GradClip", "sin(grad_clip(x0, -10, 10)) * x1: never clips", gts_grad_clip, NULL, 2, { M34(-2, 2), V4(-2, 2) }, GG },
    { "GradClip", "the gradient through an active clip, x0 inside (-0.5, 0.5)", gts_grad_clip_active, NULL, 2, { V4(-0.4, 0.4), M34(-2, 2) }, GG },
    { "GradClip", "the gradient through an active clip, x0 above 0.5", gts_grad_clip_active, NULL, 2, { M34(0.6, 2), M34(-2, 2) }, GG },
    { "GradClip", "the gradient through an active clip, x0 below -0.5", gts_grad_clip_active, NULL, 2, { M34(-2, -0.6), V4(-2, 2) }, GG },
    { "GradScale", "grad_scale(grad_scale(sin(x0), 2), 0.5) * x1", gts_grad_scale, NULL, 2, { M34(-2, 2), V4(-2, 2) }, GG },
    { "GradScale", "the gradient through grad_scale(x1, 3): 3 x0", gts_grad_scale_grad, NULL, 2, { M34(-2, 2), M34(-2, 2) }, GG },
    { "GradScale", "the gradient through grad_scale(x1, 3): 3 x0, broadcast", gts_grad_scale_grad, NULL, 2, { V4(-2, 2), M34(-2, 2) }, GG },
    { "UndefinedGrad", "broadcast_like(sin(x0), undefined_grad(x1)): a shape reference", gts_undefined_grad, NULL, 2, { V4(-2, 2), M34(-2, 2) }, GG },
    /* Jacobians */
    { "EyeLike", "jacobian(x, x), (4,): the identity", gts_jac_identity, NULL, 1, { V4(-2, 2) }, ND },
    { "EyeLike", "jacobian(sin(x0) * x1, x0), (4,) (4,)", gts_jac_sin, NULL, 2, { V4(-2, 2), V4(-2, 2) }, GG },
    { "EyeLike", "jacobian(sin(x0) * x1, x0), (4,) 0-d", gts_jac_sin, NULL, 2, { V4(-2, 2), S0(-2, 2) }, GG },
    { "Unflatten", "jacobian(X, X), (2,3): the identity (2,3,2,3)", gts_jac_identity, NULL, 1, { GTD_IN(2, 2, 3, -2, 2) }, ND },
    { "Unflatten", "jacobian(sin(X) * X, X), (2,3)", gts_jac_matrix, NULL, 1, { GTD_IN(2, 2, 3, -2, 2) }, GG },
    { "Unflatten", "jacobian(sin(X) * x1, x1), (3,4) (4,)", gts_jac_bcast, NULL, 2, { M34(-2, 2), V4(-2, 2) }, GG },
    { "Batched", "jacobian(sin(dot(A, x)), x), (3,4) (4,)", gts_jac_dot_x, NULL, 2, { M34(-1, 1), V4(-1, 1) }, GG },
    { "Batched", "jacobian(dot(A, B), A), (3,4) (4,2)", gts_jac_dot_a, NULL, 2, { M34(-1, 1), GTD_IN(2, 4, 2, -1, 1) }, GG },
    { "Batched", "jacobian(tanh(dot(A, B)), B), (3,4) (4,2)", gts_jac_dot_b, NULL, 2, { M34(-1, 1), GTD_IN(2, 4, 2, -1, 1) }, GG },
    { "Batched", "hessian(sum(dot(X, B)^2), X), (2,3) (3,2)", gts_hessian, NULL, 2, { GTD_IN(2, 2, 3, -1, 1), GTD_IN(2, 3, 2, -1, 1) }, GG },
    { "Banded", "hessian(rosenbrock(x), x), (6,)", gts_hess_rosen, NULL, 1, { GTD_IN(1, 6, 0, -1, 1) }, 0 },
    { "Banded", "jacobian(sin(x[2:]) x[:-2] - x[1:-1] / (1 + x[:-2]^2), x), (6,)", gts_jac_band, NULL, 1, { GTD_IN(1, 6, 0, -1, 1) }, 0 },
    { "Banded", "jacobian(x[:1] * x, x), (4,): not banded", gts_jac_first, NULL, 1, { V4(-1, 1) }, 0 },
    /* Slice, Index, Take */
    { "Slice", "rows 1:4 of (5,4)", gts_slice, &sl_rows, 1, { GTD_IN(2, 5, 4, -2, 2) }, GG },
    { "Slice", "columns ::2 of (3,4)", gts_slice, &sl_cols_step, 1, { M34(-2, 2) }, GG },
    { "Slice", "rows ::-1 of (3,4)", gts_slice, &sl_rev, 1, { M34(-2, 2) }, GG },
    { "Slice", "-3:-1 on the last axis of (2,3,4)", gts_slice, &sl_neg, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "Slice", "columns -1:0:-2 of (3,4)", gts_slice, &sl_rev_step, 1, { M34(-2, 2) }, GG },
    { "Slice", "rows 3:1 of (3,4): empty", gts_slice, &sl_empty, 1, { M34(-2, 2) }, GG },
    { "Slice", "columns 1:3 of (3,4)", gts_slice, &sl_mid, 1, { M34(-2, 2) }, GG },
    { "Index", "row 2 of (5,4)", gts_index, &ix_row, 1, { GTD_IN(2, 5, 4, -2, 2) }, GG },
    { "Index", "column -1 of (3,4)", gts_index, &ix_last_col, 1, { M34(-2, 2) }, GG },
    { "Index", "element 0 of (4,): 0-d", gts_index, &ix_first, 1, { V4(-2, 2) }, GG },
    { "Index", "[:, 1] of (2,3,4)", gts_index, &ix_mid, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "Index", "row -1 of columns 3::-1, times (3,)", gts_slice_index, NULL, 2, { M34(-2, 2), GTD_IN(1, 3, 0, -2, 2) }, GG },
    { "Take", "rows [3,0,3,1] of (5,4): repeated", gts_take, &tk_rep, 1, { GTD_IN(2, 5, 4, -2, 2) }, GG },
    { "Take", "columns [[0,3],[3,3]] of (3,4)", gts_take, &tk_2d, 1, { M34(-2, 2) }, GG },
    { "Take", "rows [-1,0,-5] of (5,4): negative", gts_take, &tk_neg, 1, { GTD_IN(2, 5, 4, -2, 2) }, GG },
    { "Take", "element [2] (0-d indices) of (4,)", gts_take, &tk_0d, 1, { V4(-2, 2) }, GG },
    /* ViewUpdate: set and inc on slices and indices, y broadcast */
    { "ViewUpdate", "set rows 1:4 of (5,4) to (3,4)", gts_update, &up_set_rows, 2, { GTD_IN(2, 5, 4, -2, 2), M34(-2, 2) }, GG },
    { "ViewUpdate", "set rows 1:4 of (5,4) to (4,): broadcast", gts_update, &up_set_rows, 2, { GTD_IN(2, 5, 4, -2, 2), V4(-2, 2) }, GG },
    { "ViewUpdate", "inc rows 1:4 of (5,4) by (3,1): broadcast", gts_update, &up_inc_rows, 2, { GTD_IN(2, 5, 4, -2, 2), GTD_IN(2, 3, 1, -2, 2) }, GG },
    { "ViewUpdate", "set columns -1:0:-2 of (3,4) to 0-d", gts_update, &up_set_rev, 2, { M34(-2, 2), S0(-2, 2) }, GG },
    { "ViewUpdate", "inc columns -1:0:-2 of (3,4) by (3,2)", gts_update, &up_inc_rev, 2, { M34(-2, 2), GTD_IN(2, 3, 2, -2, 2) }, GG },
    { "ViewUpdate", "set row 2 of (5,4) to (4,)", gts_update, &up_set_row, 2, { GTD_IN(2, 5, 4, -2, 2), V4(-2, 2) }, GG },
    { "ViewUpdate", "inc column -1 of (3,4) by 0-d", gts_update, &up_inc_col, 2, { M34(-2, 2), S0(-2, 2) }, GG },
    { "ViewUpdate", "set rows 1:4 of (5,4) to sin(rows) * (4,)", gts_update_self, &up_set_rows, 2, { GTD_IN(2, 5, 4, -2, 2), V4(-2, 2) }, GG },
    { "ViewUpdate", "set row 2 of (5,4) to sin(row) * 0-d", gts_update_self, &up_set_row, 2, { GTD_IN(2, 5, 4, -2, 2), S0(-2, 2) }, GG },
    /* TakeUpdate: set with unique indices, inc with repeated ones; set with repeated indices only
       with a constant y */
    { "TakeUpdate", "set rows [4,0,2] of (5,4) to (3,4)", gts_update, &up_set_take, 2, { GTD_IN(2, 5, 4, -2, 2), M34(-2, 2) }, GG },
    { "TakeUpdate", "set rows [4,0,2] of (5,4) to (4,): broadcast", gts_update, &up_set_take, 2, { GTD_IN(2, 5, 4, -2, 2), V4(-2, 2) }, GG },
    { "TakeUpdate", "inc rows [3,0,3,1] of (5,4) by (4,4): repeated", gts_update, &up_inc_take_rep, 2, { GTD_IN(2, 5, 4, -2, 2), GTD_IN(2, 4, 4, -2, 2) }, GG },
    { "TakeUpdate", "inc rows [3,0,3,1] of (5,4) by 0-d: repeated", gts_update, &up_inc_take_rep, 2, { GTD_IN(2, 5, 4, -2, 2), S0(-2, 2) }, GG },
    { "TakeUpdate", "inc columns [[0,3],[3,3]] of (3,4) by (2,1)", gts_update, &up_inc_take_2d, 2, { M34(-2, 2), GTD_IN(2, 2, 1, -2, 2) }, GG },
    { "TakeUpdate", "set rows [3,0,3,1] of (5,4) to a constant: repeated, x only", gts_update_const_y, &up_set_take_rep, 1, { GTD_IN(2, 5, 4, -2, 2) }, GG },
    { "TakeUpdate", "inc rows [3,0,3,1] of (5,4) by a constant", gts_update_const_y, &up_inc_take_rep, 1, { GTD_IN(2, 5, 4, -2, 2) }, GG },
    { "TakeUpdate", "inc columns [2,2,0] of (3,4) by sin(view) * (3,): repeated", gts_update_self, &up_inc_take_mid, 2, { M34(-2, 2), GTD_IN(1, 3, 0, -2, 2) }, GG },
    { "TakeUpdate", "set columns [2,0,3] of (3,4) to (3,1): broadcast", gts_update, &up_set_take_cols, 2, { M34(-2, 2), GTD_IN(2, 3, 1, -2, 2) }, GG },
    { "TakeUpdate", "set columns [2,0,3] of (3,4) to sin(view) * 0-d", gts_update_self, &up_set_take_cols, 2, { M34(-2, 2), S0(-2, 2) }, GG },
    GTD_END
};

/* ==== checks at chosen points, and exact values ========================================================= */

static uint64_t gts_rng = 2024;
static double gts_uniform(double lo, double hi) {
    uint64_t z = (gts_rng += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return lo + (hi - lo) * ((double)(z >> 11) / 9007199254740992.0);
}
static gr_array *gts_array(int ndim, const int64_t *shape, const double *v) {
    gr_array *a = gr_array_new(GR_F64, ndim, shape);
    int64_t k;
    for (k = 0; a && k < a->size; k++) gr_array_set(a, k, v ? v[k] : gts_uniform(-1, 1));
    return a;
}
static double gts_dot_arrays(const gr_array *a, const gr_array *b) {
    double s = 0;
    int64_t k;
    for (k = 0; k < a->size; k++) s += gr_array_get(a, k) * gr_array_get(b, k);
    return s;
}

enum { GTS_VERIFY = 1, GTS_ROP_FD = 2, GTS_GRADGRAD = 4 };

static gr_var *gts_gradgrad_of(gr_graph *g, gr_var *const *x, void *u) {
    const gtd_spec *s = (const gtd_spec *)u;
    gr_var *out = s->build(g, x, s->user);
    return out ? gr_grad1(gr_sum(out), x[0]) : NULL;
}

/* float64 at the points pts (not drawn): with GTS_VERIFY gr_verify_grad, with GTS_GRADGRAD also of
   the gradient of sum(f) with respect to input 0, with GTS_ROP_FD the R-op against central
   differences; always the adjoint identity <u, Rop(v)> = <Lop(u), v> */
static void gts_check_at(const char *what, gr_builder build, void *user, int n, const gr_array *const *pts, int checks) {
    gr_graph *g = gr_graph_new();
    gr_var *ins[4], *vs[4], *all[9], *outs[6], *out, *r = NULL, *u, *lop[4];
    gr_array *va[4], *ua = NULL, *xp[4], *xm[4];
    const gr_array *args[9], *res[6], *fres[1];
    gr_fn *f_out = NULL, *f_all = NULL;
    gtd_spec s;
    int i;
    memset(&s, 0, sizeof s);
    s.build = build;
    s.user = user;
    if (checks & GTS_VERIFY) {
        gr_gradient_error e;
        char buf[1024];
        gr_status st = gr_verify_grad(build, user, n, pts, NULL, &e);
        if (st == GR_ERR_GRADIENT) gr_gradient_error_format(&e, buf, sizeof buf); else snprintf(buf, sizeof buf, "%s", gr_status_string(st));
        CHECK_MSG(st == GR_OK, "%s: gradient: %s", what, buf);
        if (checks & GTS_GRADGRAD) {
            st = gr_verify_grad(gts_gradgrad_of, &s, n, pts, NULL, &e);
            if (st == GR_ERR_GRADIENT) gr_gradient_error_format(&e, buf, sizeof buf); else snprintf(buf, sizeof buf, "%s", gr_status_string(st));
            CHECK_MSG(st == GR_OK, "%s: gradient of the gradient: %s", what, buf);
        }
    }
    for (i = 0; i < n; i++) {
        ins[i] = gr_tensor(g, GR_F64, pts[i]->ndim, pts[i]->shape, NULL);
        vs[i] = gr_tensor(g, GR_F64, pts[i]->ndim, pts[i]->shape, NULL);
        va[i] = gts_array(pts[i]->ndim, pts[i]->shape, NULL);
        xp[i] = gr_array_copy(pts[i]);
        xm[i] = gr_array_copy(pts[i]);
    }
    out = build(g, ins, user);
    f_out = out ? gr_function(n, ins, 1, &out, NULL) : NULL;
    if (!f_out || gr_call(f_out, pts, fres) != GR_OK) { CHECK_MSG(0, "%s: build or call fails: %s", what, gr_graph_message(g)); goto done; }
    ua = gts_array(fres[0]->ndim, fres[0]->shape, NULL);
    u = gr_tensor(g, GR_F64, fres[0]->ndim, fres[0]->shape, NULL);
    if (gr_rop(1, &out, n, ins, vs, &r, NULL) != GR_OK || gr_lop(1, &out, n, ins, &u, lop, NULL) != GR_OK) {
        CHECK_MSG(0, "%s: gr_rop or gr_lop fails: %s", what, gr_graph_message(g));
        goto done;
    }
    for (i = 0; i < n; i++) { all[i] = ins[i]; all[n + i] = vs[i]; args[i] = pts[i]; args[n + i] = va[i]; outs[2 + i] = lop[i]; }
    all[2 * n] = u; args[2 * n] = ua;
    outs[0] = out; outs[1] = r;
    f_all = gr_function(2 * n + 1, all, 2 + n, outs, NULL);
    if (!f_all || gr_call(f_all, args, res) != GR_OK) { CHECK_MSG(0, "%s: the R-op/L-op function fails: %s", what, gr_graph_message(g)); goto done; }
    {
        double lhs = gts_dot_arrays(ua, res[1]), rhs = 0;
        for (i = 0; i < n; i++) rhs += gts_dot_arrays(res[2 + i], va[i]);
        CHECK_MSG(fabs(lhs - rhs) <= 1e-10 * (1 + fabs(lhs) + fabs(rhs)), "%s: <u, Jv> = %.15g but <J^T u, v> = %.15g", what, lhs, rhs);
    }
    if (checks & GTS_ROP_FD) {
        const double h = 1e-5;
        gr_array *rop = gr_array_copy(res[1]), *fp;
        int64_t k;
        for (i = 0; i < n; i++)
            for (k = 0; k < xp[i]->size; k++) {
                gr_array_set(xp[i], k, gr_array_get(pts[i], k) + h * gr_array_get(va[i], k));
                gr_array_set(xm[i], k, gr_array_get(pts[i], k) - h * gr_array_get(va[i], k));
            }
        gr_call(f_out, (const gr_array *const *)xp, fres);
        fp = gr_array_copy(fres[0]);
        gr_call(f_out, (const gr_array *const *)xm, fres);
        for (k = 0; k < rop->size; k++) {
            double fd = (gr_array_get(fp, k) - gr_array_get(fres[0], k)) / (2 * h);
            CHECK_MSG(fabs(fd - gr_array_get(rop, k)) <= 1e-6 * (1 + fabs(fd)), "%s: R-op[%lld] = %.12g, central differences %.12g", what,
                      (long long)k, gr_array_get(rop, k), fd);
        }
        gr_array_free(rop);
        gr_array_free(fp);
    }
done:
    for (i = 0; i < n; i++) { gr_array_free(va[i]); gr_array_free(xp[i]); gr_array_free(xm[i]); }
    gr_array_free(ua);
    gr_fn_free(f_out);
    gr_fn_free(f_all);
    gr_graph_free(g);
}

/* Prod at exact zeros: rows with none, one and two zeros, over an axis and over everything; the
   gradient at a single zero is the product of the others, everything else in such a row is 0 */
static gr_var *gts_prod_rows(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_prod_axis(x[0], 1); }
static gr_var *gts_prod_all(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_prod(x[0]); }
TEST(test_deriv_prod_zeros) {
    static const double v[12] = { 0.5, -1.5, 2.0, 0.75,  1.25, 0.0, -0.5, 2.0,  0.0, 1.5, 0.0, -2.0 };
    static const double one_zero[4] = { 0.5, 0.0, -1.5, 2.0 };
    static const double want[12] = { -2.25, 0.75, -0.5625, -1.5,  0, -1.25, 0, 0,  0, 0, 0, 0 };
    int64_t shape[2] = { 3, 4 }, n4 = 4;
    gr_array *x = gts_array(2, shape, v), *x1 = gts_array(1, &n4, one_zero);
    const gr_array *pts[1];
    pts[0] = x;
    gts_check_at("prod over rows with 0, 1 and 2 zeros", gts_prod_rows, NULL, 1, pts, GTS_VERIFY | GTS_ROP_FD | GTS_GRADGRAD);
    pts[0] = x1;
    gts_check_at("prod of a vector with one zero", gts_prod_all, NULL, 1, pts, GTS_VERIFY | GTS_ROP_FD | GTS_GRADGRAD);
    {   /* the exact gradient */
        gr_graph *g = gr_graph_new();
        gr_var *X = gr_matrix(g, GR_F64, "X"), *d = gr_grad1(gr_sum(gr_prod_axis(X, 1)), X);
        gr_fn *f = gr_function(1, &X, 1, &d, NULL);
        const gr_array *out[1];
        int64_t k;
        pts[0] = x;
        CHECK(f && gr_call(f, pts, out) == GR_OK);
        for (k = 0; f && k < 12; k++) CHECK_NEAR(gr_array_get(out[0], k), want[k], 1e-15);
        gr_fn_free(f);
        gr_graph_free(g);
    }
    {   /* the Hessian at two zeros: H_ij = the product of the elements other than i and j, so only
           the pair of zeros (1, 3) has a nonzero entry, 0.5 * -1.5 */
        static const double two_zeros[4] = { 0.5, 0.0, -1.5, 0.0 }, three_zeros[4] = { 0.0, 2.0, 0.0, 0.0 };
        gr_graph *g = gr_graph_new();
        gr_var *xv = gr_vector(g, GR_F64, "x"), *H = NULL;
        gr_array *a = gts_array(1, &n4, two_zeros), *b = gts_array(1, &n4, three_zeros);
        const gr_array *out[1];
        gr_fn *f;
        int64_t k;
        CHECK_STATUS(gr_hessian(gr_prod(xv), 1, &xv, &H, NULL), GR_OK);
        f = gr_function(1, &xv, 1, &H, NULL);
        pts[0] = a;
        CHECK(f && gr_call(f, pts, out) == GR_OK);
        for (k = 0; f && k < 16; k++) CHECK_NEAR(gr_array_get(out[0], k), (k == 1 * 4 + 3 || k == 3 * 4 + 1) ? -0.75 : 0.0, 1e-15);
        pts[0] = b;
        CHECK(f && gr_call(f, pts, out) == GR_OK);
        for (k = 0; f && k < 16; k++) CHECK_NEAR(gr_array_get(out[0], k), 0.0, 1e-15);
        gts_check_at("prod of a vector with three zeros", gts_prod_all, NULL, 1, pts, GTS_VERIFY | GTS_ROP_FD | GTS_GRADGRAD);
        gr_fn_free(f);
        gr_array_free(a);
        gr_array_free(b);
        gr_graph_free(g);
    }
    gr_array_free(x);
    gr_array_free(x1);
}

/* evaluates outs at the inputs (float64 vectors of n elements) into res[k] (n doubles each) */
static int gts_eval(int n_in, gr_var *const *ins, const double *const *vals, int n, int n_out, gr_var *const *outs, double *res) {
    gr_array *a[4];
    const gr_array *out[8];
    int64_t len = n, k;
    int i, ok;
    gr_fn *f = gr_function(n_in, ins, n_out, outs, NULL);
    for (i = 0; i < n_in; i++) {                    /* in each input's dtype */
        a[i] = gr_array_new(gr_var_dtype(ins[i]), 1, &len);
        for (k = 0; a[i] && k < n; k++) gr_array_set(a[i], k, vals[i][k]);
    }
    ok = f && gr_call(f, (const gr_array *const *)a, out) == GR_OK;
    if (!ok) fprintf(stderr, "gts_eval: %s %s\n", f ? gr_fn_message(f) : "", gr_graph_message(gr_var_graph(ins[0])));
    for (i = 0; ok && i < n_out; i++) {
        ok = out[i]->size == n;
        for (k = 0; ok && k < n; k++) res[i * n + k] = gr_array_get(out[i], k);
    }
    for (i = 0; i < n_in; i++) gr_array_free(a[i]);
    gr_fn_free(f);
    return ok;
}

/* float64 -> float32 and back: the gradient is the cotangent cast back (exactly), the R-op the
   tangent cast forward; finite differences cannot see this in float64 (float32's resolution) */
TEST(test_deriv_cast_exact) {
    static const double xv[3] = { 0.1, -1.0 / 3.0, 2.5 }, wv[3] = { 1.0 / 7.0, 3.0, -0.2 }, vv[3] = { 0.3, -0.7, 1e-3 };
    const double *vals[3];
    double res[3 * 3];
    int dir;
    vals[0] = xv; vals[1] = wv; vals[2] = vv;
    for (dir = 0; dir < 2; dir++) {
        gr_dtype from = dir ? GR_F32 : GR_F64, to = dir ? GR_F64 : GR_F32;
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, from, "x"), *w = gr_vector(g, to, "w"), *v = gr_vector(g, from, "v"), *ins[3], *outs[3], *y, *r = NULL;
        int k;
        y = gr_cast(x, to);
        ins[0] = x; ins[1] = w; ins[2] = v;
        outs[0] = gr_grad1(gr_sum(gr_mul(w, y)), x);
        CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, &r, NULL), GR_OK);
        outs[1] = r;
        CHECK(outs[0] && gr_var_dtype(outs[0]) == from && r && gr_var_dtype(r) == to);
        CHECK(gts_eval(3, ins, vals, 3, 2, outs, res));
        for (k = 0; k < 3; k++) {
            CHECK_NEAR(res[k], (double)(float)wv[k], 0);     /* w is float32, or cast to float32 on the way back */
            CHECK_NEAR(res[3 + k], (double)(float)vv[k], 0);
        }
        gr_graph_free(g);
    }
}

/* the gradient-modifying ops, exactly: their gradients and R-ops (SEMANTICS 11, decision 3) */
TEST(test_deriv_gradops_exact) {
    static const double xv[4] = { 0.5, -1.5, 2.0, 3.0 }, wv[4] = { 2.0, -0.25, 0.75, -3.0 }, vv[4] = { 1.0, 2.0, -0.5, 0.125 };
    const double *vals[3];
    double res[4 * 4];
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *w = gr_vector(g, GR_F64, "w"), *v = gr_vector(g, GR_F64, "v"), *ins[3], *outs[4], *t, *r[2];
    gr_grad_opts o;
    gr_rop_opts ro;
    int k;
    vals[0] = xv; vals[1] = wv; vals[2] = vv;
    ins[0] = x; ins[1] = w; ins[2] = v;
    gr_graph_set_log(g, gts_log_quiet_deprecated, NULL);
    /* zero_grad and consider_constant: x * op(x) differentiates to x; their R-ops are zeros */
    outs[0] = gr_grad1(gr_sum(gr_mul(x, gr_zero_grad(x))), x);
    outs[1] = gr_grad1(gr_sum(gr_mul(x, gr_consider_constant(x))), x);
    t = gr_add(gr_zero_grad(gr_sin(x)), gr_consider_constant(x));
    CHECK_STATUS(gr_rop(1, &t, 1, &x, &v, &r[0], NULL), GR_OK);
    outs[2] = r[0];
    /* grad_clip(x, -1, 1) * w: the gradient is clip(w, -1, 1); the R-op of grad_clip is v */
    outs[3] = gr_grad1(gr_sum(gr_mul(gr_grad_clip(x, -1.0, 1.0), w)), x);
    CHECK(gts_eval(3, ins, vals, 4, 4, outs, res));
    for (k = 0; k < 4; k++) {
        CHECK_NEAR(res[k], xv[k], 0);
        CHECK_NEAR(res[4 + k], xv[k], 0);
        CHECK_NEAR(res[8 + k], 0.0, 0);
        CHECK_NEAR(res[12 + k], wv[k] < -1 ? -1.0 : wv[k] > 1 ? 1.0 : wv[k], 0);
    }
    /* grad_scale(x, -2) * w: -2 w; R-ops: grad_clip gives v, grad_scale m v */
    outs[0] = gr_grad1(gr_sum(gr_mul(gr_grad_scale(x, -2.0), w)), x);
    t = gr_grad_clip(x, -1.0, 1.0);
    CHECK_STATUS(gr_rop(1, &t, 1, &x, &v, &r[0], NULL), GR_OK);
    t = gr_grad_scale(x, -2.0);
    CHECK_STATUS(gr_rop(1, &t, 1, &x, &v, &r[1], NULL), GR_OK);
    outs[1] = r[0]; outs[2] = r[1];
    /* disconnected_grad: x + disconnected_grad(x) differentiates to 1 */
    outs[3] = gr_grad1(gr_sum(gr_add(x, gr_disconnected_grad(gr_mul(x, w)))), x);
    CHECK(gts_eval(3, ins, vals, 4, 4, outs, res));
    for (k = 0; k < 4; k++) {
        CHECK_NEAR(res[k], -2.0 * wv[k], 0);
        CHECK_NEAR(res[4 + k], vv[k], 0);
        CHECK_NEAR(res[8 + k], -2.0 * vv[k], 0);
        CHECK_NEAR(res[12 + k], 1.0, 0);
    }
    /* disconnected_grad alone: the input is disconnected (raise by default, zeros when ignored);
       its R-op has no tangent */
    t = gr_sum(gr_disconnected_grad(x));
    CHECK(gr_grad1(t, x) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_DISCONNECTED_INPUT);
    gr_graph_clear_error(g);
    memset(&o, 0, sizeof o);
    o.disconnected_inputs = GR_IGNORE;
    CHECK_STATUS(gr_grad(t, 1, &x, &outs[0], &o), GR_OK);
    t = gr_disconnected_grad(x);
    CHECK_STATUS(gr_rop(1, &t, 1, &x, &v, &r[0], NULL), GR_ERR_DISCONNECTED_INPUT);
    gr_graph_clear_error(g);
    /* undefined_grad: gr_grad raises GR_ERR_NULL_GRAD; with GR_NULL_RETURN the gradient is null and
       compiling it fails with GR_ERR_GRAD_UNDEFINED; a path through it carries no R-op tangent */
    t = gr_sum(gr_mul(gr_undefined_grad(x), w));
    CHECK(gr_grad1(t, x) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_NULL_GRAD);
    gr_graph_clear_error(g);
    o.null_gradients = GR_NULL_RETURN;
    CHECK_STATUS(gr_grad(t, 1, &x, &outs[0], &o), GR_OK);
    CHECK(gr_is_null(outs[0]));
    CHECK(gr_function(1, &x, 1, &outs[0], NULL) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_GRAD_UNDEFINED);
    gr_graph_clear_error(g);
    {   /* ... while the gradient with respect to w, beside it, is fine: undefined_grad(x) = x */
        gr_var *dw = gr_grad1(t, w);
        t = gr_add(gr_mul(x, w), gr_undefined_grad(gr_sin(x)));
        CHECK_STATUS(gr_rop(1, &t, 1, &x, &v, &r[0], NULL), GR_OK);     /* w v: the sin path adds nothing */
        outs[0] = dw; outs[1] = r[0];
        CHECK(gts_eval(3, ins, vals, 4, 2, outs, res));
        for (k = 0; k < 4; k++) {
            CHECK_NEAR(res[k], xv[k], 0);
            CHECK_NEAR(res[4 + k], wv[k] * vv[k], 0);
        }
        t = gr_undefined_grad(x);
        memset(&ro, 0, sizeof ro);
        CHECK_STATUS(gr_rop(1, &t, 1, &x, &v, &r[0], &ro), GR_ERR_DISCONNECTED_INPUT);
        gr_graph_clear_error(g);
    }
    gr_graph_free(g);
}

/* Max and Min with ties (decision 2): each tied element gets the whole cotangent, the R-op sums the
   tied tangents, so the adjoint identity holds (finite differences do not: a kink) */
static gr_var *gts_max_rows(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_max_axis(x[0], 1); }
static gr_var *gts_min_cols(gr_graph *g, gr_var *const *x, void *u) { (void)g; (void)u; return gr_min_axes(x[0], 1, &axis_0, 1); }
TEST(test_deriv_extrema_ties) {
    static const double v[12] = { 1.0, 2.0, 2.0, -1.0,  0.5, 0.5, 0.5, 0.5,  -3.0, 4.0, 1.0, 4.0 };
    int64_t shape[2] = { 3, 4 };
    gr_array *x = gts_array(2, shape, v);
    const gr_array *pts[1];
    pts[0] = x;
    gts_check_at("max over rows with ties", gts_max_rows, NULL, 1, pts, 0);
    gts_check_at("min over columns with ties, keepdims", gts_min_cols, NULL, 1, pts, 0);
    {
        gr_graph *g = gr_graph_new();
        gr_var *X = gr_matrix(g, GR_F64, "X"), *d = gr_grad1(gr_sum(gr_max_axis(X, 1)), X);
        gr_fn *f = gr_function(1, &X, 1, &d, NULL);
        const gr_array *out[1];
        static const double want[12] = { 0, 1, 1, 0,  1, 1, 1, 1,  0, 1, 0, 1 };
        int64_t k;
        CHECK(f && gr_call(f, pts, out) == GR_OK);
        for (k = 0; f && k < 12; k++) CHECK_NEAR(gr_array_get(out[0], k), want[k], 0);
        gr_fn_free(f);
        gr_graph_free(g);
    }
    gr_array_free(x);
}

/* set_subtensor with repeated take indices: the last write wins, so x's gradient is 0 at every
   written row; y's gradient gives every write the cotangent (Aesara's rule), which is not the
   derivative for an overwritten write: that is why the specs keep y constant there. Pinned here */
TEST(test_deriv_set_repeated) {
    static const int64_t idx[3] = { 1, 1, 0 }, three = 3;
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *i = gts_indices(g, 1, &three, idx), *s, *outs[3], *ins[2];
    static const double xv[3] = { 1, 2, 3 }, yv[3] = { 10, 20, 30 };
    const double *vals[2];
    double res[9];
    s = gr_set_subtensor(gr_take(x, i, 0), y);
    ins[0] = x; ins[1] = y;
    vals[0] = xv; vals[1] = yv;
    outs[0] = s;
    outs[1] = gr_grad1(gr_sum(gr_mul(s, gr_const(g, 2.0))), x);
    outs[2] = gr_grad1(gr_sum(gr_mul(s, gr_const(g, 2.0))), y);
    CHECK(gts_eval(2, ins, vals, 3, 3, outs, res));
    CHECK_NEAR(res[0], 30, 0); CHECK_NEAR(res[1], 20, 0); CHECK_NEAR(res[2], 3, 0);   /* x[1] = 10 then 20 */
    CHECK_NEAR(res[3], 0, 0); CHECK_NEAR(res[4], 0, 0); CHECK_NEAR(res[5], 2, 0);
    CHECK_NEAR(res[6], 2, 0); CHECK_NEAR(res[7], 2, 0); CHECK_NEAR(res[8], 2, 0);     /* y[0] is overwritten, yet gets 2 */
    gr_graph_free(g);
}

/* a Batched node made when the graph's node array is full: its type rule builds a node of its own
   (a heap overflow before the fix; test-san sees it), then the Jacobian's values and its gradient */
TEST(test_deriv_batched_at_capacity) {
    static const double av[6] = { 1, 2, 3, 4, 5, 6 }, xv[3] = { 0.5, -1, 2 };
    int k;
    for (k = 0; k < 140; k++) {
        gr_graph *g = gr_graph_new();
        gr_var *A = gr_matrix(g, GR_F64, "A"), *x = gr_vector(g, GR_F64, "x"), *t = x, *J = NULL, *dA, *ins[2], *outs[2];
        int64_t as[2] = { 2, 3 }, n3 = 3, i;
        gr_array *a = gr_array_from(GR_F64, 2, as, av), *xa = gr_array_from(GR_F64, 1, &n3, xv);
        const gr_array *in[2], *out[2];
        gr_fn *f;
        for (i = 0; i < k; i++) t = gr_neg(t);          /* k nodes before the Jacobian's */
        CHECK_STATUS(gr_jacobian(gr_dot(A, t), 1, &x, &J, NULL), GR_OK);
        dA = gr_grad1(gr_sum(gr_sqr(J)), A);            /* through Batched's gradient */
        ins[0] = A; ins[1] = x; outs[0] = J; outs[1] = dA;
        in[0] = a; in[1] = xa;
        f = gr_function(2, ins, 2, outs, NULL);
        CHECK(f && gr_call(f, in, out) == GR_OK);
        for (i = 0; f && i < 6; i++) {
            double sign = (k % 2) ? -1.0 : 1.0;
            CHECK_NEAR(gr_array_get(out[0], i), sign * av[i], 0);
            CHECK_NEAR(gr_array_get(out[1], i), 2 * av[i], 0);
        }
        gr_fn_free(f);
        gr_array_free(a);
        gr_array_free(xa);
        gr_graph_free(g);
    }
}

SUITE(suite_deriv_struct) = { CASE(test_deriv_prod_zeros), CASE(test_deriv_cast_exact), CASE(test_deriv_gradops_exact),
                              CASE(test_deriv_extrema_ties), CASE(test_deriv_set_repeated), CASE(test_deriv_batched_at_capacity),
                              END_SUITE };
