"""WebDAV locks and dead properties kept in the store (its doors' notes), so every
``memfs webdav`` of one store sees the same ones: a lock taken through one server holds
against a client of another, and a property set on one host reads back on the next.

They implement WsgiDAV's two storage interfaces (``LockStorageDict``'s methods for its
``LockManager``, and ``PropertyManager``'s) over :meth:`memfs.store.base.Store.note`.
Keys are the DAV paths of the server's root, so servers of the same subtree (or of the
whole tree) share them: the note space names the subtree.
"""

from __future__ import annotations

import json
import time
from typing import Any

from wsgidav.lock_man.lock_manager import generate_lock_token, normalize_lock_root, validate_lock

from memfs.store.base import Store

# WsgiDAV's bounds on a lock's life (a week by default, a month at most), in seconds.
LOCK_TIME_OUT_DEFAULT = 604800
LOCK_TIME_OUT_MAX = 4 * 604800


def _space(kind: str, prefix: str) -> str:
    return f"webdav-{kind}:{prefix}"


def _dump(lock: dict[str, Any]) -> str:
    kept = dict(lock)
    owner = kept.get("owner")
    if isinstance(owner, bytes):
        kept["owner"] = owner.decode("utf-8", "surrogateescape")
    return json.dumps(kept)


def _load(text: str) -> dict[str, Any]:
    lock: dict[str, Any] = json.loads(text)
    if isinstance(lock.get("owner"), str):
        lock["owner"] = lock["owner"].encode("utf-8", "surrogateescape")
    return lock


def _is_child(parent: str, path: str) -> bool:
    """Whether ``path`` lies below ``parent`` (both normalised, no trailing slash)."""
    return path != parent and path.startswith(parent.rstrip("/") + "/")


class StoreLocks:
    """WsgiDAV's lock storage on the store's notes (one note per lock, by token)."""

    def __init__(self, store: Store, prefix: str = "") -> None:
        self.store = store
        self.space = _space("lock", prefix)

    def __repr__(self) -> str:
        return f"StoreLocks({self.space!r})"

    def open(self) -> None:
        return None

    def close(self) -> None:
        return None

    def cleanup(self) -> None:
        return None  # expired notes go as new ones come (Store.set_note)

    def clear(self) -> None:
        self.store.drop_notes(self.space, "", below=True)

    def get(self, token: str) -> dict[str, Any] | None:
        text = self.store.note(self.space, token)
        if text is None:
            return None
        lock = _load(text)
        expire = float(lock["expire"])
        if 0 <= expire < time.time():
            self.delete(token)
            return None
        return lock

    def _keep(self, lock: dict[str, Any]) -> None:
        expire = float(lock["expire"])
        expires_ns = int(expire * 1e9) if expire >= 0 else None
        self.store.set_note(self.space, lock["token"], _dump(lock), expires_ns=expires_ns)

    def create(self, path: str, lock: dict[str, Any]) -> dict[str, Any]:
        assert lock.get("token") is None and lock.get("expire") is None
        lock["root"] = normalize_lock_root(path)
        timeout = float(lock.get("timeout") or LOCK_TIME_OUT_DEFAULT)
        if timeout < 0 or timeout > LOCK_TIME_OUT_MAX:
            timeout = LOCK_TIME_OUT_MAX
        lock["timeout"] = timeout
        lock["expire"] = time.time() + timeout
        validate_lock(lock)
        lock["token"] = generate_lock_token()
        self._keep(lock)
        return lock

    def refresh(self, token: str, *, timeout: float) -> dict[str, Any]:
        lock = self.get(token)
        if lock is None:
            raise ValueError(f"no lock {token}")
        if timeout < 0 or timeout > LOCK_TIME_OUT_MAX:
            timeout = LOCK_TIME_OUT_MAX
        lock["timeout"] = timeout
        lock["expire"] = time.time() + timeout
        self._keep(lock)
        return lock

    def delete(self, token: str) -> bool:
        return self.store.drop_notes(self.space, token) > 0

    def get_lock_list(
        self, path: str, *, include_root: bool, include_children: bool, token_only: bool
    ) -> list[Any]:
        root = normalize_lock_root(path)
        now = time.time()
        found: list[Any] = []
        # Locks are few (one per client editing a file): all of them are read.
        for text in self.store.notes(self.space).values():
            lock = _load(text)
            expire = float(lock["expire"])
            if 0 <= expire < now:
                continue
            here = lock["root"] == root
            if (include_root and here) or (include_children and _is_child(root, lock["root"])):
                found.append(lock["token"] if token_only else lock)
        return found


class StoreProps:
    """WsgiDAV's property manager on the store's notes: one note per property, keyed
    ``URL\\nNAME`` (a ref URL is quoted, so it holds no newline)."""

    def __init__(self, store: Store, prefix: str = "") -> None:
        self.store = store
        self.space = _space("prop", prefix)

    def __repr__(self) -> str:
        return f"StoreProps({self.space!r})"

    def get_properties(self, norm_url: str, environ: Any = None) -> list[str]:
        return [key.split("\n", 1)[1] for key in self.store.notes(self.space, norm_url + "\n")]

    def get_property(self, norm_url: str, name: str, environ: Any = None) -> str | None:
        return self.store.note(self.space, f"{norm_url}\n{name}")

    def write_property(
        self,
        norm_url: str,
        name: str,
        property_value: bytes | str,
        dry_run: bool = False,
        environ: Any = None,
    ) -> None:
        if dry_run:
            return
        value = (
            property_value.decode("utf-8") if isinstance(property_value, bytes) else property_value
        )
        self.store.set_note(self.space, f"{norm_url}\n{name}", value)

    def remove_property(
        self, norm_url: str, name: str, dry_run: bool = False, environ: Any = None
    ) -> None:
        if not dry_run:
            self.store.drop_notes(self.space, f"{norm_url}\n{name}")

    def remove_properties(self, norm_url: str, environ: Any = None) -> None:
        self.store.drop_notes(self.space, norm_url + "\n", below=True)

    def copy_properties(self, src_url: str, dest_url: str, environ: Any = None) -> None:
        for key, value in self.store.notes(self.space, src_url + "\n").items():
            self.store.set_note(self.space, dest_url + key[len(src_url) :], value)

    def move_properties(
        self, src_url: str, dest_url: str, with_children: bool, environ: Any = None
    ) -> None:
        below = src_url if with_children else src_url + "\n"
        found = self.store.notes(self.space, below)
        # The destination's own properties go first (a move over it replaces it).
        self.store.drop_notes(self.space, dest_url + "\n", below=True)
        for key, value in found.items():
            self.store.set_note(self.space, dest_url + key[len(src_url) :], value)
        self.store.drop_notes(self.space, below, below=True)
