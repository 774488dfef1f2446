"""The report's figures (matplotlib, Agg), built from stored data and returned as Figure objects:
base.py what they share, one module per section (squarewave, standard) and the comparison's."""
