"""Test doubles that speak real protocols: a GitHub-faithful server and its contract harness."""
