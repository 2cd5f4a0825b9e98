#!/usr/bin/env bash
# Run a command as on a machine FACTOR times slower: every process it starts shares 1/FACTOR
# of the CPUs' time (a CPU quota), while all the cores stay visible (MindSpore still sees and
# clamps to the same CPU count, so the study's settings do not change, only its speed).
#   tests/throttle.sh 2 make test        # the suite with everything half as fast
# A cgroup CPU quota (cgroup v2 cpu.max or v1 cpu.cfs_quota_us; needs root), else Debian's
# cpulimit (SIGSTOP/SIGCONT, children included). See docs/reliability.md.
set -euo pipefail
factor=${1:?usage: tests/throttle.sh FACTOR COMMAND...}
shift
cores=$(nproc)
period=100000
quota=$(awk -v c="$cores" -v p="$period" -v f="$factor" 'BEGIN { printf "%d", c * p / f }')
name="perfstudy-throttle-$$"
dir=""
if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers \
   && mkdir "/sys/fs/cgroup/$name" 2>/dev/null; then
  dir="/sys/fs/cgroup/$name"; root=/sys/fs/cgroup
  echo "$quota $period" > "$dir/cpu.max"
elif [ -d /sys/fs/cgroup/cpu ] && mkdir "/sys/fs/cgroup/cpu/$name" 2>/dev/null; then
  dir="/sys/fs/cgroup/cpu/$name"; root=/sys/fs/cgroup/cpu
  echo "$period" > "$dir/cpu.cfs_period_us"
  echo "$quota" > "$dir/cpu.cfs_quota_us"
fi
if [ -n "$dir" ]; then
  echo "throttle: ${factor}x slower: $cores CPUs visible, ${quota} us of CPU per ${period} us ($dir)" >&2
  echo $$ > "$dir/cgroup.procs"
  status=0
  "$@" || status=$?
  echo $$ > "$root/cgroup.procs"
  rmdir "$dir" 2>/dev/null || true
  exit "$status"
fi
command -v cpulimit >/dev/null || { echo "error: no writable cgroup CPU controller and no cpulimit; run as root or apt-get install cpulimit" >&2; exit 2; }
limit=$(awk -v c="$cores" -v f="$factor" 'BEGIN { printf "%d", 100 * c / f }')
echo "throttle: ${factor}x slower with cpulimit -l $limit (children included)" >&2
exec cpulimit -l "$limit" -i -- "$@"
