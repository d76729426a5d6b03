"""What the forges' test servers share about Git: bare repositories (``bare_repos``),
smart HTTP through ``git http-backend`` (``smart_http``), the LFS object store and Batch
API request checks (``lfs_store``) and WSGI helpers (``wsgi``); and, on them, the plain
Git server of ``git:`` tests (``plain``: ``git http-backend`` behind Basic auth with an
LFS API, ``plain_http``/``plain_lfs``, and OpenSSH's ``sshd`` with a forced command,
``sshd``)."""
