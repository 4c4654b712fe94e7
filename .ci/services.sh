# Starts the machine's PostgreSQL and NATS when they are not running (commands from the machine
# notes); installs them from Debian's packages when missing. Sourced by .ci/run.
ensure_services() {
  if command -v pg_lsclusters >/dev/null 2>&1; then
    if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
      pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
    fi
  fi
  if command -v nats-server >/dev/null 2>&1 && ! (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; then
    mkdir -p /var/lib/nats-server
    start-stop-daemon --start --oknodo --background --exec "$(command -v nats-server)" -- \
      -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log || true
  fi
}
