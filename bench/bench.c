/* bench/bench.c: the workloads W1-W6 (W1 an MLP step, W2 an elementwise cost, W3 Rosenbrock derivatives, W4
   a Jacobian, W5 a chain of N links, W6 a recurrent network), each timed against a hand-written C version of
   the same computation in the same run, with the data of the "det" recipe. Prints medians and the
   ratio gradient.h / hand-written, and checks that both agree (checksums: sum and l2 of every
   gradient array; 1e-9 relative in float64, 1e-4 in float32). Built with -DBENCH_EMIT (make bench)
   it also times W1-W4 as C written by gr_fn_emit_c (bench/emitgen.c writes them into
   build/bench-emit), each checked against gr_call first, in rows "..., emitted C".
   Build and run: make bench (without and with GRADIENT_CBLAS); bench --emit: W1-W4 alone; bench --peers: the rows
   make bench-peers (bench/peers/run.sh) sets beside NumPy, PyTorch and ADOL-C. */
#define _POSIX_C_SOURCE 199309L   /* clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The library's allocations, counted (bytes live and the peak since the last reset) for W5's bytes a
   link: each block carries its size in front (one add per allocation; a steady-state call allocates
   nothing, so the timings do not see it). */
typedef union bench_head { size_t n; long double ld; void *p; } bench_head;
static size_t g_live, g_peak;
static void *bench_malloc(size_t n) {
    bench_head *h = (bench_head *)malloc(sizeof(bench_head) + n);
    if (!h) return NULL;
    h->n = n;
    if ((g_live += n) > g_peak) g_peak = g_live;
    return h + 1;
}
static void bench_free(void *p) {
    if (!p) return;
    g_live -= ((bench_head *)p - 1)->n;
    free((bench_head *)p - 1);
}
static void *bench_realloc(void *p, size_t n) {
    bench_head *h;
    size_t old = p ? ((bench_head *)p - 1)->n : 0;
    if (!p) return bench_malloc(n);
    h = (bench_head *)realloc((bench_head *)p - 1, sizeof(bench_head) + n);
    if (!h) return NULL;
    h->n = n;
    g_live = g_live - old + n;
    if (g_live > g_peak) g_peak = g_live;
    return h + 1;
}
#define GR_MALLOC(n) bench_malloc(n)
#define GR_REALLOC(p, n) bench_realloc(p, n)
#define GR_FREE(p) bench_free(p)
#define GRADIENT_IMPLEMENTATION
#include "../gradient.h"

#include "workloads.h"   /* the data ("det" recipe) and the graphs of W1-W4 */
#ifdef BENCH_EMIT
#include "bench_emit.h"  /* the emitted W1-W4 functions (bench/emitgen.c, make bench) */
#endif

/* ---- timing ------------------------------------------------------------------------------------------ */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
typedef void (*bench_fn)(void *ctx);
/* Median times of one call of a and of b, measured in alternation (a, b, a, b, ...) after warm-up
   for enough rounds to last ~min_time, so that a shared machine's drifting load and clock affect
   both alike. */
static void pair_time(bench_fn a, void *ca, bench_fn b, void *cb, double min_time, double *ta, double *tb) {
    double x[101], y[101], t0, one;
    int n, i;
    a(ca); b(cb);
    t0 = now();
    a(ca); b(cb);
    one = now() - t0;
    n = one > 0 ? (int)(min_time / one) : 101;
    if (n < 7) n = 7;
    if (n > 101) n = 101;
    for (i = 0; i < n; i++) {
        t0 = now(); a(ca); x[i] = now() - t0;
        t0 = now(); b(cb); y[i] = now() - t0;
    }
    qsort(x, (size_t)n, sizeof(double), cmp_double);
    qsort(y, (size_t)n, sizeof(double), cmp_double);
    *ta = x[n / 2];
    *tb = y[n / 2];
}

static double checksum_sum(const gr_array *a) { double s = 0; int64_t i; for (i = 0; i < a->size; i++) s += gr_array_get(a, i); return s; }
static double checksum_l2(const gr_array *a) { double s = 0; int64_t i; for (i = 0; i < a->size; i++) { double v = gr_array_get(a, i); s += v * v; } return sqrt(s); }
static int g_failures = 0;
/* the gradient array agrees with the hand-written one (length n) in sum and l2 */
static void agree(const char *what, const gr_array *a, const double *ref, int64_t n, double tol) {
    double s = 0, l2 = 0, ss = checksum_sum(a), al2 = checksum_l2(a);
    int64_t i;
    for (i = 0; i < n; i++) { s += ref[i]; l2 += ref[i] * ref[i]; }
    l2 = sqrt(l2);
    if (a->size != n || fabs(ss - s) > tol * (fabs(s) + l2 + 1e-300) || fabs(al2 - l2) > tol * (l2 + 1e-300)) {
        printf("  MISMATCH %s: sum %.12g vs %.12g, l2 %.12g vs %.12g\n", what, ss, s, al2, l2);
        g_failures++;
    }
}
static int g_ms_digits = 3;   /* 6 for bench --peers, whose table divides by the microsecond times */
static void row(const char *name, double t_gr, double t_hand, const char *note) {
    printf("| %-34s | %12.*f | %12.*f | %6.2f | %s\n", name, g_ms_digits, t_gr * 1e3, g_ms_digits, t_hand * 1e3, t_gr / t_hand,
           note ? note : "");
}
static void die(const char *what, gr_graph *g, gr_fn *f) {
    fprintf(stderr, "bench: %s failed: %s %s\n", what, g ? gr_graph_message(g) : "", f ? gr_fn_message(f) : "");
    exit(1);
}
static void call_or_die(gr_fn *f, const gr_array *const *in, const gr_array **out) {
    if (gr_call(f, in, out) != GR_OK) die("gr_call", NULL, f);
}

/* ---- the emitted functions (make bench: bench/emitgen.c writes W1-W4 with gr_fn_emit_c into
   build/bench-emit, and this file is built with them and -DBENCH_EMIT) --------------------------------- */

#ifdef BENCH_EMIT
typedef int (*em_fn)(const void *const *inputs, void *const *outputs, void *work);
typedef struct em_ctx { em_fn fn; const char *name; const void *in[6]; void *out[5]; void *work; int n_out; char note[96]; } em_ctx;
static void em_call(void *ctx) {
    em_ctx *c = (em_ctx *)ctx;
    int st = c->fn(c->in, c->out, c->work);
    if (st != 0) { fprintf(stderr, "bench: the emitted %s returned %d\n", c->name, st); exit(1); }
}
/* c set up on the inputs and outputs of a gr_call of the same function (made just before), called
   once and its outputs compared with gr_call's element by element: bench stops with a message if
   they differ by more than rounding (they are expected to be equal bit for bit) */
static void em_setup(em_ctx *c, const char *name, em_fn fn, size_t work_bytes, int n_in, const gr_array *const *in,
                     int n_out, const gr_array *const *out) {
    int i, nbits = 0;
    double worst = 0;
    memset(c, 0, sizeof *c);
    c->fn = fn; c->name = name; c->n_out = n_out;
    c->work = malloc(work_bytes ? work_bytes : 1);
    for (i = 0; i < n_in; i++) c->in[i] = in[i]->data;
    for (i = 0; i < n_out; i++) c->out[i] = calloc((size_t)(out[i]->size ? out[i]->size : 1), out[i]->dtype == GR_F32 ? 4 : 8);
    em_call(c);
    for (i = 0; i < n_out; i++) {
        int64_t k, n = out[i]->size;
        int f32 = out[i]->dtype == GR_F32;
        double scale = 0, tol = f32 ? 1e-5 : 1e-12;
        for (k = 0; k < n; k++) scale = fmax(scale, fabs(gr_array_get(out[i], k)));
        for (k = 0; k < n; k++) {
            double a = gr_array_get(out[i], k), b = f32 ? (double)((float *)c->out[i])[k] : ((double *)c->out[i])[k];
            if (a != b) nbits++;
            if (!(fabs(a - b) <= tol * scale)) {
                fprintf(stderr, "bench: the emitted %s differs from gr_call: output %d, element %lld: %.17g vs %.17g\n", name, i,
                        (long long)k, b, a);
                exit(1);
            }
            if (scale > 0) worst = fmax(worst, fabs(a - b) / scale);
        }
    }
    if (nbits) snprintf(c->note, sizeof c->note, "%d values differ from gr_call (%.1e of the largest)", nbits, worst);
    else snprintf(c->note, sizeof c->note, "equal to gr_call bit for bit");
}
/* times the emitted function against the hand-written one; its row, with the gr_call time t_gr beside */
static void em_row(const char *name, em_ctx *c, bench_fn hand, void *hctx, double min_time, double t_gr) {
    double t_em, t_hand;
    char note[200];
    int i;
    pair_time(em_call, c, hand, hctx, min_time, &t_em, &t_hand);
    snprintf(note, sizeof note, "gr_call / emitted %.2f; %s", t_gr / t_em, c->note);
    row(name, t_em, t_hand, note);
    free(c->work);
    for (i = 0; i < c->n_out; i++) free(c->out[i]);
}
#define EM_SETUP(c, NAME, n_in, in, n_out, out) em_setup(c, #NAME, NAME, NAME##_WORK_BYTES, n_in, in, n_out, out)
#endif

/* ---- hand-written GEMM (the reference side): CBLAS when available, else a blocked loop ------------ */

/* C (M x N) = op(A) op(B) + (accumulate ? C : 0), row-major, double or float by `f32` */
static void hand_gemm(int f32, int ta, int tb, int M, int N, int K, const void *A, const void *B, void *C) {
#ifdef GR_HAVE_CBLAS
    if (f32) cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, 1.0f,
                         (const float *)A, ta ? M : K, (const float *)B, tb ? K : N, 0.0f, (float *)C, N);
    else cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, 1.0,
                     (const double *)A, ta ? M : K, (const double *)B, tb ? K : N, 0.0, (double *)C, N);
#else
    int i, j, k;
    if (f32) {
        const float *a = (const float *)A, *b = (const float *)B;
        float *c = (float *)C;
        memset(c, 0, sizeof(float) * (size_t)M * (size_t)N);
        for (i = 0; i < M; i++)
            for (k = 0; k < K; k++) {
                float aik = ta ? a[k * M + i] : a[i * K + k];
                if (!tb) for (j = 0; j < N; j++) c[i * N + j] += aik * b[k * N + j];
                else for (j = 0; j < N; j++) c[i * N + j] += aik * b[j * K + k];
            }
    } else {
        const double *a = (const double *)A, *b = (const double *)B;
        double *c = (double *)C;
        memset(c, 0, sizeof(double) * (size_t)M * (size_t)N);
        for (i = 0; i < M; i++)
            for (k = 0; k < K; k++) {
                double aik = ta ? a[k * M + i] : a[i * K + k];
                if (!tb) for (j = 0; j < N; j++) c[i * N + j] += aik * b[k * N + j];
                else for (j = 0; j < N; j++) c[i * N + j] += aik * b[j * K + k];
            }
    }
#endif
}

/* ==== W1: MLP step ======================================================================================
   h = tanh(X W1 + b1), logits = h W2 + b2, cost = mean_r(logsumexp(logits[r,:]) - logits[r, y[r]]) */

typedef struct w1_ctx {
    int f32;
    gr_fn *f;
    const gr_array *in[6];
    const gr_array *out[5];
    /* hand-written buffers (double or float by f32) */
    void *X, *W1, *b1, *W2, *b2, *Z, *Hd, *L, *dL, *dH, *gW1, *gb1, *gW2, *gb2;
    int *y;
    double cost;
} w1_ctx;

#define W1_HAND(T, EXP, LOG, TANH)                                                                          \
    do {                                                                                                    \
        T *X = (T *)c->X, *W1 = (T *)c->W1, *b1 = (T *)c->b1, *W2 = (T *)c->W2, *b2 = (T *)c->b2;           \
        T *H = (T *)c->Hd, *L = (T *)c->L, *dL = (T *)c->dL, *dH = (T *)c->dH;                              \
        T *gW1 = (T *)c->gW1, *gb1 = (T *)c->gb1, *gW2 = (T *)c->gW2, *gb2 = (T *)c->gb2;                   \
        double cost = 0;                                                                                    \
        int r, j;                                                                                           \
        hand_gemm(c->f32, 0, 0, W1_N, W1_H, W1_D, X, W1, H);                                                \
        for (r = 0; r < W1_N; r++)                                                                          \
            for (j = 0; j < W1_H; j++) H[r * W1_H + j] = TANH(H[r * W1_H + j] + b1[j]);                    \
        hand_gemm(c->f32, 0, 0, W1_N, W1_C, W1_H, H, W2, L);                                                \
        for (r = 0; r < W1_N; r++) {                                                                        \
            T *l = L + r * W1_C, m = -INFINITY, s = 0, lse;                                                 \
            for (j = 0; j < W1_C; j++) { l[j] += b2[j]; if (l[j] > m) m = l[j]; }                           \
            for (j = 0; j < W1_C; j++) s += EXP(l[j] - m);                                                  \
            lse = m + LOG(s);                                                                               \
            cost += (double)(lse - l[c->y[r]]);                                                             \
            for (j = 0; j < W1_C; j++) dL[r * W1_C + j] = (EXP(l[j] - lse) - (j == c->y[r] ? (T)1 : (T)0)) / (T)W1_N; \
        }                                                                                                   \
        c->cost = cost / W1_N;                                                                              \
        hand_gemm(c->f32, 1, 0, W1_H, W1_C, W1_N, H, dL, gW2);                                              \
        for (j = 0; j < W1_C; j++) { T s = 0; for (r = 0; r < W1_N; r++) s += dL[r * W1_C + j]; gb2[j] = s; } \
        hand_gemm(c->f32, 0, 1, W1_N, W1_H, W1_C, dL, W2, dH);                                              \
        for (r = 0; r < W1_N * W1_H; r++) dH[r] *= (T)1 - H[r] * H[r];                                     \
        for (j = 0; j < W1_H; j++) { T s = 0; for (r = 0; r < W1_N; r++) s += dH[r * W1_H + j]; gb1[j] = s; } \
        hand_gemm(c->f32, 1, 0, W1_D, W1_H, W1_N, X, dH, gW1);                                              \
    } while (0)

static void w1_hand(void *ctx) {
    w1_ctx *c = (w1_ctx *)ctx;
    if (c->f32) W1_HAND(float, expf, logf, tanhf);
    else W1_HAND(double, exp, log, tanh);
}
static void w1_gr(void *ctx) {
    w1_ctx *c = (w1_ctx *)ctx;
    call_or_die(c->f, c->in, c->out);
}

static void bench_w1(int f32) {
    gr_dtype dt = f32 ? GR_F32 : GR_F64;
    size_t es = f32 ? 4 : 8;
    gr_array *in[6], *X, *W1, *b1, *W2, *b2, *Y;
    gr_graph *g = gr_graph_new();
    gr_var *ins[6], *outs[5];
    w1_ctx c;
    double t_gr, t_hand, t_compile;
    int i;
    memset(&c, 0, sizeof c);
    c.f32 = f32;
    c.y = (int *)malloc(sizeof(int) * W1_N);
    w1_data(dt, in, c.y);
    X = in[0]; Y = in[1]; W1 = in[2]; b1 = in[3]; W2 = in[4]; b2 = in[5];
    if (w1_graph(g, dt, ins, outs) != GR_OK) die("W1 gr_grad", g, NULL);
    t_compile = now();
    c.f = gr_function(6, ins, 5, outs, NULL);
    t_compile = now() - t_compile;
    if (!c.f) die("W1 gr_function", g, NULL);
    for (i = 0; i < 6; i++) c.in[i] = in[i];
    c.X = X->data; c.W1 = W1->data; c.b1 = b1->data; c.W2 = W2->data; c.b2 = b2->data;
    c.Hd = malloc(es * W1_N * W1_H); c.L = malloc(es * W1_N * W1_C); c.dL = malloc(es * W1_N * W1_C); c.dH = malloc(es * W1_N * W1_H);
    c.gW1 = malloc(es * W1_D * W1_H); c.gb1 = malloc(es * W1_H); c.gW2 = malloc(es * W1_H * W1_C); c.gb2 = malloc(es * W1_C);
    pair_time(w1_gr, &c, w1_hand, &c, 2.0, &t_gr, &t_hand);
    {   /* agreement */
        double tol = f32 ? 1e-4 : 1e-9, *ref;
        int64_t n, k;
        void *bufs[4];
        int64_t sizes[4];
        const char *names[4] = { "W1 dW1", "W1 db1", "W1 dW2", "W1 db2" };
        bufs[0] = c.gW1; bufs[1] = c.gb1; bufs[2] = c.gW2; bufs[3] = c.gb2;
        sizes[0] = W1_D * W1_H; sizes[1] = W1_H; sizes[2] = W1_H * W1_C; sizes[3] = W1_C;
        w1_gr(&c);
        w1_hand(&c);
        if (fabs(gr_array_get(c.out[0], 0) - c.cost) > tol * fabs(c.cost)) { printf("  MISMATCH W1 cost %.12g vs %.12g\n", gr_array_get(c.out[0], 0), c.cost); g_failures++; }
        for (i = 0; i < 4; i++) {
            n = sizes[i];
            ref = (double *)malloc(sizeof(double) * (size_t)n);
            for (k = 0; k < n; k++) ref[k] = f32 ? (double)((float *)bufs[i])[k] : ((double *)bufs[i])[k];
            agree(names[i], c.out[1 + i], ref, n, tol);
            free(ref);
        }
    }
    {
        char note[96];
        snprintf(note, sizeof note, "compile %.2f ms, %zu nodes", t_compile * 1e3, gr_fn_node_count(c.f));
        row(f32 ? "W1 MLP step, float32" : "W1 MLP step, float64", t_gr, t_hand, note);
    }
#ifdef BENCH_EMIT
    {
        em_ctx e;
        w1_gr(&c);
        if (f32) EM_SETUP(&e, emitted_w1_f32, 6, c.in, 5, c.out);
        else EM_SETUP(&e, emitted_w1_f64, 6, c.in, 5, c.out);
        em_row(f32 ? "W1 MLP step, float32, emitted C" : "W1 MLP step, float64, emitted C", &e, w1_hand, &c, 2.0, t_gr);
    }
#endif
    gr_fn_free(c.f);
    gr_graph_free(g);
    gr_array_free(X); gr_array_free(W1); gr_array_free(b1); gr_array_free(W2); gr_array_free(b2); gr_array_free(Y);
    free(c.y); free(c.Hd); free(c.L); free(c.dL); free(c.dH); free(c.gW1); free(c.gb1); free(c.gW2); free(c.gb2);
}

/* ==== W2: elementwise ===================================================================================
   cost = sum(sin(x) exp(-x x) + log1p(x x) + tanh(x) x), x of 1e6 float64 */

typedef struct w2_ctx { gr_fn *fc, *fg; const gr_array *in[1]; const gr_array *out[2]; const double *x; double *g; double cost; } w2_ctx;

static void w2_hand_cost(void *ctx) {
    w2_ctx *c = (w2_ctx *)ctx;
    double s = 0;
    int i;
    for (i = 0; i < W2_N; i++) {
        double x = c->x[i];
        s += sin(x) * exp(-x * x) + log1p(x * x) + tanh(x) * x;
    }
    c->cost = s;
}
static void w2_hand_grad(void *ctx) {
    w2_ctx *c = (w2_ctx *)ctx;
    double s = 0;
    int i;
    for (i = 0; i < W2_N; i++) {
        double x = c->x[i], sx = sin(x), cx = cos(x), e = exp(-x * x), t = tanh(x), xx = x * x;
        s += sx * e + log1p(xx) + t * x;
        c->g[i] = cx * e - 2 * x * sx * e + 2 * x / (1 + xx) + (1 - t * t) * x + t;
    }
    c->cost = s;
}
static void w2_gr_cost(void *ctx) { w2_ctx *c = (w2_ctx *)ctx; call_or_die(c->fc, c->in, c->out); }
static void w2_gr_grad(void *ctx) { w2_ctx *c = (w2_ctx *)ctx; call_or_die(c->fg, c->in, c->out); }

static void bench_w2(void) {
    gr_array *x = w2_data();
    gr_graph *g = gr_graph_new();
    w2_ctx c;
    double tc_gr, tc_hand, tg_gr, tg_hand;
    char note[128];
    memset(&c, 0, sizeof c);
    if (!w2_functions(g, &c.fc, &c.fg)) die("W2 gr_function", g, NULL);
    c.in[0] = x;
    c.x = (const double *)x->data;
    c.g = (double *)malloc(sizeof(double) * W2_N);
    pair_time(w2_gr_cost, &c, w2_hand_cost, &c, 2.0, &tc_gr, &tc_hand);
    pair_time(w2_gr_grad, &c, w2_hand_grad, &c, 2.0, &tg_gr, &tg_hand);
    w2_gr_grad(&c);
    w2_hand_grad(&c);
    if (fabs(gr_array_get(c.out[0], 0) - c.cost) > 1e-9 * fabs(c.cost)) { printf("  MISMATCH W2 cost\n"); g_failures++; }
    agree("W2 dx", c.out[1], c.g, W2_N, 1e-9);
    row("W2 elementwise cost", tc_gr, tc_hand, NULL);
    snprintf(note, sizeof note, "grad/forward %.2f (hand %.2f)", tg_gr / tc_gr, tg_hand / tc_hand);
    row("W2 elementwise cost + grad", tg_gr, tg_hand, note);
#ifdef BENCH_EMIT
    {
        em_ctx e;
        w2_gr_cost(&c);
        EM_SETUP(&e, emitted_w2_cost, 1, c.in, 1, c.out);
        em_row("W2 elementwise cost, emitted C", &e, w2_hand_cost, &c, 2.0, tc_gr);
        w2_gr_grad(&c);
        EM_SETUP(&e, emitted_w2_grad, 1, c.in, 2, c.out);
        em_row("W2 cost + grad, emitted C", &e, w2_hand_grad, &c, 2.0, tg_gr);
    }
#endif
    free(c.g);
    gr_fn_free(c.fc); gr_fn_free(c.fg);
    gr_graph_free(g);
    gr_array_free(x);
}

/* ==== W3: Rosenbrock =====================================================================================
   f(x) = sum_{i<n-1} 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2, with slices */

typedef struct w3_ctx { gr_fn *f; const gr_array *in[2]; const gr_array *out[1]; const double *x, *v; double *g; int n; } w3_ctx;

static void w3_hand_grad(void *ctx) {
    w3_ctx *c = (w3_ctx *)ctx;
    const double *x = c->x;
    int i, n = c->n;
    for (i = 0; i < n; i++) c->g[i] = 0;
    for (i = 0; i < n - 1; i++) {
        double a = x[i + 1] - x[i] * x[i];
        c->g[i] += -400 * x[i] * a - 2 * (1 - x[i]);
        c->g[i + 1] += 200 * a;
    }
}
static void w3_hand_hv(void *ctx) {            /* the tridiagonal Hessian times v */
    w3_ctx *c = (w3_ctx *)ctx;
    const double *x = c->x, *v = c->v;
    int i, n = c->n;
    for (i = 0; i < n; i++) c->g[i] = 0;
    for (i = 0; i < n - 1; i++) {
        double hii = 1200 * x[i] * x[i] - 400 * x[i + 1] + 2, hij = -400 * x[i];
        c->g[i] += hii * v[i] + hij * v[i + 1];
        c->g[i + 1] += hij * v[i] + 200 * v[i + 1];
    }
}
static void w3_hand_hessian(void *ctx) {
    w3_ctx *c = (w3_ctx *)ctx;
    const double *x = c->x;
    int i, n = c->n;
    memset(c->g, 0, sizeof(double) * (size_t)n * (size_t)n);
    for (i = 0; i < n - 1; i++) {
        c->g[i * n + i] += 1200 * x[i] * x[i] - 400 * x[i + 1] + 2;
        c->g[i * n + i + 1] = c->g[(i + 1) * n + i] = -400 * x[i];
        c->g[(i + 1) * n + i + 1] += 200;
    }
}
static void w3_gr(void *ctx) { w3_ctx *c = (w3_ctx *)ctx; call_or_die(c->f, c->in, c->out); }

static void bench_w3(void) {
    static const bench_fn hands[3] = { w3_hand_grad, w3_hand_hv, w3_hand_hessian };
    gr_array *xv[3], *x, *v, *x2;
    gr_graph *g = gr_graph_new();
    gr_fn *f[3];
    w3_ctx c;
    double t_gr[3], t_hand[3];
    char note[96];
    int k;
    memset(&c, 0, sizeof c);
    w3_data(xv);
    x = xv[0]; v = xv[1]; x2 = xv[2];
    if (!w3_functions(g, f, 0)) die("W3 drivers", g, NULL);
    c.g = (double *)malloc(sizeof(double) * W3_N * W3_N);
    c.x = (const double *)x->data;
    c.v = (const double *)v->data;
    /* the gradient and the Hessian-vector product, n = 1000; the full Hessian, n = 200 */
    for (k = 0; k < 3; k++) {
        c.f = f[k];
        c.n = k < 2 ? W3_N : W3_NH;
        c.in[0] = k < 2 ? x : x2;
        c.in[1] = v;
        pair_time(w3_gr, &c, hands[k], &c, 0.5, &t_gr[k], &t_hand[k]);
        w3_gr(&c); hands[k](&c);
        agree(k == 0 ? "W3 gradient" : k == 1 ? "W3 Hv" : "W3 Hessian", c.out[0], c.g, k < 2 ? c.n : c.n * c.n, 1e-9);
    }
    row("W3 Rosenbrock gradient, n=1000", t_gr[0], t_hand[0], NULL);
    snprintf(note, sizeof note, "Hv / our gradient %.2f", t_gr[1] / t_gr[0]);
    row("W3 Hessian-vector, n=1000", t_gr[1], t_hand[1], note);
    row("W3 full Hessian, n=200", t_gr[2], t_hand[2], NULL);
#ifdef BENCH_EMIT
    /* the emitted functions: d = 0 from the functions above; d = 1 from W3 built with its shapes
       declared (bench/workloads.h), checked against the same gr_call */
    int d;
    for (d = 0; d < 2; d++)
        for (k = 0; k < 3; k++) {
            static const em_fn fns[2][3] = { { emitted_w3_grad, emitted_w3_hv, emitted_w3_hess },
                                             { emitted_w3d_grad, emitted_w3d_hv, emitted_w3d_hess } };
            static const size_t works[2][3] = { { emitted_w3_grad_WORK_BYTES, emitted_w3_hv_WORK_BYTES, emitted_w3_hess_WORK_BYTES },
                                                { emitted_w3d_grad_WORK_BYTES, emitted_w3d_hv_WORK_BYTES, emitted_w3d_hess_WORK_BYTES } };
            static const char *const em_names[3] = { "W3 gradient, emitted C", "W3 Hv, emitted C", "W3 Hessian, emitted C" };
            em_ctx e;
            char name[64];
            c.f = f[k];
            c.n = k < 2 ? W3_N : W3_NH;
            c.in[0] = k < 2 ? x : x2;
            w3_gr(&c);
            snprintf(name, sizeof name, "%s%s", em_names[k], d ? ", declared" : "");
            em_setup(&e, name, fns[d][k], works[d][k], k == 1 ? 2 : 1, c.in, 1, c.out);
            em_row(name, &e, hands[k], &c, 0.5, t_gr[k]);
        }
#endif
    for (k = 0; k < 3; k++) gr_fn_free(f[k]);
    free(c.g);
    gr_graph_free(g);
    gr_array_free(x); gr_array_free(v); gr_array_free(x2);
}

/* ==== W4: Jacobian of tanh(A x + b), A 200x200 ========================================================== */

typedef struct w4_ctx { gr_fn *f; const gr_array *in[3]; const gr_array *out[1]; const double *A, *b, *x; double *J, *y; } w4_ctx;

static void w4_hand(void *ctx) {
    w4_ctx *c = (w4_ctx *)ctx;
    int i, j;
    for (i = 0; i < 200; i++) {
        double s = c->b[i];
        for (j = 0; j < 200; j++) s += c->A[i * 200 + j] * c->x[j];
        c->y[i] = tanh(s);
    }
    for (i = 0; i < 200; i++) {
        double d = 1 - c->y[i] * c->y[i];
        for (j = 0; j < 200; j++) c->J[i * 200 + j] = d * c->A[i * 200 + j];
    }
}
static void w4_gr(void *ctx) { w4_ctx *c = (w4_ctx *)ctx; call_or_die(c->f, c->in, c->out); }

static void bench_w4(void) {
    gr_array *in[3];
    gr_graph *g = gr_graph_new();
    w4_ctx c;
    double t_gr, t_hand;
    int i;
    memset(&c, 0, sizeof c);
    w4_data(in);
    c.f = w4_function(g);
    if (!c.f) die("W4 gr_jacobian / gr_function", g, NULL);
    for (i = 0; i < 3; i++) c.in[i] = in[i];
    c.A = (const double *)in[0]->data; c.b = (const double *)in[1]->data; c.x = (const double *)in[2]->data;
    c.J = (double *)malloc(sizeof(double) * W4_N * W4_N);
    c.y = (double *)malloc(sizeof(double) * W4_N);
    pair_time(w4_gr, &c, w4_hand, &c, 0.5, &t_gr, &t_hand);
    w4_gr(&c); w4_hand(&c);
    agree("W4 Jacobian", c.out[0], c.J, W4_N * W4_N, 1e-9);
    row("W4 Jacobian 200x200", t_gr, t_hand, NULL);
#ifdef BENCH_EMIT
    {
        em_ctx e;
        w4_gr(&c);
        EM_SETUP(&e, emitted_w4, 3, c.in, 1, c.out);
        em_row("W4 Jacobian, emitted C", &e, w4_hand, &c, 0.5, t_gr);
    }
#endif
    free(c.J); free(c.y);
    gr_fn_free(c.f);
    gr_graph_free(g);
    for (i = 0; i < 3; i++) gr_array_free(in[i]);
}

/* ==== W3 and W4 as users write them: Rosenbrock's cost and gradient from one function (one call, as an
   optimiser asks), and the Jacobian of tanh(A x + b) with shapes left undeclared (gr_matrix, gr_vector) == */

typedef struct w3cg_ctx { gr_fn *f; const gr_array *in[1]; const gr_array *out[2]; const double *x; double *g, cost; int n; } w3cg_ctx;
static void w3cg_hand(void *ctx) {
    w3cg_ctx *c = (w3cg_ctx *)ctx;
    const double *x = c->x;
    double f = 0;
    int i, n = c->n;
    for (i = 0; i < n; i++) c->g[i] = 0;
    for (i = 0; i < n - 1; i++) {
        double a = x[i + 1] - x[i] * x[i], b = 1 - x[i];
        f += 100 * a * a + b * b;
        c->g[i] += -400 * x[i] * a - 2 * b;
        c->g[i + 1] += 200 * a;
    }
    c->cost = f;
}
static void w3cg_gr(void *ctx) { w3cg_ctx *c = (w3cg_ctx *)ctx; call_or_die(c->f, c->in, c->out); }

static void bench_w3_cost_grad(void) {
    int64_t n = 1000;
    gr_array *x = det_array(GR_F64, 1, &n, 8, 1.0);
    gr_graph *g = gr_graph_new();
    gr_var *vx = gr_vector(g, GR_F64, "x"), *outs[2];
    w3cg_ctx c;
    double t_gr, t_hand;
    memset(&c, 0, sizeof c);
    outs[0] = rosenbrock(g, vx);
    outs[1] = gr_grad1(outs[0], vx);
    c.f = gr_function(1, &vx, 2, outs, NULL);
    if (!c.f) die("W3 cost + grad gr_function", g, NULL);
    c.in[0] = x; c.x = (const double *)x->data; c.n = (int)n;
    c.g = (double *)malloc(sizeof(double) * (size_t)n);
    pair_time(w3cg_gr, &c, w3cg_hand, &c, 0.5, &t_gr, &t_hand);
    w3cg_gr(&c); w3cg_hand(&c);
    agree("W3 cost + grad: gradient", c.out[1], c.g, n, 1e-9);
    agree("W3 cost + grad: cost", c.out[0], &c.cost, 1, 1e-9);
    row("W3 Rosenbrock cost + grad, n=1000", t_gr, t_hand, "one function giving both, as an optimiser calls it");
    free(c.g);
    gr_fn_free(c.f);
    gr_graph_free(g);
    gr_array_free(x);
}

static void bench_w4_undeclared(void) {
    int64_t as[2] = { 200, 200 }, n = 200;
    gr_array *A = det_array(GR_F64, 2, as, 10, 0.1), *b = det_array(GR_F64, 1, &n, 11, 0.1), *x = det_array(GR_F64, 1, &n, 12, 1.0);
    gr_graph *g = gr_graph_new();
    gr_var *vA = gr_matrix(g, GR_F64, "A"), *vb = gr_vector(g, GR_F64, "b"), *vx = gr_vector(g, GR_F64, "x");
    gr_var *J = NULL, *ins[3];
    w4_ctx c;
    double t_gr, t_hand;
    memset(&c, 0, sizeof c);
    if (gr_jacobian(gr_tanh(gr_add(gr_dot(vA, vx), vb)), 1, &vx, &J, NULL) != GR_OK) die("W4 undeclared gr_jacobian", g, NULL);
    ins[0] = vA; ins[1] = vb; ins[2] = vx;
    c.f = gr_function(3, ins, 1, &J, NULL);
    if (!c.f) die("W4 undeclared gr_function", g, NULL);
    c.in[0] = A; c.in[1] = b; c.in[2] = x;
    c.A = (const double *)A->data; c.b = (const double *)b->data; c.x = (const double *)x->data;
    c.J = (double *)malloc(sizeof(double) * 40000);
    c.y = (double *)malloc(sizeof(double) * 200);
    pair_time(w4_gr, &c, w4_hand, &c, 0.5, &t_gr, &t_hand);
    w4_gr(&c); w4_hand(&c);
    agree("W4 undeclared Jacobian", c.out[0], c.J, 40000, 1e-9);
    row("W4 Jacobian, shapes undeclared", t_gr, t_hand, "gr_matrix / gr_vector, as users write it");
    free(c.J); free(c.y);
    gr_fn_free(c.f);
    gr_graph_free(g);
    gr_array_free(A); gr_array_free(b); gr_array_free(x);
}

/* ==== a tiny function: f = sin(x y) + x^2 with df/dx, df/dy, scalars; timed over 1000 calls ============ */

enum { TINY_CALLS = 1000 };
typedef struct tiny_ctx { gr_fn *f; gr_array *x, *y; const gr_array *in[2]; const gr_array *out[3]; double xs, ys, r[3]; } tiny_ctx;
static void tiny_hand(void *ctx) {
    tiny_ctx *c = (tiny_ctx *)ctx;
    volatile double xv = c->xs, yv = c->ys;                 /* read each call, as a program's inputs are */
    int k;
    for (k = 0; k < TINY_CALLS; k++) {
        double x = xv, y = yv, cxy = cos(x * y);
        c->r[0] = sin(x * y) + x * x;
        c->r[1] = cxy * y + 2 * x;
        c->r[2] = cxy * x;
        __asm__ volatile("" : : "g"(c->r) : "memory");
    }
}
static void tiny_gr(void *ctx) {
    tiny_ctx *c = (tiny_ctx *)ctx;
    int k;
    for (k = 0; k < TINY_CALLS; k++) call_or_die(c->f, c->in, c->out);
}
static void bench_tiny(void) {
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_scalar(g, GR_F64, "x"), *y = gr_scalar(g, GR_F64, "y"), *ins[2], *outs[3], *grads[2];
    tiny_ctx c;
    double t_gr, t_hand, ref[3];
    char note[96];
    memset(&c, 0, sizeof c);
    ins[0] = x; ins[1] = y;
    outs[0] = gr_add(gr_sin(gr_mul(x, y)), gr_mul(x, x));
    if (gr_grad(outs[0], 2, ins, grads, NULL) != GR_OK) die("tiny gr_grad", g, NULL);
    outs[1] = grads[0]; outs[2] = grads[1];
    c.f = gr_function(2, ins, 3, outs, NULL);
    if (!c.f) die("tiny gr_function", g, NULL);
    c.xs = 0.7; c.ys = -1.3;
    c.x = gr_array_scalar(GR_F64, c.xs); c.y = gr_array_scalar(GR_F64, c.ys);
    c.in[0] = c.x; c.in[1] = c.y;
    pair_time(tiny_gr, &c, tiny_hand, &c, 0.5, &t_gr, &t_hand);
    tiny_gr(&c); tiny_hand(&c);
    ref[0] = c.r[0]; ref[1] = c.r[1]; ref[2] = c.r[2];
    agree("tiny f", c.out[0], ref, 1, 1e-12);
    agree("tiny df/dx", c.out[1], ref + 1, 1, 1e-12);
    agree("tiny df/dy", c.out[2], ref + 2, 1, 1e-12);
    snprintf(note, sizeof note, "per call: %.1f ns, hand-written %.1f ns", t_gr / TINY_CALLS * 1e9, t_hand / TINY_CALLS * 1e9);
    row("tiny f = sin(xy) + x^2 and its gradient (x1000)", t_gr, t_hand, note);
    gr_fn_free(c.f);
    gr_graph_free(g);
    gr_array_free(c.x); gr_array_free(c.y);
}

/* ==== W5: graph scale: y_{k+1} = sin(y_k) / N + y_k, cost = y_N ======================================== */

typedef struct w5_ctx { gr_fn *f; const gr_array *in[1]; const gr_array *out[2]; int n; double *ys; double cost, grad; } w5_ctx;

static void w5_hand(void *ctx) {
    w5_ctx *c = (w5_ctx *)ctx;
    double y = 0.5, inv = 1.0 / c->n, gy = 1;
    int k;
    for (k = 0; k < c->n; k++) { c->ys[k] = y; y = sin(y) * inv + y; }
    c->cost = y;
    for (k = c->n - 1; k >= 0; k--) gy = gy * (cos(c->ys[k]) * inv + 1);
    c->grad = gy;
}
static void w5_gr(void *ctx) { w5_ctx *c = (w5_ctx *)ctx; call_or_die(c->f, c->in, c->out); }

/* the process's peak resident set in GB (VmHWM, Linux), or -1 where it cannot be read */
static double peak_rss_gb(void) {
    char line[256];
    double kb = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) if (strncmp(line, "VmHWM:", 6) == 0) kb = atof(line + 6);
    fclose(f);
    return kb < 0 ? -1 : kb / (1024.0 * 1024.0);
}

/* build + grad + compile, `runs` times (fresh graphs): the median run's phases, and the first run's
   total (on a fresh VM the first touch of new memory costs several times a later one); the bytes the
   library holds per link (3 nodes: sin, mul, add) after building, after differentiating, and at
   the peak of each phase (counted by the allocator above, from the first run) */
#define W5_RUNS 3
static void bench_w5(int n, int runs) {
    gr_graph *g = NULL;
    gr_var *x, *y, *c_inv, *outs[2];
    gr_array *xa = gr_array_scalar(GR_F64, 0.5);
    w5_ctx c;
    double t0, tb[W5_RUNS], tg[W5_RUNS], tc[W5_RUNS], tot[W5_RUNS], sorted[W5_RUNS], t_build, t_grad, t_compile, t_gr, t_hand;
    size_t base = 0, b_build = 0, b_grad = 0, p_grad = 0, p_compile = 0, b_fn = 0;
    int k, run, med = 0;
    char name[64], note[400];
    memset(&c, 0, sizeof c);
    if (runs > W5_RUNS) runs = W5_RUNS;
    for (run = 0; run < runs; run++) {
        if (c.f) gr_fn_free(c.f);
        base = g_live;
        t0 = now();
        g = gr_graph_new();
        x = gr_scalar(g, GR_F64, "x");
        c_inv = gr_const(g, 1.0 / n);
        for (y = x, k = 0; k < n; k++) y = gr_add(gr_mul(gr_sin(y), c_inv), y);
        tb[run] = now() - t0;
        if (run == 0) { b_build = g_live - base; g_peak = g_live; }
        t0 = now();
        outs[0] = y;
        outs[1] = gr_grad1(y, x);
        tg[run] = now() - t0;
        if (!outs[1]) die("W5 gr_grad1", g, NULL);
        if (run == 0) { b_grad = g_live - base; p_grad = g_peak - base; g_peak = g_live; }
        t0 = now();
        c.f = gr_function(1, &x, 2, outs, NULL);
        tc[run] = now() - t0;
        if (!c.f) die("W5 gr_function", g, NULL);
        if (run == 0) p_compile = g_peak - base;
        gr_graph_free(g);
        if (run == 0) b_fn = g_live - base;
        tot[run] = sorted[run] = tb[run] + tg[run] + tc[run];
    }
    qsort(sorted, (size_t)runs, sizeof(double), cmp_double);
    for (run = 0; run < runs; run++) if (tot[run] == sorted[runs / 2]) med = run;
    t_build = tb[med]; t_grad = tg[med]; t_compile = tc[med];
    c.in[0] = xa;
    c.n = n;
    c.ys = (double *)malloc(sizeof(double) * (size_t)n);
    pair_time(w5_gr, &c, w5_hand, &c, 1.0, &t_gr, &t_hand);
    w5_gr(&c); w5_hand(&c);
    if (fabs(gr_array_get(c.out[0], 0) - c.cost) > 1e-9 * fabs(c.cost) || fabs(gr_array_get(c.out[1], 0) - c.grad) > 1e-9 * fabs(c.grad)) {
        printf("  MISMATCH W5 N=%d: %.15g %.15g vs %.15g %.15g\n", n, gr_array_get(c.out[0], 0), gr_array_get(c.out[1], 0), c.cost, c.grad);
        g_failures++;
    }
    snprintf(name, sizeof name, "W5 chain N=%d, call", n);
    snprintf(note, sizeof note, "build %.1f ms, grad %.1f ms, compile %.1f ms; total %.3f s (median of %d; first %.3f s); %zu nodes",
             t_build * 1e3, t_grad * 1e3, t_compile * 1e3, t_build + t_grad + t_compile, runs, tot[0], gr_fn_node_count(c.f));
    row(name, t_gr, t_hand, note);
    printf("|   %-32s | bytes a link: graph %.0f (%.0f a node), with its gradient %.0f, peak %.0f in gr_grad and %.0f in "
           "gr_function, compiled function %.0f; peak RSS so far %.2f GB\n", "(memory)", (double)b_build / n, (double)b_build / (3.0 * n),
           (double)b_grad / n, (double)p_grad / n, (double)p_compile / n, (double)b_fn / n, peak_rss_gb());
    free(c.ys);
    gr_fn_free(c.f);
    gr_array_free(xa);
}

/* ==== W6: RNN: h_t = tanh(W h_{t-1} + U x_t), h_0 = 0, cost = sum(h_T); gradient wrt W and U ========== */

enum { W6_H = 64, W6_I = 32, W6_T = 100 };
typedef struct w6_ctx { gr_fn *f; const gr_array *in[3]; const gr_array *out[2]; const double *W, *U, *X; double *hs, *gW, *gU; } w6_ctx;

static void w6_hand(void *ctx) {
    w6_ctx *c = (w6_ctx *)ctx;
    double dh[W6_H], dz[W6_H];
    int t, i, j;
    for (i = 0; i < W6_H; i++) c->hs[i] = 0;                     /* hs[t] = h_t, t = 0..T */
    for (t = 1; t <= W6_T; t++) {
        const double *hp = c->hs + (t - 1) * W6_H, *xt = c->X + (t - 1) * W6_I;
        double *h = c->hs + t * W6_H;
        for (i = 0; i < W6_H; i++) {
            double s = 0;
            for (j = 0; j < W6_H; j++) s += c->W[i * W6_H + j] * hp[j];
            for (j = 0; j < W6_I; j++) s += c->U[i * W6_I + j] * xt[j];
            h[i] = tanh(s);
        }
    }
    memset(c->gW, 0, sizeof(double) * W6_H * W6_H);
    memset(c->gU, 0, sizeof(double) * W6_H * W6_I);
    for (i = 0; i < W6_H; i++) dh[i] = 1;
    for (t = W6_T; t >= 1; t--) {
        const double *h = c->hs + t * W6_H, *hp = c->hs + (t - 1) * W6_H, *xt = c->X + (t - 1) * W6_I;
        for (i = 0; i < W6_H; i++) dz[i] = dh[i] * (1 - h[i] * h[i]);
        for (i = 0; i < W6_H; i++) {
            for (j = 0; j < W6_H; j++) c->gW[i * W6_H + j] += dz[i] * hp[j];
            for (j = 0; j < W6_I; j++) c->gU[i * W6_I + j] += dz[i] * xt[j];
        }
        for (j = 0; j < W6_H; j++) { double s = 0; for (i = 0; i < W6_H; i++) s += c->W[i * W6_H + j] * dz[i]; dh[j] = s; }
    }
}
static void w6_gr(void *ctx) { w6_ctx *c = (w6_ctx *)ctx; call_or_die(c->f, c->in, c->out); }

static void bench_w6(void) {
    int64_t ws[2] = { W6_H, W6_H }, us[2] = { W6_H, W6_I }, xs[2] = { W6_T, W6_I }, hs = W6_H;
    gr_array *W = det_array(GR_F64, 2, ws, 13, 0.15), *U = det_array(GR_F64, 2, us, 14, 0.2), *X = det_array(GR_F64, 2, xs, 15, 1.0);
    gr_array *h0 = gr_array_new(GR_F64, 1, &hs);
    gr_graph *g = gr_graph_new();
    gr_var *vW = gr_matrix(g, GR_F64, "W"), *vU = gr_matrix(g, GR_F64, "U"), *vX = gr_matrix(g, GR_F64, "X"), *h = gr_constant(g, h0);
    gr_var *params[2], *grads[2], *ins[3];
    w6_ctx c;
    double t_gr, t_hand, t_compile;
    int t;
    char note[96];
    memset(&c, 0, sizeof c);
    for (t = 0; t < W6_T; t++) h = gr_tanh(gr_add(gr_dot(vW, h), gr_dot(vU, gr_index(vX, 0, t))));
    params[0] = vW; params[1] = vU;
    if (gr_grad(gr_sum(h), 2, params, grads, NULL) != GR_OK) die("W6 gr_grad", g, NULL);
    ins[0] = vW; ins[1] = vU; ins[2] = vX;
    t_compile = now();
    c.f = gr_function(3, ins, 2, grads, NULL);
    t_compile = now() - t_compile;
    if (!c.f) die("W6 gr_function", g, NULL);
    c.in[0] = W; c.in[1] = U; c.in[2] = X;
    c.W = (const double *)W->data; c.U = (const double *)U->data; c.X = (const double *)X->data;
    c.hs = (double *)malloc(sizeof(double) * (W6_T + 1) * W6_H);
    c.gW = (double *)malloc(sizeof(double) * W6_H * W6_H);
    c.gU = (double *)malloc(sizeof(double) * W6_H * W6_I);
    pair_time(w6_gr, &c, w6_hand, &c, 0.5, &t_gr, &t_hand);
    w6_gr(&c); w6_hand(&c);
    agree("W6 dW", c.out[0], c.gW, W6_H * W6_H, 1e-9);
    agree("W6 dU", c.out[1], c.gU, W6_H * W6_I, 1e-9);
    snprintf(note, sizeof note, "compile %.2f ms, %zu nodes", t_compile * 1e3, gr_fn_node_count(c.f));
    row("W6 RNN gradient, T=100", t_gr, t_hand, note);
    free(c.hs); free(c.gW); free(c.gU);
    gr_fn_free(c.f);
    gr_graph_free(g);
    gr_array_free(W); gr_array_free(U); gr_array_free(X); gr_array_free(h0);
}

/* ==== W6 with gr_scan: the same RNN as one loop, at T = 100 and T = 10,000 (x_t: row t of the stream-15
   matrix, T x 32), against the hand-written BPTT of the same T; build + grad + compile timed too ======== */

typedef struct w6s_ctx { gr_fn *f; const gr_array *in[3]; const gr_array *out[2]; const double *W, *U, *X; double *hs, *gW, *gU; int T; } w6s_ctx;

static void w6s_hand(void *ctx) {
    w6s_ctx *c = (w6s_ctx *)ctx;
    double dh[W6_H], dz[W6_H];
    int t, i, j;
    for (i = 0; i < W6_H; i++) c->hs[i] = 0;
    for (t = 1; t <= c->T; t++) {
        const double *hp = c->hs + (size_t)(t - 1) * W6_H, *xt = c->X + (size_t)(t - 1) * W6_I;
        double *h = c->hs + (size_t)t * W6_H;
        for (i = 0; i < W6_H; i++) {
            double s = 0;
            for (j = 0; j < W6_H; j++) s += c->W[i * W6_H + j] * hp[j];
            for (j = 0; j < W6_I; j++) s += c->U[i * W6_I + j] * xt[j];
            h[i] = tanh(s);
        }
    }
    memset(c->gW, 0, sizeof(double) * W6_H * W6_H);
    memset(c->gU, 0, sizeof(double) * W6_H * W6_I);
    for (i = 0; i < W6_H; i++) dh[i] = 1;
    for (t = c->T; t >= 1; t--) {
        const double *h = c->hs + (size_t)t * W6_H, *hp = c->hs + (size_t)(t - 1) * W6_H, *xt = c->X + (size_t)(t - 1) * W6_I;
        for (i = 0; i < W6_H; i++) dz[i] = dh[i] * (1 - h[i] * h[i]);
        for (i = 0; i < W6_H; i++) {
            for (j = 0; j < W6_H; j++) c->gW[i * W6_H + j] += dz[i] * hp[j];
            for (j = 0; j < W6_I; j++) c->gU[i * W6_I + j] += dz[i] * xt[j];
        }
        for (j = 0; j < W6_H; j++) { double s = 0; for (i = 0; i < W6_H; i++) s += c->W[i * W6_H + j] * dz[i]; dh[j] = s; }
    }
}
static void w6s_gr(void *ctx) { w6s_ctx *c = (w6s_ctx *)ctx; call_or_die(c->f, c->in, c->out); }

/* h_t = tanh(W h_{t-1} + U x_t): in = (x_t, h_{t-1}, W, U) */
static gr_status w6s_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    (void)g; (void)until; (void)user;
    out[0] = gr_tanh(gr_add(gr_dot(in[2], in[1]), gr_dot(in[3], in[0])));
    return out[0] ? GR_OK : GR_ERR_NOMEM;
}

static void bench_w6_scan(int T) {
    int64_t ws[2] = { W6_H, W6_H }, us[2] = { W6_H, W6_I }, xs[2], hs = W6_H;
    gr_array *W = det_array(GR_F64, 2, ws, 13, 0.15), *U = det_array(GR_F64, 2, us, 14, 0.2), *X, *h0 = gr_array_new(GR_F64, 1, &hs);
    gr_graph *g;
    gr_var *vW, *vU, *vX, *h, *r = NULL, *params[2], *grads[2], *ins[3], *nonseq[2];
    gr_scan_seq sq;
    gr_scan_out so;
    w6s_ctx c;
    double t_gr, t_hand, t0, t_build;
    size_t base;
    char name[64], note[160];
    xs[0] = T; xs[1] = W6_I;
    X = det_array(GR_F64, 2, xs, 15, 1.0);
    memset(&c, 0, sizeof c);
    t0 = now();
    g = gr_graph_new();
    vW = gr_matrix(g, GR_F64, "W"); vU = gr_matrix(g, GR_F64, "U"); vX = gr_matrix(g, GR_F64, "X"); h = gr_constant(g, h0);
    sq.x = vX; sq.n_taps = 0; sq.taps = NULL;
    so.initial = h; so.n_taps = 0; so.taps = NULL;
    nonseq[0] = vW; nonseq[1] = vU;
    if (gr_scan(w6s_step, NULL, 1, &sq, 1, &so, 2, nonseq, NULL, &r) != GR_OK) die("W6 gr_scan", g, NULL);
    params[0] = vW; params[1] = vU;
    if (gr_grad(gr_sum(gr_index(r, 0, -1)), 2, params, grads, NULL) != GR_OK) die("W6 scan gr_grad", g, NULL);
    ins[0] = vW; ins[1] = vU; ins[2] = vX;
    c.f = gr_function(3, ins, 2, grads, NULL);
    t_build = now() - t0;
    if (!c.f) die("W6 scan gr_function", g, NULL);
    gr_graph_free(g);
    c.in[0] = W; c.in[1] = U; c.in[2] = X;
    c.W = (const double *)W->data; c.U = (const double *)U->data; c.X = (const double *)X->data; c.T = T;
    c.hs = (double *)malloc(sizeof(double) * (size_t)(T + 1) * W6_H);
    c.gW = (double *)malloc(sizeof(double) * W6_H * W6_H);
    c.gU = (double *)malloc(sizeof(double) * W6_H * W6_I);
    base = g_live;
    g_peak = g_live;
    w6s_gr(&c);
    snprintf(note, sizeof note, "build + grad + compile %.2f ms; a call holds %.0f KB above the function", t_build * 1e3,
             (double)(g_peak - base) / 1024.0);
    pair_time(w6s_gr, &c, w6s_hand, &c, T > 1000 ? 2.0 : 0.5, &t_gr, &t_hand);
    w6s_gr(&c); w6s_hand(&c);
    agree("W6 scan dW", c.out[0], c.gW, W6_H * W6_H, 1e-9);
    agree("W6 scan dU", c.out[1], c.gU, W6_H * W6_I, 1e-9);
    snprintf(name, sizeof name, "W6 RNN with gr_scan, T=%d", T);
    row(name, t_gr, t_hand, note);
    free(c.hs); free(c.gW); free(c.gU);
    gr_fn_free(c.f);
    gr_array_free(W); gr_array_free(U); gr_array_free(X); gr_array_free(h0);
}

/* ==== a long time-stepping loop: a damped pendulum by RK4 over 1e6 steps, and the gradient of its
   final energy-like cost with respect to the parameters and the initial state, with and without
   checkpoints (the time ratio and the bytes a call holds); the hand-written forward loop gives the
   forward time and, by central differences, the gradient checked ================================= */

enum { OD_STEPS = 1000000 };
static const double od_h = 1e-4;

/* f(s) = (v, -k sin(x) - c v) for s = (x, v); the gradient's closed form is not simple: checked by
   central differences of od_cost */
static void od_f(const double *s, double k, double cc, double *ds) { ds[0] = s[1]; ds[1] = -k * sin(s[0]) - cc * s[1]; }
static double od_cost(const double *p) {                  /* p = (x0, v0, k, c) */
    double s[2] = { p[0], p[1] }, k1[2], k2[2], k3[2], k4[2], t[2];
    long i;
    for (i = 0; i < OD_STEPS; i++) {
        od_f(s, p[2], p[3], k1);
        t[0] = s[0] + 0.5 * od_h * k1[0]; t[1] = s[1] + 0.5 * od_h * k1[1]; od_f(t, p[2], p[3], k2);
        t[0] = s[0] + 0.5 * od_h * k2[0]; t[1] = s[1] + 0.5 * od_h * k2[1]; od_f(t, p[2], p[3], k3);
        t[0] = s[0] + od_h * k3[0]; t[1] = s[1] + od_h * k3[1]; od_f(t, p[2], p[3], k4);
        s[0] += od_h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]);
        s[1] += od_h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]);
    }
    return s[0] * s[0] + s[1] * s[1];
}
static void od_hand(void *ctx) { *(double *)ctx = od_cost((const double[4]){ 1.0, 0.0, 2.0, 0.3 }); }

/* the RK4 step on s = (x, v) with the values th = (k, c, h) */
static gr_var *od_rhs(gr_var *s, gr_var *k, gr_var *cc) {
    gr_var *x = gr_index(s, 0, 0), *v = gr_index(s, 0, 1), *parts[2];
    parts[0] = v;
    parts[1] = gr_sub(gr_neg(gr_mul(k, gr_sin(x))), gr_mul(cc, v));
    return gr_stack(2, parts, 0);
}
static gr_status od_step(gr_graph *g, gr_var *const *in, gr_var **out, gr_var **until, void *user) {
    gr_var *s = in[0], *k = gr_index(in[1], 0, 0), *cc = gr_index(in[1], 0, 1), *h = gr_const(g, od_h), *half = gr_const(g, 0.5 * od_h);
    gr_var *k1, *k2, *k3, *k4, *sum;
    (void)until; (void)user;
    k1 = od_rhs(s, k, cc);
    k2 = od_rhs(gr_add(s, gr_mul(half, k1)), k, cc);
    k3 = od_rhs(gr_add(s, gr_mul(half, k2)), k, cc);
    k4 = od_rhs(gr_add(s, gr_mul(h, k3)), k, cc);
    sum = gr_add(gr_add(k1, k4), gr_mul(gr_const(g, 2.0), gr_add(k2, k3)));
    out[0] = gr_add(s, gr_mul(gr_const(g, od_h / 6), sum));
    return out[0] ? GR_OK : g->status;
}
typedef struct od_ctx { gr_fn *f; const gr_array *in[2]; const gr_array *out[3]; } od_ctx;
static void od_gr(void *ctx) { od_ctx *c = (od_ctx *)ctx; call_or_die(c->f, c->in, c->out); }

static void bench_ode(void) {
    double p[4] = { 1.0, 0.0, 2.0, 0.3 }, fd[4], t_call[2], t_hand = 0, cost_hand = 0, held[2];
    int64_t two = 2;
    gr_array *s0a = gr_array_from(GR_F64, 1, &two, p), *tha = gr_array_from(GR_F64, 1, &two, p + 2);
    int ck, i;
    for (i = 0; i < 4; i++) {                             /* the reference gradient, by central differences */
        double q[4], e = 1e-6;
        memcpy(q, p, sizeof q); q[i] += e;
        fd[i] = od_cost(q);
        q[i] -= 2 * e;
        fd[i] = (fd[i] - od_cost(q)) / (2 * e);
    }
    {
        double t0 = now();
        od_hand(&cost_hand);
        t_hand = now() - t0;
    }
    for (ck = 0; ck < 2; ck++) {
        gr_graph *g = gr_graph_new();
        gr_var *s0 = gr_vector(g, GR_F64, "s0"), *th = gr_vector(g, GR_F64, "theta"), *r = NULL, *last, *cost, *w[2], *gw[2], *outs[3];
        gr_array *na = gr_array_scalar(GR_I64, OD_STEPS);
        gr_scan_out so;
        gr_scan_opts op;
        od_ctx c;
        size_t base;
        double t0;
        memset(&op, 0, sizeof op);
        op.n_steps = gr_constant(g, na);
        op.checkpoints = ck ? 100 : 0;
        op.name = "rk4";
        so.initial = s0; so.n_taps = 0; so.taps = NULL;
        if (gr_scan(od_step, NULL, 0, NULL, 1, &so, 1, &th, &op, &r) != GR_OK) die("ODE gr_scan", g, NULL);
        last = gr_index(r, 0, -1);
        cost = gr_sum(gr_sqr(last));
        w[0] = s0; w[1] = th;
        if (gr_grad(cost, 2, w, gw, NULL) != GR_OK) die("ODE gr_grad", g, NULL);
        outs[0] = cost; outs[1] = gw[0]; outs[2] = gw[1];
        c.f = gr_function(2, w, 3, outs, NULL);
        if (!c.f) die("ODE gr_function", g, NULL);
        gr_graph_free(g);
        gr_array_free(na);
        c.in[0] = s0a; c.in[1] = tha;
        base = g_live;
        g_peak = g_live;
        t0 = now();
        od_gr(&c);
        t_call[ck] = now() - t0;
        held[ck] = (double)(g_peak - base);
        if (fabs(gr_array_get(c.out[0], 0) - cost_hand) > 1e-9 * fabs(cost_hand)) {
            printf("  MISMATCH ODE cost: %.15g vs %.15g\n", gr_array_get(c.out[0], 0), cost_hand);
            g_failures++;
        }
        for (i = 0; i < 4; i++) {
            double gv = gr_array_get(c.out[1 + i / 2], i % 2);
            if (fabs(gv - fd[i]) > 1e-5 * (fabs(fd[i]) > 1 ? fabs(fd[i]) : 1)) {
                printf("  MISMATCH ODE gradient %d: %.12g vs central differences %.12g\n", i, gv, fd[i]);
                g_failures++;
            }
        }
        gr_fn_free(c.f);
    }
    {
        char note[200];
        snprintf(note, sizeof note, "a call holds %.1f MB, without checkpoints; hand C: the cost alone", held[0] / 1048576.0);
        row("RK4 1e6 steps, cost + gradient", t_call[0], t_hand, note);      /* (the hand side: the cost alone) */
        snprintf(note, sizeof note, "a call holds %.1f KB; checkpoints = 100: %.2fx the time without",
                 held[1] / 1024.0, t_call[1] / t_call[0]);
        row("  the same, checkpoints = 100", t_call[1], t_hand, note);
    }
    gr_array_free(s0a); gr_array_free(tha);
}

/* ==== graph scale beyond W5: other shapes of big graphs must grow linearly too ======================
   Each pattern is built for N and 4N terms over x (1000 elements), differentiated, compiled and
   called once; the median of three such runs is printed with the growth factor: 4 when linear, 16
   for a quadratic step; caches and fresh memory put linear work at 5-8 here, so above 12 is marked
   for a look. The gradients are checked against their closed forms. */

enum { SC_X = 1000 };
static gr_var *sc_build(gr_graph *g, gr_var *x, int pat, int n) {
    gr_var *acc = NULL, **parts = NULL, *res;
    int k;
    if (pat >= 3) parts = (gr_var **)malloc(sizeof(gr_var *) * (size_t)n);
    for (k = 0; k < n; k++) {
        gr_var *c = gr_const(g, 1.0 + k), *t;
        switch (pat) {
        case 0: t = gr_sum(gr_mul(x, c)); acc = acc ? gr_add(acc, t) : t; break;               /* x read by n nodes */
        case 1: t = gr_sqr(gr_index(x, 0, k % SC_X)); acc = acc ? gr_add(acc, t) : t; break;  /* n views */
        case 2: acc = gr_tanh(gr_mul(gr_cumsum(acc ? acc : x, 0), gr_const(g, 1e-3))); break;  /* n buffers */
        case 3: parts[k] = gr_mul(gr_index(x, 0, k % SC_X), c); break;                           /* one n-input node */
        default: parts[k] = gr_mul(gr_slice(x, 0, k % SC_X, k % SC_X + 1, 1), c); break;
        }
    }
    if (pat == 2) acc = gr_sum(acc);
    if (pat == 3) acc = gr_sum(gr_sqr(gr_stack(n, parts, 0)));
    if (pat == 4) acc = gr_sum(gr_sqr(gr_concatenate(n, parts, 0)));
    res = acc;
    free(parts);
    return res;
}
/* d cost / d x[i] in closed form (pattern 2 is checked for a finite gradient only) */
static double sc_grad(int pat, int n, const double *x, int i) {
    double s = 0;
    int k;
    if (pat == 0) return 0.5 * (double)n * (double)(n + 1);
    for (k = i; k < n; k += SC_X) s += pat == 1 ? 2 * x[i] : 2.0 * (1.0 + k) * (1.0 + k) * x[i];
    return s;
}
static double sc_run(int pat, int n, const gr_array *xa) {
    double t0 = now(), t;
    gr_graph *g = gr_graph_new();
    gr_var *x = gr_vector(g, GR_F64, "x"), *outs[2];
    gr_fn *f;
    const gr_array *in[1], *res[2];
    int i;
    outs[0] = sc_build(g, x, pat, n);
    outs[1] = gr_grad1(outs[0], x);
    if (!outs[1]) die("scale gr_grad1", g, NULL);
    f = gr_function(1, &x, 2, outs, NULL);
    if (!f) die("scale gr_function", g, NULL);
    in[0] = xa;
    call_or_die(f, in, res);
    t = now() - t0;
    for (i = 0; i < SC_X; i++) {
        double got = gr_array_get(res[1], i);
        int ok = pat == 2 ? isfinite(got) : fabs(got - sc_grad(pat, n, (const double *)xa->data, i)) <= 1e-9 * fabs(got) + 1e-12;
        if (!ok) { printf("  MISMATCH scale pattern %d, N=%d, element %d: %.15g\n", pat, n, i, got); g_failures++; break; }
    }
    gr_fn_free(f);
    gr_graph_free(g);
    return t;
}
static void bench_scale(void) {
    static const char *names[5] = { "sum of N products with x", "N indexings of x, squared", "N tanh(cumsum) links",
                                    "stack of N indexings", "concatenate N slices" };
    int64_t nx = SC_X;
    gr_array *xa = det_array(GR_F64, 1, &nx, 16, 1.0);
    int pat, n = 8000, r;
    printf("\ngraph scale (build + grad + compile + first call, median of 3; growth 4.0 is linear)\n");
    printf("| %-34s | %12s | %12s | %6s\n", "pattern", "N=8000 ms", "N=32000 ms", "growth");
    printf("|%s|%s|%s|%s\n", "------------------------------------", "--------------", "--------------", "--------");
    for (pat = 0; pat < 5; pat++) {
        double t[2][3];
        int s;
        for (s = 0; s < 2; s++) {
            for (r = 0; r < 3; r++) t[s][r] = sc_run(pat, s ? 4 * n : n, xa);
            qsort(t[s], 3, sizeof(double), cmp_double);
        }
        printf("| %-34s | %12.1f | %12.1f | %6.1f%s\n", names[pat], t[0][1] * 1e3, t[1][1] * 1e3, t[1][1] / t[0][1],
               t[1][1] / t[0][1] > 12 ? "  SUPERLINEAR?" : "");
    }
    gr_array_free(xa);
}

/* W1 to W4, the rows users write and the tiny function: make bench's first rows, and bench --peers' */
static void bench_w1_to_tiny(void) {
    bench_w1(0);
    bench_w1(1);
    bench_w2();
    bench_w3();
    bench_w3_cost_grad();
    bench_w4();
    bench_w4_undeclared();
    bench_tiny();
}

int main(int argc, char **argv) {
    int n, quick = argc > 1 && strcmp(argv[1], "--quick") == 0, w5_only = argc > 1 && strcmp(argv[1], "--w5") == 0;
#ifdef GR_HAVE_CBLAS
    printf("gradient.h benchmark, built with GRADIENT_CBLAS (hand-written GEMMs also use CBLAS)\n");
#else
    printf("gradient.h benchmark, built-in kernels (hand-written GEMMs are plain loops)\n");
#endif
    printf("| %-34s | %12s | %12s | %6s | %s\n", "workload (median of repeated calls)", "gradient.h ms", "hand C ms", "ratio", "notes");
    printf("|%s|%s|%s|%s|%s\n", "------------------------------------", "--------------", "--------------", "--------", "------");
    if (argc > 1 && strcmp(argv[1], "--loops") == 0) {   /* bench --loops: W6 with gr_scan and the RK4 loop */
        bench_w6();
        bench_w6_scan(100);
        bench_w6_scan(10000);
        bench_ode();
        return g_failures ? 1 : 0;
    }
    if (argc > 1 && strcmp(argv[1], "--emit") == 0) {   /* bench --emit: W1-W4 alone (with the emitted rows) */
        bench_w1(0);
        bench_w1(1);
        bench_w2();
        bench_w3();
        bench_w4();
        return g_failures ? 1 : 0;
    }
    if (argc > 1 && strcmp(argv[1], "--small") == 0) {   /* bench --small: the rows users write that issue 20 names */
        bench_w3_cost_grad();
        bench_w4_undeclared();
        bench_tiny();
        return g_failures ? 1 : 0;
    }
    if (argc > 1 && strcmp(argv[1], "--peers") == 0) {   /* bench --peers: the rows bench/peers/run.sh sets beside NumPy, PyTorch, ADOL-C */
        g_ms_digits = 6;
        bench_w1_to_tiny();
        for (n = 1000; n <= 100000; n *= 10) bench_w5(n, W5_RUNS);
        bench_w6();
        return g_failures ? 1 : 0;
    }
    if (w5_only) {                                   /* bench --w5: the graph-scale workload alone */
        for (n = 1000; n <= 1000000; n *= 10) bench_w5(n, W5_RUNS);
        bench_w5(10000000, 1);                       /* once: ~1 min and ~12 GB */
        return g_failures ? 1 : 0;
    }
    bench_w1_to_tiny();
    for (n = 1000; n <= (quick ? 10000 : 1000000); n *= 10) bench_w5(n, W5_RUNS);
    bench_w6();
    bench_w6_scan(100);
    bench_w6_scan(10000);
    if (!quick) bench_ode();
#ifndef GR_HAVE_CBLAS
    if (!quick) bench_scale();                       /* graph work does not depend on the BLAS */
#endif
    if (g_failures) printf("%d MISMATCHES between gradient.h and the hand-written versions\n", g_failures);
    else printf("all results agree with the hand-written versions (1e-9 relative in float64, 1e-4 in float32)\n");
    return g_failures ? 1 : 0;
}
