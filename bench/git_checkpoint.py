"""Benchmark: a one-commit checkpoint on a git/git-sized repository, and its bootstrap.

git/git itself is not on this machine (no internet beyond package registries), so the
bench builds a repository shaped like it, cached between runs (``--cache``): a deep
linear history of small text edits (40,000 commits, three files of 0.5-7 KB each, about
one in ten under 1 KiB, ~1,000 paths: many trees and blobs, what an LFS scan walks)
with a 200 KB incompressible file every 16th commit (~500 MB on disk, as git/git's 496
MiB), 500 branches and 516 tags (half annotated) spread along it: 1,016 refs. Measured
in one run:

* bootstrap ``reposync sync local:SRC local:EMPTY`` (the CLI) against a native
  ``git push`` of the same refs to another empty repository, and their ratio
  (target: <= 1.1);
* a checkpoint: one new commit on ``main``, then ``reposync sync`` (the CLI, and the same
  Run in-process: no interpreter start-up) against a native push of that one ref
  (target: <= 0.75 s for the CLI).

    python bench/git_checkpoint.py                  # build (once) and measure
    python bench/git_checkpoint.py --commits 4000   # a quick look (~50 MB)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fastimport import import_history  # noqa: E402  (after the path tweak)
from bench.runner import timed_sync  # noqa: E402
from tests.gitrepo import commit_on, refs  # noqa: E402

CACHE = Path("/dev/shm/reposync-bench-gitlike")


def generate(path: Path, commits: int, branches: int, tags: int) -> None:
    """The history the module docstring describes, then a repack with a reachability
    bitmap (used with ``--bitmap`` only: a fresh clone has none)."""

    def files(n: int) -> list[tuple[str, bytes]]:
        changed = []
        for f in range(3):
            path_no = (n * 7 + f * 331) % 1000
            # 10-160 lines (~0.5-7 KB, ~1 in 10 under 1 KiB): a source tree's spread.
            body = "".join(
                f"line {k} of file {path_no} as of commit {n - n % (k + 3)}\n"
                for k in range(10 + path_no * 37 % 150)
            ).encode()
            changed.append((f"src{path_no % 40:02d}/file{path_no:03d}.c", body))
        if n % 16 == 0:
            changed.append((f"assets/{n % 500:03d}.bin", random.Random(n).randbytes(200_000)))
        return changed

    import_history(
        path,
        commits=commits,
        branches=branches,
        tags=tags,
        when=1_600_000_000,
        message=lambda n: f"commit {n}: edit three files\n",
        files=files,
        repack=["-a", "-d", "-b", "--window=10"],
    )


def native_push(source: Path, target: Path, refspecs: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        ["git", "--git-dir", str(source), "push", "-q", str(target), *refspecs],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def in_process_sync(source: Path, target: Path, data_dir: Path) -> tuple[float, dict]:
    """The same Run as the CLI's, in this process (no interpreter start-up or imports)."""
    from reposync.cli import main as cli_main

    argv = ["--data-dir", str(data_dir), "sync", f"local:{source}", f"local:{target}", "--json"]
    with tempfile.TemporaryFile(mode="w+") as out:
        saved = sys.stdout
        sys.stdout = out
        started = time.perf_counter()
        try:
            code = cli_main(argv)
        finally:
            sys.stdout = saved
        elapsed = time.perf_counter() - started
        out.seek(0)
        text = out.read()
    if code not in (0, None):
        raise SystemExit(f"in-process sync failed ({code}): {text}")
    return elapsed, json.loads(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=40_000)
    parser.add_argument("--branches", type=int, default=500)
    parser.add_argument("--tags", type=int, default=516)
    parser.add_argument(
        "--repeat",
        type=int,
        default=4,
        help="rounds; an even number gives each bootstrap side the first turn equally often",
    )
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--skip-bootstrap-ratio", action="store_true")
    parser.add_argument(
        "--bitmap", action="store_true", help="keep the reachability bitmap (a served repository)"
    )
    args = parser.parse_args()

    cached = args.cache / f"gitlike2-{args.commits}-{args.branches}-{args.tags}.git"
    if not cached.exists():
        cached.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        generate(cached, args.commits, args.branches, args.tags)
        print(f"generated {cached} in {time.perf_counter() - started:.1f}s")
    size = sum(f.stat().st_size for f in cached.rglob("*") if f.is_file())
    print(f"repository: {len(refs(cached))} refs, {size / 2**20:.0f} MiB on disk")
    print("load average at start: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))

    work_root = Path(tempfile.mkdtemp(prefix="reposync-bench-", dir=args.cache))
    try:
        source = work_root / "source.git"
        # A copy that shares the pack (hard links): the checkpoints add commits to it.
        subprocess.run(
            ["git", "clone", "-q", "--bare", "--local", str(cached), str(source)], check=True
        )
        if not args.bitmap:  # as a fresh clone of git/git has none (the cache keeps its own)
            for bitmap in (source / "objects" / "pack").glob("*.bitmap"):
                bitmap.unlink()
        wanted = [r for r in refs(source) if r.startswith(("refs/heads/", "refs/tags/"))]
        spec = ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"]
        boot_native, boot_sync = [], []
        target = work_root / "target.git"
        data = work_root / "data"
        rounds = 1 if args.skip_bootstrap_ratio else args.repeat
        for n in range(rounds):
            # Each round's first comer alternates: whoever goes first is faster (measured
            # here: a 558 MiB push takes 7 s first in a round and up to 11 s after
            # another), and a load that comes or goes favours neither side.
            for side in ("native", "reposync") if n % 2 == 0 else ("reposync", "native"):
                if side == "native":
                    native_target = work_root / f"native-{n}.git"
                    subprocess.run(["git", "init", "-q", "--bare", str(native_target)], check=True)
                    boot_native.append(native_push(source, native_target, spec))
                    shutil.rmtree(native_target)
                    continue
                shutil.rmtree(target, ignore_errors=True)
                shutil.rmtree(data, ignore_errors=True)
                subprocess.run(["git", "init", "-q", "--bare", str(target)], check=True)
                elapsed, _, report = timed_sync(source, target, data)
                assert report["status"] == "completed", report
                assert report["counters"]["created"] == len(wanted), report["counters"]
                boot_sync.append(elapsed)
            print(
                f"bootstrap round {n + 1}: native {boot_native[-1]:.2f}s, "
                f"reposync {boot_sync[-1]:.2f}s, ratio {boot_sync[-1] / boot_native[-1]:.2f}"
            )

        native_target = work_root / "native.git"
        subprocess.run(["git", "init", "-q", "--bare", str(native_target)], check=True)
        native_push(source, native_target, spec)
        one_native, one_cli, one_inproc = [], [], []
        for n in range(args.repeat):
            commit_on(source, "refs/heads/main", f"checkpoint {n} (cli)")
            one_native.append(
                native_push(source, native_target, ["+refs/heads/main:refs/heads/main"])
            )
            elapsed, _, report = timed_sync(source, target, data)
            assert report["counters"].get("updated") == 1, report["counters"]
            one_cli.append(elapsed)
            commit_on(source, "refs/heads/main", f"checkpoint {n} (in-process)")
            elapsed, report = in_process_sync(source, target, data)
            assert report["counters"].get("updated") == 1, report["counters"]
            one_inproc.append(elapsed)
            print(
                f"checkpoint round {n + 1}: native one-ref push {one_native[-1]:.2f}s, "
                f"reposync CLI {one_cli[-1]:.2f}s, in-process {one_inproc[-1]:.2f}s"
            )
        assert refs(target) == {
            k: v for k, v in refs(source).items() if k in set(wanted) | {"refs/heads/main"}
        }

        med = statistics.median
        print()
        print(f"refs                                 {len(wanted)}")
        print(f"bootstrap native push                {med(boot_native):8.2f} s")
        print(f"bootstrap reposync sync (CLI)        {med(boot_sync):8.2f} s")
        ratio = med(boot_sync) / med(boot_native)
        print(f"bootstrap ratio                      {ratio:8.2f}   (target <= 1.1)")
        # A pair of rounds, one of each order, gives one ratio: the sum of its two reposync
        # times over the sum of its two native ones (each side first once).
        paired = sorted(
            (boot_sync[k] + boot_sync[k + 1]) / (boot_native[k] + boot_native[k + 1])
            for k in range(0, len(boot_sync) - 1, 2)
        )
        if paired:
            print(
                f"bootstrap ratio of pairs of rounds   {med(paired):8.2f}   median "
                f"({paired[0]:.2f}-{paired[-1]:.2f} over {len(paired)} pairs)"
            )
        print(f"checkpoint native one-ref push       {med(one_native):8.2f} s")
        print(f"checkpoint reposync sync (CLI)       {med(one_cli):8.2f} s   (target <= 0.75)")
        print(f"checkpoint reposync sync in-process  {med(one_inproc):8.2f} s")
        print("load average at end: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
        return 0
    finally:
        shutil.rmtree(work_root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
