/*
 * Monte Carlo run simulator: one training run of W seconds of work, checkpoint every tau seconds of
 * work (blocking cost C; the last, possibly shorter, segment also ends with a checkpoint), failures
 * from a renewal process whose clock restarts at every failure (same convention as checkpoint.c).
 *
 * Per failure, in this order, four uniforms of the replica's own stream are consumed:
 *   u1 -> failure type j (inverse of the cumulative type probabilities),
 *   u2, u3 -> restart time R_j (fixed a; lognormal exp(a + b z), z by Box-Muller; exponential mean a),
 *   u4 -> time F to the next failure, measured from this failure (F = H^{-1}(-log u4)).
 * If F < R the restart is interrupted by the next failure (the restart time spent so far is downtime).
 * Work since the last completed checkpoint (including a partial checkpoint write) is lost.
 * The first failure time is drawn from u0 at t = 0 (the job starts fresh, no restart).
 *
 * Accounting identity per replica: wall = W + lost + restart + ckpt, where ckpt = C x completed
 * checkpoints. Lost work and restart downtime are attributed to the failure's type.
 *
 * Replica r uses the stream acme_rng_seed(seed, r) (splitmix64 -> xoshiro256**), so results do not
 * depend on the number of threads. A replica whose wall time exceeds max_wall stops (finished = 0).
 */
#include "acme_solver.h"

#if !defined(_WIN32)
#include <pthread.h>
#define ACME_HAVE_PTHREADS 1
#endif

typedef struct {
    const acme_mc_spec *spec;
    const acme_failure *f;
    int64_t nseg;      /* number of segments, ceil(W / tau) */
    double last_len;   /* work in the last segment */
    acme_mc_out *out;
    int64_t start, end;
} mc_job;

static double draw_restart(const acme_mc_spec *sp, int j, double u2, double u3) {
    switch (sp->restart_kind[j]) {
    case 1: {
        double z = sqrt(-2.0 * log(u2)) * cos(6.283185307179586 * u3);
        return exp(sp->restart_a[j] + sp->restart_b[j] * z);
    }
    case 2: return -sp->restart_a[j] * log(u2);
    default: return sp->restart_a[j];
    }
}

static int draw_type(const acme_mc_spec *sp, double u) {
    int j;
    for (j = 0; j < sp->J - 1; j++)
        if (u < sp->type_cdf[j]) return j;
    return sp->J - 1;
}

static void run_replica(const mc_job *jb, int64_t r) {
    const acme_mc_spec *sp = jb->spec;
    const acme_failure *f = jb->f;
    acme_mc_out *o = jb->out;
    acme_rng g;
    const double tau = sp->tau, C = sp->ckpt, x = tau + C, cap = sp->max_wall;
    const int J = sp->J;
    double *tl = o->type_loss + (size_t)r * J;
    int32_t *tc = o->type_count + (size_t)r * J;
    double t = 0.0, lost = 0.0, rs = 0.0, ck = 0.0, next_fail;
    int64_t done = 0, nf = 0;
    int finished = 0, j;

    for (j = 0; j < J; j++) { tl[j] = 0.0; tc[j] = 0; }
    acme_rng_seed(&g, sp->seed, (uint64_t)r);
    next_fail = acme_inv_cumhaz(f, -log(acme_uniform(&g)));

    while (t <= cap) {
        int64_t rem = jb->nseg - done, k;
        double need = (double)(rem - 1) * x + jb->last_len + C, avail = next_fail - t, kf, pending;
        if (need <= avail) {  /* the run completes before the next failure */
            t += need;
            ck += (double)rem * C;
            done = jb->nseg;
            finished = 1;
            break;
        }
        kf = floor(avail / x);
        k = (kf < (double)(rem - 1)) ? (int64_t)kf : rem - 1;
        t += (double)k * x;
        ck += (double)k * C;
        done += k;
        /* failure at next_fail: lose the work since the last checkpoint */
        pending = next_fail - t;
        lost += pending;
        t = next_fail;
        for (;;) {
            double u1 = acme_uniform(&g), u2 = acme_uniform(&g), u3 = acme_uniform(&g);
            double u4 = acme_uniform(&g), R, F;
            nf++;
            j = draw_type(sp, u1);
            tc[j]++;
            R = draw_restart(sp, j, u2, u3);
            F = acme_inv_cumhaz(f, -log(u4));
            if (F >= R) {
                rs += R;
                tl[j] += pending + R;
                next_fail = t + F;
                t += R;
                break;
            }
            rs += F;  /* the restart is interrupted by the next failure */
            tl[j] += pending + F;
            t += F;
            pending = 0.0;
            if (t > cap) break;
        }
    }
    o->wall[r] = t;
    o->lost[r] = lost;
    o->restart[r] = rs;
    o->ckpt[r] = ck;
    o->n_fail[r] = nf;
    o->finished[r] = (uint8_t)finished;
}

static void *run_block(void *arg) {
    const mc_job *jb = (const mc_job *)arg;
    int64_t r;
    for (r = jb->start; r < jb->end; r++) run_replica(jb, r);
    return NULL;
}

int acme_mc_run(const acme_mc_spec *spec, int64_t n_rep, int n_threads, acme_mc_out *out) {
    acme_failure f;
    double *H = (double *)malloc(sizeof(double) * (size_t)(spec->family == ACME_PIECEWISE ? spec->P / 2 : 1));
    double ratio;
    int64_t nseg;
    mc_job base;
    int rc = 0;
    if (!H) return -2;
    if (acme_failure_init(&f, spec->family, spec->params, spec->P, H) != 0) {
        free(H);
        return -1;
    }
    /* ceil(W / tau), with a W/tau within 1e-12 of an integer taken as that integer */
    ratio = spec->work / spec->tau;
    nseg = (int64_t)ceil(ratio - 1e-12 * ratio);
    if (nseg < 1) nseg = 1;
    base.spec = spec;
    base.f = &f;
    base.nseg = nseg;
    base.last_len = spec->work - (double)(nseg - 1) * spec->tau;
    base.out = out;
    base.start = 0;
    base.end = n_rep;
    if (n_threads < 1) n_threads = 1;
    if ((int64_t)n_threads > n_rep) n_threads = (int)(n_rep > 0 ? n_rep : 1);
#ifdef ACME_HAVE_PTHREADS
    if (n_threads > 1) {
        pthread_t *th = (pthread_t *)malloc(sizeof(pthread_t) * (size_t)n_threads);
        mc_job *jobs = (mc_job *)malloc(sizeof(mc_job) * (size_t)n_threads);
        int *ok = (int *)malloc(sizeof(int) * (size_t)n_threads);
        int i;
        if (!th || !jobs || !ok) {
            run_block(&base);
        } else {
            for (i = 0; i < n_threads; i++) {
                jobs[i] = base;
                jobs[i].start = n_rep * i / n_threads;
                jobs[i].end = n_rep * (i + 1) / n_threads;
                ok[i] = (pthread_create(&th[i], NULL, run_block, &jobs[i]) == 0);
                if (!ok[i]) run_block(&jobs[i]);  /* could not start a thread: run inline */
            }
            for (i = 0; i < n_threads; i++)
                if (ok[i]) pthread_join(th[i], NULL);
        }
        free(th);
        free(jobs);
        free(ok);
    } else {
        run_block(&base);
    }
#else
    run_block(&base);
#endif
    free(H);
    return rc;
}
