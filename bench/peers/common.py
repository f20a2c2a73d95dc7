"""bench/peers/common.py: what the Python peers (numpy_peers.py, torch_peers.py) share: the data of the
"det" recipe (bench/workloads.h, bit for bit), the timing rule of bench/bench.c (median of repeated
calls after warm-up), the results gradient.h gives (written by build/peers-ref) and the row format
that bench/peers/table.py reads:  peer-row <TAB> name <TAB> ms <TAB> max abs difference <TAB> note."""
import math
import os
import sys
import time

import numpy as np

# the row names of bench/bench.c
W1_F64 = "W1 MLP step, float64"
W1_F32 = "W1 MLP step, float32"
W2_COST = "W2 elementwise cost"
W2_GRAD = "W2 elementwise cost + grad"
W3_GRAD = "W3 Rosenbrock gradient, n=1000"
W3_HV = "W3 Hessian-vector, n=1000"
W3_HESS = "W3 full Hessian, n=200"
W3_CG = "W3 Rosenbrock cost + grad, n=1000"
W4 = "W4 Jacobian 200x200"
W4_UNDECLARED = "W4 Jacobian, shapes undeclared"
TINY = "tiny f = sin(xy) + x^2 and its gradient (x1000)"
TINY_CALLS = 1000
W5_SIZES = (1000, 10000, 100000)


def w5_name(n):
    return "W5 chain N=%d, call" % n


W6 = "W6 RNN gradient, T=100"


def splitmix64(z):
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def det_sym(stream, shape, scale, dtype=np.float64):
    """elements i = 0.. (row-major) of stream s in [-scale, scale), computed in double then rounded"""
    n = int(np.prod(shape))
    z = (np.uint64(stream) << np.uint64(32)) + np.arange(n, dtype=np.uint64)
    u = (splitmix64(z) >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)
    return (scale * (2.0 * u - 1.0)).reshape(shape).astype(dtype)


def det_label(stream, n, k):
    z = (np.uint64(stream) << np.uint64(32)) + np.arange(n, dtype=np.uint64)
    return (splitmix64(z) % np.uint64(k)).astype(np.int64)


def w1_data(dtype):
    """X, y (labels), W1, b1, W2, b2"""
    return (det_sym(1, (256, 784), 1.0, dtype), det_label(6, 256, 10), det_sym(2, (784, 256), 0.1, dtype),
            det_sym(3, (256,), 0.1, dtype), det_sym(4, (256, 10), 0.2, dtype), det_sym(5, (10,), 0.1, dtype))


def w2_data():
    return det_sym(7, (1000000,), 2.0)


def w3_data():
    """x (1000), v (1000), x[:200]"""
    x = det_sym(8, (1000,), 1.0)
    return x, det_sym(9, (1000,), 1.0), x[:200].copy()


def w4_data():
    """A, b, x"""
    return det_sym(10, (200, 200), 0.1), det_sym(11, (200,), 0.1), det_sym(12, (200,), 1.0)


def w6_data():
    """W (64x64), U (64x32), X (100x32, x_t = row t)"""
    return det_sym(13, (64, 64), 0.15), det_sym(14, (64, 32), 0.2), det_sym(15, (100, 32), 1.0)


def median_time(fn, min_time=0.5):
    """median time of one call after a warm-up call, over enough calls to last ~min_time (7 to 101 calls;
    3 when one call takes over half a second), as bench/bench.c's pair_time"""
    fn()
    t0 = time.perf_counter()
    fn()
    one = time.perf_counter() - t0
    n = int(min_time / one) if one > 0 else 101
    n = max(n, 3 if one > 0.5 else 7)
    n = min(n, 101)
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[n // 2]


class Peer:
    """prints rows; ref(name) reads gradient.h's result `name` from the directory argv[1]"""

    def __init__(self, label):
        self.label = label
        self.refdir = sys.argv[1] if len(sys.argv) > 1 else "build/peers-ref"
        self.only = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None
        self.bad = False
        self.failures = 0

    def ref(self, name):
        return np.fromfile(os.path.join(self.refdir, name + ".f64"), dtype=np.float64)

    def diff(self, pairs, tol=1e-9):
        """largest |ours - gradient.h| over (value, reference name) pairs; a difference above tol times
        the largest |value| of that reference marks the next row MISMATCH (tol 1e-9 in float64, 1e-4
        in float32, as bench/bench.c's checks)"""
        worst = 0.0
        for value, name in pairs:
            v = np.asarray(value, dtype=np.float64).reshape(-1)
            r = self.ref(name)
            if v.shape != r.shape:
                print("%s: %s has %d values, gradient.h's %d" % (self.label, name, v.size, r.size), file=sys.stderr)
                self.bad = True
                return float("inf")
            d = float(np.max(np.abs(v - r))) if v.size else 0.0
            if not d <= tol * max(float(np.max(np.abs(r))), 1e-300):
                self.bad = True
            worst = max(worst, d)
        return worst

    def row(self, name, seconds, maxdiff, note=""):
        if self.bad:
            note = "MISMATCH with gradient.h; " + note
            self.failures += 1
            self.bad = False
        print("peer-row\t%s\t%.6f\t%.3g\t%s" % (name, seconds * 1e3, maxdiff, note), flush=True)

    def wants(self, name):
        return self.only is None or any(name.startswith(o) for o in self.only)


def w5_plain_python(n):
    """the hand-derived chain in plain Python: (y_n, dy_n/dx) from x = 0.5"""
    inv = 1.0 / n
    y = 0.5
    ys = [0.0] * n
    for k in range(n):
        ys[k] = y
        y = math.sin(y) * inv + y
    g = 1.0
    for k in range(n - 1, -1, -1):
        g *= math.cos(ys[k]) * inv + 1.0
    return y, g
