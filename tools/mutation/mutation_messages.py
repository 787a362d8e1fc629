"""Which surviving mutants change only the wording of an error (mutation.py, beside this).

The contract fixes the type of every error, never its words: a mutant that only changes what
a message says (``require_url_text(url, "path")`` -> ``require_url_text(url, "XXpathXX")``,
``shown=text`` -> ``shown=None``) is one no clause may kill. Listing such mutants one by one
would take hundreds of entries, so ``[[message_text]]`` entries of
``mutation_equivalents.toml`` name a *parameter*: the callee, the parameter's name
and its position, and why it shapes only a message. A survivor is excused when the syntax
trees of the original function and of the mutant differ in nothing but arguments given to
such parameters; whatever changes inside such an argument (``f"got {describe(value)}"`` ->
``f"got {describe(None)}"``) changes only the message too. The comparison reads the functions
that mutmut wrote into its ``mutants/`` copy (``x_name__mutmut_orig`` beside
``x_name__mutmut_7``), so it sees the real code, not the diff's text; an argument nested in
another call that is no message argument is attributed to its own callee.

Three more changes count as message-only, each decided on the original function's code:

* the assignment of a *message local*: a local variable whose every use is in an argument to
  a message parameter, in the arguments of an exception class a ``raise`` calls, or in the
  assignment of another message local (``accepted = "a string"`` used only in
  ``_wrong_type(setting, value, accepted)``, ``shown = redact_text(url)`` used only in
  ``raise InvalidPathError(f"... {shown}")``);
* the condition of an ``if`` whose branches do nothing but assign message locals (which of
  two wordings is chosen);
* the default value of a message parameter in the function's own signature
  (``def require_job_id(value, setting="job_id")``).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterable, Mapping
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


#: Module loggers of the reference: their calls are named ``_LOG.<method>``, so that a message
#: entry for a log call never matches another object's method of the same name (``fs.info``).
LOGGERS = frozenset({"_LOG"})


def _callee(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and func.value.id in LOGGERS:
            return f"{func.value.id}.{func.attr}"
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ast.dump(func)


def _same(a: ast.AST | None, b: ast.AST | None) -> bool:
    if a is None or b is None:
        return a is b
    return ast.dump(a) == ast.dump(b)


#: Whether a site is a message parameter (its argument, and all inside it, only words a message).
IsMessage = Callable[[Site], bool]


def _never(site: Site) -> bool:
    return False


def _argument_sites(
    a: ast.Call, b: ast.Call, sites: list[Site], is_message: IsMessage = _never
) -> bool:
    """Record the arguments in which two calls of one callee differ: the argument itself when
    it goes to a message parameter, else the calls nested in it that differ."""
    callee = _callee(a)
    for index in range(max(len(a.args), len(b.args))):
        x = a.args[index] if index < len(a.args) else None
        y = b.args[index] if index < len(b.args) else None
        if _same(x, y):
            continue
        if is_message((callee, index)):
            sites.append((callee, index))
            continue
        if x is not None and y is not None and _nested(x, y, sites, is_message):
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
        if is_message((callee, name)):
            sites.append((callee, name))
            continue
        if x is not None and y is not None and _nested(x, y, sites, is_message):
            continue
        sites.append((callee, name))
    return True


def _nested(a: ast.AST, b: ast.AST, sites: list[Site], is_message: IsMessage = _never) -> bool:
    """True when ``a`` and ``b`` differ only inside calls nested in them (sites recorded)."""
    if not any(isinstance(node, ast.Call) for node in ast.walk(a)):
        return False
    found: list[Site] = []
    if _compare(a, b, found, is_message=is_message) and found:
        sites.extend(found)
        return True
    return False


#: The pseudo-callees of sites that are no call argument: a message local's assignment, the
#: condition choosing between message locals, a message parameter's default.
LOCAL = "<message local>"
CHOICE = "<wording choice>"


def _compare(
    a: object,
    b: object,
    sites: list[Site],
    locals_: frozenset[str] = frozenset(),
    is_message: IsMessage = _never,
) -> bool:
    """True when ``a`` and ``b`` differ only in call arguments (recorded in ``sites``), or in
    what is assigned to the message locals ``locals_``."""
    if isinstance(a, ast.AST) and isinstance(b, ast.AST):
        if type(a) is not type(b):
            return False
        if _same(a, b):
            return True
        if isinstance(a, ast.Call) and isinstance(b, ast.Call) and _same(a.func, b.func):
            return _argument_sites(a, b, sites, is_message)
        if isinstance(a, ast.Assign) and isinstance(b, ast.Assign):
            names = _assigned_names(a)
            if names is not None and names <= locals_ and _same_targets(a, b):
                sites.extend((LOCAL, name) for name in sorted(names))
                return True
        if isinstance(a, ast.If) and isinstance(b, ast.If) and _only_assigns(a, locals_):
            if not _same(a.test, b.test):
                sites.append((CHOICE, ast.unparse(a.test)))
            return _compare(a.body, b.body, sites, locals_, is_message) and _compare(
                a.orelse, b.orelse, sites, locals_, is_message
            )
        return all(
            _compare(value, getattr(b, name, None), sites, locals_, is_message)
            for name, value in ast.iter_fields(a)
        )
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(
            _compare(x, y, sites, locals_, is_message) for x, y in zip(a, b, strict=True)
        )
    return a == b


def _assigned_names(node: ast.Assign) -> set[str] | None:
    """The names an assignment binds, or None when it binds anything but plain names."""
    if not all(isinstance(target, ast.Name) for target in node.targets):
        return None
    return {target.id for target in node.targets if isinstance(target, ast.Name)}


def _same_targets(a: ast.Assign, b: ast.Assign) -> bool:
    return len(a.targets) == len(b.targets) and all(
        _same(x, y) for x, y in zip(a.targets, b.targets, strict=True)
    )


def _only_assigns(node: ast.If, locals_: frozenset[str]) -> bool:
    """An ``if`` whose branches do nothing but assign message locals (nested ifs included)."""
    for statement in [*node.body, *node.orelse]:
        if isinstance(statement, ast.If):
            if not _only_assigns(statement, locals_):
                return False
            continue
        names = _assigned_names(statement) if isinstance(statement, ast.Assign) else None
        if names is None or not names <= locals_:
            return False
    return True


def _message_arguments(call: ast.Call, parameters: Iterable[MessageParameter]) -> list[ast.expr]:
    """The arguments ``call`` gives to message parameters."""
    callee = _callee(call)
    found: list[ast.expr] = []
    for parameter in parameters:
        if parameter.callee != callee:
            continue
        if parameter.position is not None and parameter.position < len(call.args):
            found.append(call.args[parameter.position])
        found.extend(k.value for k in call.keywords if k.arg == parameter.parameter)
    return found


def _raised_arguments(node: ast.AST) -> list[ast.expr]:
    """The arguments of an exception class called in ``raise`` (``raise XError(f"...")``):
    mutmut never mutates a raise statement, and the contract fixes the raised type, so what
    goes into the constructor is the error's words. The cause (``from exc``) is not one, nor
    are the arguments of a function that builds the error (``raise with_context(exc, ...)``).
    """
    if not isinstance(node, ast.Raise) or not isinstance(node.exc, ast.Call):
        return []
    if not _callee(node.exc).endswith(("Error", "Exception")):
        return []
    return [*node.exc.args, *(k.value for k in node.exc.keywords)]


def message_locals(function: ast.AST, parameters: Iterable[MessageParameter]) -> frozenset[str]:
    """The locals of ``function`` that feed only messages: every load of one lies in an
    argument to a message parameter, or in the value assigned to another such local."""
    parameters = list(parameters)
    candidates = {
        name
        for node in ast.walk(function)
        if isinstance(node, ast.Assign)
        for name in (_assigned_names(node) or ())
    }
    signature = getattr(function, "args", None)
    arguments = (
        {arg.arg for arg in ast.walk(signature) if isinstance(arg, ast.arg)}
        if signature is not None
        else set()
    )
    candidates -= arguments  # a parameter rebound is still the caller's value
    in_messages: set[int] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            for argument in _message_arguments(node, parameters):
                in_messages.update(id(n) for n in ast.walk(argument) if isinstance(n, ast.Name))
        for argument in _raised_arguments(node):
            in_messages.update(id(n) for n in ast.walk(argument) if isinstance(n, ast.Name))
    loads = [
        n for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    ]
    while True:
        feeding = set(in_messages)
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and (_assigned_names(node) or {""}) <= candidates:
                feeding.update(id(n) for n in ast.walk(node.value) if isinstance(n, ast.Name))
        kept = {name for name in candidates if all(id(n) in feeding for n in loads if n.id == name)}
        if kept == candidates:
            return frozenset(kept)
        candidates = kept


def _defaults(arguments: ast.arguments) -> dict[str, ast.expr]:
    """Each parameter's default value, by name."""
    positional = [*arguments.posonlyargs, *arguments.args]
    found = {
        arg.arg: default
        for arg, default in zip(
            positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True
        )
    }
    found.update(
        (arg.arg, default)
        for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
        if default is not None
    )
    return found


def _signature_sites(a: ast.AST | None, b: ast.AST | None, callee: str) -> list[Site] | None:
    """The parameters whose defaults differ (as sites of ``callee``), or None when the
    signatures differ in anything else."""
    if not isinstance(a, ast.arguments) or not isinstance(b, ast.arguments):
        return [] if _same(a, b) else None
    defaults_a, defaults_b = _defaults(a), _defaults(b)
    if defaults_a.keys() != defaults_b.keys():
        return None
    changed = sorted(name for name in defaults_a if not _same(defaults_a[name], defaults_b[name]))
    bare_a = ast.arguments(**{**a.__dict__, "defaults": [], "kw_defaults": []})
    bare_b = ast.arguments(**{**b.__dict__, "defaults": [], "kw_defaults": []})
    if not _same(bare_a, bare_b):
        return None
    return [(callee, name) for name in changed]


def changed_sites(
    original: ast.AST,
    mutant: ast.AST,
    locals_: frozenset[str] = frozenset(),
    callee: str = "",
    is_message: IsMessage = _never,
) -> list[Site] | None:
    """The call arguments, message locals, wording choices and parameter defaults in which a
    mutant differs from its original, or None when it differs in anything else."""
    sites: list[Site] = []
    body_a = getattr(original, "body", None)
    body_b = getattr(mutant, "body", None)
    if not _compare(body_a, body_b, sites, locals_, is_message):
        return None
    signature = _signature_sites(
        getattr(original, "args", None), getattr(mutant, "args", None), callee
    )
    if signature is None:
        return None
    return sites + signature


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
    # ckptstore.<module, dotted>.<function>__mutmut_<n>; a function's name begins with x_ or xǁ
    found = re.search(r"\.(xǁ.*|x_.*)$", mutant_name)
    local = found.group(1) if found else mutant_name.split(".", 2)[-1]
    function, _, number = local.rpartition("__mutmut_")
    functions = _functions(mutated_module)
    original = functions.get(f"{function}__mutmut_orig")
    changed = functions.get(f"{function}__mutmut_{number}")
    if original is None or changed is None:
        return ""
    parameters = list(parameters)
    locals_ = message_locals(original, parameters)
    sites = changed_sites(
        original,
        changed,
        locals_,
        _own_name(function),
        lambda site: _parameter_of(site, parameters) is not None,
    )
    if not sites:
        return ""
    reasons = []
    for callee, slot in sites:
        if callee == LOCAL:
            reasons.append(f"local {slot!r} feeds only messages")
            continue
        if callee == CHOICE:
            reasons.append(f"'if {slot}' only chooses between wordings of a message")
            continue
        match = _parameter_of((callee, slot), parameters)
        if match is None:
            return ""
        reasons.append(f"{callee}({match.parameter}): {match.why}")
    return "; ".join(dict.fromkeys(reasons))


def _parameter_of(site: Site, parameters: Iterable[MessageParameter]) -> MessageParameter | None:
    """The message parameter a call site gives its argument to, if it is one."""
    callee, slot = site
    return next(
        (p for p in parameters if p.callee == callee and slot in (p.parameter, p.position)), None
    )


def _own_name(function: str) -> str:
    """The plain name of a mutmut function name: ``x_require_int`` -> ``require_int``,
    ``xǁClassǁmethod`` -> ``method``."""
    if "ǁ" in function:
        return function.rsplit("ǁ", 1)[-1]
    return function[2:] if function.startswith("x_") else function
