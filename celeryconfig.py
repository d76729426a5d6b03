"""Celery configuration module (``celery -A reposync.tasks.app`` loads it).

Values come from ``REPOSYNC_*`` environment variables through ``reposync.config``;
``reposync.tasks.settings`` explains each one.
"""

from reposync.config import Settings
from reposync.tasks.settings import celery_settings

globals().update(celery_settings(Settings.from_env()))
