"""Sphere casts against a cylinder next to ray casts on the same cylinder, same lines.

    .venv/bin/python bench/bench_cylinder_cast.py

The cylinder of bench_core.py (radius 1, height 2), capped and open. Rays: from 5 units
away, aimed at random points within 1.2 of the centre (bench_core's rays); each cast moves
a sphere along the same line from the ray's origin to its target. Issue 13's target: a cast
costs at most 2x a ray on the same shape (casts/s at least half the rays/s).
"""

import time

import common  # noqa: F401  (sys.path, BLENDER_USER_RESOURCES)
import numpy as np
from common import print_table, rate, rays_toward

from core import Cylinder, raycast, sphere_cast

N = 100_000
ROUNDS = 8
BLOCK = 5


def interleaved_best(first, second, rounds=ROUNDS, block=BLOCK):
    """Best CPU times (process_time: the VM's 2 cores are shared, and wall time mostly
    measured the neighbours) of two functions, timed in alternating blocks of calls so both
    see the same conditions (a block warms the allocator for its own temporaries)."""
    best = [np.inf, np.inf]
    for _ in range(rounds):
        for slot, function in enumerate((first, second)):
            for _ in range(block):
                start = time.process_time()
                function()
                best[slot] = min(best[slot], time.process_time() - start)
    return best


def main():
    rng = np.random.default_rng(0)
    origins, directions = rays_toward(rng, N, np.zeros(3), 1.2)
    ends = origins + directions
    rows = []
    for capped in (True, False):
        cylinder = Cylinder((0, 0, -1), (0, 0, 1), 1.0, capped=capped)
        for radius in (0.1, 0.5):
            ray_time, cast_time = interleaved_best(
                lambda cylinder=cylinder: raycast(cylinder, origins, directions),
                lambda cylinder=cylinder, radius=radius: sphere_cast(
                    cylinder, origins, ends, radius
                ),
            )
            rays, casts = N / ray_time, N / cast_time
            hits = sphere_cast(cylinder, origins, ends, radius).hit.mean()
            rows.append(
                (
                    "capped" if capped else "open tube",
                    f"{radius}",
                    f"{N:,}",
                    rate(rays),
                    rate(casts),
                    f"{rays / casts:.2f}x",
                    f"{100 * hits:.0f} %",
                )
            )
    print_table(
        "Sphere cast vs ray cast on the same cylinder (radius 1, height 2)",
        ("cylinder", "cast radius", "casts", "rays", "casts", "cast cost / ray cost", "hit"),
        rows,
    )


if __name__ == "__main__":
    main()
