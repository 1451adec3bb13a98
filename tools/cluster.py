"""A one-node SLURM cluster on this machine, and the check that runs the pipeline on it (#21).

    python tools/cluster.py check [--target FILE ...]   # what `make test-cluster` runs
    python tools/cluster.py run -- COMMAND ...          # any command against the cluster

The cluster lives in a temporary folder: its own munge key and socket, slurm.conf, state,
spool, logs and pid files, on free ports, so it never touches /etc or a cluster already running.
munged, slurmctld and slurmd run in the foreground as children of this script, and on exit
(normal, failed, or SIGINT/SIGTERM/SIGHUP) exactly those process ids are stopped.

``check`` copies the repository twice (sources only, no run folders), runs the tiny config
with the SLURM workflow profile in one copy and locally (``--cores 2``, the default profile) in
the other, then compares the bytes of every file under the tiny run's folder (less the timing
exceptions of :mod:`hierbench.runtools.rundiff`) and audits the SLURM copy. Without the Debian
packages (and no apt-get to install them) it prints one line and exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "sinfo", "srun", "scancel")
SBIN = Path("/usr/sbin")
MEMORY_MARGIN_MB = 2048  # left to the OS and the submitting Snakemake
TINY = ("--configfile", "configs/tiny.yaml")
# configs/tiny.yaml's run folder (tests/workflow/test_cluster_profile.py checks)
TINY_RUN = "runs/tiny"


def log(message: str) -> None:
    print(f"[cluster] {message}", file=sys.stderr, flush=True)


# --- the packages -------------------------------------------------------------------------


def _which(name: str) -> str | None:
    found = shutil.which(name)
    if found is None and (SBIN / name).is_file():
        found = str(SBIN / name)
    return found


def missing_programs() -> list[str]:
    return [name for name in (*DAEMONS, *CLIENTS) if _which(name) is None]


def ensure_packages() -> str | None:
    """None when SLURM and munge are installed (installing them with apt-get if need be),
    else the reason they are not."""
    if not missing_programs():
        return None
    if shutil.which("apt-get") is None:
        return f"missing {', '.join(missing_programs())} and no apt-get to install them"
    log("installing slurm-wlm and munge with apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    result = subprocess.run(
        ["apt-get", "install", "-y", "--no-install-recommends", "slurm-wlm", "munge"],
        env=env,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0 or missing_programs():
        tail = result.stderr.strip().splitlines()[-1:] or ["no error output"]
        return f"apt-get install slurm-wlm munge failed ({tail[0]})"
    return None


# --- the configuration ---------------------------------------------------------------------


def node_resources() -> tuple[int, int]:
    """CPUs and memory (MB, MemTotal less a margin) that the one node offers."""
    cpus = len(os.sched_getaffinity(0))
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            total_mb = int(line.split()[1]) // 1024
            return cpus, max(total_mb - MEMORY_MARGIN_MB, 512)
    raise RuntimeError("no MemTotal in /proc/meminfo")


def free_ports(count: int) -> list[int]:
    """Ports nothing listens on now (bound together, so they differ)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def slurm_conf(folder: Path, host: str, cpus: int, memory_mb: int, ports: Sequence[int]) -> str:
    """slurm.conf of a one-node cluster whose files all live in ``folder``."""
    ctld_port, d_port = ports
    lines = {
        "ClusterName": "hierbench",
        "SlurmctldHost": host,
        "SlurmUser": "root",
        "SlurmdUser": "root",
        "SlurmctldPort": ctld_port,
        "SlurmdPort": d_port,
        "AuthType": "auth/munge",
        "CredType": "cred/munge",
        "AuthInfo": f"socket={folder / 'munge' / 'munge.socket'}",
        "StateSaveLocation": folder / "state",
        "SlurmdSpoolDir": folder / "spool",
        "SlurmctldPidFile": folder / "run" / "slurmctld.pid",
        "SlurmdPidFile": folder / "run" / "slurmd.pid",
        "SlurmctldLogFile": folder / "log" / "slurmctld.log",
        "SlurmdLogFile": folder / "log" / "slurmd.log",
        "ProctrackType": "proctrack/linuxproc",
        "TaskPlugin": "task/none",
        "JobAcctGatherType": "jobacct_gather/none",
        "AccountingStorageType": "accounting_storage/none",
        "JobCompType": "jobcomp/none",
        "MpiDefault": "none",
        "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_Core",
        "ReturnToService": 2,
        # squeue is the status command here (no accounting for sacct); finished jobs stay
        # visible to it for 10 minutes.
        "MinJobAge": 600,
        "SchedulerParameters": "sched_interval=2",
    }
    text = [f"{key}={value}" for key, value in lines.items()]
    text.append(f"NodeName={host} CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN")
    text.append("PartitionName=hierbench Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    return "# Written by tools/cluster.py: a one-node test cluster.\n" + "\n".join(text) + "\n"


def write_munge_key(path: Path) -> None:
    """A random 1 KiB munge key, readable by its owner only, unless one is there already."""
    if path.exists():
        return
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    with os.fdopen(fd, "wb") as handle:
        handle.write(os.urandom(1024))


# --- the daemons ---------------------------------------------------------------------------


class Cluster:
    """munged, slurmctld and slurmd in ``folder``; :meth:`stop` ends exactly those processes."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.conf = folder / "slurm.conf"
        self.host = socket.gethostname().split(".")[0]
        self.cpus, self.memory_mb = node_resources()
        self.processes: list[tuple[str, subprocess.Popen]] = []

    @property
    def env(self) -> dict[str, str]:
        """The environment for clients and jobs: SLURM_CONF names this cluster's conf, and
        bin/ (the srun wrapper) comes first on PATH."""
        path = f"{self.folder / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
        return {**os.environ, "SLURM_CONF": str(self.conf), "PATH": path}

    def write_srun_wrapper(self) -> None:
        """bin/srun: the real srun with SLURM_CONF set again. The jobstep plugin (0.6.1) drops
        every SLURM_* variable but the job's identity before its nested srun, SLURM_CONF
        included, so an srun inside a job would look for /etc/slurm/slurm.conf."""
        wrapper = self.folder / "bin" / "srun"
        wrapper.parent.mkdir(exist_ok=True)
        wrapper.write_text(f'#!/bin/sh\nSLURM_CONF="{self.conf}" exec {_which("srun")} "$@"\n')
        wrapper.chmod(0o755)

    def _spawn(self, name: str, argv: list[str]) -> None:
        logfile = (self.folder / "log" / f"{name}.out").open("ab")
        process = subprocess.Popen(
            argv,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=logfile,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C at the terminal reaches us, not the daemons
        )
        logfile.close()
        self.processes.append((name, process))
        log(f"started {name} (pid {process.pid})")

    def start(self, timeout: float = 60.0) -> float:
        """Start the daemons and wait until the node is idle; returns the seconds it took."""
        began = time.monotonic()
        for sub in ("state", "spool", "log", "run"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        munge = self.folder / "munge"
        munge.mkdir(exist_ok=True)
        # munged wants its socket folder (and those above it) searchable by everyone.
        for path in (self.folder, munge):
            path.chmod(0o755)
        self.write_srun_wrapper()
        key = self.folder / "munge-key" / "munge.key"
        write_munge_key(key)
        self.conf.write_text(
            slurm_conf(self.folder, self.host, self.cpus, self.memory_mb, free_ports(2))
        )
        self._spawn(
            "munged",
            [
                _which("munged"),
                "--foreground",
                f"--socket={munge / 'munge.socket'}",
                f"--key-file={key}",
                f"--pid-file={munge / 'munged.pid'}",
                f"--log-file={self.folder / 'log' / 'munged.log'}",
                f"--seed-file={munge / 'munged.seed'}",
            ],
        )
        self._wait(lambda: (munge / "munge.socket").exists(), timeout, "munged's socket")
        self._spawn("slurmctld", [_which("slurmctld"), "-D", "-f", str(self.conf)])
        self._spawn("slurmd", [_which("slurmd"), "-D", "-f", str(self.conf)])
        self._wait(self.idle, timeout, f"node {self.host} to be idle")
        return time.monotonic() - began

    def idle(self) -> bool:
        result = subprocess.run(
            ["sinfo", "--noheader", "--format=%T"], env=self.env, capture_output=True, text=True
        )
        return result.returncode == 0 and result.stdout.split() == ["idle"]

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            for name, process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited ({process.returncode}); {self._logs()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}; {self._logs()}")
            time.sleep(0.3)

    def _logs(self) -> str:
        return f"see the logs in {self.folder / 'log'}"

    def cancel_jobs(self, timeout: float = 30.0) -> None:
        """Cancel every job of this cluster (only its slurmctld knows them) and wait until the
        queue is empty, so that no job step outlives the daemons."""
        queue = ["squeue", "--noheader", "--format=%i"]
        listed = subprocess.run(queue, env=self.env, capture_output=True, text=True)
        if listed.returncode != 0 or not listed.stdout.split():
            return
        log(f"cancelling {len(listed.stdout.split())} jobs still queued or running")
        subprocess.run(["scancel", *listed.stdout.split()], env=self.env, capture_output=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            listed = subprocess.run(queue, env=self.env, capture_output=True, text=True)
            if listed.returncode != 0 or not listed.stdout.split():
                return
            time.sleep(1)

    def stop(self) -> None:
        """Cancel the cluster's jobs, then SIGTERM each daemon this object started (newest
        first), SIGKILL it if it lingers."""
        if len(self.processes) == len(DAEMONS) and all(p.poll() is None for _, p in self.processes):
            self.cancel_jobs()
        while self.processes:
            name, process = self.processes.pop()
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            log(f"stopped {name} (pid {process.pid})")


class Interrupted(BaseException):
    """SIGTERM or SIGHUP, raised so that the cluster is stopped on the way out."""


def _raise_interrupted(signum, frame) -> None:
    raise Interrupted(signal.Signals(signum).name)


@contextlib.contextmanager
def running_cluster(folder: Path) -> Iterator[Cluster]:
    """A started cluster, stopped on exit whatever happens (SIGTERM and SIGHUP included)."""
    previous = {
        sig: signal.signal(sig, _raise_interrupted) for sig in (signal.SIGTERM, signal.SIGHUP)
    }
    cluster = Cluster(folder)
    try:
        seconds = cluster.start()
        log(
            f"node {cluster.host} idle after {seconds:.1f} s ({cluster.cpus} CPUs, "
            f"{cluster.memory_mb} MB); SLURM_CONF={cluster.conf}"
        )
        yield cluster
    finally:
        cluster.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# --- the check -----------------------------------------------------------------------------


def repo_copy(target: Path) -> Path:
    """A copy of this repository's sources (hierbench.runtools.rundiff.copy_repository)."""
    from hierbench.runtools.rundiff import copy_repository

    return copy_repository(REPO, target)


def run_env(repo: Path, base: dict[str, str]) -> dict[str, str]:
    """The copy's own sources first on the path, this venv's programs first on PATH."""
    bin_dir = str(Path(sys.executable).parent)
    return {
        **base,
        "PYTHONPATH": str(repo / "src"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONHASHSEED": "0",
        "PATH": f"{bin_dir}{os.pathsep}{base.get('PATH', '')}",
    }


def timed_run(argv: list[str], repo: Path, env: dict[str, str], logfile: Path) -> float:
    """Run ``argv`` in ``repo``, its output into ``logfile``; the wall seconds, or an error."""
    targets = [a for a in argv if a.startswith(f"{TINY_RUN}/")]
    shown = " ".join(a for a in argv if a not in targets)
    log(f"running in {repo}: {shown}" + (f" ({len(targets)} targets)" if targets else ""))
    began = time.monotonic()
    with logfile.open("w") as out:
        result = subprocess.run(argv, cwd=repo, env=env, stdout=out, stderr=subprocess.STDOUT)
    seconds = time.monotonic() - began
    if result.returncode != 0:
        tail = "".join(logfile.read_text().splitlines(keepends=True)[-40:])
        raise RuntimeError(f"{argv[0]} exited {result.returncode} after {seconds:.0f} s:\n{tail}")
    log(f"done in {seconds:.1f} s")
    return seconds


def slurm_argv(cluster: Cluster, targets: Sequence[str]) -> list[str]:
    """The SLURM run: the profile as it is, plus what this one small node needs."""
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    return [
        snakemake,
        *targets,  # first: --configfile takes several values
        "--workflow-profile",
        "profiles/slurm",
        *TINY,
        "--cores",
        str(cluster.cpus),  # what runs at once, and each job's threads, fit the node
        "--resources",
        f"mem_mb={cluster.memory_mb}",  # a group job's memory fits the node
        "--slurm-status-command",
        "squeue",  # no accounting storage here, so no sacct
        "--slurm-init-seconds-before-status-checks",
        "5",
        "--slurm-no-account",
        "--latency-wait",
        "5",  # one node, one file system
    ]


def run_locally(local: Path, folder: Path, targets: Sequence[str]) -> None:
    """The reference run: ``--cores 2`` with the default profile, in its own copy."""
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    seconds = timed_run(
        [snakemake, *targets, "--cores", "2", *TINY],  # targets first, as in slurm_argv
        local,
        run_env(local, dict(os.environ)),
        folder / "local.log",
    )
    log(f"local run {seconds:.1f} s")


def check(folder: Path, targets: Sequence[str], reference: Path | None = None) -> int:
    from hierbench.runtools.rundiff import compare_runs, software_environments

    if reference is not None and not (reference / TINY_RUN).is_dir():
        raise RuntimeError(f"--reference {reference}: no {TINY_RUN}/ folder (not a finished run)")
    # Both copies first: the runs see the same sources even if the checkout changes meanwhile.
    on_slurm = repo_copy(folder / "slurm")
    local = reference if reference is not None else repo_copy(folder / "local")
    with running_cluster(folder / "cluster") as cluster:
        slurm_s = timed_run(
            slurm_argv(cluster, targets),
            on_slurm,
            run_env(on_slurm, cluster.env),
            folder / "slurm.log",
        )
    if reference is None:
        run_locally(local, folder, targets)
    else:
        log(f"local reference: {reference} (not rerun)")
    diff = compare_runs(local, on_slurm, TINY_RUN)
    log(f"compared {diff.compared} files under {TINY_RUN}/ ({len(diff.exempt)} timing exceptions)")
    # A reference may hold more than the targets asked the SLURM run for; never less.
    only_local = diff.only_first if not targets or reference is None else []
    for label, paths in (
        ("only in the local run", only_local),
        ("only in the SLURM run", diff.only_second),
        ("different bytes", diff.differing),
    ):
        for path in paths:
            log(f"{label}: {path}")
    environments = software_environments(on_slurm, TINY_RUN)
    log(f"software environments in the SLURM run's provenance records: {len(environments)}")
    hierbench = str(Path(sys.executable).with_name("hierbench"))
    audit = subprocess.run(
        [hierbench, "audit", TINY_RUN], cwd=on_slurm, env=run_env(on_slurm, dict(os.environ))
    )
    log(f"SLURM run {slurm_s:.1f} s; audit exit {audit.returncode}")
    ok = (
        not (only_local or diff.only_second or diff.differing)
        and len(environments) == 1
        and audit.returncode == 0
    )
    log("PASS: the SLURM run matches the local run" if ok else "FAIL")
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--keep", type=Path, help="work in this folder and keep it")
    sub = parser.add_subparsers(dest="command", required=True)
    check_parser = sub.add_parser("check", parents=[common], help="tiny config: SLURM vs local")
    check_parser.add_argument("--target", action="append", default=[], help="only this file")
    check_parser.add_argument(
        "--reference", type=Path, help="a finished local tiny run to compare with (not rerun)"
    )
    check_parser.add_argument(
        "--dataset", help="only this dataset's artifacts (those of --reference, as targets)"
    )
    run_parser = sub.add_parser("run", parents=[common], help="a command against the cluster")
    run_parser.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)

    reason = ensure_packages()
    if reason is not None:
        print(f"SKIP: no SLURM test cluster on this machine: {reason}")
        return 0
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        folder_context = contextlib.nullcontext(str(args.keep))
    else:
        folder_context = tempfile.TemporaryDirectory(prefix="hierbench-cluster-")
    try:
        with folder_context as name:
            folder = Path(name).resolve()
            folder.chmod(0o755)  # munged refuses a socket below a folder others cannot search
            if args.command == "check":
                targets = list(args.target)
                if args.dataset:
                    if args.reference is None:
                        raise RuntimeError(
                            "--dataset needs --reference (its artifacts are the targets)"
                        )
                    from hierbench.runtools.rundiff import dataset_targets

                    targets += dataset_targets(args.reference.resolve(), TINY_RUN, args.dataset)
                return check(folder, targets, args.reference)
            command = [a for a in args.argv if a != "--"]
            with running_cluster(folder / "cluster") as cluster:
                return subprocess.run(command, env=cluster.env).returncode
    except (Interrupted, KeyboardInterrupt) as stop:
        log(f"interrupted ({stop or 'SIGINT'}); the daemons were stopped")
        return 130
    except (RuntimeError, ValueError) as error:
        log(f"error: {error}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
