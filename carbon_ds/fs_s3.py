"""Conditional writes on S3, the one thing ``pyarrow.fs.S3FileSystem`` cannot do (it ignores ``If-*`` headers).

Two primitives, both single requests the store itself decides, so two writers can never both succeed:

* ``create``: PUT with ``If-None-Match: *`` (the object must not exist; else 412 Precondition Failed);
* ``replace``: PUT with ``If-Match: <ETag>`` (the object must still be the version that was read).

Needs botocore (the ``s3`` extra: ``pip install 'carbon-ds[s3]'``). ``carbon_ds.fs`` loads this module only
for an S3 file system, so local and HDFS users never import botocore. Settings (endpoint, keys, region)
are taken from the pyarrow file system, so both clients talk to the same store as the same user.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import botocore.session
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from carbon_ds.errors import CarbonError

# 412: the condition failed; 409 ConditionalRequestConflict: another conditional write to the key is in flight.
_LOST = {"PreconditionFailed", "ConditionalRequestConflict", "412", "409"}
# The store does not know conditional writes (older S3-compatible servers).
_UNSUPPORTED = {"NotImplemented", "501"}


class ConditionalWritesUnsupported(CarbonError):
    """The store answered that it does not implement conditional PUTs."""


def _code(e: ClientError) -> str:
    return str(e.response.get("Error", {}).get("Code", "")) or str(
        e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))


class ConditionalS3:
    """A botocore S3 client configured like a ``pyarrow.fs.S3FileSystem``; paths are ``bucket/key``."""

    Unsupported = ConditionalWritesUnsupported

    def __init__(self, options: dict[str, Any], region: str):
        endpoint = options.get("endpoint_override") or None
        if endpoint and "://" not in endpoint:
            endpoint = f"{options.get('scheme') or 'https'}://{endpoint}"
        kwargs: dict[str, Any] = {"endpoint_url": endpoint, "region_name": region or None}
        if options.get("access_key"):
            kwargs.update(aws_access_key_id=options["access_key"], aws_secret_access_key=options.get("secret_key"),
                          aws_session_token=options.get("session_token") or None)
        addressing = "virtual" if options.get("force_virtual_addressing") else "auto"
        # Checksums only where the API requires them: many S3-compatible stores reject botocore's defaults.
        config = Config(s3={"addressing_style": addressing}, retries={"max_attempts": 3, "mode": "standard"},
                        request_checksum_calculation="when_required", response_checksum_validation="when_required")
        if options.get("anonymous"):
            config = config.merge(Config(signature_version=botocore.UNSIGNED))
        self.client = botocore.session.get_session().create_client("s3", config=config, **kwargs)

    @staticmethod
    def _split(path: str) -> tuple[str, str]:
        bucket, _, key = path.partition("/")
        return bucket, key

    def _put(self, path: str, data: bytes, **condition: str) -> bool:
        bucket, key = self._split(path)
        try:
            self.client.put_object(Bucket=bucket, Key=key, Body=data, **condition)
        except ClientError as e:
            code = _code(e)
            if code in _LOST:
                return False
            if code in _UNSUPPORTED:
                raise ConditionalWritesUnsupported(f"s3://{path}: the store does not implement conditional "
                                                   f"PUT ({code})") from None
            raise CarbonError(f"conditional PUT of s3://{path} failed: {code} {e}") from None
        except BotoCoreError as e:
            raise CarbonError(f"conditional PUT of s3://{path} failed: {e}") from None
        return True

    def create(self, path: str, data: bytes) -> bool:
        """Create ``bucket/key`` only if absent; True when this call created it."""
        return self._put(path, data, IfNoneMatch="*")

    def replace(self, path: str, data: bytes, etag: str | None) -> bool:
        """Replace the object only if it is still version ``etag`` (None: only if it is still absent)."""
        if etag is None:
            return self.create(path, data)
        return self._put(path, data, IfMatch=etag)

    def delete(self, path: str) -> None:
        """Delete the object; errors are ignored (used for probe objects only)."""
        bucket, key = self._split(path)
        try:
            self.client.delete_object(Bucket=bucket, Key=key)
        except (ClientError, BotoCoreError):
            pass

    def read(self, path: str) -> tuple[bytes, str] | None:
        """(content, ETag) of the object, or None when it does not exist."""
        bucket, key = self._split(path)
        try:
            got = self.client.get_object(Bucket=bucket, Key=key)
        except ClientError as e:
            if _code(e) in {"NoSuchKey", "404"}:
                return None
            raise CarbonError(f"GET of s3://{path} failed: {_code(e)} {e}") from None
        with got["Body"] as body:
            return body.read(), got["ETag"]


_clients: dict[tuple, ConditionalS3] = {}
_guard = threading.Lock()


def client_for(options: dict[str, Any], region: str) -> ConditionalS3:
    """One client per process and configuration (botocore clients are thread-safe and costly to build, but
    a forked child must not share its parent's connections)."""
    key = (os.getpid(), region, *sorted((k, repr(v)) for k, v in options.items()))
    with _guard:
        if key not in _clients:
            _clients[key] = ConditionalS3(options, region)
        return _clients[key]
