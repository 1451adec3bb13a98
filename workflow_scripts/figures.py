"""Draw a dataset's figures: effects, mAP by level, hyperbolic prototype norms."""

from hierbench.jobs import start_job
from hierbench.protocol import FIGURES
from hierbench.stages.figures import build_figures

job = start_job(snakemake)
build_figures(
    snakemake.wildcards.dataset,
    snakemake.input.arms,
    snakemake.input.effects,
    snakemake.input.intervals,
    list(snakemake.input.records),
    list(snakemake.input.models),
    snakemake.input.features,
    {name: list(snakemake.output[name]) for name in FIGURES},
    snakemake.output.verdicts,
    job,
    levels=tuple(snakemake.params.levels),
)
