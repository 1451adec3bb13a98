"""The newcomer's path, shared by the tests that walk it: a wheel built from a copy of the
repository, installed into a fresh venv with no checkout left, a collection of one's own under a
folder whose name holds a space, and every command started from a folder other than the
config's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

# The collection: families / genera / species, each species with this many images.
FAMILIES, GENERA, SPECIES, IMAGES = 3, 2, 2, 6


def fresh_venv(folder: Path) -> Path:
    """A new venv whose dependencies are this environment's (a path entry: its editable
    hierbench is not), with the `snakemake` command pip would have put in its bin/."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin/python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    snakemake = folder / "bin/snakemake"
    snakemake.write_text(
        f"#!{python}\nimport sys\nfrom snakemake.cli import main\nsys.exit(main())\n"
    )
    snakemake.chmod(0o755)
    return folder


def install_wheel(repo_copy: Path, folder: Path) -> Path:
    """Build the wheel of ``repo_copy`` into ``folder/dist``, install it into a fresh venv at
    ``folder/venv`` and remove the copy, so nothing can be read from a checkout. Returns the
    venv."""
    dist = folder / "dist"
    pip = [sys.executable, "-m", "pip", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(repo_copy)],
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("hierbench-*.whl")
    venv = fresh_venv(folder / "venv")
    into_venv = [*pip, "--python", str(venv / "bin/python")]
    subprocess.run(
        [*into_venv, "install", "--no-deps", str(wheel)], check=True, capture_output=True
    )
    shutil.rmtree(repo_copy)
    return venv


def command_env(venv: Path) -> dict[str, str]:
    """The environment of a user of that venv: its bin/ first on the path, no PYTHONPATH."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        VIRTUAL_ENV=str(venv),
        HF_HUB_OFFLINE="1",
        PYTHONHASHSEED="0",
    )
    return env


def run_hierbench(
    venv: Path, cwd: Path, *args: str, timeout: float = 1200
) -> subprocess.CompletedProcess[str]:
    """The venv's `hierbench` command, run in ``cwd``."""
    return subprocess.run(
        [str(venv / "bin/hierbench"), *args],
        cwd=cwd,
        env=command_env(venv),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def write_collection(folder: Path, seed: int = 0) -> Path:
    """A small collection of one's own: FOLDER/<family>/<genus>/<species>/<n>.jpg, each species
    a colour of its own with noise (3 × 2 × 2 species, 6 images each)."""
    rng = np.random.default_rng(seed)
    for family in range(FAMILIES):
        for genus in range(GENERA):
            for species in range(SPECIES):
                leaf = (
                    folder
                    / f"family_{family}"
                    / f"genus_{family}{genus}"
                    / (f"species_{family}{genus}{species}")
                )
                leaf.mkdir(parents=True)
                colour = np.array([80 * family, 120 * genus, 200 * species])
                for image in range(IMAGES):
                    noise = rng.integers(0, 60, (48, 48, 3))
                    pixels = np.clip(colour + noise, 0, 255).astype(np.uint8)
                    Image.fromarray(pixels).save(leaf / f"{image}.jpg")
    return folder


@dataclass(frozen=True)
class Newcomer:
    """A user with the wheel installed, a collection under a folder with a space, and a
    terminal open in another folder."""

    venv: Path
    home: Path  # ".../my beetles": holds the collection and the user's projects
    photos: Path  # the image tree
    elsewhere: Path  # where the commands are typed (neither the config's folder nor a checkout)

    def hierbench(
        self, *args: str, cwd: Path | None = None, timeout: float = 1200
    ) -> subprocess.CompletedProcess[str]:
        """``hierbench ARGS`` typed in ``cwd`` (default: the other folder)."""
        return run_hierbench(self.venv, cwd or self.elsewhere, *args, timeout=timeout)

    def bash(self, script: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
        """A shell script typed in the other folder, ``~`` being the folder that holds
        ``my beetles/`` (as a guide's blocks run: ``set -euo pipefail``)."""
        env = {**command_env(self.venv), "HOME": str(self.home.parent)}
        return subprocess.run(
            ["bash", "-c", f"set -euo pipefail\n{script}\n"],
            cwd=self.elsewhere,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def project(self, name: str, *options: str) -> Path:
        """``init-dataset`` of the collection into ``home/name`` (options passed on); its
        config's path. A failure is an assertion naming the command's output."""
        out = self.home / name
        made = self.hierbench("init-dataset", str(self.photos), "--out", str(out), *options)
        assert made.returncode == 0, made.stderr + made.stdout
        return out / "config.yaml"
