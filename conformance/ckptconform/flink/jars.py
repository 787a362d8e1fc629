"""Apache Flink 2.3.0's jars on demand: from the ``apache-flink-libraries`` wheel, cached.

The kit's, because three of its users need Flink itself: the Flink targets (``--impl=flink``,
which run Flink's storages through the JVM gateway, ``ckptconform.flink.gateway``), the FLK
clause (Flink's own loader reads what a target wrote) and ``ckptconform bench --peer flink``.

The wheel on the package index (about 330 MB, no dependencies) carries Flink's ``lib/``; the
storages live in ``flink-dist-2.3.0.jar`` alone. On first use ``pip download`` fetches the
wheel (pip's own cache keeps it), this module extracts ``flink-dist`` and the log4j jars into
the cache directory (``$CKPTCONFORM_CACHE`` or ``~/.cache/ckptconform``, then
``flink-2.3.0/lib``) and deletes the wheel copy; later runs find the jars there and download
nothing. A lock file keeps two processes from extracting at once.

py4j's own jar comes with the ``py4j`` package (``share/py4j``) or with pyspark's jars.

``unavailable_reason()`` answers in one sentence why the Flink target cannot run here (no Java,
Java too old, no py4j), never with a stack trace; ``cached_jars()`` looks without downloading.
"""

from __future__ import annotations

import fcntl
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

__all__ = [
    "FLINK_VERSION",
    "MINIMUM_JAVA",
    "FlinkUnavailableError",
    "cache_dir",
    "cached_jars",
    "ensure_jars",
    "java_unavailable_reason",
    "py4j_jar",
    "unavailable_reason",
]

FLINK_VERSION = "2.3.0"
WHEEL = "apache-flink-libraries"
#: Flink 2.3.0's classes are Java 11 bytecode (class file version 55).
MINIMUM_JAVA = 11

#: The jars of the wheel's ``pyflink/lib`` this target puts on the class path.
_WANTED = (
    f"flink-dist-{FLINK_VERSION}.jar",
    "log4j-api-",
    "log4j-core-",
    "log4j-slf4j-impl-",
)
_DIST = f"flink-dist-{FLINK_VERSION}.jar"


class FlinkUnavailableError(RuntimeError):
    """Flink's storages cannot run in this process; the message is the one-sentence reason."""


def cache_dir() -> Path:
    """``$CKPTCONFORM_CACHE`` (or ``~/.cache/ckptconform``) / ``flink-2.3.0``."""
    base = os.environ.get("CKPTCONFORM_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ckptconform"
    )
    return Path(base) / f"flink-{FLINK_VERSION}"


def _lib_dir() -> Path:
    return cache_dir() / "lib"


def cached_jars() -> list[Path] | None:
    """The class path of Flink's jars when they are in the cache, else None (no download)."""
    lib = _lib_dir()
    if not (lib / _DIST).is_file() or not (lib / "COMPLETE").is_file():
        return None
    return sorted(lib.glob("*.jar"))


def ensure_jars() -> list[Path]:
    """Flink's jars from the cache, downloading the wheel with pip on first use."""
    jars = cached_jars()
    if jars is not None:
        return jars
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            jars = cached_jars()  # another process may have finished meanwhile
            if jars is None:
                _download_and_extract(root)
                jars = cached_jars()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    if jars is None:
        raise FlinkUnavailableError(f"Flink {FLINK_VERSION}'s jars did not appear in {root}.")
    return jars


def _download_and_extract(root: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="wheel-", dir=root) as tmp:
        command = [
            sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
            "--no-deps", "--only-binary=:all:", "--dest", tmp, f"{WHEEL}=={FLINK_VERSION}",
        ]  # fmt: skip
        completed = subprocess.run(
            command, capture_output=True, text=True, timeout=1800, check=False
        )
        wheels = glob.glob(os.path.join(tmp, "*.whl"))
        if completed.returncode != 0 or not wheels:
            last = (completed.stderr or completed.stdout).strip().splitlines()[-1:] or ["?"]
            raise FlinkUnavailableError(
                f"pip could not download {WHEEL}=={FLINK_VERSION} (Flink's jars): {last[0]}"
            )
        lib = _lib_dir()
        staging = Path(tempfile.mkdtemp(prefix="lib-", dir=root))
        try:
            with zipfile.ZipFile(wheels[0]) as wheel:
                for name in wheel.namelist():
                    base = name.rsplit("/", 1)[-1]
                    if (
                        name.startswith("pyflink/lib/")
                        and base.endswith(".jar")
                        and base.startswith(_WANTED)
                    ):
                        with wheel.open(name) as src, open(staging / base, "wb") as dst:
                            shutil.copyfileobj(src, dst, 1 << 20)
            if not (staging / _DIST).is_file():
                raise FlinkUnavailableError(f"the {WHEEL} wheel holds no {_DIST}")
            (staging / "COMPLETE").write_text(f"{WHEEL}=={FLINK_VERSION}\n")
            shutil.rmtree(lib, ignore_errors=True)
            staging.rename(lib)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def py4j_jar() -> str | None:
    """py4j's gateway jar: the ``py4j`` package's, else the one pyspark ships."""
    try:
        from py4j.java_gateway import find_jar_path
    except ImportError:
        return None
    path = find_jar_path()
    if path and os.path.exists(path):
        return str(path)
    try:
        import pyspark
    except ImportError:
        return None
    found = sorted(glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "py4j-*.jar")))
    return found[-1] if found else None


def java_unavailable_reason(environ: dict[str, str] | None = None) -> str | None:
    """None when a Java that runs Flink 2.3.0 is here, else the one sentence that says why not."""
    import sparkrun

    return sparkrun.java_unavailable_reason(
        f"The flink target needs Java {MINIMUM_JAVA} or newer", MINIMUM_JAVA, environ
    )


def unavailable_reason(*, download: bool = False) -> str | None:
    """Why Flink's storages cannot run here (one sentence), or None.

    Without ``download`` the jars must already be in the cache; with it they are fetched.
    """
    reason = java_unavailable_reason()
    if reason is not None:
        return reason
    try:
        import py4j  # noqa: F401
    except ImportError:
        return "The flink target needs py4j: pip install 'checkpoint-conformance[flink]'."
    if py4j_jar() is None:
        return "The flink target needs py4j's jar (py4j/share/py4j), which was not found."
    if download:
        try:
            ensure_jars()
        except FlinkUnavailableError as exc:
            return str(exc)
        return None
    if cached_jars() is None:
        return (
            f"Flink {FLINK_VERSION}'s jars are not in the cache {cache_dir()} "
            f"(fetched from the {WHEEL} wheel on first use of the flink target)."
        )
    return None
