"""How a failed git command is classified must not depend on the URL it names.

git's error lines quote the URL it failed on, and a URL may hold any digits and names:
a port 40443, an owner ``team404``, a repository ``http-429``. Forgejo's "missing
repository" words once held a bare "404", so a Git host test server that happened to
listen on port 40443 took a rate limit for a repository its API showed but its Git host
did not (``tests/providers/test_forgejo_provider.py`` has that case). This property test
writes git's own messages for each HTTP status and failure, around random URLs, and
requires every classifier to answer exactly as it does for a plain URL.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from reposync.git.process import credentials_refused, git_failure, rate_limited
from reposync.providers.forgejo.provider import GIT_MISSING
from reposync.providers.gitremote.provider import remote_failure
from reposync.providers.refs import says_missing

PLAIN = "https://forge.example/acme/app.git"
#: What git (and curl under it) prints, by what failed: ``{url}`` is the remote's.
MESSAGES: dict[str, Callable[[str], str]] = {
    "listing 401": lambda url: (
        f"fatal: unable to access '{url}/': The requested URL returned error: 401"
    ),
    "listing 403": lambda url: (
        f"fatal: unable to access '{url}/': The requested URL returned error: 403"
    ),
    "listing 404": lambda url: f"remote: Not found\nfatal: repository '{url}/' not found",
    "listing 429": lambda url: (
        f"fatal: unable to access '{url}/': The requested URL returned error: 429"
    ),
    "listing 500": lambda url: (
        f"fatal: unable to access '{url}/': The requested URL returned error: 500"
    ),
    "listing 503": lambda url: (
        f"fatal: unable to access '{url}/': The requested URL returned error: 503"
    ),
    "no username": lambda url: (
        f"fatal: could not read Username for '{url}': terminal prompts disabled"
    ),
    "unreachable": lambda url: (
        f"fatal: unable to access '{url}/': Failed to connect to "
        "forge.example port 443 after 3 ms: Couldn't connect to server"
    ),
    **{
        f"push {status}": (
            lambda url, status=status: (
                f"error: RPC failed; HTTP {status} curl 22 The "
                f"requested URL returned error: {status}\nsend-pack: unexpected disconnect while "
                "reading sideband packet\nfatal: the remote end hung up unexpectedly\n"
                f"error: failed to push some refs to '{url}'"
            )
        )
        for status in (401, 403, 404, 413, 429, 500, 502)
    },
}

#: Parts a URL may hold that read like a status or a failure's word without spaces.
_LOOKALIKES = ["404", "429", "401", "403", "500", "503", "413", "notfound", "http-429", "team404"]
_part = st.one_of(
    st.sampled_from(_LOOKALIKES),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=10),
)
urls = st.builds(
    lambda scheme, host, port, path: f"{scheme}://{host}:{port}/{'/'.join(path)}.git",
    st.sampled_from(["http", "https"]),
    st.builds("-".join, st.lists(_part, min_size=1, max_size=3)),
    st.one_of(st.sampled_from([40443, 4290, 4013, 50300, 4040]), st.integers(1, 65535)),
    st.lists(_part, min_size=1, max_size=3),
)


def classified(stderr: str) -> tuple[object, ...]:
    """Every classifier's answer for one error text."""
    return (
        type(git_failure("git ls-remote", stderr)).__name__,
        credentials_refused(stderr),
        rate_limited(stderr),
        says_missing(stderr, GIT_MISSING),
        says_missing(stderr, ("not found",)),  # the default of ``refs.ls_remote``
        type(remote_failure(stderr, "list", "git:remote")).__name__,
    )


@settings(max_examples=300, deadline=None)
@given(url=urls, message=st.sampled_from(sorted(MESSAGES)))
def test_the_url_git_names_never_changes_how_its_failure_is_read(url, message):
    write = MESSAGES[message]
    assert classified(write(url)) == classified(write(PLAIN)), (message, url)


def test_each_failure_is_read_as_what_it_is():
    """The plain URL's answers, so the property above compares against the right ones."""
    assert classified(MESSAGES["listing 429"](PLAIN))[:3] == ("GitRateLimited", None, True)
    assert classified(MESSAGES["push 429"](PLAIN))[0] == "GitRateLimited"
    assert classified(MESSAGES["listing 429"](PLAIN))[-1] == "GitRateLimited"  # a plain remote
    assert classified(MESSAGES["listing 401"](PLAIN))[:2] == ("GitCredentialsRefused", "HTTP 401")
    assert classified(MESSAGES["listing 404"](PLAIN))[3:5] == (True, True)
    assert classified(MESSAGES["push 404"](PLAIN))[3:5] == (True, False)
    assert classified(MESSAGES["listing 503"](PLAIN)) == (
        "GitTransportError",
        None,
        False,
        False,
        False,
        "ProviderUnavailable",
    )
    assert classified(MESSAGES["unreachable"](PLAIN))[-1] == "ProviderUnavailable"
