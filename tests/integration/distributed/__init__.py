"""The distributed mode for real: celery workers, beat, Redis, PostgreSQL, gunicorn."""
