/* The refs-table walk's index of nodes (node -> id) for _fasttraverse.c: _walk's `index` dict
 * as an open-addressing table keyed by each node's address (nodes compare and hash by
 * identity, _node.py checks), so a lookup is one probe with no dict entry or hash call. Part
 * of the optional accelerator module simgraph._fastwalk.
 *
 * The table holds nodes[0:used] of the walk (ids are positions in `nodes`). When the walk
 * calls _walk._element (Python), which reads and extends the `index` dict, fw_index_catch_up
 * first copies the nodes found since into the dict, and fw_table_catch_up then copies the
 * nodes _element added back into the table.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_fastwalk.h"

int
fw_table_init(FwTable *t)
{
    t->mask = 7;
    t->used = 0;
    t->keys = PyMem_Calloc(t->mask + 1, sizeof(PyObject *));
    t->ids = PyMem_Calloc(t->mask + 1, sizeof(PyObject *));
    if (t->keys == NULL || t->ids == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

void
fw_table_free(FwTable *t)
{
    if (t->ids != NULL) {
        for (size_t i = 0; i <= t->mask; i++)
            Py_XDECREF(t->ids[i]);
    }
    PyMem_Free(t->keys);
    PyMem_Free(t->ids);
    t->keys = t->ids = NULL;
}

/* The slot of key: where it is, or the empty slot where it would go (linear probing). */
static size_t
slot_of(FwTable *t, PyObject *key)
{
    size_t h = ((size_t)key >> 4) * (size_t)0x9E3779B97F4A7C15ULL;
    size_t i = (h ^ (h >> 29)) & t->mask;
    while (t->keys[i] != NULL && t->keys[i] != key)
        i = (i + 1) & t->mask;
    return i;
}

PyObject *
fw_table_get(FwTable *t, PyObject *key)
{
    size_t i = slot_of(t, key);
    return t->keys[i] == key ? t->ids[i] : NULL;
}

int
fw_table_add(FwTable *t, PyObject *key, PyObject *id)
{
    if ((size_t)(t->used + 1) * 2 > t->mask + 1) {  /* grow: rehash into twice the capacity */
        FwTable bigger = {NULL, NULL, t->mask * 2 + 1, t->used};
        bigger.keys = PyMem_Calloc(bigger.mask + 1, sizeof(PyObject *));
        bigger.ids = PyMem_Calloc(bigger.mask + 1, sizeof(PyObject *));
        if (bigger.keys == NULL || bigger.ids == NULL) {
            PyMem_Free(bigger.keys);
            PyMem_Free(bigger.ids);
            Py_DECREF(id);
            PyErr_NoMemory();
            return -1;
        }
        for (size_t i = 0; i <= t->mask; i++) {
            if (t->keys[i] != NULL) {
                size_t j = slot_of(&bigger, t->keys[i]);
                bigger.keys[j] = t->keys[i];
                bigger.ids[j] = t->ids[i];
            }
        }
        PyMem_Free(t->keys);
        PyMem_Free(t->ids);
        *t = bigger;
    }
    size_t i = slot_of(t, key);
    t->keys[i] = key;
    t->ids[i] = id;
    t->used++;
    return 0;
}

int
fw_index_catch_up(FwTable *t, PyObject *nodes, PyObject *index, Py_ssize_t *in_index)
{
    for (Py_ssize_t k = *in_index; k < t->used; k++) {
        PyObject *node = PyList_GET_ITEM(nodes, k);
        if (PyDict_SetItem(index, node, fw_table_get(t, node)) < 0)
            return -1;
    }
    *in_index = t->used;
    return 0;
}

int
fw_table_catch_up(FwTable *t, PyObject *nodes, PyObject *index, Py_ssize_t *in_index)
{
    Py_ssize_t n = PyList_GET_SIZE(nodes);
    for (Py_ssize_t k = t->used; k < n; k++) {
        PyObject *id = PyDict_GetItemWithError(index, PyList_GET_ITEM(nodes, k));
        if (id == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "a node without an id in the walk's index");
            return -1;
        }
        if (fw_table_add(t, PyList_GET_ITEM(nodes, k), Py_NewRef(id)) < 0)
            return -1;
    }
    *in_index = n;
    return 0;
}
