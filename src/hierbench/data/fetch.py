"""``hierbench fetch``: the real data in one command where its licence allows.

CUB-200-2011 comes from its official archive: downloaded with progress (an interrupted transfer
resumes from its ``.part`` file, or restarts when the server cannot resume), its MD5 checked,
unpacked into a staging folder beside the destination (a member that is a link or a device,
or that would land outside the destination, is refused by name), its layout checked against
the release's counts, and only then renamed into place. A wrong checksum removes the archive
and unpacks nothing. NABirds needs its terms accepted by a person, so it is only described;
``hierbench check-dataset`` verifies a downloaded copy against its release's counts.
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pandas as pd
from tqdm import tqdm

from hierbench.data.layouts import read_cub, read_nabirds
from hierbench.protocol import LAYOUT_FOLDERS

CHUNK = 1 << 20
TIMEOUT_S = 60


class FetchError(ValueError):
    """A download, checksum, archive or layout the fetch cannot accept; the message names it."""


@dataclass(frozen=True)
class Release:
    """A dataset release: where its archive is, its checksum, the folder it unpacks to, its
    reader and the counts its layout must have."""

    name: str
    url: str
    md5: str
    folder: str
    read: Callable[[Path], pd.DataFrame]
    images: int
    classes: int
    train: int | None = None

    @property
    def archive(self) -> str:
        return PurePosixPath(self.url).name


CUB = Release(
    name="cub",
    url=f"https://data.caltech.edu/records/65de6-vp158/files/{LAYOUT_FOLDERS['cub']}.tgz",
    md5="97eceeb196236b17998738112f37df78",
    folder=LAYOUT_FOLDERS["cub"],
    read=read_cub,
    images=11_788,
    classes=200,
    train=5_994,
)
NABIRDS = Release(
    name="nabirds",
    url="https://dl.allaboutbirds.org/nabirds",
    md5="",
    folder=LAYOUT_FOLDERS["nabirds"],
    read=read_nabirds,
    images=48_562,
    classes=555,
)


def nabirds_steps(dest: Path) -> str:
    """How a person gets NABirds into ``dest`` (its terms must be accepted by them), with the
    commands and config lines for that folder."""
    folder = dest / NABIRDS.folder
    return (
        "NABirds is distributed by the Cornell Lab of Ornithology under terms a person must "
        "accept:\n"
        f"  1. open {NABIRDS.url}, accept the terms and download nabirds.tar.gz\n"
        f"  2. unpack it: mkdir -p {shlex.quote(str(dest))} && tar -xzf nabirds.tar.gz -C "
        f"{shlex.quote(str(dest))} (it holds {folder.as_posix()}/)\n"
        "  3. point the config at it:\n"
        + "\n".join(f"       {line}" for line in config_lines(NABIRDS, folder))
        + "\n  4. verify the copy: hierbench check-dataset CONFIG nabirds "
        f"(the release has {NABIRDS.images:,} images of {NABIRDS.classes} leaf classes)"
    )


def download(url: str, target: Path, *, progress: bool = True) -> Path:
    """Download ``url`` to ``target`` through ``target.part``: a partial file is resumed with
    an HTTP range request, or restarted when the server sends the whole file instead. A
    transfer that ends short leaves the ``.part`` file and raises, so a rerun resumes."""
    part = target.with_name(target.name + ".part")
    start = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={start}-"} if start else {}
    try:
        response = urllib.request.urlopen(
            urllib.request.Request(url, headers=headers), timeout=TIMEOUT_S
        )
    except urllib.error.HTTPError as error:
        if error.code == 416 and start:  # nothing left to send: the part is whole
            part.rename(target)
            return target
        raise FetchError(f"{url}: the server answered {error.code} {error.reason}") from error
    except (urllib.error.URLError, TimeoutError) as error:
        raise FetchError(f"{url}: cannot connect ({error}); check the network and retry") from error
    with response:
        if start and response.status != 206:
            start = 0  # the server ignored the range: restart from the first byte
        length = response.headers.get("Content-Length")
        total = start + int(length) if length is not None else None
        written = start
        with (
            open(part, "ab" if start else "wb") as out,
            tqdm(
                total=total,
                initial=start,
                unit="B",
                unit_scale=True,
                desc=target.name,
                disable=not progress,
            ) as bar,
        ):
            try:
                for chunk in iter(lambda: response.read(CHUNK), b""):
                    out.write(chunk)
                    written += len(chunk)
                    bar.update(len(chunk))
            except (OSError, urllib.error.URLError) as error:
                raise _interrupted(url, part, written, total) from error
    if total is not None and written < total:
        raise _interrupted(url, part, written, total)
    part.rename(target)
    return target


def _interrupted(url: str, part: Path, written: int, total: int | None) -> FetchError:
    """The error of a transfer that ended early (the part file stays for the resume)."""
    of = f" of {total:,}" if total is not None else ""
    return FetchError(
        f"{url}: the transfer stopped after {written:,}{of} bytes; {part} is kept: run the "
        "same command again to resume"
    )


def md5_of(path: Path) -> str:
    """The MD5 of a file, read in chunks."""
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_md5(path: Path, expected: str) -> None:
    """Refuse (and remove) an archive whose MD5 is not the release's."""
    found = md5_of(path)
    if found != expected:
        path.unlink()
        raise FetchError(
            f"{path}: MD5 {found} is not the release's {expected}; the archive was removed and "
            "nothing unpacked (a corrupted or different file: run again to download it anew)"
        )


def safe_members(archive: tarfile.TarFile, where: Path) -> list[tarfile.TarInfo]:
    """Every member of the archive, refusing by name one that is a link, a device or a FIFO,
    or whose path is absolute or climbs out of the destination."""
    members = archive.getmembers()
    for member in members:
        path = PurePosixPath(member.name)
        if member.issym() or member.islnk():
            why = "is a link"
        elif member.isdev() or member.isfifo():
            why = "is a device or FIFO"
        elif path.is_absolute() or ".." in path.parts:
            why = "would land outside the destination"
        else:
            continue
        raise FetchError(f"{where}: member {member.name!r} {why}; nothing was unpacked")
    return members


def unpack(archive_path: Path, staging: Path) -> None:
    """Extract every (checked) member into ``staging`` with tarfile's data filter."""
    try:
        with tarfile.open(archive_path) as archive:
            members = safe_members(archive, archive_path)
            archive.extractall(staging, members=members, filter="data")
    except tarfile.TarError as error:
        raise FetchError(f"{archive_path}: not a readable archive ({error})") from error


def layout_counts(release: Release, root: Path) -> dict[str, int]:
    """Images, classes (with images) and official-train images of a folder, read by the
    release's reader (which names any flaw of the layout)."""
    table = release.read(root)
    return {
        "images": len(table),
        "classes": int(table["class_id"].nunique()),
        "train": int(table["is_train"].sum()),
    }


def check_release_counts(release: Release, root: Path) -> dict[str, int]:
    """The counts of ``root``, which must be the release's."""
    counts = layout_counts(release, root)
    expected = {"images": release.images, "classes": release.classes, "train": release.train}
    wrong = [
        f"{key} {counts[key]:,} (the release has {value:,})"
        for key, value in expected.items()
        if value is not None and counts[key] != value
    ]
    if wrong:
        raise FetchError(f"{root}: not the {release.name} release: {'; '.join(wrong)}")
    return counts


def fetch_release(
    release: Release, dest: Path, *, progress: bool = True
) -> tuple[Path, dict[str, int]]:
    """Download, verify, unpack and check a release into ``dest/<folder>``; a folder already
    there is only checked. Returns the folder and its counts. A failure leaves no folder this
    call made empty behind (a partly downloaded archive stays, for the next call to resume)."""
    final = dest / release.folder
    if final.exists():
        return final, check_release_counts(release, final)
    made = [folder for folder in (dest, *dest.parents) if not folder.exists()]
    dest.mkdir(parents=True, exist_ok=True)
    try:
        return _fetch_into(release, dest, final, progress)
    except BaseException:
        for folder in made:  # the deepest first
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        raise


def _fetch_into(
    release: Release, dest: Path, final: Path, progress: bool
) -> tuple[Path, dict[str, int]]:
    """Download (or resume), verify, unpack and check a release into ``final``."""
    archive = dest / release.archive
    if not archive.exists():
        download(release.url, archive, progress=progress)
    verify_md5(archive, release.md5)
    staging = Path(tempfile.mkdtemp(prefix=f".{release.folder}.", suffix=".partial", dir=dest))
    try:
        unpack(archive, staging)
        unpacked = staging / release.folder
        if not unpacked.is_dir():
            raise FetchError(f"{archive}: holds no {release.folder}/ folder")
        counts = check_release_counts(release, unpacked)
        unpacked.rename(final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    archive.unlink()
    return final, counts


def config_lines(release: Release, folder: Path) -> list[str]:
    """The config lines that point a run at the fetched folder."""
    return [
        "datasets:",
        f"  {release.name}:",
        "    source: folder",
        f"    root: {folder.as_posix()}",
    ]
