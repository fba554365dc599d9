"""Who is calling: bearer keys from config or HINDSIGHT_API_KEY, each scoped to banks and to read or read-write."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

from hindsight.config.server import ENV_API_KEY, ApiKey
from hindsight.errors import AccessDeniedError, ConfigError, NotAuthenticatedError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Caller:
    """The key a request came with: its name, the banks it reaches (None: every bank), and whether it may write."""

    name: str
    banks: frozenset[str] | None
    write: bool

    def check(self, bank_id: str | None, write: bool) -> None:
        """AccessDeniedError unless this key may read (or write) the bank; bank None is every bank (a listing)."""
        if write and not self.write:
            raise AccessDeniedError(f"key {self.name!r} is read-only")
        if self.banks is not None and bank_id is not None and bank_id not in self.banks:
            raise AccessDeniedError(f"key {self.name!r} does not reach bank {bank_id!r}")

    def visible(self, bank_ids: list[str]) -> list[str]:
        return bank_ids if self.banks is None else [b for b in bank_ids if b in self.banks]


# A server with no keys: whoever can reach its loopback address is the local user.
LOCAL = Caller("local", None, True)


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()


class Keys:
    """The configured keys, found by the SHA-256 of a request's bearer token."""

    def __init__(self, keys: list[ApiKey], environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self._by_digest: dict[bytes, Caller] = {}
        for k in keys:
            secret = k.key if k.key is not None else env.get(k.key_env or "")
            if not secret:
                raise ConfigError(f"server.keys: {k.name!r} reads its key from ${k.key_env}, which is not set")
            self._add(secret, Caller(k.name, None if k.banks == "*" else frozenset(k.banks), k.access == "write"))
        if secret := env.get(ENV_API_KEY):
            self._add(secret, Caller(ENV_API_KEY, None, True))

    def _add(self, secret: str, caller: Caller) -> None:
        if len(secret) < 16:
            raise ConfigError(f"server key {caller.name!r} is shorter than 16 characters")
        digest = _digest(secret)
        if digest in self._by_digest:
            raise ConfigError(f"server keys {self._by_digest[digest].name!r} and {caller.name!r} are the same key")
        self._by_digest[digest] = caller

    @property
    def enabled(self) -> bool:
        return bool(self._by_digest)

    def caller(self, authorization: str | None) -> Caller:
        """The caller of an `Authorization` header; NotAuthenticatedError when keys are on and it names none."""
        if not self.enabled:
            return LOCAL
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise NotAuthenticatedError("this server needs 'Authorization: Bearer <key>'")
        # Looked up by digest: the time a lookup takes says nothing about the secret.
        caller = self._by_digest.get(_digest(token.strip()))
        if caller is None:
            raise NotAuthenticatedError("unknown key")
        return caller
