"""The Git remote a ``git:`` locator names, read and spelled one way.

Accepted as git itself reads them: ``https://`` and ``http://``, ``ssh://`` and the
scp-like ``[user@]host:path``, and ``file://``. Refused before anything runs:

* a password in the URL (``https://user:secret@host/...``): the locator is stored in
  the database and shown in reports, so credentials come from git's credential helpers
  or the SSH agent instead;
* every other transport (``git://``, ``ext::``, ``fd::``, a bare path): ``ext::`` runs a
  command of the URL's choosing, and a bare path is ambiguous with scp-like syntax;
* a host or path that begins with ``-`` (it would reach ``ssh`` as an option), a query
  or a fragment, and control characters anywhere.

The canonical spelling keeps what selects the repository on a server (the path exactly
as given, ``.git`` or not: ``git http-backend`` serves ``app.git`` and not ``app``) and
drops what does not (the scheme's and host's case, a default port, a trailing slash).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote, urlsplit, urlunsplit

from reposync.errors import InvalidLocator

Kind = Literal["http", "ssh", "file"]

_DEFAULT_PORTS = {"http": 80, "https": 443, "ssh": 22}
#: ``[user@]host:path`` as git reads it: no slash before the first colon.
_SCP = re.compile(
    r"^(?:(?P<user>[^@/:\s]+)@)?(?P<host>[^@/:\s\[\]]+|\[[0-9A-Fa-f:.]+\]):(?P<path>.*)$"
)
_HOST = re.compile(r"^(?:[A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])$")
_EXAMPLES = (
    "for example git:https://git.example.com/acme/app.git, git:ssh://git@host/acme/app.git, "
    "git:git@host:acme/app.git or git:file:///srv/git/app.git"
)


@dataclass(frozen=True, slots=True)
class RemoteUrl:
    """A parsed remote: what git is given, and what LFS and credentials need of it."""

    kind: Kind
    #: The canonical spelling (the locator's location).
    url: str
    #: ``http``/``https``, ``ssh`` (also for scp-like), ``file``.
    scheme: str
    user: str | None = None
    host: str = ""
    port: int | None = None
    #: The repository's path on the server (scp-like: as given, relative to the login's
    #: home unless absolute); for ``file``, the absolute path on this machine.
    path: str = ""
    #: Whether it was written scp-like (``user@host:path``).
    scp: bool = False

    @property
    def lfs_endpoint(self) -> str:
        """Where git-lfs looks for an HTTP(S) remote's LFS server (its server-discovery
        rule): ``<url>.git/info/lfs``, ``.git`` added when the URL lacks it."""
        base = self.url.rstrip("/")
        if not base.endswith(".git"):
            base += ".git"
        return base + "/info/lfs"

    @property
    def ssh_destination(self) -> str:
        """``[user@]host`` for ``ssh`` (an IPv6 host without its brackets)."""
        host = self.host.strip("[]")
        return f"{self.user}@{host}" if self.user else host


def parse(location: str) -> RemoteUrl:
    """A locator's location as a ``RemoteUrl``. Raises ``InvalidLocator``."""
    text = location.strip()
    if not text:
        raise InvalidLocator(f"git: needs a URL, {_EXAMPLES}")
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise InvalidLocator("git: a URL with control characters is not a remote")
    if "://" in text:
        scheme = text.split("://", 1)[0].lower()
        if scheme in ("http", "https"):
            return _http(text)
        if scheme == "ssh":
            return _ssh(text)
        if scheme == "file":
            return _file(text)
        raise InvalidLocator(
            f"git:{scheme}:// is not supported; use https://, http://, ssh:// (or "
            f"user@host:path) or file://, {_EXAMPLES}"
        )
    if "::" in text.split("/", 1)[0]:
        raise InvalidLocator(
            f"git:{text}: remote helpers (<transport>::<address>) are not supported, {_EXAMPLES}"
        )
    if text.startswith(("/", ".", "~")):
        raise InvalidLocator(
            f"git:{text} is not a remote URL; a repository on this machine is "
            f"git:file://{os.path.abspath(os.path.expanduser(text))} or local:{text}"
        )
    match = _SCP.match(text)
    if match is None:
        raise InvalidLocator(f"git:{text} is not a Git remote URL, {_EXAMPLES}")
    return _scp(match["user"], match["host"], match["path"])


def _split(text: str) -> tuple[str, str | None, str, int | None, str]:
    parts = urlsplit(text)
    if parts.query or parts.fragment or "?" in text or "#" in text:
        raise InvalidLocator(f"git:{text}: a remote URL takes no query or fragment")
    if parts.password is not None:
        raise InvalidLocator(
            "git: a password in the URL would be stored and shown with the locator; "
            "give the URL without it and let a git credential helper (or the SSH agent) "
            "supply the credentials"
        )
    try:
        port = parts.port
    except ValueError:
        raise InvalidLocator(f"git:{text}: the port is not a number") from None
    host = (parts.hostname or "").lower()
    if parts.netloc.rpartition("@")[2].startswith("["):
        host = f"[{host}]"
    if not host or not _HOST.match(host) or host.startswith("-"):
        raise InvalidLocator(f"git:{text}: {host or 'no host'} is not a host name")
    user = unquote(parts.username) if parts.username else None
    if user is not None and (user.startswith("-") or not user.strip()):
        raise InvalidLocator(f"git:{text}: {user!r} is not a user name")
    return parts.scheme.lower(), user, host, port, parts.path


def _netloc(user: str | None, host: str, port: int | None, scheme: str) -> str:
    netloc = host
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        netloc += f":{port}"
    if user:
        netloc = f"{_quote_user(user)}@{netloc}"
    return netloc


def _quote_user(user: str) -> str:
    return "".join(c if c.isalnum() or c in "-._~" else f"%{ord(c):02X}" for c in user)


def _http(text: str) -> RemoteUrl:
    scheme, user, host, port, path = _split(text)
    path = path.rstrip("/")
    if not path:
        raise InvalidLocator(f"git:{text}: the URL names no repository (no path)")
    _check_path(unquote(path), text)
    if port == _DEFAULT_PORTS[scheme]:
        port = None
    url = urlunsplit((scheme, _netloc(user, host, port, scheme), path, "", ""))
    return RemoteUrl("http", url, scheme, user, host, port, path)


def _ssh(text: str) -> RemoteUrl:
    _, user, host, port, path = _split(text)
    path = path.rstrip("/")
    if not path or path == "/~":
        raise InvalidLocator(f"git:{text}: the URL names no repository (no path)")
    if port == 22:
        port = None
    _check_ssh_path(path, text)
    url = urlunsplit(("ssh", _netloc(user, host, port, "ssh"), path, "", ""))
    return RemoteUrl("ssh", url, "ssh", user, host, port, path)


def _scp(user: str | None, host: str, path: str) -> RemoteUrl:
    host = host.lower()
    text = f"{user + '@' if user else ''}{host}:{path}"
    if not _HOST.match(host) or host.startswith("-"):
        raise InvalidLocator(f"git:{text}: {host} is not a host name")
    if user is not None and user.startswith("-"):
        raise InvalidLocator(f"git:{text}: {user!r} is not a user name")
    path = path.rstrip("/")
    if not path:
        raise InvalidLocator(f"git:{text}: the URL names no repository (no path)")
    _check_ssh_path(path, text)
    url = f"{user + '@' if user else ''}{host}:{path}"
    return RemoteUrl("ssh", url, "ssh", user, host, None, path, scp=True)


def _check_path(path: str, text: str) -> None:
    """No ``.`` or ``..`` segment: a server resolves them, so a URL would not say which
    repository it names (nor stay under a prefix the API confines remotes to)."""
    if any(part in (".", "..") for part in path.split("/")):
        raise InvalidLocator(f"git:{text}: a repository path has no . or .. segment")


def _check_ssh_path(path: str, text: str) -> None:
    _check_path(path, text)
    if path.lstrip("/").startswith("-") or "'" in path:
        raise InvalidLocator(f"git:{text}: {path!r} is not a repository path")


def _file(text: str) -> RemoteUrl:
    parts = urlsplit(text)
    if parts.query or parts.fragment or "?" in text or "#" in text:
        raise InvalidLocator(f"git:{text}: a remote URL takes no query or fragment")
    if parts.netloc not in ("", "localhost"):
        raise InvalidLocator(f"git:{text}: a file:// URL names no host (file:///path)")
    path = unquote(parts.path)
    if not path.startswith("/"):
        raise InvalidLocator(f"git:{text}: a file:// URL needs an absolute path")
    path = os.path.normpath(path)
    return RemoteUrl("file", "file://" + path, "file", path=path)
