/*
 * Shared pieces of the acmemodel C solver (ext ``acmemodel._solver._core``): failure-time
 * distributions, the counter-based random streams and the kernel entry points.
 *
 * Everything here is pure C99 without global state; every function is ``static inline`` so each
 * kernel file can include it. The NumPy twin of every formula is in ``acmemodel/planner/reference.py``.
 *
 * Failure-time distributions (time F from a renewal — job start or the previous failure — to the
 * next failure, seconds):
 *
 *   ACME_EXPONENTIAL  params [M]           S(t) = exp(-t/M)
 *   ACME_WEIBULL      params [k, lambda]   S(t) = exp(-(t/lambda)^k)
 *   ACME_PIECEWISE    params [b_0..b_{m-1}, h_0..h_{m-1}]  hazard h_j on [b_j, b_{j+1}), b_0 = 0,
 *                     the last piece extends to infinity (h_{m-1} > 0): S(t) = exp(-H(t)).
 */
#ifndef ACME_SOLVER_H
#define ACME_SOLVER_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define ACME_EXPONENTIAL 0
#define ACME_WEIBULL 1
#define ACME_PIECEWISE 2

/* result status codes shared with Python (acmemodel.planner.checkpoint.STATUS_REASONS) */
#define ACME_OK 0
#define ACME_DNF_CKPT_GE_MTTF 1  /* checkpoint cost >= mean time to failure */
#define ACME_DNF_NO_PROGRESS 2   /* expected saved work per failure cycle underflows (E[T] not finite) */
#define ACME_DNF_WALL_CAP 3      /* Monte Carlo replica exceeded the wall-time cap */

typedef struct {
    int family;
    double mean;          /* E[F], seconds */
    double M;             /* exponential mean */
    double k, lam;        /* Weibull shape and scale */
    int m;                /* piecewise: number of pieces */
    const double *b;      /* piece starts (m) */
    const double *h;      /* piece hazards (m), 1/s */
    double *H;            /* cumulative hazard at piece starts (m), caller-owned buffer */
} acme_failure;

/* ---------------------------------------------------------------- failure distributions */

/* Initialise from one row of params; H is a caller buffer of m doubles (piecewise only).
 * Returns 0 on success, -1 on invalid parameters. */
static inline int acme_failure_init(acme_failure *f, int family, const double *p, int P, double *H) {
    f->family = family;
    if (family == ACME_EXPONENTIAL) {
        if (P < 1 || !(p[0] > 0) || !isfinite(p[0])) return -1;
        f->M = p[0];
        f->mean = p[0];
        return 0;
    }
    if (family == ACME_WEIBULL) {
        if (P < 2 || !(p[0] > 0) || !(p[1] > 0) || !isfinite(p[0]) || !isfinite(p[1])) return -1;
        f->k = p[0];
        f->lam = p[1];
        f->mean = p[1] * tgamma(1.0 + 1.0 / p[0]);
        return 0;
    }
    if (family == ACME_PIECEWISE) {
        int m = P / 2, j;
        double mean = 0.0;
        if (m < 1 || 2 * m != P) return -1;
        f->m = m;
        f->b = p;
        f->h = p + m;
        f->H = H;
        if (p[0] != 0.0 || !(f->h[m - 1] > 0)) return -1;
        H[0] = 0.0;
        for (j = 0; j < m; j++) {
            if (!(f->h[j] >= 0) || !isfinite(f->h[j])) return -1;
            if (j > 0) {
                if (!(p[j] >= p[j - 1])) return -1;
                H[j] = H[j - 1] + f->h[j - 1] * (p[j] - p[j - 1]);
            }
        }
        /* E[F] = integral of S: piece j contributes S(b_j)(1 - exp(-h_j d_j))/h_j */
        for (j = 0; j < m; j++) {
            double s = exp(-H[j]);
            if (j == m - 1) {
                mean += s / f->h[j];
            } else {
                double d = p[j + 1] - p[j];
                mean += (f->h[j] > 0) ? -s * expm1(-f->h[j] * d) / f->h[j] : s * d;
            }
        }
        f->mean = mean;
        return 0;
    }
    return -1;
}

/* index of the piece containing t (largest j with b_j <= t) */
static inline int acme_piece(const acme_failure *f, double t) {
    int lo = 0, hi = f->m - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (f->b[mid] <= t) lo = mid; else hi = mid - 1;
    }
    return lo;
}

static inline double acme_cumhaz(const acme_failure *f, double t) {
    switch (f->family) {
    case ACME_EXPONENTIAL: return t / f->M;
    case ACME_WEIBULL: return pow(t / f->lam, f->k);
    default: {
        int j = acme_piece(f, t);
        return f->H[j] + f->h[j] * (t - f->b[j]);
    }
    }
}

static inline double acme_hazard(const acme_failure *f, double t) {
    switch (f->family) {
    case ACME_EXPONENTIAL: return 1.0 / f->M;
    case ACME_WEIBULL: return f->k / f->lam * pow(t / f->lam, f->k - 1.0);
    default: return f->h[acme_piece(f, t)];
    }
}

static inline double acme_surv(const acme_failure *f, double t) {
    return exp(-acme_cumhaz(f, t));
}

/* Inverse of the cumulative hazard: the failure time whose H equals e (e = -log U ~ Exp(1)). */
static inline double acme_inv_cumhaz(const acme_failure *f, double e) {
    switch (f->family) {
    case ACME_EXPONENTIAL: return e * f->M;
    case ACME_WEIBULL: return f->lam * pow(e, 1.0 / f->k);
    default: {
        int lo = 0, hi = f->m - 1;  /* largest j with H_j <= e */
        while (lo < hi) {
            int mid = (lo + hi + 1) / 2;
            if (f->H[mid] <= e) lo = mid; else hi = mid - 1;
        }
        while (lo < f->m - 1 && f->h[lo] == 0.0) lo++;  /* flat piece: jump to the next */
        if (f->h[lo] == 0.0) return INFINITY;
        return f->b[lo] + (e - f->H[lo]) / f->h[lo];
    }
    }
}

/* ---------------------------------------------------------------- upper incomplete gamma */

/* Gamma(a, z) = integral_z^inf t^(a-1) e^(-t) dt (not regularised), a > 0, z >= 0.
 * Series for the lower function when z < a + 1, Lentz continued fraction otherwise
 * (Numerical Recipes 6.2); relative accuracy ~1e-15. */
static inline double acme_upper_gamma_with(double a, double z, double ga);
static inline double acme_upper_gamma(double a, double z) { return acme_upper_gamma_with(a, z, tgamma(a)); }

/* the same with ga = Gamma(a) given and pre = exp(-z) z^a (callers that know it: Weibull, z = (t/lam)^k,
 * a = 1/k: pre = S(t) t / lam without an exp and a log) */
static inline double acme_upper_gamma_pre(double a, double z, double ga, double pre) {
    if (z <= 0.0) return ga;
    if (z < a + 1.0) {
        double ap = a, sum = 1.0 / a, del = sum;
        int n;
        for (n = 0; n < 1000; n++) {
            ap += 1.0;
            del *= z / ap;
            sum += del;
            if (fabs(del) < fabs(sum) * 1e-17) break;
        }
        return ga - sum * pre;
    } else {
        const double tiny = 1e-300;
        double b = z + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, hh = d;
        int i;
        for (i = 1; i < 1000; i++) {
            double an = -i * (i - a), del;
            b += 2.0;
            d = an * d + b;
            if (fabs(d) < tiny) d = tiny;
            c = b + an / c;
            if (fabs(c) < tiny) c = tiny;
            d = 1.0 / d;
            del = d * c;
            hh *= del;
            if (fabs(del - 1.0) < 1e-16) break;
        }
        return pre * hh;
    }
}

/* the same with ga = Gamma(a) given (callers that reuse it across many z) */
static inline double acme_upper_gamma_with(double a, double z, double ga) {
    if (z <= 0.0) return ga;
    return acme_upper_gamma_pre(a, z, ga, exp(-z + a * log(z)));
}

/* integral_a^inf S(t) dt */
static inline double acme_tail_integral(const acme_failure *f, double a) {
    switch (f->family) {
    case ACME_EXPONENTIAL: return f->M * exp(-a / f->M);
    case ACME_WEIBULL: {
        double z = pow(a / f->lam, f->k);
        return f->lam / f->k * acme_upper_gamma(1.0 / f->k, z);
    }
    default: {
        int j = acme_piece(f, a), i;
        double s = acme_surv(f, a), tot = 0.0, start = a;
        for (i = j; i < f->m; i++) {
            double sb = (i == j) ? s : exp(-f->H[i]);
            if (i == f->m - 1) {
                tot += sb / f->h[i];
            } else {
                double d = f->b[i + 1] - start;
                tot += (f->h[i] > 0) ? -sb * expm1(-f->h[i] * d) / f->h[i] : sb * d;
            }
            if (i + 1 < f->m) start = f->b[i + 1];
        }
        return tot;
    }
    }
}

/* ---------------------------------------------------------------- random streams */

/* splitmix64 (Steele, Lea, Flood 2014), used to seed xoshiro256** (Blackman & Vigna 2018). */
static inline uint64_t acme_splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

typedef struct { uint64_t s[4]; } acme_rng;

static inline uint64_t acme_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* The stream of replica ``r`` under ``seed``: independent of how replicas are split over threads. */
static inline void acme_rng_seed(acme_rng *g, uint64_t seed, uint64_t replica) {
    uint64_t x = seed, y;
    y = acme_splitmix64(&x);
    x = y ^ (replica * 0xD1B54A32D192ED03ULL + 0x8CB92BA72F3D8DD7ULL);
    (void)acme_splitmix64(&x);
    g->s[0] = acme_splitmix64(&x);
    g->s[1] = acme_splitmix64(&x);
    g->s[2] = acme_splitmix64(&x);
    g->s[3] = acme_splitmix64(&x);
}

static inline uint64_t acme_rng_next(acme_rng *g) {
    uint64_t *s = g->s;
    uint64_t result = acme_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = acme_rotl(s[3], 45);
    return result;
}

/* uniform on the open interval (0, 1) */
static inline double acme_uniform(acme_rng *g) {
    return ((double)(acme_rng_next(g) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* ---------------------------------------------------------------- kernel entry points */

/* checkpoint.c */
void acme_ckpt_expected_time(int n, const double *tau, const double *work, const double *ckpt,
                             int family, const double *params, int P, const double *r_nodes,
                             const double *r_weights, int Q, double *out_et, int *out_status);
void acme_ckpt_optimize(int n, const double *work, const double *ckpt, int family,
                        const double *params, int P, const double *r_nodes, const double *r_weights,
                        int Q, double *out_tau, double *out_et, int *out_status);
void acme_ckpt_terms(double tau, double ckpt, int family, const double *params, int P,
                     const double *r_nodes, const double *r_weights, int Q, double *out4);

/* quadrature.c: Gauss rules of a discrete measure (restart nodes) by Lanczos + Golub-Welsch */
typedef struct {
    int Q, k, done;       /* points; coefficients computed; no more available */
    const double *w;      /* weights (Q) */
    double W, c, s;       /* total weight; t = (r - c) / s */
    double *V, *t;        /* Lanczos vectors (row-major, Q each), scaled nodes (Q) */
    double *alpha, *beta; /* Jacobi matrix: diagonal, off-diagonal (beta[0] = 0) */
} acme_lanczos;
void acme_lanczos_init(acme_lanczos *L, int Q, const double *r, const double *w, double *V, double *t,
                       double *alpha, double *beta);
int acme_lanczos_extend(acme_lanczos *L, int k);
void acme_gauss_rule(const acme_lanczos *L, int n, double *nodes, double *weights, double *work);

/* montecarlo.c */
typedef struct {
    double work, tau, ckpt, max_wall;
    int family, P;
    const double *params;
    int J;                      /* failure types */
    const double *type_cdf;     /* cumulative type probabilities (J), last = 1 */
    const int *restart_kind;    /* 0 fixed(a), 1 lognormal(mu=a, sigma=b), 2 exponential(mean=a) */
    const double *restart_a, *restart_b;
    uint64_t seed;
} acme_mc_spec;

typedef struct {
    double *wall, *lost, *restart, *ckpt;  /* (n) seconds of wall time */
    int64_t *n_fail;                       /* (n) */
    double *type_loss;                     /* (n, J) lost work + restart seconds by type */
    int32_t *type_count;                   /* (n, J) failures by type */
    uint8_t *finished;                     /* (n) 1 = finished, 0 = hit max_wall */
} acme_mc_out;

int acme_mc_run(const acme_mc_spec *spec, int64_t n_rep, int n_threads, acme_mc_out *out);

#endif
