"""watchdog's inotify observer, registering each directory once (Linux).

watchdog 7's recursive inotify watch registers a new directory's subdirectories by
walking it, and again from each subdirectory's own creation event when it appeared
while the walk ran: every ``mkdir -p`` in DIR, and the mirror itself filling DIR with
the store's nested directories. The second registration finds the watch group's own
callback already on that watch and warns on stderr, "Callback with id ... already exists
for watch ... It will be Overwritten.", about a watch that is already right. Here
registering the callback a watch already has is a no-op; everything else is watchdog's.
"""

from __future__ import annotations

from watchdog.observers.api import DEFAULT_OBSERVER_TIMEOUT, BaseObserver
from watchdog.observers.inotify import InotifyEmitter, InotifyObserver
from watchdog.observers.inotify_c import CallbackId, InotifyFD, Mask, WatchCallback, WatchDescriptor


class _RegisterOnce(InotifyFD):
    def _add_callback(
        self, path: bytes, mask: Mask, callback: WatchCallback, id_: CallbackId
    ) -> WatchDescriptor:
        # The kernel hands back the same watch for the same directory, so "this callback
        # is on this watch" means the directory is registered already.
        watch = self._get_or_create_watch(path, mask)
        if watch.callbacks.get(id_) is callback:
            return watch.wd
        return super()._add_callback(path, mask, callback, id_)


class RegisterOnceObserver(InotifyObserver):
    """:class:`InotifyObserver` over an inotify instance that registers once."""

    def __init__(self) -> None:
        # InotifyObserver.__init__, with the instance above instead of a plain InotifyFD.
        self._inotify_fd = _RegisterOnce()
        self._inotify_fd.start()
        BaseObserver.__init__(
            self, InotifyEmitter, timeout=DEFAULT_OBSERVER_TIMEOUT, inotify_fd=self._inotify_fd
        )
