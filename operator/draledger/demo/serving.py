"""``draledger demo --serve``: after the story, keep the cluster and the operator up for the real ``kubectl``.

Rules:
1. The kubeconfig is written only here, only with ``--serve`` (its folder was checked before the story:
   :mod:`draledger.demo.preflight`).
2. Serving ends with SIGINT/SIGTERM or when the operator stops (:class:`draledger.demo.waiting.Stopped`).
"""

from __future__ import annotations

import shlex

from draledger.demo.emulator import write_kubeconfig
from draledger.demo.screen import Screen
from draledger.demo.waiting import DemoFailed, Pacer

__all__ = ["serve"]


def instructions(url: str, kubeconfig: str) -> str:
    """What to try against the served cluster, with the kubeconfig's path quoted for a shell."""
    quoted = shlex.quote(kubeconfig)
    k = f"kubectl --kubeconfig {quoted}"
    return "\n".join(
        [
            f"The cluster stays up at {url} with the operator running. Kubeconfig: {kubeconfig}",
            "Try, in another terminal:",
            f"  {k} get nal",
            f"  {k} describe nal worker-1",
            f"  {k} get pods -A",
            f"  {k} get nodes,pods,resourceslices,resourceclaims -A -o json > dump.json"
            " && draledger audit -f dump.json",
            f"  draledger freeze --kubeconfig {quoted} --node worker-1 --reason test && {k} get nal",
            "Press Ctrl-C to stop.",
        ]
    )


async def serve(pacer: Pacer, screen: Screen, url: str, kubeconfig: str) -> None:
    """Write the kubeconfig, say how to use it, and wait for a signal (raises ``Stopped``)."""
    try:
        path = write_kubeconfig(kubeconfig, url)
    except OSError as error:  # checked before the story (preflight), but the folder may have gone since
        raise DemoFailed(f"cannot write --kubeconfig {kubeconfig}: {error.strerror or error}") from None
    screen.say(instructions(url, str(path)))
    await pacer.idle()
