"""A StatsD server on a loopback UDP port that sums the counters it receives (for metrics tests)."""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter


class StatsdListener(threading.Thread):
    def __init__(self) -> None:
        super().__init__(name="statsd", daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port: int = self.sock.getsockname()[1]
        self.counters: Counter[str] = Counter()
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                payload = self.sock.recv(65536).decode(errors="replace")
            except TimeoutError:
                continue
            for line in payload.splitlines():
                name, _, rest = line.partition(":")
                value, _, kind = rest.partition("|")
                if kind.startswith("c"):
                    self.counters[name] += int(float(value))

    def stop(self, linger: float = 0.5) -> Counter[str]:
        time.sleep(linger)  # the last datagrams
        self.stopping.set()
        self.join(5)
        self.sock.close()
        return self.counters
