"""The Galaxy artifact holds Ansible content only, installs, and documents itself."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def test_build_install_and_ansible_doc_from_the_tarball(tmp_path: Path) -> None:
    source = tmp_path / "src"
    # build from a clean export of the work tree (no venv, caches or local scratch)
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".git", ".venv*", "__pycache__", "*_cache",
                                                                 ".hypothesis", "collections", "build"))
    built = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(tmp_path)],
                           cwd=source, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    (tarball,) = tmp_path.glob("azure_imds-scheduled_events-*.tar.gz")
    with tarfile.open(tarball) as archive:
        names = archive.getnames()
    tops = {n.split("/")[0] for n in names}
    assert {"imds_simulator", "event_analysis", "notebooks", "awx", "collections", ".ansible-lint", "tests", "docs",
            "tools", "Makefile", ".ci",
            "requirements-test.txt", "pyproject.toml",
            "pytest.ini", ".gitignore"}.isdisjoint(tops)
    assert {"plugins/modules/scheduled_events_info.py", "plugins/modules/scheduled_events_approve.py",
            "plugins/module_utils/document/events.py", "meta/runtime.yml", "MANIFEST.json", "README.md", "CHANGELOG.md",
            "changelogs/changelog.yaml", "roles/maintenance_cycle/meta/argument_specs.yml",
            "roles/event_relay/meta/argument_specs.yml", "roles/event_relay/templates/relay.service.j2"} <= set(names)
    installed = tmp_path / "installed"
    # An empty collections path: otherwise ansible-galaxy sees the test session's staged copy
    # and skips the install as "already installed".
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_COLLECTIONS_PATH")}
    env["ANSIBLE_COLLECTIONS_PATH"] = str(installed)
    install = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "install", str(tarball), "-p", str(installed)],
                             env=env, capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    assert (installed / "ansible_collections" / "azure_imds" / "scheduled_events" / "MANIFEST.json").is_file()
    for module, expected in (("scheduled_events_info", "imds_url"), ("scheduled_events_approve", "imds_url"),
                             ("scheduled_events_lock", "lease_seconds"), ("controller_lock", "localhost")):
        doc = subprocess.run([str(BIN / "ansible-doc"), f"azure_imds.scheduled_events.{module}"], env=env,
                             capture_output=True, text=True, timeout=120)
        assert doc.returncode == 0 and expected in doc.stdout, doc.stderr
        assert str(installed) in doc.stdout  # documented from the installed tarball, not the staged copy
    for kind, name, expected in (("role", "maintenance_cycle", "maintenance_cycle_imds_url"),
                                 ("role", "event_relay", "event_relay_manage_service"),
                                 ("callback", "scheduled_events_history", "SCHEDULED_EVENTS_HISTORY_PATH"),
                                 ("filter", "cycle_plan", "cycle_plan")):
        doc = subprocess.run([str(BIN / "ansible-doc"), "-t", kind, f"azure_imds.scheduled_events.{name}"], env=env,
                             capture_output=True, text=True, timeout=120)
        assert doc.returncode == 0 and expected in doc.stdout, f"{kind} {name}: {doc.stderr}"
    assert not {n for n in names if n.startswith(("notebooks/", "event_analysis/", "imds_simulator/"))}
