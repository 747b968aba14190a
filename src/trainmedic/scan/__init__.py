"""One multi-pattern database over all fingerprints (hyperscan), with a pure-Python fallback."""

from trainmedic.scan.database import Pattern, PatternSet, Scanner, build_scanner

__all__ = ["Pattern", "PatternSet", "Scanner", "build_scanner"]
