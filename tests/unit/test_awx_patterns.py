"""extensions/awx: the AWX objects are valid input for the awx.awx modules, the surveys and the credential type are
what AWX accepts, the job templates select playbook files that exist in the project layout, the workflow goes plan ->
approval -> apply with the plan's artifact checked by the apply, the inventory source reads a capa_machines
configuration of the project, and the project's ansible.cfg prints the plan."""

from __future__ import annotations

import configparser
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
    "controller_credential_types": "credential_type",
    "controller_execution_environments": "execution_environment",
    "controller_projects": "project",
    "controller_inventories": "inventory",
    "controller_inventory_sources": "inventory_source",
    "controller_templates": "job_template",
    "controller_workflows": "workflow_job_template",
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
        # A credential type's injectors are AWX's templates of its inputs; any other "{{" is one Ansible missed.
        ours = {k: v for k, v in result.validated_parameters.items() if k != "injectors"}
        assert "{{" not in repr(ours), f"{key} {item['name']}: an untemplated value"


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
        "apply.yml",
        "delete.yml",
        "etcd_snapshot.yml",
        "restore.yml",
    }


def plays_of(playbook: str) -> list[dict[str, Any]]:
    return yaml.safe_load((PROJECT / playbook).read_text())


def test_plan_playbook_is_a_check_mode_run_with_diffs():
    (play,) = [p for p in plays_of("plan.yml") if "check_mode" in p]
    assert play["check_mode"] is True and play["diff"] is True
    site = yaml.safe_load((REPO / "playbooks" / "site.yml").read_text())[0]
    for key in ("hosts", "strategy", "environment", "gather_facts"):
        assert play[key] == site[key], f"plan.yml's {key} differs from playbooks/site.yml's"
    # The same role, entered the same way (imported: its tasks part of the play when Ansible loads it).
    assert [t["ansible.builtin.import_role"] for t in play["tasks"]] == [
        t["ansible.builtin.import_role"] for t in site["tasks"]
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


# --- the identity credential type -----------------------------------------------------------------------------------
# AWX's rules for a credential type (awx/main/fields.py: CredentialTypeInputField, CredentialTypeInjectorField).
FIELD_KEYS = {
    "id",
    "label",
    "type",
    "secret",
    "multiline",
    "help_text",
    "format",
    "choices",
    "ask_at_runtime",
    "default",
}
VARIABLE = re.compile(r"^[a-zA-Z_]+[a-zA-Z0-9_]*$")
TEMPLATE_NAMES = re.compile(r"{{\s*([a-zA-Z_][a-zA-Z0-9_]*)")


def _check_credential_type(kind: dict[str, Any]) -> list[str]:
    errors = []
    inputs, injectors = kind.get("inputs", {}), kind.get("injectors", {})
    fields = inputs.get("fields", [])
    ids = [f.get("id") for f in fields]
    for f in fields:
        if set(f) - FIELD_KEYS:
            errors.append(f"field {f.get('id')}: unknown keys {sorted(set(f) - FIELD_KEYS)}")
        if not isinstance(f.get("id"), str) or not VARIABLE.match(f["id"]) or not isinstance(f.get("label"), str):
            errors.append(f"field {f.get('id')!r}: an id that is a variable name and a label are required")
        if f.get("type", "string") not in ("string", "boolean"):
            errors.append(f"field {f['id']}: type {f['type']!r}")
    if len(set(ids)) != len(ids):
        errors.append("repeated field ids")
    if not set(inputs.get("required", [])) <= set(ids):
        errors.append(f"required names no field: {set(inputs['required']) - set(ids)}")
    if set(injectors) - {"file", "env", "extra_vars"}:
        errors.append(f"unknown injectors {sorted(set(injectors) - {'file', 'env', 'extra_vars'})}")
    for section in ("env", "extra_vars"):
        for name, template in injectors.get(section, {}).items():
            if not VARIABLE.match(name) or not isinstance(template, str):
                errors.append(f"{section}.{name}: a variable name and a string template are required")
                continue
            unknown = set(TEMPLATE_NAMES.findall(template)) - set(ids)
            if unknown:
                errors.append(f"{section}.{name}: the template names {sorted(unknown)}, not inputs")
    return errors


def test_the_credential_type_checker_rejects_what_awx_rejects():
    good = {
        "inputs": {"fields": [{"id": "a", "label": "A", "type": "string"}], "required": ["a"]},
        "injectors": {"extra_vars": {"x": "{{ a }}"}},
    }
    assert _check_credential_type(good) == []
    assert _check_credential_type({**good, "injectors": {"extra_vars": {"x": {"nested": "{{ a }}"}}}})
    assert _check_credential_type({**good, "injectors": {"extra_vars": {"x": "{{ b }}"}}})
    assert _check_credential_type({**good, "injectors": {"ssh": {}}})
    assert _check_credential_type({**good, "inputs": {"fields": good["inputs"]["fields"], "required": ["b"]}})


def test_the_identity_credential_type_feeds_the_projects_identity_play(rendered):
    (kind,) = rendered["controller_credential_types"]
    assert _check_credential_type(kind) == []
    fields = {f["id"]: f for f in kind["inputs"]["fields"]}
    assert set(fields) == {"role_arn", "external_id", "session_name"} and fields["external_id"]["secret"] is True
    assert kind["inputs"]["required"] == ["role_arn"]
    injected = kind["injectors"]["extra_vars"]
    # The file's raw blocks keep AWX's templates from Ansible's: what AWX receives still templates its inputs.
    assert injected["capa_identity_role_arn"] == "{{ role_arn }}"
    (play,) = plays_of("identity.yml")
    (task,) = play["tasks"]
    used = set(re.findall(r"capa_identity_[a-z_]+", yaml.safe_dump(task)))
    assert used == set(injected)
    # Every job of the project takes the credential's role, the plan and the apply alike.
    for playbook in ("site.yml", "plan.yml", "apply.yml", "delete.yml", "etcd_snapshot.yml", "restore.yml"):
        imports = [p.get("ansible.builtin.import_playbook") for p in plays_of(playbook)]
        assert "identity.yml" in imports, playbook
        assert imports.index("identity.yml") < len(imports) - 1, f"{playbook}: identity.yml after the work"


# --- plan -> approval -> apply --------------------------------------------------------------------------------------
def test_the_workflow_is_plan_then_approval_then_apply(rendered):
    (workflow,) = rendered["controller_workflows"]
    nodes = {n["identifier"]: n for n in workflow["workflow_nodes"]}
    successors = {
        name: [s["identifier"] for s in node.get("related", {}).get("success_nodes", [])]
        for name, node in nodes.items()
    }
    assert successors == {"plan": ["approve"], "approve": ["apply"], "apply": []}
    assert all(not node.get("related", {}).get(k) for node in nodes.values() for k in ("failure_nodes", "always_nodes"))
    templates = {t["name"]: t for t in rendered["controller_templates"]}
    plan, approve, apply = (nodes[n]["unified_job_template"] for n in ("plan", "approve", "apply"))
    assert (plan["type"], templates[plan["name"]]["playbook"]) == ("job_template", "plan.yml")
    assert (apply["type"], templates[apply["name"]]["playbook"]) == ("job_template", "apply.yml")
    assert approve["type"] == "workflow_approval" and int(approve["timeout"]) > 0
    # One limit for the plan and the apply: the workflow's, given at launch.
    assert workflow["ask_limit_on_launch"] is True and workflow["allow_simultaneous"] is False


def test_the_plan_publishes_what_the_apply_checks():
    publish = plays_of("plan.yml")[-1]["tasks"]
    assert publish[0]["ansible.builtin.include_tasks"] == "tasks/plan_record.yml"
    stats = publish[1]["ansible.builtin.set_stats"]
    assert stats["per_host"] is False and stats["aggregate"] is True  # one artifact, merged over the clusters
    assert set(stats["data"]) == {"capa_approved_plan"}

    refuse, reconcile = plays_of("apply.yml")[1:]
    assert reconcile == {"name": "Reconcile clusters", "ansible.builtin.import_playbook": "clusterapi.aws.site"}
    assert refuse["any_errors_fatal"] is True  # one refused cluster stops the whole apply
    steps = [next(k for k in task if k.startswith("ansible.builtin.")) for task in refuse["tasks"]]
    assert steps == ["ansible.builtin.assert", "ansible.builtin.include_tasks", *["ansible.builtin.assert"] * 2]
    checks = [" ".join(t["ansible.builtin.assert"]["that"]) for t in refuse["tasks"] if "ansible.builtin.assert" in t]
    assert "capa_approved_plan | default(None) is mapping" in checks[0]
    assert "capa_plan_record.account" in checks[1] and "capa_approved_plan[inventory_hostname].account" in checks[1]
    assert "capa_plan_record.spec" in checks[2]

    record = yaml.safe_load((PROJECT / "tasks" / "plan_record.yml").read_text())
    caller, fact = record
    assert "amazon.aws.aws_caller_info" in caller and caller["check_mode"] is False  # a read, also in the check run
    assert set(fact["ansible.builtin.set_fact"]["capa_plan_record"]) == {"account", "spec"}


# --- the machines inventory source, and the plan's table in job output ----------------------------------------------
def test_the_inventory_source_reads_a_capa_machines_configuration_of_the_project(rendered):
    (source,) = rendered["controller_inventory_sources"]
    assert source["inventory"] in {i["name"] for i in rendered["controller_inventories"]}
    assert source["source_project"] in {p["name"] for p in rendered["controller_projects"]}
    assert source["source"] == "scm" and source["credential"] == DATA["capa_awx_credential"]
    path = PROJECT / source["source_path"]
    assert path.is_file() and path.name.endswith("capa_machines.yml")  # the plugin's verify_file
    config = yaml.safe_load(path.read_text())
    assert config["plugin"] == "clusterapi.aws.capa_machines"
    plugin = importlib.import_module("ansible_collections.clusterapi.aws.plugins.inventory.capa_machines")
    options = yaml.safe_load(plugin.DOCUMENTATION)["options"]
    assert set(config) <= set(options), set(config) - set(options)
    assert config["connection"] in options["connection"]["choices"]


def test_the_project_prints_the_plan_with_the_capa_plan_callback():
    config = configparser.ConfigParser()
    config.read(PROJECT / "ansible.cfg")
    assert "clusterapi.aws.capa_plan" in [c.strip() for c in config["defaults"]["callbacks_enabled"].split(",")]
    plugin = importlib.import_module("ansible_collections.clusterapi.aws.plugins.callback.capa_plan")
    options = yaml.safe_load(plugin.DOCUMENTATION)["options"]
    ini = {entry["key"] for option in options.values() for entry in option.get("ini", [])}
    assert set(config["callback_capa_plan"]) <= ini
    assert int(config["callback_capa_plan"]["width"]) <= 120


def test_the_project_and_the_repository_poll_the_workers_every_5_ms():
    """Ansible's controller, read by Ansible's own configuration manager (a misspelt key would leave its default,
    0.001 s): with strategy free it walks every host between two polls, which costs a share of a core while many
    clusters' tasks wait on AWS."""
    from ansible.config.manager import ConfigManager

    for cfg in (PROJECT / "ansible.cfg", REPO / "ansible.cfg"):
        manager = ConfigManager(conf_file=str(cfg))
        assert manager.get_config_value("DEFAULT_INTERNAL_POLL_INTERVAL") == 0.005, cfg
