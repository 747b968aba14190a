"""Live diagnosis: `trainmedic run` and `trainmedic watch`, the hang watchdog and the metrics endpoint.

The same scanner and reasoner as `diagnose`, fed as bytes arrive (no re-reading), so a live run
is judged exactly as its log file would be. Nothing here imports torch.
"""
