/* tests/t_emit_work.h: the bench workloads W1 and W4 built small (tests/t_emit_work.c), for the
   emitted-file comparisons of make test-emit (tests/t_emit.c). */
#ifndef GT_EMIT_WORK_H
#define GT_EMIT_WORK_H

typedef struct gt_em_work {
    const char *name;            /* "W1: ...", for the report */
    gr_graph *g;
    gr_fn *f;
    gr_array *in[8];             /* f's inputs */
    int n_in, n_out;
} gt_em_work;

/* workload k (0: W1 float64, 1: W1 float32, 2: W4) built into w: 1; -1 when building failed; 0 when
   there is no workload k. gt_em_work_free frees what it built, also after a failure. */
int gt_em_work_build(int k, gt_em_work *w);
void gt_em_work_free(gt_em_work *w);

#endif
