# The Dockerfile's runtime base, as python:3.12-slim-bookworm would be: Debian's CPython with its venv module,
# trusting the machine's own extra certificate authorities as rust.Dockerfile does.
ARG BASE
FROM ${BASE}
COPY ca /usr/local/share/ca-certificates/
RUN apt-get update -q && apt-get install -y -q --no-install-recommends ca-certificates python3 python3-venv \
    && rm -rf /var/lib/apt/lists/* && update-ca-certificates >/dev/null
# Debian's pip reads certifi's bundle, not the system's.
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt
