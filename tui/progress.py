"""Coalescing high-rate progress from a worker thread into at most one queued message.

A sweep calls back for every pair; posting a message each time would flood the queue and lag the
screen. :class:`Coalescer` keeps only the latest value and posts a wake-up message only when none
is pending; the handler takes the latest value (which clears the pending flag).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Coalescer(Generic[T]):
    def __init__(self, wake: Callable[[], object]) -> None:
        self._wake = wake
        self._lock = threading.Lock()
        self._latest: T | None = None
        self._pending = False
        self.updates = 0  # callbacks seen
        self.wakes = 0  # messages posted

    def push(self, value: T) -> None:
        """From any thread: remember ``value``; wake the UI unless a wake-up is already queued."""
        with self._lock:
            self._latest = value
            self.updates += 1
            if self._pending:
                return
            self._pending = True
            self.wakes += 1
        self._wake()

    def take(self) -> T | None:
        """On the UI thread: the newest value; the next push wakes the UI again."""
        with self._lock:
            self._pending = False
            return self._latest
