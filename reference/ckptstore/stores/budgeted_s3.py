"""s3fs's file system with the reference's retry budget (``ckptstore.stores.retry.RetryPolicy``).

A module of its own so that s3fs (and botocore) are imported only when the first S3 file
system is made (``ckptstore.stores.s3.instantiate``): s3fs is optional, and a storage on local
disks or in memory never pays for the import.
"""

from __future__ import annotations

import asyncio
import errno
from typing import Any

import s3fs
from fsspec.asyn import sync_wrapper

from ckptstore.stores.retry import RetryPolicy, call_budget_left, install_budget

__all__ = ["BudgetedS3FileSystem"]


class BudgetedS3FileSystem(s3fs.S3FileSystem):  # type: ignore[misc]
    """s3fs whose requests keep to ``retry_attempts`` and ``retry_seconds``.

    Every client it makes gets the budget's retry handler
    (``ckptstore.stores.retry.install_budget``); with ``retry_seconds`` every request also ends when
    the public call that sends it has spent that many seconds (``ckptstore.calls``), retries
    included, and none is sent after.
    """

    #: the retry policy of every request (``None``: botocore's own handler)
    ckptstore_policy: RetryPolicy | None = None

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

    call_s3 = sync_wrapper(_call_s3)
