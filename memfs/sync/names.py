"""Which names the mirror leaves alone, and how conflict copies are named. Pure, no I/O.

Editors and tools surround a save with short-lived files (swap files, backups, probes,
temp-then-rename files). Syncing them would put junk in the store and turn one save into
several revisions, so they are ignored in both directions, together with memfs's own
``.memfs*`` files and version-control metadata (a git checkout of DIR must not push its
object database into the memory tree).

Names the path gate refuses are not ignored silently: the mirror warns about them once,
because a person made them on purpose and should learn why they stay local.

Conflict copies are named as every writer of a store names them:
:func:`memfs.store.rebase.conflict_name` (``notes.conflict-20261129-184300-local.md``
for the mirror's side ``local``), re-exported here.
"""

from __future__ import annotations

import re

from memfs.paths import RESERVED_PREFIX, name_problem
from memfs.store.rebase import conflict_name as conflict_name  # re-exported, one definition

# memfs's own in-tree files: temp files for atomic writes and set-aside copies. They
# share the reserved prefix, so the gate guarantees no model file can collide.
TEMP_PREFIX = RESERVED_PREFIX + "-tmp-"
ASIDE_PREFIX = RESERVED_PREFIX + "-aside-"

VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr"})

_IGNORED = re.compile(
    r"""^(?:
        \..*\.sw[a-px]          # vim swap files: .f.swp, .f.swo, ..., .f.swx
      | .*~                     # vim/emacs backups: f~
      | \.\#.*                  # emacs lock links: .#f
      | \#.*\#                  # emacs autosave: #f#
      | .*___jb_(?:tmp|old)___  # JetBrains safe write: f___jb_tmp___, f___jb_old___
      | \.goutputstream-.*      # gedit / GIO atomic replace
      | \.tmp-memfs-[0-9a-f]+   # the memory handler's atomic-write temp file
      | sed[A-Za-z0-9]{6}       # sed -i temp file in the same directory
      | \.~lock\..*\#           # LibreOffice lock files
      | \..*\.kate-swp          # kate swap files
    )$""",
    re.VERBOSE,
)

# vim probes whether it may create files with "4913", then 4913+123, 4913+246, ...
_VIM_PROBE_START = 4913
_VIM_PROBE_STEP = 123


def _is_vim_probe(name: str) -> bool:
    if not name.isdigit() or len(name) > 9:
        return False
    n = int(name)
    return n >= _VIM_PROBE_START and (n - _VIM_PROBE_START) % _VIM_PROBE_STEP == 0


def ignored_name(name: str) -> bool:
    """True for names the mirror never syncs and never warns about."""
    return (
        name.startswith(RESERVED_PREFIX)
        or name in VCS_DIRS
        or _is_vim_probe(name)
        or _IGNORED.match(name) is not None
    )


def ignored_path(rel: str) -> bool:
    """True if any segment of the store-relative path ``rel`` is an ignored name."""
    return any(ignored_name(part) for part in rel.split("/"))


def refused_path(rel: str) -> str | None:
    """Why the gate refuses ``rel`` (first bad segment), or None if every segment passes."""
    for part in rel.split("/"):
        problem = name_problem(part)
        if problem is not None:
            return problem
    return None
