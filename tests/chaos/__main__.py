"""``python -m tests.chaos --rounds N --seed S``: a chaos soak; exit status 0 when every
promise held (see ``tests/chaos/harness.py``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tests.chaos.harness import KINDS, WINDOWS, ChaosConfig, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2, help="reposync worker processes")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="size of the repository and its forge"
    )
    parser.add_argument(
        "--round-timeout",
        type=float,
        default=180.0,
        help="generous limit for a Run to end by itself (not a timing assertion)",
    )
    parser.add_argument(
        "--max-faults", type=int, default=2, help="faults per round at most (default 2)"
    )
    parser.add_argument(
        "--faults",
        default="",
        help="targeted soak: comma-separated KIND or KIND@WINDOW, one per round in turn "
        "(kinds: " + ", ".join(KINDS) + "; windows: " + ", ".join(WINDOWS) + ")",
    )
    parser.add_argument(
        "--stop-on-failure", action="store_true", help="stop after the first failed round"
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--workdir", type=Path, help="work directory (default: a new one)")
    args = parser.parse_args(argv)
    summary = run(
        ChaosConfig(
            rounds=args.rounds,
            seed=args.seed,
            workers=args.workers,
            scale=args.scale,
            round_timeout=args.round_timeout,
            max_faults=args.max_faults,
            faults=tuple(f.strip() for f in args.faults.split(",") if f.strip()),
            stop_on_failure=args.stop_on_failure,
            keep=args.keep,
            workdir=args.workdir,
        )
    )
    print(summary.render())
    return 0 if summary.ok() else 1


if __name__ == "__main__":
    sys.exit(main())
