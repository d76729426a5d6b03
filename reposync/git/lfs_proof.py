"""A cheap, sound proof that a repository holds no LFS pointer at all.

Walking the history a push adds to find its pointers (``lfs_scan``) costs a bootstrap
of git/git 4.4-6.4 s for nothing when the repository never used LFS. Every object a
push can send is stored in the pushing repository's object stores (its own and its
alternates', recursively), so when no stored blob is a pointer, no pushed history holds
one: no walk is needed. Reading the stores is cheaper than walking (no trees are
opened: ``git cat-file --batch-check`` over the object names, then only the blobs of a
pointer's size are read), and a pack once read never needs reading again: a pack's file
name is the hash git computed over its content, so "``pack-<hash>.pack`` of this size
holds no pointer" stays true wherever that pack is found. Those facts are kept in a
small file (``ProofCache``); a checkpoint then reads only the objects stored since
(loose objects and new packs: one commit's worth).

Soundness: the proof says "no pointer" only when every stored object was accounted for
(every pack indexed, every loose object listed) and none of the candidate blobs parses
as a pointer (``parse_pointer``, the scan's own rule: a pointer without
``.gitattributes`` counts). A repository that may lack objects it can reach (a partial
clone: a ``.promisor`` pack, or ``extensions.partialClone``) is never proven; nor is a
store that cannot be read. When the proof fails, the caller walks as before.

A proof can also run beside the push it decides (``BackgroundProof``): its readers run
at a lower priority than the push, and the push's refs wait for its answer
(``reposync.git.transport``'s gate), so a bootstrap pays for the proof only where the
push leaves a core idle.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import threading
from collections.abc import Iterable, Mapping
from contextlib import suppress
from pathlib import Path

from reposync.errors import GitTransportError
from reposync.git.catfile import BATCH_CHECK, blob_contents, feed, pick_pointer_sized
from reposync.git.environment import git_env
from reposync.sync.lfs import parse_pointer

log = logging.getLogger(__name__)

#: Proven packs remembered (oldest forgotten first): a few hundred Bindings' worth.
CACHE_LIMIT = 20_000

_PACK = re.compile(r"pack-[0-9a-f]{40,64}\.pack")
_LOOSE_DIR = re.compile(r"[0-9a-f]{2}")
_LOOSE_NAME = re.compile(r"[0-9a-f]{38,62}")


class ProofCache:
    """Packs known to hold no LFS pointer, as ``<file name> <size>`` lines in one file.

    Written atomically (a temporary file renamed over it); two writers at once lose at
    most one's additions, which only costs a later re-read, never a wrong answer.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> set[str]:
        try:
            return set(self.path.read_text().split("\n")) - {""}
        except FileNotFoundError:
            return set()

    def add(self, keys: Iterable[str]) -> None:
        new = list(keys)
        if not new:
            return
        try:
            lines = self.path.read_text().split("\n")
        except FileNotFoundError:
            lines = []
        kept = list(dict.fromkeys(line for line in [*lines, *new] if line))[-CACHE_LIMIT:]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f"{self.path.name}.tmp{os.getpid()}")
        temporary.write_text("".join(f"{line}\n" for line in kept))
        os.replace(temporary, self.path)


class BackgroundProof:
    """``holds_no_pointer`` running in a thread from the moment it is made; ``result``
    waits for it. Its git readers run niced (``NICENESS``): beside a push, the push comes
    first. An error is an answer like any other: not proven."""

    #: Added to the readers' niceness: on a busy machine the push is served first.
    NICENESS = 10

    def __init__(
        self, git_dir: Path, cache: ProofCache, *, env: Mapping[str, str] | None = None
    ) -> None:
        self.git_dir = git_dir
        self._answer: bool = False
        self._thread = threading.Thread(
            target=self._prove, args=(cache, env), name="lfs-proof", daemon=True
        )
        self._thread.start()

    def _prove(self, cache: ProofCache, env: Mapping[str, str] | None) -> None:
        try:
            self._answer = holds_no_pointer(self.git_dir, cache, env=env, niceness=self.NICENESS)
        except Exception:  # a thread's error has nowhere else to go: not proven
            log.exception("LFS proof of %s failed", self.git_dir)
            self._answer = False

    def result(self) -> bool:
        """True: no stored object is a pointer (proven); False: not proven."""
        self._thread.join()
        return self._answer


def holds_no_pointer(
    git_dir: Path,
    cache: ProofCache,
    *,
    env: Mapping[str, str] | None = None,
    niceness: int = 0,
) -> bool:
    """Whether no object stored in ``git_dir``'s object stores (alternates included) is
    an LFS pointer: True is a proof, False only "not proven" (walk instead). The git
    processes that read objects run with ``niceness`` added to their priority."""
    try:
        stores = object_stores(git_dir / "objects")
        if _partial(git_dir, stores):
            return False
        proven = cache.load()
        # Loose objects are listed before the packs: one packed meanwhile is in a pack
        # listed after, and read by name wherever it went.
        loose = [name for store in stores for name in _loose_names(store)]
        packs = _pack_keys(stores)
        read_packs = [key for key in packs if key not in proven]
        names: list[str] | None = None  # None: every stored object (nothing proven yet)
        if len(read_packs) < len(packs):
            names = [name for key in read_packs for name in _pack_names(packs[key], env)]
            names.extend(loose)
        if names != [] and _any_pointer(git_dir, names, env, niceness):
            return False
        if _pack_keys(stores).keys() != packs.keys():  # a repack ran: what moved is unsure
            log.info("no LFS proof for %s: its packs changed while they were read", git_dir)
            return False
    except (OSError, subprocess.CalledProcessError, GitTransportError) as error:
        log.info("no LFS proof for %s: %s", git_dir, error)
        return False
    cache.add(read_packs)  # loose objects are read again next time: few, and they move
    return True


def _pack_keys(stores: list[Path]) -> dict[str, Path]:
    """Every pack of ``stores`` by its proof key: file name (git's hash of its content)
    and size."""
    return {f"{pack.name} {pack.stat().st_size}": pack for s in stores for pack in _packs(s)}


def object_stores(objects_dir: Path) -> list[Path]:
    """``objects_dir`` and every store it borrows from, recursively (each once)."""
    stores: list[Path] = []
    pending = [objects_dir.resolve()]
    while pending:
        store = pending.pop(0)
        if store in stores:
            continue
        if not store.is_dir():
            raise FileNotFoundError(f"object store {store} does not exist")
        stores.append(store)
        alternates = store / "info" / "alternates"
        if alternates.exists():
            for line in alternates.read_text().splitlines():
                line = line.strip()
                if line and not line.startswith("#"):
                    pending.append((store / line).resolve())
    return stores


def _partial(git_dir: Path, stores: list[Path]) -> bool:
    """A partial clone may reach objects it does not store: nothing can be proven."""
    if any(next((store / "pack").glob("*.promisor"), None) for store in stores):
        return True
    for config in {git_dir / "config", *(store.parent / "config" for store in stores)}:
        if config.exists() and "partialclone" in config.read_text().lower():
            return True
    return False


def _packs(store: Path) -> list[Path]:
    pack_dir = store / "pack"
    if not pack_dir.is_dir():
        return []
    packs = [p for p in pack_dir.iterdir() if _PACK.fullmatch(p.name)]
    for pack in packs:
        if not pack.with_suffix(".idx").exists():  # being written: its objects unknown
            raise FileNotFoundError(f"{pack} has no index yet")
    return packs


def _pack_names(pack: Path, env: Mapping[str, str] | None) -> list[str]:
    """The object names a pack's index lists (``git show-index``: no object is read)."""
    with pack.with_suffix(".idx").open("rb") as index:
        out = subprocess.run(
            ["git", "show-index"], stdin=index, capture_output=True, check=True, env=git_env(env)
        ).stdout
    return [line.split()[1].decode() for line in out.splitlines()]


def _loose_names(store: Path) -> list[str]:
    names: list[str] = []
    for directory in store.iterdir():
        if directory.is_dir() and _LOOSE_DIR.fullmatch(directory.name):
            names.extend(
                directory.name + entry.name
                for entry in directory.iterdir()
                if _LOOSE_NAME.fullmatch(entry.name)
            )
    return names


def _any_pointer(
    git_dir: Path, names: list[str] | None, env: Mapping[str, str] | None, niceness: int = 0
) -> bool:
    """Whether one of ``names`` (None: of all stored objects, alternates' included) is a
    blob that parses as an LFS pointer.

    The pipeline of ``reposync.git.catfile``, fed with ``names`` or with every stored
    object (``--batch-all-objects``); it stops at the first pointer.
    """
    base = ["git", "--git-dir", str(git_dir), "cat-file"]
    which = ["--buffer"] if names is not None else ["--batch-all-objects", "--unordered"]
    full_env = git_env(env)
    check = subprocess.Popen(
        [*base, BATCH_CHECK, *which],
        stdin=subprocess.PIPE if names is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=full_env,
    )
    reader = subprocess.Popen(
        [*base, "--batch", "--buffer"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=full_env,
    )
    for proc in (check, reader) if niceness else ():
        with suppress(OSError):  # already gone: nothing to slow down
            os.setpriority(os.PRIO_PROCESS, proc.pid, os.getpriority(os.PRIO_PROCESS, 0) + niceness)
    assert check.stdout is not None
    assert reader.stdin is not None
    assert reader.stdout is not None
    threads = []
    if names is not None:
        assert check.stdin is not None
        threads.append(threading.Thread(target=feed, args=(check.stdin, names), daemon=True))
    problems: list[str] = []
    threads.append(
        threading.Thread(
            target=pick_pointer_sized, args=(check.stdout, reader.stdin, problems), daemon=True
        )
    )
    for thread in threads:
        thread.start()
    found = False
    try:
        for data in blob_contents(reader.stdout):
            if data.startswith(b"version ") and parse_pointer(data) is not None:
                found = True
                break
    finally:
        for proc in (reader, check):
            if proc.poll() is None and (found or problems):
                proc.kill()
        for thread in threads:
            thread.join()
        check.wait()
        reader.wait()
        check.stdout.close()
        reader.stdout.close()
    if found:
        return True
    if problems or check.returncode != 0 or reader.returncode != 0:
        raise subprocess.CalledProcessError(
            1, base, (problems[0] if problems else "git cat-file failed").encode()
        )
    return False
