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
   naming the kubeconfig and the cause, in one line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import kopf


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
        if in_cluster:
            kubernetes.config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            path = source.kubeconfig or None
            if path is not None and not os.path.isfile(path):
                raise CredentialsError(f"cannot use the kubeconfig {path}: no such file")
            kubernetes.config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=path, context=source.context or None, client_configuration=configuration
            )
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
    )
