"""The gates that hold committed winners to account on a GPU: the CI gate (check, with its
re-timing half retime and the nearest-shape rule's regret), the host time of each winner's
call (hosttimes), and ops against the PyTorch op on untuned shapes (opsbench).

May import: measure/, runtime/, views/, data/, kernels/ and the root's modules.
"""
