"""Tools over whole runs: comparisons, run and table diffs, job costs, the rebuild map."""
