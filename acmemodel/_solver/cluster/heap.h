/* Binary min-heap of simulator events, ordered by (time, job, epoch). C99, no global state. */
#ifndef ACME_CLUSTER_HEAP_H
#define ACME_CLUSTER_HEAP_H
#include <stdint.h>

typedef struct {
    double t;    /* event time, seconds */
    int64_t j;   /* job index */
    int64_t e;   /* epoch of the job's run (stale entries of evicted runs are skipped lazily) */
} cs_event;

typedef struct {
    cs_event *a;
    int64_t n;
    int64_t cap;
} cs_heap;

/* -1 if x orders before y, 1 if after, 0 if equal. */
static inline int cs_event_cmp(const cs_event *x, const cs_event *y) {
    if (x->t < y->t) return -1;
    if (x->t > y->t) return 1;
    if (x->j < y->j) return -1;
    if (x->j > y->j) return 1;
    if (x->e < y->e) return -1;
    if (x->e > y->e) return 1;
    return 0;
}

int cs_heap_init(cs_heap *h, int64_t cap);       /* 0 ok, -1 out of memory */
void cs_heap_free(cs_heap *h);
int cs_heap_push(cs_heap *h, cs_event ev);       /* 0 ok, -1 out of memory (grows by doubling) */
cs_event cs_heap_pop(cs_heap *h);                /* caller checks h->n > 0 */

/* Visit the entries of heap `h` in ascending order without modifying it: `aux` is scratch room for h->n
 * positions. Initialise with cs_heap_iter_begin, then call cs_heap_iter_next until it returns -1 (else it returns
 * the position in h->a of the next entry). */
typedef struct {
    const cs_heap *h;
    int64_t *aux;
    int64_t m;
} cs_heap_iter;

void cs_heap_iter_begin(cs_heap_iter *it, const cs_heap *h, int64_t *aux);
int64_t cs_heap_iter_peek(const cs_heap_iter *it);
int64_t cs_heap_iter_next(cs_heap_iter *it);
#endif
