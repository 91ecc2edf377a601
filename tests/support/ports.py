"""Free TCP ports on 127.0.0.1 for the servers a test starts."""

from __future__ import annotations

import socket
import threading

_handed_out: set[int] = set()
_lock = threading.Lock()


def free_port() -> int:
    """A port nothing listens on now, never one this process has handed out before.

    A port bound and closed at once goes back to the kernel, which may give it again to the next
    ``bind(0)``: two ports taken one after another for one stack can then be the same, and the
    second server fails with "address already in use". So each port handed out is remembered, and
    one seen before is held while the next is taken, so the kernel cannot offer it again.
    """
    held: list[socket.socket] = []
    with _lock:
        try:
            while True:
                sock = socket.socket()
                held.append(sock)
                sock.bind(("127.0.0.1", 0))
                port = int(sock.getsockname()[1])
                if port not in _handed_out:
                    _handed_out.add(port)
                    return port
        finally:
            for sock in held:
                sock.close()
