#!/usr/bin/env bash
# The device run of 2026-11-26 17:52 UTC (H100), as it ran: .dev held the
# stripped x86-64 release binaries (moreau, the resident test), the in-air
# variants (scripts/in-air.py) and a copy of gymnasium/envs/mujoco/assets; .gl the
# Vulkan loader (../.library/device/README.md).
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
R=/tmp/r5; mkdir -p $R; B=.dev/moreau; G=.dev/site/gymnasium/envs/mujoco/assets
export RUST_BACKTRACE=1 MOREAU_ROBOT_FILES=$PWD/.dev/site MOREAU_REQUIRE_ROBOT_FILES=1 MOREAU_REQUIRE_GPU=1
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; } > $R/env.txt 2>&1; cat $R/env.txt
run() { local n=$1 t=$2; shift 2; echo "== $n: $*" > $R/$n.log; local s=$(date +%s); timeout $t "$@" >> $R/$n.log 2>&1; local rc=$?; echo "exit $rc $n $(( $(date +%s)-s )) s" | tee -a $R/$n.log; }
run t-resident 60 .dev/resident --test-threads 4
run h 60 $B bench --scene .dev/humanoid_air.xml,.dev/ant_air.xml --envs 1024,16384,65536 --backend gpu,cpu --budget 15 --settle 50 --out $R/h.json
run c 60 $B bench --scene cartpole,$G/swimmer.xml,$G/inverted_double_pendulum.xml --envs 4096,65536 --backend gpu,cpu --budget 15 --out $R/c.json
tar czf $OUT/r5.tgz -C /tmp r5
grep -h "could not\|gpu .*steps/s\|cpu .*steps/s\|^exit\|test result\|FAILED\|panicked" $R/*.log | head -60
