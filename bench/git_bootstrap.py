"""Benchmark: reposync's Git bootstrap against native ``git clone --mirror`` + ``push --mirror``.

Builds (or takes, with --repo) a repository with thousands of refs and measures, in one
run and on the same machine:

* the wall time of ``reposync sync local:SRC local:EMPTY`` (the whole CLI, start-up,
  database, planning, pushes and read-back included);
* the wall time of the native baseline ``git clone --mirror`` + ``git push --mirror``;
* the ratio of the two (target: <= 1.5 at 5,000 refs);
* the wall time of a second, no-change ``reposync sync`` (target: < 2 s).

Each measurement is repeated (--repeat, default 3) and the median is reported.

    python bench/git_bootstrap.py            # 2,500 branches + 2,500 tags
    python bench/git_bootstrap.py --refs 10000 --commits 40000
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.runner import timed_sync  # noqa: E402  (after the path tweak)
from tests.gitrepo import generate, refs  # noqa: E402


def timed(argv: list[str], **kwargs: object) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, **kwargs)  # type: ignore[call-overload]
    return time.perf_counter() - started


def native(source: Path, work: Path) -> float:
    mirror, target = work / "mirror.git", work / "native-target.git"
    subprocess.run(["git", "init", "-q", "--bare", str(target)], check=True)
    started = time.perf_counter()
    subprocess.run(["git", "clone", "-q", "--mirror", str(source), str(mirror)], check=True)
    subprocess.run(["git", "-C", str(mirror), "push", "-q", "--mirror", str(target)], check=True)
    elapsed = time.perf_counter() - started
    assert refs(target) == refs(source)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, help="use this repository instead of generating")
    parser.add_argument("--refs", type=int, default=5000, help="refs to generate (half tags)")
    parser.add_argument("--commits", type=int, default=20000)
    parser.add_argument("--files-per-commit", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    work_root = Path(tempfile.mkdtemp(prefix="reposync-bench-"))
    try:
        if args.repo:
            source = args.repo
        else:
            started = time.perf_counter()
            source = generate(
                work_root / "source.git",
                commits=args.commits,
                branches=args.refs // 2,
                tags=args.refs - args.refs // 2,
                files_per_commit=args.files_per_commit,
                file_bytes=400,
            )
            subprocess.run(["git", "--git-dir", str(source), "gc", "-q"], check=True)
            print(f"generated {source} in {time.perf_counter() - started:.1f}s")
        source_refs = refs(source)
        size = sum(f.stat().st_size for f in source.rglob("*") if f.is_file())
        print(f"repository: {len(source_refs)} refs, {size / 1e6:.1f} MB on disk")

        native_times, sync_times, nochange_times = [], [], []
        for n in range(args.repeat):
            work = work_root / f"round-{n}"
            work.mkdir()
            native_times.append(native(source, work))
            target, data = work / "reposync-target.git", work / "data"
            elapsed, _, report = timed_sync(source, target, data)
            assert report["status"] == "completed", report
            assert report["counters"]["created"] == len(
                [r for r in source_refs if r.startswith(("refs/heads/", "refs/tags/"))]
            )
            sync_times.append(elapsed)
            elapsed, _, report = timed_sync(source, target, data)
            assert report["counters"]["checkpoint_skipped"] == report["counters"]["scanned"]
            assert "target" not in report["io"], report["io"]
            nochange_times.append(elapsed)
            shutil.rmtree(work)
            print(
                f"round {n + 1}: native {native_times[-1]:.2f}s, reposync "
                f"{sync_times[-1]:.2f}s, no-change {nochange_times[-1]:.2f}s"
            )

        native_s = statistics.median(native_times)
        sync_s = statistics.median(sync_times)
        nochange_s = statistics.median(nochange_times)
        ratio = sync_s / native_s
        print()
        print(f"refs                                  {len(source_refs)}")
        print(f"native clone --mirror + push --mirror {native_s:8.2f} s (median of {args.repeat})")
        print(f"reposync sync to an empty target      {sync_s:8.2f} s")
        print(f"ratio reposync / native               {ratio:8.2f}   (target <= 1.5)")
        print(f"reposync no-change second Run         {nochange_s:8.2f} s   (target < 2 s)")
        ok = ratio <= 1.5 and nochange_s < 2.0
        print("RESULT", "meets both targets" if ok else "MISSES a target")
        return 0 if ok else 1
    finally:
        shutil.rmtree(work_root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
