#!/usr/bin/env bash
# Runs the official MCP conformance suite against examples/everything-server
# and examples/everything-client, with two pinned suite versions:
#
#   0.1.16          server: the "active" suite (protocol 2025-06-18/2025-11-25)
#                   client: every scenario tagged 2025-11-25
#                   and the OAuth client credentials extension's two scenarios,
#                   enterprise-managed authorization's (cross-app access),
#                   and the two auth scenarios of 2025-03-26 (backcompat)
#   0.2.0-alpha.12  server + client: the frozen 2026-07-28 requirement set
#                   (`list --requirements 2026-07-28`), the tasks extension's
#                   scenarios (tasks-*), the Skills extension's (sep-2640-*)
#                   and the OAuth client credentials
#                   extension's (auth/client-credentials-*), the two of
#                   2025-03-26 auth discovery, and the client side of the
#                   auth extensions (auth/enterprise-managed-authorization,
#                   auth/wif-jwt-bearer, auth/dpop, auth/dpop-nonce), run
#                   at the 2026-07-28 wire
#
# Every scenario runs on its own (one CLI invocation per scenario), and its
# outcome is compared with conformance/expected-failures.txt:
#   PASS   passed, not listed                -> counted in N
#   XFAIL  failed, listed                    -> reported, counted in neither
#   FAIL   failed, not listed                -> counted in M
#   STALE  passed, but listed (stale entry)  -> counted in M
# The last line printed is exactly "N passed, M failed"; the exit status is 0
# only when M is 0. See conformance/NOTES.md for what the suite checks.
#
# Knobs (environment):
#   CONFORMANCE_VERSIONS   "0.1.16 0.2.0-alpha.12" (default) or a subset
#   CONFORMANCE_ROLES      "server client" (default) or a subset
#   CONFORMANCE_FILTER     extended regex; only matching scenario names run
#   CONFORMANCE_BUDGET_SECONDS        whole-run time bound (default 840)
#   CONFORMANCE_SCENARIO_TIMEOUT_SECONDS  hard cap per scenario (default 60)
#   CONFORMANCE_CLIENT_TIMEOUT_MS     suite's client-process timeout (default 15000)
#   CONFORMANCE_SERVER_TIMEOUT_MS     0.2.0 per-scenario timeout (default 20000)
#   CONFORMANCE_SKIP_BUILD=1          do not `go build` the two programs
#   EVERYTHING_SERVER / EVERYTHING_CLIENT  override the commands under test
#   CONFORMANCE_EXPECTED_FAILURES     baseline file (default conformance/expected-failures.txt)
#   CONFORMANCE_RESULTS_DIR           where results go (default conformance/results, wiped)
set -euo pipefail

CONF_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$CONF_DIR/.." && pwd)
cd "$ROOT"

START_SECONDS=$SECONDS
BUDGET=${CONFORMANCE_BUDGET_SECONDS:-840}
HARD_TIMEOUT=${CONFORMANCE_SCENARIO_TIMEOUT_SECONDS:-60}
CLIENT_TIMEOUT_MS=${CONFORMANCE_CLIENT_TIMEOUT_MS:-15000}
SERVER_TIMEOUT_MS=${CONFORMANCE_SERVER_TIMEOUT_MS:-20000}
FILTER=${CONFORMANCE_FILTER:-}
VERSIONS=${CONFORMANCE_VERSIONS:-"0.1.16 0.2.0-alpha.12"}
ROLES=${CONFORMANCE_ROLES:-"server client"}
SERVER_CMD_STR=${EVERYTHING_SERVER:-conformance/bin/everything-server}
CLIENT_CMD=${EVERYTHING_CLIENT:-conformance/bin/everything-client}
SKIP_BUILD=${CONFORMANCE_SKIP_BUILD:-0}
BASELINE_FILE=${CONFORMANCE_EXPECTED_FAILURES:-conformance/expected-failures.txt}
RESULTS=${CONFORMANCE_RESULTS_DIR:-conformance/results}

KNOWN_VERSIONS="0.1.16 0.2.0-alpha.12"
# 0.1.16 has no command that prints its "active" suite: active = all server
# scenarios minus the suite's pending list, which is exactly these two.
PENDING_0116_SERVER="json-schema-2020-12 server-sse-polling"

source "$CONF_DIR/lib/shared.sh"
declare -A CLI=(
  [0.1.16]=conformance/node_modules/conformance-0116/dist/index.js
  [0.2.0-alpha.12]=conformance/node_modules/conformance-0200/dist/index.js
)

TOTAL_PASS=0
TOTAL_BAD=0
SUMMARY_DONE=0
SERVER_PID=""
SERVER_URL=""
SERVER_LOG=""

log() { printf '%s\n' "$*"; }
elapsed() { echo $((SECONDS - START_SECONDS)); }

finish() {
  local rc=$?
  stop_server
  if [[ $SUMMARY_DONE != 1 ]]; then
    echo "conformance: aborted (exit status $rc) before the run completed" >&2
    echo "$TOTAL_PASS passed, $((TOTAL_BAD + 1)) failed"
    exit $((rc == 0 ? 1 : rc))
  fi
}
trap finish EXIT
trap 'exit 130' INT TERM

# --- install the pinned suite and Node 22 ----------------------------------
install_pinned conformance
for v in $KNOWN_VERSIONS; do
  [[ -f ${CLI[$v]} ]] || { echo "conformance: missing ${CLI[$v]}" >&2; exit 1; }
  got=$("$NODE" "${CLI[$v]}" --version)
  [[ $got == "$v" ]] || { echo "conformance: ${CLI[$v]} reports version $got, expected $v" >&2; exit 1; }
done
LOOPBACK_URL=$("$NODE" -e 'process.stdout.write(require("url").pathToFileURL(process.argv[1]).href)' "$CONF_DIR/lib/loopback.mjs")
suite() { # suite <version> <args...>: the CLI under Node 22, listeners pinned to loopback
  local v=$1
  shift
  "$NODE" --import "$LOOPBACK_URL" "${CLI[$v]}" "$@"
}

# --- build the programs under test -------------------------------------------
if [[ $SKIP_BUILD != 1 ]]; then
  log "conformance: go build ./examples/everything-server ./examples/everything-client"
  mkdir -p conformance/bin
  go build -o conformance/bin/everything-server ./examples/everything-server
  go build -o conformance/bin/everything-client ./examples/everything-client
fi
read -r -a SERVER_CMD <<<"$SERVER_CMD_STR"

# --- expected failures --------------------------------------------------------
declare -A BASELINE=()
if [[ -f $BASELINE_FILE ]]; then
  lineno=0
  while IFS= read -r raw || [[ -n $raw ]]; do
    lineno=$((lineno + 1))
    body=${raw%%#*}
    reason=""
    [[ $raw == *"#"* ]] && reason=${raw#*#}
    reason=$(echo "$reason" | sed 's/^ *//; s/ *$//')
    read -r b_ver b_role b_scen b_extra <<<"$body" || true
    [[ -z ${b_ver:-} ]] && continue
    if [[ -z ${b_scen:-} || -n ${b_extra:-} || " $KNOWN_VERSIONS " != *" $b_ver "* ||
      ($b_role != server && $b_role != client) ]]; then
      echo "conformance: $BASELINE_FILE:$lineno: expected '<version> <role> <scenario>  # reason'" \
        "with version in {$KNOWN_VERSIONS} and role server|client, got: $raw" >&2
      exit 2
    fi
    BASELINE["$b_ver $b_role $b_scen"]=${reason:-"(no reason given)"}
  done <"$BASELINE_FILE"
fi

# --- scenario lists ---------------------------------------------------------------
list_scenarios() { # list_scenarios <version> <role>
  local v=$1 role=$2
  if [[ $v == 0.1.16 ]]; then
    suite "$v" list "--$role" --spec-version 2025-11-25 |
      sed -n 's/^  - \([^ ]*\).*/\1/p' |
      if [[ $role == server ]]; then grep -vxF -f <(tr ' ' '\n' <<<"$PENDING_0116_SERVER"); else cat; fi
    # The OAuth client credentials extension's scenarios
    # (io.modelcontextprotocol/oauth-client-credentials), enterprise-managed
    # authorization's (cross-app access), and the two of 2025-03-26
    # discovery (no protected resource metadata).
    if [[ $role == client ]]; then
      suite "$v" list --client | sed -n 's/^  - \(auth\/client-credentials-[^ ]*\) .*\[extension\].*/\1/p'
      suite "$v" list --client | sed -n 's/^  - \(auth\/cross-app-access-complete-flow\) .*\[extension\].*/\1/p'
      suite "$v" list --client | sed -n 's/^  - \(auth\/2025-03-26-[^ ]*\) .*/\1/p'
    fi
  else
    suite "$v" list --requirements 2026-07-28 |
      awk -v want="$role" '
        /^Server scenarios/ { s = "server"; next }
        /^Client scenarios/ { s = "client"; next }
        /^[^ ]/             { s = "" }
        s == want && /^  - / { print $2 }'
    # The tasks extension's scenarios (io.modelcontextprotocol/tasks) and
    # the Skills extension's (io.modelcontextprotocol/skills, SEP-2640),
    # which the requirement set leaves out as extensions'.
    suite "$v" list |
      awk -v want="$role" '
        /^Server scenarios/ { s = "server"; next }
        /^Client scenarios/ { s = "client"; next }
        /^[^ ]/             { s = "" }
        s == want && /^  - tasks-/ && /\[extension\]/ { print $2 }
        s == want && /^  - sep-2640-/ && /\[extension\]/ { print $2 }'
    # The OAuth client credentials extension's scenarios, likewise, the
    # two auth scenarios of 2025-03-26 discovery, and the extensions'
    # enterprise-managed authorization, workload identity and DPoP.
    suite "$v" list |
      awk -v want="$role" '
        /^Server scenarios/ { s = "server"; next }
        /^Client scenarios/ { s = "client"; next }
        /^[^ ]/             { s = "" }
        s == want && /^  - auth\/client-credentials-/ && /\[extension\]/ { print $2 }
        s == want && /^  - auth\/(enterprise-managed-authorization|wif-jwt-bearer|dpop|dpop-nonce) / && /\[extension\]/ { print $2 }
        s == want && /^  - auth\/2025-03-26-/ { print $2 }'
  fi
}

free_port() {
  "$NODE" -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{process.stdout.write(String(s.address().port));s.close()})'
}

start_server() { # start_server <version>
  local port
  port=$(free_port)
  SERVER_LOG="$RESULTS/everything-server.$1.log"
  echo "--- $(date -u +%FT%TZ) ${SERVER_CMD[*]} -http 127.0.0.1:$port" >>"$SERVER_LOG"
  "${SERVER_CMD[@]}" -http "127.0.0.1:$port" >>"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!
  SERVER_URL="http://127.0.0.1:$port/mcp"
  local deadline=$((SECONDS + 20))
  until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      echo "conformance: everything-server exited before listening (see $SERVER_LOG)" >&2
      SERVER_PID=""
      return 1
    fi
    if ((SECONDS > deadline)); then
      echo "conformance: everything-server did not listen on 127.0.0.1:$port within 20s" >&2
      return 1
    fi
    sleep 0.1
  done
}

declare -A START_FAILS=()
ensure_server() { # ensure_server <version>: (re)start the server if it is not running
  local v=$1
  if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then return 0; fi
  [[ -n $SERVER_PID ]] && log "  !! everything-server died; restarting it (see $SERVER_LOG)"
  stop_server
  if ((${START_FAILS[$v]:-0} >= 3)); then return 1; fi
  if start_server "$v"; then return 0; fi
  START_FAILS[$v]=$((${START_FAILS[$v]:-0} + 1))
  stop_server
  return 1
}

# --- run ------------------------------------------------------------------------------
rm -rf "$RESULTS"
mkdir -p "$RESULTS"

declare -A SCOPE_RUN=()   # "<version> <role>" -> scenario list was computed
declare -A IN_RUN=()      # "<version> <role> <scenario>" -> 1
declare -A STAT=()        # "<version> <role> <outcome>" -> count
XFAIL_LINES=()
FAIL_LINES=()
STALE_LINES=()
PLAN=()
for v in $VERSIONS; do
  [[ " $KNOWN_VERSIONS " == *" $v "* ]] || { echo "conformance: unknown version '$v'" >&2; exit 2; }
  for role in $ROLES; do
    [[ $role == server || $role == client ]] || { echo "conformance: unknown role '$role'" >&2; exit 2; }
    mapfile -t names < <(list_scenarios "$v" "$role")
    if ((${#names[@]} == 0)); then
      echo "conformance: no $role scenarios listed by $v" >&2
      exit 1
    fi
    SCOPE_RUN["$v $role"]=1
    for s in "${names[@]}"; do
      IN_RUN["$v $role $s"]=1
      if [[ -z $FILTER ]] || [[ $s =~ $FILTER ]]; then PLAN+=("$v $role $s"); fi
    done
  done
done
log "conformance: ${#PLAN[@]} scenarios planned (node $node_version), results in $RESULTS"

record() { # record <version> <role> <scenario> <PASS|FAIL>
  local v=$1 role=$2 s=$3 verdict=$4 key="$1 $2 $3" outcome
  if [[ -n ${BASELINE[$key]+x} ]]; then
    if [[ $verdict == PASS ]]; then outcome=STALE; else outcome=XFAIL; fi
  else
    outcome=$verdict
  fi
  STAT["$v $role $outcome"]=$((${STAT["$v $role $outcome"]:-0} + 1))
  case $outcome in
  PASS) TOTAL_PASS=$((TOTAL_PASS + 1)) ;;
  XFAIL) XFAIL_LINES+=("~ $key  # ${BASELINE[$key]}") ;;
  FAIL)
    TOTAL_BAD=$((TOTAL_BAD + 1))
    FAIL_LINES+=("x $key")
    ;;
  STALE)
    TOTAL_BAD=$((TOTAL_BAD + 1))
    STALE_LINES+=("! $key  # listed as expected failure, but it passes: remove the entry")
    ;;
  esac
  LAST_OUTCOME=$outcome
}

i=0
current=""
for entry in "${PLAN[@]}"; do
  i=$((i + 1))
  read -r v role s <<<"$entry"
  # one fresh server per version's server pass (started lazily by ensure_server)
  if [[ $role != server || $current != "$v" ]]; then
    stop_server
    current=""
    [[ $role == server ]] && current=$v
  fi

  dir="$RESULTS/$v/$role/${s//\//__}"
  mkdir -p "$dir"
  remaining=$((BUDGET - $(elapsed)))
  if ((remaining <= 5)); then
    printf '  [ERROR] not run: the %ss time budget of the whole run is used up\n' "$BUDGET" >"$dir/verdict.txt"
    verdict=FAIL
    secs=0
  else
    cap=$((remaining < HARD_TIMEOUT ? remaining : HARD_TIMEOUT))
    if [[ $role == server ]] && ! ensure_server "$v"; then
      printf '  [ERROR] not run: everything-server is not running (see %s)\n' "$SERVER_LOG" >"$dir/verdict.txt"
      record "$v" "$role" "$s" FAIL
      printf '[%3d/%d] %-5s %-14s %-6s %s (0s)\n' "$i" "${#PLAN[@]}" "$LAST_OUTCOME" "$v" "$role" "$s"
      [[ $LAST_OUTCOME == FAIL ]] && cat "$dir/verdict.txt"
      continue
    fi
    if [[ $role == server ]]; then
      args=(server --url "$SERVER_URL" --scenario "$s" -o "$dir/out")
      [[ $v == 0.2.0-alpha.12 ]] && args+=(--spec-version 2026-07-28 --force --timeout "$SERVER_TIMEOUT_MS")
    else
      args=(client --command "$CLIENT_CMD" --scenario "$s" --timeout "$CLIENT_TIMEOUT_MS" -o "$dir/out")
      [[ $v == 0.2.0-alpha.12 ]] && args+=(--spec-version 2026-07-28 --force)
    fi
    t0=$SECONDS
    set +e
    timeout -k 5 "$cap" "$NODE" --import "$LOOPBACK_URL" "${CLI[$v]}" "${args[@]}" </dev/null >"$dir/cli.log" 2>&1
    rc=$?
    set -e
    secs=$((SECONDS - t0))
    "$NODE" conformance/lib/verdict.mjs "$dir/out" >"$dir/verdict.txt"
    verdict=$(head -n1 "$dir/verdict.txt" | cut -d' ' -f1)
    if ((rc == 124 || rc == 137)); then
      echo "  [ERROR] killed after ${cap}s (hard per-scenario timeout)" >>"$dir/verdict.txt"
      verdict=FAIL
    elif ((rc != 0)) && [[ $verdict == PASS ]]; then
      echo "  [ERROR] the conformance CLI exited with status $rc (client exit status or timeout; see cli.log)" >>"$dir/verdict.txt"
      verdict=FAIL
    fi
  fi
  record "$v" "$role" "$s" "$verdict"
  printf '[%3d/%d] %-5s %-14s %-6s %s (%ss)\n' "$i" "${#PLAN[@]}" "$LAST_OUTCOME" "$v" "$role" "$s" "$secs"
  if [[ $LAST_OUTCOME == FAIL ]]; then
    grep -v '^PASS\|^FAIL' "$dir/verdict.txt" | head -n 12 || true
    echo "        log: $dir/cli.log"
  fi
done
stop_server

# Baseline entries for a version/role that ran but naming no scenario of its set.
if [[ -z $FILTER ]]; then
  for key in "${!BASELINE[@]}"; do
    read -r v role s <<<"$key"
    if [[ -n ${SCOPE_RUN["$v $role"]+x} && -z ${IN_RUN[$key]+x} ]]; then
      TOTAL_BAD=$((TOTAL_BAD + 1))
      STALE_LINES+=("! $key  # not a scenario of this version/role's run set: remove the entry")
    fi
  done
fi

# --- report ---------------------------------------------------------------------
log ""
log "=== conformance summary ($(elapsed)s) ==="
for v in $VERSIONS; do
  for role in $ROLES; do
    p=${STAT["$v $role PASS"]:-0}
    f=${STAT["$v $role FAIL"]:-0}
    x=${STAT["$v $role XFAIL"]:-0}
    st=${STAT["$v $role STALE"]:-0}
    printf '  %-14s %-6s %3d run: %3d passed, %3d failed, %3d expected failures, %3d stale\n' \
      "$v" "$role" $((p + f + x + st)) "$p" "$f" "$x" "$st"
  done
done
if ((${#XFAIL_LINES[@]} > 0)); then
  log ""
  log "Expected failures (listed in $BASELINE_FILE; not counted):"
  printf '  %s\n' "${XFAIL_LINES[@]}"
fi
if ((${#FAIL_LINES[@]} > 0)); then
  log ""
  log "Unexpected failures (details in $RESULTS/<version>/<role>/<scenario>/):"
  printf '  %s\n' "${FAIL_LINES[@]}"
fi
if ((${#STALE_LINES[@]} > 0)); then
  log ""
  log "Stale baseline entries:"
  printf '  %s\n' "${STALE_LINES[@]}"
fi
log ""
SUMMARY_DONE=1
echo "$TOTAL_PASS passed, $TOTAL_BAD failed"
((TOTAL_BAD == 0))
