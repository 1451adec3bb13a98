"""The tiny run's HTML report in a real browser: headless Chromium (Debian's, through Playwright)
opens it and visits every entry as a reader would (the menu, a category, a dataset, then the
entry's view and info buttons), each figure drawn from the very file the run made, the entries
being the files the workflow declares for the report (``report_declared``), and the page
raises no error and fetches nothing from outside itself.

Without Chromium (``apt-get install chromium``) the tests skip, unless
``HIERBENCH_REQUIRE_BROWSER=1`` (CI: ``.ci/run``) makes that a failure.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import re
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import pytest
from conftest import TINY
from playwright.sync_api import Browser, Locator, Page, sync_playwright
from report_declared import declared_report_files

CHROMIUM = Path("/usr/bin/chromium")
REQUIRE_BROWSER = "HIERBENCH_REQUIRE_BROWSER"
# Where Snakemake 9's report (a React page) puts what the walk clicks and reads: the navbar's
# breadcrumbs (home first; the current one, "grow", names a shown result's path) and its menus
# and results table; the content pane (an <img>, or an <iframe> for a PDF) is outside the navbar.
HOME = "nav nav ol > li:first-child a"
CURRENT = "nav nav ol > li.grow"
MENU_LINKS = "nav ul > li > a"
RESULT_ROWS = "nav table tbody tr"
TOGGLES = "nav fieldset"  # a results table's label toggle
CONTENT_IMAGE = "#app img:not(nav img)"
CONTENT_FRAME = "#app iframe"
DATA_URI = re.compile(r"data:(?P<mime>[^;,]+)(?:;[^;,]*)*;base64,(?P<data>.*)", re.DOTALL)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# The types Snakemake's report draws as an image (abstract_view_manager.js); PDF and HTML files
# it frames, any other file is a download link.
SNAKEMAKE_IMAGES = ("image/svg+xml", "image/png", "image/jpeg")
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:", "chrome:", "chrome-extension:")
SHOWN_TIMEOUT_MS = 30_000  # for a figure to be drawn after its view button is clicked


@dataclass(frozen=True)
class Shown:
    """One entry of the report as the browser showed it."""

    path: str  # as the entry's info shows it
    category: str
    subcategory: str
    view: str  # "image" or "frame" (a PDF, an HTML page) in the content pane, or "download"
    embedded: bytes  # the file the report holds for the entry
    drawn: list[tuple[int, int]]  # each image's natural size (the entry's, or its page's)


class Place(NamedTuple):
    """Where a results table is: its category and subcategory."""

    category: str
    subcategory: str
    subcategories: int  # in the category (one: the category opens the table at once)


@dataclass
class Walk:
    """What a walk through the report saw, and what the page did meanwhile."""

    entries: list[Shown] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # console errors, uncaught exceptions
    fetched: list[str] = field(default_factory=list)  # URLs other than the page and its data
    seconds: float = 0.0


@pytest.fixture(scope="session", autouse=True)
def chromium() -> Path:
    """Debian's Chromium; without it a skip, or a failure under HIERBENCH_REQUIRE_BROWSER=1
    (set up before the report is built, so a skip costs nothing)."""
    if CHROMIUM.is_file():
        return CHROMIUM
    reason = f"no Chromium at {CHROMIUM}: install it (apt-get install -y chromium)"
    if os.environ.get(REQUIRE_BROWSER) == "1":
        pytest.fail(f"{reason}; {REQUIRE_BROWSER}=1 asks for the browser tests", pytrace=False)
    pytest.skip(f"{reason} to run the report's browser test")


@pytest.fixture(scope="module")
def browser(chromium: Path) -> Iterator[Browser]:
    """Headless Chromium (Playwright downloads no browser of its own)."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(chromium))
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def report_walk(browser: Browser, tiny_report: Path) -> Walk:
    """Every entry of the tiny run's report, visited in Chromium (once per module)."""
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    walk = Walk()
    page.on("console", lambda message: _console_error(walk, message.type, message.text))
    page.on("pageerror", lambda error: walk.errors.append(f"uncaught: {error}"))
    page.on("request", lambda request: _outside_fetch(walk, request.url))
    start = time.perf_counter()
    page.goto(tiny_report.as_uri())
    page.locator(MENU_LINKS).first.wait_for()
    for category, subcategories in page.evaluate("categories").items():
        for subcategory in sorted(subcategories):
            place = Place(category, subcategory, len(subcategories))
            walk.entries.extend(_visit_rows(page, place))
    walk.seconds = time.perf_counter() - start
    page.close()
    return walk


def _console_error(walk: Walk, kind: str, text: str) -> None:
    """Keep a console message of type error."""
    if kind == "error":
        walk.errors.append(f"console: {text}")


def _outside_fetch(walk: Walk, url: str) -> None:
    """Keep a request for anything but the report file, the data it embeds and the browser's
    own pages (its PDF viewer)."""
    if not url.startswith(LOCAL_SCHEMES):
        walk.fetched.append(url)


def _open_list(page: Page, place: Place) -> Locator:
    """The rows of one results table, reached from the menu by clicks (the menu empties the
    content pane, so what a view button shows next is its entry's)."""
    page.locator(HOME).click()
    _menu_link(page, place.category).click()
    if place.subcategories > 1:  # with one, the category opens its results at once
        _menu_link(page, place.subcategory).click()
    rows = page.locator(RESULT_ROWS)
    rows.first.wait_for()
    if _content_source(page) is not None:
        raise AssertionError("the report's menu no longer empties the content pane")
    if page.locator(TOGGLES).count():
        raise AssertionError(
            f"{place.category}/{place.subcategory}: the table shows one of two entries by a "
            "label toggle (two labels, the second with two values), which this walk does not "
            "switch: give those report(...) entries other labels, or teach the walk toggles"
        )
    return rows


def _menu_link(page: Page, label: str) -> Locator:
    """The navbar's menu entry named ``label`` (exactly one)."""
    link = page.locator(MENU_LINKS).filter(has_text=re.compile(rf"^\s*{re.escape(label)}\s*$"))
    if link.count() != 1:
        raise AssertionError(f"the report's navbar has {link.count()} entries {label!r}")
    return link


def _visit_rows(page: Page, place: Place) -> list[Shown]:
    """Each row of one results table: its view button, then its info for the path."""
    shown = []
    for index in range(_open_list(page, place).count()):
        row = _open_list(page, place).nth(index)
        view, info = row.locator("td").last.locator("a").all()
        kind, embedded, drawn = _view(page, view)
        info.click()
        path = page.locator(CURRENT).inner_text().strip()
        shown.append(Shown(path, place.category, place.subcategory, kind, embedded, drawn))
    return shown


def _view(page: Page, button: Locator) -> tuple[str, bytes, list[tuple[int, int]]]:
    """What an entry's view button shows: an image (its drawn size), a frame (a PDF, or an
    HTML page with the drawn size of each of its images), or a download link."""
    if button.get_attribute("download") is not None:
        return "download", _decoded(button.get_attribute("href") or ""), []
    button.click()
    page.wait_for_function(
        "([image, frame]) => document.querySelector(image) || document.querySelector(frame)",
        arg=[CONTENT_IMAGE, CONTENT_FRAME],
        timeout=SHOWN_TIMEOUT_MS,
    )
    image = page.locator(CONTENT_IMAGE)
    if image.count():
        return "image", _decoded(image.get_attribute("src") or ""), [_drawn(image)]
    frame = page.locator(CONTENT_FRAME)
    embedded = _decoded(frame.get_attribute("src") or "")
    if embedded.startswith(b"%PDF-"):  # Chromium's own viewer draws it (not inspected)
        return "frame", embedded, []
    document = frame.element_handle().content_frame()
    document.wait_for_load_state()
    images = document.locator("img")
    return "frame", embedded, [_drawn(images.nth(i)) for i in range(images.count())]


def _drawn(image: Locator) -> tuple[int, int]:
    """An image's natural size once the browser decoded it; (0, 0) for a broken image."""
    size = image.evaluate(
        "img => img.decode().then(() => [img.naturalWidth, img.naturalHeight], () => [0, 0])"
    )
    return tuple(size)


def _content_source(page: Page) -> str | None:
    """The source of what the content pane shows now (None: no figure)."""
    return page.evaluate(
        "([image, frame]) => { const shown = document.querySelector(image) ||"
        " document.querySelector(frame); return shown === null ? null : shown.src; }",
        [CONTENT_IMAGE, CONTENT_FRAME],
    )


def _decoded(uri: str) -> bytes:
    """The bytes of a base64 data URI (Snakemake embeds every report file as one)."""
    match = DATA_URI.fullmatch(uri)
    if match is None:
        raise AssertionError(f"not a base64 data URI: {uri[:80]!r}")
    return base64.b64decode(match["data"])


def _png_size(data: bytes) -> tuple[int, int]:
    """A PNG's width and height, from its header."""
    assert data.startswith(PNG_SIGNATURE), "not a PNG"
    return struct.unpack(">II", data[16:24])


def _expected_view(path: str) -> str:
    """How Snakemake's report shows a file of this type: drawn, framed, or as a download."""
    mime, _ = mimetypes.guess_type(path)
    if mime in SNAKEMAKE_IMAGES:
        return "image"
    return "frame" if mime in ("application/pdf", "text/html") else "download"


def test_the_report_shows_each_declared_file_once_in_its_category(
    report_walk: Walk, tiny_report: Path
):
    declared = declared_report_files(tiny_report.parent, *TINY)
    assert any(path.endswith(".png") for path in declared), "the tiny run declares no figure"
    paths = [entry.path for entry in report_walk.entries]
    assert len(paths) == len(set(paths)), f"entries shown twice: {sorted(paths)}"
    shown = {entry.path: (entry.category, entry.subcategory) for entry in report_walk.entries}
    wanted = {path: (entry.category, entry.subcategory) for path, entry in declared.items()}
    missing = {path: declared[path].rule for path in wanted.keys() - shown.keys()}
    assert not missing, f"declared for the report (path: rule) but not shown: {missing}"
    elsewhere = {path: (place, wanted.get(path)) for path, place in shown.items()}
    wrong = {path: places for path, places in elsewhere.items() if places[0] != places[1]}
    assert not wrong, f"shown (category, dataset) vs declared (None: not declared): {wrong}"


def test_every_figure_is_drawn_from_the_file_the_run_made(report_walk: Walk, tiny_report: Path):
    repo = tiny_report.parent
    for entry in report_walk.entries:
        assert entry.view == _expected_view(entry.path), f"{entry.path} shown as {entry.view}"
        broken = [size for size in entry.drawn if 0 in size]
        assert not broken, f"{entry.path}: broken image(s) (drawn {entry.drawn})"
        assert entry.embedded == (repo / entry.path).read_bytes(), f"{entry.path}: other bytes"
        if entry.view == "image":
            assert len(entry.drawn) == 1, entry
        if entry.path.endswith(".png"):
            assert entry.drawn == [_png_size(entry.embedded)], f"{entry.path}: {entry.drawn}"
        if entry.path.endswith(".pdf"):
            pdf = entry.embedded
            assert pdf.startswith(b"%PDF-") and pdf.rstrip().endswith(b"%%EOF"), entry.path
    views = [entry.view for entry in report_walk.entries]
    assert views.count("image") and views.count("frame"), f"drawn and framed entries: {views}"


def test_the_report_page_raises_no_error_and_fetches_nothing(report_walk: Walk):
    assert report_walk.entries, "the walk visited no entry"
    assert not report_walk.errors, "\n".join(report_walk.errors)
    assert not report_walk.fetched, f"the report fetched {report_walk.fetched}"
