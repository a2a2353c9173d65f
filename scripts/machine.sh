# machine.sh — sourced by the benchmark scripts: cpu_caches prints this machine's caches PER CORE as the
# kernel describes cpu0's (sysfs), with how many CPUs share each, e.g. "L1d 32K, L1i 32K, L2 512K, L3 32768K
# (shared by 2 CPUs)". lscpu's "L2 cache: 1 MiB (2 instances)" is a total over instances, easy to misread.
cpu_caches() {
  local d out="" level type size shared n
  for d in /sys/devices/system/cpu/cpu0/cache/index*; do
    [ -r "$d/size" ] || continue
    level="$(cat "$d/level")"; type="$(cat "$d/type")"; size="$(cat "$d/size")"
    shared="$(cat "$d/shared_cpu_list" 2>/dev/null || echo 0)"
    n="$(echo "$shared" | tr ',' '\n' | awk -F- '{ n += (NF == 2 ? $2 - $1 + 1 : 1) } END { print n }')"
    case "$type" in Data) type=d ;; Instruction) type=i ;; *) type="" ;; esac
    out+="${out:+, }L$level$type $size"
    [ "$n" -gt 1 ] && out+=" (shared by $n CPUs)"
  done
  if [ -n "$out" ]; then echo "per core: $out"; else lscpu | grep -E '^L[123][di]? cache' | paste -sd, -; fi
}
