"""Compiled (numba) loops over rays, one module per shape, mirroring the numpy modules.

Imported only through core.backend.kernels(), on the numba backend: importing ``core`` never
imports numba. rays.py holds the per-ray helpers every shape's kernel uses.
"""
