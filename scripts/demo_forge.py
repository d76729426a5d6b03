"""Fill a small local forge with forge objects (used by scripts/demo).

python scripts/demo_forge.py PATH
"""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from reposync.providers.base import EndpointSpec
from reposync.providers.local import LocalProvider
from reposync.providers.local.authoring import ForgeAuthoring


def main(path: Path) -> None:
    if path.exists():
        return
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    provider = LocalProvider.open(EndpointSpec("local", str(path)))
    forge = ForgeAuthoring(provider.forge)
    when = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    forge.create_label("bug", color="d73a4a", description="Something is broken")
    forge.create_label("good first issue", color="7057ff")
    forge.create_milestone("v1.0", description="The first release")
    crash = forge.create_issue(
        "Crash when the standby is empty",
        author="ann",
        created_at=when,
        body="Steps: sync to a new directory.",
        labels=["bug"],
        milestone="v1.0",
    )
    forge.add_comment("issue", crash, "Reproduced on 0.1.0.", author="bob", created_at=when)
    forge.add_reaction("issue", crash, "+1", "carol")
    release = forge.create_release(
        "v1.0", author="ann", name="First release", body="Fixes #1.", created_at=when
    )
    forge.upload_asset(
        release, "CHECKSUMS.txt", b"sha256 of everything\n", content_type="text/plain"
    )
    provider.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
