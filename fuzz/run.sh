#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers with libFuzzer (issue 9), on the stable toolchain.
#
# Usage: fuzz/run.sh [SECONDS_PER_TARGET] [TARGET…]     (default: 600 s; domain whois rdap query)
#
# Seeds come from tests/data (or $DSA_TEST_DATA): recorded RDAP answers with their HTTP status
# and real domain names; the whois target builds its answers from choices (fuzz/checks.rs) and
# starts from a few short choice strings. The corpus grows in fuzz/corpus/TARGET.
# Each input may take at most 5 s and 2 GiB (libFuzzer's -timeout and -rss_limit_mb): a slower or
# bigger one is reported as a crash. A crashing input is saved in fuzz/artifacts/TARGET/; copy it
# to fuzz/regressions/TARGET/ so tests/tests/app/fuzz_regressions.rs replays it in CI.
#
# The build instruments the code for libFuzzer the way cargo-fuzz does (SanitizerCoverage with
# inline 8-bit counters, PC table and, except for whois, compare tracing), without a sanitizer,
# so no nightly toolchain is needed. `cargo fuzz run TARGET -s none` works too where cargo-fuzz is installed.
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-600}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(domain whois rdap query)
data="${DSA_TEST_DATA:-$(cd .. && pwd)/tests/data}"
[ -f "$data/whois/index.jsonl" ] || { echo "fuzz: test data not found at $data (DSA_TEST_DATA)" >&2; exit 1; }

# --- Seeds (written once; the fuzzer adds to the same directories).
python3 - "$data" <<'PY'
import csv, hashlib, json, os, sys
data = sys.argv[1]
def put(target, blob):
    d = f"corpus/{target}"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/seed-{hashlib.sha1(blob).hexdigest()}", "wb") as f:
        f.write(blob)
# The whois target reads its bytes as choices (fuzz/checks.rs, whois_structured): a few short
# choice strings to start from; the recorded answers are replayed in CI instead
# (tests/tests/app/fuzz_regressions.rs).
for seed in [bytes([1, 1, 0, 1, 0, 2, 28, 0, 1, 2, 2, 38, 0, 1, 5, 2, 3, 0, 1, 9, 6, 0, 0]),
             bytes([0, 0, 0, 2, 11, 8, 2, 28, 0]),
             bytes([3, 3, 2, 1, 7, 2, 5, 0, 1, 26, 6, 1, 0]),
             bytes([5, 4, 0, 7, 19, 2, 22, 0, 1, 31, 2, 36, 0])]:
    put("whois", seed)
for line in open(f"{data}/rdap/index.jsonl"):
    e = json.loads(line)
    body = open(f"{data}/rdap/{e['response_file']}", "rb").read()
    put("rdap", f"{e.get('http_status') or 200}\n".encode() + body)
with open(f"{data}/domains/majestic-million-top15000.csv", newline="") as f:
    for i, row in enumerate(csv.DictReader(f)):
        if i % 50 == 0 or row["IDN_Domain"] != row["Domain"]:
            put("domain", row["IDN_Domain"].encode())
            put("domain", f"https://www.{row['Domain']}/path?q=1".encode())
for s in ["bücher.de", "WWW.Example.COM.", "xn--bcher-kva.de", "example.com.af", "moe.gov.af", "com.af", "127.0.0.1", "a-.com"]:
    put("domain", s.encode())
for q in ["domain=example.com", "domain=b%C3%BCcher.de&commission_percent=12.5",
          "domain=example.com&redirect_url=https%3A%2F%2Fshop.example%2Fcart%3Fa%3D1%23top&redirect_checkout=1",
          "client_key=dsa_embed_x&domain=example.com&include_price=1&commission_percent=1000",
          "domain=a&domain=b&commission_percent=-0"]:
    put("query", q.encode())
PY

# --- Build (release, instrumented, debug assertions and overflow checks on).
# Compare tracing (-sanitizer-coverage-trace-compares) calls back into libFuzzer on every
# integer comparison so it can solve them; the whois target spells its answers from choices
# (fuzz/checks.rs) and has nothing to solve, while the callbacks took most of its time in the
# reader's byte loops: it is built without them, in a target directory of its own (other
# RUSTFLAGS would rebuild everything in the shared one at each switch).
sancov="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table"
cmp_flags="-Cllvm-args=-sanitizer-coverage-trace-compares"
checks="-Cdebug-assertions -Coverflow-checks"
target_dir="${FUZZ_TARGET_DIR:-$(pwd)/target}"
# An explicit --target keeps RUSTFLAGS off build scripts and proc macros (as cargo-fuzz does).
triple=$(rustc -vV | sed -n 's/^host: //p')
user_flags="${RUSTFLAGS:-}"
bin_dir() { # the directory holding target $1's binary
  if [ "$1" = whois ]; then echo "$target_dir/nocmp/$triple/release"; else echo "$target_dir/$triple/release"; fi
}
cmp_bins=()
for t in "${targets[@]}"; do
  if [ "$t" = whois ]; then
    RUSTFLAGS="$user_flags $sancov $checks" CARGO_TARGET_DIR="$target_dir/nocmp" \
      cargo build --release --target "$triple" --bin whois
  else
    cmp_bins+=(--bin "$t")
  fi
done
if [ ${#cmp_bins[@]} -gt 0 ]; then
  # The query target needs the API crate (feature `query`); the others build without it.
  RUSTFLAGS="$user_flags $sancov $cmp_flags $checks" CARGO_TARGET_DIR="$target_dir" \
    cargo build --release --target "$triple" --features query "${cmp_bins[@]}"
fi

# --- Run each target in turn.
status=0
for t in "${targets[@]}"; do
  mkdir -p "artifacts/$t"
  echo "== fuzz $t for ${secs} s"
  # The whois target builds an answer of several bytes per choice byte: short inputs suffice
  # (128 choices spell an answer of up to a few kilobytes; the panic class of issue 32 needs one
  # status line), and a short answer is a fast run.
  max_len=1048576
  [ "$t" = whois ] && max_len=128
  "$(bin_dir "$t")/$t" "corpus/$t" "regressions/$t" -max_total_time="$secs" -timeout=5 \
    -rss_limit_mb=2048 -max_len="$max_len" -artifact_prefix="artifacts/$t/" -print_final_stats=1 2>&1 \
    | tee "artifacts/$t/last-run.log" | grep -E '^(#[0-9]+.*(DONE|pulse)|stat::|==|SUMMARY|.*panicked)' || true
  if ls "artifacts/$t"/crash-* "artifacts/$t"/timeout-* "artifacts/$t"/oom-* >/dev/null 2>&1; then
    echo "fuzz: $t found failing inputs in fuzz/artifacts/$t/" >&2
    status=1
  fi
done
exit "$status"
