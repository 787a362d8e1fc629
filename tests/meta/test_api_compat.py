"""Meta-test: the public contract (``ckptstore``, ``ckptstore.api``, ``ckptconform``, console
scripts, entry points) keeps every name and call it had; removal only after a deprecation.

The stored surface is ``tests/meta/api_surface.json``, written by ``scripts/api_surface.py``.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from ckptstore.api import ByteStreamStateHandle

_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "api_surface.py"
_spec = importlib.util.spec_from_file_location("api_surface", _SCRIPT)
assert _spec is not None
assert _spec.loader is not None
api_surface = importlib.util.module_from_spec(_spec)
sys.modules["api_surface"] = api_surface
_spec.loader.exec_module(api_surface)


@pytest.fixture(scope="module")
def stored():
    return json.loads(api_surface.STORED.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def current():
    return api_surface.surface()


def test_no_public_name_or_call_is_broken(stored, current):
    problems = api_surface.breaks(stored, current)
    assert not problems, (
        "the public contract lost names or calls (deprecate with a warning first, then record "
        "the removal with python scripts/api_surface.py --accept-breaks and the CHANGELOG):\n"
        + "\n".join(problems)
    )


def test_every_public_name_is_recorded(stored, current):
    added = api_surface.additions(stored, current)
    assert not added, (
        "public names missing from tests/meta/api_surface.json (run python "
        "scripts/api_surface.py):\n" + "\n".join(added)
    )


def test_with_random_name_still_works_and_warns():
    with pytest.warns(DeprecationWarning, match="with_random_name is deprecated"):
        handle = ByteStreamStateHandle.with_random_name(b"abc", prefix="p/")
    assert handle.data == b"abc"
    assert handle.handle_name.startswith("p/")
    assert len(handle.handle_name) == 2 + 36


def _method(surface, module, name, member):
    return surface["modules"][module][name]["members"][member]


def test_the_comparison_is_not_vacuous(current):
    """Each kind of break, made on a copy of today's surface, is reported."""
    cases = {}

    def older(change):
        old = copy.deepcopy(current)
        change(old)
        return old

    api = "ckptstore.api"
    init = ("ckptconform", "ConformanceTarget", "make_storage")
    cases["removed"] = older(lambda s: s["modules"][api].__setitem__("Gone", {"kind": "function"}))
    cases["member"] = older(
        lambda s: s["modules"][api]["JobID"]["members"].__setitem__("gone", {"kind": "property"})
    )
    cases["parameter"] = older(
        lambda s: _method(s, *init)["parameters"].append("extra KEYWORD_ONLY =")
    )
    cases["default"] = older(
        lambda s: _method(s, *init).__setitem__(
            "parameters", [p.removesuffix(" =") + " =" for p in _method(s, *init)["parameters"]]
        )
    )
    cases["entry point"] = older(lambda s: s["entry_points"].append("pytest11: gone = gone"))
    cases["constant"] = older(
        lambda s: s["modules"][api].__setitem__(
            "CHECKPOINT_DIR_PREFIX", {"kind": "constant", "value": "'ckp-'"}
        )
    )
    for case, old in cases.items():
        assert api_surface.breaks(old, current), f"a {case} break was not reported"
    assert not api_surface.breaks(current, current)
    newer = copy.deepcopy(current)
    del newer["modules"][api]["JobID"]
    assert api_surface.additions(newer, current) == [f"{api}.JobID"]
