/* Shared declarations of the simgraph._fastwalk accelerator's C files. */
#ifndef SIMGRAPH_FASTWALK_H
#define SIMGRAPH_FASTWALK_H

#include <Python.h>

/* unflatten(aux, children, count, swap_refs): see _fastrebuild.c. */
PyObject *fastwalk_unflatten(PyObject *self, PyObject *args);

/* traverse(root, base, leaf_types, array_type, helpers): see _fasttraverse.c. */
PyObject *fastwalk_traverse(PyObject *self, PyObject *args);

/* The walk's index of nodes (node -> id) in _fasttraverse.c: see _fastindex.c. */
typedef struct {
    PyObject **keys;  /* the nodes (borrowed: the walk's `nodes` list holds them), or NULL */
    PyObject **ids;   /* their ids (new references) */
    size_t mask;      /* capacity - 1: a power of two, the table at most half full */
    Py_ssize_t used;  /* the table holds nodes[0:used] */
} FwTable;

int fw_table_init(FwTable *t);
void fw_table_free(FwTable *t);
/* The id of key (borrowed), or NULL (no exception) if key is not in the table. */
PyObject *fw_table_get(FwTable *t, PyObject *key);
/* Add key -> id, stealing id; key must not be in the table. 0, or -1 with an exception. */
int fw_table_add(FwTable *t, PyObject *key, PyObject *id);
/* Copy nodes[*in_index:t->used] into the dict index (before calling _walk._element)... */
int fw_index_catch_up(FwTable *t, PyObject *nodes, PyObject *index, Py_ssize_t *in_index);
/* ...and the nodes _element appended to nodes (and index) into the table (after). */
int fw_table_catch_up(FwTable *t, PyObject *nodes, PyObject *index, Py_ssize_t *in_index);

/* Column reads of _fastwalk.c, shared with _fasttraverse.c. */
enum { UNIFORM_LEAVES = 1, UNIFORM_NODES = 2 };

/* 1 if value's type is a pytree leaf type (_walk._is_leaf_type), 0 if not, -1 on error. */
int fw_is_leaf(PyObject *value, PyObject *leaf_types, PyObject *array_type);
/* 1 if every item is a node (its type a subclass of base), 0 if not, -1 on error. */
int fw_all_nodes(PyObject **items, Py_ssize_t n, PyObject *base);
/* The ids of n nodes in canonical form (_walk.id_sequence), new nodes numbered in order. */
PyObject *fw_node_ids(PyObject **items, Py_ssize_t n, PyObject *index, PyObject *nodes);
/* The canonical form of a tuple of ids (steals it): a range or the tuple. */
PyObject *fw_canonical_ids(PyObject *ids);
/* A dict's nodes in JAX's order: FW_DICT_NODES with *sorted_keys (a new tuple) and *values (a
 * new list) when its keys are all str or all int (exact types) and its values all nodes;
 * FW_DICT_OTHER_KEYS, FW_DICT_NOT_NODES (nothing returned), or -1 with an exception. */
enum { FW_DICT_OTHER_KEYS = 0, FW_DICT_NOT_NODES = 1, FW_DICT_NODES = 2 };
int fw_dict_nodes(PyObject *d, PyObject *base, PyObject **sorted_keys, PyObject **values);
/* Read the fields `names` of every object of the list `objs` into columns[j * n + i] (new
 * references) and each column's uniform kinds (UNIFORM_* bits) into kinds[j]. */
int fw_fill_columns(PyObject *objs, PyObject *names, PyObject *any_kinds, PyObject *leaf_types,
                    PyObject *array_type, PyObject *base, PyObject **columns, int *kinds);
/* Append the n references at items to the list children, stealing them. */
int fw_steal_onto(PyObject *children, PyObject **items, Py_ssize_t n);

#endif
