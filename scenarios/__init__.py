"""Real physics networks (circuits, water, power flow, ...) built as simgraph object graphs.

Each domain sub-package has a reader for its community's file format (SPICE netlists,
EPANET ``.inp``, MATPOWER ``.m``); malformed input raises :class:`scenarios._errors.FormatError`
(re-exported by every domain package) naming the file and line.
"""
