"""``System``: a graph of equations lowered to a flat system ``F(x, params) = 0``.

``x`` is every ``sg.unknown()`` leaf of every node (canonical node order, then field order);
``params`` every other data leaf, stacked per kind: ``{kind label: {column label: array}}``.
A ``System`` is a pytree with children ``(x0, params)``; everything else (kinds, groups, index
arrays, the residual layout) is static aux data, so passing it to ``jax.jit`` is cheap.
"""

from __future__ import annotations

import gc
import warnings
from collections import OrderedDict
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

import simgraph as sg

from . import (_analyse, _equations, _gather, _grouped, _kind_count, _kinds, _objectwise,
               _pattern)
from ._canonical import canonical, hooks_text
from ._element_jacobian import ElementJacobian
from ._model_errors import LoweringError, ModelError, SingularComponentError
from .._concrete import is_traced
from ..linear._sparsity import SparsityPattern
from ._system_paths import NodeList, Paths

EVALUATIONS = ("auto", "grouped", "objectwise")


class _Structure:
    """Static part of a System; equal for graphs of equal structure (jit cache key). It holds
    no user object (the graph a System was built from lives on the System, not here), so a
    jit cache entry keyed by it keeps no graph alive."""

    def __init__(self, an, evaluator, mode: str, key: tuple):
        self.an, self.evaluator, self.mode, self.eq = an, evaluator, mode, evaluator.eq
        self.key, self.hash = key, hash(key)
        self.pattern: tuple | None = None
        self.pattern_object = None  # `System.sparsity_pattern`, built on first use
        self.checked: set = set()  # the `square` settings `validate` passed for
        self.paths = Paths(self)
        self.element = None  # `element_jacobian`, built on first use
        self.prepared: OrderedDict = OrderedDict()  # the solve entry points' per-method setup
        self.has_step_limit = any(k.method("step_limit") is not None for k in an.kinds)
        self.refresh_hooks()

    def persistent_key(self) -> tuple:
        """What the lowering depends on, as values a digest reads alike in any process (class
        names, static values in a canonical text, reference and kind index arrays): `key`
        without object identities, for a sweep's results directory to refuse another model."""
        kinds = [f"{k.cls.__module__}.{k.cls.__qualname__} {canonical(k.statics)} "
                 f"{k.key[2:]!r}" for k in self.an.kinds]
        return ("\n".join([self.mode] + kinds), self.an.kind_of,
                tuple(k.slots for k in self.an.kinds))

    def code_key(self) -> str:
        """The code of the element classes' hook functions as process-independent text
        (`hooks_text`): a results directory refuses a model whose methods were edited."""
        return "\n".join(hooks_text(k.cls) for k in self.an.kinds)

    def refresh_hooks(self) -> None:
        """Read the classes' namespaces anew (their hook functions are the key's)."""
        self._hook_probe = _kinds.HookProbe(k.cls for k in self.an.kinds)

    def hooks_current(self) -> bool:
        """Whether the classes still have the hook functions this structure was lowered for
        (the key holds them; a reassigned ``Cls.residual`` needs a new lowering)."""
        return self._hook_probe.unchanged()

    def element_jacobian(self, pattern):
        """dF/dx assembled element by element (`ElementJacobian`) when ``pattern`` is this
        grouped structure's own sparsity pattern, else None."""
        if self.mode != "grouped" or self.pattern_object is None or pattern != self.pattern_object:
            return None
        if self.element is None:
            self.element = ElementJacobian(self.an, self.evaluator, pattern)
        return self.element

    def __eq__(self, other) -> bool:
        return self is other or (isinstance(other, _Structure) and self.hash == other.hash
                                 and self.key == other.key)

    def __hash__(self) -> int:
        return self.hash


class System:
    """``F(x, params) = 0`` lowered from a graph; build with :meth:`System.build`."""

    def __init__(self, x0, params, structure: _Structure, nodes: Optional[list] = None):
        self._x0, self.params, self._s = x0, params, structure
        self._built_nodes = nodes  # the graph's node objects as built; not pytree data
        self._nodes_list: list | None = None

    @classmethod
    def build(cls, root: Any, *, evaluation: str = "auto", square: bool = True,
              validate: bool = True) -> "System":
        """Lower the graph of ``root``.

        ``evaluation``: ``"grouped"`` (vmapped per group of alike elements), ``"objectwise"``
        (each node's methods called in turn; the reference semantics) or ``"auto"`` (grouped
        when possible). ``square``: require as many equations as unknowns. ``validate``: check
        equation counts and structural singularity now, naming the nodes involved.

        The analysis, lowering and checks are cached by the graph's structure (its treedef,
        as `sg.flatten_nodes` keys it, and the classes' hook functions; the last
        `STRUCTURE_CACHE_SIZE` structures): an equal structure skips them and only
        gathers the values (x0, params) from ``root``'s leaves.
        """
        if evaluation not in EVALUATIONS:
            raise ValueError(f"evaluation must be one of {EVALUATIONS}, got {evaluation!r}")
        leaves, key, nodes = sg.flatten_nodes(root)
        plan_key = (key, evaluation, bool(jax.config.jax_enable_x64))
        plan = _PLANS.get(plan_key)
        if plan is not None and not plan.structure.hooks_current():
            plan = None  # a class's method was reassigned since: lower again
        values = None if plan is None else plan.gather(leaves)
        if values is None:
            plan = _plan(sg.structure(root), leaves, evaluation, plan_key)
            values = plan.gather(leaves)
        structure = plan.structure
        system = cls(*values, structure, nodes)
        if validate and square not in structure.checked:
            system.validate(square=square)
            structure.checked.add(square)
        _keep(_STRUCTURES, structure.key, structure)  # only once the checks passed
        _keep(_PLANS, plan.key, plan)  # the stored key: refreshed by identity, not by comparing treedefs
        return system

    # -- the flat system -------------------------------------------------------------------
    @property
    def x0(self) -> jax.Array:
        """The start: the graph's unknowns, in the order of `unknown_paths`."""
        # Gathered on the host, it stays there until read here: a solve passes ``_x0`` to its
        # compiled program with the other inputs (a separate copy costs ~10 us a call).
        if not isinstance(self._x0, np.ndarray):
            return self._x0
        x0 = jax.device_put(self._x0)
        if not is_traced(x0):  # read inside a transform (a System closed over): not kept
            self._x0 = x0
        return x0

    @property
    def n(self) -> int:
        """Number of unknowns (length of x)."""
        return self._s.an.n

    @property
    def m(self) -> int:
        """Number of equations (length of F)."""
        return self._s.eq.m

    @property
    def evaluation(self) -> str:
        """``"grouped"`` or ``"objectwise"``: how ``residual`` evaluates the model."""
        return self._s.mode

    @property
    def structure(self) -> _Structure:
        """The static part (hashable, equal for equal graphs): a key for caching compiled solves."""
        return self._s

    @property
    def has_step_limit(self) -> bool:
        """Whether any node class defines ``step_limit`` (else :meth:`step_limit` returns None)."""
        return self._s.has_step_limit

    def residual(self, x, params) -> jax.Array:
        """``F(x, params)``, shape (m,). Pure; jit/vmap/grad-able in both arguments."""
        return self._s.evaluator.residual(x, params)

    @property
    def residual_function(self):
        """``residual`` as a hashable callable (equal for equal structures, so compiled
        programs are shared), which sparse linear solvers can ask for an element-by-element
        Jacobian."""
        from ._residual import Residual

        return Residual(self._s)

    def step_limit(self, x, dx, params):
        """Smallest fraction in (0, 1] of the step ``dx`` the elements accept; None if no class
        defines ``step_limit``."""
        return self._s.evaluator.step_limit(x, dx, params)

    def sparsity(self) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
        """``(rows, cols, (m, n))``: structural nonzeros of dF/dx (a superset; never misses one)."""
        s = self._s
        if s.pattern is None:
            if s.mode == "grouped":
                s.pattern = _pattern.grouped(s.an, s.evaluator)
            else:
                s.pattern = s.evaluator.pattern(_abstract(self.params))
        rows, cols = s.pattern
        return rows, cols, (self.m, self.n)

    def sparsity_pattern(self) -> SparsityPattern:
        """`sparsity` as a `SparsityPattern` (hashable; built once per structure: sorting
        10^5 unknowns' entries takes ~0.1 s, too much to repeat at every solve)."""
        s = self._s
        if s.pattern_object is None:
            s.pattern_object = SparsityPattern(*self.sparsity())
        return s.pattern_object

    def validate(self, square: bool = True, numeric: bool = False, x=None) -> None:
        """Raise a ``ModelError`` if the counts differ (when ``square``) or the system is
        structurally singular, naming the kinds and nodes involved. ``numeric=True`` also runs
        :meth:`diagnose` at ``x`` (default x0) and raises ``SingularComponentError``."""
        _equations.check_counts(self._s.an, self._s.eq, square)
        rows, cols, _ = self.sparsity()
        _pattern.check_structure(self._s.an, self._s.eq, rows, cols)
        if numeric:
            message = self.diagnose(x)
            if message is not None:
                raise SingularComponentError(message)

    def diagnose(self, x=None, params=None) -> str | None:
        """Name the parts whose Jacobian is numerically singular at ``x`` (e.g. an island with
        no reference, which structural checks cannot see); None if none is found. Costs one
        compile: meant for explaining a failed solve, not for every build."""
        from . import _diagnose

        x = self.x0 if x is None else x
        return _diagnose.diagnose(self, x, self.params if params is None else params)

    # -- back to the graph ----------------------------------------------------------------
    def to_graph(self, x, params=None) -> Any:
        """A new graph (sharing intact) with unknowns from ``x`` and data from ``params``.

        Leading batch axes of ``x`` (shape (..., n)) give a batched graph. Concrete values come
        back as numpy arrays (fast on the host); traced ones as slices of the traced arrays.
        """
        params = self.params if params is None else params
        if jnp.ndim(x) == 0 or jnp.shape(x)[-1] != self.n:
            raise ValueError(f"x has shape {jnp.shape(x)}, but this System has {self.n} "
                             f"unknowns: give shape ({self.n},), or (..., {self.n}) for a batch "
                             "(the order of System.x0).")
        batch = tuple(jnp.shape(x)[:-1])
        cols = _objectwise.columns(self._s.an, x, params, batch)
        enabled = gc.isenabled()
        gc.disable()  # thousands of new nodes: a collection every 700 (as sg's unflatten)
        try:
            return _objectwise.rebuild(self._s.an, cols)[0]
        finally:
            if enabled:
                gc.enable()

    def unknown_paths(self) -> list[str]:
        """Key path (with index for array fields) of every entry of x: ``.nodes[3].v``."""
        return self._s.paths.unknowns()

    def residual_labels(self) -> list[str]:
        """Label of every entry of F: the node's key path + ``.residual`` (+ index)."""
        return self._s.paths.residuals()

    def locate(self, where) -> slice:
        """Slice of x holding the unknowns of a node (object or key path) or of one leaf path."""
        return self._s.paths.locate(where, False, self._nodes)

    def locate_equations(self, where) -> slice:
        """Slice of F holding the equations of a node (object or key path)."""
        return self._s.paths.locate(where, True, self._nodes)

    def set_params(self, params: dict, updates: dict) -> dict:
        """``params`` with leaves replaced: ``{key path or simgraph filter: value}``.

        A value of the leaf's shape goes to every selected leaf; a value with one more leading
        axis of the number of selected leaves gives one value per leaf (canonical order).
        Values may be tracers: to sweep a batch, call this inside ``jax.vmap``. Values are
        cast to the leaves' dtypes, refused where that changes them as in ``solve_batch``.
        """
        return self._s.paths.set_params(params, updates, self._nodes)

    def _nodes(self) -> list | None:
        """The node objects of the graph this System was built from, in node order (None for
        a System that came out of a transform: it holds copies)."""
        if self._built_nodes is not None and self._nodes_list is None:
            self._nodes_list = NodeList(self._built_nodes)
        return self._nodes_list

    def __repr__(self) -> str:
        kinds = ", ".join(f"{k.label} x{k.count}" for k in self._s.an.kinds)
        return f"System(n={self.n}, m={self.m}, evaluation={self.evaluation!r}, kinds: {kinds})"


#: How many structures `System.build` keeps (least recently used dropped first).
STRUCTURE_CACHE_SIZE = 16
_STRUCTURES: OrderedDict = OrderedDict()  # lowering key -> _Structure
_PLANS: OrderedDict = OrderedDict()  # (sg.flatten_nodes key, evaluation, x64) -> _Plan


class _Plan(NamedTuple):
    """How graphs of one treedef lower: their structure, where each kind's data sits among
    the flat leaves (and, for scalar columns, the `ScalarLayout`), and the cache key."""

    structure: _Structure
    positions: list
    scalar: Optional[_gather.ScalarLayout]
    key: tuple

    def gather(self, leaves: list):
        """``(x0, params)`` of a graph with these flat leaves, or None (see `_gather.gather`)."""
        return _gather.gather(self.structure.an, self.positions, leaves, self.scalar)


def _plan(st, leaves: list, evaluation: str, plan_key: tuple) -> _Plan:
    """Analyse a graph structure and find (or make) its lowering."""
    an, positions = _analyse.analyse(st, leaves)
    _kinds.check_unknown_dtypes(an)
    key = _cache_key(an, evaluation)
    structure = _STRUCTURES.get(key)
    if structure is None:
        evaluator, mode = _evaluator(an, evaluation)
        _check_residual_dtype(an, evaluator.eq)
        structure = _Structure(an, evaluator, mode, key)
    elif not structure.hooks_current():  # a name on a base class changed, not the functions
        structure.refresh_hooks()  # (an equal key means equal hook functions)
    return _Plan(structure, positions, _gather.ScalarLayout.of(an, positions), plan_key)


def _check_residual_dtype(an, eq) -> None:
    """The residual must compute in the unknowns' float type: Newton's iterates keep the
    type of x, and a residual promoted past it (float32 unknowns, float64 parameters) would
    otherwise fail deep inside the solver's loop."""
    x_dtype, f_dtype = np.dtype(an.x_dtype), np.dtype(eq.dtype)
    if f_dtype == x_dtype or not np.issubdtype(x_dtype, np.floating):
        return
    unknowns = [f"{kind.cls.__name__}.{col.label}" for kind in an.kinds for col in kind.columns
                if col.unknown]
    if not np.issubdtype(f_dtype, np.floating):  # integer, bool or complex residuals
        fix = ("return each complex equation's real and imaginary parts as two equations"
               if np.issubdtype(f_dtype, np.complexfloating)
               else f"return floats from residual() (e.g. .astype({str(x_dtype)!r}))")
        raise ModelError(
            f"the residual computes in {f_dtype}, but residuals must be real floats of the "
            f"unknowns' type ({x_dtype}; {', '.join(unknowns[:4])}): {fix}.")
    raise ModelError(
        f"the residual computes in {f_dtype} but the unknowns ({', '.join(unknowns[:4])}"
        f"{', ...' if len(unknowns) > 4 else ''}) are {x_dtype}: Newton's iterates keep the "
        f"unknowns' type. Give the unknowns and the parameters one float type: the unknowns' "
        f"start values as {f_dtype}, or the parameters as {x_dtype}.")


def _keep(cache: OrderedDict, key, value) -> None:
    """Insert or refresh ``key`` (most recently used last), dropping the oldest beyond the size."""
    if cache and next(reversed(cache)) is key:
        return  # the most recent already: the stored key object belongs to its value
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > STRUCTURE_CACHE_SIZE:
        cache.popitem(last=False)


def _cache_key(an, evaluation: str) -> tuple:
    """What the lowering depends on: the kinds (class, statics, field structure, leaf shapes
    and dtypes), which node is of which kind, the references, and the dtype setting. Never
    values: parameters and starts are always gathered from the graph being built. The
    classes' hook functions are in it, so a reassigned method gets its own lowering and
    compiled programs (jitted solves are keyed by the structure)."""
    classes = tuple(dict.fromkeys(k.cls for k in an.kinds))
    return (evaluation, bool(jax.config.jax_enable_x64), tuple(k.key for k in an.kinds),
            an.kind_of.tobytes(), tuple(k.slots.tobytes() for k in an.kinds),
            _kinds.hooks(classes))


def _evaluator(an, evaluation: str):
    _kind_count.warn_if_kinds_multiply(an.kinds)
    if evaluation != "objectwise":
        try:
            groups = _grouped.plan(an)
            return _grouped.Grouped(an, groups, _grouped.equations(an, groups)), "grouped"
        except LoweringError as err:
            if evaluation == "grouped":
                raise
            warnings.warn(f"grouped evaluation is impossible ({err}); evaluating the {an.n_nodes} "
                          "nodes one by one, so compile time grows with the graph.", stacklevel=3)
    return _objectwise.Objectwise(an, _kinds.abstract_params(an)), "objectwise"


def _abstract(tree):
    return jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(jnp.shape(a), jnp.result_type(a)), tree)


_KEYS = (jax.tree_util.GetAttrKey("x0"), jax.tree_util.GetAttrKey("params"))
jax.tree_util.register_pytree_with_keys(
    System,
    lambda s: (tuple(zip(_KEYS, (s.x0, s.params))), s._s),
    lambda structure, children: System(children[0], children[1], structure),
    flatten_func=lambda s: ((s.x0, s.params), s._s),
)
