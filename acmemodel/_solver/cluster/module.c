/* Python module table of the acmemodel C cluster simulator. Kernels live one per file (cluster_sim.c, heap.c).
 * Arguments are checked here, at the Python boundary; the kernel runs without the GIL. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>
#include <math.h>

#include "cluster_sim.h"

/* Convert `obj` to a C-contiguous 1-D array of `type`; on failure set ValueError naming `name`. */
static PyArrayObject *as_1d(PyObject *obj, int type, const char *name) {
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(obj, type, 1, 1, NPY_ARRAY_IN_ARRAY | NPY_ARRAY_FORCECAST);
    if (!a) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s must be a 1-D numeric array", name);
    }
    return a;
}

static PyObject *new_out(npy_intp n, int type) { return PyArray_SimpleNew(1, &n, type); }

PyDoc_STRVAR(simulate_doc,
"simulate(submit, run, gpus, part, be_ok, part_nodes, gpus_per_node, reserved=-1, backfill=True,\n"
"         best_effort=False, backfill_depth=1000, w0=-inf, w1=inf, prio=None) -> dict\n\n"
"Discrete-event simulation of gang-scheduled jobs on partitions of whole nodes (priority, then FIFO, + EASY\n"
"backfill; prio: int64 per job, higher first, None = all equal;\n"
"preemptible best-effort jobs on the reserved partition). Jobs must be sorted by submit time (s).\n"
"Returns arrays start, first_start, end, lost (s), ran_in, preempt, status, and busy (P x 2 GPU-seconds).\n"
"Rules: acmemodel.planner.reference_cluster.");

static PyObject *py_simulate(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"submit", "run", "gpus", "part", "be_ok", "part_nodes", "gpus_per_node", "reserved",
                             "backfill", "best_effort", "backfill_depth", "w0", "w1", "prio", NULL};
    PyObject *o_submit, *o_run, *o_gpus, *o_part, *o_be, *o_pn, *o_prio = Py_None;
    long long G, reserved = -1, depth = 1000;
    int backfill = 1, best_effort = 0;
    double w0 = -INFINITY, w1 = INFINITY;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOL|LppLddO", kwlist, &o_submit, &o_run, &o_gpus, &o_part,
                                     &o_be, &o_pn, &G, &reserved, &backfill, &best_effort, &depth, &w0, &w1,
                                     &o_prio))
        return NULL;
    PyArrayObject *a_submit = NULL, *a_run = NULL, *a_gpus = NULL, *a_part = NULL, *a_be = NULL, *a_pn = NULL,
                  *a_prio = NULL;
    PyArrayObject *r_start = NULL, *r_first = NULL, *r_end = NULL, *r_lost = NULL, *r_ran = NULL, *r_pre = NULL,
                  *r_status = NULL, *r_busy = NULL;
    PyObject *result = NULL;

    if (!(a_submit = as_1d(o_submit, NPY_FLOAT64, "submit"))) goto done;
    if (!(a_run = as_1d(o_run, NPY_FLOAT64, "run"))) goto done;
    if (!(a_gpus = as_1d(o_gpus, NPY_INT64, "gpus"))) goto done;
    if (!(a_part = as_1d(o_part, NPY_INT64, "part"))) goto done;
    if (!(a_be = as_1d(o_be, NPY_UINT8, "be_ok"))) goto done;
    if (!(a_pn = as_1d(o_pn, NPY_INT64, "part_nodes"))) goto done;
    if (o_prio != Py_None && !(a_prio = as_1d(o_prio, NPY_INT64, "prio"))) goto done;

    npy_intp n = PyArray_DIM(a_submit, 0), P = PyArray_DIM(a_pn, 0);
    if (PyArray_DIM(a_run, 0) != n || PyArray_DIM(a_gpus, 0) != n || PyArray_DIM(a_part, 0) != n ||
        PyArray_DIM(a_be, 0) != n || (a_prio && PyArray_DIM(a_prio, 0) != n)) {
        PyErr_Format(PyExc_ValueError, "submit, run, gpus, part, be_ok and prio must have the same length (submit has %zd)",
                     (Py_ssize_t)n);
        goto done;
    }
    if (G < 1 || G > 1000000) {
        PyErr_Format(PyExc_ValueError, "gpus_per_node must be in [1, 1e6], got %lld", G);
        goto done;
    }
    if (P < 1) { PyErr_SetString(PyExc_ValueError, "part_nodes must list at least one partition"); goto done; }
    if (reserved < -1 || reserved >= P) {
        PyErr_Format(PyExc_ValueError, "reserved must be -1 or a partition index < %zd, got %lld", (Py_ssize_t)P,
                     reserved);
        goto done;
    }
    if (!(w0 <= w1)) { PyErr_Format(PyExc_ValueError, "window w0=%g must be <= w1=%g", w0, w1); goto done; }
    const double *submit = (const double *)PyArray_DATA(a_submit), *run = (const double *)PyArray_DATA(a_run);
    const int64_t *gpus = (const int64_t *)PyArray_DATA(a_gpus), *part = (const int64_t *)PyArray_DATA(a_part);
    const int64_t *pn = (const int64_t *)PyArray_DATA(a_pn);
    int64_t total_nodes = 0;
    for (npy_intp p = 0; p < P; p++) {
        if (pn[p] < 0 || pn[p] > 100000000) {
            PyErr_Format(PyExc_ValueError, "part_nodes[%zd] must be in [0, 1e8], got %lld", (Py_ssize_t)p,
                         (long long)pn[p]);
            goto done;
        }
        total_nodes += pn[p];
    }
    if (total_nodes * G > 2000000000LL) {
        PyErr_SetString(PyExc_ValueError, "part_nodes * gpus_per_node exceeds 2e9 GPUs");
        goto done;
    }
    for (npy_intp j = 0; j < n; j++) {
        if (!isfinite(submit[j]) || (j > 0 && submit[j] < submit[j - 1])) {
            PyErr_Format(PyExc_ValueError, "submit must be finite and sorted ascending (index %zd: %g)",
                         (Py_ssize_t)j, submit[j]);
            goto done;
        }
        if (!isfinite(run[j]) || run[j] < 0) {
            PyErr_Format(PyExc_ValueError, "run must be finite and >= 0 (index %zd: %g)", (Py_ssize_t)j, run[j]);
            goto done;
        }
        if (gpus[j] < 1) {
            PyErr_Format(PyExc_ValueError, "gpus must be >= 1 (index %zd: %lld)", (Py_ssize_t)j, (long long)gpus[j]);
            goto done;
        }
        if (part[j] < -1 || part[j] >= P) {
            PyErr_Format(PyExc_ValueError, "part must be -1 or a partition index < %zd (index %zd: %lld)",
                         (Py_ssize_t)P, (Py_ssize_t)j, (long long)part[j]);
            goto done;
        }
    }

    r_start = (PyArrayObject *)new_out(n, NPY_FLOAT64);
    r_first = (PyArrayObject *)new_out(n, NPY_FLOAT64);
    r_end = (PyArrayObject *)new_out(n, NPY_FLOAT64);
    r_lost = (PyArrayObject *)new_out(n, NPY_FLOAT64);
    r_ran = (PyArrayObject *)new_out(n, NPY_INT32);
    r_pre = (PyArrayObject *)new_out(n, NPY_INT32);
    r_status = (PyArrayObject *)new_out(n, NPY_INT8);
    npy_intp bdims[2] = {P, 2};
    r_busy = (PyArrayObject *)PyArray_SimpleNew(2, bdims, NPY_FLOAT64);
    if (!r_start || !r_first || !r_end || !r_lost || !r_ran || !r_pre || !r_status || !r_busy) goto done;

    cs_input in = {(int64_t)n, submit, run, gpus, part, (const uint8_t *)PyArray_DATA(a_be),
                   a_prio ? (const int64_t *)PyArray_DATA(a_prio) : NULL, (int64_t)P, pn,
                   (int64_t)G, (int64_t)reserved, backfill, best_effort, (int64_t)depth, w0, w1};
    cs_output out = {(double *)PyArray_DATA(r_start), (double *)PyArray_DATA(r_first), (double *)PyArray_DATA(r_end),
                     (double *)PyArray_DATA(r_lost), (double *)PyArray_DATA(r_busy),
                     (int32_t *)PyArray_DATA(r_ran), (int32_t *)PyArray_DATA(r_pre),
                     (int8_t *)PyArray_DATA(r_status)};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = cs_simulate(&in, &out);
    Py_END_ALLOW_THREADS
    if (rc) { PyErr_NoMemory(); goto done; }
    result = Py_BuildValue("{s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O}", "start", r_start, "first_start", r_first, "end", r_end,
                           "lost", r_lost, "ran_in", r_ran, "preempt", r_pre, "status", r_status, "busy", r_busy);
done:
    Py_XDECREF(a_submit); Py_XDECREF(a_run); Py_XDECREF(a_gpus); Py_XDECREF(a_part); Py_XDECREF(a_be);
    Py_XDECREF(a_pn); Py_XDECREF(a_prio);
    Py_XDECREF(r_start); Py_XDECREF(r_first); Py_XDECREF(r_end); Py_XDECREF(r_lost); Py_XDECREF(r_ran);
    Py_XDECREF(r_pre); Py_XDECREF(r_status); Py_XDECREF(r_busy);
    return result;
}

static PyMethodDef cluster_methods[] = {
    {"simulate", (PyCFunction)(void (*)(void))py_simulate, METH_VARARGS | METH_KEYWORDS, simulate_doc},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef cluster_module = {
    PyModuleDef_HEAD_INIT, "_cluster", "acmemodel C cluster simulator (discrete-event, event heap).", -1,
    cluster_methods
};

PyMODINIT_FUNC PyInit__cluster(void) {
    import_array();
    return PyModule_Create(&cluster_module);
}
