"""The stores: one adapter per store family behind one protocol, the registry, the raw operations.

``protocol`` (``StoreAdapter``: what differs per store family; ``FsspecStore``: plain fsspec),
``local``, ``memory``, ``remote`` (file systems on hosts), ``s3`` (with ``budgeted_s3``, s3fs
under the retry budget), ``retry`` (the S3 retry budget, documented once), ``adapters`` (which
adapter serves a scheme, and its traits), ``registry`` (which options reach which store:
``get_filesystem``, ``register_filesystem``, ``store_token``) and ``operations`` (the raw
operations, which ask the path's adapter).
"""
