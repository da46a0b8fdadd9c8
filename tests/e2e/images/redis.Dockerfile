# Stands in for the redis image in compose.yaml: Debian's Redis, listening on the compose network.
ARG BASE
FROM ${BASE}
RUN apt-get update -q && apt-get install -y -q --no-install-recommends redis-server && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /data && chown redis:redis /data
WORKDIR /data
USER redis
EXPOSE 6379
CMD ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--dir", "/data"]
