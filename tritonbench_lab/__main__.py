"""`python -m tritonbench_lab` is the same as the `tlab` command."""

from tritonbench_lab.cli import main

if __name__ == "__main__":
    main()
