#!/bin/sh
# plot-bench.sh MODELS.csv OUT.png [TITLE]: draws a `make bench` (or
# `make bench-models`) run's model results, the CSV that
# bench/torch_models.py writes (BENCH_CSV, default build/bench/models.csv:
# cpu,kernel_set,case,mode,batch,ampc_ms,torch_f32_ms,torch_bf16_ms,best,ratio),
# as two panels: per case, the time of ampc, PyTorch f32 and PyTorch
# autocast bf16 (bars, log scale: the cases span four decades), and ampc's
# time over the faster PyTorch's (below 1: ampc is faster).  The title
# names the CPU and ampc's kernel set from the CSV.  Uses gnuplot (Debian:
# gnuplot-nox; `sh scripts/install-deps.sh --docs`), which it installs
# with apt-get when it is missing and it may (root, or sudo without a
# password).
set -eu
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: $0 MODELS.csv OUT.png [TITLE]" >&2
    exit 2
fi
csv=$1
png=$2
[ -r "$csv" ] || { echo "$0: cannot read $csv" >&2; exit 3; }
head -n 1 "$csv" | grep -q '^cpu,kernel_set,case,mode,batch,ampc_ms,torch_f32_ms,torch_bf16_ms,best,ratio' ||
    { echo "$0: $csv: the first line must name the columns cpu,kernel_set,case,mode,batch,ampc_ms,torch_f32_ms,torch_bf16_ms,best,ratio" >&2; exit 1; }
[ "$(wc -l < "$csv")" -ge 2 ] || { echo "$0: $csv has no results" >&2; exit 1; }
if ! command -v gnuplot >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q gnuplot-nox >/dev/null
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q gnuplot-nox >/dev/null
    else
        echo "$0: needs gnuplot (Debian: apt-get install gnuplot-nox)" >&2
        exit 3
    fi
fi
# the CPU and kernel set of the run (the first row's: one run, one machine)
cpu=$(awk -F, 'NR == 2 { print $1 }' "$csv")
isa=$(awk -F, 'NR == 2 { print $2 }' "$csv")
title=${3:-"ampc (-t cpu, bf16 autocast) against PyTorch, 2 threads; CPU: $cpu; ampc kernels: $isa"}
# strings go to gnuplot quoted: keep them to safe characters
title=$(printf '%s' "$title" | tr -cd 'A-Za-z0-9 ,._:;/()+=-')
# the data as gnuplot reads it best: one row per case, its label first,
# an unavailable time as NaN
data=$(mktemp "${TMPDIR:-/tmp}/plot-bench.XXXXXX")
trap 'rm -f "$data"' EXIT
awk -F, 'NR > 1 {
    label = $3 " " $4 " N=" $5
    gsub(/[^A-Za-z0-9_ =.-]/, "", label)
    printf "\"%s\" %s %s %s %s\n", label, $6, ($7 == "" ? "NaN" : $7), ($8 == "" ? "NaN" : $8), $10
}' "$csv" > "$data"
gnuplot <<EOG
set terminal pngcairo size 1000,800 font "sans,10" noenhanced
set output "$png"
set multiplot layout 2,1 title "$title"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.9 border -1
set boxwidth 0.9
set xtics rotate by -20 left nomirror
set grid ytics
set key top left
set ylabel "ms per call (log scale)"
set logscale y
plot "$data" using 2:xtic(1) title "ampc" lc rgb "#fd8d3c", \
     "" using 3 title "PyTorch f32" lc rgb "#6baed6", \
     "" using 4 title "PyTorch autocast bf16" lc rgb "#9e9ac8"
unset logscale y
set ylabel "ampc / faster PyTorch"
set yrange [0:*]
set key top left
plot "$data" using 5:xtic(1) title "time ratio (below 1: ampc faster)" lc rgb "#fd8d3c", \
     1 with lines lw 1 lc rgb "#444444" notitle
unset multiplot
EOG
echo "wrote $png"
