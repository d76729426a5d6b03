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

The standby lock (``lock``/``unlock``, which ``LocalProvider.mark_standby`` calls as the
authority moves) is a ``pre-receive`` hook of its own: while the repository's config names
an authority (``reposync.standbyof``) it refuses every push that does not carry
``REPOSYNC_SYNC_PUSH`` in its environment, naming the authority. reposync's own pushes
set it (``LocalProvider.git_remote``); a remote pusher cannot (ssh and HTTP hand a
hook no environment of the client's), a local user can, as they can write the files
anyway: the lock keeps mistakes out, not people with the repository's files in reach. A
``pre-receive`` the user had moves to ``pre-receive.reposync-chained`` while the lock holds
the name, runs after the lock's check, and comes back when the lock goes. A refused push
never reaches ``post-receive``, so ``reposync hooks install``'s hook reports nothing.

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
PRE_RECEIVE = "pre-receive"
#: Where the user's own pre-receive hook waits while the standby lock holds its name.
CHAINED = "pre-receive.reposync-chained"
#: The line that marks a hook as reposync's own: reinstalling replaces only those.
MARKER = "# reposync: installed by `reposync hooks install`; reinstalling replaces it"
#: The line that marks the standby lock.
LOCK_MARKER = (
    "# reposync: the standby lock; reposync installs and removes it as the authority moves"
)
#: Set in the environment of reposync's own pushes: the standby lock lets them through.
SYNC_PUSH_ENV = "REPOSYNC_SYNC_PUSH"
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


def _write(path: Path, text: str, mode: int = 0o700) -> None:
    """Replace ``path`` at once (never a half-written hook), executable by its owner only
    unless ``mode`` says otherwise."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.reposync-tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(temporary, mode)
    os.replace(temporary, path)


# -- the standby lock ---------------------------------------------------------------------


def lock(git_dir: Path) -> bool:
    """Put the standby lock in place (idempotent: a lock removed by hand comes back).

    Returns False when the repository runs no hooks at all (``core.hooksPath`` set to
    ``/dev/null``): nothing can lock it. Raises ``UsageError`` when both a user's hook and
    an earlier one moved aside exist (neither is clobbered), ``OSError`` when the hooks
    directory cannot be written.
    """
    directory = hooks_dir(git_dir)
    if directory == Path(os.devnull):
        log.warning("%s runs no hooks (core.hooksPath): the standby lock cannot hold", git_dir)
        return False
    hook, chained = directory / PRE_RECEIVE, directory / CHAINED
    script = _lock_script()
    if _is_lock(hook):
        if hook.read_text(errors="replace") != script:
            _write(hook, script, mode=0o755)
        return True
    if _present(hook):
        if _present(chained):
            raise UsageError(
                f"{hook} and {chained} both exist; reposync moves a pre-receive hook of yours "
                f"to {chained.name} while the standby lock holds its name: merge them into "
                f"{chained.name} and remove {hook.name}"
            )
        os.replace(hook, chained)
    _write(hook, script, mode=0o755)  # run by whoever pushes, not only the owner
    return True


def unlock(git_dir: Path) -> None:
    """Remove the standby lock; the user's pre-receive hook, if it had one, comes back.
    A pre-receive hook that is not the lock is left alone."""
    directory = hooks_dir(git_dir)
    if directory == Path(os.devnull):
        return
    hook, chained = directory / PRE_RECEIVE, directory / CHAINED
    if _present(hook) and not _is_lock(hook):
        return
    if _present(chained):
        os.replace(chained, hook)
    elif _present(hook):
        hook.unlink()


def is_locked(git_dir: Path) -> bool:
    """Whether the standby lock is in place."""
    return _is_lock(hooks_dir(git_dir) / PRE_RECEIVE)


def _present(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _is_lock(path: Path) -> bool:
    try:
        return path.is_file() and LOCK_MARKER in path.read_text(errors="replace")
    except OSError:
        return False


def _lock_script() -> str:
    """The lock: reads the authority from the repository's config at each push, so it is
    always the current one and a hook directory shared by several repositories
    (``core.hooksPath``) locks only those that are standbys."""
    return (
        "#!/bin/sh\n"
        f"{LOCK_MARKER}\n"
        "# While this repository is a reposync Binding's standby (git config\n"
        "# reposync.standbyof), pushes go to the authority: reposync copies them here.\n"
        f"# A pre-receive hook that was here runs next, from {CHAINED}.\n"
        "authority=$(git config --get reposync.standbyof)\n"
        f'if [ -n "$authority" ] && [ -z "${{{SYNC_PUSH_ENV}:-}}" ]; then\n'
        "    printf 'reposync: this repository is the standby of %s; push to the "
        'authority instead (reposync keeps this copy in sync)\\n\' "$authority" >&2\n'
        "    exit 1\n"
        "fi\n"
        f'chained="$(dirname "$0")/{CHAINED}"\n'
        'if [ -x "$chained" ]; then\n'
        '    exec "$chained" "$@"\n'
        "fi\n"
    )


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
