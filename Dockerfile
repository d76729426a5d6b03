# One image for every service of the distributed mode (api, worker, beat, flower).
FROM python:3.11-slim-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md celeryconfig.py alembic.ini ./
COPY reposync ./reposync
COPY migrations ./migrations
RUN pip install --no-cache-dir -e .
ENV REPOSYNC_DATA_DIR=/var/lib/reposync
# Celery: a SIGTERM from the orchestrator becomes a soft shutdown that restores
# unacknowledged messages instead of waiting out the visibility timeout.
ENV REMAP_SIGTERM=SIGQUIT
VOLUME /var/lib/reposync
