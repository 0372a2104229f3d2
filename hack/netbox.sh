#!/usr/bin/env bash
# Installs the real NetBox the tests run against (hack/testkit/netbox.ts starts it), cached per version outside the
# repository like the control plane's binaries. Progress goes to stderr; the last line on stdout is the cache entry.
#
#   hack/netbox.sh install     what is missing, in order: Redis (Debian's redis-server, with apt-get when root), a
#                              virtualenv with netbox==NETBOX_VERSION from PyPI (Python 3.12 from pyenv), and a
#                              PostgreSQL data directory with NetBox's migrations applied. Idempotent.
#   hack/netbox.sh check       exit 0 when everything is installed; else one line on stderr saying what is missing
#
# Cache: ${METAL3_IPAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metal3-ipam-ts}/netbox-<version>/
#   venv/          the virtualenv (about 550 MB; cold install about a minute)
#   pgdata-pg<N>/  the migrated database cluster (NetBox's 336 migrations cost about 6 minutes of CPU once per
#                  machine); every start copies it, so a warm start restores in well under a second
# Each part is built in a temporary folder beside its place and renamed into it at the end, with a .complete stamp:
# an interrupted run leaves no half-built entry, only a temporary folder (and, after SIGKILL, the migration's
# PostgreSQL and Redis) that the next run removes. Installs take a lock (flock), so two never race.
# Overrides: NETBOX_PYTHON (a Python >= 3.12), NETBOX_PG_BIN (PostgreSQL's server binaries).
set -o errexit -o nounset -o pipefail

NETBOX_VERSION="${NETBOX_VERSION:-4.7.3}"
PG_MAJOR="${PG_MAJOR:-15}"
PG_BIN="${NETBOX_PG_BIN:-/usr/lib/postgresql/${PG_MAJOR}/bin}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE_ROOT="${METAL3_IPAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metal3-ipam-ts}"
ENTRY="${CACHE_ROOT}/netbox-${NETBOX_VERSION}"
VENV="${ENTRY}/venv"
PGDATA_CACHE="${ENTRY}/pgdata-pg${PG_MAJOR}"

log() { echo "netbox: $*" >&2; }

# The Python that installs NetBox (>= 3.12): NETBOX_PYTHON, else pyenv's 3.12.x, else python3.12 on the PATH.
find_python() {
  if [[ -n "${NETBOX_PYTHON:-}" ]]; then echo "${NETBOX_PYTHON}"; return; fi
  local root candidate
  if root="$(pyenv root 2>/dev/null)"; then
    for candidate in "${root}"/versions/3.12*/bin/python; do
      [[ -x "${candidate}" ]] && { echo "${candidate}"; return; }
    done
  fi
  command -v python3.12 2>/dev/null && return
  return 1
}

# Runs a command as the owner of PostgreSQL's files: `postgres` when we are root (the server refuses root), else us.
as_pg() {
  if [[ "$(id -u)" == "0" ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  "${VENV}/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

venv_ok() {
  [[ -f "${VENV}/.complete" ]] && "${VENV}/bin/python" -c 'import netbox.cli, gunicorn, psycopg' 2>/dev/null
}

pgdata_ok() { [[ -f "${PGDATA_CACHE}/.complete" && -f "${PGDATA_CACHE}/PG_VERSION" ]]; }

ensure_redis() {
  command -v redis-server >/dev/null 2>&1 && return
  if command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == "0" ]]; then
    log "installing Debian's redis-server"
    apt-get install -y --no-install-recommends redis-server >/dev/null 2>&1 ||
      { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends redis-server >/dev/null 2>&1; } ||
      true
  fi
  command -v redis-server >/dev/null 2>&1 || { log "redis-server is missing: apt-get install redis-server"; return 1; }
}

# A Python virtualenv is not relocatable by its scripts' shebangs, but `venv/bin/python -m ...` works wherever the
# folder is: the test kit runs everything that way, so the venv can be built aside and renamed.
install_venv() {
  venv_ok && return
  local python work
  python="$(find_python)" || { log "no Python 3.12 found (pyenv install 3.12, or set NETBOX_PYTHON)"; return 1; }
  mkdir -p "${ENTRY}"
  rm -rf "${ENTRY}"/.venv-build.*
  work="$(mktemp -d "${ENTRY}/.venv-build.XXXXXX")"
  log "installing netbox==${NETBOX_VERSION} from PyPI with ${python} (about a minute; cached in ${VENV})"
  local pip=("${work}/venv/bin/python" -m pip install --quiet --disable-pip-version-check)
  if ! { "${python}" -m venv "${work}/venv" && "${pip[@]}" "netbox==${NETBOX_VERSION}" >&2; }; then
    rm -rf "${work}"
    log "installing netbox==${NETBOX_VERSION} failed (see pip's output above)"
    return 1
  fi
  touch "${work}/venv/.complete"
  rm -rf "${VENV}" && mv "${work}/venv" "${VENV}" && rm -rf "${work}"
}

# migrate_into DIR: a fresh database cluster in DIR (owned by the PostgreSQL user) with NetBox's schema.
migrate_into() {
  local data="$1" pg_port redis_port redis_pid status=0
  as_pg "${PG_BIN}/initdb" -D "${data}" -U netbox --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
  pg_port="$(free_port)"
  redis_port="$(free_port)"
  as_pg "${PG_BIN}/pg_ctl" -D "${data}" -l "${data}/../postgres.log" -w -o \
    "-p ${pg_port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off" start >/dev/null
  redis-server --port "${redis_port}" --bind 127.0.0.1 --save '' --appendonly no >/dev/null &
  redis_pid=$!
  echo "${redis_pid}" >"$(dirname "${data}")/redis.pid"
  as_pg "${PG_BIN}/psql" -h 127.0.0.1 -p "${pg_port}" -U netbox -d postgres -q -c 'CREATE DATABASE netbox' || status=$?
  if [[ "${status}" == "0" ]]; then
    log "applying NetBox's migrations (about 6 minutes of CPU, once per machine)"
    (
      cd "$(dirname "${data}")"
      # Throwaway secrets: nothing signed or peppered during the migrations outlives them.
      secret="$(head -c 48 /dev/urandom | base64 | tr -d '\n')"
      export NETBOX_CONFIGURATION=configuration PYTHONPATH="${HERE}/netbox" NETBOX_ROOT="${PWD}" \
        NETBOX_TEST_PG_PORT="${pg_port}" NETBOX_TEST_REDIS_PORT="${redis_port}" \
        NETBOX_TEST_SECRET_KEY="${secret}" NETBOX_TEST_TOKEN_PEPPER="${secret}"
      "${VENV}/bin/python" -m netbox migrate --no-input >&2
    ) || status=$?
  fi
  kill "${redis_pid}" 2>/dev/null || true
  as_pg "${PG_BIN}/pg_ctl" -D "${data}" -m fast -w stop >/dev/null || status=1
  return "${status}"
}

# stop_migration_servers DIR: stops the PostgreSQL and Redis a migration in DIR started, if they still run (the
# migration was interrupted: this run's EXIT trap, or a later run finding its folder).
stop_migration_servers() {
  local dir="$1" pid
  if [[ -f "${dir}/pgdata/postmaster.pid" ]]; then
    as_pg "${PG_BIN}/pg_ctl" -D "${dir}/pgdata" -m immediate stop >/dev/null 2>&1 || true
  fi
  pid="$(cat "${dir}/redis.pid" 2>/dev/null || true)"
  if [[ -n "${pid}" ]] && grep -q redis-server "/proc/${pid}/cmdline" 2>/dev/null; then kill "${pid}" 2>/dev/null; fi
  return 0
}

MIGRATION_WORK=""
cleanup_migration() {
  [[ -n "${MIGRATION_WORK}" ]] || return 0
  stop_migration_servers "${MIGRATION_WORK}"
  rm -rf "${MIGRATION_WORK}"
}

install_pgdata() {
  pgdata_ok && return
  if [[ ! -x "${PG_BIN}/initdb" ]]; then
    log "PostgreSQL ${PG_MAJOR} is missing (${PG_BIN}): apt-get install postgresql-${PG_MAJOR}"
    return 1
  fi
  local work stale
  # What an interrupted install left (we hold the install lock: no other install is running).
  for stale in "${TMPDIR:-/tmp}"/metal3-ipam-netbox-migrate.*; do
    [[ -d "${stale}" ]] && stop_migration_servers "${stale}" && rm -rf "${stale}"
  done
  rm -rf "${ENTRY}"/.pgdata-build.*
  # The PostgreSQL user must reach the data folder: build it under /tmp, then copy it into the cache.
  work="$(mktemp -d "${TMPDIR:-/tmp}/metal3-ipam-netbox-migrate.XXXXXX")"
  MIGRATION_WORK="${work}"
  trap cleanup_migration EXIT
  trap 'exit 130' INT TERM
  chmod 0755 "${work}"
  [[ "$(id -u)" == "0" ]] && chown postgres "${work}"
  if ! migrate_into "${work}/pgdata"; then
    log "migrating NetBox's database failed (PostgreSQL's log: ${work}/postgres.log)"
    return 1
  fi
  local stage; stage="$(mktemp -d "${ENTRY}/.pgdata-build.XXXXXX")"
  cp -a "${work}/pgdata" "${stage}/pgdata"
  rm -f "${stage}/pgdata/postmaster.opts" "${stage}/pgdata/postmaster.pid"
  touch "${stage}/pgdata/.complete"
  rm -rf "${PGDATA_CACHE}" && mv "${stage}/pgdata" "${PGDATA_CACHE}" && rm -rf "${stage}"
}

check() {
  command -v redis-server >/dev/null 2>&1 || { log "redis-server is not installed"; return 1; }
  [[ -x "${PG_BIN}/postgres" ]] || { log "PostgreSQL ${PG_MAJOR} is not installed (${PG_BIN})"; return 1; }
  venv_ok || { log "netbox ${NETBOX_VERSION} is not installed (${VENV})"; return 1; }
  pgdata_ok || { log "NetBox's migrated database is missing (${PGDATA_CACHE})"; return 1; }
}

main() {
  case "${1:-install}" in
    install)
      # One install at a time per machine (two test runs starting at once): the second waits, then finds it done.
      mkdir -p "${ENTRY}"
      exec 9>"${ENTRY}/.lock"
      flock -n 9 || { log "waiting for another hack/netbox.sh install to finish"; flock 9; }
      ensure_redis
      install_venv
      install_pgdata
      echo "${ENTRY}"
      ;;
    check) check && echo "${ENTRY}" ;;
    *) log "usage: hack/netbox.sh install|check"; exit 2 ;;
  esac
}

main "$@"
