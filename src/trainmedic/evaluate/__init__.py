"""Score the library and the reasoner on the real-log corpus (`make eval`, docs/accuracy.md)."""
