"""s3fs's file system with the reference's retry budget (``ckptstore.stores.retry.RetryPolicy``),
whose botocore sessions share one loader of botocore's data files per process.

A module of its own so that s3fs (and botocore) are imported only when the first S3 file
system is made (``ckptstore.stores.s3.instantiate``): s3fs is optional, and a storage on local
disks or in memory never pays for the import.
"""

from __future__ import annotations

import asyncio
import errno
import threading
from typing import Any

import s3fs
from aiobotocore.session import AioSession  # type: ignore[import-untyped]
from fsspec.asyn import sync_wrapper

from ckptstore.stores.retry import RetryPolicy, call_budget_left, install_budget

__all__ = ["BudgetedS3FileSystem", "new_session"]

#: botocore's loader of its data files, per data path (``AWS_DATA_PATH``)
_LOADERS: dict[Any, Any] = {}
_LOADERS_LOCK = threading.Lock()


def new_session(**kwargs: Any) -> AioSession:
    """An aiobotocore session as s3fs makes one, reading botocore's data files (the S3 model,
    the endpoints) through this process's loader for its data path.

    A new session parses them anew: about 0.1 s of CPU for each file system's first client,
    where a storage makes a file system per instance and per unpickled handle. The loader
    holds only what it read from those files; credentials and configuration stay the
    session's own.
    """
    session = AioSession(**kwargs)
    data_path = session.get_config_variable("data_path")
    with _LOADERS_LOCK:
        loader = _LOADERS.get(data_path)
        if loader is None:
            loader = _LOADERS[data_path] = session.get_component("data_loader")
    session.register_component("data_loader", loader)
    return session


class BudgetedS3FileSystem(s3fs.S3FileSystem):  # type: ignore[misc]
    """s3fs whose requests keep to ``retry_attempts`` and ``retry_seconds``.

    Every client it makes gets the budget's retry handler
    (``ckptstore.stores.retry.install_budget``); with ``retry_seconds`` every request also ends when
    the public call that sends it has spent that many seconds (``ckptstore.calls``), retries
    included, and none is sent after.
    """

    #: the retry policy of every request (``None``: botocore's own handler)
    ckptstore_policy: RetryPolicy | None = None
    #: s3fs's own: the session, and whether s3fs made it (else the caller gave it)
    session: Any
    _session_is_owned: bool

    async def set_session(self, refresh: bool = False, kwargs: Any = None) -> Any:
        # s3fs makes its own session only where none is set (or, on a refresh, where it made
        # the one set): here it is made by new_session, as s3fs would make it
        if self.session is None or (refresh and self._session_is_owned):
            self.session = new_session(**self.kwargs)
            self._session_is_owned = False  # so that s3fs's refresh keeps this new one
            try:
                return await super().set_session(refresh, kwargs or {})
            finally:
                self._session_is_owned = True
        return await super().set_session(refresh, kwargs or {})

    async def get_s3(self, bucket: Any = None) -> Any:
        client = await super().get_s3(bucket)
        install_budget(client, self.ckptstore_policy)
        return client

    async def _call_s3(self, method: Any, *akwarglist: Any, **kwargs: Any) -> Any:
        policy = self.ckptstore_policy
        seconds = None if policy is None else policy.seconds
        if seconds is None:
            return await super()._call_s3(method, *akwarglist, **kwargs)
        remaining = call_budget_left(seconds)
        if remaining <= 0:
            raise TimeoutError(
                errno.ETIMEDOUT,
                f"S3 {method} not sent: the call's retry_seconds={seconds:g} s are spent",
            )
        deadline = asyncio.timeout(remaining)
        try:
            async with deadline:
                return await super()._call_s3(method, *akwarglist, **kwargs)
        except TimeoutError as exc:
            if not deadline.expired():  # a timeout of the request itself
                raise
            raise TimeoutError(
                errno.ETIMEDOUT,
                f"S3 {method} gave up: the call's retry_seconds={seconds:g} s elapsed",
            ) from exc

    connect = sync_wrapper(set_session)
    call_s3 = sync_wrapper(_call_s3)
