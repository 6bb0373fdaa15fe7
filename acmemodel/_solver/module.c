/* Python module table of the acmemodel C solver. Kernels live one per file. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>

static PyMethodDef core_methods[] = {
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "_core", "acmemodel C solver kernels.", -1, core_methods
};

PyMODINIT_FUNC PyInit__core(void) {
    import_array();
    return PyModule_Create(&core_module);
}
