"""A small thread-safe LRU of query key → vector: popular queries skip the text encoders."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np


class QueryCache:
    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> np.ndarray | None:
        with self._lock:
            vector = self._items.get(key)
            if vector is not None:
                self._items.move_to_end(key)
            return vector

    def put(self, key: str, vector: np.ndarray) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._items[key] = vector
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)
