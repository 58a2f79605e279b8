"""One home per rule: where a rule is spelled out of its home (a YAML choice list, a survey, documentation, another
package), this test ties the spelling to the home, so that changing the home fails here until every copy follows.

The simulator is left independent on purpose (it plays Azure, and must not learn the collection's list), but a
test says where it differs: nowhere, today."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator, List, Tuple

import yaml

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import (
    KNOWN_EVENT_STATUSES,
    KNOWN_EVENT_TYPES,
)
from event_analysis import published
from imds_simulator import wire

REPO = Path(__file__).resolve().parent.parent
TYPES = set(KNOWN_EVENT_TYPES)


def lists_of_event_types(node: Any, where: str) -> Iterator[Tuple[str, List[str]]]:
    """Every list in a YAML or JSON tree that names an event type: each must be all of them."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from lists_of_event_types(value, f"{where}.{key}")
    elif isinstance(node, list):
        if node and all(isinstance(v, str) for v in node) and set(node) & TYPES:
            yield where, node
        for index, value in enumerate(node):
            yield from lists_of_event_types(value, f"{where}[{index}]")


def test_the_role_and_the_awx_surveys_offer_exactly_the_known_event_types() -> None:
    files = [REPO / "roles/maintenance_cycle/meta/argument_specs.yml", REPO / "roles/maintenance_cycle/defaults/main.yml",
             *sorted((REPO / "awx/surveys").glob("*.json"))]
    found = []
    for path in files:
        tree = json.loads(path.read_text()) if path.suffix == ".json" else yaml.safe_load(path.read_text())
        found += [(f"{path.relative_to(REPO)}{where}", spelled) for where, spelled in lists_of_event_types(tree, "")]
    assert len(found) >= 5, "the role's choices and default, and the surveys' choices"
    drifted = [(where, spelled) for where, spelled in found if sorted(spelled) != sorted(TYPES)]
    assert not drifted, f"not {sorted(TYPES)}: {drifted}"


def test_the_info_modules_return_docs_name_the_known_types_and_statuses() -> None:
    docs = (REPO / "plugins/modules/scheduled_events_info.py").read_text()
    for field, known in (("EventType", KNOWN_EVENT_TYPES), ("EventStatus", KNOWN_EVENT_STATUSES)):
        line = re.search(r"C\(%s\) \((.*), or an unknown value\)" % field, docs).group(1)
        assert re.findall(r"V\((\w+)\)", line) == list(known), field


def test_the_analysis_knows_a_published_notice_for_every_known_type() -> None:
    assert set(published.documented_min_notice()) == TYPES


def test_the_simulator_plays_the_same_types_as_the_collection_knows() -> None:
    """Independent on purpose; a type Azure adds would first appear here as a difference to decide on. Decided so
    far: SpotRebalanceRecommendation, which third-party mocks serve and the docs do not list yet, is an advisory
    the simulator can play and the collection does not know (never approved, prepared only when listed)."""
    assert set(wire.EVENT_TYPES) == TYPES
    assert set(wire.ADVISORY_TYPES) == {"SpotRebalanceRecommendation"} and not set(wire.ADVISORY_TYPES) & TYPES


def test_the_roles_policy_is_the_cycles_policy_under_the_same_names_with_the_same_defaults() -> None:
    """DEFAULT_POLICY (cycle/plan.py) is the home: the role passes each setting from the variable of the
    same name (prepare_configured excepted: it is whether prepare tasks are given), defaulting to the same value."""
    from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.plan import DEFAULT_POLICY
    role = REPO / "roles" / "maintenance_cycle"
    passed = yaml.safe_load((role / "vars" / "main.yml").read_text())["maintenance_cycle_policy"]
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    assert set(passed) == set(DEFAULT_POLICY)
    for key, expression in passed.items():
        variable = re.match(r"\{\{ (maintenance_cycle_\w+)", expression).group(1)
        if key == "prepare_configured":
            assert variable == "maintenance_cycle_prepare_tasks"
            continue
        assert variable == f"maintenance_cycle_{key}", f"{key} is passed from {variable}"
        assert defaults[variable] == DEFAULT_POLICY[key], f"{variable} defaults to {defaults[variable]!r}"


def _spelled(value: Any) -> Any:
    """A default as the policy holds it, from a survey's or the README's spelling ('true', '' for [], 'all five')."""
    if isinstance(value, str):
        word = value.strip("`")
        if word in ("true", "false"):
            return word == "true"
        if word in ("", "[]"):
            return []
        if word == "all five":
            return list(KNOWN_EVENT_TYPES)
        if not re.fullmatch(r"-?[0-9.]+", word):
            return word  # a choice, such as fault_domain
        return float(word) if "." in word else int(word)
    return value


def _policy_variables() -> Iterator[Tuple[str, str]]:
    """(policy key, role variable) of every setting a user sets (prepare_configured is whether tasks are given)."""
    from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.plan import DEFAULT_POLICY
    for key in DEFAULT_POLICY:
        if key != "prepare_configured":
            yield key, f"maintenance_cycle_{key}"


def test_the_role_argument_spec_documents_every_policy_setting_with_its_default() -> None:
    from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.plan import DEFAULT_POLICY
    specs = yaml.safe_load((REPO / "roles/maintenance_cycle/meta/argument_specs.yml").read_text())["argument_specs"]
    for entry in ("main", "query"):
        options = specs[entry]["options"]
        for key, variable in _policy_variables():
            assert variable in options, f"{entry} does not document {variable}"
            assert options[variable].get("default") == DEFAULT_POLICY[key], f"{entry}: {variable}'s default"


def test_the_readme_table_and_the_awx_surveys_give_each_policy_setting_its_default() -> None:
    from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.plan import DEFAULT_POLICY
    readme = (REPO / "README.md").read_text()
    rows = dict(re.findall(r"^\| `(maintenance_cycle_\w+)` \| ([^|]+?) \|", readme, re.M))
    surveys = [(path.name, item) for path in sorted((REPO / "awx/surveys").glob("*.json"))
               for item in json.loads(path.read_text())["spec"]]
    for key, variable in _policy_variables():
        assert variable in rows, f"the README's role variables table has no row for {variable}"
        assert _spelled(rows[variable]) == DEFAULT_POLICY[key], f"the README gives {variable} {rows[variable]}"
        for name, item in surveys:
            if item["variable"] == variable:
                assert _spelled(item.get("default")) == DEFAULT_POLICY[key], f"{name} gives {variable} {item}"
    assert any(item["variable"].startswith("maintenance_cycle_") for _name, item in surveys), "the surveys were read"


# Where IMDS's address and api-version may be spelled besides their home (document/imds.py): documentation of a
# default (checked below to say the home's value), the list of supported api-versions, and the managed identity's
# own api-version. Playbooks, roles' tasks, defaults and vars, and every other plugin file leave them unset.
IMDS_DEFAULTS_DOCUMENTED = ("plugins/doc_fragments/imds.py", "roles/maintenance_cycle/meta/argument_specs.yml",
                            "roles/event_relay/meta/argument_specs.yml",
                            "playbooks/examples/inventory/azure_vms.azure_rm.yml")  # a comment naming the default
IMDS_SPELLING = re.compile(r"169\.254\.169\.254|['\"]2020-07-01['\"]")


def imds_copies(root: Path) -> List[str]:
    """The files of the collection's content under `root` that spell IMDS's address or api-version themselves."""
    content = [path for folder, pattern in (("playbooks", "*.yml"), ("roles", "*.yml"), ("roles", "*.j2"),
                                            ("plugins", "*.py"), ("extensions", "*.py"), ("extensions", "*.yml"))
               for path in (root / folder).rglob(pattern)]
    home = root / "plugins/module_utils/document/imds.py"
    return sorted(str(path.relative_to(root)) for path in content
                  if path != home and str(path.relative_to(root)) not in IMDS_DEFAULTS_DOCUMENTED
                  and IMDS_SPELLING.search(path.read_text()))


def test_imds_address_and_api_version_have_one_home() -> None:
    """DEFAULT_URL and DEFAULT_API_VERSION (document/imds.py) are the modules' defaults and the relay's: the
    module_defaults group azure_imds.scheduled_events.imds passes a value only when the inventory sets one. A copy in
    a playbook or a role would keep its old value when the home changes."""
    assert imds_copies(REPO) == []


def test_a_copy_of_the_imds_address_in_a_playbook_is_found(tmp_path: Path) -> None:
    playbook = tmp_path / "playbooks" / "collect.yml"
    playbook.parent.mkdir()
    playbook.write_text("imds_url: \"{{ maintenance_cycle_imds_url | default('http://169.254.169.254') }}\"\n")
    (tmp_path / "roles" / "r" / "defaults").mkdir(parents=True)
    (tmp_path / "roles" / "r" / "defaults" / "main.yml").write_text('api_version: "2020-07-01"\n')
    assert imds_copies(tmp_path) == ["playbooks/collect.yml", "roles/r/defaults/main.yml"]


def test_the_documented_imds_defaults_are_the_homes() -> None:
    from ansible_collections.azure_imds.scheduled_events.plugins.doc_fragments.imds import ModuleDocFragment
    from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.imds import (
        DEFAULT_API_VERSION,
        DEFAULT_URL,
    )
    fragment = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    assert (fragment["imds_url"]["default"], fragment["api_version"]["default"]) == (DEFAULT_URL, DEFAULT_API_VERSION)
    for role, prefix in (("maintenance_cycle", "maintenance_cycle"), ("event_relay", "event_relay")):
        specs = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
        for entry, spec in specs.items():
            options = spec["options"]
            if f"{prefix}_imds_url" in options:
                assert options[f"{prefix}_imds_url"]["default"] == DEFAULT_URL, f"{role} {entry}"
                assert options[f"{prefix}_api_version"]["default"] == DEFAULT_API_VERSION, f"{role} {entry}"
