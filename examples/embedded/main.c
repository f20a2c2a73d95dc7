/* examples/embedded/main.c: the controller on the microcontroller, with only the emitted mpc.c (no
   gradient.h): 100 steps of gradient descent on the controls u of make_model.c's cost J(x0, u),
   from u = 0 and the state x0 = (1, 0). Exits 1 unless the gradient has shrunk a thousandfold.
   Build (DIR: where make_model wrote mpc.c and mpc.h): cc -std=c99 -IDIR main.c DIR/mpc.c -lm */
#include "mpc.h"
#ifndef MPC_QUIET
#include <stdio.h>
#endif

static double work[mpc_WORK_BYTES / sizeof(double) + 1];   /* the emitted function's memory */

int main(void) {
    float x0[2] = { 1.0f, 0.0f }, u[MPC_N] = { 0 }, cost = 0, grad[MPC_N], first = 0, norm = 0;
    const void *in[2] = { x0, u };
    void *out[2] = { &cost, grad };
    for (int it = 0; it <= 100; it++) {
        if (mpc(in, out, work) != 0) return 1;
        norm = 0;
        for (int k = 0; k < MPC_N; k++) { norm += grad[k] * grad[k]; u[k] -= 0.25f * grad[k]; }
        if (it == 0) first = norm;
    }
#ifndef MPC_QUIET
    printf("J = %.4f after 100 steps, |dJ/du|^2 from %.3g to %.3g, first force u[0] = %.4f\n", cost, first, norm, u[0]);
#endif
    return norm < 1e-6f * first ? 0 : 1;
}
