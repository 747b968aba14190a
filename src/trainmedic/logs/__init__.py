"""Reading logs: sources, blocks, rank/host/time attribution, tracebacks. Streaming, bounded memory."""
