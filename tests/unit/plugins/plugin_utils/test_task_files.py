"""Where the role finds the user's prepare and recover tasks files: a rule without a file system."""
from __future__ import annotations

from typing import Set

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.task_files import (
    Places,
    resolve_task_files,
)

COLLECTION = "/usr/share/ansible/collections/ansible_collections/azure_imds/scheduled_events"
CRON_DIR = "/etc/maintenance"


def files(*paths: str):
    present: Set[str] = set(paths)
    return present.__contains__


def places(playbook_dir: str = COLLECTION + "/playbooks") -> Places:
    return Places(cwd=CRON_DIR, playbook_dir=playbook_dir, collection_root=COLLECTION)


def test_no_tasks_is_no_error() -> None:
    found = resolve_task_files("", "  ", places(), files())
    assert (found.prepare, found.recover, found.errors) == ("", "", [])


def test_a_relative_path_is_taken_from_where_ansible_playbook_runs() -> None:
    found = resolve_task_files("drain.yml", "tasks/../undrain.yml", places(),
                               files(CRON_DIR + "/drain.yml", CRON_DIR + "/undrain.yml"))
    assert (found.prepare, found.recover, found.errors) == (CRON_DIR + "/drain.yml", CRON_DIR + "/undrain.yml", [])


def test_the_collections_own_files_are_never_taken_for_the_users() -> None:
    """The regression: include_tasks would find a relative path among the installed collection's own files."""
    example = "examples/marker_file/prepare.yml"
    found = resolve_task_files(example, "", places(), files(COLLECTION + "/playbooks/" + example))
    assert found.prepare == ""
    (error,) = found.errors
    assert error.startswith(f"maintenance_cycle_prepare_tasks {example} is not a file in {CRON_DIR};")
    assert "never from this collection's own files" in error and "Traceback" not in error


def test_the_users_own_playbook_directory_comes_second() -> None:
    project = "/srv/maintenance-project"
    both = files(CRON_DIR + "/drain.yml", project + "/drain.yml")
    assert resolve_task_files("drain.yml", "", places(project), both).prepare == CRON_DIR + "/drain.yml"
    assert resolve_task_files("drain.yml", "", places(project), files(project + "/drain.yml")).prepare \
        == project + "/drain.yml"
    (error,) = resolve_task_files("drain.yml", "", places(project), files()).errors
    assert f"is not a file in {CRON_DIR} nor in {project};" in error


def test_an_absolute_path_must_be_a_file() -> None:
    found = resolve_task_files("/opt/m/drain.yml", "/opt/m/gone.yml", places(), files("/opt/m/drain.yml"))
    assert found.prepare == "/opt/m/drain.yml" and found.recover == ""
    assert found.errors == ["maintenance_cycle_recover_tasks /opt/m/gone.yml is not a file on the control node."]


@pytest.mark.parametrize("playbook_dir", [COLLECTION, COLLECTION + "/playbooks/examples"])
def test_no_folder_of_the_collection_is_searched(playbook_dir: str) -> None:
    found = resolve_task_files("drain.yml", "", places(playbook_dir), files(playbook_dir + "/drain.yml"))
    assert found.prepare == "" and len(found.errors) == 1


def test_a_sibling_folder_whose_name_starts_like_the_collection_is_not_inside_it() -> None:
    sibling = COLLECTION + "_site"
    assert resolve_task_files("drain.yml", "", places(sibling), files(sibling + "/drain.yml")).prepare \
        == sibling + "/drain.yml"
