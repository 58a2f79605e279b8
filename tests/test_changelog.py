"""Changelog fragments lint clean, CHANGELOG.md is what antsibull-changelog generates, versions agree."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tools.stage_collection import stage

REPO = Path(__file__).resolve().parent.parent
TOOL = Path(sys.executable).parent / "antsibull-changelog"


def antsibull(collection: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(TOOL), *args], cwd=collection, capture_output=True, text=True, timeout=300,
                          check=False)


def test_fragments_lint_and_the_changelog_is_generated_from_them(tmp_path: Path) -> None:
    collection = stage(tmp_path)
    lint = antsibull(collection, "lint")
    assert lint.returncode == 0 and lint.stdout.strip() == "", lint.stdout + lint.stderr
    (collection / "CHANGELOG.md").unlink()
    generated = antsibull(collection, "generate")
    assert generated.returncode == 0, generated.stderr
    assert (collection / "CHANGELOG.md").read_text() == (REPO / "CHANGELOG.md").read_text(), \
        "CHANGELOG.md is stale: run antsibull-changelog generate on a staged copy"


def test_galaxy_version_is_the_latest_release() -> None:
    releases = yaml.safe_load((REPO / "changelogs" / "changelog.yaml").read_text())["releases"]
    version = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
    assert version in releases and f"v{version}".replace(".", "\\.") in (REPO / "CHANGELOG.md").read_text()


def test_a_broken_fragment_is_reported(tmp_path: Path) -> None:
    collection = stage(tmp_path)
    (collection / "changelogs" / "fragments" / "bad.yml").write_text("minor_changes: not a list\n")
    lint = antsibull(collection, "lint")
    assert "bad.yml" in lint.stdout + lint.stderr
    shutil.rmtree(collection)
