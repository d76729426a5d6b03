"""One reader per Run per API process: every event stream of a Run waits on it.

Each stream once polled the database itself every second: 200 streams were 200 queries
a second and 200 threads busy with them, and the rest of the API slowed. Now the first
stream of a Run starts its ``RunFeed``: one thread reads the Run's status and new events
every ``poll`` seconds, encodes each event once, and wakes the streams waiting on it; a
waiting stream costs a blocked thread and nothing else. The feed keeps a bounded window
of recent messages; a stream further behind (a reconnect with an old ``Last-Event-ID``)
reads that gap from the database itself, then joins. The feed stops when its last
stream leaves or the Run has ended and said so.

Whoever holds a stream was authorized when it opened (the view looks the Run up as that
user); the feed reads for all of them with the unchecked queries.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from reposync.errors import RecordNotFound, ReposyncError
from reposync.lifecycle import RunStatus

log = logging.getLogger(__name__)

#: Messages a feed keeps for streams a little behind (one Run's events, encoded).
WINDOW = 1000


class EventSource(Protocol):
    """The three reads a feed makes (the service's unchecked queries, or a test's)."""

    def last_seq(self, run_id: int) -> int: ...

    def status(self, run_id: int) -> str | None: ...

    def events_after(self, run_id: int, after_seq: int) -> Sequence[Any]: ...


@dataclass(frozen=True)
class Update:
    """What a stream at some sequence number has to send next.

    ``gap``: events after it have left the window (or came before the feed started):
    read them from the database. ``end``: the Run is over and every event before that
    was delivered: send this last message and stop.
    """

    messages: list[tuple[int, str]]
    gap: bool = False
    floor: int = 0
    end: str | None = None


class RunFeed:
    def __init__(
        self,
        run_id: int,
        source: EventSource,
        encode: Callable[[Any], str],
        end_message: Callable[[int, str], str],
        error_message: Callable[[str, str], str],
        *,
        poll: float,
        window: int = WINDOW,
    ) -> None:
        self.run_id = run_id
        self._source = source
        self._encode = encode
        self._end_message = end_message
        self._error_message = error_message
        self._poll = poll
        self._changed = threading.Condition()
        self._stopped = threading.Event()
        self._messages: deque[tuple[int, str]] = deque(maxlen=window)
        self._seqs: deque[int] = deque(maxlen=window)
        self._floor = 0  # the window holds every event after this one, up to the cursor
        self._cursor = 0
        self._end: str | None = None
        self._failed = False
        self._thread = threading.Thread(target=self._run, name=f"run-feed-{run_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def failed(self) -> bool:
        """Ended by an error, not by its Run: the next stream starts a new feed."""
        return self._failed

    def wait(self, after_seq: int, timeout: float) -> Update:
        """What follows ``after_seq``, waiting up to ``timeout`` for something to."""
        with self._changed:
            self._changed.wait_for(lambda: self._has_news(after_seq), timeout)
            return self._update(after_seq)

    def _has_news(self, after_seq: int) -> bool:
        return after_seq < self._floor or self._cursor > after_seq or self._end is not None

    def _update(self, after_seq: int) -> Update:
        if after_seq < self._floor:
            return Update([], gap=True, floor=self._floor)
        start = bisect.bisect_right(self._seqs, after_seq)
        messages = [self._messages[i] for i in range(start, len(self._messages))]
        return Update(messages, end=self._end if not messages else None)

    def begin(self) -> None:
        """Start at the Run's latest event: streams behind it read their gap themselves."""
        last = self._source.last_seq(self.run_id)
        with self._changed:
            self._floor = self._cursor = last
            self._changed.notify_all()

    def step(self) -> bool:
        """One read of the Run's status and new events; True once the feed has ended."""
        # The status first: events a terminal Run wrote are committed before it ended.
        status = self._source.status(self.run_id)
        self._read_new_events()
        if status is None:
            self._finish(
                self._error_message(RecordNotFound.code, f"run {self.run_id} does not exist")
            )
        elif not RunStatus(status).is_active:
            self._finish(self._end_message(self.run_id, status))
        return self._end is not None

    def _run(self) -> None:
        try:
            self.begin()
            while not self._stopped.is_set() and not self.step():
                self._stopped.wait(self._poll)
        except ReposyncError as exc:
            self._finish(self._error_message(exc.code, exc.message), failed=True)
        except Exception:  # the streams must end, not hang: they reconnect to a new feed
            log.exception("the event feed of run %s failed", self.run_id)
            self._finish(
                self._error_message("internal_error", "the event feed failed"), failed=True
            )

    def _read_new_events(self) -> None:
        while True:
            events = self._source.events_after(self.run_id, self._cursor)
            if not events:
                return
            encoded = [(event.seq, self._encode(event)) for event in events]
            with self._changed:
                for seq, message in encoded:
                    if len(self._messages) == self._messages.maxlen:
                        self._floor = self._seqs[0]
                    self._messages.append((seq, message))
                    self._seqs.append(seq)
                self._cursor = encoded[-1][0]
                self._changed.notify_all()

    def _finish(self, message: str, *, failed: bool = False) -> None:
        with self._changed:
            self._end = message
            self._failed = failed
            self._changed.notify_all()


class RunFeeds:
    """The feeds of one API process, by Run, shared by every stream of that Run."""

    def __init__(self, make_feed: Callable[[int], RunFeed]) -> None:
        self._make_feed = make_feed
        self._lock = threading.Lock()
        self._feeds: dict[int, tuple[RunFeed, int]] = {}

    @property
    def active(self) -> int:
        with self._lock:
            return len(self._feeds)

    @contextmanager
    def subscribed(self, run_id: int) -> Iterator[RunFeed]:
        feed = self._subscribe(run_id)
        try:
            yield feed
        finally:
            self._unsubscribe(feed)

    def _subscribe(self, run_id: int) -> RunFeed:
        with self._lock:
            feed, holders = self._feeds.get(run_id, (None, 0))
            if feed is None or feed.failed:
                feed, holders = self._make_feed(run_id), 0
                feed.start()
            self._feeds[run_id] = (feed, holders + 1)
            return feed

    def _unsubscribe(self, feed: RunFeed) -> None:
        with self._lock:
            current, holders = self._feeds.get(feed.run_id, (None, 0))
            if current is not feed:
                return
            if holders > 1:
                self._feeds[feed.run_id] = (feed, holders - 1)
                return
            del self._feeds[feed.run_id]
        feed.stop()
