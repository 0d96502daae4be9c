"""Views of stored data, never measuring: the lines plots draw (series), pictures (plots),
REPORT.md (report), GPUs side by side (compare), winners exported for other code (export)
and speed targets judged from committed winners (targets).

May import: data/ and the root's pure contract modules (errors, shapes, space); pandas and
matplotlib. No torch: `tlab plot` and `tlab report` run anywhere.
"""
