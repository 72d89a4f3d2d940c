"""Credentials, as users have them: an explicit URL, the in-cluster ServiceAccount, or a kubeconfig.

Rules:
1. ``--server URL`` wins (the demo, tests): no authentication, TLS unverified only for ``http://``.
2. Otherwise the ``kubernetes`` package loads them, as kubectl would: the in-cluster ServiceAccount when
   there is one and no kubeconfig was named, else the kubeconfig (``--kubeconfig``, ``$KUBECONFIG``,
   ``~/.kube/config``) and its context (``--context``, else the current one), with client certificates,
   tokens, token files and ``exec`` credential plugins (which Kopf's own minimal loader does not run).
3. Loading again gives fresh credentials (an exec plugin runs again; a rotated token file is read again):
   every client of the operator calls ``credentials`` again after a 401, instead of failing for ever.
4. Anything unusable (no file, bad YAML, an unknown context, a plugin that fails) is a ``CredentialsError``
   naming the kubeconfig and the cause, in one line. The ``kubernetes`` package itself only logs a failing
   exec plugin and carries on without credentials (every request would then go out anonymous); its error
   is caught from the log and raised here instead.
5. ``$KUBECONFIG`` is read at each call: the package reads it once, when it is imported.
6. Credentials that say when they expire (an exec plugin's ``expirationTimestamp``; an OIDC or GCP provider's
   expiry) carry ``expiration``: that time less ``EARLY``. Kopf logs in again once it has passed, and so does
   ``KubeApi`` before its next request, so no request goes out with a token about to expire; the 401 path
   stays for tokens revoked early.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass

import kopf

DEFAULT_KUBECONFIG = "~/.kube/config"
EARLY = datetime.timedelta(seconds=30)  # credentials count as expired this long before they say (rule 6)


class CredentialsError(Exception):
    """No usable credentials (the message names the source and the cause)."""


@dataclass(frozen=True, slots=True)
class Source:
    """Where credentials come from: flags as the user gave them."""

    server: str = ""
    kubeconfig: str = ""
    context: str = ""

    def describe(self) -> str:
        if self.server:
            return self.server
        path = self.kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        return f"the kubeconfig {path}" + (f" (context {self.context})" if self.context else "")


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


class _PackageErrors(logging.Handler):
    """Collects what the ``kubernetes`` package logs at ERROR while it loads a kubeconfig (rule 4)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if f"{os.sep}kubernetes{os.sep}config{os.sep}" in record.pathname:
            self.messages.append(record.getMessage())


@contextlib.contextmanager
def _package_errors() -> Iterator[_PackageErrors]:
    handler = _PackageErrors()
    root = logging.getLogger()  # the package logs with logging.error(...): the root logger
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


def credentials(source: Source) -> kopf.ConnectionInfo:
    """Fresh credentials from ``source`` (rule 3: call again after a 401)."""
    if source.server:
        return kopf.ConnectionInfo(server=source.server, insecure=source.server.startswith("http://") or None)
    import kubernetes.client
    import kubernetes.config

    configuration = kubernetes.client.Configuration()
    named = source.kubeconfig or source.context or os.environ.get("KUBECONFIG")
    in_cluster = not named and "KUBERNETES_SERVICE_HOST" in os.environ
    try:
        expiry = None
        if in_cluster:
            kubernetes.config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            if source.kubeconfig and not os.path.isfile(source.kubeconfig):
                raise CredentialsError(f"cannot use the kubeconfig {source.kubeconfig}: no such file")
            path = source.kubeconfig or os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG  # rule 5
            with _package_errors() as logged:
                expiry = _load_kubeconfig(path, source.context, configuration)
            if logged.messages:  # e.g. "exec: process returned 1. <its stderr>"
                raise CredentialsError(f"cannot use {source.describe()}: {' '.join(logged.messages[0].split())}")
    except CredentialsError:
        raise
    except Exception as error:  # ConfigException, YAML errors, a failing exec plugin: one line, named
        raise CredentialsError(f"cannot use {source.describe()}: {_one_line(error)}") from None
    header = configuration.get_api_key_with_prefix("BearerToken") or configuration.get_api_key_with_prefix(
        "authorization"
    )
    scheme, _, token = (header or "").partition(" ")
    if header and not token:  # a bare token without a scheme
        scheme, token = "", header
    return kopf.ConnectionInfo(
        server=configuration.host,
        ca_path=configuration.ssl_ca_cert,  # may be a temporary file written by the loader
        insecure=not configuration.verify_ssl,
        username=configuration.username or None,
        password=configuration.password or None,
        scheme=scheme or ("Bearer" if token else None),
        token=token or None,
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
        expiration=expiry - EARLY if expiry is not None else None,
    )


def _load_kubeconfig(path: str, context: str, configuration: object) -> datetime.datetime | None:
    """What ``kubernetes.config.load_kube_config`` does (the same merge of ``path``'s files, the same loader
    and persister), keeping the loader to read when its credentials expire (rule 6): the function drops it."""
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.kube_config import KubeConfigLoader, KubeConfigMerger

    merged = KubeConfigMerger(path)  # type: ignore[no-untyped-call]
    if merged.config is None:
        raise ConfigException("Invalid kube-config file. No configuration found.")
    loader = KubeConfigLoader(  # type: ignore[no-untyped-call]
        config_dict=merged.config, active_context=context or None, config_base_path=None,
        config_persister=merged.save_changes,
    )
    loader.load_and_set(configuration)  # type: ignore[no-untyped-call]
    expiry = getattr(loader, "expiry", None)
    if not isinstance(expiry, datetime.datetime):
        return None
    return expiry if expiry.tzinfo is not None else expiry.replace(tzinfo=datetime.UTC)
