/* Discrete-event cluster simulator: gang scheduling on nodes, priority + FIFO + EASY backfill per partition,
 * preemptible best-effort jobs on the reserved partition. Semantics: acmemodel/planner/reference_cluster.py (the NumPy twin). */
#ifndef ACME_CLUSTER_SIM_H
#define ACME_CLUSTER_SIM_H
#include <stdint.h>

typedef struct {
    int64_t n;                 /* jobs, sorted by submit time (ties: FIFO order = index order) */
    const double *submit;      /* submit time, s */
    const double *run;         /* run time, s (>= 0) */
    const int64_t *gpus;       /* GPUs requested (>= 1) */
    const int64_t *part;       /* home partition (-1: none -> unschedulable) */
    const uint8_t *be_ok;      /* may run best-effort on the reserved partition */
    const int64_t *prio;       /* priority (higher first; FIFO within a priority); NULL: all equal */
    int64_t P;                 /* partitions */
    const int64_t *part_nodes; /* nodes per partition */
    int64_t G;                 /* GPUs per node */
    int64_t reserved;          /* reserved partition index or -1 */
    int backfill;              /* EASY backfill on/off */
    int best_effort;           /* best-effort jobs on the reserved partition on/off */
    int64_t depth;             /* max queued jobs examined per backfill / best-effort pass; < 0: unlimited */
    double w0, w1;             /* accounting window for busy GPU-seconds */
} cs_input;

typedef struct {
    double *start;       /* start of the completed run (NaN if unschedulable) */
    double *first_start; /* first start (differs from start after evictions) */
    double *end;         /* end of the completed run */
    double *lost;        /* run seconds lost to evictions */
    double *busy;        /* P x 2: allocated GPU-seconds in [w0, w1] by own / best-effort jobs */
    int32_t *ran_in;     /* partition of the completed run, -1 if none */
    int32_t *preempt;    /* number of evictions */
    int8_t *status;      /* 0 ran, 1 unschedulable */
} cs_output;

/* Runs the simulation (pure C, no Python calls: callable without the GIL). Returns 0, or -1 if out of memory. */
int cs_simulate(const cs_input *in, cs_output *out);
#endif
