/* Rebuilding a graph from its refs table (the C half of simgraph/_tables.py::unflatten), part
 * of the optional accelerator module simgraph._fastwalk (registered in _fastwalk.c).
 *
 * unflatten(aux, children, count, swap_refs) -> the root of a new graph of `count` nodes: one
 *   object.__new__(class) per id, fields written into its instance dict in the order of
 *   _tables.unflatten (dynamic fields, then static ones); `swap_refs(child, nodes)` rebuilds
 *   a child container holding NodeRef placeholders. Malformed aux data raises ValueError
 *   (or object.__new__'s TypeError), never reads out of bounds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_fastwalk.h"


/* Item i of a sequence of ids or members (a range or a tuple of ints); -1 with an exception. */
static Py_ssize_t
id_at(PyObject *ids, Py_ssize_t i)
{
    PyObject *k = PyTuple_CheckExact(ids) ? Py_NewRef(PyTuple_GET_ITEM(ids, i))
                                           : PySequence_GetItem(ids, i);
    if (k == NULL)
        return -1;
    Py_ssize_t v = PyLong_AsSsize_t(k);
    Py_DECREF(k);
    return v;
}

/* nodes[k] (borrowed), or NULL with an exception when k is out of range or not made yet. */
static PyObject *
node_at(PyObject *nodes, Py_ssize_t k)
{
    PyObject *node = (k >= 0 && k < PyList_GET_SIZE(nodes)) ? PyList_GET_ITEM(nodes, k) : NULL;
    if (node == NULL && !PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "node id %zd is not in this structure", k);
    return node;
}

/* nodes[ids[0]], nodes[ids[1]], ... as a new list. */
static PyObject *
nodes_at(PyObject *ids, PyObject *nodes)
{
    Py_ssize_t n = PyObject_Length(ids);
    if (n < 0)
        return NULL;
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *node = node_at(nodes, id_at(ids, i));
        if (node == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, Py_NewRef(node));
    }
    return out;
}

/* A container of references, ``(kind, ids)``: a list, a tuple, or kind.unflatten(nodes). */
static PyObject *
rebuild_container(PyObject *spec, PyObject *nodes)
{
    PyObject *kind = PyTuple_GET_ITEM(spec, 0);
    PyObject *values = nodes_at(PyTuple_GET_ITEM(spec, 1), nodes);
    if (values == NULL || kind == (PyObject *)&PyList_Type)
        return values;
    PyObject *out = kind == (PyObject *)&PyTuple_Type
                        ? PyList_AsTuple(values)
                        : PyObject_CallMethod(kind, "unflatten", "O", values);
    Py_DECREF(values);
    return out;
}

/* The value of one member's spec in a mixed column (see _tables._mixed_values). */
static PyObject *
mixed_value(PyObject *spec, PyObject **children, Py_ssize_t n_children, Py_ssize_t *pos,
            PyObject *nodes, PyObject *swap_refs)
{
    if (!PyLong_CheckExact(spec))
        return rebuild_container(spec, nodes);
    Py_ssize_t k = PyLong_AsSsize_t(spec);
    if (k >= 0) {
        PyObject *node = node_at(nodes, k);
        return node == NULL ? NULL : Py_NewRef(node);
    }
    if (*pos >= n_children) {
        PyErr_SetString(PyExc_ValueError, "too few children for this structure");
        return NULL;
    }
    PyObject *child = children[(*pos)++];
    if (k == -1)
        return Py_NewRef(child);
    return PyObject_CallFunctionObjArgs(swap_refs, child, nodes, NULL);
}

/* Column j's value for every member into vals[j * n + i] (new references). */
static int
read_column(PyObject *spec, Py_ssize_t n, PyObject **vals, PyObject *nodes, PyObject **children,
            Py_ssize_t n_children, Py_ssize_t *pos, PyObject *swap_refs)
{
    if (PyLong_CheckExact(spec)) {  /* CHILD: one child per member, in order */
        if (*pos + n > n_children) {
            PyErr_SetString(PyExc_ValueError, "too few children for this structure");
            return -1;
        }
        for (Py_ssize_t i = 0; i < n; i++)
            vals[i] = Py_NewRef(children[(*pos)++]);
        return 0;
    }
    if (PyTuple_CheckExact(spec) && PyTuple_GET_SIZE(spec) == 2 &&
        PyUnicode_Check(PyTuple_GET_ITEM(spec, 0))) {  /* ("mixed", one spec per member) */
        PyObject *per = PyTuple_GET_ITEM(spec, 1);
        if (!PyTuple_CheckExact(per) || PyTuple_GET_SIZE(per) != n) {
            PyErr_SetString(PyExc_ValueError, "aux data: a mixed column's length is not the group's");
            return -1;
        }
        for (Py_ssize_t i = 0; i < n; i++)
            if ((vals[i] = mixed_value(PyTuple_GET_ITEM(per, i), children, n_children, pos, nodes,
                                       swap_refs)) == NULL)
                return -1;
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {  /* node ids, one per member */
        PyObject *node = node_at(nodes, id_at(spec, i));
        if (node == NULL)
            return -1;
        vals[i] = Py_NewRef(node);
    }
    return 0;
}

/* Fill the fields of one group's members: values read column by column (children are in
 * that order), then written member by member into each instance dict (dynamic fields, then
 * static ones, the order of _tables.unflatten). */
static int
fill_group(PyObject *group, PyObject *nodes, PyObject **children, Py_ssize_t n_children,
           Py_ssize_t *pos, PyObject *swap_refs)
{
    PyObject *cls = PyTuple_GET_ITEM(group, 0), *members = PyTuple_GET_ITEM(group, 1);
    PyObject *statics = PyTuple_GET_ITEM(group, 2), *specs = PyTuple_GET_ITEM(group, 3);
    if (!PyTuple_CheckExact(statics) || !PyTuple_CheckExact(specs)) {
        PyErr_SetString(PyExc_ValueError, "aux data: a group's statics and specs must be tuples");
        return -1;
    }
    PyObject *layout = PyObject_GetAttrString(cls, "__sg_layout__");
    if (layout == NULL)
        return -1;
    PyObject *dynamic = PyObject_GetAttrString(layout, "dynamic");
    PyObject *static_names = PyObject_GetAttrString(layout, "static");
    Py_DECREF(layout);
    int status = -1;
    Py_ssize_t n = PyObject_Length(members), f = 0, fd = 0;
    PyObject **objs = NULL, **vals = NULL;
    if (dynamic == NULL || static_names == NULL || n < 0)
        goto done;
    fd = PyTuple_GET_SIZE(dynamic);
    f = fd + PyTuple_GET_SIZE(static_names);
    if (PyTuple_GET_SIZE(specs) != fd || PyTuple_GET_SIZE(statics) != f - fd) {
        PyErr_SetString(PyExc_ValueError, "aux data does not match the class's fields");
        goto done;
    }
    objs = PyMem_Calloc(n + 1, sizeof(PyObject *));
    vals = PyMem_Calloc(n * f + 1, sizeof(PyObject *));
    if (objs == NULL || vals == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if ((objs[i] = node_at(nodes, id_at(members, i))) == NULL)
            goto done;
    for (Py_ssize_t j = 0; j < fd; j++)
        if (read_column(PyTuple_GET_ITEM(specs, j), n, vals + j * n, nodes, children, n_children,
                        pos, swap_refs) < 0)
            goto done;
    for (Py_ssize_t j = fd; j < f; j++) {
        PyObject *column = PyTuple_GET_ITEM(statics, j - fd);
        if (!PyTuple_CheckExact(column) || PyTuple_GET_SIZE(column) != n) {
            PyErr_SetString(PyExc_ValueError, "aux data: a static column's length is not the group's");
            goto done;
        }
        for (Py_ssize_t i = 0; i < n; i++)
            vals[j * n + i] = Py_NewRef(PyTuple_GET_ITEM(column, i));
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyObject_GenericGetDict(objs[i], NULL);
        if (d == NULL)
            goto done;
        for (Py_ssize_t j = 0; j < f; j++) {
            PyObject *name = j < fd ? PyTuple_GET_ITEM(dynamic, j)
                                    : PyTuple_GET_ITEM(static_names, j - fd);
            if (PyDict_SetItem(d, name, vals[j * n + i]) < 0) {
                Py_DECREF(d);
                goto done;
            }
        }
        Py_DECREF(d);
    }
    status = 0;
done:
    if (vals != NULL)
        for (Py_ssize_t k = 0; k < n * f; k++)
            Py_XDECREF(vals[k]);
    Py_XDECREF(dynamic);
    Py_XDECREF(static_names);
    PyMem_Free(objs);
    PyMem_Free(vals);
    return status;
}

/* object.__new__(cls): directly for a class defined in Python, else through object.__new__
 * itself (which refuses what it must, e.g. a builtin type or a non-type). */
static PyObject *
new_instance(PyObject *cls, PyObject *empty)
{
    if (PyType_Check(cls) && PyType_HasFeature((PyTypeObject *)cls, Py_TPFLAGS_HEAPTYPE) &&
        ((PyTypeObject *)cls)->tp_new == PyBaseObject_Type.tp_new)
        return PyBaseObject_Type.tp_new((PyTypeObject *)cls, empty, NULL);
    PyObject *object_new = PyObject_GetAttrString((PyObject *)&PyBaseObject_Type, "__new__");
    if (object_new == NULL)
        return NULL;
    PyObject *obj = PyObject_CallOneArg(object_new, cls);
    Py_DECREF(object_new);
    return obj;
}

/* unflatten(aux, children, count, swap_refs) -> the root of a new graph (see module doc). */
PyObject *
fastwalk_unflatten(PyObject *self, PyObject *args)
{
    PyObject *aux, *children, *swap_refs;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "O!OnO", &PyTuple_Type, &aux, &children, &count, &swap_refs))
        return NULL;
    PyObject *fast = PySequence_Fast(children, "children must be a sequence");
    PyObject *nodes = fast != NULL ? PyList_New(count) : NULL;
    PyObject *empty = PyTuple_New(0);
    PyObject *root = NULL;
    if (nodes == NULL || empty == NULL)
        goto done;
    for (Py_ssize_t g = 0; g < PyTuple_GET_SIZE(aux); g++) {
        PyObject *group = PyTuple_GET_ITEM(aux, g);
        if (!PyTuple_CheckExact(group) || PyTuple_GET_SIZE(group) != 4) {
            PyErr_SetString(PyExc_ValueError, "aux data: a group must be a 4-tuple");
            goto done;
        }
        PyObject *cls = PyTuple_GET_ITEM(group, 0);
        PyObject *members = PyTuple_GET_ITEM(group, 1);
        Py_ssize_t n = PyObject_Length(members);
        if (n < 0)
            goto done;
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_ssize_t k = id_at(members, i);
            if (k < 0 || k >= count) {
                if (!PyErr_Occurred())
                    PyErr_Format(PyExc_ValueError, "node id %zd is not in this structure", k);
                goto done;
            }
            PyObject *obj = new_instance(cls, empty);
            if (obj == NULL)
                goto done;
            Py_XSETREF(((PyListObject *)nodes)->ob_item[k], obj);
        }
    }
    Py_ssize_t pos = 0, n_children = PySequence_Fast_GET_SIZE(fast);
    PyObject **items = PySequence_Fast_ITEMS(fast);
    for (Py_ssize_t g = 0; g < PyTuple_GET_SIZE(aux); g++)
        if (fill_group(PyTuple_GET_ITEM(aux, g), nodes, items, n_children, &pos, swap_refs) < 0)
            goto done;
    root = node_at(nodes, 0);
    Py_XINCREF(root);
done:
    Py_XDECREF(fast);
    Py_XDECREF(nodes);
    Py_XDECREF(empty);
    return root;
}
