/*
 * Renewal sums of the checkpoint-interval kernel (checkpoint.c has the model, the optimiser and the
 * entry points; renewal.h the interface; the piecewise-hazard sums are in renewal_piecewise.c): for one scenario and x = tau + C,
 * E[N](tau) = sum_q w_q sum_{i>=1} S(r_q + i x) and its first two derivatives in tau.
 *
 * Sums (per restart node r, x = tau + C): A0 = sum_i S(r + i x), A1 = sum_i i f(r + i x),
 * A2 = sum_i i^2 f'(r + i x), so E[N] = sum_q w_q A0, E[N]' = -sum w A1, E[N]'' = -sum w A2.
 *   Weibull: nodes are visited in increasing r; a node whose bound w I(r)/x on its share of E[N] (I(r) = integral
 *   of S from r; S decreasing) is below 1e-18 of the running sum is skipped; the nodes within 0.05 min(r_0 + x,
 *   1/h) of the least r_0 (a log-normal or exponential restart law has many of small weight near 0) are
 *   summed as their 4-point Gauss rule (cluster_rule, quadrature.c; error ~5e-16 of their share).
 *   Piecewise-constant hazard: closed form piece by piece (geometric series; f = h S, f' = -h^2 S), all
 *   nodes of a piece together: nodes with the same first and last index in the piece share one exp and
 *   one geometric series (piecewise_sums_groups: groups from the runs of each index at each break, a
 *   group's weight from a per-scenario table; piecewise_sums_nodes node by node when that table would
 *   underflow); stops once S(b_j) / (1 - exp(-h_min x)) bounds the rest below 1e-17 of the sum.
 *   Weibull: direct terms until t >= 5 x (distance to the branch point t = 0 of S) and x h(t) <= 1
 *   (relative change per step), then Euler-Maclaurin through the B20 term (remainder ~2 zeta(22)
 *   (eps/2 pi)^22 of the sum, eps the change per step) with the integral from the upper incomplete gamma
 *   function and the derivatives from the Taylor series of S(a + v x) = S(a) exp(-y(v)),
 *   y(v) = z((1 + v x/a)^k - 1) (recurrence n e_n = -sum_j j y_j e_{n-j}); for shape k > 1 the hazard
 *   grows, so that range ends where x h(t) = 1 and the rest is summed term by term until a term is
 *   below 1e-17 of the sum (a range shorter than ACME_EM_MINRUN terms is summed term by term too). A
 *   node's sums also stop at a term or correction below 1e-17 of the E[N] summed so far over its weight:
 *   the error budget is relative to E[N], not to each node's share (half of the nodes of a log-normal
 *   restart law carry below 1e-2 of E[N]). Agrees with plain summation of millions of terms to ~1e-12
 *   (tests).
 * The original grid kernel (removed) summed term by term while x h(t) > 0.02 - hundreds of terms per node
 * for k < 1 - with Euler-Maclaurin through B4.
 */
#include <float.h>
#include "renewal.h"

#define ACME_EM_EPS 1.0     /* Euler-Maclaurin once x*h(t) (relative change per step) is below this */
#define ACME_EM_DMIN 5.0    /* ... and t >= DMIN x (away from the branch point of S at t = 0) */
#define ACME_NCAP 10000000L /* safety cap on direct terms */
#define ACME_PRUNE 1e-18    /* skip a restart node whose bound is below this fraction of E[N] */
#define ACME_EM_MINRUN 24.0 /* k > 1: Euler-Maclaurin between i and n1 only when n1 - i exceeds this */
#define ACME_TAIL_NEGLIGIBLE 46.0  /* k > 1: z(t1) - z(a) beyond this (S ratio < 1e-20): no upper end */
#define EM_P 10
#define CLUSTER_SLOT (2 * ACME_CLUSTER_N + 1) /* a cached cluster rule (cluster_rule): cn (0: not yet), cr, cw */
#define NTAY (2 * EM_P + 2)

/* B_2 .. B_20 */
static const double BERN[EM_P] = {1.0 / 6.0, -1.0 / 30.0, 1.0 / 42.0, -1.0 / 30.0, 5.0 / 66.0,
                                  -691.0 / 2730.0, 7.0 / 6.0, -3617.0 / 510.0, 43867.0 / 798.0,
                                  -174611.0 / 330.0};

/* Gamma(a, z) (not regularised) with ga = Gamma(a): acme_upper_gamma_with of acme_solver.h */
#define upper_gamma acme_upper_gamma_with

/* integral of S from a and (*S) S(a); piecewise from the per-scenario table T_j = integral from b_j:
 * S(a) (1 - exp(-h_j (b_{j+1} - a))) / h_j + T_{j+1} on piece j (two transcendentals, no loop) */
double ckpt_surv_tail(const renewal *R, double a, double *S) {
    const acme_failure *f = R->f;
    if (f->family == ACME_WEIBULL) {
        double z = pow(a / f->lam, f->k);
        *S = exp(-z);
        return f->lam / f->k * acme_upper_gamma_pre(1.0 / f->k, z, R->gk, *S * (a / f->lam));
    } else {
        int j = acme_piece(f, a), m = f->m;
        double s = exp(-(f->H[j] + f->h[j] * (a - f->b[j]))), hj = f->h[j];
        *S = s;
        if (j == m - 1) return s / hj;
        return ((hj > 0) ? -s * expm1(-hj * (f->b[j + 1] - a)) / hj : s * (f->b[j + 1] - a)) + R->T[j + 1];
    }
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

static void taylor_init(wb_series *T, double k, double z, double S, double rho) {
    T->k = k;
    T->z = z;
    T->rho = rho;
    T->S = S;
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
static void em_end(const renewal *R, double r, double x, double n, double z, double Sz, int want, double tol,
                   double *J, double *H, double *K) {
    const acme_failure *f = R->f;
    double a = r + n * x, I, ix = 1.0 / x, k0 = 0.0, k1 = 0.0, k2 = 0.0;
    double sc0;
    int p, small_prev = 0;
    wb_series T;
    taylor_init(&T, f->k, z, Sz, x / a);
    I = f->lam / f->k * acme_upper_gamma_pre(1.0 / f->k, z, R->gk, T.S * (a / f->lam));  /* e^-z z^(1/k) = S a / lam */
    J[0] = I * ix;
    H[0] = 0.5 * T.c[0];
    sc0 = ACME_STOP * (J[0] + H[0]);
    if (tol > sc0) sc0 = tol;
    for (p = 1; p <= EM_P; p++) {
        int j = 2 * p - 1, small;
        double B = BERN[p - 1] * INV[2 * p], t0;
        const double *c = T.c;
        taylor_upto(&T, want ? j + 3 : j + 1);
        t0 = B * c[j];
        k0 += t0;
        small = fabs(t0) <= sc0;
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

static void weibull_sums(const renewal *R, double r, double x, int want, double tol, double *acc) {
    const acme_failure *f = R->f;
    double k = f->k, lam = f->lam, J0[3], H0[3], K0[3], J1[3], H1[3], K1[3];
    long i = 1;
    int q;
    double zi, si;  /* z and S at the first index left to Euler-Maclaurin (em_end's start: computed once) */
    acc[0] = acc[1] = acc[2] = 0.0;
    for (;;) {
        double t = r + (double)i * x, z = pow(t / lam, k), s = exp(-z), h = k * z / t, di = (double)i;
        zi = z;
        si = s;
        if (t >= ACME_EM_DMIN * x && (x * h <= ACME_EM_EPS || k > 1.0) && i <= ACME_NCAP) break;
        acc[0] += s;
        acc[1] += di * (h * s);
        acc[2] += di * di * (((k - 1.0) * h / t - h * h) * s);
        if (s <= ACME_STOP * acc[0] || s <= tol || i > ACME_NCAP) return;
        i++;
    }
    if (k <= 1.0) {
        em_end(R, r, x, (double)i, zi, si, want, tol, J0, H0, K0);
        for (q = 0; q < 3; q++) acc[q] = acc[q] + J0[q] + H0[q] - K0[q];
        return;
    } else {
        double t1 = R->wt1, n1 = floor((t1 - r) / x), z1 = 0.0;
        if (n1 > 1e15) n1 = 1e15;
        if (n1 - (double)i <= ACME_EM_MINRUN) {
            /* a short run to t1 is summed term by term with the rest (cheaper than two Euler-Maclaurin ends) */
        } else if ((z1 = pow((r + n1 * x) / lam, k)) - zi > ACME_TAIL_NEGLIGIBLE) {
            /* S(t1) < 1e-20 S(a): what lies beyond t1 is negligible, the range is [i, infinity) */
            em_end(R, r, x, (double)i, zi, si, want, tol, J0, H0, K0);
            for (q = 0; q < 3; q++) acc[q] = acc[q] + J0[q] + H0[q] - K0[q];
            return;
        } else {
            em_end(R, r, x, (double)i, zi, si, want, tol, J0, H0, K0);
            em_end(R, r, x, n1, z1, exp(-z1), want, tol, J1, H1, K1);
            for (q = 0; q < 3; q++) acc[q] += (J0[q] - J1[q]) + (H0[q] + H1[q]) + (K1[q] - K0[q]);
            i = (long)n1 + 1;
        }
        for (; i <= ACME_NCAP; i++) {
            double t = r + (double)i * x, z = pow(t / lam, k), s = exp(-z), h = k * z / t, di = (double)i;
            acc[0] += s;
            acc[1] += di * (h * s);
            acc[2] += di * di * (((k - 1.0) * h / t - h * h) * s);
            if (s <= ACME_STOP * acc[0] || s <= tol) break;
        }
    }
}

/* ---------------------------------------------------------------- renewal terms */

/* sort the nodes by r (insertion sort, Q small), drop zero weights, I(r) and U; buffers of Q */
void ckpt_renewal_init(renewal *R, const acme_failure *f, double C, const double *rn, const double *rw,
                         int Q, double *buf) {
    int q, n = 0, j;
    R->f = f;
    R->C = C;
    R->r = buf;
    R->w = buf + Q;
    R->I = buf + 2 * Q;
    R->hmin = buf + 3 * Q;
    R->omq = R->hmin + (f->family == ACME_PIECEWISE ? f->m : 1);
    R->SH = R->omq + (f->family == ACME_PIECEWISE ? f->m : 1);
    R->nxt = R->SH + (f->family == ACME_PIECEWISE ? f->m : 1);
    R->u = R->nxt + Q;  /* the table V_j (Q m) or, without it, the factors uq (Q m) */
    R->uq = R->u;
    R->T = R->u + (size_t)Q * (f->family == ACME_PIECEWISE ? f->m : 1);
    R->cbuf = R->T + (f->family == ACME_PIECEWISE ? f->m : 1);
    R->gcache = R->cbuf + ckpt_cluster_scratch(Q);
    R->grouped = 0;
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
    if (f->family == ACME_PIECEWISE)  /* no group cached yet (piecewise_sums_groups) */
        for (j = 0; j < f->m; j++) R->gcache[(size_t)j * CKPT_GROUP_SLOT(n)] = 0.0;
    if (f->family == ACME_WEIBULL) {  /* no cluster rule cached yet (cluster_rule) */
        double *cache = R->cbuf + (size_t)n * (ACME_CLUSTER_N + 2) + 3 * (size_t)(ACME_CLUSTER_N + 2);
        for (q = 0; q <= n; q++) cache[(size_t)q * CLUSTER_SLOT] = 0.0;
    }
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
        /* the table V (piecewise_sums_groups) when no factor of a node that can have terms in piece j
         * (r < b_{j+1}) is below exp(-ACME_GROUP_MAX); in the last piece the nodes beyond are left out
         * (their terms are below exp(-ACME_GROUP_MAX + ACME_GROUP_LAST) of S(b_{m-1}) < 1e-217) */
        R->grouped = (n > 0 && f->h[m - 1] * (f->b[m - 1] - R->r[0]) <= ACME_GROUP_LAST);
        for (j = 0; j < m - 1 && R->grouped; j++)
            for (q = 0; q < n && R->r[q] < f->b[j + 1]; q++)
                if (f->h[j] * (R->r[q] - R->r[0]) > ACME_GROUP_MAX) R->grouped = 0;
        if (R->grouped) {
            for (j = 0; j < m; j++)
                for (q = 0; q < n; q++) {
                    double e = f->h[j] * (R->r[q] - R->r[0]);
                    R->u[(size_t)j * n + q] = (e <= ACME_GROUP_MAX) ? R->w[q] * exp(-e) : 0.0;
                }
        } else {
            for (j = 0; j < m; j++) R->uq[(size_t)j * n] = 1.0;
            for (q = 1; q < n; q++)
                for (j = 0; j < m; j++) R->uq[(size_t)j * n + q] = exp(-f->h[j] * (R->r[q] - R->r[q - 1]));
        }
    }
    R->wsum = 0.0;
    R->G0 = 0.0;
    R->U = 0.0;
    for (q = 0; q < n; q++) {
        double S;
        R->I[q] = ckpt_surv_tail(R, R->r[q], &S);
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
 * one node each otherwise. The rule of the current prefix is in (cp, cr, cw, cn); every prefix's rule is
 * kept once computed (an optimisation asks for a few prefixes, alternately: E[N] at x and the bounds at
 * x and y_m + 2x), so the Lanczos process runs once per prefix and scenario. */
size_t ckpt_cluster_scratch(int Q) {
    return (size_t)Q * (ACME_CLUSTER_N + 2) + 3 * (size_t)(ACME_CLUSTER_N + 2) + (size_t)(Q + 1) * CLUSTER_SLOT;
}

static void cluster_rule(renewal *R, int p) {
    double *slot = R->cbuf + (size_t)R->Q * (ACME_CLUSTER_N + 2) + 3 * (size_t)(ACME_CLUSTER_N + 2) +
                   (size_t)p * CLUSTER_SLOT;
    int k;
    if (slot[0] == 0.0) {
        acme_lanczos L;
        double *V = R->cbuf, *t = V + (size_t)p * (ACME_CLUSTER_N + 1), *alpha = t + p;
        double *beta = alpha + ACME_CLUSTER_N + 2, *work = beta + ACME_CLUSTER_N + 2;
        acme_lanczos_init(&L, p, R->r, R->w, V, t, alpha, beta);
        R->cn = acme_lanczos_extend(&L, ACME_CLUSTER_N);
        acme_gauss_rule(&L, R->cn, R->cr, R->cw, work);
        slot[0] = (double)R->cn;
        for (k = 0; k < R->cn; k++) {
            slot[1 + k] = R->cr[k];
            slot[1 + ACME_CLUSTER_N + k] = R->cw[k];
        }
    } else {
        R->cn = (int)slot[0];
        for (k = 0; k < R->cn; k++) {
            R->cr[k] = slot[1 + k];
            R->cw[k] = slot[1 + ACME_CLUSTER_N + k];
        }
    }
    R->cp = p;
}

/* Weibull: the number p of leading nodes summed as the cluster rule (cr, cw, cn) for functions of r + x
 * (u -> sum_i S(u + i x), S(u + x), integral of S from u + x), 0 for none */
static int cluster_count(const renewal *R, double x) {
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
    return (p < ACME_CLUSTER_MIN) ? 0 : p;
}

int ckpt_cluster_prefix(renewal *R, double x) {
    int p = cluster_count(R, x);
    if (p > 0 && p != R->cp) cluster_rule(R, p);
    return p;
}

/* as ckpt_cluster_prefix, but the current rule (prefix R->cp) is kept when it is no longer than the
 * prefix at x (its nodes lie within the limit at x, so its error bound holds there): the bounds of the
 * guard scan (saved_bound, surv_d, weibull_bound) are taken at x far from the evaluations' and would
 * otherwise each build a new rule (a Lanczos run, 10 % of a Weibull optimisation) */
int ckpt_cluster_prefix_bound(renewal *R, double x) {
    int p = cluster_count(R, x);
    if (p > 0 && R->cp > 0 && R->cp <= p) return R->cp;
    if (p > 0 && p != R->cp) cluster_rule(R, p);
    return p;
}

/* E[N], dE[N]/dtau, d2E[N]/dtau2 at tau (general families) */
void ckpt_renewal_terms(renewal *R, double tau, int want, double *EN, double *d1, double *d2) {
    double x = tau + R->C, acc[3] = {0.0, 0.0, 0.0}, s[3];
    int q, q0 = 0;
    R->evals++;
    if (R->f->family == ACME_PIECEWISE) {
        if (R->grouped) ckpt_piecewise_sums_groups(R, x, want, acc);
        else ckpt_piecewise_sums_nodes(R, x, acc);
        *EN = acc[0];
        *d1 = -acc[1];
        *d2 = -acc[2];
        return;
    }
    /* k > 1: where x h(t) = ACME_EM_EPS (the end of the Euler-Maclaurin range; the same for every node) */
    if (R->f->k > 1.0) R->wt1 = R->f->lam * pow(ACME_EM_EPS * R->f->lam / (R->f->k * x), 1.0 / (R->f->k - 1.0));
    q0 = ckpt_cluster_prefix(R, x);
    if (q0 > 0) {
        int k;
        for (k = 0; k < R->cn; k++) {
            weibull_sums(R, R->cr[k], x, want, ACME_STOP * acc[0] / R->cw[k], s);
            acc[0] += R->cw[k] * s[0];
            acc[1] += R->cw[k] * s[1];
            acc[2] += R->cw[k] * s[2];
        }
    }
    for (q = q0; q < R->Q; q++) {
        double w = R->w[q];
        if (w * R->I[q] / x <= ACME_PRUNE * acc[0]) continue;
        weibull_sums(R, R->r[q], x, want, ACME_STOP * acc[0] / w, s);
        acc[0] += w * s[0];
        acc[1] += w * s[1];
        acc[2] += w * s[2];
    }
    *EN = acc[0];
    *d1 = -acc[1];
    *d2 = -acc[2];
}

/* phi = tau E[N] and (want) phi', phi'' */
double ckpt_phi3(renewal *R, double tau, int want, double *g, double *gp) {
    double en, d1, d2;
    ckpt_renewal_terms(R, tau, want, &en, &d1, &d2);
    *g = en + tau * d1;
    *gp = 2.0 * d1 + tau * d2;
    return tau * en;
}
