"""A headless Chromium for the report's browser tests, driven with Selenium through the
system's chromedriver (Debian's ``chromium`` and ``chromium-driver``; nothing is downloaded).

:func:`browser_or_skip` gives a driver, or skips the test with the reason when Selenium,
Chromium or chromedriver is missing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

import pytest

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
DRIVER_CANDIDATES = ("/usr/bin/chromedriver",)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,900",
)


def _first(paths: tuple[str, ...], env: str) -> str | None:
    chosen = os.environ.get(env)
    if chosen:
        return chosen if os.path.exists(chosen) else None
    return next((p for p in paths if os.path.exists(p)), None)


def browser_or_skip(profile_dir: str | None = None) -> Any:
    """A headless Chromium WebDriver (the caller quits it)."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (pip install 'delegate-lens[report-tests]')")
    chromium = _first(CHROMIUM_CANDIDATES, "DL_CHROMIUM")
    driver_path = _first(DRIVER_CANDIDATES, "DL_CHROMEDRIVER") or shutil.which("chromedriver")
    if chromium is None:
        pytest.skip("Chromium is missing (Debian: apt-get install chromium chromium-driver)")
    if driver_path is None:
        pytest.skip("chromedriver is missing (Debian: apt-get install chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(
        f"--user-data-dir={profile_dir or tempfile.mkdtemp(prefix='dl-chromium-')}"
    )
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=driver_path), options=options)


def console_messages(driver: Any) -> list[str]:
    """Console errors and warnings logged since the last call."""
    return [
        entry["message"]
        for entry in driver.get_log("browser")
        if entry["level"] in ("SEVERE", "WARNING")
    ]
