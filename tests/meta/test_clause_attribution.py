"""Meta-test: every failure of a test that checks several clauses names the one it broke.

The clause report blames a failure on the clauses its ``ClauseFailure`` names; a plain
``assert`` names none and is blamed on every clause of its test. That is exact for a test of
one clause, and wrong for a test of several. So, read from the suite's source:

- in a test marked with several clauses, every ``assert`` runs inside ``tagged(clause, ...)``
  (or the state machine's ``self._step``), and failures are raised through ``require`` or
  ``ClauseFailure``;
- a helper that takes a ``clause`` argument does the same, so it blames what its caller says;
- the state machine behind the lifecycle tests checks through ``self._check``/``self._step``
  (its only bare asserts narrow its own optional attributes for the type checker).

The broken implementations (tests/meta/test_broken_implementations.py) prove the same at run
time: each fails its own clauses and no others.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ckptconform.suite

SUITE = Path(ckptconform.suite.__file__).parent
MODULES = sorted(SUITE.glob("test_*.py"))
TAGGING = {"tagged", "_step"}


def _clause_marker_args(func: ast.FunctionDef) -> list[ast.expr] | None:
    for deco in func.decorator_list:
        if (
            isinstance(deco, ast.Call)
            and isinstance(deco.func, ast.Attribute)
            and deco.func.attr == "clause"
        ):
            return list(deco.args)
    return None


def _several_clauses(func: ast.FunctionDef) -> bool:
    args = _clause_marker_args(func)
    return args is not None and (len(args) > 1 or any(isinstance(a, ast.Starred) for a in args))


def _takes_a_clause(func: ast.FunctionDef) -> bool:
    return any(a.arg == "clause" for a in func.args.args + func.args.kwonlyargs)


def _is_tagging(node: ast.With) -> bool:
    for item in node.items:
        call = item.context_expr
        if isinstance(call, ast.Call):
            name = call.func
            if isinstance(name, ast.Name) and name.id in TAGGING:
                return True
            if isinstance(name, ast.Attribute) and name.attr in TAGGING:
                return True
    return False


def _narrows_an_attribute(node: ast.Assert) -> bool:
    """``assert self.x is not None`` without a message: a hint to the type checker."""
    test = node.test
    return (
        node.msg is None
        and isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Attribute)
        and isinstance(test.left.value, ast.Name)
        and test.left.value.id == "self"
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.IsNot)
    )


def _untagged_asserts(body: list[ast.stmt]) -> list[ast.Assert]:
    found: list[ast.Assert] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return  # checked on its own
        if isinstance(node, ast.With) and _is_tagging(node):
            return
        if isinstance(node, ast.Assert) and not _narrows_an_attribute(node):
            found.append(node)
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    for stmt in body:
        visit(stmt)
    return found


def _functions_to_check(tree: ast.Module) -> list[tuple[str, ast.FunctionDef]]:
    picked = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    picked.append((f"{node.name}.{item.name}", item))
        elif isinstance(node, ast.FunctionDef) and (
            _several_clauses(node) or _takes_a_clause(node)
        ):
            picked.append((node.name, node))
    return picked


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.name)
def test_every_assert_of_a_multi_clause_test_is_tagged(module):
    tree = ast.parse(module.read_text(encoding="utf-8"))
    problems = [
        f"{module.name}:{node.lineno} in {name}: assert outside tagged(clause, ...)"
        for name, func in _functions_to_check(tree)
        for node in _untagged_asserts(func.body)
    ]
    assert not problems, "\n".join(problems)


def test_the_check_sees_what_it_must():
    """The rule is not vacuous: it flags a bare assert and accepts a tagged one."""
    source = """
@pytest.mark.clause("A-1", "A-2")
def test_x(sandbox):
    assert 1 == 2, "bare"
    with tagged("A-1", "op"):
        assert 1 == 1
"""
    tree = ast.parse(source)
    [(name, func)] = _functions_to_check(tree)
    assert name == "test_x"
    assert [a.lineno for a in _untagged_asserts(func.body)] == [4]
    several = [f for f in MODULES if "mark.clause(" in f.read_text(encoding="utf-8")]
    assert len(several) >= 10
