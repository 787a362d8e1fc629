"""Hypothesis profiles of the suite: ``dev``, ``ci``, ``gate`` and ``thorough``.

``dev`` is fast; ``ci`` is deterministic; ``gate`` is ``ci`` without shrinking, for gates that
need a verdict rather than a minimal example (a failing run ends as soon as it fails, which
matters when most runs are expected to fail, as in the suite's own meta-tests); ``thorough``
searches long.

The plugin registers them when pytest loads it, so ``--hypothesis-profile=ci`` works too. The
default is ``ci`` when the ``CI`` environment variable is set, else ``dev``; ``HYPOTHESIS_PROFILE``
or hypothesis's own ``--hypothesis-profile`` option override it. Deadlines are off everywhere:
a request to an S3 server has no stable latency.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

__all__ = ["PROFILES", "default_profile", "register_profiles"]

PROFILES = ("dev", "ci", "gate", "thorough")


def register_profiles() -> None:
    """Register the three profiles (idempotent)."""
    slow = [HealthCheck.too_slow]
    settings.register_profile("dev", max_examples=10, stateful_step_count=10, deadline=None)
    settings.register_profile(
        "ci",
        max_examples=40,
        stateful_step_count=25,
        deadline=None,
        derandomize=True,
        database=None,
        print_blob=True,
        suppress_health_check=slow,
    )
    settings.register_profile(
        "gate",
        settings.get_profile("ci"),
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
    )
    settings.register_profile(
        "thorough",
        max_examples=400,
        stateful_step_count=100,
        deadline=None,
        print_blob=True,
        suppress_health_check=slow,
    )


def default_profile(environ: dict[str, str] | None = None) -> str:
    """The profile to load when the command line names none."""
    env = os.environ if environ is None else environ
    chosen = env.get("HYPOTHESIS_PROFILE", "").strip()
    if chosen:
        return chosen
    return "ci" if env.get("CI", "").strip() not in ("", "0", "false", "False") else "dev"
