"""Read NABirds' tree into the generic Leaf / Parent / Supergroup taxonomy table."""

from hierbench.jobs import start_job
from hierbench.stages.taxonomy import build_nabirds_taxonomy

job = start_job(snakemake)
build_nabirds_taxonomy(
    snakemake.input.classes,
    snakemake.input.hierarchy,
    snakemake.output[0],
    job,
    dataset=snakemake.wildcards.dataset,
)
