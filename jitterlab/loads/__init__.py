"""Loads: disturbances beside the benchmark. Importing this package registers the built-ins."""

from jitterlab.loads import cpu, disk, idle, memory, net, sched  # noqa: F401  (registration)
