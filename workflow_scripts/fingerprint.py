"""Take one part of a dataset's content identity: its layout's tables or the images they list."""

from hierbench.data.kinds import kind_of
from hierbench.jobs import start_job
from hierbench.paths import dataset_folder
from hierbench.stages.images import build_fingerprint

job = start_job(snakemake)
build_fingerprint(
    snakemake.wildcards.dataset,
    dataset_folder(snakemake.config, snakemake.wildcards.dataset),
    snakemake.output[0],
    job,
    kind=kind_of(snakemake.config, snakemake.wildcards.dataset),
    part=snakemake.params.part,
    cache_file=snakemake.params.cache,
)
