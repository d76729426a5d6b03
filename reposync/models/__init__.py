"""ORM models. Importing this package registers every table on ``Base.metadata``."""

from reposync.models.base import Base, utcnow
from reposync.models.binding import Binding
from reposync.models.github_account import (
    GitHubAccount,
    GitHubConnectState,
    GitHubGrantRepository,
    GitHubInstallationGrant,
)
from reposync.models.idempotency import IdempotencyKey
from reposync.models.incoming_webhook import IncomingWebhook
from reposync.models.inventory import InventoryEntry
from reposync.models.object_link import ObjectLink
from reposync.models.owner_binding import OwnerBinding, OwnerBindingMember
from reposync.models.run import Run
from reposync.models.run_event import RunEvent
from reposync.models.run_item import RunItem
from reposync.models.user import ApiToken, AuthFailure, RepositoryGrant, User
from reposync.models.watch import BranchWatch
from reposync.models.webhook import DeliveryStatus, WebhookDelivery, WebhookSubscription
from reposync.models.write_budget import (
    WriteBudgetAccount,
    WriteBudgetClaimant,
    WriteBudgetEvent,
)

__all__ = [
    "ApiToken",
    "AuthFailure",
    "Base",
    "Binding",
    "BranchWatch",
    "DeliveryStatus",
    "GitHubAccount",
    "GitHubConnectState",
    "GitHubGrantRepository",
    "GitHubInstallationGrant",
    "IdempotencyKey",
    "IncomingWebhook",
    "InventoryEntry",
    "ObjectLink",
    "OwnerBinding",
    "OwnerBindingMember",
    "RepositoryGrant",
    "Run",
    "RunEvent",
    "RunItem",
    "User",
    "WebhookDelivery",
    "WebhookSubscription",
    "WriteBudgetAccount",
    "WriteBudgetClaimant",
    "WriteBudgetEvent",
    "utcnow",
]
