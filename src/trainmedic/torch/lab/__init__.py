"""trainmedic lab: real PyTorch programs that fail in known ways, and their ground truth.

`cases` is the registry (no torch needed to read it), `runner` runs one case in a bounded
subprocess, `programs/` holds the programs themselves. `trainmedic lab` and
`scripts/capture_lab.py` (the committed test corpus under tests/fixtures/lab) are built on these.
"""

from __future__ import annotations

from trainmedic.torch.lab.cases import CASES, Case, get

__all__ = ["CASES", "Case", "get"]
