"""Build a dataset's splits: dev-side table and manifest, sealed test-side table and manifest."""

from hierbench.data.kinds import kind_of
from hierbench.jobs import start_job
from hierbench.stages.splits import build_splits_and_sealed_test

job = start_job(snakemake)
build_splits_and_sealed_test(
    snakemake.wildcards.dataset,
    snakemake.input.images,
    snakemake.input.taxonomy,
    snakemake.params.config,
    dict(snakemake.output.items()),
    job,
    kind=kind_of(snakemake.config, snakemake.wildcards.dataset),
)
