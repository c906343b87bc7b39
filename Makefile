# memfs developer entry points. `make test` works on a fresh machine: it installs the
# system packages the FUSE tests need (via apt when run as root), builds .venv, and runs
# the suite. `make run` mounts the default store at memfs's default mountpoint
# (~/memories, or $MEMFS_MOUNTPOINT), the one `memfs mount`, `umount` and `agent` use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Empty: memfs's own default. `make run MOUNTPOINT=dir` mounts elsewhere.
MOUNTPOINT ?=
# Debian packages: fuse3 gives fusermount3 and libfuse3, libfuse2 keeps the libfuse 2
# path testable; rsync and vim-tiny are real tools the end-to-end mount tests drive;
# ripgrep is a native baseline in scripts/bench_search.py; postgresql is the server the
# PostgreSQL store's tests start throwaway clusters of; chromium is the browser the tests
# of memfs web drive through Playwright; nodejs and npm install the real Claude Code CLI
# the `memfs claude-code` tests drive (tests/fixtures/claude_code_model.py); pipx is how
# a person installs memfs on PATH (the newcomer's test runs it). The script decides what
# is missing.
SYSTEM_PACKAGES := fuse3 libfuse3-3 libfuse2 rsync vim-tiny ripgrep postgresql chromium nodejs npm pipx litmus davfs2 rclone

.PHONY: test run stop status lint docs wheel bench system-deps venv clean

system-deps:
	@scripts/install-system-deps.sh $(SYSTEM_PACKAGES)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,docs]'
	@touch $(STAMP)

venv: $(STAMP)

# --durations=25 names the slowest tests in every run, so a slow one is seen at once.
test: system-deps $(STAMP)
	$(BIN)/pytest --durations=25

# The documentation site, from docs/ and mkdocs.yml, into site/. --strict makes a broken
# link or anchor, a page left out of the nav, or a CLI reference that cannot be
# generated fail the build.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# A wheel of the distribution (memfs-tree) in dist/, then installed into a throwaway
# virtualenv whose `memfs --version` must run: what a person installing it gets.
wheel: $(STAMP)
	rm -rf dist build/wheel-check
	$(BIN)/python -m build --wheel --outdir dist .
	$(PYTHON) -m venv build/wheel-check
	build/wheel-check/bin/pip install --quiet dist/*.whl
	build/wheel-check/bin/memfs --version

# ruff's lint rules and its formatting, then mypy --strict over memfs, tests and scripts
# (what pyproject's [tool.mypy] names). Needs only the venv, not the system packages.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Mounting what is already mounted is no failure here (--exist-ok says so); then, when
# the shell finds no `memfs`, the command that puts it on PATH.
run: system-deps $(STAMP)
	@$(BIN)/memfs mount --exist-ok $(MOUNTPOINT)
	@echo "Or stop with: make stop (make status lists mounts)"
	@if ! command -v memfs >/dev/null; then \
		echo "memfs is not on your PATH; to put it there: pipx install $(CURDIR)"; \
		echo "  (or add its virtualenv: export PATH=\"$(CURDIR)/$(BIN):\$$PATH\")"; fi

stop: $(STAMP)
	@$(BIN)/memfs umount $(MOUNTPOINT)

status: $(STAMP)
	@$(BIN)/memfs status

# Every benchmark script, each at its defaults (docs/benchmarks.md gives each one's
# command and figures); BENCH=name runs one (make bench BENCH=mount).
BENCH ?=
bench: system-deps $(STAMP)
	@set -e; for script in scripts/bench_$(if $(BENCH),$(BENCH),*).py; do \
		echo "== $$script"; $(BIN)/python $$script; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
