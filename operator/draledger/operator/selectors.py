"""Label selectors (the equality- and set-based syntax of kubectl), evaluated on plain label dicts."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

_SET = re.compile(r"^\s*([^\s!=,()]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")

Matcher = Callable[[Mapping[str, str]], bool]


def _split(selector: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in selector:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def _term(term: str) -> Matcher:
    match = _SET.match(term)
    if match:
        key, op, values = match[1], match[2], {v.strip() for v in match[3].split(",") if v.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    for op in ("!=", "==", "="):
        if op in term:
            key, value = (s.strip() for s in term.split(op, 1))
            if op == "!=":
                return lambda labels: labels.get(key) != value
            return lambda labels: labels.get(key) == value
    if term.startswith("!"):
        key = term[1:].strip()
        return lambda labels: key not in labels
    return lambda labels: term in labels


def parse_selector(selector: str) -> Matcher:
    """A matcher for ``selector``; the empty selector matches everything."""
    terms = [_term(t) for t in _split(selector)]
    return lambda labels: all(term(labels) for term in terms)
