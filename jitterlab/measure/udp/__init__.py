"""What the UDP benchmarks (udp-echo, pps) share beside their registrations: where their two ends
meet when one is the controller (peer.py), and running their programs on a target or on the
controller (programs.py)."""
