"""The README's "Included content" names everything the collection ships: a module, a filter, a role or a playbook
added without a line there fails here."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Set

REPO = Path(__file__).resolve().parent.parent
# Tasks files beside the playbooks, imported by them: nothing to run on its own
NOT_PLAYBOOKS = {"control_node_lock", "role_settings_check"}


def included_content() -> Set[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Included content\n", 1)[1].split("\n## ", 1)[0]
    names = set(re.findall(r"`([a-z_*]+)`", section))
    return names | {n for n in names if n.endswith("_*")}


def named(name: str, content: Set[str]) -> bool:
    return name in content or any(w.endswith("_*") and name.startswith(w[:-1]) for w in content)


def test_every_module_filter_role_and_playbook_is_in_the_readme() -> None:
    content = included_content()
    shipped = {
        "module": {p.stem for p in (REPO / "plugins/modules").glob("*.py")},
        "filter": {p.stem for p in (REPO / "plugins/filter").glob("*.yml")},
        "role": {p.name for p in (REPO / "roles").iterdir() if (p / "tasks").is_dir()},
        "playbook": {p.stem for p in (REPO / "playbooks").glob("*.yml")} - NOT_PLAYBOOKS,
        "callback": {p.stem for p in (REPO / "plugins/callback").glob("*.py")},
    }
    missing = sorted(f"{kind} {name}" for kind, names in shipped.items() for name in names if not named(name, content))
    assert missing == [], "add them to the README's Included content"
    assert all(shipped.values()), "each kind was found where the collection keeps it"


def test_the_readme_stays_short_the_rest_lives_in_docs() -> None:
    """What an operator needs, in order, within 4,000 words; the whole of each subject is in docs/."""
    words = len((REPO / "README.md").read_text().split())
    assert words <= 4000, f"the README has {words} words: move the detail to docs/"
