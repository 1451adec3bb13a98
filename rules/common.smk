# Path wiring and wildcard constraints only; every decision is a tested library function.

from hierbench.codehash import code_hash
from hierbench.config import enabled_datasets

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
    return [
        f"{RESULTS}/{dataset}/inputs/{name}.txt"
        for dataset in DATASETS
        for name in STAGED_INPUTS[dataset]
    ]
