"""Cells: the spec that defines a training run, its checkpoint, and the companion cells."""
