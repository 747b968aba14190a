"""The language server for training logs (`trainmedic lsp`).

`marks` is plain Python (what an editor shows, computed from a Diagnosis); `server` is the only
module that imports pygls, and only `trainmedic lsp` imports it, so the core never pays for it.
"""
