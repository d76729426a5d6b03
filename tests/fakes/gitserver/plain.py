"""A plain Git server for the plain Git provider's tests (``git:URL``), on 127.0.0.1.

* ``plain_http.GitHttpServer``: ``git http-backend`` behind HTTP Basic auth, with an LFS
  server beside it (``plain_lfs.py``, git-lfs's Batch API and basic transfers);
* ``sshd.SshServer``: OpenSSH's ``sshd`` with a forced command that serves
  ``git-upload-pack``, ``git-receive-pack`` and ``git-lfs-authenticate``.

The client side is what an operator configures for the service's user: a ``HOME`` whose
``.gitconfig`` names a credential helper (``client_home``), and ``GIT_SSH_COMMAND``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tests.fakes.gitserver.plain_http import GitHttpServer
from tests.fakes.gitserver.sshd import SshServer


def client_home(home: Path, credentials: Sequence[str] = ()) -> Path:
    """A ``HOME`` for git: git's ``store`` credential helper holding ``credentials``
    (``http://user:password@host:port`` lines, the helper's own file format), a
    committer identity, and nothing else."""
    home.mkdir(parents=True, exist_ok=True)
    store = home / ".git-credentials"
    store.write_text("".join(f"{line}\n" for line in credentials))
    store.chmod(0o600)
    (home / ".gitconfig").write_text(
        "[credential]\n"
        f"\thelper = store --file={store}\n"
        "[user]\n"
        "\tname = Test Operator\n"
        "\temail = operator@example.com\n"
        "[init]\n"
        "\tdefaultBranch = main\n"
    )
    return home


__all__ = ["GitHttpServer", "SshServer", "client_home"]
