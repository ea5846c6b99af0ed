"""JUnit XML (outputs/junit.py, plugin/junit.py): the plugin's properties validate against
pytest's own xunit2 schema (tests/data/junit-10.xsd, from pytest's test suite; its source is
in junit-10.xsd.SOURCE) and sit in the testcase under xunit1, as `record_property` puts them."""

import importlib.util
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_gpuperf.outputs.junit import split, suite_level

from .gateproject import FAST
from .inputs import need

XSD = Path(__file__).parent / "data" / "junit-10.xsd"
SPIN = "gpuperf:test_b.py::test_spin"


def schema():
    need(importlib.util.find_spec("xmlschema"), "xmlschema, the XML Schema validator (in the [test] extra)")
    import xmlschema

    return xmlschema.XMLSchema(str(XSD))


def props(node):
    return {p.get("name"): p.get("value") for p in node.findall("properties/property")}


def test_the_family_decides_where_properties_go():
    assert suite_level("xunit2") and not suite_level("xunit1") and not suite_level("legacy")
    ours, others = split([("gpuperf:t::a", "1"), ("mine", 2), ("gpuperf:t::a:verdict", "new")])
    assert ours == [("gpuperf:t::a", "1"), ("gpuperf:t::a:verdict", "new")] and others == [("mine", 2)]


@pytest.mark.parametrize(
    "extra", [[], pytest.param(["-n", "2"], marks=pytest.mark.slow)], ids=["in-process", "xdist"]
)
def test_xunit2_the_default_validates_against_pytests_schema(project, extra):
    check = schema()
    r = project.runpytest(*FAST, "--junitxml=j.xml", "-W", "error::pytest.PytestWarning", *extra)
    r.assert_outcomes(passed=2)
    check.validate(str(project.path / "j.xml"))  # raises, naming the element, where invalid
    suite = ET.parse(project.path / "j.xml").getroot().find("testsuite")
    found = props(suite)
    assert float(found[f"{SPIN}:tokens/s"]) > 0
    assert "tokens/s" in found[SPIN]  # the headline
    assert {p.removeprefix("gpuperf:test_b.py::").split(":")[0] for p in found} == {"test_spin", "test_other"}
    assert all(not props(case) for case in suite.iter("testcase"))


def test_xunit1_keeps_them_in_the_testcase_as_record_property_does(project):
    check = schema()
    project.makeconftest(  # a user's own property: theirs, left where it is
        "def pytest_runtest_setup(item):\n    item.user_properties.append(('mine', 'kept'))\n"
    )
    r = project.runpytest(*FAST, "--junitxml=j.xml", "-o", "junit_family=xunit1")
    r.assert_outcomes(passed=2)
    root = ET.parse(project.path / "j.xml").getroot()
    suite = root.find("testsuite")
    assert not props(suite)
    case = next(c for c in suite.iter("testcase") if c.get("name") == "test_spin")
    assert float(props(case)[f"{SPIN}:tokens/s"]) > 0 and props(case)["mine"] == "kept"
    # valid but for what xunit1 adds to xunit2: testcase file/line attributes and properties
    for c in suite.iter("testcase"):
        c.attrib.pop("file", None)
        c.attrib.pop("line", None)
        for p in c.findall("properties"):
            c.remove(p)
    assert check.is_valid(ET.tostring(root, encoding="unicode"))
