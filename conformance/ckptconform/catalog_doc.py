"""Renders CONFORMANCE.md from the clause catalog and the suite's own clause markers.

The catalog (``clauses.py``) is the single source of the clauses; the tests that check each
clause are read from the ``@pytest.mark.clause(...)`` decorators of the suite's modules by
parsing their source (no import, no collection). ``scripts/gen_conformance_md.py`` writes the
file; a meta-test checks that the committed CONFORMANCE.md is what this module renders.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from ckptconform import __version__
from ckptconform.clauses import CAPABILITIES, CLAUSES, GROUP_NOTES, GROUPS, RESERVED_GROUPS

SUITE_DIR = Path(__file__).parent / "suite"

HEADING_FORMAT = "### {id} · {level} · {title}"


def _clause_ids(decorators: list[ast.expr]) -> list[str]:
    ids: list[str] = []
    for node in decorators:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "clause"
        ):
            ids.extend(
                arg.value
                for arg in node.args
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            )
    return ids


def _module_marks(tree: ast.Module) -> list[str]:
    """Clause ids of a module-level ``pytestmark = pytest.mark.clause(...)`` (or a list)."""
    ids: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            value = node.value
            values = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
            ids.extend(_clause_ids(list(values)))
    return ids


def clause_tests(suite_dir: Path = SUITE_DIR) -> dict[str, list[str]]:
    """Map each clause id to the tests (``module.py::name``) that carry its marker."""
    found: dict[str, list[str]] = defaultdict(list)
    for module in sorted(suite_dir.glob("test_*.py")):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        module_ids = _module_marks(tree)
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef | ast.ClassDef):
                continue
            if not node.name.startswith(("test_", "Test")):
                continue
            ids = module_ids + _clause_ids(node.decorator_list)
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name.startswith("test_"):
                        ids = ids + _clause_ids(item.decorator_list)
            for clause_id in dict.fromkeys(ids):
                found[clause_id].append(f"{module.name}::{node.name}")
    return dict(found)


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
