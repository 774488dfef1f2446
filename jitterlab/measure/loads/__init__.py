"""Loads: disturbances beside the benchmark. Importing this package registers the built-ins."""

from jitterlab.measure.loads import cpu, disk, idle, memory, net, sched  # noqa: F401  (registration)
