"""What the forges' test servers share about Git: bare repositories (``bare_repos``),
smart HTTP through ``git http-backend`` (``smart_http``), the LFS object store and Batch
API request checks (``lfs_store``) and WSGI helpers (``wsgi``)."""
