"""A local forge's LFS store reads and writes only regular files it reaches without a
symbolic link (``providers/lfs_files.py``); what it refuses, it names."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from reposync.errors import LfsObjectNotAFile
from reposync.providers.base import LfsOperation, LfsTransfer
from reposync.providers.lfs_files import LocalLfsStore
from tests.gitrepo import init_bare
from tests.lfsrepo import object_path, pointer_of, store

CONTENT = b"an object\n" * 3


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_bare(tmp_path / "r.git")


def _entry(repo: Path, kind: str) -> Path:
    """Put something that is not the object's file where the object belongs."""
    entry = object_path(repo, pointer_of(CONTENT).oid)
    entry.parent.mkdir(parents=True, exist_ok=True)
    if kind == "named pipe":
        os.mkfifo(entry)
    elif kind == "directory":
        entry.mkdir()
    elif kind == "link inside the repository":  # to a copy of the right bytes
        (repo / "copy").write_bytes(CONTENT)
        entry.symlink_to(repo / "copy")
    else:
        raise AssertionError(kind)
    return entry


@pytest.mark.parametrize("kind", ["named pipe", "directory", "link inside the repository"])
def test_an_entry_that_is_not_a_regular_file_is_never_read(repo, kind):
    """A pipe (which would block a reader), a directory, even a link to the right bytes
    inside the repository: the download answer is lfs_object_not_a_file, naming it, and
    opening it anyway raises the same instead of reading or hanging."""
    _entry(repo, kind)
    lfs = LocalLfsStore(repo)
    pointer = pointer_of(CONTENT)

    (answer,) = lfs.batch(LfsOperation.DOWNLOAD, [pointer])

    assert answer.error is not None
    assert answer.error.code == "lfs_object_not_a_file"
    assert kind.split()[0] in answer.error.message
    with pytest.raises(LfsObjectNotAFile):
        lfs.download(LfsTransfer(pointer))


def test_an_upload_replaces_a_link_where_the_object_belongs(repo, tmp_path):
    """Upload side: a link is not the object (not present), and storing the object
    replaces the link itself; the file it pointed at keeps its bytes."""
    pointer = pointer_of(CONTENT)
    outside = tmp_path / "outside"
    outside.write_bytes(b"o" * len(CONTENT))
    entry = object_path(repo, pointer.oid)
    entry.parent.mkdir(parents=True)
    entry.symlink_to(outside)
    lfs = LocalLfsStore(repo)

    (answer,) = lfs.batch(LfsOperation.UPLOAD, [pointer])
    assert (answer.present, answer.error) == (False, None)
    lfs.upload(answer, io.BytesIO(CONTENT))

    assert not entry.is_symlink()
    assert entry.read_bytes() == CONTENT
    assert outside.read_bytes() == b"o" * len(CONTENT)
    (again,) = lfs.batch(LfsOperation.UPLOAD, [pointer])
    assert again.present


def test_an_upload_into_a_directory_entry_is_refused_and_leaves_no_temporary_file(repo):
    """Where the object belongs there is a directory: the upload answer is refused, an
    upload anyway raises lfs_object_not_a_file, and ``lfs/tmp`` is left empty."""
    _entry(repo, "directory")
    lfs = LocalLfsStore(repo)
    pointer = pointer_of(CONTENT)

    (answer,) = lfs.batch(LfsOperation.UPLOAD, [pointer])
    assert answer.error is not None
    assert answer.error.code == "lfs_object_not_a_file"
    with pytest.raises(LfsObjectNotAFile):
        lfs.upload(LfsTransfer(pointer), io.BytesIO(CONTENT))
    assert list((repo / "lfs" / "tmp").iterdir()) == []


def test_a_sound_object_is_served_as_before(repo):
    """The store's ordinary case is unchanged: present by size, served byte for byte."""
    pointer = store(repo, CONTENT)
    lfs = LocalLfsStore(repo)

    (upload,) = lfs.batch(LfsOperation.UPLOAD, [pointer])
    (download,) = lfs.batch(LfsOperation.DOWNLOAD, [pointer])

    assert upload.present
    assert download.error is None
    with lfs.download(download) as stream:
        assert stream.read() == CONTENT
