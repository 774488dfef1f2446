"""Wrapped external tools: running one on the target to completion (run.py), reading what they print
(output.py), and those both a load and a benchmark drive (iperf3)."""
