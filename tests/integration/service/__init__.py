"""The service's rooms in the embedded mode: schedules, budgets, webhooks out, watches, owners."""
