"""Check a shipped metadata file and stage it into results/ with provenance."""

from hierbench.data.inputs import stage_id_name_file
from hierbench.jobs import start_job

job = start_job(snakemake)
stage_id_name_file(snakemake.input[0], snakemake.output[0], job)
