# The 60-s zipf 0.99 runs that issue 47's comparison (run.sh here) and its study (../eviction-study-4gib) share:
# `zipf_run WORKLOAD` sets `size` (MiB of data) and `command` (the workload's command template), or fails.
zipf_run() {
  local keys='--seconds 60 --keys zipf --zipf-exponent 0.99 --data-dir {data_dir} --threads {threads}'
  case $1 in
    lookup_zipf) size=4096 command="{bin}/lookup --benchmark binsearch --size-mib {size} $keys" ;;
    lmdb_readrandom_zipf) size=3072 command="{bin}/lmdb --benchmark readrandom --size-mib {size} $keys" ;;
    numpy_gather_zipf) size=4096 command="{python} {bin}/numpy_gather.py --size-mib {size} --batch 256 $keys" ;;
    *) echo "unknown workload $1" >&2; return 1 ;;
  esac
}
