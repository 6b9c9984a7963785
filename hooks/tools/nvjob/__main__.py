"""``python -m hooks.tools.nvjob``: the same as the ``kubectl-nvjob`` command."""

from hooks.tools.nvjob.commands import main

if __name__ == "__main__":
    main()
