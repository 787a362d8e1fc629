"""S3 backends: the shared S3 plumbing, and the ``s3`` leg for any endpoint (``--s3-endpoint``).

Credentials come from ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` (and ``AWS_SESSION_TOKEN``,
``AWS_REGION``); the bucket from ``--s3-bucket`` (default ``ckptconform``) and it is created if
missing. The raw file system is s3fs with no instance or listings cache, and it tags its requests
with ``ledger.RAW_USER_AGENT`` so a request ledger leaves them out of counts.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from ckptconform.backends.base import Backend, BackendUnavailableError
from ckptconform.ledger import RAW_USER_AGENT

__all__ = ["S3Backend", "S3EndpointBackend", "s3_missing_packages"]


def s3_missing_packages() -> str | None:
    """A reason when s3fs is not installed, else ``None``."""
    try:
        import s3fs  # noqa: F401
    except ImportError as exc:
        return f"s3fs is not installed ({exc}); pip install 'checkpoint-conformance[s3]'"
    return None


class S3Backend(Backend):
    """Common code of the S3 legs: options, raw s3fs, bucket creation."""

    scheme = "s3"
    object_store = True
    cross_process = True

    endpoint: str | None = None
    #: Where the endpoint will be, for the run header before the backend starts.
    planned_endpoint: ClassVar[str] = ""
    bucket: str = "ckptconform"
    region: str = "us-east-1"
    _key: str | None = None
    _secret: str | None = None
    _token: str | None = None
    _fs: Any = None

    @property
    def storage_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if self.region != "us-east-1":
            # us-east-1 is the default; naming it makes s3fs send an invalid LocationConstraint.
            options["client_kwargs"] = {"region_name": self.region}
        if self.endpoint:
            options["endpoint_url"] = self.endpoint
        if self._key is not None:
            options["key"] = self._key
        if self._secret is not None:
            options["secret"] = self._secret
        if self._token is not None:
            options["token"] = self._token
        return options

    def _make_raw(self) -> Any:
        import s3fs

        return s3fs.S3FileSystem(
            skip_instance_cache=True,
            use_listings_cache=False,
            config_kwargs={"user_agent_extra": RAW_USER_AGENT},
            **self.storage_options,
        )

    def _ensure_bucket(self) -> None:
        fs = self._make_raw()
        try:
            if not fs.exists(self.bucket):
                fs.mkdir(self.bucket)
        except Exception as exc:
            raise BackendUnavailableError(
                f"{self.name}: cannot use bucket {self.bucket!r} at {self.endpoint}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        self._fs = fs

    @property
    def raw(self) -> Any:
        if self._fs is None:
            self.start()
        return self._fs

    @property
    def base_url(self) -> str:
        return f"s3://{self.bucket}"

    def url_of(self, raw_path: str) -> str:
        return "s3://" + raw_path.lstrip("/")

    def describe(self) -> str:
        ledger = ", request ledger" if self.has_ledger else ""
        bucket = self.bucket if self.started else self.settings.s3_bucket
        where = self.endpoint or self.planned_endpoint or self.settings.s3_endpoint or "no endpoint"
        return f"{self.name} (s3, {where}, bucket {bucket}{ledger})"


class S3EndpointBackend(S3Backend):
    """Any running S3 endpoint given with ``--s3-endpoint``."""

    name = "s3"

    def availability(self) -> str | None:
        if not self.settings.s3_endpoint:
            return "s3: no endpoint given (use --s3-endpoint=URL)"
        return s3_missing_packages()

    def _start(self) -> None:
        self.endpoint = self.settings.s3_endpoint
        self.bucket = self.settings.s3_bucket
        self.region = (
            os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        )
        self._key = os.environ.get("AWS_ACCESS_KEY_ID")
        self._secret = os.environ.get("AWS_SECRET_ACCESS_KEY")
        self._token = os.environ.get("AWS_SESSION_TOKEN")
        self._ensure_bucket()

    def _stop(self) -> None:
        self._fs = None
