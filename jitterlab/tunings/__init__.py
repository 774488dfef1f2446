"""Tunings: changes made to a target, or to how the program starts, for one cell's runs, and put back
after (base.py). Importing this package registers the built-ins in TUNINGS."""

from jitterlab.tunings import (  # noqa: F401  (registration)
    cpu_dma_latency,
    governor,
    irq_away,
    isolated,
    none,
    program,
    rt_unthrottled,
)
