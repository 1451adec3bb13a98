"""``hierbench fetch`` against a local HTTP server serving a rendered archive (no network): a
good archive unpacks into place with its layout checked; a wrong checksum or a member that
climbs out of the destination is refused by name and leaves nothing unpacked; an interrupted
transfer resumes with a range request, or restarts when the server cannot resume."""

from __future__ import annotations

import hashlib
import io
import tarfile
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from table_collections import tiny_cub_folder

from hierbench.cli import main
from hierbench.data.fetch import CUB, FetchError, Release, download, fetch_release
from hierbench.data.layouts import read_cub


class ArchiveServer(BaseHTTPRequestHandler):
    """Serves ``payload`` at any path; honours ``Range`` when ``ranges`` is on; the first
    ``cut`` responses stop after half the body (the connection dropped)."""

    payload = b""
    ranges = True
    cut = 0
    requests: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        header = self.headers.get("Range")
        type(self).requests.append(header)
        start = int(header.removeprefix("bytes=").rstrip("-")) if header and self.ranges else 0
        body = self.payload[start:]
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if type(self).cut:
            type(self).cut -= 1
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.connection.shutdown(2)
            return
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def server() -> Iterator[str]:
    ArchiveServer.requests = []
    ArchiveServer.ranges, ArchiveServer.cut = True, 0
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), ArchiveServer)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/TINY.tgz"
    httpd.shutdown()


def _archive(tmp_path: Path, extra: tarfile.TarInfo | None = None) -> bytes:
    """A .tgz of a tiny CUB-layout folder TINY/ (and ``extra``, a crafted member)."""
    folder = tiny_cub_folder(tmp_path / "render" / "TINY")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(folder, arcname="TINY")
        if extra is not None:
            archive.addfile(extra, io.BytesIO(b"x" * extra.size))
    return buffer.getvalue()


def _release(url: str, payload: bytes) -> Release:
    """The tiny archive as a release: its MD5 and counts."""
    md5 = hashlib.md5(payload, usedforsecurity=False).hexdigest()
    return replace(CUB, url=url, md5=md5, folder="TINY", images=2, classes=2, train=1)


def test_a_good_archive_is_unpacked_checked_and_put_in_place(tmp_path: Path, server: str):
    ArchiveServer.payload = _archive(tmp_path)
    dest = tmp_path / "data"
    folder, counts = fetch_release(_release(server, ArchiveServer.payload), dest, progress=False)
    assert folder == dest / "TINY" and counts == {"images": 2, "classes": 2, "train": 1}
    assert len(read_cub(folder)) == 2
    assert sorted(p.name for p in dest.iterdir()) == ["TINY"]  # archive and staging gone
    again, _ = fetch_release(_release(server, ArchiveServer.payload), dest, progress=False)
    assert again == folder and len(ArchiveServer.requests) == 1  # already there: only checked


def test_a_wrong_checksum_is_refused_by_name_and_nothing_is_unpacked(tmp_path: Path, server: str):
    ArchiveServer.payload = _archive(tmp_path)
    release = replace(_release(server, ArchiveServer.payload), md5="0" * 32)
    dest = tmp_path / "data"
    with pytest.raises(FetchError, match=r"TINY.tgz: MD5 [0-9a-f]{32} is not the release's 0{32}"):
        fetch_release(release, dest, progress=False)
    assert not dest.exists()  # nothing left behind: not even the folder it made


def test_a_download_that_fails_leaves_no_folder_behind(tmp_path: Path):
    release = replace(CUB, url="http://127.0.0.1:9/CUB_200_2011.tgz")  # nothing listens there
    dest = tmp_path / "data/birds"
    with pytest.raises(FetchError):
        fetch_release(release, dest, progress=False)
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    ("name", "kind", "why"),
    [
        ("../escaped.txt", tarfile.REGTYPE, "would land outside the destination"),
        ("/tmp/absolute.txt", tarfile.REGTYPE, "would land outside the destination"),
        ("TINY/link", tarfile.SYMTYPE, "is a link"),
        ("TINY/device", tarfile.CHRTYPE, "is a device or FIFO"),
    ],
)
def test_a_member_outside_dest_or_a_link_or_device_is_refused(
    tmp_path: Path, server: str, name: str, kind: bytes, why: str
):
    member = tarfile.TarInfo(name)
    member.type = kind
    member.size = 1 if kind == tarfile.REGTYPE else 0
    member.linkname = "/etc/passwd" if kind == tarfile.SYMTYPE else ""
    ArchiveServer.payload = _archive(tmp_path, member)
    dest = tmp_path / "data"
    with pytest.raises(FetchError, match=f"member {name!r} {why}; nothing was unpacked"):
        fetch_release(_release(server, ArchiveServer.payload), dest, progress=False)
    assert list(dest.iterdir()) == [dest / "TINY.tgz"]  # the verified archive, nothing unpacked
    assert not (tmp_path / "escaped.txt").exists()


def test_an_interrupted_transfer_resumes_with_a_range_request(tmp_path: Path, server: str):
    ArchiveServer.payload = bytes(range(256)) * 4096  # 1 MiB
    ArchiveServer.cut = 1
    target = tmp_path / "file.bin"
    with pytest.raises(FetchError, match=r"stopped after 524,288 of 1,048,576 bytes.*resume"):
        download(server, target, progress=False)
    assert (tmp_path / "file.bin.part").stat().st_size == 524_288 and not target.exists()
    download(server, target, progress=False)
    assert target.read_bytes() == ArchiveServer.payload
    assert ArchiveServer.requests == [None, "bytes=524288-"]


def test_a_server_that_cannot_resume_restarts_the_transfer(tmp_path: Path, server: str):
    ArchiveServer.payload = bytes(range(256)) * 4096
    ArchiveServer.ranges, ArchiveServer.cut = False, 1
    target = tmp_path / "file.bin"
    with pytest.raises(FetchError, match="run the same command again"):
        download(server, target, progress=False)
    download(server, target, progress=False)
    assert target.read_bytes() == ArchiveServer.payload  # not the first half twice


def test_fetch_nabirds_says_where_to_get_it_and_how_to_check_it(capsys):
    assert main(["fetch", "nabirds", "my data"]) == 0
    out = capsys.readouterr().out
    assert "https://dl.allaboutbirds.org/nabirds" in out and "accept the terms" in out
    assert "tar -xzf nabirds.tar.gz -C 'my data'" in out  # pasted as printed
    assert "root: my data/nabirds" in out and "source: folder" in out
    assert "hierbench check-dataset CONFIG nabirds" in out and "48,562 images" in out


@pytest.mark.parametrize("dataset", ["cub", "nabirds"])
def test_fetch_without_a_destination_is_one_line(dataset: str, capsys):
    """Both datasets take DEST, the folder their release goes into."""
    assert main(["fetch", dataset]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"hierbench: error: fetch {dataset} needs DEST, the folder to unpack")
