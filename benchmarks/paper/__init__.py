"""Replication of the THORS paper's case studies (section 4): ``python -m benchmarks.paper``."""
