"""The pure decision core: a parsed request (``observed``) and a pod ``Reader`` in, a ``Decision`` out.

No module here does I/O or imports anything that does (``tests/test_layout.py`` checks it): pods are
read only through the Reader passed to ``decide``, which is podread's (ADR-102). The table of rows is
``hooks.core.decide``; each row's work is in ``hooks.core.rows``; the drain barrier in
``hooks.core.barrier``; the status wording in ``hooks.core.wording``.
"""
