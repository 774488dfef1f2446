"""The parts of the `command` benchmark (measure/benchmarks/command.py) beside its registration: the
files a cell ships into its run's working directory (files.py), and what a run keeps of its
program's output and reads its metrics from (output.py)."""
