"""Running a program once, as a study or a benchmark runs it: its workload, the runner (and the kernel-mmap
runner), memory limits, the page cache and disk, the pager's statistics. Uses the core; knows no tuner."""
