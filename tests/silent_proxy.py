"""A TCP proxy process that can go silent: ``python tests/silent_proxy.py UPSTREAM_HOST UPSTREAM_PORT`` prints the
port it listens on, then forwards every connection. ``SIGUSR1``: silent — nothing is forwarded any more in either
direction and new connections are accepted but never answered, as when a firewall or a dead link drops the
packets (the client is not refused: its kernel, and this one, still acknowledge). ``SIGUSR2``: forwarding again.
``SIGTERM``: every connection closed, exit."""

from __future__ import annotations

import contextlib
import signal
import socket
import sys
import threading

silent = threading.Event()


def pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            if not silent.is_set():  # silent: read and drop, like a link that loses every packet
                target.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, target):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def drain(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while sock.recv(65536):
            pass


def main() -> None:
    upstream = (sys.argv[1], int(sys.argv[2]))
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    signal.signal(signal.SIGUSR1, lambda *_: silent.set())
    signal.signal(signal.SIGUSR2, lambda *_: silent.clear())
    print(listener.getsockname()[1], flush=True)
    held: list[socket.socket] = []  # connections accepted while silent: kept open, never answered
    while True:
        client, _ = listener.accept()
        if silent.is_set():
            held.append(client)
            threading.Thread(target=drain, args=(client,), daemon=True).start()
            continue
        server = socket.create_connection(upstream, timeout=5)
        server.settimeout(None)
        for a, b in ((client, server), (server, client)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()


if __name__ == "__main__":
    main()
