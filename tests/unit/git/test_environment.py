"""git's environment for a remote over HTTP: the stall guard the providers put in it."""

from __future__ import annotations

from reposync.git.environment import stall_guard


def test_the_stall_guard_is_git_s_low_speed_limit_of_one_byte_a_second_unless_off():
    assert stall_guard(300.0) == {
        "GIT_HTTP_LOW_SPEED_LIMIT": "1",
        "GIT_HTTP_LOW_SPEED_TIME": "300",
    }
    assert stall_guard(0.4)["GIT_HTTP_LOW_SPEED_TIME"] == "1"  # git counts whole seconds
    assert stall_guard(0) == {}
