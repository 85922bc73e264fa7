"""Build the optional compiled backend; everything else is in pyproject.toml.

``optional=True``: when no C compiler is available the build skips the extension
and thors_stream falls back to its pure-Python/numpy backend (same answers).

The extension ``thors_stream._ctree`` is built from the C units under
``thors_stream/_ctree_src/`` (one concern each) and their one internal header,
``ctree.h`` (MANIFEST.in ships them all in the sdist).
"""

from setuptools import Extension, setup

SRC = "thors_stream/_ctree_src"
UNITS = ["tree.c", "runs.c", "sort.c", "batch.c", "keyed.c", "wbatch.c", "reads.c", "ring.c", "selector.c", "module.c"]

setup(
    ext_modules=[
        Extension(
            "thors_stream._ctree",
            [f"{SRC}/{unit}" for unit in UNITS],
            depends=[f"{SRC}/ctree.h"],
            optional=True,
            extra_compile_args=["-O3"],
        ),
    ]
)
