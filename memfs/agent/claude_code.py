"""A repository's Claude Code memory on the shared store (``memfs claude-code``).

Claude Code keeps its memory in plain files: an index, ``MEMORY.md`` (it loads the
first :data:`INDEX_MAX_LINES` lines or :data:`INDEX_MAX_BYTES` of it into every
session), and one file per memory, in a directory that is by default machine-local and
per work tree (``~/.claude/projects/<the path as a slug>/memory``). Its setting
``autoMemoryDirectory`` moves it. This module points that setting at one directory of a
mounted memfs store per repository, so every work tree, clone and machine of the
repository (and every teammate) shares one memory:

- the directory is ``claude-code/<key>`` in the store, the key made from the
  repository's normalized ``origin`` URL (``git@github.com:o/r.git`` and
  ``https://github.com/o/r`` are one repository), else from its first commit;
- :func:`enable` mounts the store if no mount of it serves that directory, imports what
  Claude Code's current memory directory holds (nothing lost, nothing doubled: an equal
  file is left alone, the index gets the lines it lacks, a different file of the same
  name is kept beside as a conflict copy), and sets ``autoMemoryDirectory`` in the work
  tree's ``.claude/settings.local.json`` (a file git is told to ignore), keeping every
  other setting; what it replaced is kept in the work tree's git directory;
- :func:`disable` puts the settings back as they were; the memory stays in the store;
- :func:`status` says which directory, which store, whether it is mounted, and how
  much of the index Claude Code loads.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import json
import os
import re
import socket
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from memfs.errors import ClaudeCodeError, MemfsError, NotFound, StoreError
from memfs.history.author import act_for
from memfs.mount import daemon, state
from memfs.mount.control import nearby
from memfs.mount.state import MountRecord
from memfs.paths import name_problem
from memfs.store import open_store
from memfs.store.base import Store
from memfs.store.rebase import conflict_name

# The store directory holding every repository's memory.
STORE_DIR = "claude-code"
SETTINGS = Path(".claude") / "settings.local.json"
KEY = "autoMemoryDirectory"
INDEX = "MEMORY.md"
# What Claude Code loads of the index into each session (its documentation).
INDEX_MAX_LINES = 200
INDEX_MAX_BYTES = 25 * 1024
# In the work tree's git directory: what enable replaced, for disable.
BACKUP = "memfs-claude-code.json"
# The longest readable part of a directory key (the rest is a hash).
_SLUG_MAX = 80

Note = Callable[[str], None]


def _ignore(_: str) -> None:
    pass


# --- the repository --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Repo:
    """A git work tree and what names its repository."""

    root: Path  # the work tree's top directory
    git_dir: Path  # this work tree's own git directory (a linked worktree has one)
    origin: str | None  # remote.origin.url as configured
    first_commit: str | None  # the root commit reached by first parents from HEAD

    @property
    def identity(self) -> str:
        """The repository's name, the same in every clone: its normalized origin URL,
        else ``commit-`` and its first commit."""
        if self.origin:
            return normalize_origin(self.origin)
        if self.first_commit:
            return f"commit-{self.first_commit}"
        raise ClaudeCodeError(
            f"{self.root} has no origin remote and no commit to name its repository by; "
            "commit something (or add the origin remote) first"
        )

    @property
    def store_path(self) -> str:
        """The repository's memory directory in the store."""
        return f"{STORE_DIR}/{memory_key(self.identity)}"

    @property
    def settings(self) -> Path:
        return self.root / SETTINGS

    @property
    def backup(self) -> Path:
        return self.git_dir / BACKUP


def _git(cwd: Path, *args: str) -> str | None:
    """``git args`` in ``cwd``: its output stripped, None when git says no."""
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except FileNotFoundError as exc:
        raise ClaudeCodeError("git is not installed; install git and run again") from exc
    except OSError as exc:
        raise ClaudeCodeError(f"cannot run git in {cwd}: {exc.strerror or exc}") from exc
    if done.returncode != 0:
        return None
    return done.stdout.strip()


def find_repo(cwd: Path) -> Repo:
    """The git work tree ``cwd`` is in; ClaudeCodeError when it is in none."""
    top = _git(cwd, "rev-parse", "--show-toplevel")
    git_dir = _git(cwd, "rev-parse", "--absolute-git-dir")
    if not top or not git_dir:
        raise ClaudeCodeError(
            f"{cwd} is not in a git work tree; run this in the repository whose Claude Code "
            "memory is to be shared"
        )
    origin = _git(cwd, "config", "--get", "remote.origin.url") or None
    roots = _git(cwd, "rev-list", "--first-parent", "--max-parents=0", "HEAD")
    first = roots.split()[-1] if roots else None
    return Repo(Path(top), Path(git_dir), origin, first)


def normalize_origin(url: str) -> str:
    """One spelling of a remote URL for every way of writing it: the host (lower case,
    no user or port) and the path without ``.git`` or slashes at either end, all lower
    case (hosts such as GitHub match owner and repository names in any case).

    ``git@github.com:Owner/Repo.git``, ``ssh://git@github.com:22/owner/repo`` and
    ``https://github.com/owner/repo/`` all give ``github.com/owner/repo``.
    """
    text = url.strip()
    scp = re.match(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.*)$", text)
    if "://" not in text and scp is not None and not re.match(r"^[A-Za-z]:[\\/]", text):
        host, path = scp.group(1), scp.group(2)
    elif "://" in text:
        parts = urlsplit(text)
        host, path = parts.hostname or "", parts.path
    else:
        host, path = "", text  # a local path: the same only on one machine
    path = path.strip("/")
    path = path.removesuffix(".git").rstrip("/")
    return (f"{host}/{path}" if host else path).lower()


def memory_key(identity: str) -> str:
    """The directory name of a repository's memory: readable, then a short hash so two
    identities that read alike never share one."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", identity.lower()).strip("-.")[:_SLUG_MAX].strip("-.")
    digest = hashlib.sha256(identity.encode("utf-8", "surrogateescape")).hexdigest()[:10]
    return f"{slug or 'repo'}-{digest}"


# --- Claude Code's side -----------------------------------------------------------------


def config_dir() -> Path:
    """Claude Code's own directory: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    override = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    return Path(override).expanduser() if override else Path.home() / ".claude"


def default_memory_dir(root: Path) -> Path:
    """Where Claude Code keeps a work tree's memory without the setting: its path with
    every character but letters and digits as ``-``, under ``projects``."""
    slug = re.sub(r"[^A-Za-z0-9]", "-", str(root))
    return config_dir() / "projects" / slug / "memory"


def read_settings(path: Path) -> dict[str, Any]:
    """The JSON object in ``path`` ({} when there is no file); ClaudeCodeError for a
    file that holds something else, which is never overwritten."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ClaudeCodeError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise ClaudeCodeError(
            f"{path} is not valid JSON ({exc}); fix or remove it, then run again"
        ) from exc
    if not isinstance(data, dict):
        raise ClaudeCodeError(f"{path} does not hold a JSON object; fix it, then run again")
    return data


def write_settings(path: Path, data: dict[str, Any]) -> None:
    """Replace ``path`` with ``data`` atomically (Claude Code may read it meanwhile)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.memfs-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def current_memory_dir(repo: Repo) -> Path:
    """The directory Claude Code uses for the work tree now: ``autoMemoryDirectory``
    from the local project settings, the project's, or the user's, else the default."""
    for settings in (
        repo.settings,
        repo.root / ".claude" / "settings.json",
        config_dir() / "settings.json",
    ):
        with contextlib.suppress(ClaudeCodeError):
            value = read_settings(settings).get(KEY)
            if isinstance(value, str) and value.strip():
                return Path(value).expanduser()
    return default_memory_dir(repo.root)


def _keep_out_of_git(repo: Repo, on_note: Note) -> None:
    """Make sure git never commits the settings file: it names a path on this machine."""
    rel = SETTINGS.as_posix()
    if _git(repo.root, "ls-files", "--error-unmatch", rel) is not None:
        on_note(
            f"Warning: {repo.settings} is committed to git; its {KEY} names a path on this"
            " machine, so keep the change out of your commits"
        )
        return
    if _git(repo.root, "check-ignore", "-q", rel) is not None:
        return
    exclude = _git(repo.root, "rev-parse", "--git-path", "info/exclude")
    if not exclude:
        return
    path = Path(exclude) if Path(exclude).is_absolute() else repo.root / exclude
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"/{rel}\n")


# --- where the memory is mounted --------------------------------------------------------


def find_mount(store_id: str, store_path: str) -> tuple[MountRecord, Path] | None:
    """A live mount on this machine of the store ``store_id`` that shows ``store_path``,
    and where: a mount of the whole store first."""
    found = []
    for record in state.records():
        if record.store_id != store_id:
            continue
        sub = record.subtree
        if not sub:
            found.append((0, record, Path(record.mountpoint) / store_path))
        elif store_path == sub or store_path.startswith(sub + "/"):
            rest = store_path[len(sub) :].lstrip("/")
            found.append((1, record, Path(record.mountpoint) / rest))
    if not found:
        return None
    _, record, where = min(found, key=lambda f: f[0])
    return record, where


def store_id_of(store_url: str) -> str:
    with open_store(store_url) as store:
        return store.url


# --- importing what Claude Code has ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Imported:
    """What an import did: files written, index lines added, files already there
    unchanged, conflict copies made (``(file, copy)``)."""

    source: str = ""
    written: tuple[str, ...] = ()
    index_lines: int = 0
    same: int = 0
    copies: tuple[tuple[str, str], ...] = ()


def merge_index(theirs: bytes, ours: bytes) -> tuple[bytes, int]:
    """The store's index with every line of ``ours`` it lacks added at its end, in
    order, and how many were added; blank lines and lines it has are not added."""
    have = {line.rstrip() for line in theirs.splitlines()}
    extra = [line.rstrip() for line in ours.splitlines() if line.strip()]
    unique = [line for line in dict.fromkeys(extra) if line not in have]
    if not unique:
        return theirs, 0
    head = theirs if not theirs or theirs.endswith(b"\n") else theirs + b"\n"
    return head + b"\n".join(unique) + b"\n", len(unique)


def _files(src: Path) -> list[str]:
    """The regular files below ``src`` (relative, sorted); ClaudeCodeError naming the
    first one the store would refuse, before anything is written."""
    out = []
    for top, dirs, files in os.walk(src):
        dirs.sort()
        base = Path(top).relative_to(src)
        for name in [*dirs, *files]:
            problem = name_problem(name)
            if problem is not None:
                raise ClaudeCodeError(
                    f"{Path(top) / name} cannot be put in the store ({problem}); rename it "
                    "and run again (nothing was imported)"
                )
        for name in sorted(files):
            if (Path(top) / name).is_file() and not (Path(top) / name).is_symlink():
                out.append((base / name).as_posix())
    return out


def import_memory(store: Store, src: Path, dest: str, *, side: str) -> Imported:
    """Put the files of Claude Code's memory directory ``src`` into ``dest`` of the
    store, as one operation (see the module docstring); all or nothing."""
    rels = _files(src)
    written: list[str] = []
    copies: list[tuple[str, str]] = []
    same = added = 0
    when = datetime.now()
    with store.batch():
        store.mkdir(dest, author=_author(), parents=True, exist_ok=True)
        for rel in rels:
            data = (src / rel).read_bytes()
            path = f"{dest}/{rel}"
            try:
                there, entry = store.read(path)
            except NotFound:
                store.write(path, data, author=_author(), expected_rev=0, parents=True)
                written.append(rel)
                continue
            if there == data:
                same += 1
            elif rel == INDEX:
                merged, n = merge_index(there, data)
                added += n
                if n:
                    store.write(path, merged, author=_author(), expected_rev=entry.rev)
                else:
                    same += 1
            else:
                folder, _, name = path.rpartition("/")
                taken = {e.name for e in store.listdir(folder)}
                copy = f"{folder}/{conflict_name(name, when, side, taken)}"
                store.write(copy, data, author=_author(), expected_rev=0)
                copies.append((rel, copy[len(dest) + 1 :]))
    return Imported(str(src), tuple(written), added, same, tuple(copies))


def _author() -> str:
    return act_for("claude-code").actor


# --- enable, disable, status -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Backup:
    """What enable replaced in the settings, kept in the work tree's git directory."""

    settings: str
    had_key: bool
    previous: Any
    created_file: bool
    store_url: str
    store_path: str
    memory_dir: str


def _load_backup(repo: Repo) -> Backup | None:
    try:
        data = json.loads(repo.backup.read_text(encoding="utf-8"))
        return Backup(**data)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as exc:
        raise ClaudeCodeError(
            f"{repo.backup} (what memfs claude-code enable replaced) cannot be read: {exc};"
            f" remove it and set {KEY} in {repo.settings} by hand"
        ) from exc


@dataclass(frozen=True, slots=True)
class Enabled:
    repo: Repo
    store_url: str
    store_path: str
    memory_dir: Path
    mounted: MountRecord | None  # the mount this run started, if it started one
    imported: Imported | None
    settings: Path
    previous: Any = None  # the setting's value before, when it had one


def enable(
    cwd: Path,
    store_url: str,
    *,
    mountpoint: Path | None = None,
    on_note: Note = _ignore,
) -> Enabled:
    """Share the repository's Claude Code memory through ``store_url`` (see the module
    docstring). Running it again is harmless: it mounts what is not mounted and points
    the setting at the directory again, importing only what is not there yet."""
    repo = find_repo(cwd)
    store_path = repo.store_path
    settings = read_settings(repo.settings)  # a broken file stops everything here
    backup = _load_backup(repo)
    before = current_memory_dir(repo)
    try:
        with open_store(store_url) as store:
            store_id = store.url
            with store.acting(act_for("claude-code", detail="enable")):
                store.mkdir(store_path, author=_author(), parents=True, exist_ok=True)
    except StoreError as exc:
        raise ClaudeCodeError(f"cannot make {store_path} in the store: {exc}") from exc
    found = find_mount(store_id, store_path)
    started = None
    if found is None:
        target = mountpoint if mountpoint is not None else state.default_mountpoint()
        started = daemon.start(target, store_url, on_note=on_note)
        found = find_mount(store_id, store_path)
        if found is None:
            raise ClaudeCodeError(
                f"the store was mounted at {started.mountpoint}, but its record does not "
                "show; run `memfs status` and try again"
            )
    _, memory_dir = found
    imported = None
    if before.is_dir() and not _same_dir(before, memory_dir):
        side = f"{_user()}-{socket.gethostname()}"
        act = act_for("claude-code", detail=f"import of {before}")
        with open_store(store_url) as store, nearby(store, [store_path]), store.acting(act):
            imported = import_memory(store, before, store_path, side=side)
    if backup is None:
        backup = Backup(
            settings=str(repo.settings),
            had_key=KEY in settings,
            previous=settings.get(KEY),
            created_file=not repo.settings.exists(),
            store_url=store_url,
            store_path=store_path,
            memory_dir=str(memory_dir),
        )
    else:
        backup = Backup(**{**asdict(backup), "store_url": store_url, "memory_dir": str(memory_dir)})
    repo.backup.write_text(json.dumps(asdict(backup), indent=2) + "\n", encoding="utf-8")
    write_settings(repo.settings, {**settings, KEY: str(memory_dir)})
    _keep_out_of_git(repo, on_note)
    return Enabled(
        repo,
        store_url,
        store_path,
        memory_dir,
        started,
        imported,
        repo.settings,
        backup.previous if backup.had_key else None,
    )


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


@dataclass(frozen=True, slots=True)
class Disabled:
    repo: Repo
    settings: Path
    restored: Any  # the value put back, None when the key was removed
    had_key: bool
    removed_file: bool
    store_url: str
    store_path: str
    memory_dir: Path  # what Claude Code uses from now on


def disable(cwd: Path) -> Disabled:
    """Put the work tree's Claude Code settings back as enable found them (every other
    setting as it is now); the memory stays in the store."""
    repo = find_repo(cwd)
    backup = _load_backup(repo)
    if backup is None:
        raise ClaudeCodeError(
            f"memfs claude-code is not enabled in {repo.root} (no {repo.backup}); "
            "nothing to put back"
        )
    settings = read_settings(repo.settings)
    if backup.had_key:
        settings[KEY] = backup.previous
    else:
        settings.pop(KEY, None)
    removed = False
    if backup.created_file and not settings:
        with contextlib.suppress(FileNotFoundError):
            repo.settings.unlink()
        removed = True
        with contextlib.suppress(OSError):
            repo.settings.parent.rmdir()  # only if empty
    else:
        write_settings(repo.settings, settings)
    repo.backup.unlink()
    return Disabled(
        repo,
        repo.settings,
        backup.previous if backup.had_key else None,
        backup.had_key,
        removed,
        backup.store_url,
        backup.store_path,
        current_memory_dir(repo),
    )


@dataclass(frozen=True, slots=True)
class Status:
    repo: Repo
    store_path: str
    enabled: bool
    store_url: str | None  # the store enable used (None: not enabled)
    memory_dir: Path  # what Claude Code uses now
    mounted: bool  # the directory is served by a live mount of the store
    mountpoint: str | None
    setting_changed: bool  # the setting no longer names what enable set
    index_lines: int | None  # None: no MEMORY.md
    index_bytes: int | None
    notes: list[str] = field(default_factory=list)

    @property
    def index_cut(self) -> bool:
        """Claude Code loads only part of the index."""
        return (self.index_lines or 0) > INDEX_MAX_LINES or (
            self.index_bytes or 0
        ) > INDEX_MAX_BYTES


def status(cwd: Path) -> Status:
    repo = find_repo(cwd)
    backup = _load_backup(repo)
    using = current_memory_dir(repo)
    mounted, where = False, None
    if backup is not None:
        with contextlib.suppress(MemfsError):
            found = find_mount(store_id_of(backup.store_url), backup.store_path)
            if found is not None:
                mounted = _same_dir(found[1], using) or found[1] == using
                where = found[0].mountpoint
    lines = size = None
    index = using / INDEX
    with contextlib.suppress(OSError):
        data = index.read_bytes()
        lines, size = data.count(b"\n") + (bool(data) and not data.endswith(b"\n")), len(data)
    return Status(
        repo=repo,
        store_path=repo.store_path,
        enabled=backup is not None,
        store_url=None if backup is None else backup.store_url,
        memory_dir=using,
        mounted=mounted,
        mountpoint=where,
        setting_changed=backup is not None and Path(backup.memory_dir) != using,
        index_lines=lines,
        index_bytes=size,
    )
