import torch.nn as nn

import not_a_real_package_atenlint  # noqa: F401


class NeedsPackage(nn.Module):
    def forward(self, x):
        return x
