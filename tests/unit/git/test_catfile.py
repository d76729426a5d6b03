"""The cat-file batch protocol shared by the LFS scan and the LFS proof."""

from __future__ import annotations

import io

import pytest

from reposync.errors import GitTransportError
from reposync.git.catfile import blob_contents, pick_pointer_sized

NAME = "a" * 40


class Sink(io.BytesIO):
    """Keeps what was written after ``close`` (the picker closes its sink)."""

    def close(self) -> None:
        self.kept = self.getvalue()
        super().close()


def picked(answers: bytes) -> tuple[bytes, list[str]]:
    sink, problems = Sink(), []
    pick_pointer_sized(io.BytesIO(answers), sink, problems)
    return sink.kept, problems


def test_only_blobs_of_a_pointers_size_are_handed_on():
    """A pointer-sized blob goes on; a larger or smaller one, a tree or a commit does not."""
    answers = (
        f"blob 130 {NAME}\nblob 5000 {'b' * 40}\nblob 12 {'c' * 40}\n"
        f"tree 130 {'d' * 40}\ncommit 200 {'e' * 40}\nblob 1023 {'f' * 40}\n"
    ).encode()
    assert picked(answers) == (f"{NAME}\n{'f' * 40}\n".encode(), [])


@pytest.mark.parametrize(
    ("answers", "problem"),
    [
        (f"blob 130 {NAME}\n{'b' * 40} missing\n".encode(), f"{'b' * 40} missing"),
        (f"blob 130 {NAME}\nblob 13".encode(), "cat-file --batch-check ended mid-line"),
    ],
)
def test_a_missing_object_or_a_cut_answer_is_a_problem_not_an_end(answers, problem):
    """A scan or proof must fail on these, never pass over the object as pointer-free."""
    assert picked(answers)[1] == [problem]


def test_contents_are_read_in_order_and_a_bad_header_fails():
    """Each blob's bytes come back whole; a header that is no "<name> <type> <size>" (a
    missing object) is an error, not the end of the stream."""
    stream = io.BytesIO(f"{NAME} blob 3\nabc\n{NAME} blob 0\n\n".encode())
    assert list(blob_contents(stream)) == [b"abc", b""]
    with pytest.raises(GitTransportError, match="missing"):
        list(blob_contents(io.BytesIO(f"{NAME} missing\n".encode())))
