"""The contract harness: GitHub's description catches bad requests and responses, precisely."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

import pytest
import requests

from tests.fakes.contract import (
    ContractViolation,
    GitHubContract,
    RecordingValidator,
    attach,
)
from tests.http_server import serving

API = "http://127.0.0.1:9"
UPLOADS = "http://127.0.0.1:10"
JSON = {"content-type": "application/json; charset=utf-8"}
LABEL = {
    "id": 208045946,
    "node_id": "MDU6TGFiZWwyMDgwNDU5NDY=",
    "url": "https://api.github.com/repos/octocat/Hello-World/labels/bug",
    "name": "bug",
    "description": "Something isn't working",
    "color": "f29513",
    "default": True,
}


@pytest.fixture(scope="module")
def contract() -> GitHubContract:
    return GitHubContract(api_url=API, uploads_url=UPLOADS)


def body(data: object) -> bytes:
    return json.dumps(data).encode()


def test_good_request_and_response_pass(contract):
    """A well-formed create-label exchange satisfies the description."""
    url = f"{API}/repos/octocat/hello/labels"
    contract.validate_request("POST", url, JSON, body({"name": "bug", "color": "f29513"}))
    contract.validate_response("POST", url, 201, {**JSON, "location": LABEL["url"]}, body(LABEL))


def test_malformed_body_is_caught_with_the_field(contract):
    """A wrongly typed field is reported with its JSON path and the operation id."""
    url = f"{API}/repos/octocat/hello/labels"
    with pytest.raises(ContractViolation) as caught:
        contract.validate_request("POST", url, JSON, body({"name": 3}))
    message = str(caught.value)
    assert "[issues/create-label]" in message
    assert "$.name: 3 is not of type 'string'" in message


def test_missing_required_field_is_caught(contract):
    """Create issue without a title breaks the description."""
    with pytest.raises(ContractViolation, match="'title' is a required property"):
        contract.validate_request(
            "POST", f"{API}/repos/o/r/issues", JSON, body({"body": "no title"})
        )


def test_undescribed_path_is_caught(contract):
    """A path the description does not contain is named in the message."""
    with pytest.raises(ContractViolation, match="no path of the contract matches /repos/o/r/wiki"):
        contract.validate_request("GET", f"{API}/repos/o/r/wiki")


def test_undescribed_method_is_caught(contract):
    """A known path with an undescribed method lists the described ones."""
    with pytest.raises(
        ContractViolation, match=r"DELETE is not described .* \(described: GET, PATCH\)"
    ):
        contract.validate_request("DELETE", f"{API}/repos/o/r")


def test_undescribed_status_is_caught(contract):
    """200 for create label (GitHub answers 201) is an undescribed status."""
    with pytest.raises(ContractViolation, match=r"status 200 is not described \(described: 201"):
        contract.validate_response("POST", f"{API}/repos/o/r/labels", 200, JSON, body(LABEL))


def test_incomplete_response_body_is_caught(contract):
    """A label without its required fields fails, listing them."""
    with pytest.raises(ContractViolation) as caught:
        contract.validate_response("GET", f"{API}/repos/o/r/labels/bug", 200, JSON, body({"id": 1}))
    assert "'node_id' is a required property" in str(caught.value)
    assert "'default' is a required property" in str(caught.value)


def test_cross_cutting_errors_are_checked_as_basic_errors(contract):
    """401 may come from any operation; its body must still be a basic-error."""
    url = f"{API}/repos/o/r/labels/bug"
    contract.validate_response("GET", url, 401, JSON, body({"message": "Bad credentials"}))
    with pytest.raises(ContractViolation, match="not a basic-error"):
        contract.validate_response("GET", url, 401, JSON, body({"message": 401}))


def test_query_parameters_are_checked(contract):
    """An unknown enum value and a non-integer per_page are both reported."""
    with pytest.raises(ContractViolation) as caught:
        contract.validate_request("GET", f"{API}/repos/o/r/issues?state=bogus&per_page=x")
    assert "state" in str(caught.value)
    assert "per_page" in str(caught.value)


def test_unlisted_headers_do_not_fail(contract):
    """Headers the description does not mention are allowed."""
    headers = {**JSON, "x-github-request-id": "A:B", "etag": 'W/"x"', "x-custom": "1"}
    contract.validate_response("GET", f"{API}/repos/o/r/labels", 200, headers, b"[]")


def test_nullable_fields_accept_null(contract):
    """milestone: null (clear it) and state_reason: null are GitHub's documented intent."""
    url = f"{API}/repos/o/r/issues/1"
    contract.validate_request("PATCH", url, JSON, body({"milestone": None, "state_reason": None}))


def test_uploads_live_on_the_uploads_host(contract):
    """The asset upload is described on uploads.github.com only, with any media type."""
    path = "/repos/o/r/releases/1/assets?name=a.zip"
    contract.validate_request("POST", UPLOADS + path, {"content-type": "application/zip"}, b"PK")
    with pytest.raises(ContractViolation, match=r"served by https://uploads\.github\.com"):
        contract.validate_request("POST", API + path, {"content-type": "application/zip"}, b"PK")


def test_multi_segment_ref_matches(contract):
    """matching-refs/{ref} takes a ref with slashes."""
    contract.validate_request("GET", f"{API}/repos/o/r/git/matching-refs/heads/feature/x")


def test_foreign_urls_are_violations(contract):
    """A URL under neither base is reported, not silently accepted."""
    with pytest.raises(ContractViolation, match="under neither the API base"):
        contract.validate_request("GET", "http://example.invalid/repos/o/r")


class _Canned(BaseHTTPRequestHandler):
    """Answers every request with a canned status and JSON body."""

    replies: ClassVar[dict[str, tuple[int, bytes]]] = {}

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        status, data = self.replies.get(self.path, (404, b'{"message":"Not Found"}'))
        self.send_response(status)
        if data:
            self.send_header("content-type", "application/json; charset=utf-8")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def canned() -> Iterator[str]:
    with serving(_Canned) as url:
        yield url


def test_requests_session_integration_records_violations(canned):
    """attach() validates what a session sends and receives; 304 and Git URLs are skipped."""
    _Canned.replies = {
        "/repos/o/r/labels/bug": (200, body(LABEL)),
        "/repos/o/r/labels": (200, body({"id": 1})),
        "/repos/o/r/labels/cached": (304, b""),
        "/o/r.git/info/refs?service=git-upload-pack": (200, b"not json"),
    }
    recorder = RecordingValidator(GitHubContract(api_url=canned, uploads_url=UPLOADS))
    session = requests.Session()
    attach(session, recorder)
    session.get(f"{canned}/repos/o/r/labels/bug")
    session.get(f"{canned}/repos/o/r/labels/cached")
    session.get(f"{canned}/o/r.git/info/refs?service=git-upload-pack")
    assert recorder.violations == []
    session.post(f"{canned}/repos/o/r/labels", json={"name": 5})
    messages = recorder.messages()
    assert len(messages) == 2
    assert "request" in messages[0]
    assert "$.name: 5 is not of type 'string'" in messages[0]
    assert "response 200" in messages[1]
    assert "status 200 is not described" in messages[1]
    with pytest.raises(AssertionError, match="contract violations"):
        recorder.assert_clean()
