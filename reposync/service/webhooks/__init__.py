"""Webhooks in and out: a forge's deliveries read once and the Runs they owe, branch
watches, and the subscriptions, outbox and signed deliveries that tell the operator's
own systems what changed."""
