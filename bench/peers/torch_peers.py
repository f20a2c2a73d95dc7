"""bench/peers/torch_peers.py: the workloads of bench/bench.c with PyTorch's autograd as a user calls it
(torch.autograd.grad, torch.autograd.functional.hvp / hessian / jacobian), on CPU in float64 where
bench.c is float64, with torch.set_num_threads(PEERS_TORCH_THREADS, default 1).
Usage: torch_peers.py REFDIR (bench/peers/run.sh)."""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.autograd import grad
from torch.autograd.functional import hessian, hvp, jacobian

import common as c

P = c.Peer("torch")
THREADS = int(os.environ.get("PEERS_TORCH_THREADS", "1"))
torch.set_num_threads(THREADS)
D = torch.float64


def t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def w1(dtype, name, prefix):
    X, y, W1, b1, W2, b2 = (t(a) for a in c.w1_data(dtype))
    params = [p.requires_grad_() for p in (W1, b1, W2, b2)]

    def step():
        h = torch.tanh(X @ W1 + b1)
        cost = F.cross_entropy(h @ W2 + b2, y)
        return (cost.detach(),) + grad(cost, params)

    tm = c.median_time(step, 2.0)
    out = [o.numpy() for o in step()]
    P.row(name, tm, P.diff(zip(out, [prefix + s for s in ("cost", "dW1", "db1", "dW2", "db2")]), 1e-4 if dtype == np.float32 else 1e-9),
          "F.cross_entropy")


def w2():
    x = t(c.w2_data())
    xg = x.clone().requires_grad_()

    def cost(x):
        return torch.sum(torch.sin(x) * torch.exp(-x * x) + torch.log1p(x * x) + torch.tanh(x) * x)

    def cost_alone():
        with torch.no_grad():
            return cost(x)

    def cost_grad():
        f = cost(xg)
        return f.detach(), grad(f, xg)[0]

    tc = c.median_time(cost_alone, 2.0)
    P.row(c.W2_COST, tc, P.diff([(cost_alone().numpy(), "w2_cost")]), "under torch.no_grad()")
    tg = c.median_time(cost_grad, 2.0)
    f, g = cost_grad()
    P.row(c.W2_GRAD, tg, P.diff([(f.numpy(), "w2_cost"), (g.numpy(), "w2_grad")]), "grad/forward %.2f" % (tg / tc))


def rosen(x):
    return torch.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def w3():
    x, v, x2 = (t(a) for a in c.w3_data())
    xg = x.clone().requires_grad_()

    def gradient():
        return grad(rosen(xg), xg)[0]

    def cost_grad():
        f = rosen(xg)
        return f.detach(), grad(f, xg)[0]

    P.row(c.W3_GRAD, c.median_time(gradient), P.diff([(gradient().numpy(), "w3_grad")]))
    P.row(c.W3_HV, c.median_time(lambda: hvp(rosen, x, v)), P.diff([(hvp(rosen, x, v)[1].numpy(), "w3_hv")]),
          "torch.autograd.functional.hvp")
    th = c.median_time(lambda: hessian(rosen, x2))
    tv = c.median_time(lambda: hessian(rosen, x2, vectorize=True))
    P.row(c.W3_HESS, th, P.diff([(hessian(rosen, x2).numpy(), "w3_hessian"), (hessian(rosen, x2, vectorize=True).numpy(), "w3_hessian")]),
          "functional.hessian; vectorize=True %.3f ms" % (tv * 1e3))
    f, g = cost_grad()
    P.row(c.W3_CG, c.median_time(cost_grad), P.diff([(f.numpy(), "w3_cost"), (g.numpy(), "w3_grad2")]))


def w4():
    A, b, x = (t(a) for a in c.w4_data())

    def f(x):
        return torch.tanh(A @ x + b)

    tp = c.median_time(lambda: jacobian(f, x))
    tv = c.median_time(lambda: jacobian(f, x, vectorize=True))
    pairs = [(jacobian(f, x, vectorize=True).numpy(), "w4_jacobian"), (jacobian(f, x).numpy(), "w4_jacobian")]
    P.row(c.W4, tp, P.diff(pairs), "functional.jacobian; vectorize=True %.3f ms" % (tv * 1e3))
    P.row(c.W4_UNDECLARED, tp, P.diff(pairs), "the same code")


def tiny():
    x = torch.tensor(0.7, dtype=D, requires_grad=True)
    y = torch.tensor(-1.3, dtype=D, requires_grad=True)

    def call():
        f = torch.sin(x * y) + x * x
        gx, gy = grad(f, (x, y))
        return f.detach(), gx, gy

    def calls():
        for _ in range(c.TINY_CALLS):
            r = call()
        return r

    tm = c.median_time(calls)
    P.row(c.TINY, tm, P.diff(zip([r.numpy() for r in calls()], ["tiny_f", "tiny_dfdx", "tiny_dfdy"])),
          "%.0f ns a call" % (tm / c.TINY_CALLS * 1e9))


def w5():
    for n in c.W5_SIZES:
        x = torch.tensor(0.5, dtype=D, requires_grad=True)
        inv = 1.0 / n

        def chain():
            y = x
            for _ in range(n):
                y = torch.sin(y) * inv + y
            return y.detach(), grad(y, x)[0]

        tm = c.median_time(chain, 1.0)
        y, g = chain()
        P.row(c.w5_name(n), tm, P.diff([(y.numpy(), "w5_%d_cost" % n), (g.numpy(), "w5_%d_grad" % n)]), "forward + backward (eager)")


def w6():
    W, U, X = (t(a) for a in c.w6_data())
    W.requires_grad_()
    U.requires_grad_()

    def bptt():
        h = torch.zeros(64, dtype=D)
        for k in range(X.shape[0]):
            h = torch.tanh(W @ h + U @ X[k])
        return grad(h.sum(), (W, U))

    tm = c.median_time(bptt)
    gW, gU = bptt()
    P.row(c.W6, tm, P.diff([(gW.numpy(), "w6_dW"), (gU.numpy(), "w6_dU")]))


print("peer torch %s, %d thread(s)" % (torch.__version__, torch.get_num_threads()), flush=True)
for fn, key in ((lambda: w1(np.float64, c.W1_F64, "w1_f64_"), "W1"), (lambda: w1(np.float32, c.W1_F32, "w1_f32_"), "W1"),
                (w2, "W2"), (w3, "W3"), (w4, "W4"), (tiny, "tiny"), (w5, "W5"), (w6, "W6")):
    if P.wants(key):
        fn()
sys.exit(1 if P.failures else 0)
