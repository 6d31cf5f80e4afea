"""A record's parts: ConfigMaps it owns that hold detail too large for the record itself (a fleet's node table).

Each holds one JSON document, replaced whole, and carries the record's uid in a label, so the record
informer caches the parts beside the record (without waking the job's loop) and deleting the record
deletes them. A pass reads them from the cache, parsed once per version.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from airflow_broadcast.cluster.api_errors import AlreadyExists, Conflict, NotFound
from airflow_broadcast.cluster.informers import Informer
from airflow_broadcast.cluster.job_records import JOB_LABEL, MANAGED_BY, MANAGED_BY_LABEL, record_path, records_path
from airflow_broadcast.cluster.kube_client import JsonDict, KubeClient
from airflow_broadcast.reconcilers.observed import RECORD_PART_LABEL

PART_INDEX = "part/"  # the record informer's index of a record's parts: "part/<record uid>"
DOCUMENT_KEY = "part"
_PARSE_CACHE_SIZE = 4096

_parsed: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}  # (namespace, name) → (resourceVersion, document)


def record_index(obj: Mapping[str, Any]) -> str:
    """A record is indexed by its job name (what wakes its loop), a part by its record's uid (never a wake-up)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    part_of = labels.get(RECORD_PART_LABEL)
    return f"{PART_INDEX}{part_of}" if part_of else str(labels.get(JOB_LABEL, ""))


def parse_part(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A part's document ({} when unreadable: what it held is rebuilt from the children)."""
    try:
        document = json.loads(str((raw.get("data") or {}).get(DOCUMENT_KEY) or "{}"))
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}


def cached_parts(records: Informer[JsonDict] | None, uid: str) -> dict[str, dict[str, Any]]:
    """name → document of the record's parts in the cache; each version of a part is parsed once."""
    if records is None:
        return {}
    parts: dict[str, dict[str, Any]] = {}
    for raw in records.items(f"{PART_INDEX}{uid}"):
        meta = raw.get("metadata") or {}
        name, version = str(meta.get("name", "")), str(meta.get("resourceVersion", ""))
        key = (str(meta.get("namespace", "")), name)
        hit = _parsed.get(key)
        if hit is None or hit[0] != version or not version:
            if len(_parsed) >= _PARSE_CACHE_SIZE:
                _parsed.clear()
            hit = _parsed[key] = (version, parse_part(raw))
        parts[name] = hit[1]
    return parts


def part_manifest(record: Mapping[str, Any], name: str, document: Mapping[str, Any]) -> JsonDict:
    meta = record.get("metadata") or {}
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": meta["namespace"],
                     "labels": {MANAGED_BY_LABEL: MANAGED_BY, RECORD_PART_LABEL: meta["uid"]},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": meta["name"],
                                          "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}]},
        "data": {DOCUMENT_KEY: json.dumps(dict(document), sort_keys=True, separators=(",", ":"))},
    }


async def write_parts(client: KubeClient, record: Mapping[str, Any], parts: Mapping[str, Mapping[str, Any]],
                      records: Informer[JsonDict] | None) -> bool:
    """Create or replace each part (with the cached resourceVersion); False when another writer got there first.

    The loser reads the part into the cache, so that the pass it recomputes starts from the winner's version.
    """
    outcomes = await asyncio.gather(*(_write(client, record, name, document, records)
                                      for name, document in parts.items()))
    return all(outcomes)


async def _write(client: KubeClient, record: Mapping[str, Any], name: str, document: Mapping[str, Any],
                 records: Informer[JsonDict] | None) -> bool:
    namespace = str((record.get("metadata") or {})["namespace"])
    cached = records.values.get(name) if records is not None else None
    body = part_manifest(record, name, document)
    try:
        if cached is None:
            written = await client.create(records_path(namespace), body)
        else:
            body["metadata"]["resourceVersion"] = (cached.get("metadata") or {}).get("resourceVersion")
            written = await client.replace(record_path(namespace, name), body)
    except (AlreadyExists, Conflict, NotFound):
        try:
            written = await client.get(record_path(namespace, name))
        except NotFound:
            if records is not None:
                records.remove(name)
            return False
        if records is not None:
            records.upsert(written, notify=False)
        return False
    if records is not None:
        records.upsert(written, notify=False)
    return True


async def read_parts(client: KubeClient, namespace: str, record_uid: str) -> dict[str, dict[str, Any]]:
    """name → document of every part of a record, read from the API server (for readers outside the engine)."""
    items, _ = await client.list_all(records_path(namespace), labelSelector=f"{RECORD_PART_LABEL}={record_uid}")
    return {str(item["metadata"]["name"]): parse_part(item) for item in items}
