"""What a failed request to the bucket means, said in one line as the service said it.

The client's errors carry their whole request chain (the URL, the retry state, the Rust
error's debug form), and their first line often ends before the cause ("HTTP error: error
sending request"). An operator needs the cause as S3 gave it (``NoSuchBucket``,
``AccessDenied``, ``InvalidAccessKeyId``) or as the network did (connection refused to
HOST:PORT), and the push needs to know what to do with it:

- ``FATAL``: no other request of this push will fare better (the bucket is not there, the
  credentials are refused or missing, the service cannot do a conditional create): the push
  ends at once, with that one line;
- ``UNANSWERED``: nothing answered (refused, reset, timed out, no such host): worth a retry,
  and counted by the breaker (``asz.archive.retry.Link``), which ends the push when too many
  in a row meet no answer;
- ``PASSING``: the service answered that it is busy or failed in passing (``SlowDown``,
  5xx): retried, with a pause every worker shares;
- ``OBJECT``: an answer about this one object (not found, a 4xx for this request): it fails
  alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from urllib.parse import urlsplit

from obstore.exceptions import AlreadyExistsError, PreconditionError

__all__ = ["FATAL_CODES", "Failure", "Kind", "no_credentials", "understand"]


class Kind(Enum):
    FATAL = "fatal"
    UNANSWERED = "unanswered"
    PASSING = "passing"
    OBJECT = "object"


_CODE = re.compile(r"<Code>([A-Za-z0-9.]+)</Code>")
_STATUS = re.compile(r"(?:status code|status): (\d{3})")
_URL = re.compile(r"Error performing [A-Z]+ (\S+)")
_CONNECT = re.compile(r'ConnectError\(\s*"([^"]*)",\s*([^\s,()]+)')
_OS_KIND = re.compile(r"kind: (\w+),\s*message: \"([^\"]*)\"")
_METADATA_PATH = "/latest/"
"""Where the instance metadata endpoint answers (``AWS_METADATA_ENDPOINT`` may move its host):
the client asks it for credentials when no other source gave any."""
_CREDENTIAL_HOSTS = {"169.254.169.254", "[fd00:ec2::254]", "169.254.170.2", "169.254.170.23"}

FATAL_CODES = {
    "AccessDenied": "the credentials are not allowed this request",
    "AllAccessDisabled": "all access to the bucket is disabled",
    "AccountProblem": "the account has a problem",
    "AuthorizationHeaderMalformed": "the region is not the bucket's",
    "ExpiredToken": "the session token has expired",
    "InvalidAccessKeyId": "no such access key id",
    "InvalidBucketName": "not a bucket name",
    "InvalidToken": "the session token is not valid",
    "NoSuchBucket": "there is no such bucket",
    "NotImplemented": "the service does not do what asz asks of it (conditional creates)",
    "PermanentRedirect": "the bucket is in another region than the endpoint",
    "SignatureDoesNotMatch": "the secret key does not match the key id",
    "TokenRefreshRequired": "the session token must be refreshed",
}
"""S3 error codes another try of any request would meet again, with what each means."""


@dataclass(frozen=True, slots=True)
class Failure:
    kind: Kind
    said: str
    """The cause in one line, without headers, signatures or bodies."""
    code: str = ""
    """The S3 error code, when the service gave one."""


def understand(err: BaseException) -> Failure:
    """What ``err``, raised by a request to the bucket, means."""
    if isinstance(err, AlreadyExistsError | PreconditionError):
        return Failure(Kind.OBJECT, "the object is there already")
    text = str(err)
    url = _URL.search(text)
    parts = urlsplit(url.group(1)) if url else None
    host = parts.netloc if parts else ""
    if parts and (host in _CREDENTIAL_HOSTS or parts.path.startswith(_METADATA_PATH)):
        return Failure(Kind.FATAL, no_credentials(host), "NoCredentials")
    code = _CODE.search(text)
    status = _STATUS.search(text)
    if code:
        name = code.group(1)
        if name in FATAL_CODES:
            return Failure(Kind.FATAL, f"{name} ({FATAL_CODES[name]})", name)
        number = int(status.group(1)) if status else 0
        kind = Kind.PASSING if number >= 500 or number == 429 or name == "SlowDown" else Kind.OBJECT
        return Failure(kind, f"{name} ({number})" if number else name, name)
    if status:
        number = int(status.group(1))
        if number in (401, 403):
            name = "AccessDenied" if number == 403 else "Unauthenticated"
            return Failure(Kind.FATAL, f"{number}: the credentials are refused", name)
        kind = Kind.PASSING if number >= 500 or number == 429 else Kind.OBJECT
        return Failure(kind, f"the service answered {number}")
    connect = _CONNECT.search(text)
    if connect:
        os_kind = _OS_KIND.search(text[connect.end() :])
        why = os_kind.group(2).lower() if os_kind else connect.group(1)
        return Failure(Kind.UNANSWERED, f"{why} to {connect.group(2)}")
    if isinstance(err, FileNotFoundError):
        return Failure(Kind.OBJECT, "no such object")
    lowered = text.lower()
    for needle, said in (
        ("dns error", "the endpoint's host name does not resolve"),
        ("timed out", "no answer in time"),
        ("connection reset", "the connection was reset"),
        ("connection closed", "the connection was closed before an answer"),
        ("error sending request", "the connection broke before an answer"),
    ):
        if needle in lowered:
            where = f" ({host})" if host else ""
            return Failure(Kind.UNANSWERED, said + where)
    first = text.strip().splitlines()[0] if text.strip() else type(err).__name__
    if isinstance(err, ValueError | TypeError | NotImplementedError):
        return Failure(Kind.FATAL, first)
    return Failure(Kind.UNANSWERED, first)


def no_credentials(host: str) -> str:
    """Where the client looked for credentials, once none of them gave any."""
    return (
        "no credentials found: asz looked in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
        "AWS_WEB_IDENTITY_TOKEN_FILE, AWS_CONTAINER_CREDENTIALS_*, the shared files "
        "(~/.aws/credentials, ~/.aws/config, AWS_PROFILE; with boto3 installed) and the "
        f"instance metadata endpoint {host}, which gave none"
    )
