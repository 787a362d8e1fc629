"""The audit's fast paths give what the general paths give.

Each shortcut taken for speed (``docs/admin.md``, "Performance and cost") is compared with the
code it bypasses: a metadata's handle paths resolved against their parsed directory against
``resolve_flink_path`` of the whole text; the local listing through ``os.scandir`` against
fsspec's ``walk`` (symbolic links to files and directories, dangling ones, empty directories);
modified UTF-8 of ASCII text against the byte-by-byte codec.
"""

from __future__ import annotations

import os
from pathlib import Path

import fsspec
from hypothesis import given, settings
from hypothesis import strategies as st

from ckptstore.admin import listing
from ckptstore.admin.references import _Resolver, resolve_flink_path
from ckptstore.paths import parse_storage_path
from flinkmeta import _wire

_SEGMENTS = st.sampled_from(
    ["a", "b.sst", "..", ".", "", "x y", "chk-1", "?v", "*", "c\\d", "é", "-", " z", "[1]", "a::b"]
)
_PREFIXES = st.sampled_from(
    ["file:/", "file:///", "s3://bucket/", "s3a://b/", "S3://B/", "memory://", "sftp://h:22/",
     "/", "", "s3://", "file://host/", "s3://bad bucket/", "hdfs://nn/", "unknown://x/", " /"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(_PREFIXES, st.lists(_SEGMENTS, min_size=1, max_size=5), st.booleans())
def test_the_resolver_answers_what_parsing_the_whole_path_answers(
    prefix: str, segments: list[str], moved: bool
) -> None:
    text = prefix + "/".join(segments)
    tree = None
    if moved:
        from ckptstore.admin.references import MovedTree

        tree = MovedTree(parse_storage_path("s3://bucket/a"), parse_storage_path("/tmp/moved"))
    resolver = _Resolver(tree)
    for _ in range(2):  # the second time through the directory cache
        expected = resolve_flink_path(text, tree)
        assert resolver.url(text, True) == (None if expected is None else expected.url)
    plain = resolve_flink_path(text)
    assert resolver.url(text, False) == (None if plain is None else plain.url)


def test_the_local_scan_lists_what_fsspec_walk_lists(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "job" / "shared").mkdir(parents=True)
    (root / "empty").mkdir()
    (root / "job" / "shared" / "sst").write_bytes(b"x" * 10)
    (root / "job" / "_metadata").write_bytes(b"m" * 3)
    (root / "top").write_bytes(b"")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(b"b" * 99)
    os.symlink(outside / "big", root / "job" / "link-to-file")
    os.symlink(outside, root / "link-to-dir")
    os.symlink(tmp_path / "nothing", root / "dangling")
    location = parse_storage_path(str(root))
    fs = fsspec.filesystem("file")
    fast = sorted(listing.list_files(fs, location), key=lambda f: f.url)
    general = sorted(listing._walk(fs, location), key=lambda f: f.url)
    assert fast == general
    assert {f.url.rsplit("/", 1)[1]: f.size for f in fast} == {
        "sst": 10, "_metadata": 3, "top": 0, "link-to-file": 99,
        "link-to-dir": os.stat(outside).st_size, "dangling": 0,
    }  # fmt: skip


@given(st.text(alphabet=st.characters(max_codepoint=0x7F)))
def test_ascii_text_takes_the_short_way_with_the_same_bytes(text: str) -> None:
    encoded = _wire.encode_modified_utf8(text)
    units = bytearray()
    for char in text:  # modified UTF-8 of ASCII: one byte each, NUL as two
        units += b"\xc0\x80" if char == "\x00" else char.encode()
    assert encoded == bytes(units)
    assert _wire.decode_modified_utf8(encoded) == text
    assert _wire.decode_modified_utf8(text.encode("ascii")) == text
