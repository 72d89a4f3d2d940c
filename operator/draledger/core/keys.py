"""The keys the state indexes objects by: one type per kind of key, so that a pod's key is never taken for a claim's.

Rules:
1. A node is known by its name; a pod and a ResourceClaim by (namespace, name); a pool by (driver, pool name).
2. Keys are built once per view read (views keep theirs: ``PodView.key``, ``ClaimView.key``, ``SliceView.pool_key``)
   and shared by every index; these types cost nothing at run time.
"""

from __future__ import annotations

from typing import NewType

NodeName = NewType("NodeName", str)
PodKey = NewType("PodKey", tuple[str, str])
ClaimKey = NewType("ClaimKey", tuple[str, str])
PoolKey = NewType("PoolKey", tuple[str, str])
