/* Column reads for the refs-table walk (simgraph/_walk.py), in one C pass per column.
 *
 * Optional accelerator: simgraph/_walk.py has the same logic in Python and uses it when this
 * module is not built. Both must give identical results; tests/test_graph_fastwalk.py checks.
 *
 * read_columns(dicts, names) -> one list of values per field name, read in one pass over the
 *   instance dicts; raises KeyError(name) if a dict lacks a field.
 *
 * classify(values, any_kind, leaf_types, array_type, base, index, nodes, children) returns
 *     -1 (int)        every value is a pytree leaf (any_kind only): values appended to children;
 *     tuple of ints   every value is a node: ids from `index` (id(obj) -> int), new nodes get
 *                     the next ids in first-appearance order and are appended to `nodes`;
 *     None            anything else, for the caller's per-member path; nothing modified.
 *
 * ref_ids(seq, base, index, nodes) -> tuple of ids if every item of the list/tuple `seq` is
 *   a node (assigning new ids as above), else None with nothing modified.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static int
is_leaf(PyObject *value, PyObject *leaf_types, PyObject *array_type)
{
    int found = PySet_Contains(leaf_types, (PyObject *)Py_TYPE(value));
    if (found != 0)
        return found;
    return PyObject_IsSubclass((PyObject *)Py_TYPE(value), array_type);
}

/* Fill `ids` (a new tuple of length n) with the id of every item; returns 0 or -1. */
static int
assign_ids(PyObject **items, Py_ssize_t n, PyObject *index, PyObject *nodes, PyObject *ids)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key = PyLong_FromVoidPtr((void *)items[i]);
        if (key == NULL)
            return -1;
        PyObject *k = PyDict_GetItemWithError(index, key);
        if (k != NULL) {
            Py_INCREF(k);
        }
        else if (PyErr_Occurred()) {
            Py_DECREF(key);
            return -1;
        }
        else {
            k = PyLong_FromSsize_t(PyList_GET_SIZE(nodes));
            if (k == NULL || PyDict_SetItem(index, key, k) < 0 || PyList_Append(nodes, items[i]) < 0) {
                Py_XDECREF(k);
                Py_DECREF(key);
                return -1;
            }
        }
        Py_DECREF(key);
        PyTuple_SET_ITEM(ids, i, k);
    }
    return 0;
}

static PyObject *
node_ids(PyObject **items, Py_ssize_t n, PyObject *index, PyObject *nodes)
{
    PyObject *ids = PyTuple_New(n);
    if (ids == NULL)
        return NULL;
    if (assign_ids(items, n, index, nodes, ids) < 0) {
        Py_DECREF(ids);
        return NULL;
    }
    return ids;
}

/* 1 if every item is a node, 0 if not, -1 on error. */
static int
all_nodes(PyObject **items, Py_ssize_t n, PyObject *base)
{
    PyTypeObject *last = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTypeObject *t = Py_TYPE(items[i]);
        if (t == last)
            continue;
        if (!PyType_IsSubtype(t, (PyTypeObject *)base))
            return 0;
        last = t;
    }
    return 1;
}

/* 1 if every item is a leaf, 0 if not, -1 on error. */
static int
all_leaves(PyObject **items, Py_ssize_t n, PyObject *leaf_types, PyObject *array_type)
{
    PyTypeObject *last = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (Py_TYPE(items[i]) == last)
            continue;
        int leaf = is_leaf(items[i], leaf_types, array_type);
        if (leaf <= 0)
            return leaf;
        last = Py_TYPE(items[i]);
    }
    return 1;
}

/* One pass over the instance dicts: a list of values per field name (better locality than
 * one pass per field on large groups). */
static PyObject *
read_columns(PyObject *self, PyObject *args)
{
    PyObject *dicts, *names;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &dicts, &PyTuple_Type, &names))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(dicts), f = PyTuple_GET_SIZE(names);
    PyObject *columns = PyList_New(f);
    if (columns == NULL)
        return NULL;
    for (Py_ssize_t j = 0; j < f; j++) {
        PyObject *values = PyList_New(n);
        if (values == NULL) {
            Py_DECREF(columns);
            return NULL;
        }
        PyList_SET_ITEM(columns, j, values);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyList_GET_ITEM(dicts, i);
        for (Py_ssize_t j = 0; j < f; j++) {
            PyObject *name = PyTuple_GET_ITEM(names, j);
            PyObject *v = PyDict_Check(d) ? PyDict_GetItemWithError(d, name) : NULL;
            if (v == NULL) {
                if (!PyErr_Occurred())
                    PyErr_SetObject(PyExc_KeyError, name);
                Py_DECREF(columns);
                return NULL;
            }
            Py_INCREF(v);
            PyList_SET_ITEM(PyList_GET_ITEM(columns, j), i, v);
        }
    }
    return columns;
}

static PyObject *
classify(PyObject *self, PyObject *args)
{
    PyObject *values, *leaf_types, *array_type, *base, *index, *nodes, *children;
    int any_kind;
    if (!PyArg_ParseTuple(args, "O!pO!OO!O!O!O!", &PyList_Type, &values, &any_kind,
                          &PyFrozenSet_Type, &leaf_types, &array_type, &PyType_Type, &base,
                          &PyDict_Type, &index, &PyList_Type, &nodes, &PyList_Type, &children))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(values);
    PyObject **items = ((PyListObject *)values)->ob_item;
    int uniform = all_nodes(items, n, base);
    if (uniform == 1)
        return node_ids(items, n, index, nodes);
    if (uniform == 0 && any_kind)
        uniform = all_leaves(items, n, leaf_types, array_type);
    if (uniform < 0)
        return NULL;
    if (uniform == 0)
        Py_RETURN_NONE;
    Py_ssize_t start = PyList_GET_SIZE(children);
    if (PyList_SetSlice(children, start, start, values) < 0)
        return NULL;
    return PyLong_FromLong(-1);
}

static PyObject *
ref_ids(PyObject *self, PyObject *args)
{
    PyObject *seq, *base, *index, *nodes;
    if (!PyArg_ParseTuple(args, "OO!O!O!", &seq, &PyType_Type, &base, &PyDict_Type, &index,
                          &PyList_Type, &nodes))
        return NULL;
    if (!PyList_CheckExact(seq) && !PyTuple_CheckExact(seq)) {
        PyErr_SetString(PyExc_TypeError, "ref_ids expects a list or tuple");
        return NULL;
    }
    PyObject *fast = PySequence_Fast(seq, "ref_ids expects a list or tuple");
    if (fast == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    PyObject **items = PySequence_Fast_ITEMS(fast);
    int uniform = all_nodes(items, n, base);
    PyObject *result;
    if (uniform < 0)
        result = NULL;
    else if (uniform == 0)
        result = Py_NewRef(Py_None);
    else
        result = node_ids(items, n, index, nodes);
    Py_DECREF(fast);
    return result;
}

static PyMethodDef methods[] = {
    {"read_columns", read_columns, METH_VARARGS, "Every field of a group of nodes, as columns."},
    {"classify", classify, METH_VARARGS, "Spec of a uniform column (children or ids), or None."},
    {"ref_ids", ref_ids, METH_VARARGS, "Ids of a list or tuple of nodes, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastwalk", "C column reads for simgraph's refs-table walk.", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__fastwalk(void)
{
    return PyModule_Create(&module);
}
