/* Python module table of the acmemodel C solver (``acmemodel._solver._core``).
 *
 * Kernels live one per file (checkpoint.c with its renewal sums in checkpoint_sums.c, montecarlo.c); this file converts arguments, checks
 * shapes and every value (like the cluster module: a bad value raises ValueError naming the argument,
 * the row and the rule, instead of coming back as a status -1), releases the GIL around the pure-C
 * loops and builds the results. The Python wrappers (acmemodel.planner.checkpoint / montecarlo)
 * check their own inputs too, with messages in the user's terms. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>
#include "acme_solver.h"

/* contiguous float64 array of ndim 1 or 2 (NULL + exception on failure) */
static PyArrayObject *as_f64(PyObject *o, int ndim, const char *name) {
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(o, NPY_FLOAT64, ndim, ndim,
                                                         NPY_ARRAY_IN_ARRAY);
    if (!a) {
        PyErr_Format(PyExc_ValueError, "%s must be a %d-D float64 array", name, ndim);
        return NULL;
    }
    return a;
}

static int check_family(int family) {
    if (family < ACME_EXPONENTIAL || family > ACME_PIECEWISE) {
        PyErr_Format(PyExc_ValueError, "family must be 0, 1 or 2, got %d", family);
        return -1;
    }
    return 0;
}

/* ValueError explaining why failure parameters `p` (row `row`) are invalid for `family`; 0 if valid.
 * The same rules as acme_failure_init. */
static int explain_params(int family, const double *p, int P, npy_intp row) {
    int j, m = P / 2;
    if (family == ACME_EXPONENTIAL) {
        if (P < 1 || !(p[0] > 0) || !isfinite(p[0])) {
            PyErr_Format(PyExc_ValueError, "params[%zd]: exponential failures need a mean time to failure "
                         "M > 0 (finite)", (Py_ssize_t)row);
            return -1;
        }
        return 0;
    }
    if (family == ACME_WEIBULL) {
        if (P < 2 || !(p[0] > 0) || !(p[1] > 0) || !isfinite(p[0]) || !isfinite(p[1])) {
            PyErr_Format(PyExc_ValueError, "params[%zd]: Weibull failures need shape k > 0 and scale "
                         "lambda > 0 (finite)", (Py_ssize_t)row);
            return -1;
        }
        return 0;
    }
    if (m < 1 || 2 * m != P) {
        PyErr_Format(PyExc_ValueError, "params: a piecewise hazard needs 2m columns (m breakpoints, m "
                     "hazards), got %d", P);
        return -1;
    }
    if (p[0] != 0.0) {
        PyErr_Format(PyExc_ValueError, "params[%zd]: the first breakpoint of a piecewise hazard must be 0",
                     (Py_ssize_t)row);
        return -1;
    }
    for (j = 0; j < m; j++) {
        if (!(p[m + j] >= 0) || !isfinite(p[m + j]) || (j > 0 && !(p[j] >= p[j - 1]))) {
            PyErr_Format(PyExc_ValueError, "params[%zd]: piecewise hazard piece %d: breakpoints must not "
                         "decrease and hazards must be finite and >= 0", (Py_ssize_t)row, j);
            return -1;
        }
    }
    if (!(p[2 * m - 1] > 0)) {
        PyErr_Format(PyExc_ValueError, "params[%zd]: the last hazard of a piecewise hazard must be > 0 "
                     "(else a run may never fail and E[T] has no finite bound)", (Py_ssize_t)row);
        return -1;
    }
    return 0;
}

/* ValueError for the first invalid value of the loaded arguments (0 if all are valid) */
static int check_ckpt_values(const PyArrayObject *tau_a, const PyArrayObject *work_a,
                             const PyArrayObject *ckpt_a, int family, const PyArrayObject *params_a,
                             const PyArrayObject *rn_a, const PyArrayObject *rw_a, npy_intp n, int P, int Q) {
    const double *tau = tau_a ? (const double *)PyArray_DATA((PyArrayObject *)tau_a) : NULL;
    const double *work = (const double *)PyArray_DATA((PyArrayObject *)work_a);
    const double *ckpt = (const double *)PyArray_DATA((PyArrayObject *)ckpt_a);
    const double *params = (const double *)PyArray_DATA((PyArrayObject *)params_a);
    const double *rn = (const double *)PyArray_DATA((PyArrayObject *)rn_a);
    const double *rw = (const double *)PyArray_DATA((PyArrayObject *)rw_a);
    npy_intp i;
    int q;
    for (i = 0; i < n; i++) {
        double wsum = 0.0;
        if (tau && tau[i] < 0) {  /* (0, inf and NaN are answered: an infinite E[T]) */
            PyErr_Format(PyExc_ValueError, "tau[%zd] must be a checkpoint interval >= 0 s", (Py_ssize_t)i);
            return -1;
        }
        if (!(work[i] > 0 && isfinite(work[i]))) {
            PyErr_Format(PyExc_ValueError, "work[%zd] must be > 0 s (finite)", (Py_ssize_t)i);
            return -1;
        }
        if (!(ckpt[i] >= 0 && isfinite(ckpt[i]))) {
            PyErr_Format(PyExc_ValueError, "ckpt[%zd] must be a checkpoint cost >= 0 s (finite)", (Py_ssize_t)i);
            return -1;
        }
        if (explain_params(family, params + (size_t)i * P, P, i)) return -1;
        for (q = 0; q < Q; q++) {
            double r = rn[(size_t)i * Q + q], w = rw[(size_t)i * Q + q];
            if (!(r >= 0 && isfinite(r)) || !(w >= 0 && isfinite(w))) {
                PyErr_Format(PyExc_ValueError, "r_nodes/r_weights[%zd, %d]: restart times must be >= 0 s and "
                             "weights >= 0 (finite)", (Py_ssize_t)i, q);
                return -1;
            }
            wsum += w;
        }
        if (!(wsum > 0)) {
            PyErr_Format(PyExc_ValueError, "r_weights[%zd] must have a positive sum", (Py_ssize_t)i);
            return -1;
        }
    }
    return 0;
}

/* parse (work, ckpt, params, r_nodes, r_weights) with n rows; tau optional (NULL) */
typedef struct {
    PyArrayObject *tau, *work, *ckpt, *params, *rn, *rw;
    npy_intp n;
    int P, Q;
} ckpt_args;

static void ckpt_args_free(ckpt_args *a) {
    Py_XDECREF(a->tau); Py_XDECREF(a->work); Py_XDECREF(a->ckpt);
    Py_XDECREF(a->params); Py_XDECREF(a->rn); Py_XDECREF(a->rw);
}

static int ckpt_args_load(ckpt_args *a, PyObject *tau, PyObject *work, PyObject *ckpt,
                          PyObject *params, PyObject *rn, PyObject *rw) {
    memset(a, 0, sizeof(*a));
    if (tau && !(a->tau = as_f64(tau, 1, "tau"))) return -1;
    if (!(a->work = as_f64(work, 1, "work"))) return -1;
    if (!(a->ckpt = as_f64(ckpt, 1, "ckpt"))) return -1;
    if (!(a->params = as_f64(params, 2, "params"))) return -1;
    if (!(a->rn = as_f64(rn, 2, "r_nodes"))) return -1;
    if (!(a->rw = as_f64(rw, 2, "r_weights"))) return -1;
    a->n = PyArray_DIM(a->work, 0);
    a->P = (int)PyArray_DIM(a->params, 1);
    a->Q = (int)PyArray_DIM(a->rn, 1);
    if ((a->tau && PyArray_DIM(a->tau, 0) != a->n) || PyArray_DIM(a->ckpt, 0) != a->n ||
        PyArray_DIM(a->params, 0) != a->n || PyArray_DIM(a->rn, 0) != a->n ||
        PyArray_DIM(a->rw, 0) != a->n || PyArray_DIM(a->rw, 1) != a->Q || a->P < 1 || a->Q < 1) {
        PyErr_SetString(PyExc_ValueError,
                        "tau, work, ckpt, params, r_nodes, r_weights must have the same number of rows "
                        "(params, r_nodes, r_weights 2-D with >= 1 column; r_nodes and r_weights alike)");
        return -1;
    }
    if (a->n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many scenarios");
        return -1;
    }
    return 0;
}

#define D(a) ((const double *)PyArray_DATA(a))

static PyObject *py_ckpt_expected_time(PyObject *self, PyObject *args) {
    PyObject *tau, *work, *ckpt, *params, *rn, *rw, *res = NULL;
    PyArrayObject *et = NULL, *st = NULL;
    int family;
    ckpt_args a;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOiOOO", &tau, &work, &ckpt, &family, &params, &rn, &rw)) return NULL;
    if (check_family(family)) return NULL;
    if (ckpt_args_load(&a, tau, work, ckpt, params, rn, rw)) goto done;
    if (check_ckpt_values(a.tau, a.work, a.ckpt, family, a.params, a.rn, a.rw, a.n, a.P, a.Q)) goto done;
    et = (PyArrayObject *)PyArray_SimpleNew(1, &a.n, NPY_FLOAT64);
    st = (PyArrayObject *)PyArray_SimpleNew(1, &a.n, NPY_INT32);
    if (!et || !st) goto done;
    Py_BEGIN_ALLOW_THREADS
    acme_ckpt_expected_time((int)a.n, D(a.tau), D(a.work), D(a.ckpt), family, D(a.params), a.P,
                            D(a.rn), D(a.rw), a.Q, (double *)PyArray_DATA(et),
                            (int *)PyArray_DATA(st));
    Py_END_ALLOW_THREADS
    res = Py_BuildValue("(OO)", et, st);
done:
    Py_XDECREF(et); Py_XDECREF(st);
    ckpt_args_free(&a);
    return res;
}

typedef void (*ckpt_opt_fn)(int, const double *, const double *, int, const double *, int, const double *,
                            const double *, int, double *, double *, int *);

static PyObject *ckpt_optimize_with(ckpt_opt_fn fn, PyObject *args) {
    PyObject *work, *ckpt, *params, *rn, *rw, *res = NULL;
    PyArrayObject *tau = NULL, *et = NULL, *st = NULL;
    int family;
    ckpt_args a;
    if (!PyArg_ParseTuple(args, "OOiOOO", &work, &ckpt, &family, &params, &rn, &rw)) return NULL;
    if (check_family(family)) return NULL;
    if (ckpt_args_load(&a, NULL, work, ckpt, params, rn, rw)) goto done;
    if (check_ckpt_values(NULL, a.work, a.ckpt, family, a.params, a.rn, a.rw, a.n, a.P, a.Q)) goto done;
    tau = (PyArrayObject *)PyArray_SimpleNew(1, &a.n, NPY_FLOAT64);
    et = (PyArrayObject *)PyArray_SimpleNew(1, &a.n, NPY_FLOAT64);
    st = (PyArrayObject *)PyArray_SimpleNew(1, &a.n, NPY_INT32);
    if (!tau || !et || !st) goto done;
    Py_BEGIN_ALLOW_THREADS
    fn((int)a.n, D(a.work), D(a.ckpt), family, D(a.params), a.P, D(a.rn), D(a.rw),
       a.Q, (double *)PyArray_DATA(tau), (double *)PyArray_DATA(et),
       (int *)PyArray_DATA(st));
    Py_END_ALLOW_THREADS
    res = Py_BuildValue("(OOO)", tau, et, st);
done:
    Py_XDECREF(tau); Py_XDECREF(et); Py_XDECREF(st);
    ckpt_args_free(&a);
    return res;
}

static PyObject *py_ckpt_optimize(PyObject *self, PyObject *args) {
    (void)self;
    return ckpt_optimize_with(acme_ckpt_optimize, args);
}

static PyObject *py_ckpt_terms(PyObject *self, PyObject *args) {
    double tau, ckpt, out[4];
    int family;
    PyObject *params, *rn, *rw;
    PyArrayObject *p = NULL, *n = NULL, *w = NULL;
    PyObject *res = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "ddiOOO", &tau, &ckpt, &family, &params, &rn, &rw)) return NULL;
    if (check_family(family)) return NULL;
    if (!(p = as_f64(params, 1, "params")) || !(n = as_f64(rn, 1, "r_nodes")) ||
        !(w = as_f64(rw, 1, "r_weights")))
        goto done;
    if (PyArray_DIM(n, 0) != PyArray_DIM(w, 0) || PyArray_DIM(n, 0) < 1 || PyArray_DIM(p, 0) < 1) {
        PyErr_SetString(PyExc_ValueError, "r_nodes and r_weights must have the same length >= 1");
        goto done;
    }
    acme_ckpt_terms(tau, ckpt, family, D(p), (int)PyArray_DIM(p, 0), D(n), D(w),
                    (int)PyArray_DIM(n, 0), out);
    res = Py_BuildValue("(dddd)", out[0], out[1], out[2], out[3]);
done:
    Py_XDECREF(p); Py_XDECREF(n); Py_XDECREF(w);
    return res;
}

static PyObject *py_mc_run(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"n_rep", "seed", "work", "tau", "ckpt", "max_wall", "family", "params",
                             "type_prob", "restart_kind", "restart_a", "restart_b", "n_threads", NULL};
    Py_ssize_t n_rep;
    unsigned long long seed;
    int family, n_threads = 1, J, j, rc;
    acme_mc_spec sp;
    acme_mc_out o;
    PyObject *params, *tp, *rk, *ra, *rb, *res = NULL;
    PyArrayObject *p = NULL, *prob = NULL, *kind = NULL, *a = NULL, *b = NULL;
    PyArrayObject *wall = NULL, *lost = NULL, *rs = NULL, *ck = NULL, *nf = NULL, *tl = NULL,
                  *tc = NULL, *fin = NULL;
    double *cdf = NULL, acc = 0.0;
    npy_intp n1[1], n2[2];
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "nKddddiOOOOO|i", kwlist, &n_rep, &seed, &sp.work,
                                     &sp.tau, &sp.ckpt, &sp.max_wall, &family, &params, &tp, &rk,
                                     &ra, &rb, &n_threads))
        return NULL;
    if (check_family(family)) return NULL;
    if (n_rep < 1 || !(sp.work > 0) || !(sp.tau > 0) || !(sp.ckpt >= 0) || !(sp.max_wall > 0)) {
        PyErr_SetString(PyExc_ValueError, "need n_rep >= 1, work > 0, tau > 0, ckpt >= 0, max_wall > 0");
        return NULL;
    }
    if (!(p = as_f64(params, 1, "params")) || !(prob = as_f64(tp, 1, "type_prob")) ||
        !(a = as_f64(ra, 1, "restart_a")) || !(b = as_f64(rb, 1, "restart_b")))
        goto done;
    kind = (PyArrayObject *)PyArray_FROMANY(rk, NPY_INT32, 1, 1, NPY_ARRAY_IN_ARRAY);
    if (!kind) goto done;
    J = (int)PyArray_DIM(prob, 0);
    if (J < 1 || PyArray_DIM(kind, 0) != J || PyArray_DIM(a, 0) != J || PyArray_DIM(b, 0) != J) {
        PyErr_SetString(PyExc_ValueError,
                        "type_prob, restart_kind, restart_a, restart_b must have the same length >= 1");
        goto done;
    }
    cdf = (double *)malloc(sizeof(double) * (size_t)J);
    if (!cdf) { PyErr_NoMemory(); goto done; }
    for (j = 0; j < J; j++) {
        double pj = D(prob)[j];
        int kj = ((const int *)PyArray_DATA(kind))[j];
        if (!(pj >= 0) || kj < 0 || kj > 2) {
            PyErr_SetString(PyExc_ValueError, "type_prob must be >= 0 and restart_kind in {0, 1, 2}");
            goto done;
        }
        acc += pj;
        cdf[j] = acc;
    }
    if (!(acc > 0)) {
        PyErr_SetString(PyExc_ValueError, "type_prob must sum to a positive number");
        goto done;
    }
    for (j = 0; j < J; j++) cdf[j] /= acc;
    cdf[J - 1] = 1.0;
    sp.family = family;
    sp.P = (int)PyArray_DIM(p, 0);
    sp.params = D(p);
    sp.J = J;
    sp.type_cdf = cdf;
    sp.restart_kind = (const int *)PyArray_DATA(kind);
    sp.restart_a = D(a);
    sp.restart_b = D(b);
    sp.seed = (uint64_t)seed;
    n1[0] = n_rep;
    n2[0] = n_rep;
    n2[1] = J;
    wall = (PyArrayObject *)PyArray_SimpleNew(1, n1, NPY_FLOAT64);
    lost = (PyArrayObject *)PyArray_SimpleNew(1, n1, NPY_FLOAT64);
    rs = (PyArrayObject *)PyArray_SimpleNew(1, n1, NPY_FLOAT64);
    ck = (PyArrayObject *)PyArray_SimpleNew(1, n1, NPY_FLOAT64);
    nf = (PyArrayObject *)PyArray_SimpleNew(1, n1, NPY_INT64);
    fin = (PyArrayObject *)PyArray_SimpleNew(1, n1, NPY_BOOL);
    tl = (PyArrayObject *)PyArray_SimpleNew(2, n2, NPY_FLOAT64);
    tc = (PyArrayObject *)PyArray_SimpleNew(2, n2, NPY_INT32);
    if (!wall || !lost || !rs || !ck || !nf || !fin || !tl || !tc) goto done;
    o.wall = (double *)PyArray_DATA(wall);
    o.lost = (double *)PyArray_DATA(lost);
    o.restart = (double *)PyArray_DATA(rs);
    o.ckpt = (double *)PyArray_DATA(ck);
    o.n_fail = (int64_t *)PyArray_DATA(nf);
    o.finished = (uint8_t *)PyArray_DATA(fin);
    o.type_loss = (double *)PyArray_DATA(tl);
    o.type_count = (int32_t *)PyArray_DATA(tc);
    Py_BEGIN_ALLOW_THREADS
    rc = acme_mc_run(&sp, (int64_t)n_rep, n_threads, &o);
    Py_END_ALLOW_THREADS
    if (rc == -1) {
        PyErr_SetString(PyExc_ValueError, "invalid failure-distribution params");
        goto done;
    }
    if (rc != 0) { PyErr_NoMemory(); goto done; }
    res = Py_BuildValue("{s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O}", "wall", wall, "lost", lost, "restart", rs,
                        "ckpt", ck, "n_fail", nf, "finished", fin, "type_loss", tl, "type_count", tc);
done:
    free(cdf);
    Py_XDECREF(p); Py_XDECREF(prob); Py_XDECREF(kind); Py_XDECREF(a); Py_XDECREF(b);
    Py_XDECREF(wall); Py_XDECREF(lost); Py_XDECREF(rs); Py_XDECREF(ck); Py_XDECREF(nf);
    Py_XDECREF(fin); Py_XDECREF(tl); Py_XDECREF(tc);
    return res;
}

static PyMethodDef core_methods[] = {
    {"ckpt_expected_time", py_ckpt_expected_time, METH_VARARGS,
     "ckpt_expected_time(tau, work, ckpt, family, params, r_nodes, r_weights) -> (E[T], status)"},
    {"ckpt_optimize", py_ckpt_optimize, METH_VARARGS,
     "ckpt_optimize(work, ckpt, family, params, r_nodes, r_weights) -> (tau*, E[T](tau*), status)"},
    {"ckpt_terms", py_ckpt_terms, METH_VARARGS,
     "ckpt_terms(tau, ckpt, family, params, r_nodes, r_weights) -> (E[F], E[N], dE[N]/dtau, d2E[N]/dtau2)"},
    {"mc_run", (PyCFunction)(void (*)(void))py_mc_run, METH_VARARGS | METH_KEYWORDS,
     "mc_run(n_rep, seed, work, tau, ckpt, max_wall, family, params, type_prob, restart_kind, "
     "restart_a, restart_b, n_threads=1) -> dict of per-replica arrays"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "_core", "acmemodel C solver kernels.", -1, core_methods
};

PyMODINIT_FUNC PyInit__core(void) {
    import_array();
    return PyModule_Create(&core_module);
}
