#!/bin/sh
# plot-training.sh METRICS.csv OUT.png [TITLE]: draws a training run's
# metrics (examples/digits/train.c --metrics, or any CSV with the columns
# step, epoch, loss, accuracy, test_accuracy, loss_scale, skipped_steps)
# as three stacked panels: the loss per step, the accuracy per step with
# the test accuracy at each epoch's end, and the loss scale with the
# skipped steps.  Uses gnuplot (Debian: gnuplot-nox), which it installs
# with apt-get when it is missing and it may (root, or sudo without a
# password).
set -eu
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: $0 METRICS.csv OUT.png [TITLE]" >&2
    exit 2
fi
csv=$1
png=$2
title=${3:-$(basename "$csv" .csv)}
[ -r "$csv" ] || { echo "$0: cannot read $csv" >&2; exit 3; }
head -n 1 "$csv" | grep -q '^step,epoch,loss,accuracy,test_accuracy,loss_scale,skipped_steps' ||
    { echo "$0: $csv: the first line must name the columns step,epoch,loss,accuracy,test_accuracy,loss_scale,skipped_steps" >&2; exit 1; }
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
# the title goes to gnuplot as a string: keep it to safe characters
title=$(printf '%s' "$title" | tr -cd 'A-Za-z0-9 ,._:/()+-')
# the ranges gnuplot cannot guess when a column is constant: the loss
# scale between half its least and twice its most, the skipped steps from 0
ranges=$(awk -F, 'NR > 1 { if (lo == "" || $6 < lo) lo = $6; if ($6 > hi) hi = $6; if ($7 > sk) sk = $7 }
    END { printf "%g %g %d", lo / 2, hi * 2, sk + 1 }' "$csv")
set -- $ranges
scale_lo=$1 scale_hi=$2 skipped_hi=$3
gnuplot <<EOG
set datafile separator ","
set terminal pngcairo size 900,900 font "sans,10"
set output "$png"
set multiplot layout 3,1 title "$title"
set key top right
set grid
set xlabel "step"
set ylabel "loss"
set logscale y
plot "$csv" using 1:3 every ::1 with lines lw 1 title "training loss (batch)"
unset logscale y
set ylabel "accuracy"
set yrange [0:1.02]
set key bottom right
plot "$csv" using 1:4 every ::1 with lines lw 1 lc rgb "#999999" title "training accuracy (batch)", \
     "$csv" using 1:(strcol(5) eq "" ? NaN : \$5) every ::1 with linespoints pt 7 lw 2 title "test accuracy (epoch end)"
set key top right
set yrange [$scale_lo:$scale_hi]
set y2range [0:$skipped_hi]
set ylabel "loss scale"
set y2label "skipped steps"
set ytics nomirror
set y2tics
set logscale y 2
plot "$csv" using 1:6 every ::1 with steps lw 2 title "loss scale", \
     "$csv" using 1:7 every ::1 axes x1y2 with steps lw 1 title "skipped steps"
unset multiplot
EOG
echo "wrote $png"
