"""The AWX material (awx/): controller.yml syntax-checked against the real awx.awx collection and run up to its
first call to a controller (its checks of the variables, the surveys it sends), surveys that the role's argument
specs accept, one-at-a-time job templates that run the skeleton project's playbooks, valid schedules whose cycle
can be turned off, and an execution environment whose build context ansible-builder writes
(no AWX server or container engine here)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.template import Templar, trust_as_template
from dateutil.rrule import rrulestr


REPO = Path(__file__).resolve().parents[2]
AWX = REPO / "awx"
SKELETON = AWX / "project"
BIN = Path(sys.executable).parent
CONTROLLER = yaml.safe_load((AWX / "controller.yml").read_text())[0]
TEMPLATES = {t["name"]: t for t in CONTROLLER["vars"]["templates"]}
ROLE_SPEC = yaml.safe_load((REPO / "roles" / "maintenance_cycle" / "meta" / "argument_specs.yml").read_text())
MAIN_OPTIONS: Dict[str, Any] = ROLE_SPEC["argument_specs"]["main"]["options"]
# Survey variables the playbooks map onto role options.
PLAYBOOK_TO_ROLE = {"prepare_tasks": "maintenance_cycle_prepare_tasks", "recover_tasks": "maintenance_cycle_recover_tasks"}
SURVEYS = ["cycle.json", "approve.json", "collect.json"]


def survey(name: str) -> List[Dict[str, Any]]:
    return json.loads((AWX / "surveys" / name).read_text())["spec"]


def render(expression: Any, **variables: Any) -> Any:
    """A value of controller.yml's vars, templated as Ansible does, with the given extra vars."""
    given = {k: trust_as_template(v) if isinstance(v, str) else v for k, v in CONTROLLER["vars"].items()}
    templar = Templar(loader=None, variables=dict(given, **variables))
    return templar.template(trust_as_template(expression) if isinstance(expression, str) else expression)


def test_the_controller_playbook_passes_syntax_check_with_awx_awx() -> None:
    run = subprocess.run([str(BIN / "ansible-playbook"), "--syntax-check", str(AWX / "controller.yml")],
                         capture_output=True, text=True, timeout=120, check=False,
                         env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    assert run.returncode == 0, run.stdout + run.stderr


def test_job_templates_run_the_skeleton_projects_playbooks_one_at_a_time() -> None:
    assert {Path(t["playbook"]).stem for t in TEMPLATES.values()} == {"cycle", "approve", "collect"}
    task = next(t for t in CONTROLLER["tasks"] if "awx.awx.job_template" in t)
    assert task["awx.awx.job_template"]["allow_simultaneous"] is False
    assert task["awx.awx.job_template"]["survey_enabled"] is True
    for template in TEMPLATES.values():
        assert (AWX / "surveys" / template["survey"]).is_file()
        # the project's playbook only imports the collection's playbook of the same name
        (play,) = yaml.safe_load((SKELETON / template["playbook"]).read_text())
        name = Path(template["playbook"]).stem
        assert play["ansible.builtin.import_playbook"] == f"azure_imds.scheduled_events.{name}"
        assert (REPO / "playbooks" / f"{name}.yml").is_file()
    source = next(t for t in CONTROLLER["tasks"] if "awx.awx.inventory_source" in t)["awx.awx.inventory_source"]
    assert (SKELETON / source["source_path"]).is_file()


def test_the_eda_controller_rulebook_launches_the_cycle_template_with_what_it_asks_for_on_launch() -> None:
    (ruleset,) = yaml.safe_load((REPO / "extensions" / "eda" / "rulebooks" / "scheduled_events_controller.yml").read_text())
    launch = ruleset["rules"][0]["action"]["run_job_template"]
    template = TEMPLATES[launch["name"]]
    task = next(t for t in CONTROLLER["tasks"] if "awx.awx.job_template" in t)["awx.awx.job_template"]
    asks = {name: render(task[f"ask_{name}_on_launch"], item=template) for name in ("limit", "variables")}
    assert asks == {"limit": True, "variables": True}, "AWX drops a launch's limit and extra_vars unless asked for"
    assert set(launch["job_args"]) == {"limit", "extra_vars"}
    others = [render(task["ask_limit_on_launch"], item=t) for n, t in TEMPLATES.items() if n != launch["name"]]
    assert others and not any(others), "the other templates keep their surveys as the only input"


def test_the_skeleton_installs_what_the_execution_environment_has() -> None:
    assert (SKELETON / "collections" / "requirements.yml").read_bytes() == \
        (REPO / "collections" / "requirements.yml").read_bytes()
    names = [c["name"] for c in yaml.safe_load((REPO / "collections" / "requirements.yml").read_text())["collections"]]
    assert names == ["azure_imds.scheduled_events", "ansible.windows", "azure.azcollection"]
    for name in ("prepare", "recover"):
        tasks = yaml.safe_load((SKELETON / "maintenance" / f"{name}.yml").read_text())
        assert isinstance(tasks, list) and all("hosts" not in t for t in tasks)  # a tasks file, not a playbook


def test_no_placeholder_host_is_left() -> None:
    placeholder = re.compile(r"example\.(invalid|com|org|net)|registry\.example", re.I)
    paths = [*AWX.rglob("*"), *(REPO / "collections").rglob("*"), *(REPO / "playbooks" / "examples").rglob("*")]
    found = [str(p) for p in paths if p.is_file() and placeholder.search(p.read_text())]
    assert found == []


def test_schedules_name_templates_and_parse_as_rrules() -> None:
    intervals = {}
    for schedule in CONTROLLER["vars"]["schedules"]:
        assert schedule["template"] in TEMPLATES
        rule = rrulestr(schedule["rrule"].replace(" RRULE:", "\nRRULE:"))
        first, second = rule[0], rule[1]
        intervals[schedule["template"]] = (second - first).total_seconds()
    assert intervals == {"Azure maintenance cycle": 300, "Azure collect observations": 3600}


@pytest.mark.parametrize("choice, enabled", [
    (None, {"Azure maintenance cycle"}), ("cycle", {"Azure maintenance cycle"}), ("none", set())])
def test_the_cycle_schedule_is_on_unless_none_is_chosen(choice: Any, enabled: set) -> None:
    given = {} if choice is None else {"maintenance_schedule": choice}
    on = {s["template"] for s in CONTROLLER["vars"]["schedules"] if render(s["enabled"], **given) is True}
    assert on - {"Azure collect observations"} == enabled


@pytest.mark.parametrize("name", SURVEYS)
def test_survey_questions_are_scalars_or_choices_and_name_used_variables(name: str) -> None:
    playbook = (REPO / "playbooks" / name.replace(".json", ".yml")).read_text()
    for question in survey(name):
        assert question["type"] in ("text", "integer", "float", "multiplechoice", "multiselect")
        assert question["variable"] in MAIN_OPTIONS or question["variable"] in playbook, question["variable"]


def survey_answers(questions: List[Dict[str, Any]]) -> Dict[str, Any]:
    """What AWX passes as extra vars for the default answers (multiselect: a list)."""
    answers = {}
    for question in questions:
        default = question["default"]
        answers[question["variable"]] = [v for v in default.split("\n") if v] if question["type"] == "multiselect" \
            else default
    return answers


def role_options_of(answers: Dict[str, Any]) -> Dict[str, Any]:
    options = {PLAYBOOK_TO_ROLE.get(k, k): v for k, v in answers.items()}
    return {k: v for k, v in options.items() if k in MAIN_OPTIONS}


def validate(answers: Dict[str, Any]) -> List[str]:
    spec = {k: {kk: vv for kk, vv in v.items() if kk not in ("description", "version_added")}
            for k, v in MAIN_OPTIONS.items()}
    return ArgumentSpecValidator(spec).validate(role_options_of(answers)).error_messages


@pytest.mark.parametrize("name", ["cycle.json"])
def test_every_survey_answer_the_policy_surveys_allow_passes_the_role_argument_specs(name: str) -> None:
    questions = survey(name)
    assert validate(survey_answers(questions)) == []
    for question in questions:
        option = PLAYBOOK_TO_ROLE.get(question["variable"], question["variable"])
        if option not in MAIN_OPTIONS:
            continue
        spec = MAIN_OPTIONS[option]
        if question["type"] == "multiplechoice":
            for choice in question["choices"]:
                assert validate({question["variable"]: choice}) == [], (question["variable"], choice)
        if question["type"] == "multiselect":
            assert set(question["choices"]) <= set(spec["choices"])
            assert validate({question["variable"]: question["choices"]}) == []
        if question["type"] == "integer":
            assert spec["type"] == "int"
            for value in (question["min"], question["max"]):
                assert validate({question["variable"]: value}) == []
        if question["type"] == "text":
            assert spec["type"] == "str"
            assert validate({question["variable"]: "maintenance/prepare.yml"}) == []
    assert validate({"maintenance_cycle_max_fault_domains_in_maintenance": "two"}) != []
    variables = {q["variable"] for q in questions}
    assert {"prepare_tasks", "recover_tasks"} <= variables  # the schedules run your task files


def test_the_freeze_threshold_can_say_never() -> None:
    (freeze,) = [q for q in survey("cycle.json") if q["variable"] == "maintenance_cycle_approve_freeze_max_seconds"]
    assert freeze["min"] == -1 and "-1" in freeze["question_name"]
    assert "V(-1) never" in MAIN_OPTIONS["maintenance_cycle_approve_freeze_max_seconds"]["description"]


def test_the_task_file_questions_are_relative_to_the_project_and_empty_by_default() -> None:
    for name in ("cycle.json",):
        for question in survey(name):
            if question["variable"] in PLAYBOOK_TO_ROLE:
                assert question["default"] == "" and question["required"] is False
                assert "relative to the project root" in question["question_name"]
                assert question["question_description"]


# ------------------------------------------------------------ controller.yml, run up to its first controller call

def run_controller(*extra: str, controller: str = "http://127.0.0.1:9") -> Dict[str, Any]:
    """controller.yml with these -e arguments, against a controller that refuses connections: its checks and the
    surveys it computes run for real; the first awx.awx task fails to connect. `controller` '': none named."""
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               CONTROLLER_HOST=controller, CONTROLLER_OAUTH_TOKEN="not-used")
    env.pop("CONTROLLER_USERNAME", None)
    env.pop("TOWER_HOST", None)
    run = subprocess.run([str(BIN / "ansible-playbook"), str(AWX / "controller.yml"), *extra], capture_output=True,
                         text=True, timeout=120, check=False, env=env)
    assert run.returncode != 0
    tasks = json.loads(run.stdout[run.stdout.index("{"):])["plays"][0]["tasks"]
    return {t["task"]["name"]: t["hosts"]["localhost"] for t in tasks}


GIVEN = ["-e", "project_url=https://git.internal/ops/azure-maintenance.git", "-e", "ee_image=quay.io/ops/azure-imds-ee:1",
         "-e", "azure_credential=Azure RM", "-e", json.dumps({"machine_credentials": ["Azure VMs SSH"]})]


def test_a_missing_required_variable_stops_controller_yml_in_one_sentence_naming_it() -> None:
    results = run_controller("-e", "ee_image=quay.io/ops/azure-imds-ee:1")
    (check,) = [r for name, r in results.items() if name.startswith("Check that every required variable")]
    failed = {r["item"]["key"]: r["msg"] for r in check["results"] if r.get("failed")}
    assert set(failed) == {"project_url", "azure_credential", "machine_credentials"}
    for variable, message in failed.items():
        assert message.startswith(f"{variable} is required: give ") and message.count(". ") == 0, message
    assert not any(name.startswith(("Execution environment", "Your project")) for name in results)


def test_controller_yml_sends_surveys_whose_default_answers_are_your_task_files() -> None:
    results = run_controller(*GIVEN, "-e", "prepare_tasks=maintenance/prepare.yml",
                             "-e", "recover_tasks=maintenance/recover.yml")
    assert results["Execution environment with the collection (built from awx/execution-environment.yml)"]["failed"]
    (surveys,) = [r for name, r in results.items() if name.startswith("Surveys, with your prepare")]
    sent = surveys["results"][-1]["ansible_facts"]["controller_surveys"]
    assert set(sent) == set(SURVEYS)
    for name in SURVEYS:
        expected = survey(name)
        for question in expected:
            if question["variable"] in PLAYBOOK_TO_ROLE:
                question["default"] = f"maintenance/{question['variable'].split('_')[0]}.yml"
        assert sent[name]["spec"] == expected, name
        assert validate(survey_answers(sent[name]["spec"])) == []


def test_without_a_controller_it_is_a_dry_run_that_stops_in_one_sentence() -> None:
    """No CONTROLLER_HOST: awx.awx would try https://127.0.0.1 and fail with "unknown error"; the playbook checks
    its variables and surveys, then says what is missing and what to export, before any awx.awx task."""
    results = run_controller(*GIVEN, controller="")
    (stop,) = [r for name, r in results.items() if name.startswith("Stop here when no controller is named")]
    assert stop["failed"] and stop["msg"].startswith("no controller to configure: CONTROLLER_HOST is not set")
    assert "export CONTROLLER_HOST=" in stop["msg"] and stop["msg"].count(". ") == 0
    assert any(name.startswith("Surveys, with your prepare") for name in results), "the surveys were checked"
    assert not any(name.startswith("Execution environment") for name in results)


def test_ansible_builder_writes_the_execution_environment_build_context(tmp_path: Path) -> None:
    context = tmp_path / "context"
    run = subprocess.run([str(BIN / "ansible-builder"), "create", "-f", str(AWX / "execution-environment.yml"),
                          "-c", str(context)], capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    (containerfile,) = [p for p in (context / "Containerfile", context / "Dockerfile") if p.is_file()]
    text = containerfile.read_text()
    assert "ansible-core>=2.19,<2.20" in text and "ansible-runner" in text
    # the installed collections' Python requirements (azure.azcollection's Azure SDK) are read in the build
    assert "introspect.py introspect" in text
    requirements = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert [c["name"] for c in requirements["collections"]] == \
        ["azure_imds.scheduled_events", "ansible.windows", "azure.azcollection"]
    meta = yaml.safe_load((REPO / "meta" / "execution-environment.yml").read_text())
    assert meta["version"] == 1 and (REPO / meta["dependencies"]["python"]).is_file()


def test_regression_each_rulebook_tells_its_cycles_how_many_may_run_side_by_side() -> None:
    """Cycles side by side are kept apart only by the VM locks, so a cycle refuses hosts that take none once more than
    one may run (maintenance_cycle_parallel_runs). The AWX rulebook launched jobs side by side (the template's
    allow_simultaneous) without saying so, and the refusal was off there: each rulebook passes the source's own
    max_parallel_runs."""
    for name in ("scheduled_events.yml", "scheduled_events_controller.yml"):
        (ruleset,) = yaml.safe_load((REPO / "extensions" / "eda" / "rulebooks" / name).read_text())
        (source,) = ruleset["sources"]
        launched = ruleset["rules"][0].get("actions", [ruleset["rules"][0].get("action")])[0]
        extra = next(iter(launched.values()))
        extra = extra.get("job_args", extra)["extra_vars"]
        assert extra["maintenance_cycle_parallel_runs"] == source["azure_imds.scheduled_events.scheduled_events"][
            "max_parallel_runs"], name
