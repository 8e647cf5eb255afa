"""Wrong admin keys are slowed down per client address: a token bucket of ``POLYGLOT_ADMIN_KEY_TRIES`` tries that
refills one try every ``POLYGLOT_ADMIN_KEY_RETRY_SECONDS``. A client whose bucket is empty is answered 429 with
``Retry-After`` before its key is even compared (else a right guess among the refused ones would still show), and
each wrong key takes a try. 200 wrong keys once took 1.8 s; now the sixth answer in a row is a 429.

The address is the connection's peer: behind a reverse proxy, all clients share the proxy's (they are slowed
down together, which errs on the safe side). At most ``MAX_CLIENTS`` addresses are remembered; the ones not seen
for longest are forgotten first.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict

MAX_CLIENTS = 10_000


class FailedKeys:
    def __init__(self, tries: int, refill_seconds: float) -> None:
        self.tries = tries
        self.refill_seconds = refill_seconds
        self._clock = time.monotonic
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # client → (tokens, when)
        self._lock = threading.Lock()

    def _tokens(self, client: str, now: float) -> float:
        tokens, when = self._buckets.get(client, (float(self.tries), now))
        return min(float(self.tries), tokens + (now - when) / self.refill_seconds)

    def retry_after(self, client: str) -> int | None:
        """Seconds ``client`` must wait before its next try (None: it may try now)."""
        now = self._clock()
        with self._lock:
            if client not in self._buckets:
                return None
            tokens = self._tokens(client, now)
        return None if tokens >= 1 else max(1, math.ceil((1 - tokens) * self.refill_seconds))

    def failed(self, client: str) -> None:
        """``client`` sent a wrong key: one try less."""
        now = self._clock()
        with self._lock:
            tokens = self._tokens(client, now)
            self._buckets[client] = (max(0.0, tokens - 1), now)
            self._buckets.move_to_end(client)
            while len(self._buckets) > MAX_CLIENTS:
                self._buckets.popitem(last=False)
