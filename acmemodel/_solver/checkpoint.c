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
 * optimal tau maximises phi(tau) = tau E[N](tau), the expected work saved per failure cycle; it is the
 * root of phi'(tau) = E[N] + tau dE[N]/dtau, found by Brent's method on a bracket:
 * exponential: (0, min(M, W)], where phi' changes sign exactly once (root = M (1 + W0(-exp(-1-C/M))));
 * Weibull / piecewise hazard: the bracket around the best point of a geometric grid (ratio sqrt 2) on
 * [1e-3 min(C, E[F]), min(W, 1e3 E[F])].
 *
 * Sums: exponential in closed form; piecewise-constant hazard term by term up to the last breakpoint
 * then an exact geometric tail; Weibull term by term until a term falls below 1e-17 of the sum, after
 * ACME_NDIRECT terms the Euler-Maclaurin tail (integral + g/2 - g'/12, the integral through the upper
 * incomplete gamma function).
 */
#include <float.h>
#include "acme_solver.h"

#define ACME_NDIRECT 2048
#define ACME_STOP 1e-17

/* E[N] and dE[N]/dtau for one restart node r (x = tau + C). */
static void sums_node(const acme_failure *f, double r, double x, double *sS, double *sIF) {
    double sumS = 0.0, sumIF = 0.0;
    long i;
    int stopped = 0;
    double blast = (f->family == ACME_PIECEWISE) ? f->b[f->m - 1] : 0.0;
    for (i = 1;; i++) {
        double t = r + (double)i * x, s, fd;
        if (f->family == ACME_PIECEWISE && t >= blast) {
            /* constant hazard h from here: geometric tail, exact */
            double hl = f->h[f->m - 1], st = acme_surv(f, t);
            double q = exp(-hl * x), omq = -expm1(-hl * x);
            sumS += st / omq;
            sumIF += hl * st * ((double)i / omq + q / (omq * omq));
            stopped = 1;
            break;
        }
        if (f->family == ACME_WEIBULL && i > ACME_NDIRECT) break;
        s = acme_surv(f, t);
        fd = (s > 0.0) ? acme_hazard(f, t) * s : 0.0;
        sumS += s;
        sumIF += (double)i * fd;
        if (f->family == ACME_WEIBULL && s <= ACME_STOP * sumS) {
            stopped = 1;
            break;
        }
    }
    if (!stopped) {  /* Weibull Euler-Maclaurin tail from n = ACME_NDIRECT + 1 */
        double n = (double)(ACME_NDIRECT + 1), a = r + n * x;
        double s = acme_surv(f, a), hz = acme_hazard(f, a), fd = hz * s;
        double I = acme_tail_integral(f, a);
        double fprime = fd * ((f->k - 1.0) / a - hz);
        double Gp = fd + n * x * fprime;
        sumS += I / x + 0.5 * s + x * fd / 12.0;
        sumIF += ((a - r) * s + I) / (x * x) + 0.5 * n * fd - Gp / 12.0;
    }
    *sS = sumS;
    *sIF = sumIF;
}

/* EN = E[N](tau), dEN = dE[N]/dtau (general families, summed over restart nodes). */
static void renewal_terms(const acme_failure *f, double tau, double C, const double *rn,
                          const double *rw, int Q, double *EN, double *dEN) {
    double x = tau + C, en = 0.0, d = 0.0;
    int q;
    if (f->family == ACME_EXPONENTIAL) {
        double L = 0.0, em = expm1(x / f->M);
        for (q = 0; q < Q; q++) L += rw[q] * exp(-rn[q] / f->M);
        *EN = L / em;
        *dEN = -L * exp(x / f->M) / (f->M * em * em);
        return;
    }
    for (q = 0; q < Q; q++) {
        double s, sf;
        if (rw[q] == 0.0) continue;
        sums_node(f, rn[q], x, &s, &sf);
        en += rw[q] * s;
        d += rw[q] * sf;
    }
    *EN = en;
    *dEN = -d;
}

/* E[T](tau) with its status. */
static double expected_time_one(const acme_failure *f, double tau, double W, double C,
                                const double *rn, const double *rw, int Q, int *status) {
    double te = (tau < W) ? tau : W, EN, dEN, et;
    if (C >= f->mean) {
        *status = ACME_DNF_CKPT_GE_MTTF;
        return INFINITY;
    }
    if (f->family == ACME_EXPONENTIAL) {
        double L = 0.0;
        int q;
        for (q = 0; q < Q; q++) L += rw[q] * exp(-rn[q] / f->M);
        et = W * f->M * expm1((te + C) / f->M) / (te * L);
    } else {
        renewal_terms(f, te, C, rn, rw, Q, &EN, &dEN);
        et = (EN > 0.0) ? W * f->mean / (te * EN) : INFINITY;
    }
    if (!isfinite(et) || !(et > 0)) {
        *status = ACME_DNF_NO_PROGRESS;
        return INFINITY;
    }
    *status = ACME_OK;
    return et;
}

/* phi'(tau) up to a positive factor (sign and root are what matter). */
static double dphi(const acme_failure *f, double tau, double C, const double *rn, const double *rw,
                   int Q) {
    double EN, dEN;
    if (f->family == ACME_EXPONENTIAL) {
        double u = tau / f->M, v = (tau + C) / f->M;
        return expm1(v) - u * exp(v);
    }
    renewal_terms(f, tau, C, rn, rw, Q, &EN, &dEN);
    return EN + tau * dEN;
}

static double phi(const acme_failure *f, double tau, double C, const double *rn, const double *rw,
                  int Q) {
    double EN, dEN;
    renewal_terms(f, tau, C, rn, rw, Q, &EN, &dEN);
    return tau * EN;
}

/* Brent's root finder (zeroin, as scipy.optimize.brentq) for dphi on [a, b], fa > 0 > fb. */
static double brent_root(const acme_failure *f, double C, const double *rn, const double *rw, int Q,
                         double a, double b, double fa, double fb) {
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
        fb = dphi(f, b, C, rn, rw, Q);
    }
    return b;
}

/* golden-section maximisation of phi on [a, b] (fallback when dphi shows no sign change) */
static double golden_max(const acme_failure *f, double C, const double *rn, const double *rw, int Q,
                         double a, double b) {
    const double g = 0.6180339887498949;
    double x1 = b - g * (b - a), x2 = a + g * (b - a);
    double f1 = phi(f, x1, C, rn, rw, Q), f2 = phi(f, x2, C, rn, rw, Q);
    int it;
    for (it = 0; it < 200 && (b - a) > 4.0 * DBL_EPSILON * b; it++) {
        if (f1 >= f2) {
            b = x2; x2 = x1; f2 = f1;
            x1 = b - g * (b - a);
            f1 = phi(f, x1, C, rn, rw, Q);
        } else {
            a = x1; x1 = x2; f1 = f2;
            x2 = a + g * (b - a);
            f2 = phi(f, x2, C, rn, rw, Q);
        }
    }
    return 0.5 * (a + b);
}

static double optimize_one(const acme_failure *f, double W, double C, const double *rn,
                           const double *rw, int Q) {
    double lo, hi, flo, fhi;
    if (f->family == ACME_EXPONENTIAL) {
        lo = 0.0;
        hi = (f->M < W) ? f->M : W;
        flo = dphi(f, lo, C, rn, rw, Q);   /* expm1(C/M) > 0 */
        fhi = dphi(f, hi, C, rn, rw, Q);
        if (fhi >= 0.0) return hi;        /* phi still rising at tau = W: one segment */
        return brent_root(f, C, rn, rw, Q, lo, hi, flo, fhi);
    } else {
        double gmin = 1e-3 * ((C < f->mean) ? C : f->mean);
        double gmax = 1e3 * f->mean, best = -1.0, t, ratio = 1.4142135623730951;
        double tb = gmin, prev = gmin, next;
        int ib = 0, i = 0, last;
        if (gmax > W) gmax = W;
        if (gmin >= gmax) gmin = 0.5 * gmax;
        last = (int)ceil(log(gmax / gmin) / log(ratio));
        for (i = 0; i <= last; i++) {
            double v;
            t = (i == last) ? gmax : gmin * pow(ratio, i);
            v = phi(f, t, C, rn, rw, Q);
            if (v > best) { best = v; tb = t; ib = i; }
        }
        prev = (ib == 0) ? gmin / ratio : gmin * pow(ratio, ib - 1);
        if (ib == last) {
            fhi = dphi(f, gmax, C, rn, rw, Q);
            if (fhi >= 0.0) return gmax;
            next = gmax;
        } else {
            next = (ib + 1 == last) ? gmax : gmin * pow(ratio, ib + 1);
        }
        (void)tb;
        flo = dphi(f, prev, C, rn, rw, Q);
        fhi = dphi(f, next, C, rn, rw, Q);
        if (flo > 0.0 && fhi < 0.0) return brent_root(f, C, rn, rw, Q, prev, next, flo, fhi);
        return golden_max(f, C, rn, rw, Q, prev, next);
    }
}

static int max_pieces(int family, int P) { return family == ACME_PIECEWISE ? P / 2 : 1; }

void acme_ckpt_expected_time(int n, const double *tau, const double *work, const double *ckpt,
                             int family, const double *params, int P, const double *r_nodes,
                             const double *r_weights, int Q, double *out_et, int *out_status) {
    int i;
    double *H = (double *)malloc(sizeof(double) * (size_t)max_pieces(family, P));
    for (i = 0; i < n; i++) {
        acme_failure f;
        if (!H || acme_failure_init(&f, family, params + (size_t)i * P, P, H) != 0) {
            out_et[i] = INFINITY;
            out_status[i] = -1;
            continue;
        }
        out_et[i] = expected_time_one(&f, tau[i], work[i], ckpt[i], r_nodes + (size_t)i * Q,
                                      r_weights + (size_t)i * Q, Q, &out_status[i]);
    }
    free(H);
}

void acme_ckpt_optimize(int n, const double *work, const double *ckpt, int family,
                        const double *params, int P, const double *r_nodes, const double *r_weights,
                        int Q, double *out_tau, double *out_et, int *out_status) {
    int i;
    double *H = (double *)malloc(sizeof(double) * (size_t)max_pieces(family, P));
    for (i = 0; i < n; i++) {
        acme_failure f;
        const double *rn = r_nodes + (size_t)i * Q, *rw = r_weights + (size_t)i * Q;
        double t;
        if (!H || acme_failure_init(&f, family, params + (size_t)i * P, P, H) != 0) {
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
        t = optimize_one(&f, work[i], ckpt[i], rn, rw, Q);
        out_et[i] = expected_time_one(&f, t, work[i], ckpt[i], rn, rw, Q, &out_status[i]);
        out_tau[i] = (out_status[i] == ACME_OK) ? t : NAN;
    }
    free(H);
}

/* (E[F], E[N], dE[N]/dtau) at one tau: exposed for testing against the NumPy twin. */
void acme_ckpt_terms(double tau, double ckpt, int family, const double *params, int P,
                     const double *r_nodes, const double *r_weights, int Q, double *out3) {
    acme_failure f;
    double *H = (double *)malloc(sizeof(double) * (size_t)max_pieces(family, P));
    out3[0] = out3[1] = out3[2] = NAN;
    if (H && acme_failure_init(&f, family, params, P, H) == 0) {
        out3[0] = f.mean;
        renewal_terms(&f, tau, ckpt, r_nodes, r_weights, Q, &out3[1], &out3[2]);
    }
    free(H);
}
