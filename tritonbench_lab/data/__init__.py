"""Stored data: what tlab writes and reads, as typed rows and files. Owns the row schema
and row identity (records), CSV reading and appending (store), where files live (layout),
the one winner rule (winners), what each shape of a sweep came to (tally), the ceilings rows
are judged against (ceilings), moving rows of old kernel sources out of the way (archive), and
the kernel modules a project lists in its pyproject.toml (project).

May import: the contract's pure modules (errors, shapes) and pandas. Never torch or
triton, so every view, gate and command can read data on any machine.
"""
