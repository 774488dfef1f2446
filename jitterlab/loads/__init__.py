"""Loads: disturbances beside the benchmark. Importing this package registers the built-ins."""

from jitterlab.loads import cpu, idle  # noqa: F401  (registration)
