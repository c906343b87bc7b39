"""memfs sync DIR: a plain directory kept in two-way sync with a store.

:class:`Mirror` (:mod:`memfs.sync.mirror`) runs the loop: DIR's events and the store's
change feed in, one reconcile pass at a time out. Each pass is the
:class:`~memfs.sync.engine.Engine` applying the pure decision table of
:mod:`memfs.sync.merge` to a path's three versions (sync state, DIR, store); the rest are
its parts: DIR's side (:mod:`~memfs.sync.disk`, :mod:`~memfs.sync.leases`,
:mod:`~memfs.sync.watch`), merges and conflict copies (:mod:`~memfs.sync.both`), the
state kept outside DIR (:mod:`~memfs.sync.state`), and the records of running mirrors
for ``memfs status`` (:mod:`~memfs.sync.running`).
"""

from memfs.sync.mirror import Mirror

__all__ = ["Mirror"]
