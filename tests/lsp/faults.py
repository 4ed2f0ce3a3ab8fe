"""Modules that break the analysis worker in each way a user's file can (an endless loop,
os._exit, a C++ abort, a memory blow-up), with the one diagnostic each must give. Shared by
tests/lsp/test_faults_and_trust.py and benchmarks/bench_faults.py."""

from __future__ import annotations

# fault -> (the one diagnostic it must give, its module). A fault that must not be mistaken
# for another blocks forever (an Event nobody sets) instead of sleeping: only the check
# under test can end it, however slow the machine.
FAULTS = {
    "loops": ("ATL005", "import torch.nn as nn\nwhile True:\n    pass\n"),
    "exits": ("ATL006", "import os\nimport torch.nn as nn\nos._exit(3)\n"),
    "aborts": (
        "ATL006",
        (
            "import torch\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n"
            "with FakeTensorMode():\n"
            "    weight = torch.nn.Parameter(torch.empty(2, 3, device='mps'))\n"
            "    (weight * 2).sum().backward()\n"
        ),
    ),
    "hogs_memory": ("ATL006", "import threading\nblob = bytearray(4 * 1024 ** 3)\nthreading.Event().wait()\n"),
}
