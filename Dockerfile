# Slugline's container image, in two stages: a builder with a Rust toolchain makes the wheel with maturin, and a
# slim Python image installs it alone (no compiler, no sources) and runs `slugline serve` as a non-root user.
#
#   docker build -t slugline .
#   docker run -p 8000:8000 -v slugline-data:/data slugline
#
# Both base images are build arguments: any Debian-like image with a Rust toolchain (cargo, rustc and a C linker)
# builds, any with CPython >= 3.11 and its venv module runs. The builder installs python3-venv with apt where its
# base has no Python (the rust images do not). The tests build on images made locally (tests/e2e/images/).
ARG BUILDER_IMAGE=rust:1-slim-bookworm
ARG RUNTIME_IMAGE=python:3.12-slim-bookworm

FROM ${BUILDER_IMAGE} AS builder
# The versions the project pins (uv.lock for maturin, the Makefile for uv).
ARG MATURIN_VERSION=1.16.0
ARG UV_VERSION=0.13.9
RUN (python3 -m venv /opt/tools 2>/dev/null || { apt-get update -q \
        && apt-get install -y -q --no-install-recommends python3 python3-venv && rm -rf /var/lib/apt/lists/* \
        && python3 -m venv /opt/tools; }) \
    && /opt/tools/bin/pip install -q --no-cache-dir --disable-pip-version-check \
        "maturin==${MATURIN_VERSION}" "uv==${UV_VERSION}"
WORKDIR /src
# The crates first, in a layer of their own: a change to the sources does not download them again.
COPY Cargo.toml Cargo.lock ./
RUN mkdir -p rust_core benches/rust && touch rust_core/lib.rs rust_core/build.rs benches/rust/core.rs \
    && cargo fetch --locked && rm -r rust_core benches
# The Rust core next, packed around a placeholder package: a change to the Python sources, the README or the lock
# alone (most changes) reuses this layer, and the second build below only packs the wheel.
COPY pyproject.toml ./
COPY rust_core rust_core
COPY migrations migrations
RUN mkdir -p python/slugline && touch python/slugline/__init__.py README.md LICENSE \
    && /opt/tools/bin/maturin build --release --locked -q -o /tmp/placeholder \
    && rm -rf python README.md LICENSE /tmp/placeholder
COPY uv.lock README.md LICENSE ./
COPY python python
# The wheel (release profile, the `python` feature only: no test hooks), and its runtime dependencies at their
# uv.lock versions as pip constraints.
RUN /opt/tools/bin/maturin build --release --locked -q -o /wheels \
    && /opt/tools/bin/uv export --frozen --no-emit-project --no-hashes --no-default-groups --quiet \
        -o /wheels/constraints.txt

FROM ${RUNTIME_IMAGE} AS runtime
ENV PATH=/opt/slugline/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    SLUGLINE_DATABASE_URL=sqlite:////data/slugline.db
# One venv: the runtime dependencies at their uv.lock versions first, in a layer that a change to Slugline alone
# reuses, then the wheel; both compiled to bytecode here (the service's user cannot write there). pip goes once it
# is done.
COPY --from=builder /wheels/constraints.txt /tmp/constraints.txt
RUN python3 -m venv /opt/slugline \
    && /opt/slugline/bin/pip install -q --no-cache-dir --disable-pip-version-check --compile -r /tmp/constraints.txt
COPY --from=builder /wheels /tmp/wheels
RUN /opt/slugline/bin/pip install -q --no-cache-dir --disable-pip-version-check --compile \
        --constraint /tmp/wheels/constraints.txt /tmp/wheels/slugline-*.whl \
    && /opt/slugline/bin/pip uninstall -q -y pip setuptools \
    && rm -rf /tmp/wheels /tmp/constraints.txt \
    && useradd --system --uid 10001 --user-group --home-dir /data --no-create-home --shell /usr/sbin/nologin slugline \
    && mkdir /data && chown slugline:slugline /data
COPY docker/entrypoint.sh /usr/local/bin/slugline-entrypoint
# The SQLite database and the generated secret key live here (sqlite:////data/slugline.db, /data/secret.key).
VOLUME ["/data"]
WORKDIR /data
USER slugline:slugline
EXPOSE 8000
# Ready: the database answers and its schema is current (503, so a failed check, until then). Python is there; no
# curl is needed.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/api/v1/health/ready', timeout=2)"]
ENTRYPOINT ["slugline-entrypoint"]
CMD ["slugline", "serve", "--host", "0.0.0.0", "--port", "8000"]
