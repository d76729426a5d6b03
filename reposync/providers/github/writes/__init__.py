"""Canonical writes as GitHub requests, one module per family of objects.

What GitHub cannot hold natively is written so it reads back exactly, by the rules of
``providers.forge`` (shared with every hosted forge) over GitHub's requests:

* authorship and timestamps go into an attributed header (``forge.attribution``);
* a pull request that cannot be re-created (merged, closed, or its head branch is not
  on GitHub at its head commit) becomes a closed-or-open **issue carrier** whose header
  keeps every pull request field; reviews and review comments on a carrier become
  comments carrying theirs (``forge.carriers``; GitHub's requests in ``carriers``);
* issue and pull request numbers are kept on an empty standby by creating in number
  order and filling gaps with closed **placeholder** issues, which a later create of
  that number takes over (``forge.numbers``; GitHub's ``NumberSpace`` in ``numbers``);
* a create whose response is lost is looked for at once (marker, or the natural key of
  labels, milestones and assets: ``forge.markers``; GitHub's listings in ``markers``)
  and otherwise reported ``UNKNOWN``, never re-sent.

``batch.GitHubWriter`` applies a batch: it sends each write to its family's handler
(``labels``, ``milestones``, ``issues``, ``pulls``, ``reviews``, ``releases``, and
``forge.review_requests``, which projects review requests through the comment requests
of ``context``) and turns what GitHub answered into results. What the writes of one
batch share (the client, caches, what the batch created) is ``context.WriteContext``.
"""
