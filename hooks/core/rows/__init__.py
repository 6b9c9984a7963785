"""The rows of the decision table (``hooks.core.decide``), one module per family of rows."""
