"""Renders CONFORMANCE.md from the clause catalog and the suite's own clause markers.

The catalog (``clauses.py``) is the single source of the clauses, capabilities and options;
the tests that check each clause are read from the ``@pytest.mark.clause(...)`` decorators of
the suite's modules by parsing their source (no import, no collection), and the tests that need
an option whatever the target claims from their ``@pytest.mark.options(...)`` decorators.
``scripts/gen_conformance_md.py`` writes the file; a meta-test checks that the committed
CONFORMANCE.md is what this module renders.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from ckptconform import __version__
from ckptconform.clauses import (
    CAPABILITIES,
    CLAUSES,
    GROUP_NOTES,
    GROUPS,
    OPTIONS,
    RESERVED_GROUPS,
)

SUITE_DIR = Path(__file__).parent / "suite"

HEADING_FORMAT = "### {id} · {level} · {title}"


def _clause_ids(decorators: list[ast.expr], marker: str = "clause") -> list[str]:
    """The string arguments of the ``marker`` decorators (``clause`` or ``options``)."""
    ids: list[str] = []
    for node in decorators:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == marker
        ):
            ids.extend(
                arg.value
                for arg in node.args
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            )
    return ids


def _module_marks(tree: ast.Module, marker: str = "clause") -> list[str]:
    """Clause ids of a module-level ``pytestmark = pytest.mark.clause(...)`` (or a list)."""
    ids: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            value = node.value
            values = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
            ids.extend(_clause_ids(list(values), marker))
    return ids


def clause_tests(suite_dir: Path = SUITE_DIR, marker: str = "clause") -> dict[str, list[str]]:
    """Map each clause id to the tests (``module.py::name``) that carry its marker.

    With ``marker="options"``: each option key to the tests that need it whatever the target
    claims.
    """
    found: dict[str, list[str]] = defaultdict(list)
    for module in sorted(suite_dir.glob("test_*.py")):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        module_ids = _module_marks(tree, marker)
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef | ast.ClassDef):
                continue
            if not node.name.startswith(("test_", "Test")):
                continue
            ids = module_ids + _clause_ids(node.decorator_list, marker)
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name.startswith("test_"):
                        ids = ids + _clause_ids(item.decorator_list, marker)
            for clause_id in dict.fromkeys(ids):
                found[clause_id].append(f"{module.name}::{node.name}")
    return dict(found)


def option_tests(suite_dir: Path = SUITE_DIR) -> dict[str, list[str]]:
    """Map each option key to the tests that pass it whatever the target claims."""
    return clause_tests(suite_dir, "options")


def option_clauses(suite_dir: Path = SUITE_DIR) -> dict[str, list[str]]:
    """Map each option key to the clauses whose tests need it (catalog order).

    A test needs the keys of its clauses' capabilities and those of its ``options`` marker.
    """
    tests = clause_tests(suite_dir)
    by_test: dict[str, set[str]] = defaultdict(set)
    for clause_id, names in tests.items():
        for name in names:
            by_test[name].add(clause_id)
    marked = option_tests(suite_dir)
    needed: dict[str, list[str]] = {}
    for key, option in OPTIONS.items():
        ids = {c.id for c in CLAUSES.values() if option.capability in c.capabilities}
        for name in marked.get(key, []):
            ids |= by_test.get(name, set())
        needed[key] = [cid for cid in CLAUSES if cid in ids]
    return needed


OPTIONS_INTRO = (
    "`make_storage(*, checkpoint_dir, savepoint_dir, options)` receives these keys in "
    "`options`; a key the suite leaves out means the storage's own default. A target may "
    "declare the keys it supports (`options`, a collection of keys; `ckptconform.target` "
    "checks them against this list). Such a target receives only those keys (an empty "
    "`storage_options` is left out); it must declare the keys of every capability it claims; "
    'a test that needs another key is skipped with the reason "option X not supported by '
    "<target>\" (a test needs the keys of its clauses' capabilities and the keys of its "
    "`@pytest.mark.options` marker); and a leg whose backend has connection settings is "
    "skipped for it unless it declares `storage_options`. A target without `options` "
    "receives every key the suite passes."
)


def _options_section(suite_dir: Path) -> list[str]:
    needed = option_clauses(suite_dir)
    marked = option_tests(suite_dir)
    lines = [
        "## Options",
        "",
        OPTIONS_INTRO,
        "",
        "| key | type | values | capability | needed by |",
        "|---|---|---|---|---|",
    ]
    for key, option in OPTIONS.items():
        capability = f"`{option.capability}`" if option.capability else "none"
        clauses = ", ".join(needed[key]) if option.capability or marked.get(key) else "all"
        lines.append(f"| `{key}` | `{option.type}` | {option.values} | {capability} | {clauses} |")
    lines.append("")
    for key, option in OPTIONS.items():
        lines.append(f"- `{key}`: {option.meaning} The suite passes it {option.passed}")
        if marked.get(key):
            tests = ", ".join(f"`{t}`" for t in marked[key])
            lines.append(f"  These tests pass it whatever the target claims: {tests}.")
    return lines


def render(suite_dir: Path = SUITE_DIR) -> str:
    """The full text of CONFORMANCE.md."""
    tests = clause_tests(suite_dir)
    lines = [
        "# Conformance clauses",
        "",
        f"Suite version {__version__}. Generated from `conformance/ckptconform/clauses.py` and",
        "the suite's `@pytest.mark.clause` markers by `scripts/gen_conformance_md.py`;",
        "do not edit by hand.",
        "",
        "Each clause has a stable id, a level and the capability it needs (if any).",
        "",
        "- **MUST**: a violation fails the run. A MUST clause without a capability always runs.",
        "- **SHOULD**: a violation is reported as WARN and does not fail the run, unless",
        "  `--strict-should` is given.",
        "- A clause whose capability the target does not claim is skipped with the reason",
        '  "capability X not claimed by <target>".',
        "- Sources: `seed NNN` are Flink's javadoc and PyFlink pages (the promise to users); ids",
        "  such as `S7` or `T-BASE1` are facts from Flink's code and tests",
        "  (`flink-checkpoint-storage.md`); `decision` marks a rule of this project where Flink",
        "  has none or a known bug.",
        "",
        "## Capabilities",
        "",
        "| capability | meaning |",
        "|---|---|",
    ]
    lines += [f"| `{name}` | {text} |" for name, text in CAPABILITIES.items()]
    lines += ["", *_options_section(suite_dir)]
    for group, description in GROUPS.items():
        lines += ["", f"## {group} — {description}", ""]
        if group in GROUP_NOTES:
            lines += [GROUP_NOTES[group], ""]
        members = [c for c in CLAUSES.values() if c.group == group]
        if not members:
            reserved = " (reserved for a later release)" if group in RESERVED_GROUPS else ""
            lines.append(f"No clauses yet{reserved}.")
            continue
        for clause in members:
            capability = ", ".join(f"`{c}`" for c in clause.capabilities) or "none (always runs)"
            checked_by = ", ".join(f"`{t}`" for t in tests.get(clause.id, [])) or "none"
            lines += [
                HEADING_FORMAT.format(id=clause.id, level=clause.level, title=clause.title),
                "",
                f"Capability: {capability}",
                "",
                clause.text,
                "",
                f"Spec: {', '.join(clause.spec) or '-'}",
                "",
                f"Tests: {checked_by}",
                "",
            ]
    return "\n".join(lines).rstrip() + "\n"
