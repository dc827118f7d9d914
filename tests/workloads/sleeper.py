"""A test workload that writes its pid to the file named by its argument, then sleeps for ten minutes:
the trial a tuner has in flight when the tests kill, stop or race it."""
import os
import sys
import time

with open(sys.argv[1] + ".tmp", "w") as file:
    file.write(str(os.getpid()))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)
