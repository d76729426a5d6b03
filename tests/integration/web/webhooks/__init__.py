"""Webhooks in (every forge's) and out (subscriptions, watches) through the API."""
