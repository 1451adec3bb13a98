"""The library's shape, checked: short single-concern modules, stages that do not import each
other, library modules that never publish, and the study's names spelled once."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LIBRARY = REPO / "src" / "hierbench"
STAGES = LIBRARY / "stages"
MAX_LINES = 400
# A module may be longer when its docstring says why, in a line starting with this.
LONG_REASON = "Longer than 400 lines because"
# Modules that publish artifacts themselves: the artifact layer, the feature store's typed
# writer, the stages, and the entry points that call stages.
# The artifact layer: writers every stage shares (a cell's three files come from cell_publishing).
PUBLISHERS = {
    "provenance.artifacts",
    "features.store",
    "training.publishing",
    "data.inputs",
    "cli",
    "jobs",
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
def test_no_library_module_is_long_without_a_stated_reason(path: Path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    assert lines <= MAX_LINES or LONG_REASON in docstring, (
        f"{path.relative_to(REPO)} has {lines} lines; split it by concern, or say why in its "
        f"docstring ('{LONG_REASON} ...')"
    )


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
