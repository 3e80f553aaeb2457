"""Stopping a test's listening socket so that its accept thread ends with it.

Closing a socket another thread is blocked in `accept()` on does not wake that thread on
Linux: it stays in the call, and when it loops it calls `accept()` again on the same file
descriptor number, which by then may belong to another test's server (a `ChatStub`), whose
connections it then takes: that server's `serve_forever` blocks in `accept()` and its
`shutdown()` never returns (seen once as a hung xdist worker). `shutdown(SHUT_RDWR)` first
makes the blocked `accept()` fail at once; the thread is then joined.
"""

from __future__ import annotations

import contextlib
import socket
import threading


def stop_listening(sock: socket.socket, thread: threading.Thread | None = None) -> None:
    """Wake the thread accepting on `sock`, close `sock`, and wait for the thread to end."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
    if thread is not None:
        thread.join(timeout=10)
        assert not thread.is_alive(), "the accept thread did not end"
