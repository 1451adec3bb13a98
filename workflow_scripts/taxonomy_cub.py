"""Match CUB's classes to the configured checklist and write the taxonomy and match report."""

from hierbench.jobs import start_job
from hierbench.stages.taxonomy import build_cub_taxonomy

job = start_job(snakemake)
build_cub_taxonomy(
    snakemake.input.classes,
    snakemake.input.aliases,
    snakemake.output.table,
    snakemake.output.report,
    job,
    checklist=snakemake.params.checklist,
    checklist_columns=snakemake.params.checklist_columns,
    alias_schema=snakemake.input.alias_schema,
    fuzzy_threshold=snakemake.params.fuzzy_threshold,
    fuzzy_margin=snakemake.params.fuzzy_margin,
    dataset=snakemake.wildcards.dataset,
)
