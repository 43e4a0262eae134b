"""extensions/awx: the AWX objects are valid input for the awx.awx modules, the surveys are what AWX accepts, and the
job templates select playbook files that exist in the project layout."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import ansible.template
import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from dateutil.rrule import rrulestr

REPO = Path(__file__).resolve().parents[2]
AWX = REPO / "extensions" / "awx"
PROJECT = AWX / "project"
DATA = yaml.safe_load((AWX / "controller" / "capa.yml").read_text())
APPLY = yaml.safe_load((AWX / "controller" / "apply.yml").read_text())
GALAXY = yaml.safe_load((REPO / "galaxy.yml").read_text())

# Which awx.awx module each list of capa.yml feeds (infra.controller_configuration's variable names).
OBJECTS = {
    "controller_execution_environments": "execution_environment",
    "controller_projects": "project",
    "controller_templates": "job_template",
    "controller_schedules": "schedule",
}
# AWX's survey question types (awx/api/views: JobTemplateSurveySpec) and the keys a question may carry.
SURVEY_TYPES = {"text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect"}
QUESTION_KEYS = {
    "question_name",
    "question_description",
    "variable",
    "type",
    "required",
    "default",
    "choices",
    "min",
    "max",
    "new_question",
}


class _Captured(Exception):
    def __init__(self, argument_spec: dict[str, Any], kwargs: dict[str, Any]) -> None:
        super().__init__("captured")
        self.argument_spec = argument_spec
        self.kwargs = kwargs


def awx_argument_spec(module_name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The argument spec the awx.awx module builds (its own options plus the controller connection options)."""
    module = importlib.import_module(f"ansible_collections.awx.awx.plugins.modules.{module_name}")
    controller_api = importlib.import_module("ansible_collections.awx.awx.plugins.module_utils.controller_api")

    class Capture:
        def __init__(self, argument_spec=None, **kwargs):
            spec = dict(argument_spec or {})
            spec.update(controller_api.ControllerModule.AUTH_ARGSPEC)
            raise _Captured(spec, kwargs)

    original = module.ControllerAPIModule
    module.ControllerAPIModule = Capture
    try:
        module.main()
    except _Captured as captured:
        return captured.argument_spec, captured.kwargs
    finally:
        module.ControllerAPIModule = original
    raise AssertionError(f"awx.awx.{module_name} built no ControllerAPIModule")


@pytest.fixture(scope="module")
def rendered() -> dict[str, Any]:
    """capa.yml with its own variables templated in, as apply.yml's vars_files load it."""
    data = _trusted(DATA)  # as vars_files' strings are, for templating
    templar = Templar(loader=DataLoader(), variables=data)
    return {key: templar.template(data[key]) for key in OBJECTS}


def _trusted(value: Any) -> Any:
    """ansible-core 2.19 templates only strings marked trusted (vars files are); older ones template every string."""
    trust = getattr(ansible.template, "trust_as_template", None)
    if trust is None:
        return value
    if isinstance(value, str):
        return trust(value)
    if isinstance(value, dict):
        return {k: _trusted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_trusted(v) for v in value]
    return value


def test_awx_awx_ships_the_modules():
    for module in OBJECTS.values():
        spec = awx_argument_spec(module)[0]
        assert "name" in spec and spec["name"].get("required"), module


@pytest.mark.parametrize("key", sorted(OBJECTS))
def test_every_object_is_valid_input_for_its_awx_module(key, rendered):
    spec, kwargs = awx_argument_spec(OBJECTS[key])
    items = rendered[key]
    assert items, f"{key} is empty"
    validator = ArgumentSpecValidator(
        spec,
        mutually_exclusive=kwargs.get("mutually_exclusive"),
        required_together=kwargs.get("required_together"),
        required_one_of=kwargs.get("required_one_of"),
        required_if=kwargs.get("required_if"),
        required_by=kwargs.get("required_by"),
    )
    for item in items:
        result = validator.validate(dict(item))
        assert not result.error_messages, f"{key} {item.get('name')}: {result.error_messages}"
        assert "{{" not in repr(result.validated_parameters), f"{key} {item['name']}: an untemplated value"


def test_apply_playbook_passes_every_key_the_data_sets():
    """apply.yml maps keys explicitly: a key in capa.yml that its task does not pass would be dropped silently."""
    tasks = {next(k for k in t if k.startswith("awx.awx.")): t for t in APPLY[0]["tasks"]}
    for key, module in OBJECTS.items():
        task = tasks[f"awx.awx.{module}"]
        assert task["loop"] == "{{ %s }}" % key
        passed = set(task[f"awx.awx.{module}"])
        spec = awx_argument_spec(module)[0]
        assert passed <= set(spec), f"apply.yml passes {passed - set(spec)} that awx.awx.{module} does not take"
        for item in DATA[key]:
            assert set(item) <= passed, f"apply.yml drops {set(item) - passed} of {key} {item['name']}"
    assert APPLY[0]["vars_files"] == ["capa.yml"]


def _check_survey(survey: dict[str, Any]) -> list[str]:
    """AWX's survey spec rules (JobTemplateSurveySpec._validate_spec_data), as errors."""
    errors = []
    if set(survey) - {"name", "description", "spec"} or not {"name", "description", "spec"} <= set(survey):
        errors.append(f"survey keys must be name, description, spec: {sorted(survey)}")
    if not isinstance(survey.get("name"), str) or not isinstance(survey.get("description"), str):
        errors.append("name and description must be strings")
    spec = survey.get("spec")
    if not isinstance(spec, list) or not spec:
        return [*errors, "spec must be a non-empty list"]
    seen = set()
    for n, question in enumerate(spec):
        where = f"spec[{n}]"
        if not isinstance(question, dict):
            errors.append(f"{where} is not a dict")
            continue
        for required in ("type", "question_name", "variable", "required"):
            if required not in question:
                errors.append(f"{where}: '{required}' missing")
        if set(question) - QUESTION_KEYS:
            errors.append(f"{where}: unknown keys {sorted(set(question) - QUESTION_KEYS)}")
        if question.get("type") not in SURVEY_TYPES:
            errors.append(f"{where}: type {question.get('type')!r} is not one of {sorted(SURVEY_TYPES)}")
        variable = question.get("variable")
        if not isinstance(variable, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", variable):
            errors.append(f"{where}: variable {variable!r} is not a valid variable name")
        if variable in seen:
            errors.append(f"{where}: variable {variable!r} repeated")
        seen.add(variable)
        if not isinstance(question.get("required"), bool):
            errors.append(f"{where}: required must be a boolean")
        kind = question.get("type")
        if kind in ("multiplechoice", "multiselect"):
            choices = question.get("choices")
            if isinstance(choices, str):
                choices = choices.split("\n")
            if not choices:
                errors.append(f"{where}: {kind} needs choices")
            elif "default" in question and question["default"] not in ("", None):
                defaults = question["default"].split("\n") if kind == "multiselect" else [question["default"]]
                if not set(defaults) <= set(choices):
                    errors.append(f"{where}: default {question['default']!r} is not among the choices")
        if kind in ("text", "textarea", "password", "integer", "float"):
            low, high = question.get("min"), question.get("max")
            number = (int, float) if kind == "float" else (int,)
            for bound in (low, high):
                if bound is not None and (not isinstance(bound, number) or isinstance(bound, bool)):
                    errors.append(f"{where}: min/max must be numbers")
            if isinstance(low, int) and isinstance(high, int) and low > high:
                errors.append(f"{where}: min {low} > max {high}")
            default = question.get("default")
            if default not in (None, "") and kind in ("integer", "float") and not isinstance(default, number):
                errors.append(f"{where}: default of an {kind} question must be a number")
            if isinstance(default, str) and default and isinstance(low, int) and len(default) < low:
                errors.append(f"{where}: default shorter than min")
            if isinstance(default, str) and isinstance(high, int) and len(default) > high:
                errors.append(f"{where}: default longer than max")
    return errors


def test_surveys_are_what_awx_accepts(rendered):
    surveys = [t for t in rendered["controller_templates"] if t.get("survey_spec")]
    assert surveys, "no job template has a survey"
    for template in rendered["controller_templates"]:
        assert template.get("survey_enabled", False) == bool(template.get("survey_spec")), template["name"]
    for template in surveys:
        assert _check_survey(template["survey_spec"]) == [], template["name"]


def test_the_survey_checker_rejects_what_awx_rejects():
    good = {
        "name": "n",
        "description": "",
        "spec": [{"question_name": "q", "variable": "v", "type": "text", "required": True}],
    }
    assert _check_survey(good) == []
    bad_type = {**good, "spec": [{**good["spec"][0], "type": "string"}]}
    no_choices = {**good, "spec": [{**good["spec"][0], "type": "multiplechoice"}]}
    duplicate = {**good, "spec": good["spec"] * 2}
    assert _check_survey(bad_type) and _check_survey(no_choices) and _check_survey(duplicate)
    assert _check_survey({"spec": good["spec"]})


def test_the_delete_survey_confirms_with_the_variable_the_playbook_checks(rendered):
    (delete,) = [t for t in rendered["controller_templates"] if t["playbook"] == "delete.yml"]
    variables = {q["variable"] for q in delete["survey_spec"]["spec"]}
    play = yaml.safe_load((PROJECT / "delete.yml").read_text())
    checks = play[0]["tasks"][0]["ansible.builtin.assert"]["that"]
    assert any(v in check for v in variables for check in checks)
    assert play[-1] == {"name": "Delete clusters", "ansible.builtin.import_playbook": "clusterapi.aws.delete"}


def test_job_templates_select_playbook_files_of_the_project(rendered):
    projects = {p["name"] for p in rendered["controller_projects"]}
    ees = {e["name"] for e in rendered["controller_execution_environments"]}
    for template in rendered["controller_templates"]:
        assert (PROJECT / template["playbook"]).is_file(), (
            f"{template['name']}: no {template['playbook']} in the project"
        )
        assert template["project"] in projects and template["execution_environment"] in ees
    assert {t["playbook"] for t in rendered["controller_templates"]} == {
        "site.yml",
        "plan.yml",
        "delete.yml",
        "etcd_snapshot.yml",
        "restore.yml",
    }


def test_plan_playbook_is_a_check_mode_run_with_diffs():
    (play,) = yaml.safe_load((PROJECT / "plan.yml").read_text())
    assert play["check_mode"] is True and play["diff"] is True
    site = yaml.safe_load((REPO / "playbooks" / "site.yml").read_text())[0]
    for key in ("hosts", "strategy", "environment", "gather_facts"):
        assert play[key] == site[key], f"plan.yml's {key} differs from playbooks/site.yml's"
    assert [t["ansible.builtin.include_role"] for t in play["tasks"]] == [
        t["ansible.builtin.include_role"] for t in site["tasks"]
    ]


def test_schedules_are_a_periodic_reconcile_and_snapshot_awx_can_parse(rendered):
    templates = {t["name"] for t in rendered["controller_templates"]}
    periods = {}
    for schedule in rendered["controller_schedules"]:
        assert schedule["unified_job_template"] in templates
        rule = schedule["rrule"]
        # AWX wants "DTSTART... RRULE:..." on one line, DTSTART in UTC (Z) or with a TZID.
        assert re.fullmatch(r"DTSTART(;TZID=[^:]+)?:\d{8}T\d{6}Z? RRULE:\S+", rule), rule
        dates = rrulestr(rule.replace(" ", "\n"), forceset=True)
        first, second = dates[0], dates[1]
        periods[schedule["unified_job_template"]] = (second - first).total_seconds()
    # An hourly reconcile, as CAPA's controllers resync; an etcd snapshot every 15 minutes, as kOps's etcd-manager.
    assert periods == {"capa-site": 3600, "capa-etcd-snapshot": 900}


def test_project_requirements_bound_the_collections_as_galaxy_yml_does():
    requirements = yaml.safe_load((PROJECT / "collections" / "requirements.yml").read_text())
    wanted = {c["name"]: c.get("version") for c in requirements["collections"]}
    assert wanted["amazon.aws"] == GALAXY["dependencies"]["amazon.aws"]
    major = int(GALAXY["version"].split(".")[0])
    assert wanted["clusterapi.aws"] == f">={GALAXY['version']},<{major + 1}.0.0"
