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
#else
#define GR__VM_FN GR__UNUSED
#endif
#if defined(__clang__)
#define GR__VM_NOFMA _Pragma("STDC FP_CONTRACT OFF")
#else
#define GR__VM_NOFMA
#endif
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
    static GR__VM_FN T gr__vm_expr##S(T x, T *kd) { \
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
    static GR__VM_FN T gr__vm_pow2##S(T kd) { \
        GR__VM_NOFMA \
        return O##_TOD((O##_TOU(kd + GR__VM_SHIFT) - GR__VM_SHIFT_BITS + (uint64_t)1023) << 52); \
    } \
    /* e^x for |x| <= 708 */ \
    static GR__VM_FN T gr__vm_exp_core##S(T x) { \
        GR__VM_NOFMA \
        T kd, q = gr__vm_expr##S(x, &kd); \
        return (1.0 + q) * gr__vm_pow2##S(kd); \
    } \
    /* e^x - 1 for |x| <= 700: 2^k q + (2^k - 1) (q itself when k = 0), -0 kept */ \
    static GR__VM_FN T gr__vm_expm1_core##S(T x) { \
        GR__VM_NOFMA \
        T kd, q = gr__vm_expr##S(x, &kd), s = gr__vm_pow2##S(kd), y = s * q + (s - 1.0); \
        return GR__VM_SEL(O, O##_EQ(x, 0.0), x, y); \
    } \
    /* tanh x for x not NaN: with t = expm1(-2 min(|x|, 20)), tanh|x| = -t / (t + 2), x's sign */ \
    static GR__VM_FN T gr__vm_tanh_core##S(T x) { \
        GR__VM_NOFMA \
        U sign = O##_TOU(x) & ((uint64_t)1 << 63); \
        T a = O##_TOD(O##_TOU(x) & ~((uint64_t)1 << 63)), t; \
        a = GR__VM_SEL(O, O##_LE(a, 20.0), a, GR__VM_K(O, a, 20.0)); \
        t = gr__vm_expm1_core##S(-2.0 * a); \
        return O##_TOD(O##_TOU(-t / (t + 2.0)) | sign); \
    } \
    /* 1 / (1 + e^-x) for |x| <= 708: with e = e^-|x|, 1 / (1 + e) or e / (1 + e) */ \
    static GR__VM_FN T gr__vm_sigmoid_core##S(T x) { \
        GR__VM_NOFMA \
        T a = O##_TOD(O##_TOU(x) & ~((uint64_t)1 << 63)), e = gr__vm_exp_core##S(-a); \
        return GR__VM_SEL(O, O##_LE(-x, 0.0), GR__VM_K(O, x, 1.0), e) / (1.0 + e); \
    } \
    /* ln u + c + kadd ln2 for a normal u > 0 and a small correction c (|c| < 2^-52 u): \
       u = 2^k m, m in [sqrt(1/2), sqrt 2), f = m - 1, s = f / (2 + f), ln m = 2 atanh s */ \
    static GR__VM_FN T gr__vm_log_core##S(T u, T c, T kadd) { \
        GR__VM_NOFMA \
        U w = O##_TOU(u) - GR__VM_SQRT1_2_BITS + ((uint64_t)1024 << 52), e = w >> 52; \
        T m = O##_TOD(O##_TOU(u) - (e << 52) + ((uint64_t)1024 << 52)); \
        T k = (O##_TOD(e + GR__VM_SHIFT_BITS) - GR__VM_SHIFT) - 1024.0 + kadd; \
        T f = m - 1.0, s = f / (2.0 + f), z = s * s, hfsq = 0.5 * f * f, R; \
        R = z * (2.0 / 21.0) + 2.0 / 19.0; \
        R = R * z + 2.0 / 17.0; R = R * z + 2.0 / 15.0; R = R * z + 2.0 / 13.0; \
        R = R * z + 2.0 / 11.0; R = R * z + 2.0 / 9.0; R = R * z + 2.0 / 7.0; R = R * z + 2.0 / 5.0; \
        R = (R * z + 2.0 / 3.0) * z; \
        return k * GR__VM_LN2HI - ((hfsq - (s * (hfsq + R) + (k * GR__VM_LN2LO + c))) - f); \
    } \
    static GR__VM_FN T gr__vm_log_main##S(T x) { GR__VM_NOFMA return gr__vm_log_core##S(x, 0.0 * x, 0.0 * x); } \
    /* ln(1 + x) for x > -1 finite: u = 1 + x rounded, its error e exactly (Fast2Sum), ln u + e/u */ \
    static GR__VM_FN T gr__vm_log1p_core##S(T x) { \
        GR__VM_NOFMA \
        T u = 1.0 + x, ax = O##_TOD(O##_TOU(x) & ~((uint64_t)1 << 63)); \
        T e = GR__VM_SEL(O, O##_LE(ax, 1.0), x - (u - 1.0), 1.0 - (u - x)); \
        T y = gr__vm_log_core##S(u, e / u, 0.0 * x); \
        return GR__VM_SEL(O, O##_EQ(x, 0.0), x, y); \
    } \
    /* ln(1 + e^x) for |x| <= 708: max(x, 0) + log1p(e^-|x|) */ \
    static GR__VM_FN T gr__vm_softplus_core##S(T x) { \
        GR__VM_NOFMA \
        T a = O##_TOD(O##_TOU(x) & ~((uint64_t)1 << 63)), l = gr__vm_log1p_core##S(gr__vm_exp_core##S(-a)); \
        return GR__VM_SEL(O, O##_LE(x, 0.0), GR__VM_K(O, x, 0.0), x) + l; \
    } \
    /* sin and cos of y + yl on [-pi/4, pi/4] (x = n pi/2 + y + yl), placed by the quadrant n mod 4 (the \
       low bits of nb) */ \
    static GR__VM_FN void gr__vm_sincos_poly##S(T x, T y, T yl, U nb, T *sn, T *cs) { \
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
    static GR__VM_FN void gr__vm_sincos_core##S(T x, T *sn, T *cs) { \
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
#define GR__VM_IN_expm1(x) ((x) <= 700.0 && (x) >= -700.0)
#define GR__VM_IN_tanh(x) ((x) == (x))
#define GR__VM_IN_log(x) ((x) >= 2.2250738585072014e-308 && (x) <= 1.7976931348623157e308)
#define GR__VM_IN_log1p(x) ((x) > -1.0 && (x) <= 1.7976931348623157e308)
#define GR__VM_IN_sin(x) ((x) <= 1647099.0 && (x) >= -1647099.0)
#define GR__VM_IN_cos(x) GR__VM_IN_sin(x)
#define GR__VM_IN_sigmoid(x) GR__VM_IN_exp(x)
#define GR__VM_IN_softplus(x) GR__VM_IN_exp(x)
/* sin x and cos x for |x| <= 2^20 pi/2, one value: below 0.78 the quotient by pi/2 rounds to n = 0, and
   the reduction gives y = x + 0 and yl = 0 exactly, so it is skipped (the same bits, a shorter chain) */
static GR__VM_FN void gr__vm_sincos_s1(double x, double *sn, double *cs) {
    GR__VM_NOFMA
    if (x < 0.78 && x > -0.78) gr__vm_sincos_poly_s(x, x + 0.0, 0.0, GR__VM_SHIFT_BITS, sn, cs);
    else gr__vm_sincos_core_s(x, sn, cs);
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
GR__VM_CORES(_v, gr__vmd, gr__vmu, GR__VMV)
#define gr__vm_exp_main_v gr__vm_exp_core_v
#define gr__vm_expm1_main_v gr__vm_expm1_core_v
#define gr__vm_tanh_main_v gr__vm_tanh_core_v
#define gr__vm_log1p_main_v gr__vm_log1p_core_v
#define gr__vm_sigmoid_main_v gr__vm_sigmoid_core_v
#define gr__vm_softplus_main_v gr__vm_softplus_core_v
static GR__VM_FN gr__vmd gr__vm_sin_main_v(gr__vmd x) { gr__vmd s, c; gr__vm_sincos_core_v(x, &s, &c); return s; }
static GR__VM_FN gr__vmd gr__vm_cos_main_v(gr__vmd x) { gr__vmd s, c; gr__vm_sincos_core_v(x, &s, &c); return c; }
/* the lanes of x all in f's main range */
#define GR__VM_ALL_IN(f, x, in) do { int l_; (in) = 1; for (l_ = 0; l_ < GR__VM_L; l_++) (in) &= GR__VM_IN_##f((x)[l_]); } while (0)
/* a compiler barrier: gr_fn_emit_c's float32 blocks store a map's doubles as floats and may read them
   back as doubles; GCC 12 -O3 with AVX-512 was seen to drop that rounding (keeping the double) */
#define GR__VM_FENCE() __asm__ __volatile__("" ::: "memory")
#define GR__VM_MAP(f) \
    static GR__VM_FN void gr__vm_##f##_map(int64_t n, double *o, const double *a) { \
        int64_t i = 0, nv = n - n % GR__VM_L;     /* (i < nv: GCC -O3 sees no overflow) */ \
        for (; i < nv; i += GR__VM_L) { \
            gr__vmd x; \
            int l, in; \
            memcpy(&x, a + i, sizeof x); \
            GR__VM_ALL_IN(f, x, in); \
            if (in) { x = gr__vm_##f##_main_v(x); memcpy(o + i, &x, sizeof x); } \
            else for (l = 0; l < GR__VM_L; l++) o[i + l] = gr__m_##f(a[i + l]); \
        } \
        for (; i < n; i++) o[i] = gr__m_##f(a[i]); \
    }
#else
#define GR__VM_FENCE() ((void)0)
#define GR__VM_MAP(f) \
    static GR__UNUSED void gr__vm_##f##_map(int64_t n, double *o, const double *a) { \
        int64_t i; \
        for (i = 0; i < n; i++) o[i] = gr__m_##f(a[i]); \
    }
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
        GR__VM_ALL_IN(sin, x, in);
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
GR__VM_MAP(exp)                           /* gr__m_exp */
/* GR_KERNEL gr__vm_expm1_map */
GR__VM_MAP(expm1)                         /* gr__m_expm1 */
/* GR_KERNEL gr__vm_tanh_map */
GR__VM_MAP(tanh)                          /* gr__m_tanh */
/* GR_KERNEL gr__vm_log_map */
GR__VM_MAP(log)                           /* gr__m_log */
/* GR_KERNEL gr__vm_log1p_map */
GR__VM_MAP(log1p)                         /* gr__m_log1p */
/* GR_KERNEL gr__vm_sin_map */
GR__VM_MAP(sin)                           /* gr__m_sin */
/* GR_KERNEL gr__vm_cos_map */
GR__VM_MAP(cos)                           /* gr__m_cos */
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
