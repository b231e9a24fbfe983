"""Where the log's signing key and the accepted verification keys come from."""

from __future__ import annotations

import base64
import functools
import os

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from django.conf import settings

from apps.ledger.chain import SigningKey, key_id_for, public_key_from_b64, signing_key_from_seed


@functools.cache
def signing_key() -> SigningKey:
    """
    Return the key new entries are signed with.

    `WAYPOINT_SIGNING_KEY` (a base64 Ed25519 seed) in production; otherwise a key generated once
    into the data directory, so a development checkout keeps verifying across restarts.
    """
    if settings.WAYPOINT_SIGNING_KEY:
        return signing_key_from_seed(settings.WAYPOINT_SIGNING_KEY)
    path = settings.DATA_DIR / "signing.key"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(base64.b64encode(os.urandom(32)).decode("ascii"))
        tmp.chmod(0o600)
        try:
            os.link(tmp, path)  # atomic: two processes starting together agree on one key
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    return signing_key_from_seed(path.read_text())


@functools.cache
def verification_keys() -> dict[str, Ed25519PublicKey]:
    """Return every public key whose signatures verify: the current one and retired ones."""
    keys = {signing_key().key_id: signing_key().public}
    for public_b64 in settings.WAYPOINT_VERIFY_KEYS:
        public = public_key_from_b64(public_b64)
        keys[key_id_for(public)] = public
    return keys
