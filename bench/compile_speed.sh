#!/bin/sh
# compile_speed.sh AMPC [SIZES]: how ampc's compile time and memory grow
# with the model.  For each size N (default 1000 10000 100000) it writes a
# model of N ops (a chain of linear, relu, scale and tanh on [B, 16]),
# compiles it for -t cpu three times, and prints the median wall time, the
# median CPU time (user + sys) and the peak resident memory.  Wall time on
# a shared machine is noisy; CPU time and memory are what to compare.
set -eu
AMPC=${1:?usage: compile_speed.sh AMPC [SIZES]}
shift
SIZES=${*:-1000 10000 100000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '%-8s %10s %10s %10s %12s\n' ops wall_s cpu_s rss_MB bytes_per_op
for n in $SIZES; do
    awk -v n="$n" 'BEGIN {
        print "model Chain(B) {"; print "  input x: f32[B, 16]"; print "  param w: f32[16, 16]"
        print "  autocast {"; print "    h0 = linear(x, w)"
        for (i = 1; i < n; i++) {
            k = i % 4
            if (k == 0) e = "linear(h" (i - 1) ", w)"
            else if (k == 1) e = "relu(h" (i - 1) ")"
            else if (k == 2) e = "h" (i - 1) " * 0.5"
            else e = "tanh(h" (i - 1) ")"
            print "    h" i " = " e
        }
        print "  }"; print "  output h" (n - 1); print "}"
    }' > "$dir/m.amp"
    for r in 1 2 3; do
        /usr/bin/time -f '%e %U %S %M' -o "$dir/t$r" "$AMPC" "$dir/m.amp" -t cpu -o "$dir/m.c"
    done
    cat "$dir/t1" "$dir/t2" "$dir/t3" | sort -n | sed -n 2p > "$dir/wall"
    awk '{ print $2 + $3, $4 }' "$dir/t1" "$dir/t2" "$dir/t3" | sort -n | sed -n 2p > "$dir/cpu"
    read -r wall _ _ _ < "$dir/wall"
    read -r cpu rss < "$dir/cpu"
    awk -v n="$n" -v w="$wall" -v c="$cpu" -v r="$rss" \
        'BEGIN { printf "%-8d %10.2f %10.2f %10.1f %12d\n", n, w, c, r / 1024, r * 1024 / n }'
done
