/*
 * Step 1 of the checkpoint-interval optimiser (the model and the optimum are described at the top of
 * checkpoint.c): the safeguarded Newton ascent to a local maximum of phi(tau) = tau E[N](tau), used by the
 * optimiser (checkpoint.c) and by the ripple search (checkpoint_ripple.c) through renewal.h.
 */
#include <float.h>
#include "renewal.h"

#define ACME_NEWTON_DONE 1e-9 /* a Newton step below this relative size is not taken: the point is the optimum */

/* Piecewise hazard: the kink of phi in (lo, hi) where phi' falls the most, -1 for none. S(r_q + i x) has a
 * kink at x = (b_j - r_q) / i, where phi' jumps by tau w_q i S(b_j) (h_{j-1} - h_j): downwards (a possible
 * maximum of phi at the kink) where the hazard increases. */
static double kink_in(const renewal *R, double lo, double hi) {
    const acme_failure *f = R->f;
    double xlo = lo + R->C, xhi = hi + R->C, best = 0.0, tk = -1.0;
    int j, q;
    for (j = 1; j < f->m; j++) {
        double dh = f->h[j] - f->h[j - 1];
        if (!(dh > 0.0)) continue;
        for (q = 0; q < R->Q && R->r[q] + xlo < f->b[j]; q++) {
            double d = f->b[j] - R->r[q], i = floor(d / xhi) + 1.0, xk = d / i;
            if (!(xk > xlo && xk < xhi)) continue;  /* at most one i: (lo, hi) is narrower than x / i here */
            if (R->w[q] * i * R->SH[j] * dh > best) {
                best = R->w[q] * i * R->SH[j] * dh;
                tk = xk - R->C;
            }
        }
    }
    return tk;
}

#define ACME_KINK_NEAR 1e-4 /* ... once the bracket around it is this narrow (relative) */

/* safeguarded Newton ascent to a local maximum of phi from t within [lo, hi]. The best point tb (phi =
 * pb, phi' = gb, phi'' = ppb) and a bracket lo < tb < hi with phi(lo), phi(hi) <= pb (or lo, hi the
 * range's ends) hold a local maximum at least as high as pb: on the side phi' points to, (tb, hi) for
 * gb > 0, else (lo, tb). Each step evaluates Newton's point tb - gb / ppb when ppb < 0 and it falls on
 * that side, else the side's geometric midpoint, or a step uphill by the ratio uphill (x4, ACME_UPHILL,
 * unless the caller knows the scale of phi's features: then no step goes further) while that side is
 * unbounded; a
 * better point becomes tb (the old one a bound), a worse one bounds its side. So phi never ends below
 * its start (but for ACME_ASCENT_TOL a step): an uphill step that jumps over a valley onto a lower maximum is not taken (the Newton
 * iteration on phi' = 0 alone could, 70 % above the optimum on some wear-out hazards). Returns tb, *ph
 * = pb and *pp = ppb (E[T] at the result needs no further evaluation); the iteration stops when the
 * next step would be below ACME_NEWTON_DONE relative (quadratic convergence: the point is then within
 * ~1e-9 of the root, E[T] within ~1e-18). Piecewise hazard: where Newton cannot land in a side
 * narrower than 1e-4 (relative), phi' may jump there at a kink (kink_in): phi' 1e-10 either side of
 * the kink where it falls the most decides, and a maximum at the kink ends the search (bisection
 * towards it took ~30 evaluations). */
#define ACME_ASCENT_TOL 1e-12 /* a point within this (relative) below the best counts as better: rounding
                               * decides below it, and Newton's last steps must not depend on rounding */

static void ascent_update(double t, double ph, double g, double gp, double *tb, double *pb, double *gb,
                          double *ppb, double *lo, double *hi, int *lo_known, int *hi_known) {
    if (ph > *pb - ACME_ASCENT_TOL * fabs(*pb)) {
        if (t > *tb) { *lo = *tb; *lo_known = 1; }
        else { *hi = *tb; *hi_known = 1; }
        *tb = t; *pb = ph; *gb = g; *ppb = gp;
    } else if (t > *tb) {
        *hi = t; *hi_known = 1;
    } else {
        *lo = t; *lo_known = 1;
    }
}

double ckpt_local_max_from(renewal *R, double t, double lo, double hi, const double *first, const double *br,
                           double uphill, double *ph, double *pp) {
    double gmin = lo, gmax = hi, tb = t, pb, gb, ppb, tn;
    int lo_known = 0, hi_known = 0, it;
    if (br && br[0] > lo && br[0] < t) {  /* a known lower point below t bounds the ascent there */
        lo = br[0];
        lo_known = 1;
    }
    if (br && br[1] < hi && br[1] > t) {
        hi = br[1];
        hi_known = 1;
    }
    if (first) {  /* phi, phi', phi'' at t known (a probe) */
        pb = first[0];
        gb = first[1];
        ppb = first[2];
    } else {
        pb = ckpt_phi3(R, t, 2, &gb, &ppb);
    }
    for (it = 0; it < 200; it++) {
        double a, b, g, gp, p;
        int known;
        if (gb == 0.0 || (gb > 0 && tb >= gmax) || (gb < 0 && tb <= gmin)) break;
        a = (gb > 0) ? tb : lo;  /* the side holding the maximum */
        b = (gb > 0) ? hi : tb;
        known = (gb > 0) ? hi_known : lo_known;
        if (!known && uphill < ACME_UPHILL) {  /* the caller's scale: no step past it into the unknown */
            if (gb > 0 && b > uphill * tb) b = uphill * tb;
            if (gb < 0 && a < tb / uphill) a = tb / uphill;
        }
        tn = (ppb < 0) ? tb - gb / ppb : NAN;
        if (!(a < tn && tn < b) && known && R->f->family == ACME_PIECEWISE && b - a <= ACME_KINK_NEAR * b) {
            /* phi' changes sign in (a, b) where Newton cannot land: a jump at a kink? phi' on both sides
             * of the kink where it falls the most: a maximum there ends the search, else both points
             * narrow the bracket */
            double tk = kink_in(R, a, b), ka = tk * (1.0 - ACME_KINK_EPS), kb = tk * (1.0 + ACME_KINK_EPS);
            if (tk > 0.0 && a < ka && kb < b) {
                double pa, pbk, ga, gbk, ppa, ppk;
                pa = ckpt_phi3(R, ka, 2, &ga, &ppa);
                pbk = ckpt_phi3(R, kb, 2, &gbk, &ppk);
                ascent_update(ka, pa, ga, ppa, &tb, &pb, &gb, &ppb, &lo, &hi, &lo_known, &hi_known);
                ascent_update(kb, pbk, gbk, ppk, &tb, &pb, &gb, &ppb, &lo, &hi, &lo_known, &hi_known);
                if (ga > 0 && gbk < 0 && (tb == ka || tb == kb)) break;
                continue;
            }
        }
        if (!(a < tn && tn < b)) {
            if (known) tn = sqrt(a * b);
            else if (gb > 0) tn = (uphill * tb < gmax) ? uphill * tb : gmax;
            else tn = (tb / uphill > gmin) ? tb / uphill : gmin;
        }
        if (fabs(tn - tb) <= ACME_NEWTON_DONE * tb || (known && b - a <= 4.0 * DBL_EPSILON * b)) break;
        p = ckpt_phi3(R, tn, 2, &g, &gp);
        ascent_update(tn, p, g, gp, &tb, &pb, &gb, &ppb, &lo, &hi, &lo_known, &hi_known);
    }
    *ph = pb;
    *pp = ppb;
    return tb;
}
