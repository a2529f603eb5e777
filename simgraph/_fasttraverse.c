/* The whole refs-table walk (simgraph/_walk.py::traverse) in C, part of the optional
 * accelerator module simgraph._fastwalk (registered in _fastwalk.c).
 *
 * traverse(root, base, leaf_types, array_type, helpers) -> (children, aux, nodes), exactly
 *   what _walk._traverse gives. helpers = (_element, _make_plan, _str_dict_treedef, MIXED,
 *   REF_REQUIRED, REF_OPTIONAL) from _walk.py. The level loop, the grouping by class
 *   (_by_class), uniform columns (_group, read in C by _fastwalk.c's fw_fill_columns),
 *   single-node levels (_single: a group of one gives the same specs), and the values of a
 *   mixed column that are nodes, leaves, None, or lists/tuples/str- or int-keyed dicts of nodes
 *   (_element, _container) are done here. Any other value of a mixed column is handed to
 *   _walk._element itself (containers holding data, pytrees, wrong values in reference
 *   fields). Ids are kept in an FwTable (_fastindex.c), copied into _walk's `index` dict only
 *   for the calls of _element, which reads and extends it.
 *
 * Errors: any exception leaves this function (nothing of the graph is modified); _walk.traverse
 * then runs the Python walk, which raises the error with its message and key path. So this
 * file does not build error messages and need not find errors in the Python walk's order.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_fastwalk.h"

/* One walk's state: the locals of _walk._traverse and the constants it reads. */
typedef struct {
    PyObject *base, *leaf_types, *array_type;   /* borrowed arguments */
    PyObject *element, *make_plan, *str_dict_treedef, *mixed;  /* borrowed from helpers */
    long ref_required, ref_optional;
    FwTable table;                              /* node -> id, for this file */
    PyObject *index, *nodes, *children;         /* node -> id (for _element), nodes, children */
    Py_ssize_t in_index;                        /* index holds nodes[0:in_index] */
    PyObject *ctx;                              /* (root, index, nodes, children, base) */
    PyObject *child;                            /* CHILD (-1) */
    PyObject *plan_name;                        /* "__sg_plan__" */
} Walk;

/* cls.__dict__["__sg_plan__"] or _make_plan(cls) (_walk._group); a new reference. */
static PyObject *
plan_of(Walk *w, PyObject *cls)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *dict = PyType_GetDict((PyTypeObject *)cls);
#else
    PyObject *dict = Py_XNewRef(((PyTypeObject *)cls)->tp_dict);
#endif
    PyObject *plan = dict != NULL ? PyDict_GetItemWithError(dict, w->plan_name) : NULL;
    Py_XINCREF(plan);
    Py_XDECREF(dict);
    if (plan == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, w->plan_name);
        return NULL;
    }
    if (plan == Py_None) {
        Py_DECREF(plan);
        plan = PyObject_CallOneArg(w->make_plan, cls);
        if (plan == NULL)
            return NULL;
    }
    if (!PyTuple_CheckExact(plan) || PyTuple_GET_SIZE(plan) != 6
        || !PyTuple_CheckExact(PyTuple_GET_ITEM(plan, 0))
        || !PyTuple_CheckExact(PyTuple_GET_ITEM(plan, 1))
        || !PyTuple_CheckExact(PyTuple_GET_ITEM(plan, 2))
        || !PyTuple_CheckExact(PyTuple_GET_ITEM(plan, 5))
        || PyTuple_GET_SIZE(PyTuple_GET_ITEM(plan, 1)) != PyTuple_GET_SIZE(PyTuple_GET_ITEM(plan, 0))
        || PyTuple_GET_SIZE(PyTuple_GET_ITEM(plan, 2)) != PyTuple_GET_SIZE(PyTuple_GET_ITEM(plan, 0))) {
        Py_DECREF(plan);
        PyErr_SetString(PyExc_TypeError, "a node class's __sg_plan__ is not _walk._make_plan's");
        return NULL;
    }
    return plan;
}

/* _walk._reference_id: the id of node v (borrowed), a new one (v appended to nodes) if not
 * seen yet. */
static PyObject *
reference_id(Walk *w, PyObject *v)
{
    PyObject *known = fw_table_get(&w->table, v);
    if (known != NULL)
        return known;
    PyObject *k = PyLong_FromSsize_t(PyList_GET_SIZE(w->nodes));
    if (k == NULL || PyList_Append(w->nodes, v) < 0) {
        Py_XDECREF(k);
        return NULL;
    }
    return fw_table_add(&w->table, v, k) < 0 ? NULL : k;
}

/* _walk._reference_ids (fw_node_ids with the table): ids of n nodes in canonical form. */
static PyObject *
node_ids(Walk *w, PyObject **items, Py_ssize_t n)
{
    PyObject *ids = PyTuple_New(n);
    if (ids == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = reference_id(w, items[i]);
        if (k == NULL) {
            Py_DECREF(ids);
            return NULL;
        }
        PyTuple_SET_ITEM(ids, i, Py_NewRef(k));
    }
    return fw_canonical_ids(ids);
}

/* children.append(v); return CHILD. */
static PyObject *
as_child(Walk *w, PyObject *v)
{
    return PyList_Append(w->children, v) < 0 ? NULL : Py_NewRef(w->child);
}

/* _walk._element: the spec of one member's value in a column that is not uniform (a new
 * reference). The common cases are mirrored here; the rest go to _element itself. */
static PyObject *
element(Walk *w, PyObject *v, PyObject *name, PyObject *kind, PyObject *obj)
{
    int r = PyObject_IsInstance(v, w->base);
    if (r != 0)
        return r < 0 ? NULL : Py_XNewRef(reference_id(w, v));
    long k = PyLong_AsLong(kind);
    if (k == -1 && PyErr_Occurred())
        return NULL;
    if (k == w->ref_required || (k == w->ref_optional && v != Py_None))
        goto in_python;  /* _walk_errors.not_a_node: raises */
    if (v == Py_None || (r = fw_is_leaf(v, w->leaf_types, w->array_type)) == 1)
        return as_child(w, v);
    if (r < 0)
        return NULL;
    if (PyList_CheckExact(v) || PyTuple_CheckExact(v)) {  /* _container -> _node_sequence */
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
        PyObject **items = PySequence_Fast_ITEMS(v);
        if ((r = fw_all_nodes(items, n, w->base)) < 0)
            return NULL;
        if (r == 1) {
            PyObject *ids = node_ids(w, items, n);
            if (ids == NULL)
                return NULL;
            PyObject *spec = PyTuple_Pack(2, (PyObject *)Py_TYPE(v), ids);
            Py_DECREF(ids);
            return spec;
        }
    }
    else if (PyDict_CheckExact(v)) {  /* _container -> _node_dict */
        if (PyDict_GET_SIZE(v) == 0)
            return as_child(w, v);
        PyObject *keys, *values;
        if ((r = fw_dict_nodes(v, w->base, &keys, &values)) < 0)
            return NULL;
        if (r == FW_DICT_NODES) {  /* ids in sorted-key order, the treedef of the keys */
            PyObject *ids = node_ids(w, ((PyListObject *)values)->ob_item, PyList_GET_SIZE(values));
            PyObject *treedef = ids != NULL ? PyObject_CallOneArg(w->str_dict_treedef, keys) : NULL;
            PyObject *spec = treedef != NULL ? PyTuple_Pack(2, treedef, ids) : NULL;
            Py_XDECREF(treedef);
            Py_XDECREF(ids);
            Py_DECREF(keys);
            Py_DECREF(values);
            return spec;
        }
    }
in_python:;  /* with the index up to date, and the table brought up to date after */
    if (fw_index_catch_up(&w->table, w->nodes, w->index, &w->in_index) < 0)
        return NULL;
    PyObject *call[5] = {v, name, kind, obj, w->ctx};
    PyObject *spec = PyObject_Vectorcall(w->element, call, 5, NULL);
    if (spec != NULL && fw_table_catch_up(&w->table, w->nodes, w->index, &w->in_index) < 0)
        Py_CLEAR(spec);
    return spec;
}

/* _walk._mixed: the spec of a column that is not uniform, member by member. */
static PyObject *
mixed_column(Walk *w, PyObject *name, PyObject *kind, PyObject **column, PyObject *objs)
{
    Py_ssize_t n = PyList_GET_SIZE(objs);
    PyObject *specs = PyTuple_New(n);
    if (specs == NULL)
        return NULL;
    int all_children = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *spec = element(w, column[i], name, kind, PyList_GET_ITEM(objs, i));
        if (spec == NULL) {
            Py_DECREF(specs);
            return NULL;
        }
        PyTuple_SET_ITEM(specs, i, spec);
        if (all_children) {
            int same = PyObject_RichCompareBool(spec, w->child, Py_EQ);
            if (same < 0) {
                Py_DECREF(specs);
                return NULL;
            }
            all_children = same;
        }
    }
    if (all_children) {  /* canonical form: a column of children is CHILD however found */
        Py_DECREF(specs);
        return Py_NewRef(w->child);
    }
    PyObject *spec = PyTuple_Pack(2, w->mixed, specs);
    Py_DECREF(specs);
    return spec;
}

/* The statics of _walk._group: per static field, the tuple of every member's value. */
static PyObject *
read_statics(PyObject *objs, PyObject *names)
{
    Py_ssize_t n = PyList_GET_SIZE(objs), s = PyTuple_GET_SIZE(names);
    PyObject *statics = PyTuple_New(s);
    if (statics == NULL || s == 0)
        return statics;
    for (Py_ssize_t j = 0; j < s; j++) {
        PyObject *column = PyTuple_New(n);
        if (column == NULL) {
            Py_DECREF(statics);
            return NULL;
        }
        PyTuple_SET_ITEM(statics, j, column);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyObject_GenericGetDict(PyList_GET_ITEM(objs, i), NULL);
        if (d == NULL) {
            Py_DECREF(statics);
            return NULL;
        }
        for (Py_ssize_t j = 0; j < s; j++) {
            PyObject *name = PyTuple_GET_ITEM(names, j);
            PyObject *v = PyDict_Check(d) ? PyDict_GetItemWithError(d, name) : NULL;
            if (v == NULL) {
                if (!PyErr_Occurred())
                    PyErr_SetObject(PyExc_KeyError, name);  /* _walk_errors.missing_field */
                Py_DECREF(d);
                Py_DECREF(statics);
                return NULL;
            }
            PyTuple_SET_ITEM(PyTuple_GET_ITEM(statics, j), i, Py_NewRef(v));
        }
        Py_DECREF(d);
    }
    return statics;
}

/* _walk._group (and _single, a group of one): (cls, members, statics, specs). Fields are read
 * in one row-major pass; each column's spec is made in field order: ids (all nodes), CHILD (all
 * leaves, a field that may hold anything), else member by member (mixed_column). */
static PyObject *
group(Walk *w, PyObject *cls, PyObject *members, PyObject *objs)
{
    PyObject *plan = plan_of(w, cls);
    if (plan == NULL)
        return NULL;
    PyObject *names = PyTuple_GET_ITEM(plan, 0), *refkinds = PyTuple_GET_ITEM(plan, 1);
    PyObject *any_kinds = PyTuple_GET_ITEM(plan, 2), *static_names = PyTuple_GET_ITEM(plan, 5);
    Py_ssize_t n = PyList_GET_SIZE(objs), f = PyTuple_GET_SIZE(names);
    PyObject **columns = PyMem_Calloc(n * f + 1, sizeof(PyObject *));
    int *kinds = PyMem_Calloc(f + 1, sizeof(int));
    PyObject *statics = NULL, *specs = NULL, *result = NULL;
    if (columns == NULL || kinds == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (fw_fill_columns(objs, names, any_kinds, w->leaf_types, w->array_type, w->base, columns,
                        kinds) < 0)
        goto done;
    if ((statics = read_statics(objs, static_names)) == NULL || (specs = PyTuple_New(f)) == NULL)
        goto done;
    for (Py_ssize_t j = 0; j < f; j++) {
        PyObject **column = columns + j * n, *spec;
        if (kinds[j] & UNIFORM_NODES)
            spec = node_ids(w, column, n);
        else if (kinds[j] == UNIFORM_LEAVES)
            spec = fw_steal_onto(w->children, column, n) < 0 ? NULL : Py_NewRef(w->child);
        else
            spec = mixed_column(w, PyTuple_GET_ITEM(names, j), PyTuple_GET_ITEM(refkinds, j),
                                column, objs);
        if (spec == NULL)
            goto done;
        PyTuple_SET_ITEM(specs, j, spec);
    }
    if (PyTuple_GET_SIZE(statics) > 0 && PyObject_Hash(statics) == -1)
        goto done;  /* _walk_errors.check_hashable */
    result = PyTuple_Pack(4, cls, members, statics, specs);
done:
    if (columns != NULL) {
        for (Py_ssize_t k = 0; k < n * f; k++)
            Py_XDECREF(columns[k]);  /* leaf columns were stolen (NULL) */
    }
    PyMem_Free(columns);
    PyMem_Free(kinds);
    Py_XDECREF(statics);
    Py_XDECREF(specs);
    Py_DECREF(plan);
    return result;
}

/* Append group(cls, canonical(ids), objs) to groups; steals ids (a tuple) and objs. */
static int
add_group(Walk *w, PyObject *groups, PyObject *cls, PyObject *ids, PyObject *objs)
{
    PyObject *members = ids != NULL ? fw_canonical_ids(ids) : NULL;
    PyObject *g = members != NULL && objs != NULL ? group(w, cls, members, objs) : NULL;
    int rc = g != NULL ? PyList_Append(groups, g) : -1;
    Py_XDECREF(g);
    Py_XDECREF(members);
    Py_XDECREF(objs);
    return rc;
}

/* One level (nodes[lo:hi]) of _walk._traverse: its groups by class (_walk._by_class: classes
 * in order of first appearance, members in level order), appended to groups. */
static int
walk_level(Walk *w, Py_ssize_t lo, Py_ssize_t hi, PyObject *groups)
{
    PyObject *level = PyList_GetSlice(w->nodes, lo, hi);
    if (level == NULL)
        return -1;
    Py_ssize_t n = hi - lo, i = 1;
    PyObject **items = ((PyListObject *)level)->ob_item;
    PyTypeObject *first = Py_TYPE(items[0]);
    while (i < n && Py_TYPE(items[i]) == first)
        i++;
    if (i == n) {  /* one class: the usual case */
        PyObject *ids = PyTuple_New(n);
        for (Py_ssize_t k = 0; ids != NULL && k < n; k++) {
            PyObject *id = PyLong_FromSsize_t(lo + k);
            if (id == NULL)
                Py_CLEAR(ids);
            else
                PyTuple_SET_ITEM(ids, k, id);
        }
        return add_group(w, groups, (PyObject *)first, ids, level);
    }
    PyObject *by = PyDict_New();  /* class -> [ids, objs], in order of first appearance */
    int rc = by != NULL ? 0 : -1;
    for (i = 0; i < n && rc == 0; i++) {
        PyObject *cls = (PyObject *)Py_TYPE(items[i]);
        PyObject *entry = PyDict_GetItemWithError(by, cls), *id;
        if (entry == NULL) {
            if (PyErr_Occurred() || (entry = PyList_New(2)) == NULL) {
                rc = -1;
                break;
            }
            for (int half = 0; half < 2; half++) {  /* [ids, objs] */
                PyObject *list = PyList_New(0);
                if (list == NULL)
                    rc = -1;
                PyList_SET_ITEM(entry, half, list);
            }
            if (rc < 0) {
                Py_DECREF(entry);
                break;
            }
            rc = PyDict_SetItem(by, cls, entry);
            Py_DECREF(entry);  /* borrowed from `by` from here on */
            if (rc < 0)
                break;
        }
        if ((id = PyLong_FromSsize_t(lo + i)) == NULL)
            rc = -1;
        else if (PyList_Append(PyList_GET_ITEM(entry, 0), id) < 0
                 || PyList_Append(PyList_GET_ITEM(entry, 1), items[i]) < 0)
            rc = -1;
        Py_XDECREF(id);
    }
    Py_ssize_t pos = 0;
    PyObject *cls, *entry;
    while (rc == 0 && PyDict_Next(by, &pos, &cls, &entry)) {
        rc = add_group(w, groups, cls, PyList_AsTuple(PyList_GET_ITEM(entry, 0)),
                       Py_NewRef(PyList_GET_ITEM(entry, 1)));
    }
    Py_XDECREF(by);
    Py_DECREF(level);
    return rc;
}

PyObject *
fastwalk_traverse(PyObject *self, PyObject *args)
{
    PyObject *root, *helpers, *groups = NULL, *result = NULL, *zero = NULL;
    Walk w = {0};
    if (!PyArg_ParseTuple(args, "OO!O!OO!", &root, &PyType_Type, &w.base, &PyFrozenSet_Type,
                          &w.leaf_types, &w.array_type, &PyTuple_Type, &helpers))
        return NULL;
    if (PyTuple_GET_SIZE(helpers) != 6) {
        PyErr_SetString(PyExc_TypeError, "traverse: helpers must be 6 objects (see _walk.py)");
        return NULL;
    }
    w.element = PyTuple_GET_ITEM(helpers, 0);
    w.make_plan = PyTuple_GET_ITEM(helpers, 1);
    w.str_dict_treedef = PyTuple_GET_ITEM(helpers, 2);
    w.mixed = PyTuple_GET_ITEM(helpers, 3);
    w.ref_required = PyLong_AsLong(PyTuple_GET_ITEM(helpers, 4));
    w.ref_optional = PyLong_AsLong(PyTuple_GET_ITEM(helpers, 5));
    if (PyErr_Occurred())
        return NULL;
    w.index = PyDict_New();
    w.nodes = PyList_New(0);
    w.children = PyList_New(0);
    w.child = PyLong_FromLong(-1);
    w.plan_name = PyUnicode_InternFromString("__sg_plan__");
    zero = PyLong_FromLong(0);
    groups = PyList_New(0);
    if (w.index == NULL || w.nodes == NULL || w.children == NULL || w.child == NULL
        || w.plan_name == NULL || zero == NULL || groups == NULL)
        goto done;
    if (fw_table_init(&w.table) < 0)
        goto done;
    if (PyDict_SetItem(w.index, root, zero) < 0 || PyList_Append(w.nodes, root) < 0
        || fw_table_add(&w.table, root, Py_NewRef(zero)) < 0)
        goto done;
    w.in_index = 1;
    w.ctx = PyTuple_Pack(5, root, w.index, w.nodes, w.children, w.base);
    if (w.ctx == NULL)
        goto done;
    Py_ssize_t lo = 0;
    while (lo < PyList_GET_SIZE(w.nodes)) {  /* level by level: the nodes found by the last */
        Py_ssize_t hi = PyList_GET_SIZE(w.nodes);
        if (walk_level(&w, lo, hi, groups) < 0)
            goto done;
        lo = hi;
    }
    PyObject *aux = PyList_AsTuple(groups);
    if (aux != NULL)
        result = PyTuple_Pack(3, w.children, aux, w.nodes);
    Py_XDECREF(aux);
done:
    fw_table_free(&w.table);
    Py_XDECREF(w.ctx);
    Py_XDECREF(w.index);
    Py_XDECREF(w.nodes);
    Py_XDECREF(w.children);
    Py_XDECREF(w.child);
    Py_XDECREF(w.plan_name);
    Py_XDECREF(zero);
    Py_XDECREF(groups);
    return result;
}
