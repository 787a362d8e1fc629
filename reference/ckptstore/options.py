"""Flink's checkpoint-storage configuration keys and how their values are read (CFG1-CFG5, CFG9).

Each option has its 2.x key and the deprecated 1.x keys it falls back to, in Flink's order
of precedence: the 2.x key wins over any deprecated one. Values come from a plain mapping
(``str``, ``int`` or ``bool``, as in a ``flink-conf.yaml`` turned into a dict) and are parsed
as Flink parses them: MemorySize strings such as ``"20kb"``, ``"1 mb"`` or ``"512"``,
booleans as ``true``/``false``, integers as decimal strings. A value that cannot be parsed
raises ``ConfigurationError`` naming the key and the value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ckptstore.errors import ConfigurationError
from ckptstore.validation import describe

__all__ = [
    "CHECKPOINTS_DIRECTORY",
    "CHECKPOINT_STORAGE",
    "CREATE_CHECKPOINT_SUB_DIR",
    "ENTROPY_INJECT_KEY",
    "ENTROPY_INJECT_LENGTH",
    "FS_SMALL_FILE_THRESHOLD",
    "FS_WRITE_BUFFER_SIZE",
    "SAVEPOINT_DIRECTORY",
    "ConfigOption",
    "get_bool",
    "get_int",
    "get_memory_size",
    "get_string",
    "parse_memory_size",
]


@dataclass(frozen=True, slots=True)
class ConfigOption:
    """A configuration key, its deprecated fallbacks and its default."""

    key: str
    deprecated_keys: tuple[str, ...] = ()
    default: Any = None

    def lookup(self, config: Mapping[str, Any]) -> tuple[str, Any] | None:
        """The first key of this option present in ``config`` and its value, else ``None``."""
        for key in (self.key, *self.deprecated_keys):
            if key in config and config[key] is not None:
                return key, config[key]
        return None


CHECKPOINT_STORAGE = ConfigOption("execution.checkpointing.storage", ("state.checkpoint-storage",))
CHECKPOINTS_DIRECTORY = ConfigOption(
    "execution.checkpointing.dir", ("state.checkpoints.dir", "state.backend.fs.checkpointdir")
)
SAVEPOINT_DIRECTORY = ConfigOption(
    "execution.checkpointing.savepoint-dir",
    ("state.savepoints.dir", "savepoints.state.backend.fs.dir"),
)
CREATE_CHECKPOINT_SUB_DIR = ConfigOption(
    "execution.checkpointing.create-subdir", ("state.checkpoints.create-subdir",), True
)
FS_SMALL_FILE_THRESHOLD = ConfigOption(
    "execution.checkpointing.data-inline-threshold",
    ("state.storage.fs.memory-threshold", "state.backend.fs.memory-threshold"),
    20 * 1024,
)
FS_WRITE_BUFFER_SIZE = ConfigOption(
    "execution.checkpointing.write-buffer-size",
    ("state.storage.fs.write-buffer-size", "state.backend.fs.write-buffer-size"),
    4 * 1024,
)
ENTROPY_INJECT_KEY = ConfigOption("s3.entropy.key")
ENTROPY_INJECT_LENGTH = ConfigOption("s3.entropy.length", (), 4)

# Flink's MemorySize units (case-insensitive): bytes, then powers of 1024.
_UNITS = {
    "": 1,
    "b": 1,
    "bytes": 1,
    "k": 1024,
    "kb": 1024,
    "kibibytes": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mebibytes": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gibibytes": 1024**3,
    "t": 1024**4,
    "tb": 1024**4,
    "tebibytes": 1024**4,
}
_MEMORY_SIZE_RE = re.compile(r"^([0-9]+)\s*([A-Za-z]*)$")
_INT_RE = re.compile(r"^[+-]?[0-9]+$")
_LONG_MAX = 2**63 - 1


def parse_memory_size(text: str) -> int:
    """Parse a MemorySize string (``"20kb"``, ``"1 mb"``, ``"0b"``, ``"512"``) into bytes.

    Units are b/bytes, k/kb/kibibytes, m/mb/mebibytes, g/gb/gibibytes, t/tb/tebibytes, any
    case, with optional whitespace before the unit; no unit means bytes. Fractions and
    negative numbers are not MemorySizes. Raises ``ConfigurationError`` otherwise.
    """
    if not isinstance(text, str):
        raise ConfigurationError(f"a memory size must be a string, got {describe(text)}")
    match = _MEMORY_SIZE_RE.match(text.strip())
    if match is None:
        raise ConfigurationError(
            f"{text!r} is not a memory size: expected a whole number of bytes with an optional "
            "unit (b, kb, mb, gb, tb), for example '20kb' or '1mb'"
        )
    number, unit = match.groups()
    multiplier = _UNITS.get(unit.lower())
    if multiplier is None:
        raise ConfigurationError(
            f"{text!r} is not a memory size: unknown unit {unit!r} "
            "(allowed: b, bytes, k, kb, m, mb, g, gb, t, tb)"
        )
    value = int(number) * multiplier
    if value > _LONG_MAX:
        raise ConfigurationError(
            f"The value {text!r} cannot be represented as a 64-bit number (numeric overflow)"
        )
    return value


def get_string(config: Mapping[str, Any], option: ConfigOption) -> str | None:
    """The option's string value (stripped), ``None`` when unset.

    A blank value is an error rather than "unset": for the checkpoint directory it would
    silently switch the storage from files to JobManager memory.
    """
    found = option.lookup(config)
    if found is None:
        return option.default if isinstance(option.default, str) else None
    key, value = found
    if not isinstance(value, str):
        raise ConfigurationError(f"configuration key {key!r} needs a string, got {describe(value)}")
    if not value.strip():
        raise ConfigurationError(
            f"configuration key {key!r} is empty; set a value or remove the key"
        )
    return value.strip()


def get_bool(config: Mapping[str, Any], option: ConfigOption) -> bool:
    """The option's boolean value: ``True``/``False`` or the strings ``true``/``false``."""
    found = option.lookup(config)
    if found is None:
        return bool(option.default)
    key, value = found
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConfigurationError(
        f"configuration key {key!r} needs a boolean (true or false), got {describe(value)}"
    )


def get_int(config: Mapping[str, Any], option: ConfigOption) -> int:
    """The option's integer value: an ``int`` (not a ``bool``) or a decimal string."""
    found = option.lookup(config)
    if found is None:
        return int(option.default)
    key, value = found
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _INT_RE.match(value.strip()):
        return int(value.strip())
    raise ConfigurationError(f"configuration key {key!r} needs an integer, got {describe(value)}")


def get_memory_size(config: Mapping[str, Any], option: ConfigOption) -> tuple[str | None, int]:
    """The option's MemorySize in bytes and the key it came from (``None``: the default).

    An ``int`` is a number of bytes; a string is parsed by ``parse_memory_size``.
    """
    found = option.lookup(config)
    if found is None:
        return None, int(option.default)
    key, value = found
    if isinstance(value, int) and not isinstance(value, bool):
        return key, value
    if isinstance(value, str):
        try:
            return key, parse_memory_size(value)
        except ConfigurationError as exc:
            raise ConfigurationError(f"configuration key {key!r}: {exc}") from None
    raise ConfigurationError(
        f"configuration key {key!r} needs a memory size such as '20kb', got {describe(value)}"
    )
