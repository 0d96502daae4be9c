"""What runs inside a user's program besides the public `ops` and `tuned` modules at the
package root: launching tlab's kernels in less host time than Triton's dispatch
(launching, opt-in with TLAB_FAST_LAUNCH=1).

May import: errors; triton inside functions (after TRITON_INTERPRET is set).
"""
