"""The library's shape, checked: short single-concern modules in packages by concern, imports
that only point down the layers, one name per module, stages that do not import each other,
library modules that never publish, the study's names spelled once, and thin rule wiring."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

from hierbench.runtools.rebuild_map import rule_blocks

REPO = Path(__file__).resolve().parents[1]
LIBRARY = REPO / "src" / "hierbench"
STAGES = LIBRARY / "stages"
MAX_LINES = 400
COMMON_SMK_MAX_LINES = 300
# The architecture drawing (docs/architecture.md), bottom to top: a module imports only from
# its own package or top-level module, or from a lower layer.
LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(layer.split())
    for layer in (
        "shipped",
        "protocol relations runs devices idnames plugins jobcost",
        "layout",
        "provenance geometry taxonomy splits levelnames runlogs factorial metricnames trackers",
        "data cells jobs runtools features effects",
        "losses baselines controls config demo",
        "training metrics cellkinds",
        "paths",
        "stages",
        "cli",
    )
)
# Modules that publish artifacts themselves: the artifact layer, the typed writers (features,
# tables), the stages, and the entry points that call stages.
# The artifact layer: writers every stage shares (a cell's three files come from cell_publishing).
PUBLISHERS = {
    "provenance.artifacts",
    "features.store",
    "effects.table_files",
    "effects.figure_publishing",
    "training.publishing",
    "data.inputs",
    "cli",
    "cli.run_commands",  # the audit writes its manifest
    "cli.study",  # the config a run resolved, beside its logs (not an artifact)
    "jobs",
    "provenance.codehash",  # its cache of parsed files, in the user cache folder (no artifact)
    "runtools.run_index",  # where hierbench run's runs are, in the user's data folder (no artifact)
    "runtools.demo_pages",  # a demo run's numbers kept in the guide's pages (docs, not artifacts)
    "runlogs",  # the note in a run's logs naming the repository that ran it (not an artifact)
}
PUBLISHING_CALLS = {"publish", "write_parquet", "write_json", "write_text", "copy_file"}


def _modules() -> list[Path]:
    return sorted(LIBRARY.rglob("*.py"))


def _name(path: Path) -> str:
    parts = path.relative_to(LIBRARY).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Absolute hierbench modules a file imports (``from hierbench.x import y`` gives x.y and x)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name.removeprefix("hierbench.") for name in found if name.startswith("hierbench.")}


@pytest.mark.parametrize("path", _modules(), ids=_name)
def test_no_library_module_is_over_400_lines(path: Path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(REPO)} has {lines} lines; split it by concern"


def _layer(name: str) -> int:
    """The layer of a module's package (or top-level module)."""
    unit = name.split(".")[0]
    for index, layer in enumerate(LAYERS):
        if unit in layer:
            return index
    raise AssertionError(f"hierbench.{unit} is in no layer of LAYERS (docs/architecture.md)")


def test_every_package_and_top_level_module_has_one_layer():
    units = {_name(path).split(".")[0] for path in _modules() if _name(path)}
    placed = [unit for layer in LAYERS for unit in layer]
    assert sorted(placed) == sorted(set(placed)), "a unit is in two layers"
    assert units == set(placed)


@pytest.mark.parametrize("path", [p for p in _modules() if _name(p)], ids=_name)
def test_no_module_imports_from_a_higher_layer(path: Path):
    name = _name(path)
    own = name.split(".")[0]
    upward = sorted(
        imported
        for imported in _imports(path)
        if not imported.startswith("__")  # the package's own attributes (__version__)
        and imported.split(".")[0] != own
        and _layer(imported) >= _layer(name)
    )
    assert not upward, (
        f"{path.relative_to(REPO)} (layer {_layer(name)}) imports {upward} from its own layer "
        "or above; move the shared code down"
    )


def _module_names() -> dict[str, list[str]]:
    """Every module's and package's last name, with where it is defined."""
    names: dict[str, list[str]] = {}
    for path in _modules():
        name = _name(path)
        if name:
            names.setdefault(name.split(".")[-1], []).append(name)
    return names


def test_no_two_modules_share_a_name_except_a_stage_and_its_library_module():
    """One name per idea: a stage ``stages.X`` may share its name with the library package
    ``X`` or with the one library module ``pkg.X`` that it is the stage of (it imports it)."""
    for short, owners in _module_names().items():
        others = [owner for owner in owners if not owner.startswith("stages.")]
        if len(owners) == 1:
            continue
        stage = f"stages.{short}"
        assert stage in owners and len(others) == 1, f"{short!r} names {sorted(owners)}"
        library = others[0]
        if library != short:  # a module of another package: the stage must be its stage
            assert library in _imports(STAGES / f"{short}.py"), (
                f"{stage} shares its name with {library} but does not import it"
            )


def test_the_rules_common_file_is_path_wiring_only():
    common = (REPO / "rules" / "common.smk").read_text(encoding="utf-8")
    assert len(common.splitlines()) < COMMON_SMK_MAX_LINES
    assert not re.search(r"^\s*(rule|use rule) ", common, re.M), "rules/common.smk defines a rule"


@pytest.mark.parametrize("path", sorted(STAGES.glob("*.py")), ids=_name)
def test_no_stage_module_imports_another_stage(path: Path):
    others = {name for name in _imports(path) if name.startswith("stages")}
    assert not others, f"{path.relative_to(REPO)} imports {sorted(others)}; move shared code down"


@pytest.mark.parametrize(
    "path",
    [p for p in _modules() if STAGES not in p.parents and _name(p) not in PUBLISHERS],
    ids=_name,
)
def test_library_modules_compute_and_stages_publish(path: Path):
    """Only stage modules (and the artifact layer) write artifacts."""
    called = {
        node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
    }
    assert not called & PUBLISHING_CALLS, (
        f"{path.relative_to(REPO)} calls {sorted(called & PUBLISHING_CALLS)}; library modules "
        "compute, stage modules publish"
    )


# Literal spellings that belong to hierbench.protocol alone.
PROTOCOL_LITERALS = [
    r'"pypi:"',
    r'"E\|H"',
    r'"R\|S"',
    r'\{"E": "euclidean"',
    r'"table_arms_map"',
    r'"hyperbolic_norms"',
    r'"ot_by_k"',
    r'"table_ot"',
    r'"table_effects_ot"',
    r'"CUB_200_2011"',
]


@pytest.mark.parametrize("pattern", PROTOCOL_LITERALS)
def test_protocol_names_are_spelled_only_in_the_protocol_module(pattern: str):
    sources = [p for p in _modules() if p.name != "protocol.py"]
    sources += [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]
    sources += sorted((REPO / "workflow_scripts").glob("*.py"))
    offenders = [
        str(p.relative_to(REPO)) for p in sources if re.search(pattern, p.read_text("utf-8"))
    ]
    assert not offenders, f"{pattern} is spelled outside hierbench.protocol in {offenders}"


def test_the_protocol_module_imports_nothing_of_the_library():
    assert not _imports(LIBRARY / "protocol.py")


def test_planning_the_workflow_loads_no_torch():
    """Every hierbench module the Snakefile and the rules import is torch-free: each Snakemake
    start (a dry run, every SLURM job) parses them, and torch alone takes about 1.5 s to load."""
    import subprocess
    import sys

    sources = [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]
    pattern = re.compile(r"^from (hierbench[\w.]*) import", re.M)
    modules = sorted({name for path in sources for name in pattern.findall(path.read_text())})
    assert "hierbench.devices" in modules and "hierbench.cells.companion" in modules
    probe = "import importlib, sys\n"
    probe += "".join(f"importlib.import_module({name!r})\n" for name in modules)
    probe += "print(sorted(m for m in ('torch', 'timm', 'geoopt') if m in sys.modules))\n"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# Rules too light to time (a shipped file copied, a small tree parsed, a winner picked).
UNTIMED_RULES = {
    "stage_input",
    "taxonomy_nabirds",
    "taxonomy_table",
    "taxonomy_shuffled",
    "tuning_selection",
    "added_geometry_tuning_selection",
}


def test_every_rule_logs_and_every_rule_doing_real_work_is_timed():
    """Each rule has ``log:``, and ``benchmark:`` unless it is too light to time (what
    `hierbench jobs` and `status`'s time left read); an inheriting rule keeps its parent's."""
    has: dict[str, set[str]] = {}
    for block in rule_blocks(REPO / "rules"):
        own = {key for key in ("log", "benchmark") if re.search(rf"^\s+{key}:", block.body, re.M)}
        has[block.name] = own | (has.get(block.parent, set()) if block.parent else set())
    assert [name for name, keys in has.items() if "log" not in keys] == []
    untimed = {name for name, keys in has.items() if "benchmark" not in keys}
    assert untimed == UNTIMED_RULES


EXAMPLES = {  # each example's config overlay: what it sets besides its run folder
    "triplet.yaml": {
        "factorial": {"losses": ["R", "S", "T"]},
        "plugins": {"objectives": {"T": "examples/triplet_margin.py:OBJECTIVE"}},
    },
    "sphere.yaml": {
        "factorial": {"geometries": ["E", "H", "C"]},
        "plugins": {"geometries": {"C": "examples/sphere.py:GEOMETRY"}},
    },
    "ndcg.yaml": {"plugins": {"metrics": {"ndcg@10": "examples/ndcg.py:METRIC"}}},
    "lineage.yaml": {"plugins": {"datasets": {"lineage": "examples/lineage.py:KIND"}}},
}


def test_each_example_joins_as_one_file_and_one_config_entry():
    """examples/: the triplet-margin objective, the sphere geometry, the NDCG@10 metric and the
    lineage dataset kind are each a module and a config overlay naming it (docs/extend.md; the
    kind's, a dataset of that kind too); nothing in the library, the rules or the scripts knows
    of them."""
    for name, settings in EXAMPLES.items():
        overlay = yaml.safe_load((REPO / "examples" / name).read_text(encoding="utf-8"))
        datasets = overlay.pop("datasets", {})
        assert {key: value for key, value in overlay.items() if key != "run"} == settings
        named = set(settings["plugins"].get("datasets", {}))
        assert {entry["kind"] for entry in datasets.values()} == named
    modules = sorted(path.name for path in (REPO / "examples").glob("*.py"))
    assert modules == ["lineage.py", "ndcg.py", "sphere.py", "triplet_margin.py"]
    ours = [
        *(REPO / "src").rglob("*.py"),
        *(REPO / "rules").glob("*.smk"),
        *(REPO / "workflow_scripts").glob("*.py"),
        REPO / "Snakefile",
        *(REPO / "schemas").glob("*.yaml"),
    ]
    pattern = r"triplet_margin|sphere\.py|ndcg\.py|lineage\.py|examples/"
    knowing = [p for p in ours if re.search(pattern, p.read_text("utf-8"))]
    assert knowing == []


def _comparisons_to(names: list[str], registries: list[Path]) -> list[str]:
    """Every line of our code outside ``registries`` that compares a value to one of ``names``
    spelled as a literal (``== "x"``, ``"x" !=``, ``in ("x", ...)``), as ``file:line``."""
    literal = rf"[\"']({'|'.join(names)})[\"']"
    pattern = re.compile(rf"(==|!=)\s*{literal}|{literal}\s*(==|!=)|\bin\s*[(\[{{]\s*{literal}")
    assert pattern.search(f'if kind == "{names[0]}":') and pattern.search(f"k in ('{names[-1]}',)")
    ours = [
        *(REPO / "src").rglob("*.py"),
        *(REPO / "rules").glob("*.smk"),
        *(REPO / "workflow_scripts").glob("*.py"),
        REPO / "Snakefile",
    ]
    return [
        f"{path.relative_to(REPO)}:{number}"
        for path in ours
        if path not in registries
        for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1)
        if pattern.search(line)
    ]


def test_no_module_or_rule_compares_a_dataset_kind_to_its_name():
    """What a dataset kind decides is a field of its DatasetKind (hierbench.data.kinds), so a
    new kind is one entry there or one plugin, not a branch in each module that reads data."""
    from hierbench.data.kinds import BUILTIN_KINDS

    assert _comparisons_to(list(BUILTIN_KINDS), [LIBRARY / "data/kinds.py"]) == []


def test_no_module_or_rule_compares_a_cell_kind_to_its_name():
    """What a kind of cell decides is a field of its CellKind or TrainingRule
    (hierbench.cellkinds); the protocol names the kinds once."""
    from hierbench.cellkinds import CELL_KINDS

    registries = [LIBRARY / "cellkinds.py", LIBRARY / "protocol.py"]
    assert _comparisons_to(list(CELL_KINDS), registries) == []


def test_no_workflow_script_dispatches_on_the_rules_name():
    """A script does what its inputs and params say, so a rule family can be renamed or
    generated without editing it."""
    scripts = sorted((REPO / "workflow_scripts").glob("*.py"))
    assert scripts
    assert [p.name for p in scripts if "snakemake.rule" in p.read_text(encoding="utf-8")] == []


PATH_DIRECTIVES = {"input", "output", "log", "benchmark"}


def _directives(body: str) -> set[str]:
    """The directives of a rule block: its least indented ``name:`` lines."""
    found = re.findall(r"^( +)(\w+):", body, re.M)
    top = min((len(indent) for indent, _ in found), default=0)
    return {name for indent, name in found if len(indent) == top}


def test_no_use_rule_block_only_renames_paths():
    """A family whose members differ only in their paths is one rule generated in a loop over
    its registry (``name:``), not ``use rule ... with:`` copies."""
    renaming = [
        block.name
        for block in rule_blocks(REPO / "rules")
        if block.parent and _directives(block.body) <= PATH_DIRECTIVES
    ]
    assert renaming == []


def test_no_rule_file_spells_a_cell_kind():
    """The rules name kinds of cell by the protocol's constants, as hierbench.cellkinds does
    (a config block of the same name, ``"companion": config["companion"]``, is a key)."""
    from hierbench.cellkinds import CELL_KINDS, sealed_evaluations

    kinds = "|".join([*CELL_KINDS, *(e.name for e in sealed_evaluations())])
    literal = re.compile(rf'(?<!config\[)"(?:{kinds})"(?!: config\[)')
    spelled = [
        f"{path.name}: {match[0]}"
        for path in [*(REPO / "rules").glob("*.smk"), REPO / "Snakefile"]
        for match in literal.finditer(path.read_text("utf-8"))
    ]
    assert spelled == []


def test_the_sealed_evaluations_are_generated_from_the_registry():
    """One rule per kind of cell and seedless arm, named by hierbench.cellkinds; the rule file
    names no kind."""
    from hierbench.cellkinds import CELL_KINDS, sealed_evaluations

    blocks = [b for b in rule_blocks(REPO / "rules") if b.path.name == "evaluation.smk"]
    generated = [e.rule for e in sealed_evaluations()]
    assert [b.name for b in blocks if b.name in generated] == generated
    text = (REPO / "rules/evaluation.smk").read_text(encoding="utf-8")
    kinds = [*CELL_KINDS, *(e.name for e in sealed_evaluations())]
    assert [
        k for k in kinds if re.search(rf"[\"\[]{k}[\"\]]|EVALUATION\[{k.upper()}\]", text)
    ] == []


def test_the_training_rules_are_generated_from_the_registry():
    """One rule per entry of hierbench.cellkinds.TRAINING_RULES, in its order, generated by one
    loop of training.smk (no rule of the family written out, none inheriting another)."""
    from hierbench.cellkinds import training_rules

    blocks = [b for b in rule_blocks(REPO / "rules") if b.path.name == "training.smk"]
    generated = [trained.rule for trained in training_rules()]
    assert [b.name for b in blocks if b.name in generated] == generated
    text = (REPO / "rules/training.smk").read_text(encoding="utf-8")
    assert not re.search(rf"^\s*(use )?rule ({'|'.join(generated)})\b", text, re.M)
    assert text.count("for trained in training_rules():") == 1


def _file_names_of_layout() -> set[str]:
    """The file names the run layout spells (``final_lock.json``, ``train_log.parquet``, ...)."""
    import hierbench.layout as layout

    values: list[str] = []
    for value in vars(layout).values():
        if isinstance(value, str):
            values.append(value)
        elif isinstance(value, dict):
            values += [v for v in value.values() if isinstance(v, str)]
    names = {value.rsplit("/", 1)[-1] for value in values if "/" in value or "." in value}
    return {name for name in names if "." in name and "{" not in name}


def _code_strings(path: Path) -> set[str]:
    """The string constants of a module's code (docstrings left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    }


def test_no_module_respells_a_file_name_of_the_run_layout():
    """Paths are defined once (hierbench.layout): no other library module writes one of its
    file names in code."""
    names = _file_names_of_layout()
    assert {"final_lock.json", "train_log.parquet", "arms_summary.parquet"} <= names
    respelled = {
        _name(path): sorted(
            name
            for name in names
            if any(text == name or text.endswith(f"/{name}") for text in _code_strings(path))
        )
        for path in _modules()
        if _name(path) != "layout"
    }
    found = {module: names for module, names in respelled.items() if names}
    assert found == NOT_RUN_FILES


# The same file names meaning something else: a Hugging Face hub repository's weights file.
NOT_RUN_FILES = {"features.backbones": ["model.safetensors"]}
