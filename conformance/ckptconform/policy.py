"""Which collected tests run, and why not: the skip policy of an ``--impl`` run.

Pure functions over plain values (no pytest, no I/O): the plugin reads a test's markers and the
run's state, asks ``skip_reason``, and adds the skip. A test is skipped, with the first reason
that applies, when

1. its backend's leg cannot run (unsupported scheme, no server, ...) or, for a Spark test, the
   Spark leg cannot, or, for a test of Flink's own loader, the Flink leg cannot (no Java, no
   py4j, Flink's jars neither cached nor to be fetched);
2. it needs a capability the target does not claim: those of its clauses (``CLAUSES``) and of
   its ``requires`` marker -> "capability X not claimed by <target>", or claims only on other
   schemes than its backend's -> "capability X not claimed by <target> on scheme Y (only on
   Z)";
3. it needs an option key the target does not declare (only for targets that declare
   ``options``): the keys of those capabilities (``OPTIONS[key].capability``) and of its
   ``options`` marker -> "option X not supported by <target>";
4. its ``backend_traits`` marker wants a trait the backend lacks.

A MUST clause without a capability is never skipped by 2; by 3 only where its test passes an
option whatever the target claims (its ``options`` marker), which CONFORMANCE.md lists.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_LEGS",
    "FLINK_LEG",
    "SPARK_LEG",
    "SPARK_NOT_SELECTED",
    "TRAITS",
    "Needs",
    "Offer",
    "needs_of",
    "skip_reason",
    "storage_options_skip",
]

#: The name of the Spark leg in ``--backend``, ``--require-legs``, the leg skips and the report.
SPARK_LEG = "spark"
#: The name of the Flink leg (Flink 2.3.0's own loader in a JVM, for FLK) in ``--require-legs``,
#: the leg skips and the report; it runs wherever Flink can, whatever ``--backend`` selects.
FLINK_LEG = "flink"
#: The legs of a run whose ``--backend`` is not given.
DEFAULT_LEGS = ("local", "memory", "moto", SPARK_LEG)
#: Why the Spark tests of a run whose ``--backend`` leaves the Spark leg out are skipped.
SPARK_NOT_SELECTED = "spark leg: not selected (add spark to --backend)"
#: ``backend_traits`` marker keyword -> attribute of the backend.
TRAITS: Mapping[str, str] = {
    "object_store": "object_store",
    "cross_process": "cross_process",
    "shows_unclosed_files": "shows_unclosed_files",
    "ledger": "has_ledger",
    "any_credentials": "accepts_any_credentials",
}


@dataclass(frozen=True, slots=True)
class Needs:
    """What one collected test needs, read off its markers and the catalog."""

    capabilities: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    backend: str | None = None
    spark: bool = False
    flink: bool = False
    #: (trait, wanted) pairs of its ``backend_traits`` markers; ``None`` wants nothing
    traits: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class Offer:
    """What the run offers a test: the target's claims, the legs that cannot run, the traits."""

    target: str
    capabilities: frozenset[str]
    #: the option keys the target declares; ``None``: it declares none and gets every key
    options: frozenset[str] | None = None
    #: leg name (a backend, ``SPARK_LEG`` or ``FLINK_LEG``) -> why it cannot run
    leg_skips: Mapping[str, str] = field(default_factory=dict)
    #: backend name -> trait -> value
    traits: Mapping[str, Mapping[str, bool]] = field(default_factory=dict)
    #: capability -> the only schemes on which the target claims it
    capability_schemes: Mapping[str, frozenset[str]] = field(default_factory=dict)
    #: backend name -> the URL scheme the target sees on it
    backend_schemes: Mapping[str, str] = field(default_factory=dict)

    def scheme_restriction(self, capability: str, backend: str | None) -> str | None:
        """Why ``capability`` does not hold on ``backend``'s scheme (``None``: it holds)."""
        holds = self.capability_schemes.get(capability)
        scheme = self.backend_schemes.get(backend) if backend is not None else None
        if holds is None or scheme is None or scheme in holds:
            return None
        return f"on scheme {scheme} (only on {', '.join(sorted(holds))})"


def needs_of(
    clause_ids: Iterable[str],
    *,
    requires: Iterable[str] = (),
    options: Iterable[str] = (),
    backend: str | None = None,
    spark: bool = False,
    flink: bool = False,
    traits: Iterable[tuple[str, Any]] = (),
    catalog: Mapping[str, Any] | None = None,
    option_catalog: Mapping[str, Any] | None = None,
) -> Needs:
    """The needs of a test with these clause ids and markers (catalogs default to the suite's)."""
    if catalog is None or option_catalog is None:
        from ckptconform.clauses import CLAUSES, OPTIONS

        catalog = CLAUSES if catalog is None else catalog
        option_catalog = OPTIONS if option_catalog is None else option_catalog
    capabilities = list(
        dict.fromkeys([c for cid in clause_ids for c in catalog[cid].capabilities] + [*requires])
    )
    of_capabilities = [
        key for key, option in option_catalog.items() if option.capability in capabilities
    ]
    return Needs(
        capabilities=tuple(capabilities),
        options=tuple(dict.fromkeys([*of_capabilities, *options])),
        backend=backend,
        spark=spark,
        flink=flink,
        traits=tuple(traits),
    )


def skip_reason(needs: Needs, offer: Offer) -> tuple[str | None, list[str]]:
    """Why the test is skipped (``None``: it runs), and problems with its markers."""
    problems: list[str] = []
    reason = None
    if needs.backend is not None:
        reason = offer.leg_skips.get(needs.backend)
    if reason is None and needs.spark:
        reason = offer.leg_skips.get(SPARK_LEG)
    if reason is None and needs.flink:
        reason = offer.leg_skips.get(FLINK_LEG)
    if reason is None:
        missing = [cap for cap in needs.capabilities if cap not in offer.capabilities]
        if missing:
            reason = f"capability {', '.join(missing)} not claimed by {offer.target}"
    if reason is None:
        for cap in needs.capabilities:
            elsewhere = offer.scheme_restriction(cap, needs.backend)
            if elsewhere is not None:
                reason = f"capability {cap} not claimed by {offer.target} {elsewhere}"
                break
    if reason is None and offer.options is not None:
        unsupported = [key for key in needs.options if key not in offer.options]
        if unsupported:
            reason = f"option {', '.join(unsupported)} not supported by {offer.target}"
    for trait, wanted in needs.traits:
        if trait not in TRAITS:
            problems.append(f"unknown backend trait {trait!r}")
            continue
        if wanted is None:
            continue
        if needs.backend is None:
            problems.append("backend_traits on a test without a backend")
            continue
        if reason is not None:
            continue
        actual = bool(offer.traits.get(needs.backend, {}).get(trait, False))
        if actual != bool(wanted):
            reason = (
                f"backend {needs.backend} has {trait}={actual}; "
                f"the test needs {trait}={bool(wanted)}"
            )
    return reason, problems


def storage_options_skip(
    target: str, declared: Collection[str] | None, backend: str, storage_options: Mapping[str, Any]
) -> str | None:
    """Why a leg cannot run for a target that declares no ``storage_options`` (``None``: it can).

    A backend with connection settings (an S3 endpoint, credentials) hands them over only in
    that option; a backend without them (``local``, ``memory``) needs nothing.
    """
    if declared is None or "storage_options" in declared or not storage_options:
        return None
    return (
        f"backend {backend} passes its connection settings in option storage_options, "
        f"not supported by {target}"
    )
