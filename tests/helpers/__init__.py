"""What tests in more than one folder share; the only place a test imports helpers from
(never from another test module: tests/test_house.py checks).

- `paths`: the repository, tests/ itself, and the files tests hand to tlab by path;
- `backend`: where kernels run in this session (GPU, or Triton's interpreter);
- `kernel_cases`: configs from a spec's pruned space, launched and checked;
- `fixture_results`: TEST DATA rows, winners and results folders, through the real schema;
- `sweeps`: sweep requests for the interpreter, and a scripted worker with canned times;
- `commands`: `tlab` run as users run it, in a process of its own;
- `faulty_kernels`: a user kernel module with one piece of its spec replaced by a mistake.

Two files stay at tests/ beside conftest.py because they are used by path, not imported:
`planted_kernels.py` (a kernel module handed to `tlab --kernel-module`) and
`launch_recorder.py` (a script that runtime/test_launching.py and lab/ run).
"""
