"""Builds the optional C accelerator of the graph walk; everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("simgraph._fastwalk",
                             ["simgraph/_fastwalk.c", "simgraph/_fastrebuild.c",
                              "simgraph/_fasttraverse.c", "simgraph/_fastindex.c"],
                             depends=["simgraph/_fastwalk.h"], optional=True)])
