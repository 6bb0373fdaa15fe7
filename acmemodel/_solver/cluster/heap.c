/* Binary min-heap of events and ordered traversal of a heap (for the EASY-backfill shadow time). */
#include <stdlib.h>
#include "heap.h"

int cs_heap_init(cs_heap *h, int64_t cap) {
    if (cap < 16) cap = 16;
    h->a = (cs_event *)malloc((size_t)cap * sizeof(cs_event));
    h->n = 0;
    h->cap = cap;
    return h->a ? 0 : -1;
}

void cs_heap_free(cs_heap *h) {
    free(h->a);
    h->a = NULL;
    h->n = h->cap = 0;
}

int cs_heap_push(cs_heap *h, cs_event ev) {
    if (h->n == h->cap) {
        int64_t cap = 2 * h->cap;
        cs_event *a = (cs_event *)realloc(h->a, (size_t)cap * sizeof(cs_event));
        if (!a) return -1;
        h->a = a;
        h->cap = cap;
    }
    int64_t i = h->n++;
    while (i > 0) {
        int64_t parent = (i - 1) / 2;
        if (cs_event_cmp(&h->a[parent], &ev) <= 0) break;
        h->a[i] = h->a[parent];
        i = parent;
    }
    h->a[i] = ev;
    return 0;
}

cs_event cs_heap_pop(cs_heap *h) {
    cs_event top = h->a[0];
    cs_event last = h->a[--h->n];
    int64_t i = 0, n = h->n;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && cs_event_cmp(&h->a[c + 1], &h->a[c]) < 0) c++;
        if (cs_event_cmp(&last, &h->a[c]) <= 0) break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (n > 0) h->a[i] = last;
    return top;
}

/* The traversal keeps a min-heap of positions of h (keyed by h's entries): pop the smallest position, push its
 * two children. Visiting k entries costs O(k log k). */
static inline int pos_less(const cs_heap *h, int64_t x, int64_t y) {
    return cs_event_cmp(&h->a[x], &h->a[y]) < 0;
}

void cs_heap_iter_begin(cs_heap_iter *it, const cs_heap *h, int64_t *aux) {
    it->h = h;
    it->aux = aux;
    it->m = 0;
    if (h->n > 0) {
        aux[0] = 0;
        it->m = 1;
    }
}

int64_t cs_heap_iter_peek(const cs_heap_iter *it) {
    return it->m > 0 ? it->aux[0] : -1;
}

static void aux_push(cs_heap_iter *it, int64_t pos) {
    int64_t *a = it->aux;
    int64_t i = it->m++;
    while (i > 0) {
        int64_t parent = (i - 1) / 2;
        if (!pos_less(it->h, pos, a[parent])) break;
        a[i] = a[parent];
        i = parent;
    }
    a[i] = pos;
}

int64_t cs_heap_iter_next(cs_heap_iter *it) {
    if (it->m == 0) return -1;
    int64_t *a = it->aux;
    int64_t top = a[0];
    int64_t last = a[--it->m];
    int64_t i = 0, m = it->m;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && pos_less(it->h, a[c + 1], a[c])) c++;
        if (!pos_less(it->h, a[c], last)) break;
        a[i] = a[c];
        i = c;
    }
    if (m > 0) a[i] = last;
    int64_t n = it->h->n;
    if (2 * top + 1 < n) aux_push(it, 2 * top + 1);
    if (2 * top + 2 < n) aux_push(it, 2 * top + 2);
    return top;
}
