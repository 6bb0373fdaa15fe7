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
 * min(W, 1e3 E[F])] of the original grid kernel (removed; its figures are in benchmarks/bench_solver.py):
 *   1. safeguarded Newton ascent on phi'(tau) = 0 (never below its start) from Daly's interval for the mean U / G0 (U = E[(F - R)^+],
 *      G0 = P(F > R): the MTTF that phi ~ tau U / (tau + C) - tau G0 / 2 implies; Weibull k >= 1: the
 *      maximum of that model with the next Euler-Maclaurin term tau x f_D(0) / 12, em_start), with the analytic
 *      phi'' = 2 E[N]' + tau E[N]'' (the sums below give E[N], E[N]', E[N]'' in one pass); a Newton step
 *      is taken when phi'' < 0 and it stays inside the bracket of known signs, else the geometric
 *      midpoint or a x4 step uphill; it stops when the next step would be below 1e-9 relative and
 *      returns the point evaluated last (quadratic convergence: within ~1e-9 of the root, E[T] within
 *      ~1e-18), so E[T] at the result comes from that evaluation; piecewise hazard: where Newton cannot
 *      land inside a bracket narrower than 1e-4 (relative), phi' may jump there at a kink (kink_in):
 *      phi' 1e-10 either side of the kink where it falls the most decides, and a maximum at the kink
 *      ends the search (bisection towards it took ~30 evaluations);
 *   2. a guard for a better local maximum, at sqrt 2 steps but only where bounds do not exclude one:
 *      below tau, phi(s) <= U s / (s + C); above t (x = t + C, D = (F - R)^+, G(y) = P(D >= y)):
 *      phi(s) <= E[D; D >= x] (s N <= D, N = 0 unless D >= x); phi(s) <= s E[N](t) <= phi_best for
 *      s <= t phi_best / phi(t) (E[N] decreases in tau); and once x >= y_m (beyond which D's density
 *      decreases), phi(s) <= B(x_s) <= B(x) with B(x) = E[D; D >= x] - (x/2) G(y_m + 2x): phi =
 *      E[D; D >= x] - C E[N] - E[D - x N; D >= x] and the work lost rounding down to a checkpoint is
 *      at least x^2/2 times the density at the end of each bin past y_m; B' = -x (f_D(x) - f_D(y_m +
 *      2x)) - G/2 < 0. Weibull: a sample is evaluated only where its first-order Euler-Maclaurin bound
 *      (weibull_bound: phi(s) <= s (J/x + G/2 + (x/6) sum_q w_q f(max(r_q + x, y*))), closed forms, no renewal
 *      sum, within ~1 % of phi) does not already put it below the best; the bound then stands for phi(s)
 *      in the step (on bench_solver's 400 scenarios no guard sample needed an evaluation). Piecewise
 *      hazard: a closed-form midpoint-rule bound ub >= phi(t) (ckpt_piecewise_guard, checkpoint_ripple.c)
 *      below the best clears [t, t best / ub] (phi(s) <= s E[N](t)) without an evaluation after the first
 *      sample up, and replaces the evaluation wherever the scan's ripple test is provably false for every
 *      phi(t) between it and a lower bound (the scan's step and probes are then those phi(t) would give:
 *      41.7 -> 37.0 evaluations per optimisation on bench_solver's 400 scenarios, optima identical).
 *      Where a ripple as large as the gap 1 - phi / phi_best can lift
 *      a point between samples above the best, the step is a quarter of its period (ckpt_guard_ratio,
 *      >= 2^(1/16)) and the kink between samples where phi' falls the most is probed (kink_probe: a
 *      wear-out jump makes phi a sawtooth whose peaks samples miss). A better point found restarts
 *      step 1 from it;
 *   3. piecewise hazard: a ripple search (checkpoint_ripple.c). phi is a smooth function plus a ripple
 *      with kinks where r + i x crosses a break, so it has local maxima a ripple period apart, within
 *      ~1e-5..1e-3 of each other; phi and phi' are sampled at a quarter of the shortest ripple period
 *      over the window where the smooth part is within the ripple's size of its maximum, and Newton runs
 *      from the best sampled candidates, each between its sampled neighbours, and from probes by the
 *      kinks next to the best point; peaks a model of phi' through the kinks predicts between
 *      samples are evaluated. A window capped at +-15 % also has its outer bands out to the guard scan's sqrt 2
 *      sampled (a long-period ripple can put a better maximum there); the search repeats around any
 *      better point found (up to 3 rounds).
 * The previous optimiser (removed) did 1 and 2 from Daly's interval for E[F].
 * The renewal sums E[N], E[N]', E[N]'' are in checkpoint_sums.c (Weibull) and renewal_piecewise.c
 * (piecewise hazard), the Newton ascent (step 1) in checkpoint_ascent.c, the ripple search (step 3) in
 * checkpoint_ripple.c and the piecewise bounds of the guard scan in checkpoint_bounds.c, all sharing
 * renewal.h.
 */
#include <float.h>
#include "renewal.h"

/* E[D; D >= tau + C] = sum_q w_q (x S(r_q + x) + I(r_q + x)): bounds phi(s) for all s >= tau. Weibull:
 * the leading nodes by their cluster rule (ckpt_cluster_prefix), nodes with I(r_q) = 0 (underflow) skipped. */
static double saved_bound(renewal *R, double tau) {
    double x = tau + R->C, s = 0.0, S, I;
    int q, k, p = ckpt_cluster_prefix_bound(R, x);
    for (k = 0; p > 0 && k < R->cn; k++) {
        I = ckpt_surv_tail(R, R->cr[k] + x, &S);
        s += R->cw[k] * (x * S + I);
    }
    for (q = p; q < R->Q; q++) {
        if (R->I[q] == 0.0) continue;
        I = ckpt_surv_tail(R, R->r[q] + x, &S);
        s += R->w[q] * (x * S + I);
    }
    return s;
}

/* G(y) = P(D >= y) = sum_q w_q S(r_q + y), y > 0 (Weibull: as saved_bound) */
static double surv_d(renewal *R, double y) {
    double s = 0.0;
    int q, k, p = ckpt_cluster_prefix_bound(R, y);
    for (k = 0; p > 0 && k < R->cn; k++) s += R->cw[k] * acme_surv(R->f, R->cr[k] + y);
    for (q = p; q < R->Q; q++)
        if (R->I[q] > 0.0) s += R->w[q] * acme_surv(R->f, R->r[q] + y);
    return s;
}

/* Weibull: an upper bound on phi(tau) from the closed forms of saved_bound, no renewal sum. With
 * g(u) = G(u x), Euler-Maclaurin to first order, E[N] = sum_{i>=1} g(i) = J(x) / x + G(x) / 2 + x f_D(x) / 12
 * + R, J(x) = E[(D - x)^+] = sum_q w_q I(r_q + x), f_D = -G' the density of D, and |R| <= (1/12) int |g''|
 * = (x/12) TV(f_D on [x, inf)) <= (x/12) sum_q w_q TV(f on [r_q + x, inf)). f is unimodal (mode y*, the
 * Weibull mode for k > 1, else 0), so f(a) + TV(f on [a, inf)) = 2 f(max(a, y*)) and
 *     phi(tau) <= tau (J / x + G / 2 + (x / 6) sum_q w_q f(max(r_q + x, y*))),
 * within ~1 % of phi near the optimum (the error is the second-order rounding term). *e3 = E[D; D >= x]
 * = x G + J (saved_bound, from the same terms); the nodes as in saved_bound. */
/* the terms of weibull_bound for one node: w S, w I and w f(max(a, ym)) at a (fm = f(ym)) */
static inline void weibull_bound_node(const renewal *R, double a, double w, double ym, double fm, double *acc) {
    const acme_failure *f = R->f;
    double z = pow(a / f->lam, f->k), S = exp(-z), ik = 1.0 / f->k;
    acc[0] += w * S;
    acc[1] += w * (f->lam * ik * acme_upper_gamma_pre(ik, z, R->gk, S * (a / f->lam)));
    acc[2] += w * ((a >= ym) ? f->k * z * S / a : fm);
}

static double weibull_bound(renewal *R, double tau, double ym, double *e3) {
    const acme_failure *f = R->f;
    double x = tau + R->C, acc[3] = {0.0, 0.0, 0.0}, fm = 0.0;
    int q, k, p = ckpt_cluster_prefix_bound(R, x);
    if (ym > 0.0) {
        double zm = pow(ym / f->lam, f->k);
        fm = f->k * zm * exp(-zm) / ym;
    }
    for (k = 0; p > 0 && k < R->cn; k++) weibull_bound_node(R, R->cr[k] + x, R->cw[k], ym, fm, acc);
    for (q = p; q < R->Q; q++)
        if (R->I[q] > 0.0) weibull_bound_node(R, R->r[q] + x, R->w[q], ym, fm, acc);
    *e3 = x * acc[0] + acc[1];
    return tau * (acc[1] / x + 0.5 * acc[0] + x * acc[2] / 6.0);
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

/* Weibull k >= 1: the Newton ascent's start. Euler-Maclaurin at y = 0 gives E[N] = U / x - G0 / 2 +
 * x f_D(0) / 12 + O(x^3 f_D''), f_D(0) = sum_q w_q f(r_q) (finite for k >= 1), so the model's maximum
 * solves U C / x^2 - G0 / 2 + (x + tau) f_D(0) / 12 = 0: Newton on it from Daly's interval t0 (the
 * root without the f_D(0) term). t0 itself unless the model is concave there and the iteration converges
 * within a factor 2 of t0. On bench_solver's scenarios the start is within 3e-3 of the optimum in 75-97 %
 * of them for k >= 1 (Daly's 0-19 %), so the ascent needs one evaluation fewer; for k < 1 f is singular at
 * 0 and Daly's start is the better one. */
static double em_start(const renewal *R, double t0) {
    const acme_failure *f = R->f;
    double f0 = 0.0, t = t0, C = R->C;
    int q, it;
    for (q = 0; q < R->Q; q++) {
        double z = pow(R->r[q] / f->lam, f->k);
        f0 += R->w[q] * (f->k / f->lam * pow(R->r[q] / f->lam, f->k - 1.0) * exp(-z));
    }
    for (it = 0; it < 30; it++) {
        double x = t + C, g = R->U * C / (x * x) - 0.5 * R->G0 + (x + t) * f0 / 12.0;
        double gp = -2.0 * R->U * C / (x * x * x) + f0 / 6.0, tn;
        if (!(gp < 0.0)) return t0;
        tn = t - g / gp;
        if (!(tn > 0.5 * t0 && tn < 2.0 * t0)) return t0;
        if (fabs(tn - t) <= 1e-12 * tn) return tn;
        t = tn;
    }
    return t0;
}

static double local_max(renewal *R, double t, double lo, double hi, double *ph, double *pp) {
    return ckpt_local_max_from(R, t, lo, hi, NULL, NULL, ACME_UPHILL, ph, pp);
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

/* piecewise hazard: just below the kink in (lo, hi) where phi' falls the most (ckpt_kink_peak, a possible
 * sawtooth peak) if phi there beats best; else, where phi there beats the sample's ph and a ripple there
 * still exceeds the gap (another kink's peak can be next to it), the local maximum the Newton ascent
 * reaches from it if that beats best; else -1 */
static double kink_probe(renewal *R, double lo, double hi, double best, double ph, double gmin, double gmax) {
    double tk = ckpt_kink_peak(R, lo, hi), t, g, gp, pk, p2, pp2;
    int rip;
    if (!(tk > 0.0)) return -1.0;
    t = tk * (1.0 - ACME_KINK_EPS);
    pk = ckpt_phi3(R, t, 0, &g, &gp);
    if (pk > best) return t;
    if (!(pk > ph)) return -1.0;
    (void)ckpt_guard_ratio(R, t, pk, best, &rip);
    if (!rip) return -1.0;
    t = ckpt_local_max_from(R, t, gmin, gmax, NULL, NULL, ACME_UPHILL, &p2, &pp2);
    return (p2 > best) ? t : -1.0;
}

/* the optimum tau and *best = phi(tau) (evaluated there) */
static double optimize_general(renewal *R, double W, double C, double *best) {
    const acme_failure *f = R->f;
    double gmin = 1e-3 * ((C < f->mean) ? C : f->mean), gmax = 1e3 * f->mean, t0, tb, t, pp;
    double ym = density_mode(f), meff = (R->G0 > 0) ? R->U / R->G0 : f->mean;
    int restart, wb = (f->family == ACME_WEIBULL);
    if (gmax > W) gmax = W;
    if (gmin >= gmax) gmin = 0.5 * gmax;
    t0 = (C < meff) ? daly_interval(C, meff) : daly_interval(C, f->mean);
    if (wb && f->k >= 1.0) t0 = em_start(R, t0);
    if (!(t0 >= gmin)) t0 = gmin;
    if (t0 > gmax) t0 = gmax;
    tb = local_max(R, t0, gmin, gmax, best, &pp);
    for (restart = 0; restart < 8; restart++) {
        double better = -1.0, t2, p2, pp2, g, gp, ph = 0.0, rs, e3;
        int first, rip;
        t = tb * ROOT2;
        first = 1;
        while (t < gmax) {
            /* the bounds hold for every s >= t, t included: checked before phi(t) is evaluated */
            double x = t + C, e3, nxt, jump, ub = (wb) ? weibull_bound(R, t, ym, &e3) : -1.0;
            if (!wb) e3 = saved_bound(R, t);
            if (e3 <= *best || (x >= ym && e3 - 0.5 * x * surv_d(R, ym + 2.0 * x) <= *best)) break;
            if (!wb) {
                int quiet;
                double pb = ckpt_piecewise_guard(R, t, *best, &quiet), lim;
                if (pb < *best && (quiet || !first)) {
                    /* phi(s) <= s E[N](t) <= s pb / t <= best on [t, t best / pb]: no evaluation; quiet: the
                     * scan would step by sqrt 2 from phi(t) without kink probes */
                    lim = t * (*best / pb);
                    nxt = (quiet && lim < t * ROOT2) ? t * ROOT2 : lim;
                    first = 0;
                    if (lim < gmax && gmax <= nxt) {
                        if (ckpt_phi3(R, gmax, 0, &g, &gp) > *best) better = gmax;
                        break;
                    }
                    t = nxt;
                    continue;
                }
            }
            if (wb && ub <= *best) {
                ph = ub;  /* phi(t) <= ub <= best: no evaluation; the steps below from the bound */
            } else {
                ph = ckpt_phi3(R, t, 0, &g, &gp);
                if (ph > *best) { better = t; break; }
            }
            jump = (ph > 0) ? *best / ph : INFINITY;
            rs = ckpt_guard_ratio(R, t, ph, *best, &rip);
            nxt = (ph > 0) ? t * ((rs > jump) ? rs : jump) : gmax;
            if (rip) {  /* a ripple as large as the gap: the sharpest kinks before and after t too */
                if (first && (better = kink_probe(R, tb, t, *best, ph, gmin, gmax)) > 0) break;
                if ((better = kink_probe(R, t, (nxt < gmax) ? nxt : gmax, *best, ph, gmin, gmax)) > 0) break;
            }
            first = 0;
            if (nxt >= gmax && t * jump < gmax) {
                if (ckpt_phi3(R, gmax, 0, &g, &gp) > *best) better = gmax;
                break;
            }
            t = nxt;
        }
        t = tb / ROOT2;
        first = 1;
        while (better < 0 && t > gmin && R->U * t / (t + C) > *best) {
            /* no better point on [lo, t]: phi(s) <= t U / x - lo G(c) / 2 there (down_bound) */
            double lo = down_bound(R, t, ym, *best);
            if (lo <= t * ACME_SHRINK_MAX) {
                t = lo;
                continue;
            }
            if (!wb) {
                int quiet;
                (void)ckpt_piecewise_guard(R, t, *best, &quiet);
                if (quiet) {  /* phi(t) <= bound < best and the scan's step from phi(t) is sqrt 2, no kink probes */
                    first = 0;
                    t /= ROOT2;
                    continue;
                }
            }
            if (!(wb && weibull_bound(R, t, ym, &e3) <= *best)) {  /* the bound, else phi(t) */
                ph = ckpt_phi3(R, t, 0, &g, &gp);
                if (ph > *best) {
                    better = t;
                    break;
                }
            }
            rs = ckpt_guard_ratio(R, t, ph, *best, &rip);
            if (rip) {
                if (first && (better = kink_probe(R, t, tb, *best, ph, gmin, gmax)) > 0) break;
                if ((better = kink_probe(R, (t / rs > gmin) ? t / rs : gmin, t, *best, ph, gmin, gmax)) > 0) break;
            }
            first = 0;
            t /= rs;
        }
        if (better < 0) break;
        t2 = local_max(R, better, gmin, gmax, &p2, &pp2);
        if (!(p2 > *best)) break;
        tb = t2;
        *best = p2;
        pp = pp2;
    }
    if (tb > gmin && tb < gmax) tb = ckpt_ripple_search(R, tb, best, pp, gmin, gmax);
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
        ckpt_renewal_terms(R, te, 0, &EN, &d1, &d2);
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

/* scratch: H (m) for the failure law, then 4 Q + 5 m + Q m + ckpt_cluster_scratch(Q) + m CKPT_GROUP_SLOT(Q)
 * for the renewal */
static double *scratch(int family, int P, int Q) {
    int m = max_pieces(family, P);
    return (double *)malloc(sizeof(double) * ((size_t)m + 4 * (size_t)Q + 5 * (size_t)m + (size_t)Q * m + 1 +
                                              ckpt_cluster_scratch(Q) + (size_t)m * CKPT_GROUP_SLOT(Q)));
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
        if (family != ACME_EXPONENTIAL && ckpt[i] < f.mean) ckpt_renewal_init(&R, &f, ckpt[i], rn, rw, Q, buf + m);
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
            ckpt_renewal_init(&R, &f, ckpt[i], rn, rw, Q, buf + m);
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
            ckpt_renewal_init(&R, &f, ckpt, r_nodes, r_weights, Q, buf + m);
            ckpt_renewal_terms(&R, tau, 2, &out4[1], &out4[2], &out4[3]);
        }
    }
    free(buf);
}