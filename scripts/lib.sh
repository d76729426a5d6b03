# Shared by scripts/demo and scripts/test: a virtualenv with reposync installed.
# Works on a fresh Debian machine with Python 3.11: missing system packages (git,
# python3-venv) are installed with apt when running as root, or named otherwise.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# REPOSYNC_VENV: another virtualenv to use (the test suite runs the demo in its own).
VENV="${REPOSYNC_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"

# How long apt-get waits for another apt or dpkg (unattended-upgrades on a fresh
# machine, a second terminal) to let go of its lock, instead of failing at once.
APT_LOCK_TIMEOUT="${APT_LOCK_TIMEOUT:-300}"

need_apt() {
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        export DEBIAN_FRONTEND=noninteractive
        echo "installing with apt-get: $* (waiting up to ${APT_LOCK_TIMEOUT}s for another apt to finish)" >&2
        local apt=(apt-get -o "DPkg::Lock::Timeout=$APT_LOCK_TIMEOUT")
        "${apt[@]}" install -y -qq "$@" >/dev/null 2>&1 || {
            "${apt[@]}" update -qq >/dev/null && "${apt[@]}" install -y -qq "$@" >/dev/null
        } || {
            echo "error: apt-get could not install: $*" >&2
            exit 2
        }
    else
        echo "error: please install: $* (for example: sudo apt-get install $*)" >&2
        exit 2
    fi
}

ensure_venv() {
    command -v git >/dev/null || need_apt git
    if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
        echo "error: reposync needs Python 3.11 or newer ($PYTHON is $("$PYTHON" -V 2>&1))" >&2
        exit 2
    fi
    if [ ! -x "$VENV/bin/python" ]; then
        "$PYTHON" -m venv "$VENV" 2>/dev/null || {
            need_apt python3-venv
            "$PYTHON" -m venv "$VENV"
        }
    fi
    local stamp="$VENV/.installed"
    if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
        "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
        "$VENV/bin/python" -m pip install -q -e "$ROOT[test]"
        touch "$stamp"
    fi
    # An editable install leaves reposync's own modules uncompiled, and environments with
    # PYTHONDONTWRITEBYTECODE never cache them: every command would compile ~100 modules.
    "$VENV/bin/python" -m compileall -q "$ROOT/reposync" >/dev/null
}

# The JavaScript packages some tests run (tests/node/package.json, pinned by its lock
# file): real GitHub clients and verifiers other people wrote. Installed with npm ci
# again whenever the lock file is newer than the last install.
ensure_node_modules() {
    { command -v node >/dev/null && command -v npm >/dev/null; } || need_apt nodejs npm
    local dir="$ROOT/tests/node" stamp="$ROOT/tests/node/node_modules/.installed"
    if [ ! -f "$stamp" ] || [ "$dir/package-lock.json" -nt "$stamp" ]; then
        npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >/dev/null
        touch "$stamp"
    fi
}
