"""A site built once per test module (per xdist worker), from the bundled library, in both link modes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli


def build(out: Path, *extra: str) -> Path:
    result = run_cli("site", "build", str(out), *extra)
    assert result.code == 0, result.err
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Relative links: what `trainmedic site build OUT` writes by default."""
    return build(tmp_path_factory.mktemp("site"))


@pytest.fixture(scope="module")
def site_absolute(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Links under a base URL, as a web server would serve the folder at /docs/."""
    return build(tmp_path_factory.mktemp("site-abs"), "--base-url", "/docs/")
