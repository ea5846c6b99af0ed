"""What a test needs from outside the package: a git checkout (its .gitignore), .ci/run, the
browser test's selenium and Chromium. Where one is absent (an unpacked sdist, a `[test]`
install) the test is skipped, naming it; under CI, which has them all, it fails.

CI is read when this module is imported (at collection): tests/conftest.py clears CI for
each test, so that the plugin behaves the same on a laptop and in CI.
"""

import os
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
