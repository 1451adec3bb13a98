"""Draw a dataset's retrieval galleries and embedding views from the sealed test, under the lock."""

from hierbench.jobs import start_job
from hierbench.paths import dataset_folder
from hierbench.stages.pictures import PictureInputs, draw_pictures_from_sealed_test

job = start_job(snakemake)
draw_pictures_from_sealed_test(
    snakemake.wildcards.dataset,
    PictureInputs.of(dict(snakemake.input.items())),
    dataset_folder(snakemake.config, snakemake.wildcards.dataset),
    snakemake.params.images_dir,
    snakemake.params.config,
    {name: list(snakemake.output[name]) for name in ("galleries", "embeddings")},
    job,
    access_log=snakemake.params.access_log,
    levels=tuple(snakemake.params.levels),
)
