"""What a test needs from outside the package: a git checkout (its .gitignore), .ci/run, the
browser test's selenium and Chromium. Where one is absent (an unpacked sdist, a `[test]`
install) the test is skipped, naming it; under CI, which has them all, it fails.

CI is read when this module is imported (at collection): tests/conftest.py clears CI for
each test, so that the plugin behaves the same on a laptop and in CI.
"""

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IN_CI = bool(os.environ.get("CI"))


def need(present: object, what: str) -> None:
    """Skip (fail under CI) unless `present`; `what` names the input."""
    if present:
        return
    if IN_CI:
        pytest.fail(f"CI must provide {what}")
    pytest.skip(f"needs {what}, absent here")


def schema_validator(name: str):
    """A draft 2020-12 validator of the shipped schema `name` ("baseline", "results",
    "history"), the schema itself checked first; skipped without jsonschema (the [test]
    extra), failed under CI."""
    import json
    from importlib.resources import files

    try:
        import jsonschema
    except ModuleNotFoundError:
        jsonschema = None
    need(jsonschema, "jsonschema (the [test] extra)")
    s = json.loads((files("pytest_gpuperf") / "schemas" / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(s)
    return jsonschema.Draft202012Validator(s)


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def need_a_browser():
    """Debian's Chromium and its driver, and selenium (the `[dev]` extra, not `[test]`):
    absent, the test is skipped; CI installs them all (.ci/run), and fails without them."""
    need(Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists(), "Debian's chromium and chromium-driver")
    try:
        import selenium.webdriver  # noqa: F401
    except ModuleNotFoundError:
        need(False, "selenium (the [dev] extra)")


def browser():
    """Headless Chromium through selenium, offline, its console log kept (the HTML report's
    and the history dashboard's browser tests)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1280,900"):  # fmt: skip
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
