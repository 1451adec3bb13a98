"""Score one bundle of final cells, the frozen-feature baseline or the PCA baseline on the
sealed test draws (whichever the rule's inputs name)."""

from hierbench.jobs import start_job
from hierbench.metrics.sealed_scoring import sealed_cells
from hierbench.stages.evaluation import (
    evaluate_cells_on_sealed_test,
    evaluate_frozen_on_sealed_test,
    evaluate_pca_on_sealed_test,
)

job = start_job(snakemake)
common = {"config": snakemake.params.config, "job": job, "access_log": snakemake.params.access_log}
outputs = dict(snakemake.output.items())
sealed = (snakemake.input.lock, snakemake.input.sealed_features, snakemake.input.sealed_splits)
cells = sealed_cells(dict(snakemake.input.items()), outputs)
# What is scored is what the rule's inputs name: trained cells, a PCA projection, or neither.
if cells:
    variant = getattr(snakemake.params, "variant", None)
    evaluate_cells_on_sealed_test(snakemake.wildcards.dataset, cells, **common, variant=variant)
elif hasattr(snakemake.input, "projection"):
    projection = snakemake.input.projection
    evaluate_pca_on_sealed_test(
        snakemake.wildcards.dataset, projection, *sealed, outputs=outputs, **common
    )
else:
    evaluate_frozen_on_sealed_test(snakemake.wildcards.dataset, *sealed, outputs=outputs, **common)
