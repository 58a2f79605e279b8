"""The AWX example (awx/): syntax-checked against the real awx.awx collection, surveys that the role's
argument specs accept, one-at-a-time job templates, valid schedules, and an execution environment
whose build context ansible-builder writes (no AWX server or container engine here)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from dateutil.rrule import rrulestr

REPO = Path(__file__).resolve().parents[2]
AWX = REPO / "awx"
BIN = Path(sys.executable).parent
CONTROLLER = yaml.safe_load((AWX / "controller.yml").read_text())[0]
ROLE_SPEC = yaml.safe_load((REPO / "roles" / "maintenance_cycle" / "meta" / "argument_specs.yml").read_text())
MAIN_OPTIONS: Dict[str, Any] = ROLE_SPEC["argument_specs"]["main"]["options"]


def survey(name: str) -> List[Dict[str, Any]]:
    return json.loads((AWX / "surveys" / name).read_text())["spec"]


def test_the_controller_playbook_passes_syntax_check_with_awx_awx() -> None:
    run = subprocess.run([str(BIN / "ansible-playbook"), "--syntax-check", str(AWX / "controller.yml")],
                         capture_output=True, text=True, timeout=120, check=False,
                         env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    assert run.returncode == 0, run.stdout + run.stderr


def test_job_templates_run_one_at_a_time_with_existing_playbooks_and_surveys() -> None:
    templates = CONTROLLER["vars"]["templates"]
    assert {Path(t["playbook"]).stem for t in templates} == {"cycle", "approve", "collect"}
    task = next(t for t in CONTROLLER["tasks"] if "awx.awx.job_template" in t)
    assert task["awx.awx.job_template"]["allow_simultaneous"] is False
    assert task["awx.awx.job_template"]["survey_enabled"] is True
    for template in templates:
        assert (REPO / template["playbook"]).is_file() and (AWX / "surveys" / template["survey"]).is_file()


def test_schedules_name_templates_and_parse_as_rrules() -> None:
    names = {t["name"] for t in CONTROLLER["vars"]["templates"]}
    intervals = {}
    for schedule in CONTROLLER["vars"]["schedules"]:
        assert schedule["template"] in names
        rule = rrulestr(schedule["rrule"].replace(" RRULE:", "\nRRULE:"))
        first, second = rule[0], rule[1]
        intervals[schedule["template"]] = (second - first).total_seconds()
    assert intervals == {"Azure maintenance cycle": 300, "Azure collect observations": 3600}


@pytest.mark.parametrize("name", ["cycle.json", "approve.json", "collect.json"])
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
    return {k: v for k, v in answers.items() if k in MAIN_OPTIONS}


def validate(answers: Dict[str, Any]) -> List[str]:
    spec = {k: {kk: vv for kk, vv in v.items() if kk not in ("description", "version_added")}
            for k, v in MAIN_OPTIONS.items()}
    return ArgumentSpecValidator(spec).validate(role_options_of(answers)).error_messages


def test_every_survey_answer_the_cycle_survey_allows_passes_the_role_argument_specs() -> None:
    questions = survey("cycle.json")
    assert validate(survey_answers(questions)) == []
    for question in questions:
        if question["variable"] not in MAIN_OPTIONS:
            continue
        spec = MAIN_OPTIONS[question["variable"]]
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
    assert validate({"maintenance_cycle_max_fault_domains_in_maintenance": "two"}) != []


def test_ansible_builder_writes_the_execution_environment_build_context(tmp_path: Path) -> None:
    context = tmp_path / "context"
    run = subprocess.run([str(BIN / "ansible-builder"), "create", "-f", str(AWX / "execution-environment.yml"),
                          "-c", str(context)], capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    (containerfile,) = [p for p in (context / "Containerfile", context / "Dockerfile") if p.is_file()]
    text = containerfile.read_text()
    assert "ansible-core>=2.19,<2.20" in text and "ansible-runner" in text
    requirements = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert any("scheduled_events" in c["name"] for c in requirements["collections"])
    meta = yaml.safe_load((REPO / "meta" / "execution-environment.yml").read_text())
    assert meta["version"] == 1 and (REPO / meta["dependencies"]["python"]).is_file()
