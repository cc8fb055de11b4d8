# Shared by the benchmark scripts (sourced, not run): a release hub on a free loopback port,
# and the heading that names the machine.
#
#   start_hub WORK LOG 'EXTRA_JSON'  writes WORK/gondola.json with a fresh database in WORK/db, a
#                                    random token secret and API key "bench" plus EXTRA_JSON members,
#                                    starts `$bin/gondola serve` logging to LOG and waits for /health;
#                                    sets $port, $secret and $server (its pid); with $hub_preload
#                                    set, the hub starts with LD_PRELOAD=$hub_preload
#   stop_hub                         stops the hub started last
#   machine_heading TITLE            prints "## TITLE, <date> — <cores> cores (<cpu>), <memory> GiB"
#   raise_open_files N               raises this shell's open-file limit (soft, and hard when needed:
#                                    root only) to N for the processes it starts next
#   wait_for_line FILE TEXT SECONDS  waits until FILE has a line containing TEXT; fails after SECONDS
#   wait_for_port PORT               waits until something listens on 127.0.0.1:PORT; fails after 10 s

start_hub() {
  local work=$1 log=$2 extra=$3
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  secret="bench-secret-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  rm -rf "$work/db" && mkdir -p "$work/db"
  cat > "$work/gondola.json" <<JSON
{"listen": "127.0.0.1:$port", "database": "$work/db/gondola.sqlite", "token_hmac_secret": "$secret", "api_key": "bench",
 $extra}
JSON
  env ${hub_preload:+LD_PRELOAD="$hub_preload"} "$bin/gondola" serve --config "$work/gondola.json" > "$log" 2>&1 &
  server=$!
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null && return 0
    sleep 0.1
  done
  echo "the hub did not answer /health on port $port; its log: $log" >&2
  return 1
}

stop_hub() {
  kill "$server"
  wait "$server" 2>/dev/null || true
}

machine_heading() {
  local cpu
  cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
  echo "## $1, $(date -u +%Y-%m-%d) — $(nproc) cores ($cpu), $(free -g | awk '/Mem:/ {print $2}') GiB"
}

raise_open_files() {
  local want=$1 hard
  hard=$(ulimit -Hn)
  if [ "$hard" != unlimited ] && [ "$hard" -lt "$want" ]; then
    if ! ulimit -Hn "$want" 2>/dev/null; then
      echo "this run needs $want open files; the hard limit is $hard and this user may not raise it (raising it takes root with CAP_SYS_RESOURCE)" >&2
      return 1
    fi
  fi
  ulimit -n "$want"
}

wait_for_line() {
  local file=$1 text=$2 seconds=$3
  for _ in $(seq 1 $((seconds * 10))); do
    grep -q -- "$text" "$file" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "no line with '$text' in $file after $seconds s" >&2
  return 1
}

wait_for_port() {
  for _ in $(seq 1 100); do
    (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on port $1" >&2
  return 1
}
