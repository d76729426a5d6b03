"""git's environment for a remote over HTTP or SSH: the stall guards the providers put in it."""

from __future__ import annotations

import pytest

from reposync.git.environment import ssh_stall_guard, stall_guard


def test_the_stall_guard_is_git_s_low_speed_limit_of_one_byte_a_second_unless_off():
    assert stall_guard(300.0) == {
        "GIT_HTTP_LOW_SPEED_LIMIT": "1",
        "GIT_HTTP_LOW_SPEED_TIME": "300",
    }
    assert stall_guard(0.4)["GIT_HTTP_LOW_SPEED_TIME"] == "1"  # git counts whole seconds
    assert stall_guard(0) == {}


GUARD = "-o ServerAliveInterval=100 -o ServerAliveCountMax=3 -o ConnectTimeout=300"


def _unset() -> str | None:
    return None


@pytest.mark.parametrize(
    ("env", "configured", "wanted"),
    [
        ({}, None, f"ssh {GUARD}"),
        ({"GIT_SSH_COMMAND": "ssh -i /keys/deploy"}, None, f"ssh -i /keys/deploy {GUARD}"),
        (
            {"GIT_SSH_COMMAND": "/usr/bin/ssh -F /dev/null"},
            None,
            f"/usr/bin/ssh -F /dev/null {GUARD}",
        ),
        ({}, "ssh -i '/keys/my key'", f"ssh -i '/keys/my key' {GUARD}"),
        ({"GIT_SSH_COMMAND": "ssh -i k"}, "never read", f"ssh -i k {GUARD}"),
        # a wrapper git does not take for OpenSSH is given no option it may not know
        ({"GIT_SSH_COMMAND": "/opt/bin/tunnel-ssh"}, None, None),
        ({"GIT_SSH_COMMAND": "plink -batch"}, None, None),
        ({}, "tortoiseplink", None),
        # unless the operator says it is OpenSSH, as git would take it
        ({"GIT_SSH_COMMAND": "wrap", "GIT_SSH_VARIANT": "ssh"}, None, f"wrap {GUARD}"),
        ({"GIT_SSH_COMMAND": "ssh", "GIT_SSH_VARIANT": "putty"}, None, None),
        # a GIT_SSH program takes no shell words
        ({"GIT_SSH": "/usr/bin/ssh"}, None, None),
        ({"GIT_SSH_COMMAND": "ssh 'unclosed"}, None, None),
    ],
)
def test_openssh_gives_up_a_connection_whose_server_answers_nothing(env, configured, wanted):
    guarded = ssh_stall_guard(300.0, env, lambda: configured)
    assert guarded.get("GIT_SSH_COMMAND") == wanted


def test_the_ssh_stall_guard_is_off_with_the_http_one():
    assert ssh_stall_guard(0, {}, _unset) == {}
    short = ssh_stall_guard(2.0, {}, _unset)["GIT_SSH_COMMAND"]
    assert "ServerAliveInterval=1 " in short  # OpenSSH counts whole seconds, at least 1
    assert short.endswith("ConnectTimeout=2")
