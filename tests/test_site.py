"""The documentation site as a reader's browser shows it: built by mkdocs, then opened
by a headless Chromium (Debian's `chromium`, installed by `make test`), which must
render the front page and a reference page made from the code: a title, the
navigation, a table, and a screenshot that is not blank."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (make chromium installs Debian's)"
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    mkdocs = Path(sys.executable).parent / "mkdocs"
    subprocess.run(
        [
            str(mkdocs),
            "build",
            "--strict",
            "--quiet",
            "-f",
            str(ROOT / "mkdocs.yml"),
            "-d",
            str(out),
        ],
        check=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    return out


def browse(page: Path, profile: Path, *flags: str) -> str:
    """Chromium, headless and with no port open, on one page; what it printed. Stopped
    by its process group's id if it does not finish."""
    args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}"]
    with subprocess.Popen(
        [*args, *flags, page.as_uri()],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    ) as browser:
        try:
            out, _ = browser.communicate(timeout=120)
        finally:
            if browser.poll() is None:
                os.killpg(browser.pid, signal.SIGKILL)
                browser.wait()
    assert browser.returncode == 0
    return out


@pytest.mark.parametrize(
    ("page", "title", "shown"),
    [
        ("index.html", "optimist", "how it works"),
        ("reference/plugins/index.html", "Plugins - optimist", "NodeResourcesFit"),
    ],
)
def test_a_page_renders_with_its_title_navigation_and_content(site, tmp_path, page, title, shown):
    dom = browse(site / page, tmp_path / "profile", "--dump-dom")
    assert f"<title>{title}</title>" in dom
    assert 'class="md-nav' in dom and "Reference" in dom  # the navigation, every section
    assert shown in dom
    if page.startswith("reference/"):
        assert "<table" in dom
    shot = tmp_path / "shot.png"
    browse(site / page, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1280,900")
    with Image.open(shot) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 16, "the page rendered blank"
