"""Renders CONFORMANCE.md from the clause catalog and the suite's own clause markers.

The catalog (``clauses.py``) is the single source of the clauses, capabilities and options;
the tests that check each clause are read from the ``@pytest.mark.clause(...)`` decorators of
the suite's modules by parsing their source (no import, no collection), and the tests that need
an option whatever the target claims from their ``@pytest.mark.options(...)`` decorators.

``suite_tests`` gives the meta-test of clause texts (``tests/meta/test_clause_text.py``) each
test's docstring, its clause markers and the clause ids spelled out in the test and in the
helpers it reaches (functions, classes, fixtures and module constants of its own module, of the
suite's ``_*.py`` modules and of ``ckptconform.workload``, up to ``CALL_DEPTH`` steps).

``scripts/gen_conformance_md.py`` writes the file; a meta-test checks that the committed
CONFORMANCE.md is what this module renders. It reads the kit's source beside it in this
repository (``conformance/ckptconform``) and is not part of the installed package.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ckptconform import __version__
from ckptconform.clauses import (
    CAPABILITIES,
    CLAUSES,
    GROUP_NOTES,
    GROUPS,
    OPTIONS,
    RESERVED_GROUPS,
    Clause,
)

#: The kit's source in this repository: the suite's modules are read from it, never imported.
KIT_DIR = Path(__file__).resolve().parent.parent / "conformance" / "ckptconform"
SUITE_DIR = KIT_DIR / "suite"
#: Modules whose helpers a test is followed into (besides its own module).
HELPER_MODULES: tuple[Path, ...] = (KIT_DIR / "workload.py",)
#: How many helper calls deep a test is followed.
CALL_DEPTH = 6

HEADING_FORMAT = "### {id} · {level} · {title}"

#: Each clause's outcome on Flink 2.3.0's own storages, written by ``scripts/flink_outcomes.py``
#: from the conformance reports of the Flink targets (issue 12).
FLINK_OUTCOMES = KIT_DIR / "data" / "flink-2.3.0-outcomes.json"
#: outcome -> how a cell of the Flink columns shows it
FLINK_CELLS = {
    "PASS": "PASS",
    "flink-bug": "Flink bug",
    "beyond-flink": "beyond Flink",
    "n/a": "n/a",
}


def _string_constants(tree: ast.Module) -> dict[str, tuple[str, ...]]:
    """Module-level names bound to a tuple or list of string literals (``X = ("A-1", ...)``)."""
    found: dict[str, tuple[str, ...]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple | ast.List):
            values = [i.value for i in node.value.elts if isinstance(i, ast.Constant)]
            if len(values) == len(node.value.elts) and all(isinstance(v, str) for v in values):
                for name in node.targets:
                    if isinstance(name, ast.Name):
                        found[name.id] = tuple(str(v) for v in values)
    return found


def _clause_ids(
    decorators: list[ast.expr],
    marker: str = "clause",
    constants: dict[str, tuple[str, ...]] | None = None,
) -> list[str]:
    """The string arguments of the ``marker`` decorators (``clause`` or ``options``).

    ``*NAME`` arguments are resolved through ``constants`` (module-level tuples of strings).
    """
    ids: list[str] = []
    for node in decorators:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == marker
        ):
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    ids.append(arg.value)
                elif isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name):
                    ids.extend((constants or {}).get(arg.value.id, ()))
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
            ids.extend(_clause_ids(list(values), marker, _string_constants(tree)))
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
        constants = _string_constants(tree)
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef | ast.ClassDef):
                continue
            if not node.name.startswith(("test_", "Test")):
                continue
            ids = module_ids + _clause_ids(node.decorator_list, marker, constants)
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name.startswith("test_"):
                        ids = ids + _clause_ids(item.decorator_list, marker, constants)
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


# --------------------------------------------------------------------------- suite tests

#: Methods the runtime calls on a class it is given (constructors, state machine rules).
_IMPLICIT = frozenset({"__init__", "__post_init__", "__enter__", "__exit__", "teardown"})


@dataclass(frozen=True)
class SuiteTest:
    """One test of the suite, as read from its source."""

    module: str
    name: str
    clauses: tuple[str, ...]
    docstring: str | None
    #: clause ids spelled out as string literals in the test and the helpers it reaches
    named: tuple[str, ...]

    @property
    def nodeid(self) -> str:
        return f"{self.module}::{self.name}"


class _Scope:
    """The definitions a test module sees: its own and the helper modules' (own ones win)."""

    def __init__(self, modules: Iterable[ast.Module]) -> None:
        self.defs: dict[str, ast.AST] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.methods: dict[str, list[ast.FunctionDef]] = defaultdict(list)
        for tree in modules:
            for node in tree.body:
                if isinstance(node, ast.FunctionDef | ast.ClassDef):
                    self.defs[node.name] = node
                elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for name in targets:
                        if isinstance(name, ast.Name) and name.id != "pytestmark":
                            self.defs[name.id] = node.value
        for definition in self.defs.values():
            if isinstance(definition, ast.ClassDef):
                self.classes[definition.name] = definition
                for item in definition.body:
                    if isinstance(item, ast.FunctionDef):
                        self.methods[item.name].append(item)


def _named(root: ast.FunctionDef, scope: _Scope, clause_ids: set[str]) -> set[str]:
    """Clause-id literals in ``root`` and the helpers it reaches, breadth first: functions,
    classes, fixtures and module constants it names, methods of the helper classes by the
    attribute names it reads (any class: no types are inferred), and the Python code of its
    multi-line strings (a child process's script), up to ``CALL_DEPTH`` steps."""
    named: set[str] = set()
    seen: set[int] = set()
    queue: deque[tuple[ast.AST, int]] = deque([(root, 0)])

    def follow(node: ast.AST | None, depth: int) -> None:
        if node is not None and id(node) not in seen and depth <= CALL_DEPTH:
            queue.append((node, depth))

    while queue:
        unit, depth = queue.popleft()
        if id(unit) in seen:
            continue
        seen.add(id(unit))
        if isinstance(unit, ast.ClassDef):
            for base in unit.bases:
                if isinstance(base, ast.Name):
                    follow(scope.classes.get(base.id), depth)
            for item in unit.body:
                if isinstance(item, ast.FunctionDef):
                    decorated = [d for d in item.decorator_list if not _is_property(d)]
                    if item.name in _IMPLICIT or decorated:
                        follow(item, depth)
                else:
                    follow(item, depth)
            continue
        local = _local_names(unit)
        if isinstance(unit, ast.FunctionDef) and unit.name.startswith("test"):
            for arg in unit.args.args:  # fixtures of the module (the suite's own are plugin's)
                follow(scope.defs.get(arg.arg), depth + 1)
        for node in ast.walk(unit):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value in clause_ids:
                    named.add(node.value)
                elif "\n" in node.value and isinstance(unit, ast.expr):
                    follow(_parsed_code(node.value), depth + 1)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                if node.id not in local:
                    follow(scope.defs.get(node.id), depth + 1)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                for method in scope.methods.get(node.attr, []):
                    follow(method, depth + 1)
    return named


def _local_names(unit: ast.AST) -> set[str]:
    """Names bound inside ``unit``: parameters (of nested functions too) and assignments."""
    names: set[str] = set()
    for node in ast.walk(unit):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef) and node is not unit:
            names.add(node.name)
    return names


def _is_property(decorator: ast.expr) -> bool:
    return isinstance(decorator, ast.Name) and decorator.id in (
        "property",
        "staticmethod",
        "classmethod",
    )


def _parsed_code(text: str) -> ast.Module | None:
    """A multi-line string constant that is Python code (a child process's script)."""
    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError:
        return None
    return tree if any(not isinstance(s, ast.Expr) for s in tree.body) else None


def suite_tests(suite_dir: Path = SUITE_DIR) -> list[SuiteTest]:
    """Every test of the suite (module order, then source order), with the clauses it names."""
    clause_ids = set(CLAUSES)
    helpers = [
        ast.parse(path.read_text(encoding="utf-8"))
        for path in (*sorted(suite_dir.glob("_*.py")), *HELPER_MODULES)
        if path.name != "__init__.py" and path.is_file()
    ]
    found: list[SuiteTest] = []
    for module in sorted(suite_dir.glob("test_*.py")):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        scope = _Scope([*helpers, tree])
        module_ids = _module_marks(tree)
        constants = _string_constants(tree)
        for node in tree.body:
            for test in _tests_in(node):
                ids = module_ids + _clause_ids(test.decorator_list, "clause", constants)
                if isinstance(node, ast.ClassDef):
                    ids = _clause_ids(node.decorator_list, "clause", constants) + ids
                found.append(
                    SuiteTest(
                        module=module.name,
                        name=f"{node.name}::{test.name}"
                        if isinstance(node, ast.ClassDef)
                        else test.name,
                        clauses=tuple(dict.fromkeys(ids)),
                        docstring=ast.get_docstring(test),
                        named=tuple(sorted(_named(test, scope, clause_ids))),
                    )
                )
    return found


def _tests_in(node: ast.stmt) -> list[ast.FunctionDef]:
    if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
        return [node]
    if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
        return [
            i for i in node.body if isinstance(i, ast.FunctionDef) and i.name.startswith("test_")
        ]
    return []


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
        values = _cell(option.values)
        lines.append(f"| `{key}` | `{option.type}` | {values} | {capability} | {clauses} |")
    lines.append("")
    for key, option in OPTIONS.items():
        lines.append(f"- `{key}`: {_md(option.meaning)} The suite passes it {_md(option.passed)}")
        if marked.get(key):
            tests = ", ".join(f"`{t}`" for t in marked[key])
            lines.append(f"  These tests pass it whatever the target claims: {tests}.")
    return lines


def flink_outcomes(path: Path = FLINK_OUTCOMES) -> dict[str, Any] | None:
    """The committed outcomes on Flink 2.3.0 (None where the file is absent)."""
    if not path.is_file():
        return None
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


FLINK_INTRO = (
    "The index's Flink columns give each clause's outcome on Apache Flink {flink}'s own Java "
    "storages, driven through the contract (`--impl=flink`: {fs}; `--impl=flink-jobmanager`: "
    "{jm}; backend {backends}, hypothesis profile `{profile}`). Generated from the "
    "conformance reports of those runs (`scripts/flink_outcomes.py`, committed as "
    "`conformance/ckptconform/data/flink-{flink}-outcomes.json`; the CI's Flink leg checks it "
    "against its runs). **PASS**: every test of the clause passed. **Flink bug**: Flink is "
    "wrong there; the clause stays and the target declares it a known failure (strict xfail) "
    "with the reason and a reproducer in `tests/flink/test_flink_deviations.py`. **beyond "
    "Flink**: the clause asks more than Flink does on purpose, and its rationale says so and "
    "why (a known failure with a reproducer, or a SHOULD clause reported as WARN). **n/a**: "
    "not run on Flink (the reasons are listed below)."
)


def _flink_section(outcomes: dict[str, Any]) -> list[str]:
    targets: dict[str, Any] = outcomes["targets"]
    names = list(targets)
    first = targets[names[0]]
    lines = [
        f"## Flink {outcomes['flink']}",
        "",
        FLINK_INTRO.format(
            flink=outcomes["flink"],
            fs=targets.get("flink", {}).get("storage", "-"),
            jm=targets.get("flink-jobmanager", {}).get("storage", "-"),
            backends=", ".join(f"`{b}`" for b in first["backends"]),
            profile=first["hypothesis_profile"],
        ),
        "",
        "Deviations:",
        "",
    ]
    deviations: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    not_run: dict[str, list[str]] = defaultdict(list)
    for name in names:
        for cid, record in targets[name]["clauses"].items():
            if record["outcome"] in ("flink-bug", "beyond-flink"):
                key = (record["outcome"], record["reason"], record.get("reproducer", ""))
                deviations[key].append(f"{cid} (`{name}`)")
            elif record["outcome"] == "n/a":
                not_run[record["reason"]].append(cid)
    for (outcome, reason, reproducer), where in deviations.items():
        line = f"- {', '.join(where)}: {FLINK_CELLS[outcome]}: {_md(reason)}"
        if reproducer:
            line += f". Reproducer: `tests/flink/test_flink_deviations.py::{reproducer}`"
        lines.append(line + ".")
    lines += ["", "Not run:", ""]
    lines += [
        f"- {_md(reason)}: {', '.join(dict.fromkeys(ids))}." for reason, ids in not_run.items()
    ]
    return lines


def _flink_cell(record: dict[str, Any] | None) -> str:
    return FLINK_CELLS[record["outcome"]] if record is not None else "not in the runs"


def _flink_cells(outcomes: dict[str, Any] | None, clause_id: str) -> list[str]:
    """The clause's outcome on each Flink target (none without the outcomes file)."""
    if outcomes is None:
        return []
    targets: dict[str, Any] = outcomes["targets"]
    return [_flink_cell(t["clauses"].get(clause_id)) for t in targets.values()]


_CODE_SPAN = re.compile(r"(`[^`]*`)")


def _md(text: str) -> str:
    """``text`` as Markdown shows it: a backslash and a '<' outside code spans are escaped, so
    that '\\' stays visible and '<n>' or '<job id>' are not taken for HTML tags (and hidden)."""
    parts = _CODE_SPAN.split(text)
    parts[::2] = [p.replace("\\", "\\\\").replace("<", "\\<") for p in parts[::2]]
    return "".join(parts)


def _cell(text: str) -> str:
    return _md(text).replace("|", "\\|")


def _index_section(tests: dict[str, list[str]], outcomes: dict[str, Any] | None) -> list[str]:
    columns = ["clause", "level", "capability", "title", "since", "tests"]
    if outcomes is not None:
        columns += [
            f"Flink {outcomes['flink']} {t['storage']}" for t in outcomes["targets"].values()
        ]
    lines = [
        "## Index",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for clause in CLAUSES.values():
        capability = ", ".join(f"`{c}`" for c in clause.capabilities)
        cells = [
            clause.id,
            clause.level,
            capability,
            _cell(clause.title),
            since_label(clause).replace("tightened in", "tightened"),
            str(len(tests.get(clause.id, []))),
            *_flink_cells(outcomes, clause.id),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def since_label(clause: Clause) -> str:
    """The version that introduced the clause, and those that tightened it."""
    tightened = "".join(f", tightened in {version}" for version in clause.tightened)
    return f"{clause.since}{tightened}"


def _clause_lines(
    clause: Clause, tests: dict[str, list[str]], outcomes: dict[str, Any] | None
) -> list[str]:
    """One clause: heading; the requirement, a paragraph of its own; then a paragraph with the
    conditions, the rationale, sources, capability, versions, Flink's outcome and the tests."""
    about = ["*Conditions:* " + " · ".join(_md(c) for c in clause.conditions) + "."]
    if clause.rationale:
        about.append(f"*Why:* {_md(clause.rationale)}")
    about.append(f"*Sources:* {', '.join(clause.spec) or '-'}")
    if clause.capabilities:
        about.append("*Capability:* " + ", ".join(f"`{c}`" for c in clause.capabilities))
    about.append(f"*Since:* {since_label(clause)}")
    if outcomes is not None:
        names = [t["storage"] for t in outcomes["targets"].values()]
        cells = _flink_cells(outcomes, clause.id)
        about.append(
            f"*Flink {outcomes['flink']}:* "
            + ", ".join(f"{n} {c}" for n, c in zip(names, cells, strict=True))
        )
    about.append("Tests: " + (", ".join(f"`{t}`" for t in tests.get(clause.id, [])) or "none"))
    return [
        HEADING_FORMAT.format(id=clause.id, level=clause.level, title=_md(clause.title)),
        _md(clause.text),
        "",
        " ".join(about[:1]) + " " + " · ".join(about[1:]),
    ]


def render(suite_dir: Path = SUITE_DIR, outcomes_path: Path = FLINK_OUTCOMES) -> str:
    """The full text of CONFORMANCE.md."""
    tests = clause_tests(suite_dir)
    outcomes = flink_outcomes(outcomes_path)
    lines = [
        "# Conformance clauses",
        "",
        f"Suite version {__version__}. Generated from `conformance/ckptconform/clauses.py` and "
        "the suite's `@pytest.mark.clause` markers by `scripts/gen_conformance_md.py`; do not "
        "edit by hand.",
        "",
        "Each clause has a stable id, a level, the capability it needs (if any) and a "
        "requirement: what an implementation must (or should) do. Below the requirement: the "
        "conditions its tests exercise, why (and whether Flink does the same), its sources, "
        "the suite version that introduced it (and those that tightened it: "
        "`--clauses-as-of` pins a version's clause set), Flink's outcome and its tests. The "
        "index lists every clause on one line.",
        "",
        "- **MUST**: a violation fails the run. A MUST clause without a capability always runs.",
        "- **SHOULD**: a violation is reported as WARN and does not fail the run, unless "
        "`--strict-should` is given.",
        "- A clause whose capability the target does not claim is skipped with the reason "
        '"capability X not claimed by <target>". A target may claim a capability on some '
        "schemes only (`capabilities` as a mapping: capability -> schemes, `None` for all); on "
        "another scheme's leg the reason is \"capability X not claimed by <target> on scheme Y "
        '(only on Z)".',
        "- Sources: `seed NNN` are Flink's javadoc and PyFlink pages (the promise to users); "
        "ids such as `S7` or `T-BASE1` are facts from Flink's code and tests "
        "(`docs/flink-facts.md`); `decision` marks a rule of this project where Flink has none "
        "or a known bug.",
        "",
        *_index_section(tests, outcomes),
        "",
        "## Capabilities",
        "",
        "| capability | meaning |",
        "|---|---|",
    ]
    lines += [f"| `{name}` | {_cell(text)} |" for name, text in CAPABILITIES.items()]
    lines += ["", *_options_section(suite_dir)]
    if outcomes is not None:
        lines += ["", *_flink_section(outcomes)]
    for group, description in GROUPS.items():
        lines += ["", f"## {group} — {description}"]
        if group in GROUP_NOTES:
            lines += ["", _md(GROUP_NOTES[group]), ""]
        members = [c for c in CLAUSES.values() if c.group == group]
        if not members:
            reserved = " (reserved for a later release)" if group in RESERVED_GROUPS else ""
            lines.append(f"No clauses yet{reserved}.")
            continue
        for clause in members:
            lines += _clause_lines(clause, tests, outcomes)
    return "\n".join(lines).rstrip() + "\n"
