/* Shared declarations of the simgraph._fastwalk accelerator's C files. */
#ifndef SIMGRAPH_FASTWALK_H
#define SIMGRAPH_FASTWALK_H

#include <Python.h>

/* unflatten(aux, children, count, swap_refs): see _fastrebuild.c. */
PyObject *fastwalk_unflatten(PyObject *self, PyObject *args);

#endif
