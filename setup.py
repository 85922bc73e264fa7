"""Build the optional compiled backend; everything else is in pyproject.toml.

``optional=True``: when no C compiler is available the build skips the extension
and thors_stream falls back to its pure-Python/numpy backend (same answers).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("thors_stream._ctree", ["thors_stream/_ctree.c"], optional=True, extra_compile_args=["-O3"]),
    ]
)
