"""The message-text excuse of the mutation report (scripts/mutation_messages.py).

A survivor is excused only when it changes nothing but arguments of listed message
parameters; anything else, even beside such a change, keeps it a survivor.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "scripts" / "mutation_messages.py"
_SPEC = importlib.util.spec_from_file_location("mutation_messages", _PATH)
assert _SPEC is not None
assert _SPEC.loader is not None
messages = importlib.util.module_from_spec(_SPEC)
sys.modules["mutation_messages"] = messages
_SPEC.loader.exec_module(messages)

ORIGINAL = """
    def x_parse__mutmut_orig(url):
        text = require_url_text(url, "path").strip()
        body = remove_dot_segments(normalise(text), shown=text)
        return check(body, limit=4)
"""

PARAMETERS = [
    messages.MessageParameter("require_url_text", "what", 1, "names the argument"),
    messages.MessageParameter("remove_dot_segments", "shown", None, "the text shown"),
]


def _module(tmp_path: Path, *mutants: str) -> Path:
    source = ORIGINAL
    for number, body in enumerate(mutants, start=1):
        source += ORIGINAL.replace("mutmut_orig", f"mutmut_{number}").replace(*body.split(" => "))
    path = tmp_path / "paths.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "change",
    [
        '"path" => "XXpathXX"',
        '"path" => None',
        'url, "path") => url)',
        "shown=text => shown=None",
        "normalise(text), shown=text => normalise(text)",
    ],
)
def test_a_change_of_message_arguments_only_is_excused(tmp_path: Path, change: str) -> None:
    module = _module(tmp_path, change)
    reason = messages.message_reason("ckptstore.paths.x_parse__mutmut_1", module, PARAMETERS)
    assert reason, change


@pytest.mark.parametrize(
    "change",
    [
        "limit=4 => limit=5",
        "normalise(text) => normalise(None)",
        "return check => return None and check",
        "url, => None,",
        ".strip() => .lstrip()",
    ],
)
def test_any_other_change_keeps_the_mutant_a_survivor(tmp_path: Path, change: str) -> None:
    module = _module(tmp_path, change)
    reason = messages.message_reason("ckptstore.paths.x_parse__mutmut_1", module, PARAMETERS)
    assert reason == "", change


def test_a_message_change_beside_another_change_is_no_excuse(tmp_path: Path) -> None:
    path = tmp_path / "paths.py"
    mutated = ORIGINAL.replace("mutmut_orig", "mutmut_1").replace('"path"', "None")
    mutated = mutated.replace("limit=4", "limit=5")
    path.write_text(textwrap.dedent(ORIGINAL + mutated), encoding="utf-8")
    assert messages.message_reason("ckptstore.paths.x_parse__mutmut_1", path, PARAMETERS) == ""


def test_an_unknown_mutant_is_no_excuse(tmp_path: Path) -> None:
    module = _module(tmp_path)
    assert messages.message_reason("ckptstore.paths.x_parse__mutmut_9", module, PARAMETERS) == ""
