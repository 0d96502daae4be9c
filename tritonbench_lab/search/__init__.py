"""Which configs of a shape's space to time: the strategies (strategies: exhaustive, random,
local, optuna, prior), where the prior starts from (prior), the contenders of a short first
pass (contenders), and replaying strategies against stored times (replay).

May import: data/ and the root's contract and tuned (the nearest-shape rule). No torch or
triton: a strategy decides from times, it never measures.
"""
