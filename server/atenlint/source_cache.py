"""Texts, expression locators and outlines of the files findings point into."""

from __future__ import annotations

import os
import threading

from .bounded_read import read_regular_file
from .discover import FileOutline, outline
from .locate import ExpressionLocator
from .sourcetext import DecodeError, SourceText, decode_source


class SourceCache:
    """Texts of files the findings point into (editor buffers first, then disk)."""

    def __init__(self, overlays: dict[str, str] | None = None):
        self.overlays = {os.path.abspath(p): t for p, t in (overlays or {}).items()}
        self._texts: dict[str, SourceText | None] = {}
        self._locators: dict[str, ExpressionLocator] = {}
        self._outlines: dict[str, FileOutline] = {}
        self._lock = threading.Lock()

    def put(self, path: str, source: SourceText) -> None:
        with self._lock:
            self._texts[os.path.abspath(path)] = source

    def get(self, path: str) -> SourceText | None:
        path = os.path.abspath(path)
        with self._lock:
            if path in self._texts:
                return self._texts[path]
        if path in self.overlays:
            source = SourceText(self.overlays[path], path)
        else:
            try:
                source = SourceText(decode_source(read_regular_file(path)), path)
            except (OSError, DecodeError):
                source = None
        with self._lock:
            self._texts[path] = source
        return source

    def locator(self, path: str) -> ExpressionLocator | None:
        path = os.path.abspath(path)
        if path not in self._locators:
            source = self.get(path)
            if source is None:
                return None
            self._locators[path] = ExpressionLocator(source)
        return self._locators[path]

    def outline(self, path: str) -> FileOutline | None:
        path = os.path.abspath(path)
        if path not in self._outlines:
            source = self.get(path)
            if source is None:
                return None
            self._outlines[path] = outline(source)
        return self._outlines[path]
