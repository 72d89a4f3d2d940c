"""Help that matches the program: every command describes itself and lists the exit codes, every flag says
what it does and its default (``run``'s also its DRALEDGER_* variable), the cluster commands connect alike,
and the same command line ships as the kubectl plugin ``kubectl draledger``."""

from __future__ import annotations

import argparse
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from draledger.commands import cli

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_COMMANDS = ("freeze", "resume", "export", "report", "run")


def commands(parser: argparse.ArgumentParser, path: str = "draledger") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every sub-command, nested ones (``metadata show``) included, with its full name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{path} {name}", sub
                yield from commands(sub, f"{path} {name}")


def flags(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The actions a person types, without -h/--version, the sub-command slot and the hidden ones."""
    return [a for a in parser._actions
            if not isinstance(a, argparse._HelpAction | argparse._VersionAction | argparse._SubParsersAction)
            and a.help != argparse.SUPPRESS]


def shown(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The help text of ``action`` as ``--help`` prints it (defaults expanded)."""
    return parser._get_formatter()._expand_help(action)


def parser_of(name: str) -> argparse.ArgumentParser:
    return dict(commands(cli.build_parser()))[f"draledger {name}"]


class TestHelp:
    def test_every_command_describes_itself_and_its_exit_codes(self) -> None:
        """Every command and sub-command has a description and an epilog listing its exit codes."""
        parser = cli.build_parser()
        found = list(commands(parser))
        assert {"draledger audit", "draledger run", "draledger crd", "draledger metadata show"} <= {n for n, _ in found}
        lacking = [name for name, sub in [("draledger", parser), *found]
                   if not sub.description or "exit codes:" not in (sub.epilog or "")]
        assert [] == lacking

    def test_every_flag_has_help_and_shows_its_default(self) -> None:
        """Every flag of every command says what it does; one with a value by default shows it."""
        lacking = []
        for name, sub in commands(cli.build_parser()):
            for action in flags(sub):
                text = shown(sub, action)
                if not action.help or (cli.has_default(action) and "(default" not in text):
                    lacking.append(f"{name} {'/'.join(action.option_strings) or action.dest}: {text!r}")
        assert [] == lacking

    def test_every_run_flag_names_its_variable_and_default(self) -> None:
        """`draledger run`: each flag's help names its DRALEDGER_* variable and shows its default."""
        run = parser_of("run")
        lacking = [f"{'/'.join(a.option_strings)}: {shown(run, a)!r}" for a in flags(run)
                   if "DRALEDGER_" not in shown(run, a) or "(default" not in shown(run, a)]
        assert [] == lacking

    def test_the_epilog_is_the_documented_table(self, capsys: pytest.CaptureFixture[str]) -> None:
        """`draledger audit --help` ends with the exit codes as written (not re-wrapped)."""
        with pytest.raises(SystemExit):
            cli.build_parser().parse_args(["audit", "--help"])
        out = capsys.readouterr().out
        assert out.rstrip().endswith("exit codes:\n  0  done\n  1  an operation failed: the cluster refused or could "
                                     "not be reached,\n     or a node's phase matched --fail-on\n  2  unusable input "
                                     "or usage: a file that cannot be read or written,\n     a bad dump, export or "
                                     "kubeconfig, a bad flag")


    def test_every_apply_it_suggests_is_server_side(self) -> None:
        """A `kubectl apply` that any help text suggests (`crd --help`) is a server-side one, as the README's."""
        from tests.test_documentation import APPLY

        texts = [text for _, sub in commands(cli.build_parser()) for text in (sub.description or "", sub.epilog or "")]
        texts += [a.help or "" for _, sub in commands(cli.build_parser()) for a in sub._actions]
        suggested = [m[0] for text in texts for m in APPLY.finditer(" ".join(text.replace("`", " ").split()))]
        assert suggested
        assert [] == [apply for apply in suggested if "--server-side" not in apply]


class TestFlags:
    @pytest.mark.parametrize("command", CLUSTER_COMMANDS)
    def test_cluster_commands_connect_alike(self, command: str) -> None:
        """`run` and every command that talks to a cluster take --kubeconfig, --context and --server."""
        options = {o for a in parser_of(command)._actions for o in a.option_strings}
        assert {"--kubeconfig", "--context", "--server"} <= options

    @pytest.mark.parametrize("command", ["audit", "export"])
    def test_one_set_of_output_formats(self, command: str) -> None:
        """audit and export print -o table, json or yaml."""
        output = next(a for a in parser_of(command)._actions if "-o" in a.option_strings)
        assert ("table", "json", "yaml") == tuple(output.choices or ())

    def test_fail_on_defaults_to_none(self) -> None:
        """audit --fail-on is empty unless told (exit 0, docs/cli.md); `none` too; phases are read in any case."""
        audit = parser_of("audit")
        assert () == audit.parse_args(["-f", "x"]).fail_on
        assert () == audit.parse_args(["-f", "x", "--fail-on", "none"]).fail_on
        assert ("Stale", "Overcommitted") == audit.parse_args(["-f", "x", "--fail-on", "stale,OVERCOMMITTED"]).fail_on


class TestKubectlPlugin:
    @pytest.mark.parametrize(
        ("argv0", "prog"),
        [
            pytest.param("/usr/local/bin/kubectl-draledger", "kubectl draledger", id="plugin"),
            pytest.param("/usr/local/bin/draledger", "draledger", id="command"),
            pytest.param("/x/draledger/__main__.py", "draledger", id="python-m"),
        ],
    )
    def test_program_name(self, argv0: str, prog: str, monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
        """Run as kubectl-draledger, usage and help read `kubectl draledger`, as kubectl users type it."""
        monkeypatch.setattr("sys.argv", [argv0, "audit", "--help"])
        with pytest.raises(SystemExit) as exit_info:
            cli.main()
        assert 0 == exit_info.value.code
        assert capsys.readouterr().out.startswith(f"usage: {prog} audit ")

    def test_the_plugin_is_installed_with_the_command(self) -> None:
        """pyproject.toml installs `kubectl-draledger` beside `draledger`, both the same main."""
        scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
        assert "draledger.commands.cli:main" == scripts["draledger"] == scripts["kubectl-draledger"]
