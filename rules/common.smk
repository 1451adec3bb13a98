# Path wiring and wildcard constraints only; every decision is a tested library function.

from hierbench.codehash import code_hash
from hierbench.config import enabled_datasets
from hierbench.taxonomy import checklist_fingerprint

DATASETS = enabled_datasets(config)
RESULTS = "results"
LOGS = "logs"

# Shipped metadata files each dataset stages, by the config key that names them.
STAGED_INPUTS = {"cub": ["classes"], "nabirds": ["classes", "hierarchy"]}


def code(*modules):
    """Source hash of the library modules used by a rule; as a params value, edits rerun it."""
    return code_hash(modules)


def log_for(output_path):
    """The log file of an output: the same path under logs/ instead of results/, plus .log."""
    return output_path.replace(f"{RESULTS}/", f"{LOGS}/", 1) + ".log"


def shipped_input(wildcards):
    """The shipped metadata file a dataset's config names under the key `name`."""
    return config["datasets"][wildcards.dataset][wildcards.name]


def final_outputs():
    """The final targets for the enabled datasets."""
    targets = [f"{RESULTS}/{dataset}/splits/manifest.parquet" for dataset in DATASETS]
    if "nabirds" in DATASETS:
        targets.append(f"{RESULTS}/nabirds/taxonomy/shuffled.parquet")
    return targets


def benchmark_for(output_path):
    """The Snakemake benchmark file of an output, beside its log."""
    return output_path.replace(f"{RESULTS}/", f"{LOGS}/", 1) + ".benchmark.tsv"


def cub_taxonomy_config():
    """The CUB taxonomy block of the config."""
    return config["datasets"]["cub"]["taxonomy"]


def cub_checklist_input(wildcards):
    """The checklist CSV as an input when the config names one (the default ships in a package)."""
    spec = cub_taxonomy_config()["checklist"]
    return [] if spec == "default" else [spec]


# Folder names of the datasets' own layouts (the demo renders into the same names).
LAYOUT_FOLDER = {"cub": "CUB_200_2011", "nabirds": "nabirds"}


def demo_folder(dataset):
    """Where the demo of a dataset is rendered."""
    return f"{RESULTS}/{dataset}/demo/{LAYOUT_FOLDER[dataset]}"


def dataset_root(wildcards):
    """The dataset folder a run reads: the rendered demo, or the real folder from the config."""
    block = config["datasets"][wildcards.dataset]
    return demo_folder(wildcards.dataset) if block["source"] == "demo" else block["root"]


def split_config(dataset):
    """The config keys the split stage reads for a dataset (its params, hence its rerun trigger)."""
    block = config["datasets"][dataset]
    return {key: block[key] for key in ("splits", "image_pool") if key in block}
