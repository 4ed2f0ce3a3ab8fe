"""The session's result cache: a result is reused only for inputs that cannot have changed
under it. A dependency changed on disk while the check ran (before any notification) must
not be hashed in its new content beside a result of the old one."""

from __future__ import annotations

import asyncio
import os

from fake_engine import FakeEngine
from session_support import make_session, settle, write

from atenlint.lsp.session import path_uri
from atenlint.lsp.settings import EditorSettings

BASE = "import torch\n\n\ndef gather(x, i):\n    return torch.take(x, i)\n"
BASE_CLEAN = "import torch\n\n\ndef gather(x, i):\n    return x.reshape(-1)[i]\n"
MID = (
    "import torch.nn as nn\nfrom base import gather\n\n\nclass Mid(nn.Module):\n"
    "    def forward(self, x, i):\n        return gather(x, i)\n"
)


class RewritingEngine(FakeEngine):
    """Writes `path` with `text` right after its first capture has read the files: another
    tool changed it while the check ran, and no notification came."""

    def __init__(self, path: str, text: str):
        super().__init__()
        self.rewrite: tuple[str, str] | None = (path, text)

    def _capture(self, path, text, overlays, execute):
        result = super()._capture(path, text, overlays, execute)
        if self.rewrite is not None:
            write(*self.rewrite)
            self.rewrite = None
        return result


def _base_findings(callbacks, root: str) -> list[str]:
    return sorted(f.code for f in callbacks.published.get(path_uri(os.path.join(root, "base.py")), []))


def test_a_dependency_rewritten_during_the_check_is_not_cached_with_the_old_result(tmp_path):
    root = str(tmp_path)
    base, mid = os.path.join(root, "base.py"), os.path.join(root, "mid.py")
    write(base, BASE)
    write(mid, MID)
    engine = RewritingEngine(base, BASE_CLEAN)

    async def scenario():
        session, callbacks = make_session(engine, EditorSettings(trigger="onSave"), [root])
        uri = path_uri(mid)
        session.open(uri, mid, 1, MID)
        await settle(session)
        assert _base_findings(callbacks, root) == ["MPS001"]  # what the check read: the old base
        captures = engine.captures
        session.save(uri, MID)  # the same text again: a cache hit would keep the old base's finding
        await settle(session)
        assert engine.captures == captures + 1
        assert _base_findings(callbacks, root) == []
        ten_seconds_ago = os.stat(base).st_mtime - 10
        os.utime(base, (ten_seconds_ago, ten_seconds_ago))  # written long before the next check
        session.save(uri, MID)
        await settle(session)
        session.save(uri, MID)  # nothing changed since that check started: now it is reused
        await settle(session)
        assert engine.captures == captures + 2
        assert _base_findings(callbacks, root) == []
        session.shutdown()

    asyncio.run(scenario())
