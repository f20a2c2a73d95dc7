/* ops/vmath.c: elementwise math of our own (exp, expm1, log, log1p, tanh, sin, cos, sigmoid,
   softplus), float64 and float32, for the elementwise kernels (ops/elemwise.c) and the files gr_fn_emit_c writes.

   One source for both paths: every function's main range is a "core" written once as a macro over
   a type T that is either double or a GCC/Clang vector of doubles (GR__VM_CORES, instantiated for
   both), with only +, -, *, / and bit operations, no branches; arguments outside the main range
   (NaN, infinities, overflow, subnormal results, huge angles) take the scalar function, lane by
   lane. So a vector kernel gives exactly the scalar function's bits. float32 is the float64
   function of the argument, rounded once to float. The scalar functions are GR_KERNEL text: an
   emitted file carries them and computes the same bits.

   Contraction: a*b + c fused into one FMA would change bits, and compilers do it on their own
   (GCC in its gnu modes, Clang by default, when the target has FMA). The cores are built with it
   off: GCC's optimize attribute, Clang's STDC FP_CONTRACT pragma (GR__VM_FN, GR__VM_NOFMA). Under
   -ffast-math nothing is promised.

   Speed: the maps take several vectors at a time (independent chains that interleave); on x86-64
   built without AVX each map also has an AVX2 clone over 32-byte vectors, taken at run time (GR__VM_W).

   Accuracy (tests/t_vmath.c, against long double): see the README's "Math functions". */

#ifndef GR_NO_VECTOR_EXTENSIONS
/* GR_KERNEL GR__VM_FN */
#ifndef GR__UNUSED
#if defined(__GNUC__) || defined(__clang__)
#define GR__UNUSED __attribute__((unused))
#else
#define GR__UNUSED
#endif
#endif
#if defined(__GNUC__) && !defined(__clang__)
#define GR__VM_FN GR__UNUSED __attribute__((optimize("fp-contract=off")))
#define GR__VM_FNS GR__UNUSED __attribute__((optimize("fp-contract=off", "schedule-insns", "sched-pressure")))
#else
#define GR__VM_FN GR__UNUSED
#define GR__VM_FNS GR__UNUSED
#endif
#if defined(__clang__)
#define GR__VM_NOFMA _Pragma("STDC FP_CONTRACT OFF")
#else
#define GR__VM_NOFMA
#endif
/* the cores: always inlined into their callers (the maps, the scalar functions), so that the maps'
   independent vectors interleave and constants are operands, not calls passing vectors. Where code
   size matters more (-Os) or vectors of doubles are not the hardware's (32-bit ARM: every lane in
   software), GR__VM_SMALL: plain inline and one vector at a time (the same values, a third of the
   code) */
#if defined(__OPTIMIZE_SIZE__) || !(defined(__x86_64__) || defined(__i386__) || defined(__aarch64__))
#define GR__VM_SMALL 1
#define GR__VM_INL inline
#elif defined(__GNUC__) || defined(__clang__)
#define GR__VM_SMALL 0
#define GR__VM_INL inline __attribute__((always_inline))
#else
#define GR__VM_SMALL 0
#define GR__VM_INL inline
#endif
#define GR__VM_FNI GR__VM_FN GR__VM_INL
#define GR__VM_SHIFT 6755399441055744.0             /* 1.5 * 2^52: x + SHIFT rounds x to an integer */
#define GR__VM_LN2HI 6.93147180369123816490e-01      /* ln 2 in 32 bits, and the rest */
#define GR__VM_LN2LO 1.90821492927058770002e-10
#define GR__VM_INVLN2 1.44269504088896338700e+00
#define GR__VM_PIO2_1 1.57079632673412561417e+00     /* pi/2 as 33 + 33 + 33 bits + the rest */
#define GR__VM_PIO2_2 6.07710050630396597660e-11
#define GR__VM_PIO2_3 2.02226624871116645580e-21
#define GR__VM_PIO2_3T 8.47842766036889956997e-32
#define GR__VM_INVPIO2 6.36619772367581382433e-01
#define GR__VM_SHIFT_BITS ((uint64_t)0x43380000u << 32)
#define GR__VM_SQRT1_2_BITS (((uint64_t)0x3FE6A09Eu << 32) | 0x667F3BCDu)   /* sqrt(1/2): the lowest mantissa log reduces to */
/* scalar bits */
static GR__UNUSED uint64_t gr__vm_u(double x) { uint64_t u; memcpy(&u, &x, sizeof u); return u; }
static GR__UNUSED double gr__vm_d(uint64_t u) { double x; memcpy(&x, &u, sizeof x); return x; }
#define GR__VMS_TOU(x) gr__vm_u(x)
#define GR__VMS_TOD(u) gr__vm_d(u)
#define GR__VMS_LE(a, b) ((uint64_t)0 - (uint64_t)((a) <= (b)))
#define GR__VMS_EQ(a, b) ((uint64_t)0 - (uint64_t)((a) == (b)))
/* the cores, over T (double or a vector of doubles) with U its uint64 bits; O_TOU / O_TOD move
   between them, O_LE / O_EQ compare into all-ones masks */
#define GR__VM_K(O, ref, c) (O##_TOD(O##_TOU(ref) & (uint64_t)0) + (c))   /* c as a T like ref */
#define GR__VM_SEL(O, m, a, b) O##_TOD((O##_TOU(a) & (m)) | (O##_TOU(b) & ~(m)))
#define GR__VM_CORES(S, T, U, O) \
    /* x = k ln2 + r, |r| <= ln2/2: e^r - 1, k in *kd (|x| < 2^50) */ \
    static GR__VM_FNI T gr__vm_expr##S(T x, T *kd) { \
        GR__VM_NOFMA \
        T k = (x * GR__VM_INVLN2 + GR__VM_SHIFT) - GR__VM_SHIFT; \
        T r = (x - k * GR__VM_LN2HI) - k * GR__VM_LN2LO, p; \
        p = r * (1.0 / 6227020800.0) + 1.0 / 479001600.0; \
        p = p * r + 1.0 / 39916800.0; p = p * r + 1.0 / 3628800.0; \
        p = p * r + 1.0 / 362880.0; p = p * r + 1.0 / 40320.0; p = p * r + 1.0 / 5040.0; \
        p = p * r + 1.0 / 720.0; p = p * r + 1.0 / 120.0; p = p * r + 1.0 / 24.0; p = p * r + 1.0 / 6.0; \
        p = p * r + 0.5; \
        *kd = k; \
        return r + (r * r) * p; \
    } \
    /* 2^k for an integer-valued k in [-1022, 1023] */ \
    static GR__VM_FNI T gr__vm_pow2##S(T kd) { \
        GR__VM_NOFMA \
        return O##_TOD((O##_TOU(kd + GR__VM_SHIFT) - GR__VM_SHIFT_BITS + (uint64_t)1023) << 52); \
    } \
    /* e^x for |x| <= 708 */ \
    static GR__VM_FNI T gr__vm_exp_core##S(T x) { \
        GR__VM_NOFMA \
        T kd, q = gr__vm_expr##S(x, &kd); \
        return (1.0 + q) * gr__vm_pow2##S(kd); \
    } \
    /* e^x - 1 for |x| <= 700: 2^k q + (2^k - 1) (q itself when k = 0), -0 kept */ \
    static GR__VM_FNI T gr__vm_expm1_core##S(T x) { \
        GR__VM_NOFMA \
        T kd, q = gr__vm_expr##S(x, &kd), s = gr__vm_pow2##S(kd), y = s * q + (s - 1.0); \
        return GR__VM_SEL(O, O##_EQ(x, 0.0), x, y); \
    } \
    /* tanh x for x not NaN: with t = expm1(-2 min(|x|, 20)), tanh|x| = -t / (t + 2), x's sign */ \
    static GR__VM_FNI T gr__vm_tanh_core##S(T x) { \
        GR__VM_NOFMA \
        U sign = O##_TOU(x) & ((uint64_t)1 << 63); \
        T a = O##_TOD(O##_TOU(x) & ~((uint64_t)1 << 63)), t; \
        a = GR__VM_SEL(O, O##_LE(a, 20.0), a, GR__VM_K(O, a, 20.0)); \
        t = gr__vm_expm1_core##S(-2.0 * a); \
        return O##_TOD(O##_TOU(-t / (t + 2.0)) | sign); \
    } \
    /* 1 / (1 + e^-x) for |x| <= 708: with e = e^-|x|, 1 / (1 + e) or e / (1 + e) */ \
    static GR__VM_FNI T gr__vm_sigmoid_core##S(T x) { \
        GR__VM_NOFMA \
        T a = O##_TOD(O##_TOU(x) & ~((uint64_t)1 << 63)), e = gr__vm_exp_core##S(-a); \
        return GR__VM_SEL(O, O##_LE(-x, 0.0), GR__VM_K(O, x, 1.0), e) / (1.0 + e); \
    } \
    /* R(z) = z P(z) with 2 atanh s = 2s + s R(s^2), for z <= (3 - 2 sqrt 2)^2: P a fit of degree 6 \
       (weighted by z; |z (P - the true)| < 2^-57.8, computed for this file), by Estrin's scheme (pairs, \
       then pairs of pairs: a short chain, where the Taylor series by Horner took ten steps) */ \
    static GR__VM_FNI T gr__vm_logr##S(T z) { \
        GR__VM_NOFMA \
        T z2 = z * z, p01, p23, p45; \
        p01 = 0.6666666666666734 + z * 0.3999999999941432; p23 = 0.2857142874247499 + z * 0.22222198563476092; \
        p45 = 0.1818356486706799 + z * 0.15314035826947248; \
        return z * ((p01 + z2 * p23) + (z2 * z2) * (p45 + z2 * 0.14796105510224017)); \
    } \
    /* ln u + c + kadd ln2 for a normal u > 0 and a small correction c (|c| < 2^-52 u): \
       u = 2^k m, m in [sqrt(1/2), sqrt 2), f = m - 1, s = f / (2 + f), ln m = 2 atanh s */ \
    static GR__VM_FNI T gr__vm_log_core##S(T u, T c, T kadd) { \
        GR__VM_NOFMA \
        U w = O##_TOU(u) - GR__VM_SQRT1_2_BITS + ((uint64_t)1024 << 52), e = w >> 52; \
        T m = O##_TOD(O##_TOU(u) - (e << 52) + ((uint64_t)1024 << 52)); \
        T k = (O##_TOD(e + GR__VM_SHIFT_BITS) - GR__VM_SHIFT) - 1024.0 + kadd; \
        T f = m - 1.0, s = f / (2.0 + f), z = s * s, hfsq = 0.5 * f * f, R = gr__vm_logr##S(z); \
        return k * GR__VM_LN2HI - ((hfsq - (s * (hfsq + R) + (k * GR__VM_LN2LO + c))) - f); \
    } \
    static GR__VM_FNI T gr__vm_log_main##S(T x) { GR__VM_NOFMA return gr__vm_log_core##S(x, 0.0 * x, 0.0 * x); } \
    /* ln(1 + x) for x > -1 finite: u = 1 + x rounded, its error e exactly (Fast2Sum), ln u + e/u */ \
    static GR__VM_FNI T gr__vm_log1p_core##S(T x) { \
        GR__VM_NOFMA \
        T u = 1.0 + x, ax = O##_TOD(O##_TOU(x) & ~((uint64_t)1 << 63)); \
        T e = GR__VM_SEL(O, O##_LE(ax, 1.0), x - (u - 1.0), 1.0 - (u - x)); \
        T y = gr__vm_log_core##S(u, e / u, 0.0 * x); \
        return GR__VM_SEL(O, O##_EQ(x, 0.0), x, y); \
    } \
    /* ln(1 + e^x) for |x| <= 708: max(x, 0) + log1p(e^-|x|) */ \
    static GR__VM_FNI T gr__vm_softplus_core##S(T x) { \
        GR__VM_NOFMA \
        T a = O##_TOD(O##_TOU(x) & ~((uint64_t)1 << 63)), l = gr__vm_log1p_core##S(gr__vm_exp_core##S(-a)); \
        return GR__VM_SEL(O, O##_LE(x, 0.0), GR__VM_K(O, x, 0.0), x) + l; \
    } \
    /* sin and cos of y + yl on [-pi/4, pi/4] (x = n pi/2 + y + yl), placed by the quadrant n mod 4 (the \
       low bits of nb) */ \
    static GR__VM_FNI void gr__vm_sincos_poly##S(T x, T y, T yl, U nb, T *sn, T *cs) { \
        GR__VM_NOFMA \
        U odd = (uint64_t)0 - (nb & 1); \
        T z = y * y, z2 = z * z, z4 = z2 * z2, ps, pc, sk, ck, hz, w1; \
        /* the polynomials by Estrin's scheme (pairs, then pairs of pairs): a short chain for one value */ \
        ps = ((1.0 / 6.0 - z * (1.0 / 120.0)) + z2 * (1.0 / 5040.0 - z * (1.0 / 362880.0))) + \
             z4 * ((1.0 / 39916800.0 - z * (1.0 / 6227020800.0)) + z2 * (1.0 / 1307674368000.0 - z * (1.0 / 355687428096000.0))); \
        sk = y - ((y * z) * ps - yl); \
        pc = ((z * (1.0 / 720.0) - 1.0 / 24.0) + z2 * (z * (1.0 / 3628800.0) - 1.0 / 40320.0)) + \
             z4 * ((z * (1.0 / 87178291200.0) - 1.0 / 479001600.0) + z2 * (z * (1.0 / 6402373705728000.0) - 1.0 / 20922789888000.0)); \
        hz = 0.5 * z; w1 = 1.0 - hz; \
        ck = w1 + (((1.0 - w1) - hz) - (z2 * pc + y * yl)); \
        *sn = O##_TOD((O##_TOU(sk) & ~odd) | (O##_TOU(ck) & odd)); \
        *sn = O##_TOD(O##_TOU(*sn) ^ ((nb & 2) << 62)); \
        *sn = GR__VM_SEL(O, O##_EQ(x, 0.0), x, *sn); \
        *cs = O##_TOD((O##_TOU(ck) & ~odd) | (O##_TOU(sk) & odd)); \
        *cs = O##_TOD(O##_TOU(*cs) ^ (((nb + 1) & 2) << 62)); \
    } \
    /* sin x and cos x for |x| <= 2^20 pi/2: x = n pi/2 + y + yl (four parts of pi/2, two TwoSums) */ \
    static GR__VM_FNI void gr__vm_sincos_core##S(T x, T *sn, T *cs) { \
        GR__VM_NOFMA \
        T nd = (x * GR__VM_INVPIO2 + GR__VM_SHIFT) - GR__VM_SHIFT; \
        U nb = O##_TOU(nd + GR__VM_SHIFT); \
        T t = x - nd * GR__VM_PIO2_1, w = nd * GR__VM_PIO2_2, r = t - w, b = r - t; \
        T e = (t - (r - b)) - (w + b), w3 = nd * GR__VM_PIO2_3, r2 = r - w3, b2 = r2 - r; \
        T e2 = (r - (r2 - b2)) - (w3 + b2), lo = (e + e2) - nd * GR__VM_PIO2_3T, y = r2 + lo; \
        gr__vm_sincos_poly##S(x, y, lo - (y - r2), nb, sn, cs); \
    }
GR__VM_CORES(_s, double, uint64_t, GR__VMS)
/* the main ranges (false for NaN): the vector kernels test the same */
#define GR__VM_IN_exp(x) ((x) <= 708.0 && (x) >= -708.0)
#define GR__VM_IN_expm1(x) (((x) <= 700.0) & ((x) >= -700.0))   /* (&: no branch per lane in the maps) */
#define GR__VM_IN_tanh(x) ((x) == (x))
#define GR__VM_IN_log(x) ((x) >= 2.2250738585072014e-308 && (x) <= 1.7976931348623157e308)
#define GR__VM_IN_log1p(x) ((x) > -1.0 && (x) <= 1.7976931348623157e308)
#define GR__VM_IN_sin(x) ((x) <= 1647099.0 && (x) >= -1647099.0)
#define GR__VM_IN_cos(x) GR__VM_IN_sin(x)
#define GR__VM_IN_sigmoid(x) GR__VM_IN_exp(x)
#define GR__VM_IN_softplus(x) GR__VM_IN_exp(x)
/* sin x and cos x for |x| <= 2^20 pi/2, one value: the vector lanes' bits by a shorter chain.
   Below 0.78 the quotient by pi/2 rounds to n = 0, and the reduction gives y = x + 0 and yl = 0
   exactly, so it is skipped. From 0.7854 to 2.356 (pi/4 to 3pi/4, with margins) n = 1 for a = |x|:
   its reduction is the lanes' operations with n = 1 known (no quotient to compute), and its two
   TwoSums are Fast2Sums, which give the same error exactly when the first operand is the larger
   (t = a - pi/2's first part against the second, 6.1e-11: checked; r against the third, 2.0e-21:
   always, no double being within 6e-17 of pi/2). Rounding is symmetric, so -x gives the opposite
   y and yl, and the quadrants n = 1 and n = -1 place them as sin x = sign(x) cos y, cos x = -sin y. */
static GR__VM_FN void gr__vm_sincos_s1(double x, double *sn, double *cs) {
    GR__VM_NOFMA
    double a = gr__vm_d(gr__vm_u(x) & ~((uint64_t)1 << 63)), t = a - GR__VM_PIO2_1;
    if (a < 0.78) gr__vm_sincos_poly_s(x, x + 0.0, 0.0, GR__VM_SHIFT_BITS, sn, cs);
    else if (a >= 0.7854 && a <= 2.356 && (t >= 1e-10 || t <= -1e-10)) {
        double r = t - GR__VM_PIO2_2, b = r - t, r2 = r - GR__VM_PIO2_3, b2 = r2 - r, s, c;
        double lo = -(((GR__VM_PIO2_2 + b) + (GR__VM_PIO2_3 + b2)) + GR__VM_PIO2_3T), y = r2 + lo;
        gr__vm_sincos_poly_s(a, y, lo - (y - r2), GR__VM_SHIFT_BITS, &s, &c);
        *sn = gr__vm_d(gr__vm_u(c) ^ (gr__vm_u(x) & ((uint64_t)1 << 63)));
        *cs = -s;
    } else gr__vm_sincos_core_s(x, sn, cs);
}
/* GR_KERNEL gr__m_exp */
/* e^x: outside the main range, 2^k applied in two steps (one rounding, into the subnormals too) */
static GR__VM_FN double gr__m_exp(double x) {
    GR__VM_NOFMA
    double kd, q, k1;
    if (GR__VM_IN_exp(x)) return gr__vm_exp_core_s(x);
    if (x != x) return x + x;
    if (x > 710.0) return x * 1e308;
    if (x < -746.0) return 0.0;
    q = gr__vm_expr_s(x, &kd);
    k1 = (kd * 0.5 + GR__VM_SHIFT) - GR__VM_SHIFT;                 /* k = k1 + (k - k1), both in range */
    return ((1.0 + q) * gr__vm_pow2_s(k1)) * gr__vm_pow2_s(kd - k1);
}
/* GR_KERNEL gr__m_expf */
static GR__VM_FN float gr__m_expf(float x) { return (float)gr__m_exp((double)x); }
/* GR_KERNEL gr__m_expm1 */
static GR__VM_FN double gr__m_expm1(double x) {
    if (GR__VM_IN_expm1(x)) return gr__vm_expm1_core_s(x);
    if (x < 0) return -1.0;
    return gr__m_exp(x);                                          /* (NaN, and e^x - 1 = e^x rounded) */
}
/* GR_KERNEL gr__m_expm1f */
static GR__VM_FN float gr__m_expm1f(float x) { return (float)gr__m_expm1((double)x); }
/* GR_KERNEL gr__m_tanh */
static GR__VM_FN double gr__m_tanh(double x) { return GR__VM_IN_tanh(x) ? gr__vm_tanh_core_s(x) : x + x; }
/* GR_KERNEL gr__m_tanhf */
static GR__VM_FN float gr__m_tanhf(float x) { return (float)gr__m_tanh((double)x); }
/* GR_KERNEL gr__m_sigmoid */
static GR__VM_FN double gr__m_sigmoid(double x) {
    if (GR__VM_IN_sigmoid(x)) return gr__vm_sigmoid_core_s(x);
    return x != x ? x + x : x > 0 ? 1.0 : gr__m_exp(x);           /* e / (1 + e) = e rounded */
}
/* GR_KERNEL gr__m_sigmoidf */
static GR__VM_FN float gr__m_sigmoidf(float x) { return (float)gr__m_sigmoid((double)x); }
/* GR_KERNEL gr__m_softplus */
static GR__VM_FN double gr__m_softplus(double x) {
    if (GR__VM_IN_softplus(x)) return gr__vm_softplus_core_s(x);
    return x > 0 || x != x ? x : gr__m_exp(x);                      /* x (+ e^-x, below its ulp); log1p(e^x) = e^x rounded */
}
/* GR_KERNEL gr__m_softplusf */
static GR__VM_FN float gr__m_softplusf(float x) { return (float)gr__m_softplus((double)x); }
/* GR_KERNEL gr__m_log */
/* ln x: subnormals scaled by 2^54 first; 0 -> -inf, x < 0 -> NaN */
static GR__VM_FN double gr__m_log(double x) {
    GR__VM_NOFMA
    if (GR__VM_IN_log(x)) return gr__vm_log_main_s(x);
    if (x != x || x > 1.0) return x + x;                        /* NaN, +inf */
    if (x == 0) return -1.0 / (x * x);
    if (x < 0) return (x - x) / (x - x);
    return gr__vm_log_core_s(x * 18014398509481984.0, 0.0, -54.0);
}
/* GR_KERNEL gr__m_logf */
static GR__VM_FN float gr__m_logf(float x) { return (float)gr__m_log((double)x); }
/* GR_KERNEL gr__m_log1p */
static GR__VM_FN double gr__m_log1p(double x) {
    GR__VM_NOFMA
    if (GR__VM_IN_log1p(x)) return gr__vm_log1p_core_s(x);
    if (x != x || x > 0) return x + x;
    if (x == -1.0) return -1.0 / (x + 1.0);
    return (x - x) / (x - x);
}
/* GR_KERNEL gr__m_log1pf */
static GR__VM_FN float gr__m_log1pf(float x) { return (float)gr__m_log1p((double)x); }
/* GR_KERNEL gr__m_sin */
/* |x| beyond 2^20 pi/2 (and infinities): the C library's sin, which reduces exactly */
static GR__VM_FN double gr__m_sin(double x) {
    double s, c;
    if (!GR__VM_IN_sin(x)) return sin(x);
    gr__vm_sincos_s1(x, &s, &c);
    return s;
}
/* GR_KERNEL gr__m_sinf */
static GR__VM_FN float gr__m_sinf(float x) { return (float)gr__m_sin((double)x); }
/* GR_KERNEL gr__m_cos */
static GR__VM_FN double gr__m_cos(double x) {
    double s, c;
    if (!GR__VM_IN_cos(x)) return cos(x);
    gr__vm_sincos_s1(x, &s, &c);
    return c;
}
/* GR_KERNEL gr__m_cosf */
static GR__VM_FN float gr__m_cosf(float x) { return (float)gr__m_cos((double)x); }
/* GR_KERNEL gr__vm_sincos1 */
/* sin x and cos x: gr__m_sin's and gr__m_cos's values, with one reduction */
static GR__VM_FN void gr__vm_sincos1(double x, double *s, double *c) {
    if (GR__VM_IN_sin(x)) gr__vm_sincos_s1(x, s, c);
    else { *s = sin(x); *c = cos(x); }
}
/* GR_KERNEL_END */
#else
/* GR_NO_VECTOR_EXTENSIONS: the C library's functions (tanh from one expm1, without libm tanh's
   range branches: with t = expm1(-2|x|) in (-1, 0], tanh|x| = -t / (t + 2), a few ulp) */
/* GR_KERNEL gr__m_exp */
static double gr__m_exp(double x) { return exp(x); }
/* GR_KERNEL gr__m_expf */
static float gr__m_expf(float x) { return expf(x); }
/* GR_KERNEL gr__m_expm1 */
static double gr__m_expm1(double x) { return expm1(x); }
/* GR_KERNEL gr__m_expm1f */
static float gr__m_expm1f(float x) { return expm1f(x); }
/* GR_KERNEL gr__m_tanh */
static double gr__m_tanh(double x) { double t = expm1(-2.0 * fabs(x)); return copysign(-t / (t + 2.0), x); }
/* GR_KERNEL gr__m_tanhf */
static float gr__m_tanhf(float x) { float t = expm1f(-2.0f * fabsf(x)); return copysignf(-t / (t + 2.0f), x); }
/* GR_KERNEL gr__m_sigmoid */
static double gr__m_sigmoid(double x) {
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    { double e = exp(x); return e / (1.0 + e); }
}
/* GR_KERNEL gr__m_sigmoidf */
static float gr__m_sigmoidf(float x) {
    if (x >= 0) return 1.0f / (1.0f + expf(-x));
    { float e = expf(x); return e / (1.0f + e); }
}
/* GR_KERNEL gr__m_softplus */
static double gr__m_softplus(double x) { return (x > 0 ? x : 0.0) + log1p(exp(-fabs(x))); }
/* GR_KERNEL gr__m_softplusf */
static float gr__m_softplusf(float x) { return (x > 0 ? x : 0.0f) + log1pf(expf(-fabsf(x))); }
/* GR_KERNEL gr__m_log */
static double gr__m_log(double x) { return log(x); }
/* GR_KERNEL gr__m_logf */
static float gr__m_logf(float x) { return logf(x); }
/* GR_KERNEL gr__m_log1p */
static double gr__m_log1p(double x) { return log1p(x); }
/* GR_KERNEL gr__m_log1pf */
static float gr__m_log1pf(float x) { return log1pf(x); }
/* GR_KERNEL gr__m_sin */
static double gr__m_sin(double x) { return sin(x); }
/* GR_KERNEL gr__m_sinf */
static float gr__m_sinf(float x) { return sinf(x); }
/* GR_KERNEL gr__m_cos */
static double gr__m_cos(double x) { return cos(x); }
/* GR_KERNEL gr__m_cosf */
static float gr__m_cosf(float x) { return cosf(x); }
/* GR_KERNEL_END */
static GR__UNUSED void gr__vm_sincos1(double x, double *s, double *c) { *s = sin(x); *c = cos(x); }
#endif

/* ---- erf, erfc, exp2, log2, sinh, cosh, tan, the inverse trigonometric and hyperbolic, pow -------
   The same way as the functions above: a second set of cores (GR__VM_CORES2, over double or a vector
   of doubles, built on the first set) and scalar functions that take the cores in their main range.
   erf and erfc compute every lane's candidates (the fit near 0, the tail through e^(-x^2)) and pick
   per lane with masks; sinh and cosh come from expm1 and exp, exp2 from the exp reduction, log2 from
   the log reduction with ln m split in two parts before the division by ln 2. */
#ifndef GR_NO_VECTOR_EXTENSIONS
/* GR_KERNEL GR__VM_FN2 */
#define GR__VM_FN2 GR__VM_FN                         /* (names this kernel: the cores below) */
#define GR__VM_LN2 6.93147180559945286227e-01
#define GR__VM_IVLN2HI 1.44269504072144627571e+00     /* 1/ln 2 in 32 bits, and the rest */
#define GR__VM_IVLN2LO 1.67517131676592212486e-10
#define GR__VM_HI26_BITS (~(uint64_t)0 << 27)         /* a double's leading 26 bits */
#define GR__VM_HI21_BITS (~(uint64_t)0 << 32)         /* its leading 21 bits */
#define GR__VM_TWO3 6.6666666666666663e-01            /* 2/3, and the rest (1 / (3 2^53)) */
#define GR__VM_TWO3LO 3.7007434154171883e-17
#define GR__VM_SPLIT 134217729.0                      /* 2^27 + 1: Dekker's split */
/* erf x = x + x Q(x^2) for |x| <= 1: Q a Chebyshev fit of degree 12 in x^2 (as monomials) */
static const double gr__vm_erf_q[13] GR__UNUSED = {
    0.128379167095512573468, -0.376126389031837430281, 0.112837916709546981201, -0.026866170645047586397,
    0.0052239776245561028735, -0.000854832696649681532668, 0.000120553306058680275413, -1.49255834251020676079e-05,
    1.64608147578383122978e-06, -1.63483844342402142926e-07, 1.46470640061124868225e-08, -1.13246793139646447694e-09,
    5.87728156740642869119e-11
};
/* erfc x = e^(-x^2) g(u) / (x + 1/2) for x >= 1/2, u = (x - 4.5) / (x + 3.5) in [-1, 1): g is
   e^(x^2) erfc(x) (x + 1/2), smooth in u up to x = inf; its Chebyshev series to degree 23 (fit in
   long double), as monomials (their magnitudes sum to 0.74: no cancellation on [-1, 1]) split into
   even and odd parts, g = c_0 + E(u^2) u^2 + O(u^2) u, c_0 in two parts */
#define GR__VM_ERFC_C0 0.61242402136920704
#define GR__VM_ERFC_C0LO 4.67833e-17
static const double gr__vm_erfc_e[11] GR__UNUSED = {
    0.00642199564890962756828, -0.0206072859568225929163, -0.00762457950510174536787, -0.000721853623505291398799,
    4.8269291187647579238e-05, -3.37086387023251739667e-07, -3.19702700461258852218e-07, 6.15164463813044903873e-08,
    -9.13425379778232127137e-09, 1.14301516399943163082e-09, -8.96539139224235744547e-11
};
static const double gr__vm_erfc_o[12] GR__UNUSED = {
    -0.0607587110468612982443, 0.0174080658842444365816, 0.0146605846547243018775, 0.00291299863071088439283,
    4.28001263889412249771e-05, -1.7921680216102797713e-05, 1.97075311324697762428e-06, -1.83540342886997128361e-07,
    1.76090457770783359592e-08, -1.91619993946308871569e-09, 2.20505095664217757686e-10, -1.769725107199822863e-11
};
/* atan w = w - w z Q(z), z = w^2, |w| <= 7/16: Q a Chebyshev fit of degree 11 (as monomials), and
   atan c in two parts for the reduction points c = 1/2, 1, 3/2, inf */
static const double gr__vm_atan_q[12] GR__UNUSED = {
    0.333333333333333289459, -0.199999999999983704146, 0.142857142854686081866, -0.111111110918341109834,
    0.0909090821581122186822, -0.0769228297405358955917, 0.0666621052711852354232, -0.0587669147682827418662,
    0.0521531073933456326374, -0.0448759271947977703745, 0.0330366312007574695859, -0.014694572175081424175
};
#define GR__VM_ATAN_HALF 0.46364760900080609
#define GR__VM_ATAN_HALF_LO 2.2698777452961687e-17
#define GR__VM_PIO4 0.78539816339744828
#define GR__VM_PIO4_LO 3.061616997868383e-17
#define GR__VM_ATAN_3HALF 0.98279372324732905
#define GR__VM_ATAN_3HALF_LO 1.3903311031230998e-17
#define GR__VM_PIO2 1.5707963267948966
#define GR__VM_PIO2_LO 6.123233995736766e-17
#define GR__VM_PI 3.1415926535897931
#define GR__VM_PI_LO 1.2246467991473532e-16
/* in the lanes of mask m: w = (a p1 - p0) / (a q1 + q0), atan c = h + l */
#define GR__VM_ATAN_AT(O, m, P1, P0, Q1, Q0, H, L) do { \
    p1 = GR__VM_SEL(O, m, GR__VM_K(O, a, P1), p1); p0 = GR__VM_SEL(O, m, GR__VM_K(O, a, P0), p0); \
    q1 = GR__VM_SEL(O, m, GR__VM_K(O, a, Q1), q1); q0 = GR__VM_SEL(O, m, GR__VM_K(O, a, Q0), q0); \
    h = GR__VM_SEL(O, m, GR__VM_K(O, a, H), h); l = GR__VM_SEL(O, m, GR__VM_K(O, a, L), l); } while (0)
/* cbrt u for u in [1/2, 4): a fit of degree 4 (relative error 0.0048), the start of Newton's steps */
static const double gr__vm_cbrt_p[5] GR__UNUSED = {
    0.51899783610373018, 0.65429731172015348, -0.21580018957752015, 0.044378459962340612, -0.0036601650194091925
};
/* pow's ln x: z = 2^-k x in [OFF, 2 OFF) (OFF = 0.708) in 128 intervals of z's leading bits (1 the
   middle of one); per interval 1/c (c its center, 1 in 1's) rounded to 32 bits, and -ln(1/c) as a
   multiple of 2^-42 and the rest (computed for this file in 50 digits); ln 2 as such a multiple and the rest */
#define GR__VM_LOGT_OFF ((uint64_t)0x3FE6B000u << 32)
#define GR__VM_LN2HI42 0.6931471805598903
#define GR__VM_LN2LO42 5.497923018708371e-14
static const double gr__vm_logt[384] GR__UNUSED = {
    1.406593406572938, -0.3411707573882268, 1.1565686352043349e-14, 1.3989071040414274, -0.3356912917927275, -2.8136957948467487e-14,
    1.3913043476641178, -0.3302416867541069, -5.461213771365664e-14, 1.383783783763647, -0.32482161938673926, 5.351646614847453e-14,
    1.376344086136669, -0.3194307708499764, -5.834357070028088e-14, 1.368983957450837, -0.3140688277942445, 1.0263282186118087e-13,
    1.3617021278478205, -0.30873548178783494, -2.1522117936052455e-14, 1.354497354477644, -0.3034304294053527, -1.5483459829101712e-14,
    1.3473684210330248, -0.2981533723045686, 4.4204083444634804e-14, 1.34031413635239, -0.29290401660205134, -4.727451509657383e-14,
    1.3333333334885538, -0.2876820725682592, 6.292358066634553e-14, 1.3264248706400394, -0.28248725570574607, 1.0190482991125947e-13,
    1.3195876288227737, -0.2773192853835553, 6.279055786262148e-14, 1.3128205128014088, -0.2721778859013284, 6.465103074593167e-14,
    1.3061224487610161, -0.2670627850816345, -6.371945869564326e-14, 1.2994923857040703, -0.2619737156778683, -4.102650869039196e-14,
    1.2929292931221426, -0.2569104139342926, 1.0822172759191612e-13, 1.2864321609959006, -0.2518726199041339, -9.33123356555343e-14,
    1.279999999795109, -0.24686007777154373, 8.899852637697777e-14, 1.2736318409442902, -0.24187253653690277, 7.252386715876068e-16,
    1.2673267326317728, -0.2369097470457291, 1.1318526965624991e-13, 1.2610837440006435, -0.23197146556321968, -6.573096950190596e-14,
    1.2549019609577954, -0.22705745077360007, 1.0787377054307344e-14, 1.248780488036573, -0.2221674655265815, -1.0970697599369014e-13,
    1.242718446534127, -0.21730127563546375, 5.204008892298394e-14, 1.2367149759083986, -0.21245865126502395, -1.0115944066888547e-13,
    1.2307692309841514, -0.2076393649529109, 4.3425437841835615e-14, 1.2248803828842938, -0.20284319260395023, 6.827662184397628e-14,
    1.2190476190298796, -0.19806991374753125, -1.0634128198389216e-14, 1.2132701422087848, -0.19331931102715316, 1.0320443968285896e-14,
    1.2075471696443856, -0.18859116966928013, -2.669342202242538e-14, 1.2018779343925416, -0.18388527887009332, -8.846373057676599e-14,
    1.1962616820819676, -0.17920142932302952, -7.626152771501132e-14, 1.190697674639523, -0.17453941653752736, 9.076233277897214e-14,
    1.1851851851679385, -0.16989903678086193, 1.637627651997662e-14, 1.179723502136767, -0.165280090797296, 7.424680106829623e-14,
    1.174311926588416, -0.16068238167599702, 7.547106038832718e-14, 1.1689497716724873, -0.15610571464844725, -6.249274921018626e-14,
    1.1636363635770977, -0.1515498980763823, 1.1307104939572293e-13, 1.158371040597558, -0.14701474285266158, -8.710777840422068e-15,
    1.1531531531363726, -0.14250006259271686, -1.4256439372319916e-14, 1.1479820627719164, -0.13800567301223055, 6.278619482202534e-14,
    1.1428571427240968, -0.13353139250807544, -3.1859729572814756e-14, 1.1377777778543532, -0.1290770423424874, 4.245121835444051e-14,
    1.1327433628030121, -0.12464244518173473, -7.601671237427386e-14, 1.1277533038519323, -0.12022742689805455, -6.083737919528303e-14,
    1.1228070175275207, -0.11583181551054622, -2.3568822076159637e-14, 1.1179039301350713, -0.11145544092892123, -3.957125899138059e-14,
    1.1130434782244265, -0.10709813552352898, -9.631010979917914e-14, 1.1082251081243157, -0.1027597338668329, 1.3438410364734017e-14,
    1.1034482759423554, -0.09844007288597822, -3.3871238382263456e-14, 1.098712446168065, -0.09413899074661458, 9.969654423331047e-14,
    1.094017094001174, -0.08985632910730601, -3.1218747748627653e-15, 1.089361702091992, -0.08559193030259848, -6.32200928009018e-14,
    1.0847457628697157, -0.08134563959947627, 4.713381366212824e-15, 1.0801687762141228, -0.0771173031989747, 6.255851258967589e-14,
    1.075630252249539, -0.07290677094624698, -8.399593318485294e-14, 1.0711297071538866, -0.06871389258617455, -7.603386878815399e-14,
    1.0666666668839753, -0.06453852134131921, 2.1225628797117202e-14, 1.0622406639158726, -0.06038051100335906, -1.0033424878088207e-13,
    1.0578512395732105, -0.05623971823183638, -9.023008867552597e-14, 1.0534979421645403, -0.052116000927981077, -3.01709988008023e-14,
    1.0491803279146552, -0.04800921922992529, -9.106054283839723e-14, 1.0448979591019452, -0.04391923385651353, -1.0541743548451472e-13,
    1.0406504063867033, -0.03984590843447222, 4.9893783076137835e-14, 1.0364372469484806, -0.0357891078369903, -4.3066973370999026e-14,
    1.0322580644860864, -0.03174869828558258, 1.0610652777575735e-13, 1.028112449683249, -0.027724547902153063, 7.554530964833182e-14,
    1.0240000002086163, -0.023716526821090156, 4.73005684726397e-14, 1.01992031885311, -0.01972450547327753, -1.1326391823728441e-14,
    1.015873015858233, -0.015748356953508846, -7.840703371918366e-14, 1.0118577075190842, -0.01178795576106495, -7.223757576073385e-14,
    1.0078740157186985, -0.007843177431823278, -9.878410438679822e-14, 1.0039215688593686, -0.003913899552117073, -3.091057166336285e-14,
    1.0, 0.0, 0.0, 0.9922480620443821, 0.007782140412928129, 2.2989410469719985e-14,
    0.9846153846010566, 0.015504186550515442, 1.727456855849729e-15, 0.9770992365665734, 0.023167059358002007, -7.007359412480716e-14,
    0.9696969697251916, 0.03077165863760456, 4.529814300142576e-14, 0.9624060150235891, 0.03831886431657949, 1.0902154312791213e-13,
    0.9552238807082176, 0.04580953591494108, -6.219833521849434e-14, 0.9481481481343508, 0.05324451453338952, -2.532168932529533e-14,
    0.9411764706019312, 0.060624621801935064, -5.213620628548592e-14, 0.9343065693974495, 0.06795066185031828, -1.819505833610292e-14,
    0.927536231931299, 0.07522342118659253, 6.329066088426464e-14, 0.9208633094094694, 0.0824436691491428, 8.614513127331972e-14,
    0.9142857142724097, 0.0896121587043126, -7.355770208847117e-14, 0.907801418332383, 0.09672962657668904, 9.638068357519895e-14,
    0.9014084506779909, 0.10379679371067141, 7.598636639545789e-14, 0.895104895113036, 0.11081436633116937, 2.5799991324428933e-14,
    0.8888888889923692, 0.11778303554001468, -4.654729069972087e-14, 0.8827586206607521, 0.12470347853377461, -7.556920633850033e-14,
    0.8767123287543654, 0.13157635780316923, 1.0195735234296385e-13, 0.8707482994068414, 0.13840232275902054, 5.41833363834517e-14,
    0.8648648648522794, 0.145182009859127, -7.718001326240187e-14, 0.8590604027267545, 0.15191604197661945, 1.0980754220458171e-13,
    0.8533333332743496, 0.15860503024578065, -2.0472355411564346e-14, 0.8476821191143245, 0.16524957300271126, -8.37209052335277e-14,
    0.8421052631456405, 0.17185025694129763, -8.649239596624159e-14, 0.8366013071499765, 0.1784076575202107, -9.86835027490013e-14,
    0.8311688310932368, 0.18492233858501095, -4.9485163525347933e-14, 0.8258064517285675, 0.19139485285950286, 6.440857131567662e-14,
    0.8205128205008805, 0.19782574334453784, -6.604544866494472e-14, 0.8152866242453456, 0.2042155413778346, -7.540916382254269e-14,
    0.8101265823934227, 0.21056476896546883, -3.6506182318421316e-16, 0.8050314465072006, 0.2168739383423599, 9.120937337430693e-14,
    0.8000000000465661, 0.2231435512560438, -4.169796415120606e-14, 0.7950310558080673, 0.22937410118129264, -3.149264387565126e-14,
    0.7901234568562359, 0.2355660712291865, -9.309459145134054e-14, 0.7852760737296194, 0.24171993674713121, -4.823027962123318e-14,
    0.7804878049064428, 0.2478361638682145, -1.3029796511564173e-14, 0.7757575758732855, 0.2539152098318027, 3.6001878565622114e-15,
    0.7710843372624367, 0.2599575245496908, 1.2621735758249865e-14, 0.7664670657832175, 0.26596354860816973, -7.343590754279985e-14,
    0.7619047618936747, 0.27193371549810763, 8.604306783396645e-14, 0.7573964498005807, 0.2778684508762126, -8.554359195929322e-14,
    0.7529411765281111, 0.2837681730543409, -9.38341693183438e-14, 0.7485380116850138, 0.28963329259750026, 9.433398200100602e-14,
    0.7441860465332866, 0.295464212864772, -3.9934163420361966e-14, 0.7398843930568546, 0.30126133058729465, -3.7923164760734116e-14,
    0.7356321839615703, 0.30702503522206825, 8.40315656949022e-14, 0.73142857151106, 0.3127557098910074, 1.1211801376297437e-13,
    0.7272727272938937, 0.3184537310894484, -1.762543088865619e-14, 0.7231638417579234, 0.32411946872343833, -1.047574981988678e-13,
    0.7191011235117912, 0.3297532864889945, -1.1118670711932965e-13, 0.7150837988592684, 0.3353555419539589, -7.925157777785255e-14,
    0.7111111111007631, 0.34092658698523337, -8.824526321537728e-14, 0.7071823205333203, 0.3464667672169526, 1.0775743871536134e-13
};
#define GR__VM_ABS(O, x) O##_TOD(O##_TOU(x) & ~((uint64_t)1 << 63))
#define GR__VM_SIGN(O, x) (O##_TOU(x) & ((uint64_t)1 << 63))
#define GR__VM_MIN(O, a, c) GR__VM_SEL(O, O##_LE(a, c), a, GR__VM_K(O, a, c))
#define GR__VMS_SQRT(x) sqrt(x)
#define GR__VMS_LD(t, i) ((t)[i])                       /* t[i] (every lane's) */
#define GR__VMS_ALL(m) ((m) != 0)                       /* every lane of a mask set, none set */
#define GR__VMS_NONE(m) ((m) == 0)
/* y = a where mask m, else b: each computed only if some lane takes it (the same bits as computing
   both and selecting; with 16-byte vectors most pairs of lanes agree) */
#define GR__VM_PICK(O, U, m, y, a, b) do { \
    U m_ = (m); \
    if (O##_ALL(m_)) y = (a); \
    else if (O##_NONE(m_)) y = (b); \
    else y = GR__VM_SEL(O, m_, (a), (b)); } while (0)
/* Horner steps p = p z + c[i], c[i - 1], ... written out (as a loop, GCC -O2 keeps a loop with each
   coefficient loaded and broadcast, and the chains of two vectors cannot interleave) */
#define GR__VM_H1(p, z, c, i) p = p * (z) + (c)[i]
#define GR__VM_H2(p, z, c, i) GR__VM_H1(p, z, c, i); GR__VM_H1(p, z, c, (i) - 1)
#define GR__VM_H4(p, z, c, i) GR__VM_H2(p, z, c, i); GR__VM_H2(p, z, c, (i) - 2)                         /* (correctly rounded: the vectors' lane by lane) */
#define GR__VM_CORES2(S, T, U, O) \
    /* erf x for x in [0, 1] */ \
    static GR__VM_FNI T gr__vm_erf_small##S(T x) { \
        GR__VM_NOFMA \
        T z = x * x, q = GR__VM_K(O, x, gr__vm_erf_q[12]); \
        GR__VM_H4(q, z, gr__vm_erf_q, 11); GR__VM_H4(q, z, gr__vm_erf_q, 7); GR__VM_H4(q, z, gr__vm_erf_q, 3); \
        return x + x * q; \
    } \
    /* e^(-x^2) g(u) / (x + 1/2) as 2^k m, k in *kd, for 0 <= x <= 28: x^2 = hi + lo with hi = xh^2 \
       exact (xh: x's leading 26 bits), e^-hi = 2^k (1 + q), e^-lo = 1 + w (|lo| < 2^-24 x^2) */ \
    static GR__VM_FNI T gr__vm_erfc_parts##S(T x, T *kd) { \
        GR__VM_NOFMA \
        T xh = O##_TOD(O##_TOU(x) & GR__VM_HI26_BITS), xl = x - xh, hi = xh * xh, lo = (2.0 * xh) * xl + xl * xl; \
        T q = gr__vm_expr##S(-hi, kd), w = -lo * (1.0 - lo * (0.5 - lo * (1.0 / 6.0 - lo * (1.0 / 24.0)))); \
        T v = q + (w + q * w), u = (x - 4.5) / (x + 3.5), z = u * u, pe, po, m; \
        pe = GR__VM_K(O, x, gr__vm_erfc_e[10]); po = GR__VM_K(O, x, gr__vm_erfc_o[11]); \
        GR__VM_H4(pe, z, gr__vm_erfc_e, 9); GR__VM_H4(pe, z, gr__vm_erfc_e, 5); GR__VM_H2(pe, z, gr__vm_erfc_e, 1); \
        GR__VM_H4(po, z, gr__vm_erfc_o, 10); GR__VM_H4(po, z, gr__vm_erfc_o, 6); GR__VM_H2(po, z, gr__vm_erfc_o, 2); GR__VM_H1(po, z, gr__vm_erfc_o, 0); \
        m = (((u * po + pe * z) + GR__VM_ERFC_C0LO) + GR__VM_ERFC_C0) / (x + 0.5); \
        return m + m * v; \
    } \
    /* erfc x for 0 <= x <= 26.5 (a normal result) */ \
    static GR__VM_FNI T gr__vm_erfc_big##S(T x) { \
        GR__VM_NOFMA \
        T kd, m = gr__vm_erfc_parts##S(x, &kd); \
        return m * gr__vm_pow2##S(kd); \
    } \
    /* erf x for x not NaN: |x| <= 1: the fit, else 1 - erfc|x| (|x| > 6: 1); x's sign */ \
    static GR__VM_FNI T gr__vm_erf_core##S(T x) { \
        GR__VM_NOFMA \
        T a = GR__VM_ABS(O, x), s = gr__vm_erf_small##S(GR__VM_MIN(O, a, 1.0)); \
        T b = 1.0 - gr__vm_erfc_big##S(GR__VM_MIN(O, a, 6.0)); \
        return O##_TOD(O##_TOU(GR__VM_SEL(O, O##_LE(a, 1.0), s, b)) | GR__VM_SIGN(O, x)); \
    } \
    /* erfc x for x <= 26.5: x >= 1/2: the tail; x in (-1, 1/2): 1 - erf x; x <= -1: 2 - erfc|x| */ \
    static GR__VM_FNI T gr__vm_erfc_core##S(T x) { \
        GR__VM_NOFMA \
        T a = GR__VM_ABS(O, x), big = gr__vm_erfc_big##S(GR__VM_MIN(O, a, 26.5)); \
        T s = O##_TOD(O##_TOU(gr__vm_erf_small##S(GR__VM_MIN(O, a, 1.0))) | GR__VM_SIGN(O, x)); \
        T y = GR__VM_SEL(O, O##_LE(GR__VM_K(O, x, 0.5), x), big, 1.0 - s); \
        return GR__VM_SEL(O, O##_LE(x, -1.0), 2.0 - big, y); \
    } \
    /* 2^x for |x| <= 1020: x = k + r exactly (|r| <= 1/2), 2^r = e^(r ln 2) */ \
    static GR__VM_FNI T gr__vm_exp2_core##S(T x) { \
        GR__VM_NOFMA \
        T k = (x + GR__VM_SHIFT) - GR__VM_SHIFT, kd, q = gr__vm_expr##S((x - k) * GR__VM_LN2, &kd); \
        return (1.0 + q) * gr__vm_pow2##S(k + kd); \
    } \
    /* log2 u + kadd for a normal u > 0: u = 2^k m (m in [sqrt(1/2), sqrt 2)) as in gr__vm_log_core, \
       ln m = f - hfsq + s (hfsq + R) as hi (21 bits) + lo, times 1/ln 2 in two parts, k added last */ \
    static GR__VM_FNI T gr__vm_log2_core##S(T u, T kadd) { \
        GR__VM_NOFMA \
        U w = O##_TOU(u) - GR__VM_SQRT1_2_BITS + ((uint64_t)1024 << 52), e = w >> 52; \
        T m = O##_TOD(O##_TOU(u) - (e << 52) + ((uint64_t)1024 << 52)); \
        T k = (O##_TOD(e + GR__VM_SHIFT_BITS) - GR__VM_SHIFT) - 1024.0 + kadd; \
        T f = m - 1.0, s = f / (2.0 + f), z = s * s, hfsq = 0.5 * f * f, R = gr__vm_logr##S(z), hi, lo, vh, vl, y; \
        hi = O##_TOD(O##_TOU(f - hfsq) & GR__VM_HI21_BITS); \
        lo = ((f - hi) - hfsq) + s * (hfsq + R); \
        vh = hi * GR__VM_IVLN2HI; \
        vl = (lo + hi) * GR__VM_IVLN2LO + lo * GR__VM_IVLN2HI; \
        y = k + vh; \
        return (vl + ((k - y) + vh)) + y; \
    } \
    static GR__VM_FNI T gr__vm_log2_main##S(T x) { GR__VM_NOFMA return gr__vm_log2_core##S(x, 0.0 * x); } \
    /* sinh x for |x| <= 700: with t = e^|x| - 1, sinh|x| = (t + t / (t + 1)) / 2; x's sign */ \
    static GR__VM_FNI T gr__vm_sinh_core##S(T x) { \
        GR__VM_NOFMA \
        T t = gr__vm_expm1_core##S(GR__VM_ABS(O, x)); \
        return O##_TOD(O##_TOU(0.5 * (t + t / (t + 1.0))) | GR__VM_SIGN(O, x)); \
    } \
    /* cosh x for |x| <= 708: with e = e^|x|, (e + 1/e) / 2 */ \
    static GR__VM_FNI T gr__vm_cosh_core##S(T x) { \
        GR__VM_NOFMA \
        T e = gr__vm_exp_core##S(GR__VM_ABS(O, x)); \
        return 0.5 * e + 0.5 / e; \
    } \
    /* tan x for |x| <= 2^20 pi/2: sin x / cos x from one reduction */ \
    static GR__VM_FNI T gr__vm_tan_core##S(T x) { \
        GR__VM_NOFMA \
        T sn, cs; \
        gr__vm_sincos_core##S(x, &sn, &cs); \
        return sn / cs; \
    } \
    /* atan x for x not NaN: a = min(|x|, 2^60) reduced to w = (a - c) / (1 + c a) (exact numerators) \
       around c = 0, 1/2, 1, 3/2, inf (w = -1/a) by masks, |w| <= 7/16; atan a = atan c + atan w; x's sign */ \
    static GR__VM_FNI T gr__vm_arctan_core##S(T x) { \
        GR__VM_NOFMA \
        T a = GR__VM_MIN(O, GR__VM_ABS(O, x), 1152921504606846976.0), p1, p0, q1, q0, h, l, w, z, q; \
        p1 = GR__VM_K(O, a, 0.0); p0 = GR__VM_K(O, a, 1.0); q1 = GR__VM_K(O, a, 1.0); q0 = GR__VM_K(O, a, 0.0); \
        h = GR__VM_K(O, a, GR__VM_PIO2); l = GR__VM_K(O, a, GR__VM_PIO2_LO); \
        GR__VM_ATAN_AT(O, O##_LE(a, 2.4375), 2.0, 3.0, 3.0, 2.0, GR__VM_ATAN_3HALF, GR__VM_ATAN_3HALF_LO); \
        GR__VM_ATAN_AT(O, O##_LE(a, 1.1875), 1.0, 1.0, 1.0, 1.0, GR__VM_PIO4, GR__VM_PIO4_LO); \
        GR__VM_ATAN_AT(O, O##_LE(a, 0.6875), 2.0, 1.0, 1.0, 2.0, GR__VM_ATAN_HALF, GR__VM_ATAN_HALF_LO); \
        GR__VM_ATAN_AT(O, O##_LE(a, 0.4375), 1.0, 0.0, 0.0, 1.0, 0.0, 0.0); \
        w = (a * p1 - p0) / (a * q1 + q0); z = w * w; \
        q = GR__VM_K(O, a, gr__vm_atan_q[11]); \
        GR__VM_H4(q, z, gr__vm_atan_q, 10); GR__VM_H4(q, z, gr__vm_atan_q, 6); GR__VM_H2(q, z, gr__vm_atan_q, 2); GR__VM_H1(q, z, gr__vm_atan_q, 0); \
        return O##_TOD(O##_TOU(h - (((w * z) * q - l) - w)) | GR__VM_SIGN(O, x)); \
    } \
    /* asin x for |x| <= 1: atan(a / sqrt(1 - a^2)), a = |x|, 1 - a^2 as (1 - a)(1 + a) above 1/2; x's sign */ \
    static GR__VM_FNI T gr__vm_arcsin_core##S(T x) { \
        GR__VM_NOFMA \
        T a = GR__VM_ABS(O, x), d = GR__VM_SEL(O, O##_LE(a, 0.5), 1.0 - a * a, (1.0 - a) * (1.0 + a)); \
        T r = a / O##_SQRT(d); \
        return O##_TOD(O##_TOU(gr__vm_arctan_core##S(r)) | GR__VM_SIGN(O, x)); \
    } \
    /* acos x for |x| <= 1: 2 atan(sqrt((1 - x) / (1 + x))) */ \
    static GR__VM_FNI T gr__vm_arccos_core##S(T x) { \
        GR__VM_NOFMA \
        return 2.0 * gr__vm_arctan_core##S(O##_SQRT((1.0 - x) / (1.0 + x))); \
    } \
    /* atanh x for |x| < 1: log1p(2a / (1 - a)) / 2, a = |x|, the argument as 2a + 2a a / (1 - a) below 1/2 */ \
    static GR__VM_FNI T gr__vm_arctanh_core##S(T x) { \
        GR__VM_NOFMA \
        T a = GR__VM_ABS(O, x), t = 2.0 * a, d = 1.0 - a; \
        T u = GR__VM_SEL(O, O##_LE(a, 0.5), t + t * a / d, t / d); \
        return O##_TOD(O##_TOU(0.5 * gr__vm_log1p_core##S(u)) | GR__VM_SIGN(O, x)); \
    } \
    /* ln w for w = a + sqrt(a^2 +- 1) = 1 + v = 2a + 2hd (a >= 1), in one log: where m (a < 2), log1p v \
       (1 + v = u + e exactly, Fast2Sum; ln u + e r, r = 1/w up to a few ulp); else ln 2 + ln(u + e) with \
       u + e = a + hd exactly and 1 / (u + e) = r2 (up to a few ulp: the correction's error far below an ulp) */ \
    static GR__VM_FNI T gr__vm_ln_pm##S(U m, T v, T r, T a, T hd, T r2) { \
        GR__VM_NOFMA \
        T u2 = a + hd, e2 = (a - u2) + hd, u = u2, c = e2 * r2, kadd = GR__VM_K(O, a, 1.0); \
        if (!O##_NONE(m)) {                                     /* (most vectors have no lane below 2, or only such) */ \
            T u1 = 1.0 + v, e1 = GR__VM_SEL(O, O##_LE(v, 1.0), v - (u1 - 1.0), 1.0 - (u1 - v)); \
            u = GR__VM_SEL(O, m, u1, u2); c = GR__VM_SEL(O, m, e1 * r, c); kadd = GR__VM_SEL(O, m, GR__VM_K(O, a, 0.0), kadd); \
        } \
        return gr__vm_log_core##S(u, c, kadd); \
    } \
    /* asinh x for |x| finite, a = |x|, h = sqrt(1 + a^2): ln(a + h), a + h = 2a + d with d = 1 / (a + h) (a^2 \
       overflowing: d = 0, ln 2a, d/2 being far below half an ulp of a); below 2, v = a + a^2 q with q = \
       1 / (1 + h) (one division: q or d by lane) and 1 / (a + h) = h - a; x's sign */ \
    static GR__VM_FNI T gr__vm_arcsinh_core##S(T x) { \
        GR__VM_NOFMA \
        T a = GR__VM_ABS(O, x), c = a * a, h = O##_SQRT(1.0 + c), q; \
        U m = ~O##_LE(GR__VM_K(O, a, 2.0), a); \
        q = 1.0 / GR__VM_SEL(O, m, 1.0 + h, a + h); \
        return O##_TOD(O##_TOU(gr__vm_ln_pm##S(m, a + c * q, h - a, a, 0.5 * q, q + q)) | GR__VM_SIGN(O, x)); \
    } \
    /* acosh x for x in [1, DBL_MAX], t = x - 1, g = sqrt(2t + t^2) = sqrt(x^2 - 1): ln(x + g), x + g = \
       2x - d with d = 1 / (x + g) (t^2 overflowing: d = 0, as in asinh); below 2, v = t + g */ \
    static GR__VM_FNI T gr__vm_arccosh_core##S(T x) { \
        GR__VM_NOFMA \
        T t = x - 1.0, g = O##_SQRT(2.0 * t + t * t), d = 1.0 / (x + g); \
        return gr__vm_ln_pm##S(~O##_LE(GR__VM_K(O, x, 2.0), x), t + g, d, x, -0.5 * d, d + d); \
    } \
    /* a b = hi + *lo exactly (Dekker's product, no FMA), |a|, |b| < 2^970 */ \
    static GR__VM_FNI T gr__vm_two_prod##S(T a, T b, T *lo) { \
        GR__VM_NOFMA \
        T ca = a * GR__VM_SPLIT, ah = ca - (ca - a), al = a - ah; \
        T cb = b * GR__VM_SPLIT, bh = cb - (cb - b), bl = b - bh, p = a * b; \
        *lo = (((ah * bh - p) + ah * bl) + al * bh) + al * bl; \
        return p; \
    } \
    /* atan2(y, x) for x, y finite, not both 0: t = min / max of |x|, |y|, atan t, then pi/2 - it where \
       |y| > |x|, pi - that where x < 0, y's sign; *ok all ones */ \
    static GR__VM_FNI T gr__vm_arctan2_core##S(T y, T x, U *ok) { \
        GR__VM_NOFMA \
        T ax = GR__VM_ABS(O, x), ay = GR__VM_ABS(O, y), r; \
        U sw = ~O##_LE(ay, ax), neg = ~O##_LE(GR__VM_K(O, x, 0.0), x); \
        r = gr__vm_arctan_core##S(GR__VM_SEL(O, sw, ax, ay) / GR__VM_SEL(O, sw, ay, ax)); \
        r = GR__VM_SEL(O, sw, (GR__VM_PIO2 - r) + GR__VM_PIO2_LO, r); \
        r = GR__VM_SEL(O, neg, (GR__VM_PI - r) + GR__VM_PI_LO, r); \
        *ok = O##_EQ(r, r); \
        return O##_TOD(O##_TOU(r) | GR__VM_SIGN(O, y)); \
    } \
    /* cbrt x for a normal x: |x| = 2^e m, e = 3k + r (r in -1, 0, 1), u = 2^r m in [1/2, 4); two Newton \
       steps from the fit, a third with the residual y^3 - u exact; 2^k y with x's sign */ \
    static GR__VM_FNI T gr__vm_cbrt_core##S(T x) { \
        GR__VM_NOFMA \
        U ax = O##_TOU(x) & ~((uint64_t)1 << 63), e = ax >> 52; \
        T m = O##_TOD((ax & ~((uint64_t)0xFFF << 52)) | ((uint64_t)1023 << 52)); \
        T ed = (O##_TOD(e + GR__VM_SHIFT_BITS) - GR__VM_SHIFT) - 1023.0; \
        T kd = (ed * (1.0 / 3.0) + GR__VM_SHIFT) - GR__VM_SHIFT, u = m * gr__vm_pow2##S(ed - 3.0 * kd), y, hl, h, cl, c; \
        y = GR__VM_K(O, x, gr__vm_cbrt_p[4]); \
        GR__VM_H4(y, u, gr__vm_cbrt_p, 3); \
        y = y - (y * y * y - u) / (3.0 * (y * y)); \
        y = y - (y * y * y - u) / (3.0 * (y * y)); \
        h = gr__vm_two_prod##S(y, y, &hl); \
        c = gr__vm_two_prod##S(h, y, &cl); \
        y = y - ((c - u) + (cl + hl * y)) / (3.0 * (y * y)); \
        return O##_TOD(O##_TOU(y * gr__vm_pow2##S(kd)) | (O##_TOU(x) & ((uint64_t)1 << 63))); \
    } \
    /* ln x = hi + *lo for a normal x > 0 (relative error below 2^-62): x = 2^k z, z in [OFF, 2 OFF), c \
       and 1/c, ln c = lch + lcl from gr__vm_logt, r = z/c - 1 = rh + rl exactly (|r| <= 2^-8; rh = zh/c - 1 \
       and rl = (z - zh)/c, zh: z's leading 21 bits, then TwoSum into r + rr); ln x = (k ln2hi + lch) + r - \
       r^2/2 (two Fast2Sums) + the rest: k ln2lo + lcl, rr (1 - r), r^3/3 - ... - r^8/8 (Taylor; r^9/9 < 2^-74) */ \
    static GR__VM_FNI T gr__vm_log_dd##S(T x, T *lo) { \
        GR__VM_NOFMA \
        U w = O##_TOU(x) - GR__VM_LOGT_OFF + ((uint64_t)1024 << 52), e = w >> 52, i = ((w >> 45) & 127) * 3; \
        T z = O##_TOD(O##_TOU(x) - (e << 52) + ((uint64_t)1024 << 52)); \
        T k = (O##_TOD(e + GR__VM_SHIFT_BITS) - GR__VM_SHIFT) - 1024.0; \
        T ic = O##_LD(gr__vm_logt, i), lch = O##_LD(gr__vm_logt + 1, i), lcl = O##_LD(gr__vm_logt + 2, i); \
        T zh = O##_TOD((O##_TOU(z) + ((uint64_t)1 << 31)) & GR__VM_HI21_BITS), rh = zh * ic - 1.0, rl = (z - zh) * ic; \
        T r = rh + rl, rb = r - rh, rr = (rh - (r - rb)) + (rl - rb), r2 = r * r; \
        T t1 = k * GR__VM_LN2HI42 + lch, t2 = t1 + r, l1 = (t1 - t2) + r, ar2 = (-0.5 * r) * r, hi = t2 + ar2, l2 = (t2 - hi) + ar2, p, l; \
        p = (r2 * r) * ((1.0 / 3.0 - r * 0.25) + r2 * ((0.2 - r * (1.0 / 6.0)) + r2 * (1.0 / 7.0 - r * 0.125))); \
        l = ((l1 + l2) + (k * GR__VM_LN2LO42 + lcl)) + (rr * (1.0 - r) + p); \
        r = hi + l; *lo = l - (r - hi); \
        return r; \
    } \
    /* gr__vm_expr's e^r - 1 with its polynomial by Estrin's scheme (pow: a shorter chain, other bits) */ \
    static GR__VM_FNI T gr__vm_expr_e##S(T x, T *kd) { \
        GR__VM_NOFMA \
        T k = (x * GR__VM_INVLN2 + GR__VM_SHIFT) - GR__VM_SHIFT; \
        T r = (x - k * GR__VM_LN2HI) - k * GR__VM_LN2LO, r2 = r * r, r4 = r2 * r2, p; \
        p = ((0.5 + r * (1.0 / 6.0)) + r2 * (1.0 / 24.0 + r * (1.0 / 120.0))) + \
            r4 * (((1.0 / 720.0 + r * (1.0 / 5040.0)) + r2 * (1.0 / 40320.0 + r * (1.0 / 362880.0))) + \
                  r4 * ((1.0 / 3628800.0 + r * (1.0 / 39916800.0)) + r2 * (1.0 / 479001600.0 + r * (1.0 / 6227020800.0)))); \
        *kd = k; \
        return r + r2 * p; \
    } \
    /* x^y = e^(y ln x) for a normal x > 0 and |y| <= 1e18, y ln x = ph + pl in two parts, e^ph = \
       2^k (1 + q), e^pl = 1 + pl; *ok all ones where |ph| <= 708 (a normal result) */ \
    static GR__VM_FNI T gr__vm_pow_core##S(T x, T y, U *ok) { \
        GR__VM_NOFMA \
        T ll, lh = gr__vm_log_dd##S(x, &ll), pl, ph = gr__vm_two_prod##S(y, lh, &pl), kd, q; \
        pl = pl + y * ll; \
        *ok = O##_LE(GR__VM_ABS(O, ph), 708.0); \
        ph = GR__VM_SEL(O, *ok, ph, GR__VM_K(O, ph, 0.0)); \
        q = gr__vm_expr_e##S(ph, &kd); \
        return (1.0 + (q + (pl + q * pl))) * gr__vm_pow2##S(kd); \
    }
GR__VM_CORES2(_s, double, uint64_t, GR__VMS)
#define GR__VM_IN_erf(x) ((x) == (x))
#define GR__VM_IN_erfc(x) ((x) <= 26.5)
#define GR__VM_IN_exp2(x) (((x) <= 1020.0) & ((x) >= -1020.0))
#define GR__VM_IN_log2(x) GR__VM_IN_log(x)
#define GR__VM_IN_sinh(x) (((x) <= 700.0) & ((x) >= -700.0))
#define GR__VM_IN_cosh(x) GR__VM_IN_exp(x)
#define GR__VM_IN_tan(x) GR__VM_IN_sin(x)
#define GR__VM_IN_arctan(x) ((x) == (x))
#define GR__VM_IN_arcsin(x) ((x) <= 1.0 && (x) >= -1.0)
#define GR__VM_IN_arccos(x) GR__VM_IN_arcsin(x)
#define GR__VM_IN_arctanh(x) ((x) < 1.0 && (x) > -1.0)
#define GR__VM_IN_arcsinh(x) ((x) <= 1.7976931348623157e308 && (x) >= -1.7976931348623157e308)
#define GR__VM_IN_arccosh(x) ((x) >= 1.0 && (x) <= 1.7976931348623157e308)
#define GR__VM_IN_cbrt(x) ((x) >= 2.2250738585072014e-308 ? (x) <= 1.7976931348623157e308 : (x) <= -2.2250738585072014e-308 && (x) >= -1.7976931348623157e308)
#define GR__VM_IN_arctan2(y, x) ((x) - (x) == 0 && (y) - (y) == 0 && ((x) != 0 || (y) != 0))
#define GR__VM_IN_pow(x, y) ((x) >= 2.2250738585072014e-308 && (x) <= 1.7976931348623157e308 && (y) <= 1e18 && (y) >= -1e18)
/* GR_KERNEL gr__m_erf */
static GR__VM_FN2 double gr__m_erf(double x) { return GR__VM_IN_erf(x) ? gr__vm_erf_core_s(x) : x + x; }
/* GR_KERNEL gr__m_erff */
static GR__VM_FN2 float gr__m_erff(float x) { return (float)gr__m_erf((double)x); }
/* GR_KERNEL gr__m_erfc */
/* erfc x beyond 26.5: 2^k m with one rounding into the subnormals (0 beyond 28) */
static GR__VM_FN2 double gr__m_erfc(double x) {
    GR__VM_NOFMA
    double kd, m;
    if (GR__VM_IN_erfc(x)) return gr__vm_erfc_core_s(x);
    if (x != x) return x + x;
    if (x > 28.0) return 0.0;
    m = gr__vm_erfc_parts_s(x, &kd);
    return (m * gr__vm_pow2_s(kd + 1000.0)) * gr__vm_pow2_s(-1000.0);
}
/* GR_KERNEL gr__m_erfcf */
static GR__VM_FN2 float gr__m_erfcf(float x) { return (float)gr__m_erfc((double)x); }
/* GR_KERNEL gr__m_exp2 */
/* 2^x beyond 1020: 2^k applied in two steps (one rounding into the subnormals) */
static GR__VM_FN2 double gr__m_exp2(double x) {
    GR__VM_NOFMA
    double k, kd, q, k1;
    if (GR__VM_IN_exp2(x)) return gr__vm_exp2_core_s(x);
    if (x != x) return x + x;
    if (x >= 1024.0) return x * 1e308;
    if (x < -1080.0) return 0.0;
    k = (x + GR__VM_SHIFT) - GR__VM_SHIFT;
    q = gr__vm_expr_s((x - k) * GR__VM_LN2, &kd);
    k = k + kd;
    k1 = (k * 0.5 + GR__VM_SHIFT) - GR__VM_SHIFT;
    return ((1.0 + q) * gr__vm_pow2_s(k1)) * gr__vm_pow2_s(k - k1);
}
/* GR_KERNEL gr__m_exp2f */
static GR__VM_FN2 float gr__m_exp2f(float x) { return (float)gr__m_exp2((double)x); }
/* GR_KERNEL gr__m_log2 */
/* log2 x: subnormals scaled by 2^54 first; 0 -> -inf, x < 0 -> NaN */
static GR__VM_FN2 double gr__m_log2(double x) {
    GR__VM_NOFMA
    if (GR__VM_IN_log2(x)) return gr__vm_log2_core_s(x, 0.0);
    if (x != x || x > 1.0) return x + x;
    if (x == 0) return -1.0 / (x * x);
    if (x < 0) return (x - x) / (x - x);
    return gr__vm_log2_core_s(x * 18014398509481984.0, -54.0);
}
/* GR_KERNEL gr__m_log2f */
static GR__VM_FN2 float gr__m_log2f(float x) { return (float)gr__m_log2((double)x); }
/* GR_KERNEL gr__m_sinh */
/* |x| beyond 700: e^|x| / 2 = 2^(k-3) (1 + q) 4 (overflows to inf where it should) */
static GR__VM_FN2 double gr__m_sinh(double x) {
    GR__VM_NOFMA
    double a = x < 0 ? -x : x, kd, q, y;
    if (GR__VM_IN_sinh(x)) return gr__vm_sinh_core_s(x);
    if (x != x || a > 711.0) return x * 1e308;
    q = gr__vm_expr_s(a, &kd);
    y = ((1.0 + q) * gr__vm_pow2_s(kd - 3.0)) * 4.0;
    return x < 0 ? -y : y;
}
/* GR_KERNEL gr__m_sinhf */
static GR__VM_FN2 float gr__m_sinhf(float x) { return (float)gr__m_sinh((double)x); }
/* GR_KERNEL gr__m_cosh */
static GR__VM_FN2 double gr__m_cosh(double x) {
    GR__VM_NOFMA
    double a = x < 0 ? -x : x, kd, q;
    if (GR__VM_IN_cosh(x)) return gr__vm_cosh_core_s(x);
    if (x != x || a > 711.0) return (x * x) * 1e308;
    q = gr__vm_expr_s(a, &kd);
    return ((1.0 + q) * gr__vm_pow2_s(kd - 3.0)) * 4.0;
}
/* GR_KERNEL gr__m_coshf */
static GR__VM_FN2 float gr__m_coshf(float x) { return (float)gr__m_cosh((double)x); }
/* GR_KERNEL gr__m_tan */
/* |x| beyond 2^20 pi/2 (and infinities): the C library's tan */
static GR__VM_FN2 double gr__m_tan(double x) { return GR__VM_IN_tan(x) ? gr__vm_tan_core_s(x) : tan(x); }
/* GR_KERNEL gr__m_tanf */
static GR__VM_FN2 float gr__m_tanf(float x) { return (float)gr__m_tan((double)x); }
/* GR_KERNEL gr__m_arctan */
static GR__VM_FN2 double gr__m_arctan(double x) { return GR__VM_IN_arctan(x) ? gr__vm_arctan_core_s(x) : x + x; }
/* GR_KERNEL gr__m_arctanf */
static GR__VM_FN2 float gr__m_arctanf(float x) { return (float)gr__m_arctan((double)x); }
/* outside their main ranges (NaN, |x| > 1, infinities, x < 1 for acosh) the C library's */
/* GR_KERNEL gr__m_arcsin */
static GR__VM_FN2 double gr__m_arcsin(double x) { return GR__VM_IN_arcsin(x) ? gr__vm_arcsin_core_s(x) : asin(x); }
/* GR_KERNEL gr__m_arcsinf */
static GR__VM_FN2 float gr__m_arcsinf(float x) { return (float)gr__m_arcsin((double)x); }
/* GR_KERNEL gr__m_arccos */
static GR__VM_FN2 double gr__m_arccos(double x) { return GR__VM_IN_arccos(x) ? gr__vm_arccos_core_s(x) : acos(x); }
/* GR_KERNEL gr__m_arccosf */
static GR__VM_FN2 float gr__m_arccosf(float x) { return (float)gr__m_arccos((double)x); }
/* GR_KERNEL gr__m_arctanh */
static GR__VM_FN2 double gr__m_arctanh(double x) { return GR__VM_IN_arctanh(x) ? gr__vm_arctanh_core_s(x) : atanh(x); }
/* GR_KERNEL gr__m_arctanhf */
static GR__VM_FN2 float gr__m_arctanhf(float x) { return (float)gr__m_arctanh((double)x); }
/* GR_KERNEL gr__m_arcsinh */
static GR__VM_FN2 double gr__m_arcsinh(double x) { return GR__VM_IN_arcsinh(x) ? gr__vm_arcsinh_core_s(x) : asinh(x); }
/* GR_KERNEL gr__m_arcsinhf */
static GR__VM_FN2 float gr__m_arcsinhf(float x) { return (float)gr__m_arcsinh((double)x); }
/* GR_KERNEL gr__m_arccosh */
static GR__VM_FN2 double gr__m_arccosh(double x) { return GR__VM_IN_arccosh(x) ? gr__vm_arccosh_core_s(x) : acosh(x); }
/* GR_KERNEL gr__m_arccoshf */
static GR__VM_FN2 float gr__m_arccoshf(float x) { return (float)gr__m_arccosh((double)x); }
/* GR_KERNEL gr__m_cbrt */
/* cbrt x: subnormals scaled by 2^54 first (the root by 2^-18); 0, inf, NaN: x */
static GR__VM_FN2 double gr__m_cbrt(double x) {
    GR__VM_NOFMA
    if (GR__VM_IN_cbrt(x)) return gr__vm_cbrt_core_s(x);
    if (x != x || x == 0 || x - x != 0) return x + x;
    return gr__vm_cbrt_core_s(x * 18014398509481984.0) * 3.814697265625e-06;
}
/* GR_KERNEL gr__m_cbrtf */
static GR__VM_FN2 float gr__m_cbrtf(float x) { return (float)gr__m_cbrt((double)x); }
/* GR_KERNEL gr__m_arctan2 */
/* atan2(y, x): infinities, NaN, both zero: the C library's */
static GR__VM_FN2 double gr__m_arctan2(double y, double x) {
    uint64_t ok;
    return GR__VM_IN_arctan2(y, x) ? gr__vm_arctan2_core_s(y, x, &ok) : atan2(y, x);
}
/* GR_KERNEL gr__m_arctan2f */
static GR__VM_FN2 float gr__m_arctan2f(float y, float x) { return (float)gr__m_arctan2((double)y, (double)x); }
/* GR_KERNEL gr__m_pow */
/* x^y: outside the main range (x <= 0, subnormal, infinite or NaN; |y| > 1e18 or NaN; a result
   beyond the normal range) the C library's pow */
static GR__VM_FN2 double gr__m_pow(double x, double y) {
    uint64_t ok;
    double r;
    if (GR__VM_IN_pow(x, y)) {
        r = gr__vm_pow_core_s(x, y, &ok);
        if (ok) return r;
    }
    return pow(x, y);
}
/* GR_KERNEL gr__m_powf */
static GR__VM_FN2 float gr__m_powf(float x, float y) { return (float)gr__m_pow((double)x, (double)y); }
/* GR_KERNEL_END */
#else
/* GR_KERNEL gr__m_erf */
static double gr__m_erf(double x) { return erf(x); }
/* GR_KERNEL gr__m_erff */
static float gr__m_erff(float x) { return erff(x); }
/* GR_KERNEL gr__m_erfc */
static double gr__m_erfc(double x) { return erfc(x); }
/* GR_KERNEL gr__m_erfcf */
static float gr__m_erfcf(float x) { return erfcf(x); }
/* GR_KERNEL gr__m_exp2 */
static double gr__m_exp2(double x) { return exp2(x); }
/* GR_KERNEL gr__m_exp2f */
static float gr__m_exp2f(float x) { return exp2f(x); }
/* GR_KERNEL gr__m_log2 */
static double gr__m_log2(double x) { return log2(x); }
/* GR_KERNEL gr__m_log2f */
static float gr__m_log2f(float x) { return log2f(x); }
/* GR_KERNEL gr__m_sinh */
static double gr__m_sinh(double x) { return sinh(x); }
/* GR_KERNEL gr__m_sinhf */
static float gr__m_sinhf(float x) { return sinhf(x); }
/* GR_KERNEL gr__m_cosh */
static double gr__m_cosh(double x) { return cosh(x); }
/* GR_KERNEL gr__m_coshf */
static float gr__m_coshf(float x) { return coshf(x); }
/* GR_KERNEL gr__m_tan */
static double gr__m_tan(double x) { return tan(x); }
/* GR_KERNEL gr__m_tanf */
static float gr__m_tanf(float x) { return tanf(x); }
/* GR_KERNEL gr__m_arctan */
static double gr__m_arctan(double x) { return atan(x); }
/* GR_KERNEL gr__m_arctanf */
static float gr__m_arctanf(float x) { return atanf(x); }
/* GR_KERNEL gr__m_arcsin */
static double gr__m_arcsin(double x) { return asin(x); }
/* GR_KERNEL gr__m_arcsinf */
static float gr__m_arcsinf(float x) { return asinf(x); }
/* GR_KERNEL gr__m_arccos */
static double gr__m_arccos(double x) { return acos(x); }
/* GR_KERNEL gr__m_arccosf */
static float gr__m_arccosf(float x) { return acosf(x); }
/* GR_KERNEL gr__m_arctanh */
static double gr__m_arctanh(double x) { return atanh(x); }
/* GR_KERNEL gr__m_arctanhf */
static float gr__m_arctanhf(float x) { return atanhf(x); }
/* GR_KERNEL gr__m_arcsinh */
static double gr__m_arcsinh(double x) { return asinh(x); }
/* GR_KERNEL gr__m_arcsinhf */
static float gr__m_arcsinhf(float x) { return asinhf(x); }
/* GR_KERNEL gr__m_arccosh */
static double gr__m_arccosh(double x) { return acosh(x); }
/* GR_KERNEL gr__m_arccoshf */
static float gr__m_arccoshf(float x) { return acoshf(x); }
/* GR_KERNEL gr__m_cbrt */
static double gr__m_cbrt(double x) { return cbrt(x); }
/* GR_KERNEL gr__m_cbrtf */
static float gr__m_cbrtf(float x) { return cbrtf(x); }
/* GR_KERNEL gr__m_arctan2 */
static double gr__m_arctan2(double y, double x) { return atan2(y, x); }
/* GR_KERNEL gr__m_arctan2f */
static float gr__m_arctan2f(float y, float x) { return atan2f(y, x); }
/* GR_KERNEL gr__m_pow */
static double gr__m_pow(double x, double y) { return pow(x, y); }
/* GR_KERNEL gr__m_powf */
static float gr__m_powf(float x, float y) { return powf(x, y); }
/* GR_KERNEL_END */
#endif

/* ---- the kernels -------------------------------------------------------------------------------
   gr__vm_<f>_map(n, o, a): o[i] = f(a[i]) for i < n (o may be a), a vector of lanes at a time where
   the whole vector is in f's main range, else each lane by the scalar function. The table's
   kernels of these rows (gr__vmk_<f>_f64 / _f32, ops/elemwise.c) run it; float32 goes through
   chunks of doubles. The maps are GR_KERNEL text too: gr_fn_emit_c's fused groups call them block
   by block (src/emit.c); an emitted file takes the vector path under GCC or Clang, else the scalar
   one (the same bits). A region names what its macro's pasted names need (e.g. gr__m_exp), so
   that the emitter writes it first. */
#ifndef GR_NO_VECTOR_EXTENSIONS
/* GR_KERNEL GR__VM_MAP */
/* (GR__VM_FN: the cores, scalar and over a vector; gr__m_<f> for the lanes outside the main range) */
#if defined(__GNUC__) || defined(__clang__)
#if defined(__AVX512F__)
#define GR__VM_BYTES 64
#elif defined(__AVX__)
#define GR__VM_BYTES 32
#else
#define GR__VM_BYTES 16
#endif
typedef double gr__vmd __attribute__((vector_size(GR__VM_BYTES)));
typedef uint64_t gr__vmu __attribute__((vector_size(GR__VM_BYTES)));
enum { GR__VM_L = GR__VM_BYTES / 8 };
#define GR__VMV_TOU(x) ((gr__vmu)(x))
#define GR__VMV_TOD(u) ((gr__vmd)(u))
#define GR__VMV_LE(a, b) ((gr__vmu)((a) <= (b)))
#define GR__VMV_EQ(a, b) ((gr__vmu)((a) == (b)))
#define GR__VMV_ALL(m) gr__vm_all_v(m)
#define GR__VMV_NONE(m) gr__vm_none_v(m)
static GR__VM_FNI int gr__vm_all_v(gr__vmu m) { int l, r = 1; for (l = 0; l < GR__VM_L; l++) r &= m[l] != 0; return r; }
static GR__VM_FNI int gr__vm_none_v(gr__vmu m) { int l, r = 1; for (l = 0; l < GR__VM_L; l++) r &= m[l] == 0; return r; }
GR__VM_CORES(_v, gr__vmd, gr__vmu, GR__VMV)
#define gr__vm_exp_main_v gr__vm_exp_core_v
#define gr__vm_expm1_main_v gr__vm_expm1_core_v
#define gr__vm_tanh_main_v gr__vm_tanh_core_v
#define gr__vm_log1p_main_v gr__vm_log1p_core_v
#define gr__vm_sigmoid_main_v gr__vm_sigmoid_core_v
#define gr__vm_softplus_main_v gr__vm_softplus_core_v
static GR__VM_FN gr__vmd gr__vm_sin_main_v(gr__vmd x) { gr__vmd s, c; gr__vm_sincos_core_v(x, &s, &c); return s; }
static GR__VM_FN gr__vmd gr__vm_cos_main_v(gr__vmd x) { gr__vmd s, c; gr__vm_sincos_core_v(x, &s, &c); return c; }
/* x86-64 built without AVX (plain -O2: 16-byte SSE2 vectors): the maps also have a clone over 32-byte
   vectors built for AVX2 (GCC's and Clang's target attribute; no FMA, so the same bits), taken when
   the CPU running it has AVX2 (__builtin_cpu_supports) */
#if GR__VM_BYTES == 16 && defined(__x86_64__)
#define GR__VM_W 1
typedef double gr__vmwd __attribute__((vector_size(32)));
typedef uint64_t gr__vmwu __attribute__((vector_size(32)));
#define GR__VM_AVX2 __attribute__((target("avx2")))
#undef GR__VM_FNI
#define GR__VM_FNI GR__VM_FN GR__VM_INL GR__VM_AVX2
#define GR__VMW_TOU(x) ((gr__vmwu)(x))
#define GR__VMW_TOD(u) ((gr__vmwd)(u))
#define GR__VMW_LE(a, b) ((gr__vmwu)((a) <= (b)))
#define GR__VMW_EQ(a, b) ((gr__vmwu)((a) == (b)))
#define GR__VMW_ALL(m) gr__vm_all_w(m)
#define GR__VMW_NONE(m) gr__vm_none_w(m)
static GR__VM_FNI int gr__vm_all_w(gr__vmwu m) { int l, r = 1; for (l = 0; l < 4; l++) r &= m[l] != 0; return r; }
static GR__VM_FNI int gr__vm_none_w(gr__vmwu m) { int l, r = 1; for (l = 0; l < 4; l++) r &= m[l] == 0; return r; }
GR__VM_CORES(_w, gr__vmwd, gr__vmwu, GR__VMW)
#define gr__vm_exp_main_w gr__vm_exp_core_w
#define gr__vm_expm1_main_w gr__vm_expm1_core_w
#define gr__vm_tanh_main_w gr__vm_tanh_core_w
#define gr__vm_log1p_main_w gr__vm_log1p_core_w
#define gr__vm_sigmoid_main_w gr__vm_sigmoid_core_w
#define gr__vm_softplus_main_w gr__vm_softplus_core_w
static GR__VM_FNI gr__vmwd gr__vm_sin_main_w(gr__vmwd x) { gr__vmwd s, c; gr__vm_sincos_core_w(x, &s, &c); return s; }
static GR__VM_FNI gr__vmwd gr__vm_cos_main_w(gr__vmwd x) { gr__vmwd s, c; gr__vm_sincos_core_w(x, &s, &c); return c; }
#undef GR__VM_FNI
#define GR__VM_FNI GR__VM_FN GR__VM_INL
static GR__UNUSED int gr__vm_avx2(void) { return __builtin_cpu_supports("avx2"); }
#else
#define GR__VM_W 0
#endif
/* the lanes of x (L of them) all in f's main range */
#define GR__VM_ALL_IN(f, x, in, L) do { int l_; (in) = 1; for (l_ = 0; l_ < (L); l_++) (in) &= GR__VM_IN_##f((x)[l_]); } while (0)
/* a compiler barrier: gr_fn_emit_c's float32 blocks store a map's doubles as floats and may read them
   back as doubles; GCC 12 -O3 with AVX-512 was seen to drop that rounding (keeping the double) */
#define GR__VM_FENCE() __asm__ __volatile__("" ::: "memory")
/* GR__VM_G vectors at a time (independent chains that interleave: one chain of 16-byte vectors
   leaves most of the core idle waiting on latencies), then one, then the tail; a group holding a
   lane outside the main range goes lane by lane */
#if GR__VM_SMALL
#define GR__VM_G 1
#define GR__VM_GROUP(F, f) F(0, f)
#elif GR__VM_BYTES == 16
#define GR__VM_G 4
#define GR__VM_GROUP(F, f) F(0, f) F(1, f) F(2, f) F(3, f)
#else
#define GR__VM_G 2
#define GR__VM_GROUP(F, f) F(0, f) F(1, f)
#endif
#define GR__VM_GROUP2(F, f) F(0, f) F(1, f)
#define GR__VM_LD1(j, f) memcpy(&x[j], a + i + (j) * vl_, sizeof x[j]); GR__VM_ALL_IN(f, x[j], in1, vl_); in &= in1;
#define GR__VM_ST1(j, f) memcpy(o + i + (j) * vl_, &x[j], sizeof x[j]);
/* the map over vectors VD of L_ lanes with the cores of suffix S, G vectors at a time (GROUP) */
#define GR__VM_MAPX(fn, f, name, attr, VD, L_, S, G, GROUP) \
    static fn attr void name(int64_t n, double *o, const double *a) { \
        enum { vl_ = L_ }; \
        int64_t i = 0, nv = n - n % vl_, ng = n - n % (G * vl_);  /* (i < nv: GCC -O3 sees no overflow) */ \
        VD x[G]; \
        int l, in, in1; \
        for (; i < ng; i += G * vl_) { \
            in = 1; \
            GROUP(GR__VM_LD1, f) \
            if (in) { GROUP(GR__VM_DO1##S, f) GROUP(GR__VM_ST1, f) } \
            else for (l = 0; l < G * vl_; l++) o[i + l] = gr__m_##f(a[i + l]); \
        } \
        for (; i < nv; i += vl_) { \
            memcpy(&x[0], a + i, sizeof x[0]); \
            GR__VM_ALL_IN(f, x[0], in, vl_); \
            if (in) { x[0] = gr__vm_##f##_main##S(x[0]); memcpy(o + i, &x[0], sizeof x[0]); } \
            else for (l = 0; l < vl_; l++) o[i + l] = gr__m_##f(a[i + l]); \
        } \
        for (; i < n; i++) o[i] = gr__m_##f(a[i]); \
    }
#define GR__VM_DO1_v(j, f) x[j] = gr__vm_##f##_main_v(x[j]);
#define GR__VM_DO1_w(j, f) x[j] = gr__vm_##f##_main_w(x[j]);
/* (fn: the maps are built with GCC's pre-RA scheduling, which interleaves the group's chains, GR__VM_FNS;
   with wide vectors not sin and cos, slower with it: GR__VM_FNSC) */
#if GR__VM_W
/* gr__vm_<f>_map_v (16 bytes) and _w (32 bytes, AVX2), and gr__vm_<f>_map picking one */
#define GR__VM_MAPF(f, fn) \
    GR__VM_MAPX(fn, f, gr__vm_##f##_map_w, GR__VM_AVX2, gr__vmwd, 4, _w, 2, GR__VM_GROUP2) \
    GR__VM_MAPX(fn, f, gr__vm_##f##_map_v, , gr__vmd, GR__VM_L, _v, GR__VM_G, GR__VM_GROUP) \
    static GR__UNUSED void gr__vm_##f##_map(int64_t n, double *o, const double *a) { \
        if (gr__vm_avx2()) gr__vm_##f##_map_w(n, o, a); else gr__vm_##f##_map_v(n, o, a); \
    }
#else
#define GR__VM_MAPF(f, fn) GR__VM_MAPX(fn, f, gr__vm_##f##_map, , gr__vmd, GR__VM_L, _v, GR__VM_G, GR__VM_GROUP)
#endif
#define GR__VM_MAP(f) GR__VM_MAPF(f, GR__VM_FNS)
#if GR__VM_BYTES == 16
#define GR__VM_FNSC GR__VM_FNS
#else
#define GR__VM_FNSC GR__VM_FN
#endif
/* (with wide vectors, exp, expm1, sinh, cosh and cbrt are faster one vector at a time, unscheduled) */
#if GR__VM_BYTES == 16 || GR__VM_SMALL
#define GR__VM_MAP1(f) GR__VM_MAP(f)
#else
#define GR__VM_GROUP1(F, f) F(0, f)
#define GR__VM_MAP1(f) GR__VM_MAPX(GR__VM_FN, f, gr__vm_##f##_map, , gr__vmd, GR__VM_L, _v, 1, GR__VM_GROUP1)
#endif
#else
#define GR__VM_FENCE() ((void)0)
#define GR__VM_MAP(f) \
    static GR__UNUSED void gr__vm_##f##_map(int64_t n, double *o, const double *a) { \
        int64_t i; \
        for (i = 0; i < n; i++) o[i] = gr__m_##f(a[i]); \
    }
#define GR__VM_MAPF(f, fn) GR__VM_MAP(f)
#define GR__VM_MAP1(f) GR__VM_MAP(f)
#endif
/* GR_KERNEL gr__vm_sincos_map */
/* sin and cos of a[i sa] together (the pair sincos): one reduction (GR__VM_MAP's vector type) */
#if defined(__GNUC__) || defined(__clang__)
static GR__VM_FN void gr__vm_sincos_map(int64_t n, double *s, double *c, const double *a, int64_t sa) {
    int64_t i = 0, nv = sa == 1 ? n - n % GR__VM_L : 0;
    for (; i < nv; i += GR__VM_L) {
        gr__vmd x, vs, vc;
        int l, in;
        memcpy(&x, a + i, sizeof x);
        GR__VM_ALL_IN(sin, x, in, GR__VM_L);
        if (!in) {
            for (l = 0; l < GR__VM_L; l++) gr__vm_sincos1(a[i + l], s + i + l, c + i + l);
            continue;
        }
        gr__vm_sincos_core_v(x, &vs, &vc);
        memcpy(s + i, &vs, sizeof vs);
        memcpy(c + i, &vc, sizeof vc);
    }
    for (; i < n; i++) gr__vm_sincos1(a[i * sa], s + i, c + i);
}
#else
static GR__UNUSED void gr__vm_sincos_map(int64_t n, double *s, double *c, const double *a, int64_t sa) {
    int64_t i;
    for (i = 0; i < n; i++) gr__vm_sincos1(a[i * sa], s + i, c + i);
}
#endif
/* GR_KERNEL gr__vm_exp_map */
GR__VM_MAP1(exp)                          /* gr__m_exp (GR__VM_MAP) */
/* GR_KERNEL gr__vm_expm1_map */
GR__VM_MAP1(expm1)                        /* gr__m_expm1 (GR__VM_MAP) */
/* GR_KERNEL gr__vm_tanh_map */
GR__VM_MAP(tanh)                          /* gr__m_tanh */
/* GR_KERNEL gr__vm_log_map */
GR__VM_MAP(log)                           /* gr__m_log */
/* GR_KERNEL gr__vm_log1p_map */
GR__VM_MAP(log1p)                         /* gr__m_log1p */
/* GR_KERNEL gr__vm_sin_map */
GR__VM_MAPF(sin, GR__VM_FNSC)             /* gr__m_sin (GR__VM_MAP) */
/* GR_KERNEL gr__vm_cos_map */
GR__VM_MAPF(cos, GR__VM_FNSC)             /* gr__m_cos (GR__VM_MAP) */
/* GR_KERNEL gr__vm_sigmoid_map */
GR__VM_MAP(sigmoid)                       /* gr__m_sigmoid */
/* GR_KERNEL gr__vm_softplus_map */
GR__VM_MAP(softplus)                      /* gr__m_softplus */
/* GR_KERNEL_END */

#define GR__VM_CHUNK 128                  /* float32 runs through chunks of this many doubles */
typedef void (*gr__vm_mapfn)(int64_t n, double *o, const double *a);
static void gr__vm_f32(int64_t n, float *o, const float *a, gr__vm_mapfn map) {
    double buf[GR__VM_CHUNK];
    int64_t i, j, m;
    for (i = 0; i < n; i += m) {
        m = n - i < GR__VM_CHUNK ? n - i : GR__VM_CHUNK;
        for (j = 0; j < m; j++) buf[j] = (double)a[i + j];
        map(m, buf, buf);
        for (j = 0; j < m; j++) o[i + j] = (float)buf[j];
    }
}

#define GR__VM_SF(name) gr__m_##name##f      /* the float32 scalar function */
/* the table's kernels (gr__ew_kernel: st[0] 1 for a whole array, 0 for one value filled) */
#define GR__VM_KERNELS(f) \
    static GR__UNUSED void gr__vmk_##f##_f64(int64_t n, void *out, const void *const *in, const int64_t *st) { \
        double *o = (double *)out; const double *a = (const double *)in[0]; int64_t i; \
        if (st[0] == 1) { gr__vm_##f##_map(n, o, a); return; } \
        { double r = gr__m_##f(a[0]); for (i = 0; i < n; i++) o[i] = r; } \
    } \
    static GR__UNUSED void gr__vmk_##f##_f32(int64_t n, void *out, const void *const *in, const int64_t *st) { \
        float *o = (float *)out; const float *a = (const float *)in[0]; int64_t i; \
        if (st[0] == 1) { gr__vm_f32(n, o, a, gr__vm_##f##_map); return; } \
        { float r = GR__VM_SF(f)(a[0]); for (i = 0; i < n; i++) o[i] = r; } \
    }
GR__VM_KERNELS(exp)
GR__VM_KERNELS(expm1)
GR__VM_KERNELS(tanh)
GR__VM_KERNELS(log)
GR__VM_KERNELS(log1p)
GR__VM_KERNELS(sin)
GR__VM_KERNELS(cos)
GR__VM_KERNELS(sigmoid)
GR__VM_KERNELS(softplus)

/* the rows whose table kernels are these (ops/elemwise.c picks them through GR__VM_HAS) */
#define GR__VMP_exp ~, 1
#define GR__VMP_expm1 ~, 1
#define GR__VMP_tanh ~, 1
#define GR__VMP_log ~, 1
#define GR__VMP_log1p ~, 1
#define GR__VMP_sin ~, 1
#define GR__VMP_cos ~, 1
#define GR__VMP_sigmoid ~, 1
#define GR__VMP_softplus ~, 1
#define GR__VM_2ND(a, b, ...) b
#define GR__VM_2ND_(...) GR__VM_2ND(__VA_ARGS__)
#define GR__VM_HAS(name) GR__VM_2ND_(GR__VMP_##name, 0, ~)
#else
#define GR__VM_HAS(name) 0
#endif

/* sin and cos of a[i sa] into s[i] and c[i], float64 or float32 (the pair sincos) */
static GR__UNUSED void gr__vm_sincos(int dt, void *s, void *c, const void *a, int64_t sa, int64_t n) {
    int64_t i;
    if (dt == GR_F64) {
#ifndef GR_NO_VECTOR_EXTENSIONS
        gr__vm_sincos_map(n, (double *)s, (double *)c, (const double *)a, sa);
#else
        const double *x = (const double *)a;
        for (i = 0; i < n; i++) gr__vm_sincos1(x[i * sa], (double *)s + i, (double *)c + i);
#endif
        return;
    }
    {
        const float *x = (const float *)a;
        float *ps = (float *)s, *pc = (float *)c;
#ifndef GR_NO_VECTOR_EXTENSIONS
        double bs[GR__VM_CHUNK], bc[GR__VM_CHUNK], ba[GR__VM_CHUNK];
        int64_t j, m;
        for (i = 0; i < n; i += m) {
            m = n - i < GR__VM_CHUNK ? n - i : GR__VM_CHUNK;
            for (j = 0; j < m; j++) ba[j] = (double)x[(i + j) * sa];
            gr__vm_sincos_map(m, bs, bc, ba, 1);
            for (j = 0; j < m; j++) { ps[i + j] = (float)bs[j]; pc[i + j] = (float)bc[j]; }
        }
#else
        for (i = 0; i < n; i++) { float v = x[i * sa]; ps[i] = gr__m_sinf(v); pc[i] = gr__m_cosf(v); }
#endif
    }
}

/* ---- the kernels of the second set (as GR__VM_KERNELS above) ---------------------------------
   The maps are GR_KERNEL text as the first set's (an emitted fused group runs them block by block). */
#ifndef GR_NO_VECTOR_EXTENSIONS
/* GR_KERNEL GR__VM_MAP2S */
/* (the second set's cores, GR__VM_FN2, over GR__VM_MAP's vectors) */
#if defined(__GNUC__) || defined(__clang__)
/* sqrt (correctly rounded: the scalar path's bits): Clang's elementwise builtin where it has one,
   else lane by lane (no vector sqrt in GCC's extensions; no intrinsics) */
#if defined(__clang__) && defined(__has_builtin)
#if __has_builtin(__builtin_elementwise_sqrt)
#define GR__VMV_SQRT(x) __builtin_elementwise_sqrt(x)
#endif
#endif
/* GCC on x86-64: the SSE2 / AVX / AVX-512 instruction's builtin (lane by lane, GCC's sqrt keeps a
   branch for errno in every lane) */
#if !defined(GR__VMV_SQRT) && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#if GR__VM_BYTES == 16
#define GR__VMV_SQRT(x) __builtin_ia32_sqrtpd(x)
#elif GR__VM_BYTES == 32
#define GR__VMV_SQRT(x) __builtin_ia32_sqrtpd256(x)
#else
#define GR__VMV_SQRT(x) __builtin_ia32_sqrtpd512_mask(x, x, (unsigned char)-1, 4)
#endif
#endif
#ifndef GR__VMV_SQRT
static GR__UNUSED gr__vmd gr__vm_sqrt_v(gr__vmd x) {
    int l;
    for (l = 0; l < GR__VM_L; l++) x[l] = sqrt(x[l]);
    return x;
}
#define GR__VMV_SQRT(x) gr__vm_sqrt_v(x)
#endif
static GR__VM_FNI gr__vmd gr__vm_ld_v(const double *t, gr__vmu i) {
    gr__vmd r;
    int l;
    for (l = 0; l < GR__VM_L; l++) r[l] = t[i[l]];
    return r;
}
#define GR__VMV_LD(t, i) gr__vm_ld_v(t, i)
GR__VM_CORES2(_v, gr__vmd, gr__vmu, GR__VMV)
#define gr__vm_erf_main_v gr__vm_erf_core_v
#define gr__vm_erfc_main_v gr__vm_erfc_core_v
#define gr__vm_exp2_main_v gr__vm_exp2_core_v
#define gr__vm_sinh_main_v gr__vm_sinh_core_v
#define gr__vm_cosh_main_v gr__vm_cosh_core_v
#define gr__vm_tan_main_v gr__vm_tan_core_v
#define gr__vm_arctan_main_v gr__vm_arctan_core_v
#define gr__vm_cbrt_main_v gr__vm_cbrt_core_v
#define gr__vm_arcsin_main_v gr__vm_arcsin_core_v
#define gr__vm_arccos_main_v gr__vm_arccos_core_v
#define gr__vm_arctanh_main_v gr__vm_arctanh_core_v
#define gr__vm_arcsinh_main_v gr__vm_arcsinh_core_v
#define gr__vm_arccosh_main_v gr__vm_arccosh_core_v
#if GR__VM_W
#undef GR__VM_FNI
#define GR__VM_FNI GR__VM_FN GR__VM_INL GR__VM_AVX2
/* (lane by lane, GCC's sqrt keeps a branch for errno per lane: the AVX instruction's builtin, the one
   operation the vector extensions lack; correctly rounded, the same bits) */
#define GR__VMW_SQRT(x) __builtin_ia32_sqrtpd256(x)
static GR__VM_FNI gr__vmwd gr__vm_ld_w(const double *t, gr__vmwu i) {
    gr__vmwd r;
    int l;
    for (l = 0; l < 4; l++) r[l] = t[i[l]];
    return r;
}
#define GR__VMW_LD(t, i) gr__vm_ld_w(t, i)
GR__VM_CORES2(_w, gr__vmwd, gr__vmwu, GR__VMW)
#undef GR__VM_FNI
#define GR__VM_FNI GR__VM_FN GR__VM_INL
#define gr__vm_erf_main_w gr__vm_erf_core_w
#define gr__vm_erfc_main_w gr__vm_erfc_core_w
#define gr__vm_exp2_main_w gr__vm_exp2_core_w
#define gr__vm_sinh_main_w gr__vm_sinh_core_w
#define gr__vm_cosh_main_w gr__vm_cosh_core_w
#define gr__vm_tan_main_w gr__vm_tan_core_w
#define gr__vm_arctan_main_w gr__vm_arctan_core_w
#define gr__vm_cbrt_main_w gr__vm_cbrt_core_w
#define gr__vm_arcsin_main_w gr__vm_arcsin_core_w
#define gr__vm_arccos_main_w gr__vm_arccos_core_w
#define gr__vm_arctanh_main_w gr__vm_arctanh_core_w
#define gr__vm_arcsinh_main_w gr__vm_arcsinh_core_w
#define gr__vm_arccosh_main_w gr__vm_arccosh_core_w
#endif
#endif
/* GR_KERNEL gr__vm_erf_map */
GR__VM_MAP(erf)                           /* gr__m_erf, GR__VM_MAP2S */
/* GR_KERNEL gr__vm_erfc_map */
GR__VM_MAP(erfc)                          /* gr__m_erfc, GR__VM_MAP2S */
/* GR_KERNEL gr__vm_exp2_map */
GR__VM_MAP(exp2)                          /* gr__m_exp2, GR__VM_MAP2S */
/* GR_KERNEL gr__vm_log2_map */
GR__VM_MAP(log2)                          /* gr__m_log2, GR__VM_MAP2S */
/* GR_KERNEL gr__vm_sinh_map */
GR__VM_MAP1(sinh)                         /* gr__m_sinh, GR__VM_MAP2S (GR__VM_MAP) */
/* GR_KERNEL gr__vm_cosh_map */
GR__VM_MAP1(cosh)                         /* gr__m_cosh, GR__VM_MAP2S (GR__VM_MAP) */
/* GR_KERNEL gr__vm_tan_map */
GR__VM_MAP(tan)                           /* gr__m_tan, GR__VM_MAP2S */
/* GR_KERNEL gr__vm_arctan_map */
GR__VM_MAP(arctan)                        /* gr__m_arctan, GR__VM_MAP2S */
/* GR_KERNEL gr__vm_cbrt_map */
GR__VM_MAP1(cbrt)                         /* gr__m_cbrt, GR__VM_MAP2S (GR__VM_MAP) */
/* GR_KERNEL gr__vm_arcsin_map */
GR__VM_MAP(arcsin)                        /* gr__m_arcsin, GR__VM_MAP2S */
/* GR_KERNEL gr__vm_arccos_map */
GR__VM_MAP(arccos)                        /* gr__m_arccos, GR__VM_MAP2S */
/* GR_KERNEL gr__vm_arctanh_map */
GR__VM_MAP(arctanh)                       /* gr__m_arctanh, GR__VM_MAP2S */
/* GR_KERNEL gr__vm_arcsinh_map */
GR__VM_MAP(arcsinh)                       /* gr__m_arcsinh, GR__VM_MAP2S */
/* GR_KERNEL gr__vm_arccosh_map */
GR__VM_MAP(arccosh)                       /* gr__m_arccosh, GR__VM_MAP2S */
/* GR_KERNEL_END */
GR__VM_KERNELS(erf)
GR__VM_KERNELS(erfc)
GR__VM_KERNELS(exp2)
GR__VM_KERNELS(log2)
GR__VM_KERNELS(sinh)
GR__VM_KERNELS(cosh)
GR__VM_KERNELS(tan)
GR__VM_KERNELS(arctan)
GR__VM_KERNELS(cbrt)
GR__VM_KERNELS(arcsin)
GR__VM_KERNELS(arccos)
GR__VM_KERNELS(arctanh)
GR__VM_KERNELS(arcsinh)
GR__VM_KERNELS(arccosh)
#define GR__VMP_erf ~, 1
#define GR__VMP_erfc ~, 1
#define GR__VMP_exp2 ~, 1
#define GR__VMP_log2 ~, 1
#define GR__VMP_sinh ~, 1
#define GR__VMP_cosh ~, 1
#define GR__VMP_tan ~, 1
#define GR__VMP_arctan ~, 1
#define GR__VMP_cbrt ~, 1
#define GR__VMP_arcsin ~, 1
#define GR__VMP_arccos ~, 1
#define GR__VMP_arctanh ~, 1
#define GR__VMP_arcsinh ~, 1
#define GR__VMP_arccosh ~, 1

/* GR_KERNEL GR__VM_MAP2 */
/* the binary rows pow and arctan2: o[i] = f(a[i sa], b[i sb]) (strides 0 or 1; o may be a or b), a
   vector where every lane is in f's main range, the scalar function in the lanes whose *ok is 0 */
#if defined(__GNUC__) || defined(__clang__)
/* (a vector of a[i..] or of a[0]; r's lanes into o + i, the scalar function's where ok is 0) */
#define GR__VM_LOAD2(x, a, sa, i) do { if (sa) memcpy(&x, (a) + (i), sizeof x); else for (l = 0; l < vl_; l++) x[l] = (a)[0]; } while (0)
#define GR__VM_PUT2(f, i, r, ok, x, y) do { \
    for (l = 0, in = 1; l < vl_; l++) in &= ok[l] != 0; \
    if (in) memcpy(o + (i), &r, sizeof r); \
    else for (l = 0; l < vl_; l++) o[(i) + l] = ok[l] ? r[l] : gr__m_##f(x[l], y[l]); } while (0)
#define GR__VM_LD2(j, f) GR__VM_LOAD2(x[j], a, sa, i + (j) * vl_); GR__VM_LOAD2(y[j], b, sb, i + (j) * vl_); \
    for (l = 0; l < vl_; l++) in &= GR__VM_IN_##f(x[j][l], y[j][l]);
#define GR__VM_DO2_v(j, f) r[j] = gr__vm_##f##_core_v(x[j], y[j], &ok[j]);
#define GR__VM_DO2_w(j, f) r[j] = gr__vm_##f##_core_w(x[j], y[j], &ok[j]);
#define GR__VM_ST2(j, f) GR__VM_PUT2(f, i + (j) * vl_, r[j], ok[j], x[j], y[j]);
/* as GR__VM_MAPX: G vectors at a time, then one, then the tail */
#define GR__VM_MAP2X(f, name, attr, VD, VU, L_, S, G, GROUP) \
    static GR__VM_FNS attr void name(int64_t n, double *o, const double *a, int64_t sa, const double *b, int64_t sb) { \
        enum { vl_ = L_ }; \
        int64_t i, m = n - n % vl_, mg = n - n % (G * vl_); \
        VD x[G], y[G], r[G]; \
        VU ok[G]; \
        int l, in; \
        memset(x, 0, sizeof x); memset(y, 0, sizeof y);   /* (lanes set one by one for a stride 0: GCC -O3 warned) */ \
        for (i = 0; i < mg; i += G * vl_) { \
            in = 1; \
            GROUP(GR__VM_LD2, f) \
            if (!in) { \
                for (l = 0; l < G * vl_; l++) o[i + l] = gr__m_##f(sa ? a[i + l] : a[0], sb ? b[i + l] : b[0]); \
                continue; \
            } \
            GROUP(GR__VM_DO2##S, f) \
            GROUP(GR__VM_ST2, f) \
        } \
        for (; i < m; i += vl_) { \
            GR__VM_LOAD2(x[0], a, sa, i); GR__VM_LOAD2(y[0], b, sb, i); \
            for (l = 0, in = 1; l < vl_; l++) in &= GR__VM_IN_##f(x[0][l], y[0][l]); \
            if (!in) { for (l = 0; l < vl_; l++) o[i + l] = gr__m_##f(x[0][l], y[0][l]); continue; } \
            r[0] = gr__vm_##f##_core##S(x[0], y[0], &ok[0]); \
            GR__VM_PUT2(f, i, r[0], ok[0], x[0], y[0]); \
        } \
        for (i = m; i < n; i++) o[i] = gr__m_##f(sa ? a[i] : a[0], sb ? b[i] : b[0]); \
    }
#if GR__VM_W
#define GR__VM_MAP2(f) \
    GR__VM_MAP2X(f, gr__vm_##f##_map_w, GR__VM_AVX2, gr__vmwd, gr__vmwu, 4, _w, 2, GR__VM_GROUP2) \
    GR__VM_MAP2X(f, gr__vm_##f##_map_v, , gr__vmd, gr__vmu, GR__VM_L, _v, GR__VM_G, GR__VM_GROUP) \
    static GR__UNUSED void gr__vm_##f##_map(int64_t n, double *o, const double *a, int64_t sa, const double *b, int64_t sb) { \
        if (gr__vm_avx2()) gr__vm_##f##_map_w(n, o, a, sa, b, sb); else gr__vm_##f##_map_v(n, o, a, sa, b, sb); \
    }
#else
#define GR__VM_MAP2(f) GR__VM_MAP2X(f, gr__vm_##f##_map, , gr__vmd, gr__vmu, GR__VM_L, _v, GR__VM_G, GR__VM_GROUP)
#endif
#else
#define GR__VM_MAP2(f) \
    static void gr__vm_##f##_map(int64_t n, double *o, const double *a, int64_t sa, const double *b, int64_t sb) { \
        int64_t i; \
        for (i = 0; i < n; i++) o[i] = gr__m_##f(sa ? a[i] : a[0], sb ? b[i] : b[0]); \
    }
#endif
/* GR_KERNEL gr__vm_pow_map */
GR__VM_MAP2(pow)                          /* gr__m_pow, GR__VM_MAP2S */
/* GR_KERNEL gr__vm_arctan2_map */
GR__VM_MAP2(arctan2)                      /* gr__m_arctan2, GR__VM_MAP2S */
/* GR_KERNEL_END */
#define GR__VM_KERNELS2(f) \
    static GR__UNUSED void gr__vmk_##f##_f64(int64_t n, void *out, const void *const *in, const int64_t *st) { \
        const double *a = (const double *)in[0], *b = (const double *)in[1]; \
        double *o = (double *)out, r; \
        int64_t i; \
        if (st[0] || st[1]) { gr__vm_##f##_map(n, o, a, st[0], b, st[1]); return; } \
        for (r = gr__m_##f(a[0], b[0]), i = 0; i < n; i++) o[i] = r; \
    } \
    static GR__UNUSED void gr__vmk_##f##_f32(int64_t n, void *out, const void *const *in, const int64_t *st) { \
        const float *a = (const float *)in[0], *b = (const float *)in[1]; \
        float *o = (float *)out; \
        double ba[GR__VM_CHUNK], bb[GR__VM_CHUNK]; \
        int64_t i, j, m; \
        for (i = 0; i < n; i += m) { \
            m = n - i < GR__VM_CHUNK ? n - i : GR__VM_CHUNK; \
            for (j = 0; j < m; j++) { ba[j] = (double)a[(i + j) * st[0]]; bb[j] = (double)b[(i + j) * st[1]]; } \
            gr__vm_##f##_map(m, ba, ba, 1, bb, 1); \
            for (j = 0; j < m; j++) o[i + j] = (float)ba[j]; \
        } \
    }
GR__VM_KERNELS2(pow)
GR__VM_KERNELS2(arctan2)
#define GR__VMP_arctan2 ~, 1
#define GR__VMP_pow ~, 1
#endif
