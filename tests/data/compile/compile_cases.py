"""Hand-written torch.compile graph breaks, one class per kind (tests/capture/test_dynamo_view.py,
tests/targets/test_compile.py compare atenlint with torch._dynamo.explain on them)."""

import json
import logging
import zlib

import torch

log = logging.getLogger("atenlint_compile_cases")


@torch.compiler.disable
def island(x):
    return x * 3


class Branch(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        if y.sum() > 0:
            y = y + 1
        return y - 1


class Item(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        n = int(y.sum().item())
        return y + n


class ToList(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        values = y.tolist()
        return y + len(values)


class Print(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        print("y", y.shape)
        return y + 1


class Logging(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        log.info("y %s", y.shape)
        return y + 1


class CExtension(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        check = zlib.crc32(b"atenlint")
        return y + check


class ThirdParty(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        text = json.dumps({"n": 1})
        return y + len(text)


class Disabled(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        y = island(y)
        return y + 1


class Helper(torch.nn.Module):
    def show(self, y):
        print(y.shape)
        return y * 2

    def forward(self, x):
        y = x * 2
        y = self.show(y)
        return y + 1


class Clean(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x * 2) + 1
