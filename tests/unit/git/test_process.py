"""How a failed git command is named (``git/process.py: git_failure``), from what real git
prints: a remote refusing its credentials is ``GitCredentialsRefused`` (no retry with the
same ones clears it), anything else a transport failure, a local file's "Permission
denied" included."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from reposync.errors import GitCredentialsRefused, GitRateLimited, GitTransportError
from reposync.git.process import credentials_refused, git_failure, run_git
from tests.http_server import serving

#: What a Git host answers every request with, by path: ``/<status>/repo.git``.
_CHALLENGE = 'Basic realm="git"'


class _Refusing(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status = int(self.path.split("/")[1])
        self.send_response(status)
        if status == 401:
            self.send_header("WWW-Authenticate", _CHALLENGE)
        body = b"refused\n"
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def host() -> Iterator[str]:
    with serving(_Refusing) as url:
        yield url


#: Credentials as the providers hand them to git: a header, never in the URL.
_WITH_TOKEN = {
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "http.extraHeader",
    "GIT_CONFIG_VALUE_0": "Authorization: Basic eC1hY2Nlc3MtdG9rZW46cmV2b2tlZA==",
}


@pytest.mark.parametrize(
    ("status", "env", "how"),
    [
        (401, _WITH_TOKEN, "HTTP 401"),  # a token the forge no longer takes
        (401, {}, "HTTP 401"),  # none at all: git asks for a username, and may not
        (403, _WITH_TOKEN, "HTTP 403"),  # a token without access
    ],
)
def test_a_remote_refusing_credentials_is_named_so(host, status, env, how):
    with pytest.raises(GitCredentialsRefused) as raised:
        run_git(["git", "ls-remote", f"{host}/{status}/repo.git"], env=env)
    assert f"the remote refused git's credentials ({how})" in raised.value.message
    assert raised.value.retryable is False


@pytest.mark.parametrize("status", [404, 500])
def test_other_http_failures_stay_transport_failures(host, status):
    result = run_git(["git", "ls-remote", f"{host}/{status}/repo.git"], check=False)
    assert result.returncode != 0
    assert credentials_refused(result.stderr) is None
    error = git_failure("git ls-remote", result.stderr)
    assert type(error) is GitTransportError
    assert error.retryable is True


def test_a_remote_answering_429_is_its_rate_limit(host):
    """A Git host's (or a proxy's) 429 is a limit to wait out, not a transport failure to
    retry with backoff: what git prints for the listing's GET and for a push's POST."""
    result = run_git(["git", "ls-remote", f"{host}/429/repo.git"], check=False)
    assert result.returncode != 0
    error = git_failure("git ls-remote", result.stderr)
    assert type(error) is GitRateLimited
    assert "the Git host's rate limit (HTTP 429)" in error.message
    assert (error.code, error.problem_type) == ("git_rate_limited", "temporarily_rate_limited")
    post = "error: RPC failed; HTTP 429 curl 22 The requested URL returned error: 429\n"
    assert type(git_failure("git push", post)) is GitRateLimited
    assert type(git_failure("git push", "fatal: early EOF\n")) is GitTransportError


def test_words_of_ssh_and_of_a_push_are_recognised():
    """What git prints for SSH's refusal and for a push's POST refused after its
    advertisement was allowed; a local file's "Permission denied" is not a remote's."""
    ssh = "git@example.org: Permission denied (publickey).\nfatal: Could not read from remote"
    post = "error: RPC failed; HTTP 403 curl 22 The requested URL returned error: 403\n"
    assert credentials_refused(ssh) == "SSH publickey"
    assert credentials_refused(post) == "HTTP 403"
    local = "error: unable to create temporary file: Permission denied\nfatal: failed to write"
    assert credentials_refused(local) is None
    assert type(git_failure("git index-pack", local)) is GitTransportError
