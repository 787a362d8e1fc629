"""The ``ckptconform`` pytest plugin: ``pytest --impl=<target>`` runs the conformance suite.

pytest loads this module through the ``pytest11`` entry point. Without ``--impl`` it only
registers its options, markers and hypothesis profiles and stays out of the way (collecting the
suite without ``--impl`` is a usage error). With ``--impl`` it:

- loads and validates the target (any problem is a usage error, exit code 4);
- collects the installed suite when no test paths were given;
- parametrizes ``backend`` over ``--backend`` and provides ``target``, ``backend``,
  ``sandbox``, ``ledger``, ``spark`` (the run's Spark leg, when ``--backend`` selects
  ``spark``; ``--spark-master``) and ``flink`` (Flink 2.3.0's own metadata loader, the Flink
  leg: wherever Java, py4j and Flink's jars are; ``--require-legs=flink`` fetches the jars);
- skips, with a reason (``ckptconform.policy``), a test whose clauses or ``requires`` marker
  need an unclaimed capability, that needs an option key the target does not declare (its
  capabilities' keys and its ``options`` marker), whose backend scheme the target does not
  support, or whose ``backend_traits`` the backend lacks; runs tests of ``known_failures``
  clauses as strict xfail; reports a failing test whose clauses are all SHOULD as WARN
  (xfailed) unless ``--strict-should``;
- prints a run header, adds a clause/repro section to every failure, prints a clause summary
  and writes ``conformance.json`` / ``conformance.md`` with ``--conformance-report``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import importlib.util
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ckptconform import __version__
from ckptconform.failures import clauses_of, fill_listings
from ckptconform.policy import (
    DEFAULT_LEGS,
    FLINK_LEG,
    SPARK_LEG,
    SPARK_NOT_SELECTED,
    TRAITS,
    Offer,
    needs_of,
    skip_reason,
    storage_options_skip,
)
from ckptconform.profiles import PROFILES, default_profile, register_profiles
from ckptconform.report import PROP_FAILED, PROP_KIND, PROP_REPRO, blamed_clauses

register_profiles()  # before hypothesis's plugin loads a profile named on the command line

__all__ = ["RunState", "suite_dir"]

_STATE = pytest.StashKey["RunState"]()
#: A report property: the Spark leg's facts (``SparkLeg.info()``) after a test that used it.
PROP_SPARK = "ckptconform.spark"
_KIND = pytest.StashKey[str]()
#: Where hypothesis's pytest plugin finds a failed test's examples, to write a patch of them.
_HYPOTHESIS_PATCH_EXAMPLES = "_hypothesis_failing_examples"

_MARKERS = (
    "clause(*ids): the conformance clause ids a test checks (ckptconform.clauses.CLAUSES).",
    "requires(*capabilities): capabilities a test needs besides its clauses'; unclaimed -> skip.",
    "options(*keys): option keys a test passes to make_storage whatever the target claims "
    "(ckptconform.clauses.OPTIONS); not declared by a target that declares options -> skip.",
    "backend_traits(object_store=None, cross_process=None, shows_unclosed_files=None, "
    "ledger=None, any_credentials=None): "
    "skip on backends without these traits.",
)


def suite_dir() -> Path:
    """Where the installed suite's test modules live."""
    spec = importlib.util.find_spec("ckptconform.suite")
    if spec is None or not spec.submodule_search_locations:
        raise pytest.UsageError("ckptconform.suite is not installed")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


@dataclass
class RunState:
    """Everything the plugin knows about an ``--impl`` run; kept in ``config.stash``."""

    target: Any
    pool: Any
    spark: Any
    selected: list[str]
    required: set[str]
    leg_skips: dict[str, str]
    strict_should: bool
    #: the pinned clause set (a suite version) and where it was set; None: every clause counts
    clauses_as_of: str | None
    clauses_as_of_source: str
    first_failure_per_clause: bool
    report_dir: str | None
    profile: str
    suite: Path
    recorder: Any
    started: str = field(default_factory=lambda: _now())
    document: dict[str, Any] | None = None
    #: The Spark leg's facts as the process that ran it reported them (pytest-xdist: a worker).
    spark_info: dict[str, Any] | None = None
    #: With ``--first-failure-per-clause``: each failed clause and the test that failed it.
    failed_in: dict[str, str] = field(default_factory=dict)
    #: Legs whose server stopped answering (in this process), with the message that says so:
    #: their later tests are skipped with it.
    dead_legs: dict[str, str] = field(default_factory=dict)
    report_paths: tuple[Path, Path] | None = None


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _split(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


# --------------------------------------------------------------------------- options


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ckptconform", "checkpoint storage conformance (ckptconform)")
    group.addoption(
        "--impl",
        metavar="TARGET",
        help="implementation under test: MODULE[:ATTR] (ATTR defaults to conformance_target) or "
        "a name registered in the entry-point group ckptconform.targets",
    )
    group.addoption(
        "--backend",
        metavar="NAMES",
        default=None,
        help="comma-separated legs to run on: local, memory, moto, sftp, minio, s3rver, s3, a "
        "name registered in the entry-point group ckptconform.backends, MODULE:CLASS, and "
        f"spark for the Spark leg (default: {','.join(DEFAULT_LEGS)})",
    )
    group.addoption("--s3-endpoint", metavar="URL", help="endpoint of the 's3' backend")
    group.addoption(
        "--s3-bucket", metavar="NAME", default="ckptconform", help="bucket of the S3 backends"
    )
    group.addoption(
        "--conformance-report",
        metavar="DIR",
        help="write conformance.json and conformance.md into DIR",
    )
    group.addoption(
        "--require-legs",
        metavar="NAMES",
        default="",
        help="comma-separated legs that must run (of those --backend selects, spark "
        "included, and flink, Flink's own loader for FLK, which fetches Flink's jars): if one "
        "cannot, that is an error, not a skip",
    )
    group.addoption(
        "--spark-master",
        metavar="MASTER",
        default=None,
        help="Spark master of the Spark leg (SPK clauses; the leg runs when --backend selects "
        "spark): local-cluster[N,C,M], local[N] or a cluster URL; 'none' turns the leg off "
        "(default: local-cluster[2,1,1024])",
    )
    group.addoption(
        "--spark-conf",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="a Spark setting for the Spark leg's session (repeatable)",
    )
    group.addoption(
        "--clauses",
        metavar="IDS",
        default="",
        help="comma-separated clause ids (e.g. STR-1,PTR-2): run only the tests that check one "
        "of them (default: every clause)",
    )
    group.addoption(
        "--strict-should",
        action="store_true",
        default=False,
        help="a failing SHOULD clause fails the run (default: reported as WARN)",
    )
    group.addoption(
        "--clauses-as-of",
        metavar="VERSION",
        default=None,
        help="judge by the clause set of suite VERSION (e.g. 0.2.0): clauses introduced or "
        "tightened after it still run but report WARN ('new in X.Y.Z') instead of failing "
        "(also the ini key ckptconform_clauses_as_of, or the target's clauses_as_of; default: "
        "every clause counts)",
    )
    parser.addini(
        "ckptconform_clauses_as_of",
        "the clause set (a suite version) the run is judged by, as --clauses-as-of",
        default="",
    )
    group.addoption(
        "--first-failure-per-clause",
        action="store_true",
        default=False,
        help="once a clause has failed, skip its remaining tests (each skip names the failing "
        "test): a quick verdict per clause; tests that check another clause still run",
    )


# --------------------------------------------------------------------------- configure


def pytest_configure(config: pytest.Config) -> None:
    for line in _MARKERS:
        config.addinivalue_line("markers", line)
    impl = config.getoption("impl", None)
    if config.getoption("help", False):
        # `pytest --impl=mypkg --help` shows the options even while mypkg does not import yet
        return
    if not impl:
        # Not a suite run; still honour HYPOTHESIS_PROFILE=<one of ours> (tox sets it).
        env_profile = os.environ.get("HYPOTHESIS_PROFILE", "").strip()
        if env_profile in PROFILES and not _cli_profile(config):
            _load_profile(env_profile)
        return
    state = _make_state(config, impl)
    config.stash[_STATE] = state
    config.add_cleanup(state.pool.stop_all)
    config.add_cleanup(state.spark.stop)
    if not hasattr(config, "workerinput"):
        # Under xdist only the controller records and writes the report (it gets every report).
        config.pluginmanager.register(_Recorder(state), "ckptconform-recorder")
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        # `pytest --impl=X` with no paths runs the installed suite, from any directory.
        config.args = [str(state.suite)]
        config.args_source = pytest.Config.ArgsSource.ARGS


def _selected_legs(value: str | None) -> list[str]:
    """The legs ``--backend`` selects, in its order; without it, ``DEFAULT_LEGS``."""
    return list(dict.fromkeys(_split(value) if value is not None else DEFAULT_LEGS))


def _cli_profile(config: pytest.Config) -> str | None:
    try:
        value = config.getoption("hypothesis_profile")
    except ValueError:
        return None
    return str(value) if value else None


def _load_profile(name: str) -> None:
    from hypothesis import settings
    from hypothesis.errors import InvalidArgument

    try:
        settings.load_profile(name)
    except InvalidArgument as exc:
        raise pytest.UsageError(
            f"hypothesis profile {name!r} is not registered "
            f"(ckptconform registers {', '.join(PROFILES)}): {exc}"
        ) from exc


def _flink_availability(*, download: bool) -> str | None:
    """Why Flink's own loader cannot run here (one sentence), or None; fetches Flink's jars
    only when ``download`` (the Flink leg is required)."""
    from ckptconform.flink.jars import unavailable_reason

    return unavailable_reason(download=download)


def _make_state(config: pytest.Config, impl: str) -> RunState:
    from ckptconform.backends import BackendError, BackendPool, BackendSettings
    from ckptconform.report import OutcomeRecorder
    from ckptconform.spark import DEFAULT_MASTER, SparkLeg, parse_spark_conf
    from ckptconform.target import TargetError, load_target

    try:
        target = load_target(impl)
    except TargetError as exc:
        raise pytest.UsageError(str(exc)) from None

    legs = _selected_legs(config.getoption("backend"))
    spark_selected = SPARK_LEG in legs
    specs = [leg for leg in legs if leg != SPARK_LEG]
    if not specs:
        raise pytest.UsageError("--backend names no backend (spark runs on the backends it names)")
    settings = BackendSettings(
        s3_endpoint=config.getoption("s3_endpoint"), s3_bucket=config.getoption("s3_bucket")
    )
    try:
        pool = BackendPool(specs, settings)
    except BackendError as exc:
        raise pytest.UsageError(str(exc)) from None
    selected = pool.names
    required = set(_split(config.getoption("require_legs")))
    not_selected = sorted(
        required - set(selected) - ({SPARK_LEG} if spark_selected else set()) - {FLINK_LEG}
    )
    if not_selected:
        raise pytest.UsageError(
            f"--require-legs names {', '.join(not_selected)}, which --backend does not select "
            f"(--backend={','.join(legs)})"
        )
    try:
        spark_conf = parse_spark_conf(config.getoption("spark_conf") or [])
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    spark = SparkLeg(config.getoption("spark_master") or DEFAULT_MASTER, spark_conf)
    leg_skips: dict[str, str] = {}
    for name in selected:
        backend = pool[name]
        if not target.supports_scheme(backend.scheme):
            leg_skips[name] = (
                f"backend {name} (scheme {backend.scheme}) not supported by {target.name} "
                f"(schemes: {', '.join(sorted(target.schemes or ()))})"
            )
            continue
        reason = backend.availability()
        if reason is not None:
            leg_skips[name] = reason
    # --spark-master=none names itself as the reason, selected or not
    spark_reason = spark.availability() if spark_selected or not spark.enabled else None
    if spark_reason is None and not spark_selected:
        spark_reason = SPARK_NOT_SELECTED
    if spark_reason is not None:
        leg_skips[SPARK_LEG] = spark_reason
    flink_reason = _flink_availability(download=FLINK_LEG in required)
    if flink_reason is not None:
        leg_skips[FLINK_LEG] = flink_reason
    failing = {name: leg_skips[name] for name in sorted(required) if name in leg_skips}
    if failing:
        raise pytest.UsageError(
            "required leg(s) cannot run (--require-legs):\n"
            + "\n".join(f"  {name}: {reason}" for name, reason in failing.items())
        )

    pin, pin_source = _clause_set_pin(config, target)

    profile = _cli_profile(config)
    if profile is None:
        profile = default_profile()
        _load_profile(profile)
    _keep_examples_in_pytest_cache(config)

    return RunState(
        target=target,
        pool=pool,
        spark=spark,
        selected=selected,
        required=required,
        leg_skips=leg_skips,
        strict_should=bool(config.getoption("strict_should")),
        clauses_as_of=pin,
        clauses_as_of_source=pin_source,
        first_failure_per_clause=bool(config.getoption("first_failure_per_clause")),
        report_dir=config.getoption("conformance_report"),
        profile=profile,
        suite=suite_dir(),
        recorder=OutcomeRecorder(),
    )


def _clause_set_pin(config: pytest.Config, target: Any) -> tuple[str | None, str]:
    """The clause set the run is judged by, and where it was set: ``--clauses-as-of``, else
    the ini key, else the target's ``clauses_as_of``; ``(None, "")`` when none pins one."""
    from ckptconform.clause_versions import VersionError, parse_version

    candidates = (
        (config.getoption("clauses_as_of"), "--clauses-as-of"),
        (config.getini("ckptconform_clauses_as_of"), "ini key ckptconform_clauses_as_of"),
        (target.clauses_as_of, f"target {target.name}"),
    )
    for value, source in candidates:
        if value:
            try:
                return parse_version(str(value)), source
            except VersionError as exc:
                raise pytest.UsageError(f"{source}: {exc}") from None
    return None, ""


def newer_clauses(pin: str | None) -> dict[str, str]:
    """Clause id -> why it is newer than the pinned clause set ("new in 0.2.0")."""
    if pin is None:
        return {}
    from ckptconform.clause_versions import newer_than
    from ckptconform.clauses import CLAUSES

    newer = {cid: newer_than(c.since, c.tightened, pin) for cid, c in CLAUSES.items()}
    return {cid: why for cid, why in newer.items() if why is not None}


def _keep_examples_in_pytest_cache(config: pytest.Config) -> None:
    """Hypothesis's files go under pytest's cache, not ``./.hypothesis``.

    With ``-p no:cacheprovider`` there is no example database and hypothesis's other caches go
    to a temporary directory removed at the end: a suite run leaves nothing in the directory it
    ran in. ``HYPOTHESIS_STORAGE_DIRECTORY``, hypothesis's own setting, wins over both: runs
    that name one directory share its caches (the constants hypothesis reads from the source
    of the code under test, about 0.3 s of CPU per run to read again). The active profile is
    kept; only its database changes.
    """
    from hypothesis import settings
    from hypothesis.configuration import set_hypothesis_home_dir
    from hypothesis.database import DirectoryBasedExampleDatabase

    cache = getattr(config, "cache", None)
    chosen = os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY")
    if chosen:
        home = chosen
    elif cache is not None:
        home = str(cache.mkdir("ckptconform-hypothesis"))
    else:
        home = tempfile.mkdtemp(prefix="ckptconform-hypothesis-")
        config.add_cleanup(lambda: shutil.rmtree(home, ignore_errors=True))
    examples = os.path.join(home, "examples")
    database: Any = None if cache is None else DirectoryBasedExampleDatabase(examples)
    # hypothesis also keeps caches (constants of the code under test) in its home directory
    set_hypothesis_home_dir(home)
    settings.register_profile("ckptconform-active", settings.default, database=database)
    settings.load_profile("ckptconform-active")


def pytest_report_header(config: pytest.Config) -> list[str]:
    state = config.stash.get(_STATE, None)
    if state is None:
        return []
    target = state.target
    lines = [
        f"ckptconform {__version__}: target {target.describe()}",
        f"  capabilities: {', '.join(target.capability_labels()) or 'none'}",
        f"  schemes: {', '.join(sorted(target.schemes)) if target.schemes else 'any'}",
        "  options: "
        + ("all" if target.options is None else ", ".join(sorted(target.options)) or "none"),
    ]
    if target.known_failures:
        lines.append(f"  known failures: {', '.join(sorted(target.known_failures))}")
    for backend in state.pool:
        status = state.leg_skips.get(backend.name)
        required = " [required]" if backend.name in state.required else ""
        lines.append(
            f"  backend {backend.describe()}{required}: "
            + (f"SKIPPED: {status}" if status else "selected")
        )
    status = state.leg_skips.get(SPARK_LEG)
    required = " [required]" if SPARK_LEG in state.required else ""
    if status == SPARK_NOT_SELECTED:
        lines.append(f"  {SPARK_NOT_SELECTED}")
    else:
        lines.append(
            f"  spark leg{required}: "
            + (f"SKIPPED: {status}" if status else state.spark.describe())
        )
    status = state.leg_skips.get(FLINK_LEG)
    required = " [required]" if FLINK_LEG in state.required else ""
    lines.append(
        f"  flink leg{required}: " + (f"SKIPPED: {status}" if status else "Flink 2.3.0's loader")
    )
    should = "fail the run" if state.strict_should else "are reported as WARN"
    lines.append(f"  hypothesis profile: {state.profile}; failing SHOULD clauses {should}")
    if state.clauses_as_of is not None:
        newer = newer_clauses(state.clauses_as_of)
        lines.append(
            f"  clause set {state.clauses_as_of} ({state.clauses_as_of_source}): "
            f"{len(newer)} newer clause(s) report WARN when they fail"
        )
    return lines


# --------------------------------------------------------------------------- collection


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    state = metafunc.config.stash.get(_STATE, None)
    if state is None or "backend" not in metafunc.fixturenames:
        return
    metafunc.parametrize("backend", state.selected, indirect=True, ids=state.selected)


def _in_suite(item: pytest.Item, suite: Path) -> bool:
    return item.path.is_relative_to(suite)


def _marker_args(item: pytest.Item, name: str) -> list[str]:
    values: list[str] = []
    for marker in item.iter_markers(name):
        values.extend(str(arg) for arg in marker.args)
    return list(dict.fromkeys(values))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's ``--dist loadgroup`` for a suite run: test by test, but every test on
    the Spark leg on one worker (one cluster per run, not one per worker). xdist's own
    grouping renames node ids, which pytest 9 no longer lets a plugin do."""
    if config.stash.get(_STATE, None) is None or config.getvalue("dist") != "loadgroup":
        return None
    from ckptconform.spark import spark_scheduler

    return spark_scheduler(config, log)


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    state = config.stash.get(_STATE, None)
    if state is None:
        try:
            suite = suite_dir()
        except pytest.UsageError:
            return
        suite_items = [item.nodeid for item in items if _in_suite(item, suite)]
        if suite_items:
            raise pytest.UsageError(
                "the ckptconform conformance suite needs a target: run it with --impl=TARGET "
                f"(e.g. pytest --impl=ckptstore); collected {len(suite_items)} suite test(s) "
                "without --impl"
            )
        return

    from ckptconform.clauses import CAPABILITIES, CLAUSES, OPTIONS

    offer = _offer(state)
    problems: list[str] = []
    for item in items:
        ids = _marker_args(item, "clause")
        if not ids:
            if _in_suite(item, state.suite):
                problems.append(f"{item.nodeid}: suite test without @pytest.mark.clause(...)")
            continue
        unknown = [cid for cid in ids if cid not in CLAUSES]
        if unknown:
            problems.append(f"{item.nodeid}: unknown clause id(s) {', '.join(unknown)}")
            continue
        requires = _marker_args(item, "requires")
        bad_caps = [cap for cap in requires if cap not in CAPABILITIES]
        if bad_caps:
            problems.append(f"{item.nodeid}: unknown capability(ies) {', '.join(bad_caps)}")
            continue
        options = _marker_args(item, "options")
        bad_options = [key for key in options if key not in OPTIONS]
        if bad_options:
            problems.append(f"{item.nodeid}: unknown option key(s) {', '.join(bad_options)}")
            continue
        _apply_policy(item, state, offer, ids, requires, options, CLAUSES, problems)
    if problems:
        raise pytest.UsageError(
            "ckptconform: invalid clause markers:\n  " + "\n  ".join(problems[:50])
        )
    _select_clauses(config, items, CLAUSES)


def _all_newer_or_should(ids: Sequence[str], state: RunState, catalog: Mapping[str, Any]) -> bool:
    """Whether a failure of these clauses is a WARN under the run's pinned clause set: each is
    newer than the pin, or a SHOULD clause (unless ``--strict-should``), and some is newer."""
    newer = newer_clauses(state.clauses_as_of)
    if not any(cid in newer for cid in ids):
        return False
    return all(
        cid in newer or (catalog[cid].level == "SHOULD" and not state.strict_should) for cid in ids
    )


def _select_clauses(config: pytest.Config, items: list[pytest.Item], catalog: Any) -> None:
    """Keep only the tests of the clauses ``--clauses`` names (all tests without it)."""
    wanted = {cid.strip() for cid in str(config.getoption("clauses") or "").split(",")}
    wanted.discard("")
    if not wanted:
        return
    unknown = sorted(wanted - set(catalog))
    if unknown:
        raise pytest.UsageError(f"--clauses names unknown clause id(s): {', '.join(unknown)}")
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        (keep if wanted & set(_marker_args(item, "clause")) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _offer(state: RunState) -> Offer:
    """What the run offers the tests, for ``ckptconform.policy``."""
    target = state.target
    return Offer(
        target=target.name,
        capabilities=frozenset(target.capabilities),
        options=target.options,
        leg_skips=dict(state.leg_skips),
        traits={
            backend.name: {trait: bool(getattr(backend, attr)) for trait, attr in TRAITS.items()}
            for backend in state.pool
        },
        capability_schemes=dict(target.capability_schemes),
        backend_schemes={backend.name: backend.scheme for backend in state.pool},
    )


def _apply_policy(
    item: pytest.Item,
    state: RunState,
    offer: Offer,
    ids: list[str],
    requires: list[str],
    options: list[str],
    catalog: dict[str, Any],
    problems: list[str],
) -> None:
    from ckptconform.report import PROP_BACKEND, PROP_CLAUSES, PROP_ON_SPARK

    target = state.target
    callspec = getattr(item, "callspec", None)
    backend_name = callspec.params.get("backend") if callspec is not None else None
    needs = needs_of(
        ids,
        requires=requires,
        options=options,
        backend=backend_name,
        spark=SPARK_LEG in getattr(item, "fixturenames", ()),
        flink=FLINK_LEG in getattr(item, "fixturenames", ()),
        traits=[
            (trait, wanted)
            for marker in item.iter_markers("backend_traits")
            for trait, wanted in marker.kwargs.items()
        ],
        catalog=catalog,
    )
    reason, marker_problems = skip_reason(needs, offer)
    problems.extend(f"{item.nodeid}: {problem}" for problem in marker_problems)
    if reason is not None:
        item.add_marker(pytest.mark.skip(reason=reason))

    known = [cid for cid in ids if cid in target.known_failures]
    kind = ""
    if known:
        kind = "known"
        why = "; ".join(f"{cid}: {target.known_failures[cid]}" for cid in known)
        item.add_marker(
            pytest.mark.xfail(strict=True, reason=f"known failure of {target.name}: {why}")
        )
    elif not state.strict_should and all(catalog[cid].level == "SHOULD" for cid in ids):
        kind = "should"
    elif _all_newer_or_should(ids, state, catalog):
        kind = "new"
    item.stash[_KIND] = kind
    item.user_properties.append((PROP_CLAUSES, " ".join(ids)))
    item.user_properties.append((PROP_BACKEND, backend_name or ""))
    item.user_properties.append((PROP_KIND, kind))
    if needs.spark:
        item.user_properties.append((PROP_ON_SPARK, "1"))


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def _ckptconform_state(request: pytest.FixtureRequest) -> Iterator[RunState]:
    state = request.config.stash.get(_STATE, None)
    if state is None:
        pytest.fail(
            "the ckptconform fixtures (target, backend, sandbox, ledger) need --impl=TARGET",
            pytrace=False,
        )
    yield state
    # Session teardown (also after Ctrl-C or an error): stop every server the suite started.
    state.pool.stop_all()


@pytest.fixture
def target(_ckptconform_state: RunState) -> Any:
    """The validated target under test (``ckptconform.target.Target``)."""
    return _ckptconform_state.target


@pytest.fixture
def backend(request: pytest.FixtureRequest, _ckptconform_state: RunState) -> Iterator[Any]:
    """The backend of this leg, started (the plugin parametrizes it over ``--backend``)."""
    from ckptconform.backends import BackendUnavailableError

    name = getattr(request, "param", None)
    if name is None:
        pytest.fail(
            "the 'backend' fixture is parametrized by the ckptconform plugin only", pytrace=False
        )
    if name in _ckptconform_state.dead_legs:
        pytest.skip(_ckptconform_state.dead_legs[name])
    try:
        started = _ckptconform_state.pool.get_started(name)
    except BackendUnavailableError as exc:
        if name in _ckptconform_state.required:
            pytest.fail(f"required leg {name} cannot run (--require-legs): {exc}", pytrace=False)
        pytest.skip(str(exc))
    target = _ckptconform_state.target
    reason = storage_options_skip(target.name, target.options, name, started.storage_options)
    if reason is not None:
        if name in _ckptconform_state.required:
            pytest.fail(f"required leg {name} cannot run (--require-legs): {reason}", pytrace=False)
        pytest.skip(reason)
    yield started
    if started.ledger is not None:
        started.ledger.clear_faults()


@pytest.fixture
def sandbox(backend: Any, target: Any) -> Iterator[Any]:
    """A fresh random root on the backend for this test, removed afterwards."""
    from ckptconform.sandbox import Sandbox

    box = Sandbox(backend, target)
    yield box
    try:
        box.cleanup()
    except Exception as exc:
        warnings.warn(f"ckptconform: could not clean up {box.root}: {exc}", stacklevel=1)


@pytest.fixture
def spark(request: pytest.FixtureRequest, _ckptconform_state: RunState) -> Any:
    """The run's Spark leg (``ckptconform.spark.SparkLeg``), started; skips when it cannot run."""
    from ckptconform.spark import SparkUnavailableError

    leg = _ckptconform_state.spark
    try:
        _start_announced(request.config, leg)
    except SparkUnavailableError as exc:
        if SPARK_LEG in _ckptconform_state.required:
            pytest.fail(f"required Spark leg cannot run (--require-legs): {exc}", pytrace=False)
        pytest.skip(str(exc))
    return leg


@pytest.fixture
def flink(_ckptconform_state: RunState) -> Any:
    """Flink 2.3.0's own metadata loader (``ckptconform.flink.metadata``), its JVM started;
    skips with the reason where Flink cannot run (fails where the Flink leg is required)."""
    from ckptconform.flink import gateway, metadata
    from ckptconform.flink.jars import FlinkUnavailableError

    required = FLINK_LEG in _ckptconform_state.required
    reason = _ckptconform_state.leg_skips.get(FLINK_LEG)
    if reason is None:
        try:
            gateway.gateway()
        except (FlinkUnavailableError, OSError) as exc:
            reason = f"Flink's JVM did not start: {exc}"
    if reason is not None:
        if required:
            pytest.fail(f"required Flink leg cannot run (--require-legs): {reason}", pytrace=False)
        pytest.skip(reason)
    return metadata


def _start_announced(config: pytest.Config, leg: Any) -> None:
    """Start the Spark leg, saying so on the terminal while it starts (a JVM takes a while)."""
    if leg.started or leg.start_failed:
        leg.start()
        return
    _say(config, f"starting the Spark leg ({leg.master}) ...")
    try:
        leg.start()
    except Exception as exc:
        _say(config, f"the Spark leg did not start: {exc}")
        raise
    _say(config, f"the Spark leg started in {leg.startup_seconds or 0:.1f} s")


def _say(config: pytest.Config, line: str) -> None:
    """A line on the terminal in the middle of the run, past output capturing (a
    pytest-xdist worker, whose stdout is its channel to the controller, writes to stderr)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    worker = getattr(config, "workerinput", None)
    capture = config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        if worker is not None:
            print(f"[{worker.get('workerid', 'worker')}] {line}", file=sys.stderr, flush=True)
        elif reporter is not None:
            reporter.write_line(line)


@pytest.fixture
def ledger(backend: Any) -> Iterator[Any]:
    """The backend's request ledger; skips on backends that have none."""
    if backend.ledger is None:
        why = getattr(backend, "proxy_problem", None) or (
            "requests are counted only at servers the suite runs or proxies "
            "(moto, minio, s3 through the counting proxy)"
        )
        pytest.skip(f"no request ledger on backend {backend.name}: {why}")
    yield backend.ledger
    backend.ledger.clear_faults()


# --------------------------------------------------------------------------- reporting


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    if call.excinfo is not None:
        # the sandbox listings its messages promise, taken while the sandbox still exists
        fill_listings(call.excinfo.value)
    report = yield
    state = item.config.stash.get(_STATE, None)
    if state is None or not _marker_args(item, "clause"):
        return report
    if report.when == "call":
        # hypothesis would turn the failing examples into a patch of the suite's own source
        # (the kit's installed test module, not the user's code), importing libcst for it
        # where that is installed: about 0.7 s of CPU per failing run, for a patch that is
        # never to be applied. The examples are still printed with the failure.
        item.__dict__.pop(_HYPOTHESIS_PATCH_EXAMPLES, None)
    # a known failure that failed as declared is blamed like a failure (its report is xfailed)
    declared = getattr(report, "wasxfail", None) is not None and report.skipped
    named: tuple[str, ...] = ()
    if (report.failed or declared) and call.excinfo is not None:
        named = clauses_of(call.excinfo.value)
        if named:
            report.user_properties.append((PROP_FAILED, " ".join(named)))
    if report.when == "teardown" and SPARK_LEG in getattr(item, "fixturenames", ()):
        # the report header is written by the controlling process, which under pytest-xdist
        # never starts the leg: the worker that ran it hands its facts on with the report
        report.user_properties.append((PROP_SPARK, json.dumps(state.spark.info())))
    if report.failed:
        _check_server(item, state)
        if state.first_failure_per_clause:
            _remember_failure(item, state, named)
        repro = repro_command(item, state, _backend_of(item))
        report.user_properties.append((PROP_REPRO, repro))
        report.sections.append(("ckptconform", _failure_section(item, state, repro)))
        if report.when == "call":
            _warn_instead_of_failing(item, state, report, named)
    return report


def _warn_instead_of_failing(
    item: pytest.Item, state: RunState, report: pytest.TestReport, named: tuple[str, ...]
) -> None:
    """A failing SHOULD clause, or one newer than the pinned clause set, is a warning:
    reported as xfailed, it does not fail the run."""
    from ckptconform.clauses import CLAUSES

    kind = item.stash.get(_KIND, "")
    if kind == "" and named:
        # a test of old and new clauses whose failure names only new (or SHOULD) ones
        blamed = blamed_clauses(named, _marker_args(item, "clause"))
        if _all_newer_or_should(blamed, state, CLAUSES):
            kind = "new"
            report.user_properties.append((PROP_KIND, kind))
    if kind == "should":
        report.outcome = "skipped"
        report.wasxfail = "SHOULD clause failed (WARN; --strict-should makes it fail)"
    elif kind == "new":
        newer = newer_clauses(state.clauses_as_of)
        blamed = blamed_clauses(named, _marker_args(item, "clause"))
        why = "; ".join(f"{cid} {newer[cid]}" for cid in blamed if cid in newer)
        report.outcome = "skipped"
        report.wasxfail = f"{why}, after the pinned clause set {state.clauses_as_of} (WARN)"


def _check_server(item: pytest.Item, state: RunState) -> None:
    """After a failure, ask the leg's backend whether its server still answers; where it
    names a problem, the leg is dead: its later tests are skipped with one message (the
    ``backend`` fixture), instead of each failing on a server that is gone."""
    callspec = getattr(item, "callspec", None)
    name = callspec.params.get("backend") if callspec is not None else None
    if name is None or name not in state.pool.backends or name in state.dead_legs:
        return
    backend = state.pool[name]
    if not backend.started:
        return
    try:
        problem = backend.server_problem()
    except Exception as exc:  # asking must never hide the test's own failure
        problem = None
        warnings.warn(f"ckptconform: {name}: server_problem() raised {exc!r}", stacklevel=1)
    if problem:
        state.dead_legs[name] = (
            f"ckptconform: the server of the {name} leg stopped answering ({problem}); seen "
            f"after {item.nodeid} failed: the leg's later tests are not run"
        )


def _remember_failure(item: pytest.Item, state: RunState, named: tuple[str, ...]) -> None:
    """Note the clauses a failed test failed (``--first-failure-per-clause``): those its
    failure named, else all of its clauses (as the report blames them)."""
    for cid in blamed_clauses(named, _marker_args(item, "clause")):
        state.failed_in.setdefault(cid, item.nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """With ``--first-failure-per-clause``, skip a test whose clauses have all failed."""
    state = item.config.stash.get(_STATE, None)
    if state is None or not state.first_failure_per_clause:
        return
    ids = _marker_args(item, "clause")
    if ids and all(cid in state.failed_in for cid in ids):
        where = "; ".join(f"{cid} failed in {state.failed_in[cid]}" for cid in ids)
        pytest.skip(f"--first-failure-per-clause: {where}")


def _backend_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("backend") if callspec is not None else None


def _failure_section(item: pytest.Item, state: RunState, repro: str) -> str:
    from ckptconform.clauses import CLAUSES

    lines = []
    for cid in _marker_args(item, "clause"):
        clause = CLAUSES.get(cid)
        if clause is not None:
            lines.append(f"clause {cid} ({clause.level}): {clause.title}")
    callspec = getattr(item, "callspec", None)
    backend_name = callspec.params.get("backend") if callspec is not None else None
    lines.append(f"target: {state.target.describe()}")
    if backend_name is not None:
        lines.append(f"backend: {state.pool[backend_name].describe()}")
    lines.append("repro: " + repro)
    return "\n".join(lines)


def repro_command(item: pytest.Item, state: RunState, backend_name: str | None) -> str:
    """A command line that reruns just this test, from any directory: with
    ``PYTHONPATH=<dir>`` in front where the target was imported from a directory that a
    fresh interpreter does not have on its path (the working directory, ``PYTHONPATH``)."""
    config = item.config
    root = state.target.import_root
    prefix = [f"PYTHONPATH={root}"] if root and root not in default_import_path() else []
    parts = [*prefix, "pytest", f"--impl={state.target.spec}"]
    legs = [backend_name] if backend_name else state.selected
    on_spark = SPARK_LEG in getattr(item, "fixturenames", ())
    specs = [state.pool.specs[name] for name in legs] + ([SPARK_LEG] if on_spark else [])
    parts.append(f"--backend={','.join(specs)}")
    if config.getoption("s3_endpoint") and backend_name in (None, "s3"):
        parts.append(f"--s3-endpoint={config.getoption('s3_endpoint')}")
    if config.getoption("s3_bucket") != "ckptconform":
        parts.append(f"--s3-bucket={config.getoption('s3_bucket')}")
    if on_spark:
        from ckptconform.spark import DEFAULT_MASTER

        if state.spark.master != DEFAULT_MASTER:
            parts.append(f"--spark-master={state.spark.master}")
        parts += [f"--spark-conf={key}={value}" for key, value in state.spark.conf.items()]
    if state.strict_should:
        parts.append("--strict-should")
    parts.append(f"--hypothesis-profile={state.profile}")
    _, _, rest = item.nodeid.partition("::")
    parts.append(f"{item.path}::{rest}" if rest else str(item.path))
    return " ".join(shlex.quote(p) for p in parts)


@functools.cache
def default_import_path() -> frozenset[str]:
    """The directories a fresh interpreter of this Python has on ``sys.path`` without
    ``PYTHONPATH`` and outside any project directory (site-packages, ``.pth`` entries)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    try:
        completed = subprocess.run(
            [sys.executable, "-c", "import json, sys; print(json.dumps(sys.path[1:]))"],
            cwd=tempfile.gettempdir(),
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        paths = json.loads(completed.stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        return frozenset()
    return frozenset(os.path.realpath(path) for path in paths if path)


class _Recorder:
    """Feeds every test report of an ``--impl`` run into the clause report."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Runs in the controller process (also under xdist): uses only report.user_properties.
        self.state.recorder.add(report)
        spark = dict(report.user_properties).get(PROP_SPARK)
        if spark is not None:
            self.state.spark_info = json.loads(str(spark))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        _finish_report(session.config, self.state, int(exitstatus))


def _spark_facts(state: RunState) -> dict[str, Any]:
    """The Spark leg's facts: this process's, or those a worker reported where it ran there."""
    own: dict[str, Any] = state.spark.info()
    if not own["started"] and state.spark_info is not None:
        return state.spark_info
    return own


def _finish_report(config: pytest.Config, state: RunState, exitstatus: int) -> None:
    from ckptconform.clauses import CLAUSES
    from ckptconform.report import build_document, write_report

    target = state.target
    header = {
        "target": {
            "name": target.name,
            "spec": target.spec,
            "origin": target.origin,
            "version": target.version,
        },
        "capabilities": sorted(target.capabilities),
        "capability_schemes": {
            name: sorted(schemes) for name, schemes in sorted(target.capability_schemes.items())
        },
        "schemes": sorted(target.schemes) if target.schemes else None,
        "options": sorted(target.options) if target.options is not None else None,
        "known_failures": dict(target.known_failures),
        "backends": [
            {
                "name": b.name,
                "scheme": b.scheme,
                "status": "skipped" if b.name in state.leg_skips else "selected",
                "reason": state.leg_skips.get(b.name, ""),
                "description": b.describe(),
                "required": b.name in state.required,
            }
            for b in state.pool
        ],
        "spark": {
            **_spark_facts(state),
            "status": _spark_status(state.leg_skips.get(SPARK_LEG)),
            "reason": state.leg_skips.get(SPARK_LEG, ""),
            "required": SPARK_LEG in state.required,
        },
        "flink": {
            "status": "skipped" if FLINK_LEG in state.leg_skips else "selected",
            "reason": state.leg_skips.get(FLINK_LEG, ""),
            "required": FLINK_LEG in state.required,
        },
        "suite_version": __version__,
        "hypothesis_profile": state.profile,
        "strict_should": state.strict_should,
        "clause_set": _clause_set_header(state),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "started": state.started,
        "finished": _now(),
        "exit_status": exitstatus,
    }
    records = list(state.recorder.records.values())
    header["covering_targets"] = _covering_targets(target, records, CLAUSES)
    legs = [*state.selected, *([] if SPARK_LEG in state.leg_skips else [SPARK_LEG])]
    state.document = build_document(header, CLAUSES, records, legs)
    if state.report_dir:
        state.report_paths = write_report(state.report_dir, state.document)


def _covering_targets(
    target: Any, records: Sequence[Any], catalog: Mapping[str, Any]
) -> dict[str, list[str]]:
    """For each capability the target does not claim but a skipped test needed: the targets
    registered in the entry-point group ``ckptconform.targets`` that claim it (the report
    points there: "covered by --impl=..."). A target that does not load is left out."""
    from importlib import metadata

    from ckptconform.target import ENTRY_POINT_GROUP, load_target

    wanted = {
        capability
        for record in records
        if record.status == "SKIP"
        for cid in record.clauses
        if cid in catalog
        for capability in catalog[cid].capabilities
        if capability not in target.capabilities
    }
    if not wanted:
        return {}
    found: dict[str, list[str]] = {capability: [] for capability in sorted(wanted)}
    names = sorted({ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)})
    for name in names:
        if name == target.spec:
            continue
        try:
            other = load_target(name)
        except Exception:  # another target's problem is not this run's
            continue
        for capability in wanted & other.capabilities:
            found[capability].append(name)
    return found


def _spark_status(skip: str | None) -> str:
    """The Spark leg's status in the report: selected, not selected, or skipped (why: reason)."""
    if skip is None:
        return "selected"
    return "not selected" if skip == SPARK_NOT_SELECTED else "skipped"


def _clause_set_header(state: RunState) -> dict[str, Any]:
    """The clause set the run was judged by: the pinned version, or the suite's own."""
    newer = newer_clauses(state.clauses_as_of)
    return {
        "version": state.clauses_as_of or __version__,
        "pinned": state.clauses_as_of is not None,
        "source": state.clauses_as_of_source,
        "newer": {cid: newer[cid] for cid in sorted(newer)},
    }


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """A SHOULD clause's failure (or a newer clause's, under a pinned clause set) is a WARN of
    its own: "W" in the progress, "WARN" with -v, "N warned" in pytest's last line."""
    if report.when != "call" or not report.skipped or not hasattr(report, "wasxfail"):
        return None
    kind = dict(report.user_properties).get(PROP_KIND)
    if kind in ("should", "new"):
        return "warned", "W", ("WARN", {"yellow": True})
    return None


def pytest_sessionstart(session: pytest.Session) -> None:
    """Skipped tests are summed up by reason at the end (``report.skip_lines``): pytest's own
    line per skipped test (``-rs``, ``-ra``) is left to ``-v``."""
    config = session.config
    if config.stash.get(_STATE, None) is None or config.get_verbosity() > 0:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and hasattr(reporter, "reportchars"):
        reporter.reportchars = reporter.reportchars.replace("s", "")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> Any:
    """After pytest's own summary: the skips by reason, the clause summary, the report's
    place, and the verdict as the run's last line."""
    result = yield
    config = session.config
    state = config.stash.get(_STATE, None)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if state is None or reporter is None or state.document is None or not state.recorder.records:
        return result
    _write_conclusion(reporter, state)
    return result


def _write_conclusion(reporter: Any, state: RunState) -> None:
    from ckptconform.report import skip_lines, summary_lines, verdict_line

    document = state.document
    assert document is not None
    reporter.write_sep("=", f"conformance of {state.target.name}")
    for line in skip_lines(document, leave_out=set(state.dead_legs.values())):
        reporter.write_line(line)
    for line in summary_lines(document):
        markup = {"red": True} if "FAIL" in line[:9] or "XPASS" in line[:9] else {}
        if "WARN" in line[:8]:
            markup = {"yellow": True}
        reporter.write_line(line, **markup)
    if state.report_paths is not None:
        json_path, md_path = state.report_paths
        reporter.write_line(f"report: {md_path} and {json_path}")
    for message in state.dead_legs.values():
        reporter.write_line(message, red=True)
    verdict = verdict_line(document)
    passed = ": PASS" in verdict
    reporter.write_line(verdict, bold=True, green=passed, red=not passed)
