/* Discrete-event cluster simulator (see cluster_sim.h; the rules are specified, line by line, by the NumPy twin
 * acmemodel/planner/reference_cluster.py, which this file reproduces exactly).
 *
 * Data structures: one event heap per partition for its own running jobs (also walked in order to find the EASY
 * shadow time) plus one heap for best-effort runs (lazy deletion of evicted runs by epoch); FIFO queues as doubly
 * linked lists over job indices (index order = FIFO order); per partition four histograms of node levels (free GPUs,
 * free + best-effort GPUs; over all nodes / over nodes outside the head's reservation) so that "does a g-GPU job fit"
 * costs O(G) instead of a scan over nodes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_sim.h"
#include "heap.h"

enum { ST_WAIT = 0, ST_RUN = 1, ST_RUN_BE = 2, ST_DONE = 3, ST_UNSCHED = 4 };
enum { H_FREE = 0, H_FREE_NR = 1, H_AVAIL = 2, H_AVAIL_NR = 3 };

typedef struct {
    const cs_input *in;
    cs_output *out;
    int64_t n, P, G, G1, N, reserved, depth;
    int best_effort, backfill;
    /* partitions */
    int64_t *off, *nn, *tot_free, *tot_be, *hist, *qhead, *qtail;
    int *rvalid;
    double *rT;
    uint8_t *dirty, *changed;
    cs_heap *own;
    /* nodes */
    int32_t *free_, *be_, *npart;
    uint8_t *resv;
    /* jobs */
    int8_t *state;
    int64_t *epoch, *poff, *qnext, *qprev, *bepos;
    int32_t *pool;
    /* best-effort runs */
    cs_heap beh;
    int64_t *belist, nbe;
    /* scratch */
    int64_t *proj, *aux, *victims, *chosen, *cur;
    int oom;
} S;

static inline int64_t kof(const S *s, int64_t g) { return g <= s->G ? 1 : (g + s->G - 1) / s->G; }
static inline int64_t cper(const S *s, int64_t g) { return g <= s->G ? g : s->G; }
static inline int64_t *H(S *s, int64_t p, int which) { return s->hist + (p * 4 + which) * s->G1; }

/* ---- node levels ---------------------------------------------------------------------------------------------- */
static void node_set(S *s, int64_t n, int32_t nf, int32_t nb) {
    int64_t p = s->npart[n];
    int32_t of = s->free_[n], ob = s->be_[n];
    int64_t *hf = H(s, p, H_FREE), *ha = H(s, p, H_AVAIL);
    hf[of]--; ha[of + ob]--;
    hf[nf]++; ha[nf + nb]++;
    if (!s->resv[n]) {
        int64_t *hfn = H(s, p, H_FREE_NR), *han = H(s, p, H_AVAIL_NR);
        hfn[of]--; han[of + ob]--;
        hfn[nf]++; han[nf + nb]++;
    }
    s->tot_free[p] += nf - of;
    s->tot_be[p] += nb - ob;
    s->free_[n] = nf;
    s->be_[n] = nb;
}

static void set_resv(S *s, int64_t n, uint8_t flag) {
    if (s->resv[n] == flag) return;
    int64_t p = s->npart[n];
    int64_t d = flag ? -1 : 1;
    H(s, p, H_FREE_NR)[s->free_[n]] += d;
    H(s, p, H_AVAIL_NR)[s->free_[n] + s->be_[n]] += d;
    s->resv[n] = flag;
}

static int fits(S *s, int64_t p, int64_t g, int use_be, int excl) {
    const int64_t *h = H(s, p, (use_be ? H_AVAIL : H_FREE) + (excl ? 1 : 0));
    if (g <= s->G) {
        for (int64_t lv = g; lv <= s->G; lv++)
            if (h[lv] > 0) return 1;
        return 0;
    }
    return h[s->G] >= kof(s, g);
}

/* ---- queues ---------------------------------------------------------------------------------------------------- */
static void q_remove(S *s, int64_t p, int64_t j) {
    if (s->qhead[p] == j) s->rvalid[p] = 0;
    int64_t a = s->qprev[j], b = s->qnext[j];
    if (a >= 0) s->qnext[a] = b; else s->qhead[p] = b;
    if (b >= 0) s->qprev[b] = a; else s->qtail[p] = a;
    s->qprev[j] = s->qnext[j] = -1;
}

/* queue order: higher priority first, then FIFO (index order) */
static inline int q_before(const S *s, int64_t a, int64_t b) {
    const int64_t *pr = s->in->prio;
    if (pr && pr[a] != pr[b]) return pr[a] > pr[b];
    return a < b;
}

static void q_insert(S *s, int64_t p, int64_t j) {
    int64_t c;
    if (s->qtail[p] < 0 || q_before(s, s->qtail[p], j)) {
        c = -1;
    } else {
        c = s->qhead[p];
        while (c >= 0 && q_before(s, c, j)) c = s->qnext[c];
    }
    /* insert before c (c == -1: at the tail) */
    int64_t a = c >= 0 ? s->qprev[c] : s->qtail[p];
    s->qprev[j] = a;
    s->qnext[j] = c;
    if (a >= 0) s->qnext[a] = j; else s->qhead[p] = j;
    if (c >= 0) s->qprev[c] = j; else s->qtail[p] = j;
    if (s->qhead[p] == j) s->rvalid[p] = 0;
}

/* ---- accounting ------------------------------------------------------------------------------------------------ */
static void account(S *s, int64_t j, double t, int be) {
    double lo = s->out->start[j] > s->in->w0 ? s->out->start[j] : s->in->w0;
    double hi = t < s->in->w1 ? t : s->in->w1;
    if (hi > lo) {
        int64_t g = s->in->gpus[j];
        double a = (double)(kof(s, g) * cper(s, g));
        s->out->busy[2 * s->out->ran_in[j] + (be ? 1 : 0)] += a * (hi - lo);
    }
}

static void release(S *s, int64_t j, int be) {
    int64_t g = s->in->gpus[j], k = kof(s, g), c = cper(s, g);
    for (int64_t i = 0; i < k; i++) {
        int64_t n = s->pool[s->poff[j] + i];
        node_set(s, n, s->free_[n] + (int32_t)c, s->be_[n] - (be ? (int32_t)c : 0));
    }
}

static int on_node(const S *s, int64_t b, int64_t node) {
    int64_t k = kof(s, s->in->gpus[b]);
    for (int64_t i = 0; i < k; i++)
        if (s->pool[s->poff[b] + i] == node) return 1;
    return 0;
}

static void be_remove(S *s, int64_t b) {
    int64_t pos = s->bepos[b], last = s->belist[--s->nbe];
    s->belist[pos] = last;
    s->bepos[last] = pos;
    s->bepos[b] = -1;
}

static void evict(S *s, int64_t b, double t) {
    cs_output *o = s->out;
    account(s, b, t, 1);
    release(s, b, 1);
    be_remove(s, b);
    o->lost[b] += t - o->start[b];
    o->preempt[b] += 1;
    s->epoch[b] += 1;
    s->state[b] = ST_WAIT;
    o->ran_in[b] = -1;
    o->start[b] = o->end[b] = NAN;
    int64_t home = s->in->part[b];
    q_insert(s, home, b);
    s->dirty[home] = 1;
}

/* later-started first (ties: higher index first) */
static int victim_before(const S *s, int64_t a, int64_t b) {
    double sa = s->out->start[a], sb = s->out->start[b];
    if (sa != sb) return sa > sb;
    return a > b;
}

/* Best-effort jobs on `node`, in eviction order, into s->victims; returns their count. */
static int64_t collect_victims(S *s, int64_t node) {
    int64_t m = 0;
    for (int64_t i = 0; i < s->nbe; i++) {
        int64_t b = s->belist[i];
        if (!on_node(s, b, node)) continue;
        int64_t k = m++;
        while (k > 0 && victim_before(s, b, s->victims[k - 1])) {
            s->victims[k] = s->victims[k - 1];
            k--;
        }
        s->victims[k] = b;
    }
    return m;
}

/* ---- starting a job -------------------------------------------------------------------------------------------- */
static void start_job(S *s, int64_t j, int64_t q, double t, int as_be, int excl) {
    const cs_input *in = s->in;
    cs_output *o = s->out;
    int64_t g = in->gpus[j], G = s->G, k = kof(s, g), c = cper(s, g);
    int64_t lo = s->off[q], hi = s->off[q] + s->nn[q];
    int64_t *chosen = s->chosen;
    if (g <= G) {
        /* best fit without eviction: smallest free level >= g present among eligible nodes */
        const int64_t *h = H(s, q, excl ? H_FREE_NR : H_FREE);
        int64_t level = -1, node = -1;
        for (int64_t lv = g; lv <= G; lv++)
            if (h[lv] > 0) { level = lv; break; }
        if (level >= 0) {
            for (int64_t n = lo; n < hi; n++)
                if (s->free_[n] == level && !(excl && s->resv[n])) { node = n; break; }
        } else {
            int32_t best = -1;
            for (int64_t n = lo; n < hi; n++) {
                if (excl && s->resv[n]) continue;
                if (s->free_[n] + s->be_[n] >= g && s->free_[n] > best) { best = s->free_[n]; node = n; }
            }
            while (s->free_[node] < g) {
                collect_victims(s, node);
                evict(s, s->victims[0], t);
            }
        }
        chosen[0] = node;
    } else {
        int64_t m = 0;
        for (int64_t n = lo; n < hi && m < k; n++)
            if (s->free_[n] == G && !(excl && s->resv[n])) chosen[m++] = n;
        if (m < k) {
            for (int64_t lv = G - 1; lv >= 0 && m < k; lv--)
                for (int64_t n = lo; n < hi && m < k; n++)
                    if (s->free_[n] == lv && s->free_[n] + s->be_[n] == G && !(excl && s->resv[n])) chosen[m++] = n;
            for (int64_t i = 0; i < k; i++) {
                int64_t nv = collect_victims(s, chosen[i]);
                /* copy: evict() does not touch s->victims, but keep the list stable anyway */
                for (int64_t v = 0; v < nv; v++) evict(s, s->victims[v], t);
            }
        }
    }
    for (int64_t i = 0; i < k; i++) {
        int64_t n = chosen[i];
        s->pool[s->poff[j] + i] = (int32_t)n;
        node_set(s, n, s->free_[n] - (int32_t)c, s->be_[n] + (as_be ? (int32_t)c : 0));
    }
    o->start[j] = t;
    if (isnan(o->first_start[j])) o->first_start[j] = t;
    o->end[j] = t + in->run[j];
    o->ran_in[j] = (int32_t)q;
    cs_event ev = {o->end[j], j, s->epoch[j]};
    if (as_be) {
        s->state[j] = ST_RUN_BE;
        s->bepos[j] = s->nbe;
        s->belist[s->nbe++] = j;
        if (cs_heap_push(&s->beh, ev)) s->oom = 1;
    } else {
        s->state[j] = ST_RUN;
        if (cs_heap_push(&s->own[q], ev)) s->oom = 1;
    }
}

static void complete(S *s, int64_t j, double t) {
    int be = s->state[j] == ST_RUN_BE;
    account(s, j, t, be);
    release(s, j, be);
    if (be) be_remove(s, j);
    s->state[j] = ST_DONE;
    s->dirty[s->out->ran_in[j]] = 1;
}

/* ---- EASY reservation ------------------------------------------------------------------------------------------ */
static void ensure_resv(S *s, int64_t p) {
    if (s->rvalid[p]) return;
    int64_t h = s->qhead[p], g = s->in->gpus[h], G = s->G, k = kof(s, g);
    int use_be = p == s->reserved && s->best_effort;
    int64_t lo = s->off[p], nn = s->nn[p];
    int64_t *proj = s->proj, full = 0;
    for (int64_t i = 0; i < nn; i++) {
        proj[i] = s->free_[lo + i] + (use_be ? s->be_[lo + i] : 0);
        if (proj[i] == G) full++;
    }
    int init_ok = 0; /* (never true for a blocked head; kept so that the rule equals the twin's in all cases) */
    for (int64_t i = 0; i < nn; i++)
        if (g <= G && proj[i] >= g) init_ok = 1;
    if (g > G && full >= k) init_ok = 1;
    const cs_heap *hp = &s->own[p];
    cs_heap_iter it;
    cs_heap_iter_begin(&it, hp, s->aux);
    int found = 0;
    double T = NAN;
    for (;;) {
        int64_t pos = cs_heap_iter_peek(&it);
        if (pos < 0) break;
        if (found && hp->a[pos].t != T) break;
        cs_heap_iter_next(&it);
        int64_t j = hp->a[pos].j, gj = s->in->gpus[j], kj = kof(s, gj), cj = cper(s, gj);
        int ok = init_ok;
        for (int64_t i = 0; i < kj; i++) {
            int64_t li = s->pool[s->poff[j] + i] - lo;
            proj[li] += cj;
            if (proj[li] == G) full++;
            if (g <= G && proj[li] >= g) ok = 1;
        }
        if (g > G && full >= k) ok = 1;
        if (!found && ok) {
            found = 1;
            T = hp->a[pos].t;
        }
    }
    /* found is guaranteed for schedulable heads: all own jobs released gives the whole partition */
    for (int64_t i = 0; i < nn; i++) set_resv(s, lo + i, 0);
    if (g <= G) {
        int64_t best = -1;
        for (int64_t i = 0; i < nn; i++)
            if (proj[i] >= g && (best < 0 || proj[i] < proj[best])) best = i;
        if (best >= 0) set_resv(s, lo + best, 1);
    } else {
        int64_t m = 0;
        for (int64_t i = 0; i < nn && m < k; i++)
            if (proj[i] == G) { set_resv(s, lo + i, 1); m++; }
    }
    s->rT[p] = found ? T : INFINITY;
    s->rvalid[p] = 1;
}

/* ---- scheduling passes ----------------------------------------------------------------------------------------- */
static void own_pass(S *s, int64_t p, double t) {
    const cs_input *in = s->in;
    int use_be = p == s->reserved && s->best_effort;
    int64_t h;
    while ((h = s->qhead[p]) >= 0) {
        if (!fits(s, p, in->gpus[h], use_be, 0)) break;
        q_remove(s, p, h);
        start_job(s, h, p, t, 0, 0);
    }
    if (s->qhead[p] < 0 || !s->backfill) return;
    ensure_resv(s, p);
    double T = s->rT[p];
    int64_t examined = 0;
    int64_t j = s->qnext[s->qhead[p]];
    while (j >= 0) {
        int64_t nxt = s->qnext[j];
        if (examined >= s->depth) break;
        if (s->tot_free[p] + (use_be ? s->tot_be[p] : 0) == 0) break;
        examined++;
        int shrt = t + in->run[j] <= T;
        if (fits(s, p, in->gpus[j], use_be, !shrt)) {
            q_remove(s, p, j);
            start_job(s, j, p, t, 0, !shrt);
        }
        j = nxt;
    }
}

static void be_pass(S *s, double t) {
    const cs_input *in = s->in;
    int64_t rp = s->reserved, P = s->P;
    double T = INFINITY;
    int has_r = 0;
    if (s->qhead[rp] >= 0) {
        if (!s->backfill) return;
        ensure_resv(s, rp);
        T = s->rT[rp];
        has_r = 1;
    }
    for (int64_t p = 0; p < P; p++) s->cur[p] = p == rp ? -1 : s->qhead[p];
    int64_t examined = 0;
    for (;;) {
        int64_t bp = -1;
        for (int64_t p = 0; p < P; p++)
            if (s->cur[p] >= 0 && (bp < 0 || q_before(s, s->cur[p], s->cur[bp]))) bp = p;
        if (bp < 0) break;
        int64_t j = s->cur[bp];
        s->cur[bp] = s->qnext[j];
        if (examined >= s->depth) break;
        examined++; /* every queued job in queue order counts towards the depth, eligible or not */
        if (!in->be_ok[j]) continue;
        if (s->tot_free[rp] == 0) break;
        int shrt = !has_r || t + in->run[j] <= T;
        if (fits(s, rp, in->gpus[j], 0, !shrt)) {
            int64_t home = in->part[j];
            if (s->qhead[home] == j) s->changed[home] = 1;
            q_remove(s, home, j);
            start_job(s, j, rp, t, 1, !shrt);
        }
    }
}

static void schedule(S *s, double t, int be_trigger) {
    int64_t rp = s->reserved, P = s->P;
    if (rp >= 0 && s->dirty[rp]) {
        s->dirty[rp] = 0;
        own_pass(s, rp, t);
    }
    for (int64_t p = 0; p < P; p++)
        if (p != rp && s->dirty[p]) own_pass(s, p, t);
    memset(s->dirty, 0, (size_t)P);
    if (s->best_effort && be_trigger) {
        memset(s->changed, 0, (size_t)P);
        be_pass(s, t);
        for (int64_t p = 0; p < P; p++)
            if (s->changed[p]) own_pass(s, p, t);
    }
}

/* ---- main loop ------------------------------------------------------------------------------------------------- */
static int be_stale(const S *s, const cs_event *e) {
    return s->state[e->j] != ST_RUN_BE || s->epoch[e->j] != e->e;
}

static void run_all(S *s) {
    const cs_input *in = s->in;
    int64_t n = s->n, P = s->P, rp = s->reserved, i = 0;
    for (;;) {
        while (s->beh.n > 0 && be_stale(s, &s->beh.a[0])) cs_heap_pop(&s->beh);
        int have = 0;
        double t = 0.0;
        if (i < n) { t = in->submit[i]; have = 1; }
        for (int64_t p = 0; p < P; p++)
            if (s->own[p].n > 0 && (!have || s->own[p].a[0].t < t)) { t = s->own[p].a[0].t; have = 1; }
        if (s->beh.n > 0 && (!have || s->beh.a[0].t < t)) { t = s->beh.a[0].t; have = 1; }
        if (!have || s->oom) break;
        for (int64_t p = 0; p < P; p++)
            while (s->own[p].n > 0 && s->own[p].a[0].t == t) {
                cs_event e = cs_heap_pop(&s->own[p]);
                complete(s, e.j, t);
            }
        while (s->beh.n > 0 && s->beh.a[0].t == t) {
            cs_event e = cs_heap_pop(&s->beh);
            if (!be_stale(s, &e)) complete(s, e.j, t);
        }
        int be_trigger = 0;
        while (i < n && in->submit[i] == t) {
            if (s->state[i] != ST_UNSCHED) {
                int64_t p = in->part[i];
                q_insert(s, p, i);
                s->dirty[p] = 1;
                if (p != rp) be_trigger = 1;
            }
            i++;
        }
        if (rp >= 0 && s->dirty[rp]) be_trigger = 1;
        schedule(s, t, be_trigger);
    }
}

/* ---- setup ----------------------------------------------------------------------------------------------------- */
#define ALLOC(ptr, count, type) do { (ptr) = (type *)calloc((size_t)((count) > 0 ? (count) : 1), sizeof(type)); \
    if (!(ptr)) goto fail; } while (0)

int cs_simulate(const cs_input *in, cs_output *out) {
    S s;
    memset(&s, 0, sizeof(s));
    int rc = -1;
    int64_t n = in->n, P = in->P, G = in->G;
    s.in = in;
    s.out = out;
    s.n = n;
    s.P = P;
    s.G = G;
    s.G1 = G + 1;
    s.reserved = in->reserved;
    s.best_effort = in->best_effort && in->reserved >= 0;
    s.backfill = in->backfill;
    s.depth = in->depth >= 0 ? in->depth : n + 1;

    ALLOC(s.off, P, int64_t); ALLOC(s.nn, P, int64_t); ALLOC(s.tot_free, P, int64_t); ALLOC(s.tot_be, P, int64_t);
    ALLOC(s.hist, P * 4 * (G + 1), int64_t); ALLOC(s.qhead, P, int64_t); ALLOC(s.qtail, P, int64_t);
    ALLOC(s.rvalid, P, int); ALLOC(s.rT, P, double); ALLOC(s.dirty, P, uint8_t); ALLOC(s.changed, P, uint8_t);
    ALLOC(s.cur, P, int64_t); ALLOC(s.own, P, cs_heap);
    int64_t N = 0, maxnn = 0;
    for (int64_t p = 0; p < P; p++) {
        s.off[p] = N;
        s.nn[p] = in->part_nodes[p];
        N += s.nn[p];
        if (s.nn[p] > maxnn) maxnn = s.nn[p];
        s.qhead[p] = s.qtail[p] = -1;
    }
    s.N = N;
    ALLOC(s.free_, N, int32_t); ALLOC(s.be_, N, int32_t); ALLOC(s.npart, N, int32_t); ALLOC(s.resv, N, uint8_t);
    ALLOC(s.proj, maxnn, int64_t); ALLOC(s.chosen, maxnn, int64_t);
    for (int64_t p = 0; p < P; p++) {
        for (int64_t i = 0; i < s.nn[p]; i++) {
            s.free_[s.off[p] + i] = (int32_t)G;
            s.npart[s.off[p] + i] = (int32_t)p;
        }
        H(&s, p, H_FREE)[G] = H(&s, p, H_FREE_NR)[G] = H(&s, p, H_AVAIL)[G] = H(&s, p, H_AVAIL_NR)[G] = s.nn[p];
        s.tot_free[p] = s.nn[p] * G;
        if (cs_heap_init(&s.own[p], 64)) goto fail;
    }
    if (cs_heap_init(&s.beh, 64)) goto fail;
    ALLOC(s.aux, (n < N * G ? n : N * G) + 2, int64_t); /* >= running own jobs of any partition + 1 */
    ALLOC(s.state, n, int8_t); ALLOC(s.epoch, n, int64_t); ALLOC(s.poff, n, int64_t);
    ALLOC(s.qnext, n, int64_t); ALLOC(s.qprev, n, int64_t); ALLOC(s.bepos, n, int64_t);
    ALLOC(s.belist, n, int64_t); ALLOC(s.victims, n, int64_t);
    int64_t pool = 0;
    for (int64_t j = 0; j < n; j++) {
        int64_t p = in->part[j], g = in->gpus[j];
        int ok = p >= 0 && p < P && s.nn[p] > 0 && kof(&s, g) <= s.nn[p];
        s.state[j] = ok ? ST_WAIT : ST_UNSCHED;
        s.poff[j] = pool;
        if (ok) pool += kof(&s, g);
        s.qnext[j] = s.qprev[j] = s.bepos[j] = -1;
        out->start[j] = out->first_start[j] = out->end[j] = NAN;
        out->lost[j] = 0.0;
        out->ran_in[j] = -1;
        out->preempt[j] = 0;
        out->status[j] = ok ? 0 : 1;
    }
    for (int64_t q = 0; q < 2 * P; q++) out->busy[q] = 0.0;
    ALLOC(s.pool, pool, int32_t);

    run_all(&s);
    rc = s.oom ? -1 : 0;
fail:
    if (s.own)
        for (int64_t p = 0; p < P; p++) cs_heap_free(&s.own[p]);
    cs_heap_free(&s.beh);
    free(s.off); free(s.nn); free(s.tot_free); free(s.tot_be); free(s.hist); free(s.qhead); free(s.qtail);
    free(s.rvalid); free(s.rT); free(s.dirty); free(s.changed); free(s.cur); free(s.own);
    free(s.free_); free(s.be_); free(s.npart); free(s.resv); free(s.proj); free(s.chosen); free(s.aux);
    free(s.state); free(s.epoch); free(s.poff); free(s.qnext); free(s.qprev); free(s.bepos); free(s.belist);
    free(s.victims); free(s.pool);
    return rc;
}
