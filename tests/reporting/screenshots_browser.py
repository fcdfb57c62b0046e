"""The pictures of docs/history.md, made by headless Chromium from a sample history:

    .venv/bin/python -m tests.reporting.screenshots_browser

writes docs/history-page.png (`eb history --html` over the sample) and
docs/html-report-history.png (report.html of a fourth run, with its sparklines and badges).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.reporting.history_sample import write_sample_history
from tests.reporting.test_history_pages import history_project

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def _eb(*args: str) -> None:
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": "/"}
    subprocess.run([sys.executable, "-m", "eval_banana", *args], check=False, env=env)


def _shoot(page: Path, out: Path, *, height: int) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        f"--window-size=1280,{height}",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(page.as_uri())
        driver.save_screenshot(str(out))
    finally:
        driver.quit()


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "sample"
        (root / ".eval-banana").mkdir(parents=True)
        (root / ".eval-banana" / "config.toml").write_text("")
        write_sample_history(folder=root / ".eval-banana" / "history", runs=40)
        page = Path(scratch) / "history.html"
        _eb("history", "--cwd", str(root), "--last", "40", "--html", str(page))
        _shoot(page, DOCS / "history-page.png", height=1000)

        project = history_project(Path(scratch) / "project", counters=Path(scratch) / "counts")
        for _ in range(4):
            _eb("run", "--cwd", str(project))
        pages = [run / "report.html" for run in (project / ".eval-banana" / "results").iterdir()]
        newest = max(pages, key=lambda one: one.stat().st_mtime_ns)
        _shoot(newest, DOCS / "html-report-history.png", height=720)


if __name__ == "__main__":
    main()
