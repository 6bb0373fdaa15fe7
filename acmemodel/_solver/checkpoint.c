/*
 * Checkpoint-interval kernel: expected wall time E[T](tau) and its optimum, vectorised over scenarios.
 *
 * Model (renewal-reward). Work W seconds is cut into segments of tau seconds of work, each followed by
 * a blocking checkpoint of C seconds (x = tau + C). Failures form a renewal process: the hazard clock
 * restarts at every failure (the failed job is relaunched on repaired/replaced nodes; a checkpoint does
 * NOT renew it). After a failure a restart of random length R (drawn independently, discrete
 * distribution given by nodes r_q and weights w_q) precedes computation; the restart time counts in
 * the hazard clock, so a failure can also strike during the restart, which then starts over.
 * A cycle is the time between two failures, length F (E[F] = mean time to failure); during it
 * N = floor((F - R)^+ / x) checkpoints complete, saving tau*N of work. The long-run wall time per unit
 * of work is E[F] / (tau E[N]) with
 *
 *     E[N](tau) = sum_q w_q sum_{i>=1} S(r_q + i x),
 *
 * so  E[T](tau) = W E[F] / (tau E[N](tau)).  W/tau counts segments, the fractional last segment pro rata
 * (Daly's convention); tau > W is treated as tau = W (one segment). For exponential failures
 * (S = exp(-t/M)) this is exactly Daly's complete model,
 *
 *     E[T] = M exp(R/M) (exp((tau+C)/M) - 1) W / tau,
 *
 * with exp(R/M) replaced by 1/E[exp(-R/M)] when R is random. Since E[F] does not depend on tau, the
 * optimal tau maximises phi(tau) = tau E[N](tau), the expected work saved per failure cycle.
 *
 * Optimum. Exponential: Brent's method on phi' over (0, min(M, W)], where phi' changes sign exactly once
 * (root M (1 + W0(-exp(-1-C/M)))). Weibull / piecewise hazard, on the range [1e-3 min(C, E[F]),
 * min(W, 1e3 E[F])] of the original kernel (checkpoint_grid.c):
 *   1. safeguarded Newton on phi'(tau) = 0 from Daly's interval for the mean U / G0 (U = E[(F - R)^+],
 *      G0 = P(F > R): the MTTF that phi ~ tau U / (tau + C) - tau G0 / 2 implies), with the analytic
 *      phi'' = 2 E[N]' + tau E[N]'' (the sums below give E[N], E[N]', E[N]'' in one pass); a Newton step
 *      is taken when phi'' < 0 and it stays inside the bracket of known signs, else the geometric
 *      midpoint or a x4 step uphill; it stops when the next step would be below 1e-9 relative and
 *      returns the point evaluated last (quadratic convergence: within ~1e-9 of the root, E[T] within
 *      ~1e-18), so E[T] at the result comes from that evaluation;
 *   2. a guard for a better local maximum, at sqrt 2 steps but only where bounds do not exclude one:
 *      below tau, phi(s) <= U s / (s + C); above t (x = t + C, D = (F - R)^+, G(y) = P(D >= y)):
 *      phi(s) <= E[D; D >= x] (s N <= D, N = 0 unless D >= x); phi(s) <= s E[N](t) <= phi_best for
 *      s <= t phi_best / phi(t) (E[N] decreases in tau); and once x >= y_m (beyond which D's density
 *      decreases), phi(s) <= B(x_s) <= B(x) with B(x) = E[D; D >= x] - (x/2) G(y_m + 2x): phi =
 *      E[D; D >= x] - C E[N] - E[D - x N; D >= x] and the work lost rounding down to a checkpoint is
 *      at least x^2/2 times the density at the end of each bin past y_m; B' = -x (f_D(x) - f_D(y_m +
 *      2x)) - G/2 < 0. A better point found restarts step 1 from it;
 *   3. piecewise hazard: a ripple search (ripple, ripple_search). phi is a smooth function plus a ripple
 *      with kinks where r + i x crosses a break, so it has local maxima a ripple period apart, within
 *      ~1e-5..1e-3 of each other; phi is sampled at a quarter of the shortest ripple period over the
 *      window where the smooth part is within the ripple's size of its maximum, and Newton runs from
 *      the best sampled local maxima.
 * The frozen previous optimiser (checkpoint_newton.c) did 1 and 2 from Daly's interval for E[F].
 *
 * Sums (per restart node r, x = tau + C): A0 = sum_i S(r + i x), A1 = sum_i i f(r + i x),
 * A2 = sum_i i^2 f'(r + i x), so E[N] = sum_q w_q A0, E[N]' = -sum w A1, E[N]'' = -sum w A2.
 *   Weibull: nodes are visited in increasing r; a node whose bound w I(r)/x on its share of E[N] (I(r) = integral
 *   of S from r; S decreasing) is below 1e-18 of the running sum is skipped; the nodes within 0.05 min(r_0 + x,
 *   1/h) of the least r_0 (a log-normal or exponential restart law has many of small weight near 0) are
 *   summed as their 4-point Gauss rule (cluster_rule, quadrature.c; error ~5e-16 of their share).
 *   Piecewise-constant hazard: closed form piece by piece (geometric series; f = h S, f' = -h^2 S), all
 *   nodes of a piece together: nodes with the same first and last index in the piece share one exp and
 *   one geometric series (piecewise_sums_all); stops once S(b_j) / (1 - exp(-h_min x)) bounds the rest
 *   below 1e-17 of the sum.
 *   Weibull: direct terms until t >= 5 x (distance to the branch point t = 0 of S) and x h(t) <= 1
 *   (relative change per step), then Euler-Maclaurin through the B20 term (remainder ~2 zeta(22)
 *   (eps/2 pi)^22 of the sum, eps the change per step) with the integral from the upper incomplete gamma
 *   function and the derivatives from the Taylor series of S(a + v x) = S(a) exp(-y(v)),
 *   y(v) = z((1 + v x/a)^k - 1) (recurrence n e_n = -sum_j j y_j e_{n-j}); for shape k > 1 the hazard
 *   grows, so that range ends where x h(t) = 1 and the rest is summed term by term until a term is
 *   below 1e-17 of the sum. Agrees with plain summation of millions of terms to ~1e-12 (tests).
 * The baseline (checkpoint_grid.c) summed term by term while x h(t) > 0.02 - hundreds of terms per node
 * for k < 1 - with Euler-Maclaurin through B4.
 */
#include <float.h>
#include "acme_solver.h"

#define ACME_STOP 1e-17     /* a direct sum stops when a term is below this fraction of the sum */
#define ACME_EM_EPS 1.0     /* Euler-Maclaurin once x*h(t) (relative change per step) is below this */
#define ACME_EM_DMIN 5.0    /* ... and t >= DMIN x (away from the branch point of S at t = 0) */
#define ACME_NCAP 10000000L /* safety cap on direct terms */
#define ACME_PRUNE 1e-18    /* skip a restart node whose bound is below this fraction of E[N] */
#define ACME_CLUSTER_DELTA 0.05 /* Weibull: nodes within DELTA (r_0 + x) of the least r_0 ... */
#define ACME_CLUSTER_N 4        /* ... are summed as their Gauss rule of this many points ... */
#define ACME_CLUSTER_MIN 6      /* ... when there are at least this many */
#define ACME_CLUSTER_Z 10.0     /* ... and within DELTA / h of it, h the hazard at t_1 = r_0 + x or (k > 1,
                                 * increasing hazard) at z = (t / lambda)^k = Z if that is later */
#define ACME_NEWTON_DONE 1e-9
#define ACME_RIPPLE_SMALL 1e-9  /* piecewise: a ripple below this relative size of phi is ignored */
#define ACME_RIPPLE_IGNORE 2e-7 /* ... and the smallest breaks' ripples up to this total do not set the step */
#define ACME_RIPPLE_WIN 0.15    /* ... the window searched around the best point is at most +-15 % */
#define ACME_RIPPLE_K 24        /* ... with at most this many samples on each side */
#define ACME_RIPPLE_NPROBE 5    /* ... and derivative probes at 1/32, 1/16, ..., 1/2 of a step either side */
#define ACME_TAIL_NEGLIGIBLE 46.0  /* k > 1: z(t1) - z(a) beyond this (S ratio < 1e-20): no upper end */
#define EM_P 10
#define NTAY (2 * EM_P + 2)
#define ROOT2 1.4142135623730951

/* B_2 .. B_20 */
static const double BERN[EM_P] = {1.0 / 6.0, -1.0 / 30.0, 1.0 / 42.0, -1.0 / 30.0, 5.0 / 66.0,
                                  -691.0 / 2730.0, 7.0 / 6.0, -3617.0 / 510.0, 43867.0 / 798.0,
                                  -174611.0 / 330.0};

/* one scenario: failure law, checkpoint cost and the restart nodes sorted by r with I(r) */
typedef struct {
    const acme_failure *f;
    double C, U, gk;        /* gk = Gamma(1/k) (Weibull) */
    double G0;              /* P(F > R) = sum_q w_q S(r_q) (Daly's interval for U / G0 starts the search) */
    int Q;
    double *r, *w, *I;      /* Q kept nodes (caller buffers) */
    double *hmin;           /* piecewise: least hazard from piece j on (m) */
    double *omq, *stop;     /* piecewise, per tau: 1 - exp(-h_j x), 1 - exp(-hmin_j x) (m each) */
    double *u;              /* piecewise: u[j Q + q] = exp(-h_j (r_q - r_{q-1})) (Q m), u[j Q] = 1 */
    double *SH;             /* piecewise: S(b_j) = exp(-H_j) (m) */
    double *T;              /* piecewise: integral of S from b_j (m) */
    double *nxt;            /* piecewise, per tau: first index of each node in the next piece (Q) */
    double wsum;            /* sum of the kept weights */
    double *cbuf;           /* Weibull: Lanczos scratch for the cluster rule (cluster_scratch(Q)) */
    double cr[ACME_CLUSTER_N], cw[ACME_CLUSTER_N]; /* ... the rule of the first cp nodes (cn points) */
    int cp, cn;
    long evals;
} renewal;

/* Gamma(a, z) (not regularised) with ga = Gamma(a): acme_upper_gamma_with of acme_solver.h */
#define upper_gamma acme_upper_gamma_with

/* integral of S from a and (*S) S(a); piecewise from the per-scenario table T_j = integral from b_j:
 * S(a) (1 - exp(-h_j (b_{j+1} - a))) / h_j + T_{j+1} on piece j (two transcendentals, no loop) */
static double surv_tail(const renewal *R, double a, double *S) {
    const acme_failure *f = R->f;
    if (f->family == ACME_WEIBULL) {
        double z = pow(a / f->lam, f->k);
        *S = exp(-z);
        return f->lam / f->k * upper_gamma(1.0 / f->k, z, R->gk);
    } else {
        int j = acme_piece(f, a), m = f->m;
        double s = exp(-(f->H[j] + f->h[j] * (a - f->b[j]))), hj = f->h[j];
        *S = s;
        if (j == m - 1) return s / hj;
        return ((hj > 0) ? -s * expm1(-hj * (f->b[j + 1] - a)) / hj : s * (f->b[j + 1] - a)) + R->T[j + 1];
    }
}

static double tail_integral(const renewal *R, double a) {
    double S;
    return surv_tail(R, a, &S);
}

/* ---------------------------------------------------------------- Weibull */

/* 1/n and B_2p/(2p) */
static const double INV[NTAY] = {0.0, 1.0, 1.0 / 2, 1.0 / 3, 1.0 / 4, 1.0 / 5, 1.0 / 6, 1.0 / 7, 1.0 / 8, 1.0 / 9,
                                 1.0 / 10, 1.0 / 11, 1.0 / 12, 1.0 / 13, 1.0 / 14, 1.0 / 15, 1.0 / 16, 1.0 / 17,
                                 1.0 / 18, 1.0 / 19, 1.0 / 20, 1.0 / 21};

/* Taylor coefficients c_n of S(a + v x) in v: S(a) e_n with e = exp(-y), y(v) = z((1 + rho v)^k - 1),
 * n e_n = -sum_{j=1..n} j y_j e_{n-j}; computed on demand (taylor_upto) as the Euler-Maclaurin sum asks */
typedef struct {
    double k, z, rho, S, b, p;
    double jy[NTAY], e[NTAY], c[NTAY];
    int n;  /* c[0..n-1] known */
} wb_series;

static void taylor_init(wb_series *T, double k, double z, double rho) {
    T->k = k;
    T->z = z;
    T->rho = rho;
    T->S = exp(-z);
    T->b = 1.0;
    T->p = 1.0;
    T->e[0] = 1.0;
    T->c[0] = T->S;
    T->n = 1;
}

static inline void taylor_upto(wb_series *T, int nc) {
    int n, j;
    for (n = T->n; n < nc; n++) {
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        T->b *= (T->k - n + 1) * INV[n];
        T->p *= T->rho;
        T->jy[n] = n * (T->z * T->b * T->p);
        for (j = 1; j + 3 <= n; j += 4) {  /* four partial sums: the dot product is latency-bound otherwise */
            s0 += T->jy[j] * T->e[n - j];
            s1 += T->jy[j + 1] * T->e[n - j - 1];
            s2 += T->jy[j + 2] * T->e[n - j - 2];
            s3 += T->jy[j + 3] * T->e[n - j - 3];
        }
        for (; j <= n; j++) s0 += T->jy[j] * T->e[n - j];
        T->e[n] = -((s0 + s1) + (s2 + s3)) * INV[n];
        T->c[n] = T->S * T->e[n];
    }
    if (nc > T->n) T->n = nc;
}

/* Euler-Maclaurin end at index n for g0 = S(r+ux), g1 = u f(r+ux), g2 = u^2 f'(r+ux):
 * J = integral from n to infinity, H = g(n)/2, K = sum_p B_2p/(2p) g^_{2p-1} (Taylor coefficients in
 * u - n: g0^_j = c_j, g1^_j = -(n (j+1) c_{j+1} + j c_j)/x,
 * g2^_j = -(n^2 (j+1)(j+2) c_{j+2} + 2n j(j+1) c_{j+1} + (j-1) j c_j)/x^2, as f = -S', f' = -S'').
 * The sum over p stops after two consecutive g0 terms below ACME_STOP of J0 + H0 (the same p whatever
 * is wanted): a node far from the branch point of S (a >> x) with a slowly varying hazard needs a few
 * terms, and its coefficients are computed only that far. want = 0: g0 only. */
static void em_end(const renewal *R, double r, double x, double n, int want, double *J, double *H, double *K) {
    const acme_failure *f = R->f;
    double a = r + n * x, z = pow(a / f->lam, f->k), I, ix = 1.0 / x, k0 = 0.0, k1 = 0.0, k2 = 0.0;
    double sc0;
    int p, small_prev = 0;
    wb_series T;
    taylor_init(&T, f->k, z, x / a);
    I = f->lam / f->k * upper_gamma(1.0 / f->k, z, R->gk);
    J[0] = I * ix;
    H[0] = 0.5 * T.c[0];
    sc0 = J[0] + H[0];
    for (p = 1; p <= EM_P; p++) {
        int j = 2 * p - 1, small;
        double B = BERN[p - 1] * INV[2 * p], t0;
        const double *c = T.c;
        taylor_upto(&T, want ? j + 3 : j + 1);
        t0 = B * c[j];
        k0 += t0;
        small = fabs(t0) <= ACME_STOP * sc0;
        if (want) {
            k1 += B * (n * (j + 1) * c[j + 1] + j * c[j]);
            k2 += B * (n * n * (j + 1) * (j + 2) * c[j + 2] + 2.0 * n * j * (j + 1) * c[j + 1] + (j - 1) * j * c[j]);
        }
        if (small && small_prev) break;
        small_prev = small;
    }
    K[0] = k0;
    if (want) {  /* c_1, c_2 are known: the loop asked for j + 3 >= 4 coefficients */
        double S = T.c[0], fa = -T.c[1] * ix, wv = (a - r) * S + I;
        J[1] = wv * ix * ix;
        J[2] = (-(a - r) * (a - r) * fa - 2.0 * wv) * ix * ix * ix;
        H[1] = -0.5 * n * T.c[1] * ix;
        H[2] = -n * n * T.c[2] * ix * ix;
        K[1] = -k1 * ix;
        K[2] = -k2 * ix * ix;
    } else {
        J[1] = J[2] = H[1] = H[2] = K[1] = K[2] = 0.0;
    }
}

static void weibull_sums(const renewal *R, double r, double x, int want, double *acc) {
    const acme_failure *f = R->f;
    double k = f->k, lam = f->lam, J0[3], H0[3], K0[3], J1[3], H1[3], K1[3];
    long i = 1;
    int q;
    acc[0] = acc[1] = acc[2] = 0.0;
    for (;;) {
        double t = r + (double)i * x, z = pow(t / lam, k), s = exp(-z), h = k * z / t, di = (double)i;
        if (t >= ACME_EM_DMIN * x && (x * h <= ACME_EM_EPS || k > 1.0) && i <= ACME_NCAP) break;
        acc[0] += s;
        acc[1] += di * (h * s);
        acc[2] += di * di * (((k - 1.0) * h / t - h * h) * s);
        if (s <= ACME_STOP * acc[0] || i > ACME_NCAP) return;
        i++;
    }
    if (k <= 1.0) {
        em_end(R, r, x, (double)i, want, J0, H0, K0);
        for (q = 0; q < 3; q++) acc[q] = acc[q] + J0[q] + H0[q] - K0[q];
        return;
    } else {
        double t1 = lam * pow(ACME_EM_EPS * lam / (k * x), 1.0 / (k - 1.0));
        double n1 = floor((t1 - r) / x);
        if (n1 > 1e15) n1 = 1e15;
        if (n1 > (double)i + 1.0 &&
            pow((r + n1 * x) / lam, k) - pow((r + (double)i * x) / lam, k) > ACME_TAIL_NEGLIGIBLE) {
            /* S(t1) < 1e-20 S(a): what lies beyond t1 is negligible, the range is [i, infinity) */
            em_end(R, r, x, (double)i, want, J0, H0, K0);
            for (q = 0; q < 3; q++) acc[q] = acc[q] + J0[q] + H0[q] - K0[q];
            return;
        }
        if (n1 > (double)i + 1.0) {
            em_end(R, r, x, (double)i, want, J0, H0, K0);
            em_end(R, r, x, n1, want, J1, H1, K1);
            for (q = 0; q < 3; q++) acc[q] += (J0[q] - J1[q]) + (H0[q] + H1[q]) + (K1[q] - K0[q]);
            i = (long)n1 + 1;
        }
        for (; i <= ACME_NCAP; i++) {
            double t = r + (double)i * x, z = pow(t / lam, k), s = exp(-z), h = k * z / t, di = (double)i;
            acc[0] += s;
            acc[1] += di * (h * s);
            acc[2] += di * di * (((k - 1.0) * h / t - h * h) * s);
            if (s <= ACME_STOP * acc[0]) break;
        }
    }
}

/* ---------------------------------------------------------------- piecewise-constant hazard */

/* sum_{m<c} q^m, m q^m, m^2 q^m with q = exp(-delta), omq = 1 - q and rq = 1 / omq (given, one division
 * per piece); c < 0 means infinity */
static void geometric_sums(double delta, double omq, double rq, double c, double *A, double *B, double *D) {
    double q = 1.0 - omq;
    if (c < 0) {
        *A = rq;
        *B = q * rq * rq;
        *D = q * (1.0 + q) * (rq * rq * rq);
    } else if (delta == 0.0) {
        *A = c;
        *B = 0.5 * c * (c - 1.0);
        *D = (c - 1.0) * c * (2.0 * c - 1.0) / 6.0;
    } else if (c * delta < 0.05 && c <= 4096.0) {  /* avoid cancellation: sum directly */
        double sa = 0.0, sb = 0.0, sd = 0.0, qq = exp(-delta), qm = 1.0;
        long m, ci = (long)c;
        for (m = 0; m < ci; m++) {
            sa += qm;
            sb += (double)m * qm;
            sd += (double)m * (double)m * qm;
            qm *= qq;
        }
        *A = sa;
        *B = sb;
        *D = sd;
    } else {
        double em = expm1(-c * delta), qc = 1.0 + em;
        *A = -em * rq;
        *B = (*A - 1.0 - (c - 1.0) * qc) * rq;
        *D = (2.0 * (*B) - *A + 1.0 - (c - 1.0) * (c - 1.0) * qc) * rq;
    }
}

/* first index i >= 1 with r + i x >= b */
static double first_index_at(double r, double x, double b) {
    double i = ceil((b - r) / x);
    if (i < 1.0) i = 1.0;
    while (i > 1.0 && r + (i - 1.0) * x >= b) i -= 1.0;
    while (r + i * x < b) i += 1.0;
    return i;
}

/* All restart nodes at once, piece by piece (nodes sorted by r). In piece j node q has the terms
 * i in [ilo_q, ihi_q) (ilo_q the first index with r_q + i x >= b_j), S(r_q + i x) = S_lo,q exp(-h_j x)^(i-ilo_q),
 * a geometric series summed in closed form with f = h_j S, f' = -h_j^2 S. Consecutive nodes with the same
 * (ilo, ihi) share the series and S_lo,q = S_lo,g exp(-h_j (r_q - r_g)) (r_g the first node of the group),
 * the ratio a running product of the per-scenario factors u: one exp and one geometric series per group
 * and piece (the nodes' indices change by at most one per x of r), a multiply-add per node.
 * Stops before piece j once S(b_j) wsum / (1 - exp(-hmin_j x)) bounds the rest below ACME_STOP of the sum. */
static void piecewise_sums_all(renewal *R, double x, double *acc) {
    const acme_failure *f = R->f;
    const double *r = R->r, *w = R->w;
    double *nxt = R->nxt;
    int j, q, Q = R->Q, m = f->m, qe = 0;
    acc[0] = acc[1] = acc[2] = 0.0;
    for (q = 0; q < Q; q++) nxt[q] = 1.0;  /* b_0 = 0: every node starts at i = 1 */
    for (j = 0; j < m; j++) {
        double hj = f->h[j], bj = f->b[j], hi_b = (j < m - 1) ? f->b[j + 1] : INFINITY;
        double gilo = -1.0, gihi = -1.0, rg = 0.0, Wg = 0.0, prod = 1.0, ihi = -1.0, rq;
        if (j > 0 && R->hmin[j] > 0 && R->SH[j] * R->wsum <= ACME_STOP * acc[0] * -expm1(-R->hmin[j] * x)) break;
        /* nodes with r + x >= b_{j+1} have no term in piece j (first index 1 at both ends; nxt stays 1):
         * only the prefix q < qe (r ascending) is visited */
        while (qe < Q && r[qe] + x < hi_b) qe++;
        if (qe == 0) continue;
        R->omq[j] = -expm1(-hj * x);
        rq = 1.0 / R->omq[j];
        for (q = 0; q <= qe; q++) {
            double ilo = 0.0;
            if (q < qe) {
                ilo = nxt[q];
                if (j < m - 1) {  /* first index at b_{j+1}: non-increasing in q */
                    ihi = (q == 0) ? first_index_at(r[0], x, hi_b) : ihi;
                    while (ihi > 1.0 && r[q] + (ihi - 1.0) * x >= hi_b) ihi -= 1.0;
                    nxt[q] = ihi;
                }
            }
            if (q == qe || ilo != gilo || (j < m - 1 && ihi != gihi)) {  /* flush the group */
                if (gilo > 0.0 && Wg > 0.0 && (j == m - 1 || gihi > gilo)) {
                    double c = (j < m - 1) ? gihi - gilo : -1.0, A, B, D;
                    double S = Wg * exp(-(f->H[j] + hj * (rg + gilo * x - bj)));
                    geometric_sums(hj * x, R->omq[j], rq, c, &A, &B, &D);
                    acc[0] += S * A;
                    acc[1] += hj * S * (gilo * A + B);
                    acc[2] += -hj * hj * S * (gilo * gilo * A + 2.0 * gilo * B + D);
                }
                if (q == qe) break;
                gilo = ilo;
                gihi = ihi;
                rg = r[q];
                prod = 1.0;
                Wg = w[q];
            } else {
                prod *= R->u[(size_t)j * Q + q];
                Wg += w[q] * prod;
            }
        }
    }
}

/* ---------------------------------------------------------------- renewal terms */

/* sort the nodes by r (insertion sort, Q small), drop zero weights, I(r) and U; buffers of Q */
static void renewal_init(renewal *R, const acme_failure *f, double C, const double *rn, const double *rw,
                         int Q, double *buf) {
    int q, n = 0, j;
    R->f = f;
    R->C = C;
    R->r = buf;
    R->w = buf + Q;
    R->I = buf + 2 * Q;
    R->hmin = buf + 3 * Q;
    R->omq = R->hmin + (f->family == ACME_PIECEWISE ? f->m : 1);
    R->stop = R->omq + (f->family == ACME_PIECEWISE ? f->m : 1);
    R->SH = R->stop + (f->family == ACME_PIECEWISE ? f->m : 1);
    R->nxt = R->SH + (f->family == ACME_PIECEWISE ? f->m : 1);
    R->u = R->nxt + Q;
    R->T = R->u + (size_t)Q * (f->family == ACME_PIECEWISE ? f->m : 1);
    R->cbuf = R->T + (f->family == ACME_PIECEWISE ? f->m : 1);
    R->cp = 0;
    R->cn = 0;
    R->evals = 0;
    R->gk = (f->family == ACME_WEIBULL) ? tgamma(1.0 / f->k) : 0.0;
    for (q = 0; q < Q; q++) {
        double r = rn[q], w = rw[q];
        if (!(w > 0)) continue;
        j = n;
        while (j > 0 && R->r[j - 1] > r) {
            R->r[j] = R->r[j - 1];
            R->w[j] = R->w[j - 1];
            j--;
        }
        R->r[j] = r;
        R->w[j] = w;
        n++;
    }
    R->Q = n;
    if (f->family == ACME_PIECEWISE) {
        double hm = INFINITY;
        int m = f->m;
        for (j = m - 1; j >= 0; j--) {
            if (f->h[j] < hm) hm = f->h[j];
            R->hmin[j] = hm;
            R->SH[j] = exp(-f->H[j]);
            if (j == m - 1) R->T[j] = R->SH[j] / f->h[j];
            else R->T[j] = R->T[j + 1] + ((f->h[j] > 0) ? -R->SH[j] * expm1(-f->h[j] * (f->b[j + 1] - f->b[j])) / f->h[j]
                                                       : R->SH[j] * (f->b[j + 1] - f->b[j]));
        }
        for (j = 0; j < m; j++) R->u[(size_t)j * n] = 1.0;
        for (q = 1; q < n; q++)
            for (j = 0; j < m; j++) R->u[(size_t)j * n + q] = exp(-f->h[j] * (R->r[q] - R->r[q - 1]));
    }
    R->wsum = 0.0;
    R->G0 = 0.0;
    R->U = 0.0;
    for (q = 0; q < n; q++) {
        double S;
        R->I[q] = surv_tail(R, R->r[q], &S);
        R->U += R->w[q] * R->I[q];
        R->wsum += R->w[q];
        R->G0 += R->w[q] * S;
    }
}

/* Weibull: the restart nodes r_0 <= ... <= r_{p-1} within ACME_CLUSTER_DELTA (r_0 + x) of the least
 * are summed as the ACME_CLUSTER_N-point Gauss rule of their measure sum_q w_q delta(r_q) (quadrature.c:
 * exact for polynomials of degree < 2 ACME_CLUSTER_N). u -> sum_i S(u + i x) is analytic for u > -x (S
 * has its branch point at 0), at (1 + 2 / DELTA) half-widths of the cluster from its centre: the rule's
 * error is ~(2 + 4 / DELTA)^(-2 N) = 5e-16 of the cluster's share of E[N] and of its derivatives. A
 * restart law with mass near 0 (log-normal, exponential) has many such nodes of small weight: they cost
 * one node each otherwise. The rule of the last prefix is kept (cp, cn). */
static size_t cluster_scratch(int Q) {
    return (size_t)Q * (ACME_CLUSTER_N + 2) + 3 * (size_t)(ACME_CLUSTER_N + 2);
}

static void cluster_rule(renewal *R, int p) {
    acme_lanczos L;
    double *V = R->cbuf, *t = V + (size_t)p * (ACME_CLUSTER_N + 1), *alpha = t + p;
    double *beta = alpha + ACME_CLUSTER_N + 2, *work = beta + ACME_CLUSTER_N + 2;
    acme_lanczos_init(&L, p, R->r, R->w, V, t, alpha, beta);
    R->cn = acme_lanczos_extend(&L, ACME_CLUSTER_N);
    acme_gauss_rule(&L, R->cn, R->cr, R->cw, work);
    R->cp = p;
}

/* Weibull: the number p of leading nodes summed as the cluster rule (cr, cw, cn) for functions of r + x
 * (u -> sum_i S(u + i x), S(u + x), integral of S from u + x), 0 for none */
static int cluster_prefix(renewal *R, double x) {
    const acme_failure *f = R->f;
    double t1, tz, th, h, lim;
    int p = 0;
    if (f->family != ACME_WEIBULL || R->Q < ACME_CLUSTER_MIN) return 0;
    t1 = R->r[0] + x;
    tz = f->lam * pow(ACME_CLUSTER_Z, 1.0 / f->k);
    th = (f->k > 1.0 && tz > t1) ? tz : t1;
    h = f->k / f->lam * pow(th / f->lam, f->k - 1.0);
    lim = R->r[0] + ACME_CLUSTER_DELTA * ((h * t1 > 1.0) ? 1.0 / h : t1);
    while (p < R->Q && R->r[p] <= lim) p++;
    if (p < ACME_CLUSTER_MIN) return 0;
    if (p != R->cp) cluster_rule(R, p);
    return p;
}

/* E[N], dE[N]/dtau, d2E[N]/dtau2 at tau (general families) */
static void renewal_terms(renewal *R, double tau, int want, double *EN, double *d1, double *d2) {
    double x = tau + R->C, acc[3] = {0.0, 0.0, 0.0}, s[3];
    int q, q0 = 0;
    R->evals++;
    if (R->f->family == ACME_PIECEWISE) {
        piecewise_sums_all(R, x, acc);
        *EN = acc[0];
        *d1 = -acc[1];
        *d2 = -acc[2];
        return;
    }
    q0 = cluster_prefix(R, x);
    if (q0 > 0) {
        int k;
        for (k = 0; k < R->cn; k++) {
            weibull_sums(R, R->cr[k], x, want, s);
            acc[0] += R->cw[k] * s[0];
            acc[1] += R->cw[k] * s[1];
            acc[2] += R->cw[k] * s[2];
        }
    }
    for (q = q0; q < R->Q; q++) {
        double w = R->w[q];
        if (w * R->I[q] / x <= ACME_PRUNE * acc[0]) continue;
        weibull_sums(R, R->r[q], x, want, s);
        acc[0] += w * s[0];
        acc[1] += w * s[1];
        acc[2] += w * s[2];
    }
    *EN = acc[0];
    *d1 = -acc[1];
    *d2 = -acc[2];
}

/* phi = tau E[N] and (want) phi', phi'' */
static double phi3(renewal *R, double tau, int want, double *g, double *gp) {
    double en, d1, d2;
    renewal_terms(R, tau, want, &en, &d1, &d2);
    *g = en + tau * d1;
    *gp = 2.0 * d1 + tau * d2;
    return tau * en;
}

/* E[D; D >= tau + C] = sum_q w_q (x S(r_q + x) + I(r_q + x)): bounds phi(s) for all s >= tau. Weibull:
 * the leading nodes by their cluster rule (cluster_prefix), nodes with I(r_q) = 0 (underflow) skipped. */
static double saved_bound(renewal *R, double tau) {
    double x = tau + R->C, s = 0.0, S, I;
    int q, k, p = cluster_prefix(R, x);
    for (k = 0; p > 0 && k < R->cn; k++) {
        I = surv_tail(R, R->cr[k] + x, &S);
        s += R->cw[k] * (x * S + I);
    }
    for (q = p; q < R->Q; q++) {
        if (R->I[q] == 0.0) continue;
        I = surv_tail(R, R->r[q] + x, &S);
        s += R->w[q] * (x * S + I);
    }
    return s;
}

/* G(y) = P(D >= y) = sum_q w_q S(r_q + y), y > 0 (Weibull: as saved_bound) */
static double surv_d(renewal *R, double y) {
    double s = 0.0;
    int q, k, p = cluster_prefix(R, y);
    for (k = 0; p > 0 && k < R->cn; k++) s += R->cw[k] * acme_surv(R->f, R->cr[k] + y);
    for (q = p; q < R->Q; q++)
        if (R->I[q] > 0.0) s += R->w[q] * acme_surv(R->f, R->r[q] + y);
    return s;
}

/* a point beyond which the failure-time density decreases: the Weibull mode (k > 1), else 0;
 * piecewise: the last break where the hazard increases */
static double density_mode(const acme_failure *f) {
    if (f->family == ACME_WEIBULL) return (f->k > 1.0) ? f->lam * pow((f->k - 1.0) / f->k, 1.0 / f->k) : 0.0;
    if (f->family == ACME_PIECEWISE) {
        int j;
        for (j = f->m - 1; j >= 1; j--)
            if (f->h[j] > f->h[j - 1]) return f->b[j];
    }
    return 0.0;
}

/* ---------------------------------------------------------------- optimum */

static double daly_interval(double C, double M) {
    double r = C / (2.0 * M);
    return (C < 2.0 * M) ? sqrt(2.0 * C * M) * (1.0 + sqrt(r) / 3.0 + r / 9.0) - C : M;
}

/* safeguarded Newton on phi' = 0 from t within [lo, hi]. Returns the last point evaluated, *ph = phi
 * there (so E[T] at the result needs no further evaluation) and *pp = phi'' there; the iteration stops
 * when the next step would be below ACME_NEWTON_DONE relative (quadratic convergence: the point is then
 * within ~1e-9 of the root, E[T] within ~1e-18). */
static double local_max(renewal *R, double t, double lo, double hi, double *ph, double *pp) {
    double gmin = lo, gmax = hi, g, gp, tn;
    int lo_known = 0, hi_known = 0, it;
    *ph = 0.0;
    *pp = 0.0;
    for (it = 0; it < 200; it++) {
        *ph = phi3(R, t, 2, &g, &gp);
        *pp = gp;
        if (g == 0.0) return t;
        if (g > 0) {
            if (t >= gmax) return t;
            lo = t;
            lo_known = 1;
        } else {
            if (t <= gmin) return t;
            hi = t;
            hi_known = 1;
        }
        tn = (gp < 0) ? t - g / gp : NAN;
        if (!(lo < tn && tn < hi)) {
            if (lo_known && hi_known) tn = sqrt(lo * hi);
            else if (g > 0) tn = (4.0 * t < gmax) ? 4.0 * t : gmax;
            else tn = (0.25 * t > gmin) ? 0.25 * t : gmin;
        }
        if (fabs(tn - t) <= ACME_NEWTON_DONE * t || (lo_known && hi_known && hi - lo <= 4.0 * DBL_EPSILON * hi))
            return t;
        t = tn;
    }
    return t;
}

/* Relative peak-to-peak size of the ripple of phi near tau under a piecewise hazard, and the shortest
 * ripple period in tau among the breaks that matter (*period, seconds). The function u -> S(r + u x)
 * has a kink where r + u x crosses a break b_j (its slope jumps by x S(b_j) |h_j - h_{j-1}|); in the
 * Euler-Maclaurin form of sum_i S(r + i x) a kink at u0 adds (B2({u0}) / 2) times that jump, whose range
 * over the fractional part {u0} is 1/8: so phi = tau E[N] differs from a smooth function of tau by at
 * most tau x / 8 sum_j |h_j - h_{j-1}| S(b_j) P(R + x < b_j), with period x^2 / (b_j - r) in tau. */
static double ripple(const renewal *R, double tau, double ph, double *period) {
    const acme_failure *f = R->f;
    double x = tau + R->C, amp = 0.0, ignored = 0.0;
    int j, q, n = 0;
    *period = INFINITY;
    if (f->family != ACME_PIECEWISE || !(ph > 0)) return 0.0;
    for (j = 1; j < f->m; j++) {  /* a_j into omq (scratch until the next evaluation), amp = sum */
        double dh = fabs(f->h[j] - f->h[j - 1]), Wj = 0.0;
        for (q = 0; q < R->Q && R->r[q] + x < f->b[j]; q++) Wj += R->w[q];
        R->omq[j] = tau * x * dh * R->SH[j] * Wj / (8.0 * ph);
        amp += R->omq[j];
    }
    /* the ripples of the smallest breaks, together below ACME_RIPPLE_IGNORE, do not set the period: a
     * local maximum they make is within their size of the point sampled near it */
    for (;;) {
        int jm = -1;
        for (j = 1; j < f->m; j++)
            if (R->omq[j] >= 0.0 && (jm < 0 || R->omq[j] < R->omq[jm])) jm = j;
        if (jm < 0 || ignored + R->omq[jm] > ACME_RIPPLE_IGNORE) break;
        ignored += R->omq[jm];
        R->omq[jm] = -1.0;
        n++;
    }
    for (j = 1; j < f->m; j++) {
        if (R->omq[j] > 0.0) {
            double P = x * x / (f->b[j] - R->r[0]);
            if (P < *period) *period = P;
        }
    }
    (void)n;
    return amp;
}

/* Under a piecewise hazard phi has local maxima a ripple period apart near the best one (see ripple).
 * The smooth part of phi drops by kappa d^2 / 2 (relative) at tb (1 + d), with kappa from the leading
 * terms phi ~ tau U / (tau + C) - tau G0 / 2 (kappa = 2 U C tb^2 / ((tb + C)^3 phi); phi'' at tb itself
 * carries the ripple's curvature): so only |d| <= sqrt(2 amp / kappa) can hold a better maximum. Sample
 * phi there at a quarter of the shortest ripple period (at most ACME_RIPPLE_K points a side), run Newton
 * from the two best sampled local maxima and, on each side of tb, from the first of 1/32, 1/16, ...,
 * 1/2 of a step where phi' points away from tb (a kink next to tb splits its maximum in two), and search again
 * around a better point found beyond half the window. Returns the best point, *best = phi there. */
static double ripple_search(renewal *R, double tb, double *best, double gmin, double gmax) {
    double ph[2 * ACME_RIPPLE_K + 1];
    int round;
    for (round = 0; round < 3; round++) {
        double period, amp = ripple(R, tb, *best, &period), x = tb + R->C, kappa, win, step, t0 = tb;
        double cand[2] = {0.0, 0.0}, cph[2] = {-1.0, -1.0}, moved = 0.0;
        int K, k, c, probed[2] = {0, 0};
        if (!(amp > ACME_RIPPLE_SMALL) || !isfinite(period)) return tb;
        kappa = 2.0 * R->U * R->C * tb * tb / (x * x * x * *best);
        win = (kappa * ACME_RIPPLE_WIN * ACME_RIPPLE_WIN > 2.0 * amp) ? sqrt(2.0 * amp / kappa) : ACME_RIPPLE_WIN;
        step = 0.25 * period / tb;
        K = (int)ceil(win / step);
        if (K > ACME_RIPPLE_K) {
            K = ACME_RIPPLE_K;
            step = win / K;
        }
        for (k = -K; k <= K; k++) {
            double t = t0 * (1.0 + k * step), g, gp;
            ph[k + K] = (k == 0) ? *best : (t > gmin && t < gmax) ? phi3(R, t, 0, &g, &gp) : -1.0;
        }
        for (k = -K; k <= K; k++) {  /* the two best sampled local maxima other than tb */
            double v = ph[k + K];
            if (k == 0 || !(v > 0) || (k > -K && ph[k + K - 1] > v) || (k < K && ph[k + K + 1] > v)) continue;
            if (v > cph[0]) {
                cph[1] = cph[0];
                cand[1] = cand[0];
                cph[0] = v;
                cand[0] = t0 * (1.0 + k * step);
            } else if (v > cph[1]) {
                cph[1] = v;
                cand[1] = t0 * (1.0 + k * step);
            }
        }
        for (c = 0; c < 2 + 2 * ACME_RIPPLE_NPROBE; c++) {
            /* c < 2: the sampled maxima; then probes on each side of t0 at 1/32, ..., 1/2 of a step: a
             * kink next to t0 can split its maximum, and phi' there still points away from t0 */
            int side = (c - 2) / ACME_RIPPLE_NPROBE, level = (c - 2) % ACME_RIPPLE_NPROBE;
            double t2, p2, pp2, start;
            if (c < 2) {
                if (!(cph[c] > 0)) continue;
                start = cand[c];
            } else {
                double g, gp, off = 0.03125 * (double)(1 << level) * step;
                if (probed[side]) continue;
                start = t0 * (1.0 + (side == 0 ? off : -off));
                if (!(start > gmin && start < gmax)) continue;
                phi3(R, start, 2, &g, &gp);
                if (!((side == 0) ? g > 0 : g < 0)) continue;
                probed[side] = 1;
            }
            t2 = local_max(R, start, gmin, gmax, &p2, &pp2);
            if (p2 > *best) {
                *best = p2;
                tb = t2;
                moved = fabs(t2 / t0 - 1.0);
            }
        }
        if (!(moved > 0.5 * win)) break;
    }
    return tb;
}

/* Below t: E[N](s) = sum_{i>=1} G(i x) <= U / x - G(c) / 2 with U / x = sum_{i>=0} of G's mean over the
 * bin [i x, (i+1) x]: each mean exceeds G((i+1) x) and, where G is convex (beyond ym, the D-density
 * decreasing), by at least (x/2) f_D((i+1) x), which sums to at least G(c) / 2, c = x for ym = 0, else
 * ym + 2x. For s in [lo, t] (x_s <= x_t, G(c_s) >= G(c_t)): phi(s) <= t U / x_t - lo G(c_t) / 2, which
 * is <= best for lo = 2 (t U / x_t - best) / G(c_t). Returns that lo (t when G(c_t) = 0). */
static double down_bound(renewal *R, double t, double ym, double best) {
    double x = t + R->C, gc = surv_d(R, (ym > 0.0) ? ym + 2.0 * x : x);
    return (gc > 0.0) ? 2.0 * (t * R->U / x - best) / gc : t;
}

#define ACME_SHRINK_MAX 0.9170040432046712 /* a bound interval [lo, t] is used when lo <= t / 2^(1/8) */

/* the optimum tau and *best = phi(tau) (evaluated there) */
static double optimize_general(renewal *R, double W, double C, double *best) {
    const acme_failure *f = R->f;
    double gmin = 1e-3 * ((C < f->mean) ? C : f->mean), gmax = 1e3 * f->mean, t0, tb, t, pp;
    double ym = density_mode(f), meff = (R->G0 > 0) ? R->U / R->G0 : f->mean;
    int restart;
    if (gmax > W) gmax = W;
    if (gmin >= gmax) gmin = 0.5 * gmax;
    t0 = (C < meff) ? daly_interval(C, meff) : daly_interval(C, f->mean);
    if (!(t0 >= gmin)) t0 = gmin;
    if (t0 > gmax) t0 = gmax;
    tb = local_max(R, t0, gmin, gmax, best, &pp);
    for (restart = 0; restart < 8; restart++) {
        double better = -1.0, t2, p2, pp2, g, gp;
        t = tb * ROOT2;
        while (t < gmax) {
            /* the bounds hold for every s >= t, t included: checked before phi(t) is evaluated */
            double x = t + C, e3 = saved_bound(R, t), ph, nxt, jump;
            if (e3 <= *best || (x >= ym && e3 - 0.5 * x * surv_d(R, ym + 2.0 * x) <= *best)) break;
            ph = phi3(R, t, 0, &g, &gp);
            if (ph > *best) { better = t; break; }
            jump = (ph > 0) ? *best / ph : INFINITY;
            nxt = (ph > 0) ? t * ((ROOT2 > jump) ? ROOT2 : jump) : gmax;
            if (nxt >= gmax && t * jump < gmax) {
                if (phi3(R, gmax, 0, &g, &gp) > *best) better = gmax;
                break;
            }
            t = nxt;
        }
        t = tb / ROOT2;
        while (better < 0 && t > gmin && R->U * t / (t + C) > *best) {
            /* no better point on [lo, t]: phi(s) <= t U / x - lo G(c) / 2 there (down_bound) */
            double lo = down_bound(R, t, ym, *best);
            if (lo <= t * ACME_SHRINK_MAX) {
                t = lo;
                continue;
            }
            if (phi3(R, t, 0, &g, &gp) > *best) better = t;
            t /= ROOT2;
        }
        if (better < 0) break;
        t2 = local_max(R, better, gmin, gmax, &p2, &pp2);
        if (!(p2 > *best)) break;
        tb = t2;
        *best = p2;
        pp = pp2;
    }
    if (tb > gmin && tb < gmax) tb = ripple_search(R, tb, best, gmin, gmax);
    return tb;
}

/* ---------------------------------------------------------------- exponential */

static double exp_L(const acme_failure *f, const double *rn, const double *rw, int Q) {
    double L = 0.0;
    int q;
    for (q = 0; q < Q; q++) L += rw[q] * exp(-rn[q] / f->M);
    return L;
}

static double exp_dphi(const acme_failure *f, double tau, double C) {
    double u = tau / f->M, v = (tau + C) / f->M;
    return expm1(v) - u * exp(v);
}

/* Brent's root finder (zeroin, as scipy.optimize.brentq) for exp_dphi on [a, b], fa > 0 > fb. */
static double brent_root(const acme_failure *f, double C, double a, double b, double fa, double fb) {
    double c = a, fc = fa, d = b - a, e = d;
    int it;
    for (it = 0; it < 200; it++) {
        double tol, m, p, q, r, s;
        if ((fb > 0 && fc > 0) || (fb < 0 && fc < 0)) {
            c = a; fc = fa; d = e = b - a;
        }
        if (fabs(fc) < fabs(fb)) {
            a = b; b = c; c = a;
            fa = fb; fb = fc; fc = fa;
        }
        tol = 2.0 * DBL_EPSILON * fabs(b) + 1e-300;
        m = 0.5 * (c - b);
        if (fabs(m) <= tol || fb == 0.0) return b;
        if (fabs(e) >= tol && fabs(fa) > fabs(fb)) {
            s = fb / fa;
            if (a == c) {
                p = 2.0 * m * s;
                q = 1.0 - s;
            } else {
                q = fa / fc;
                r = fb / fc;
                p = s * (2.0 * m * q * (q - r) - (b - a) * (r - 1.0));
                q = (q - 1.0) * (r - 1.0) * (s - 1.0);
            }
            if (p > 0) q = -q; else p = -p;
            if (2.0 * p < 3.0 * m * q - fabs(tol * q) && p < fabs(0.5 * e * q)) {
                e = d;
                d = p / q;
            } else {
                d = m; e = m;
            }
        } else {
            d = m; e = m;
        }
        a = b; fa = fb;
        b += (fabs(d) > tol) ? d : (m > 0 ? tol : -tol);
        fb = exp_dphi(f, b, C);
    }
    return b;
}

/* ---------------------------------------------------------------- entry points */

/* E[T](tau) with its status; R is the scenario's renewal (NULL for the exponential family) */
static double expected_time_one(const acme_failure *f, renewal *R, double tau, double W, double C,
                                const double *rn, const double *rw, int Q, int *status) {
    double te = (tau < W) ? tau : W, et;
    if (C >= f->mean) {
        *status = ACME_DNF_CKPT_GE_MTTF;
        return INFINITY;
    }
    if (f->family == ACME_EXPONENTIAL) {
        et = W * f->M * expm1((te + C) / f->M) / (te * exp_L(f, rn, rw, Q));
    } else {
        double EN, d1, d2;
        renewal_terms(R, te, 0, &EN, &d1, &d2);
        et = (EN > 0.0) ? W * f->mean / (te * EN) : INFINITY;
    }
    if (!isfinite(et) || !(et > 0)) {
        *status = ACME_DNF_NO_PROGRESS;
        return INFINITY;
    }
    *status = ACME_OK;
    return et;
}

static int max_pieces(int family, int P) { return family == ACME_PIECEWISE ? P / 2 : 1; }

/* scratch: H (m) for the failure law, then 4 Q + 5 m + Q m + cluster_scratch(Q) for the renewal */
static double *scratch(int family, int P, int Q) {
    int m = max_pieces(family, P);
    return (double *)malloc(sizeof(double) * ((size_t)m + 4 * (size_t)Q + 5 * (size_t)m + (size_t)Q * m + 1 +
                                              cluster_scratch(Q)));
}

void acme_ckpt_expected_time(int n, const double *tau, const double *work, const double *ckpt,
                             int family, const double *params, int P, const double *r_nodes,
                             const double *r_weights, int Q, double *out_et, int *out_status) {
    int i, m = max_pieces(family, P);
    double *buf = scratch(family, P, Q);
    for (i = 0; i < n; i++) {
        acme_failure f;
        renewal R;
        const double *rn = r_nodes + (size_t)i * Q, *rw = r_weights + (size_t)i * Q;
        if (!buf || acme_failure_init(&f, family, params + (size_t)i * P, P, buf) != 0) {
            out_et[i] = INFINITY;
            out_status[i] = -1;
            continue;
        }
        if (family != ACME_EXPONENTIAL && ckpt[i] < f.mean) renewal_init(&R, &f, ckpt[i], rn, rw, Q, buf + m);
        out_et[i] = expected_time_one(&f, &R, tau[i], work[i], ckpt[i], rn, rw, Q, &out_status[i]);
    }
    free(buf);
}

void acme_ckpt_optimize(int n, const double *work, const double *ckpt, int family,
                        const double *params, int P, const double *r_nodes, const double *r_weights,
                        int Q, double *out_tau, double *out_et, int *out_status) {
    int i, m = max_pieces(family, P);
    double *buf = scratch(family, P, Q);
    for (i = 0; i < n; i++) {
        acme_failure f;
        renewal R;
        const double *rn = r_nodes + (size_t)i * Q, *rw = r_weights + (size_t)i * Q;
        double t;
        if (!buf || acme_failure_init(&f, family, params + (size_t)i * P, P, buf) != 0) {
            out_tau[i] = NAN;
            out_et[i] = INFINITY;
            out_status[i] = -1;
            continue;
        }
        if (ckpt[i] >= f.mean) {
            out_tau[i] = NAN;
            out_et[i] = INFINITY;
            out_status[i] = ACME_DNF_CKPT_GE_MTTF;
            continue;
        }
        if (family == ACME_EXPONENTIAL) {
            double hi = (f.M < work[i]) ? f.M : work[i], fhi = exp_dphi(&f, hi, ckpt[i]);
            t = (fhi >= 0.0) ? hi : brent_root(&f, ckpt[i], 0.0, hi, exp_dphi(&f, 0.0, ckpt[i]), fhi);
        } else {
            double best;
            renewal_init(&R, &f, ckpt[i], rn, rw, Q, buf + m);
            t = optimize_general(&R, work[i], ckpt[i], &best);
            /* E[T] = W E[F] / (tau E[N]) from the evaluation at t (as expected_time_one computes it) */
            out_et[i] = (best > 0.0) ? work[i] * f.mean / best : INFINITY;
            out_status[i] = (isfinite(out_et[i]) && out_et[i] > 0) ? ACME_OK : ACME_DNF_NO_PROGRESS;
            if (out_status[i] != ACME_OK) out_et[i] = INFINITY;
            out_tau[i] = (out_status[i] == ACME_OK) ? t : NAN;
            continue;
        }
        out_et[i] = expected_time_one(&f, &R, t, work[i], ckpt[i], rn, rw, Q, &out_status[i]);
        out_tau[i] = (out_status[i] == ACME_OK) ? t : NAN;
    }
    free(buf);
}

/* (E[F], E[N], dE[N]/dtau, d2E[N]/dtau2) at one tau: exposed for testing against the NumPy twin. */
void acme_ckpt_terms(double tau, double ckpt, int family, const double *params, int P,
                     const double *r_nodes, const double *r_weights, int Q, double *out4) {
    acme_failure f;
    int m = max_pieces(family, P);
    double *buf = scratch(family, P, Q);
    out4[0] = out4[1] = out4[2] = out4[3] = NAN;
    if (buf && acme_failure_init(&f, family, params, P, buf) == 0) {
        out4[0] = f.mean;
        if (family == ACME_EXPONENTIAL) {
            double L = exp_L(&f, r_nodes, r_weights, Q), x = tau + ckpt, em = expm1(x / f.M), ex = exp(x / f.M);
            out4[1] = L / em;
            out4[2] = -L * ex / (f.M * em * em);
            out4[3] = L * ex * (ex + 1.0) / (f.M * f.M * em * em * em);
        } else {
            renewal R;
            renewal_init(&R, &f, ckpt, r_nodes, r_weights, Q, buf + m);
            renewal_terms(&R, tau, 2, &out4[1], &out4[2], &out4[3]);
        }
    }
    free(buf);
}
