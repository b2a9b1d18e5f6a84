#!/usr/bin/env bash
# Interop against the official TypeScript SDK (@modelcontextprotocol/sdk,
# pinned in conformance/package.json), both directions, both transports:
#
#   ts-client/go-server/{stdio,http}   interop/ts-client.mjs drives examples/everything-server
#   go-client/ts-server/{stdio,http}   interop/goclient drives interop/ts-server.mjs
#
# Each driver prints "PLAN name ...", then "PASS name" or "FAIL name: ..."
# per check. A planned check that never reports (the driver died or timed
# out) fails, and so does a driver's non-zero exit status and any process of
# the run still alive at the end. The last line is "N passed, M failed"; the
# exit status is 0 only when M is 0.
#
# Knobs (environment):
#   INTEROP_DRIVER_TIMEOUT_SECONDS  hard cap per driver (default 30)
#   INTEROP_BUDGET_SECONDS          whole-run bound after install and build (default 100)
#   INTEROP_RESULTS_DIR             logs (default conformance/interop-results, wiped)
set -euo pipefail

CONF_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$CONF_DIR/.." && pwd)
cd "$ROOT"

DRIVER_TIMEOUT=${INTEROP_DRIVER_TIMEOUT_SECONDS:-30}
BUDGET=${INTEROP_BUDGET_SECONDS:-100}
RESULTS=${INTEROP_RESULTS_DIR:-conformance/interop-results}
# Every process of the run carries this in its environment, so that the
# leftover check finds exactly ours.
RUN_ID="interop-$$-$RANDOM$RANDOM"

PASSED=0
FAILED=0
SUMMARY_DONE=0
SERVER_PID=""

source "$CONF_DIR/lib/shared.sh"

pass() { PASSED=$((PASSED + 1)); echo "PASS $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL $*"; }

# ours lists the processes of this run still alive.
ours() {
  local p
  for p in /proc/[0-9]*; do
    grep -qzxF "MCP_INTEROP_RUN=$RUN_ID" "$p/environ" 2>/dev/null && echo "${p#/proc/}"
  done
  return 0
}

finish() {
  local rc=$?
  stop_server
  if [[ $SUMMARY_DONE != 1 ]]; then
    for pid in $(ours); do kill -9 "$pid" 2>/dev/null || true; done
    echo "interop: aborted (exit status $rc) before the run completed" >&2
    echo "$PASSED passed, $((FAILED + 1)) failed"
    exit $((rc == 0 ? 1 : rc))
  fi
}
trap finish EXIT
trap 'exit 130' INT TERM

install_pinned interop
sdk_want=$("$NODE" -p 'require("./conformance/package.json").dependencies["@modelcontextprotocol/sdk"]')
sdk_got=$("$NODE" -p 'require("./conformance/node_modules/@modelcontextprotocol/sdk/package.json").version')
if [[ $sdk_got != "$sdk_want" ]]; then
  echo "interop: @modelcontextprotocol/sdk $sdk_got installed, $sdk_want pinned" >&2
  exit 1
fi

echo "interop: go build ./examples/everything-server ./conformance/interop/goclient"
mkdir -p conformance/bin
go build -o conformance/bin/everything-server ./examples/everything-server
go build -o conformance/bin/interop-goclient ./conformance/interop/goclient

rm -rf "$RESULTS"
mkdir -p "$RESULTS"
START=$SECONDS
echo "interop: TypeScript SDK $sdk_got, node $node_version, logs in $RESULTS"

# start_server <log> <cmd...>: starts an HTTP server that prints
# "serving MCP at <url>" and sets SERVER_URL.
start_server() {
  local log=$1
  shift
  MCP_INTEROP_RUN=$RUN_ID "$@" </dev/null >"$log" 2>&1 &
  SERVER_PID=$!
  SERVER_URL=""
  local deadline=$((SECONDS + 20))
  until SERVER_URL=$(sed -n 's/.*serving MCP at \(http[^ ]*\).*/\1/p' "$log" | head -n1) && [[ -n $SERVER_URL ]]; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null || ((SECONDS > deadline)); then
      return 1
    fi
    sleep 0.05
  done
}

# drive <label> <cmd...>: runs one driver and reports its checks.
drive() {
  local label=$1
  shift
  local out="$RESULTS/${label//\//_}.out" err="$RESULTS/${label//\//_}.log"
  local cap=$((BUDGET - (SECONDS - START)))
  ((cap > DRIVER_TIMEOUT)) && cap=$DRIVER_TIMEOUT
  if ((cap < 5)); then
    fail "$label: not run: the ${BUDGET}s budget is used up"
    return
  fi
  local rc=0 t0=$SECONDS
  MCP_INTEROP_RUN=$RUN_ID timeout -k 3 "$cap" "$@" </dev/null >"$out" 2>"$err" || rc=$?
  local planned=() line name
  declare -A reported=()
  while IFS= read -r line; do
    case $line in
    "PLAN "*) read -r -a planned <<<"${line#PLAN }" ;;
    "PASS "*)
      name=${line#PASS }
      reported[$name]=1
      pass "$label $name"
      ;;
    "FAIL "*)
      name=${line#FAIL }
      name=${name%%:*}
      reported[$name]=1
      fail "$label ${line#FAIL }"
      ;;
    esac
  done <"$out"
  local why="exit status $rc"
  ((rc == 124 || rc == 137)) && why="killed after ${cap}s"
  if ((${#planned[@]} == 0)); then
    fail "$label: the driver planned no checks ($why; see $err)"
  fi
  for name in "${planned[@]}"; do
    [[ -n ${reported[$name]+x} ]] || fail "$label $name: not run ($why; see $err)"
  done
  if ((rc != 0)) && ((${#planned[@]} > 0)); then
    fail "$label: the driver ended with $why (see $err)"
  fi
  echo "      ($label: $((SECONDS - t0))s)"
}

TS_CLIENT=conformance/interop/ts-client.mjs
TS_SERVER=conformance/interop/ts-server.mjs
GO_SERVER=conformance/bin/everything-server
GO_CLIENT=conformance/bin/interop-goclient

drive ts-client/go-server/stdio "$NODE" "$TS_CLIENT" --stdio "$GO_SERVER"

if start_server "$RESULTS/go-server-http.log" "$GO_SERVER" -http 127.0.0.1:0; then
  drive ts-client/go-server/http "$NODE" "$TS_CLIENT" --http "$SERVER_URL"
else
  fail "ts-client/go-server/http: everything-server did not start (see $RESULTS/go-server-http.log)"
fi
stop_server

drive go-client/ts-server/stdio "$GO_CLIENT" -stdio "$NODE" "$TS_SERVER" --stdio

if start_server "$RESULTS/ts-server-http.log" "$NODE" "$TS_SERVER" --http 127.0.0.1:0; then
  drive go-client/ts-server/http "$GO_CLIENT" -http "$SERVER_URL"
else
  fail "go-client/ts-server/http: ts-server.mjs did not start (see $RESULTS/ts-server-http.log)"
fi
stop_server

# Every process the run started must be gone by now.
left=""
for _ in $(seq 1 20); do
  left=$(ours)
  [[ -z $left ]] && break
  sleep 0.1
done
if [[ -z $left ]]; then
  pass "no-leftover-processes"
else
  fail "no-leftover-processes: still running: $(for p in $left; do tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null; echo -n "(pid $p) "; done)"
  for p in $left; do kill -9 "$p" 2>/dev/null || true; done
fi

echo "interop: $((SECONDS - START))s"
SUMMARY_DONE=1
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
