#!/bin/sh
# Initialises an empty PGDATA (the user with its password, scram-sha-256 over TCP, the database) the first time,
# in UTF-8 (the C locale of a bare Debian would make it SQL_ASCII, whose text psycopg hands back as bytes), then runs
# the server in the foreground as the postgres user: the official image's contract, in brief.
set -eu
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then POSTGRES_PASSWORD=$(cat "$POSTGRES_PASSWORD_FILE"); fi
mkdir -p "$PGDATA" /run/postgresql
chown postgres:postgres "$PGDATA" /run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    pwfile=$(mktemp)
    printf '%s' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE must be set}" > "$pwfile"
    chown postgres "$pwfile"
    as_postgres initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
        --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
    if [ "$db" != postgres ]; then
        as_postgres pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
        as_postgres psql -q -U "$user" -d postgres -c "CREATE DATABASE \"$db\""
        as_postgres pg_ctl -D "$PGDATA" -w stop >/dev/null
    fi
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA"
