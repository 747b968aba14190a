"""`trainmedic.diagnosis/v1` JSON: the public contract (DESIGN.md)."""

from __future__ import annotations

import json
from typing import TextIO

from trainmedic.model import Diagnosis


def render(d: Diagnosis, out: TextIO, _color: bool = False) -> None:
    json.dump(d.to_json(), out, indent=2, ensure_ascii=False)
    out.write("\n")
