"""Canonical writes as Forgejo requests, one module per family of objects.

What Forgejo cannot hold natively is written so it reads back exactly, by the rules of
``providers.forge`` (shared with every hosted forge) over Forgejo's requests:

* authorship and timestamps go into an attributed header (``context.HEADER_FIELDS``),
  except the author of a person the instance's map names: their account writes it;
* a pull request that cannot be opened (merged, closed, its head on no branch here, its
  number kept by a placeholder) becomes an **issue carrier**; reviews and review
  comments on a carrier become comments carrying theirs (``carriers``);
* numbers are kept by creating in number order, filling gaps with closed placeholder
  issues (``numbers``: Forgejo's ``NumberSpace``);
* a create whose response is lost is looked for at once (``markers``) and otherwise
  reported ``UNKNOWN``, never re-sent.

``batch.ForgejoWriter`` applies a batch through each family's handlers (``labels`` with
milestones, ``issues``, ``pulls``, ``reviews``, ``releases``, and
``forge.review_requests`` over ``context``'s comment requests); ``context.WriteContext``
is what the writes of one batch share.
"""
