"""Select each geometry's temperature from the tuning scores."""

from hierbench.jobs import start_job
from hierbench.stages.tuning import write_selection

job = start_job(snakemake)
write_selection(list(snakemake.input), snakemake.output[0], job)
