"""Training: the trainer, publishing a cell, temperature tuning and the fairness audit."""
