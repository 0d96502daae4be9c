"""What runs inside a user's program behind the public `ops` and `tuned` modules at the package
root: the per-shape decision between tlab's kernel and the PyTorch op and its memo
(dispatch), the ops registered as torch.library ops for compiled models (library) and what
they know of the graph they run in (in_graphs), the shapes a program calls recorded for
sweeping (recording), any kernel tlab knows as a function of its inputs (own_kernels), a
linear layer's weight padded once for inference (padded_linear), and
launching tlab's kernels in less host time than Triton's dispatch (launching, opt-in with
TLAB_FAST_LAUNCH=1).

May import: the contract (errors, shapes, space, spec), tuned, data/ and kernels/; torch;
triton inside functions (after TRITON_INTERPRET is set).
"""
