"""A way back: the tree's log, diffs, restores, undo, checkpoints, redaction, expiry and
export, built on the store's feed and retained revisions (:mod:`memfs.store.base`).

Every change these operations make is an ordinary store mutation authored
``memfs <command> (user NAME)``, so it shows in the log, reaches live mounts and mirrors
through the feed, and can itself be undone.
"""
