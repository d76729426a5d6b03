"""A real browser for the web page's tests: Debian's chromium, headless, driven through
chromium-driver with Selenium (``scripts/test`` and ``.ci/run`` install both)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
DRIVER_CANDIDATES = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")


def _first(candidates: tuple[str, ...], name: str) -> str:
    for path in candidates:
        if os.path.exists(path):
            return path
    found = shutil.which(name)
    if found:
        return found
    raise RuntimeError(
        f"{name} is not installed; run .ci/run or `apt-get install chromium chromium-driver`"
    )


def start_chromium(profile: Path) -> webdriver.Chrome:
    """Headless chromium with a profile of its own in ``profile`` (the test's directory)."""
    options = webdriver.ChromeOptions()
    options.binary_location = _first(CHROMIUM_CANDIDATES, "chromium")
    for argument in (
        "--headless=new",
        "--no-sandbox",  # the tests may run as root, where chromium's sandbox refuses
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        "--window-size=1280,1000",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(argument)
    service = Service(executable_path=_first(DRIVER_CANDIDATES, "chromedriver"))
    return webdriver.Chrome(options=options, service=service)


def artifacts_dir() -> Path:
    """Where the browser tests leave what a person reviews (screenshots of each page):
    ``$REPOSYNC_TEST_ARTIFACTS``, else ``tests/.artifacts`` (git-ignored); CI keeps it."""
    configured = os.environ.get("REPOSYNC_TEST_ARTIFACTS")
    folder = Path(configured) if configured else Path(__file__).parent / ".artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def screenshot(driver: webdriver.Chrome, name: str, *, whole: bool = True) -> Path:
    """A PNG of the page as shown now, named ``<name>.png`` in ``artifacts_dir()``: the
    whole page (the window grown to its height, up to 8,000 pixels, then put back), or
    with ``whole=False`` the first screen, what a person sees on opening it."""
    width, height = driver.get_window_size()["width"], driver.get_window_size()["height"]
    full = driver.execute_script("return document.documentElement.scrollHeight")
    if whole:
        driver.set_window_size(width, min(max(int(full), height), 8000))
    path = artifacts_dir() / f"{name}.png"
    try:
        if not driver.save_screenshot(str(path)):
            raise RuntimeError(f"chromium made no screenshot of {name}")
    finally:
        driver.set_window_size(width, height)
    return path
