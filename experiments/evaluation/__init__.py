"""The AutoPager evaluation (paper section IV) reproduced on this machine: see experiments/evaluate.py."""
