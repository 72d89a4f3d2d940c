"""The operator's structlog setup: every logger follows the latest configuration.

A module-level logger cached at its first line kept the processors of the configuration it first saw: after a
second ``configure`` in the same process (the demo, then the operator; or one test after another), its lines went
to the first configuration's stream, which may be closed, and ``structlog.testing.capture_logs`` missed them."""

from __future__ import annotations

import logging

import structlog
import structlog.testing

from draledger.operator import logs


def test_a_logger_used_before_a_second_configuration_follows_it() -> None:
    log = structlog.get_logger("draledger")
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        logs.configure("json", "info")
        log.info("first line")  # the first use: a cached logger would keep this configuration
        logs.configure("console", "info")
        with structlog.testing.capture_logs() as captured:
            log.warning("second line", node="n1")
        assert [{"event": "second line", "node": "n1", "log_level": "warning"}] == captured
    finally:
        structlog.reset_defaults()
        root.handlers[:], root.level = handlers, level
