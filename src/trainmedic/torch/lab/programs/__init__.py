"""The real PyTorch programs the lab runs, one failure each; run as scripts, never imported by trainmedic."""
