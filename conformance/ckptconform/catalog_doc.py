"""Renders CONFORMANCE.md from the clause catalog and the suite's own clause markers.

The catalog (``clauses.py``) is the single source of the clauses, capabilities and options;
the tests that check each clause are read from the ``@pytest.mark.clause(...)`` decorators of
the suite's modules by parsing their source (no import, no collection), and the tests that need
an option whatever the target claims from their ``@pytest.mark.options(...)`` decorators.

The table "Clauses, tests and contract methods" is derived by static analysis as well: the
members of the protocols in ``ckptstore.api`` (read from that module's source text, never
imported) that a test's body uses, following the helpers it calls or names (functions, classes,
fixtures and module constants of its own module, of the suite's ``_*.py`` modules and of
``ckptconform.workload``) up to ``CALL_DEPTH`` steps. ``suite_tests`` gives the same facts to
the meta-test of clause texts (``tests/meta/test_clause_text.py``).

``scripts/gen_conformance_md.py`` writes the file; a meta-test checks that the committed
CONFORMANCE.md is what this module renders.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import textwrap
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator
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
)

SUITE_DIR = Path(__file__).parent / "suite"
#: Modules whose helpers a test's contract methods are followed into (besides its own module).
HELPER_MODULES: tuple[Path, ...] = (Path(__file__).parent / "workload.py",)
#: How many helper calls deep the contract methods of a test are followed.
CALL_DEPTH = 6

HEADING_FORMAT = "### {id} · {level} · {title}"

#: Each clause's outcome on Flink 2.3.0's own storages, written by ``scripts/flink_outcomes.py``
#: from the conformance reports of the Flink targets (issue 12).
FLINK_OUTCOMES = Path(__file__).parent / "data" / "flink-2.3.0-outcomes.json"
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


# --------------------------------------------------------------------------- contract methods


def api_source() -> Path:
    """The source file of ``ckptstore.api``, found without importing ``ckptstore``."""
    spec = importlib.util.find_spec("ckptstore")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidate = Path(location) / "api.py"
            if candidate.is_file():
                return candidate
    return Path(__file__).resolve().parents[2] / "reference" / "ckptstore" / "api.py"


def contract_members(source: str | None = None) -> dict[str, tuple[str, ...]]:
    """Each public member of the protocols of ``ckptstore.api`` -> the protocols declaring it.

    Read from the module's source text (``source``, default: ``api_source()``); the order is
    the order of first declaration in the module.
    """
    text = api_source().read_text(encoding="utf-8") if source is None else source
    protocols: set[str] = set()
    members: dict[str, list[str]] = {}
    for node in ast.parse(text).body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
        if not bases & (protocols | {"Protocol"}):
            continue
        protocols.add(node.name)
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and not item.name.startswith("_"):
                members.setdefault(item.name, []).append(node.name)
    return {name: tuple(owners) for name, owners in members.items()}


FOREIGN = "<not a contract object>"
#: Calls whose result is a plain Python object, whatever the receiver (a binary input stream).
_FOREIGN_CALLS = frozenset({"open_input_stream", "open"})
#: Methods the runtime calls on a class it is given (constructors, state machine rules).
_IMPLICIT = frozenset({"__init__", "__post_init__", "__enter__", "__exit__", "teardown"})


class _Scope:
    """The definitions a test module sees: its own and the helper modules' (own ones win)."""

    def __init__(self, modules: Iterable[ast.Module]) -> None:
        self.defs: dict[str, ast.AST] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.methods: dict[str, list[tuple[str, ast.FunctionDef]]] = defaultdict(list)
        for tree in modules:
            for node in tree.body:
                if isinstance(node, ast.FunctionDef | ast.ClassDef):
                    self.defs[node.name] = node
                elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for name in targets:
                        if isinstance(name, ast.Name) and name.id != "pytestmark":
                            self.defs[name.id] = node.value
        for definition in list(self.defs.values()):
            if isinstance(definition, ast.ClassDef):
                self.classes[definition.name] = definition
                for item in definition.body:
                    if isinstance(item, ast.FunctionDef):
                        self.methods[item.name].append((definition.name, item))
        self.attributes = {name: self._attribute_types(cls) for name, cls in self.classes.items()}

    def method(self, cls: str, name: str) -> ast.FunctionDef | None:
        """``cls.name``, looked up through the base classes the scope defines."""
        node = self.classes.get(cls)
        while node is not None:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    return item
            bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
            node = next((self.classes[b] for b in bases if b in self.classes), None)
        return None

    def _types_of(self, annotation: ast.expr | None) -> list[str | None]:
        """Helper classes named by an annotation (``C``, ``tuple[C, D]``), one per element."""
        if isinstance(annotation, ast.Name):
            return [annotation.id if annotation.id in self.classes else None]
        if isinstance(annotation, ast.Subscript) and isinstance(annotation.slice, ast.Tuple):
            return [
                self._types_of(e)[0] if self._types_of(e) else None for e in annotation.slice.elts
            ]
        return [None]

    def _value_types(self, value: ast.expr) -> list[str | None]:
        if isinstance(value, ast.Call):
            func = value.func
            if isinstance(func, ast.Attribute) and func.attr in _FOREIGN_CALLS:
                return [FOREIGN]
            if isinstance(func, ast.Name):
                if func.id in _FOREIGN_CALLS:
                    return [FOREIGN]
                if func.id in self.classes:
                    return [func.id]
                node = self.defs.get(func.id)
                if isinstance(node, ast.FunctionDef):
                    return self._types_of(node.returns)
        return [None]

    def _attribute_types(self, cls: ast.ClassDef) -> dict[str, str]:
        """``self.x = C(...)`` in any method: attribute ``x`` holds a ``C``."""
        found: dict[str, str] = {}
        for node in ast.walk(cls):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    for name, kind in zip(
                        _targets(target), self._value_types(node.value), strict=False
                    ):
                        if (
                            isinstance(name, ast.Attribute)
                            and isinstance(name.value, ast.Name)
                            and name.value.id == "self"
                            and kind not in (None, FOREIGN)
                        ):
                            found[name.attr] = str(kind)
        return found

    def local_types(self, unit: ast.AST, owner: str | None) -> dict[str, str]:
        """What the names of a function hold, where it is known (flow-insensitive)."""
        types: dict[str, str] = {"self": owner} if owner else {}
        if isinstance(unit, ast.FunctionDef):
            for arg in unit.args.args + unit.args.kwonlyargs:
                kind = self._types_of(arg.annotation)[0]
                if kind is not None:
                    types[arg.arg] = kind
        for node in ast.walk(unit):
            if isinstance(node, ast.Assign):
                kinds = self._value_types(node.value)
                for target in node.targets:
                    names = _targets(target)
                    if len(kinds) == 1 and len(names) > 1:
                        continue
                    for name, kind in zip(names, kinds, strict=False):
                        if isinstance(name, ast.Name) and kind is not None:
                            types[name.id] = kind
        return types


def _targets(target: ast.expr) -> list[ast.expr]:
    return list(target.elts) if isinstance(target, ast.Tuple | ast.List) else [target]


@dataclass(frozen=True)
class SuiteTest:
    """One test of the suite, as read from its source."""

    module: str
    name: str
    clauses: tuple[str, ...]
    docstring: str | None
    #: contract members (protocols of ``ckptstore.api``) the test uses, in the module's order
    contract: tuple[str, ...]
    #: clause ids spelled out as string literals in the test and the helpers it reaches
    named: tuple[str, ...]

    @property
    def nodeid(self) -> str:
        return f"{self.module}::{self.name}"


def _reach(
    roots: list[ast.AST], scope: _Scope, members: dict[str, tuple[str, ...]], clause_ids: set[str]
) -> tuple[set[str], set[str]]:
    """Contract members and clause-id literals reachable from ``roots`` (breadth first)."""
    used: set[str] = set()
    named: set[str] = set()
    seen: set[int] = set()
    queue: deque[tuple[ast.AST, str | None, int]] = deque((r, None, 0) for r in roots)

    def follow(node: ast.AST | None, owner: str | None, depth: int) -> None:
        if node is not None and id(node) not in seen and depth <= CALL_DEPTH:
            queue.append((node, owner, depth))

    while queue:
        unit, owner, depth = queue.popleft()
        if id(unit) in seen:
            continue
        seen.add(id(unit))
        if isinstance(unit, ast.ClassDef):
            for base in unit.bases:
                if isinstance(base, ast.Name):
                    follow(scope.classes.get(base.id), None, depth)
            for item in unit.body:
                if isinstance(item, ast.FunctionDef):
                    decorated = [d for d in item.decorator_list if not _is_property(d)]
                    if item.name in _IMPLICIT or decorated:
                        follow(item, unit.name, depth)
                else:
                    follow(item, unit.name, depth)
            continue
        types = scope.local_types(unit, owner)
        local = _local_names(unit)
        if isinstance(unit, ast.FunctionDef) and unit.name.startswith("test"):
            for arg in unit.args.args:  # fixtures of the module (the suite's own are plugin's)
                follow(scope.defs.get(arg.arg), None, depth + 1)
        for node in _walk(unit):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value in clause_ids:
                    named.add(node.value)
                elif "\n" in node.value and isinstance(unit, ast.expr):
                    follow(_parsed_code(node.value), None, depth + 1)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                if node.id not in local:
                    follow(scope.defs.get(node.id), None, depth + 1)
            elif isinstance(node, ast.Call) and _is_getattr(node):
                used.add(str(node.args[1].value))  # type: ignore[attr-defined]
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                kind = _receiver_type(node.value, types, scope)
                if kind == FOREIGN:
                    continue
                if kind is not None and scope.method(kind, node.attr) is not None:
                    follow(scope.method(kind, node.attr), kind, depth + 1)
                elif node.attr in members:
                    used.add(node.attr)
                elif kind is None:
                    for cls, method in scope.methods.get(node.attr, []):
                        follow(method, cls, depth + 1)
    return used & set(members), named


def _walk(unit: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``unit`` (nested functions and lambdas included)."""
    yield from ast.walk(unit)


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


def _is_getattr(node: ast.Call) -> bool:
    return (
        isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    )


def _parsed_code(text: str) -> ast.Module | None:
    """A multi-line string constant that is Python code (a child process's script)."""
    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError:
        return None
    return tree if any(not isinstance(s, ast.Expr) for s in tree.body) else None


def _receiver_type(node: ast.expr, types: dict[str, str], scope: _Scope) -> str | None:
    if isinstance(node, ast.Name):
        return types.get(node.id)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        owner = types.get(node.value.id)
        if owner is not None and owner != FOREIGN:
            return scope.attributes.get(owner, {}).get(node.attr)
    if isinstance(node, ast.Call):
        return scope._value_types(node)[0]
    return None


def suite_tests(suite_dir: Path = SUITE_DIR, api: str | None = None) -> list[SuiteTest]:
    """Every test of the suite (module order, then source order), with what it exercises."""
    members = contract_members(api)
    order = {name: i for i, name in enumerate(members)}
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
                used, named = _reach([test], scope, members, clause_ids)
                found.append(
                    SuiteTest(
                        module=module.name,
                        name=f"{node.name}::{test.name}"
                        if isinstance(node, ast.ClassDef)
                        else test.name,
                        clauses=tuple(dict.fromkeys(ids)),
                        docstring=ast.get_docstring(test),
                        contract=tuple(sorted(used, key=order.__getitem__)),
                        named=tuple(sorted(named)),
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


CONTRACT_INTRO = (
    "Which tests check each clause, and which members of the protocols of `ckptstore.api` "
    "each test calls or reads, directly or through the suite's helpers (found by static "
    "analysis of the suite's source, so a member reached only through a helper the analysis "
    "does not follow is missing, and a helper shared by several steps may add one the test "
    "does not need)."
)


def _contract_section(tests: list[SuiteTest]) -> list[str]:
    lines = [
        "## Clauses, tests and contract methods",
        "",
        CONTRACT_INTRO,
        "",
        "| clause | test | contract methods |",
        "|---|---|---|",
    ]
    by_clause: dict[str, list[SuiteTest]] = defaultdict(list)
    for test in tests:
        for clause_id in test.clauses:
            by_clause[clause_id].append(test)
    for clause_id in CLAUSES:
        for test in by_clause.get(clause_id, []):
            methods = ", ".join(f"`{m}`" for m in test.contract) or "none"
            lines.append(f"| {clause_id} | `{test.nodeid}` | {methods} |")
    return lines


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


def flink_outcomes(path: Path = FLINK_OUTCOMES) -> dict[str, Any] | None:
    """The committed outcomes on Flink 2.3.0 (None where the file is absent)."""
    if not path.is_file():
        return None
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


FLINK_INTRO = (
    "Each clause's outcome on Apache Flink {flink}'s own Java storages, driven through the "
    "contract (`--impl=flink`: {fs}; `--impl=flink-jobmanager`: {jm}; backend {backends}, "
    "hypothesis profile `{profile}`). Generated from the conformance reports of those runs "
    "(`scripts/flink_outcomes.py`, committed as `conformance/ckptconform/data/"
    "flink-{flink}-outcomes.json`; the CI's Flink leg checks it against its runs). **PASS**: "
    "every test of the clause passed. **Flink bug**: Flink is wrong there; the clause stays "
    "and the target declares it a known failure (strict xfail) with the reason and a "
    "reproducer in `tests/flink/test_flink_deviations.py`. **beyond Flink**: the clause asks "
    "more than Flink does on purpose, and its text says so and why (a known failure with a "
    "reproducer, or a SHOULD clause reported as WARN). **n/a**: not run on Flink (the reason "
    "is listed below the table)."
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
        "| clause | level | title | "
        + " | ".join(f"Flink {outcomes['flink']} {targets[n]['storage']}" for n in names)
        + " |",
        "|---|---|---|" + "---|" * len(names),
    ]
    for clause in CLAUSES.values():
        cells = [_flink_cell(targets[n]["clauses"].get(clause.id)) for n in names]
        lines.append(
            f"| {clause.id} | {clause.level} | {clause.title} | " + " | ".join(cells) + " |"
        )
    lines += ["", "Deviations:", ""]
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
        line = f"- {', '.join(where)}: {FLINK_CELLS[outcome]}: {reason}"
        if reproducer:
            line += f". Reproducer: `tests/flink/test_flink_deviations.py::{reproducer}`"
        lines.append(line + ".")
    lines += ["", "Not run:", ""]
    lines += [f"- {reason}: {', '.join(dict.fromkeys(ids))}." for reason, ids in not_run.items()]
    return lines


def _flink_cell(record: dict[str, Any] | None) -> str:
    return FLINK_CELLS[record["outcome"]] if record is not None else "not in the runs"


def _flink_line(outcomes: dict[str, Any], clause_id: str) -> str:
    targets: dict[str, Any] = outcomes["targets"]
    cells = [f"{t['storage']} {_flink_cell(t['clauses'].get(clause_id))}" for t in targets.values()]
    return f"Flink {outcomes['flink']}: {' · '.join(cells)}"


def render(suite_dir: Path = SUITE_DIR, outcomes_path: Path = FLINK_OUTCOMES) -> str:
    """The full text of CONFORMANCE.md."""
    tests = clause_tests(suite_dir)
    outcomes = flink_outcomes(outcomes_path)
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
        '  "capability X not claimed by <target>". A target may claim a capability on some',
        "  schemes only (`capabilities` as a mapping: capability -> schemes, `None` for all);",
        "  on another scheme's leg the reason is \"capability X not claimed by <target> on",
        '  scheme Y (only on Z)".',
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
    if outcomes is not None:
        lines += ["", *_flink_section(outcomes)]
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
            if outcomes is not None:
                lines += [_flink_line(outcomes, clause.id), ""]
    lines += ["", *_contract_section(suite_tests(suite_dir))]
    return "\n".join(lines).rstrip() + "\n"
