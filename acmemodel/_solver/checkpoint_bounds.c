/*
 * Piecewise-constant hazard: the closed-form bounds of the guard scan of the checkpoint-interval optimiser
 * (checkpoint.c): an upper bound on phi(tau) without a renewal sum (midpoint rule), which clears the scan's
 * samples that cannot beat the best point. The NumPy twin is acmemodel/_solver/reference/bounds.py.
 */
#include "renewal.h"

#define ACME_BOUND_MARGIN 1e-12 /* ckpt_piecewise_guard: relative margin over the bound's rounding */
#define ACME_BOUND_EPS 1e-14    /* ... and over the cancellation in S(a) - S(b_{j+1}) (node_tails) */

/* sum_q w_q I(r_q + y), I(a) = integral of S from a (nodes ascending, so the piece j of a rises with q),
 * and with K (K[i] = sum of J_l over the rising breaks l >= i, K[m] = 0) *kk = sum_q w_q K[j_q + 1] (the
 * rising breaks above r_q + y). Grouped sums: w_q S(a) = exp(-(H_j + h_j (r_0 + y - b_j))) V_j[q] (one exp
 * per piece) and w_q I(a) = (w_q S(a) - w_q S(b_{j+1})) / h_j + w_q T_{j+1}, plus ACME_BOUND_EPS of the
 * terms' size for the rounding of the difference (upper = 1: added, else subtracted); a node whose factor
 * underflowed (V = 0), or no table: ckpt_surv_tail. */
static double node_tails(const renewal *R, double y, const double *K, double *kk, int upper) {
    const acme_failure *f = R->f;
    int m = f->m, n = R->Q, q, j = 0, jE = -1;
    double s = 0.0, k = 0.0, err = 0.0, E = 0.0, S;
    for (q = 0; q < n; q++) {
        double a = R->r[q] + y, wq = R->w[q], V, hj, wS;
        while (j < m - 1 && f->b[j + 1] <= a) j++;
        if (K) k += wq * K[j + 1];
        V = R->grouped ? R->u[(size_t)j * n + q] : 0.0;
        hj = f->h[j];
        if (!(V > 0.0) || !(hj > 0.0)) {
            s += wq * ckpt_surv_tail(R, a, &S);
            continue;
        }
        if (j != jE) {
            E = exp(-(f->H[j] + hj * (R->r[0] + y - f->b[j])));
            jE = j;
        }
        wS = E * V;
        if (j == m - 1) {
            s += wS / hj;
            err += wS / hj;
        } else {
            s += (wS - wq * R->SH[j + 1]) / hj + wq * R->T[j + 1];
            err += (wS + wq * R->SH[j + 1]) / hj + wq * R->T[j + 1];
        }
    }
    if (kk) *kk = k;
    return upper ? s + ACME_BOUND_EPS * err : s - ACME_BOUND_EPS * err;
}

/* Piecewise hazard: an upper bound on phi(tau) = tau E[N](tau) without a renewal sum, and *quiet. Per node
 * let g(y) = S(r_q + y), x = tau + C. Midpoint rule on the bins [(i - 1/2) x, (i + 1/2) x]: where g is
 * convex on a bin, x g(i x) <= its integral there. S is convex inside each piece (S'' = h_j^2 S) and at a
 * break where the hazard falls; where it rises the slope of S drops by J_j = (h_j - h_{j-1}) S(b_j), and
 * adding J_j (y - y_j)^+ makes g convex on that bin while the ramp's own midpoint error is at most
 * J_j x^2 / 8. So sum_{i>=1} S(r_q + i x) <= I(r_q + x/2) / x + (x/8) sum_{b_j >= r_q + x/2} J_j, and
 * phi(tau) <= tau sum_q w_q (that) (times 1 + ACME_BOUND_MARGIN). *quiet (only when the bound is below
 * best): with lb = tau sum_q w_q I(r_q + x) / x <= phi(tau) (S decreasing: S(r + i x) is at least its
 * mean over the next bin), ckpt_guard_ratio's test A / phi > 1 - phi / best (A = phi sum_j a_j, as in
 * ripple) is false for every phi in [lb, ub]: phi - phi^2 / best is concave, its minimum at an end. The
 * scan then steps by sqrt 2 without kink probes whatever phi(tau) is. */
double ckpt_piecewise_guard(const renewal *R, double tau, double best, int *quiet) {
    const acme_failure *f = R->f;
    double x = tau + R->C, K[f->m + 1], kink, lb, A = 0.0, W = 0.0, ub, e1, e2; /* C99 VLA: m pieces */
    int q = 0, j;
    *quiet = 0;
    K[f->m] = 0.0;
    for (j = f->m - 1; j >= 1; j--)
        K[j] = K[j + 1] + ((f->h[j] > f->h[j - 1]) ? (f->h[j] - f->h[j - 1]) * R->SH[j] : 0.0);
    K[0] = K[1];
    ub = node_tails(R, 0.5 * x, K, &kink, 1);
    ub = tau * (ub / x + 0.125 * x * kink) * (1.0 + ACME_BOUND_MARGIN);
    if (!(ub < best)) return ub;
    lb = tau * node_tails(R, x, NULL, NULL, 0) / x * (1.0 - 1e-9);
    for (j = 1; j < f->m; j++) {  /* W = P(R + x < b_j), nodes ascending */
        for (; q < R->Q && R->r[q] + x < f->b[j]; q++) W += R->w[q];
        A += tau * x * fabs(f->h[j] - f->h[j - 1]) * R->SH[j] * W / 8.0;
    }
    A *= 1.0 + 1e-9;
    e1 = lb - lb * lb / best;
    e2 = ub - ub * ub / best;
    *quiet = lb > 0.0 && A < ((e1 < e2) ? e1 : e2);
    return ub;
}
