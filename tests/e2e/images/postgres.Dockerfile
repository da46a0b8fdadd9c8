# Stands in for the postgres image in compose.yaml: Debian's PostgreSQL 15 behind an entrypoint that honours the
# same variables (POSTGRES_USER, POSTGRES_DB, POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE, PGDATA).
ARG BASE
FROM ${BASE}
RUN apt-get update -q && apt-get install -y -q --no-install-recommends postgresql-15 \
    && rm -rf /var/lib/apt/lists/* /var/lib/postgresql/15 /etc/postgresql/15
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint
VOLUME ["/var/lib/postgresql/data"]
EXPOSE 5432
ENTRYPOINT ["postgres-entrypoint"]
