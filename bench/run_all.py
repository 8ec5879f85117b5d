"""Run every benchmark script in bench/ (bench_*.py), one after another."""

import glob
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    failed = 0
    for script in sorted(glob.glob(os.path.join(HERE, "bench_*.py"))):
        print(f"\n=== {os.path.basename(script)}", flush=True)
        failed |= subprocess.call([sys.executable, script])
    sys.exit(failed)
