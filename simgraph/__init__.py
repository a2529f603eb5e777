"""simgraph: Python object graphs that keep their shared references through JAX transforms.

Subclass :class:`ReffableTreeNode`, declare fields by annotation, link objects freely
(shared references, cycles), and pass the root to ``jax.jit``, ``jax.vmap``, ``jax.grad``,
``lax`` control flow or jaxopt: the graph comes back with its sharing intact.
"""

from ._bundle import Bundle as Bundle
from ._errors import (
    GraphError as GraphError,
    GraphFileError as GraphFileError,
    GraphTypeError as GraphTypeError,
    StructureMismatchError as StructureMismatchError,
)
from ._fields import (
    FieldInfo as FieldInfo,
    field as field,
    fields as fields,
    static as static,
    unknown as unknown,
)
from ._node import ReffableTreeNode as ReffableTreeNode
from ._query import (
    LeafInfo as LeafInfo,
    flatten_nodes as flatten_nodes,
    leaves_with_owners as leaves_with_owners,
    nodes as nodes,
)


from ._compare import structure_difference as structure_difference
from ._io import load as load, save as save
from ._split import (
    GraphStructure as GraphStructure,
    is_unknown as is_unknown,
    leaf_filter as leaf_filter,
    merge as merge,
    split as split,
)
from ._structure import (
    FieldStructure as FieldStructure,
    GroupStructure as GroupStructure,
    Structure as Structure,
    structure as structure,
)
from ._stack import stack as stack, unstack as unstack, update as update
__version__ = "0.1.0"
