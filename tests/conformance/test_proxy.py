"""The counting proxy in front of a separate S3 server process, and the s3 leg that uses it.

moto's server runs as its own process here (not the suite's in-process moto backend), so the
proxy is tested the way users run it: against a server the suite does not control.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

import pytest

from ckptconform.backends import BackendSettings
from ckptconform.backends.s3 import S3EndpointBackend
from ckptconform.plugin import suite_dir
from ckptconform.servers.ledger import RAW_USER_AGENT
from ckptconform.servers.proxy import CountingProxy

s3fs = pytest.importorskip("s3fs", reason="s3fs is needed for the proxy tests")
pytest.importorskip("moto.server", reason="moto[server] is needed for the proxy tests")

BUCKET = "proxy-tests"
MiB = 2**20


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except OSError:
        return False


def _refuses(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) != 0


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    """moto's S3 server as a separate process on 127.0.0.1; always terminated."""
    for _ in range(3):  # the free port may be taken between probing and binding
        port = _free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while proc.poll() is None and time.monotonic() < deadline:
                if _answers(f"{url}/moto-api/"):
                    break
                time.sleep(0.05)
            if proc.poll() is None and _answers(f"{url}/moto-api/"):
                yield url
                return
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    pytest.fail("moto's server did not start on 127.0.0.1")


@pytest.fixture(scope="module")
def proxy(moto_url: str) -> Iterator[CountingProxy]:
    with CountingProxy(moto_url) as running:
        yield running


@pytest.fixture
def fs(proxy: CountingProxy) -> Any:
    client = _client(proxy.url)
    if not client.exists(BUCKET):
        client.mkdir(BUCKET)
    yield client
    proxy.ledger.clear_faults()


def _client(url: str | None, **options: Any) -> Any:
    return s3fs.S3FileSystem(
        endpoint_url=url,
        key="testing",
        secret="testing",
        skip_instance_cache=True,
        use_listings_cache=False,
        **options,
    )


def test_proxy_binds_to_loopback_and_differs_from_upstream(proxy, moto_url):
    assert proxy.url is not None
    assert proxy.url.startswith("http://127.0.0.1:")
    assert proxy.url != moto_url
    assert proxy.upstream == moto_url


def test_forwards_s3fs_operations_and_classifies_them(fs, proxy):
    base = f"{BUCKET}/ops"
    big = os.urandom(12 * MiB)
    with proxy.ledger.record() as rec:
        fs.pipe(f"{base}/small", b"0123456789")
        assert fs.cat_file(f"{base}/small", start=2, end=6) == b"2345"
        with fs.open(f"{base}/big", "wb", block_size=5 * MiB) as f:
            for offset in range(0, len(big), MiB):
                f.write(big[offset : offset + MiB])
        assert fs.cat_file(f"{base}/big") == big
        fs.copy(f"{base}/small", f"{base}/copy")
        assert fs.ls(base, detail=False) == [f"{base}/big", f"{base}/copy", f"{base}/small"]
        fs.rm(f"{base}/copy")
        assert fs.cat_file(f"{base}/small") == b"0123456789"
    assert not fs.exists(f"{base}/copy")

    ops = rec.operations()
    assert ops["PutObject"] == 1, rec.summary()
    assert ops["CreateMultipartUpload"] == 1, rec.summary()
    assert ops["UploadPart"] == 3, rec.summary()  # 5 + 5 + 2 MiB
    assert ops["CompleteMultipartUpload"] == 1, rec.summary()
    assert ops["CopyObject"] == 1, rec.summary()
    assert ops["DeleteObjects"] + ops["DeleteObject"] == 1, rec.summary()
    assert ops["ListObjectsV2"] >= 1, rec.summary()
    assert ops["GetObject"] == 3, rec.summary()
    ranged = rec.filter(operation="GetObject", key_contains="small")[0]
    assert (ranged.bucket, ranged.key, ranged.method) == (BUCKET, "ops/small", "GET")
    parts = rec.filter(operation="UploadPart")
    assert all("uploadId=" in p.query and p.key == "ops/big" for p in parts)
    assert ops["Other"] == 0, rec.summary()


def test_keys_and_metadata_keep_their_spelling(fs, proxy):
    key = f"{BUCKET}/odd/with space+plus/ünï=code"
    fs.pipe(key, b"x")
    fs.setxattr(key, my_key="under_score", other="v")
    assert fs.getxattr(key, "my_key") == "under_score"
    assert fs.cat_file(key) == b"x"
    assert fs.ls(f"{BUCKET}/odd/with space+plus", detail=False) == [key]
    keys = {r.key for r in proxy.ledger.requests if r.operation == "PutObject"}
    assert "odd/with space+plus/ünï=code" in keys


def test_requests_of_another_process_are_counted(fs, proxy):
    script = (
        "import s3fs\n"
        f"fs = s3fs.S3FileSystem(endpoint_url={proxy.url!r}, key='testing', secret='testing')\n"
        f"fs.pipe('{BUCKET}/sub/x', b'hello')\n"
    )
    with proxy.ledger.record() as rec:
        subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert rec.count(operation="PutObject", key_contains="sub/x") == 1, rec.summary()
    assert fs.cat_file(f"{BUCKET}/sub/x") == b"hello"


def test_raw_requests_are_recorded_but_not_counted(fs, proxy):
    raw = _client(proxy.url, config_kwargs={"user_agent_extra": RAW_USER_AGENT})
    proxy.ledger.inject("PutObject", status=503, code="SlowDown", times=None)
    with proxy.ledger.record() as rec:
        raw.pipe(f"{BUCKET}/raw/a", b"a")  # never faulted
    assert len(rec) == 0, rec.summary()
    assert [r.operation for r in rec.all_requests if r.raw] == ["PutObject"]


def test_injected_faults_reach_the_client(fs, proxy):
    fs.pipe(f"{BUCKET}/fault/a", b"a")
    proxy.ledger.inject("GetObject", status=403, code="AccessDenied", key_contains="fault/a")
    with proxy.ledger.record() as rec, pytest.raises(PermissionError, match="AccessDenied"):
        fs.cat_file(f"{BUCKET}/fault/a")
    assert [r.fault for r in rec.filter(operation="GetObject")] == ["403 AccessDenied"]

    # A 503 SlowDown is retried by the client and then succeeds through the proxy.
    proxy.ledger.inject("PutObject", status=503, code="SlowDown", times=1)
    with proxy.ledger.record() as rec:
        fs.pipe(f"{BUCKET}/fault/b", b"b")
    assert [r.fault for r in rec.filter(operation="PutObject")] == ["503 SlowDown", None]
    assert fs.cat_file(f"{BUCKET}/fault/b") == b"b"

    # A dropped connection is one too: the client gets no answer at all.
    proxy.ledger.inject("HeadObject", drop_connection=True, times=1)
    assert proxy.port is not None
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    try:
        conn.request("HEAD", f"/{BUCKET}/fault/b")
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            conn.getresponse()
    finally:
        conn.close()
    assert proxy.ledger.requests[-1].fault == "dropped connection"


def test_chunked_request_bodies_are_forwarded(fs, proxy):
    assert proxy.port is not None
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    try:
        conn.request(
            "PUT",
            f"/{BUCKET}/chunked/a%20b",
            body=iter([b"abc" * 100_000, b"", b"def"]),
            encode_chunked=True,
        )
        response = conn.getresponse()
        response.read()
    finally:
        conn.close()
    assert response.status == 200
    assert fs.cat_file(f"{BUCKET}/chunked/a b") == b"abc" * 100_000 + b"def"


def test_unreachable_upstream_is_a_bad_gateway():
    with CountingProxy(f"http://127.0.0.1:{_free_port()}") as proxy:
        assert proxy.port is not None
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
        try:
            conn.request("GET", "/bkt/key")
            response = conn.getresponse()
            body = response.read()
        finally:
            conn.close()
        assert response.status == 502
        assert b"BadGateway" in body
        assert [r.operation for r in proxy.ledger.requests] == ["GetObject"]


def test_stop_closes_the_port_and_joins_the_threads(moto_url):
    direct = _client(moto_url)
    if not direct.exists(BUCKET):  # this test may be the first of its module on this worker
        direct.mkdir(BUCKET)
    proxy = CountingProxy(moto_url)
    proxy.start()
    port = proxy.port
    assert port is not None
    # An idle client connection must not keep the proxy alive.
    idle = socket.create_connection(("127.0.0.1", port))
    try:
        assert _client(proxy.url).exists(BUCKET)
        proxy.stop()
        proxy.stop()  # idempotent
        assert _refuses(port)
        assert idle.recv(1) == b""  # closed by the proxy
    finally:
        idle.close()
    names = [t.name for t in threading.enumerate()]
    assert not [n for n in names if n == f"ckptconform-proxy-{port}"]


# --------------------------------------------------------------------------- signatures


def _sigv4_valid(environ: dict[str, Any], secret: str) -> bool:
    """Verify an S3 SigV4 header signature the way a strict server does."""
    auth = environ.get("HTTP_AUTHORIZATION", "")
    algorithm, _, rest = auth.partition(" ")
    fields = dict(part.strip().split("=", 1) for part in rest.split(","))
    credential = fields["Credential"].split("/")
    date, region, service = credential[1], credential[2], credential[3]
    signed = fields["SignedHeaders"].split(";")
    path, _, query = environ["RAW_URI"].partition("?")
    pairs = sorted(
        (quote(k, safe="-_.~"), quote(v, safe="-_.~"))
        for k, v in parse_qsl(query, keep_blank_values=True)
    )
    headers = {name.lower(): value for name, value in environ["ckptconform.proxy.headers"]}
    canonical = "\n".join(
        [
            environ["REQUEST_METHOD"],
            path,
            "&".join(f"{k}={v}" for k, v in pairs),
            "".join(f"{h}:{' '.join(headers[h].split())}\n" for h in signed),
            fields["SignedHeaders"],
            headers["x-amz-content-sha256"],
        ]
    )
    to_sign = "\n".join(
        [
            algorithm,
            headers["x-amz-date"],
            "/".join(credential[1:]),
            hashlib.sha256(canonical.encode()).hexdigest(),
        ]
    )
    key = f"AWS4{secret}".encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, fields["Signature"])


@pytest.fixture
def strict_server() -> Iterator[tuple[str, list[str]]]:
    """An S3 stand-in that checks SigV4 signatures strictly and answers 200 or 403."""
    from werkzeug.serving import make_server

    from ckptconform.servers.proxy import _ProxyRequestHandler

    verdicts: list[str] = []

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        stream, length = environ["wsgi.input"], int(environ.get("CONTENT_LENGTH") or 0)
        while length > 0:
            length -= len(stream.read(min(length, 1 << 16)))
        ok = _sigv4_valid(environ, "testing")
        verdicts.append(f"{environ['REQUEST_METHOD']} {'ok' if ok else 'bad'}")
        body = b"ok" if environ["REQUEST_METHOD"] == "GET" else b""
        if not ok:
            body = b"<Error><Code>SignatureDoesNotMatch</Code></Error>"
        start_response("200 OK" if ok else "403 Forbidden", [("Content-Length", str(len(body)))])
        return [body]

    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_ProxyRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", verdicts
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_signatures_stay_valid_through_the_proxy(strict_server):
    import boto3

    url, verdicts = strict_server

    def put_and_get(endpoint: str, secret: str) -> None:
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key=secret,
            region_name="us-east-1",
        )
        key = "dir/with space+plus/ü=x"
        client.put_object(Bucket="bkt", Key=key, Body=b"x" * 1000, Metadata={"my_key": "v"})
        body = client.get_object(
            Bucket="bkt", Key=key, ResponseCacheControl="no cache", Range="bytes=0-1"
        )
        assert body["Body"].read() == b"ok"

    put_and_get(url, "testing")  # the checker itself accepts good signatures
    assert verdicts == ["PUT ok", "GET ok"]
    with pytest.raises(Exception, match=r"SignatureDoesNotMatch|Forbidden|403"):
        put_and_get(url, "wrong")  # and rejects bad ones
    verdicts.clear()
    with CountingProxy(url) as proxy:
        put_and_get(proxy.url, "testing")
        assert [r.operation for r in proxy.ledger.requests] == ["PutObject", "GetObject"]
    assert verdicts == ["PUT ok", "GET ok"]


# --------------------------------------------------------------------------- backends


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    for name in ("AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)


def test_s3_backend_counts_through_its_proxy(moto_url, aws_env):
    backend = S3EndpointBackend(BackendSettings(s3_endpoint=moto_url, s3_bucket="backend-leg"))
    assert "request ledger via counting proxy" in backend.describe()
    backend.start()
    try:
        assert backend.ledger is not None
        endpoint = backend.storage_options["endpoint_url"]
        assert endpoint.startswith("http://127.0.0.1:")
        assert endpoint != moto_url
        assert f"{moto_url} via counting proxy {endpoint}" in backend.describe()
        with backend.ledger.record() as rec:
            _client(endpoint).pipe("backend-leg/a", b"a")
            backend.raw.cat_file("backend-leg/a")
        assert rec.operations() == {"PutObject": 1}, rec.summary()
        assert "GetObject" in [r.operation for r in rec.all_requests if r.raw]
        # The data is on the real server.
        assert _client(moto_url).cat_file("backend-leg/a") == b"a"
    finally:
        backend.stop()
    assert backend.ledger is None
    assert _refuses(int(urlsplit(endpoint).port or 0))


def test_s3_backend_without_ledger_when_the_server_refuses_the_proxy(moto_url, aws_env):
    # A server that routes on the Host header (as AWS S3 does) refuses the proxy's requests.
    routing = CountingProxy(moto_url)
    routing.start()
    own_host = urlsplit(routing.url).netloc
    forward = routing.ledger.app
    assert forward is not None

    def only_own_host(environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("HTTP_HOST") != own_host:
            body = b"<Error><Code>InvalidRequest</Code><Message>unknown host</Message></Error>"
            start_response("400 Bad Request", [("Content-Length", str(len(body)))])
            return [] if environ["REQUEST_METHOD"] == "HEAD" else [body]
        return forward(environ, start_response)

    routing.ledger.wrap(only_own_host)
    backend = S3EndpointBackend(BackendSettings(s3_endpoint=routing.url, s3_bucket="routed"))
    try:
        with pytest.warns(UserWarning, match="refuses requests through the counting proxy"):
            backend.start()
        assert backend.ledger is None
        assert backend.storage_options["endpoint_url"] == routing.url
        assert "no request ledger" in backend.describe()
        backend.raw.pipe("routed/a", b"a")
        assert backend.raw.cat_file("routed/a") == b"a"
    finally:
        backend.stop()
        routing.stop()


# --------------------------------------------------------------------------- the suite on s3


def test_suite_counts_requests_on_the_s3_backend(moto_url, tmp_path: Path):
    suite = suite_dir()
    report = tmp_path / "report"
    workdir = tmp_path / "empty"
    workdir.mkdir()
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    for name in ("AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION", "PYTEST_ADDOPTS"):
        env.pop(name, None)
    # the stream clauses through the counting proxy: the main job's s3rver leg
    modules = ["test_nox.py", "test_tow.py", "test_dis.py", "test_lay.py"]
    command = [
        sys.executable, "-m", "pytest", "--impl=ckptstore", "--backend=s3",
        f"--s3-endpoint={moto_url}", "--s3-bucket=suite-leg",
        f"--conformance-report={report}", "-p", "no:cacheprovider", "-q",
        *(str(suite / module) for module in modules),
    ]  # fmt: skip
    run = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=300)
    output = run.stdout[-4000:] + run.stderr[-2000:]
    assert run.returncode == 0, output

    document = json.loads((report / "conformance.json").read_text())
    clauses = document["clauses"]
    failing = {cid: c["status"] for cid, c in clauses.items() if c["status"] in ("FAIL", "XPASS")}
    assert not failing, output
    for group in ("NOX", "TOW"):
        ids = [cid for cid in clauses if cid.startswith(f"{group}-")]
        assert ids
        for cid in ids:
            assert clauses[cid]["backends"] == {"s3": "PASS"}, (cid, clauses[cid])
    (leg,) = document["header"]["backends"]
    assert leg["name"] == "s3"
    assert leg["status"] == "selected"
    assert "counting proxy" in leg["description"]


def test_small_pages_and_per_key_errors_through_the_proxy(fs, proxy):
    """The ledger's pages and DeleteObjects answers need no change to a signed request."""
    keys = [f"{BUCKET}/paged/k{i}" for i in range(5)]
    for key in keys:
        fs.pipe(key, b"x")
    with proxy.ledger.small_pages(2) as pager, proxy.ledger.record() as rec:
        found = fs.find(f"{BUCKET}/paged/")
    assert sorted(found) == keys
    assert pager.served == 2, rec.summary()
    assert rec.count(operation="ListObjectsV2") == 3, rec.summary()
    proxy.ledger.inject(per_key=True, code="AccessDenied", times=1)
    answer = fs.call_s3(
        "delete_objects", Bucket=BUCKET,
        Delete={"Objects": [{"Key": k.split("/", 1)[1]} for k in keys], "Quiet": True},
    )  # fmt: skip
    assert len(answer["Errors"]) == len(keys)
    assert sorted(fs.find(f"{BUCKET}/paged/")) == keys
    fs.rm(keys)
    assert fs.find(f"{BUCKET}/paged/") == []


def test_a_route_that_ignores_conditional_writes(fs, proxy):
    """The ledger removes If-None-Match before the server (moto, no signature check) sees it."""
    key = f"{BUCKET}/conditional/once"
    fs.pipe(key, b"first")
    put = {"Bucket": BUCKET, "Key": "conditional/once", "Body": b"second", "IfNoneMatch": "*"}
    with pytest.raises(OSError):
        fs.call_s3("put_object", **put)
    with proxy.ledger.ignoring_conditional_writes():
        fs.call_s3("put_object", **put)
    assert fs.cat_file(key) == b"second"


def test_keys_past_the_limit_are_answered_by_the_proxy(moto_url):
    """With max_key_bytes the proxy answers a request for a longer key as S3 does (400
    KeyTooLongError, the body read) and never passes it on; shorter keys go through."""
    with CountingProxy(moto_url, max_key_bytes=64) as guarded:
        client = _client(guarded.url)
        if not client.exists(BUCKET):
            client.mkdir(BUCKET)
        short, long = f"{BUCKET}/guard/{'s' * 40}", f"{BUCKET}/guard/{'l' * 80}"
        client.pipe(short, b"short")
        with guarded.ledger.record() as rec:
            for call in (
                lambda: client.pipe(long, b"x" * 3000),
                lambda: client.call_s3("head_object", Bucket=BUCKET, Key=long.split("/", 1)[1]),
                lambda: client.cat_file(long),
            ):
                with pytest.raises(OSError):
                    call()
        named = [r for r in rec.requests if r.key == long.split("/", 1)[1]]
        assert named, rec.summary()
        assert {r.status for r in named} == {400}, rec.summary()
        assert client.cat_file(short) == b"short"
    assert _client(moto_url).find(f"{BUCKET}/guard/") == [short]


def test_s3_backend_learns_whether_the_server_honours_conditional_writes(moto_url, aws_env):
    """The s3 leg probes its server at start (raw requests): moto honours If-None-Match; the
    same server behind a route that removes it does not."""
    honouring = S3EndpointBackend(BackendSettings(s3_endpoint=moto_url, s3_bucket="probed"))
    honouring.start()
    try:
        assert honouring.conditional_writes is True
    finally:
        honouring.stop()
    with CountingProxy(moto_url) as route, route.ledger.ignoring_conditional_writes():
        ignoring = S3EndpointBackend(BackendSettings(s3_endpoint=route.url, s3_bucket="probed"))
        ignoring.start()
        try:
            assert ignoring.conditional_writes is False
        finally:
            ignoring.stop()


def test_a_second_route_passes_the_backends_own_ledger(moto_url, aws_env):
    """open_route forwards to the backend's counting proxy: a request through the route is
    counted by the route's ledger and by the backend's, as at a server with its own ledger."""
    backend = S3EndpointBackend(BackendSettings(s3_endpoint=moto_url, s3_bucket="routes"))
    backend.start()
    try:
        assert backend.ledger is not None
        with (
            backend.open_route() as route,
            backend.ledger.record() as at_server,
            route.ledger.record() as on_route,
        ):
            _client(route.url).pipe("routes/a", b"a")
        assert on_route.operations() == {"PutObject": 1}, on_route.summary()
        assert at_server.operations() == {"PutObject": 1}, at_server.summary()
    finally:
        backend.stop()


def test_a_server_that_stopped_answering_is_named(moto_url, aws_env):
    """server_problem(): None while the server answers; once it refuses connections (three
    times), a message naming the leg and the refusal."""
    server = CountingProxy(moto_url)  # the "server" the leg is given, stopped below
    url = server.start()
    backend = S3EndpointBackend(BackendSettings(s3_endpoint=url, s3_bucket="stopping"))
    backend.start()
    try:
        assert backend.server_problem() is None
        server.stop()
        problem = backend.server_problem()
        assert problem is not None
        assert problem.startswith("the s3 server no longer accepts connections: cannot connect")
        assert f"127.0.0.1:{urlsplit(url).port}" in problem
    finally:
        backend.stop()
        server.stop()
