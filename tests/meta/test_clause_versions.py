"""The clause set of each suite version, and the pin that judges a storage by one of them.

``ckptconform.clause_versions`` says which version introduced each clause and which versions
tightened it. These tests hold it to the history (the CHANGELOG, and the catalogs of the
releases where the clone has their commits) and check ``--clauses-as-of`` end to end: a broken
implementation that breaks only a clause newer than the pin reports WARN and exits 0; with the
pin moved past that clause it reports FAIL and exits 1; the ini key and the target's
declaration pin the same way; an unknown version is a usage error.
"""

from __future__ import annotations

import re
import subprocess
import tomllib

import pytest

import ckptconform
import ckptstore
from ckptconform.clause_versions import INTRODUCED, TIGHTENED, VERSIONS, newer_than
from ckptconform.clauses import CLAUSES
from tests.meta.suite_runner import REPO, run_suite

#: The commit of each released clause set (docs/CHANGELOG.md names the versions).
RELEASE_COMMITS = {"0.1.0": "44e00ba", "0.2.0": "df62d1a"}
#: A broken implementation that breaks only STR-16, introduced in 0.3.0.
NEWER_ONLY = "reads_any_size"


def test_every_version_names_the_same_number():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    versions = {
        "pyproject.toml": pyproject["project"]["version"],
        "ckptstore": ckptstore.__version__,
        "ckptconform": ckptconform.__version__,
        "last clause set": VERSIONS[-1],
    }
    assert len(set(versions.values())) == 1, versions


def test_every_clause_has_one_introducing_version():
    for cid, clause in CLAUSES.items():
        assert clause.since in VERSIONS, cid
        assert [v for v, ids in INTRODUCED.items() if cid in ids] == [clause.since], cid
        assert all(VERSIONS.index(v) > VERSIONS.index(clause.since) for v in clause.tightened)


def _changelog_sections() -> dict[str, str]:
    text = (REPO / "docs" / "CHANGELOG.md").read_text(encoding="utf-8")
    parts = re.split(r"^## (\d+\.\d+\.\d+)\b.*$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _listed(section: str, heading: str) -> set[str]:
    """The clause ids under ``heading`` of a CHANGELOG section: its bullets or its run-on line."""
    match = re.search(rf"^{heading}[^\n]*:\n?(.*?)(?:\n\n|\Z)", section, re.MULTILINE | re.DOTALL)
    if match is None:
        return set()
    return set(re.findall(r"\b[A-Z]{2,4}-\d+\b", match.group(1)))


def test_the_changelog_lists_what_each_version_added_and_tightened():
    sections = _changelog_sections()
    assert set(sections) == set(VERSIONS), f"CHANGELOG versions {sorted(sections)}"
    for version in VERSIONS[1:]:
        added = _listed(sections[version], "Added, MUST") | _listed(
            sections[version], "Added, SHOULD"
        )
        assert added == set(INTRODUCED[version]), version
        assert _listed(sections[version], "Tightened") == set(TIGHTENED[version]), version
        musts = {cid for cid in INTRODUCED[version] if CLAUSES[cid].level == "MUST"}
        assert _listed(sections[version], "Added, MUST") == musts, version
    first = sections[VERSIONS[0]]
    assert f"{len(INTRODUCED[VERSIONS[0]])} clauses" in first


@pytest.mark.parametrize("version", sorted(RELEASE_COMMITS))
def test_a_released_clause_set_is_the_catalog_at_its_commit(version):
    commit = RELEASE_COMMITS[version]
    shown = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{commit}:conformance/ckptconform/clauses.py"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if shown.returncode != 0:
        pytest.skip(f"the clone lacks commit {commit} of release {version}: {shown.stderr}")
    released = set(re.findall(r'^\s*(?:_c\()?\(?"([A-Z]{2,4}-\d+)"', shown.stdout, re.MULTILINE))
    upto = VERSIONS[: VERSIONS.index(version) + 1]
    assert released == {cid for v in upto for cid in INTRODUCED[v]}


def test_newer_than_a_pin():
    assert newer_than("0.3.0", (), "0.2.0") == "new in 0.3.0"
    assert newer_than("0.1.0", ("0.2.0",), "0.1.0") == "tightened in 0.2.0"
    assert newer_than("0.1.0", ("0.2.0",), "0.2.0") is None


def _run(tmp_path, name, *extra, impl=f"ckptbroken.{NEWER_ONLY}"):
    workdir = tmp_path / name
    workdir.mkdir()
    return run_suite(impl, "local", workdir, "--spark-master=none", "--clauses=STR-16", *extra)


def test_a_clause_newer_than_the_pin_warns_and_fails_past_it(tmp_path):
    assert CLAUSES["STR-16"].since == "0.3.0"
    pinned = _run(tmp_path, "pinned", "--clauses-as-of=0.2.0")
    assert pinned.returncode == 0, pinned.describe()
    assert pinned.clause_status()["STR-16"] == "WARN"
    assert "(new in 0.3.0)" in pinned.output
    assert "1 newer clause(s) ran, 1 failed (WARN, not FAIL)" in pinned.output
    assert " warned" in pinned.output, pinned.output  # pytest's own category, not "xfailed"
    assert "xfailed" not in pinned.output, pinned.output
    clause_set = pinned.report["header"]["clause_set"]
    assert clause_set["version"] == "0.2.0", clause_set
    assert clause_set["pinned"], clause_set
    assert clause_set["newer"]["STR-16"] == "new in 0.3.0"
    warned = [t for t in pinned.report["tests"] if t["status"] == "WARN"]
    assert warned
    assert all("STR-16 new in 0.3.0" in t["message"] for t in warned)

    adopted = _run(tmp_path, "adopted", "--clauses-as-of=0.3.0")
    assert adopted.returncode == 1, adopted.describe()
    assert adopted.clause_status()["STR-16"] == "FAIL"

    unpinned = _run(tmp_path, "unpinned")
    assert unpinned.returncode == 1
    header = unpinned.report["header"]["clause_set"]
    assert header == {"version": ckptconform.__version__, "pinned": False, "source": "",
                      "newer": {}}  # fmt: skip


def test_the_ini_key_and_the_target_pin_too(tmp_path):
    ini = tmp_path / "ini"
    ini.mkdir()
    (ini / "pytest.ini").write_text("[pytest]\nckptconform_clauses_as_of = 0.2\n")
    run = run_suite(f"ckptbroken.{NEWER_ONLY}", "local", ini, "--spark-master=none",
                    "--clauses=STR-16")  # fmt: skip
    assert run.returncode == 0, run.describe()
    assert run.report["header"]["clause_set"]["source"] == "ini key ckptconform_clauses_as_of"

    declared = tmp_path / "declared"
    declared.mkdir()
    (declared / "pinned_target.py").write_text(
        f"from ckptbroken.{NEWER_ONLY} import conformance_target as _broken\n\n\n"
        "class _Pinned:\n"
        '    clauses_as_of = "0.2.0"\n\n'
        "    def __getattr__(self, name):\n"
        "        return getattr(_broken, name)\n\n\n"
        "conformance_target = _Pinned()\n"
    )
    run = run_suite("pinned_target", "local", declared, "--spark-master=none", "--clauses=STR-16")
    assert run.returncode == 0, run.describe()
    assert run.clause_status()["STR-16"] == "WARN"
    # the command line overrides the declaration
    run = run_suite("pinned_target", "local", declared, "--spark-master=none",
                    "--clauses=STR-16", "--clauses-as-of=0.3.0")  # fmt: skip
    assert run.returncode == 1


def test_an_unknown_clause_set_is_a_usage_error(tmp_path):
    with pytest.raises(AssertionError, match=r"no conformance\.json") as raised:
        _run(tmp_path, "unknown", "--clauses-as-of=0.9")
    assert "no clause set 0.9.0 in this suite (it has 0.1.0, 0.2.0" in str(raised.value)
