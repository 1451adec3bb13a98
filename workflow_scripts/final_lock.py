"""Write a dataset's Final lock: the hashes of everything evaluation may depend on."""

from hierbench.jobs import start_job
from hierbench.stages.evaluation import write_final_lock

job = start_job(snakemake)
groups = ("checkpoints", "records", "audits", "taxonomy", "features", "splits", "sealed")
write_final_lock(
    snakemake.wildcards.dataset,
    snakemake.params.config,
    {group: list(snakemake.input[group]) for group in groups},
    snakemake.output[0],
    job,
)
