"""One frozen-backbone pass over a dataset's images (whole images, or crops to their boxes)."""

from hierbench.data.kinds import kind_of
from hierbench.jobs import start_job
from hierbench.paths import dataset_folder
from hierbench.stages.features import build_backbone_pass

job = start_job(snakemake)
build_backbone_pass(
    snakemake.wildcards.backbone_pass,
    snakemake.wildcards.dataset,
    snakemake.input.images,
    dataset_folder(snakemake.config, snakemake.wildcards.dataset),
    snakemake.params.backbone,
    snakemake.output[0],
    job,
    kind=kind_of(snakemake.config, snakemake.wildcards.dataset),
    pool=snakemake.params.pool,
    images_dir=snakemake.params.images_dir,
    device=snakemake.params.device,
)
