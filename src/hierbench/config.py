"""Configuration: validation against the JSON schema with messages that name the key, defaults,
and checks that the data and weights a config points at exist before any job is scheduled."""

from __future__ import annotations

import copy
import difflib
import functools
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from jsonschema.exceptions import ValidationError

from hierbench.data.kinds import kind_of, kind_problems
from hierbench.factorial import check_factorial, geometry_sources, plugin_sources
from hierbench.metricnames import metric_references, metric_sources
from hierbench.plugins import dataset_plugins
from hierbench.protocol import DATASETS as BIRD_DATASETS
from hierbench.protocol import PACKAGE_WEIGHTS_PREFIX
from hierbench.shipped import shipped_file
from hierbench.trackers import tracker_problems

SCHEMA_PATH = shipped_file("config.schema.yaml")  # found from any working folder
# The shipped input files a dataset reads, by their key paths under datasets.<name>.
SHIPPED_INPUT_KEYS = {"cub": ("classes", "taxonomy.aliases"), "nabirds": ("classes", "hierarchy")}


class ConfigError(ValueError):
    """The configuration is invalid or points at something that does not exist."""


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping; a missing file, a syntax error (with its line) or anything but a
    mapping is an error naming the file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigError(f"{where}: not valid YAML: {problem}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def key_path(parts: Any) -> str:
    """Dotted key path (``training.epochs``, ``training.seeds[1]``) of a jsonschema error."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "<top level>"


def describe_error(error: ValidationError) -> str:
    """One line naming the config key an error is about and what is wrong with it."""
    where = key_path(error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(allowed))
        names = ", ".join(
            f"'{key_path([*error.absolute_path, key])}'{_nearest(key, allowed)}" for key in unknown
        )
        return f"unknown config key {names}; allowed keys here: {allowed}"
    if error.validator == "required":
        missing = [key for key in error.validator_value if key not in error.instance]
        names = ", ".join(f"'{key_path([*error.absolute_path, key])}'" for key in missing)
        path = list(error.absolute_path)
        if len(path) == 2 and path[0] == "datasets" and missing == ["kind"]:
            name = str(path[1])
            return (
                f"unknown dataset 'datasets.{name}'{_nearest(name, list(BIRD_DATASETS))}: the "
                "bird datasets are 'cub' and 'nabirds'; a dataset of your own needs kind: table"
            )
        return f"missing required config key {names}"
    if "propertyNames" in error.relative_schema_path and error.validator == "not":
        return (
            f"config key '{key_path([*error.absolute_path, error.instance])}': the name "
            f"{error.instance!r} is taken by the run's logs/ folder; name the dataset otherwise"
        )
    if "propertyNames" in error.relative_schema_path:
        return (
            f"config key '{key_path([*error.absolute_path, error.instance])}': the name "
            f"{error.instance!r} may hold only letters, digits, '_' and '-' (it is used in paths)"
        )
    if error.validator == "pattern":
        return f"config key '{where}': {error.instance!r} {_pattern_rule(error)}"
    return f"config key '{where}': {error.message}"


def _pattern_rule(error: ValidationError) -> str:
    """A key's name pattern in words (a raw regular expression helps nobody)."""
    if list(error.absolute_path) == ["run"]:
        return (
            "must be a folder path, relative to the repository or absolute, parts of letters, "
            "digits, '_', '.' and '-' separated by '/' (no spaces, but in an absolute path)"
        )
    if error.validator_value == "^[A-Za-z][A-Za-z0-9_]*$":
        return "must start with a letter and hold only letters, digits and '_'"
    return f"does not match the pattern {error.validator_value}"


def _nearest(key: str, allowed: list[str]) -> str:
    """The hint " (did you mean 'x'?)" for the allowed key nearest a misspelt one, or ''."""
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _errors(config: dict[str, Any], schema: dict[str, Any]) -> Iterator[ValidationError]:
    """All schema violations, in a stable order (by key path, then message)."""
    validator = jsonschema.Draft202012Validator(schema)
    yield from sorted(
        validator.iter_errors(config), key=lambda e: (key_path(e.absolute_path), e.message)
    )


def apply_defaults(config: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of ``config`` with every schema default filled in, recursively."""
    return _fill(copy.deepcopy(config), schema, schema)


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """Follow a local ``$ref`` (``#/$defs/name``), merging the referring node's own keys."""
    ref = node.get("$ref")
    if not ref:
        return node
    target: Any = root
    for part in ref.removeprefix("#/").split("/"):
        target = target[part]
    merged = {**_resolve(target, root), **{k: v for k, v in node.items() if k != "$ref"}}
    return merged


def _fill(value: Any, node: dict[str, Any], root: dict[str, Any]) -> Any:
    """Fill defaults into ``value`` following schema ``node``: its properties, a referenced
    schema for other keys (``additionalProperties: {$ref}``: a dataset under a name of its own;
    free maps such as the semantic arms are left as written) and the ``then`` of each ``allOf``
    branch whose ``if`` holds (a dataset's schema chosen by its kind)."""
    node = _resolve(node, root)
    if not isinstance(value, dict):
        return value
    properties = node.get("properties", {})
    for name, sub in properties.items():
        sub_resolved = _resolve(sub, root)
        if name not in value and "default" in sub_resolved:
            value[name] = copy.deepcopy(sub_resolved["default"])
        if name in value:
            value[name] = _fill(value[name], sub_resolved, root)
    others = node.get("additionalProperties")
    if isinstance(others, dict) and "$ref" in others:  # named blocks (datasets), not free maps
        for name in [name for name in value if name not in properties]:
            value[name] = _fill(value[name], others, root)
    for branch in node.get("allOf", []):
        if "if" in branch and jsonschema.Draft202012Validator(branch["if"]).is_valid(value):
            value = _fill(value, branch["then"], root)
    return value


def validate_config(config: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Validate ``config`` and return it with defaults filled in.

    Every violation is reported in one :class:`ConfigError`, each line naming its key.
    """
    problems = [describe_error(error) for error in _errors(config, schema)]
    if not problems:
        filled = apply_defaults(config, schema)
        problems = [describe_error(error) for error in _errors(filled, schema)]
        problems = problems or plugin_problems(filled)
        if not problems:
            return filled
    if len(problems) == 1:
        raise ConfigError(f"invalid configuration: {problems[0]}")
    raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))


def plugin_problems(config: dict[str, Any]) -> list[str]:
    """What keeps the configured factorial or metrics from running: a missing paper loss or
    geometry, an added one no plugin names, a plugin that cannot be found (each naming its
    key)."""
    try:
        check_factorial(config)
        plugin_sources(config)
        geometry_sources(config)
        metric_sources(config)
    except ValueError as error:
        return [str(error)]
    return kind_problems(config, enabled_datasets(config))


def enabled_datasets(config: dict[str, Any]) -> list[str]:
    """Names of the datasets this run covers, in a fixed order."""
    return [name for name, block in sorted(config["datasets"].items()) if block["enabled"]]


def missing_inputs(config: dict[str, Any], base: Path = Path()) -> list[str]:
    """Each input, data folder, weights file or tracker package the config lacks, explained."""
    problems = tracker_problems(config)
    for name in enabled_datasets(config):
        block = config["datasets"][name]
        kind = kind_of(config, name)
        for key in SHIPPED_INPUT_KEYS.get(kind.name, ()):
            path = functools.reduce(lambda node, part: node[part], key.split("."), block)
            if not (base / path).is_file():
                problems.append(
                    f"datasets.{name}.{key}: no file '{path}'; restore the shipped file or "
                    "change the key"
                )
        if block["source"] != "folder":
            continue
        root = block["root"]
        if root is None:
            problems.append(
                f"datasets.{name}.root is not set; with source 'folder' it must name "
                f"{kind.folder_hint}"
            )
        elif not (base / root).is_dir():
            problems.append(
                f"datasets.{name}.root: folder '{root}' does not exist; put "
                f"{kind.folder_hint} there or change the key"
            )
    weights = config["backbone"]["weights"]
    if not weights.startswith(PACKAGE_WEIGHTS_PREFIX) and not (base / weights).exists():
        problems.append(
            f"backbone.weights: file '{weights}' does not exist; place the "
            f"{config['backbone']['name']} weights there (timm safetensors or the original .pth)"
            " or change the key"
        )
    return problems


def check_inputs_exist(config: dict[str, Any], base: Path = Path()) -> None:
    """Raise one :class:`ConfigError` naming every missing input (each on a line of its own)."""
    problems = missing_inputs(config, base)
    if len(problems) == 1:
        raise ConfigError(f"the configuration points at a missing input: {problems[0]}")
    if problems:
        raise ConfigError("the configuration points at missing inputs:\n  " + "\n  ".join(problems))


KEY_IN_PROBLEM = re.compile(r"'([A-Za-z0-9_.\[\]-]+)'")


def _depth_set(data: Any, parts: list[str]) -> int:
    """How many leading parts of a key path a config file's mapping holds."""
    depth = 0
    for part in parts:
        if not isinstance(data, dict) or part not in data:
            break
        data, depth = data[part], depth + 1
    return depth


def _source(problem: str, loaded: list[tuple[str, Any]]) -> str | None:
    """The file a problem's key comes from: of the overlaid files, the last that sets the most
    of its key path (None when no file sets any of it)."""
    match = KEY_IN_PROBLEM.search(problem)
    if not match:
        return None
    parts = re.sub(r"\[\d+\]", "", match.group(1)).split(".")
    depth, index = max(
        ((_depth_set(data, parts), i) for i, (_, data) in enumerate(loaded)), default=(0, -1)
    )
    return loaded[index][0] if depth > 0 else None


def named_sources(error: ConfigError, files: Sequence[str | Path]) -> ConfigError:
    """The error with each problem naming the config file it comes from (``--configfile A B``
    overlays several)."""
    loaded = []
    for path in files:
        try:
            loaded.append((str(path), load_yaml(path)))
        except ConfigError:
            continue
    named = []
    for line in str(error).splitlines():
        where = _source(line, loaded)
        if where and line.startswith("invalid configuration: "):  # a single problem
            line = f"{where}: {line}"
        elif where and line.startswith("  "):
            line = f"  {where}: {line.strip()}"
        named.append(line)
    return ConfigError("\n".join(named))


def load_config(path: str | Path, schema_path: str | Path = SCHEMA_PATH) -> dict[str, Any]:
    """Read, validate and default-fill a config file (for the CLI and tests)."""
    config, schema = load_yaml(path), load_yaml(schema_path)
    try:
        return validate_config(config, schema)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from None


# Keys on how the pipeline runs or what it exports, not what the study is: not locked.
UNLOCKED_KEYS = ("seal", "run", "tracker")


def locked_config(config: dict[str, Any], dataset: str) -> dict[str, Any]:
    """The resolved config as it concerns one dataset: what its Final lock covers.

    Other datasets' blocks are left out (changing one dataset never re-seals another), and so is
    the seal policy, which says how a changed lock is handled rather than what it covers. Keys
    are sorted: the order the config files gave them in is no change to the lock.
    """
    shared = {k: v for k, v in config.items() if k != "datasets" and k not in UNLOCKED_KEYS}
    if "plugins" in shared:
        kind = config["datasets"][dataset].get("kind")
        shared["plugins"] = dataset_plugins(shared["plugins"], kind)
    locked = {**shared, "datasets": {dataset: config["datasets"][dataset]}}
    return json.loads(json.dumps(locked, sort_keys=True))


# Evaluation keys that only the sealed evaluation reads: changing them must not retrain.
SEALED_ONLY_EVALUATION_KEYS = ("ot_ks",)


def training_config(
    config: dict[str, Any],
    dataset: str,
    *,
    controls: tuple[str, ...] = (),
    scoring: bool = True,
    plugins: bool = False,
) -> dict[str, Any]:
    """The config keys that define training, tuning and validation scoring for a dataset (a
    training rule's params): sealed-only evaluation keys are left out, so changing them reruns
    no training; ``controls`` adds those controls' blocks of the dataset. ``scoring=False``
    leaves out the tuning and validation-scoring keys too: a final cell reads neither (an S
    cell takes its temperature from the tuning selection, an input), so changing them reruns
    no Regression cell. ``plugins`` adds the config's plugins, for the jobs that train an added
    loss's or geometry's cells (the paper's jobs keep their params)."""
    block = config["datasets"][dataset]
    evaluation = {
        key: value
        for key, value in config["evaluation"].items()
        if key not in SEALED_ONLY_EVALUATION_KEYS
    }
    dataset_keys: dict[str, Any] = {"hyperbolic": block["hyperbolic"], "tau": block["tau"]}
    if controls:
        dataset_keys["controls"] = {name: block["controls"][name] for name in controls}
    keys = {
        "device": config.get("device", "cpu"),
        "head": config["head"],
        "training": config["training"],
        "tuning": config["tuning"],
        "evaluation": evaluation,
        "datasets": {dataset: dataset_keys},
    }
    if not scoring:
        del keys["tuning"], keys["evaluation"]
    if plugins:
        keys["plugins"] = dataset_plugins(config["plugins"])
    return keys


def split_config(config: dict[str, Any], dataset: str) -> dict[str, Any]:
    """The config keys the split stage reads for a dataset (its params, hence its rerun
    trigger)."""
    block = config["datasets"][dataset]
    return {key: block[key] for key in ("splits", "image_pool") if key in block}


def pool_config(config: dict[str, Any], dataset: str) -> dict[str, Any]:
    """The config keys a backbone pass reads for a dataset (its params): the image pool and
    the split protocol, which say which images the pass holds; nothing of the taxonomy."""
    block = config["datasets"][dataset]
    keys: dict[str, Any] = {"splits": {}}
    if "protocol" in block["splits"]:
        keys["splits"]["protocol"] = block["splits"]["protocol"]
    if "image_pool" in block:
        keys["image_pool"] = block["image_pool"]
    return keys


def evaluation_config(
    config: dict[str, Any], dataset: str, *, distance_clip: bool = True
) -> dict[str, Any]:
    """The config keys the sealed evaluation reads for a dataset (its params). An angle
    ranking (``distance_clip=False``) leaves out the distance clip, which it does not use."""
    block = config["datasets"][dataset]
    keys = {
        "evaluation": config["evaluation"],
        "training": {"distance_clip_test": config["training"]["distance_clip_test"]},
        "datasets": {dataset: {"splits": {"query_gallery": block["splits"]["query_gallery"]}}},
    }
    if not distance_clip:
        del keys["training"]
    if metric_references(config):  # a researcher's metrics (hierbench.metricnames)
        keys["plugins"] = {"metrics": config["plugins"]["metrics"]}
    return keys
