"""The measuring engine: from a sweep request to rows. Owns the request and its checks
(plan), the sweep pipeline (sweep), the row an attempt becomes (rows), dealing tasks to
devices (schedule, devices, raydevices), the isolated worker processes and how they start
(worker, children), one attempt at a task inside them (attempt), the compile pool and
cross-compilation (precompile, crosscompile), the clocks (timing), the correctness check
(verify), the worker's cached inputs (cases), where kernels run (env), which code measured a
row (source), the GPU's ceilings (calibrate) and a user's kernel contract, checked up front
by calling each piece of its spec once (contract_check).

May import: data/, search/, runtime/, kernels/ and the root's contract and tuned. torch and
triton only after the backend is chosen (TRITON_INTERPRET is read at triton's first import),
so modules that the command line loads import them inside functions.
"""
