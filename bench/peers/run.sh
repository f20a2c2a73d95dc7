#!/bin/sh
# bench/peers/run.sh (make bench-peers): the workloads of bench/bench.c run by gradient.h's peers on this
# machine, in one invocation: bench --peers (gradient.h and the hand-written C, built with
# GRADIENT_CBLAS: the hand-written GEMMs and the peers' both use OpenBLAS), then NumPy with
# hand-derived gradients (numpy_peers.py), PyTorch's autograd (torch_peers.py) and ADOL-C's drivers
# (adolc_peers.cpp), each one skipped with a message when it is not installed (Debian:
# apt-get install python3-numpy python3-torch libadolc-dev). One thread everywhere
# (OPENBLAS_NUM_THREADS=1, torch.set_num_threads(1); PEERS_TORCH_THREADS=n for another count).
# Prints the machine's load average, the versions, and a table of ratios to the hand-written C of
# the same run (table.py); each peer's results are compared with gradient.h's (build/peers-ref
# writes them), and a difference beyond rounding marks its row MISMATCH and fails the script.
# Usage: sh bench/peers/run.sh [BUILD_DIR]  (from the repository's top; CC, CXX, PYTHON may be set)
set -u
B=${1:-build}
CC=${CC:-cc}
CXX=${CXX:-g++}
PY=${PYTHON:-/usr/bin/python3}
BENCH_FLAGS=${BENCH_FLAGS:--O3 -march=native}
OUT=$B/peers
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
rm -rf "$OUT" && mkdir -p "$OUT/ref" "$OUT/adolc-run" || exit 1
REF=$(cd "$OUT/ref" && pwd)
status=0

echo "bench-peers: $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //'), $(grep -c ^processor /proc/cpuinfo) cores"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
ver() { dpkg-query -W -f '${Version}' "$1" 2>/dev/null || echo "?"; }

# gradient.h and the hand-written C (bench --peers), and gradient.h's results for the checks
$CC -std=c11 $BENCH_FLAGS -DGRADIENT_CBLAS -o "$B/bench-peers" bench/bench.c -lopenblas -lm || exit 1
$CC -std=c11 -O2 -o "$B/peers-ref" bench/peers/ref.c -lm || exit 1
"./$B/peers-ref" "$REF" || { echo "bench-peers: peers-ref failed"; exit 1; }
echo "gradient.h: bench --peers ($CC $BENCH_FLAGS -DGRADIENT_CBLAS, OpenBLAS $(ver libopenblas0-pthread))"
"./$B/bench-peers" --peers > "$OUT/ours.txt" 2>&1 || { cat "$OUT/ours.txt"; echo "bench-peers: bench --peers failed"; status=1; }
grep MISMATCH "$OUT/ours.txt"

if ! [ -x "$PY" ]; then
    echo "NumPy, PyTorch: skipped ($PY not found)"
elif ! "$PY" -c 'import numpy' 2>/dev/null; then
    echo "NumPy, PyTorch: skipped (no numpy for $PY: apt-get install python3-numpy python3-torch)"
else
    echo "NumPy $("$PY" -c 'import numpy; print(numpy.__version__)') (python3-numpy $(ver python3-numpy)), hand-derived gradients"
    "$PY" bench/peers/numpy_peers.py "$REF" > "$OUT/numpy.txt" || { echo "bench-peers: numpy_peers.py failed or mismatched"; status=1; }
    if "$PY" -c 'import torch' 2>/dev/null; then
        echo "PyTorch $("$PY" -c 'import torch; print(torch.__version__)') (python3-torch $(ver python3-torch)), autograd, ${PEERS_TORCH_THREADS:-1} thread(s)"
        "$PY" bench/peers/torch_peers.py "$REF" > "$OUT/torch.txt" || { echo "bench-peers: torch_peers.py failed or mismatched"; status=1; }
    else
        echo "PyTorch: skipped (no torch for $PY: apt-get install python3-torch)"
    fi
fi

if echo '#include <adolc/adolc.h>' | $CXX -x c++ -fsyntax-only - 2>/dev/null; then
    if $CXX -std=c++11 -O2 -march=native -o "$B/peers-adolc" bench/peers/adolc_peers.cpp -ladolc; then
        echo "ADOL-C (libadolc-dev $(ver libadolc-dev)), taped once, drivers timed; tapes kept in memory (.adolcrc); one process a workload"
        printf '"OBUFSIZE" = "33554432"\n"LBUFSIZE" = "33554432"\n"VBUFSIZE" = "33554432"\n' > "$OUT/adolc-run/.adolcrc"
        BIN=$(cd "$B" && pwd)/peers-adolc
        for w in W2 W3 W4 tiny W5 W6; do
            (cd "$OUT/adolc-run" && "$BIN" "$REF" $w) > "$OUT/adolc-$w.txt" 2>&1 || { echo "bench-peers: ADOL-C $w failed or mismatched"; status=1; }
            grep '^peer-row' "$OUT/adolc-$w.txt" >> "$OUT/adolc.txt"
        done
    else
        echo "ADOL-C: skipped (adolc_peers.cpp did not build)"; status=1
    fi
else
    echo "ADOL-C: skipped (no <adolc/adolc.h>: apt-get install libadolc-dev)"
fi

echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" bench/peers/table.py "$OUT/ours.txt" numpy="$OUT/numpy.txt" torch="$OUT/torch.txt" adolc="$OUT/adolc.txt" || status=1
exit $status
