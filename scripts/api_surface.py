"""The public contract's surface: every public name of ``ckptstore``, ``ckptstore.api`` and
``ckptconform`` with its call signature, plus the console scripts and entry points.

Usage: python scripts/api_surface.py [--check]

Writes ``tests/meta/api_surface.json`` from the installed code. ``tests/meta/test_api_compat.py``
compares the code with that file: a name that disappears or a signature that no longer accepts
the calls it accepted fails the test (removal only after a release that warned); a new name
fails it too until this command records it, so that the file always lists the whole contract.
With ``--check`` nothing is written and the exit code is 1 when the code breaks the stored
surface or has names the file lacks.
"""

from __future__ import annotations

import argparse
import enum
import importlib
import inspect
import json
import sys
from importlib.metadata import distribution
from pathlib import Path
from typing import Any

STORED = Path(__file__).resolve().parent.parent / "tests" / "meta" / "api_surface.json"
MODULES = ("ckptstore", "ckptstore.api", "flinkmeta", "ckptconform")
DISTRIBUTION = "checkpoint-conformance"
_OWN = ("ckptstore", "flinkmeta", "ckptconform")


def _parameters(obj: Any) -> list[str] | None:
    """``"name KIND"`` per parameter (``"name KIND ="`` with a default), or None when Python
    cannot tell."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [
        f"{p.name} {p.kind.name}{' =' if p.default is not inspect.Parameter.empty else ''}"
        for p in signature.parameters.values()
    ]


def _parsed(parameters: list[str]) -> list[tuple[str, str, bool]]:
    return [(words[0], words[1], len(words) == 3) for words in map(str.split, parameters)]


def _member(owner: type, name: str, raw: Any) -> dict[str, Any]:
    if isinstance(raw, property):
        return {"kind": "property"}
    if isinstance(raw, classmethod | staticmethod):
        return {"kind": type(raw).__name__, "parameters": _parameters(getattr(owner, name))}
    if inspect.isfunction(raw):
        return {"kind": "method", "parameters": _parameters(raw)}
    if isinstance(raw, enum.Enum):
        return {"kind": "member", "value": repr(raw.value)}
    return {"kind": "attribute"}


def _class(cls: type) -> dict[str, Any]:
    members: dict[str, Any] = {}
    for owner in reversed(cls.__mro__):
        if not owner.__module__.startswith(_OWN):
            continue
        for name, raw in vars(owner).items():
            if not name.startswith("_") or name == "__init__":
                members[name] = _member(owner, name, raw)
    for name in getattr(cls, "__dataclass_fields__", {}):
        members.setdefault(name, {"kind": "field"})
    for name in getattr(cls, "__annotations__", {}):
        if not name.startswith("_"):
            members.setdefault(name, {"kind": "field"})
    return {"kind": "class", "members": dict(sorted(members.items()))}


def _entry(value: Any) -> dict[str, Any]:
    if inspect.isclass(value):
        return _class(value)
    if callable(value):
        return {"kind": "function", "parameters": _parameters(value)}
    if isinstance(value, str | int | float | bool | tuple | frozenset):
        return {"kind": "constant", "value": repr(value)}
    return {"kind": "object", "type": type(value).__name__}


def surface() -> dict[str, Any]:
    """The contract as the code has it now."""
    modules = {}
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        names = sorted(getattr(module, "__all__", ()))
        modules[module_name] = {
            name: {"kind": "version"} if name == "__version__" else _entry(getattr(module, name))
            for name in names
        }
    entry_points = sorted(
        f"{ep.group}: {ep.name} = {ep.value}" for ep in distribution(DISTRIBUTION).entry_points
    )
    return {"modules": modules, "entry_points": entry_points}


def _call_breaks(where: str, stored: list[str] | None, now: list[str] | None) -> list[str]:
    """Why calls ``stored`` accepted may fail with ``now`` (empty when every call still works)."""
    if stored is None or now is None:
        return []
    old, new = _parsed(stored), _parsed(now)
    current = {name: (kind, default) for name, kind, default in new}
    problems = []
    positional_old = [p[0] for p in old if p[1] in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")]
    positional_new = [p[0] for p in new if p[1] in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")]
    if positional_new[: len(positional_old)] != positional_old:
        problems.append(f"{where}: positional parameters {positional_old} became {positional_new}")
    for name, kind, default in old:
        if name not in current:
            problems.append(f"{where}: parameter {name!r} removed")
            continue
        new_kind, new_default = current[name]
        if new_kind != kind and not (
            kind == "POSITIONAL_ONLY" and new_kind == "POSITIONAL_OR_KEYWORD"
        ):
            problems.append(f"{where}: parameter {name!r} changed from {kind} to {new_kind}")
        if default and not new_default:
            problems.append(f"{where}: parameter {name!r} lost its default")
    known = {p[0] for p in old}
    for name, kind, default in new:
        if name not in known and not default and kind not in ("VAR_POSITIONAL", "VAR_KEYWORD"):
            problems.append(f"{where}: new parameter {name!r} has no default")
    return problems


def breaks(stored: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """What ``current`` removed or changed incompatibly since ``stored``."""
    problems = []
    for module_name, names in stored["modules"].items():
        now = current["modules"].get(module_name, {})
        for name, old in names.items():
            where = f"{module_name}.{name}"
            new = now.get(name)
            if new is None:
                problems.append(f"{where} removed")
                continue
            if old["kind"] != new["kind"]:
                problems.append(f"{where} changed from a {old['kind']} to a {new['kind']}")
                continue
            if old["kind"] == "constant" and old["value"] != new["value"]:
                problems.append(f"{where} changed its value from {old['value']} to {new['value']}")
            problems += _call_breaks(where, old.get("parameters"), new.get("parameters"))
            for member, old_member in old.get("members", {}).items():
                new_member = new["members"].get(member)
                if new_member is None:
                    problems.append(f"{where}.{member} removed")
                    continue
                problems += _call_breaks(
                    f"{where}.{member}", old_member.get("parameters"), new_member.get("parameters")
                )
    for line in sorted(set(stored["entry_points"]) - set(current["entry_points"])):
        problems.append(f"entry point removed or changed: {line}")
    return problems


def additions(stored: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Public names the stored file does not list yet."""
    found = []
    for module_name, names in current["modules"].items():
        old = stored["modules"].get(module_name, {})
        for name, entry in names.items():
            if name not in old:
                found.append(f"{module_name}.{name}")
                continue
            for member in entry.get("members", {}):
                if member not in old[name].get("members", {}):
                    found.append(f"{module_name}.{name}.{member}")
    found += sorted(set(current["entry_points"]) - set(stored["entry_points"]))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument(
        "--accept-breaks",
        action="store_true",
        help="record the surface although it removes or changes names (after a deprecation "
        "release; say so in docs/CHANGELOG.md)",
    )
    args = parser.parse_args()
    current = surface()
    stored = json.loads(STORED.read_text(encoding="utf-8")) if STORED.exists() else None
    broken = breaks(stored, current) if stored else []
    if args.check:
        assert stored is not None, f"{STORED} is missing: run python scripts/api_surface.py"
        added = [f"not recorded: {name}" for name in additions(stored, current)]
        print("\n".join(broken + added) or "the public contract matches the stored surface")
        return 1 if broken or added else 0
    if broken and not args.accept_breaks:
        print("\n".join(broken), file=sys.stderr)
        print("refused: these break the public contract (deprecate first)", file=sys.stderr)
        return 1
    STORED.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {STORED}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
