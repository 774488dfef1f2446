"""Real-time units beside a target's Linux: the unit table of a [[target]], its loaders (emulated,
serial, remoteproc) and the firmware they load; the profiles of the units jitterlab has firmware
for are in programs/unit (PROFILES, listed by `jitterlab list`)."""

from jitterlab.programs.unit import PROFILES

__all__ = ["PROFILES"]
