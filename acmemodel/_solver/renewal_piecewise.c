/*
 * Renewal sums E[N], E[N]', E[N]'' under a piecewise-constant hazard (the sums and their notation are
 * described at the top of checkpoint_sums.c, which dispatches here; renewal.h is the interface):
 * closed form piece by piece (geometric series), node by node or with the nodes of a piece in groups.
 */
#include "renewal.h"

/* ---------------------------------------------------------------- piecewise-constant hazard */

/* sum_{m<c} q^m, m q^m, m^2 q^m with q = exp(-delta), omq = 1 - q and rq = 1 / omq (given, one division
 * per piece); c < 0 means infinity; *qc = q^c (0 for c < 0) */
static void geometric_sums(double delta, double omq, double rq, double c, double *A, double *B, double *D,
                           double *qc) {
    double q = 1.0 - omq;
    if (c < 0) {
        *A = rq;
        *B = q * rq * rq;
        *D = q * (1.0 + q) * (rq * rq * rq);
        *qc = 0.0;
    } else if (delta == 0.0) {
        *A = c;
        *B = 0.5 * c * (c - 1.0);
        *D = (c - 1.0) * c * (2.0 * c - 1.0) / 6.0;
        *qc = 1.0;
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
        *qc = qm;
    } else {
        double em = expm1(-c * delta);
        *qc = 1.0 + em;
        *A = -em * rq;
        *B = (*A - 1.0 - (c - 1.0) * *qc) * rq;
        *D = (2.0 * (*B) - *A + 1.0 - (c - 1.0) * (c - 1.0) * *qc) * rq;
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

/* All restart nodes at once, piece by piece (nodes sorted by r), node by node. In piece j node q has the terms
 * i in [ilo_q, ihi_q) (ilo_q the first index with r_q + i x >= b_j), S(r_q + i x) = S_lo,q exp(-h_j x)^(i-ilo_q),
 * a geometric series summed in closed form with f = h_j S, f' = -h_j^2 S. Consecutive nodes with the same
 * (ilo, ihi) share the series and S_lo,q = S_lo,g exp(-h_j (r_q - r_g)) (r_g the first node of the group),
 * the ratio a running product of the per-scenario factors u: one exp and one geometric series per group
 * and piece (the nodes' indices change by at most one per x of r), a multiply-add per node.
 * Stops before piece j once S(b_j) wsum / (1 - exp(-hmin_j x)) bounds the rest below ACME_STOP of the sum. */
void ckpt_piecewise_sums_nodes(renewal *R, double x, double *acc) {
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
                    double qc;
                    geometric_sums(hj * x, R->omq[j], rq, c, &A, &B, &D, &qc);
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
                prod *= R->uq[(size_t)j * Q + q];
                Wg += w[q] * prod;
            }
        }
    }
}

/* The groups of piecewise_sums_nodes (maximal runs of nodes with the same first index ilo at b_j and ihi
 * at b_{j+1}) from the runs of each index (index_runs, one walk per break shared by the two pieces it
 * bounds) instead of node by node: ilo and ihi do not increase with r, and a node after q keeps q's ilo
 * (ihi) exactly while r + (ilo - 1) x < b_j (r + (ihi - 1) x < b_{j+1}), the test first_index_at
 * applies, so the groups are the same. A group's terms are sum_q w_q exp(-h_j (r_q -
 * r_0)) (a plain sum of the per-scenario table V_j[q], four partial sums: no dependency chain) times
 * exp(-(H_j + h_j (r_0 + ilo x - b_j))): sums of positive numbers, rounding ~1e-16 relative (a difference
 * of prefix sums would lose the digits of a light group after heavy ones). Used when no factor of a node
 * that can have terms in piece j < m - 1 is below exp(-ACME_GROUP_MAX) (R->grouped, ckpt_renewal_init;
 * a group's exp is then below exp(ACME_GROUP_MAX), no overflow), else piecewise_sums_nodes. The
 * node-by-node walk (index tests, a running product) was half the time of an evaluation. A piece's groups
 * and weights are kept from the last evaluation (R->gcache) and reused at the next tau when every group's
 * first and last nodes keep its two indices (a Newton step, a probe or a neighbouring ripple sample
 * rarely moves a node across a break): the same groups, so the same sums bit for bit. */

/* The runs of nodes [0, n) with the same first index i >= 1 at which r + i x >= b (i non-increasing in q):
 * run k starts at node s[k] with index v[k]; a node after q keeps q's index L exactly while
 * r + (L - 1) x < b. Returns their number. */
static int index_runs(const double *r, int n, double x, double b, int *s, double *v) {
    int q = 0, nr = 0;
    double L = 0.0;
    while (q < n) {
        /* the node ending the last run has r + (L - 1) x >= b: its index is L - 1 unless r + (L - 2) x >= b
         * too (the common case, checked without first_index_at's division) */
        L = (nr > 0 && (L == 2.0 || r[q] + (L - 2.0) * x < b)) ? L - 1.0 : first_index_at(r[q], x, b);
        s[nr] = q;
        v[nr] = L;
        nr++;
        if (L <= 1.0) break;  /* the rest have index 1 */
        for (q++; q < n && r[q] + (L - 1.0) * x < b; q++) {}
    }
    return nr;
}

/* node q's first index at b is L (the two tests first_index_at ends on) */
static int index_is(double r, double x, double b, double L) {
    return r + L * x >= b && (L == 1.0 || r + (L - 1.0) * x < b);
}

void ckpt_piecewise_sums_groups(renewal *R, double x, int want, double *acc) {
    const acme_failure *f = R->f;
    const double *r = R->r;
    double pilo, pE = 0.0, E, eh, pc, pA = 0.0, pB = 0.0, pD = 0.0, pqc = 0.0;
    int j, Q = R->Q, m = f->m, qe = 0, qprev = -1, nlo = 0, nhi = 0;
    /* runs of the first index at b_j (lo) and b_{j+1} (hi): the hi runs of piece j are the lo runs of
     * piece j + 1 (scratch: the Weibull cluster buffer, unused under a piecewise hazard) */
    int *slo = (int *)R->cbuf, *shi = slo + (Q + 1), *st;
    double *vlo = R->cbuf + (Q + 1), *vhi = vlo + (Q + 1), *vt;
    acc[0] = acc[1] = acc[2] = 0.0;
    for (j = 0; j < m; j++) {
        double hj = f->h[j], bj = f->b[j], hi_b = (j < m - 1) ? f->b[j + 1] : INFINITY, rq;
        const double *Vj = R->u + (size_t)j * Q;
        double *gm = R->gcache + (size_t)j * CKPT_GROUP_SLOT(Q), *gr;
        int g, ng, valid;
        /* the stop test of piecewise_sums_nodes; 1 - exp(-y) <= min(1, y) (with a margin over its rounding) decides most pieces without expm1 */
        if (j > 0 && R->hmin[j] > 0) {
            double y = R->hmin[j] * x, lim = R->SH[j] * R->wsum;
            if (lim <= ACME_STOP * acc[0] * ((y < 1.0) ? y : 1.0) * 1.000001 && lim <= ACME_STOP * acc[0] * -expm1(-y)) break;
        }
        while (qe < Q && r[qe] + x < hi_b) qe++;
        if (qe == 0) continue;
        R->omq[j] = -expm1(-hj * x);
        rq = 1.0 / R->omq[j];
        pilo = -2.0;
        pc = -2.0;
        eh = 0.0;
        /* the groups of the last evaluation in this piece, if every one keeps its indices at this x (its
         * first and last nodes decide: the index does not increase with r): then also its weight G */
        ng = (int)gm[0];
        valid = ng > 0 && (int)gm[1] == qe;
        for (g = 0; g < ng && valid; g++) {
            gr = gm + 2 + 5 * (size_t)g;
            if (j > 0) valid = index_is(r[(int)gr[0]], x, bj, gr[2]) &&
                               (gr[2] == 1.0 || r[(int)gr[1] - 1] + (gr[2] - 1.0) * x < bj);
            if (valid && j < m - 1) valid = index_is(r[(int)gr[0]], x, hi_b, gr[3]) &&
                                            (gr[3] == 1.0 || r[(int)gr[1] - 1] + (gr[3] - 1.0) * x < hi_b);
        }
        if (!valid) {
            int a = 0, c2 = 0, q = 0;
            /* lo runs: the previous piece's hi runs over its nodes [0, qprev) (the nodes after have
             * r + x >= b_j: index 1), else from scratch (b_0 = 0: index 1) */
            if (j == 0) {
                slo[0] = 0;
                vlo[0] = 1.0;
                nlo = 1;
            } else if (qprev < 0) {
                nlo = index_runs(r, qe, x, bj, slo, vlo);
            } else {
                st = slo; slo = shi; shi = st;
                vt = vlo; vlo = vhi; vhi = vt;
                nlo = nhi;
                if (qprev < qe && vlo[nlo - 1] > 1.0) {
                    slo[nlo] = qprev;
                    vlo[nlo] = 1.0;
                    nlo++;
                }
            }
            nhi = (j < m - 1) ? index_runs(r, qe, x, hi_b, shi, vhi) : 0;
            qprev = qe;
            for (ng = 0; q < qe; ng++) {  /* the groups: maximal runs of equal (ilo, ihi), and their weights */
                double ilo = vlo[a], ihi = (j < m - 1) ? vhi[c2] : 0.0, G = 0.0;
                int elo = (a + 1 < nlo) ? slo[a + 1] : qe, ehi = (j < m - 1 && c2 + 1 < nhi) ? shi[c2 + 1] : qe;
                int e = (elo < ehi) ? elo : ehi;
                if (e == elo) a++;
                if (e == ehi) c2++;
                if (j == m - 1 || ihi > ilo) {
                    double g0 = 0.0, g1 = 0.0, g2 = 0.0, g3 = 0.0;
                    int k = q;
                    for (; k + 3 < e; k += 4) {
                        g0 += Vj[k];
                        g1 += Vj[k + 1];
                        g2 += Vj[k + 2];
                        g3 += Vj[k + 3];
                    }
                    for (; k < e; k++) g0 += Vj[k];
                    G = (g0 + g1) + (g2 + g3);
                }
                gr = gm + 2 + 5 * (size_t)ng;
                gr[0] = q;
                gr[1] = e;
                gr[2] = ilo;
                gr[3] = ihi;
                gr[4] = G;
                q = e;
            }
            gm[0] = ng;
            gm[1] = qe;
        } else {
            qprev = -1;  /* the hi runs were not computed: the next piece starts its lo runs afresh */
        }
        for (g = 0; g < ng; g++) {
            double ilo, ihi, G;
            gr = gm + 2 + 5 * (size_t)g;
            ilo = gr[2];
            ihi = gr[3];
            G = gr[4];
            if (j == m - 1 || ihi > ilo) {
                if (G > 0.0) {
                    double c = (j < m - 1) ? ihi - ilo : -1.0, A, B, D, S;
                    /* the group's exp from the previous group's (same ilo, or one less: times exp(h_j x)) */
                    if (ilo == pilo) {
                        E = pE;
                    } else if (pilo > 0.0 && ilo >= pilo - 8.0 && hj * x * (pilo - ilo) <= 30.0) {
                        /* ilo fell by d <= 8: times exp(h_j x)^d (d products, within d/2 ulp of the exp) */
                        double d = pilo - ilo;
                        if (eh == 0.0) eh = exp(hj * x);
                        E = pE * eh;
                        for (; d > 1.0; d -= 1.0) E *= eh;
                    } else {
                        E = exp(-(f->H[j] + hj * (r[0] + ilo * x - bj)));
                    }
                    pE = E;
                    pilo = ilo;
                    S = G * E;
                    /* the geometric sums of the previous group's c, or of c - 1 plus its last term */
                    if (c == pc) {
                        A = pA; B = pB; D = pD;
                    } else if (c == pc + 1.0 && pc >= 1.0) {
                        A = pA + pqc;
                        B = pB + pc * pqc;
                        D = pD + pc * pc * pqc;
                        pqc *= 1.0 - R->omq[j];
                    } else if (want || c < 0.0 || hj == 0.0 || (c * (hj * x) < 0.05 && c <= 4096.0)) {
                        geometric_sums(hj * x, R->omq[j], rq, c, &A, &B, &D, &pqc);
                    } else {  /* E[N] only: A and q^c of geometric_sums' closed form */
                        double em = expm1(-c * (hj * x));
                        pqc = 1.0 + em;
                        A = -em * rq;
                        B = D = 0.0;
                    }
                    pc = c; pA = A; pB = B; pD = D;
                    acc[0] += S * A;
                    if (want) {
                        acc[1] += hj * S * (ilo * A + B);
                        acc[2] += -hj * hj * S * (ilo * ilo * A + 2.0 * ilo * B + D);
                    }
                }
            }
        }
    }
}
