"""Pointer parsing: git-lfs's format exactly, anything else is ordinary content."""

from __future__ import annotations

from reposync.sync.lfs import LfsPointer, parse_pointer

OID = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393"
GOOD = f"version https://git-lfs.github.com/spec/v1\noid sha256:{OID}\nsize 12345\n".encode()


def test_a_pointer_as_git_lfs_writes_it_names_its_object():
    """version, oid, size: the object's OID and size."""
    assert parse_pointer(GOOD) == LfsPointer(OID, 12345)


def test_extension_lines_sorted_before_oid_are_accepted():
    """Keys are sorted (``ext-0-…`` < ``oid`` < ``size``), as the spec writes them."""
    data = GOOD.replace(b"oid ", b"ext-0-foo sha256:" + b"0" * 64 + b"\noid ", 1)
    assert parse_pointer(data) == LfsPointer(OID, 12345)


def test_lookalikes_are_content():
    """Wrong version, unsorted or repeated keys, bad oid or size, no final newline,
    upper-case hex, CRLF: none is a pointer."""
    bad = [
        GOOD.replace(b"spec/v1", b"spec/v2"),
        GOOD.replace(b"size 12345", b"size -1"),
        GOOD.replace(b"size 12345", b"size 012"),
        GOOD.replace(OID.encode(), OID.upper().encode()),
        GOOD.replace(b"sha256:", b"sha1:"),
        GOOD[:-1],
        GOOD.replace(b"\n", b"\r\n"),
        GOOD + b"oid sha256:" + OID.encode() + b"\n",
        b"version https://git-lfs.github.com/spec/v1\nsize 1\noid sha256:" + OID.encode() + b"\n",
        GOOD + b"x" * 1024,
        b"",
    ]
    assert [parse_pointer(data) for data in bad] == [None] * len(bad)
