"""A TCP link between a client and a server that can go silent, as a connection does
when a NAT or a firewall on the way forgets it: nothing more reaches either side, and
neither is told (no FIN, no RST). Only a keepalive of the client's own can notice.

``SilentLink(port, silent_after=N)`` listens on a free port of 127.0.0.1 and relays each
connection to ``port``; the first connection whose client has sent more than ``N``
bytes (a push's pack, past the SSH handshake) goes silent: its bytes are no longer read
nor relayed, and its sockets stay open until ``close``. Later connections relay as
before, as a network that healed would.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class SilentLink:
    def __init__(self, port: int, *, silent_after: int) -> None:
        self.target_port = port
        self.silent_after = silent_after
        #: Connections that went silent (one at most).
        self.silenced = 0
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            with self._lock:
                self._sockets += [client, server]
            silent = threading.Event()
            threading.Thread(
                target=self._relay, args=(client, server, silent, True), daemon=True
            ).start()
            threading.Thread(
                target=self._relay, args=(server, client, silent, False), daemon=True
            ).start()

    def _relay(
        self, source: socket.socket, sink: socket.socket, silent: threading.Event, upstream: bool
    ) -> None:
        sent = 0
        with contextlib.suppress(OSError):
            while not silent.is_set():
                data = source.recv(65536)
                if not data:
                    sink.shutdown(socket.SHUT_WR)
                    return
                if upstream and sent + len(data) > self.silent_after:
                    with self._lock:
                        if not self.silenced:
                            self.silenced += 1
                            silent.set()
                if silent.is_set():
                    break  # dropped on the way: from now on nothing is read nor relayed
                sink.sendall(data)
                sent += len(data)
        self._closed.wait()  # a silent link holds its sockets open, as a lost one does

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.close()
