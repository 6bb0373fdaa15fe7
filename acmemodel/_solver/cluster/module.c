/* Python module table of the acmemodel C solver. Kernels live one per file. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>

static PyMethodDef cluster_methods[] = {
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef cluster_module = {
    PyModuleDef_HEAD_INIT, "_cluster", "acmemodel C cluster simulator and quota search.", -1, cluster_methods
};

PyMODINIT_FUNC PyInit__cluster(void) {
    import_array();
    return PyModule_Create(&cluster_module);
}
