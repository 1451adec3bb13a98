"""Score a final cell, the frozen-feature baseline or the PCA baseline on the sealed test draws
(whichever the rule's inputs name)."""

from hierbench.jobs import start_job
from hierbench.metrics.sealed_scoring import SealedCell
from hierbench.stages.evaluation import (
    evaluate_cell_on_sealed_test,
    evaluate_frozen_on_sealed_test,
    evaluate_pca_on_sealed_test,
)

job = start_job(snakemake)
common = {
    "config": snakemake.params.config,
    "outputs": dict(snakemake.output.items()),
    "job": job,
    "access_log": snakemake.params.access_log,
}
sealed = (snakemake.input.lock, snakemake.input.sealed_features, snakemake.input.sealed_splits)
# What is scored is what the rule's inputs name: a trained cell, a PCA projection, or neither.
if hasattr(snakemake.input, "projection"):
    evaluate_pca_on_sealed_test(
        snakemake.wildcards.dataset, snakemake.input.projection, *sealed, **common
    )
elif not hasattr(snakemake.input, "record"):
    evaluate_frozen_on_sealed_test(snakemake.wildcards.dataset, *sealed, **common)
else:
    cell = SealedCell(snakemake.input.record, snakemake.input.model, *sealed)
    variant = getattr(snakemake.params, "variant", None)
    evaluate_cell_on_sealed_test(snakemake.wildcards.dataset, cell, **common, variant=variant)
