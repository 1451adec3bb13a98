"""pytest-xdist work units for the suite (``make test``: ``-n auto --dist loadgroup``).

A session fixture that costs minutes (the tiny run, the newcomer's install) is built once per
pytest process, so every test that takes one must run in the same worker: each test gets an
``xdist_group``, its shared build's name, else its file's (a module-scoped fixture is built
once too), and the shared builds' tests go first so the longest unit does not end the run alone.

pytest-xdist 3.8 reads a test's group from its node id (``path::name@group``) and writes the
suffix to ``item._nodeid``, which pytest 9.2 no longer reads (it builds ``nodeid`` from
``item._id``): :func:`group_tests` puts the suffix where pytest reads it, or every test would be
its own unit and each worker would build the shared fixtures again.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from _pytest.nodeid import NodeId

GROUP_SEPARATOR = "@"  # pytest-xdist's loadgroup: the group follows the last "@" of a node id


def work_group(item: pytest.Item, shared_builds: Mapping[str, str]) -> str:
    """The unit pytest-xdist hands one worker: the shared build a test takes (its fixture
    closure), else its file."""
    names = getattr(item, "fixturenames", ())
    for fixture, group in shared_builds.items():
        if fixture in names:
            return group
    return item.nodeid.split("::")[0]


def _name_group(item: pytest.Item, group: str) -> None:
    """Append ``@group`` to the node id pytest reports to the xdist controller."""
    nodeid = item.nodeid
    if nodeid.rfind(GROUP_SEPARATOR) > nodeid.rfind("]"):
        return  # already named (an xdist release that writes where pytest reads)
    item._id = NodeId.parse(f"{nodeid}{GROUP_SEPARATOR}{group}")


def group_tests(
    config: pytest.Config, items: list[pytest.Item], shared_builds: Mapping[str, str]
) -> None:
    """Give each test its xdist group (named in its node id when this process is an xdist
    worker of ``--dist loadgroup``) and put the shared builds' tests first (a stable sort)."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    in_groups = bool(getattr(config.option, "loadgroup", False))  # set on loadgroup's workers
    order = list(shared_builds.values())
    for item in items:
        group = work_group(item, shared_builds)
        item.add_marker(pytest.mark.xdist_group(group))
        if in_groups:
            _name_group(item, group)
    items.sort(
        key=lambda item: (
            order.index(g) if (g := work_group(item, shared_builds)) in order else len(order)
        )
    )
