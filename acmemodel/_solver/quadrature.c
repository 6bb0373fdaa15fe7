/*
 * Gauss rules of a discrete measure (restart-time nodes): used by checkpoint_sums.c to sum the renewal
 * terms under Weibull failures over a few nodes instead of all of them; twin: acmemodel/planner/reference_rule.py.
 *
 * The measure is mu = sum_q w_q delta(r_q) (Q points, w_q > 0). Its n-point Gauss rule (nodes rho_k,
 * weights v_k > 0, sum v_k = sum w_q) integrates every polynomial of degree < 2n exactly against mu.
 * Lanczos on diag(t) (t = (r - c)/s, centred and scaled) from the start vector sqrt(w / W) gives the
 * Jacobi matrix of mu (recurrence coefficients alpha_k, beta_k of its orthonormal polynomials), with
 * full reorthogonalisation (the rule's nodes are the eigenvalues of the leading n x n block, the
 * weights W times the squared first components of its eigenvectors: Golub & Welsch 1969), the
 * eigenproblem by implicit QL with Wilkinson shifts (Numerical Recipes tqli), carrying only the first
 * row of the eigenvector matrix.
 */
#include <float.h>
#include "acme_solver.h"

/* Extend the Lanczos state L to k recurrence coefficients alpha (the k-point rule). Returns the number
 * available: fewer when the Krylov space is exhausted (the measure has that many points, Q at most). */
int acme_lanczos_extend(acme_lanczos *L, int k) {
    int Q = L->Q, q, j;
    while (L->k < k && !L->done) {
        int n = L->k;
        double *v = L->V + (size_t)n * Q, a = 0.0, b2 = 0.0;
        for (q = 0; q < Q; q++) a += L->t[q] * (v[q] * v[q]);
        L->alpha[n] = a;
        L->k++;
        if (L->k == Q) {
            L->done = 1;
            break;
        }
        {
            double *u = v + Q, *vp = (n > 0) ? v - Q : NULL;
            for (q = 0; q < Q; q++) u[q] = (L->t[q] - a) * v[q] - (vp ? L->beta[n] * vp[q] : 0.0);
            for (j = 0; j <= n; j++) {  /* full reorthogonalisation (classical Gram-Schmidt) */
                const double *vj = L->V + (size_t)j * Q;
                double dt = 0.0;
                for (q = 0; q < Q; q++) dt += vj[q] * u[q];
                for (q = 0; q < Q; q++) u[q] -= dt * vj[q];
            }
            for (q = 0; q < Q; q++) b2 += u[q] * u[q];
            if (!(sqrt(b2) > 1e-13)) {  /* exhausted (t is scaled to [-1, 1]) */
                L->done = 1;
                break;
            }
            L->beta[n + 1] = sqrt(b2);
            for (q = 0; q < Q; q++) u[q] /= L->beta[n + 1];
        }
    }
    return L->k;
}

/* Initialise the state for nodes r (ascending), weights w (Q, > 0); buffers: V (Q (kmax + 1)) for up to
 * kmax coefficients (kmax < Q; Q^2 for all), t (Q), alpha, beta (kmax + 1). */
void acme_lanczos_init(acme_lanczos *L, int Q, const double *r, const double *w, double *V, double *t,
                       double *alpha, double *beta) {
    int q;
    double lo = r[0], hi = r[Q - 1];
    L->Q = Q;
    L->w = w;
    L->V = V;
    L->t = t;
    L->alpha = alpha;
    L->beta = beta;
    L->k = 0;
    L->done = 0;
    L->W = 0.0;
    for (q = 0; q < Q; q++) L->W += w[q];
    L->c = 0.5 * (lo + hi);
    L->s = (hi > lo) ? 0.5 * (hi - lo) : 1.0;
    for (q = 0; q < Q; q++) t[q] = (r[q] - L->c) / L->s;
    for (q = 0; q < Q; q++) V[q] = sqrt(w[q] / L->W);  /* v_0 */
    beta[0] = 0.0;
}

/* n-point Gauss rule (n <= steps available) into nodes (ascending, original units) and weights
 * (sum = W); work: n doubles. */
void acme_gauss_rule(const acme_lanczos *L, int n, double *nodes, double *weights, double *work) {
    double *d = nodes, *e = work, *z = weights;
    int i, l, m, it;
    for (i = 0; i < n; i++) {
        d[i] = L->alpha[i];
        e[i] = (i + 1 < n) ? L->beta[i + 1] : 0.0;
        z[i] = (i == 0) ? 1.0 : 0.0;
    }
    for (l = 0; l < n; l++) {
        for (it = 0; it < 60; it++) {
            double g, r, s, c, p, f, b;
            for (m = l; m < n - 1; m++) {
                double dd = fabs(d[m]) + fabs(d[m + 1]);
                if (fabs(e[m]) <= DBL_EPSILON * dd) break;
            }
            if (m == l) break;
            g = (d[l + 1] - d[l]) / (2.0 * e[l]);
            r = hypot(g, 1.0);
            g = d[m] - d[l] + e[l] / (g + ((g >= 0) ? fabs(r) : -fabs(r)));
            s = c = 1.0;
            p = 0.0;
            for (i = m - 1; i >= l; i--) {
                f = s * e[i];
                b = c * e[i];
                r = hypot(f, g);
                e[i + 1] = r;
                if (r == 0.0) {
                    d[i + 1] -= p;
                    e[m] = 0.0;
                    break;
                }
                s = f / r;
                c = g / r;
                g = d[i + 1] - p;
                r = (d[i] - g) * s + 2.0 * c * b;
                p = s * r;
                d[i + 1] = g + p;
                g = c * r - b;
                f = z[i + 1];  /* first row of the eigenvector matrix */
                z[i + 1] = s * z[i] + c * f;
                z[i] = c * z[i] - s * f;
            }
            if (r == 0.0 && i >= l) continue;
            d[l] -= p;
            e[l] = g;
            e[m] = 0.0;
        }
    }
    for (i = 0; i < n; i++) {  /* weights, units, ascending order (insertion sort, n small) */
        double ni = L->c + L->s * d[i], wi = L->W * z[i] * z[i];
        int j = i;
        while (j > 0 && nodes[j - 1] > ni) {
            nodes[j] = nodes[j - 1];
            weights[j] = weights[j - 1];
            j--;
        }
        nodes[j] = ni;
        weights[j] = wi;
    }
}
