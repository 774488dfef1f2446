"""The kernel events jitterlab records: what ran on a CPU and what interrupted it, enough to tell why
a wake-up was late and cheap to record."""

from __future__ import annotations

EVENTS = (
    "sched:sched_switch",
    "sched:sched_wakeup",
    "sched:sched_waking",
    "sched:sched_migrate_task",
    "irq:irq_handler_entry",
    "irq:irq_handler_exit",
    "irq:softirq_entry",
    "irq:softirq_exit",
    "timer:hrtimer_expire_entry",
    "timer:hrtimer_expire_exit",
    "timer:hrtimer_start",
)
GPIO_EVENT = "gpio:gpio_value"  # where the pin is a kernel GPIO


def systems(events: tuple[str, ...]) -> tuple[str, ...]:
    """The event systems of `events` ("sched", "irq", ...), in order, each once."""
    return tuple(dict.fromkeys(e.split(":", 1)[0] for e in events))
