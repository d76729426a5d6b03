# One image for every service of the distributed mode (api, worker, beat, flower).
FROM python:3.11-slim-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md celeryconfig.py alembic.ini ./
COPY reposync ./reposync
COPY migrations ./migrations
RUN pip install --no-cache-dir -e . && python -m compileall -q reposync
# The services run as an unprivileged user that owns only its data and the local forges
# (a named volume starts with the owner of the directory it is mounted on); the code
# stays root's, read-only to it.
RUN groupadd --system --gid 10001 reposync \
    && useradd --system --uid 10001 --gid reposync --home-dir /var/lib/reposync \
       --no-create-home --shell /usr/sbin/nologin reposync \
    && mkdir -p /var/lib/reposync /srv/forge \
    && chown reposync:reposync /var/lib/reposync /srv/forge \
    && chmod 0700 /var/lib/reposync
ENV REPOSYNC_DATA_DIR=/var/lib/reposync \
    HOME=/var/lib/reposync
# Celery: a SIGTERM from the orchestrator becomes a soft shutdown that restores
# unacknowledged messages instead of waiting out the visibility timeout.
ENV REMAP_SIGTERM=SIGQUIT
VOLUME /var/lib/reposync
USER reposync:reposync
