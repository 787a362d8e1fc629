"""The message-text excuse of the mutation report (tools/mutation/mutation_messages.py).

A survivor is excused only when it changes nothing but arguments of listed message
parameters; anything else, even beside such a change, keeps it a survivor.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "tools" / "mutation" / "mutation_messages.py"
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


CHECK = """
    def x_check__mutmut_orig(value, setting="limit"):
        if low is not None and high is not None:
            accepted = f"in [{low}, {high}]"
        else:
            accepted = "a number"
        wording = f"{setting} must be {accepted}"
        total = value + 1
        if value < low:
            raise fail(wording, accepted)
        return total
"""

CHECK_PARAMETERS = [
    messages.MessageParameter("fail", "message", 0, "the error's words"),
    messages.MessageParameter("fail", "accepted", 1, "the error's words"),
    messages.MessageParameter("check", "setting", 1, "names the argument"),
]


def _check_module(tmp_path: Path, change: str) -> Path:
    mutated = CHECK.replace("mutmut_orig", "mutmut_1").replace(*change.split(" => "))
    path = tmp_path / "validation.py"
    path.write_text(textwrap.dedent(CHECK + mutated), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "change",
    [
        'accepted = "a number" => accepted = None',
        'wording = f"{setting} must be {accepted}" => wording = None',
        "low is not None and high is not None => low is not None or high is not None",
        'setting="limit" => setting="XXlimitXX"',
    ],
)
def test_message_locals_wording_choices_and_defaults_are_excused(
    tmp_path: Path, change: str
) -> None:
    """A local that feeds only messages (also through another one), the condition choosing
    between its wordings, and the default of a message parameter."""
    reason = messages.message_reason(
        "ckptstore.validation.x_check__mutmut_1", _check_module(tmp_path, change), CHECK_PARAMETERS
    )
    assert reason, change


@pytest.mark.parametrize(
    "change",
    [
        "total = value + 1 => total = value + 2",
        "if value < low: => if value <= low:",
        "def x_check__mutmut_1(value, setting= => def x_check__mutmut_1(value=0, setting=",
    ],
)
def test_locals_that_reach_more_than_messages_are_no_excuse(tmp_path: Path, change: str) -> None:
    reason = messages.message_reason(
        "ckptstore.validation.x_check__mutmut_1", _check_module(tmp_path, change), CHECK_PARAMETERS
    )
    assert reason == "", change


def test_message_locals_are_found_on_the_original(tmp_path: Path) -> None:
    function = messages._functions(_check_module(tmp_path, "1 => 1"))["x_check__mutmut_orig"]
    assert messages.message_locals(function, CHECK_PARAMETERS) == {"accepted", "wording"}


NESTED = """
    def x_fail__mutmut_orig(argument, value):
        return make(Error, f"{argument} must be an int, got {describe(value)}", limit(value))
"""

NESTED_PARAMETERS = [messages.MessageParameter("make", "message", 1, "the error's words")]


@pytest.mark.parametrize(
    ("change", "excused"),
    [
        ("describe(value) => describe(None)", True),
        ("describe(value) => describe()", True),
        ("limit(value) => limit(None)", False),
        ("Error, => None,", False),
    ],
)
def test_a_change_inside_a_message_argument_is_a_message_change(
    tmp_path: Path, change: str, excused: bool
) -> None:
    """A call nested in a message argument words only that message, whatever its callee."""
    mutated = NESTED.replace("mutmut_orig", "mutmut_1").replace(*change.split(" => "))
    path = tmp_path / "validation.py"
    path.write_text(textwrap.dedent(NESTED + mutated), encoding="utf-8")
    reason = messages.message_reason(
        "ckptstore.validation.x_fail__mutmut_1", path, NESTED_PARAMETERS
    )
    assert bool(reason) is excused, change


RAISING = """
    def x_resolve__mutmut_orig(pointer, fs):
        shown = redact(pointer) if isinstance(pointer, str) else ""
        failure = None
        try:
            fs.info(pointer)
        except OSError as exc:
            failure = exc
        if failure is not None:
            raise with_context(failure, "looking up") from failure
        raise NotFoundError(f"no checkpoint at '{shown}'")
"""


@pytest.mark.parametrize(
    ("change", "excused"),
    [
        ('shown = redact(pointer) if isinstance(pointer, str) else "" => shown = None', True),
        ('else "" => else "XXXX"', True),
        ("failure = exc => failure = None", False),
    ],
)
def test_a_local_that_feeds_only_a_raised_errors_words_is_a_message(
    tmp_path: Path, change: str, excused: bool
) -> None:
    """A local used only in the arguments of the exception class a raise calls is the error's
    wording; one passed to a function that builds the error (or as its cause) is not."""
    mutated = RAISING.replace("mutmut_orig", "mutmut_1").replace(*change.split(" => "))
    path = tmp_path / "pointers.py"
    path.write_text(textwrap.dedent(RAISING + mutated), encoding="utf-8")
    reason = messages.message_reason("ckptstore.filesystem.pointers.x_resolve__mutmut_1", path, [])
    assert bool(reason) is excused, change


LOGGING = """
    def x_probe__mutmut_orig(fs, path):
        _LOG.warning("could not delete %s (%s)", path.url, describe(fs))
        return fs.info(path.path)
"""


@pytest.mark.parametrize(
    ("change", "excused"),
    [
        ('"could not delete %s (%s)" => None', True),
        ("path.url, describe(fs)) => path.url, describe(None))", True),
        ("fs.info(path.path) => fs.info(None)", False),
    ],
)
def test_log_lines_are_message_text_other_methods_of_that_name_are_not(
    tmp_path: Path, change: str, excused: bool
) -> None:
    """``_LOG.warning``'s arguments are words; ``fs.info``'s are not, although both are
    attribute calls (the logger's calls are named ``_LOG.<method>``)."""
    source = LOGGING + LOGGING.replace("mutmut_orig", "mutmut_1").replace(*change.split(" => "))
    path = tmp_path / "s3.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    parameters = [
        messages.MessageParameter("_LOG.warning", f"arg{n}", n, "a log line") for n in range(3)
    ]
    reason = messages.message_reason("ckptstore.stores.s3.x_probe__mutmut_1", path, parameters)
    assert bool(reason) is excused, change
