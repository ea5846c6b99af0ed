"""Hooks where users decide (hookspec.py): extra environment fields, and what makes a
baseline comparable with a run (issue #22). Real pytest sessions on the virtual clock."""

import json

from .gateproject import FAST, saved

HOOKS = """

def pytest_gpuperf_environment(config, environment):
    import os

    environment["governor"] = os.environ.get("GOVERNOR", "performance")


def pytest_gpuperf_incomparable(config, baseline_env, current_env):
    import os

    if os.environ.get("FORCE_COMPARABLE"):
        return ""  # comparable, whatever the built-in rule says
    b, c = baseline_env.get("governor"), current_env.get("governor")
    if b != c:
        return f"governor differs: baseline {b}, now {c}"
    return None  # no opinion: the built-in rule decides
"""


def with_hooks(project):
    conftest = project.path / "conftest.py"
    project.makeconftest(conftest.read_text() + HOOKS)
    return project


def statuses(project, *args):
    project.runpytest(*FAST, "--gpuperf-json=run.json", *args)
    data = json.loads((project.path / "run.json").read_text())
    return {r["key"]: r["verdicts"]["throughput"] for r in data["results"]}


def test_a_users_environment_field_is_recorded_with_the_baseline(project):
    data = saved(with_hooks(project))
    for entry in data["entries"].values():
        assert entry["environment"]["governor"] == "performance"
        assert entry["environment"]["gpu"].startswith("cpu")  # the built-in fields stay


def test_a_users_rule_makes_a_run_incomparable(project, monkeypatch):
    saved(with_hooks(project))
    assert {v["status"] for v in statuses(project).values()} != {"incomparable"}
    monkeypatch.setenv("GOVERNOR", "powersave")
    verdicts = statuses(project)
    assert {v["status"] for v in verdicts.values()} == {"incomparable"}
    assert all(
        "governor differs: baseline performance, now powersave" in v["reason"]
        for v in verdicts.values()
    )


def test_a_users_rule_can_declare_comparable_what_the_built_in_rule_would_not(project, monkeypatch):
    saved(with_hooks(project))
    path = project.path / "baselines" / "cpu.json"
    data = json.loads(path.read_text())
    for entry in data["entries"].values():
        entry["environment"]["torch"] = "1.0.0"  # a major version apart: incomparable
    path.write_text(json.dumps(data))
    built_in = statuses(project)
    assert {v["status"] for v in built_in.values()} == {"incomparable"}
    assert all("torch major version differs" in v["reason"] for v in built_in.values())
    monkeypatch.setenv("FORCE_COMPARABLE", "1")
    assert "incomparable" not in {v["status"] for v in statuses(project).values()}


def test_an_environment_value_that_cannot_be_saved_is_a_usage_error(project):
    project.makeconftest(
        (project.path / "conftest.py").read_text()
        + "\n\ndef pytest_gpuperf_environment(config, environment):\n"
        "    environment['when'] = object()\n"
    )
    result = project.runpytest(*FAST, "--gpuperf-baseline=save")
    assert result.ret == 4  # a usage error
    assert "pytest_gpuperf_environment: environment['when'] is a object" in (
        result.stdout.str() + result.stderr.str()
    )
    assert not (project.path / "baselines" / "cpu.json").exists()
