"""``memfs webdav``: the memory tree as a WebDAV server (class 1 and 2), for machines
without FUSE: Finder, Windows Explorer, davfs2, rclone, editors.

- :mod:`memfs.webdav.provider`: WsgiDAV's provider over the store, every path through
  the gate, every write a store transaction (compare-and-set on ``If-Match``, the
  mount's merge rules without it);
- :mod:`memfs.webdav.app`: the guard, the WSGI bridge, the actor and the bounds of a
  request, one operation per changing request;
- :mod:`memfs.webdav.serve`: uvicorn on the bound socket until a signal;
  :mod:`memfs.webdav.running`: the records ``memfs status`` lists.
"""
