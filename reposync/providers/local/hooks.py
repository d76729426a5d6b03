"""Hooks that make a local repository report its own changes to reposync.

``reposync hooks install local:PATH`` (``LocalProvider.install_change_hooks``) writes
into the repository's hooks directory (``core.hooksPath`` when the repository sets it,
else ``<git_dir>/hooks``):

* ``reposync-notify``: runs the command it was installed with (reposync's own
  ``hooks notify``, which ends in the service's one intake function) with the settings
  it was installed with. ``reposync-notify push`` takes git's ``<old> <new> <ref>``
  lines on its standard input; ``reposync-notify forge TYPE...`` names the object
  types an edit changed. It may hold the database's address (never a password: the CLI
  then has it name an owner-only settings file instead): only its owner may read it.
* ``post-receive``: hands a push's lines to ``reposync-notify push``; the wiki
  (``<name>.wiki.git``), when it exists, gets one that reports to the same script.

The local forge's authoring API runs ``reposync-notify forge`` after each edit it
commits (``notify``): providers never import the service, so the script is the bridge,
and both doors end in the same intake and its coalescing.

What reposync itself writes is never reported: a sync pushes into a local target
with ``core.hooksPath`` pointed at nothing (unless ``REPOSYNC_LOCAL_TARGET_HOOKS`` opts
in), and writes its forge objects through the batch writer, never the authoring API.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pygit2

from reposync.errors import UsageError

log = logging.getLogger(__name__)

NOTIFY = "reposync-notify"
POST_RECEIVE = "post-receive"
#: The line that marks a hook as reposync's own: reinstalling replaces only those.
MARKER = "# reposync: installed by `reposync hooks install`; reinstalling replaces it"
#: How long an edit waits for the notification (the edit itself is committed already).
NOTIFY_TIMEOUT = 60.0


def hooks_dir(git_dir: Path) -> Path:
    """Where git runs this repository's hooks from (``core.hooksPath``, else ``hooks``)."""
    try:
        configured = str(pygit2.Repository(str(git_dir)).config["core.hooksPath"])
    except (KeyError, pygit2.GitError):
        return git_dir / "hooks"
    path = Path(os.path.expanduser(configured))
    return path if path.is_absolute() else git_dir / path


def install(
    git_dir: Path,
    wiki_dir: Path | None,
    command: Sequence[str],
    environment: Mapping[str, str],
) -> list[str]:
    """Write the notify script and the post-receive hooks (see the module docstring)."""
    directory = hooks_dir(git_dir)
    notify = directory / NOTIFY
    files = [(notify, _notify_script(command, environment)), (directory / POST_RECEIVE, "")]
    if wiki_dir is not None and (wiki_dir / "HEAD").exists():
        files.append((hooks_dir(wiki_dir) / POST_RECEIVE, ""))
    for path, _ in files:
        _refuse_foreign(path)
    written = []
    for path, text in files:
        _write(path, text or _post_receive_script(notify))
        written.append(str(path))
    return written


def _notify_script(command: Sequence[str], environment: Mapping[str, str]) -> str:
    exports = "".join(
        f"export {name}={shlex.quote(value)}\n" for name, value in sorted(environment.items())
    )
    return (
        "#!/bin/sh\n"
        f"{MARKER}\n"
        "# Tells reposync this repository changed: `reposync-notify push` (git's\n"
        "# '<old> <new> <ref>' lines on standard input) or `reposync-notify forge TYPE...`.\n"
        f"{exports}"
        f'exec {shlex.join(command)} "$@"\n'
    )


def _post_receive_script(notify: Path) -> str:
    return f"#!/bin/sh\n{MARKER}\nexec {shlex.quote(str(notify))} push\n"


def _refuse_foreign(path: Path) -> None:
    if not path.exists():
        return
    try:
        ours = MARKER in path.read_text(errors="replace")
    except OSError:
        ours = False
    if not ours:
        raise UsageError(
            f"{path} exists and reposync did not write it; have it run "
            f"`{path.parent / NOTIFY} push` with its standard input (or remove it) and "
            "install again"
        )


def _write(path: Path, text: str) -> None:
    """Replace ``path`` at once (never a half-written hook), executable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.reposync-tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o700)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(temporary, 0o700)
    os.replace(temporary, path)


def notify(hooks: Path, event: str, args: Sequence[str]) -> None:
    """Run the installed notify script, if there is one; never fails the caller.

    The change it reports is committed already; a notification that fails only means
    the next scheduled Run syncs it instead of one started now.
    """
    script = hooks / NOTIFY
    if not os.access(script, os.X_OK):
        return
    try:
        done = subprocess.run(
            [str(script), event, *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=NOTIFY_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("%s %s failed: %s", script, event, exc)
        return
    if done.returncode != 0:
        log.warning(
            "%s %s exited %s: %s",
            script,
            event,
            done.returncode,
            done.stderr.decode(errors="replace").strip()[-500:],
        )
