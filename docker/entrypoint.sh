#!/bin/sh
# The image's entrypoint. Secrets from files, as orchestrators mount them: for each SLUGLINE_<NAME>_FILE (and
# PGPASSWORD_FILE, which libpq does not read itself) the file's content becomes SLUGLINE_<NAME> unless that is
# already set and not empty; the *_FILE variables are then removed. With SLUGLINE_MIGRATE_AT_START=true,
# `slugline migrate` runs before `slugline serve` (PostgreSQL; SQLite is migrated by `serve` itself).
set -eu

for var in $(env | sed -n 's/^\(SLUGLINE_[A-Z0-9_]*_FILE\|PGPASSWORD_FILE\)=.*/\1/p'); do
    name=${var%_FILE}
    eval "path=\${$var}"
    eval "current=\${$name:-}"
    if [ -z "$current" ]; then
        if [ ! -r "$path" ]; then
            echo "slugline-entrypoint: $var names $path, which cannot be read" >&2
            exit 2
        fi
        export "$name=$(cat "$path")"
    fi
    unset "$var"
done

if [ "${SLUGLINE_MIGRATE_AT_START:-false}" = true ] && [ "${1:-}" = slugline ] && [ "${2:-}" = serve ]; then
    slugline migrate
fi
exec "$@"
