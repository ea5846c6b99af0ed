"""The GitHub Actions workflow a user copies (docs/examples/gpuperf-gate.yml): GitHub's
schema accepts it (check-jsonschema, offline, with its vendored schema), every `pytest` and
`gpuperf` command in it parses with the plugin's real options and subcommands (so a renamed
option cannot leave it behind), and it keeps the conventions docs/gating.md describes."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_gpuperf.cli.main import build_parser

from .inputs import ROOT, need

WORKFLOW = ROOT / "docs" / "examples" / "gpuperf-gate.yml"
SCHEMA = "vendor.github-workflows"


def _lint(path: Path) -> subprocess.CompletedProcess[str]:
    need(importlib.util.find_spec("check_jsonschema"),
         "check-jsonschema, the GitHub workflow linter (in the [test] extra)")  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", SCHEMA, str(path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _yaml(text: str) -> Any:
    need(importlib.util.find_spec("yaml"), "PyYAML (in the [test] extra)")
    import yaml

    return yaml.safe_load(text)


def _workflow() -> dict[str, Any]:
    return _yaml(WORKFLOW.read_text(encoding="utf-8"))


def test_github_accepts_the_shipped_workflow():
    done = _lint(WORKFLOW)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_linter_refuses_a_broken_workflow(tmp_path):
    """The check can fail: a job without `runs-on` is no workflow GitHub runs."""
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  gate:\n    steps:\n      - run: pytest\n")
    done = _lint(bad)
    assert done.returncode == 1 and "runs-on" in done.stdout + done.stderr


# ------------------------------------------------------------ the commands it runs


def _expand(text: str, env: dict[str, str]) -> str:
    """The shell's view of a step's script: `${{ ... }}` as a placeholder word, `$VAR` and
    `${VAR}` from the workflow's, job's and step's env (else a placeholder)."""
    text = re.sub(r"\$\{\{.*?\}\}", "EXPR", text)
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: env.get(m[1], "VAR"), text)


def _commands(wf: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    """(job, step name, argv) of each command of every `run:` step."""
    out = []
    for job_name, job in wf["jobs"].items():
        for step in job["steps"]:
            if "run" not in step:
                continue
            env = {**wf.get("env", {}), **job.get("env", {}), **step.get("env", {})}
            script = _expand(step["run"].replace("\\\n", " "), {k: str(v) for k, v in env.items()})
            for line in script.splitlines():
                for part in re.split(r"&&|\|\||;", line):
                    argv = shlex.split(part)
                    if argv:
                        out.append((job_name, step.get("name", ""), argv))
    return out


def _pytest_args(argv: list[str]) -> list[str] | None:
    if Path(argv[0]).name == "pytest":
        return argv[1:]
    if Path(argv[0]).name.startswith("python") and argv[1:3] == ["-m", "pytest"]:
        return argv[3:]
    return None


def _parses_as_pytest(pytester: pytest.Pytester, args: list[str], where: str) -> None:
    """pytest with the plugin installed reads these arguments: an unknown option or a bad
    choice (`--gpuperf-baseline=comapre`) is a usage error, as it would be on the runner."""
    try:
        pytester.parseconfig(*args)
    except (pytest.UsageError, SystemExit) as exc:
        pytest.fail(f"{where}: pytest {shlex.join(args)}: {exc}")


def _check_commands(
    pytester: pytest.Pytester, capsys: Any, wf: dict[str, Any], name: str
) -> set[str]:
    """Parse each pytest and gpuperf command of `wf` as the runner would; fail naming the
    first that does not parse. Returns what ran: "pytest", gpuperf's subcommands."""
    seen = set()
    for job, step, argv in _commands(wf):
        where = f"{name}, job {job}, step {step!r}"
        args = _pytest_args(argv)
        if args is not None:
            _parses_as_pytest(pytester, args, where)
            seen.add("pytest")
        if Path(argv[0]).name != "gpuperf":
            continue
        try:
            parsed = build_parser().parse_args(argv[1:])
        except SystemExit:
            pytest.fail(f"{where}: {shlex.join(argv)}: {capsys.readouterr().err}")
        seen.add(" ".join(argv[1:3]) if parsed.command == "baseline" else parsed.command)
        if parsed.command in ("ab", "bisect"):
            _parses_as_pytest(pytester, [a for a in parsed.pytest_args if a != "--"], where)
    return seen


def test_every_command_parses_with_the_plugins_options(pytester, capsys):
    seen = _check_commands(pytester, capsys, _workflow(), WORKFLOW.name)
    # what the file is for: none of it may vanish unnoticed
    assert seen == {"pytest", "ab", "bisect", "baseline show", "history"}, seen


def test_the_workflow_steps_in_the_gating_docs_parse_too(pytester, capsys):
    """docs/gating.md shows steps of the workflow (a nightly save, an A/B): the same check."""
    text = (ROOT / "docs" / "gating.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    seen = set()
    for i, block in enumerate(blocks):
        wf = {"jobs": {"docs": {"steps": _yaml(block)}}}
        seen |= _check_commands(pytester, capsys, wf, f"docs/gating.md, yaml block {i + 1}")
    assert seen == {"pytest", "ab"}, seen


def test_an_option_the_plugin_lacks_is_caught(pytester):
    """The parse above can fail: a misspelled option is a usage error, named."""
    with pytest.raises(pytest.fail.Exception, match="--gpuperf-baselne-dir"):
        _parses_as_pytest(pytester, ["benchmarks", "--gpuperf-baselne-dir=/tmp/b"], "here")
    with pytest.raises(pytest.fail.Exception, match="comapre"):
        _parses_as_pytest(pytester, ["benchmarks", "--gpuperf-baseline=comapre"], "here")


def _steps_running(job: dict[str, Any], text: str) -> list[dict[str, Any]]:
    return [s for s in job["steps"] if text in s.get("run", "")]


def test_the_workflow_keeps_the_ci_conventions():
    """A GPU runner, a time limit and one benchmark job at a time on it; the results kept
    whatever happened; a missing baseline fails the gate; the baseline lives outside the
    checkout and is saved only on main, after a passing gate; the A/B's verdicts posted."""
    wf = _workflow()
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` as true
    assert {"schedule", "workflow_dispatch", "pull_request"} <= set(on)
    jobs = {k: v for k, v in wf["jobs"].items() if k != "history"}  # the GPU jobs
    assert set(wf["jobs"]) == {"nightly", "pull-request", "history"}
    for name, job in jobs.items():
        assert "self-hosted" in job["runs-on"] and job["timeout-minutes"] > 0, name
        assert job["concurrency"]["group"] and job["concurrency"]["cancel-in-progress"] is False
        uploads = [
            s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact")
        ]
        assert any(s.get("if") == "always()" and "RESULTS" in s["with"]["path"] for s in uploads), (
            name
        )
    assert len({j["concurrency"]["group"] for j in jobs.values()}) == 1  # one per runner

    nightly = jobs["nightly"]
    assert Path(wf["env"]["BASELINE_DIR"]).is_absolute()  # not in the checkout
    (gate,) = _steps_running(nightly, "--gpuperf-baseline=compare")
    (save,) = _steps_running(nightly, "--gpuperf-baseline=save")
    for step in (gate, save):
        assert '--gpuperf-baseline-dir="$BASELINE_DIR"' in step["run"]
    steps = nightly["steps"]
    assert steps.index(gate) < steps.index(save)
    assert save["if"] == "success() && github.ref == 'refs/heads/main'"
    caches = {s["uses"].split("@")[0]: s for s in steps if "actions/cache" in s.get("uses", "")}
    assert steps.index(caches["actions/cache/restore"]) < steps.index(gate)
    assert steps.index(caches["actions/cache/save"]) > steps.index(save)
    assert caches["actions/cache/save"]["if"] == "steps.save.outcome == 'success'"
    for cache in caches.values():
        assert cache["with"]["path"] == "${{ env.BASELINE_DIR }}"
    # a failed gate's regressed tests bisected on the same runner, the culprit in the summary
    (bisect,) = _steps_running(nightly, "gpuperf bisect")
    assert steps.index(gate) < steps.index(bisect) and gate["id"] == "gate"
    assert bisect["if"] == "failure() && steps.gate.outcome == 'failure'"
    assert '--from "$RESULTS/nightly.json"' in bisect["run"] and "--gpuperf-json=\"$RESULTS/nightly.json\"" in gate["run"]
    assert '"$RESULTS/bisect.md" >> "$GITHUB_STEP_SUMMARY"' in bisect["run"]

    pr = jobs["pull-request"]
    (ab,) = _steps_running(pr, "gpuperf ab")
    (comment,) = _steps_running(pr, "gh pr comment")
    assert '--markdown "$RESULTS/verdicts.md"' in ab["run"]
    assert 'cat "$RESULTS/verdicts.md"' in comment["run"]
    assert pr["permissions"]["pull-requests"] == "write"
    assert "head.repo.full_name == github.repository" in pr["if"]  # no fork's code on the GPU


# ------------------------------------------------------------ supply chain, one comment

PINNED = re.compile(r"^\s*(?:- )?uses: ([\w./-]+)@([0-9a-f]{40})  # v\d+\.\d+\.\d+$")


def test_every_action_is_pinned_by_commit_with_its_tag_named():
    """A tag can be moved to other code; a commit cannot (zizmor: unpinned-uses)."""
    text = WORKFLOW.read_text(encoding="utf-8")
    uses = [line for line in text.splitlines() if re.match(r"^\s*(?:- )?uses:", line)]
    assert len(uses) == 11
    assert [u for u in uses if not PINNED.match(u)] == []
    steps = [s for job in _workflow()["jobs"].values() for s in job["steps"]]
    assert len([s for s in steps if "uses" in s]) == len(uses)  # none written another way


def test_checkouts_keep_no_credentials():
    """zizmor: artipacked: the token stays out of .git/config, where the benchmarks' code
    (a pull request's, too) and an uploaded artifact could read it."""
    steps = [s for job in _workflow()["jobs"].values() for s in job["steps"]]
    checkouts = [s for s in steps if s.get("uses", "").startswith("actions/checkout@")]
    assert len(checkouts) == 4
    assert all(s["with"]["persist-credentials"] is False for s in checkouts)


FAKE_GH = """#!/usr/bin/env python3
import json, os, sys
state_path = os.environ["FAKE_GH_STATE"]
state = json.load(open(state_path))
args = sys.argv[1:]
state["calls"].append(args)
marker = os.environ["MARKER"]
if args[:2] == ["api", "--paginate"]:
    assert args[2] == "repos/o/r/issues/7/comments", args
    jq = args[args.index("--jq") + 1]
    assert jq == '.[] | select(.user.type == "Bot" and (.body | startswith("%s"))) | .id' % marker, jq
    for c in state["comments"]:
        if c["user"]["type"] == "Bot" and c["body"].startswith(marker):
            print(c["id"])
elif args[:3] == ["api", "--method", "PATCH"]:
    cid = int(args[3].rsplit("/", 1)[1])
    assert args[4] == "-F" and args[5].startswith("body=@")
    body = open(args[5][len("body=@"):]).read()
    for c in state["comments"]:
        if c["id"] == cid:
            c["body"] = body
elif args[:2] == ["pr", "comment"]:
    assert args[2] == "7" and args[3] == "--body-file"
    state["comments"].append({"id": 100 + len(state["comments"]), "user": {"type": "Bot"},
                              "body": open(args[4]).read()})
else:
    sys.exit("unexpected gh " + " ".join(args))
json.dump(state, open(state_path, "w"))
"""


def test_the_verdicts_are_one_comment_updated_in_place_on_each_push(tmp_path):
    """The comment step, run as the runner would (bash -e) against a fake `gh` that keeps
    the pull request's comments: the first push posts one, each later push edits it; a
    person's comment that quotes the marker is left alone."""
    pr = _workflow()["jobs"]["pull-request"]
    (step,) = _steps_running(pr, "gh pr comment")
    marker = step["env"]["MARKER"]
    assert marker.startswith("<!--") and marker.endswith("-->")  # hidden when rendered
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(FAKE_GH.replace("/usr/bin/env python3", sys.executable))
    (bin_dir / "gh").chmod(0o755)
    state = tmp_path / "state.json"
    person = {"id": 1, "user": {"type": "User"}, "body": f"{marker} quoted by a person"}
    state.write_text(json.dumps({"comments": [person], "calls": []}))
    (tmp_path / "results").mkdir()
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "FAKE_GH_STATE": str(state), "MARKER": marker,
           "PR": "7", "REPO": "o/r", "RESULTS": str(tmp_path / "results"),
           "RUNNER_TEMP": str(tmp_path), "GH_TOKEN": "x"}  # fmt: skip
    for push in ("first", "second", "third"):
        (tmp_path / "results" / "verdicts.md").write_text(f"verdicts of the {push} push\n")
        done = subprocess.run(["bash", "-e", "-c", step["run"]], env=env, capture_output=True,
                              text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    comments = json.loads(state.read_text())["comments"]
    assert comments[0] == person
    assert [c["body"] for c in comments[1:]] == [f"{marker}\nverdicts of the third push\n"]
    calls = [c[:3] for c in json.loads(state.read_text())["calls"]]
    assert [c for c in calls if c[0] == "pr"] == [["pr", "comment", "7"]]  # posted once
    assert sum(c[:3] == ["api", "--method", "PATCH"] for c in calls) == 2


def test_every_nightly_run_is_recorded_and_the_dashboard_published():
    """The gate and the save record into the history, checked out from the branch
    gpuperf-history; the dashboard is built whatever happened and uploaded; tonight's files
    are pushed by a job of its own, off the GPU runner (it runs none of the repository's
    code), the only one that may write: the benchmarks' job keeps read-only contents."""
    wf = _workflow()
    nightly, history = wf["jobs"]["nightly"], wf["jobs"]["history"]
    steps = nightly["steps"]
    (fetch,) = [s for s in steps if s.get("with", {}).get("ref") == "gpuperf-history"]
    assert fetch["continue-on-error"] is True  # none before the first night
    for mode in ("compare", "save"):
        (step,) = _steps_running(nightly, f"--gpuperf-baseline={mode}")
        assert '--gpuperf-history="$HISTORY"' in step["run"] and steps.index(fetch) < steps.index(step)
    (site,) = _steps_running(nightly, "gpuperf history")
    assert site["if"] == "always()" and 'gpuperf history "$HISTORY" -o "$DASHBOARD"' in site["run"]
    assert "{last_good}...{first_bad}" in site["run"]
    (upload,) = [s for s in steps if s.get("with", {}).get("name") == "gpuperf-dashboard"]
    assert upload["if"] == "always()" and upload["with"]["path"] == "${{ env.DASHBOARD }}/"
    assert steps.index(site) < steps.index(upload)
    assert wf["permissions"] == {"contents": "read"} and "permissions" not in nightly
    assert history["needs"] == "nightly" and "self-hosted" not in history["runs-on"]
    assert history["permissions"] == {"contents": "write"}
    (push,) = _steps_running(history, "git push")
    assert "HEAD:gpuperf-history" in push["run"] and "--orphan gpuperf-history" in push["run"]
