# Two commands: `make serve` and `make test`. Everything else here is what they stand on.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
export VIRTUAL_ENV := $(abspath $(VENV))

.PHONY: build serve test test-rust test-python bench bench-http lint wheel clean

$(BIN)/maturin:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "Python >= 3.11 is needed"; exit 1; }
	@command -v cargo >/dev/null || { echo "a Rust toolchain (cargo) is needed"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip maturin

# Builds the Rust core in release mode and installs the package (editable) with its test tools.
build: $(BIN)/maturin
	$(BIN)/maturin develop --release -E test -F python,testing -q

serve: build
	$(BIN)/slugline serve --host $(HOST) --port $(PORT)

test: build test-rust test-python

test-rust:
	cargo test --quiet

test-python:
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: build
	$(BIN)/python -m pytest benches --benchmark-only --timeout 0 $(PYTEST_ARGS)
	cargo bench --bench core

bench-http: build
	$(BIN)/python benches/http_redirect.py

lint: build
	$(BIN)/ruff check python tests benches
	$(BIN)/mypy
	cd python && $(abspath $(BIN))/python -m mypy.stubtest slugline._core
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings

# The wheel carries the Alembic scripts inside the package (slugline/migrations), so `slugline migrate` works
# from a plain `pip install`; the copy exists only while maturin packs it.
wheel: $(BIN)/maturin
	rm -rf python/slugline/migrations && cp -r migrations python/slugline/migrations
	$(BIN)/maturin build --release -o dist; status=$$?; rm -rf python/slugline/migrations; exit $$status

clean:
	rm -rf $(VENV) target data
