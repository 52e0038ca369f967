#!/usr/bin/env bash
# The second device call of 2026-11-28 (H200): after the resident solve's
# dispatch count (dispatches_to_finish) and the bench's PD controller on
# rayon's threads. Same layout as run.sh.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
R=/tmp/r; mkdir -p $R; B=.gpu/moreau; G=$PWD/.gpu/site/gymnasium/envs/mujoco/assets
mkdir -p .gpu/site/cmeel.prefix/share/example-robot-data/robots
export RUST_BACKTRACE=1 MOREAU_ROBOT_FILES=$PWD/.gpu/site MOREAU_REQUIRE_ROBOT_FILES=1 MOREAU_REQUIRE_GPU=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; } > $R/env.txt 2>&1
run() { local n=$1 t=$2; shift 2; echo "== $n: $*" > $R/$n.log; local s=$(date +%s); timeout $t "$@" >> $R/$n.log 2>&1; local rc=$?; echo "exit $rc $n $(( $(date +%s)-s )) s" | tee -a $R/$n.log; }
run t-contacts 90 .gpu/t-contacts --test-threads 8 --nocapture
run q 60 $B bench --scene quadruped --envs 4096,16384,65536 --backend gpu,cpu --budget 20 --steps 20 --warmup 3 --out $R/q.json
run a 40 $B bench --scene $G/ant.xml --envs 4096,16384 --backend gpu,cpu --budget 20 --steps 20 --warmup 3 --out $R/a.json
run h 30 $B bench --scene $G/humanoid.xml --envs 4096,16384 --backend gpu,cpu --budget 20 --steps 20 --warmup 3 --out $R/h.json
run p 40 $B bench --scene pyramid --envs 4096,16384 --backend gpu --budget 20 --steps 20 --warmup 3 --out $R/p.json
grep -h "gpu .*steps/s\|cpu.*steps/s\|^exit\|test result\|FAILED\|panicked\|a bed of\|ant: 60" $R/*.log | cut -c1-300 | head -60
