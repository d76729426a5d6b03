"""What reposync reads of a Forgejo or Gitea delivery, and nothing more: a tolerant reader.

Forgejo's payloads are its API objects (``Repository``, ``Issue``, ``PullRequest``,
``Comment``, ``Release``, ``User``) around a few fields of the event; both grow with each
release, Gitea's differ from Forgejo's in places (a ``create``'s short ref name, fields
one has and the other not), and an instance's own settings add or leave out more. So a
delivery is checked against reposync's own schema of the properties it reads, in the
shape it reads them (``providers/webhooks.py: read_object``), and nothing else.

What is read: the repository's id (a positive 64-bit integer), ``full_name``
(``OWNER/NAME`` as Forgejo spells them) and ``html_url`` (the web address it names its
instance by: ``webhooks.instance_of``); an ``action`` where the event has one; a push's
ref and object ids (Git's hex); a ``create``'s or ``delete``'s ref and its kind. No time
is read: Forgejo's payloads carry none of the change itself (a push's repository still
shows its previous ``updated_at``: Forgejo moves it after the hooks are queued, and
commit times are their authors'), so a delivery is ordered by its arrival.

A delivery that breaks this is refused (422 ``webhook_payload_invalid``) naming the path,
before anything is recorded.
"""

from __future__ import annotations

import functools
from typing import Any

from jsonschema import Draft202012Validator

from reposync.providers.webhooks import checked, read_object

#: Forgejo's ids are int64 and positive.
MAX_ID = 2**63 - 1
#: The longest ``owner/name`` a delivery record keeps (its column's width, with the
#: instance's name before it).
MAX_FULL_NAME = 512
#: A repository's web address: an instance's URL and ``OWNER/NAME`` (far below any URL a
#: browser takes).
MAX_URL = 2048
#: A ref name longer than this is no ref git would make (its own limit is 4096 bytes).
MAX_REF = 4096
#: Forgejo's owner and repository names (``locators``' grammar; checked again there).
_FULL_NAME = r"^[A-Za-z0-9._-]{1,100}/[A-Za-z0-9._-]{1,100}$"
#: Git object ids: SHA-1, or SHA-256 in a repository that uses it.
_OBJECT_ID = "^([0-9a-f]{40}|[0-9a-f]{64})$"

ID: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": MAX_ID}
FULL_NAME: dict[str, Any] = {"type": "string", "maxLength": MAX_FULL_NAME, "pattern": _FULL_NAME}
HTML_URL: dict[str, Any] = {"type": "string", "maxLength": MAX_URL, "pattern": "^https?://[^/]"}
OBJECT_ID: dict[str, Any] = {"type": "string", "pattern": _OBJECT_ID}
REF: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": MAX_REF}
ACTION: dict[str, Any] = {"type": "string", "maxLength": 64}
REPOSITORY = read_object({"id": ID, "full_name": FULL_NAME, "html_url": HTML_URL})
#: What names the instance a delivery's repository is on (read before the rest).
ADDRESS = read_object({"full_name": FULL_NAME, "html_url": HTML_URL})


def _content(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return read_object({"repository": REPOSITORY, **(extra or {})}, {"action": ACTION})


#: Per shape of payload (``events.SHAPES`` says which each event has), what is read.
SCHEMAS: dict[str, dict[str, Any]] = {
    "push": _content({"ref": REF, "before": OBJECT_ID, "after": OBJECT_ID}),
    "ref": _content({"ref": REF, "ref_type": {"type": "string", "maxLength": 64}}),
    "content": _content(),
    "repository": read_object({"repository": REPOSITORY, "action": ACTION}),
}


@functools.cache
def _validator(shape: str) -> Draft202012Validator:
    return Draft202012Validator(ADDRESS if shape == "address" else SCHEMAS[shape])


def address(payload: object) -> tuple[str, str] | None:
    """The ``html_url`` and ``full_name`` of the repository a payload names, when it names
    one in range (else None: the reading of the event refuses it, or ignores it)."""
    repository = payload.get("repository") if isinstance(payload, dict) else None
    if not _validator("address").is_valid(repository):
        return None
    assert isinstance(repository, dict)
    return repository["html_url"], repository["full_name"]


def read(shape: str, event: str, payload: object) -> dict[str, Any]:
    """``payload`` once it holds what reposync reads of a payload of ``shape`` (a key of
    ``SCHEMAS``); ``WebhookPayloadInvalid`` naming ``event`` and the first path that
    does not."""
    return checked(_validator(shape), event, payload)
