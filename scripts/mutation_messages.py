"""Which surviving mutants change only the wording of an error (scripts/mutation.py).

The contract fixes the type of every error, never its words: a mutant that only changes what
a message says (``require_url_text(url, "path")`` -> ``require_url_text(url, "XXpathXX")``,
``shown=text`` -> ``shown=None``) is one no clause may kill. Listing such mutants one by one
would take hundreds of entries, so ``[[message_text]]`` entries of
``scripts/mutation_equivalents.toml`` name a *parameter*: the callee, the parameter's name
and its position, and why it shapes only a message. A survivor is excused when the syntax
trees of the original function and of the mutant differ in nothing but arguments given to
such parameters. The comparison reads the functions that mutmut wrote into its ``mutants/``
copy (``x_name__mutmut_orig`` beside ``x_name__mutmut_7``), so it sees the real code, not the
diff's text, and an argument nested in another call is attributed to its own callee.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class MessageParameter:
    """A parameter whose argument only shapes the text of an error."""

    callee: str
    parameter: str
    position: int | None
    why: str

    @classmethod
    def of(cls, entry: Mapping[str, object]) -> MessageParameter:
        position = entry.get("position")
        return cls(
            callee=str(entry["callee"]),
            parameter=str(entry["parameter"]),
            position=None if position is None else int(str(position)),
            why=str(entry["why"]),
        )


#: A changed argument: the callee's name and the argument's keyword or position.
Site = tuple[str, str | int]


def _callee(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ast.dump(func)


def _same(a: ast.AST | None, b: ast.AST | None) -> bool:
    if a is None or b is None:
        return a is b
    return ast.dump(a) == ast.dump(b)


def _argument_sites(a: ast.Call, b: ast.Call, sites: list[Site]) -> bool:
    """Record the arguments in which two calls of one callee differ."""
    callee = _callee(a)
    for index in range(max(len(a.args), len(b.args))):
        x = a.args[index] if index < len(a.args) else None
        y = b.args[index] if index < len(b.args) else None
        if _same(x, y):
            continue
        if x is not None and y is not None and _nested(x, y, sites):
            continue
        sites.append((callee, index))
    keywords_a = {k.arg: k.value for k in a.keywords}
    keywords_b = {k.arg: k.value for k in b.keywords}
    for name in keywords_a.keys() | keywords_b.keys():
        x, y = keywords_a.get(name), keywords_b.get(name)
        if _same(x, y):
            continue
        if name is None:
            return False  # a changed **mapping is no one parameter
        if x is not None and y is not None and _nested(x, y, sites):
            continue
        sites.append((callee, name))
    return True


def _nested(a: ast.AST, b: ast.AST, sites: list[Site]) -> bool:
    """True when ``a`` and ``b`` differ only inside calls nested in them (sites recorded)."""
    if not any(isinstance(node, ast.Call) for node in ast.walk(a)):
        return False
    found: list[Site] = []
    if _compare(a, b, found) and found:
        sites.extend(found)
        return True
    return False


def _compare(a: object, b: object, sites: list[Site]) -> bool:
    """True when ``a`` and ``b`` differ only in call arguments (recorded in ``sites``)."""
    if isinstance(a, ast.AST) and isinstance(b, ast.AST):
        if type(a) is not type(b):
            return False
        if _same(a, b):
            return True
        if isinstance(a, ast.Call) and isinstance(b, ast.Call) and _same(a.func, b.func):
            return _argument_sites(a, b, sites)
        return all(
            _compare(value, getattr(b, name, None), sites) for name, value in ast.iter_fields(a)
        )
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_compare(x, y, sites) for x, y in zip(a, b, strict=True))
    return a == b


def changed_sites(original: ast.AST, mutant: ast.AST) -> list[Site] | None:
    """The call arguments in which a mutant differs from its original, or None when it
    differs in anything else."""
    sites: list[Site] = []
    body_a = getattr(original, "body", None)
    body_b = getattr(mutant, "body", None)
    if not _compare(body_a, body_b, sites) or not _compare(
        getattr(original, "args", None), getattr(mutant, "args", None), sites
    ):
        return None
    return sites


@functools.cache
def _functions(path: Path) -> dict[str, ast.AST]:
    """Every function mutmut wrote into one mutated module, by name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name: node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def message_reason(
    mutant_name: str, mutated_module: Path, parameters: Iterable[MessageParameter]
) -> str:
    """Why a mutant changes only messages ('' when it changes anything else)."""
    local = mutant_name.split(".", 2)[-1]  # ckptstore.<module>.<function>__mutmut_<n>
    function, _, number = local.rpartition("__mutmut_")
    functions = _functions(mutated_module)
    original = functions.get(f"{function}__mutmut_orig")
    changed = functions.get(f"{function}__mutmut_{number}")
    if original is None or changed is None:
        return ""
    sites = changed_sites(original, changed)
    if not sites:
        return ""
    reasons = []
    for callee, slot in sites:
        match = next(
            (p for p in parameters if p.callee == callee and slot in (p.parameter, p.position)),
            None,
        )
        if match is None:
            return ""
        reasons.append(f"{callee}({match.parameter}): {match.why}")
    return "; ".join(dict.fromkeys(reasons))
