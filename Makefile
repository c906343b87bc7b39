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
# the `memfs claude-code` tests drive (tests/fixtures/claude_code_model.py). The script
# decides what is missing.
SYSTEM_PACKAGES := fuse3 libfuse3-3 libfuse2 rsync vim-tiny ripgrep postgresql chromium nodejs npm

.PHONY: test run stop status lint bench system-deps venv clean

system-deps:
	@scripts/install-system-deps.sh $(SYSTEM_PACKAGES)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@touch $(STAMP)

venv: $(STAMP)

test: system-deps $(STAMP)
	$(BIN)/pytest

# ruff's lint rules and its formatting, then mypy --strict over memfs, tests and scripts
# (what pyproject's [tool.mypy] names). Needs only the venv, not the system packages.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

run: system-deps $(STAMP)
	@$(BIN)/memfs mount $(MOUNTPOINT)
	@echo "Or stop with: make stop (make status lists mounts)"

stop: $(STAMP)
	@$(BIN)/memfs umount $(MOUNTPOINT)

status: $(STAMP)
	@$(BIN)/memfs status

bench: system-deps $(STAMP)
	$(BIN)/python scripts/bench_handler.py
	$(BIN)/python scripts/bench_mount.py
	$(BIN)/python scripts/bench_sync.py
	$(BIN)/python scripts/bench_store.py
	$(BIN)/python scripts/bench_search.py
	$(BIN)/python scripts/bench_regex.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
