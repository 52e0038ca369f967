#!/usr/bin/env bash
# The device run of issue 34 (resident contacts), as it ran: the twin tests
# on the device, then resident worlds with contacts against the CPU's cores.
# .gpu held the stripped x86-64 release binaries (moreau and the tests
# resident_contacts and gpu_solvers) and a copy of gymnasium/envs/mujoco/assets;
# .gl the Vulkan loader (../.library/device/README.md).
set -u
if [ -z "${LOCAL:-}" ]; then for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig; fi
R=${R:-/tmp/r}; mkdir -p $R; B=.gpu/moreau; G=$PWD/.gpu/site/gymnasium/envs/mujoco/assets
E=${E:-4096,16384}; EL=${EL:-65536}; EP=${EP:-4096,16384}; BUD=${BUD:-20}; ST=${ST:-20}; TT=${TT:-100}; TB=${TB:-75}
mkdir -p .gpu/site/cmeel.prefix/share/example-robot-data/robots
export RUST_BACKTRACE=1 MOREAU_ROBOT_FILES=$PWD/.gpu/site MOREAU_REQUIRE_ROBOT_FILES=1 MOREAU_REQUIRE_GPU=1
{ date -u; nproc; grep -m1 'model name' /proc/cpuinfo; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv; } > $R/env.txt 2>&1; cat $R/env.txt
run() { local n=$1 t=$2; shift 2; echo "== $n: $*" > $R/$n.log; local s=$(date +%s); timeout $t "$@" >> $R/$n.log 2>&1; local rc=$?; echo "exit $rc $n $(( $(date +%s)-s )) s" | tee -a $R/$n.log; }
run info 30 $B info
if ! grep -qi nvidia $R/info.log; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  run info2 30 $B info
fi
run t-contacts $TT .gpu/t-contacts --test-threads 8
run q $TB $B bench --scene quadruped --envs $E,$EL --backend gpu,cpu,cpu1 --budget $BUD --steps $ST --warmup 3 --out $R/q.json
run a $TB $B bench --scene $G/ant.xml --envs $E,$EL --backend gpu,cpu,cpu1 --budget $BUD --steps $ST --warmup 3 --out $R/a.json
run h $TB $B bench --scene $G/humanoid.xml --envs $E --backend gpu,cpu --budget $BUD --steps $ST --warmup 3 --out $R/h.json
run p 50 $B bench --scene pyramid --envs $EP --backend gpu,cpu --budget $BUD --steps $ST --warmup 3 --out $R/p.json
run h65 60 $B bench --scene $G/humanoid.xml --envs $EL --backend gpu,cpu --budget $BUD --steps $ST --warmup 3 --out $R/h65.json
run render 25 $B bench render --scene quadruped,$G/ant.xml --worlds 1,64,256,1024 --size 256 --repeats 3
run t-solvers 45 .gpu/t-solvers --test-threads 8
grep -h "could not\|notice\|gpu .*steps/s\|cpu.*steps/s\|^exit\|test result\|FAILED\|panicked\|skipp\|frames_per_s" $R/*.log | cut -c1-200 | head -80
