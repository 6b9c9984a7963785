"""``python -m hooks``: the operator command line (``hooks.cli``)."""

from hooks.cli import main

if __name__ == "__main__":
    main()
