"""The client that reaches an archive (its location is ``asz.locations.ArchiveUrl``).

The client is obstore's ``S3Store`` (Rust's ``object_store``): it speaks S3 and the services
that copy it (MinIO, Ceph, R2, GCS interoperability), does conditional creates, ranged reads
and listings, and releases the GIL while it waits, so a few threads keep many requests in
flight. Credentials are never asz's: the standard AWS environment variables
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, web identity, the
container and instance endpoints), which the client reads itself, or, when none is set and
boto3 is installed, the shared config and credentials files and ``AWS_PROFILE`` through
boto3's own chain (profiles, SSO, ``credential_process``).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from asz.locations import ArchiveUrl

__all__ = ["chosen_endpoint", "open_bucket_store"]

if TYPE_CHECKING:
    from obstore.store import S3Config, S3Store

_KEY_ENV = "AWS_ACCESS_KEY_ID"
_TIMEOUT = "60s"
_CONNECT_TIMEOUT = "10s"


def open_bucket_store(
    url: ArchiveUrl,
    endpoint: str = "",
    region: str = "",
    env: Mapping[str, str] | None = None,
) -> S3Store:
    """The client for ``url``; ``endpoint`` and ``region`` (from ``[archive]``) win over the
    environment's ``AWS_ENDPOINT_URL`` and ``AWS_REGION``. Its own retries are off: every
    request is retried by ``asz.archive.retry``."""
    from obstore.store import S3Store

    env = os.environ if env is None else env
    config: S3Config = {}
    if endpoint:
        config["endpoint"] = endpoint
    if region:
        config["region"] = region
    provider = None
    if not env.get(_KEY_ENV):
        provider = _profile_credentials(config)
    chosen = chosen_endpoint(endpoint, env)
    client = {
        "timeout": _TIMEOUT,
        "connect_timeout": _CONNECT_TIMEOUT,
        "allow_http": str(chosen).startswith("http://"),
    }
    return S3Store(
        url.bucket,
        prefix=url.prefix or None,
        config=config,
        client_options=client,  # type: ignore[arg-type]
        retry_config={"max_retries": 0},
        credential_provider=provider,
    )


def chosen_endpoint(endpoint: str = "", env: Mapping[str, str] | None = None) -> str:
    """The endpoint the client speaks to: ``[archive] endpoint``, else the environment's;
    "" for AWS's own."""
    env = os.environ if env is None else env
    return endpoint or env.get("AWS_ENDPOINT_URL") or env.get("AWS_ENDPOINT", "")


def _profile_credentials(config: S3Config) -> Any:
    """boto3's credential chain (the shared files, ``AWS_PROFILE``, SSO), when boto3 is there
    and finds credentials; else None, and the client's own chain (web identity, the container
    and instance endpoints) is tried."""
    try:
        boto3 = importlib.import_module("boto3")  # optional: only for the shared files
        from obstore.auth.boto3 import Boto3CredentialProvider
    except ImportError:
        return None
    session = boto3.Session()
    if session.get_credentials() is None:
        return None
    if session.region_name and "region" not in config:
        config["region"] = session.region_name
    return Boto3CredentialProvider(session)
