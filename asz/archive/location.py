"""Where an archive is (``s3://bucket/prefix``) and the client that reaches it.

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
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from obstore.store import S3Config, S3Store

SCHEME = "s3://"
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_KEY_ENV = "AWS_ACCESS_KEY_ID"
_TIMEOUT = "60s"
_CONNECT_TIMEOUT = "10s"


class ArchiveError(ValueError):
    """An archive location or setting that cannot be used."""


def is_archive(location: str) -> bool:
    return location.startswith(SCHEME)


@dataclass(frozen=True, slots=True)
class ArchiveUrl:
    """A bucket and the prefix under it that is the root (``""`` for the whole bucket)."""

    bucket: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> ArchiveUrl:
        if not is_archive(url):
            raise ArchiveError(f"{url}: an archive is named s3://bucket/prefix")
        bucket, _, prefix = url[len(SCHEME) :].partition("/")
        prefix = prefix.strip("/")
        if not _BUCKET.match(bucket):
            raise ArchiveError(f"{url}: {bucket!r} is not a bucket name")
        if any(part in ("", ".", "..") for part in prefix.split("/")) and prefix:
            raise ArchiveError(f"{url}: the prefix has an empty, . or .. part")
        return cls(bucket, prefix)

    def __str__(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.prefix}" if self.prefix else f"{SCHEME}{self.bucket}"

    def key(self, path: str) -> str:
        """The object key of a path relative to the root, as the bucket's owner sees it."""
        return f"{self.prefix}/{path}" if self.prefix else path


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
