"""`draledger completion bash|zsh|fish`: scripts generated from the command's own parser; bash's is run for real."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from draledger.commands import cli, completion

BASH = shutil.which("bash")


def bash_completes(line: str) -> list[str]:
    """What bash offers for ``line`` (the word being completed is after its last space), by running the
    generated script's function in a real bash."""
    script = completion.bash(cli.build_parser())
    program = (
        'source /dev/stdin; read -ra COMP_WORDS <<< "$1"; [[ "$1" == *" " ]] && COMP_WORDS+=("");'
        ' COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _draledger; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    assert BASH is not None
    done = subprocess.run([BASH, "-c", program, "bash", line], input=script, capture_output=True, text=True,
                          timeout=30, check=True)
    return [word for word in done.stdout.split("\n") if word]


@pytest.mark.skipif(BASH is None, reason="no bash")
class TestBash:
    @pytest.mark.parametrize(("line", "offered"), [
        pytest.param("draledger au", ["audit"], id="a-command"),
        pytest.param("draledger run --coal", ["--coalesce-window", "--coalesce-window-max"], id="flags"),
        pytest.param("draledger run --pod-status ", ["backfill", "observe"], id="choices"),
        pytest.param("draledger audit --release v1.3", ["v1.36", "v1.37", "v1.38"], id="release"),
        pytest.param("draledger metadata s", ["show"], id="nested-command"),
        pytest.param("draledger completion ", ["bash", "zsh", "fish"], id="positional-choices"),
        pytest.param("kubectl-draledger export -o y", ["yaml"], id="the-kubectl-plugin"),
        pytest.param("draledger run --coalesce-window ", [], id="a-duration-has-nothing-to-guess"),
    ])
    def test_words(self, line: str, offered: list[str]) -> None:
        """bash offers what the parser takes at that point, and nothing else."""
        assert offered == bash_completes(line)

    def test_files_after_a_file_flag(self) -> None:
        """After -f (a DUMP) bash offers file names."""
        assert "/etc/hostname" in bash_completes("draledger audit -f /etc/hostn")

    def test_the_script_registers_both_programs(self) -> None:
        """`complete -F _draledger draledger kubectl-draledger`, and the script is valid bash."""
        script = completion.bash(cli.build_parser())
        assert script.rstrip().endswith("complete -F _draledger draledger kubectl-draledger")
        assert BASH is not None
        subprocess.run([BASH, "-n"], input=script, text=True, check=True, timeout=30)


class TestEveryFlag:
    def test_every_flag_of_every_command_is_offered(self) -> None:
        """The scripts know every flag --help lists: they are generated from the same parser."""
        parser = cli.build_parser()
        bash_script, fish_script = completion.bash(parser), completion.fish(parser)
        for command in completion.commands(parser):
            for flag in command.flags:
                assert flag in bash_script, (command.path, flag)
                spelled = f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}"
                assert spelled in fish_script, (command.path, flag)

    def test_zsh_uses_the_bash_function(self) -> None:
        """zsh's script loads bashcompinit and registers the same function."""
        script = completion.zsh(cli.build_parser())
        assert script.startswith("#compdef draledger kubectl-draledger\n")
        assert "bashcompinit" in script
        assert "complete -F _draledger" in script

    @pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
    def test_the_command_prints_it(self, shell: str, capsys: pytest.CaptureFixture[str]) -> None:
        """`draledger completion SHELL` prints that shell's script and exits 0."""
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["completion", shell])
        assert 0 == exit_info.value.code
        assert capsys.readouterr().out == completion.script(shell, cli.build_parser())
