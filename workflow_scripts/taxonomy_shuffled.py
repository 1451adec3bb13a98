"""Write the structure-preserving shuffled control taxonomy."""

from hierbench.jobs import start_job
from hierbench.stages.taxonomy import build_shuffled_taxonomy

job = start_job(snakemake)
build_shuffled_taxonomy(
    snakemake.input[0],
    snakemake.output.table,
    snakemake.output.report,
    job,
    dataset=snakemake.wildcards.dataset,
    seed=snakemake.params.seed,
    fixed_points=snakemake.params.fixed_points,
    levels=tuple(snakemake.params.levels),
)
