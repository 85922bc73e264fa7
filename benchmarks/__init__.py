"""Benchmark scripts for thors_stream (not part of the installed package)."""
