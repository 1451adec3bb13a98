"""Train one curvature-control cell: H_R at the (c, r) its point names."""

from hierbench.controls.curvature import cell_label
from hierbench.jobs import start_job
from hierbench.protocol import POINCARE, REGRESSION
from hierbench.stages.training import train_final_cell

job = start_job(snakemake)
train_final_cell(
    snakemake.wildcards.dataset,
    POINCARE,
    REGRESSION,
    int(snakemake.wildcards.seed),
    snakemake.input.features,
    snakemake.input.splits,
    snakemake.params.config,
    dict(snakemake.output.items()),
    job,
    hyperbolic=snakemake.params.hyperbolic,
    label=cell_label(snakemake.wildcards.point, snakemake.wildcards.seed),
)
