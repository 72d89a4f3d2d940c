"""Configuration declared once (operator/options.py, operator/config.py): every option of the operator's record
has one declaration; a variable goes through the flag's own parser; a bad value is one line naming the
variable or the flag, exit 2, for every command; a command never reads the variables of options it does not
take."""

from __future__ import annotations

import argparse
import dataclasses
import json
import socket
from collections import Counter
from pathlib import Path

import pytest

from draledger.commands import cli
from draledger.operator import config
from draledger.operator.config import OPTIONS, OperatorConfig, add_arguments, from_args
from draledger.operator.leadership import LeaderElection
from draledger.operator.options import BOOLEAN, NAMES, ConfigError, duration, integer, seconds
from strategies import as_list, container, node_obj, pod_obj

GARBAGE = "not-a-value!"  # no duration, integer, choice, boolean or URL reads this


def parse(argv: list[str], environ: dict[str, str] | None = None, command: str = "run") -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser, command)
    args = parser.parse_args(argv)
    config.resolve(args, environ or {})
    return args


def draledger(capfd: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``draledger ARGV...`` in process: exit code, stdout, stderr."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(list(argv))
    out, err = capfd.readouterr()
    assert isinstance(exit_info.value.code, int)
    return exit_info.value.code, out, err


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No DRALEDGER_* variable of this process's environment leaks into a test."""
    for option in OPTIONS:
        monkeypatch.delenv(option.variable, raising=False)
    return monkeypatch


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(as_list([node_obj("n1"), pod_obj("p", containers=[container("a", {"cpu": "1"})])])))
    return path


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


class TestDeclarations:
    def test_every_field_of_the_record_is_declared_exactly_once(self) -> None:
        """Each field of OperatorConfig (and of its LeaderElection, but the derived identity) has one option."""
        fields = [f.name for f in dataclasses.fields(OperatorConfig) if f.name != "leader_election"]
        fields += [f"leader_election.{f.name}" for f in dataclasses.fields(LeaderElection) if f.name != "identity"]
        declared = Counter(option.target for option in OPTIONS)
        assert {name: 1 for name in fields} == dict(declared)

    def test_flags_and_variables_are_unique(self) -> None:
        """No two options share a flag or a variable, and every variable is DRALEDGER_*."""
        flags = [o.flag for o in OPTIONS]
        variables = [o.variable for o in OPTIONS]
        assert (len(OPTIONS), len(OPTIONS)) == (len(set(flags)), len(set(variables)))
        assert all(v.startswith("DRALEDGER_") for v in variables)

    def test_the_records_defaults_are_the_declared_ones(self) -> None:
        """Without flags or variables, `draledger run` builds what OperatorConfig() holds."""
        assert OperatorConfig() == from_args(parse([]))

    @pytest.mark.parametrize("option", [pytest.param(o, id=o.name) for o in OPTIONS if not o.default_text])
    def test_the_shown_default_reads_back_as_the_default(self, option: config.Option) -> None:
        """What --help and the docs show as the default is what the flag's parser reads as the default."""
        shown = option.shown_default
        parsed = (tuple(option.kind.parse(s) for s in NAMES.parse(shown)) if option.repeat
                  else option.kind.parse(shown))
        assert option.default == parsed

    def test_release_is_declared_for_run_and_audit(self) -> None:
        """--release: auto, v1.36, v1.37 or v1.38, for `run` (OperatorConfig.release) and `audit` (its args)."""
        assert "v1.38" == from_args(parse(["--release", "v1.38"])).release
        assert "v1.37" == parse([], {"DRALEDGER_RELEASE": "v1.37"}, command="audit").release
        assert "auto" == parse([], command="audit").release


class TestKinds:
    @pytest.mark.parametrize(("text", "value"), [
        pytest.param("15", 15, id="bare"), pytest.param("1.5", 1.5, id="fraction"),
        pytest.param("15s", 15, id="seconds"), pytest.param("1m", 60, id="minute"),
        pytest.param("1m30s", 90, id="go"), pytest.param("500ms", 0.5, id="milliseconds"),
        pytest.param("1h", 3600, id="hour"), pytest.param(".5s", 0.5, id="leading-dot"),
    ])
    def test_one_duration_syntax(self, text: str, value: float) -> None:
        """A number of seconds, or Go's spelling as kube-scheduler's flags take it."""
        assert value == seconds(text)

    @pytest.mark.parametrize("text", ["abc", "-1", "15x", "1m 30s", "", "s", "1e3"])
    def test_what_is_no_duration(self, text: str) -> None:
        """Anything else is refused with the reason."""
        with pytest.raises(ValueError, match="not a duration"):
            duration().parse(text)

    def test_ranges(self) -> None:
        """A duration that must be positive refuses 0; whole seconds refuse fractions; integers their bounds."""
        assert 0.0 == duration(zero=True).parse("0")
        assert 60 == duration(whole=True).parse("1m")
        for kind, text, reason in ((duration(), "0s", "> 0"), (duration(whole=True), "1.5", "whole number"),
                                   (integer(0, 65535), "65536", "from 0 to 65535"), (integer(1), "0", ">= 1")):
            with pytest.raises(ValueError, match=reason):
                kind.parse(text)

    @pytest.mark.parametrize(("text", "value"), [("true", True), ("1", True), ("On", True), ("no", False),
                                                ("FALSE", False), ("0", False)])
    def test_booleans(self, text: str, value: bool) -> None:
        """A variable of a --x/--no-x flag reads the usual spellings, in any case."""
        assert value == BOOLEAN.parse(text)


class TestEnvironment:
    def test_a_variable_goes_through_the_flags_parser(self) -> None:
        """DRALEDGER_COALESCE_WINDOW=1m is 60 s, as --coalesce-window 1m is."""
        assert 60.0 == from_args(parse([], {"DRALEDGER_COALESCE_WINDOW": "1m",
                                            "DRALEDGER_COALESCE_WINDOW_MAX": "2m"})).coalesce_window

    def test_the_flag_wins_over_the_variable(self) -> None:
        """Given both, the flag counts; the variable is not even read (a bad one does not matter)."""
        settings = from_args(parse(["--metrics-port", "9000"], {"DRALEDGER_METRICS_PORT": GARBAGE}))
        assert 9000 == settings.metrics_port

    def test_an_empty_variable_is_the_empty_value(self) -> None:
        """DRALEDGER_NODE_SELECTOR= is --node-selector '' (every node); an empty list is no namespace."""
        settings = from_args(parse([], {"DRALEDGER_NODE_SELECTOR": "", "DRALEDGER_GATE_EXCLUDE_NAMESPACES": ""}))
        assert ("", ()) == (settings.node_selector, settings.gate_exclude_namespaces)

    def test_lists(self) -> None:
        """A repeatable flag's variable is comma-separated; the repeated flag replaces it."""
        assert ("a", "b") == from_args(parse([], {"DRALEDGER_NUMA_ATTRIBUTES": "a, b"})).numa_attributes
        assert ("c",) == from_args(parse(["--numa-attribute", "c"], {"DRALEDGER_NUMA_ATTRIBUTES": "a"})).numa_attributes

    def test_booleans_read_from_variables(self) -> None:
        """DRALEDGER_EVENTS=false is --no-events; DRALEDGER_FROZEN=on is --frozen."""
        settings = from_args(parse([], {"DRALEDGER_EVENTS": "false", "DRALEDGER_FROZEN": "on"}))
        assert (False, True) == (settings.events, settings.frozen)

    def test_settings_that_cannot_work_are_a_config_error(self) -> None:
        """A renew deadline past the lease duration is refused by name, not corrected."""
        with pytest.raises(ConfigError, match="--leader-election-renew-deadline"):
            from_args(parse(["--leader-election", "--leader-election-renew-deadline", "20s"]))


# (argv, environment, the one line on stderr); each exits 2 before any work
BAD_CONFIGURATION = [
    pytest.param(["run"], {"DRALEDGER_POD_STATUS": "bogus"},
                 "DRALEDGER_POD_STATUS='bogus': not one of backfill, observe", id="run-choice-variable"),
    pytest.param(["run", "--pod-status", "bogus"], {},
                 "--pod-status 'bogus': not one of backfill, observe (see draledger run --help)", id="run-choice-flag"),
    pytest.param(["run"], {"DRALEDGER_LOG_LEVEL": "loud"},
                 "DRALEDGER_LOG_LEVEL='loud': not one of debug, info, warning, error", id="run-log-level-variable"),
    pytest.param(["run"], {"DRALEDGER_METRICS_PORT": "99999"},
                 "DRALEDGER_METRICS_PORT='99999': must be an integer from 0 to 65535", id="run-port-variable"),
    pytest.param(["run", "--webhook-port", "0"], {},
                 "--webhook-port '0': must be an integer from 1 to 65535 (see draledger run --help)",
                 id="run-port-flag"),
    pytest.param(["run"], {"DRALEDGER_COALESCE_WINDOW": "abc"},
                 "DRALEDGER_COALESCE_WINDOW='abc': not a duration (a number of seconds, or e.g. 15s, 1m, 1m30s, "
                 "500ms)", id="run-duration-variable"),
    pytest.param(["run", "--freshness-window", "0"], {},
                 "--freshness-window '0': must be a duration > 0 (see draledger run --help)", id="run-duration-flag"),
    pytest.param(["run"], {"DRALEDGER_WEBHOOK": "maybe"},
                 "DRALEDGER_WEBHOOK='maybe': not a boolean (true or false)", id="run-boolean-variable"),
    pytest.param(["run"], {"DRALEDGER_WRITE_CONCURRENCY": "0"},
                 "DRALEDGER_WRITE_CONCURRENCY='0': must be an integer >= 1", id="run-integer-variable"),
    pytest.param(["run"], {"DRALEDGER_LEADER_ELECTION": "true", "DRALEDGER_LEADER_ELECTION_RETRY_PERIOD": "9s"},
                 "--leader-election-renew-deadline (10s) must exceed 1.2 x --leader-election-retry-period (9s)",
                 id="run-settings-that-cannot-work"),
    pytest.param(["audit", "-f", "DUMP"], {"DRALEDGER_RELEASE": "v1.99"},
                 "DRALEDGER_RELEASE='v1.99': not one of auto, v1.36, v1.37, v1.38", id="audit-variable"),
    pytest.param(["audit", "-f", "DUMP", "--release", "1.37"], {},
                 "--release '1.37': not one of auto, v1.36, v1.37, v1.38 (see draledger audit --help)",
                 id="audit-flag"),
    *[pytest.param([command, *extra], {"DRALEDGER_SERVER": "bogus"},
                   "DRALEDGER_SERVER='bogus': not an http:// or https:// URL", id=f"{command}-variable")
      for command, extra in (("freeze", ["--all"]), ("resume", ["--all"]), ("export", ["--from-cluster"]),
                             ("report", ["--svg", "x.svg"]))],
    *[pytest.param([command, *extra, "--server", "localhost:6443"], {},
                   f"--server 'localhost:6443': not an http:// or https:// URL (see draledger {command} --help)",
                   id=f"{command}-flag")
      for command, extra in (("freeze", ["--all"]), ("resume", ["--all"]), ("export", ["--from-cluster"]),
                             ("report", ["--svg", "x.svg"]))],
    pytest.param(["demo", "--port", "http"], {},
                 "--port 'http': not an integer from 0 to 65535 (see draledger demo --help)", id="demo-flag"),
    pytest.param(["crd", "--output", "json"], {},
                 "draledger: unrecognized arguments: --output json (see draledger --help)", id="crd-flag"),
    pytest.param(["metadata", "show", "--claim", "c", "-o", "xml"], {},
                 "-o/--output: invalid choice: 'xml' (choose from 'table', 'json') (see draledger metadata show "
                 "--help)", id="metadata-flag"),
    pytest.param(["completion", "tcsh"], {},
                 "draledger completion: invalid choice: 'tcsh' (choose from 'bash', 'zsh', 'fish') (see draledger "
                 "completion --help)", id="completion-flag"),
]


@pytest.mark.parametrize(("argv", "environ", "line"), BAD_CONFIGURATION)
def test_a_bad_value_is_one_line_naming_it_and_exit_2(
    argv: list[str], environ: dict[str, str], line: str, dump: Path, tmp_path: Path,
    clean_environment: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str],
) -> None:
    """Every command: a bad flag or variable ends it with exit 2, nothing on stdout, one line naming it."""
    for name, value in environ.items():
        clean_environment.setenv(name, value)
    clean_environment.chdir(tmp_path)
    assert (2, "", f"error: {line}\n") == draledger(capfd, *[str(dump) if a == "DUMP" else a for a in argv])


def garbage_for_others(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every variable of an option ``command`` does not take, set to a value none of them could read."""
    for option in OPTIONS:
        if command not in option.commands:
            monkeypatch.setenv(option.variable, GARBAGE)


class TestOnlyTheCommandsOwnOptions:
    def test_audit(self, dump: Path, clean_environment: pytest.MonkeyPatch,
                   capfd: pytest.CaptureFixture[str]) -> None:
        """DRALEDGER_COALESCE_WINDOW=abc (and every other option of `run` alone) leaves `audit` alone."""
        garbage_for_others("audit", clean_environment)
        code, out, err = draledger(capfd, "audit", "-f", str(dump))
        assert (0, False) == (code, "DRALEDGER_" in err)
        assert out.startswith("NAME")

    def test_export_from_a_dump(self, dump: Path, clean_environment: pytest.MonkeyPatch,
                                capfd: pytest.CaptureFixture[str]) -> None:
        """`export -f` reads no variable of `run`'s own options."""
        garbage_for_others("export", clean_environment)
        assert 0 == draledger(capfd, "export", "-f", str(dump), "-o", "table")[0]

    @pytest.mark.parametrize("argv", [["--version"], ["crd"], ["completion", "bash"], ["audit", "--help"]])
    def test_commands_without_options(self, argv: list[str], clean_environment: pytest.MonkeyPatch,
                                      capfd: pytest.CaptureFixture[str]) -> None:
        """--version, crd, completion and every --help work whatever the variables hold."""
        for option in OPTIONS:
            clean_environment.setenv(option.variable, GARBAGE)
        code, out, err = draledger(capfd, *argv)
        assert (0, "") == (code, err)
        assert out

    @pytest.mark.parametrize("command", ["freeze", "resume", "report"])
    def test_cluster_commands(self, command: str, clean_environment: pytest.MonkeyPatch, tmp_path: Path,
                              capfd: pytest.CaptureFixture[str]) -> None:
        """A cluster command fails on the unreachable server it was given, not on `run`'s variables."""
        garbage_for_others(command, clean_environment)
        server = closed_port_url()
        extra = ["--svg", str(tmp_path / "x.svg")] if command == "report" else ["--all"]
        code, _, err = draledger(capfd, command, *extra, "--server", server)
        assert (1, f"error: cannot reach the API server {server}: connection refused\n") == (code, err)


def shipped_values() -> list[tuple[str, str, str]]:
    """(file, variable, value) for every DRALEDGER_* value the manifests set: configMapGenerator literals and
    container env entries with a plain value."""
    import yaml

    found = []
    for path in sorted((Path(__file__).resolve().parents[2] / "manifests").rglob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            stack: list[object] = [document]
            while stack:
                node = stack.pop()
                if isinstance(node, dict):
                    if isinstance(node.get("name"), str) and node["name"].startswith("DRALEDGER_") and "value" in node:
                        found.append((path.name, node["name"], str(node["value"])))
                    literals = node.get("literals")
                    for literal in literals if isinstance(literals, list) else ():
                        name, _, value = str(literal).partition("=")
                        if name.startswith("DRALEDGER_"):
                            found.append((path.name, name, value))
                    stack.extend(node.values())
                elif isinstance(node, list):
                    stack.extend(node)
    return found


def test_every_value_the_manifests_set_is_read() -> None:
    """The Deployment's DRALEDGER_* values name declared options and parse through them."""
    by_variable = {o.variable: o for o in OPTIONS}
    values = shipped_values()
    assert {"DRALEDGER_POD_STATUS", "DRALEDGER_LEADER_ELECTION"} <= {name for _, name, _ in values}
    unread = []
    for where, name, value in values:
        try:
            by_variable[name].from_environment({name: value})
        except (KeyError, ConfigError) as error:
            unread.append(f"{where}: {name}={value!r}: {error}")
    assert [] == unread
