"""Synthetic Internet: an AS graph with policy routing, written as a RouteViews + RIS
archive of MRT RIB dumps, with the congruency ground truth next to it (tests, benchmarks,
demos without downloading real archives)."""
from .generate import COLLECTORS, generate

__all__ = ["COLLECTORS", "generate"]
