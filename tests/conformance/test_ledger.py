"""The request ledger: classification, counting on a real moto server, faults, rate limits."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from ckptconform.backends import BackendSettings
from ckptconform.backends.moto import MotoBackend
from ckptconform.servers.ledger import (
    OPERATIONS,
    Recording,
    Request,
    RequestLedger,
    access_key_of,
    classify,
    region_of,
    request_prefix,
)

s3fs = pytest.importorskip("s3fs", reason="s3fs is needed for the moto ledger tests")


@pytest.mark.parametrize(
    ("method", "path", "query", "headers", "expected"),
    [
        ("PUT", "/bkt/a/b", "", {}, ("bkt", "a/b", "PutObject")),
        ("GET", "/bkt/a/b", "", {}, ("bkt", "a/b", "GetObject")),
        ("HEAD", "/bkt/a/b", "", {}, ("bkt", "a/b", "HeadObject")),
        ("HEAD", "/bkt", "", {}, ("bkt", None, "HeadBucket")),
        ("HEAD", "/bkt/", "", {}, ("bkt", None, "HeadBucket")),
        (
            "GET",
            "/bkt",
            "list-type=2&prefix=a%2F&delimiter=%2F",
            {},
            ("bkt", None, "ListObjectsV2"),
        ),
        ("GET", "/bkt", "prefix=a", {}, ("bkt", None, "ListObjects")),
        ("DELETE", "/bkt/a", "", {}, ("bkt", "a", "DeleteObject")),
        ("POST", "/bkt", "delete", {}, ("bkt", None, "DeleteObjects")),
        ("POST", "/bkt", "delete=", {}, ("bkt", None, "DeleteObjects")),
        ("PUT", "/bkt/c", "", {"x-amz-copy-source": "bkt/a"}, ("bkt", "c", "CopyObject")),
        ("POST", "/bkt/big", "uploads", {}, ("bkt", "big", "CreateMultipartUpload")),
        ("PUT", "/bkt/big", "partNumber=1&uploadId=x", {}, ("bkt", "big", "UploadPart")),
        ("POST", "/bkt/big", "uploadId=x", {}, ("bkt", "big", "CompleteMultipartUpload")),
        ("DELETE", "/bkt/big", "uploadId=x", {}, ("bkt", "big", "AbortMultipartUpload")),
        ("PUT", "/bkt", "", {}, ("bkt", None, "CreateBucket")),
        ("PUT", "/bkt/a", "tagging", {}, ("bkt", "a", "Other")),
        ("GET", "/bkt", "versioning", {}, ("bkt", None, "Other")),
        ("GET", "/", "", {}, (None, None, "Other")),
    ],
)
def test_classify(method, path, query, headers, expected):
    assert classify(method, path, query, headers) == expected
    assert expected[2] in OPERATIONS


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoBackend]:
    backend = MotoBackend(BackendSettings(s3_bucket="ledger-tests"))
    backend.start()
    yield backend
    backend.stop()


@pytest.fixture
def ledger(moto: MotoBackend) -> Iterator[RequestLedger]:
    assert moto.ledger is not None
    yield moto.ledger
    moto.ledger.clear_faults()


def _client(moto: MotoBackend) -> Any:
    return s3fs.S3FileSystem(
        skip_instance_cache=True, use_listings_cache=False, **moto.storage_options
    )


def test_moto_binds_to_loopback(moto):
    assert moto.endpoint is not None
    assert moto.endpoint.startswith("http://127.0.0.1:")
    assert moto.storage_options["endpoint_url"] == moto.endpoint


def test_counts_requests_of_this_process(moto, ledger):
    fs = _client(moto)
    with ledger.record() as rec:
        fs.pipe("ledger-tests/p/a", b"0123456789")
        fs.cat_file("ledger-tests/p/a")
        fs.exists("ledger-tests/p")
    # s3fs: pipe = PUT; cat_file = HEAD + GET; exists(prefix) = HEAD + LIST (max-keys=1).
    assert rec.operations() == {
        "PutObject": 1,
        "GetObject": 1,
        "HeadObject": 2,
        "ListObjectsV2": 1,
    }, rec.summary()
    assert rec.count(operation="PutObject") == 1
    assert rec.count(method="HEAD") == 2
    assert rec.count(operation=["GetObject", "PutObject"], key_contains="p/a") == 2
    put = rec.filter(operation="PutObject")[0]
    assert (put.bucket, put.key, put.method) == ("ledger-tests", "p/a", "PUT")
    assert "PutObject" in rec.summary()
    assert "/ledger-tests/p/a" in rec.summary()


def test_counts_requests_of_another_process(moto, ledger):
    code = textwrap.dedent(
        f"""
        import s3fs
        fs = s3fs.S3FileSystem(skip_instance_cache=True, **{moto.storage_options!r})
        with fs.open("ledger-tests/sub/x", "wb") as f:
            f.write(b"hello")
        assert fs.cat_file("ledger-tests/sub/x") == b"hello"
        """
    )
    with ledger.record() as rec:
        subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    assert rec.count(operation="PutObject", key_contains="sub/x") == 1, rec.summary()
    assert rec.count(operation="GetObject", key_contains="sub/x") == 1, rec.summary()


def test_raw_requests_are_marked_and_left_out(moto, ledger):
    with ledger.record() as rec:
        moto.raw.pipe("ledger-tests/raw/a", b"x")
        moto.raw.exists("ledger-tests/raw/a")
    assert rec.count() == 0, rec.summary()
    assert len(rec.all_requests) == 2
    assert all(r.raw for r in rec.all_requests)
    with ledger.record(include_raw=True) as rec_all:
        moto.raw.cat_file("ledger-tests/raw/a")
    assert rec_all.count(operation="GetObject") == 1


def test_multipart_upload_is_classified(moto, ledger):
    fs = _client(moto)
    with ledger.record() as rec, fs.open("ledger-tests/mp/big", "wb", block_size=5 * 2**20) as f:
        for _ in range(11):
            f.write(b"a" * 2**20)
    ops = rec.operations()
    assert ops["CreateMultipartUpload"] == 1, rec.summary()
    assert ops["UploadPart"] == 3, rec.summary()
    assert ops["CompleteMultipartUpload"] == 1, rec.summary()


def test_nested_recordings(moto, ledger):
    fs = _client(moto)
    with ledger.record() as outer:
        fs.pipe("ledger-tests/n/1", b"1")
        with ledger.record() as inner:
            fs.pipe("ledger-tests/n/2", b"2")
    assert outer.count(operation="PutObject") == 2
    assert inner.count(operation="PutObject") == 1


def test_injected_slowdown_is_retried_by_the_client(moto, ledger):
    fs = _client(moto)
    fault = ledger.inject("PutObject", times=2)
    with ledger.record() as rec:
        fs.pipe("ledger-tests/f/a", b"y")
    assert fault.hits == 2
    assert rec.count(operation="PutObject") == 3, rec.summary()
    assert [r.fault for r in rec.requests] == ["503 SlowDown", "503 SlowDown", None]
    assert moto.raw.cat_file("ledger-tests/f/a") == b"y"


def test_persistent_fault_surfaces_as_an_error(moto, ledger):
    fs = s3fs.S3FileSystem(
        skip_instance_cache=True,
        config_kwargs={"retries": {"max_attempts": 1}},
        **moto.storage_options,
    )
    fs.retries = 1  # s3fs's own retry loop, on top of botocore's
    fs.pipe("ledger-tests/f/b", b"z")
    ledger.inject("GetObject", status=500, code="InternalError", times=None)
    with pytest.raises(OSError, match="InternalError"):
        fs.cat_file("ledger-tests/f/b")
    ledger.clear_faults()
    assert fs.cat_file("ledger-tests/f/b") == b"z"


def test_fault_filters_by_key_and_spares_raw_access(moto, ledger):
    fs = _client(moto)
    ledger.inject("PutObject", status=403, code="AccessDenied", times=None, key_contains="deny")
    fs.pipe("ledger-tests/f/allowed", b"ok")
    with pytest.raises(PermissionError):
        fs.pipe("ledger-tests/f/deny-me", b"no")
    moto.raw.pipe("ledger-tests/f/deny-raw", b"raw is never faulted")
    assert moto.raw.cat_file("ledger-tests/f/deny-raw") == b"raw is never faulted"


def test_dropped_connection(moto, ledger):
    fs = _client(moto)
    fs.pipe("ledger-tests/f/c", b"c")
    ledger.inject("GetObject", drop_connection=True, times=1)
    with ledger.record() as rec:
        assert fs.cat_file("ledger-tests/f/c") == b"c"
    gets = rec.filter(operation="GetObject")
    assert [r.fault for r in gets] == ["dropped connection", None], rec.summary()


def test_throttle_answers_slowdown_per_prefix(moto, ledger):
    fs = s3fs.S3FileSystem(
        skip_instance_cache=True,
        config_kwargs={"retries": {"max_attempts": 1}},
        **moto.storage_options,
    )
    fs.retries = 1
    throttle = ledger.throttle(2, operation="PutObject", burst=2)
    with ledger.record() as rec:
        for prefix in ("a", "b"):  # each prefix has its own bucket of two tokens
            for i in range(2):
                fs.pipe(f"ledger-tests/t/{prefix}/{i}", b"r")
    assert [r.fault for r in rec.requests] == [None] * 4, rec.summary()

    def flood() -> None:
        for i in range(2, 40):
            fs.pipe(f"ledger-tests/t/a/{i}", b"r")

    with ledger.record() as rec, pytest.raises(OSError, match=r"SlowDown|reduce your request"):
        flood()
    throttled = [r for r in rec.requests if r.fault]
    assert throttled, rec.summary()
    assert {r.fault for r in throttled} == {"503 SlowDown"}
    assert {r.status for r in throttled} == {503}
    assert throttle.throttled == len(throttled)


def test_slowdown_body_is_s3s_own(moto, ledger):
    ledger.inject("GetObject", times=1)
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(f"{moto.endpoint}/{moto.bucket}/no-such-key", timeout=10)
    body = caught.value.read().decode()
    assert caught.value.code == 503
    assert "<Code>SlowDown</Code>" in body
    assert "<Message>Please reduce your request rate.</Message>" in body


def test_fault_at_a_rate_is_repeatable(moto, ledger):
    fs = s3fs.S3FileSystem(
        skip_instance_cache=True,
        config_kwargs={"retries": {"max_attempts": 1}},
        **moto.storage_options,
    )
    fs.retries = 1
    hits = []
    for _ in range(2):
        ledger.seed(7)
        fault = ledger.inject("PutObject", times=None, rate=0.3, status=500, code="InternalError")
        with ledger.record() as rec:
            for i in range(30):
                with contextlib.suppress(OSError):  # a hit request is not retried here
                    fs.pipe(f"ledger-tests/rate/{i}", b"x")
        ledger.clear_faults()
        hits.append([r.key for r in rec.requests if r.fault])
        assert 0 < fault.hits < 30, rec.summary()
    assert hits[0] == hits[1]


def test_dropped_answer_after_commit_leaves_the_write_done(moto, ledger):
    fs = _client(moto)
    ledger.inject("PutObject", drop_connection=True, after_commit=True, times=1)
    with ledger.record() as rec:
        fs.pipe("ledger-tests/commit/a", b"written once")
    puts = rec.filter(operation="PutObject")
    assert [r.fault for r in puts] == ["dropped connection after commit", None], rec.summary()
    assert moto.raw.cat_file("ledger-tests/commit/a") == b"written once"


def test_requests_record_status_and_bytes(moto, ledger):
    fs = _client(moto)
    with ledger.record() as rec:
        fs.pipe("ledger-tests/bytes/a", b"x" * 1000)
        assert fs.cat_file("ledger-tests/bytes/a", start=0, end=1000) == b"x" * 1000
    (put,) = rec.filter(operation="PutObject")
    (get,) = rec.filter(operation="GetObject")
    assert (put.status, put.bytes_in) == (200, 1000)
    assert (get.status, get.bytes_out) in {(200, 1000), (206, 1000)}


def test_keys_are_decoded_once(moto, ledger):
    fs = _client(moto)
    with ledger.record() as rec:
        fs.pipe("ledger-tests/pct/literal%2fslash", b"p")
    (put,) = rec.filter(operation="PutObject")
    assert (put.bucket, put.key) == ("ledger-tests", "pct/literal%2fslash"), rec.summary()
    assert rec.count(key_contains="%2f") == 1


def test_unknown_operation_is_rejected(ledger):
    with pytest.raises(ValueError, match="unknown S3 operation"):
        ledger.inject("PutObjekt")
    with ledger.record() as rec:
        pass
    with pytest.raises(ValueError, match="unknown S3 operation"):
        rec.count(operation="Nope")


def test_stop_frees_the_port():
    backend = MotoBackend(BackendSettings(s3_bucket="stop-test"))
    backend.start()
    assert backend.endpoint is not None
    port = int(backend.endpoint.rsplit(":", 1)[1])
    backend.stop()
    backend.stop()  # idempotent
    with socket.socket() as sock:
        sock.settimeout(2)
        assert sock.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.parametrize(
    ("authorization", "query", "expected"),
    [
        (
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261123/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;x-amz-date, Signature=abc",
            "",
            "AKIDEXAMPLE",
        ),
        ("AWS AKIDV2:c2lnbmF0dXJl", "", "AKIDV2"),
        ("", "X-Amz-Credential=AKIDQUERY%2F20261123%2Fus-east-1%2Fs3%2Faws4_request", "AKIDQUERY"),
        ("", "", None),
        ("Bearer token", "list-type=2", None),
    ],
)
def test_access_key_of_a_signed_request(authorization, query, expected):
    assert access_key_of(authorization, query) == expected


@pytest.mark.parametrize(
    ("authorization", "query", "expected"),
    [
        (
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261123/eu-west-1/s3/aws4_request, "
            "SignedHeaders=host;x-amz-date, Signature=abc",
            "",
            "eu-west-1",
        ),
        ("AWS AKIDV2:c2lnbmF0dXJl", "", None),
        (
            "",
            "X-Amz-Credential=AKIDQUERY%2F20261123%2Fap-south-2%2Fs3%2Faws4_request",
            "ap-south-2",
        ),
        ("", "X-Amz-Credential=AKIDQUERY", None),
        ("", "", None),
        ("Bearer token", "list-type=2", None),
    ],
)
def test_region_of_a_signed_request(authorization, query, expected):
    assert region_of(authorization, query) == expected


def test_requests_record_the_region_they_were_signed_for(moto, ledger):
    fs = s3fs.S3FileSystem(
        endpoint_url=moto.endpoint, key="AKIDREGION", secret="s",
        client_kwargs={"region_name": "eu-west-1"}, skip_instance_cache=True,
    )  # fmt: skip
    with ledger.record() as rec:
        fs.pipe_file(f"{moto.bucket}/regional/object", b"x")
        assert fs.cat_file(f"{moto.bucket}/regional/object") == b"x"
    assert {r.region for r in rec.filter(operation=("PutObject", "GetObject"))} == {"eu-west-1"}


def test_requests_record_the_access_key_never_the_secret(moto, ledger):
    fs = s3fs.S3FileSystem(
        endpoint_url=moto.endpoint, key="AKIDRECORDED", secret="never-recorded",
        skip_instance_cache=True,
    )  # fmt: skip
    with ledger.record() as rec:
        fs.pipe_file(f"{moto.bucket}/keyed/object", b"x")
    (request,) = rec.filter(operation="PutObject")
    assert request.access_key == "AKIDRECORDED"
    assert "never-recorded" not in repr(request)


def _request(t, op, key="k/a", fault=None, status=200, bucket="b", size=0):
    method = {"PutObject": "PUT", "GetObject": "GET", "HeadObject": "HEAD"}[op]
    return Request(
        t, method, bucket, key, "", op, fault=fault, status=status, bytes_in=size, bytes_out=0
    )


def test_recording_figures_peaks_retries_and_bytes():
    rec = Recording(
        all_requests=[
            _request(100.0, "PutObject", "p/1", size=10),
            _request(100.2, "PutObject", "p/2", fault="503 SlowDown", status=503),
            _request(100.5, "PutObject", "p/2", size=5),
            _request(101.1, "GetObject", "q/1"),
            _request(101.2, "HeadObject", "q/1"),
            _request(101.3, "PutObject", "q/3", fault="dropped connection", status=None),
            _request(102.9, "PutObject", "q/4", size=7),
        ]
    )
    assert rec.bytes_moved() == (22, 0)
    assert len(rec.faulted()) == 2
    assert rec.retried() == 1
    assert rec.per_second()["PutObject"] == Counter({0: 3, 1: 1, 2: 1})
    assert rec.peak_per_second() == {"PutObject": 3, "GetObject": 1, "HeadObject": 1}
    by_prefix = rec.peak_per_second(by=lambda r: request_prefix(r))
    assert by_prefix == {"b/p/": 3, "b/q/": 3}


def test_small_pages_serve_every_object_once(moto, ledger):
    """boto3's own paginator follows the ledger's pages of ListObjectsV2 and ListObjects."""
    fs = _client(moto)
    keys = [f"pages/v/k{i}" for i in range(7)]
    for key in keys:
        fs.pipe(f"ledger-tests/{key}", b"x")
    with ledger.small_pages(2) as pager, ledger.record() as rec:
        v2 = fs.call_s3("list_objects_v2", Bucket="ledger-tests", Prefix="pages/v/")
        pages_v2 = [v2]
        while v2.get("IsTruncated"):
            v2 = fs.call_s3(
                "list_objects_v2", Bucket="ledger-tests", Prefix="pages/v/",
                ContinuationToken=v2["NextContinuationToken"],
            )  # fmt: skip
            pages_v2.append(v2)
        v1 = fs.call_s3("list_objects", Bucket="ledger-tests", Prefix="pages/v/")
        pages_v1 = [v1]
        while v1.get("IsTruncated"):
            v1 = fs.call_s3(
                "list_objects", Bucket="ledger-tests", Prefix="pages/v/", Marker=v1["NextMarker"]
            )
            pages_v1.append(v1)
        whole = fs.find("ledger-tests/pages/v/")  # s3fs's paginator
    for pages in (pages_v2, pages_v1):
        assert [len(p.get("Contents", [])) for p in pages] == [2, 2, 2, 1]
        assert [c["Key"] for p in pages for c in p["Contents"]] == keys
    assert [p["KeyCount"] for p in pages_v2] == [2, 2, 2, 1]
    assert sorted(whole) == [f"ledger-tests/{k}" for k in keys]
    # the first request of each listing reached the server; its continuations did not
    assert rec.count(operation="ListObjectsV2") == 4 + 4
    assert rec.count(operation="ListObjects") == 4
    assert pager.served == 3 + 3 + 3, "continuations are answered from the first snapshot"
    assert all(r.status == 200 for r in rec.requests), rec.summary()


def _list_uploads(fs: Any, *, with_upload_id_marker: bool = True) -> list[dict[str, Any]]:
    page = fs.call_s3("list_multipart_uploads", Bucket="ledger-tests", Prefix="pages/u/")
    seen = [page]
    while page.get("IsTruncated"):
        markers = {"KeyMarker": page["NextKeyMarker"]}
        if with_upload_id_marker:
            markers["UploadIdMarker"] = page["NextUploadIdMarker"]
        page = fs.call_s3(
            "list_multipart_uploads", Bucket="ledger-tests", Prefix="pages/u/", **markers
        )
        seen.append(page)
    return seen


def test_small_pages_of_multipart_uploads(moto, ledger):
    """Key k1 has two uploads (listed second and third): the first page ends between them.
    Both markers resume after the page's last upload; the key marker alone resumes after
    every upload of its key, as S3 reads it, so a client that drops the upload-id marker
    misses the second upload of k1."""
    fs = _client(moto)
    keys = ["k0", "k1", "k1", "k2", "k3"]
    created = [
        (key, fs.call_s3("create_multipart_upload", Bucket="ledger-tests", Key=f"pages/u/{key}"))
        for key in keys
    ]
    try:
        with ledger.small_pages(2) as pager:
            seen = _list_uploads(fs)
            assert [len(p.get("Uploads", [])) for p in seen] == [2, 2, 1]
            assert pager.served == 2
            listed = [u["UploadId"] for p in seen for u in p["Uploads"]]
            assert sorted(listed) == sorted(c["UploadId"] for _, c in created)
            keys_only = _list_uploads(fs, with_upload_id_marker=False)
            assert [u["Key"] for p in keys_only for u in p.get("Uploads", [])] == [
                "pages/u/k0", "pages/u/k1", "pages/u/k2", "pages/u/k3",
            ]  # fmt: skip
    finally:
        for key, upload in created:
            with contextlib.suppress(Exception):
                fs.call_s3(
                    "abort_multipart_upload", Bucket="ledger-tests", Key=f"pages/u/{key}",
                    UploadId=upload["UploadId"],
                )  # fmt: skip


def test_small_pages_leave_raw_and_short_listings_alone(moto, ledger):
    fs = _client(moto)
    for i in range(3):
        fs.pipe(f"ledger-tests/pages/r/k{i}", b"x")
    with ledger.small_pages(2):
        raw = moto.raw.call_s3("list_objects_v2", Bucket="ledger-tests", Prefix="pages/r/")
        short = fs.call_s3("list_objects_v2", Bucket="ledger-tests", Prefix="pages/r/k1")
        by_dir = fs.call_s3(
            "list_objects_v2", Bucket="ledger-tests", Prefix="pages/", Delimiter="/"
        )
    assert len(raw["Contents"]) == 3
    assert not raw["IsTruncated"]
    assert [c["Key"] for c in short["Contents"]] == ["pages/r/k1"]
    assert not by_dir["IsTruncated"]


def test_per_key_delete_errors_delete_nothing(moto, ledger):
    fs = _client(moto)
    keys = ["pd/a&b", "pd/c"]
    for key in keys:
        fs.pipe(f"ledger-tests/{key}", b"x")
    ledger.inject(per_key=True, code="AccessDenied", times=None)
    with ledger.record() as rec:
        answer = fs.call_s3(
            "delete_objects", Bucket="ledger-tests",
            Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True},
        )  # fmt: skip
    assert sorted((e["Key"], e["Code"]) for e in answer["Errors"]) == [
        ("pd/a&b", "AccessDenied"),
        ("pd/c", "AccessDenied"),
    ]
    assert [r.fault for r in rec.requests] == ["AccessDenied for every key"], rec.summary()
    ledger.clear_faults()
    assert sorted(moto.raw.find("ledger-tests/pd/")) == [f"ledger-tests/{k}" for k in keys]
    with pytest.raises(ValueError):
        ledger.inject(per_key=True, drop_connection=True)


def test_delay_hangs_then_answers_and_clearing_ends_the_hang(moto, ledger):
    import threading
    import time

    fs = _client(moto)
    fs.pipe("ledger-tests/slow/a", b"late")
    ledger.inject("GetObject", delay=0.5, times=1)
    started = time.monotonic()
    assert fs.cat_file("ledger-tests/slow/a") == b"late"
    assert time.monotonic() - started >= 0.5
    fault = ledger.inject("GetObject", delay=60, times=None)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fs.cat_file("ledger-tests/slow/a")))
    started = time.monotonic()
    reader.start()
    time.sleep(0.5)
    ledger.clear_faults()
    reader.join(10)
    assert got == [b"late"]
    assert time.monotonic() - started < 10
    assert fault.label == "answer delayed 60 s"
    with pytest.raises(ValueError):
        ledger.inject("GetObject", delay=1, drop_connection=True)
