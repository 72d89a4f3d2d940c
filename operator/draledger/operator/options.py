"""Options declared once. Each option is one ``Option``: its flag, its ``DRALEDGER_*`` variable, its kind (type,
choices, range), its default and its help. Everything else is derived from that one declaration: the flag of
every command that takes it, the lookup of its variable, ``--help``, shell completion and the table of
docs/configuration.md.

Rules:
1. A flag given on the command line wins; else the variable, when it is set; else the default.
2. A variable goes through the same parser as the flag: the same type, choices and range, the empty text
   included (``DRALEDGER_NODE_SELECTOR=`` is ``--node-selector ''``). A bad value ends the command with one
   line naming the variable and the value (``ConfigError``, exit 2); a bad flag is argparse's usage error,
   naming the flag (exit 2).
3. Variables are read lazily, only for the options of the command that runs (``resolve``): a command never
   fails on an option it does not take, so ``DRALEDGER_COALESCE_WINDOW=abc draledger audit ...`` audits.
4. One duration syntax for every duration: a number of seconds (``15``, ``1.5``), or Go's as kube-scheduler's
   flags take it (``15s``, ``1m``, ``1m30s``, ``500ms``, ``1h``).
5. A kind's parser raises ``ValueError`` with the reason alone; its caller names the flag or the variable.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

ENV_PREFIX = "DRALEDGER_"
DECLARED = "_declared_options"  # the namespace attribute naming the options of the command that runs


class ConfigError(ValueError):
    """A configuration value that cannot be used: one line naming the variable or flags and the cause."""


@dataclass(frozen=True, slots=True)
class Kind:
    """How a text becomes a value (``parse``), and how ``--help`` and the docs name and show it."""

    describe: str  # the docs' "value" column: "duration > 0", "integer 0 to 65535", "one of ..."
    parse: Callable[[str], Any]
    show: Callable[[Any], str] = str
    choices: tuple[str, ...] = ()
    metavar: str | None = None

    def flag_type(self) -> Callable[[str], Any]:
        """``parse`` for argparse: a bad value names itself; argparse adds the flag (rule 2)."""

        def convert(text: str) -> Any:
            try:
                return self.parse(text)
            except ValueError as error:
                raise argparse.ArgumentTypeError(f"{text!r}: {error}") from None

        return convert


_UNITS = {"ns": Decimal("1e-9"), "us": Decimal("1e-6"), "µs": Decimal("1e-6"), "ms": Decimal("0.001"),
          "s": Decimal(1), "m": Decimal(60), "h": Decimal(3600)}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def seconds(text: str) -> Decimal:
    """``15`` or ``1.5`` (seconds), or Go's ``time.ParseDuration`` spelling (``15s``, ``1m30s``, ``500ms``)."""
    spelled = text.strip()
    try:
        return Decimal(spelled) if re.fullmatch(r"\d+(?:\.\d*)?|\.\d+", spelled) else _go_duration(spelled)
    except InvalidOperation:
        raise ValueError("not a duration") from None


def _go_duration(text: str) -> Decimal:
    parts, end = [], 0
    for match in _PART.finditer(text):
        if match.start() != end:
            break
        parts.append(Decimal(match[1]) * _UNITS[match[2]])
        end = match.end()
    if not parts or end != len(text):
        raise ValueError("not a duration (a number of seconds, or e.g. 15s, 1m, 1m30s, 500ms)")
    return sum(parts, Decimal(0))


def _shown_seconds(value: float) -> str:
    return f"{value:g}s"


def duration(*, zero: bool = False, whole: bool = False) -> Kind:
    """A positive duration (rule 4), or zero too when ``zero``: float seconds, or int seconds when ``whole``."""
    bound = ">= 0" if zero else "> 0"

    def parse(text: str) -> float | int:
        value = seconds(text)
        if value < 0 or (value == 0 and not zero):
            raise ValueError(f"must be a duration {bound}")
        if whole:
            if value != value.to_integral_value():
                raise ValueError("must be a whole number of seconds")
            return int(value)
        return float(value)

    what = "duration in whole seconds" if whole else "duration"
    examples = "`30`, `30s`, `1m`" if whole else "`15`, `15s`, `1m30s`, `500ms`"
    return Kind(f"{what} {bound}: {examples}", parse, _shown_seconds, metavar="DURATION")


def integer(low: int, high: int | None = None, metavar: str = "N") -> Kind:
    """An integer from ``low`` to ``high`` (no upper bound when None)."""
    span = f"from {low} to {high}" if high is not None else f">= {low}"

    def parse(text: str) -> int:
        try:
            value = int(text.strip(), 10)
        except ValueError:
            raise ValueError(f"not an integer {span}") from None
        if value < low or (high is not None and value > high):
            raise ValueError(f"must be an integer {span}")
        return value

    return Kind(f"integer {span}", parse, metavar=metavar)


def choice(*values: str) -> Kind:
    """One of ``values``, exactly as written."""

    def parse(text: str) -> str:
        if text not in values:
            raise ValueError(f"not one of {', '.join(values)}")
        return text

    return Kind("one of " + ", ".join(f"`{v}`" for v in values), parse, choices=values)


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("not a boolean (true or false)")


BOOLEAN = Kind("boolean: `true` or `false` (`1`/`0`, `yes`/`no`, `on`/`off`)", _boolean, lambda v: "on" if v else "off")


def _text(text: str) -> str:
    return text


TEXT = Kind("text", _text)


def _url(text: str) -> str:
    if text and not re.fullmatch(r"https?://[^/\s]+(/\S*)?", text):
        raise ValueError("not an http:// or https:// URL")
    return text


URL = Kind("`http://` or `https://` URL, or empty", _url, metavar="URL")


def _name(text: str) -> str:
    if not text.strip() or "," in text:
        raise ValueError("not one name")
    return text.strip()


NAME = Kind("a name", _name, metavar="NAME")


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


NAMES = Kind("comma-separated names, or empty", _names, ",".join, metavar="NAME[,NAME]")


@dataclass(frozen=True, slots=True)
class Option:
    """One option: everything the flag, the variable, ``--help`` and the docs say of it."""

    flag: str  # "--coalesce-window"
    kind: Kind
    default: Any
    help: str  # one line for --help, and the docs' first sentence
    commands: tuple[str, ...] = ("run",)
    details: str = ""  # what the docs add to the help
    field: str = ""  # the OperatorConfig field ("": the flag's name); "leader_election.x" for the election's
    env: str = ""  # "": DRALEDGER_ and the flag's name
    repeat: bool = False  # the flag may be given again, each a value of ``kind``; the variable is comma-separated
    default_text: str = ""  # how the default is shown ("": ``kind.show``)
    per_command: tuple[tuple[str, str], ...] = ()  # (command, what the help adds for it)
    metavar: str = ""  # "": the kind's

    @property
    def name(self) -> str:
        return self.flag.removeprefix("--")

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")

    @property
    def variable(self) -> str:
        return self.env or ENV_PREFIX + self.dest.upper()

    @property
    def target(self) -> str:
        return self.field or self.dest

    @property
    def shown_default(self) -> str:
        if self.default_text:
            return self.default_text
        if self.repeat:
            return ",".join(self.kind.show(v) for v in self.default)
        return self.kind.show(self.default)

    def help_for(self, command: str) -> str:
        note = dict(self.per_command).get(command)
        return f"{self.help}; {note}" if note else self.help

    def add_to(self, parser: argparse.ArgumentParser, command: str) -> None:
        """The flag of ``command``; ``None`` when it is not given, so that ``resolve`` knows (rule 1)."""
        text = f"{self.help_for(command)} (default: {self.shown_default}; env {self.variable})".replace("%", "%%")
        if self.kind is BOOLEAN:
            parser.add_argument(self.flag, dest=self.dest, action=argparse.BooleanOptionalAction, default=None,
                                help=text)
            return
        parser.add_argument(self.flag, dest=self.dest, type=self.kind.flag_type(), default=None, help=text,
                            action="append" if self.repeat else "store", choices=self.kind.choices or None,
                            metavar=None if self.kind.choices else self.metavar or self.kind.metavar)

    def from_environment(self, environ: Mapping[str, str]) -> Any:
        """The variable's value through the flag's parser, or the default when it is not set (rules 1, 2)."""
        text = environ.get(self.variable)
        if text is None:
            return self.default
        try:
            if self.repeat:
                return tuple(self.kind.parse(item) for item in _names(text))
            return self.kind.parse(text)
        except ValueError as error:
            raise ConfigError(f"{self.variable}={text!r}: {error}") from None


def add_options(parser: argparse.ArgumentParser, command: str, options: Iterable[Option]) -> None:
    """The flags of the options ``command`` takes, remembered for ``resolve``."""
    taken = tuple(o for o in options if command in o.commands)
    for option in taken:
        option.add_to(parser, command)
    parser.set_defaults(**{DECLARED: taken})


def resolve(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> None:
    """Fill in, for the options of the command that runs only, what no flag gave: its variable, else its
    default (rules 1 and 3). ``ConfigError`` on a variable that cannot be used. Resolving twice changes nothing."""
    env = os.environ if environ is None else environ
    for option in getattr(args, DECLARED, ()):
        value = getattr(args, option.dest, None)
        if value is None:
            value = option.from_environment(env)
        elif option.repeat:
            value = tuple(value)
        setattr(args, option.dest, value)


def markdown_table(options: Iterable[Option]) -> str:
    """docs/configuration.md's table, one row per option, in declaration order."""
    rows = ["| flag | environment | value | default | commands | what it does |", "|---|---|---|---|---|---|"]
    for o in options:
        flag = f"`{o.flag}` / `--no-{o.name}`" if o.kind is BOOLEAN else f"`{o.flag}`"
        if o.repeat:
            flag += " (repeatable)"
        env = f"`{o.variable}`" + (" (comma-separated)" if o.repeat else "")
        helps = [o.help] + [f"`{command}`: {text}" for command, text in o.per_command]
        what = "; ".join(h.rstrip(".") for h in helps)
        what = f"{what}. {o.details}" if o.details else what
        default = o.default_text or (f"`{o.shown_default}`" if o.shown_default else "empty")
        cells = (flag, env, o.kind.describe, default,
                 ", ".join(o.commands), what.replace("|", "\\|"))
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"
