"""Write a dataset's Final lock: the hashes of everything evaluation may depend on."""

from hierbench.jobs import start_job
from hierbench.provenance.seal import SealPaths
from hierbench.stages.lock import write_final_lock

job = start_job(snakemake)
groups = ("checkpoints", "records", "audits", "taxonomy", "features", "splits", "sealed")
write_final_lock(
    snakemake.wildcards.dataset,
    snakemake.params.config,
    {group: list(snakemake.input[group]) for group in groups},
    {"lock": snakemake.output.lock, "history": snakemake.output.history},
    job,
    seal=SealPaths.for_lock(snakemake.output.lock, snakemake.params.access_log),
    on_change=snakemake.config["seal"]["on_change"],
)
