import pytest

from pytest_gpuperf.hardware.profiles import BUILTIN, ProfileError, Registry, load_registry
from tests.fakes import RECORDED, gpu, snapshot

REQUIRED = {
    "a100-40gb",
    "a100-80gb",
    "h100",
    "h200",
    "l40s",
    "l4",
    "a10g",
    "rtx-6000-ada",
    "rtx-a6000",
    "t4",
    "cpu",
}


def test_builtin_profiles_cover_the_required_gpus():
    assert {p.name for p in BUILTIN} >= REQUIRED


@pytest.mark.parametrize(("name", "mib", "cc", "expected"), RECORDED)
def test_recorded_device_names_match_one_profile(name, mib, cc, expected):
    reg = Registry.builtin()
    g = gpu(name, mib, cc)
    matching = [p.name for p in reg.profiles.values() if p.matches_gpu(g)]
    assert matching == [expected]
    assert reg.match(snapshot(g)).name == expected
    assert reg.get(expected).compute_capability == f"{cc[0]}.{cc[1]}"


def test_cpu_snapshot_is_the_cpu_profile():
    assert Registry.builtin().match(snapshot()).name == "cpu"


def test_unknown_gpu_matches_nothing():
    assert Registry.builtin().match(snapshot(gpu("NVIDIA GeForce RTX 4090", 24564, (8, 9)))) is None


def test_mig_instance_matches_its_parent_card():
    inst = gpu(
        "NVIDIA A100-SXM4-40GB MIG 1g.5gb",
        4864,
        (8, 0),
        mig_profile="1g.5gb",
        parent_name="NVIDIA A100-SXM4-40GB",
        parent_memory_total=40960 * 1024**2,
    )
    assert Registry.builtin().match(snapshot(inst)).name == "a100-40gb"


def test_mig_slice_table_a100_40gb_seven_slices_expose_35_gb():
    a100 = Registry.builtin().get("a100-40gb")
    assert a100.mig_total_gib("1g.5gb") == 35
    assert a100.mig_total_gib("7g.40gb") == 40
    assert a100.mig_total_gib("9g.99gb") is None
    assert not Registry.builtin().get("l4").mig_capable


def test_unknown_profile_lists_the_known_ones():
    with pytest.raises(ProfileError) as info:
        Registry.builtin().get("b200")
    assert "unknown GPU profile 'b200'; did you mean 'h200'" in str(info.value)
    assert "a100-40gb" in str(info.value) and "h200" in str(info.value)


def test_an_unknown_profile_says_it_can_be_added_in_pyproject():
    with pytest.raises(ProfileError) as info:
        Registry.builtin().get("RTX4090")
    assert "a profile of your own can be added in pyproject.toml under [tool.gpuperf.profiles.rtx4090]" in str(
        info.value
    )


def test_a_family_name_on_a_cpu_machine_says_so_and_names_the_cpu_profile():
    cpu = snapshot()
    with pytest.raises(ProfileError) as info:
        Registry.builtin().get("a100", lambda: cpu)
    text = str(info.value)
    assert "'a100' is a family of GPU profiles (a100-40gb, a100-80gb), but this is a CPU machine (" in text
    assert "use --gpu-profile=cpu (its profile) or --gpu-profile=auto" in text
    assert "e.g. a100-40gb, and pass --gpuperf-allow-mismatch" in text


def test_names_are_case_insensitive_and_families_resolve():
    reg = Registry.builtin()
    assert reg.get("H200").name == "h200" and reg.get("RTX-6000-ADA").name == "rtx-6000-ada"
    assert reg.get("a100", lambda: snapshot(gpu("NVIDIA A100-SXM4-80GB", 81920, (8, 0)))).name == "a100-80gb"
    assert reg.get("A100", lambda: snapshot(gpu("NVIDIA A100-PCIE-40GB", 40960, (8, 0)))).name == "a100-40gb"
    with pytest.raises(ProfileError, match=r"'a100' is a family of GPU profiles \(a100-40gb, a100-80gb\): name the variant"):
        reg.get("a100")  # no device to decide by


def test_user_profiles_add_and_override(tmp_path):
    py = tmp_path / "pyproject.toml"
    py.write_text(
        """
[tool.gpuperf.profiles.rtx4090]
match = "RTX 4090"
memory_gib = 24
compute_capability = "8.9"
bf16 = true
price_per_hour = 0.69

[tool.gpuperf.profiles.h200]
price_per_hour = 3.5
mig = { "1g.18gb" = 7 }
"""
    )
    reg = load_registry(py)
    g = gpu("NVIDIA GeForce RTX 4090", 24564, (8, 9))
    assert reg.match(snapshot(g)).name == "rtx4090"
    h200 = reg.get("h200")
    assert h200.price_per_hour == 3.5
    assert h200.match == r"\bH200\b"  # inherited from the built-in
    assert [s.profile for s in h200.mig] == ["1g.18gb"]
    assert h200.source == str(py)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("[tool.gpuperf.profiles.x]\nmemory_gib = 24\n", "needs 'match'"),
        ('[tool.gpuperf.profiles.x]\nmatch = "("\n', "bad 'match' regex"),
        ('[tool.gpuperf.profiles.x]\nmatch = "X"\nmemory_gib = -1\n', "memory_gib must be"),
        (
            '[tool.gpuperf.profiles.x]\nmatch = "X"\ncompute_capability = 8\n',
            "compute_capability must be",
        ),
        ('[tool.gpuperf.profiles.x]\nmatch = "X"\nbf16 = "yes"\n', "bf16 must be true or false"),
        (
            '[tool.gpuperf.profiles.x]\nmatch = "X"\nnvlink_gbps = "fast"\n',
            "nvlink_gbps must be a non-negative number",
        ),
        ('[tool.gpuperf.profiles.h200]\nprice_per_hour = -4\n', "price_per_hour must be"),
        ('[tool.gpuperf.profiles.x]\nmatch = "X"\ncolour = "red"\n', "unknown key(s) colour"),
        ('[tool.gpuperf.profiles.x]\nmatch = "X"\nmig = { "huge" = 2 }\n', "mig entry 'huge'"),
        ("[tool.gpuperf]\nprofiles = 3\n", "must be a table"),
        ("[tool.gpuperf.profiles\n", "cannot read"),
    ],
)
def test_bad_user_profiles_name_the_file_and_key(tmp_path, body, fragment):
    py = tmp_path / "pyproject.toml"
    py.write_text(body)
    with pytest.raises(ProfileError) as info:
        load_registry(py)
    assert fragment in str(info.value)
    assert str(py) in str(info.value)
