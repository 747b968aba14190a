"""Small helpers several faces share (CLI reports, web, editor, live): one definition each.

Nothing here imports the rest of trainmedic, so any module may use it without an import circle.
"""
