"""s3fs's file system with the reference's retry budget (``ckptstore.s3.RetryPolicy``).

A module of its own so that s3fs (and botocore) are imported only when the first S3 file
system is made (``ckptstore.s3.instantiate``): s3fs is optional, and a storage on local
disks or in memory never pays for the import.
"""

from __future__ import annotations

import asyncio
import errno
from typing import Any

import s3fs
from fsspec.asyn import sync_wrapper

from ckptstore.s3 import RetryPolicy, install_budget

__all__ = ["BudgetedS3FileSystem"]


class BudgetedS3FileSystem(s3fs.S3FileSystem):  # type: ignore[misc]
    """s3fs whose requests keep to ``retry_attempts`` and ``retry_seconds``.

    Every client it makes gets the budget's retry handler (``ckptstore.s3.install_budget``);
    with ``retry_seconds`` every call also ends at that deadline, retries included.
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
        call = super()._call_s3(method, *akwarglist, **kwargs)
        if seconds is None:
            return await call
        deadline = asyncio.timeout(seconds)
        try:
            async with deadline:
                return await call
        except TimeoutError as exc:
            if not deadline.expired():  # a timeout of the request itself
                raise
            raise TimeoutError(
                errno.ETIMEDOUT,
                f"S3 {method} gave up: retry_seconds={seconds:g} s elapsed",
            ) from exc

    call_s3 = sync_wrapper(_call_s3)
