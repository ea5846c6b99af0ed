"""A pytest run that uses none of the plugin (no gpu_benchmark, marker or gpuperf option)
pays next to nothing for having it installed: it detects no device (no NVML, no torch, no
package versions) and imports none of the plugin's measuring, judging, baseline-file or
output modules. Structural: what the process imported, never a timing (the cost itself is
measured by tools/measure_plugin_cost.py, docs/performance.md)."""

import json

HEAVY = (
    "torch",
    "pynvml",
    "pytest_gpuperf.hardware.device",
    "pytest_gpuperf.hardware.emulation",
    "pytest_gpuperf.hardware.profiles",
    "pytest_gpuperf.hardware.marks",
    "pytest_gpuperf.measure.timing",
    "pytest_gpuperf.measure.bench",
    "pytest_gpuperf.judging",
    "pytest_gpuperf.paired",
    "pytest_gpuperf.baseline.store",
    "pytest_gpuperf.baseline.schema",
    "pytest_gpuperf.baseline.history",  # and with it the results model (core.results, stats)
    "pytest_gpuperf.core.results",
    "pytest_gpuperf.core.stats",
    "pytest_gpuperf.outputs",
    "pytest_gpuperf.history",  # only with --gpuperf-history
)

SPY = """
import json
import sys


def pytest_unconfigure(config):
    sess = config.pluginmanager.get_plugin("gpuperf-session")
    with open("imported.json", "w") as fh:
        json.dump({"modules": sorted(sys.modules), "detected": sess._snapshot is not None,
                   "loaded": sess is not None}, fh)
"""


def test_a_run_that_uses_no_plugin_feature_detects_no_device_and_imports_nothing_heavy(pytester):
    pytester.makeconftest(SPY)
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    seen = json.loads((pytester.path / "imported.json").read_text())
    assert seen["loaded"]  # the plugin was there
    assert not seen["detected"]  # no device detection: no NVML init, no package versions
    heavy = [m for m in seen["modules"] if m in HEAVY or m.startswith(tuple(h + "." for h in HEAVY))]
    assert heavy == []
