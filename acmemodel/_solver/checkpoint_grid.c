/*
 * BASELINE checkpoint optimiser (the package's kernel before the current checkpoint.c), kept callable as
 * ``_core.ckpt_optimize_grid`` so that benchmarks/bench_solver.py can measure the speed-up of the current
 * kernel in the same run; twin: acmemodel/planner/reference_grid.py. Same model as checkpoint.c.
 * Algorithm: a geometric grid of ratio sqrt 2 on [1e-3 min(C, E[F]), min(W, 1e3 E[F])], then Brent's
 * method on phi'(tau) around its best point; Weibull sums term by term while x h(t) > 0.02 (and for
 * at least 16 terms), then Euler-Maclaurin through the B4 term.
 *
 * Original description follows.
 *
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
 * Sums: exponential in closed form; piecewise-constant hazard in closed form piece by piece (inside a
 * piece the terms form a geometric series); Weibull term by term while the summand changes by more than
 * ACME_EM_EPS per step (and for at least ACME_EM_NMIN - 1 terms), then Euler-Maclaurin through the B4
 * term (remainder ~3e-5 EPS^5 relative, below 1e-12) with the integral from the upper incomplete gamma
 * function; for shape k > 1 the hazard grows, so that range ends where x h(t) = EPS and the rest is
 * summed term by term until a term is below 1e-17 of the sum.
 */
#include <float.h>
#include "acme_solver.h"

#define ACME_STOP 1e-17     /* a direct sum stops when a term is below this fraction of the sum */
#define ACME_EM_EPS 0.02    /* Euler-Maclaurin once x*h(t) (relative change per step) is below this */
#define ACME_EM_NMIN 16     /* ... and at least this many terms were summed directly */
#define ACME_NCAP 10000000L /* safety cap on direct terms */

/* Weibull derivatives at t: S, S', S''' and f, f', f'', f''' (f = h S). */
typedef struct { double S, S1, S3, f, f1, f2, f3; } wb_derivs;

static wb_derivs weibull_derivs(const acme_failure *w, double t) {
    wb_derivs d;
    double k = w->k, z = pow(t / w->lam, k), S = exp(-z);
    double h = k * z / t, h1 = (k - 1.0) * h / t, h2 = (k - 2.0) * h1 / t, h3 = (k - 3.0) * h2 / t;
    d.S = S;
    d.S1 = -h * S;
    d.S3 = (-h * h * h + 3.0 * h * h1 - h2) * S;
    d.f = h * S;
    d.f1 = (h1 - h * h) * S;
    d.f2 = (h2 - 3.0 * h * h1 + h * h * h) * S;
    d.f3 = (h3 - 4.0 * h * h2 - 3.0 * h1 * h1 + 6.0 * h * h * h1 - h * h * h * h) * S;
    return d;
}

/* Euler-Maclaurin for sum_{i=n0}^{n1} g(i), g(u) = S(r + u x), and of G(u) = u f(r + u x), through
 * the B4 term; n1 = infinity when `infinite`. Remainder ~3e-5 eps^5 of the sum (eps = change per step). */
static void weibull_em(const acme_failure *w, double r, double x, double n0, double n1, int infinite,
                       double *sS, double *sIF) {
    double a0 = r + n0 * x, I0 = acme_tail_integral(w, a0);
    wb_derivs d0 = weibull_derivs(w, a0);
    double intg = I0 / x, intG = ((a0 - r) * d0.S + I0) / (x * x);
    double ends = 0.5 * d0.S, endsG = 0.5 * n0 * d0.f;
    double c1 = -x * d0.S1, c3 = -x * x * x * d0.S3;
    double C1 = -(d0.f + n0 * x * d0.f1), C3 = -(3.0 * x * x * d0.f2 + n0 * x * x * x * d0.f3);
    if (!infinite) {
        double a1 = r + n1 * x, I1 = acme_tail_integral(w, a1);
        wb_derivs d1 = weibull_derivs(w, a1);
        intg -= I1 / x;
        intG -= ((a1 - r) * d1.S + I1) / (x * x);
        ends += 0.5 * d1.S;
        endsG += 0.5 * n1 * d1.f;
        c1 += x * d1.S1;
        c3 += x * x * x * d1.S3;
        C1 += d1.f + n1 * x * d1.f1;
        C3 += 3.0 * x * x * d1.f2 + n1 * x * x * x * d1.f3;
    }
    *sS = intg + ends + c1 / 12.0 - c3 / 720.0;
    *sIF = intG + endsG + C1 / 12.0 - C3 / 720.0;
}

/* Weibull: sum_{i>=1} S(r + i x) and sum_{i>=1} i f(r + i x). */
static void weibull_sums(const acme_failure *w, double r, double x, double *sS, double *sIF) {
    double sumS = 0.0, sumIF = 0.0, k = w->k, a, b;
    long i = 1;
    /* phase 1: direct terms while the summand varies fast (and at least NMIN - 1 terms) */
    for (;; i++) {
        double t = r + (double)i * x, s = acme_surv(w, t), fd = (s > 0.0) ? acme_hazard(w, t) * s : 0.0;
        sumS += s;
        sumIF += (double)i * fd;
        if (s <= ACME_STOP * sumS) goto done;
        if (i + 1 >= ACME_EM_NMIN &&
            (k > 1.0 || i + 1 > ACME_NCAP ||
             x * acme_hazard(w, r + (double)(i + 1) * x) <= ACME_EM_EPS)) {
            i++;
            break;
        }
    }
    if (k <= 1.0) {  /* the hazard does not grow: Euler-Maclaurin on [i, infinity) */
        weibull_em(w, r, x, (double)i, 0.0, 1, &a, &b);
        sumS += a;
        sumIF += b;
    } else {
        /* x h(t1) = EPS; Euler-Maclaurin on [i, n1] where the summand varies slowly, then direct terms */
        double t1 = w->lam * pow(ACME_EM_EPS * w->lam / (k * x), 1.0 / (k - 1.0));
        double n1 = floor((t1 - r) / x);
        if (n1 > 1e15) n1 = 1e15;
        if (n1 > (double)i + 1.0) {
            weibull_em(w, r, x, (double)i, n1, 0, &a, &b);
            sumS += a;
            sumIF += b;
            i = (long)n1 + 1;
        }
        for (; i <= ACME_NCAP; i++) {
            double t = r + (double)i * x, s = acme_surv(w, t), fd = (s > 0.0) ? acme_hazard(w, t) * s : 0.0;
            sumS += s;
            sumIF += (double)i * fd;
            if (s <= ACME_STOP * sumS) break;
        }
    }
done:
    *sS = sumS;
    *sIF = sumIF;
}

/* sum_{m=0}^{c-1} q^m and sum_{m=0}^{c-1} m q^m with q = exp(-delta); c < 0 means infinity. */
static void geometric_sums(double delta, double c, double *A, double *B) {
    if (c < 0) {
        double omq = -expm1(-delta), q = exp(-delta);
        *A = 1.0 / omq;
        *B = q / (omq * omq);
    } else if (delta == 0.0) {
        *A = c;
        *B = 0.5 * c * (c - 1.0);
    } else if (c * delta < 0.05 && c <= 4096.0) {  /* avoid cancellation: sum directly */
        double sa = 0.0, sb = 0.0, q = exp(-delta), qm = 1.0;
        long m, ci = (long)c;
        for (m = 0; m < ci; m++) {
            sa += qm;
            sb += (double)m * qm;
            qm *= q;
        }
        *A = sa;
        *B = sb;
    } else {
        double omq = -expm1(-delta), q = exp(-delta), qc = exp(-c * delta);
        *A = -expm1(-c * delta) / omq;
        *B = (q * (*A) - c * qc) / omq;
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

/* piecewise-constant hazard: inside piece j the terms form a geometric series (ratio exp(-h_j x)) */
static void piecewise_sums(const acme_failure *f, double r, double x, double *sS, double *sIF) {
    double sumS = 0.0, sumIF = 0.0;
    int j;
    for (j = 0; j < f->m; j++) {
        double ilo = first_index_at(r, x, f->b[j]), c = -1.0, A, B, S_lo;
        if (j < f->m - 1) {
            c = first_index_at(r, x, f->b[j + 1]) - ilo;
            if (c <= 0.0) continue;
        }
        S_lo = exp(-(f->H[j] + f->h[j] * (r + ilo * x - f->b[j])));
        if (S_lo == 0.0) break;
        geometric_sums(f->h[j] * x, c, &A, &B);
        sumS += S_lo * A;
        sumIF += f->h[j] * S_lo * (ilo * A + B);
    }
    *sS = sumS;
    *sIF = sumIF;
}

/* E[N] and dE[N]/dtau for one restart node r (x = tau + C). */
static void sums_node(const acme_failure *f, double r, double x, double *sS, double *sIF) {
    if (f->family == ACME_WEIBULL) weibull_sums(f, r, x, sS, sIF);
    else piecewise_sums(f, r, x, sS, sIF);
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

void acme_ckpt_grid_expected_time(int n, const double *tau, const double *work, const double *ckpt,
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

void acme_ckpt_grid_optimize(int n, const double *work, const double *ckpt, int family,
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
void acme_ckpt_grid_terms(double tau, double ckpt, int family, const double *params, int P,
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
