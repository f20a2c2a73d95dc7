// bench/peers/adolc_peers.cpp: the workloads of bench/bench.c with ADOL-C as its users write them:
// a scalar loop over adoubles taped once (trace_on / trace_off), then the drivers evaluated on that tape
// many times: gradient, hess_vec, hessian, jacobian, function, and zos_forward(keep = 1) + fos_reverse
// where the cost is wanted with its gradient. Taping times are printed in the notes. W1 is not run
// (its tape would hold ~100 million operations). Usage: peers-adolc REFDIR (bench/peers/run.sh runs it
// in a scratch directory with an .adolcrc that keeps the tapes in memory); peers-adolc REFDIR W3,tiny: those alone.
#include <adolc/adolc.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

namespace {

std::string g_refdir;
int g_failures = 0;

uint64_t splitmix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
// n elements of stream s in [-scale, scale) (the "det" recipe of bench/workloads.h)
std::vector<double> det_sym(uint32_t s, size_t n, double scale) {
    std::vector<double> a(n);
    for (size_t i = 0; i < n; i++) {
        double u = (double)(splitmix64(((uint64_t)s << 32) + i) >> 11) * (1.0 / 9007199254740992.0);
        a[i] = scale * (2.0 * u - 1.0);
    }
    return a;
}

double now() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
// median time of one call after a warm-up, over enough calls to last ~min_time (7 to 101; 3 when
// one call takes over half a second), as bench/bench.c's pair_time
double median_time(const std::function<void()> &fn, double min_time = 0.5) {
    fn();
    double t0 = now();
    fn();
    double one = now() - t0;
    int n = one > 0 ? (int)(min_time / one) : 101;
    n = std::max(n, one > 0.5 ? 3 : 7);
    n = std::min(n, 101);
    std::vector<double> ts((size_t)n);
    for (int i = 0; i < n; i++) {
        t0 = now();
        fn();
        ts[(size_t)i] = now() - t0;
    }
    std::sort(ts.begin(), ts.end());
    return ts[(size_t)n / 2];
}

std::vector<double> ref(const std::string &name) {
    std::vector<double> r;
    std::string path = g_refdir + "/" + name + ".f64";
    FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) { std::fprintf(stderr, "adolc: cannot read %s\n", path.c_str()); return r; }
    double v;
    while (std::fread(&v, sizeof v, 1, f) == 1) r.push_back(v);
    std::fclose(f);
    return r;
}
// largest |value - gradient.h's| over `pairs`; a difference above 1e-9 of the reference's largest
// |value| (or a missing file) marks the row MISMATCH
struct Check {
    double worst = 0;
    bool bad = false;
    void add(const std::vector<double> &v, const std::string &name, const std::vector<size_t> *only = nullptr) {
        std::vector<double> r = ref(name);
        if (r.size() != v.size()) { bad = true; worst = INFINITY; return; }
        double big = 0, d = 0;
        for (size_t i = 0; i < r.size(); i++) big = std::max(big, std::fabs(r[i]));
        if (only) for (size_t i : *only) d = std::max(d, std::fabs(v[i] - r[i]));
        else for (size_t i = 0; i < r.size(); i++) d = std::max(d, std::fabs(v[i] - r[i]));
        if (!(d <= 1e-9 * std::max(big, 1e-300))) bad = true;
        worst = std::max(worst, d);
    }
};
void row(const char *name, double seconds, const Check &c, const std::string &note) {
    if (c.bad) g_failures++;
    std::printf("peer-row\t%s\t%.6f\t%.3g\t%s%s\n", name, seconds * 1e3, c.worst, c.bad ? "MISMATCH with gradient.h; " : "", note.c_str());
    std::fflush(stdout);
}
std::string fmt(const char *f, double a) { char b[128]; std::snprintf(b, sizeof b, f, a); return b; }

enum { TAG_W2 = 1, TAG_W3 = 2, TAG_W3H = 3, TAG_W4 = 4, TAG_TINY = 5, TAG_W5 = 6, TAG_W6 = 7 };

void w2() {
    const int n = 1000000;
    std::vector<double> x = det_sym(7, n, 2.0), g((size_t)n);
    double cost = 0, t0 = now();
    trace_on(TAG_W2);
    {
        std::vector<adouble> ax((size_t)n);
        adouble s = 0;
        for (int i = 0; i < n; i++) {
            ax[(size_t)i] <<= x[(size_t)i];
            adouble xx = ax[(size_t)i] * ax[(size_t)i];
            s += sin(ax[(size_t)i]) * exp(-xx) + log(1.0 + xx) + tanh(ax[(size_t)i]) * ax[(size_t)i];
        }
        s >>= cost;
    }
    trace_off();
    double t_tape = now() - t0, w = 1;
    double tc = median_time([&] { function(TAG_W2, 1, n, x.data(), &cost); }, 2.0);
    Check cc;
    cc.add({ cost }, "w2_cost");
    row("W2 elementwise cost", tc, cc, "function() on the tape; log(1 + x*x) for log1p; taping " + fmt("%.0f ms", t_tape * 1e3));
    double tg = median_time([&] { zos_forward(TAG_W2, 1, n, 1, x.data(), &cost); fos_reverse(TAG_W2, 1, n, &w, g.data()); }, 2.0);
    Check cg;
    cg.add({ cost }, "w2_cost");
    cg.add(g, "w2_grad");
    row("W2 elementwise cost + grad", tg, cg, "zos_forward + fos_reverse; grad/forward " + fmt("%.2f", tg / tc));
}

template <class T> T rosen(const T *x, int n) {
    T f = 0;
    for (int i = 0; i < n - 1; i++) {
        T a = x[i + 1] - x[i] * x[i], b = 1.0 - x[i];
        f += 100.0 * a * a + b * b;
    }
    return f;
}
void tape_rosen(short tag, const double *x, int n) {
    std::vector<adouble> ax((size_t)n);
    double f;
    trace_on(tag);
    for (int i = 0; i < n; i++) ax[(size_t)i] <<= x[i];
    adouble af = rosen(ax.data(), n);
    af >>= f;
    trace_off();
}
void w3() {
    const int n = 1000, nh = 200;
    std::vector<double> x = det_sym(8, n, 1.0), v = det_sym(9, n, 1.0), g((size_t)n), hv((size_t)n);
    double cost, w = 1, t0 = now();
    tape_rosen(TAG_W3, x.data(), n);
    double t_tape = now() - t0;
    tape_rosen(TAG_W3H, x.data(), nh);
    double tg = median_time([&] { gradient(TAG_W3, n, x.data(), g.data()); });
    Check c1;
    c1.add(g, "w3_grad");
    row("W3 Rosenbrock gradient, n=1000", tg, c1, "gradient(); taping " + fmt("%.3f ms", t_tape * 1e3));
    double th = median_time([&] { hess_vec(TAG_W3, n, x.data(), v.data(), hv.data()); });
    Check c2;
    c2.add(hv, "w3_hv");
    row("W3 Hessian-vector, n=1000", th, c2, "hess_vec()");
    double **H = myalloc2(nh, nh);
    double tH = median_time([&] { hessian(TAG_W3H, nh, x.data(), H); });
    std::vector<double> Hf((size_t)nh * nh, 0.0);
    std::vector<size_t> lower;                        // hessian() fills the lower triangle: compared there
    for (int i = 0; i < nh; i++)
        for (int j = 0; j <= i; j++) { Hf[(size_t)i * nh + j] = H[i][j]; lower.push_back((size_t)i * nh + j); }
    Check c3;
    c3.add(Hf, "w3_hessian", &lower);
    row("W3 full Hessian, n=200", tH, c3, "hessian() (lower triangle)");
    myfree2(H);
    double tcg = median_time([&] { zos_forward(TAG_W3, 1, n, 1, x.data(), &cost); fos_reverse(TAG_W3, 1, n, &w, g.data()); });
    Check c4;
    c4.add({ cost }, "w3_cost");
    c4.add(g, "w3_grad2");
    row("W3 Rosenbrock cost + grad, n=1000", tcg, c4, "zos_forward + fos_reverse");
}

void w4() {
    const int n = 200;
    std::vector<double> A = det_sym(10, (size_t)n * n, 0.1), b = det_sym(11, n, 0.1), x = det_sym(12, n, 1.0), y((size_t)n);
    double t0 = now();
    trace_on(TAG_W4);
    {
        std::vector<adouble> ax((size_t)n);
        for (int j = 0; j < n; j++) ax[(size_t)j] <<= x[(size_t)j];
        for (int i = 0; i < n; i++) {
            adouble s = b[(size_t)i];
            for (int j = 0; j < n; j++) s += A[(size_t)i * n + j] * ax[(size_t)j];
            adouble yi = tanh(s);
            yi >>= y[(size_t)i];
        }
    }
    trace_off();
    double t_tape = now() - t0;
    double **J = myalloc2(n, n);
    double t = median_time([&] { jacobian(TAG_W4, n, n, x.data(), J); });
    std::vector<double> Jf((size_t)n * n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) Jf[(size_t)i * n + j] = J[i][j];
    myfree2(J);
    Check c;
    c.add(Jf, "w4_jacobian");
    row("W4 Jacobian 200x200", t, c, "jacobian(); taping " + fmt("%.2f ms", t_tape * 1e3));
    row("W4 Jacobian, shapes undeclared", t, c, "the same code");
}

void tiny() {
    double xy[2] = { 0.7, -1.3 }, f, g[2], w = 1;
    trace_on(TAG_TINY);
    {
        adouble x, y;
        x <<= xy[0];
        y <<= xy[1];
        adouble af = sin(x * y) + x * x;
        af >>= f;
    }
    trace_off();
    double t = median_time([&] {
        for (int k = 0; k < 1000; k++) { zos_forward(TAG_TINY, 1, 2, 1, xy, &f); fos_reverse(TAG_TINY, 1, 2, &w, g); }
    });
    Check c;
    c.add({ f }, "tiny_f");
    c.add({ g[0] }, "tiny_dfdx");
    c.add({ g[1] }, "tiny_dfdy");
    row("tiny f = sin(xy) + x^2 and its gradient (x1000)", t, c, "zos_forward + fos_reverse, " + fmt("%.0f ns a call", t / 1000 * 1e9));
}

void w5() {
    for (int n = 1000; n <= 100000; n *= 10) {
        double x = 0.5, y, g, t0 = now();
        trace_on(TAG_W5);
        {
            adouble ax, ay;
            ax <<= x;
            ay = ax;
            for (int k = 0; k < n; k++) ay = sin(ay) * (1.0 / n) + ay;
            ay >>= y;
        }
        trace_off();
        double t_tape = now() - t0, w = 1;
        double t = median_time([&] { zos_forward(TAG_W5, 1, 1, 1, &x, &y); fos_reverse(TAG_W5, 1, 1, &w, &g); }, 1.0);
        Check c;
        c.add({ y }, "w5_" + std::to_string(n) + "_cost");
        c.add({ g }, "w5_" + std::to_string(n) + "_grad");
        std::string name = "W5 chain N=" + std::to_string(n) + ", call";
        row(name.c_str(), t, c, "zos_forward + fos_reverse; taping " + fmt("%.2f ms", t_tape * 1e3));
    }
}

void w6() {
    const int H = 64, I = 32, T = 100, nw = H * H, nu = H * I;
    std::vector<double> W = det_sym(13, nw, 0.15), U = det_sym(14, nu, 0.2), X = det_sym(15, (size_t)T * I, 1.0), wu, g((size_t)(nw + nu));
    wu = W;
    wu.insert(wu.end(), U.begin(), U.end());
    double cost, t0 = now();
    trace_on(TAG_W6);
    {
        std::vector<adouble> aw((size_t)(nw + nu)), h((size_t)H, adouble(0.0)), hn((size_t)H);
        for (int k = 0; k < nw + nu; k++) aw[(size_t)k] <<= wu[(size_t)k];
        for (int t = 0; t < T; t++) {
            for (int i = 0; i < H; i++) {
                adouble s = 0;
                for (int j = 0; j < H; j++) s += aw[(size_t)(i * H + j)] * h[(size_t)j];
                for (int j = 0; j < I; j++) s += aw[(size_t)(nw + i * I + j)] * X[(size_t)(t * I + j)];
                hn[(size_t)i] = tanh(s);
            }
            for (int i = 0; i < H; i++) h[(size_t)i] = hn[(size_t)i];
        }
        adouble s = 0;
        for (int i = 0; i < H; i++) s += h[(size_t)i];
        s >>= cost;
    }
    trace_off();
    double t_tape = now() - t0;
    double t = median_time([&] { gradient(TAG_W6, nw + nu, wu.data(), g.data()); });
    Check c;
    c.add(std::vector<double>(g.begin(), g.begin() + nw), "w6_dW");
    c.add(std::vector<double>(g.begin() + nw, g.end()), "w6_dU");
    row("W6 RNN gradient, T=100", t, c, "gradient(); taping " + fmt("%.0f ms", t_tape * 1e3));
}

}  // namespace

int main(int argc, char **argv) {
    g_refdir = argc > 1 ? argv[1] : "build/peers-ref";
    std::string only = argc > 2 ? std::string(",") + argv[2] + "," : "";   // e.g. W3,tiny: those alone
    auto wants = [&](const char *key) { return only.empty() || only.find(std::string(",") + key + ",") != std::string::npos; };
    std::printf("peer adolc\n");
    std::fflush(stdout);
    if (wants("W2")) w2();
    if (wants("W3")) w3();
    if (wants("W4")) w4();
    if (wants("tiny")) tiny();
    if (wants("W5")) w5();
    if (wants("W6")) w6();
    return g_failures ? 1 : 0;
}
