"""Causal reasoning over events: initiating vs collateral, confidence, missing facts."""
