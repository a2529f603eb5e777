/* Column reads for the refs-table walk (simgraph/_walk.py), in one C pass per group of nodes.
 *
 * Optional accelerator: simgraph/_walk.py has the same logic in Python and uses it when this
 * module is not built. Both must give identical results; tests/test_graph_fastwalk.py checks.
 *
 * classify(values, any_kind, leaf_types, array_type, base, index, nodes, children) returns
 *     -1 (int)        every value is a pytree leaf (any_kind only): values appended to children;
 *     ids             every value is a node: ids from `index` (node -> int; nodes hash by
 *                     identity), new nodes get the next ids in first-appearance order and are
 *                     appended to `nodes`;
 *     None            anything else, for the caller's per-member path; nothing modified.
 *
 * ref_ids(seq, base, index, nodes) -> ids if every item of the list/tuple `seq` is a node
 *   (assigning new ids as above), else None with nothing modified.
 *
 * str_dict_ids(d, base, index, nodes) -> (sorted keys, ids) when the keys of the dict `d` are
 *   all str or all int (exact types) and every value a node (ids assigned in sorted-key order,
 *   as above); None for other keys, False when a value is not a node (nothing modified).
 *
 * read_group(objs, names, any_kinds, leaf_types, array_type, base, index, nodes, children)
 *   -> one result per field of a group of nodes, read in one row-major pass over the instance
 *   dicts (each value's header is touched once, while it is in cache). Fields are emitted in
 *   order while their column is uniform: -1 (leaves appended to children) or ids (as
 *   classify). From the first column that is not uniform on, a field's result is the list of
 *   its values, which the caller handles per member, in order.
 *
 * any_object_array(leaves, array_type) -> whether some item of the list `leaves` is an
 *   `array_type` (numpy.ndarray; subclasses too) whose dtype holds objects (dtype.hasobject),
 *   as _outside.hiding asks: numeric arrays, the usual case, are passed over at C speed.
 *
 * unflatten(aux, children, count, swap_refs): see _fastrebuild.c.
 * traverse(root, base, leaf_types, array_type, helpers): the whole walk, see _fasttraverse.c.
 *
 * Ids come in the canonical form of _walk.id_sequence: range(a, b) when there are at least two
 * and they run consecutively upwards, else a tuple of ints.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_fastwalk.h"

int
fw_is_leaf(PyObject *value, PyObject *leaf_types, PyObject *array_type)
{
    PyTypeObject *t = Py_TYPE(value);
    if (t == &PyDict_Type || t == &PyList_Type || t == &PyTuple_Type)
        return 0;  /* containers: no jax.Array (an ABC) subclass check, a method call each */
    int found = PySet_Contains(leaf_types, (PyObject *)t);
    if (found != 0)
        return found;
    return PyObject_IsSubclass((PyObject *)t, array_type);
}

/* Fill `ids` (a new tuple of length n) with the id of every item; returns 0 or -1. Nodes are
 * the index's keys: their classes keep object's identity hash (checked in _node.py). */
static int
assign_ids(PyObject **items, Py_ssize_t n, PyObject *index, PyObject *nodes, PyObject *ids)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyDict_GetItemWithError(index, items[i]);
        if (k != NULL) {
            Py_INCREF(k);
        }
        else if (PyErr_Occurred()) {
            return -1;
        }
        else {
            k = PyLong_FromSsize_t(PyList_GET_SIZE(nodes));
            if (k == NULL || PyDict_SetItem(index, items[i], k) < 0 || PyList_Append(nodes, items[i]) < 0) {
                Py_XDECREF(k);
                return -1;
            }
        }
        PyTuple_SET_ITEM(ids, i, k);
    }
    return 0;
}

/* The canonical form of a tuple of ids (steals `ids`): range(a, a + n) for n >= 2 consecutive
 * ids, else the tuple itself. */
PyObject *
fw_canonical_ids(PyObject *ids)
{
    Py_ssize_t n = PyTuple_GET_SIZE(ids);
    if (n < 2)
        return ids;
    Py_ssize_t first = PyLong_AsSsize_t(PyTuple_GET_ITEM(ids, 0));
    for (Py_ssize_t i = 1; i < n; i++) {
        if (PyLong_AsSsize_t(PyTuple_GET_ITEM(ids, i)) != first + i)
            return ids;
    }
    Py_DECREF(ids);
    PyObject *bounds[2] = {PyLong_FromSsize_t(first), PyLong_FromSsize_t(first + n)};
    PyObject *range = bounds[0] != NULL && bounds[1] != NULL
        ? PyObject_Vectorcall((PyObject *)&PyRange_Type, bounds, 2, NULL) : NULL;
    Py_XDECREF(bounds[0]);
    Py_XDECREF(bounds[1]);
    return range;
}

PyObject *
fw_node_ids(PyObject **items, Py_ssize_t n, PyObject *index, PyObject *nodes)
{
    PyObject *ids = PyTuple_New(n);
    if (ids == NULL)
        return NULL;
    if (assign_ids(items, n, index, nodes, ids) < 0) {
        Py_DECREF(ids);
        return NULL;
    }
    return fw_canonical_ids(ids);
}

/* 1 if every item is a node, 0 if not, -1 on error. */
int
fw_all_nodes(PyObject **items, Py_ssize_t n, PyObject *base)
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
        int leaf = fw_is_leaf(items[i], leaf_types, array_type);
        if (leaf <= 0)
            return leaf;
        last = Py_TYPE(items[i]);
    }
    return 1;
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
    int uniform = fw_all_nodes(items, n, base);
    if (uniform == 1)
        return fw_node_ids(items, n, index, nodes);
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
    int uniform = fw_all_nodes(items, n, base);
    PyObject *result;
    if (uniform < 0)
        result = NULL;
    else if (uniform == 0)
        result = Py_NewRef(Py_None);
    else
        result = fw_node_ids(items, n, index, nodes);
    Py_DECREF(fast);
    return result;
}

/* str_dict_ids below, without the argument parsing. */
static PyObject *
dict_ids(PyObject *d, PyObject *base, PyObject *index, PyObject *nodes)
{
    PyObject *keys, *values;
    int found = fw_dict_nodes(d, base, &keys, &values);
    if (found != FW_DICT_NODES)
        return found < 0 ? NULL : Py_NewRef(found == FW_DICT_OTHER_KEYS ? Py_None : Py_False);
    PyObject *ids = fw_node_ids(((PyListObject *)values)->ob_item, PyList_GET_SIZE(values),
                                index, nodes);
    PyObject *result = ids != NULL ? PyTuple_Pack(2, keys, ids) : NULL;
    Py_XDECREF(ids);
    Py_DECREF(keys);
    Py_DECREF(values);
    return result;
}

/* str_dict_ids(d, base, index, nodes) -> (sorted keys, ids) for a dict whose keys are all
 * str or all int (JAX orders a dict's leaves by sorted keys) and whose values are all nodes;
 * None for other keys, False if a value is not a node (nothing modified in both cases). */
static PyObject *
str_dict_ids(PyObject *self, PyObject *args)
{
    PyObject *d, *base, *index, *nodes;
    if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyDict_Type, &d, &PyType_Type, &base, &PyDict_Type,
                          &index, &PyList_Type, &nodes))
        return NULL;
    return dict_ids(d, base, index, nodes);
}

/* See _fastwalk.h: the str/int-key path of _walk._node_dict. */
int
fw_dict_nodes(PyObject *d, PyObject *base, PyObject **sorted_keys, PyObject **values)
{
    PyObject *keys = PyDict_Keys(d);
    if (keys == NULL)
        return -1;
    Py_ssize_t n = PyList_GET_SIZE(keys);
    PyTypeObject *key_type = n > 0 ? Py_TYPE(PyList_GET_ITEM(keys, 0)) : &PyUnicode_Type;
    for (Py_ssize_t i = 0; i < n; i++) {  /* all exact str or all exact int: a total order */
        if (Py_TYPE(PyList_GET_ITEM(keys, i)) != key_type
            || (key_type != &PyUnicode_Type && key_type != &PyLong_Type)) {
            Py_DECREF(keys);
            return FW_DICT_OTHER_KEYS;
        }
    }
    PyObject *vals = NULL;
    int result = -1;
    if (PyList_Sort(keys) < 0 || (vals = PyList_New(n)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyDict_GetItemWithError(d, PyList_GET_ITEM(keys, i));
        if (v == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "dict changed size during the walk");
            goto done;
        }
        PyList_SET_ITEM(vals, i, Py_NewRef(v));
    }
    result = fw_all_nodes(((PyListObject *)vals)->ob_item, n, base);
    if (result == 1 && (*sorted_keys = PyList_AsTuple(keys)) == NULL)
        result = -1;
    if (result == 1) {
        *values = vals;
        vals = NULL;
    }
    result = result == 1 ? FW_DICT_NODES : (result == 0 ? FW_DICT_NOT_NODES : -1);
done:
    Py_DECREF(keys);
    Py_XDECREF(vals);
    return result;
}

/* Which uniform kinds a value keeps possible (bit mask of UNIFORM_*), -1 on error. */
static int
value_kinds(PyObject *v, int any_kind, PyObject *leaf_types, PyObject *array_type, PyObject *base)
{
    PyTypeObject *t = Py_TYPE(v);
    if (PyType_IsSubtype(t, (PyTypeObject *)base))
        return UNIFORM_NODES;
    if (!any_kind)
        return 0;
    int leaf = fw_is_leaf(v, leaf_types, array_type);
    return leaf < 0 ? -1 : (leaf ? UNIFORM_LEAVES : 0);
}

/* Row-major pass: columns[j * n + i] = new reference to field j of object i; kinds[j] = the
 * uniform kinds column j keeps. Returns 0, or -1 with an exception (KeyError(name) if a field
 * is missing). */
int
fw_fill_columns(PyObject *objs, PyObject *names, PyObject *any_kinds, PyObject *leaf_types,
             PyObject *array_type, PyObject *base, PyObject **columns, int *kinds)
{
    Py_ssize_t n = PyList_GET_SIZE(objs), f = PyTuple_GET_SIZE(names);
    PyTypeObject **last = PyMem_Calloc(f, sizeof(PyTypeObject *));
    if (last == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int *any = PyMem_Calloc(f + 1, sizeof(int));
    if (any == NULL) {
        PyMem_Free(last);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t j = 0; j < f; j++) {
        kinds[j] = UNIFORM_LEAVES | UNIFORM_NODES;
        any[j] = PyObject_IsTrue(PyTuple_GET_ITEM(any_kinds, j)) == 1;
    }
    int status = 0;
    for (Py_ssize_t i = 0; i < n && status == 0; i++) {
        PyObject *d = PyObject_GenericGetDict(PyList_GET_ITEM(objs, i), NULL);
        if (d == NULL) {
            status = -1;
            break;
        }
        for (Py_ssize_t j = 0; j < f; j++) {
            PyObject *name = PyTuple_GET_ITEM(names, j);
            PyObject *v = PyDict_Check(d) ? PyDict_GetItemWithError(d, name) : NULL;
            if (v == NULL) {
                if (!PyErr_Occurred())
                    PyErr_SetObject(PyExc_KeyError, name);
                status = -1;
                break;
            }
            columns[j * n + i] = Py_NewRef(v);
            if (kinds[j] == 0 || Py_TYPE(v) == last[j])
                continue;
            int k = value_kinds(v, any[j], leaf_types, array_type, base);
            if (k < 0) {
                status = -1;
                break;
            }
            kinds[j] &= k;
            last[j] = Py_TYPE(v);
        }
        Py_DECREF(d);
    }
    PyMem_Free(last);
    PyMem_Free(any);
    return status;
}

/* Steal the n references at `items` into a new list. */
static PyObject *
steal_into_list(PyObject **items, Py_ssize_t n)
{
    PyObject *list = PyList_New(n);
    if (list == NULL)
        return NULL;
    memcpy(((PyListObject *)list)->ob_item, items, n * sizeof(PyObject *));
    for (Py_ssize_t i = 0; i < n; i++)
        items[i] = NULL;
    return list;
}

/* Append the n references at `items` to `children`, stealing them: the list grows by n Nones,
 * which are swapped for the items, so the items' reference counts are not written again. */
int
fw_steal_onto(PyObject *children, PyObject **items, Py_ssize_t n)
{
    PyObject *pad = PyList_New(n);
    if (pad == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        PyList_SET_ITEM(pad, i, Py_NewRef(Py_None));
    Py_ssize_t start = PyList_GET_SIZE(children);
    int rc = PyList_SetSlice(children, start, start, pad);
    Py_DECREF(pad);
    if (rc < 0)
        return -1;
    PyObject **slots = ((PyListObject *)children)->ob_item + start;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_DECREF(slots[i]);  /* None */
        slots[i] = items[i];
        items[i] = NULL;
    }
    return 0;
}

/* The result of column j (see read_group); `emitting` is cleared at the first non-uniform one. */
static PyObject *
column_result(PyObject **column, Py_ssize_t n, int kind, int *emitting, PyObject *index,
              PyObject *nodes, PyObject *children)
{
    if (*emitting && (kind & UNIFORM_NODES) && n > 0)
        return fw_node_ids(column, n, index, nodes);
    if (*emitting && kind == UNIFORM_LEAVES && n > 0) {
        if (fw_steal_onto(children, column, n) < 0)
            return NULL;
        return PyLong_FromLong(-1);
    }
    *emitting = 0;
    return steal_into_list(column, n);
}

static PyObject *
read_group(PyObject *self, PyObject *args)
{
    PyObject *objs, *names, *any_kinds, *leaf_types, *array_type, *base, *index, *nodes, *children;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OO!O!O!O!", &PyList_Type, &objs, &PyTuple_Type, &names,
                          &PyTuple_Type, &any_kinds, &PyFrozenSet_Type, &leaf_types, &array_type,
                          &PyType_Type, &base, &PyDict_Type, &index, &PyList_Type, &nodes,
                          &PyList_Type, &children))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(objs), f = PyTuple_GET_SIZE(names);
    PyObject **columns = PyMem_Calloc(n * f + 1, sizeof(PyObject *));
    int *kinds = PyMem_Calloc(f + 1, sizeof(int));
    PyObject *results = PyList_New(f);
    if (columns == NULL || kinds == NULL || results == NULL)
        goto fail;
    if (fw_fill_columns(objs, names, any_kinds, leaf_types, array_type, base, columns, kinds) < 0)
        goto fail;
    int emitting = 1;
    for (Py_ssize_t j = 0; j < f; j++) {
        PyObject *r = column_result(columns + j * n, n, kinds[j], &emitting, index, nodes, children);
        if (r == NULL)
            goto fail;
        PyList_SET_ITEM(results, j, r);
    }
    for (Py_ssize_t k = 0; k < n * f; k++)
        Py_XDECREF(columns[k]);  /* node columns (ids made) keep their references here */
    PyMem_Free(columns);
    PyMem_Free(kinds);
    return results;
fail:
    if (columns != NULL) {
        for (Py_ssize_t k = 0; k < n * f; k++)
            Py_XDECREF(columns[k]);
    }
    PyMem_Free(columns);
    PyMem_Free(kinds);
    Py_XDECREF(results);
    return NULL;
}


static PyObject *dtype_name, *hasobject_name;  /* "dtype", "hasobject" (made at import) */

/* The C getter of type t's own `dtype` attribute (what `array.dtype` calls once the attribute
 * is looked up), with a new reference to its descriptor in *owner; NULL if the attribute is
 * not a getset descriptor of t itself (or on error, with an exception set). */
static PyGetSetDef *
dtype_getter(PyTypeObject *t, PyObject **owner)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *dict = PyType_GetDict(t);
#else
    PyObject *dict = Py_XNewRef(t->tp_dict);
#endif
    PyObject *descr = dict != NULL ? PyDict_GetItemWithError(dict, dtype_name) : NULL;
    *owner = Py_XNewRef(descr);
    Py_XDECREF(dict);
    if (descr == NULL || !Py_IS_TYPE(descr, &PyGetSetDescr_Type) || PyDescr_TYPE(descr) != t
        || ((PyGetSetDescrObject *)descr)->d_getset->get == NULL)
        return NULL;
    return ((PyGetSetDescrObject *)descr)->d_getset;
}

/* any_object_array(leaves, array_type): see the top of this file. Without numpy's headers (the
 * build does not need numpy): an exact ndarray's dtype comes from the type's C getter, a
 * subclass's (or any, if the getter is not found) by getattr. dtype.hasobject is read once per
 * run of equal dtypes: the last dtype seen to hold no objects is kept (a reference) and
 * compared by identity, as numpy's arrays share their dtype objects. */
static PyObject *
any_object_array(PyObject *self, PyObject *args)
{
    PyObject *leaves, *type, *owner = NULL, *numeric = NULL;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &leaves, &PyType_Type, &type))
        return NULL;
    PyTypeObject *array_type = (PyTypeObject *)type;
    PyGetSetDef *getset = dtype_getter(array_type, &owner);
    int found = PyErr_Occurred() ? -1 : 0;  /* 1: an object array, -1: an error */
    for (Py_ssize_t i = 0; found == 0 && i < PyList_GET_SIZE(leaves); i++) {
        PyObject *leaf = PyList_GET_ITEM(leaves, i), *dtype;
        if (getset != NULL && Py_IS_TYPE(leaf, array_type))
            dtype = getset->get(leaf, getset->closure);
        else if (PyObject_TypeCheck(leaf, array_type)) {
            Py_INCREF(leaf);  /* a subclass's dtype may run Python code (that edits leaves) */
            dtype = PyObject_GetAttr(leaf, dtype_name);
            Py_DECREF(leaf);
        }
        else
            continue;
        if (dtype == NULL || dtype == numeric) {
            found = dtype == NULL ? -1 : 0;
            Py_XDECREF(dtype);
            continue;
        }
        PyObject *flag = PyObject_GetAttr(dtype, hasobject_name);
        found = flag != NULL ? PyObject_IsTrue(flag) : -1;
        Py_XDECREF(flag);
        if (found == 0)
            Py_XSETREF(numeric, dtype);  /* steals dtype */
        else
            Py_DECREF(dtype);
    }
    Py_XDECREF(numeric);
    Py_XDECREF(owner);
    return found < 0 ? NULL : PyBool_FromLong(found);
}

static PyMethodDef methods[] = {
    {"classify", classify, METH_VARARGS, "Spec of a uniform column (children or ids), or None."},
    {"ref_ids", ref_ids, METH_VARARGS, "Ids of a list or tuple of nodes, or None."},
    {"read_group", read_group, METH_VARARGS, "Every field of a group of nodes, emitted in one pass."},
    {"str_dict_ids", str_dict_ids, METH_VARARGS, "Sorted keys and node ids of a dict of nodes."},
    {"any_object_array", any_object_array, METH_VARARGS, "Whether a list holds an object array."},
    {"traverse", fastwalk_traverse, METH_VARARGS, "The whole walk: (children, aux, nodes)."},
    {"unflatten", fastwalk_unflatten, METH_VARARGS, "Rebuild a graph from its aux data and children."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastwalk", "C column reads for simgraph's refs-table walk.", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__fastwalk(void)
{
    dtype_name = PyUnicode_InternFromString("dtype");
    hasobject_name = PyUnicode_InternFromString("hasobject");
    if (dtype_name == NULL || hasobject_name == NULL)
        return NULL;
    return PyModule_Create(&module);
}
