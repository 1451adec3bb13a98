"""A job's CPU split by kind of cost (hierbench.jobcost): charged blocks, nesting, the worker
processes, and the log line a job writes as it exits."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hierbench import jobcost
from hierbench.runtools.jobstats import job_cost_splits, last_cost_split
from hierbench.runtools.status import last_line


def _burn(seconds: float) -> None:
    """Spend about ``seconds`` of this process's CPU."""
    import time

    began = time.process_time()
    while time.process_time() - began < seconds:
        sum(range(1000))


@pytest.fixture
def fresh_costs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start each test from no charged seconds (the module keeps them per process)."""
    monkeypatch.setattr(jobcost, "_charged", dict.fromkeys(jobcost.KINDS, 0.0))
    monkeypatch.setattr(jobcost, "_open", [])


def test_a_charged_block_counts_its_cpu_to_its_kind_and_a_nested_one_counts_once(fresh_costs):
    jobcost.mark_start_up()
    with jobcost.charged(jobcost.LOADING):
        _burn(0.05)
        with jobcost.charged(jobcost.PUBLISHING):
            _burn(0.05)
    _burn(0.05)
    costs = jobcost.split()
    assert 0.05 <= costs[jobcost.PUBLISHING] < 0.09
    assert 0.05 <= costs[jobcost.LOADING] < 0.09  # not 0.10
    assert costs[jobcost.COMPUTE] >= 0.05
    assert sum(costs.values()) == pytest.approx(jobcost._job_cpu(), abs=0.02)


def test_an_unknown_kind_of_cost_is_refused(fresh_costs):
    with pytest.raises(ValueError, match="unknown kind of cost 'io'"), jobcost.charged("io"):
        pass


def test_workers_cpu_is_charged_where_the_block_says_and_is_compute_elsewhere(fresh_costs):
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.2: pass"
    before = jobcost.split()
    with jobcost.charged(jobcost.LOADING, own=False):  # the workers' CPU alone
        subprocess.run([sys.executable, "-c", burn], check=True)
        _burn(0.1)  # this process's own: not loading
    middle = jobcost.split()
    # The children's CPU is counted in kernel ticks (10 ms at most) and summed in floats: a
    # child that burned 0.2 s may read a tick short (0.19999999999999973 was seen).
    tick = 0.01
    assert 0.2 - tick <= middle[jobcost.LOADING] - before[jobcost.LOADING] < 0.2 + 0.1
    assert middle[jobcost.COMPUTE] - before[jobcost.COMPUTE] >= 0.1
    subprocess.run([sys.executable, "-c", burn], check=True)  # outside any block: compute
    after = jobcost.split()
    assert after[jobcost.LOADING] == middle[jobcost.LOADING]
    assert after[jobcost.COMPUTE] - middle[jobcost.COMPUTE] >= 0.2 - tick


def test_the_cost_line_reads_back_as_the_rule_and_its_split(fresh_costs):
    line = jobcost.cost_line("train_factorial")
    rule, costs = jobcost.parse_cost_line("2026-12-05 10:00:00,000 INFO x: " + line)
    assert rule == "train_factorial"
    assert set(costs) == set(jobcost.KINDS)
    assert jobcost.parse_cost_line("rule tune wildcards {} code 0123") is None


def test_a_job_appends_its_split_to_its_log_as_it_exits_and_status_passes_over_it(
    tmp_path: Path,
):
    log = tmp_path / "logs" / "job.log"
    script = f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_jobs import Named, fake_job  # the fake Snakemake job of the jobs' own tests
        from hierbench.jobs import start_job

        start_job(fake_job(rule="tune", input=Named(), log=Named(log={str(log)!r})))
        raise SystemExit("the work failed")
    """
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], check=False)
    assert result.returncode == 1
    text = log.read_text(encoding="utf-8")
    assert text.splitlines()[-1].startswith(jobcost.LINE_PREFIX)
    rule, costs = last_cost_split(log)
    assert rule == "tune" and costs[jobcost.START_UP] > 0
    assert last_line(log) == "the work failed"  # what the job said, not its split
    splits = job_cost_splits(tmp_path / "logs", {"tune": "tuning"})
    assert splits[["output", "rule", "stage"]].values.tolist() == [["job", "tune", "tuning"]]
