"""Wrappers of external tools that both a load and a benchmark drive (iperf3)."""
