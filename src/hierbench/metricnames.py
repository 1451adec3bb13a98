"""How a retrieval metric's column is named, for every module that reads one, and which metric
plugins a config names (found without running them, for planning).

mAP is ``ap`` per query and ``map`` in summaries; every other metric is ``<name>@<cutoff>``: the
built-in ``r@K``, ``ot@K`` and ``ot_tree@K`` (OT scores only at level ``all``), and a plugin's
own, such as ``ndcg@10`` (scored at each level, like AP and Recall@K). A column of that form is
a metric wherever it appears: the per-query rows, the summaries, the effects.

A researcher's metric is one module (a :class:`hierbench.metrics.rank_metric.RankMetric` named
in it) and one config entry, ``plugins.metrics.<name@cutoff>: 'package.module:NAME'`` (or
``file.py:NAME`` or ``entry-point:NAME`` of the group ``hierbench.metrics``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hierbench.plugins import PluginError, configured, plugin_source

METRIC_PLUGINS_KEY = "plugins.metrics"
METRIC_ENTRY_POINT_GROUP = "hierbench.metrics"
AT_METRIC = re.compile(r"^[a-z][a-z0-9_]*@[a-z0-9]+$")
MAP_COLUMNS = ("ap", "map")  # mAP per query, and in summaries
BUILT_IN_PREFIXES = ("r@", "ot@", "ot_tree@")


class MetricPluginError(PluginError):
    """A metric plugin cannot be found, loaded or used; the message names the config key."""


def is_metric_column(name: object) -> bool:
    """Whether a column holds a retrieval metric (``ap``/``map`` or ``<name>@<cutoff>``)."""
    return name in MAP_COLUMNS or bool(AT_METRIC.match(str(name)))


def is_plugin_metric(name: object) -> bool:
    """Whether a metric column is a plugin's (not mAP, Recall@K or an OT score)."""
    text = str(name)
    return bool(AT_METRIC.match(text)) and not text.startswith(BUILT_IN_PREFIXES)


def metric_references(config: Mapping[str, Any]) -> dict[str, str]:
    """The config's metric plugins by column name, checked: ``<name>@<cutoff>``, not a built-in
    metric's name."""
    plugins = configured(config, "metrics")
    for name in plugins:
        if not is_plugin_metric(name):
            raise MetricPluginError(
                f"{METRIC_PLUGINS_KEY}.{name}: a metric's name is '<name>@<cutoff>' in lower "
                f"case (ndcg@10, rr@all), not mAP's or one starting {list(BUILT_IN_PREFIXES)}"
            )
    return plugins


def metric_sources(config: Mapping[str, Any]) -> dict[str, Path]:
    """Each metric plugin's source file (what the evaluation jobs' code hash covers)."""
    return {
        name: plugin_source(
            reference,
            f"{METRIC_PLUGINS_KEY}.{name}",
            METRIC_ENTRY_POINT_GROUP,
            MetricPluginError,
        )
        for name, reference in sorted(metric_references(config).items())
    }
