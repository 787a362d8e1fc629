"""Loading and validating the implementation under test (``--impl``).

``--impl=MODULE[:ATTR]`` names a target object (or a callable that returns one); ATTR defaults
to ``conformance_target``. ``--impl=NAME`` also finds targets registered in the entry-point
group ``ckptconform.targets``. The target is duck-typed (ARCHITECTURE.md section 4; typed as
``ckptconform.ConformanceTarget``): ``name``, ``capabilities``, ``make_storage(*,
checkpoint_dir, savepoint_dir, options)``, optional ``schemes``, ``known_failures``,
``options`` and ``clauses_as_of`` (the clause set its CI is judged by, as ``--clauses-as-of``;
not a member of ``ConformanceTarget``, so typed targets need not give it), and an optional
``version``: the version of the storage under test, for a target
that adapts another system (the Flink targets say 2.3.0, Flink's, where their distribution is
the adapter's); without it the header shows the version of the distribution (or the
``__version__``) of the target's top-level module. Every problem is a ``TargetError`` with a
message that says what to fix; the plugin turns it into a pytest usage error (exit code 4),
never a skip.

``options`` declares the option keys ``make_storage`` accepts (``ckptconform.clauses.OPTIONS``).
A target that declares them gets only those keys (an empty ``storage_options`` is left out when
it does not declare that key), must declare the keys of every capability it claims, and the
plugin skips the tests that need another key. Without ``options`` every key is passed.

``capabilities`` is a collection of capability names, or a mapping from each name to the
schemes on which the capability holds (``None``: on every scheme): a storage that copies
server-side on S3 but not over SFTP claims ``{"fast-duplicate": {"s3"}}``, and the plugin
skips that capability's tests on the other legs with the reason.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import traceback
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from ckptstore.api import CheckpointStorage

__all__ = [
    "ENTRY_POINT_GROUP",
    "Target",
    "TargetError",
    "UndeclaredOptionError",
    "capability_label",
    "import_root_of",
    "load_target",
    "validate_target",
]

ENTRY_POINT_GROUP = "ckptconform.targets"
DEFAULT_ATTR = "conformance_target"


class TargetError(Exception):
    """The ``--impl`` target cannot be loaded or is invalid."""


class UndeclaredOptionError(LookupError):
    """The kit passed an option key that the target does not declare in its ``options``.

    The plugin skips the tests that need such a key, so inside the suite this means a test
    passes a key without saying so (``@pytest.mark.options``).
    """


@dataclass(frozen=True)
class Target:
    """A validated target. ``make_storage`` forwards to the implementation's factory."""

    name: str
    capabilities: frozenset[str]
    schemes: frozenset[str] | None
    known_failures: dict[str, str]
    factory: Callable[..., CheckpointStorage] = field(repr=False)
    spec: str = ""
    origin: str = ""
    version: str | None = None
    #: the option keys the target declares; None: it declares none and gets every key
    options: frozenset[str] | None = None
    #: capability -> the only schemes on which it holds (capabilities claimed everywhere are
    #: not keys)
    capability_schemes: Mapping[str, frozenset[str]] = field(default_factory=dict)
    #: the clause set (a suite version) the target pins; None: every clause counts
    clauses_as_of: str | None = None
    #: the directory on ``sys.path`` its module was imported from (None: unknown)
    import_root: str | None = None

    def make_storage(
        self,
        *,
        checkpoint_dir: str | None,
        savepoint_dir: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> CheckpointStorage:
        """A fresh storage of the implementation under test.

        A target that declares ``options`` gets only those keys: an empty ``storage_options``
        it does not declare is left out (nothing to connect with), any other undeclared key is
        an ``UndeclaredOptionError`` (the plugin skips tests that need one).
        """
        return self.factory(
            checkpoint_dir=checkpoint_dir,
            savepoint_dir=savepoint_dir,
            options=self.options_for(options or {}),
        )

    def options_for(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """The options this target receives when the kit passes ``options``."""
        if self.options is None:
            return dict(options)
        passed = dict(options)
        if "storage_options" not in self.options and not passed.get("storage_options", True):
            del passed["storage_options"]  # the backend needs no connection settings
        undeclared = sorted(key for key in passed if key not in self.options)
        if undeclared:
            raise UndeclaredOptionError(
                f"ckptconform passed option(s) {', '.join(undeclared)} to target {self.name}, "
                f"which declares only: {', '.join(sorted(self.options)) or 'none'}"
            )
        return passed

    def supports_scheme(self, scheme: str) -> bool:
        return self.schemes is None or scheme in self.schemes

    def capability_labels(self) -> list[str]:
        """The claimed capabilities, sorted, each with the schemes it is restricted to."""
        return [
            capability_label(name, self.capability_schemes.get(name))
            for name in sorted(self.capabilities)
        ]

    def supports_option(self, key: str) -> bool:
        return self.options is None or key in self.options

    def describe(self) -> str:
        version = f" {self.version}" if self.version else ""
        return f"{self.name}{version} (--impl={self.spec}: {self.origin})"


def load_target(spec: str) -> Target:
    """Load and validate the target that ``--impl=spec`` names."""
    spec = (spec or "").strip()
    if not spec:
        raise TargetError("--impl needs a value: MODULE[:ATTR] or a registered target name")
    obj, origin, module_name = _resolve(spec)
    if not _looks_like_target(obj) and callable(obj):
        try:
            obj = obj()
        except Exception as exc:
            raise TargetError(
                f"--impl={spec}: calling {origin} failed: {_short(exc)}\n{_trace(exc)}"
            ) from exc
    own = getattr(obj, "version", None)
    version = own if isinstance(own, str) and own.strip() else _version_of(module_name)
    target = validate_target(obj, spec=spec, origin=origin, version=version)
    return dataclasses.replace(target, import_root=import_root_of(module_name))


def import_root_of(module_name: str) -> str | None:
    """The directory the (imported) module's top-level package or module was found in: the
    ``sys.path`` entry a repro command needs on ``PYTHONPATH``."""
    top = sys.modules.get(module_name.partition(".")[0])
    if top is None:
        return None
    location = getattr(top, "__file__", None)
    if location:
        found = Path(location).resolve()
        package = found.name == "__init__.py" or found.stem == "__init__"
        return str(found.parent.parent if package else found.parent)
    paths = list(getattr(top, "__path__", []) or [])  # a namespace package
    return str(Path(paths[0]).resolve().parent) if paths else None


def _resolve(spec: str) -> tuple[Any, str, str]:
    """The object ``spec`` names, a description of where it came from, and its module name."""
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        if not module_name or not attr:
            raise TargetError(f"--impl={spec}: expected MODULE:ATTR")
        return _from_module(spec, module_name, attr), f"{module_name}:{attr}", module_name
    entry_point = _entry_point(spec)
    if entry_point is not None:
        try:
            obj = entry_point.load()
        except Exception as exc:
            raise TargetError(
                f"--impl={spec}: loading entry point {spec!r} ({entry_point.value}) of group "
                f"{ENTRY_POINT_GROUP!r} failed: {_short(exc)}\n{_trace(exc)}"
            ) from exc
        origin = f"entry point {spec} -> {entry_point.value}"
        return obj, origin, entry_point.value.partition(":")[0]
    return _from_module(spec, spec, DEFAULT_ATTR), f"{spec}:{DEFAULT_ATTR}", spec


def _entry_point(name: str) -> metadata.EntryPoint | None:
    for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.name == name:
            return entry_point
    return None


def _registered_names() -> list[str]:
    return sorted({ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)})


def _from_module(spec: str, module_name: str, attr: str) -> Any:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (
            module_name == exc.name or module_name.startswith(exc.name + ".")
        ):
            registered = ", ".join(_registered_names()) or "none"
            raise TargetError(
                f"--impl={spec}: no module named {module_name!r} and no target of that name in "
                f"entry-point group {ENTRY_POINT_GROUP!r} (registered: {registered})"
            ) from exc
        raise TargetError(
            f"--impl={spec}: importing {module_name!r} failed: {_short(exc)}\n{_trace(exc)}"
        ) from exc
    except Exception as exc:
        raise TargetError(
            f"--impl={spec}: importing {module_name!r} failed: {_short(exc)}\n{_trace(exc)}"
        ) from exc
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise TargetError(
            f"--impl={spec}: module {module_name!r} has no attribute {attr!r} "
            f"(a target object, or a callable returning one)"
        ) from exc
    except Exception as exc:  # a lazy module attribute that fails to load
        raise TargetError(
            f"--impl={spec}: {module_name}.{attr} failed to load: {_short(exc)}\n{_trace(exc)}"
        ) from exc


def _looks_like_target(obj: Any) -> bool:
    return hasattr(obj, "make_storage") and hasattr(obj, "name")


def validate_target(
    obj: Any, *, spec: str = "", origin: str = "", version: str | None = None
) -> Target:
    """Check the duck-typed target against the catalog and wrap it in a frozen ``Target``."""
    from ckptconform.clause_versions import VersionError, parse_version
    from ckptconform.clauses import CAPABILITIES, CLAUSES, OPTIONS, options_of_capability

    where = f"--impl={spec}: target {origin or type(obj).__name__}"
    problems: list[str] = []

    name = getattr(obj, "name", None)
    if not isinstance(name, str) or not name.strip():
        problems.append(f"'name' must be a non-empty string, got {name!r}")
        name = str(name)

    factory = getattr(obj, "make_storage", None)
    if not callable(factory):
        problems.append(f"'make_storage' must be callable, got {factory!r}")

    raw_capabilities = getattr(obj, "capabilities", None)
    capabilities = _string_set(raw_capabilities, "capabilities", problems)
    if capabilities is None:
        capabilities = frozenset()
        if not hasattr(obj, "capabilities"):
            problems.append("'capabilities' is missing (a collection of capability names)")
    unknown = sorted(capabilities - CAPABILITIES.keys())
    if unknown:
        problems.append(f"unknown capabilities {unknown}; known: {', '.join(sorted(CAPABILITIES))}")

    schemes = _string_set(getattr(obj, "schemes", None), "schemes", problems)
    if schemes is not None:
        schemes = frozenset(s.lower() for s in schemes)
        if not schemes:
            problems.append("'schemes' is empty; leave it out to accept every scheme")
    capability_schemes = _capability_schemes(raw_capabilities, schemes, problems)

    known_failures: dict[str, str] = {}
    raw_failures = getattr(obj, "known_failures", None)
    if raw_failures is not None:
        if not isinstance(raw_failures, Mapping):
            problems.append(
                f"'known_failures' must be a mapping clause id -> reason, got {raw_failures!r}"
            )
        else:
            known_failures = {str(k): str(v) for k, v in raw_failures.items()}
            unknown_ids = sorted(set(known_failures) - CLAUSES.keys())
            if unknown_ids:
                problems.append(f"'known_failures' names unknown clause ids {unknown_ids}")

    options = _string_set(getattr(obj, "options", None), "options", problems)
    if options is not None:
        unknown_keys = sorted(options - OPTIONS.keys())
        if unknown_keys:
            problems.append(
                f"'options' names unknown option keys {unknown_keys}; known: "
                f"{', '.join(OPTIONS)} (CONFORMANCE.md, Options)"
            )
        for capability in sorted(capabilities & CAPABILITIES.keys()):
            needed = [key for key in options_of_capability(capability) if key not in options]
            if needed:
                problems.append(
                    f"capability {capability!r} is configured through the option(s) "
                    f"{', '.join(needed)}: add them to 'options' or do not claim {capability!r}"
                )

    clauses_as_of = getattr(obj, "clauses_as_of", None)
    if clauses_as_of is not None:
        try:
            clauses_as_of = parse_version(str(clauses_as_of))
        except VersionError as exc:
            problems.append(f"'clauses_as_of': {exc}")

    if problems:
        raise TargetError(f"{where} is invalid:\n  - " + "\n  - ".join(problems))
    assert callable(factory)
    return Target(
        name=name,
        capabilities=capabilities,
        schemes=schemes,
        known_failures=known_failures,
        factory=factory,
        spec=spec,
        origin=origin,
        version=version,
        options=options,
        capability_schemes=capability_schemes,
        clauses_as_of=clauses_as_of,
    )


def capability_label(name: str, schemes: Collection[str] | None) -> str:
    """A capability as headers and reports show it: ``fast-duplicate (on file, s3)``."""
    return f"{name} (on {', '.join(sorted(schemes))})" if schemes else name


def _capability_schemes(
    raw: Any, schemes: frozenset[str] | None, problems: list[str]
) -> dict[str, frozenset[str]]:
    """capability -> schemes of a ``capabilities`` mapping (only the restricted ones)."""
    if not isinstance(raw, Mapping):
        return {}
    restricted: dict[str, frozenset[str]] = {}
    for capability, holds in raw.items():
        if holds is None:
            continue
        where = f"capabilities[{capability!r}]"
        found = _string_set(holds, where, problems)
        if found is None:
            continue
        found = frozenset(s.lower() for s in found)
        if not found:
            problems.append(f"{where} is empty; do not claim {capability!r}, or give None")
            continue
        if schemes is not None and found - schemes:
            problems.append(
                f"{where} names schemes {sorted(found - schemes)} that 'schemes' leaves out"
            )
        restricted[str(capability)] = found
    return restricted


def _string_set(value: Any, attr: str, problems: list[str]) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, Collection):
        problems.append(f"'{attr}' must be a collection of strings, got {value!r}")
        return frozenset()
    bad = [v for v in value if not isinstance(v, str)]
    if bad:
        problems.append(f"'{attr}' must hold strings only, got {bad!r}")
    return frozenset(v for v in value if isinstance(v, str))


def _version_of(module_name: str) -> str | None:
    top = module_name.partition(".")[0]
    try:
        distribution = _distribution_of(top)
        if distribution is not None:
            return metadata.version(distribution)
    except Exception:
        pass
    try:
        return str(getattr(importlib.import_module(top), "__version__"))  # noqa: B009
    except Exception:
        return None


def _distribution_of(top: str) -> str | None:
    """The installed distribution that holds the top-level module ``top``, as
    ``metadata.packages_distributions()`` would name it, from each distribution's
    ``top_level.txt`` or else the first parts of its ``RECORD``: a search by text that stops at
    the first match (``packages_distributions`` makes a path object per file of every
    distribution, about 0.2 s of CPU in each suite run)."""
    for distribution in metadata.distributions():
        names = distribution.read_text("top_level.txt")
        if names is None:
            record = distribution.read_text("RECORD") or ""
            names = "\n".join(
                line.partition(",")[0].partition("/")[0] for line in record.splitlines()
            )
        if top in {name.strip().removesuffix(".py") for name in names.splitlines()}:
            return str(distribution.metadata["Name"])
    return None


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _trace(exc: BaseException, limit: int = 6) -> str:
    lines = traceback.format_exception(exc, limit=-limit)
    return "".join(lines).rstrip()
