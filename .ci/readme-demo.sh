#!/usr/bin/env bash
# The README's demo command, typed as a newcomer types it, in a clean clone of HEAD: it must install, seed,
# serve HTTP and stop cleanly. (A port is appended so a busy :8000 on the CI machine does not matter.)
set -euo pipefail
cd "$(dirname "$0")/.."
command=$(grep -m1 -F '.venv/bin/python manage.py demo' README.md)
work=$(mktemp -d)
trap 'kill "${pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
git clone -q . "$work/flowdeck"
cd "$work/flowdeck"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "\$ $command --port $port"
bash -c "$command --port $port" >demo.out 2>demo.err &
pid=$!
for _ in $(seq 1 600); do
  grep -q "running at http://127.0.0.1:$port/" demo.out && break
  kill -0 "$pid" 2>/dev/null || { cat demo.out demo.err; echo "the demo exited early"; exit 1; }
  sleep 1
done
cat demo.out
grep -q "running at http://127.0.0.1:$port/" demo.out || { cat demo.err; echo "the demo never served"; exit 1; }
code=$(python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port/').status)")
[ "$code" = 200 ] || { echo "GET / answered $code"; exit 1; }
# A background job of a script ignores SIGINT, so stop it the way a supervisor does (SIGTERM takes the
# same path as Ctrl-C; the acceptance test sends SIGINT itself).
kill -TERM "$pid"
wait "$pid"
tail -1 demo.out | grep -qx stopped || { cat demo.out demo.err; echo "the demo did not stop cleanly"; exit 1; }
# The README's next step: the installed `flowdeck` script (a non-editable install) in the project folder
# sees the demo's executions, in the same db.sqlite3 as manage.py.
.venv/bin/flowdeck ls --status stopped | grep -q '^demo-stopped ' || { .venv/bin/flowdeck ls; echo "flowdeck ls does not see the demo"; exit 1; }
echo "README demo command: ok"
