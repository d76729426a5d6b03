"""What reposync writes into a forge's bodies reads back exactly: the body, the marker
and every header field, whatever the text holds."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from reposync.providers.forge.bodies import compose, marker_of, parse

#: Text people write, without reposync's own comments (a body may pretend to be one).
TEXT = st.text().filter(lambda t: "<!-- reposync:" not in t)
VALUES = st.none() | st.booleans() | st.integers() | TEXT | st.lists(TEXT, max_size=3)
ATTRIBUTION = st.dictionaries(TEXT, VALUES, max_size=5)
MARKER = st.text(alphabet=st.characters(blacklist_categories=("Z", "C")), min_size=1)


@settings(max_examples=300)
@given(body=TEXT, marker=st.none() | MARKER, attribution=ATTRIBUTION, label=st.none() | TEXT)
def test_a_composed_body_parses_back_to_what_was_composed(
    body: str, marker: str | None, attribution: dict[str, Any], label: str | None
) -> None:
    """Body, marker and header fields come back exactly, for any text and values."""
    text = compose(body, marker=marker, attribution=attribution, source_label=label)
    parsed = parse(text)
    assert parsed.body == body
    assert parsed.marker == marker
    assert parsed.attribution == (attribution or None)
    assert marker_of(text) == marker


def test_a_header_value_holding_the_comment_end_stays_inside_the_comment() -> None:
    """A field value with ``-->`` cannot end the hidden comment early."""
    text = compose("body", marker="m", attribution={"author": "a --> b", "x": "<!-- -->"})
    hidden = text.split("\n", 1)[0]
    assert hidden.count("-->") == 1
    assert hidden.endswith(" -->")
    assert parse(text).attribution == {"author": "a --> b", "x": "<!-- -->"}


def test_the_visible_line_says_who_when_and_where_on_one_line() -> None:
    """The line people see names the author, time and source, and stays one line."""
    text = compose(
        "b",
        marker=None,
        attribution={"author": "ann", "created_at": "2026-01-02T03:04:05Z"},
        source_label="local:x\nissue #1",
        note="shown\nas a comment",
    )
    visible = [line for line in text.splitlines() if line.startswith("> ")]
    assert visible == [
        "> Originally by **ann** on 2026-01-02T03:04:05Z in local:x issue #1 (shown as a comment)"
    ]


def test_a_headline_replaces_the_originally_by_line() -> None:
    """An object with no author of its own says what it is instead."""
    text = compose("b", marker=None, attribution={"reviewer": "eve"}, headline="Projected")
    assert "> Projected\n" in text
    assert "Originally by" not in text


def test_a_header_that_is_not_json_is_left_in_the_body() -> None:
    """Something that looks like a header but does not parse is the body's own text."""
    text = "<!-- reposync:attribution {not json} -->\n> x\n\nhello"
    parsed = parse(text)
    assert parsed.attribution is None
    assert parsed.body == text


def test_a_marker_inside_the_text_is_no_marker() -> None:
    """Only the marker at the very end counts: one quoted in the text does not."""
    text = "see <!-- reposync:marker other --> here"
    assert parse(compose(text, marker=None)).marker is None
    assert marker_of(compose(text, marker="mine")) == "mine"


def test_the_format_is_pinned() -> None:
    """Bodies on forges are read back by later versions: the format never moves."""
    text = compose(
        "the body",
        marker="src-17",
        attribution={"created_at": "2025-12-01T00:00:00Z", "author": "ann"},
        source_label="local:/r issue #3",
    )
    assert text == (
        '<!-- reposync:attribution {"author": "ann", "created_at": "2025-12-01T00:00:00Z"} -->\n'
        "> Originally by **ann** on 2025-12-01T00:00:00Z in local:/r issue #3\n"
        "\n"
        "the body\n"
        "\n"
        "<!-- reposync:marker src-17 -->"
    )
