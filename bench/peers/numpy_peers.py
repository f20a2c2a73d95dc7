"""bench/peers/numpy_peers.py: the workloads of bench/bench.c in NumPy with hand-derived gradients, as a
NumPy user writes them (whole-array expressions; the tiny function and the W5 chain, which are scalar
code, in plain Python with the math module). Usage: numpy_peers.py REFDIR (bench/peers/run.sh)."""
import math
import sys

import numpy as np

import common as c

P = c.Peer("numpy")


def w1(dtype, name, prefix):
    X, y, W1, b1, W2, b2 = c.w1_data(dtype)
    N = X.shape[0]
    rows = np.arange(N)

    def step():
        H = np.tanh(X @ W1 + b1)
        L = H @ W2 + b2
        m = L.max(axis=1, keepdims=True)
        E = np.exp(L - m)
        s = E.sum(axis=1, keepdims=True)
        cost = np.mean(m[:, 0] + np.log(s[:, 0]) - L[rows, y])
        dL = E / s
        dL[rows, y] -= 1
        dL /= N
        gW2 = H.T @ dL
        gb2 = dL.sum(axis=0)
        dH = (dL @ W2.T) * (1 - H * H)
        return cost, X.T @ dH, dH.sum(axis=0), gW2, gb2

    t = c.median_time(step, 2.0)
    out = step()
    P.row(name, t, P.diff(zip(out, [prefix + s for s in ("cost", "dW1", "db1", "dW2", "db2")]), 1e-4 if dtype == np.float32 else 1e-9))


def w2():
    x = c.w2_data()

    def cost():
        return np.sum(np.sin(x) * np.exp(-x * x) + np.log1p(x * x) + np.tanh(x) * x)

    def cost_grad():
        xx = x * x
        s, e, t = np.sin(x), np.exp(-xx), np.tanh(x)
        f = np.sum(s * e + np.log1p(xx) + t * x)
        return f, np.cos(x) * e - 2 * x * s * e + 2 * x / (1 + xx) + (1 - t * t) * x + t

    tc = c.median_time(cost, 2.0)
    P.row(c.W2_COST, tc, P.diff([(cost(), "w2_cost")]))
    tg = c.median_time(cost_grad, 2.0)
    f, g = cost_grad()
    P.row(c.W2_GRAD, tg, P.diff([(f, "w2_cost"), (g, "w2_grad")]), "grad/forward %.2f" % (tg / tc))


def w3():
    x, v, x2 = c.w3_data()

    def grad(x):
        h, t = x[:-1], x[1:]
        a = t - h * h
        g = np.zeros_like(x)
        g[:-1] = -400 * h * a - 2 * (1 - h)
        g[1:] += 200 * a
        return g

    def cost_grad(x):
        h, t = x[:-1], x[1:]
        a, b = t - h * h, 1 - h
        g = np.zeros_like(x)
        g[:-1] = -400 * h * a - 2 * b
        g[1:] += 200 * a
        return np.sum(100 * a * a + b * b), g

    def hv(x, v):
        h, t = x[:-1], x[1:]
        hii, hij = 1200 * h * h - 400 * t + 2, -400 * h
        out = np.zeros_like(x)
        out[:-1] = hii * v[:-1] + hij * v[1:]
        out[1:] += hij * v[:-1] + 200 * v[1:]
        return out

    def hessian(x):
        h, t = x[:-1], x[1:]
        d = np.zeros_like(x)
        d[:-1] = 1200 * h * h - 400 * t + 2
        d[1:] += 200
        off = -400 * h
        return np.diag(d) + np.diag(off, 1) + np.diag(off, -1)

    P.row(c.W3_GRAD, c.median_time(lambda: grad(x)), P.diff([(grad(x), "w3_grad")]))
    P.row(c.W3_HV, c.median_time(lambda: hv(x, v)), P.diff([(hv(x, v), "w3_hv")]))
    P.row(c.W3_HESS, c.median_time(lambda: hessian(x2)), P.diff([(hessian(x2), "w3_hessian")]), "np.diag of the three bands")
    f, g = cost_grad(x)
    P.row(c.W3_CG, c.median_time(lambda: cost_grad(x)), P.diff([(f, "w3_cost"), (g, "w3_grad2")]))


def w4():
    A, b, x = c.w4_data()

    def jac():
        y = np.tanh(A @ x + b)
        return (1 - y * y)[:, None] * A

    t = c.median_time(jac)
    P.row(c.W4, t, P.diff([(jac(), "w4_jacobian")]), "row scaling of A")
    P.row(c.W4_UNDECLARED, t, P.diff([(jac(), "w4_jacobian")]), "the same code")


def tiny():
    def f(x, y):
        cxy = math.cos(x * y)
        return math.sin(x * y) + x * x, cxy * y + 2 * x, cxy * x

    def calls():
        for _ in range(c.TINY_CALLS):
            r = f(0.7, -1.3)
        return r

    t = c.median_time(calls)
    P.row(c.TINY, t, P.diff(zip(calls(), ["tiny_f", "tiny_dfdx", "tiny_dfdy"])), "plain Python, %.0f ns a call" % (t / c.TINY_CALLS * 1e9))


def w5():
    for n in c.W5_SIZES:
        t = c.median_time(lambda: c.w5_plain_python(n), 1.0)
        y, g = c.w5_plain_python(n)
        P.row(c.w5_name(n), t, P.diff([(y, "w5_%d_cost" % n), (g, "w5_%d_grad" % n)]), "plain Python")


def w6():
    W, U, X = c.w6_data()
    T, H = X.shape[0], W.shape[0]

    def bptt():
        hs = np.zeros((T + 1, H))
        for t in range(1, T + 1):
            hs[t] = np.tanh(W @ hs[t - 1] + U @ X[t - 1])
        dZ = np.empty((T, H))
        dh = np.ones(H)
        for t in range(T, 0, -1):
            dz = dh * (1 - hs[t] * hs[t])
            dZ[t - 1] = dz
            dh = W.T @ dz
        return dZ.T @ hs[:-1], dZ.T @ X

    t = c.median_time(bptt)
    gW, gU = bptt()
    P.row(c.W6, t, P.diff([(gW, "w6_dW"), (gU, "w6_dU")]), "hand-derived BPTT")


print("peer numpy %s" % np.__version__, flush=True)
for fn, key in ((lambda: w1(np.float64, c.W1_F64, "w1_f64_"), "W1"), (lambda: w1(np.float32, c.W1_F32, "w1_f32_"), "W1"),
                (w2, "W2"), (w3, "W3"), (w4, "W4"), (tiny, "tiny"), (w5, "W5"), (w6, "W6")):
    if P.wants(key):
        fn()
sys.exit(1 if P.failures else 0)
