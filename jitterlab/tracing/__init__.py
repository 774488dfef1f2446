"""Kernel tracing: the recorder (a tracing instance of its own on any target), the trace file
(a trace-cmd .dat built without `trace-cmd record`), reading it into arrays, and tracefs for the
benchmarks that drive the kernel's own tracers (cyclictest's breaktrace, rtla, hwlat).

What the trace means for a late period is analysis/attribution.py; this folder only records and
reads. It may import the model and the target protocol, its capabilities and processes' owner tags.
"""
