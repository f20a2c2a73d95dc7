/* tests/ops_shape.c: the ops of ops/shape.c: DimShuffle (permute, insert and drop axes), Reshape,
   the "like" ops gradients use (BroadcastLike, ReduceLike, ReshapeLike, SizeRatio), and joining,
   splitting and tiling (Join, Split, BroadcastTo, Tile and its adjoint Untile).
     - values against plain-C loops in F64, F32, I64 and BOOL, with static and call-time shapes,
       empty and 0-d operands; gr_transpose, gr_flatten, gr_stack, gr_zeros_like, gr_ones_like and
       gr_arange through the same rows;
     - derivative specs of every row; the gradient of a split whose outputs do not all reach the
       cost (Aesara#1200), R-ops with missing tangents; Jacobians and Hessians through every
       batching rule (suite_ops_shape);
     - the errors of the constructors, at build time and at call time. */
#include "ops.h"

/* ==== DimShuffle ========================================================================================= */


/* y = x seen through pattern (GR_NEWAXIS: a new axis of size 1; axes of x left out have size 1) */
static gr_array *gts_dimshuffle_ref(const gr_array *x, int n, const int *pattern) {
    int64_t yshape[GR_MAX_NDIM], xstride[GR_MAX_NDIM], s = 1, k;
    int i;
    gr_array *want;
    for (i = x->ndim - 1; i >= 0; i--) { xstride[i] = s; s *= x->shape[i]; }
    for (i = 0; i < n; i++) yshape[i] = pattern[i] == GR_NEWAXIS ? 1 : x->shape[pattern[i]];
    want = gts_want(x->dtype, n, yshape);
    for (k = 0; k < want->size; k++) {
        int64_t rem = k, xk = 0;
        for (i = n - 1; i >= 0; i--) {
            int64_t yi = rem % yshape[i];
            rem /= yshape[i];
            if (pattern[i] != GR_NEWAXIS) xk += yi * xstride[pattern[i]];
        }
        gts_copy_elem(want, k, x, xk);
    }
    return want;
}

typedef struct gts_ds { int ndim; int64_t shape[3]; int n; int pattern[5]; int dyn_ok; } gts_ds;

TEST(gts_op_DimShuffle) {
    static const gts_ds cases[] = {
        { 2, { 2, 3 }, 3, { 1, GR_NEWAXIS, 0 }, 1 },
        { 3, { 2, 1, 3 }, 2, { 2, 0 }, 0 },                       /* drops the broadcastable axis 1 */
        { 3, { 2, 3, 4 }, 3, { 2, 0, 1 }, 1 },
        { 3, { 2, 3, 4 }, 3, { 0, 2, 1 }, 1 },
        { 3, { 2, 3, 4 }, 3, { 1, 0, 2 }, 1 },
        { 3, { 2, 3, 4 }, 5, { GR_NEWAXIS, 2, GR_NEWAXIS, 1, 0 }, 1 },
        { 3, { 2, 33, 35 }, 3, { 0, 2, 1 }, 1 },                  /* batched inner transpose, past one 32-tile */
        { 0, { 0 }, 2, { GR_NEWAXIS, GR_NEWAXIS }, 1 },
        { 1, { 5 }, 2, { GR_NEWAXIS, 0 }, 1 },                     /* same memory order: may alias */
        { 1, { 5 }, 2, { 0, GR_NEWAXIS }, 1 },
        { 2, { 0, 3 }, 2, { 1, 0 }, 1 },
        { 2, { 1, 1 }, 1, { 1 }, 0 },
        { 2, { 1, 4 }, 1, { 1 }, 0 },
    };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 5;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gts_ds *cs = &cases[c];
                gr_dtype dt = gts_dtypes[d];
                gr_graph *g;
                gr_var *x;
                gr_array *xa, *want;
                char label[128];
                if (dyn && !cs->dyn_ok) continue;
                g = gr_graph_new();
                x = gtf_input(g, dt, cs->ndim, cs->shape, dyn, "x");
                xa = gts_random(&rng, dt, cs->ndim, cs->shape, -5, 5, -99, 99);
                want = gts_dimshuffle_ref(xa, cs->n, cs->pattern);
                snprintf(label, sizeof label, "gr_dimshuffle case %d, %s, %s", c, gr_dtype_name(dt), dyn ? "unknown shape" : "static shape");
                gts_expect1(g, x, xa, gr_dimshuffle(x, cs->n, cs->pattern), dt, want, 0, label);
                gr_array_free(want);
                gr_array_free(xa);
                gr_graph_free(g);
            }
    {   /* a partly known shape: the dropped axis is known to be 1, the others come at call time */
        int64_t part[3] = { -1, 1, -1 }, real[3] = { 4, 1, 5 };
        static const int pat[2] = { 2, 0 };
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_tensor(g, GR_F64, 3, part, "x");
        gr_array *xa = gts_random(&rng, GR_F64, 3, real, -1, 1, 0, 0), *want = gts_dimshuffle_ref(xa, 2, pat);
        gts_expect1(g, x, xa, gr_dimshuffle(x, 2, pat), GR_F64, want, 0, "gr_dimshuffle dropping a static 1 of (?,1,?)");
        /* dropping an axis whose static size is not 1 is refused */
        CHECK(gr_dimshuffle(gr_matrix(g, GR_F64, "m"), 1, pat + 1) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        gr_array_free(xa);
        gr_array_free(want);
        gr_graph_free(g);
    }
}

/* gr_transpose reverses the axes: 2-d (past the 32x32 tiles) and 3-d, every dtype */
TEST(test_transpose) {
    static const gts_ds cases[] = {
        { 2, { 3, 5 }, 0, { 0 }, 1 }, { 2, { 37, 45 }, 0, { 0 }, 1 }, { 3, { 2, 3, 4 }, 0, { 0 }, 1 },
        { 3, { 3, 34, 33 }, 0, { 0 }, 1 }, { 1, { 6 }, 0, { 0 }, 1 }, { 0, { 0 }, 0, { 0 }, 1 }, { 2, { 0, 4 }, 0, { 0 }, 1 },
    };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 6;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gts_ds *cs = &cases[c];
                gr_dtype dt = gts_dtypes[d];
                gr_graph *g = gr_graph_new();
                gr_var *x = gtf_input(g, dt, cs->ndim, cs->shape, dyn, "x");
                gr_array *xa = gts_random(&rng, dt, cs->ndim, cs->shape, -5, 5, -99, 99), *want;
                int rev[3], i;
                char label[128];
                for (i = 0; i < cs->ndim; i++) rev[i] = cs->ndim - 1 - i;
                want = gts_dimshuffle_ref(xa, cs->ndim, rev);
                snprintf(label, sizeof label, "gr_transpose case %d, %s, %s", c, gr_dtype_name(dt), dyn ? "unknown shape" : "static shape");
                gts_expect1(g, x, xa, gr_transpose(x), dt, want, 0, label);
                gr_array_free(want);
                gr_array_free(xa);
                gr_graph_free(g);
            }
}

TEST(test_dimshuffle_drop) {
    gr_graph *g = gr_graph_new();
    int64_t s13[2] = { 1, 3 };
    gr_var *x = e_const_mat(g, 2, 3), *o = gr_tensor(g, GR_F64, 2, s13, "o"), *m = gr_matrix(g, GR_F64, "m"), *y;
    int keep1[1] = { 1 }, swap[2] = { 1, 0 };
    gr_type t;
    gr_var_set_name(x, "x23");
    CHECK(gr_dimshuffle(x, 1, keep1) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_dimshuffle");
    CHECK_CONTAINS(gr_graph_message(g), "'x23'");
    gr_graph_clear_error(g);
    CHECK(gr_dimshuffle(m, 1, keep1) == NULL);          /* unknown size: not known to be 1 */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    y = gr_dimshuffle(o, 1, keep1);                     /* static size 1: may be dropped */
    CHECK(y != NULL && gr_var_type(y, &t) && t.ndim == 1 && t.shape[0] == 3);
    y = gr_dimshuffle(x, 2, swap);
    CHECK(y != NULL && gr_var_type(y, &t) && t.shape[0] == 3 && t.shape[1] == 2);
    CHECK_OK_GRAPH(g);
    gr_graph_free(g);
}

/* a pattern naming an axis twice, out of range, negative, NULL or too long: GR_ERR_VALUE */
TEST(test_dimshuffle_bad_pattern) {
    gr_graph *g = gr_graph_new();
    gr_var *m = gr_matrix(g, GR_F64, "m");
    int rep[2] = { 0, -2 }, oor[2] = { 0, 2 }, two[2] = { 1, 0 }, twice[2] = { 1, 1 };
    CHECK(gr_dimshuffle(m, 2, rep) == NULL);            /* -2 is not an axis in a pattern */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    gr_graph_clear_error(g);
    CHECK(gr_dimshuffle(m, 2, twice) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_dimshuffle");
    CHECK_CONTAINS(gr_graph_message(g), "repeated");
    gr_graph_clear_error(g);
    CHECK(gr_dimshuffle(m, 2, oor) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE); gr_graph_clear_error(g);
    CHECK(gr_dimshuffle(m, 9, two) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE); gr_graph_clear_error(g);
    CHECK(gr_dimshuffle(m, 2, NULL) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE); gr_graph_clear_error(g);
    CHECK(gr_dimshuffle(m, 2, two) != NULL);
    CHECK_OK_GRAPH(g);
    gr_graph_free(g);
}

/* ==== Reshape ============================================================================================ */


typedef struct gts_rs { int ndim; int64_t shape[3]; int nd; int64_t to[4]; int ond; int64_t out[4]; } gts_rs;

TEST(gts_op_Reshape) {
    static const gts_rs cases[] = {
        { 3, { 2, 3, 4 }, 2, { 4, -1 }, 2, { 4, 6 } },
        { 3, { 2, 3, 4 }, 1, { 24 }, 1, { 24 } },
        { 3, { 2, 3, 4 }, 3, { -1, 2, 3 }, 3, { 4, 2, 3 } },
        { 3, { 2, 3, 4 }, 4, { 2, -1, 2, 3 }, 4, { 2, 2, 2, 3 } },
        { 2, { 1, 1 }, 0, { 0 }, 0, { 0 } },
        { 0, { 0 }, 1, { 1 }, 1, { 1 } },
        { 0, { 0 }, 3, { 1, -1, 1 }, 3, { 1, 1, 1 } },
        { 2, { 0, 3 }, 2, { 3, -1 }, 2, { 3, 0 } },
        { 2, { 0, 3 }, 1, { -1 }, 1, { 0 } },
        { 1, { 6 }, 2, { 3, 2 }, 2, { 3, 2 } },
    };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 8;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gts_rs *cs = &cases[c];
                gr_dtype dt = gts_dtypes[d];
                gr_graph *g = gr_graph_new();
                gr_var *x = gtf_input(g, dt, cs->ndim, cs->shape, dyn, "x"), *y;
                gr_array *xa = gts_random(&rng, dt, cs->ndim, cs->shape, -5, 5, -99, 99), *want = gts_want(dt, cs->ond, cs->out);
                int64_t k;
                char label[128];
                for (k = 0; k < want->size; k++) gts_copy_elem(want, k, xa, k);
                snprintf(label, sizeof label, "gr_reshape case %d, %s, %s", c, gr_dtype_name(dt), dyn ? "unknown shape" : "static shape");
                y = gr_reshape(x, cs->nd, cs->to);
                gts_expect1(g, x, xa, y, dt, want, 0, label);
                if (!dyn && y) gtf_static_shape_is(y, cs->ond, cs->out, label);
                if (cs->ndim > 0) {          /* gr_flatten: the same elements in one axis */
                    gr_array *wf = gts_want(dt, 1, &xa->size);
                    for (k = 0; k < wf->size; k++) gts_copy_elem(wf, k, xa, k);
                    snprintf(label, sizeof label, "gr_flatten case %d, %s, %s", c, gr_dtype_name(dt), dyn ? "unknown shape" : "static shape");
                    gts_expect1(g, x, xa, gr_flatten(x), dt, wf, 0, label);
                    gr_array_free(wf);
                }
                gr_array_free(want);
                gr_array_free(xa);
                gr_graph_free(g);
            }
    {   /* impossible shapes: at build time when known, else at call time; two -1 is a bad argument */
        int64_t s23[2] = { 2, 3 }, four = 4, two_free[2] = { -1, -1 };
        gr_graph *g = gr_graph_new();
        gr_var *xs = gr_tensor(g, GR_F64, 2, s23, "xs"), *xd = gr_matrix(g, GR_F64, "xd");
        gr_array *xa = gr_array_new(GR_F64, 2, s23);
        const gr_array *arr[1];
        CHECK(gr_reshape(xs, 1, &four) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
        gr_graph_clear_error(g);
        CHECK(gr_reshape(xd, 2, two_free) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        gr_graph_clear_error(g);
        arr[0] = xa;
        gtf_expect_call_error(g, 1, &xd, arr, gr_reshape(xd, 1, &four), GR_ERR_SHAPE, "gr_reshape (2,3) -> (4,) at call time");
        gr_array_free(xa);
        gr_graph_free(g);
    }
}

TEST(test_reshape_errors) {
    gr_graph *g = gr_graph_new();
    gr_var *x = e_const_mat(g, 2, 3), *u = gr_vector(g, GR_F64, "u"), *y;
    int64_t two_free[2] = { -1, -1 }, s42[2] = { 4, 2 }, sm14[2] = { -1, 4 }, s0m1[2] = { 0, -1 }, s3m1[2] = { 3, -1 };
    int64_t bad_neg[2] = { 2, -3 };
    gr_type t;
    gr_var_set_name(x, "x23");
    CHECK(gr_reshape(x, 2, two_free) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_reshape");
    CHECK_CONTAINS(gr_graph_message(g), "'x23'");
    gr_graph_clear_error(g);
    CHECK(gr_reshape(x, 2, s42) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_reshape");
    CHECK_CONTAINS(gr_graph_message(g), "(2,3)");
    CHECK_CONTAINS(gr_graph_message(g), "(4,2)");
    gr_graph_clear_error(g);
    CHECK(gr_reshape(x, 2, sm14) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE); gr_graph_clear_error(g);
    CHECK(gr_reshape(x, 2, s0m1) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE); gr_graph_clear_error(g);
    CHECK(gr_reshape(x, 2, bad_neg) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE); gr_graph_clear_error(g);
    CHECK(gr_reshape(x, 9, s42) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE); gr_graph_clear_error(g);
    CHECK(gr_reshape(x, 2, NULL) == NULL); CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE); gr_graph_clear_error(g);
    y = gr_reshape(x, 2, s3m1);
    CHECK(y != NULL && gr_var_type(y, &t) && t.ndim == 2 && t.shape[0] == 3 && t.shape[1] == 2);
    /* an unknown shape is checked at call time */
    y = gr_reshape(u, 2, sm14);
    CHECK(y != NULL && gr_var_type(y, &t) && t.shape[0] == -1 && t.shape[1] == 4);
    CHECK_OK_GRAPH(g);
    {
        gr_fn *f = gr_function(1, &u, 1, &y, NULL);
        gr_array *a6 = e_ramp(6), *a8 = e_ramp(8);
        const gr_array *in[1], *out[1];
        CHECK(f != NULL);
        in[0] = a6;
        CHECK_STATUS(gr_call(f, in, out), GR_ERR_SHAPE);
        CHECK_CONTAINS(gr_fn_message(f), "Reshape");
        CHECK_CONTAINS(gr_fn_message(f), "'u'");
        in[0] = a8;
        CHECK_STATUS(gr_call(f, in, out), GR_OK);
        CHECK(strcmp(gr_fn_message(f), "") == 0);
        CHECK(out[0]->ndim == 2 && out[0]->shape[0] == 2 && out[0]->shape[1] == 4);
        CHECK_NEAR(gr_array_get(out[0], 5), 5.5, 0);
        gr_array_free(a6); gr_array_free(a8);
        gr_fn_free(f);
    }
    gr_graph_free(g);
}

#include "forward.h"

static const gr_dtype gs2_dtypes[4] = { GR_F64, GR_F32, GR_I64, GR_BOOL };

static int gs2_is_float(gr_dtype dt) { return dt == GR_F64 || dt == GR_F32; }

/* an expected-value array for results of dtype dt: I64 for integers and bools, else F64 */
static gr_array *gs2_want(gr_dtype dt, int ndim, const int64_t *shape) {
    return gr_array_new(gs2_is_float(dt) ? GR_F64 : GR_I64, ndim, shape);
}
/* want[k] = x[xk], exactly */
static void gs2_copy(gr_array *want, int64_t k, const gr_array *x, int64_t xk) {
    if (want->dtype == GR_I64)
        ((int64_t *)want->data)[k] = x->dtype == GR_I64 ? ((const int64_t *)x->data)[xk]
                                   : x->dtype == GR_BOOL ? (int64_t)((const uint8_t *)x->data)[xk] : (int64_t)gr_array_get(x, xk);
    else ((double *)want->data)[k] = gr_array_get(x, xk);
}
/* the multi-index of flat index k in shape */
static void gs2_unflat(int64_t k, int nd, const int64_t *shape, int64_t *idx) {
    int d;
    for (d = nd - 1; d >= 0; d--) { idx[d] = shape[d] ? k % shape[d] : 0; k = shape[d] ? k / shape[d] : 0; }
}
static int64_t gs2_flat(int nd, const int64_t *shape, const int64_t *idx) {
    int64_t k = 0;
    int d;
    for (d = 0; d < nd; d++) k = k * shape[d] + idx[d];
    return k;
}
/* one-input gtf_expect */
static int gs2_expect1(gr_graph *g, gr_var *x, const gr_array *xa, gr_var *y, gr_dtype dt, const gr_array *want, const char *label) {
    const gr_array *arr[1];
    arr[0] = xa;
    return gtf_expect(g, 1, &x, arr, y, dt, want, 0, label);
}
/* the graph's error is `code` and its message names `needle`; the error is cleared */
static void gs2_err(gr_graph *g, gr_status code, const char *needle) {
    CHECK_STATUS(gr_graph_status(g), code);
    CHECK_CONTAINS(gr_graph_message(g), needle);
    gr_graph_clear_error(g);
}
static void gs2_quiet(void *user, const char *message) { (void)user; (void)message; }

/* gr_flatten (a Reshape) and gr_cast meet the API */
TEST(test_flatten_cast_api) {
    gr_graph *g = gr_graph_new();
    gr_var *s = gr_scalar(g, GR_F64, "s"), *t = gr_tensor(g, GR_I64, 3, NULL, "t"), *f;
    gr_array *sa = gr_array_scalar(GR_F64, -2.7), *want, *ta;
    int64_t one = 1, st[3] = { 2, 3, 4 }, n24 = 24, k;
    f = gr_flatten(s);                                   /* 0-d: one element */
    CHECK_EQ_INT(gr_var_ndim(f), 1);
    want = gr_array_new(GR_F64, 1, &one);
    ((double *)want->data)[0] = -2.7;
    gs2_expect1(g, s, sa, f, GR_F64, want, "gr_flatten of a 0-d");
    gr_array_free(want);
    want = gr_array_new(GR_I64, 0, NULL);
    ((int64_t *)want->data)[0] = -2;                     /* truncates toward zero */
    gs2_expect1(g, s, sa, gr_cast(s, GR_I64), GR_I64, want, "gr_cast(-2.7) to int64");
    gr_array_free(want);
    ta = gr_array_new(GR_I64, 3, st);
    want = gr_array_new(GR_I64, 1, &n24);
    for (k = 0; k < 24; k++) ((int64_t *)ta->data)[k] = ((int64_t *)want->data)[k] = 3 * k - 7;
    gs2_expect1(g, t, ta, gr_flatten(t), GR_I64, want, "gr_flatten (2,3,4)");
    CHECK(gr_flatten(NULL) == NULL && gr_cast(NULL, GR_F32) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    gr_array_free(ta); gr_array_free(want); gr_array_free(sa);
    gr_graph_free(g);
}

/* ==== BroadcastLike, ReduceLike, ReshapeLike, SizeRatio ================================================= */


typedef struct gts_pair { int xnd; int64_t xs[3]; int rnd; int64_t rs[3]; } gts_pair;

/* x and ref as inputs of dtype dt and (for ref) rdt, static or unknown shapes */
static void gts_pair_inputs(gr_graph *g, const gts_pair *p, gr_dtype dt, gr_dtype rdt, int dyn, gtf_rng *rng, gr_var **ins,
                            gr_array **arr) {
    ins[0] = gtf_input(g, dt, p->xnd, p->xs, dyn, "x");
    ins[1] = gtf_input(g, rdt, p->rnd, p->rs, dyn, "ref");
    arr[0] = gts_random(rng, dt, p->xnd, p->xs, -5, 5, -99, 99);
    arr[1] = gts_random(rng, rdt, p->rnd, p->rs, -5, 5, -99, 99);
}

TEST(gts_op_BroadcastLike) {
    static const gts_pair cases[] = {
        { 1, { 4 }, 2, { 3, 4 } }, { 2, { 3, 1 }, 2, { 3, 4 } }, { 0, { 0 }, 2, { 2, 3 } }, { 2, { 1, 4 }, 3, { 2, 3, 4 } },
        { 3, { 2, 1, 1 }, 3, { 2, 3, 4 } }, { 2, { 3, 4 }, 2, { 3, 4 } }, { 1, { 1 }, 1, { 0 } }, { 1, { 3 }, 2, { 0, 3 } },
        { 0, { 0 }, 0, { 0 } },
    };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 9;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gts_pair *p = &cases[c];
                gr_dtype dt = gts_dtypes[d], rdt = gts_dtypes[(d + 1) % 4];     /* ref's dtype does not matter */
                gr_graph *g = gr_graph_new();
                gr_var *ins[2];
                gr_array *arr[2], *want = gts_want(dt, p->rnd, p->rs);
                int64_t k;
                char label[128];
                gts_pair_inputs(g, p, dt, rdt, dyn, &rng, ins, arr);
                for (k = 0; k < want->size; k++) gts_copy_elem(want, k, arr[0], gtf_bcast_index(k, p->rnd, p->rs, p->xnd, p->xs));
                snprintf(label, sizeof label, "gr_broadcast_like case %d, %s, %s", c, gr_dtype_name(dt), dyn ? "unknown shapes" : "static shapes");
                gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_broadcast_like(ins[0], ins[1]), dt, want, 0, label);
                gr_array_free(want);
                gr_array_free(arr[0]);
                gr_array_free(arr[1]);
                gr_graph_free(g);
            }
    {   /* shapes that do not broadcast */
        int64_t s3 = 3, s34[2] = { 3, 4 };
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *r = gr_matrix(g, GR_F64, "r"), *ins[2];
        gr_array *arr[2];
        CHECK(gr_broadcast_like(gr_tensor(g, GR_F64, 1, &s3, "xs"), gr_tensor(g, GR_F64, 2, s34, "rs")) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
        gr_graph_clear_error(g);
        ins[0] = x; ins[1] = r;
        arr[0] = gr_array_new(GR_F64, 1, &s3);
        arr[1] = gr_array_new(GR_F64, 2, s34);
        gtf_expect_call_error(g, 2, ins, (const gr_array *const *)arr, gr_broadcast_like(x, r), GR_ERR_SHAPE, "gr_broadcast_like (3,) to (3,4)");
        gr_array_free(arr[0]);
        gr_array_free(arr[1]);
        gr_graph_free(g);
    }
}

TEST(gts_op_ReduceLike) {
    static const gts_pair cases[] = {
        { 2, { 3, 4 }, 1, { 4 } }, { 2, { 3, 4 }, 2, { 3, 1 } }, { 3, { 2, 3, 4 }, 0, { 0 } }, { 3, { 2, 3, 4 }, 2, { 3, 1 } },
        { 3, { 2, 3, 4 }, 3, { 1, 1, 4 } }, { 2, { 3, 4 }, 2, { 3, 4 } }, { 2, { 0, 3 }, 1, { 3 } }, { 2, { 3, 0 }, 2, { 3, 1 } },
        { 3, { 2, 3, 4 }, 3, { 2, 1, 4 } }, { 0, { 0 }, 0, { 0 } },
    };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 10;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gts_pair *p = &cases[c];
                gr_dtype dt = gts_dtypes[d], rdt = gts_dtypes[(d + 2) % 4];
                gr_dtype odt = dt == GR_BOOL ? GR_I64 : dt;           /* bools are counted, as by gr_sum */
                gr_graph *g = gr_graph_new();
                gr_var *ins[2];
                gr_array *arr[2], *want = gts_want(odt, p->rnd, p->rs);
                int64_t k;
                char label[128];
                gts_pair_inputs(g, p, dt, rdt, dyn, &rng, ins, arr);
                for (k = 0; k < arr[0]->size; k++) {
                    int64_t o = gtf_bcast_index(k, p->xnd, p->xs, p->rnd, p->rs);
                    if (want->dtype == GR_I64) ((int64_t *)want->data)[o] += gts_int_at(arr[0], k);
                    else ((double *)want->data)[o] += gr_array_get(arr[0], k);
                }
                snprintf(label, sizeof label, "gr_reduce_like case %d, %s, %s", c, gr_dtype_name(dt), dyn ? "unknown shapes" : "static shapes");
                gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_reduce_like(ins[0], ins[1]), odt, want, gts_tol(odt), label);
                gr_array_free(want);
                gr_array_free(arr[0]);
                gr_array_free(arr[1]);
                gr_graph_free(g);
            }
}

TEST(gts_op_ReshapeLike) {
    static const gts_pair cases[] = {
        { 2, { 2, 6 }, 2, { 3, 4 } }, { 1, { 6 }, 2, { 2, 3 } }, { 1, { 1 }, 0, { 0 } }, { 2, { 0, 3 }, 2, { 3, 0 } },
        { 3, { 2, 3, 4 }, 1, { 24 } },
    };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 11;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gts_pair *p = &cases[c];
                gr_dtype dt = gts_dtypes[d], rdt = gts_dtypes[(d + 3) % 4];
                gr_graph *g = gr_graph_new();
                gr_var *ins[2];
                gr_array *arr[2], *want = gts_want(dt, p->rnd, p->rs);
                int64_t k;
                char label[128];
                gts_pair_inputs(g, p, dt, rdt, dyn, &rng, ins, arr);
                for (k = 0; k < want->size; k++) gts_copy_elem(want, k, arr[0], k);
                snprintf(label, sizeof label, "gr_reshape_like case %d, %s, %s", c, gr_dtype_name(dt), dyn ? "unknown shapes" : "static shapes");
                gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_reshape_like(ins[0], ins[1]), dt, want, 0, label);
                gr_array_free(want);
                gr_array_free(arr[0]);
                gr_array_free(arr[1]);
                gr_graph_free(g);
            }
    {   /* sizes that differ: at build time when known, else at call time */
        int64_t s6 = 6, s5 = 5;
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *r = gr_vector(g, GR_F64, "r"), *ins[2];
        gr_array *arr[2];
        CHECK(gr_reshape_like(gr_tensor(g, GR_F64, 1, &s6, "xs"), gr_tensor(g, GR_F64, 1, &s5, "rs")) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
        gr_graph_clear_error(g);
        ins[0] = x; ins[1] = r;
        arr[0] = gr_array_new(GR_F64, 1, &s6);
        arr[1] = gr_array_new(GR_F64, 1, &s5);
        gtf_expect_call_error(g, 2, ins, (const gr_array *const *)arr, gr_reshape_like(x, r), GR_ERR_SHAPE, "gr_reshape_like (6,) as (5,)");
        gr_array_free(arr[0]);
        gr_array_free(arr[1]);
        gr_graph_free(g);
    }
}

TEST(gts_op_SizeRatio) {
    static const gts_pair cases[] = {
        { 3, { 2, 3, 4 }, 2, { 3, 4 } }, { 3, { 2, 3, 4 }, 1, { 5 } }, { 0, { 0 }, 2, { 2, 2 } }, { 2, { 0, 3 }, 1, { 2 } },
        { 1, { 7 }, 0, { 0 } }, { 1, { 3 }, 2, { 0, 4 } },
    };
    gtf_rng rng;
    int c, d, dyn;
    rng.s = 12;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (d = 0; d < 2; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gts_pair *p = &cases[c];
                gr_dtype odt = gts_dtypes[d];
                gr_graph *g = gr_graph_new();
                gr_var *ins[2];
                gr_array *arr[2], *want = gr_array_new(GR_F64, 0, NULL);
                char label[128];
                gts_pair_inputs(g, p, GR_I64, GR_BOOL, dyn, &rng, ins, arr);    /* the inputs' dtypes do not matter */
                /* size(a) / size(b); 0 when b is empty (the ratio is only used to scale gradients of empty means) */
                ((double *)want->data)[0] = arr[1]->size ? (double)arr[0]->size / (double)arr[1]->size : 0.0;
                snprintf(label, sizeof label, "gr_size_ratio case %d, %s, %s", c, gr_dtype_name(odt), dyn ? "unknown shapes" : "static shapes");
                gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_size_ratio(ins[0], ins[1], odt), odt, want, 0, label);
                gr_array_free(want);
                gr_array_free(arr[0]);
                gr_array_free(arr[1]);
                gr_graph_free(g);
            }
    {
        gr_graph *g = gr_graph_new();
        gr_var *a = gr_vector(g, GR_F64, "a");
        CHECK(gr_size_ratio(a, a, GR_I64) == NULL);
        CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
        gr_graph_free(g);
    }
}

/* shapes that do not fit, statically: GR_ERR_SHAPE naming the builder and both variables; a size
   ratio in an integer dtype: GR_ERR_VALUE; NULL operands silently, markers GR_ERR_TYPE */
TEST(test_like_errors) {
    int64_t s3 = 3, s34[2] = { 3, 4 }, s5 = 5, s6 = 6;
    gr_graph *g = gr_graph_new();
    gr_var *v3 = gr_tensor(g, GR_F64, 1, &s3, "v3"), *m34 = gr_tensor(g, GR_F64, 2, s34, "m34"), *v5 = gr_tensor(g, GR_F64, 1, &s5, "v5");
    gr_var *v6 = gr_tensor(g, GR_F64, 1, &s6, "v6");
    CHECK(gr_broadcast_like(NULL, m34) == NULL && gr_reduce_like(m34, NULL) == NULL && gr_reshape_like(NULL, v6) == NULL &&
          gr_size_ratio(NULL, v3, GR_F64) == NULL);
    CHECK_OK_GRAPH(g);
    CHECK(gr_broadcast_like(v3, m34) == NULL);                    /* (3,) to (3,4) */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_broadcast_like");
    CHECK_CONTAINS(gr_graph_message(g), "'v3'");
    CHECK_CONTAINS(gr_graph_message(g), "'m34'");
    gr_graph_clear_error(g);
    CHECK(gr_broadcast_like(m34, v3) == NULL);                    /* more dimensions than the reference */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    gr_graph_clear_error(g);
    CHECK(gr_reduce_like(m34, v5) == NULL);                       /* (5,) does not broadcast to (3,4) */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_reduce_like");
    CHECK_CONTAINS(gr_graph_message(g), "'v5'");
    gr_graph_clear_error(g);
    CHECK(gr_reduce_like(v3, m34) == NULL);                       /* fewer dimensions than the reference */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    gr_graph_clear_error(g);
    CHECK(gr_reshape_like(v5, v6) == NULL);                       /* 5 elements as 6 */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_reshape_like");
    CHECK_CONTAINS(gr_graph_message(g), "'v5'");
    gr_graph_clear_error(g);
    CHECK(gr_size_ratio(v3, v5, GR_I64) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_size_ratio");
    gr_graph_clear_error(g);
    CHECK(gr_reduce_like(gr_disconnected_like(m34), v3) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_TYPE);
    gr_graph_clear_error(g);
    CHECK(gr_broadcast_like(gr_tensor(g, GR_F64, 1, s34 + 1, "v4"), m34) != NULL && gr_reduce_like(m34, gr_tensor(g, GR_F64, 1, s34 + 1, "r4")) != NULL &&
          gr_reshape_like(m34, gr_tensor(g, GR_F64, 2, s34, "r34")) != NULL && gr_size_ratio(m34, v3, GR_F32) != NULL);
    CHECK_OK_GRAPH(g);
    gr_graph_free(g);
}

/* ==== derivative builders ======================================================================== */

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

static const gtd_spec specs_DimShuffle[] = {
    { "DimShuffle", "transpose (3,4)", gts_transpose, NULL, 1, { M34(-2, 2) }, GG },
    { "DimShuffle", "(3,4) -> (1,4,3)", gts_dimshuffle, &pat_newaxis, 1, { M34(-2, 2) }, GG },
    { "DimShuffle", "(3,1) -> (3,): drop", gts_dimshuffle, &pat_drop, 1, { GTD_IN(2, 3, 1, -2, 2) }, GG },
    { "DimShuffle", "0-d -> (1,1)", gts_dimshuffle, &pat_scalar, 1, { S0(-2, 2) }, GG },
    { "DimShuffle", "(2,3,4) -> (4,2,3)", gts_dimshuffle, &pat_3d, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "DimShuffle", "(2,1,4) -> (4,1,2): drop and insert", gts_dimshuffle, &pat_3d_drop, 1, { GTD_IN3(2, 1, 4, -2, 2) }, GG },
    { "DimShuffle", "(3,1) -> (1,3), times (4,1)", gts_dimshuffle_mul, &pat_swap_bcast, 2, { GTD_IN(2, 3, 1, -2, 2), GTD_IN(2, 4, 1, -2, 2) }, GG },
    GTD_END
};
static const gtd_spec specs_Reshape[] = {
    { "Reshape", "(3,4) -> (2,6)", gts_reshape, &sh_2_6, 1, { M34(-2, 2) }, GG },
    { "Reshape", "(3,4) -> flat", gts_reshape, &sh_flat, 1, { M34(-2, 2) }, GG },
    { "Reshape", "(3,4) -> (2,-1,3)", gts_reshape, &sh_2_m1_3, 1, { M34(-2, 2) }, GG },
    { "Reshape", "(2,3,4) -> (6,4)", gts_reshape, &sh_6_4, 1, { GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "Reshape", "0-d -> (1,1)", gts_reshape, &sh_1_1, 1, { S0(-2, 2) }, GG },
    { "Reshape", "(1,1) -> 0-d", gts_reshape, &sh_0d, 1, { GTD_IN(2, 1, 1, -2, 2) }, GG },
    { "Reshape", "(4,) -> (2,2), times (2,1)", gts_reshape_mul, &sh_2_2, 2, { V4(-2, 2), GTD_IN(2, 2, 1, -2, 2) }, GG },
    GTD_END
};
static const gtd_spec specs_BroadcastLike[] = {
    { "BroadcastLike", "(4,) to (3,4)", gts_broadcast_like, NULL, 2, { V4(-2, 2), M34(-2, 2) }, GG },
    { "BroadcastLike", "(3,1) to (3,4)", gts_broadcast_like, NULL, 2, { GTD_IN(2, 3, 1, -2, 2), M34(-2, 2) }, GG },
    { "BroadcastLike", "0-d to (3,4)", gts_broadcast_like, NULL, 2, { S0(-2, 2), M34(-2, 2) }, GG },
    { "BroadcastLike", "(1,4) to (2,3,4)", gts_broadcast_like, NULL, 2, { GTD_IN(2, 1, 4, -2, 2), GTD_IN3(2, 3, 4, -2, 2) }, GG },
    { "BroadcastLike", "(4,) to (3,4), plus sin(ref)", gts_broadcast_like_ref, NULL, 2, { V4(-2, 2), M34(-2, 2) }, GG },
    GTD_END
};
static const gtd_spec specs_ReduceLike[] = {
    { "ReduceLike", "(3,4) to (4,)", gts_reduce_like, NULL, 2, { M34(-2, 2), V4(-2, 2) }, GG },
    { "ReduceLike", "(3,4) to (3,1)", gts_reduce_like, NULL, 2, { M34(-2, 2), GTD_IN(2, 3, 1, -2, 2) }, GG },
    { "ReduceLike", "(3,4) to 0-d", gts_reduce_like, NULL, 2, { M34(-2, 2), S0(-2, 2) }, GG },
    { "ReduceLike", "(2,3,4) to (1,4)", gts_reduce_like, NULL, 2, { GTD_IN3(2, 3, 4, -2, 2), GTD_IN(2, 1, 4, -2, 2) }, GG },
    { "ReduceLike", "(3,4) to (4,), times sin(ref)", gts_reduce_like_ref, NULL, 2, { M34(-2, 2), V4(-2, 2) }, GG },
    GTD_END
};
static const gtd_spec specs_ReshapeLike[] = {
    { "ReshapeLike", "(3,4) like (2,6)", gts_reshape_like, NULL, 2, { M34(-2, 2), GTD_IN(2, 2, 6, -2, 2) }, GG },
    { "ReshapeLike", "(2,3,2) like (12,)", gts_reshape_like, NULL, 2, { GTD_IN3(2, 3, 2, -2, 2), GTD_IN(1, 12, 0, -2, 2) }, GG },
    { "ReshapeLike", "0-d like (1,1)", gts_reshape_like, NULL, 2, { S0(-2, 2), GTD_IN(2, 1, 1, -2, 2) }, GG },
    { "ReshapeLike", "(3,4) like (4,3), times sin(ref)", gts_reshape_like_ref, NULL, 2, { M34(-2, 2), GTD_IN(2, 4, 3, -2, 2) }, GG },
    GTD_END
};
static const gtd_spec specs_SizeRatio[] = {
    { "SizeRatio", "size(3,4) / size(4,)", gts_size_ratio, NULL, 2, { M34(-2, 2), V4(-2, 2) }, ND },
    { "SizeRatio", "x0 * size(x1) / size(x0)", gts_size_ratio_mul, NULL, 2, { M34(-2, 2), GTD_IN(2, 2, 6, -2, 2) }, GG },
    GTD_END
};

GT_CASES(DimShuffle) = {
    GT_VALUES(gts_op_DimShuffle),
    GT_VALUES(test_transpose),
    GT_SPECS(specs_DimShuffle),
    GT_ERRORS(test_dimshuffle_drop),
    GT_ERRORS(test_dimshuffle_bad_pattern),
    GT_END
};
GT_CASES(Reshape) = {
    GT_VALUES(gts_op_Reshape),
    GT_VALUES(test_flatten_cast_api),
    GT_SPECS(specs_Reshape),
    GT_ERRORS(test_reshape_errors),
    GT_END
};
GT_CASES(BroadcastLike) = { GT_VALUES(gts_op_BroadcastLike), GT_SPECS(specs_BroadcastLike), GT_ERRORS(test_like_errors), GT_END };
/* test_like_errors tries gr_reduce_like, gr_reshape_like and gr_size_ratio too */
GT_CASES(ReduceLike) = { GT_VALUES(gts_op_ReduceLike), GT_SPECS(specs_ReduceLike), GT_ERRORS_WITH(BroadcastLike), GT_END };
GT_CASES(ReshapeLike) = { GT_VALUES(gts_op_ReshapeLike), GT_SPECS(specs_ReshapeLike), GT_ERRORS_WITH(BroadcastLike), GT_END };
GT_CASES(SizeRatio) = { GT_VALUES(gts_op_SizeRatio), GT_SPECS(specs_SizeRatio), GT_ERRORS_WITH(BroadcastLike), GT_END };

/* ==== Join, Split, BroadcastTo, Tile, Untile ============================================================== */


/* ==== gr_concatenate ============================================================================ */

/* the plain-C join of n arrays along axis a (all of one dtype) */
static gr_array *gs2_join_ref(int n, gr_array *const *xs, int a, gr_dtype odt) {
    int64_t oshape[GR_MAX_NDIM], idx[GR_MAX_NDIM], k;
    int nd = xs[0]->ndim, i, d;
    gr_array *want;
    for (d = 0; d < nd; d++) oshape[d] = xs[0]->shape[d];
    oshape[a] = 0;
    for (i = 0; i < n; i++) oshape[a] += xs[i]->shape[a];
    want = gs2_want(odt, nd, oshape);
    for (k = 0; k < want->size; k++) {
        int64_t pos;
        gs2_unflat(k, nd, oshape, idx);
        pos = idx[a];
        for (i = 0; pos >= xs[i]->shape[a]; i++) pos -= xs[i]->shape[a];
        idx[a] = pos;
        gs2_copy(want, k, xs[i], gs2_flat(nd, xs[i]->shape, idx));
    }
    return want;
}

typedef struct gs2_jcase { int n, nd, axis; int64_t shapes[4][3]; } gs2_jcase;

static const gs2_jcase gs2_jcases[] = {
    { 2, 2, 0, { { 2, 3 }, { 1, 3 } } },
    { 3, 2, 1, { { 2, 3 }, { 2, 1 }, { 2, 4 } } },
    { 3, 2, -1, { { 2, 0 }, { 2, 2 }, { 2, 1 } } },         /* an empty operand */
    { 2, 3, 1, { { 2, 1, 3 }, { 2, 4, 3 } } },
    { 2, 3, -3, { { 1, 2, 2 }, { 3, 2, 2 } } },
    { 4, 1, 0, { { 3 }, { 0 }, { 1 }, { 2 } } },
    { 1, 2, 1, { { 2, 3 } } },                               /* one operand: itself */
};

TEST(test_concatenate_values) {
    gtf_rng rng;
    size_t c;
    int d, dyn, i;
    rng.s = 201;
    for (c = 0; c < sizeof gs2_jcases / sizeof gs2_jcases[0]; c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gs2_jcase *jc = &gs2_jcases[c];
                gr_dtype dt = gs2_dtypes[d];
                gr_graph *g = gr_graph_new();
                gr_var *ins[4], *y;
                gr_array *arr[4], *want;
                int a = jc->axis < 0 ? jc->axis + jc->nd : jc->axis;
                char label[128];
                for (i = 0; i < jc->n; i++) {
                    char name[16];
                    snprintf(name, sizeof name, "x%d", i);
                    ins[i] = gtf_input(g, dt, jc->nd, jc->shapes[i], dyn, name);
                    arr[i] = gtf_random(&rng, dt, jc->nd, jc->shapes[i], -5, 5);
                }
                want = gs2_join_ref(jc->n, arr, a, dt);
                y = gr_concatenate(jc->n, ins, jc->axis);
                snprintf(label, sizeof label, "gr_concatenate case %d (%s, %s)", (int)c, gr_dtype_name(dt), dyn ? "dynamic" : "static");
                gtf_expect(g, jc->n, ins, (const gr_array *const *)arr, y, dt, want, 0, label);
                if (!dyn) gtf_static_shape_is(y, want->ndim, want->shape, label);
                for (i = 0; i < jc->n; i++) gr_array_free(arr[i]);
                gr_array_free(want);
                gr_graph_free(g);
            }
}

/* the result dtype promotes like elementwise ops; bools stay bools */
TEST(test_concatenate_dtypes) {
    static const gr_dtype pairs[][3] = {
        { GR_F32, GR_I64, GR_F32 }, { GR_F32, GR_F64, GR_F64 }, { GR_I64, GR_BOOL, GR_I64 }, { GR_BOOL, GR_BOOL, GR_BOOL },
        { GR_F64, GR_BOOL, GR_F64 }, { GR_I64, GR_I64, GR_I64 },
    };
    size_t p;
    for (p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
        int64_t s1 = 2, s2 = 3, k;
        gr_graph *g = gr_graph_new();
        gr_var *ins[2], *y;
        gr_array *arr[2], *want;
        gtf_rng rng;
        char label[96];
        rng.s = 202 + p;
        ins[0] = gr_vector(g, pairs[p][0], "a");
        ins[1] = gr_vector(g, pairs[p][1], "b");
        arr[0] = gtf_random(&rng, pairs[p][0], 1, &s1, -4, 4);
        arr[1] = gtf_random(&rng, pairs[p][1], 1, &s2, -4, 4);
        want = gs2_join_ref(2, arr, 0, pairs[p][2]);
        for (k = 0; k < want->size && pairs[p][2] == GR_F32; k++)     /* converted to float32 */
            ((double *)want->data)[k] = (double)(float)((double *)want->data)[k];
        y = gr_concatenate(2, ins, 0);
        snprintf(label, sizeof label, "gr_concatenate %s with %s", gr_dtype_name(pairs[p][0]), gr_dtype_name(pairs[p][1]));
        gtf_expect(g, 2, ins, (const gr_array *const *)arr, y, pairs[p][2], want, 0, label);
        gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(want);
        gr_graph_free(g);
    }
}

/* many operands: one Join node (and one Split node for its gradient), same values and gradient */
TEST(test_concatenate_many) {
    enum { N = 75 };
    gr_graph *g = gr_graph_new();
    gr_var *ins[N], *y, *gx[N], *cost;
    gr_array *arr[N], *want;
    const gr_array *res[1 + N];
    gr_var *outs[1 + N];
    gr_fn *f;
    gtf_rng rng;
    int i;
    rng.s = 205;
    for (i = 0; i < N; i++) {
        int64_t s = 1 + i % 3;
        ins[i] = gr_vector(g, GR_F64, NULL);
        arr[i] = gtf_random(&rng, GR_F64, 1, &s, -2, 2);
    }
    y = gr_concatenate(N, ins, 0);
    CHECK_EQ_INT(gr_node_n_inputs(gr_var_owner(y)), N);
    want = gs2_join_ref(N, arr, 0, GR_F64);
    cost = gr_sum(gr_mul(y, y));
    CHECK_STATUS(gr_grad(cost, N, ins, gx, NULL), GR_OK);
    CHECK(gr_var_owner(gx[0]) != NULL && gr_var_owner(gx[0]) == gr_var_owner(gx[N - 1]));   /* the pieces of one Split */
    CHECK_EQ_INT(gr_node_n_outputs(gr_var_owner(gx[0])), N);
    outs[0] = y;
    for (i = 0; i < N; i++) outs[1 + i] = gx[i];
    f = gr_function(N, ins, 1 + N, outs, NULL);
    CHECK(f != NULL);
    if (f && gr_call(f, (const gr_array *const *)arr, res) == GR_OK) {
        gtf_same(res[0], GR_F64, want, 0, "75 operands");
        for (i = 0; i < N; i++) {
            int64_t k;
            for (k = 0; k < arr[i]->size; k++) CHECK_NEAR(gr_array_get(res[1 + i], k), 2 * gr_array_get(arr[i], k), 1e-15);
        }
    } else CHECK_MSG(0, "call failed: %s", f ? gr_fn_message(f) : gr_graph_message(g));
    gr_fn_free(f);
    for (i = 0; i < N; i++) gr_array_free(arr[i]);
    gr_array_free(want);
    gr_graph_free(g);
}

/* an operand used twice: its gradient terms add up */
TEST(test_concatenate_same_operand) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_matrix(g, GR_F64, "x"), *xs[3], *gx;
    int64_t s[2] = { 2, 2 }, k;
    double xv[4] = { 1, -2, 3, 0.5 };
    gr_array *xa = gr_array_from(GR_F64, 2, s, xv), *want = gr_array_new(GR_F64, 2, s);
    xs[0] = x; xs[1] = gr_exp(x); xs[2] = x;
    gx = gr_grad1(gr_sum(gr_sqr(gr_concatenate(3, xs, 1))), x);          /* 2x + 2 e^2x + 2x */
    for (k = 0; k < 4; k++) ((double *)want->data)[k] = 4 * xv[k] + 2 * exp(2 * xv[k]);
    gtf_expect(g, 1, &x, (const gr_array *const *)&xa, gx, GR_F64, want, 1e-14, "gradient of concatenate(x, e^x, x)");
    gr_array_free(xa); gr_array_free(want);
    gr_graph_free(g);
}

TEST(test_concatenate_errors) {
    static const int64_t s23[2] = { 2, 3 }, s33[2] = { 3, 3 }, s3[1] = { 3 };
    gr_graph *g = gr_graph_new();
    gr_var *a = gr_tensor(g, GR_F64, 2, s23, "a"), *b = gr_tensor(g, GR_F64, 2, s33, "b"), *v = gr_tensor(g, GR_F64, 1, s3, "v");
    gr_var *xs[3];
    /* no operand, a NULL array or a NULL operand: NULL, nothing recorded */
    CHECK(gr_concatenate(0, NULL, 0) == NULL);
    CHECK(gr_concatenate(2, NULL, 0) == NULL);
    xs[0] = a; xs[1] = NULL;
    CHECK(gr_concatenate(2, xs, 0) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    /* 0-d operands and axes out of range */
    xs[0] = gr_scalar(g, GR_F64, "s"); xs[1] = xs[0];
    CHECK(gr_concatenate(2, xs, 0) == NULL);
    gs2_err(g, GR_ERR_VALUE, "gr_concatenate");
    xs[0] = a; xs[1] = b;
    CHECK(gr_concatenate(2, xs, 2) == NULL);
    gs2_err(g, GR_ERR_VALUE, "axis 2");
    CHECK(gr_concatenate(2, xs, -3) == NULL);
    gs2_err(g, GR_ERR_VALUE, "axis -3");
    /* rank mismatch: a type error */
    xs[0] = a; xs[1] = v;
    CHECK(gr_concatenate(2, xs, 0) == NULL);
    gs2_err(g, GR_ERR_TYPE, "dimensions");
    /* static shapes that differ off the axis: (2,3) and (3,3) along axis 1 */
    xs[0] = a; xs[1] = b;
    CHECK(gr_concatenate(2, xs, 1) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_concatenate");
    CHECK_CONTAINS(gr_graph_message(g), "(2,3)");
    CHECK_CONTAINS(gr_graph_message(g), "(3,3)");
    gr_graph_clear_error(g);
    CHECK(gr_concatenate(2, xs, 0) != NULL);          /* along axis 0 they fit */
    /* a gradient marker is not a value */
    xs[0] = a; xs[1] = gr_disconnected_like(a);
    CHECK(gr_concatenate(2, xs, 0) == NULL);
    gs2_err(g, GR_ERR_TYPE, "marker");
    gr_graph_free(g);
    {   /* shapes known only at call time: GR_ERR_SHAPE from gr_call, naming the shapes */
        int64_t sa[2] = { 2, 3 }, sb[2] = { 2, 4 };
        gr_graph *h = gr_graph_new();
        gr_var *ins[2], *y;
        gr_array *arr[2];
        gr_fn *f;
        const gr_array *res[1];
        ins[0] = gr_matrix(h, GR_F64, "p"); ins[1] = gr_matrix(h, GR_F64, "q");
        y = gr_concatenate(2, ins, 0);
        arr[0] = gr_array_new(GR_F64, 2, sa); arr[1] = gr_array_new(GR_F64, 2, sb);
        gtf_expect_call_error(h, 2, ins, (const gr_array *const *)arr, y, GR_ERR_SHAPE, "concatenate (2,3) and (2,4) along 0");
        f = gr_function(2, ins, 1, &y, NULL);
        CHECK_STATUS(gr_call(f, (const gr_array *const *)arr, res), GR_ERR_SHAPE);
        CHECK_CONTAINS(gr_fn_message(f), "Join");
        CHECK_CONTAINS(gr_fn_message(f), "(2,4)");
        gr_fn_free(f);
        gr_array_free(arr[0]); gr_array_free(arr[1]);
        gr_graph_free(h);
    }
}

/* ==== gr_stack ==================================================================================== */

TEST(test_stack_values) {
    static const int64_t shape[2] = { 2, 3 };
    static const int axes[] = { 0, 1, 2, -1, -3 };
    gtf_rng rng;
    int ai, d, dyn, i;
    rng.s = 210;
    for (ai = 0; ai < 5; ai++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                gr_dtype dt = gs2_dtypes[d];
                gr_graph *g = gr_graph_new();
                gr_var *ins[3], *y;
                gr_array *arr[3], *want;
                int64_t ws[3], idx[3], k;
                int a = axes[ai] < 0 ? axes[ai] + 3 : axes[ai], m = 0;
                char label[96];
                for (i = 0; i < 3; i++) {
                    ins[i] = gtf_input(g, dt, 2, shape, dyn, NULL);
                    arr[i] = gtf_random(&rng, dt, 2, shape, -5, 5);
                }
                for (i = 0; i < 3; i++) ws[i] = i == a ? 3 : shape[m++];
                want = gs2_want(dt, 3, ws);
                for (k = 0; k < want->size; k++) {             /* y[..., i, ...] = x_i */
                    int64_t src[2], q = 0;
                    gs2_unflat(k, 3, ws, idx);
                    for (i = 0; i < 3; i++) if (i != a) src[q++] = idx[i];
                    gs2_copy(want, k, arr[idx[a]], src[0] * 3 + src[1]);
                }
                y = gr_stack(3, ins, axes[ai]);
                snprintf(label, sizeof label, "gr_stack axis %d (%s, %s)", axes[ai], gr_dtype_name(dt), dyn ? "dynamic" : "static");
                gtf_expect(g, 3, ins, (const gr_array *const *)arr, y, dt, want, 0, label);
                if (!dyn) gtf_static_shape_is(y, 3, ws, label);
                for (i = 0; i < 3; i++) gr_array_free(arr[i]);
                gr_array_free(want);
                gr_graph_free(g);
            }
    {   /* scalars, one of them a weak constant: a float32 vector */
        gr_graph *g = gr_graph_new();
        gr_var *ins[3], *s = gr_scalar(g, GR_F32, "s");
        gr_array *sa = gr_array_scalar(GR_F32, 2.5), *want;
        int64_t n3 = 3;
        ins[0] = s; ins[1] = gr_const(g, -1.0); ins[2] = s;
        want = gr_array_new(GR_F64, 1, &n3);
        ((double *)want->data)[0] = 2.5; ((double *)want->data)[1] = -1; ((double *)want->data)[2] = 2.5;
        gs2_expect1(g, s, sa, gr_stack(3, ins, 0), GR_F32, want, "gr_stack of 0-d operands");
        gr_array_free(sa); gr_array_free(want);
        gr_graph_free(g);
    }
}

TEST(test_stack_errors) {
    static const int64_t s23[2] = { 2, 3 }, s32[2] = { 3, 2 }, s8[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
    gr_graph *g = gr_graph_new();
    gr_var *xs[2];
    CHECK(gr_stack(0, NULL, 0) == NULL);
    xs[0] = gr_tensor(g, GR_F64, 2, s23, "a"); xs[1] = gr_tensor(g, GR_F64, 2, s32, "b");
    CHECK(gr_stack(2, xs, 0) == NULL);                 /* NumPy: all shapes must be equal */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_stack");
    CHECK_CONTAINS(gr_graph_message(g), "(3,2)");
    gr_graph_clear_error(g);
    xs[1] = gr_vector(g, GR_F64, "v");
    CHECK(gr_stack(2, xs, 0) == NULL);
    gs2_err(g, GR_ERR_TYPE, "dimensions");
    xs[1] = xs[0];
    CHECK(gr_stack(2, xs, 3) == NULL);
    gs2_err(g, GR_ERR_VALUE, "axis 3");
    CHECK(gr_stack(2, xs, -4) == NULL);
    gs2_err(g, GR_ERR_VALUE, "axis -4");
    xs[0] = xs[1] = gr_tensor(g, GR_F64, 8, s8, "big");
    CHECK(gr_stack(2, xs, 0) == NULL);
    gs2_err(g, GR_ERR_VALUE, "dimensions");
    gr_graph_free(g);
    {   /* call time: (2,3) and (2,4) */
        int64_t sa[2] = { 2, 3 }, sb[2] = { 2, 4 };
        gr_graph *h = gr_graph_new();
        gr_var *ins[2];
        gr_array *arr[2];
        ins[0] = gr_matrix(h, GR_F64, "p"); ins[1] = gr_matrix(h, GR_F64, "q");
        arr[0] = gr_array_new(GR_F64, 2, sa); arr[1] = gr_array_new(GR_F64, 2, sb);
        gtf_expect_call_error(h, 2, ins, (const gr_array *const *)arr, gr_stack(2, ins, 1), GR_ERR_SHAPE, "stack (2,3) and (2,4)");
        gr_array_free(arr[0]); gr_array_free(arr[1]);
        gr_graph_free(h);
    }
}

/* ==== gr_split ====================================================================================== */

/* piece j of x along a: x's elements at offset + i along a */
static gr_array *gs2_piece_ref(const gr_array *x, int a, int64_t offset, int64_t size, gr_dtype odt) {
    int64_t ps[GR_MAX_NDIM], idx[GR_MAX_NDIM], k;
    int d;
    gr_array *want;
    for (d = 0; d < x->ndim; d++) ps[d] = x->shape[d];
    ps[a] = size;
    want = gs2_want(odt, x->ndim, ps);
    for (k = 0; k < want->size; k++) {
        gs2_unflat(k, x->ndim, ps, idx);
        idx[a] += offset;
        gs2_copy(want, k, x, gs2_flat(x->ndim, x->shape, idx));
    }
    return want;
}

typedef struct gs2_scase { int nd; int64_t shape[3]; int axis, n; int64_t sizes[4]; } gs2_scase;
static const gs2_scase gs2_scases[] = {
    { 1, { 5 }, 0, 3, { 2, 1, 2 } },
    { 2, { 3, 4 }, 1, 3, { 1, 0, 3 } },          /* an empty piece */
    { 2, { 3, 4 }, -2, 2, { 2, 1 } },
    { 3, { 2, 5, 2 }, 1, 4, { 1, 1, 2, 1 } },
    { 3, { 2, 3, 4 }, -1, 2, { 4, 0 } },
    { 2, { 2, 3 }, 0, 1, { 2 } },                /* one piece */
};

TEST(test_split_values) {
    gtf_rng rng;
    size_t c;
    int d, dyn, j;
    rng.s = 220;
    for (c = 0; c < sizeof gs2_scases / sizeof gs2_scases[0]; c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gs2_scase *sc = &gs2_scases[c];
                gr_dtype dt = gs2_dtypes[d];
                gr_graph *g = gr_graph_new();
                gr_var *x = gtf_input(g, dt, sc->nd, sc->shape, dyn, "x"), *out[4];
                gr_array *xa = gtf_random(&rng, dt, sc->nd, sc->shape, -5, 5);
                int a = sc->axis < 0 ? sc->axis + sc->nd : sc->axis;
                int64_t off = 0;
                CHECK_STATUS(gr_split(x, sc->axis, sc->n, sc->sizes, out), GR_OK);
                for (j = 0; j < sc->n; j++) {
                    gr_array *want = gs2_piece_ref(xa, a, off, sc->sizes[j], dt);
                    char label[128];
                    snprintf(label, sizeof label, "gr_split case %d piece %d (%s, %s)", (int)c, j, gr_dtype_name(dt), dyn ? "dynamic" : "static");
                    gs2_expect1(g, x, xa, out[j], dt, want, label);
                    if (!dyn) gtf_static_shape_is(out[j], want->ndim, want->shape, label);
                    else if (out[j]) {                  /* the split axis is known from the sizes */
                        gr_type t;
                        gr_var_type(out[j], &t);
                        CHECK_EQ_INT(t.shape[a], sc->sizes[j]);
                    }
                    off += sc->sizes[j];
                    gr_array_free(want);
                }
                gr_array_free(xa);
                gr_graph_free(g);
            }
}

/* 1100 pieces (more than the 32 outputs a Split node once had): one node with 1100 outputs */
TEST(test_split_many) {
    enum { N = 1100 };
    static int64_t sizes[N];
    static gr_var *out[N];
    int64_t total = 0, off = 0, n;
    gr_graph *g = gr_graph_new();
    gr_var *x, *parts[3], *y, *gx;
    gr_array *xa;
    gtf_rng rng;
    const gr_array *res[2];
    gr_var *outs[2];
    gr_fn *f;
    int j;
    rng.s = 221;
    for (j = 0; j < N; j++) { sizes[j] = j % 3; total += sizes[j]; }
    n = total;
    x = gr_vector(g, GR_F64, "x");
    xa = gtf_random(&rng, GR_F64, 1, &n, -2, 2);
    CHECK_STATUS(gr_split(x, 0, N, sizes, out), GR_OK);
    CHECK(gr_var_owner(out[0]) != NULL && gr_var_owner(out[0]) == gr_var_owner(out[N - 1]));
    CHECK_EQ_INT(gr_node_n_outputs(gr_var_owner(out[0])), N);
    CHECK_EQ_INT(gr_node_n_inputs(gr_var_owner(out[0])), 1);
    /* pieces 2, 500 and 1099: sizes 2, 2, 1 */
    parts[0] = out[2]; parts[1] = out[500]; parts[2] = out[1099];
    y = gr_concatenate(3, parts, 0);
    gx = gr_grad1(gr_sum(gr_mul(y, y)), x);
    outs[0] = y; outs[1] = gx;
    f = gr_function(1, &x, 2, outs, NULL);
    CHECK(f != NULL);
    if (f && gr_call(f, (const gr_array *const *)&xa, res) == GR_OK) {
        int64_t k, want_pos[5], m = 0;
        for (j = 0, off = 0; j < N; off += sizes[j], j++)
            if (j == 2 || j == 500 || j == 1099) for (k = 0; k < sizes[j]; k++) want_pos[m++] = off + k;
        CHECK_EQ_INT(res[0]->size, 5);
        for (k = 0; k < 5 && k < res[0]->size; k++) CHECK_NEAR(gr_array_get(res[0], k), gr_array_get(xa, want_pos[k]), 0);
        for (k = 0, m = 0; k < n; k++) {              /* 2x at the used positions, 0 elsewhere */
            int used = m < 5 && want_pos[m] == k;
            CHECK_NEAR(gr_array_get(res[1], k), used ? 2 * gr_array_get(xa, k) : 0.0, 1e-15);
            if (used) m++;
        }
    } else CHECK_MSG(0, "call failed: %s", f ? gr_fn_message(f) : gr_graph_message(g));
    gr_fn_free(f);
    gr_array_free(xa);
    gr_graph_free(g);
}

/* 20 pieces, joined again in reverse order: the R-ops of Split and Join, and of Join's gradient
   (a Split shaped like 20 references), past the 16 operands their rules keep on the stack.
   y = concat(sqr(p_19), ..., sqr(p_0)) with p_j = x[2j:2j+2]: R_v y = concat(..., 2 p_j v_j, ...);
   cost = sum(concat(p_19, ..., p_0)^3) / 3 has the gradient x^2 and the Hessian-vector product 2 x v */
TEST(test_split_join_many_rop) {
    enum { K = 20, N = 2 * K };
    int64_t sizes[K], n = N, k;
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *v = gr_vector(g, GR_F64, "v"), *p[K], *sq[K], *rev[K], *y, *ry, *gx, *hv, *outs[3], *ins[2];
    gr_array *xa = gr_array_new(GR_F64, 1, &n), *va = gr_array_new(GR_F64, 1, &n);
    const gr_array *arr[2], *res[3];
    gr_fn *f;
    int j;
    for (j = 0; j < K; j++) sizes[j] = 2;
    for (k = 0; k < N; k++) { ((double *)xa->data)[k] = 0.25 * (double)(k % 7) - 0.6; ((double *)va->data)[k] = 1.0 - 0.1 * (double)k; }
    CHECK_STATUS(gr_split(x, 0, K, sizes, p), GR_OK);
    for (j = 0; j < K; j++) { sq[j] = gr_sqr(p[K - 1 - j]); rev[j] = p[K - 1 - j]; }
    y = gr_concatenate(K, sq, 0);
    CHECK_STATUS(gr_rop(1, &y, 1, &x, &v, &ry, NULL), GR_OK);
    gx = gr_grad1(gr_div(gr_sum(gr_mul(gr_sqr(gr_concatenate(K, rev, 0)), gr_concatenate(K, rev, 0))), gr_const(g, 3.0)), x);
    CHECK_STATUS(gr_rop(1, &gx, 1, &x, &v, &hv, NULL), GR_OK);
    outs[0] = ry; outs[1] = gx; outs[2] = hv;
    ins[0] = x; ins[1] = v;
    f = gr_function(2, ins, 3, outs, NULL);
    CHECK(f != NULL);
    arr[0] = xa; arr[1] = va;
    if (f && gr_call(f, arr, res) == GR_OK) {
        for (j = 0; j < K; j++)
            for (k = 0; k < 2; k++) {
                int64_t src = 2 * (K - 1 - j) + k;                 /* where y's element 2j + k comes from */
                double xs = gr_array_get(xa, src), vs = gr_array_get(va, src);
                CHECK_NEAR(gr_array_get(res[0], 2 * j + k), 2 * xs * vs, 1e-15);
            }
        for (k = 0; k < N; k++) {
            double xk = gr_array_get(xa, k), vk = gr_array_get(va, k);
            CHECK_NEAR(gr_array_get(res[1], k), xk * xk, 1e-15);
            CHECK_NEAR(gr_array_get(res[2], k), 2 * xk * vk, 1e-15);
        }
    } else CHECK_MSG(0, "call failed: %s", f ? gr_fn_message(f) : gr_graph_message(g));
    gr_fn_free(f);
    gr_array_free(xa); gr_array_free(va);
    gr_graph_free(g);
}

TEST(test_split_errors) {
    static const int64_t s5[1] = { 5 }, sz[3] = { 2, 1, 2 }, bad_sum[3] = { 2, 2, 2 }, neg[3] = { 3, -1, 3 };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_tensor(g, GR_F64, 1, s5, "x"), *out[3], *marker = x;   /* any non-NULL value the call must clear */
    int j;
#define GS2_POISON() do { for (j = 0; j < 3; j++) out[j] = marker; } while (0)
#define GS2_ALL_NULL() do { for (j = 0; j < 3; j++) CHECK(out[j] == NULL); } while (0)
    GS2_POISON();
    CHECK_STATUS(gr_split(NULL, 0, 3, sz, out), GR_ERR_VALUE);      /* no graph: nothing recorded */
    GS2_ALL_NULL();
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    CHECK_STATUS(gr_split(x, 0, 3, sz, NULL), GR_ERR_VALUE);
    gs2_err(g, GR_ERR_VALUE, "gr_split");
    CHECK_STATUS(gr_split(x, 0, 0, sz, out), GR_ERR_VALUE);
    gs2_err(g, GR_ERR_VALUE, "pieces");
    GS2_POISON();
    CHECK_STATUS(gr_split(x, 0, 3, NULL, out), GR_ERR_VALUE);
    GS2_ALL_NULL();
    gs2_err(g, GR_ERR_VALUE, "sizes");
    GS2_POISON();
    CHECK_STATUS(gr_split(x, 0, 3, neg, out), GR_ERR_VALUE);
    GS2_ALL_NULL();
    gs2_err(g, GR_ERR_VALUE, "negative");
    GS2_POISON();
    CHECK_STATUS(gr_split(x, 1, 3, sz, out), GR_ERR_VALUE);
    GS2_ALL_NULL();
    gs2_err(g, GR_ERR_VALUE, "axis 1");
    GS2_POISON();
    CHECK_STATUS(gr_split(gr_scalar(g, GR_F64, "s"), 0, 3, sz, out), GR_ERR_VALUE);
    GS2_ALL_NULL();
    gs2_err(g, GR_ERR_VALUE, "0-d");
    GS2_POISON();
    CHECK_STATUS(gr_split(x, -1, 3, bad_sum, out), GR_ERR_SHAPE);     /* 6 != 5, known when built */
    GS2_ALL_NULL();
    CHECK_CONTAINS(gr_graph_message(g), "gr_split");
    CHECK_CONTAINS(gr_graph_message(g), "6");
    gs2_err(g, GR_ERR_SHAPE, "(5)");
    GS2_POISON();
    CHECK_STATUS(gr_split(gr_disconnected_like(x), 0, 3, sz, out), GR_ERR_TYPE);
    GS2_ALL_NULL();
    gr_graph_clear_error(g);
    gr_graph_free(g);
    {   /* known only at call time */
        gr_graph *h = gr_graph_new();
        gr_var *v = gr_vector(h, GR_F64, "v");
        int64_t n4 = 4;
        gr_array *va = gr_array_new(GR_F64, 1, &n4);
        CHECK_STATUS(gr_split(v, 0, 3, sz, out), GR_OK);
        for (j = 0; j < 3; j++) gtf_expect_call_error(h, 1, &v, (const gr_array *const *)&va, out[j], GR_ERR_SHAPE, "split 5 of 4");
        {
            gr_fn *f = gr_function(1, &v, 1, &out[1], NULL);
            const gr_array *res[1];
            CHECK_STATUS(gr_call(f, (const gr_array *const *)&va, res), GR_ERR_SHAPE);
            CHECK_CONTAINS(gr_fn_message(f), "Split");
            CHECK_CONTAINS(gr_fn_message(f), "(4)");
            gr_fn_free(f);
        }
        gr_array_free(va);
        gr_graph_free(h);
    }
#undef GS2_POISON
#undef GS2_ALL_NULL
}

/* ---- the gradient of a split whose outputs do not all reach the cost (Aesara#1200) ---------------- */

/* x (6,) split (2, 1, 3); cost from the pieces in `use` (bit j: piece j): sum(p0^2) + 3 sum(p1) +
   sum(p2^3); the gradient is 2 x, 3, 3 x^2 on the used pieces and 0 on the others */
static void gs2_split_grad_case(unsigned use, gr_dtype dt, int dyn) {
    static const int64_t sizes[3] = { 2, 1, 3 }, n6 = 6;
    gr_graph *g = gr_graph_new();
    gr_var *x = gtf_input(g, dt, 1, &n6, dyn, "x"), *p[3], *cost = NULL, *gx, *outs[2];
    gr_array *xa;
    gr_fn *f;
    const gr_array *res[2];
    gtf_rng rng;
    char label[96];
    int j;
    rng.s = 230 + use;
    xa = gtf_random(&rng, dt, 1, &n6, -2, 2);
    snprintf(label, sizeof label, "split grad, pieces used %u (%s, %s)", use, gr_dtype_name(dt), dyn ? "dynamic" : "static");
    CHECK_STATUS(gr_split(x, 0, 3, sizes, p), GR_OK);
    for (j = 0; j < 3; j++) {
        gr_var *t;
        if (!(use & (1u << j))) continue;
        t = j == 0 ? gr_sum(gr_sqr(p[0])) : j == 1 ? gr_mul(gr_const(g, 3), gr_sum(p[1])) : gr_sum(gr_mul(gr_sqr(p[2]), p[2]));
        cost = cost ? gr_add(cost, t) : t;
    }
    gx = gr_grad1(cost, x);
    CHECK_MSG(gx != NULL, "%s: %s", label, gr_graph_message(g));
    outs[0] = gx; outs[1] = cost;
    f = gr_function(1, &x, 2, outs, NULL);
    if (f && gr_call(f, (const gr_array *const *)&xa, res) == GR_OK) {
        int64_t k;
        CHECK(gr_array_get(res[0], 0) == gr_array_get(res[0], 0));
        CHECK_EQ_INT(res[0]->dtype, dt);
        for (k = 0; k < 6; k++) {
            double xv = gr_array_get(xa, k), want = 0;
            int piece = k < 2 ? 0 : k < 3 ? 1 : 2;
            if (use & (1u << piece)) want = piece == 0 ? 2 * xv : piece == 1 ? 3 : 3 * xv * xv;
            CHECK_NEAR(gr_array_get(res[0], k), want, dt == GR_F32 ? 1e-6 : 1e-15);
        }
    } else CHECK_MSG(0, "%s: %s", label, f ? gr_fn_message(f) : gr_graph_message(g));
    gr_fn_free(f);
    gr_array_free(xa);
    gr_graph_free(g);
}

TEST(test_split_disconnected_outputs) {
    unsigned use;
    int dyn;
    for (use = 1; use < 8; use++)
        for (dyn = 0; dyn < 2; dyn++) {
            gs2_split_grad_case(use, GR_F64, dyn);
            gs2_split_grad_case(use, GR_F32, dyn);
        }
    {   /* the same through gr_lop with the unused pieces absent, and gradients of integer splits */
        static const int64_t sizes[2] = { 1, 2 };
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *p[2], *u = gr_vector(g, GR_F64, "u"), *r = NULL, *ins[2];
        gr_array *arr[2], *want;
        int64_t n3 = 3, n2 = 2;
        double xv[3] = { 1, 2, 3 }, uv[2] = { 10, 20 }, wv[3] = { 0, 10, 20 };
        gr_grad_opts o;
        CHECK_STATUS(gr_split(x, 0, 2, sizes, p), GR_OK);
        memset(&o, 0, sizeof o);
        CHECK_STATUS(gr_lop(1, &p[1], 1, &x, &u, &r, &o), GR_OK);
        ins[0] = x; ins[1] = u;
        arr[0] = gr_array_from(GR_F64, 1, &n3, xv); arr[1] = gr_array_from(GR_F64, 1, &n2, uv);
        want = gr_array_from(GR_F64, 1, &n3, wv);
        gtf_expect(g, 2, ins, (const gr_array *const *)arr, r, GR_F64, want, 0, "gr_lop of piece 1 of a split");
        gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(want);
        {   /* int64 pieces: the gradient of x is float zeros */
            gr_var *xi = gr_vector(g, GR_I64, "xi"), *q[2], *gi;
            gr_array *xia, *zero;
            int64_t iv[3] = { 4, 5, 6 };
            CHECK_STATUS(gr_split(xi, 0, 2, sizes, q), GR_OK);
            gi = gr_grad1(gr_sum(gr_cast(q[0], GR_F64)), xi);
            xia = gr_array_from(GR_I64, 1, &n3, iv);
            zero = gr_array_new(GR_F64, 1, &n3);
            gs2_expect1(g, xi, xia, gi, GR_F64, zero, "gradient of an int64 split");
            gr_array_free(xia); gr_array_free(zero);
        }
        gr_graph_free(g);
    }
}

/* a null gradient reaching one piece poisons x's gradient; the others still count as disconnected */
TEST(test_split_null_output_grad) {
    static const int64_t sizes[2] = { 1, 2 };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *p[2], *cost, *gx = NULL;
    gr_grad_opts o;
    CHECK_STATUS(gr_split(x, 0, 2, sizes, p), GR_OK);
    cost = gr_add(gr_sum(p[0]), gr_sum(gr_undefined_grad(p[1])));
    CHECK_STATUS(gr_grad(cost, 1, &x, &gx, NULL), GR_ERR_NULL_GRAD);
    gr_graph_clear_error(g);
    memset(&o, 0, sizeof o);
    o.null_gradients = GR_NULL_RETURN;
    CHECK_STATUS(gr_grad(cost, 1, &x, &gx, &o), GR_OK);
    CHECK(gr_is_null(gx));
    gr_graph_free(g);
}

/* ==== R-ops with missing tangents ===================================================================== */

/* concatenate(x, y) and split with only x's tangent: y's part is zero */
TEST(test_join_rop_partial) {
    static const int64_t sizes[2] = { 2, 1 };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *y = gr_vector(g, GR_F64, "y"), *v = gr_vector(g, GR_F64, "v"), *xs[2], *j, *r = NULL;
    gr_var *ins[3], *p[2], *rp[2];
    gr_array *arr[3], *want;
    int64_t n2 = 2, n1 = 1, n3 = 3;
    double xv[2] = { 1, 2 }, yv[1] = { 3 }, vv[2] = { 5, 7 }, wv[3] = { 5, 7, 0 };
    xs[0] = x; xs[1] = y;
    j = gr_concatenate(2, xs, 0);
    CHECK_STATUS(gr_rop(1, &j, 1, &x, &v, &r, NULL), GR_OK);
    ins[0] = x; ins[1] = y; ins[2] = v;
    arr[0] = gr_array_from(GR_F64, 1, &n2, xv); arr[1] = gr_array_from(GR_F64, 1, &n1, yv); arr[2] = gr_array_from(GR_F64, 1, &n2, vv);
    want = gr_array_from(GR_F64, 1, &n3, wv);
    gtf_expect(g, 3, ins, (const gr_array *const *)arr, r, GR_F64, want, 0, "R-op of a join with one tangent");
    gr_array_free(want);
    /* split of the join: piece 0 gets v, piece 1 zeros */
    CHECK_STATUS(gr_split(j, 0, 2, sizes, p), GR_OK);
    CHECK_STATUS(gr_rop(2, p, 1, &x, &v, rp, NULL), GR_OK);
    want = gr_array_from(GR_F64, 1, &n2, vv);
    gtf_expect(g, 3, ins, (const gr_array *const *)arr, rp[0], GR_F64, want, 0, "R-op of a split, piece 0");
    gr_array_free(want);
    want = gr_array_new(GR_F64, 1, &n1);
    gtf_expect(g, 3, ins, (const gr_array *const *)arr, rp[1], GR_F64, want, 0, "R-op of a split, piece 1");
    gr_array_free(want);
    gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(arr[2]);
    gr_graph_free(g);
}

/* ==== gr_broadcast_to ====================================================================================== */

typedef struct gs2_bcase { int xnd; int64_t xs[3]; int nd; int64_t shape[4]; } gs2_bcase;
static const gs2_bcase gs2_bcases[] = {
    { 1, { 3 }, 2, { 2, 3 } },
    { 2, { 2, 1 }, 2, { 2, 4 } },
    { 1, { 1 }, 3, { 3, 2, 5 } },
    { 0, { 0 }, 2, { 2, 3 } },
    { 2, { 1, 3 }, 3, { 2, 4, 3 } },
    { 1, { 3 }, 2, { 0, 3 } },                   /* empty result */
    { 2, { 2, 3 }, 2, { 2, 3 } },                /* the same shape */
};

TEST(test_broadcast_to_values) {
    gtf_rng rng;
    size_t c;
    int d, dyn;
    rng.s = 240;
    for (c = 0; c < sizeof gs2_bcases / sizeof gs2_bcases[0]; c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gs2_bcase *bc = &gs2_bcases[c];
                gr_dtype dt = gs2_dtypes[d];
                gr_graph *g = gr_graph_new();
                gr_var *x = gtf_input(g, dt, bc->xnd, bc->xs, dyn, "x"), *y;
                gr_array *xa = gtf_random(&rng, dt, bc->xnd, bc->xs, -5, 5), *want = gs2_want(dt, bc->nd, bc->shape);
                int64_t k;
                char label[96];
                for (k = 0; k < want->size; k++) gs2_copy(want, k, xa, gtf_bcast_index(k, bc->nd, bc->shape, bc->xnd, bc->xs));
                y = gr_broadcast_to(x, bc->nd, bc->shape);
                snprintf(label, sizeof label, "gr_broadcast_to case %d (%s, %s)", (int)c, gr_dtype_name(dt), dyn ? "dynamic" : "static");
                gs2_expect1(g, x, xa, y, dt, want, label);
                gtf_static_shape_is(y, bc->nd, bc->shape, label);     /* the target shape is always known */
                gr_array_free(xa);
                gr_array_free(want);
                gr_graph_free(g);
            }
}

TEST(test_broadcast_to_errors) {
    static const int64_t s23[2] = { 2, 3 }, s3[1] = { 3 }, s4[1] = { 4 }, s24[2] = { 2, 4 }, neg[2] = { 2, -1 };
    static const int64_t s9[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_tensor(g, GR_F64, 2, s23, "x");
    CHECK(gr_broadcast_to(NULL, 1, s3) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    CHECK(gr_broadcast_to(x, 1, s3) == NULL);           /* fewer dimensions than x */
    gs2_err(g, GR_ERR_SHAPE, "(2,3)");
    CHECK(gr_broadcast_to(x, 2, s24) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_ERR_SHAPE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_broadcast_to");
    gs2_err(g, GR_ERR_SHAPE, "(2,4)");
    CHECK(gr_broadcast_to(x, 2, neg) == NULL);
    gs2_err(g, GR_ERR_VALUE, "negative");
    CHECK(gr_broadcast_to(x, 2, NULL) == NULL);
    gs2_err(g, GR_ERR_VALUE, "NULL");
    CHECK(gr_broadcast_to(x, 9, s9) == NULL);
    gs2_err(g, GR_ERR_VALUE, "ndim");
    CHECK(gr_broadcast_to(x, -1, s4) == NULL);
    gs2_err(g, GR_ERR_VALUE, "ndim");
    gr_graph_free(g);
    {   /* at call time */
        gr_graph *h = gr_graph_new();
        gr_var *v = gr_vector(h, GR_F64, "v");
        gr_array *va = gr_array_new(GR_F64, 1, s4);
        gtf_expect_call_error(h, 1, &v, (const gr_array *const *)&va, gr_broadcast_to(v, 2, s23), GR_ERR_SHAPE, "(4) to (2,3)");
        gr_array_free(va);
        gr_graph_free(h);
    }
}

/* ==== gr_zeros_like, gr_ones_like ========================================================================= */

TEST(test_zeros_ones_like) {
    static const int64_t s23[2] = { 2, 3 };
    int d, dyn, which;
    for (d = 0; d < 4; d++)
        for (dyn = 0; dyn < 2; dyn++)
            for (which = 0; which < 2; which++) {
                gr_dtype dt = gs2_dtypes[d];
                gr_graph *g = gr_graph_new();
                gr_var *x = gtf_input(g, dt, 2, s23, dyn, "x"), *y = which ? gr_ones_like(x) : gr_zeros_like(x);
                gr_array *xa = gr_array_new(dt, 2, s23), *want = gs2_want(dt, 2, s23);
                int64_t k;
                char label[96];
                for (k = 0; k < want->size; k++) {
                    if (want->dtype == GR_I64) ((int64_t *)want->data)[k] = which;
                    else ((double *)want->data)[k] = which;
                }
                snprintf(label, sizeof label, "gr_%s_like (%s, %s)", which ? "ones" : "zeros", gr_dtype_name(dt), dyn ? "dynamic" : "static");
                gs2_expect1(g, x, xa, y, dt, want, label);
                gr_array_free(xa);
                gr_array_free(want);
                gr_graph_free(g);
            }
    {   /* 0-d, and the gradient to the operand is disconnected; the R-op is zero */
        gr_graph *g = gr_graph_new();
        gr_var *x = gr_vector(g, GR_F64, "x"), *s = gr_scalar(g, GR_F32, "s"), *cost, *gx = NULL, *v = gr_vector(g, GR_F64, "v"), *r = NULL, *ins[2];
        gr_array *sa = gr_array_scalar(GR_F32, 7), *one = gr_array_scalar(GR_F64, 1), *arr[2], *zero;
        gr_grad_opts o;
        int64_t n3 = 3;
        gs2_expect1(g, s, sa, gr_ones_like(s), GR_F32, one, "gr_ones_like of a 0-d float32");
        cost = gr_sum(gr_mul(gr_ones_like(x), gr_const(g, 2)));
        CHECK_STATUS(gr_grad(cost, 1, &x, &gx, NULL), GR_ERR_DISCONNECTED_INPUT);
        gr_graph_clear_error(g);
        memset(&o, 0, sizeof o);
        o.disconnected_inputs = GR_IGNORE;
        o.return_disconnected = GR_RETURN_DISCONNECTED;
        CHECK_STATUS(gr_grad(cost, 1, &x, &gx, &o), GR_OK);
        CHECK(gr_is_disconnected(gx));
        CHECK_STATUS(gr_rop(1, &cost, 1, &x, &v, &r, NULL), GR_OK);
        ins[0] = x; ins[1] = v;
        arr[0] = gr_array_new(GR_F64, 1, &n3); arr[1] = gr_array_new(GR_F64, 1, &n3);
        zero = gr_array_scalar(GR_F64, 0);
        gtf_expect(g, 2, ins, (const gr_array *const *)arr, r, GR_F64, zero, 0, "R-op through gr_ones_like");
        gr_array_free(sa); gr_array_free(one); gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(zero);
        CHECK(gr_zeros_like(NULL) == NULL);
        CHECK(gr_ones_like(gr_disconnected_like(x)) == NULL);
        gs2_err(g, GR_ERR_TYPE, "gr_ones_like");
        gr_graph_free(g);
    }
}

/* ==== gr_arange ============================================================================================ */

TEST(test_arange) {
    static const double cases[][3] = {
        { 0, 5, 1 }, { 2, 11, 3 }, { 5, 0, -1 }, { 0.5, 3, 0.5 }, { 0, 1, 0.1 }, { 3, 3, 1 }, { 3, 1, 1 }, { -2.5, 2.5, 1.25 },
        { 1e15, 1e15 + 4, 1 }, { -3.7, 2.2, 1.1 },
    };
    static const gr_dtype dts[3] = { GR_F64, GR_F32, GR_I64 };
    size_t c;
    int d;
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (d = 0; d < 3; d++) {
            double start = cases[c][0], stop = cases[c][1], step = cases[c][2], len = ceil((stop - start) / step);
            int64_t n = len > 0 ? (int64_t)len : 0, k;
            gr_graph *g = gr_graph_new();
            gr_var *a = gr_arange(g, start, stop, step, dts[d]);
            gr_array *want = gs2_want(dts[d], 1, &n);
            char label[96];
            for (k = 0; k < n; k++) {
                double v = start + (double)k * step;
                if (dts[d] == GR_I64) ((int64_t *)want->data)[k] = (int64_t)v;       /* truncated toward zero */
                else ((double *)want->data)[k] = dts[d] == GR_F32 ? (double)(float)v : v;
            }
            snprintf(label, sizeof label, "gr_arange(%g, %g, %g, %s)", start, stop, step, gr_dtype_name(dts[d]));
            gtf_expect(g, 0, NULL, NULL, a, dts[d], want, 0, label);
            gtf_static_shape_is(a, 1, &n, label);
            gr_array_free(want);
            gr_graph_free(g);
        }
    {   /* exact int64 beyond 2^53, and the errors */
        gr_graph *g = gr_graph_new();
        gr_var *a = gr_arange(g, 9007199254740992.0, 9007199254740992.0 + 8, 3, GR_I64);
        const gr_array *res[1];
        gr_fn *f = gr_function(0, NULL, 1, &a, NULL);
        if (f && gr_call(f, NULL, res) == GR_OK) {
            CHECK_EQ_INT(res[0]->size, 3);
            CHECK_EQ_INT(((const int64_t *)res[0]->data)[0], 9007199254740992LL);
            CHECK_EQ_INT(((const int64_t *)res[0]->data)[1], 9007199254740995LL);
        } else CHECK_MSG(0, "arange int64: %s", gr_graph_message(g));
        gr_fn_free(f);
        CHECK(gr_arange(NULL, 0, 1, 1, GR_F64) == NULL);
        CHECK(gr_arange(g, 0, 1, 0, GR_F64) == NULL);
        gs2_err(g, GR_ERR_VALUE, "step");
        CHECK(gr_arange(g, 0, NAN, 1, GR_F64) == NULL);
        gs2_err(g, GR_ERR_VALUE, "finite");
        CHECK(gr_arange(g, 0, INFINITY, 1, GR_F64) == NULL);
        gs2_err(g, GR_ERR_VALUE, "finite");
        CHECK(gr_arange(g, 0, 1e300, 1e-300, GR_F64) == NULL);
        gs2_err(g, GR_ERR_VALUE, "elements");
        CHECK(gr_arange(g, 0, 2, 1, GR_BOOL) == NULL);
        gs2_err(g, GR_ERR_VALUE, "bool");
        CHECK(gr_arange(g, 0, 2, 1, (gr_dtype)9) == NULL);
        gs2_err(g, GR_ERR_VALUE, "dtype");
        {   /* a constant: nothing to differentiate */
            gr_var *x = gr_vector(g, GR_F64, "x"), *gx = NULL;
            gr_var *cost = gr_sum(gr_mul(x, gr_arange(g, 0, 3, 1, GR_F64)));
            CHECK_STATUS(gr_grad(cost, 1, &x, &gx, NULL), GR_OK);
            CHECK(gx != NULL);
        }
        gr_graph_free(g);
    }
}

/* ==== gr_tile =============================================================================================== */

/* the plain-C tile */
static gr_array *gs2_tile_ref(const gr_array *x, int n, const int64_t *reps, gr_dtype odt) {
    int64_t r[GR_MAX_NDIM], s[GR_MAX_NDIM], o[GR_MAX_NDIM], idx[GR_MAX_NDIM], k;
    int m = n > x->ndim ? n : x->ndim, i;
    gr_array *want;
    for (i = 0; i < m; i++) {
        r[i] = i >= m - n ? reps[i - (m - n)] : 1;
        s[i] = i >= m - x->ndim ? x->shape[i - (m - x->ndim)] : 1;
        o[i] = r[i] * s[i];
    }
    want = gs2_want(odt, m, o);
    for (k = 0; k < want->size; k++) {
        gs2_unflat(k, m, o, idx);
        for (i = 0; i < m; i++) idx[i] %= s[i];
        gs2_copy(want, k, x, gs2_flat(m, s, idx));
    }
    return want;
}

typedef struct gs2_tcase { int xnd; int64_t xs[3]; int n; int64_t reps[4]; } gs2_tcase;
static const gs2_tcase gs2_tcases[] = {
    { 2, { 2, 3 }, 1, { 2 } },                   /* fewer reps than axes: the last axis */
    { 2, { 2, 3 }, 2, { 2, 2 } },
    { 1, { 3 }, 3, { 2, 1, 2 } },                /* more reps than axes: prepended */
    { 0, { 0 }, 2, { 3, 2 } },
    { 2, { 2, 3 }, 2, { 0, 2 } },                /* a zero repetition */
    { 3, { 2, 1, 2 }, 3, { 1, 3, 2 } },
    { 2, { 2, 3 }, 2, { 1, 1 } },                /* nothing repeated: x itself */
    { 1, { 4 }, 0, { 0 } },                      /* no reps */
};

TEST(test_tile_values) {
    gtf_rng rng;
    size_t c;
    int d, dyn;
    rng.s = 250;
    for (c = 0; c < sizeof gs2_tcases / sizeof gs2_tcases[0]; c++)
        for (d = 0; d < 4; d++)
            for (dyn = 0; dyn < 2; dyn++) {
                const gs2_tcase *tc = &gs2_tcases[c];
                gr_dtype dt = gs2_dtypes[d];
                gr_graph *g = gr_graph_new();
                gr_var *x = gtf_input(g, dt, tc->xnd, tc->xs, dyn, "x"), *y;
                gr_array *xa = gtf_random(&rng, dt, tc->xnd, tc->xs, -5, 5), *want = gs2_tile_ref(xa, tc->n, tc->reps, dt);
                char label[96];
                y = gr_tile(x, tc->n, tc->n ? tc->reps : NULL);
                snprintf(label, sizeof label, "gr_tile case %d (%s, %s)", (int)c, gr_dtype_name(dt), dyn ? "dynamic" : "static");
                gs2_expect1(g, x, xa, y, dt, want, label);
                if (!dyn) gtf_static_shape_is(y, want->ndim, want->shape, label);
                gr_array_free(xa);
                gr_array_free(want);
                gr_graph_free(g);
            }
}

TEST(test_tile_errors) {
    static const int64_t reps[2] = { 2, 2 }, neg[2] = { 2, -1 }, r9[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 2 }, huge[2] = { INT64_MAX, 3 };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_matrix(g, GR_F64, "x");
    int64_t s2[2] = { 2, 2 };
    CHECK(gr_tile(NULL, 2, reps) == NULL);
    CHECK_STATUS(gr_graph_status(g), GR_OK);
    CHECK(gr_tile(x, -1, reps) == NULL);
    gs2_err(g, GR_ERR_VALUE, "gr_tile");
    CHECK(gr_tile(x, 2, NULL) == NULL);
    gs2_err(g, GR_ERR_VALUE, "NULL");
    CHECK(gr_tile(x, 2, neg) == NULL);
    gs2_err(g, GR_ERR_VALUE, "negative");
    CHECK(gr_tile(x, 9, r9) == NULL);
    gs2_err(g, GR_ERR_VALUE, "gr_tile");
    CHECK(gr_tile(gr_tensor(g, GR_F64, 2, s2, "t"), 2, huge) == NULL);
    gs2_err(g, GR_ERR_VALUE, "too many elements");
    gr_graph_free(g);
}

/* ---- joins of no operands ----------------------------------------------------------------------- */

/* gr_concatenate / gr_stack of 0 operands: NULL, and nothing recorded anywhere, since there is no
   variable whose graph could hold the error (API.md: the first non-NULL variable argument's) */
TEST(test_join_of_nothing) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *xs[2];
    xs[0] = x; xs[1] = NULL;
    CHECK(gr_concatenate(0, xs, 0) == NULL);
    CHECK(gr_stack(0, xs, 0) == NULL);
    CHECK(gr_concatenate(0, NULL, 0) == NULL && gr_stack(-1, NULL, 0) == NULL);
    CHECK(gr_concatenate(2, xs, 0) == NULL && gr_stack(2, xs, 0) == NULL);   /* a NULL operand: silent, as every builder */
    CHECK_OK_GRAPH(g);
    CHECK(gr_concatenate(1, xs, 1) == NULL);                                 /* with an operand, errors are recorded */
    CHECK_STATUS(gr_graph_status(g), GR_ERR_VALUE);
    CHECK_CONTAINS(gr_graph_message(g), "gr_concatenate");
    gr_graph_free(g);
}


/* [x (2,3) | y (2,2)] along -1, every dtype, static and call-time shapes */
TEST(gts_op_Join) {
    static const int64_t sx[2] = { 2, 3 }, sy[2] = { 2, 2 }, sj[2] = { 2, 5 };
    gtf_rng rng;
    int d, dyn;
    rng.s = 140;
    for (d = 0; d < 4; d++)
        for (dyn = 0; dyn < 2; dyn++) {
            gr_dtype dt = gts_dtypes[d];
            gr_graph *g = gr_graph_new();
            gr_var *ins[2];
            gr_array *arr[2], *want = gts_want(dt, 2, sj);
            int64_t r, c;
            ins[0] = gtf_input(g, dt, 2, sx, dyn, "x");
            ins[1] = gtf_input(g, dt, 2, sy, dyn, "y");
            arr[0] = gts_random(&rng, dt, 2, sx, -5, 5, -9, 9);
            arr[1] = gts_random(&rng, dt, 2, sy, -5, 5, -9, 9);
            for (r = 0; r < 2; r++)
                for (c = 0; c < 5; c++) gts_copy_elem(want, r * 5 + c, arr[c < 3 ? 0 : 1], c < 3 ? r * 3 + c : r * 2 + c - 3);
            gtf_expect(g, 2, ins, (const gr_array *const *)arr, gr_concatenate(2, ins, -1), dt, want, 0, "gr_concatenate (2,3) | (2,2)");
            gr_array_free(arr[0]); gr_array_free(arr[1]); gr_array_free(want);
            gr_graph_free(g);
        }
}

/* x (2,5) cut into (2,0,3) along axis 1 */
TEST(gts_op_Split) {
    static const int64_t sx[2] = { 2, 5 }, sizes[3] = { 2, 0, 3 };
    gtf_rng rng;
    int d, dyn, j;
    rng.s = 141;
    for (d = 0; d < 4; d++)
        for (dyn = 0; dyn < 2; dyn++) {
            gr_dtype dt = gts_dtypes[d];
            gr_graph *g = gr_graph_new();
            gr_var *x = gtf_input(g, dt, 2, sx, dyn, "x"), *p[3];
            gr_array *xa = gts_random(&rng, dt, 2, sx, -5, 5, -9, 9);
            int64_t off = 0;
            CHECK_STATUS(gr_split(x, 1, 3, sizes, p), GR_OK);
            for (j = 0; j < 3; j++) {
                int64_t ps[2], r, c;
                gr_array *want;
                ps[0] = 2; ps[1] = sizes[j];
                want = gts_want(dt, 2, ps);
                for (r = 0; r < 2; r++)
                    for (c = 0; c < sizes[j]; c++) gts_copy_elem(want, r * sizes[j] + c, xa, r * 5 + off + c);
                gts_expect1(g, x, xa, p[j], dt, want, 0, "gr_split (2,5) into 2, 0, 3");
                off += sizes[j];
                gr_array_free(want);
            }
            gr_array_free(xa);
            gr_graph_free(g);
        }
}

/* x (3,1) broadcast to (2,3,4) */
TEST(gts_op_BroadcastTo) {
    static const int64_t sx[2] = { 3, 1 }, sy[3] = { 2, 3, 4 };
    gtf_rng rng;
    int d, dyn;
    rng.s = 142;
    for (d = 0; d < 4; d++)
        for (dyn = 0; dyn < 2; dyn++) {
            gr_dtype dt = gts_dtypes[d];
            gr_graph *g = gr_graph_new();
            gr_var *x = gtf_input(g, dt, 2, sx, dyn, "x");
            gr_array *xa = gts_random(&rng, dt, 2, sx, -5, 5, -9, 9), *want = gts_want(dt, 3, sy);
            int64_t k;
            for (k = 0; k < 24; k++) gts_copy_elem(want, k, xa, (k / 4) % 3);
            gts_expect1(g, x, xa, gr_broadcast_to(x, 3, sy), dt, want, 0, "gr_broadcast_to (3,1) to (2,3,4)");
            gr_array_free(xa); gr_array_free(want);
            gr_graph_free(g);
        }
}

/* x (2,3) tiled by (2,1,2): (2,2,6) */
TEST(gts_op_Tile) {
    static const int64_t sx[2] = { 2, 3 }, reps[3] = { 2, 1, 2 }, sy[3] = { 2, 2, 6 };
    gtf_rng rng;
    int d, dyn;
    rng.s = 143;
    for (d = 0; d < 4; d++)
        for (dyn = 0; dyn < 2; dyn++) {
            gr_dtype dt = gts_dtypes[d];
            gr_graph *g = gr_graph_new();
            gr_var *x = gtf_input(g, dt, 2, sx, dyn, "x");
            gr_array *xa = gts_random(&rng, dt, 2, sx, -5, 5, -9, 9), *want = gts_want(dt, 3, sy);
            int64_t k;
            for (k = 0; k < 24; k++) gts_copy_elem(want, k, xa, ((k / 6) % 2) * 3 + (k % 6) % 3);
            gts_expect1(g, x, xa, gr_tile(x, 3, reps), dt, want, 0, "gr_tile (2,3) by (2,1,2)");
            gr_array_free(xa); gr_array_free(want);
            gr_graph_free(g);
        }
}

/* the gradient of tile(c (2,3), (2,2)) for a cotangent u (4,6): u summed over its four tiles */
TEST(gts_op_Untile) {
    static const int64_t sc[2] = { 2, 3 }, reps[2] = { 2, 2 }, su[2] = { 4, 6 };
    gtf_rng rng;
    int d, dyn;
    rng.s = 144;
    for (d = 0; d < 2; d++)
        for (dyn = 0; dyn < 2; dyn++) {
            gr_dtype dt = gts_dtypes[d];
            gr_graph *g = gr_graph_new();
            gr_var *c = gtf_input(g, dt, 2, sc, dyn, "c"), *u = gtf_input(g, dt, 2, su, dyn, "u"), *t, *r = NULL;
            gr_array *ua = gts_random(&rng, dt, 2, su, -5, 5, 0, 0), *ca = gr_array_new(dt, 2, sc), *want = gts_want(dt, 2, sc);
            gr_var *ins[2];
            gr_array *arr[2];
            int64_t k;
            t = gr_tile(c, 2, reps);
            CHECK_STATUS(gr_lop(1, &t, 1, &c, &u, &r, NULL), GR_OK);
            for (k = 0; k < 24; k++) ((double *)want->data)[((k / 6) % 2) * 3 + (k % 6) % 3] += gr_array_get(ua, k);
            ins[0] = c; ins[1] = u; arr[0] = ca; arr[1] = ua;
            gtf_expect(g, 2, ins, (const gr_array *const *)arr, r, dt, want, gts_tol(dt), "untile (4,6) onto (2,3)");
            gr_array_free(ua); gr_array_free(ca); gr_array_free(want);
            gr_graph_free(g);
        }
}


/* ==== Jacobians and Hessians: the batching rules =================================================================== */

typedef gr_var *(*gs2_lin)(gr_graph *g, gr_var *x);

/* J = gr_jacobian(f(x), x) against columns f(e_k) of the linear map f, for x of shape xs */
static void gs2_check_jacobian_linear(gs2_lin fn, int xnd, const int64_t *xs, const char *label) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_tensor(g, GR_F64, xnd, NULL, "x"), *y = fn(g, x), *J = NULL;
    gr_fn *fy = NULL, *fj = NULL;
    gr_array *xa = gr_array_new(GR_F64, xnd, xs), *jcopy = NULL;
    const gr_array *res[1];
    int64_t k, i;
    if (!y || gr_jacobian(y, 1, &x, &J, NULL) != GR_OK) {
        gt_fail(__FILE__, __LINE__, "%s: %s", label, gr_graph_message(g));
        goto done;
    }
    fy = gr_function(1, &x, 1, &y, NULL);
    fj = gr_function(1, &x, 1, &J, NULL);
    if (!fy || !fj || gr_call(fj, (const gr_array *const *)&xa, res) != GR_OK) {
        gt_fail(__FILE__, __LINE__, "%s: %s %s", label, gr_graph_message(g), fj ? gr_fn_message(fj) : "");
        goto done;
    }
    jcopy = gr_array_copy(res[0]);
    for (k = 0; k < xa->size; k++) {
        int64_t m;
        memset(xa->data, 0, (size_t)xa->size * sizeof(double));
        ((double *)xa->data)[k] = 1;
        if (gr_call(fy, (const gr_array *const *)&xa, res) != GR_OK) { gt_fail(__FILE__, __LINE__, "%s: f(e_k) fails", label); goto done; }
        m = res[0]->size;
        CHECK_EQ_INT(jcopy->size, m * xa->size);
        for (i = 0; i < m && jcopy->size == m * xa->size; i++)
            if (gr_array_get(jcopy, i * xa->size + k) != gr_array_get(res[0], i)) {
                gt_fail(__FILE__, __LINE__, "%s: J[%lld, %lld] is %g, want %g", label, (long long)i, (long long)k,
                        gr_array_get(jcopy, i * xa->size + k), gr_array_get(res[0], i));
                goto done;
            }
    }
done:
    gr_array_free(jcopy);
    gr_array_free(xa);
    gr_fn_free(fy);
    gr_fn_free(fj);
    gr_graph_free(g);
}

static gr_var *gs2_l_concat(gr_graph *g, gr_var *x) {
    gr_var *xs[3];
    xs[0] = x; xs[1] = gr_mul(x, gr_const(g, 2)); xs[2] = gr_neg(x);
    return gr_concatenate(3, xs, 1);
}
static gr_var *gs2_l_concat_const(gr_graph *g, gr_var *x) {   /* an operand that does not depend on x */
    gr_var *xs[2];
    int64_t s[2] = { 2, 2 };
    gr_array *c = gr_array_new(GR_F64, 2, s);
    xs[0] = gr_constant(g, c); xs[1] = x;
    gr_array_free(c);
    return gr_concatenate(2, xs, 1);
}
static gr_var *gs2_l_stack(gr_graph *g, gr_var *x) {
    gr_var *xs[2];
    xs[0] = x; xs[1] = gr_mul(x, gr_const(g, 3));
    return gr_stack(2, xs, -1);
}
static gr_var *gs2_l_split(gr_graph *g, gr_var *x) {       /* piece 1 unused; pieces 0 and 2 combined */
    static const int64_t sizes[3] = { 1, 1, 1 };
    gr_var *p[3], *xs[2];
    if (gr_split(x, 1, 3, sizes, p) != GR_OK) return NULL;
    xs[0] = p[2]; xs[1] = gr_mul(p[0], gr_const(g, 5));
    return gr_concatenate(2, xs, 0);
}
static gr_var *gs2_l_split_one(gr_graph *g, gr_var *x) {   /* one piece: the Join of its gradient mixes batched and not */
    static const int64_t sizes[2] = { 2, 1 };
    gr_var *p[2];
    (void)g;
    return gr_split(x, -1, 2, sizes, p) == GR_OK ? p[1] : NULL;
}
static gr_var *gs2_l_tile(gr_graph *g, gr_var *x) {
    static const int64_t reps[3] = { 2, 1, 2 };
    (void)g;
    return gr_tile(x, 3, reps);
}
static gr_var *gs2_l_bto(gr_graph *g, gr_var *x) {
    static const int64_t shape[3] = { 2, 2, 3 };
    (void)g;
    return gr_broadcast_to(gr_slice(x, 0, 0, 1, 1), 3, shape);
}
static gr_var *gs2_l_untile(gr_graph *g, gr_var *x) {      /* the gradient of a tile: Untile */
    static const int64_t reps[1] = { 2 };
    int64_t s[2] = { 2, 3 };
    gr_array *c = gr_array_new(GR_F64, 2, s);
    gr_var *cv = gr_constant(g, c), *t = gr_tile(cv, 1, reps), *r = NULL;
    gr_grad_opts o;
    gr_array_free(c);
    memset(&o, 0, sizeof o);
    /* x (2, 6) is the cotangent of tile(c) */
    return gr_lop(1, &t, 1, &cv, &x, &r, &o) == GR_OK ? r : NULL;
}

TEST(test_jacobians_through_batch_rules) {
    static const int64_t s23[2] = { 2, 3 }, s22[2] = { 2, 2 }, s26[2] = { 2, 6 };
    gs2_check_jacobian_linear(gs2_l_concat, 2, s23, "jacobian of a concatenate");
    gs2_check_jacobian_linear(gs2_l_concat_const, 2, s22, "jacobian of a concatenate with a constant");
    gs2_check_jacobian_linear(gs2_l_stack, 2, s23, "jacobian of a stack");
    gs2_check_jacobian_linear(gs2_l_split, 2, s23, "jacobian of split pieces");
    gs2_check_jacobian_linear(gs2_l_split_one, 2, s23, "jacobian of one split piece");
    gs2_check_jacobian_linear(gs2_l_tile, 2, s23, "jacobian of a tile");
    gs2_check_jacobian_linear(gs2_l_bto, 2, s23, "jacobian of a broadcast_to");
    gs2_check_jacobian_linear(gs2_l_untile, 2, s26, "jacobian of an untile");
}

/* Hessians of costs through the new ops, against the known second derivatives */
TEST(test_hessians) {
    static const int64_t sizes[2] = { 1, 2 }, reps[2] = { 2, 1 }, bshape[2] = { 2, 3 };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *p[2], *xs[2], *c, *H = NULL;
    gr_array *xa;
    gr_fn *f;
    const gr_array *res[1];
    int64_t n3 = 3;
    double xv[3] = { 0.5, -1.0, 2.0 };
    int i, j;
    CHECK_STATUS(gr_split(x, 0, 2, sizes, p), GR_OK);
    /* cost = sum(stack(p1^3, 2 p1) ...) + sum(tile(x, (2,1))^2) + sum(broadcast_to(x, (2,3)) * x):
       d2/dx2 = diag(0, 6 x1, 6 x2) + 4 I + 4 I (each element of x appears twice in the tile; the
       broadcast gives 2 x^2 per element) */
    xs[0] = gr_mul(gr_sqr(p[1]), p[1]); xs[1] = gr_mul(p[1], gr_const(g, 2));
    c = gr_add(gr_sum(gr_stack(2, xs, 0)), gr_sum(gr_sqr(gr_tile(x, 2, reps))));
    c = gr_add(c, gr_sum(gr_mul(gr_broadcast_to(x, 2, bshape), x)));
    CHECK_STATUS(gr_hessian(c, 1, &x, &H, NULL), GR_OK);
    xa = gr_array_from(GR_F64, 1, &n3, xv);
    f = gr_function(1, &x, 1, &H, NULL);
    if (f && gr_call(f, (const gr_array *const *)&xa, res) == GR_OK) {
        CHECK_EQ_INT(res[0]->size, 9);
        for (i = 0; i < 3; i++)
            for (j = 0; j < 3; j++) {
                double want = i == j ? 8 + (i > 0 ? 6 * xv[i] : 0) : 0;
                CHECK_NEAR(gr_array_get(res[0], i * 3 + j), want, 1e-12);
            }
    } else CHECK_MSG(0, "hessian: %s %s", gr_graph_message(g), f ? gr_fn_message(f) : "");
    gr_fn_free(f);
    gr_array_free(xa);
    gr_graph_free(g);
}

/* printing a multi-output node, and a split used by two functions at once */
TEST(test_split_print_and_share) {
    static const int64_t sizes[2] = { 2, 3 };
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F32, "x"), *p[2];
    gr_fn *f1, *f2;
    FILE *tmp = tmpfile();
    CHECK_STATUS(gr_split(x, 0, 2, sizes, p), GR_OK);
    gr_graph_set_log(g, gs2_quiet, NULL);
    f1 = gr_function(1, &x, 2, p, NULL);
    f2 = gr_function(1, &x, 1, &p[1], NULL);
    CHECK(f1 && f2);
    if (tmp) {
        char buf[512];
        size_t n;
        gr_print(tmp, p[1]);
        rewind(tmp);
        n = fread(buf, 1, sizeof buf - 1, tmp);
        buf[n] = 0;
        CHECK_CONTAINS(buf, "Split(x)");
        CHECK_CONTAINS(buf, "float32(2)");
        CHECK_CONTAINS(buf, "float32(3)");
        fclose(tmp);
    }
    if (f1 && f2) {
        int64_t n5 = 5;
        float v[5] = { 1, 2, 3, 4, 5 };
        gr_array *xa = gr_array_from(GR_F32, 1, &n5, v);
        const gr_array *r1[2], *r2[1];
        CHECK_STATUS(gr_call(f1, (const gr_array *const *)&xa, r1), GR_OK);
        CHECK_STATUS(gr_call(f2, (const gr_array *const *)&xa, r2), GR_OK);
        if (r1[0] && r1[1] && r2[0]) {
            CHECK_NEAR(gr_array_get(r1[0], 1), 2, 0);
            CHECK_NEAR(gr_array_get(r1[1], 2), 5, 0);
            CHECK_NEAR(gr_array_get(r2[0], 0), 3, 0);
        }
        gr_array_free(xa);
    }
    gr_fn_free(f1);
    gr_fn_free(f2);
    gr_graph_free(g);
}


static gr_var *gs2_d_concat(gr_graph *g, gr_var *const *x, void *u) {
    int axis = u ? *(const int *)u : 0;
    (void)g;
    return gr_concatenate(2, x, axis);
}
static gr_var *gs2_d_concat3(gr_graph *g, gr_var *const *x, void *u) {
    gr_var *xs[3];
    (void)g; (void)u;
    xs[0] = gr_sin(x[0]); xs[1] = x[1]; xs[2] = gr_mul(x[0], x[0]);
    return gr_concatenate(3, xs, 1);
}
static gr_var *gs2_d_stack(gr_graph *g, gr_var *const *x, void *u) {
    (void)g; (void)u;
    return gr_stack(2, x, -1);
}
/* x (6,) or (2,6) split along the last axis into (2, 1, 3): piece 1 never reaches the output */
static gr_var *gs2_d_split_skip(gr_graph *g, gr_var *const *x, void *u) {
    static const int64_t sizes[3] = { 2, 1, 3 };
    gr_var *p[3];
    (void)g; (void)u;
    if (gr_split(x[0], -1, 3, sizes, p) != GR_OK) return NULL;
    return gr_mul(gr_slice(p[2], -1, 0, 2, 1), gr_sin(p[0]));
}
/* only the last piece is used */
static gr_var *gs2_d_split_last(gr_graph *g, gr_var *const *x, void *u) {
    static const int64_t sizes[2] = { 1, 2 };
    gr_var *p[2];
    (void)g; (void)u;
    if (gr_split(x[0], 0, 2, sizes, p) != GR_OK) return NULL;
    return gr_mul(p[1], p[1]);
}
/* every piece, each differently */
static gr_var *gs2_d_split_all(gr_graph *g, gr_var *const *x, void *u) {
    static const int64_t sizes[3] = { 1, 2, 1 };
    gr_var *p[3], *xs[3];
    (void)u;
    if (gr_split(x[0], 1, 3, sizes, p) != GR_OK) return NULL;
    xs[0] = gr_exp(p[0]); xs[1] = gr_mul(p[1], gr_const(g, 0.5)); xs[2] = gr_sqr(p[2]);
    return gr_concatenate(3, xs, 1);
}
static gr_var *gs2_d_bto(gr_graph *g, gr_var *const *x, void *u) {
    const int64_t *shape = (const int64_t *)u;
    return gr_mul(gr_broadcast_to(x[0], (int)shape[0], shape + 1), gr_const(g, 1.5));
}
static gr_var *gs2_d_tile(gr_graph *g, gr_var *const *x, void *u) {
    const int64_t *reps = (const int64_t *)u;
    (void)g;
    return gr_tile(x[0], (int)reps[0], reps + 1);
}
static gr_var *gs2_d_tile_sq(gr_graph *g, gr_var *const *x, void *u) {
    return gr_sqr(gs2_d_tile(g, x, u));
}
/* Untile(x, c): x is the cotangent of tile(c, reps) for a constant c of shape u = (nd, shape,
   n, reps...) */
static gr_var *gs2_d_untile(gr_graph *g, gr_var *const *x, void *u) {
    const int64_t *spec = (const int64_t *)u;
    int nd = (int)spec[0];
    gr_array *c = gr_array_new(GR_F64, nd, spec + 1);
    gr_var *cv = gr_constant(g, c), *t, *r = NULL;
    gr_grad_opts o;
    gr_array_free(c);
    t = gr_tile(cv, (int)spec[1 + nd], spec + 2 + nd);
    memset(&o, 0, sizeof o);
    return gr_lop(1, &t, 1, &cv, &x[0], &r, &o) == GR_OK ? gr_mul(r, r) : NULL;
}

static int gs2_axis1 = 1, gs2_axism1 = -1;
static int64_t gs2_bto_a[] = { 2, 2, 3 }, gs2_bto_b[] = { 3, 3, 2, 4 }, gs2_bto_c[] = { 2, 3, 2 };
static int64_t gs2_tile_a[] = { 2, 2, 2 }, gs2_tile_b[] = { 3, 2, 1, 2 }, gs2_tile_c[] = { 1, 3 };
static int64_t gs2_untile_a[] = { 2, 2, 3, 2, 2, 2 };          /* c (2,3), reps (2,2): x (4,6) */
static int64_t gs2_untile_b[] = { 1, 3, 3, 2, 1, 2 };          /* c (3,), reps (2,1,2): x (2,1,6) */

static const gtd_spec specs_Join[] = {
    { "Join", "(2,3) | (1,3) along 0", gs2_d_concat, NULL, 2, { GTD_IN(2, 2, 3, -2, 2), GTD_IN(2, 1, 3, -2, 2) }, GTD_GRADGRAD },
    { "Join", "(2,3) | (2,2) along -1", gs2_d_concat, &gs2_axism1, 2, { GTD_IN(2, 2, 3, -2, 2), GTD_IN(2, 2, 2, -2, 2) }, 0 },
    { "Join", "sin x | y | x^2 along 1", gs2_d_concat3, NULL, 2, { GTD_IN(2, 2, 2, -2, 2), GTD_IN(2, 2, 1, -2, 2) }, GTD_GRADGRAD },
    { "Join", "(2,1,3) | (2,2,3) along 1", gs2_d_concat, &gs2_axis1, 2, { GTD_IN3(2, 1, 3, -2, 2), GTD_IN3(2, 2, 3, -2, 2) }, 0 },
    { "Join", "stack of (3,) on -1", gs2_d_stack, NULL, 2, { GTD_IN(1, 3, 0, -2, 2), GTD_IN(1, 3, 0, -2, 2) }, 0 },
    GTD_END
};
static const gtd_spec specs_Split[] = {
    { "Split", "(6,) into 2,1,3, piece 1 unused", gs2_d_split_skip, NULL, 1, { GTD_IN(1, 6, 0, -2, 2) }, GTD_GRADGRAD },
    { "Split", "(2,6) into 2,1,3 on -1, piece 1 unused", gs2_d_split_skip, NULL, 1, { GTD_IN(2, 2, 6, -2, 2) }, 0 },
    { "Split", "(3,2) into 1,2, piece 0 unused", gs2_d_split_last, NULL, 1, { GTD_IN(2, 3, 2, -2, 2) }, GTD_GRADGRAD },
    { "Split", "(2,4) into 1,2,1 on 1, all used", gs2_d_split_all, NULL, 1, { GTD_IN(2, 2, 4, -1, 1) }, 0 },
    GTD_END
};
static const gtd_spec specs_BroadcastTo[] = {
    { "BroadcastTo", "(3,) to (2,3)", gs2_d_bto, gs2_bto_a, 1, { GTD_IN(1, 3, 0, -2, 2) }, GTD_GRADGRAD },
    { "BroadcastTo", "(2,1) to (3,2,4)", gs2_d_bto, gs2_bto_b, 1, { GTD_IN(2, 2, 1, -2, 2) }, 0 },
    { "BroadcastTo", "() to (3,2)", gs2_d_bto, gs2_bto_c, 1, { GTD_IN(0, 0, 0, -2, 2) }, 0 },
    GTD_END
};
static const gtd_spec specs_Tile[] = {
    { "Tile", "(2,3) by (2,2)", gs2_d_tile, gs2_tile_a, 1, { GTD_IN(2, 2, 3, -2, 2) }, 0 },
    { "Tile", "(3,) by (2,1,2), squared", gs2_d_tile_sq, gs2_tile_b, 1, { GTD_IN(1, 3, 0, -2, 2) }, GTD_GRADGRAD },
    { "Tile", "(2,2) by (3,), squared", gs2_d_tile_sq, gs2_tile_c, 1, { GTD_IN(2, 2, 2, -2, 2) }, 0 },
    GTD_END
};
static const gtd_spec specs_Untile[] = {
    { "Untile", "(4,6) onto (2,3), squared", gs2_d_untile, gs2_untile_a, 1, { GTD_IN(2, 4, 6, -1, 1) }, GTD_GRADGRAD },
    { "Untile", "(2,1,6) onto (3,), squared", gs2_d_untile, gs2_untile_b, 1, { GTD_IN3(2, 1, 6, -1, 1) }, 0 },
    GTD_END
};

GT_CASES(Join) = {
    GT_VALUES(gts_op_Join),
    GT_VALUES(test_concatenate_values),
    GT_VALUES(test_concatenate_dtypes),
    GT_VALUES(test_concatenate_many),
    GT_VALUES(test_concatenate_same_operand),
    GT_VALUES(test_stack_values),
    GT_SPECS(specs_Join),
    GT_DERIVS(test_join_rop_partial),
    GT_ERRORS(test_concatenate_errors),
    GT_ERRORS(test_stack_errors),
    GT_ERRORS(test_join_of_nothing),
    GT_END
};
GT_CASES(Split) = {
    GT_VALUES(gts_op_Split),
    GT_VALUES(test_split_values),
    GT_VALUES(test_split_many),
    GT_VALUES(test_split_print_and_share),
    GT_SPECS(specs_Split),
    GT_DERIVS(test_split_join_many_rop),
    GT_DERIVS(test_split_disconnected_outputs),
    GT_DERIVS(test_split_null_output_grad),
    GT_ERRORS(test_split_errors),
    GT_END
};
GT_CASES(BroadcastTo) = {
    GT_VALUES(gts_op_BroadcastTo),
    GT_VALUES(test_broadcast_to_values),
    GT_SPECS(specs_BroadcastTo),
    GT_ERRORS(test_broadcast_to_errors),
    GT_END
};
GT_CASES(Tile) = { GT_VALUES(gts_op_Tile), GT_VALUES(test_tile_values), GT_SPECS(specs_Tile), GT_ERRORS(test_tile_errors), GT_END };
GT_CASES(Untile) = {
    GT_VALUES(gts_op_Untile),
    GT_SPECS(specs_Untile),
    GT_NO_ERRORS("made only by the gradient of gr_tile, from checked operands"),
    GT_END
};

/* ==== the family's other tests ========================================================================= */

SUITE(suite_ops_shape) = {
    CASE(test_zeros_ones_like),
    CASE(test_arange),
    CASE(test_jacobians_through_batch_rules),
    CASE(test_hessians),
    END_SUITE
};
