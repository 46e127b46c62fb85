"""Benchmarks: not collected by pytest; ``make bench`` runs them all.

Every figure is printed next to a baseline measured in the same run, as a
ratio, so results are comparable across machines and loads.
"""
