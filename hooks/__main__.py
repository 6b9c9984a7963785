"""``python -m hooks``: the operator command line (``hooks.tools.cli``)."""

from hooks.tools.cli import main

if __name__ == "__main__":
    main()
