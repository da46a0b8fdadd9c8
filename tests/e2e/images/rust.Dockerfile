# The Dockerfile's builder base, made here from the Debian base and this machine's own Rust toolchain (copied into
# the build context as `toolchain/` by tests/support/images.py), where rust:1-slim-bookworm cannot be pulled.
# Python and its venv module are installed here so that the Dockerfile's builder stage has nothing to add. The
# machine's own extra certificate authorities (`ca/`, from /usr/local/share/ca-certificates) are trusted, as they
# are here: a TLS-inspecting proxy's, where one stands between this machine and the package registries.
ARG BASE
FROM ${BASE}
COPY ca /usr/local/share/ca-certificates/
RUN apt-get update -q && apt-get install -y -q --no-install-recommends ca-certificates gcc libc6-dev python3 python3-venv \
    && rm -rf /var/lib/apt/lists/* && update-ca-certificates >/dev/null
# Debian's pip reads certifi's bundle, not the system's.
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt
COPY toolchain /usr/local/rust
ENV PATH=/usr/local/rust/bin:$PATH CARGO_HOME=/usr/local/cargo
