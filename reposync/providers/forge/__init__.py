"""Forge semantics: what reposync writes on a hosted forge that cannot hold an object
as the source has it, and how it reads that back as the original.

GitHub and Forgejo/Gitea share the problem: one index numbers issues and pull requests,
the ordinary API sets no author and no time, a pull request whose branch is gone cannot
be opened, a review by the sync's account cannot approve. The answers (attribution
headers and markers in bodies, placeholders in number gaps, carrier issues, review
requests and placements projected into comments) live here once. The local forge
(``providers/local``) holds every field natively and needs none of this.

Each module holds one rule; where the rule needs the forge, it asks through a small
``Protocol`` the provider implements with its own requests. Nothing here sends a
request or names a concrete provider (an import contract in ``pyproject.toml``).

What a Forgejo provider reuses as is, and what it parametrizes (read against
``forgejo-swagger-v1.json``):

* ``bodies`` (header and marker text): as is; Forgejo renders the same Markdown.
* ``attribution`` (``ATTRIBUTED_FIELDS``, ``attributed_body``, ``header_value``): as is
  for writes by the token's account. A write authored as the source author's mapped
  account through ``Sudo`` passes its own ``fields`` (the times still: the API sets
  none); the header's visible line names ``author`` from the header, so such a write
  keeps it there or passes ``attributed_body``'s ``headline``. ``BatchReferences`` and
  ``parent_number``: a batch's paths and what its references name, as is.
* ``numbers``: ``NumberAllocator`` as is; Forgejo implements ``NumberSpace``
  (``GET /issues?state=all&sort=latest&limit=1``, a close without ``state_reason``,
  which Forgejo does not keep). Forgejo cannot turn a placeholder into a pull request
  (its ``POST /pulls`` takes no issue), so a pull request synced after its
  placeholder is carried in it; deleting an issue does not free its number.
* ``batch`` (``ForgeWriter``: the loop over a batch's writes, deferral, refusals, the
  changed-since-planned check, the look-up after a lost response): as is; each forge
  gives its hooks (``current``, ``find_created``, ``finish_create``,
  ``representation``) and which errors refuse a write (Forgejo's 404 of a write is one).
* ``markers``: ``MarkerFinder`` and ``find_created`` as is; Forgejo implements
  ``MarkerSearch`` and ``NaturalKeys``. It lists repository comments without a sort
  (``since`` narrows them), reviews per pull request and review comments only per
  review (``bodies_per_parent``), so its listings are shaped differently from GitHub's.
* ``objects`` (JSON as canonical objects where Forgejo's API names the fields as
  GitHub's does: conversations, comments, reviews, review comments, releases): as is,
  with Forgejo's login read through its account map, and its own review states,
  review comment lines (``position``), release times and merge.
* ``carriers`` (carrier issues, ``comment-<id>`` identities, ``carried_object``, the
  comment that carries an object: ``carried_comment``): as is; Forgejo's issue JSON has
  ``pull_request`` as GitHub's does, and its context implements ``CommentRequests``.
* ``review_requests`` (the body and the handlers): as is, with the context's
  ``forge="Forgejo"``; a reviewer with an account on the instance can be requested
  natively instead (the provider's choice).
* ``reviews``: placements, vessels and notes as is, with ``forge="Forgejo"``; the
  provider passes as ``notes`` only the states it cannot give (a review authored
  through ``Sudo`` as the mapped reviewer can approve natively). Forgejo's review
  comments take no ``in_reply_to``: a reply is no ``reply_to_root`` there; it is
  posted at its comment's line (``Representation.REPLY_BY_LINE``, placed by the Forgejo
  provider's ``writes/reviews.py``).

Reactions have no shared rule yet (GitHub's are archive-only); Forgejo can write them
as the mapped account through ``Sudo``, and a reaction has no body for a header. What
GitHub alone does to values (asset names, due days: ``providers/github/shapes.py``)
stays GitHub's; a forge that keeps a value coarser writes the exact one in a header of
its own the same way (``bodies.compose`` without a marker).
"""
