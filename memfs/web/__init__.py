"""``memfs web``: a local page where people see, search, review and take back what
agents and people did to the memory tree.

- :mod:`memfs.web.app` assembles the ASGI app (routes, refusals) behind
  :mod:`memfs.httpguard` and :mod:`memfs.web.csrf`;
- :mod:`memfs.web.pages` reads (timeline, operation, tree, history, search),
  :mod:`memfs.web.actions` changes (Undo, Restore, Redact, Checkpoint, Return), each
  confirmed first, each one operation of the actor ``web:USER``; :mod:`memfs.web.steps`
  says what one step of an operation did to content and :mod:`memfs.web.render` how
  text, Markdown and diffs are shown;
- :mod:`memfs.web.live` follows the change feed for the timeline's event stream;
- :mod:`memfs.web.serve` runs it until SIGINT or SIGTERM.

Everything shown comes from the store's history API and :mod:`memfs.history`; every
path goes through the handler's gate (:mod:`memfs.paths`).
"""
