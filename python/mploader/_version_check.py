"""The compiled module is built against one torch's C++ API, which changes between releases."""
import os

import torch


def built_with_torch():
    """torch.__version__ of the torch mploader._C was built for (from the file beside it)."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "_built_with_torch.txt"), encoding="utf-8") as f:
        return f.read().strip()


def check_torch_version():
    built = built_with_torch()
    if built != torch.__version__:
        raise ImportError(
            f"mploader: this mploader was built for torch {built}, and torch "
            f"{torch.__version__} is installed: its compiled module would not load, or would "
            f"misbehave. Build it again for this torch: pip install --force-reinstall "
            f"--no-deps <mploader's source folder>.")
