"""Ed25519 signatures of challenge boards, and the instructor's private record of the boards they scored.

The instructor's signing key is a PEM (PKCS #8) file kept outside every board: by default
``$XDG_CONFIG_HOME/jtk/challenge-signing-key.pem`` (``~/.config/jtk/…``), created with mode 0600 on first use.
Its public key is published as 44 characters of base64 (the raw 32 bytes) and named by a short fingerprint:
the first 80 bits of SHA-256 of those bytes, in five groups of four hex digits. Finding another key with a given
fingerprint takes about 2^80 key generations; a board is accepted only if its signature verifies under the
public key given (or under the key its signature file carries, whose fingerprint must be the one given).

The signature file beside a board (:data:`SIGNATURE_FILE`) is JSON: the algorithm, the public key and the
signature (base64) of the board manifest's exact bytes. The manifest records the SHA-256 of every published
file, so one signature covers them all.

The record (:func:`record_board`, :func:`recorded_board`) is a JSON file in the same folder as the default key
(whichever key signed), ``challenge-boards.json`` (mode 0600): for each board manifest the instructor signed (by its SHA-256), the
numerics key of the machine that scored it. The instructor's re-check takes its tolerance from there, never from
the board.
"""
from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import json
import os
import pathlib
import stat

ALGORITHM = "ed25519"
SIGNATURE_FILE = "leaderboard.sig"
KEY_FILE = "challenge-signing-key.pem"
RECORD_FILE = "challenge-boards.json"
FINGERPRINT_HEX = 20  # 80 bits of SHA-256 of the raw public key


def config_dir() -> pathlib.Path:
    """The instructor's jtk folder: ``$XDG_CONFIG_HOME/jtk``, else ``~/.config/jtk``."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return pathlib.Path(base) / "jtk"


def default_key_path() -> pathlib.Path:
    """Where ``jtk challenge score`` keeps the signing key unless given one."""
    return config_dir() / KEY_FILE


@dataclasses.dataclass(frozen=True)
class SigningKey:
    """The instructor's key as loaded: the private key, its public key (base64) and fingerprint, where it is."""

    private: object  # cryptography's Ed25519PrivateKey
    public_key: str
    fingerprint: str
    path: pathlib.Path
    created: bool


def _raw_public(private) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def fingerprint(public_raw: bytes) -> str:
    """The short name of a public key: 80 bits of its SHA-256, as ``xxxx-xxxx-xxxx-xxxx-xxxx``."""
    digest = hashlib.sha256(public_raw).hexdigest()[:FINGERPRINT_HEX]
    return "-".join(digest[i:i + 4] for i in range(0, FINGERPRINT_HEX, 4))


def _normal_fingerprint(text: str) -> str:
    """A fingerprint as given (any case, with or without dashes or spaces) in its printed form."""
    if not isinstance(text, str):
        raise TypeError(f"fingerprint must be a string, got {type(text).__name__}")
    digits = "".join(ch for ch in text.lower() if ch not in "- :")
    if len(digits) != FINGERPRINT_HEX or any(ch not in "0123456789abcdef" for ch in digits):
        raise ValueError(f"fingerprint must be {FINGERPRINT_HEX} hex digits (as printed by jtk challenge score, e.g. "
                         f"'1a2b-3c4d-5e6f-7a8b-9c0d'), got {text!r}")
    return "-".join(digits[i:i + 4] for i in range(0, FINGERPRINT_HEX, 4))


def load_signing_key(path=None) -> SigningKey:
    """The instructor's private key at ``path`` (default :func:`default_key_path`), created (0600) if missing.

    Raises:
      ValueError: the path is not a regular file, is readable or writable by others (it must be private), or
        does not hold an Ed25519 private key.
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    path = default_key_path() if path is None else pathlib.Path(path)
    created = False
    if not os.path.lexists(path):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        private = ed25519.Ed25519PrivateKey.generate()
        pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        created = True
    else:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"key must be a regular file holding the signing key, got {str(path)!r} (not a regular "
                             "file)")
        if st.st_mode & 0o077:
            raise ValueError(f"key {str(path)!r} has mode {stat.S_IMODE(st.st_mode):04o}; a signing key must be "
                             f"private to you (chmod 600 {str(path)!r})")
        try:
            private = serialization.load_pem_private_key(path.read_bytes(), password=None)
        except (ValueError, TypeError) as err:
            raise ValueError(f"key {str(path)!r} is not an unencrypted PEM private key ({err})") from None
        if not isinstance(private, ed25519.Ed25519PrivateKey):
            raise ValueError(f"key {str(path)!r} must be an Ed25519 private key, got {type(private).__name__}")
    raw = _raw_public(private)
    return SigningKey(private, base64.b64encode(raw).decode(), fingerprint(raw), path, created)


def public_key_bytes(key) -> bytes:
    """The raw 32 bytes of a public key given as its base64 text, or as a file holding that text.

    Raises:
      ValueError: neither a file nor 32 bytes of base64.
    """
    if not isinstance(key, (str, os.PathLike)):
        raise TypeError(f"key must be the public key (base64) or a file holding it, got {type(key).__name__}")
    text = str(key)
    if os.path.isfile(text):
        text = pathlib.Path(text).read_text(errors="replace")
    text = text.strip()
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 32:
        raise ValueError(f"key must be the instructor's Ed25519 public key: 44 characters of base64 (as printed by "
                         f"jtk challenge score) or a file holding them, got {str(key)[:80]!r}")
    return raw


def sign(key: SigningKey, data: bytes) -> dict:
    """The signature record of ``data`` (what :data:`SIGNATURE_FILE` holds)."""
    return {"algorithm": ALGORITHM, "public_key": key.public_key, "fingerprint": key.fingerprint,
            "signature": base64.b64encode(key.private.sign(bytes(data))).decode()}


def check(data: bytes, record_bytes: bytes | None, *, key=None, fingerprint_text: str | None = None
          ) -> tuple[bool, str, str, str]:
    """Checks ``data`` against a signature file's bytes and the published key or fingerprint.

    Args:
      data: the signed bytes (the board manifest).
      record_bytes: the signature file's bytes (None: there is none).
      key: the published public key (base64 or a file), or None.
      fingerprint_text: the published fingerprint, or None (one of ``key`` and ``fingerprint_text`` is given).

    Returns:
      (ok, expected fingerprint, found fingerprint, what was found: "" when ok, else one sentence that says
      whether the signature is missing, made with another key, or does not match the bytes).
    """
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric import ed25519

    want = fingerprint(public_key_bytes(key)) if key is not None else _normal_fingerprint(fingerprint_text)
    if key is not None and fingerprint_text is not None and _normal_fingerprint(fingerprint_text) != want:
        raise ValueError(f"fingerprint {fingerprint_text!r} is not the fingerprint of the key given ({want})")
    if record_bytes is None:
        return False, want, "", f"no signature: {SIGNATURE_FILE} is missing, so nothing ties the board to its author"
    try:
        record = json.loads(record_bytes)
        raw = base64.b64decode(str(record["public_key"]), validate=True)
        signature = base64.b64decode(str(record["signature"]), validate=True)
        if record.get("algorithm") != ALGORITHM or len(raw) != 32:
            raise ValueError(f"algorithm {record.get('algorithm')!r}, a key of {len(raw)} bytes")
    except (ValueError, KeyError, TypeError, binascii.Error) as err:
        return False, want, "", f"the signature file is unreadable ({type(err).__name__}: {err}): it was edited"
    found = fingerprint(raw)
    if found != want:
        return False, want, found, (f"signed by another key (fingerprint {found}), not by the published one "
                                    f"({want})")
    try:
        ed25519.Ed25519PublicKey.from_public_bytes(raw).verify(signature, bytes(data))
    except InvalidSignature:
        return False, want, found, ("the signature does not match the board manifest: a byte of the manifest (or of "
                                    "the signature) was changed after it was signed")
    return True, want, found, ""


def signer(record_bytes: bytes | None) -> str | None:
    """The fingerprint a signature file names (unchecked: for the message of a check made without a key)."""
    try:
        return fingerprint(base64.b64decode(str(json.loads(record_bytes)["public_key"]), validate=True))
    except (ValueError, KeyError, TypeError, binascii.Error):
        return None


def _record_path() -> pathlib.Path:
    return config_dir() / RECORD_FILE


def record_board(manifest_sha256: str, entry: dict) -> pathlib.Path:
    """Adds a signed board to the instructor's record (mode 0600): what its re-check will compare against."""
    from filelock import FileLock

    path = _record_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):  # two boards scored at once both end up in the record
        boards = _read_record(path)
        boards[manifest_sha256] = entry
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(boards, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    return path


def _read_record(path: pathlib.Path) -> dict:
    try:
        boards = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return boards if isinstance(boards, dict) else {}


def recorded_board(manifest_sha256: str) -> tuple[dict | None, pathlib.Path]:
    """The instructor's record of the board whose manifest has this SHA-256 (None if it has none), and where."""
    path = _record_path()
    entry = _read_record(path).get(manifest_sha256)
    return (entry if isinstance(entry, dict) else None), path
