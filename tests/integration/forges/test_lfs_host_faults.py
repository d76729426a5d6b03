"""Every way a forge's LFS host may fail one of a Run's LFS requests.

The Git host of either test server (GitHub's, Forgejo's) answers one kind of the LFS
requests a bootstrap with LFS objects sends (the Batch API's, an object's upload, its
verify) with an HTTP error, or performs one and loses its answer (the connection
closed), once or from then on (``fault_matrix``: what CI runs of it). For each, the Run
ends with the code its kind calls for (credentials refused at once, an upload's action
refused asked for again once, a server error retried, then ``provider_unavailable``; a
verify's answer proven by the Batch API), and
nothing is lost or written twice: no object reaches the store twice (a lost answer is
settled by asking the Batch API, never by sending again), and once the host is well, a
recovery (where writes were left unknown) and one more Run converge the repository,
objects and refs, after which a Run has nothing to send.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

from reposync.service.bindings import SyncRequest
from reposync.service.embedded import sync
from tests.gitrepo import generate, refs
from tests.integration.forges.fault_matrix import cases, converge, parametrized, strike
from tests.lfsrepo import commit_lfs, stored

MODEL = b"weights " * 3000
CASES = cases((401, 403, 404, 429, 500, 503, "lost"), ["batch", "upload", "verify"])
OID = re.compile(r"[0-9a-f]{64}")


@parametrized(CASES)
def test_an_lfs_request_the_forge_fails_is_named_and_loses_nothing(
    tmp_path, host, answer, where, persistent
):
    ctx, fake = host.ctx, host.fake
    method, path = host.lfs_places[where]
    rule = strike(fake, "git", method, path, answer, persistent)
    ctx.settings = replace(ctx.settings, retry_backoff=0.01, max_stage_attempts=3)
    source = generate(tmp_path / "src.git", commits=2, branches=1, tags=0)
    commit_lfs(source, "refs/heads/main", {"model.bin": MODEL, "notes.bin": b"notes\n"})
    request = SyncRequest(f"local:{source}", host.target)

    run = sync(ctx, request)

    assert rule.hits >= 1, "the fault never struck: its place is not where the Run asks"
    codes = [p["error_code"] for p in run.report["problems"]]
    if answer in (401, 403) and where == "upload" and not persistent:
        # An upload's action refused once: asked for again, and the object sent again
        # (the store took nothing). Before, the Run was blocked ``permission_denied``.
        assert run.status == "completed", codes
    elif answer in (401, 403) and where != "verify":
        # The credentials refused: at once, never retried with the same ones. Before,
        # an upload refused so was an unknown outcome the stage retried, and its Run
        # failed ``provider_unavailable`` once the attempts were spent.
        assert (run.status, codes[0]) == ("blocked", "permission_denied"), codes
    elif answer == 404 and where == "batch":  # no repository, or (Forgejo) no LFS served
        assert run.status != "completed"
        assert codes[0] in ("permission_denied", "lfs_not_served"), codes
    elif answer == 404 and where == "verify":  # the spec's "not found": not verified
        assert codes == ["lfs_object_corrupt"], codes
    elif persistent and where != "verify" and (answer != "lost" or where == "batch"):
        # A server error, or a Batch API that never answers: retried, then unavailable.
        assert codes[0] == "provider_unavailable", codes
    else:  # once, or a verify's answer or a lost one: the Batch API proves the object
        assert run.status == "completed", codes
    if run.status != "completed":
        assert codes, "a Run that did not complete says why"

    converge(ctx, fake, run, request)
    assert host.lfs_objects() == stored(source)
    assert host.refs() == refs(source)
    upload_method, upload_path = host.lfs_places["upload"]
    reached = Counter(
        OID.findall(path)[-1]
        for method_, path, status in host.lfs_requests()
        if method_ == upload_method
        and re.search(upload_path, path)
        and not (answer != "lost" and where == "upload" and status == answer)
    )
    assert set(reached.values()) == {1}, f"an object reached the store twice: {reached}"
    requests = len(host.lfs_requests())
    assert sync(ctx, request).status == "completed"
    assert len(host.lfs_requests()) == requests  # nothing left to send
