/*
 * Ripple search of the checkpoint-interval optimiser under a piecewise-constant hazard (step 3 of the
 * optimum described at the top of checkpoint.c; renewal.h is the interface). phi(tau) = tau E[N] is
 * then a smooth function plus a ripple with kinks where r + i x crosses a break, so it has local maxima a
 * ripple period apart, within ~1e-5..1e-3 of each other: phi is sampled at a quarter of the shortest
 * ripple period (with phi') over the window where the smooth part is within the ripple's size of its
 * maximum, Newton (ckpt_local_max_from) runs from the best sampled candidates (sample_candidate), each
 * kept between its sampled neighbours, and from probes placed by the kinks next to the best point
 * (split_probe); peaks hidden between two samples, where a model of phi' through the kinks between
 * predicts them (peak_probe), are evaluated (kink_between); a window capped at +-15 % also has its outer
 * bands out to the guard scan's sqrt 2 sampled (a long-period ripple can put a better maximum there);
 * and the search repeats around any better point found (up to 3 rounds). Against a dense grid's
 * minimum (tests/test_checkpoint_random.py's): of bench_solver's 400 piecewise scenarios, 400 random
 * walks and 1,164 broad hazards that finish (seeds 20000+, 40000+), 8 optima were more than 1e-6 above
 * it (up to 1.5e-4) before the candidates, brackets, probes and peak models here; now none of those nor
 * of 300 more bench and 388 more broad scenarios is (2 of all 2,652 are 2e-9 and 1e-8 above it), at
 * ~1.3e4 optimisations per CPU-second (bench_solver; it was ~1.8e4).
 */
#include "renewal.h"

#define ACME_RIPPLE_SMALL 1e-9  /* a ripple below this relative size of phi is ignored */
#define ACME_RIPPLE_IGNORE 2e-7 /* ... and the smallest breaks' ripples up to this total do not set the step */
#define ACME_RIPPLE_WIN 0.15    /* ... the window searched around the best point is at most +-15 % */
#define ACME_RIPPLE_K 24        /* ... with at most this many samples on each side */
#define ACME_RIPPLE_KO 8        /* ... and outside it, up to the guard scan's sqrt 2, at most this many a side */
#define ACME_RIPPLE_DROP 0.5  /* ... the share of the smooth drop / gap the set-aside ripples may fill (step) */
#define ACME_RIPPLE_NPROBE 2    /* ... and derivative probes either side: by the kink split_probe picks, at 1/2 a step */

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

/* the shortest ripple period (seconds) among the breaks whose ripple a_j (as in ripple, at tau with
 * phi = ph) is at least thr; infinity for none */
static double outer_period(const renewal *R, double tau, double ph, double thr) {
    const acme_failure *f = R->f;
    double x = tau + R->C, P = INFINITY;
    int j, q;
    for (j = 1; j < f->m; j++) {
        double Wj = 0.0, aj, Pj = x * x / (f->b[j] - R->r[0]);
        for (q = 0; q < R->Q && R->r[q] + x < f->b[j]; q++) Wj += R->w[q];
        aj = tau * x * fabs(f->h[j] - f->h[j - 1]) * R->SH[j] * Wj / (8.0 * ph);
        if (aj >= thr && Pj < P) P = Pj;
    }
    return P;
}

#define ACME_SPLIT_KINKS 128 /* split_probe: at most this many kinks within half a step (the nearest kept) */

/* The kinks of phi in (lo, hi), at most ACME_SPLIT_KINKS, nearest to anchor first, into kt (tau) and kj
 * (the jump of phi' there as tau grows: S(r_q + i x) crosses b_j at x = (b_j - r_q) / i, phi' jumping
 * by tau w_q i S(b_j) (h_{j-1} - h_j)); returns how many. */
static int near_kinks(const renewal *R, double anchor, double lo, double hi, double *kt, double *kj) {
    const acme_failure *f = R->f;
    double xlo = lo + R->C, xhi = hi + R->C;
    int j, q, n = 0, a;
    for (j = 1; j < f->m; j++) {
        double dh = f->h[j - 1] - f->h[j];
        if (dh == 0.0) continue;
        for (q = 0; q < R->Q && R->r[q] + xlo < f->b[j]; q++) {
            double d = f->b[j] - R->r[q], i, xk, t, jump, dist;
            for (i = floor(d / xlo); i >= 1.0; i -= 1.0) {  /* the kinks d / i above xlo, nearest to xlo first */
                xk = d / i;
                if (xk >= xhi) break;
                if (!(xk > xlo)) continue;
                t = xk - R->C;
                jump = t * R->w[q] * i * R->SH[j] * dh;
                dist = fabs(t - anchor);
                if (n == ACME_SPLIT_KINKS && !(dist < fabs(kt[n - 1] - anchor))) continue;
                if (n < ACME_SPLIT_KINKS) n++;
                for (a = n - 1; a > 0 && fabs(kt[a - 1] - anchor) > dist; a--) {  /* insertion by distance */
                    kt[a] = kt[a - 1];
                    kj[a] = kj[a - 1];
                }
                kt[a] = t;
                kj[a] = jump;
            }
        }
    }
    return n;
}

/* Piecewise hazard: where a maximum of phi at t0 (phi'(t0) = 0, phi''(t0) = pp0) may be split in two by a
 * valley within h of it (side 0: above t0, side 1: below), -1 for no kink there. As x grows past
 * (b_j - r_q) / i, S(r_q + i x) crosses b_j and phi' jumps by tau w_q i S(b_j) (h_{j-1} - h_j); between
 * kinks phi' ~ pp0 (t - t0). The kinks in the range, nearest first, give the predicted phi' just before
 * and just past each (above t0: pp0 (t_k - t0) + the jumps up to t_k; below: pp0 (t_k - t0) - the jumps
 * from t_k; past it, with its own jump); returns the point (the kink x (1 -+ ACME_KINK_EPS)) where it
 * points away from t0 the most: a rising phi there means another maximum beyond it (just before a kink:
 * seen where t0 is a kink peak, phi falls past it into a convex valley and rises again to the next). */
static double split_probe(const renewal *R, double t0, double pp0, int side, double h) {
    double kt[ACME_SPLIT_KINKS], kj[ACME_SPLIT_KINKS], cum = 0.0, bestv = -INFINITY, tk = -1.0;
    int n = near_kinks(R, t0, side ? t0 - h : t0, side ? t0 : t0 + h, kt, kj), b;
    for (b = 0; b < n; b++) {  /* just before each kink (from t0), then just past it */
        int past;
        for (past = 0; past < 2; past++) {
            double v;
            if (past) cum += kj[b];
            v = side ? cum - pp0 * (kt[b] - t0) : pp0 * (kt[b] - t0) + cum;  /* -phi' below, phi' above */
            if (v > bestv) {
                bestv = v;
                tk = kt[b] * ((side == past) ? 1.0 - ACME_KINK_EPS : 1.0 + ACME_KINK_EPS);
            }
        }
    }
    return tk;
}

/* Piecewise hazard: the peak between a sample at ta (phi = va, phi' = ga, phi'' = ppa) and tend that a
 * model predicts, -1 for none, *est its predicted height. Walking from ta towards tend through the kinks
 * (near_kinks), phi' follows ga + ppa (t - ta) plus the jumps passed and phi its integral; a peak is a
 * kink where the predicted phi' turns from towards tend to away from it (returned just on ta's side) or
 * a point between kinks where it crosses 0 so (phi'' < 0): the one predicted highest. */
static double peak_probe(const renewal *R, double ta, double va, double ga, double ppa, double tend, double *est) {
    double kt[ACME_SPLIT_KINKS], kj[ACME_SPLIT_KINKS], dir = (tend > ta) ? 1.0 : -1.0, pos = ta, s = ga, v = va;
    double tk = -1.0;
    int n = near_kinks(R, ta, (dir > 0) ? ta : tend, (dir > 0) ? tend : ta, kt, kj), b;
    *est = -INFINITY;
    for (b = 0; b <= n; b++) {
        double end = (b < n) ? kt[b] : tend, dt = end - pos, after;
        if (dir * s > 0 && ppa < 0 && dir * (s + ppa * dt) < 0) {  /* a smooth maximum in this segment */
            double d = -s / ppa, vm = v + s * d + 0.5 * ppa * d * d;
            if (vm > *est) {
                *est = vm;
                tk = pos + d;
            }
        }
        if (b == n) break;
        v += s * dt + 0.5 * ppa * dt * dt;
        s += ppa * dt;
        after = (dir > 0) ? s + kj[b] : s - kj[b];  /* phi' past the kink going towards tend */
        if (dir * s > 0 && dir * after < 0 && v > *est) {
            *est = v;
            tk = kt[b] * (1.0 - dir * ACME_KINK_EPS);
        }
        s = after;
        pos = kt[b];
    }
    return tk;
}

/* The shortest period P[j] among the breaks left when the smallest ripples a[j] (j = 1..m-1), while
 * together at most thr, are set aside (infinity for none; ties in a[j] by the lower j first). */
static double live_period(const double *a, const double *P, int m, double thr) {
    double cum = 0.0, out = INFINITY, last = -1.0;
    int j, lastj = 0;
    for (;;) {  /* the next smallest a[j] after (last, lastj) in (value, index) order */
        int jm = -1;
        for (j = 1; j < m; j++)
            if (a[j] > 0.0 && (a[j] > last || (a[j] == last && j > lastj)) && (jm < 0 || a[j] < a[jm])) jm = j;
        if (jm < 0) break;
        last = a[jm];
        lastj = jm;
        if (cum + a[jm] <= thr) cum += a[jm];
        else if (P[jm] < out) out = P[jm];
    }
    return out;
}

/* phi sampled outwards from t0 (phi(t0) = best) to t0 (1 +- win), at most K samples a side, into
 * ph/pt (2 ACME_RIPPLE_K + 1 slots, t0 at index *c0; returns the count). The step after a sample at
 * t0 (1 + d) with value v is a quarter of the shortest period among the breaks whose ripples are not
 * needed there (as in ckpt_guard_ratio): a point there beats the best only by a lift above
 * g = min(kappa d^2 / 2, 1 - v / best) (the smooth part's drop, the window's own model, and the
 * sample's gap), so the smallest ripples, while together at most ACME_RIPPLE_DROP g, do not set the
 * step (a margin for the model: with all of g, 1 of 400 seeded broad hazards ended 8.9e-6 above a dense
 * grid); never below step (the window's, set by the ripples above ACME_RIPPLE_IGNORE). */
static int ripple_samples(renewal *R, double t0, double best, double kappa, double step, double win, int K,
                          double gmin, double gmax, double *ph, double *pt, double *pd, double *pq, int *c0) {
    const acme_failure *f = R->f;
    double x = t0 + R->C, a[f->m], P[f->m]; /* C99 VLAs: m pieces */
    double sv[2][ACME_RIPPLE_K], st[2][ACME_RIPPLE_K], sd[2][ACME_RIPPLE_K], sq[2][ACME_RIPPLE_K];
    int j, q, ns[2] = {0, 0}, side, k, n = 0;
    for (j = 1; j < f->m; j++) {
        double Wj = 0.0;
        for (q = 0; q < R->Q && R->r[q] + x < f->b[j]; q++) Wj += R->w[q];
        a[j] = t0 * x * fabs(f->h[j] - f->h[j - 1]) * R->SH[j] * Wj / (8.0 * best);
        P[j] = x * x / (f->b[j] - R->r[0]);
    }
    for (side = 0; side < 2; side++) {  /* side 0: below t0, 1: above */
        double dd = 0.0, v = best, sg = side ? 1.0 : -1.0;
        while (dd < win && ns[side] < K) {
            double g = 0.5 * kappa * dd * dd, thr, s2, t, g1 = 0.0, gp = 0.0;
            if (1.0 - v / best < g) g = 1.0 - v / best;
            thr = ACME_RIPPLE_DROP * g;
            if (thr < ACME_RIPPLE_IGNORE) thr = ACME_RIPPLE_IGNORE;
            s2 = 0.25 * live_period(a, P, f->m, thr) / t0;
            dd += (s2 > step) ? s2 : step;
            t = t0 * (1.0 + sg * dd);
            v = (t > gmin && t < gmax) ? ckpt_phi3(R, t, 1, &g1, &gp) : -1.0;
            sv[side][ns[side]] = v;
            st[side][ns[side]] = t;
            sd[side][ns[side]] = g1;
            sq[side][ns[side]] = gp;
            ns[side]++;
        }
    }
    for (k = ns[0] - 1; k >= 0; k--, n++) {
        ph[n] = sv[0][k];
        pt[n] = st[0][k];
        pd[n] = sd[0][k];
        pq[n] = sq[0][k];
    }
    *c0 = n;
    ph[n] = best;
    pd[n] = 0.0;
    pq[n] = 0.0;
    pt[n++] = t0;
    for (k = 0; k < ns[1]; k++, n++) {
        ph[n] = sv[1][k];
        pt[n] = st[1][k];
        pd[n] = sd[1][k];
        pq[n] = sq[1][k];
    }
    return n;
}

/* sample_bracket: the neighbours of sample k not above it, {below, above} (0 for an unknown side): they
 * bracket the local maximum an ascent from it looks for. sample_candidate: whether the sample k (phi =
 * ph[k] > 0, phi' = pd[k], at pt[k]; samples ascending in tau, t0 at c0 excluded) starts a candidate
 * local maximum, and its estimated height *est. A sampled local maximum (neither neighbour
 * above it) is one, as is a sample whose uphill neighbour (phi' points there) is not above it or lies
 * past the samples: a maximum lies between them (a sawtooth peak between quarter-period samples is
 * caught so although both neighbours of its samples may be higher). Not when the uphill neighbour is
 * t0 (its own maximum, probed apart). *est: where phi' changes sign towards the uphill neighbour u,
 * the height where the tangents at k and u meet (exact for a tent), else ph[k]. */
static void sample_bracket(const double *ph, const double *pt, int nt, int k, double *br) {
    br[0] = (k > 0 && ph[k - 1] <= ph[k]) ? pt[k - 1] : 0.0;
    br[1] = (k < nt - 1 && ph[k + 1] <= ph[k]) ? pt[k + 1] : 0.0;
}

static int sample_candidate(const double *ph, const double *pt, const double *pd, int nt, int c0, int k,
                            double *est) {
    double v = ph[k], g = pd[k];
    int lo_ok = k == 0 || ph[k - 1] <= v, hi_ok = k == nt - 1 || ph[k + 1] <= v, u;
    if (!(v > 0)) return 0;
    *est = v;
    if (lo_ok && hi_ok) return 1;
    u = (g > 0) ? k + 1 : (g < 0) ? k - 1 : -2;
    if (u == -2 || u == c0 || !((u < 0 || u >= nt) ? 1 : ph[u] <= v)) return 0;
    if (u >= 0 && u < nt && ph[u] > 0 && pd[u] * g < 0) {
        double ts = (ph[u] - v + g * pt[k] - pd[u] * pt[u]) / (g - pd[u]), a = pt[k], b = pt[u];
        if (a > b) { a = pt[u]; b = pt[k]; }
        if (ts < a) ts = a;
        if (ts > b) ts = b;
        *est = v + g * (ts - pt[k]);
    }
    return 1;
}

/* Peaks hidden between two samples, into kp (returns how many, at most 3; one evaluation at each
 * decides): where phi rises at both samples k, k + 1 (or falls at both), neither t0, a maximum between
 * them needs kinks there (a kink peak where phi' falls, or a smooth maximum past one where it rises);
 * the peak_probe from the end sloping into the pair (phi, phi', phi'' of the sample) with the highest
 * predicted height, if that beats best (pairs whose first-order rise ph + |pd| (t_{k+1} - t_k) does not
 * are skipped; seen: a kink peak 1.6e-6, a smooth maximum past a kink 6.5e-6 above the best); and next
 * to t0, where the neighbouring sample slopes up towards it, the peak_probe between them short of t0's
 * own kink (phi rising to t0 through a peak and a valley: 5.6e-5 and 3.9e-5 above the best). */
static int kink_between(const renewal *R, const double *ph, const double *pt, const double *pd, const double *pq,
                        int nt, int c0, double best, double *kp) {
    double bt = -1.0, be = best, t0 = pt[c0], tk, est;
    int k, n = 0;
    for (k = 0; k + 1 < nt; k++) {
        int a;
        if (k == c0 || k + 1 == c0 || !(ph[k] > 0) || !(ph[k + 1] > 0)) continue;
        if (!((pd[k] > 0 && pd[k + 1] > 0) || (pd[k] < 0 && pd[k + 1] < 0))) continue;
        a = (pd[k] > 0) ? k : k + 1;  /* the end whose slope points into the pair */
        est = ph[a] + fabs(pd[a]) * (pt[k + 1] - pt[k]);
        if (!(est > be)) continue;  /* the first-order rise from that end: too low, skip the model */
        tk = peak_probe(R, pt[a], ph[a], pd[a], pq[a], pt[(a == k) ? k + 1 : k], &est);
        if (tk > 0.0 && est > be) {
            be = est;
            bt = tk;
        }
    }
    if (bt > 0.0) kp[n++] = bt;
    if (c0 > 0 && ph[c0 - 1] > 0 && pd[c0 - 1] > 0) {
        tk = peak_probe(R, pt[c0 - 1], ph[c0 - 1], pd[c0 - 1], pq[c0 - 1], t0 * (1.0 - 4.0 * ACME_KINK_EPS), &est);
        if (tk > 0.0) kp[n++] = tk;
    }
    if (c0 + 1 < nt && ph[c0 + 1] > 0 && pd[c0 + 1] < 0) {
        tk = peak_probe(R, pt[c0 + 1], ph[c0 + 1], pd[c0 + 1], pq[c0 + 1], t0 * (1.0 + 4.0 * ACME_KINK_EPS), &est);
        if (tk > 0.0) kp[n++] = tk;
    }
    return n;
}

/* Under a piecewise hazard phi has local maxima a ripple period apart near the best one (see ripple).
 * The smooth part of phi drops by kappa d^2 / 2 (relative) at tb (1 + d), with kappa from the leading
 * terms phi ~ tau U / (tau + C) - tau G0 / 2 (kappa = 2 U C tb^2 / ((tb + C)^3 phi); phi'' at tb itself
 * carries the ripple's curvature): so only |d| <= sqrt(2 amp / kappa) can hold a better maximum. Sample
 * phi and phi' there at a quarter of the shortest ripple period (at most ACME_RIPPLE_K points a side);
 * evaluate the peaks kink_between predicts between samples; run Newton from the two best sampled candidates
 * (sample_candidate), each within its sampled neighbours (an ascent free to climb past them reached a
 * lower maximum it already knew and missed the one by the sample: 7.6e-5), and, on each side of tb, from
 * the first of two probes within half a step where phi' points away from tb: by the kink where phi' is
 * predicted to point away the most (split_probe, from phi''(tb) and the kinks' jumps: a valley of phi
 * that splits tb's maximum in two; the probes at 1/32, 1/16, ..., 1/2 of a step they replace cost up to
 * 10 evaluations and missed some), then half a step; and search again around any better point found
 * (once only beyond half the window: a better maximum one ripple past a probe's was missed, 1.4e-6;
 * the repeat costs ~15 % of the rate); an ascent from a sample steps into an unbounded side by 1 + step,
 * not x4 (a x4 step from the window's outermost sample jumped the peak next to it: 1.5e-4). When the
 * window is capped (2 amp > kappa
 * ACME_RIPPLE_WIN^2) a ripple that large can make a maximum anywhere between the guard scan's sqrt 2
 * samples (seen: 33 % away, 1.06e-4 better): the bands from the cap out to tb sqrt 2 and tb / sqrt 2 are
 * sampled at a quarter of the shortest period among the breaks whose ripple a_j is at least a quarter
 * of the smooth drop kappa ACME_RIPPLE_WIN^2 / 2 at the cap (outer_period; shorter ripples cannot lift a
 * point there above tb by themselves), at most ACME_RIPPLE_KO points a side, and Newton runs from the
 * best sampled local maximum. Returns the best point, *best = phi there. */
double ckpt_ripple_search(renewal *R, double tb, double *best, double pp, double gmin, double gmax) {
    double ph[2 * ACME_RIPPLE_K + 1], pt[2 * ACME_RIPPLE_K + 1], pd[2 * ACME_RIPPLE_K + 1], pq[2 * ACME_RIPPLE_K + 1];
    int round;
    for (round = 0; round < 3; round++) {
        double period, amp = ripple(R, tb, *best, &period), x = tb + R->C, kappa, win, step, t0 = tb, pp0 = pp;
        double cph[2] = {-1.0, -1.0}, moved = 0.0;
        int K, k, c, nt, c0, probed[2] = {0, 0}, cand[2] = {0, 0}; /* candidates: sample indices */
        double best0 = *best;
        if (!(amp > ACME_RIPPLE_SMALL) || !isfinite(period)) return tb;
        kappa = 2.0 * R->U * R->C * tb * tb / (x * x * x * *best);
        win = (kappa * ACME_RIPPLE_WIN * ACME_RIPPLE_WIN > 2.0 * amp) ? sqrt(2.0 * amp / kappa) : ACME_RIPPLE_WIN;
        step = 0.25 * period / tb;
        K = (int)ceil(win / step);
        if (K > ACME_RIPPLE_K) {
            K = ACME_RIPPLE_K;
            step = win / K;
        }
        nt = ripple_samples(R, t0, *best, kappa, step, win, K, gmin, gmax, ph, pt, pd, pq, &c0);
        for (k = 0; k < nt; k++) {  /* the two best sampled candidates other than t0 (sample_candidate) */
            double v;
            if (k == c0 || !sample_candidate(ph, pt, pd, nt, c0, k, &v)) continue;
            c = (v > cph[0]) ? 0 : (v > cph[1]) ? 1 : 2;
            if (c == 0) {
                cph[1] = cph[0];
                cand[1] = cand[0];
            }
            if (c < 2) {
                cph[c] = v;
                cand[c] = k;
            }
        }
        {  /* sawtooth peaks hidden between samples (kink_between) */
            double kp[3], gk, ppk, pk;
            int nk = kink_between(R, ph, pt, pd, pq, nt, c0, *best, kp), i;
            for (i = 0; i < nk; i++) {
                if (!(kp[i] > gmin && kp[i] < gmax)) continue;
                pk = ckpt_phi3(R, kp[i], 2, &gk, &ppk);
                if (pk > *best) {
                    *best = pk;
                    tb = kp[i];
                    pp = ppk;
                    moved = fabs(kp[i] / t0 - 1.0);
                }
            }
        }
        for (c = 0; c < 2 + 2 * ACME_RIPPLE_NPROBE; c++) {
            /* c < 2: the sampled candidates; then probes on each side of t0 within half a step: by the
             * kink there that raises phi' the most (a valley of phi: it can split t0's maximum), then at
             * half a step; Newton from the first where phi' points away from t0 */
            int side = (c - 2) / ACME_RIPPLE_NPROBE, level = (c - 2) % ACME_RIPPLE_NPROBE;
            double t2, p2, pp2, start, first[3], cbr[2], *known = NULL, *br = NULL;
            if (c < 2) {
                if (!(cph[c] > 0)) continue;
                start = pt[cand[c]];  /* phi, phi', phi'' there are the sample's */
                first[0] = ph[cand[c]];
                first[1] = pd[cand[c]];
                first[2] = pq[cand[c]];
                known = first;
                sample_bracket(ph, pt, nt, cand[c], cbr);
                br = cbr;
            } else {
                double half = 0.5 * step * t0;
                if (probed[side]) continue;
                if (level == 0) {
                    start = split_probe(R, t0, pp0, side, half);
                    if (!(start > 0.0)) continue;
                } else {
                    start = t0 + ((side == 0) ? half : -half);
                }
                if (!(start > gmin && start < gmax)) continue;
                first[0] = ckpt_phi3(R, start, 2, &first[1], &first[2]);
                if (!((side == 0) ? first[1] > 0 : first[1] < 0)) continue;
                probed[side] = 1;
                known = first;
            }
            t2 = ckpt_local_max_from(R, start, gmin, gmax, known, br, (c < 2) ? 1.0 + step : ACME_UPHILL, &p2, &pp2);
            if (p2 > *best) {
                *best = p2;
                tb = t2;
                pp = pp2;
                moved = fabs(t2 / t0 - 1.0);
            }
        }
        if (round == 0 && kappa * ACME_RIPPLE_WIN * ACME_RIPPLE_WIN < 2.0 * amp) {
            double p2, pp2, t2, bs = -1.0, bt = 0.0, bbr[2] = {0.0, 0.0}, bso = 0.0;
            int side;
            for (side = 0; side < 2; side++) {
                double lim = side ? 1.0 - 1.0 / ROOT2 : ROOT2 - 1.0, so = 0.25 * outer_period(R, t0, best0, 0.125 * kappa * ACME_RIPPLE_WIN * ACME_RIPPLE_WIN) / t0;
                double prev2 = -1.0, prev = -1.0, tp = 0.0, tp2 = 0.0, v, t;
                int n, i;
                if (!(so > 0) || !isfinite(so)) so = (lim - ACME_RIPPLE_WIN) / ACME_RIPPLE_KO;
                n = (int)ceil((lim - ACME_RIPPLE_WIN) / so);
                if (n > ACME_RIPPLE_KO) {
                    n = ACME_RIPPLE_KO;
                    so = (lim - ACME_RIPPLE_WIN) / n;
                }
                for (i = 0; i <= n + 1; i++) {  /* sampled local maxima of the outer band (i = n + 1: flush) */
                    double g, gp, d = ACME_RIPPLE_WIN + i * so;
                    t = t0 * (1.0 + (side ? -d : d));
                    v = (i <= n && t > gmin && t < gmax) ? ckpt_phi3(R, t, 0, &g, &gp) : -1.0;
                    if (i >= 1 && prev > 0 && prev >= v && (i == 1 || prev > prev2) && prev > bs) {
                        bs = prev;
                        bt = tp;
                        /* its neighbours in the band bracket its local maximum (the inner one of the
                         * band's first sample is not sampled; past the last, the range's end) */
                        bbr[1 - side] = (i <= n) ? t : 0.0;
                        bbr[side] = (i >= 2) ? tp2 : 0.0;
                        bso = so;
                    }
                    prev2 = prev;
                    prev = v;
                    tp2 = tp;
                    tp = t;
                }
            }
            if (bs > 0) {
                t2 = ckpt_local_max_from(R, bt, gmin, gmax, NULL, bbr, 1.0 + bso, &p2, &pp2);
                if (p2 > *best) {
                    *best = p2;
                    tb = t2;
                    pp = pp2;
                    moved = fabs(t2 / t0 - 1.0);
                }
            }
        }
        if (!(moved > 0.0)) break;
    }
    return tb;
}

/* Guard scan step (checkpoint.c, step 2) at tau with phi = ph < best under a piecewise hazard: the ratio
 * to the next sample. The scan steps by sqrt 2 (or further where phi(s) <= s E[N](tau) <= best), which a
 * smooth phi allows; but a ripple (see ripple) as large as the gap 1 - ph / best can lift a point between
 * the samples above the best (a large wear-out jump makes a peak where a checkpoint of the heaviest
 * restart node ends just before the jump: seen 7 % above the best, between samples 1.41 apart). The
 * breaks whose ripples a_j, together with the smaller ones, exceed the gap are sampled at a quarter of
 * their shortest period: ratio 1 + period / (4 tau), within [ACME_GUARD_MIN, sqrt 2], and *rippled = 1
 * (the scan then also probes the sharpest kink between its samples, ckpt_kink_peak). */
double ckpt_guard_ratio(renewal *R, double tau, double ph, double best, int *rippled) {
    const acme_failure *f = R->f;
    double x = tau + R->C, gap = 1.0 - ph / best, amp = 0.0, P = INFINITY, below = 0.0, ratio;
    int j, q;
    *rippled = 0;
    if (f->family != ACME_PIECEWISE || !(ph > 0) || !(gap > 0)) return ROOT2;
    for (j = 1; j < f->m; j++) {  /* a_j into omq (scratch until the next evaluation) */
        double Wj = 0.0;
        for (q = 0; q < R->Q && R->r[q] + x < f->b[j]; q++) Wj += R->w[q];
        R->omq[j] = tau * x * fabs(f->h[j] - f->h[j - 1]) * R->SH[j] * Wj / (8.0 * ph);
        amp += R->omq[j];
    }
    if (!(amp > gap)) return ROOT2;
    *rippled = 1;
    for (;;) {  /* the smallest ripples while together below the gap do not set the period */
        int jm = -1;
        for (j = 1; j < f->m; j++)
            if (R->omq[j] >= 0.0 && (jm < 0 || R->omq[j] < R->omq[jm])) jm = j;
        if (jm < 0 || below + R->omq[jm] > gap) break;
        below += R->omq[jm];
        R->omq[jm] = -1.0;
    }
    for (j = 1; j < f->m; j++)
        if (R->omq[j] > 0.0 && x * x / (f->b[j] - R->r[0]) < P) P = x * x / (f->b[j] - R->r[0]);
    ratio = 1.0 + 0.25 * P / tau;
    if (ratio < ACME_GUARD_MIN) ratio = ACME_GUARD_MIN;
    return (ratio < ROOT2) ? ratio : ROOT2;
}

/* Piecewise hazard: the kink in (lo, hi) where phi' falls the most (any index i: S(r_q + i x) crosses
 * b_j at x = (b_j - r_q) / i, phi' falling by tau w_q i S(b_j) (h_j - h_{j-1}) where the hazard
 * increases; for a node and break the largest i in the range), -1 for none. A wear-out jump makes phi
 * a sawtooth there, its peak at the kink: sampling at a quarter period can miss the top. */
double ckpt_kink_peak(const renewal *R, double lo, double hi) {
    const acme_failure *f = R->f;
    double xlo = lo + R->C, xhi = hi + R->C, best = 0.0, tk = -1.0;
    int j, q;
    for (j = 1; j < f->m; j++) {
        double dh = f->h[j] - f->h[j - 1];
        if (!(dh > 0.0)) continue;
        for (q = 0; q < R->Q && R->r[q] + xlo < f->b[j]; q++) {
            double d = f->b[j] - R->r[q], i = ceil(d / xlo) - 1.0, xk, v;
            if (i < 1.0) continue;
            xk = d / i;
            if (!(xk > xlo && xk < xhi)) continue;
            v = (xk - R->C) * R->w[q] * i * R->SH[j] * dh;
            if (v > best) {
                best = v;
                tk = xk - R->C;
            }
        }
    }
    return tk;
}
