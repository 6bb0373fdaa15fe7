/*
 * Internal interface between the files of the checkpoint-interval kernel (not part of the
 * Python-facing API): the renewal model of one scenario and what each file offers the others.
 * checkpoint_sums.c computes the renewal sums E[N], dE[N]/dtau, d2E[N]/dtau2 (Weibull: direct terms +
 * Euler-Maclaurin; renewal_piecewise.c for a piecewise-constant hazard: geometric series);
 * checkpoint_ascent.c the Newton ascent to a local maximum of phi; checkpoint_ripple.c the ripple search
 * and checkpoint_bounds.c the guard scan's bounds under a piecewise hazard; checkpoint.c runs the
 * optimiser and the entry points on them. Every file includes this header and no other file's
 * declarations, so the calls run one way: checkpoint.c -> ripple, bounds, ascent -> sums -> piecewise. The model and the
 * notation are described at the top of checkpoint.c, the sums at the top of checkpoint_sums.c.
 * Functions shared between the files carry the prefix ckpt_ (external linkage inside the
 * extension only; the other kernel files keep their own static copies under unprefixed names).
 */
#ifndef ACME_RENEWAL_H
#define ACME_RENEWAL_H

#include "acme_solver.h"


#define ACME_STOP 1e-17     /* a renewal sum stops when a term is below this fraction of the sum */
#define ACME_GROUP_MAX 600.0  /* piecewise: group-sum factors exp(-h_j (r_q - r_0)) kept down to exp(-this) */
#define ACME_GROUP_LAST 100.0 /* ... and used when h_{m-1} (b_{m-1} - r_0) <= this */
#define ACME_CLUSTER_DELTA 0.05 /* Weibull: nodes within DELTA (r_0 + x) of the least r_0 ... */
#define ACME_CLUSTER_N 4        /* ... are summed as their Gauss rule of this many points ... */
#define ACME_CLUSTER_MIN 6      /* ... when there are at least this many */
#define ACME_CLUSTER_Z 10.0     /* ... and within DELTA / h of it, h the hazard at t_1 = r_0 + x or (k > 1,
                                 * increasing hazard) at z = (t / lambda)^k = Z if that is later */

/* one scenario: failure law, checkpoint cost and the restart nodes sorted by r with I(r) */
typedef struct {
    const acme_failure *f;
    double C, U, gk;        /* gk = Gamma(1/k) (Weibull) */
    double G0;              /* P(F > R) = sum_q w_q S(r_q) (Daly's interval for U / G0 starts the search) */
    int Q;
    double *r, *w, *I;      /* Q kept nodes (caller buffers) */
    double *hmin;           /* piecewise: least hazard from piece j on (m) */
    double *omq;            /* piecewise, per tau: 1 - exp(-h_j x) (m) */
    double *u;              /* piecewise, grouped: u[j Q + q] = V_j[q] = w_q exp(-h_j (r_q - r_0)) */
    double *uq;             /* ... else (same buffer) uq[j Q + q] = exp(-h_j (r_q - r_{q-1})), uq[j Q] = 1 */
    int grouped;            /* piecewise: the grouped sums with the table V are used (checkpoint_sums.c) */
    double *SH;             /* piecewise: S(b_j) = exp(-H_j) (m) */
    double *T;              /* piecewise: integral of S from b_j (m) */
    double *nxt;            /* piecewise, per tau: first index of each node in the next piece (Q) */
    double wsum;            /* sum of the kept weights */
    double *cbuf;           /* Weibull: Lanczos scratch for the cluster rule (cluster_scratch(Q)) */
    double *gcache;         /* piecewise, grouped: the groups of the last evaluation, CKPT_GROUP_SLOT(Q) a piece */
    double cr[ACME_CLUSTER_N], cw[ACME_CLUSTER_N]; /* ... the rule of the first cp nodes (cn points) */
    int cp, cn;
    double wt1;             /* Weibull k > 1, per tau: t where x h(t) = 1 (checkpoint_sums.c) */
    long evals;
} renewal;

/* integral of S from a and (*S) S(a) (checkpoint_sums.c) */
double ckpt_surv_tail(const renewal *R, double a, double *S);

/* piecewise: doubles of the group cache of one piece (count, node count, then (q0, e, ilo, ihi, G) a group) */
#define CKPT_GROUP_SLOT(Q) (2 + 5 * (size_t)(Q))

/* sort the nodes by r, drop zero weights, I(r), U and G0; buf holds 4 Q + 5 m + Q m + ckpt_cluster_scratch(Q)
 * + m CKPT_GROUP_SLOT(Q) */
void ckpt_renewal_init(renewal *R, const acme_failure *f, double C, const double *rn, const double *rw,
                       int Q, double *buf);

/* doubles of Lanczos scratch the Weibull cluster rule of Q nodes needs */
size_t ckpt_cluster_scratch(int Q);

/* Weibull: the number of leading nodes summed as the cluster rule (R->cr, R->cw, R->cn) at x, 0 for none */
int ckpt_cluster_prefix(renewal *R, double x);
/* ... for the bounds: the current rule kept when its prefix is no longer than the one at x */
int ckpt_cluster_prefix_bound(renewal *R, double x);

/* renewal_piecewise.c: piecewise hazard, the sums A0, A1, A2 (acc[3]) at x = tau + C, node by node or in
 * groups (R->grouped; want as in the sums) */
void ckpt_piecewise_sums_nodes(renewal *R, double x, double *acc);
void ckpt_piecewise_sums_groups(renewal *R, double x, int want, double *acc);

/* E[N], dE[N]/dtau, d2E[N]/dtau2 at tau (Weibull and piecewise families; want as in the sums) */
void ckpt_renewal_terms(renewal *R, double tau, int want, double *EN, double *d1, double *d2);

#define ROOT2 1.4142135623730951
#define ACME_KINK_EPS 1e-10 /* a kink maximum is located to this relative distance (checkpoint.c) */

/* phi = tau E[N] and (want) phi', phi'' (*g, *gp) at tau (checkpoint_sums.c) */
double ckpt_phi3(renewal *R, double tau, int want, double *g, double *gp);

/* checkpoint_ascent.c: safeguarded Newton on phi' = 0 from t within [lo, hi] (first: phi, phi', phi'' at t if
 * known, else NULL; br: NULL or points {below t, above t} where phi is known to be <= phi(t), 0 for an
 * unknown side: the ascent stays between them; uphill: the ratio of its steps into an unbounded side,
 * ACME_UPHILL unless the caller knows the scale of phi's features); returns the last point evaluated,
 * *ph = phi and *pp = phi'' there */
#define ACME_UPHILL 4.0
double ckpt_local_max_from(renewal *R, double t, double lo, double hi, const double *first, const double *br,
                           double uphill, double *ph, double *pp);

/* checkpoint_ripple.c: piecewise hazard, the best local maximum of phi near tb (phi = *best, phi'' = pp
 * there) within [gmin, gmax]; returns it, *best = phi there */
double ckpt_ripple_search(renewal *R, double tb, double *best, double pp, double gmin, double gmax);

/* checkpoint_ripple.c: piecewise hazard, the guard scan's ratio to its next sample from tau (phi = ph < best);
 * sqrt 2 otherwise */
#define ACME_GUARD_MIN 1.0442737824274138 /* 2^(1/16): at most 8 samples a sqrt 2 */
double ckpt_guard_ratio(renewal *R, double tau, double ph, double best, int *rippled);

/* checkpoint_ripple.c: piecewise hazard, the kink in (lo, hi) where phi' falls the most, -1 for none */
double ckpt_kink_peak(const renewal *R, double lo, double hi);
/* piecewise hazard: an upper bound on phi(tau) from closed forms (midpoint rule, no renewal sum) and
 * *quiet = 1 when the guard scan's ripple test is false for every phi(tau) the bounds allow
 * (checkpoint_bounds.c) */
double ckpt_piecewise_guard(const renewal *R, double tau, double best, int *quiet);

#endif
