"""jitterlab: how precisely can Linux programs keep time on this machine?"""

__version__ = "0.1.0"
